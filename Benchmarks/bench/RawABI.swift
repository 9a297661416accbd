// The plugins driven through their C ABI with no engine in between: the same .so, the same
// instance code and data layout, called from a plain loop. Engine versus this isolates the
// engine's own per-frame work exactly (reference rows; not the ratio, which compares with
// the libraries).
import RawFX
import RawFXSDK

#if canImport(Glibc)
import Glibc
#endif

/// One instance created from the plugin's descriptor, parameterized and configured by hand.
final class RawABIFilter {
    let filter: UnsafePointer<rawfx_filter>
    let process: @convention(c) (UnsafePointer<rawfx_filter>?, UnsafePointer<rawfx_video_frame>?,
                                 UnsafeMutablePointer<rawfx_video_frame>?) -> rawfx_status
    let inPlace: Bool
    let output: VideoFormat

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// `id` from the plugin file that the registry loaded it from; `parameters` as chain text values.
    init(id: String, parameters: [(String, String)], input: VideoFormat, registry: PluginRegistry) throws {
        let type = try registry.filterType(id)
        guard let handle = dlopen(type.library.path, RTLD_NOW | RTLD_NOLOAD),
              let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL) else {
            throw Failure(description: "\(type.library.path): cannot reach \(RAWFX_ENTRY_SYMBOL)")
        }
        let entry = unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self)()!.pointee
        var descriptor: UnsafePointer<rawfx_filter_descriptor>?
        for index in 0..<entry.filter_count() {
            if let d = entry.filter_descriptor(index), String(cString: d.pointee.id) == id { descriptor = d }
        }
        guard let descriptor, let create = descriptor.pointee.create else {
            throw Failure(description: "\(type.library.path) has no descriptor '\(id)'")
        }
        var message = [CChar](repeating: 0, count: 256)
        guard let filter = create(descriptor, &message, message.count) else {
            throw Failure(description: "\(id): create failed: \(String(nulTerminated: message))")
        }
        self.filter = filter
        process = filter.pointee.process_video!
        inPlace = descriptor.pointee.processing == rawfx_processing(RAWFX_PROCESS_IN_PLACE)

        for (key, text) in parameters {
            guard let index = (0..<Int(descriptor.pointee.param_count)).first(where: {
                String(cString: descriptor.pointee.params[$0].id) == key
            }) else { throw Failure(description: "\(id): no parameter \(key)") }
            let p = descriptor.pointee.params[index]
            var value = rawfx_param_value()
            value.struct_size = UInt32(MemoryLayout<rawfx_param_value>.size)
            value.type = p.type
            let status: rawfx_status = text.withCString { cText in
                switch p.type {
                case rawfx_param_type(RAWFX_PARAM_INT): value.int_value = Int64(text) ?? 0
                case rawfx_param_type(RAWFX_PARAM_FLOAT): value.float_value = Double(text) ?? 0
                case rawfx_param_type(RAWFX_PARAM_BOOL): value.int_value = ["1", "true", "yes", "on"].contains(text) ? 1 : 0
                case rawfx_param_type(RAWFX_PARAM_ENUM):
                    value.int_value = Int64((0..<Int(p.enum_count)).first { String(cString: p.enum_values[$0]!) == text } ?? 0)
                default: value.string_value = cText
                }
                return filter.pointee.set_param(filter, UInt32(index), &value)
            }
            guard status == RAWFX_OK else { throw Failure(description: "\(id): set_param \(key)=\(text) failed") }
        }

        var format = StreamFormat.video(input).cValue
        var result = rawfx_negotiation()
        result.struct_size = UInt32(MemoryLayout<rawfx_negotiation>.size)
        result.output = format
        guard filter.pointee.configure(filter, &format, &result) == RAWFX_OK else {
            throw Failure(description: "\(id): configure failed: \(filter.pointee.get_error(filter).map { String(cString: $0) } ?? "")")
        }
        output = VideoFormat(result.output.video)
    }

    deinit { filter.pointee.destroy(filter) }
}

/// Filters called in order through their C ABI, frames in C structs the loop owns, one
/// output buffer per out-of-place filter: the engine's work minus the engine.
final class RawABIVideo: Workload {
    static let summary = "the same plugin instance code called through its C ABI in a plain loop, no engine"
    let pool: FramePool
    private let filters: [RawABIFilter]
    private let frames: UnsafeMutablePointer<rawfx_video_frame>
    private let outputs: UnsafeMutablePointer<rawfx_video_frame?>
    private let buffers: [VideoBuffer]

    init(_ specs: [(String, [(String, String)])], pool: FramePool, registry: PluginRegistry) throws {
        self.pool = pool
        var format = pool.format
        var filters: [RawABIFilter] = []
        var buffers: [VideoBuffer] = []
        outputs = .allocate(capacity: specs.count)
        for (i, (id, parameters)) in specs.enumerated() {
            let f = try RawABIFilter(id: id, parameters: parameters, input: format, registry: registry)
            if f.inPlace {
                (outputs + i).initialize(to: nil)
            } else {
                let b = VideoBuffer(format: f.output)
                buffers.append(b)
                (outputs + i).initialize(to: b.frame.raw)
            }
            filters.append(f)
            format = f.output
        }
        self.filters = filters
        self.buffers = buffers
        frames = .allocate(capacity: specs.count + 1)
        frames.initialize(repeating: rawfx_video_frame(), count: specs.count + 1)
    }

    deinit {
        frames.deallocate()
        outputs.deinitialize(count: filters.count)
        outputs.deallocate()
    }

    func run(_ i: Int) throws {
        frames[0] = pool.frame(i).raw
        var k = 0
        let count = filters.count
        while k < count {
            frames[k + 1] = outputs[k] ?? frames[k]
            let f = filters[k]
            let status = f.process(f.filter, frames + k, frames + k + 1)
            guard status == RAWFX_OK else { throw RawABIFilter.Failure(description: "process_video failed (\(status))") }
            k += 1
        }
    }
}

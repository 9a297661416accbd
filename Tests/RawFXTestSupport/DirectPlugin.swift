import CRawFX
import RawFXAllocCounter
import Foundation
import RawFX
import RawFXRuntime
import XCTest

// MARK: - Driving a plugin file directly

/// A plugin file opened with dlopen and driven through its C functions, without the engine:
/// for counting allocations of a single C call, and for host objects the test controls.
final class DirectPlugin {
    let handle: UnsafeMutableRawPointer
    let entry: UnsafePointer<rawfx_plugin_entry>

    init(path: String) throws {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw DirectError(message: "dlopen \(path): \(String(cString: dlerror()))")
        }
        guard let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL),
              let entry = unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self)() else {
            dlclose(handle)
            throw DirectError(message: "\(path) has no \(RAWFX_ENTRY_SYMBOL)")
        }
        self.handle = handle
        self.entry = entry
    }

    deinit { dlclose(handle) }

    /// A plugin SwiftPM built next to the tests, by its plugin name ("rawfx-speex").
    static func built(_ name: String) throws -> DirectPlugin {
        guard let library = builtPlugins.libraries.first(where: { $0.name == name }) else {
            throw XCTSkip("\(name) is not built next to the tests")
        }
        return try DirectPlugin(path: library.path)
    }

    var descriptors: [UnsafePointer<rawfx_filter_descriptor>] {
        (0..<entry.pointee.filter_count()).compactMap { entry.pointee.filter_descriptor($0) }
    }

    func descriptor(_ id: String) throws -> UnsafePointer<rawfx_filter_descriptor> {
        guard let d = descriptors.first(where: { String(cString: $0.pointee.id) == id }) else {
            throw DirectError(message: "no filter \(id)")
        }
        return d
    }

    func call<T>(_ name: String, as type: T.Type) -> T { unsafeBitCast(dlsym(handle, name)!, to: type) }

    /// RAWFX_SIZE_1_0_HOST_INFO (a macro of offsetof, which Swift does not import).
    static let hostInfoSize1_0 = MemoryLayout<rawfx_host_info>.offset(of: \.plugin_path)!

    /// Calls init with a host_info of this version (a 1.0 host: structSize hostInfoSize1_0).
    func initialize(major: UInt32, minor: UInt32, structSize: Int = MemoryLayout<rawfx_host_info>.size,
                    path: String? = nil, host: UnsafePointer<rawfx_host>? = nil) -> (status: rawfx_status, message: String) {
        var message = [CChar](repeating: 0, count: 256)
        let status = (path ?? "").withCString { cPath in
            var info = rawfx_host_info()
            info.struct_size = UInt32(structSize)
            info.abi = rawfx_abi_version(major: major, minor: minor)
            info.name = nil
            info.plugin_path = path == nil ? nil : cPath
            info.host = host
            return entry.pointee.`init`(&info, &message, message.count)
        }
        return (status, String(nulTerminated: message))
    }

    /// What a probe plugin's rawfx_plugin_file_path / _host answer (see PluginHelperTests).
    var path: String { String(cString: call("probe_path", as: (@convention(c) () -> UnsafePointer<CChar>).self)()) }
    var host: UnsafePointer<rawfx_host>? { call("probe_host", as: (@convention(c) () -> UnsafePointer<rawfx_host>?).self)() }
}

struct DirectError: Error, CustomStringConvertible { let message: String; var description: String { message } }

/// One instance created through `create` (a 1.0 host: no host object) or `create_with_host`
/// with a host object of the runtime, attached (the service thread calls its on_callback) or not.
final class DirectFilter {
    enum Host { case none, unattached, attached }
    let filter: UnsafePointer<rawfx_filter>
    let context: OpaquePointer?

    init(_ descriptor: UnsafePointer<rawfx_filter_descriptor>, host: Host, source: String? = nil) throws {
        var message = [CChar](repeating: 0, count: 512)
        let id = String(cString: descriptor.pointee.id)
        var context: OpaquePointer? = nil
        let created: UnsafePointer<rawfx_filter>?
        if host == .none {
            created = descriptor.pointee.create(descriptor, &message, message.count)
        } else {
            context = rfx_host_context_create(source ?? id, RFX_HOST_INSTANCE)
            created = descriptor.pointee.create_with_host(descriptor, rfx_host_context_host(context), &message, message.count)
        }
        guard let created else {
            if let context { rfx_host_context_destroy(context) }
            throw DirectError(message: String(nulTerminated: message))
        }
        if host == .attached { rfx_host_context_attach_filter(context, created) }
        filter = created
        self.context = context
    }

    /// Detaches first, so the service thread never calls on_callback on a destroyed filter.
    deinit {
        if let context { rfx_host_context_attach_filter(context, nil) }
        filter.pointee.destroy(filter)
        if let context { rfx_host_context_destroy(context) }
    }

    var descriptor: rawfx_filter_descriptor { filter.pointee.descriptor.pointee }
    var error: String { filter.pointee.get_error(filter).map { String(cString: $0) } ?? "" }

    @discardableResult
    func configure(_ input: rawfx_format, negotiationSize: Int = MemoryLayout<rawfx_negotiation>.size) throws -> rawfx_negotiation {
        var input = input
        var result = rawfx_negotiation()
        result.struct_size = UInt32(negotiationSize)
        result.output = input
        guard filter.pointee.configure(filter, &input, &result) == RAWFX_OK else { throw DirectError(message: error) }
        return result
    }

    func set(_ index: Int, _ value: rawfx_param_value) -> rawfx_status {
        var value = value
        return filter.pointee.set_param(filter, UInt32(index), &value)
    }
    func set(_ index: Int, int: Int64) -> rawfx_status {
        set(index, .int(int, type: rawfx_param_type(descriptor.params[index].type)))
    }
    func set(_ index: Int, float: Double) -> rawfx_status { set(index, .float(float)) }

    func reset() { filter.pointee.reset(filter) }
    func onCallback() { filter.pointee.on_callback(filter) }

    /// Runs one in-place audio block (out == in).
    func process(_ samples: inout [Int16], rate: Int, channels: Int) throws {
        let status = samples.withUnsafeMutableBufferPointer { buffer in
            var frame = rawfx_audio_frame()
            frame.struct_size = UInt32(MemoryLayout<rawfx_audio_frame>.size)
            frame.samples = buffer.baseAddress
            frame.frame_count = UInt32(buffer.count / channels)
            frame.sample_rate = UInt32(rate)
            frame.channels = UInt32(channels)
            return withUnsafeMutablePointer(to: &frame) { filter.pointee.process_audio(filter, $0, $0) }
        }
        guard status == RAWFX_OK else { throw DirectError(message: error) }
    }

    /// set_param of every parameter without RAWFX_PARAM_FLAG_RECONFIGURE at each end of its
    /// range and at its default (every value of a BOOL or ENUM), then reset: each call must
    /// succeed and allocate nothing on the calling thread. Returns the ids it set.
    @discardableResult
    func assertRealTimeCallsDoNotAllocate(file: StaticString = #filePath, line: UInt = #line) -> [String] {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect", file: file, line: line)
        var live: [String] = []
        for index in 0..<Int(descriptor.param_count) {
            let p = descriptor.params[index]
            guard p.flags & UInt32(RAWFX_PARAM_FLAG_RECONFIGURE) == 0 else { continue }
            let id = String(cString: p.id)
            live.append(id)
            let values: [Double]
            switch Int(p.type) {
            case RAWFX_PARAM_BOOL: values = [0, 1]
            case RAWFX_PARAM_ENUM: values = (0..<Int(p.enum_count)).map(Double.init)
            default: values = [p.min_value, p.max_value]
            }
            for v in values + [p.default_value] {
                let value: rawfx_param_value = Int(p.type) == RAWFX_PARAM_FLOAT ? .float(v) : .int(Int64(v), type: p.type)
                let before = rawfx_thread_allocation_count()
                let status = set(index, value)
                let allocations = rawfx_thread_allocation_count() - before
                XCTAssertEqual(status, Int32(RAWFX_OK), "\(id)=\(v): \(error)", file: file, line: line)
                XCTAssertEqual(allocations, 0, "set_param \(id)=\(v) allocated", file: file, line: line)
            }
        }
        let before = rawfx_thread_allocation_count()
        reset()
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "reset allocated", file: file, line: line)
        return live
    }
}

extension rawfx_param_value {
    static func int(_ value: Int64, type: rawfx_param_type) -> rawfx_param_value {
        var v = rawfx_param_value()
        v.struct_size = UInt32(MemoryLayout<rawfx_param_value>.size)
        v.type = type
        v.int_value = value
        return v
    }
    static func int(_ value: Int64, type: Int) -> rawfx_param_value { .int(value, type: rawfx_param_type(type)) }
    static func float(_ value: Double) -> rawfx_param_value {
        var v = rawfx_param_value()
        v.struct_size = UInt32(MemoryLayout<rawfx_param_value>.size)
        v.type = rawfx_param_type(RAWFX_PARAM_FLOAT)
        v.float_value = value
        return v
    }
}

extension rawfx_format {
    static func audio(rate: Int, channels: Int) -> rawfx_format {
        var f = rawfx_format(kind: RAWFX_MEDIA_AUDIO)
        f.audio.sample_rate = UInt32(rate)
        f.audio.channels = UInt32(channels)
        return f
    }
    static func video(width: Int, height: Int) -> rawfx_format {
        var f = rawfx_format(kind: RAWFX_MEDIA_VIDEO)
        f.video.width = UInt32(width)
        f.video.height = UInt32(height)
        f.video.pixel_format = rawfx_pixel_format(RAWFX_PIXEL_I420)
        return f
    }
    /// Every struct_size set; the member of `kind` left for the caller.
    private init(kind: Int) {
        self.init()
        struct_size = UInt32(MemoryLayout<rawfx_format>.size)
        self.kind = rawfx_media_kind(kind)
        audio.struct_size = UInt32(MemoryLayout<rawfx_audio_format>.size)
        video.struct_size = UInt32(MemoryLayout<rawfx_video_format>.size)
    }
}

/// Collects RawFXLog records while alive (the handler is process-wide: one capture at a time).
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [RawFXLog.Record] = []

    init() {
        RawFXLog.setHandler { [self] record in lock.withLock { collected.append(record) } }
    }

    var records: [RawFXLog.Record] { lock.withLock { collected } }

    func stop() { RawFXLog.setHandler(nil) }
}

/// Runs a compiler; throws its diagnostics when it fails.
func runCompiler(_ compiler: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [compiler] + arguments
    let pipe = Pipe()
    process.standardError = pipe
    try process.run()
    let diagnostics = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CompileFailure(message: diagnostics) }
}

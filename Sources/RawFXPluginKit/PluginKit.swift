@_exported import CRawFX
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Write a RawFX filter in Swift: conform a class to `RawFXFilter`, then export the plugin
/// with one function:
///
///     @_cdecl("rawfx_get_plugin_entry")
///     public func entry() -> UnsafeRawPointer { RawFXPlugin.export(name: "my-plugin", version: "1.0.0", filters: [Invert.self]) }
///
/// The kit builds the C structs of rawfx.h (entry, descriptors, instances) once, keeps the
/// strings alive for the life of the library, and turns thrown `FilterFailure`s into a
/// status plus the instance's `get_error` message. Plugins link this module, never the engine.
public protocol RawFXFilter: AnyObject {
    /// Identity, kind and parameters (read once, at export).
    static var info: FilterInfo { get }
    /// A new instance with every parameter at its default (`create`).
    init() throws(FilterFailure)
    /// A new instance that keeps its host (`create_with_host`). The default calls `init()`;
    /// implement it to log, ask for a rebuild or a callback, or borrow the thread pool.
    init(host: FilterHost) throws(FilterFailure)
    /// [control, or process between frames] `set_param`; the host already checked type and range.
    func setParameter(_ index: Int, _ value: ParameterInput) throws(FilterFailure)
    /// [control] `configure`: read `input`, write what changes into `negotiation`.
    func configure(input: rawfx_format, negotiation: inout rawfx_negotiation) throws(FilterFailure)
    /// [process] `process_video`; `output == input` for in-place filters. No allocation here.
    func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status
    /// [process] `process_audio`; `output == input` for in-place filters. No allocation here.
    func processAudio(_ input: UnsafePointer<rawfx_audio_frame>, _ output: UnsafeMutablePointer<rawfx_audio_frame>) -> rawfx_status
    /// [control, or process between frames] `reset`.
    func reset()
    /// The message for the last failing `process` call (the kit clears it on success of others).
    var processError: String { get }
    /// [control, possibly during process] `on_callback`: runs after `host.requestCallback()`.
    func onCallback()
}

extension RawFXFilter {
    public func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status {
        rawfx_status(RAWFX_ERR_UNSUPPORTED)
    }
    public func processAudio(_ input: UnsafePointer<rawfx_audio_frame>, _ output: UnsafeMutablePointer<rawfx_audio_frame>) -> rawfx_status {
        rawfx_status(RAWFX_ERR_UNSUPPORTED)
    }
    public func reset() {}
    public var processError: String { "" }
    public func onCallback() {}
    public init(host: FilterHost) throws(FilterFailure) { try self.init() }
}

/// The host as a Swift filter sees it (`rawfx_host`, rawfx.h 1.1). Every call is
/// real-time safe unless it says otherwise; with no host (a 1.0 host called `create`) they
/// do nothing.
/// Unchecked `Sendable`: the host object is the host's, and rawfx.h makes each of its functions callable from any thread.
public struct FilterHost: @unchecked Sendable {
    /// The C object, or nil in a host that called `create` rather than `create_with_host`.
    public let raw: UnsafePointer<rawfx_host>?

    public init(_ raw: UnsafePointer<rawfx_host>?) { self.raw = raw }

    /// Logs a line (`rawfx_host.log`): copied into the host's lock-free ring, written on
    /// another thread. Severity: RAWFX_LOG_DEBUG … RAWFX_LOG_ERROR.
    public func log(_ severity: Int32, _ message: String) {
        guard let raw, let log = raw.pointee.log else { return }
        message.withCString { log(raw, rawfx_log_severity(severity), $0) }
    }

    /// Asks the host to rebuild this instance with the same parameters, configured off the
    /// process thread (`rawfx_host.request_reconfigure`).
    public func requestReconfigure() {
        guard let raw, let request = raw.pointee.request_reconfigure else { return }
        request(raw)
    }

    /// Asks for `onCallback` on a control thread soon (`rawfx_host.request_callback`).
    public func requestCallback() {
        guard let raw, let request = raw.pointee.request_callback else { return }
        request(raw)
    }

    /// True on the thread processing this instance right now (`rawfx_host.is_process_thread`).
    public var isProcessThread: Bool {
        guard let raw, let check = raw.pointee.is_process_thread else { return false }
        return check(raw) != 0
    }

    /// The host's thread pool (`rawfx.thread-pool/1`), or nil. Not real-time: ask once, at
    /// create or configure.
    public var threadPool: UnsafePointer<rawfx_host_thread_pool>? {
        guard let raw, let get = raw.pointee.get_extension,
              let p = get(raw, RAWFX_EXT_THREAD_POOL) else { return nil }
        return p.assumingMemoryBound(to: rawfx_host_thread_pool.self)
    }

    /// [process] Runs `body(0..<count)` as slice jobs on the host's pool (inline without one);
    /// returns when all are done. `body` must only touch disjoint data per index. The closure
    /// is passed by pointer for the duration of the call, but a debug build boxes its context
    /// on the heap (2 allocations per call, measured): a filter that must not allocate in any
    /// build calls `pool.pointee.run` with a capture-free C function and its state by
    /// `Unmanaged` pointer, as the watermark plugin does (Plugins/Watermark/Watermark.swift).
    public func runSlices(_ count: Int, pool: UnsafePointer<rawfx_host_thread_pool>?, _ body: (Int) -> Void) {
        guard let raw, let pool, let run = pool.pointee.run, count > 1 else {
            for i in 0..<count { body(i) }
            return
        }
        withoutActuallyEscaping(body) { escapable in
            withUnsafePointer(to: escapable) { context in
                let status = run(raw, { context, index in
                    context!.assumingMemoryBound(to: ((Int) -> Void).self).pointee(Int(index))
                }, UnsafeMutableRawPointer(mutating: context), UInt32(count))
                if status != RAWFX_OK { for i in 0..<count { escapable(i) } }
            }
        }
    }
}

/// A failure with its status code and a message for `get_error`.
public struct FilterFailure: Error {
    public var status: rawfx_status
    public var message: String
    public init(_ status: Int, _ message: String) {
        self.status = rawfx_status(status)
        self.message = message
    }
    public static func invalid(_ message: String) -> FilterFailure { FilterFailure(Int(RAWFX_ERR_INVALID_ARGUMENT), message) }
    public static func unsupported(_ message: String) -> FilterFailure { FilterFailure(Int(RAWFX_ERR_UNSUPPORTED), message) }
    public static func io(_ message: String) -> FilterFailure { FilterFailure(Int(RAWFX_ERR_IO), message) }
}

/// A parameter value as the host delivers it (`rawfx_param_value`), already validated.
public enum ParameterInput {
    case int(Int64)
    case float(Double)
    case bool(Bool)
    case enumeration(Int)
    case string(String)

    public var intValue: Int64 {
        switch self {
        case .int(let v): return v
        case .float(let v): return Int64(v)
        case .bool(let b): return b ? 1 : 0
        case .enumeration(let i): return Int64(i)
        case .string(let s): return Int64(s) ?? 0
        }
    }
    public var doubleValue: Double {
        if case .float(let v) = self { return v }
        return Double(intValue)
    }
    public var boolValue: Bool { intValue != 0 }
    public var stringValue: String {
        if case .string(let s) = self { return s }
        return String(intValue)
    }
}

/// Static description of a filter type (`rawfx_filter_descriptor`).
public struct FilterInfo: Sendable {
    public var id: String
    public var name: String
    public var version: String
    public var description: String
    public var mediaKind: Int
    public var processing: Int
    public var parameters: [ParameterInfo]

    /// `mediaKind`: RAWFX_MEDIA_VIDEO or RAWFX_MEDIA_AUDIO; `processing`: RAWFX_PROCESS_IN_PLACE
    /// or RAWFX_PROCESS_OUT_OF_PLACE.
    public init(id: String, name: String, version: String, description: String,
                mediaKind: Int, processing: Int, parameters: [ParameterInfo] = []) {
        self.id = id
        self.name = name
        self.version = version
        self.description = description
        self.mediaKind = mediaKind
        self.processing = processing
        self.parameters = parameters
    }
}

/// One parameter (`rawfx_param_descriptor`).
public struct ParameterInfo: Sendable {
    public enum Kind: Sendable {
        case int(default: Int64, range: ClosedRange<Int64>)
        case float(default: Double, range: ClosedRange<Double>)
        case bool(default: Bool)
        case enumeration([String], default: Int)
        case string(default: String?)
    }
    public var id: String
    public var name: String
    public var help: String
    public var unit: String
    public var kind: Kind
    public var flags: UInt32

    public init(_ id: String, name: String, help: String, unit: String = "", kind: Kind, flags: Int = 0) {
        self.id = id
        self.name = name
        self.help = help
        self.unit = unit
        self.kind = kind
        self.flags = UInt32(flags)
    }
}

/// Builds and exports the C entry of a Swift plugin.
///
/// Several Swift plugins can share one image (an app that links the built-in plugins links
/// this module once for all of them), so each exported plugin gets a slot of its own: its
/// entry's `filter_count` and `filter_descriptor` take no argument, so each slot has its own
/// pair of C functions.
public enum RawFXPlugin {
    /// The Swift plugins one image can hold (the built-ins have two).
    public static let slotCount = 8
    /// Plugin name to its slot and entry; a plugin exports once, later calls return the same entry.
    private static let exported = Mutex<[String: (slot: Int, entry: UInt)]>([:])
    /// Slot `i` is written once, under `exported`, before its entry is returned; its C
    /// functions are reached only through that entry, so they read it without a lock.
    nonisolated(unsafe) private static let registries: UnsafeMutablePointer<Registry?> = {
        let table = UnsafeMutablePointer<Registry?>.allocate(capacity: slotCount)
        table.initialize(repeating: nil, count: slotCount)
        return table
    }()

    private static func filterCount(_ slot: Int) -> UInt32 { UInt32(registries[slot]?.descriptors.count ?? 0) }
    private static func filterDescriptor(_ slot: Int, _ index: UInt32) -> UnsafePointer<rawfx_filter_descriptor>? {
        guard let d = registries[slot]?.descriptors, Int(index) < d.count else { return nil }
        return UnsafePointer(d[Int(index)])
    }
    private static let filterCountFunctions: [@convention(c) () -> UInt32] = [
        { filterCount(0) }, { filterCount(1) }, { filterCount(2) }, { filterCount(3) },
        { filterCount(4) }, { filterCount(5) }, { filterCount(6) }, { filterCount(7) },
    ]
    private static let filterDescriptorFunctions: [@convention(c) (UInt32) -> UnsafePointer<rawfx_filter_descriptor>?] = [
        { filterDescriptor(0, $0) }, { filterDescriptor(1, $0) }, { filterDescriptor(2, $0) }, { filterDescriptor(3, $0) },
        { filterDescriptor(4, $0) }, { filterDescriptor(5, $0) }, { filterDescriptor(6, $0) }, { filterDescriptor(7, $0) },
    ]

    /// Returns the plugin's `rawfx_plugin_entry`, built on the first call and kept for the life
    /// of the image. Call it from the plugin's `@_cdecl` entry function. More than `slotCount`
    /// Swift plugins in one image is a build mistake and stops the process, naming the plugin.
    public static func export(name: String, version: String, filters: [any RawFXFilter.Type]) -> UnsafeRawPointer {
        exported.withLock { plugins in
            if let known = plugins[name] { return UnsafeRawPointer(bitPattern: known.entry)! }
            let slot = plugins.count
            guard slot < slotCount else {
                fatalError("RawFXPluginKit: plugin '\(name)' is the \(slot + 1)th Swift plugin in one image; at most \(slotCount) fit (RawFXPlugin.slotCount)")
            }
            registries[slot] = Registry(filters: filters)
            let entry = UnsafeMutablePointer<rawfx_plugin_entry>.allocate(capacity: 1)
            entry.initialize(to: rawfx_plugin_entry(
                struct_size: UInt32(MemoryLayout<rawfx_plugin_entry>.size),
                abi: rawfx_abi_version(major: UInt32(RAWFX_ABI_MAJOR), minor: UInt32(RAWFX_ABI_MINOR)),
                plugin_name: permanentCString(name),
                plugin_version: permanentCString(version),
                init: { host, error, capacity in
                    guard let host, host.pointee.abi.major == UInt32(RAWFX_ABI_MAJOR) else {
                        writeMessage("this plugin needs RawFX ABI major \(RAWFX_ABI_MAJOR)", to: error, capacity: capacity)
                        return rawfx_status(RAWFX_ERR_VERSION)
                    }
                    return rawfx_status(RAWFX_OK)
                },
                deinit: {},
                filter_count: filterCountFunctions[slot],
                filter_descriptor: filterDescriptorFunctions[slot]))
            plugins[name] = (slot, UInt(bitPattern: entry))
            return UnsafeRawPointer(entry)
        }
    }

    /// The Swift type behind a descriptor of any plugin in this image ([control]: takes the lock).
    static func type(for descriptor: UnsafePointer<rawfx_filter_descriptor>) -> (any RawFXFilter.Type)? {
        let slots = exported.withLock { plugins in plugins.values.map(\.slot) }
        for slot in slots {
            if let type = registries[slot]?.type(for: descriptor) { return type }
        }
        return nil
    }

    /// The descriptors, one per Swift filter type, in export order.
    final class Registry {
        let types: [any RawFXFilter.Type]
        let descriptors: [UnsafeMutablePointer<rawfx_filter_descriptor>]

        init(filters: [any RawFXFilter.Type]) {
            types = filters
            descriptors = filters.map { RawFXPlugin.makeDescriptor($0.info) }
        }

        func type(for descriptor: UnsafePointer<rawfx_filter_descriptor>) -> (any RawFXFilter.Type)? {
            descriptors.firstIndex { UnsafePointer($0) == descriptor }.map { types[$0] }
        }
    }

    static func makeDescriptor(_ info: FilterInfo) -> UnsafeMutablePointer<rawfx_filter_descriptor> {
        let params = UnsafeMutablePointer<rawfx_param_descriptor>.allocate(capacity: max(info.parameters.count, 1))
        for (i, p) in info.parameters.enumerated() {
            var c = rawfx_param_descriptor()
            c.struct_size = UInt32(MemoryLayout<rawfx_param_descriptor>.size)
            c.id = permanentCString(p.id)
            c.name = permanentCString(p.name)
            c.help = permanentCString(p.help)
            c.unit = permanentCString(p.unit)
            c.flags = p.flags
            switch p.kind {
            case .int(let d, let r):
                c.type = rawfx_param_type(RAWFX_PARAM_INT)
                c.default_value = Double(d); c.min_value = Double(r.lowerBound); c.max_value = Double(r.upperBound)
            case .float(let d, let r):
                c.type = rawfx_param_type(RAWFX_PARAM_FLOAT)
                c.default_value = d; c.min_value = r.lowerBound; c.max_value = r.upperBound
            case .bool(let d):
                c.type = rawfx_param_type(RAWFX_PARAM_BOOL)
                c.default_value = d ? 1 : 0; c.max_value = 1
            case .enumeration(let names, let d):
                c.type = rawfx_param_type(RAWFX_PARAM_ENUM)
                let values = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: names.count)
                for (j, n) in names.enumerated() { values[j] = permanentCString(n) }
                c.enum_values = UnsafePointer(values)
                c.enum_count = UInt32(names.count)
                c.default_value = Double(d)
            case .string(let d):
                c.type = rawfx_param_type(RAWFX_PARAM_STRING)
                c.default_string = d.map(permanentCString)
            }
            params[i] = c
        }
        let d = UnsafeMutablePointer<rawfx_filter_descriptor>.allocate(capacity: 1)
        var c = rawfx_filter_descriptor()
        c.struct_size = UInt32(MemoryLayout<rawfx_filter_descriptor>.size)
        c.id = permanentCString(info.id)
        c.name = permanentCString(info.name)
        c.version = permanentCString(info.version)
        c.description = permanentCString(info.description)
        c.media_kind = rawfx_media_kind(info.mediaKind)
        c.processing = rawfx_processing(info.processing)
        c.params = UnsafePointer(params)
        c.param_count = UInt32(info.parameters.count)
        c.create = { descriptor, messageBuffer, capacity in
            RawFXPlugin.create(descriptor, host: nil, messageBuffer, capacity)
        }
        c.create_with_host = { descriptor, host, messageBuffer, capacity in
            RawFXPlugin.create(descriptor, host: host, messageBuffer, capacity)
        }
        d.initialize(to: c)
        return d
    }
}

extension RawFXPlugin {
    /// `create` and `create_with_host`: a Swift instance behind a C `rawfx_filter`.
    static func create(_ descriptor: UnsafePointer<rawfx_filter_descriptor>?, host: UnsafePointer<rawfx_host>?,
                       _ messageBuffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> UnsafePointer<rawfx_filter>? {
        guard let descriptor, let type = RawFXPlugin.type(for: descriptor) else {
            writeMessage("unknown descriptor", to: messageBuffer, capacity: capacity)
            return nil
        }
        do throws(FilterFailure) {
            return UnsafePointer(Instance.make(try type.init(host: FilterHost(host)), descriptor: descriptor))
        } catch {
            writeMessage(error.message, to: messageBuffer, capacity: capacity)
            return nil
        }
    }
}

/// One live filter: the C `rawfx_filter` plus the Swift object and its error message.
final class Instance {
    let filter: any RawFXFilter
    var message: [CChar] = [0]

    init(_ filter: any RawFXFilter) { self.filter = filter }

    static func make(_ filter: any RawFXFilter, descriptor: UnsafePointer<rawfx_filter_descriptor>) -> UnsafeMutablePointer<rawfx_filter> {
        let box = Instance(filter)
        let c = UnsafeMutablePointer<rawfx_filter>.allocate(capacity: 1)
        c.initialize(to: rawfx_filter(
            struct_size: UInt32(MemoryLayout<rawfx_filter>.size),
            descriptor: descriptor,
            filter_data: Unmanaged.passRetained(box).toOpaque(),
            destroy: { f in
                guard let f else { return }
                Unmanaged<Instance>.fromOpaque(f.pointee.filter_data).release()
                UnsafeMutablePointer(mutating: f).deallocate()
            },
            set_param: { f, index, value in
                let box = Instance.of(f)
                guard let value else { return box.fail(.invalid("no value")) }
                let v = value.pointee
                let input: ParameterInput
                switch Int(v.type) {
                case RAWFX_PARAM_INT: input = .int(v.int_value)
                case RAWFX_PARAM_FLOAT: input = .float(v.float_value)
                case RAWFX_PARAM_BOOL: input = .bool(v.int_value != 0)
                case RAWFX_PARAM_ENUM: input = .enumeration(Int(v.int_value))
                default: input = .string(v.string_value.map { String(cString: $0) } ?? "")
                }
                do throws(FilterFailure) { try box.filter.setParameter(Int(index), input) } catch { return box.fail(error) }
                return box.succeed()
            },
            configure: { f, input, result in
                let box = Instance.of(f)
                guard let input, let result else { return box.fail(.invalid("configure without formats")) }
                do throws(FilterFailure) { try box.filter.configure(input: input.pointee, negotiation: &result.pointee) } catch { return box.fail(error) }
                return box.succeed()
            },
            process_video: { f, input, output in
                let box = Instance.of(f)
                let status = box.filter.processVideo(input!, output!)
                if status != RAWFX_OK { box.setMessage(box.filter.processError) }
                return status
            },
            process_audio: { f, input, output in
                let box = Instance.of(f)
                let status = box.filter.processAudio(input!, output!)
                if status != RAWFX_OK { box.setMessage(box.filter.processError) }
                return status
            },
            reset: { f in Instance.of(f).filter.reset() },
            get_error: { f in
                let box = Instance.of(f)
                return box.message.withUnsafeBufferPointer { UnsafePointer($0.baseAddress!) }
            },
            get_extension: nil,
            on_callback: { f in Instance.of(f).filter.onCallback() }))
        return c
    }

    @inline(__always)
    static func of(_ f: UnsafePointer<rawfx_filter>?) -> Instance {
        Unmanaged<Instance>.fromOpaque(f!.pointee.filter_data).takeUnretainedValue()
    }

    func fail(_ failure: FilterFailure) -> rawfx_status {
        setMessage(failure.message)
        return failure.status
    }

    func succeed() -> rawfx_status {
        if message.count > 1 { message = [0] }
        return rawfx_status(RAWFX_OK)
    }

    func setMessage(_ text: String) { message = Array(text.utf8CString) }
}

/// A C string that lives as long as the library (descriptor strings).
func permanentCString(_ s: String) -> UnsafePointer<CChar> { UnsafePointer(strdup(s)!) }

/// Copies `message` into a host-provided buffer of `capacity` bytes, NUL-terminated.
func writeMessage(_ message: String, to buffer: UnsafeMutablePointer<CChar>?, capacity: Int) {
    guard let buffer, capacity > 0 else { return }
    let bytes = Array(message.utf8.prefix(capacity - 1))
    for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
    buffer[bytes.count] = 0
}

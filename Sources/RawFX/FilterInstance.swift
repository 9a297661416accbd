import Dispatch
import RawFXRuntime

/// What a filter answered at negotiation (`rawfx_negotiation`).
public struct Negotiation: Hashable, Sendable {
    public var output: StreamFormat
    /// Audio: the exact frames per process call the filter needs (0: any).
    public var blockFrames: Int
    /// Audio out of place: the most frames one call writes (0: the input count).
    public var maxOutputFrames: Int
    /// Frames of delay (video frames, or audio frames at the output rate).
    public var latency: Int
}

/// One live filter (`rawfx_filter`): created by its plugin, destroyed in `deinit`.
/// Package-internal: only a chain (or the helper process) may call it, on the threads its
/// contract names; an app changes parameters through the chain's control side.
///
/// Calls are serialized by the owner (a chain): never two at once on one instance. Each
/// instance has its own host object (`HostContext`), handed to `create_with_host`, through
/// which the plugin logs, asks for a rebuild or a callback, and borrows the thread pool.
/// Unchecked `Sendable`: the process thread owns process and real-time calls, control threads the rest under the host object's control lock.
package final class FilterInstance: @unchecked Sendable {
    package let type: FilterType
    let filter: UnsafePointer<rawfx_filter>
    /// The instance struct read by its `struct_size` and the plugin's ABI minor.
    let fields: rawfx_filter
    /// The host object this instance was created with; freed after `destroy`.
    let hostContext: HostContext
    /// The values set so far, by parameter id (defaults are not listed).
    package internal(set) var values: [String: ParameterValue] = [:]
    /// The last negotiation, or nil before `configure`.
    package private(set) var negotiation: Negotiation?

    /// A stage of an isolation group after the first: the group's proxy, kept alive as long as
    /// this shell, which hands its parameters to it (docs/isolation.md). Nil otherwise.
    let groupOwner: FilterInstance?

    /// With `groupOwner`, a shell (`type` is a shell type) for stage `member` of its group.
    init(type: FilterType, groupOwner: FilterInstance? = nil, member: Int = 0) throws(ChainError) {
        var message = [CChar](repeating: 0, count: 512)
        let hostContext = HostContext(source: type.id, kind: .instance)
        let created: UnsafePointer<rawfx_filter>?
        if let groupOwner {
            created = rfx_isolation_shell_create(type.descriptor, groupOwner.filter, UInt32(member), &message, message.count)
        } else if let createWithHost = type.fields.create_with_host {
            created = createWithHost(type.descriptor, hostContext.host, &message, message.count)
        } else {
            created = type.fields.create?(type.descriptor, &message, message.count)
        }
        guard let filter = created else {
            let text = String(nulTerminated: message)
            throw .createFailed(filter: type.id, message: text.isEmpty ? "create returned NULL" : text)
        }
        let size = filter.pointee.struct_size
        let f = PluginStruct.read(filter, zero: rawfx_filter(), structSize: size,
                                  sizeForMinor: PluginStruct.filterSize(minor: type.abiMinor))
        guard Int(size) >= PluginStruct.filter10, f.destroy != nil, f.set_param != nil,
              f.configure != nil, f.reset != nil, f.get_error != nil,
              (type.mediaKind == .video ? f.process_video != nil : f.process_audio != nil) else {
            f.destroy?(filter)
            throw .createFailed(filter: type.id, message: Int(size) < PluginStruct.filter10
                ? "the instance's struct_size \(size) is below the ABI 1.0 size \(PluginStruct.filter10)"
                : "the instance lacks a required function (destroy, set_param, configure, process_\(type.mediaKind), reset, get_error)")
        }
        self.type = type
        self.filter = filter
        self.fields = f
        self.hostContext = hostContext
        self.groupOwner = groupOwner
        hostContext.attach(filter)
    }

    /// Set by a chain (see `onReconfigureRequest`).
    var reconfigureHandler: ReconfigureHandler?

    /// `destroy`, then the host object goes (the plugin may use it until destroy returns).
    deinit {
        if reconfigureHandler != nil { rfx_host_context_set_owner(hostContext.context, nil, nil) }
        // No on_callback may reach the instance once destroy has begun.
        hostContext.detach()
        fields.destroy(filter)
    }

    /// The instance's message for its last failed call (`get_error`). A leading "<id>: ",
    /// which C plugins often add, is dropped: the engine's errors already name the filter.
    package var lastError: String {
        guard let p = fields.get_error(filter) else { return "" }
        let message = String(cString: p)
        let prefix = type.id + ": "
        return message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
    }

    /// Parses and sets a parameter from its chain text (`set_param`).
    package func set(_ parameter: String, text: String) throws(ChainError) {
        guard let index = type.parameters.firstIndex(where: { $0.id == parameter }) else {
            throw .unknownParameter(filter: type.id, parameter: parameter, valid: type.parameters.map(\.id))
        }
        try set(index: index, value: type.parameters[index].parse(text, filter: type.id))
    }

    /// Sets a validated value (`set_param`). A value the plugin still refuses throws with its message.
    package func set(index: Int, value: ParameterValue) throws(ChainError) {
        let descriptor = type.parameters[index]
        let status = hostContext.withControlLock { value.withCValue { fields.set_param(filter, UInt32(index), $0) } }
        guard status == RAWFX_OK else {
            throw .invalidValue(filter: type.id, parameter: descriptor.id, value: value.description,
                                expected: lastError.isEmpty ? descriptor.allowed : lastError)
        }
        values[descriptor.id] = value
        if descriptor.needsReconfigure { negotiation = nil }
    }

    /// True when a parameter change since the last `configure` needs a new one.
    package var needsConfigure: Bool { negotiation == nil }

    /// [process] Makes the next frame negotiate again: an isolation group's RECONFIGURE
    /// parameter was set in its helper, which configures the group anew (no new instance).
    func invalidateNegotiation() { negotiation = nil }

    /// Negotiates the input format (`configure`). Throws `.refused` with the plugin's message.
    @discardableResult
    package func configure(input: StreamFormat) throws(ChainError) -> Negotiation {
        guard input.kind == type.mediaKind else {
            throw .wrongMediaKind(filter: type.id, filterKind: type.mediaKind, chainKind: input.kind)
        }
        for p in type.parameters where p.isRequired && values[p.id] == nil && p.defaultValue == nil {
            throw .missingParameter(filter: type.id, parameter: p.id)
        }
        var cInput = input.cValue
        var result = rawfx_negotiation()
        result.struct_size = UInt32(MemoryLayout<rawfx_negotiation>.size)
        result.output = cInput
        let status = hostContext.withControlLock { fields.configure(filter, &cInput, &result) }
        guard status == RAWFX_OK else {
            let message = lastError
            throw .refused(filter: type.id, input: input, message: message.isEmpty ? "configure returned status \(status)" : message)
        }
        guard let output = StreamFormat(result.output), output.kind == input.kind else {
            throw .refused(filter: type.id, input: input, message: "the plugin answered an output of another media kind")
        }
        if type.processing == .inPlace, output != input {
            throw .refused(filter: type.id, input: input, message: "an in-place filter changed the format to \(output)")
        }
        // Before any FIFO, delay line or drain is sized from them (rawfx.h's caps).
        var problem = [CChar](repeating: 0, count: 256)
        if rfx_negotiation_cap_violation(&cInput, &result, &problem, problem.count) != nil {
            throw .refused(filter: type.id, input: input, message: String(cString: problem))
        }
        let n = Negotiation(output: output, blockFrames: Int(result.block_frames),
                            maxOutputFrames: Int(result.max_output_frames), latency: Int(result.latency))
        negotiation = n
        return n
    }

    /// Forgets history at a stream discontinuity (`reset`).
    package func reset() { fields.reset(filter) }

    /// [process] `reset` with the calling thread marked as this instance's process thread.
    @inline(__always)
    func resetOnProcessThread() {
        hostContext.enterProcess()
        fields.reset(filter)
        HostContext.leaveProcess()
    }

    /// [process] `set_param` of a value the control side validated and turned into C
    /// (`rawfx_param_value`); the real-time path of a run-time parameter change.
    @inline(__always)
    func setOnProcessThread(index: Int, _ value: UnsafePointer<rawfx_param_value>) -> rawfx_status {
        hostContext.enterProcess()
        let status = fields.set_param(filter, UInt32(index), value)
        HostContext.leaveProcess()
        return status
    }

    /// Runs one video frame (`process_video`). Returns the plugin's status.
    @inline(__always)
    package func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status {
        // The chain leaves once after the frame (`HostContext.leaveProcess`).
        hostContext.enterProcess()
        return fields.process_video(filter, input, output)
    }

    /// Runs one audio block (`process_audio`). Returns the plugin's status.
    @inline(__always)
    package func processAudio(_ input: UnsafePointer<rawfx_audio_frame>, _ output: UnsafeMutablePointer<rawfx_audio_frame>) -> rawfx_status {
        hostContext.enterProcess()
        return fields.process_audio(filter, input, output)
    }

    /// An extension the instance offers by string id (`get_extension`), or nil.
    package func extensionPointer(_ id: String) -> UnsafeRawPointer? {
        guard let get = fields.get_extension else { return nil }
        return id.withCString { get(filter, $0) }
    }
}

extension FilterInstance {
    /// What runs when the plugin calls `request_reconfigure`: the chain rebuilds this stage
    /// on a control thread. The handler is dispatched off the runtime's service thread (which
    /// holds the runtime's registry, and a rebuild creates host objects).
    func onReconfigureRequest(_ handler: @escaping @Sendable () -> Void) {
        let box = ReconfigureHandler(handler)
        reconfigureHandler = box
        rfx_host_context_set_owner(hostContext.context, Unmanaged.passUnretained(box).toOpaque()) { owner, _ in
            guard let owner else { return }
            let handler = Unmanaged<ReconfigureHandler>.fromOpaque(owner).takeUnretainedValue().handler
            DispatchQueue.global().async(execute: handler)
        }
    }
}

/// Keeps a reconfigure handler alive for as long as the host object may call it.
final class ReconfigureHandler: Sendable {
    let handler: @Sendable () -> Void
    init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }
}

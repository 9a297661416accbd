#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CRawFXEmbed
import RawFX
import RawFXSDK

// rawfx_hooks.h: the RawFXSDK hooks behind one opaque `rawfx_hook`. Nothing is re-implemented
// here: each C call checks its arguments, wraps the SDK's plain-data objects in the RawFXSDK
// protocols (reused objects, so the frame and audio calls allocate nothing) and forwards.

/// What a `rawfx_hook *` points at: the hook.
final class HookHandle {
    enum Hook {
        case preProcessor(PreProcessorHook)
        case speaker(VirtualSpeakerHook)
        case videoSource(VideoSourceAdapter)
        case mic(VirtualMicAdapter)
        case receiveVideo(ReceiveVideoHook)
        case productionStudio(ProductionStudioAdapter)
        case shareSource(ShareSourceAdapter)
    }
    let hook: Hook
    init(_ hook: Hook) { self.hook = hook }

    var kind: Int32 {
        switch hook {
        case .preProcessor: return Int32(RAWFX_HOOK_PREPROCESSOR)
        case .speaker: return Int32(RAWFX_HOOK_VIRTUAL_SPEAKER)
        case .videoSource: return Int32(RAWFX_HOOK_VIDEO_SOURCE)
        case .mic: return Int32(RAWFX_HOOK_VIRTUAL_MIC)
        case .receiveVideo: return Int32(RAWFX_HOOK_RECEIVE_VIDEO)
        case .productionStudio: return Int32(RAWFX_HOOK_PRODUCTION_STUDIO)
        case .shareSource: return Int32(RAWFX_HOOK_SHARE_SOURCE)
        }
    }

    /// Run-time control is the hooks' own `RunTimeControl`: one path for every kind with one
    /// chain (production studio has two: rawfx_production_studio_set_*).
    var control: (any RunTimeControl)? {
        switch hook {
        case .preProcessor(let h): return h
        case .speaker(let h): return h
        case .videoSource(let h): return h
        case .mic(let h): return h
        case .receiveVideo(let h): return h
        case .shareSource(let h): return h
        case .productionStudio: return nil
        }
    }

    /// The figures as rawfx_hook_metrics_json writes them.
    var metricsJSON: String {
        switch hook {
        case .preProcessor(let h): return hookMetricsJSON(h.metrics)
        case .speaker(let h): return hookMetricsJSON(h.metrics)
        case .videoSource(let h): return hookMetricsJSON(h.metrics)
        case .mic(let h): return hookMetricsJSON(h.metrics)
        case .receiveVideo(let h): return hookMetricsJSON(h.metrics)
        case .shareSource(let h): return hookMetricsJSON(h.metrics)
        case .productionStudio(let h):
            return "{\"video\":\(hookMetricsJSON(h.videoMetrics)),\"audio\":\(hookMetricsJSON(h.audioMetrics))}"
        }
    }

    var lifecycle: LifecycleEvents? {
        switch hook {
        case .videoSource(let h): return h.lifecycle
        case .mic(let h): return h.lifecycle
        case .productionStudio(let h): return h.lifecycle
        case .shareSource(let h): return h.lifecycle
        case .preProcessor, .speaker, .receiveVideo: return nil
        }
    }

    func close() {
        switch hook {
        case .preProcessor: break
        case .speaker(let h): h.close()
        case .videoSource(let h): h.close()
        case .mic(let h): h.close()
        case .receiveVideo(let h): h.close()
        case .productionStudio(let h): h.close()
        case .shareSource(let h): h.close()
        }
    }
}

func hookHandle(_ pointer: OpaquePointer?) -> HookHandle? { pointer.map { object($0, as: HookHandle.self) } }

/// The handle of the expected kind, or the failure naming what was passed.
func hook(_ pointer: OpaquePointer?, _ kind: Int32, _ function: String) -> Result<HookHandle, RawFXCallError> {
    guard let handle = hookHandle(pointer) else { return .failure(RawFXCallError(invalid(function, "hook is NULL"))) }
    guard handle.kind == kind else {
        return .failure(RawFXCallError(invalid(function, "hook is of kind \(handle.kind); expected kind \(kind) (see RAWFX_HOOK_*)")))
    }
    return .success(handle)
}

/// The shared start of every create call: the out pointer, the registry and the chain text.
func createArguments(_ function: String, _ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                             _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Result<(PluginRegistry, String), RawFXCallError> {
    guard let out else { return .failure(RawFXCallError(invalid(function, "hook is NULL; expected the address of a rawfx_hook *"))) }
    out.pointee = nil
    guard let registry = registry(registryPointer) else { return .failure(RawFXCallError(invalid(function, "registry is NULL"))) }
    guard let text = string(text) else { return .failure(RawFXCallError(invalid(function, "chain_text is NULL; expected a chain (\"\" copies)"))) }
    return .success((registry.registry, text))
}

/// `createArguments` and the processing mode of a video hook's options (sources, received video).
func createArguments(_ function: String, _ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                     _ options: UnsafePointer<rawfx_hook_options>?,
                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Result<(PluginRegistry, String, ProcessingMode), RawFXCallError> {
    createArguments(function, registryPointer, text, out).flatMap { registry, chain in
        processingMode(options, video: true, function).map { (registry, chain, $0.0) }
    }
}

func processingMode(_ options: UnsafePointer<rawfx_hook_options>?, video: Bool, _ function: String) -> Result<(ProcessingMode, Bool), RawFXCallError> {
    guard let options else { return .success((.sync, false)) }
    // `async_workers` came after 1.0: a caller's struct that ends before it is read without it.
    let workersOffset = MemoryLayout<rawfx_hook_options>.offset(of: \rawfx_hook_options.async_workers)!
    let size = options.pointee.struct_size
    if let failure = checkSize(size, of: "rawfx_hook_options", expected: workersOffset,
                               largest: MemoryLayout<rawfx_hook_options>.size, function) {
        return .failure(RawFXCallError(failure))
    }
    var o = rawfx_hook_options()
    withUnsafeMutableBytes(of: &o) { $0.copyMemory(from: UnsafeRawBufferPointer(start: options, count: min(Int(size), $0.count))) }
    guard o.async != 0 else { return .success((.sync, false)) }
    let capacity = o.async_capacity == 0
        ? (video ? ProcessingMode.asyncVideoDefault : ProcessingMode.asyncAudioDefault).capacity : Int(o.async_capacity)
    return .success((.async(capacity: capacity, workers: Int(o.async_workers)), o.retain_in_async != 0))
}

/// Runs a create body that may throw a chain error, storing the handle.
func create(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ body: () throws(ChainError) -> HookHandle.Hook) -> rawfx_result {
    do {
        out!.pointee = handle(HookHandle(try body()))
        return rawfxOK
    } catch {
        return fail(error)
    }
}

// MARK: - Every hook

@_cdecl("rawfx_hook_destroy")
public func rawfxHookDestroy(_ pointer: OpaquePointer?) {
    guard let pointer else { return }
    object(pointer, as: HookHandle.self).close()
    release(pointer, as: HookHandle.self)
}

@_cdecl("rawfx_hook_kind")
public func rawfxHookKind(_ pointer: OpaquePointer?) -> Int32 { hookHandle(pointer)?.kind ?? 0 }

/// A hook's `RunTimeControl` as the C API's parameter control.
struct HookControl: ParameterControl {
    let control: any RunTimeControl
    func setParameter(_ address: String, _ value: String) throws(ChainError) { try control.setParameter(address, value) }
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try control.setBypass(stage, bypassed) }
}

/// The run-time control of the hook behind a handle, or the failure.
private func control(_ pointer: OpaquePointer?, _ function: String) -> Result<any RunTimeControl, RawFXCallError> {
    guard let handle = hookHandle(pointer) else { return .failure(RawFXCallError(invalid(function, "hook is NULL"))) }
    guard let control = handle.control else {
        return .failure(RawFXCallError(invalid(function, "production studio has a video and an audio chain: use rawfx_production_studio_set_chain, _set_parameter, _set_bypass")))
    }
    return .success(control)
}

@_cdecl("rawfx_hook_set_chain")
public func rawfxHookSetChain(_ pointer: OpaquePointer?, _ text: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_hook_set_chain"
    guard let text = string(text) else { return invalid(function, "chain_text is NULL") }
    switch control(pointer, function) {
    case .failure(let error): return error.code
    case .success(let control):
        do {
            try control.setChain(text)
            return rawfxOK
        } catch {
            return fail(error)
        }
    }
}

@_cdecl("rawfx_hook_set_parameter")
public func rawfxHookSetParameter(_ pointer: OpaquePointer?, _ address: UnsafePointer<CChar>?,
                                  _ value: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_hook_set_parameter"
    return setParameter(function, control(pointer, function).map { HookControl(control: $0) }, address, value)
}

@_cdecl("rawfx_hook_set_bypass")
public func rawfxHookSetBypass(_ pointer: OpaquePointer?, _ stage: UnsafePointer<CChar>?, _ bypassed: Int32) -> rawfx_result {
    let function = "rawfx_hook_set_bypass"
    return setBypass(function, control(pointer, function).map { HookControl(control: $0) }, stage, bypassed)
}

/// A hook's figures as JSON (see rawfx_hook_metrics_json).
func hookMetricsJSON(_ m: HookMetrics) -> String {
    "{\"hook\":\(metricsJSON(m.hook)),\"refused\":\(m.refused),\"overflows\":\(m.overflows),"
        + "\"send_rejected\":\(m.sendRejected),\"filters\":[" + m.filters.map { metricsJSON($0) }.joined(separator: ",") + "]}"
}

@_cdecl("rawfx_hook_metrics_json")
public func rawfxHookMetricsJSON(_ pointer: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                 _ length: UnsafeMutablePointer<Int>?) -> rawfx_result {
    let function = "rawfx_hook_metrics_json"
    guard let handle = hookHandle(pointer) else { return invalid(function, "hook is NULL") }
    return writeString(handle.metricsJSON, buffer, capacity: capacity, length: length, function)
}

/// The app's C callback and its context, handed to the hooks' @Sendable handlers and the log
/// thread. Unchecked: the callback's thread rules are the C caller's (the headers state them).
struct CCallback<F>: @unchecked Sendable {
    let function: F
    let userData: UnsafeMutableRawPointer?
}

extension rawfx_video_capability {
    init(_ c: VideoSourceCapability) {
        self.init(width: UInt32(clamping: c.width), height: UInt32(clamping: c.height), frame: UInt32(clamping: c.frame),
                  data_mode: c.dataMode.rawValue)
    }
}

private func cEvent(_ event: LifecycleEvent) -> (Int, VideoSourceCapability?) {
    switch event {
    case .videoSourceInitialized(let c, _): return (RAWFX_EVENT_VIDEO_SOURCE_INITIALIZED, c)
    case .videoSourceCapabilityChanged(let c, _): return (RAWFX_EVENT_VIDEO_SOURCE_CAPABILITY_CHANGED, c)
    case .videoSourceStarted: return (RAWFX_EVENT_VIDEO_SOURCE_STARTED, nil)
    case .videoSourceStopped: return (RAWFX_EVENT_VIDEO_SOURCE_STOPPED, nil)
    case .videoSourceUninitialized: return (RAWFX_EVENT_VIDEO_SOURCE_UNINITIALIZED, nil)
    case .micInitialized: return (RAWFX_EVENT_MIC_INITIALIZED, nil)
    case .micStarted: return (RAWFX_EVENT_MIC_STARTED, nil)
    case .micStopped: return (RAWFX_EVENT_MIC_STOPPED, nil)
    case .micUninitialized: return (RAWFX_EVENT_MIC_UNINITIALIZED, nil)
    case .productionStudioModeResult(let success): return (success ? RAWFX_EVENT_PS_MODE_ACCEPTED : RAWFX_EVENT_PS_MODE_REFUSED, nil)
    case .productionStudioStarted: return (RAWFX_EVENT_PS_STARTED, nil)
    case .productionStudioStopped: return (RAWFX_EVENT_PS_STOPPED, nil)
    case .shareStarted: return (RAWFX_EVENT_SHARE_STARTED, nil)
    case .shareStopped: return (RAWFX_EVENT_SHARE_STOPPED, nil)
    }
}

@_cdecl("rawfx_hook_set_lifecycle_callback")
public func rawfxHookSetLifecycleCallback(_ pointer: OpaquePointer?, _ callback: rawfx_lifecycle_callback?,
                                          _ user: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_hook_set_lifecycle_callback"
    guard let handle = hookHandle(pointer) else { return invalid(function, "hook is NULL") }
    guard let lifecycle = handle.lifecycle else {
        return invalid(function, "hook is of kind \(handle.kind); only a video source, a share source, a virtual mic or production studio has lifecycle events")
    }
    guard let callback else {
        lifecycle.setHandler(nil)
        return rawfxOK
    }
    let target = CCallback(function: callback, userData: user)
    lifecycle.setHandler { event in
        let (kind, capability) = cEvent(event)
        event.description.withCString { text in
            var c = rawfx_lifecycle_event()
            c.struct_size = UInt32(MemoryLayout<rawfx_lifecycle_event>.size)
            c.kind = Int32(kind)
            if let capability { c.capability = rawfx_video_capability(capability) }
            c.description = text
            withUnsafePointer(to: c) { target.function(target.userData, $0) }
        }
    }
    return rawfxOK
}

// MARK: - Pre-processor

@_cdecl("rawfx_preprocessor_create")
public func rawfxPreprocessorCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                    _ format: UnsafePointer<rawfx_video_format>?,
                                    _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_preprocessor_create"
    let (registry, chain): (PluginRegistry, String)
    switch createArguments(function, registryPointer, text, out) {
    case .success(let a): (registry, chain) = a
    case .failure(let error): return error.code
    }
    var frameFormat: VideoFormat?
    if format != nil {
        switch videoFormat(format, "frame_format", function) {
        case .success(let f): frameFormat = f
        case .failure(let error): return error.code
        }
    }
    return create(out) { () throws(ChainError) in
        .preProcessor(try PreProcessorHook(chain: chain, registry: registry, frameFormat: frameFormat))
    }
}

@_cdecl("rawfx_preprocessor_process")
public func rawfxPreprocessorProcess(_ pointer: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_preprocessor_process"
    let handle: HookHandle
    switch hook(pointer, Int32(RAWFX_HOOK_PREPROCESSOR), function) {
    case .success(let h): handle = h
    case .failure(let error): return error.code
    }
    if let failure = checkFrame(frame, "frame", function) { return failure }
    guard case .preProcessor(let preProcessor) = handle.hook else { return invalid(function, "hook") }
    do {
        try preProcessor.process(VideoFrame(frame!.pointee))
        return rawfxOK
    } catch {
        return fail(RAWFX_E_PROCESS, "\(function): the frame was left as captured: \(error)")
    }
}

// MARK: - Virtual speaker

private func streamID(_ stream: Int32, _ user: UInt64, _ function: String) -> Result<AudioStreamID, RawFXCallError> {
    switch Int(stream) {
    case RAWFX_STREAM_MIXED: return .success(.mixed)
    case RAWFX_STREAM_ONE_WAY: return .success(.oneWay(SDKUser(user)))
    case RAWFX_STREAM_SHARED: return .success(.shared)
    default: return .failure(RawFXCallError(invalid(function, "stream is \(stream); expected RAWFX_STREAM_MIXED, _ONE_WAY or _SHARED")))
    }
}

private func cStream(_ id: AudioStreamID) -> Int32 {
    switch id {
    case .mixed: return Int32(RAWFX_STREAM_MIXED)
    case .oneWay: return Int32(RAWFX_STREAM_ONE_WAY)
    case .shared: return Int32(RAWFX_STREAM_SHARED)
    }
}

@_cdecl("rawfx_user_key")
public func rawfxUserKey(_ id: UnsafePointer<CChar>?) -> UInt64 {
    string(id).map { SDKUser(userIDString: $0).userID } ?? 0
}

@_cdecl("rawfx_speaker_create")
public func rawfxSpeakerCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                               _ options: UnsafePointer<rawfx_hook_options>?, _ sink: rawfx_speaker_sink?,
                               _ user: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_speaker_create"
    let (registry, chain): (PluginRegistry, String)
    switch createArguments(function, registryPointer, text, out) {
    case .success(let a): (registry, chain) = a
    case .failure(let error): return error.code
    }
    guard let sink else { return invalid(function, "sink is NULL; expected a rawfx_speaker_sink") }
    let mode: ProcessingMode, retain: Bool
    switch processingMode(options, video: false, function) {
    case .success(let m): (mode, retain) = m
    case .failure(let error): return error.code
    }
    let target = CCallback(function: sink, userData: user)
    return create(out) { () throws(ChainError) in
        .speaker(try VirtualSpeakerHook(chain: chain, registry: registry, mode: mode, retainInAsync: retain) { id, block in
            withUnsafePointer(to: block.raw) { target.function(target.userData, cStream(id), id.userID, $0) }
        })
    }
}

private func speaker(_ pointer: OpaquePointer?, _ function: String) -> Result<VirtualSpeakerHook, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_VIRTUAL_SPEAKER), function).flatMap { handle in
        guard case .speaker(let s) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(s)
    }
}

@_cdecl("rawfx_speaker_receive")
public func rawfxSpeakerReceive(_ pointer: OpaquePointer?, _ stream: Int32, _ user: UInt64,
                                _ data: UnsafePointer<rawfx_audio_raw_data>?) -> rawfx_result {
    let function = "rawfx_speaker_receive"
    let hook: VirtualSpeakerHook, id: AudioStreamID
    switch speaker(pointer, function) {
    case .success(let s): hook = s
    case .failure(let error): return error.code
    }
    switch streamID(stream, user, function) {
    case .success(let s): id = s
    case .failure(let error): return error.code
    }
    guard let raw = data?.pointee else { return invalid(function, "data is NULL; expected a rawfx_audio_raw_data") }
    if let failure = checkSize(raw.struct_size, of: "rawfx_audio_raw_data", expected: MemoryLayout<rawfx_audio_raw_data>.size, function) {
        return failure
    }
    if let failure = checkAudioFormat(sampleRate: raw.sample_rate, channels: raw.channel_num, "data", function) { return failure }
    guard raw.buffer != nil, raw.buffer_len > 0, raw.buffer_len % (2 * raw.channel_num) == 0 else {
        return invalid(function, "data.buffer_len is \(raw.buffer_len) with buffer \(raw.buffer == nil ? "NULL" : "set"); expected whole frames of \(raw.channel_num) s16 samples")
    }
    hook.receive(LentAudioBlock(bytes: UnsafeRawPointer(raw.buffer!), byteCount: Int(raw.buffer_len),
                                format: AudioFormat(sampleRate: Int(raw.sample_rate), channels: Int(raw.channel_num)),
                                timestampMilliseconds: raw.timestamp_ms,
                                reference: SDKObjectReference(object: raw.sdk_object, canAddRef: raw.can_add_ref,
                                                              addRef: raw.add_ref, release: raw.release)),
                 from: id)
    return rawfxOK
}

@_cdecl("rawfx_speaker_remove_stream")
public func rawfxSpeakerRemoveStream(_ pointer: OpaquePointer?, _ stream: Int32, _ user: UInt64) -> rawfx_result {
    let function = "rawfx_speaker_remove_stream"
    switch (speaker(pointer, function), streamID(stream, user, function)) {
    case (.success(let hook), .success(let id)):
        hook.removeStream(id)
        return rawfxOK
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

@_cdecl("rawfx_speaker_drain")
public func rawfxSpeakerDrain(_ pointer: OpaquePointer?) -> rawfx_result {
    switch speaker(pointer, "rawfx_speaker_drain") {
    case .success(let hook):
        hook.drain()
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_speaker_latency")
public func rawfxSpeakerLatency(_ pointer: OpaquePointer?, _ stream: Int32, _ user: UInt64,
                                _ frames: UnsafeMutablePointer<UInt32>?) -> rawfx_result {
    let function = "rawfx_speaker_latency"
    guard let frames else { return invalid(function, "frames is NULL") }
    switch (speaker(pointer, function), streamID(stream, user, function)) {
    case (.success(let hook), .success(let id)):
        guard let latency = hook.latency(for: id) else {
            return fail(RAWFX_E_STATE, "\(function): stream \(id) has no chain yet (it is made on the stream's first block)")
        }
        frames.pointee = UInt32(clamping: latency)
        return rawfxOK
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

// MARK: - Video source

/// The SDK's video sender as a C function and its object.
final class CVideoSender: SDKVideoSender {
    let send: rawfx_video_send
    let sender: UnsafeMutableRawPointer?
    init(_ send: rawfx_video_send, _ sender: UnsafeMutableRawPointer?) {
        self.send = send
        self.sender = sender
    }
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                        rotation: Int, format: FrameDataFormat) -> VideoSDKError {
        let code = send(sender, frameBuffer, Int32(width), Int32(height), Int32(dataLength), Int32(rotation), format.rawValue)
        return VideoSDKError(rawValue: code) ?? .unknown
    }
}

private func videoSource(_ pointer: OpaquePointer?, _ function: String) -> Result<VideoSourceAdapter, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_VIDEO_SOURCE), function).flatMap { handle in
        guard case .videoSource(let s) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(s)
    }
}

@_cdecl("rawfx_video_source_create")
public func rawfxVideoSourceCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                   _ options: UnsafePointer<rawfx_hook_options>?,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_video_source_create"
    let (registry, chain, mode): (PluginRegistry, String, ProcessingMode)
    switch createArguments(function, registryPointer, text, options, out) {
    case .success(let a): (registry, chain, mode) = a
    case .failure(let error): return error.code
    }
    return create(out) { () throws(ChainError) in
        .videoSource(try VideoSourceAdapter(chain: chain, registry: registry, mode: mode))
    }
}

/// The capabilities the SDK offers, checked.
private func capabilities(_ supported: UnsafePointer<rawfx_video_capability>?, _ count: Int,
                          _ suggested: UnsafePointer<rawfx_video_capability>?,
                          _ function: String) -> Result<([VideoSourceCapability], VideoSourceCapability), RawFXCallError> {
    func capability(_ c: rawfx_video_capability, _ what: String) -> Result<VideoSourceCapability, RawFXCallError> {
        guard c.width >= 2, c.height >= 2, c.width <= maxSide, c.height <= maxSide else {
            return .failure(RawFXCallError(invalid(function, "\(what) is \(c.width)x\(c.height); expected 2 to \(maxSide) on each side")))
        }
        guard let mode = VideoSourceDataMode(rawValue: c.data_mode) else {
            return .failure(RawFXCallError(invalid(function, "\(what).data_mode is \(c.data_mode); expected 0, 1 or 2")))
        }
        return .success(VideoSourceCapability(width: Int(c.width), height: Int(c.height), frame: Int(c.frame), dataMode: mode))
    }
    guard let suggested else { return .failure(RawFXCallError(invalid(function, "suggested is NULL"))) }
    guard supported != nil || count == 0 else { return .failure(RawFXCallError(invalid(function, "supported is NULL with count \(count)"))) }
    var list: [VideoSourceCapability] = []
    for index in 0..<count {
        switch capability(supported![index], "supported[\(index)]") {
        case .success(let c): list.append(c)
        case .failure(let error): return .failure(error)
        }
    }
    return capability(suggested.pointee, "suggested").map { (list, $0) }
}

@_cdecl("rawfx_video_source_on_initialize")
public func rawfxVideoSourceOnInitialize(_ pointer: OpaquePointer?, _ send: rawfx_video_send?, _ sender: UnsafeMutableRawPointer?,
                                         _ supported: UnsafePointer<rawfx_video_capability>?, _ count: Int,
                                         _ suggested: UnsafePointer<rawfx_video_capability>?) -> rawfx_result {
    let function = "rawfx_video_source_on_initialize"
    guard let send else { return invalid(function, "send is NULL; expected the SDK sender's function") }
    switch (videoSource(pointer, function), capabilities(supported, count, suggested, function)) {
    case (.success(let source), .success(let (list, suggestion))):
        source.onInitialize(CVideoSender(send, sender), supportCapabilityArray: list, suggestCapability: suggestion)
        return rawfxOK
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

@_cdecl("rawfx_video_source_on_property_change")
public func rawfxVideoSourceOnPropertyChange(_ pointer: OpaquePointer?, _ supported: UnsafePointer<rawfx_video_capability>?,
                                             _ count: Int, _ suggested: UnsafePointer<rawfx_video_capability>?) -> rawfx_result {
    let function = "rawfx_video_source_on_property_change"
    switch (videoSource(pointer, function), capabilities(supported, count, suggested, function)) {
    case (.success(let source), .success(let (list, suggestion))):
        source.onPropertyChange(list, suggestCapability: suggestion)
        return rawfxOK
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

private func sourceEvent(_ pointer: OpaquePointer?, _ function: String, _ body: (VideoSourceAdapter) -> Void) -> rawfx_result {
    switch videoSource(pointer, function) {
    case .success(let source):
        body(source)
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_video_source_on_start_send")
public func rawfxVideoSourceOnStartSend(_ pointer: OpaquePointer?) -> rawfx_result {
    sourceEvent(pointer, "rawfx_video_source_on_start_send") { $0.onStartSend() }
}

@_cdecl("rawfx_video_source_on_stop_send")
public func rawfxVideoSourceOnStopSend(_ pointer: OpaquePointer?) -> rawfx_result {
    sourceEvent(pointer, "rawfx_video_source_on_stop_send") { $0.onStopSend() }
}

@_cdecl("rawfx_video_source_on_uninitialized")
public func rawfxVideoSourceOnUninitialized(_ pointer: OpaquePointer?) -> rawfx_result {
    sourceEvent(pointer, "rawfx_video_source_on_uninitialized") { $0.onUninitialized() }
}

@_cdecl("rawfx_video_source_push_frame")
public func rawfxVideoSourcePushFrame(_ pointer: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_video_source_push_frame"
    return push(videoSource(pointer, function), frame, function)
}

/// The app's push into the video or the share source.
func push<Source: VideoPublishing>(_ source: Result<Source, RawFXCallError>,
                  _ frame: UnsafePointer<rawfx_video_frame>?, _ function: String) -> rawfx_result {
    switch source {
    case .failure(let error): return error.code
    case .success(let source):
        if let failure = checkFrame(frame, "frame", function) { return failure }
        return result(of: source.pushFrame(VideoFrame(frame!.pointee)), function)
    }
}

/// A push's outcome as a result: refused (outside start/stop) is RAWFX_E_STATE.
func result(of status: PublishStatus, _ function: String) -> rawfx_result {
    switch status {
    case .sent, .queued, .queuedDroppingOldest: return rawfxOK
    case .refused: return fail(RAWFX_E_STATE, "\(function): \(status)")
    case .failed, .invalid, .rejectedBySender, .superseded: return fail(RAWFX_E_PROCESS, "\(function): \(status)")
    }
}

func result(of status: AudioPushStatus, _ function: String) -> rawfx_result {
    switch status {
    case .accepted: return rawfxOK
    case .refused: return fail(RAWFX_E_STATE, "\(function): \(status)")
    case .failed, .invalid: return fail(RAWFX_E_PROCESS, "\(function): \(status)")
    }
}

@_cdecl("rawfx_video_source_capability")
public func rawfxVideoSourceCapability(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<rawfx_video_capability>?) -> rawfx_result {
    let function = "rawfx_video_source_capability"
    guard let out else { return invalid(function, "capability is NULL") }
    switch videoSource(pointer, function) {
    case .success(let source):
        guard let capability = source.capability else { return fail(RAWFX_E_STATE, "\(function): the SDK has not called onInitialize yet") }
        out.pointee = rawfx_video_capability(capability)
        return rawfxOK
    case .failure(let error): return error.code
    }
}

// MARK: - Virtual mic

/// The SDK's audio sender as a C function and its object.
final class CAudioSender: SDKAudioSender {
    let send: rawfx_audio_send
    let sender: UnsafeMutableRawPointer?
    init(_ send: rawfx_audio_send, _ sender: UnsafeMutableRawPointer?) {
        self.send = send
        self.sender = sender
    }
    func send(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> VideoSDKError {
        VideoSDKError(rawValue: send(sender, data, UInt32(dataLength), Int32(sampleRate), channel.rawValue)) ?? .unknown
    }
}

private func mic(_ pointer: OpaquePointer?, _ function: String) -> Result<VirtualMicAdapter, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_VIRTUAL_MIC), function).flatMap { handle in
        guard case .mic(let m) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(m)
    }
}

@_cdecl("rawfx_virtual_mic_create")
public func rawfxVirtualMicCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?, _ targetRate: UInt32,
                                  _ pacing: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_virtual_mic_create"
    let (registry, chain): (PluginRegistry, String)
    switch createArguments(function, registryPointer, text, out) {
    case .success(let a): (registry, chain) = a
    case .failure(let error): return error.code
    }
    let paced: AudioPacing
    switch audioPacing(pacing, function) {
    case .success(let p): paced = p
    case .failure(let error): return error.code
    }
    let rate = targetRate == 0 ? 48000 : Int(targetRate)
    return create(out) { () throws(ChainError) in
        .mic(try VirtualMicAdapter(chain: chain, registry: registry, targetRate: rate, pacing: paced))
    }
}

func audioPacing(_ pacing: Int32, _ function: String) -> Result<AudioPacing, RawFXCallError> {
    switch Int(pacing) {
    case RAWFX_PACING_WORKER: return .success(.worker)
    case RAWFX_PACING_CALLER: return .success(.caller)
    case RAWFX_PACING_IMMEDIATE: return .success(.immediate)
    default: return .failure(RawFXCallError(invalid(function, "pacing is \(pacing); expected RAWFX_PACING_WORKER, _CALLER or _IMMEDIATE")))
    }
}

@_cdecl("rawfx_virtual_mic_on_initialize")
public func rawfxVirtualMicOnInitialize(_ pointer: OpaquePointer?, _ send: rawfx_audio_send?, _ sender: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_virtual_mic_on_initialize"
    guard let send else { return invalid(function, "send is NULL; expected the SDK sender's function") }
    return micEvent(pointer, function) { $0.onMicInitialize(CAudioSender(send, sender)) }
}

private func micEvent(_ pointer: OpaquePointer?, _ function: String, _ body: (VirtualMicAdapter) -> Void) -> rawfx_result {
    switch mic(pointer, function) {
    case .success(let m):
        body(m)
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_virtual_mic_on_start_send")
public func rawfxVirtualMicOnStartSend(_ pointer: OpaquePointer?) -> rawfx_result {
    micEvent(pointer, "rawfx_virtual_mic_on_start_send") { $0.onMicStartSend() }
}

@_cdecl("rawfx_virtual_mic_on_stop_send")
public func rawfxVirtualMicOnStopSend(_ pointer: OpaquePointer?) -> rawfx_result {
    micEvent(pointer, "rawfx_virtual_mic_on_stop_send") { $0.onMicStopSend() }
}

@_cdecl("rawfx_virtual_mic_on_uninitialized")
public func rawfxVirtualMicOnUninitialized(_ pointer: OpaquePointer?) -> rawfx_result {
    micEvent(pointer, "rawfx_virtual_mic_on_uninitialized") { $0.onMicUninitialized() }
}

@_cdecl("rawfx_virtual_mic_push_audio")
public func rawfxVirtualMicPushAudio(_ pointer: OpaquePointer?, _ block: UnsafePointer<rawfx_audio_frame>?,
                                     _ timestamp: Int64) -> rawfx_result {
    let function = "rawfx_virtual_mic_push_audio"
    let adapter: VirtualMicAdapter
    switch mic(pointer, function) {
    case .success(let m): adapter = m
    case .failure(let error): return error.code
    }
    if let failure = checkAudio(block, function) { return failure }
    let b = block!.pointee
    guard b.frame_count > 0 else { return rawfxOK }
    let status = adapter.pushAudio(b.samples!, frameCount: Int(b.frame_count),
                                   format: AudioFormat(sampleRate: Int(b.sample_rate), channels: Int(b.channels)),
                                   timestampMicroseconds: timestamp == Int64.min ? nil : timestamp)
    return result(of: status, function)
}

@_cdecl("rawfx_virtual_mic_pump")
public func rawfxVirtualMicPump(_ pointer: OpaquePointer?, _ now: Int64, _ next: UnsafeMutablePointer<Int64>?) -> rawfx_result {
    let function = "rawfx_virtual_mic_pump"
    switch mic(pointer, function) {
    case .success(let adapter):
        guard adapter.pacing == .caller else {
            return fail(RAWFX_E_STATE, "\(function): the mic was created with another pacing than RAWFX_PACING_CALLER")
        }
        let due = adapter.pump(nowMicroseconds: now)
        next?.pointee = due ?? -1
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_virtual_mic_chunks_sent")
public func rawfxVirtualMicChunksSent(_ pointer: OpaquePointer?) -> UInt64 {
    guard let handle = hookHandle(pointer), case .mic(let m) = handle.hook else { return 0 }
    return m.chunksSent
}

// MARK: - Share source

/// The SDK's share sender as a C function and its object.
final class CShareSender: SDKShareSender {
    let send: rawfx_share_send
    let sender: UnsafeMutableRawPointer?
    init(_ send: rawfx_share_send, _ sender: UnsafeMutableRawPointer?) {
        self.send = send
        self.sender = sender
    }
    func sendShareFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> VideoSDKError {
        let code = send(sender, frameBuffer, Int32(width), Int32(height), Int32(frameLength), format.rawValue)
        return VideoSDKError(rawValue: code) ?? .unknown
    }
}

private func shareSource(_ pointer: OpaquePointer?, _ function: String) -> Result<ShareSourceAdapter, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_SHARE_SOURCE), function).flatMap { handle in
        guard case .shareSource(let s) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(s)
    }
}

@_cdecl("rawfx_share_source_create")
public func rawfxShareSourceCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                   _ options: UnsafePointer<rawfx_hook_options>?, _ outputWidth: UInt32, _ outputHeight: UInt32,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_share_source_create"
    let (registry, chain, mode): (PluginRegistry, String, ProcessingMode)
    switch createArguments(function, registryPointer, text, options, out) {
    case .success(let a): (registry, chain, mode) = a
    case .failure(let error): return error.code
    }
    var outputSize: (width: Int, height: Int)?
    if outputWidth != 0 || outputHeight != 0 {
        // The SDK takes packed I420: even sides, as the capability checks of the video source.
        guard outputWidth >= 2, outputHeight >= 2, Int(outputWidth) <= maxSide, Int(outputHeight) <= maxSide,
              outputWidth % 2 == 0, outputHeight % 2 == 0 else {
            return invalid(function, "output size is \(outputWidth)x\(outputHeight); expected 0x0 (the chain's output size) "
                           + "or even sides from 2 to \(maxSide)")
        }
        outputSize = (Int(outputWidth), Int(outputHeight))
    }
    return create(out) { () throws(ChainError) in
        .shareSource(try ShareSourceAdapter(chain: chain, registry: registry, mode: mode, outputSize: outputSize))
    }
}

@_cdecl("rawfx_share_source_on_share_send_started")
public func rawfxShareSourceOnShareSendStarted(_ pointer: OpaquePointer?, _ send: rawfx_share_send?,
                                               _ sender: UnsafeMutableRawPointer?) -> rawfx_result {
    switch shareSource(pointer, "rawfx_share_source_on_share_send_started") {
    case .success(let source):
        source.onShareSendStarted(send.map { CShareSender($0, sender) })
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_share_source_on_share_send_stopped")
public func rawfxShareSourceOnShareSendStopped(_ pointer: OpaquePointer?) -> rawfx_result {
    switch shareSource(pointer, "rawfx_share_source_on_share_send_stopped") {
    case .success(let source):
        source.onShareSendStopped()
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_share_source_push_frame")
public func rawfxShareSourcePushFrame(_ pointer: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_share_source_push_frame"
    return push(shareSource(pointer, function), frame, function)
}

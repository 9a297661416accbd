import CRawFXEmbed
import RawFX
import RawFXSDK

// rawfx_receive_video_* and rawfx_pipe_*: ReceiveVideoHook with the SDK's pipe as C function
// pointers. The hook subscribes a stream through `CPipe`, which hands the C side a token (a
// retained `PipeDelegateToken`) that comes back with every frame.

/// What `rawfx_pipe_delegate *` points at: the stream's delegate in ReceiveVideoHook, and its
/// frame-shaped core, which frames go to straight.
final class PipeDelegateToken {
    let delegate: any SDKRawDataPipeDelegate
    let input: any ReceivedFrameInput
    init(_ delegate: any SDKRawDataPipeDelegate, _ input: any ReceivedFrameInput) { (self.delegate, self.input) = (delegate, input) }
}

/// The SDK's pipe as C functions. The token lives from subscribe until unSubscribe returns
/// (after which the SDK calls the delegate no more), or is dropped at once when the pipe refuses.
final class CPipe: SDKRawDataPipe {
    let pipe: UnsafeMutableRawPointer?
    let subscribeFunction: rawfx_pipe_subscribe
    let unsubscribeFunction: rawfx_pipe_unsubscribe
    private var token: UnsafeMutableRawPointer?

    init(_ pipe: UnsafeMutableRawPointer?, _ subscribe: rawfx_pipe_subscribe, _ unsubscribe: rawfx_pipe_unsubscribe) {
        self.pipe = pipe
        subscribeFunction = subscribe
        unsubscribeFunction = unsubscribe
    }

    func subscribe(with delegate: any SDKRawDataPipeDelegate, resolution: SDKVideoResolution) -> VideoSDKError {
        // ReceiveVideoHook subscribes its streams, each a `ReceivedFrameInput`; nothing else uses this pipe.
        guard let input = delegate as? any ReceivedFrameInput else { return .wrongUsage }
        let made = Unmanaged.passRetained(PipeDelegateToken(delegate, input)).toOpaque()
        let code = subscribeFunction(pipe, OpaquePointer(made), resolution.rawValue)
        if code == 0 {
            token = made
        } else {
            Unmanaged<PipeDelegateToken>.fromOpaque(made).release()
        }
        return VideoSDKError(rawValue: code) ?? .unknown
    }

    func unSubscribe(with delegate: any SDKRawDataPipeDelegate) -> VideoSDKError {
        guard let token else { return .wrongUsage }
        let code = unsubscribeFunction(pipe, OpaquePointer(token))
        Unmanaged<PipeDelegateToken>.fromOpaque(token).release()
        self.token = nil
        return VideoSDKError(rawValue: code) ?? .unknown
    }
}

private func receiveHook(_ pointer: OpaquePointer?, _ function: String) -> Result<ReceiveVideoHook, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_RECEIVE_VIDEO), function).flatMap { handle in
        guard case .receiveVideo(let h) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(h)
    }
}

private func pipeKind(_ kind: Int32, _ function: String) -> Result<SDKRawDataPipeKind, RawFXCallError> {
    switch Int(kind) {
    case RAWFX_PIPE_VIDEO: return .success(.video)
    case RAWFX_PIPE_SHARE: return .success(.share)
    default: return .failure(RawFXCallError(invalid(function, "pipe_kind is \(kind); expected RAWFX_PIPE_VIDEO or RAWFX_PIPE_SHARE")))
    }
}

@_cdecl("rawfx_receive_video_create")
public func rawfxReceiveVideoCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                    _ options: UnsafePointer<rawfx_hook_options>?, _ sink: rawfx_receive_sink?,
                                    _ user: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_receive_video_create"
    let (registry, chain): (PluginRegistry, String)
    switch createArguments(function, registryPointer, text, out) {
    case .success(let a): (registry, chain) = a
    case .failure(let error): return error.code
    }
    guard let sink else { return invalid(function, "sink is NULL; expected a rawfx_receive_sink") }
    let mode: ProcessingMode
    switch processingMode(options, video: true, function) {
    case .success(let m): mode = m.0
    case .failure(let error): return error.code
    }
    let target = CCallback(function: sink, userData: user)
    return create(out) { () throws(ChainError) in
        .receiveVideo(try ReceiveVideoHook(chain: chain, registry: registry, mode: mode) { id, frame in
            withUnsafePointer(to: frame.raw) {
                target.function(target.userData, id.user.userID, Int32(id.pipe == .video ? RAWFX_PIPE_VIDEO : RAWFX_PIPE_SHARE), $0)
            }
        })
    }
}

@_cdecl("rawfx_receive_video_subscribe")
public func rawfxReceiveVideoSubscribe(_ pointer: OpaquePointer?, _ pipe: UnsafeMutableRawPointer?,
                                       _ subscribe: rawfx_pipe_subscribe?, _ unsubscribe: rawfx_pipe_unsubscribe?,
                                       _ user: UInt64, _ kind: Int32, _ resolution: Int32,
                                       _ format: UnsafePointer<rawfx_video_format>?) -> rawfx_result {
    let function = "rawfx_receive_video_subscribe"
    guard let subscribe, let unsubscribe else { return invalid(function, "subscribe or unsubscribe is NULL; expected the pipe's functions") }
    guard let chosen = SDKVideoResolution(rawValue: resolution) else {
        return invalid(function, "resolution is \(resolution); expected 0 (90p) to 4 (1080p), or 100 (auto)")
    }
    var expected: VideoFormat?
    if format != nil {
        switch videoFormat(format, "format", function) {
        case .success(let f): expected = f
        case .failure(let error): return error.code
        }
    }
    switch (receiveHook(pointer, function), pipeKind(kind, function)) {
    case (.success(let hook), .success(let pipeKind)):
        do throws(ReceiveSubscribeError) {
            try hook.subscribe(CPipe(pipe, subscribe, unsubscribe), user: SDKUser(user), kind: pipeKind,
                               resolution: chosen, format: expected)
            return rawfxOK
        } catch {
            switch error {
            case .refusedByPipe: return fail(RAWFX_E_PROCESS, "\(function): \(error)")
            case .alreadySubscribed, .closed: return fail(RAWFX_E_STATE, "\(function): \(error)")
            case .chain(_, let chainError): return fail(chainError)
            }
        }
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

@_cdecl("rawfx_receive_video_unsubscribe")
public func rawfxReceiveVideoUnsubscribe(_ pointer: OpaquePointer?, _ user: UInt64, _ kind: Int32) -> rawfx_result {
    let function = "rawfx_receive_video_unsubscribe"
    switch (receiveHook(pointer, function), pipeKind(kind, function)) {
    case (.success(let hook), .success(let pipeKind)):
        guard hook.unsubscribe(user: SDKUser(user), kind: pipeKind) else {
            return fail(RAWFX_E_NOT_FOUND, "\(function): user \(user)'s \(pipeKind) pipe is not subscribed")
        }
        return rawfxOK
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

@_cdecl("rawfx_receive_video_wait_idle")
public func rawfxReceiveVideoWaitIdle(_ pointer: OpaquePointer?) -> rawfx_result {
    switch receiveHook(pointer, "rawfx_receive_video_wait_idle") {
    case .success(let hook):
        hook.waitUntilIdle()
        return rawfxOK
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_pipe_frame_received")
public func rawfxPipeFrameReceived(_ delegate: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_raw_data>?) -> rawfx_result {
    let function = "rawfx_pipe_frame_received"
    guard let delegate else { return invalid(function, "delegate is NULL") }
    guard let raw = frame?.pointee else { return invalid(function, "frame is NULL; expected a rawfx_video_raw_data") }
    if let failure = checkSize(raw.struct_size, of: "rawfx_video_raw_data", expected: MemoryLayout<rawfx_video_raw_data>.size, function) {
        return failure
    }
    // The same checks as any frame the API takes: the format, then each plane and stride.
    var view = rawfx_video_frame()
    view.struct_size = UInt32(MemoryLayout<rawfx_video_frame>.size)
    view.width = raw.width
    view.height = raw.height
    view.pixel_format = UInt32(RAWFX_PIXEL_I420)
    view.color_range = UInt32(raw.is_limited != 0 ? RAWFX_RANGE_LIMITED : RAWFX_RANGE_FULL)
    view.rotation = raw.rotation
    view.planes = (UnsafeMutableRawPointer(raw.planes.0)?.assumingMemoryBound(to: UInt8.self),
                   UnsafeMutableRawPointer(raw.planes.1)?.assumingMemoryBound(to: UInt8.self),
                   UnsafeMutableRawPointer(raw.planes.2)?.assumingMemoryBound(to: UInt8.self))
    view.strides = raw.strides
    if let failure = withUnsafePointer(to: view, { checkFrame($0, "frame", function) }) { return failure }
    view.timestamp_us = Int64(bitPattern: raw.timestamp_ms &* 1000)
    let token = Unmanaged<PipeDelegateToken>.fromOpaque(UnsafeRawPointer(delegate)).takeUnretainedValue()
    token.input.receive(VideoFrame(view), reference: SDKObjectReference(object: raw.sdk_object, canAddRef: raw.can_add_ref,
                                                                        addRef: raw.add_ref, release: raw.release))
    return rawfxOK
}

@_cdecl("rawfx_pipe_status_changed")
public func rawfxPipeStatusChanged(_ delegate: OpaquePointer?, _ status: Int32) -> rawfx_result {
    let function = "rawfx_pipe_status_changed"
    guard let delegate else { return invalid(function, "delegate is NULL") }
    guard let value = SDKUserRawdataStatus(rawValue: status) else { return invalid(function, "status is \(status); expected 0 (on) or 1 (off)") }
    Unmanaged<PipeDelegateToken>.fromOpaque(UnsafeRawPointer(delegate)).takeUnretainedValue().delegate.onRawDataStatusChanged(value)
    return rawfxOK
}

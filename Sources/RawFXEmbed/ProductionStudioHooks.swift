import CRawFXEmbed
import RawFX
import RawFXSDK

// rawfx_production_studio_*: ProductionStudioAdapter with the SDK's PS sender as C functions.

/// The SDK's `IZoomSDKPSSender` as C functions and its object.
final class CPSSender: SDKPSSender {
    let sendVideo: rawfx_ps_send_video
    let sendAudio: rawfx_ps_send_audio
    let sender: UnsafeMutableRawPointer?

    init(_ video: rawfx_ps_send_video, _ audio: rawfx_ps_send_audio, _ sender: UnsafeMutableRawPointer?) {
        sendVideo = video
        sendAudio = audio
        self.sender = sender
    }

    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> MeetingSDKError {
        MeetingSDKError(rawValue: sendVideo(sender, frameBuffer, Int32(width), Int32(height), Int32(frameLength), format.rawValue)) ?? .unknown
    }

    func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> MeetingSDKError {
        MeetingSDKError(rawValue: sendAudio(sender, data, UInt32(dataLength), Int32(sampleRate), channel.rawValue)) ?? .unknown
    }
}

private func studio(_ pointer: OpaquePointer?, _ function: String) -> Result<ProductionStudioAdapter, RawFXCallError> {
    hook(pointer, Int32(RAWFX_HOOK_PRODUCTION_STUDIO), function).flatMap { handle in
        guard case .productionStudio(let s) = handle.hook else { return .failure(RawFXCallError(invalid(function, "hook"))) }
        return .success(s)
    }
}

/// Runs `body` on the hook, or returns the failure.
private func withStudio(_ pointer: OpaquePointer?, _ function: String, _ body: (ProductionStudioAdapter) -> rawfx_result) -> rawfx_result {
    switch studio(pointer, function) {
    case .success(let s): return body(s)
    case .failure(let error): return error.code
    }
}

@_cdecl("rawfx_production_studio_create")
public func rawfxProductionStudioCreate(_ registryPointer: OpaquePointer?, _ videoText: UnsafePointer<CChar>?,
                                        _ audioText: UnsafePointer<CChar>?, _ width: UInt32, _ height: UInt32,
                                        _ format: Int32, _ audioRate: UInt32, _ pacing: Int32,
                                        _ options: UnsafePointer<rawfx_hook_options>?,
                                        _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_production_studio_create"
    let (registry, videoChain): (PluginRegistry, String)
    switch createArguments(function, registryPointer, videoText, out) {
    case .success(let a): (registry, videoChain) = a
    case .failure(let error): return error.code
    }
    guard let audioChain = string(audioText) else { return invalid(function, "audio_chain is NULL; expected a chain (\"\" copies)") }
    guard let dataFormat = FrameDataFormat(rawValue: format) else {
        return invalid(function, "format is \(format); expected 0 (I420 limited) or 1 (I420 full)")
    }
    guard width <= maxSide, height <= maxSide else { return invalid(function, "the capability is \(width)x\(height); expected at most \(maxSide) on each side") }
    let paced: AudioPacing, mode: ProcessingMode
    switch (audioPacing(pacing, function), processingMode(options, video: true, function)) {
    case (.success(let p), .success(let m)): (paced, mode) = (p, m.0)
    case (.failure(let error), _), (_, .failure(let error)): return error.code
    }
    let capability = PSVideoSourceCapability(width: Int(width), height: Int(height), format: dataFormat)
    return create(out) { () throws(ChainError) in
        .productionStudio(try ProductionStudioAdapter(capability: capability, videoChain: videoChain, audioChain: audioChain,
                                                      registry: registry, audioRate: audioRate == 0 ? 48000 : Int(audioRate),
                                                      mode: mode, pacing: paced))
    }
}

@_cdecl("rawfx_production_studio_on_start_ps_mode_result")
public func rawfxProductionStudioOnStartPSModeResult(_ pointer: OpaquePointer?, _ success: Int32) -> rawfx_result {
    withStudio(pointer, "rawfx_production_studio_on_start_ps_mode_result") {
        $0.onStartPSModeResult(success != 0)
        return rawfxOK
    }
}

@_cdecl("rawfx_production_studio_on_start_send")
public func rawfxProductionStudioOnStartSend(_ pointer: OpaquePointer?, _ video: rawfx_ps_send_video?, _ audio: rawfx_ps_send_audio?,
                                             _ sender: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_production_studio_on_start_send"
    guard (video == nil) == (audio == nil) else { return invalid(function, "give both sender functions, or neither (no sender)") }
    return withStudio(pointer, function) { studio in
        studio.onStartSend(video.map { CPSSender($0, audio!, sender) })
        return rawfxOK
    }
}

@_cdecl("rawfx_production_studio_on_stop_send")
public func rawfxProductionStudioOnStopSend(_ pointer: OpaquePointer?) -> rawfx_result {
    withStudio(pointer, "rawfx_production_studio_on_stop_send") {
        $0.onStopSend()
        return rawfxOK
    }
}

@_cdecl("rawfx_production_studio_on_ps_user_status_changed")
public func rawfxProductionStudioOnPSUserStatusChanged(_ pointer: OpaquePointer?, _ user: UInt32, _ isStart: Int32) -> rawfx_result {
    withStudio(pointer, "rawfx_production_studio_on_ps_user_status_changed") {
        $0.onPSUserStatusChanged(user, isStart: isStart != 0)
        return rawfxOK
    }
}

@_cdecl("rawfx_production_studio_push_frame")
public func rawfxProductionStudioPushFrame(_ pointer: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_production_studio_push_frame"
    return withStudio(pointer, function) { studio in
        if let failure = checkFrame(frame, "frame", function) { return failure }
        return result(of: studio.pushFrame(VideoFrame(frame!.pointee)), function)
    }
}

@_cdecl("rawfx_production_studio_push_audio")
public func rawfxProductionStudioPushAudio(_ pointer: OpaquePointer?, _ block: UnsafePointer<rawfx_audio_frame>?,
                                           _ timestamp: Int64) -> rawfx_result {
    let function = "rawfx_production_studio_push_audio"
    return withStudio(pointer, function) { studio in
        if let failure = checkAudio(block, function) { return failure }
        let b = block!.pointee
        guard b.frame_count > 0 else { return rawfxOK }
        return result(of: studio.pushAudio(b.samples!, frameCount: Int(b.frame_count),
                                           format: AudioFormat(sampleRate: Int(b.sample_rate), channels: Int(b.channels)),
                                           timestampMicroseconds: timestamp == Int64.min ? nil : timestamp), function)
    }
}

@_cdecl("rawfx_production_studio_pump")
public func rawfxProductionStudioPump(_ pointer: OpaquePointer?, _ now: Int64, _ next: UnsafeMutablePointer<Int64>?) -> rawfx_result {
    let function = "rawfx_production_studio_pump"
    return withStudio(pointer, function) { studio in
        guard studio.audioPacing == .caller else {
            return fail(RAWFX_E_STATE, "\(function): production studio was created with another pacing than RAWFX_PACING_CALLER")
        }
        next?.pointee = studio.pump(nowMicroseconds: now) ?? -1
        return rawfxOK
    }
}

private func media(_ value: Int32, _ function: String) -> Result<MediaKind, RawFXCallError> {
    guard let kind = MediaKind(rawValue: UInt32(bitPattern: value)) else {
        return .failure(RawFXCallError(invalid(function, "media is \(value); expected RAWFX_MEDIA_VIDEO (1) or RAWFX_MEDIA_AUDIO (2)")))
    }
    return .success(kind)
}

@_cdecl("rawfx_production_studio_set_chain")
public func rawfxProductionStudioSetChain(_ pointer: OpaquePointer?, _ mediaValue: Int32, _ text: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_production_studio_set_chain"
    guard let text = string(text) else { return invalid(function, "chain_text is NULL") }
    switch (studio(pointer, function), media(mediaValue, function)) {
    case (.success(let studio), .success(let kind)):
        do {
            try studio.setChain(text, for: kind)
            return rawfxOK
        } catch {
            return fail(error)
        }
    case (.failure(let error), _), (_, .failure(let error)):
        return error.code
    }
}

/// One of production studio's two chains as the C API's parameter control.
struct StudioChain: ParameterControl {
    let studio: ProductionStudioAdapter
    let media: MediaKind
    func setParameter(_ address: String, _ value: String) throws(ChainError) { try studio.setParameter(address, value, for: media) }
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try studio.setBypass(stage, bypassed, for: media) }
}

private func studioChain(_ pointer: OpaquePointer?, _ mediaValue: Int32, _ function: String) -> Result<any ParameterControl, RawFXCallError> {
    studio(pointer, function).flatMap { s in media(mediaValue, function).map { StudioChain(studio: s, media: $0) } }
}

@_cdecl("rawfx_production_studio_set_parameter")
public func rawfxProductionStudioSetParameter(_ pointer: OpaquePointer?, _ mediaValue: Int32, _ address: UnsafePointer<CChar>?,
                                              _ value: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_production_studio_set_parameter"
    return setParameter(function, studioChain(pointer, mediaValue, function), address, value)
}

@_cdecl("rawfx_production_studio_set_bypass")
public func rawfxProductionStudioSetBypass(_ pointer: OpaquePointer?, _ mediaValue: Int32, _ stage: UnsafePointer<CChar>?,
                                           _ bypassed: Int32) -> rawfx_result {
    let function = "rawfx_production_studio_set_bypass"
    return setBypass(function, studioChain(pointer, mediaValue, function), stage, bypassed)
}

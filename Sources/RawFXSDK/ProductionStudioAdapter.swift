import RawFX
import Synchronization

/// Why production studio refused a send, before it reached the SDK (or what the SDK said).
public enum PSSendError: Error, Equatable, CustomStringConvertible {
    /// The SDK's `SDKERR_INVALID_PARAMETER`: size or format not the declared capability,
    /// wrong length, a rate other than 32000/48000, an odd byte count.
    case invalidParameter(String)
    /// The SDK's `SDKERR_WRONG_USAGE`: outside onStartSend…onStopSend (or PS mode not started).
    case wrongUsage(String)
    /// The sender itself answered this error.
    case sender(MeetingSDKError)

    /// The Meeting SDK code this corresponds to.
    public var code: MeetingSDKError {
        switch self {
        case .invalidParameter: return .invalidParameter
        case .wrongUsage: return .wrongUsage
        case .sender(let e): return e
        }
    }

    public var description: String {
        switch self {
        case .invalidParameter(let why): return "SDKERR_INVALID_PARAMETER: \(why)"
        case .wrongUsage(let why): return "SDKERR_WRONG_USAGE: \(why)"
        case .sender(let e): return "the PS sender answered \(e)"
        }
    }
}

/// Production studio mode (Meeting SDK): a wrapper around the PS sender for the capability
/// the app declared when it started PS mode (given once, here: the emulator and the app's
/// `startPSMode` read it from `capability`).
///
/// - Video from `pushFrame` is negotiated to exactly the declared width and height (a
///   fit-mode scale is appended when the chain does not end there) and converted to the
///   declared range: when a frame's range differs from `capability.format`, the YUV plugin's
///   `range=to=full` (or `range=to=limited`) is appended after the fit. Without a `range`
///   filter such a frame fails with a message naming the missing filter. Anything else off
///   the capability is refused with `PSSendError.invalidParameter` before the sender.
/// - Audio from `pushAudio` goes out as 16-bit mono at `audioRate` (32000 or 48000; 48000 by
///   default), in 10 ms chunks (always an even byte count), paced like the virtual mic.
/// - One producer thread, as the SDK asks: the audio sender thread (see `AudioPacing`) calls
///   the PS sender for audio AND video, with every pacing. A video frame's chain runs on the
///   pushing thread (sync) or the video worker (async), then its send is handed to the sender
///   thread, which makes it between two audio chunks (or while it waits for one) while the
///   pushing thread waits for the result.
/// - `sendVideoFrame` / `sendAudio` validate and forward buffers the app made itself (also
///   through the one sending thread).
/// - Lifecycle: `onStartPSModeResult(true)`, then `onStartSend(sender)` opens sending;
///   `onStopSend` closes it and releases the sender. Nothing is sent outside. Each is also
///   reported to the app (`lifecycle`).
/// - Run-time control of either chain from any thread: `setChain`, `setParameter`, `setBypass`.
public final class ProductionStudioAdapter: SDKProductionStudioEvent, Sendable {
    public let capability: PSVideoSourceCapability
    public let audioRate: Int
    public let registry: PluginRegistry
    /// Mode result/start/stop events, as a callback and as streams.
    public let lifecycle = LifecycleEvents()
    let video: VideoPublisher<any SDKPSSender>
    let audio: AudioPublisher<any SDKPSSender>
    private let state = Locked<(accepted: Bool?, publishing: Set<UInt32>)>((nil, []))

    public init(capability: PSVideoSourceCapability, videoChain: String = "", audioChain: String = "",
                registry: PluginRegistry, audioRate: Int = 48000, mode: ProcessingMode = .sync,
                pacing: AudioPacing = .worker) throws(ChainError) {
        guard SDKAudioRates.productionStudio.contains(audioRate) else {
            throw .contract("production studio sends audio at 32000 or 48000 Hz only, not \(audioRate)")
        }
        guard capability.width > 0, capability.height > 0, capability.width % 2 == 0, capability.height % 2 == 0 else {
            throw .contract("production studio capability \(capability) must have even, non-zero width and height")
        }
        self.capability = capability
        self.audioRate = audioRate
        self.registry = registry
        let audio = AudioPublisher<any SDKPSSender>(
            name: "productionStudio.audio",
            chain: try AudioChain(specs: audioChain.isEmpty ? [] : FilterSpec.parseChain(audioChain), registry: registry),
            registry: registry, targetRate: audioRate, pacing: pacing, queueMilliseconds: 10_000) { sender, data, length, rate in
            if let error = Self.validateAudio(dataLength: length, sampleRate: rate, channel: .mono) {
                return .rejected(code: error.code.rawValue, name: error.description)
            }
            let status = sender.sendAudio(data, dataLength: length, sampleRate: rate, channel: .mono)
            return status == .success ? .sent : .rejected(code: status.rawValue, name: status.description)
        }
        self.audio = audio
        let cap = capability
        // One processing thread sends video at a time (the sync lock or the video worker): one request object.
        let videoSend = PSVideoSend()
        video = VideoPublisher(name: "productionStudio.video",
                               chain: try VideoChain(specs: videoChain.isEmpty ? [] : FilterSpec.parseChain(videoChain), registry: registry),
                               registry: registry, mode: mode) { sender, picture, format in
            let dataFormat = FrameDataFormat(format.colorRange)
            if let error = Self.validateVideo(width: picture.format.width, height: picture.format.height,
                                              frameLength: picture.byteCount, format: dataFormat, capability: cap) {
                return .invalid(error.description)
            }
            videoSend.prepare(sender, picture, dataFormat)
            audio.runOnSender(videoSend)
            let status = videoSend.finish()
            return status == .success ? .sent : .rejectedBySender(code: status.rawValue, name: status.description)
        }
        video.pipeline.setTarget(.exact(width: capability.width, height: capability.height), range: capability.format.colorRange)
    }

    deinit {
        video.close()
        audio.close()
        lifecycle.finish()
    }

    // MARK: Validation (what the SDK documents; checked before the sender is called)

    public static func validateVideo(width: Int, height: Int, frameLength: Int, format: FrameDataFormat,
                                     capability: PSVideoSourceCapability) -> PSSendError? {
        if width != capability.width || height != capability.height {
            return .invalidParameter("frame is \(width)x\(height), production studio was started for \(capability.width)x\(capability.height)")
        }
        if format != capability.format {
            return .invalidParameter("frame format is \(format), production studio was started for \(capability.format)")
        }
        if frameLength != capability.frameLength {
            return .invalidParameter("frameLength \(frameLength) is not \(capability.width)·\(capability.height)·3/2 = \(capability.frameLength)")
        }
        return nil
    }

    public static func validateAudio(dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> PSSendError? {
        if !SDKAudioRates.productionStudio.contains(sampleRate) {
            return .invalidParameter("sample rate \(sampleRate) Hz: production studio takes 32000 or 48000")
        }
        if dataLength <= 0 || dataLength % 2 != 0 {
            return .invalidParameter("dataLength \(dataLength) must be an even, positive number of bytes")
        }
        if dataLength % (2 * channel.count) != 0 {
            return .invalidParameter("dataLength \(dataLength) is not a whole number of \(channel) 16-bit frames")
        }
        return nil
    }

    // MARK: SDK callbacks

    /// `onStartPSModeResult` [SDK thread].
    public func onStartPSModeResult(_ success: Bool) {
        state.withLock { $0.accepted = success }
        video.gate.refuse(because: success ? nil : .productionStudioRefused)
        audio.gate.refuse(because: success ? nil : .productionStudioRefused)
        lifecycle.emit(.productionStudioModeResult(success: success))
    }

    /// `onStartSend` [SDK thread]: with a sender after a successful mode result, sending opens.
    public func onStartSend(_ sender: (any SDKPSSender)?) {
        guard state.withLock({ $0.accepted }) == true, let sender else { return }
        video.gate.initialize(sender)
        audio.gate.initialize(sender)
        video.gate.start()
        audio.start()
        lifecycle.emit(.productionStudioStarted)
    }

    /// `onStopSend` [SDK thread]: once it returns nothing more is sent and the sender is released.
    public func onStopSend() {
        video.gate.stop()
        video.gate.uninitialize()
        video.discardQueued()
        audio.uninitialize()
        state.withLock { $0.accepted = nil }
        lifecycle.emit(.productionStudioStopped)
    }

    /// `onPSUserStatusChanged` [SDK thread]: who publishes (does not affect sending).
    public func onPSUserStatusChanged(_ userID: UInt32, isStart: Bool) {
        state.withLock {
            if isStart { $0.publishing.insert(userID) } else { $0.publishing.remove(userID) }
        }
    }

    // MARK: Run-time control (any thread)

    /// Replaces the video or audio chain; see `VideoSourceAdapter.setChain` / `VirtualMicAdapter.setChain`.
    public func setChain(_ text: String, for media: MediaKind) throws(ChainError) {
        switch media {
        case .video: try video.setChain(text)
        case .audio: try audio.setChain(text)
        }
    }

    /// Sets a parameter of the video or audio chain, applied between two frames or pushes.
    public func setParameter(_ address: String, _ value: String, for media: MediaKind) throws(ChainError) {
        switch media {
        case .video: try video.setParameter(address, value)
        case .audio: try audio.setParameter(address, value)
        }
    }

    /// Bypasses a stage of the video or audio chain, or re-enables it.
    public func setBypass(_ stage: String, _ bypassed: Bool, for media: MediaKind) throws(ChainError) {
        switch media {
        case .video: try video.setBypass(stage, bypassed)
        case .audio: try audio.setBypass(stage, bypassed)
        }
    }

    // MARK: App side

    /// Processes one frame to exactly the declared capability and sends it.
    @discardableResult
    public func pushFrame(_ frame: VideoFrame) -> PublishStatus { video.push(frame) }

    /// Processes PCM (any rate, channels, size) to 10 ms mono chunks at `audioRate`.
    @discardableResult
    public func pushAudio(_ samples: UnsafePointer<Int16>, frameCount: Int, format: AudioFormat,
                          timestampMicroseconds: Int64? = nil) -> AudioPushStatus {
        audio.push(samples: samples, frameCount: frameCount, format: format, timestampMicroseconds: timestampMicroseconds)
    }

    /// `.caller` pacing: sends the audio chunks due at `now`.
    @discardableResult
    public func pump(nowMicroseconds now: Int64) -> Int64? {
        // Only the caller's clock is set by pump; other pacings keep their own.
        guard audio.pacing == .caller else { return nil }
        return audio.pump(nowMicroseconds: now)
    }

    /// Who sends the audio chunks, and when.
    public var audioPacing: AudioPacing { audio.pacing }

    /// Audio chunks waiting to be sent.
    public var queuedAudioChunks: Int { audio.queuedChunks }

    /// Validates and forwards an I420 buffer the app packed itself.
    public func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                               format: FrameDataFormat = .i420Full) throws(PSSendError) {
        if let error = Self.validateVideo(width: width, height: height, frameLength: frameLength, format: format, capability: capability) {
            video.stats.recordError()
            throw error
        }
        // The gate's lock is taken on the sender thread, which takes the audio gate's too.
        var result: Result<MeetingSDKError, RefusalError> = .failure(RefusalError(refusal: .closed))
        audio.runOnSender {
            result = self.video.gate.send { $0.sendVideoFrame(frameBuffer, width: width, height: height, frameLength: frameLength, format: format) }
        }
        switch result {
        case .success(.success): return
        case .success(let code):
            video.stats.recordSendRejected()
            throw .sender(code)
        case .failure(let refusal):
            video.stats.recordRefused()
            throw .wrongUsage("production studio is not sending: \(refusal.refusal)")
        }
    }

    /// Validates and forwards PCM the app made itself (16-bit, 32000 or 48000 Hz, even length).
    public func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int,
                          channel: SDKAudioChannel = .mono) throws(PSSendError) {
        if let error = Self.validateAudio(dataLength: dataLength, sampleRate: sampleRate, channel: channel) {
            audio.stats.recordError()
            throw error
        }
        var result: Result<MeetingSDKError, RefusalError> = .failure(RefusalError(refusal: .closed))
        audio.runOnSender {
            result = self.audio.gate.send { $0.sendAudio(data, dataLength: dataLength, sampleRate: sampleRate, channel: channel) }
        }
        switch result {
        case .success(.success): return
        case .success(let code):
            audio.stats.recordSendRejected()
            throw .sender(code)
        case .failure(let refusal):
            audio.stats.recordRefused()
            throw .wrongUsage("production studio is not sending: \(refusal.refusal)")
        }
    }

    public var isSending: Bool { video.gate.state == .sending }
    /// PS users currently publishing (from onPSUserStatusChanged).
    public var publishingUsers: Set<UInt32> { state.withLock { $0.publishing } }
    public var videoMetrics: HookMetrics { video.metrics }
    public var audioMetrics: HookMetrics { audio.metrics }
    public var lastVideoFailure: PublishStatus? { video.lastStatus }

    /// Stops sending and refuses everything from now on; ends the lifecycle streams.
    public func close() {
        video.close()
        audio.close()
        lifecycle.finish()
    }
}

/// One production studio video send, handed to the audio sender thread and reused for every
/// frame. Filled by the video processing thread (one at a time), run on the sender thread,
/// read back by the processing thread: the hand-over orders the three, so its lock is never
/// contended.
final class PSVideoSend: SenderWork, Sendable {
    private struct Request {
        var sender: (any SDKPSSender)?
        var picture: PackedPicture?
        var format = FrameDataFormat.i420Full
        var status = MeetingSDKError.success
    }
    private let request = Locked(Request())

    func prepare(_ sender: any SDKPSSender, _ picture: PackedPicture, _ format: FrameDataFormat) {
        request.withLock { $0 = Request(sender: sender, picture: picture, format: format) }
    }

    func run() {
        request.withLock { r in
            guard let sender = r.sender, let picture = r.picture else { return }
            r.status = sender.sendVideoFrame(picture.bytes, width: picture.format.width, height: picture.format.height,
                                             frameLength: picture.byteCount, format: r.format)
        }
    }

    /// The sender's answer; forgets the sender and picture.
    func finish() -> MeetingSDKError {
        request.withLock { r in
            defer { r = Request() }
            return r.status
        }
    }
}

import RawFX
import Synchronization

/// What the video source and the share source share: a `VideoPublisher` (chain, fit, pack,
/// the gate that sends only while the SDK lets it, the optional async worker), its run-time
/// control, metrics and lifecycle events. Each source holds one and adds the SDK's callbacks
/// (held, not inherited, so both are checked `Sendable`).
public final class VideoPublishingSource<Sender>: Sendable {
    let publisher: VideoPublisher<Sender>
    public let registry: PluginRegistry
    /// Start/stop (and capability) events, as a callback and as streams.
    public let lifecycle = LifecycleEvents()
    private let chain: Locked<String>

    init(name: String, chain: String, registry: PluginRegistry, mode: ProcessingMode,
         send: @escaping VideoPublisher<Sender>.Send) throws(ChainError) {
        self.registry = registry
        self.chain = Locked(chain)
        let videoChain = try VideoChain(specs: chain.isEmpty ? [] : FilterSpec.parseChain(chain), registry: registry)
        publisher = VideoPublisher(name: name, chain: videoChain, registry: registry, mode: mode, send: send)
    }

    deinit {
        publisher.close()
        lifecycle.finish()
    }

    /// [app thread] Offers one frame (any size and stride; valid only during the call). Sync
    /// mode: runs the chain and sends before returning; in-place filters edit `frame` itself
    /// (no copy). Async: queues a copy.
    @discardableResult
    public func pushFrame(_ frame: VideoFrame) -> PublishStatus { publisher.push(frame) }

    /// [any thread] Replaces the app's chain between two frames, negotiated here for the last
    /// frame's format (a refusal throws and keeps the chain in force).
    public func setChain(_ text: String) throws(ChainError) {
        try publisher.setChain(text)
        chain.withLock { $0 = text }
    }

    /// [any thread] Sets a parameter of the chain (`"watermark.opacity"`), applied between two frames.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) { try publisher.setParameter(address, value) }

    /// [any thread] Bypasses a stage of the chain, or re-enables it, from the next frame.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try publisher.setBypass(stage, bypassed) }

    public var chainText: String { chain.withLock { $0 } }
    public var isSending: Bool { publisher.gate.state == .sending }
    public var metrics: HookMetrics { publisher.metrics }
    /// The last frame that was not sent, and why (sync and async).
    public var lastFailure: PublishStatus? { publisher.lastStatus }
    /// Async mode: frames waiting for the worker.
    public var queuedFrames: Int { publisher.queuedCount }
    /// [any thread] Async mode: called on the worker with each frame's outcome.
    public func setAsyncResultHandler(_ handler: (@Sendable (PublishStatus) -> Void)?) { publisher.setAsyncResultHandler(handler) }

    /// Stops the worker and refuses everything from now on; ends the lifecycle streams.
    public func close() {
        publisher.close()
        lifecycle.finish()
    }
}

/// The app's side of a publishing source, the same for the video and the share source: its
/// members forward to the `VideoPublishingSource` it holds.
public protocol VideoPublishing: AnyObject, Sendable {
    associatedtype Sender
    var publishing: VideoPublishingSource<Sender> { get }
}

extension VideoPublishing {
    public var registry: PluginRegistry { publishing.registry }
    /// Start/stop (and capability) events, as a callback and as streams.
    public var lifecycle: LifecycleEvents { publishing.lifecycle }
    /// See `VideoPublishingSource.pushFrame`.
    @discardableResult
    public func pushFrame(_ frame: VideoFrame) -> PublishStatus { publishing.pushFrame(frame) }
    public func setChain(_ text: String) throws(ChainError) { try publishing.setChain(text) }
    public func setParameter(_ address: String, _ value: String) throws(ChainError) { try publishing.setParameter(address, value) }
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try publishing.setBypass(stage, bypassed) }
    public var chainText: String { publishing.chainText }
    public var isSending: Bool { publishing.isSending }
    public var metrics: HookMetrics { publishing.metrics }
    public var lastFailure: PublishStatus? { publishing.lastFailure }
    public var queuedFrames: Int { publishing.queuedFrames }
    public func setAsyncResultHandler(_ handler: (@Sendable (PublishStatus) -> Void)?) { publishing.setAsyncResultHandler(handler) }
    public func close() { publishing.close() }
    var publisher: VideoPublisher<Sender> { publishing.publisher }
}

/// The external video source (a virtual camera): install it as the SDK's video source
/// (`externalVideoSource`), then push frames from the app with `pushFrame`.
///
/// - It picks a capability in `onInitialize` / `onPropertyChange` (the suggested one unless a
///   `capabilityPolicy` says otherwise) and makes every frame exactly that size: when the
///   chain does not already end at that size, a `scale=width=W:height=H:mode=fit` stage is
///   appended (letterbox/pillarbox, never distorted).
/// - Frames are packed tightly (dataLength = w·h·3/2) into a buffer allocated when the
///   capability is chosen, and go to `sendVideoFrame` only between `onStartSend` and
///   `onStopSend`. A frame pushed outside is refused (`PublishStatus.refused`) and never
///   sent; it does not touch the chain.
/// - `onPropertyChange` takes effect between frames: a frame already fitted to the old
///   capability when the change arrives is not sent (`.superseded`, counted as a drop).
/// - `onStopSend` may come from any thread while a frame is in the chain: that frame's chain
///   finishes, but once `onStopSend` returns nothing more is sent (the sender call is the
///   only thing `onStopSend` may wait for). `onUninitialized` without `onStopSend` stops too.
/// - Async mode (`.async(capacity:)`): `pushFrame` copies the frame into a bounded queue
///   (oldest dropped when full) and a worker runs the chain and sends.
/// - Run-time control from any thread: `setChain` (negotiated on the calling thread for the
///   last frame's format, swapped in between two frames, the old chain released off the
///   frame path), `setParameter`, `setBypass`.
/// - Lifecycle: every SDK callback is also reported to the app (`lifecycle`), after the
///   adapter acted on it, so the app starts and stops its pump there.
public final class VideoSourceAdapter: VideoPublishing, SDKVideoSource, Sendable {
    public let publishing: VideoPublishingSource<any SDKVideoSender>
    /// Chooses the capability from what the SDK offers; the default takes the suggestion.
    public typealias CapabilityPolicy = @Sendable (_ supported: [VideoSourceCapability],
                                                   _ suggested: VideoSourceCapability) -> VideoSourceCapability

    private let policy: CapabilityPolicy
    private let state = Locked<(capability: VideoSourceCapability?, supported: [VideoSourceCapability])>((nil, []))

    public init(chain: String = "", registry: PluginRegistry, mode: ProcessingMode = .sync,
                capabilityPolicy: CapabilityPolicy? = nil) throws(ChainError) {
        policy = capabilityPolicy ?? { _, suggested in suggested }
        publishing = try VideoPublishingSource(name: "videoSource", chain: chain, registry: registry, mode: mode) { sender, picture, format in
            let status = sender.sendVideoFrame(picture.bytes, width: picture.format.width, height: picture.format.height,
                                               dataLength: picture.byteCount, rotation: format.rotation,
                                               format: FrameDataFormat(format.colorRange))
            return status == .success ? .sent : .rejectedBySender(code: status.rawValue, name: status.description)
        }
    }

    // MARK: SDK callbacks

    /// `onInitialize` [SDK thread]: keeps the sender, chooses the capability.
    public func onInitialize(_ sender: any SDKVideoSender, supportCapabilityArray: [VideoSourceCapability],
                             suggestCapability: VideoSourceCapability) {
        let capability = choose(supportCapabilityArray, suggestCapability)
        publisher.gate.initialize(sender)
        lifecycle.emit(.videoSourceInitialized(capability, supported: supportCapabilityArray))
    }

    /// `onPropertyChange` [SDK thread]: frames take the new capability from the next one.
    public func onPropertyChange(_ supportCapabilityArray: [VideoSourceCapability], suggestCapability: VideoSourceCapability) {
        let capability = choose(supportCapabilityArray, suggestCapability)
        lifecycle.emit(.videoSourceCapabilityChanged(capability, supported: supportCapabilityArray))
    }

    /// `onStartSend` [SDK thread]: frames are sent from now on.
    public func onStartSend() {
        publisher.gate.start()
        lifecycle.emit(.videoSourceStarted)
    }

    /// `onStopSend` [SDK thread]: once it returns nothing more is sent.
    public func onStopSend() {
        publisher.gate.stop()
        publisher.discardQueued()
        lifecycle.emit(.videoSourceStopped)
    }

    /// `onUninitialized` [SDK thread]: the sender is forgotten.
    public func onUninitialized() {
        publisher.gate.uninitialize()
        publisher.discardQueued()
        lifecycle.emit(.videoSourceUninitialized)
    }

    private func choose(_ supported: [VideoSourceCapability], _ suggested: VideoSourceCapability) -> VideoSourceCapability {
        let capability = policy(supported, suggested)
        let changed = state.withLock { s -> Bool in
            let changed = s.capability?.width != capability.width || s.capability?.height != capability.height
            s.capability = capability
            s.supported = supported
            return changed
        }
        if changed { publisher.pipeline.setTarget(.exact(width: capability.width, height: capability.height)) }
        return capability
    }

    /// The capability frames are sent at (nil before onInitialize).
    public var capability: VideoSourceCapability? { state.withLock { $0.capability } }
    /// What the SDK offered last.
    public var supportedCapabilities: [VideoSourceCapability] { state.withLock { $0.supported } }
}

/// The share source: raw frames shared as a screen (`IZoomVideoSDKShareSource`). Like the
/// video source, but the SDK gives no capability: frames are sent at the chain's output size
/// cut to even dimensions (or at `outputSize` when set), packed, to `sendShareFrame`, only
/// between `onShareSendStarted` and `onShareSendStopped`. Same run-time control and
/// lifecycle events as the video source.
public final class ShareSourceAdapter: VideoPublishing, SDKShareSource, Sendable {
    public let publishing: VideoPublishingSource<any SDKShareSender>

    public init(chain: String = "", registry: PluginRegistry, mode: ProcessingMode = .sync,
                outputSize: (width: Int, height: Int)? = nil) throws(ChainError) {
        publishing = try VideoPublishingSource(name: "shareSource", chain: chain, registry: registry, mode: mode) { sender, picture, format in
            let status = sender.sendShareFrame(picture.bytes, width: picture.format.width, height: picture.format.height,
                                               frameLength: picture.byteCount, format: FrameDataFormat(format.colorRange))
            return status == .success ? .sent : .rejectedBySender(code: status.rawValue, name: status.description)
        }
        if let outputSize { publisher.pipeline.setTarget(.exact(width: outputSize.width, height: outputSize.height)) }
    }

    /// `onShareSendStarted` [SDK thread]: frames are sent from now on (nil sender: nothing is).
    public func onShareSendStarted(_ sender: (any SDKShareSender)?) {
        publisher.gate.initialize(sender)
        publisher.gate.refuse(because: sender == nil ? .shareStartedWithoutSender : nil)
        publisher.gate.start()
        lifecycle.emit(.shareStarted(hasSender: sender != nil))
    }

    /// `onShareSendStopped` [SDK thread]: once it returns nothing more is sent.
    public func onShareSendStopped() {
        publisher.gate.uninitialize()
        publisher.gate.refuse(because: .shareStopped)
        publisher.discardQueued()
        lifecycle.emit(.shareStopped)
    }
}

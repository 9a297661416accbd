import RawFX
import Synchronization

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
public final class VideoSourceAdapter: SDKVideoSource, @unchecked Sendable {
    /// Chooses the capability from what the SDK offers; the default takes the suggestion.
    public typealias CapabilityPolicy = @Sendable (_ supported: [VideoSourceCapability],
                                                   _ suggested: VideoSourceCapability) -> VideoSourceCapability

    let publisher: VideoPublisher<any SDKVideoSender>
    public let registry: PluginRegistry
    private let policy: CapabilityPolicy
    private let state = Locked<(capability: VideoSourceCapability?, supported: [VideoSourceCapability], chain: String)>((nil, [], ""))

    public init(chain: String = "", registry: PluginRegistry, mode: ProcessingMode = .sync,
                capabilityPolicy: CapabilityPolicy? = nil) throws(ChainError) {
        self.registry = registry
        policy = capabilityPolicy ?? { _, suggested in suggested }
        let videoChain = chain.isEmpty ? nil : try VideoChain(chain, registry: registry)
        publisher = VideoPublisher(name: "videoSource", chain: videoChain, registry: registry, mode: mode) { sender, picture, format in
            let status = sender.sendVideoFrame(picture.bytes, width: picture.format.width, height: picture.format.height,
                                               dataLength: picture.byteCount, rotation: format.rotation,
                                               format: FrameDataFormat(format.colorRange))
            return status == .success ? .sent : .rejectedBySender(code: status.rawValue, name: status.description)
        }
        state.withLock { $0.chain = chain }
    }

    deinit { publisher.close() }

    // MARK: SDK callbacks

    public func onInitialize(_ sender: any SDKVideoSender, supportCapabilityArray: [VideoSourceCapability],
                             suggestCapability: VideoSourceCapability) {
        choose(supportCapabilityArray, suggestCapability)
        publisher.gate.initialize(sender)
    }

    public func onPropertyChange(_ supportCapabilityArray: [VideoSourceCapability], suggestCapability: VideoSourceCapability) {
        choose(supportCapabilityArray, suggestCapability)
    }

    public func onStartSend() {
        if publisher.gate.start() { publisher.pipeline.requestReset() }
    }

    public func onStopSend() {
        publisher.gate.stop()
        publisher.discardQueued()
    }

    public func onUninitialized() {
        publisher.gate.uninitialize()
        publisher.discardQueued()
    }

    private func choose(_ supported: [VideoSourceCapability], _ suggested: VideoSourceCapability) {
        let capability = policy(supported, suggested)
        let changed = state.withLock { s -> Bool in
            let changed = s.capability?.width != capability.width || s.capability?.height != capability.height
            s.capability = capability
            s.supported = supported
            return changed
        }
        if changed { publisher.pipeline.setTarget(.exact(width: capability.width, height: capability.height)) }
    }

    // MARK: App side

    /// Offers one frame (any size and stride; valid only during the call). Sync mode: runs
    /// the chain and sends before returning; in-place filters edit `frame` itself (no copy).
    /// Async: queues a copy.
    @discardableResult
    public func pushFrame(_ frame: VideoFrame) -> PublishStatus { publisher.push(frame) }

    /// Replaces the app's chain between two frames.
    public func setChain(_ text: String) throws(ChainError) {
        publisher.pipeline.replaceChain(text.isEmpty ? nil : try VideoChain(text, registry: registry))
        state.withLock { $0.chain = text }
    }

    /// The capability frames are sent at (nil before onInitialize).
    public var capability: VideoSourceCapability? { state.withLock { $0.capability } }
    /// What the SDK offered last.
    public var supportedCapabilities: [VideoSourceCapability] { state.withLock { $0.supported } }
    public var chainText: String { state.withLock { $0.chain } }
    public var isSending: Bool { publisher.gate.state == .sending }
    public var metrics: HookMetrics { publisher.metrics }
    /// The last frame that was not sent, and why (sync and async).
    public var lastFailure: PublishStatus? { publisher.lastStatus }
    /// Async mode: frames waiting for the worker.
    public var queuedFrames: Int { publisher.queuedCount }
    /// Async mode: called on the worker with each frame's outcome.
    public func setAsyncResultHandler(_ handler: (@Sendable (PublishStatus) -> Void)?) { publisher.onAsyncResult = handler }

    /// Stops the worker and refuses everything from now on.
    public func close() { publisher.close() }
}

/// The share source: raw frames shared as a screen (`IZoomVideoSDKShareSource`). Like the
/// video source, but the SDK gives no capability: frames are sent at the chain's output size
/// cut to even dimensions (or at `outputSize` when set), packed, to `sendShareFrame`, only
/// between `onShareSendStarted` and `onShareSendStopped`.
public final class ShareSourceAdapter: SDKShareSource, @unchecked Sendable {
    let publisher: VideoPublisher<any SDKShareSender>
    public let registry: PluginRegistry

    public init(chain: String = "", registry: PluginRegistry, mode: ProcessingMode = .sync,
                outputSize: (width: Int, height: Int)? = nil) throws(ChainError) {
        self.registry = registry
        let videoChain = chain.isEmpty ? nil : try VideoChain(chain, registry: registry)
        publisher = VideoPublisher(name: "shareSource", chain: videoChain, registry: registry, mode: mode) { sender, picture, format in
            let status = sender.sendShareFrame(picture.bytes, width: picture.format.width, height: picture.format.height,
                                               frameLength: picture.byteCount, format: FrameDataFormat(format.colorRange))
            return status == .success ? .sent : .rejectedBySender(code: status.rawValue, name: status.description)
        }
        if let outputSize { publisher.pipeline.setTarget(.exact(width: outputSize.width, height: outputSize.height)) }
    }

    deinit { publisher.close() }

    public func onShareSendStarted(_ sender: (any SDKShareSender)?) {
        publisher.gate.initialize(sender)
        if publisher.gate.start() { publisher.pipeline.requestReset() }
    }

    public func onShareSendStopped() {
        publisher.gate.uninitialize()
        publisher.discardQueued()
    }

    @discardableResult
    public func pushFrame(_ frame: VideoFrame) -> PublishStatus { publisher.push(frame) }

    public func setChain(_ text: String) throws(ChainError) {
        publisher.pipeline.replaceChain(text.isEmpty ? nil : try VideoChain(text, registry: registry))
    }

    public var isSending: Bool { publisher.gate.state == .sending }
    public var metrics: HookMetrics { publisher.metrics }
    public var lastFailure: PublishStatus? { publisher.lastStatus }
    public var queuedFrames: Int { publisher.queuedCount }
    public func setAsyncResultHandler(_ handler: (@Sendable (PublishStatus) -> Void)?) { publisher.onAsyncResult = handler }
    public func close() { publisher.close() }
}

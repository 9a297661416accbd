import RawFX
import Synchronization

/// The core processor: one object that builds the hook adapters from chain texts and a
/// plugin registry, keeps them, and reports every hook's metrics.
///
/// Each hook is its own object because the SDK registers each separately (the session
/// context's `preProcessor`, `virtualAudioSpeaker`, `externalVideoSource`, `virtualAudioMic`;
/// the share helper's external source; the PS controller's event) and because two of them
/// share callback names (`onStartSend`/`onStopSend` of the video source and of production
/// studio). Install `processor.preProcessor` where the SDK wants an
/// `IZoomVideoSDKVideoSourcePreProcessor`, and so on:
///
/// ```swift
/// let processor = RawFXProcessor(registry: PluginRegistry())
/// context.preProcessor = try processor.configurePreProcessor(chain: "watermark=image=logo.png")
/// context.virtualAudioSpeaker = try processor.configureVirtualSpeaker(chain: "denoise=level=-30") { stream, block in … }
/// context.externalVideoSource = try processor.configureVideoSource(chain: "rotate=angle=90")
/// context.virtualAudioMic = try processor.configureVirtualMic(chain: "gain=db=6")
/// ```
public final class RawFXProcessor: Sendable {
    public let registry: PluginRegistry
    private struct Hooks {
        var preProcessor: PreProcessorHook?
        var virtualSpeaker: VirtualSpeakerHook?
        var videoSource: VideoSourceAdapter?
        var virtualMic: VirtualMicAdapter?
        var shareSource: ShareSourceAdapter?
        var productionStudio: ProductionStudioAdapter?
        var receiveVideo: ReceiveVideoHook?
    }
    private let hooks = Locked<Hooks>(Hooks())
    /// Held through a whole `configure*` call, so that looking for the hook and creating it
    /// are one step: two threads configuring the same hook at once get the same object.
    /// Separate from `hooks`, which the getters and `metrics` take, so they never wait for a
    /// chain being negotiated. Its value counts the configure calls (a `Void` state made
    /// ThreadSanitizer report the lock's own empty value as raced).
    private let configuring = Locked<UInt64>(0)

    public init(registry: PluginRegistry) { self.registry = registry }

    public var preProcessor: PreProcessorHook? { hooks.withLock { $0.preProcessor } }
    public var virtualSpeaker: VirtualSpeakerHook? { hooks.withLock { $0.virtualSpeaker } }
    public var videoSource: VideoSourceAdapter? { hooks.withLock { $0.videoSource } }
    public var virtualMic: VirtualMicAdapter? { hooks.withLock { $0.virtualMic } }
    public var shareSource: ShareSourceAdapter? { hooks.withLock { $0.shareSource } }
    public var productionStudio: ProductionStudioAdapter? { hooks.withLock { $0.productionStudio } }
    public var receiveVideo: ReceiveVideoHook? { hooks.withLock { $0.receiveVideo } }

    /// Creates the pre-processor, or swaps the chain of the existing one between frames.
    @discardableResult
    public func configurePreProcessor(chain: String, frameFormat: VideoFormat? = nil) throws(ChainError) -> PreProcessorHook {
        try configureHook(\.preProcessor, update: { hook throws(ChainError) in
            try hook.configure(chain: chain, frameFormat: frameFormat)
        }, make: { () throws(ChainError) in
            try PreProcessorHook(chain: chain, registry: registry, frameFormat: frameFormat)
        })
    }

    /// Creates the virtual speaker, or sets the chain of the existing one (the object the SDK
    /// holds keeps serving its callbacks: every stream gets the new chain before its next
    /// block). On an existing hook `mode`, `retainInAsync` and `sink` are those it was created
    /// with; the arguments here are ignored.
    @discardableResult
    public func configureVirtualSpeaker(chain: String, mode: ProcessingMode = .sync, retainInAsync: Bool = false,
                                        sink: @escaping VirtualSpeakerHook.Sink) throws(ChainError) -> VirtualSpeakerHook {
        try configureHook(\.virtualSpeaker, update: { hook throws(ChainError) in
            try hook.setChain(chain)
        }, make: { () throws(ChainError) in
            try VirtualSpeakerHook(chain: chain, registry: registry, mode: mode, retainInAsync: retainInAsync, sink: sink)
        })
    }

    /// Creates the video source, or sets the chain of the existing one (the object the SDK
    /// holds; `mode` and `capabilityPolicy` stay those it was created with).
    @discardableResult
    public func configureVideoSource(chain: String = "", mode: ProcessingMode = .sync,
                                     capabilityPolicy: VideoSourceAdapter.CapabilityPolicy? = nil) throws(ChainError) -> VideoSourceAdapter {
        try configureHook(\.videoSource, update: { hook throws(ChainError) in
            try hook.setChain(chain)
        }, make: { () throws(ChainError) in
            try VideoSourceAdapter(chain: chain, registry: registry, mode: mode, capabilityPolicy: capabilityPolicy)
        })
    }

    /// Creates the virtual mic, or sets the chain of the existing one (`targetRate` and
    /// `pacing` stay those it was created with).
    @discardableResult
    public func configureVirtualMic(chain: String = "", targetRate: Int = 48000,
                                    pacing: AudioPacing = .worker) throws(ChainError) -> VirtualMicAdapter {
        try configureHook(\.virtualMic, update: { hook throws(ChainError) in
            try hook.setChain(chain)
        }, make: { () throws(ChainError) in
            try VirtualMicAdapter(chain: chain, registry: registry, targetRate: targetRate, pacing: pacing)
        })
    }

    /// Creates the share source, or sets the chain of the existing one (`mode` and
    /// `outputSize` stay those it was created with).
    @discardableResult
    public func configureShareSource(chain: String = "", mode: ProcessingMode = .sync,
                                     outputSize: (width: Int, height: Int)? = nil) throws(ChainError) -> ShareSourceAdapter {
        try configureHook(\.shareSource, update: { hook throws(ChainError) in
            try hook.setChain(chain)
        }, make: { () throws(ChainError) in
            try ShareSourceAdapter(chain: chain, registry: registry, mode: mode, outputSize: outputSize)
        })
    }

    /// Creates production studio for `capability` (given once: the emulator and the app's
    /// `startPSMode` read `adapter.capability`), or sets the chains of the existing adapter.
    /// A different capability on an existing adapter is refused: PS mode was started for the
    /// first one (stop PS mode and make a new processor to change it).
    @discardableResult
    public func configureProductionStudio(capability: PSVideoSourceCapability, videoChain: String = "", audioChain: String = "",
                                          audioRate: Int = 48000, mode: ProcessingMode = .sync,
                                          pacing: AudioPacing = .worker) throws(ChainError) -> ProductionStudioAdapter {
        try configureHook(\.productionStudio, update: { hook throws(ChainError) in
            guard hook.capability == capability else {
                throw .contract("production studio was configured for \(hook.capability), not \(capability): the capability is given once, when PS mode starts")
            }
            try hook.setChain(videoChain, for: .video)
            try hook.setChain(audioChain, for: .audio)
        }, make: { () throws(ChainError) in
            try ProductionStudioAdapter(capability: capability, videoChain: videoChain, audioChain: audioChain,
                                        registry: registry, audioRate: audioRate, mode: mode, pacing: pacing)
        })
    }

    /// Creates the received-video hook (each subscribed user's video or share pipe gets its
    /// own chain: `hook.subscribe(user.getVideoPipe(), user:, resolution:)`), or sets the chain
    /// of the existing one for every stream (`mode` and `sink` stay those it was created with).
    @discardableResult
    public func configureReceiveVideo(chain: String, mode: ProcessingMode = .sync,
                                      sink: @escaping ReceiveVideoHook.Sink) throws(ChainError) -> ReceiveVideoHook {
        try configureHook(\.receiveVideo, update: { hook throws(ChainError) in
            try hook.setChain(chain)
        }, make: { () throws(ChainError) in
            try ReceiveVideoHook(chain: chain, registry: registry, mode: mode, sink: sink)
        })
    }

    /// The one shape of every `configure*`: updates the hook in `slot` if there is one,
    /// otherwise makes it and stores it, all under `configuring`.
    private func configureHook<Hook>(_ slot: WritableKeyPath<Hooks, Hook?>,
                                     update: (Hook) throws(ChainError) -> Void,
                                     make: () throws(ChainError) -> Hook) throws(ChainError) -> Hook {
        try configuring.withLock { (calls: inout UInt64) throws(ChainError) -> Hook in
            calls &+= 1
            if let existing = hooks.withLock({ $0[keyPath: slot] }) {
                try update(existing)
                return existing
            }
            let hook = try make()
            hooks.withLock { $0[keyPath: slot] = hook }
            return hook
        }
    }

    /// Every configured hook's figures (frames, errors, drops, p50/p99) with its filters'.
    public var metrics: [HookMetrics] {
        let h = hooks.withLock { $0 }
        var all: [HookMetrics] = []
        if let x = h.preProcessor { all.append(x.metrics) }
        if let x = h.virtualSpeaker { all.append(x.metrics) }
        if let x = h.videoSource { all.append(x.metrics) }
        if let x = h.virtualMic { all.append(x.metrics) }
        if let x = h.shareSource { all.append(x.metrics) }
        if let x = h.productionStudio {
            all.append(x.videoMetrics)
            all.append(x.audioMetrics)
        }
        if let x = h.receiveVideo { all.append(x.metrics) }
        return all
    }

    /// Stops every worker and refuses everything afterwards.
    public func close() {
        let h = hooks.withLock { $0 }
        h.virtualSpeaker?.close()
        h.videoSource?.close()
        h.virtualMic?.close()
        h.shareSource?.close()
        h.productionStudio?.close()
        h.receiveVideo?.close()
    }
}

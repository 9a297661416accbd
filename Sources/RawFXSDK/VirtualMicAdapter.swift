import RawFX
/// The virtual microphone (`IZoomVideoSDKVirtualAudioMic`): the app pushes PCM of any rate,
/// channel count and chunk size; the adapter runs the audio chain, converts to 16-bit
/// little-endian mono at `targetRate` (appending `resample=rate=R:channels=mono` when the
/// chain's output is not that already) and sends chunks of exactly 10 ms
/// (targetRate / 100 · 2 bytes) with `send(_:dataLength:sampleRate:channel:)`.
///
/// Chunks are paced by the audio's own timestamps (see `AudioPacing`) and sent from the
/// hook's one sender thread: the monotonic clock (`.worker`) or the app's own clock (`pump`)
/// decides when each chunk goes. Audio pushed outside onMicStartSend…onMicStopSend is refused and never sent; at
/// onMicStopSend the chunks still waiting are discarded (counted as drops) and, once it
/// returns, nothing more is sent.
public final class VirtualMicAdapter: SDKVirtualAudioMic, Sendable {
    let publisher: AudioPublisher<any SDKAudioSender>
    public let registry: PluginRegistry
    public let targetRate: Int
    /// Initialize/start/stop events, as a callback and as streams.
    public let lifecycle = LifecycleEvents()

    /// - Parameters:
    ///   - chain: audio chain text; empty: only the conversion.
    ///   - targetRate: the rate sent to the SDK (a mono rate the SDK takes; 48000 by default).
    ///   - pacing: who sends the chunks, and when.
    ///   - queueMilliseconds: audio the chunk queue holds before it grows (an overflow).
    public init(chain: String = "", registry: PluginRegistry, targetRate: Int = 48000,
                pacing: AudioPacing = .worker, queueMilliseconds: Int = 10_000) throws(ChainError) {
        guard SDKAudioRates.mono.contains(targetRate) else {
            throw .contract("the virtual mic cannot send \(targetRate) Hz: the SDK's audio sender takes mono at \(SDKAudioRates.mono.sorted().map(String.init).joined(separator: ", ")) Hz")
        }
        self.registry = registry
        self.targetRate = targetRate
        let audioChain = try AudioChain(specs: chain.isEmpty ? [] : FilterSpec.parseChain(chain), registry: registry)
        publisher = AudioPublisher(name: "virtualMic", chain: audioChain, registry: registry, targetRate: targetRate,
                                   pacing: pacing, queueMilliseconds: queueMilliseconds) { sender, data, length, rate in
            let status = sender.send(data, dataLength: length, sampleRate: rate, channel: .mono)
            return status == .success ? .sent : .rejected(code: status.rawValue, name: status.description)
        }
    }

    deinit {
        publisher.close()
        lifecycle.finish()
    }

    // MARK: SDK callbacks

    /// `onMicInitialize` [SDK thread]: keeps the sender.
    public func onMicInitialize(_ sender: any SDKAudioSender) {
        publisher.gate.initialize(sender)
        lifecycle.emit(.micInitialized)
    }

    /// `onMicStartSend` [SDK thread]: audio is sent from now on.
    public func onMicStartSend() {
        publisher.start()
        lifecycle.emit(.micStarted)
    }

    /// `onMicStopSend` [SDK thread]: once it returns nothing more is sent.
    public func onMicStopSend() {
        publisher.stop()
        lifecycle.emit(.micStopped)
    }

    /// `onMicUninitialized` [SDK thread]: the sender is forgotten.
    public func onMicUninitialized() {
        publisher.uninitialize()
        lifecycle.emit(.micUninitialized)
    }

    // MARK: App side

    /// Pushes interleaved 16-bit PCM. `timestampMicroseconds`: the time of the first sample
    /// (nil continues from the previous push, as if the audio were contiguous).
    @discardableResult
    public func pushAudio(_ samples: UnsafePointer<Int16>, frameCount: Int, format: AudioFormat,
                          timestampMicroseconds: Int64? = nil) -> AudioPushStatus {
        publisher.push(samples: samples, frameCount: frameCount, format: format, timestampMicroseconds: timestampMicroseconds)
    }

    /// Pushes a block (its timestamp is the time of its first sample).
    @discardableResult
    public func pushAudio(_ block: AudioBlock) -> AudioPushStatus {
        publisher.push(samples: block.samples, frameCount: block.frameCount, format: block.format,
                       timestampMicroseconds: block.timestampMicroseconds)
    }

    /// `.caller` pacing: sends the chunks due at `now` (any monotonic microsecond clock;
    /// the first chunk is due at the first call) and returns when the next is due.
    @discardableResult
    public func pump(nowMicroseconds now: Int64) -> Int64? {
        // Only the caller's clock is set by pump; other pacings keep their own.
        guard publisher.pacing == .caller else { return nil }
        return publisher.pump(nowMicroseconds: now)
    }

    /// [any thread] Replaces the chain from the next push: negotiated here for the last
    /// push's format, the old chain's pending samples flushed first, filter figures carried.
    public func setChain(_ text: String) throws(ChainError) { try publisher.setChain(text) }

    /// [any thread] Sets a parameter (`"denoise.level"`) before the next push, keeping the filter's state.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) { try publisher.setParameter(address, value) }

    /// [any thread] Bypasses a stage, or re-enables it, from the next push.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try publisher.setBypass(stage, bypassed) }

    /// Who sends the chunks, and when.
    public var pacing: AudioPacing { publisher.pacing }
    /// Bytes of each chunk sent: targetRate / 100 · 2.
    public var chunkBytes: Int { publisher.chunkBytes }
    public var isSending: Bool { publisher.gate.state == .sending }
    public var queuedChunks: Int { publisher.queuedChunks }
    public var chunksSent: UInt64 { publisher.chunksSent }
    /// Times the pacer re-anchored its schedule (late pump, timestamp jump).
    public var reanchors: UInt64 { publisher.reanchors }
    public var lastRejection: String? { publisher.lastRejection }
    public var metrics: HookMetrics { publisher.metrics }

    /// Stops sending and refuses everything from now on; ends the lifecycle streams.
    public func close() {
        publisher.close()
        lifecycle.finish()
    }
}

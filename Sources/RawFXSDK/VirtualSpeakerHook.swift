import RawFX
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One stream of the virtual speaker: the session mix, one user, or share audio.
public enum AudioStreamID: Hashable, Sendable, CustomStringConvertible {
    case mixed
    case oneWay(SDKUser)
    case shared

    /// The ABI's `rawfx_audio_source` for blocks of this stream.
    public var source: rawfx_audio_source {
        switch self {
        case .mixed: return rawfx_audio_source(RAWFX_AUDIO_SOURCE_MIXED)
        case .oneWay: return rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY)
        case .shared: return rawfx_audio_source(RAWFX_AUDIO_SOURCE_SHARED)
        }
    }

    public var userID: UInt64 { if case .oneWay(let u) = self { return u.userID } else { return 0 } }

    public var description: String {
        switch self {
        case .mixed: return "mixed"
        case .oneWay(let user): return "user \(user.userID)"
        case .shared: return "shared"
        }
    }
}

/// The virtual speaker (`IZoomVideoSDKVirtualAudioSpeaker`, and the receive-side audio
/// delegates of both SDKs): every stream (the mix, each user, share audio) runs through its
/// own instance of the audio chain, so stateful filters (denoise, re-blocking) never mix one
/// stream's history into another's. A stream's chain is created on its first audio
/// (negotiated for it there) and released when the user leaves (`onUserLeave` /
/// `removeStream`) or the hook closes, after every sample still in it (the latency tail
/// included) went to the sink. A change of rate or channel count drains the stream's chain
/// the same way and renegotiates it before the next block.
///
/// Run-time control, from any thread: `setParameter` and `setBypass` go to every stream's
/// running chain (each keeps its history: a denoiser's noise estimate survives a level
/// change) and to streams created later; `setChain` builds a new chain per stream,
/// negotiated on the calling thread for the stream's format, swapped in before that stream's
/// next block (the old one is flushed to the sink, then released off the SDK's thread);
/// per-filter metrics continue across the swap.
///
/// Processed audio goes to `sink(stream, block)`, valid only during that call, on the SDK's
/// callback thread (sync) or the worker (async). The SDK's buffer is never written.
///
/// Async mode: the callback copies the PCM into a `WorkQueue` slot (or, with `retainInAsync`,
/// keeps the SDK's object with `addRef` when `canAddRef()` allows, releasing it once
/// processed) and returns; the queue's worker runs the chains. Audio is never dropped: the
/// queue holds `capacity` / 5 callbacks (`capacity` ms of 10 ms callbacks on two streams) and grows past it, counting an overflow (an
/// error) each time it has to.
///
/// Unchecked: every field is immutable or synchronised (`Locked`, atomics, the queue) but
/// `sink`, the app's closure, called on one processing thread per stream at a time.
public final class VirtualSpeakerHook: SDKVirtualAudioSpeaker, SDKUserEvents, @unchecked Sendable {
    public typealias Sink = (AudioStreamID, AudioBlock) -> Void

    public let registry: PluginRegistry
    public let mode: ProcessingMode
    public let retainInAsync: Bool
    public let flushOnLeave: Bool
    private let sink: Sink
    let stats = HookStats(name: "virtualSpeaker")
    /// The chain text every stream runs and the run-time changes made since (replayed on a
    /// stream created later). Held while streams are created, so none misses a change.
    private let config: Locked<SpeakerConfig>
    private let streams = Locked<[AudioStreamID: SpeakerStream]>([:])
    private let queue: WorkQueue<SpeakerSlot>?
    private let closedFlag = Atomic<Bool>(false)
    /// Sync mode: callbacks of different streams may run at once on different SDK threads;
    /// their timings share one recorder, written under this lock (async: the worker writes
    /// `processing` alone, SDK threads `callback` under this lock).
    private let timingLock = Locked(())
    private let lastErrorStore = Locked<ChainError?>(nil)

    /// - Parameters:
    ///   - chain: audio chain text applied to every stream; empty passes audio through.
    ///   - retainInAsync: async mode keeps the SDK's buffer with addRef instead of copying it.
    ///   - flushOnLeave: on leave, push the stream's pending samples (padded) to the sink.
    public init(chain: String, registry: PluginRegistry, mode: ProcessingMode = .sync,
                retainInAsync: Bool = false, flushOnLeave: Bool = true, sink: @escaping Sink) throws(ChainError) {
        self.registry = registry
        let specs = chain.isEmpty ? [] : try FilterSpec.parseChain(chain)
        // Build one instance now so a bad chain fails here, not on the SDK's thread.
        _ = try AudioChain(specs: specs, registry: registry)
        config = Locked(SpeakerConfig(text: chain, specs: specs))
        self.mode = mode
        self.retainInAsync = retainInAsync
        self.flushOnLeave = flushOnLeave
        self.sink = sink
        if mode.isAsync {
            // Weak: the hook's deinit closes the queue, which joins its worker.
            let owner = WeakReference<VirtualSpeakerHook>()
            queue = WorkQueue(name: "rawfx-speaker", capacity: max(mode.capacity / 5, 1), whenFull: .grow,
                              makeSlot: { SpeakerSlot() }) { slot in
                guard let hook = owner.value else {
                    slot.releaseRetained()
                    return
                }
                hook.handle(slot)
            }
            owner.value = self
        } else {
            queue = nil
        }
    }

    deinit { close() }

    // MARK: SDK callbacks

    /// `onVirtualSpeakerMixedAudioReceived` [SDK audio thread].
    public func onVirtualSpeakerMixedAudioReceived(_ data: any AudioRawData) { receive(data, .mixed) }

    /// `onVirtualSpeakerOneWayAudioReceived` [SDK audio thread].
    public func onVirtualSpeakerOneWayAudioReceived(_ data: any AudioRawData, user: SDKUser) { receive(data, .oneWay(user)) }

    /// `onVirtualSpeakerSharedAudioReceived` [SDK audio thread].
    public func onVirtualSpeakerSharedAudioReceived(_ data: any AudioRawData) { receive(data, .shared) }

    /// The session delegate's onUserLeave: releases those users' streams.
    public func onUserLeave(_ users: [SDKUser]) {
        for user in users { removeStream(.oneWay(user)) }
    }

    /// [any thread] Releases one stream's chain (flushing it to the sink first when
    /// `flushOnLeave`). Async mode: queued after that stream's pending audio, so none of it is lost.
    public func removeStream(_ id: AudioStreamID) {
        guard let queue, let acquired = queue.acquire() else {
            finish(id)
            return
        }
        acquired.slot.kind = .remove
        acquired.slot.id = id
        if !queue.enqueue(acquired.slot) { queue.giveBack(acquired.slot) }
    }

    // MARK: Run-time control

    /// [any thread] Replaces the chain of every stream (and of streams created later). Each
    /// stream's new chain is built and negotiated for that stream's format here; the stream
    /// swaps it in before its next block, after flushing the old chain's pending samples to
    /// the sink. Throws (keeping the chain in force) if the text does not parse or a filter
    /// refuses to be created.
    public func setChain(_ text: String) throws(ChainError) {
        let specs = text.isEmpty ? [] : try FilterSpec.parseChain(text)
        _ = try AudioChain(specs: specs, registry: registry)
        try config.withLock { (c: inout SpeakerConfig) throws(ChainError) in
            var prepared: [(SpeakerStream, AudioChain)] = []
            for stream in streams.withLock({ Array($0.values) }) {
                let chain = try AudioChain(specs: specs, registry: registry)
                if let format = stream.knownFormat {
                    // A refusal here is the stream's to report: its next block renegotiates and counts it.
                    _ = try? chain.negotiate(format)
                }
                prepared.append((stream, chain))
            }
            for (stream, chain) in prepared {
                stream.slot.replace(with: chain) { new, old in new.carryMetrics(from: old) }
            }
            c = SpeakerConfig(text: text, specs: specs)
        }
    }

    /// [any thread] Sets a parameter (`"denoise.level"` or `"0.level"`) on every stream's
    /// chain, keeping each stream's filter state; streams created later start with it.
    /// Validated here: a bad address or value throws and changes nothing.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) {
        try edit(.parameter(address: address, value: value))
    }

    /// [any thread] Bypasses a stage (`"denoise"` or `"0"`) of every stream's chain, or
    /// re-enables it; see `ChainControl.setBypass`.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        try edit(.bypass(stage: stage, on: bypassed))
    }

    private func edit(_ change: SpeakerEdit) throws(ChainError) {
        try config.withLock { (c: inout SpeakerConfig) throws(ChainError) in
            let live = streams.withLock { Array($0.values) }
            // Validate on a chain of the same text, so a bad change throws before any stream has it.
            let first: ChainControl
            if let stream = live.first { first = stream.slot.latest } else { first = try AudioChain(specs: c.specs, registry: registry).control }
            try change.apply(to: first)
            for stream in live.dropFirst() { try change.apply(to: stream.slot.latest) }
            c.record(change)
        }
    }

    /// The chain text in force (or about to be, at each stream's next block).
    public var chainText: String { config.withLock { $0.text } }

    /// Streams with a live chain.
    public var activeStreams: [AudioStreamID] { streams.withLock { Array($0.keys) } }

    /// Hook figures; `filters` lists each stream's filters as "stream/filter".
    public var metrics: HookMetrics {
        let perStream = streams.withLock { $0.map { ($0.key, $0.value) } }
        var filters: [Metrics] = []
        for (id, stream) in perStream.sorted(by: { $0.0.description < $1.0.description }) {
            for var m in stream.slot.latest.metrics {
                m.name = "\(id)/\(m.name)"
                filters.append(m)
            }
        }
        return stats.snapshot(filters: filters, async: mode.isAsync)
    }

    /// Per-filter figures of one stream's chain (nil if it has no live chain); they continue
    /// across `setChain` for filters at the same position.
    public func metrics(for id: AudioStreamID) -> [Metrics]? {
        streams.withLock { $0[id] }?.slot.latest.metrics
    }

    /// Frames by which a stream's output lags its input (its chain's latency), once it has a chain.
    public func latency(for id: AudioStreamID) -> Int? {
        streams.withLock { $0[id] }?.slot.latest.latency
    }

    /// The last error a stream's chain reported, if any.
    public var lastError: ChainError? { lastErrorStore.withLock { $0 } }

    /// Async: blocks until the worker has processed everything queued so far (not for SDK threads).
    public func drain() { queue?.waitUntilIdle() }

    /// Async: callbacks waiting for the worker.
    public var queuedEntries: Int { queue?.count ?? 0 }

    /// Flushes every stream to the sink and releases all chains; stops the worker.
    /// Afterwards callbacks are ignored (counted as refused).
    public func close() {
        guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let queue {
            if let acquired = queue.acquire() {
                acquired.slot.kind = .closeAll
                if !queue.enqueue(acquired.slot) { queue.giveBack(acquired.slot) }
            }
            queue.close { $0.releaseRetained() }
        } else {
            for id in activeStreams { finish(id) }
        }
    }

    // MARK: Internals

    /// The SDK-named callbacks' adapter over `receive(_:from:)`: a block without a buffer or
    /// whole frames is counted as an error.
    private func receive(_ data: any AudioRawData, _ id: AudioStreamID) {
        guard let block = LentAudioBlock(data) else {
            stats.recordError()
            return
        }
        receive(block, from: id)
    }

    /// [SDK audio thread] The block-shaped core every entry calls (the SDK-named callbacks, the
    /// C API): runs the stream's chain on the block (sync) or queues it (async: copied, or kept
    /// through its reference with `retainInAsync`). The SDK's buffer is never written.
    public func receive(_ block: LentAudioBlock, from id: AudioStreamID) {
        let start = monotonicNanoseconds()
        guard !closedFlag.load(ordering: .acquiring) else {
            stats.recordRefused()
            return
        }
        let format = block.format
        let length = block.byteCount
        if let queue {
            guard let acquired = queue.acquire() else {
                stats.recordRefused()
                return
            }
            if acquired.grew { stats.recordOverflow() }
            let slot = acquired.slot
            slot.kind = .audio
            slot.id = id
            slot.format = format
            slot.timeStamp = block.timestampMilliseconds
            slot.length = length
            if retainInAsync && block.reference.keep() {
                slot.retained = block.reference
                slot.retainedBytes = block.bytes
            } else {
                slot.copy(block.bytes, length)
            }
            if !queue.enqueue(slot) {
                slot.releaseRetained()
                queue.giveBack(slot)
                stats.recordRefused()
                return
            }
            let elapsed = monotonicNanoseconds() &- start
            timingLock.withLock { _ in stats.callback.record(nanoseconds: elapsed) }
            return
        }
        // Two tries: if the user left while this block waited for the stream's lock, the
        // block starts the user's new stream.
        for _ in 0..<2 {
            guard let stream = stream(for: id, format: format) else { return }
            let processed = stream.running.withLock { running -> Bool in
                if running.closed { return false }
                process(stream, scratch: running.scratch, bytes: block.bytes, length: length, format: format,
                        timeStamp: block.timestampMilliseconds)
                return true
            }
            guard processed else { continue }
            let elapsed = monotonicNanoseconds() &- start
            timingLock.withLock { _ in stats.processing.record(nanoseconds: elapsed) }
            return
        }
        stats.recordError()
    }

    /// The stream's state, created on its first audio and negotiated for `format` there
    /// (with the run-time changes made so far). Creation (plugin instances) happens outside
    /// the map's lock, under the configuration's.
    private func stream(for id: AudioStreamID, format: AudioFormat) -> SpeakerStream? {
        if let s = streams.withLock({ $0[id] }) { return s }
        do {
            return try config.withLock { (c: inout SpeakerConfig) throws(ChainError) -> SpeakerStream in
                if let s = streams.withLock({ $0[id] }) { return s }
                let chain = try AudioChain(specs: c.specs, registry: registry)
                try chain.negotiate(format)
                for change in c.edits { try change.apply(to: chain.control) }
                let created = SpeakerStream(id: id, chain: chain)
                created.knownFormat = format
                streams.withLock { $0[id] = created }
                return created
            }
        } catch {
            stats.recordError()
            lastErrorStore.withLock { $0 = error }
            return nil
        }
    }

    /// Runs one callback's PCM through the stream's chain (inside `stream.running`).
    private func process(_ stream: SpeakerStream, scratch: SpeakerScratch, bytes: UnsafeRawPointer, length: Int, format: AudioFormat, timeStamp: UInt64) {
        let id = stream.id
        let frames = length / (2 * format.channels)
        // An odd address cannot be read as Int16: copy first (the SDK's buffer is never written).
        let samples: UnsafeMutablePointer<Int16>
        if Int(bitPattern: bytes) & 1 == 0 {
            samples = UnsafeMutablePointer(mutating: bytes.assumingMemoryBound(to: Int16.self))
        } else {
            samples = scratch.samples(count: length / 2)
            memcpy(samples, bytes, length)
        }
        let block = AudioBlock(samples: samples, frameCount: frames, format: format, source: id.source,
                               userID: id.userID, timestampMicroseconds: Int64(timeStamp) * 1000)
        do {
            // A chain from setChain: the old one's pending samples go out first.
            if stream.slot.hasPending { stream.slot.takePending { old in self.flush(old, of: id) } }
            let chain = stream.slot.current
            if let current = chain.inputFormat, current != format {
                // Rate or channels changed: everything of the old format comes out, then renegotiate.
                flush(chain, of: id)
            }
            try chain.process(block) { sink(id, $0) }
            if chain.inputFormat != stream.knownFormat { stream.knownFormat = chain.inputFormat }
        } catch {
            stats.recordError()
            lastErrorStore.withLock { $0 = error }
        }
    }

    /// Ends a stream's chain: every sample it was given comes out to the sink, with the
    /// stream's source and user, the samples still inside its filters (a denoiser's 10 ms of
    /// latency) included: the chain is drained with silence and its last block cut where the
    /// input ended (`AudioChain.drain`), so the stream's output has its input's length plus
    /// the chain's latency, the silence it began with.
    private func flush(_ chain: AudioChain, of id: AudioStreamID) {
        guard let format = chain.inputFormat else { return }
        do {
            try withUnsafeTemporaryAllocation(of: Int16.self, capacity: 1) { (none) throws(ChainError) in
                let template = AudioBlock(samples: none.baseAddress!, frameCount: 0, format: format, source: id.source,
                                          userID: id.userID, timestampMicroseconds: 0)
                try chain.drain(template: template) { sink(id, $0) }
            }
        } catch {
            stats.recordError()
            lastErrorStore.withLock { $0 = error }
        }
    }

    /// Flushes and releases one stream.
    private func finish(_ id: AudioStreamID) {
        guard let stream = streams.withLock({ $0.removeValue(forKey: id) }) else { return }
        stream.running.withLock { running in
            running.closed = true
            stream.slot.takePending { old in if self.flushOnLeave { self.flush(old, of: id) } }
            if flushOnLeave { flush(stream.slot.current, of: id) }
        }
    }

    /// [worker] Async mode: one queued callback or control entry.
    private func handle(_ slot: SpeakerSlot) {
        switch slot.kind {
        case .audio:
            let start = monotonicNanoseconds()
            defer { slot.releaseRetained() }
            guard let stream = stream(for: slot.id, format: slot.format) else { return }
            let bytes = slot.retained != nil ? slot.retainedBytes! : UnsafeRawPointer(slot.bytes)
            stream.running.withLock { running in
                process(stream, scratch: running.scratch, bytes: bytes, length: slot.length, format: slot.format,
                        timeStamp: slot.timeStamp)
            }
            stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
        case .remove:
            finish(slot.id)
        case .closeAll:
            for id in activeStreams { finish(id) }
        }
    }
}

/// The Meeting SDK delivers the same streams through its audio raw-data delegate.
extension VirtualSpeakerHook: SDKAudioRawDataDelegate {
    /// `onMixedAudioRawDataReceived` (both SDKs' delegates) [SDK audio thread].
    public func onMixedAudioRawDataReceived(_ data: any AudioRawData) { receive(data, .mixed) }

    /// Meeting SDK `onOneWayAudioRawDataReceived(data, user_id)` [SDK audio thread].
    public func onOneWayAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32) {
        receive(data, .oneWay(SDKUser(UInt64(userID))))
    }

    /// Meeting SDK `onShareAudioRawDataReceived`. Share audio is one stream whoever shares
    /// (`userID` names the sharer) [SDK audio thread].
    public func onShareAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32) { receive(data, .shared) }
}

/// The Video SDK delivers them through its session delegate, with its own spellings.
extension VirtualSpeakerHook: SDKVideoSDKAudioRawDataDelegate {
    /// Video SDK `onOneWayAudioRawDataReceived(AudioRawData*, IZoomVideoSDKUser*)` [SDK audio thread].
    public func onOneWayAudioRawDataReceived(_ data: any AudioRawData, user: SDKUser) { receive(data, .oneWay(user)) }

    /// Video SDK `onSharedAudioRawDataReceived` [SDK audio thread].
    public func onSharedAudioRawDataReceived(_ data: any AudioRawData) { receive(data, .shared) }
}

/// A run-time change made on the speaker, kept to be replayed on streams created later.
enum SpeakerEdit: Equatable {
    case parameter(address: String, value: String)
    case bypass(stage: String, on: Bool)

    /// Two changes to the same thing: only the later one needs replaying.
    func replaces(_ other: SpeakerEdit) -> Bool {
        switch (self, other) {
        case (.parameter(let a, _), .parameter(let b, _)): return a == b
        case (.bypass(let a, _), .bypass(let b, _)): return a == b
        default: return false
        }
    }

    func apply(to control: ChainControl) throws(ChainError) {
        switch self {
        case .parameter(let address, let value): try control.setParameter(address, value)
        case .bypass(let stage, let on): try control.setBypass(stage, on)
        }
    }
}

/// The speaker's chain and the changes made to it since it was set.
struct SpeakerConfig {
    var text: String
    var specs: [FilterSpec]
    var edits: [SpeakerEdit] = []

    mutating func record(_ change: SpeakerEdit) {
        edits.removeAll { change.replaces($0) }
        edits.append(change)
    }
}

/// A weak reference a worker holds to the hook that owns it (its way back without a retain
/// cycle), set in the owner's init.
/// Unchecked `Sendable`: `value` is written once in the owner's init, before anything can be
/// queued to the worker that reads it (the queue's hand-off orders the write before every
/// read), so the worker's per-item read takes no lock.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
}

/// One stream of the speaker.
///
/// `running` is held while the stream's chain runs (sync: the SDK thread of its callback;
/// async: the worker) and by `finish` (leave, close). `slot` hands chains over from
/// `setChain` (any thread) to the processing side.
final class SpeakerStream: Sendable {
    struct Running {
        /// `finish` ran: a block that waited for the lock starts a new stream instead.
        var closed = false
        let scratch = SpeakerScratch()
    }
    let id: AudioStreamID
    let slot: ChainSlot<AudioChain>
    let running = Locked(Running())
    /// The format the chain is negotiated for: written by the processing side when it
    /// changes, read by `setChain` to negotiate a new chain on the control side.
    private let formatBits = Atomic<UInt64>(0)

    init(id: AudioStreamID, chain: AudioChain) {
        self.id = id
        slot = ChainSlot(chain)
    }

    var knownFormat: AudioFormat? {
        get {
            let bits = formatBits.load(ordering: .acquiring)
            return bits == 0 ? nil : AudioFormat(sampleRate: Int(bits >> 16), channels: Int(bits & 0xffff))
        }
        set {
            formatBits.store(newValue.map { UInt64($0.sampleRate) << 16 | UInt64($0.channels) } ?? 0, ordering: .releasing)
        }
    }
}

/// An aligned copy of a misaligned SDK buffer, reused across blocks. Used under its stream's lock.
final class SpeakerScratch {
    private var aligned = UnsafeMutablePointer<Int16>.allocate(capacity: 2048)
    private var alignedCapacity = 2048

    deinit { aligned.deallocate() }

    func samples(count: Int) -> UnsafeMutablePointer<Int16> {
        if count > alignedCapacity {
            aligned.deallocate()
            aligned = .allocate(capacity: count)
            alignedCapacity = count
        }
        return aligned
    }
}

/// One entry of the async speaker's `WorkQueue`: a callback's PCM (copied, or the SDK's
/// object kept with addRef) or a control entry. Owned by one thread at a time: the producer
/// between `acquire` and `enqueue`, then the worker; the queue's lock orders the hand-over.
final class SpeakerSlot {
    enum Kind { case audio, remove, closeAll }
    var kind = Kind.audio
    var id = AudioStreamID.mixed
    var format = AudioFormat(sampleRate: 0, channels: 0)
    var timeStamp: UInt64 = 0
    var length = 0
    /// The copied PCM (16-byte aligned); grows to the largest callback seen, then is reused.
    private(set) var bytes = UnsafeMutableRawPointer.allocate(byteCount: 3840, alignment: 16)
    private var capacity = 3840
    /// The SDK's object kept with addRef, and its buffer (valid until `releaseRetained`).
    var retained: SDKObjectReference?
    var retainedBytes: UnsafeRawPointer?

    deinit {
        retained?.releaseRef()
        bytes.deallocate()
    }

    func copy(_ source: UnsafeRawPointer, _ count: Int) {
        if count > capacity {
            bytes.deallocate()
            bytes = .allocate(byteCount: count, alignment: 16)
            capacity = count
        }
        memcpy(bytes, source, count)
    }

    /// Releases the SDK's object, once.
    func releaseRetained() {
        guard let retained else { return }
        self.retained = nil
        retainedBytes = nil
        retained.releaseRef()
    }
}

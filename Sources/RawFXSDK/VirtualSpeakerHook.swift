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

/// The virtual speaker (`IZoomVideoSDKVirtualAudioSpeaker`): every stream (the mix, each user,
/// share audio) runs through its own instance of the audio chain, so stateful filters
/// (denoise, re-blocking) never mix one stream's history into another's. A stream's chain is
/// created on its first audio and released when the user leaves (`onUserLeave` /
/// `removeStream`), after its pending samples are flushed to the sink. A change of rate or
/// channel count flushes the stream's chain and renegotiates it before the next block.
///
/// Processed audio goes to `sink(stream, block)`, valid only during that call, on the SDK's
/// callback thread (sync) or the worker (async). The SDK's buffer is never written.
///
/// Async mode: the callback copies the PCM into a queue (or, with `retainInAsync`, keeps the
/// SDK's object with `addRef` when `canAddRef()` allows, releasing it once processed) and
/// returns; a worker runs the chains. Audio is never dropped: the queue holds `capacity` ms
/// and grows past it, counting an overflow (an error) each time it has to.
public final class VirtualSpeakerHook: SDKVirtualAudioSpeaker, SDKUserEvents, @unchecked Sendable {
    public typealias Sink = (AudioStreamID, AudioBlock) -> Void

    public let registry: PluginRegistry
    public let chainText: String
    public let mode: ProcessingMode
    public let retainInAsync: Bool
    public let flushOnLeave: Bool
    private let specs: [FilterSpec]
    private let sink: Sink
    let stats = HookStats(name: "virtualSpeaker")
    private let streams = Locked<[AudioStreamID: SpeakerStream]>([:])
    private let queue: AudioQueue?
    private var worker: HookThread?
    private let lifecycle = HookLock()
    /// Sync mode: callbacks of different streams may run at once; their timings share one recorder.
    private let timingLock = HookLock()
    private var closed = false
    private let closedFlag = Atomic<Bool>(false)

    /// - Parameters:
    ///   - chain: audio chain text applied to every stream; empty passes audio through.
    ///   - retainInAsync: async mode keeps the SDK's buffer with addRef instead of copying it.
    ///   - flushOnLeave: on leave, push the stream's pending samples (padded) to the sink.
    public init(chain: String, registry: PluginRegistry, mode: ProcessingMode = .sync,
                retainInAsync: Bool = false, flushOnLeave: Bool = true, sink: @escaping Sink) throws(ChainError) {
        self.registry = registry
        chainText = chain
        specs = chain.isEmpty ? [] : try FilterSpec.parseChain(chain)
        self.mode = mode
        self.retainInAsync = retainInAsync
        self.flushOnLeave = flushOnLeave
        self.sink = sink
        // Build one instance now so a bad chain fails here, not on the SDK's thread.
        if !specs.isEmpty { _ = try AudioChain(specs: specs, registry: registry) }
        queue = mode.isAsync ? AudioQueue(capacityMilliseconds: mode.capacity) : nil
        if let queue {
            // Weak: the hook's deinit closes the queue and joins this thread.
            worker = HookThread(name: "rawfx-speaker") { [weak self] in
                let scratch = SpeakerScratch()
                while let item = queue.pop(into: scratch) {
                    guard let self else {
                        if case .audio(_, _, _, _, let retained?) = item { retained.releaseRef() }
                        continue
                    }
                    self.handle(item, scratch: scratch)
                }
            }
        }
    }

    deinit { close() }

    // MARK: SDK callbacks

    public func onVirtualSpeakerMixedAudioReceived(_ data: any AudioRawData) { receive(data, .mixed) }

    public func onVirtualSpeakerOneWayAudioReceived(_ data: any AudioRawData, user: SDKUser) { receive(data, .oneWay(user)) }

    public func onVirtualSpeakerSharedAudioReceived(_ data: any AudioRawData) { receive(data, .shared) }

    /// The session delegate's onUserLeave: releases those users' streams.
    public func onUserLeave(_ users: [SDKUser]) {
        for user in users { removeStream(.oneWay(user)) }
    }

    /// Releases one stream's chain (flushing it to the sink first when `flushOnLeave`).
    /// Async mode: queued after that stream's pending audio, so none of it is lost.
    public func removeStream(_ id: AudioStreamID) {
        if let queue {
            queue.pushControl(.remove(id))
        } else {
            finish(id)
        }
    }

    /// Streams with a live chain.
    public var activeStreams: [AudioStreamID] { streams.withLock { Array($0.keys) } }

    /// Hook figures; `filters` lists each stream's filters as "stream/filter".
    public var metrics: HookMetrics {
        let perStream = streams.withLock { $0.map { ($0.key, $0.value) } }
        var filters: [Metrics] = []
        for (id, stream) in perStream.sorted(by: { $0.0.description < $1.0.description }) {
            for var m in stream.chain?.metrics ?? [] {
                m.name = "\(id)/\(m.name)"
                filters.append(m)
            }
        }
        return stats.snapshot(filters: filters, async: mode.isAsync)
    }

    /// Per-filter figures of one stream's chain (nil if it has no live chain).
    public func metrics(for id: AudioStreamID) -> [Metrics]? {
        streams.withLock { $0[id] }?.chain?.metrics
    }

    /// Async: blocks until the worker has processed everything queued so far (not for SDK threads).
    public func drain() { queue?.waitUntilEmpty() }

    /// Async: audio waiting for the worker, in bytes (copied) and entries.
    public var queuedEntries: Int { queue?.entryCount ?? 0 }

    /// Flushes every stream to the sink and releases all chains; stops the worker.
    /// Afterwards callbacks are ignored (counted as refused).
    public func close() {
        lifecycle.lock()
        if closed {
            lifecycle.unlock()
            return
        }
        closed = true
        closedFlag.store(true, ordering: .releasing)
        lifecycle.unlock()
        if let queue {
            queue.pushControl(.closeAll)
            queue.close()
            worker?.join()
            worker = nil
        } else {
            for id in activeStreams { finish(id) }
        }
    }

    // MARK: Internals

    private func receive(_ data: any AudioRawData, _ id: AudioStreamID) {
        let start = monotonicNanoseconds()
        let channels = data.channelNum
        let rate = data.sampleRate
        let length = data.bufferLen
        guard let buffer = data.buffer, channels > 0, rate > 0, length > 0, length % (2 * channels) == 0 else {
            stats.recordError()
            return
        }
        if let queue {
            let format = AudioFormat(sampleRate: rate, channels: channels)
            let retained = retainInAsync && data.canAddRef() && data.addRef()
            let grew = queue.push(id: id, format: format, timeStamp: data.timeStamp,
                                  bytes: retained ? nil : UnsafeRawPointer(buffer), length: length,
                                  retained: retained ? data : nil)
            if grew { stats.recordOverflow() }
            stats.callback.record(nanoseconds: monotonicNanoseconds() &- start)
            return
        }
        guard !closedFlag.load(ordering: .acquiring) else {
            stats.recordRefused()
            return
        }
        // Two tries: if the user left while this block waited for the stream's lock, the
        // block starts the user's new stream.
        for _ in 0..<2 {
            guard let stream = stream(for: id) else { return }
            stream.lock.lock()
            if stream.closed {
                stream.lock.unlock()
                continue
            }
            process(stream, bytes: UnsafeRawPointer(buffer), length: length,
                    format: AudioFormat(sampleRate: rate, channels: channels), timeStamp: data.timeStamp,
                    scratch: stream.scratch)
            stream.lock.unlock()
            timingLock.lock()
            stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
            timingLock.unlock()
            return
        }
        stats.recordError()
    }

    /// The stream's state, created on its first audio. Creation (plugin instances) happens
    /// outside the map's lock.
    private func stream(for id: AudioStreamID) -> SpeakerStream? {
        if let s = streams.withLock({ $0[id] }) { return s }
        let created: SpeakerStream
        do {
            created = try SpeakerStream(id: id, chain: specs.isEmpty ? nil : AudioChain(specs: specs, registry: registry))
        } catch {
            stats.recordError()
            return nil
        }
        return streams.withLock { map in
            if let existing = map[id] { return existing }
            map[id] = created
            return created
        }
    }

    /// Runs one callback's PCM through the stream's chain (lock held, or on the worker).
    private func process(_ stream: SpeakerStream, bytes: UnsafeRawPointer, length: Int, format: AudioFormat,
                         timeStamp: UInt64, scratch: SpeakerScratch) {
        let frames = length / (2 * format.channels)
        // An odd address cannot be read as Int16: copy first (the SDK's buffer is never written).
        let samples: UnsafeMutablePointer<Int16>
        if Int(bitPattern: bytes) & 1 == 0 {
            samples = UnsafeMutablePointer(mutating: bytes.assumingMemoryBound(to: Int16.self))
        } else {
            samples = scratch.samples(count: length / 2)
            memcpy(samples, bytes, length)
        }
        let id = stream.id
        let block = AudioBlock(samples: samples, frameCount: frames, format: format, source: id.source,
                               userID: id.userID, timestampMicroseconds: Int64(timeStamp) * 1000)
        guard let chain = stream.chain else {
            sink(id, block)
            return
        }
        do {
            if let current = chain.inputFormat, current != format {
                // Rate or channels changed: finish the old format's blocks, then renegotiate.
                try chain.flush { sink(id, $0) }
            }
            try chain.process(block) { sink(id, $0) }
        } catch {
            stats.recordError()
            stream.lastError = error
        }
    }

    /// Flushes and releases one stream.
    private func finish(_ id: AudioStreamID) {
        guard let stream = streams.withLock({ $0.removeValue(forKey: id) }) else { return }
        stream.lock.lock()
        defer { stream.lock.unlock() }
        stream.closed = true
        if flushOnLeave, let chain = stream.chain, chain.inputFormat != nil {
            do { try chain.flush { sink(id, $0) } } catch {
                stats.recordError()
            }
        }
    }

    /// The worker's side of async mode.
    private func handle(_ item: AudioQueue.Item, scratch: SpeakerScratch) {
        switch item {
        case .audio(let id, let format, let timeStamp, let length, let retained):
            let start = monotonicNanoseconds()
            defer {
                if let retained { retained.releaseRef() }
            }
            guard let stream = stream(for: id) else { return }
            stream.lock.lock()
            let bytes: UnsafeRawPointer
            if let retained {
                guard let b = retained.buffer else {
                    stream.lock.unlock()
                    stats.recordError()
                    return
                }
                bytes = UnsafeRawPointer(b)
            } else {
                bytes = UnsafeRawPointer(scratch.copied)
            }
            process(stream, bytes: bytes, length: length, format: format, timeStamp: timeStamp, scratch: scratch)
            stream.lock.unlock()
            stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
        case .remove(let id):
            finish(id)
        case .closeAll:
            for id in activeStreams { finish(id) }
        }
    }
}

/// The Meeting SDK delivers the same streams through its audio raw-data delegate.
extension VirtualSpeakerHook: SDKAudioRawDataDelegate {
    public func onMixedAudioRawDataReceived(_ data: any AudioRawData) { onVirtualSpeakerMixedAudioReceived(data) }

    public func onOneWayAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32) {
        onVirtualSpeakerOneWayAudioReceived(data, user: SDKUser(UInt64(userID)))
    }

    /// Share audio is one stream whoever shares (`userID` names the sharer).
    public func onShareAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32) { onVirtualSpeakerSharedAudioReceived(data) }
}

/// One stream's chain and its lock (held while the chain runs; taken by leave to flush).
final class SpeakerStream: @unchecked Sendable {
    let id: AudioStreamID
    let chain: AudioChain?
    let lock = HookLock()
    var closed = false
    var lastError: ChainError?
    let scratch = SpeakerScratch()

    init(id: AudioStreamID, chain: AudioChain?) {
        self.id = id
        self.chain = chain
    }
}

/// Scratch memory reused across blocks: an aligned copy of a misaligned SDK buffer, and the
/// async worker's copy of a queued entry.
final class SpeakerScratch: @unchecked Sendable {
    private(set) var copied = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
    private var copiedCapacity = 4096
    private var aligned = UnsafeMutablePointer<Int16>.allocate(capacity: 2048)
    private var alignedCapacity = 2048

    deinit {
        copied.deallocate()
        aligned.deallocate()
    }

    func samples(count: Int) -> UnsafeMutablePointer<Int16> {
        if count > alignedCapacity {
            aligned.deallocate()
            aligned = .allocate(capacity: count)
            alignedCapacity = count
        }
        return aligned
    }

    func reserveCopy(_ bytes: Int) -> UnsafeMutableRawPointer {
        if bytes > copiedCapacity {
            copied.deallocate()
            copied = .allocate(byteCount: bytes, alignment: 16)
            copiedCapacity = bytes
        }
        return copied
    }
}

/// The async speaker's queue: PCM copied into a byte ring (or retained SDK objects), plus
/// control entries (remove a stream, close). Never drops: when an entry does not fit, the
/// ring (or the entry list) doubles and `push` reports the overflow.
final class AudioQueue: @unchecked Sendable {
    enum Item {
        case audio(AudioStreamID, AudioFormat, UInt64, Int, (any AudioRawData)?)
        case remove(AudioStreamID)
        case closeAll
    }

    private struct Entry {
        var kind: UInt8 = 0          // 0 audio, 1 remove, 2 close all
        var id: AudioStreamID = .mixed
        var format = AudioFormat(sampleRate: 0, channels: 0)
        var timeStamp: UInt64 = 0
        var offset = 0
        var length = 0
        var retained: (any AudioRawData)?
    }

    private let lock = HookLock()
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private var head = 0
    private var tail = 0
    private var entries: [Entry]
    private var first = 0
    private var count = 0
    private var closed = false
    private var busy = false
    /// Queued entries whose PCM is in the ring.
    private var byteEntries = 0

    /// `capacityMilliseconds` of 48 kHz stereo (192 bytes per ms), in entries of 5 ms or more.
    init(capacityMilliseconds: Int) {
        capacity = max(capacityMilliseconds, 10) * 192
        storage = .allocate(byteCount: capacity, alignment: 16)
        entries = Array(repeating: Entry(), count: max(capacityMilliseconds / 5, 16) + 16)
    }

    deinit {
        // Retained objects left behind (close without drain) are released here.
        for i in 0..<entries.count { entries[i].retained?.releaseRef() }
        storage.deallocate()
    }

    var entryCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    /// [SDK thread] Queues one callback's audio: a copy of `bytes`, or `retained` (already
    /// addRef'd). Returns true when the queue had to grow (an overflow).
    func push(id: AudioStreamID, format: AudioFormat, timeStamp: UInt64, bytes: UnsafeRawPointer?, length: Int,
              retained: (any AudioRawData)?) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else {
            retained?.releaseRef()
            return false
        }
        var grew = false
        if count == entries.count {
            growEntries()
            grew = true
        }
        var offset = 0
        if let bytes {
            if let o = reserve(length) {
                offset = o
            } else {
                growStorage(atLeast: length)
                grew = true
                offset = reserve(length)!
            }
            memcpy(storage + offset, bytes, length)
            byteEntries += 1
        }
        let index = (first + count) % entries.count
        entries[index] = Entry(kind: 0, id: id, format: format, timeStamp: timeStamp,
                               offset: bytes == nil ? -1 : offset, length: length, retained: retained)
        count += 1
        lock.broadcast()
        return grew
    }

    func pushControl(_ item: Item) {
        lock.lock()
        defer { lock.unlock() }
        guard !closed || { if case .closeAll = item { return true } else { return false } }() else { return }
        if count == entries.count { growEntries() }
        let index = (first + count) % entries.count
        switch item {
        case .remove(let id): entries[index] = Entry(kind: 1, id: id, offset: -1)
        default: entries[index] = Entry(kind: 2, offset: -1)
        }
        count += 1
        lock.broadcast()
    }

    /// [worker] The next item, its PCM copied into `scratch.copied`; nil once closed and empty.
    func pop(into scratch: SpeakerScratch) -> Item? {
        lock.lock()
        defer { lock.unlock() }
        busy = false
        lock.broadcast()
        while count == 0 {
            if closed { return nil }
            lock.wait()
        }
        var entry = entries[first]
        entries[first].retained = nil
        first = (first + 1) % entries.count
        count -= 1
        busy = true
        switch entry.kind {
        case 1: return .remove(entry.id)
        case 2: return .closeAll
        default:
            if entry.offset >= 0 {
                memcpy(scratch.reserveCopy(entry.length), storage + entry.offset, entry.length)
                head = entry.offset + entry.length
                byteEntries -= 1
            }
            if count == 0 {
                head = 0
                tail = 0
            }
            let retained = entry.retained
            entry.retained = nil
            return .audio(entry.id, entry.format, entry.timeStamp, entry.length, retained)
        }
    }

    /// Blocks until every queued item has been processed.
    func waitUntilEmpty() {
        lock.lock()
        defer { lock.unlock() }
        while (count > 0 || busy) && !(closed && count == 0) { lock.wait() }
    }

    func close() {
        lock.lock()
        closed = true
        lock.broadcast()
        lock.unlock()
    }

    /// A contiguous region of `n` bytes in the ring, or nil.
    private func reserve(_ n: Int) -> Int? {
        if byteEntries == 0 {
            head = 0
            tail = 0
        }
        if tail >= head {
            if capacity - tail >= n {
                defer { tail += n }
                return tail
            }
            if n < head {
                tail = n
                return 0
            }
            return nil
        }
        if head - tail > n {
            defer { tail += n }
            return tail
        }
        return nil
    }

    private func growEntries() {
        var grown = Array(repeating: Entry(), count: entries.count * 2)
        for i in 0..<count { grown[i] = entries[(first + i) % entries.count] }
        entries = grown
        first = 0
    }

    /// Doubles the ring (at least) and compacts the pending PCM to its start.
    private func growStorage(atLeast n: Int) {
        var newCapacity = capacity * 2
        while newCapacity < capacity + n { newCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        var offset = 0
        for i in 0..<count {
            let index = (first + i) % entries.count
            guard entries[index].offset >= 0 else { continue }
            memcpy(grown + offset, storage + entries[index].offset, entries[index].length)
            entries[index].offset = offset
            offset += entries[index].length
        }
        storage.deallocate()
        storage = grown
        capacity = newCapacity
        head = 0
        tail = offset
    }
}

import RawFX
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// What happened to audio pushed to the virtual mic or production studio.
public enum AudioPushStatus: Sendable, Equatable, CustomStringConvertible {
    /// Processed; `chunks` whole 10 ms chunks became ready (queued for pacing, or sent in
    /// `.immediate` pacing).
    case accepted(chunks: Int)
    /// Pushed outside start/stop: not processed, never sent.
    case refused(Refusal)
    /// A filter failed; nothing of this push was sent.
    case failed(ChainError)
    /// The input is malformed (no samples, zero rate or channels).
    case invalid(String)

    public var isAccepted: Bool { if case .accepted = self { return true } else { return false } }

    public var description: String {
        switch self {
        case .accepted(let n): return "accepted (\(n) chunk\(n == 1 ? "" : "s") of 10 ms ready)"
        case .refused(let why): return "refused, not sent: \(why)"
        case .failed(let error): return "not sent: \(error)"
        case .invalid(let why): return "not sent: \(why)"
        }
    }
}

/// Who calls the audio sender, and when.
public enum AudioPacing: Sendable, Equatable {
    /// A sender thread the hook owns, started at onMicStartSend / onStartSend and joined at
    /// the stop: it sends each 10 ms chunk when the monotonic clock reaches the chunk's time
    /// (its audio timestamp, anchored to the clock at the first chunk). The pushing thread
    /// never waits.
    case worker
    /// Nobody sends until the app calls `pump(nowMicroseconds:)` from its own clock (a
    /// timer, a media loop, or a test's fake clock); each call sends the chunks due by then.
    case caller
    /// Each chunk is sent on the pushing thread as soon as it is complete: for an app that
    /// already pushes in real time.
    case immediate
}

/// Chain → conversion to 16-bit mono at the target rate → 10 ms chunks → paced sends, for
/// the virtual mic and production studio's audio.
///
/// `@unchecked Sendable`: the pushing thread's fields are guarded by `pushLock`, the chunk
/// queue, pacer and hosted work by `queueLock`, the worker handle by `workerLock`; the rest
/// is immutable, atomic or `Locked`.
final class AudioPublisher<Sender>: @unchecked Sendable {
    typealias Send = (Sender, UnsafeMutablePointer<CChar>, Int, Int) -> SendOutcome
    enum SendOutcome { case sent, rejected(code: Int32, name: String) }

    let gate = SendGate<Sender>()
    let stats: HookStats
    let targetRate: Int
    let chunkFrames: Int
    let pacing: AudioPacing
    let registry: PluginRegistry
    private let sendBody: Send

    /// The app's chain (empty: only the conversion), handed over from `setChain` and taken
    /// at the start of a push.
    let chain: ChainSlot<AudioChain>
    /// The format of the last push, for `setChain` to negotiate on the control side: written
    /// under `pushLock` when it changes.
    private let lastInput = Locked<AudioFormat?>(nil)

    // Pushing thread (serialized by pushLock: several app threads may push).
    private let pushLock = HookLock()
    private var seenInput: AudioFormat?
    private var pushEpoch: UInt64 = 0
    private var convert: AudioChain?
    private var convertFrom: AudioFormat?
    private var partial: UnsafeMutablePointer<Int16>
    private var partialFill = 0
    private var partialTimestamp: Int64 = 0
    private var clockBase: Int64?
    private var clockSamples: Int64 = 0
    private var nextInputTimestamp: Int64 = 0
    private var resetPending = false

    // Chunks ready to send, and the pacer (guarded by queueLock).
    private let queueLock = HookLock()
    private var chunks: UnsafeMutablePointer<Int16>
    private var chunkTimes: UnsafeMutablePointer<Int64>
    private var chunkCapacity: Int
    private var chunkFirst = 0
    private var chunkCount = 0
    private var anchorWall: Int64?
    private var anchorMedia: Int64 = 0
    private var lastMedia: Int64 = 0
    private let sendBuffer: UnsafeMutablePointer<Int16>
    private var sendBusy = false
    private var workerRunning = false
    private var worker: HookThread?
    private let workerLock = HookLock()
    private let reanchorCount = Atomic<UInt64>(0)
    private let sentChunks = Atomic<UInt64>(0)
    private let lastOutcome = Locked<String?>(nil)
    /// The conversion chain, for metrics from any thread (written when it is made).
    private let convertForMetrics = Locked<AudioChain?>(nil)

    // Work other threads run on the pacer thread (`runOnSender`), guarded by queueLock.
    private var hosted: (() -> Void)?
    private var hostedPosted: UInt64 = 0
    private var hostedDone: UInt64 = 0

    /// How late a chunk may be before the pacer re-anchors instead of bursting to catch up.
    let maxLatenessMicroseconds: Int64 = 100_000
    /// A forward jump in media time beyond this re-anchors instead of waiting.
    let maxGapMicroseconds: Int64 = 2_000_000

    init(name: String, chain: AudioChain, registry: PluginRegistry, targetRate: Int, pacing: AudioPacing,
         queueMilliseconds: Int, send: @escaping Send) {
        stats = HookStats(name: name)
        self.targetRate = targetRate
        chunkFrames = targetRate / 100
        self.pacing = pacing
        self.registry = registry
        sendBody = send
        self.chain = ChainSlot(chain)
        partial = .allocate(capacity: chunkFrames)
        partial.initialize(repeating: 0, count: chunkFrames)
        chunkCapacity = max(queueMilliseconds / 10, 8)
        chunks = .allocate(capacity: chunkCapacity * chunkFrames)
        chunkTimes = .allocate(capacity: chunkCapacity)
        sendBuffer = .allocate(capacity: chunkFrames)
        sendBuffer.initialize(repeating: 0, count: chunkFrames)
    }

    deinit {
        partial.deallocate()
        chunks.deallocate()
        chunkTimes.deallocate()
        sendBuffer.deallocate()
    }

    var chunkBytes: Int { chunkFrames * 2 }
    var reanchors: UInt64 { reanchorCount.load(ordering: .relaxed) }
    var chunksSent: UInt64 { sentChunks.load(ordering: .relaxed) }
    var lastRejection: String? { lastOutcome.withLock { $0 } }

    var metrics: HookMetrics {
        let convert = convertForMetrics.withLock { $0 }
        let filters = chain.latest.metrics + (convert?.metrics.map { var m = $0; m.name += " (to \(targetRate) Hz mono)"; return m } ?? [])
        return stats.snapshot(filters: filters, async: false)
    }

    var queuedChunks: Int {
        queueLock.lock()
        defer { queueLock.unlock() }
        return chunkCount
    }

    // MARK: Lifecycle

    func start() {
        guard gate.start() else { return }
        pushLock.lock()
        resetPending = true
        pushLock.unlock()
        if pacing == .worker { startWorker() }
    }

    /// Stops sending: once this returns no chunk is sent; queued chunks are discarded
    /// (counted as drops) and the worker is joined.
    func stop() {
        gate.stop()
        stopWorker()
        discardQueued()
    }

    func uninitialize() {
        gate.uninitialize()
        stopWorker()
        discardQueued()
    }

    func close() {
        gate.close()
        stopWorker()
        discardQueued()
    }

    private func discardQueued() {
        queueLock.lock()
        let n = chunkCount
        chunkCount = 0
        chunkFirst = 0
        anchorWall = nil
        queueLock.unlock()
        for _ in 0..<n { stats.recordDrop() }
    }

    private func startWorker() {
        workerLock.lock()
        defer { workerLock.unlock() }
        guard worker == nil else { return }
        queueLock.lock()
        workerRunning = true
        queueLock.unlock()
        worker = HookThread(name: "rawfx-\(stats.name)") { [self] in
            while true {
                let now = Int64(monotonicNanoseconds() / 1000)
                let next = pump(nowMicroseconds: now)
                queueLock.lock()
                runHostedLocked()
                if !workerRunning {
                    queueLock.unlock()
                    return
                }
                // Until the next chunk is due, or a push, hosted work or stop signals; 1 ms
                // when another thread holds the sender, 100 ms when idle.
                let wake = next ?? (chunkCount > 0 ? now + 1_000 : now + 100_000)
                if hosted == nil { queueLock.wait(untilMonotonicNanoseconds: UInt64(max(wake, now)) * 1000) }
                runHostedLocked()
                queueLock.unlock()
            }
        }
    }

    private func stopWorker() {
        workerLock.lock()
        let w = worker
        worker = nil
        workerLock.unlock()
        guard let w else { return }
        queueLock.lock()
        workerRunning = false
        queueLock.broadcast()
        queueLock.unlock()
        w.join()
    }

    // MARK: Run-time control (any thread)

    /// Replaces the app's chain from the next push, negotiated here for the last push's
    /// format (a refusal throws and keeps the chain in force); the old chain's pending
    /// samples are flushed into the chunks first, and it is released off the pushing thread.
    func setChain(_ text: String) throws(ChainError) {
        let new = try AudioChain(specs: text.isEmpty ? [] : FilterSpec.parseChain(text), registry: registry)
        let format = lastInput.withLock { $0 }
        try chain.replace(with: new) { (new, old) throws(ChainError) in
            if let format { try new.negotiate(format) }
            new.carryMetrics(from: old)
        }
    }

    /// `AudioChain.setParameter` on the newest chain: applied before the next push, state kept.
    func setParameter(_ address: String, _ value: String) throws(ChainError) { try chain.latest.setParameter(address, value) }

    /// `AudioChain.setBypass` on the newest chain.
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try chain.latest.setBypass(stage, bypassed) }

    /// [any thread] Runs `body` on the thread that sends the audio chunks when that is the
    /// pacer (`.worker` pacing, while it runs), and waits for it; otherwise on the calling
    /// thread. Production studio sends its video through here, so one thread calls the PS
    /// sender for both. The pacer runs hosted work between two chunks, and before it exits.
    func runOnSender(_ body: () -> Void) {
        guard pacing == .worker else { return body() }
        withoutActuallyEscaping(body) { body in
            queueLock.lock()
            while hosted != nil && workerRunning { queueLock.wait() }
            guard workerRunning else {
                queueLock.unlock()
                body()
                return
            }
            hosted = body
            hostedPosted += 1
            let ticket = hostedPosted
            queueLock.broadcast()
            while hostedDone < ticket { queueLock.wait() }
            queueLock.unlock()
        }
    }

    /// [pacer] Runs the hosted work waiting, if any (queueLock held on entry and on return).
    private func runHostedLocked() {
        guard let work = hosted else { return }
        queueLock.unlock()
        work()
        queueLock.lock()
        hosted = nil
        hostedDone += 1
        queueLock.broadcast()
    }

    // MARK: Push (the app's thread)

    /// Runs `block` through the chain, converts, cuts 10 ms chunks and queues them (or sends
    /// them, with `.immediate` pacing). `timestampMicroseconds` nil: continue the sample clock.
    func push(samples: UnsafePointer<Int16>, frameCount: Int, format: AudioFormat,
              timestampMicroseconds: Int64?) -> AudioPushStatus {
        if let refusal = gate.refusal {
            stats.recordRefused()
            return .refused(refusal)
        }
        guard frameCount > 0, format.sampleRate > 0, format.channels > 0 else {
            stats.recordError()
            return .invalid("no samples, or a zero rate or channel count (\(frameCount) frames, \(format))")
        }
        let start = monotonicNanoseconds()
        let epoch = gate.epoch
        pushLock.lock()
        pushEpoch = epoch
        var ready = 0
        var failure: ChainError?
        if chain.hasPending {
            // A chain from setChain: the old one's pending samples go out first.
            chain.takePending { old in
                guard old.inputFormat != nil else { return }
                do throws(ChainError) {
                    try old.flush { out in
                        if failure == nil {
                            do throws(ChainError) { ready += try self.convertAndChunk(out) } catch { failure = error }
                        }
                    }
                } catch {
                    failure = error
                }
            }
        }
        let userChain = chain.current
        if format != seenInput {
            seenInput = format
            lastInput.withLock { $0 = format }
        }
        if resetPending {
            resetPending = false
            userChain.reset()
            convert?.reset()
            partialFill = 0
            clockBase = nil
        }
        let ts = timestampMicroseconds ?? nextInputTimestamp
        nextInputTimestamp = ts + Int64(frameCount) * 1_000_000 / Int64(format.sampleRate)
        let block = AudioBlock(samples: UnsafeMutablePointer(mutating: samples), frameCount: frameCount, format: format,
                               source: rawfx_audio_source(RAWFX_AUDIO_SOURCE_MIC), timestampMicroseconds: ts)
        do throws(ChainError) {
            try userChain.process(block) { out in
                if failure == nil {
                    do throws(ChainError) { ready += try self.convertAndChunk(out) } catch { failure = error }
                }
            }
        } catch {
            failure = error
        }
        // Recorded under the lock: pushes from several app threads share one recorder.
        if failure == nil { stats.processing.record(nanoseconds: monotonicNanoseconds() &- start) }
        pushLock.unlock()
        if let failure {
            stats.recordError()
            return .failed(failure)
        }
        switch pacing {
        case .immediate: _ = pump(nowMicroseconds: .max, epoch: epoch)
        case .worker:
            if ready > 0 {
                queueLock.lock()
                queueLock.broadcast()
                queueLock.unlock()
            }
        case .caller: break
        }
        return .accepted(chunks: ready)
    }

    /// Converts one block to mono at the target rate when needed, then cuts chunks.
    private func convertAndChunk(_ block: AudioBlock) throws(ChainError) -> Int {
        let target = AudioFormat(sampleRate: targetRate, channels: 1)
        if block.format == target { return try chunk(block) }
        if convert == nil || convertFrom != block.format {
            var flushed = 0
            if let convert, convertFrom != nil {
                // A format change: finish the old format's samples first.
                var failure: ChainError?
                try convert.flush { out in
                    do throws(ChainError) { flushed += try self.chunk(out) } catch { failure = error }
                }
                if let failure { throw failure }
            }
            if convert == nil {
                let c = try AudioChain(specs: [FilterSpec("resample", [("rate", String(targetRate)), ("channels", "mono")])],
                                       registry: registry)
                convert = c
                convertForMetrics.withLock { $0 = c }
            }
            convertFrom = block.format
            return try flushed + convertAndChunkBlock(block)
        }
        return try convertAndChunkBlock(block)
    }

    private func convertAndChunkBlock(_ block: AudioBlock) throws(ChainError) -> Int {
        var ready = 0
        var failure: ChainError?
        try convert!.process(block) { out in
            do throws(ChainError) { ready += try self.chunk(out) } catch { failure = error }
        }
        if let failure { throw failure }
        return ready
    }

    /// Appends mono samples at the target rate to the partial chunk; queues whole chunks.
    private func chunk(_ block: AudioBlock) throws(ChainError) -> Int {
        guard block.format.channels == 1, block.format.sampleRate == targetRate else {
            throw .contract("the conversion produced \(block.format), the sender needs \(targetRate) Hz mono")
        }
        let rate = Int64(targetRate)
        // The sample clock: follows the blocks' timestamps, re-based on a jump over 20 ms.
        let expected = clockBase.map { $0 + clockSamples * 1_000_000 / rate }
        if expected == nil || abs(block.timestampMicroseconds - expected!) > 20_000 {
            clockBase = block.timestampMicroseconds
            clockSamples = 0
        }
        var offset = 0
        var ready = 0
        let frames = block.frameCount
        while offset < frames {
            if partialFill == 0 { partialTimestamp = clockBase! + clockSamples * 1_000_000 / rate }
            let take = min(frames - offset, chunkFrames - partialFill)
            (partial + partialFill).update(from: block.samples + offset, count: take)
            partialFill += take
            offset += take
            clockSamples += Int64(take)
            if partialFill == chunkFrames {
                enqueueChunk(partial, timestamp: partialTimestamp)
                partialFill = 0
                ready += 1
            }
        }
        return ready
    }

    private func enqueueChunk(_ samples: UnsafePointer<Int16>, timestamp: Int64) {
        queueLock.lock()
        defer { queueLock.unlock() }
        // Checked under the queue's lock, which `stop` takes after closing the gate: a chunk
        // made while onStopSend ran is either discarded by it or not queued at all.
        guard gate.state == .sending, gate.epoch == pushEpoch else {
            stats.recordDrop()
            return
        }
        if chunkCount == chunkCapacity {
            // Never drop audio: grow, and say so in the metrics.
            let grown = UnsafeMutablePointer<Int16>.allocate(capacity: chunkCapacity * 2 * chunkFrames)
            let grownTimes = UnsafeMutablePointer<Int64>.allocate(capacity: chunkCapacity * 2)
            for i in 0..<chunkCount {
                let index = (chunkFirst + i) % chunkCapacity
                (grown + i * chunkFrames).update(from: chunks + index * chunkFrames, count: chunkFrames)
                grownTimes[i] = chunkTimes[index]
            }
            chunks.deallocate()
            chunkTimes.deallocate()
            chunks = grown
            chunkTimes = grownTimes
            chunkCapacity *= 2
            chunkFirst = 0
            stats.recordOverflow()
        }
        let index = (chunkFirst + chunkCount) % chunkCapacity
        (chunks + index * chunkFrames).update(from: samples, count: chunkFrames)
        chunkTimes[index] = timestamp
        chunkCount += 1
    }

    // MARK: Pacing

    /// Sends every chunk due at `now` (microseconds on the pacing clock) and returns when the
    /// next one is due (nil: none queued). Never sleeps.
    @discardableResult
    func pump(nowMicroseconds now: Int64, epoch: UInt64? = nil) -> Int64? {
        while true {
            queueLock.lock()
            guard chunkCount > 0, !sendBusy else {
                queueLock.unlock()
                return nil
            }
            let media = chunkTimes[chunkFirst]
            if anchorWall == nil || media < lastMedia || media - lastMedia > maxGapMicroseconds {
                if anchorWall != nil { reanchorCount.add(1, ordering: .relaxed) }
                anchorWall = now == .max ? 0 : now
                anchorMedia = media
            }
            var due = anchorWall! + (media - anchorMedia)
            if now != .max {
                if due > now {
                    queueLock.unlock()
                    return due
                }
                if now - due > maxLatenessMicroseconds {
                    // Far behind (the pump was starved): shift the schedule instead of bursting.
                    anchorWall = now - (media - anchorMedia)
                    due = now
                    reanchorCount.add(1, ordering: .relaxed)
                }
            }
            sendBuffer.update(from: chunks + chunkFirst * chunkFrames, count: chunkFrames)
            chunkFirst = (chunkFirst + 1) % chunkCapacity
            chunkCount -= 1
            lastMedia = media
            sendBusy = true
            queueLock.unlock()

            let result = gate.send(epoch: epoch) { sender in
                sendBody(sender, UnsafeMutableRawPointer(sendBuffer).assumingMemoryBound(to: CChar.self), chunkBytes, targetRate)
            }
            queueLock.lock()
            sendBusy = false
            queueLock.unlock()
            switch result {
            case .success(.sent):
                sentChunks.add(1, ordering: .relaxed)
            case .success(.rejected(let code, let name)):
                stats.recordSendRejected()
                lastOutcome.withLock { $0 = "\(name) (\(code))" }
            case .failure:
                // Stopped meanwhile: the chunk is not sent.
                stats.recordDrop()
                return nil
            }
        }
    }
}

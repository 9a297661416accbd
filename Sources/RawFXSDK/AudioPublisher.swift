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

/// When the audio sender is called. Whatever the pacing, one thread calls it: the hook's
/// sender thread, the worker of its chunk queue (a `WorkQueue`), which lives as long as the
/// hook; production studio sends its video from there too.
public enum AudioPacing: Sendable, Equatable {
    /// Each 10 ms chunk goes when the monotonic clock reaches the chunk's time (its audio
    /// timestamp, anchored to the clock at the first chunk). The pushing thread never waits.
    case worker
    /// The app's clock decides: nothing is sent until the app calls `pump(nowMicroseconds:)`
    /// (a timer, a media loop, or a test's fake clock); each call returns once the chunks due
    /// by then are sent, with the time the next one is due.
    case caller
    /// Each chunk is sent as soon as it is complete, and the push returns once they are: for
    /// an app that already pushes in real time.
    case immediate
}

/// Chain → conversion to 16-bit mono at the target rate → 10 ms chunks → paced sends, for
/// the virtual mic and production studio's audio.
///
/// Unchecked: the pushing thread's fields are guarded by `pushLock`; the pacer's
/// shared state and the hosted work by `queueLock`; the schedule belongs to the sender thread
/// (the chunk queue's worker); the rest is immutable, atomic or `Locked`.
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
    private let pushLock = Locked(())
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

    /// The chunks ready to send: the one queue (`.grow`: audio is never dropped; growing past
    /// `queueMilliseconds` counts an overflow). Its worker is THE sender thread: every chunk,
    /// and the work `runOnSender` hands it, goes out from there, whatever the pacing.
    private let chunkQueue: WorkQueue<AudioChunkSlot>

    // The pacer's shared state, guarded by queueLock (the sender thread waits on it).
    private let queueLock = Locked(())
    /// Chunks enqueued and not yet sent or dropped.
    private var pendingChunks = 0
    /// `.caller`: the app's clock, from `pump` (nil before the first pump).
    private var callerClock: Int64?
    /// The due time the sender thread is waiting for (what `pump` answers).
    private var waitingUntil: Int64?
    /// Set by a discard: the next chunk starts a new schedule.
    private var resetSchedule = false
    /// The sender thread, once it has run (so a stop called from inside a send does not wait for itself).
    private var senderThread: pthread_t?
    // Work other threads run on the sender thread (`runOnSender`).
    private var hosted: SenderWork?
    private var hostedTaken = false
    private var hostedPosted: UInt64 = 0
    private var hostedDone: UInt64 = 0

    // The schedule: the sender thread only.
    private var anchorWall: Int64?
    private var anchorMedia: Int64 = 0
    private var lastMedia: Int64 = 0

    private let reanchorCount = Atomic<UInt64>(0)
    private let sentChunks = Atomic<UInt64>(0)
    private let lastOutcome = Locked<String?>(nil)
    /// The conversion chain, for metrics from any thread (written when it is made).
    private let convertForMetrics = Locked<ChainControl?>(nil)

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
        // Weak: the adapters close the publisher from their deinit, which ends the sender thread.
        let owner = WeakReference<AudioPublisher<Sender>>()
        let frames = targetRate / 100
        chunkQueue = WorkQueue(name: "rawfx-\(name)", capacity: max(queueMilliseconds / 10, 8), whenFull: .grow,
                               makeSlot: { AudioChunkSlot(frames: frames) }) { slot in
            owner.value?.sendPaced(slot)
        }
        // Chunks are small (10 ms): a few made now cover the pump's hand-offs, where a slot can
        // still be on its way back to the free list when the next chunk is queued.
        chunkQueue.prefill(8)
        owner.value = self
    }

    deinit {
        partial.deallocate()
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

    /// Chunks waiting to be sent (queued, or waiting for their time on the sender thread).
    var queuedChunks: Int {
        queueLock.lock()
        defer { queueLock.unlock() }
        return pendingChunks
    }

    // MARK: Lifecycle

    func start() {
        guard gate.start() else { return }
        pushLock.lock()
        resetPending = true
        pushLock.unlock()
    }

    /// Stops sending: once this returns no chunk is sent; queued chunks are discarded
    /// (counted as drops).
    func stop() {
        gate.stop()
        discardQueued()
    }

    func uninitialize() {
        gate.uninitialize()
        discardQueued()
    }

    /// Refuses everything from now on and ends the sender thread.
    func close() {
        gate.close()
        discardQueued()
        chunkQueue.close()
    }

    /// The chunks still queued are dropped; the one the sender thread holds is dropped by it
    /// (the gate is closed), and this waits for that unless called from the sender thread.
    private func discardQueued() {
        let n = chunkQueue.discardQueued { _ in }
        for _ in 0..<n { stats.recordDrop() }
        queueLock.lock()
        pendingChunks -= n
        resetSchedule = true
        queueLock.broadcast()
        if !isSenderThread {
            while pendingChunks > 0 { queueLock.wait() }
        }
        queueLock.unlock()
    }

    /// [queueLock held] Whether the caller is the sender thread.
    private var isSenderThread: Bool {
        guard let senderThread else { return false }
        return pthread_equal(senderThread, pthread_self()) != 0
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

    /// `ChainControl.setParameter` on the newest chain: applied before the next push, state kept.
    func setParameter(_ address: String, _ value: String) throws(ChainError) { try chain.latest.setParameter(address, value) }

    /// `ChainControl.setBypass` on the newest chain.
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try chain.latest.setBypass(stage, bypassed) }

    /// [any thread] Runs `work` on the sender thread (the chunk queue's worker, which sends
    /// every audio chunk) and waits for it. Production studio sends its video through here, so
    /// one thread calls the PS sender for both, whatever the pacing. The sender thread runs
    /// hosted work between two chunks or while it waits for a chunk's time; when idle, a wake
    /// slot in the queue brings it. `work` is the caller's object, reused: nothing is allocated.
    func runOnSender(_ work: SenderWork) {
        queueLock.lock()
        if isSenderThread {
            queueLock.unlock()
            return work.run()
        }
        while hosted != nil { queueLock.wait() }
        hosted = work
        hostedTaken = false
        hostedPosted += 1
        let ticket = hostedPosted
        queueLock.broadcast()
        queueLock.unlock()
        var inline = false
        if let wake = chunkQueue.acquire() {
            wake.slot.wakeOnly = true
            if !chunkQueue.enqueue(wake.slot) { chunkQueue.giveBack(wake.slot) }
        } else {
            // Closed: no sender thread will come. Take the work back unless it started.
            queueLock.lock()
            if hostedDone < ticket && !hostedTaken {
                hosted = nil
                hostedDone += 1
                inline = true
                queueLock.broadcast()
            }
            queueLock.unlock()
        }
        if inline { return work.run() }
        queueLock.lock()
        while hostedDone < ticket { queueLock.wait() }
        queueLock.unlock()
    }

    /// `runOnSender` for a one-off closure (allocates its wrapper: not for a per-frame path).
    func runOnSender(_ body: @escaping () -> Void) { runOnSender(ClosureWork(body)) }

    /// [sender thread, queueLock held on entry and on return] Runs the hosted work waiting, if any.
    private func runHostedLocked() {
        guard let work = hosted, !hostedTaken else { return }
        hostedTaken = true
        queueLock.unlock()
        work.run()
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
        if pacing == .immediate && ready > 0 {
            // Sent as soon as complete: the push returns once the sender thread has sent them.
            queueLock.lock()
            while pendingChunks > 0 && !isSenderThread { queueLock.wait() }
            queueLock.unlock()
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
                convertForMetrics.withLock { $0 = c.control }
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

    /// [pushing thread] Queues one whole chunk for the sender thread.
    private func enqueueChunk(_ samples: UnsafePointer<Int16>, timestamp: Int64) {
        queueLock.lock()
        // Checked under the queue's lock, which a stop's discard takes after closing the gate:
        // a chunk made while onStopSend ran is either discarded by it or not queued at all.
        guard gate.state == .sending, gate.epoch == pushEpoch else {
            queueLock.unlock()
            stats.recordDrop()
            return
        }
        pendingChunks += 1
        queueLock.unlock()
        guard let acquired = chunkQueue.acquire() else {
            chunkDone()
            stats.recordDrop()
            return
        }
        // Never drop audio: past the capacity the queue grows, and the metrics say so.
        if acquired.grew { stats.recordOverflow() }
        let slot = acquired.slot
        slot.wakeOnly = false
        slot.samples.update(from: samples, count: chunkFrames)
        slot.timestamp = timestamp
        slot.epoch = pushEpoch
        if !chunkQueue.enqueue(slot) {
            chunkQueue.giveBack(slot)
            chunkDone()
            stats.recordDrop()
        }
    }

    private func chunkDone() {
        queueLock.lock()
        pendingChunks -= 1
        queueLock.broadcast()
        queueLock.unlock()
    }

    // MARK: Pacing

    /// `.caller` pacing [app thread]: the app's clock is `now` (microseconds, any monotonic
    /// clock); returns once the sender thread has sent every chunk due by then, with the time
    /// the next one is due (nil: none queued). Never sleeps past that.
    @discardableResult
    func pump(nowMicroseconds now: Int64) -> Int64? {
        queueLock.lock()
        defer { queueLock.unlock() }
        callerClock = now
        queueLock.broadcast()
        while pendingChunks > 0 {
            if let due = waitingUntil, due > now { return due }
            queueLock.wait()
        }
        return nil
    }

    /// [sender thread] One slot of the queue: hosted work only, or a chunk sent when its time
    /// comes (its audio timestamp on the pacing clock, anchored at the first chunk).
    private func sendPaced(_ slot: AudioChunkSlot) {
        queueLock.lock()
        if senderThread == nil { senderThread = pthread_self() }
        runHostedLocked()
        if slot.wakeOnly {
            queueLock.unlock()
            return
        }
        if resetSchedule {
            resetSchedule = false
            anchorWall = nil
        }
        var send = false
        while true {
            runHostedLocked()
            guard gate.state == .sending, gate.epoch == slot.epoch else { break }
            let now: Int64
            switch pacing {
            case .worker: now = Int64(monotonicNanoseconds() / 1000)
            case .immediate: now = .max
            case .caller:
                guard let clock = callerClock else {
                    queueLock.wait()
                    continue
                }
                now = clock
            }
            let media = slot.timestamp
            if anchorWall == nil || media < lastMedia || media - lastMedia > maxGapMicroseconds {
                if anchorWall != nil { reanchorCount.add(1, ordering: .relaxed) }
                anchorWall = now == .max ? 0 : now
                anchorMedia = media
            }
            let due = anchorWall! + (media - anchorMedia)
            if now != .max {
                if due > now {
                    waitingUntil = due
                    queueLock.broadcast()
                    if pacing == .worker {
                        queueLock.wait(untilMonotonicNanoseconds: UInt64(due) * 1000)
                    } else {
                        queueLock.wait()
                    }
                    waitingUntil = nil
                    continue
                }
                if now - due > maxLatenessMicroseconds {
                    // Far behind (the pump was starved): shift the schedule instead of bursting.
                    anchorWall = now - (media - anchorMedia)
                    reanchorCount.add(1, ordering: .relaxed)
                }
            }
            lastMedia = media
            send = true
            break
        }
        queueLock.unlock()
        if send {
            let result = gate.send(epoch: slot.epoch) { sender in
                sendBody(sender, UnsafeMutableRawPointer(slot.samples).assumingMemoryBound(to: CChar.self), chunkBytes, targetRate)
            }
            switch result {
            case .success(.sent):
                sentChunks.add(1, ordering: .relaxed)
            case .success(.rejected(let code, let name)):
                stats.recordSendRejected()
                lastOutcome.withLock { $0 = "\(name) (\(code))" }
            case .failure:
                // Stopped meanwhile: the chunk is not sent.
                stats.recordDrop()
            }
        } else {
            stats.recordDrop()
        }
        chunkDone()
    }
}

/// One 10 ms chunk (or, with `wakeOnly`, a nudge that brings the sender thread to hosted
/// work). Owned by the pushing thread between `acquire` and `enqueue`, then by the sender
/// thread; the queue's lock orders the hand-over.
final class AudioChunkSlot {
    let samples: UnsafeMutablePointer<Int16>
    var timestamp: Int64 = 0
    var epoch: UInt64 = 0
    var wakeOnly = false

    init(frames: Int) {
        samples = .allocate(capacity: frames)
        samples.initialize(repeating: 0, count: frames)
    }

    deinit { samples.deallocate() }

}

/// Work another thread hands to an audio publisher's sender thread (`runOnSender`). The
/// caller fills its fields, the sender thread runs it, the caller reads the result: the
/// publisher's lock orders the three.
protocol SenderWork: AnyObject {
    func run()
}

final class ClosureWork: SenderWork {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func run() { body() }
}

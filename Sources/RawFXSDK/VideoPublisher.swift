import RawFX
import Synchronization

/// What happened to one frame offered to a publishing source (video source, share, PS).
public enum PublishStatus: Sendable, Equatable, CustomStringConvertible {
    /// Processed and accepted by the SDK's sender.
    case sent
    /// Async mode: queued for the worker.
    case queued
    /// Async mode: queued, and the oldest waiting frame was dropped to make room.
    case queuedDroppingOldest
    /// Offered outside onStartSend…onStopSend: not processed, never sent.
    case refused(Refusal)
    /// A filter failed or the output could not be fitted; not sent.
    case failed(ChainError)
    /// The output breaks the sender's contract (e.g. production studio format); not sent.
    case invalid(String)
    /// The sender answered an error code (its raw value and name).
    case rejectedBySender(code: Int32, name: String)
    /// Processed for a capability that changed before it could be sent (onPropertyChange
    /// between the chain and the send): not sent, counted as a drop.
    case superseded

    public var wasSent: Bool { self == .sent }
    public var isRefused: Bool { if case .refused = self { return true } else { return false } }

    public var description: String {
        switch self {
        case .sent: return "sent"
        case .queued: return "queued"
        case .queuedDroppingOldest: return "queued (the oldest queued frame was dropped)"
        case .refused(let why): return "refused, not sent: \(why)"
        case .failed(let error): return "not sent: \(error)"
        case .invalid(let why): return "not sent: \(why)"
        case .rejectedBySender(let code, let name): return "the sender rejected it: \(name) (\(code))"
        case .superseded: return "not sent: the capability changed while it was being processed"
        }
    }
}

/// The size a publishing path must send.
enum PublishTarget: Equatable, Sendable {
    /// Exactly this size (the video source's capability, production studio's declaration).
    case exact(width: Int, height: Int)
    /// Whatever the chain makes, cut down to even dimensions.
    case even
}

/// What the sending size and range are, with the tail chains that make a frame fit them:
/// built on the control side (`setTarget`) and handed to the processing thread whole.
final class PublishTail {
    let target: PublishTarget
    /// The colour range the sender needs (production studio's declared format), or nil for any.
    let range: ColorRange?
    let generation: UInt64
    /// `.exact`: `scale=...:mode=fit` to that size, or why it could not be made.
    let fit: VideoChain?
    let fitError: ChainError?
    /// `range=to=full|limited`, appended after the fit when a frame's range is not `range`;
    /// nil when no `range` filter is loaded.
    let rangeChain: VideoChain?
    /// `.exact`: the packed picture handed to the sender.
    let packed: PackedPicture?

    init(target: PublishTarget, range: ColorRange?, generation: UInt64, registry: PluginRegistry) {
        self.target = target
        self.range = range
        self.generation = generation
        var fit: VideoChain?
        var error: ChainError?
        var packed: PackedPicture?
        if case .exact(let w, let h) = target {
            do {
                fit = try VideoPublishPipeline.makeFit(width: w, height: h, registry: registry)
            } catch let e {
                error = e
            }
            packed = PackedPicture(format: VideoFormat(width: w, height: h))
        }
        self.fit = fit
        fitError = error
        self.packed = packed
        rangeChain = range.flatMap { try? VideoPublishPipeline.makeRange(to: $0, registry: registry) }
    }
}

/// Chain, fit-to-size, range and packing for the publish paths. Owned by the one thread that
/// processes frames (the pushing thread in sync mode, the worker in async mode); the control
/// side hands a new chain (`ChainSlot`) or target (`Mailbox`) over, taken between frames, and
/// releases what they replaced. Unchecked: the processing-thread fields are that thread's.
final class VideoPublishPipeline: @unchecked Sendable {
    let registry: PluginRegistry

    /// The app's chain (an empty chain passes frames through).
    let chain: ChainSlot<VideoChain>
    /// Targets on their way in, and the replaced ones on their way out.
    private let tails = Mailbox<PublishTail>()
    private let generation = Atomic<UInt64>(0)
    /// Control side: the newest target (for metrics and for `setRange`).
    private let newestTail: Locked<PublishTail?>
    /// Written by the processing thread when the input format changes (never per frame);
    /// read by `setChain` to negotiate a new chain on the control side.
    private let lastInput = Locked<VideoFormat?>(nil)

    // Processing thread only.
    private var tail: PublishTail
    private var seenInput: VideoFormat?
    private var epoch: UInt64 = 0
    /// `.even`: the packed picture of the chain's output cut to even sizes, made when the
    /// output size is first seen.
    private var evenPacked: PackedPicture?

    init(chain: VideoChain, registry: PluginRegistry) {
        self.registry = registry
        self.chain = ChainSlot(chain)
        tail = PublishTail(target: .even, range: nil, generation: 0, registry: registry)
        newestTail = Locked(tail)
    }

    /// [control] Installs a new chain for the next frame, negotiated here for the last input
    /// format when one is known (a refusal throws and keeps the chain in force); its filters
    /// continue the replaced chain's figures where they match.
    func replaceChain(_ new: VideoChain) throws(ChainError) {
        let format = lastInput.withLock { $0 }
        try chain.replace(with: new) { (new, old) throws(ChainError) in
            if let format { try new.negotiate(format) }
            new.carryMetrics(from: old)
        }
    }

    /// [control] Sets the size (and, for production studio, the range) to send from the next
    /// frame on. The fit scaler, the range converter and the packed buffer are created here,
    /// off the frame path.
    @discardableResult
    func setTarget(_ target: PublishTarget, range: ColorRange? = nil) -> UInt64 {
        let g = generation.add(1, ordering: .acquiringAndReleasing).newValue
        let next = PublishTail(target: target, range: range, generation: g, registry: registry)
        newestTail.withLock { $0 = next }
        tails.post { _ in next }
        return g
    }

    /// The generation of the newest target (any thread).
    var currentGeneration: UInt64 { generation.load(ordering: .acquiring) }

    /// [any thread] The newest chain's figures, then the fit's and range converter's.
    var filterMetrics: [Metrics] {
        let tail = newestTail.withLock { $0 }
        func renamed(_ metrics: [Metrics]?, _ suffix: String) -> [Metrics] {
            (metrics ?? []).map { (m: Metrics) -> Metrics in
                var m = m
                m.name += suffix
                return m
            }
        }
        return chain.latest.metrics + renamed(tail?.fit?.control.metrics, " (fit)") + renamed(tail?.rangeChain?.control.metrics, " (range)")
    }

    static func makeFit(width: Int, height: Int, registry: PluginRegistry) throws(ChainError) -> VideoChain {
        try VideoChain(specs: [FilterSpec("scale", [("width", String(width)), ("height", String(height)), ("mode", "fit")])],
                       registry: registry)
    }

    /// `range=to=full` or `range=to=limited` (the YUV plugin's range filter).
    static func makeRange(to range: ColorRange, registry: PluginRegistry) throws(ChainError) -> VideoChain {
        try VideoChain(specs: [FilterSpec("range", [("to", range == .full ? "full" : "limited")])], registry: registry)
    }

    /// [processing] Runs the chain, fits the output to the target, converts its range and
    /// packs it. `epoch` is the sending period the frame was offered in: a new one resets the
    /// chains first. Returns the packed picture (valid until the next call), the output format
    /// and the target generation the frame was made for.
    func process(_ frame: VideoFrame, epoch: UInt64) throws(ChainError) -> (PackedPicture, VideoFormat, UInt64) {
        chain.takePending()
        if tails.hasPending, let next = tails.take() {
            tails.retire(tail)
            tail = next
        }
        let userChain = chain.current
        if epoch != self.epoch {
            self.epoch = epoch
            userChain.reset()
            tail.fit?.reset()
        }
        if frame.format != seenInput {
            seenInput = frame.format
            lastInput.withLock { $0 = frame.format }
        }
        var out = try userChain.process(frame)
        let w: Int, h: Int
        switch tail.target {
        case .exact(let tw, let th): (w, h) = (tw, th)
        case .even: (w, h) = (out.width & ~1, out.height & ~1)
        }
        guard w > 0, h > 0 else { throw .contract("the chain's output \(out.width)x\(out.height) is too small to send") }
        if out.width != w || out.height != h {
            if case .exact = tail.target {
                guard let fit = tail.fit else { throw tail.fitError ?? .contract("no fit scaler to \(w)x\(h)") }
                out = try fit.process(out)
                guard out.width == w, out.height == h else {
                    throw .contract("the fit scaler produced \(out.width)x\(out.height), the sender needs exactly \(w)x\(h)")
                }
            } else {
                // Cut to even: the last column and row go, with the chroma column and row that
                // covered only them. The same planes and strides, read narrower: no sample
                // changes and nothing is copied.
                out.raw.width = UInt32(w)
                out.raw.height = UInt32(h)
            }
        }
        if let range = tail.range, out.format.colorRange != range {
            guard let converter = tail.rangeChain else {
                throw .contract("the frame is \(out.format.colorRange) range, the sender was declared \(range) range, and no 'range' filter is loaded to convert it (the YUV plugin's range=to=\(range == .full ? "full" : "limited"))")
            }
            out = try converter.process(out)
        }
        let packed: PackedPicture
        if let exact = tail.packed {
            packed = exact
        } else {
            if evenPacked == nil || evenPacked!.format.width != w || evenPacked!.format.height != h {
                evenPacked = PackedPicture(format: VideoFormat(width: w, height: h))
            }
            packed = evenPacked!
        }
        out.pack(into: packed.bytes)
        return (packed, out.format, tail.generation)
    }
}

/// One queued frame of an async publisher: a copy in a buffer reallocated only when the
/// format changes. Owned by one thread at a time (the pushing thread between `acquire` and
/// `enqueue`, then the worker); the queue's lock orders the hand-over.
final class VideoSlot {
    var buffer: VideoBuffer?
    var timestamp: Int64 = 0
    var epoch: UInt64 = 0

    func fill(from frame: VideoFrame, epoch: UInt64) {
        if buffer?.format != frame.format { buffer = VideoBuffer(format: frame.format) }
        frame.copy(to: buffer!.frame)
        timestamp = frame.timestampMicroseconds
        self.epoch = epoch
    }
}

/// The publishing engine shared by the video source, share source and production studio
/// adapters: lifecycle gate, chain + fit + pack, optional async worker (the `WorkQueue`,
/// oldest frame dropped when full), metrics.
///
/// `sendBody` is called on the one processing thread at a time (`syncLock` in sync mode, the
/// queue's worker in async mode).
final class VideoPublisher<Sender>: Sendable {
    typealias Send = @Sendable (Sender, PackedPicture, VideoFormat) -> PublishStatus
    let gate = SendGate<Sender>()
    let pipeline: VideoPublishPipeline
    let stats: HookStats
    let mode: ProcessingMode
    private let sendBody: Send
    private let queue: WorkQueue<VideoSlot>?
    /// Sync mode: one frame at a time through the chain, whichever app thread pushes.
    private let syncLock = Locked(())
    /// Async mode: the app threads that push record the callback time under this lock.
    private let callbackTiming = Locked(())
    private let lastStatusStore = Locked<PublishStatus?>(nil)
    /// Called on the worker with the outcome of every frame it processed.
    private let asyncResult = Locked<(@Sendable (PublishStatus) -> Void)?>(nil)

    init(name: String, chain: VideoChain, registry: PluginRegistry, mode: ProcessingMode, send: @escaping Send) {
        stats = HookStats(name: name)
        pipeline = VideoPublishPipeline(chain: chain, registry: registry)
        self.mode = mode
        sendBody = send
        if mode.isAsync {
            // Weak: the adapters close the publisher from their deinit, which joins the worker.
            let owner = WeakReference<VideoPublisher<Sender>>()
            queue = WorkQueue(name: "rawfx-\(name)", capacity: mode.capacity, whenFull: .dropOldest,
                              makeSlot: { VideoSlot() }) { slot in
                guard let publisher = owner.value, let buffer = slot.buffer else { return }
                var frame = buffer.frame
                frame.timestampMicroseconds = slot.timestamp
                let status = publisher.run(frame, epoch: slot.epoch)
                publisher.asyncResult.withLock { $0 }?(status)
            }
            owner.value = self
        } else {
            queue = nil
        }
    }

    var lastStatus: PublishStatus? { lastStatusStore.withLock { $0 } }

    var metrics: HookMetrics { stats.snapshot(filters: pipeline.filterMetrics, async: mode.isAsync) }

    /// [any thread] Sets the handler the worker calls with each frame's outcome.
    func setAsyncResultHandler(_ handler: (@Sendable (PublishStatus) -> Void)?) { asyncResult.withLock { $0 = handler } }

    /// [app thread] Offers one frame (valid only during the call).
    func push(_ frame: VideoFrame) -> PublishStatus {
        if let refusal = gate.refusal {
            stats.recordRefused()
            return .refused(refusal)
        }
        let epoch = gate.epoch
        guard let queue else {
            return syncLock.withLock { _ in run(frame, epoch: epoch) }
        }
        let start = monotonicNanoseconds()
        guard let acquired = queue.acquire() else {
            stats.recordRefused()
            return .refused(gate.refusal ?? .closed)
        }
        if acquired.evicted { stats.recordDrop() }
        acquired.slot.fill(from: frame, epoch: epoch)
        guard queue.enqueue(acquired.slot) else {
            queue.giveBack(acquired.slot)
            stats.recordRefused()
            return .refused(gate.refusal ?? .closed)
        }
        let elapsed = monotonicNanoseconds() &- start
        callbackTiming.withLock { _ in stats.callback.record(nanoseconds: elapsed) }
        return acquired.evicted ? .queuedDroppingOldest : .queued
    }

    /// Runs the chain and sends, on the processing thread.
    private func run(_ frame: VideoFrame, epoch: UInt64) -> PublishStatus {
        let start = monotonicNanoseconds()
        let status: PublishStatus
        do {
            let (picture, format, generation) = try pipeline.process(frame, epoch: epoch)
            let result = gate.send(epoch: epoch) { sender -> PublishStatus in
                // A capability change since this frame was fitted: its size is stale.
                guard generation == pipeline.currentGeneration else { return .superseded }
                return sendBody(sender, picture, format)
            }
            switch result {
            case .success(let s): status = s
            case .failure(let e): status = .refused(e.refusal)
            }
        } catch {
            status = .failed(error)
        }
        switch status {
        case .sent: stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
        case .refused: stats.recordRefused()
        case .superseded: stats.recordDrop()
        case .rejectedBySender: stats.recordSendRejected()
        case .failed, .invalid: stats.recordError()
        case .queued, .queuedDroppingOldest: break
        }
        if !status.wasSent { lastStatusStore.withLock { $0 = status } }
        return status
    }

    /// [any thread] onStopSend / onUninitialized: frames waiting in the async queue are
    /// discarded (drops); the replaced chains and targets are released here.
    func discardQueued() {
        pipeline.chain.collect()
        guard let queue else { return }
        let n = queue.discardQueued { _ in }
        for _ in 0..<n { stats.recordDrop() }
    }

    /// Stops the worker (after the frames queued) and refuses everything afterwards. Idempotent.
    func close() {
        gate.close()
        discardQueued()
        queue?.close()
    }

    // MARK: Run-time control (any thread)

    /// Replaces the app's chain between two frames (empty text: pass through).
    func setChain(_ text: String) throws(ChainError) {
        try pipeline.replaceChain(VideoChain(specs: text.isEmpty ? [] : FilterSpec.parseChain(text), registry: pipeline.registry))
    }

    /// `VideoChain.setParameter` on the newest chain: applied between two frames, filter state kept.
    func setParameter(_ address: String, _ value: String) throws(ChainError) {
        try pipeline.chain.latest.setParameter(address, value)
    }

    /// `VideoChain.setBypass` on the newest chain.
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        try pipeline.chain.latest.setBypass(stage, bypassed)
    }

    /// Async: how many frames wait.
    var queuedCount: Int { queue?.count ?? 0 }
}

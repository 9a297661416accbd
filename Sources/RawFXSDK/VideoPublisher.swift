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

/// Chain, fit-to-size and packing for the publish paths. Owned by the one thread that
/// processes frames (the pushing thread in sync mode, the worker in async mode); the control
/// side hands over a new chain or target through `Locked`-guarded slots taken between frames.
final class VideoPublishPipeline: @unchecked Sendable {
    let registry: PluginRegistry

    // Processing thread.
    private var userChain: VideoChain?
    private var target: PublishTarget = .even
    private var targetGeneration: UInt64 = 0
    private var fit: VideoChain?
    private var fitSize: (width: Int, height: Int)?
    private var fitError: ChainError?
    private var packed: PackedPicture?

    // Control → processing.
    private struct Pending {
        var chain: VideoChain??
        var target: (PublishTarget, UInt64, VideoChain?, ChainError?, PackedPicture?)?
        var reset = false
        /// Newest chain and fit, for metrics from any thread.
        var chainForMetrics: VideoChain?
        var fitForMetrics: VideoChain?
    }
    private let pending = Locked<Pending>(Pending())
    private let hasPending = Atomic<Bool>(false)
    private let generation = Atomic<UInt64>(0)

    init(chain: VideoChain?, registry: PluginRegistry) {
        self.registry = registry
        userChain = chain
        pending.withLock { $0.chainForMetrics = chain }
    }

    /// [control] Installs a new user chain for the next frame (nil: pass through).
    func replaceChain(_ chain: VideoChain?) {
        pending.withLock {
            $0.chain = .some(chain)
            $0.chainForMetrics = chain
        }
        hasPending.store(true, ordering: .releasing)
    }

    /// [control] Sets the size to send from the next frame on. For an exact size, the fit
    /// scaler and the packed buffer are created here, off the frame path.
    @discardableResult
    func setTarget(_ newTarget: PublishTarget) -> UInt64 {
        let g = generation.add(1, ordering: .acquiringAndReleasing).newValue
        var fitChain: VideoChain?
        var error: ChainError?
        var picture: PackedPicture?
        if case .exact(let w, let h) = newTarget {
            do {
                fitChain = try Self.makeFit(width: w, height: h, registry: registry)
            } catch let e {
                error = e
            }
            picture = PackedPicture(format: VideoFormat(width: w, height: h))
        }
        pending.withLock {
            $0.target = (newTarget, g, fitChain, error, picture)
            $0.fitForMetrics = fitChain
        }
        hasPending.store(true, ordering: .releasing)
        return g
    }

    /// [control] Asks for `reset` on the chains before the next frame (a new sending period).
    func requestReset() {
        pending.withLock { $0.reset = true }
        hasPending.store(true, ordering: .releasing)
    }

    /// The generation of the newest target (any thread).
    var currentGeneration: UInt64 { generation.load(ordering: .acquiring) }

    var filterMetrics: [Metrics] {
        let (chain, fit) = pending.withLock { ($0.chainForMetrics, $0.fitForMetrics) }
        return (chain?.metrics ?? []) + (fit?.metrics.map { var m = $0; m.name += " (fit)"; return m } ?? [])
    }

    static func makeFit(width: Int, height: Int, registry: PluginRegistry) throws(ChainError) -> VideoChain {
        try VideoChain(specs: [FilterSpec("scale", [("width", String(width)), ("height", String(height)), ("mode", "fit")])],
                       registry: registry)
    }

    /// [processing] Takes what the control side handed over.
    @inline(__always)
    private func takePending() {
        guard hasPending.load(ordering: .acquiring) else { return }
        hasPending.store(false, ordering: .releasing)
        var reset = false
        pending.withLock {
            if let chain = $0.chain {
                userChain = chain
                $0.chain = nil
            }
            if let t = $0.target {
                target = t.0
                targetGeneration = t.1
                fit = t.2
                fitError = t.3
                fitSize = t.2 == nil ? nil : { if case .exact(let w, let h) = t.0 { return (w, h) } else { return nil } }()
                if let p = t.4 { packed = p }
                $0.target = nil
            }
            reset = $0.reset
            $0.reset = false
        }
        if reset {
            userChain?.reset()
            fit?.reset()
        }
    }

    /// [processing] Runs the chain, fits the output to the target and packs it. Returns the
    /// packed picture (valid until the next call), the output format and the target
    /// generation the frame was made for.
    func process(_ frame: VideoFrame) throws(ChainError) -> (PackedPicture, VideoFormat, UInt64) {
        takePending()
        var out = frame
        if let chain = userChain { out = try chain.process(frame) }
        let w: Int, h: Int
        switch target {
        case .exact(let tw, let th): (w, h) = (tw, th)
        case .even: (w, h) = (out.width & ~1, out.height & ~1)
        }
        guard w > 0, h > 0 else { throw .contract("the chain's output \(out.width)x\(out.height) is too small to send") }
        if out.width != w || out.height != h {
            if fitSize?.width != w || fitSize?.height != h || fit == nil {
                if fitError != nil, case .exact = target { throw fitError! }
                let chain = try Self.makeFit(width: w, height: h, registry: registry)
                fit = chain
                fitSize = (w, h)
                pending.withLock { $0.fitForMetrics = chain }
            }
            out = try fit!.process(out)
            guard out.width == w, out.height == h else {
                throw .contract("the fit scaler produced \(out.width)x\(out.height), the sender needs exactly \(w)x\(h)")
            }
        }
        if packed == nil || packed!.format.width != w || packed!.format.height != h {
            packed = PackedPicture(format: VideoFormat(width: w, height: h))
        }
        out.pack(into: packed!.bytes)
        return (packed!, out.format, targetGeneration)
    }
}

/// A bounded queue of video frames for an async worker: copies of the offered frames in
/// buffers allocated once per format. When full, the oldest waiting frame is dropped.
final class VideoFrameQueue: @unchecked Sendable {
    private let lock = HookLock()
    private let capacity: Int
    private var slots: [VideoBuffer?]
    private var free: [Int]
    private var queued: [Int]
    private var epochs: [UInt64]
    private var timestamps: [Int64]
    private var closed = false

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        let count = self.capacity + 2
        slots = Array(repeating: nil, count: count)
        free = Array(0..<count)
        free.reserveCapacity(count + 4)
        queued = []
        queued.reserveCapacity(count + 4)
        epochs = Array(repeating: 0, count: count)
        timestamps = Array(repeating: 0, count: count)
    }

    /// Copies `frame` in; returns (accepted, droppedOldest).
    func push(_ frame: VideoFrame, epoch: UInt64) -> (accepted: Bool, dropped: Int) {
        lock.lock()
        guard !closed else { lock.unlock(); return (false, 0) }
        var dropped = 0
        while queued.count >= capacity || (free.isEmpty && !queued.isEmpty) {
            free.append(queued.removeFirst())
            dropped += 1
        }
        guard let index = free.popLast() else {
            lock.unlock()
            return (false, dropped)
        }
        // A slot's buffer is (re)allocated only when the format changes.
        if slots[index]?.format != frame.format { slots[index] = VideoBuffer(format: frame.format) }
        let buffer = slots[index]!
        lock.unlock()
        // Copy outside the lock: the slot is this producer's until it is queued.
        frame.copy(to: buffer.frame)
        lock.lock()
        timestamps[index] = frame.timestampMicroseconds
        epochs[index] = epoch
        queued.append(index)
        lock.signal()
        lock.unlock()
        return (true, dropped)
    }

    /// Blocks the worker until a frame is queued; nil once closed.
    func pop() -> (index: Int, frame: VideoFrame, epoch: UInt64)? {
        lock.lock()
        defer { lock.unlock() }
        while queued.isEmpty && !closed { lock.wait() }
        guard !closed else { return nil }
        let index = queued.removeFirst()
        var frame = slots[index]!.frame
        frame.timestampMicroseconds = timestamps[index]
        return (index, frame, epochs[index])
    }

    func done(_ index: Int) {
        lock.lock()
        free.append(index)
        lock.unlock()
    }

    /// Drops every waiting frame; returns how many.
    func discardAll() -> Int {
        lock.lock()
        defer { lock.unlock() }
        let n = queued.count
        free.append(contentsOf: queued)
        queued.removeAll(keepingCapacity: true)
        return n
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return queued.count
    }

    func close() {
        lock.lock()
        closed = true
        lock.broadcast()
        lock.unlock()
    }
}

/// The publishing engine shared by the video source, share source and production studio
/// adapters: lifecycle gate, chain + fit + pack, optional async worker, metrics.
final class VideoPublisher<Sender>: @unchecked Sendable {
    typealias Send = (Sender, PackedPicture, VideoFormat) -> PublishStatus
    let gate = SendGate<Sender>()
    let pipeline: VideoPublishPipeline
    let stats: HookStats
    let mode: ProcessingMode
    private let sendBody: Send
    private let queue: VideoFrameQueue?
    private var worker: HookThread?
    private let workerLock = HookLock()
    private let syncLock = HookLock()
    private let lastStatusStore = Locked<PublishStatus?>(nil)
    /// Called with the outcome of every frame processed by the async worker.
    var onAsyncResult: (@Sendable (PublishStatus) -> Void)?

    init(name: String, chain: VideoChain?, registry: PluginRegistry, mode: ProcessingMode, send: @escaping Send) {
        stats = HookStats(name: name)
        pipeline = VideoPublishPipeline(chain: chain, registry: registry)
        self.mode = mode
        sendBody = send
        queue = mode.isAsync ? VideoFrameQueue(capacity: mode.capacity) : nil
    }

    var lastStatus: PublishStatus? { lastStatusStore.withLock { $0 } }

    var metrics: HookMetrics { stats.snapshot(filters: pipeline.filterMetrics, async: mode.isAsync) }

    /// [app thread] Offers one frame (valid only during the call).
    func push(_ frame: VideoFrame) -> PublishStatus {
        if let refusal = gate.refusal {
            stats.recordRefused()
            return .refused(refusal)
        }
        let epoch = gate.epoch
        guard let queue else {
            // Sync: one frame at a time through the chain, whichever app thread pushes.
            syncLock.lock()
            defer { syncLock.unlock() }
            return run(frame, epoch: epoch)
        }
        let start = monotonicNanoseconds()
        startWorkerIfNeeded()
        let (accepted, dropped) = queue.push(frame, epoch: epoch)
        for _ in 0..<dropped { stats.recordDrop() }
        stats.callback.record(nanoseconds: monotonicNanoseconds() &- start)
        guard accepted else {
            stats.recordDrop()
            return gate.refusal.map { .refused($0) } ?? .refused(.closed)
        }
        return dropped > 0 ? .queuedDroppingOldest : .queued
    }

    /// Runs the chain and sends, on the processing thread.
    private func run(_ frame: VideoFrame, epoch: UInt64) -> PublishStatus {
        let start = monotonicNanoseconds()
        let status: PublishStatus
        do {
            let (picture, format, generation) = try pipeline.process(frame)
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

    private func startWorkerIfNeeded() {
        workerLock.lock()
        defer { workerLock.unlock() }
        guard worker == nil, let queue else { return }
        // The thread holds the publisher strongly until `close` ends its loop; the adapters
        // call `close` from their deinit.
        worker = HookThread(name: "rawfx-\(stats.name)") { [self] in
            while let item = queue.pop() {
                let status = self.run(item.frame, epoch: item.epoch)
                queue.done(item.index)
                self.onAsyncResult?(status)
            }
        }
    }

    /// onStopSend / onUninitialized: frames waiting in the async queue are discarded (drops).
    func discardQueued() {
        guard let queue else { return }
        let n = queue.discardAll()
        for _ in 0..<n { stats.recordDrop() }
    }

    /// Stops the worker (after its current frame). Idempotent.
    func close() {
        gate.close()
        queue?.close()
        workerLock.lock()
        let w = worker
        worker = nil
        workerLock.unlock()
        w?.join()
    }

    /// Async: how many frames wait.
    var queuedCount: Int { queue?.count ?? 0 }
}

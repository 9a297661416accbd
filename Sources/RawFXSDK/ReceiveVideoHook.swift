#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import Synchronization

/// Which received stream a frame belongs to: a user and the pipe (video or share) it came
/// through.
public struct ReceiveStreamID: Hashable, Sendable, CustomStringConvertible {
    public var user: SDKUser
    public var pipe: SDKRawDataPipeKind

    public init(user: SDKUser, pipe: SDKRawDataPipeKind = .video) {
        self.user = user
        self.pipe = pipe
    }

    public var description: String { "\(user) \(pipe)" }
}

/// Why `ReceiveVideoHook.subscribe` did not subscribe.
public enum ReceiveSubscribeError: Error, Equatable, CustomStringConvertible {
    /// The pipe's `subscribe(with:resolution:)` answered this error (`.invalidParameter` for `.auto`).
    case refusedByPipe(ReceiveStreamID, VideoSDKError)
    /// The stream is already subscribed through this hook; unsubscribe it first.
    case alreadySubscribed(ReceiveStreamID)
    /// The stream's chain could not be built or negotiated for the announced format.
    case chain(ReceiveStreamID, ChainError)
    /// The hook was closed.
    case closed

    public var description: String {
        switch self {
        case .refusedByPipe(let id, let error):
            return "the \(id.pipe) pipe of \(id.user) refused the subscription: \(error) (\(error.rawValue))"
                + (error == .invalidParameter ? "; raw data needs a concrete resolution (90p to 1080p), not Auto" : "")
        case .alreadySubscribed(let id): return "\(id) is already subscribed through this hook; unsubscribe it first"
        case .chain(let id, let error): return "the chain for \(id) failed: \(error)"
        case .closed: return "the receive hook is closed"
        }
    }
}

/// Runs a chain of filters on every subscribed user's received video (seed 001): the video
/// pipe's and share pipe's `onRawDataFrameReceived` (I420) and `onPixelBuffer` (NV12), with
/// `onRawDataStatusChanged`. The app creates one hook per chain and subscribes each pipe
/// through it; the hook hands the processed frames to the app's sink with the stream they
/// belong to.
///
/// - Each (user, pipe) stream gets its own chain built from the hook's chain text, so a
///   stateful filter remembers that stream's frames only. It is negotiated on the subscribing
///   thread for `format` (or the resolution's nominal size, limited range); a frame of
///   another format renegotiates between two frames (counted in `renegotiations(of:)`).
/// - NV12 frames are converted to I420 at the head of the chain by libyuv `NV12ToI420` into a
///   buffer allocated when the format is first seen.
/// - `.sync`: the chain runs inside the SDK's callback. `.async(capacity:workers:)`: the
///   callback keeps the frame (`canAddRef()` then `addRef()`; otherwise a copy into a slot
///   buffer made once per format) and queues it on the stream's own bounded `WorkQueue`; the
///   hook's `WorkerPool` of `workers` threads (default: one per core) serves every stream's
///   queue, one stream on one worker at a time (its frames stay in order), different streams
///   in parallel. When `capacity` frames wait, the oldest is dropped and counted. Every
///   `addRef` is balanced by exactly one `releaseRef`: after processing, on eviction, or when
///   frames are discarded at `.off`, unsubscribe or close.
/// - `onRawDataStatusChanged(.off)`: frames still queued are discarded (counted as drops), then
///   the chain is drained (a delaying chain's held frames go to the sink) and reset, between
///   two frames on the processing thread. `.on` resumes; `status(of:)` reports the last one.
/// - Unsubscribing (or `close`) waits for a callback in progress, releases queued frames, waits
///   for the frame a worker is processing and releases its chain on the calling thread, never
///   the SDK's. `close` then joins the pool's threads.
/// - `setChain`, `setParameter`, `setBypass` (any thread) apply to every stream's chain
///   between two frames, each stream keeping its filters' state where the change allows
///   (a parameter without RECONFIGURE); streams subscribed later get the same chain and
///   changes. Old chains are released off the SDK's thread (`SwappableVideoChain`).
///
/// The sink gets `(ReceiveStreamID, VideoFrame)` on the processing thread (the SDK's
/// callback thread in sync mode, a pool worker in async mode). The frame is valid
/// during the sink call only: its planes are the SDK's frame or a buffer the chain reuses for
/// the next frame. Copy it (`VideoFrame.copy(to:)`) to keep it.
public final class ReceiveVideoHook: Sendable {
    public typealias Sink = @Sendable (ReceiveStreamID, VideoFrame) -> Void
    /// Told each `onRawDataStatusChanged`, on the SDK's thread for the pipe, before the hook acts
    /// on it (a program shows the stream's placeholder at `.off`).
    public typealias StatusSink = @Sendable (ReceiveStreamID, SDKUserRawdataStatus) -> Void

    /// A run-time change, replayed on the chain of a stream subscribed after it was made.
    enum Edit {
        case parameter(address: String, value: String)
        case bypass(stage: String, on: Bool)
    }

    /// Control-side state, behind `state`'s lock: never taken on the frame path.
    struct State {
        var specs: [FilterSpec]
        /// Changes since the last `setChain`, in order.
        var edits: [Edit] = []
        /// Counts `setChain` and run-time changes, so a subscription that built its chain
        /// while one happened builds it again.
        var generation: UInt64 = 0
        var streams: [ReceiveStreamID: ReceiveStream] = [:]
        /// Counters of streams that were unsubscribed, so the hook's totals survive them.
        var departed: (frames: UInt64, errors: UInt64, drops: UInt64) = (0, 0, 0)
        var closed = false
    }

    public let registry: PluginRegistry
    public let mode: ProcessingMode
    let name: String
    private let sink: Sink
    private let statusSink: StatusSink?
    private let state: Locked<State>
    /// Async: the threads every stream's queue runs on; joined by `close`.
    private let pool: WorkerPool?

    /// - Parameters:
    ///   - chain: the chain text every stream runs (`rotate=angle=auto,scale=width=640:height=360`);
    ///     empty for none (the sink gets the received frames as they are, NV12 converted).
    ///   - mode: `.sync` or `.async(capacity:workers:)` (frames queued per stream, threads
    ///     shared by all streams; 0 workers: one per core).
    ///   - sink: gets each processed frame with its stream, on the processing thread.
    public init(chain: String, registry: PluginRegistry, mode: ProcessingMode = .sync,
                name: String = "receive video", statusSink: StatusSink? = nil, sink: @escaping Sink) throws(ChainError) {
        let specs = try FilterSpec.parseChain(chain)
        _ = try VideoChain(specs: specs, registry: registry)  // a bad chain throws here, not at subscribe
        self.registry = registry
        self.mode = mode
        self.name = name
        self.sink = sink
        self.statusSink = statusSink
        state = Locked(State(specs: specs))
        pool = mode.isAsync ? WorkerPool(name: "rawfx-receive", workers: mode.workers) : nil
    }

    deinit { close() }

    // MARK: Subscriptions

    /// [app thread] Subscribes `pipe` (a user's video or share pipe) with a concrete
    /// resolution (`subscribe(with:resolution:)`), building and negotiating the stream's chain
    /// here for `format` (default: the resolution's nominal size, limited range, upright).
    public func subscribe(_ pipe: any SDKRawDataPipe, user: SDKUser, kind: SDKRawDataPipeKind = .video,
                          resolution: SDKVideoResolution, format: VideoFormat? = nil) throws(ReceiveSubscribeError) {
        let id = ReceiveStreamID(user: user, pipe: kind)
        let expected = format ?? resolution.nominalSize.map { VideoFormat(width: $0.width, height: $0.height) }
        var stream: ReceiveStream
        while true {
            // The chain is built and negotiated outside the lock (it may take a while), then
            // inserted only if no change to the chain happened meanwhile.
            let (specs, edits, generation, exists, closed) = state.withLock {
                ($0.specs, $0.edits, $0.generation, $0.streams[id] != nil, $0.closed)
            }
            if closed { throw .closed }
            if exists { throw .alreadySubscribed(id) }
            let chain: VideoChain
            do {
                chain = try makeChain(specs: specs, edits: edits, negotiatingFor: expected)
            } catch {
                throw .chain(id, error)
            }
            stream = ReceiveStream(id: id, pipe: pipe, chain: chain, expected: expected, mode: mode,
                                   pool: pool, hookName: name, sink: sink, statusSink: statusSink)
            let inserted = state.withLock { s -> Bool in
                guard !s.closed, s.streams[id] == nil, s.generation == generation else { return false }
                s.streams[id] = stream
                return true
            }
            if inserted { break }
            stream.shutDown()
        }
        let answer = pipe.subscribe(with: stream, resolution: resolution)
        if answer != .success {
            _ = state.withLock { $0.streams.removeValue(forKey: id) }
            stream.shutDown()
            throw .refusedByPipe(id, answer)
        }
    }

    /// [app thread] `unSubscribe(with:)` on the stream's pipe, then releases what the stream
    /// holds on this thread: frames still queued (released, counted as drops), its worker, its
    /// chain. Returns false if the stream was not subscribed.
    @discardableResult
    public func unsubscribe(user: SDKUser, kind: SDKRawDataPipeKind = .video) -> Bool {
        let id = ReceiveStreamID(user: user, pipe: kind)
        guard let stream = state.withLock({ $0.streams.removeValue(forKey: id) }) else { return false }
        stream.pipe.unSubscribe(with: stream)
        stream.shutDown()
        let final = stream.metrics.hook
        state.withLock { s in
            s.departed.frames += final.frames
            s.departed.errors += final.errors
            s.departed.drops += final.drops
        }
        return true
    }

    /// [app thread] Unsubscribes every stream; later subscriptions are refused. Idempotent.
    public func close() {
        let ids = state.withLock { s -> [ReceiveStreamID] in
            s.closed = true
            return Array(s.streams.keys)
        }
        for id in ids { unsubscribe(user: id.user, kind: id.pipe) }
        pool?.close()
    }

    /// Async: the pool's thread limit (`workers`, or the core count) and the threads started
    /// so far (one per subscribed stream, up to the limit, started at subscribe). Nil in sync mode.
    public var workerThreads: (limit: Int, started: Int)? { pool.map { ($0.maxWorkers, $0.workerCount) } }

    /// The streams subscribed now.
    public var streams: [ReceiveStreamID] { state.withLock { Array($0.streams.keys) } }

    /// The last status `onRawDataStatusChanged` reported for a stream (`.on` until then).
    public func status(of id: ReceiveStreamID) -> SDKUserRawdataStatus? {
        stream(id)?.status
    }

    /// How many times a frame arrived in another format than the one the stream's chain was
    /// negotiated for (the subscribe-time format, then the previous frame's).
    public func renegotiations(of id: ReceiveStreamID) -> UInt64? {
        stream(id)?.renegotiationCount
    }

    /// [not the SDK's thread] Async mode: waits until every stream's queued frames are processed.
    public func waitUntilIdle() {
        for stream in state.withLock({ Array($0.streams.values) }) { stream.queue?.waitUntilIdle() }
    }

    // MARK: Run-time control

    /// [any thread] Every stream switches to a new chain between two frames. Each stream's
    /// chain is built and negotiated here for the format that stream last received; the old
    /// ones are released off the SDK's thread. Filter state starts afresh; earlier
    /// `setParameter`/`setBypass` changes are forgotten (the new text says what it wants).
    public func setChain(_ text: String) throws(ChainError) {
        let specs = try FilterSpec.parseChain(text)
        try state.withLock { (s: inout State) throws(ChainError) in
            // Build every chain before installing any, so a refusal changes nothing.
            var built: [(ReceiveStream, VideoChain)] = []
            for stream in s.streams.values {
                built.append((stream, try makeChain(specs: specs, edits: [], negotiatingFor: stream.knownFormat)))
            }
            if built.isEmpty { _ = try VideoChain(specs: specs, registry: registry) }
            for (stream, chain) in built { stream.install(chain) }
            s.specs = specs
            s.edits = []
            s.generation += 1
        }
    }

    /// [any thread] Sets a parameter on every stream's chain (`"denoise.level"` or
    /// `"0.width"`; see `VideoChain.setParameter`), applied between two frames. A parameter
    /// without RECONFIGURE keeps each stream's filter state.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) {
        try apply(.parameter(address: address, value: value))
    }

    /// [any thread] `setParameter("\(stage).\(name)", value)`.
    public func setParameter(stage: String, name: String, value: String) throws(ChainError) {
        try setParameter("\(stage).\(name)", value)
    }

    /// [any thread] Bypasses a stage of every stream's chain, or re-enables it; see
    /// `VideoChain.setBypass`.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        try apply(.bypass(stage: stage, on: bypassed))
    }

    private func apply(_ edit: Edit) throws(ChainError) {
        try state.withLock { (s: inout State) throws(ChainError) in
            let streams = Array(s.streams.values)
            // The first application validates; with no stream, a chain that is never run does.
            if streams.isEmpty {
                try Self.apply(edit, to: VideoChain(specs: s.specs, registry: registry).control)
            }
            for stream in streams { try stream.apply(edit) }
            s.edits.append(edit)
            s.generation += 1
        }
    }

    static func apply(_ edit: Edit, to control: ChainControl) throws(ChainError) {
        switch edit {
        case .parameter(let address, let value): try control.setParameter(address, value)
        case .bypass(let stage, let on): try control.setBypass(stage, on)
        }
    }

    private func makeChain(specs: [FilterSpec], edits: [Edit], negotiatingFor format: VideoFormat?) throws(ChainError) -> VideoChain {
        let chain = try VideoChain(specs: specs, registry: registry)
        for edit in edits { try Self.apply(edit, to: chain.control) }
        if let format { try chain.negotiate(format) }
        return chain
    }

    // MARK: Metrics

    /// [any thread] The hook's figures: frames, errors and drops summed over every stream
    /// (including unsubscribed ones); p50 and p99 are the largest of the current streams'
    /// (the slowest user's). `filters`: one stream's chain (every stream runs the same one).
    public var metrics: HookMetrics {
        let (streams, departed) = state.withLock { (Array($0.streams.values), $0.departed) }
        let all = streams.map { $0.metrics }
        // Metrics has no public initializer: an empty recorder's snapshot is the zero.
        var hook = TimingRecorder().snapshot(name: name)
        hook.frames = departed.frames
        hook.errors = departed.errors
        hook.drops = departed.drops
        var callback: Metrics? = mode.isAsync ? TimingRecorder().snapshot(name: name + ".callback") : nil
        for m in all {
            hook.frames += m.hook.frames
            hook.errors += m.hook.errors
            hook.drops += m.hook.drops
            hook.p50Nanoseconds = max(hook.p50Nanoseconds, m.hook.p50Nanoseconds)
            hook.p99Nanoseconds = max(hook.p99Nanoseconds, m.hook.p99Nanoseconds)
            if let c = m.callback, var total = callback {
                total.frames += c.frames
                total.p50Nanoseconds = max(total.p50Nanoseconds, c.p50Nanoseconds)
                total.p99Nanoseconds = max(total.p99Nanoseconds, c.p99Nanoseconds)
                callback = total
            }
        }
        return HookMetrics(hook: hook, callback: callback, refused: 0, overflows: 0, sendRejected: 0,
                           filters: all.first?.filters ?? [])
    }

    /// [any thread] One stream's figures (frames, errors, drops, p50/p99 of chain + sink time,
    /// its chain's filters); they survive `setChain`. Nil when it is not subscribed.
    public func metrics(for id: ReceiveStreamID) -> HookMetrics? { stream(id)?.metrics }

    private func stream(_ id: ReceiveStreamID) -> ReceiveStream? { state.withLock { $0.streams[id] } }
}

// MARK: - One stream

/// One subscribed (user, pipe): the delegate its pipe calls and what its processing thread
/// owns (the chain, swapped between frames; the NV12 converter; the last format). The
/// processing thread is the SDK's callback thread in sync mode, so a frame goes from the
/// callback straight into the chain; in async mode it is whichever pool worker runs the
/// stream's turn, one at a time, ordered by the stream's queue lock.
/// Unchecked Sendable: `pipe` is the SDK's (subscribe and unsubscribe only); the members
/// marked [processing] are the processing thread's; `swappable` and `lastInput` are released by
/// `shutDown` after that thread stopped; the rest is immutable, atomic, `Locked` or the queue.
final class ReceiveStream: SDKRawDataPipeDelegate, ReceivedFrameInput, @unchecked Sendable {
    let id: ReceiveStreamID
    let pipe: any SDKRawDataPipe
    let stats: HookStats
    private let sink: ReceiveVideoHook.Sink
    /// Async mode's queue; set once at the end of init (its worker reaches back through a
    /// weak reference), never changed.
    private(set) var queue: WorkQueue<ReceiveSlot>?
    /// Callbacks running now; `shutDown` waits for 0 after setting `closed` (both sequentially
    /// consistent, so either the callback sees `closed` or the shutdown sees the callback).
    private let inFlight = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    private let statusBits = Atomic<Int32>(SDKUserRawdataStatus.on.rawValue)
    private let statusSink: ReceiveVideoHook.StatusSink?

    /// [processing] The chain in force; `install` hands a new one over between two frames.
    private var swappable: SwappableVideoChain?
    /// [control] The chain most recently installed: run-time changes and metrics go there.
    private let latest: Locked<ChainControl?>
    /// [processing] The format the chain is negotiated for.
    private var current: VideoFormat?
    /// [control reads] The last format seen, for negotiating a new chain off the frame path.
    private let known: Locked<VideoFormat?>
    private let renegotiations = Atomic<UInt64>(0)
    /// [control sets, processing clears] A `.off` asked for drain and reset.
    private let resetRequested = Atomic<Bool>(false)
    private let converter = NV12ToI420Converter()
    /// [processing] The last input, kept only for a chain that delays frames, so `.off` can
    /// drain it (`VideoChain.drain` repeats it).
    private var lastInput: VideoBuffer?
    /// [processing] Frames went in since the last drain.
    private var holdsUndrainedInput = false

    init(id: ReceiveStreamID, pipe: any SDKRawDataPipe, chain: VideoChain, expected: VideoFormat?,
         mode: ProcessingMode, pool: WorkerPool?, hookName: String, sink: @escaping ReceiveVideoHook.Sink,
         statusSink: ReceiveVideoHook.StatusSink? = nil) {
        self.id = id
        self.statusSink = statusSink
        self.pipe = pipe
        self.sink = sink
        stats = HookStats(name: "\(hookName) \(id)")
        swappable = SwappableVideoChain(chain)
        latest = Locked(chain.control)
        current = expected
        known = Locked(expected)
        if let pool {
            queue = WorkQueue(name: "rawfx-receive-\(id.user.userID)-\(id.pipe)", capacity: mode.capacity,
                              whenFull: .dropOldest, executor: .pool(pool), makeSlot: { ReceiveSlot() }) { [weak self] slot in
                // Nil only once the hook released the stream, after `shutDown` emptied the queue.
                guard let self else {
                    slot.release()
                    return
                }
                self.run(slot)
            }
            // Every slot the stream can hold at once (the queued ones and the one a worker is
            // finishing after its sink returned), made here so the SDK's thread never makes one.
            queue?.prefill(mode.capacity + 1)
        }
    }

    var status: SDKUserRawdataStatus { SDKUserRawdataStatus(rawValue: statusBits.load(ordering: .relaxed)) ?? .on }

    var metrics: HookMetrics { stats.snapshot(filters: latest.withLock { $0?.metrics ?? [] }, async: queue != nil) }

    var renegotiationCount: UInt64 { renegotiations.load(ordering: .relaxed) }
    var knownFormat: VideoFormat? { known.withLock { $0 } }

    // MARK: Run-time control [control]

    func install(_ chain: VideoChain) {
        latest.withLock { $0 = chain.control }
        try? swappable?.replace(with: chain)  // negotiated by the caller: nothing here throws
    }

    func apply(_ edit: ReceiveVideoHook.Edit) throws(ChainError) {
        guard let control = latest.withLock({ $0 }) else { return }
        try ReceiveVideoHook.apply(edit, to: control)
    }

    // MARK: SDK callbacks [the SDK's thread for this pipe]

    func onRawDataFrameReceived(_ rawData: any VideoRawData) {
        guard let frame = Self.frame(of: rawData) else {
            guard enter() else { return }
            defer { leave() }
            return malformed(rawData)
        }
        receive(frame, reference: SDKObjectReference(rawData))
    }

    /// [the SDK's thread for this pipe] The frame-shaped core the SDK-named callback and the C
    /// API call: the frame (rotation in its format, the SDK's time in its timestamp) runs through
    /// the chain now (sync) or is queued (async: kept through `reference` when the SDK allows
    /// it, else copied).
    func receive(_ frame: VideoFrame, reference: SDKObjectReference) {
        guard enter() else { return }
        defer { leave() }
        guard let queue else {
            process(frame)
            return
        }
        let start = monotonicNanoseconds()
        guard let slot = acquire(queue) else { return }
        if reference.keep() {
            slot.reference = reference
            slot.retainedFrame = frame
            slot.content = .retainedI420
        } else {
            // Stack memory: the planes die with this callback, so copy them now.
            frame.copy(to: slot.copyBuffer(for: frame.format).frame)
            slot.content = .copied
        }
        slot.format = frame.format
        slot.timestamp = frame.timestampMicroseconds
        submit(slot, to: queue, start: start)
    }

    func onPixelBuffer(_ pixelBuffer: any NV12PixelBuffer, rotation: SDKVideoRawDataRotation) {
        guard enter() else { return }
        defer { leave() }
        guard let queue else {
            process(pixelBuffer, rotation: rotation)
            return
        }
        let start = monotonicNanoseconds()
        guard let slot = acquire(queue) else { return }
        let format = pixelBuffer.videoFormat(rotation: rotation)
        if pixelBuffer.canAddRef() && pixelBuffer.addRef() {
            slot.pixels = pixelBuffer
            slot.rotation = rotation
            slot.content = .retainedNV12
        } else {
            // Not retainable: convert now; the conversion is the copy.
            do {
                try NV12ToI420Converter.convert(pixelBuffer, into: slot.copyBuffer(for: format).frame)
            } catch {
                queue.giveBack(slot)
                stats.recordError()
                RawFXLog.log(.error, source: "receive", "\(id): \(error)")
                return
            }
            slot.content = .copied
        }
        slot.format = format
        slot.timestamp = pixelBuffer.timestampMicroseconds
        submit(slot, to: queue, start: start)
    }

    func onRawDataStatusChanged(_ userRawdataStatus: SDKUserRawdataStatus) {
        guard enter() else { return }
        defer { leave() }
        statusBits.store(userRawdataStatus.rawValue, ordering: .relaxed)
        statusSink?(id, userRawdataStatus)
        guard userRawdataStatus == .off else { return }
        resetRequested.store(true, ordering: .releasing)
        guard let queue else {
            drainAndResetIfRequested()  // sync: this is the processing thread
            return
        }
        queue.discardQueued { if $0.release() { stats.recordDrop() } }
        // Wake the worker so the reset happens now; if a later frame evicts this marker, that
        // frame's processing performs the reset first.
        if let slot = acquire(queue) {
            slot.content = .wake
            if !queue.enqueue(slot) { queue.giveBack(slot) }
        }
    }

    // MARK: Processing [processing]

    /// Runs one I420 frame through the chain and gives the result to the sink. Inlined into
    /// `receive`: in sync mode the callback itself is the chain's caller.
    @inline(__always) private func process(_ frame: VideoFrame) {
        guard let swappable else { return }
        if resetRequested.load(ordering: .relaxed) { drainAndResetIfRequested() }
        let start = monotonicNanoseconds()
        let format = frame.format
        if format != current {
            if current != nil { renegotiations.add(1, ordering: .relaxed) }
            current = format
            known.withLock { $0 = format }
        }
        do {
            swappable.takePending()
            let chain = swappable.chain
            if chain.latency > 0 { keepLastInput(frame) }
            let output = try chain.process(frame)
            sink(id, output)
            stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
        } catch {
            stats.recordError()
            RawFXLog.log(.error, source: "receive", "\(id): \(error)")
        }
    }

    /// Converts an NV12 frame (`onPixelBuffer`) and runs it.
    private func process(_ pixels: any NV12PixelBuffer, rotation: SDKVideoRawDataRotation) {
        let frame: VideoFrame
        do {
            frame = try converter.convert(pixels, format: pixels.videoFormat(rotation: rotation))
        } catch {
            stats.recordError()
            RawFXLog.log(.error, source: "receive", "\(id): \(error)")
            return
        }
        process(frame)
    }

    /// A `.off` asked for it: pushes a delaying chain's held frames to the sink, then
    /// `reset`s the chain, between two frames.
    private func drainAndResetIfRequested() {
        guard resetRequested.exchange(false, ordering: .acquiringAndReleasing), let swappable else { return }
        swappable.takePending()
        let chain = swappable.chain
        if chain.latency > 0, holdsUndrainedInput, let last = lastInput {
            do {
                try chain.drain(repeating: last.frame) { self.sink(self.id, $0) }
            } catch {
                stats.recordError()
            }
        }
        chain.reset()
        holdsUndrainedInput = false  // a second .off without frames between has nothing to drain
    }

    private func keepLastInput(_ frame: VideoFrame) {
        if lastInput?.format != frame.format { lastInput = VideoBuffer(format: frame.format) }
        frame.copy(to: lastInput!.frame)
        holdsUndrainedInput = true
    }

    // MARK: Async hand-off
    /// A slot to fill; an evicted one's frame is released and counted as a drop.
    private func acquire(_ queue: WorkQueue<ReceiveSlot>) -> ReceiveSlot? {
        guard let acquired = queue.acquire() else {
            stats.recordDrop()
            return nil
        }
        if acquired.evicted, acquired.slot.release() { stats.recordDrop() }
        return acquired.slot
    }

    private func submit(_ slot: ReceiveSlot, to queue: WorkQueue<ReceiveSlot>, start: UInt64) {
        if !queue.enqueue(slot) {
            slot.release()
            queue.giveBack(slot)
            stats.recordDrop()
        }
        stats.callback.record(nanoseconds: monotonicNanoseconds() &- start)
    }

    /// [worker] Processes one slot and releases what it held.
    private func run(_ slot: ReceiveSlot) {
        switch slot.content {
        case .empty:
            break
        case .wake:
            drainAndResetIfRequested()
        case .retainedI420:
            process(slot.retainedFrame!)
        case .retainedNV12:
            if let pixels = slot.pixels { process(pixels, rotation: slot.rotation) }
        case .copied:
            var frame = slot.copy!.frame
            frame.format = slot.format
            frame.timestampMicroseconds = slot.timestamp
            process(frame)
        }
        slot.release()
    }

    // MARK: Shutdown [control]

    /// Stops taking callbacks, waits for one in progress, releases queued frames (drops),
    /// waits for the worker's current frame and releases the chain, all on the calling thread.
    func shutDown() {
        closed.store(true, ordering: .sequentiallyConsistent)
        while inFlight.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
        if let queue {
            queue.discardQueued { if $0.release() { stats.recordDrop() } }
            queue.close { if $0.release() { stats.recordDrop() } }
        }
        // The processing thread has stopped: release the chains here, off the SDK's thread.
        swappable = nil
        latest.withLock { $0 = nil }
        lastInput = nil
    }

    @inline(__always) private func enter() -> Bool {
        inFlight.add(1, ordering: .sequentiallyConsistent)
        if closed.load(ordering: .sequentiallyConsistent) {
            inFlight.subtract(1, ordering: .sequentiallyConsistent)
            return false
        }
        return true
    }

    @inline(__always) private func leave() { inFlight.subtract(1, ordering: .sequentiallyConsistent) }

    private func malformed(_ rawData: any VideoRawData) {
        stats.recordError()
        RawFXLog.log(.error, source: "receive", "\(id): a frame of \(rawData.streamWidth)x\(rawData.streamHeight) "
                     + "without all three planes, or with strides shorter than its rows (Y \(rawData.yStride), "
                     + "U \(rawData.uStride), V \(rawData.vStride)); not processed")
    }

    /// The SDK's planes as a frame (no copy), or nil when a plane is missing or a stride is
    /// shorter than its row.
    static func frame(of raw: any VideoRawData) -> VideoFrame? {
        let format = raw.videoFormat
        guard format.width > 0, format.height > 0,
              let y = raw.yBuffer, let u = raw.uBuffer, let v = raw.vBuffer,
              raw.yStride >= format.width, raw.uStride >= format.chromaWidth, raw.vStride >= format.chromaWidth
        else { return nil }
        func bytes(_ p: UnsafeMutablePointer<CChar>) -> UnsafeMutablePointer<UInt8> {
            UnsafeMutableRawPointer(p).assumingMemoryBound(to: UInt8.self)
        }
        return VideoFrame(format: format, y: bytes(y), yStride: raw.yStride, u: bytes(u), uStride: raw.uStride,
                          v: bytes(v), vStride: raw.vStride, timestampMicroseconds: Int64(raw.timeStamp) * 1000)
    }
}

/// A frame waiting in a stream's async queue: a retained SDK object or a copy.
final class ReceiveSlot {
    enum Content { case empty, wake, retainedI420, retainedNV12, copied }
    var content = Content.empty
    /// A kept I420 frame: the SDK's planes and the reference that keeps them.
    var retainedFrame: VideoFrame?
    var reference = SDKObjectReference.none
    var pixels: (any NV12PixelBuffer)?
    var rotation = SDKVideoRawDataRotation.none
    /// A copy's picture, reallocated only when the size changes.
    var copy: VideoBuffer?
    var format = VideoFormat(width: 0, height: 0)
    var timestamp: Int64 = 0

    /// Releases what the slot holds (exactly once) and empties it; true if it held a frame.
    @discardableResult
    func release() -> Bool {
        let held = content == .retainedI420 || content == .retainedNV12 || content == .copied
        if content == .retainedI420 { reference.releaseRef() }
        if content == .retainedNV12 { pixels?.releaseRef() }
        retainedFrame = nil
        reference = .none
        pixels = nil
        content = .empty
        return held
    }

    func copyBuffer(for format: VideoFormat) -> VideoBuffer {
        if let copy, copy.format.width == format.width, copy.format.height == format.height { return copy }
        let buffer = VideoBuffer(format: VideoFormat(width: format.width, height: format.height))
        copy = buffer
        return buffer
    }
}

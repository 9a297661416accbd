import Synchronization

/// One chain in force on one processing thread, replaceable from any thread: the handover
/// behind `SwappableVideoChain` and the SDK hooks' `setChain`.
///
/// `replace` (control side) posts the new chain through a `Mailbox` (latest wins: a chain
/// still waiting is released on the control side, never installed); `takePending`
/// (processing thread, between two frames or blocks) installs it and retires the old one,
/// which the control side releases at its next `replace` or `collect`, so filter teardown
/// never lands inside an SDK callback. The new chain continues the old one's per-filter
/// metrics (`carryMetrics`).
///
/// The chains are process handles (not `Sendable`): the slot is the one place that moves
/// them between threads. A control thread hands a chain it owns (made and, if it likes,
/// negotiated there) to `replace` and never touches it again; from then on only its
/// `control` is reached from the control side (`latest`).
/// Unchecked `Sendable`: `inForce` is the process thread's; a chain passed to `replace` moves to the process thread through `handoff` (the caller keeps no reference); control threads reach only `newest`, a `Sendable` control handle, under its lock.
package final class ChainSlot<Chain: ProcessHandle>: @unchecked Sendable {
    /// Processing thread only.
    private var inForce: Chain
    /// Chains on their way in (latest wins) and, once replaced, on their way out.
    private let handoff = Mailbox<Chain>()
    /// The control handle of the chain most recently handed over: run-time changes go there.
    private let newest: Locked<ChainControl>
    private let swaps = Atomic<Int>(0)

    /// [control] `chain` becomes the processing thread's.
    package init(_ chain: Chain) {
        inForce = chain
        newest = Locked(chain.control)
    }

    /// [control] Installs `chain` from the next frame; `prepare` runs first, under the slot's
    /// control lock, with the new chain (still the caller's) and the control handle of the
    /// chain it replaces (negotiate, carry metrics).
    package func replace<E: Error>(with chain: Chain, prepare: (_ new: Chain, _ old: ChainControl) throws(E) -> Void) throws(E) {
        try newest.withLock { (latest: inout ChainControl) throws(E) in
            try prepare(chain, latest)
            latest = chain.control
            handoff.post { _ in chain }
        }
    }

    /// [control] Releases a chain the processing thread retired, without replacing.
    package func collect() { handoff.collect() }

    /// [any thread] The control handle of the newest chain: in force, or in force from the
    /// next frame.
    package var latest: ChainControl { newest.withLock { $0 } }

    /// [process] The chain in force.
    @inline(__always) package var current: Chain { inForce }

    /// [process] Number of swaps made.
    package var swapCount: Int { swaps.load(ordering: .relaxed) }

    /// [process] True when `replace` handed a chain over (one relaxed load).
    @inline(__always) package var hasPending: Bool { handoff.hasPending }

    /// [process] Installs a chain handed over by `replace`, if any, and says whether it did.
    @inline(__always) @discardableResult
    package func takePending() -> Bool {
        guard handoff.hasPending, let next = handoff.take() else { return false }
        install(next)
        return true
    }

    /// [process] Like `takePending()`, but `finish` sees the old chain first, on this thread
    /// (an audio stream flushes it). Call it when `hasPending`: passing a closure to this
    /// generic method may allocate in unoptimized builds.
    @discardableResult
    package func takePending(finishing finish: (Chain) -> Void) -> Bool {
        guard handoff.hasPending, let next = handoff.take() else { return false }
        finish(inForce)
        install(next)
        return true
    }

    private func install(_ next: Chain) {
        handoff.retire(inForce)
        inForce = next
        swaps.add(1, ordering: .relaxed)
    }
}

/// A chain's process handle, with its `Sendable` control handle.
package protocol ProcessHandle: AnyObject {
    var control: ChainControl { get }
}

extension VideoChain: ProcessHandle {}
extension AudioChain: ProcessHandle {}

/// A video chain that can be replaced while frames flow, atomically between two frames.
///
/// The processing thread calls `process`; any other thread calls `replace`. The new chain is
/// handed over through an atomic slot and taken at the start of the next frame, so no frame
/// is dropped and none runs half through the old chain and half through the new. No lock is
/// taken on the frame path. The old chain is released by the next `replace` (or by `deinit`),
/// never on the processing thread, so filter teardown never lands inside an SDK callback.
/// Per-filter metrics continue across a replace for filters the two chains share.
///
/// `Sendable`: the chains in it are process handles that only the processing thread touches
/// once handed over (`ChainSlot`); control threads reach the newest one's `control`.
public final class SwappableVideoChain: Sendable {
    private let slot: ChainSlot<VideoChain>

    /// [control] `chain` becomes the processing thread's: keep no other reference to it.
    public init(_ chain: VideoChain) { slot = ChainSlot(chain) }

    /// [control] Installs `chain` for the next frame. If `format` is given, the chain is
    /// negotiated here first (so a refusal throws now, not on the processing thread);
    /// otherwise it negotiates on its first frame. A chain still waiting from an earlier call
    /// is released here, never installed. `chain` is the processing thread's from here on:
    /// keep its `control`, not the chain.
    public func replace(with chain: VideoChain, negotiatingFor format: VideoFormat? = nil) throws(ChainError) {
        try slot.replace(with: chain) { (new, old) throws(ChainError) in
            if let format { try new.negotiate(format) }
            new.carryMetrics(from: old)
        }
    }

    /// Number of swaps the processing thread has made.
    public var swapCount: Int { slot.swapCount }

    /// [process] Runs one frame through the chain in force at its start.
    public func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        slot.takePending()
        return try slot.current.process(frame)
    }

    /// [process] Installs a chain handed over by `replace`, if any, and says whether it did.
    /// `process` calls it; a hook that checks formats before processing calls it first.
    @discardableResult
    public func takePending() -> Bool { slot.takePending() }

    /// [process] The chain in force.
    public var chain: VideoChain { slot.current }

    /// [any thread] The control handle of the newest chain (in force, or from the next
    /// frame): parameters, bypasses and metrics off the processing thread.
    public var control: ChainControl { slot.latest }

    /// [control] Releases a chain the processing thread has retired, without replacing.
    public func collectRetired() { slot.collect() }

    /// [any thread] Sets a parameter of the latest chain (the one in force, or the one
    /// `replace` handed over, which is in force from the next frame); see
    /// `ChainControl.setParameter`.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) {
        try slot.latest.setParameter(address, value)
    }

    /// [any thread] Bypasses a stage of the latest chain; see `ChainControl.setBypass`.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        try slot.latest.setBypass(stage, bypassed)
    }
}

/// What runs video frames on one processing thread: a `VideoChain`, or a `SwappableVideoChain`
/// whose chain the control side replaces. A compositor's overlays take either. Not
/// `Sendable`: a process handle, owned by the thread that runs it (a compositor's scene
/// carries it to the compose thread whole, through a `Mailbox`).
public protocol VideoProcessor: AnyObject {
    /// [process] Runs one frame; the output view is valid until the next call.
    func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame

    /// [control] What to run on frames of `format` from now on, made ready for it here, so that
    /// its first frame of that format allocates nothing on the processing thread: a compositor
    /// asks when a tile's size changes (a re-flow). The default is `self`, which negotiates on
    /// its first frame of the new format instead.
    func prepared(for format: VideoFormat) -> any VideoProcessor
}

extension VideoProcessor {
    public func prepared(for format: VideoFormat) -> any VideoProcessor { self }
}

extension VideoChain: VideoProcessor {}
extension SwappableVideoChain: VideoProcessor {}

/// A process handle (a `VideoChain`, an `AudioChain`, anything not `Sendable` that one thread
/// runs) on its way to the thread that will run it: made and set up on one thread, handed
/// over once, then touched only by the thread that processes. Its control side travels on
/// its own (`ChainControl` is `Sendable`).
///
/// ```swift
/// let chain = try VideoChain("denoise", registry: registry)
/// let control = chain.control               // any thread
/// let owned = ProcessingThreadOwned(chain)  // keep no other reference to `chain`
/// Thread { let chain = owned.value; /* process frames */ }.start()
/// ```
/// Unchecked `Sendable`: the value belongs to one thread at a time: the creating thread until it hands the box over (a thread start, a queue), then only the thread that processes, and, after that thread has been joined, the thread that joined it. The box itself is one immutable reference.
public final class ProcessingThreadOwned<Value: AnyObject>: @unchecked Sendable {
    private let owned: Value

    /// [creating thread] Takes `value`; keep no other reference to it.
    public init(_ value: Value) { owned = value }

    /// [the thread that processes, or one that joined it] The value.
    public var value: Value { owned }
}

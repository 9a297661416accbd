import Synchronization

/// A video chain that can be replaced while frames flow, atomically between two frames.
///
/// The processing thread calls `process`; any other thread calls `replace`. The new chain is
/// handed over through an atomic slot and taken at the start of the next frame, so no frame
/// is dropped and none runs half through the old chain and half through the new. No lock is
/// taken on the frame path. The old chain is released by the next `replace` (or by `deinit`),
/// never on the processing thread, so filter teardown never lands inside an SDK callback.
public final class SwappableVideoChain: @unchecked Sendable {
    /// Owned by the processing thread.
    private var current: VideoChain
    /// Chains on their way in (latest wins) and, once replaced, on their way out.
    private let handoff = Mailbox<VideoChain>()
    /// How many times the processing thread has switched chains.
    private let swaps = Atomic<Int>(0)
    /// The chain most recently handed over (control side): run-time changes go there.
    private let latest: Locked<VideoChain>

    public init(_ chain: VideoChain) {
        current = chain
        latest = Locked(chain)
    }

    /// [control] Installs `chain` for the next frame. If `format` is given, the chain is
    /// negotiated here first (so a refusal throws now, not on the processing thread);
    /// otherwise it negotiates on its first frame. A chain still waiting from an earlier call
    /// is released here, never installed.
    public func replace(with chain: VideoChain, negotiatingFor format: VideoFormat? = nil) throws(ChainError) {
        if let format { try chain.negotiate(format) }
        latest.withLock { latest in
            latest = chain
            handoff.post { _ in chain }
        }
    }

    /// Number of swaps the processing thread has made.
    public var swapCount: Int { swaps.load(ordering: .relaxed) }

    /// [process] Runs one frame through the chain in force at its start.
    public func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        takePending()
        return try current.process(frame)
    }

    /// [process] Installs a chain handed over by `replace`, if any, and says whether it did.
    /// `process` calls it; a hook that checks formats before processing calls it first.
    @discardableResult
    public func takePending() -> Bool {
        guard handoff.hasPending, let next = handoff.take() else { return false }
        // The old chain goes back to the control side, released at its next `replace`.
        handoff.retire(current)
        current = next
        swaps.add(1, ordering: .relaxed)
        return true
    }

    /// [process] The chain in force (for metrics on the processing thread).
    public var chain: VideoChain { current }

    /// [any thread] Sets a parameter of the latest chain (the one in force, or the one
    /// `replace` handed over, which is in force from the next frame); see
    /// `VideoChain.setParameter`.
    public func setParameter(_ address: String, _ value: String) throws(ChainError) {
        let chain = latest.withLock { $0 }
        try chain.setParameter(address, value)
    }

    /// [any thread] Bypasses a stage of the latest chain; see `VideoChain.setBypass`.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        let chain = latest.withLock { $0 }
        try chain.setBypass(stage, bypassed)
    }
}

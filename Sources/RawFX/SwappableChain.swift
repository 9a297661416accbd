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
    /// A chain waiting to be taken (+1 retained), or 0.
    private let pending = Atomic<UInt>(0)
    /// The chain the processing thread let go of (+1 retained), or 0.
    private let retired = Atomic<UInt>(0)
    /// How many times the processing thread has switched chains.
    private let swaps = Atomic<Int>(0)

    public init(_ chain: VideoChain) { current = chain }

    deinit {
        SwappableVideoChain.release(pending.exchange(0, ordering: .acquiring))
        SwappableVideoChain.release(retired.exchange(0, ordering: .acquiring))
    }

    /// [control] Installs `chain` for the next frame. If `format` is given, the chain is
    /// negotiated here first (so a refusal throws now, not on the processing thread);
    /// otherwise it negotiates on its first frame.
    public func replace(with chain: VideoChain, negotiatingFor format: VideoFormat? = nil) throws(ChainError) {
        if let format { try chain.negotiate(format) }
        let bits = UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque())
        SwappableVideoChain.release(pending.exchange(bits, ordering: .acquiringAndReleasing))
        SwappableVideoChain.release(retired.exchange(0, ordering: .acquiring))
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
        let next = pending.exchange(0, ordering: .acquiring)
        guard next != 0 else { return false }
        let old = Unmanaged.passRetained(current).toOpaque()
        current = Unmanaged<VideoChain>.fromOpaque(UnsafeRawPointer(bitPattern: next)!).takeRetainedValue()
        // Hand the old chain to the control side; if one is still waiting there, it is
        // released here (rare: two swaps between two replace calls).
        SwappableVideoChain.release(retired.exchange(UInt(bitPattern: old), ordering: .acquiringAndReleasing))
        swaps.add(1, ordering: .relaxed)
        return true
    }

    /// [process] The chain in force (for metrics on the processing thread).
    public var chain: VideoChain { current }

    private static func release(_ bits: UInt) {
        guard bits != 0 else { return }
        Unmanaged<VideoChain>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
    }
}

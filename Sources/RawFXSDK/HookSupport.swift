import RawFX
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A thread the hooks own (async workers, the mic pacer). Started once, joined once, by its
/// owner or (when the owner is released on it) by the thread itself.
final class HookThread: Sendable {
    /// The pthread, stored once `pthread_create` returns (before the owner can join it).
    private let thread = Atomic<UInt>(0)
    private let joined = Atomic<Bool>(false)
    private let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        var created = pthread_t()
        let status = pthread_create(&created, nil, { raw in
            let me = Unmanaged<HookThread>.fromOpaque(raw!).takeRetainedValue()
            me.body()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed (\(status))")
        thread.store(UInt(created), ordering: .releasing)
    }

    /// Waits for the body to return. Called from the thread itself (its owner was released
    /// there), it detaches instead: the body is about to end on its own.
    func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let created = pthread_t(thread.load(ordering: .acquiring))
        if pthread_equal(pthread_self(), created) != 0 {
            pthread_detach(created)
        } else {
            pthread_join(created, nil)
        }
    }
}

// MARK: - Processing modes

/// Where a hook runs its chain.
public enum ProcessingMode: Sendable, Equatable {
    /// On the calling thread, inside the callback: the callback takes as long as the chain.
    case sync
    /// On a worker thread the hook owns, fed through a bounded queue, for chains too slow
    /// for the callback. Video: `capacity` frames; when full, the OLDEST queued frame is
    /// dropped (counted in `drops`). Audio: `capacity` is in milliseconds of audio; audio is
    /// never dropped: past the capacity the queue grows and each growth is counted in
    /// `overflows` and `errors` (see docs/sdk-integration.md for why).
    ///
    /// `workers` counts for received video only (`ReceiveVideoHook`): its streams share a pool
    /// of that many threads (0: one per core), each stream on one worker at a time. The other
    /// hooks have one stream and one worker.
    case async(capacity: Int, workers: Int = 0)

    public static let asyncVideoDefault = ProcessingMode.async(capacity: 3)
    public static let asyncAudioDefault = ProcessingMode.async(capacity: 2000)

    var isAsync: Bool { if case .async = self { return true } else { return false } }
    package var capacity: Int { if case .async(let c, _) = self { return max(c, 1) } else { return 0 } }
    /// The worker threads asked for; 0 (one per core) when not said or not async.
    package var workers: Int { if case .async(_, let w) = self { return max(w, 0) } else { return 0 } }
}

// MARK: - Metrics

/// Counters and timings of one hook, safe to read from any thread.
///
/// `processing` times are recorded by the single thread that runs the chain (the SDK's
/// callback thread in sync mode, the worker in async mode); `callback` times by the SDK's
/// thread in async mode (the cost of queueing). Errors, drops and refusals are atomics, as
/// they come from several threads. Where several threads may record one timing (sync
/// callbacks of different streams, several pushing threads), the hook serialises them.
public final class HookStats: Sendable {
    public let name: String
    let processing = TimingRecorder()
    let callback = TimingRecorder()
    private let errorCount = Atomic<UInt64>(0)
    private let dropCount = Atomic<UInt64>(0)
    private let refusedCount = Atomic<UInt64>(0)
    private let overflowCount = Atomic<UInt64>(0)
    private let sendRejectedCount = Atomic<UInt64>(0)

    init(name: String) { self.name = name }

    /// Errors so far, without a snapshot (which allocates).
    public var errors: UInt64 { errorCount.load(ordering: .relaxed) }

    @inline(__always) func recordError() { errorCount.add(1, ordering: .relaxed) }
    @inline(__always) func recordDrop() { dropCount.add(1, ordering: .relaxed) }
    @inline(__always) func recordRefused() { refusedCount.add(1, ordering: .relaxed) }
    @inline(__always) func recordOverflow() {
        overflowCount.add(1, ordering: .relaxed)
        errorCount.add(1, ordering: .relaxed)
    }
    @inline(__always) func recordSendRejected() {
        sendRejectedCount.add(1, ordering: .relaxed)
        errorCount.add(1, ordering: .relaxed)
    }

    func snapshot(filters: [Metrics], async: Bool) -> HookMetrics {
        var hook = processing.snapshot(name: name)
        hook.errors = errorCount.load(ordering: .relaxed)
        hook.drops = dropCount.load(ordering: .relaxed)
        return HookMetrics(hook: hook,
                           callback: async ? callback.snapshot(name: name + ".callback") : nil,
                           refused: refusedCount.load(ordering: .relaxed),
                           overflows: overflowCount.load(ordering: .relaxed),
                           sendRejected: sendRejectedCount.load(ordering: .relaxed),
                           filters: filters)
    }
}

/// The figures of one hook: `hook` counts what went through the chain (frames or audio
/// callbacks), its errors (chain failures, malformed input, sender rejections, audio queue
/// overflows), drops (video frames dropped by an async queue or discarded at stop) and
/// p50/p99 of chain + send time; `filters` the same per filter, in chain order.
public struct HookMetrics: Sendable, CustomStringConvertible {
    public var hook: Metrics
    /// Async mode: time the SDK's thread spent in the callback (queueing only).
    public var callback: Metrics?
    /// Frames or audio offered outside start/stop (refused, never sent).
    public var refused: UInt64
    /// Async audio: times the queue had to grow past its capacity.
    public var overflows: UInt64
    /// Sends the SDK's sender answered with an error.
    public var sendRejected: UInt64
    public var filters: [Metrics]

    public var name: String { hook.name }

    public var description: String {
        var lines = [hook.description + (refused > 0 ? ", \(refused) refused" : "")
                     + (overflows > 0 ? ", \(overflows) queue overflows" : "")
                     + (sendRejected > 0 ? ", \(sendRejected) rejected by the sender" : "")]
        if let callback { lines.append("  callback " + callback.description) }
        lines += filters.map { "  " + $0.description }
        return lines.joined(separator: "\n")
    }
}

// MARK: - Lifecycle gate

/// Why a frame or audio was refused without being sent.
public enum Refusal: Sendable, Equatable, CustomStringConvertible {
    /// No sender: onInitialize / onMicInitialize / onShareSendStarted has not come, or
    /// onUninitialized has.
    case noSender
    /// The sender exists but onStartSend has not come (PS: or onStartPSModeResult was not a success).
    case notStarted
    /// onStopSend came; nothing is sent until the next onStartSend.
    case stopped
    /// The hook was closed.
    case closed
    /// The share source's onShareSendStarted came without a sender (nil).
    case shareStartedWithoutSender
    /// The share source's onShareSendStopped came.
    case shareStopped
    /// Production studio's onStartPSModeResult(false): the SDK refused the mode.
    case productionStudioRefused

    public var description: String {
        switch self {
        case .noSender: return "no sender yet (the SDK has not initialized this source, or has uninitialized it)"
        case .notStarted: return "the SDK has not called onStartSend yet"
        case .stopped: return "the SDK called onStopSend; nothing is sent until it starts sending again"
        case .closed: return "the hook is closed"
        case .shareStartedWithoutSender:
            return "the SDK called onShareSendStarted without a sender (nil); nothing is sent until it calls it with one"
        case .shareStopped: return "the SDK called onShareSendStopped; nothing is sent until onShareSendStarted comes again"
        case .productionStudioRefused:
            return "the SDK answered onStartPSModeResult(false): production studio mode did not start, so nothing is sent"
        }
    }
}

/// The sending state of a source, shared by the frame path and the SDK's lifecycle callbacks.
///
/// The frame path reads the state without a lock to refuse early (before running a chain),
/// then calls the sender inside `send`, which holds the gate's lock for the duration of the
/// sender call only. The lifecycle calls take the same lock, so once `stop` returns no send is
/// in progress and none will start: a frame in flight in the chain finishes its chain, finds
/// the gate closed and is not sent.
///
/// An SDK may call back from inside the sender call, on the same thread (`onStopSend` from
/// inside `sendVideoFrame`). Such a call does not take the lock again (no recursive mutex):
/// the state changes at once, and a change of sender is applied when the sender call returns.
final class SendGate<Sender>: Sendable {
    enum State: Int { case noSender = 0, initialized = 1, sending = 2, stopped = 3, closed = 4 }
    /// The sender; its lock is the gate's.
    private let sender = Locked<Sender?>(nil)
    /// The thread inside the sender call (0: none), to tell an SDK's re-entrant callback.
    private let sendingThread = Atomic<UInt>(0)
    /// A change of sender asked for from inside the sender call, applied when it returns
    /// (`replacementPending` spares the frame path a second lock when there is none).
    private let replacement = Locked<Sender??>(nil)
    private let replacementPending = Atomic<Bool>(false)
    private let stateBits = Atomic<Int>(State.noSender.rawValue)
    /// The SDK event behind a refusal, when one names it better than the state does
    /// (`refuse(because:)`); cleared when sending starts.
    private let causeBits = Atomic<Int>(0)
    /// The causes by their code in `causeBits` (a switch, not an array: read on the frame path).
    private static func cause(_ code: Int) -> Refusal? {
        switch code {
        case 1: return .shareStartedWithoutSender
        case 2: return .shareStopped
        case 3: return .productionStudioRefused
        default: return nil
        }
    }

    private static func code(of cause: Refusal?) -> Int {
        switch cause {
        case .shareStartedWithoutSender?: return 1
        case .shareStopped?: return 2
        case .productionStudioRefused?: return 3
        default: return 0
        }
    }
    /// Incremented by every `start`; lets a worker tell one sending period from the next.
    private let epochBits = Atomic<UInt64>(0)

    var state: State { State(rawValue: stateBits.load(ordering: .acquiring))! }
    var epoch: UInt64 { epochBits.load(ordering: .acquiring) }

    /// The refusal for the current state (named by the SDK event behind it, when one was
    /// given), or nil while sending.
    var refusal: Refusal? {
        let state = self.state
        if state != .sending, state != .closed, let cause = Self.cause(causeBits.load(ordering: .acquiring)) { return cause }
        return Self.refusal(for: state)
    }

    /// Names the SDK event that closed the gate (`nil`: the state says it): an
    /// `onShareSendStarted(nil)`, an `onShareSendStopped`, an `onStartPSModeResult(false)`.
    func refuse(because cause: Refusal?) {
        causeBits.store(Self.code(of: cause), ordering: .releasing)
    }

    static func refusal(for state: State) -> Refusal? {
        switch state {
        case .sending: return nil
        case .noSender: return .noSender
        case .initialized: return .notStarted
        case .stopped: return .stopped
        case .closed: return .closed
        }
    }

    private static var currentThread: UInt { UInt(pthread_self()) }

    /// Runs a lifecycle change under the lock, or directly when the SDK calls back from inside
    /// the sender call on this thread (which holds the lock already). `body` gets whether a
    /// sender is set and returns the sender to set, if it changes it.
    private func change<R>(_ body: (_ hasSender: Bool) -> (R, replace: Sender??)) -> R {
        if sendingThread.load(ordering: .acquiring) == Self.currentThread {
            // The sender in use is set, unless a callback before this one replaced it.
            let hasSender = replacement.withLock { pending in pending.map { $0 != nil } } ?? true
            let (result, replace) = body(hasSender)
            if let replace {
                replacement.withLock { $0 = replace }
                replacementPending.store(true, ordering: .relaxed)
            }
            return result
        }
        return sender.withLock { current in
            let (result, replace) = body(current != nil)
            if let replace { current = replace }
            return result
        }
    }

    func initialize(_ sender: Sender?) {
        change { _ -> ((), replace: Sender??) in
            guard state != .closed else { return ((), nil) }
            stateBits.store((sender == nil ? State.noSender : State.initialized).rawValue, ordering: .releasing)
            return ((), .some(sender))
        }
    }

    /// onStartSend: true when this call started a sending period (false if there is no
    /// sender or it was already sending).
    @discardableResult
    func start() -> Bool {
        change { hasSender -> (Bool, replace: Sender??) in
            guard hasSender, state == .initialized || state == .stopped else { return (false, nil) }
            causeBits.store(0, ordering: .releasing)
            epochBits.add(1, ordering: .releasing)
            stateBits.store(State.sending.rawValue, ordering: .releasing)
            return (true, nil)
        }
    }

    /// onStopSend: returns once no send is in progress (but the caller's own, when the SDK
    /// calls it from inside the sender call); none starts afterwards.
    func stop() {
        change { _ -> ((), replace: Sender??) in
            if state == .sending { stateBits.store(State.stopped.rawValue, ordering: .releasing) }
            return ((), nil)
        }
    }

    /// onUninitialized: stops and forgets the sender.
    func uninitialize() {
        change { _ -> ((), replace: Sender??) in
            if state != .closed { stateBits.store(State.noSender.rawValue, ordering: .releasing) }
            return ((), .some(nil))
        }
    }

    func close() {
        change { _ -> ((), replace: Sender??) in
            stateBits.store(State.closed.rawValue, ordering: .releasing)
            return ((), .some(nil))
        }
    }

    /// Calls `body` with the sender if sending (and, when given, still in `epoch`); returns
    /// the refusal otherwise. The lock is held during `body` only.
    @inline(__always)
    func send<R>(epoch expected: UInt64? = nil, _ body: (Sender) -> R) -> Result<R, RefusalError> {
        sender.withLock { current in
            guard state == .sending, let sender = current else {
                return .failure(RefusalError(refusal: refusal ?? .stopped))
            }
            if let expected, expected != epoch { return .failure(RefusalError(refusal: .stopped)) }
            sendingThread.store(Self.currentThread, ordering: .releasing)
            let result = body(sender)
            sendingThread.store(0, ordering: .releasing)
            if replacementPending.exchange(false, ordering: .relaxed) {
                current = replacement.withLock { pending in
                    defer { pending = nil }
                    return pending!
                }
            }
            return .success(result)
        }
    }
}

struct RefusalError: Error { let refusal: Refusal }

// MARK: - Packed output

/// A tightly packed I420 picture, allocated at negotiation and reused for every frame: what
/// `sendVideoFrame` / `sendShareFrame` take. Owned by its publisher's processing thread, which
/// writes the bytes and hands them to the sender it calls.
final class PackedPicture {
    let format: VideoFormat
    let byteCount: Int
    let bytes: UnsafeMutablePointer<CChar>

    init(format: VideoFormat) {
        self.format = format
        byteCount = format.packedByteCount
        bytes = .allocate(capacity: max(byteCount, 1))
        bytes.initialize(repeating: 0, count: max(byteCount, 1))
    }

    deinit { bytes.deallocate() }
}

// MARK: - Run-time control

/// What every single-chain hook offers from any thread, without replacing the object the SDK
/// holds: a new chain (negotiated on the calling thread when the stream's format is known,
/// swapped in between two frames or blocks, the old one released off the SDK's thread,
/// per-filter metrics carried), a parameter change or a bypass applied to the running chain
/// (filter state kept). Production studio has two chains and takes a `MediaKind` instead.
public protocol RunTimeControl: AnyObject, Sendable {
    func setChain(_ text: String) throws(ChainError)
    /// `"filter.parameter"` or `"index.parameter"`, a value in chain syntax.
    func setParameter(_ address: String, _ value: String) throws(ChainError)
    /// `"filter"` or `"index"`.
    func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError)
}

extension PreProcessorHook: RunTimeControl {}
extension VirtualSpeakerHook: RunTimeControl {}
extension VideoSourceAdapter: RunTimeControl {}
extension ShareSourceAdapter: RunTimeControl {}
extension VirtualMicAdapter: RunTimeControl {}
extension ReceiveVideoHook: RunTimeControl {}

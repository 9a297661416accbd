#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The engine's one lock: a `pthread_mutex_t` with a condition variable on the monotonic clock,
/// and the state it guards.
///
/// Shared state is reached with `withLock`. The queues whose threads wait (`WorkQueue`,
/// `WorkerPool`, the audio pacer in RawFXSDK) keep their fields themselves and use a
/// `Locked(())` as their mutex and condition: `lock`, `wait`, `signal`, `unlock`.
///
/// A pthread mutex rather than the standard library's `Mutex`: on Linux that one waits on a
/// raw futex inside the prebuilt Synchronization library, which ThreadSanitizer cannot see, so
/// every access it protects was reported as a race (`swift test --sanitize=thread` runs in
/// CI). Not recursive: taking it again on the same thread deadlocks.
/// Unchecked `Sendable`: the state is reached only inside `withLock`, under the mutex; the
/// pthread objects are made for sharing.
public final class Locked<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    public init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if os(Linux)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the state, the lock held (`pthread_mutex_lock`).
    public func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    // MARK: A waiting queue's mutex and condition (`Locked(())`)

    /// `pthread_mutex_lock`.
    @inline(__always) package func lock() { pthread_mutex_lock(mutex) }
    /// `pthread_mutex_unlock`.
    @inline(__always) package func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a signal (`pthread_cond_wait`; the lock held on entry and on return).
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a signal or until the monotonic clock reaches `deadline` nanoseconds
    /// (`pthread_cond_timedwait`; the lock held on entry and on return).
    package func wait(untilMonotonicNanoseconds deadline: UInt64) {
        #if os(Linux)
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &ts)
        #else
        let now = monotonicNanoseconds()
        let delta = deadline > now ? deadline - now : 0
        var ts = timespec(tv_sec: Int(delta / 1_000_000_000), tv_nsec: Int(delta % 1_000_000_000))
        pthread_cond_timedwait_relative_np(condition, mutex, &ts)
        #endif
    }

    /// Wakes one waiter (`pthread_cond_signal`).
    package func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter (`pthread_cond_broadcast`).
    package func broadcast() { pthread_cond_broadcast(condition) }
}

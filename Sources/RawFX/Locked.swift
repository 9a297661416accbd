#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// State behind a lock, for control-side data shared between threads.
///
/// A `pthread_mutex_t` rather than the standard library's `Mutex`: on Linux that one waits on
/// a raw futex inside the prebuilt Synchronization library, which ThreadSanitizer cannot
/// see, so every access it protects was reported as a race (`swift test --sanitize=thread`
/// runs in CI). Same shape as `Mutex.withLock`.
/// Unchecked `Sendable`: the state is reached only inside `withLock`, under the mutex.
public final class Locked<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var state: State

    public init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the state, the lock held (`pthread_mutex_lock`).
    public func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

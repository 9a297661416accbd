#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one thread the validator runs `process` on (and the real-time calls between frames),
/// so that control calls, which stay on the caller's thread, and process calls never share a
/// thread, and `is_process_thread` can answer truthfully. The caller waits for each piece of
/// work: calls are never concurrent, as rawfx.h promises a plugin.
/// Unchecked `Sendable`: `work` is set by the caller before `start` is posted and cleared after `done`: the semaphores hand it over.
final class ProcessThread: @unchecked Sendable {
    static let shared = ProcessThread()
    /// A second process thread, for two instances processing in parallel (the concurrency check).
    static let second = ProcessThread()

    private let start = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private var work: (() -> Void)?
    private(set) var thread = pthread_t()

    private init() {
        sem_init(start, 0, 0)
        sem_init(done, 0, 0)
        // The thread lives as long as the process: it holds the only reference it needs.
        let me = Unmanaged.passRetained(self).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let failed = pthread_create(&thread, &attributes, { argument in
            Unmanaged<ProcessThread>.fromOpaque(argument!).takeUnretainedValue().loop()
            return nil
        }, me)
        pthread_attr_destroy(&attributes)
        precondition(failed == 0, "rawfx validate: cannot start the process thread (pthread_create: \(failed))")
    }

    /// True on the process thread.
    var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// Runs `body` on the process thread and returns when it has finished. The closure is
    /// built on the caller's thread, so calling it allocates nothing on the process thread.
    func run(_ body: @escaping () -> Void) {
        begin(body)
        wait()
    }

    /// Starts `body` on the process thread; `wait()` returns when it has finished.
    func begin(_ body: @escaping () -> Void) {
        work = body
        sem_post(start)
    }

    func wait() {
        while sem_wait(done) != 0 {}
        work = nil
    }

    private func loop() {
        while true {
            while sem_wait(start) != 0 {}
            work?()
            sem_post(done)
        }
    }
}

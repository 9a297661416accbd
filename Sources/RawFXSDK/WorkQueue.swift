#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DequeModule
import RawFX
import Synchronization

/// The one queue between an SDK callback and a hook's worker thread: every async hook (the
/// publishers, the virtual speaker, received video per user) hands work over through it.
///
/// It moves reusable slots, never values: a producer `acquire`s a slot, fills it (copies PCM
/// or a picture in, or keeps a retained SDK object) and `enqueue`s it; the worker thread the
/// queue owns runs `process` on each slot in order and the slot returns to the free list. Slots
/// are made on demand and kept, so once the queue has seen its peak no call allocates (the
/// deques keep their capacity).
///
/// When `capacity` slots are already queued:
/// - `.dropOldest` (video): `acquire` takes the oldest queued slot back and hands it to the
///   producer with `evicted` set; the producer releases what the slot held (counting a drop)
///   and refills it. The newest frame always gets in.
/// - `.grow` (audio, which is never dropped): a new slot is made and `grew` is set, so the
///   hook can count an overflow.
///
/// Who runs `process` (the executor):
/// - `.ownThread`: a worker thread the queue owns, started on first use, joined at `close`.
/// - `.pool(p)`: one of the `WorkerPool`'s threads, shared with other queues. The queue is in
///   the pool's ready list at most once and run by at most one worker at a time (the
///   `scheduled` flag), so its slots are processed one after another in order, each on the
///   thread that took the turn; a worker takes one slot per turn and puts the queue back at
///   the end of the ready list, so streams take turns.
///
/// Threads: `acquire`, `enqueue`, `discardQueued`, `waitUntilIdle` and `close` from any thread;
/// `process` runs on the queue's own thread or a pool worker, one slot at a time. The lock is
/// held for index moves only, never while a slot is filled or processed.
/// Unchecked: the indices and slots are guarded by `lock`; a slot belongs to one thread at a time.
package final class WorkQueue<Slot: AnyObject>: PoolRunnable, @unchecked Sendable {
    package enum WhenFull: Sendable { case dropOldest, grow }
    package enum Executor: Sendable {
        case ownThread
        case pool(WorkerPool)
    }

    /// A slot handed to a producer.
    package struct Acquired {
        package let slot: Slot
        /// `.dropOldest`: this slot was the oldest queued one; what it held was never processed.
        package let evicted: Bool
        /// `.grow`: the queue was at capacity and this slot is new.
        package let grew: Bool
    }

    package let capacity: Int
    package let whenFull: WhenFull
    private let makeSlot: () -> Slot
    private let process: (Slot) -> Void
    private let threadName: String
    private let pool: WorkerPool?

    // Guarded by `lock`.
    private let lock = Locked(())
    private var free: Deque<Slot> = []
    private var queued: Deque<Slot> = []
    private var busy = false
    private var closed = false
    private var worker: HookThread?
    /// A `close` is joining the worker: other closers wait for it rather than join twice.
    private var joining = false
    /// Pool: in the pool's ready list or being run by a worker (never both twice).
    private var scheduled = false
    /// Pool: the thread processing a slot now, so a `close` from that thread does not wait.
    private var runner: pthread_t?

    /// - Parameters:
    ///   - capacity: queued slots before `whenFull` applies (at least 1).
    ///   - makeSlot: makes an empty slot (called on the producer's thread, rarely).
    ///   - process: the worker's job for one slot; it must leave the slot reusable.
    ///   - executor: the queue's own thread (default) or a shared pool.
    package init(name: String, capacity: Int, whenFull: WhenFull, executor: Executor = .ownThread,
                 makeSlot: @escaping () -> Slot, process: @escaping (Slot) -> Void) {
        self.capacity = max(capacity, 1)
        self.whenFull = whenFull
        self.makeSlot = makeSlot
        self.process = process
        threadName = name
        if case .pool(let pool) = executor {
            self.pool = pool
            pool.attach()
        } else {
            pool = nil
        }
        free.reserveCapacity(self.capacity + 2)
        queued.reserveCapacity(self.capacity + 2)
    }

    deinit { close() }

    /// [control] Makes `count` free slots now, so the first bursts (and the moment a slot is
    /// still in the worker's hands when the next one is wanted) take no allocation.
    package func prefill(_ count: Int) {
        let made = (0..<count).map { _ in makeSlot() }
        lock.lock()
        free.append(contentsOf: made)
        lock.unlock()
    }

    /// [any thread] A slot to fill, or nil once closed. Starts the worker on first use.
    package func acquire() -> Acquired? {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return nil }
        if worker == nil && pool == nil {
            // The thread keeps the queue alive until `close` ends its loop.
            worker = HookThread(name: threadName) { [self] in runWorker() }
        }
        if queued.count >= capacity {
            switch whenFull {
            case .dropOldest:
                return Acquired(slot: queued.removeFirst(), evicted: true, grew: false)
            case .grow:
                return Acquired(slot: free.popLast() ?? makeSlot(), evicted: false, grew: true)
            }
        }
        return Acquired(slot: free.popLast() ?? makeSlot(), evicted: false, grew: false)
    }

    /// [any thread] Queues a filled slot. Returns false when the queue closed meanwhile: the
    /// slot was not queued and the producer must release what it holds.
    @discardableResult
    package func enqueue(_ slot: Slot) -> Bool {
        lock.lock()
        guard !closed else {
            lock.unlock()
            return false
        }
        queued.append(slot)
        guard let pool else {
            lock.signal()
            lock.unlock()
            return true
        }
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule { pool.schedule(self) }
        return true
    }

    /// [any thread] Gives back a slot acquired but not enqueued.
    package func giveBack(_ slot: Slot) {
        lock.lock()
        free.append(slot)
        lock.unlock()
    }

    /// [any thread] Takes every queued slot out unprocessed and runs `body` on each (outside
    /// the lock) before it returns to the free list; returns how many. For a stop: the hook
    /// releases what they hold and counts them as drops.
    @discardableResult
    package func discardQueued(_ body: (Slot) -> Void) -> Int {
        lock.lock()
        let taken = Array(queued)
        queued.removeAll(keepingCapacity: true)
        lock.unlock()
        for slot in taken { body(slot) }
        lock.lock()
        free.append(contentsOf: taken)
        lock.unlock()
        return taken.count
    }

    /// Slots waiting (not counting the one being processed).
    package var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return queued.count
    }

    /// [not the worker] Blocks until every queued slot has been processed.
    package func waitUntilIdle() {
        lock.lock()
        defer { lock.unlock() }
        while !queued.isEmpty || busy {
            lock.wait()
        }
    }

    /// [any thread] Processes what is queued, then stops the worker; later `acquire`s get nil.
    /// From the worker itself (a sink that closes its hook) it returns without waiting.
    /// Idempotent. `leftover` receives slots the worker never reached (none after a normal
    /// drain; kept for a worker that never started).
    package func close(leftover: (Slot) -> Void = { _ in }) {
        if let pool { return closeInPool(pool, leftover: leftover) }
        lock.lock()
        closed = true
        lock.broadcast()
        let thread = worker
        worker = nil
        if thread == nil {
            while joining { lock.wait() }
        } else {
            joining = true
        }
        lock.unlock()
        if let thread {
            thread.join()
            lock.lock()
            joining = false
            lock.broadcast()
            lock.unlock()
        }
        lock.lock()
        let remaining = Array(queued)
        queued.removeAll()
        lock.broadcast()
        lock.unlock()
        for slot in remaining { leftover(slot) }
    }

    /// `close` for a pooled queue. Off the pool, it waits for the pool's workers to drain the
    /// queue. On a pool worker that is processing this queue's slot now (a sink closing its
    /// hook), it returns without waiting, as from an own thread; on a worker busy with another
    /// queue, it drains this one itself (waiting would deadlock a pool of one).
    private func closeInPool(_ pool: WorkerPool, leftover: (Slot) -> Void) {
        let me = pthread_self()
        lock.lock()
        let wasClosed = closed
        closed = true
        lock.broadcast()
        if let runner, pthread_equal(runner, me) != 0 {
            let remaining = Array(queued)
            queued.removeAll()
            lock.unlock()
            for slot in remaining { leftover(slot) }
        } else if pool.isWorkerThread(me) {
            while busy { lock.wait() }
            while let slot = queued.popFirst() {
                runHoldingLock(slot)
                lock.broadcast()
            }
            lock.unlock()
        } else {
            while !queued.isEmpty || busy { lock.wait() }
            lock.unlock()
        }
        if !wasClosed { pool.detach() }
    }

    /// [pool, lock held on entry and on return] Processes `slot` on this thread, outside the
    /// lock and marked busy (so closers wait and a close from inside sees its runner), then
    /// returns it to the free list.
    private func runHoldingLock(_ slot: Slot) {
        busy = true
        runner = pthread_self()
        lock.unlock()
        process(slot)
        lock.lock()
        free.append(slot)
        busy = false
        runner = nil
    }

    /// [pool worker] One turn: processes the oldest slot, then goes back to the end of the
    /// pool's ready list if more wait, or leaves it.
    func runTurn() {
        lock.lock()
        guard !busy, let slot = queued.popFirst() else {
            // Drained by a closer meanwhile (or busy in a closer's hands, which drains it).
            scheduled = false
            lock.broadcast()
            lock.unlock()
            return
        }
        runHoldingLock(slot)
        let more = !queued.isEmpty
        if !more { scheduled = false }
        lock.broadcast()
        lock.unlock()
        if more { pool!.schedule(self) }
    }

    private func runWorker() {
        lock.lock()
        while true {
            busy = false
            lock.broadcast()
            while queued.isEmpty && !closed { lock.wait() }
            guard let slot = queued.popFirst() else { break }  // closed and drained
            busy = true
            lock.unlock()
            process(slot)
            lock.lock()
            free.append(slot)
        }
        busy = false
        lock.broadcast()
        lock.unlock()
    }
}

/// What a `WorkerPool` runs: a queue with work, one turn at a time.
protocol PoolRunnable: AnyObject {
    /// [pool worker] Processes one unit of work; the runnable reschedules itself if more wait.
    func runTurn()
}

/// K threads serving many `WorkQueue`s (received video: every (user, pipe) stream of a hook),
/// so 25 streams need not be 25 threads. Each queue is run by one worker at a time (see
/// `WorkQueue`), different queues in parallel. Threads start as queues attach (one per queue,
/// up to `maxWorkers`), on the attaching (control) thread, never on the frame path, and stay
/// until `close`.
///
/// The frame path takes the pool's lock once per turn to move a queue in or out of the ready
/// list (the wake-up); the list holds each attached queue at most once and its capacity is
/// reserved as queues attach, so scheduling allocates nothing.
///
/// Threads: `schedule`, `attach`, `detach`, `isWorkerThread` from any thread; `close` from any
/// thread once no queue will schedule again.
/// Unchecked: the run list and threads are guarded by `lock`.
package final class WorkerPool: @unchecked Sendable {
    package let maxWorkers: Int
    private let name: String

    // Guarded by `lock`.
    private let lock = Locked(())
    private var ready: Deque<any PoolRunnable> = []
    private var threads: [HookThread] = []
    private var threadIDs: [pthread_t] = []
    private var idle = 0
    private var attached = 0
    private var stopped = false
    /// `ready.count`, readable without the lock: what an idle worker polls.
    private let readyCount = Atomic<Int>(0)

    /// How long a worker that ran out of work polls for more before it sleeps. A sleeping
    /// thread of a VM takes about a small stream's whole frame to run again after a
    /// wake-up (its vCPU is halted); frames of many users come in bursts, so the
    /// next is usually this close. Costs at most this much CPU per burst and worker (the
    /// engine's thread pool polls as long, for the same reason: thread_pool.c).
    static let pollNanoseconds: UInt64 = 100_000

    /// - Parameter workers: threads at most; 0 or less takes `defaultWorkerCount`.
    package init(name: String, workers: Int) {
        self.name = name
        maxWorkers = workers > 0 ? workers : Self.defaultWorkerCount
        threads.reserveCapacity(maxWorkers)
        threadIDs.reserveCapacity(maxWorkers)
    }

    deinit { close() }

    /// The number of online cores (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
    package static var defaultWorkerCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    /// Threads started so far.
    package var workerCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return threads.count
    }

    /// [control] A queue will schedule here: room for it in the ready list now, and a worker
    /// for it while there are fewer than `maxWorkers` (starting a thread allocates, so it
    /// happens here, at subscribe, not when an SDK callback schedules a frame).
    func attach() {
        lock.lock()
        attached += 1
        ready.reserveCapacity(attached)
        while threads.count < min(attached, maxWorkers) && !stopped {
            let thread = HookThread(name: "\(name)-\(threads.count)") { [self] in runWorker() }
            threads.append(thread)
        }
        lock.unlock()
    }

    /// [control] A queue closed.
    func detach() {
        lock.lock()
        attached -= 1
        lock.unlock()
    }

    /// [any thread] Puts `runnable` at the end of the ready list and wakes an idle worker (a
    /// busy one takes it when its turn ends). The caller guarantees it is not in the list
    /// already. No allocation: the list's capacity was reserved at `attach`.
    func schedule(_ runnable: any PoolRunnable) {
        lock.lock()
        ready.append(runnable)
        readyCount.store(ready.count, ordering: .releasing)
        if idle > 0 { lock.signal() }
        lock.unlock()
    }

    /// Whether `thread` is one of this pool's workers.
    func isWorkerThread(_ thread: pthread_t) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return threadIDs.contains { pthread_equal($0, thread) != 0 }
    }

    /// [control] Lets the workers finish what is ready, then joins them (from a worker itself,
    /// that one is detached). Idempotent.
    package func close() {
        lock.lock()
        stopped = true
        lock.broadcast()
        let running = threads
        threads.removeAll()
        lock.unlock()
        for thread in running { thread.join() }
    }

    private func runWorker() {
        lock.lock()
        threadIDs.append(pthread_self())
        while true {
            var next = ready.popFirst()
            if next != nil {
                readyCount.store(ready.count, ordering: .releasing)
                lock.unlock()
                next!.runTurn()
                // Released here, outside the lock: the last reference to a closed queue runs
                // its deinit, which takes this lock.
                next = nil
                lock.lock()
                continue
            }
            if stopped { break }
            // Poll before sleeping (pollNanoseconds); `schedule` signals only idle workers.
            lock.unlock()
            let pollEnd = monotonicNanoseconds() &+ Self.pollNanoseconds
            while readyCount.load(ordering: .acquiring) == 0 && monotonicNanoseconds() < pollEnd {}
            lock.lock()
            if !ready.isEmpty || stopped { continue }
            idle += 1
            lock.wait()
            idle -= 1
        }
        lock.unlock()
    }
}

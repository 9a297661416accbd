import DequeModule
import RawFX

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
/// Threads: `acquire`, `enqueue`, `discardQueued`, `waitUntilIdle` and `close` from any thread;
/// `process` runs on the queue's own thread only. The lock is held for index moves only,
/// never while a slot is filled or processed.
package final class WorkQueue<Slot: AnyObject>: @unchecked Sendable {
    package enum WhenFull: Sendable { case dropOldest, grow }

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

    // Guarded by `lock`.
    private let lock = HookLock()
    private var free: Deque<Slot> = []
    private var queued: Deque<Slot> = []
    private var busy = false
    private var closed = false
    private var worker: HookThread?
    /// A `close` is joining the worker: other closers wait for it rather than join twice.
    private var joining = false

    /// - Parameters:
    ///   - capacity: queued slots before `whenFull` applies (at least 1).
    ///   - makeSlot: makes an empty slot (called on the producer's thread, rarely).
    ///   - process: the worker's job for one slot; it must leave the slot reusable.
    package init(name: String, capacity: Int, whenFull: WhenFull,
                 makeSlot: @escaping () -> Slot, process: @escaping (Slot) -> Void) {
        self.capacity = max(capacity, 1)
        self.whenFull = whenFull
        self.makeSlot = makeSlot
        self.process = process
        threadName = name
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
        if worker == nil {
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
        defer { lock.unlock() }
        guard !closed else { return false }
        queued.append(slot)
        lock.signal()
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

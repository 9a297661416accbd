import Foundation
import RawFX
import RawFXAllocCounter
import RawFXEmulator
@testable import RawFXSDK
import Synchronization
import XCTest
@testable import RawFXTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Many queues over one `WorkerPool`: each queue's slots in order and on one worker at a time,
/// different queues in parallel, no allocation once warm, and a close from inside the pool.
extension WorkQueueTests {
    /// What one queue's worker saw.
    final class PoolTrack: @unchecked Sendable {
        let seen = Locked<[Int]>([])
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
    }

    func testPoolRuns25QueuesOver2WorkersInOrderOneWorkerPerQueue() {
        let pool = WorkerPool(name: "test-pool", workers: 2)
        let tracks = (0..<25).map { _ in PoolTrack() }
        let threads = Locked<Set<UInt>>([])
        let queues = tracks.map { track in
            WorkQueue<Box>(name: "test", capacity: 4, whenFull: .grow, executor: .pool(pool), makeSlot: Box.init) { slot in
                if track.inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                    track.overlaps.add(1, ordering: .relaxed)
                }
                threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                track.seen.withLock { $0.append(slot.value) }
                track.inside.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        // Five producer threads (SDK delivery threads), each feeding five queues.
        DispatchQueue.concurrentPerform(iterations: 5) { producer in
            for value in 0..<200 {
                for index in stride(from: producer, to: queues.count, by: 5) {
                    let acquired = queues[index].acquire()!
                    acquired.slot.value = value
                    queues[index].enqueue(acquired.slot)
                }
            }
        }
        for queue in queues { queue.close() }  // each drains first
        XCTAssertEqual(pool.maxWorkers, 2)
        XCTAssertLessThanOrEqual(pool.workerCount, 2)
        pool.close()
        for (index, track) in tracks.enumerated() {
            XCTAssertEqual(track.seen.withLock { $0 }, Array(0..<200), "queue \(index): every slot, in order")
            XCTAssertEqual(track.overlaps.load(ordering: .relaxed), 0, "queue \(index) was run by two workers at once")
        }
        XCTAssertLessThanOrEqual(threads.withLock { $0.count }, 2, "25 queues, 2 threads")
    }

    /// Two queues' slots are processed at the same time: the first one waits (at most 10 s,
    /// a failure bound, not a speed claim) for the second to be inside too. A pool that ran
    /// one queue at a time would never let them meet.
    func testPoolRunsDifferentQueuesInParallel() {
        let pool = WorkerPool(name: "test-pool", workers: 2)
        let inside = Atomic<Int>(0)
        let met = Atomic<Bool>(false)
        func makeQueue() -> WorkQueue<Box> {
            WorkQueue<Box>(name: "test", capacity: 2, whenFull: .grow, executor: .pool(pool), makeSlot: Box.init) { _ in
                inside.add(1, ordering: .sequentiallyConsistent)
                let deadline = monotonicNanoseconds() + 10_000_000_000
                while inside.load(ordering: .sequentiallyConsistent) < 2 && monotonicNanoseconds() < deadline { usleep(100) }
                if inside.load(ordering: .sequentiallyConsistent) >= 2 { met.store(true, ordering: .relaxed) }
            }
        }
        let queues = [makeQueue(), makeQueue()]
        for queue in queues {
            let acquired = queue.acquire()!
            queue.enqueue(acquired.slot)
        }
        for queue in queues { queue.close() }
        pool.close()
        XCTAssertTrue(met.load(ordering: .relaxed), "the two queues never ran at the same time")
    }

    /// A pool of one: a slot of queue A closes queue B, which still has slots waiting. Waiting
    /// for the pool would wait for itself; the closing worker drains B in order instead.
    func testCloseFromAnotherQueuesWorkerDrainsInsteadOfDeadlocking() {
        let pool = WorkerPool(name: "test-pool", workers: 1)
        let seenB = Locked<[Int]>([])
        let queueB = WorkQueue<Box>(name: "b", capacity: 8, whenFull: .grow, executor: .pool(pool), makeSlot: Box.init) { slot in
            seenB.withLock { $0.append(slot.value) }
        }
        let closedB = Atomic<Bool>(false)
        let hold = Locked<Bool>(true)
        let queueA = WorkQueue<Box>(name: "a", capacity: 2, whenFull: .grow, executor: .pool(pool), makeSlot: Box.init) { _ in
            while hold.withLock({ $0 }) { usleep(200) }
            queueB.close()
            closedB.store(true, ordering: .releasing)
        }
        let a = queueA.acquire()!
        queueA.enqueue(a.slot)
        while pool.workerCount == 0 { usleep(100) }
        usleep(10_000)  // the one worker is inside A, held
        for value in 0..<5 {
            let b = queueB.acquire()!
            b.slot.value = value
            queueB.enqueue(b.slot)
        }
        hold.withLock { $0 = false }
        queueA.close()
        XCTAssertTrue(closedB.load(ordering: .acquiring))
        XCTAssertEqual(seenB.withLock { $0 }, Array(0..<5))
        XCTAssertNil(queueB.acquire())
        pool.close()
    }

    /// Once warm, neither the producers (three queues over two workers) nor a worker (a pool
    /// of one, so one thread's counter sees every turn: the pool's loop, the wake-up and the
    /// queue's index moves between two slots) allocates.
    func testPoolSteadyStateAllocatesNothingOnEitherSide() {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        // Indexed loops: a debug build's Array iterator allocates (the test's own cost, not the queue's).
        func feed(_ queues: [WorkQueue<Box>], rounds: Int) {
            for i in 0..<rounds {
                for q in 0..<queues.count {
                    let acquired = queues[q].acquire()!
                    acquired.slot.value = i
                    queues[q].enqueue(acquired.slot)
                }
                if i % 3 == 0 { for q in 0..<queues.count { queues[q].waitUntilIdle() } }
            }
            for q in 0..<queues.count { queues[q].waitUntilIdle() }
        }

        let pool = WorkerPool(name: "test-pool", workers: 2)
        let queues = (0..<3).map { _ in
            WorkQueue<Box>(name: "test", capacity: 4, whenFull: .dropOldest, executor: .pool(pool), makeSlot: Box.init) { _ in }
        }
        // Every slot a queue can have out at once (capacity queued, one in the worker's hands,
        // one being filled), made now: on a slow (sanitized) run the warm-up may not reach that
        // peak, and a slot made later would count as a producer allocation.
        for queue in queues { queue.prefill(4 + 2) }
        feed(queues, rounds: 64)  // warm-up: both threads started
        let before = rawfx_thread_allocation_count()
        feed(queues, rounds: 1000)
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "the producer allocates nothing")
        for queue in queues { queue.close() }
        pool.close()

        let single = WorkerPool(name: "test-pool", workers: 1)
        let counted = Locked<(last: UInt64?, growth: UInt64)>((nil, 0))
        let queue = WorkQueue<Box>(name: "test", capacity: 4, whenFull: .dropOldest, executor: .pool(single), makeSlot: Box.init) { _ in
            let now = rawfx_thread_allocation_count()
            counted.withLock { c in
                if let last = c.last { c.growth += now &- last }
                c.last = now
            }
        }
        feed([queue], rounds: 64)
        counted.withLock { $0.growth = 0 }
        feed([queue], rounds: 1000)
        XCTAssertEqual(counted.withLock { $0.growth }, 0, "the worker allocates nothing between two slots")
        queue.close()
        single.close()
    }
}

/// Received video in async mode: every stream's queue over the hook's pool.
extension ReceiveVideoTests {
    /// 25 users at 180p over 2 workers, frames delivered from 25 SDK threads at once: each
    /// user's outputs are what a lone stateful chain makes of that user's frames, in order;
    /// two threads did all the work.
    func testTwentyFiveUsersOverTwoWorkersKeepEachUsersOrderAndState() throws {
        let format = VideoFormat(width: 320, height: 180)
        let ledger = self.ledger!
        let recorder = ReceivedFrames()
        // Capacity above the frames per user: nothing may be dropped here.
        let hook = try ReceiveVideoHook(chain: "blend=weight=200", registry: registry,
                                        mode: .async(capacity: 8, workers: 2), sink: recorder.sink)
        let pipes = (1...25).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
        for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p180, format: format) }
        DispatchQueue.concurrentPerform(iterations: pipes.count) { index in
            for n in 0..<6 { deliverFrame(pipes[index], format, seed: index * 10 + n, ledger: ledger) }
        }
        hook.waitUntilIdle()
        XCTAssertEqual(hook.workerThreads?.limit, 2)
        XCTAssertEqual(hook.workerThreads?.started, 2)
        XCTAssertEqual(hook.metrics.hook.drops, 0)
        for (index, pipe) in pipes.enumerated() {
            let seeds = (0..<6).map { index * 10 + $0 }
            let got = recorder.frames(of: ReceiveStreamID(user: pipe.user))
            XCTAssertEqual(got.map { $0.timestamp / 1000 }, seeds.map(Int64.init), "user \(index + 1): in order")
            XCTAssertEqual(got.map(\.planes), try alone("blend=weight=200", format, seeds: seeds), "user \(index + 1): own state")
        }
        XCTAssertEqual(recorder.threads.withLock { $0.count }, 2, "25 streams, 2 threads")
        hook.close()
        XCTAssertEqual(hook.workerThreads?.started, 0, "close joins the pool")
        XCTAssertEqual(ledger.releases, ledger.addRefs)
        XCTAssertEqual(ledger.violations, [])
    }

    /// Both workers held in the sink by two users' first frames: the other 23 users' first
    /// frames wait in their queues, so 5 more frames each overflow a capacity of 2 exactly as
    /// they would with a thread per user: a held user keeps [0, 4, 5] (3 dropped), a waiting
    /// one [4, 5] (4 dropped, its first frame included), every reference released once.
    func testTwentyFiveUsersOverTwoWorkersDropTheOldestAndCountEveryDrop() throws {
        let format = VideoFormat(width: 320, height: 180)
        let ledger = self.ledger!
        let recorder = ReceivedFrames()
        recorder.gate.withLock { $0 = false }
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry,
                                        mode: .async(capacity: 2, workers: 2), sink: recorder.sink)
        let pipes = (1...25).map { EmulatedVideoPipe(user: SDKUser(UInt64($0)), ledger: ledger) }
        for pipe in pipes { try hook.subscribe(pipe, user: pipe.user, resolution: .p180, format: format) }
        for pipe in pipes { deliver(pipe, format, seed: 0) }
        let ids = pipes.map { ReceiveStreamID(user: $0.user) }
        while ids.reduce(0, { $0 + recorder.enteredCount($1) }) < 2 { usleep(200) }
        usleep(20_000)  // a third worker, if the pool had one, would have entered by now
        let held = Set(ids.filter { recorder.enteredCount($0) == 1 })
        XCTAssertEqual(held.count, 2, "two workers: two users in the sink")
        DispatchQueue.concurrentPerform(iterations: pipes.count) { index in
            for n in 1...5 { deliverFrame(pipes[index], format, seed: n, ledger: ledger) }
        }
        recorder.gate.withLock { $0 = true }
        hook.waitUntilIdle()
        for id in ids {
            let timestamps = recorder.frames(of: id).map { $0.timestamp / 1000 }
            if held.contains(id) {
                XCTAssertEqual(timestamps, [0, 4, 5], "\(id)")
                XCTAssertEqual(hook.metrics(for: id)?.hook.drops, 3, "\(id)")
            } else {
                XCTAssertEqual(timestamps, [4, 5], "\(id)")
                XCTAssertEqual(hook.metrics(for: id)?.hook.drops, 4, "\(id)")
            }
        }
        XCTAssertEqual(hook.metrics.hook.drops, 2 * 3 + 23 * 4)
        XCTAssertEqual(hook.metrics.hook.frames, 2 * 3 + 23 * 2)
        hook.close()
        XCTAssertEqual(ledger.addRefs, 25 * 6, "every frame was retained (heap memory)")
        XCTAssertEqual(ledger.releases, ledger.addRefs, "and released exactly once")
        XCTAssertEqual(ledger.violations, [])
    }

    /// A sink that unsubscribes another user while both workers are busy does not wait for
    /// itself: the other user's queued frames are drained, then released.
    func testUnsubscribeFromTheSinkOfAnotherStreamOnAOneWorkerPool() throws {
        let format = VideoFormat(width: 320, height: 180)
        let hookBox = Locked<ReceiveVideoHook?>(nil)
        let seen = Locked<[ReceiveStreamID]>([])
        let hold = Locked<Bool>(true)
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, mode: .async(capacity: 4, workers: 1)) { id, _ in
            seen.withLock { $0.append(id) }
            if id.user == SDKUser(1) {
                while hold.withLock({ $0 }) { usleep(200) }
                hookBox.withLock { $0 }?.unsubscribe(user: SDKUser(2))
            }
        }
        hookBox.withLock { $0 = hook }
        let first = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        let second = EmulatedVideoPipe(user: SDKUser(2), ledger: ledger)
        try hook.subscribe(first, user: first.user, resolution: .p180, format: format)
        try hook.subscribe(second, user: second.user, resolution: .p180, format: format)
        deliver(first, format, seed: 0)
        while seen.withLock({ $0.count }) == 0 { usleep(200) }
        for seed in 1...3 { deliver(second, format, seed: seed) }
        hold.withLock { $0 = false }
        hook.waitUntilIdle()
        XCTAssertEqual(hook.streams, [ReceiveStreamID(user: SDKUser(1))])
        XCTAssertEqual(hook.metrics.hook.frames + hook.metrics.hook.drops, 4, "every frame processed or dropped")
        hookBox.withLock { $0 = nil }
        hook.close()
        XCTAssertEqual(ledger.releases, ledger.addRefs)
        XCTAssertEqual(ledger.violations, [])
    }
}

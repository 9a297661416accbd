import RawFX
@testable import RawFXSDK
@testable import RawFX
import RawFXAllocCounter
import Foundation
import XCTest
@testable import RawFXTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The one queue every async hook uses: order, drop-oldest, growth, drain on close, and no
/// allocation once it has seen its peak.
final class WorkQueueTests: XCTestCase {
    final class Box { var value = -1 }

    /// Records what the worker saw, in order, and can hold the worker back.
    final class Recorder: @unchecked Sendable {
        let seen = Locked<[Int]>([])
        let gate = Locked<Bool>(false)
        func record(_ v: Int) {
            while !gate.withLock({ $0 }) { usleep(200) }
            seen.withLock { $0.append(v) }
        }
    }

    func testDropOldestKeepsTheNewestAndCountsEvictions() {
        let recorder = Recorder()
        let queue = WorkQueue<Box>(name: "test", capacity: 3, whenFull: .dropOldest, makeSlot: Box.init) {
            recorder.record($0.value)
        }
        var evicted: [Int] = []
        for i in 0..<10 {
            let a = queue.acquire()!
            if a.evicted { evicted.append(a.slot.value) }
            a.slot.value = i
            queue.enqueue(a.slot)
        }
        recorder.gate.withLock { $0 = true }
        queue.waitUntilIdle()
        queue.close()
        let seen = recorder.seen.withLock { $0 }
        // The worker may have taken one slot (value 0) before the gate opened; every value
        // is either processed once or evicted once, in order, and the newest three survive.
        XCTAssertEqual(Set(seen).union(evicted).sorted(), Array(0..<10))
        XCTAssertTrue(Set(seen).isDisjoint(with: evicted))
        XCTAssertEqual(seen, seen.sorted())
        XCTAssertEqual(Array(seen.suffix(3)), [7, 8, 9])
        XCTAssertGreaterThanOrEqual(evicted.count, 6)
    }

    func testGrowNeverDropsAndFlagsGrowth() {
        let recorder = Recorder()
        let queue = WorkQueue<Box>(name: "test", capacity: 2, whenFull: .grow, makeSlot: Box.init) {
            recorder.record($0.value)
        }
        var grew = 0
        for i in 0..<8 {
            let a = queue.acquire()!
            XCTAssertFalse(a.evicted)
            if a.grew { grew += 1 }
            a.slot.value = i
            queue.enqueue(a.slot)
        }
        recorder.gate.withLock { $0 = true }
        queue.close()  // drains first
        XCTAssertEqual(recorder.seen.withLock { $0 }, Array(0..<8))
        XCTAssertGreaterThanOrEqual(grew, 5)
        XCTAssertNil(queue.acquire(), "a closed queue takes nothing")
    }

    func testDiscardQueuedHandsBackEveryWaitingSlot() {
        let recorder = Recorder()
        let queue = WorkQueue<Box>(name: "test", capacity: 8, whenFull: .dropOldest, makeSlot: Box.init) {
            recorder.record($0.value)
        }
        for i in 0..<5 {
            let a = queue.acquire()!
            a.slot.value = i
            queue.enqueue(a.slot)
        }
        usleep(20_000)  // the worker takes value 0 and waits at the gate
        var discarded: [Int] = []
        let n = queue.discardQueued { discarded.append($0.value) }
        recorder.gate.withLock { $0 = true }
        queue.close()
        XCTAssertEqual(n, discarded.count)
        XCTAssertEqual((recorder.seen.withLock { $0 } + discarded).sorted(), Array(0..<5))
    }

    func testSteadyStateAllocatesNothing() {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let queue = WorkQueue<Box>(name: "test", capacity: 4, whenFull: .dropOldest, makeSlot: Box.init) { _ in }
        for i in 0..<64 {  // warm-up: slots made, thread started
            let a = queue.acquire()!
            a.slot.value = i
            queue.enqueue(a.slot)
        }
        queue.waitUntilIdle()
        let before = rawfx_thread_allocation_count()
        for i in 0..<1000 {
            let a = queue.acquire()!
            a.slot.value = i
            queue.enqueue(a.slot)
            if i % 3 == 0 { queue.waitUntilIdle() }
        }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        queue.close()
    }
}

/// The one hand-off: latest value wins, and what the processing thread retires is released on
/// the control side.
final class MailboxTests: XCTestCase {
    final class Tracked {
        static let deinitThreads = Locked<[UInt]>([])
        deinit { Tracked.deinitThreads.withLock { $0.append(UInt(pthread_self())) } }
    }

    func testRetiredValuesAreReleasedByTheControlSideOnly() {
        Tracked.deinitThreads.withLock { $0 = [] }
        let mailbox = Mailbox<Tracked>()
        let control = UInt(pthread_self())
        let processingThread = Locked<UInt>(0)
        // The processing side retires four values with no control call in between.
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            processingThread.withLock { $0 = UInt(pthread_self()) }
            for _ in 0..<4 { mailbox.retire(Tracked()) }
            done.signal()
        }
        thread.start()
        done.wait()
        XCTAssertEqual(Tracked.deinitThreads.withLock { $0 }, [], "nothing released on the processing thread")
        XCTAssertEqual(mailbox.releasedOnProcessingThread, 0)
        mailbox.collect()
        XCTAssertEqual(Tracked.deinitThreads.withLock { $0 }, [control, control, control, control])
        XCTAssertNotEqual(processingThread.withLock { $0 }, control)
    }

    func testTheLatestPostWins() {
        let mailbox = Mailbox<Tracked>()
        let first = Tracked(), second = Tracked()
        mailbox.post { _ in first }
        mailbox.post { waiting in
            XCTAssertTrue(waiting === first, "the waiting value is offered to the next post")
            return second
        }
        XCTAssertTrue(mailbox.take() === second)
        XCTAssertNil(mailbox.take())
    }
}

extension WorkQueueTests {
    /// Two threads closing at once: the worker is joined once, both return after the drain.
    func testConcurrentClosesJoinOnceAndBothSeeTheDrain() {
        let processed = Locked<Int>(0)
        let queue = WorkQueue<Box>(name: "test", capacity: 64, whenFull: .grow, makeSlot: Box.init) { _ in
            usleep(1000)
            processed.withLock { $0 += 1 }
        }
        for i in 0..<20 {
            let a = queue.acquire()!
            a.slot.value = i
            queue.enqueue(a.slot)
        }
        let group = DispatchGroup()
        let seenAtReturn = Locked<[Int]>([])
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                queue.close()
                seenAtReturn.withLock { $0.append(processed.withLock { $0 }) }
            }
        }
        group.wait()
        XCTAssertEqual(seenAtReturn.withLock { $0 }, [20, 20], "each close returns after every queued slot ran")
    }
}

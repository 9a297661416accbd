import RawFX
@testable import RawFXSDK
import RawFXAllocCounter
import XCTest
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

import CRawFX
import Foundation
import RawFX
import RawFXRuntime
import XCTest
@testable import RawFXTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What one run's jobs record: how often each index ran and on which thread. Raw memory,
/// not Swift arrays: jobs on several threads write different elements at once, and a Swift
/// array element write is an exclusive access to the whole array (ThreadSanitizer reports it).
private final class RunRecord {
    static let maxJobs = 16
    let hits = UnsafeMutablePointer<Int>.allocate(capacity: maxJobs)
    let threads = UnsafeMutablePointer<pthread_t>.allocate(capacity: maxJobs)
    init() { reset() }
    deinit {
        hits.deallocate()
        threads.deallocate()
    }
    func reset() {
        hits.initialize(repeating: 0, count: Self.maxJobs)
        threads.initialize(repeating: 0, count: Self.maxJobs)
    }
    func hits(_ range: Range<Int>) -> [Int] { Array(UnsafeBufferPointer(start: hits + range.lowerBound, count: range.count)) }
    func threads(_ range: Range<Int>) -> [pthread_t] {
        Array(UnsafeBufferPointer(start: threads + range.lowerBound, count: range.count))
    }
}

/// The pool's job: counts its index and notes the thread. Each index is written by one job
/// only, and the run's return orders the writes before the test reads them. It lasts 50 µs
/// or more, so that every thread taking part in a run gets jobs (a worker joining that
/// should not shows up as one thread too many).
private let recordJob: rawfx_slice_job = { context, index in
    usleep(50)
    let record = Unmanaged<RunRecord>.fromOpaque(context!).takeUnretainedValue()
    record.hits[Int(index)] += 1
    record.threads[Int(index)] = pthread_self()
}

/// rfx_runtime_run_jobs (thread_pool.c) across its wake-up paths: workers still spinning
/// from the previous run, workers asleep on the semaphore (a pause longer than the spin),
/// workers parked by a lower thread count and taken back in.
final class ThreadPoolTests: XCTestCase {
    private var threadsBefore = 1

    override func setUp() {
        super.setUp()
        threadsBefore = RawFXThreadPool.threadCount
    }

    override func tearDown() {
        RawFXThreadPool.threadCount = threadsBefore
        super.tearDown()
    }

    func testEveryJobRunsOnceOnNoMoreThreadsThanSetAcrossSpinSleepAndPark() {
        let record = RunRecord()
        // 3, then 2 (the third thread parks), 1 (inline), 2 and 3 again (taken back in).
        for threads in [3, 2, 1, 2, 3, 2] {
            // The count changes while the workers sleep: a worker the new count leaves out
            // is woken by the next run all the same, and must not join it.
            usleep(2_000)
            RawFXThreadPool.threadCount = threads
            XCTAssertEqual(RawFXThreadPool.threadCount, threads)
            for run in 0..<120 {
                // Every 10th run after a pause longer than the workers' 100 µs spin: they sleep.
                if run % 10 == 9 { usleep(2_000) }
                let jobs = 1 + run % RunRecord.maxJobs
                record.reset()
                rfx_runtime_run_jobs(recordJob, Unmanaged.passUnretained(record).toOpaque(), UInt32(jobs))
                XCTAssertEqual(record.hits(0..<jobs), [Int](repeating: 1, count: jobs),
                               "\(threads) threads, run \(run): every job exactly once")
                XCTAssertEqual(record.hits(jobs..<RunRecord.maxJobs).reduce(0, +), 0, "no job past the count")
                var distinct: [pthread_t] = []
                for t in record.threads(0..<jobs) where !distinct.contains(t) { distinct.append(t) }
                XCTAssertLessThanOrEqual(distinct.count, threads, "\(threads) threads, run \(run): threads used")
                if threads == 1 { XCTAssertEqual(distinct, [pthread_self()], "one thread runs every job inline") }
            }
        }
    }

    func testAWorkerTakesJobsWhenTwoThreadsAreSet() {
        // The caller takes jobs too, so a worker shows only when the caller is busy long enough:
        // each job sleeps 1 ms, far longer than a worker's wake-up.
        RawFXThreadPool.threadCount = 2
        let sleepingJob: rawfx_slice_job = { context, index in
            usleep(1_000)
            context!.assumingMemoryBound(to: pthread_t.self)[Int(index)] = pthread_self()
        }
        var threads = [pthread_t](repeating: 0, count: 8)
        threads.withUnsafeMutableBufferPointer { rfx_runtime_run_jobs(sleepingJob, $0.baseAddress, 8) }
        XCTAssertFalse(threads.contains(0), "every job ran")
        XCTAssertTrue(threads.contains { $0 != pthread_self() }, "a worker thread took at least one job")
    }
}

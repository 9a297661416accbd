// The machine's own 2-thread ceiling, measured in the same rounds as a threaded case.
import CLibYUV
#if canImport(Glibc)
import Glibc
#endif
import RawFX
import RawFXRuntime

/// What N threads of this machine give at this moment: SIMD arithmetic on data in each
/// thread's L1 cache (libyuv's ComputeSumSquareError, the kind of vector work the kernels
/// do, with no memory traffic), cut into jobs and run through the engine's own thread pool
/// (`rfx_runtime_run_jobs`) exactly as the plugins' slices are.
///
/// Why: on a shared VM the second vCPU is not always a whole core (another guest on its
/// SMT sibling, or on the host's memory). A threaded case's speedup then moves from run to
/// run by more than its margins. Measured in the same interleaved rounds as that case,
/// p50(1 thread) / p50(N threads) of this workload is the speedup the machine allowed
/// during those rounds, and the case's speedup over it (its efficiency) is what the
/// engine and the kernels make of it.
final class ParallelCeiling: Workload, ThreadCounted {
    let threads: Int
    /// Jobs per run: several per thread, as the scale filter cuts a frame, so that a slower
    /// thread takes fewer of them.
    static let jobCount: UInt32 = 8
    /// Bytes each job compares per pass (two buffers: 16 KiB, in L1 on every x86 core).
    static let bytesPerPass = 8192
    /// Passes per job: about 50 µs on a 2-vCPU AMD EPYC VM, so a run (8 jobs) lasts about
    /// as long as a 1080p frame's chain (400 µs).
    static let passesPerJob = 60

    /// Per job: two input buffers and a 64-byte slot for its result (no false sharing).
    private let buffers: UnsafeMutableRawPointer
    private static var jobStride: Int { 2 * bytesPerPass + 64 }

    init(threads: Int) {
        self.threads = threads
        let bytes = Int(Self.jobCount) * Self.jobStride
        buffers = .allocate(byteCount: bytes, alignment: 64)
        let bytePointer = buffers.bindMemory(to: UInt8.self, capacity: bytes)
        for i in 0..<bytes { bytePointer[i] = UInt8(truncatingIfNeeded: i &* 131 &+ i >> 7) }
    }

    deinit { buffers.deallocate() }

    func prepareSlice() { useEngineThreads() }

    func run(_ i: Int) throws {
        rfx_runtime_run_jobs({ context, index in
            let job = context!.advanced(by: Int(index) * ParallelCeiling.jobStride)
            let a = job.assumingMemoryBound(to: UInt8.self)
            let b = a + ParallelCeiling.bytesPerPass
            var sum: UInt64 = 0
            for _ in 0..<ParallelCeiling.passesPerJob {
                sum &+= ComputeSumSquareError(a, b, Int32(ParallelCeiling.bytesPerPass))
            }
            // Stored, so the work cannot be dropped.
            job.advanced(by: 2 * ParallelCeiling.bytesPerPass).storeBytes(of: sum, as: UInt64.self)
        }, buffers, Self.jobCount)
    }
}

/// The memory bus's share of the ceiling: a cold 1080p I420 frame (3.1 MB, from a pool twice
/// the last-level cache) copied into a warm buffer, in 8 contiguous jobs through the engine's
/// pool at 1 or N threads. The arithmetic ceiling says whether the second vCPU was a core;
/// this one says how much more memory traffic two threads got than one, which bounds the cold
/// cases (a transpose of a cold frame, the scale's read of it) however well they are split.
final class MemoryCeiling: Workload, ThreadCounted {
    let threads: Int
    static let jobCount: UInt32 = ParallelCeiling.jobCount
    static let frameBytes = 1920 * 1080 * 3 / 2

    /// One pool and one destination for every case (paths run one at a time): frames cycle,
    /// so a frame comes round again only after more than the last-level cache has passed.
    private final class Shared: @unchecked Sendable {
        static let shared = Shared()
        let frames: Int
        let pool: UnsafeMutableRawPointer
        let destination: UnsafeMutableRawPointer
        var next = 0
        init() {
            frames = CacheInfo.coldPoolFrames(frameBytes: MemoryCeiling.frameBytes)
            pool = .allocate(byteCount: frames * MemoryCeiling.frameBytes, alignment: 64)
            pool.initializeMemory(as: UInt8.self, repeating: 7, count: frames * MemoryCeiling.frameBytes)
            destination = .allocate(byteCount: MemoryCeiling.frameBytes, alignment: 64)
            destination.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryCeiling.frameBytes)
        }
    }

    /// The run's source and destination, read by the jobs (the pool's wake-up orders them).
    private final class Job {
        var source: UnsafeRawPointer?
        var destination: UnsafeMutableRawPointer?
    }
    private let job = Job()

    init(threads: Int) {
        self.threads = threads
        _ = Shared.shared
    }

    func prepareSlice() { useEngineThreads() }

    func run(_ i: Int) throws {
        let shared = Shared.shared
        job.source = UnsafeRawPointer(shared.pool + shared.next * Self.frameBytes)
        job.destination = shared.destination
        shared.next = (shared.next + 1) % shared.frames
        rfx_runtime_run_jobs({ context, index in
            let job = Unmanaged<Job>.fromOpaque(context!).takeUnretainedValue()
            let chunk = (MemoryCeiling.frameBytes / Int(MemoryCeiling.jobCount) + 63) & ~63
            let start = Int(index) * chunk, end = min(start + chunk, MemoryCeiling.frameBytes)
            guard end > start else { return }
            memcpy(job.destination! + start, job.source! + start, end - start)
        }, Unmanaged.passUnretained(job).toOpaque(), Self.jobCount)
    }
}

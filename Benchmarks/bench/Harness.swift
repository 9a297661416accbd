// The measuring loop: engine and direct paths in interleaved slices, one clock read per unit,
// heap allocations counted around every slice.
import RawFX
import RawFXSDK
import RawFXAllocCounter

#if canImport(Glibc)
import Glibc
#endif

/// One path of a case: the engine's chain or the same work without the engine.
/// `run` processes unit `i` (a video frame, a 10 ms audio block, or an audio input chunk) and
/// must not allocate in steady state; whatever it allocates is counted and reported.
protocol Workload: AnyObject {
    func run(_ i: Int) throws
    /// Audio frames (samples per channel) consumed so far; 0 for video.
    var audioFramesConsumed: Int { get }
    /// Called before each slice and warm-up, outside the timed and counted region: a path
    /// sets up shared state it needs (the engine's thread count).
    func prepareSlice()
    /// Called after each slice and warm-up: a path that keeps work in flight across units
    /// (ReceiveStreamsAsync) waits for it here, so that no path's slice overlaps another's.
    /// Timed as part of the slice's total (the rate), not as a unit (the percentiles).
    func finishSlice()
    /// Nonzero: units arrive at this interval, as from an SDK's callbacks (a 10 ms audio
    /// block), not back to back. The harness sleeps to each unit's tick outside its timed
    /// region, so what a unit costs when the threads it wakes had gone idle is measured.
    var pacingNanoseconds: UInt64 { get }
}

extension Workload {
    var audioFramesConsumed: Int { 0 }
    func prepareSlice() {}
    func finishSlice() {}
    var pacingNanoseconds: UInt64 { 0 }
}

/// `inner` with units paced at `interval` (see `Workload.pacingNanoseconds`).
final class Paced: Workload {
    let inner: Workload
    let pacingNanoseconds: UInt64
    init(_ inner: Workload, intervalNanoseconds: UInt64) {
        self.inner = inner
        pacingNanoseconds = intervalNanoseconds
    }
    func run(_ i: Int) throws { try inner.run(i) }
    var audioFramesConsumed: Int { inner.audioFramesConsumed }
    func prepareSlice() { inner.prepareSlice() }
    func finishSlice() { inner.finishSlice() }
}

/// Sleeps until `deadline` on the monotonic clock (absolute: no drift across units).
func sleepUntil(_ deadline: UInt64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Per-unit durations and totals of one path, filled without allocating during a slice.
final class Recorder {
    let capacity: Int
    let samples: UnsafeMutablePointer<UInt64>
    var sampleCount = 0
    var units = 0
    var nanoseconds: UInt64 = 0
    var allocations: UInt64 = 0
    var audioFrames = 0
    var slices = 0
    /// Thread CPU time over all slices (CLOCK_THREAD_CPUTIME_ID): wall time minus the time
    /// the scheduler gave the CPU to someone else.
    var cpuNanoseconds: UInt64 = 0
    /// Per slice: wall time, thread CPU time, and work done (units, or audio frames).
    var sliceNanoseconds: [UInt64] = []
    var sliceCPUNanoseconds: [UInt64] = []
    var sliceWork: [Double] = []
    /// Per slice: the index of its first sample in `samples` (samples past `capacity` are not kept).
    var sliceSampleStart: [Int] = []

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        samples = .allocate(capacity: self.capacity)
    }

    deinit { samples.deallocate() }

    /// The p50 of each slice's own samples (nil for a slice whose samples were not kept), in
    /// slice order: rounds pair them across paths. Call before `percentiles`, which sorts.
    func sliceMedians() -> [Double?] {
        var out: [Double?] = []
        var scratch: [UInt64] = []
        for k in sliceSampleStart.indices {
            let start = sliceSampleStart[k], end = k + 1 < sliceSampleStart.count ? sliceSampleStart[k + 1] : sampleCount
            guard end > start else { out.append(nil); continue }
            scratch = Array(UnsafeBufferPointer(start: samples + start, count: end - start))
            scratch.sort()
            out.append(Double(scratch[(scratch.count - 1) / 2]))
        }
        return out
    }

    /// Nearest-rank percentile (0...1) of the recorded per-unit times.
    func percentiles(_ ps: [Double]) -> [UInt64] {
        guard sampleCount > 0 else { return ps.map { _ in 0 } }
        var sorted = UnsafeMutableBufferPointer(start: samples, count: sampleCount)
        sorted.sort()
        return ps.map { p in
            let rank = Int((p * Double(sampleCount)).rounded(.up))
            return sorted[min(max(rank, 1), sampleCount) - 1]
        }
    }
}

/// The unit index shared by all paths of a case: each slice continues where the previous
/// slice (of any path) stopped, so every path walks the same pool in one sequence and a frame
/// is never reused while another path's recent use could still keep it in cache.
final class UnitCounter {
    var next = 0
}

/// Runs `units` units of `workload`, timing each with one clock read (the time between two
/// consecutive reads is the unit's time), and counts the thread's heap allocations around it.
@inline(never)
func runSlice(_ workload: Workload, units: Int, counter: UnitCounter, into recorder: Recorder) throws {
    workload.prepareSlice()
    recorder.sliceSampleStart.append(recorder.sampleCount)
    let framesBefore = workload.audioFramesConsumed
    var index = counter.next
    let allocationsBefore = rawfx_thread_allocation_count()
    let cpuStart = threadCPUNanoseconds()
    let start = monotonicNanoseconds()
    var previous = start
    let pacing = workload.pacingNanoseconds
    var tick = start
    var k = 0
    while k < units {
        if pacing > 0 {
            tick = max(tick &+ pacing, previous)
            sleepUntil(tick)
            previous = monotonicNanoseconds()
        }
        try workload.run(index)
        index &+= 1
        let now = monotonicNanoseconds()
        if recorder.sampleCount < recorder.capacity {
            recorder.samples[recorder.sampleCount] = now &- previous
            recorder.sampleCount += 1
        }
        previous = now
        k += 1
    }
    workload.finishSlice()
    previous = monotonicNanoseconds()
    let cpuEnd = threadCPUNanoseconds()
    let allocationsAfter = rawfx_thread_allocation_count()
    counter.next = index
    recorder.nanoseconds &+= previous &- start
    recorder.units += units
    recorder.allocations &+= allocationsAfter &- allocationsBefore
    let frames = workload.audioFramesConsumed - framesBefore
    recorder.audioFrames += frames
    recorder.slices += 1
    // Outside the counted region (capacity is reserved, so these do not allocate anyway).
    recorder.cpuNanoseconds &+= cpuEnd &- cpuStart
    recorder.sliceNanoseconds.append(previous &- start)
    recorder.sliceCPUNanoseconds.append(cpuEnd &- cpuStart)
    recorder.sliceWork.append(frames > 0 ? Double(frames) : Double(units))
}

/// Runs a path unrecorded for at least `nanoseconds` (and `minimumUnits`): first-frame
/// negotiation, page faults and cache warm-up happen here. Returns the mean ns per unit and
/// the index to continue from.
func warmUp(_ workload: Workload, nanoseconds: UInt64, minimumUnits: Int, counter: UnitCounter) throws -> Double {
    workload.prepareSlice()
    var i = counter.next
    let start = monotonicNanoseconds()
    var n = 0
    let pacing = workload.pacingNanoseconds
    var busy: UInt64 = 0
    while n < minimumUnits || monotonicNanoseconds() &- start < nanoseconds {
        if pacing > 0 { sleepUntil(start &+ UInt64(n + 1) &* pacing) }
        let before = monotonicNanoseconds()
        try workload.run(i)
        busy &+= monotonicNanoseconds() &- before
        i += 1
        n += 1
    }
    workload.finishSlice()
    let elapsed = pacing > 0 ? busy : monotonicNanoseconds() &- start
    counter.next = i
    return Double(elapsed) / Double(n)
}

/// The measured figures of one path.
struct PathFigures {
    var units: Int
    var seconds: Double
    var unitsPerSecond: Double
    var nanosecondsPerUnit: Double
    var p50Nanoseconds: UInt64
    var p99Nanoseconds: UInt64
    var maxNanoseconds: UInt64
    /// The p50 of each slice (Recorder.sliceMedians), for ratios paired round by round.
    var sliceP50Nanoseconds: [Double?] = []
    var allocations: UInt64
    var allocationsPerUnit: Double
    var slices: Int
    /// Share of the wall time the thread was not on a CPU (preempted by other processes).
    var descheduled: Double
    /// The measuring thread's CPU time per unit (CLOCK_THREAD_CPUTIME_ID over the slices):
    /// what the `vs_` figures compare. Of a threaded path, only the calling thread's share.
    var cpuNanosecondsPerUnit: Double
    /// Audio only: frames processed per second of wall time / sample rate.
    var realtimeFactor: Double?
    /// Audio only: 10 ms blocks per second (frames / block size), the throughput unit.
    var blocksPerSecond: Double?
    var nanosecondsPerBlock: Double?

    /// Median over rounds of (this path's slice p50 / `other`'s slice p50 in the same round):
    /// a ratio of p50s in which a change of the machine between rounds cancels out.
    func roundPairedP50Ratio(over other: PathFigures) -> Double? {
        var ratios: [Double] = []
        for k in 0..<min(sliceP50Nanoseconds.count, other.sliceP50Nanoseconds.count) {
            if let a = sliceP50Nanoseconds[k], let b = other.sliceP50Nanoseconds[k], b > 0 { ratios.append(a / b) }
        }
        guard !ratios.isEmpty else { return nil }
        ratios.sort()
        let mid = ratios.count / 2
        return ratios.count % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2
    }

    init(_ r: Recorder, sampleRate: Int?) {
        units = r.units
        seconds = Double(r.nanoseconds) / 1e9
        unitsPerSecond = seconds > 0 ? Double(r.units) / seconds : 0
        nanosecondsPerUnit = r.units > 0 ? Double(r.nanoseconds) / Double(r.units) : 0
        let p = r.percentiles([0.5, 0.99, 1.0])
        p50Nanoseconds = p[0]
        p99Nanoseconds = p[1]
        maxNanoseconds = p[2]
        allocations = r.allocations
        allocationsPerUnit = r.units > 0 ? Double(r.allocations) / Double(r.units) : 0
        slices = r.slices
        descheduled = r.nanoseconds > 0 ? max(0, 1 - Double(r.cpuNanoseconds) / Double(r.nanoseconds)) : 0
        cpuNanosecondsPerUnit = r.units > 0 ? Double(r.cpuNanoseconds) / Double(r.units) : 0
        if let rate = sampleRate, rate > 0, seconds > 0 {
            let audioSeconds = Double(r.audioFrames) / Double(rate)
            realtimeFactor = audioSeconds / seconds
            let blocks = Double(r.audioFrames) / Double(rate / 100)
            blocksPerSecond = blocks / seconds
            nanosecondsPerBlock = blocks > 0 ? Double(r.nanoseconds) / blocks : nil
        }
    }

    /// Throughput in the case's unit: frames per second (video) or 10 ms blocks per second (audio).
    var throughput: Double { blocksPerSecond ?? unitsPerSecond }
    var nanosecondsPerThroughputUnit: Double { nanosecondsPerBlock ?? nanosecondsPerUnit }
}

/// Measures several paths of one case (the engine first, then the direct baseline, then any
/// references), alternating short slices so drift and noise land on all alike: forward order
/// on even rounds, reverse order on odd rounds (ABBA for two paths). The budget is the wall
/// time of all measured slices, shared equally.
struct MeasureResult {
    var figures: [PathFigures]
    /// Engine throughput / direct throughput: the median over rounds of the ratio within a
    /// round (each round runs one slice of each path back to back), on thread CPU time, so
    /// time the scheduler gave to other processes and rounds hit by other noise do not bias it.
    var ratio: Double?
    /// 25th and 75th percentile of the per-round ratios: the measurement's own spread.
    var ratioQuartiles: (Double, Double)?
    var rounds: Int
    /// The same per-round median of engine versus path 1, 2, … (index 0 is path 1).
    var ratios: [Double?] = []
}

func measure(_ paths: [Workload], options: Options, sampleRate: Int?) throws -> MeasureResult {
    // A paced case spends most of its wall time asleep: three times the budget, for enough units.
    let paced = paths.contains { $0.pacingNanoseconds > 0 }
    let budget = UInt64(options.caseSeconds * (paced ? 3 : 1) * 1e9)
    let slice = options.sliceNanoseconds
    let warm = max(slice * 2, options.quick ? 20_000_000 : 100_000_000)
    // Warm up every path twice, in turn, so each sees the others' cache footprint:
    // first-frame negotiation, page faults and lazy setup happen here, unrecorded.
    let counter = UnitCounter()
    var perUnit = [Double](repeating: 0, count: paths.count)
    for _ in 0..<2 {
        for (p, path) in paths.enumerated() {
            perUnit[p] = try warmUp(path, nanoseconds: warm / UInt64(2 * paths.count) + 1, minimumUnits: 3, counter: counter)
        }
    }
    let share = 1.0 / Double(paths.count)
    var recorders: [Recorder] = []
    var unitsPerSlice: [Int] = []
    let maxRounds = Int(budget / max(slice, 1)) * 2 + 64
    for p in paths.indices {
        let r = Recorder(capacity: min(8_000_000, Int(Double(budget) * share / max(perUnit[p], 1) * 1.5) + 1024))
        r.sliceNanoseconds.reserveCapacity(maxRounds)
        r.sliceCPUNanoseconds.reserveCapacity(maxRounds)
        r.sliceWork.reserveCapacity(maxRounds)
        r.sliceSampleStart.reserveCapacity(maxRounds)
        recorders.append(r)
        // A paced path runs a second per slice: its cadence, not the interleave, sets when
        // units arrive (a path that waits its turn would see gaps no SDK makes).
        let pacing = paths[p].pacingNanoseconds
        unitsPerSlice.append(pacing > 0 ? max(1, Int(1_000_000_000 / pacing)) : max(1, Int(Double(slice) / max(perUnit[p], 1))))
    }
    var round = 0
    while true {
        var spent: UInt64 = 0
        for r in recorders { spent &+= r.nanoseconds }
        if (spent >= budget && recorders[0].slices >= 2) || round >= maxRounds { break }
        for k in paths.indices {
            let p = round % 2 == 0 ? k : paths.count - 1 - k
            try runSlice(paths[p], units: unitsPerSlice[p], counter: counter, into: recorders[p])
        }
        round += 1
    }
    // Per slice p50s first: PathFigures sorts the samples in place.
    let sliceMedians = recorders.map { $0.sliceMedians() }
    var result = MeasureResult(figures: recorders.map { PathFigures($0, sampleRate: sampleRate) }, rounds: round)
    for p in paths.indices { result.figures[p].sliceP50Nanoseconds = sliceMedians[p] }
    // Engine versus every other path, round by round.
    let e = recorders[0]
    for p in paths.indices.dropFirst() {
        let d = recorders[p]
        var ratios: [Double] = []
        for k in 0..<min(e.slices, d.slices) where e.sliceCPUNanoseconds[k] > 0 && d.sliceCPUNanoseconds[k] > 0 && d.sliceWork[k] > 0 {
            ratios.append((e.sliceWork[k] / Double(e.sliceCPUNanoseconds[k])) / (d.sliceWork[k] / Double(d.sliceCPUNanoseconds[k])))
        }
        ratios.sort()
        guard !ratios.isEmpty else { result.ratios.append(nil); continue }
        func q(_ p: Double) -> Double {
            let x = p * Double(ratios.count - 1)
            let lo = Int(x.rounded(.down)), hi = min(lo + 1, ratios.count - 1)
            return ratios[lo] + (ratios[hi] - ratios[lo]) * (x - Double(lo))
        }
        result.ratios.append(q(0.5))
        if p == 1 {
            result.ratio = q(0.5)
            result.ratioQuartiles = (q(0.25), q(0.75))
        }
    }
    return result
}

/// The cost of one `clock_gettime(CLOCK_MONOTONIC)` here: the harness reads the clock once per
/// unit, the engine twice per filter per frame (TimingRecorder).
func clockReadNanoseconds() -> Double {
    let n = 200_000
    var sink: UInt64 = 0
    let start = monotonicNanoseconds()
    for _ in 0..<n { sink &+= monotonicNanoseconds() }
    let elapsed = monotonicNanoseconds() &- start
    if sink == 42 { print("") }
    return Double(elapsed) / Double(n)
}

/// This thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID; a system call, so read per
/// slice, never per unit).
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A path that does nothing: what the harness itself costs per unit (loop, existential call,
/// one clock read), to subtract from the pass-through chains' figures.
final class NoWork: Workload {
    private(set) var count = 0
    func run(_ i: Int) throws { count &+= 1 }
}

func harnessOverheadNanoseconds() -> Double {
    let w = NoWork()
    let r = Recorder(capacity: 16)
    let counter = UnitCounter()
    for _ in 0..<20 { try? runSlice(w, units: 20_000, counter: counter, into: r) }
    // The median slice: robust to a preemption.
    let perSlice = r.sliceNanoseconds.sorted()
    return Double(perSlice[perSlice.count / 2]) / 20_000
}

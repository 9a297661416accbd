#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Monotonic nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`): no allocation, no lock.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Counts and timings of one filter or hook, recorded on the processing thread without
/// allocating: counters plus a ring of the last `window` durations for percentiles.
///
/// Reads from another thread see values that may be one frame old; that is the price of
/// keeping locks out of the frame path. Every field is a relaxed atomic so those reads are
/// not data races (ThreadSanitizer reported the plain fields); a relaxed load or store is a
/// plain move on x86-64 and arm64. Frames, the ring and bypasses have one writer, the
/// processing thread, so they are a load and a store; errors and drops may also be counted
/// from an app thread, so they add atomically (they are rare).
public final class TimingRecorder: Sendable {
    private typealias Ring = InlineArray<1024, Atomic<UInt64>>
    public static let window = Ring.count
    private let durations = Ring { _ in Atomic(0) }
    private let next = Atomic<Int>(0)
    private let frameCount = Atomic<UInt64>(0)
    private let errorCount = Atomic<UInt64>(0)
    private let dropCount = Atomic<UInt64>(0)
    private let bypassCount = Atomic<UInt64>(0)

    public var frames: UInt64 { frameCount.load(ordering: .relaxed) }
    public var errors: UInt64 { errorCount.load(ordering: .relaxed) }
    public var drops: UInt64 { dropCount.load(ordering: .relaxed) }
    /// Frames (or audio blocks) that passed a bypassed filter.
    public var bypassed: UInt64 { bypassCount.load(ordering: .relaxed) }

    public init() {}

    @inline(__always)
    public func record(nanoseconds: UInt64) {
        let slot = next.load(ordering: .relaxed)
        durations[slot].store(nanoseconds, ordering: .relaxed)
        next.store(slot + 1 == TimingRecorder.window ? 0 : slot + 1, ordering: .relaxed)
        frameCount.store(frameCount.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    @inline(__always) public func recordError() { errorCount.wrappingAdd(1, ordering: .relaxed) }
    @inline(__always) public func recordDrop() { dropCount.wrappingAdd(1, ordering: .relaxed) }
    @inline(__always) public func recordBypass() { bypassCount.store(bypassCount.load(ordering: .relaxed) &+ 1, ordering: .relaxed) }

    /// The counters the chain published at the end of its last frame (`publish`), with
    /// errors and drops as they are now. A `FigureSequence.read` gets every stage's from the
    /// same frame.
    public struct Counters: Sendable {
        public var frames: UInt64
        public var errors: UInt64
        public var drops: UInt64
        public var bypassed: UInt64
        fileprivate var next: Int
    }

    private let publishedFrames = Atomic<UInt64>(0)
    private let publishedBypassed = Atomic<UInt64>(0)
    private let publishedNext = Atomic<Int>(0)

    /// [process, inside `FigureSequence.beginWrite`/`endWrite`] Copies the figures recorded so
    /// far to where readers take them: three loads and three stores.
    @inline(__always) public func publish() {
        publishedFrames.store(frameCount.load(ordering: .relaxed), ordering: .relaxed)
        publishedBypassed.store(bypassCount.load(ordering: .relaxed), ordering: .relaxed)
        publishedNext.store(next.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// [any thread] What the last `publish` copied.
    public var published: Counters {
        Counters(frames: publishedFrames.load(ordering: .relaxed), errors: errors, drops: drops,
                 bypassed: publishedBypassed.load(ordering: .relaxed), next: publishedNext.load(ordering: .relaxed))
    }

    /// [any thread] The figures as recorded now, each atomic on its own (a recorder that no
    /// chain publishes: a hook's).
    public var counters: Counters {
        Counters(frames: frames, errors: errors, drops: drops, bypassed: bypassed, next: next.load(ordering: .relaxed))
    }

    /// A copy of the figures with p50 and p99 over the last `window` frames, and those
    /// durations oldest first (`recentNanoseconds`). Any thread; allocates (control side).
    public func snapshot(name: String) -> Metrics { snapshot(name: name, counters: counters) }

    /// The figures for `counters` read earlier (a chain reads every stage's in one
    /// `FigureSequence.read`): the durations are the ring's up to `counters`' position. A frame
    /// recorded since may have overwritten the oldest of them with a newer duration; the
    /// counts are those of `counters`.
    func snapshot(name: String, counters: Counters) -> Metrics {
        let newest = counters.next
        let frames = counters.frames
        // Until the ring wraps the durations are slots 0..<frames; after, the oldest is at `next`.
        let order = frames <= UInt64(TimingRecorder.window)
            ? Array(0..<Int(frames))
            : Array(newest..<TimingRecorder.window) + Array(0..<newest)
        let recent = order.map { durations[$0].load(ordering: .relaxed) }
        let sample = recent.sorted()
        return Metrics(name: name, frames: frames, errors: counters.errors, drops: counters.drops, bypassed: counters.bypassed,
                       p50Nanoseconds: percentile(sample, 0.5), p99Nanoseconds: percentile(sample, 0.99),
                       recentNanoseconds: recent)
    }

    /// The figures of a chain's stage for `counters` read earlier, with its isolation figures.
    func snapshot(of instance: FilterInstance, counters: Counters) -> Metrics {
        var metrics = snapshot(name: instance.type.id, counters: counters)
        metrics.isolation = instance.isolation
        return metrics
    }
}

/// A sequence lock (seqlock) over what a chain's processing thread publishes: it makes the
/// sequence odd, copies every stage's counters (`TimingRecorder.publish`), and makes it even
/// again. A reader that saw the same even value before and after its loads has one frame's
/// figures, never half of one. The writer never waits, and a reader waits only for those few
/// stores, never for a filter: a frame held up in a slow or stuck plugin leaves the previous
/// frame's figures readable. Two relaxed stores and a compiler fence per publication on x86-64.
public final class FigureSequence: Sendable {
    private let value = Atomic<UInt64>(0)

    public init() {}

    /// [process] Before a publication.
    @inline(__always) public func beginWrite() {
        value.store(value.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
    }

    /// [process] After it.
    @inline(__always) public func endWrite() {
        value.store(value.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    /// [any thread] `body`'s loads from one publication: retried while one is being written
    /// (a few stores), yielding the CPU every 64 tries.
    public func read<T>(_ body: () -> T) -> T {
        var attempt = 0
        while true {
            let before = value.load(ordering: .acquiring)
            if before & 1 == 0 {
                let result = body()
                atomicMemoryFence(ordering: .acquiring)
                if value.load(ordering: .relaxed) == before { return result }
            }
            attempt += 1
            if attempt % 64 == 0 { sched_yield() }
        }
    }
}

/// The `p` quantile (0...1) of ascending `sorted` values: the value at the rounded index
/// `p·(count−1)`, 0 when empty. RawFX's p50/p99 everywhere (metrics, `rawfx run --metrics`).
public func percentile<T: BinaryInteger>(_ sorted: [T], _ p: Double) -> T {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

/// Figures for one filter or hook.
public struct Metrics: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var frames: UInt64
    public var errors: UInt64
    public var drops: UInt64
    /// Frames or blocks that passed the filter while it was bypassed (not in `frames`).
    public var bypassed: UInt64 = 0
    public var p50Nanoseconds: UInt64
    public var p99Nanoseconds: UInt64
    /// An isolated stage's faults, restarts and passed-through frames (nil: in process).
    public var isolation: IsolationMetrics? = nil
    /// The durations behind p50/p99, oldest first: the last `min(frames, TimingRecorder.window)`
    /// (a snapshot taken while frames flow may be a frame off at either end). `MetricsReporter`
    /// (RawFXObservability) feeds the ones new since its last report to swift-metrics Timers.
    public var recentNanoseconds: [UInt64] = []

    public var description: String {
        "\(name): \(frames) frames, \(errors) errors, \(drops) drops, \(bypassed) bypassed, p50 \(Double(p50Nanoseconds) / 1000) µs, p99 \(Double(p99Nanoseconds) / 1000) µs"
            + (isolation.map { ", \($0)" } ?? "")
    }
}

/// Which recorder each stage of a new chain continues: the k-th occurrence of a filter id
/// takes the k-th occurrence's recorder in the old chain (so inserting or removing other
/// stages keeps a filter's figures); a filter new to the chain starts afresh (nil).
func carriedTimings(from old: [(id: String, timing: TimingRecorder)], to new: [String]) -> [TimingRecorder?] {
    var seen: [String: Int] = [:]
    return new.map { id in
        let occurrence = seen[id, default: 0]
        seen[id] = occurrence + 1
        let matches = old.filter { $0.id == id }
        return occurrence < matches.count ? matches[occurrence].timing : nil
    }
}

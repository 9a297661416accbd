#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
/// keeping locks out of the frame path.
public final class TimingRecorder: @unchecked Sendable {
    public static let window = 1024
    private let durations = UnsafeMutablePointer<UInt64>.allocate(capacity: TimingRecorder.window)
    private var next = 0
    public private(set) var frames: UInt64 = 0
    public private(set) var errors: UInt64 = 0
    public private(set) var drops: UInt64 = 0
    /// Frames (or audio blocks) that passed a bypassed filter.
    public private(set) var bypassed: UInt64 = 0

    public init() { durations.initialize(repeating: 0, count: TimingRecorder.window) }
    deinit { durations.deallocate() }

    @inline(__always)
    public func record(nanoseconds: UInt64) {
        durations[next] = nanoseconds
        next = next + 1 == TimingRecorder.window ? 0 : next + 1
        frames &+= 1
    }

    @inline(__always) public func recordError() { errors &+= 1 }
    @inline(__always) public func recordDrop() { drops &+= 1 }
    @inline(__always) public func recordBypass() { bypassed &+= 1 }

    /// A copy of the figures with p50 and p99 over the last `window` frames.
    public func snapshot(name: String) -> Metrics {
        let n = Int(min(frames, UInt64(TimingRecorder.window)))
        var sample = Array(UnsafeBufferPointer(start: durations, count: n))
        sample.sort()
        func percentile(_ p: Double) -> UInt64 {
            sample.isEmpty ? 0 : sample[min(sample.count - 1, Int((Double(sample.count - 1) * p).rounded()))]
        }
        return Metrics(name: name, frames: frames, errors: errors, drops: drops, bypassed: bypassed,
                       p50Nanoseconds: percentile(0.5), p99Nanoseconds: percentile(0.99))
    }
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

    public var description: String {
        "\(name): \(frames) frames, \(errors) errors, \(drops) drops, \(bypassed) bypassed, p50 \(Double(p50Nanoseconds) / 1000) µs, p99 \(Double(p99Nanoseconds) / 1000) µs"
    }
}

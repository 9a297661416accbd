import CoreMetrics
import Foundation
import RawFX

// MARK: - Metrics

/// `--metrics` / `--metrics-json`: a swift-metrics backend that keeps what `MetricsReporter`
/// pushes (counter totals, timer samples, last gauge values) for one report at the end of
/// the run. Handlers are called from the reporting thread, and read after it stopped; each
/// keeps its figures behind `Locked`.
final class CollectedMetrics: MetricsFactory, Sendable {
    struct Key: Hashable, Comparable {
        var label: String
        var dimensions: [String]  // "name=value", in the reporter's order

        /// Grouped by dimensions (a filter's series together), then by label.
        static func < (a: Key, b: Key) -> Bool {
            let (x, y) = (a.dimensions.joined(separator: ","), b.dimensions.joined(separator: ","))
            return x != y ? x < y : a.label < b.label
        }
    }

    final class Handler: CounterHandler, TimerHandler, RecorderHandler, Sendable {
        let total = Locked<Int64>(0)
        let samples = Locked<[Int64]>([])
        let last = Locked<Double?>(nil)
        func increment(by amount: Int64) { total.withLock { $0 += amount } }
        func reset() { total.withLock { $0 = 0 } }
        func recordNanoseconds(_ duration: Int64) { samples.withLock { $0.append(duration) } }
        func record(_ value: Int64) { last.withLock { $0 = Double(value) } }
        func record(_ value: Double) { last.withLock { $0 = value } }
    }

    private let handlers = Locked<[Key: Handler]>([:])

    private func handler(_ label: String, _ dimensions: [(String, String)]) -> Handler {
        let key = Key(label: label, dimensions: dimensions.map { "\($0.0)=\($0.1)" })
        return handlers.withLock { all in
            if let made = all[key] { return made }
            let made = Handler()
            all[key] = made
            return made
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { handler(label, dimensions) }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        handler(label, dimensions)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { handler(label, dimensions) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    /// One line per series: `label{dim=value,…} value` for counters and gauges, and
    /// `label{…} count=N p50_ms=… p99_ms=… max_ms=…` for timers (Prometheus's text shape, so
    /// it greps and diffs well).
    func text() -> String {
        series().map { entry in
            let name = entry.key.label + "{" + entry.key.dimensions.joined(separator: ",") + "}"
            if let timer = entry.timer {
                return name + " count=\(timer.count)" + String(format: " p50_ms=%.3f p99_ms=%.3f max_ms=%.3f",
                                                              timer.p50 / 1e6, timer.p99 / 1e6, timer.max / 1e6)
            }
            return name + " " + (entry.value.map { $0 == $0.rounded() ? "\(Int64($0))" : "\($0)" } ?? "")
        }.joined(separator: "\n") + "\n"
    }

    /// The same figures as JSON: an array of {label, dimensions, value} or
    /// {label, dimensions, count, p50_ns, p99_ns, max_ns}.
    func json() throws -> String {
        struct Entry: Encodable {
            var label: String
            var dimensions: [String: String]
            var value: Double?
            var count: Int?
            var p50_ns: Int64?
            var p99_ns: Int64?
            var max_ns: Int64?
        }
        let entries = series().map { entry in
            let dimensions = Dictionary(entry.key.dimensions.map { text -> (String, String) in
                let parts = text.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            }, uniquingKeysWith: { _, last in last })
            return Entry(label: entry.key.label, dimensions: dimensions, value: entry.value,
                         count: entry.timer?.count, p50_ns: entry.timer.map { Int64($0.p50) },
                         p99_ns: entry.timer.map { Int64($0.p99) }, max_ns: entry.timer.map { Int64($0.max) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(entries), as: UTF8.self) + "\n"
    }

    private func series() -> [(key: Key, value: Double?, timer: (count: Int, p50: Double, p99: Double, max: Double)?)] {
        handlers.withLock { $0 }.sorted { $0.key < $1.key }.map { key, handler in
            let samples = handler.samples.withLock { $0 }.sorted()
            if !samples.isEmpty {
                return (key, nil, (samples.count, Double(percentile(samples, 0.5)), Double(percentile(samples, 0.99)),
                                   Double(samples.last!)))
            }
            let total = handler.total.withLock { $0 }
            return (key, handler.last.withLock { $0 } ?? Double(total), nil)
        }
    }
}

import CoreMetrics
import Dispatch
import Foundation
import RawFX
import RawFXSDK

/// Exports RawFX's figures to swift-metrics, off the frame path.
///
/// The chains and hooks count into relaxed atomics (`TimingRecorder`, `HookStats`) without
/// a lock or an allocation; a swift-metrics backend may lock and allocate, so nothing calls
/// it per frame. Instead `report()` (on demand, or every `interval` on the reporter's own
/// thread after `start`) takes a snapshot of each source, pushes the difference since the
/// previous report into Counters, the durations recorded since then into Timers (at most
/// the last `TimingRecorder.window` per source and report), and queue depths into Gauges.
///
/// Series (labels in Prometheus style, so any backend takes them as they are):
/// - per filter: `rawfx_filter_frames_total`, `_errors_total`, `_drops_total`,
///   `_bypassed_total`, `_isolation_faults_total`, `_isolation_restarts_total`,
///   `_isolation_passthrough_total`, and the Timer `rawfx_filter_process_duration`;
///   dimensions `filter` (its id), `stage` (its position), and `hook` or `chain`,
///   `stream` and `user` where the filter runs per stream.
/// - per hook: `rawfx_hook_frames_total`, `_errors_total`, `_drops_total`, `_refused_total`,
///   `_queue_overflows_total`, `_send_rejected_total`, Timers `rawfx_hook_process_duration`
///   (chain and send) and `rawfx_hook_callback_duration` (async: time in the SDK's
///   callback), the Gauge `rawfx_hook_queue_depth` where the hook has a queue; dimension
///   `hook`, and `stream`/`user` on the receive hook's per-stream timer.
///
/// A counter that goes backwards (a stream that left and came back, a new chain with a
/// filter at the same place) restarts its difference from zero.
///
/// Thread-safety: every mutable field is behind a `Locked` (sources, series, worker).
public final class MetricsReporter: Sendable {
    /// One source's figures at one report.
    struct Reading {
        var dimensions: [(String, String)]
        var counters: [(label: String, total: UInt64)] = []
        var timers: [(label: String, metrics: Metrics)] = []
        var gauges: [(label: String, value: Int)] = []
    }

    /// What the reporter made and saw last, for one series (label and dimensions).
    private struct Series {
        var counter: Counter?
        var timer: CoreMetrics.Timer?
        var gauge: Gauge?
        var last: UInt64 = 0
    }

    private let factory: any MetricsFactory
    private let sources = Locked<[@Sendable () -> [Reading]]>([])
    /// Serialises reports: `report()` may be called from any thread and from the timer thread.
    private let series = Locked<[String: Series]>([:])
    /// The reporting thread: its stop signal and its end (nil: not started).
    private let worker = Locked<(stop: DispatchSemaphore, done: DispatchSemaphore)?>(nil)

    /// `factory`: the swift-metrics backend (by default the one `MetricsSystem.bootstrap` set;
    /// tests pass their own `TestMetrics`).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Tells the reporting thread to end without waiting for it: the last reference may be
    /// dropped on that very thread (it holds the reporter weakly between reports).
    deinit { worker.withLock { $0 }?.stop.signal() }

    // MARK: Sources (any thread)

    /// Every hook `processor` has configured at the time of each report, with its filters
    /// (per stream for the virtual speaker and the receive hook).
    public func add(_ processor: RawFXProcessor) {
        addSource { [weak processor] in
            guard let processor else { return [] }
            var readings: [Reading] = []
            if let h = processor.preProcessor { readings += Self.readings(of: h.metrics) }
            if let h = processor.virtualSpeaker { readings += Self.readings(of: h) }
            if let h = processor.videoSource { readings += Self.readings(of: h.metrics, queueDepth: h.queuedFrames) }
            if let h = processor.virtualMic { readings += Self.readings(of: h.metrics, queueDepth: h.queuedChunks) }
            if let h = processor.shareSource { readings += Self.readings(of: h.metrics, queueDepth: h.queuedFrames) }
            if let h = processor.productionStudio {
                readings += Self.readings(of: h.videoMetrics)
                readings += Self.readings(of: h.audioMetrics, queueDepth: h.queuedAudioChunks)
            }
            if let h = processor.receiveVideo { readings += Self.readings(of: h) }
            return readings
        }
    }

    /// One hook's figures, read with `metrics` at each report (a hook not owned by a
    /// `RawFXProcessor`, e.g. `hook.metrics`), and its queue depth if it has a queue (a
    /// Gauge, for async hooks only).
    public func addHook(metrics: @escaping @Sendable () -> HookMetrics, queueDepth: (@Sendable () -> Int)? = nil) {
        addSource { Self.readings(of: metrics(), queueDepth: queueDepth?()) }
    }

    /// A bare chain's filters (`VideoChain.metrics`, `AudioChain.metrics`), dimension
    /// `chain` = `name` (e.g. "video", "audio").
    public func addChain(named name: String, metrics: @escaping @Sendable () -> [Metrics]) {
        addSource { Self.filterReadings(metrics(), dimensions: [("chain", name)]) }
    }

    private func addSource(_ source: @escaping @Sendable () -> [Reading]) {
        sources.withLock { $0.append(source) }
    }

    // MARK: Reporting

    /// Pushes what changed since the last report into swift-metrics. Any thread except a
    /// processing thread (the backend may lock and allocate); reports do not overlap.
    public func report() {
        let readings = sources.withLock { $0 }.flatMap { $0() }
        series.withLock { all in
            for reading in readings {
                for (label, total) in reading.counters {
                    let key = Self.key(label, reading.dimensions)
                    var s = all[key] ?? Series()
                    let delta = total >= s.last ? total - s.last : total
                    s.last = total
                    // Made at first sight, so a backend lists a series that is still 0.
                    if s.counter == nil { s.counter = Counter(label: label, dimensions: reading.dimensions, factory: factory) }
                    if delta > 0 { s.counter!.increment(by: Int64(clamping: delta)) }
                    all[key] = s
                }
                for (label, metrics) in reading.timers {
                    let key = Self.key(label, reading.dimensions)
                    var s = all[key] ?? Series()
                    let delta = metrics.frames >= s.last ? metrics.frames - s.last : metrics.frames
                    s.last = metrics.frames
                    let fresh = metrics.recentNanoseconds.suffix(Int(min(delta, UInt64(metrics.recentNanoseconds.count))))
                    if !fresh.isEmpty {
                        if s.timer == nil {
                            s.timer = CoreMetrics.Timer(label: label, dimensions: reading.dimensions, factory: factory)
                        }
                        for nanoseconds in fresh { s.timer!.recordNanoseconds(Int64(clamping: nanoseconds)) }
                    }
                    all[key] = s
                }
                for (label, value) in reading.gauges {
                    let key = Self.key(label, reading.dimensions)
                    var s = all[key] ?? Series()
                    if s.gauge == nil { s.gauge = Gauge(label: label, dimensions: reading.dimensions, factory: factory) }
                    s.gauge!.record(value)
                    all[key] = s
                }
            }
        }
    }

    /// Reports every `interval` on a thread of the reporter's own until `stop`. Any thread;
    /// a second `start` while running does nothing.
    public func start(interval: Duration) {
        let signals = (stop: DispatchSemaphore(value: 0), done: DispatchSemaphore(value: 0))
        let started = worker.withLock { current -> Bool in
            guard current == nil else { return false }
            current = signals
            return true
        }
        guard started else { return }
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1_000_000, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let thread = Thread { [weak self] in
            while signals.stop.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut {
                guard let self else { break }
                self.report()
            }
            signals.done.signal()
        }
        thread.name = "rawfx-metrics"
        thread.start()
    }

    /// Stops the reporting thread (waiting for a report in progress), then reports once more
    /// so that the last frames are counted. Any thread but the reporter's own.
    public func stop() {
        if let signals = worker.withLock({ current -> (stop: DispatchSemaphore, done: DispatchSemaphore)? in
            defer { current = nil }
            return current
        }) {
            signals.stop.signal()
            signals.done.wait()
        }
        report()
    }

    // MARK: Readings

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{1f}")
    }

    static func filterReadings(_ filters: [Metrics], dimensions: [(String, String)]) -> [Reading] {
        filters.enumerated().map { index, m in
            var reading = Reading(dimensions: dimensions + [("filter", m.name), ("stage", "\(index)")])
            reading.counters = [("rawfx_filter_frames_total", m.frames), ("rawfx_filter_errors_total", m.errors),
                                ("rawfx_filter_drops_total", m.drops), ("rawfx_filter_bypassed_total", m.bypassed)]
            if let isolation = m.isolation {
                reading.counters += [("rawfx_filter_isolation_faults_total", isolation.faults),
                                     ("rawfx_filter_isolation_restarts_total", isolation.restarts),
                                     ("rawfx_filter_isolation_passthrough_total", isolation.passthrough)]
            }
            reading.timers = [("rawfx_filter_process_duration", m)]
            return reading
        }
    }

    /// A hook's own series, and its filters' unless `withFilters` is false (a per-stream hook
    /// reports its filters per stream instead).
    static func readings(of hook: HookMetrics, queueDepth: Int? = nil, withFilters: Bool = true) -> [Reading] {
        let dimensions = [("hook", hook.name)]
        var reading = Reading(dimensions: dimensions)
        reading.counters = [("rawfx_hook_frames_total", hook.hook.frames), ("rawfx_hook_errors_total", hook.hook.errors),
                            ("rawfx_hook_drops_total", hook.hook.drops), ("rawfx_hook_refused_total", hook.refused),
                            ("rawfx_hook_queue_overflows_total", hook.overflows),
                            ("rawfx_hook_send_rejected_total", hook.sendRejected)]
        reading.timers = [("rawfx_hook_process_duration", hook.hook)]
        if let callback = hook.callback { reading.timers.append(("rawfx_hook_callback_duration", callback)) }
        // Only async hooks (those with a callback time) have a queue.
        if let queueDepth, hook.callback != nil { reading.gauges = [("rawfx_hook_queue_depth", queueDepth)] }
        return [reading] + (withFilters ? filterReadings(hook.filters, dimensions: dimensions) : [])
    }

    /// The virtual speaker: the hook's series, and each live stream's filters.
    static func readings(of speaker: VirtualSpeakerHook) -> [Reading] {
        let hook = speaker.metrics
        var readings = readings(of: hook, queueDepth: speaker.queuedEntries, withFilters: false)
        for id in speaker.activeStreams {
            guard let filters = speaker.metrics(for: id) else { continue }
            readings += filterReadings(filters, dimensions: [("hook", hook.name), ("stream", "\(id)"),
                                                             ("user", "\(id.userID)")])
        }
        return readings
    }

    /// The receive hook: its totals over every stream (departed ones included), and per
    /// subscribed stream its timing and its filters. Its per-stream counters are not
    /// exported, so that a sum over `stream` never counts a frame twice.
    static func readings(of receive: ReceiveVideoHook) -> [Reading] {
        let total = receive.metrics
        var hook = readings(of: total, withFilters: false)
        hook[0].timers = []  // the totals carry no durations; each stream's do
        for id in receive.streams {
            guard let stream = receive.metrics(for: id) else { continue }
            let dimensions = [("hook", total.name), ("stream", "\(id)"), ("user", "\(id.user.userID)")]
            var timing = Reading(dimensions: dimensions)
            timing.timers = [("rawfx_hook_process_duration", stream.hook)]
            if let callback = stream.callback { timing.timers.append(("rawfx_hook_callback_duration", callback)) }
            hook.append(timing)
            hook += filterReadings(stream.filters, dimensions: dimensions)
        }
        return hook
    }
}

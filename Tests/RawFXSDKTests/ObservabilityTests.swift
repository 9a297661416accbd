import CoreMetrics
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import RawFX
import RawFXAllocCounter
import RawFXObservability
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// swift-metrics export (MetricsReporter) against swift-metrics' own TestMetrics backend, and
/// swift-log delivery of the log ring against swift-log's InMemoryLogHandler. References: the
/// number of frames each test pushed, and the chains' own recorders (`Metrics.recentNanoseconds`).
///
/// Backends: a reporter takes its factory (a fresh `TestMetrics` per test); only
/// `testNothingAllocatesPerFrameWhileAReporterRuns` bootstraps `MetricsSystem` (once per
/// process, `bootstrapped`). Logging uses the test hook `RawFXLog.setLogHandlerFactory`, so
/// no test needs `LoggingSystem.bootstrap`.
final class ObservabilityTests: XCTestCase {
    static let bootstrapped: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()

    private func frames(_ metrics: TestMetrics, _ label: String, _ dimensions: [(String, String)]) throws -> Int64 {
        try metrics.expectCounter(label, dimensions).totalValue
    }

    // MARK: Metrics

    /// A video chain reported to a fresh TestMetrics, after `frames` frames and one report.
    private func reportedChain(_ text: String, named name: String, frames: Int) throws
        -> (TestMetrics, MetricsReporter, VideoChain, VideoBuffer) {
        let metrics = TestMetrics()
        let reporter = MetricsReporter(factory: metrics)
        let chain = try VideoChain(text, registry: builtPlugins)
        let control = chain.control
        reporter.addChain(named: name) { control.metrics }
        let buffer = patternBuffer(width: 32, height: 16)
        for _ in 0..<frames { _ = try chain.process(buffer.frame) }
        reporter.report()
        return (metrics, reporter, chain, buffer)
    }

    func testChainCountersAndTimersEqualTheFramesProcessed() throws {
        let (metrics, reporter, chain, buffer) = try reportedChain("null,copy", named: "video", frames: 37)
        let copy: [(String, String)] = [("chain", "video"), ("filter", "copy"), ("stage", "1")]
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_frames_total", copy).values, [37])
        let timer = try metrics.expectTimer("rawfx_filter_process_duration", copy)
        // Every duration the stage recorded, in order: the recorder's own ring is the reference.
        XCTAssertEqual(timer.values, chain.control.metrics[1].recentNanoseconds.map { Int64($0) })
        XCTAssertEqual(timer.values.count, 37)

        // A second report adds the difference only; a bypassed stage counts bypasses, not frames.
        try chain.control.setBypass("copy", true)
        for _ in 0..<5 { _ = try chain.process(buffer.frame) }
        reporter.report()
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_frames_total", copy).values, [37])
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_bypassed_total", copy).totalValue, 5)
        let null: [(String, String)] = [("chain", "video"), ("filter", "null"), ("stage", "0")]
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_frames_total", null).values, [37, 5])
        XCTAssertEqual(try metrics.expectTimer("rawfx_filter_process_duration", null).values.count, 42)
        XCTAssertEqual(try metrics.expectTimer("rawfx_filter_process_duration", copy).values.count, 37)
        // Nothing new, nothing pushed; a counter that never moved is listed, at 0.
        reporter.report()
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_frames_total", null).values, [37, 5])
        XCTAssertEqual(try metrics.expectCounter("rawfx_filter_errors_total", null).values, [])
    }

    func testMoreFramesThanTheWindowBetweenReportsCountAllButTimeTheLastWindow() throws {
        let count = TimingRecorder.window + 300
        let (metrics, _, chain, _) = try reportedChain("null", named: "v", frames: count)
        let null: [(String, String)] = [("chain", "v"), ("filter", "null"), ("stage", "0")]
        XCTAssertEqual(try frames(metrics, "rawfx_filter_frames_total", null), Int64(count))
        let timer = try metrics.expectTimer("rawfx_filter_process_duration", null)
        XCTAssertEqual(timer.values, chain.control.metrics[0].recentNanoseconds.map { Int64($0) })
        XCTAssertEqual(timer.values.count, TimingRecorder.window)
    }

    func testSpeakerHookSeriesCarryHookStreamAndUserDimensions() throws {
        let metrics = TestMetrics()
        let processor = RawFXProcessor(registry: processorRegistry())
        let reporter = MetricsReporter(factory: metrics)
        reporter.add(processor)
        let speaker = try processor.configureVirtualSpeaker(chain: "gain=db=-3,test_accum") { _, _ in }
        let data = ReusedAudioRawData(frames: 480)
        for _ in 0..<4 { speaker.onVirtualSpeakerOneWayAudioReceived(data, user: SDKUser(7)) }
        for _ in 0..<9 { speaker.onVirtualSpeakerMixedAudioReceived(data) }
        reporter.report()

        let hook = [("hook", "virtualSpeaker")]
        XCTAssertEqual(try frames(metrics, "rawfx_hook_frames_total", hook), 13)
        XCTAssertEqual(try metrics.expectTimer("rawfx_hook_process_duration", hook).values.count, 13)
        let user7 = hook + [("stream", "\(AudioStreamID.oneWay(SDKUser(7)))"), ("user", "7")]
        let mixed = hook + [("stream", "\(AudioStreamID.mixed)"), ("user", "0")]
        XCTAssertEqual(try frames(metrics, "rawfx_filter_frames_total", user7 + [("filter", "gain"), ("stage", "0")]), 4)
        XCTAssertEqual(try frames(metrics, "rawfx_filter_frames_total", user7 + [("filter", "test_accum"), ("stage", "1")]), 4)
        XCTAssertEqual(try frames(metrics, "rawfx_filter_frames_total", mixed + [("filter", "gain"), ("stage", "0")]), 9)
        XCTAssertEqual(try metrics.expectTimer("rawfx_filter_process_duration",
                                               mixed + [("filter", "test_accum"), ("stage", "1")]).values.count, 9)
        // Sync: no queue, no gauge.
        XCTAssertThrowsError(try metrics.expectGauge("rawfx_hook_queue_depth", hook))
        processor.close()
    }

    func testAsyncVideoSourceReportsItsQueueDepthAndCallbackTime() throws {
        let metrics = TestMetrics()
        let registry = processorRegistry()
        let source = try VideoSourceAdapter(chain: "copy", registry: registry, mode: .async(capacity: 3))
        let senders = CountingSenders()
        source.onInitialize(senders, supportCapabilityArray: [VideoSourceCapability(width: 64, height: 48)],
                            suggestCapability: VideoSourceCapability(width: 64, height: 48))
        source.onStartSend()
        let reporter = MetricsReporter(factory: metrics)
        reporter.addHook(metrics: { source.metrics }, queueDepth: { source.queuedFrames })
        let picture = patternBuffer(width: 64, height: 48)
        for _ in 0..<6 { _ = source.pushFrame(picture.frame) }
        XCTAssertTrue(waitUntil { source.queuedFrames == 0 && source.metrics.hook.frames + source.metrics.hook.drops == 6 })
        reporter.report()
        let hook = [("hook", source.metrics.name)]
        let m = source.metrics
        XCTAssertEqual(try frames(metrics, "rawfx_hook_frames_total", hook), Int64(m.hook.frames))
        XCTAssertEqual(m.hook.frames + m.hook.drops, 6, "every push was processed or dropped")
        XCTAssertEqual(try metrics.expectTimer("rawfx_hook_callback_duration", hook).values.count, 6)
        XCTAssertEqual(try metrics.expectGauge("rawfx_hook_queue_depth", hook).lastValue, 0)
        source.close()
    }

    /// The frame path with a backend bootstrapped and a reporter pushing every millisecond on
    /// its own thread: still nothing allocated per frame on the processing thread.
    func testNothingAllocatesPerFrameWhileAReporterRuns() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let metrics = Self.bootstrapped
        let reporter = MetricsReporter()  // MetricsSystem.factory: the bootstrapped TestMetrics
        let chain = try VideoChain("null,copy", registry: builtPlugins)
        let name = "alloc-\(UUID().uuidString)"
        let control = chain.control
        reporter.addChain(named: name) { control.metrics }
        let buffer = patternBuffer(width: 64, height: 36, extraStride: 3)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        reporter.start(interval: .milliseconds(1))
        let before = rawfx_thread_allocation_count()
        for _ in 0..<300 {
            _ = try chain.process(buffer.frame)
            usleep(50)  // let reports interleave with frames
        }
        let allocated = rawfx_thread_allocation_count() - before
        reporter.stop()
        XCTAssertEqual(allocated, 0)
        let copy = [("chain", name), ("filter", "copy"), ("stage", "1")]
        XCTAssertEqual(try frames(metrics, "rawfx_filter_frames_total", copy), 303)
        XCTAssertGreaterThan(try metrics.expectCounter("rawfx_filter_frames_total", copy).values.count, 1,
                             "the reporter thread reported while frames flowed")
    }

    // MARK: Logging

    /// One InMemoryLogHandler per label, as a backend would make one per Logger.
    final class Handlers: @unchecked Sendable {
        private let lock = NSLock()
        private var byLabel: [String: InMemoryLogHandler] = [:]
        func make(_ label: String) -> any LogHandler {
            lock.withLock {
                if let made = byLabel[label] { return made }
                let made = InMemoryLogHandler()
                byLabel[label] = made
                return made
            }
        }
        func entries(_ label: String) -> [InMemoryLogHandler.Entry] { lock.withLock { byLabel[label]?.entries ?? [] } }
    }

    func testPluginAndEngineLinesReachSwiftLogWithLabelsLevelsAndMetadata() throws {
        let handlers = Handlers()
        RawFXLog.setLogHandlerFactory { handlers.make($0) }
        defer { RawFXLog.setLogHandlerFactory(nil); RawFXLog.logLevel = .warning }
        XCTAssertEqual(RawFXLog.logLevel, .warning, "quiet by default")

        let chain = try VideoChain("hostprobe=log_at=2", registry: hostProbePlugins)
        let buffer = patternBuffer(width: 16, height: 8)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        RawFXLog.log(.info, source: "probe-engine", "below the default level")
        RawFXLog.log(.error, source: "probe-engine", "an engine error")
        RawFXLog.sync()
        XCTAssertEqual(handlers.entries("rawfx.plugin.hostprobe"),
                       [.init(level: .warning, message: "frame 2",
                              metadata: ["rawfx.source": "hostprobe", "rawfx.origin": "instance"])])
        XCTAssertEqual(handlers.entries("rawfx.engine").filter { $0.metadata["rawfx.source"] == "probe-engine" },
                       [.init(level: .error, message: "an engine error",
                              metadata: ["rawfx.source": "probe-engine", "rawfx.origin": "engine"])])

        RawFXLog.logLevel = .debug
        RawFXLog.log(.debug, source: "probe-engine", "now shown")
        RawFXLog.sync()
        XCTAssertEqual(handlers.entries("rawfx.engine").filter { $0.metadata["rawfx.source"] == "probe-engine" }
            .map(\.message.description), ["an engine error", "now shown"])
    }

    func testAReplacementHandlerTakesEveryRecordInsteadOfSwiftLog() throws {
        let handlers = Handlers()
        RawFXLog.setLogHandlerFactory { handlers.make($0) }
        defer { RawFXLog.setLogHandlerFactory(nil) }
        let capture = LogCapture()
        RawFXLog.log(.debug, source: "probe-replaced", "to the handler only")
        RawFXLog.sync()
        capture.stop()
        XCTAssertEqual(capture.records.filter { $0.source == "probe-replaced" },
                       [RawFXLog.Record(severity: .debug, source: "probe-replaced", message: "to the handler only")])
        XCTAssertEqual(handlers.entries("rawfx.engine").filter { $0.metadata["rawfx.source"] == "probe-replaced" }, [])
    }
}

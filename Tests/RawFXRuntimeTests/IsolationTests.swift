import Foundation
import RawFX
import RawFXAllocCounter
import RawFXEmulator
import RawFXMedia
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// Isolated stages (`name@isolate`, docs/isolation.md) with filters that crash, hang, exit,
/// break the protocol or crash in configure (Fixtures/faulty_plugin.c). The oracle for every
/// frame: the isolated stage's output is the in-process filter's output when the helper ran
/// it, or the input itself when the stage counted it as passed through; never anything else,
/// and never a frame lost or added.
final class IsolationTests: XCTestCase {
    /// The faulty plugin, compiled once per test into its own directory.
    func faultyRegistry() throws -> PluginRegistry {
        let directory = temporaryDirectory()
        let path = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/faulty_plugin.c"),
                                      into: directory, name: "libfaulty.so")
        let registry = PluginRegistry.empty(environment: [:])
        try registry.load(path: path)
        return registry
    }

    /// Waits (generously: a loaded machine restarts slowly) until the stage's helper serves frames.
    func waitUntilUp(_ instance: FilterInstance, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(60)
        while instance.isolation?.isUp != true, Date() < deadline { usleep(5000) }
        XCTAssertEqual(instance.isolation?.isUp, true, "the helper came back", file: file, line: line)
    }

    enum Outcome: Equatable { case processed, passedThrough }

    /// Runs frame `seed` through `chain` and checks it against `reference` (in process) or the
    /// input, as the passthrough counter says. Returns which it was.
    func runFrame(_ chain: VideoChain, reference: VideoChain, seed: Int, file: StaticString = #filePath, line: UInt = #line) throws -> Outcome {
        let input = patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed)
        let expected = patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed)
        let inputBytes = (0..<3).map { planeBytes(input.frame, $0) }
        var frame = input.frame
        frame.timestampMicroseconds = Int64(seed) * 33_333
        let before = chain.filters[0].isolation!.passthrough
        let output = try chain.process(frame)
        let outputBytes = (0..<3).map { planeBytes(output, $0) }
        XCTAssertEqual(output.timestampMicroseconds, Int64(seed) * 33_333, "frame \(seed) keeps its time", file: file, line: line)
        if chain.filters[0].isolation!.passthrough == before + 1 {
            XCTAssertEqual(outputBytes, inputBytes, "frame \(seed) passed through unchanged", file: file, line: line)
            return .passedThrough
        }
        XCTAssertEqual(chain.filters[0].isolation!.passthrough, before, file: file, line: line)
        let referenceOutput = try reference.process(expected.frame)
        XCTAssertEqual(outputBytes, (0..<3).map { planeBytes(referenceOutput, $0) }, "frame \(seed) as the in-process filter makes it", file: file, line: line)
        return .processed
    }

    /// A fault on the 5th frame: frames 1-4 processed, the 5th passed through, the stage back
    /// after the restart (whose own 5th frame faults again), every frame accounted for.
    func checkFaultOnFifthFrame(_ text: String, reference referenceText: String, logged: String) throws {
        let log = LogCapture()
        defer { log.stop() }
        let registry = try faultyRegistry()
        let chain = try VideoChain(text, registry: registry)
        let reference = try VideoChain(referenceText, registry: registry)
        var outcomes: [Outcome] = []
        for seed in 1...2 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        // A run-time change before the fault: the restarted helper must get it again.
        let stage = chain.filters[0].type.id
        try chain.control.setParameter("\(stage).delta", "23")
        try reference.control.setParameter("\(stage).delta", "23")
        for seed in 3...5 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        XCTAssertEqual(outcomes, [.processed, .processed, .processed, .processed, .passedThrough])
        XCTAssertEqual(chain.filters[0].isolation?.faults, 1)
        // While the helper restarts, frames pass (or are processed, once it is back).
        for seed in 6...7 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        waitUntilUp(chain.filters[0])
        let processedBefore = outcomes.filter { $0 == .processed }.count
        outcomes.append(try runFrame(chain, reference: reference, seed: 8))
        XCTAssertEqual(outcomes.last, .processed, "the restarted helper runs the filter again")
        let metrics = chain.control.metrics[0]
        XCTAssertGreaterThanOrEqual(metrics.isolation?.restarts ?? 0, 1)
        XCTAssertEqual(metrics.isolation?.passthrough, UInt64(outcomes.filter { $0 == .passedThrough }.count))
        XCTAssertGreaterThan(outcomes.filter { $0 == .processed }.count, processedBefore)
        XCTAssertEqual(outcomes.count, 8, "every frame came out")
        // Each fault is one warning line of the engine log, naming the filter and what happened.
        RawFXLog.sync()
        // Only this stage's lines: a helper of an earlier test may still log as it winds down.
        let faultLines = log.records.filter { $0.severity == .warning && $0.message.contains("isolated helper") && $0.source == chain.filters[0].type.id }
        XCTAssertEqual(UInt64(faultLines.count), metrics.isolation?.faults, "\(faultLines)")
        XCTAssertEqual(faultLines.first?.source, chain.filters[0].type.id)
        XCTAssertTrue(faultLines.first?.message.contains(logged) == true, "\(faultLines)")
    }

    func testSegfaultOnTheFifthFramePassesItThroughAndRestarts() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms)=fault=segv", reference: "faulty_video",
                                   logged: "killed by signal 11 (Segmentation fault) during a frame")
    }

    func testEndlessLoopPastTheDeadlinePassesTheFrameThrough() throws {
        // The deadline is what ends the hang: short enough to keep the test quick, far above
        // the microseconds a 64x48 frame takes, so only the hang runs into it.
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=2000ms)=fault=hang", reference: "faulty_video",
                                   logged: "did not finish a frame within the 2000.00 ms deadline")
    }

    func testExitInProcessPassesTheFrameThrough() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms)=fault=exit", reference: "faulty_video",
                                   logged: "exited with status 3 during a frame")
    }

    /// The plugin's lines from `chain` (its host object's, not the engine's), frames 1...`frames`.
    func pluginLines(_ text: String, frames: Int, registry: PluginRegistry) throws -> [RawFXLog.Record] {
        let log = LogCapture()
        defer { log.stop() }
        let chain = try VideoChain(text, registry: registry)
        for seed in 1...frames { _ = try runFrameOnly(chain, seed: seed) }
        RawFXLog.sync()
        return log.records.filter { $0.source == "faulty_video" }
    }

    func runFrameOnly(_ chain: VideoChain, seed: Int) throws -> VideoFrame {
        let input = patternBuffer(width: 64, height: 48, seed: seed)
        return try chain.process(input.frame)
    }

    /// A line an isolated plugin logs reaches the engine's log (the handler `rawfx_set_log_callback`
    /// and `-v` see) exactly as the same plugin's line in process: same severity, source and
    /// origin, not the helper's stderr.
    func testAnIsolatedPluginsLogLineReachesTheEngineLogAsInProcess() throws {
        let registry = try faultyRegistry()
        // fault=socket opens and closes a socket on call 5: harmless without seccomp=strict.
        let inProcess = try pluginLines("faulty_video=fault=socket:say=1", frames: 6, registry: registry)
        XCTAssertEqual(inProcess, [RawFXLog.Record(severity: .warning, source: "faulty_video", message: "socket on call 5", origin: .instance)])
        let isolated = try pluginLines("faulty_video@isolate(deadline=10000ms)=fault=socket:say=1", frames: 6, registry: registry)
        XCTAssertEqual(isolated, inProcess)
    }

    /// A plugin's last line before it crashes is not lost with its process, and comes before the
    /// engine's line about the fault.
    func testAnIsolatedPluginsLastLineBeforeACrashPrecedesTheFault() throws {
        let registry = try faultyRegistry()
        let lines = try pluginLines("faulty_video@isolate(deadline=10000ms)=fault=segv:say=1", frames: 5, registry: registry)
        XCTAssertEqual(lines.map(\.message).first, "segv on call 5", "\(lines)")
        XCTAssertEqual(lines.first?.origin, .instance)
        XCTAssertEqual(lines.count, 2, "\(lines)")
        XCTAssertEqual(lines.last?.origin, .engine)
        XCTAssertTrue(lines.last?.message.contains("killed by signal 11 (Segmentation fault) during a frame") == true, "\(lines)")
    }

    func testWrongOutputSizeIsAProtocolViolation() throws {
        try checkFaultOnFifthFrame("faulty_oop@isolate(deadline=10000ms)", reference: "faulty_oop=at=1000000",
                                   logged: "broke the protocol: it reported a 66x48 frame")
    }

    func testCrashInConfigureNegotiatesAsPassthroughThenComesBack() throws {
        let registry = try faultyRegistry()
        let marker = temporaryDirectory().appendingPathComponent("configured-once").path
        let chain = try VideoChain("faulty_video@isolate(deadline=10000ms)=fault=configure:marker='\(marker)'", registry: registry)
        let reference = try VideoChain("faulty_video", registry: registry)
        // The first helper dies in configure: the chain still negotiates, as a passthrough.
        try chain.negotiate(VideoFormat(width: 64, height: 48))
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the first configure ran in the helper")
        XCTAssertEqual(chain.filters[0].isolation?.faults, 1)
        var outcomes = [try runFrame(chain, reference: reference, seed: 1)]
        waitUntilUp(chain.filters[0])
        for seed in 2...4 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        XCTAssertEqual(Array(outcomes.dropFirst()), [.processed, .processed, .processed], "configured again after the restart")
        XCTAssertEqual(chain.control.metrics[0].isolation?.restarts, 1)
    }

    func testZeroAllocationsPerFrameOnTheHostSide() throws {
        let registry = try faultyRegistry()
        let chain = try VideoChain("faulty_video@isolate(deadline=10000ms),faulty_oop@isolate(deadline=10000ms)=at=1000000", registry: registry)
        let buffer = patternBuffer(width: 64, height: 36, extraStride: 3)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<200 { _ = try chain.process(buffer.frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        XCTAssertEqual(chain.filters.map { $0.isolation?.passthrough }, [0, 0], "every frame crossed to the helpers")
    }

    /// Audio: a crash on the 5th block passes that block through unchanged, with its length
    /// and time; every block comes out, in order.
    func checkAudioFault(_ fault: String, deadline: String) throws {
        let registry = try faultyRegistry()
        let chain = try AudioChain("faulty_audio@isolate(deadline=\(deadline))=fault=\(fault)", registry: registry)
        let reference = try AudioChain("faulty_audio", registry: registry)
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        var outcomes: [Outcome] = []
        func block(_ n: Int) throws {
            var input = [Int16](repeating: 0, count: 480)
            for i in input.indices { input[i] = Int16(truncatingIfNeeded: (i * 37 + n * 1013) % 20000 - 10000) }
            var expected = input
            let sent = input  // the chain may write its output over `input`
            var output: [[Int16]] = []
            let before = chain.filters[0].isolation!.passthrough
            try input.withUnsafeMutableBufferPointer { b in
                try chain.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format,
                                             timestampMicroseconds: Int64(n) * 10_000)) { out in
                    XCTAssertEqual(out.timestampMicroseconds, Int64(n) * 10_000)
                    output.append(Array(UnsafeBufferPointer(start: out.samples, count: out.frameCount)))
                }
            }
            XCTAssertEqual(output.count, 1, "block \(n) came out once")
            if chain.filters[0].isolation!.passthrough == before + 1 {
                XCTAssertEqual(output.first, sent, "block \(n) passed through unchanged")
                outcomes.append(.passedThrough)
            } else {
                var referenceOutput: [Int16] = []
                try expected.withUnsafeMutableBufferPointer { b in
                    try reference.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) {
                        referenceOutput = Array(UnsafeBufferPointer(start: $0.samples, count: $0.frameCount))
                    }
                }
                XCTAssertEqual(output.first, referenceOutput, "block \(n) as the in-process filter makes it")
                outcomes.append(.processed)
            }
        }
        for n in 1...5 { try block(n) }
        XCTAssertEqual(outcomes, [.processed, .processed, .processed, .processed, .passedThrough])
        waitUntilUp(chain.filters[0])
        try block(6)
        XCTAssertEqual(outcomes.last, .processed)
        XCTAssertEqual(chain.control.metrics[0].isolation?.faults, 1)
        XCTAssertEqual(chain.control.metrics[0].isolation?.restarts, 1)
    }

    func testAudioSegfaultPassesTheBlockThrough() throws { try checkAudioFault("segv", deadline: "10000ms") }
    func testAudioHangPassesTheBlockThrough() throws { try checkAudioFault("hang", deadline: "2000ms") }
    func testAudioExitPassesTheBlockThrough() throws { try checkAudioFault("exit", deadline: "10000ms") }
    /// A hostile plugin's edit of half the block before it crashes, or its scribble over the whole
    /// shared memory before it returns success, never reaches the output.
    func testAudioCrashAfterAnInPlaceEditPassesTheBlockThroughAsItCameIn() throws { try checkAudioFault("editcrash", deadline: "10000ms") }
    func testAudioScribbledSharedMemoryWithSuccessPassesTheBlockThrough() throws { try checkAudioFault("scribble", deadline: "2000ms") }

    // MARK: pipelined audio (docs/isolation.md, "Pipelined audio")

    /// Runs `blocks` 480-frame blocks through `chain` and returns what came out of each call.
    func pipelinedOutputs(_ chain: AudioChain, blocks: ClosedRange<Int>, inputs: inout [Int: [Int16]],
                          before: ((Int) -> Void)? = nil) throws -> [Int: [Int16]] {
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        var outputs: [Int: [Int16]] = [:]
        for n in blocks {
            before?(n)
            var input = (0..<480).map { Int16(truncatingIfNeeded: ($0 * 37 + n * 1013) % 20000 - 10000) }
            inputs[n] = input
            var output: [Int16] = []
            var calls = 0
            try input.withUnsafeMutableBufferPointer { b in
                try chain.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) {
                    output += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount)
                    calls += 1
                }
            }
            XCTAssertEqual(calls, 1, "call \(n): one block out")
            outputs[n] = output
        }
        return outputs
    }

    /// The in-process filter's answer for each input block (a stateless filter).
    func referenceOutputs(_ text: String, registry: PluginRegistry, _ inputs: [Int: [Int16]]) throws -> [Int: [Int16]] {
        let reference = try AudioChain(text, registry: registry)
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        var answers: [Int: [Int16]] = [:]
        for (n, input) in inputs {
            var block = input
            try block.withUnsafeMutableBufferPointer { b in
                try reference.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) {
                    answers[n, default: []] += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount)
                }
            }
        }
        return answers
    }

    /// `@isolate(pipeline)`: every call returns the previous block as the in-process filter
    /// makes it (the first call the delay line's silence), and the stage's latency says so.
    func testPipelinedAudioIsTheInProcessOutputOneBlockLate() throws {
        let registry = try faultyRegistry()
        let chain = try AudioChain("faulty_audio@isolate(pipeline,deadline=10000ms)=delta=5", registry: registry)
        var inputs: [Int: [Int16]] = [:]
        let outputs = try pipelinedOutputs(chain, blocks: 1...8, inputs: &inputs)
        let expected = try referenceOutputs("faulty_audio=delta=5", registry: registry, inputs)
        XCTAssertEqual(outputs[1], [Int16](repeating: 0, count: 480), "the first call: silence")
        for n in 2...8 { XCTAssertEqual(outputs[n], expected[n - 1], "call \(n): block \(n - 1) as the in-process filter makes it") }
        XCTAssertEqual(chain.latency, 480, "one 10 ms block of latency (the filter asked for any block size)")
        XCTAssertEqual(chain.control.metrics[0].isolation?.passthrough, 0)
        XCTAssertEqual(chain.control.metrics[0].isolation?.faults, 0)
        // A parameter between blocks reaches the helper after the block in flight.
        try chain.control.setParameter("faulty_audio.delta", "9")
        let later = try pipelinedOutputs(chain, blocks: 9...10, inputs: &inputs)
        XCTAssertEqual(later[9], expected[8], "block 8, posted before the change")
        XCTAssertEqual(later[10], try referenceOutputs("faulty_audio=delta=9", registry: registry, [9: inputs[9]!])[9])
    }

    /// A fault while the helper works on block 5: the next call passes block 5 through (the
    /// input, one block late like every answer), every call returns one block in order, and
    /// the stage comes back.
    func checkPipelinedAudioFault(_ fault: String, deadline: String) throws {
        let registry = try faultyRegistry()
        let chain = try AudioChain("faulty_audio@isolate(pipeline,deadline=\(deadline))=delta=5:fault=\(fault)", registry: registry)
        var inputs: [Int: [Int16]] = [:]
        var outputs = try pipelinedOutputs(chain, blocks: 1...6, inputs: &inputs)
        waitUntilUp(chain.filters[0])
        outputs.merge(try pipelinedOutputs(chain, blocks: 7...8, inputs: &inputs)) { $1 }
        let expected = try referenceOutputs("faulty_audio=delta=5", registry: registry, inputs)
        XCTAssertEqual(outputs[1], [Int16](repeating: 0, count: 480))
        for n in 2...5 { XCTAssertEqual(outputs[n], expected[n - 1], "call \(n): block \(n - 1) processed") }
        XCTAssertEqual(outputs[6], inputs[5], "call 6: block 5, whose helper \(fault)ed, passed through")
        XCTAssertEqual(outputs[7], inputs[6], "call 7: block 6, never posted (the helper was down), passed through")
        XCTAssertEqual(outputs[8], expected[7], "call 8: block 7, processed by the restarted helper")
        XCTAssertEqual(chain.control.metrics[0].isolation?.faults, 1)
        XCTAssertEqual(chain.control.metrics[0].isolation?.restarts, 1)
        XCTAssertEqual(chain.control.metrics[0].isolation?.passthrough, 2)
    }

    func testPipelinedAudioSegfaultPassesTheBlockThrough() throws { try checkPipelinedAudioFault("segv", deadline: "10000ms") }
    func testPipelinedAudioHangPassesTheBlockThrough() throws { try checkPipelinedAudioFault("hang", deadline: "2000ms") }

    func testDelayingAudioStagePassesTheInputDelayedByItsLatency() throws {
        // The filter delays by 100 frames: its passthrough must too, or the stream's timing
        // would jump by 100 frames when the filter drops out.
        let registry = try faultyRegistry()
        let chain = try AudioChain("faulty_audio@isolate(deadline=10000ms)=fault=segv:latency=100", registry: registry)
        let reference = try AudioChain("faulty_audio=latency=100", registry: registry)
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        var inputs: [[Int16]] = []
        for n in 1...5 {
            var input = (0..<480).map { Int16(truncatingIfNeeded: ($0 * 31 + n * 977) % 16000 - 8000) }
            inputs.append(input)
            var expected = input
            var output: [Int16] = [], referenceOutput: [Int16] = []
            try input.withUnsafeMutableBufferPointer { b in
                try chain.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) {
                    output += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount)
                }
            }
            try expected.withUnsafeMutableBufferPointer { b in
                try reference.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) {
                    referenceOutput += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount)
                }
            }
            if n < 5 {
                XCTAssertEqual(output, referenceOutput, "block \(n) as the in-process filter makes it")
            } else {
                // The input delayed by 100 frames: the last 100 of block 4, then block 5's first 380.
                XCTAssertEqual(output, Array(inputs[3].suffix(100) + inputs[4].prefix(380)), "block 5 passed through, delayed")
            }
        }
        XCTAssertEqual(chain.latency, 100)
        XCTAssertEqual(chain.control.metrics[0].isolation?.passthrough, 1)
        XCTAssertEqual(chain.control.metrics[0].isolation?.faults, 1)
    }

    /// Like every chain output, an isolated stage's view keeps what its planes lie in alive
    /// (here the proxy instance and its shared memory), even after the chain is gone.
    func testAnIsolatedStagesOutputViewKeepsItsSharedMemoryAlive() throws {
        var chain: VideoChain? = try VideoChain("mirror@isolate(deadline=10000ms)", registry: builtPlugins)
        let input = patternBuffer(width: 64, height: 48, seed: 3)
        let output = try chain!.process(input.frame)
        XCTAssertTrue(output.storage is FilterInstance, "the view holds the isolated stage's instance")
        let before = (0..<3).map { planeBytes(output, $0) }
        chain = nil
        XCTAssertEqual((0..<3).map { planeBytes(output, $0) }, before, "the planes are still mapped")
    }

    // MARK: the frame in flight (docs/isolation.md, "Memory" and "What a hostile plugin can do")

    /// Behind an out-of-place stage the frame is copied into the isolated stage's shared memory
    /// once, like a borrowed frame (the upstream stage writes into the chain's own memory, which
    /// the helper cannot touch), and every frame is what the in-process chain makes.
    func testFrameBehindAnOutOfPlaceStageIsCopiedInOnce() throws {
        let registry = try faultyRegistry()
        let chain = try VideoChain("faulty_oop=at=1000000:delta=3,faulty_video@isolate(deadline=10000ms)=delta=5", registry: registry)
        let reference = try VideoChain("faulty_oop=at=1000000:delta=3,faulty_video=delta=5", registry: registry)
        for seed in 1...6 {
            let input = patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed)
            let expected = try reference.process(input.frame)
            let output = try chain.process(input.frame)
            XCTAssertEqual((0..<3).map { planeBytes(output, $0) }, (0..<3).map { planeBytes(expected, $0) }, "frame \(seed)")
        }
        let isolation = try XCTUnwrap(chain.filters[1].isolation)
        XCTAssertEqual(isolation.passthrough, 0)
        XCTAssertEqual(isolation.copiedIn, 6, "one copy per frame")
    }

    /// A hostile in-place stage faults on frame 2 (`fault`: it edits half the frame in shared
    /// memory then crashes, or it fills the whole shared memory, control block included, and
    /// returns success): that frame leaves the stage byte for byte as it came in, alone (a
    /// borrowed frame) and behind an out-of-place stage (the frame the chain made).
    func checkFrameInFlightLeavesAsItCameIn(fault: String, deadline: String, logged: String) throws {
        let registry = try faultyRegistry()
        for upstream in ["", "faulty_oop=at=1000000:delta=3,"] {
            let log = LogCapture()
            defer { log.stop() }
            let chain = try VideoChain("\(upstream)faulty_video@isolate(deadline=\(deadline))=fault=\(fault):at=2:delta=40", registry: registry)
            let processed = try VideoChain("\(upstream)faulty_video=delta=40", registry: registry)
            // What reaches the isolated stage: the input, or the upstream stage's output.
            let arriving = upstream.isEmpty ? nil : try VideoChain("faulty_oop=at=1000000:delta=3", registry: registry)
            let stage = chain.filters.count - 1
            func bytes(_ frame: VideoFrame) -> [[UInt8]] { (0..<3).map { planeBytes(frame, $0) } }
            func fresh(_ seed: Int) -> VideoBuffer { patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed) }
            for seed in 1...2 {
                let input = fresh(seed)
                let passedBefore = chain.filters[stage].isolation!.passthrough
                let output = bytes(try chain.process(input.frame))
                let expected: [[UInt8]]
                if seed == 1 {
                    expected = bytes(try processed.process(fresh(seed).frame))
                    XCTAssertEqual(chain.filters[stage].isolation!.passthrough, passedBefore, "\(upstream) frame 1 processed")
                } else {
                    expected = try arriving.map { bytes(try $0.process(fresh(seed).frame)) } ?? bytes(fresh(seed).frame)
                    XCTAssertEqual(chain.filters[stage].isolation!.passthrough, passedBefore + 1, "\(upstream) frame 2 passed through")
                }
                XCTAssertEqual(output, expected, "\(upstream)\(fault): frame \(seed)")
            }
            XCTAssertEqual(chain.filters[stage].isolation?.faults, 1, "\(upstream)\(fault)")
            RawFXLog.sync()
            let faultLines = log.records.filter { $0.severity == .warning && $0.message.contains("isolated helper") && $0.source == "faulty_video" }
            XCTAssertTrue(faultLines.contains { $0.message.contains(logged) }, "\(faultLines)")
        }
    }

    func testCrashAfterAnInPlaceEditPassesTheFrameThroughAsItCameIn() throws {
        try checkFrameInFlightLeavesAsItCameIn(fault: "editcrash", deadline: "10000ms",
                                               logged: "killed by signal 11 (Segmentation fault) during a frame")
    }

    /// The helper's reply then carries the scribbled sequence number (0xA5A5A5A5): no answer to
    /// this frame within the deadline, a fault.
    func testScribbledSharedMemoryWithSuccessPassesTheFrameThroughAsItCameIn() throws {
        try checkFrameInFlightLeavesAsItCameIn(fault: "scribble", deadline: "2000ms",
                                               logged: "did not finish a frame within the 2000.00 ms deadline")
    }

    // MARK: seccomp (docs/isolation.md, "Least privilege")

    func testSeccompKillsAPluginThatOpensASocket() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms,seccomp=strict)=fault=socket", reference: "faulty_video",
                                   logged: "killed by signal 31 (Bad system call: a system call the seccomp filter forbids) during a frame")
    }

    func testSeccompKillsAPluginThatExecutesAProgram() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms,seccomp=strict)=fault=exec", reference: "faulty_video",
                                   logged: "killed by signal 31 (Bad system call: a system call the seccomp filter forbids) during a frame")
    }

    /// The control for the two tests above: without the filter the same socket is harmless.
    func testWithoutSeccompTheSocketIsNoFault() throws {
        let registry = try faultyRegistry()
        let chain = try VideoChain("faulty_video@isolate(deadline=10000ms)=fault=socket", registry: registry)
        let reference = try VideoChain("faulty_video", registry: registry)
        for seed in 1...6 { XCTAssertEqual(try runFrame(chain, reference: reference, seed: seed), .processed) }
        XCTAssertEqual(chain.filters[0].isolation?.faults, 0)
        XCTAssertEqual(try seccompMode(of: chain.filters[0]), "2", "the default filter, which allows sockets")
    }

    /// With the default settings a helper cannot kill, stop or signal the host or its process
    /// group (it leads its own session, and its filter refuses signals outside it): the
    /// plugin's kill fails, the host lives, and every frame is processed. Before, SIGKILL to
    /// the parent ended the test run itself.
    func testAHelperCannotKillOrStopTheHostOrItsGroup() throws {
        let registry = try faultyRegistry()
        for fault in ["killparent", "stopgroup"] {
            let chain = try VideoChain("faulty_video@isolate(deadline=10000ms)=fault=\(fault):at=2", registry: registry)
            let reference = try VideoChain("faulty_video", registry: registry)
            for seed in 1...4 { XCTAssertEqual(try runFrame(chain, reference: reference, seed: seed), .processed, fault) }
            XCTAssertEqual(chain.filters[0].isolation?.faults, 0, fault)
            let pid = try XCTUnwrap(chain.filters[0].isolation?.pid)
            XCTAssertEqual(getpgid(pid_t(pid)), pid_t(pid), "\(fault): the helper leads its own process group")
            XCTAssertNotEqual(getsid(pid_t(pid)), getsid(0), "\(fault): and its own session")
        }
    }

    /// A child the helper starts stays in its group (setsid is refused) and is killed with it
    /// when the helper crashes.
    func testChildrenAHelperLeavesBehindAreKilledWithIt() throws {
        let registry = try faultyRegistry()
        let marker = temporaryDirectory().appendingPathComponent("child.pid").path
        let chain = try VideoChain("faulty_video@isolate(deadline=10000ms)=fault=orphan:at=2:marker=\(marker)", registry: registry)
        let reference = try VideoChain("faulty_video", registry: registry)
        XCTAssertEqual(try runFrame(chain, reference: reference, seed: 1), .processed)
        XCTAssertEqual(try runFrame(chain, reference: reference, seed: 2), .passedThrough, "the helper crashed after the fork")
        let child = try XCTUnwrap(pid_t(try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        waitUntilUp(chain.filters[0])
        // Dead, or a zombie waiting for whoever inherited it: either way not running.
        func running(_ pid: pid_t) -> Bool {
            guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
            return !stat.contains(") Z ")
        }
        let deadline = Date().addingTimeInterval(20)
        while running(child), Date() < deadline { usleep(10_000) }
        XCTAssertFalse(running(child), "the helper's child \(child) outlived it")
    }

    /// The kernel's word on the helper: `Seccomp:` in /proc/PID/status (0 none, 2 a filter).
    func seccompMode(of instance: FilterInstance) throws -> String? {
        let pid = try XCTUnwrap(instance.isolation?.pid)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        return status.split(separator: "\n").first { $0.hasPrefix("Seccomp:") }?.split(separator: "\t").last.map(String.init)
    }

    /// The shipped plugins do nothing the strict filter forbids: the same output as in process, no fault.
    func testShippedPluginsRunUnderSeccompUnchanged() throws {
        let image = repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path
        for text in ["watermark=image=\(image):x=10:y=8:opacity=0.6", "scale=width=96:height=54", "rotate=angle=90"] {
            let name = String(text.prefix { $0 != "=" })
            guard (try? builtPlugins.filterType(name)) != nil else { throw XCTSkip("\(name) is not built") }
            let isolated = text.replacingOccurrences(of: name, with: "\(name)@isolate(deadline=10000ms,seccomp=strict)", options: .anchored)
            let chain = try VideoChain(isolated, registry: builtPlugins)
            let reference = try VideoChain(text, registry: builtPlugins)
            for seed in 1...4 {
                let input = patternBuffer(width: 160, height: 90, extraStride: 4, seed: seed)
                let output = try chain.process(input.frame)
                let expected = try reference.process(input.frame)
                XCTAssertEqual((0..<3).map { planeBytes(output, $0) }, (0..<3).map { planeBytes(expected, $0) }, "\(text), frame \(seed)")
            }
            XCTAssertEqual(chain.filters[0].isolation?.faults, 0, text)
            XCTAssertEqual(chain.filters[0].isolation?.passthrough, 0, text)
            XCTAssertEqual(try seccompMode(of: chain.filters[0]), "2", "\(text): the helper runs under a seccomp filter")
        }
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("denoise is not built") }
        let chain = try AudioChain("denoise@isolate(deadline=10000ms,seccomp=strict)", registry: builtPlugins)
        let reference = try AudioChain("denoise", registry: builtPlugins)
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        for n in 1...8 {
            var input = (0..<480).map { Int16(truncatingIfNeeded: ($0 * 7919 + n * 104_729) % 4000 - 2000) }
            var expected = input
            var output: [Int16] = [], referenceOutput: [Int16] = []
            try input.withUnsafeMutableBufferPointer { b in
                try chain.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) { output += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount) }
            }
            try expected.withUnsafeMutableBufferPointer { b in
                try reference.process(AudioBlock(samples: b.baseAddress!, frameCount: 480, format: format)) { referenceOutput += UnsafeBufferPointer(start: $0.samples, count: $0.frameCount) }
            }
            XCTAssertEqual(output, referenceOutput, "denoise, block \(n)")
        }
        XCTAssertEqual(chain.filters[0].isolation?.faults, 0)
        XCTAssertEqual(chain.filters[0].isolation?.passthrough, 0)
    }

    func testStageOptionSyntax() throws {
        let specs = try FilterSpec.parseChain("watermark@isolate=image=logo.png,scale@isolate(deadline=40ms)=width=640,null")
        XCTAssertEqual(specs.map(\.isolation), [StageIsolation(), StageIsolation(deadlineMicroseconds: 40_000), nil])
        XCTAssertEqual(FilterSpec.chainText(specs), "watermark@isolate=image=logo.png,scale@isolate(deadline=40ms)=width=640,null")
        XCTAssertEqual(try FilterSpec.parseChain("a@isolate(deadline=2500us)").first?.description, "a@isolate(deadline=2500us)")
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@sandbox")) { XCTAssertTrue("\($0)".contains("expected '@isolate'"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(deadline=soon)")) { XCTAssertTrue("\($0)".contains("deadline=40ms"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate@isolate")) { XCTAssertTrue("\($0)".contains("twice"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(deadline=5ms")) { XCTAssertTrue("\($0)".contains("not closed"), "\($0)") }
        let strict = try FilterSpec.parseChain("a@isolate(deadline=8ms,seccomp=strict),b@isolate(seccomp=strict),c@isolate(seccomp=off)")
        XCTAssertEqual(strict.map(\.isolation), [StageIsolation(deadlineMicroseconds: 8000, seccomp: .strict), StageIsolation(seccomp: .strict), StageIsolation()])
        XCTAssertEqual(FilterSpec.chainText(strict), "a@isolate(deadline=8ms,seccomp=strict),b@isolate(seccomp=strict),c@isolate")
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(seccomp=loose)")) { XCTAssertTrue("\($0)".contains("expected seccomp=strict or seccomp=off"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(sandbox)")) { XCTAssertTrue("\($0)".contains("'sandbox' is not an isolation option"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(seccomp=strict,seccomp=off)")) { XCTAssertTrue("\($0)".contains("given twice"), "\($0)") }
        let pipelined = try FilterSpec.parseChain("denoise@isolate(pipeline,deadline=20ms)=level=-30")
        XCTAssertEqual(pipelined.map(\.isolation), [StageIsolation(deadlineMicroseconds: 20_000, pipeline: true)])
        XCTAssertEqual(FilterSpec.chainText(pipelined), "denoise@isolate(deadline=20ms,pipeline)=level=-30")
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(pipeline=1)")) { XCTAssertTrue("\($0)".contains("pipeline takes no value"), "\($0)") }
        XCTAssertThrowsChainError(try VideoChain("null@isolate(pipeline)", registry: builtPlugins)) {
            XCTAssertTrue("\($0)".contains("'null' is a video filter: @isolate(pipeline) runs an audio stage one block late"), "\($0)")
        }
    }

    func testMissingHelperIsAClearError() throws {
        let registry = try faultyRegistry()
        setenv(Isolation.helperVariable, "/nonexistent/rawfx-isolate", 1)
        defer { unsetenv(Isolation.helperVariable) }
        XCTAssertThrowsChainError(try VideoChain("faulty_video@isolate(deadline=123ms)", registry: registry)) {
            XCTAssertTrue("\($0)".contains("/nonexistent/rawfx-isolate"), "\($0)")
        }
    }
}

/// An isolated stage at an SDK hook driven by the emulator, and `rawfx run --isolate`.
final class IsolationIntegrationTests: XCTestCase, RawfxCommandTesting {
    func testPreProcessorHookKeepsEveryFrameThroughACrashingIsolatedFilter() throws {
        let registry = PluginRegistry.empty(environment: [:])
        registry.scan([try faultyPluginDirectory().path])
        let hook = try PreProcessorHook(chain: "faulty_video@isolate(deadline=10000ms)=fault=segv:delta=7", registry: registry)
        let emulator = SDKSessionEmulator()
        var outcomes: [String] = []
        func deliver(_ seed: Int) {
            let picture = patternBuffer(width: 66, height: 38, seed: seed)
            let capture = emulator.makeCaptureFrame(format: picture.format, padding: 24)
            let before = hook.metrics.filters[0].isolation!.passthrough
            let out = emulator.deliverPreProcess(hook, picture: picture.frame, into: capture)
            let processed = planeBytes(picture.frame, 0).map { $0 &+ 7 }
            if hook.metrics.filters[0].isolation!.passthrough == before + 1 {
                XCTAssertEqual(planeBytes(out, 0), planeBytes(picture.frame, 0), "frame \(seed) unchanged")
                outcomes.append("passed")
            } else {
                XCTAssertEqual(planeBytes(out, 0), processed, "frame \(seed) filtered")
                outcomes.append("processed")
            }
            XCTAssertEqual(planeBytes(out, 1), planeBytes(picture.frame, 1))
            XCTAssertTrue(capture.paddingIntact)
        }
        for seed in 1...5 { deliver(seed) }
        XCTAssertEqual(outcomes, ["processed", "processed", "processed", "processed", "passed"])
        let deadline = Date().addingTimeInterval(60)
        while hook.metrics.filters[0].isolation?.isUp != true, Date() < deadline { usleep(5000) }
        deliver(6)
        XCTAssertEqual(outcomes.last, "processed", "the stage came back after the restart")
        XCTAssertEqual(hook.metrics.hook.frames, 6, "every frame went through the hook")
        XCTAssertEqual(hook.metrics.hook.errors, 0)
        XCTAssertEqual(hook.metrics.filters[0].isolation?.faults, 1)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    /// From the second frame on, `rawfx run` reads the file straight into an isolated first
    /// stage's shared memory: the output is byte for byte the in-process run's.
    func testRunIsolateWritesWhatTheInProcessRunWrites() throws {
        try requireRawfx()
        let plugins = try faultyPluginDirectory()
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 6)
        let isolated = dir.appendingPathComponent("isolated.y4m").path, inProcess = dir.appendingPathComponent("plain.y4m").path
        for (flags, output) in [(["--isolate"], isolated), ([], inProcess)] {
            let outcome = try execute(rawfxBinary, ["run"] + flags + ["--plugin-path", plugins.path, "--vf", "faulty_video=delta=5,faulty_oop=at=1000000:delta=2", input, output])
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
        }
        let a = try Data(contentsOf: URL(fileURLWithPath: isolated)), b = try Data(contentsOf: URL(fileURLWithPath: inProcess))
        XCTAssertEqual(a.count, b.count)
        XCTAssertTrue(a == b, "the isolated run's output differs from the in-process run's")
        XCTAssertNotEqual(b, try Data(contentsOf: URL(fileURLWithPath: input)), "the filters changed the frames")
    }

    /// A pipelined stage's block of latency is the run's to undo: `rawfx run` writes what the
    /// in-process run writes, sample for sample, with nothing lost at either end, whether the
    /// stage says `@isolate(pipeline)` or `--isolate=pipeline` pipelines every audio stage
    /// (fixed 10 ms blocks, and one more to drain). `--isolate=pipeline` isolates video stages
    /// as `--isolate` does; another value is refused by name.
    func testRunWithPipelinedAudioStagesWritesWhatTheInProcessRunWrites() throws {
        try requireRawfx()
        let plugins = try faultyPluginDirectory()
        let dir = temporaryDirectory()
        let (input, _) = try makeWAV(dir, rate: 48000, seconds: 0.37)
        func run(_ options: [String], _ chain: String, _ name: String) throws -> (output: Data, blocks: Int) {
            let output = dir.appendingPathComponent(name).path
            let outcome = try execute(rawfxBinary, ["run", "--metrics"] + options + ["--plugin-path", plugins.path, "--af", chain, input, output])
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
            let line = outcome.stderr.split(separator: "\n").first { $0.hasPrefix("rawfx_filter_frames_total{") }
            return (try Data(contentsOf: URL(fileURLWithPath: output)), Int(line?.split(separator: " ").last ?? "") ?? -1)
        }
        let plain = try run([], "faulty_audio=delta=5", "plain.wav")
        let isolated = try run(["--isolate"], "faulty_audio=delta=5", "isolated.wav")
        let pipelined = try run(["--isolate=pipeline"], "faulty_audio=delta=5", "pipelined.wav")
        let stagePipelined = try run([], "faulty_audio@isolate(pipeline,deadline=10000ms)=delta=5", "stage.wav")
        XCTAssertNotEqual(plain.output, try Data(contentsOf: URL(fileURLWithPath: input)), "the filter changed the samples")
        for (run, name) in [(isolated, "--isolate"), (pipelined, "--isolate=pipeline"), (stagePipelined, "@isolate(pipeline)")] {
            XCTAssertEqual(run.output.count, plain.output.count, name)
            XCTAssertTrue(run.output == plain.output, "the \(name) run's output differs from the in-process run's")
        }
        XCTAssertEqual(isolated.blocks, plain.blocks)
        // faulty_audio takes any block size; pipelined, the negotiation fixes 10 ms blocks: 37
        // of 480 frames in 0.37 s, and one more to drain the block in flight.
        XCTAssertEqual(pipelined.blocks, 37 + 1, "10 ms blocks through the pipelined stage, one more to drain")
        XCTAssertEqual(stagePipelined.blocks, 37 + 1)

        let video = try makeY4M(dir, frames: 3)
        let videoOut = dir.appendingPathComponent("out.y4m").path
        let videoRun = try execute(rawfxBinary, ["run", "--isolate=pipeline", "--plugin-path", plugins.path, "--vf", "faulty_video=at=1000", video, videoOut])
        XCTAssertEqual(videoRun.status, 0, "a video chain is isolated as with --isolate: \(videoRun.stderr)")

        let refused = try execute(rawfxBinary, ["run", "--isolate=everything", "--af", "faulty_audio", input, videoOut])
        XCTAssertEqual(refused.status, 64)
        XCTAssertTrue(refused.stderr.contains("'--isolate=everything': --isolate takes no value, or chain"), refused.stderr)
    }

    func testRunIsolateWritesEveryFrameAndWarnsAboutTheFaults() throws {
        try requireRawfx()
        let plugins = try faultyPluginDirectory()
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 12)
        let output = dir.appendingPathComponent("out.y4m").path
        let outcome = try rawfx("run", "--isolate", "--plugin-path", plugins.path, "--vf", "faulty_video=fault=segv", input, output)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let warning = outcome.stderrLines.first { $0.contains("warning: filter 'faulty_video'") }
        XCTAssertNotNil(warning, outcome.stderr)
        XCTAssertNotNil(warning?.range(of: #"faulted [1-9][0-9]* times? in its helper process"#, options: .regularExpression), outcome.stderr)
        // Every frame is there, each the input itself or the input filtered (+10 on luma).
        let inReader = try Y4MReader(MediaInput(path: input))
        let outReader = try Y4MReader(MediaInput(path: output))
        var frames = 0, passed = 0
        while let inFrame = try inReader.readFrame() {
            let source = (0..<3).map { planeBytes(inFrame, $0) }
            guard let outFrame = try outReader.readFrame() else { return XCTFail("frame \(frames) is missing") }
            let result = (0..<3).map { planeBytes(outFrame, $0) }
            XCTAssertEqual(result[1...], source[1...], "frame \(frames): chroma untouched")
            if result[0] == source[0] { passed += 1 } else { XCTAssertEqual(result[0], source[0].map { $0 &+ 10 }, "frame \(frames)") }
            frames += 1
        }
        XCTAssertNil(try outReader.readFrame(), "no frame added")
        XCTAssertEqual(frames, 12)
        XCTAssertGreaterThanOrEqual(passed, 1, "the 5th frame passed through")
    }
}

extension RawfxCommandTesting {
    /// A fresh directory holding the faulty fixture plugins (`libfaulty.so`), for `rawfx run --isolate` tests.
    func faultyPluginDirectory() throws -> URL {
        let directory = temporaryDirectory()
        _ = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/faulty_plugin.c"),
                               into: directory, name: "libfaulty.so")
        return directory
    }
}

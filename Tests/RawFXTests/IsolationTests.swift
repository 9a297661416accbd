import Foundation
import RawFX
import RawFXAllocCounter
import XCTest

/// Isolated stages (`name@isolate`, docs/isolation.md) with filters that crash, hang, exit,
/// break the protocol or crash in configure (Fixtures/faulty_plugin.c). The oracle for every
/// frame: the isolated stage's output is the in-process filter's output when the helper ran
/// it, or the input itself when the stage counted it as passed through; never anything else,
/// and never a frame lost or added.
final class IsolationTests: XCTestCase {
    /// The faulty plugin, compiled once per test into its own directory.
    func faultyRegistry() throws -> PluginRegistry {
        let directory = temporaryDirectory()
        let path = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/RawFXTests/Fixtures/faulty_plugin.c"),
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
    func checkFaultOnFifthFrame(_ text: String, reference referenceText: String) throws {
        let registry = try faultyRegistry()
        let chain = try VideoChain(text, registry: registry)
        let reference = try VideoChain(referenceText, registry: registry)
        var outcomes: [Outcome] = []
        for seed in 1...5 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        XCTAssertEqual(outcomes, [.processed, .processed, .processed, .processed, .passedThrough])
        XCTAssertEqual(chain.filters[0].isolation?.faults, 1)
        // While the helper restarts, frames pass (or are processed, once it is back).
        for seed in 6...7 { outcomes.append(try runFrame(chain, reference: reference, seed: seed)) }
        waitUntilUp(chain.filters[0])
        let processedBefore = outcomes.filter { $0 == .processed }.count
        outcomes.append(try runFrame(chain, reference: reference, seed: 8))
        XCTAssertEqual(outcomes.last, .processed, "the restarted helper runs the filter again")
        let metrics = chain.metrics[0]
        XCTAssertGreaterThanOrEqual(metrics.isolation?.restarts ?? 0, 1)
        XCTAssertEqual(metrics.isolation?.passthrough, UInt64(outcomes.filter { $0 == .passedThrough }.count))
        XCTAssertGreaterThan(outcomes.filter { $0 == .processed }.count, processedBefore)
        XCTAssertEqual(outcomes.count, 8, "every frame came out")
    }

    func testSegfaultOnTheFifthFramePassesItThroughAndRestarts() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms)=fault=segv", reference: "faulty_video")
    }

    func testEndlessLoopPastTheDeadlinePassesTheFrameThrough() throws {
        // The deadline is what ends the hang: short enough to keep the test quick, far above
        // the microseconds a 64x48 frame takes, so only the hang runs into it.
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=500ms)=fault=hang", reference: "faulty_video")
    }

    func testExitInProcessPassesTheFrameThrough() throws {
        try checkFaultOnFifthFrame("faulty_video@isolate(deadline=10000ms)=fault=exit", reference: "faulty_video")
    }

    func testWrongOutputSizeIsAProtocolViolation() throws {
        try checkFaultOnFifthFrame("faulty_oop@isolate(deadline=10000ms)", reference: "faulty_oop=at=1000000")
    }
}

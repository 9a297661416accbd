import Foundation
import RawFX
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Isolation groups (`@isolate(group=NAME)`, docs/isolation.md): consecutive stages in one
/// helper process. The oracle for every frame: the group's output is the same chain's output
/// in process when the helper ran it, or the group's input when the group counted the frame
/// as passed through; never anything else, and never a frame lost or added.
final class IsolationGroupTests: XCTestCase {
    /// The built plugins and the faulty fixture (Fixtures/faulty_plugin.c) in one registry.
    func registry() throws -> PluginRegistry {
        let path = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/faulty_plugin.c"),
                                      into: temporaryDirectory(), name: "libfaulty.so")
        let registry = PluginRegistry.empty(environment: [:])
        for name in ["watermark", "scale", "mirror"] {
            guard let library = builtPlugins.libraries.first(where: { $0.filters.contains { $0.id == name } }) else {
                throw XCTSkip("\(name) is not built next to the tests")
            }
            if !registry.libraries.contains(where: { $0.path == library.path }) { try registry.load(path: library.path) }
        }
        try registry.load(path: path)
        return registry
    }

    let image = repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path

    /// `text`'s stages, each with `option` after its name (`@isolate(group=g)`).
    func isolated(_ text: String, _ option: String) throws -> String {
        var specs = try FilterSpec.parseChain(text)
        for index in specs.indices { specs[index].isolation = try FilterSpec.parseChain("a@" + option)[0].isolation }
        return FilterSpec.chainText(specs)
    }

    func bytes(_ frame: VideoFrame) -> [[UInt8]] { (0..<3).map { planeBytes(frame, $0) } }

    func waitUntilUp(_ instance: FilterInstance, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(60)
        while instance.isolation?.isUp != true, Date() < deadline { usleep(5000) }
        XCTAssertEqual(instance.isolation?.isUp, true, "the helper came back", file: file, line: line)
    }

    /// Three stages (in place, out of place with a new size, in place) in one helper: byte for
    /// byte the in-process chain, one copy in per frame, every stage in the metrics; a
    /// parameter, a RECONFIGURE parameter and a bypass reach the right stage in the helper.
    func testAGroupOfThreeWritesWhatTheInProcessChainWrites() throws {
        let registry = try registry()
        let text = "watermark=image='\(image)':x=10:y=8:opacity=0.6,scale=width=96:height=54,faulty_video=delta=3"
        let chain = try VideoChain(try isolated(text, "isolate(group=fx,deadline=10000ms)"), registry: registry)
        let reference = try VideoChain(text, registry: registry)
        var frames = 0
        func compare(_ seed: Int, _ what: String) throws -> [[UInt8]] {
            let input = patternBuffer(width: 160, height: 90, extraStride: 4, seed: seed)
            let output = try chain.process(input.frame)
            XCTAssertEqual(bytes(output), bytes(try reference.process(input.frame)), "\(what), frame \(seed)")
            frames += 1
            return bytes(output)
        }
        for seed in 1...3 { _ = try compare(seed, "as in process") }
        let pids = chain.filters.map { $0.isolation?.pid }
        XCTAssertEqual(Set(pids).count, 1, "one helper for the group: \(pids)")
        XCTAssertEqual(chain.filters.map { $0.isolation?.groupMember }, [0, 1, 2])
        XCTAssertEqual(chain.filters.map { $0.isolation?.groupSize }, [3, 3, 3])
        XCTAssertEqual(chain.filters[0].isolation?.copiedIn, 3, "the frame crosses once per group")

        // A parameter of the third stage, in the helper.
        let before = try compare(4, "before the change")
        try chain.control.setParameter("faulty_video.delta", "40")
        try reference.control.setParameter("faulty_video.delta", "40")
        XCTAssertNotEqual(try compare(4, "after setParameter"), before, "the change reached the stage")
        // A RECONFIGURE parameter of the second: the group negotiates again in its helper.
        try chain.control.setParameter("scale.width", "80")
        try reference.control.setParameter("scale.width", "80")
        XCTAssertEqual(chain.filters[0].isolation?.pid, pids[0], "the same helper")
        _ = try compare(5, "after a new width")
        XCTAssertEqual(chain.outputFormat?.width, 80)
        // A bypass of the third, in the helper.
        try chain.control.setBypass("faulty_video", true)
        try reference.control.setBypass("faulty_video", true)
        _ = try compare(6, "bypassed")
        try chain.control.setBypass("faulty_video", false)
        try reference.control.setBypass("faulty_video", false)
        _ = try compare(7, "bypass off")
        XCTAssertThrowsChainError(try chain.control.setBypass("scale", true)) { XCTAssertTrue("\($0)".contains("cannot bypass scale"), "\($0)") }

        let metrics = chain.control.metrics
        XCTAssertEqual(metrics.map(\.frames), [frames, frames, frames - 1].map(UInt64.init))
        XCTAssertEqual(metrics[2].bypassed, 1)
        XCTAssertEqual(metrics.map { $0.isolation?.faults }, [0, 0, 0])
        XCTAssertEqual(metrics[0].isolation?.passthrough, 0)
    }

    /// The host side allocates nothing per frame for a group (its helper neither: it reuses its frames).
    func testZeroAllocationsPerFrameForAGroup() throws {
        let registry = try registry()
        let chain = try VideoChain("faulty_video@isolate(group=g,deadline=10000ms),faulty_oop@isolate(group=g,deadline=10000ms)=at=1000000,faulty_video@isolate(group=g,deadline=10000ms)", registry: registry)
        let buffer = patternBuffer(width: 64, height: 36, extraStride: 3)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<200 { _ = try chain.process(buffer.frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        XCTAssertEqual(chain.filters[0].isolation?.passthrough, 0, "every frame crossed to the helper")
    }

    /// Behind an out-of-place stage in process, the frame is copied into the group's shared
    /// memory once, as for a stage alone (the upstream stage writes into the chain's memory,
    /// which the helper cannot touch), and comes out as the in-process chain makes it.
    func testFrameBehindAnOutOfPlaceStageIsCopiedIntoTheGroupOnce() throws {
        let registry = try registry()
        let chain = try VideoChain("faulty_oop=at=1000000:delta=3,faulty_video@isolate(group=g,deadline=10000ms)=delta=5,mirror@isolate(group=g,deadline=10000ms)", registry: registry)
        let reference = try VideoChain("faulty_oop=at=1000000:delta=3,faulty_video=delta=5,mirror", registry: registry)
        for seed in 1...4 {
            let input = patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed)
            let expected = try reference.process(input.frame)
            XCTAssertEqual(bytes(try chain.process(input.frame)), bytes(expected), "frame \(seed)")
        }
        XCTAssertEqual(chain.filters[1].isolation?.copiedIn, 4, "one copy per frame into the group's memory")
        XCTAssertEqual(chain.filters[1].isolation?.passthrough, 0)
    }

    /// A segfault on the 5th frame in the group's 2nd stage: that frame passes through the
    /// whole group (the group's input), the group comes back with the parameters set so far,
    /// and the fault is counted on the group and on the stage.
    func testSegfaultInTheSecondStagePassesTheFrameThroughTheWholeGroup() throws {
        try checkFaultInTheSecondStage("segv", deadline: "10000ms", logged: "killed by signal 11 (Segmentation fault) during a frame in stage 2 of 3")
    }

    /// The same for a hang past the group's deadline: the stage still running is the one named.
    func testHangInTheSecondStagePassesTheFrameThroughTheWholeGroup() throws {
        try checkFaultInTheSecondStage("hang", deadline: "2000ms", logged: "did not finish a frame within the 2000.00 ms deadline in stage 2 of 3")
    }

    func checkFaultInTheSecondStage(_ fault: String, deadline: String, logged: String) throws {
        let log = LogCapture()
        defer { log.stop() }
        let registry = try registry()
        let text = "mirror,faulty_video=fault=\(fault):delta=5,watermark=image='\(image)':opacity=0.5"
        let chain = try VideoChain(try isolated(text, "isolate(group=g,deadline=\(deadline))"), registry: registry)
        let reference = try VideoChain("mirror,faulty_video=delta=5,watermark=image='\(image)':opacity=0.5", registry: registry)
        enum Outcome { case processed, passedThrough }
        var outcomes: [Outcome] = []
        func run(_ seed: Int) throws {
            let input = patternBuffer(width: 64, height: 48, extraStride: 8, seed: seed)
            var frame = input.frame
            frame.timestampMicroseconds = Int64(seed) * 33_333
            let inputBytes = bytes(frame)
            let passed = chain.filters[0].isolation!.passthrough
            let output = try chain.process(frame)
            XCTAssertEqual(output.timestampMicroseconds, Int64(seed) * 33_333, "frame \(seed) keeps its time")
            if chain.filters[0].isolation!.passthrough == passed + 1 {
                XCTAssertEqual(bytes(output), inputBytes, "frame \(seed): the group's input")
                outcomes.append(.passedThrough)
            } else {
                XCTAssertEqual(bytes(output), bytes(try reference.process(input.frame)), "frame \(seed) as in process")
                outcomes.append(.processed)
            }
        }
        for seed in 1...2 { try run(seed) }
        try chain.control.setParameter("faulty_video.delta", "23")
        try reference.control.setParameter("faulty_video.delta", "23")
        for seed in 3...5 { try run(seed) }
        XCTAssertEqual(outcomes, [.processed, .processed, .processed, .processed, .passedThrough])
        for seed in 6...7 { try run(seed) }
        waitUntilUp(chain.filters[0])
        try run(8)
        XCTAssertEqual(outcomes.last, .processed, "the restarted helper runs the group, with delta=23 replayed")
        XCTAssertEqual(outcomes.count, 8, "every frame came out")
        let metrics = chain.control.metrics
        XCTAssertEqual(metrics.map { $0.isolation?.faults }, [1, 1, 1], "the group's count, seen from every stage")
        XCTAssertEqual(metrics.map { $0.isolation?.stageFaults }, [0, 1, 0], "the stage it happened in")
        XCTAssertGreaterThanOrEqual(metrics[0].isolation?.restarts ?? 0, 1)
        XCTAssertEqual(metrics[0].isolation?.passthrough, UInt64(outcomes.filter { $0 == .passedThrough }.count))
        RawFXLog.sync()
        let lines = log.records.filter { $0.severity == .warning && $0.message.contains("isolated helper") && $0.source == "faulty_video" }
        XCTAssertEqual(lines.count, 1, "\(log.records.map(\.message))")
        XCTAssertTrue(lines.first?.message.contains(logged) == true, "\(lines)")
    }

    /// A group that changes the format cannot pass its input on: a fault gives a black frame
    /// of the group's output format, as a format-changing stage alone does.
    func testFaultInAGroupThatScalesGivesABlackFrameOfItsOutputFormat() throws {
        let registry = try registry()
        let chain = try VideoChain("scale@isolate(group=g,deadline=10000ms)=width=96:height=54,faulty_video@isolate(group=g,deadline=10000ms)=fault=segv", registry: registry)
        let reference = try VideoChain("scale=width=96:height=54,faulty_video", registry: registry)
        for seed in 1...5 {
            let input = patternBuffer(width: 160, height: 90, extraStride: 4, seed: seed)
            let output = try chain.process(input.frame)
            XCTAssertEqual(output.format.width, 96)
            XCTAssertEqual(output.format.height, 54)
            if seed < 5 {
                XCTAssertEqual(bytes(output), bytes(try reference.process(input.frame)), "frame \(seed) as in process")
            } else {
                XCTAssertEqual(chain.filters[1].isolation?.stageFaults, 1)
                XCTAssertEqual(Set(planeBytes(output, 0)), [16], "black luma")
                XCTAssertEqual(Set(planeBytes(output, 1) + planeBytes(output, 2)), [128], "neutral chroma")
            }
        }
    }

    /// An error a grouped stage returns names that stage, not the group's first.
    func testARefusalInAGroupNamesTheStage() throws {
        let registry = try registry()
        let missing = temporaryDirectory().appendingPathComponent("missing.png").path
        let chain = try VideoChain("faulty_video@isolate(group=g,deadline=10000ms),watermark@isolate(group=g,deadline=10000ms)=image='\(missing)'", registry: registry)
        let alone = try VideoChain("faulty_video,watermark=image='\(missing)'", registry: registry)
        let frame = patternBuffer(width: 64, height: 48, seed: 1).frame
        var expected: ChainError?
        XCTAssertThrowsChainError(try alone.process(frame)) { expected = $0 }
        XCTAssertThrowsChainError(try chain.process(frame)) { error in
            guard case .refused(let filter, _, let message)? = Optional(error), case .refused(let aloneFilter, _, let aloneMessage)? = expected else {
                return XCTFail("\(error), in process \(String(describing: expected))")
            }
            XCTAssertEqual(filter, aloneFilter, "the stage that refused: \(error)")
            XCTAssertTrue(message.hasSuffix(aloneMessage), "the filter's own words, after the stage's place: \(message)")
            XCTAssertTrue(message.contains("in stage 2 of 2 of the isolation group"), message)
        }
        XCTAssertEqual(chain.filters[0].isolation?.faults, 0, "a refusal is no fault")
    }

    func testGroupSyntax() throws {
        let specs = try FilterSpec.parseChain("a@isolate(group=fx),b@isolate(group=fx)=x=1,c@isolate(group=two,deadline=8ms,seccomp=strict),d")
        XCTAssertEqual(specs.map { $0.isolation?.group }, ["fx", "fx", "two", nil])
        XCTAssertEqual(FilterSpec.chainText(specs), "a@isolate(group=fx),b@isolate(group=fx)=x=1,c@isolate(group=two,deadline=8ms,seccomp=strict),d")
        XCTAssertEqual(try FilterSpec.parseChain(FilterSpec.chainText(specs)), specs, "description, parse, the same specs")
        XCTAssertEqual(try FilterSpec.checkIsolationGroups(specs), [0..<2, 2..<3])
        let seed = try String(contentsOf: repositoryRoot.appendingPathComponent("Fuzz/Corpus/chain/isolate-group.txt"), encoding: .utf8)
        let seeded = try FilterSpec.parseChain(seed)
        XCTAssertEqual(try FilterSpec.parseChain(FilterSpec.chainText(seeded)), seeded, "the fuzz seed's round trip")
        XCTAssertEqual(seeded[1].isolation, StageIsolation(deadlineMicroseconds: 8000, group: "fx"))
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(group=fx),b,c@isolate(group=fx)")) {
            XCTAssertTrue("\($0)".contains("'c' (stage 2) is in isolation group 'fx'"), "\($0)")
            XCTAssertTrue("\($0)".contains("expected the stages of a group to be consecutive"), "\($0)")
        }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(group=Fx)")) { XCTAssertTrue("\($0)".contains("expected group=NAME"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(group=)")) { XCTAssertTrue("\($0)".contains("expected group=NAME"), "\($0)") }
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a@isolate(group=g,deadline=8ms),b@isolate(group=g)")) {
            XCTAssertTrue("\($0)".contains("expected the same options on every stage of a group"), "\($0)")
        }
        let many = (0...StageIsolation.groupLimit).map { _ in "a@isolate(group=g)" }.joined(separator: ",")
        XCTAssertThrowsChainError(try FilterSpec.parseChain(many)) { XCTAssertTrue("\($0)".contains("at most"), "\($0)") }
    }

    func testAudioStagesAreNotGrouped() throws {
        let registry = try registry()
        XCTAssertThrowsChainError(try AudioChain("faulty_audio@isolate(group=g)", registry: registry)) {
            XCTAssertTrue("\($0)".contains("isolation groups"), "\($0)")
        }
    }
}

/// `rawfx run --isolate=chain`: the whole video chain in one helper.
final class IsolationGroupRunTests: XCTestCase, RawfxCommandTesting {
    func testRunIsolateChainWritesWhatTheInProcessRunWrites() throws {
        try requireRawfx()
        let plugins = try faultyPluginDirectory()
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 6)
        let grouped = dir.appendingPathComponent("grouped.y4m").path, inProcess = dir.appendingPathComponent("plain.y4m").path
        for (flags, output) in [(["--isolate=chain"], grouped), ([], inProcess)] {
            let outcome = try execute(rawfxBinary, ["run"] + flags + ["--plugin-path", plugins.path, "--vf", "faulty_video=delta=5,faulty_oop=at=1000000:delta=2,faulty_video=delta=1", input, output])
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
        }
        let a = try Data(contentsOf: URL(fileURLWithPath: grouped)), b = try Data(contentsOf: URL(fileURLWithPath: inProcess))
        XCTAssertTrue(a == b, "the grouped run's output differs from the in-process run's")
        XCTAssertNotEqual(b, try Data(contentsOf: URL(fileURLWithPath: input)), "the filters changed the frames")
    }

    func testRunIsolateChainWritesEveryFrameAndWarnsAboutTheFaults() throws {
        try requireRawfx()
        let plugins = try faultyPluginDirectory()
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 12)
        let output = dir.appendingPathComponent("out.y4m").path
        let outcome = try rawfx("run", "--isolate=chain", "--plugin-path", plugins.path, "--vf", "faulty_oop=at=1000000:delta=2,faulty_video=fault=segv", input, output)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let warning = outcome.stderrLines.first { $0.contains("warning: filter 'faulty_video' (stage 1)") }
        XCTAssertNotNil(warning, outcome.stderr)
        XCTAssertNotNil(warning?.range(of: #"faulted [1-9][0-9]* times? in its helper process \(isolation group of 2 stages"#, options: .regularExpression), outcome.stderr)
        XCTAssertFalse(outcome.stderr.contains("warning: filter 'faulty_oop'"), "the stage that did not fault is not blamed: \(outcome.stderr)")
        // Every frame is there: the input itself (passed through the whole group) or both
        // filters' work (+2, then +10 on luma).
        let inReader = try Y4MReader(MediaInput(path: input))
        let outReader = try Y4MReader(MediaInput(path: output))
        var frames = 0, passed = 0
        while let inFrame = try inReader.readFrame() {
            let source = (0..<3).map { planeBytes(inFrame, $0) }
            guard let outFrame = try outReader.readFrame() else { return XCTFail("frame \(frames) is missing") }
            let result = (0..<3).map { planeBytes(outFrame, $0) }
            XCTAssertEqual(result[1...], source[1...], "frame \(frames): chroma untouched")
            if result[0] == source[0] { passed += 1 } else { XCTAssertEqual(result[0], source[0].map { $0 &+ 12 }, "frame \(frames)") }
            frames += 1
        }
        XCTAssertNil(try outReader.readFrame(), "no frame added")
        XCTAssertEqual(frames, 12)
        XCTAssertGreaterThanOrEqual(passed, 1, "the 5th frame passed through")
    }

    func testRunIsolateChainRefusesAudio() throws {
        try requireRawfx()
        let dir = temporaryDirectory()
        let (input, _) = try makeWAV(dir)
        let outcome = try rawfx("run", "--isolate=chain", "--af", "gain", input, dir.appendingPathComponent("out.wav").path)
        XCTAssertNotEqual(outcome.status, 0)
        XCTAssertTrue(outcome.stderr.contains("--isolate=chain runs a video chain in one helper"), outcome.stderr)
    }
}

import CRawFXEmbed
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXEmbed
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// librawfx, the C API for embedding (rawfx_embed.h): the header compiles as C99 and C++11
/// with every warning an error; docs/examples/embed.c, built with cc against the header and
/// the built library, writes byte for byte what `rawfx run` writes; bad arguments come back as
/// a code and a message; the process calls allocate nothing per frame.
final class EmbedTests: XCTestCase, RawfxCommandTesting {
    static let includes = ["Sources/CRawFX/include", "Sources/CRawFXEmbed/include"]
        .map { repositoryRoot.appendingPathComponent($0).path }
    static let warnings = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
    /// The built library: libRawFXEmbed.so beside the test bundle (installed as librawfx.so).
    static let library = rawfxBinary.deletingLastPathComponent().appendingPathComponent("libRawFXEmbed.so")
    static let watermark = repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path
    static let videoChain = "watermark=image=\(watermark):x=200:y=120:opacity=0.6,"
        + "scale=width=320:height=180,rotate=angle=90"
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Whether two frames hold the same picture (a short message instead of a megabyte of bytes).
    private func assertSamePicture(_ a: VideoFrame, _ b: VideoFrame, _ what: String, line: UInt = #line) {
        XCTAssertEqual([a.width, a.height], [b.width, b.height], what, line: line)
        for p in 0..<3 where planeBytes(a, p) != planeBytes(b, p) {
            let differing = zip(planeBytes(a, p), planeBytes(b, p)).filter { $0 != $1 }.count
            XCTFail("\(what): plane \(p) differs in \(differing) samples", line: line)
        }
    }

    // MARK: The header

    func testHeaderCompilesAsC99AndCPlusPlus11WithEveryWarning() throws {
        let unit = directory.appendingPathComponent("unit.c")
        try "#include \"rawfx_embed.h\"\n#include \"rawfx.h\"\nint rawfx_unit_is_not_empty;\n"
            .write(to: unit, atomically: true, encoding: .utf8)
        for (compiler, language) in [("cc", ["-std=c99"]), ("c++", ["-std=c++11", "-x", "c++"])] {
            XCTAssertNoThrow(try runCompiler(compiler, language + Self.warnings + ["-fsyntax-only"]
                                                + Self.includes.flatMap { ["-I", $0] } + [unit.path]), language[0])
        }
        let checks = repositoryRoot.appendingPathComponent("Sources/CRawFXEmbed/rawfx_embed_checks.c").path
        XCTAssertNoThrow(try runCompiler("c++", ["-std=c++11", "-x", "c++"] + Self.warnings + ["-fsyntax-only"]
                                            + Self.includes.flatMap { ["-I", $0] } + [checks]))
    }

    // MARK: The C example against rawfx run

    /// Builds docs/examples/embed.c with cc, as a user would, against the built library.
    private func buildExample() throws -> URL {
        // A sanitized library needs the sanitizer runtime loaded first, which a plain C
        // program does not have; the normal run of the suite covers the example.
        guard rawfx_built_with_sanitizer() == 0 else { throw XCTSkip("the C example is not built against a sanitized librawfx") }
        // `swift build` and `swift test` build every product: a missing library is a build fault.
        guard FileManager.default.fileExists(atPath: Self.library.path) else {
            XCTFail("\(Self.library.path) is not built; run `swift build`")
            throw CocoaError(.fileNoSuchFile)
        }
        let output = directory.appendingPathComponent("embed")
        let libraryDirectory = Self.library.deletingLastPathComponent().path
        try runCompiler("cc", ["-std=c99"] + Self.warnings + Self.includes.flatMap { ["-I", $0] }
                            + [repositoryRoot.appendingPathComponent("docs/examples/embed.c").path,
                               "-o", output.path, "-L", libraryDirectory, "-lRawFXEmbed",
                               "-Wl,-rpath," + libraryDirectory])
        return output
    }

    private func makeInputs() throws { try makeMediaInputs(in: directory) }

    private func assertSameFile(_ a: String, _ b: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let left = try Data(contentsOf: URL(fileURLWithPath: a)), right = try Data(contentsOf: URL(fileURLWithPath: b))
        XCTAssertGreaterThan(left.count, 1000, "\(a) is almost empty", file: file, line: line)
        XCTAssertTrue(left == right, "\(a) (\(left.count) bytes) differs from \(b) (\(right.count) bytes)", file: file, line: line)
    }

    func testCExampleWritesWhatRawfxRunWrites() throws {
        try makeInputs()
        let example = try buildExample()
        let environment: [String: String?] = [PluginRegistry.environmentVariable: nil]

        let reference = try rawfx("run", "--vf", Self.videoChain, path("in.y4m"), path("ref.y4m"))
        XCTAssertEqual(reference.status, 0, reference.stderr)
        let video = try runProgram(example, ["--vf", Self.videoChain, path("in.y4m"), path("out.y4m")], environment: environment)
        XCTAssertEqual(video.status, 0, video.stderr)
        try assertSameFile(path("out.y4m"), path("ref.y4m"))
        XCTAssertTrue(video.stderr.contains("12 frames"), video.stderr)
        XCTAssertTrue(video.stderr.contains("\"name\":\"rotate\",\"frames\":12"), video.stderr)

        let audioReference = try rawfx("run", "--af", "denoise=level=-30", path("in.wav"), path("ref.wav"))
        XCTAssertEqual(audioReference.status, 0, audioReference.stderr)
        // 100 ms chunks as rawfx reads, and 37-frame chunks: the chain re-blocks either way.
        for chunk in ["0", "37"] {
            let audio = try runProgram(example, ["--chunk", chunk, "--af", "denoise=level=-30", path("in.wav"), path("out.wav")],
                                       environment: environment)
            XCTAssertEqual(audio.status, 0, audio.stderr)
            try assertSameFile(path("out.wav"), path("ref.wav"))
            // 1.5 s of 10 ms blocks, plus the drained tail.
            XCTAssertTrue(audio.stderr.contains("denoise: 151 blocks"), audio.stderr)
        }
    }

    func testCExampleReportsABadChainWithTheEnginesMessage() throws {
        try makeInputs()
        let example = try buildExample()
        let outcome = try runProgram(example, ["--vf", "scale=width=abc", path("in.y4m"), path("out.y4m")],
                                     environment: [PluginRegistry.environmentVariable: nil])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("rawfx_video_chain_create: RAWFX_E_CHAIN: scale: invalid value 'abc' for width"),
                      outcome.stderr)
    }

    // MARK: The API in process (the test binary links RawFXEmbed)

    private func openRegistry() throws -> OpaquePointer {
        var registry: OpaquePointer?
        XCTAssertEqual(rawfx_registry_open(nil, &registry), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        return try XCTUnwrap(registry)
    }

    func testRegistryFindsTheBuiltPluginsAndNamesFailures() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        let ids = (0..<rawfx_registry_filter_count(registry)).map { String(cString: rawfx_registry_filter_id(registry, $0)) }
        for id in ["denoise", "rotate", "scale", "watermark"] { XCTAssertTrue(ids.contains(id), "\(id) in \(ids)") }
        XCTAssertNil(rawfx_registry_filter_id(registry, ids.count))

        // A junk .so on an explicit path is listed with its reason; a missing entry is an error.
        let junk = path("junk.so")
        try Data("not an ELF".utf8).write(to: URL(fileURLWithPath: junk))
        let entries = [strdup(junk), strdup(path("missing"))]
        defer { entries.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = entries.map { UnsafePointer($0) }
        var options = rawfx_registry_options()
        options.struct_size = UInt32(MemoryLayout<rawfx_registry_options>.size)
        options.search_path_count = 1
        options.skip_default_directory = 1
        var second: OpaquePointer?
        pointers.withUnsafeMutableBufferPointer { options.search_path = UnsafePointer($0.baseAddress) }
        XCTAssertEqual(rawfx_registry_open(&options, &second), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_registry_failure_count(second), 1)
        XCTAssertTrue(String(cString: rawfx_registry_failure(second, 0)).hasPrefix("\(junk): not a loadable shared object"))
        XCTAssertEqual(rawfx_registry_filter_count(second), 0)
        rawfx_registry_close(second)

        options.search_path_count = 2
        pointers.withUnsafeMutableBufferPointer { options.search_path = UnsafePointer($0.baseAddress) }
        XCTAssertEqual(rawfx_registry_open(&options, &second), rawfx_result(RAWFX_E_NOT_FOUND))
        XCTAssertNil(second)
        XCTAssertEqual(String(cString: rawfx_last_error()), "\(path("missing")): no such plugin file or directory")
    }

    /// rawfx_set_thread_count sets the engine's own pool (what plugins see through
    /// rawfx.thread-pool/1), and refuses 0 and counts above 64 with a message, changing nothing.
    func testThreadCountSetsTheEnginePool() throws {
        let before = RawFXThreadPool.threadCount
        defer { RawFXThreadPool.threadCount = before }
        XCTAssertEqual(rawfx_set_thread_count(2), rawfx_result(RAWFX_OK))
        XCTAssertEqual(RawFXThreadPool.threadCount, 2)
        XCTAssertEqual(rawfx_thread_count(), 2)
        XCTAssertEqual(rawfx_set_thread_count(64), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_thread_count(), 64)
        for refused: UInt32 in [0, 65, 1000, .max] {
            XCTAssertEqual(rawfx_set_thread_count(refused), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
            XCTAssertEqual(String(cString: rawfx_last_error()),
                           "rawfx_set_thread_count: count \(refused) is not a thread count: expected 1 (no pool) to 64, the calling thread included")
        }
        XCTAssertEqual(rawfx_thread_count(), 64, "a refused call changes nothing")
        XCTAssertEqual(rawfx_set_thread_count(1), rawfx_result(RAWFX_OK))
        XCTAssertEqual(RawFXThreadPool.threadCount, 1)
    }

    /// rawfx_set_log_callback: lines from the level up reach the C function with their level,
    /// source and text, in order, on the logging thread; NULL hands them back to swift-log.
    func testLogLinesReachTheCallbackFromItsLevelUp() throws {
        struct Line: Equatable { var level: UInt32; var source: String; var message: String }
        let received = Locked<[Line]>([])
        let context = Unmanaged.passRetained(received)
        defer {
            XCTAssertEqual(rawfx_set_log_callback(nil, nil, UInt32(RAWFX_LOG_WARNING)), rawfx_result(RAWFX_OK))
            context.release()
        }
        XCTAssertEqual(rawfx_set_log_callback({ userData, level, source, message in
            let lines = Unmanaged<Locked<[Line]>>.fromOpaque(userData!).takeUnretainedValue()
            let line = Line(level: level, source: String(cString: source!), message: String(cString: message!))
            lines.withLock { $0.append(line) }
        }, context.toOpaque(), UInt32(RAWFX_LOG_INFO)), rawfx_result(RAWFX_OK))
        RawFXLog.log(.debug, source: "embed-test", "below the level")
        RawFXLog.log(.info, source: "embed-test", "first")
        RawFXLog.log(.error, source: "embed-test", "second")
        RawFXLog.sync()
        XCTAssertEqual(received.withLock { $0 }.filter { $0.source == "embed-test" },
                       [Line(level: UInt32(RAWFX_LOG_INFO), source: "embed-test", message: "first"),
                        Line(level: UInt32(RAWFX_LOG_ERROR), source: "embed-test", message: "second")])

        XCTAssertEqual(rawfx_set_log_callback(nil, nil, 7), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("min_level 7 is not a log level"))

        XCTAssertEqual(rawfx_set_log_callback(nil, nil, UInt32(RAWFX_LOG_WARNING)), rawfx_result(RAWFX_OK))
        RawFXLog.log(.error, source: "embed-test", "after")
        RawFXLog.sync()
        XCTAssertFalse(received.withLock { $0 }.contains { $0.message == "after" })
    }

    /// The engine's trust rule through the options: a group-writable plugin is refused with
    /// the rule it breaks, and loaded with allow_untrusted.
    func testTrustRuleAndItsOverride() throws {
        let plugin = path("basics.so")
        try FileManager.default.copyItem(atPath: rawfxBinary.deletingLastPathComponent().appendingPathComponent("libRawFXBasics.so").path,
                                         toPath: plugin)
        XCTAssertEqual(chmod(directory.path, 0o755), 0)
        XCTAssertEqual(chmod(plugin, 0o664), 0)
        let entry = strdup(plugin)
        defer { free(entry) }
        var pointers: [UnsafePointer<CChar>?] = [UnsafePointer(entry)]
        for allowUntrusted in [Int32(0), 1] {
            var options = rawfx_registry_options()
            options.struct_size = UInt32(MemoryLayout<rawfx_registry_options>.size)
            options.search_path_count = 1
            options.skip_default_directory = 1
            options.allow_untrusted = allowUntrusted
            var registry: OpaquePointer?
            pointers.withUnsafeMutableBufferPointer { options.search_path = UnsafePointer($0.baseAddress) }
            XCTAssertEqual(rawfx_registry_open(&options, &registry), rawfx_result(RAWFX_OK))
            defer { rawfx_registry_close(registry) }
            if allowUntrusted == 0 {
                XCTAssertEqual(rawfx_registry_filter_count(registry), 0)
                XCTAssertEqual(rawfx_registry_failure_count(registry), 1)
                let failure = String(cString: rawfx_registry_failure(registry, 0))
                XCTAssertTrue(failure.contains("not loaded: file \(plugin) is writable by its group"), failure)
            } else {
                XCTAssertEqual(rawfx_registry_failure_count(registry), 0)
                let ids = (0..<rawfx_registry_filter_count(registry)).map { String(cString: rawfx_registry_filter_id(registry, $0)) }
                XCTAssertEqual(ids, ["copy", "gain", "null"])
            }
        }
    }

    func testBadArgumentsAreCodesWithMessagesNeverCrashes() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var chain: OpaquePointer?
        func expect(_ result: rawfx_result, _ code: Int, _ message: String, line: UInt = #line) {
            XCTAssertEqual(result, rawfx_result(code), line: line)
            XCTAssertEqual(String(cString: rawfx_result_name(result)), String(cString: rawfx_result_name(rawfx_result(code))), line: line)
            XCTAssertTrue(String(cString: rawfx_last_error()).contains(message), "\(String(cString: rawfx_last_error()))", line: line)
        }
        expect(rawfx_video_chain_create(registry, "nope", &chain), RAWFX_E_NOT_FOUND, "unknown filter 'nope'; known filters:")
        expect(rawfx_video_chain_create(registry, "denoise", &chain), RAWFX_E_CHAIN, "denoise is a audio filter and cannot go in a video chain")
        expect(rawfx_video_chain_create(nil, "scale", &chain), RAWFX_E_INVALID_ARGUMENT, "registry is NULL")
        expect(rawfx_video_chain_create(registry, nil, &chain), RAWFX_E_INVALID_ARGUMENT, "chain_text is NULL")
        XCTAssertEqual(rawfx_video_chain_create(registry, "scale=width=32:height=16", &chain), rawfx_result(RAWFX_OK))
        defer { rawfx_video_chain_destroy(chain) }

        var format = rawfx_video_format(struct_size: 4, width: 64, height: 32, pixel_format: rawfx_pixel_format(RAWFX_PIXEL_I420),
                                        color_range: 0, rotation: 0)
        expect(rawfx_video_chain_negotiate(chain, &format, nil), RAWFX_E_INVALID_ARGUMENT,
               "rawfx_video_format.struct_size is 4; expected sizeof(rawfx_video_format)")
        format.struct_size = 0xFFFF_FFFF
        expect(rawfx_video_chain_negotiate(chain, &format, nil), RAWFX_E_INVALID_ARGUMENT,
               "rawfx_video_format.struct_size is 4294967295; this library (API 1.\(RAWFX_EMBED_VERSION_MINOR)) knows sizeof(rawfx_video_format) = 24")
        format.struct_size = UInt32(MemoryLayout<rawfx_video_format>.size)
        format.width = 0
        expect(rawfx_video_chain_negotiate(chain, &format, nil), RAWFX_E_INVALID_ARGUMENT, "input is 0x32; expected a width and height from 1 to 16384")
        format.width = 64
        format.rotation = 45
        expect(rawfx_video_chain_negotiate(chain, &format, nil), RAWFX_E_INVALID_ARGUMENT, "input.rotation is 45; expected 0, 90, 180 or 270")
        format.rotation = 0

        let buffer = VideoBuffer(format: VideoFormat(width: 64, height: 32))
        defer { withExtendedLifetime(buffer) {} }  // C holds its planes, which Swift cannot see
        var frame = buffer.frame.raw
        frame.strides.1 = 16
        var output = rawfx_video_frame()
        expect(rawfx_video_chain_process(chain, &frame, &output), RAWFX_E_INVALID_ARGUMENT,
               "input.strides[1] (U) is 16; expected the plane's width, 32, to 65536 bytes")
        frame.strides.1 = 1 << 20  // past any canvas: refused, never used to address the plane
        expect(rawfx_video_chain_process(chain, &frame, &output), RAWFX_E_INVALID_ARGUMENT,
               "input.strides[1] (U) is 1048576; expected the plane's width, 32, to 65536 bytes")
        frame = buffer.frame.raw
        frame.struct_size = 4096  // larger than any rawfx_video_frame this library knows
        expect(rawfx_video_chain_process(chain, &frame, &output), RAWFX_E_INVALID_ARGUMENT,
               "rawfx_video_frame.struct_size is 4096; this library (API 1.\(RAWFX_EMBED_VERSION_MINOR)) knows sizeof(rawfx_video_frame) = \(MemoryLayout<rawfx_video_frame>.size)")
        frame = buffer.frame.raw
        frame.planes.2 = nil
        expect(rawfx_video_chain_process(chain, &frame, &output), RAWFX_E_INVALID_ARGUMENT, "input.planes[2] (V) is NULL")
        expect(rawfx_video_chain_process(nil, &frame, &output), RAWFX_E_INVALID_ARGUMENT, "chain is NULL")
        frame = buffer.frame.raw
        XCTAssertEqual(rawfx_video_chain_process(chain, &frame, &output), rawfx_result(RAWFX_OK))
        XCTAssertEqual([output.width, output.height], [32, 16])
        // Into the caller's planes: they must have the output's size.
        expect(rawfx_video_chain_process_into(chain, &frame, &frame), RAWFX_E_STATE,
               "the chain's output is 32x16; destination is 64x32")
        expect(rawfx_video_chain_set_parameter(chain, "scale.width", "-3"), RAWFX_E_CHAIN, "invalid value '-3' for width")
        expect(rawfx_video_chain_set_parameter(chain, "scale.nope", "1"), RAWFX_E_NOT_FOUND, "unknown parameter 'nope'")
        expect(rawfx_video_chain_set_bypass(chain, "scale", 1), RAWFX_E_CHAIN, "scale")
        var length = 0
        var small = [CChar](repeating: 0, count: 4)
        expect(rawfx_video_chain_metrics_json(chain, &small, small.count, &length), RAWFX_E_BUFFER_TOO_SMALL, "capacity is 4")
        XCTAssertGreaterThan(length, 4)

        var audio: OpaquePointer?
        XCTAssertEqual(rawfx_audio_chain_create(registry, "gain=db=6", &audio), rawfx_result(RAWFX_OK))
        defer { rawfx_audio_chain_destroy(audio) }
        var block = rawfx_audio_frame()
        block.struct_size = UInt32(MemoryLayout<rawfx_audio_frame>.size)
        block.frame_count = 10
        block.sample_rate = 48000
        block.channels = 1
        expect(rawfx_audio_chain_process(audio, &block, { _, _ in }, nil), RAWFX_E_INVALID_ARGUMENT,
               "input.samples is NULL with frame_count 10")
        block.channels = 0
        expect(rawfx_audio_chain_process(audio, &block, { _, _ in }, nil), RAWFX_E_INVALID_ARGUMENT, "input.channels is 0")
        expect(rawfx_audio_chain_process(audio, &block, nil, nil), RAWFX_E_INVALID_ARGUMENT, "emit is NULL")
    }

    /// Per frame and per chunk through the C API: no heap allocation once negotiated. The
    /// output matches the engine's chain run directly, and the metrics count every call.
    func testProcessCallsAllocateNothingPerFrame() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var chain: OpaquePointer?
        XCTAssertEqual(rawfx_video_chain_create(registry, "scale=width=320:height=180,rotate=angle=90", &chain), rawfx_result(RAWFX_OK))
        defer { rawfx_video_chain_destroy(chain) }
        let input = patternBuffer(width: 640, height: 360)
        var frame = input.frame.raw
        var output = rawfx_video_frame()
        var format = input.format.cValue
        var negotiated = rawfx_video_format()
        XCTAssertEqual(rawfx_video_chain_negotiate(chain, &format, &negotiated), rawfx_result(RAWFX_OK))
        XCTAssertEqual([negotiated.width, negotiated.height], [180, 320])
        let destination = VideoBuffer(format: VideoFormat(width: 180, height: 320), extraStride: 7)
        var target = destination.frame.raw
        // Warm-up: Swift instantiates generic metadata on first use.
        XCTAssertEqual(rawfx_video_chain_process(chain, &frame, &output), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_video_chain_process_into(chain, &frame, &target), rawfx_result(RAWFX_OK))
        let before = rawfx_thread_allocation_count()
        for _ in 0..<20 {
            _ = rawfx_video_chain_process(chain, &frame, &output)
            _ = rawfx_video_chain_process_into(chain, &frame, &target)
        }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "video allocations in 40 process calls")

        // The same picture as the engine's own chain gives.
        let reference = try VideoChain("scale=width=320:height=180,rotate=angle=90", registry: PluginRegistry())
        let expected = try reference.process(input.frame)
        withExtendedLifetime(reference) {
            assertSamePicture(VideoFrame(output), expected, "the view")
            assertSamePicture(destination.frame, expected, "the copy into the destination")
        }
        var stages = [rawfx_stage_metrics](repeating: rawfx_stage_metrics(), count: 2)
        var count = 0
        XCTAssertEqual(rawfx_video_chain_metrics(chain, &stages, 2, &count), rawfx_result(RAWFX_OK))
        XCTAssertEqual(count, 2)
        XCTAssertEqual(withUnsafeBytes(of: stages[1].name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }, "rotate")
        XCTAssertEqual(stages.map(\.frames), [42, 42])

        var audio: OpaquePointer?
        XCTAssertEqual(rawfx_audio_chain_create(registry, "denoise=level=-30", &audio), rawfx_result(RAWFX_OK))
        defer { rawfx_audio_chain_destroy(audio) }
        var audioFormat = AudioFormat(sampleRate: 48000, channels: 1).cValue
        XCTAssertEqual(rawfx_audio_chain_negotiate(audio, &audioFormat, nil), rawfx_result(RAWFX_OK))
        var samples = TestAudio.whiteNoise(count: 4800, rms: 3000, seed: 3)
        var emitted = 0
        let allocations: UInt64 = samples.withUnsafeMutableBufferPointer { buffer in
            var block = AudioBlock(samples: buffer.baseAddress!, frameCount: 333, format: AudioFormat(sampleRate: 48000, channels: 1)).raw
            _ = rawfx_audio_chain_process(audio, &block, { user, block in
                user!.assumingMemoryBound(to: Int.self).pointee += Int(block!.pointee.frame_count)
            }, &emitted)
            let before = rawfx_thread_allocation_count()
            for _ in 0..<12 {
                _ = rawfx_audio_chain_process(audio, &block, { user, block in
                    user!.assumingMemoryBound(to: Int.self).pointee += Int(block!.pointee.frame_count)
                }, &emitted)
            }
            return rawfx_thread_allocation_count() - before
        }
        XCTAssertEqual(allocations, 0, "audio allocations in 12 process calls")
        XCTAssertEqual(emitted, 13 * 333 / 480 * 480, "whole 10 ms blocks of 13 chunks of 333 frames")
    }

    /// rawfx_video_chain_process_into a tile of a larger canvas: the tile holds what process
    /// returns, nothing around it changes; a destination that partly overlaps the input and
    /// one of the wrong size are refused, the latter before the frame is consumed.
    func testProcessIntoATileOfACanvas() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var chain: OpaquePointer?
        XCTAssertEqual(rawfx_video_chain_create(registry, "scale=width=320:height=180", &chain), rawfx_result(RAWFX_OK))
        defer { rawfx_video_chain_destroy(chain) }
        let input = patternBuffer(width: 640, height: 360, seed: 5)
        var frame = input.frame.raw
        let canvas = patternBuffer(width: 1280, height: 720, seed: 6)
        let untouched = (0..<3).map { planeBytes(canvas.frame, $0) }
        // The tile at (200, 100): each plane's origin moved, the canvas's strides kept.
        var tile = canvas.frame.raw
        tile.width = 320
        tile.height = 180
        tile.planes.0 = tile.planes.0! + 100 * Int(tile.strides.0) + 200
        tile.planes.1 = tile.planes.1! + 50 * Int(tile.strides.1) + 100
        tile.planes.2 = tile.planes.2! + 50 * Int(tile.strides.2) + 100
        XCTAssertEqual(rawfx_video_chain_process_into(chain, &frame, &tile), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        var view = rawfx_video_frame()
        XCTAssertEqual(rawfx_video_chain_process(chain, &frame, &view), rawfx_result(RAWFX_OK))
        assertSamePicture(VideoFrame(tile), VideoFrame(view), "the tile")
        for p in 0..<3 {
            let after = planeBytes(canvas.frame, p)
            let (w, _) = canvas.frame.planeSize(p)
            let (x0, y0, tw, th) = p == 0 ? (200, 100, 320, 180) : (100, 50, 160, 90)
            let changedOutside = after.indices.filter { i in
                let (x, y) = (i % w, i / w)
                return after[i] != untouched[p][i] && !(x >= x0 && x < x0 + tw && y >= y0 && y < y0 + th)
            }
            XCTAssertEqual(changedOutside.count, 0, "plane \(p): samples outside the tile changed")
        }

        func frames() -> UInt64 {
            var stage = rawfx_stage_metrics()
            var count = 0
            _ = rawfx_video_chain_metrics(chain, &stage, 1, &count)
            return stage.frames
        }
        let consumed = frames()
        // Partly over the input: one row down.
        var overlapping = input.frame.raw
        overlapping.width = 320
        overlapping.height = 180
        overlapping.planes.0 = overlapping.planes.0! + Int(overlapping.strides.0)
        XCTAssertEqual(rawfx_video_chain_process_into(chain, &frame, &overlapping), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("destination plane 0 overlaps input plane 0"),
                      String(cString: rawfx_last_error()))
        // The wrong size: refused before the chain runs.
        var small = tile
        small.width = 318
        XCTAssertEqual(rawfx_video_chain_process_into(chain, &frame, &small), rawfx_result(RAWFX_E_STATE))
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("the chain's output is 320x180; destination is 318x180 (expected the output's size; nothing was processed)"),
                      String(cString: rawfx_last_error()))
        XCTAssertEqual(frames(), consumed, "a refused destination consumed a frame")
        withExtendedLifetime((input, canvas)) {}
    }

    /// rawfx_audio_chain_process_into writes what process emits, byte for byte, into the
    /// caller's buffer; rawfx_audio_chain_max_output is exact for a chain that keeps the rate
    /// and bounds a resampler's output; a buffer below it is refused before anything is
    /// consumed; no call allocates once negotiated.
    func testAudioProcessIntoTheCallersBuffer() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        let signal = TestAudio.whiteNoise(count: 9600, rms: 3000, seed: 8)
        let chunks = [333, 480, 1, 1000, 479, 1900, 7]
        for text in ["denoise=level=-30", "resample=rate=16000"] {
            var viaEmit: OpaquePointer?, viaInto: OpaquePointer?
            XCTAssertEqual(rawfx_audio_chain_create(registry, text, &viaEmit), rawfx_result(RAWFX_OK))
            XCTAssertEqual(rawfx_audio_chain_create(registry, text, &viaInto), rawfx_result(RAWFX_OK))
            defer { rawfx_audio_chain_destroy(viaEmit); rawfx_audio_chain_destroy(viaInto) }
            var format = AudioFormat(sampleRate: 48000, channels: 1).cValue
            XCTAssertEqual(rawfx_audio_chain_max_output(viaInto, 480), 0, "\(text): a bound before negotiation")
            XCTAssertEqual(rawfx_audio_chain_negotiate(viaEmit, &format, nil), rawfx_result(RAWFX_OK))
            XCTAssertEqual(rawfx_audio_chain_negotiate(viaInto, &format, nil), rawfx_result(RAWFX_OK))
            var expected: [Int16] = [], got: [Int16] = []
            var destination = [Int16](repeating: 0, count: 4096)
            var allocations: UInt64 = 0
            var signalCopy = signal
            signalCopy.withUnsafeMutableBufferPointer { samples in
                var offset = 0
                for (index, size) in chunks.enumerated() {
                    var block = AudioBlock(samples: samples.baseAddress! + offset, frameCount: size,
                                           format: AudioFormat(sampleRate: 48000, channels: 1)).raw
                    offset += size
                    withUnsafeMutablePointer(to: &expected) { list in
                        _ = rawfx_audio_chain_process(viaEmit, &block, { user, out in
                            let b = out!.pointee
                            user!.assumingMemoryBound(to: [Int16].self).pointee
                                .append(contentsOf: UnsafeBufferPointer(start: b.samples, count: Int(b.frame_count)))
                        }, list)
                    }
                    let bound = rawfx_audio_chain_max_output(viaInto, UInt32(size))
                    var written: UInt32 = 99
                    // One frame short of the bound: refused, nothing consumed.
                    if bound > 0 {
                        XCTAssertEqual(destination.withUnsafeMutableBufferPointer {
                            rawfx_audio_chain_process_into(viaInto, &block, $0.baseAddress, bound - 1, &written)
                        }, rawfx_result(RAWFX_E_BUFFER_TOO_SMALL), "\(text), chunk \(index)")
                        XCTAssertTrue(String(cString: rawfx_last_error()).contains("destination has room for \(bound - 1) frames; a chunk of \(size) frames can produce up to \(bound)"),
                                      String(cString: rawfx_last_error()))
                        XCTAssertEqual(written, 0)
                    }
                    let before = rawfx_thread_allocation_count()
                    let result = destination.withUnsafeMutableBufferPointer {
                        rawfx_audio_chain_process_into(viaInto, &block, $0.baseAddress, bound, &written)
                    }
                    if index > 0 { allocations += rawfx_thread_allocation_count() - before }
                    XCTAssertEqual(result, rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
                    XCTAssertLessThanOrEqual(written, bound, "\(text), chunk \(index)")
                    if text.hasPrefix("denoise") {
                        XCTAssertEqual(written, bound, "\(text), chunk \(index): the bound of a chain that keeps the rate is exact")
                    }
                    got.append(contentsOf: destination[0..<Int(written)])
                }
            }
            XCTAssertGreaterThan(expected.count, 1000, text)
            XCTAssertEqual(got, expected, "\(text): process_into wrote what process emits")
            XCTAssertEqual(allocations, 0, "\(text): allocations in process_into calls after the first")
        }
    }

    /// Bypass, a parameter and a whole-chain swap through the C API change the output as the
    /// engine's chains without the stage, with the value, or the new chain give.
    func testBypassParameterAndSwap() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var chain: OpaquePointer?
        XCTAssertEqual(rawfx_video_chain_create(registry, "mirror,scale=width=320:height=180", &chain), rawfx_result(RAWFX_OK))
        defer { rawfx_video_chain_destroy(chain) }
        // In-place filters edit the caller's planes: every call and every reference gets a fresh pattern.
        func pattern() -> VideoBuffer { patternBuffer(width: 640, height: 360) }
        let engine = PluginRegistry()
        var output = rawfx_video_frame()
        func process(line: UInt = #line) {
            let input = pattern()
            var frame = input.frame.raw
            withExtendedLifetime(input) {
                XCTAssertEqual(rawfx_video_chain_process(chain, &frame, &output), rawfx_result(RAWFX_OK), line: line)
            }
        }
        func expectSame(as text: String, line: UInt = #line) throws {
            // The view lives in the chain's buffer: the reference chain must outlive the comparison.
            let reference = try VideoChain(text, registry: engine)
            let expected = try reference.process(pattern().frame)
            withExtendedLifetime(reference) { assertSamePicture(VideoFrame(output), expected, text, line: line) }
        }
        process()
        try expectSame(as: "mirror,scale=width=320:height=180")
        XCTAssertEqual(rawfx_video_chain_set_bypass(chain, "mirror", 1), rawfx_result(RAWFX_OK))
        process()
        try expectSame(as: "scale=width=320:height=180")

        XCTAssertEqual(rawfx_video_chain_set_parameter(chain, "scale.width", "160"), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_video_chain_set_parameter(chain, "1.height", "90"), rawfx_result(RAWFX_OK))
        process()
        try expectSame(as: "scale=width=160:height=90")
        XCTAssertEqual([output.width, output.height], [160, 90])

        var format = VideoFormat(width: 640, height: 360).cValue
        XCTAssertEqual(rawfx_video_chain_replace(chain, registry, "rotate=angle=270", &format), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_video_chain_swap_count(chain), 0, "the swap happens at the next frame")
        process()
        XCTAssertEqual(rawfx_video_chain_swap_count(chain), 1)
        try expectSame(as: "rotate=angle=270")
        XCTAssertEqual(rawfx_video_chain_replace(chain, registry, "rotate=angle=33", &format), rawfx_result(RAWFX_E_CHAIN))
        process()
        XCTAssertEqual(rawfx_video_chain_swap_count(chain), 1, "a chain that failed to build is never installed")
    }
}

import CRawFXEmbed
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXEmbed
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// The SDK hooks from C and C++ (rawfx_hooks.h, rawfx/zoom_adapter.hpp): the adapter, compiled
/// with c++ -std=c++17 and every warning an error against a stand-in of the SDK's interfaces,
/// driven by fake SDK objects that check the SDK's rules, writes byte for byte what `rawfx
/// run` writes through the video source, the pre-processor, the virtual speaker (sync and
/// async, with reference-counted raw data) and the virtual mic, for both SDKs; the C calls
/// report bad input as codes with messages and allocate nothing per frame.
final class HooksCTests: XCTestCase, RawfxCommandTesting {
    static let standin = repositoryRoot.appendingPathComponent("Tests/Fixtures/zoom-standin")
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func testHooksHeaderCompilesAsC99AndCPlusPlus11WithEveryWarning() throws {
        let unit = directory.appendingPathComponent("unit.c")
        try "#include \"rawfx_hooks.h\"\nint rawfx_unit_is_not_empty;\n".write(to: unit, atomically: true, encoding: .utf8)
        for (compiler, language) in [("cc", ["-std=c99"]), ("c++", ["-std=c++11", "-x", "c++"])] {
            XCTAssertNoThrow(try runCompiler(compiler, language + EmbedTests.warnings + ["-fsyntax-only"]
                                                + EmbedTests.includes.flatMap { ["-I", $0] } + [unit.path]), language[0])
        }
    }

    // MARK: The C++ adapter against headers shaped like the SDKs'

    /// rawfx/zoom_adapter.hpp compiles under g++ and clang++ with every warning an error against
    /// the stand-ins (shaped like the real headers: the SDKs' namespaces, the global raw data
    /// classes), with no `using namespace` in force, and with the production-studio header absent
    /// (the stand-in folder is not on the include path; adapter_compiles.cpp finds
    /// zoom_sdk_standin.h beside itself), present (the adapter finds and includes it), or present
    /// but hidden by RAWFX_ZOOM_HAS_PRODUCTION_STUDIO=0. adapter_compiles.cpp asserts that the
    /// macro says which, that every adapter class is concrete, and instantiates each class.
    func testAdapterCompilesAgainstTheStandInsWithAndWithoutProductionStudio() throws {
        let unit = Self.standin.appendingPathComponent("adapter_compiles.cpp")
        let adapter = repositoryRoot.appendingPathComponent("Sources/CRawFXEmbed/include/rawfx/zoom_adapter.hpp")
        let productionStudio = Self.standin.appendingPathComponent("meeting_service_components/meeting_production_studio_ctrl_interface.h")
        for file in [unit, adapter, productionStudio, Self.standin.appendingPathComponent("zoom_sdk_standin.h")] {
            let code = try String(contentsOf: file, encoding: .utf8)
            XCTAssertNil(code.range(of: #"(?m)^\s*using\s+namespace\b"#, options: .regularExpression),
                         "\(file.lastPathComponent) has a `using namespace`")
        }
        let cases: [(String, [String])] = [
            ("absent", ["-DEXPECT_PRODUCTION_STUDIO=0"]),
            ("present", ["-I", Self.standin.path, "-DEXPECT_PRODUCTION_STUDIO=1"]),
            ("hidden", ["-I", Self.standin.path, "-DRAWFX_ZOOM_HAS_PRODUCTION_STUDIO=0", "-DEXPECT_PRODUCTION_STUDIO=0"]),
        ]
        for compiler in ["g++", "clang++"] {
            for (name, flags) in cases {
                XCTAssertNoThrow(try runCompiler(compiler, ["-std=c++17"] + EmbedTests.warnings + ["-fsyntax-only"]
                                                    + EmbedTests.includes.flatMap { ["-I", $0] } + flags + [unit.path]),
                                 "\(compiler), the production-studio header \(name)")
            }
        }
    }

    /// The Meeting SDK's older shapes, as the stand-in models them for RAWFX_ZOOM_MEETING_SDK_VERSION
    /// (the adapter reads the same macro): the raw data without timestamps (before 6.4), the mic
    /// sender's send without a channel (before 5.15), IZoomSDKAudioRawDataDelegate without the
    /// share-audio callback (before 5.16.10), with it but without the sharer's id (before 6.5),
    /// without the interpreter callback (before 6.1). The default, 6.7.5, is the test above.
    /// Production studio is left out (a 6.x header), as with the SDK's h/ folder off the path.
    static let olderMeetingSDKs = ["51400", "51505", "51711", "60211", "60406"]

    func testAdapterCompilesAgainstTheOlderMeetingSDKShapes() throws {
        let unit = Self.standin.appendingPathComponent("adapter_compiles.cpp")
        for compiler in ["g++", "clang++"] {
            for version in Self.olderMeetingSDKs {
                XCTAssertNoThrow(try runCompiler(compiler, ["-std=c++17"] + EmbedTests.warnings + ["-fsyntax-only"]
                                                    + EmbedTests.includes.flatMap { ["-I", $0] }
                                                    + ["-DRAWFX_ZOOM_MEETING_SDK_VERSION=\(version)", "-DEXPECT_PRODUCTION_STUDIO=0", unit.path]),
                                 "\(compiler), Meeting SDK \(version)")
            }
        }
    }

    // MARK: The C++ adapter against rawfx run

    /// `meetingSDKVersion`: RAWFX_ZOOM_MEETING_SDK_VERSION, the stand-in's and the adapter's
    /// (nil: the default, 6.7.5).
    private func buildAdapterTest(sanitizeAddress: Bool = false, meetingSDKVersion: String? = nil) throws -> URL {
        guard rawfx_built_with_sanitizer() == 0 else { throw XCTSkip("the C++ adapter test is not built against a sanitized librawfx") }
        guard FileManager.default.fileExists(atPath: EmbedTests.library.path) else {
            XCTFail("\(EmbedTests.library.path) is not built; run `swift build`")
            throw CocoaError(.fileNoSuchFile)
        }
        let output = directory.appendingPathComponent((sanitizeAddress ? "adapter_test_asan" : "adapter_test")
                                                          + (meetingSDKVersion.map { "_\($0)" } ?? ""))
        let libraryDirectory = EmbedTests.library.deletingLastPathComponent().path
        // ASan instruments the adapter and the test's fake SDK (librawfx itself is not).
        let sanitizer = sanitizeAddress ? ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"] : []
        let version = meetingSDKVersion.map { ["-DRAWFX_ZOOM_MEETING_SDK_VERSION=\($0)"] } ?? []
        try runCompiler("c++", ["-std=c++17"] + sanitizer + EmbedTests.warnings + version
                            + (EmbedTests.includes + [Self.standin.path]).flatMap { ["-I", $0] }
                            + [Self.standin.appendingPathComponent("adapter_test.cpp").path,
                               "-o", output.path, "-L", libraryDirectory, "-lRawFXEmbed", "-Wl,-rpath," + libraryDirectory])
        return output
    }

    /// 1.537 s: the last 10 ms block is partial.
    private func makeInputs() throws { try makeMediaInputs(in: directory, seconds: "1.537") }

    private func assertSameFile(_ a: String, _ b: String, _ what: String, line: UInt = #line) throws {
        let left = try Data(contentsOf: URL(fileURLWithPath: a)), right = try Data(contentsOf: URL(fileURLWithPath: b))
        XCTAssertGreaterThan(left.count, 1000, "\(what): \(a) is almost empty", line: line)
        XCTAssertTrue(left == right, "\(what): \(a) (\(left.count) bytes) differs from \(b) (\(right.count) bytes)", line: line)
    }

    /// Subscribing a stream that is already subscribed is refused and leaves the live
    /// subscription working (its delegate was freed while still the SDK's: a use after free),
    /// through both SDKs' receive paths, sync and async, under AddressSanitizer.
    func testASecondSubscriptionOfOneStreamIsRefusedAndTheFirstLivesUnderASan() throws {
        try makeInputs()
        let program = try buildAdapterTest(sanitizeAddress: true)
        let reference = path("ref-receive.y4m")
        let run = try rawfx("run", "--vf", EmbedTests.videoChain, path("in.y4m"), reference)
        XCTAssertEqual(run.status, 0, run.stderr)
        for sdk in ["video", "meeting"] {
            for mode in ["receive", "receive-async"] {
                let output = path("out-asan-\(mode)-\(sdk)")
                let outcome = try runProgram(program, [mode, sdk, EmbedTests.videoChain, path("in.y4m"), output],
                                             environment: [PluginRegistry.environmentVariable: nil,
                                                           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"])
                XCTAssertEqual(outcome.status, 0, "\(mode) \(sdk): \(outcome.stderr)")
                XCTAssertFalse(outcome.stderr.contains("AddressSanitizer"), "\(mode) \(sdk): \(outcome.stderr)")
                try assertSameFile(output, reference, "\(mode) through the \(sdk) SDK's interface under ASan")
            }
        }
    }

    func testCPlusPlusAdapterWritesWhatRawfxRunWrites() throws {
        try makeInputs()
        let program = try buildAdapterTest()
        let environment: [String: String?] = [PluginRegistry.environmentVariable: nil]
        let watermark = "watermark=image=\(EmbedTests.watermark):x=200:y=120:opacity=0.6"
        let references = [("ref.y4m", "--vf", EmbedTests.videoChain), ("ref-watermark.y4m", "--vf", watermark),
                          ("ref.wav", "--af", "denoise=level=-30"), ("ref-copy.wav", "--af", "")]
        for (output, flag, chain) in references {
            let input = flag == "--vf" ? path("in.y4m") : path("in.wav")
            let run = try rawfx("run", flag, chain, input, path(output))
            XCTAssertEqual(run.status, 0, run.stderr)
        }
        for sdk in ["video", "meeting"] {
            // The chain ends at 180x320 and the SDK suggests exactly that: nothing is fitted.
            let cases: [(String, [String], String)] = [
                ("video-source", [EmbedTests.videoChain, "180x320", path("in.y4m")], "ref.y4m"),
                ("pre-processor", [watermark, path("in.y4m")], "ref-watermark.y4m"),
                ("speaker", ["denoise=level=-30", path("in.wav")], "ref.wav"),
                ("speaker-async", ["denoise=level=-30", path("in.wav")], "ref.wav"),
                ("mic", ["", path("in.wav")], "ref-copy.wav"),
                // Video SDK: a pipe delegate; Meeting SDK: a renderer delegate.
                ("receive", [EmbedTests.videoChain, path("in.y4m")], "ref.y4m"),
                ("receive-async", [EmbedTests.videoChain, path("in.y4m")], "ref.y4m"),
                // The chain ends at 180x320 (even): shared at that size.
                ("share-source", [EmbedTests.videoChain, path("in.y4m")], "ref.y4m"),
            ]
            if sdk == "meeting" {
                // Production studio: video fitted to the declared capability, audio in 10 ms chunks.
                let outcome = try runProgram(program, ["production-studio", sdk, EmbedTests.videoChain, "180x320", path("in.y4m"),
                                                       path("out-ps.y4m"), "", path("in.wav"), path("out-ps.wav")],
                                             environment: environment)
                XCTAssertEqual(outcome.status, 0, "production studio: \(outcome.stderr)")
                try assertSameFile(path("out-ps.y4m"), path("ref.y4m"), "production studio video")
                try assertSameFile(path("out-ps.wav"), path("ref-copy.wav"), "production studio audio")
            }
            for (mode, arguments, reference) in cases {
                let output = path("out-\(mode)-\(sdk)")
                let outcome = try runProgram(program, [mode, sdk] + arguments + [output], environment: environment)
                XCTAssertEqual(outcome.status, 0, "\(mode) \(sdk): \(outcome.stderr)")
                try assertSameFile(output, path(reference), "\(mode) through the \(sdk) SDK's interface")
            }
        }
    }

    /// The adapter built for the oldest Meeting SDK shape (RAWFX_ZOOM_MEETING_SDK_VERSION 51400:
    /// no timestamps on the raw data, the mic's send without a channel, no share-audio callback)
    /// writes what `rawfx run` writes through the Meeting SDK's speaker, mic and renderer.
    func testCPlusPlusAdapterForAnOlderMeetingSDKWritesWhatRawfxRunWrites() throws {
        try makeInputs()
        let program = try buildAdapterTest(meetingSDKVersion: "51400")
        let environment: [String: String?] = [PluginRegistry.environmentVariable: nil]
        let references = [("ref.y4m", "--vf", EmbedTests.videoChain, "in.y4m"), ("ref.wav", "--af", "denoise=level=-30", "in.wav"),
                          ("ref-copy.wav", "--af", "", "in.wav")]
        for (output, flag, chain, input) in references {
            let run = try rawfx("run", flag, chain, path(input), path(output))
            XCTAssertEqual(run.status, 0, run.stderr)
        }
        let cases: [(String, [String], String)] = [
            ("speaker", ["denoise=level=-30", path("in.wav")], "ref.wav"),
            ("mic", ["", path("in.wav")], "ref-copy.wav"),
            ("receive-async", [EmbedTests.videoChain, path("in.y4m")], "ref.y4m"),
        ]
        for (mode, arguments, reference) in cases {
            let output = path("out-\(mode)-meeting-51400")
            let outcome = try runProgram(program, [mode, "meeting"] + arguments + [output], environment: environment)
            XCTAssertEqual(outcome.status, 0, "\(mode), the Meeting SDK before 5.15: \(outcome.stderr)")
            try assertSameFile(output, path(reference), "\(mode) through the Meeting SDK's shape before 5.15")
        }
    }

    /// docs/examples/hooks.c, the C example of docs/embedding.md, built as a user would.
    func testCHooksExampleWritesWhatRawfxRunWrites() throws {
        try makeInputs()
        _ = try buildAdapterTest()  // the same preconditions (an unsanitized, built librawfx)
        let example = directory.appendingPathComponent("hooks")
        let libraryDirectory = EmbedTests.library.deletingLastPathComponent().path
        try runCompiler("cc", ["-std=c99"] + EmbedTests.warnings + EmbedTests.includes.flatMap { ["-I", $0] }
                            + [repositoryRoot.appendingPathComponent("docs/examples/hooks.c").path,
                               "-o", example.path, "-L", libraryDirectory, "-lRawFXEmbed", "-Wl,-rpath," + libraryDirectory])
        let environment: [String: String?] = [PluginRegistry.environmentVariable: nil]
        for (flag, chain, input, output) in [("--vf", EmbedTests.videoChain, "in.y4m", "y4m"), ("--af", "denoise=level=-30", "in.wav", "wav")] {
            let reference = try rawfx("run", flag, chain, path(input), path("ref.\(output)"))
            XCTAssertEqual(reference.status, 0, reference.stderr)
            let outcome = try runProgram(example, [flag, chain] + (flag == "--vf" ? ["180x320"] : []) + [path(input), path("out.\(output)")],
                                         environment: environment)
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
            try assertSameFile(path("out.\(output)"), path("ref.\(output)"), "hooks.c \(flag)")
            if flag == "--vf" { XCTAssertTrue(outcome.stderr.contains("12 frames sent, 0 broken sender rules"), outcome.stderr) }
        }
    }

    func testAdapterReportsABadChainAsAnException() throws {
        try makeInputs()
        let program = try buildAdapterTest()
        let outcome = try runProgram(program, ["pre-processor", "video", "scale=width=320:height=180", path("in.y4m"), path("o.y4m")],
                                     environment: [PluginRegistry.environmentVariable: nil])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("rawfx_preprocessor_create: RAWFX_E_CHAIN: pre-processing cannot resize"), outcome.stderr)
    }

    // MARK: The C API in process

    private func openRegistry() throws -> OpaquePointer {
        var registry: OpaquePointer?
        XCTAssertEqual(rawfx_registry_open(nil, &registry), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        return try XCTUnwrap(registry)
    }

    private func expect(_ result: rawfx_result, _ code: Int, _ message: String, line: UInt = #line) {
        XCTAssertEqual(result, rawfx_result(code), String(cString: rawfx_last_error()), line: line)
        XCTAssertTrue(String(cString: rawfx_last_error()).contains(message), "\(String(cString: rawfx_last_error()))", line: line)
    }

    func testBadArgumentsAreCodesWithMessages() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var hook: OpaquePointer?
        expect(rawfx_preprocessor_create(registry, "scale=width=320:height=180", nil, &hook), RAWFX_E_CHAIN, "pre-processing cannot resize")
        XCTAssertNil(hook)
        expect(rawfx_speaker_create(registry, "denoise", nil, nil, nil, &hook), RAWFX_E_INVALID_ARGUMENT, "sink is NULL")
        expect(rawfx_virtual_mic_create(registry, "", 12345, 0, &hook), RAWFX_E_CHAIN, "the virtual mic cannot send 12345 Hz")
        expect(rawfx_virtual_mic_create(registry, "", 0, 9, &hook), RAWFX_E_INVALID_ARGUMENT, "pacing is 9")
        expect(rawfx_video_source_create(nil, "", nil, &hook), RAWFX_E_INVALID_ARGUMENT, "registry is NULL")

        XCTAssertEqual(rawfx_video_source_create(registry, "", nil, &hook), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(hook) }
        XCTAssertEqual(rawfx_hook_kind(hook), Int32(RAWFX_HOOK_VIDEO_SOURCE))
        // Another kind's call, a bad capability, a push before the SDK started sending.
        expect(rawfx_preprocessor_process(hook, nil), RAWFX_E_INVALID_ARGUMENT, "hook is of kind 3; expected kind 1")
        var odd = rawfx_video_capability(width: 0, height: 720, frame: 30, data_mode: 0)
        let send: rawfx_video_send = { _, _, _, _, _, _, _ in 0 }
        expect(rawfx_video_source_on_initialize(hook, send, nil, nil, 0, &odd), RAWFX_E_INVALID_ARGUMENT, "suggested is 0x720")
        expect(rawfx_video_source_on_initialize(hook, send, nil, nil, 3, &odd), RAWFX_E_INVALID_ARGUMENT, "supported is NULL with count 3")
        var capability = rawfx_video_capability()
        expect(rawfx_video_source_capability(hook, &capability), RAWFX_E_STATE, "has not called onInitialize")
        let buffer = patternBuffer(width: 64, height: 32)
        var frame = buffer.frame.raw
        expect(rawfx_video_source_push_frame(hook, &frame), RAWFX_E_STATE, "refused")
        frame.strides.0 = 3
        expect(rawfx_video_source_push_frame(hook, &frame), RAWFX_E_INVALID_ARGUMENT, "frame.strides[0] (Y) is 3")
        expect(rawfx_hook_set_parameter(hook, "scale.width", "1"), RAWFX_E_CHAIN, "no stage 'scale' in the chain (empty)")
        expect(rawfx_hook_set_chain(hook, "nope"), RAWFX_E_NOT_FOUND, "unknown filter 'nope'")
        expect(rawfx_hook_set_lifecycle_callback(nil, nil, nil), RAWFX_E_INVALID_ARGUMENT, "hook is NULL")
        withExtendedLifetime(buffer) {}

        var speaker: OpaquePointer?
        XCTAssertEqual(rawfx_speaker_create(registry, "denoise", nil, { _, _, _, _ in }, nil, &speaker), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(speaker) }
        var data = rawfx_audio_raw_data()
        data.struct_size = UInt32(MemoryLayout<rawfx_audio_raw_data>.size)
        data.sample_rate = 48000
        data.channel_num = 2
        let samples = [Int16](repeating: 0, count: 8)
        samples.withUnsafeBytes { data.buffer = $0.baseAddress!.assumingMemoryBound(to: CChar.self) }
        data.buffer_len = 6
        expect(rawfx_speaker_receive(speaker, Int32(RAWFX_STREAM_MIXED), 0, &data), RAWFX_E_INVALID_ARGUMENT, "data.buffer_len is 6")
        expect(rawfx_speaker_receive(speaker, 7, 0, &data), RAWFX_E_INVALID_ARGUMENT, "stream is 7")
        expect(rawfx_speaker_latency(speaker, Int32(RAWFX_STREAM_SHARED), 0, &capability.width), RAWFX_E_STATE, "has no chain yet")
        expect(rawfx_hook_set_lifecycle_callback(speaker, nil, nil), RAWFX_E_INVALID_ARGUMENT, "only a video source, a share source, a virtual mic or production studio")
        var studio: OpaquePointer?
        expect(rawfx_production_studio_create(registry, "", "", 640, 360, 1, 44100, 0, nil, &studio), RAWFX_E_CHAIN,
               "production studio sends audio at 32000 or 48000 Hz only")
        expect(rawfx_production_studio_create(registry, "", "", 640, 360, 5, 0, 0, nil, &studio), RAWFX_E_INVALID_ARGUMENT, "format is 5")
        XCTAssertEqual(rawfx_production_studio_create(registry, "", "", 640, 360, 1, 0, Int32(RAWFX_PACING_CALLER), nil, &studio),
                       rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(studio) }
        expect(rawfx_hook_set_chain(studio, "mirror"), RAWFX_E_INVALID_ARGUMENT, "use rawfx_production_studio_set_chain")
        expect(rawfx_production_studio_set_chain(studio, 7, "mirror"), RAWFX_E_INVALID_ARGUMENT, "media is 7")
        XCTAssertEqual(rawfx_production_studio_set_chain(studio, Int32(RAWFX_MEDIA_VIDEO), "mirror"), rawfx_result(RAWFX_OK))
        expect(rawfx_production_studio_set_chain(studio, Int32(RAWFX_MEDIA_AUDIO), "mirror"), RAWFX_E_CHAIN, "mirror is a video filter")
        XCTAssertEqual(rawfx_production_studio_set_parameter(studio, Int32(RAWFX_MEDIA_VIDEO), "mirror.vertical", "true"),
                       rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        expect(rawfx_production_studio_set_bypass(studio, Int32(RAWFX_MEDIA_AUDIO), "mirror", 1), RAWFX_E_CHAIN, "no stage 'mirror'")
        expect(rawfx_production_studio_on_start_send(studio, nil, { _, _, _, _, _ in 0 }, nil), RAWFX_E_INVALID_ARGUMENT, "both sender functions")
        XCTAssertEqual(rawfx_user_key("12345"), 12345)
        XCTAssertEqual(rawfx_user_key("abc"), SDKUserKey.fnv1a("abc"))
        withExtendedLifetime(samples) {}
    }

    /// The share source from C: bad arguments named, frames only between started and stopped,
    /// each sent packed at the chain's output size with the frame's range, what was sent equal to
    /// the chain run directly, no allocation per push once warm, the lifecycle events.
    func testShareSourceThroughTheCAPI() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var hook: OpaquePointer?
        expect(rawfx_share_source_create(registry, "", nil, 33, 18, &hook), RAWFX_E_INVALID_ARGUMENT, "output size is 33x18")
        expect(rawfx_share_source_create(registry, "nope", nil, 0, 0, &hook), RAWFX_E_NOT_FOUND, "unknown filter 'nope'")
        XCTAssertEqual(rawfx_share_source_create(registry, "mirror", nil, 0, 0, &hook), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(hook) }
        XCTAssertEqual(rawfx_hook_kind(hook), Int32(RAWFX_HOOK_SHARE_SOURCE))
        expect(rawfx_video_source_on_start_send(hook), RAWFX_E_INVALID_ARGUMENT, "hook is of kind 7; expected kind 3")

        final class Shared: @unchecked Sendable {  // written by the pushing thread only (sync mode)
            var frames: [[UInt8]] = []
            var sizes: [(Int32, Int32, Int32)] = []
            var events: [Int32] = []
        }
        let shared = Shared()
        let context = Unmanaged.passUnretained(shared).toOpaque()
        XCTAssertEqual(rawfx_hook_set_lifecycle_callback(hook, { user, event in
            Unmanaged<Shared>.fromOpaque(user!).takeUnretainedValue().events.append(event!.pointee.kind)
        }, context), rawfx_result(RAWFX_OK))
        let send: rawfx_share_send = { sender, buffer, width, height, length, format in
            let s = Unmanaged<Shared>.fromOpaque(sender!).takeUnretainedValue()
            if s.frames.count < 4 {  // the four warm-up pushes, copied; later ones count allocations
                s.frames.append(Array(UnsafeRawBufferPointer(start: buffer, count: Int(length))))
                s.sizes.append((width, height, format))
            }
            return 0
        }
        let input = patternBuffer(width: 64, height: 32, seed: 3)
        var frame = input.frame.raw
        expect(rawfx_share_source_push_frame(hook, &frame), RAWFX_E_STATE, "refused")
        XCTAssertEqual(rawfx_share_source_on_share_send_started(hook, send, context), rawfx_result(RAWFX_OK))
        for _ in 0..<4 { XCTAssertEqual(rawfx_share_source_push_frame(hook, &frame), rawfx_result(RAWFX_OK)) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<20 { _ = rawfx_share_source_push_frame(hook, &frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "a push allocates nothing once warm")
        XCTAssertEqual(rawfx_share_source_on_share_send_stopped(hook), rawfx_result(RAWFX_OK))
        expect(rawfx_share_source_push_frame(hook, &frame), RAWFX_E_STATE, "refused")

        let reference = try VideoChain("mirror", registry: builtPlugins)
        let mirrored = try reference.process(input.frame)
        let packed = (0..<3).flatMap { planeBytes(mirrored, $0) }
        XCTAssertEqual(shared.frames.count, 4)
        XCTAssertTrue(shared.frames.allSatisfy { $0 == packed }, "what was shared is the chain's output, packed")
        XCTAssertTrue(shared.sizes.allSatisfy { $0 == (64, 32, 0) }, "\(shared.sizes)")  // limited range: format 0
        XCTAssertEqual(shared.events, [Int32(RAWFX_EVENT_SHARE_STARTED), Int32(RAWFX_EVENT_SHARE_STOPPED)])
        withExtendedLifetime(input) {}
    }

    /// `async_workers` came after 1.0: options whose struct_size ends before it still work
    /// (0: one worker per core); a struct_size shorter than 1.0's is refused, and so is one
    /// larger than this library's.
    func testHookOptionsOfTheFirstReleaseAreAccepted() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        let sink: rawfx_receive_sink = { _, _, _, _ in }
        var options = rawfx_hook_options()
        options.async = 1
        options.async_workers = 99  // beyond the caller's struct: must not be read
        options.struct_size = UInt32(MemoryLayout<rawfx_hook_options>.offset(of: \rawfx_hook_options.async_workers)!)
        var hook: OpaquePointer?
        XCTAssertEqual(rawfx_receive_video_create(registry, "mirror", &options, sink, nil, &hook), rawfx_result(RAWFX_OK),
                       String(cString: rawfx_last_error()))
        rawfx_hook_destroy(hook)
        options.struct_size = 12
        expect(rawfx_receive_video_create(registry, "mirror", &options, sink, nil, &hook), RAWFX_E_INVALID_ARGUMENT,
               "rawfx_hook_options.struct_size is 12")
        // Larger than this library's: a newer header's fields would be ignored, so refused.
        options.struct_size = UInt32(MemoryLayout<rawfx_hook_options>.size + 8)
        expect(rawfx_receive_video_create(registry, "mirror", &options, sink, nil, &hook), RAWFX_E_INVALID_ARGUMENT,
               "rawfx_hook_options.struct_size is \(MemoryLayout<rawfx_hook_options>.size + 8); this library (API 1.\(RAWFX_EMBED_VERSION_MINOR)) knows sizeof(rawfx_hook_options) = \(MemoryLayout<rawfx_hook_options>.size)")
    }

    /// The frame and audio calls allocate nothing once the format is known: the pre-processor,
    /// the speaker (sync) and the video source's push (sync, sent to a C sender).
    func testHookCallsAllocateNothingPerFrame() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }

        var pre: OpaquePointer?
        XCTAssertEqual(rawfx_preprocessor_create(registry, "rotate=angle=180", nil, &pre), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(pre) }
        let input = patternBuffer(width: 64, height: 32)
        let picture = VideoBuffer(format: input.format, extraStride: 5)
        input.frame.copy(to: picture.frame)
        var frame = picture.frame.raw
        XCTAssertEqual(rawfx_preprocessor_process(pre, &frame), rawfx_result(RAWFX_OK))
        var before = rawfx_thread_allocation_count()
        for _ in 0..<10 { _ = rawfx_preprocessor_process(pre, &frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "pre-processor allocations in 10 frames")
        // 11 half turns: one half turn from the input, as the engine's own chain gives.
        let expected = try VideoChain("rotate=angle=180", registry: PluginRegistry()).process(input.frame)
        for p in 0..<3 { XCTAssertEqual(planeBytes(picture.frame, p), planeBytes(expected, p), "plane \(p)") }

        var speaker: OpaquePointer?
        var emitted = 0
        XCTAssertEqual(rawfx_speaker_create(registry, "denoise", nil, { user, _, _, block in
            user!.assumingMemoryBound(to: Int.self).pointee += Int(block!.pointee.frame_count)
        }, &emitted, &speaker), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(speaker) }
        let samples = TestAudio.whiteNoise(count: 480, rms: 3000, seed: 5)
        let allocations: UInt64 = samples.withUnsafeBytes { bytes in
            var data = rawfx_audio_raw_data()
            data.struct_size = UInt32(MemoryLayout<rawfx_audio_raw_data>.size)
            data.buffer = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
            data.buffer_len = 960
            data.sample_rate = 48000
            data.channel_num = 1
            _ = rawfx_speaker_receive(speaker, Int32(RAWFX_STREAM_ONE_WAY), 7, &data)
            let before = rawfx_thread_allocation_count()
            for _ in 0..<10 { _ = rawfx_speaker_receive(speaker, Int32(RAWFX_STREAM_ONE_WAY), 7, &data) }
            return rawfx_thread_allocation_count() - before
        }
        XCTAssertEqual(allocations, 0, "speaker allocations in 10 blocks")
        XCTAssertEqual(emitted, 11 * 480)
        var latency: UInt32 = 0
        XCTAssertEqual(rawfx_speaker_latency(speaker, Int32(RAWFX_STREAM_ONE_WAY), 7, &latency), rawfx_result(RAWFX_OK))
        XCTAssertEqual(latency, 480, "the denoiser's 10 ms")

        var source: OpaquePointer?
        XCTAssertEqual(rawfx_video_source_create(registry, "scale=width=32:height=16", nil, &source), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(source) }
        var sent = 0
        var capability = rawfx_video_capability(width: 32, height: 16, frame: 30, data_mode: 0)
        XCTAssertEqual(rawfx_video_source_on_initialize(source, { counter, _, width, height, length, _, _ in
            // The SDK's rule: packed I420 of the capability's size.
            guard width == 32, height == 16, length == 32 * 16 * 3 / 2 else { return 7 }
            counter!.assumingMemoryBound(to: Int.self).pointee += 1
            return 0
        }, &sent, &capability, 1, &capability), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_video_source_on_start_send(source), rawfx_result(RAWFX_OK))
        var camera = input.frame.raw
        XCTAssertEqual(rawfx_video_source_push_frame(source, &camera), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        before = rawfx_thread_allocation_count()
        for _ in 0..<10 { _ = rawfx_video_source_push_frame(source, &camera) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "video source allocations in 10 frames")
        XCTAssertEqual(sent, 11)

        // Received video: the pipe's subscribe hands back the delegate every frame goes to.
        var receiver: OpaquePointer?
        var received = 0
        XCTAssertEqual(rawfx_receive_video_create(registry, "scale=width=32:height=16", nil, { counter, user, kind, frame in
            guard user == 9, kind == Int32(RAWFX_PIPE_VIDEO), frame!.pointee.width == 32 else { return }
            counter!.assumingMemoryBound(to: Int.self).pointee += 1
        }, &received, &receiver), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(receiver) }
        var delegate: OpaquePointer?
        XCTAssertEqual(rawfx_receive_video_subscribe(receiver, &delegate, { pipe, token, resolution in
            guard resolution == 2 else { return 7 }
            pipe!.assumingMemoryBound(to: OpaquePointer?.self).pointee = token
            return 0
        }, { _, _ in 0 }, 9, Int32(RAWFX_PIPE_VIDEO), 2, nil), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        var raw = rawfx_video_raw_data()
        raw.struct_size = UInt32(MemoryLayout<rawfx_video_raw_data>.size)
        raw.width = 64
        raw.height = 32
        raw.planes = (UnsafeMutableRawPointer(input.frame.raw.planes.0)?.assumingMemoryBound(to: CChar.self),
                      UnsafeMutableRawPointer(input.frame.raw.planes.1)?.assumingMemoryBound(to: CChar.self),
                      UnsafeMutableRawPointer(input.frame.raw.planes.2)?.assumingMemoryBound(to: CChar.self))
        raw.strides = input.frame.raw.strides
        raw.is_limited = 1
        XCTAssertEqual(rawfx_pipe_frame_received(delegate, &raw), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        before = rawfx_thread_allocation_count()
        for _ in 0..<10 { _ = rawfx_pipe_frame_received(delegate, &raw) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "received video allocations in 10 frames")
        XCTAssertEqual(received, 11)
        raw.strides.1 = 3
        expect(rawfx_pipe_frame_received(delegate, &raw), RAWFX_E_INVALID_ARGUMENT, "frame.strides[1] (U) is 3")
        XCTAssertEqual(rawfx_receive_video_unsubscribe(receiver, 9, Int32(RAWFX_PIPE_VIDEO)), rawfx_result(RAWFX_OK))
        expect(rawfx_receive_video_unsubscribe(receiver, 9, Int32(RAWFX_PIPE_VIDEO)), RAWFX_E_NOT_FOUND, "is not subscribed")

        // The mic: a 10 ms push and a pump of the caller's clock, each sending one chunk.
        var mic: OpaquePointer?
        XCTAssertEqual(rawfx_virtual_mic_create(registry, "denoise", 48000, Int32(RAWFX_PACING_CALLER), &mic), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(mic) }
        var chunks = 0
        XCTAssertEqual(rawfx_virtual_mic_on_initialize(mic, { counter, _, length, _, _ in
            counter!.assumingMemoryBound(to: Int.self).pointee += Int(length) == 960 ? 1 : 0
            return 0
        }, &chunks), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_virtual_mic_on_start_send(mic), rawfx_result(RAWFX_OK))
        var pcm = TestAudio.whiteNoise(count: 480, rms: 3000, seed: 6)
        let micAllocations: UInt64 = pcm.withUnsafeMutableBufferPointer { buffer in
            var block = AudioBlock(samples: buffer.baseAddress!, frameCount: 480, format: AudioFormat(sampleRate: 48000, channels: 1)).raw
            var now: Int64 = 0
            for _ in 0..<20 {  // warm: the chunk queue makes its slots on demand
                _ = rawfx_virtual_mic_push_audio(mic, &block, Int64.min)
                _ = rawfx_virtual_mic_pump(mic, now, nil)
                now += 10_000
            }
            let before = rawfx_thread_allocation_count()
            for _ in 0..<10 {
                _ = rawfx_virtual_mic_push_audio(mic, &block, Int64.min)
                _ = rawfx_virtual_mic_pump(mic, now, nil)
                now += 10_000
            }
            return rawfx_thread_allocation_count() - before
        }
        XCTAssertEqual(micAllocations, 0, "virtual mic allocations in 10 pushes and pumps")
        XCTAssertGreaterThanOrEqual(chunks, 29, "one 10 ms chunk per push (the first held back by the denoiser's latency)")
        withExtendedLifetime((input, picture, samples)) {}
    }

    /// Run-time control and lifecycle events through the C API change what the hooks do as
    /// the engine's chains with the same change do.
    func testControlAndLifecycleThroughTheCAPI() throws {
        let registry = try openRegistry()
        defer { rawfx_registry_close(registry) }
        var mic: OpaquePointer?
        XCTAssertEqual(rawfx_virtual_mic_create(registry, "gain=db=0", 16000, Int32(RAWFX_PACING_IMMEDIATE), &mic), rawfx_result(RAWFX_OK))
        defer { rawfx_hook_destroy(mic) }
        final class Seen { var events: [Int32] = []; var samples: [Int16] = [] }
        let seen = Seen()
        let context = Unmanaged.passUnretained(seen).toOpaque()
        XCTAssertEqual(rawfx_hook_set_lifecycle_callback(mic, { user, event in
            Unmanaged<Seen>.fromOpaque(user!).takeUnretainedValue().events.append(event!.pointee.kind)
        }, context), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_virtual_mic_on_initialize(mic, { user, data, length, rate, channel in
            guard rate == 16000, channel == 0, length == 320 else { return 7 }
            let chunk = UnsafeRawPointer(data!).assumingMemoryBound(to: Int16.self)
            Unmanaged<Seen>.fromOpaque(user!).takeUnretainedValue().samples += UnsafeBufferPointer(start: chunk, count: 160)
            return 0
        }, context), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_virtual_mic_on_start_send(mic), rawfx_result(RAWFX_OK))
        // +6 dB from now on: each sample doubles (formula, rounding aside).
        XCTAssertEqual(rawfx_hook_set_parameter(mic, "gain.db", "6.0206"), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        var input = [Int16](repeating: 1000, count: 320)
        input.withUnsafeMutableBufferPointer { buffer in
            var block = AudioBlock(samples: buffer.baseAddress!, frameCount: 320, format: AudioFormat(sampleRate: 16000, channels: 1)).raw
            XCTAssertEqual(rawfx_virtual_mic_push_audio(mic, &block, 0), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        }
        XCTAssertEqual(rawfx_virtual_mic_chunks_sent(mic), 2)
        XCTAssertEqual(seen.samples.count, 320)
        XCTAssertTrue(seen.samples.allSatisfy { abs(Int($0) - 2000) <= 1 }, "\(seen.samples.prefix(4))")
        XCTAssertEqual(rawfx_hook_set_bypass(mic, "gain", 1), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_virtual_mic_on_stop_send(mic), rawfx_result(RAWFX_OK))
        input.withUnsafeMutableBufferPointer { buffer in
            var block = AudioBlock(samples: buffer.baseAddress!, frameCount: 320, format: AudioFormat(sampleRate: 16000, channels: 1)).raw
            expect(rawfx_virtual_mic_push_audio(mic, &block, Int64.min), RAWFX_E_STATE, "onStopSend")
        }
        XCTAssertEqual(rawfx_virtual_mic_on_uninitialized(mic), rawfx_result(RAWFX_OK))
        XCTAssertEqual(seen.events, [RAWFX_EVENT_MIC_INITIALIZED, RAWFX_EVENT_MIC_STARTED, RAWFX_EVENT_MIC_STOPPED,
                                     RAWFX_EVENT_MIC_UNINITIALIZED].map(Int32.init))
        var length = 0
        var json = [CChar](repeating: 0, count: 4096)
        XCTAssertEqual(rawfx_hook_metrics_json(mic, &json, json.count, &length), rawfx_result(RAWFX_OK))
        let text = String(decoding: json.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("{\"hook\":{\"name\":\"virtualMic\",\"frames\":1,"), text)
        XCTAssertTrue(text.contains("\"refused\":1"), text)
        // One push of 20 ms is one block for gain (it takes any size).
        XCTAssertTrue(text.contains("{\"name\":\"gain\",\"frames\":1,"), text)
    }
}

/// FNV-1a of UTF-8, written out here as the reference for rawfx_user_key.
enum SDKUserKey {
    static func fnv1a(_ s: String) -> UInt64 {
        s.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

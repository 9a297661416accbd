import CRawFX
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia
import RawFXRuntime
import XCTest
@testable import RawFXTestSupport

/// rawfx/plugin_helpers.h, the optional helper header for C and C++ plugins: it compiles as
/// C99 and C++11 with every warning on, the example built on it (docs/examples/volume.c) runs
/// exact against its formula either way, and the entry macro, parameter checks, messages and
/// logging behave as the header says.
final class PluginHelperTests: XCTestCase {
    static let include = repositoryRoot.appendingPathComponent("Sources/CRawFX/include")
    static let volumeSource = repositoryRoot.appendingPathComponent("docs/examples/volume.c")
    static let warnings = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// Compiles `source` as C99 or C++11 with every warning an error into a plugin .so.
    private func build(_ source: URL, cPlusPlus: Bool, defines: [String] = [], name: String) throws -> String {
        let output = directory.appendingPathComponent(name).path
        try runCompiler(cPlusPlus ? "c++" : "cc",
                        (cPlusPlus ? ["-std=c++11", "-x", "c++"] : ["-std=c99"]) + Self.warnings
                            + ["-shared", "-fPIC", "-I", Self.include.path] + defines.map { "-D" + $0 }
                            + [source.path, "-o", output, "-lm"])
        return output
    }

    // MARK: Headers as C and C++

    /// Every public header, alone and together, as C99 and as C++11, -Wall -Wextra -Wpedantic.
    func testEveryPublicHeaderCompilesAsC99AndCPlusPlus11() throws {
        let headers = ["rawfx.h", "rawfx/ext/thread_pool.h", "rawfx/ext/voice_activity.h", "rawfx/plugin_helpers.h"]
        for header in headers + ["all"] {
            let unit = directory.appendingPathComponent("unit.c")
            let includes = (header == "all" ? headers : [header]).map { "#include \"\($0)\"\n" }.joined()
            try (includes + "int rawfx_unit_is_not_empty;\n").write(to: unit, atomically: true, encoding: .utf8)
            for (compiler, language) in [("cc", ["-std=c99"]), ("c++", ["-std=c++11", "-x", "c++"])] {
                XCTAssertNoThrow(try runCompiler(compiler, language + Self.warnings
                                                    + ["-fsyntax-only", "-I", Self.include.path, unit.path]),
                                 "\(header) as \(language[0])")
            }
        }
        // The layout checks too: as C++, they test that both languages lay the structs out alike.
        let checks = repositoryRoot.appendingPathComponent("Sources/CRawFX/rawfx_abi_checks.c").path
        XCTAssertNoThrow(try runCompiler("c++", ["-std=c++11", "-x", "c++"] + Self.warnings
                                            + ["-fsyntax-only", "-I", Self.include.path, checks]))
    }

    /// The 1.0 sizes rawfx_abi_checks.c pins for the 1.1 header (RAWFX_SIZE_1_0_*, and the
    /// structs that did not grow) are what the 1.0 header itself gives.
    func testThe1_0HeaderHasTheSizesThe1_1HeaderNames() throws {
        let unit = directory.appendingPathComponent("sizes.c")
        try #"""
        #include "rawfx.h"
        #define SIZE(type, size) typedef char type##_size[sizeof(type) == (size) ? 1 : -1]
        SIZE(rawfx_filter_descriptor, 72);  /* RAWFX_SIZE_1_0_FILTER_DESCRIPTOR */
        SIZE(rawfx_filter, 88);             /* RAWFX_SIZE_1_0_FILTER */
        SIZE(rawfx_host_info, 32);          /* RAWFX_SIZE_1_0_HOST_INFO */
        SIZE(rawfx_plugin_entry, 64);
        SIZE(rawfx_param_descriptor, 96);
        SIZE(rawfx_param_value, 32);
        SIZE(rawfx_negotiation, 60);
        SIZE(rawfx_video_frame, 72);
        SIZE(rawfx_audio_frame, 56);
        """#.write(to: unit, atomically: true, encoding: .utf8)
        let fixture = repositoryRoot.appendingPathComponent("Tests/Fixtures/abi-1.0").path
        XCTAssertNoThrow(try runCompiler("cc", ["-std=c99", "-Wall", "-fsyntax-only", "-I", fixture, unit.path]))
    }

    // MARK: The example, built both ways

    func testVolumeExampleIsExactAsCAndAsCPlusPlus() throws {
        let input = TestAudio.whiteNoise(count: 4800 * 2, rms: 12000, seed: 5)  // 2.5x clips often
        var outputs: [[Int16]] = []
        for cPlusPlus in [false, true] {
            let plugin = try DirectPlugin(path: build(Self.volumeSource, cPlusPlus: cPlusPlus,
                                                      name: cPlusPlus ? "volume_cxx.so" : "volume_c.so"))
            XCTAssertEqual(String(cString: plugin.entry.pointee.plugin_name), "volume-example")
            let volume = try DirectFilter(plugin.descriptor("volume"), host: .none)
            XCTAssertEqual(volume.filter.pointee.struct_size, UInt32(MemoryLayout<rawfx_filter>.size))
            try volume.configure(.audio(rate: 48000, channels: 2))
            var samples = input
            try volume.process(&samples, rate: 48000, channels: 2)
            XCTAssertEqual(samples, input, "the default factor is 1 (set by rawfx_instance_ready)")
            XCTAssertEqual(volume.set(0, float: 2.5), Int32(RAWFX_OK))
            samples = input
            try volume.process(&samples, rate: 48000, channels: 2)
            // Rounded to nearest (halves up) and clipped, as the file's comment says.
            XCTAssertEqual(samples, input.map { Int16(clamping: Int((Double($0) * 2.5 + 0.5).rounded(.down))) })
            outputs.append(samples)
        }
        XCTAssertEqual(outputs[0], outputs[1], "C and C++ builds give the same samples")
    }

    // MARK: Parameters and messages

    func testCheckParamRefusesWithMessagesAndWithoutAllocating() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1)
        let plugin = try DirectPlugin(path: build(Self.volumeSource, cPlusPlus: false, name: "volume.so"))
        let volume = try DirectFilter(plugin.descriptor("volume"), host: .none)
        let cases: [(rawfx_param_value, UInt32, String)] = [
            (.float(9), 0, "volume: factor=9 is out of range; accepted: 0 to 8"),
            (.float(-0.5), 0, "volume: factor=-0.5 is out of range; accepted: 0 to 8"),
            (.float(.nan), 0, "volume: factor=nan is out of range; accepted: 0 to 8"),
            (.int(1, type: RAWFX_PARAM_INT), 0, "volume: factor: the value has type 1; the parameter has type 2"),
            (.float(1), 3, "volume: no parameter at index 3 (it has 1)"),
        ]
        for (value, index, message) in cases {
            var value = value
            let before = rawfx_thread_allocation_count()
            let status = volume.filter.pointee.set_param(volume.filter, index, &value)
            XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, message)
            XCTAssertEqual(status, Int32(RAWFX_ERR_INVALID_ARGUMENT), message)
            XCTAssertEqual(volume.error, message)
        }
        XCTAssertEqual(volume.set(0, float: 8), Int32(RAWFX_OK))
        XCTAssertEqual(volume.error, "", "a successful call clears the message")
    }

    func testFormatChecksNameWhatIsWrongAndWhatIsExpected() throws {
        let plugin = try DirectPlugin(path: build(Self.volumeSource, cPlusPlus: false, name: "volume.so"))
        let volume = try DirectFilter(plugin.descriptor("volume"), host: .none)
        XCTAssertThrowsError(try volume.configure(.video(width: 64, height: 64))) {
            XCTAssertEqual("\($0)", "volume: is an audio filter and cannot process video frames; place it in an audio (interleaved 16-bit PCM) chain")
        }
        XCTAssertThrowsError(try volume.configure(.audio(rate: 48000, channels: 33))) {
            XCTAssertEqual("\($0)", "volume: 33 channels is not supported; accepted: 1 to 32 interleaved channels")
        }
        var short = rawfx_format.audio(rate: 48000, channels: 2)
        short.audio.struct_size = 8
        XCTAssertThrowsError(try volume.configure(short)) {
            XCTAssertEqual("\($0)", "volume: the audio format is incomplete (struct_size 8, needs 12)")
        }
        XCTAssertThrowsError(try volume.configure(.audio(rate: 48000, channels: 2), negotiationSize: 20)) {
            XCTAssertEqual("\($0)", "volume: configure needs a complete rawfx_negotiation (NULL, or struct_size too small)")
        }
    }

    // MARK: Host, logging, 1.0 create

    func testCreateWithHostLogsThroughItAndCreateWorksWithoutOne() throws {
        let plugin = try DirectPlugin(path: build(Self.volumeSource, cPlusPlus: true, name: "volume.so"))
        let descriptor = try plugin.descriptor("volume")
        XCTAssertNotNil(descriptor.pointee.create, "a 1.0 host finds create")
        XCTAssertNotNil(descriptor.pointee.create_with_host)
        let lines = LogCapture()
        defer { lines.stop() }

        let hosted = try DirectFilter(descriptor, host: .attached, source: "volume#1")
        XCTAssertEqual(hosted.set(0, float: 4), Int32(RAWFX_OK))   // 100 % -> 400 %: logged
        XCTAssertEqual(hosted.set(0, float: 3), Int32(RAWFX_OK))   // within 6 dB: not logged
        let plain = try DirectFilter(descriptor, host: .none)       // the 1.0 path: a NULL host
        XCTAssertEqual(plain.set(0, float: 0.25), Int32(RAWFX_OK))  // would be logged, has no host
        RawFXLog.sync()
        let logged = lines.records.filter { $0.source.hasPrefix("volume") }
        XCTAssertEqual(logged.map(\.severity), [.info])
        XCTAssertEqual(logged.map(\.source), ["volume#1"], "the host names the instance")
        XCTAssertEqual(logged.map(\.message), ["factor 100% -> 400%"])
    }

    // MARK: The entry macro

    /// A plugin whose init/deinit hooks and plugin-file state are visible to the test.
    static let probeSource = #"""
    #define RAWFX_HELPER_MIN_HOST_MINOR PROBE_MIN_MINOR
    #include "rawfx/plugin_helpers.h"

    static int init_calls, deinit_calls, refuse;
    static rawfx_status probe_init(const rawfx_host_info *info, char *error, size_t capacity) {
        (void)info;
        init_calls++;
        if (!refuse) return RAWFX_OK;
        rawfx_format_message(error, capacity, "probe: refused by its own init (%d)", refuse);
        return RAWFX_ERR_UNSUPPORTED;
    }
    static void probe_deinit(void) { deinit_calls++; }

    static const rawfx_param_descriptor probe_params[] = {
        RAWFX_INT_PARAM("count", "Count", "A number.", "", 0, 3, 1, 9),
        RAWFX_BOOL_PARAM("on", "On", "A switch.", RAWFX_PARAM_FLAG_RECONFIGURE, 1),
        RAWFX_STRING_PARAM("label", "Label", "A name.", 0, "probe"),
    };
    static const char *const probe_modes[] = { "a", "b", "c" };
    static const rawfx_param_descriptor probe_mode_params[] = {
        RAWFX_ENUM_PARAM("mode", "Mode", "One of three.", "", 0, 2, probe_modes),
        RAWFX_FLOAT_PARAM("level", "Level", "A level.", "dB", 0, -6.5, -20, 0),
    };
    static const rawfx_filter *probe_create(const rawfx_filter_descriptor *d, const rawfx_host *h, char *e, size_t c) {
        (void)d; (void)h; (void)e; (void)c;
        return NULL;
    }
    static const rawfx_filter_descriptor probe_a = RAWFX_FILTER_DESCRIPTOR(
        "probe_a", "Probe A", "1.0", "First.", RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, probe_params, probe_create);
    static const rawfx_filter_descriptor probe_b = RAWFX_FILTER_DESCRIPTOR(
        "probe_b", "Probe B", "1.0", "Second.", RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, probe_mode_params,
        probe_create);

    RAWFX_PLUGIN_ENTRY_WITH("probe", "2.0", probe_init, probe_deinit, &probe_a, &probe_b)

    RAWFX_EXPORT const char *probe_path(void) { return rawfx_plugin_file_path(); }
    RAWFX_EXPORT const rawfx_host *probe_host(void) { return rawfx_plugin_file_host(); }
    RAWFX_EXPORT int probe_init_calls(void) { return init_calls; }
    RAWFX_EXPORT int probe_deinit_calls(void) { return deinit_calls; }
    RAWFX_EXPORT void probe_refuse(int value) { refuse = value; }
    """#

    private func buildProbe(minimumMinor: Int, cPlusPlus: Bool) throws -> DirectPlugin {
        let source = directory.appendingPathComponent("probe.c")
        try Self.probeSource.write(to: source, atomically: true, encoding: .utf8)
        let name = "probe_\(minimumMinor)_\(cPlusPlus ? "cxx" : "c").so"
        return try DirectPlugin(path: build(source, cPlusPlus: cPlusPlus, defines: ["PROBE_MIN_MINOR=\(minimumMinor)"],
                                            name: name))
    }

    func testEntryMacroDescribesTheFiltersAndTheirParameters() throws {
        for cPlusPlus in [false, true] {
            let probe = try buildProbe(minimumMinor: 0, cPlusPlus: cPlusPlus)
            let entry = probe.entry.pointee
            XCTAssertEqual(entry.struct_size, UInt32(MemoryLayout<rawfx_plugin_entry>.size))
            XCTAssertEqual([entry.abi.major, entry.abi.minor], [UInt32(RAWFX_ABI_MAJOR), UInt32(RAWFX_ABI_MINOR)])
            XCTAssertEqual(String(cString: entry.plugin_name), "probe")
            XCTAssertEqual(String(cString: entry.plugin_version), "2.0")
            XCTAssertEqual(entry.filter_count(), 2)
            XCTAssertNil(entry.filter_descriptor(2))
            let a = try XCTUnwrap(entry.filter_descriptor(0)).pointee, b = try XCTUnwrap(entry.filter_descriptor(1)).pointee
            XCTAssertEqual([String(cString: a.id), String(cString: b.id)], ["probe_a", "probe_b"])
            XCTAssertEqual(a.struct_size, UInt32(MemoryLayout<rawfx_filter_descriptor>.size))
            XCTAssertEqual([a.media_kind, b.media_kind], [UInt32(RAWFX_MEDIA_AUDIO), UInt32(RAWFX_MEDIA_VIDEO)])
            XCTAssertEqual([a.processing, b.processing], [UInt32(RAWFX_PROCESS_IN_PLACE), UInt32(RAWFX_PROCESS_OUT_OF_PLACE)])
            XCTAssertEqual([a.param_count, b.param_count], [3, 2])
            XCTAssertNotNil(a.create)
            XCTAssertNotNil(a.create_with_host)

            // Each initialiser puts every field where the header declares it.
            let count = a.params[0], on = a.params[1], label = a.params[2], mode = b.params[0], level = b.params[1]
            for p in [count, on, label, mode, level] {
                XCTAssertEqual(p.struct_size, UInt32(MemoryLayout<rawfx_param_descriptor>.size))
            }
            XCTAssertEqual(count.type, UInt32(RAWFX_PARAM_INT))
            XCTAssertEqual([count.default_value, count.min_value, count.max_value], [3, 1, 9])
            XCTAssertEqual(String(cString: count.help), "A number.")
            XCTAssertEqual(on.type, UInt32(RAWFX_PARAM_BOOL))
            XCTAssertEqual(on.flags, UInt32(RAWFX_PARAM_FLAG_RECONFIGURE))
            XCTAssertEqual([on.default_value, on.min_value, on.max_value], [1, 0, 1])
            XCTAssertEqual(label.type, UInt32(RAWFX_PARAM_STRING))
            XCTAssertEqual(String(cString: label.default_string), "probe")
            XCTAssertEqual(mode.type, UInt32(RAWFX_PARAM_ENUM))
            XCTAssertEqual(mode.enum_count, 3)
            XCTAssertEqual((0..<3).map { String(cString: mode.enum_values[$0]!) }, ["a", "b", "c"])
            XCTAssertEqual([mode.default_value, mode.min_value, mode.max_value], [2, 0, 2])
            XCTAssertEqual(level.type, UInt32(RAWFX_PARAM_FLOAT))
            XCTAssertEqual([level.default_value, level.min_value, level.max_value], [-6.5, -20, 0])
            XCTAssertEqual(String(cString: level.unit), "dB")
        }
    }

    func testInitChecksTheHostVersionAndKeepsPathAndHost() throws {
        let probe = try buildProbe(minimumMinor: 0, cPlusPlus: false)
        let host = rfx_host_context_create("probe.so", RFX_HOST_LIBRARY)!
        defer { rfx_host_context_destroy(host) }

        // Another major, and a struct too short to hold the version: refused before the hook.
        XCTAssertEqual(probe.initialize(major: 2, minor: 0).message,
                       "probe: needs a host of RawFX ABI 1.0 or a later 1.x; the host speaks 2.0")
        XCTAssertEqual(probe.initialize(major: 1, minor: 1, structSize: 8).message, "probe: the host passed no ABI version")
        XCTAssertEqual(probe.call("probe_init_calls", as: (@convention(c) () -> Int32).self)(), 0)

        // The plugin's own init may refuse; nothing is recorded then.
        probe.call("probe_refuse", as: (@convention(c) (Int32) -> Void).self)(7)
        let refused = probe.initialize(major: 1, minor: 1, path: "/plugins/probe.so", host: rfx_host_context_host(host))
        XCTAssertEqual(refused.status, Int32(RAWFX_ERR_UNSUPPORTED))
        XCTAssertEqual(refused.message, "probe: refused by its own init (7)")
        XCTAssertEqual(probe.path, "")
        probe.call("probe_refuse", as: (@convention(c) (Int32) -> Void).self)(0)

        // A 1.1 host: path and host kept until the last deinit.
        XCTAssertEqual(probe.initialize(major: 1, minor: 1, path: "/plugins/probe.so", host: rfx_host_context_host(host)).status,
                       Int32(RAWFX_OK))
        XCTAssertEqual(probe.path, "/plugins/probe.so")
        XCTAssertEqual(probe.host, rfx_host_context_host(host))
        // A second host initialises the same file (two registries): no longer one host to name.
        XCTAssertEqual(probe.initialize(major: 1, minor: 1, path: "/plugins/probe.so", host: rfx_host_context_host(host)).status,
                       Int32(RAWFX_OK))
        XCTAssertNil(probe.host)
        probe.entry.pointee.deinit()
        XCTAssertNil(probe.host, "deinit does not say which host let go")
        XCTAssertEqual(probe.path, "/plugins/probe.so")
        probe.entry.pointee.deinit()
        XCTAssertEqual(probe.path, "")
        XCTAssertEqual(probe.call("probe_deinit_calls", as: (@convention(c) () -> Int32).self)(), 2)

        // A 1.0 host (1.0 struct size): accepted, with no path and no host.
        XCTAssertEqual(probe.initialize(major: 1, minor: 0, structSize: DirectPlugin.hostInfoSize1_0).status, Int32(RAWFX_OK))
        XCTAssertEqual(probe.path, "")
        XCTAssertNil(probe.host)
        probe.entry.pointee.deinit()
        XCTAssertEqual(probe.call("probe_init_calls", as: (@convention(c) () -> Int32).self)(), 4)
    }

    func testMinimumHostMinorRefusesAnOlderHost() throws {
        for cPlusPlus in [false, true] {
            let probe = try buildProbe(minimumMinor: 1, cPlusPlus: cPlusPlus)
            let old = probe.initialize(major: 1, minor: 0, structSize: DirectPlugin.hostInfoSize1_0)
            XCTAssertEqual(old.status, Int32(RAWFX_ERR_VERSION))
            XCTAssertEqual(old.message, "probe: needs a host of RawFX ABI 1.1 or a later 1.x; the host speaks 1.0")
            XCTAssertEqual(probe.initialize(major: 1, minor: 2).status, Int32(RAWFX_OK), "a newer minor is accepted")
            probe.entry.pointee.deinit()
        }
    }
}

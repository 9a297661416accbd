import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXValidate
import XCTest
@testable import RawFXTestSupport

/// `rawfx validate`: a well-behaved plugin passes every check, each deliberately broken
/// build of Fixtures/broken_plugin.c fails exactly the check its fault breaks, and every
/// shipped plugin passes.
final class ValidatorTests: XCTestCase {
    static let brokenSource = repositoryRoot.appendingPathComponent("Tests/Fixtures/broken_plugin.c")
    /// A small PNG for the watermark's REQUIRED image.
    static let watermarkImage = repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path

    /// Compiles the broken fixture with `defines` into a fresh directory.
    func probe(_ defines: [String]) throws -> String {
        try compileCPlugin(Self.brokenSource, defines: defines, into: temporaryDirectory(), name: "probe.so")
    }

    /// "probe real-time" for every FAIL line.
    func failures(_ report: ValidationReport) -> Set<String> {
        Set(report.results.filter { $0.outcome == .fail }.map { "\($0.subject) \($0.check.rawValue)" })
    }

    func result(_ report: ValidationReport, _ subject: String, _ check: Check) -> CheckResult? {
        report.results.first { $0.subject == subject && $0.check == check }
    }

    /// Every check reported once for the filter, and once more for the file (descriptors, threads).
    func assertComplete(_ report: ValidationReport, filters: [String], file: StaticString = #filePath, line: UInt = #line) {
        for filter in filters {
            XCTAssertEqual(report.results.filter { $0.subject == filter }.map(\.check), Check.allCases,
                           "checks of \(filter)", file: file, line: line)
        }
        XCTAssertEqual(report.results.filter { !filters.contains($0.subject) }.map(\.check), [.descriptors, .threads],
                       file: file, line: line)
    }

    override func setUpWithError() throws {
        // The real-time check needs the counter; without it the fixtures would SKIP, not fail.
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the test binary must link RawFXAllocCounter")
    }

    // MARK: - A well-behaved plugin

    func testWellBehavedProbePassesEveryCheckInEveryVariant() throws {
        for variant in [[], ["PROBE_OUT_OF_PLACE"], ["PROBE_AUDIO"], ["PROBE_AUDIO", "PROBE_OUT_OF_PLACE"]] {
            let report = try PluginValidator.validate(path: probe(variant))
            XCTAssertEqual(failures(report), [], "\(variant): \(report.text)")
            XCTAssertEqual(report.skipped, 0, "\(variant): \(report.text)")
            XCTAssertTrue(report.succeeded)
            assertComplete(report, filters: ["probe"])
            let threads = try XCTUnwrap(result(report, "probe", .threads)).reason
            // The validator is a host: it delivers every on_callback the filter asks for (reset asks).
            let requests = try XCTUnwrap(threads.firstMatch(of: /(\d+) callback requests?, (\d+) on_callback/))
            XCTAssertEqual(requests.1, requests.2, threads)
            XCTAssertGreaterThan(Int(requests.1)!, 0)
            if !variant.contains("PROBE_AUDIO") {
                // Slice jobs really ran through the pool (the probe refuses to process when the
                // host says it is not on the process thread, and to configure when it says it is).
                XCTAssertNotNil(threads.firstMatch(of: /[1-9]\d* thread-pool runs/), threads)
            }
        }
    }

    func testPluginBuiltAgainstTheOneZeroHeaderPassesWithCreate() throws {
        let report = try PluginValidator.validate(path: probe(["PROBE_ABI_1_0"]))
        XCTAssertTrue(report.succeeded, report.text)
        XCTAssertEqual(report.plugin, "rawfx-probe 1.0.0, ABI 1.0")
        XCTAssertTrue(try XCTUnwrap(result(report, "probe", .createDestroy)).reason.contains("with create (no host object)"))
    }

    /// The real-time rules follow the minor a plugin declared (docs/plugin-abi.md): a 1.0
    /// plugin's allocating set_param is a note, since the host never calls it on a live
    /// instance; the same source built for 1.1 fails the real-time check.
    func testAllocatingSetParamIsANoteForAnABI10PluginAndAFailureFor11() throws {
        let old = try PluginValidator.validate(path: probe(["PROBE_ABI_1_0", "BREAK_ALLOC_SET_PARAM"]))
        XCTAssertTrue(old.succeeded, old.text)
        let reason = try XCTUnwrap(result(old, "probe", .realTime)).reason
        XCTAssertTrue(reason.contains("set_param of 'amount' allocated 6 times in 6 calls: allowed for an ABI 1.0 plugin"), reason)
        let new = try PluginValidator.validate(path: probe(["BREAK_ALLOC_SET_PARAM"]))
        XCTAssertEqual(failures(new), ["probe real-time"], new.text)
    }

    func testTheDocumentedExamplesPass() throws {
        let volumeSource = repositoryRoot.appendingPathComponent("docs/examples/volume.c")
        for (source, filter) in [(invertSource, "invert"), (volumeSource, "volume")] {
            let so = try compileCPlugin(source, into: temporaryDirectory(), name: "\(filter).so")
            let report = try PluginValidator.validate(path: so)
            XCTAssertTrue(report.succeeded, report.text)
            assertComplete(report, filters: [filter])
        }
    }

    // MARK: - One broken build per check

    func testEachBrokenBuildFailsExactlyItsOwnCheck() throws {
        let cases: [(defines: [String], check: Check, says: String)] = [
            (["BREAK_DESCRIPTOR"], .descriptors, "parameter 'Amount': id does not follow RAWFX_ID_RULE"),
            (["BREAK_CREATE"], .createDestroy, "create #5 returned NULL without a message"),
            (["BREAK_FORMATS"], .formats, "accepted 1x1 limited, call 1: process returned -2 (RAWFX_ERR_UNSUPPORTED): probe: odd sizes"),
            (["BREAK_PADDING"], .guardBytes, "plane Y, row 1, 1 byte into the row padding"),
            (["BREAK_PAST_PLANE"], .guardBytes, "1 byte past the end of plane V"),
            (["PROBE_AUDIO", "BREAK_PAST_PLANE"], .guardBytes, "wrote outside the block: sample 0 after the 80 frames"),
            (["PROBE_OUT_OF_PLACE", "BREAK_INPUT_WRITE"], .guardBytes, "wrote into its input frame (plane Y, row 0, column 0)"),
            (["BREAK_INPLACE_FORMAT"], .outputFormat, "an in-place filter changed the frame: rotation 0 → 90"),
            (["PROBE_AUDIO", "BREAK_INPLACE_FORMAT"], .outputFormat, "an in-place filter changed the block: frame_count 80 → 40"),
            (["PROBE_OUT_OF_PLACE", "BREAK_OUTPUT_SIZE"], .outputFormat, "the output frame is not the negotiated one: width"),
            (["BREAK_LATENCY_CAP"], .outputFormat, "a latency of 4294967295 frames is over the host's cap of 64 frames (RAWFX_MAX_VIDEO_LATENCY_FRAMES); a host refuses this configure"),
            (["PROBE_AUDIO", "BREAK_LATENCY_CAP"], .outputFormat, "a latency of 4294967295 frames is over the host's cap of 1048576 frames (RAWFX_MAX_AUDIO_FRAMES)"),
            (["BREAK_DETERMINISM"], .determinism, "two fresh instances gave different outputs on the same input (320x240 limited), call 1"),
            (["BREAK_RESET"], .reset, "after reset on the process thread the output differs from a fresh instance's"),
            (["BREAK_ALLOC_PROCESS"], .realTime, "process allocated 10 times in 10 calls (1 in the first call after configure)"),
            (["PROBE_AUDIO", "BREAK_ALLOC_PROCESS"], .realTime, "process allocated 10 times in 10 calls"),
            (["BREAK_ALLOC_SET_PARAM"], .realTime, "set_param of 'amount' (not RECONFIGURE, so real-time) allocated 6 times in 6 calls"),
            // Hidden by warm-up calls before: a lazy buffer made by the first call after configure.
            (["BREAK_ALLOC_FIRST"], .realTime, "process allocated 1 times in 10 calls (1 in the first call after configure)"),
            (["PROBE_AUDIO", "BREAK_ALLOC_FIRST"], .realTime, "process allocated 1 times in 10 calls (1 in the first call after configure)"),
            (["BREAK_LOCK"], .realTime, "process made 13 lock or blocking waits (first: pthread_mutex_lock), the first in first process after configure"),
            (["BREAK_SLEEP"], .realTime, "process made 13 sleeps (first: usleep)"),
            (["PROBE_AUDIO", "BREAK_FILE_IO"], .realTime, "process made 26 file open or writes (first: open)"),
            (["BREAK_THREAD_IN_RESET"], .realTime, "reset made 3 thread starts (first: pthread_create), the first in reset 1 of 3"),
            // 50 ms of work per frame against a 33 ms frame at 30 fps (a generous margin both ways).
            (["BREAK_SLOW"], .budget, "process is too slow for real time: median"),
            // Two instances on two threads, 10 ms between the copy into the static buffer and out of it.
            (["BREAK_SHARED_SCRATCH"], .concurrency, "run in parallel with another instance, the"),
            (["BREAK_SET_PARAM_RESETS"], .reset, "after a real-time set_param(amount=default (85)), the value it already had, the output differs"),
            (["PROBE_AUDIO", "BREAK_SET_PARAM_RESETS"], .reset, "after a real-time set_param(amount=default (85)), the value it already had, the output differs"),
            (["BREAK_TIMESTAMP"], .outputFormat, "an in-place filter changed the frame: timestamp_us 0 → 1"),
            (["PROBE_AUDIO", "BREAK_TIMESTAMP"], .outputFormat, "changed the block's metadata: timestamp_us 0 → 1"),
            (["PROBE_AUDIO", "PROBE_OUT_OF_PLACE", "BREAK_TIMESTAMP"], .outputFormat, "changed the block's metadata: timestamp_us 0 → 1"),
            (["BREAK_ANY_PIXEL_FORMAT"], .formats, "configure accepted pixel format 0x7F00, which no minor of the ABI defines"),
            (["BREAK_DEFAULT_REFUSED"], .parameterExtremes, "set_param refused chroma's own default (default (0)): returned -1 (RAWFX_ERR_INVALID_ARGUMENT): probe: chroma must be on"),
            (["BREAK_LATENCY"], .latency, "reported a latency of 2 frames but output frame n shows input frame n - 0"),
            (["PROBE_AUDIO", "BREAK_LATENCY"], .latency, "reported a latency of 480 frames but the output follows the input by 0 (cross-correlation peak 1.00; early by 480 frames)"),
            (["BREAK_EXTREMES"], .parameterExtremes, "with rows=max (64), then rows=max (64), call 1: process returned -7"),
            (["BREAK_NO_MESSAGE"], .errorMessages, "configure(641x359 limited) returned -2 (RAWFX_ERR_UNSUPPORTED) with an empty get_error message"),
            (["BREAK_POOL_IN_CONFIGURE"], .threads, "called the thread pool's run outside process"),
        ]
        // Locks, sleeps, I/O and thread starts are counted by interposers a sanitizer build
        // leaves out (the sanitizer intercepts those functions); under TSan two threads sharing
        // a static buffer is the race it reports, not a finding of this test.
        let blockingFaults: Set<String> = ["BREAK_LOCK", "BREAK_SLEEP", "BREAK_FILE_IO", "BREAK_THREAD_IN_RESET"]
        for c in cases {
            if rawfx_rt_counter_active() == 0, !blockingFaults.isDisjoint(with: c.defines) { continue }
            if rawfx_built_with_sanitizer() != 0, c.defines.contains("BREAK_SHARED_SCRATCH") { continue }
            let report = try PluginValidator.validate(path: probe(c.defines))
            XCTAssertEqual(failures(report), ["probe \(c.check.rawValue)"], "\(c.defines): \(report.text)")
            XCTAssertEqual(report.skipped, 0, "\(c.defines): \(report.text)")
            XCTAssertFalse(report.succeeded)
            let reason = try XCTUnwrap(result(report, "probe", c.check)).reason
            XCTAssertTrue(reason.contains(c.says), "\(c.defines): \(reason)")
        }
    }

    func testThreadPoolRunFromConfigureNamesTheCall() throws {
        let report = try PluginValidator.validate(path: probe(["BREAK_POOL_IN_CONFIGURE"]))
        let reason = try XCTUnwrap(result(report, "probe", .threads)).reason
        XCTAssertTrue(reason.hasSuffix("first during configure"), reason)
    }

    // MARK: - Files the loader refuses

    func testFilesThatCannotLoadFailDescriptorsWithTheLoadersMessage() throws {
        let dir = temporaryDirectory()
        let text = dir.appendingPathComponent("notes.so").path
        try "not a library".write(toFile: text, atomically: true, encoding: .utf8)
        let noEntry = try compileCPlugin(fixtureSource, defines: ["FIXTURE_NO_ENTRY"], into: dir, name: "noentry.so")
        let major2 = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ABI_MAJOR=2"], into: dir, name: "major2.so")
        let refuses = try compileCPlugin(fixtureSource, defines: ["FIXTURE_REFUSE_HOST"], into: dir, name: "refuses.so")
        let missing = dir.appendingPathComponent("missing.so").path
        let expected: [(String, String)] = [
            (text, "not a loadable shared object"), (noEntry, "exports no rawfx_get_plugin_entry function"),
            (major2, "plugin ABI 2.1 is incompatible with host ABI 1.1 (major versions differ)"),
            (refuses, "the plugin refused this host"), (missing, "no such plugin file"),
        ]
        for (path, says) in expected {
            let report = try PluginValidator.validate(path: path)
            XCTAssertEqual(report.results.count, 1, report.text)
            let line = try XCTUnwrap(report.results.first)
            XCTAssertEqual(line.check, .descriptors)
            XCTAssertEqual(line.outcome, .fail)
            XCTAssertTrue(line.reason.contains(says), line.reason)
            XCTAssertFalse(report.succeeded)
        }
    }

    // MARK: - Options

    func testSettingsAndFilterAreCheckedAgainstTheFile() throws {
        let so = try probe([])
        let wrong: [([String], String?, String)] = [
            (["amount=3"], nil, "expected FILTER.PARAM=VALUE"),
            (["blur.amount=3"], nil, "has no filter 'blur'; it has probe"),
            (["probe.size=3"], nil, "filter 'probe' has no parameter 'size'; it has amount, chroma, rows"),
            (["probe.amount=300"], nil, "--set probe.amount=300: expected an integer from 0 to 255"),
            (["probe.chroma=maybe"], nil, "expected true or false"),
            ([], "blur", "--filter blur: probe.so has no such filter; it has probe"),
        ]
        for (settings, filter, says) in wrong {
            XCTAssertThrowsError(try PluginValidator.validate(path: so, options: ValidationOptions(filter: filter, settings: settings))) {
                XCTAssertTrue("\($0)".contains(says), "\($0)")
            }
        }
        let report = try PluginValidator.validate(path: so, options: ValidationOptions(filter: "probe", settings: ["probe.amount=0", "probe.chroma=on"]))
        XCTAssertTrue(report.succeeded, report.text)
    }

    func testASettingTheFilterRefusesSkipsItsInstanceChecks() throws {
        let report = try PluginValidator.validate(path: probe([]), options: ValidationOptions(settings: ["probe.amount=13"]))
        XCTAssertEqual(report.failed, 0, report.text)
        XCTAssertEqual(report.skipped, Check.instanceChecks.count, report.text)
        XCTAssertEqual(result(report, "probe", .reset)?.reason, "the --set values cannot be applied: set_param(amount=13) "
            + "returned -1 (RAWFX_ERR_INVALID_ARGUMENT): probe: amount 13 is unlucky")
        XCTAssertFalse(report.succeeded)
        var lenient = report
        lenient.allowSkips = true
        XCTAssertTrue(lenient.succeeded)
    }

    // MARK: - The command: isolation, crashes, hangs, shipped plugins

    static var rawfx: URL { CLITests.binary }

    func validateCommand(_ arguments: [String]) throws -> (status: Int32, report: ValidationReport?, stderr: String) {
        let outcome = try runProgram(Self.rawfx, ["validate"] + arguments, directory: repositoryRoot,
                                     environment: ["SWIFT_BACKTRACE": "enable=no"])
        return (outcome.status, try? JSONDecoder().decode(ValidationReport.self, from: outcome.stdout), outcome.stderr)
    }

    func requireCommand() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.rawfx.path) else {
            throw XCTSkip("\(Self.rawfx.path) is not built; run `swift build --product rawfx`")
        }
    }

    func testACrashIsAFailureOfTheCheckItHappenedIn() throws {
        try requireCommand()
        let run = try validateCommand([probe(["BREAK_CRASH"]), "--json"])
        XCTAssertEqual(run.status, 1, run.stderr)
        let report = try XCTUnwrap(run.report, run.stderr)
        XCTAssertEqual(failures(report), ["probe parameter-extremes"], report.text)
        let reason = try XCTUnwrap(result(report, "probe", .parameterExtremes)).reason
        XCTAssertTrue(reason.hasPrefix("crashed: signal 11"), reason)
        XCTAssertTrue(reason.hasSuffix("during: rows=max (64) before configure"), reason)
        // What ran before passed; what would have run after is skipped, saying why.
        for check in [Check.descriptors, .createDestroy, .formats, .determinism, .reset, .realTime] {
            XCTAssertEqual(result(report, "probe", check)?.outcome, .pass, "\(check)")
        }
        for check in [Check.guardBytes, .outputFormat, .errorMessages, .threads] {
            let line = try XCTUnwrap(result(report, "probe", check))
            XCTAssertEqual(line.outcome, .skip)
            XCTAssertTrue(line.reason.hasPrefix("not run: the filter crashed"), line.reason)
        }
        XCTAssertTrue(run.stderr.contains("probe.so: 1 check failed, 4 skipped"), run.stderr)
    }

    func testAHangIsKilledAndFailsItsCheck() throws {
        try requireCommand()
        // The timeout covers the whole filter's run: the checks before the hang must fit in it
        // on a loaded machine, and under a sanitizer they run several times slower.
        let timeout = rawfx_built_with_sanitizer() != 0 ? 30 : 8
        let run = try validateCommand([probe(["BREAK_HANG"]), "--json", "--timeout", "\(timeout)"])
        XCTAssertEqual(run.status, 1, run.stderr)
        let report = try XCTUnwrap(run.report, run.stderr)
        XCTAssertEqual(failures(report), ["probe parameter-extremes"], report.text)
        XCTAssertEqual(result(report, "probe", .parameterExtremes)?.reason,
                       "did not finish within \(timeout) s (killed) during: rows=max (64) before configure")
    }

    /// Loading runs the plugin's code: the command loads the file in a worker first, so a crash,
    /// an exit, a hang or a corrupted heap there is one FAIL line naming the step, and exit 1
    /// (an exit(0) in init used to end `rawfx validate` with status 0 and no output).
    func testLoadingFaultsAreFailuresNamingTheStep() throws {
        try requireCommand()
        let timeout = rawfx_built_with_sanitizer() != 0 ? 20 : 5
        let cases: [(String, String)] = [
            ("BREAK_LOAD_CRASH", "loading failed: crashed: signal 11 (Segmentation fault) during: dlopen (the library's constructors)"),
            ("BREAK_INIT_EXIT", "loading failed: the worker exited with status 0 before loading finished (exit() in the plugin?) during: init"),
            ("BREAK_INIT_HANG", "loading failed: did not finish within \(timeout) s (killed) during: init"),
            ("BREAK_INIT_HEAP", "during: init"),
        ]
        for (define, says) in cases {
            let run = try validateCommand([probe([define]), "--json", "--timeout", "\(timeout)"])
            XCTAssertEqual(run.status, 1, "\(define): \(run.stderr)")
            let report = try XCTUnwrap(run.report, "\(define): \(run.stderr)")
            XCTAssertEqual(report.results.count, 1, report.text)
            let line = try XCTUnwrap(report.results.first)
            XCTAssertEqual(line.check, .descriptors)
            XCTAssertEqual(line.outcome, .fail)
            XCTAssertTrue(line.reason.hasSuffix(says), "\(define): \(line.reason)")
            if define == "BREAK_INIT_HEAP" {
                // glibc aborts on a double free; a sanitizer reports it and ends the worker its own way.
                XCTAssertTrue(line.reason.hasPrefix(rawfx_built_with_sanitizer() != 0 ? "loading failed: " : "loading failed: crashed: signal 6"),
                              line.reason)
            }
        }
    }

    /// Counts and strings from the plugin are bounded: a garbage filter_count is reported, not
    /// walked, and a name with no NUL in 4096 bytes is a problem, not a read past its array.
    func testHugeCountsAndUnterminatedStringsFailDescriptors() throws {
        let huge = try PluginValidator.validate(path: probe(["BREAK_HUGE_COUNT"]))
        XCTAssertEqual(huge.failed, 1, huge.text)
        XCTAssertTrue(huge.results[0].reason.contains("filter_count is 4294967295, over the 4096 any host walks: no descriptor read"),
                      huge.results[0].reason)
        let long = try PluginValidator.validate(path: probe(["BREAK_UNTERMINATED"]))
        XCTAssertEqual(failures(long), ["probe.so descriptors"], long.text)
        XCTAssertTrue(long.results[0].reason.contains("plugin_name is longer than 4096 bytes (not NUL-terminated?)"), long.results[0].reason)
    }

    /// --budget-percent reaches the worker: the 50 ms frames of BREAK_SLOW fit 400 % of a 30 fps
    /// frame (133 ms); a budget that is not a positive number is a usage error.
    func testBudgetPercentIsTheCommandsOption() throws {
        try requireCommand()
        let so = try probe(["BREAK_SLOW"])
        let wide = try validateCommand([so, "--json", "--budget-percent", "400"])
        let report = try XCTUnwrap(wide.report, wide.stderr)
        XCTAssertEqual(wide.status, 0, report.text)
        let line = try XCTUnwrap(result(report, "probe", .budget)).reason
        XCTAssertTrue(line.contains("(400 % of 33 ms, the frame at 30 fps)"), line)
        let wrong = try validateCommand([so, "--budget-percent", "0"])
        XCTAssertEqual(wrong.status, 64, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("--budget-percent must be more than 0"), wrong.stderr)
    }

    static let textCaption = "text.text=rawfx validate: مرحبا بالعالم"

    func testEveryShippedPluginPasses() throws {
        try requireCommand()
        let libraries = builtPlugins.libraries.map(\.path).sorted()
        XCTAssertEqual(libraries.map { fileName($0) },
                       ["libRawFXBasics.so", "libRawFXSpeech.so", "libRawFXSpeex.so", "libRawFXText.so", "libRawFXWatermark.so",
                        "libRawFXYUV.so"])
        for path in libraries {
            // dfn and rnnoise open their PyPI wheels' libraries at create; without them (not
            // bootstrapped) every instance check would fail for that reason alone.
            if path.hasSuffix("libRawFXSpeech.so"), (try? AudioChain("dfn,rnnoise", registry: builtPlugins)) == nil {
                print("rawfx validate libRawFXSpeech.so: skipped, the speech wheels are not installed (scripts/bootstrap.sh)")
                continue
            }
            var arguments = [path, "--json"]
            if path.hasSuffix("libRawFXWatermark.so") { arguments += ["--set", "watermark.image=\(Self.watermarkImage)"] }
            // The caption is empty by default: validate the text filter drawing one, right to left too.
            if path.hasSuffix("libRawFXText.so") { arguments += ["--set", Self.textCaption, "--set", "text.box=true"] }
            // dfn loads DeepFilterNet's model (0.8 s, several times that under a sanitizer's
            // malloc) for each of the ~160 states validate makes: 6.4 min under ASan on 2 cores.
            // Under a sanitizer only rnnoise is validated (the same stage.c: resampling, FIFOs,
            // formats); dfn's worker and spares run under the sanitizers in SpeechPluginTests,
            // and dfn is validated in the plain run and by CI's `rawfx validate` loop.
            if path.hasSuffix("libRawFXSpeech.so"), rawfx_built_with_sanitizer() != 0 { arguments += ["--filter", "rnnoise"] }
            let run = try validateCommand(arguments)
            let report = try XCTUnwrap(run.report, run.stderr)
            XCTAssertEqual(run.status, 0, report.text)
            XCTAssertEqual(report.failed + report.skipped, 0, report.text)
            let filters = Set(report.results.map(\.subject)).subtracting([fileName(path)])
            assertComplete(report, filters: Array(filters))
            print("rawfx validate \(fileName(path)): \(filters.count) filters, \(report.results.count) lines in "
                  + String(format: "%.2f s", report.seconds))
        }
    }

    func testARequiredParameterWithoutValueSkipsAndSkipsFailUnlessAllowed() throws {
        try requireCommand()
        let watermark = try XCTUnwrap(builtPlugins.libraries.map(\.path).first { $0.hasSuffix("libRawFXWatermark.so") })
        let strict = try validateCommand([watermark, "--json"])
        XCTAssertEqual(strict.status, 1)
        let report = try XCTUnwrap(strict.report)
        XCTAssertEqual(report.failed, 0)
        XCTAssertEqual(report.skipped, Check.instanceChecks.count)
        XCTAssertEqual(result(report, "watermark", .formats)?.reason,
                       "needs a value for 'image' (REQUIRED, no default): pass --set watermark.image=VALUE")
        let lenient = try validateCommand([watermark, "--allow-skips"])
        XCTAssertEqual(lenient.status, 0, lenient.stderr)
    }

    func testTextReportHasOneLinePerCheckAndASummary() throws {
        try requireCommand()
        let so = try probe(["BREAK_RESET"])
        let dir = temporaryDirectory()
        let out = dir.appendingPathComponent("out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = Self.rawfx
        process.arguments = ["validate", so, "--in-process"]
        let handle = try FileHandle(forWritingTo: out)
        process.standardOutput = handle
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try handle.close()
        let lines = String(decoding: try Data(contentsOf: out), as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(process.terminationStatus, 1)
        XCTAssertEqual(lines.first, "rawfx validate \(so)")
        XCTAssertEqual(lines.count, 1 + 16 + 1, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("FAIL probe reset: after reset on the process thread") })
        XCTAssertEqual(lines.filter { $0.hasPrefix("PASS ") }.count, 15)
        XCTAssertTrue(lines.last!.hasPrefix("FAILED: 15 passed, 1 failed, 0 skipped in "), lines.last!)
    }
}

private func fileName(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }

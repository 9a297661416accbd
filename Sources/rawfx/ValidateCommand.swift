#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import RawFX
import RawFXValidate

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a plugin file against the rawfx.h contract: one line per check.",
        discussion: """
        Loads the file as rawfx.h describes (not through the plugin path), checks every \
        descriptor, then drives each filter as a host would: create/destroy, odd sizes and many \
        rates, guard bytes around every plane, in-place and out-of-place output, determinism, \
        reset and renegotiation, allocations, locks, sleeps, I/O and thread starts in the real-time \
        calls (the first process included), process time against a budget, measured latency, parameter extremes, \
        error messages, and the threads of every host call. Each line reads \
        'PASS|FAIL|SKIP <filter> <check>: <reason>'; the exit status is 1 when a check fails \
        (or is skipped, without --allow-skips). Each filter runs in its own process, so a crash \
        or a hang is reported as a FAIL of the check it happened in. See docs/validate.md.

        Examples:
          rawfx validate .build/debug/libRawFXYUV.so
          rawfx validate my_plugin.so --filter blur --json
          rawfx validate .build/debug/libRawFXWatermark.so --set watermark.image=docs/images/before-640x360.png
        """)

    @Argument(help: ArgumentHelp("The plugin file.", valueName: "plugin.so"))
    var plugin: String

    @Option(help: ArgumentHelp("Only this filter of the file.", valueName: "id"))
    var filter: String?

    @Flag(help: "Print the report as one JSON document instead of text.")
    var json = false

    @Option(name: .customLong("set"),
            help: ArgumentHelp("A parameter value for every instance of a filter (a REQUIRED one, say); repeatable.",
                               valueName: "filter.param=value"))
    var settings: [String] = []

    @Flag(help: "SKIP lines (a filter that needs --set, no allocation counter) do not fail the run.")
    var allowSkips = false

    @Flag(help: "Run every filter in this process: quicker to debug, but a crash ends the run.")
    var inProcess = false

    @Option(help: ArgumentHelp("Threads of the pool offered as rawfx.thread-pool/1, this one included.", valueName: "n"))
    var threads = 2

    @Option(help: ArgumentHelp("Seconds one filter may take before it counts as hung.", valueName: "seconds"))
    var timeout: Double = 300

    @Option(help: ArgumentHelp("How long one process call may take, in percent of the frame's or block's duration (median of the timed calls).",
                               valueName: "percent"))
    var budgetPercent: Double = 100

    @Option(help: ArgumentHelp("The video frame rate the budget assumes (a frame lasts 1/rate s).", valueName: "fps"))
    var frameRate: Double = 30

    /// This process is a worker of an isolated run (one filter, a JSON line per step).
    @Flag(help: .hidden)
    var worker = false

    /// With --worker: only load the file (constructors, init, descriptors) and deinit it.
    @Flag(help: .hidden)
    var loadOnly = false

    func validate() throws {
        guard threads >= 1 else { throw ArgumentParser.ValidationError("--threads must be at least 1") }
        guard timeout > 0 else { throw ArgumentParser.ValidationError("--timeout must be more than 0 seconds") }
        guard budgetPercent > 0, budgetPercent.isFinite else {
            throw ArgumentParser.ValidationError("--budget-percent must be more than 0 (100 is the whole frame's duration)")
        }
        guard frameRate > 0, frameRate <= 1000 else { throw ArgumentParser.ValidationError("--frame-rate must be more than 0 and at most 1000") }
    }

    func run() throws {
        let options = ValidationOptions(filter: filter, settings: settings, allowSkips: allowSkips, threads: threads,
                                        timeoutSeconds: timeout, budgetPercent: budgetPercent, frameRate: frameRate)
        if worker { Foundation.exit(PluginValidator.runWorker(path: plugin, options: options, loadOnly: loadOnly)) }
        // The heading comes with the first lines, so a command-line error prints nothing else.
        var headed = false
        let printLines: ([CheckResult]) -> Void = { lines in
            guard !json else { return }
            if !headed { print("rawfx validate \(terminalSafe(plugin))") }
            headed = true
            for line in lines { print(line.line) }
            fflush(nil)
        }
        let report: ValidationReport
        do {
            if inProcess {
                report = try PluginValidator.validate(path: plugin, options: options, progress: printLines)
            } else {
                let executable = Bundle.main.executableURL?.resolvingSymlinksInPath().path ?? CommandLine.arguments[0]
                let worker = [executable, "validate", plugin, "--worker", "--threads", String(threads),
                              "--budget-percent", String(budgetPercent), "--frame-rate", String(frameRate)]
                    + settings.flatMap { ["--set", $0] }
                report = try PluginValidator.validateIsolated(path: plugin, options: options, workerCommand: worker,
                                                              progress: printLines)
            }
        } catch {
            throw CLIError(error.message, exitCode: 64)
        }
        print(json ? report.json : report.summaryLine, terminator: json ? "" : "\n")
        guard report.succeeded else {
            throw CLIError("\(plugin): \(report.failed) check\(report.failed == 1 ? "" : "s") failed, \(report.skipped) skipped")
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RawFX
import RawFXRuntime
import Synchronization

/// How `rawfx validate` runs.
public struct ValidationOptions: Sendable {
    /// Only this filter of the file (its `descriptors` line and the file's lines still come).
    public var filter: String?
    /// `FILTER.PARAM=VALUE` values every instance of FILTER gets (a REQUIRED path, say).
    public var settings: [String]
    /// SKIP lines do not fail the run.
    public var allowSkips: Bool
    /// Threads of the pool behind "rawfx.thread-pool/1", the calling thread included.
    public var threads: Int
    /// Instances the create-destroy check makes.
    public var createCycles: Int
    /// Seconds a filter's worker process may take (isolated runs only).
    public var timeoutSeconds: Double
    /// How long a process call may take (the median of the timed ones), in percent of the
    /// frame's duration (1 / frameRate) or the block's (frames / rate).
    public var budgetPercent: Double
    /// The video frame rate the budget assumes.
    public var frameRate: Double

    public init(filter: String? = nil, settings: [String] = [], allowSkips: Bool = false, threads: Int = 2,
                createCycles: Int = 200, timeoutSeconds: Double = 300, budgetPercent: Double = 100, frameRate: Double = 30) {
        self.budgetPercent = budgetPercent
        self.frameRate = frameRate
        self.filter = filter
        self.settings = settings
        self.allowSkips = allowSkips
        self.threads = threads
        self.createCycles = createCycles
        self.timeoutSeconds = timeoutSeconds
    }
}

/// The conformance checker behind `rawfx validate`: loads a plugin file the way rawfx.h
/// describes (dlopen, `rawfx_get_plugin_entry`, `init` with a host), checks every
/// descriptor, then drives each filter as a host would and reports one line per check.
/// docs/validate.md describes the checks.
public enum PluginValidator {
    /// Validates in this process: a plugin that crashes takes the caller with it. The
    /// executable must link RawFXAllocCounter for the real-time check (otherwise it SKIPs).
    public static func validate(path: String, options: ValidationOptions = ValidationOptions(),
                                progress: ([CheckResult]) -> Void = { _ in }) throws(ValidatorError) -> ValidationReport {
        try run(path: path, options: options, progress: progress) { file, description, settings in
            var results: [CheckResult] = []
            FilterValidation(description: description, settings: settings, createCycles: options.createCycles,
                             budget: Budget(percent: options.budgetPercent, frameRate: options.frameRate),
                             begin: { _, _ in }, emit: { results.append($0) }).run()
            return results
        }
    }

    /// Validates each filter in a child process, `workerCommand` plus `--filter ID` (the
    /// `rawfx validate … --worker` command), so that a crash or a hang becomes a FAIL line of
    /// the check it happened in and the other filters still run.
    public static func validateIsolated(path: String, options: ValidationOptions = ValidationOptions(),
                                        workerCommand: [String],
                                        progress: ([CheckResult]) -> Void = { _ in }) throws(ValidatorError) -> ValidationReport {
        // Loading runs the plugin's code (constructors, init, the descriptor walk): a worker
        // does it first, so a crash, a hang or an exit there is a FAIL line, not this process's end.
        let start = DispatchTime.now()
        let probe = WorkerProcess(command: workerCommand + ["--load-only"], filter: "", timeout: options.timeoutSeconds).execute()
        if !probe.loaded {
            let why = probe.ended ?? "the worker exited with status 0 before loading finished (exit() in the plugin?)"
            let line = CheckResult(subject: RawFXValidate.fileName(path), check: .descriptors, outcome: .fail,
                                   reason: "loading failed: \(why) during: \(probe.current?.step ?? "start-up")")
            progress([line])
            return ValidationReport(path: path, plugin: nil, results: [line],
                                    seconds: Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9,
                                    allowSkips: options.allowSkips)
        }
        return try run(path: path, options: options, progress: progress) { _, description, _ in
            WorkerProcess(command: workerCommand + ["--filter", description.id], filter: description.id,
                          timeout: options.timeoutSeconds).run()
        }
    }

    /// The child's side of `validateIsolated`: validates `options.filter` and streams each
    /// step and result as a JSON line on what was stdout; stdout itself goes to stderr, so
    /// a plugin's printf cannot break the stream. Returns the exit status.
    public static func runWorker(path: String, options: ValidationOptions, loadOnly: Bool = false) -> Int32 {
        let stream = dup(STDOUT_FILENO)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        func send(_ message: WorkerMessage) {
            guard let data = try? JSONEncoder().encode(message) else { return }
            var bytes = [UInt8](data)
            bytes.append(10)
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { write(stream, $0.baseAddress! + done, $0.count - done) }
                if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
        rfx_runtime_set_thread_count(UInt32(clamping: options.threads))
        if loadOnly {
            // Every step of loading, then the file's deinit: the parent loads the file itself
            // only once this worker has come through all of it.
            let step: (String) -> Void = { send(WorkerMessage(begin: WorkerMessage.Step(check: .descriptors, step: $0))) }
            if case .success(let file) = PluginFile.load(path: path, step: step) {
                step("deinit")
                file.close()
            }
            send(WorkerMessage(loaded: true))
            return 0
        }
        guard case .success(let file) = PluginFile.load(path: path), let id = options.filter,
              let description = file.filters.first(where: { $0.id == id }),
              let settings = try? parseSettings(options.settings, file: file)[id] ?? [] else { return 3 }
        FilterValidation(description: description, settings: settings, createCycles: options.createCycles,
                             budget: Budget(percent: options.budgetPercent, frameRate: options.frameRate),
                         begin: { send(WorkerMessage(begin: WorkerMessage.Step(check: $0, step: $1))) },
                         emit: { send(WorkerMessage(result: $0)) }).run()
        file.close()
        rfx_runtime_sync()
        return 0
    }

    /// Loads the file, reports its lines, and has `validateFilter` check each selected filter.
    private static func run(path: String, options: ValidationOptions, progress: ([CheckResult]) -> Void,
                            validateFilter: (PluginFile, FilterDescription, [Setting]) -> [CheckResult])
        throws(ValidatorError) -> ValidationReport {
        let start = DispatchTime.now()
        func seconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }
        // The pool is the process's: give it back as it was (tests share the process).
        let threadsBefore = rfx_runtime_thread_count()
        rfx_runtime_set_thread_count(UInt32(clamping: options.threads))
        defer { rfx_runtime_set_thread_count(threadsBefore) }
        let nullHostBefore = ValidatorHost.nullHostCalls.load(ordering: .relaxed)
        let file: PluginFile
        switch PluginFile.load(path: path) {
        case .failure(let error):
            let line = CheckResult(subject: RawFXValidate.fileName(path), check: .descriptors, outcome: .fail,
                                   reason: error.description)
            progress([line])
            return ValidationReport(path: path, plugin: nil, results: [line], seconds: seconds(), allowSkips: options.allowSkips)
        case .success(let loaded):
            file = loaded
        }
        defer { file.close() }
        let settings = try parseSettings(options.settings, file: file)
        var selected = file.filters
        if let only = options.filter {
            selected = file.filters.filter { $0.id == only }
            guard !selected.isEmpty else {
                throw ValidatorError("--filter \(only): \(file.fileName) has no such filter; it has \(file.filters.map(\.id).joined(separator: ", "))")
            }
        }
        var results = [file.descriptorsResult]
        progress(results)
        for description in selected {
            var findings = Findings()
            description.problems.forEach { findings.fail($0) }
            let count = description.parameters.count
            let block = [findings.result(description.id, .descriptors, passing:
                "ids, names, \(count) parameter\(count == 1 ? "" : "s") (ranges, defaults, enum values) and struct sizes follow rawfx.h")]
                + validateFilter(file, description, settings[description.id] ?? [])
                    .sorted { Check.allCases.firstIndex(of: $0.check)! < Check.allCases.firstIndex(of: $1.check)! }
            results += block
            progress(block)
        }
        file.close()
        rfx_runtime_sync()
        var threads = Findings()
        let usage = file.libraryHost.usage
        usage.violationLines.forEach { threads.fail($0) }
        let nullHost = ValidatorHost.nullHostCalls.load(ordering: .relaxed) - nullHostBefore
        if nullHost > 0 { threads.fail("called a host function with a NULL host \(times(nullHost))") }
        let fileLine = threads.result(file.fileName, .threads, passing: "init and deinit with the file's host: \(usage.summary)")
        results.append(fileLine)
        progress([fileLine])
        return ValidationReport(path: file.path, plugin: file.summary, results: results, seconds: seconds(),
                                allowSkips: options.allowSkips)
    }

    /// `FILTER.PARAM=VALUE` texts, checked against the file's descriptors, by filter id.
    static func parseSettings(_ texts: [String], file: PluginFile) throws(ValidatorError) -> [String: [Setting]] {
        var settings: [String: [Setting]] = [:]
        for text in texts {
            guard let equals = text.firstIndex(of: "="), let dot = text[..<equals].firstIndex(of: ".") else {
                throw ValidatorError("--set '\(text)': expected FILTER.PARAM=VALUE, e.g. watermark.image=logo.png")
            }
            let filterID = String(text[..<dot]), parameterID = String(text[text.index(after: dot)..<equals])
            let value = String(text[text.index(after: equals)...])
            guard let filter = file.filters.first(where: { $0.id == filterID }) else {
                throw ValidatorError("--set '\(text)': \(file.fileName) has no filter '\(filterID)'; it has \(file.filters.map(\.id).joined(separator: ", "))")
            }
            guard let parameter = filter.parameters.first(where: { $0.id == parameterID }) else {
                throw ValidatorError("--set '\(text)': filter '\(filterID)' has no parameter '\(parameterID)'; it has "
                    + (filter.parameters.isEmpty ? "none" : filter.parameters.map(\.id).joined(separator: ", ")))
            }
            let setting = Setting(parameter: parameter, value: try parameter.parse(value, filter: filterID))
            settings[filterID, default: []].removeAll { $0.parameter.index == parameter.index }
            settings[filterID, default: []].append(setting)
        }
        return settings
    }
}

/// One line of the worker's stream: a step it begins, or a check's result.
struct WorkerMessage: Codable {
    struct Step: Codable {
        var check: Check
        var step: String
    }
    var begin: Step?
    var result: CheckResult?
    /// The load-only worker came through loading (a refusal included) and deinit.
    var loaded: Bool?

    init(begin: Step? = nil, result: CheckResult? = nil, loaded: Bool? = nil) {
        self.begin = begin
        self.result = result
        self.loaded = loaded
    }
}

/// A worker process validating one filter, read line by line; a crash, an exit or a hang
/// is pinned on the step in progress.
struct WorkerProcess {
    let command: [String]
    let filter: String
    let timeout: Double

    /// Set from the timer's thread when the worker is killed for taking too long.
    private final class Deadline: Sendable {
        let passed = Atomic<Bool>(false)
    }

    /// What a worker reported and how it ended.
    struct Execution {
        var results: [Check: CheckResult] = [:]
        var current: WorkerMessage.Step?
        /// "crashed: signal 11 (…)", "did not finish within …", "the worker exited with status 3", or nil.
        var ended: String?
        var loaded = false
        var startFailure: String?
    }

    func run() -> [CheckResult] {
        let execution = execute()
        if let failure = execution.startFailure {
            return Check.instanceChecks.map {
                CheckResult(subject: filter, check: $0, outcome: .skip, reason: "could not start a worker process: \(failure)")
            }
        }
        let results = execution.results, current = execution.current
        var ended = execution.ended
        if ended == nil && results.count < Check.instanceChecks.count {
            ended = "the worker exited with status 0 before its last check (exit() in the plugin?)"
        }
        return lines(results: results, current: current, ended: ended)
    }

    /// Runs the worker to its end, reading its lines.
    func execute() -> Execution {
        var execution = Execution()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        do {
            try process.run()
        } catch {
            execution.startFailure = "\(error)"
            execution.ended = "could not start a worker process: \(error)"
            return execution
        }
        let deadline = Deadline()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if process.isRunning {
                deadline.passed.store(true, ordering: .relaxed)
                kill(pid, SIGKILL)
            }
        }
        var results: [Check: CheckResult] = [:]
        var current: WorkerMessage.Step?
        var buffer = Data()
        let decoder = JSONDecoder()
        while true {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffer.append(data)
            while let newline = buffer.firstIndex(of: 10) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                guard let message = try? decoder.decode(WorkerMessage.self, from: line) else { continue }
                if let step = message.begin { current = step }
                if let result = message.result { results[result.check] = result }
                if message.loaded == true { execution.loaded = true }
            }
        }
        process.waitUntilExit()
        let ended: String?
        if deadline.passed.load(ordering: .relaxed) {
            ended = "did not finish within \(Int(timeout)) s (killed)"
        } else if process.terminationReason == .uncaughtSignal {
            let signal = process.terminationStatus
            ended = "crashed: signal \(signal) (\(strsignal(signal).map { String(cString: $0) } ?? "unknown"))"
        } else if process.terminationStatus != 0 {
            ended = "the worker exited with status \(process.terminationStatus)"
        } else {
            ended = nil
        }
        execution.results = results
        execution.current = current
        execution.ended = ended
        return execution
    }

    /// One line per instance check, a crash, an exit or a hang pinned on the step in progress.
    private func lines(results: [Check: CheckResult], current: WorkerMessage.Step?, ended: String?) -> [CheckResult] {
        // The check a crash, exit or hang is pinned on: the one in progress, or the first
        // that had not reported (a step outside any check).
        var failing: Check?
        if ended != nil {
            failing = current.map(\.check).flatMap { results[$0] == nil ? $0 : nil }
                ?? Check.instanceChecks.first { results[$0] == nil }
        }
        var lines: [CheckResult] = []
        for check in Check.instanceChecks {
            if let result = results[check] {
                lines.append(result)
            } else if let ended, check == failing {
                lines.append(CheckResult(subject: filter, check: check, outcome: .fail,
                                         reason: "\(ended) during: \(current?.step ?? "start-up")"))
            } else {
                let why = ended.map { "not run: the filter \($0) in \(failing?.rawValue ?? "an earlier check")" }
                    ?? "not reported by the worker"
                lines.append(CheckResult(subject: filter, check: check, outcome: .skip, reason: why))
            }
        }
        if let ended, failing == nil, let last = lines.indices.last {
            // Every check reported: it ended badly afterwards (destroying, closing the file).
            lines[last] = CheckResult(subject: filter, check: lines[last].check, outcome: .fail,
                                      reason: "\(ended) after its last check (while closing)")
        }
        return lines
    }
}

import Foundation
import RawFX

/// One conformance check of `rawfx validate`, in the order they are reported.
/// docs/validate.md says what each one does and why.
public enum Check: String, CaseIterable, Codable, Sendable {
    case descriptors
    case createDestroy = "create-destroy"
    case formats
    case guardBytes = "guard-bytes"
    case outputFormat = "output-format"
    case determinism
    case reset
    case realTime = "real-time"
    case budget
    case latency
    case concurrency
    case parameterExtremes = "parameter-extremes"
    case errorMessages = "error-messages"
    case threads

    /// The checks that run instances of a filter (every check but `descriptors`).
    public static let instanceChecks: [Check] = allCases.filter { $0 != .descriptors }
}

public enum Outcome: String, Codable, Sendable {
    case pass, fail, skip

    /// `PASS`, `FAIL` or `SKIP`, as the text report spells it.
    public var label: String { rawValue.uppercased() }
}

/// One line of the report: `PASS|FAIL|SKIP <subject> <check>: <reason>`.
public struct CheckResult: Codable, Hashable, Sendable {
    /// A filter id, or the plugin file's name for the lines about the file itself.
    public var subject: String
    public var check: Check
    public var outcome: Outcome
    public var reason: String

    /// `subject` and `reason` carry bytes the plugin chose (its id, names, messages): they
    /// are escaped here (`terminalSafe`), so no plugin can forge or hide a line of the report,
    /// in text or JSON.
    public init(subject: String, check: Check, outcome: Outcome, reason: String) {
        self.subject = terminalSafe(subject)
        self.check = check
        self.outcome = outcome
        self.reason = terminalSafe(reason)
    }

    public var line: String { "\(outcome.label) \(subject) \(check.rawValue): \(reason)" }
}

/// Everything `rawfx validate` found in one plugin file.
public struct ValidationReport: Codable, Sendable {
    public var path: String
    /// "rawfx-yuv 1.0.0, ABI 1.1", or nil when the file could not be loaded.
    public var plugin: String?
    public var results: [CheckResult]
    public var seconds: Double
    /// Whether SKIP lines are allowed (`--allow-skips`); otherwise each one fails the run.
    public var allowSkips: Bool

    public var passed: Int { results.count { $0.outcome == .pass } }
    public var failed: Int { results.count { $0.outcome == .fail } }
    public var skipped: Int { results.count { $0.outcome == .skip } }
    /// True when nothing failed, and nothing was skipped unless skips are allowed.
    public var succeeded: Bool { failed == 0 && (allowSkips || skipped == 0) }

    public var summaryLine: String {
        let verdict = succeeded ? "OK" : "FAILED"
        let skips = skipped == 0 ? "" : allowSkips ? " (allowed)" : " (each counts as a failure; --allow-skips to allow)"
        return "\(verdict): \(passed) passed, \(failed) failed, \(skipped) skipped\(skips) in "
            + String(format: "%.1f s", seconds)
    }

    /// The report as text: a heading, one line per result, the summary.
    public var text: String {
        var lines = ["rawfx validate \(path)" + (plugin.map { " (\($0))" } ?? "")]
        lines += results.map(\.line)
        lines.append(summaryLine)
        return lines.joined(separator: "\n") + "\n"
    }

    private enum Keys: String, CodingKey { case path, plugin, results, seconds, allowSkips, passed, failed, skipped, succeeded }

    public init(path: String, plugin: String?, results: [CheckResult], seconds: Double, allowSkips: Bool) {
        self.path = terminalSafe(path)
        self.plugin = plugin.map(terminalSafe)
        self.results = results
        self.seconds = seconds
        self.allowSkips = allowSkips
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        path = try c.decode(String.self, forKey: .path)
        plugin = try c.decodeIfPresent(String.self, forKey: .plugin)
        results = try c.decode([CheckResult].self, forKey: .results)
        seconds = try c.decode(Double.self, forKey: .seconds)
        allowSkips = try c.decode(Bool.self, forKey: .allowSkips)
    }

    /// Also writes the counts and the verdict, so a script need not recount.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(path, forKey: .path)
        try c.encodeIfPresent(plugin, forKey: .plugin)
        try c.encode(results, forKey: .results)
        try c.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try c.encode(allowSkips, forKey: .allowSkips)
        try c.encode(passed, forKey: .passed)
        try c.encode(failed, forKey: .failed)
        try c.encode(skipped, forKey: .skipped)
        try c.encode(succeeded, forKey: .succeeded)
    }

    /// The report as one JSON document (`--json`).
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self) + "\n"
    }
}

/// A reason to stop before any check runs: a `--set` or `--filter` that does not fit the file.
public struct ValidatorError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Why a step could not be done, for the line of the check that needed it.
struct StepFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// "1 frame", "3 frames".
func plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
/// "once", "3 times".
func times(_ n: Int) -> String { n == 1 ? "once" : "\(n) times" }

/// Collects the problems one check finds across many steps and turns them into its line:
/// the first few problems (one example of each kind), and how many more there were.
struct Findings {
    private(set) var problems: [String] = []
    private(set) var count = 0
    private var kinds = Set<String>()
    var notes: [String] = []

    /// A problem; one of a `kind` already shown is only counted.
    mutating func fail(_ problem: String, kind: String? = nil) {
        count += 1
        if let kind, !kinds.insert(kind).inserted { return }
        if problems.count < 3 { problems.append(problem) }
    }

    var isEmpty: Bool { count == 0 }

    func result(_ subject: String, _ check: Check, passing: String) -> CheckResult {
        guard count > 0 else {
            let reason = ([passing] + notes).joined(separator: "; ")
            return CheckResult(subject: subject, check: check, outcome: .pass, reason: reason)
        }
        var reason = problems.joined(separator: "; ")
        if count > problems.count { reason += "; and \(count - problems.count) more like \(problems.count == 1 ? "it" : "these")" }
        return CheckResult(subject: subject, check: check, outcome: .fail, reason: reason)
    }
}

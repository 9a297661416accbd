#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXRuntime

/// A parameter value the user gave with `--set FILTER.PARAM=VALUE`.
struct Setting {
    let parameter: ParameterInfo
    let value: TrialValue
}

/// The instance-level checks of one filter (everything but `descriptors`), in one process.
///
/// Passes share their findings: every call that processes a frame also checks guard bytes
/// and the frame struct, and every failing call has its message checked, so `guard-bytes`,
/// `output-format` and `error-messages` cover all passes and are reported last.
final class FilterValidation {
    /// Formats the `formats` pass configures (rawfx validate's fixed list: odd and large
    /// sizes, both ranges; 8 kHz to 192 kHz, mono to 5.1).
    static let videoFormats: [VideoFormat] = [(1, 1), (2, 2), (3, 40), (641, 359), (1920, 1080)].flatMap { size in
        [ColorRange.limited, .full].map { VideoFormat(width: size.0, height: size.1, colorRange: $0) }
    }
    static let audioFormats: [AudioFormat] = [8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000, 192000].flatMap { rate in
        [1, 2, 6].map { AudioFormat(sampleRate: rate, channels: $0) }
    }
    /// Preferred formats for the other passes (the first the filter accepts); then the
    /// accepted formats of the list.
    static let preferredVideo = [VideoFormat(width: 320, height: 240)]
    static let preferredAudio = [AudioFormat(sampleRate: 48000, channels: 1), AudioFormat(sampleRate: 48000, channels: 2),
                                 AudioFormat(sampleRate: 16000, channels: 1)]
    /// Frames per sequence in the comparisons.
    static let sequenceLength = 6

    let description: FilterDescription
    let settings: [Setting]
    let createCycles: Int
    let budget: Budget
    private let begin: (Check, String) -> Void
    private let emit: (CheckResult) -> Void
    private let ledger = InstanceLedger()
    private var guards = Findings()
    private var outputFormat = Findings()
    private var reported = Set<Check>()
    /// Formats the filter accepted in the formats pass, in list order, and those of them it
    /// then processed without a failure.
    private var accepted: [StreamFormat] = []
    private var processed: [StreamFormat] = []
    private var working: StreamFormat?
    private var deterministic = true
    /// A fresh instance's output on the reference sequence (the determinism pass's first run).
    private var freshOutputs: [Captured] = []

    private var id: String { description.id }
    private var processing: Processing { description.processing! }

    /// `begin(check, step)` is called before each step (a worker streams it, so that a crash
    /// is pinned on its step); `emit` once per check, as soon as its line is final.
    init(description: FilterDescription, settings: [Setting], createCycles: Int, budget: Budget = Budget(),
         begin: @escaping (Check, String) -> Void, emit: @escaping (CheckResult) -> Void) {
        self.description = description
        self.settings = settings
        self.createCycles = createCycles
        self.budget = budget
        self.begin = begin
        self.emit = emit
    }

    private func report(_ result: CheckResult) {
        reported.insert(result.check)
        emit(result)
    }

    private func skipRemaining(_ reason: String) {
        for check in Check.instanceChecks where !reported.contains(check) {
            report(CheckResult(subject: id, check: check, outcome: .skip, reason: reason))
        }
    }

    /// Runs every instance-level check and reports each one.
    func run() {
        if let why = description.unusable {
            skipRemaining("no instance can be made: \(why) (see descriptors)")
            return
        }
        let given = Set(settings.map(\.parameter.index))
        if let needed = description.parameters.first(where: { $0.needsValue && !given.contains($0.index) }) {
            skipRemaining("needs a value for '\(needed.id)' (REQUIRED, no default): pass --set \(id).\(needed.id)=VALUE")
            return
        }
        checkSettings()
        guard reported.isEmpty else { return }
        checkCreateDestroy()
        checkFormats()
        if working != nil {
            checkDeterminism()
            checkReset()
            checkRealTime()
            checkLatency()
            checkConcurrency()
            checkParameterExtremes()
        }
        finish()
    }

    /// The user's values must be accepted, or nothing else can run.
    private func checkSettings() {
        guard !settings.isEmpty else { return }
        switch newInstance(applying: settings) {
        case .failure(let failure):
            skipRemaining("the --set values cannot be applied: \(failure)")
        case .success(let instance):
            instance.destroy()
        }
    }

    /// Reports the checks fed by every pass, and skips what could not run.
    private func finish() {
        let reason = "not run: the filter processed none of the formats (see formats)"
        for check in [Check.determinism, .reset, .realTime, .budget, .latency, .concurrency, .parameterExtremes] where !reported.contains(check) {
            report(CheckResult(subject: id, check: check, outcome: .skip, reason: reason))
        }
        report(guards.result(id, .guardBytes, passing:
            "no write outside the picture, into row padding (odd strides) or past any plane, nor into an out-of-place input"))
        report(outputFormat.result(id, .outputFormat, passing: processing == .inPlace
            ? "in place: out == in and the frame struct unchanged after every call"
            : "out of place: every output struct matched the negotiation"))
        let messages = ledger.missingMessages
        let failed = ledger.failedCalls
        report(messages.result(id, .errorMessages, passing: failed == 0
            ? "no call failed" : "\(failed) failed call\(failed == 1 ? "" : "s"), each with a get_error message"))
        let usage = ledger.hosts.map(\.usage).reduce(HostUsage(), +)
        var threads = Findings()
        usage.violationLines.forEach { threads.fail($0) }
        let passing = description.createWithHost == nil
            ? "process ran on its own thread, control calls on another; no host object (the filter has no create_with_host)"
            : "process ran on its own thread, control calls on another; \(usage.summary)"
        report(threads.result(id, .threads, passing: passing))
    }

    // MARK: - Instances and sequences

    /// A new instance with the user's values (and `extra`, which win), or why not.
    private func newInstance(applying values: [Setting]? = nil) -> Result<TestInstance, StepFailure> {
        switch TestInstance.create(description, ledger: ledger) {
        case .failure(let failure):
            return .failure(StepFailure("create \(failure)"))
        case .success(let instance):
            for setting in values ?? settings {
                let outcome = instance.set(setting.parameter, setting.value, live: false)
                if !outcome.succeeded {
                    instance.destroy()
                    return .failure(StepFailure("set_param(\(setting.parameter.id)=\(setting.value)) \(outcome.failure)"))
                }
            }
            return .success(instance)
        }
    }

    /// The settings with `parameter` left out (the extremes pass sets it itself).
    private func settings(without parameter: ParameterInfo) -> [Setting] {
        settings.filter { $0.parameter.index != parameter.index }
    }

    /// Configures `instance` for `format` and makes its buffers.
    private func configure(_ instance: TestInstance, _ format: StreamFormat, audioCounts: [Int]? = nil)
        -> Result<StreamIO, StepFailure> {
        let outcome = instance.configure(format.cValue, label: label(format))
        guard outcome.succeeded, let negotiation = instance.negotiation else {
            return .failure(StepFailure("configure(\(label(format))) \(outcome.failure)"))
        }
        return makeIO(input: format, negotiation: negotiation, processing: processing, audioCounts: audioCounts)
    }

    /// Processes one input per seed, checking buffers and structs after each call; returns
    /// the outputs, or the first failed call.
    private func run(_ instance: TestInstance, _ io: StreamIO, seeds: [Int], variant: Int = 0, label: String)
        -> Result<[Captured], StepFailure> {
        var outputs: [Captured] = []
        for (call, seed) in seeds.enumerated() {
            io.prepare(seed: seed, call: call, variant: variant)
            let where_ = "\(label), call \(call + 1)"
            let outcome = instance.process(io, label: where_)
            guard outcome.succeeded else { return .failure(StepFailure("\(where_): process \(outcome.failure)")) }
            io.verify(label: where_, guards: &guards, format: &outputFormat)
            outputs.append(io.capture())
        }
        return .success(outputs)
    }

    /// A fresh instance, configured for `format`, run over `seeds`.
    private func runFresh(_ format: StreamFormat, seeds: [Int], variant: Int, label: String) -> Result<[Captured], StepFailure> {
        switch newInstance() {
        case .failure(let failure): return .failure(failure)
        case .success(let instance):
            defer { instance.destroy() }
            switch configure(instance, format) {
            case .failure(let failure): return .failure(failure)
            case .success(let io): return run(instance, io, seeds: seeds, variant: variant, label: label)
            }
        }
    }

    /// The first difference between two runs, as "call 3: …", or nil.
    private func firstDifference(_ a: [Captured], _ b: [Captured]) -> String? {
        for (call, pair) in zip(a, b).enumerated() {
            if let difference = pair.0.difference(from: pair.1) { return "call \(call + 1): \(difference)" }
        }
        return a.count == b.count ? nil : "\(a.count) outputs against \(b.count)"
    }

    private func label(_ format: StreamFormat) -> String {
        switch format {
        case .video(let v): return "\(v.width)x\(v.height) \(v.colorRange)"
        case .audio(let a): return "\(a.sampleRate) Hz x\(a.channels)"
        }
    }

    // MARK: - create-destroy

    private func checkCreateDestroy() {
        begin(.createDestroy, "\(createCycles) create/destroy cycles")
        var findings = Findings()
        for cycle in 1...createCycles {
            switch TestInstance.create(description, ledger: ledger) {
            case .failure(let failure): findings.fail("create #\(cycle) \(failure)")
            case .success(let instance): instance.destroy()
            }
        }
        let api = description.createWithHost != nil ? "create_with_host (a host object each)" : "create (no host object)"
        report(findings.result(id, .createDestroy, passing: "\(createCycles) instances created with \(api) and destroyed"))
    }

    // MARK: - formats

    private func checkFormats() {
        var findings = Findings()
        var refused: [String] = []
        let formats: [StreamFormat] = description.kind == .video
            ? FilterValidation.videoFormats.map { .video($0) } : FilterValidation.audioFormats.map { .audio($0) }
        for format in formats {
            begin(.formats, "configure and process \(label(format))")
            let instance: TestInstance
            switch newInstance() {
            case .failure(let failure):
                findings.fail("\(label(format)): \(failure)")
                continue
            case .success(let made): instance = made
            }
            defer { instance.destroy() }
            let outcome = instance.configure(format.cValue, label: label(format))
            guard outcome.succeeded, let negotiation = instance.negotiation else {
                refused.append(label(format))
                continue
            }
            accepted.append(format)
            checkNegotiation(format, negotiation)
            // Filters that take any block size get varied sizes: 10 ms, one frame, an odd count.
            let tenMs: Int
            if case .audio(let a) = format { tenMs = (a.sampleRate + 99) / 100 } else { tenMs = 1 }
            switch makeIO(input: format, negotiation: negotiation, processing: processing, audioCounts: [tenMs, 1, 37]) {
            case .failure(let failure):
                findings.notes.append("\(label(format)): not processed: \(failure)")
            case .success(let io):
                switch run(instance, io, seeds: [1, 2, 3], label: label(format)) {
                case .failure(let failure): findings.fail("accepted \(failure)")
                case .success: processed.append(format)
                }
            }
        }
        if description.kind == .video, probeUnknownPixelFormat() {
            findings.fail("configure accepted pixel format 0x7F00, which no minor of the ABI defines: a filter must refuse "
                + "a format it cannot read (a future host may offer one), not read it as I420")
        }
        chooseWorkingFormat()
        if accepted.isEmpty { findings.fail("accepted none of the \(formats.count) formats (\(refused.joined(separator: ", ")))") }
        let refusals = refused.isEmpty ? "" : "; refused \(refused.joined(separator: ", "))"
        report(findings.result(id, .formats, passing:
            "accepted \(accepted.count) of \(formats.count) formats and processed 3 calls of each\(refusals)"))
    }

    /// What configure answered must make sense, and an in-place filter must keep the format.
    private func checkNegotiation(_ input: StreamFormat, _ negotiation: rawfx_negotiation) {
        let where_ = "configure(\(label(input)))"
        guard let output = StreamFormat(negotiation.output), output.kind == input.kind else {
            outputFormat.fail("\(where_): the negotiated output is of another media kind (\(negotiation.output.kind))")
            return
        }
        if processing == .inPlace && output != input {
            outputFormat.fail("\(where_): an in-place filter changed the format to \(label(output))")
        }
        switch output {
        case .video(let v):
            if v.width < 1 || v.height < 1 { outputFormat.fail("\(where_): negotiated an empty output \(v.width)x\(v.height)") }
            if negotiation.output.video.pixel_format != rawfx_pixel_format(RAWFX_PIXEL_I420) {
                outputFormat.fail("\(where_): negotiated pixel format \(negotiation.output.video.pixel_format), not I420 (\(RAWFX_PIXEL_I420))")
            }
        case .audio(let a):
            if a.sampleRate < 1 || a.channels < 1 {
                outputFormat.fail("\(where_): negotiated \(a.sampleRate) Hz x\(a.channels), an impossible output")
            }
        }
        // The caps every host applies (rawfx.h): a host refuses such a configure.
        var cInput = input.cValue, answer = negotiation
        var problem = [CChar](repeating: 0, count: 256)
        if rfx_negotiation_cap_violation(&cInput, &answer, &problem, problem.count) != nil {
            outputFormat.fail("\(where_): \(String(cString: problem)); a host refuses this configure", kind: "cap")
        }
    }

    /// A host of a later minor may offer a pixel format this filter never heard of: it must
    /// refuse it (with a message; error-messages checks that), not take it for I420.
    /// True when the filter accepted a pixel format no minor defines.
    private func probeUnknownPixelFormat() -> Bool {
        begin(.formats, "configure with an unknown pixel format")
        guard case .success(let instance) = newInstance() else { return false }
        defer { instance.destroy() }
        var format = StreamFormat.video(VideoFormat(width: 320, height: 240)).cValue
        format.video.pixel_format = 0x7F00
        return instance.configure(format, label: "320x240, unknown pixel format 0x7F00").succeeded
    }

    // MARK: - The format the other passes use

    private func chooseWorkingFormat() {
        let preferred: [StreamFormat] = description.kind == .video
            ? FilterValidation.preferredVideo.map { .video($0) } : FilterValidation.preferredAudio.map { .audio($0) }
        for format in preferred {
            begin(.formats, "configure \(label(format)) (the format of the checks that follow)")
            guard case .success(let instance) = newInstance() else { break }
            defer { instance.destroy() }
            if case .success = configure(instance, format) {
                working = format
                return
            }
        }
        working = processed.first
    }

    /// Another format the filter processed, of a different size or rate, to renegotiate to.
    private var otherFormat: StreamFormat? {
        processed.first { format in
            switch (format, working) {
            case (.video(let a), .video(let b)?): return a.width != b.width || a.height != b.height
            case (.audio(let a), .audio(let b)?): return a.sampleRate != b.sampleRate
            default: return false
            }
        }
    }

    private var referenceSeeds: [Int] { Array(100..<(100 + FilterValidation.sequenceLength)) }
    private var historySeeds: [Int] { Array(200..<(200 + FilterValidation.sequenceLength)) }

    // MARK: - determinism

    private func checkDeterminism() {
        let format = working!
        begin(.determinism, "two fresh instances on \(label(format))")
        var findings = Findings()
        let first = runFresh(format, seeds: referenceSeeds, variant: 0, label: "first run")
        let second = runFresh(format, seeds: referenceSeeds, variant: 1, label: "second run")
        switch (first, second) {
        case (.failure(let failure), _), (_, .failure(let failure)):
            findings.fail(failure.message)
            deterministic = false
        case (.success(let a), .success(let b)):
            freshOutputs = a
            if let difference = firstDifference(a, b) {
                findings.fail("two fresh instances gave different outputs on the same input (\(label(format))), \(difference)"
                    + (processing == .outOfPlace ? " (output buffers were prefilled differently: a byte left unwritten shows too)" : ""))
                deterministic = false
            }
        }
        report(findings.result(id, .determinism, passing:
            "two fresh instances gave identical output on \(FilterValidation.sequenceLength) calls at \(label(format))"))
    }

    // MARK: - reset

    private func checkReset() {
        let format = working!
        begin(.reset, "reset and renegotiation at \(label(format))")
        var findings = Findings()
        let instance: TestInstance
        switch newInstance() {
        case .failure(let failure):
            findings.fail(failure.message)
            report(findings.result(id, .reset, passing: ""))
            return
        case .success(let made): instance = made
        }
        defer { instance.destroy() }

        /// Runs the history, then `between`, then the reference sequence; compares with a
        /// fresh instance's output on it.
        func afterHistory(_ what: String, between: (StreamIO) -> StreamIO?) {
            begin(.reset, what)
            let io: StreamIO
            switch configure(instance, format) {
            case .failure(let failure):
                findings.fail("\(what): \(failure)")
                return
            case .success(let made): io = made
            }
            if case .failure(let failure) = run(instance, io, seeds: historySeeds, label: "history before \(what)") {
                findings.fail(failure.message)
                return
            }
            guard let after = between(io) else { return }
            switch run(instance, after, seeds: referenceSeeds, label: "after \(what)") {
            case .failure(let failure):
                findings.fail(failure.message)
            case .success(let outputs):
                if deterministic, let difference = firstDifference(outputs, freshOutputs) {
                    findings.fail("after \(what) the output differs from a fresh instance's, \(difference)")
                }
            }
        }

        afterHistory("reset on the process thread") { io in
            _ = instance.reset(onProcessThread: true)
            return io
        }
        afterHistory("reset on the control thread") { io in
            _ = instance.reset(onProcessThread: false)
            return io
        }
        let other = otherFormat
        let renegotiation = other.map { "renegotiation to \(label($0)) and back" } ?? "configure again"
        afterHistory(renegotiation) { _ in
            if let other {
                switch configure(instance, other) {
                case .failure(let failure):
                    findings.fail("renegotiating to \(label(other)): \(failure)")
                    return nil
                case .success(let io):
                    if case .failure(let failure) = run(instance, io, seeds: [7, 8], label: "at \(label(other))") {
                        findings.fail(failure.message)
                        return nil
                    }
                }
            }
            switch configure(instance, format) {
            case .failure(let failure):
                findings.fail("configuring back to \(label(format)): \(failure)")
                return nil
            case .success(let io):
                return io
            }
        }
        let kept = checkSetParamKeepsState(format, &findings)
        if !deterministic {
            findings.notes.append("outputs not compared with a fresh instance's: the filter is not deterministic (see determinism)")
        }
        report(findings.result(id, .reset, passing:
            "after reset (process and control thread) and after \(renegotiation), the output equals a fresh instance's"
            + (kept.isEmpty ? "" : "; a real-time set_param to the value in use kept the stream's state (\(kept.joined(separator: ", ")))")))
    }

    /// A real-time set_param keeps the stream's state (rawfx.h): an instance that is set to
    /// the value it already has between two frames must go on exactly as one that was not.
    /// Returns the parameters compared.
    private func checkSetParamKeepsState(_ format: StreamFormat, _ findings: inout Findings) -> [String] {
        guard deterministic else { return [] }
        /// The history, then `set_param` of `change` (if any) between two frames, then the reference inputs.
        func outputs(setting change: (ParameterInfo, TrialValue)?) -> [Captured]? {
            guard case .success(let instance) = newInstance() else { return nil }
            defer { instance.destroy() }
            let what = change.map { "set_param(\($0.0.id))" } ?? "no set_param"
            guard case .success(let io) = configure(instance, format),
                  case .success = run(instance, io, seeds: historySeeds, label: "history before \(what)") else { return nil }
            if let change, !instance.set(change.0, change.1, live: true).succeeded { return nil }
            guard case .success(let after) = run(instance, io, seeds: referenceSeeds, label: "after \(what)") else { return nil }
            return after
        }
        var compared: [String] = []
        var unchanged: [Captured]?  // made once, for every parameter
        for parameter in description.parameters where !parameter.needsReconfigure {
            guard let usual = settings.first(where: { $0.parameter.index == parameter.index })?.value ?? parameter.defaultTrial
            else { continue }
            begin(.reset, "set_param(\(parameter.id)) between frames keeps the stream's state")
            if unchanged == nil { unchanged = outputs(setting: nil) }
            guard let reference = unchanged else { return compared }
            guard let changed = outputs(setting: (parameter, usual)) else { continue }
            compared.append(parameter.id)
            if let difference = firstDifference(changed, reference) {
                findings.fail("after a real-time set_param(\(parameter.id)=\(usual)), the value it already had, the output differs "
                    + "from an instance's without it, \(difference): set_param must keep the stream's state (history, phase, estimates)",
                              kind: "set_param state")
            }
        }
        return compared
    }

    // MARK: - real-time and budget

    /// Process calls the real-time pass times and counts, the first right after configure.
    static let realTimeCalls = 10

    private func checkRealTime() {
        let format = working!
        begin(.realTime, "allocations, locks, sleeps, I/O and thread starts in process, reset and set_param at \(label(format))")
        var findings = Findings()
        var budgetFindings = Findings()
        var budgetLine = ""
        let allocationsCounted = rawfx_allocation_counter_active() != 0
        let blockingCounted = rawfx_rt_counter_active() != 0
        defer {
            if !allocationsCounted {
                report(CheckResult(subject: id, check: .realTime, outcome: .skip, reason:
                    "heap allocations cannot be counted: this executable does not use RawFXAllocCounter's malloc"))
            } else {
                report(findings.result(id, .realTime, passing: realTimeSummary))
            }
            report(budgetFindings.result(id, .budget, passing: budgetLine))
        }
        let instance: TestInstance
        let io: StreamIO
        switch newInstance().flatMap({ made in configure(made, format).map { (made, $0) } }) {
        case .failure(let failure):
            findings.fail(failure.message)
            budgetFindings.fail(failure.message)
            return
        case .success(let made): (instance, io) = made
        }
        defer { instance.destroy() }
        // Counted as a hook would call it: real time ("rawfx.render-mode/1"), where nothing
        // may wait, not even for the filter's own worker.
        instance.host?.renderOffline.store(false, ordering: .relaxed)
        var blocking: [String: BlockingCalls] = [:]
        var firstBlocked: [String: String] = [:]
        func note(_ call: String, _ calls: BlockingCalls, at step: String) {
            guard calls.total > 0 else { return }
            blocking[call, default: BlockingCalls()].add(calls)
            if firstBlocked[call] == nil { firstBlocked[call] = step }
        }

        /// One frame; its outcome, or nil after a failure (noted).
        func frame(_ seed: Int, _ label: String) -> CallOutcome? {
            io.prepare(seed: seed, call: 0, variant: 0)
            let outcome = instance.process(io, label: label)
            guard outcome.succeeded else {
                findings.fail("\(label): process \(outcome.failure); not counted further")
                budgetFindings.fail("\(label): process \(outcome.failure)")
                return nil
            }
            io.verify(label: label, guards: &guards, format: &outputFormat)
            note("process", outcome.blocking, at: label)
            return outcome
        }

        // Every call counts, the first after configure included: a host calls it on its
        // real-time thread like any other. The calls come at the stream's pace (a host gets a
        // frame per frame duration), so a hand-over to a worker thread has the time it would
        // have in a host; the validator waits between calls, outside the counted call.
        let frames = FilterValidation.realTimeCalls
        var processAllocations: UInt64 = 0
        var firstAllocations: UInt64 = 0
        var times: [Double] = []
        var duration = 0.0
        let start = DispatchTime.now().uptimeNanoseconds
        var due = 0.0
        for call in 0..<frames {
            let now = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            if due > now { usleep(UInt32((due - now) * 1e6)) }
            guard let outcome = frame(310 + call, call == 0 ? "first process after configure" : "counted frames") else { return }
            duration = io.duration(frameRate: budget.frameRate)
            due += duration
            processAllocations += outcome.allocations
            if call == 0 { firstAllocations = outcome.allocations }
            times.append(outcome.seconds)
        }
        if processAllocations > 0 {
            findings.fail("process allocated \(processAllocations) times in \(frames) calls"
                + (firstAllocations > 0 ? " (\(firstAllocations) in the first call after configure)" : ""))
        }
        budgetLine = budget.judge(times: times, duration: duration, what: label(format), findings: &budgetFindings)

        var resetAllocations: UInt64 = 0
        let resets = 3
        for i in 0..<resets {
            guard frame(330 + i, "between resets") != nil else { return }
            let (made, calls) = instance.reset(onProcessThread: true)
            resetAllocations += made
            note("reset", calls, at: "reset \(i + 1) of \(resets)")
        }
        // The real-time rules are those of the minor the plugin declared: 1.0 allowed reset
        // and set_param to allocate (docs/plugin-abi.md, "The rules from 1.1 on").
        let realTimeRules = description.pluginMinor >= 1
        /// A failure under 1.1's rules; for a 1.0 plugin, whose header allowed it, a note.
        func violation(_ failure: String, or note: String) {
            if realTimeRules { findings.fail(failure) } else { findings.notes.append(note) }
        }
        if resetAllocations > 0 {
            let what = "reset allocated \(resetAllocations) times in \(resets) calls"
            violation(what, or: what + ": allowed for an ABI 1.0 plugin, "
                      + "but the host calls reset on the process thread; declare 1.1 once it allocates nothing")
        }

        var setCalls = 0
        let live = description.parameters.filter { !$0.needsReconfigure }
        for parameter in live {
            var values = parameter.extremes
            let usual = settings.first(where: { $0.parameter.index == parameter.index })?.value ?? parameter.defaultTrial
            if let usual { values.append(usual) }
            var allocations: UInt64 = 0
            var counted = 0
            // Two rounds, both counted (the first set_param of a value is real-time too). A
            // value process then fails on is the parameter-extremes check's business: it
            // only ends this parameter's rounds.
            rounds: for _ in 0..<2 {
                for value in values {
                    let outcome = instance.set(parameter, value, live: true)
                    if outcome.succeeded {
                        allocations += outcome.allocations
                        counted += 1
                        note("set_param(\(parameter.id))", outcome.blocking, at: "set_param(\(parameter.id)=\(value))")
                    }
                    let label = "after set_param(\(parameter.id)=\(value))"
                    io.prepare(seed: 340, call: 0, variant: 0)
                    guard instance.process(io, label: label).succeeded else {
                        if let usual { _ = instance.set(parameter, usual, live: true) }
                        break rounds
                    }
                    io.verify(label: label, guards: &guards, format: &outputFormat)
                }
            }
            setCalls += counted
            if allocations > 0 {
                violation("set_param of '\(parameter.id)' (not RECONFIGURE, so real-time) allocated \(allocations) times in \(counted) calls",
                          or: "set_param of '\(parameter.id)' allocated \(allocations) times in \(counted) calls: allowed for an "
                              + "ABI 1.0 plugin, whose values the host sets on a new instance, not on the live one")
            }
        }
        for (call, calls) in blocking.sorted(by: { $0.key < $1.key }) {
            let what = "\(call) made \(calls.summary), the first in \(firstBlocked[call] ?? "?")"
            if call == "process" || realTimeRules {
                findings.fail(what + " (a real-time call must not lock, wait, sleep, do file I/O or start a thread)")
            } else {
                findings.notes.append(what + ": allowed for an ABI 1.0 plugin's \(call), which 1.1 makes real-time")
            }
        }
        let kinds = blockingCounted ? "no heap allocation, lock, blocking wait, sleep, file I/O or thread start"
            : "no heap allocation"
        realTimeSummary = "\(kinds) in \(frames) process calls (the first after configure included), \(resets) resets and \(setCalls) real-time set_param calls"
            + (live.isEmpty ? " (no parameter is real-time)" : "") + ", on the process thread"
        if !blockingCounted {
            findings.notes.append("locks, sleeps, I/O and thread starts not counted: "
                + (rawfx_built_with_sanitizer() != 0 ? "the sanitizer intercepts those functions" : "this executable does not interpose them"))
        }
    }

    private var realTimeSummary = ""

    // MARK: - latency

    /// Runs a stream through a fresh instance and finds the delay between its input and its
    /// output: video, for each output frame the input frame it matches best (luma, mean
    /// absolute difference, distinctly better than any other); audio, the lag of the peak of
    /// the normalized cross-correlation of channel 0 (noise in, so the peak is sharp). The
    /// measured delay must be the latency configure reported (audio: within 1 ms). When the
    /// output does not resemble the input (a denoiser fed noise, a change of size or rate),
    /// nothing is measured and the line says so.
    private func checkLatency() {
        let format = working!
        begin(.latency, "measured against the reported latency at \(label(format))")
        var findings = Findings()
        var passing = ""
        defer { report(findings.result(id, .latency, passing: passing)) }
        let instance: TestInstance
        let io: StreamIO
        switch newInstance().flatMap({ made in configure(made, format).map { (made, $0) } }) {
        case .failure(let failure):
            findings.fail(failure.message)
            return
        case .success(let made): (instance, io) = made
        }
        defer { instance.destroy() }
        let negotiation = instance.negotiation!
        let reported = Int(negotiation.latency)
        guard let output = StreamFormat(negotiation.output) else { return }
        switch (format, output) {
        case (.video(let a), .video(let b)):
            guard a.width == b.width, a.height == b.height, reported <= Int(RAWFX_MAX_VIDEO_LATENCY_FRAMES) else {
                passing = "not measured: the output (\(label(output))) is not the input's size; reported \(reported) frames"
                return
            }
            let calls = reported + 8
            var inputs: [[UInt8]] = [], outputs: [[UInt8]] = []
            let luma = a.width * a.height
            for call in 0..<calls {
                io.prepare(seed: 500 + call, call: call, variant: 0)
                inputs.append(Array(io.captureInput().bytes.prefix(luma)))
                let outcome = instance.process(io, label: "latency, call \(call + 1)")
                guard outcome.succeeded else {
                    findings.fail("latency, call \(call + 1): process \(outcome.failure)")
                    return
                }
                io.verify(label: "latency, call \(call + 1)", guards: &guards, format: &outputFormat)
                outputs.append(Array(io.capture().bytes.prefix(luma)))
            }
            var lags: [Int: Int] = [:]
            for (j, out) in outputs.enumerated() where j >= reported {
                let scores = inputs.map { correlation($0, out) }
                let order = scores.indices.sorted { scores[$0] > scores[$1] }
                // Distinct: clearly like one input frame, at least twice as like it as any other.
                if scores[order[0]] >= 0.3, scores[order[0]] >= 2 * max(0, scores[order[1]]) { lags[j - order[0], default: 0] += 1 }
            }
            guard let (measured, count) = lags.max(by: { $0.value < $1.value }), count * 2 >= calls - reported else {
                passing = "not measured: the output frames do not distinctly match input frames (correlation); reported \(reported) frames"
                return
            }
            if measured != reported {
                findings.fail("reported a latency of \(reported) frame\(reported == 1 ? "" : "s") but output frame n shows input frame "
                    + "n - \(measured) (\(count) of \(calls - reported) frames matched)")
            }
            passing = "measured \(measured) frame\(measured == 1 ? "" : "s") (\(count) of \(calls - reported) output frames matched to an input frame by correlation), as reported"
        case (.audio(let a), .audio(let b)):
            guard a.sampleRate == b.sampleRate, a.sampleRate >= 1000 else {
                passing = "not measured: the output rate (\(b.sampleRate) Hz) is not the input's; reported \(reported) frames"
                return
            }
            let rate = a.sampleRate
            let search = reported + rate / 50          // lags 0 ..< reported + 20 ms
            let window = rate / 10                     // 100 ms of signal compared at each lag
            guard reported <= rate * 2 else {
                passing = "not measured: a reported latency of \(reported) frames is over 2 s; the check compares 2 s at most"
                return
            }
            var input: [Double] = [], out: [Double] = []
            var call = 0
            while out.count < search + window {
                io.prepare(seed: 600 + call, call: call, variant: 0)
                let inBlock = io.captureInput()
                let outcome = instance.process(io, label: "latency, call \(call + 1)")
                guard outcome.succeeded else {
                    findings.fail("latency, call \(call + 1): process \(outcome.failure)")
                    return
                }
                io.verify(label: "latency, call \(call + 1)", guards: &guards, format: &outputFormat)
                input += channelZero(inBlock)
                out += channelZero(io.capture())
                call += 1
                if call > 10_000 { break }
            }
            let x = Array(input.prefix(window))
            let xEnergy = x.reduce(0) { $0 + $1 * $1 }
            var scores: [Double] = []
            x.withUnsafeBufferPointer { x in
                out.withUnsafeBufferPointer { y in
                    for lag in 0..<search {
                        var dot = 0.0, yEnergy = 0.0
                        for i in 0..<window {
                            let v = y[lag + i]
                            dot += x[i] * v
                            yEnergy += v * v
                        }
                        scores.append(xEnergy > 0 && yEnergy > 0 ? dot / (xEnergy * yEnergy).squareRoot() : 0)
                    }
                }
            }
            let best = scores.indices.max { abs(scores[$0]) < abs(scores[$1]) }!
            let tolerance = max(2, rate / 1000)
            let runnerUp = scores.indices.filter { abs($0 - best) > tolerance }.map { abs(scores[$0]) }.max() ?? 0
            let peak = abs(scores[best])
            guard peak >= 0.3, peak >= 2 * runnerUp else {
                passing = String(format: "not measured: the output does not follow the input (correlation peak %.2f); reported %d frames",
                                 peak, reported)
                return
            }
            if abs(best - reported) > tolerance {
                findings.fail("reported a latency of \(reported) frames but the output follows the input by \(best) "
                    + String(format: "(cross-correlation peak %.2f; ", peak)
                    + "\(best < reported ? "early" : "late") by \(abs(best - reported)) frames)")
            }
            passing = "measured \(best) frames (cross-correlation peak "
                + String(format: "%.2f", peak) + "), reported \(reported), within \(tolerance)"
        default:
            return
        }
    }

    /// The Pearson correlation of two pictures' bytes (0 when either is flat).
    private func correlation(_ a: [UInt8], _ b: [UInt8]) -> Double {
        let n = min(a.count, b.count)
        guard n > 1 else { return 0 }
        var sa = 0.0, sb = 0.0, saa = 0.0, sbb = 0.0, sab = 0.0
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                for i in 0..<n {
                    let x = Double(a[i]), y = Double(b[i])
                    sa += x; sb += y; saa += x * x; sbb += y * y; sab += x * y
                }
            }
        }
        let count = Double(n)
        let va = saa - sa * sa / count, vb = sbb - sb * sb / count
        guard va > 0, vb > 0 else { return 0 }
        return (sab - sa * sb / count) / (va * vb).squareRoot()
    }

    /// Channel 0 of an audio capture, as numbers.
    private func channelZero(_ captured: Captured) -> [Double] {
        guard case .audio(let channels) = captured.layout else { return [] }
        return captured.bytes.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Int16.self)
            return stride(from: 0, to: samples.count, by: channels).map { Double(samples[$0]) }
        }
    }

    // MARK: - concurrency

    /// Two instances process different inputs at the same time on two threads; each output
    /// must equal that of an instance processing its input alone. State shared between
    /// instances (a static scratch buffer or history) shows as a difference.
    private func checkConcurrency() {
        let format = working!
        begin(.concurrency, "two instances in parallel at \(label(format))")
        var findings = Findings()
        var passing = "two instances processing different inputs in parallel (two threads, \(FilterValidation.sequenceLength) calls each) "
            + "gave the outputs each gives alone"
        defer { report(findings.result(id, .concurrency, passing: passing)) }
        guard deterministic else {
            passing = "not compared: the filter is not deterministic (see determinism)"
            return
        }
        let aloneA = freshOutputs
        let aloneB: [Captured]
        switch runFresh(format, seeds: historySeeds, variant: 0, label: "second input alone") {
        case .failure(let failure):
            findings.fail(failure.message)
            return
        case .success(let outputs): aloneB = outputs
        }
        let pair: (TestInstance, StreamIO, TestInstance, StreamIO)
        switch newInstance().flatMap({ a in configure(a, format).map { (a, $0) } }).flatMap({ a in
            newInstance().flatMap { b in configure(b, format).map { (a.0, a.1, b, $0) } } }) {
        case .failure(let failure):
            findings.fail(failure.message)
            return
        case .success(let made): pair = made
        }
        let (a, ioA, b, ioB) = pair
        defer {
            a.destroy()
            b.destroy()
        }
        var outA: [Captured] = [], outB: [Captured] = []
        for (call, seeds) in zip(referenceSeeds, historySeeds).enumerated() {
            ioA.prepare(seed: seeds.0, call: call, variant: 0)
            ioB.prepare(seed: seeds.1, call: call, variant: 0)
            let label = "in parallel, call \(call + 1)"
            let (first, second) = TestInstance.processInParallel(a, ioA, b, ioB, label: label)
            guard first.succeeded, second.succeeded else {
                findings.fail("\(label): process \(first.succeeded ? second.failure : first.failure)")
                return
            }
            ioA.verify(label: label, guards: &guards, format: &outputFormat)
            ioB.verify(label: label, guards: &guards, format: &outputFormat)
            outA.append(ioA.capture())
            outB.append(ioB.capture())
        }
        if let difference = firstDifference(outA, aloneA) {
            findings.fail("run in parallel with another instance, the output differs from the instance's alone, \(difference) "
                + "(state shared between instances, such as a static buffer?)")
        } else if let difference = firstDifference(outB, aloneB) {
            findings.fail("run in parallel with another instance, the second instance's output differs from its output alone, "
                + "\(difference) (state shared between instances, such as a static buffer?)")
        }
    }

    // MARK: - parameter-extremes

    private func checkParameterExtremes() {
        let format = working!
        var findings = Findings()
        // Each parameter's own default must be accepted: a host sets it to restore a value.
        for parameter in description.parameters {
            guard let value = parameter.defaultTrial else { continue }
            begin(.parameterExtremes, "\(parameter.id) set to its default")
            guard case .success(let instance) = newInstance(applying: settings(without: parameter)) else { continue }
            defer { instance.destroy() }
            let outcome = instance.set(parameter, value, live: false)
            if !outcome.succeeded {
                findings.fail("set_param refused \(parameter.id)'s own default (\(value)): \(outcome.failure)", kind: "default")
            }
        }
        var tried = 0, refusedSets = 0, refusedConfigures = 0
        for parameter in description.parameters where !parameter.extremes.isEmpty {
            for value in parameter.extremes {
                let what = "\(parameter.id)=\(value)"
                begin(.parameterExtremes, "\(what) before configure")
                tried += 1
                guard case .success(let instance) = newInstance(applying: settings(without: parameter)) else { continue }
                defer { instance.destroy() }
                guard instance.set(parameter, value, live: false).succeeded else {
                    refusedSets += 1
                    continue
                }
                let outcome = instance.configure(format.cValue, label: "\(label(format)) with \(what)")
                guard outcome.succeeded, let negotiation = instance.negotiation else {
                    refusedConfigures += 1
                    continue
                }
                checkNegotiation(format, negotiation)
                switch makeIO(input: format, negotiation: negotiation, processing: processing) {
                case .failure(let failure):
                    findings.notes.append("\(what) configured but not processed: \(failure.message)")
                case .success(let io):
                    if case .failure(let failure) = run(instance, io, seeds: [400, 401], label: what) {
                        findings.fail("configure accepted \(label(format)) with \(what), then \(failure)")
                    }
                }
            }
            guard !parameter.needsReconfigure else { continue }
            begin(.parameterExtremes, "\(parameter.id) changed between frames")
            guard case .success(let instance) = newInstance(applying: settings(without: parameter)) else { continue }
            defer { instance.destroy() }
            guard case .success(let io) = configure(instance, format),
                  case .success = run(instance, io, seeds: [410], label: "before changing \(parameter.id)") else { continue }
            for value in parameter.extremes {
                tried += 1
                guard instance.set(parameter, value, live: true).succeeded else {
                    refusedSets += 1
                    continue
                }
                if case .failure(let failure) = run(instance, io, seeds: [411], label: "\(parameter.id)=\(value) between frames") {
                    findings.fail(failure.message)
                }
            }
        }
        var passing = tried == 0 ? "no int, float, bool or enum parameter"
            : "\(tried) extreme values tried, before configure and (for real-time parameters) between frames: none broke process"
        if refusedSets > 0 { passing += "; \(refusedSets) refused by set_param" }
        if refusedConfigures > 0 { passing += "; \(refusedConfigures) refused by configure" }
        report(findings.result(id, .parameterExtremes, passing: passing))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Hands objects from control threads to the one processing thread and back, with no lock
/// and no allocation on the processing side: the one hand-off of the engine and the SDK layer.
///
/// `post` (any thread) puts a value in the slot, taking back and returning the value that was
/// still waiting so the caller can fold the two (a batch of edits grows; a newer chain simply
/// wins); `take` (processing thread) empties the slot; `retire` (processing thread) hands a
/// used value to the control side, which releases it at its next `post` or `collect` or when
/// the mailbox goes, so teardown never runs inside an SDK callback.
/// Unchecked `Sendable`: the slots are atomic pointers; a value belongs to whichever side took it.
package final class Mailbox<Value: AnyObject>: @unchecked Sendable {
    private let pending = Atomic<UInt>(0)
    /// Retired values waiting for the control side. Four places: the processing thread can
    /// retire that many times with no control call in between before it would have to release
    /// one itself (counted in `releasedOnProcessingThread`).
    private let retired0 = Atomic<UInt>(0)
    private let retired1 = Atomic<UInt>(0)
    private let retired2 = Atomic<UInt>(0)
    private let retired3 = Atomic<UInt>(0)
    private let processingReleases = Atomic<Int>(0)
    /// Serializes producers: take-back-and-repost must be one step for them.
    private let producers = Locked<Void>(())

    package init() {}

    deinit {
        Mailbox.release(pending.exchange(0, ordering: .acquiring))
        collect()
    }

    /// [control] `update` receives the value still waiting (nil if the processing thread took
    /// it) and returns the value to post. Also releases what the processing thread retired.
    package func post(_ update: (Value?) -> Value) {
        collect()
        producers.withLock { _ in
            let waiting = pending.exchange(0, ordering: .acquiringAndReleasing)
            let previous = waiting == 0 ? nil : Unmanaged<Value>.fromOpaque(UnsafeRawPointer(bitPattern: waiting)!).takeRetainedValue()
            let next = update(previous)
            pending.store(UInt(bitPattern: Unmanaged.passRetained(next).toOpaque()), ordering: .releasing)
        }
        collect()
    }

    /// [control] Releases what the processing thread retired, without posting.
    package func collect() {
        Mailbox.release(retired0.exchange(0, ordering: .acquiring))
        Mailbox.release(retired1.exchange(0, ordering: .acquiring))
        Mailbox.release(retired2.exchange(0, ordering: .acquiring))
        Mailbox.release(retired3.exchange(0, ordering: .acquiring))
    }

    /// [process] True when a value waits (one relaxed load: the per-frame cost when idle).
    @inline(__always) package var hasPending: Bool { pending.load(ordering: .relaxed) != 0 }

    /// [process] The waiting value, if any.
    @inline(__always)
    package func take() -> Value? {
        let bits = pending.exchange(0, ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<Value>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
    }

    /// [process] Gives a used value back for release on the control side. Only if four retired
    /// values already wait uncollected is this one released here, and counted.
    package func retire(_ value: Value) {
        let bits = UInt(bitPattern: Unmanaged.passRetained(value).toOpaque())
        if retired0.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged { return }
        if retired1.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged { return }
        if retired2.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged { return }
        if retired3.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged { return }
        processingReleases.add(1, ordering: .relaxed)
        Mailbox.release(bits)
    }

    /// Values the processing thread had to release itself (the control side never collected).
    package var releasedOnProcessingThread: Int { processingReleases.load(ordering: .relaxed) }

    private static func release(_ bits: UInt) {
        guard bits != 0 else { return }
        Unmanaged<Value>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
    }
}

/// A parameter value in C form (`rawfx_param_value`), built on the control side so the
/// processing thread only passes a pointer. A string is copied into storage this object owns.
/// Not `Sendable`: it travels inside its `ChainEdit`, which the `Mailbox` hands over whole.
final class CParameterValue {
    let pointer: UnsafeMutablePointer<rawfx_param_value>
    private let text: UnsafeMutablePointer<CChar>?

    init(_ value: ParameterValue) {
        pointer = .allocate(capacity: 1)
        var c = rawfx_param_value()
        c.struct_size = UInt32(MemoryLayout<rawfx_param_value>.size)
        var text: UnsafeMutablePointer<CChar>?
        switch value {
        case .int(let v): c.type = rawfx_param_type(RAWFX_PARAM_INT); c.int_value = v
        case .float(let v): c.type = rawfx_param_type(RAWFX_PARAM_FLOAT); c.float_value = v
        case .bool(let v): c.type = rawfx_param_type(RAWFX_PARAM_BOOL); c.int_value = v ? 1 : 0
        case .enumeration(let i, _): c.type = rawfx_param_type(RAWFX_PARAM_ENUM); c.int_value = Int64(i)
        case .string(let s):
            c.type = rawfx_param_type(RAWFX_PARAM_STRING)
            text = strdup(s)
            c.string_value = UnsafePointer(text)
        }
        self.text = text
        pointer.initialize(to: c)
    }

    deinit {
        free(text)
        pointer.deallocate()
    }
}

/// Which stage a run-time change addresses: `"denoise.level"` (by filter id, when the id is
/// in the chain once) or `"1.level"` (by stage index, counted from 0).
public struct StageAddress: Hashable, Sendable {
    public var stage: String
    public var parameter: String?

    /// Parses `"stage.parameter"`; with `parameter: false`, a bare stage (`"denoise"`, `"1"`).
    public init(_ text: String, parameter: Bool = true) throws(ChainError) {
        if parameter {
            guard let dot = text.lastIndex(of: "."), dot != text.startIndex, text.index(after: dot) != text.endIndex else {
                throw .contract("'\(text)' does not address a parameter: write FILTER.PARAMETER (\"denoise.level\") or INDEX.PARAMETER (\"0.level\")")
            }
            stage = String(text[..<dot])
            self.parameter = String(text[text.index(after: dot)...])
        } else {
            stage = text
            self.parameter = nil
        }
    }

    /// The stage index in a chain of these filter types.
    func resolve(in types: [FilterType]) throws(ChainError) -> Int {
        if let index = Int(stage) {
            guard index >= 0, index < types.count else {
                let ids = types.map(\.id)
                throw .contract("stage \(index) does not exist: the chain has \(ids.count) stage\(ids.count == 1 ? "" : "s") (0 to \(ids.count - 1): \(ids.joined(separator: ", ")))")
            }
            return index
        }
        var first = -1
        for index in 0..<types.count where types[index].id == stage {
            guard first < 0 else { return try ambiguous(types) }
            first = index
        }
        guard first >= 0 else {
            let ids = types.map(\.id)
            throw .contract("no stage '\(stage)' in the chain (\(ids.isEmpty ? "empty" : ids.joined(separator: ", ")))")
        }
        return first
    }

    private func ambiguous(_ types: [FilterType]) throws(ChainError) -> Int {
        let matches = types.indices.filter { types[$0].id == stage }
        throw .contract("'\(stage)' appears \(matches.count) times in the chain (stages \(matches.map(String.init).joined(separator: ", "))): address it by index, e.g. \(matches[0]).\(parameter ?? "")")
    }
}

/// One change to a chain, made on the control side and applied between two frames.
final class ChainEdit {
    enum Kind { case setParameter, bypass, replace }
    let kind: Kind
    let stage: Int
    /// `.setParameter`: the parameter and its C value.
    let parameterIndex: Int
    let value: CParameterValue?
    /// `.bypass`
    let bypass: Bool
    /// `.setParameter` of a RECONFIGURE parameter of a grouped stage (`StageGroupPolicy`): the
    /// group (whose first stage this is) negotiates again, as a whole, before the next frame.
    var renegotiateGroup: Int?
    /// `.replace`: prepared stages for `stage..<stage + replacements.count`; after the swap
    /// they hold the old ones, released on the control side with the batch.
    var replacements: [AnyObject]
    /// `.replace`: the input format the replacements were configured for.
    let preparedInput: StreamFormat?

    init(setParameter stage: Int, index: Int, value: CParameterValue) {
        kind = .setParameter; self.stage = stage; parameterIndex = index; self.value = value
        bypass = false; replacements = []; preparedInput = nil
    }

    init(bypass stage: Int, _ on: Bool) {
        kind = .bypass; self.stage = stage; bypass = on
        parameterIndex = 0; value = nil; replacements = []; preparedInput = nil
    }

    init(replace stage: Int, with replacements: [AnyObject], preparedFor input: StreamFormat?) {
        kind = .replace; self.stage = stage; self.replacements = replacements; preparedInput = input
        parameterIndex = 0; value = nil; bypass = false
    }
}

/// [process] `set_param` of a run-time change; a refusal (rare: the host validated the
/// value) is counted and logged, since no caller is waiting on this thread.
func applyParameter(_ edit: ChainEdit, to instance: FilterInstance, timing: TimingRecorder) {
    guard instance.setOnProcessThread(index: edit.parameterIndex, edit.value!.pointer) != RAWFX_OK else { return }
    timing.recordError()
    RawFXLog.log(.error, source: instance.type.id, "refused a run-time parameter change: \(instance.lastError)")
}

/// The edits waiting for the processing thread, in order.
final class ChainEditBatch {
    var edits: [ChainEdit] = []
}

/// What the control side knows about a chain: each stage's type, parameter values, bypass
/// flag and last negotiated formats. Guarded by a mutex that the processing thread takes only
/// when it negotiates (never per frame).
struct ChainControlState {
    var types: [FilterType]
    var values: [[String: ParameterValue]]
    var bypassed: [Bool]
    var inputs: [StreamFormat?]
    var outputs: [StreamFormat?]
    var latencies: [Int]
    /// Each stage's newest instance: the one in force, or the one the processing thread swaps
    /// in before its next frame. What `metrics` reads (name, isolation figures), under this
    /// lock: the processing thread's own `instance` field is swapped without one.
    var instances: [FilterInstance]
    /// Each stage's timing recorder, the same object as the process side's stage holds
    /// (replaced only by `carryMetrics`, before the chain processes): what `metrics` reads.
    var timings: [TimingRecorder]
    /// For each stage in a group of several (`StageGroupPolicy.groupStart`), the group's first
    /// stage; nil otherwise.
    let groupStarts: [Int?]

    init(instances: [FilterInstance], timings: [TimingRecorder], groups: any StageGroupPolicy) {
        groupStarts = instances.indices.map { k in groups.groupStart(of: instances[k], at: k) }
        types = instances.map(\.type)
        values = instances.map(\.values)
        bypassed = Array(repeating: false, count: instances.count)
        inputs = Array(repeating: nil, count: instances.count)
        outputs = Array(repeating: nil, count: instances.count)
        latencies = Array(repeating: 0, count: instances.count)
        self.instances = instances
        self.timings = timings
    }

    /// The refusal of a bypass of a stage that turns `input` into `output`.
    static func bypassRefusal(_ id: String, _ input: StreamFormat, _ output: StreamFormat) -> ChainError {
        .contract("cannot bypass \(id): it turns \(input) into \(output), and a bypass must not change the format")
    }

    /// [control, at a negotiation] A stage bypassed before the formats were known that turns
    /// out to change the format: the same refusal `setBypass` gives once they are known.
    func bypassThatChangesTheFormat() -> ChainError? {
        for stage in types.indices where bypassed[stage] {
            if let input = inputs[stage], let output = outputs[stage], input != output {
                return Self.bypassRefusal(types[stage].id, input, output)
            }
        }
        return nil
    }

    /// A new instance of stage `index` with the recorded values (plus `override`), created and
    /// parameterized on the calling (control) thread.
    func makeInstance(stage index: Int, override: (Int, ParameterValue)? = nil) throws(ChainError) -> FilterInstance {
        let type = types[index]
        let instance = try type.makeInstance()
        for (id, value) in values[index] {
            guard let i = type.parameters.firstIndex(where: { $0.id == id }) else { continue }
            if let override, override.0 == i { continue }
            try instance.set(index: i, value: value)
        }
        if let override { try instance.set(index: override.0, value: override.1) }
        return instance
    }
}

/// The control handle of a chain (`VideoChain.control`, `AudioChain.control`): what any thread
/// may do to a chain while one thread processes it. Parameters, bypasses, metrics and
/// rebuilds are validated and prepared here, under the chain's control lock, and handed to
/// the processing thread as edits through a `Mailbox`, which that thread takes between two
/// frames (or blocks). It never touches a stage.
///
/// Plainly `Sendable`: a lock, a mailbox, an atomic and a constant. The chain (the process handle) is
/// not: it belongs to the one thread that processes. A control handle kept after its chain
/// is gone keeps the chain's instances alive; its edits go nowhere.
public final class ChainControl: Sendable {
    /// Parameter values, formats, bypasses, instances and timing recorders of every stage.
    let state: Locked<ChainControlState>
    /// Edits on their way to the processing thread.
    let edits = Mailbox<ChainEditBatch>()
    /// The process handle publishes its stages' figures under it (`TimingRecorder.publish`).
    let figures = FigureSequence()
    /// Video or audio: which chain's planning a replacement uses.
    public let mediaKind: MediaKind
    /// The process handle's `latency`, stored by it when it changes (at a negotiation or a
    /// swap, never per frame).
    private let publishedLatency = Atomic<Int>(0)

    init(instances: [FilterInstance], timings: [TimingRecorder], groups: any StageGroupPolicy, kind: MediaKind) {
        state = Locked(ChainControlState(instances: instances, timings: timings, groups: groups))
        mediaKind = kind
        for index in instances.indices { watchReconfigureRequests(instances[index], stage: index) }
    }

    /// [any thread] Sets a parameter while frames flow: `"watermark.opacity"` (by filter id)
    /// or `"0.opacity"` (by stage index) to a value in chain syntax. Validated here (a bad
    /// value throws now); applied on the processing thread before the next frame or block,
    /// keeping the filter's state (a denoiser's noise estimate, a resampler's phase). A
    /// RECONFIGURE parameter (an output size, a file) is set on a new instance that is
    /// configured on this thread and swapped in between two frames (an audio stage keeps the
    /// samples waiting in its FIFO).
    public func setParameter(_ address: String, _ value: String) throws(ChainError) {
        try setParameter(StageAddress(address), text: value)
    }

    /// [any thread] Bypasses a stage (`"watermark"` or `"0"`) or re-enables it, from the next
    /// frame or block. Its frames are counted in `metrics`. A stage that changes the format
    /// (a scaler, a resampler) cannot be bypassed.
    ///
    /// Video: a bypassed stage is not called; a stage that delays frames cannot be bypassed.
    /// Audio: a bypassed stage passes its input on, delayed by the stage's own latency so the
    /// stream's timing never jumps; a stage with latency keeps being run (its output unused)
    /// so that re-enabling it is seamless.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) {
        let address = try StageAddress(stage, parameter: false)
        try state.withLock { (state: inout ChainControlState) throws(ChainError) in
            let stage = try address.resolve(in: state.types)
            if bypassed, mediaKind == .video, state.latencies[stage] > 0 {
                throw .contract("cannot bypass \(state.types[stage].id): it delays video by \(state.latencies[stage]) frame\(state.latencies[stage] == 1 ? "" : "s")")
            }
            if bypassed, let input = state.inputs[stage], let output = state.outputs[stage], input != output {
                throw ChainControlState.bypassRefusal(state.types[stage].id, input, output)
            }
            state.bypassed[stage] = bypassed
            post(ChainEdit(bypass: stage, bypassed))
        }
    }

    /// [any thread] Frames, errors, bypassed frames and p50/p99 time per filter, as one
    /// snapshot: every stage's counts as the process handle published them after the same
    /// frame (video) or call (audio), read under `figures` (a seqlock: this waits for a few
    /// stores at most, never for a filter). The instances are read from the control state,
    /// not from the stages, whose instance the processing thread swaps when a RECONFIGURE
    /// parameter changes.
    public var metrics: [Metrics] {
        let (instances, timings) = state.withLock { ($0.instances, $0.timings) }
        var counters: [TimingRecorder.Counters] = []
        counters.reserveCapacity(timings.count)
        figures.read {
            // No allocation inside: a few loads per stage, so it fits between two publications.
            counters.removeAll(keepingCapacity: true)
            for timing in timings { counters.append(timing.published) }
        }
        return timings.indices.map { timings[$0].snapshot(of: instances[$0], counters: counters[$0]) }
    }

    /// [any thread] The chain's `latency` (video: frames; audio: frames at the output rate) as
    /// of its last negotiation or swap on the processing thread; 0 before the first.
    public var latency: Int { publishedLatency.load(ordering: .relaxed) }

    /// [process] Records the process handle's new latency.
    func publish(latency: Int) { publishedLatency.store(latency, ordering: .relaxed) }

    /// Queues an edit for the processing thread.
    func post(_ edit: ChainEdit) {
        edits.post { waiting in
            let batch = waiting ?? ChainEditBatch()
            batch.edits.append(edit)
            return batch
        }
    }

    func setParameter(_ address: StageAddress, text: String) throws(ChainError) {
        try state.withLock { (state: inout ChainControlState) throws(ChainError) in
            let stage = try address.resolve(in: state.types)
            let type = state.types[stage]
            guard let name = address.parameter, let index = type.parameters.firstIndex(where: { $0.id == name }) else {
                throw .unknownParameter(filter: type.id, parameter: address.parameter ?? "", valid: type.parameters.map(\.id))
            }
            let descriptor = type.parameters[index]
            let value = try descriptor.parse(text, filter: type.id)
            if descriptor.needsReconfigure, let group = state.groupStarts[stage] {
                // In a group: the value goes to the stage where the group runs it, and the
                // group negotiates again (a new instance would mean a new group).
                state.values[stage][name] = value
                let edit = ChainEdit(setParameter: stage, index: index, value: CParameterValue(value))
                edit.renegotiateGroup = group
                post(edit)
            } else if descriptor.needsReconfigure || !type.setParameterIsRealTime {
                // A new instance configured here, swapped in between two frames (an ABI 1.0
                // plugin's set_param too: it may allocate, so never on the process thread).
                let instance = try state.makeInstance(stage: stage, override: (index, value))
                let edit = try prepareReplacement(start: stage, first: instance, state: &state)
                state.values[stage][name] = value
                post(edit)
            } else {
                state.values[stage][name] = value
                post(ChainEdit(setParameter: stage, index: index, value: CParameterValue(value)))
            }
        }
    }

    /// [control] New stages for `start...`, negotiated for the recorded formats, with `first`
    /// as the instance of stage `start`, planned by the chain's kind (static: no process
    /// handle needed). Updates the recorded formats.
    func prepareReplacement(start: Int, first: FilterInstance, state: inout ChainControlState) throws(ChainError) -> ChainEdit {
        let preparedInput = state.inputs[start]
        let stages: [AnyObject]
        let unnegotiated: AnyObject
        switch mediaKind {
        case .video:
            stages = try prepareStages(start: start, first: first, state: &state, plan: VideoChain.planStage)
            unnegotiated = VideoChain.Stage(first)
        case .audio:
            stages = try prepareStages(start: start, first: first, state: &state, plan: AudioChain.planStage)
            unnegotiated = AudioChain.Stage(first)
        }
        // Not negotiated yet: the new instance is configured with the first frame.
        return ChainEdit(replace: start, with: stages.isEmpty ? [unnegotiated] : stages, preparedFor: preparedInput)
    }

    /// [control] New stages from `start` on: `first` (the new instance of stage `start`), then
    /// fresh instances of the following stages as long as the format reaching them changed.
    /// `plan` configures one instance for its input on this thread and returns the prepared
    /// stage, its output and its latency. Records the new formats; the processing thread
    /// swaps the stages in.
    func prepareStages(start: Int, first: FilterInstance, state: inout ChainControlState,
                       plan: (FilterInstance, StreamFormat) throws(ChainError) -> (stage: AnyObject, output: StreamFormat, latency: Int))
        throws(ChainError) -> [AnyObject] {
        guard var format = state.inputs[start] else { return [] }
        var replacements: [AnyObject] = []
        var instance = first
        var index = start
        while true {
            let planned = try plan(instance, format)
            watchReconfigureRequests(instance, stage: index)
            state.instances[index] = instance
            replacements.append(planned.stage)
            let changed = state.outputs[index] != planned.output
            state.inputs[index] = format
            state.outputs[index] = planned.output
            state.latencies[index] = planned.latency
            format = planned.output
            index += 1
            // Later stages are rebuilt only when the format reaching them changed; a group
            // renegotiates as a whole instead (VideoChain.swapIn).
            guard changed, index < state.types.count, state.groupStarts[index] == nil else { break }
            instance = try state.makeInstance(stage: index)
        }
        return replacements
    }

    /// Rebuilds the stage when its plugin calls `request_reconfigure`.
    func watchReconfigureRequests(_ instance: FilterInstance, stage: Int) {
        instance.onReconfigureRequest { [weak self] in try? self?.rebuildStage(stage) }
    }

    /// [control] Rebuilds stage `stage` with its recorded values (a plugin's
    /// `request_reconfigure`).
    func rebuildStage(_ stage: Int) throws(ChainError) {
        try state.withLock { (state: inout ChainControlState) throws(ChainError) in
            let instance = try state.makeInstance(stage: stage)
            post(try prepareReplacement(start: stage, first: instance, state: &state))
        }
    }

    /// [control] The recorders this chain's stages continue from `old` (the chain it
    /// replaces): a filter also in the old chain, its k-th occurrence matching the old k-th,
    /// records into the old stage's recorder, so a swap does not reset its metrics. Read
    /// from `old`'s control state (never its stages, which another thread may be running).
    /// Records them here; the caller, which owns the new chain before it processes, puts
    /// them into its stages.
    func carryTimings(from old: ChainControl) -> [TimingRecorder?] {
        let previous = old.state.withLock { s in s.types.indices.map { (s.types[$0].id, s.timings[$0]) } }
        return state.withLock { s in
            let carried = carriedTimings(from: previous, to: s.types.map(\.id))
            for index in carried.indices { if let timing = carried[index] { s.timings[index] = timing } }
            return carried
        }
    }
}

/// The process side of a chain (`VideoChain`, `AudioChain`): it applies the edits its
/// `control` posted, on its processing thread, between two frames or blocks.
protocol AppliesChainEdits: AnyObject {
    /// `control.edits`, held by the process handle too: one load fewer per frame.
    var edits: Mailbox<ChainEditBatch> { get }
    /// [process] Stage `index`'s instance and timing.
    func stageParts(_ index: Int) -> (instance: FilterInstance, timing: TimingRecorder)
    /// [process] Bypasses stage `index` or re-enables it.
    func setStageBypassed(_ index: Int, _ bypassed: Bool)
    /// [process] Swaps the prepared stages of a `.replace` edit in (the old ones go into the edit).
    func swapIn(_ edit: ChainEdit)
}

extension AppliesChainEdits {
    /// [process] Applies the edits waiting, in order, and hands the batch back to the control
    /// side. Called at the start of a frame when `edits.hasPending`.
    func applyPendingEdits() {
        guard let batch = edits.take() else { return }
        var index = 0
        while index < batch.edits.count {
            let edit = batch.edits[index]
            index += 1
            switch edit.kind {
            case .setParameter:
                let stage = stageParts(edit.stage)
                applyParameter(edit, to: stage.instance, timing: stage.timing)
                if let group = edit.renegotiateGroup { stageParts(group).instance.invalidateNegotiation() }
            case .bypass:
                setStageBypassed(edit.stage, edit.bypass)
            case .replace:
                swapIn(edit)
            }
        }
        edits.retire(batch)
    }
}

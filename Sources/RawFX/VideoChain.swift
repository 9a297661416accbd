import Synchronization

/// A chain of video filters, negotiated end to end before the first frame.
///
/// `process` runs a frame through every filter with no heap allocation in steady state:
/// in-place filters edit the frame they are given (`out == in`), out-of-place filters write a
/// buffer the chain allocated for them at negotiation and reuses for every frame. A frame
/// whose format differs from the negotiated one (size, range, rotation) renegotiates first.
///
/// The process handle: not `Sendable`. One thread owns it and processes (`process`,
/// `negotiate`, `drain`, `reset`). Any other thread goes through `control`, the chain's
/// `Sendable` control handle: it changes a parameter (`setParameter`), bypasses a stage
/// (`setBypass`) or reads `metrics`; changes apply between two frames, keeping every
/// filter's state. `SwappableVideoChain` replaces the whole chain.
public final class VideoChain: AppliesChainEdits {
    /// One position in the chain. Its instance and buffer change when a RECONFIGURE
    /// parameter swaps in a new instance; its timing survives that. Only the processing
    /// thread touches a live stage, so the per-access exclusivity checks Swift would make on
    /// every frame are turned off for the fields the frame path reads.
    final class Stage {
        @exclusivity(unchecked) var instance: FilterInstance
        @exclusivity(unchecked) var negotiation: Negotiation?
        /// Shared with the stage it replaces when a whole chain is swapped (`carryMetrics`).
        @exclusivity(unchecked) var timing: TimingRecorder
        @exclusivity(unchecked) var output: VideoBuffer?
        @exclusivity(unchecked) var bypassed = false
        /// A stage bypassed inside its group (`StageGroupPolicy.setBypassInGroup`): the group
        /// skips it, the chain still calls it and counts the frame as bypassed.
        @exclusivity(unchecked) var bypassedInGroup = false
        init(_ instance: FilterInstance, timing: TimingRecorder = TimingRecorder()) {
            self.instance = instance
            self.timing = timing
        }
    }

    public let specs: [FilterSpec]
    let stages: [Stage]
    public private(set) var inputFormat: VideoFormat?
    public private(set) var outputFormat: VideoFormat?
    /// Frames of delay along the chain (sum of the filters' latencies).
    public private(set) var latency = 0
    /// One C frame per stage boundary (stages + 1), reused for every frame.
    private let frames: UnsafeMutablePointer<rawfx_video_frame>
    /// The timestamps of the last `latency` input frames: an output frame carries the
    /// timestamp of the input it came from.
    @exclusivity(unchecked) private var timestamps = TimestampDelay()

    /// [any thread] The control handle: what other threads may do to this chain.
    public let control: ChainControl
    /// `control.edits`, kept here too: the frame path checks it with no extra load.
    let edits: Mailbox<ChainEditBatch>
    /// `control.figures`: brackets each frame's publication of its figures, so
    /// `control.metrics` reads every stage's from the same frame.
    private let figures: FigureSequence
    /// How stages that run together outside the chain reach it (isolation groups).
    let groups: any StageGroupPolicy

    /// Builds a chain from its text, e.g. `watermark=image=logo.png,scale=width=1280:height=720`.
    public convenience init(_ text: String, registry: PluginRegistry) throws(ChainError) {
        try self.init(specs: FilterSpec.parseChain(text), registry: registry)
    }

    /// Creates an instance per spec and sets its parameters (by name or position).
    public init(specs: [FilterSpec], registry: PluginRegistry) throws(ChainError) {
        self.specs = specs
        let instances = try makeInstances(specs, registry: registry, kind: .video)
        stages = instances.map { Stage($0) }
        groups = stageGroupPolicy(for: specs)
        control = ChainControl(instances: instances, timings: stages.map(\.timing), groups: groups, kind: .video)
        edits = control.edits
        figures = control.figures
        frames = .allocate(capacity: stages.count + 1)
        frames.initialize(repeating: rawfx_video_frame(), count: stages.count + 1)
    }

    deinit { frames.deallocate() }

    /// [process] The instances, in chain order (read on the processing thread, or when it is idle).
    package var filters: [FilterInstance] { stages.map(\.instance) }

    /// [process] Negotiates every filter in order and allocates the out-of-place buffers. Returns the
    /// chain's output format. On refusal the chain stays unnegotiated.
    ///
    /// With `allocatingBuffers: false` it only learns the output format (for a stream that
    /// declares a size but has no frame): no buffer is allocated and the chain stays
    /// unnegotiated, so a first frame negotiates again, with buffers.
    @discardableResult
    public func negotiate(_ input: VideoFormat, allocatingBuffers: Bool = true) throws(ChainError) -> VideoFormat {
        inputFormat = nil
        applyPendingEdits()
        var format = input
        var inputs: [StreamFormat?] = []
        var outputs: [StreamFormat?] = []
        var latencies: [Int] = []
        for (index, stage) in stages.enumerated() {
            let plan: (negotiation: Negotiation, output: VideoFormat, buffer: VideoBuffer?)
            do {
                plan = try VideoChain.plan(stage.instance, input: format, reusing: stage.output, allocating: allocatingBuffers)
            } catch .refused(_, let input, let message) {
                // A group's first stage refuses for the stage of the group that did.
                throw .refused(filter: stageThatFailed(index).instance.type.id, input: input, message: message)
            }
            stage.negotiation = plan.negotiation
            stage.output = plan.buffer
            inputs.append(.video(format))
            outputs.append(.video(plan.output))
            latencies.append(plan.negotiation.latency)
            format = plan.output
        }
        // The stages of a group as the group negotiated them (the chain itself sees the
        // group's output at its first stage): what bypass and latency checks read.
        for index in stages.indices {
            guard let grouped = groups.memberNegotiation(of: stages[index].instance) else { continue }
            inputs[index] = grouped.input
            outputs[index] = grouped.output
            latencies[index] = grouped.latency
        }
        let refusal = control.state.withLock { state in
            state.inputs = inputs
            state.outputs = outputs
            state.latencies = latencies
            return state.bypassThatChangesTheFormat()
        }
        // A bypass set before the formats were known is held to the rule setBypass applies
        // after: the chain stays unnegotiated rather than pass a frame of the wrong size.
        if let refusal { throw refusal }
        updateLatency()
        outputFormat = format
        if allocatingBuffers { inputFormat = input }
        return format
    }

    /// [process] The format `process` will produce for a frame of `input`, when that is known
    /// without running it: the chain is negotiated for `input` and no parameter edit or
    /// configure is pending. nil otherwise (the next frame renegotiates). A caller with a
    /// fixed destination checks it before the frame is consumed.
    public func settledOutputFormat(for input: VideoFormat) -> VideoFormat? {
        guard inputFormat == input, !edits.hasPending, !anyFilterNeedsConfigure else { return nil }
        return outputFormat
    }

    /// [process] Runs `frame` through the chain and returns the output view: `frame` itself when every
    /// filter is in place, otherwise the last out-of-place filter's buffer, valid until the
    /// next call. The output's timestamp is that of the input frame it came from (`latency`
    /// frames earlier).
    public func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        defer { publishFigures() }
        if edits.hasPending { applyPendingEdits() }
        if inputFormat != frame.format || anyFilterNeedsConfigure { try negotiate(frame.format) }
        defer { HostContext.leaveProcess() }
        // frames[i] is stage i's input, frames[i + 1] its output: C structs in memory the chain
        // owns, so the plugins get stable pointers without closures or copies to the heap.
        frames[0] = frame.raw
        // The owner of the planes the output lies in: the caller's (in place) or the last
        // out-of-place stage's buffer, so the returned view keeps its storage alive.
        var storage = frame.storage
        var index = 0
        // One clock read per stage boundary: a stage's end is the next one's start.
        var start = monotonicNanoseconds()
        while index < stages.count {
            let stage = stages[index]
            let input = frames + index
            let output = frames + index + 1
            if stage.bypassed {
                output.pointee = input.pointee
                stage.timing.recordBypass()
                index += 1
                continue
            }
            let status: rawfx_status
            if let buffer = stage.output {
                output.pointee = buffer.raw
                output.pointee.timestamp_us = input.pointee.timestamp_us
                status = stage.instance.processVideo(input, output)
                // A stage with frame memory of its own (an isolated one) answers with planes
                // there (or, passing through, the input's): the view then keeps it alive.
                let planes = output.pointee.planes.0
                if planes == buffer.raw.planes.0 {
                    storage = buffer
                } else if planes != input.pointee.planes.0 {
                    storage = stage.instance
                }
            } else {
                // In place: the plugin gets the same pointer for in and out (rawfx.h).
                status = stage.instance.processVideo(input, input)
                output.pointee = input.pointee
            }
            guard status == RAWFX_OK else {
                let failed = stageThatFailed(index)
                failed.timing.recordError()
                throw .processFailed(filter: failed.instance.type.id, status: status, message: stage.instance.lastError)
            }
            let end = monotonicNanoseconds()
            if stage.bypassedInGroup { stage.timing.recordBypass() } else { stage.timing.record(nanoseconds: end &- start) }
            start = end
            index += 1
        }
        frames[stages.count].timestamp_us = timestamps.push(frame.raw.timestamp_us)
        return VideoFrame(frames[stages.count], storage: storage)
    }

    /// [process] After each frame: every stage's figures, for `metrics`.
    @inline(__always) private func publishFigures() {
        figures.beginWrite()
        for index in 0..<stages.count { stages[index].timing.publish() }
        figures.endWrite()
    }

    /// [process] At the end of a stream, pushes the frames a delaying filter still holds out of the
    /// chain by feeding `last` (the last input frame) again, `latency` times; `emit` gets each
    /// output, stamped with the time of the input it came from.
    public func drain(repeating last: VideoFrame, emit: (VideoFrame) throws -> Void) throws {
        for _ in 0..<latency { try emit(try process(last)) }
    }

    /// The stage whose filter returned the error stage `index` reported: in a group, whose
    /// first stage reports for every stage, the one that did.
    private func stageThatFailed(_ index: Int) -> Stage {
        guard let member = groups.failedMemberOffset(of: stages[index].instance), index + member < stages.count else { return stages[index] }
        return stages[index + member]
    }

    /// A plain loop: `contains(where:)` is unspecialized in debug builds and allocates.
    private var anyFilterNeedsConfigure: Bool {
        for index in 0..<stages.count where stages[index].instance.needsConfigure { return true }
        return false
    }

    /// [process] Tells every filter the stream jumped (seek, source switch): `reset` on each.
    public func reset() {
        for index in 0..<stages.count { stages[index].instance.resetOnProcessThread() }
        timestamps.reset()
    }

    /// [control, before this chain processes] Continues the figures of `old`, the chain this one
    /// replaces (`ChainControl.carryTimings`). Only one of the two chains runs at a time, on
    /// the one processing thread, so the recorder keeps a single writer.
    package func carryMetrics(from old: ChainControl) {
        let carried = control.carryTimings(from: old)
        for index in stages.indices { if let timing = carried[index] { stages[index].timing = timing } }
    }

    // MARK: - Run-time control (edits applied on the processing thread)

    /// [control] One prepared replacement stage for `input` (`ChainControl.prepareReplacement`).
    static func planStage(_ instance: FilterInstance, _ input: StreamFormat) throws(ChainError) -> (stage: AnyObject, output: StreamFormat, latency: Int) {
        guard case .video(let format) = input else { preconditionFailure("a video chain records video formats") }
        let plan = try VideoChain.plan(instance, input: format, reusing: nil)
        let stage = Stage(instance)
        stage.negotiation = plan.negotiation
        stage.output = plan.buffer
        return (stage, .video(plan.output), plan.negotiation.latency)
    }

    func stageParts(_ index: Int) -> (instance: FilterInstance, timing: TimingRecorder) {
        (stages[index].instance, stages[index].timing)
    }

    func setStageBypassed(_ index: Int, _ bypassed: Bool) {
        let stage = stages[index]
        if groups.setBypassInGroup(stage.instance, bypassed) {
            stage.bypassedInGroup = bypassed
        } else {
            stage.bypassed = bypassed
        }
    }

    func swapIn(_ edit: ChainEdit) {
        // Prepared for another format than the stream has now (or before any): the
        // swapped-in stages negotiate on this frame.
        let stale = edit.preparedInput == nil || edit.preparedInput != inputFormatOf(stage: edit.stage)
        var k = 0
        while k < edit.replacements.count {
            let stage = stages[edit.stage + k]
            let fresh = edit.replacements[k] as! Stage
            swap(&stage.instance, &fresh.instance)
            swap(&stage.output, &fresh.output)
            swap(&stage.negotiation, &fresh.negotiation)
            k += 1
        }
        // A group right below is not rebuilt with the stages above it (it holds all its
        // stages): the chain negotiates again when what reaches it changed.
        let below = edit.stage + edit.replacements.count
        let groupInputChanged = below < stages.count && groups.memberNegotiation(of: stages[below].instance).map {
            $0.input != stages[below - 1].negotiation?.output
        } == true
        if stale || groupInputChanged { inputFormat = nil }
        updateLatency()
        outputFormat = stages.last?.negotiation.flatMap { n in
            if case .video(let v) = n.output { return v } else { return nil }
        } ?? outputFormat
    }

    /// The input format of stage `index` as negotiated (the previous stage's output).
    private func inputFormatOf(stage index: Int) -> StreamFormat? {
        guard let input = inputFormat else { return nil }
        guard index > 0 else { return .video(input) }
        return stages[index - 1].negotiation?.output
    }

    private func updateLatency() {
        var total = 0
        for index in 0..<stages.count { total += stages[index].negotiation?.latency ?? 0 }
        latency = total
        control.publish(latency: total)
        timestamps.resize(total)
    }

    /// Configures `instance` for `input` and sizes its output buffer (reusing `existing` when
    /// it fits; never one in another stage's memory). Runs on whichever thread negotiates: control for a prepared replacement.
    static func plan(_ instance: FilterInstance, input: VideoFormat, reusing existing: VideoBuffer?,
                     allocating: Bool = true) throws(ChainError)
        -> (negotiation: Negotiation, output: VideoFormat, buffer: VideoBuffer?) {
        let n = try instance.configure(input: .video(input))
        guard case .video(let out) = n.output else { preconditionFailure("configure checks the kind") }
        guard instance.type.processing == .outOfPlace, allocating else { return (n, out, nil) }
        return (n, out, existing?.format == out ? existing : VideoBuffer(format: out))
    }
}

/// A delay line of timestamps: `push` returns the timestamp pushed `count` calls earlier
/// (the first frames, which no input precedes, get the first timestamp). Sized when the
/// chain's latency changes, never per frame.
struct TimestampDelay {
    private var ring: [Int64] = []
    private var next = 0
    private var filled = 0

    mutating func resize(_ count: Int) {
        guard count != ring.count else { return }
        ring = Array(repeating: 0, count: count)
        reset()
    }

    mutating func reset() {
        next = 0
        filled = 0
    }

    mutating func push(_ timestamp: Int64) -> Int64 {
        guard !ring.isEmpty else { return timestamp }
        if filled == 0 {
            for i in 0..<ring.count { ring[i] = timestamp }
            filled = 1
        }
        let out = ring[next]
        ring[next] = timestamp
        next = next + 1 == ring.count ? 0 : next + 1
        return out
    }
}

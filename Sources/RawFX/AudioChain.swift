#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A chain of audio filters over interleaved 16-bit PCM.
///
/// The chain re-blocks: a filter that asked for a fixed block (SpeexDSP's 10 ms) receives
/// exactly that many frames per call whatever chunk sizes arrive, and a filter that takes
/// any size gets the chunk as it comes. Output reaches the caller through `emit`, one block
/// at a time, so one input chunk may yield zero, one or several output blocks.
///
/// Timestamps stay with the content: a block that comes out carries the time of the input
/// samples it was made from, `latency` frames behind the input that pushed it out.
///
/// Steady state allocates nothing: re-block FIFOs and output buffers are sized at
/// negotiation (a chunk larger than any seen before grows a scratch buffer once).
///
/// The process handle: not `Sendable`. One thread owns it and processes (`process`,
/// `negotiate`, `flush`, `drain`, `reset`). Any other thread goes through `control`, the
/// chain's `Sendable` control handle: it changes a parameter (`setParameter`), bypasses a
/// stage (`setBypass`) or reads `metrics`; changes apply before the next `process`, keeping
/// every filter's state and losing no sample.
public final class AudioChain: AppliesChainEdits {
    final class Stage {
        @exclusivity(unchecked) var instance: FilterInstance
        @exclusivity(unchecked) var negotiation: Negotiation?
        /// Shared with the stage it replaces when a whole chain is swapped (`carryMetrics`).
        @exclusivity(unchecked) var timing: TimingRecorder
        var input = AudioFormat(sampleRate: 0, channels: 0)
        var output = AudioFormat(sampleRate: 0, channels: 0)
        @exclusivity(unchecked) var blockFrames = 0
        var maxOutputFrames = 0
        /// The filter's own delay, in microseconds (subtracted from output timestamps).
        @exclusivity(unchecked) var latencyMicroseconds: Int64 = 0
        /// Re-block FIFO (blockFrames > 0) or in-place scratch (blockFrames == 0).
        @exclusivity(unchecked) var fifo: AudioStorage?
        @exclusivity(unchecked) var fill = 0
        @exclusivity(unchecked) var fifoTimestamp: Int64 = 0
        /// Where the samples waiting in the FIFO came from, for `flush`.
        var fifoSource = rawfx_audio_source(RAWFX_AUDIO_SOURCE_FILE)
        var fifoUserID: UInt64 = 0
        /// Out-of-place output.
        @exclusivity(unchecked) var out: AudioStorage?
        /// In-place filters with latency: the last `latency` input frames, fed every block so
        /// that a bypass passes the input delayed exactly as the filter delays it.
        @exclusivity(unchecked) var delay: AudioDelayLine?
        @exclusivity(unchecked) var bypassed = false
        /// The C frames handed to the plugin: [0] input, [1] output (the same for in place).
        let slots = UnsafeMutablePointer<rawfx_audio_frame>.allocate(capacity: 2)
        init(_ instance: FilterInstance, timing: TimingRecorder = TimingRecorder()) {
            self.instance = instance
            self.timing = timing
            slots.initialize(repeating: rawfx_audio_frame(), count: 2)
        }
        deinit { slots.deallocate() }
    }

    public let specs: [FilterSpec]
    let stages: [Stage]
    public private(set) var inputFormat: AudioFormat?
    public private(set) var outputFormat: AudioFormat?
    /// How far the output's content lags its input, in frames at the output rate: the sum
    /// of the filters' own latencies (a 10 ms SpeexDSP denoiser: one block). A file writer
    /// drops this many leading frames to line the output up with the input (see `drain`).
    public private(set) var latency = 0
    /// The worst-case wait from a sample's arrival to its output, in frames at the output
    /// rate: `latency` plus the re-blocking wait (block − 1 frames per fixed-block filter).
    public private(set) var bufferingLatency = 0
    /// Frames that entered and left since the last negotiation (for `drain`).
    private var framesIn = 0
    private var framesOut = 0
    /// Silence fed by `drain`, allocated on first use.
    private var silence: AudioStorage?

    /// [any thread] The control handle: what other threads may do to this chain.
    public let control: ChainControl
    /// `control.edits`, kept here too: the block path checks it with no extra load.
    let edits: Mailbox<ChainEditBatch>
    /// `control.figures`: brackets each stage's publication of its figures, so
    /// `control.metrics` never reads half of one.
    private let figures: FigureSequence

    public convenience init(_ text: String, registry: PluginRegistry) throws(ChainError) {
        try self.init(specs: FilterSpec.parseChain(text), registry: registry)
    }

    public init(specs: [FilterSpec], registry: PluginRegistry) throws(ChainError) {
        self.specs = specs
        let instances = try makeInstances(specs, registry: registry, kind: .audio)
        stages = instances.map { Stage($0) }
        control = ChainControl(instances: instances, timings: stages.map(\.timing), groups: stageGroupPolicy(for: specs), kind: .audio)
        edits = control.edits
        figures = control.figures
    }

    package var filters: [FilterInstance] { stages.map(\.instance) }

    /// `bufferingLatency` in microseconds.
    public var latencyMicroseconds: Int64 {
        guard let rate = outputFormat?.sampleRate, rate > 0 else { return 0 }
        return Int64(bufferingLatency) * 1_000_000 / Int64(rate)
    }

    /// [process] Negotiates every filter and sizes the FIFOs and buffers. Pending samples are dropped:
    /// call `flush` first to keep them.
    @discardableResult
    public func negotiate(_ input: AudioFormat) throws(ChainError) -> AudioFormat {
        inputFormat = nil
        applyPendingEdits()
        var format = input
        var inputs: [StreamFormat?] = []
        var outputs: [StreamFormat?] = []
        var latencies: [Int] = []
        for stage in stages {
            let plan = try AudioChain.plan(stage.instance, input: format, reusing: stage)
            AudioChain.install(plan, into: stage)
            stage.fill = 0
            inputs.append(.audio(format))
            outputs.append(.audio(plan.output))
            latencies.append(plan.negotiation.latency)
            format = plan.output
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
        inputFormat = input
        framesIn = 0
        framesOut = 0
        return format
    }

    /// [process] Runs one chunk of any size through the chain; `emit` receives every block that comes
    /// out, in order, valid only during the call. A chunk in another format than the
    /// negotiated one renegotiates first (dropping pending samples of the old format).
    public func process(_ block: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        try prepare(for: block.format)
        framesIn += block.frameCount
        defer { HostContext.leaveProcess() }
        try feed(stage: 0, block) { out in
            framesOut += out.frameCount
            emit(out)
        }
    }

    /// [process] What `process` does before a chunk: applies pending parameter edits and
    /// negotiates for `format` when it is not the negotiated one (dropping pending samples
    /// of the old format) or a filter needs configure. After it, `maxOutputFrames` is exact
    /// for the next chunk. Allocation-free when nothing changed.
    public func prepare(for format: AudioFormat) throws(ChainError) {
        if edits.hasPending { applyPendingEdits() }
        if inputFormat != format || anyFilterNeedsConfigure { try negotiate(format) }
    }

    /// [process] The most frames `process` of a chunk of `frames` frames can emit, from the
    /// state the chain is in now (call `prepare` first; 0 before negotiation), as FFmpeg's
    /// `swr_get_out_samples`. Stage by stage: the samples waiting in its FIFO plus what
    /// reaches it, in whole blocks, each call writing at most its input (in place) or the
    /// output buffer the engine lends it (out of place; at least the rate-converted count
    /// plus 16). Exact for in-place chains; a resampler makes it an upper bound.
    public func maxOutputFrames(forInputFrames frames: Int) -> Int {
        guard inputFormat != nil else { return 0 }
        var reaching = frames
        for index in 0..<stages.count {
            let stage = stages[index]
            let available = reaching + stage.fill
            let perCall = stage.blockFrames > 0 ? stage.blockFrames : available
            let calls = stage.blockFrames > 0 ? available / stage.blockFrames : (available > 0 ? 1 : 0)
            var written = perCall
            if let out = stage.out, !(stage.bypassed && stage.delay == nil) {
                written = max(out.capacityFrames, outputBound(frames: perCall, from: stage.input, to: stage.output))
            }
            reaching = calls * written
        }
        return reaching
    }

    /// [process] Pushes out samples waiting in re-block FIFOs, padded with silence to a whole block,
    /// at the end of a stream. The padding is part of the output.
    public func flush(emit: (AudioBlock) -> Void) throws(ChainError) {
        for index in stages.indices {
            let stage = stages[index]
            guard stage.blockFrames > 0, stage.fill > 0, let fifo = stage.fifo else { continue }
            let channels = stage.input.channels
            (fifo.samples + stage.fill * channels).initialize(repeating: 0, count: (stage.blockFrames - stage.fill) * channels)
            stage.fill = stage.blockFrames
            var template = AudioBlock(samples: fifo.samples, frameCount: 0, format: stage.input,
                                      source: stage.fifoSource, userID: stage.fifoUserID,
                                      timestampMicroseconds: stage.fifoTimestamp)
            template.raw.frame_count = 0
            try runFullFIFO(stage: index, template: template, emit: emit)
        }
    }

    /// [process] Ends the stream so that the output holds every input sample: feeds silence until
    /// `latency` + (the input's length at the output rate) frames have come out since the
    /// negotiation, and cuts the last block there. Together with dropping the first
    /// `latency` output frames, the output then has the input's length and lines up with it
    /// sample for sample. The blocks keep the source and user of `template` (the stream's
    /// last block, or nil for a file).
    public func drain(template: AudioBlock? = nil, emit: (AudioBlock) -> Void) throws(ChainError) {
        guard let input = inputFormat, let output = outputFormat else { return }
        let expected = Int((Double(framesIn) * Double(output.sampleRate) / Double(input.sampleRate)).rounded())
        let target = latency + expected
        let chunk = max(input.framesPer10ms, 1)
        if silence == nil || silence!.capacityFrames < chunk || silence!.channels != input.channels {
            silence = AudioStorage(capacityFrames: chunk, channels: input.channels)
        }
        // Enough silence to push out every filter's delay and every FIFO, with a margin.
        defer { HostContext.leaveProcess() }
        var budget = (bufferingLatency + chunk) * input.sampleRate / max(output.sampleRate, 1) + 4 * chunk + 64
        var timestamp = Int64(framesIn) * 1_000_000 / Int64(input.sampleRate)
        while framesOut < target, budget > 0 {
            var block = AudioBlock(samples: silence!.samples, frameCount: chunk, format: input,
                                   timestampMicroseconds: timestamp)
            if let template {
                block.raw.source = template.raw.source
                block.raw.user_id = template.raw.user_id
            }
            try feed(stage: 0, block) { out in
                let room = target - framesOut
                guard room > 0 else { return }
                var cut = out
                cut.raw.frame_count = UInt32(min(out.frameCount, room))
                framesOut += cut.frameCount
                emit(cut)
            }
            budget -= chunk
            timestamp += Int64(chunk) * 1_000_000 / Int64(input.sampleRate)
        }
    }

    /// [process] Forgets filter history and pending samples (a stream discontinuity).
    public func reset() {
        for stage in stages {
            stage.instance.resetOnProcessThread()
            stage.fill = 0
            stage.delay?.clear()
        }
    }

    /// [control, before this chain processes] Continues the figures of `old`, the chain this one
    /// replaces (the same filter, k-th occurrence to k-th: same recorder); see `VideoChain.carryMetrics`.
    package func carryMetrics(from old: ChainControl) {
        let carried = control.carryTimings(from: old)
        for index in stages.indices { if let timing = carried[index] { stages[index].timing = timing } }
    }

    /// A plain loop: `contains(where:)` is unspecialized in debug builds and allocates.
    private var anyFilterNeedsConfigure: Bool {
        for index in 0..<stages.count where stages[index].instance.needsConfigure { return true }
        return false
    }

    // MARK: - Run-time control (edits applied on the processing thread)

    /// [control] One prepared replacement stage for `input` (`ChainControl.prepareReplacement`).
    static func planStage(_ instance: FilterInstance, _ input: StreamFormat) throws(ChainError) -> (stage: AnyObject, output: StreamFormat, latency: Int) {
        guard case .audio(let format) = input else { preconditionFailure("an audio chain records audio formats") }
        let plan = try AudioChain.plan(instance, input: format, reusing: nil)
        let stage = Stage(instance)
        install(plan, into: stage)
        return (stage, .audio(plan.output), plan.negotiation.latency)
    }

    func stageParts(_ index: Int) -> (instance: FilterInstance, timing: TimingRecorder) {
        (stages[index].instance, stages[index].timing)
    }

    func setStageBypassed(_ index: Int, _ bypassed: Bool) { stages[index].bypassed = bypassed }

    func swapIn(_ edit: ChainEdit) {
        let current = stages[edit.stage]
        let stale = edit.preparedInput == nil || edit.preparedInput != (inputFormat == nil ? nil : .audio(current.input))
        var k = 0
        while k < edit.replacements.count {
            let stage = stages[edit.stage + k]
            let fresh = edit.replacements[k] as! Stage
            // Samples waiting in the FIFO stay when the new stage takes the same input.
            if !stale, stage.fill > 0, let old = stage.fifo, let new = fresh.fifo,
               new.channels == old.channels, fresh.blockFrames >= stage.fill {
                new.samples.update(from: old.samples, count: stage.fill * old.channels)
                fresh.fill = stage.fill
                fresh.fifoTimestamp = stage.fifoTimestamp
                fresh.fifoSource = stage.fifoSource
                fresh.fifoUserID = stage.fifoUserID
            }
            swap(&stage.instance, &fresh.instance)
            swap(&stage.negotiation, &fresh.negotiation)
            swap(&stage.input, &fresh.input)
            swap(&stage.output, &fresh.output)
            swap(&stage.blockFrames, &fresh.blockFrames)
            swap(&stage.maxOutputFrames, &fresh.maxOutputFrames)
            swap(&stage.latencyMicroseconds, &fresh.latencyMicroseconds)
            swap(&stage.fifo, &fresh.fifo)
            swap(&stage.fill, &fresh.fill)
            swap(&stage.fifoTimestamp, &fresh.fifoTimestamp)
            swap(&stage.fifoSource, &fresh.fifoSource)
            swap(&stage.fifoUserID, &fresh.fifoUserID)
            swap(&stage.out, &fresh.out)
            swap(&stage.delay, &fresh.delay)
            k += 1
        }
        if stale { inputFormat = nil }
        updateLatency()
        outputFormat = stages.last?.output ?? outputFormat
    }

    private func updateLatency() {
        var seconds = 0.0
        var buffering = 0.0
        var rate = inputFormat?.sampleRate ?? 0
        for index in 0..<stages.count {
            let stage = stages[index]
            guard let n = stage.negotiation, stage.output.sampleRate > 0, stage.input.sampleRate > 0 else { continue }
            seconds += Double(n.latency) / Double(stage.output.sampleRate)
            buffering += Double(n.blockFrames > 0 ? n.blockFrames - 1 : 0) / Double(stage.input.sampleRate)
            rate = stage.output.sampleRate
        }
        latency = Int((seconds * Double(rate)).rounded())
        bufferingLatency = latency + Int((buffering * Double(rate)).rounded())
        control.publish(latency: latency)
    }

    /// A stage's negotiated settings and buffers, computed on whichever thread negotiates.
    struct Plan {
        var negotiation: Negotiation
        var input: AudioFormat
        var output: AudioFormat
        var fifo: AudioStorage
        var out: AudioStorage?
        var delay: AudioDelayLine?
    }

    /// Configures `instance` for `input` and sizes its FIFO and buffers (reusing `existing`'s
    /// when they fit).
    static func plan(_ instance: FilterInstance, input format: AudioFormat, reusing existing: Stage?) throws(ChainError) -> Plan {
        let n = try instance.configure(input: .audio(format))
        guard case .audio(let out) = n.output else { preconditionFailure("configure checks the kind") }
        guard out.channels > 0, out.sampleRate > 0 else {
            throw .refused(filter: instance.type.id, input: .audio(format), message: "the plugin answered an empty output format \(out)")
        }
        let fifoFrames = n.blockFrames > 0 ? n.blockFrames : max(format.framesPer10ms * 4, 1024)
        var fifo = existing?.fifo
        if fifo?.capacityFrames != fifoFrames || fifo?.channels != format.channels {
            fifo = AudioStorage(capacityFrames: fifoFrames, channels: format.channels)
        }
        var output: AudioStorage?
        if instance.type.processing == .outOfPlace {
            let perCall = n.blockFrames > 0 ? n.blockFrames : fifoFrames
            let need = max(n.maxOutputFrames, outputBound(frames: perCall, from: format, to: out))
            output = existing?.out
            if (output?.capacityFrames ?? 0) < need || output?.channels != out.channels {
                output = AudioStorage(capacityFrames: need, channels: out.channels)
            }
        }
        var delay: AudioDelayLine?
        if instance.type.processing == .inPlace, n.latency > 0 {
            delay = existing?.delay?.frames == n.latency && existing?.delay?.channels == format.channels
                ? existing?.delay : AudioDelayLine(frames: n.latency, channels: format.channels, blockFrames: fifoFrames)
            delay?.clear()
        }
        return Plan(negotiation: n, input: format, output: out, fifo: fifo!, out: output, delay: delay)
    }

    private static func install(_ plan: Plan, into stage: Stage) {
        stage.negotiation = plan.negotiation
        stage.input = plan.input
        stage.output = plan.output
        stage.blockFrames = plan.negotiation.blockFrames
        stage.maxOutputFrames = plan.negotiation.maxOutputFrames
        stage.latencyMicroseconds = Int64(plan.negotiation.latency) * 1_000_000 / Int64(plan.output.sampleRate)
        stage.fifo = plan.fifo
        stage.out = plan.out
        stage.delay = plan.delay
    }

    // MARK: - Re-blocking

    private func feed(stage index: Int, _ block: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        guard index < stages.count else {
            emit(block)
            return
        }
        let stage = stages[index]
        let channels = stage.input.channels
        if stage.blockFrames == 0 {
            // Any size: in place on a copy (the caller's samples are read-only), or straight
            // from the input into the output buffer.
            if stage.instance.type.processing == .inPlace {
                if stage.fifo!.capacityFrames < block.frameCount {
                    stage.fifo = AudioStorage(capacityFrames: block.frameCount, channels: channels)
                }
                stage.fifo!.samples.update(from: block.samples, count: block.frameCount * channels)
                var copy = block
                copy.raw.samples = stage.fifo!.samples
                try run(stage: index, copy, emit: emit)
            } else {
                try run(stage: index, block, emit: emit)
            }
            return
        }
        var offset = 0
        let rate = Int64(stage.input.sampleRate)
        while offset < block.frameCount {
            let take = min(block.frameCount - offset, stage.blockFrames - stage.fill)
            if stage.fill == 0 {
                stage.fifoTimestamp = block.timestampMicroseconds + Int64(offset) * 1_000_000 / rate
                stage.fifoSource = block.raw.source
                stage.fifoUserID = block.raw.user_id
            }
            (stage.fifo!.samples + stage.fill * channels).update(from: block.samples + offset * channels, count: take * channels)
            stage.fill += take
            offset += take
            if stage.fill == stage.blockFrames {
                try runFullFIFO(stage: index, template: block, emit: emit)
            }
        }
    }

    private func runFullFIFO(stage index: Int, template: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        let stage = stages[index]
        var full = template
        full.raw.samples = stage.fifo!.samples
        full.raw.frame_count = UInt32(stage.blockFrames)
        full.raw.timestamp_us = stage.fifoTimestamp
        stage.fill = 0
        try run(stage: index, full, emit: emit)
    }

    /// [process] After each call of a stage: its figures, for `metrics`. Per stage, not per
    /// chunk: stages that re-block count blocks of their own size, so the chain has no common
    /// instant to publish.
    @inline(__always) private func publishFigures(of stage: Stage) {
        figures.beginWrite()
        stage.timing.publish()
        figures.endWrite()
    }

    /// Calls the filter on exactly this block and feeds what it produced to the next stage.
    private func run(stage index: Int, _ block: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        let stage = stages[index]
        if stage.bypassed, stage.delay == nil {
            // Nothing to keep in step: the filter is not called at all.
            stage.timing.recordBypass()
            publishFigures(of: stage)
            try feed(stage: index + 1, block, emit: emit)
            return
        }
        let input = stage.slots
        let output = stage.slots + 1
        input.pointee = block.raw
        if stage.out != nil {
            let bound = outputBound(frames: block.frameCount, from: stage.input, to: stage.output)
            if stage.out!.capacityFrames < bound {
                stage.out = AudioStorage(capacityFrames: bound, channels: stage.output.channels)
            }
            output.pointee = block.raw
            output.pointee.samples = stage.out!.samples
            output.pointee.frame_count = UInt32(stage.out!.capacityFrames)
            output.pointee.sample_rate = UInt32(stage.output.sampleRate)
            output.pointee.channels = UInt32(stage.output.channels)
        } else {
            output.pointee = block.raw
        }
        // In place with latency: the delay line sees every block, so that a bypass can hand on
        // the input delayed exactly as the filter delays it (into the line's own scratch: the
        // filter is about to overwrite the block).
        var delayed: UnsafeMutablePointer<Int16>?
        if let delay = stage.delay {
            delayed = delay.push(block.samples, frames: block.frameCount, keepDelayed: stage.bypassed)
        }
        let start = monotonicNanoseconds()
        let status = stage.instance.processAudio(stage.out != nil ? UnsafePointer(input) : UnsafePointer(output), output)
        guard status == RAWFX_OK else {
            stage.timing.recordError()
            throw .processFailed(filter: stage.instance.type.id, status: status, message: stage.instance.lastError)
        }
        if let out = stage.out, Int(output.pointee.frame_count) > out.capacityFrames {
            stage.timing.recordError()
            throw .processFailed(filter: stage.instance.type.id, status: Int32(RAWFX_ERR_INTERNAL),
                                 message: "wrote \(output.pointee.frame_count) frames into a buffer of \(out.capacityFrames)")
        }
        output.pointee.timestamp_us = block.raw.timestamp_us &- stage.latencyMicroseconds
        if stage.bypassed {
            // The filter ran to keep its state; its output is replaced by the delayed input.
            stage.timing.recordBypass()
            output.pointee.samples = delayed!
            output.pointee.frame_count = block.raw.frame_count
        } else {
            stage.timing.record(nanoseconds: monotonicNanoseconds() &- start)
        }
        publishFigures(of: stage)
        if output.pointee.frame_count > 0 { try feed(stage: index + 1, AudioBlock(output.pointee), emit: emit) }
    }
}

/// The last `frames` interleaved frames of a stream, for a bypass that must delay its input
/// exactly as the bypassed filter does. Fixed size, allocated at negotiation.
final class AudioDelayLine {
    let frames: Int
    let channels: Int
    private let ring: UnsafeMutablePointer<Int16>
    private var position = 0
    /// Where `push` writes the delayed block when asked; grown once for a larger block.
    private var scratch: AudioStorage

    init(frames: Int, channels: Int, blockFrames: Int) {
        self.frames = frames
        self.channels = channels
        ring = .allocate(capacity: frames * channels)
        ring.initialize(repeating: 0, count: frames * channels)
        scratch = AudioStorage(capacityFrames: blockFrames, channels: channels)
    }

    deinit { ring.deallocate() }

    func clear() {
        ring.update(repeating: 0, count: frames * channels)
        position = 0
    }

    /// Remembers `count` frames of `samples`; with `keepDelayed`, also returns those frames
    /// delayed by `frames` (valid until the next call).
    func push(_ samples: UnsafePointer<Int16>, frames count: Int, keepDelayed: Bool) -> UnsafeMutablePointer<Int16>? {
        if keepDelayed, scratch.capacityFrames < count { scratch = AudioStorage(capacityFrames: count, channels: channels) }
        var done = 0
        while done < count {
            let run = min(count - done, frames - position)
            let slot = ring + position * channels
            if keepDelayed { (scratch.samples + done * channels).update(from: slot, count: run * channels) }
            slot.update(from: samples + done * channels, count: run * channels)
            done += run
            position = position + run == frames ? 0 : position + run
        }
        return keepDelayed ? scratch.samples : nil
    }
}

/// The most frames a rate change can turn `frames` into, with room for a filter's phase.
func outputBound(frames: Int, from input: AudioFormat, to output: AudioFormat) -> Int {
    guard input.sampleRate > 0 else { return frames }
    return (frames * output.sampleRate + input.sampleRate - 1) / input.sampleRate + 16
}

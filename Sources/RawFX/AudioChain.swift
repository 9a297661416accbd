#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A chain of audio filters over interleaved 16-bit PCM.
///
/// The chain re-blocks: a filter that asked for a fixed block (SpeexDSP's 10 ms) receives
/// exactly that many frames per call whatever chunk sizes arrive, and a filter that takes
/// any size gets the chunk as it comes. Output reaches the caller through `emit`, one block
/// at a time, so one input chunk may yield zero, one or several output blocks.
///
/// Steady state allocates nothing: re-block FIFOs and output buffers are sized at
/// negotiation (a chunk larger than any seen before grows a scratch buffer once).
public final class AudioChain: @unchecked Sendable {
    final class Stage {
        let instance: FilterInstance
        let timing = TimingRecorder()
        var input = AudioFormat(sampleRate: 0, channels: 0)
        var output = AudioFormat(sampleRate: 0, channels: 0)
        var blockFrames = 0
        var maxOutputFrames = 0
        /// Re-block FIFO (blockFrames > 0) or in-place scratch (blockFrames == 0).
        var fifo: AudioStorage?
        var fill = 0
        var fifoTimestamp: Int64 = 0
        /// Out-of-place output.
        var out: AudioStorage?
        /// The C frames handed to the plugin: [0] input, [1] output (the same for in place).
        let slots = UnsafeMutablePointer<rawfx_audio_frame>.allocate(capacity: 2)
        init(_ instance: FilterInstance) {
            self.instance = instance
            slots.initialize(repeating: rawfx_audio_frame(), count: 2)
        }
        deinit { slots.deallocate() }
    }

    public let specs: [FilterSpec]
    let stages: [Stage]
    public private(set) var inputFormat: AudioFormat?
    public private(set) var outputFormat: AudioFormat?
    /// The worst-case delay from input to output, in frames at the output rate: the filters'
    /// own latencies plus the re-blocking wait (block − 1 frames per fixed-block filter).
    public private(set) var latency = 0

    public convenience init(_ text: String, registry: PluginRegistry) throws(ChainError) {
        try self.init(specs: FilterSpec.parseChain(text), registry: registry)
    }

    public init(specs: [FilterSpec], registry: PluginRegistry) throws(ChainError) {
        self.specs = specs
        stages = try makeInstances(specs, registry: registry, kind: .audio).map(Stage.init)
    }

    public var filters: [FilterInstance] { stages.map(\.instance) }

    /// Latency in microseconds (see `latency`).
    public var latencyMicroseconds: Int64 {
        guard let rate = outputFormat?.sampleRate, rate > 0 else { return 0 }
        return Int64(latency) * 1_000_000 / Int64(rate)
    }

    /// Negotiates every filter and sizes the FIFOs and buffers. Pending samples are dropped:
    /// call `flush` first to keep them.
    @discardableResult
    public func negotiate(_ input: AudioFormat) throws(ChainError) -> AudioFormat {
        inputFormat = nil
        var format = input
        var seconds = 0.0
        for stage in stages {
            let n = try stage.instance.configure(input: .audio(format))
            guard case .audio(let out) = n.output else { preconditionFailure("configure checks the kind") }
            guard out.channels > 0, out.sampleRate > 0 else {
                throw .refused(filter: stage.instance.type.id, input: .audio(format), message: "the plugin answered an empty output format \(out)")
            }
            stage.input = format
            stage.output = out
            stage.blockFrames = n.blockFrames
            stage.maxOutputFrames = n.maxOutputFrames
            stage.fill = 0
            let fifoFrames = n.blockFrames > 0 ? n.blockFrames : max(format.framesPer10ms * 4, 1024)
            if stage.fifo?.capacityFrames != fifoFrames || stage.fifo?.channels != format.channels {
                stage.fifo = AudioStorage(capacityFrames: fifoFrames, channels: format.channels)
            }
            if stage.instance.type.processing == .outOfPlace {
                let perCall = n.blockFrames > 0 ? n.blockFrames : fifoFrames
                let need = max(n.maxOutputFrames, outputBound(frames: perCall, from: format, to: out))
                if (stage.out?.capacityFrames ?? 0) < need || stage.out?.channels != out.channels {
                    stage.out = AudioStorage(capacityFrames: need, channels: out.channels)
                }
            } else {
                stage.out = nil
            }
            seconds += Double(n.blockFrames > 0 ? n.blockFrames - 1 : 0) / Double(format.sampleRate)
            seconds += Double(n.latency) / Double(out.sampleRate)
            format = out
        }
        latency = Int((seconds * Double(format.sampleRate)).rounded())
        outputFormat = format
        inputFormat = input
        return format
    }

    /// Runs one chunk of any size through the chain; `emit` receives every block that comes
    /// out, in order, valid only during the call. A chunk in another format than the
    /// negotiated one renegotiates first (dropping pending samples of the old format).
    public func process(_ block: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        if inputFormat != block.format || anyFilterNeedsConfigure { try negotiate(block.format) }
        try feed(stage: 0, block, emit: emit)
    }

    /// Pushes out samples waiting in re-block FIFOs, padded with silence to a whole block,
    /// at the end of a stream. The padding is part of the output.
    public func flush(emit: (AudioBlock) -> Void) throws(ChainError) {
        for index in stages.indices {
            let stage = stages[index]
            guard stage.blockFrames > 0, stage.fill > 0, let fifo = stage.fifo else { continue }
            let channels = stage.input.channels
            (fifo.samples + stage.fill * channels).initialize(repeating: 0, count: (stage.blockFrames - stage.fill) * channels)
            stage.fill = stage.blockFrames
            var template = AudioBlock(samples: fifo.samples, frameCount: 0, format: stage.input,
                                      timestampMicroseconds: stage.fifoTimestamp)
            template.raw.frame_count = 0
            try runFullFIFO(stage: index, template: template, emit: emit)
        }
    }

    /// Forgets filter history and pending samples (a stream discontinuity).
    public func reset() {
        for stage in stages {
            stage.instance.reset()
            stage.fill = 0
        }
    }

    public var metrics: [Metrics] { stages.map { $0.timing.snapshot(name: $0.instance.type.id) } }

    /// A plain loop: `contains(where:)` is unspecialized in debug builds and allocates.
    private var anyFilterNeedsConfigure: Bool {
        for index in 0..<stages.count where stages[index].instance.needsConfigure { return true }
        return false
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

    /// Calls the filter on exactly this block and feeds what it produced to the next stage.
    private func run(stage index: Int, _ block: AudioBlock, emit: (AudioBlock) -> Void) throws(ChainError) {
        let stage = stages[index]
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
        stage.timing.record(nanoseconds: monotonicNanoseconds() &- start)
        if output.pointee.frame_count > 0 { try feed(stage: index + 1, AudioBlock(output.pointee), emit: emit) }
    }
}

/// The most frames a rate change can turn `frames` into, with room for a filter's phase.
func outputBound(frames: Int, from input: AudioFormat, to output: AudioFormat) -> Int {
    guard input.sampleRate > 0 else { return frames }
    return (frames * output.sampleRate + input.sampleRate - 1) / input.sampleRate + 16
}

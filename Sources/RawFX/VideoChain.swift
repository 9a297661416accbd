/// A chain of video filters, negotiated end to end before the first frame.
///
/// `process` runs a frame through every filter with no heap allocation in steady state:
/// in-place filters edit the frame they are given, out-of-place filters write a buffer the
/// chain allocated for them at negotiation and reuses for every frame. A frame whose format
/// differs from the negotiated one (size, range, rotation) renegotiates first.
///
/// Not thread-safe: one thread processes. To replace a chain while frames flow from another
/// thread, use `SwappableVideoChain`.
public final class VideoChain: @unchecked Sendable {
    final class Stage {
        let instance: FilterInstance
        let timing = TimingRecorder()
        var output: VideoBuffer?
        init(_ instance: FilterInstance) { self.instance = instance }
    }

    public let specs: [FilterSpec]
    let stages: [Stage]
    public private(set) var inputFormat: VideoFormat?
    public private(set) var outputFormat: VideoFormat?
    /// Frames of delay along the chain (sum of the filters' latencies).
    public private(set) var latency = 0
    /// One C frame per stage boundary (stages + 1), reused for every frame.
    private let frames: UnsafeMutablePointer<rawfx_video_frame>

    /// Builds a chain from its text, e.g. `watermark=image=logo.png,scale=width=1280:height=720`.
    public convenience init(_ text: String, registry: PluginRegistry) throws(ChainError) {
        try self.init(specs: FilterSpec.parseChain(text), registry: registry)
    }

    /// Creates an instance per spec and sets its parameters (by name or position).
    public init(specs: [FilterSpec], registry: PluginRegistry) throws(ChainError) {
        self.specs = specs
        stages = try makeInstances(specs, registry: registry, kind: .video).map(Stage.init)
        frames = .allocate(capacity: stages.count + 1)
        frames.initialize(repeating: rawfx_video_frame(), count: stages.count + 1)
    }

    deinit { frames.deallocate() }

    /// The instances, in chain order.
    public var filters: [FilterInstance] { stages.map(\.instance) }

    /// Negotiates every filter in order and allocates the out-of-place buffers. Returns the
    /// chain's output format. On refusal the chain stays unnegotiated.
    @discardableResult
    public func negotiate(_ input: VideoFormat) throws(ChainError) -> VideoFormat {
        inputFormat = nil
        var format = input
        var total = 0
        for stage in stages {
            let n = try stage.instance.configure(input: .video(format))
            guard case .video(let out) = n.output else { preconditionFailure("configure checks the kind") }
            if stage.instance.type.processing == .outOfPlace {
                if stage.output?.format != out { stage.output = VideoBuffer(format: out) }
            } else {
                stage.output = nil
            }
            total += n.latency
            format = out
        }
        latency = total
        outputFormat = format
        inputFormat = input
        return format
    }

    /// Runs `frame` through the chain and returns the output view: `frame` itself when every
    /// filter is in place, otherwise the last out-of-place filter's buffer, valid until the
    /// next call. The timestamp passes through unchanged.
    public func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        if inputFormat != frame.format || anyFilterNeedsConfigure { try negotiate(frame.format) }
        // frames[i] is stage i's input, frames[i + 1] its output: C structs in memory the chain
        // owns, so the plugins get stable pointers without closures or copies to the heap.
        frames[0] = frame.raw
        var index = 0
        // One clock read per stage boundary: a stage's end is the next one's start.
        var start = monotonicNanoseconds()
        while index < stages.count {
            let stage = stages[index]
            let input = frames + index
            let output = frames + index + 1
            if let buffer = stage.output {
                output.pointee = buffer.frame.raw
                output.pointee.timestamp_us = input.pointee.timestamp_us
            } else {
                output.pointee = input.pointee
            }
            let status = stage.instance.processVideo(input, output)
            guard status == RAWFX_OK else {
                stage.timing.recordError()
                throw .processFailed(filter: stage.instance.type.id, status: status, message: stage.instance.lastError)
            }
            let end = monotonicNanoseconds()
            stage.timing.record(nanoseconds: end &- start)
            start = end
            index += 1
        }
        return VideoFrame(frames[stages.count])
    }

    /// A plain loop: `contains(where:)` is unspecialized in debug builds and allocates.
    private var anyFilterNeedsConfigure: Bool {
        for index in 0..<stages.count where stages[index].instance.needsConfigure { return true }
        return false
    }

    /// Tells every filter the stream jumped (seek, source switch): `reset` on each.
    public func reset() { stages.forEach { $0.instance.reset() } }

    /// Frames, errors and p50/p99 time per filter.
    public var metrics: [Metrics] { stages.map { $0.timing.snapshot(name: $0.instance.type.id) } }
}

/// Creates and parameterizes one instance per spec; shared by video and audio chains.
func makeInstances(_ specs: [FilterSpec], registry: PluginRegistry, kind: MediaKind) throws(ChainError) -> [FilterInstance] {
    var instances: [FilterInstance] = []
    for spec in specs {
        let type = try registry.filterType(spec.name)
        guard type.mediaKind == kind else {
            throw .wrongMediaKind(filter: type.id, filterKind: type.mediaKind, chainKind: kind)
        }
        let instance = try type.makeInstance()
        var position = 0
        for argument in spec.arguments {
            if let key = argument.key {
                try instance.set(key, text: argument.value)
            } else {
                guard position < type.parameters.count else {
                    throw .tooManyValues(filter: type.id, count: spec.arguments.filter { $0.key == nil }.count,
                                         parameters: type.parameters.map(\.id))
                }
                try instance.set(type.parameters[position].id, text: argument.value)
                position += 1
            }
        }
        for p in type.parameters where p.isRequired && instance.values[p.id] == nil && p.defaultValue == nil {
            throw .missingParameter(filter: type.id, parameter: p.id)
        }
        instances.append(instance)
    }
    return instances
}

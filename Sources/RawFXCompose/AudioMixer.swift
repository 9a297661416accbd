import RawFX
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why the mixer refused a setting or an input.
public enum MixerError: Error, Hashable, CustomStringConvertible {
    case badSampleRate(Int)
    case tooManyInputs(maximum: Int)
    case duplicateInput(id: String)
    case unknownInput(id: String)

    public var description: String {
        switch self {
        case .badSampleRate(let rate):
            return "mixer sample rate \(rate) Hz: expected a multiple of 100 from 8000 to 96000 (10 ms blocks)"
        case .tooManyInputs(let maximum): return "the mixer already has \(maximum) inputs, its maximum; remove one first"
        case .duplicateInput(let id): return "a mixer input named '\(id)' already exists; input ids are unique"
        case .unknownInput(let id): return "no mixer input named '\(id)'"
        }
    }
}

/// The program's sound: N streams of 16-bit PCM at any rate and channel count mixed into one
/// mono stream (what the SDKs' virtual mic and production studio take), in 10 ms blocks on the
/// compositor's clock.
///
/// Each input (`MixerInput`) is fed from its own thread (a virtual speaker's one-way stream, a
/// file) and converted on that thread to the mixer's rate and mono by the `resample` filter
/// (SpeexDSP), into a ring of one second. `mix(blockIndex:)` takes 10 ms of every input,
/// applies its gain and mute, and sums with saturation to the Int16 range. Nothing is
/// allocated and no lock is taken per block.
/// Unchecked `Sendable`: the output and accumulator are the mix thread's; the inputs reach it through `control` (`Locked`) and the roster `Mailbox`.
public final class AudioMixer: @unchecked Sendable {
    public static let maximumInputs = 64
    public let sampleRate: Int
    /// Samples in one 10 ms block.
    public let blockFrames: Int
    /// Blocks an input buffers before it is heard, and again after it ran dry: a live stream's
    /// jitter allowance. 0 for a file (every block is there when it is needed).
    public let primingBlocks: Int
    private let registry: PluginRegistry?
    private let control = Locked<[MixerInput]>([])
    private let rosters = Mailbox<MixerRoster>()
    @exclusivity(unchecked) private var roster = MixerRoster([])
    private let output: UnsafeMutablePointer<Int16>
    private let accumulator: UnsafeMutablePointer<Float>
    private let originNanoseconds = monotonicNanoseconds()

    /// `registry` finds `resample` for inputs at another rate or channel count; nil: inputs
    /// must come at the mixer's rate, mono.
    public init(sampleRate: Int = 48000, primingBlocks: Int = 2, registry: PluginRegistry? = nil) throws(MixerError) {
        guard (8000...96000).contains(sampleRate), sampleRate % 100 == 0 else { throw .badSampleRate(sampleRate) }
        self.sampleRate = sampleRate
        blockFrames = sampleRate / 100
        self.primingBlocks = max(0, primingBlocks)
        self.registry = registry
        output = .allocate(capacity: blockFrames)
        output.initialize(repeating: 0, count: blockFrames)
        accumulator = .allocate(capacity: blockFrames)
        accumulator.initialize(repeating: 0, count: blockFrames)
    }

    deinit {
        output.deallocate()
        accumulator.deallocate()
    }

    public var format: AudioFormat { AudioFormat(sampleRate: sampleRate, channels: 1) }

    /// [any thread] Adds an input, heard from the next block that finds it primed.
    public func addInput(id: String, gainDecibels: Double = 0) throws(MixerError) -> MixerInput {
        let input = MixerInput(id: id, mixer: format, blockFrames: blockFrames, primingBlocks: primingBlocks,
                               registry: registry, gainDecibels: gainDecibels)
        let next = try control.withLock { (inputs: inout [MixerInput]) throws(MixerError) -> MixerRoster in
            guard inputs.count < Self.maximumInputs else { throw .tooManyInputs(maximum: Self.maximumInputs) }
            guard !inputs.contains(where: { $0.id == id }) else { throw .duplicateInput(id: id) }
            inputs.append(input)
            return MixerRoster(inputs)
        }
        rosters.post { _ in next }
        return input
    }

    /// [any thread] Removes an input from the next block on.
    public func removeInput(_ id: String) throws(MixerError) {
        let next = try control.withLock { (inputs: inout [MixerInput]) throws(MixerError) -> MixerRoster in
            guard let index = inputs.firstIndex(where: { $0.id == id }) else { throw .unknownInput(id: id) }
            inputs.remove(at: index)
            return MixerRoster(inputs)
        }
        rosters.post { _ in next }
    }

    /// [any thread] The input named `id`, if any.
    public func input(_ id: String) -> MixerInput? { control.withLock { $0.first { $0.id == id } } }

    /// [mix thread, one at a time] Block `index` of the program (its timestamp `index` × 10 ms):
    /// 10 ms of every input, gained, summed and saturated. Valid until the next call.
    public func mix(blockIndex index: Int64) -> AudioBlock {
        if rosters.hasPending, let next = rosters.take() {
            rosters.retire(roster)
            roster = next
        }
        let frames = blockFrames
        accumulator.update(repeating: 0, count: frames)
        // An index loop: a for-in over the array is unspecialized in debug builds and allocates
        // per element (a test counts this path's allocations in a debug build).
        let inputs = roster.inputs
        var k = 0
        while k < inputs.count {
            inputs[k].read(into: accumulator, frames: frames)
            k += 1
        }
        for i in 0..<frames {
            // lrintf: round to nearest, ties to even; then saturate to Int16.
            let value = lrintf(accumulator[i])
            output[i] = Int16(clamping: value)
        }
        var block = AudioBlock(samples: output, frameCount: frames, format: format)
        block.raw.timestamp_us = index * 10_000
        return block
    }

    /// The blocks that leave with video frame `frame` of `rate`: those whose start lies in
    /// [t(frame), t(frame + 1)). Consecutive frames cover every block exactly once, and the
    /// audio of an instant leaves with the video frame of that instant.
    public static func blocks(forVideoFrame frame: Int64, rate: FrameRate) -> Range<Int64> {
        let start = rate.timestamp(ofFrame: frame), end = rate.timestamp(ofFrame: frame + 1)
        return (start + 9_999) / 10_000..<(end + 9_999) / 10_000
    }
}

/// The mixer's inputs as the mix thread reads them; immutable.
final class MixerRoster: Sendable {
    let inputs: [MixerInput]
    init(_ inputs: [MixerInput]) { self.inputs = inputs }
}

/// One stream of the mixer.
///
/// [one producer thread at a time] `submit` converts a block to the mixer's rate, mono, and
/// appends it to a one-second ring; [mix thread] the mixer takes 10 ms per block. The ring is
/// single-producer single-consumer: two atomic positions, no lock.
/// Unchecked `Sendable`: the ring is single-producer (the input's thread) single-consumer (the mix thread), positions atomic; the converter chain is the producer's.
public final class MixerInput: @unchecked Sendable {
    public let id: String
    public let format: AudioFormat
    private let blockFrames: Int
    private let primingBlocks: Int
    private let registry: PluginRegistry?
    private let capacity: Int
    private let ring: UnsafeMutablePointer<Int16>
    /// Samples written and read so far (monotonic; position = count % capacity).
    private let written = Atomic<Int>(0)
    private let consumed = Atomic<Int>(0)
    private let gainBits: Atomic<UInt32>
    private let muted = Atomic<Bool>(false)
    private let underrunCount = Atomic<Int>(0)
    private let overflowCount = Atomic<Int>(0)
    /// Producer side: the converter for a block of another format.
    @exclusivity(unchecked) private var converter: AudioChain?
    @exclusivity(unchecked) private var convertedFrom: AudioFormat?
    /// Mix side: waiting for `primingBlocks` blocks before being heard.
    @exclusivity(unchecked) private var priming = true

    init(id: String, mixer: AudioFormat, blockFrames: Int, primingBlocks: Int, registry: PluginRegistry?, gainDecibels: Double) {
        self.id = id
        format = mixer
        self.blockFrames = blockFrames
        self.primingBlocks = primingBlocks
        self.registry = registry
        capacity = mixer.sampleRate
        ring = .allocate(capacity: capacity)
        ring.initialize(repeating: 0, count: capacity)
        gainBits = Atomic(Float(Self.linear(gainDecibels)).bitPattern)
        priming = primingBlocks > 0
    }

    deinit { ring.deallocate() }

    private static func linear(_ decibels: Double) -> Double { pow(10, decibels / 20) }

    /// [any thread] The gain in dB (0: as it comes); applied from the next block.
    public var gainDecibels: Double {
        get { 20 * log10(Double(Float(bitPattern: gainBits.load(ordering: .relaxed)))) }
        set { gainBits.store(Float(Self.linear(newValue)).bitPattern, ordering: .relaxed) }
    }

    /// [any thread] The linear gain (1: as it comes).
    public var gain: Float {
        get { Float(bitPattern: gainBits.load(ordering: .relaxed)) }
        set { gainBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// [any thread] A muted input is read (its ring keeps time) but not heard.
    public var isMuted: Bool {
        get { muted.load(ordering: .relaxed) }
        set { muted.store(newValue, ordering: .relaxed) }
    }

    /// Blocks the mixer found short (silence filled in), and samples dropped because the ring
    /// was full (the producer ran more than a second ahead).
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }
    public var droppedSamples: Int { overflowCount.load(ordering: .relaxed) }

    /// Samples waiting.
    public var buffered: Int { written.load(ordering: .acquiring) - consumed.load(ordering: .relaxed) }

    /// [producer thread] Appends a block of any rate and channel count (converted by the
    /// `resample` filter when it is not the mixer's rate, mono).
    public func submit(_ block: AudioBlock) throws(ChainError) {
        if block.format == format {
            append(block.samples, count: block.frameCount)
            return
        }
        guard let registry else {
            throw .refused(filter: "resample", input: .audio(block.format),
                           message: "the mixer takes \(format) and has no plugin registry to convert \(block.format)")
        }
        if converter == nil || convertedFrom != block.format {
            if let converter, convertedFrom != nil {
                try converter.flush { self.append($0.samples, count: $0.frameCount) }
            }
            converter = try AudioChain(specs: [FilterSpec("resample", [("rate", String(format.sampleRate)), ("channels", "mono")])],
                                       registry: registry)
            convertedFrom = block.format
        }
        try converter!.process(block) { self.append($0.samples, count: $0.frameCount) }
    }

    private func append(_ samples: UnsafeMutablePointer<Int16>, count: Int) {
        let end = written.load(ordering: .relaxed)
        let free = capacity - (end - consumed.load(ordering: .acquiring))
        let taken = min(count, free)
        if taken < count { overflowCount.add(count - taken, ordering: .relaxed) }
        var done = 0
        while done < taken {
            let position = (end + done) % capacity
            let run = min(taken - done, capacity - position)
            (ring + position).update(from: samples + done, count: run)
            done += run
        }
        written.store(end + taken, ordering: .releasing)
    }

    /// [mix thread] Adds `frames` samples × gain into `sum` (nothing while priming or muted;
    /// the samples are consumed either way once primed).
    func read(into sum: UnsafeMutablePointer<Float>, frames: Int) {
        let start = consumed.load(ordering: .relaxed)
        let available = written.load(ordering: .acquiring) - start
        if priming {
            guard available >= primingBlocks * blockFrames else { return }
            priming = false
        }
        let taken = min(frames, available)
        if taken < frames {
            underrunCount.add(1, ordering: .relaxed)
            priming = primingBlocks > 0
        }
        let g = isMuted ? 0 : gain
        var done = 0
        while done < taken {
            let position = (start + done) % capacity
            let run = min(taken - done, capacity - position)
            let from = ring + position
            for i in 0..<run { sum[done + i] += Float(from[i]) * g }
            done += run
        }
        consumed.store(start + taken, ordering: .releasing)
    }
}

import RawFX

/// The output of one call, to compare between runs.
struct Captured: Equatable {
    enum Layout: Equatable {
        case video(width: Int, height: Int)
        case audio(channels: Int)
    }
    var layout: Layout
    /// The picture (rows without padding) or the samples, as bytes.
    var bytes: [UInt8]
    /// The output's format fields: "320x240 limited rotation 0", "480 frames, flags 0".
    var shape: String

    /// What differs between two outputs, for people, or nil when they are equal.
    func difference(from other: Captured) -> String? {
        if shape != other.shape { return "the output is \(other.shape) once and \(shape) the other time" }
        guard bytes != other.bytes else { return nil }
        let count = zip(bytes, other.bytes).count { $0 != $1 } + abs(bytes.count - other.bytes.count)
        let common = min(bytes.count, other.bytes.count)
        let first = (0..<common).first { bytes[$0] != other.bytes[$0] } ?? common
        let place: String
        switch layout {
        case .video(let width, let height):
            place = GuardedVideoFrame.describePictureIndex(first, width: width, height: height)
        case .audio(let channels):
            place = "frame \(first / 2 / channels), channel \(first / 2 % channels)"
        }
        return "\(count) of \(bytes.count) bytes differ, the first at \(place)"
    }
}

/// The buffers of one negotiated configuration, as a host lends them: fills the input,
/// prefills the output, and afterwards checks what the plugin changed.
protocol StreamIO: AnyObject {
    var inputPointer: UnsafeMutableRawPointer { get }
    var outputPointer: UnsafeMutableRawPointer { get }
    /// Input number `seed` for call `call` of a sequence; `variant` picks the output prefill.
    func prepare(seed: Int, call: Int, variant: Int)
    /// After a successful call: bytes the plugin must not have touched (`guard-bytes`) and
    /// the frame struct it returned (`output-format`).
    func verify(label: String, guards: inout Findings, format: inout Findings)
    func capture() -> Captured
    /// The input as prepared (call before process: an in-place filter overwrites it).
    func captureInput() -> Captured
    /// How long the prepared input lasts: a frame at `frameRate`, or the block's frames at its rate.
    func duration(frameRate: Double) -> Double
}

/// The largest output the validator processes: a negotiated output beyond this (a scaler at
/// its maximum size) is configured but not run. 64 Mpixels, 96 MB of I420.
let outputPixelBudget = 1 << 26

/// Makes the buffers for a negotiation, or says why the output is too large to run.
func makeIO(input: StreamFormat, negotiation: rawfx_negotiation, processing: Processing,
            audioCounts: [Int]? = nil) -> Result<StreamIO, StepFailure> {
    switch input {
    case .video(let format):
        let out = VideoFormat(negotiation.output.video)
        if processing == .outOfPlace && out.width * out.height > outputPixelBudget {
            return .failure(StepFailure("output \(out.width)x\(out.height) is over the validator's budget of \(outputPixelBudget) pixels"))
        }
        return .success(VideoIO(input: format, output: negotiation.output.video, processing: processing))
    case .audio(let format):
        let block = Int(negotiation.block_frames)
        let counts = block > 0 ? [block] : audioCounts ?? [(format.sampleRate + 99) / 100]
        let capacity: Int
        if negotiation.max_output_frames > 0 {
            capacity = Int(negotiation.max_output_frames)
        } else {
            capacity = block > 0 ? block : counts.max()!
        }
        if capacity > 10_000_000 {
            return .failure(StepFailure("max_output_frames \(capacity) is over the validator's budget of 10000000 frames"))
        }
        return .success(AudioIO(input: format, counts: counts, output: negotiation.output.audio,
                                capacity: capacity, processing: processing))
    }
}

/// "rawfx_video_frame.width 320 → 160" for the first field that differs, or nil.
private func changedField(_ before: rawfx_video_frame, _ after: rawfx_video_frame) -> String? {
    let fields: [(String, Int, Int)] = [
        ("struct_size", Int(before.struct_size), Int(after.struct_size)),
        ("width", Int(before.width), Int(after.width)), ("height", Int(before.height), Int(after.height)),
        ("pixel_format", Int(before.pixel_format), Int(after.pixel_format)),
        ("color_range", Int(before.color_range), Int(after.color_range)),
        ("rotation", Int(before.rotation), Int(after.rotation)),
        ("planes[0]", Int(bitPattern: before.planes.0), Int(bitPattern: after.planes.0)),
        ("planes[1]", Int(bitPattern: before.planes.1), Int(bitPattern: after.planes.1)),
        ("planes[2]", Int(bitPattern: before.planes.2), Int(bitPattern: after.planes.2)),
        ("strides[0]", Int(before.strides.0), Int(after.strides.0)),
        ("strides[1]", Int(before.strides.1), Int(after.strides.1)),
        ("strides[2]", Int(before.strides.2), Int(after.strides.2)),
        ("timestamp_us", Int(before.timestamp_us), Int(after.timestamp_us)),
    ]
    return fields.first { $0.1 != $0.2 }.map { "\($0.0) \($0.1) → \($0.2)" }
}

/// The two frame structs a call gets, at fixed addresses for the life of the buffers. In
/// place, the output pointer is the input pointer, as rawfx.h promises.
class FrameStructs<Frame> {
    let inFrame: UnsafeMutablePointer<Frame>
    let outFrame: UnsafeMutablePointer<Frame>
    let inPlace: Bool

    init(zero: Frame, inPlace: Bool) {
        inFrame = .allocate(capacity: 1)
        inFrame.initialize(to: zero)
        outFrame = .allocate(capacity: 1)
        outFrame.initialize(to: zero)
        self.inPlace = inPlace
    }

    deinit {
        inFrame.deallocate()
        outFrame.deallocate()
    }

    var inputPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(inFrame) }
    var outputPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(inPlace ? inFrame : outFrame) }
    /// The struct the filter wrote its output into.
    var result: Frame { (inPlace ? inFrame : outFrame).pointee }
}

/// Video: guarded input, and a guarded output for out-of-place filters.
final class VideoIO: FrameStructs<rawfx_video_frame>, StreamIO {
    let input: GuardedVideoFrame
    let output: GuardedVideoFrame?
    private var givenIn = rawfx_video_frame()
    private var givenOut = rawfx_video_frame()
    private var inputBefore: [UInt8] = []

    init(input format: VideoFormat, output: rawfx_video_format, processing: Processing) {
        input = GuardedVideoFrame(format: format)
        self.output = processing == .outOfPlace ? GuardedVideoFrame(format: VideoFormat(output)) : nil
        super.init(zero: rawfx_video_frame(), inPlace: processing == .inPlace)
        if let out = self.output {
            // What the host fills in before the call: planes, strides, the negotiated format.
            givenOut = out.frame
            givenOut.pixel_format = output.pixel_format
            givenOut.color_range = output.color_range
            givenOut.rotation = output.rotation
        }
    }

    func prepare(seed: Int, call: Int, variant: Int) {
        input.fill(seed: seed)
        givenIn = input.frame
        givenIn.timestamp_us = Int64(call) * 33_333
        inFrame.pointee = givenIn
        if let output {
            inputBefore = input.storage.snapshot()
            output.prefill(byte: variant == 0 ? 0x10 : 0xEB)
            givenOut.timestamp_us = givenIn.timestamp_us
            outFrame.pointee = givenOut
        }
    }

    func verify(label: String, guards: inout Findings, format: inout Findings) {
        if let output {
            if let offset = input.storage.firstDifference(from: inputBefore) {
                guards.fail("\(label): wrote into its input frame (\(input.describe(offset))); an out-of-place filter must not", kind: "input")
            }
            if let damage = output.damageOutsidePicture() { guards.fail("\(label): wrote outside the output picture: \(damage)", kind: "output") }
            if let change = changedField(givenIn, inFrame.pointee) { format.fail("\(label): changed the input frame struct: \(change)", kind: "input struct") }
            if let change = changedField(givenOut, outFrame.pointee) {
                format.fail("\(label): the output frame is not the negotiated one: \(change)", kind: "output struct")
            }
        } else {
            if let damage = input.damageOutsidePicture() { guards.fail("\(label): wrote outside the picture: \(damage)", kind: "picture") }
            if let change = changedField(givenIn, inFrame.pointee) {
                format.fail("\(label): an in-place filter changed the frame: \(change)", kind: "in place")
            }
        }
    }

    func capture() -> Captured {
        let frame = result
        let buffer = output ?? input
        // Only the part the frame says it holds (and the buffer has): a filter that reports
        // a smaller picture is the output-format check's business.
        let width = min(Int(frame.width), buffer.format.width), height = min(Int(frame.height), buffer.format.height)
        return Captured(layout: .video(width: width, height: height), bytes: buffer.picture(width: width, height: height),
                        shape: "\(frame.width)x\(frame.height) range \(frame.color_range) rotation \(frame.rotation)")
    }

    func captureInput() -> Captured {
        let width = input.format.width, height = input.format.height
        return Captured(layout: .video(width: width, height: height), bytes: input.picture(width: width, height: height),
                        shape: "\(width)x\(height)")
    }

    func duration(frameRate: Double) -> Double { 1 / frameRate }
}

/// Audio: a guarded block in, and for out-of-place filters a guarded output of the capacity
/// the negotiation asked for. `counts` cycle as the frame counts of successive calls.
final class AudioIO: FrameStructs<rawfx_audio_frame>, StreamIO {
    let format: AudioFormat
    let counts: [Int]
    let input: GuardedAudioBuffer
    let output: GuardedAudioBuffer?
    private let negotiated: rawfx_audio_format
    private var givenIn = rawfx_audio_frame()
    private var givenOut = rawfx_audio_frame()
    private var frames = 0
    private var inputBefore: [UInt8] = []

    init(input format: AudioFormat, counts: [Int], output: rawfx_audio_format, capacity: Int, processing: Processing) {
        self.format = format
        self.counts = counts
        negotiated = output
        input = GuardedAudioBuffer(capacityFrames: counts.max()!, channels: format.channels)
        self.output = processing == .outOfPlace ? GuardedAudioBuffer(capacityFrames: capacity, channels: Int(output.channels)) : nil
        super.init(zero: rawfx_audio_frame(), inPlace: processing == .inPlace)
    }

    func prepare(seed: Int, call: Int, variant: Int) {
        frames = counts[call % counts.count]
        input.fill(seed: seed, frames: frames)
        givenIn = AudioBlock(samples: input.samples, frameCount: frames, format: format,
                             timestampMicroseconds: Int64(call) * 10_000).raw
        // Metadata a filter must pass on unchanged (not zero, so that clearing it shows).
        givenIn.source = rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY)
        givenIn.user_id = 4242 + UInt64(call)
        inFrame.pointee = givenIn
        if let output {
            inputBefore = input.storage.snapshot()
            output.prefill(value: variant == 0 ? 0x1111 : -0x2222, frames: output.capacityFrames)
            // The host's prefill: capacity in frame_count, the negotiated format, the metadata.
            givenOut = givenIn
            givenOut.samples = output.samples
            givenOut.frame_count = UInt32(output.capacityFrames)
            givenOut.sample_rate = negotiated.sample_rate
            givenOut.channels = negotiated.channels
            outFrame.pointee = givenOut
        }
    }

    func verify(label: String, guards: inout Findings, format: inout Findings) {
        let after = result
        // The block's metadata passes unchanged (the host prefilled an out-of-place output with it).
        let metadata = after.timestamp_us != givenIn.timestamp_us ? "timestamp_us \(givenIn.timestamp_us) → \(after.timestamp_us)"
            : after.source != givenIn.source ? "source \(givenIn.source) → \(after.source)"
            : after.user_id != givenIn.user_id ? "user_id \(givenIn.user_id) → \(after.user_id)" : nil
        if let metadata { format.fail("\(label): changed the block's metadata: \(metadata)", kind: "metadata") }
        if output != nil, let change = [("timestamp_us", inFrame.pointee.timestamp_us != givenIn.timestamp_us),
                                         ("source", inFrame.pointee.source != givenIn.source)].first(where: { $0.1 }) {
            format.fail("\(label): changed the input block's \(change.0)", kind: "input metadata")
        }
        if let output {
            if let offset = input.storage.firstDifference(from: inputBefore) {
                guards.fail("\(label): wrote into its input block (byte \(offset - GuardedAudioBuffer.guardSamples * 2) of the samples); an out-of-place filter must not", kind: "input")
            }
            if let damage = output.damage(outsideFrames: output.capacityFrames) {
                guards.fail("\(label): wrote past the output capacity: \(damage)", kind: "capacity")
            }
            if after.samples != givenOut.samples { format.fail("\(label): replaced the output's samples pointer", kind: "samples") }
            if after.frame_count > givenOut.frame_count {
                format.fail("\(label): frame_count \(after.frame_count) is over the capacity \(givenOut.frame_count) it was given", kind: "frame_count")
            }
            if after.sample_rate != negotiated.sample_rate || after.channels != negotiated.channels {
                format.fail("\(label): the output says \(after.sample_rate) Hz x\(after.channels), negotiated \(negotiated.sample_rate) Hz x\(negotiated.channels)", kind: "output format")
            }
        } else {
            if let damage = input.damage(outsideFrames: frames) { guards.fail("\(label): wrote outside the block: \(damage)", kind: "block") }
            let changed = after.samples != givenIn.samples ? "samples pointer"
                : after.frame_count != givenIn.frame_count ? "frame_count \(givenIn.frame_count) → \(after.frame_count)"
                : after.sample_rate != givenIn.sample_rate ? "sample_rate \(givenIn.sample_rate) → \(after.sample_rate)"
                : after.channels != givenIn.channels ? "channels \(givenIn.channels) → \(after.channels)" : nil
            if let changed { format.fail("\(label): an in-place filter changed the block: \(changed)", kind: "in place") }
        }
    }

    func capture() -> Captured {
        let after = result
        let buffer = output ?? input
        let n = min(Int(after.frame_count), buffer.capacityFrames) * buffer.channels
        let bytes = UnsafeRawBufferPointer(start: buffer.samples, count: n * 2)
        return Captured(layout: .audio(channels: buffer.channels), bytes: Array(bytes),
                        shape: "\(after.frame_count) frames at \(after.sample_rate) Hz x\(after.channels), flags \(after.flags)")
    }

    func captureInput() -> Captured {
        let bytes = UnsafeRawBufferPointer(start: input.samples, count: frames * input.channels * 2)
        return Captured(layout: .audio(channels: input.channels), bytes: Array(bytes),
                        shape: "\(frames) frames at \(format.sampleRate) Hz x\(input.channels)")
    }

    func duration(frameRate: Double) -> Double { Double(frames) / Double(format.sampleRate) }
}

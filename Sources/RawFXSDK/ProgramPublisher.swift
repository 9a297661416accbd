import RawFX
import RawFXCompose

/// The program's output side (issue #27): on each tick of the compositor's clock, the output
/// frame and the mixer's audio of the same instant go to one destination, together:
///
/// - `.productionStudio`: the PS sender through `ProductionStudioAdapter` (capability-exact:
///   the compositor is made at the declared width, height and range, so the adapter's
///   negotiation appends nothing and the frame is packed once into the sender's buffer; audio
///   in 10 ms blocks at the mixer's rate, which must be the PS rate, 32000 or 48000).
/// - `.videoSource`: the external video source (`VideoSourceAdapter`), audio to the virtual
///   mic (`VirtualMicAdapter`) when given.
/// - `.shareSource`: the share source, audio to the virtual mic when given.
/// - `.custom`: any sink (a file or a pipe: `ProgramRecorder` in RawFXMedia writes Y4M + WAV
///   or raw PCM).
///
/// Audio and video share the compositor's clock: frame N leaves with the 10 ms blocks whose
/// start lies in [t(N), t(N+1)) (`AudioMixer.blocks(forVideoFrame:rate:)`), so the audio sent
/// always runs ahead of the video sent by less than one block (`avOffsetMicroseconds`).
/// An optional audio chain (e.g. `denoise`) runs on the program's audio before it leaves.
///
/// Nothing is allocated per output frame once warm (the compositor's, the mixer's and the
/// adapters' buffers are all reused).
///
/// Threads: `publish(frameIndex:)` and the clock's `deliver` run on one thread at a time (the
/// clock's thread, or the app's loop with a virtual clock); everything here is confined to it
/// (unchecked: the clock's closure carries it to that thread).
public final class ProgramPublisher: @unchecked Sendable {
    /// Where the program goes.
    public enum Output {
        case productionStudio(ProductionStudioAdapter)
        case videoSource(VideoSourceAdapter, mic: VirtualMicAdapter?)
        case shareSource(ShareSourceAdapter, mic: VirtualMicAdapter?)
        /// Any sink: `video` gets each output frame, `audio` each block (valid during the call).
        case custom(video: (VideoFrame) -> Bool, audio: (AudioBlock) -> Bool)
    }

    public let program: MeetingProgram
    public let output: Output
    public let frameRate: FrameRate
    public let sampleRate: Int
    private let audioChain: AudioChain?
    /// Whether the first chunk was pumped alone: it anchors caller pacing at the program's
    /// own timeline (pumped later, the schedule would lag by the blocks pushed before).
    private var clockSet = false

    /// Frames and audio samples the destination accepted (sent or queued), and refused.
    public private(set) var framesSent: Int64 = 0
    public private(set) var audioSamplesSent: Int64 = 0
    public private(set) var videoFailures: Int64 = 0
    public private(set) var audioFailures: Int64 = 0
    /// The last status the destination answered for a frame that was not sent.
    public private(set) var lastVideoFailure: PublishStatus?
    /// The timeline positions sent through (µs): video up to the end of the last frame sent,
    /// audio up to the end of the last block sent.
    public private(set) var videoThroughMicroseconds: Int64 = 0
    public private(set) var audioThroughMicroseconds: Int64 = 0
    /// The largest |audio − video| position seen after a frame and its audio left.
    public private(set) var maximumAVOffsetMicroseconds: Int64 = 0
    /// Audio samples sent minus video frames sent × samples per frame (the offset in samples;
    /// |…| < one frame's samples when audio and video keep one clock).
    public var avOffsetSamples: Int64 {
        audioSamplesSent - Int64((Double(framesSent) * Double(sampleRate) * Double(frameRate.denominator) / Double(frameRate.numerator)).rounded())
    }
    /// Audio position minus video position (µs) after the last frame.
    public var avOffsetMicroseconds: Int64 { audioThroughMicroseconds - videoThroughMicroseconds }
    /// One frame's duration (µs): the A/V offset's bound.
    public var frameMicroseconds: Int64 { frameRate.timestamp(ofFrame: 1) }

    /// `audioChain`: a chain run on the program's audio before it leaves (e.g. `denoise`;
    /// empty: none). For production studio the adapter's own audio chain is another place.
    public init(program: MeetingProgram, output: Output, audioChain: String = "", registry: PluginRegistry? = nil) throws(ChainError) {
        self.program = program
        self.output = output
        frameRate = program.compositor.configuration.frameRate
        sampleRate = program.mixer.sampleRate
        if audioChain.isEmpty {
            self.audioChain = nil
        } else {
            guard let registry else { throw .contract("a program audio chain (\(audioChain)) needs a plugin registry") }
            self.audioChain = try AudioChain(specs: FilterSpec.parseChain(audioChain), registry: registry)
        }
        if case .productionStudio(let ps) = output {
            let c = ps.capability, f = program.compositor.format
            guard f.width == c.width, f.height == c.height, f.colorRange == c.format.colorRange else {
                throw .contract("the program is \(f.width)x\(f.height) \(f.colorRange), production studio was started for \(c): "
                                + "make the compositor at the capability (no scale or range conversion after composing)")
            }
            guard ps.audioRate == sampleRate else {
                throw .contract("the program's mixer runs at \(sampleRate) Hz, production studio sends at \(ps.audioRate): make the mixer at the PS rate")
            }
        }
    }

    /// [the program's thread] One output instant: composes frame `index`, sends it, then mixes
    /// and sends its audio. Returns the frame (valid until the next compose).
    @discardableResult
    public func publish(frameIndex index: Int64) -> VideoFrame {
        let frame = program.compositor.compose(frameIndex: index)
        send(frame: frame, index: index, audio: AudioMixer.blocks(forVideoFrame: index, rate: frameRate))
        return frame
    }

    /// [the clock's thread] A tick of a `CompositorClock` (see `makeClock`).
    public func send(_ tick: CompositorClock.Tick) {
        send(frame: tick.frame, index: tick.index, audio: tick.audio)
    }

    /// A steady clock that composes and publishes every frame in real time (start it once the
    /// destination is sending: after PS `onStartSend`).
    public func makeClock(maximumLag: Int64 = 5) -> CompositorClock {
        CompositorClock(compositor: program.compositor, mixer: program.mixer, maximumLag: maximumLag) { [unowned self] tick, _ in
            self.send(tick)
        }
    }

    private func send(frame: VideoFrame, index: Int64, audio blocks: Range<Int64>) {
        let status: PublishStatus
        switch output {
        case .productionStudio(let ps): status = ps.pushFrame(frame)
        case .videoSource(let source, _): status = source.pushFrame(frame)
        case .shareSource(let share, _): status = share.pushFrame(frame)
        case .custom(let video, _): status = video(frame) ? .sent : .invalid("the sink refused the frame")
        }
        switch status {
        case .sent, .queued, .queuedDroppingOldest: framesSent += 1
        default:
            videoFailures += 1
            lastVideoFailure = status
        }
        videoThroughMicroseconds = frameRate.timestamp(ofFrame: index + 1)
        // A while loop: a for-in over a Range<Int64> allocates in debug builds.
        var block = blocks.lowerBound
        while block < blocks.upperBound {
            defer { block += 1 }
            var mixed = program.mixer.mix(blockIndex: block)
            if let audioChain {
                do {
                    try audioChain.process(mixed) { sendAudio($0) }
                } catch {
                    audioFailures += 1
                }
            } else {
                mixed.raw.timestamp_us = block * 10_000
                sendAudio(mixed)
            }
            audioThroughMicroseconds = (block + 1) * 10_000
            if !clockSet {
                // The first chunk anchors the caller-paced schedule at its own time.
                clockSet = true
                pump(through: audioThroughMicroseconds)
            }
        }
        pump(through: audioThroughMicroseconds)
        let offset = abs(avOffsetMicroseconds)
        if offset > maximumAVOffsetMicroseconds { maximumAVOffsetMicroseconds = offset }
    }

    private func sendAudio(_ block: AudioBlock) {
        let accepted: Bool
        switch output {
        case .productionStudio(let ps):
            accepted = ps.pushAudio(block.samples, frameCount: block.frameCount, format: block.format,
                                    timestampMicroseconds: block.raw.timestamp_us).isAccepted
        case .videoSource(_, let mic?), .shareSource(_, let mic?):
            accepted = mic.pushAudio(block.samples, frameCount: block.frameCount, format: block.format,
                                     timestampMicroseconds: block.raw.timestamp_us).isAccepted
        case .videoSource(_, nil), .shareSource(_, nil): return
        case .custom(_, let audio): accepted = audio(block)
        }
        if accepted { audioSamplesSent += Int64(block.frameCount) } else { audioFailures += 1 }
    }

    /// `.caller` pacing: the chunks pushed go out now, with their frame (the program's clock
    /// is the pacing).
    private func pump(through time: Int64) {
        let now = time - 10_000
        switch output {
        case .productionStudio(let ps): if ps.audioPacing == .caller { _ = ps.pump(nowMicroseconds: now) }
        case .videoSource(_, let mic?), .shareSource(_, let mic?): if mic.pacing == .caller { _ = mic.pump(nowMicroseconds: now) }
        default: break
        }
    }
}

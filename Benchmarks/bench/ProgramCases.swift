// The meeting program's case (issue #27): a recording bot's whole frame path. 25 emulated users
// (640x360 cameras at 15 fps with jitter, speech-like one-way audio at 32000 Hz) received through
// their pipes into compositor inputs, composed as a 1920x1080 gallery, and sent with the program's
// mixed audio (resampled to 48000 Hz) to a production studio sender that only counts. One unit =
// one output frame at 30 fps: the meeting advanced to the frame's instant (what the SDK's
// callbacks deliver by then), the frame composed and sent, its 3 or 4 audio blocks mixed and sent.
//
// Labels and captions: every tile named by the `text` filter (MeetingProgram.Decorations.standard),
// initials on the placeholder cards, and a caption bar whose text a separate thread changes ten
// times a second (the app's control calls: not on the measured thread).
import Foundation
import RawFX
import RawFXCompose
import RawFXEmulator
import RawFXSDK
import Synchronization

/// A PS sender that only counts (no allocation on the sending thread).
final class CountingPSSender: SDKPSSender, Sendable {
    let video = Atomic<Int>(0)
    let audioSamples = Atomic<Int>(0)
    let capability: PSVideoSourceCapability
    init(capability: PSVideoSourceCapability) { self.capability = capability }
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> MeetingSDKError {
        guard width == capability.width, height == capability.height, format == capability.format,
              frameLength == capability.frameLength else { return .invalidParameter }
        video.add(1, ordering: .relaxed)
        return .success
    }
    func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> MeetingSDKError {
        audioSamples.add(dataLength / 2, ordering: .relaxed)
        return .success
    }
}

/// The bot's frame path, with or without the publishing side (`publish: false`: receive only,
/// the reference that splits a unit's time between receiving and composing + sending).
final class ProgramPipeline: Workload, ThreadCounted {
    let meeting: EmulatedMeeting
    let publisher: ProgramPublisher
    let sender: CountingPSSender
    let publish: Bool
    let threads: Int
    private var frame: Int64 = 0
    private var captions: Thread!
    /// Set when the pipeline goes: the caption thread ends.
    final class Flag: Sendable { let value = Atomic<Bool>(false) }
    private let stop = Flag()

    init(registry: PluginRegistry, publish: Bool, threads: Int = 1) throws {
        self.publish = publish
        self.threads = threads
        let clock = EmulatorClock(manualStart: 0)
        var script = EmulatedMeeting.Script()
        script.seconds = 3600
        script.pictureWidth = 640
        script.pictureHeight = 360
        script.shareWidth = 1920
        script.shareHeight = 1080
        let capability = PSVideoSourceCapability(width: 1920, height: 1080, format: .i420Full)
        let program = try MeetingProgram(compositor: .init(width: 1920, height: 1080, frameRate: FrameRate(30), colorRange: .full,
                                                           layout: .grid, inputTimeoutMicroseconds: 500_000),
                                         registry: registry, receiveChain: "", mode: .sync, audioRate: 48000,
                                         recentSpeakersFirst: true, decorations: .standard, clock: { clock.microseconds })
        meeting = try EmulatedMeeting(program: program, clock: clock, script: script)
        let ps = try ProductionStudioAdapter(capability: capability, registry: registry, audioRate: 48000, pacing: .caller)
        sender = CountingPSSender(capability: capability)
        ps.onStartPSModeResult(true)
        ps.onStartSend(sender)
        publisher = try ProgramPublisher(program: program, output: .productionStudio(ps))
        let stopping = stop
        captions = Thread { [program] in
            var line = 0
            while !stopping.value.load(ordering: .relaxed) {
                program.setCaption("caption line \(line): the numbers for this quarter look good")
                line += 1
                usleep(100_000)
            }
        }
        captions.start()
    }

    deinit { stop.value.store(true, ordering: .relaxed) }

    func prepareSlice() { useEngineThreads() }

    func run(_ i: Int) throws {
        try meeting.advance(toFrame: frame)
        if publish { publisher.publish(frameIndex: frame) }
        frame += 1
    }
}

func programCases() -> [BenchCase] {
    [BenchCase(
        name: "program-25users-1080p30", kind: .video, filters: ["resample"], unit: "frame",
        summary: "a recording bot's program: 25 emulated users (640x360 at 15 fps, jittered; speech at 32000 Hz) received "
            + "through their pipes, composed as a 1920x1080 gallery (recent speakers first), sent to a production studio "
            + "sender with the mixed audio at 48000 Hz; one unit = one output frame of 30 fps (budget 33.3 ms)",
        directSummary: nil,
        make: { context in
            let engine = try ProgramPipeline(registry: context.registry, publish: true)
            let receive = try ProgramPipeline(registry: context.registry, publish: false)
            let two = try ProgramPipeline(registry: context.registry, publish: true, threads: 2)
            return .init(chain: "receive 25 pipes -> compositor grid 1920x1080 -> PS sender (+ mix 48000 Hz)",
                         engine: engine, direct: nil, filterCount: 1,
                         references: [
                            .init(short: "receive", label: "the receive side alone (the meeting's callbacks into the inputs and the mixer)",
                                  workload: receive),
                            .init(short: "2 threads", label: "the same program with RawFXThreadPool.threadCount = 2", workload: two, threads: 2),
                         ])
        })]
}

// A recording bot in Swift (docs/production.md): the emulated 25-user meeting (RawFXEmulator's
// EmulatedMeeting, standing in for the SDK's callbacks) into a MeetingProgram, published by a
// ProgramPublisher on one clock to
//   --ps            production studio (ProductionStudioAdapter over the emulator's PS sender), or
//   VIDEO [AUDIO]   a Y4M file or stdout (-) and a WAV file (ProgramRecorder), for FFmpeg:
//
//   swift run recording-bot --seconds 10 - program.wav | ffmpeg -f yuv4mpegpipe -i - program.mp4
//
// In a real bot: subscribe each user's pipe in onUserJoin / onUserVideoStatusChanged
// (program.subscribe), forward onVirtualSpeakerOneWayAudioReceived to program.oneWayAudio,
// onShareStatusChanged to shareStarted / shareStopped, onUserLeave to userLeft, and start the
// publisher's clock (publisher.makeClock().start()) at PS onStartSend.
#if canImport(Glibc)
import Glibc
#endif
import RawFX
import RawFXCompose
import RawFXEmulator
import RawFXMedia
import RawFXSDK

/// A line on standard error (fd 2).
func report(_ message: String) {
    let line = message + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}

func fail(_ message: String) -> Never {
    report(message)
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var seconds = 10
var toProductionStudio = false
var width = 1280, height = 720
while let first = arguments.first, first.hasPrefix("--") {
    arguments.removeFirst()
    switch first {
    case "--seconds": seconds = Int(arguments.isEmpty ? "" : arguments.removeFirst()) ?? 0
    case "--ps": toProductionStudio = true
    case "--size":
        let parts = (arguments.isEmpty ? "" : arguments.removeFirst()).split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { fail("recording-bot: --size WxH") }
        (width, height) = (parts[0], parts[1])
    default: fail("recording-bot: unknown option \(first)")
    }
}
guard seconds > 0, toProductionStudio || !arguments.isEmpty else {
    fail("usage: recording-bot [--seconds N] [--size WxH] (--ps | VIDEO.y4m|- [AUDIO.wav])")
}

do {
    let registry = PluginRegistry()
    let clock = EmulatorClock(manualStart: 0)
    let rate = FrameRate(30)
    let program = try MeetingProgram(compositor: .init(width: width, height: height, frameRate: rate, colorRange: .full,
                                                       layout: .grid, inputTimeoutMicroseconds: 500_000),
                                     registry: registry, receiveChain: "", mode: .sync, audioRate: 48000,
                                     recentSpeakersFirst: true,
                                     // Each tile named (userJoined), initials on a tile whose video is off, a caption bar.
                                     decorations: .standard, clock: { clock.microseconds })
    var script = EmulatedMeeting.Script()
    script.seconds = seconds
    let meeting = try EmulatedMeeting(program: program, clock: clock, script: script)

    let publisher: ProgramPublisher
    var recorder: ProgramRecorder?
    var session: ProductionStudioSession?
    if toProductionStudio {
        let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: width, height: height, format: .i420Full),
                                             registry: registry, audioRate: 48000, pacing: .caller)
        let made = SDKSessionEmulator(clock: clock).productionStudioSession(ps)
        made.sender.keepBytes = false
        made.startResult(true)  // onStartPSModeResult(true)
        made.startSend()        // onStartSend(sender): sending opens
        session = made
        publisher = try ProgramPublisher(program: program, output: .productionStudio(ps))
    } else {
        let video = arguments[0] == "-" ? MediaOutput(fileDescriptor: 1, name: "stdout") : try MediaOutput(path: arguments[0])
        let audio = arguments.count > 1 ? try MediaOutput(path: arguments[1]) : nil
        let made = try ProgramRecorder(video: video, format: program.compositor.format, frameRate: Y4MRatio(30, 1),
                                       audio: audio, audioFormat: program.mixer.format)
        recorder = made
        publisher = try ProgramPublisher(program: program, output: .custom(video: { made.video($0) }, audio: { made.audio($0) }))
    }
    // The program's clock: virtual here (as fast as it goes); live, `publisher.makeClock().start()`.
    for frame in 0..<script.frameCount {
        try meeting.advance(toFrame: frame)
        // Live captions, as a speech-to-text service would send them: a new line ten times a second.
        if frame % 3 == 0, let speaker = program.activeSpeaker {
            program.setCaption("\(program.name(ofInput: speaker) ?? speaker): caption \(frame / 3)")
        }
        publisher.publish(frameIndex: frame)
    }
    try recorder?.close()
    if let session {
        session.stopSend()  // onStopSend
        report("recording-bot: PS sender got \(session.sender.sentVideo.count) frames, "
               + "\(session.sender.sentAudio.reduce(0) { $0 + $1.dataLength / 2 }) samples")
    }
    report("recording-bot: \(publisher.framesSent) frames, \(publisher.audioSamplesSent) audio samples at \(publisher.sampleRate) Hz, "
          + "A/V offset at most \(publisher.maximumAVOffsetMicroseconds) µs; events \(meeting.events.map { "\($0.event)" })")
} catch {
    fail("recording-bot: \(error)")
}

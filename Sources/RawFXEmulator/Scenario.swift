#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import RawFXSDK
import RawFXMedia
import Synchronization

/// A whole emulated session, for the command line and for smoke tests: the camera through
/// the pre-processor, a virtual camera (external video source) with a capability change
/// mid-stream, a virtual mic paced on the session's clock, and a virtual speaker with the
/// mix and two users, one of whom leaves half-way. Inputs are a Y4M and a WAV file, or the
/// RawFXMedia test pattern and synthetic speech.
public struct EmulatorScenario: Sendable {
    /// A Y4M file for the camera and the virtual camera; nil: the test pattern.
    public var videoInput: String?
    /// A WAV file for the mic and the speaker streams; nil: synthetic speech.
    public var audioInput: String?
    /// Frames through each video hook (fewer if the file is shorter).
    public var frames = 60
    /// Seconds of synthetic speech when there is no WAV.
    public var audioSeconds = 2.0
    /// The test pattern's format.
    public var patternFormat = VideoFormat(width: 1280, height: 720)
    /// What the SDK suggests to the virtual camera (then half of it, after the change).
    public var capability = VideoSourceCapability(width: 1280, height: 720, frame: 30)
    public var preProcessChain = ""
    public var videoSourceChain = ""
    public var speakerChain = ""
    public var micChain = ""
    public var micRate = 48000
    public var videoMode = ProcessingMode.sync
    public var speakerMode = ProcessingMode.sync

    public init() {}

    public func run(registry: PluginRegistry) throws -> EmulatorReport {
        let processor = RawFXProcessor(registry: registry)
        let emulator = SDKSessionEmulator()
        var report = EmulatorReport()

        // Camera → pre-processor.
        let pre = try processor.configurePreProcessor(chain: preProcessChain)
        try emulator.runPreProcessor(pre, source: try videoSource(), count: frames) { _, _ in report.preProcessedFrames += 1 }

        // Virtual camera, with the SDK renegotiating half-way.
        let half = VideoSourceCapability(width: capability.width / 2 & ~1, height: capability.height / 2 & ~1, frame: capability.frame)
        let camera = try processor.configureVideoSource(chain: videoSourceChain, mode: videoMode)
        let session = emulator.videoSourceSession(camera, supported: [capability, half], suggested: capability)
        session.sender.keepBytes = false
        session.initialize()
        session.startSend()
        let source = try videoSource()
        var index = 0
        while index < frames, let frame = try source.nextFrame() {
            if index == frames / 2 { session.propertyChange(supported: [capability, half], suggested: half) }
            camera.pushFrame(frame)
            index += 1
        }
        if videoMode.isAsyncMode { waitForQueue { camera.queuedFrames == 0 } }
        session.stopSend()
        if let frame = try videoSource().nextFrame() { camera.pushFrame(frame) }  // after stop: refused
        session.uninitialize()
        report.videoFramesSent = session.sender.sent.count
        report.videoSizesSent = Set(session.sender.sent.map { "\($0.width)x\($0.height)" }).sorted()

        // Virtual mic on the session's (manual) clock: push 20 ms, pump every 10 ms.
        let (pcm, format) = try audio()
        let mic = try processor.configureVirtualMic(chain: micChain, targetRate: micRate, pacing: .caller)
        let micSession = emulator.micSession(mic)
        micSession.initialize()
        micSession.startSend()
        let step = format.sampleRate / 50
        var offset = 0
        let frameCount = pcm.count / format.channels
        pcm.withUnsafeBufferPointer { p in
            while offset < frameCount {
                let n = min(step, frameCount - offset)
                mic.pushAudio(p.baseAddress! + offset * format.channels, frameCount: n, format: format)
                offset += n
                for _ in 0..<2 {
                    mic.pump(nowMicroseconds: emulator.clock.microseconds)
                    emulator.clock.advance(microseconds: 10_000)
                }
            }
        }
        for _ in 0..<20 {
            mic.pump(nowMicroseconds: emulator.clock.microseconds)
            emulator.clock.advance(microseconds: 10_000)
        }
        micSession.stopSend()
        micSession.uninitialize()
        report.micChunksSent = micSession.sender.sent.count
        report.micChunkBytes = Set(micSession.sender.sent.map(\.dataLength)).sorted()

        // Virtual speaker: the mix and two users; user 2 leaves half-way.
        let blocks = BlockCounter()
        let speaker = try processor.configureVirtualSpeaker(chain: speakerChain, mode: speakerMode, retainInAsync: true) { _, _ in
            blocks.increment()
        }
        let milliseconds = frameCount * 1000 / format.sampleRate
        try emulator.runVirtualSpeaker(speaker, userEvents: speaker, streams: [
            (.mixed, ArrayPCMSource(samples: pcm, format: format)),
            (.oneWay(SDKUser(1)), ArrayPCMSource(samples: pcm, format: format)),
            (.oneWay(SDKUser(2)), ArrayPCMSource(samples: pcm, format: format)),
        ], leaves: [(milliseconds: milliseconds / 2, user: SDKUser(2))], memoryMode: .heap)
        speaker.drain()
        report.speakerStreamsAtEnd = speaker.activeStreams.map(\.description).sorted()
        report.metrics = processor.metrics
        speaker.close()
        report.speakerBlocks = blocks.count
        processor.close()
        report.violations = emulator.violations
        report.outstandingReferences = emulator.ledger.outstandingReferences
        return report
    }

    private func videoSource() throws -> any FrameSource {
        if let videoInput { return try Y4MFrameSource(path: videoInput) }
        return PatternFrameSource(format: patternFormat, count: frames)
    }

    private func audio() throws -> ([Int16], AudioFormat) {
        if let audioInput {
            let reader = try WAVReader(path: audioInput)
            return (try reader.readAll(), reader.format)
        }
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        return (TestAudio.speech(sampleRate: 48000, seconds: audioSeconds), format)
    }

    private func waitForQueue(_ done: () -> Bool) {
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while !done(), monotonicNanoseconds() < deadline { usleepMilliseconds(1) }
        usleepMilliseconds(20)
    }
}

/// What an emulated session did.
public struct EmulatorReport: Sendable, CustomStringConvertible {
    public var preProcessedFrames = 0
    public var videoFramesSent = 0
    public var videoSizesSent: [String] = []
    public var micChunksSent = 0
    public var micChunkBytes: [Int] = []
    public var speakerBlocks = 0
    public var speakerStreamsAtEnd: [String] = []
    /// Everything a hook did that the SDK would have refused or that breaks its contracts.
    public var violations: [ContractViolation] = []
    /// addRef'd raw data never released (a leak).
    public var outstandingReferences = 0
    public var metrics: [HookMetrics] = []

    public var passed: Bool { violations.isEmpty && outstandingReferences == 0 }

    public var description: String {
        var lines = [
            "pre-processor: \(preProcessedFrames) frames",
            "video source: \(videoFramesSent) frames sent at \(videoSizesSent.joined(separator: ", "))",
            "virtual mic: \(micChunksSent) chunks of \(micChunkBytes.map(String.init).joined(separator: "/")) bytes",
            "virtual speaker: \(speakerBlocks) blocks to the sink; streams at the end: \(speakerStreamsAtEnd.joined(separator: ", "))",
            "raw data references outstanding: \(outstandingReferences)",
            violations.isEmpty ? "contract violations: none" : "contract violations (\(violations.count)):",
        ]
        lines += violations.map { "  " + $0.description }
        lines.append("metrics:")
        lines += metrics.map { $0.description.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") }
        return lines.joined(separator: "\n")
    }
}

final class BlockCounter: Sendable {
    private let value = Atomic<Int>(0)
    var count: Int {
        get { value.load(ordering: .acquiring) }
        set { value.store(newValue, ordering: .releasing) }
    }
    func increment() { value.add(1, ordering: .relaxed) }
}

extension ProcessingMode {
    var isAsyncMode: Bool { if case .async = self { return true } else { return false } }
}

func usleepMilliseconds(_ ms: Int) { usleep(UInt32(ms * 1000)) }

import RawFX
import RawFXEmulator
import RawFXMedia
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// The Swift in docs/sdk-integration.md, compiled and run against the emulator. The blocks
/// between `// --- guide: … ---` and `// --- end ---` are what the guide shows
/// (`DocSampleTests` checks the guide against this file); the asserts around them check the
/// sample does what the guide says.
final class SDKGuideTests: XCTestCase {
    func testQuickStartServesEveryHook() throws {
        let registry = builtPlugins
        let session = SDKSessionEmulator()
        let played = Locked<[AudioStreamID: Int]>([:])

        // --- guide: quick start ---
        let processor = RawFXProcessor(registry: registry)   // registry: PluginRegistry() in an app
        let pre = try processor.configurePreProcessor(chain: "mirror")
        let speaker = try processor.configureVirtualSpeaker(chain: "denoise=level=-30") { stream, block in
            // The SDK's audio thread; the block is valid during this call only.
            played.withLock { $0[stream, default: 0] += block.frameCount }
        }
        let camera = try processor.configureVideoSource(chain: "rotate=angle=90")
        let mic = try processor.configureVirtualMic(chain: "denoise=level=-30", targetRate: 48000)
        // Give each to the SDK: context.preProcessor = pre, context.virtualAudioSpeaker = speaker,
        // context.externalVideoSource = camera, context.virtualAudioMic = mic.
        // --- end ---

        // The SDK's side: one camera frame, 100 ms of one user's audio, the virtual camera's start.
        let capture = session.makeCaptureFrame(format: VideoFormat(width: 64, height: 48))
        let picture = patternBuffer(width: 64, height: 48)
        session.deliverPreProcess(pre, picture: picture.frame, into: capture)
        let speech = TestAudio.speech(sampleRate: 48000, seconds: 0.1)
        try session.runVirtualSpeaker(speaker, streams: [(.oneWay(SDKUser(7)), ArrayPCMSource(samples: speech, format: AudioFormat(sampleRate: 48000, channels: 1)))])
        let cap = VideoSourceCapability(width: 48, height: 64)
        let cameraSession = session.videoSourceSession(camera, supported: [cap], suggested: cap)
        cameraSession.initialize()
        cameraSession.startSend()
        XCTAssertEqual(camera.pushFrame(picture.frame), .sent)
        XCTAssertEqual(cameraSession.sender.sent.count, 1)
        XCTAssertEqual(played.withLock { $0[.oneWay(SDKUser(7))] }, speech.count, "every sample comes out")

        // --- guide: metrics ---
        for hook in processor.metrics { print(hook) }   // frames, errors, drops, p50/p99, per filter
        // --- end ---
        XCTAssertEqual(processor.metrics.map(\.name).prefix(3), ["preProcessor", "virtualSpeaker", "videoSource"])
        XCTAssertEqual(processor.metrics.first?.hook.frames, 1)
        _ = mic
        processor.close()
        XCTAssertEqual(session.violations, [])
    }

    func testRunTimeControlKeepsTheObjectTheSDKHolds() throws {
        let session = SDKSessionEmulator()
        let processor = RawFXProcessor(registry: builtPlugins)
        let out = Locked<Int>(0)
        let speaker = try processor.configureVirtualSpeaker(chain: "denoise=level=-30") { _, block in
            out.withLock { $0 += block.frameCount }
        }
        let speech = TestAudio.speech(sampleRate: 48000, seconds: 0.2)
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        try session.runVirtualSpeaker(speaker, streams: [(.mixed, ArrayPCMSource(samples: speech, format: format))])

        // --- guide: run-time control ---
        // From any thread, while the SDK keeps calling: the object the SDK holds stays.
        try speaker.setParameter("denoise.level", "-15")     // every stream's denoiser, its history kept
        try speaker.setBypass("denoise", true)               // delay-compensated: no click, no gap
        try speaker.setChain("denoise=level=-30,gain=db=3")  // negotiated here, swapped between blocks
        try processor.configureVirtualSpeaker(chain: "denoise") { _, _ in }  // the same: sets the chain
        // --- end ---

        XCTAssertTrue(processor.virtualSpeaker === speaker, "configure on an existing hook keeps it")
        try session.runVirtualSpeaker(speaker, streams: [(.mixed, ArrayPCMSource(samples: speech, format: format))])
        XCTAssertEqual(speaker.metrics.refused, 0)
        XCTAssertGreaterThanOrEqual(out.withLock { $0 }, speech.count, "the second run's audio came out through the same hook")
        processor.close()
    }

    func testLifecycleStreamDrivesTheAppsPump() async throws {
        let session = SDKSessionEmulator()
        let processor = RawFXProcessor(registry: builtPlugins)
        let picture = patternBuffer(width: 64, height: 48)

        // --- guide: lifecycle ---
        let camera = try processor.configureVideoSource(chain: "mirror")
        let events = camera.lifecycle.stream()                // or camera.lifecycle.setHandler { … }
        let pump = Task {
            var sent = 0
            for await event in events {                       // ends when the adapter closes
                switch event {
                case .videoSourceStarted:                     // onStartSend: push frames now
                    while sent < 30, camera.pushFrame(picture.frame) == .sent { sent += 1 }
                case .videoSourceStopped: break               // onStopSend: stop pushing
                default: break
                }
            }
            return sent
        }
        // --- end ---

        let cap = VideoSourceCapability(width: 64, height: 48)
        let cameraSession = session.videoSourceSession(camera, supported: [cap], suggested: cap)
        cameraSession.initialize()
        cameraSession.startSend()
        XCTAssertTrue(waitUntil { cameraSession.sender.sent.count == 30 }, "\(cameraSession.sender.sent.count) sent, \(camera.metrics)")
        cameraSession.stopSend()
        processor.close()
        let sent = await pump.value
        XCTAssertEqual(sent, 30)
        XCTAssertEqual(session.violations, [])
    }
}

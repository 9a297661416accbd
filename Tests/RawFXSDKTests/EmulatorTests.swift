import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

final class EmulatorTests: XCTestCase {
    func testFakeVideoSenderRejectsWhatTheSDKRejects() {
        let ledger = ContractLedger()
        let sender = FakeVideoSender(ledger: ledger)
        sender.acceptedSizes = [[64, 36]]
        var buffer = [CChar](repeating: 0, count: 64 * 36 * 3 / 2)
        buffer.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress!
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, dataLength: 3456, rotation: 0, format: .i420Full), .wrongUsage,
                           "outside start/stop")
            sender.isAccepting = true
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, dataLength: 3456, rotation: 0, format: .i420Full), .success)
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, dataLength: 3455, rotation: 0, format: .i420Full), .invalidParameter)
            XCTAssertEqual(sender.sendVideoFrame(p, width: 63, height: 36, dataLength: 3402, rotation: 0, format: .i420Full), .invalidParameter)
            XCTAssertEqual(sender.sendVideoFrame(p, width: 32, height: 18, dataLength: 864, rotation: 0, format: .i420Full), .invalidParameter,
                           "not in the capability list")
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, dataLength: 3456, rotation: 45, format: .i420Full), .invalidParameter)
            sender.requiredSize = (32, 18)
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, dataLength: 3456, rotation: 0, format: .i420Full), .invalidParameter)
        }
        XCTAssertEqual(sender.sent.count, 1)
        XCTAssertEqual(ledger.violations.count, 6)
        XCTAssertEqual(ledger.violations.first?.code, VideoSDKError.wrongUsage.rawValue)
    }

    func testFakeAudioSenderRejectsOddLengthsWrongRatesBurstsAndSendsOutsideStartStop() {
        let clock = EmulatorClock(manualStart: 0)
        let ledger = ContractLedger()
        let sender = FakeAudioSender(ledger: ledger, clock: clock)
        var pcm = [CChar](repeating: 0, count: 192_000)
        pcm.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress!
            XCTAssertEqual(sender.send(p, dataLength: 960, sampleRate: 48000, channel: .mono), .wrongUsage)
            sender.isAccepting = true
            XCTAssertEqual(sender.send(p, dataLength: 960, sampleRate: 48000, channel: .mono), .success)
            XCTAssertEqual(sender.send(p, dataLength: 959, sampleRate: 48000, channel: .mono), .invalidParameter, "odd length")
            XCTAssertEqual(sender.send(p, dataLength: 962, sampleRate: 48000, channel: .stereo), .invalidParameter, "half a stereo frame")
            XCTAssertEqual(sender.send(p, dataLength: 960, sampleRate: 47000, channel: .mono), .invalidParameter, "not an SDK rate")
            XCTAssertEqual(sender.send(p, dataLength: 960, sampleRate: 2822400, channel: .stereo), .invalidParameter, "mono-only rate")
            XCTAssertEqual(sender.send(p, dataLength: 192_000, sampleRate: 48000, channel: .mono), .rawdataSendTooMuchDataInSingleTime)
            sender.requiredRate = 48000
            XCTAssertEqual(sender.send(p, dataLength: 640, sampleRate: 32000, channel: .mono), .invalidParameter)
            // 10 ms chunks with the clock standing still: the lead runs out after 300 ms.
            var results: [VideoSDKError] = []
            for _ in 0..<40 { results.append(sender.send(p, dataLength: 960, sampleRate: 48000, channel: .mono)) }
            XCTAssertEqual(results.firstIndex(of: .rawdataSendTooFrequently), 30)
            clock.advance(microseconds: 1_000_000)
            XCTAssertEqual(sender.send(p, dataLength: 960, sampleRate: 48000, channel: .mono), .success)
        }
        XCTAssertEqual(Set(ledger.violations.compactMap(\.code)),
                       [VideoSDKError.wrongUsage.rawValue, VideoSDKError.invalidParameter.rawValue,
                        VideoSDKError.rawdataSendTooMuchDataInSingleTime.rawValue, VideoSDKError.rawdataSendTooFrequently.rawValue])
    }

    func testFakePSSenderChecksTheDeclaredCapabilityAndAudioRules() {
        let ledger = ContractLedger()
        let cap = PSVideoSourceCapability(width: 64, height: 36, format: .i420Full)
        let sender = FakePSSender(capability: cap, ledger: ledger)
        var buffer = [CChar](repeating: 0, count: 4000)
        buffer.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress!
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, frameLength: 3456, format: .i420Full), .wrongUsage)
            sender.isAccepting = true
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, frameLength: 3456, format: .i420Full), .success)
            XCTAssertEqual(sender.sendVideoFrame(p, width: 64, height: 36, frameLength: 3456, format: .i420Limited), .invalidParameter)
            XCTAssertEqual(sender.sendAudio(p, dataLength: 1764, sampleRate: 44100, channel: .mono), .invalidParameter)
            XCTAssertEqual(sender.sendAudio(p, dataLength: 959, sampleRate: 48000, channel: .mono), .invalidParameter)
            XCTAssertEqual(sender.sendAudio(p, dataLength: 960, sampleRate: 48000, channel: .mono), .success)
        }
        XCTAssertEqual(ledger.violations.map(\.code), [2, 3, 3, 3].map { Int32($0) })
    }

    func testAudioRawDataKeepsTheSDKsLifetimeRules() {
        let ledger = ContractLedger()
        let pcm: [Int16] = [1, 2, 3, 4]
        let stack = pcm.withUnsafeBufferPointer {
            EmulatedAudioRawData(samples: $0, sampleRate: 48000, channels: 1, timeStampMilliseconds: 0, memoryMode: .stack, ledger: ledger)
        }
        XCTAssertFalse(stack.canAddRef())
        XCTAssertFalse(stack.addRef())
        stack.endCallback()
        _ = stack.buffer
        XCTAssertEqual(ledger.violations.count, 2, "addRef on stack memory, read after the callback")

        ledger.reset()
        let heap = pcm.withUnsafeBufferPointer {
            EmulatedAudioRawData(samples: $0, sampleRate: 48000, channels: 1, timeStampMilliseconds: 0, memoryMode: .heap, ledger: ledger)
        }
        XCTAssertTrue(heap.addRef())
        heap.endCallback()
        XCTAssertEqual(UnsafeRawPointer(heap.buffer!).load(as: Int16.self), 1, "retained: still valid after the callback")
        XCTAssertEqual(heap.releaseRef(), 0)
        XCTAssertEqual(UnsafeRawPointer(heap.buffer!).load(as: UInt8.self), EmulatedAudioRawData.poison, "released: poisoned")
        XCTAssertEqual(heap.releaseRef(), 0)
        XCTAssertFalse(heap.addRef())
        XCTAssertEqual(ledger.addRefs, 1)
        XCTAssertEqual(ledger.outstandingReferences, 0)
        XCTAssertEqual(ledger.violations.map(\.call), ["AudioRawData.buffer", "AudioRawData.releaseRef", "AudioRawData.addRef"])
    }

    func testVideoSourceSessionDeliversCallbacksInTheDocumentedOrder() throws {
        final class Recorder: SDKVideoSource {
            var calls: [String] = []
            func onInitialize(_ sender: any SDKVideoSender, supportCapabilityArray: [VideoSourceCapability],
                              suggestCapability: VideoSourceCapability) { calls.append("init \(suggestCapability)") }
            func onPropertyChange(_ supportCapabilityArray: [VideoSourceCapability], suggestCapability: VideoSourceCapability) {
                calls.append("change \(suggestCapability)")
            }
            func onStartSend() { calls.append("start") }
            func onStopSend() { calls.append("stop") }
            func onUninitialized() { calls.append("uninit") }
        }
        let recorder = Recorder()
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 640, height: 360, frame: 15)
        let session = emulator.videoSourceSession(recorder, supported: [cap], suggested: cap)
        session.initialize()
        XCTAssertFalse(session.sender.isAccepting, "the SDK accepts no frames during onInitialize")
        session.propertyChange(supported: [cap], suggested: cap)
        session.startSend()
        XCTAssertTrue(session.sender.isAccepting)
        session.stopSend()
        XCTAssertFalse(session.sender.isAccepting)
        session.uninitialize()
        XCTAssertEqual(recorder.calls, ["init 640x360@15", "change 640x360@15", "start", "stop", "uninit"])
        XCTAssertEqual(session.log, ["onInitialize", "onPropertyChange", "onStartSend", "onStopSend", "onUninitialized"])
    }

    func testSessionFromY4MAndWAVFilesThroughEveryHook() throws {
        let directory = temporaryDirectory()
        let y4m = directory.appendingPathComponent("camera.y4m").path
        let wav = directory.appendingPathComponent("voice.wav").path
        let format = VideoFormat(width: 320, height: 180)
        let writer = try Y4MWriter(path: y4m, header: Y4MHeader(format: format, frameRate: Y4MRatio(30, 1)))
        let pattern = PatternFrameSource(format: format, count: 20)
        while let frame = pattern.nextFrame() { try writer.write(frame) }
        try writer.close()
        let audioFormat = AudioFormat(sampleRate: 48000, channels: 1)
        let audio = try WAVWriter(path: wav, format: audioFormat)
        try audio.write(TestAudio.speech(sampleRate: 48000, seconds: 1))
        try audio.close()

        let registry = processorRegistry()
        let emulator = SDKSessionEmulator()
        // Pre-processor over the file's frames, in the SDK's padded planes.
        let pre = try PreProcessorHook(chain: "test_gate=add=0", registry: registry)
        var seen = 0
        try emulator.runPreProcessor(pre, source: Y4MFrameSource(path: y4m), padding: 40) { index, frame in
            XCTAssertEqual(pattern.frameIndex(in: frame), index)
            seen += 1
        }
        XCTAssertEqual(seen, 20)

        // Virtual camera fed from the same file.
        let camera = try VideoSourceAdapter(chain: "test_gate=add=0", registry: registry)
        let cap = VideoSourceCapability(width: 320, height: 180)
        let session = emulator.videoSourceSession(camera, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        let frames = try Y4MFrameSource(path: y4m)
        while let frame = try frames.nextFrame() { XCTAssertEqual(camera.pushFrame(frame), .sent) }
        session.stopSend()
        session.uninitialize()
        XCTAssertEqual(session.sender.sent.count, 20)

        // Virtual mic fed from the WAV, on the session's clock.
        let mic = try VirtualMicAdapter(registry: registry, pacing: .caller)
        let micSession = emulator.micSession(mic)
        micSession.initialize()
        micSession.startSend()
        let pcm = try WAVPCMSource(path: wav)
        var chunk = [Int16](repeating: 0, count: 960)
        while case let n = try chunk.withUnsafeMutableBufferPointer({ try pcm.read(into: $0.baseAddress!, maxFrames: 960) }), n > 0 {
            _ = chunk.withUnsafeBufferPointer { mic.pushAudio($0.baseAddress!, frameCount: n, format: pcm.format) }
            for _ in 0..<2 {
                mic.pump(nowMicroseconds: emulator.clock.microseconds)
                emulator.clock.advance(microseconds: 10_000)
            }
        }
        micSession.stopSend()
        XCTAssertEqual(micSession.sender.sent.count, 100)

        // Virtual speaker streams from the WAV.
        let recorder = SinkRecorder()
        let speaker = try VirtualSpeakerHook(chain: "test_accum", registry: registry, sink: recorder.sink)
        try emulator.runVirtualSpeaker(speaker, userEvents: speaker,
                                       streams: [(.mixed, try WAVPCMSource(path: wav)), (.shared, try WAVPCMSource(path: wav))],
                                       memoryMode: .heap)
        XCTAssertEqual(recorder.samples(of: .mixed).count, 48000)
        XCTAssertEqual(recorder.samples(of: .mixed), recorder.samples(of: .shared))

        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        XCTAssertEqual(emulator.ledger.outstandingReferences, 0)
    }

    func testScenarioRunsEveryHookWithoutViolations() throws {
        var scenario = EmulatorScenario()
        scenario.frames = 12
        scenario.audioSeconds = 0.5
        scenario.patternFormat = VideoFormat(width: 320, height: 180)
        scenario.capability = VideoSourceCapability(width: 320, height: 180)
        scenario.preProcessChain = "test_gate=add=0"
        scenario.speakerChain = "test_accum"
        let registry = processorRegistry()
        let hasScale = hasFilter("scale", in: registry)
        if !hasScale { scenario.capability = VideoSourceCapability(width: 320, height: 180) }
        let report = try scenario.run(registry: registry)
        XCTAssertEqual(report.preProcessedFrames, 12)
        XCTAssertEqual(report.micChunksSent, 50)
        XCTAssertEqual(report.micChunkBytes, [960])
        XCTAssertEqual(report.speakerStreamsAtEnd, ["mixed", "user 1"])
        if hasScale {
            XCTAssertEqual(report.videoFramesSent, 12)
            XCTAssertEqual(report.videoSizesSent, ["160x90", "320x180"])
            XCTAssertTrue(report.passed, report.description)
        }
        XCTAssertTrue(report.description.contains("virtual mic: 50 chunks of 960 bytes"), report.description)
    }

    func testScenarioReportsViolationsOfABrokenSource() throws {
        // A source that ignores the lifecycle: it sends from onInitialize and after onStopSend.
        final class Careless: SDKVideoSource {
            var sender: (any SDKVideoSender)?
            var frame = [CChar](repeating: 0, count: 96)
            func send() { _ = frame.withUnsafeMutableBufferPointer { sender?.sendVideoFrame($0.baseAddress!, width: 8, height: 8, dataLength: 96, rotation: 0, format: .i420Full) } }
            func onInitialize(_ sender: any SDKVideoSender, supportCapabilityArray: [VideoSourceCapability],
                              suggestCapability: VideoSourceCapability) {
                self.sender = sender
                send()
            }
            func onPropertyChange(_ supportCapabilityArray: [VideoSourceCapability], suggestCapability: VideoSourceCapability) {}
            func onStartSend() { send() }
            func onStopSend() {}
            func onUninitialized() { send() }
        }
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 8, height: 8)
        let session = emulator.videoSourceSession(Careless(), supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        session.stopSend()
        session.uninitialize()
        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertEqual(emulator.violations.map(\.code), [VideoSDKError.wrongUsage.rawValue, VideoSDKError.wrongUsage.rawValue])
    }
}

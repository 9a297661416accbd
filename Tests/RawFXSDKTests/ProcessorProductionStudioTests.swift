import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

final class ProcessorProductionStudioTests: XCTestCase {
    let cap = PSVideoSourceCapability(width: 64, height: 36, format: .i420Full)

    func testRejectionsHappenBeforeTheSenderWithInvalidParameter() throws {
        let ps = try ProductionStudioAdapter(capability: cap, registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.productionStudioSession(ps)
        session.startResult(true)
        session.startSend()
        var frame = [CChar](repeating: 0, count: 64 * 36 * 3 / 2)
        var pcm = [CChar](repeating: 0, count: 1920)

        func expectInvalid(_ body: () throws(PSSendError) -> Void, _ message: String, line: UInt = #line) {
            do {
                try body()
                XCTFail("expected invalidParameter", line: line)
            } catch {
                XCTAssertEqual(error.code, .invalidParameter, line: line)
                XCTAssertEqual(error.description, "SDKERR_INVALID_PARAMETER: " + message, line: line)
            }
        }
        frame.withUnsafeMutableBufferPointer { f in
            expectInvalid({ () throws(PSSendError) in try ps.sendVideoFrame(f.baseAddress!, width: 62, height: 36, frameLength: 62 * 36 * 3 / 2) },
                          "frame is 62x36, production studio was started for 64x36")
            expectInvalid({ () throws(PSSendError) in try ps.sendVideoFrame(f.baseAddress!, width: 64, height: 36, frameLength: 3456, format: .i420Limited) },
                          "frame format is I420_LIMITED, production studio was started for I420_FULL")
            expectInvalid({ () throws(PSSendError) in try ps.sendVideoFrame(f.baseAddress!, width: 64, height: 36, frameLength: 3000) },
                          "frameLength 3000 is not 64·36·3/2 = 3456")
        }
        pcm.withUnsafeMutableBufferPointer { a in
            expectInvalid({ () throws(PSSendError) in try ps.sendAudio(a.baseAddress!, dataLength: 1764, sampleRate: 44100) },
                          "sample rate 44100 Hz: production studio takes 32000 or 48000")
            expectInvalid({ () throws(PSSendError) in try ps.sendAudio(a.baseAddress!, dataLength: 959, sampleRate: 48000) },
                          "dataLength 959 must be an even, positive number of bytes")
            expectInvalid({ () throws(PSSendError) in try ps.sendAudio(a.baseAddress!, dataLength: 1918, sampleRate: 48000, channel: .stereo) },
                          "dataLength 1918 is not a whole number of stereo 16-bit frames")
        }
        // None of those reached the SDK's sender.
        XCTAssertTrue(session.sender.sentVideo.isEmpty)
        XCTAssertTrue(session.sender.sentAudio.isEmpty)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")

        // Valid ones do.
        try frame.withUnsafeMutableBufferPointer { try ps.sendVideoFrame($0.baseAddress!, width: 64, height: 36, frameLength: 3456) }
        try pcm.withUnsafeMutableBufferPointer { try ps.sendAudio($0.baseAddress!, dataLength: 1920, sampleRate: 48000) }
        try pcm.withUnsafeMutableBufferPointer { try ps.sendAudio($0.baseAddress!, dataLength: 1280, sampleRate: 32000) }
        XCTAssertEqual(session.sender.sentVideo.count, 1)
        XCTAssertEqual(session.sender.sentAudio.map(\.sampleRate), [48000, 32000])
        XCTAssertEqual(ps.videoMetrics.hook.errors, 3)
        XCTAssertEqual(ps.audioMetrics.hook.errors, 3)
    }

    func testLifecycleFollowsStartResultStartSendAndStopSend() throws {
        let ps = try ProductionStudioAdapter(capability: cap, videoChain: "test_gate=add=0", registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.productionStudioSession(ps)
        let picture = patternBuffer(width: 64, height: 36, range: .full)
        var frame = [CChar](repeating: 0, count: 3456)

        XCTAssertEqual(ps.push(picture), .refused(.noSender))
        // onStartSend without a successful startPSMode result: nothing opens.
        session.startSend()
        XCTAssertFalse(ps.isSending)
        XCTAssertEqual(ps.push(picture), .refused(.noSender))
        session.stopSend()
        session.startResult(false)
        session.startSend()
        XCTAssertFalse(ps.isSending)
        // The refusal names the SDK's answer.
        XCTAssertEqual(ps.push(picture), .refused(.productionStudioRefused))
        XCTAssertTrue(Refusal.productionStudioRefused.description.contains("onStartPSModeResult(false)"))
        session.stopSend()

        for _ in 0..<3 {
            session.startResult(true)
            XCTAssertFalse(ps.isSending, "accepted, but wait for onStartSend")
            session.startSend()
            XCTAssertTrue(ps.isSending)
            XCTAssertEqual(ps.push(picture), .sent)
            session.stopSend()
            XCTAssertFalse(ps.isSending)
            XCTAssertTrue(ps.push(picture).isRefused)
            XCTAssertThrowsError(try frame.withUnsafeMutableBufferPointer {
                try ps.sendVideoFrame($0.baseAddress!, width: 64, height: 36, frameLength: 3456)
            }) { XCTAssertEqual(($0 as? PSSendError)?.code, .wrongUsage) }
        }
        XCTAssertEqual(session.sender.sentVideo.count, 3)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        ps.onPSUserStatusChanged(42, isStart: true)
        XCTAssertEqual(ps.publishingUsers, [42])
    }

    func testVideoIsNegotiatedToExactlyTheDeclaredCapability() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let cap = PSVideoSourceCapability(width: 1280, height: 720, format: .i420Full)
        let ps = try ProductionStudioAdapter(capability: cap, registry: registry, pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.productionStudioSession(ps)
        session.startResult(true)
        session.startSend()
        let picture = patternBuffer(width: 640, height: 480, range: .full)
        XCTAssertEqual(ps.push(picture), .sent)
        let sent = try XCTUnwrap(session.sender.sentVideo.first)
        XCTAssertEqual([sent.width, sent.height, sent.dataLength], [1280, 720, 1_382_400])
        XCTAssertEqual(sent.format, .i420Full)
        XCTAssertWithinOneStep(sent.bytes, of: referenceFit(picture.frame, width: 1280, height: 720))

        // A limited-range source gets range=to=full appended (HookProductionStudioTests checks the
        // conversion); without a range filter it is not sent, and the message names what is missing.
        if !hasFilter("range", in: registry) {
            let status = ps.push(patternBuffer(width: 640, height: 480, range: .limited))
            XCTAssertEqual(status, .failed(.contract("the frame is limited range, the sender was declared full range, and no 'range' filter is loaded to convert it (the YUV plugin's range=to=full)")))
            XCTAssertEqual(session.sender.sentVideo.count, 1)
        }
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testAudioGoesOutAs10msMonoChunksAt48kOr32k() throws {
        let registry = processorRegistry()
        for rate in [48000, 32000] {
            let ps = try ProductionStudioAdapter(capability: cap, audioChain: "gain=db=-3", registry: registry, audioRate: rate,
                                                 pacing: .caller)
            let emulator = SDKSessionEmulator()
            let session = emulator.productionStudioSession(ps)
            session.startResult(true)
            session.startSend()
            let input = hasFilter("resample", in: registry) ? AudioFormat(sampleRate: 44100, channels: 2) : AudioFormat(sampleRate: rate, channels: 1)
            let mono = TestAudio.speech(sampleRate: input.sampleRate, seconds: 0.5)
            let signal = input.channels == 1 ? mono : TestAudio.interleave(mono, channels: 2)
            let status = signal.withUnsafeBufferPointer { ps.pushAudio($0.baseAddress!, frameCount: signal.count / input.channels, format: input) }
            XCTAssertTrue(status.isAccepted, "\(status)")
            for step in 0...60 { ps.pump(nowMicroseconds: Int64(step) * 10_000) }
            let sent = session.sender.sentAudio
            XCTAssertGreaterThanOrEqual(sent.count, 48)
            XCTAssertTrue(sent.allSatisfy { $0.sampleRate == rate && $0.dataLength == rate / 100 * 2 && $0.channel == .mono })
            session.stopSend()
            XCTAssertEqual(ps.pushAudio(signal, frameCount: 10, format: input), .refused(.noSender))
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        }
    }

    func testStopSendWhileAFrameIsInTheChainSendsNothingAfter() throws {
        let ps = try ProductionStudioAdapter(capability: cap, videoChain: "test_gate=add=1", registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.productionStudioSession(ps)
        session.startResult(true)
        session.startSend()
        let picture = patternBuffer(width: 64, height: 36, range: .full)
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        let status = Collected<PublishStatus>()
        let pusher = TestThread { status.append(ps.push(picture)) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered })
        let stopper = TestThread { session.stopSend() }
        XCTAssertTrue(stopper.join(timeout: 2))
        GatePlugin.open()
        XCTAssertTrue(pusher.join())
        XCTAssertTrue(status.all.first?.isRefused ?? false, "\(status.all)")
        XCTAssertTrue(session.sender.sentVideo.isEmpty)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }
}

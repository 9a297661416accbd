import CLibYUV
import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import XCTest
@testable import RawFXTestSupport

/// libyuv's I420Scale (kFilterBilinear) in fit mode, computed here independently of the
/// plugin: black bars of the frame's range, the picture centred at the largest even size
/// that keeps its aspect ratio. Returns the packed I420 bytes.
func referenceFit(_ source: VideoFrame, width: Int, height: Int) -> [UInt8] {
    func roundEven(_ n: Int, _ d: Int) -> Int { max(2, (n + d) / (2 * d) * 2) }
    let inW = source.width, inH = source.height
    var (dx, dy, dw, dh) = (0, 0, width, height)
    let inCross = inW * height, outCross = width * inH
    if inCross > outCross {
        dh = min(roundEven(width * inH, inW), height)
        dy = ((height - dh) / 2) & ~1
    } else if inCross < outCross {
        dw = min(roundEven(height * inW, inH), width)
        dx = ((width - dw) / 2) & ~1
    }
    let out = VideoBuffer(format: VideoFormat(width: width, height: height, colorRange: source.format.colorRange))
    out.fill(y: source.format.colorRange.blackLuma)
    let o = out.frame
    let rc = I420Scale(source.plane(0), Int32(source.stride(0)), source.plane(1), Int32(source.stride(1)),
                       source.plane(2), Int32(source.stride(2)), Int32(inW), Int32(inH),
                       o.plane(0) + dy * o.stride(0) + dx, Int32(o.stride(0)),
                       o.plane(1) + (dy / 2) * o.stride(1) + dx / 2, Int32(o.stride(1)),
                       o.plane(2) + (dy / 2) * o.stride(2) + dx / 2, Int32(o.stride(2)),
                       Int32(dw), Int32(dh), kFilterBilinear)
    precondition(rc == 0)
    var packed = [UInt8](repeating: 0, count: o.format.packedByteCount)
    packed.withUnsafeMutableBytes { o.pack(into: $0.baseAddress!) }
    return packed
}

final class ProcessorVideoSourceTests: XCTestCase {
    let caps720 = [VideoSourceCapability(width: 1280, height: 720), VideoSourceCapability(width: 640, height: 360)]

    /// An SDK may call back on the sending thread from inside `sendVideoFrame` (onStopSend,
    /// onUninitialized, even a new onInitialize): the call takes effect without deadlocking
    /// on the send gate, and a change of sender applies from the next frame.
    func testSDKCallbacksFromInsideTheSendTakeEffectFromTheNextFrame() throws {
        let adapter = try VideoSourceAdapter(chain: "", registry: processorRegistry())
        let capability = VideoSourceCapability(width: 64, height: 48)
        let first = CallingBackVideoSender(), second = CallingBackVideoSender()
        let picture = patternBuffer(width: 64, height: 48)
        adapter.onInitialize(first, supportCapabilityArray: [capability], suggestCapability: capability)
        adapter.onStartSend()

        first.duringNextSend = { adapter.onStopSend() }
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.stopped))
        adapter.onStartSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent, "the sender was kept through the stop")

        first.duringNextSend = {
            adapter.onInitialize(second, supportCapabilityArray: [capability], suggestCapability: capability)
            adapter.onStartSend()
        }
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual([first.sent, second.sent], [3, 1], "the new sender takes the frame after the send that installed it")

        second.duringNextSend = { adapter.onUninitialized() }
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.noSender))
        adapter.onStartSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.noSender), "the sender was forgotten once the send returned")
        XCTAssertEqual([first.sent, second.sent], [3, 2])
    }

    func testFramesBeforeStartAreRefusedWithoutTouchingTheChainAndNeverSent() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let session = emulator.videoSourceSession(adapter, supported: [VideoSourceCapability(width: 64, height: 48)],
                                                  suggested: VideoSourceCapability(width: 64, height: 48))
        let picture = patternBuffer(width: 64, height: 48)
        let entered = GatePlugin.entered

        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.noSender))
        session.initialize()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.notStarted))
        XCTAssertEqual(adapter.pushFrame(picture.frame).description,
                       "refused, not sent: the SDK has not called onStartSend yet")
        XCTAssertEqual(GatePlugin.entered, entered, "a refused frame must not run the chain")
        session.startSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        session.stopSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.stopped))

        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertEqual(adapter.metrics.refused, 4)
        XCTAssertEqual(adapter.metrics.hook.frames, 1)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testSentFramesArePackedAtTheCapabilityFromStridedInput() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=3", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 34, height: 20)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        let picture = patternBuffer(width: 34, height: 20, range: .full, extraStride: 9)
        var y = planeBytes(picture.frame, 0)
        y[0] &+= 3
        // In-place filters run on the pushed frame itself (no copy on the sync path).
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(planeBytes(picture.frame, 0), y)
        let sent = try XCTUnwrap(session.sender.sent.first)
        XCTAssertEqual(sent.dataLength, 34 * 20 * 3 / 2)
        XCTAssertEqual(sent.format, .i420Full)
        XCTAssertEqual(Array(sent.plane(0)), y)
        XCTAssertEqual(Array(sent.plane(1)), planeBytes(picture.frame, 1))
        XCTAssertEqual(Array(sent.plane(2)), planeBytes(picture.frame, 2))
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testOutputIsExactlyTheCapabilityViaFitScaleWithinOneStepOfLibyuvBilinear() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let adapter = try VideoSourceAdapter(chain: "", registry: registry)
        let emulator = SDKSessionEmulator()
        let session = emulator.videoSourceSession(adapter, supported: caps720, suggested: caps720[0])
        session.initialize()
        session.startSend()
        XCTAssertEqual(adapter.capability, caps720[0])
        let picture = patternBuffer(width: 640, height: 480, extraStride: 7, seed: 2)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        let sent = try XCTUnwrap(session.sender.sent.first)
        XCTAssertEqual([sent.width, sent.height, sent.dataLength], [1280, 720, 1280 * 720 * 3 / 2])
        XCTAssertWithinOneStep(sent.bytes, of: referenceFit(picture.frame, width: 1280, height: 720))
        XCTAssertEqual(adapter.metrics.filters.map(\.name), ["scale (fit)"])
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testChainThatEndsAtTheCapabilityIsNotScaledAgain() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let adapter = try VideoSourceAdapter(chain: "scale=width=640:height=360:mode=stretch", registry: registry)
        let emulator = SDKSessionEmulator()
        let session = emulator.videoSourceSession(adapter, supported: caps720, suggested: caps720[1])
        session.initialize()
        session.startSend()
        let picture = patternBuffer(width: 320, height: 240)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        let stretched = VideoBuffer(format: VideoFormat(width: 640, height: 360))
        let s = picture.frame, o = stretched.frame
        I420Scale(s.plane(0), Int32(s.stride(0)), s.plane(1), Int32(s.stride(1)), s.plane(2), Int32(s.stride(2)), 320, 240,
                  o.plane(0), Int32(o.stride(0)), o.plane(1), Int32(o.stride(1)), o.plane(2), Int32(o.stride(2)), 640, 360,
                  kFilterBilinear)
        var packed = [UInt8](repeating: 0, count: o.format.packedByteCount)
        packed.withUnsafeMutableBytes { o.pack(into: $0.baseAddress!) }
        XCTAssertWithinOneStep(session.sender.sent.first?.bytes, of: packed)
        // The fit stage exists (prepared at negotiation) but never ran.
        XCTAssertEqual(adapter.metrics.filters.first { $0.name == "scale (fit)" }?.frames ?? 0, 0)
    }

    func testCapabilityPolicyChoosesAndFramesFollowIt() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let adapter = try VideoSourceAdapter(registry: registry) { supported, _ in supported.min { $0.width < $1.width }! }
        let emulator = SDKSessionEmulator()
        let session = emulator.videoSourceSession(adapter, supported: caps720, suggested: caps720[0])
        session.initialize()
        session.startSend()
        XCTAssertEqual(adapter.push(patternBuffer(width: 1920, height: 1080)), .sent)
        XCTAssertEqual(session.sender.sent.map { [$0.width, $0.height] }, [[640, 360]])
    }

    func testPropertyChangeMidStreamRenegotiatesBetweenFrames() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: registry)
        let emulator = SDKSessionEmulator()
        let session = emulator.videoSourceSession(adapter, supported: caps720, suggested: caps720[1])
        session.initialize()
        session.startSend()
        let pictures = PatternFrameSource(format: VideoFormat(width: 960, height: 540), count: 12)
        var index = 0
        while let frame = pictures.nextFrame() {
            if index == 4 {
                // The SDK renegotiates: now 1280x720 only.
                session.propertyChange(supported: [caps720[0]], suggested: caps720[0])
            }
            if index == 8 {
                session.propertyChange(supported: caps720, suggested: caps720[1])
            }
            XCTAssertEqual(adapter.pushFrame(frame), .sent, "frame \(index)")
            index += 1
        }
        let sizes = session.sender.sent.map { "\($0.width)x\($0.height)" }
        XCTAssertEqual(sizes, Array(repeating: "640x360", count: 4) + Array(repeating: "1280x720", count: 4)
                       + Array(repeating: "640x360", count: 4))
        XCTAssertEqual(session.sender.sent.map(\.dataLength).max(), 1280 * 720 * 3 / 2)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testPropertyChangeWhileAFrameIsInTheChainSupersedesThatFrame() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let adapter = try VideoSourceAdapter(chain: "scale=width=320:height=180,test_gate=add=0", registry: registry)
        let emulator = SDKSessionEmulator()
        let small = VideoSourceCapability(width: 320, height: 180)
        let session = emulator.videoSourceSession(adapter, supported: [small, caps720[1]], suggested: small)
        session.initialize()
        session.startSend()
        let picture = patternBuffer(width: 320, height: 180)
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        let status = Collected<PublishStatus>()
        let pusher = TestThread { status.append(adapter.pushFrame(picture.frame)) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered })
        session.propertyChange(supported: [small, caps720[1]], suggested: caps720[1])
        GatePlugin.open()
        XCTAssertTrue(pusher.join())
        XCTAssertEqual(status.all, [.superseded])
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(session.sender.sent.map { [$0.width, $0.height] }, [[640, 360]])
        XCTAssertEqual(adapter.metrics.hook.drops, 1)
    }

    func testStopSendFromAnotherThreadWhileAFrameIsInTheChain() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=1", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 64, height: 36)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        let picture = patternBuffer(width: 64, height: 36)
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)

        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered, exited = GatePlugin.exited
        let status = Collected<PublishStatus>()
        let pusher = TestThread { status.append(adapter.pushFrame(picture.frame)) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered }, "the frame never reached the chain")

        // onStopSend arrives on the SDK's thread while the frame is held inside the chain.
        let start = Date()
        let stopper = TestThread { session.stopSend() }
        XCTAssertTrue(stopper.join(timeout: 2), "onStopSend must not wait for the chain")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)
        XCTAssertEqual(GatePlugin.exited, exited, "the frame was still in the chain when onStopSend returned")

        GatePlugin.open()
        XCTAssertTrue(pusher.join())
        XCTAssertEqual(status.all, [.refused(.stopped)], "the in-flight frame finishes but is not sent")
        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertTrue(emulator.violations.isEmpty, "nothing may be sent after onStopSend: \(emulator.violations)")
    }

    func testStopThenStartWhileAFrameIsInTheChainDoesNotSendTheStaleFrame() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=1", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        let status = Collected<PublishStatus>()
        let picture = patternBuffer(width: 32, height: 18)
        let pusher = TestThread { status.append(adapter.pushFrame(picture.frame)) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered })
        session.stopSend()
        session.startSend()
        GatePlugin.open()
        XCTAssertTrue(pusher.join())
        XCTAssertEqual(status.all, [.refused(.stopped)], "a frame from the previous sending period is not sent")
        XCTAssertEqual(session.sender.sent.count, 0)
    }

    func testRepeatedStartStop() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        let picture = patternBuffer(width: 32, height: 18)
        for cycle in 0..<5 {
            session.startSend()
            XCTAssertTrue(adapter.isSending)
            for _ in 0..<3 { XCTAssertEqual(adapter.pushFrame(picture.frame), .sent, "cycle \(cycle)") }
            session.stopSend()
            XCTAssertFalse(adapter.isSending)
            XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.stopped))
        }
        session.startSend()
        session.startSend()  // a repeated start is harmless
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        session.stopSend()
        session.stopSend()
        XCTAssertEqual(session.sender.sent.count, 16)
        XCTAssertEqual(adapter.metrics.refused, 5)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testUninitializedWithoutStopSend() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        let picture = patternBuffer(width: 32, height: 18)
        session.initialize()
        session.startSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        session.uninitialize()  // leave session: no onStopSend first
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.noSender))
        XCTAssertFalse(adapter.isSending)
        // onStartSend without a new onInitialize: still no sender.
        adapter.onStartSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .refused(.noSender))
        // A new session initializes again.
        session.initialize()
        session.startSend()
        XCTAssertEqual(adapter.pushFrame(picture.frame), .sent)
        XCTAssertEqual(session.sender.sent.count, 2)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testAsyncModeDropsTheOldestFrameAndCountsIt() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry(), mode: .async(capacity: 3))
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        // Frame i has luma 10·i (byte 1 survives the gate's edit of byte 0).
        var statuses: [PublishStatus] = []
        statuses.append(adapter.push(flatBuffer(width: 32, height: 18, y: 0)))
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered }, "the worker never took frame 0")
        for i in 1..<10 { statuses.append(adapter.push(flatBuffer(width: 32, height: 18, y: UInt8(10 * i)))) }
        XCTAssertEqual(statuses, [.queued, .queued, .queued, .queued]
                       + Array(repeating: PublishStatus.queuedDroppingOldest, count: 6))
        XCTAssertEqual(adapter.queuedFrames, 3)
        XCTAssertEqual(adapter.metrics.hook.drops, 6)
        GatePlugin.open()
        XCTAssertTrue(waitUntil { session.sender.sent.count == 4 })
        XCTAssertEqual(session.sender.sent.map { $0.bytes[1] }, [0, 70, 80, 90], "the oldest were dropped, the newest kept")
        XCTAssertNotNil(adapter.metrics.callback)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        adapter.close()
    }

    func testAsyncStopDiscardsQueuedFramesAndSendsNothingAfter() throws {
        let adapter = try VideoSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry(), mode: .async(capacity: 4))
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        GatePlugin.close()
        defer { GatePlugin.open() }
        let entered = GatePlugin.entered
        for i in 0..<4 { adapter.push(flatBuffer(width: 32, height: 18, y: UInt8(i))) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered })
        session.stopSend()
        XCTAssertEqual(adapter.queuedFrames, 0)
        GatePlugin.open()
        XCTAssertTrue(waitUntil { adapter.metrics.hook.drops + adapter.metrics.refused == 4 })
        XCTAssertEqual(adapter.metrics.hook.drops, 3, "three queued frames discarded at stop")
        XCTAssertEqual(adapter.metrics.refused, 1, "the frame in flight finished but was not sent")
        XCTAssertEqual(session.sender.sent.count, 0)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        adapter.close()
    }

    func testShareSourceSendsEvenSizedFramesOnlyWhileStarted() throws {
        let share = try ShareSourceAdapter(chain: "test_gate=add=0", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let session = emulator.shareSession(share)
        let picture = patternBuffer(width: 40, height: 30)
        XCTAssertEqual(share.pushFrame(picture.frame), .refused(.noSender))
        session.start()
        XCTAssertEqual(share.pushFrame(picture.frame), .sent)
        session.stop()
        // The refusal names the SDK event behind it.
        XCTAssertEqual(share.pushFrame(picture.frame), .refused(.shareStopped))
        XCTAssertTrue(Refusal.shareStopped.description.contains("onShareSendStopped"))
        XCTAssertEqual(session.sender.sent.map { [$0.width, $0.height, $0.dataLength] }, [[40, 30, 1800]])
        // A nil sender (the SDK could not start) keeps it refusing, and says so.
        share.onShareSendStarted(nil)
        XCTAssertEqual(share.pushFrame(picture.frame), .refused(.shareStartedWithoutSender))
        XCTAssertTrue(Refusal.shareStartedWithoutSender.description.contains("onShareSendStarted without a sender"))
        session.start()
        XCTAssertEqual(share.pushFrame(picture.frame), .sent, "a start with a sender clears it")
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testShareSourceCutsOddSizesToEven() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built yet")
        let share = try ShareSourceAdapter(registry: registry)
        let emulator = SDKSessionEmulator()
        let session = emulator.shareSession(share)
        session.start()
        let input = patternBuffer(width: 41, height: 31)
        XCTAssertEqual(share.push(input), .sent)
        XCTAssertEqual(session.sender.sent.map { [$0.width, $0.height] }, [[40, 30]])
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        // Cropped, not rescaled: every sent sample is the input's at the same place (the last
        // column and row, and the chroma column and row that covered only them, are gone).
        let sent = try XCTUnwrap(session.sender.sent.first)
        var expected: [UInt8] = []
        for (p, (w, h)) in [(0, (40, 30)), (1, (20, 15)), (2, (20, 15))] {
            for row in 0..<h {
                expected += UnsafeBufferPointer(start: input.frame.plane(p) + row * input.frame.stride(p), count: w)
            }
        }
        XCTAssertTrue(Array(sent.bytes) == expected, "the sent picture is the input cropped to 40x30")
    }

    func testSenderRejectionIsReportedAndCounted() throws {
        let adapter = try VideoSourceAdapter(registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 32, height: 18)
        let session = emulator.videoSourceSession(adapter, supported: [cap], suggested: cap)
        session.initialize()
        session.startSend()
        session.sender.requiredSize = (64, 36)  // the SDK changed its mind without telling
        let status = adapter.push(patternBuffer(width: 32, height: 18))
        XCTAssertEqual(status, .rejectedBySender(code: VideoSDKError.invalidParameter.rawValue, name: "Errors_Invalid_Parameter"))
        XCTAssertEqual(adapter.metrics.sendRejected, 1)
        XCTAssertEqual(adapter.lastFailure, status)
    }
}

/// A video sender that runs `duringNextSend` from inside its next `sendVideoFrame`, on the
/// sending thread, as an SDK delivering a lifecycle callback there would.
final class CallingBackVideoSender: SDKVideoSender {
    var duringNextSend: (() -> Void)?
    private(set) var sent = 0

    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                        rotation: Int, format: FrameDataFormat) -> VideoSDKError {
        sent += 1
        let callback = duringNextSend
        duringNextSend = nil
        callback?()
        return .success
    }
}

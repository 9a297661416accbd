import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import XCTest
@testable import RawFXTestSupport

/// Production studio's one producer thread and its range conversion (issue #10, item 6).
final class HookProductionStudioTests: XCTestCase {
    let mono48 = AudioFormat(sampleRate: 48000, channels: 1)

    /// Video pushed from one app thread, audio from another, and buffers the app packed
    /// itself, all reach the PS sender from one thread (the audio sender thread), none of them
    /// a pushing thread, with the default pacing and with `.immediate`; the fake sender records
    /// no second producer.
    func testThePSSenderSeesOneThreadForVideoAndAudio() throws {
        let registry = processorRegistry()
        for (mode, pacing) in [(ProcessingMode.sync, AudioPacing.worker), (.async(capacity: 4), .worker), (.sync, .immediate)] {
            let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 64, height: 48, format: .i420Limited),
                                                 videoChain: "test_gate=add=1", audioChain: "gain=db=-3", registry: registry,
                                                 mode: mode, pacing: pacing)
            let emulator = SDKSessionEmulator(clock: EmulatorClock())
            let session = emulator.productionStudioSession(ps)
            session.startResult(true)
            session.startSend()
            let picture = patternBuffer(width: 64, height: 48)
            let pcm = [Int16](repeating: 100, count: 480)
            let pushers = Locked<Set<UInt>>([])
            let frames = 30, blocks = 30
            let format = mono48
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                pushers.withLock { _ = $0.insert(UInt(pthread_self())) }
                if i == 0 {
                    for _ in 0..<frames {
                        let status = ps.push(picture)
                        XCTAssertTrue(status == .sent || status == .queued || status == .queuedDroppingOldest, "\(status)")
                        usleep(5_000)
                    }
                } else {
                    for b in 0..<blocks {
                        _ = pcm.withUnsafeBufferPointer { ps.pushAudio($0.baseAddress!, frameCount: 480, format: format, timestampMicroseconds: Int64(b) * 10_000) }
                        usleep(5_000)
                    }
                }
            }
            var own = [CChar](repeating: 0, count: 64 * 48 * 3 / 2)
            try own.withUnsafeMutableBufferPointer { try ps.sendVideoFrame($0.baseAddress!, width: 64, height: 48, frameLength: $0.count, format: .i420Limited) }
            var ownAudio = [CChar](repeating: 0, count: 960)
            try ownAudio.withUnsafeMutableBufferPointer { try ps.sendAudio($0.baseAddress!, dataLength: 960, sampleRate: 48000) }
            XCTAssertTrue(waitUntil { session.sender.sentAudio.count == blocks + 1 }, "\(mode): audio sent \(session.sender.sentAudio.count)")
            XCTAssertTrue(waitUntil { ps.videoMetrics.hook.frames + ps.videoMetrics.hook.drops >= UInt64(frames) })
            let threads = session.sender.callingThreads
            XCTAssertEqual(threads.video.count, 1, "\(mode)")
            XCTAssertEqual(threads.video, threads.audio, "\(mode): video and audio sent from different threads")
            XCTAssertTrue(threads.video.isDisjoint(with: pushers.withLock { $0 }), "\(mode): sent from a pushing thread")
            XCTAssertGreaterThan(session.sender.sentVideo.count, 1)
            XCTAssertTrue(emulator.violations.isEmpty, "\(mode): \(emulator.violations)")
            session.stopSend()
            ps.close()
        }
    }

    /// The fake sender's check can fail: calls from two threads in one sending period are a
    /// violation (reported once); a new period starts afresh.
    func testTwoProducerThreadsAreAViolation() throws {
        let emulator = SDKSessionEmulator()
        let sender = FakePSSender(capability: PSVideoSourceCapability(width: 64, height: 48), ledger: emulator.ledger)
        sender.isAccepting = true
        var pcm = [CChar](repeating: 0, count: 960)
        let send = { _ = pcm.withUnsafeMutableBufferPointer { sender.sendAudio($0.baseAddress!, dataLength: 960, sampleRate: 48000, channel: .mono) } }
        send()
        for _ in 0..<2 {
            let other = Thread { var p = [CChar](repeating: 0, count: 960); _ = p.withUnsafeMutableBufferPointer { sender.sendAudio($0.baseAddress!, dataLength: 960, sampleRate: 48000, channel: .mono) } }
            other.start()
            while !other.isFinished { usleep(100) }
        }
        XCTAssertEqual(emulator.violations.map(\.call), ["PS sendAudio"])
        sender.beginSendingPeriod()
        send()
        XCTAssertEqual(emulator.violations.count, 1)
        XCTAssertGreaterThanOrEqual(sender.callingThreads.audio.count, 2)  // a finished thread's id may be reused
    }

    /// A frame whose range is not the declared format gets `range=to=full` (or
    /// `range=to=limited`) after the fit: the bytes sent are those of the fit then that filter,
    /// run as a chain of their own.
    func testAFrameOfTheOtherRangeGetsTheRangeFilterAppended() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built")
        try XCTSkipUnless(hasFilter("range", in: registry),
                          "no 'range' filter in the registry: it is being added to the YUV plugin on another branch; run this test after the merge")
        for (declared, source) in [(FrameDataFormat.i420Full, ColorRange.limited), (.i420Limited, .full)] {
            let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 320, height: 180, format: declared),
                                                 registry: registry, pacing: .caller)
            let emulator = SDKSessionEmulator()
            let session = emulator.productionStudioSession(ps)
            session.startResult(true)
            session.startSend()
            let picture = patternBuffer(width: 160, height: 120, range: source)
            XCTAssertEqual(ps.push(picture), .sent)
            let sent = try XCTUnwrap(session.sender.sentVideo.first)
            XCTAssertEqual(sent.format, declared)
            let to = declared == .i420Full ? "full" : "limited"
            let reference = try VideoChain("scale=width=320:height=180:mode=fit,range=to=\(to)", registry: registry)
            let out = try reference.process(picture.frame)
            var packed = [UInt8](repeating: 0, count: out.format.packedByteCount)
            packed.withUnsafeMutableBytes { out.pack(into: $0.baseAddress!) }
            XCTAssertEqual(sent.bytes, packed, "\(declared)")
            XCTAssertEqual(ps.videoMetrics.filters.map(\.name), ["scale (fit)", "range (range)"])
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
            ps.close()
        }
    }
}

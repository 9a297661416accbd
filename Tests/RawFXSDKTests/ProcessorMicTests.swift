import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Pushes `samples` (interleaved, `format`) in chunks of the given frame counts, cycling.
@discardableResult
func pushInChunks(_ mic: VirtualMicAdapter, _ samples: [Int16], format: AudioFormat, chunks: [Int],
                  firstTimestamp: Int64? = nil) -> [AudioPushStatus] {
    var statuses: [AudioPushStatus] = []
    var offset = 0
    var i = 0
    let frames = samples.count / format.channels
    samples.withUnsafeBufferPointer { p in
        while offset < frames {
            let n = min(chunks[i % chunks.count], frames - offset)
            let ts: Int64? = i == 0 ? firstTimestamp : nil
            statuses.append(mic.pushAudio(p.baseAddress! + offset * format.channels, frameCount: n, format: format,
                                          timestampMicroseconds: ts))
            offset += n
            i += 1
        }
    }
    return statuses
}

final class ProcessorMicTests: XCTestCase {
    let mono48 = AudioFormat(sampleRate: 48000, channels: 1)

    func testChunksAreExactly10msOfMono16BitAtTheTargetRate() throws {
        let mic = try VirtualMicAdapter(chain: "gain=db=0", registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let signal = TestAudio.speech(sampleRate: 48000, seconds: 1, seed: 5)
        let statuses = pushInChunks(mic, signal, format: mono48, chunks: [137, 480, 1000, 7, 2222], firstTimestamp: 0)
        XCTAssertTrue(statuses.allSatisfy(\.isAccepted))
        XCTAssertEqual(mic.queuedChunks, 100)
        // The app's clock: one pump every 10 ms.
        for step in 0...100 {
            emulator.clock.set(microseconds: Int64(step) * 10_000)
            mic.pump(nowMicroseconds: emulator.clock.microseconds)
        }
        let sent = session.sender.sent
        XCTAssertEqual(sent.count, 100)
        XCTAssertTrue(sent.allSatisfy { $0.dataLength == 960 && $0.sampleRate == 48000 && $0.channel == .mono })
        XCTAssertEqual(mic.chunkBytes, 48000 / 100 * 2)
        XCTAssertEqual(session.sender.allSamples, signal)
        // Paced: chunk k went out at 10·k ms on the app's clock.
        XCTAssertEqual(sent.map(\.time), (0..<100).map { Int64($0) * 10_000 })
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testOtherRatesAndChannelsAreConvertedWithAnAppendedResample() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("resample", in: registry), "the Speex plugin (resample) is not built yet")
        for (target, input) in [(48000, AudioFormat(sampleRate: 44100, channels: 2)), (16000, AudioFormat(sampleRate: 48000, channels: 2)),
                                (32000, AudioFormat(sampleRate: 32000, channels: 2)), (48000, AudioFormat(sampleRate: 8000, channels: 1))] {
            let mic = try VirtualMicAdapter(chain: "gain=db=-6", registry: registry, targetRate: target, pacing: .caller)
            let emulator = SDKSessionEmulator()
            let session = emulator.micSession(mic)
            session.initialize()
            session.startSend()
            let mono = TestAudio.speech(sampleRate: input.sampleRate, seconds: 1, seed: 6)
            let signal = input.channels == 1 ? mono : TestAudio.interleave(mono, channels: input.channels)
            pushInChunks(mic, signal, format: input, chunks: [441, 1000, 333], firstTimestamp: 0)
            for step in 0...120 { mic.pump(nowMicroseconds: Int64(step) * 10_000); emulator.clock.set(microseconds: Int64(step) * 10_000) }
            let sent = session.sender.sent
            XCTAssertTrue(sent.allSatisfy { $0.dataLength == target / 100 * 2 && $0.sampleRate == target && $0.channel == .mono },
                          "\(input) → \(target)")
            // One second in, one second out (give or take the resampler's latency and the last partial chunk).
            XCTAssertGreaterThanOrEqual(sent.count, 98, "\(input) → \(target)")
            XCTAssertLessThanOrEqual(sent.count, 100, "\(input) → \(target)")
            XCTAssertEqual(mic.metrics.filters.map(\.name), ["gain", "resample (to \(target) Hz mono)"])
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        }
    }

    func testPacingFollowsTheAudioTimestampsOnTheCallersClock() throws {
        let mic = try VirtualMicAdapter(registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 1, count: 4800)  // 100 ms
        // 100 ms at media time 5 s, then (a gap in the source) 100 ms at 5.3 s.
        pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 4800, format: mono48, timestampMicroseconds: 5_000_000) }
        pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 4800, format: mono48, timestampMicroseconds: 5_300_000) }
        XCTAssertEqual(mic.pump(nowMicroseconds: 1_000), 11_000, "the first chunk anchors the schedule")
        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertEqual(mic.pump(nowMicroseconds: 6_000), 11_000, "nothing is due yet")
        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertEqual(mic.pump(nowMicroseconds: 51_000), 61_000)
        XCTAssertEqual(session.sender.sent.count, 6)
        XCTAssertEqual(mic.pump(nowMicroseconds: 101_000), 301_000, "the source's 200 ms gap is kept")
        XCTAssertEqual(session.sender.sent.count, 10)
        XCTAssertEqual(mic.pump(nowMicroseconds: 301_000), 311_000)
        XCTAssertEqual(session.sender.sent.count, 11)
        XCTAssertNil(mic.pump(nowMicroseconds: 401_000))
        XCTAssertEqual(session.sender.sent.count, 20)
        XCTAssertEqual(mic.reanchors, 0)
    }

    func testAStarvedPumpReanchorsInsteadOfBursting() throws {
        let mic = try VirtualMicAdapter(registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 1, count: 48000)
        pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 48000, format: mono48, timestampMicroseconds: 0) }
        mic.pump(nowMicroseconds: 0)
        XCTAssertEqual(session.sender.sent.count, 1)
        // The app's loop stalls for half a second: the schedule shifts, no 50-chunk burst.
        XCTAssertEqual(mic.pump(nowMicroseconds: 500_000), 510_000)
        XCTAssertEqual(session.sender.sent.count, 2)
        XCTAssertEqual(mic.reanchors, 1)
    }

    func testImmediatePacingFasterThanRealTimeIsRejectedByTheSDK() throws {
        // Why pacing exists: a whole second pushed and sent at once runs ahead of the SDK's clock.
        let mic = try VirtualMicAdapter(registry: processorRegistry(), pacing: .immediate)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 1, count: 48000)
        pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 48000, format: mono48) }
        XCTAssertEqual(session.sender.sent.count, 31, "300 ms of lead, then the SDK says too frequently")
        XCTAssertTrue(emulator.violations.contains { $0.code == VideoSDKError.rawdataSendTooFrequently.rawValue })
        XCTAssertEqual(mic.metrics.sendRejected, 69)
        XCTAssertEqual(mic.lastRejection, "Errors_RAWDATA_SEND_TOO_FREQUENTLY (6021)")
    }

    func testAudioOutsideStartStopIsRefusedAndStopDiscardsWhatWaits() throws {
        let mic = try VirtualMicAdapter(chain: "test_gate_audio", registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        let pcm = [Int16](repeating: 2, count: 4800)
        let entered = GatePlugin.entered
        let push = { pcm.withUnsafeBufferPointer { mic.pushAudio($0.baseAddress!, frameCount: 4800, format: self.mono48) } }
        XCTAssertEqual(push(), .refused(.noSender))
        session.initialize()
        XCTAssertEqual(push(), .refused(.notStarted))
        XCTAssertEqual(GatePlugin.entered, entered, "refused audio does not run the chain")
        session.startSend()
        XCTAssertEqual(push(), .accepted(chunks: 10))
        mic.pump(nowMicroseconds: 0)
        session.stopSend()
        XCTAssertEqual(mic.queuedChunks, 0)
        XCTAssertNil(mic.pump(nowMicroseconds: 1_000_000))
        XCTAssertEqual(push(), .refused(.stopped))
        XCTAssertEqual(session.sender.sent.count, 1)
        XCTAssertEqual(mic.metrics.hook.drops, 9)
        XCTAssertEqual(mic.metrics.refused, 3)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testRepeatedStartStopAndUninitializeWithoutStop() throws {
        let mic = try VirtualMicAdapter(chain: "test_accum", registry: processorRegistry(), pacing: .immediate)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.initialize()
        let pcm = [Int16](repeating: 1000, count: 960)
        for _ in 0..<4 {
            session.startSend()
            pcm.withUnsafeBufferPointer { XCTAssertEqual(mic.pushAudio($0.baseAddress!, frameCount: 960, format: mono48), .accepted(chunks: 2)) }
            session.stopSend()
        }
        XCTAssertEqual(session.sender.sent.count, 8)
        // Each start resets the chain: every period begins from the same filter state.
        XCTAssertEqual(session.sender.sent[0].samples, session.sender.sent[2].samples)
        session.startSend()
        session.uninitialize()
        pcm.withUnsafeBufferPointer { XCTAssertEqual(mic.pushAudio($0.baseAddress!, frameCount: 960, format: mono48), .refused(.noSender)) }
        XCTAssertEqual(session.sender.sent.count, 8)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testWorkerPacesInRealTimeAndThePusherNeverWaits() throws {
        let mic = try VirtualMicAdapter(registry: processorRegistry(), pacing: .worker)
        let emulator = SDKSessionEmulator(clock: EmulatorClock())
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 3, count: 14400)  // 300 ms
        let start = Date()
        pcm.withUnsafeBufferPointer { XCTAssertEqual(mic.pushAudio($0.baseAddress!, frameCount: 14400, format: mono48), .accepted(chunks: 30)) }
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.1, "push returns without waiting for the pacing")
        XCTAssertTrue(waitUntil { session.sender.sent.count == 30 })
        let times = session.sender.sent.map(\.time)
        let span = Double(times.last! - times.first!) / 1e6
        XCTAssertGreaterThan(span, 0.25, "30 chunks of 10 ms take about 290 ms to go out")
        XCTAssertLessThan(span, 1.0)
        session.stopSend()
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testStopFromAnotherThreadWhileTheWorkerSends() throws {
        let mic = try VirtualMicAdapter(registry: processorRegistry(), pacing: .worker)
        let emulator = SDKSessionEmulator(clock: EmulatorClock())
        let session = emulator.micSession(mic)
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 3, count: 48000)  // 1 s
        pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 48000, format: mono48) }
        XCTAssertTrue(waitUntil { session.sender.sent.count >= 5 })
        let stopper = TestThread { session.stopSend() }
        XCTAssertTrue(stopper.join(timeout: 2))
        let afterStop = session.sender.sent.count
        usleep(100_000)
        XCTAssertEqual(session.sender.sent.count, afterStop, "nothing is sent once onMicStopSend returned")
        XCTAssertLessThan(afterStop, 100)
        XCTAssertEqual(Int(mic.metrics.hook.drops) + afterStop, 100)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }
}

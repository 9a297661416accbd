import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Run-time control of the virtual speaker and its callback names (issue #10: every hook has
/// setChain / setParameter / setBypass; both SDKs' audio delegate spellings).
final class HookSpeakerControlTests: XCTestCase {
    let mono48 = AudioFormat(sampleRate: 48000, channels: 1)

    /// Four users and the mix through `denoise`, the level changed at block 40 from another
    /// call: every stream's output is bit-exact against its own AudioChain whose level changed
    /// at that same block, and differs from a chain rebuilt at that block (the history a
    /// swap would lose) and from a chain that never changed.
    func testDenoiseLevelChangedMidStreamKeepsEveryUsersHistory() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("denoise", in: registry), "the Speex plugin (denoise) is not built")
        for mode in [ProcessingMode.sync, .async(capacity: 2000)] {
            let recorder = SinkRecorder()
            let hook = try VirtualSpeakerHook(chain: "denoise=level=-40", registry: registry, mode: mode, sink: recorder.sink)
            let emulator = SDKSessionEmulator()
            let users = (1...4).map { SDKUser(UInt64($0)) }
            var signals: [AudioStreamID: [Int16]] = [:]
            for (i, user) in users.enumerated() {
                signals[.oneWay(user)] = TestAudio.addNoise(to: TestAudio.speech(sampleRate: 48000, seconds: 1, seed: UInt64(20 + i)), snr: 5)
            }
            signals[.mixed] = TestAudio.addNoise(to: TestAudio.speech(sampleRate: 48000, seconds: 1, seed: 30), snr: 3)
            let order: [AudioStreamID] = users.map { .oneWay($0) } + [.mixed]
            let blocks = 100, change = 40
            for b in 0..<blocks {
                if b == change {
                    if mode != .sync { hook.drain() }
                    try hook.setParameter("denoise.level", "-5")
                }
                for id in order {
                    deliverPCM(emulator, hook, id, signals[id]![(b * 480)..<((b + 1) * 480)], mono48, ms: UInt64(b * 10))
                }
            }
            hook.drain()
            for id in order {
                let got = recorder.samples(of: id)
                let expected = try reference(signals[id]!, registry: registry, blocks: blocks, change: change) { try $0.control.setParameter("denoise.level", "-5") }
                XCTAssertEqual(got.count, expected.count, "\(mode) \(id)")
                XCTAssertTrue(got == expected, "\(mode) \(id): not bit-exact with one chain whose level changed at block \(change)")
                let rebuilt = try reference(signals[id]!, registry: registry, blocks: blocks, change: change, rebuildWith: "denoise=level=-5")
                XCTAssertFalse(got == rebuilt, "\(mode) \(id): the output equals a chain rebuilt at the change, so the test cannot tell")
                let unchanged = try reference(signals[id]!, registry: registry, blocks: blocks, change: blocks) { _ in }
                XCTAssertFalse(got == unchanged, "\(mode) \(id): the level change had no effect")
            }
            // Async: 500 callbacks pass a 400-callback queue; the growth is counted as errors, nothing else is.
            XCTAssertEqual(hook.metrics.hook.errors, hook.metrics.overflows)
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
            hook.close()
        }
    }

    /// One stream alone: one `AudioChain`, 10 ms blocks, `edit` at block `change` (or a new
    /// chain of `rebuildWith` from there).
    private func reference(_ signal: [Int16], registry: PluginRegistry, blocks: Int, change: Int,
                           rebuildWith: String? = nil, edit: (AudioChain) throws -> Void = { _ in }) throws -> [Int16] {
        var chain = try AudioChain("denoise=level=-40", registry: registry)
        var out: [Int16] = []
        var copy = signal
        try copy.withUnsafeMutableBufferPointer { p in
            for b in 0..<blocks {
                if b == change {
                    if let rebuildWith { chain = try AudioChain(rebuildWith, registry: registry) } else { try edit(chain) }
                }
                try chain.process(AudioBlock(samples: p.baseAddress! + b * 480, frameCount: 480, format: mono48)) {
                    out.append(contentsOf: $0.buffer)
                }
            }
        }
        return out
    }

    /// Each callback name of both SDKs reaches the right stream, with its source and user.
    func testEverySpeakerCallbackNameOfBothSDKsServesItsStream() throws {
        struct Seen: Equatable { var stream: AudioStreamID; var source: UInt32; var user: UInt64; var first: Int16 }
        let seen = Locked<[Seen]>([])
        let hook = try VirtualSpeakerHook(chain: "", registry: processorRegistry()) { stream, block in
            seen.withLock { $0.append(Seen(stream: stream, source: block.raw.source, user: block.raw.user_id, first: block.buffer[0])) }
        }
        let emulator = SDKSessionEmulator()
        let mixed = rawfx_audio_source(RAWFX_AUDIO_SOURCE_MIXED)
        let oneWay = rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY)
        let shared = rawfx_audio_source(RAWFX_AUDIO_SOURCE_SHARED)
        func pcm(_ v: Int16, _ body: (UnsafeBufferPointer<Int16>) -> Void) { [Int16](repeating: v, count: 480).withUnsafeBufferPointer(body) }
        // IZoomVideoSDKVirtualAudioSpeaker
        pcm(1) { emulator.deliverSpeakerAudio(hook, stream: .mixed, samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(2) { emulator.deliverSpeakerAudio(hook, stream: .oneWay(SDKUser(7)), samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(3) { emulator.deliverSpeakerAudio(hook, stream: .shared, samples: $0, format: mono48, timeStampMilliseconds: 0) }
        // IZoomVideoSDKDelegate: onMixedAudioRawDataReceived, onOneWayAudioRawDataReceived(_:user:), onSharedAudioRawDataReceived
        pcm(4) { emulator.deliverVideoSDKAudio(hook, stream: .mixed, samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(5) { emulator.deliverVideoSDKAudio(hook, stream: .oneWay(SDKUser(userIDString: "u-8")), samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(6) { emulator.deliverVideoSDKAudio(hook, stream: .shared, samples: $0, format: mono48, timeStampMilliseconds: 0) }
        // IZoomSDKAudioRawDataDelegate: onMixedAudioRawDataReceived, onOneWayAudioRawDataReceived(_:userID:), onShareAudioRawDataReceived(_:userID:)
        pcm(7) { emulator.deliverMeetingSDKAudio(hook, stream: .mixed, samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(8) { emulator.deliverMeetingSDKAudio(hook, stream: .oneWay(SDKUser(9)), samples: $0, format: mono48, timeStampMilliseconds: 0) }
        pcm(9) { emulator.deliverMeetingSDKAudio(hook, stream: .shared, samples: $0, format: mono48, timeStampMilliseconds: 0, sharerUserID: 9) }
        let u8 = SDKUser(userIDString: "u-8").userID
        XCTAssertEqual(seen.withLock { $0 }, [
            Seen(stream: .mixed, source: mixed, user: 0, first: 1),
            Seen(stream: .oneWay(SDKUser(7)), source: oneWay, user: 7, first: 2),
            Seen(stream: .shared, source: shared, user: 0, first: 3),
            Seen(stream: .mixed, source: mixed, user: 0, first: 4),
            Seen(stream: .oneWay(SDKUser(u8)), source: oneWay, user: u8, first: 5),
            Seen(stream: .shared, source: shared, user: 0, first: 6),
            Seen(stream: .mixed, source: mixed, user: 0, first: 7),
            Seen(stream: .oneWay(SDKUser(9)), source: oneWay, user: 9, first: 8),
            Seen(stream: .shared, source: shared, user: 0, first: 9),
        ])
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        // A Video SDK user that does not fit the Meeting SDK's 32-bit id is a violation, not a delivery.
        pcm(10) { emulator.deliverMeetingSDKAudio(hook, stream: .oneWay(SDKUser(u8)), samples: $0, format: mono48, timeStampMilliseconds: 0) }
        XCTAssertEqual(emulator.violations.count, 1)
        XCTAssertEqual(seen.withLock { $0.count }, 9)
    }

    /// configureVirtualSpeaker on an existing speaker sets the chain of the object the SDK
    /// holds: no callback is refused, and the metrics continue.
    func testReconfiguringTheSpeakerKeepsTheObjectTheSDKHolds() throws {
        let processor = RawFXProcessor(registry: processorRegistry())
        let recorder = SinkRecorder()
        let first = try processor.configureVirtualSpeaker(chain: "test_accum", sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let pcm = [Int16](repeating: 10, count: 480)
        for i in 0..<5 { deliverPCM(emulator, first, .oneWay(SDKUser(1)), pcm[...], mono48, ms: UInt64(i * 10)) }
        let second = try processor.configureVirtualSpeaker(chain: "gain=db=0,test_accum") { _, _ in XCTFail("the new sink is ignored") }
        XCTAssertTrue(first === second)
        XCTAssertEqual(second.chainText, "gain=db=0,test_accum")
        for i in 5..<10 { deliverPCM(emulator, first, .oneWay(SDKUser(1)), pcm[...], mono48, ms: UInt64(i * 10)) }
        let metrics = first.metrics
        XCTAssertEqual(metrics.refused, 0)
        XCTAssertEqual(metrics.hook.frames, 10)
        XCTAssertEqual(recorder.all.count, 10)
        XCTAssertEqual(metrics.filters.map(\.name), ["user 1/gain", "user 1/test_accum"])
        // gain is new (its own figures); test_accum's continue although it moved.
        XCTAssertEqual(metrics.filters.map(\.frames), [5, 10])
        try first.setChain("gain=db=0,test_accum")
        for i in 10..<13 { deliverPCM(emulator, first, .oneWay(SDKUser(1)), pcm[...], mono48, ms: UInt64(i * 10)) }
        XCTAssertEqual(first.metrics.filters.map(\.frames), [8, 13])
        XCTAssertThrowsError(try first.setParameter("gain.nosuch", "1"))
        XCTAssertThrowsError(try first.setChain("nosuch"))
        XCTAssertEqual(first.chainText, "gain=db=0,test_accum")
        processor.close()
    }
}

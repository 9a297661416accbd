import Foundation
import RawFX
import RawFXSDK
import RawFXEmulator
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

final class ProcessorSpeakerTests: XCTestCase {
    var mono48: AudioFormat { AudioFormat(sampleRate: 48000, channels: 1) }

    func testTwoUsersThroughAStatefulFilterMatchSeparateChains() throws {
        let registry = processorRegistry()
        var chains = ["test_accum", "gain=db=-3:block=256,test_accum"]
        if hasFilter("denoise", in: registry) { chains.append("denoise=level=-30") }
        for chain in chains {
            let recorder = SinkRecorder()
            let hook = try VirtualSpeakerHook(chain: chain, registry: registry, sink: recorder.sink)
            let emulator = SDKSessionEmulator()
            let alice = TestAudio.speech(sampleRate: 48000, seconds: 0.5, seed: 11)
            let bob = TestAudio.addNoise(to: TestAudio.speech(sampleRate: 48000, seconds: 0.5, seed: 12), snr: 10)
            let mix = zip(alice, bob).map { Int16(clamping: (Int($0) + Int($1)) / 2) }
            // 10 ms callbacks, interleaved as the SDK's audio thread delivers them.
            for i in 0..<50 {
                let r = (i * 480)..<((i + 1) * 480)
                deliverPCM(emulator, hook, .oneWay(SDKUser(1)), alice[r], mono48, ms: UInt64(i * 10))
                deliverPCM(emulator, hook, .oneWay(SDKUser(2)), bob[r], mono48, ms: UInt64(i * 10))
                deliverPCM(emulator, hook, .mixed, mix[r], mono48, ms: UInt64(i * 10))
            }
            XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(1))),
                           try separateChainOutput(chain, registry: registry, signal: alice, format: mono48, chunk: 480), chain)
            XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(2))),
                           try separateChainOutput(chain, registry: registry, signal: bob, format: mono48, chunk: 480), chain)
            XCTAssertEqual(recorder.samples(of: .mixed),
                           try separateChainOutput(chain, registry: registry, signal: mix, format: mono48, chunk: 480), chain)
            XCTAssertEqual(Set(hook.activeStreams), [.oneWay(SDKUser(1)), .oneWay(SDKUser(2)), .mixed])
            XCTAssertEqual(hook.metrics.hook.frames, 150)
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        }
    }

    func testBlocksCarryTheirStreamSourceUserAndTimestamp() throws {
        let hook = try VirtualSpeakerHook(chain: "test_accum", registry: processorRegistry()) { stream, block in
            switch stream {
            case .mixed: XCTAssertEqual(block.raw.source, rawfx_audio_source(RAWFX_AUDIO_SOURCE_MIXED))
            case .shared: XCTAssertEqual(block.raw.source, rawfx_audio_source(RAWFX_AUDIO_SOURCE_SHARED))
            case .oneWay(let user):
                XCTAssertEqual(block.raw.source, rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY))
                XCTAssertEqual(block.raw.user_id, user.userID)
            }
            XCTAssertEqual(block.timestampMicroseconds, 1_234_000)
        }
        let emulator = SDKSessionEmulator()
        let pcm = [Int16](repeating: 1000, count: 320)
        for stream in [AudioStreamID.mixed, .shared, .oneWay(SDKUser(77))] {
            deliverPCM(emulator, hook, stream, pcm[...], AudioFormat(sampleRate: 32000, channels: 1), ms: 1234)
        }
        XCTAssertEqual(hook.activeStreams.count, 3)
    }

    func testStreamsAreCreatedOnFirstAudioAndReleasedWhenTheirUserLeaves() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "gain=db=0:block=480", registry: processorRegistry(), sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        XCTAssertTrue(hook.activeStreams.isEmpty)
        let pcm = [Int16](repeating: 7, count: 240)
        deliverPCM(emulator, hook, .oneWay(SDKUser(5)), pcm[...], mono48, ms: 0)
        deliverPCM(emulator, hook, .oneWay(SDKUser(6)), pcm[...], mono48, ms: 0)
        XCTAssertEqual(Set(hook.activeStreams), [.oneWay(SDKUser(5)), .oneWay(SDKUser(6))])
        XCTAssertTrue(recorder.all.isEmpty, "half a block is still in the re-block FIFO")
        hook.onUserLeave([SDKUser(5)])
        XCTAssertEqual(hook.activeStreams, [.oneWay(SDKUser(6))])
        // The leaving user's pending half block came out: every sample, none added.
        XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(5))), pcm)
        XCTAssertNil(hook.metrics(for: .oneWay(SDKUser(5))))
        // Audio after a rejoin starts a fresh stream.
        deliverPCM(emulator, hook, .oneWay(SDKUser(5)), pcm[...], mono48, ms: 20)
        XCTAssertEqual(hook.metrics(for: .oneWay(SDKUser(5)))?.first?.frames, 0)
    }

    func testUserLeavingWhileTheirAudioIsInTheChain() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_gate_audio", registry: processorRegistry(), sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let user = SDKUser(9)
        let pcm = [Int16](repeating: 3, count: 480)
        deliverPCM(emulator, hook, .oneWay(user), pcm[...], mono48, ms: 0)

        GatePlugin.close()
        defer { GatePlugin.open() }
        // Hold user 9's next block in the chain and deliver the leave from another thread.
        let entered2 = GatePlugin.entered
        let mono48 = self.mono48
        let audioThread2 = TestThread { deliverPCM(emulator, hook, .oneWay(user), pcm[...], mono48, ms: 20) }
        XCTAssertTrue(waitUntil { GatePlugin.entered > entered2 })
        // The verdict is the order (did the held block leave the chain before the leave
        // returned?), not a timeout: the pause only gives a leave that does not wait its chance
        // to return while the gate is still closed.
        let exitedBefore = GatePlugin.exited
        let left = Collected<Bool>()
        let leaver = TestThread {
            hook.onUserLeave([user])
            left.append(GatePlugin.exited > exitedBefore)
        }
        XCTAssertTrue(waitUntil { !hook.activeStreams.contains(.oneWay(user)) }, "the leave takes the stream out of the map first")
        usleep(20_000)
        GatePlugin.open()
        XCTAssertTrue(audioThread2.join())
        XCTAssertTrue(leaver.join())
        XCTAssertEqual(left.all, [true], "the leave waits for the block in flight (one block of chain work)")
        // All three blocks reached the sink, in order, none after the leave.
        XCTAssertEqual(recorder.samples(of: .oneWay(user)), pcm + pcm)
        XCTAssertTrue(hook.activeStreams.isEmpty)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    /// A stream through a chain with latency (SpeexDSP's denoiser: 10 ms) gives back every
    /// sample when its user leaves, in sync and async mode, and when the hook closes: the
    /// stream's output is what `AudioChain` gives for the same input, drained (the input's
    /// length plus the latency it began with). It used to stop 10 ms short.
    func testALeavingUsersLatencyTailReachesTheSink() throws {
        let chainText = "denoise=level=-30"
        let noise = TestAudio.whiteNoise(count: 4800 + 333, rms: 2000, seed: 4)
        let reference = try AudioChain(chainText, registry: builtPlugins)
        try reference.negotiate(mono48)
        var expected: [Int16] = []
        try noise.withUnsafeBufferPointer { pointer in
            let block = AudioBlock(samples: UnsafeMutablePointer(mutating: pointer.baseAddress!), frameCount: noise.count, format: mono48)
            try reference.process(block) { expected += Array($0.buffer) }
        }
        try reference.drain { expected += Array($0.buffer) }
        XCTAssertEqual(expected.count, noise.count + 480)
        for (mode, leave) in [(ProcessingMode.sync, true), (.asyncAudioDefault, true), (.sync, false)] {
            let recorder = SinkRecorder()
            let hook = try VirtualSpeakerHook(chain: chainText, registry: builtPlugins, mode: mode, sink: recorder.sink)
            let emulator = SDKSessionEmulator()
            var start = 0
            while start < noise.count {
                let end = min(start + 480, noise.count)
                deliverPCM(emulator, hook, .oneWay(SDKUser(3)), noise[start..<end], mono48, ms: UInt64(start / 48))
                start = end
            }
            if leave { hook.onUserLeave([SDKUser(3)]) }
            hook.drain()
            hook.close()
            XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(3))), expected, "\(mode), \(leave ? "user left" : "hook closed")")
        }
    }

    func testRateAndChannelChangesRenegotiateBetweenBlocks() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "gain=db=0:block=480", registry: processorRegistry(), sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let a = (0..<720).map { Int16($0) }
        // 48 kHz mono: 720 frames → one block out, 240 pending.
        deliverPCM(emulator, hook, .mixed, a[0..<360], mono48, ms: 0)
        deliverPCM(emulator, hook, .mixed, a[360..<720], mono48, ms: 7)
        // Then 32 kHz stereo: the pending 48 kHz samples come out first, exactly.
        let stereo = AudioFormat(sampleRate: 32000, channels: 2)
        let b = [Int16](repeating: 5, count: 960)
        deliverPCM(emulator, hook, .mixed, b[...], stereo, ms: 15)
        let blocks = recorder.all
        XCTAssertEqual(blocks.map(\.format), [mono48, mono48, stereo])
        XCTAssertEqual(blocks[0].samples, Array(a[0..<480]))
        XCTAssertEqual(blocks[1].samples, Array(a[480..<720]))
        XCTAssertEqual(blocks[2].samples, b)
        XCTAssertEqual(hook.metrics.hook.errors, 0)
    }

    func testTheSDKBufferIsNeverWrittenAndNotRetainedInSyncMode() throws {
        final class Probe: AudioRawData {
            var storage: [Int16]
            var written = false
            init(_ s: [Int16]) { storage = s }
            var buffer: UnsafeMutablePointer<CChar>? {
                storage.withUnsafeMutableBufferPointer { UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self) }
            }
            var bufferLen: Int { storage.count * 2 }
            var sampleRate: Int { 48000 }
            var channelNum: Int { 1 }
            var timeStamp: UInt64 { 0 }
            var refs = 0
            func canAddRef() -> Bool { true }
            func addRef() -> Bool { refs += 1; return true }
            func releaseRef() -> Int { refs -= 1; return refs }
        }
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "gain=db=12", registry: processorRegistry(), sink: recorder.sink)
        let original = (0..<480).map { Int16($0 * 10) }
        let probe = Probe(original)
        hook.onVirtualSpeakerMixedAudioReceived(probe)
        XCTAssertEqual(probe.storage, original, "the in-place gain ran on a copy")
        XCTAssertEqual(probe.refs, 0, "sync mode retains nothing")
        XCTAssertEqual(recorder.samples(of: .mixed).prefix(3), [0, 40, 80])
    }

    func testMisalignedAndMalformedBuffers() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_accum", registry: processorRegistry(), sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let pcm = (0..<480).map { Int16($0) }
        deliverPCM(emulator, hook, .oneWay(SDKUser(1)), pcm[...], mono48, ms: 0)
        deliverPCM(emulator, hook, .oneWay(SDKUser(2)), pcm[...], mono48, ms: 0, misalign: true)
        XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(1))), recorder.samples(of: .oneWay(SDKUser(2))))
        // A length that is not whole stereo frames is counted as an error, not processed.
        deliverPCM(emulator, hook, .mixed, pcm[0..<3], AudioFormat(sampleRate: 48000, channels: 2), ms: 0)
        XCTAssertEqual(hook.metrics.hook.errors, 1)
        XCTAssertTrue(recorder.samples(of: .mixed).isEmpty)
    }

    func testAsyncModeCopiesOrRetainsAndAlwaysReleases() throws {
        let registry = processorRegistry()
        let signal = TestAudio.speech(sampleRate: 48000, seconds: 0.3, seed: 4)
        func run(mode: ProcessingMode, retain: Bool, memory: RawDataMemoryMode) throws -> ([Int16], SDKSessionEmulator) {
            let recorder = SinkRecorder()
            let hook = try VirtualSpeakerHook(chain: "test_accum", registry: registry, mode: mode, retainInAsync: retain,
                                              sink: recorder.sink)
            let emulator = SDKSessionEmulator()
            for i in 0..<30 {
                deliverPCM(emulator, hook, .oneWay(SDKUser(3)), signal[(i * 480)..<((i + 1) * 480)], mono48, ms: UInt64(i * 10),
                        memoryMode: memory)
            }
            hook.drain()
            hook.close()
            return (recorder.samples(of: .oneWay(SDKUser(3))), emulator)
        }
        let (reference, syncEmulator) = try run(mode: .sync, retain: false, memory: .heap)
        XCTAssertEqual(syncEmulator.ledger.addRefs, 0)
        XCTAssertEqual(reference.count, signal.count)

        let (copied, e1) = try run(mode: .asyncAudioDefault, retain: false, memory: .heap)
        XCTAssertEqual(copied, reference)
        XCTAssertEqual(e1.ledger.addRefs, 0)
        XCTAssertTrue(e1.violations.isEmpty, "\(e1.violations)")

        let (retained, e2) = try run(mode: .asyncAudioDefault, retain: true, memory: .heap)
        XCTAssertEqual(retained, reference)
        XCTAssertEqual(e2.ledger.addRefs, 30)
        XCTAssertEqual(e2.ledger.outstandingReferences, 0, "every addRef released")
        XCTAssertTrue(e2.violations.isEmpty, "\(e2.violations)")

        // Stack memory cannot be retained: the hook copies instead.
        let (stack, e3) = try run(mode: .asyncAudioDefault, retain: true, memory: .stack)
        XCTAssertEqual(stack, reference)
        XCTAssertEqual(e3.ledger.addRefs, 0)
        XCTAssertTrue(e3.violations.isEmpty, "\(e3.violations)")
    }

    func testAsyncAudioNeverDropsAndReportsQueueOverflowAsAnError() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_gate_audio", registry: processorRegistry(), mode: .async(capacity: 20),
                                          sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let stereo = AudioFormat(sampleRate: 48000, channels: 2)
        let signal = TestAudio.interleave(TestAudio.speech(sampleRate: 48000, seconds: 0.5, seed: 8), channels: 2)
        GatePlugin.close()
        defer { GatePlugin.open() }
        var slowest: TimeInterval = 0
        for i in 0..<50 {
            let start = Date()
            deliverPCM(emulator, hook, .mixed, signal[(i * 960)..<((i + 1) * 960)], stereo, ms: UInt64(i * 10))
            slowest = max(slowest, Date().timeIntervalSince(start))
        }
        XCTAssertLessThan(slowest, 0.5, "the SDK's thread is never blocked by the held worker")
        let metrics = hook.metrics
        XCTAssertGreaterThan(metrics.overflows, 0)
        XCTAssertEqual(metrics.hook.errors, metrics.overflows)
        XCTAssertEqual(metrics.hook.drops, 0)
        XCTAssertEqual(metrics.callback?.frames, 50)
        GatePlugin.open()
        hook.drain()
        XCTAssertEqual(recorder.samples(of: .mixed), signal, "every sample arrived, in order")
        XCTAssertEqual(hook.metrics.hook.frames, 50)
        hook.close()
    }

    func testAsyncLeaveIsOrderedAfterThatUsersQueuedAudio() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "gain=db=0:block=480", registry: processorRegistry(), mode: .asyncAudioDefault,
                                          sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let pcm = [Int16](repeating: 4, count: 240)
        for i in 0..<5 { deliverPCM(emulator, hook, .oneWay(SDKUser(1)), pcm[...], mono48, ms: UInt64(i * 5)) }
        hook.onUserLeave([SDKUser(1)])
        hook.drain()
        XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(1))), [Int16](repeating: 4, count: 1200))
        XCTAssertTrue(hook.activeStreams.isEmpty)
        hook.close()
    }

    func testRunVirtualSpeakerSessionWithALeavingUser() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_accum", registry: processorRegistry(), sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        let format = AudioFormat(sampleRate: 32000, channels: 1)
        try emulator.runVirtualSpeaker(hook, userEvents: hook, streams: [
            (.mixed, ArrayPCMSource(speechAt: format, seconds: 0.2)),
            (.oneWay(SDKUser(1)), ArrayPCMSource(speechAt: format, seconds: 0.2, seed: 2)),
            (.oneWay(SDKUser(2)), ArrayPCMSource(speechAt: format, seconds: 0.2, seed: 3)),
        ], leaves: [(milliseconds: 100, user: SDKUser(2))])
        XCTAssertEqual(recorder.samples(of: .mixed).count, 6400)
        XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(1))).count, 6400)
        XCTAssertEqual(recorder.samples(of: .oneWay(SDKUser(2))).count, 3200, "user 2 left after 100 ms")
        XCTAssertEqual(Set(hook.activeStreams), [.mixed, .oneWay(SDKUser(1))])
        XCTAssertEqual(emulator.clock.microseconds, 200_000)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testAnAdapterForwardsTheSDKsReferenceCountingThroughAView() throws {
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_accum", registry: processorRegistry(), mode: .asyncAudioDefault,
                                          retainInAsync: true, sink: recorder.sink)
        let counts = Collected<Int>()
        var pcm = (0..<480).map { Int16($0) }
        pcm.withUnsafeMutableBufferPointer { p in
            let data = AudioRawDataView(buffer: UnsafeMutableRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self),
                                        bufferLen: 960, sampleRate: 48000, channelNum: 1, timeStamp: 5,
                                        addRef: { counts.append(1); return true }, releaseRef: { counts.append(-1); return 0 })
            hook.onVirtualSpeakerSharedAudioReceived(data)
            hook.drain()
        }
        XCTAssertEqual(counts.all, [1, -1], "retained once in the callback, released once after processing")
        XCTAssertEqual(recorder.samples(of: .shared).count, 480)
        hook.close()
    }

    func testDroppingAnAsyncSpeakerWithoutCloseReleasesEverything() throws {
        weak var weakHook: VirtualSpeakerHook?
        let emulator = SDKSessionEmulator()
        do {
            let hook = try VirtualSpeakerHook(chain: "test_accum", registry: processorRegistry(), mode: .asyncAudioDefault,
                                              retainInAsync: true) { _, _ in }
            weakHook = hook
            let pcm = [Int16](repeating: 1, count: 480)
            for i in 0..<10 { deliverPCM(emulator, hook, .mixed, pcm[...], mono48, ms: UInt64(i * 10), memoryMode: .heap) }
        }
        XCTAssertTrue(waitUntil { weakHook == nil }, "the worker thread must not keep the hook alive")
        XCTAssertTrue(waitUntil { emulator.ledger.outstandingReferences == 0 })
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testAsyncQueueWrapsAndGrowsWithoutLosingOrReorderingAudio() throws {
        // Random callback sizes against a small ring, with the worker running concurrently:
        // exercises wrap-around, growth while the worker reads, and retained entries in between.
        let registry = processorRegistry()
        let stereo = AudioFormat(sampleRate: 48000, channels: 2)
        let signal = TestAudio.interleave(TestAudio.speech(sampleRate: 48000, seconds: 2, seed: 21), channels: 2)
        var rng = SeededRandom(seed: 99)
        var cuts: [Int] = []
        var total = 0
        while total < signal.count / 2 {
            let n = min(Int(rng.next() % 960) + 1, signal.count / 2 - total)
            cuts.append(n)
            total += n
        }
        let recorder = SinkRecorder()
        let hook = try VirtualSpeakerHook(chain: "test_gate_audio=delay_ms=0,test_accum", registry: registry,
                                          mode: .async(capacity: 15), retainInAsync: true, sink: recorder.sink)
        let emulator = SDKSessionEmulator()
        var offset = 0
        for (i, n) in cuts.enumerated() {
            deliverPCM(emulator, hook, .mixed, signal[(offset * 2)..<((offset + n) * 2)], stereo, ms: UInt64(offset / 48),
                       memoryMode: i % 3 == 0 ? .heap : .stack)
            offset += n
            if i % 7 == 0 { usleep(200) }
        }
        hook.drain()
        let reference = try separateChainOutput("test_accum", registry: registry, signal: signal, format: stereo, chunk: 480)
        XCTAssertEqual(recorder.samples(of: .mixed), reference)
        XCTAssertEqual(hook.metrics.hook.drops, 0)
        XCTAssertEqual(emulator.ledger.outstandingReferences, 0)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        hook.close()
    }
}

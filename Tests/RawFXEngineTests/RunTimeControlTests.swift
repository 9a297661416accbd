import CSpeexDSP
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Run-time parameters, bypass, rebuilds and the 1.1 host object, through real chains.
/// References: SpeexDSP called directly (denoise), a freshly built chain (RECONFIGURE), and
/// the probe fixture's own report of what the host told it (Fixtures/host_plugin.c).
final class RunTimeControlTests: XCTestCase {
    var registry: PluginRegistry { hostProbePlugins }

    /// Runs `body` on another thread and waits: a control call that happens-before the next
    /// frame, as an app's UI thread would make it.
    func onAnotherThread(_ body: @escaping @Sendable () throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: Error?
        Thread.detachNewThread {
            do { try body() } catch { failure = error }
            done.signal()
        }
        done.wait()
        if let failure { throw failure }
    }

    // MARK: - denoise: a level change keeps the stream's state

    /// 3 s of noisy speech at 48 kHz in 10 ms blocks.
    func noisySpeech(rate: Int = 48000, seconds: Double = 3) -> [Int16] {
        TestAudio.addNoise(to: TestAudio.speech(sampleRate: rate, seconds: seconds, seed: 3, peak: 0.3), snr: 5, seed: 9)
    }

    /// SpeexDSP directly: one state, its level changed before block `changeAt` (nil: never).
    func speexReference(_ input: [Int16], rate: Int, level: Int32, newLevel: Int32, changeAt: Int?) -> [Int16] {
        let block = rate / 100
        let state = speex_preprocess_state_init(Int32(block), Int32(rate))!
        defer { speex_preprocess_state_destroy(state) }
        var value = level
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &value)
        var output = input
        for b in 0..<(input.count / block) {
            if b == changeAt {
                value = newLevel
                speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &value)
            }
            output.withUnsafeMutableBufferPointer { _ = speex_preprocess_run(state, $0.baseAddress! + b * block) }
        }
        return output
    }

    func run(_ chain: AudioChain, _ input: [Int16], rate: Int, before: (Int) throws -> Void) throws -> [Int16] {
        let block = rate / 100
        var output: [Int16] = []
        var samples = input
        for b in 0..<(input.count / block) {
            try before(b)
            try samples.withUnsafeMutableBufferPointer { buffer in
                try chain.process(AudioBlock(samples: buffer.baseAddress! + b * block, frameCount: block,
                                             format: AudioFormat(sampleRate: rate, channels: 1),
                                             timestampMicroseconds: Int64(b) * 10_000)) { out in
                    output.append(contentsOf: out.buffer)
                }
            }
        }
        return output
    }

    func testDenoiseLevelChangedMidStreamIsBitExactWithOneInstanceChangedAtThatBlock() throws {
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("libRawFXSpeex.so not built") }
        let input = noisySpeech()
        let chain = try AudioChain("denoise=level=-30", registry: builtPlugins)
        let changeAt = 150
        let output = try run(chain, input, rate: 48000) { b in
            if b == changeAt { try self.onAnotherThread { [control = chain.control] in try control.setParameter("denoise.level", "-10") } }
        }
        let reference = speexReference(input, rate: 48000, level: -30, newLevel: -10, changeAt: changeAt)
        XCTAssertEqual(output.count, reference.count)
        XCTAssertTrue(output == reference, "bit-exact with one SpeexDSP state whose level changed at block \(changeAt)")

        // Not what a rebuild would give: a fresh state at -10 dB from that block on.
        let fresh = speexReference(Array(input[(changeAt * 480)...]), rate: 48000, level: -10, newLevel: -10, changeAt: nil)
        XCTAssertNotEqual(Array(output[(changeAt * 480)...]), fresh, "a rebuilt instance would have lost the noise estimate")
        // And the change did take effect: the output after it differs from never changing.
        let unchanged = speexReference(input, rate: 48000, level: -30, newLevel: -30, changeAt: nil)
        XCTAssertEqual(Array(output[..<(changeAt * 480)]), Array(unchanged[..<(changeAt * 480)]))
        XCTAssertNotEqual(Array(output[(changeAt * 480)...]), Array(unchanged[(changeAt * 480)...]))
    }

    func testBypassMidStreamPassesTheInputDelayedAndResumesSeamlessly() throws {
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("libRawFXSpeex.so not built") }
        let input = noisySpeech(seconds: 1)
        let chain = try AudioChain("denoise", registry: builtPlugins)
        let output = try run(chain, input, rate: 48000) { b in
            if b == 30 { try chain.control.setBypass("denoise", true) }
            if b == 60 { try chain.control.setBypass("0", false) }
        }
        let reference = speexReference(input, rate: 48000, level: -30, newLevel: -30, changeAt: nil)
        let block = 480
        for b in 0..<100 {
            let got = Array(output[(b * block)..<((b + 1) * block)])
            if (30..<60).contains(b) {
                // Bypassed: the input, delayed by the filter's latency (one block), so the
                // stream's timing does not jump.
                XCTAssertEqual(got, Array(input[((b - 1) * block)..<(b * block)]), "block \(b)")
            } else {
                // Outside: exactly the uninterrupted filter (it kept running while bypassed).
                XCTAssertEqual(got, Array(reference[(b * block)..<((b + 1) * block)]), "block \(b)")
            }
        }
        XCTAssertEqual(chain.control.metrics[0].bypassed, 30)
        XCTAssertEqual(chain.control.metrics[0].frames, 70)
    }

    func testAudioTimestampsStayWithTheContent() throws {
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("libRawFXSpeex.so not built") }
        let chain = try AudioChain("denoise", registry: builtPlugins)
        var samples = [Int16](repeating: 0, count: 480)
        var stamps: [Int64] = []
        for b in 0..<3 {
            try samples.withUnsafeMutableBufferPointer { buffer in
                try chain.process(AudioBlock(samples: buffer.baseAddress!, frameCount: 480,
                                             format: AudioFormat(sampleRate: 48000, channels: 1),
                                             timestampMicroseconds: 1_000_000 + Int64(b) * 10_000)) { stamps.append($0.timestampMicroseconds) }
            }
        }
        XCTAssertEqual(chain.latency, 480)
        // Each block holds the previous block's content, and says so.
        XCTAssertEqual(stamps, [990_000, 1_000_000, 1_010_000])
    }

    func testFlushKeepsTheStreamsSourceAndUser() throws {
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("libRawFXSpeex.so not built") }
        let chain = try AudioChain("denoise", registry: builtPlugins)
        var samples = [Int16](repeating: 100, count: 100)
        try samples.withUnsafeMutableBufferPointer { buffer in
            try chain.process(AudioBlock(samples: buffer.baseAddress!, frameCount: 100, format: AudioFormat(sampleRate: 48000, channels: 1),
                                         source: rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY), userID: 42)) { _ in XCTFail("no whole block yet") }
        }
        var flushed: [AudioBlock] = []
        try chain.flush { flushed.append($0) }
        XCTAssertEqual(flushed.count, 1)
        XCTAssertEqual(flushed.first?.raw.source, rawfx_audio_source(RAWFX_AUDIO_SOURCE_ONE_WAY))
        XCTAssertEqual(flushed.first?.raw.user_id, 42)
    }

    func testParameterErrorsNameWhatIsWrong() throws {
        let chain = try VideoChain("hostprobe,hostprobe", registry: registry)
        XCTAssertThrowsChainError(try chain.control.setParameter("hostprobe.mark", "1")) {
            XCTAssertTrue($0.description.contains("appears 2 times"), $0.description)
        }
        XCTAssertThrowsChainError(try chain.control.setParameter("1.mark", "300")) {
            XCTAssertEqual($0.description, "hostprobe: invalid value '300' for mark: expected an integer from 0 to 255")
        }
        XCTAssertThrowsChainError(try chain.control.setParameter("2.mark", "1")) {
            XCTAssertTrue($0.description.contains("stage 2 does not exist"), $0.description)
        }
        XCTAssertThrowsChainError(try chain.control.setParameter("0.nope", "1")) {
            XCTAssertTrue($0.description.contains("unknown parameter 'nope'"), $0.description)
        }
        XCTAssertThrowsChainError(try chain.control.setParameter("mark", "1")) {
            XCTAssertTrue($0.description.contains("FILTER.PARAMETER"), $0.description)
        }
    }

    func testApplyingRunTimeChangesAllocatesNothingOnTheProcessingThread() throws {
        guard rawfx_allocation_counter_active() == 1 else { throw XCTSkip("the allocation counter is not interposed") }
        guard (try? builtPlugins.filterType("denoise")) != nil else { throw XCTSkip("libRawFXSpeex.so not built") }
        let audio = try AudioChain("denoise,gain", registry: builtPlugins)
        let video = try VideoChain("hostprobe", registry: registry)
        let buffer = patternBuffer(width: 32, height: 16)
        let samples = UnsafeMutablePointer<Int16>.allocate(capacity: 480)
        defer { samples.deallocate() }
        samples.initialize(repeating: 100, count: 480)
        let block = AudioBlock(samples: samples, frameCount: 480, format: AudioFormat(sampleRate: 48000, channels: 1))
        for _ in 0..<3 {
            _ = try video.process(buffer.frame)
            try audio.process(block) { _ in }
        }
        var allocations: UInt64 = 0
        for i in 0..<100 {
            // Control side (allocates, not counted here: only the process calls are measured).
            try audio.control.setParameter("denoise.level", String(-10 - i % 40))
            try audio.control.setParameter("gain.db", String(i % 6))
            try audio.control.setBypass("gain", i % 2 == 0)
            try video.control.setParameter("hostprobe.mark", String(i))
            let before = rawfx_thread_allocation_count()
            _ = try video.process(buffer.frame)
            try audio.process(block) { _ in }
            allocations += rawfx_thread_allocation_count() - before
        }
        XCTAssertEqual(allocations, 0)
        XCTAssertEqual(try video.process(buffer.frame).plane(0)[0], 99)
    }

    // MARK: - Video: the host object, parameters, RECONFIGURE, bypass

    func testHostTellsTheProcessThreadAndRunsSliceJobsOnThePool() throws {
        let previous = RawFXThreadPool.threadCount
        RawFXThreadPool.threadCount = 2
        defer { RawFXThreadPool.threadCount = previous }
        let chain = try VideoChain("hostprobe=slices=8", registry: registry)
        let buffer = patternBuffer(width: 64, height: 33, extraStride: 7)
        let before = planeBytes(buffer.frame, 0)
        let out = try chain.process(buffer.frame)
        let luma = planeBytes(out, 0)
        XCTAssertEqual(out.plane(0)[2], 1, "is_process_thread inside process")
        XCTAssertEqual(out.plane(0)[4], 1, "an in-place filter gets out == in (the same pointer)")
        XCTAssertEqual(out.plane(0)[3], 8, "every slice job ran as the process thread")
        XCTAssertEqual(Array(luma[64...]), before[64...].map { $0 &+ 1 }, "each row from 1 on was touched exactly once")
        XCTAssertEqual(Set(paddingBytes(out, 0)), [0xEE])
    }

    func testParameterSetFromAnotherThreadAppliesAtTheNextFrame() throws {
        let chain = try VideoChain("hostprobe=mark=5", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        XCTAssertEqual(try chain.process(buffer.frame).plane(0)[0], 5)
        let first = ObjectIdentifier(chain.filters[0])
        try onAnotherThread { [control = chain.control] in try control.setParameter("hostprobe.mark", "77") }
        XCTAssertEqual(try chain.process(buffer.frame).plane(0)[0], 77)
        XCTAssertEqual(ObjectIdentifier(chain.filters[0]), first, "no rebuild for a real-time parameter")
    }

    func testReconfigureParameterSwapsInAPreparedInstanceKeepingOtherValues() throws {
        let chain = try VideoChain("hostprobe=mark=9", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        _ = try chain.process(buffer.frame)
        try chain.control.setParameter("hostprobe.mark", "42")
        try onAnotherThread { [control = chain.control] in try control.setParameter("hostprobe.generation", "3") }
        let out = try chain.process(buffer.frame)
        XCTAssertEqual(out.plane(0)[1], 3, "the new instance has the new value")
        XCTAssertEqual(out.plane(0)[0], 42, "and every value set before, run-time ones included")
        XCTAssertEqual(chain.control.metrics[0].frames, 2, "metrics survive the swap")
    }

    /// Metrics read on another thread while RECONFIGURE parameters swap instances on the
    /// processing thread: the reader must not touch the stage's instance field (a data race
    /// ThreadSanitizer reports; CI runs this suite under it).
    func testMetricsReadDuringInstanceSwapsDoNotRace() throws {
        let chain = try VideoChain("hostprobe=mark=9", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        _ = try chain.process(buffer.frame)
        // The reader runs for as long as the swaps do, asserting nothing inside (an assertion
        // takes XCTest's locks, which would order the two threads).
        let stop = Locked(false), done = DispatchSemaphore(value: 0)
        let names = Locked<[String]>([])
        let reader = Thread { [control = chain.control] in
            var seen: [String] = []
            while !stop.withLock({ $0 }) { seen.append(control.metrics.first?.name ?? "") }
            names.withLock { $0 = seen }
            done.signal()
        }
        reader.start()
        for generation in 0..<200 {
            try chain.control.setParameter("hostprobe.generation", "\(generation % 100)")
            _ = try chain.process(buffer.frame)
        }
        stop.withLock { $0 = true }
        done.wait()
        XCTAssert(names.withLock { $0.allSatisfy { $0 == "hostprobe" } })
        XCTAssertEqual(chain.control.metrics[0].frames, 201, "every frame counted across 200 swaps")
    }

    /// The split of issue #24: one thread owns the chain (the process handle, not `Sendable`:
    /// the compiler refuses to capture it in these threads' closures) and processes, while
    /// several threads use only its `control` at once: real-time parameters, RECONFIGURE
    /// parameters (instances prepared on those threads and swapped in between frames),
    /// bypasses and metrics. Each setting has one writer, so once the writers are joined the
    /// next frame shows each one's last value; every frame is counted once.
    func testControlHandleFromManyThreadsWhileOneThreadProcesses() throws {
        let chain = try VideoChain("hostprobe=mark=9", registry: registry)
        let control = chain.control
        let buffer = patternBuffer(width: 16, height: 8)
        _ = try chain.process(buffer.frame)
        let finished = Locked(0), failures = Locked<[String]>([])
        let rounds = 150
        func controlThread(_ name: String, _ body: @escaping @Sendable (Int) throws -> Void) -> Thread {
            Thread {
                for round in 0..<rounds {
                    do { try body(round) } catch { failures.withLock { $0.append("\(name): \(error)") } }
                }
                finished.withLock { $0 += 1 }
            }
        }
        let threads = [
            controlThread("mark") { try control.setParameter("hostprobe.mark", "\(10 + $0 % 100)") },
            controlThread("generation") { try control.setParameter("0.generation", "\($0 % 50)") },
            controlThread("bypass") { try control.setBypass("hostprobe", $0 % 2 == 0) },
            controlThread("metrics") { _ in
                guard control.metrics.first?.name == "hostprobe" else { throw ChainError.contract("metrics named another filter") }
            },
        ]
        for thread in threads { thread.start() }
        var processed = 1
        while finished.withLock({ $0 }) < threads.count {
            _ = try chain.process(buffer.frame)
            processed += 1
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let out = try chain.process(buffer.frame)
        processed += 1
        XCTAssertEqual(out.plane(0)[0], UInt8(10 + (rounds - 1) % 100), "the mark thread's last value")
        XCTAssertEqual(out.plane(0)[1], UInt8((rounds - 1) % 50), "the generation thread's last value, on a swapped-in instance")
        let metrics = control.metrics[0]
        XCTAssertEqual(metrics.frames + metrics.bypassed, UInt64(processed), "every frame counted once, run or bypassed")
    }

    /// `metrics` is one snapshot of the chain: every stage's counts from between the same two
    /// frames, even while another thread processes. Each stage records its frame after the one
    /// before it, so a reader that took the stages' counters one by one would see a later
    /// stage a frame behind an earlier one.
    func testMetricsAreOneSnapshotOfEveryStage() throws {
        let chain = try VideoChain("hostprobe,hostprobe,hostprobe,hostprobe", registry: registry)
        let buffer = patternBuffer(width: 320, height: 180)
        // Each frame is copied in first, as a stream's next frame arrives: the gap between
        // two frames in which a reader can take its snapshot.
        let source = patternBuffer(width: 320, height: 180)
        let total: UInt64 = 2_000
        let stop = Locked(false), done = DispatchSemaphore(value: 0)
        let seen = Locked<[[UInt64]]>([])
        let control = chain.control
        let reader = Thread {
            var snapshots: [[UInt64]] = []
            while !stop.withLock({ $0 }) { snapshots.append(control.metrics.map(\.frames)) }
            seen.withLock { $0 = snapshots }
            done.signal()
        }
        reader.start()
        for _ in 0..<total {
            source.frame.copy(to: buffer.frame)
            _ = try chain.process(buffer.frame)
        }
        stop.withLock { $0 = true }
        done.wait()
        let snapshots = seen.withLock { $0 }
        let torn = snapshots.filter { Set($0).count != 1 }
        XCTAssertEqual(torn.count, 0, "snapshots with stages at different frames, e.g. \(torn.prefix(3))")
        let midStream = snapshots.filter { $0[0] > 0 && $0[0] < total }.count
        XCTAssertGreaterThan(midStream, 0, "no snapshot was taken while frames flowed: the check above saw nothing")
        XCTAssertEqual(zip(snapshots, snapshots.dropFirst()).filter { $0.0[0] > $0.1[0] }.count, 0, "counts only grow")
        XCTAssertEqual(control.metrics.map(\.frames), Array(repeating: total, count: 4))
    }

    func testScaleSizeChangedMidStreamRebuildsDownstreamAndMatchesAFreshChain() throws {
        guard (try? builtPlugins.filterType("scale")) != nil else { throw XCTSkip("libRawFXYUV.so not built") }
        let chain = try VideoChain("scale=width=64:height=36,rotate=angle=90", registry: builtPlugins)
        let buffer = patternBuffer(width: 128, height: 72)
        XCTAssertEqual(try chain.process(buffer.frame).format, VideoFormat(width: 36, height: 64))
        try onAnotherThread { [control = chain.control] in try control.setParameter("scale.width", "96") }
        let out = try chain.process(buffer.frame)
        let fresh = try VideoChain("scale=width=96:height=36,rotate=angle=90", registry: builtPlugins)
        let expected = try fresh.process(buffer.frame)
        XCTAssertEqual(out.format, VideoFormat(width: 36, height: 96))
        XCTAssertEqual(chain.outputFormat, out.format)
        for p in 0..<3 { XCTAssertEqual(planeBytes(out, p), planeBytes(expected, p), "plane \(p)") }
    }

    func testVideoBypassSkipsTheFilterAndRefusesFormatChangesAndDelays() throws {
        let chain = try VideoChain("hostprobe=mark=200,vdelay", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        let before = planeBytes(buffer.frame, 0)
        _ = try chain.process(buffer.frame)
        try chain.control.setBypass("hostprobe", true)
        let input = patternBuffer(width: 16, height: 8)
        _ = try chain.process(input.frame)
        XCTAssertEqual(planeBytes(input.frame, 0), before, "a bypassed in-place filter leaves the frame alone")
        XCTAssertEqual(chain.control.metrics[0].bypassed, 1)
        XCTAssertThrowsChainError(try chain.control.setBypass("vdelay", true)) {
            XCTAssertEqual($0.description, "cannot bypass vdelay: it delays video by 1 frame")
        }
        guard (try? builtPlugins.filterType("scale")) != nil else { return }
        let scaler = try VideoChain("scale=width=32:height=18", registry: builtPlugins)
        try scaler.negotiate(VideoFormat(width: 64, height: 36))
        XCTAssertThrowsChainError(try scaler.control.setBypass("scale", true)) {
            XCTAssertTrue($0.description.hasPrefix("cannot bypass scale: it turns 64x36"), $0.description)
        }
        // Bypassed before the formats were known: refused with the same words when they are,
        // and no frame passes at the input's size (it used to, the output keeping 64x36).
        let early = try VideoChain("scale=width=32:height=18", registry: builtPlugins)
        try early.control.setBypass("scale", true)
        let frame = patternBuffer(width: 64, height: 36)
        XCTAssertThrowsChainError(try early.process(frame.frame)) {
            XCTAssertTrue($0.description.hasPrefix("cannot bypass scale: it turns 64x36"), $0.description)
        }
        try early.control.setBypass("scale", false)
        XCTAssertEqual(try early.process(frame.frame).width, 32, "re-enabled: the chain negotiates and scales")
        // Audio alike: a resampler bypassed early.
        let resampler = try AudioChain("resample=rate=16000", registry: builtPlugins)
        try resampler.control.setBypass("resample", true)
        XCTAssertThrowsChainError(try resampler.negotiate(AudioFormat(sampleRate: 48000, channels: 1))) {
            XCTAssertTrue($0.description.hasPrefix("cannot bypass resample: it turns"), $0.description)
        }
    }

    func testRequestReconfigureRebuildsTheStageOffTheProcessThread() throws {
        let chain = try VideoChain("hostprobe=mark=7:reconfigure_at=2", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        let first = ObjectIdentifier(chain.filters[0])
        _ = try chain.process(buffer.frame)
        _ = try chain.process(buffer.frame)  // asks here
        var rebuilt = false
        for _ in 0..<200 where !rebuilt {
            RawFXLog.sync()
            usleep(5_000)
            _ = try chain.process(buffer.frame)
            rebuilt = ObjectIdentifier(chain.filters[0]) != first
        }
        XCTAssertTrue(rebuilt, "a new instance was swapped in")
        XCTAssertEqual(try chain.process(buffer.frame).plane(0)[0], 7, "with the same parameters")
    }

    func testPluginLogLinesReachTheHandlerWithTheFilterName() throws {
        let received = LockedRecords()
        RawFXLog.setHandler { received.append($0) }
        defer { RawFXLog.setHandler(nil) }
        let chain = try VideoChain("hostprobe=log_at=2", registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        RawFXLog.sync()
        XCTAssertEqual(received.records, [RawFXLog.Record(severity: .warning, source: "hostprobe", message: "frame 2", origin: .instance)])
    }

    func testVideoLatencyTimestampsAndDrain() throws {
        let chain = try VideoChain("vdelay=frames=2", registry: registry)
        let inputs = (0..<5).map { patternBuffer(width: 16, height: 8, seed: $0) }
        var outputs: [([UInt8], Int64)] = []
        for (i, input) in inputs.enumerated() {
            var frame = input.frame
            frame.timestampMicroseconds = Int64(i) * 33_333
            let out = try chain.process(frame)
            outputs.append((planeBytes(out, 0), out.timestampMicroseconds))
        }
        XCTAssertEqual(chain.latency, 2)
        try chain.drain(repeating: inputs[4].frame) { outputs.append((planeBytes($0, 0), $0.timestampMicroseconds)) }
        // Dropping the first `latency` outputs lines the stream up with its input.
        let aligned = Array(outputs.dropFirst(2))
        XCTAssertEqual(aligned.count, 5)
        for i in 0..<5 {
            XCTAssertEqual(aligned[i].0, planeBytes(inputs[i].frame, 0), "frame \(i)")
            XCTAssertEqual(aligned[i].1, Int64(i) * 33_333, "frame \(i) keeps its timestamp")
        }
    }
}

final class LockedRecords: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [RawFXLog.Record] = []
    func append(_ record: RawFXLog.Record) { lock.lock(); storage.append(record); lock.unlock() }
    var records: [RawFXLog.Record] { lock.lock(); defer { lock.unlock() }; return storage }
}

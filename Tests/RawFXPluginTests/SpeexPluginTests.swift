import CRawFX
import CSpeexDSP
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// `denoise` and `resample` (Plugins/Speex, libRawFXSpeex.so) loaded through the engine's
/// loader and run through AudioChain, checked against SpeexDSP called directly. Speech-like
/// signals come from RawFXMedia's TestAudio (harmonic series, pitch glide, 3–5 Hz syllables,
/// pauses).
final class SpeexPluginTests: XCTestCase {
    var registry: PluginRegistry!

    override func setUpWithError() throws {
        registry = PluginRegistry(environment: [:])
        guard (try? registry.filterType("denoise")) != nil, (try? registry.filterType("resample")) != nil else {
            throw XCTSkip("libRawFXSpeex.so was not built next to the tests (failures: \(registry.failures))")
        }
    }

    // MARK: Descriptors

    func testDescriptorsDescribeEveryParameter() throws {
        let denoise = try registry.filterType("denoise")
        XCTAssertEqual(denoise.mediaKind, .audio)
        XCTAssertEqual(denoise.processing, .inPlace)
        XCTAssertEqual(denoise.parameters.map(\.id), ["level", "agc", "agc_level", "vad", "vad_start", "vad_continue", "dereverb"])
        let resample = try registry.filterType("resample")
        XCTAssertEqual(resample.processing, .outOfPlace)
        XCTAssertEqual(resample.parameters.map(\.id), ["rate", "quality", "channels"])
        XCTAssertEqual(denoise.library.name, "rawfx-speex")
    }

    // MARK: denoise is SpeexDSP, bit for bit

    func testDenoiseMonoIsBitEqualToSpeexDSP() throws {
        try checkDenoiseBitEqual(rate: 48000, channels: 1, chain: "denoise=level=-30", level: -30)
        try checkDenoiseBitEqual(rate: 16000, channels: 1, chain: "denoise=level=-45:agc=true:agc_level=6000",
                                 level: -45, agcLevel: 6000)
    }

    func testDenoiseStereoIsOneSpeexStatePerChannel() throws {
        try checkDenoiseBitEqual(rate: 48000, channels: 2, chain: "denoise=level=-30:vad=true", level: -30, vad: true)
        try checkDenoiseBitEqual(rate: 32000, channels: 3, chain: "denoise=vad=true:vad_start=60:vad_continue=40",
                                 level: -30, vad: true, vadThresholds: (60, 40))
        try checkDenoiseBitEqual(rate: 44100, channels: 2, chain: "denoise=level=-20", level: -20)
    }

    /// Runs 2 s of speech-like signal plus noise (a different mix per channel) through the chain
    /// in 10 ms blocks and through SpeexDSP directly, one state per channel; the samples must match.
    private func checkDenoiseBitEqual(rate: Int, channels: Int, chain text: String, level: Int32,
                                      agcLevel: Float? = nil, vad: Bool = false,
                                      vadThresholds: (start: Int32, continue: Int32) = (70, 50)) throws {
        let block = rate / 100
        let frames = block * 200
        var input = [Int16](repeating: 0, count: frames * channels)
        for c in 0..<channels {
            let speech = TestAudio.speech(sampleRate: rate, seconds: 2, seed: UInt64(1 + c), peak: 0.3)
            let noisy = TestAudio.addNoise(to: speech, snr: 10 - 3 * Double(c), seed: UInt64(7 + c))
            for i in 0..<frames { input[i * channels + c] = noisy[i] }
        }

        let chain = try AudioChain(text, registry: registry)
        let format = AudioFormat(sampleRate: rate, channels: channels)
        XCTAssertEqual(try chain.negotiate(format), format)
        let negotiation = try XCTUnwrap(chain.filters[0].negotiation)
        XCTAssertEqual(negotiation.blockFrames, block)
        XCTAssertEqual(negotiation.latency, block, "speex_preprocess_run delays by one block")

        let (output, flags) = try runChain(chain, input: input, format: format, chunks: [block])

        let reference = SpeexReference(rate: rate, channels: channels, level: level, agcLevel: agcLevel, vad: vad,
                                       vadThresholds: vadThresholds)
        let (expected, voice) = reference.run(input)
        let expectedFlags = voice.map { vad && $0 }

        assertSamplesEqual(output, expected, "\(text) at \(rate) Hz x\(channels)")
        XCTAssertEqual(flags, expectedFlags, "VOICE flags are SpeexDSP's return values")
    }

    // MARK: denoise does its job

    func testDenoiseImprovesSNRBy6dB() throws {
        for rate in [48000, 32000] {
            let m = try measureSNR(rate: rate, level: -30)
            print(String(format: "SpeexPluginTests SNR %d Hz mono, 5 dB white noise, level -30: input %.2f dB, output %.2f dB, improvement %.2f dB",
                         rate, m.input, m.output, m.output - m.input))
            XCTAssertEqual(m.input, 5, accuracy: 0.5, "the test signal is built at 5 dB SNR")
            XCTAssertGreaterThanOrEqual(m.output - m.input, 6, "denoise at \(rate) Hz")
        }
    }

    /// SNR of clean speech against (signal − clean), before and after denoise, the output aligned
    /// by the latency denoise reports, after a 1 s warm-up. Strict: speech distortion counts as
    /// noise too.
    private func measureSNR(rate: Int, level: Int) throws -> (input: Double, output: Double) {
        let clean = TestAudio.speech(sampleRate: rate, seconds: 12, seed: 1, peak: 0.25)
        let noisy = TestAudio.addNoise(to: clean, snr: 5, seed: 2)
        let chain = try AudioChain("denoise=level=\(level)", registry: registry)
        let format = AudioFormat(sampleRate: rate, channels: 1)
        try chain.negotiate(format)
        let latency = try XCTUnwrap(chain.filters[0].negotiation).latency
        XCTAssertEqual(latency, rate / 100)
        let (output, _) = try runChain(chain, input: noisy, format: format, chunks: [rate / 100])
        let warmUp = rate  // 1 s
        let reference = Array(clean[warmUp...])
        return (TestAudio.snr(reference: reference, processed: Array(noisy[warmUp...])),
                TestAudio.snr(reference: reference, processed: Array(output[warmUp...]), lag: latency))
    }

    func testVoiceFlagsFollowSpeech() throws {
        let rate = 48000, block = 480
        let clean = TestAudio.speech(sampleRate: rate, seconds: 12, seed: 1, peak: 0.25)
        let noisy = TestAudio.addNoise(to: clean, snr: 5, seed: 2)
        let frames = clean.count
        let chain = try AudioChain("denoise=vad=true", registry: registry)
        let (_, flags) = try runChain(chain, input: noisy, format: AudioFormat(sampleRate: rate, channels: 1), chunks: [block])
        XCTAssertEqual(flags.count, frames / block)

        // The flag of the block returned by call b comes from SpeexDSP's analysis window, which
        // covers input blocks b−1 and b: voiced when speech fills both, silent when neither has any.
        var voiced = 0, voicedFlagged = 0, silent = 0, silentFlagged = 0
        for b in 100..<flags.count {
            var minimum = Double.infinity, maximum = 0.0
            for j in (b - 1)..<(b + 1) {
                var e = 0.0
                for i in (j * block)..<((j + 1) * block) { e += Double(clean[i]) * Double(clean[i]) }
                minimum = min(minimum, e / Double(block))
                maximum = max(maximum, e / Double(block))
            }
            if minimum > 1e5 {
                voiced += 1
                if flags[b] { voicedFlagged += 1 }
            } else if maximum == 0 {
                silent += 1
                if flags[b] { silentFlagged += 1 }
            }
        }
        let voicedRate = Double(voicedFlagged) / Double(voiced), silentRate = Double(silentFlagged) / Double(silent)
        print(String(format: "SpeexPluginTests VAD 48 kHz, 5 dB SNR: flagged %d/%d voiced blocks (%.0f%%), %d/%d silent blocks (%.0f%%)",
                     voicedFlagged, voiced, 100 * voicedRate, silentFlagged, silent, 100 * silentRate))
        XCTAssertGreaterThan(voiced, 300)
        XCTAssertGreaterThan(silent, 150)
        XCTAssertGreaterThan(voicedRate, 0.9)
        XCTAssertGreaterThan(voicedRate, silentRate + 0.25, "voice flags must follow the speech")

        // The rawfx.voice-activity/1 extension (rawfx/ext/voice_activity.h) counts the same blocks.
        let pointer = try XCTUnwrap(chain.filters[0].extensionPointer(RAWFX_EXT_VOICE_ACTIVITY))
        let activity = pointer.assumingMemoryBound(to: rawfx_voice_activity_v1.self).pointee
        XCTAssertEqual(activity.struct_size, UInt32(MemoryLayout<rawfx_voice_activity_v1>.size))
        XCTAssertEqual(activity.vad_enabled, 1)
        XCTAssertEqual(activity.voice_blocks, UInt64(flags.filter { $0 }.count))
        XCTAssertEqual(activity.total_blocks, UInt64(flags.count))
        XCTAssertEqual(activity.last_block_voice, flags.last == true ? 1 : 0)
        XCTAssertLessThanOrEqual(activity.speech_probability, 100)
        XCTAssertNil(chain.filters[0].extensionPointer("rawfx.no-such-extension/1"))
    }

    func testDenoiseRefusesWhatSpeexCannotRun() throws {
        let chain = try AudioChain("denoise", registry: registry)
        XCTAssertThrowsChainError(try chain.negotiate(AudioFormat(sampleRate: 22050, channels: 1))) {
            guard case .refused("denoise", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(message.contains("22050") && message.contains("multiples of 100"), message)
        }
        XCTAssertThrowsChainError(try chain.negotiate(AudioFormat(sampleRate: 48000, channels: 9))) {
            guard case .refused("denoise", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(message.contains("1 to 8"), message)
        }
        XCTAssertThrowsChainError(try AudioChain("denoise=level=-70", registry: registry)) {
            guard case .invalidValue("denoise", "level", _, _) = $0 else { return XCTFail("\($0)") }
        }
    }

    // MARK: resample

    func testResampledSineKeepsFrequencyAndLevel() throws {
        for (from, to) in [(44100, 48000), (48000, 32000)] {
            let frames = from * 2
            let amplitude = 10000.0
            var input = [Int16](repeating: 0, count: frames)
            for i in 0..<frames { input[i] = Int16((amplitude * sin(2 * .pi * 1000 * Double(i) / Double(from))).rounded()) }
            let chain = try AudioChain("resample=rate=\(to)", registry: registry)
            XCTAssertEqual(try chain.negotiate(AudioFormat(sampleRate: from, channels: 1)), AudioFormat(sampleRate: to, channels: 1))
            let negotiation = try XCTUnwrap(chain.filters[0].negotiation)
            // SpeexDSP's delay (quality 10), made a whole number of frames (testResampleIsFlatAndHasNoFractionalDelay).
            XCTAssertEqual(Double(negotiation.latency), Double(speexOutputLatency(from: from, to: to, quality: 10)),
                           accuracy: Double(from / 100) * Double(to) / Double(from) + 1)
            let (output, _) = try runChain(chain, input: input, format: AudioFormat(sampleRate: from, channels: 1),
                                           chunks: [(from + 99) / 100])
            XCTAssertEqual(Double(output.count), Double(frames) * Double(to) / Double(from), accuracy: 2)

            let measured = Array(output[(to / 10)..<(output.count - to / 10)]).map(Double.init)
            let frequency = zeroCrossingFrequency(measured, rate: Double(to))
            let rms = (measured.reduce(0) { $0 + $1 * $1 } / Double(measured.count)).squareRoot()
            let levelError = 20 * log10(rms / (amplitude / 2.0.squareRoot()))
            print(String(format: "SpeexPluginTests resample %d->%d: %.4f Hz (%.5f%%), level %+.4f dB, latency %d frames",
                         from, to, frequency, 100 * (frequency - 1000) / 1000, levelError, negotiation.latency))
            XCTAssertEqual(frequency, 1000, accuracy: 1, "within 0.1 %")
            XCTAssertEqual(levelError, 0, accuracy: 0.5, "within 0.5 dB")
        }
    }

    func testResampleIsSpeexDSPAndMonoDownmixAverages() throws {
        let rate = 48000, frames = 48000
        let left = TestAudio.whiteNoise(count: frames, rms: 6000, seed: 3)
        let right = TestAudio.whiteNoise(count: frames, rms: 6000, seed: 4)
        var stereo = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            stereo[2 * i] = left[i]
            stereo[2 * i + 1] = right[i]
        }
        var downmix = [Int16](repeating: 0, count: frames)
        for i in 0..<frames {
            let sum = Int32(stereo[2 * i]) + Int32(stereo[2 * i + 1])
            downmix[i] = Int16((sum >= 0 ? sum + 1 : sum - 1) / 2)   // rounded, halves away from zero
        }
        let format = AudioFormat(sampleRate: rate, channels: 2)

        // Same rate: downmix only, exact.
        let same = try AudioChain("resample=rate=48000:channels=mono", registry: registry)
        XCTAssertEqual(try same.negotiate(format), AudioFormat(sampleRate: 48000, channels: 1))
        XCTAssertEqual(same.filters[0].negotiation?.latency, 0)
        XCTAssertEqual(try runChain(same, input: stereo, format: format, chunks: [480]).samples, downmix)

        // Same rate, keep: pass-through, exact.
        let keep = try AudioChain("resample=rate=48000", registry: registry)
        XCTAssertEqual(try runChain(keep, input: stereo, format: format, chunks: [480]).samples, stereo)

        // 48000 -> 32000 mono: SpeexDSP's resampler (quality 10) on the downmix, exact.
        let mono32 = try AudioChain("resample=rate=32000:channels=mono", registry: registry)
        XCTAssertEqual(try mono32.negotiate(format), AudioFormat(sampleRate: 32000, channels: 1))
        let got = try runChain(mono32, input: stereo, format: format, chunks: [480]).samples
        XCTAssertEqual(got, speexResample(downmix, channels: 1, from: 48000, to: 32000, quality: 10, block: 480))

        // 48000 -> 32000 stereo, quality 3: interleaved SpeexDSP, exact.
        let stereo32 = try AudioChain("resample=rate=32000:quality=3", registry: registry)
        let gotStereo = try runChain(stereo32, input: stereo, format: format, chunks: [480]).samples
        XCTAssertEqual(gotStereo, speexResample(stereo, channels: 2, from: 48000, to: 32000, quality: 3, block: 480))
    }

    /// The default resampler is flat within 0.1 dB up to 0.9 of the lower Nyquist frequency, and
    /// its output lags the input by exactly the latency it reports: a sine's gain and phase, fitted
    /// by least squares against the analytic sine at the output's sample times (quality 5 lost
    /// 1.85 dB at 7.2 kHz for 48k->16k, and its delay was 0.46 frames short of the reported one
    /// for 44.1k->48k).
    func testResampleIsFlatAndHasNoFractionalDelay() throws {
        for (from, to) in [(44100, 48000), (48000, 16000), (48000, 32000), (16000, 48000), (48000, 44100)] {
            let format = AudioFormat(sampleRate: from, channels: 1)
            func run(_ frequency: Double) throws -> (gain: Double, delay: Double, latency: Int) {
                let chain = try AudioChain("resample=rate=\(to)", registry: registry)
                _ = try chain.negotiate(format)
                let latency = Int(try XCTUnwrap(chain.filters[0].negotiation).latency)
                let amplitude = 10000.0
                let input = (0..<from).map { Int16((amplitude * sin(2 * .pi * frequency * Double($0) / Double(from))).rounded()) }
                let output = try runChain(chain, input: input, format: format, chunks: [from / 100]).samples
                // Fit a sin(wk) + b cos(wk) over the steady middle of the output.
                let w = 2 * Double.pi * frequency / Double(to)
                var ss = 0.0, cc = 0.0, sc = 0.0, ys = 0.0, yc = 0.0
                for k in (to / 10)..<(output.count - to / 10) {
                    let sk = sin(w * Double(k)), ck = cos(w * Double(k)), y = Double(output[k])
                    ss += sk * sk; cc += ck * ck; sc += sk * ck; ys += y * sk; yc += y * ck
                }
                let det = ss * cc - sc * sc
                let a = (ys * cc - yc * sc) / det, b = (yc * ss - ys * sc) / det
                // y = g sin(w (k - d)) = g cos(wd) sin(wk) - g sin(wd) cos(wk)
                let period = 2 * Double.pi / w
                var delay = atan2(-b, a) / w
                while delay - Double(latency) > period / 2 { delay -= period }
                while delay - Double(latency) <= -period / 2 { delay += period }
                return (20 * log10((a * a + b * b).squareRoot() / amplitude), delay, latency)
            }
            let edge = 0.9 * Double(min(from, to)) / 2
            let top = try run(edge)
            let low = try run(50)
            print(String(format: "SpeexPluginTests resample %d->%d: %+.3f dB at %.0f Hz; delay %.3f frames, latency %d",
                         from, to, top.gain, edge, low.delay, low.latency))
            XCTAssertEqual(top.gain, 0, accuracy: 0.1, "\(from)->\(to): gain at \(edge) Hz")
            XCTAssertEqual(low.delay, Double(low.latency), accuracy: 0.05, "\(from)->\(to): delay against the reported latency")
        }
    }

    // MARK: the chain

    func testOddChunksGiveTheSameOutputAs10msBlocks() throws {
        let rate = 48000, frames = rate * 3
        var stereo = [Int16](repeating: 0, count: frames * 2)
        let a = TestAudio.addNoise(to: TestAudio.speech(sampleRate: rate, seconds: 3, seed: 5, peak: 0.3), snr: 10, seed: 5)
        let b = TestAudio.addNoise(to: TestAudio.speech(sampleRate: rate, seconds: 3, seed: 6, peak: 0.3), snr: 3, seed: 6)
        for i in 0..<frames { stereo[2 * i] = a[i]; stereo[2 * i + 1] = b[i] }
        let text = "denoise=level=-30:vad=true,resample=rate=32000:channels=mono"
        let format = AudioFormat(sampleRate: rate, channels: 2)

        let reference = try runChain(try AudioChain(text, registry: registry), input: stereo, format: format, chunks: [480])
        let odd = try runChain(try AudioChain(text, registry: registry), input: stereo, format: format,
                               chunks: [1, 37, 441, 1000, 479, 2, 960, 13, 4801, 7])
        XCTAssertEqual(reference.samples.count, frames * 32000 / 48000, "every input frame came out, resampled")
        XCTAssertEqual(odd.samples, reference.samples)
        XCTAssertEqual(odd.flags, reference.flags)
        XCTAssertTrue(reference.flags.contains(true))
    }

    func testSteadyStateProcessingDoesNotAllocate() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1)
        let rate = 48000
        let noisy = TestAudio.addNoise(to: TestAudio.speech(sampleRate: rate, seconds: 1, seed: 9, peak: 0.3), snr: 5, seed: 9)
        var stereo = [Int16](repeating: 0, count: rate * 2)
        for i in 0..<rate { stereo[2 * i] = noisy[i]; stereo[2 * i + 1] = noisy[rate - 1 - i] }
        let chain = try AudioChain("denoise=vad=true:agc=true,resample=rate=32000:channels=mono", registry: registry)
        let format = AudioFormat(sampleRate: rate, channels: 2)
        try chain.negotiate(format)
        var emitted = 0
        try stereo.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // Warm up: the first blocks may size scratch buffers.
            try chain.process(AudioBlock(samples: base, frameCount: 480, format: format)) { _ in }
            let before = rawfx_thread_allocation_count()
            var offset = 480
            while offset + 480 <= rate {
                try chain.process(AudioBlock(samples: base + offset * 2, frameCount: 480, format: format)) { _ in emitted += 1 }
                offset += 480
            }
            XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "process must not allocate")
        }
        XCTAssertEqual(emitted, 99)
    }

    func testResetForgetsHistory() throws {
        let rate = 16000
        let noisy = TestAudio.addNoise(to: TestAudio.speech(sampleRate: rate, seconds: 2, seed: 13, peak: 0.3), snr: 5, seed: 13)
        let format = AudioFormat(sampleRate: rate, channels: 1)
        let chain = try AudioChain("denoise,resample=rate=48000", registry: registry)
        let first = try runChain(chain, input: noisy, format: format, chunks: [160]).samples
        chain.reset()
        let second = try runChain(chain, input: noisy, format: format, chunks: [160]).samples
        XCTAssertEqual(first, second, "after reset the chain behaves as new")
    }

    // MARK: Real time: reset and live parameters (called on the C functions directly)

    /// Stereo speech-like signal with noise, `blocks` 10 ms blocks at 48 kHz.
    private func noisyStereo(blocks: Int, seed: UInt64) -> [Int16] {
        let frames = blocks * 480
        let left = TestAudio.addNoise(to: TestAudio.speech(sampleRate: 48000, seconds: Double(frames) / 48000 + 0.1,
                                                           seed: seed, peak: 0.3), snr: 5, seed: seed)
        let right = TestAudio.addNoise(to: TestAudio.speech(sampleRate: 48000, seconds: Double(frames) / 48000 + 0.1,
                                                            seed: seed + 100, peak: 0.3), snr: 10, seed: seed + 100)
        var stereo = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames { stereo[2 * i] = left[i]; stereo[2 * i + 1] = right[i] }
        return stereo
    }

    /// Runs interleaved stereo 48 kHz audio through the instance in 10 ms blocks.
    private func runDirect(_ filter: DirectFilter, _ input: ArraySlice<Int16>) throws -> [Int16] {
        var output: [Int16] = []
        var offset = input.startIndex
        while offset < input.endIndex {
            var block = Array(input[offset..<(offset + 960)])
            try filter.process(&block, rate: 48000, channels: 2)
            output += block
            offset += 960
        }
        return output
    }

    private func allocations(_ body: () -> Void) -> UInt64 {
        let before = rawfx_thread_allocation_count()
        body()
        return rawfx_thread_allocation_count() - before
    }

    /// A level change between two blocks keeps the stream's state: bit-exact with one SpeexDSP
    /// state whose level changed at that block. Then reset allocates nothing and the output is
    /// bit-exact with fresh SpeexDSP states at the current settings; on_callback (run by the
    /// runtime's service thread) prepares the next spare, so a second reset is as good.
    func testLiveLevelChangeAndResetWithoutAllocating() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1)
        let plugin = try DirectPlugin.built("rawfx-speex")
        let denoise = try DirectFilter(plugin.descriptor("denoise"), host: .attached)
        try denoise.configure(.audio(rate: 48000, channels: 2))
        let a = noisyStereo(blocks: 100, seed: 21), b = noisyStereo(blocks: 60, seed: 22)

        var output = try runDirect(denoise, a[0..<(50 * 960)])
        XCTAssertEqual(allocations { XCTAssertEqual(denoise.set(0, int: -45), Int32(RAWFX_OK)) }, 0, "set_param level")
        output += try runDirect(denoise, a[(50 * 960)...])
        let changed = SpeexReference(rate: 48000, channels: 2, level: -30)
        var expected = changed.run(Array(a[0..<(50 * 960)])).samples
        changed.setLevel(-45)
        expected += changed.run(Array(a[(50 * 960)...])).samples
        assertSamplesEqual(output, expected, "a live level change is SpeexDSP's ctl between the same two blocks")

        let fresh = SpeexReference(rate: 48000, channels: 2, level: -45).run(b).samples
        XCTAssertEqual(allocations { denoise.reset() }, 0, "reset swaps in the spare states")
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "after reset: fresh SpeexDSP states")

        RawFXLog.sync()  // runs the on_callback that reset requested
        XCTAssertEqual(allocations { denoise.reset() }, 0, "on_callback prepared another spare")
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "fresh SpeexDSP states")
    }

    /// Without on_callback between two resets, the second re-creates the states on the calling
    /// thread (allocating), logs a warning through the host, and still forgets everything.
    func testResetBeforeOnCallbackFallsBackAndWarns() throws {
        let lines = LogCapture()
        defer { lines.stop() }
        let plugin = try DirectPlugin.built("rawfx-speex")
        // Unattached: the service thread cannot call on_callback; the test does, by hand.
        let denoise = try DirectFilter(plugin.descriptor("denoise"), host: .unattached, source: "denoise#fallback")
        try denoise.configure(.audio(rate: 48000, channels: 2))
        let a = noisyStereo(blocks: 30, seed: 31), b = noisyStereo(blocks: 30, seed: 32)
        let fresh = SpeexReference(rate: 48000, channels: 2, level: -30).run(b).samples

        _ = try runDirect(denoise, a[...])
        XCTAssertEqual(allocations { denoise.reset() }, 0)
        _ = try runDirect(denoise, a[...])
        XCTAssertGreaterThan(allocations { denoise.reset() }, 0, "no spare: re-created in place")
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "fresh SpeexDSP states")
        RawFXLog.sync()
        let warnings = lines.records.filter { $0.source == "denoise#fallback" }
        XCTAssertEqual(warnings.map(\.severity), [.warning])
        XCTAssertEqual(warnings.first?.message,
                       "reset came before the spare SpeexDSP states were ready (on_callback has not run since the "
                       + "last reset): re-created them on the calling thread, which allocates")

        denoise.onCallback()
        XCTAssertEqual(allocations { denoise.reset() }, 0, "on_callback replenished the spare")
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "fresh SpeexDSP states")
    }

    /// Resets in a tight loop while the service thread runs on_callback concurrently: whichever
    /// path each reset takes (spare or fallback), the blocks after it are those of fresh states.
    func testResetsRacingOnCallbackAlwaysForget() throws {
        let plugin = try DirectPlugin.built("rawfx-speex")
        let denoise = try DirectFilter(plugin.descriptor("denoise"), host: .attached)
        try denoise.configure(.audio(rate: 48000, channels: 2))
        let b = noisyStereo(blocks: 1, seed: 51)
        let fresh = SpeexReference(rate: 48000, channels: 2, level: -30).run(b).samples
        var allocationFree = 0
        let rounds = 300
        for round in 0..<rounds {
            assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "round \(round)")
            if allocations({ denoise.reset() }) == 0 { allocationFree += 1 }
        }
        print("SpeexPluginTests resets racing on_callback: \(allocationFree) of \(rounds) took the spare")
        XCTAssertGreaterThan(allocationFree, 0)
    }

    /// Through the 1.0 `create` (no host, so no on_callback ever): the spare made at configure
    /// serves the first reset; later ones fall back, still exact.
    func testResetWithoutHostUsesTheSpareFromConfigure() throws {
        let plugin = try DirectPlugin.built("rawfx-speex")
        let denoise = try DirectFilter(plugin.descriptor("denoise"), host: .none)
        try denoise.configure(.audio(rate: 48000, channels: 2))
        let a = noisyStereo(blocks: 30, seed: 41), b = noisyStereo(blocks: 30, seed: 42)
        let fresh = SpeexReference(rate: 48000, channels: 2, level: -30).run(b).samples
        _ = try runDirect(denoise, a[...])
        XCTAssertEqual(allocations { denoise.reset() }, 0)
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "fresh SpeexDSP states")
        XCTAssertGreaterThan(allocations { denoise.reset() }, 0)
        XCTAssertEqual(allocations { denoise.reset() }, 0, "nothing processed since the last reset: a no-op")
        assertSamplesEqual(try runDirect(denoise, b[...]), fresh, "fresh SpeexDSP states")
    }

    /// Every parameter without RECONFIGURE changes without allocating, on a configured instance
    /// (denoise with and without VAD); the others are marked RECONFIGURE.
    func testRealTimeParametersDoNotAllocate() throws {
        let plugin = try DirectPlugin.built("rawfx-speex")
        for vad in [false, true] {
            let denoise = try DirectFilter(plugin.descriptor("denoise"), host: .attached)
            XCTAssertEqual(denoise.set(3, int: vad ? 1 : 0), Int32(RAWFX_OK))
            try denoise.configure(.audio(rate: 48000, channels: 2))
            XCTAssertEqual(denoise.assertRealTimeCallsDoNotAllocate(),
                           ["level", "agc", "agc_level", "vad_start", "vad_continue", "dereverb"])
        }
        // resample: a new rate or channel count changes the output format, and SpeexDSP's
        // set_quality re-allocates its filter: all three wait for a configure.
        let resample = try DirectFilter(plugin.descriptor("resample"), host: .attached)
        try resample.configure(.audio(rate: 44100, channels: 2))
        XCTAssertEqual(resample.assertRealTimeCallsDoNotAllocate(), [])
    }

    // MARK: helpers

    /// Feeds `input` through the chain in chunks cycling through `chunks` (frames), returns every
    /// emitted sample and the VOICE flag of every emitted block.
    private func runChain(_ chain: AudioChain, input: [Int16], format: AudioFormat,
                          chunks: [Int]) throws -> (samples: [Int16], flags: [Bool]) {
        var samples: [Int16] = []
        var flags: [Bool] = []
        var copy = input
        let frames = input.count / format.channels
        try copy.withUnsafeMutableBufferPointer { buffer in
            var offset = 0, index = 0
            while offset < frames {
                let n = min(chunks[index % chunks.count], frames - offset)
                index += 1
                let block = AudioBlock(samples: buffer.baseAddress! + offset * format.channels, frameCount: n, format: format)
                try chain.process(block) { out in
                    samples.append(contentsOf: out.buffer)
                    flags.append(out.hasVoice)
                }
                offset += n
            }
        }
        return (samples, flags)
    }

    /// Frequency from rising zero crossings, each located by linear interpolation.
    private func zeroCrossingFrequency(_ x: [Double], rate: Double) -> Double {
        var first = -1.0, last = -1.0, cycles = 0
        for i in 1..<x.count where x[i - 1] < 0 && x[i] >= 0 {
            let position = Double(i - 1) + x[i - 1] / (x[i - 1] - x[i])
            if first < 0 { first = position } else { cycles += 1 }
            last = position
        }
        return Double(cycles) / ((last - first) / rate)
    }

    private func speexOutputLatency(from: Int, to: Int, quality: Int32) -> Int {
        var err: Int32 = 0
        guard let st = speex_resampler_init(1, UInt32(from), UInt32(to), quality, &err) else { return -1 }
        defer { speex_resampler_destroy(st) }
        return Int(speex_resampler_get_output_latency(st))
    }

    /// SpeexDSP's preprocessor called directly, one state per channel, set as denoise sets it.
    private final class SpeexReference {
        let channels: Int, block: Int
        private var states: [OpaquePointer] = []

        init(rate: Int, channels: Int, level: Int32, agcLevel: Float? = nil, vad: Bool = false,
             vadThresholds: (start: Int32, continue: Int32) = (70, 50)) {
            self.channels = channels
            block = rate / 100
            for _ in 0..<channels {
                let st = speex_preprocess_state_init(Int32(block), Int32(rate))!
                var lv = level
                speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &lv)
                if let agcLevel {
                    var on: Int32 = 1
                    var target = agcLevel
                    speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC_LEVEL, &target)
                    speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC, &on)
                }
                var start = vadThresholds.start, keep = vadThresholds.continue
                speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_START, &start)
                speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_CONTINUE, &keep)
                if vad {
                    var on: Int32 = 1
                    speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_VAD, &on)
                }
                states.append(st)
            }
        }

        deinit { states.forEach { speex_preprocess_state_destroy($0) } }

        func setLevel(_ level: Int32) {
            for st in states {
                var lv = level
                speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &lv)
            }
        }

        /// Runs whole 10 ms blocks of interleaved audio; returns the samples and, per block,
        /// whether speex_preprocess_run returned 1 for any channel.
        func run(_ input: [Int16]) -> (samples: [Int16], voice: [Bool]) {
            var output = input
            var voice: [Bool] = []
            var plane = [Int16](repeating: 0, count: block)
            for b in 0..<(input.count / channels / block) {
                var any = false
                for c in 0..<channels {
                    for i in 0..<block { plane[i] = output[(b * block + i) * channels + c] }
                    if speex_preprocess_run(states[c], &plane) == 1 { any = true }
                    for i in 0..<block { output[(b * block + i) * channels + c] = plane[i] }
                }
                voice.append(any)
            }
            return (output, voice)
        }
    }

    /// SpeexDSP's resampler called directly on the same blocks.
    private func speexResample(_ input: [Int16], channels: Int, from: Int, to: Int, quality: Int32, block: Int) -> [Int16] {
        var err: Int32 = 0
        let st = speex_resampler_init(UInt32(channels), UInt32(from), UInt32(to), quality, &err)!
        defer { speex_resampler_destroy(st) }
        var out: [Int16] = []
        var scratch = [Int16](repeating: 0, count: (block * to / from + 16) * channels)
        // The plugin's alignment: zeros that make the delay a whole number of output frames, whose
        // output it discards.
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let period = from / gcd(from, to), delay = Int(speex_resampler_get_input_latency(st))
        let zeros = (period - delay % period) % period
        if zeros > 0 && zeros <= from / 100 {
            var silence = [Int16](repeating: 0, count: zeros * channels)
            var inLength = UInt32(zeros), outLength = UInt32(scratch.count / channels)
            speex_resampler_process_interleaved_int(st, &silence, &inLength, &scratch, &outLength)
        }
        let frames = input.count / channels
        input.withUnsafeBufferPointer { source in
            var offset = 0
            while offset < frames {
                var inLength = UInt32(min(block, frames - offset))
                var outLength = UInt32(scratch.count / channels)
                speex_resampler_process_interleaved_int(st, source.baseAddress! + offset * channels, &inLength, &scratch, &outLength)
                out.append(contentsOf: scratch[0..<(Int(outLength) * channels)])
                offset += Int(inLength)
            }
        }
        return out
    }
}

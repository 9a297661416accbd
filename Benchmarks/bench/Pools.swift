// Input pools: distinct I420 frames and PCM signals the cases cycle through.
import RawFX
import RawFXSDK
import RawFXMedia

#if canImport(Glibc)
import Glibc
#endif

/// `count` distinct I420 frames of one size, 64-byte aligned (as the engine's own buffers),
/// cycled by index: frames 0..<count of RawFXMedia's moving test pattern. With the default
/// 24 frames the pool is larger than the L3 cache at 1080p (cold: each frame arrives from
/// DRAM, like a fresh camera frame); `--hot` uses one frame.
final class FramePool {
    let format: VideoFormat
    let buffers: [VideoBuffer]
    /// The frames, in memory that indexing cannot allocate in (debug builds included).
    let frames: UnsafeMutablePointer<VideoFrame>
    let count: Int

    init(width: Int, height: Int, count: Int) {
        format = VideoFormat(width: width, height: height)
        let pattern = TestPattern(format: format)
        var buffers: [VideoBuffer] = []
        for index in 0..<count {
            let buffer = VideoBuffer(format: format)
            pattern.render(frame: index * 7, into: buffer.frame)
            buffers.append(buffer)
        }
        self.buffers = buffers
        self.count = count
        frames = .allocate(capacity: count)
        for i in 0..<count { (frames + i).initialize(to: buffers[i].frame) }
    }

    deinit {
        frames.deinitialize(count: count)
        frames.deallocate()
    }

    @inline(__always) func frame(_ i: Int) -> VideoFrame { frames[i % count] }

    var totalBytes: Int { buffers.reduce(0) { $0 + $1.byteCount } }
}

/// Mono 16-bit PCM the audio cases cycle through: RawFXMedia's speech-like signal with white
/// noise at 15 dB SNR, so SpeexDSP's noise estimator and gains work as they would on a call.
final class AudioPool {
    let sampleRate: Int
    let frameCount: Int
    let samples: UnsafeMutablePointer<Int16>

    /// `seconds` of signal, rounded up to a whole multiple of `multiple` frames so that a
    /// fixed chunk cycle wraps exactly.
    init(sampleRate: Int, seconds: Double, multiple: Int) {
        self.sampleRate = sampleRate
        let wanted = Int(seconds * Double(sampleRate))
        frameCount = (wanted + multiple - 1) / multiple * multiple
        let speech = TestAudio.speech(sampleRate: sampleRate, seconds: Double(frameCount) / Double(sampleRate) + 0.01)
        let noisy = TestAudio.addNoise(to: Array(speech.prefix(frameCount)), snr: 15)
        samples = .allocate(capacity: frameCount)
        samples.initialize(repeating: 0, count: frameCount)
        samples.update(from: noisy, count: min(noisy.count, frameCount))
    }

    deinit { samples.deallocate() }
}

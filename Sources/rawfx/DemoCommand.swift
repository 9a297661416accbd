#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import RawFX
import RawFXSDK
import RawFXMedia

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline on generated input: video effects and speech denoising.",
        discussion: """
        Generates a moving test pattern (colour bars, a bouncing box, a binary frame counter) and \
        speech-like audio mixed with white noise, then runs
          video: watermark (the built-in RawFX logo) → scale to 720p → rotate by 90°
          audio: denoise
        and writes, in the output directory:
          out.y4m      the processed video          before.png  the middle frame in
          out.wav      the denoised audio           after.png   the same frame out
          clean.wav    the speech without noise     noisy.wav   the input of the audio chain
        It prints frames, fps, time per filter (p50/p99) and the audio SNR before and after.

        Examples:
          rawfx demo
          rawfx demo --output-dir /tmp/rawfx-demo --frames 300 --seconds 10
          rawfx demo --vf 'watermark=image=@logo:opacity=0.5,scale=width=640:height=360:mode=fit' --af 'denoise=level=-40'
          ffplay /tmp/rawfx-demo/out.y4m
        """)

    @Option(help: ArgumentHelp("Where to write the files (created if missing).", valueName: "dir"))
    var outputDir = "."

    @Option(help: "Video frames to generate.")
    var frames = 60

    @Option(help: "Seconds of audio to generate.")
    var seconds = 3.0

    @Option(help: "Width of the generated video.")
    var width = 1920

    @Option(help: "Height of the generated video.")
    var height = 1080

    @Option(help: "Frame rate written in out.y4m.")
    var fps = 30

    @Option(help: "Sample rate of the generated audio (Hz).")
    var sampleRate = 48000

    @Option(help: "Signal-to-noise ratio of the noisy audio (dB).")
    var snr = 5.0

    @Option(name: .customLong("vf"),
            help: ArgumentHelp("Replace the video chain; @logo stands for the built-in logo's PNG (default: watermark=image=@logo:corner=top-right,scale=width=1280:height=720,rotate=angle=90).", valueName: "chain"))
    var videoChain: String?

    @Option(name: .customLong("af"), help: ArgumentHelp("Replace the audio chain (default: denoise).", valueName: "chain"))
    var audioChain: String?

    @Option(name: .customLong("plugin-path"),
            help: ArgumentHelp("A directory (or .so file) to search for plugins first; repeatable.", valueName: "dir"))
    var pluginPath: [String] = []

    func validate() throws {
        guard frames >= 1 else { throw ValidationError("--frames must be at least 1") }
        guard seconds > 0, seconds <= 3600 else { throw ValidationError("--seconds must be more than 0 and at most 3600") }
        guard width >= 2, height >= 2, width <= 16384, height <= 16384 else {
            throw ValidationError("--width and --height must be from 2 to 16384")
        }
        guard fps >= 1 else { throw ValidationError("--fps must be at least 1") }
        guard sampleRate >= 8000, sampleRate <= 192_000 else { throw ValidationError("--sample-rate must be from 8000 to 192000") }
    }

    func run() throws {
        let registry = try loadRegistry(pluginPath)
        let fm = FileManager.default
        do {
            try fm.createDirectory(atPath: outputDir, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create the output directory \(outputDir): \((error as NSError).localizedDescription)")
        }
        func file(_ name: String) -> String { (outputDir as NSString).appendingPathComponent(name) }

        // The logo goes to a temporary PNG for the watermark filter.
        let scratch = fm.temporaryDirectory.appendingPathComponent("rawfx-demo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try? fm.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: scratch) }
        let logoPath = scratch.appendingPathComponent("logo.png").path
        try PNGWriter.write(RGBAImage.rawFXLogo(), to: logoPath)
        let defaultVideo = FilterSpec.chainText([
            FilterSpec("watermark", [("image", logoPath), ("corner", "top-right")]),
            FilterSpec("scale", [("width", "1280"), ("height", "720")]),
            FilterSpec("rotate", [("angle", "90")]),
        ])
        let videoText = videoChain.map { $0.replacingOccurrences(of: "@logo", with: logoPath) } ?? defaultVideo
        let audioText = audioChain ?? "denoise"

        let video: VideoChain
        let audio: AudioChain
        do {
            video = try VideoChain(videoText, registry: registry)
            audio = try AudioChain(audioText, registry: registry)
        } catch {
            throw explain(error, registry: registry)
        }
        let videoResult = try runVideo(video, file: file)
        let audioResult = try runAudio(audio, file: file)

        // The report.
        let inFormat = VideoFormat(width: width, height: height)
        print("rawfx demo: \(frames) frames \(inFormat.width)x\(inFormat.height) → \(videoResult.output.width)x\(videoResult.output.height); "
              + String(format: "%.1f s", seconds) + " of speech at \(sampleRate) Hz with white noise at \(snr.formatted1) dB SNR")
        print("video chain: \((videoChain ?? "watermark=image=@logo:corner=top-right,scale=width=1280:height=720,rotate=angle=90"))")
        print("audio chain: \(audioText.isEmpty ? "(none)" : audioText)")
        print("")
        print("filter".padding(toLength: 16, withPad: " ", startingAt: 0) + "calls".leftAligned(8) + "p50 ms".leftAligned(10) + "p99 ms".leftAligned(10))
        for m in video.control.metrics + audio.control.metrics {
            print(m.name.padding(toLength: 16, withPad: " ", startingAt: 0) + "\(m.frames)".leftAligned(8)
                  + milliseconds(m.p50Nanoseconds).leftAligned(10) + milliseconds(m.p99Nanoseconds).leftAligned(10))
        }
        print("")
        let chainFPS = videoResult.chainSeconds > 0 ? Double(frames) / videoResult.chainSeconds : 0
        print(String(format: "video: %d frames, %.1f fps through the chain (%.2f s), %.1f fps with generation and writing",
                     frames, chainFPS, videoResult.chainSeconds, Double(frames) / max(videoResult.totalSeconds, 1e-9)))
        print(String(format: "audio: SNR %.1f dB before, %.1f dB after (aligned by %d samples)",
                     audioResult.before, audioResult.after, audioResult.lag))
        print("wrote: " + ["out.y4m", "out.wav", "before.png", "after.png", "clean.wav", "noisy.wav"].map(file).joined(separator: ", "))
    }

    private struct VideoResult { var output: VideoFormat; var chainSeconds: Double; var totalSeconds: Double }

    private func runVideo(_ chain: VideoChain, file: (String) -> String) throws -> VideoResult {
        let format = VideoFormat(width: width, height: height)
        let pattern = TestPattern(format: format)
        let buffer = VideoBuffer(format: format)
        let outFormat = try chain.negotiate(format)
        let writer = try Y4MWriter(MediaOutput(replacing: file("out.y4m")),
                                   header: Y4MHeader(format: outFormat, frameRate: Y4MRatio(fps, 1)))
        let middle = frames / 2
        let progress = ProgressLine(total: frames, unit: "frames")
        var chainNanoseconds: UInt64 = 0
        let start = monotonicNanoseconds()
        for index in 0..<frames {
            var frame = buffer.frame
            pattern.render(frame: index, into: frame)
            frame.timestampMicroseconds = Int64(index) * 1_000_000 / Int64(fps)
            if index == middle { try writeReplacing(file("before.png")) { try PNGWriter.write(frame, to: $0) } }
            let t0 = monotonicNanoseconds()
            let out = try chain.process(frame)
            chainNanoseconds += monotonicNanoseconds() - t0
            if index == middle { try writeReplacing(file("after.png")) { try PNGWriter.write(out, to: $0) } }
            try writer.write(out)
            progress.update(index + 1)
        }
        try writer.close()
        progress.finish(frames)
        return VideoResult(output: outFormat, chainSeconds: Double(chainNanoseconds) / 1e9,
                           totalSeconds: Double(monotonicNanoseconds() - start) / 1e9)
    }

    private struct AudioResult { var before: Double; var after: Double; var lag: Int }

    private func runAudio(_ chain: AudioChain, file: (String) -> String) throws -> AudioResult {
        let format = AudioFormat(sampleRate: sampleRate, channels: 1)
        let clean = TestAudio.speech(sampleRate: sampleRate, seconds: seconds, seed: 1)
        let noisy = TestAudio.addNoise(to: clean, snr: snr, seed: 2)
        let outFormat = try chain.negotiate(format)
        var processed: [Int16] = []
        processed.reserveCapacity(noisy.count * outFormat.sampleRate / sampleRate + 4096)
        let block = format.framesPer10ms
        var copy = noisy  // the chain reads from a mutable pointer
        try copy.withUnsafeMutableBufferPointer { samples in
            var offset = 0
            while offset < samples.count {
                let n = min(block, samples.count - offset)
                try chain.process(AudioBlock(samples: samples.baseAddress! + offset, frameCount: n, format: format,
                                             timestampMicroseconds: Int64(offset) * 1_000_000 / Int64(sampleRate))) { out in
                    processed.append(contentsOf: out.buffer)
                }
                offset += n
            }
            try chain.flush { out in processed.append(contentsOf: out.buffer) }
        }
        let expected = Int((Double(noisy.count) * Double(outFormat.sampleRate) / Double(sampleRate)).rounded(.up)) * outFormat.channels
        if processed.count > expected { processed.removeLast(processed.count - expected) }

        let cleanWriter = try WAVWriter(MediaOutput(replacing: file("clean.wav")), format: format)
        try cleanWriter.write(clean)
        try cleanWriter.close()
        let noisyWriter = try WAVWriter(MediaOutput(replacing: file("noisy.wav")), format: format)
        try noisyWriter.write(noisy)
        try noisyWriter.close()
        let outWriter = try WAVWriter(MediaOutput(replacing: file("out.wav")), format: outFormat)
        try outWriter.write(processed)
        try outWriter.close()

        let before = TestAudio.snr(reference: clean, processed: noisy)
        // SNR after is only meaningful when the chain keeps the format.
        guard outFormat == format else { return AudioResult(before: before, after: .nan, lag: 0) }
        let lag = TestAudio.estimateLag(reference: clean, processed: processed, maxLag: chain.latency + block)
        return AudioResult(before: before, after: TestAudio.snr(reference: clean, processed: processed, lag: lag), lag: lag)
    }
}

extension String {
    func leftAligned(_ width: Int) -> String {
        count >= width ? self + " " : String(repeating: " ", count: width - count) + self
    }
}

extension Double {
    var formatted1: String { String(format: "%.1f", self) }
}

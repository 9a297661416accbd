import CSpeexDSP
import Foundation
import RawFX
import RawFXMedia
import XCTest

/// Running the `rawfx` binary SwiftPM built next to the test bundle, and making its inputs:
/// shared by the suites that test the command end to end.
protocol RawfxCommandTesting: XCTestCase {}

/// `rawfx` next to the test executable (`swift build` and `swift test` build it).
let rawfxBinary: URL = {
    let dir = Bundle.main.executableURL!.resolvingSymlinksInPath().deletingLastPathComponent()
    return dir.appendingPathComponent("rawfx")
}()

extension RawfxCommandTesting {
    typealias Outcome = ProgramOutcome

    func requireRawfx() throws {
        guard FileManager.default.isExecutableFile(atPath: rawfxBinary.path) else {
            throw XCTSkip("\(rawfxBinary.path) is not built; run `swift build --product rawfx`")
        }
    }

    /// Runs a program as `runProgram` does, without RAWFX_PLUGIN_PATH from the environment.
    func execute(_ executable: URL, _ arguments: [String], stdin: String? = nil) throws -> Outcome {
        try runProgram(executable, arguments, stdin: stdin, environment: [PluginRegistry.environmentVariable: nil])
    }

    func rawfx(_ arguments: String..., stdin: String? = nil) throws -> Outcome {
        try execute(rawfxBinary, arguments, stdin: stdin)
    }

    /// A bash pipeline with `pipefail`; `$RAWFX` is the binary.
    func shell(_ script: String) throws -> Outcome {
        try execute(URL(fileURLWithPath: "/bin/bash"), ["-c", "set -o pipefail; RAWFX='\(rawfxBinary.path)'; " + script])
    }

    func requireFFmpeg() throws {
        guard (try? shell("command -v ffmpeg && command -v ffprobe"))?.status == 0 else {
            throw XCTSkip("ffmpeg is not installed (apt-get install ffmpeg)")
        }
    }

    /// A real Y4M (in.y4m: 12 frames of 640x360 testsrc2) and WAV (in.wav: a 440 Hz tone in pink
    /// noise, 48 kHz mono, `seconds` long) in `directory`, as the embedding tests use them.
    func makeMediaInputs(in directory: URL, seconds: String = "1.5") throws {
        try requireFFmpeg()
        let made = try shell("""
            cd '\(directory.path)' \
            && ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=640x360:rate=25 -frames:v 12 -pix_fmt yuv420p in.y4m \
            && ffmpeg -nostdin -loglevel error -f lavfi -i 'sine=frequency=440:sample_rate=48000:duration=\(seconds)' \
                 -f lavfi -i 'anoisesrc=color=pink:amplitude=0.1:sample_rate=48000:duration=\(seconds)' \
                 -filter_complex amix=inputs=2 -ac 1 -c:a pcm_s16le in.wav
            """)
        XCTAssertEqual(made.status, 0, made.stderr)
    }

    /// Asserts the run failed with exactly one `rawfx: error:` line containing every fragment.
    func assertOneErrorLine(_ outcome: Outcome, _ fragments: String..., file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(outcome.exitedNormally, "ended by a signal", file: file, line: line)
        XCTAssertNotEqual(outcome.status, 0, "exit status", file: file, line: line)
        XCTAssertEqual(outcome.stderrLines.count, 1, "stderr: \(outcome.stderr)", file: file, line: line)
        XCTAssertTrue(outcome.stderr.hasPrefix("rawfx: error: "), outcome.stderr, file: file, line: line)
        for fragment in fragments {
            XCTAssertTrue(outcome.stderr.contains(fragment), "'\(fragment)' not in: \(outcome.stderr)", file: file, line: line)
        }
    }

    /// A Y4M of `frames` test pattern frames; returns its path.
    func makeY4M(_ dir: URL, name: String = "in.y4m", width: Int = 64, height: Int = 48, frames: Int = 5,
                 range: ColorRange = .limited, parameters: [String] = []) throws -> String {
        let path = dir.appendingPathComponent(name).path
        let pattern = TestPattern(width: width, height: height, colorRange: range)
        var header = Y4MHeader(format: pattern.format, frameRate: Y4MRatio(30, 1))
        header.pixelAspect = Y4MRatio(4, 3)
        let writer = try Y4MWriter(path: path, header: header)
        let buffer = VideoBuffer(format: pattern.format)
        for i in 0..<frames {
            pattern.render(frame: i, into: buffer.frame)
            try writer.write(buffer.frame, parameters: i < parameters.count ? parameters[i] : "")
        }
        try writer.close()
        return path
    }

    func makeWAV(_ dir: URL, name: String = "in.wav", rate: Int = 16000, channels: Int = 1, seconds: Double = 0.5) throws -> (String, [Int16]) {
        let path = dir.appendingPathComponent(name).path
        let samples = TestAudio.interleave(TestAudio.speech(sampleRate: rate, seconds: seconds), channels: channels)
        let writer = try WAVWriter(path: path, format: AudioFormat(sampleRate: rate, channels: channels))
        try writer.write(samples)
        try writer.close()
        return (path, samples)
    }

    /// Every frame of a Y4M file, tightly packed.
    func frames(of path: String) throws -> [[UInt8]] {
        let reader = try Y4MReader(path: path)
        var out: [[UInt8]] = []
        while let frame = try reader.readFrame() {
            var bytes = [UInt8](repeating: 0, count: reader.header.frameByteCount)
            frame.pack(into: &bytes)
            out.append(bytes)
        }
        return out
    }

}

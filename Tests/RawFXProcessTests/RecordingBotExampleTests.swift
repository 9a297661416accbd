import Foundation
import RawFX
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// docs/examples/recording_bot.c (docs/production.md), built with cc against rawfx_embed.h as
/// a user would, run to files and down a pipe into FFmpeg.
final class RecordingBotExampleTests: XCTestCase {
    func testTheCRecordingBotWritesY4MAndWAVOnOneClockAndFeedsFFmpeg() throws {
        guard rawfx_built_with_sanitizer() == 0 else { throw XCTSkip("the C example is not built against a sanitized librawfx") }
        let library = EmbedTests.library
        XCTAssertTrue(FileManager.default.fileExists(atPath: library.path), "\(library.path) is not built")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let example = directory.appendingPathComponent("recording_bot")
        let libraryDirectory = library.deletingLastPathComponent().path
        try runCompiler("cc", ["-std=c99"] + EmbedTests.warnings + EmbedTests.includes.flatMap { ["-I", $0] }
                            + [repositoryRoot.appendingPathComponent("docs/examples/recording_bot.c").path,
                               "-o", example.path, "-L", libraryDirectory, "-lRawFXEmbed", "-lm", "-Wl,-rpath," + libraryDirectory])
        let y4m = directory.appendingPathComponent("program.y4m").path, wav = directory.appendingPathComponent("program.wav").path
        let run = try runProgram(example, ["--frames", "120", y4m, wav])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("120 frames, 192000 audio samples at 48000 Hz"), run.stderr)
        // Exactly 120 frames of 1280x720, and 4 s of audio: the same clock.
        let reader = try Y4MReader(path: y4m)
        XCTAssertEqual([reader.header.width, reader.header.height], [1280, 720])
        var frames = 0
        while try reader.readFrame() != nil { frames += 1 }
        XCTAssertEqual(frames, 120)
        let audio = try WAVReader(path: wav)
        XCTAssertEqual(audio.format, AudioFormat(sampleRate: 48000, channels: 1))
        XCTAssertEqual(audio.frameCount, 120 * 48000 / 30)
        // The mix is heard: the speaker's voice, resampled from 32000 Hz, well above silence.
        let pcm = try audio.readAll()
        XCTAssertGreaterThan(pcm.suffix(48000).map { abs(Int($0)) }.max() ?? 0, 3000, "the program's audio is not silent")
        // User 9 left at frame 60: 8 tiles re-flowed in the last scene.
        XCTAssertTrue(run.stderr.contains("\"layout\": \"grid\""), run.stderr)
        XCTAssertFalse(run.stderr.contains("\"9\":"), run.stderr)

        // Down a pipe into FFmpeg: an MP4 with every frame.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else { throw XCTSkip("no ffmpeg") }
        XCTAssertEqual(try throughFFmpeg("'\(example.path)' --frames 60 -", in: directory), "1280,720,60")
    }

    /// Runs `command` (a Y4M on stdout) into `ffmpeg -f yuv4mpegpipe -i - program.mp4` and
    /// returns what ffprobe counts in the MP4: "width,height,frames".
    func throughFFmpeg(_ command: String, in directory: URL) throws -> String {
        let mp4 = directory.appendingPathComponent("program.mp4").path
        let pipe = try runProgram(URL(fileURLWithPath: "/bin/sh"),
                                  ["-c", command + " | /usr/bin/ffmpeg -nostdin -y -loglevel error -f yuv4mpegpipe -i - -c:v mpeg4 -q:v 5 '\(mp4)'"])
        XCTAssertEqual(pipe.status, 0, pipe.stderr)
        let probe = try runProgram(URL(fileURLWithPath: "/usr/bin/ffprobe"),
                                   ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                    "stream=width,height,nb_read_frames", "-of", "csv=p=0", mp4])
        return String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// docs/examples/RecordingBot (the `recording-bot` product, built beside `rawfx`): the
    /// emulated meeting to the PS sender, and as Y4M down a pipe into FFmpeg with a WAV.
    func testTheSwiftRecordingBotPublishesToTheProductionStudioSenderAndFeedsFFmpeg() throws {
        let bot = rawfxBinary.deletingLastPathComponent().appendingPathComponent("recording-bot")
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: bot.path), "\(bot.path) is not built; run `swift build`")
        let ps = try runProgram(bot, ["--seconds", "2", "--size", "640x360", "--ps"])
        XCTAssertEqual(ps.status, 0, ps.stderr)
        XCTAssertTrue(ps.stderr.contains("PS sender got 60 frames, 96000 samples"), ps.stderr)
        XCTAssertTrue(ps.stderr.contains("60 frames, 96000 audio samples at 48000 Hz"), ps.stderr)

        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else { throw XCTSkip("no ffmpeg") }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let wav = directory.appendingPathComponent("program.wav").path
        XCTAssertEqual(try throughFFmpeg("'\(bot.path)' --seconds 2 --size 640x360 - '\(wav)'", in: directory), "640,360,60")
        XCTAssertEqual(try WAVReader(path: wav).frameCount, 2 * 48000)
    }
}

import Foundation
import RawFX
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// `rawfx compose` end to end: Y4M inputs of different sizes and rates, some ending early or
/// cut short, into one picture with exactly fps × duration frames.
final class ComposeCommandTests: XCTestCase, RawfxCommandTesting {
    override func setUpWithError() throws { try requireRawfx() }

    /// A Y4M file of `frames` frames of the moving test pattern at `rate`.
    func writeInput(_ url: URL, width: Int, height: Int, rate: Int, frames: Int) throws {
        let pattern = TestPattern(width: width, height: height)
        let writer = try Y4MWriter(path: url.path, header: Y4MHeader(format: pattern.format, frameRate: Y4MRatio(rate, 1)))
        let buffer = VideoBuffer(format: pattern.format)
        for index in 0..<frames {
            pattern.render(frame: index, into: buffer.frame)
            try writer.write(buffer.frame)
        }
        try writer.close()
    }

    func testNineInputsOfDifferentSizesAndRatesGiveExactlyFpsTimesDurationFrames() throws {
        let dir = temporaryDirectory()
        let specs = [(640, 360, 30), (320, 240, 15), (1280, 720, 25), (176, 144, 10), (480, 480, 30),
                     (854, 480, 24), (960, 540, 60), (200, 300, 20), (1920, 1080, 30)]
        var arguments = ["compose", "--size", "1280x720", "--fps", "30", "--layout-json", dir.appendingPathComponent("layout.jsonl").path,
                         "--switch", "1=speaker", "--speaker", "p2", "-o", dir.appendingPathComponent("out.y4m").path]
        for (index, spec) in specs.enumerated() {
            let url = dir.appendingPathComponent("p\(index).y4m")
            // Two seconds each, but p3 ends after half a second.
            let frames = index == 3 ? spec.2 / 2 : spec.2 * 2
            try writeInput(url, width: spec.0, height: spec.1, rate: spec.2, frames: frames)
            arguments.append("p\(index)=\(url.path)")
        }
        // p8 is cut short in the middle of its 31st frame: a warning, not a failure.
        let cut = dir.appendingPathComponent("p8.y4m")
        let data = try Data(contentsOf: cut)
        let frameBytes = 1920 * 1080 * 3 / 2 + 6
        try data.prefix(data.count - 29 * frameBytes - frameBytes / 2).write(to: cut)

        let outcome = try execute(rawfxBinary, arguments)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssert(outcome.stderrLines.contains { $0.hasPrefix("rawfx: warning: input 'p8'") && $0.contains("ends after 30 frames") },
                  outcome.stderr)
        XCTAssert(outcome.stderrLines.allSatisfy { $0.hasPrefix("rawfx:") }, outcome.stderr)

        let reader = try Y4MReader(path: dir.appendingPathComponent("out.y4m").path)
        XCTAssertEqual(reader.header.width, 1280)
        XCTAssertEqual(reader.header.frameRate, Y4MRatio(30, 1))
        var frames: [VideoBuffer] = []
        while let frame = try reader.readFrame() {
            let copy = VideoBuffer(format: frame.format)
            frame.copy(to: copy.frame)
            frames.append(copy)
        }
        XCTAssertEqual(frames.count, 60, "30 fps × 2 s (the longest input)")

        // One line per layout in force: the grid from frame 0, the speaker layout from frame 30.
        let lines = try String(contentsOf: dir.appendingPathComponent("layout.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(lines.map { $0["frame"] as? Int }, [0, 30])
        XCTAssertEqual(lines.map { $0["layout"] as? String }, ["grid", "speaker"])
        let grid = lines[0]["tiles"] as! [String: [String: Int]]
        XCTAssertEqual(grid.count, 9)
        // 3 × 3 cells over 1280 × 720, cut on even pixels: x 0, 426, 852 and y 0, 240, 480.
        for index in 0..<9 {
            let tile = grid["p\(index)"]!
            XCTAssertEqual(tile["x"], [0, 426, 852][index % 3], "p\(index)")
            XCTAssertEqual(tile["y"], [0, 240, 480][index / 3], "p\(index)")
            XCTAssertEqual(tile["width"], index % 3 == 2 ? 428 : 426)
            XCTAssertEqual(tile["height"], 240)
        }
        let speaker = lines[1]["tiles"] as! [String: [String: Int]]
        XCTAssertEqual(speaker["p2"], ["x": 0, "y": 0, "width": 1280, "height": 576, "z": 0])
        XCTAssertEqual(speaker.count, 5)

        // p3 ended at 0.5 s: in frame 20 (0.667 s, still the grid) its tile is the default
        // placeholder (#282828: Y 16 + 40 · 219 / 255 = 50, U = V = 128) everywhere.
        let p3 = grid["p3"]!
        let frame = frames[20].frame
        for y in stride(from: p3["y"]!, to: p3["y"]! + p3["height"]!, by: 7) {
            for x in stride(from: p3["x"]!, to: p3["x"]! + p3["width"]!, by: 7) {
                XCTAssertEqual(frame.plane(0)[y * frame.stride(0) + x], 50, "p3 at \(x),\(y)")
                XCTAssertEqual(frame.plane(1)[y / 2 * frame.stride(1) + x / 2], 128)
            }
        }
        // p0 is shown: its tile is not the placeholder.
        let p0 = grid["p0"]!
        XCTAssertNotEqual(frame.plane(0)[(p0["y"]! + 100) * frame.stride(0) + p0["x"]! + 100], 50)
    }

    /// WAV inputs at other rates and channel counts are mixed on the video's clock: the mix
    /// of two is the saturated sum of each mixed alone, and it lasts exactly the duration.
    func testWAVInputsAreMixedOnTheSameClock() throws {
        let dir = temporaryDirectory()
        let video = dir.appendingPathComponent("v.y4m")
        try writeInput(video, width: 64, height: 64, rate: 25, frames: 25)
        func writeWAV(_ name: String, rate: Int, channels: Int, seconds: Double, _ value: (Int) -> Int16) throws -> String {
            let url = dir.appendingPathComponent(name)
            let writer = try WAVWriter(path: url.path, format: AudioFormat(sampleRate: rate, channels: channels))
            try writer.write((0..<Int(Double(rate) * seconds) * channels).map(value))
            try writer.close()
            return url.path
        }
        let a = try writeWAV("a.wav", rate: 16000, channels: 2, seconds: 1) { Int16(clamping: Int(20000 * sin(Double($0 / 2) * 0.1))) }
        let b = try writeWAV("b.wav", rate: 48000, channels: 1, seconds: 0.5) { Int16(clamping: Int(25000 * sin(Double($0) * 0.013))) }
        func mix(_ inputs: [String], _ name: String) throws -> [Int16] {
            let out = dir.appendingPathComponent(name).path
            let outcome = try execute(rawfxBinary, ["compose", "--size", "64x64", "--fps", "30", "--duration", "1",
                                                    "--audio-output", out, "v=\(video.path)"] + inputs
                                                    + ["-o", dir.appendingPathComponent("o.y4m").path])
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
            let reader = try WAVReader(path: out)
            XCTAssertEqual(reader.format, AudioFormat(sampleRate: 48000, channels: 1))
            return try reader.readAll()
        }
        let both = try mix(["a=\(a)", "b=\(b)"], "ab.wav"), onlyA = try mix(["a=\(a)"], "a-mix.wav"), onlyB = try mix(["b=\(b)"], "b-mix.wav")
        XCTAssertEqual(both.count, 48000, "exactly one second at 48 kHz")
        XCTAssertEqual(both, zip(onlyA, onlyB).map { Int16(clamping: Int($0) + Int($1)) })
        XCTAssert(both.contains(32767), "the sum saturates")
        XCTAssertEqual(Array(onlyB[24000...]), [Int16](repeating: 0, count: 24000), "b ends at 0.5 s: silence after")
    }

    func testBadArgumentsNameWhatIsWrong() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("a.y4m")
        try writeInput(input, width: 64, height: 64, rate: 10, frames: 2)
        let out = dir.appendingPathComponent("o.y4m").path
        for (arguments, expected) in [
            (["--size", "641x360"], "--size '641x360'"),
            (["--fps", "0"], "--fps '0'"),
            (["--layout", "mosaic"], "layout 'mosaic'"),
            (["--speaker", "nobody"], "--speaker 'nobody' is not an input ID"),
            (["--layout", "custom"], "--layout custom needs --layout-file"),
            (["--background", "nope"], "--background 'nope'"),
        ] {
            let outcome = try execute(rawfxBinary, ["compose"] + arguments + [input.path, "-o", out])
            XCTAssert([1, 64].contains(outcome.status), "\(arguments): status \(outcome.status)")  // 64: a usage error
            XCTAssert(outcome.stderr.contains(expected), "\(arguments): \(outcome.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "no output after a refusal")
    }

    /// `--name` labels and `--captions` cues: each output frame is the unlabelled composition
    /// with the `text` filter run alone on each tile (the name) and then on the whole picture
    /// (the cue in force at the frame's time, nothing outside the cues). A file run is offline,
    /// so a cue is on exactly the frames of its time span. A bad cue file and an unknown ID are
    /// refused with what was wrong.
    func testNamesAndCaptionsAreTheTextFilterOnTheTilesAndThePicture() throws {
        guard (try? builtPlugins.filterType("text")) != nil else { throw XCTSkip("the Text plugin was not built") }
        let dir = temporaryDirectory()
        try writeInput(dir.appendingPathComponent("a.y4m"), width: 320, height: 180, rate: 10, frames: 10)
        try writeInput(dir.appendingPathComponent("b.y4m"), width: 320, height: 240, rate: 10, frames: 10)
        let cues = dir.appendingPathComponent("talk.srt")
        try "1\n00:00:00,300 --> 00:00:00,600\nHello there,\nhow are you?\n\n2\n00:00:00,700 --> 00:00:00,800\nمرحبا\n"
            .write(to: cues, atomically: true, encoding: .utf8)
        let common = ["compose", "--size", "640x180", "--fps", "10", "--layout-json", dir.appendingPathComponent("l.jsonl").path,
                      "a=" + dir.appendingPathComponent("a.y4m").path, "b=" + dir.appendingPathComponent("b.y4m").path]
        let plain = try execute(rawfxBinary, common + ["-o", dir.appendingPathComponent("plain.y4m").path])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let named = try execute(rawfxBinary, common + ["--name", "a=Ada Lovelace", "--name", "b=Bob", "--captions", cues.path,
                                                       "-o", dir.appendingPathComponent("named.y4m").path])
        XCTAssertEqual(named.status, 0, named.stderr)

        func frames(_ name: String) throws -> [VideoBuffer] {
            let reader = try Y4MReader(path: dir.appendingPathComponent(name).path)
            var result: [VideoBuffer] = []
            while let frame = try reader.readFrame() {
                let copy = VideoBuffer(format: frame.format)
                frame.copy(to: copy.frame)
                result.append(copy)
            }
            return result
        }
        func drawn(_ picture: VideoFrame, _ style: String, _ text: String) throws {
            let chain = try VideoChain("text=\(style)", registry: builtPlugins)
            try chain.control.setParameter("text.text", text)
            _ = try chain.process(picture)
        }
        let tiles = try JSONSerialization.jsonObject(with: Data(String(contentsOf: dir.appendingPathComponent("l.jsonl"), encoding: .utf8)
            .split(separator: "\n")[0].utf8)) as! [String: Any]
        let rects = tiles["tiles"] as! [String: [String: Int]]
        let expected = try frames("plain.y4m"), got = try frames("named.y4m")
        XCTAssertEqual(got.count, 10)
        let captionAt: [Int: String] = [3: "Hello there, how are you?", 4: "Hello there, how are you?", 5: "Hello there, how are you?",
                                        7: "مرحبا"]
        for (index, picture) in expected.enumerated() {
            for (id, name) in [("a", "Ada Lovelace"), ("b", "Bob")] {
                let r = rects[id]!
                try drawn(tileView(picture.frame.raw, x: r["x"]!, y: r["y"]!, width: r["width"]!, height: r["height"]!),
                          "anchor=bottom_left:size=22:box=true", name)
            }
            if let caption = captionAt[index] {
                try drawn(picture.frame, "anchor=bottom:size=36:box=true:max_width=0.8", caption)
            }
            for p in 0..<3 {
                XCTAssert(planeBytes(got[index].frame, p) == planeBytes(picture.frame, p),
                          "frame \(index), plane \(p): names, and \(captionAt[index] ?? "no caption")")
            }
        }

        try "1\n00:00:01,000 -> 00:00:02,000\nbroken\n".write(to: cues, atomically: true, encoding: .utf8)
        let bad = try execute(rawfxBinary, common + ["--captions", cues.path, "-o", dir.appendingPathComponent("x.y4m").path])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssert(bad.stderr.contains("HH:MM:SS,mmm --> HH:MM:SS,mmm"), bad.stderr)
        let unknown = try execute(rawfxBinary, common + ["--name", "zed=Zed", "-o", dir.appendingPathComponent("x.y4m").path])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssert(unknown.stderr.contains("'zed' is not an input ID; the inputs are a, b"), unknown.stderr)
    }
}

import CSpeexDSP
import Foundation
import RawFX
import RawFXSDK
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// The `rawfx` command end to end: the binary SwiftPM built next to the test bundle.
final class CLITests: XCTestCase, RawfxCommandTesting {
    static var binary: URL { rawfxBinary }

    override func setUpWithError() throws { try requireRawfx() }

    /// What `rawfx plugins --json` reports with the default search path (read once).
    static var listing: [String: Any] {
        (try? JSONSerialization.jsonObject(with: listingJSON) as? [String: Any]) ?? [:]
    }

    private static let listingJSON: Data = {
        let process = Process()
        process.executableURL = binary
        process.arguments = ["plugins", "--json"]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: PluginRegistry.environmentVariable)
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return Data() }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }()

    /// True when the rawfx binary itself can load every one of these filters (the test
    /// process links libraries rawfx does not, so it is asked, not the test's registry).
    func has(_ filters: String...) -> Bool {
        let ids = ((Self.listing["filters"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
        return filters.allSatisfy(ids.contains)
    }

    // MARK: - Help and plugins

    func testHelpTeachesWithExamples() throws {
        let root = try rawfx("--help")
        XCTAssertEqual(root.status, 0)
        for text in ["plugins", "run", "demo", "yuv4mpegpipe", "Examples"] {
            XCTAssertTrue(root.stdoutText.contains(text), "rawfx --help lacks \(text)")
        }
        let run = try rawfx("help", "run")
        XCTAssertEqual(run.status, 0)
        for text in ["--vf", "--af", "--snapshot", "--plugin-path", "--max-frame-size", "SIGPIPE", "C420paldv", "XCOLORRANGE", "ffmpeg -i in.mp4"] {
            XCTAssertTrue(run.stdoutText.contains(text), "rawfx help run lacks \(text)")
        }
        XCTAssertTrue(try rawfx("demo", "--help").stdoutText.contains("--output-dir"))
        XCTAssertEqual(try rawfx("--version").stdoutText.trimmingCharacters(in: .whitespacesAndNewlines), RawFXHost.version)
    }

    func testPluginsJSONListsFiltersWithParametersAndBrokenFiles() throws {
        let dir = temporaryDirectory()
        let junk = dir.appendingPathComponent("junk.so")
        try Data("this is not an ELF file".utf8).write(to: junk)
        let outcome = try rawfx("plugins", "--json", "--plugin-path", dir.path)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any])
        let filters = try XCTUnwrap(json["filters"] as? [[String: Any]])
        let ids = filters.compactMap { $0["id"] as? String }
        for id in ["null", "copy", "gain"] { XCTAssertTrue(ids.contains(id), "\(id) missing from \(ids)") }
        let gain = try XCTUnwrap(filters.first { $0["id"] as? String == "gain" })
        XCTAssertEqual(gain["kind"] as? String, "audio")
        XCTAssertEqual(gain["processing"] as? String, "in-place")
        XCTAssertTrue((gain["plugin"] as? String)?.hasSuffix("libRawFXBasics.so") == true)
        let db = try XCTUnwrap((gain["parameters"] as? [[String: Any]])?.first { $0["id"] as? String == "db" })
        XCTAssertEqual(db["type"] as? String, "float")
        XCTAssertEqual(db["default"] as? Double, 0)
        XCTAssertEqual(db["min"] as? Double, -60)
        XCTAssertEqual(db["max"] as? Double, 40)
        XCTAssertEqual(db["unit"] as? String, "dB")
        XCTAssertFalse((db["help"] as? String ?? "").isEmpty)
        let failures = try XCTUnwrap(json["failures"] as? [[String: Any]])
        let failure = try XCTUnwrap(failures.first { $0["path"] as? String == junk.path }, "\(failures)")
        XCTAssertTrue((failure["error"] as? String ?? "").contains("not a loadable shared object"), "\(failure)")
        XCTAssertEqual((json["searchPath"] as? [String])?.first, dir.path)

        let text = try rawfx("plugins", "--plugin-path", dir.path)
        XCTAssertEqual(text.status, 0)
        XCTAssertTrue(text.stdoutText.contains("junk.so"))
        XCTAssertTrue(text.stdoutText.contains("db=FLOAT"))
        XCTAssertTrue(text.stdoutText.contains("a number from -60 to 40 dB"))
    }

    func testRawfxLoadsEveryPluginBuiltNextToIt() throws {
        // A plugin that loads in the test process but not in rawfx lacks a library it needs
        // (the test executable links libyuv, SpeexDSP and libpng itself).
        let buildDirectory = Self.binary.deletingLastPathComponent().path
        let failures = ((Self.listing["failures"] as? [[String: Any]]) ?? [])
            .filter { ($0["path"] as? String)?.hasPrefix(buildDirectory) == true }
        for failure in failures {
            XCTFail("rawfx cannot load a plugin built next to it: \(failure["error"] as? String ?? "?")")
        }
        XCTAssertFalse(((Self.listing["filters"] as? [[String: Any]]) ?? []).isEmpty, "rawfx plugins --json lists filters")
    }

    /// SpeexDSP prints "warning: The VAD has been replaced by a hack…" on stderr itself when
    /// denoise turns its VAD on (at configure): that line left the tool without the "rawfx:"
    /// every line of it starts with. The plugin now catches it into its log (debug).
    func testSpeexDSPWarningsDoNotReachTheTerminal() throws {
        guard ((Self.listing["filters"] as? [[String: Any]]) ?? []).contains(where: { $0["id"] as? String == "denoise" }) else {
            throw XCTSkip("the Speex plugin is not built")
        }
        let dir = temporaryDirectory()
        let (audio, _) = try makeWAV(dir, rate: 48000)
        let outWAV = dir.appendingPathComponent("out.wav").path
        let quiet = try rawfx("run", "--af", "denoise=vad=true", audio, outWAV)
        XCTAssertEqual(quiet.status, 0, quiet.stderr)
        XCTAssertFalse(quiet.stderr.contains("The VAD has been replaced"), quiet.stderr)
        // -vv shows debug lines: there it is, as a line of the filter's log.
        let debug = try rawfx("run", "-vv", "--af", "denoise=vad=true", audio, outWAV)
        XCTAssertEqual(debug.status, 0, debug.stderr)
        XCTAssertTrue(debug.stderr.contains("rawfx: denoise: SpeexDSP: warning: The VAD has been replaced"), debug.stderr)
        for line in quiet.stderrLines + debug.stderrLines { XCTAssertTrue(line.hasPrefix("rawfx:"), String(line)) }
    }

    // MARK: - Errors: one line, non-zero, never a signal

    func testChainErrorsAreOneLine() throws {
        let dir = temporaryDirectory()
        let video = try makeY4M(dir)
        let (audio, _) = try makeWAV(dir)
        let out = dir.appendingPathComponent("out.y4m").path
        let outWAV = dir.appendingPathComponent("out.wav").path
        assertOneErrorLine(try rawfx("run", "--vf", "nope", video, out), "unknown filter 'nope'; known filters:", "copy", "null")
        assertOneErrorLine(try rawfx("run", "--af", "gain=volume=3", audio, outWAV),
                           "gain: unknown parameter 'volume'; valid parameters: db, block")
        assertOneErrorLine(try rawfx("run", "--af", "gain=db=100", audio, outWAV),
                           "invalid value '100' for db", "from -60 to 40 dB")
        assertOneErrorLine(try rawfx("run", "--vf", "gain", video, out), "gain is a audio filter") 
        assertOneErrorLine(try rawfx("run", "--vf", "copy=,", video, out), "chain")
        assertOneErrorLine(try rawfx("run", "--af", "gain", video, out), "--af", "Y4M")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "no output is created for a bad chain")
    }

    func testInputAndOutputErrorsAreOneLine() throws {
        let dir = temporaryDirectory()
        let video = try makeY4M(dir)
        let garbage = dir.appendingPathComponent("garbage.y4m")
        try Data("GIF89a garbage".utf8).write(to: garbage)
        let c444 = dir.appendingPathComponent("c444.y4m")
        try Data("YUV4MPEG2 W4 H4 F25:1 C444\nFRAME\n".utf8).write(to: c444)
        let badWAV = dir.appendingPathComponent("bad.wav")
        try Data("RIFF\u{24}\0\0\0WAVEfmt \u{10}\0\0\0\u{3}\0\u{1}\0".utf8).write(to: badWAV)
        let out = dir.appendingPathComponent("out.y4m").path

        assertOneErrorLine(try rawfx("run", garbage.path, out), "garbage.y4m: not a Y4M stream", "GIF89a")
        assertOneErrorLine(try rawfx("run", c444.path, out), "C444")
        assertOneErrorLine(try rawfx("run", dir.appendingPathComponent("missing.y4m").path, out), "missing.y4m", "No such file")
        assertOneErrorLine(try rawfx("run", dir.path, out), "directory")
        assertOneErrorLine(try rawfx("run", video, "/nonexistent-dir/out.y4m"), "/nonexistent-dir/out.y4m")
        assertOneErrorLine(try rawfx("run", video, dir.appendingPathComponent("out.mp4").path), "out.mp4", ".y4m or .wav")
        assertOneErrorLine(try rawfx("run", video, dir.appendingPathComponent("out.wav").path), "Y4M", "WAV")
        assertOneErrorLine(try rawfx("run", badWAV.path, dir.appendingPathComponent("o.wav").path), "bad.wav")
        assertOneErrorLine(try rawfx("run", "-", out, stdin: garbage.path), "stdin: not a Y4M stream")
        assertOneErrorLine(try rawfx("run", video), "Missing expected argument")
        assertOneErrorLine(try rawfx("run", "--snapshot", "x", video, out), "--snapshot")
        assertOneErrorLine(try rawfx("frobnicate"), "frobnicate")
        assertOneErrorLine(try rawfx("run", video, video), "is the input file")
        XCTAssertEqual(try frames(of: video).count, 5, "the input is intact")
    }

    func testTruncatedInputLeavesAValidOutputOfEveryCompleteFrame() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 5)
        var data = try Data(contentsOf: URL(fileURLWithPath: input))
        data.removeLast(100)
        try data.write(to: URL(fileURLWithPath: input))
        let out = dir.appendingPathComponent("out.y4m").path
        let outcome = try rawfx("run", "--vf", "copy", input, out)
        assertOneErrorLine(outcome, "truncated input", "frame 5 is missing 100 of its 4608 bytes", "wrote 4 complete frames")
        let written = try frames(of: out)
        XCTAssertEqual(written.count, 4)
        let cutAt = try Y4MReader(path: input)
        for i in 0..<4 {
            let frame = try XCTUnwrap(cutAt.readFrame())
            var expected = [UInt8](repeating: 0, count: cutAt.header.frameByteCount)
            frame.pack(into: &expected)
            XCTAssertEqual(written[i], expected, "frame \(i)")
        }

        // A truncated WAV: what was there is written, and the error says at which byte it ends.
        let (wav, _) = try makeWAV(dir, seconds: 0.5)
        var wavData = try Data(contentsOf: URL(fileURLWithPath: wav))
        wavData.removeLast(1000)
        try wavData.write(to: URL(fileURLWithPath: wav))
        let outWAV = dir.appendingPathComponent("out.wav").path
        assertOneErrorLine(try rawfx("run", "--af", "gain", wav, outWAV), "truncated data chunk", "ends at byte \(wavData.count)", "wrote 7500 frames")
        XCTAssertEqual(try WAVReader(path: outWAV).frameCount, 7500)
    }

    func testPassThroughIsByteIdenticalAndKeepsHeaderAndFrameParameters() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, width: 33, height: 17, frames: 3, range: .full, parameters: ["Ixyz", "", "XA=1"])
        let out = dir.appendingPathComponent("out.y4m").path
        let outcome = try rawfx("run", "--vf", "null,copy", input, out)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertEqual(outcome.stderr, "", "nothing on stderr when it is not a terminal")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out)), try Data(contentsOf: URL(fileURLWithPath: input)))
        // Through stdin and stdout, format sniffed.
        let piped = try rawfx("run", "-", "-", stdin: input)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.stdout, try Data(contentsOf: URL(fileURLWithPath: input)))
    }

    func testSnapshotsWritePNGs() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 3)
        let a = dir.appendingPathComponent("a.png").path, b = dir.appendingPathComponent("b.png").path
        let outcome = try rawfx("run", "--vf", "copy", "--snapshot", "2:\(a)", "--snapshot", "0:\(b)", input,
                                dir.appendingPathComponent("out.y4m").path)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        for path in [a, b] {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(Array(data.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "PNG signature")
        }
        let missed = try rawfx("run", "--snapshot", "7:\(a)", input, dir.appendingPathComponent("o2.y4m").path)
        assertOneErrorLine(missed, "no frame 7", "3 frames")
        XCTAssertEqual(try frames(of: dir.appendingPathComponent("o2.y4m").path).count, 3, "the video is still written")
    }

    /// A snapshot never overwrites what the run reads or another snapshot: the chain's own
    /// files (a watermark's image) and the same path twice are refused before anything is
    /// written, and so is a FIFO (a snapshot is a whole file, renamed into place).
    func testSnapshotsRefuseTheChainsFilesAFIFOAndOnePathTwice() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 3)
        let out = dir.appendingPathComponent("out.y4m").path
        let logo = dir.appendingPathComponent("logo.png").path
        try FileManager.default.copyItem(atPath: repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path,
                                         toPath: logo)
        let original = try Data(contentsOf: URL(fileURLWithPath: logo))
        for chain in ["watermark=image=\(logo):opacity=0.5", "watermark=\(logo)"] {
            let overwrite = try rawfx("run", "--vf", chain, "--snapshot", "1:\(dir.path)/./logo.png", input, out)
            assertOneErrorLine(overwrite, "--snapshot 1:\(dir.path)/./logo.png is \(logo), a file the chain reads")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: logo)), original, "the chain's image is untouched")

        try FileManager.default.createDirectory(at: dir.appendingPathComponent("x"), withIntermediateDirectories: false)
        let twice = try rawfx("run", "--snapshot", "0:\(dir.path)/a.png", "--snapshot", "2:\(dir.path)/x/../a.png", input, out)
        assertOneErrorLine(twice, "--snapshot 0:\(dir.path)/a.png and --snapshot 2:\(dir.path)/x/../a.png name the same file")

        let fifo = dir.appendingPathComponent("snap.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let piped = try rawfx("run", "--snapshot", "0:\(fifo)", input, out)
        assertOneErrorLine(piped, "--snapshot 0:\(fifo) is a FIFO")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "nothing was written")
    }

    func testWAVRunAndPipes() throws {
        let dir = temporaryDirectory()
        let (input, samples) = try makeWAV(dir, rate: 44100, channels: 2, seconds: 0.3)
        let out = dir.appendingPathComponent("out.wav").path
        let outcome = try rawfx("run", "--af", "gain=db=0:block=441", input, out)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let reader = try WAVReader(path: out)
        XCTAssertEqual(reader.format, AudioFormat(sampleRate: 44100, channels: 2))
        XCTAssertEqual(try reader.readAll(), samples, "0 dB gain keeps every sample, the flush adds none")

        // stdin → stdout through a pipe: sizes unknown (0xFFFFFFFF), samples intact.
        let piped = try shell("cat '\(input)' | \"$RAWFX\" run --af gain - - | cat")
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(Array(piped.stdout[4..<8]), [0xFF, 0xFF, 0xFF, 0xFF])
        let back = dir.appendingPathComponent("piped.wav")
        try piped.stdout.write(to: back)
        XCTAssertEqual(try WAVReader(path: back.path).readAll(), samples)
    }

    func testClosedPipeEndsQuietlyBySIGPIPE() throws {
        // As Unix filters do: no error line, and the status of a process SIGPIPE ended (141 in bash).
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, width: 320, height: 240, frames: 30)
        let (wav, _) = try makeWAV(dir, seconds: 5)
        for (chain, file) in [("--vf", input), ("--af", wav)] {
            let outcome = try shell("\"$RAWFX\" run \(chain) \(chain == "--vf" ? "copy" : "gain") '\(file)' - 2>'\(dir.path)/err' | head -c 1000 >/dev/null; echo \"${PIPESTATUS[0]}\"")
            XCTAssertEqual(outcome.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines), "141", "ended by SIGPIPE (\(chain))")
            let err = try String(contentsOfFile: dir.path + "/err", encoding: .utf8)
            XCTAssertEqual(err, "", "nothing on stderr (\(chain))")
        }
    }

    func testProgressLineOnlyOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("no script(1) to make a terminal") }
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 3)
        let out = dir.appendingPathComponent("out.y4m").path
        // script(1) gives the command a terminal; its output is the terminal's.
        let tty = try shell("script -qec \"\\\"$RAWFX\\\" run '\(input)' '\(out)'\" /dev/null")
        XCTAssertEqual(tty.status, 0, tty.stderr)
        XCTAssertTrue(tty.stdoutText.contains("3/3 frames (100%)"), tty.stdoutText)
        XCTAssertTrue(tty.stdoutText.contains("frames/s"), tty.stdoutText)
        let plain = try rawfx("run", input, out)
        XCTAssertEqual(plain.stderr, "")
        XCTAssertEqual(plain.stdout, Data())
    }

    // MARK: - Demo

    func testDemoWritesEverythingAndReports() throws {
        let dir = temporaryDirectory()
        var arguments = ["demo", "--output-dir", dir.path, "--frames", "4", "--seconds", "0.5", "--width", "320", "--height", "240"]
        let full = has("watermark", "scale", "rotate", "denoise")
        if !full { arguments += ["--vf", "copy", "--af", "gain=db=-1"] }
        let outcome = try execute(Self.binary, arguments)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        for name in ["out.y4m", "out.wav", "before.png", "after.png", "clean.wav", "noisy.wav"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), name)
        }
        let video = try Y4MReader(path: dir.appendingPathComponent("out.y4m").path)
        if full {
            XCTAssertEqual([video.header.width, video.header.height], [720, 1280], "720p, rotated")
            for filter in ["watermark", "scale", "rotate", "denoise"] { XCTAssertTrue(outcome.stdoutText.contains(filter), filter) }
        }
        var count = 0
        while try video.readFrame() != nil { count += 1 }
        XCTAssertEqual(count, 4)
        XCTAssertEqual(try WAVReader(path: dir.appendingPathComponent("out.wav").path).frameCount, 24000)
        for text in ["p50", "p99", "fps", "SNR", "dB before", "4 frames"] {
            XCTAssertTrue(outcome.stdoutText.contains(text), "'\(text)' not in:\n\(outcome.stdoutText)")
        }
    }

    func testDemoWithTheDefaultChains() throws {
        guard has("watermark", "scale", "rotate", "denoise") else {
            throw XCTSkip("rawfx cannot load all of watermark, scale, rotate and denoise yet (see rawfx plugins)")
        }
        let dir = temporaryDirectory()
        let outcome = try rawfx("demo", "--output-dir", dir.path, "--frames", "3", "--seconds", "1")
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let video = try Y4MReader(path: dir.appendingPathComponent("out.y4m").path)
        XCTAssertEqual([video.header.width, video.header.height], [720, 1280])
        // The denoiser must improve the SNR of the noisy speech.
        let line = try XCTUnwrap(outcome.stdoutText.split(separator: "\n").first { $0.hasPrefix("audio: SNR") })
        let numbers = line.split(separator: " ").compactMap { Double($0) }
        XCTAssertEqual(numbers.count, 3, String(line))  // before, after, lag
        if numbers.count == 3 { XCTAssertGreaterThan(numbers[1], numbers[0], String(line)) }
    }

    // MARK: - FFmpeg interoperability

    func testRotateIsByteIdenticalToFFmpegTranspose() throws {
        try requireFFmpeg()
        guard has("rotate") else { throw XCTSkip("rawfx cannot load the rotate plugin (libRawFXYUV.so): not built yet, or see testRawfxLoadsEveryPluginBuiltNextToIt") }
        let dir = temporaryDirectory().path
        let made = try shell("""
            cd '\(dir)' && ffmpeg -nostdin -loglevel error -f lavfi -i testsrc=size=320x240:rate=25 -frames:v 10 -pix_fmt yuv420p x.y4m \
            && ffmpeg -nostdin -loglevel error -i x.y4m -vf transpose=1 -pix_fmt yuv420p -f yuv4mpegpipe ref.y4m \
            && "$RAWFX" run --vf rotate=angle=90 x.y4m ours.y4m
            """)
        XCTAssertEqual(made.status, 0, made.stderr)
        let ours = try frames(of: dir + "/ours.y4m"), reference = try frames(of: dir + "/ref.y4m")
        XCTAssertEqual(ours.count, 10)
        XCTAssertEqual(reference.count, 10)
        for i in 0..<min(ours.count, reference.count) { XCTAssertTrue(ours[i] == reference[i], "frame \(i) differs from ffmpeg transpose=1") }
        let header = try Y4MReader(path: dir + "/ours.y4m").header
        XCTAssertEqual([header.width, header.height], [240, 320])
    }

    func testFFmpegPipeKeepsEveryFrame() throws {
        try requireFFmpeg()
        let rotate = has("rotate")
        let source = "ffmpeg -nostdin -loglevel error -f lavfi -i testsrc=size=320x240:rate=25 -frames:v 50 -pix_fmt yuv420p -f yuv4mpegpipe -"
        let ours = try shell("\(source) | \"$RAWFX\" run --vf \(rotate ? "rotate=angle=90" : "copy") - - | ffmpeg -nostdin -loglevel error -f yuv4mpegpipe -i - -f framemd5 -")
        XCTAssertEqual(ours.status, 0, ours.stderr)
        let reference = try shell("\(source) | ffmpeg -nostdin -loglevel error -f yuv4mpegpipe -i - \(rotate ? "-vf transpose=1" : "") -pix_fmt yuv420p -f framemd5 -")
        XCTAssertEqual(reference.status, 0, reference.stderr)
        func md5s(_ o: Outcome) -> [Substring] {
            o.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
        }
        XCTAssertEqual(md5s(ours).count, 50, "every frame survives the pipe")
        XCTAssertEqual(md5s(ours), md5s(reference))
    }

    func testFFmpegReadsOurY4MAndWAV() throws {
        try requireFFmpeg()
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, width: 64, height: 48, frames: 4, range: .full)
        let out = dir.appendingPathComponent("out.y4m").path
        XCTAssertEqual(try rawfx("run", "--vf", "copy", input, out).status, 0)
        let probe = try shell("ffprobe -v error -count_frames -show_entries stream=width,height,pix_fmt,color_range,nb_read_frames -of default=nw=1 '\(out)'")
        XCTAssertEqual(probe.status, 0, probe.stderr)
        for line in ["width=64", "height=48", "nb_read_frames=4", "color_range=pc"] {
            XCTAssertTrue(probe.stdoutText.contains(line), "\(line) not in \(probe.stdoutText)")
        }

        let (wav, samples) = try makeWAV(dir, rate: 22050, channels: 2, seconds: 0.2)
        let outWAV = dir.appendingPathComponent("out.wav").path
        XCTAssertEqual(try rawfx("run", "--af", "gain", wav, outWAV).status, 0)
        let pcm = samples.withUnsafeBytes { Data($0) }
        let decoded = try shell("ffmpeg -nostdin -loglevel error -i '\(outWAV)' -f s16le -")
        XCTAssertEqual(decoded.status, 0, decoded.stderr)
        XCTAssertEqual(decoded.stdout, pcm)
        // Our WAV on a pipe (0xFFFFFFFF sizes), and ffmpeg's streamed WAV (LIST chunk, 0xFFFFFFFF) into us.
        let piped = try shell("\"$RAWFX\" run --af gain '\(wav)' - | ffmpeg -nostdin -loglevel error -f wav -i - -f s16le -")
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.stdout, pcm)
        let fromFFmpeg = try shell("ffmpeg -nostdin -loglevel error -i '\(wav)' -c:a pcm_s16le -f wav - | \"$RAWFX\" run --af gain - - | ffmpeg -nostdin -loglevel error -f wav -i - -f s16le -")
        XCTAssertEqual(fromFFmpeg.status, 0, fromFFmpeg.stderr)
        XCTAssertEqual(fromFFmpeg.stdout, pcm)
    }

    // MARK: - Latency: outputs line up with their inputs

    func testDenoisedWAVHasTheInputsLengthAndZeroLag() throws {
        guard has("denoise") else { throw XCTSkip("denoise is not built") }
        let dir = temporaryDirectory()
        // Not a whole number of 10 ms blocks, so the tail needs draining.
        let frames = 48000 + 123
        let clean = TestAudio.speech(sampleRate: 48000, seconds: Double(frames) / 48000, seed: 5, peak: 0.3)
        let input = TestAudio.addNoise(to: Array(clean.prefix(frames)), snr: 10, seed: 6)
        let path = dir.appendingPathComponent("in.wav").path
        let writer = try WAVWriter(path: path, format: AudioFormat(sampleRate: 48000, channels: 1))
        try writer.write(input)
        try writer.close()
        let out = dir.appendingPathComponent("out.wav").path
        let run = try rawfx("run", "--af", "denoise", path, out)
        XCTAssertEqual(run.status, 0, run.stderr)
        let output = try WAVReader(path: out).readAll()
        XCTAssertEqual(output.count, input.count, "the output has the input's length")

        // SpeexDSP directly, on the input plus two blocks of silence, shifted by its one-block delay.
        var padded = input + [Int16](repeating: 0, count: 960 + (480 - frames % 480))
        let state = speex_preprocess_state_init(480, 48000)!
        defer { speex_preprocess_state_destroy(state) }
        var level: Int32 = -30
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level)
        for b in 0..<(padded.count / 480) {
            padded.withUnsafeMutableBufferPointer { _ = speex_preprocess_run(state, $0.baseAddress! + b * 480) }
        }
        XCTAssertTrue(output == Array(padded[480..<(480 + frames)]), "sample i of the output is the filter's answer to sample i of the input")
        XCTAssertEqual(TestAudio.estimateLag(reference: clean, processed: output, maxLag: 2000), 0)
    }

    func testDelayingVideoFilterKeepsEveryFrameInPlace() throws {
        let dir = temporaryDirectory()
        let plugin = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/host_plugin.c"),
                                        into: dir, name: "host_plugin.so")
        let input = try makeY4M(dir, frames: 6)
        let out = dir.appendingPathComponent("out.y4m").path
        let run = try rawfx("run", "--plugin-path", plugin, "--vf", "vdelay=frames=3", input, out)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try frames(of: out), try frames(of: input), "the first 3 outputs are dropped and the last 3 drained")
    }

    func testPluginLogLinesReachStderrAndThreadsAreChecked() throws {
        let dir = temporaryDirectory()
        let plugin = try compileCPlugin(repositoryRoot.appendingPathComponent("Tests/Fixtures/host_plugin.c"),
                                        into: dir, name: "host_plugin.so")
        let input = try makeY4M(dir, frames: 3)
        let out = dir.appendingPathComponent("out.y4m").path
        let run = try rawfx("run", "--threads", "2", "--plugin-path", plugin, "--vf", "hostprobe=log_at=2:slices=4", input, out)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stderrLines, ["rawfx: hostprobe: frame 2"])
        // Every slice job ran as the process thread (the probe writes the count into Y[0][3]).
        XCTAssertEqual(try frames(of: out).map { $0[3] }, [4, 4, 4])
        assertOneErrorLine(try rawfx("run", "--threads", "0", input, out), "--threads 0", "1 to 64")
    }

    func testVerboseShowsInfoLinesThatAreQuietByDefault() throws {
        let dir = temporaryDirectory()
        // The fixture plugin logs "init" at info from its init, naming its file.
        let plugin = try compileCPlugin(fixtureSource, into: dir, name: "stamp.so")
        let input = try makeY4M(dir, frames: 2)
        let out = dir.appendingPathComponent("out.y4m").path
        let quiet = try rawfx("run", "--plugin-path", plugin, "--vf", "stamp=value=3", input, out)
        XCTAssertEqual(quiet.status, 0, quiet.stderr)
        XCTAssertEqual(quiet.stderr, "", "warnings and errors only by default")
        // The thread count it chose comes first: the online cores up to 8 by default.
        let cores = min(max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1), 8)
        let threadsLine = "rawfx: run: threads: \(cores) (--threads, else RAWFX_THREADS, else the online cores up to 8)"
        for flags in [["-v"], ["-vv"], ["-v", "-v"]] {
            let verbose = try runProgram(rawfxBinary, ["run"] + flags + ["--plugin-path", plugin, "--vf", "stamp=value=3", input, out],
                                         environment: [PluginRegistry.environmentVariable: nil, "RAWFX_THREADS": nil])
            XCTAssertEqual(verbose.status, 0, verbose.stderr)
            XCTAssertEqual(verbose.stderrLines, [Substring(threadsLine), "rawfx: stamp.so: init"], "\(flags)")
        }
        // RAWFX_THREADS, then --threads, override the default.
        let fromEnvironment = try runProgram(rawfxBinary, ["run", "-v", "--plugin-path", plugin, "--vf", "stamp=value=3", input, out],
                                             environment: [PluginRegistry.environmentVariable: nil, "RAWFX_THREADS": "3"])
        XCTAssertEqual(fromEnvironment.stderrLines.first, "rawfx: run: threads: 3 (--threads, else RAWFX_THREADS, else the online cores up to 8)")
        let fromFlag = try runProgram(rawfxBinary, ["run", "-v", "--threads", "1", "--plugin-path", plugin, "--vf", "stamp=value=3", input, out],
                                      environment: [PluginRegistry.environmentVariable: nil, "RAWFX_THREADS": "3"])
        XCTAssertEqual(fromFlag.stderrLines.first, "rawfx: run: threads: 1 (--threads, else RAWFX_THREADS, else the online cores up to 8)")
    }

    func testMetricsPrintEveryFiltersFramesAndTimesThroughSwiftMetrics() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, width: 32, height: 16, frames: 7)
        let out = dir.appendingPathComponent("out.y4m").path
        let run = try rawfx("run", "--vf", "null,copy", "--metrics-json", input, out)
        XCTAssertEqual(run.status, 0, run.stderr)
        let entries = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stderr.utf8)) as? [[String: Any]])
        func entry(_ label: String, _ filter: String) -> [String: Any]? {
            entries.first { $0["label"] as? String == label && ($0["dimensions"] as? [String: String])?["filter"] == filter }
        }
        for (stage, filter) in ["null", "copy"].enumerated() {
            let frames = try XCTUnwrap(entry("rawfx_filter_frames_total", filter), run.stderr)
            XCTAssertEqual(frames["value"] as? Double, 7)
            XCTAssertEqual(frames["dimensions"] as? [String: String], ["chain": "video", "filter": filter, "stage": "\(stage)"])
            XCTAssertEqual(entry("rawfx_filter_errors_total", filter)?["value"] as? Double, 0)
            let timer = try XCTUnwrap(entry("rawfx_filter_process_duration", filter))
            XCTAssertEqual(timer["count"] as? Int, 7)
            let p50 = try XCTUnwrap(timer["p50_ns"] as? Int), p99 = try XCTUnwrap(timer["p99_ns"] as? Int)
            XCTAssertTrue(0 < p50 && p50 <= p99 && p99 <= (timer["max_ns"] as? Int ?? 0), "\(timer)")
        }
        // Text, one line per series: 0.5 s at 16 kHz is read in 5 chunks of 100 ms, one gain call each.
        let (wav, _) = try makeWAV(dir, rate: 16000, seconds: 0.5)
        let text = try rawfx("run", "--af", "gain=db=-6", "--metrics", wav, dir.appendingPathComponent("o.wav").path)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stderrLines.contains("rawfx_filter_frames_total{chain=audio,filter=gain,stage=0} 5"), text.stderr)
        XCTAssertTrue(text.stderrLines.contains { $0.hasPrefix("rawfx_filter_process_duration{chain=audio,filter=gain,stage=0} count=5 p50_ms=") },
                      text.stderr)
    }
}

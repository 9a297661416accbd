#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// `rawfx run` and what it does to files: memory bounded by the data, outputs that never lose
/// data (written beside the target and renamed), same-file checks, FIFOs, closed pipes.
final class OutputSafetyTests: XCTestCase, RawfxCommandTesting {
    override func setUpWithError() throws { try requireRawfx() }

    /// Runs rawfx and returns its status, its peak resident set (KiB, from wait4 for that one
    /// child, so other children of the test process do not count) and its stderr.
    func measured(_ arguments: [String]) throws -> (status: Int32, maxRSSKiB: Int, stderr: String) {
        let err = temporaryDirectory().appendingPathComponent("stderr").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([rawfxBinary.path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, rawfxBinary.path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw NSError(domain: "posix_spawn", code: Int(spawned)) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), Int(usage.ru_maxrss),
                (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    func write(_ text: String, to dir: URL, _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The temporary files rawfx left in `dir` (there should be none once it ended).
    func leftovers(_ dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".rawfx-") }
    }

    // MARK: - Memory bounded by data

    /// `rawfx run [options] --vf copy,copy,copy` (three out-of-place stages) over a Y4M file of
    /// `text`, measured, into `dir`/out.y4m. `extraRSSKiB` is its peak RSS above that of the same
    /// run over one 64x48 frame, so the bound holds in any build (sanitizers raise the base).
    func measuredRun(_ text: String, _ options: [String] = [], in dir: URL) throws -> (status: Int32, extraRSSKiB: Int, stderr: String) {
        let input = try write(text, to: dir, "in.y4m")
        let out = dir.appendingPathComponent("out.y4m").path
        let run = try measured(["run"] + options + ["--vf", "copy,copy,copy", input, out])
        let small = try makeY4M(temporaryDirectory(), frames: 1)
        let base = try measured(["run", "--vf", "copy,copy,copy", small, temporaryDirectory().appendingPathComponent("o.y4m").path])
        XCTAssertEqual(base.status, 0, base.stderr)
        return (run.status, run.maxRSSKiB - base.maxRSSKiB, run.stderr)
    }

    /// Less than one 8K frame (47 MiB): what a header alone may cost.
    let noFrameKiB = 30_000

    func testAHugeHeaderIsRefusedWithTheLimitAndTheOptionAndCostsNoMemory() throws {
        let dir = temporaryDirectory()
        // The 24-byte header of the fuzzing report: 32768x32768, no frame.
        let run = try measuredRun("YUV4MPEG2 W32768 H32768\n", in: dir)
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.stderr)
        for fragment in ["rawfx: error: ", "in.y4m", "32768x32768", "67108864 pixels (8192x8192)", "--max-frame-size"] {
            XCTAssertTrue(run.stderr.contains(fragment), "'\(fragment)' not in: \(run.stderr)")
        }
        XCTAssertLessThan(run.extraRSSKiB, noFrameKiB, "peak RSS in KiB above a tiny run's (a 32768x32768 buffer is 1.5 GiB)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.y4m").path))
        XCTAssertEqual(try leftovers(dir), [])
    }

    func testAHeaderWithoutFramesAllocatesNoFrame() throws {
        let dir = temporaryDirectory()
        let out = dir.appendingPathComponent("out.y4m").path
        // 8K is within the default limit: one frame is 47 MiB, one per out-of-place stage.
        let run = try measuredRun("YUV4MPEG2 W7680 H4320 F25:1\n", in: dir)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertLessThan(run.extraRSSKiB, noFrameKiB, "peak RSS in KiB above a tiny run's")
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "YUV4MPEG2 W7680 H4320 F25:1\n", "a valid empty stream")

        // A FRAME line and nothing after it: still no frame of memory, and a truncation error.
        let cut = try measuredRun("YUV4MPEG2 W7680 H4320 F25:1\nFRAME\n", in: dir)
        XCTAssertEqual(cut.status, 1)
        XCTAssertTrue(cut.stderr.contains("frame 1 is missing 49766400 of its 49766400 bytes"), cut.stderr)
        XCTAssertLessThan(cut.extraRSSKiB, noFrameKiB, "peak RSS in KiB above a tiny run's")

        // Raising the limit lets the 32768x32768 header through, still at no cost.
        let raised = try measuredRun("YUV4MPEG2 W32768 H32768\n", ["--max-frame-size", "32768x32768"], in: dir)
        XCTAssertEqual(raised.status, 0, raised.stderr)
        XCTAssertLessThan(raised.extraRSSKiB, noFrameKiB, "peak RSS in KiB above a tiny run's")
    }

    func testMaxFrameSizeTakesWxHOrPixels() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, width: 64, height: 48, frames: 2)
        let out = dir.appendingPathComponent("out.y4m").path
        XCTAssertEqual(try rawfx("run", "--max-frame-size", "64x48", input, out).status, 0)
        XCTAssertEqual(try rawfx("run", "--max-frame-size", "3072", input, out).status, 0)
        assertOneErrorLine(try rawfx("run", "--max-frame-size", "3071", input, out),
                           "in.y4m: the header declares 64x48 (3072 pixels), more than the limit of 3071 pixels", "--max-frame-size")
        for bad in ["abc", "64x", "0", "-5", "64x48x2", "99999999999x99999999999"] {
            assertOneErrorLine(try rawfx("run", "--max-frame-size=\(bad)", input, out), "--max-frame-size '\(bad)'")
        }
    }

    // MARK: - Outputs never lose data

    func testAnExistingOutputIsUntouchedWhenNothingValidWasProduced() throws {
        let dir = temporaryDirectory()
        let precious = Data("precious bytes\n".utf8)
        // A Y4M cut inside its first frame, and a WAV whose data chunk ends before one sample frame.
        var y4m = try Data(contentsOf: URL(fileURLWithPath: try makeY4M(dir, frames: 1)))
        y4m.removeLast(10)
        let cutY4M = dir.appendingPathComponent("cut.y4m")
        try y4m.write(to: cutY4M)
        let (wav, _) = try makeWAV(dir, channels: 2)
        let cutWAV = dir.appendingPathComponent("cut.wav")
        try Data(try Data(contentsOf: URL(fileURLWithPath: wav)).prefix(44 + 3)).write(to: cutWAV)
        for (input, name) in [(cutY4M.path, "out.y4m"), (cutWAV.path, "out.wav")] {
            let out = dir.appendingPathComponent(name)
            try precious.write(to: out)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: out.path)
            let run = try rawfx("run", input, out.path)
            assertOneErrorLine(run, "\(name) was not written (an existing file is left as it was)")
            XCTAssertEqual(try Data(contentsOf: out), precious, "\(name) is byte for byte what it was")
            XCTAssertEqual(try leftovers(dir), [])
        }
        // A whole run replaces it, keeping its permission bits.
        let out = dir.appendingPathComponent("out.y4m")
        XCTAssertEqual(try rawfx("run", try makeY4M(dir, name: "good.y4m", frames: 2), out.path).status, 0)
        XCTAssertEqual(try frames(of: out.path).count, 2)
        XCTAssertEqual((try FileManager.default.attributesOfItem(atPath: out.path)[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }

    /// Starts `rawfx run --vf copy FIFO out` on a new FIFO in `dir` and returns it with the
    /// FIFO's writing end; nil (after a test failure) if rawfx never opened the FIFO.
    func startOnFIFO(_ dir: URL, output: URL) throws -> (Process, FileHandle)? {
        let fifo = dir.appendingPathComponent("live.y4m").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let process = Process()
        process.executableURL = rawfxBinary
        process.arguments = ["run", "--vf", "copy", fifo, output.path]
        try process.run()
        // Non-blocking until rawfx has opened its end (ENXIO before), so a rawfx that fails
        // early cannot hang the test; then blocking writes.
        var fd: Int32 = -1
        for _ in 0..<500 where fd < 0 {
            fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd < 0 { usleep(20_000) }
        }
        XCTAssertGreaterThanOrEqual(fd, 0, "rawfx opened the FIFO")
        guard fd >= 0 else { process.terminate(); return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return (process, FileHandle(fileDescriptor: fd, closeOnDealloc: true))
    }

    /// Waits (up to 4 s) for rawfx's temporary file to appear in `dir`.
    func awaitTemporary(_ dir: URL) throws -> [String] {
        var temporary: [String] = []
        for _ in 0..<200 where temporary.isEmpty {
            usleep(20_000)
            temporary = try leftovers(dir)
        }
        return temporary
    }

    func testTheTargetKeepsItsContentUntilTheNewFileIsComplete() throws {
        // The input is a FIFO fed by this test, so the run can be watched half way.
        let dir = temporaryDirectory()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: try makeY4M(dir, frames: 3)))
        let frameBytes = 6 + 64 * 48 * 3 / 2
        let out = dir.appendingPathComponent("out.y4m")
        let precious = Data("old content\n".utf8)
        try precious.write(to: out)
        guard let (process, feed) = try startOnFIFO(dir, output: out) else { return }
        try feed.write(contentsOf: bytes.prefix(bytes.count - frameBytes))  // header and 2 frames
        let temporary = try awaitTemporary(dir)
        XCTAssertEqual(temporary.count, 1, "rawfx writes beside the target")
        XCTAssertTrue(temporary.first?.hasPrefix(".out.y4m.rawfx-") == true, "\(temporary)")
        XCTAssertEqual(try Data(contentsOf: out), precious, "the target is untouched while the run goes on")
        try feed.write(contentsOf: bytes.suffix(frameBytes))
        try feed.close()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try Data(contentsOf: out), bytes, "renamed over the target at the end")
        XCTAssertEqual(try leftovers(dir), [])
    }

    func testAKilledRunLeavesTheTargetAsItWasAndNothingBeside() throws {
        let dir = temporaryDirectory()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: try makeY4M(dir, frames: 3)))
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
            let out = dir.appendingPathComponent("out.y4m")
            let precious = Data("old content\n".utf8)
            try precious.write(to: out)
            guard let (process, feed) = try startOnFIFO(dir, output: out) else { return }
            try feed.write(contentsOf: bytes.prefix(bytes.count / 2))
            XCTAssertEqual(try awaitTemporary(dir).count, 1)
            kill(process.processIdentifier, sig)
            process.waitUntilExit()
            try feed.close()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, "ended by signal \(sig), as it was sent")
            XCTAssertEqual(process.terminationStatus, sig)
            XCTAssertEqual(try Data(contentsOf: out), precious, "signal \(sig): the target is as it was")
            XCTAssertEqual(try leftovers(dir), [], "signal \(sig): the temporary file is removed")
            try FileManager.default.removeItem(atPath: dir.appendingPathComponent("live.y4m").path)
        }
    }

    func testAWriteErrorLeavesAValidFileOfWholeFramesWithItsSizesPatched() throws {
        if rawfx_built_with_sanitizer() != 0 {
            // The sanitizer runtime in a rawfx built beside the tests writes files of its own;
            // under `ulimit -f` it dies of SIGBUS before rawfx's code runs.
            throw XCTSkip("ulimit -f kills the sanitizer runtime itself (SIGBUS under ThreadSanitizer)")
        }
        let dir = temporaryDirectory()
        // `ulimit -f` (1 KiB blocks) makes writes past 100 KiB fail with EFBIG.
        let (wav, samples) = try makeWAV(dir, rate: 48000, channels: 2, seconds: 2)
        let outWAV = dir.appendingPathComponent("out.wav").path
        let audio = try shell("ulimit -f 100; \"$RAWFX\" run --af gain '\(wav)' '\(outWAV)'")
        assertOneErrorLine(audio, "cannot write \(outWAV): File too large", "wrote 25589 frames")
        let data = try Data(contentsOf: URL(fileURLWithPath: outWAV))
        XCTAssertEqual(data.count, 44 + 25589 * 4, "cut to whole sample frames")
        func le32(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24 }
        XCTAssertEqual(le32(4), data.count - 8, "RIFF size patched")
        XCTAssertEqual(le32(40), data.count - 44, "data size patched")
        XCTAssertTrue(try WAVReader(path: outWAV).readAll() == Array(samples.prefix(25589 * 2)))

        let y4m = try makeY4M(dir, width: 320, height: 240, frames: 5)
        let outY4M = dir.appendingPathComponent("out.y4m").path
        let video = try shell("ulimit -f 300; \"$RAWFX\" run --vf copy '\(y4m)' '\(outY4M)'")
        assertOneErrorLine(video, "cannot write \(outY4M): File too large", "wrote 2 complete frames")
        XCTAssertEqual(try frames(of: outY4M), Array(try frames(of: y4m).prefix(2)))
        XCTAssertEqual(try leftovers(dir), [])
    }

    func testOutputsAndSnapshotsMayNotBeTheInput() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 3)
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let link = dir.appendingPathComponent("link.y4m").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: input)
        let out = dir.appendingPathComponent("out.y4m").path
        assertOneErrorLine(try rawfx("run", input, link), "the output '\(link)' is the input file")
        assertOneErrorLine(try rawfx("run", "--snapshot", "0:\(input)", input, out), "--snapshot 0:\(input) is the input file")
        assertOneErrorLine(try rawfx("run", "--snapshot", "1:\(link)", input, out), "is the input file")
        assertOneErrorLine(try rawfx("run", "--snapshot", "0:\(out)", input, out), "--snapshot 0:\(out) is the output file")
        let dotted = dir.appendingPathComponent("sub/../out.y4m").path
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: true)
        assertOneErrorLine(try rawfx("run", "--snapshot", "0:\(dotted)", input, out), "is the output file")
        // Standard output appended to the input: refused, not grown without end.
        let appended = try shell("ulimit -f 20000; timeout 20 \"$RAWFX\" run '\(input)' - >> '\(input)'")
        assertOneErrorLine(appended, "standard output is the input file \(input)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: input)), original, "the input is intact")
        let (wav, _) = try makeWAV(dir)
        let wavBytes = try Data(contentsOf: URL(fileURLWithPath: wav))
        assertOneErrorLine(try shell("ulimit -f 20000; timeout 20 \"$RAWFX\" run --af gain '\(wav)' - >> '\(wav)'"), "standard output is the input file")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: wav)), wavBytes, "the WAV is intact")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
    }

    func testSnapshotReplacesAnExistingFileAndFollowsALinkedOutput() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 2)
        let png = dir.appendingPathComponent("shot.png")
        try Data("old".utf8).write(to: png)
        let real = dir.appendingPathComponent("real.y4m").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: real))
        let link = dir.appendingPathComponent("link.y4m").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let run = try rawfx("run", "--snapshot", "1:\(png.path)", input, link)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(Array(try Data(contentsOf: png).prefix(4)), [0x89, 0x50, 0x4E, 0x47])
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link), real, "the link stays a link")
        XCTAssertEqual(try frames(of: real), try frames(of: input))
        XCTAssertEqual(try leftovers(dir), [])
    }

    // MARK: - FIFOs

    func testFIFOsOnTheCommandLineAreReadAndWrittenAsStreams() throws {
        let dir = temporaryDirectory()
        let input = try makeY4M(dir, frames: 4)
        let (wav, samples) = try makeWAV(dir, channels: 2)
        let videoFIFO = dir.appendingPathComponent("video.y4m").path, audioFIFO = dir.appendingPathComponent("audio").path
        let outFIFO = dir.appendingPathComponent("sink").path
        for fifo in [videoFIFO, audioFIFO, outFIFO] { XCTAssertEqual(mkfifo(fifo, 0o600), 0) }
        let out = dir.appendingPathComponent("out.y4m").path
        // Whatever rawfx does, the helpers blocked on a FIFO are let go (an O_RDWR open
        // completes theirs), so a failure cannot hang the test.
        func release(_ fifos: String...) -> String { fifos.map { "( exec 3<>'\($0)' )" }.joined(separator: "; ") }
        let video = try shell("cat '\(input)' > '\(videoFIFO)' & timeout 20 \"$RAWFX\" run --vf copy '\(videoFIFO)' '\(out)'; s=$?; \(release(videoFIFO)); wait; exit $s")
        XCTAssertEqual(video.status, 0, video.stderr)
        XCTAssertEqual(try frames(of: out), try frames(of: input))
        // A WAV on a FIFO with no extension (sniffed), to a FIFO with no extension (the input's format).
        let piped = dir.appendingPathComponent("piped.wav").path
        let audio = try shell("cat '\(wav)' > '\(audioFIFO)' & cat '\(outFIFO)' > '\(piped)' & timeout 20 \"$RAWFX\" run --af gain '\(audioFIFO)' '\(outFIFO)'; s=$?; \(release(audioFIFO, outFIFO)); wait; exit $s")
        XCTAssertEqual(audio.status, 0, audio.stderr)
        XCTAssertEqual(try WAVReader(path: piped).readAll(), samples)
        XCTAssertEqual(try leftovers(dir), [])
    }
}

import CLibPNG
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Y4M, WAV, PNG and the generated test signals (RawFXMedia), without the command.
final class MediaTests: XCTestCase {
    // MARK: - Helpers

    /// Writes `frames` pattern frames to a Y4M file with `header`, returns the path and the buffers.
    private func makeY4M(_ header: Y4MHeader, frames: Int, in dir: URL, name: String = "in.y4m",
                         parameters: [String] = []) throws -> (String, [VideoBuffer]) {
        let path = dir.appendingPathComponent(name).path
        let writer = try Y4MWriter(path: path, header: header)
        var buffers: [VideoBuffer] = []
        for i in 0..<frames {
            let b = patternBuffer(width: header.width, height: header.height, range: header.format.colorRange,
                                  extraStride: 3, seed: i)
            try writer.write(b.frame, parameters: i < parameters.count ? parameters[i] : "")
            buffers.append(b)
        }
        try writer.close()
        return (path, buffers)
    }

    private func assertSamePicture(_ a: VideoFrame, _ b: VideoFrame, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.width, b.width, file: file, line: line)
        XCTAssertEqual(a.height, b.height, file: file, line: line)
        for p in 0..<3 { XCTAssertEqual(planeBytes(a, p), planeBytes(b, p), "plane \(p)", file: file, line: line) }
    }

    private func y4mError(_ text: String) -> MediaError? {
        let dir = temporaryDirectory()
        let path = dir.appendingPathComponent("x.y4m").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        do {
            let r = try Y4MReader(path: path)
            while try r.readFrame() != nil {}
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Y4M

    func testY4MRoundTripOddSizeKeepsHeaderAndPictures() throws {
        let dir = temporaryDirectory()
        let header = Y4MHeader(width: 33, height: 17, frameRate: Y4MRatio(30000, 1001), interlace: "t",
                               pixelAspect: Y4MRatio(16, 15), chroma: "420mpeg2", colorRange: nil,
                               extensions: ["XYSCSS=420MPEG2", "XFOO=bar"])
        let (path, buffers) = try makeY4M(header, frames: 3, in: dir)
        XCTAssertEqual(header.frameByteCount, 33 * 17 + 2 * 17 * 9)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        XCTAssertEqual(size, header.line.utf8.count + 3 * (6 + header.frameByteCount), "frames are tightly packed")

        let reader = try Y4MReader(path: path)
        XCTAssertEqual(reader.header, header)
        XCTAssertEqual(reader.estimatedFrameCount, 3)
        for i in 0..<3 {
            let frame = try XCTUnwrap(reader.readFrame())
            assertSamePicture(frame, buffers[i].frame)
            XCTAssertEqual(frame.timestampMicroseconds, Int64(i) * 1_000_000 * 1001 / 30000)
        }
        XCTAssertNil(try reader.readFrame(), "a clean end of stream")
        XCTAssertNil(try reader.readFrame(), "and it stays at the end")
        XCTAssertEqual(reader.framesRead, 3)
    }

    func testY4MAcceptsEvery420ChromaTag() throws {
        for tag in ["", " C420", " C420jpeg", " C420mpeg2", " C420paldv"] {
            let text = "YUV4MPEG2 W4 H2 F25:1\(tag)\nFRAME\n" + String(repeating: "A", count: 8 + 2 + 2)
            let dir = temporaryDirectory()
            let path = dir.appendingPathComponent("c.y4m").path
            _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            let reader = try Y4MReader(path: path)
            XCTAssertEqual(reader.header.chroma, tag.isEmpty ? nil : String(tag.dropFirst(2)))
            XCTAssertNotNil(try reader.readFrame(), tag)
            XCTAssertNil(try reader.readFrame(), tag)
        }
    }

    func testY4MRejectsOtherChromaNamingTheTag() {
        for tag in ["C444", "C422", "C420p10", "Cmono", "C444alpha", "C411"] {
            let error = y4mError("YUV4MPEG2 W4 H2 F25:1 \(tag)\n")
            XCTAssertEqual(error, .unsupportedChroma(name: temporaryName(error), tag: tag))
            XCTAssertTrue("\(error!)".contains(tag), "\(error!)")
        }
    }

    private func temporaryName(_ error: MediaError?) -> String {
        if case .unsupportedChroma(let name, _)? = error { return name }
        return "?"
    }

    func testY4MColorRange() throws {
        let dir = temporaryDirectory()
        XCTAssertEqual(try Y4MHeader.parse("YUV4MPEG2 W2 H2 XCOLORRANGE=FULL").colorRange, .full)
        XCTAssertEqual(try Y4MHeader.parse("YUV4MPEG2 W2 H2 XCOLORRANGE=LIMITED").colorRange, .limited)
        XCTAssertNil(try Y4MHeader.parse("YUV4MPEG2 W2 H2").colorRange)
        XCTAssertEqual(try Y4MHeader.parse("YUV4MPEG2 W2 H2").format.colorRange, .limited)
        XCTAssertThrowsError(try Y4MHeader.parse("YUV4MPEG2 W2 H2 XCOLORRANGE=PURPLE"))

        let full = Y4MHeader(format: VideoFormat(width: 6, height: 4, colorRange: .full))
        XCTAssertTrue(full.line.contains(" XCOLORRANGE=FULL"), full.line)
        XCTAssertFalse(Y4MHeader(format: VideoFormat(width: 6, height: 4)).line.contains("XCOLORRANGE"))
        let (path, _) = try makeY4M(full, frames: 1, in: dir)
        let reader = try Y4MReader(path: path)
        XCTAssertEqual(reader.header.colorRange, .full)
        XCTAssertEqual(try reader.readFrame()?.format.colorRange, .full)
    }

    func testY4MFrameParametersRoundTrip() throws {
        let dir = temporaryDirectory()
        let (path, _) = try makeY4M(Y4MHeader(width: 4, height: 4), frames: 3, in: dir, parameters: ["Ixyz", "", "XFOO=1 Ib"])
        let reader = try Y4MReader(path: path)
        var seen: [String] = []
        while try reader.readFrame() != nil { seen.append(reader.frameParameters) }
        XCTAssertEqual(seen, ["Ixyz", "", "XFOO=1 Ib"])
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        XCTAssertTrue(text.contains("FRAME Ixyz\n"))
    }

    func testY4MTruncatedLastFrameIsToldApartFromCleanEnd() throws {
        let dir = temporaryDirectory()
        let header = Y4MHeader(width: 8, height: 6)
        let (path, buffers) = try makeY4M(header, frames: 3, in: dir)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data.removeLast(10)
        try data.write(to: URL(fileURLWithPath: path))
        let reader = try Y4MReader(path: path)
        assertSamePicture(try XCTUnwrap(reader.readFrame()), buffers[0].frame)
        assertSamePicture(try XCTUnwrap(reader.readFrame()), buffers[1].frame)
        XCTAssertThrowsError(try reader.readFrame()) { error in
            XCTAssertEqual(error as? MediaError, .truncatedFrame(name: path, frame: 3, completeFrames: 2, missingBytes: 10,
                                                                 expectedBytes: header.frameByteCount))
            XCTAssertTrue("\(error)".contains("frame 3 is missing 10 of its 72 bytes"), "\(error)")
        }

        // The input ends inside a FRAME line.
        let cut = header.line + "FRAME\n" + String(repeating: "x", count: 72) + "FRA"
        XCTAssertEqual(y4mError(cut).map { if case .truncatedFrame(_, let f, let c, _, _) = $0 { return "\(f) \(c)" } else { return "\($0)" } },
                       "2 1")
        // Garbage where a frame should start.
        let garbage = header.line + "FRAME\n" + String(repeating: "x", count: 72) + "JUNK\n"
        guard case .badFrameHeader(_, 2, let offset, let found)? = y4mError(garbage) else {
            return XCTFail("expected a bad frame header, got \(String(describing: y4mError(garbage)))")
        }
        XCTAssertEqual(offset, Int64(header.line.utf8.count + 6 + 72))
        XCTAssertEqual(found, "'J'")
    }

    func testY4MRejectsGarbageAndBadHeaders() {
        XCTAssertTrue("\(y4mError("RIFF....WAVE")!)".contains("not a Y4M stream"))
        XCTAssertTrue("\(y4mError("")!)".contains("an empty input"))
        XCTAssertTrue("\(y4mError("YUV4MPEG2 H2 F25:1\n")!)".contains("no width"))
        XCTAssertTrue("\(y4mError("YUV4MPEG2 W-3 H2\n")!)".contains("width"))
        XCTAssertTrue("\(y4mError("YUV4MPEG2 W2 H2 Fx\n")!)".contains("frame rate"))
        XCTAssertTrue("\(y4mError("YUV4MPEG2 W2 H2")!)".contains("ends inside the header"))
    }

    func testY4MReadsFromAPipeInSmallPieces() throws {
        let header = Y4MHeader(width: 64, height: 36)
        var stream = Data(header.line.utf8)
        var buffers: [VideoBuffer] = []
        for i in 0..<4 {
            let b = patternBuffer(width: 64, height: 36, seed: i)
            buffers.append(b)
            stream += Data("FRAME\n".utf8)
            var packed = [UInt8](repeating: 0, count: header.frameByteCount)
            b.frame.pack(into: &packed)
            stream += Data(packed)
        }
        let pipe = Pipe()
        let bytes = stream
        let writer = Thread {
            let stream = bytes
            var offset = 0
            while offset < stream.count {  // odd-sized pieces
                let n = min(997, stream.count - offset)
                pipe.fileHandleForWriting.write(stream.subdata(in: offset..<offset + n))
                offset += n
            }
            try? pipe.fileHandleForWriting.close()
        }
        writer.start()
        let reader = try Y4MReader(MediaInput(fileHandle: pipe.fileHandleForReading, name: "pipe"))
        XCTAssertNil(reader.estimatedFrameCount, "no length on a pipe")
        var n = 0
        while let frame = try reader.readFrame() {
            assertSamePicture(frame, buffers[n].frame)
            n += 1
        }
        XCTAssertEqual(n, 4)
    }

    func testY4MReadAndWriteAllocateNothingPerFrame() throws {
        guard rawfx_allocation_counter_active() != 0 else { throw XCTSkip("allocation counter inactive") }
        let dir = temporaryDirectory()
        let header = Y4MHeader(width: 320, height: 180)
        let (path, _) = try makeY4M(header, frames: 8, in: dir)
        let reader = try Y4MReader(path: path)
        let writer = try Y4MWriter(path: dir.appendingPathComponent("out.y4m").path, header: header)
        try writer.write(XCTUnwrap(reader.readFrame()))
        let before = rawfx_thread_allocation_count()
        var count = 0
        while let frame = try reader.readFrame() {
            try writer.write(frame)
            count += 1
        }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "read + write of \(count) frames allocated")
        XCTAssertEqual(count, 7)
    }

    func testY4MWriterRefusesAFrameOfAnotherSize() throws {
        let dir = temporaryDirectory()
        let writer = try Y4MWriter(path: dir.appendingPathComponent("o.y4m").path, header: Y4MHeader(width: 8, height: 8))
        let small = patternBuffer(width: 8, height: 6)
        XCTAssertThrowsError(try withExtendedLifetime(small) { try writer.write(small.frame) }) { error in
            XCTAssertTrue("\(error)".contains("8x6"), "\(error)")
        }
    }

    // MARK: - WAV

    private func writeWAV(_ samples: [Int16], format: AudioFormat, to path: String) throws {
        let writer = try WAVWriter(path: path, format: format)
        try writer.write(samples)
        try writer.close()
    }

    func testWAVRoundTripMonoStereoAndSixChannels() throws {
        let dir = temporaryDirectory()
        for (rate, channels) in [(8000, 1), (44100, 2), (48000, 6), (22050, 3)] {
            let format = AudioFormat(sampleRate: rate, channels: channels)
            let samples = (0..<(1000 * channels)).map { Int16(truncatingIfNeeded: $0 &* 7919) }
            let path = dir.appendingPathComponent("r\(rate)-\(channels).wav").path
            try writeWAV(samples, format: format, to: path)
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(data.count, (channels > 2 ? 68 : 44) + samples.count * 2)
            XCTAssertEqual(le32(data, 4), UInt32(data.count - 8), "RIFF size patched")
            XCTAssertEqual(le32(data, data.count - samples.count * 2 - 4), UInt32(samples.count * 2), "data size patched")
            let reader = try WAVReader(path: path)
            XCTAssertEqual(reader.format, format)
            XCTAssertEqual(reader.frameCount, 1000)
            XCTAssertEqual(try reader.readAll(), samples)
        }
    }

    private func le32(_ d: Data, _ i: Int) -> UInt32 {
        UInt32(d[i]) | UInt32(d[i + 1]) << 8 | UInt32(d[i + 2]) << 16 | UInt32(d[i + 3]) << 24
    }

    func testWAVToAPipeHasUnknownSizesAndReadsBack() throws {
        let pipe = Pipe()
        let format = AudioFormat(sampleRate: 16000, channels: 1)
        let samples = (0..<5000).map { Int16(truncatingIfNeeded: $0 * 13) }
        let thread = Thread {
            let w = try! WAVWriter(MediaOutput(fileHandle: pipe.fileHandleForWriting, name: "pipe"), format: format)
            try! w.write(samples)
            try! w.close()
            try? pipe.fileHandleForWriting.close()
        }
        thread.start()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        XCTAssertEqual(le32(data, 4), 0xFFFF_FFFF)
        XCTAssertEqual(le32(data, 40), 0xFFFF_FFFF)
        let reader = try WAVReader(MediaInput(fileHandle: try pipeWith(data).fileHandleForReading, name: "pipe"))
        XCTAssertNil(reader.frameCount)
        XCTAssertEqual(try reader.readAll(), samples)
    }

    /// A pipe already holding `data` (closed for writing).
    private func pipeWith(_ data: Data) throws -> Pipe {
        let pipe = Pipe()
        let thread = Thread {
            pipe.fileHandleForWriting.write(data)
            try? pipe.fileHandleForWriting.close()
        }
        thread.start()
        return pipe
    }

    /// A hand-built WAV: RIFF header, the given chunks.
    private func wav(_ chunks: [(String, [UInt8])]) -> Data {
        var body = Data("WAVE".utf8)
        for (id, bytes) in chunks {
            body += Data(id.utf8)
            body += u32(bytes.count)
            body += Data(bytes)
            if bytes.count % 2 == 1 { body.append(0) }
        }
        return Data("RIFF".utf8) + u32(body.count) + body
    }

    private func u32(_ v: Int) -> Data { Data([UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 24) & 0xFF)]) }
    private func u16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }

    private func fmt(tag: Int = 1, channels: Int = 2, rate: Int = 44100, bits: Int = 16, extensibleSubformat: Int? = nil, validBits: Int = 16) -> [UInt8] {
        let block = channels * bits / 8
        var f = u16(extensibleSubformat == nil ? tag : 0xFFFE) + u16(channels) + Array(u32(rate)) + Array(u32(rate * block)) + u16(block) + u16(bits)
        if let sub = extensibleSubformat {
            f += u16(22) + u16(validBits) + Array(u32(3)) + u16(sub)
            f += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        }
        return f
    }

    private func readWAV(_ data: Data) throws -> (AudioFormat, [Int16]) {
        let path = temporaryDirectory().appendingPathComponent("t.wav").path
        _ = FileManager.default.createFile(atPath: path, contents: data)
        let reader = try WAVReader(path: path)
        return (reader.format, try reader.readAll())
    }

    func testWAVSkipsExtraChunksAndReadsExtensiblePCM() throws {
        let pcm: [UInt8] = [1, 0, 2, 0, 3, 0, 0xFF, 0xFF]
        let list = Array("INFOISFT".utf8) + [5, 0, 0, 0] + Array("abcde".utf8)  // odd size: padded
        let (f1, s1) = try readWAV(wav([("LIST", list), ("fmt ", fmt()), ("fact", [0, 0, 0, 0]), ("data", pcm), ("LIST", list)]))
        XCTAssertEqual(f1, AudioFormat(sampleRate: 44100, channels: 2))
        XCTAssertEqual(s1, [1, 2, 3, -1])
        let (f2, s2) = try readWAV(wav([("fmt ", fmt(channels: 1, rate: 16000, extensibleSubformat: 1)), ("data", pcm)]))
        XCTAssertEqual(f2, AudioFormat(sampleRate: 16000, channels: 1))
        XCTAssertEqual(s2, [1, 2, 3, -1])
    }

    func testWAVErrorsSayWhatIsWrong() {
        func message(_ data: Data) -> String {
            do { _ = try readWAV(data); return "no error" } catch { return "\(error)" }
        }
        XCTAssertTrue(message(Data("YUV4MPEG2 W2".utf8)).contains("not a WAV file"))
        XCTAssertTrue(message(Data()).contains("not a WAV file"))
        XCTAssertTrue(message(wav([("fmt ", fmt(bits: 24)), ("data", [])])).contains("24-bit PCM"))
        XCTAssertTrue(message(wav([("fmt ", fmt(tag: 3, bits: 32)), ("data", [])])).contains("floating point"))
        XCTAssertTrue(message(wav([("fmt ", fmt(bits: 32, extensibleSubformat: 3, validBits: 32)), ("data", [])])).contains("floating point"))
        XCTAssertTrue(message(wav([("fmt ", fmt(bits: 24, extensibleSubformat: 1, validBits: 24)), ("data", [])])).contains("24-bit PCM"))
        XCTAssertTrue(message(wav([("fmt ", fmt(tag: 0x55))])).contains("compressed"))
        XCTAssertTrue(message(wav([("data", [0, 0]), ("fmt ", fmt())])).contains("before any fmt"))
        XCTAssertTrue(message(wav([("fmt ", fmt())])).contains("no data chunk"))
    }

    func testWAVTruncatedDataReturnsWhatItHasThenSaysWhere() throws {
        var data = wav([("fmt ", fmt(channels: 1, rate: 8000)), ("data", [UInt8](repeating: 1, count: 400))])
        data.removeLast(101)  // 149.5 samples remain
        let path = temporaryDirectory().appendingPathComponent("t.wav").path
        _ = FileManager.default.createFile(atPath: path, contents: data)
        let reader = try WAVReader(path: path)
        XCTAssertEqual(reader.dataStart, 44)
        let buffer = UnsafeMutablePointer<Int16>.allocate(capacity: 1000)
        defer { buffer.deallocate() }
        XCTAssertEqual(try reader.read(into: buffer, maxFrames: 1000), 149)
        XCTAssertThrowsError(try reader.read(into: buffer, maxFrames: 1000)) { error in
            XCTAssertEqual(error as? MediaError, .truncatedWAVData(name: path, declaredBytes: 400, dataStart: 44, endsAt: 343))
            XCTAssertTrue("\(error)".contains("ends at byte 343"), "\(error)")
        }
    }

    /// A hand-built 16-bit mono WAV whose data chunk declares `declared` bytes and holds `pcm`.
    private func wavDeclaring(_ declared: Int, _ pcm: [UInt8]) -> Data {
        var data = wav([("fmt ", fmt(channels: 1, rate: 8000)), ("data", pcm)])
        data.replaceSubrange(40..<44, with: u32(declared))
        return data
    }

    /// sox writes 0x7FFFF000 on a pipe, others 0 or 0xFFFFFFFF, or a size larger than what the
    /// pipe delivers: the audio ends with the stream, without an error (rawfx wrote all the
    /// audio and then exited 1 with "truncated data chunk").
    func testPipeWAVWithAnyDeclaredSizeReadsToTheEndWithoutAnError() throws {
        let pcm = (0..<600).map { UInt8($0 % 251) }
        let samples = stride(from: 0, to: 600, by: 2).map { Int16(bitPattern: UInt16(pcm[$0]) | UInt16(pcm[$0 + 1]) << 8) }
        for declared in [0, 0xFFFF_FFFF, 0x7FFF_F000, 0x7FFF_FFFF, 601 * 2, 100_000] {
            let reader = try WAVReader(MediaInput(fileHandle: try pipeWith(wavDeclaring(declared, pcm)).fileHandleForReading, name: "pipe"))
            XCTAssertEqual(try reader.readAll(), samples, "declared \(declared)")
        }
        // A smaller size is still where the audio stops (a chunk may follow it).
        let reader = try WAVReader(MediaInput(fileHandle: try pipeWith(wavDeclaring(100, pcm)).fileHandleForReading, name: "pipe"))
        XCTAssertEqual(try reader.readAll(), Array(samples.prefix(50)))
    }

    /// The same through a FIFO named like a file, as `rawfx run in.fifo …` reads it.
    func testFIFOWAVWithSoxPlaceholderReadsToTheEnd() throws {
        let fifo = temporaryDirectory().appendingPathComponent("in.wav").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let data = wavDeclaring(0x7FFF_F000, [1, 0, 2, 0, 3, 0])
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo) { handle.write(data); try? handle.close() }
        }
        writer.start()
        let reader = try WAVReader(path: fifo)
        XCTAssertNil(reader.frameCount)
        XCTAssertEqual(try reader.readAll(), [1, 2, 3])
    }

    /// Files stay strict: the same placeholder in a regular file is a truncated file.
    func testFileWAVWithSoxPlaceholderIsStillTruncated() throws {
        let path = temporaryDirectory().appendingPathComponent("t.wav").path
        _ = FileManager.default.createFile(atPath: path, contents: wavDeclaring(0x7FFF_F000, [1, 0, 2, 0]))
        let reader = try WAVReader(path: path)
        XCTAssertThrowsError(try reader.readAll()) { error in
            XCTAssertEqual(error as? MediaError, .truncatedWAVData(name: path, declaredBytes: 0x7FFF_F000, dataStart: 44, endsAt: 48))
        }
    }

    // MARK: - PNG

    /// Reads a PNG back as RGBA with libpng's simplified API.
    private func readPNG(_ path: String) throws -> RGBAImage {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_file(&image, path) != 0 else { throw CompileFailure(message: "cannot read \(path)") }
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        var pixels = [UInt8](repeating: 0, count: Int(image.width * image.height * 4))
        guard png_image_finish_read(&image, nil, &pixels, 0, nil) != 0 else { throw CompileFailure(message: "cannot decode \(path)") }
        return RGBAImage(width: Int(image.width), height: Int(image.height), pixels: pixels)
    }

    func testPNGOfAFrameUsesBT601InTheFramesRange() throws {
        let dir = temporaryDirectory()
        for range in [ColorRange.limited, .full] {
            let pattern = TestPattern(width: 160, height: 90, colorRange: range)
            let buffer = pattern.frame(0)
            let path = dir.appendingPathComponent("\(range).png").path
            try PNGWriter.write(buffer.frame, to: path)
            let image = try readPNG(path)
            XCTAssertEqual(image.width, 160)
            XCTAssertEqual(image.height, 90)
            func rgb(_ x: Int, _ y: Int) -> [Int] { (0..<3).map { Int(image.pixels[(y * 160 + x) * 4 + $0]) } }
            // 75% bars: white 191, yellow 191/191/0, …, blue 0/0/191 (±2 for rounding).
            let expected: [(Int, [Int])] = [(10, [191, 191, 191]), (30, [191, 191, 0]), (50, [0, 191, 191]),
                                            (70, [0, 191, 0]), (90, [191, 0, 191]), (110, [191, 0, 0]), (130, [0, 0, 191])]
            for (x, colour) in expected {
                let got = rgb(x, 30)
                XCTAssertTrue(zip(got, colour).allSatisfy { abs($0 - $1) <= 2 }, "\(range) bar at x=\(x): \(got) vs \(colour)")
            }
            XCTAssertEqual(rgb(150, 30), [0, 0, 0], "black bar")
        }
    }

    func testPNGOfRGBAKeepsAlphaAndUnwritablePathIsAnError() throws {
        let dir = temporaryDirectory()
        let logo = RGBAImage.rawFXLogo()
        let path = dir.appendingPathComponent("logo.png").path
        try PNGWriter.write(logo, to: path)
        XCTAssertEqual(try readPNG(path), logo)
        XCTAssertThrowsError(try PNGWriter.write(logo, to: "/nonexistent-dir/logo.png")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent-dir/logo.png"), "\(error)")
        }
    }

    // MARK: - Generated signals

    func testTestPatternIsDeterministicMovesAndCountsFrames() throws {
        let a = TestPattern(width: 1920, height: 1080)
        let b = TestPattern(width: 1920, height: 1080)
        let f7 = a.frame(7), g7 = b.frame(7), f8 = a.frame(8)
        for p in 0..<3 { XCTAssertEqual(planeBytes(f7.frame, p), planeBytes(g7.frame, p)) }
        XCTAssertNotEqual(planeBytes(f7.frame, 0), planeBytes(f8.frame, 0))
        XCTAssertNotEqual(a.boxOrigin(frame: 7).x, a.boxOrigin(frame: 8).x)
        for i in [0, 1, 7, 300, 65535] {
            let buffer = a.frame(i)  // keep the buffer alive while its frame is read
            XCTAssertEqual(withExtendedLifetime(buffer) { a.frameIndex(in: buffer.frame) }, i)
        }
        // Odd sizes and strides.
        let odd = TestPattern(width: 33, height: 17, colorRange: .full)
        let buffer = VideoBuffer(format: odd.format, strideAlignment: 1, extraStride: 5)
        odd.render(frame: 3, into: buffer.frame)
        let reference = odd.frame(3)
        withExtendedLifetime(reference) { XCTAssertEqual(planeBytes(buffer.frame, 1), planeBytes(reference.frame, 1)) }
    }

    func testTestPatternRendersWithoutAllocating() throws {
        guard rawfx_allocation_counter_active() != 0 else { throw XCTSkip("allocation counter inactive") }
        let pattern = TestPattern(width: 640, height: 360)
        let buffer = VideoBuffer(format: pattern.format)
        pattern.render(frame: 0, into: buffer.frame)
        let before = rawfx_thread_allocation_count()
        pattern.render(frame: 1, into: buffer.frame)
        pattern.render(frame: 2, into: buffer.frame)
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
    }

    func testLogoIsDeterministicWithSoftEdges() {
        let logo = RGBAImage.rawFXLogo()
        XCTAssertEqual(logo.width, 400)
        XCTAssertEqual(logo.height, 100)
        XCTAssertEqual(logo, RGBAImage.rawFXLogo())
        let alphas = stride(from: 3, to: logo.pixels.count, by: 4).map { logo.pixels[$0] }
        XCTAssertEqual(alphas[0], 0, "the plate's rounded corner is transparent")
        XCTAssertTrue(alphas.contains(255), "solid letters")
        XCTAssertTrue(alphas.contains { $0 > 130 && $0 < 250 }, "soft edges")
        let small = RGBAImage.rawFXLogo(width: 120, height: 30)
        XCTAssertEqual(small.pixels.count, 120 * 30 * 4)
    }

    func testSpeechNoiseAndSNR() {
        let rate = 16000
        let speech = TestAudio.speech(sampleRate: rate, seconds: 3, seed: 1)
        XCTAssertEqual(speech.count, 3 * rate)
        XCTAssertEqual(speech, TestAudio.speech(sampleRate: rate, seconds: 3, seed: 1))
        XCTAssertNotEqual(speech, TestAudio.speech(sampleRate: rate, seconds: 3, seed: 9))
        let peak = speech.map { abs(Int($0)) }.max()!
        XCTAssertEqual(Double(peak) / 32767, 0.5, accuracy: 0.01)
        // Pauses: some 20 ms windows are silent, most are not.
        let window = rate / 50
        let powers = stride(from: 0, to: speech.count - window, by: window).map { TestAudio.power(Array(speech[$0..<($0 + window)])) }
        let silent = powers.filter { $0 < 1 }.count
        XCTAssertGreaterThan(silent, powers.count / 20)
        XCTAssertLessThan(silent, powers.count / 2)

        for snr in [0.0, 5, 20] {
            let noisy = TestAudio.addNoise(to: speech, snr: snr, seed: 3)
            XCTAssertEqual(TestAudio.snr(reference: speech, processed: noisy), snr, accuracy: 0.2)
            XCTAssertEqual(noisy, TestAudio.addNoise(to: speech, snr: snr, seed: 3))
        }
        XCTAssertEqual(TestAudio.snr(reference: speech, processed: speech), .infinity)
        let delayed = [Int16](repeating: 0, count: 37) + speech
        XCTAssertEqual(TestAudio.estimateLag(reference: speech, processed: delayed, maxLag: 200), 37)
        XCTAssertEqual(TestAudio.snr(reference: speech, processed: delayed, lag: 37), .infinity)
        let noise = TestAudio.whiteNoise(count: 48000, rms: 1000, seed: 5)
        XCTAssertEqual(TestAudio.power(noise).squareRoot(), 1000, accuracy: 20)
        XCTAssertEqual(TestAudio.interleave([1, 2], channels: 2), [1, 1, 2, 2])
    }
}

import Foundation
@testable import RawFX
@testable import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// Inputs found by fuzzing and by the outside abuse run of issue #12, each kept as a test of
/// the parser it broke: Y4M headers and timestamps, error messages, chain numbers and keys,
/// the watermark's PNG loader. (WAV pipes are in MediaTests.) docs/fuzzing.md.
final class FuzzRegressionTests: XCTestCase {
    private func y4mFile(_ bytes: [UInt8]) -> String {
        let path = temporaryDirectory().appendingPathComponent("x.y4m").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    /// Reads every frame; the error if any.
    private func readY4M(_ bytes: [UInt8]) -> (frames: Int, error: MediaError?) {
        var frames = 0
        do {
            let r = try Y4MReader(path: y4mFile(bytes))
            while try r.readFrame() != nil { frames += 1 }
            return (frames, nil)
        } catch {
            return (frames, error)
        }
    }

    private func twoFrames(_ header: String) -> [UInt8] {
        Array((header + "\n").utf8) + (0..<2).flatMap { _ in Array("FRAME\n".utf8) + [UInt8](repeating: 128, count: 6) }
    }

    // MARK: - Y4M arithmetic

    /// The outside run's crash: F1:9223372036854775807 overflowed `frames · 10^6 · den` on the
    /// second frame (Swift's overflow trap killed the process). Now the header is refused.
    func testHugeFrameRateDenominatorIsRefusedNotATrap() {
        let (frames, error) = readY4M(twoFrames("YUV4MPEG2 W2 H2 F1:9223372036854775807"))
        XCTAssertEqual(frames, 0)
        let message = "\(error.map { "\($0)" } ?? "no error")"
        XCTAssertTrue(message.contains("frame rate F") && message.contains("whole numbers below 2^31"), message)
    }

    /// The largest ratio accepted still reads, with exact timestamps.
    func testLargestFrameRateRatioReadsWithExactTimestamps() throws {
        let r = try Y4MReader(path: y4mFile(twoFrames("YUV4MPEG2 W2 H2 F1:2147483647")))
        XCTAssertEqual(try r.readFrame()?.timestampMicroseconds, 0)
        XCTAssertEqual(try r.readFrame()?.timestampMicroseconds, 2_147_483_647_000_000)
        XCTAssertNil(try r.readFrame())
    }

    /// Past Int64 (frame counts no file reaches, but the arithmetic must say so, not trap).
    func testTimestampBeyondInt64IsNil() {
        XCTAssertEqual(Y4MReader.timestamp(frame: 3, rate: Y4MRatio(30000, 1001)), 100_100)
        XCTAssertNil(Y4MReader.timestamp(frame: Int.max, rate: Y4MRatio(1, 2_147_483_647)))
        XCTAssertNil(Y4MReader.timestamp(frame: 4_294_967_296, rate: Y4MRatio(1, 2_147_483_647)))
        XCTAssertEqual(Y4MReader.timestamp(frame: Int.max, rate: Y4MRatio(2_000_000, 1)), Int64.max / 2)
        XCTAssertNil(Y4MReader.timestamp(frame: 1, rate: Y4MRatio(0, 1)))
    }

    /// `Int("+5")` is 5: header numbers are digits only.
    func testY4MHeaderNumbersAreDigitsOnly() {
        for header in ["YUV4MPEG2 W+2 H2", "YUV4MPEG2 W2 H2 F+25:1", "YUV4MPEG2 W2 H2 A-1:1", "YUV4MPEG2 W0x2 H2"] {
            XCTAssertNotNil(readY4M(twoFrames(header)).error, header)
        }
        XCTAssertEqual(readY4M(twoFrames("YUV4MPEG2 W2 H2 F25:1 A0:0")).frames, 2)
    }

    // MARK: - Escaped messages

    /// Terminal escapes in a header token must not reach stderr raw.
    func testHeaderTokensWithControlBytesAreEscaped() {
        let cases: [(String, String)] = [
            ("YUV4MPEG2 W2 H2 C\u{1B}[2J\u{1B}]0;owned\u{07}", "\\x1b[2J\\x1b]0;owned\\x07"),
            ("YUV4MPEG2 W\u{1B}[31m H2", "W\\x1b[31m"),
            ("YUV4MPEG2 W2 H2 F1:\u{9B}31m", "'1:\\u{9b}31m'"),          // C1 CSI, valid UTF-8
            ("YUV4MPEG2 W2 H2 Ix\u{202E}", "Ix\\u{202e}"),              // bidi override
            ("YUV4MPEG2 W2 H2 XCOLORRANGE=\u{7F}", "XCOLORRANGE=\\x7f"),
        ]
        for (header, shown) in cases {
            let message = "\(readY4M(twoFrames(header)).error.map { "\($0)" } ?? "no error")"
            XCTAssertTrue(message.contains(shown), "\(message.debugDescription) should show \(shown)")
            XCTAssertFalse(message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}" },
                           message.debugDescription)
        }
    }

    func testInvalidUTF8InAHeaderIsShownAsBytes() {
        let bytes = Array("YUV4MPEG2 W2 H2 C4".utf8) + [0xFF, 0xC3] + Array("20\n".utf8)
        let message = "\(readY4M(bytes).error.map { "\($0)" } ?? "no error")"
        XCTAssertTrue(message.contains("\\xff\\xc3"), message)
    }

    func testBadFrameLineIsEscaped() {
        let bytes = Array("YUV4MPEG2 W2 H2\nFR\u{1B}[1m\n".utf8)
        let message = "\(readY4M(bytes).error.map { "\($0)" } ?? "no error")"
        XCTAssertTrue(message.contains("(found 'FR\\x1b')"), message)
    }

    func testEscapedKeepsPrintableTextAndValidUTF8() {
        XCTAssertEqual(MediaError.escaped("W1920 é 日本"), "W1920 é 日本")
        XCTAssertEqual(MediaError.escaped("a\\b"), "a\\\\b")
        XCTAssertEqual(MediaError.escaped([0x41, 0xE2, 0x82]), "A\\xe2\\x82")  // cut UTF-8
        XCTAssertEqual(MediaError.escaped([0xED, 0xA0, 0x80]), "\\xed\\xa0\\x80")  // a surrogate
    }

    // MARK: - Chain numbers and keys

    private func parse(_ text: String, _ type: ParameterType, range: ClosedRange<Double>? = nil) throws -> ParameterValue {
        let d = ParameterDescriptor(id: "p", name: "p", help: "", unit: "", type: type, defaultValue: nil, range: range,
                                    isPath: false, isRequired: false, needsReconfigure: false)
        return try d.parse(text, filter: "f")
    }

    func testChainNumbersAreDecimalOnly() throws {
        for text in ["0x10", "1e3", "+5", "inf", "-inf", "nan", "Infinity", " 5", "5 ", ".5", "5.", "1_000", "5.0.1", "--5", "1,5"] {
            XCTAssertThrowsChainError(try parse(text, .float)) {
                XCTAssertTrue("\($0)".contains("written in decimal"), "\(text): \($0)")
            }
            XCTAssertThrowsChainError(try parse(text, .int)) {
                XCTAssertTrue("\($0)".contains("written in decimal digits"), "\(text): \($0)")
            }
        }
        // Not a number at all: the short message.
        for text in ["", "-", "abc", "٣"] {
            XCTAssertThrowsChainError(try parse(text, .float)) { XCTAssertEqual("\($0)", "f: invalid value '\(text)' for p: expected a number") }
        }
        XCTAssertThrowsChainError(try parse("2.0", .int)) { XCTAssertTrue("\($0)".contains("an integer"), "\($0)") }
        XCTAssertEqual(try parse("-30", .float), .float(-30))
        XCTAssertEqual(try parse("0.25", .float), .float(0.25))
        XCTAssertEqual(try parse("007", .int), .int(7))
        XCTAssertEqual(try parse("-3", .int), .int(-3))
        // In range, well spelt, but out of range: the range message, not the spelling one.
        XCTAssertThrowsChainError(try parse("5", .int, range: 0...1)) {
            XCTAssertEqual("\($0)", "f: invalid value '5' for p: expected an integer from 0 to 1")
        }
        XCTAssertThrowsChainError(try parse("99999999999999999999", .int)) { XCTAssertTrue("\($0)".contains("an integer"), "\($0)") }
    }

    func testAKeyGivenTwiceNamesTheKey() throws {
        XCTAssertThrowsChainError(try FilterSpec.parseChain("scale=width=640:height=360:width=1280")) {
            guard case .syntax(_, _, let reason) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(reason, "parameter 'width' is given twice in filter 'scale'")
        }
        // The same key in two filters is fine.
        XCTAssertEqual(try FilterSpec.parseChain("gain=db=1,gain=db=2").count, 2)
    }

    // MARK: - Watermark PNG loader

    private var watermarkRegistry: PluginRegistry {
        get throws {
            guard builtPlugins.filterTypes.contains(where: { $0.id == "watermark" }) else {
                throw XCTSkip("libRawFXWatermark.so is not built next to the tests")
            }
            return builtPlugins
        }
    }

    /// The watermark's refusal for `path`, run on a thread: nil if it took more than 10 s.
    private func watermarkRefusal(_ path: String) throws -> String? {
        let owned = ProcessingThreadOwned(try VideoChain("watermark=image='\(path)'", registry: watermarkRegistry))
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var message = "no error"
        let thread = Thread {
            do { try owned.value.negotiate(VideoFormat(width: 64, height: 48)) } catch { message = "\(error)" }
            done.signal()
        }
        thread.start()
        return done.wait(timeout: .now() + 10) == .success ? message : nil
    }

    /// A FIFO as the image used to block forever in fopen.
    func testAFIFOAsTheImageIsRefusedWithoutBlocking() throws {
        let fifo = temporaryDirectory().appendingPathComponent("logo.png").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let message = try watermarkRefusal(fifo)
        if message == nil {  // unblock the stuck open so the process can go on
            let fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd >= 0 { close(fd) }
        }
        let text = try XCTUnwrap(message, "the watermark blocked on a FIFO")
        XCTAssertTrue(text.contains("cannot read the image (a FIFO): the image must be a regular file"), text)
    }

    /// A PNG chunk's declared length × what libpng allocates: the peak RSS must stay small.
    private func peakRSSGrowth(_ body: () throws -> Void) throws -> Int {
        func kB(_ field: String) -> Int {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        // "5" resets the peak (VmHWM) to the current RSS (proc(5), Linux 4.0+).
        guard FileManager.default.isWritableFile(atPath: "/proc/self/clear_refs"),
              (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        else { throw XCTSkip("cannot reset the peak RSS (/proc/self/clear_refs)") }
        let before = kB("VmRSS:")
        try body()
        return kB("VmHWM:") - before
    }

    private func pngChunk(_ type: String, _ data: [UInt8], declaredLength: Int? = nil) -> [UInt8] {
        let typeAndData = Array(type.utf8) + data
        var crc: UInt32 = 0xFFFF_FFFF
        for b in typeAndData {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        return be(UInt32(declaredLength ?? data.count)) + typeAndData + be(~crc)
    }

    private var pngSignatureAndHeader: [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", [0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0])
    }

    /// 145 bytes whose tEXt declares 2 GB: libpng allocated the 2 GB before finding the file short.
    func testATextChunkDeclaring2GBFailsFastWithoutAllocatingIt() throws {
        let bytes = pngSignatureAndHeader + pngChunk("tEXt", Array("Comment\0".utf8) + [UInt8](repeating: 0x78, count: 80),
                                                      declaredLength: 0x7FFF_FFFF) + pngChunk("IEND", [])
        XCTAssertEqual(bytes.count, 145)
        let path = temporaryDirectory().appendingPathComponent("text2g.png").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        var message: String?
        let start = Date()
        let growth = try peakRSSGrowth { message = try watermarkRefusal(path) }
        XCTAssertLessThan(growth, 64 << 10, "peak RSS grew by \(growth) kB")
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        let text = try XCTUnwrap(message)
        XCTAssertTrue(text.contains("truncated PNG: chunk 'tEXt' at byte 33 declares 2147483647 bytes, but the file ends at byte 145"), text)
    }

    /// Fifty zTXt chunks of 48 KB that each inflate to 7.9 MB: libpng kept them all (400 MB).
    /// Text never reaches libpng now, and the image still loads.
    func testCompressedTextBombsAreNotInflated() throws {
        let text = Array("a".utf8)
        let bomb = try XCTUnwrap(deflated([UInt8](repeating: text[0], count: 7_900_000)))
        let idat = try XCTUnwrap(deflated([0, 10, 20, 30, 255]))
        let bytes = pngSignatureAndHeader
            + (0..<50).flatMap { _ in pngChunk("zTXt", Array("Comment\0\0".utf8) + bomb) }
            + pngChunk("IDAT", idat) + pngChunk("IEND", [])
        let path = temporaryDirectory().appendingPathComponent("bomb.png").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        var message: String?
        let growth = try peakRSSGrowth { message = try watermarkRefusal(path) }
        XCTAssertLessThan(growth, 64 << 10, "peak RSS grew by \(growth) kB")
        XCTAssertEqual(message, "no error")
    }

    /// libpng's own user limits are set (rawfx_png_check_limits): a 3 MiB ICC profile chunk,
    /// under libpng's built-in 8 MB default, is refused by the 2 MiB limit before decoding.
    func testLibpngUserLimitsRefuseAnOversizedChunk() throws {
        let idat = try XCTUnwrap(deflated([0, 10, 20, 30, 255]))
        let profile = Array("icc\0".utf8) + [0] + [UInt8](repeating: 0x55, count: 3 << 20)
        let bytes = pngSignatureAndHeader + pngChunk("iCCP", profile) + pngChunk("IDAT", idat) + pngChunk("IEND", [])
        let path = temporaryDirectory().appendingPathComponent("icc3m.png").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let text = try XCTUnwrap(try watermarkRefusal(path))
        XCTAssertTrue(text.contains("refused by libpng's limits (2 MiB per chunk, 4096x4096)"), text)
        XCTAssertTrue(text.contains("chunk data is too large"), text)
    }

    /// zlib's `compress2`, found in the process (libpng links zlib): Foundation has no zlib on Linux.
    private func deflated(_ bytes: [UInt8]) throws -> [UInt8]? {
        typealias Compress2 = @convention(c) (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt>,
                                              UnsafePointer<UInt8>, UInt, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "compress2") else { throw XCTSkip("zlib is not loaded") }
        let compress2 = unsafeBitCast(symbol, to: Compress2.self)
        var out = [UInt8](repeating: 0, count: bytes.count / 100 + 1024)
        var length = UInt(out.count)
        guard compress2(&out, &length, bytes, UInt(bytes.count), 9) == 0 else { return nil }
        return Array(out.prefix(Int(length)))
    }
}

extension FuzzRegressionTests {
    /// FuzzChain: a value with a quoted run and a leading newline printed without quotes, so
    /// `chainText` read back trimmed it (the crash input, Fuzz/Corpus/chain/roundtrip-blank.txt).
    func testChainTextKeepsLeadingAndTrailingBlanks() throws {
        // And a backslash inside quotes (Fuzz/Corpus/chain/roundtrip-backslash.txt).
        for text in ["denoise=\nleve'r'l", "a=' x':b='y\t'", "a=x=' '", "f='\\\\\\\\q\\':~j:''Ar'", "f=a\\\\b"] {
            let specs = try FilterSpec.parseChain(text)
            XCTAssertEqual(try FilterSpec.parseChain(FilterSpec.chainText(specs)), specs, text.debugDescription)
        }
    }
}

extension FuzzRegressionTests {
    /// FuzzChain: a combining mark right after `=` or `,` made one Character of both, so the
    /// separator vanished from a Character-based scan, and only in some spellings of the same
    /// chain (Fuzz/Corpus/chain/roundtrip-combining.txt).
    func testSeparatorsFollowedByCombiningMarksStillSeparate() throws {
        XCTAssertEqual(try FilterSpec.parseChain("rot=\u{35C}720"), [FilterSpec("rot", [])].map {
            FilterSpec(name: $0.name, arguments: [.init(key: nil, value: "\u{35C}720")])
        })
        XCTAssertEqual(try FilterSpec.parseChain("a=k=\u{301},b").count, 2)
        XCTAssertThrowsChainError(try FilterSpec.parseChain("a=x,\u{301}")) {
            XCTAssertTrue("\($0)".contains("is not a filter name"), "the ',' before a combining mark: \($0)")
        }
        for text in ["rot=a=:rot=\u{35C}\t720", "a=' \u{301}'", "a=x\u{301}:b=\u{301}"] {
            let specs = try FilterSpec.parseChain(text)
            XCTAssertEqual(try FilterSpec.parseChain(FilterSpec.chainText(specs)), specs, text.debugDescription)
        }
    }
}

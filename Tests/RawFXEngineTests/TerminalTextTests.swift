import Foundation
import RawFX
import XCTest
@testable import RawFXTestSupport

/// Bytes a plugin (or a chain, a value, a path) chose never reach a terminal raw: control
/// characters and bidirectional formatting are escaped in the log, the command's error lines,
/// `rawfx plugins` and `rawfx validate` (`terminalSafe`, and host.c's fallback writer).
final class TerminalTextTests: XCTestCase, RawfxCommandTesting {
    /// The bytes that must not appear in anything printed: ESC, BEL, BS, CR, NEL (C1), RLO.
    static let forbidden: [UInt8] = [0x1B, 0x07, 0x08, 0x0D]
    static let forbiddenScalars: [Unicode.Scalar] = ["\u{85}", "\u{202E}", "\u{2066}"]

    func assertClean(_ text: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        for byte in Self.forbidden where text.utf8.contains(byte) {
            XCTFail("\(what): byte 0x\(String(byte, radix: 16)) printed raw", file: file, line: line)
        }
        for scalar in Self.forbiddenScalars where text.unicodeScalars.contains(scalar) {
            XCTFail("\(what): U+\(String(scalar.value, radix: 16, uppercase: true)) printed raw", file: file, line: line)
        }
    }

    func testControlAndBidiCharactersAreEscapedAndPrintableTextIsKept() {
        let hostile = "ok\u{1B}[2J\u{07}\u{08}x\ny\r\t\u{7F}\u{85}\u{9B}\u{202E}gnp.exe\u{2066}\u{200F}\u{61C} é ✓ \\x1b"
        XCTAssertEqual(terminalSafe(hostile),
                       "ok\\x1b[2J\\x07\\x08x\\ny\\r\\t\\x7f\\x85\\x9b\\u{202E}gnp.exe\\u{2066}\\u{200F}\\u{61C} é ✓ \\x1b")
        XCTAssertEqual(terminalSafe(terminalSafe(hostile)), terminalSafe(hostile), "escaping twice changes nothing")
        XCTAssertEqual(terminalSafe("scale: invalid value 'abc' for width"), "scale: invalid value 'abc' for width")
    }

    func testLogRecordsAreEscaped() {
        let received = Locked<[RawFXLog.Record]>([])
        RawFXLog.setHandler { record in received.withLock { $0.append(record) } }
        defer { RawFXLog.setHandler(nil) }
        RawFXLog.log(.error, source: "evil\u{1B}]0;title\u{07}", "line\u{1B}[31m red\u{08}\nrawfx: forged")
        RawFXLog.sync()
        let record = received.withLock { $0.last }
        XCTAssertEqual(record?.source, "evil\\x1b]0;title\\x07")
        XCTAssertEqual(record?.message, "line\\x1b[31m red\\x08\\nrawfx: forged")
    }

    func testTheCommandsErrorLineEscapesTheChainItQuotes() throws {
        try requireRawfx()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = try makeY4M(directory, frames: 1)
        let run = try rawfx("run", "--vf", "nope\u{1B}[2J\u{07}\u{202E}", input, directory.appendingPathComponent("out.y4m").path)
        XCTAssertNotEqual(run.status, 0)
        assertClean(run.stderr, "stderr")
        XCTAssertTrue(run.stderr.contains("nope\\x1b[2J\\x07\\u{202E}"), run.stderr)
        XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, "one line: \(run.stderr)")
    }

    /// A plugin whose filter id carries a newline, a forged `PASS` line and escape sequences:
    /// refused by the loader (the id rule), and the reason printed escaped on one line, in
    /// `rawfx validate` and in `rawfx plugins`.
    func testAPluginCannotForgeOrHideLinesOfTheValidatorOrThePluginList() throws {
        try requireRawfx()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = try compileCPlugin(fixtureSource, defines: [#"FIXTURE_ID="x\nPASS forged real-time: fine\033[2J\a""#],
                                        into: directory, name: "forger.so")
        let validate = try rawfx("validate", plugin)
        XCTAssertEqual(validate.status, 1, validate.stderr)
        let report = validate.stdoutText
        assertClean(report + validate.stderr, "rawfx validate")
        XCTAssertFalse(report.split(separator: "\n").contains { $0.hasPrefix("PASS forged") }, report)
        XCTAssertTrue(report.contains(#"x\nPASS forged real-time: fine\x1b[2J\x07"#), report)

        let listed = try runProgram(rawfxBinary, ["plugins"], environment: ["RAWFX_PLUGIN_PATH": plugin])
        let listing = listed.stdoutText + listed.stderr
        assertClean(listing, "rawfx plugins")
        XCTAssertTrue(listing.contains(#"x\nPASS forged real-time: fine\x1b[2J\x07"#), listing)
    }
}

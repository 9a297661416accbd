import Foundation
import XCTest
@testable import RawFXTestSupport

/// The Swift shown in docs/sdk-integration.md is compiled and run: each ```swift block that
/// follows a `<!-- sample: Tests/TARGET/FILE.swift -->` line must appear in that test file,
/// line for line (indentation aside), so the guide cannot drift from code that builds and passes.
final class DocSampleTests: XCTestCase {
    func testEverySampleInTheSDKGuideIsCompiledCode() throws {
        let guide = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/sdk-integration.md"), encoding: .utf8)
        let lines = guide.components(separatedBy: "\n")
        var checked = 0
        var index = 0
        while index < lines.count {
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            index += 1
            guard line.hasPrefix("<!-- sample:"), line.hasSuffix("-->") else { continue }
            let path = line.dropFirst("<!-- sample:".count).dropLast(3).trimmingCharacters(in: .whitespaces)
            XCTAssertTrue(path.hasPrefix("Tests/") && path.hasSuffix("Tests.swift"), "\(path): samples live in the test suite")
            XCTAssertEqual(lines[index], "```swift", "the line after the marker for \(path) opens a swift block")
            index += 1
            var block: [String] = []
            while index < lines.count, lines[index] != "```" {
                block.append(lines[index])
                index += 1
            }
            let source = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
            func normalized(_ lines: [String]) -> String {
                lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
            }
            XCTAssertTrue(normalized(source.components(separatedBy: "\n")).contains(normalized(block)),
                          "the block after <!-- sample: \(path) --> is not in \(path): copy it from there")
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 3, "the guide's samples are marked")
    }
}

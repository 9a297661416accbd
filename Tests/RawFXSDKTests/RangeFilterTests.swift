import Foundation
@testable import RawFX
import RawFXAllocCounter
import RawFXEmulator
import XCTest
@testable import RawFXTestSupport

/// The `range` filter of libRawFXYUV.so: every one of the 256 values of each plane against the
/// conversion formulas computed here in Double, odd sizes, strides wider than the rows, row
/// padding left alone, pass-through, run-time change of `to`.
final class RangeFilterTests: XCTestCase {
    var registry: PluginRegistry!

    override func setUpWithError() throws { registry = try ReceiveFixture.registry() }

    /// The reference, independent of the plugin: schoolbook rounding (halves away from zero).
    static func expected(_ value: Int, luma: Bool, to: ColorRange) -> UInt8 {
        let v = Double(value)
        let out: Double
        switch (to, luma) {
        case (.limited, true): out = (v * 219 / 255).rounded() + 16
        case (.limited, false): out = ((v - 128) * 224 / 255).rounded() + 128
        case (.full, true): out = ((v - 16) * 255 / 219).rounded()
        case (.full, false): out = ((v - 128) * 255 / 224).rounded() + 128
        }
        return UInt8(min(max(out, 0), 255))
    }

    /// A frame whose every plane holds each value 0...255 at least once: 515x5 (odd both ways,
    /// chroma 258x3), rows `padding` bytes wider than the picture, padding filled with 0xEE.
    static func allValues(range: ColorRange, padding: Int = 9) -> VideoBuffer {
        let buffer = VideoBuffer(format: VideoFormat(width: 515, height: 5, colorRange: range),
                                 strideAlignment: 1, extraStride: padding)
        let f = buffer.frame
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h {
                let row = f.plane(p) + y * f.stride(p)
                for x in 0..<f.stride(p) { row[x] = x < w ? UInt8((x + 37 * y + 11 * p) % 256) : 0xEE }
            }
        }
        return buffer
    }

    /// Runs the filter's own `process_video` on `input` into an output with 0xEE padding.
    private func runInstance(_ text: String, _ input: VideoBuffer) throws -> (VideoBuffer, rawfx_video_frame) {
        let spec = try XCTUnwrap(FilterSpec.parseChain(text).first)
        let instance = try registry.filterType(spec.name).makeInstance()
        for argument in spec.arguments { try instance.set(try XCTUnwrap(argument.key), text: argument.value) }
        let negotiation = try instance.configure(input: .video(input.format))
        guard case .video(let outFormat) = negotiation.output else { throw XCTSkip("not video") }
        let output = VideoBuffer(format: outFormat, strideAlignment: 1, extraStride: 5)
        EmulatedVideoRawData.fillPadding(output.frame)
        var inFrame = input.frame.raw
        var outFrame = output.frame.raw
        let status = instance.processVideo(&inFrame, &outFrame)
        HostContext.leaveProcess()
        XCTAssertEqual(Int(status), Int(RAWFX_OK), instance.lastError)
        return (output, outFrame)
    }

    private func checkConversion(from: ColorRange, to: ColorRange) throws {
        let input = Self.allValues(range: from)
        let original = (0..<3).map { planeBytes(input.frame, $0) }
        let (output, raw) = try runInstance("range=to=\(to)", input)
        XCTAssertEqual(raw.color_range, to.rawValue, "the output frame carries the target range")
        var seen = Set<Int>()
        for p in 0..<3 {
            let source = original[p]
            let result = planeBytes(output.frame, p)
            XCTAssertEqual(result.count, source.count)
            for i in 0..<source.count {
                let want = from == to ? source[i] : Self.expected(Int(source[i]), luma: p == 0, to: to)
                if result[i] != want {
                    XCTFail("plane \(p) value \(source[i]) -> \(result[i]), expected \(want)")
                    return
                }
                seen.insert(p * 256 + Int(source[i]))
            }
            XCTAssertTrue(paddingBytes(output.frame, p).allSatisfy { $0 == 0xEE }, "output padding of plane \(p) written")
            XCTAssertTrue(paddingBytes(input.frame, p).allSatisfy { $0 == 0xEE }, "input padding of plane \(p) written")
            XCTAssertEqual(planeBytes(input.frame, p), source, "the input is not modified")
        }
        XCTAssertEqual(seen.count, 768, "every value of every plane was checked")
    }

    func testFullToLimitedMatchesTheFormulaForEveryValue() throws { try checkConversion(from: .full, to: .limited) }
    func testLimitedToFullMatchesTheFormulaForEveryValue() throws { try checkConversion(from: .limited, to: .full) }
    func testSameRangeIsAPassThrough() throws {
        try checkConversion(from: .full, to: .full)
        try checkConversion(from: .limited, to: .limited)
    }

    func testKnownValues() {
        // Black, white and the chroma extremes of each range.
        XCTAssertEqual(Self.expected(0, luma: true, to: .limited), 16)
        XCTAssertEqual(Self.expected(255, luma: true, to: .limited), 235)
        XCTAssertEqual(Self.expected(0, luma: false, to: .limited), 16)
        XCTAssertEqual(Self.expected(255, luma: false, to: .limited), 240)
        XCTAssertEqual(Self.expected(16, luma: true, to: .full), 0)
        XCTAssertEqual(Self.expected(235, luma: true, to: .full), 255)
        XCTAssertEqual(Self.expected(16, luma: false, to: .full), 0)    // -127.5 rounds away from zero
        XCTAssertEqual(Self.expected(240, luma: false, to: .full), 255) // 127.5 rounds away from zero
        XCTAssertEqual(Self.expected(128, luma: false, to: .full), 128)
    }

    func testDescriptorAndBadValue() throws {
        let type = try registry.filterType("range")
        XCTAssertEqual(type.mediaKind, .video)
        let to = try XCTUnwrap(type.parameter(named: "to"))
        XCTAssertEqual(to.type, .enumeration(["full", "limited"]))
        XCTAssertEqual(to.defaultValue, .enumeration(index: 0, name: "full"))
        XCTAssertTrue(to.needsReconfigure, "the output format follows `to`")
        XCTAssertThrowsChainError(try VideoChain("range=to=tv", registry: registry)) { error in
            XCTAssertTrue("\(error)".contains("full") && "\(error)".contains("limited"), "\(error)")
        }
    }

    func testChainOutputFormatAndRunTimeChange() throws {
        let chain = try VideoChain("range=to=limited", registry: registry)
        let input = Self.allValues(range: .full)
        let out = try chain.negotiate(input.format)
        XCTAssertEqual(out.colorRange, .limited)
        let first = try chain.process(input.frame)
        XCTAssertEqual(first.format.colorRange, .limited)
        XCTAssertEqual(first.plane(0)[0], Self.expected(Int(input.frame.plane(0)[0]), luma: true, to: .limited))
        // to=full on a full input: the next frame passes through unchanged.
        try chain.control.setParameter("range.to", "full")
        let second = try chain.process(input.frame)
        XCTAssertEqual(second.format.colorRange, .full)
        XCTAssertEqual(planeBytes(second, 0), planeBytes(input.frame, 0))
        // A limited input now converts to full.
        let limited = Self.allValues(range: .limited)
        let third = try chain.process(limited.frame)
        XCTAssertEqual(third.format.colorRange, .full)
        XCTAssertEqual(third.plane(1)[0], Self.expected(Int(limited.frame.plane(1)[0]), luma: false, to: .full))
    }

    func testNoAllocationPerFrame() throws {
        let chain = try VideoChain("range=to=limited", registry: registry)
        let input = Self.allValues(range: .full)
        _ = try chain.process(input.frame)
        let before = rawfx_thread_allocation_count()
        for _ in 0..<20 { _ = try chain.process(input.frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
    }
}


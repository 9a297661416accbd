import CLibPNG
import CLibYUV
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import XCTest
@testable import RawFXTestSupport

/// The `watermark` filter of libRawFXWatermark.so (Plugins/Watermark), loaded through the
/// engine and run through video chains. Fixture PNGs are written here, at run time, with
/// libpng's simplified writer; every output sample covered by the image is checked against
/// a float blend computed here, and every other byte (stride padding included) must be
/// byte-equal to the input.
///
/// Tolerances, in two parts:
/// - Conversion, ±2 (`conversionTolerance`). The plugin converts RGB with libyuv, whose
///   8-bit fixed-point coefficients are not the exact BT.601 ones (limited U/V: 112/256
///   for 112/255; full U/V: 127/256 for 0.5), so a pixel's integer Y/U/V may sit up to
///   ~1.5 codes from the exact formula (measured 1.45 limited, 1.35 full): beyond ±1.
///   Each picture's per-pixel Y/U/V is taken from libyuv, called here the way the plugin
///   calls it (each pixel as a 2x2 block of itself), and checked against the BT.601
///   formulas at ±2; `testOpaqueConversionMatchesBT601Formulas` checks the plugin's opaque
///   output against the formulas end to end at ±2.
/// - Blend, ±1 (`blendTolerance`). With those Y/U/V, every covered luma and chroma sample
///   must be within 1 of the float blend: the integer blend rounds (≤ 0.5) and, for
///   opacity < 1, alpha * opacity is quantized to 0...255 (≤ 0.5 more).
///   `testBlendArithmeticIsExactlyRounded` checks the integer formulas themselves exactly.
final class WatermarkPluginTests: XCTestCase {
    var registry: PluginRegistry!
    var directory: URL!

    /// libyuv vs the exact BT.601 formulas (see the class comment).
    let conversionTolerance = 2.0
    /// The plugin's integer blend vs the float blend (see the class comment).
    let blendTolerance = 1.0

    override func setUpWithError() throws {
        registry = PluginRegistry(environment: [:])
        guard registry.filterTypes.contains(where: { $0.id == "watermark" }) else {
            throw XCTSkip("libRawFXWatermark.so is not built next to the tests (swift build --product RawFXWatermark)")
        }
        directory = temporaryDirectory()
    }

    override func tearDown() { if let directory { try? FileManager.default.removeItem(at: directory) } }

    // MARK: Fixtures

    /// Straight-alpha 8-bit RGBA pixels, rows packed.
    struct Picture {
        var width: Int
        var height: Int
        var rgba: [UInt8]

        func pixel(_ x: Int, _ y: Int) -> (r: Double, g: Double, b: Double, a: Double) {
            let i = (y * width + x) * 4
            return (Double(rgba[i]), Double(rgba[i + 1]), Double(rgba[i + 2]), Double(rgba[i + 3]))
        }
    }

    /// A deterministic picture: varied colours, a fully transparent band, a half-transparent
    /// band and opaque rest, so blends of every kind appear.
    func picture(width: Int, height: Int, seed: UInt64 = 1) -> Picture {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        func next() -> UInt8 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                rgba[i] = next(); rgba[i + 1] = next(); rgba[i + 2] = next()
                switch (x + 2 * y) % 7 {
                case 0: rgba[i + 3] = 0
                case 1: rgba[i + 3] = 128
                case 2: rgba[i + 3] = next()
                default: rgba[i + 3] = 255
                }
            }
        }
        // Saturated primaries in the first row, where libyuv's coefficients are furthest off.
        let primaries: [[UInt8]] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255], [0, 0, 0], [255, 255, 0]]
        for (k, c) in primaries.enumerated() where k < width {
            rgba[k * 4] = c[0]; rgba[k * 4 + 1] = c[1]; rgba[k * 4 + 2] = c[2]; rgba[k * 4 + 3] = 255
        }
        return Picture(width: width, height: height, rgba: rgba)
    }

    /// Writes `pixels` with png_image_write_to_file in `format` (PNG_FORMAT_* flags).
    @discardableResult
    func writePNG(_ name: String, width: Int, height: Int, format: UInt32, pixels: UnsafeRawPointer,
                  colormap: UnsafeRawPointer? = nil, colormapEntries: Int = 0) -> String {
        let path = directory.appendingPathComponent(name).path
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(width)
        image.height = UInt32(height)
        image.format = format
        image.colormap_entries = UInt32(colormapEntries)
        let ok = png_image_write_to_file(&image, path, 0, pixels, 0, colormap)
        let message = withUnsafeBytes(of: &image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        XCTAssertNotEqual(ok, 0, "png_image_write_to_file \(name): \(message)")
        return path
    }

    static let rgbaFormat = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)

    func writeRGBA(_ picture: Picture, _ name: String = "logo.png") -> String {
        picture.rgba.withUnsafeBytes {
            writePNG(name, width: picture.width, height: picture.height, format: Self.rgbaFormat, pixels: $0.baseAddress!)
        }
    }

    /// Every plane of a frame, stride padding included, to compare untouched bytes.
    func snapshot(_ frame: VideoFrame) -> [[UInt8]] {
        (0..<3).map { p in
            let h = frame.planeSize(p).height
            return Array(UnsafeBufferPointer(start: frame.plane(p), count: frame.stride(p) * h))
        }
    }

    // MARK: The reference model

    /// BT.601 Y, U, V of an RGB pixel, in floating point, limited or full range.
    static func yuv(_ r: Double, _ g: Double, _ b: Double, _ range: ColorRange) -> (Double, Double, Double) {
        switch range {
        case .limited:
            return (16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
                    128 + (-37.797 * r - 74.203 * g + 112 * b) / 255,
                    128 + (112 * r - 93.786 * g - 18.214 * b) / 255)
        case .full:
            return (0.299 * r + 0.587 * g + 0.114 * b,
                    128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
                    128 + 0.5 * r - 0.418688 * g - 0.081312 * b)
        }
    }

    /// Y, U, V of every pixel of `picture` from libyuv (ABGRToI420 / ABGRToJ420: libpng's
    /// R, G, B, A bytes are libyuv's "ABGR"), each pixel fed as a 2x2 block of itself so its
    /// U and V are its own. Asserts each is within `conversionTolerance` of the formulas.
    func libyuvConversion(_ picture: Picture, _ range: ColorRange,
                          file: StaticString = #filePath, line: UInt = #line) -> (y: [UInt8], u: [UInt8], v: [UInt8]) {
        let (w, h) = (picture.width, picture.height)
        var doubled = [UInt8](repeating: 0, count: 4 * w * h * 4)
        for y in 0..<2 * h {
            for x in 0..<2 * w {
                for c in 0..<4 { doubled[(y * 2 * w + x) * 4 + c] = picture.rgba[((y / 2) * w + x / 2) * 4 + c] }
            }
        }
        var yPlane = [UInt8](repeating: 0, count: 4 * w * h)
        var u = [UInt8](repeating: 0, count: w * h), v = [UInt8](repeating: 0, count: w * h)
        let status = range == .full
            ? ABGRToJ420(doubled, Int32(8 * w), &yPlane, Int32(2 * w), &u, Int32(w), &v, Int32(w), Int32(2 * w), Int32(2 * h))
            : ABGRToI420(doubled, Int32(8 * w), &yPlane, Int32(2 * w), &u, Int32(w), &v, Int32(w), Int32(2 * w), Int32(2 * h))
        XCTAssertEqual(status, 0, file: file, line: line)
        var y = [UInt8](repeating: 0, count: w * h)
        var worst = 0.0
        for row in 0..<h {
            for col in 0..<w {
                let i = row * w + col
                y[i] = yPlane[(2 * row) * 2 * w + 2 * col]
                let px = picture.pixel(col, row)
                let exact = Self.yuv(px.r, px.g, px.b, range)
                worst = max(worst, abs(Double(y[i]) - exact.0), abs(Double(u[i]) - exact.1), abs(Double(v[i]) - exact.2))
            }
        }
        XCTAssertLessThanOrEqual(worst, conversionTolerance, "libyuv \(range) vs BT.601 formulas", file: file, line: line)
        return (y, u, v)
    }

    struct Errors { var luma = 0.0; var chroma = 0.0; var changed = 0 }

    /// Checks `out` against the float model of `picture` at (left, top) over `before`, with
    /// each pixel's Y, U, V from `libyuvConversion` (itself checked against BT.601):
    /// - luma inside the image: src * (1 - a) + Y * a, a = alpha / 255 * opacity;
    /// - chroma: per frame chroma sample, over its 2x2 luma footprint (positions past an odd
    ///   frame's last row/column repeat it; positions outside the image have a = 0):
    ///   src * (1 - mean a) + mean(a * C);
    /// - every other byte (padding included) equal to `before`.
    @discardableResult
    func check(_ out: VideoFrame, before: [[UInt8]], picture: Picture, left: Int, top: Int,
               opacity: Double = 1, range: ColorRange, tolerance: Double? = nil,
               file: StaticString = #filePath, line: UInt = #line) -> Errors {
        let tolerance = tolerance ?? blendTolerance
        var errors = Errors()
        let W = out.width, H = out.height
        let converted = libyuvConversion(picture, range, file: file, line: line)
        func inImage(_ x: Int, _ y: Int) -> Bool {
            x >= left && x < left + picture.width && y >= top && y < top + picture.height
        }
        for p in 0..<3 {
            let (pw, ph) = out.planeSize(p)
            let stride = out.stride(p)
            var reported = 0
            for y in 0..<ph {
                for x in 0..<stride {
                    let src = before[p][y * stride + x]
                    let got = out.plane(p)[y * stride + x]
                    var expected: Double? = nil
                    if x < pw {
                        if p == 0 {
                            if inImage(x, y) {
                                let i = (y - top) * picture.width + (x - left)
                                let a = Double(picture.rgba[i * 4 + 3]) / 255 * opacity
                                expected = Double(src) * (1 - a) + Double(converted.y[i]) * a
                            }
                        } else {
                            var sumA = 0.0, sumC = 0.0, touched = false
                            for dy in 0..<2 {
                                for dx in 0..<2 {
                                    let fx = min(2 * x + dx, W - 1), fy = min(2 * y + dy, H - 1)
                                    guard inImage(fx, fy) else { continue }
                                    touched = true
                                    let i = (fy - top) * picture.width + (fx - left)
                                    let a = Double(picture.rgba[i * 4 + 3]) / 255 * opacity
                                    sumA += a
                                    sumC += a * Double(p == 1 ? converted.u[i] : converted.v[i])
                                }
                            }
                            if touched { expected = Double(src) * (1 - sumA / 4) + sumC / 4 }
                        }
                    }
                    if let expected {
                        let error = abs(Double(got) - expected)
                        if p == 0 { errors.luma = max(errors.luma, error) } else { errors.chroma = max(errors.chroma, error) }
                        if got != src { errors.changed += 1 }
                        if error > tolerance && reported < 5 {
                            reported += 1
                            XCTFail("plane \(p) (\(x), \(y)): got \(got), expected \(expected) from \(src)", file: file, line: line)
                        }
                    } else if got != src && reported < 5 {
                        reported += 1
                        XCTFail("plane \(p) (\(x), \(y)) is outside the image but changed from \(src) to \(got)", file: file, line: line)
                    }
                }
            }
        }
        return errors
    }

    /// Runs `chain` over a fresh pattern frame and checks it; returns the errors seen.
    @discardableResult
    func run(_ chain: String, picture: Picture, width: Int, height: Int, left: Int, top: Int,
             opacity: Double = 1, range: ColorRange = .limited, extraStride: Int = 3, seed: Int = 0,
             tolerance: Double? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> Errors {
        let chain = try VideoChain(chain, registry: registry)
        let buffer = patternBuffer(width: width, height: height, range: range, extraStride: extraStride, seed: seed)
        defer { withExtendedLifetime(buffer) {} } // `out` views its planes
        let before = snapshot(buffer.frame)
        let out = try chain.process(buffer.frame)
        XCTAssertEqual(out.plane(0), buffer.frame.plane(0), "in place", file: file, line: line)
        return check(out, before: before, picture: picture, left: left, top: top, opacity: opacity, range: range,
                     tolerance: tolerance, file: file, line: line)
    }

    // MARK: Descriptors

    func testParametersAreFullyDescribed() throws {
        let type = try registry.filterType("watermark")
        XCTAssertEqual(type.library.name, "rawfx-watermark")
        XCTAssertEqual(type.mediaKind, .video)
        XCTAssertEqual(type.processing, .inPlace)
        XCTAssertEqual(type.parameters.map(\.id), ["image", "x", "y", "corner", "margin", "opacity"])
        for p in type.parameters {
            XCTAssertFalse(p.help.isEmpty, p.id)
            XCTAssertFalse(p.name.isEmpty, p.id)
            XCTAssertTrue(p.needsReconfigure, "\(p.id): the prepared planes depend on it")
        }
        let image = try XCTUnwrap(type.parameter(named: "image"))
        XCTAssertEqual(image.type, .string)
        XCTAssertTrue(image.isPath && image.isRequired)
        XCTAssertNil(image.defaultValue)
        for id in ["x", "y"] {
            let p = try XCTUnwrap(type.parameter(named: id))
            XCTAssertEqual(p.type, .int)
            XCTAssertEqual(p.unit, "px")
            XCTAssertEqual(p.defaultValue, .int(0))
            XCTAssertEqual(p.range, -16384...16384)
        }
        let corner = try XCTUnwrap(type.parameter(named: "corner"))
        XCTAssertEqual(corner.type, .enumeration(["none", "top-left", "top-right", "bottom-left", "bottom-right"]))
        XCTAssertEqual(corner.defaultValue, .enumeration(index: 0, name: "none"))
        let margin = try XCTUnwrap(type.parameter(named: "margin"))
        XCTAssertEqual(margin.defaultValue, .int(16))
        XCTAssertEqual(margin.unit, "px")
        XCTAssertEqual(margin.range, 0...16384)
        let opacity = try XCTUnwrap(type.parameter(named: "opacity"))
        XCTAssertEqual(opacity.type, .float)
        XCTAssertEqual(opacity.defaultValue, .float(1))
        XCTAssertEqual(opacity.range, 0...1)

        XCTAssertThrowsChainError(try VideoChain("watermark=x=3", registry: registry)) {
            XCTAssertEqual($0, .missingParameter(filter: "watermark", parameter: "image"))
        }
        XCTAssertThrowsChainError(try VideoChain("watermark=image=a.png:corner=middle", registry: registry)) {
            guard case .invalidValue(filter: "watermark", parameter: "corner", value: "middle", _) = $0 else { return XCTFail("\($0)") }
        }
    }

    // MARK: Blending

    func testLimitedRangeBlendAtOddPosition() throws {
        let pic = picture(width: 37, height: 23)
        let path = writeRGBA(pic)
        let e = try run("watermark=image=\(path):x=3:y=5", picture: pic, width: 64, height: 48, left: 3, top: 5)
        XCTAssertGreaterThan(e.changed, 37 * 23 / 2)
    }

    func testImageIsTheFirstPositionalValue() throws {
        let pic = picture(width: 12, height: 8, seed: 18)
        let path = writeRGBA(pic)
        try run("watermark=\(path):4:-3", picture: pic, width: 32, height: 24, left: 4, top: 24 - 3 - 8)
        try run("watermark='\(path)':corner=bottom-right", picture: pic, width: 32, height: 24,
                left: 32 - 16 - 12, top: 24 - 16 - 8)
    }

    func testFullRangeBlendAtOddPosition() throws {
        let pic = picture(width: 37, height: 23, seed: 2)
        let path = writeRGBA(pic)
        try run("watermark=image=\(path):x=3:y=5", picture: pic, width: 64, height: 48, left: 3, top: 5, range: .full)
    }

    func testEvenAndOddPositionsInBothRanges() throws {
        let pic = picture(width: 20, height: 15, seed: 3)
        let path = writeRGBA(pic)
        for range in [ColorRange.limited, .full] {
            for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 4), (7, 3), (10, 9)] {
                try run("watermark=image=\(path):x=\(x):y=\(y)", picture: pic, width: 40, height: 30,
                        left: x, top: y, range: range, seed: x + y)
            }
        }
    }

    func testOddFrameSizes() throws {
        let pic = picture(width: 13, height: 9, seed: 4)
        let path = writeRGBA(pic)
        for range in [ColorRange.limited, .full] {
            for (w, h) in [(33, 25), (33, 24), (32, 25), (13, 9), (1, 1), (3, 3)] {
                // Inside, flush with the right/bottom edge (the odd last chroma column/row), and past it.
                for (x, y) in [(5, 3), (w - 13, h - 9), (w - 10, h - 6), (-1, -1)] {
                    let (left, top) = (x >= 0 ? x : w - 13 + x, y >= 0 ? y : h - 9 + y)
                    try run("watermark=image=\(path):x=\(x):y=\(y)", picture: pic, width: w, height: h,
                            left: left, top: top, range: range)
                }
            }
        }
    }

    func testOpacityHalf() throws {
        let pic = picture(width: 30, height: 21, seed: 5)
        let path = writeRGBA(pic)
        for range in [ColorRange.limited, .full] {
            let e = try run("watermark=image=\(path):x=5:y=3:opacity=0.5", picture: pic, width: 48, height: 32,
                            left: 5, top: 3, opacity: 0.5, range: range)
            XCTAssertGreaterThan(e.changed, 0)
        }
        // opacity=0 leaves the frame exactly as it was.
        let e = try run("watermark=image=\(path):x=5:y=3:opacity=0", picture: pic, width: 48, height: 32,
                        left: 5, top: 3, opacity: 0, tolerance: 0)
        XCTAssertEqual(e.changed, 0)
    }

    func testNegativePositionsCountFromTheRightAndBottom() throws {
        let pic = picture(width: 21, height: 11, seed: 6)
        let path = writeRGBA(pic)
        // x=-10: the image's right edge 10 px from the frame's right edge.
        try run("watermark=image=\(path):x=-10:y=-7", picture: pic, width: 64, height: 40,
                left: 64 - 10 - 21, top: 40 - 7 - 11)
        try run("watermark=image=\(path):x=-1:y=4", picture: pic, width: 63, height: 41,
                left: 63 - 1 - 21, top: 4, range: .full)
        try run("watermark=image=\(path):x=6:y=-3", picture: pic, width: 63, height: 41,
                left: 6, top: 41 - 3 - 11)
    }

    func testCornersWithMargins() throws {
        let pic = picture(width: 17, height: 12, seed: 7)
        let path = writeRGBA(pic)
        let (w, h) = (71, 45)
        for margin in [16, 24, 0, 3] {
            let spec = margin == 16 ? "" : ":margin=\(margin)" // 16 is the default
            let expected: [(String, Int, Int)] = [
                ("top-left", margin, margin),
                ("top-right", w - margin - 17, margin),
                ("bottom-left", margin, h - margin - 12),
                ("bottom-right", w - margin - 17, h - margin - 12),
            ]
            for (corner, left, top) in expected {
                // x and y are ignored when a corner is given.
                try run("watermark=image=\(path):corner=\(corner)\(spec):x=5:y=5", picture: pic, width: w, height: h,
                        left: left, top: top, range: margin % 2 == 0 ? .limited : .full)
            }
        }
        // The documented example.
        try run("watermark=image=\(path):corner=top-right:margin=24:opacity=0.8", picture: pic, width: 96, height: 54,
                left: 96 - 24 - 17, top: 24, opacity: 0.8)
    }

    func testClippingAtEveryEdge() throws {
        let pic = picture(width: 19, height: 13, seed: 8)
        let path = writeRGBA(pic)
        let (w, h) = (41, 31)
        // Wanted origins on a 41x31 frame. A negative x/y counts from the right/bottom edge,
        // so an origin past the left/top edge is spelled as a right/bottom-relative value.
        let origins: [(left: Int, top: Int)] = [
            (-5, 9), (11, -4), (w - 7, 9), (11, h - 6),   // past the left, top, right, bottom edge
            (-3, -7), (w - 4, h - 5), (-1, h - 1), (w - 1, -12),   // past two edges at once
        ]
        for range in [ColorRange.limited, .full] {
            for o in origins {
                let x = o.left >= 0 ? o.left : o.left - w + pic.width
                let y = o.top >= 0 ? o.top : o.top - h + pic.height
                // The same parameters on this frame and on frames one pixel wider/taller (odd/even).
                for (fw, fh) in [(w, h), (w + 1, h + 1), (w + 1, h), (w, h + 1)] {
                    try run("watermark=image=\(path):x=\(x):y=\(y)", picture: pic, width: fw, height: fh,
                            left: x >= 0 ? x : fw + x - pic.width, top: y >= 0 ? y : fh + y - pic.height, range: range)
                }
            }
        }
    }

    func testFrameSmallerThanTheImage() throws {
        let pic = picture(width: 40, height: 30, seed: 9)
        let path = writeRGBA(pic)
        for (w, h) in [(16, 12), (15, 11), (2, 2), (1, 1)] {
            try run("watermark=image=\(path)", picture: pic, width: w, height: h, left: 0, top: 0)
            try run("watermark=image=\(path):x=-3:y=-2", picture: pic, width: w, height: h,
                    left: w - 3 - 40, top: h - 2 - 30, range: .full)
            try run("watermark=image=\(path):x=-7:y=-5", picture: pic, width: w, height: h,
                    left: w - 7 - 40, top: h - 5 - 30)
            try run("watermark=image=\(path):corner=bottom-right:margin=0", picture: pic, width: w, height: h,
                    left: w - 40, top: h - 30)
        }
    }

    func testImageEntirelyOutsideChangesNothing() throws {
        let pic = picture(width: 10, height: 10, seed: 10)
        let path = writeRGBA(pic)
        for (x, y) in [(64, 0), (0, 48), (200, 200), (-(64 + 5), 0), (0, -(48 + 1)), (-100, -100)] {
            let e = try run("watermark=image=\(path):x=\(x):y=\(y)", picture: pic, width: 64, height: 48,
                            left: x >= 0 ? x : 64 - 10 + x, top: y >= 0 ? y : 48 - 10 + y, tolerance: 0)
            XCTAssertEqual(e.changed, 0)
        }
    }

    /// Opaque samples carry libyuv's conversion of the pixel; transparent ones the source.
    /// Reading the converted Y/U/V back from an opaque watermark, the blend of a partly
    /// transparent one must be the exactly rounded integer blend, sample for sample.
    func testBlendArithmeticIsExactlyRounded() throws {
        // 4x4 blocks of one colour each: per 2x2 chroma block, one colour and four alphas.
        let (bw, bh) = (8, 6)
        var opaque = Picture(width: bw * 2, height: bh * 2, rgba: [])
        var varying = opaque
        let colours = picture(width: bw * bh, height: 1, seed: 11)
        for y in 0..<bh * 2 {
            for x in 0..<bw * 2 {
                let k = (y / 2) * bw + x / 2
                let c = colours.rgba[(k * 4)..<(k * 4 + 3)]
                opaque.rgba += c + [255]
                varying.rgba += c + [UInt8(truncatingIfNeeded: (x * 37 + y * 91 + k * 13) % 256)]
            }
        }
        let opaquePath = writeRGBA(opaque, "opaque.png"), varyingPath = writeRGBA(varying, "varying.png")
        for range in [ColorRange.limited, .full] {
            for opacity in [1.0, 0.5, 0.3] {
                // x=4, y=2: even, so each colour block is one chroma sample.
                let reference = try VideoChain("watermark=image=\(opaquePath):x=4:y=2", registry: registry)
                let referenceBuffer = patternBuffer(width: 32, height: 20, range: range)
                let converted = try reference.process(referenceBuffer.frame)
                let convertedPlanes = snapshot(converted)
                let convertedStrides = (0..<3).map { converted.stride($0) }
                withExtendedLifetime(referenceBuffer) {}
                let chain = try VideoChain("watermark=image=\(varyingPath):x=4:y=2:opacity=\(opacity)", registry: registry)
                let buffer = patternBuffer(width: 32, height: 20, range: range, seed: 1)
                defer { withExtendedLifetime(buffer) {} }
                let before = snapshot(buffer.frame)
                let out = try chain.process(buffer.frame)
                for y in 0..<bh * 2 {
                    for x in 0..<bw * 2 {
                        let a = Int((Double(varying.rgba[(y * bw * 2 + x) * 4 + 3]) * opacity).rounded())
                        let (fx, fy) = (x + 4, y + 2)
                        let img = Int(convertedPlanes[0][fy * convertedStrides[0] + fx])
                        let src = Int(before[0][fy * out.stride(0) + fx])
                        XCTAssertEqual(Int(out.plane(0)[fy * out.stride(0) + fx]), (src * (255 - a) + img * a + 127) / 255,
                                       "luma (\(fx), \(fy)) \(range) opacity \(opacity)")
                    }
                }
                for p in 1...2 {
                    for cy in 0..<bh {
                        for cx in 0..<bw {
                            var s = 0
                            for dy in 0..<2 {
                                for dx in 0..<2 {
                                    s += Int((Double(varying.rgba[((2 * cy + dy) * bw * 2 + 2 * cx + dx) * 4 + 3]) * opacity).rounded())
                                }
                            }
                            let (fx, fy) = (cx + 2, cy + 1)
                            let img = Int(convertedPlanes[p][fy * convertedStrides[p] + fx])
                            let src = Int(before[p][fy * out.stride(p) + fx])
                            XCTAssertEqual(Int(out.plane(p)[fy * out.stride(p) + fx]), (src * (1020 - s) + img * s + 510) / 1020,
                                           "plane \(p) (\(fx), \(fy)) \(range) opacity \(opacity)")
                        }
                    }
                }
            }
        }
    }

    /// An opaque watermark replaces the samples: end to end, the plugin's Y/U/V of an opaque
    /// image against the BT.601 formulas (chroma: the mean of the four pixels' formula values).
    func testOpaqueConversionMatchesBT601Formulas() throws {
        var pic = picture(width: 24, height: 16, seed: 12)
        for i in stride(from: 3, to: pic.rgba.count, by: 4) { pic.rgba[i] = 255 }
        let path = writeRGBA(pic)
        for range in [ColorRange.limited, .full] {
            let chain = try VideoChain("watermark=image=\(path):x=2:y=2", registry: registry)
            let buffer = patternBuffer(width: 30, height: 20, range: range)
            defer { withExtendedLifetime(buffer) {} }
            let out = try chain.process(buffer.frame)
            var worst = [0.0, 0.0, 0.0]
            for y in 0..<16 {
                for x in 0..<24 {
                    let px = pic.pixel(x, y)
                    let error = abs(Double(out.plane(0)[(y + 2) * out.stride(0) + x + 2]) - Self.yuv(px.r, px.g, px.b, range).0)
                    worst[0] = max(worst[0], error)
                }
            }
            for p in 1...2 {
                for cy in 0..<8 {
                    for cx in 0..<12 {
                        var mean = 0.0
                        for k in 0..<4 {
                            let px = pic.pixel(2 * cx + k % 2, 2 * cy + k / 2)
                            let c = Self.yuv(px.r, px.g, px.b, range)
                            mean += (p == 1 ? c.1 : c.2) / 4
                        }
                        let got = Double(out.plane(p)[(cy + 1) * out.stride(p) + cx + 1])
                        worst[p] = max(worst[p], abs(got - mean))
                    }
                }
            }
            for p in 0..<3 {
                XCTAssertLessThanOrEqual(worst[p], conversionTolerance, "plane \(p), \(range) range")
            }
        }
    }

    // MARK: PNG kinds

    /// Each kind of PNG must decode to the RGBA the test wrote: the watermark of each is
    /// checked against the model of that RGBA.
    func testPaletteGreyGreyAlphaRGBAnd16BitPNGsDecode() throws {
        let (w, h) = (11, 7)
        let base = picture(width: w, height: h, seed: 13)

        // Grey.
        var grey = [UInt8](repeating: 0, count: w * h)
        for i in 0..<w * h { grey[i] = UInt8((i * 23) % 256) }
        let greyPath = writePNG("grey.png", width: w, height: h, format: 0, pixels: grey)
        let greyPicture = Picture(width: w, height: h, rgba: grey.flatMap { [$0, $0, $0, 255] })

        // Grey + alpha.
        var ga = [UInt8](repeating: 0, count: w * h * 2)
        for i in 0..<w * h { ga[2 * i] = UInt8((i * 29) % 256); ga[2 * i + 1] = base.rgba[i * 4 + 3] }
        let gaPath = writePNG("ga.png", width: w, height: h, format: UInt32(PNG_FORMAT_FLAG_ALPHA), pixels: ga)
        var gaPicture = Picture(width: w, height: h, rgba: [])
        for i in 0..<w * h {
            let g = ga[2 * i]
            gaPicture.rgba += [g, g, g, ga[2 * i + 1]]
        }

        // RGB.
        var rgb: [UInt8] = []
        var rgbPicture = Picture(width: w, height: h, rgba: [])
        for i in 0..<w * h {
            let pixel: [UInt8] = [base.rgba[i * 4], base.rgba[i * 4 + 1], base.rgba[i * 4 + 2]]
            rgb += pixel
            rgbPicture.rgba += pixel + [255]
        }
        let rgbPath = writePNG("rgb.png", width: w, height: h, format: UInt32(PNG_FORMAT_FLAG_COLOR), pixels: rgb)

        // Palette with tRNS: 6 RGBA entries, some transparent.
        let palette: [UInt8] = [255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0, 250, 250, 250, 255, 10, 20, 30, 60, 200, 100, 50, 255]
        let indices = (0..<w * h).map { UInt8(($0 * 5 + $0 / w) % 6) }
        let palettePath = palette.withUnsafeBytes { map in
            writePNG("palette.png", width: w, height: h, format: UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_COLORMAP),
                     pixels: indices, colormap: map.baseAddress!, colormapEntries: 6)
        }
        let palettePicture = Picture(width: w, height: h, rgba: indices.flatMap { palette[(Int($0) * 4)..<(Int($0) * 4 + 4)] })
        XCTAssertEqual(try pngHeader(palettePath).colourType, 3, "written as a palette PNG")
        XCTAssertTrue(try pngChunks(palettePath).contains("tRNS"))

        // 16-bit linear RGBA (premultiplied, as PNG_FORMAT_FLAG_LINEAR is), opaque and
        // transparent pixels. libpng reduces linear 16-bit data to 8 bits with its power law
        // PNG_GAMMA_sRGB (2.2) and 16-bit gamma tables that lose precision in the darks (a
        // few codes below ~55), so the colours are kept in 64...255, written as
        // (v / 255)^2.2, and must read back within 1 code of v. The model below is what the
        // test's own libpng read gives, so only the plugin's handling is under test.
        var sixteen = [UInt16](repeating: 0, count: w * h * 4)
        var intended = base
        for i in 0..<w * h {
            let opaque = base.rgba[i * 4 + 3] >= 128
            for c in 0..<3 {
                let v = 64 + Int(base.rgba[i * 4 + c]) * 191 / 255
                intended.rgba[i * 4 + c] = UInt8(v)
                sixteen[i * 4 + c] = opaque ? UInt16((pow(Double(v) / 255, 2.2) * 65535).rounded()) : 0
            }
            sixteen[i * 4 + 3] = opaque ? 65535 : 0
            intended.rgba[i * 4 + 3] = opaque ? 255 : 0
        }
        let sixteenPath = writePNG("sixteen.png", width: w, height: h,
                                   format: UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_LINEAR),
                                   pixels: sixteen)
        XCTAssertEqual(try pngHeader(sixteenPath).bitDepth, 16, "written as a 16-bit PNG")
        let sixteenPicture = try readPNG(sixteenPath)
        for i in 0..<w * h where intended.rgba[i * 4 + 3] == 255 {
            for c in 0..<3 {
                XCTAssertLessThanOrEqual(abs(Int(sixteenPicture.rgba[i * 4 + c]) - Int(intended.rgba[i * 4 + c])), 1, "pixel \(i)")
            }
        }
        for i in 0..<w * h {
            XCTAssertEqual(sixteenPicture.rgba[i * 4 + 3], intended.rgba[i * 4 + 3], "alpha of pixel \(i)")
        }

        for (path, pic, name) in [(greyPath, greyPicture, "grey"), (gaPath, gaPicture, "grey+alpha"), (rgbPath, rgbPicture, "RGB"),
                                  (palettePath, palettePicture, "palette+tRNS"), (sixteenPath, sixteenPicture, "16-bit")] {
            for range in [ColorRange.limited, .full] {
                let e = try run("watermark=image=\(path):x=3:y=1", picture: pic, width: 20, height: 12, left: 3, top: 1, range: range)
                XCTAssertGreaterThan(e.changed, 0, name)
            }
        }
    }

    /// Reads a PNG as 8-bit RGBA with libpng's simplified API, as the plugin is meant to.
    func readPNG(_ path: String) throws -> Picture {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_file(&image, path) != 0 else { throw XCTSkip("libpng cannot read \(path)") }
        image.format = Self.rgbaFormat
        var rgba = [UInt8](repeating: 0, count: Int(image.width * image.height) * 4)
        let ok = rgba.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
        XCTAssertNotEqual(ok, 0)
        return Picture(width: Int(image.width), height: Int(image.height), rgba: rgba)
    }

    /// IHDR's bit depth and colour type of a PNG file.
    func pngHeader(_ path: String) throws -> (bitDepth: UInt8, colourType: UInt8) {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return (data[24], data[25])
    }

    /// The chunk types of a PNG file, in order.
    func pngChunks(_ path: String) throws -> [String] {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var chunks: [String] = []
        var offset = 8
        while offset + 8 <= data.count {
            let length = Int(data[offset]) << 24 | Int(data[offset + 1]) << 16 | Int(data[offset + 2]) << 8 | Int(data[offset + 3])
            chunks.append(String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self))
            offset += 12 + length
        }
        return chunks
    }

    // MARK: Errors

    func assertRefused(_ path: String, _ reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let chain = try VideoChain("watermark=image='\(path)'", registry: registry)
        XCTAssertThrowsChainError(try chain.negotiate(VideoFormat(width: 64, height: 48))) {
            guard case .refused(filter: "watermark", _, let message) = $0 else {
                return XCTFail("expected refused, got \($0)", file: file, line: line)
            }
            XCTAssertTrue(message.hasPrefix("\(path): "), message, file: file, line: line)
            XCTAssertTrue(message.contains(reason), "'\(message)' should say '\(reason)'", file: file, line: line)
        }
    }

    func testErrorsNameTheFileAndTheReason() throws {
        try assertRefused(directory.appendingPathComponent("missing.png").path, "cannot open the image (No such file or directory)")

        let text = directory.appendingPathComponent("notes.png")
        try Data("this is not a picture".utf8).write(to: text)
        try assertRefused(text.path, "not a PNG file (bad signature)")

        let empty = directory.appendingPathComponent("empty.png")
        try Data().write(to: empty)
        try assertRefused(empty.path, "not a PNG file (the file is empty)")

        try assertRefused(directory.path, "cannot read the image (Is a directory)")

        let good = writeRGBA(picture(width: 64, height: 64, seed: 14), "good.png")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        let truncated = directory.appendingPathComponent("truncated.png")
        try bytes.prefix(bytes.count / 2).write(to: truncated)
        try assertRefused(truncated.path, "truncated PNG")
        let headerOnly = directory.appendingPathComponent("header-only.png")
        try bytes.prefix(20).write(to: headerOnly)
        try assertRefused(headerOnly.path, "truncated PNG")

        var corrupt = [UInt8](bytes)
        for i in 60..<min(corrupt.count, 200) { corrupt[i] ^= 0x5A } // inside IDAT: bad CRC / zlib data
        let corruptURL = directory.appendingPathComponent("corrupt.png")
        try Data(corrupt).write(to: corruptURL)
        try assertRefused(corruptURL.path, "corrupt PNG (libpng: ")

        let wide = [UInt8](repeating: 200, count: 5000 * 10 * 4)
        let large = wide.withUnsafeBytes { writePNG("large.png", width: 5000, height: 10, format: Self.rgbaFormat, pixels: $0.baseAddress!) }
        try assertRefused(large, "image is 5000x10, larger than the 4096x4096 limit")
    }

    func testEmptyImagePathIsRefused() throws {
        let chain = try VideoChain("watermark=image=''", registry: registry)
        XCTAssertThrowsChainError(try chain.negotiate(VideoFormat(width: 16, height: 16))) {
            guard case .refused(filter: "watermark", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(message, "no image; set image=<path to a PNG file>")
        }
    }

    // MARK: Renegotiation and real-time safety

    func testNewFrameSizeAndParameterChangesReconfigure() throws {
        let pic = picture(width: 9, height: 7, seed: 15)
        let path = writeRGBA(pic)
        let chain = try VideoChain("watermark=image=\(path):x=-2:y=-3", registry: registry)
        for (w, h, range) in [(32, 24, ColorRange.limited), (45, 31, .full), (32, 24, .full)] {
            let buffer = patternBuffer(width: w, height: h, range: range, extraStride: 1)
            defer { withExtendedLifetime(buffer) {} }
            let before = snapshot(buffer.frame)
            check(try chain.process(buffer.frame), before: before, picture: pic, left: w - 2 - 9, top: h - 3 - 7, range: range)
        }
        try chain.filters[0].set("corner", text: "top-left")
        try chain.filters[0].set("margin", text: "5")
        try chain.filters[0].set("opacity", text: "0.5")
        let buffer = patternBuffer(width: 32, height: 24, range: .full, extraStride: 1)
        defer { withExtendedLifetime(buffer) {} }
        let before = snapshot(buffer.frame)
        check(try chain.process(buffer.frame), before: before, picture: pic, left: 5, top: 5, opacity: 0.5, range: .full)

        // A new image at the same path is read again when `image` is set again.
        let other = picture(width: 6, height: 4, seed: 16)
        _ = writeRGBA(other)
        try chain.filters[0].set("image", text: path)
        let again = patternBuffer(width: 32, height: 24, range: .full, extraStride: 1)
        defer { withExtendedLifetime(again) {} }
        let againBefore = snapshot(again.frame)
        check(try chain.process(again.frame), before: againBefore, picture: other, left: 5, top: 5, opacity: 0.5, range: .full)
    }

    func testProcessDoesNotAllocate() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let path = writeRGBA(picture(width: 64, height: 40, seed: 17))
        let chain = try VideoChain("watermark=image=\(path):x=-5:y=3:opacity=0.7", registry: registry)
        let buffer = patternBuffer(width: 160, height: 90, extraStride: 5)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        let before = rawfx_thread_allocation_count()
        for _ in 0..<100 { _ = try chain.process(buffer.frame) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
    }
}

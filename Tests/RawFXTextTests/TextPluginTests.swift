import CFreeType
import CHarfBuzz
import Foundation
import RawFX
import RawFXAllocCounter
import TextKernels
import XCTest

/// The `text` filter of libRawFXText.so (Plugins/Text), loaded through the engine's registry
/// and run in video chains, checked against FreeType and HarfBuzz called here directly: the
/// glyphs hb_shape gives, FreeType's FT_Render_Glyph bitmaps at those positions, and the
/// blend's formula computed here in floating point.
final class TextPluginTests: XCTestCase {
    static let registry: PluginRegistry? = {
        guard let library = PluginRegistry(environment: [:]).libraries.first(where: { $0.name == "rawfx-text" })
        else { return nil }
        let registry = PluginRegistry.empty()
        return (try? registry.load(path: library.path)) != nil ? registry : nil
    }()

    var registry: PluginRegistry!
    var engine: OpaquePointer!
    var layout: OpaquePointer!

    override func setUpWithError() throws {
        guard let registry = Self.registry else {
            throw XCTSkip("libRawFXText.so is not built next to the tests (swift build --product RawFXText)")
        }
        self.registry = registry
        var error = [CChar](repeating: 0, count: 512)
        guard let engine = rfx_text_engine_new(nil, &error, error.count) else {
            throw XCTSkip("no default font: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        self.engine = engine
        layout = rfx_text_layout_new()
    }

    override func tearDown() {
        if let layout { rfx_text_layout_free(layout) }
        if let engine { rfx_text_engine_free(engine) }
    }

    // MARK: Helpers

    /// A flat I420 frame: Y `luma`, U and V 128, `extraStride` bytes of 0xEE padding per row.
    func flatBuffer(width: Int, height: Int, extraStride: Int = 0, luma: UInt8 = 100) -> VideoBuffer {
        let buffer = VideoBuffer(format: VideoFormat(width: width, height: height), strideAlignment: 1,
                                 extraStride: extraStride)
        let f = buffer.frame
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h {
                let row = f.plane(p) + y * f.stride(p)
                for x in 0..<f.stride(p) { row[x] = x < w ? (p == 0 ? luma : 128) : 0xEE }
            }
        }
        return buffer
    }

    func planeBytes(_ frame: VideoFrame, _ p: Int) -> [UInt8] {
        let (w, h) = frame.planeSize(p)
        var out: [UInt8] = []
        for y in 0..<h { out.append(contentsOf: UnsafeBufferPointer(start: frame.plane(p) + y * frame.stride(p), count: w)) }
        return out
    }

    func paddingBytes(_ frame: VideoFrame, _ p: Int) -> [UInt8] {
        let (w, h) = frame.planeSize(p)
        var out: [UInt8] = []
        for y in 0..<h {
            out.append(contentsOf: UnsafeBufferPointer(start: frame.plane(p) + y * frame.stride(p) + w,
                                                       count: frame.stride(p) - w))
        }
        return out
    }

    func chain(_ parameters: [(String, String)]) throws -> VideoChain {
        try VideoChain(specs: [FilterSpec("text", parameters)], registry: registry)
    }

    /// One frame through `chain`: the three planes, packed.
    func run(_ chain: VideoChain, _ buffer: VideoBuffer) throws -> [[UInt8]] {
        try withExtendedLifetime((chain, buffer)) {
            let out = try chain.process(buffer.frame)
            return (0..<3).map { planeBytes(out, $0) }
        }
    }

    /// FreeType and HarfBuzz, straight: one font at one pixel size.
    final class Reference {
        var library: FT_Library?
        var face: FT_Face?
        var font: OpaquePointer?

        init(path: String, size: Int) throws {
            guard FT_Init_FreeType(&library) == 0, FT_New_Face(library, path, 0, &face) == 0 else {
                throw XCTSkip("FreeType cannot open \(path)")
            }
            FT_Set_Pixel_Sizes(face, 0, FT_UInt(size))
            font = hb_ft_font_create_referenced(face)
        }

        deinit {
            hb_font_destroy(font)
            FT_Done_FreeType(library)
        }

        /// Pixels from a line's top to its baseline, as the plugin rounds it (up).
        var ascender: Int { Int((face!.pointee.size.pointee.metrics.ascender + 63) >> 6) }

        struct Glyph: Equatable { var id: UInt32; var x: Int32; var y: Int32; var cluster: UInt32 }

        /// hb_shape after hb_buffer_guess_segment_properties: glyphs with x = pen + x_offset and
        /// y = -y_offset (26.6), the advance, the direction.
        func shape(_ text: String) -> (glyphs: [Glyph], advance: Int32, direction: hb_direction_t) {
            let buffer = hb_buffer_create()
            defer { hb_buffer_destroy(buffer) }
            hb_buffer_add_utf8(buffer, text, -1, 0, -1)
            hb_buffer_guess_segment_properties(buffer)
            hb_shape(font, buffer, nil, 0)
            var count: UInt32 = 0
            let info = hb_buffer_get_glyph_infos(buffer, &count)!
            let positions = hb_buffer_get_glyph_positions(buffer, nil)!
            var pen: Int32 = 0
            var glyphs: [Glyph] = []
            for i in 0..<Int(count) {
                glyphs.append(Glyph(id: info[i].codepoint, x: pen + positions[i].x_offset, y: -positions[i].y_offset,
                                    cluster: info[i].cluster))
                pen += positions[i].x_advance
            }
            return (glyphs, pen, hb_buffer_get_direction(buffer))
        }

        func width(_ text: String) -> Int { Int((shape(text).advance + 63) >> 6) }

        /// FreeType's stroker around each glyph (FT_Glyph_Stroke, round caps and joins, `radius`
        /// pixels), rendered by FT_Glyph_To_Bitmap and placed as `render` places the glyphs.
        func renderOutline(_ glyphs: [Glyph], radius: Int, originX: Int, originY: Int, width: Int, height: Int) -> [UInt8] {
            var mask = [UInt8](repeating: 0, count: width * height)
            var stroker: FT_Stroker?
            XCTAssertEqual(FT_Stroker_New(library, &stroker), 0)
            defer { FT_Stroker_Done(stroker) }
            FT_Stroker_Set(stroker, FT_Fixed(radius * 64), FT_STROKER_LINECAP_ROUND, FT_STROKER_LINEJOIN_ROUND, 0)
            for g in glyphs {
                XCTAssertEqual(FT_Load_Glyph(face, g.id, FT_Int32(FT_LOAD_NO_BITMAP)), 0)
                var glyph: FT_Glyph?
                XCTAssertEqual(FT_Get_Glyph(face!.pointee.glyph, &glyph), 0)
                XCTAssertEqual(FT_Glyph_Stroke(&glyph, stroker, 1), 0)
                XCTAssertEqual(FT_Glyph_To_Bitmap(&glyph, FT_RENDER_MODE_NORMAL, nil, 1), 0)
                let bitmapGlyph = UnsafeMutableRawPointer(glyph!).assumingMemoryBound(to: FT_BitmapGlyphRec.self).pointee
                let left = originX + Int((g.x + 32) >> 6) + Int(bitmapGlyph.left)
                let top = originY + ascender + Int((g.y + 32) >> 6) - Int(bitmapGlyph.top)
                let bitmap = bitmapGlyph.bitmap
                for r in 0..<Int(bitmap.rows) {
                    for c in 0..<Int(bitmap.width) {
                        let x = left + c, y = top + r
                        guard x >= 0, x < width, y >= 0, y < height else { continue }
                        mask[y * width + x] = max(mask[y * width + x], bitmap.buffer[r * Int(bitmap.pitch) + c])
                    }
                }
                FT_Done_Glyph(glyph)
            }
            return mask
        }

        /// FT_Load_Glyph + FT_Render_Glyph (FT_RENDER_MODE_NORMAL) of each glyph, its bitmap's
        /// top-left at (originX + round(x) + bitmap_left, originY + ascender + round(y) - bitmap_top),
        /// overlaps keeping the larger coverage, clipped to a width x height frame.
        func render(_ glyphs: [Glyph], originX: Int, originY: Int, width: Int, height: Int) -> [UInt8] {
            var mask = [UInt8](repeating: 0, count: width * height)
            func round26(_ v: Int32) -> Int { Int((v + 32) >> 6) }
            for g in glyphs {
                XCTAssertEqual(FT_Load_Glyph(face, g.id, FT_Int32(FT_LOAD_DEFAULT)), 0)
                XCTAssertEqual(FT_Render_Glyph(face!.pointee.glyph, FT_RENDER_MODE_NORMAL), 0)
                let slot = face!.pointee.glyph!.pointee
                let left = originX + round26(g.x) + Int(slot.bitmap_left)
                let top = originY + ascender + round26(g.y) - Int(slot.bitmap_top)
                for r in 0..<Int(slot.bitmap.rows) {
                    for c in 0..<Int(slot.bitmap.width) {
                        let x = left + c, y = top + r
                        guard x >= 0, x < width, y >= 0, y < height else { continue }
                        let v = slot.bitmap.buffer[r * Int(slot.bitmap.pitch) + c]
                        mask[y * width + x] = max(mask[y * width + x], v)
                    }
                }
            }
            return mask
        }
    }

    /// BT.601 limited range, as RawFXCompose's YUVColor.
    func yuv(_ r: Double, _ g: Double, _ b: Double) -> (y: Double, u: Double, v: Double) {
        let luma = 0.299 * r + 0.587 * g + 0.114 * b
        func q(_ v: Double) -> Double { max(0, min(255, v.rounded())) }
        return (q(16 + luma * 219 / 255), q(128 + (b - luma) / 1.772 * 224 / 255), q(128 + (r - luma) / 1.402 * 224 / 255))
    }

    /// The largest difference between the plugin's planes and the blend formula over `mask`
    /// (luma: base + (colour - base) * coverage * opacity; chroma: the 2x2 mean coverage).
    func largestBlendError(_ planes: [[UInt8]], mask: [UInt8], width: Int, height: Int, base: UInt8,
                           colour: (y: Double, u: Double, v: Double), opacity: Double) -> Int {
        var worst = 0
        for i in 0..<width * height {
            let a = Double(mask[i]) / 255 * opacity
            let expected = (Double(base) + (colour.y - Double(base)) * a).rounded()
            worst = max(worst, abs(Int(planes[0][i]) - Int(expected)))
        }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        for y in 0..<ch {
            for x in 0..<cw {
                var sum = 0
                for dy in 0..<2 { for dx in 0..<2 where 2 * x + dx < width && 2 * y + dy < height {
                    sum += Int(mask[(2 * y + dy) * width + 2 * x + dx])
                } }
                let a = Double(sum) / 4 / 255 * opacity
                let u = (128 + (colour.u - 128) * a).rounded(), v = (128 + (colour.v - 128) * a).rounded()
                worst = max(worst, abs(Int(planes[1][y * cw + x]) - Int(u)), abs(Int(planes[2][y * cw + x]) - Int(v)))
            }
        }
        return worst
    }

    func info() -> rfx_text_layout_info { rfx_text_layout_get_info(layout) }

    func glyphs() -> [Reference.Glyph] {
        (0..<info().glyph_count).map {
            let g = rfx_text_layout_glyph(layout, $0)
            return Reference.Glyph(id: g.glyph_id, x: g.x, y: g.y, cluster: 0)
        }
    }

    func lay(_ text: String, size: Int32, maxWidth: Int32 = 0, maxLines: Int32 = 4) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(rfx_text_layout_run(engine, bytes.map { CChar(bitPattern: $0) }, bytes.count, size, maxWidth,
                                           maxLines, Int32(RFX_TEXT_ALIGN_LEFT), layout), 0)
    }

    func primaryFont() -> String { String(cString: rfx_text_engine_font_path(engine, 0)) }

    // MARK: (1) FreeType's rendering at HarfBuzz's positions, and the blend

    func testCoverageIsFreeTypesRenderingAtHarfBuzzPositionsAndTheBlendIsTheFormula() throws {
        let text = "Hello, RawFX! Åg"
        let (width, height, size, ox, oy) = (320, 96, 32, 10, 20)
        let reference = try Reference(path: primaryFont(), size: size)
        let shaped = reference.shape(text)

        // The kernel's layout: hb_shape's glyphs and positions, on the baseline.
        lay(text, size: Int32(size))
        XCTAssertEqual(info().line_count, 1)
        XCTAssertEqual(info().ascender, Int32(reference.ascender))
        XCTAssertEqual(glyphs().map(\.id), shaped.glyphs.map(\.id))
        XCTAssertEqual(glyphs().map(\.x), shaped.glyphs.map(\.x))
        XCTAssertEqual(glyphs().map(\.y), shaped.glyphs.map { $0.y + Int32(reference.ascender * 64) })

        // The plugin, through a chain: white, then a colour with chroma, at two opacities.
        let expectedMask = reference.render(shaped.glyphs, originX: ox, originY: oy, width: width, height: height)
        XCTAssertGreaterThan(expectedMask.filter { $0 == 255 }.count, 100, "the reference drew the glyphs")
        for (colour, rgb, opacity) in [("white", (255.0, 255.0, 255.0), 1.0), ("#ffcc00", (255.0, 204.0, 0.0), 0.5)] {
            let chain = try self.chain([("text", text), ("size", "\(size)"), ("outline", "0"), ("anchor", "top_left"),
                                        ("margin", "0"), ("x", "\(ox)"), ("y", "\(oy)"), ("color", colour),
                                        ("opacity", "\(opacity)")])
            let planes = try run(chain, flatBuffer(width: width, height: height))
            let error = largestBlendError(planes, mask: expectedMask, width: width, height: height, base: 100,
                                          colour: yuv(rgb.0, rgb.1, rgb.2), opacity: opacity)
            XCTAssertLessThanOrEqual(error, 1, "\(colour) at \(opacity): samples differ by up to \(error)")
        }

        // The mask itself, byte for byte (rfx_text_render, as on_callback calls it).
        let plane = UnsafeMutablePointer<UInt8>.allocate(capacity: width * height)
        let outline = UnsafeMutablePointer<UInt8>.allocate(capacity: width * height)
        defer { plane.deallocate(); outline.deallocate() }
        var mask = rfx_text_mask()
        mask.fill = plane
        mask.outline = outline
        mask.capacity = width * height
        XCTAssertEqual(rfx_text_render(engine, layout, Int32(size), Int32(ox), Int32(oy), Int32(width), Int32(height),
                                       0, -1, &mask), 0)
        var drawn = [UInt8](repeating: 0, count: width * height)
        for y in 0..<Int(mask.h) { for x in 0..<Int(mask.w) {
            drawn[(Int(mask.y) + y) * width + Int(mask.x) + x] = plane[y * Int(mask.w) + x]
        } }
        XCTAssertEqual(drawn, expectedMask)
    }

    func testOutlineIsFreeTypesStrokerUnderTheGlyphs() throws {
        let text = "Outline"
        let (width, height, size, radius) = (200, 60, 30, 3)
        let reference = try Reference(path: primaryFont(), size: size)
        let shaped = reference.shape(text)
        let fill = reference.render(shaped.glyphs, originX: 8, originY: 8, width: width, height: height)
        let outline = reference.renderOutline(shaped.glyphs, radius: radius, originX: 8, originY: 8, width: width, height: height)
        XCTAssertGreaterThan(outline.filter { $0 == 255 }.count, fill.filter { $0 == 255 }.count)
        let chain = try self.chain([("text", text), ("size", "\(size)"), ("outline", "\(radius)"), ("anchor", "top_left"),
                                    ("margin", "8"), ("color", "yellow"), ("outline_color", "0,0,255")])
        let planes = try run(chain, flatBuffer(width: width, height: height))
        // Outline first, then the glyphs, each by the formula (rounded per layer).
        let (o, f) = (yuv(0, 0, 255), yuv(255, 255, 0))
        func layer(_ base: Double, _ colour: Double, _ a: Double) -> Double { (base + (colour - base) * a).rounded() }
        var worst = 0
        for i in 0..<width * height {
            let y = layer(layer(100, o.y, Double(outline[i]) / 255), f.y, Double(fill[i]) / 255)
            worst = max(worst, abs(Int(planes[0][i]) - Int(y)))
        }
        let cw = width / 2
        for cy in 0..<height / 2 {
            for cx in 0..<cw {
                func mean(_ m: [UInt8]) -> Double {
                    let s = [0, 1, width, width + 1].reduce(0) { $0 + Int(m[(2 * cy) * width + 2 * cx + $1]) }
                    return Double((s + 2) / 4) / 255
                }
                let u = layer(layer(128, o.u, mean(outline)), f.u, mean(fill))
                let v = layer(layer(128, o.v, mean(outline)), f.v, mean(fill))
                worst = max(worst, abs(Int(planes[1][cy * cw + cx]) - Int(u)), abs(Int(planes[2][cy * cw + cx]) - Int(v)))
            }
        }
        XCTAssertLessThanOrEqual(worst, 1, "samples differ by up to \(worst)")
    }

    // MARK: (2) Arabic: right to left, joined, as hb_shape gives

    func testArabicIsShapedRightToLeftWithJoinedFormsExactlyAsHarfBuzz() throws {
        let text = "مرحبا بالعالم"
        lay(text, size: 40)
        XCTAssertEqual(info().skipped, 0)
        XCTAssertEqual(info().rtl, 1)
        let font = rfx_text_layout_glyph(layout, 0).font
        for i in 0..<info().glyph_count { XCTAssertEqual(rfx_text_layout_glyph(layout, i).font, font) }
        let path = String(cString: rfx_text_engine_font_path(engine, font))
        let reference = try Reference(path: path, size: 40)
        let shaped = reference.shape(text)
        XCTAssertEqual(shaped.direction, HB_DIRECTION_RTL)
        XCTAssertEqual(glyphs().map(\.id), shaped.glyphs.map(\.id), "glyph ids, \(path)")
        XCTAssertEqual(glyphs().map(\.x), shaped.glyphs.map(\.x))
        XCTAssertEqual(glyphs().map(\.y), shaped.glyphs.map { $0.y + Int32(reference.ascender * 64) })
        // Visual order: the first glyph drawn at the left is the text's last letter (clusters fall).
        XCTAssertEqual(shaped.glyphs.first?.cluster, UInt32(Array(text.utf8).count - "م".utf8.count))
        XCTAssertEqual(shaped.glyphs.last?.cluster, 0)
        // Joined forms: most letters are not their isolated (nominal) glyph.
        let nominal = Set(text.unicodeScalars.map { FT_Get_Char_Index(reference.face, FT_ULong($0.value)) })
        let joined = glyphs().filter { !nominal.contains($0.id) }.count
        XCTAssertGreaterThanOrEqual(joined, 8, "glyphs in a joined form: \(joined) of \(glyphs().count)")

        // The plugin draws exactly those glyphs (its frame, against FreeType at hb's positions).
        let (width, height) = (300, 80)
        let chain = try self.chain([("text", text), ("size", "40"), ("outline", "0"), ("anchor", "top_left"),
                                    ("margin", "0"), ("x", "5"), ("y", "6")])
        let planes = try run(chain, flatBuffer(width: width, height: height))
        let mask = reference.render(shaped.glyphs, originX: 5, originY: 6, width: width, height: height)
        XCTAssertLessThanOrEqual(largestBlendError(planes, mask: mask, width: width, height: height, base: 100,
                                                   colour: yuv(255, 255, 255), opacity: 1), 1)
    }

    func testCharactersThePrimaryFontLacksComeFromAFallbackFont() throws {
        // Noto Sans has no Arabic: the Arabic run comes from a fallback (Noto Sans Arabic, or
        // DejaVu Sans, whichever the list opens first), shaped as hb_shape shapes it there.
        let latin = "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf"
        guard FileManager.default.fileExists(atPath: latin) else { throw XCTSkip("\(latin) is not installed") }
        var error = [CChar](repeating: 0, count: 512)
        let engine = try XCTUnwrap(rfx_text_engine_new(latin, &error, error.count))
        defer { rfx_text_engine_free(engine) }
        let bytes = Array("Hi مرحبا".utf8).map { CChar(bitPattern: $0) }
        XCTAssertEqual(rfx_text_layout_run(engine, bytes, bytes.count, 40, 0, 1, Int32(RFX_TEXT_ALIGN_LEFT), layout), 0)
        XCTAssertEqual(info().skipped, 0)
        XCTAssertEqual(info().rtl, 0, "the line starts with Latin: left to right")
        let all = (0..<info().glyph_count).map { rfx_text_layout_glyph(layout, $0) }
        XCTAssertTrue(all.prefix(3).allSatisfy { $0.font == 0 }, "H, i and the space from the primary font")
        let arabic = Array(all.dropFirst(3))
        let fallback = try XCTUnwrap(arabic.first?.font)
        XCTAssertNotEqual(fallback, 0)
        XCTAssertTrue(arabic.allSatisfy { $0.font == fallback })
        let reference = try Reference(path: String(cString: rfx_text_engine_font_path(engine, fallback)), size: 40)
        let shaped = reference.shape("مرحبا")
        XCTAssertEqual(shaped.direction, HB_DIRECTION_RTL)
        XCTAssertEqual(arabic.map(\.glyph_id), shaped.glyphs.map(\.id))
        let start = arabic[0].x - shaped.glyphs[0].x // the run starts after "Hi "
        XCTAssertEqual(arabic.map { $0.x - start }, shaped.glyphs.map(\.x))
        XCTAssertEqual(Int(start + 63) >> 6, try Reference(path: latin, size: 40).width("Hi "))
    }

    /// Chinese after Latin: the CJK run comes from the CJK fallback (WenQuanYi Micro Hei from
    /// fonts-wqy-microhei, which bootstrap installs), its glyphs hb_shape's in that font, laid
    /// out after "Hi " with no character skipped.
    func testCJKComesFromTheCJKFallbackShapedAsHarfBuzz() throws {
        let cjk = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
        guard FileManager.default.fileExists(atPath: cjk) else { throw XCTSkip("\(cjk) is not installed (fonts-wqy-microhei)") }
        lay("Hi 你好，世界", size: 32)
        XCTAssertEqual(info().skipped, 0)
        let all = (0..<info().glyph_count).map { rfx_text_layout_glyph(layout, $0) }
        XCTAssertTrue(all.prefix(3).allSatisfy { $0.font == 0 }, "H, i and the space from the primary font")
        let chinese = Array(all.dropFirst(3))
        let fallback = try XCTUnwrap(chinese.first?.font)
        XCTAssertNotEqual(fallback, 0)
        XCTAssertTrue(chinese.allSatisfy { $0.font == fallback })
        XCTAssertEqual(String(cString: rfx_text_engine_font_path(engine, fallback)), cjk)
        let shaped = try Reference(path: cjk, size: 32).shape("你好，世界")
        XCTAssertEqual(chinese.map(\.glyph_id), shaped.glyphs.map(\.id))
        XCTAssertTrue(shaped.glyphs.allSatisfy { $0.id != 0 }, "every character has a glyph in the CJK font")
        let start = chinese[0].x - shaped.glyphs[0].x
        XCTAssertEqual(chinese.map { $0.x - start }, shaped.glyphs.map(\.x))
    }

    // MARK: (3) A character no font has is left out

    func testMissingGlyphIsSkippedWithoutANotdefBox() throws {
        // U+10FFFD (private use, plane 16): no font on the system maps it.
        lay("AB\u{10FFFD}C\u{F0000}", size: 32)
        XCTAssertEqual(info().skipped, 2)
        XCTAssertEqual(info().glyph_count, 3)
        XCTAssertFalse(glyphs().contains { $0.id == 0 }, "a .notdef glyph was laid out")
        let reference = try Reference(path: primaryFont(), size: 32)
        XCTAssertEqual(glyphs().map(\.id), reference.shape("ABC").glyphs.map(\.id))

        let frame = { (text: String) throws -> [[UInt8]] in
            try self.run(try self.chain([("text", text), ("anchor", "top_left"), ("box", "true")]),
                         self.flatBuffer(width: 200, height: 80))
        }
        XCTAssertEqual(try frame("AB\u{10FFFD}C"), try frame("ABC"))
        XCTAssertNotEqual(try frame("ABC"), try frame("ABD"))
    }

    // MARK: (4) Wrapping at max_width, then the ellipsis

    func testWrapsAtWordsToMaxWidthThenEndsInAnEllipsis() throws {
        let words = "The meeting's program starts at nine with the keynote and the budget review after it".split(separator: " ").map(String.init)
        let text = words.joined(separator: " ")
        let maxWidth = 260
        let reference = try Reference(path: primaryFont(), size: 24)
        // Greedy wrapping by hb_shape's widths, computed here.
        var lines: [String] = []
        var current = ""
        for word in words {
            let candidate = current.isEmpty ? word : current + " " + word
            if !current.isEmpty && reference.width(candidate) > maxWidth { lines.append(current); current = word }
            else { current = candidate }
        }
        lines.append(current)
        XCTAssertGreaterThan(lines.count, 3)

        lay(text, size: 24, maxWidth: Int32(maxWidth), maxLines: 64)
        XCTAssertEqual(Int(info().line_count), lines.count)
        XCTAssertEqual(info().ellipsized, 0)
        for (i, line) in lines.enumerated() {
            XCTAssertEqual(Int(rfx_text_layout_line_width(layout, UInt32(i))), reference.width(line), "line \(i): \(line)")
            XCTAssertLessThanOrEqual(Int(rfx_text_layout_line_width(layout, UInt32(i))), maxWidth)
        }
        XCTAssertEqual(info().line_height * Int32(lines.count), info().height)

        // Two lines: the second ends in "…" and still fits.
        lay(text, size: 24, maxWidth: Int32(maxWidth), maxLines: 2)
        XCTAssertEqual(info().line_count, 2)
        XCTAssertEqual(info().ellipsized, 1)
        let ellipsis = FT_Get_Char_Index(reference.face, 0x2026)
        XCTAssertNotEqual(ellipsis, 0)
        XCTAssertEqual(glyphs().last?.id, ellipsis)
        XCTAssertEqual(Int(rfx_text_layout_line_width(layout, 0)), reference.width(lines[0]))
        XCTAssertLessThanOrEqual(Int(rfx_text_layout_line_width(layout, 1)), maxWidth)
        XCTAssertEqual(Int(rfx_text_layout_line_width(layout, 1)), reference.width(lines[1] + "…"),
                       "the second line is kept whole when it and the ellipsis fit")

        // One word wider than max_width is cut with "…" on its line.
        lay("Supercalifragilisticexpialidocious", size: 24, maxWidth: 120, maxLines: 1)
        XCTAssertEqual(info().ellipsized, 1)
        XCTAssertLessThanOrEqual(rfx_text_layout_line_width(layout, 0), 120)
        XCTAssertEqual(glyphs().last?.id, ellipsis)

        // Through the plugin: the block is as tall as two lines (rows below it untouched).
        let chain = try self.chain([("text", text), ("size", "24"), ("max_width", "\(maxWidth)"), ("max_lines", "2"),
                                    ("anchor", "top_left"), ("margin", "0"), ("outline", "0")])
        let planes = try run(chain, flatBuffer(width: 320, height: 240))
        let lineHeight = Int(info().line_height)
        let touchedRows = (0..<240).filter { y in (0..<320).contains { planes[0][y * 320 + $0] != 100 } }
        XCTAssertLessThan(touchedRows.max() ?? 0, 2 * lineHeight + 6)
        XCTAssertGreaterThan(touchedRows.max() ?? 0, lineHeight)

        // max_width up to 1 is a fraction of the frame's width: 0.8 of 320 is 256 px.
        let byFraction = try run(try self.chain([("text", text), ("max_width", "0.8"), ("anchor", "top_left")]),
                                 flatBuffer(width: 320, height: 240))
        let byPixels = try run(try self.chain([("text", text), ("max_width", "256"), ("anchor", "top_left")]),
                               flatBuffer(width: 320, height: 240))
        XCTAssertEqual(byFraction, byPixels)
        XCTAssertNotEqual(byFraction, try run(try self.chain([("text", text), ("max_width", "100"), ("anchor", "top_left")]),
                                               flatBuffer(width: 320, height: 240)))
    }

    // MARK: (5) Changes at run time: no allocation on the frame path

    func testCaptionChangesTenTimesASecondWithoutAllocatingInProcess() throws {
        guard rawfx_allocation_counter_active() == 1 else { throw XCTSkip("the allocation counter is not interposed") }
        let chain = try self.chain([("text", "Caption 0"), ("box", "true"), ("size", "40")])
        let buffer = flatBuffer(width: 640, height: 360)
        for _ in 0..<3 { _ = try chain.process(buffer.frame) }
        var allocations: UInt64 = 0
        var last = ""
        for frame in 0..<300 {
            if frame % 3 == 0 { // 10 changes a second at 30 fps
                last = "Caption \(frame / 3): speaker \(frame % 7) — ½ × résumé مرحبا"
                try chain.control.setParameter("text.text", last)
            }
            let before = rawfx_thread_allocation_count()
            _ = try chain.process(buffer.frame)
            allocations += rawfx_thread_allocation_count() - before
            if frame % 30 == 29 { usleep(2_000) } // let the callback thread run now and then
        }
        XCTAssertEqual(allocations, 0, "allocations in 300 process calls with 100 caption changes")

        // The last caption arrives (on_callback on the host's thread), equal to a fresh chain's.
        let expected = try run(try self.chain([("text", last), ("box", "true"), ("size", "40")]),
                               flatBuffer(width: 640, height: 360))
        var got: [[UInt8]] = []
        for _ in 0..<1000 {  // 10 s at most: a bound for a lost caption, not a speed
            got = try run(chain, flatBuffer(width: 640, height: 360))
            if got == expected { break }
            usleep(10_000)
        }
        XCTAssertEqual(got, expected, "the last caption did not arrive")
    }

    func testATooLongCaptionIsRefusedWithTheLimit() throws {
        XCTAssertNoThrow(try chain([("text", String(repeating: "a", count: 1023))]))
        do {
            _ = try chain([("text", String(repeating: "é", count: 600))])
            XCTFail("a 1200-byte caption was accepted")
        } catch {
            XCTAssertTrue("\(error)".contains("1023"), "\(error)")
        }
    }

    // MARK: (6) Strides, odd sizes, text off the frame

    func testOddStridesAndTextPartlyOffTheFrameAreClipped() throws {
        let (width, height) = (101, 57)
        let text = "Clipped text"
        let reference = try Reference(path: primaryFont(), size: 30)
        let shaped = reference.shape(text)
        for (x, y) in [(-40, -12), (60, 30), (-500, 0), (0, 400)] {
            let chain = try self.chain([("text", text), ("size", "30"), ("outline", "0"), ("anchor", "top_left"),
                                        ("margin", "0"), ("x", "\(x)"), ("y", "\(y)"), ("max_width", "2000")])
            let buffer = flatBuffer(width: width, height: height, extraStride: 13)
            let frame = try withExtendedLifetime(chain) { try chain.process(buffer.frame) }
            let planes = (0..<3).map { planeBytes(frame, $0) }
            for p in 0..<3 { XCTAssertTrue(paddingBytes(frame, p).allSatisfy { $0 == 0xEE }, "padding of plane \(p) at \(x),\(y)") }
            let mask = reference.render(shaped.glyphs, originX: x, originY: y, width: width, height: height)
            XCTAssertLessThanOrEqual(largestBlendError(planes, mask: mask, width: width, height: height, base: 100,
                                                       colour: yuv(255, 255, 255), opacity: 1), 1, "at \(x),\(y)")
        }
        // Outline and box over every edge, every anchor: no crash, padding intact.
        for anchor in ["top_left", "top", "top_right", "left", "center", "right", "bottom_left", "bottom", "bottom_right"] {
            let chain = try self.chain([("text", "Wide caption over the edge"), ("size", "48"), ("outline", "4"),
                                        ("box", "true"), ("padding", "20"), ("anchor", anchor), ("x", "-7"), ("y", "5")])
            let buffer = flatBuffer(width: 33, height: 17, extraStride: 7)
            let frame = try withExtendedLifetime(chain) { try chain.process(buffer.frame) }
            for p in 0..<3 { XCTAssertTrue(paddingBytes(frame, p).allSatisfy { $0 == 0xEE }, anchor) }
        }
    }

    // MARK: Figures

    /// Time per frame of the blend (process) and of a caption change (on_callback's layout and
    /// render), printed for docs/plugins/text.md. Debug builds: the C is unoptimised here;
    /// the document's figures come from the release build (scripts/text-bench.c).
    func testPrintsTimePerFrame() throws {
        for (name, parameters) in [
            ("caption bar 1080p", [("text", "The meeting's program: keynote at nine, budget review at ten, then questions from the floor"),
                                   ("size", "48"), ("box", "true"), ("anchor", "bottom"), ("max_lines", "2")]),
            ("name label 1080p", [("text", "Ada Lovelace — Analytical Engines"), ("size", "32"), ("box", "true"),
                                  ("anchor", "bottom_left"), ("outline", "0")]),
        ] {
            let chain = try self.chain(parameters)
            let buffer = flatBuffer(width: 1920, height: 1080)
            for _ in 0..<5 { _ = try chain.process(buffer.frame) }
            let start = DispatchTime.now().uptimeNanoseconds
            let frames = 50
            for _ in 0..<frames { _ = try chain.process(buffer.frame) }
            let perFrame = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(frames) / 1e6
            print("text \(name): \(String(format: "%.3f", perFrame)) ms per frame (this build)")
        }
        // How soon a new caption shows, frames paced at 30 fps: set_param before frame 0,
        // on_callback on the host's thread, the mask taken by a later frame.
        let style = [("size", "48"), ("box", "true")]
        let chain = try self.chain([("text", "First caption")] + style)
        _ = try run(chain, flatBuffer(width: 1920, height: 1080))
        var delays: [Int] = []
        for i in 0..<10 {
            let caption = "Caption number \(i)"
            let expected = try run(try self.chain([("text", caption)] + style), flatBuffer(width: 1920, height: 1080))
            try chain.control.setParameter("text.text", caption)
            var frame = 0
            // 300 frames (10 s) bound a caption that never shows; how soon it shows is printed.
            while try run(chain, flatBuffer(width: 1920, height: 1080)) != expected, frame < 300 {
                frame += 1
                usleep(33_000)
            }
            delays.append(frame)
        }
        XCTAssertTrue(delays.allSatisfy { $0 < 300 }, "\(delays)")
        print("text: a new caption showed at frame \(delays.map(String.init).joined(separator: ", ")) after the change (frame 0: the first after it; 30 fps pacing)")
    }
}

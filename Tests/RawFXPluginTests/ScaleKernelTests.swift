import CLibYUV
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXMedia
import XCTest
@testable import RawFXTestSupport

/// The kernels behind `scale` (Sources/RawFXScaleKernels/scale_kernels.c), run through chains: quality
/// against FFmpeg's bicubic and libyuv's I420Scale on the repository's test pattern, the
/// fixed-ratio kernels against their weight formula, any other ratio in bilinear or linear
/// against the exact blend at libyuv's positions (and within one step of libyuv), box from 2:1
/// to 7:1 against the area mean's definition, the ratios and filters that run libyuv's rows
/// byte for byte against libyuv, slices on two threads against one, no allocation per frame,
/// and each SIMD level against the portable C (forced with RAWFX_KERNELS).
final class ScaleKernelTests: XCTestCase {
    var registry: PluginRegistry!

    /// The sizes conferencing scales between (issue #11).
    static let conferencingRatios = [(1920, 1080, 1280, 720), (1920, 1080, 640, 360), (1280, 720, 640, 360),
                                     (1280, 720, 960, 540), (640, 480, 320, 240)]
    /// Sizes outside the fixed ratios that apps ask for: 854x480 "480p", 16:9 steps, gallery
    /// tiles, and upscales of received video to a larger tile.
    static let otherRatios = [(1280, 720, 854, 480), (1920, 1080, 854, 480), (1920, 1080, 1600, 900),
                              (1280, 720, 1024, 576), (640, 360, 426, 240), (960, 540, 1280, 720), (640, 360, 960, 540)]
    /// Gallery thumbnails of 1080p: 4.5:1 and 6:1, where box is the area mean and bilinear
    /// libyuv's two-row blend (which aliases there: 38.4 dB, like libyuv's own).
    static let thumbnails = [(1920, 1080, 426, 240), (1920, 1080, 320, 180)]

    override func setUpWithError() throws {
        registry = PluginRegistry.empty()
        guard let library = builtPlugins.libraries.first(where: { $0.name == "rawfx-yuv" }) else {
            throw XCTSkip("libRawFXYUV.so is not built next to the tests (swift build --product RawFXYUV)")
        }
        try registry.load(path: library.path)
    }

    override func tearDown() {
        RawFXThreadPool.threadCount = 1
        unsetenv("RAWFX_KERNELS")
    }

    /// One frame of `buffer` through a new chain, copied out.
    private func scaled(_ text: String, _ buffer: VideoBuffer) throws -> Picture {
        let chain = try VideoChain(text, registry: registry)
        return try withExtendedLifetime((chain, buffer)) { Output(try chain.process(buffer.frame)).picture }
    }

    // MARK: Quality

    func testConferencingAndOtherRatiosKeepFortyDecibelsAgainstFFmpegBicubic() throws {
        let bothFilters = [(2, "bilinear"), (3, "box")]
        let cases = (Self.conferencingRatios + Self.otherRatios).map { ($0, bothFilters) }
            + Self.thumbnails.map { ($0, [(3, "box")]) }
        for ((sw, sh, dw, dh), filters) in cases {
            let input = TestPattern(width: sw, height: sh).frame(11)
            let reference = try ffmpegBicubic(Picture(input), to: dw, dh)
            for (index, filter) in filters {
                let ours = try scaled("scale=width=\(dw):height=\(dh):filter=\(filter)", input)
                let theirs = libyuvScale(input, to: dw, dh, filter: index)
                let (ourDB, libyuvDB) = (psnr(ours, reference), psnr(theirs, reference))
                let context = String(format: "%dx%d -> %dx%d %@: ours %.2f dB, libyuv %.2f dB against FFmpeg bicubic",
                                     sw, sh, dw, dh, filter, ourDB, libyuvDB)
                print(context)
                XCTAssertGreaterThanOrEqual(ourDB, 40, context)
                XCTAssertGreaterThanOrEqual(ourDB, libyuvDB - 0.5, context)
            }
        }
    }

    // MARK: Exactness

    /// 3:2 and 3:1 in both dimensions run the plugin's own kernels: each output sample is
    /// the weighted sum of the formula (docs/plugins/scale-rotate.md), rounded once.
    func testFixedRatiosEqualTheirWeightFormula() throws {
        // Widths that take whole SIMD blocks and widths that end in the C tail.
        let cases = [(240, 138, 160, 92), (198, 66, 132, 44), (150, 90, 100, 60),
                     (240, 138, 80, 46), (186, 66, 62, 22)]
        for (sw, sh, dw, dh) in cases {
            let input = patternBuffer(width: sw, height: sh, extraStride: 11, seed: sw)
            for box in [false, true] {
                let out = try scaled("scale=width=\(dw):height=\(dh):filter=\(box ? "box" : "bilinear")", input)
                XCTAssertEqual(out, fixedRatioReference(Picture(input), to: dw, dh, box: box),
                               "\(sw)x\(sh) -> \(dw)x\(dh) box=\(box)")
            }
        }
    }

    /// Any ratio outside the fixed ones, in bilinear or linear (and box where libyuv reduces it
    /// to bilinear), runs the plugin's one-pass kernel: every sample is the two-tap blend at
    /// libyuv's positions as `anyRatioReference` defines it (rounded once, within 1/256), and
    /// within one step of libyuv's I420Scale, whose rows round the vertical blend to 8 bits
    /// before the horizontal one.
    /// Downscales up to 2:1 (8 outputs within 16 source bytes) and past it (within 32), upscales,
    /// odd sizes, equal heights (linear), and widths that end in the C tail.
    func testAnyOtherRatioIsTheBlendRoundedOnce() throws {
        let cases = [(480, 270, 256, 144), (480, 270, 214, 120), (480, 272, 120, 68), (320, 180, 480, 270),
                     (63, 37, 32, 20), (101, 67, 40, 24), (90, 50, 60, 50), (90, 54, 60, 40), (200, 120, 246, 150),
                     (1280, 720, 854, 480)]
        var checked = 0
        for (sw, sh, dw, dh) in cases {
            let input = patternBuffer(width: sw, height: sh, extraStride: 5, seed: dh)
            for (index, filter) in Self.filters.enumerated() {
                guard let expected = anyRatioReference(Picture(input), to: dw, dh, filter: index) else { continue }
                let context = "\(sw)x\(sh) -> \(dw)x\(dh) \(filter)"
                let out = try scaled("scale=width=\(dw):height=\(dh):filter=\(filter)", input)
                XCTAssertEqual(out, expected, context)
                XCTAssertLessThanOrEqual(out.maxDifference(from: libyuvScale(input, to: dw, dh, filter: index)), 1, context)
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 25, "the cases no longer reach the any-ratio kernel")
    }

    /// Box past 2:1 in both dimensions, up to 7:1, at any ratio but 3:1 and 4:1 (their own
    /// kernels) is the area mean: every sample is `areaReference`'s integers, within 1.5 steps
    /// of the real-number mean of the source area it covers. 2.25:1 (1080p -> 854x480), 3:1 by
    /// 2.25:1 (720p -> 426x240), gallery thumbnails of 1080p (4.5:1 and 6:1), 5:1 down with
    /// 2.4:1 across and the reverse, odd sizes whose chroma reaches 7:1. (libyuv's
    /// ScalePlaneBox averages boxes of whole samples instead, 2 or 3 wide at 2.25:1, and
    /// truncates: 37 dB against FFmpeg's bicubic at 1080p -> 854x480 where the area mean gives 48.)
    func testBoxPastTwoToOneIsTheAreaMean() throws {
        let cases = [(480, 270, 214, 120), (101, 67, 40, 24), (1280, 720, 426, 240), (200, 120, 60, 36),
                     (1920, 1080, 854, 480), (1920, 1080, 426, 240), (1920, 1080, 320, 180), (480, 400, 200, 80),
                     (1000, 300, 150, 100), (97, 61, 14, 10), (601, 333, 100, 50)]
        for (sw, sh, dw, dh) in cases {
            let input = patternBuffer(width: sw, height: sh, extraStride: 5, seed: dw)
            let out = try scaled("scale=width=\(dw):height=\(dh):filter=box", input)
            XCTAssertEqual(out, areaReference(Picture(input), to: dw, dh), "\(sw)x\(sh) -> \(dw)x\(dh) box")
        }
    }

    /// The area mean is what FFmpeg's area scaler (libswscale SWS_AREA) computes too, with its
    /// own fixed-point rounding: at 2.25:1, 4.5:1 and 6:1 on the test pattern no sample is more
    /// than 1 step from FFmpeg's and the pictures agree to 65-73 dB (held to 60). libyuv's
    /// boxes of whole samples, which ran these ratios before, are 34 and 43 steps off at 2.25:1
    /// and 4.5:1 and 48 dB at 6:1 (they truncate).
    func testBoxPastTwoToOneAgreesWithFFmpegArea() throws {
        for (sw, sh, dw, dh) in [(1920, 1080, 854, 480), (1920, 1080, 426, 240), (1920, 1080, 320, 180)] {
            let input = TestPattern(width: sw, height: sh).frame(11)
            let ours = try scaled("scale=width=\(dw):height=\(dh):filter=box", input)
            let theirs = try ffmpegScale(Picture(input), to: dw, dh, flags: "area")
            let context = String(format: "%dx%d -> %dx%d box: %.2f dB against FFmpeg's area", sw, sh, dw, dh, psnr(ours, theirs))
            XCTAssertLessThanOrEqual(ours.maxDifference(from: theirs), 1, context)
            XCTAssertGreaterThanOrEqual(psnr(ours, theirs), 60, context)
        }
    }

    /// The ratios and filters that run libyuv's own rows give libyuv's I420Scale bytes exactly:
    /// point sampling at every ratio, box at 4:1 and past 7:1, linear at 2:1 and 4:3, 2x
    /// upscales, equal widths, and bilinear or linear past about 4:1 across (8 outputs span more
    /// than 32 source bytes), downscaling or upscaling the rows.
    func testLibyuvRowsEqualLibyuv() throws {
        let cases: [(Int, Int, Int, Int, [String])] = [
            (480, 270, 256, 144, ["none"]), (1280, 720, 854, 480, ["none"]), (320, 180, 480, 270, ["none"]),
            (101, 67, 40, 24, ["none"]), (480, 272, 120, 68, ["none", "box"]),
            (320, 180, 160, 90, ["none", "linear"]), (320, 192, 240, 144, ["none", "linear"]),
            (160, 90, 320, 180, Self.filters), (320, 180, 320, 136, Self.filters),
            (480, 270, 96, 54, ["none", "linear", "bilinear"]), (480, 270, 60, 30, Self.filters),
            (96, 96, 32, 32, ["none", "linear"]),
            (480, 90, 96, 180, Self.filters), // up 1:2 by down 5:1: libyuv's upscale rows
        ]
        for (sw, sh, dw, dh, filters) in cases {
            let input = patternBuffer(width: sw, height: sh, extraStride: 5, seed: dh)
            for filter in filters {
                let index = Self.filters.firstIndex(of: filter)!
                XCTAssertEqual(try scaled("scale=width=\(dw):height=\(dh):filter=\(filter)", input),
                               libyuvScale(input, to: dw, dh, filter: index), "\(sw)x\(sh) -> \(dw)x\(dh) \(filter)")
            }
        }
    }

    /// fit and fill at a fixed ratio: the bars stay black and the picture is the formula's.
    func testLetterboxAndCropAtFixedRatios() throws {
        // 240x138 fit into 160x120: the picture is 160x92 at y = 14 (3:2).
        let wide = patternBuffer(width: 240, height: 138, extraStride: 5, seed: 3)
        let fit = try scaled("scale=width=160:height=120:mode=fit:filter=bilinear", wide)
        let box = fitRectangle(input: (240, 138), output: (160, 120))
        XCTAssertEqual([box.x, box.y, box.w, box.h], [0, 14, 160, 92])
        XCTAssertEqual(fit.pixelsOutside(box), [Pixel(y: 16, u: 128, v: 128)])
        XCTAssertEqual(fit.cropped(box), fixedRatioReference(Picture(wide), to: 160, 92, box: false))
        // 240x180 filled into 80x46: the centre 240x138 (from y = 20, even) scaled 3:1.
        let tall = patternBuffer(width: 240, height: 180, extraStride: 3, seed: 4)
        let crop = fillCrop(input: (240, 180), output: (80, 46))
        XCTAssertEqual([crop.x, crop.y, crop.w, crop.h], [0, 20, 240, 138])
        XCTAssertEqual(try scaled("scale=width=80:height=46:mode=fill:filter=box", tall),
                       fixedRatioReference(Picture(tall).cropped(crop), to: 80, 46, box: true))
    }

    // MARK: Slices, allocations, SIMD

    /// One case of every path at small sizes (the paths depend on the ratio, not the size):
    /// 3:2, 3:1, 2:1, 4:3, 3:2 by 2:1, generic down, 4:1 box, 5:1 (box rows first), 2x and 1.5x
    /// up, vertical only, and widths that end in the C tail.
    static let everyPath = [(480, 270, 320, 180), (480, 270, 160, 90), (320, 180, 160, 90), (320, 192, 240, 144),
                            (480, 272, 320, 136), (480, 270, 256, 144), (480, 272, 120, 68), (160, 90, 320, 180),
                            (320, 180, 480, 270), (320, 180, 320, 136), (198, 66, 132, 44), (100, 52, 50, 26),
                            (200, 72, 150, 54), (186, 66, 62, 22), (480, 270, 96, 54)]
    static let filters = ["none", "linear", "bilinear", "box"]

    /// With the host's pool at two threads each plane is cut into eight slices of rows (four
    /// per thread, some empty on small planes); the bytes are those of one thread, for every path.
    func testTwoThreadsGiveTheBytesOfOne() throws {
        for (sw, sh, dw, dh) in Self.everyPath {
            let input = patternBuffer(width: sw, height: sh, extraStride: 7, seed: sw + dh)
            for filter in Self.filters {
                let text = "scale=width=\(dw):height=\(dh):filter=\(filter)"
                RawFXThreadPool.threadCount = 1
                let one = try scaled(text, input)
                RawFXThreadPool.threadCount = 2
                XCTAssertEqual(try scaled(text, input), one, "\(sw)x\(sh) -> \(dw)x\(dh) \(filter)")
            }
        }
    }

    func testNoAllocationPerFrameForAnyRatioOrFilter() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        for threads in [1, 2] {
            RawFXThreadPool.threadCount = threads
            for (sw, sh, dw, dh) in Self.everyPath {
                let input = patternBuffer(width: sw, height: sh, seed: 2)
                for filter in Self.filters {
                    let chain = try VideoChain("scale=width=\(dw):height=\(dh):filter=\(filter)", registry: registry)
                    try withExtendedLifetime((chain, input)) {
                        let frame = input.frame
                        for _ in 0..<2 { _ = try chain.process(frame) }
                        let before = rawfx_thread_allocation_count()
                        for _ in 0..<3 { _ = try chain.process(frame) }
                        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0,
                                       "\(sw)x\(sh) -> \(dw)x\(dh) \(filter), \(threads) thread(s)")
                    }
                }
            }
        }
    }

    /// The plugin's own kernels (3:2, 3:1, mixed 3:2 by 2:1, any other ratio in bilinear or
    /// linear, box past 2:1 up to 7:1) and the libyuv rows whose arithmetic it restates in C
    /// (2:1, 4:3) give the same bytes at every instruction-set level. (Other downscales past 4:1
    /// call libyuv's rows, whose C and SIMD round differently.)
    func testEverySIMDLevelEqualsThePortableC() throws {
        let kernels = [(480, 270, 320, 180), (198, 66, 132, 44), (480, 270, 160, 90), (186, 66, 62, 22),
                       (480, 272, 320, 136), (320, 180, 160, 90), (100, 52, 50, 26), (320, 192, 240, 144),
                       (200, 72, 150, 54), (480, 270, 256, 144), (480, 272, 120, 68), (320, 180, 480, 270),
                       (90, 50, 60, 50), (1280, 720, 854, 480), (480, 270, 214, 120), (101, 67, 40, 24),
                       (200, 120, 60, 36), (640, 360, 100, 56), (480, 400, 200, 80), (1000, 300, 150, 100),
                       (97, 61, 14, 10), (640, 360, 384, 216), (320, 180, 192, 108)]
        for (sw, sh, dw, dh) in kernels {
            let input = patternBuffer(width: sw, height: sh, extraStride: 3, seed: dw)
            for filter in ["linear", "bilinear", "box"] {
                let text = "scale=width=\(dw):height=\(dh):filter=\(filter)"
                setenv("RAWFX_KERNELS", "c", 1)
                let portable = try scaled(text, input)
                for level in ["ssse3", "avx2", "avx512"] { // avx512 is avx2 on a CPU without it
                    setenv("RAWFX_KERNELS", level, 1)
                    XCTAssertEqual(try scaled(text, input), portable, "\(sw)x\(sh) -> \(dw)x\(dh) \(filter) \(level)")
                }
            }
        }
    }

    /// An unknown RAWFX_KERNELS is not silently dropped: configure says what it ignored.
    func testUnknownInstructionSetIsReportedAtConfigure() throws {
        let lines = LogCapture()
        defer { lines.stop() }
        setenv("RAWFX_KERNELS", "neon", 1)
        let scale = try DirectFilter(DirectPlugin.built("rawfx-yuv").descriptor("scale"), host: .attached,
                                     source: "scale#isa")
        XCTAssertEqual(scale.set(0, int: 1280), Int32(RAWFX_OK))
        try scale.configure(.video(width: 1920, height: 1080))
        RawFXLog.sync()
        let warnings = lines.records.filter { $0.source == "scale#isa" && $0.severity == .warning }.map(\.message)
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings.first?.hasPrefix("RAWFX_KERNELS=neon is not c, ssse3, avx2 or avx512; using ") ?? false,
                      "\(warnings)")
    }

    // MARK: References

    /// FFmpeg's bicubic scale of a picture, by the `ffmpeg` command (scripts/bootstrap.sh installs it).
    private func ffmpegBicubic(_ picture: Picture, to w: Int, _ h: Int) throws -> Picture {
        try ffmpegScale(picture, to: w, h, flags: "bicubic")
    }

    /// `picture` scaled by FFmpeg's `scale` filter (libswscale) with `flags`.
    private func ffmpegScale(_ picture: Picture, to w: Int, _ h: Int, flags: String) throws -> Picture {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in.yuv"), output = dir.appendingPathComponent("out.yuv")
        var data = Data()
        for plane in picture.planes { data.append(contentsOf: plane) }
        try data.write(to: input)
        let outcome = try runProgram(URL(fileURLWithPath: "/usr/bin/env"), [
            "ffmpeg", "-nostdin", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
            "-s", "\(picture.width)x\(picture.height)", "-i", input.path, "-vf", "scale=\(w):\(h):flags=\(flags)",
            "-pix_fmt", "yuv420p", "-f", "rawvideo", "-y", output.path,
        ])
        XCTAssertEqual(outcome.status, 0, "ffmpeg failed (scripts/bootstrap.sh installs it): \(outcome.stderr)")
        let bytes = [UInt8](try Data(contentsOf: output))
        let (cw, ch) = ((w + 1) / 2, (h + 1) / 2)
        guard bytes.count == w * h + 2 * cw * ch else {
            throw CompileFailure(message: "ffmpeg wrote \(bytes.count) bytes, expected \(w * h + 2 * cw * ch) for \(w)x\(h)")
        }
        return Picture(width: w, height: h, planes: [Array(bytes[0..<w * h]), Array(bytes[w * h..<w * h + cw * ch]),
                                                     Array(bytes[(w * h + cw * ch)...])])
    }
}

/// PSNR of `a` against `b` over all three planes together, in dB (libyuv's I420Psnr: the
/// squared error of every sample against 255², capped at 128 dB for equal pictures).
private func psnr(_ a: Picture, _ b: Picture) -> Double {
    precondition(a.width == b.width && a.height == b.height)
    let (cw, w) = (Int32((a.width + 1) / 2), Int32(a.width))
    return a.planes[0].withUnsafeBufferPointer { ay in a.planes[1].withUnsafeBufferPointer { au in
        a.planes[2].withUnsafeBufferPointer { av in b.planes[0].withUnsafeBufferPointer { by in
            b.planes[1].withUnsafeBufferPointer { bu in b.planes[2].withUnsafeBufferPointer { bv in
                I420Psnr(ay.baseAddress, w, au.baseAddress, cw, av.baseAddress, cw,
                         by.baseAddress, w, bu.baseAddress, cw, bv.baseAddress, cw, w, Int32(a.height))
            } }
        } }
    } }
}

/// The fixed-ratio kernels' definition, per dimension: output q of each period reads
/// `first[q]` onwards with `weights[q]`; one output sample is
/// (sum of vertical x horizontal weight x sample + total / 2) / total.
/// 3:2 bilinear samples the centres 0.25 and 1.75 of each period with quarter weights,
/// 3:2 box averages the areas exactly (2,1)/3 and (1,2)/3; 3:1 is the tent (1,2,1)/4 or the mean.
private func fixedRatioReference(_ input: Picture, to w: Int, _ h: Int, box: Bool) -> Picture {
    typealias Phases = (periodIn: Int, periodOut: Int, first: [Int], weights: [[Int]])
    func phases(_ src: Int, _ dst: Int) -> Phases {
        if dst * 3 == src * 2 { return (3, 2, [0, 1], box ? [[2, 1], [1, 2]] : [[3, 1], [1, 3]]) }
        precondition(dst * 3 == src, "not a fixed ratio: \(src) -> \(dst)")
        return (3, 1, [0], box ? [[1, 1, 1]] : [[1, 2, 1]])
    }
    let out = Picture(width: w, height: h)
    var planes = out.planes
    for p in 0..<3 {
        let (sw, sh) = input.size(p), (dw, dh) = out.size(p)
        let across = phases(sw, dw), down = phases(sh, dh)
        let total = across.weights[0].reduce(0, +) * down.weights[0].reduce(0, +)
        let samples = input.planes[p]
        for y in 0..<dh {
            let qy = y % down.periodOut, sy = y / down.periodOut * down.periodIn + down.first[qy]
            let rowWeights = down.weights[qy]
            for x in 0..<dw {
                let qx = x % across.periodOut, sx = x / across.periodOut * across.periodIn + across.first[qx]
                let columnWeights = across.weights[qx]
                var sum = 0
                for j in 0..<rowWeights.count {
                    let row = (sy + j) * sw + sx
                    for i in 0..<columnWeights.count { sum += rowWeights[j] * columnWeights[i] * Int(samples[row + i]) }
                }
                planes[p][y * dw + x] = UInt8((sum + total / 2) / total)
            }
        }
    }
    return Picture(width: w, height: h, planes: planes)
}

/// The any-ratio kernel's definition (docs/plugins/scale-rotate.md), per plane: libyuv's
/// ScaleFilterReduce and ScaleSlope give the filter and the 16.16 positions; output (x, y) blends
/// source columns a = ⌊px⌋ and a + 1 with the 7-bit fraction f of px, on samples less 128:
/// H(r) = (128 - f)·(s[r][a] - 128) + f·(s[r][a+1] - 128); rows t = ⌊py⌋ and t + 1 with the 8-bit
/// fraction g of py (0 for linear: the row is point-sampled) at 1/128 of a step,
/// v = H(t) + ⌊((H(t+1) - H(t))·128g + 2¹⁴) / 2¹⁵⌋ (pmulhrsw), and the output is
/// ⌊(v + 128·128 + 64) / 128⌋. Every output is also checked to be within 0.5 + 1/256 of the
/// real-number blend, so the definition is the blend rounded once, give or take the 1/128 step.
/// nil when libyuv's choice is not a two-tap filter (none, box past 2:1). The callers' sizes
/// avoid the ratios the plugin handles otherwise (3:2, 3:1, 2:1 and 4:3 in both dimensions, 2x
/// up, equal widths, past 4:1).
private func anyRatioReference(_ input: Picture, to w: Int, _ h: Int, filter: Int) -> Picture? {
    let out = Picture(width: w, height: h)
    var planes = out.planes
    for p in 0..<3 {
        let (sw, sh) = input.size(p), (dw, dh) = out.size(p)
        let reduced = ScaleFilterReduce(Int32(sw), Int32(sh), Int32(dw), Int32(dh), FilterMode(UInt32(filter)))
        guard reduced == kFilterLinear || reduced == kFilterBilinear else { return nil }
        var x: Int32 = 0, y: Int32 = 0, dx: Int32 = 0, dy: Int32 = 0
        ScaleSlope(Int32(sw), Int32(sh), Int32(dw), Int32(dh), reduced, &x, &y, &dx, &dy)
        let samples = input.planes[p], maxY = (sh - 1) << 16
        for j in 0..<dh {
            let py = min(Int(y) + j * Int(dy), maxY), top = py >> 16
            let g = reduced == kFilterLinear ? 0 : (py >> 8) & 255
            for i in 0..<dw {
                let px = Int(x) + i * Int(dx)
                var a = px >> 16, f = (px >> 9) & 127
                if a >= sw - 1 { (a, f) = (sw - 1, 0) }
                func across(_ row: Int) -> Int {
                    (128 - f) * (Int(samples[row * sw + a]) - 128) + f * (Int(samples[row * sw + min(a + 1, sw - 1)]) - 128)
                }
                let h0 = across(top), h1 = g > 0 ? across(top + 1) : h0
                let v = h0 + (((h1 - h0) * (g << 7) + 0x4000) >> 15)
                let output = (v + 128 * 128 + 64) >> 7
                let blend = (Double(256 - g) * Double(h0) + Double(g) * Double(h1)) / (128 * 256) + 128
                precondition(abs(Double(output) - blend) <= 0.5 + 1.0 / 256, "\(output) is not \(blend) rounded")
                planes[p][j * dw + i] = UInt8(output)
            }
        }
    }
    return Picture(width: w, height: h, planes: planes)
}

/// Output o's area taps when `src` samples shrink to `dst` (the plugin's area_taps): every
/// source sample that [o·src/dst, (o+1)·src/dst) covers, with the part it covers in units of
/// 1/total of the output, rounded down, the units left to the largest remainders (the first
/// on ties), and that part as a fraction of the output (`cover`).
private func areaTaps(_ src: Int, _ dst: Int, _ o: Int, total: Int) -> [(index: Int, weight: Int, cover: Double)] {
    let lo = o * src, hi = (o + 1) * src // in 1/dst of a sample
    let covered = (lo / dst...(hi - 1) / dst).map { k in (k, min(hi, (k + 1) * dst) - max(lo, k * dst)) }
    var weights = covered.map { $0.1 * total / src }
    // The units left go to the largest remainders, the first on ties.
    let order = covered.indices.sorted { (covered[$0].1 * total % src, -$0) > (covered[$1].1 * total % src, -$1) }
    for n in order.prefix(total - weights.reduce(0, +)) { weights[n] += 1 }
    return covered.indices.map { (covered[$0].0, weights[$0], Double(covered[$0].1) / Double(src)) }
}

/// The box kernel's definition past 2:1 (docs/plugins/scale-rotate.md), per plane: output
/// (x, y) covers the source area [x·sw/dw, (x+1)·sw/dw) × [y·sh/dh, (y+1)·sh/dh). Each source
/// row it covers weighs the part of it that it covers, in 256ths of the output, apportioned
/// by largest remainder (`areaTaps`), each column likewise in 16384ths, and the output is
/// ⌊(Σ_r Σ_c wy·wx·s + 2²¹) / 2²²⌋: the weighted mean rounded once (the kernel sums rows into
/// 16 bits, then columns with pmaddwd on the sums less 32768, which gives the same integer).
/// Every output is also checked to be within 1.5 steps of the real-number mean of its area
/// (the 8-bit row weights: 1.25 at worst on this texture, at 6:1).
private func areaReference(_ input: Picture, to w: Int, _ h: Int) -> Picture {
    let out = Picture(width: w, height: h)
    var planes = out.planes
    for p in 0..<3 {
        let (sw, sh) = input.size(p), (dw, dh) = out.size(p)
        let samples = input.planes[p]
        let columns = (0..<dw).map { areaTaps(sw, dw, $0, total: 16384) }
        for j in 0..<dh {
            let rows = areaTaps(sh, dh, j, total: 256)
            for i in 0..<dw {
                var sum = 0, mean = 0.0
                for row in rows {
                    for column in columns[i] {
                        let s = samples[row.index * sw + column.index]
                        sum += row.weight * column.weight * Int(s)
                        mean += row.cover * column.cover * Double(s)
                    }
                }
                let output = (sum + (1 << 21)) >> 22
                precondition(abs(Double(output) - mean) <= 1.5, "\(output) is not within 1.5 of the area mean \(mean)")
                planes[p][j * dw + i] = UInt8(output)
            }
        }
    }
    return Picture(width: w, height: h, planes: planes)
}

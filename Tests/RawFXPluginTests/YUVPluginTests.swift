import CLibYUV
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import XCTest
@testable import RawFXTestSupport

/// The `scale`, `rotate` and `mirror` filters of libRawFXYUV.so (Plugins/YUV), loaded through
/// the engine's registry and run through video chains, checked against libyuv called here
/// directly and against rotations and flips computed by hand.
final class YUVPluginTests: XCTestCase {
    var registry: PluginRegistry!

    override func setUpWithError() throws {
        registry = try registryOfBuiltPlugin("rawfx-yuv", file: "libRawFXYUV.so", product: "RawFXYUV")
    }

    /// Runs one frame of `buffer` through `chain` and copies the output out while both are
    /// alive: the returned view of `process` lives in a buffer the chain owns.
    private func run(_ chain: VideoChain, _ buffer: VideoBuffer, timestamp: Int64 = 0) throws -> Output {
        try withExtendedLifetime((chain, buffer)) {
            var frame = buffer.frame
            frame.timestampMicroseconds = timestamp
            return Output(try chain.process(frame))
        }
    }

    private func run(_ text: String, _ buffer: VideoBuffer, timestamp: Int64 = 0) throws -> Output {
        try run(VideoChain(text, registry: registry), buffer, timestamp: timestamp)
    }

    // MARK: Loading and parameters

    func testPluginProvidesFourFiltersWithDescribedParameters() throws {
        let library = try XCTUnwrap(registry.libraries.first)
        XCTAssertEqual(library.name, "rawfx-yuv")
        XCTAssertEqual(registry.filterTypes.map(\.id), ["mirror", "range", "rotate", "scale"])
        for type in registry.filterTypes {
            XCTAssertEqual(type.mediaKind, .video)
            XCTAssertEqual(type.processing, .outOfPlace)
            for p in type.parameters { XCTAssertFalse(p.help.isEmpty, "\(type.id).\(p.id) has no help") }
        }
        let scale = try registry.filterType("scale")
        XCTAssertEqual(scale.parameters.map(\.id), ["width", "height", "filter", "mode"])
        let width = try XCTUnwrap(scale.parameter(named: "width"))
        XCTAssertEqual(width.type, .int)
        XCTAssertEqual(width.defaultValue, .int(0))
        XCTAssertEqual(width.range, 0...16384)
        XCTAssertEqual(width.unit, "px")
        XCTAssertTrue(width.needsReconfigure)
        XCTAssertEqual(scale.parameter(named: "filter")?.type, .enumeration(["none", "linear", "bilinear", "box"]))
        XCTAssertEqual(scale.parameter(named: "filter")?.defaultValue, .enumeration(index: 2, name: "bilinear"))
        XCTAssertEqual(scale.parameter(named: "mode")?.type, .enumeration(["stretch", "fit", "fill"]))
        XCTAssertEqual(scale.parameter(named: "mode")?.defaultValue, .enumeration(index: 0, name: "stretch"))
        let rotate = try registry.filterType("rotate")
        let angle = try XCTUnwrap(rotate.parameter(named: "angle"))
        XCTAssertEqual(angle.type, .enumeration(["0", "90", "180", "270", "auto"]))
        XCTAssertEqual(angle.defaultValue, .enumeration(index: 1, name: "90"))
        XCTAssertTrue(angle.needsReconfigure)
        XCTAssertEqual(rotate.parameter(named: "mirror")?.defaultValue, .bool(false))
        XCTAssertEqual(try registry.filterType("mirror").parameters.map(\.id), ["vertical"])
    }

    // MARK: rotate

    func testRotate90FourTimesIsTheIdentity() throws {
        let input = patternBuffer(width: 66, height: 38, extraStride: 5)
        let out = try run("rotate=angle=90,rotate=angle=90,rotate=angle=90,rotate=angle=90", input)
        XCTAssertEqual(out.format, input.format)
        XCTAssertEqual(out.picture, Picture(input))
        // One quarter turn at a time, each output fed to the next stage by hand.
        var buffer = input
        for _ in 0..<4 {
            let turned = try run("rotate=angle=90", buffer)
            buffer = turned.picture.buffer(extraStride: 3)
        }
        XCTAssertEqual(Picture(buffer), Picture(input))
    }

    func testRotate90IsTransposeAndFlip() throws {
        let input = patternBuffer(width: 38, height: 22, extraStride: 3, seed: 4)
        let source = Picture(input)
        let out = try run("rotate=angle=90", input)
        XCTAssertEqual(out.format, VideoFormat(width: 22, height: 38))
        XCTAssertEqual(out.picture, source.rotatedClockwise)
        // The same by its definition: a transpose, then a left-right flip.
        XCTAssertEqual(out.picture, source.transposed.flippedLeftRight)
    }

    func testEveryAngleWithAndWithoutMirrorMatchesHandComputedPictures() throws {
        let input = patternBuffer(width: 40, height: 26, extraStride: 7, seed: 9)
        let source = Picture(input)
        let turned = [source, source.rotatedClockwise, source.rotatedClockwise.rotatedClockwise,
                      source.rotatedClockwise.rotatedClockwise.rotatedClockwise]
        for (index, angle) in [0, 90, 180, 270].enumerated() {
            for mirror in [false, true] {
                let out = try run("rotate=angle=\(angle):mirror=\(mirror)", input)
                let expected = mirror ? turned[index].flippedLeftRight : turned[index]
                XCTAssertEqual(out.picture, expected, "angle \(angle) mirror \(mirror)")
            }
        }
        // angle=90:mirror=true is a plain transpose.
        XCTAssertEqual(try run("rotate=angle=90:mirror=true", input).picture, source.transposed)
    }

    func testAutoUprightsByRotationMetadataAndClearsIt() throws {
        let chain = try VideoChain("rotate=angle=auto", registry: registry)
        XCTAssertEqual(try chain.negotiate(VideoFormat(width: 48, height: 32, rotation: 90)),
                       VideoFormat(width: 32, height: 48, rotation: 0))
        let input = patternBuffer(width: 48, height: 32, range: .full, rotation: 90, extraStride: 2, seed: 1)
        let source = Picture(input)
        let out = try run(chain, input, timestamp: 40_000)
        XCTAssertEqual(out.format, VideoFormat(width: 32, height: 48, colorRange: .full, rotation: 0))
        XCTAssertEqual(out.timestamp, 40_000)
        XCTAssertEqual(out.picture, source.rotatedClockwise)

        // 270 and 180 upright too; a quarter-turn change renegotiates (the size changes).
        let r270 = patternBuffer(width: 48, height: 32, range: .full, rotation: 270, extraStride: 2, seed: 1)
        let upright270 = try run(chain, r270)
        XCTAssertEqual(upright270.format, VideoFormat(width: 32, height: 48, colorRange: .full, rotation: 0))
        XCTAssertEqual(upright270.picture, source.rotatedClockwise.rotatedClockwise.rotatedClockwise)
        let r180 = patternBuffer(width: 48, height: 32, rotation: 180, seed: 1)
        let upright180 = try run(chain, r180)
        XCTAssertEqual(upright180.format, VideoFormat(width: 48, height: 32, rotation: 0))
        XCTAssertEqual(upright180.picture, source.rotatedClockwise.rotatedClockwise)
        let upright0 = try run(chain, patternBuffer(width: 48, height: 32, seed: 1))
        XCTAssertEqual(upright0.picture, source)
    }

    func testExplicitAngleKeepsRotationMetadata() throws {
        let out = try run("rotate=angle=90", patternBuffer(width: 16, height: 8, rotation: 90))
        XCTAssertEqual(out.format, VideoFormat(width: 8, height: 16, rotation: 90))
    }

    func testRotateRefusesOddSizesAndUnknownMetadata() throws {
        XCTAssertThrowsChainError(try VideoChain("rotate", registry: registry).negotiate(VideoFormat(width: 33, height: 20))) {
            guard case .refused("rotate", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(message, "output size 20x33 is odd; I420 needs even width and height")
        }
        XCTAssertThrowsChainError(try VideoChain("rotate=angle=auto", registry: registry)
            .negotiate(VideoFormat(width: 32, height: 20, rotation: 45))) {
            guard case .refused("rotate", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(message, "angle=auto needs rotation metadata of 0, 90, 180 or 270; the input says 45")
        }
    }

    // MARK: mirror

    func testMirrorIsHandComputedFlip() throws {
        let input = patternBuffer(width: 34, height: 18, rotation: 270, extraStride: 11, seed: 2)
        let source = Picture(input)
        let horizontal = try run("mirror", input, timestamp: 7)
        XCTAssertEqual(horizontal.picture, source.flippedLeftRight)
        XCTAssertEqual(horizontal.format, input.format, "metadata passes through")
        XCTAssertEqual(horizontal.timestamp, 7)
        XCTAssertEqual(try run("mirror=vertical=true", input).picture, source.flippedTopBottom)
        XCTAssertEqual(Picture(input), source, "the input is not written")
    }

    // MARK: scale

    func testScaleStretchEqualsLibyuvForEveryFilter() throws {
        let input = patternBuffer(width: 90, height: 50, range: .full, rotation: 180, extraStride: 7, seed: 3)
        for (index, filter) in ["none", "linear", "bilinear", "box"].enumerated() {
            for (w, h) in [(160, 96), (40, 30), (90, 26), (60, 50)] {
                let out = try run("scale=width=\(w):height=\(h):filter=\(filter)", input, timestamp: 1_234_567)
                XCTAssertEqual(out.format, VideoFormat(width: w, height: h, colorRange: .full, rotation: 180))
                XCTAssertEqual(out.timestamp, 1_234_567)
                XCTAssertScaled(out.picture, like: libyuvScale(input, to: w, h, filter: index), filter: filter, "\(filter) to \(w)x\(h)")
            }
        }
    }

    func testScaleFollowsAspectRatioWhenOneSideIsZero() throws {
        let hd = VideoFormat(width: 1920, height: 1080)
        XCTAssertEqual(try VideoChain("scale=width=1280", registry: registry).negotiate(hd), VideoFormat(width: 1280, height: 720))
        XCTAssertEqual(try VideoChain("scale=height=480", registry: registry).negotiate(hd), VideoFormat(width: 854, height: 480))
        XCTAssertEqual(try VideoChain("scale", registry: registry).negotiate(hd), hd)
        XCTAssertEqual(try VideoChain("scale=0:0", registry: registry).negotiate(hd), hd)
    }

    func testFitLetterboxAndPillarboxBarsAndPicture() throws {
        // (input, output): wider input -> bars top and bottom; taller -> left and right.
        // 122 wide makes the pillarbox offset (122 - 68) / 2 = 27 odd, rounded down to 26.
        let cases = [((160, 90), (120, 120)), ((90, 160), (122, 120)), ((64, 48), (128, 48)), ((100, 40), (60, 60))]
        for range in [ColorRange.limited, .full] {
            for ((iw, ih), (ow, oh)) in cases {
                let input = patternBuffer(width: iw, height: ih, range: range, extraStride: 5, seed: iw)
                let box = fitRectangle(input: (iw, ih), output: (ow, oh))
                XCTAssertTrue(box.x % 2 == 0 && box.y % 2 == 0 && box.w % 2 == 0 && box.h % 2 == 0)
                XCTAssertTrue(box.x > 0 || box.y > 0, "every case needs bars")
                for (index, filter) in ["none", "linear", "bilinear", "box"].enumerated() {
                    let out = try run("scale=width=\(ow):height=\(oh):mode=fit:filter=\(filter)", input)
                    let black = Pixel(y: range == .full ? 0 : 16, u: 128, v: 128)
                    let context = "\(iw)x\(ih) -> \(ow)x\(oh) \(range) \(filter), picture \(box)"
                    XCTAssertEqual(out.format, VideoFormat(width: ow, height: oh, colorRange: range))
                    XCTAssertEqual(out.picture.pixelsOutside(box), [black], "bars: \(context)")
                    XCTAssertScaled(out.picture.cropped(box), like: libyuvScale(input, to: box.w, box.h, filter: index), filter: filter,
                                    "picture: \(context)")
                }
            }
        }
    }

    func testFitWithEqualAspectRatiosIsStretch() throws {
        let input = patternBuffer(width: 64, height: 36, seed: 5)
        let stretched = try run("scale=width=128:height=72", input).picture
        XCTAssertScaled(stretched, like: libyuvScale(input, to: 128, 72, filter: 2), filter: "bilinear", "stretch")
        XCTAssertEqual(try run("scale=width=128:height=72:mode=fit", input).picture, stretched)
        XCTAssertEqual(try run("scale=width=128:height=72:mode=fill", input).picture, stretched)
    }

    func testFillCropsTheCentreThenScales() throws {
        let cases = [((160, 90), (120, 120)), ((90, 160), (120, 120)), ((64, 48), (96, 36)), ((50, 100), (40, 30))]
        for ((iw, ih), (ow, oh)) in cases {
            let input = patternBuffer(width: iw, height: ih, extraStride: 9, seed: ih)
            let crop = fillCrop(input: (iw, ih), output: (ow, oh))
            XCTAssertTrue(crop.x % 2 == 0 && crop.y % 2 == 0 && (crop.x > 0 || crop.y > 0))
            for (index, filter) in ["none", "linear", "bilinear", "box"].enumerated() {
                let out = try run("scale=width=\(ow):height=\(oh):mode=fill:filter=\(filter)", input)
                XCTAssertScaled(out.picture, like: libyuvScale(input, crop: crop, to: ow, oh, filter: index), filter: filter,
                                "\(iw)x\(ih) -> \(ow)x\(oh) crop \(crop) \(filter)")
            }
        }
    }

    func testModeChangesBetweenFramesWithoutRenegotiation() throws {
        let chain = try VideoChain("scale=width=120:height=120", registry: registry)
        let input = patternBuffer(width: 160, height: 90, seed: 8)
        XCTAssertScaled(try run(chain, input).picture, like: libyuvScale(input, to: 120, 120, filter: 2), filter: "bilinear", "stretch")
        try chain.filters[0].set("mode", text: "fill")
        XCTAssertFalse(chain.filters[0].needsConfigure, "mode is not a RECONFIGURE parameter")
        let crop = fillCrop(input: (160, 90), output: (120, 120))
        XCTAssertScaled(try run(chain, input).picture, like: libyuvScale(input, crop: crop, to: 120, 120, filter: 2), filter: "bilinear",
                        "fill")
        try chain.filters[0].set("width", text: "60")
        XCTAssertTrue(chain.filters[0].needsConfigure, "width is a RECONFIGURE parameter")
        XCTAssertEqual(try run(chain, input).format, VideoFormat(width: 60, height: 120))
    }

    func testStridesWiderThanWidthOnInputAndOutput() throws {
        // Input rows padded by 13 bytes of 0xEE; the chain's output buffers have 64-byte aligned
        // strides, wider than their rows. No padding byte may change on either side.
        let input = patternBuffer(width: 98, height: 58, extraStride: 13, seed: 6)
        let inputPadding = (0..<3).map { p in withExtendedLifetime(input) { paddingBytes(input.frame, p) } }
        for (text, w, h) in [("scale=width=100:height=76:mode=fit", 100, 76), ("scale=width=50:height=50:mode=fill", 50, 50),
                             ("rotate=angle=270:mirror=true", 58, 98), ("mirror", 98, 58)] {
            let out = try run(text, input)
            XCTAssertEqual(out.format, VideoFormat(width: w, height: h))
            for p in 0..<3 {
                XCTAssertGreaterThan(out.strides[p], p == 0 ? w : w / 2, text)
                XCTAssertEqual(Set(out.padding[p]), [0], "\(text): output padding of plane \(p) was written")
                XCTAssertEqual(withExtendedLifetime(input) { paddingBytes(input.frame, p) }, inputPadding[p], "\(text): input padding changed")
            }
        }
        XCTAssertScaled(try run("scale=width=100:height=76:filter=box", input).picture, like: libyuvScale(input, to: 100, 76, filter: 3),
                        filter: "box", "98x58 -> 100x76")
        XCTAssertEqual(try run("rotate=angle=270", input).picture, Picture(input).rotatedClockwise.rotatedClockwise.rotatedClockwise)
    }

    func testOddOutputSizeIsRefusedWithItsMessage() throws {
        let chain = try VideoChain("scale=width=1279:height=720", registry: registry)
        XCTAssertThrowsChainError(try chain.negotiate(VideoFormat(width: 1920, height: 1080))) {
            guard case .refused("scale", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(message, "output size 1279x720 is odd; I420 needs even width and height")
            XCTAssertEqual($0.description, "scale refused 1920x1080 I420 limited range: " + message)
        }
        // Keeping an odd input size is refused the same way; an odd input scaled to even is fine.
        XCTAssertThrowsChainError(try VideoChain("scale", registry: registry).negotiate(VideoFormat(width: 641, height: 480))) {
            guard case .refused("scale", _, let message) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(message, "output size 641x480 is odd; I420 needs even width and height")
        }
        let odd = patternBuffer(width: 63, height: 37, extraStride: 1, seed: 7)
        XCTAssertScaled(try run("scale=width=32:height=20", odd).picture, like: libyuvScale(odd, to: 32, 20, filter: 2),
                        filter: "bilinear", "63x37 -> 32x20")
    }

    // MARK: Allocations

    /// set_param of every parameter without RECONFIGURE (scale's filter and mode, rotate's
    /// mirror, mirror's vertical) allocates nothing on a configured instance, and neither
    /// does reset; the size and angle parameters are marked RECONFIGURE.
    func testLiveParametersDoNotAllocate() throws {
        let plugin = try DirectPlugin.built("rawfx-yuv")
        var live: [String: [String]] = [:]
        for id in ["scale", "rotate", "mirror"] {
            let filter = try DirectFilter(plugin.descriptor(id), host: .attached)
            if id == "scale" { XCTAssertEqual(filter.set(0, int: 1280), Int32(RAWFX_OK)) }
            try filter.configure(.video(width: 1920, height: 1080))
            live[id] = filter.assertRealTimeCallsDoNotAllocate()
        }
        XCTAssertEqual(live, ["scale": ["filter", "mode"], "rotate": ["mirror"], "mirror": ["vertical"]])
    }

    /// With a 1.1 host the filters log their configure-time decisions through it, once.
    func testConfigureLogsTheGeometryThroughTheHost() throws {
        let lines = LogCapture()
        defer { lines.stop() }
        let plugin = try DirectPlugin.built("rawfx-yuv")
        let scale = try DirectFilter(plugin.descriptor("scale"), host: .attached, source: "scale#log")
        for (index, value) in [(0, 640), (1, 480), (3, 1 /* fit */)] {
            XCTAssertEqual(scale.set(index, int: Int64(value)), Int32(RAWFX_OK))
        }
        try scale.configure(.video(width: 1920, height: 1080))
        let rotate = try DirectFilter(plugin.descriptor("rotate"), host: .attached, source: "rotate#log")
        XCTAssertEqual(rotate.set(0, int: 4 /* auto */), Int32(RAWFX_OK))
        var phone = rawfx_format.video(width: 640, height: 480)
        phone.video.rotation = 90
        let negotiated = try rotate.configure(phone)
        XCTAssertEqual([negotiated.output.video.width, negotiated.output.video.height, negotiated.output.video.rotation],
                       [480, 640, 0])
        RawFXLog.sync()
        let logged = lines.records.filter { $0.source.hasSuffix("#log") }
        XCTAssertEqual(logged.map(\.severity), [.info, .info])
        XCTAssertEqual(logged.map(\.message), [
            "1920x1080 -> 640x480, mode fit: input 1920x1080 at 0,0 to output 640x360 at 0,60",
            "angle=auto: the input's rotation metadata is 90: turning 640x480 by 90 degrees to 480x640, rotation 0",
        ])
    }

    func testRotateMirrorAndPointScaleDoNotAllocatePerFrame() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        // Scale at every ratio and filter: ScaleKernelTests.testNoAllocationPerFrameForAnyRatioOrFilter.
        let chain = try VideoChain("rotate=angle=90:mirror=true,rotate=angle=180,mirror,mirror=vertical=true,"
                                   + "rotate=angle=270,scale=width=60:height=40:mode=fit:filter=none", registry: registry)
        let input = patternBuffer(width: 64, height: 36, extraStride: 3)
        try withExtendedLifetime((chain, input)) {
            let frame = input.frame
            for _ in 0..<3 { _ = try chain.process(frame) }
            let before = rawfx_thread_allocation_count()
            for _ in 0..<100 { _ = try chain.process(frame) }
            XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        }
    }
}

// MARK: - Helpers

/// What a chain produced, copied out of the chain's buffer.
struct Output {
    var picture: Picture
    var format: VideoFormat
    var timestamp: Int64
    var strides: [Int]
    var padding: [[UInt8]]

    init(_ frame: VideoFrame) {
        picture = Picture(width: frame.width, height: frame.height, planes: (0..<3).map { planeBytes(frame, $0) })
        format = frame.format
        timestamp = frame.timestampMicroseconds
        strides = (0..<3).map { frame.stride($0) }
        padding = (0..<3).map { paddingBytes(frame, $0) }
    }
}

/// One pixel's Y and the U and V of its 2x2 block.
struct Pixel: Hashable {
    var y: UInt8, u: UInt8, v: UInt8
}

/// A tightly packed I420 picture, for comparisons.
struct Picture: Equatable, CustomStringConvertible {
    var width: Int
    var height: Int
    var planes: [[UInt8]]

    init(width: Int, height: Int, planes: [[UInt8]]? = nil) {
        self.width = width
        self.height = height
        self.planes = planes ?? [[UInt8](repeating: 0, count: width * height),
                                 [UInt8](repeating: 0, count: (width + 1) / 2 * ((height + 1) / 2)),
                                 [UInt8](repeating: 0, count: (width + 1) / 2 * ((height + 1) / 2))]
    }

    init(_ buffer: VideoBuffer) {
        self = withExtendedLifetime(buffer) {
            let frame = buffer.frame
            return Picture(width: frame.width, height: frame.height, planes: (0..<3).map { planeBytes(frame, $0) })
        }
    }

    /// Size and per-plane sums, enough to tell two failing pictures apart in a message.
    var description: String {
        "\(width)x\(height) picture (sums \(planes.map { $0.reduce(0) { $0 &+ Int($1) } }))"
    }

    /// A buffer holding this picture, rows padded by `extraStride` bytes.
    func buffer(extraStride: Int) -> VideoBuffer {
        let buffer = VideoBuffer(format: VideoFormat(width: width, height: height), strideAlignment: 1, extraStride: extraStride)
        withExtendedLifetime(buffer) {
            let frame = buffer.frame
            for p in 0..<3 {
                let (w, h) = size(p)
                for y in 0..<h {
                    planes[p].withUnsafeBufferPointer { _ = memcpy(frame.plane(p) + y * frame.stride(p), $0.baseAddress! + y * w, w) }
                }
            }
        }
        return buffer
    }

    func size(_ p: Int) -> (width: Int, height: Int) {
        p == 0 ? (width, height) : ((width + 1) / 2, (height + 1) / 2)
    }

    /// Builds a picture of the given size whose sample at (x, y) of plane p is `sample(p, x, y)`.
    static func make(width: Int, height: Int, _ sample: (Int, Int, Int) -> UInt8) -> Picture {
        var out = Picture(width: width, height: height)
        for p in 0..<3 {
            let (w, h) = out.size(p)
            for y in 0..<h { for x in 0..<w { out.planes[p][y * w + x] = sample(p, x, y) } }
        }
        return out
    }

    func at(_ p: Int, _ x: Int, _ y: Int) -> UInt8 { planes[p][y * size(p).width + x] }

    /// The largest difference between a sample of this picture and the same sample of `other`
    /// (of the same size).
    func maxDifference(from other: Picture) -> Int {
        precondition(width == other.width && height == other.height)
        return (0..<3).map { largestDifference(planes[$0], other.planes[$0]) }.max()!
    }

    /// Clockwise quarter turn: output (x, y) is input (y, H-1-x), per plane.
    var rotatedClockwise: Picture {
        Picture.make(width: height, height: width) { p, x, y in at(p, y, size(p).height - 1 - x) }
    }

    var transposed: Picture { Picture.make(width: height, height: width) { p, x, y in at(p, y, x) } }
    var flippedLeftRight: Picture { Picture.make(width: width, height: height) { p, x, y in at(p, size(p).width - 1 - x, y) } }
    var flippedTopBottom: Picture { Picture.make(width: width, height: height) { p, x, y in at(p, x, size(p).height - 1 - y) } }

    /// The sub-picture at an even rectangle.
    func cropped(_ r: Rect) -> Picture {
        Picture.make(width: r.w, height: r.h) { p, x, y in p == 0 ? at(0, r.x + x, r.y + y) : at(p, r.x / 2 + x, r.y / 2 + y) }
    }

    /// The distinct pixels outside an even rectangle (Y per pixel, U and V of its block).
    func pixelsOutside(_ r: Rect) -> Set<Pixel> {
        var seen = Set<Pixel>()
        for y in 0..<height {
            for x in 0..<width where !(x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) {
                seen.insert(Pixel(y: at(0, x, y), u: at(1, x / 2, y / 2), v: at(2, x / 2, y / 2)))
            }
        }
        return seen
    }
}

struct Rect: CustomStringConvertible {
    var x: Int, y: Int, w: Int, h: Int
    var description: String { "\(w)x\(h) at (\(x), \(y))" }
}

/// The nearest even number to a ratio, computed in floating point independently of the plugin.
func nearestEven(_ value: Double) -> Int { 2 * Int((value / 2).rounded(.toNearestOrAwayFromZero)) }

/// Where `fit` puts the picture: full width or full height, centred, even offsets rounded down.
func fitRectangle(input: (Int, Int), output: (Int, Int)) -> Rect {
    let (iw, ih) = input, (ow, oh) = output
    if Double(iw) / Double(ih) > Double(ow) / Double(oh) {
        let h = nearestEven(Double(ow) * Double(ih) / Double(iw))
        return Rect(x: 0, y: (oh - h) / 2 / 2 * 2, w: ow, h: h)
    }
    let w = nearestEven(Double(oh) * Double(iw) / Double(ih))
    return Rect(x: (ow - w) / 2 / 2 * 2, y: 0, w: w, h: oh)
}

/// What `fill` crops from the input: the centred rectangle of the output's aspect ratio.
func fillCrop(input: (Int, Int), output: (Int, Int)) -> Rect {
    let (iw, ih) = input, (ow, oh) = output
    if Double(iw) / Double(ih) > Double(ow) / Double(oh) {
        let w = nearestEven(Double(ih) * Double(ow) / Double(oh))
        return Rect(x: (iw - w) / 2 / 2 * 2, y: 0, w: w, h: ih)
    }
    let h = nearestEven(Double(iw) * Double(oh) / Double(ow))
    return Rect(x: 0, y: (ih - h) / 2 / 2 * 2, w: iw, h: h)
}

/// libyuv's I420Scale of (a crop of) a buffer into a packed picture of w x h.
/// Asserts that `out` is libyuv's `reference` scale: byte for byte with filter=none (both
/// point-sample with libyuv's rows), within one step with a filter. (At most ratios the plugin's
/// kernels blend with one rounding where libyuv's rows round twice; ScaleKernelTests checks
/// their arithmetic exactly. One step apart still catches a crop, bar or offset that is off.)
func XCTAssertScaled(_ out: Picture, like reference: Picture, filter: String, _ message: String,
                     file: StaticString = #filePath, line: UInt = #line) {
    guard out.width == reference.width && out.height == reference.height else {
        return XCTFail("\(out) is not the size of \(reference): \(message)", file: file, line: line)
    }
    if filter == "none" { return XCTAssertEqual(out, reference, message, file: file, line: line) }
    XCTAssertWithinOneStep(out.planes.flatMap { $0 }, of: reference.planes.flatMap { $0 },
                           "\(out) against libyuv's \(reference): \(message)", file: file, line: line)
}

func libyuvScale(_ buffer: VideoBuffer, crop: Rect? = nil, to w: Int, _ h: Int, filter: Int) -> Picture {
    withExtendedLifetime(buffer) { libyuvScale(buffer.frame, crop: crop, to: w, h, filter: filter) }
}

private func libyuvScale(_ frame: VideoFrame, crop: Rect?, to w: Int, _ h: Int, filter: Int) -> Picture {
    let c = crop ?? Rect(x: 0, y: 0, w: frame.width, h: frame.height)
    let cw = (w + 1) / 2, chh = (h + 1) / 2
    var y = [UInt8](repeating: 0, count: w * h)
    var u = [UInt8](repeating: 0, count: cw * chh)
    var v = [UInt8](repeating: 0, count: cw * chh)
    let status = y.withUnsafeMutableBufferPointer { yp in
        u.withUnsafeMutableBufferPointer { up in
            v.withUnsafeMutableBufferPointer { vp in
                I420Scale(frame.plane(0) + c.y * frame.stride(0) + c.x, Int32(frame.stride(0)),
                          frame.plane(1) + c.y / 2 * frame.stride(1) + c.x / 2, Int32(frame.stride(1)),
                          frame.plane(2) + c.y / 2 * frame.stride(2) + c.x / 2, Int32(frame.stride(2)),
                          Int32(c.w), Int32(c.h),
                          yp.baseAddress, Int32(w), up.baseAddress, Int32(cw), vp.baseAddress, Int32(cw),
                          Int32(w), Int32(h), FilterMode(rawValue: UInt32(filter)))
            }
        }
    }
    precondition(status == 0, "I420Scale failed")
    return Picture(width: w, height: h, planes: [y, u, v])
}

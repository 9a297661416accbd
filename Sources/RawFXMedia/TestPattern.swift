#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// A deterministic moving I420 test picture of any size:
/// - the top two thirds: eight 75% colour bars (white, yellow, cyan, green, magenta, red, blue, black);
/// - the bottom third: a left-to-right grey ramp;
/// - a white box with a black border that bounces around the frame;
/// - along the bottom edge, 16 counter blocks: the frame index in binary, most significant
///   bit first (white = 1, black = 0), so a reader can tell which frame it is looking at
///   (`frameIndex(in:)`).
///
/// The background is drawn once; `render` copies it and draws the box and the counter,
/// so a 1080p frame costs a few memcpy's even in a debug build.
public final class TestPattern {
    public let format: VideoFormat
    private let background: VideoBuffer
    /// Side of the moving box (1/6 of the smaller dimension, at least 2).
    public let boxSize: Int
    /// Side of one counter block.
    public let blockSize: Int

    public init(format: VideoFormat) {
        self.format = format
        background = VideoBuffer(format: format)
        boxSize = max(2, min(format.width, format.height) / 6)
        blockSize = max(1, min(format.width / 16, format.height / 12))
        drawBackground()
    }

    public convenience init(width: Int, height: Int, colorRange: ColorRange = .limited) {
        self.init(format: VideoFormat(width: width, height: height, colorRange: colorRange))
    }

    /// BT.601 YUV of an 8-bit RGB colour in this pattern's range.
    public func yuv(r: Int, g: Int, b: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
        let (rf, gf, bf) = (Double(r) / 255, Double(g) / 255, Double(b) / 255)
        let y = 0.299 * rf + 0.587 * gf + 0.114 * bf
        let u = (bf - y) / 1.772
        let v = (rf - y) / 1.402
        func q(_ x: Double) -> UInt8 { UInt8(max(0, min(255, x.rounded()))) }
        if format.colorRange == .full { return (q(y * 255), q(128 + u * 255), q(128 + v * 255)) }
        return (q(16 + y * 219), q(128 + u * 224), q(128 + v * 224))
    }

    private func drawBackground() {
        let w = format.width, h = format.height
        let bars = [(191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0),
                    (191, 0, 191), (191, 0, 0), (0, 0, 191), (0, 0, 0)]
        let barsHeight = h * 2 / 3
        let f = background.frame
        for (i, c) in bars.enumerated() {
            let x0 = i * w / 8, x1 = (i + 1) * w / 8
            fillRect(f, x: x0, y: 0, width: x1 - x0, height: barsHeight, color: yuv(r: c.0, g: c.1, b: c.2))
        }
        // Grey ramp: one column at a time (the ramp's chroma is neutral).
        for x in 0..<w {
            let g = w > 1 ? x * 255 / (w - 1) : 0
            fillRect(f, x: x, y: barsHeight, width: 1, height: h - barsHeight, color: yuv(r: g, g: g, b: g))
        }
    }

    /// Fills a rectangle in luma coordinates (clipped); chroma covers the samples it touches.
    func fillRect(_ f: VideoFrame, x: Int, y: Int, width: Int, height: Int, color: (y: UInt8, u: UInt8, v: UInt8)) {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(f.width, x + width), y1 = min(f.height, y + height)
        guard x1 > x0, y1 > y0 else { return }
        for row in y0..<y1 { memset(f.plane(0) + row * f.stride(0) + x0, Int32(color.y), x1 - x0) }
        let cx0 = x0 / 2, cx1 = (x1 + 1) / 2, cy0 = y0 / 2, cy1 = (y1 + 1) / 2
        for row in cy0..<cy1 {
            memset(f.plane(1) + row * f.stride(1) + cx0, Int32(color.u), cx1 - cx0)
            memset(f.plane(2) + row * f.stride(2) + cx0, Int32(color.v), cx1 - cx0)
        }
    }

    /// Where the box is in frame `index`: it bounces off the edges, moving a fixed number of
    /// pixels per frame horizontally and vertically.
    public func boxOrigin(frame index: Int) -> (x: Int, y: Int) {
        func bounce(_ travel: Int, _ span: Int) -> Int {
            guard span > 0 else { return 0 }
            let t = travel % (2 * span)
            return t <= span ? t : 2 * span - t
        }
        let speedX = max(1, format.width / 96), speedY = max(1, format.height / 80)
        return (bounce(index * speedX, format.width - boxSize), bounce(index * speedY, format.height - boxSize))
    }

    /// Draws frame `index` into `frame` (the pattern's size; any strides). Allocates nothing.
    public func render(frame index: Int, into frame: VideoFrame) {
        precondition(frame.width == format.width && frame.height == format.height, "TestPattern: frame size differs")
        background.frame.copy(to: frame)
        let white = format.colorRange == .full ? (y: UInt8(255), u: UInt8(128), v: UInt8(128)) : (y: UInt8(235), u: UInt8(128), v: UInt8(128))
        let black = (y: format.colorRange.blackLuma, u: UInt8(128), v: UInt8(128))
        let (bx, by) = boxOrigin(frame: index)
        let border = max(1, boxSize / 10)
        fillRect(frame, x: bx, y: by, width: boxSize, height: boxSize, color: black)
        fillRect(frame, x: bx + border, y: by + border, width: boxSize - 2 * border, height: boxSize - 2 * border, color: white)
        // The counter: 16 blocks along the bottom left, MSB first.
        let y = format.height - blockSize
        var bit = 0
        while bit < 16 {
            let on = (index >> (15 - bit)) & 1 == 1
            fillRect(frame, x: bit * blockSize, y: y, width: blockSize, height: blockSize, color: on ? white : black)
            bit += 1
        }
    }

    /// A new buffer holding frame `index`.
    public func frame(_ index: Int) -> VideoBuffer {
        let buffer = VideoBuffer(format: format)
        render(frame: index, into: buffer.frame)
        return buffer
    }

    /// Reads the counter blocks back from an unrotated, unscaled frame of this pattern:
    /// the index modulo 65536, or nil when a block is neither clearly black nor white.
    public func frameIndex(in frame: VideoFrame) -> Int? {
        guard frame.width == format.width, frame.height == format.height else { return nil }
        var value = 0
        let y = format.height - blockSize / 2 - 1
        for bit in 0..<16 {
            let luma = Int(frame.plane(0)[y * frame.stride(0) + bit * blockSize + blockSize / 2])
            if luma > 180 { value |= 1 << (15 - bit) } else if luma > 60 { return nil }
        }
        return value
    }
}

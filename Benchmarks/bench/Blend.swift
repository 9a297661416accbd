// The watermark's direct paths: the logo prepared once, then blended over its region of the
// frame with no engine in between.
//
// Baseline (the ratio): the same exactly rounded per-pixel blend the `watermark` plugin
// does (Plugins/Watermark/Overlay.swift), written out plainly here over the same prepared
// planes: luma (src*(255-a) + Y*a + 127)/255, chroma with the 2x2 footprint's alpha sum S,
// (src*(1020-S) + sum(a*C) + 510)/1020, every sample of the rectangle, branch-free, with the
// exact shift form of /255. Same arithmetic, same loop shape, same region, so engine/direct
// isolates what the engine adds.
//
// Reference (not the ratio): libyuv I420Blend over the same region, libyuv's SIMD blend
// (approximate rounding, (a*Y1 + (255-a)*Y0 + 255) >> 8, and a 2x2-averaged alpha for U and V).
// It shows what a vectorised blend costs for the same pixels.
import CLibYUV
import Foundation
import RawFX
import RawFXSDK
import RawFXMedia

/// The benchmark logo: RawFXMedia's built-in 400x100 RGBA logo, written to a temporary PNG for
/// `watermark=image=…`, and kept in memory for the direct paths.
final class Logo {
    let image: RGBAImage
    let path: String

    private init(image: RGBAImage, path: String) {
        self.image = image
        self.path = path
    }

    static func make() throws -> Logo {
        let image = RGBAImage.rawFXLogo(width: WatermarkPlacement.width, height: WatermarkPlacement.height)
        let path = FileManager.default.temporaryDirectory.path + "/rawfx-bench-logo-\(getpid()).png"
        try PNGWriter.write(image, to: path)
        return Logo(image: image, path: path)
    }

    func remove() { unlink(path) }

    deinit { remove() }

    /// Alpha of pixel i times the opacity, rounded, as the plugin premultiplies it.
    func alpha(_ i: Int, opacity: Double) -> UInt8 {
        UInt8((Double(image.pixels[i * 4 + 3]) * opacity).rounded())
    }

    /// BT.601 limited-range Y, U, V of pixel i.
    func yuv(_ i: Int) -> (UInt8, UInt8, UInt8) {
        let r = Double(image.pixels[i * 4]), g = Double(image.pixels[i * 4 + 1]), b = Double(image.pixels[i * 4 + 2])
        let y = 16 + (65.738 * r + 129.057 * g + 25.064 * b) / 256
        let u = 128 + (-37.945 * r - 74.494 * g + 112.439 * b) / 256
        let v = 128 + (112.439 * r - 94.154 * g - 18.285 * b) / 256
        func byte(_ x: Double) -> UInt8 { UInt8(max(0, min(255, x.rounded()))) }
        return (byte(y), byte(u), byte(v))
    }
}

/// The plugin's blend, written plainly: prepared planes, then per-pixel loops over raw pointers.
final class DirectBlend: DirectStep {
    static let summary = "the same exact per-pixel blend over the logo region, written plainly in the bench"
    let x0: Int, y0: Int, width: Int, height: Int
    let cx0: Int, cy0: Int, chromaWidth: Int, chromaHeight: Int
    private let lumaY: UnsafeMutablePointer<UInt8>
    private let lumaA: UnsafeMutablePointer<UInt8>
    private let chromaS: UnsafeMutablePointer<UInt16>
    private let chromaU: UnsafeMutablePointer<UInt32>
    private let chromaV: UnsafeMutablePointer<UInt32>

    /// The logo fully inside the frame at (x, y), even x and y (as every case places it).
    init(logo: Logo, x: Int, y: Int, opacity: Double) {
        precondition(x % 2 == 0 && y % 2 == 0, "the bench places the logo on even coordinates")
        x0 = x; y0 = y
        width = logo.image.width; height = logo.image.height
        cx0 = x / 2; cy0 = y / 2
        chromaWidth = (width + 1) / 2; chromaHeight = (height + 1) / 2
        let n = width * height, c = chromaWidth * chromaHeight
        lumaY = .allocate(capacity: n)
        lumaA = .allocate(capacity: n)
        chromaS = .allocate(capacity: c)
        chromaU = .allocate(capacity: c)
        chromaV = .allocate(capacity: c)
        var pixelU = [UInt8](repeating: 0, count: n), pixelV = [UInt8](repeating: 0, count: n)
        for i in 0..<n {
            let (yy, u, v) = logo.yuv(i)
            lumaY[i] = yy; pixelU[i] = u; pixelV[i] = v
            lumaA[i] = logo.alpha(i, opacity: opacity)
        }
        for cy in 0..<chromaHeight {
            for cx in 0..<chromaWidth {
                var s: UInt32 = 0, pu: UInt32 = 0, pv: UInt32 = 0
                for dy in 0..<2 where 2 * cy + dy < height {
                    for dx in 0..<2 where 2 * cx + dx < width {
                        let i = (2 * cy + dy) * width + 2 * cx + dx
                        let a = UInt32(lumaA[i])
                        s += a
                        pu += a * UInt32(pixelU[i])
                        pv += a * UInt32(pixelV[i])
                    }
                }
                let o = cy * chromaWidth + cx
                chromaS[o] = UInt16(s); chromaU[o] = pu; chromaV[o] = pv
            }
        }
    }

    deinit {
        lumaY.deallocate(); lumaA.deallocate()
        chromaS.deallocate(); chromaU.deallocate(); chromaV.deallocate()
    }

    var inPlace: Bool { true }
    func output(for input: VideoFormat) -> VideoFormat { input }

    func apply(_ frame: VideoFrame, _ output: VideoFrame) {
        blendLuma(frame.plane(0), frame.stride(0))
        blendChroma(frame.plane(1), frame.stride(1), chromaU)
        blendChroma(frame.plane(2), frame.stride(2), chromaV)
    }

    /// (src*(255-a) + Y*a + 127) / 255 in 16 bits; x/255 == (x + 1 + (x >> 8)) >> 8 for x < 65535.
    private func blendLuma(_ plane: UnsafeMutablePointer<UInt8>, _ stride: Int) {
        var row = 0
        while row < height {
            let dst = plane + (y0 + row) * stride + x0
            let ys = lumaY + row * width, alphas = lumaA + row * width
            var i = 0
            while i < width {
                let a = UInt16(alphas[i])
                let v = UInt16(dst[i]) &* (255 &- a) &+ UInt16(ys[i]) &* a &+ 127
                dst[i] = UInt8(truncatingIfNeeded: (v &+ 1 &+ (v &>> 8)) &>> 8)
                i += 1
            }
            row += 1
        }
    }

    /// (src*(1020-S) + sum(a*C) + 510) / 1020 as ((x >> 2) / 255) with the same shift form.
    private func blendChroma(_ plane: UnsafeMutablePointer<UInt8>, _ stride: Int, _ weighted: UnsafeMutablePointer<UInt32>) {
        var row = 0
        while row < chromaHeight {
            let dst = plane + (cy0 + row) * stride + cx0
            let sums = chromaS + row * chromaWidth, colours = weighted + row * chromaWidth
            var i = 0
            while i < chromaWidth {
                let s = UInt32(sums[i])
                let v = (UInt32(dst[i]) &* (1020 &- s) &+ colours[i] &+ 510) &>> 2
                dst[i] = UInt8(truncatingIfNeeded: (v &+ 1 &+ (v &>> 8)) &>> 8)
                i += 1
            }
            row += 1
        }
    }
}

/// libyuv I420Blend over the logo region, in place (reference only).
final class LibyuvBlend: DirectStep {
    static let summary = "libyuv I420Blend over the same region (SIMD, approximate rounding)"
    let x0: Int, y0: Int
    private let logo: LogoPlanes

    init(logo: LogoPlanes, x: Int, y: Int) {
        precondition(x % 2 == 0 && y % 2 == 0, "the bench places the logo on even coordinates")
        x0 = x; y0 = y
        self.logo = logo
    }

    var inPlace: Bool { true }
    func output(for input: VideoFormat) -> VideoFormat { input }

    func apply(_ frame: VideoFrame, _ output: VideoFrame) {
        let l = logo.yuv.frame
        let y = frame.plane(0) + y0 * frame.stride(0) + x0
        let u = frame.plane(1) + (y0 / 2) * frame.stride(1) + x0 / 2
        let v = frame.plane(2) + (y0 / 2) * frame.stride(2) + x0 / 2
        let rc = I420Blend(y, Int32(frame.stride(0)), u, Int32(frame.stride(1)), v, Int32(frame.stride(2)),
                           l.plane(0), Int32(l.stride(0)), l.plane(1), Int32(l.stride(1)), l.plane(2), Int32(l.stride(2)),
                           logo.alpha, Int32(logo.width),
                           y, Int32(frame.stride(0)), u, Int32(frame.stride(1)), v, Int32(frame.stride(2)),
                           Int32(logo.width), Int32(logo.height))
        precondition(rc == 0, "I420Blend failed")
    }
}

/// The logo as I420 planes plus its alpha premultiplied by the opacity (as the plugin does):
/// what libyuv's I420Blend and FFmpeg's overlay (as yuva420p) blend.
final class LogoPlanes {
    let yuv: VideoBuffer
    let alpha: UnsafeMutablePointer<UInt8>
    let width: Int, height: Int

    init(logo: Logo, opacity: Double) {
        width = logo.image.width
        height = logo.image.height
        yuv = VideoBuffer(format: VideoFormat(width: width, height: height))
        let f = yuv.frame
        let width = width, height = height
        logo.image.pixels.withUnsafeBufferPointer { pixels in
            // RGBA in memory is libyuv's "ABGR".
            _ = ABGRToI420(pixels.baseAddress!, Int32(width * 4), f.plane(0), Int32(f.stride(0)),
                           f.plane(1), Int32(f.stride(1)), f.plane(2), Int32(f.stride(2)), Int32(width), Int32(height))
        }
        alpha = .allocate(capacity: width * height)
        for i in 0..<(width * height) { alpha[i] = logo.alpha(i, opacity: opacity) }
    }

    deinit { alpha.deallocate() }
}

// The watermark prepared for one frame format: everything per-frame work needs, computed at
// configure, so that `blend` only mixes bytes (no allocation, no locks, no I/O).
import CLibYUV
import RawFXPluginKit
import WatermarkKernels

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the image goes: `corner` (0 none, 1 top-left, 2 top-right, 3 bottom-left,
/// 4 bottom-right) with `margin`, or else `x`, `y` where a negative value counts from the
/// right/bottom edge to the image's right/bottom edge.
struct Placement: Equatable {
    var x = 0
    var y = 0
    var corner = 0
    var margin = 16

    /// The image's top-left pixel in frame coordinates (may lie outside the frame).
    func origin(frameWidth: Int, frameHeight: Int, imageWidth: Int, imageHeight: Int) -> (left: Int, top: Int) {
        let right = frameWidth - imageWidth, bottom = frameHeight - imageHeight
        switch corner {
        case 1: return (margin, margin)
        case 2: return (right - margin, margin)
        case 3: return (margin, bottom - margin)
        case 4: return (right - margin, bottom - margin)
        default: return (x >= 0 ? x : right + x, y >= 0 ? y : bottom + y)
        }
    }
}

/// The visible part of the image converted to the frame's colour range, as planes aligned
/// to the frame:
/// - luma: for each frame pixel in the visible rectangle [x0, x1) x [y0, y1), the image's
///   Y and its alpha premultiplied by opacity (0...255);
/// - chroma: for each frame chroma sample the visible rectangle touches, the sum S of the
///   four luma alphas of its 2x2 footprint (0...1020, i.e. 4 x the mean alpha; pixels
///   outside the image count 0) and the alpha-weighted sums of the image's U and V over the
///   same footprint. The blend is then `(src * (1020 - S) + sum(a * U) + 510) / 1020`,
///   the exact rounding of `src * (1 - mean a) + mean(a * U)` (the average, over the
///   footprint, of blending each luma pixel's colour on its own). They are stored split
///   for 16-bit SIMD lanes (watermark_kernels.h): k = 1020 - S as 4 kq + kr, and each
///   sum + 510 as 4 bq + br.
///
/// The blends run in C (Plugins/WatermarkKernels: AVX2, SSE2 or portable, chosen here).
final class Overlay {
    let frameWidth: Int
    let frameHeight: Int
    let colorRange: UInt32
    /// Visible luma rectangle, frame coordinates; empty when the image misses the frame.
    let x0: Int, y0: Int, lumaWidth: Int, lumaHeight: Int
    /// Chroma rectangle, chroma-plane coordinates.
    let cx0: Int, cy0: Int, chromaWidth: Int, chromaHeight: Int
    private let lumaY: UnsafeMutablePointer<UInt8>
    private let lumaA: UnsafeMutablePointer<UInt8>
    /// Chroma weights, split as the kernels take them (see above); kq, kr shared by U and V.
    private let chromaKQ: UnsafeMutablePointer<UInt8>
    private let chromaKR: UnsafeMutablePointer<UInt8>
    private let chromaUBQ: UnsafeMutablePointer<UInt16>
    private let chromaUBR: UnsafeMutablePointer<UInt8>
    private let chromaVBQ: UnsafeMutablePointer<UInt16>
    private let chromaVBR: UnsafeMutablePointer<UInt8>
    /// The kernels' SIMD level (rfx_watermark_kernels_select), fixed at configure.
    private let kernels: Int32

    var isEmpty: Bool { lumaWidth == 0 || lumaHeight == 0 }

    /// Places `image` on a `frameWidth x frameHeight` frame of `colorRange` and converts what
    /// is visible: BT.601 limited range (libyuv ABGRToI420) or full range (ABGRToJ420).
    init(image: RGBAImage, placement: Placement, opacity: Double,
         frameWidth: Int, frameHeight: Int, colorRange: UInt32) throws(FilterFailure) {
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
        self.colorRange = colorRange
        let (left, top) = placement.origin(frameWidth: frameWidth, frameHeight: frameHeight,
                                           imageWidth: image.width, imageHeight: image.height)
        let vx0 = max(left, 0), vx1 = min(left + image.width, frameWidth)
        let vy0 = max(top, 0), vy1 = min(top + image.height, frameHeight)
        let visible = vx1 > vx0 && vy1 > vy0 && opacity > 0
        x0 = vx0; y0 = vy0
        lumaWidth = visible ? vx1 - vx0 : 0
        lumaHeight = visible ? vy1 - vy0 : 0
        cx0 = vx0 / 2; cy0 = vy0 / 2
        chromaWidth = visible ? (vx1 - 1) / 2 - cx0 + 1 : 0
        chromaHeight = visible ? (vy1 - 1) / 2 - cy0 + 1 : 0

        let lumaCount = lumaWidth * lumaHeight, chromaCount = chromaWidth * chromaHeight
        lumaY = .allocate(capacity: max(lumaCount, 1))
        lumaA = .allocate(capacity: max(lumaCount, 1))
        chromaKQ = .allocate(capacity: max(chromaCount, 1))
        chromaKR = .allocate(capacity: max(chromaCount, 1))
        chromaUBQ = .allocate(capacity: max(chromaCount, 1))
        chromaUBR = .allocate(capacity: max(chromaCount, 1))
        chromaVBQ = .allocate(capacity: max(chromaCount, 1))
        chromaVBR = .allocate(capacity: max(chromaCount, 1))
        kernels = rfx_watermark_kernels_select()
        guard visible else { return }

        // Per-pixel U and V of the visible image pixels, for the chroma footprints below.
        let pixelU = UnsafeMutablePointer<UInt8>.allocate(capacity: lumaCount)
        let pixelV = UnsafeMutablePointer<UInt8>.allocate(capacity: lumaCount)
        defer { pixelU.deallocate(); pixelV.deallocate() }
        try Overlay.convert(image, columns: (vx0 - left, lumaWidth), rows: (vy0 - top, lumaHeight),
                            full: colorRange == UInt32(RAWFX_RANGE_FULL),
                            y: lumaY, u: pixelU, v: pixelV)

        // Luma alpha, premultiplied by opacity.
        let w = lumaWidth
        image.pixels.withUnsafeBufferPointer { pixels in
            for row in 0..<lumaHeight {
                let src = pixels.baseAddress! + ((vy0 - top + row) * image.width + (vx0 - left)) * 4
                for col in 0..<w {
                    lumaA[row * w + col] = UInt8((Double(src[col * 4 + 3]) * opacity).rounded())
                }
            }
        }

        // Chroma: per frame chroma sample, its 2x2 luma footprint. A footprint position past
        // the frame's last row/column (odd sizes) is that last row/column again, as I420
        // repeats the edge; a position outside the image has alpha 0.
        for cy in 0..<chromaHeight {
            for cx in 0..<chromaWidth {
                var s: UInt32 = 0, pu: UInt32 = 0, pv: UInt32 = 0
                for dy in 0..<2 {
                    let py = min(2 * (cy0 + cy) + dy, frameHeight - 1)
                    guard py >= vy0 && py < vy1 else { continue }
                    for dx in 0..<2 {
                        let px = min(2 * (cx0 + cx) + dx, frameWidth - 1)
                        guard px >= vx0 && px < vx1 else { continue }
                        let i = (py - vy0) * w + (px - vx0)
                        let a = UInt32(lumaA[i])
                        s += a
                        pu += a * UInt32(pixelU[i])
                        pv += a * UInt32(pixelV[i])
                    }
                }
                let o = cy * chromaWidth + cx
                let k = 1020 - s, bu = pu + 510, bv = pv + 510
                chromaKQ[o] = UInt8(k / 4); chromaKR[o] = UInt8(k % 4)
                chromaUBQ[o] = UInt16(bu / 4); chromaUBR[o] = UInt8(bu % 4)
                chromaVBQ[o] = UInt16(bv / 4); chromaVBR[o] = UInt8(bv % 4)
            }
        }
    }

    deinit {
        lumaY.deallocate(); lumaA.deallocate()
        chromaKQ.deallocate(); chromaKR.deallocate()
        chromaUBQ.deallocate(); chromaUBR.deallocate(); chromaVBQ.deallocate(); chromaVBR.deallocate()
    }

    /// Converts image columns [c0, c0 + n) of rows [r0, r0 + m) to Y, U, V per pixel with
    /// libyuv. libyuv makes one U, V per 2x2 block, so each image row is fed as a 2-row block
    /// with every pixel doubled: each block is then four copies of one pixel, and its U, V
    /// are that pixel's own.
    private static func convert(_ image: RGBAImage, columns: (Int, Int), rows: (Int, Int), full: Bool,
                                y: UnsafeMutablePointer<UInt8>, u: UnsafeMutablePointer<UInt8>,
                                v: UnsafeMutablePointer<UInt8>) throws(FilterFailure) {
        let (c0, n) = columns, (r0, m) = rows
        let doubled = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * 2 * n)
        let yRows = UnsafeMutablePointer<UInt8>.allocate(capacity: 2 * 2 * n)
        defer { doubled.deallocate(); yRows.deallocate() }
        var status: Int32 = 0
        image.pixels.withUnsafeBytes { raw in
            for row in 0..<m {
                let src = raw.baseAddress! + ((r0 + row) * image.width + c0) * 4
                for col in 0..<n {
                    let pixel = src.loadUnaligned(fromByteOffset: col * 4, as: UInt32.self)
                    doubled[2 * col] = pixel; doubled[2 * col + 1] = pixel
                    doubled[2 * n + 2 * col] = pixel; doubled[2 * n + 2 * col + 1] = pixel
                }
                // PNG_FORMAT_RGBA is R, G, B, A in memory: libyuv's "ABGR".
                let bytes = UnsafeRawPointer(doubled).assumingMemoryBound(to: UInt8.self)
                let uRow = u + row * n, vRow = v + row * n
                let r = full
                    ? ABGRToJ420(bytes, Int32(8 * n), yRows, Int32(2 * n), uRow, Int32(n), vRow, Int32(n), Int32(2 * n), 2)
                    : ABGRToI420(bytes, Int32(8 * n), yRows, Int32(2 * n), uRow, Int32(n), vRow, Int32(n), Int32(2 * n), 2)
                if r != 0 { status = r }
                for col in 0..<n { y[row * n + col] = yRows[2 * col] }
            }
        }
        if status != 0 {
            throw FilterFailure(Int(RAWFX_ERR_INTERNAL), "watermark: libyuv could not convert \(image.path) (status \(status))")
        }
    }

    /// Blends slice `slice` of `slices` of the prepared image into `frame` in place: a band
    /// of its luma rows and of its chroma rows (disjoint across slices, so slices may run
    /// on different threads at once). The caller checked the size. Calls
    /// rfx_watermark_blend_luma and rfx_watermark_blend_chroma; no allocation.
    func blend(_ frame: rawfx_video_frame, slice: Int = 0, of slices: Int = 1) {
        if isEmpty { return }
        let l0 = lumaHeight * slice / slices, l1 = lumaHeight * (slice + 1) / slices
        let c0 = chromaHeight * slice / slices, c1 = chromaHeight * (slice + 1) / slices
        let lumaStride = Int(frame.strides.0)
        rfx_watermark_blend_luma(kernels, frame.planes.0! + (y0 + l0) * lumaStride + x0, Int32(lumaStride),
                                 lumaY + l0 * lumaWidth, lumaA + l0 * lumaWidth, Int32(lumaWidth), Int32(l1 - l0))
        let o = c0 * chromaWidth
        let uStride = Int(frame.strides.1), vStride = Int(frame.strides.2)
        rfx_watermark_blend_chroma(kernels, frame.planes.1! + (cy0 + c0) * uStride + cx0, Int32(uStride),
                                   chromaKQ + o, chromaKR + o, chromaUBQ + o, chromaUBR + o,
                                   Int32(chromaWidth), Int32(c1 - c0))
        rfx_watermark_blend_chroma(kernels, frame.planes.2! + (cy0 + c0) * vStride + cx0, Int32(vStride),
                                   chromaKQ + o, chromaKR + o, chromaVBQ + o, chromaVBR + o,
                                   Int32(chromaWidth), Int32(c1 - c0))
    }
}

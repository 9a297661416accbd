#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPNG
import RawFX

/// An 8-bit RGBA picture, rows top to bottom, 4 bytes per pixel, not premultiplied.
public struct RGBAImage: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4, "RGBAImage needs width·height·4 bytes")
        self.width = width
        self.height = height
        self.pixels = pixels
    }
}

/// Writes PNG files with libpng's simplified API (`png_image_write_to_file`).
public enum PNGWriter {
    /// Writes an I420 frame as an 8-bit RGB PNG (BT.601, limited or full range per the frame).
    /// `path` `-` writes to standard output.
    public static func write(_ frame: VideoFrame, to path: String) throws(MediaError) {
        let rgb = rgbPixels(of: frame)
        try write(pixels: rgb, width: frame.width, height: frame.height, channels: 3, to: path)
    }

    /// Writes an RGBA picture as a PNG with alpha.
    public static func write(_ image: RGBAImage, to path: String) throws(MediaError) {
        try write(pixels: image.pixels, width: image.width, height: image.height, channels: 4, to: path)
    }

    /// The picture as packed 8-bit RGB (3 bytes per pixel), converted with the BT.601 matrix
    /// in the frame's range (limited: Y 16–235, UV 16–240; full: 0–255).
    public static func rgbPixels(of frame: VideoFrame) -> [UInt8] {
        let w = frame.width, h = frame.height
        var out = [UInt8](repeating: 0, count: w * h * 3)
        // Fixed point ×2^16. Limited: 1.164 (Y−16), 1.596 V, 0.391 U/0.813 V, 2.018 U.
        let full = frame.format.colorRange == .full
        let cy = full ? 65536 : 76309
        let y0 = full ? 0 : 16
        let crv = full ? 91881 : 104597
        let cgu = full ? 22554 : 25675
        let cgv = full ? 46802 : 53279
        let cbu = full ? 116130 : 132201
        out.withUnsafeMutableBufferPointer { o in
            let dst = o.baseAddress!
            let yp = frame.plane(0), up = frame.plane(1), vp = frame.plane(2)
            let ys = frame.stride(0), us = frame.stride(1), vs = frame.stride(2)
            var row = 0
            while row < h {
                let yr = yp + row * ys, ur = up + (row / 2) * us, vr = vp + (row / 2) * vs
                var d = dst + row * w * 3
                var x = 0
                while x < w {
                    let yv = (Int(yr[x]) - y0) * cy + 32768
                    let u = Int(ur[x / 2]) - 128, v = Int(vr[x / 2]) - 128
                    d[0] = clamp8((yv + crv * v) >> 16)
                    d[1] = clamp8((yv - cgu * u - cgv * v) >> 16)
                    d[2] = clamp8((yv + cbu * u) >> 16)
                    d += 3
                    x += 1
                }
                row += 1
            }
        }
        return out
    }

    @inline(__always) static func clamp8(_ v: Int) -> UInt8 { UInt8(v < 0 ? 0 : (v > 255 ? 255 : v)) }

    private static func write(pixels: [UInt8], width: Int, height: Int, channels: Int, to path: String) throws(MediaError) {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(width)
        image.height = UInt32(height)
        // PNG_FORMAT_RGB = COLOR (2), PNG_FORMAT_RGBA = COLOR | ALPHA (3): macros Swift cannot import.
        image.format = UInt32(channels == 4 ? PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA : PNG_FORMAT_FLAG_COLOR)
        let ok: Int32 = pixels.withUnsafeBytes { raw in
            if path == "-" {
                guard let file = fdopen(dup(STDOUT_FILENO), "wb") else { return 0 }
                let result = png_image_write_to_stdio(&image, file, 0, raw.baseAddress, Int32(width * channels), nil)
                return fclose(file) == 0 ? result : 0
            }
            return png_image_write_to_file(&image, path, 0, raw.baseAddress, Int32(width * channels), nil)
        }
        let message = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        png_image_free(&image)
        guard ok != 0 else {
            // libpng reports an unopenable file as "png_image_write_to_file: open failed".
            let reason = message.contains("open failed") ? String(cString: strerror(errno)) : message
            throw .pngFailed(name: path == "-" ? "stdout" : path, message: reason.isEmpty ? "libpng failed" : reason)
        }
    }
}

/// Reads PNG files with libpng's simplified API (`png_image_begin_read_from_file`,
/// `png_image_finish_read`): backgrounds and placeholders (avatars) of the compositor.
public enum PNGReader {
    /// Pictures larger than this (pixels) are refused before anything is allocated.
    public static let maximumPixels = 8192 * 8192

    /// The file as 8-bit RGBA (any PNG: palette, grey, 16-bit, with or without alpha).
    public static func readRGBA(_ path: String) throws(MediaError) -> RGBAImage {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_file(&image, path) != 0 else {
            let message = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            png_image_free(&image)
            let reason = message.contains("open failed") ? String(cString: strerror(errno)) : message
            throw .pngFailed(name: path, message: reason.isEmpty ? "not a PNG file" : reason)
        }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width * height <= maximumPixels else {
            png_image_free(&image)
            throw .pngFailed(name: path, message: "\(width)x\(height) pixels; expected at most \(maximumPixels)")
        }
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, Int32(width * 4), nil) }
        let message = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        png_image_free(&image)
        guard ok != 0 else { throw .pngFailed(name: path, message: message.isEmpty ? "libpng failed" : message) }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }

    /// The file as an I420 picture in `range` (BT.601), alpha composited over `matte`
    /// (an sRGB colour, black by default), odd sizes rounded down to even.
    public static func readI420(_ path: String, range: ColorRange = .limited,
                                matte: (red: UInt8, green: UInt8, blue: UInt8) = (0, 0, 0)) throws(MediaError) -> VideoBuffer {
        let rgba = try readRGBA(path)
        let width = max(2, rgba.width & ~1), height = max(2, rgba.height & ~1)
        let buffer = VideoBuffer(format: VideoFormat(width: width, height: height, colorRange: range))
        let frame = buffer.frame
        let full = range == .full
        func pixel(_ x: Int, _ y: Int) -> (Double, Double, Double) {
            let i = (min(y, rgba.height - 1) * rgba.width + min(x, rgba.width - 1)) * 4
            let a = Double(rgba.pixels[i + 3]) / 255
            return (Double(rgba.pixels[i]) * a + Double(matte.red) * (1 - a),
                    Double(rgba.pixels[i + 1]) * a + Double(matte.green) * (1 - a),
                    Double(rgba.pixels[i + 2]) * a + Double(matte.blue) * (1 - a))
        }
        func clamp(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = pixel(x, y)
                let luma = 0.299 * r + 0.587 * g + 0.114 * b
                frame.plane(0)[y * frame.stride(0) + x] = clamp(full ? luma : 16 + luma * 219 / 255)
            }
        }
        for y in 0..<height / 2 {
            for x in 0..<width / 2 {
                // The mean of the 2×2 block, then the colour difference.
                var sum = (0.0, 0.0, 0.0)
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let p = pixel(2 * x + dx, 2 * y + dy)
                    sum = (sum.0 + p.0 / 4, sum.1 + p.1 / 4, sum.2 + p.2 / 4)
                }
                let luma = 0.299 * sum.0 + 0.587 * sum.1 + 0.114 * sum.2
                let cb = (sum.2 - luma) / 1.772, cr = (sum.0 - luma) / 1.402
                frame.plane(1)[y * frame.stride(1) + x] = clamp(128 + (full ? cb : cb * 224 / 255))
                frame.plane(2)[y * frame.stride(2) + x] = clamp(128 + (full ? cr : cr * 224 / 255))
            }
        }
        return buffer
    }
}

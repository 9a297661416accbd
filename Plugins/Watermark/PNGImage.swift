// Reads a PNG into 8-bit straight-alpha RGBA with libpng's simplified API
// (png_image_begin_read_from_stdio / png_image_finish_read, PNG_FORMAT_RGBA): grey,
// grey+alpha, RGB, RGBA, palette (with or without tRNS) and 16-bit files all come out as
// R, G, B, A bytes per pixel, in memory order (libyuv calls this layout "ABGR").
import CLibPNG
import RawFXPluginKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A decoded PNG: `width * height` pixels of R, G, B, A bytes, rows packed.
struct RGBAImage {
    let path: String
    let width: Int
    let height: Int
    let pixels: [UInt8]

    /// The largest width and height accepted (a 4096x4096 RGBA image is 64 MiB decoded).
    static let maxSide = 4096

    /// Decodes `path`. Every failure names the file and the reason:
    /// `watermark: /x/logo.png: not a PNG file (bad signature)`.
    static func load(path: String) throws(FilterFailure) -> RGBAImage {
        func fail(_ status: Int, _ reason: String) -> FilterFailure {
            FilterFailure(status, "watermark: \(path): \(reason)")
        }
        guard let file = fopen(path, "rb") else {
            let reason = String(cString: strerror(errno))
            throw fail(Int(RAWFX_ERR_IO), "cannot open the image (\(reason))")
        }
        defer { fclose(file) }

        // Check the signature ourselves: libpng's own message ("Not a PNG file") does not say
        // whether the file was short, unreadable or of another format.
        var signature = [UInt8](repeating: 0, count: 8)
        let got = fread(&signature, 1, 8, file)
        if got < 8 && ferror(file) != 0 {
            let reason = String(cString: strerror(errno))
            throw fail(Int(RAWFX_ERR_IO), "cannot read the image (\(reason))")
        }
        if got < 8 {
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), got == 0 ? "not a PNG file (the file is empty)"
                                                            : "not a PNG file (too short for the PNG signature)")
        }
        guard png_sig_cmp(signature, 0, 8) == 0 else {
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "not a PNG file (bad signature)")
        }
        rewind(file)

        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.opaque = nil
        guard png_image_begin_read_from_stdio(&image, file) != 0 else {
            // begin_read frees the png_image itself on failure.
            throw decodeFailure(&image, file: file, fail)
        }
        let width = Int(image.width), height = Int(image.height)
        guard width <= maxSide && height <= maxSide else {
            png_image_free(&image)
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT),
                       "image is \(width)x\(height), larger than the \(maxSide)x\(maxSide) limit")
        }
        // PNG_FORMAT_RGBA (its macro is too nested for Swift to import).
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let ok = pixels.withUnsafeMutableBytes { buffer in
            // row_stride 0: packed rows; no background (keep alpha); no colour-map.
            png_image_finish_read(&image, nil, buffer.baseAddress, 0, nil)
        }
        guard ok != 0 else {
            // finish_read frees the png_image itself, on failure as on success.
            throw decodeFailure(&image, file: file, fail)
        }
        return RGBAImage(path: path, width: width, height: height, pixels: pixels)
    }

    /// The failure of a libpng call: an I/O error if the stream failed, else a bad file.
    private static func decodeFailure(_ image: inout png_image, file: UnsafeMutablePointer<FILE>,
                                      _ fail: (Int, String) -> FilterFailure) -> FilterFailure {
        let message = withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let libpng = message.isEmpty ? "" : " (libpng: \(message))"
        if ferror(file) != 0 {
            return fail(Int(RAWFX_ERR_IO), "cannot read the image" + libpng)
        }
        if feof(file) != 0 {
            return fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "truncated PNG: the file ends before the image data" + libpng)
        }
        return fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "corrupt PNG" + libpng)
    }
}

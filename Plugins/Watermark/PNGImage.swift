// Reads a PNG into 8-bit straight-alpha RGBA with libpng's simplified API
// (png_image_begin_read_from_memory / png_image_finish_read, PNG_FORMAT_RGBA): grey,
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

    /// The largest file read (it is read whole, then decoded from memory).
    static let maxFileBytes = 64 << 20

    /// The chunks handed to libpng: those that change the pixels. Text, EXIF and unknown
    /// chunks are dropped before libpng sees them: the simplified API offers no way to set
    /// libpng's user limits (png_set_chunk_malloc_max…), and with Debian's libpng 1.6.39 a
    /// 145-byte file whose tEXt declares 2 GB costs 2 GB, fifty 48 KB zTXt bombs 400 MB.
    static let decodedChunks: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT"]

    /// The largest chunk (or decompressed chunk data, an ICC profile) libpng may allocate.
    static let maxChunkBytes = 2 << 20

    /// Width and height from the IHDR chunk, which `decodedChunks` put first.
    private static func headerSize(_ png: [UInt8]) -> (width: Int, height: Int)? {
        guard png.count >= 24 else { return nil }
        func word(_ at: Int) -> Int { png[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (word(16), word(20))
    }

    /// Decodes `path`. Every failure names the file and the reason:
    /// `watermark: /x/logo.png: not a PNG file (bad signature)`.
    static func load(path: String) throws(FilterFailure) -> RGBAImage {
        func fail(_ status: Int, _ reason: String) -> FilterFailure {
            FilterFailure(status, "watermark: \(path): \(reason)")
        }
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw fail(Int(RAWFX_ERR_IO), "cannot open the image (\(reason))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw fail(Int(RAWFX_ERR_IO), "cannot read the image (\(String(cString: strerror(errno))))")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            let kind: String
            switch st.st_mode & S_IFMT {
            case S_IFDIR: kind = String(cString: strerror(EISDIR))
            case S_IFIFO: kind = "a FIFO"
            case S_IFSOCK: kind = "a socket"
            case S_IFCHR: kind = "a character device"
            case S_IFBLK: kind = "a block device"
            default: kind = "not a regular file"
            }
            throw fail(Int(RAWFX_ERR_IO), "cannot read the image (\(kind)): the image must be a regular file")
        }
        guard st.st_size <= maxFileBytes else {
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT),
                       "the file is \(st.st_size) bytes, larger than the \(maxFileBytes >> 20) MiB limit for an image")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var got = 0
        while got < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, $0.count - got, off_t(got)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw fail(Int(RAWFX_ERR_IO), "cannot read the image (\(String(cString: strerror(errno))))") }
            if n == 0 { break }  // the file shrank: the chunk walk reports it as truncated
            got += n
        }
        bytes.removeLast(bytes.count - got)

        // Check the signature ourselves: libpng's own message ("Not a PNG file") does not say
        // whether the file was short, unreadable or of another format.
        if bytes.count < 8 {
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), bytes.isEmpty ? "not a PNG file (the file is empty)"
                                                                     : "not a PNG file (too short for the PNG signature)")
        }
        guard png_sig_cmp(bytes, 0, 8) == 0 else {
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "not a PNG file (bad signature)")
        }
        let png = try decodedChunks(of: bytes, fail)
        // libpng's own limits on what it reads (rawfx_png_check_limits in CLibPNG's shim):
        // the same maximum side, at most 100 ancillary chunks, none above 2 MiB.
        var message = [CChar](repeating: 0, count: 256)
        guard rawfx_png_check_limits(png, png.count, UInt32(maxSide), 100, maxChunkBytes, &message) != 0 else {
            let reason = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if let side = headerSize(png), side.width > maxSide || side.height > maxSide {
                throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "image is \(side.width)x\(side.height), larger than the \(maxSide)x\(maxSide) limit")
            }
            throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "refused by libpng's limits (\(maxChunkBytes >> 20) MiB per chunk, \(maxSide)x\(maxSide)): \(reason)")
        }

        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.opaque = nil
        let result: Result<RGBAImage, FilterFailure> = png.withUnsafeBytes { memory in
            guard png_image_begin_read_from_memory(&image, memory.baseAddress, memory.count) != 0 else {
                // begin_read frees the png_image itself on failure.
                return .failure(decodeFailure(&image, fail))
            }
            let width = Int(image.width), height = Int(image.height)
            guard width <= maxSide && height <= maxSide else {
                png_image_free(&image)
                return .failure(fail(Int(RAWFX_ERR_INVALID_ARGUMENT),
                                     "image is \(width)x\(height), larger than the \(maxSide)x\(maxSide) limit"))
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
                return .failure(decodeFailure(&image, fail))
            }
            return .success(RGBAImage(path: path, width: width, height: height, pixels: pixels))
        }
        return try result.get()
    }

    /// The signature and the `decodedChunks` of `file`, up to IEND. Every chunk must fit in
    /// the file: libpng would allocate what a chunk declares before finding the file short.
    private static func decodedChunks(of file: [UInt8], _ fail: (Int, String) -> FilterFailure) throws(FilterFailure) -> [UInt8] {
        var out = Array(file[0..<8])
        var offset = 8
        while true {
            guard file.count - offset >= 12 else {
                throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "truncated PNG: the file ends at byte \(file.count), before the image data ends (no IEND chunk)")
            }
            let length = Int(file[offset]) << 24 | Int(file[offset + 1]) << 16 | Int(file[offset + 2]) << 8 | Int(file[offset + 3])
            let typeBytes = file[(offset + 4)..<(offset + 8)]
            let type = String(decoding: typeBytes.map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
            guard length <= 0x7FFF_FFFF else {
                throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "corrupt PNG: chunk '\(type)' at byte \(offset) declares \(length) bytes (more than 2^31 - 1)")
            }
            guard length <= file.count - offset - 12 else {
                throw fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "truncated PNG: chunk '\(type)' at byte \(offset) declares \(length) bytes, but the file ends at byte \(file.count)")
            }
            let end = offset + 12 + length
            if decodedChunks.contains(type) { out += file[offset..<end] }
            if type == "IEND" { return out }
            offset = end
        }
    }

    /// The failure of a libpng call on a file whose chunks all fit (`decodedChunks`).
    private static func decodeFailure(_ image: inout png_image, _ fail: (Int, String) -> FilterFailure) -> FilterFailure {
        let message = withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return fail(Int(RAWFX_ERR_INVALID_ARGUMENT), "corrupt PNG" + (message.isEmpty ? "" : " (libpng: \(message))"))
    }
}

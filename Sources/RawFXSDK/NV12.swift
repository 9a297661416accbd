import CLibYUV
import RawFX
import RawFXCompose

/// Turns NV12 pictures (a Y plane and an interleaved U,V plane, the SDK's `onPixelBuffer`
/// path) into I420 for a chain, with libyuv's `NV12ToI420`.
///
/// The I420 buffer is allocated when the format is first seen or changes (`prepare`), never
/// per frame. Confined to the thread that processes the stream.
final class NV12ToI420Converter {
    private(set) var buffer: VideoBuffer?

    init() {}

    /// Makes sure the buffer fits `format` (allocates only when it changes). Returns true when
    /// it allocated.
    @discardableResult
    func prepare(_ format: VideoFormat) -> Bool {
        if let buffer, buffer.format.width == format.width, buffer.format.height == format.height { return false }
        buffer = VideoBuffer(format: VideoFormat(width: format.width, height: format.height))
        return true
    }

    /// Converts `pixels` into the prepared buffer and returns it as a frame carrying `format`'s
    /// range and rotation and `pixels`' timestamp. Throws when a plane is missing or a stride
    /// is shorter than its row.
    func convert(_ pixels: any NV12PixelBuffer, format: VideoFormat) throws(ChainError) -> VideoFrame {
        prepare(format)
        var frame = buffer!.frame
        try Self.convert(pixels, into: frame)
        frame.format = format
        frame.timestampMicroseconds = pixels.timestampMicroseconds
        return frame
    }

    /// Converts into any I420 frame of the picture's size (the converter's buffer, or an async
    /// slot's copy): libyuv `NV12ToI420`, through both sides' strides.
    static func convert(_ pixels: any NV12PixelBuffer, into frame: VideoFrame) throws(ChainError) {
        try check(pixels)
        precondition(frame.width == pixels.width && frame.height == pixels.height, "NV12 conversion between different sizes")
        let rc = NV12ToI420(pixels.yPlane, Int32(pixels.yStride), pixels.uvPlane, Int32(pixels.uvStride),
                            frame.plane(0), Int32(frame.stride(0)), frame.plane(1), Int32(frame.stride(1)),
                            frame.plane(2), Int32(frame.stride(2)), Int32(pixels.width), Int32(pixels.height))
        guard rc == 0 else { throw .contract("libyuv NV12ToI420 failed (\(rc)) for \(pixels.width)x\(pixels.height)") }
    }

    static func check(_ pixels: any NV12PixelBuffer) throws(ChainError) {
        let chromaRow = (pixels.width + 1) / 2 * 2
        guard pixels.width > 0, pixels.height > 0 else {
            throw .contract("NV12 frame of \(pixels.width)x\(pixels.height): width and height must be at least 1")
        }
        guard pixels.yPlane != nil, pixels.uvPlane != nil else {
            throw .contract("NV12 frame without its \(pixels.yPlane == nil ? "Y" : "UV") plane")
        }
        guard pixels.yStride >= pixels.width, pixels.uvStride >= chromaRow else {
            throw .contract("NV12 strides Y \(pixels.yStride), UV \(pixels.uvStride) are shorter than the rows "
                            + "(Y \(pixels.width), UV \(chromaRow) bytes for width \(pixels.width))")
        }
    }
}

extension NV12PixelBuffer {
    /// The I420 format the picture converts to.
    func videoFormat(rotation: SDKVideoRawDataRotation) -> VideoFormat {
        VideoFormat(width: width, height: height, colorRange: isLimitedRange ? .limited : .full,
                    rotation: rotation.rawValue)
    }
}

extension CompositorInput {
    /// [the input's thread] An NV12 picture (the SDK's `onPixelBuffer` path) converted by
    /// libyuv `NV12ToI420` straight into the input's frame: the one pass over the pixels the
    /// SDK's buffer lifetime requires anyway. Its range follows `isLimitedRange`.
    public func submit(nv12 pixels: any NV12PixelBuffer, at time: Int64? = nil) throws(ChainError) {
        try NV12ToI420Converter.check(pixels)
        guard pixels.width >= 2, pixels.height >= 2 else {
            throw .contract("NV12 frame of \(pixels.width)x\(pixels.height): the compositor draws pictures of at least 2x2")
        }
        let format = VideoFormat(width: pixels.width, height: pixels.height,
                                 colorRange: pixels.isLimitedRange ? .limited : .full)
        _ = try submit(writing: format, at: time) { (frame: VideoFrame) throws(ChainError) -> Bool in
            try NV12ToI420Converter.convert(pixels, into: frame)
            return true
        }
    }
}

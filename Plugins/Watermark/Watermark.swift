// The watermark plugin (libRawFXWatermark.so, plugin "rawfx-watermark"): one video filter,
// `watermark`, that draws a PNG with its alpha over I420 frames, in place.
//
// configure decodes the PNG (once per path), places it on the frame and converts the visible
// part into Y/U/V/alpha planes in the frame's colour range (see Overlay); process only
// blends those planes into the frame. See docs/plugins/watermark.md.
import RawFXPluginKit

// The .so exports it as rawfx_get_plugin_entry (Plugins/Entries); apps link it as a built-in.
@_cdecl("rawfx_watermark_plugin_entry")
public func rawfxWatermarkPluginEntry() -> UnsafeRawPointer {
    RawFXPlugin.export(name: "rawfx-watermark", version: "1.0.0", filters: [Watermark.self])
}

final class Watermark: RawFXFilter {
    static let corners = ["none", "top-left", "top-right", "bottom-left", "bottom-right"]
    private static let reconfigure = Int(RAWFX_PARAM_FLAG_RECONFIGURE)

    static let info = FilterInfo(
        id: "watermark", name: "Watermark", version: "1.0.0",
        description: "Draws a PNG image (with its transparency) over the video at a position or in a corner, in place.",
        mediaKind: Int(RAWFX_MEDIA_VIDEO), processing: Int(RAWFX_PROCESS_IN_PLACE),
        parameters: [
            ParameterInfo("image", name: "Image",
                          help: "The PNG file to draw, read when the filter is configured. Any PNG colour type or depth works "
                              + "(RGBA, RGB, grey, grey+alpha, palette with tRNS, 16-bit); its alpha channel is kept. "
                              + "At most 4096x4096 pixels. A relative path is relative to the working directory.",
                          kind: .string(default: nil),
                          flags: Int(RAWFX_PARAM_FLAG_PATH | RAWFX_PARAM_FLAG_REQUIRED) | reconfigure),
            ParameterInfo("x", name: "X position",
                          help: "Left edge of the image, in pixels from the frame's left edge. Negative counts from the right: "
                              + "x=-10 puts the image's right edge 10 px from the frame's right edge. Ignored unless corner=none.",
                          unit: "px", kind: .int(default: 0, range: -16384...16384), flags: reconfigure),
            ParameterInfo("y", name: "Y position",
                          help: "Top edge of the image, in pixels from the frame's top edge. Negative counts from the bottom: "
                              + "y=-10 puts the image's bottom edge 10 px above the frame's bottom edge. Ignored unless corner=none.",
                          unit: "px", kind: .int(default: 0, range: -16384...16384), flags: reconfigure),
            ParameterInfo("corner", name: "Corner",
                          help: "Put the image in this corner of the frame, margin pixels from both edges; none places it at x, y. "
                              + "Parts that fall outside the frame are clipped.",
                          kind: .enumeration(corners, default: 0), flags: reconfigure),
            ParameterInfo("margin", name: "Margin",
                          help: "With a corner: the gap in pixels between the image and the two frame edges of that corner.",
                          unit: "px", kind: .int(default: 16, range: 0...16384), flags: reconfigure),
            ParameterInfo("opacity", name: "Opacity",
                          help: "Multiplies the image's own alpha: 1 draws the PNG as it is, 0.5 half see-through, 0 not at all.",
                          kind: .float(default: 1, range: 0...1), flags: reconfigure),
        ])

    private var imagePath: String?
    private var placement = Placement()
    private var opacity = 1.0
    /// The decoded PNG of `imagePath`, kept across configures; nil until loaded.
    private var image: RGBAImage?
    /// The image prepared for the configured frame format; nil before configure.
    private var overlay: Overlay?
    private var error = ""
    /// process's failure messages, built at configure so process never formats text.
    private var sizeMismatch = ""
    private static let notConfigured = "watermark: process before configure"
    private static let notI420 = "watermark: the frame is not I420"

    /// The host's thread pool (`rawfx.thread-pool/1`) and the host, kept at create; the pool
    /// is nil without one.
    private let host: FilterHost
    private let pool: UnsafePointer<rawfx_host_thread_pool>?
    /// Overlays with fewer visible luma samples than this are blended in one slice: waking the
    /// pool's workers costs more than the blend.
    static let minimumSlicedSamples = 256 * 256

    /// One frame's blend as slice jobs see it: written on the process thread before
    /// `pool->run`, only read by the jobs during it (the pool's wake-up orders the two).
    private final class SliceJob {
        var overlay: Overlay?
        var frame = rawfx_video_frame()
        var slices = 1
    }
    private let sliceJob = SliceJob()

    init() { host = FilterHost(nil); pool = nil }

    init(host: FilterHost) {
        self.host = host
        pool = host.threadPool
    }

    func setParameter(_ index: Int, _ value: ParameterInput) throws(FilterFailure) {
        switch index {
        case 0:
            // Setting the path again (even to the same file) re-reads it at the next configure.
            imagePath = value.stringValue
            image = nil
        case 1: placement.x = Int(value.intValue)
        case 2: placement.y = Int(value.intValue)
        case 3: placement.corner = Int(value.intValue)
        case 4: placement.margin = Int(value.intValue)
        case 5: opacity = min(max(value.doubleValue, 0), 1)
        default: throw .invalid("watermark: no parameter \(index)")
        }
        // Every parameter changes the prepared planes: the host configures before the next frame.
        overlay = nil
    }

    func configure(input: rawfx_format, negotiation: inout rawfx_negotiation) throws(FilterFailure) {
        overlay = nil
        guard input.kind == rawfx_media_kind(RAWFX_MEDIA_VIDEO) else { throw .unsupported("watermark is a video filter") }
        let v = input.video
        guard v.pixel_format == rawfx_pixel_format(RAWFX_PIXEL_I420) else {
            throw .unsupported("watermark: pixel format \(v.pixel_format) is not supported; only I420 (\(RAWFX_PIXEL_I420))")
        }
        guard v.width > 0 && v.height > 0 else { throw .invalid("watermark: empty frame size \(v.width)x\(v.height)") }
        guard v.color_range == rawfx_color_range(RAWFX_RANGE_LIMITED) || v.color_range == rawfx_color_range(RAWFX_RANGE_FULL) else {
            throw .unsupported("watermark: unknown colour range \(v.color_range); expected limited (0) or full (1)")
        }
        guard let path = imagePath, !path.isEmpty else {
            throw .invalid("watermark: no image; set image=<path to a PNG file>")
        }
        if image?.path != path { image = try RGBAImage.load(path: path) }
        overlay = try Overlay(image: image!, placement: placement, opacity: opacity,
                              frameWidth: Int(v.width), frameHeight: Int(v.height), colorRange: v.color_range)
        sizeMismatch = "watermark: the frame size differs from the configured \(v.width)x\(v.height); configure again"
        // In place: the output format is the input format, already in `negotiation`.
    }

    func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status {
        guard let overlay else {
            error = Watermark.notConfigured
            return rawfx_status(RAWFX_ERR_STATE)
        }
        let frame = output.pointee
        guard frame.pixel_format == rawfx_pixel_format(RAWFX_PIXEL_I420) else {
            error = Watermark.notI420
            return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
        }
        guard Int(frame.width) == overlay.frameWidth && Int(frame.height) == overlay.frameHeight
                && frame.color_range == overlay.colorRange else {
            error = sizeMismatch
            return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
        }
        if let pool, let run = pool.pointee.run,
           overlay.lumaWidth * overlay.lumaHeight >= Watermark.minimumSlicedSamples {
            let threads = Int(pool.pointee.thread_count(host.raw))
            if threads > 1 {
                sliceJob.overlay = overlay
                sliceJob.frame = frame
                sliceJob.slices = threads
                // pool->run with a capture-free C function and the job by pointer: a Swift closure
                // (FilterHost.runSlices) boxes its context on the heap in debug builds.
                if run(host.raw, { context, index in
                    let job = Unmanaged<SliceJob>.fromOpaque(context!).takeUnretainedValue()
                    job.overlay!.blend(job.frame, slice: Int(index), of: job.slices)
                }, Unmanaged.passUnretained(sliceJob).toOpaque(), UInt32(threads)) == RAWFX_OK {
                    return rawfx_status(RAWFX_OK)
                }
            }
        }
        overlay.blend(frame)
        return rawfx_status(RAWFX_OK)
    }

    var processError: String { error }
}

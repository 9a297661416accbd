// The basics plugin: small filters written in Swift through RawFXPluginKit. They are the
// reference for writing a Swift plugin, the pass-through stages the benchmark uses to
// measure the engine's own cost per filter, and simple stages for tests.
import RawFXPluginKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The .so exports it as rawfx_get_plugin_entry (Plugins/Entries); apps link it as a built-in.
@_cdecl("rawfx_basics_plugin_entry")
public func rawfxBasicsPluginEntry() -> UnsafeRawPointer {
    RawFXPlugin.export(name: "rawfx-basics", version: "1.0.0", filters: [NullVideo.self, CopyVideo.self, Gain.self])
}

/// `null`: passes video through untouched, in place. Costs only the call.
final class NullVideo: RawFXFilter {
    static let info = FilterInfo(
        id: "null", name: "Null", version: "1.0.0",
        description: "Passes frames through unchanged (in place); measures the engine's cost per filter.",
        mediaKind: Int(RAWFX_MEDIA_VIDEO), processing: Int(RAWFX_PROCESS_IN_PLACE))

    init() {}
    func setParameter(_ index: Int, _ value: ParameterInput) throws(FilterFailure) {}
    func configure(input: rawfx_format, negotiation: inout rawfx_negotiation) throws(FilterFailure) {
        // Even a pass-through refuses what it does not know: it says I420 out (rawfx validate).
        try requireI420(input, "null")
    }
    func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status {
        rawfx_status(RAWFX_OK)
    }
}

/// `copy`: copies video into the host's output buffer, row by row (strides honoured).
final class CopyVideo: RawFXFilter {
    static let info = FilterInfo(
        id: "copy", name: "Copy", version: "1.0.0",
        description: "Copies each frame into a new buffer (out of place), honouring both strides.",
        mediaKind: Int(RAWFX_MEDIA_VIDEO), processing: Int(RAWFX_PROCESS_OUT_OF_PLACE))

    init() {}
    func setParameter(_ index: Int, _ value: ParameterInput) throws(FilterFailure) {}
    func configure(input: rawfx_format, negotiation: inout rawfx_negotiation) throws(FilterFailure) {
        try requireI420(input, "copy")
    }
    func processVideo(_ input: UnsafePointer<rawfx_video_frame>, _ output: UnsafeMutablePointer<rawfx_video_frame>) -> rawfx_status {
        let i = input.pointee
        let o = output.pointee
        let w = Int(i.width), h = Int(i.height)
        copyPlane(i.planes.0!, Int(i.strides.0), o.planes.0!, Int(o.strides.0), w, h)
        copyPlane(i.planes.1!, Int(i.strides.1), o.planes.1!, Int(o.strides.1), (w + 1) / 2, (h + 1) / 2)
        copyPlane(i.planes.2!, Int(i.strides.2), o.planes.2!, Int(o.strides.2), (w + 1) / 2, (h + 1) / 2)
        output.pointee.color_range = i.color_range
        output.pointee.rotation = i.rotation
        return rawfx_status(RAWFX_OK)
    }
}

/// Refuses a pixel format other than I420, naming the filter.
private func requireI420(_ input: rawfx_format, _ filter: String) throws(FilterFailure) {
    guard input.video.pixel_format == rawfx_pixel_format(RAWFX_PIXEL_I420) else {
        throw .unsupported("\(filter) handles I420 only")
    }
}

@inline(__always)
private func copyPlane(_ src: UnsafeMutablePointer<UInt8>, _ srcStride: Int,
                       _ dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int, _ width: Int, _ height: Int) {
    for row in 0..<height { memcpy(dst + row * dstStride, src + row * srcStride, width) }
}

/// `gain`: multiplies audio by a gain in dB, saturating, in place.
final class Gain: RawFXFilter {
    static let info = FilterInfo(
        id: "gain", name: "Gain", version: "1.0.0",
        description: "Changes the level of audio by a gain in dB, saturating at the 16-bit limits.",
        mediaKind: Int(RAWFX_MEDIA_AUDIO), processing: Int(RAWFX_PROCESS_IN_PLACE),
        parameters: [
            ParameterInfo("db", name: "Gain", help: "Gain in decibels; 6 doubles the amplitude, -6 halves it.",
                          unit: "dB", kind: .float(default: 0, range: -60...40)),
            ParameterInfo("block", name: "Block size",
                          help: "Ask the host for fixed blocks of this many frames (0: any size). Useful to exercise re-blocking.",
                          unit: "frames", kind: .int(default: 0, range: 0...96000), flags: Int(RAWFX_PARAM_FLAG_RECONFIGURE)),
        ])

    private var factor = 1.0
    private var block: UInt32 = 0
    private var channels = 1
    private var error = ""

    init() {}
    func setParameter(_ index: Int, _ value: ParameterInput) throws(FilterFailure) {
        if index == 0 { factor = pow(10, value.doubleValue / 20) } else { block = UInt32(value.intValue) }
    }
    func configure(input: rawfx_format, negotiation: inout rawfx_negotiation) throws(FilterFailure) {
        channels = Int(input.audio.channels)
        negotiation.block_frames = block
    }
    func processAudio(_ input: UnsafePointer<rawfx_audio_frame>, _ output: UnsafeMutablePointer<rawfx_audio_frame>) -> rawfx_status {
        let frame = input.pointee
        if block != 0 && frame.frame_count != block {
            error = "gain: expected blocks of \(block) frames, got \(frame.frame_count)"
            return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
        }
        let samples = output.pointee.samples!
        for i in 0..<Int(frame.frame_count) * channels {
            let v = (Double(frame.samples[i]) * factor).rounded()
            samples[i] = Int16(max(-32768, min(32767, v)))
        }
        return rawfx_status(RAWFX_OK)
    }
    var processError: String { error }
}

// `--peers`: FFmpeg doing the same work on the same frames, timed in the same interleave as
// RawFX (reference rows tagged `.ffmpeg`; vs_ffmpeg = FFmpeg's time / RawFX's time). FFmpeg
// is reached through the CBenchPeers shim, which opens libswscale and libavfilter at run time.
import CBenchPeers
import CLibYUV
import Foundation
import RawFX
import RawFXSDK

/// What a reference row is compared as: each tag gives the case a `vs_<tag>` figure, the
/// per-round median of reference time / RawFX time.
enum Peer: String {
    case ffmpeg
    case ffmpegFastBilinear = "ffmpeg_fast_bilinear"
    case copy
    case libyuv
    /// The compose cases' memory floor (ComposeFloor): every input byte read once, every output byte written once.
    case floor
}

struct PeerFailure: Error, CustomStringConvertible { let description: String }

/// Calls `body` with a 512-byte error buffer; the text it leaves there.
private func withErrorBuffer<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> T) -> (T, String) {
    var buffer = [CChar](repeating: 0, count: 512)
    let result = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
    return (result, String(nulTerminated: buffer))
}

enum FFmpegPeer {
    /// The loaded libraries' versions, or why FFmpeg cannot be used (`bench_peers_ffmpeg_load`).
    static let availability: Result<String, PeerFailure> = {
        let (rc, message) = withErrorBuffer { bench_peers_ffmpeg_load($0, $1) }
        if rc != 0 { return .failure(PeerFailure(description: message)) }
        return .success(String(cString: bench_peers_ffmpeg_versions()))
    }()

    static var isAvailable: Bool { (try? availability.get()) != nil }
}

enum GStreamerPeer {
    /// GStreamer is not timed in process: the note says why, for the report.
    static var note: String {
        let found = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/gst-launch-1.0") }
        return found
            ? "GStreamer: gst-launch-1.0 is installed but not timed per frame in process; docs/benchmarks.md has its pipelines"
            : "GStreamer: skipped (gst-launch-1.0 not installed)"
    }
}

@inline(__always) private func i32(_ n: Int) -> Int32 { Int32(truncatingIfNeeded: n) }

/// libswscale `sws_scale` of the whole frame into the direct path's output buffer
/// (`bench_peers_scaler_run`); one thread. Called on the measuring thread only.
final class FFmpegScale: DirectStep {
    let width: Int, height: Int
    private let scaler: OpaquePointer
    /// The C call's plane and stride arrays, allocated once (the frame path allocates nothing).
    private let source = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 3)
    private let output = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 3)
    private let strides = UnsafeMutablePointer<Int32>.allocate(capacity: 6)

    init(from input: VideoFormat, width: Int, height: Int, algorithm: bench_peers_sws_algorithm) throws {
        self.width = width
        self.height = height
        let (made, message) = withErrorBuffer {
            bench_peers_scaler_create(i32(input.width), i32(input.height), i32(width), i32(height), algorithm, $0, $1)
        }
        guard let made else { throw PeerFailure(description: message) }
        scaler = made
    }

    deinit {
        bench_peers_scaler_destroy(scaler)
        source.deallocate()
        output.deallocate()
        strides.deallocate()
    }

    static func label(_ algorithm: bench_peers_sws_algorithm) -> String {
        switch algorithm {
        case BENCH_PEERS_SWS_FAST_BILINEAR: return "FFmpeg sws_scale(SWS_FAST_BILINEAR), one thread"
        case BENCH_PEERS_SWS_AREA: return "FFmpeg sws_scale(SWS_AREA), one thread"
        default: return "FFmpeg sws_scale(SWS_BILINEAR), one thread"
        }
    }

    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat {
        VideoFormat(width: width, height: height, colorRange: input.colorRange, rotation: input.rotation)
    }

    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        for p in 0..<3 {
            source[p] = UnsafePointer(i.plane(p))
            output[p] = o.plane(p)
            strides[p] = i32(i.stride(p))
            strides[3 + p] = i32(o.stride(p))
        }
        let rc = bench_peers_scaler_run(scaler, source, strides, output, strides + 3)
        precondition(rc == i32(height), "FFmpeg sws_scale returned \(rc), expected the output height \(height)")
    }
}

/// A libavfilter graph fed frame i of the pool (`bench_peers_graph_run`): FFmpeg's own frame
/// handling (buffer source, filters, buffer sink) is part of its time, as it would be for an
/// application using these filters. Called on the measuring thread only.
final class FFmpegGraph: Workload {
    let pool: FramePool
    let description: String
    private let graph: OpaquePointer
    /// Where the output is copied when the filter only returns a view of its input (vflip).
    private let copyBuffer: VideoBuffer?
    private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: 512)
    /// Input planes (0-2) and copy planes (3-5) with their strides, allocated once.
    private let planes = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 6)
    private let strides = UnsafeMutablePointer<Int32>.allocate(capacity: 6)
    /// Frames fed minus frames taken: a filter may hold one back, never more.
    private var pending = 0

    /// `logo` adds the [logo] input for overlay (yuva420p). `copyOutput`: copy each output
    /// frame into a buffer of the bench's (for filters that only return a view).
    init(_ description: String, pool: FramePool, logo: LogoPlanes? = nil, copyOutput: Bool = false) throws {
        self.pool = pool
        self.description = description
        let (made, message) = withErrorBuffer { error, capacity in
            if let logo {
                var l = logo.descriptor
                return bench_peers_graph_create(description, i32(pool.format.width), i32(pool.format.height), &l, error, capacity)
            }
            return bench_peers_graph_create(description, i32(pool.format.width), i32(pool.format.height), nil, error, capacity)
        }
        guard let made else { throw PeerFailure(description: message) }
        graph = made
        copyBuffer = copyOutput
            ? VideoBuffer(format: VideoFormat(width: Int(bench_peers_graph_output_width(made)),
                                              height: Int(bench_peers_graph_output_height(made))))
            : nil
        errorText.initialize(repeating: 0, count: 512)
        planes.initialize(repeating: nil, count: 6)
        strides.initialize(repeating: 0, count: 6)
    }

    deinit {
        bench_peers_graph_destroy(graph)
        errorText.deallocate()
        planes.deallocate()
        strides.deallocate()
    }

    func run(_ i: Int) throws {
        _ = try feed(pool.frame(i), copyTo: copyBuffer?.frame)
    }

    /// Feeds one frame; with `copyTo`, each output frame is copied there. Returns the frames taken.
    func feed(_ frame: VideoFrame, copyTo: VideoFrame?) throws -> Int {
        for p in 0..<3 {
            planes[p] = frame.plane(p)
            strides[p] = i32(frame.stride(p))
            if let copyTo {
                planes[3 + p] = copyTo.plane(p)
                strides[3 + p] = i32(copyTo.stride(p))
            }
        }
        let taken = bench_peers_graph_run(graph, planes, strides, copyTo == nil ? nil : planes + 3,
                                          copyTo == nil ? nil : strides + 3, errorText, 512)
        if taken < 0 { throw PeerFailure(description: "'\(description)': \(String(cString: errorText))") }
        pending += 1 - Int(taken)
        if pending > 2 {
            throw PeerFailure(description: "'\(description)': \(pending) frames fed without a frame out of the buffer sink")
        }
        return Int(taken)
    }
}

/// Makes sure a peer does the work RawFX's direct path does before it is timed: on frame 0 of
/// the pool, `peer`'s output against `step`'s must be identical (`exact`: rotation, flips) or
/// at least 25 dB PSNR on every plane (scaling, where the filters' taps differ: swscale's
/// fast bilinear at 3:1 is 28-29 dB from libyuv on chroma, while a wrong size or orientation
/// is far below). Throws naming the peer and the difference.
func checkPeer(_ name: String, pool: FramePool, step: DirectStep, exact: Bool,
               peer: (VideoFrame, VideoFrame) throws -> Void) throws {
    let input = pool.frame(0)
    let format = step.output(for: pool.format)
    let expected = VideoBuffer(format: format), actual = VideoBuffer(format: format)
    step.apply(input, expected.frame)
    try peer(input, actual.frame)
    for p in 0..<3 {
        let (w, h) = expected.frame.planeSize(p)
        var squares = 0.0, largest = 0
        for y in 0..<h {
            let e = expected.frame.plane(p) + y * expected.frame.stride(p), a = actual.frame.plane(p) + y * actual.frame.stride(p)
            for x in 0..<w {
                let d = Int(e[x]) - Int(a[x])
                squares += Double(d * d)
                largest = max(largest, abs(d))
            }
        }
        let psnr = squares == 0 ? Double.infinity : 10 * log10(255 * 255 * Double(w * h) / squares)
        if exact ? largest != 0 : psnr < 25 {
            throw PeerFailure(description: "\(name) does not do the same work as the direct path on plane \(p) of frame 0: "
                + "largest difference \(largest), PSNR \(Report.format(psnr, 1)) dB (expected \(exact ? "identical" : "at least 25 dB"))")
        }
    }
}

extension LogoPlanes {
    /// The planes for the [logo] input of an overlay graph (yuva420p).
    var descriptor: bench_peers_logo {
        let f = yuv.frame
        var d = bench_peers_logo()
        d.planes = (UnsafePointer(f.plane(0)), UnsafePointer(f.plane(1)), UnsafePointer(f.plane(2)), UnsafePointer(alpha))
        d.strides = (Int32(f.stride(0)), Int32(f.stride(1)), Int32(f.stride(2)), Int32(width))
        d.width = Int32(width)
        d.height = Int32(height)
        return d
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An I420 picture: three plane pointers and their strides (`rawfx_video_frame`).
///
/// A frame of a `VideoBuffer` (and so every frame a chain returns) keeps that buffer alive in
/// `storage`: the planes cannot be freed under it, whatever the caller keeps. A frame made over
/// pointers (`init(format:y:…)`, an SDK's planes) has no `storage`: like the SDKs'
/// `YUVProcessDataI420`, it is valid only as long as whoever lent the planes says so.
public struct VideoFrame {
    public var raw: rawfx_video_frame
    /// The owner of the planes, retained with the frame (nil when the planes are borrowed).
    public var storage: AnyObject?

    public init(_ raw: rawfx_video_frame, storage: AnyObject? = nil) {
        self.raw = raw
        self.storage = storage
    }

    /// A frame over planes the caller owns. Strides are bytes between row starts and may
    /// exceed the row width.
    public init(format: VideoFormat,
                y: UnsafeMutablePointer<UInt8>, yStride: Int,
                u: UnsafeMutablePointer<UInt8>, uStride: Int,
                v: UnsafeMutablePointer<UInt8>, vStride: Int,
                timestampMicroseconds: Int64 = 0) {
        raw = rawfx_video_frame()
        raw.struct_size = UInt32(MemoryLayout<rawfx_video_frame>.size)
        raw.width = UInt32(format.width)
        raw.height = UInt32(format.height)
        raw.pixel_format = rawfx_pixel_format(RAWFX_PIXEL_I420)
        raw.color_range = format.colorRange.rawValue
        raw.rotation = UInt32(format.rotation)
        raw.planes = (y, u, v)
        raw.strides = (Int32(yStride), Int32(uStride), Int32(vStride))
        raw.timestamp_us = timestampMicroseconds
    }

    public var format: VideoFormat {
        get {
            VideoFormat(width: Int(raw.width), height: Int(raw.height),
                        colorRange: ColorRange(rawValue: raw.color_range) ?? .limited,
                        rotation: Int(raw.rotation))
        }
        set {
            raw.width = UInt32(newValue.width)
            raw.height = UInt32(newValue.height)
            raw.color_range = newValue.colorRange.rawValue
            raw.rotation = UInt32(newValue.rotation)
        }
    }

    public var width: Int { Int(raw.width) }
    public var height: Int { Int(raw.height) }
    public var timestampMicroseconds: Int64 {
        get { raw.timestamp_us }
        set { raw.timestamp_us = newValue }
    }

    /// Plane 0 (Y), 1 (U) or 2 (V).
    public func plane(_ index: Int) -> UnsafeMutablePointer<UInt8> {
        switch index {
        case 0: return raw.planes.0!
        case 1: return raw.planes.1!
        default: return raw.planes.2!
        }
    }

    public func stride(_ index: Int) -> Int {
        switch index {
        case 0: return Int(raw.strides.0)
        case 1: return Int(raw.strides.1)
        default: return Int(raw.strides.2)
        }
    }

    /// Width and height of plane `index` in samples.
    public func planeSize(_ index: Int) -> (width: Int, height: Int) {
        index == 0 ? (width, height) : ((width + 1) / 2, (height + 1) / 2)
    }

    /// Copies the picture, row by row, into `destination` (same size; any strides).
    public func copy(to destination: VideoFrame) {
        precondition(destination.width == width && destination.height == height, "copy between different sizes")
        for p in 0..<3 {
            let (w, h) = planeSize(p)
            for row in 0..<h {
                memcpy(destination.plane(p) + row * destination.stride(p), plane(p) + row * stride(p), w)
            }
        }
    }

    /// Writes the picture tightly packed (Y, then U, then V; no stride padding), as
    /// `sendVideoFrame` and Y4M expect. `destination` holds `format.packedByteCount` bytes.
    public func pack(into destination: UnsafeMutableRawPointer) {
        var offset = 0
        for p in 0..<3 {
            let (w, h) = planeSize(p)
            for row in 0..<h {
                memcpy(destination + offset, plane(p) + row * stride(p), w)
                offset += w
            }
        }
    }

    /// Reads a tightly packed picture (the inverse of `pack`).
    public func unpack(from source: UnsafeRawPointer) {
        var offset = 0
        for p in 0..<3 {
            let (w, h) = planeSize(p)
            for row in 0..<h {
                memcpy(plane(p) + row * stride(p), source + offset, w)
                offset += w
            }
        }
    }
}

/// An I420 picture that owns its planes: 64-byte aligned rows, strides rounded up to
/// `strideAlignment` (plus `extraStride`, for tests of strides wider than the width).
/// Allocated once; a chain keeps one per out-of-place stage and reuses it every frame.
/// Unchecked `Sendable`: the planes have one writer at a time (the stage or source that fills them), readers after it.
public final class VideoBuffer: @unchecked Sendable {
    public let format: VideoFormat
    /// The planes as a frame that keeps this buffer alive (`VideoFrame.storage`).
    public var frame: VideoFrame { VideoFrame(planes.raw, storage: self) }
    /// The planes as the C struct, for the frame path (no retain).
    public var raw: rawfx_video_frame { planes.raw }
    /// The planes without an owner (a frame holding `self` here would be a cycle).
    private let planes: VideoFrame
    /// The allocation this buffer frees.
    private let storage: UnsafeMutableRawPointer
    public let byteCount: Int

    public init(format: VideoFormat, strideAlignment: Int = 64, extraStride: Int = 0) {
        precondition(format.width > 0 && format.height > 0, "VideoBuffer needs a non-empty size")
        func aligned(_ n: Int) -> Int { (n + strideAlignment - 1) / strideAlignment * strideAlignment + extraStride }
        let strides = [aligned(format.width), aligned(format.chromaWidth), aligned(format.chromaWidth)]
        let heights = [format.height, format.chromaHeight, format.chromaHeight]
        let sizes = (0..<3).map { (strides[$0] * heights[$0] + 63) / 64 * 64 }
        byteCount = sizes.reduce(0, +)
        let allocated = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64)
        allocated.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        storage = allocated
        let base = allocated.assumingMemoryBound(to: UInt8.self)
        self.format = format
        planes = VideoFrame(format: format,
                           y: base, yStride: strides[0],
                           u: base + sizes[0], uStride: strides[1],
                           v: base + sizes[0] + sizes[1], vStride: strides[2])
    }

    deinit { storage.deallocate() }

    /// Fills the picture with one colour (e.g. black of its range: Y 16 or 0, U = V = 128).
    public func fill(y: UInt8, u: UInt8 = 128, v: UInt8 = 128) {
        for (p, value) in [(0, y), (1, u), (2, v)] {
            let (w, h) = frame.planeSize(p)
            for row in 0..<h { memset(frame.plane(p) + row * frame.stride(p), Int32(value), w) }
        }
    }
}

/// A borrowed block of interleaved 16-bit PCM (`rawfx_audio_frame`).
public struct AudioBlock {
    public var raw: rawfx_audio_frame

    public init(_ raw: rawfx_audio_frame) { self.raw = raw }

    public init(samples: UnsafeMutablePointer<Int16>, frameCount: Int, format: AudioFormat,
                source: rawfx_audio_source = rawfx_audio_source(RAWFX_AUDIO_SOURCE_FILE), userID: UInt64 = 0,
                timestampMicroseconds: Int64 = 0) {
        raw = rawfx_audio_frame()
        raw.struct_size = UInt32(MemoryLayout<rawfx_audio_frame>.size)
        raw.samples = samples
        raw.frame_count = UInt32(frameCount)
        raw.sample_rate = UInt32(format.sampleRate)
        raw.channels = UInt32(format.channels)
        raw.source = source
        raw.user_id = userID
        raw.timestamp_us = timestampMicroseconds
    }

    public var format: AudioFormat { AudioFormat(sampleRate: Int(raw.sample_rate), channels: Int(raw.channels)) }
    public var frameCount: Int { Int(raw.frame_count) }
    public var samples: UnsafeMutablePointer<Int16> { raw.samples! }
    /// All interleaved samples of the block.
    public var buffer: UnsafeMutableBufferPointer<Int16> {
        UnsafeMutableBufferPointer(start: raw.samples, count: frameCount * Int(raw.channels))
    }
    /// True when a voice-activity filter flagged this block (`RAWFX_AUDIO_FLAG_VOICE`).
    public var hasVoice: Bool { raw.flags & UInt32(RAWFX_AUDIO_FLAG_VOICE) != 0 }
    public var timestampMicroseconds: Int64 { raw.timestamp_us }
}

/// Interleaved 16-bit samples the engine owns, with a fixed capacity in frames.
final class AudioStorage {
    let capacityFrames: Int
    let channels: Int
    let samples: UnsafeMutablePointer<Int16>

    init(capacityFrames: Int, channels: Int) {
        self.capacityFrames = max(capacityFrames, 1)
        self.channels = channels
        samples = .allocate(capacity: self.capacityFrames * channels)
        samples.initialize(repeating: 0, count: self.capacityFrames * channels)
    }

    deinit { samples.deallocate() }
}

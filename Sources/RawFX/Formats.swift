@_exported import CRawFX

/// Video or audio: what a filter processes (`rawfx_media_kind`).
public enum MediaKind: UInt32, Sendable, CustomStringConvertible {
    case video = 1  // RAWFX_MEDIA_VIDEO
    case audio = 2  // RAWFX_MEDIA_AUDIO

    public var description: String { self == .video ? "video" : "audio" }
}

/// Whether a filter edits its input or writes a host-provided buffer (`rawfx_processing`).
public enum Processing: UInt32, Sendable, CustomStringConvertible {
    case inPlace = 1     // RAWFX_PROCESS_IN_PLACE
    case outOfPlace = 2  // RAWFX_PROCESS_OUT_OF_PLACE

    public var description: String { self == .inPlace ? "in place" : "out of place" }
}

/// I420 sample range (`rawfx_color_range`): the SDKs' `IsLimitedI420()`.
public enum ColorRange: UInt32, Sendable, CustomStringConvertible {
    case limited = 0  // RAWFX_RANGE_LIMITED: Y 16...235, UV 16...240
    case full = 1     // RAWFX_RANGE_FULL: 0...255

    public var description: String { self == .limited ? "limited" : "full" }
    /// The Y value of black in this range.
    public var blackLuma: UInt8 { self == .limited ? 16 : 0 }
}

/// The format of an I420 video stream (`rawfx_video_format`).
public struct VideoFormat: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var colorRange: ColorRange
    /// Clockwise degrees (0, 90, 180, 270) a viewer must rotate the picture to see it upright.
    public var rotation: Int

    public init(width: Int, height: Int, colorRange: ColorRange = .limited, rotation: Int = 0) {
        self.width = width
        self.height = height
        self.colorRange = colorRange
        self.rotation = rotation
    }

    /// Bytes of a tightly packed I420 picture: w·h + 2·⌈w/2⌉·⌈h/2⌉ (w·h·3/2 for even sizes),
    /// the SDKs' `frameLength` / `dataLength`.
    public var packedByteCount: Int { width * height + 2 * chromaWidth * chromaHeight }
    public var chromaWidth: Int { (width + 1) / 2 }
    public var chromaHeight: Int { (height + 1) / 2 }

    public var description: String {
        "\(width)x\(height) I420 \(colorRange) range" + (rotation != 0 ? ", rotation \(rotation)" : "")
    }

    public init(_ c: rawfx_video_format) {
        self.init(width: Int(c.width), height: Int(c.height),
                  colorRange: ColorRange(rawValue: c.color_range) ?? .limited, rotation: Int(c.rotation))
    }

    public var cValue: rawfx_video_format {
        rawfx_video_format(struct_size: UInt32(MemoryLayout<rawfx_video_format>.size),
                           width: UInt32(width), height: UInt32(height),
                           pixel_format: rawfx_pixel_format(RAWFX_PIXEL_I420),
                           color_range: colorRange.rawValue, rotation: UInt32(rotation))
    }
}

/// The format of an interleaved 16-bit PCM stream (`rawfx_audio_format`).
public struct AudioFormat: Hashable, Sendable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Frames (samples per channel) in 10 ms, the SDKs' and SpeexDSP's block.
    public var framesPer10ms: Int { sampleRate / 100 }

    public var description: String { "\(sampleRate) Hz, \(channels) channel\(channels == 1 ? "" : "s"), s16" }

    public init(_ c: rawfx_audio_format) {
        self.init(sampleRate: Int(c.sample_rate), channels: Int(c.channels))
    }

    public var cValue: rawfx_audio_format {
        rawfx_audio_format(struct_size: UInt32(MemoryLayout<rawfx_audio_format>.size),
                           sample_rate: UInt32(sampleRate), channels: UInt32(channels))
    }
}

/// A stream format of either kind (`rawfx_format`).
public enum StreamFormat: Hashable, Sendable, CustomStringConvertible {
    case video(VideoFormat)
    case audio(AudioFormat)

    public var kind: MediaKind {
        switch self {
        case .video: return .video
        case .audio: return .audio
        }
    }

    public var description: String {
        switch self {
        case .video(let v): return v.description
        case .audio(let a): return a.description
        }
    }

    public init?(_ c: rawfx_format) {
        switch c.kind {
        case rawfx_media_kind(RAWFX_MEDIA_VIDEO): self = .video(VideoFormat(c.video))
        case rawfx_media_kind(RAWFX_MEDIA_AUDIO): self = .audio(AudioFormat(c.audio))
        default: return nil
        }
    }

    public var cValue: rawfx_format {
        var c = rawfx_format()
        c.struct_size = UInt32(MemoryLayout<rawfx_format>.size)
        c.video.struct_size = UInt32(MemoryLayout<rawfx_video_format>.size)
        c.audio.struct_size = UInt32(MemoryLayout<rawfx_audio_format>.size)
        switch self {
        case .video(let v):
            c.kind = rawfx_media_kind(RAWFX_MEDIA_VIDEO)
            c.video = v.cValue
        case .audio(let a):
            c.kind = rawfx_media_kind(RAWFX_MEDIA_AUDIO)
            c.audio = a.cValue
        }
        return c
    }
}

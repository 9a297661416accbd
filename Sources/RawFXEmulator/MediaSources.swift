import RawFX
import RawFXSDK
import RawFXMedia

/// Pictures for the emulator's camera or for an app's frame pump.
public protocol FrameSource: AnyObject {
    var format: VideoFormat { get }
    /// The next picture (valid until the next call), or nil at the end.
    func nextFrame() throws -> VideoFrame?
}

/// The RawFXMedia test pattern (moving box, frame counter), `count` frames (nil: endless),
/// timestamps at `frameRate`.
public final class PatternFrameSource: FrameSource {
    public let format: VideoFormat
    private let pattern: TestPattern
    private let buffer: VideoBuffer
    private let count: Int?
    private let frameRate: Int
    public private(set) var index = 0

    public init(format: VideoFormat, count: Int? = nil, frameRate: Int = 30) {
        self.format = format
        pattern = TestPattern(format: format)
        buffer = VideoBuffer(format: format)
        self.count = count
        self.frameRate = max(frameRate, 1)
    }

    public func nextFrame() -> VideoFrame? {
        if let count, index >= count { return nil }
        pattern.render(frame: index, into: buffer.frame)
        var frame = buffer.frame
        frame.timestampMicroseconds = Int64(index) * 1_000_000 / Int64(frameRate)
        index += 1
        return frame
    }

    /// Which pattern frame a picture shows (reads the counter blocks), if legible.
    public func frameIndex(in frame: VideoFrame) -> Int? { pattern.frameIndex(in: frame) }
}

/// Frames of a Y4M file (RawFXMedia's reader), optionally looping.
public final class Y4MFrameSource: FrameSource {
    public let path: String
    private var reader: Y4MReader
    private let loop: Bool
    private var index = 0
    private let frameInterval: Int64

    public init(path: String, loop: Bool = false) throws {
        self.path = path
        reader = try Y4MReader(path: path)
        self.loop = loop
        let rate = reader.header.frameRate.value ?? 30
        frameInterval = Int64(1_000_000 / max(rate, 1))
    }

    public var format: VideoFormat { reader.header.format }

    public func nextFrame() throws -> VideoFrame? {
        if var frame = try reader.readFrame() {
            frame.timestampMicroseconds = Int64(index) * frameInterval
            index += 1
            return frame
        }
        guard loop, index > 0 else { return nil }
        reader = try Y4MReader(path: path)
        return try nextFrame()
    }
}

/// Interleaved 16-bit PCM for the emulator's speaker streams or an app's mic pump.
public protocol PCMSource: AnyObject {
    var format: AudioFormat { get }
    /// Reads up to `maxFrames` frames; 0 at the end.
    func read(into samples: UnsafeMutablePointer<Int16>, maxFrames: Int) throws -> Int
}

/// PCM from memory (e.g. `TestAudio.speech`), optionally looping.
public final class ArrayPCMSource: PCMSource {
    public let format: AudioFormat
    public let samples: [Int16]
    private var position = 0
    private let loop: Bool

    public init(samples: [Int16], format: AudioFormat, loop: Bool = false) {
        precondition(samples.count % format.channels == 0, "samples must be whole frames")
        self.samples = samples
        self.format = format
        self.loop = loop
    }

    /// Synthetic speech (RawFXMedia's `TestAudio.speech`) at `format`, `seconds` long.
    public convenience init(speechAt format: AudioFormat, seconds: Double, seed: UInt64 = 1, loop: Bool = false) {
        let mono = TestAudio.speech(sampleRate: format.sampleRate, seconds: seconds, seed: seed)
        self.init(samples: format.channels == 1 ? mono : TestAudio.interleave(mono, channels: format.channels),
                  format: format, loop: loop)
    }

    public func read(into destination: UnsafeMutablePointer<Int16>, maxFrames: Int) -> Int {
        let channels = format.channels
        var written = 0
        while written < maxFrames {
            if position >= samples.count {
                guard loop, !samples.isEmpty else { break }
                position = 0
            }
            let frames = min(maxFrames - written, (samples.count - position) / channels)
            samples.withUnsafeBufferPointer {
                (destination + written * channels).update(from: $0.baseAddress! + position, count: frames * channels)
            }
            position += frames * channels
            written += frames
        }
        return written
    }
}

/// PCM of a WAV file (RawFXMedia's reader).
public final class WAVPCMSource: PCMSource {
    public let path: String
    private let reader: WAVReader

    public init(path: String) throws {
        self.path = path
        reader = try WAVReader(path: path)
    }

    public var format: AudioFormat { reader.format }

    public func read(into samples: UnsafeMutablePointer<Int16>, maxFrames: Int) throws -> Int {
        try reader.read(into: samples, maxFrames: maxFrames)
    }
}

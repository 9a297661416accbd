#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// A ratio in a Y4M header: frame rate `F30000:1001`, pixel aspect `A1:1` (`0:0` = unknown).
public struct Y4MRatio: Hashable, Sendable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int
    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }
    public var description: String { "\(numerator):\(denominator)" }
    /// The value as a number; nil for `0:0` or a zero denominator.
    public var value: Double? { denominator == 0 ? nil : Double(numerator) / Double(denominator) }
}

/// The stream header of a YUV4MPEG2 (Y4M) file, limited to 8-bit 4:2:0.
///
/// `YUV4MPEG2 W1920 H1080 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=FULL`
public struct Y4MHeader: Hashable, Sendable {
    public var width: Int
    public var height: Int
    /// `F`; 25:1 when the header has none.
    public var frameRate: Y4MRatio
    /// `I`: `p` progressive, `t` top field first, `b` bottom first, `m` mixed, `?` unknown; nil if absent.
    public var interlace: Character?
    /// `A`: pixel aspect ratio; nil if absent.
    public var pixelAspect: Y4MRatio?
    /// The `C` tag without the `C` (`420jpeg`, `420mpeg2`, `420paldv`, `420`), nil if absent (= 4:2:0).
    public var chroma: String?
    /// From `XCOLORRANGE=FULL|LIMITED`; nil if absent (treated as limited).
    public var colorRange: ColorRange?
    /// Every other `X` parameter, verbatim with its `X` (e.g. `XYSCSS=420JPEG`), written back as is.
    public var extensions: [String]

    /// The chroma tags rawfx accepts (all 8-bit 4:2:0; they differ only in chroma siting).
    public static let supportedChroma = ["420jpeg", "420mpeg2", "420paldv", "420"]

    public init(width: Int, height: Int, frameRate: Y4MRatio = Y4MRatio(25, 1), interlace: Character? = "p",
                pixelAspect: Y4MRatio? = Y4MRatio(1, 1), chroma: String? = "420jpeg",
                colorRange: ColorRange? = nil, extensions: [String] = []) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.interlace = interlace
        self.pixelAspect = pixelAspect
        self.chroma = chroma
        self.colorRange = colorRange
        self.extensions = extensions
    }

    /// A header for frames of `format`: XCOLORRANGE=FULL when the range is full, none otherwise.
    public init(format: VideoFormat, frameRate: Y4MRatio = Y4MRatio(25, 1)) {
        self.init(width: format.width, height: format.height, frameRate: frameRate,
                  colorRange: format.colorRange == .full ? .full : nil)
    }

    /// The frames' format (limited range unless XCOLORRANGE=FULL).
    public var format: VideoFormat { VideoFormat(width: width, height: height, colorRange: colorRange ?? .limited) }

    /// Bytes of one frame's picture (without its `FRAME` line).
    public var frameByteCount: Int { format.packedByteCount }

    /// The header line, newline included.
    public var line: String {
        var s = "YUV4MPEG2 W\(width) H\(height) F\(frameRate)"
        if let i = interlace { s += " I\(i)" }
        if let a = pixelAspect { s += " A\(a)" }
        if let c = chroma { s += " C\(c)" }
        for x in extensions { s += " " + x }
        if let r = colorRange { s += r == .full ? " XCOLORRANGE=FULL" : " XCOLORRANGE=LIMITED" }
        return s + "\n"
    }

    /// Parses a header line (without its newline). `name` names the input in errors.
    public static func parse(_ line: String, name: String = "input") throws(MediaError) -> Y4MHeader {
        let tokens = line.split(separator: " ", omittingEmptySubsequences: true)
        guard tokens.first == "YUV4MPEG2" else { throw .notY4M(name: name, found: MediaError.show(line.utf8)) }
        var width: Int?
        var height: Int?
        var header = Y4MHeader(width: 0, height: 0, interlace: nil, pixelAspect: nil, chroma: nil)
        // Digits only, below 2^31 (what ffmpeg's and mjpegtools' readers take): `Int` would also
        // accept `+5`, and a ratio near 2^63 would overflow the timestamps.
        func decimal(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.count <= 10, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let v = Int(text), v <= Int(Int32.max) else { return nil }
            return v
        }
        func ratio(_ text: Substring, _ what: String) throws(MediaError) -> Y4MRatio {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let n = decimal(parts[0]), let d = decimal(parts[1]) else {
                throw .badY4MHeader(name: name, reason: "\(what) '\(MediaError.escaped(text))' is not of the form N:D (whole numbers below 2^31)")
            }
            return Y4MRatio(n, d)
        }
        for token in tokens.dropFirst() {
            let value = token.dropFirst()
            switch token.first! {
            case "W":
                guard let w = decimal(value), w > 0, w <= 32768 else {
                    throw .badY4MHeader(name: name, reason: "width 'W\(MediaError.escaped(value))' is not a number from 1 to 32768")
                }
                width = w
            case "H":
                guard let h = decimal(value), h > 0, h <= 32768 else {
                    throw .badY4MHeader(name: name, reason: "height 'H\(MediaError.escaped(value))' is not a number from 1 to 32768")
                }
                height = h
            case "F":
                header.frameRate = try ratio(value, "frame rate F")
                guard header.frameRate.numerator > 0, header.frameRate.denominator > 0 else {
                    throw .badY4MHeader(name: name, reason: "frame rate F\(MediaError.escaped(value)) is not positive")
                }
            case "I":
                guard value.count == 1, "ptbm?".contains(value.first!) else {
                    throw .badY4MHeader(name: name, reason: "interlace 'I\(MediaError.escaped(value))' is not one of Ip, It, Ib, Im, I?")
                }
                header.interlace = value.first!
            case "A":
                header.pixelAspect = try ratio(value, "pixel aspect A")
            case "C":
                guard supportedChroma.contains(String(value)) else {
                    throw .unsupportedChroma(name: name, tag: MediaError.escaped(token))
                }
                header.chroma = String(value)
            case "X":
                if value.hasPrefix("COLORRANGE=") {
                    switch value.dropFirst("COLORRANGE=".count).uppercased() {
                    case "FULL": header.colorRange = .full
                    case "LIMITED": header.colorRange = .limited
                    default: throw .badY4MHeader(name: name, reason: "'\(MediaError.escaped(token))' is neither XCOLORRANGE=FULL nor XCOLORRANGE=LIMITED")
                    }
                } else {
                    header.extensions.append(String(token))
                }
            default:
                break  // unknown parameters are ignored, as the format asks
            }
        }
        guard let w = width else { throw .badY4MHeader(name: name, reason: "no width (W)") }
        guard let h = height else { throw .badY4MHeader(name: name, reason: "no height (H)") }
        header.width = w
        header.height = h
        return header
    }
}

/// Reads a Y4M stream (file or pipe) frame by frame into one reused `VideoBuffer`.
///
///     let reader = try Y4MReader(path: "-")
///     while let frame = try reader.readFrame() { … }   // nil at a clean end of stream
///
/// After the first frame nothing is allocated per frame (unless frames carry `FRAME`
/// parameters, which are kept as a `String`). A stream that ends inside a frame throws
/// `MediaError.truncatedFrame` naming the frame and the missing byte count.
public final class Y4MReader {
    public let input: MediaInput
    public let header: Y4MHeader
    /// Frames returned so far.
    public private(set) var framesRead = 0
    /// The parameters of the last frame's `FRAME` line (after `FRAME `), "" when it had none.
    public private(set) var frameParameters = ""
    /// Bytes of the stream header, newline included.
    public let headerByteCount: Int
    private var buffer: VideoBuffer?
    private let lineCapacity = 4096
    private let line: UnsafeMutablePointer<UInt8>

    public convenience init(path: String) throws(MediaError) {
        try self.init(MediaInput(path: path))
    }

    /// Reads and checks the stream header.
    public init(_ input: MediaInput) throws(MediaError) {
        self.input = input
        line = .allocate(capacity: lineCapacity)
        let magic = try input.peek(10)
        guard magic == Array("YUV4MPEG2 ".utf8) else {
            line.deallocate()
            throw .notY4M(name: input.name, found: MediaError.show(magic))
        }
        var bytes: [UInt8] = []
        while true {
            guard let b = try input.readByte() else {
                line.deallocate()
                throw .badY4MHeader(name: input.name, reason: "the input ends inside the header line")
            }
            if b == 0x0A { break }
            bytes.append(b)
            if bytes.count > 4096 {
                line.deallocate()
                throw .badY4MHeader(name: input.name, reason: "the header line is longer than 4096 bytes")
            }
        }
        headerByteCount = bytes.count + 1
        do throws(MediaError) {
            // Decoding would turn invalid bytes into U+FFFD: refuse them, shown as they are.
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw MediaError.badY4MHeader(name: input.name, reason: "the header line is not valid UTF-8: '\(MediaError.escaped(bytes.prefix(120)))'")
            }
            header = try Y4MHeader.parse(text, name: input.name)
        } catch {
            line.deallocate()
            throw error
        }
    }

    deinit { line.deallocate() }

    /// The frame count if the input is a regular file whose frames carry no parameters
    /// (file size / frame size); nil for pipes.
    public var estimatedFrameCount: Int? {
        guard let size = input.fileSize else { return nil }
        return Int((size - Int64(headerByteCount)) / Int64(header.frameByteCount + 6))
    }

    /// The next frame, valid until the next call; nil at the end of the stream.
    /// Its timestamp is the frame index over the frame rate.
    public func readFrame() throws(MediaError) -> VideoFrame? {
        let frameStart = input.offset
        // The FRAME line: up to the newline, into a fixed buffer.
        var count = 0
        while true {
            guard let b = try input.readByte() else {
                if count == 0 { return nil }  // clean end of stream
                if count <= 5 {  // every byte so far matched FRAME
                    throw .truncatedFrame(name: input.name, frame: framesRead + 1, completeFrames: framesRead,
                                          missingBytes: header.frameByteCount, expectedBytes: header.frameByteCount)
                }
                throw badFrame(at: frameStart, count)
            }
            if b == 0x0A { break }
            line[count] = b
            count += 1
            if count == lineCapacity || (count <= 5 && line[count - 1] != Y4MReader.frameMagic(count - 1)) {
                throw badFrame(at: frameStart, count)
            }
        }
        guard count >= 5, count == 5 || line[5] == 0x20 else { throw badFrame(at: frameStart, count) }
        if count > 6 {
            frameParameters = String(decoding: UnsafeBufferPointer(start: line + 6, count: count - 6), as: UTF8.self)
        } else if !frameParameters.isEmpty {
            frameParameters = ""
        }

        if buffer == nil {
            // Allocated when the first frame's picture starts to arrive, not for what the header
            // claims: a header and a FRAME line with nothing after them cost no frame of memory.
            if try input.peek(1).isEmpty {
                throw .truncatedFrame(name: input.name, frame: framesRead + 1, completeFrames: framesRead,
                                      missingBytes: header.frameByteCount, expectedBytes: header.frameByteCount)
            }
            buffer = VideoBuffer(format: header.format)
        }
        var frame = buffer!.frame
        var missing = 0
        for p in 0..<3 {
            let (w, h) = frame.planeSize(p)
            let base = frame.plane(p)
            let stride = frame.stride(p)
            var row = 0
            while row < h {
                if missing > 0 {
                    missing += w
                } else {
                    let n = try input.read(into: base + row * stride, count: w)
                    if n < w { missing = w - n }
                }
                row += 1
            }
        }
        if missing > 0 {
            throw .truncatedFrame(name: input.name, frame: framesRead + 1, completeFrames: framesRead,
                                  missingBytes: missing, expectedBytes: header.frameByteCount)
        }
        guard let timestamp = Y4MReader.timestamp(frame: framesRead, rate: header.frameRate) else {
            throw .badY4MHeader(name: input.name, reason: "frame rate F\(header.frameRate) puts frame \(framesRead + 1) beyond the largest timestamp (2^63 microseconds)")
        }
        frame.timestampMicroseconds = timestamp
        framesRead += 1
        return frame
    }

    /// Frame `frame`'s time in microseconds, `frame · 10^6 · den / num` in 128 bits; nil when
    /// the result does not fit an Int64 or the rate is not positive.
    static func timestamp(frame: Int, rate: Y4MRatio) -> Int64? {
        guard frame >= 0, rate.numerator > 0, rate.denominator >= 0 else { return nil }
        let (perFrame, overflow) = UInt64(rate.denominator).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return nil }
        let product = UInt64(frame).multipliedFullWidth(by: perFrame)
        let divisor = UInt64(rate.numerator)
        guard product.high < divisor else { return nil }  // dividingFullWidth would trap
        return Int64(exactly: divisor.dividingFullWidth(product).quotient)
    }

    /// Byte `i` of "FRAME", without touching an array (no allocation in debug builds).
    @inline(__always) static func frameMagic(_ i: Int) -> UInt8 {
        switch i {
        case 0: return 0x46  // F
        case 1: return 0x52  // R
        case 2: return 0x41  // A
        case 3: return 0x4D  // M
        default: return 0x45  // E
        }
    }

    private func badFrame(at offset: Int64, _ count: Int) -> MediaError {
        .badFrameHeader(name: input.name, frame: framesRead + 1, byteOffset: offset,
                        found: MediaError.show(UnsafeBufferPointer(start: line, count: min(count, 16))))
    }
}

/// Writes a Y4M stream: the header once (at creation), then `FRAME` + the tightly packed
/// picture for each frame, whatever its strides. One packing buffer, allocated at the first frame.
///
/// Each frame is flushed as it is written, so the output always ends on a whole frame as far
/// as the descriptor accepted it, and a reader down a pipe gets every frame without delay.
public final class Y4MWriter {
    public let output: MediaOutput
    public let header: Y4MHeader
    /// Frames handed to the output.
    public private(set) var framesWritten = 0
    /// Frames, and bytes (header included), that the descriptor accepted whole.
    public private(set) var framesFlushed = 0
    private var flushedBytes: Int64 = 0
    private var packed: UnsafeMutableRawPointer?
    private let frameLine: UnsafeMutablePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 6)
        p.initialize(from: Array("FRAME\n".utf8), count: 6)
        return p
    }()

    public convenience init(path: String, header: Y4MHeader) throws(MediaError) {
        try self.init(MediaOutput(path: path), header: header)
    }

    /// Writes the header to `output` right away.
    public init(_ output: MediaOutput, header: Y4MHeader) throws(MediaError) {
        self.output = output
        self.header = header
        try output.write(header.line)
        try output.flush()
        flushedBytes = output.writtenBytes
    }

    deinit {
        packed?.deallocate()
        frameLine.deallocate()
    }

    /// Appends one frame; `parameters` go on its `FRAME` line (e.g. from `Y4MReader.frameParameters`).
    public func write(_ frame: VideoFrame, parameters: String = "") throws(MediaError) {
        guard frame.width == header.width, frame.height == header.height else {
            throw .frameSizeMismatch(name: output.name, frame: "\(frame.width)x\(frame.height)",
                                     header: "\(header.width)x\(header.height)")
        }
        if parameters.isEmpty {
            try output.write(frameLine, count: 6)
        } else {
            try output.write("FRAME " + parameters + "\n")
        }
        if packed == nil { packed = .allocate(byteCount: header.frameByteCount, alignment: 64) }
        frame.pack(into: packed!)
        try output.write(packed!, count: header.frameByteCount)
        framesWritten += 1
        try output.flush()
        framesFlushed = framesWritten
        flushedBytes = output.writtenBytes
    }

    /// Flushes (and closes a file this writer's output opened; `MediaOutput(replacing:)`
    /// renames it over its target).
    public func close() throws(MediaError) { try output.close() }

    /// Ends an output an error interrupted and returns how many whole frames it keeps. A file
    /// is cut back to its last whole frame and kept (renamed over its target) only if it
    /// holds at least one; with none, an existing target stays as it was. A stream keeps
    /// what its reader got.
    public func closeKeepingWholeFrames() -> Int {
        if output.isSeekable {
            guard framesFlushed > 0 else { output.discard(); return 0 }
            do throws(MediaError) {
                try output.truncate(to: flushedBytes)
                try output.close()
            } catch {
                output.discard()
                return 0
            }
        } else {
            try? output.close()
        }
        return framesFlushed
    }
}

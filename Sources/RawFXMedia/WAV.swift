#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// Reads a 16-bit PCM WAV (file or pipe): any rate, any channel count, `WAVE_FORMAT_PCM` or
/// `WAVE_FORMAT_EXTENSIBLE` with the PCM subformat. Chunks other than `fmt ` and `data`
/// (`LIST`, `fact`, `bext`…) are skipped. A `data` size of 0xFFFFFFFF (a stream written to a
/// pipe) means “until the end of the input”. On an input that is not a regular file (a pipe, a
/// FIFO) the declared size is only an upper bound, as ffmpeg and sox read it: writers put a
/// placeholder there (0, 0xFFFFFFFF, sox's 0x7FFFF000…), so the audio ends where the stream
/// ends, without an error; 0 and sizes from 0x7FFFF000 up mean no bound at all. On a regular
/// file the size is checked: a shorter file is reported as truncated.
///
///     let reader = try WAVReader(path: "in.wav")
///     let n = try reader.read(into: samples, maxFrames: 480)   // 0 at the end
public final class WAVReader {
    public let input: MediaInput
    public let format: AudioFormat
    /// Bytes in the `data` chunk; nil when unknown (a streamed WAV read to the end). On a pipe,
    /// at most this many (the stream may end before).
    public let dataByteCount: Int64?
    /// The input is a regular file: a `data` chunk shorter than declared is an error.
    private let strict: Bool
    /// Byte offset of the first sample.
    public let dataStart: Int64
    /// Frames (samples per channel) in the file; nil when unknown.
    public var frameCount: Int? { dataByteCount.map { Int($0) / (2 * format.channels) } }
    /// Frames returned so far.
    public private(set) var framesRead = 0
    private var pendingError: MediaError?
    private var leftover: [UInt8] = []

    public convenience init(path: String) throws(MediaError) {
        try self.init(MediaInput(path: path))
    }

    /// Reads the headers up to the first sample.
    public init(_ input: MediaInput) throws(MediaError) {
        self.input = input
        let name = input.name
        var riff = [UInt8](repeating: 0, count: 12)
        let n = try input.read(into: &riff, count: 12)
        guard n == 12, riff[0..<4] == [0x52, 0x49, 0x46, 0x46], riff[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            if n >= 4 && (riff[0..<4] == Array("RIFX".utf8)[...] || riff[0..<4] == Array("RF64".utf8)[...]) {
                throw .unsupportedWAVFormat(name: name, reason: "a \(String(decoding: riff[0..<4], as: UTF8.self)) file (big-endian or 64-bit WAV)")
            }
            throw .notWAV(name: name, found: MediaError.show(riff[0..<n]))
        }
        var format: AudioFormat?
        while true {
            let chunkOffset = input.offset
            var head = [UInt8](repeating: 0, count: 8)
            let got = try input.read(into: &head, count: 8)
            guard got == 8 else {
                throw .badWAV(name: name, reason: got == 0 ? "no data chunk" : "the input ends inside a chunk header", byteOffset: chunkOffset)
            }
            let id = String(decoding: head[0..<4].map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
            let size = Int64(le32(head, 4))
            if id == "fmt " {
                guard size >= 16, size <= 1024 else {
                    throw .badWAV(name: name, reason: "fmt chunk of \(size) bytes (expected 16 to 40)", byteOffset: chunkOffset)
                }
                var fmt = [UInt8](repeating: 0, count: Int(size))
                guard try input.read(into: &fmt, count: fmt.count) == fmt.count else {
                    throw .badWAV(name: name, reason: "the input ends inside the fmt chunk", byteOffset: input.offset)
                }
                if size % 2 == 1 { _ = try input.skip(1) }
                format = try WAVReader.parseFormat(fmt, name: name, offset: chunkOffset)
            } else if id == "data" {
                guard let f = format else {
                    throw .badWAV(name: name, reason: "the data chunk comes before any fmt chunk", byteOffset: chunkOffset)
                }
                self.format = f
                dataStart = input.offset
                strict = input.fileSize != nil
                let placeholder = size == 0xFFFF_FFFF || (!strict && (size == 0 || size >= 0x7FFF_F000))
                dataByteCount = placeholder ? nil : size
                return
            } else {
                // LIST, fact, bext, junk…: skip (padded to an even size).
                let skip = size + (size & 1)
                guard try input.skip(skip) == skip else {
                    throw .badWAV(name: name, reason: "the '\(id)' chunk declares \(size) bytes but the input ends first", byteOffset: chunkOffset)
                }
            }
        }
    }

    private static func parseFormat(_ fmt: [UInt8], name: String, offset: Int64) throws(MediaError) -> AudioFormat {
        var tag = le16(fmt, 0)
        let channels = Int(le16(fmt, 2))
        let rate = Int(le32(fmt, 4))
        let blockAlign = Int(le16(fmt, 12))
        let bits = Int(le16(fmt, 14))
        if tag == 0xFFFE {
            guard fmt.count >= 40 else {
                throw .badWAV(name: name, reason: "WAVE_FORMAT_EXTENSIBLE with a \(fmt.count)-byte fmt chunk (expected 40)", byteOffset: offset)
            }
            let validBits = Int(le16(fmt, 18))
            // KSDATAFORMAT_SUBTYPE_*: the format tag, then 00 00 00 00 10 00 80 00 00 AA 00 38 9B 71.
            let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
            tag = le16(fmt, 24)
            guard Array(fmt[26..<40]) == guidTail else {
                throw .unsupportedWAVFormat(name: name, reason: "WAVE_FORMAT_EXTENSIBLE with an unknown subformat GUID")
            }
            if tag == 1 && validBits > 16 {
                throw .unsupportedWAVFormat(name: name, reason: "\(validBits)-bit PCM")
            }
        }
        switch tag {
        case 1: break
        case 3: throw .unsupportedWAVFormat(name: name, reason: "\(bits)-bit floating point samples")
        case 6: throw .unsupportedWAVFormat(name: name, reason: "A-law samples")
        case 7: throw .unsupportedWAVFormat(name: name, reason: "µ-law samples")
        default: throw .unsupportedWAVFormat(name: name, reason: "compressed samples (format tag 0x\(String(tag, radix: 16)))")
        }
        guard bits == 16 else { throw .unsupportedWAVFormat(name: name, reason: "\(bits)-bit PCM") }
        guard channels >= 1, channels <= 64 else {
            throw .badWAV(name: name, reason: "\(channels) channels", byteOffset: offset)
        }
        guard rate >= 1, rate <= 1_000_000 else {
            throw .badWAV(name: name, reason: "sample rate \(rate) Hz", byteOffset: offset)
        }
        guard blockAlign == channels * 2 else {
            throw .badWAV(name: name, reason: "block align \(blockAlign) for \(channels) channels of 16 bits (expected \(channels * 2))", byteOffset: offset)
        }
        return AudioFormat(sampleRate: rate, channels: channels)
    }

    /// Reads up to `maxFrames` interleaved frames; returns the number read, 0 at the end.
    /// A `data` chunk shorter than declared in a regular file returns what it has, then throws
    /// `MediaError.truncatedWAVData` on the next call (on a pipe it is the end of the audio).
    public func read(into samples: UnsafeMutablePointer<Int16>, maxFrames: Int) throws(MediaError) -> Int {
        if let e = pendingError { throw e }
        let frameBytes = 2 * format.channels
        var want = maxFrames
        if let total = frameCount { want = min(want, total - framesRead) }
        guard want > 0 else { return 0 }
        let raw = UnsafeMutableRawPointer(samples)
        let n = try input.read(into: raw, count: want * frameBytes)
        let frames = n / frameBytes
        #if _endian(big)
        for i in 0..<frames * format.channels { samples[i] = Int16(littleEndian: samples[i]) }
        #endif
        framesRead += frames
        if n < want * frameBytes {
            if let declared = dataByteCount, strict {
                pendingError = .truncatedWAVData(name: input.name, declaredBytes: declared, dataStart: dataStart,
                                                 endsAt: dataStart + Int64(framesRead * frameBytes) + Int64(n % frameBytes))
            }
            if pendingError == nil, n % frameBytes != 0 {
                pendingError = .badWAV(name: input.name, reason: "the stream ends inside a sample frame (\(n % frameBytes) of \(frameBytes) bytes)",
                                       byteOffset: input.offset)
            }
            if frames == 0, let e = pendingError { throw e }
        }
        return frames
    }

    /// Every remaining frame, interleaved.
    public func readAll() throws(MediaError) -> [Int16] {
        var all: [Int16] = []
        // Reserve what the header declares only up to what the file holds: a 60-byte file may
        // declare 4 GB.
        if let n = frameCount, let size = input.fileSize {
            let present = Int(max(0, size - input.offset)) / (2 * format.channels)
            all.reserveCapacity(min(n - framesRead, present) * format.channels)
        }
        let chunk = 4096
        let buffer = UnsafeMutablePointer<Int16>.allocate(capacity: chunk * format.channels)
        defer { buffer.deallocate() }
        while true {
            let n = try read(into: buffer, maxFrames: chunk)
            if n == 0 { break }
            all.append(contentsOf: UnsafeBufferPointer(start: buffer, count: n * format.channels))
        }
        return all
    }
}

/// Writes a 16-bit PCM WAV. On a regular file the sizes are patched in `close()`; on a pipe
/// they are 0xFFFFFFFF (“unknown”, which FFmpeg and SoX read to the end). More than two
/// channels are written as `WAVE_FORMAT_EXTENSIBLE`, as the format asks.
public final class WAVWriter {
    public let output: MediaOutput
    public let format: AudioFormat
    public private(set) var framesWritten = 0
    private let headerSize: Int
    private let startOffset: Int64
    private let seekable: Bool
    private var closed = false

    public convenience init(path: String, format: AudioFormat) throws(MediaError) {
        try self.init(MediaOutput(path: path), format: format)
    }

    /// Writes the header right away.
    public init(_ output: MediaOutput, format: AudioFormat) throws(MediaError) {
        self.output = output
        self.format = format
        seekable = output.isSeekable
        let extensible = format.channels > 2
        headerSize = extensible ? 68 : 44
        startOffset = output.offset
        try output.write(WAVWriter.header(format: format, dataBytes: seekable ? 0 : nil, extensible: extensible))
    }

    /// The header bytes; `dataBytes` nil writes 0xFFFFFFFF sizes.
    static func header(format: AudioFormat, dataBytes: Int64?, extensible: Bool) -> [UInt8] {
        var h: [UInt8] = []
        func u16(_ v: Int) { h += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: UInt32) { h += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)] }
        let fmtSize = extensible ? 40 : 16
        let riffSize: UInt32 = dataBytes.map { UInt32(clamping: Int64(4 + 8 + fmtSize + 8) + $0) } ?? 0xFFFF_FFFF
        h += Array("RIFF".utf8); u32(riffSize); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(UInt32(fmtSize))
        u16(extensible ? 0xFFFE : 1)
        u16(format.channels)
        u32(UInt32(format.sampleRate))
        u32(UInt32(format.sampleRate * format.channels * 2))
        u16(format.channels * 2)
        u16(16)
        if extensible {
            u16(22)                       // cbSize
            u16(16)                       // valid bits
            u32(format.channels <= 18 ? UInt32((1 << format.channels) - 1) : 0)  // channel mask: the first N speakers
            u16(1)                        // KSDATAFORMAT_SUBTYPE_PCM
            h += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        }
        h += Array("data".utf8); u32(dataBytes.map { UInt32(clamping: $0) } ?? 0xFFFF_FFFF)
        return h
    }

    /// Appends `frames` interleaved frames.
    public func write(_ samples: UnsafePointer<Int16>, frames: Int) throws(MediaError) {
        #if _endian(big)
        preconditionFailure("big-endian hosts are not supported")
        #endif
        try output.write(UnsafeRawPointer(samples), count: frames * format.channels * 2)
        framesWritten += frames
    }

    /// Appends a block from a chain (its format must be the writer's).
    public func write(_ block: AudioBlock) throws(MediaError) {
        try write(block.samples, frames: block.frameCount)
    }

    public func write(_ samples: [Int16]) throws(MediaError) {
        var failure: MediaError?
        samples.withUnsafeBufferPointer { p in
            do { try write(p.baseAddress!, frames: p.count / format.channels) } catch { failure = error as? MediaError }
        }
        if let failure { throw failure }
    }

    /// Patches the sizes (seekable outputs), flushes and closes a file the output opened
    /// (`MediaOutput(replacing:)` renames it over its target).
    public func close() throws(MediaError) {
        guard !closed else { return }
        if seekable { try patchHeader() }
        try output.close()
        closed = true
    }

    private func patchHeader() throws(MediaError) {
        let dataBytes = Int64(framesWritten * format.channels * 2)
        try output.write(at: startOffset, WAVWriter.header(format: format, dataBytes: dataBytes, extensible: format.channels > 2))
    }

    /// Ends an output an error interrupted (a read, a filter or a write failed) and returns how
    /// many frames it keeps. A file keeps the whole sample frames the descriptor accepted, with
    /// its sizes patched to them, and is kept (renamed over its target) only if it holds at
    /// least one; with none, an existing target stays as it was. A stream keeps what its reader got.
    public func closeKeepingWholeFrames() -> Int {
        guard !closed else { return framesWritten }
        closed = true
        guard seekable else {
            try? output.close()
            return framesWritten
        }
        try? output.flush()  // after a read error everything is still writable; after a write error, not
        let frameBytes = Int64(2 * format.channels)
        let durable = max(0, (output.writtenBytes - startOffset - Int64(headerSize)) / frameBytes)
        guard durable > 0 || output.temporaryPath == nil else { output.discard(); return 0 }
        framesWritten = Int(durable)
        do throws(MediaError) {
            try output.truncate(to: startOffset + Int64(headerSize) + durable * frameBytes)
            try patchHeader()
            try output.close()
        } catch {
            output.discard()
            return 0
        }
        return framesWritten
    }
}

@inline(__always) func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
@inline(__always) func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}

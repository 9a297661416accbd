/// Why a media file could not be read or written. Every case names the file (`stdin` and
/// `stdout` for `-`), and `description` is one line fit for `rawfx: error: …`.
public enum MediaError: Error, Equatable, CustomStringConvertible {
    /// `open` failed (`reason` is `strerror`).
    case cannotOpen(name: String, reason: String)
    /// `read` failed.
    case readFailed(name: String, reason: String)
    /// `write` failed; a reader that went away is `reason: "broken pipe …"`.
    case writeFailed(name: String, reason: String)

    /// The stream does not start with `YUV4MPEG2 ` (`found` shows what it starts with).
    case notY4M(name: String, found: String)
    /// The stream header is malformed (missing W/H, bad number, too long…).
    case badY4MHeader(name: String, reason: String)
    /// A chroma layout or bit depth other than 8-bit 4:2:0; `tag` as written, e.g. `C444`.
    case unsupportedChroma(name: String, tag: String)
    /// Frame `frame` (counting from 1) does not start with `FRAME`.
    case badFrameHeader(name: String, frame: Int, byteOffset: Int64, found: String)
    /// The input ends inside frame `frame` (counting from 1): `completeFrames` whole frames came
    /// before it, and `missingBytes` of its `expectedBytes` (header excluded) are absent.
    case truncatedFrame(name: String, frame: Int, completeFrames: Int, missingBytes: Int, expectedBytes: Int)
    /// A frame handed to a `Y4MWriter` has another size than its header.
    case frameSizeMismatch(name: String, frame: String, header: String)

    /// Not a RIFF/WAVE file (`found` shows what it starts with).
    case notWAV(name: String, found: String)
    /// A WAV that is valid but not 16-bit integer PCM (`reason` says what it is).
    case unsupportedWAVFormat(name: String, reason: String)
    /// A malformed WAV: a chunk that runs past the end, no `fmt ` or `data` chunk…
    case badWAV(name: String, reason: String, byteOffset: Int64)
    /// The `data` chunk declares more bytes than the input holds.
    case truncatedWAVData(name: String, declaredBytes: Int64, dataStart: Int64, endsAt: Int64)

    /// libpng refused to write (`message` is libpng's).
    case pngFailed(name: String, message: String)

    public var description: String {
        switch self {
        case .cannotOpen(let name, let reason):
            return "cannot open \(name): \(reason)"
        case .readFailed(let name, let reason):
            return "cannot read \(name): \(reason)"
        case .writeFailed(let name, let reason):
            return "cannot write \(name): \(reason)"
        case .notY4M(let name, let found):
            return "\(name): not a Y4M stream (it should start with 'YUV4MPEG2 ', found \(found))"
        case .badY4MHeader(let name, let reason):
            return "\(name): bad Y4M header: \(reason)"
        case .unsupportedChroma(let name, let tag):
            return "\(name): unsupported Y4M chroma tag \(tag): rawfx reads 8-bit 4:2:0 only (C420, C420jpeg, C420mpeg2, C420paldv or no C tag); convert with ffmpeg -pix_fmt yuv420p"
        case .badFrameHeader(let name, let frame, let offset, let found):
            return "\(name): frame \(frame) at byte \(offset) does not start with FRAME (found \(found))"
        case .truncatedFrame(let name, let frame, let complete, let missing, let expected):
            return "\(name): truncated input: frame \(frame) is missing \(missing) of its \(expected) bytes (\(complete) complete frame\(complete == 1 ? "" : "s") before it)"
        case .frameSizeMismatch(let name, let frame, let header):
            return "\(name): a \(frame) frame cannot go in a Y4M stream of \(header)"
        case .notWAV(let name, let found):
            return "\(name): not a WAV file (it should start with 'RIFF' and 'WAVE', found \(found))"
        case .unsupportedWAVFormat(let name, let reason):
            return "\(name): unsupported WAV: \(reason); rawfx reads 16-bit integer PCM only (ffmpeg -c:a pcm_s16le)"
        case .badWAV(let name, let reason, let offset):
            return "\(name): bad WAV at byte \(offset): \(reason)"
        case .truncatedWAVData(let name, let declared, let start, let end):
            return "\(name): truncated data chunk: it declares \(declared) bytes from byte \(start) but the input ends at byte \(end) (\(start + declared - end) bytes missing)"
        case .pngFailed(let name, let message):
            return "cannot write PNG \(name): \(message)"
        }
    }

    /// Printable form of the first bytes of a stream, for `found` fields: quoted and escaped.
    static func show(_ bytes: some Sequence<UInt8>) -> String {
        let array = Array(bytes.prefix(16))
        if array.isEmpty { return "an empty input" }
        return "'" + escaped(array) + "'"
    }

    /// `bytes` from an input, safe to print on a terminal: printable ASCII and valid UTF-8 as
    /// they are, `\` doubled, control and format characters as `\xNN` / `\u{NNNN}` (so an
    /// escape sequence or a bidi override in a header cannot act), invalid UTF-8 as `\xNN`.
    /// Every text from an input goes through here before it enters a `MediaError`.
    public static func escaped(_ bytes: some Sequence<UInt8>) -> String {
        let b = Array(bytes)
        var out = ""
        var i = 0
        func hex(_ v: UInt8) -> String { "\\x" + String(v, radix: 16).leftPadded(2) }
        while i < b.count {
            let lead = b[i]
            if lead < 0x80 {
                out += lead == 0x5C ? "\\\\" : (lead >= 0x20 && lead < 0x7F ? String(Character(Unicode.Scalar(lead))) : hex(lead))
                i += 1
                continue
            }
            let length = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0
            if length > 0, i + length <= b.count, let s = String(validating: b[i..<(i + length)], as: UTF8.self),
               let scalar = s.unicodeScalars.first {
                switch scalar.properties.generalCategory {
                case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned:
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                default:
                    out += s
                }
                i += length
            } else {
                out += hex(lead)
                i += 1
            }
        }
        return out
    }

    /// `text` from an input (a token of a header), escaped as `escaped(_:)` does.
    public static func escaped(_ text: some StringProtocol) -> String { escaped(text.utf8) }
}

extension String {
    func leftPadded(_ width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

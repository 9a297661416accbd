#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CRawFXEmbed
// FoundationEssentials, not Foundation: librawfx and rawfx-isolate link the Swift runtime in
// statically for the packages (scripts/build-release.sh), and Foundation would bring ICU's data
// (about 40 MB) into each; the engine needs none of its international part.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFX

// The C boundary of librawfx: every exported function catches every Swift error and checks
// every argument a caller could get wrong, so neither an error nor a trap crosses into C.

@_cdecl("rawfx_embed_version")
public func rawfxEmbedVersion() -> UInt32 {
    UInt32(RAWFX_EMBED_VERSION_MAJOR) * 1000 + UInt32(RAWFX_EMBED_VERSION_MINOR)
}

// MARK: - Errors

/// One message per thread (`rawfx_last_error`), freed when the thread ends.
private let lastErrorKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { free($0) }
    return key
}()
nonisolated(unsafe) private let emptyMessage: UnsafeMutablePointer<CChar> = strdup("")!

/// Success (C enum constants import into Swift as Int).
let rawfxOK = rawfx_result(RAWFX_OK)

/// Stores `message` for the calling thread and returns `code`: every failing path ends here.
func fail(_ code: Int, _ message: String) -> rawfx_result {
    let previous = pthread_getspecific(lastErrorKey)
    pthread_setspecific(lastErrorKey, strdup(message))
    free(previous)
    return rawfx_result(code)
}

/// A chain error as a result code and its message.
func fail(_ error: ChainError) -> rawfx_result {
    let code: Int
    switch error {
    case .unknownFilter, .unknownParameter: code = RAWFX_E_NOT_FOUND
    case .refused: code = RAWFX_E_NEGOTIATION
    case .processFailed: code = RAWFX_E_PROCESS
    case .syntax, .invalidValue, .tooManyValues, .missingParameter, .wrongMediaKind, .createFailed, .contract:
        code = RAWFX_E_CHAIN
    }
    return fail(code, error.description)
}

func invalid(_ function: String, _ message: String) -> rawfx_result {
    fail(RAWFX_E_INVALID_ARGUMENT, "\(function): \(message)")
}

@_cdecl("rawfx_last_error")
public func rawfxLastError() -> UnsafePointer<CChar> {
    UnsafePointer((pthread_getspecific(lastErrorKey) ?? UnsafeMutableRawPointer(emptyMessage))
        .assumingMemoryBound(to: CChar.self))
}

nonisolated(unsafe) private let resultNames: [UnsafeMutablePointer<CChar>] = ([
    "RAWFX_OK", "RAWFX_E_INVALID_ARGUMENT", "RAWFX_E_NOT_FOUND", "RAWFX_E_CHAIN", "RAWFX_E_NEGOTIATION",
    "RAWFX_E_PROCESS", "RAWFX_E_STATE", "RAWFX_E_BUFFER_TOO_SMALL",
] as [String]).map { strdup($0)! }
nonisolated(unsafe) private let unknownResultName: UnsafeMutablePointer<CChar> = strdup("RAWFX_E_UNKNOWN")!

@_cdecl("rawfx_result_name")
public func rawfxResultName(_ result: rawfx_result) -> UnsafePointer<CChar> {
    UnsafePointer(result >= 0 && Int(result) < resultNames.count ? resultNames[Int(result)] : unknownResultName)
}

// MARK: - Handles

/// A Swift object behind an opaque C handle: retained by `create`, released by `destroy`.
func handle(_ object: AnyObject) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(object).toOpaque())
}

func object<T: AnyObject>(_ handle: OpaquePointer, as type: T.Type) -> T {
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
}

func release<T: AnyObject>(_ handle: OpaquePointer, as type: T.Type) {
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).release()
}

/// A C string argument, or nil when the pointer is NULL.
func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}

// MARK: - Checking what C hands in

let maxSide = 16384

/// Checks a struct the caller filled in: `struct_size` must cover this header's fields.
/// Checks a caller's `struct_size`: at least `expected` (the smallest size this library
/// accepts) and at most `largest` (its own sizeof; `expected` when the struct never grew). A
/// larger one comes from a newer header, or is garbage: either way fields the caller set
/// would be ignored, so it is refused.
func checkSize(_ size: UInt32, of type: String, expected: Int, largest: Int? = nil, _ function: String) -> rawfx_result? {
    let largest = largest ?? expected
    guard Int(size) >= expected else {
        return invalid(function, "\(type).struct_size is \(size); expected sizeof(\(type)) = \(largest) (set it to sizeof)")
    }
    guard Int(size) <= largest else {
        return invalid(function, "\(type).struct_size is \(size); this library (API \(RAWFX_EMBED_VERSION_MAJOR).\(RAWFX_EMBED_VERSION_MINOR)) knows sizeof(\(type)) = \(largest): a program built against a newer rawfx_embed.h checks rawfx_embed_version() before using its new fields")
    }
    return nil
}

/// The largest row stride the API takes, in bytes (a plane's own width is the smallest):
/// four times the widest plane, room for any canvas a tile lies in, and small enough that
/// stride × rows stays far inside the address arithmetic.
let maxStride: Int32 = 65536

/// A video format from C, or the failure naming what is wrong.
func videoFormat(width: UInt32, height: UInt32, pixelFormat: UInt32, colorRange: UInt32, rotation: UInt32,
                 _ what: String, _ function: String) -> Result<VideoFormat, RawFXCallError> {
    guard pixelFormat == UInt32(RAWFX_PIXEL_I420) else {
        return .failure(RawFXCallError(invalid(function, "\(what).pixel_format is \(pixelFormat); expected RAWFX_PIXEL_I420 (\(RAWFX_PIXEL_I420))")))
    }
    guard width >= 1, height >= 1, width <= maxSide, height <= maxSide else {
        return .failure(RawFXCallError(invalid(function, "\(what) is \(width)x\(height); expected a width and height from 1 to \(maxSide)")))
    }
    guard let range = ColorRange(rawValue: colorRange) else {
        return .failure(RawFXCallError(invalid(function, "\(what).color_range is \(colorRange); expected RAWFX_RANGE_LIMITED (0) or RAWFX_RANGE_FULL (1)")))
    }
    guard rotation == 0 || rotation == 90 || rotation == 180 || rotation == 270 else {
        return .failure(RawFXCallError(invalid(function, "\(what).rotation is \(rotation); expected 0, 90, 180 or 270")))
    }
    return .success(VideoFormat(width: Int(width), height: Int(height), colorRange: range, rotation: Int(rotation)))
}

/// A result code already stored with its message by `fail`.
struct RawFXCallError: Error {
    let code: rawfx_result
    init(_ code: rawfx_result) { self.code = code }
}

/// Checks a frame the caller lends: its format, and planes that hold at least the picture.
func checkFrame(_ pointer: UnsafePointer<rawfx_video_frame>?, _ what: String, _ function: String) -> rawfx_result? {
    guard let frame = pointer?.pointee else { return invalid(function, "\(what) is NULL; expected a rawfx_video_frame") }
    if let failure = checkSize(frame.struct_size, of: "rawfx_video_frame", expected: MemoryLayout<rawfx_video_frame>.size, function) {
        return failure
    }
    if case .failure(let error) = videoFormat(width: frame.width, height: frame.height, pixelFormat: frame.pixel_format,
                                              colorRange: frame.color_range, rotation: frame.rotation, what, function) {
        return error.code
    }
    let chromaWidth = Int32((frame.width + 1) / 2)
    // Plane by plane without arrays: this runs on every frame and must not allocate.
    for p in 0..<3 {
        let (plane, stride) = p == 0 ? (frame.planes.0, frame.strides.0)
            : p == 1 ? (frame.planes.1, frame.strides.1) : (frame.planes.2, frame.strides.2)
        guard plane != nil else { return invalid(function, "\(what).planes[\(p)] (\(planeName(p))) is NULL") }
        let width = p == 0 ? Int32(frame.width) : chromaWidth
        guard stride >= width, stride <= maxStride else {
            return invalid(function, "\(what).strides[\(p)] (\(planeName(p))) is \(stride); expected the plane's width, \(width), to \(maxStride) bytes")
        }
    }
    return nil
}

private func planeName(_ p: Int) -> String { p == 0 ? "Y" : p == 1 ? "U" : "V" }

/// Checks a block of audio the caller lends.
func checkAudio(_ pointer: UnsafePointer<rawfx_audio_frame>?, _ function: String) -> rawfx_result? {
    guard let block = pointer?.pointee else { return invalid(function, "input is NULL; expected a rawfx_audio_frame") }
    if let failure = checkSize(block.struct_size, of: "rawfx_audio_frame", expected: MemoryLayout<rawfx_audio_frame>.size, function) {
        return failure
    }
    if let failure = checkAudioFormat(sampleRate: block.sample_rate, channels: block.channels, "input", function) { return failure }
    guard block.samples != nil || block.frame_count == 0 else {
        return invalid(function, "input.samples is NULL with frame_count \(block.frame_count)")
    }
    guard block.frame_count <= UInt32(Int32.max) / block.channels else {
        return invalid(function, "input.frame_count \(block.frame_count) is too large")
    }
    return nil
}

let maxSampleRate: UInt32 = 768_000
let maxChannels: UInt32 = 32

func checkAudioFormat(sampleRate: UInt32, channels: UInt32, _ what: String, _ function: String) -> rawfx_result? {
    guard sampleRate >= 1, sampleRate <= maxSampleRate else {
        return invalid(function, "\(what).sample_rate is \(sampleRate); expected 1 to \(maxSampleRate) Hz")
    }
    guard channels >= 1, channels <= maxChannels else {
        return invalid(function, "\(what).channels is \(channels); expected 1 to \(maxChannels)")
    }
    return nil
}

// MARK: - Metrics

/// Writes `metrics` into the caller's array, each entry at most its `struct_size` bytes.
func writeMetrics(_ metrics: [Metrics], _ out: UnsafeMutablePointer<rawfx_stage_metrics>?, capacity: Int,
                  count: UnsafeMutablePointer<Int>?, _ function: String) -> rawfx_result {
    guard let count else { return invalid(function, "count is NULL") }
    count.pointee = metrics.count
    guard capacity >= metrics.count else {
        return fail(RAWFX_E_BUFFER_TOO_SMALL, "\(function): the chain has \(metrics.count) stages; capacity is \(capacity)")
    }
    guard metrics.isEmpty || out != nil else { return invalid(function, "metrics is NULL with capacity \(capacity)") }
    let fullSize = MemoryLayout<rawfx_stage_metrics>.size
    for (index, m) in metrics.enumerated() {
        let slot = out! + index
        let asked = Int(slot.pointee.struct_size)
        let size = asked == 0 ? fullSize : min(asked, fullSize)
        guard size >= MemoryLayout<UInt32>.size else { return invalid(function, "metrics[\(index)].struct_size is \(asked)") }
        var value = rawfx_stage_metrics()
        value.struct_size = UInt32(size)
        withUnsafeMutableBytes(of: &value.name) { name in
            let bytes = Array(m.name.utf8.prefix(name.count - 1))
            name.copyBytes(from: bytes)
            name[bytes.count] = 0
        }
        value.frames = m.frames
        value.errors = m.errors
        value.drops = m.drops
        value.bypassed = m.bypassed
        value.p50_ns = m.p50Nanoseconds
        value.p99_ns = m.p99Nanoseconds
        withUnsafeBytes(of: &value) { UnsafeMutableRawPointer(slot).copyMemory(from: $0.baseAddress!, byteCount: size) }
    }
    return rawfxOK
}

/// A string as a JSON string literal.
func jsonQuoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// One stage's (or hook's) figures as a JSON object.
func metricsJSON(_ m: Metrics) -> String {
    "{\"name\":\(jsonQuoted(m.name)),\"frames\":\(m.frames),\"errors\":\(m.errors),\"drops\":\(m.drops),"
        + "\"bypassed\":\(m.bypassed),\"p50_ns\":\(m.p50Nanoseconds),\"p99_ns\":\(m.p99Nanoseconds)}"
}

/// The metrics as JSON: `{"stages":[{"name":"scale","frames":10,...}]}`.
func metricsJSON(_ metrics: [Metrics]) -> String {
    "{\"stages\":[" + metrics.map { metricsJSON($0) }.joined(separator: ",") + "]}"
}

/// Copies `text` NUL-terminated into the caller's buffer (snprintf-like: length always set).
func writeString(_ text: String, _ buffer: UnsafeMutablePointer<CChar>?, capacity: Int,
                 length: UnsafeMutablePointer<Int>?, _ function: String) -> rawfx_result {
    let bytes = Array(text.utf8)
    length?.pointee = bytes.count
    guard capacity > bytes.count, let buffer else {
        return fail(RAWFX_E_BUFFER_TOO_SMALL, "\(function): the text is \(bytes.count) bytes; capacity is \(capacity) (needs length + 1)")
    }
    bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(buffer), byteCount: bytes.count) }
    buffer[bytes.count] = 0
    return rawfxOK
}

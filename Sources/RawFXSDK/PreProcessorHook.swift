import RawFX
import Synchronization

/// The video pre-processor (`onPreProcessRawData`): runs a video chain in place on the SDK's
/// own capture planes, before the SDK encodes the frame.
///
/// The chain may contain out-of-place filters as long as the picture keeps its size,
/// rotation and range: the result is then copied back, row by row, into the SDK's planes
/// (their strides honoured, their padding untouched). A chain that would resize is refused
/// when it is configured ("pre-processing cannot resize: chain output 1280x720, frame
/// 1920x1080"); with no frame size known yet it is checked against two probe sizes, and
/// again against every new frame format (a frame it would resize is left untouched and
/// counted as an error).
///
/// Always synchronous: the SDK's planes exist only during the callback and
/// `YUVProcessDataI420` cannot be retained, so there is no async mode.
/// Run-time control from any thread while frames flow: `setChain` (or `configure`) builds
/// and negotiates the new chain on the calling thread, for the last frame's format, and it is
/// taken at the start of the next frame, lock-free, with nothing left to negotiate on the
/// SDK's thread; the old chain is released on the control side; per-filter metrics continue.
/// `setParameter` and `setBypass` change the running chain between two frames.
///
/// Unchecked: `validatedFormat` and `refusal` belong to the SDK's capture thread (the one
/// that calls `process`); everything else is immutable or behind `Locked` / the swappable chain.
public final class PreProcessorHook: SDKVideoSourcePreProcessor, @unchecked Sendable {
    public let registry: PluginRegistry
    let stats = HookStats(name: "preProcessor")

    /// The chain in force, swapped lock-free between frames.
    private let live: SwappableVideoChain
    /// Frame path state (the SDK's capture thread only).
    private var validatedFormat: VideoFormat?
    /// The format the chain refused and why, so its next frames fail without renegotiating.
    private var refusal: (format: VideoFormat, error: ChainError)?
    /// Control state: the newest chain (for metrics), the last error, the last frame format.
    private let control = Locked<Control>(Control())

    struct Control {
        /// The newest chain's control handle.
        var chain: ChainControl?
        var text = ""
        var lastError: ChainError?
        var lastFormat: VideoFormat?
    }

    /// The sizes a chain is checked against when no frame format is known.
    public static let probeFormats = [VideoFormat(width: 1280, height: 720), VideoFormat(width: 640, height: 480)]

    /// - Parameters:
    ///   - chain: chain text; empty passes frames through.
    ///   - frameFormat: the camera's format if known, to check the chain against it now.
    public init(chain: String, registry: PluginRegistry, frameFormat: VideoFormat? = nil) throws(ChainError) {
        self.registry = registry
        let built = try Self.checkedChain(chain, registry: registry, formats: frameFormat.map { [$0] } ?? Self.probeFormats)
        live = SwappableVideoChain(built)
        control.withLock {
            $0.chain = built.control
            $0.text = chain
            // What setChain checks a new chain against until the first frame says otherwise.
            $0.lastFormat = frameFormat
        }
    }

    /// Builds and checks a chain, then installs it for the next frame. Throws (and keeps the
    /// chain in force) if the chain does not parse, a filter refuses, or it would change the
    /// frame's size, rotation or range.
    public func configure(chain text: String, frameFormat: VideoFormat? = nil) throws(ChainError) {
        let formats = frameFormat.map { [$0] } ?? control.withLock { $0.lastFormat }.map { [$0] } ?? Self.probeFormats
        let chain = try Self.checkedChain(text, registry: registry, formats: formats)
        control.withLock {
            $0.chain = chain.control
            $0.text = text
        }
        try live.replace(with: chain)
    }

    private static func checkedChain(_ text: String, registry: PluginRegistry, formats: [VideoFormat]) throws(ChainError) -> VideoChain {
        let chain = try VideoChain(text, registry: registry)
        for format in formats {
            let output = try chain.negotiate(format)
            try Self.checkKeepsFormat(output: output, frame: format)
        }
        return chain
    }

    /// The pre-processing contract: same size (and rotation and range: the SDK keeps its own
    /// metadata for the frame, so a chain cannot change them either).
    public static func checkKeepsFormat(output: VideoFormat, frame: VideoFormat) throws(ChainError) {
        if output.width != frame.width || output.height != frame.height {
            throw .contract("pre-processing cannot resize: chain output \(output.width)x\(output.height), frame \(frame.width)x\(frame.height)")
        }
        if output.rotation != frame.rotation {
            throw .contract("pre-processing cannot change the rotation: chain output rotation \(output.rotation), frame rotation \(frame.rotation)")
        }
        if output.colorRange != frame.colorRange {
            throw .contract("pre-processing cannot change the color range: chain output \(output.colorRange) range, frame \(frame.colorRange) range")
        }
    }

    /// [any thread] `configure(chain:)` under the name every hook uses.
    public func setChain(_ text: String) throws(ChainError) { try configure(chain: text) }

    /// [any thread] Sets a parameter of the chain (`"watermark.opacity"`), applied between two
    /// frames with the filter's state kept. A change that would resize the frame is refused
    /// on the frame path (the frame is left untouched, counted as an error).
    public func setParameter(_ address: String, _ value: String) throws(ChainError) { try live.setParameter(address, value) }

    /// [any thread] Bypasses a stage, or re-enables it, from the next frame.
    public func setBypass(_ stage: String, _ bypassed: Bool) throws(ChainError) { try live.setBypass(stage, bypassed) }

    /// The chain text in force (or about to be, at the next frame).
    public var chainText: String { control.withLock { $0.text } }

    /// The last error on the frame path (a refused format, a failing filter), if any.
    public var lastError: ChainError? { control.withLock { $0.lastError } }

    /// Frames left untouched so far (refused format, failing filter): read without allocating.
    public var errorCount: UInt64 { stats.errors }

    public var metrics: HookMetrics {
        stats.snapshot(filters: control.withLock { $0.chain }?.metrics ?? [], async: false)
    }

    // MARK: - The frame path

    /// [the SDK's capture thread] The SDK's callback: a thin adapter over `process(_:)`, the
    /// failure counted (the SDK's callback returns nothing) and kept in `lastError`.
    public func onPreProcessRawData(_ rawData: any YUVProcessDataI420) {
        guard let y = rawData.getYBuffer(0), let u = rawData.getUBuffer(0), let v = rawData.getVBuffer(0),
              rawData.width > 0, rawData.height > 0 else {
            stats.recordError()
            return
        }
        let frame = VideoFrame(format: rawData.videoFormat,
                               y: UnsafeMutableRawPointer(y).assumingMemoryBound(to: UInt8.self), yStride: rawData.yStride,
                               u: UnsafeMutableRawPointer(u).assumingMemoryBound(to: UInt8.self), uStride: rawData.uStride,
                               v: UnsafeMutableRawPointer(v).assumingMemoryBound(to: UInt8.self), vStride: rawData.vStride)
        try? process(frame)
    }

    /// [the SDK's capture thread] The frame-shaped core every entry calls (the SDK's callback,
    /// the C API): runs the chain in place on the frame's planes. The SDK gives no capture
    /// time, so the frame is stamped on arrival. Throws, with the frame left as captured and
    /// the error counted, when its format is refused or a filter fails.
    public func process(_ captured: VideoFrame) throws(ChainError) {
        let start = monotonicNanoseconds()
        var frame = captured
        frame.timestampMicroseconds = Int64(start / 1000)
        let format = frame.format
        if live.takePending() {
            refusal = nil
            // Negotiated and checked on the control side for the last frame's format: nothing
            // to do here unless the format has changed since.
            validatedFormat = live.chain.inputFormat
        }
        let chain = live.chain
        if format != validatedFormat {
            if let refusal, refusal.format == format {
                stats.recordError()
                throw refusal.error
            }
            do {
                let output = try chain.negotiate(format)
                try Self.checkKeepsFormat(output: output, frame: format)
                validatedFormat = format
                refusal = nil
                control.withLock { $0.lastFormat = format }
            } catch {
                // The frame is left as the SDK captured it.
                refusal = (format, error)
                validatedFormat = nil
                stats.recordError()
                control.withLock {
                    $0.lastError = error
                    $0.lastFormat = format
                }
                throw error
            }
        }
        do throws(ChainError) {
            let output = try chain.process(frame)
            if output.raw.planes.0 != frame.raw.planes.0 {
                guard output.width == frame.width, output.height == frame.height else {
                    // A parameter changed the output size since negotiation: leave the frame.
                    throw ChainError.contract("pre-processing cannot resize: chain output \(output.width)x\(output.height), frame \(frame.width)x\(frame.height)")
                }
                output.copy(to: frame)
            }
            stats.processing.record(nanoseconds: monotonicNanoseconds() &- start)
        } catch {
            stats.recordError()
            control.withLock { $0.lastError = error }
            throw error
        }
    }
}

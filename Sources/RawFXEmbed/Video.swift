#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CRawFXEmbed
import RawFX

// `rawfx_video_chain *` is a SwappableVideoChain: the engine's chain, replaceable while
// frames flow. Every process-side call takes a pending replacement first, as `process` does.

func videoChain(_ pointer: OpaquePointer) -> SwappableVideoChain { object(pointer, as: SwappableVideoChain.self) }

@_cdecl("rawfx_video_chain_create")
public func rawfxVideoChainCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_video_chain_create"
    guard let out else { return invalid(function, "chain is NULL; expected the address of a rawfx_video_chain *") }
    out.pointee = nil
    guard let registry = registry(registryPointer) else { return invalid(function, "registry is NULL") }
    guard let text = string(text) else { return invalid(function, "chain_text is NULL; expected a chain (\"\" copies)") }
    do {
        out.pointee = handle(SwappableVideoChain(try VideoChain(text, registry: registry.registry)))
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_video_chain_destroy")
public func rawfxVideoChainDestroy(_ chain: OpaquePointer?) {
    if let chain { release(chain, as: SwappableVideoChain.self) }
}

/// A `rawfx_video_format` from C, checked.
func videoFormat(_ pointer: UnsafePointer<rawfx_video_format>?, _ what: String, _ function: String) -> Result<VideoFormat, RawFXCallError> {
    guard let c = pointer?.pointee else { return .failure(RawFXCallError(invalid(function, "\(what) is NULL; expected a rawfx_video_format"))) }
    if let failure = checkSize(c.struct_size, of: "rawfx_video_format", expected: MemoryLayout<rawfx_video_format>.size, function) {
        return .failure(RawFXCallError(failure))
    }
    return videoFormat(width: c.width, height: c.height, pixelFormat: c.pixel_format, colorRange: c.color_range,
                       rotation: c.rotation, what, function)
}

@_cdecl("rawfx_video_chain_negotiate")
public func rawfxVideoChainNegotiate(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_video_format>?,
                                     _ output: UnsafeMutablePointer<rawfx_video_format>?) -> rawfx_result {
    let function = "rawfx_video_chain_negotiate"
    guard let pointer else { return invalid(function, "chain is NULL") }
    let format: VideoFormat
    switch videoFormat(input, "input", function) {
    case .success(let f): format = f
    case .failure(let error): return error.code
    }
    let swappable = videoChain(pointer)
    swappable.takePending()
    do {
        let negotiated = try swappable.chain.negotiate(format)
        output?.pointee = negotiated.cValue
        return rawfxOK
    } catch {
        return fail(error)
    }
}

/// Runs a checked frame through the chain in force: the shared part of both process calls.
private func run(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_video_frame>?,
                 _ function: String) -> Result<VideoFrame, RawFXCallError> {
    guard let pointer else { return .failure(RawFXCallError(invalid(function, "chain is NULL"))) }
    if let failure = checkFrame(input, "input", function) { return .failure(RawFXCallError(failure)) }
    do {
        return .success(try videoChain(pointer).process(VideoFrame(input!.pointee)))
    } catch {
        return .failure(RawFXCallError(fail(error)))
    }
}

@_cdecl("rawfx_video_chain_process")
public func rawfxVideoChainProcess(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_video_frame>?,
                                   _ output: UnsafeMutablePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_video_chain_process"
    guard let output else { return invalid(function, "output is NULL; expected a rawfx_video_frame to receive the view") }
    switch run(pointer, input, function) {
    case .success(let frame):
        output.pointee = frame.raw
        return rawfxOK
    case .failure(let error):
        return error.code
    }
}

@_cdecl("rawfx_video_chain_process_into")
public func rawfxVideoChainProcessInto(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_video_frame>?,
                                       _ destination: UnsafePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_video_chain_process_into"
    if let failure = checkFrame(destination, "destination", function) { return failure }
    if let failure = checkFrame(input, "input", function) { return failure }
    let target = VideoFrame(destination!.pointee)
    let source = VideoFrame(input!.pointee)
    // The input itself (a pre-processor's frame) or planes apart from it: a copy between
    // planes that partly overlap would read samples it has already written.
    if !(target.raw.planes == source.raw.planes && target.raw.strides == source.raw.strides),
       let (d, i) = overlappingPlanes(target, source) {
        return invalid(function, "destination plane \(d) overlaps input plane \(i); expected the input's own planes (in place) or planes apart from them")
    }
    // Refused before the frame is consumed whenever the output size is known.
    if let pointer {
        let swappable = videoChain(pointer)
        swappable.takePending()
        if let output = swappable.chain.settledOutputFormat(for: source.format),
           output.width != target.width || output.height != target.height {
            return fail(RAWFX_E_STATE, "\(function): the chain's output is \(output.width)x\(output.height); destination is \(target.width)x\(target.height) (expected the output's size; nothing was processed)")
        }
    }
    switch run(pointer, input, function) {
    case .success(let frame):
        guard frame.width == target.width, frame.height == target.height else {
            return fail(RAWFX_E_STATE, "\(function): the chain's output is \(frame.width)x\(frame.height); destination is \(target.width)x\(target.height) (expected the output's size; rawfx_video_chain_process returns a view of any size)")
        }
        // An all-in-place chain over the destination's own planes has nothing to copy.
        let samePlanes = frame.raw.planes == target.raw.planes && frame.raw.strides == target.raw.strides
        if !samePlanes { frame.copy(to: target) }
        return rawfxOK
    case .failure(let error):
        return error.code
    }
}

/// The first pair of planes (destination, input; 0 Y, 1 U, 2 V) whose byte ranges overlap.
private func overlappingPlanes(_ a: VideoFrame, _ b: VideoFrame) -> (Int, Int)? {
    func range(_ frame: VideoFrame, _ p: Int) -> (UInt, UInt) {
        let raw = frame.raw
        let (plane, stride) = p == 0 ? (raw.planes.0, raw.strides.0) : p == 1 ? (raw.planes.1, raw.strides.1) : (raw.planes.2, raw.strides.2)
        let rows = p == 0 ? frame.height : (frame.height + 1) / 2
        let width = p == 0 ? frame.width : (frame.width + 1) / 2
        let start = UInt(bitPattern: plane)
        return (start, start + UInt(Int(stride) * (rows - 1) + width))
    }
    for d in 0..<3 {
        let (ds, de) = range(a, d)
        for i in 0..<3 {
            let (s, e) = range(b, i)
            if ds < e && s < de { return (d, i) }
        }
    }
    return nil
}

@_cdecl("rawfx_video_chain_latency")
public func rawfxVideoChainLatency(_ pointer: OpaquePointer?) -> UInt32 {
    guard let pointer else { return 0 }
    let swappable = videoChain(pointer)
    swappable.takePending()
    return UInt32(clamping: swappable.chain.latency)
}

@_cdecl("rawfx_video_chain_drain")
public func rawfxVideoChainDrain(_ pointer: OpaquePointer?, _ last: UnsafePointer<rawfx_video_frame>?,
                                 _ emit: rawfx_video_emit?, _ user: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_video_chain_drain"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let emit else { return invalid(function, "emit is NULL; expected a rawfx_video_emit") }
    if let failure = checkFrame(last, "last_input", function) { return failure }
    let swappable = videoChain(pointer)
    swappable.takePending()
    do {
        try swappable.chain.drain(repeating: VideoFrame(last!.pointee)) { frame in
            withUnsafePointer(to: frame.raw) { emit(user, $0) }
        }
        return rawfxOK
    } catch let error as ChainError {
        return fail(error)
    } catch {
        return fail(RAWFX_E_PROCESS, "\(function): \(error)")
    }
}

@_cdecl("rawfx_video_chain_set_parameter")
public func rawfxVideoChainSetParameter(_ pointer: OpaquePointer?, _ address: UnsafePointer<CChar>?,
                                        _ value: UnsafePointer<CChar>?) -> rawfx_result {
    setParameter(SwappableVideoChain.self, "rawfx_video_chain_set_parameter", pointer, address, value)
}

@_cdecl("rawfx_video_chain_set_bypass")
public func rawfxVideoChainSetBypass(_ pointer: OpaquePointer?, _ stage: UnsafePointer<CChar>?, _ bypassed: Int32) -> rawfx_result {
    setBypass(SwappableVideoChain.self, "rawfx_video_chain_set_bypass", pointer, stage, bypassed)
}

@_cdecl("rawfx_video_chain_replace")
public func rawfxVideoChainReplace(_ pointer: OpaquePointer?, _ registryPointer: OpaquePointer?,
                                   _ text: UnsafePointer<CChar>?, _ format: UnsafePointer<rawfx_video_format>?) -> rawfx_result {
    let function = "rawfx_video_chain_replace"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let registry = registry(registryPointer) else { return invalid(function, "registry is NULL") }
    guard let text = string(text) else { return invalid(function, "chain_text is NULL") }
    var negotiateFor: VideoFormat?
    if format != nil {
        switch videoFormat(format, "negotiate_for", function) {
        case .success(let f): negotiateFor = f
        case .failure(let error): return error.code
        }
    }
    do {
        try videoChain(pointer).replace(with: try VideoChain(text, registry: registry.registry), negotiatingFor: negotiateFor)
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_video_chain_swap_count")
public func rawfxVideoChainSwapCount(_ pointer: OpaquePointer?) -> UInt64 {
    pointer.map { UInt64(videoChain($0).swapCount) } ?? 0
}

@_cdecl("rawfx_video_chain_metrics")
public func rawfxVideoChainMetrics(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<rawfx_stage_metrics>?,
                                   _ capacity: Int, _ count: UnsafeMutablePointer<Int>?) -> rawfx_result {
    metrics(SwappableVideoChain.self, "rawfx_video_chain_metrics", pointer, out, capacity, count)
}

@_cdecl("rawfx_video_chain_metrics_json")
public func rawfxVideoChainMetricsJSON(_ pointer: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?,
                                       _ capacity: Int, _ length: UnsafeMutablePointer<Int>?) -> rawfx_result {
    metricsJSON(SwappableVideoChain.self, "rawfx_video_chain_metrics_json", pointer, buffer, capacity, length)
}

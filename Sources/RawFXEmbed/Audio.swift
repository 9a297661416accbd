import CRawFXEmbed
import RawFX

// `rawfx_audio_chain *` is the engine's AudioChain itself.

func audioChain(_ pointer: OpaquePointer) -> AudioChain { object(pointer, as: AudioChain.self) }

@_cdecl("rawfx_audio_chain_create")
public func rawfxAudioChainCreate(_ registryPointer: OpaquePointer?, _ text: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_audio_chain_create"
    guard let out else { return invalid(function, "chain is NULL; expected the address of a rawfx_audio_chain *") }
    out.pointee = nil
    guard let registry = registry(registryPointer) else { return invalid(function, "registry is NULL") }
    guard let text = string(text) else { return invalid(function, "chain_text is NULL; expected a chain (\"\" copies)") }
    do {
        out.pointee = handle(try AudioChain(text, registry: registry.registry))
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_audio_chain_destroy")
public func rawfxAudioChainDestroy(_ chain: OpaquePointer?) {
    if let chain { release(chain, as: AudioChain.self) }
}

@_cdecl("rawfx_audio_chain_negotiate")
public func rawfxAudioChainNegotiate(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_audio_format>?,
                                     _ output: UnsafeMutablePointer<rawfx_audio_format>?) -> rawfx_result {
    let function = "rawfx_audio_chain_negotiate"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let c = input?.pointee else { return invalid(function, "input is NULL; expected a rawfx_audio_format") }
    if let failure = checkSize(c.struct_size, of: "rawfx_audio_format", expected: MemoryLayout<rawfx_audio_format>.size, function) {
        return failure
    }
    if let failure = checkAudioFormat(sampleRate: c.sample_rate, channels: c.channels, "input", function) { return failure }
    do {
        let negotiated = try audioChain(pointer).negotiate(AudioFormat(c))
        output?.pointee = negotiated.cValue
        return rawfxOK
    } catch {
        return fail(error)
    }
}


@_cdecl("rawfx_audio_chain_process")
public func rawfxAudioChainProcess(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_audio_frame>?,
                                   _ emit: rawfx_audio_emit?, _ user: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_audio_chain_process"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let emit else { return invalid(function, "emit is NULL; expected a rawfx_audio_emit") }
    if let failure = checkAudio(input, function) { return failure }
    guard input!.pointee.frame_count > 0 else { return rawfxOK }
    do {
        try audioChain(pointer).process(AudioBlock(input!.pointee)) { block in
            withUnsafePointer(to: block.raw) { emit(user, $0) }
        }
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_audio_chain_max_output")
public func rawfxAudioChainMaxOutput(_ pointer: OpaquePointer?, _ inputFrames: UInt32) -> UInt32 {
    pointer.map { UInt32(clamping: audioChain($0).maxOutputFrames(forInputFrames: Int(inputFrames))) } ?? 0
}

@_cdecl("rawfx_audio_chain_process_into")
public func rawfxAudioChainProcessInto(_ pointer: OpaquePointer?, _ input: UnsafePointer<rawfx_audio_frame>?,
                                       _ destination: UnsafeMutablePointer<Int16>?, _ capacity: UInt32,
                                       _ written: UnsafeMutablePointer<UInt32>?) -> rawfx_result {
    let function = "rawfx_audio_chain_process_into"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let written else { return invalid(function, "written is NULL; expected the address of a uint32_t") }
    written.pointee = 0
    if let failure = checkAudio(input, function) { return failure }
    guard input!.pointee.frame_count > 0 else { return rawfxOK }
    guard destination != nil || capacity == 0 else {
        return invalid(function, "destination is NULL with capacity \(capacity); expected room for the output samples")
    }
    let chain = audioChain(pointer)
    let block = AudioBlock(input!.pointee)
    do {
        try chain.prepare(for: block.format)
        let bound = chain.maxOutputFrames(forInputFrames: block.frameCount)
        guard Int(capacity) >= bound else {
            return fail(RAWFX_E_BUFFER_TOO_SMALL, "\(function): destination has room for \(capacity) frames; a chunk of \(block.frameCount) frames can produce up to \(bound) (rawfx_audio_chain_max_output); nothing was processed")
        }
        var count = 0
        try chain.process(block) { out in
            let channels = out.format.channels
            (destination! + count * channels).update(from: out.samples, count: out.frameCount * channels)
            count += out.frameCount
        }
        written.pointee = UInt32(count)
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_audio_chain_latency")
public func rawfxAudioChainLatency(_ pointer: OpaquePointer?) -> UInt32 {
    pointer.map { UInt32(clamping: audioChain($0).latency) } ?? 0
}

@_cdecl("rawfx_audio_chain_drain")
public func rawfxAudioChainDrain(_ pointer: OpaquePointer?, _ emit: rawfx_audio_emit?,
                                 _ user: UnsafeMutableRawPointer?) -> rawfx_result {
    let function = "rawfx_audio_chain_drain"
    guard let pointer else { return invalid(function, "chain is NULL") }
    guard let emit else { return invalid(function, "emit is NULL; expected a rawfx_audio_emit") }
    do {
        try audioChain(pointer).drain { block in withUnsafePointer(to: block.raw) { emit(user, $0) } }
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_audio_chain_set_parameter")
public func rawfxAudioChainSetParameter(_ pointer: OpaquePointer?, _ address: UnsafePointer<CChar>?,
                                        _ value: UnsafePointer<CChar>?) -> rawfx_result {
    setParameter(AudioChain.self, "rawfx_audio_chain_set_parameter", pointer, address, value)
}

@_cdecl("rawfx_audio_chain_set_bypass")
public func rawfxAudioChainSetBypass(_ pointer: OpaquePointer?, _ stage: UnsafePointer<CChar>?, _ bypassed: Int32) -> rawfx_result {
    setBypass(AudioChain.self, "rawfx_audio_chain_set_bypass", pointer, stage, bypassed)
}

@_cdecl("rawfx_audio_chain_metrics")
public func rawfxAudioChainMetrics(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<rawfx_stage_metrics>?,
                                   _ capacity: Int, _ count: UnsafeMutablePointer<Int>?) -> rawfx_result {
    metrics(AudioChain.self, "rawfx_audio_chain_metrics", pointer, out, capacity, count)
}

@_cdecl("rawfx_audio_chain_metrics_json")
public func rawfxAudioChainMetricsJSON(_ pointer: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?,
                                       _ capacity: Int, _ length: UnsafeMutablePointer<Int>?) -> rawfx_result {
    metricsJSON(AudioChain.self, "rawfx_audio_chain_metrics_json", pointer, buffer, capacity, length)
}

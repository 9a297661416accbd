#if canImport(Glibc)
import Glibc
#endif
import CRawFXEmbed
import RawFX
import RawFXCompose

// `rawfx_mixer *` is an AudioMixer; `rawfx_mixer_input *` a MixerInput, retained by the handle
// (it outlives its removal and the mixer itself). Since rawfx_embed.h 1.5: the program's sound.

private func mixer(_ pointer: OpaquePointer) -> AudioMixer { object(pointer, as: AudioMixer.self) }

@_cdecl("rawfx_mixer_create")
public func rawfxMixerCreate(_ registryPointer: OpaquePointer?, _ sampleRate: UInt32, _ primingBlocks: UInt32,
                             _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_mixer_create"
    guard let out else { return invalid(function, "mixer is NULL; expected the address of a rawfx_mixer *") }
    out.pointee = nil
    guard primingBlocks <= 100 else { return invalid(function, "priming_blocks is \(primingBlocks); expected 0 to 100") }
    do {
        out.pointee = handle(try AudioMixer(sampleRate: Int(sampleRate), primingBlocks: Int(primingBlocks),
                                            registry: registry(registryPointer)?.registry))
        return rawfxOK
    } catch {
        return invalid(function, error.description)
    }
}

@_cdecl("rawfx_mixer_destroy")
public func rawfxMixerDestroy(_ pointer: OpaquePointer?) {
    if let pointer { release(pointer, as: AudioMixer.self) }
}

@_cdecl("rawfx_mixer_add_input")
public func rawfxMixerAddInput(_ pointer: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ gainDecibels: Double,
                               _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_mixer_add_input"
    guard let out else { return invalid(function, "input is NULL; expected the address of a rawfx_mixer_input *") }
    out.pointee = nil
    guard let pointer else { return invalid(function, "mixer is NULL") }
    guard let name = string(id), !name.isEmpty else { return invalid(function, "id is NULL or empty; expected a name for the input") }
    guard gainDecibels.isFinite else { return invalid(function, "gain_db is not finite") }
    do {
        out.pointee = handle(try mixer(pointer).addInput(id: name, gainDecibels: gainDecibels))
        return rawfxOK
    } catch {
        return invalid(function, error.description)
    }
}

@_cdecl("rawfx_mixer_remove_input")
public func rawfxMixerRemoveInput(_ pointer: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_mixer_remove_input"
    guard let pointer else { return invalid(function, "mixer is NULL") }
    guard let name = string(id) else { return invalid(function, "id is NULL") }
    do {
        try mixer(pointer).removeInput(name)
        return rawfxOK
    } catch {
        return fail(RAWFX_E_NOT_FOUND, "\(function): \(error.description)")
    }
}

@_cdecl("rawfx_mixer_input_submit")
public func rawfxMixerInputSubmit(_ pointer: OpaquePointer?, _ block: UnsafePointer<rawfx_audio_frame>?) -> rawfx_result {
    let function = "rawfx_mixer_input_submit"
    guard let pointer else { return invalid(function, "input is NULL") }
    if let failure = checkAudio(block, function) { return failure }
    guard block!.pointee.frame_count > 0 else { return rawfxOK }
    do {
        try object(pointer, as: MixerInput.self).submit(AudioBlock(block!.pointee))
        return rawfxOK
    } catch {
        return fail(error)
    }
}

@_cdecl("rawfx_mixer_input_set_gain")
public func rawfxMixerInputSetGain(_ pointer: OpaquePointer?, _ gainDecibels: Double) -> rawfx_result {
    let function = "rawfx_mixer_input_set_gain"
    guard let pointer else { return invalid(function, "input is NULL") }
    guard gainDecibels.isFinite else { return invalid(function, "gain_db is not finite") }
    object(pointer, as: MixerInput.self).gainDecibels = gainDecibels
    return rawfxOK
}

@_cdecl("rawfx_mixer_input_release")
public func rawfxMixerInputRelease(_ pointer: OpaquePointer?) {
    if let pointer { release(pointer, as: MixerInput.self) }
}

@_cdecl("rawfx_mixer_mix")
public func rawfxMixerMix(_ pointer: OpaquePointer?, _ index: Int64, _ output: UnsafeMutablePointer<rawfx_audio_frame>?) -> rawfx_result {
    let function = "rawfx_mixer_mix"
    guard let pointer else { return invalid(function, "mixer is NULL") }
    guard let output else { return invalid(function, "output is NULL; expected a rawfx_audio_frame to receive the view") }
    guard index >= 0 else { return invalid(function, "block_index is \(index); expected 0 or more") }
    output.pointee = mixer(pointer).mix(blockIndex: index).raw
    return rawfxOK
}

@_cdecl("rawfx_mixer_blocks_for_frame")
public func rawfxMixerBlocksForFrame(_ frame: Int64, _ numerator: UInt32, _ denominator: UInt32,
                                     _ first: UnsafeMutablePointer<Int64>?, _ end: UnsafeMutablePointer<Int64>?) {
    let range = AudioMixer.blocks(forVideoFrame: max(0, frame),
                                  rate: FrameRate(numerator == 0 ? 30 : Int(numerator), denominator == 0 ? 1 : Int(denominator)))
    first?.pointee = range.lowerBound
    end?.pointee = range.upperBound
}

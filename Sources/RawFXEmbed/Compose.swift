#if canImport(Glibc)
import Glibc
#endif
import CRawFXEmbed
import RawFX
import RawFXCompose

// `rawfx_compositor *` is a Compositor; `rawfx_compositor_input *` a CompositorInput, retained
// by the handle (it outlives its removal and the compositor itself).

private func compositor(_ pointer: OpaquePointer) -> Compositor { object(pointer, as: Compositor.self) }

/// An sRGB 0xRRGGBB as a colour of `range`.
private func color(_ rgb: UInt32, _ range: ColorRange) -> YUVColor {
    YUVColor(red: UInt8(rgb >> 16 & 0xFF), green: UInt8(rgb >> 8 & 0xFF), blue: UInt8(rgb & 0xFF), range: range)
}

@_cdecl("rawfx_compositor_create")
public func rawfxCompositorCreate(_ config: UnsafePointer<rawfx_compositor_config>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_compositor_create"
    guard let out else { return invalid(function, "compositor is NULL; expected the address of a rawfx_compositor *") }
    out.pointee = nil
    guard let config else { return invalid(function, "config is NULL; expected a rawfx_compositor_config") }
    if let failure = checkSize(config.pointee.struct_size, of: "rawfx_compositor_config",
                               expected: MemoryLayout<rawfx_compositor_config>.size, function) { return failure }
    // Fields past the caller's struct_size read as zero (an older header).
    var c = rawfx_compositor_config()
    withUnsafeMutableBytes(of: &c) { target in
        target.copyMemory(from: UnsafeRawBufferPointer(start: config, count: Int(config.pointee.struct_size)))
    }
    guard let range = ColorRange(rawValue: c.color_range) else {
        return invalid(function, "config.color_range is \(c.color_range); expected RAWFX_RANGE_LIMITED or RAWFX_RANGE_FULL")
    }
    guard c.fit <= 1 else { return invalid(function, "config.fit is \(c.fit); expected RAWFX_FIT_CONTAIN (0) or RAWFX_FIT_COVER (1)") }
    var layout = CompositorLayout.grid
    if c.layout != nil {
        guard let text = string(c.layout) else { return invalid(function, "config.layout is not UTF-8") }
        do { layout = try CompositorLayout(parsing: text) } catch { return invalid(function, error.description) }
    }
    let rate = FrameRate(c.rate_numerator == 0 ? 30 : Int(c.rate_numerator), c.rate_denominator == 0 ? 1 : Int(c.rate_denominator))
    do {
        let made = try Compositor(.init(width: Int(c.width), height: Int(c.height), frameRate: rate, colorRange: range,
                                        layout: layout, fit: c.fit == 1 ? .cover : .contain,
                                        background: .color(color(c.background_rgb, range)),
                                        placeholder: .color(color(c.placeholder_rgb, range)),
                                        inputTimeoutMicroseconds: c.input_timeout_us == 0 ? 1_000_000 : c.input_timeout_us,
                                        border: Int(c.border)))
        out.pointee = handle(made)
        return rawfxOK
    } catch {
        return invalid(function, error.description)
    }
}

@_cdecl("rawfx_compositor_destroy")
public func rawfxCompositorDestroy(_ pointer: OpaquePointer?) {
    if let pointer { release(pointer, as: Compositor.self) }
}

@_cdecl("rawfx_compositor_add_input")
public func rawfxCompositorAddInput(_ pointer: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                    _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_compositor_add_input"
    guard let out else { return invalid(function, "input is NULL; expected the address of a rawfx_compositor_input *") }
    out.pointee = nil
    guard let pointer else { return invalid(function, "compositor is NULL") }
    guard let name = string(id), !name.isEmpty else { return invalid(function, "id is NULL or empty; expected a name for the input") }
    do {
        out.pointee = handle(try compositor(pointer).addInput(id: name))
        return rawfxOK
    } catch {
        return invalid(function, error.description)
    }
}

@_cdecl("rawfx_compositor_add_input_with_options")
public func rawfxCompositorAddInputWithOptions(_ pointer: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                               _ options: UnsafePointer<rawfx_compositor_input_options>?,
                                               _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_compositor_add_input_with_options"
    guard let out else { return invalid(function, "input is NULL; expected the address of a rawfx_compositor_input *") }
    out.pointee = nil
    guard let pointer else { return invalid(function, "compositor is NULL") }
    guard let name = string(id), !name.isEmpty else { return invalid(function, "id is NULL or empty; expected a name for the input") }
    var o = rawfx_compositor_input_options()
    if let options {
        if let failure = checkSize(options.pointee.struct_size, of: "rawfx_compositor_input_options",
                                   expected: MemoryLayout<rawfx_compositor_input_options>.size, function) { return failure }
        // Fields past the caller's struct_size read as zero (an older header).
        withUnsafeMutableBytes(of: &o) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: options, count: Int(options.pointee.struct_size)))
        }
    }
    let target = compositor(pointer)
    let overlay = o.overlay.map { object($0, as: SwappableVideoChain.self) }
    let card = o.placeholder_overlay.map { object($0, as: SwappableVideoChain.self) }
    let border = o.has_border != 0
        ? TileBorder(width: Int(o.border), color: color(o.border_rgb, target.configuration.colorRange)) : nil
    do {
        out.pointee = handle(try target.addInput(id: name, overlay: overlay, placeholderOverlay: card, border: border))
        return rawfxOK
    } catch {
        return invalid(function, error.description)
    }
}

@_cdecl("rawfx_compositor_set_overlay")
public func rawfxCompositorSetOverlay(_ pointer: OpaquePointer?, _ overlay: OpaquePointer?) -> rawfx_result {
    guard let pointer else { return invalid("rawfx_compositor_set_overlay", "compositor is NULL") }
    compositor(pointer).setOverlay(overlay.map { object($0, as: SwappableVideoChain.self) })
    return rawfxOK
}

@_cdecl("rawfx_compositor_remove_input")
public func rawfxCompositorRemoveInput(_ pointer: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_compositor_remove_input"
    guard let pointer else { return invalid(function, "compositor is NULL") }
    guard let name = string(id) else { return invalid(function, "id is NULL") }
    do {
        try compositor(pointer).removeInput(name)
        return rawfxOK
    } catch {
        return fail(RAWFX_E_NOT_FOUND, "\(function): \(error.description)")
    }
}

@_cdecl("rawfx_compositor_input_submit")
public func rawfxCompositorInputSubmit(_ pointer: OpaquePointer?, _ frame: UnsafePointer<rawfx_video_frame>?,
                                       _ time: Int64) -> rawfx_result {
    let function = "rawfx_compositor_input_submit"
    guard let pointer else { return invalid(function, "input is NULL") }
    if let failure = checkFrame(frame, "frame", function) { return failure }
    let input = object(pointer, as: CompositorInput.self)
    input.submit(copying: VideoFrame(frame!.pointee), at: time == Int64.min ? nil : time)
    return rawfxOK
}

@_cdecl("rawfx_compositor_input_set_active")
public func rawfxCompositorInputSetActive(_ pointer: OpaquePointer?, _ active: Int32) -> rawfx_result {
    guard let pointer else { return invalid("rawfx_compositor_input_set_active", "input is NULL") }
    object(pointer, as: CompositorInput.self).isActive = active != 0
    return rawfxOK
}

@_cdecl("rawfx_compositor_input_release")
public func rawfxCompositorInputRelease(_ pointer: OpaquePointer?) {
    if let pointer { release(pointer, as: CompositorInput.self) }
}

@_cdecl("rawfx_compositor_set_layout")
public func rawfxCompositorSetLayout(_ pointer: OpaquePointer?, _ text: UnsafePointer<CChar>?) -> rawfx_result {
    let function = "rawfx_compositor_set_layout"
    guard let pointer else { return invalid(function, "compositor is NULL") }
    guard let text = string(text) else { return invalid(function, "layout is NULL; expected grid, speaker, share, single or a JSON array") }
    do {
        try compositor(pointer).setLayout(CompositorLayout(parsing: text))
        return rawfxOK
    } catch let error as LayoutError {
        return invalid(function, error.description)
    } catch {
        return invalid(function, "\(error)")
    }
}

@_cdecl("rawfx_compositor_set_roles")
public func rawfxCompositorSetRoles(_ pointer: OpaquePointer?, _ speaker: UnsafePointer<CChar>?,
                                    _ share: UnsafePointer<CChar>?) -> rawfx_result {
    guard let pointer else { return invalid("rawfx_compositor_set_roles", "compositor is NULL") }
    compositor(pointer).setRoles(speaker: string(speaker), share: string(share))
    return rawfxOK
}

@_cdecl("rawfx_compositor_compose")
public func rawfxCompositorCompose(_ pointer: OpaquePointer?, _ index: Int64,
                                   _ output: UnsafeMutablePointer<rawfx_video_frame>?) -> rawfx_result {
    let function = "rawfx_compositor_compose"
    guard let pointer else { return invalid(function, "compositor is NULL") }
    guard let output else { return invalid(function, "output is NULL; expected a rawfx_video_frame to receive the view") }
    guard index >= 0 else { return invalid(function, "frame_index is \(index); expected 0 or more") }
    output.pointee = compositor(pointer).compose(frameIndex: index).raw
    return rawfxOK
}

@_cdecl("rawfx_compositor_scene_json")
public func rawfxCompositorSceneJSON(_ pointer: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?,
                                     _ capacity: Int, _ length: UnsafeMutablePointer<Int>?) -> rawfx_result {
    let function = "rawfx_compositor_scene_json"
    guard let pointer else { return invalid(function, "compositor is NULL") }
    return writeString(compositor(pointer).currentScene.json(), buffer, capacity: capacity, length: length, function)
}

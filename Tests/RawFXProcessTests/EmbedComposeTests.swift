import CRawFXEmbed
import Foundation
import RawFX
import RawFXAllocCounter
import RawFXCompose
import RawFXEmbed
import XCTest
@testable import RawFXTestSupport

/// The compositor through the C API (rawfx_compositor_*): what a C, C++ or Python host sees.
final class EmbedComposeTests: XCTestCase {
    func config(width: UInt32, height: UInt32, layout: String? = nil, body: (UnsafePointer<rawfx_compositor_config>) -> Void) {
        var c = rawfx_compositor_config()
        c.struct_size = UInt32(MemoryLayout<rawfx_compositor_config>.size)
        c.width = width
        c.height = height
        c.background_rgb = 0x000000
        if let layout {
            layout.withCString { text in
                c.layout = text
                body(&c)
            }
        } else {
            body(&c)
        }
    }

    func testTilesEqualTheScaleFilterAloneAndFramesWithWideStridesAreCopied() throws {
        var compositor: OpaquePointer?
        config(width: 640, height: 360, layout: "speaker:filmstrip=right:others=2") {
            XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        }
        defer { rawfx_compositor_destroy(compositor) }
        // Inputs with strides wider than their rows, as SDK frames have.
        let pictures = [patternBuffer(width: 320, height: 240, seed: 1), patternBuffer(width: 640, height: 360, seed: 2),
                        patternBuffer(width: 176, height: 144, seed: 3)]
        let ids = ["a", "b", "c"]
        var inputs: [OpaquePointer?] = []
        for (index, id) in ids.enumerated() {
            var input: OpaquePointer?
            XCTAssertEqual(rawfx_compositor_add_input(compositor, id, &input), rawfx_result(RAWFX_OK))
            inputs.append(input)
            let wide = VideoBuffer(format: pictures[index].format, extraStride: 96)
            pictures[index].frame.copy(to: wide.frame)
            var raw = wide.frame.raw
            XCTAssertEqual(rawfx_compositor_input_submit(input, &raw, 0), rawfx_result(RAWFX_OK))
        }
        defer { inputs.forEach { rawfx_compositor_input_release($0) } }
        XCTAssertEqual(rawfx_compositor_set_roles(compositor, "b", nil), rawfx_result(RAWFX_OK))
        var output = rawfx_video_frame()
        XCTAssertEqual(rawfx_compositor_compose(compositor, 3, &output), rawfx_result(RAWFX_OK))
        XCTAssertEqual(output.timestamp_us, 100_000)
        var length = 0
        var text = [CChar](repeating: 0, count: 4096)
        XCTAssertEqual(rawfx_compositor_scene_json(compositor, &text, text.count, &length), rawfx_result(RAWFX_OK))
        let scene = try JSONSerialization.jsonObject(with: Data(String(cString: text).utf8)) as! [String: Any]
        XCTAssertEqual(scene["layout"] as? String, "speaker")
        let tiles = scene["tiles"] as! [String: [String: Int]]
        XCTAssertEqual(Set(tiles.keys), ["a", "b", "c"])
        XCTAssertEqual(tiles["b"]?["x"], 0, "the speaker large, the others on the right")
        let registry = PluginRegistry()
        for (index, id) in ids.enumerated() {
            let r = tiles[id]!
            let alone = try VideoChain("scale=width=\(r["width"]!):height=\(r["height"]!):mode=fit", registry: registry)
                .process(pictures[index].frame)
            let tile = tileView(output, x: r["x"]!, y: r["y"]!, width: r["width"]!, height: r["height"]!)
            for p in 0..<3 { XCTAssertEqual(planeBytes(tile, p), planeBytes(alone, p), "\(id) plane \(p)") }
        }
        // Composing allocates nothing once warm.
        var counts = [UInt64](repeating: 0, count: 20)
        counts.withUnsafeMutableBufferPointer { counts in
            for index in 4..<20 {
                let before = rawfx_thread_allocation_count()
                _ = rawfx_compositor_compose(compositor, Int64(index), &output)
                counts[index] = rawfx_thread_allocation_count() - before
            }
        }
        if rawfx_allocation_counter_active() != 0 { XCTAssertEqual(counts, [UInt64](repeating: 0, count: 20), "allocations per compose") }
        // Off: the placeholder (black here) at once.
        XCTAssertEqual(rawfx_compositor_input_set_active(inputs[1], 0), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_compositor_compose(compositor, 20, &output), rawfx_result(RAWFX_OK))
        XCTAssertEqual(output.planes.0![100 * Int(output.strides.0) + 100], 16)
    }

    /// Overlays and a tile's own border through the C API: the same bytes as the Swift
    /// compositor given the same chains and border; the compositor keeps a chain whose handle
    /// was destroyed, and a parameter set on a handle reaches the overlay.
    func testOverlaysAndBordersGiveTheSwiftCompositorsBytes() throws {
        var registry: OpaquePointer?
        XCTAssertEqual(rawfx_registry_open(nil, &registry), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        defer { rawfx_registry_close(registry) }
        var compositor: OpaquePointer?
        config(width: 640, height: 360) {
            XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_OK), String(cString: rawfx_last_error()))
        }
        defer { rawfx_compositor_destroy(compositor) }
        var tileChain: OpaquePointer?, programChain: OpaquePointer?
        XCTAssertEqual(rawfx_video_chain_create(registry, "rotate=angle=180", &tileChain), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_video_chain_create(registry, "rotate=angle=180", &programChain), rawfx_result(RAWFX_OK))
        defer { rawfx_video_chain_destroy(programChain) }
        var options = rawfx_compositor_input_options()
        options.struct_size = UInt32(MemoryLayout<rawfx_compositor_input_options>.size)
        options.overlay = tileChain
        var a: OpaquePointer?, b: OpaquePointer?
        XCTAssertEqual(rawfx_compositor_add_input_with_options(compositor, "a", &options, &a), rawfx_result(RAWFX_OK))
        rawfx_video_chain_destroy(tileChain)  // the compositor keeps the chain
        options.overlay = nil
        options.has_border = 1
        options.border = 6
        options.border_rgb = 0x20C040
        XCTAssertEqual(rawfx_compositor_add_input_with_options(compositor, "b", &options, &b), rawfx_result(RAWFX_OK))
        defer { rawfx_compositor_input_release(a); rawfx_compositor_input_release(b) }
        options.border = 7
        var c: OpaquePointer?
        XCTAssertEqual(rawfx_compositor_add_input_with_options(compositor, "c", &options, &c), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("border of 7 pixels: expected an even width"), String(cString: rawfx_last_error()))
        XCTAssertEqual(rawfx_compositor_set_overlay(compositor, programChain), rawfx_result(RAWFX_OK))
        let pictures = [patternBuffer(width: 320, height: 180, seed: 4), patternBuffer(width: 320, height: 240, seed: 5)]
        for (input, picture) in zip([a, b], pictures) {
            var raw = picture.frame.raw
            XCTAssertEqual(rawfx_compositor_input_submit(input, &raw, 0), rawfx_result(RAWFX_OK))
        }
        var output = rawfx_video_frame()
        XCTAssertEqual(rawfx_compositor_compose(compositor, 0, &output), rawfx_result(RAWFX_OK))

        let registryObject = PluginRegistry()
        let reference = try Compositor(.init(width: 640, height: 360, background: .color(.black()),
                                             placeholder: .color(.black())))
        try reference.addInput(id: "a", overlay: VideoChain("rotate=angle=180", registry: registryObject)).submit(pictures[0].frame, at: 0)
        try reference.addInput(id: "b", border: TileBorder(width: 6, color: YUVColor(red: 0x20, green: 0xC0, blue: 0x40)))
            .submit(pictures[1].frame, at: 0)
        reference.setOverlay(try VideoChain("rotate=angle=180", registry: registryObject))
        let expected = reference.compose(frameIndex: 0)
        for p in 0..<3 { XCTAssertEqual(planeBytes(VideoFrame(output), p), planeBytes(expected, p), "plane \(p)") }
        // The program overlay's angle, set through the handle: the tiles upright again.
        XCTAssertEqual(rawfx_video_chain_set_parameter(programChain, "rotate.angle", "0"), rawfx_result(RAWFX_OK))
        XCTAssertEqual(rawfx_compositor_compose(compositor, 1, &output), rawfx_result(RAWFX_OK))
        reference.setOverlay(nil)
        let upright = reference.compose(frameIndex: 1)
        XCTAssertEqual(planeBytes(VideoFrame(output), 0), planeBytes(upright, 0))
    }

    func testBadArgumentsNameWhatIsWrong() {
        var compositor: OpaquePointer?
        func error() -> String { String(cString: rawfx_last_error()) }
        config(width: 641, height: 360) { XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_E_INVALID_ARGUMENT)) }
        XCTAssert(error().contains("output size 641x360"), error())
        XCTAssertNil(compositor)
        config(width: 640, height: 360, layout: "mosaic") { XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_E_INVALID_ARGUMENT)) }
        XCTAssert(error().contains("layout 'mosaic'"), error())
        config(width: 640, height: 360, layout: "[{\"id\": \"a\", \"x\": 1, \"y\": 0, \"width\": 4, \"height\": 4}]") {
            XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        }
        XCTAssert(error().contains("must be even"), error())
        config(width: 640, height: 360) { XCTAssertEqual(rawfx_compositor_create($0, &compositor), rawfx_result(RAWFX_OK)) }
        defer { rawfx_compositor_destroy(compositor) }
        var input: OpaquePointer?
        XCTAssertEqual(rawfx_compositor_add_input(compositor, "a", &input), rawfx_result(RAWFX_OK))
        defer { rawfx_compositor_input_release(input) }
        var again: OpaquePointer?
        XCTAssertEqual(rawfx_compositor_add_input(compositor, "a", &again), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssert(error().contains("'a' already exists"), error())
        XCTAssertEqual(rawfx_compositor_remove_input(compositor, "zz"), rawfx_result(RAWFX_E_NOT_FOUND))
        XCTAssertEqual(rawfx_compositor_set_layout(compositor, "speaker:side=left"), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssert(error().contains("takes filmstrip, others, not 'side'"), error())
        var frame = rawfx_video_frame()
        XCTAssertEqual(rawfx_compositor_input_submit(input, &frame, 0), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertEqual(rawfx_compositor_compose(compositor, -1, &frame), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertEqual(rawfx_compositor_compose(nil, 0, &frame), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
    }

    /// The program's sound through the C API (1.5, rawfx_mixer_*): inputs gained and summed,
    /// the blocks of a video frame, no allocation per mix, errors named.
    func testTheMixerSumsGainedInputsInBlocksOfTheVideoClock() throws {
        let ok = rawfx_result(RAWFX_OK)
        var mixer: OpaquePointer?
        XCTAssertEqual(rawfx_mixer_create(nil, 48000, 0, &mixer), ok)
        var a: OpaquePointer?, b: OpaquePointer?
        XCTAssertEqual(rawfx_mixer_add_input(mixer, "a", 0, &a), ok)
        XCTAssertEqual(rawfx_mixer_add_input(mixer, "b", -6.0206, &b), ok)
        var duplicate: OpaquePointer?
        XCTAssertEqual(rawfx_mixer_add_input(mixer, "a", 0, &duplicate), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertNil(duplicate)
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("already exists"), String(cString: rawfx_last_error()))
        var samples = [Int16](repeating: 1000, count: 480 * 40)
        var counts: [UInt64] = []
        samples.withUnsafeMutableBufferPointer { buffer in
            var block = rawfx_audio_frame()
            block.struct_size = UInt32(MemoryLayout<rawfx_audio_frame>.size)
            block.samples = buffer.baseAddress
            block.frame_count = UInt32(buffer.count)
            block.sample_rate = 48000
            block.channels = 1
            XCTAssertEqual(rawfx_mixer_input_submit(a, &block), ok)
            XCTAssertEqual(rawfx_mixer_input_submit(b, &block), ok)
            var out = rawfx_audio_frame()
            out.struct_size = UInt32(MemoryLayout<rawfx_audio_frame>.size)
            for index in 0..<30 {
                let before = rawfx_thread_allocation_count()
                _ = rawfx_mixer_mix(mixer, Int64(index), &out)
                counts.append(rawfx_thread_allocation_count() - before)
            }
            XCTAssertEqual(out.frame_count, 480)
            XCTAssertEqual(out.sample_rate, 48000)
            XCTAssertEqual(out.timestamp_us, 290_000)
            XCTAssertEqual(Array(UnsafeBufferPointer(start: out.samples, count: 4)), [1500, 1500, 1500, 1500], "1000 + 1000 at -6 dB")
            XCTAssertEqual(rawfx_mixer_input_set_gain(b, -200), ok)
            _ = rawfx_mixer_mix(mixer, 30, &out)
            XCTAssertEqual(out.samples[0], 1000)
        }
        if rawfx_allocation_counter_active() != 0 { XCTAssertEqual(counts.dropFirst(), ArraySlice(repeating: 0, count: 29), "allocations per mix") }
        var first: Int64 = -1, end: Int64 = -1
        rawfx_mixer_blocks_for_frame(0, 30, 1, &first, &end)
        XCTAssertEqual([first, end], [0, 4])
        rawfx_mixer_blocks_for_frame(1, 30, 1, &first, &end)
        XCTAssertEqual([first, end], [4, 7])
        XCTAssertEqual(rawfx_mixer_remove_input(mixer, "b"), ok)
        XCTAssertEqual(rawfx_mixer_remove_input(mixer, "b"), rawfx_result(RAWFX_E_NOT_FOUND))
        var bad: OpaquePointer?
        XCTAssertEqual(rawfx_mixer_create(nil, 44150, 0, &bad), rawfx_result(RAWFX_E_INVALID_ARGUMENT))
        XCTAssertTrue(String(cString: rawfx_last_error()).contains("44150"), String(cString: rawfx_last_error()))
        XCTAssertNil(bad)
        rawfx_mixer_input_release(a)
        rawfx_mixer_input_release(b)
        rawfx_mixer_destroy(mixer)
    }
}

import Foundation
import RawFX
import RawFXAllocCounter
import RawFXRuntime
import Synchronization
import XCTest

@testable import RawFXCompose

/// A picture whose every sample depends on its position and a seed, so that a tile drawn
/// from the wrong place, plane or row differs somewhere.
func noisePicture(width: Int, height: Int, seed: Int, range: ColorRange = .limited) -> VideoBuffer {
    let buffer = VideoBuffer(format: VideoFormat(width: width, height: height, colorRange: range))
    let frame = buffer.frame
    for p in 0..<3 {
        let (w, h) = frame.planeSize(p)
        for row in 0..<h {
            let line = frame.plane(p) + row * frame.stride(p)
            for column in 0..<w {
                // Smooth gradients plus a hash: scaling kernels see real structure.
                let hash = (column &* 73_856_093) ^ (row &* 19_349_663) ^ (seed &* 83_492_791) ^ (p &* 2_654_435)
                line[column] = UInt8(truncatingIfNeeded: (column * 3 + row * 2 + seed * 40 + p * 60) / 2 + (hash >> 7) & 31)
            }
        }
    }
    return buffer
}

/// Plane `p` of `frame` inside `rect` (luma coordinates, even), row by row.
func samples(_ frame: VideoFrame, plane p: Int, in rect: TileRect) -> [UInt8] {
    let shift = p > 0 ? 1 : 0
    var out: [UInt8] = []
    for row in (rect.y >> shift)..<(rect.maxY >> shift) {
        let line = frame.plane(p) + row * frame.stride(p)
        out.append(contentsOf: UnsafeBufferPointer(start: line + (rect.x >> shift), count: rect.width >> shift))
    }
    return out
}

/// The whole of plane `p` of a frame.
func samples(_ frame: VideoFrame, plane p: Int) -> [UInt8] {
    samples(frame, plane: p, in: TileRect(x: 0, y: 0, width: frame.width & ~1, height: frame.height & ~1))
}

final class LayoutTests: XCTestCase {
    func rectsAreEvenInsideAndDisjoint(_ placements: [TilePlacement], width: Int, height: Int,
                                       file: StaticString = #filePath, line: UInt = #line) {
        for p in placements {
            let r = p.rect
            XCTAssertEqual((r.x | r.y | r.width | r.height) & 1, 0, "\(p.id) \(r) is not even", file: file, line: line)
            XCTAssert(r.x >= 0 && r.y >= 0 && r.maxX <= width && r.maxY <= height && r.width >= 2 && r.height >= 2,
                      "\(p.id) \(r) is outside \(width)x\(height)", file: file, line: line)
        }
        for (i, a) in placements.enumerated() {
            for b in placements[(i + 1)...] where a.z == b.z {
                XCTAssertFalse(a.rect.intersects(b.rect), "\(a.id) \(a.rect) overlaps \(b.id) \(b.rect)", file: file, line: line)
            }
        }
    }

    func testGridChoosesRowsAndColumnsForTheAspectRatioAndCentresTheLastRow() {
        let ids = (0..<49).map { "u\($0)" }
        // Expected columns: the largest 16:9 picture per cell, in whole pixels, with choices
        // within 3 % of the best equal and the most columns among them.
        for count in 1...49 {
            let placements = CompositorLayout.grid.placements(width: 1920, height: 1080, roles: LayoutRoles(order: Array(ids.prefix(count))))
            XCTAssertEqual(placements.map(\.id), Array(ids.prefix(count)), "order for \(count)")
            rectsAreEvenInsideAndDisjoint(placements, width: 1920, height: 1080)
            let areas = (1...count).map { columns -> Int in
                let rows = (count + columns - 1) / columns
                let w = min(1920 / columns, (1080 / rows) * 16 / 9)
                return w * (w * 9 / 16)
            }
            let bestColumns = (1...count).last { Double(areas[$0 - 1]) >= Double(areas.max()!) * 0.97 }!
            let firstRowCount = placements.filter { $0.rect.y == 0 }.count
            XCTAssertEqual(firstRowCount, bestColumns, "columns for \(count) tiles")
            // The last row is centred: equal space left and right (to the even pixel).
            let lastY = placements.map(\.rect.y).max()!
            let last = placements.filter { $0.rect.y == lastY }
            let left = last.map(\.rect.x).min()!, right = 1920 - last.map(\.rect.maxX).max()!
            XCTAssertLessThanOrEqual(abs(left - right), 2, "last row of \(count) is centred: \(left) vs \(right)")
        }
        let nine = CompositorLayout.grid.placements(width: 1920, height: 1080, roles: LayoutRoles(order: Array(ids.prefix(9))))
        XCTAssertEqual(nine.map(\.rect), (0..<9).map { TileRect(x: $0 % 3 * 640, y: $0 / 3 * 360, width: 640, height: 360) })
    }

    func testSpeakerShareSingleAndCustomPlaceTheirRoles() throws {
        let roles = LayoutRoles(order: ["a", "b", "c", "d", "e", "f"], speaker: "c", share: "s")
        let speaker = CompositorLayout.speaker(filmstrip: .bottom, others: 4).placements(width: 1280, height: 720, roles: roles)
        XCTAssertEqual(speaker.first?.id, "c")
        XCTAssertEqual(speaker.first?.rect, TileRect(x: 0, y: 0, width: 1280, height: 576))
        XCTAssertEqual(speaker.dropFirst().map(\.id), ["a", "b", "d", "e"])
        XCTAssert(speaker.dropFirst().allSatisfy { $0.rect.y == 576 && $0.rect.height == 144 && $0.rect.width == 256 })
        rectsAreEvenInsideAndDisjoint(speaker, width: 1280, height: 720)
        for position in FilmstripPosition.allCases {
            let placed = CompositorLayout.speaker(filmstrip: position, others: 5).placements(width: 1280, height: 720, roles: roles)
            rectsAreEvenInsideAndDisjoint(placed, width: 1280, height: 720)
            XCTAssertEqual(placed.count, 6)
        }

        let withShare = LayoutRoles(order: ["a", "s", "b"], speaker: "b", share: "s")
        let beside = CompositorLayout.share(speaker: .beside).placements(width: 1280, height: 720, roles: withShare)
        XCTAssertEqual(beside.map(\.id), ["s", "b"])
        XCTAssertEqual(beside[0].rect, TileRect(x: 0, y: 0, width: 960, height: 720))
        XCTAssertEqual(beside[1].rect, TileRect(x: 960, y: 270, width: 320, height: 180))
        let inset = CompositorLayout.share(speaker: .inset).placements(width: 1280, height: 720, roles: withShare)
        XCTAssertEqual(inset[0].rect, TileRect(x: 0, y: 0, width: 1280, height: 720))
        XCTAssertEqual(inset[1].z, 1)
        XCTAssert(inset[0].rect.intersects(inset[1].rect))
        XCTAssertEqual(LayoutGeometry.passes(for: inset), [0, 1])
        XCTAssertEqual(CompositorLayout.share(speaker: .hidden).placements(width: 1280, height: 720, roles: withShare).map(\.id), ["s"])
        XCTAssertEqual(CompositorLayout.single.placements(width: 1280, height: 720, roles: withShare).map(\.id), ["b"])

        let custom = CompositorLayout.custom([CustomTile(id: "b", rect: TileRect(x: 100, y: 100, width: 200, height: 100), z: 2),
                                              CustomTile(id: "a", rect: TileRect(x: 0, y: 0, width: 640, height: 360), z: 0),
                                              CustomTile(id: "zz", rect: TileRect(x: 0, y: 0, width: 2, height: 2))])
        XCTAssertEqual(custom.placements(width: 1280, height: 720, roles: withShare).map(\.id), ["a", "b"])
        XCTAssertThrowsError(try CompositorLayout.custom([CustomTile(id: "a", rect: TileRect(x: 1, y: 0, width: 4, height: 4))])
            .validate(width: 64, height: 64)) { XCTAssert("\($0)".contains("even")) }
        XCTAssertThrowsError(try CompositorLayout.custom([CustomTile(id: "a", rect: TileRect(x: 62, y: 0, width: 4, height: 4))])
            .validate(width: 64, height: 64)) { XCTAssert("\($0)".contains("outside the 64x64")) }
    }

    func testUncoveredPiecesAreExactlyTheOutputMinusTheTiles() {
        let rects = [TileRect(x: 10, y: 10, width: 20, height: 20), TileRect(x: 20, y: 20, width: 30, height: 10),
                     TileRect(x: 0, y: 40, width: 64, height: 8)]
        let area = TileRect(x: 0, y: 0, width: 64, height: 64)
        let pieces = LayoutGeometry.uncovered(by: rects, in: area)
        for y in 0..<64 {
            for x in 0..<64 {
                let inTile = rects.contains { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY }
                let covering = pieces.filter { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY }.count
                XCTAssertEqual(covering, inTile ? 0 : 1, "pixel \(x),\(y)")
            }
        }
    }
}

final class CompositorTests: XCTestCase {
    override func tearDown() { rfx_runtime_set_thread_count(1) }

    /// The `scale` filter of the YUV plugin, alone: the reference a tile must equal.
    func scaledAlone(_ picture: VideoBuffer, width: Int, height: Int, mode: String, filter: String = "bilinear") throws -> VideoFrame {
        let chain = try VideoChain("scale=width=\(width):height=\(height):mode=\(mode):filter=\(filter)", registry: PluginRegistry())
        return try chain.process(picture.frame)
    }

    func checkEveryTileEqualsItsInputScaledAlone(fit: TileFit, threads: UInt32) throws {
        rfx_runtime_set_thread_count(threads)
        let sizes = [(640, 360), (320, 240), (641, 479), (1280, 720), (176, 144), (96, 540), (1920, 1080)]
        let background = YUVColor.black(.limited)
        let compositor = try Compositor(.init(width: 1280, height: 720, fit: fit, background: .color(background)))
        var pictures: [String: VideoBuffer] = [:]
        for (index, size) in sizes.enumerated() {
            let picture = noisePicture(width: size.0, height: size.1, seed: index)
            pictures["in\(index)"] = picture
            XCTAssert(try compositor.addInput(id: "in\(index)").submit(picture.frame, at: 0))
        }
        let output = compositor.compose(frameIndex: 0)
        let placements = compositor.currentScene.placements
        XCTAssertEqual(placements.count, sizes.count)
        for placement in placements {
            let r = placement.rect
            let expected = try scaledAlone(pictures[placement.id]!, width: r.width, height: r.height,
                                           mode: fit == .contain ? "fit" : "fill")
            for p in 0..<3 {
                XCTAssertEqual(samples(output, plane: p, in: r), samples(expected, plane: p),
                               "\(placement.id) at \(r), plane \(p), \(threads) threads")
            }
        }
        // Outside the tiles: the background, exactly.
        let uncovered = LayoutGeometry.uncovered(by: placements.map(\.rect), in: TileRect(x: 0, y: 0, width: 1280, height: 720))
        XCTAssertFalse(uncovered.isEmpty)
        for piece in uncovered {
            XCTAssert(samples(output, plane: 0, in: piece).allSatisfy { $0 == background.y })
            XCTAssert(samples(output, plane: 1, in: piece).allSatisfy { $0 == background.u })
            XCTAssert(samples(output, plane: 2, in: piece).allSatisfy { $0 == background.v })
        }
    }

    func testEveryTileEqualsItsInputScaledAloneContain() throws {
        try checkEveryTileEqualsItsInputScaledAlone(fit: .contain, threads: 1)
    }

    func testEveryTileEqualsItsInputScaledAloneCoverOnTwoThreads() throws {
        try checkEveryTileEqualsItsInputScaledAlone(fit: .cover, threads: 2)
        try checkEveryTileEqualsItsInputScaledAlone(fit: .contain, threads: 3)
    }

    /// An input's own chain runs once per input frame, before the scale: the tile is the
    /// chain's output scaled alone, and drawing the same frame again does not run it again.
    func testAnInputsChainRunsOncePerFrameBeforeItsTile() throws {
        let registry = PluginRegistry()
        let compositor = try Compositor(.init(width: 320, height: 320, layout: .single, background: .color(.black())))
        let chain = try VideoChain("rotate=angle=90", registry: registry)
        let input = try compositor.addInput(id: "a", chain: chain)
        let picture = noisePicture(width: 320, height: 180, seed: 9)
        input.submit(picture.frame, at: 0)
        for index: Int64 in 0..<3 { _ = compositor.compose(frameIndex: index) }
        let output = compositor.compose(frameIndex: 3)
        let rotated = try VideoChain("rotate=angle=90", registry: registry).process(picture.frame)
        let copy = VideoBuffer(format: rotated.format)
        rotated.copy(to: copy.frame)
        let expected = try scaledAlone(copy, width: 320, height: 320, mode: "fit")
        for p in 0..<3 { XCTAssertEqual(samples(output, plane: p), samples(expected, plane: p), "plane \(p)") }
        XCTAssertEqual(chain.control.metrics.first?.frames, 1, "one input frame, one run of its chain")
    }

    func testTheBackgroundShowsOnlyOutsideTheTilesAndNothingElseChanges() throws {
        let background = YUVColor(red: 0, green: 90, blue: 200)
        let compositor = try Compositor(.init(width: 640, height: 360, fit: .cover, background: .color(background)))
        // Three inputs in a 2×2 grid: the last row's tile centred, the background beside it.
        let ids = ["a", "b", "c"]
        for (index, id) in ids.enumerated() {
            try compositor.addInput(id: id).submit(noisePicture(width: 320, height: 180, seed: index).frame, at: 0)
        }
        let output = compositor.compose(frameIndex: 0)
        let placements = compositor.currentScene.placements
        XCTAssertEqual(placements.map(\.rect), [TileRect(x: 0, y: 0, width: 320, height: 180),
                                                TileRect(x: 320, y: 0, width: 320, height: 180),
                                                TileRect(x: 160, y: 180, width: 320, height: 180)])
        for y in stride(from: 0, to: 360, by: 2) {
            for x in stride(from: 0, to: 640, by: 2) {
                guard !placements.contains(where: { x >= $0.rect.x && x < $0.rect.maxX && y >= $0.rect.y && y < $0.rect.maxY }) else { continue }
                XCTAssertEqual(output.plane(0)[y * output.stride(0) + x], background.y)
                XCTAssertEqual(output.plane(1)[y / 2 * output.stride(1) + x / 2], background.u)
            }
        }
    }

    func testAStalledInputShowsItsPlaceholderAfterTheTimeoutAndComesBack() throws {
        let grey = YUVColor(y: 77, u: 99, v: 111)
        let compositor = try Compositor(.init(width: 320, height: 180, frameRate: FrameRate(10), layout: .single,
                                              placeholder: .color(grey), inputTimeoutMicroseconds: 250_000))
        let input = try compositor.addInput(id: "a")
        let picture = noisePicture(width: 320, height: 180, seed: 3)
        let full = TileRect(x: 0, y: 0, width: 320, height: 180)
        // Before any frame: the placeholder.
        var output = compositor.compose(frameIndex: 0)
        XCTAssert(samples(output, plane: 0, in: full).allSatisfy { $0 == grey.y })
        input.submit(picture.frame, at: 100_000)
        // Frames 1–3 (100–300 ms) are within 250 ms of the frame: shown.
        for index: Int64 in 1...3 {
            output = compositor.compose(frameIndex: index)
            XCTAssertEqual(samples(output, plane: 0, in: full), samples(picture.frame, plane: 0), "frame \(index)")
        }
        // Frame 4 (400 ms) is 300 ms after it: the placeholder.
        output = compositor.compose(frameIndex: 4)
        XCTAssert(samples(output, plane: 0, in: full).allSatisfy { $0 == grey.y })
        XCTAssert(samples(output, plane: 2, in: full).allSatisfy { $0 == grey.v })
        // It resumes: shown again on the next frame.
        input.submit(picture.frame, at: 450_000)
        output = compositor.compose(frameIndex: 5)
        XCTAssertEqual(samples(output, plane: 1, in: full), samples(picture.frame, plane: 1))
        // Marked off: the placeholder at once, although the frame is fresh.
        input.isActive = false
        output = compositor.compose(frameIndex: 5)
        XCTAssert(samples(output, plane: 0, in: full).allSatisfy { $0 == grey.y })
        // A last-frame placeholder keeps the picture frozen.
        let frozen = try Compositor(.init(width: 320, height: 180, frameRate: FrameRate(10), layout: .single,
                                          placeholder: .lastFrame(otherwise: grey), inputTimeoutMicroseconds: 250_000))
        try frozen.addInput(id: "a").submit(picture.frame, at: 0)
        output = frozen.compose(frameIndex: 50)
        XCTAssertEqual(samples(output, plane: 0, in: full), samples(picture.frame, plane: 0))
        XCTAssertEqual(frozen.placeholderTilesShown, 1)
    }

    func testALayoutSwitchLandsOnTheNextOutputFrame() throws {
        let compositor = try Compositor(.init(width: 640, height: 360, layout: .grid))
        let a = noisePicture(width: 640, height: 360, seed: 1), b = noisePicture(width: 640, height: 360, seed: 2)
        try compositor.addInput(id: "a").submit(a.frame, at: 0)
        try compositor.addInput(id: "b").submit(b.frame, at: 0)
        XCTAssertEqual(compositor.compose(frameIndex: 0).timestampMicroseconds, 0)
        XCTAssertEqual(compositor.currentScene.layout, .grid)
        try compositor.setLayout(.single)
        compositor.setRoles(speaker: "b", share: nil)
        let output = compositor.compose(frameIndex: 1)
        XCTAssertEqual(output.timestampMicroseconds, 33_333)
        XCTAssertEqual(compositor.currentScene.layout, .single)
        XCTAssertEqual(samples(output, plane: 0), samples(b.frame, plane: 0))
    }

    func testInputsAddedAndRemovedWhileComposingAllocateNothingOnTheComposeThread() throws {
        let compositor = try Compositor(.init(width: 640, height: 360, frameRate: FrameRate(100)))
        let pictures = (0..<4).map { noisePicture(width: 160, height: 90, seed: $0) }
        let stop = Atomic<Bool>(false)
        let churn = Thread {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                for index in 0..<Compositor.maximumInputs {
                    if let input = try? compositor.addInput(id: "u\(index)") {
                        input.submit(pictures[index % 4].frame, at: input.now)
                    }
                }
                XCTAssertNil(try? compositor.addInput(id: "one too many"))
                for index in stride(from: 0, to: Compositor.maximumInputs, by: 2) { try? compositor.removeInput("u\(index)") }
                for index in stride(from: 1, to: Compositor.maximumInputs, by: 2) { try? compositor.removeInput("u\(index)") }
                round += 1
            }
        }
        churn.start()
        defer { stop.store(true, ordering: .relaxed) }
        // Warm up, then count: frames drawn whatever the control side does.
        for index: Int64 in 0..<20 { _ = compositor.compose(frameIndex: index) }
        let counting = rawfx_allocation_counter_active() != 0
        // Timestamps go into storage made beforehand: an assertion per frame would allocate.
        var timestamps = [Int64](repeating: -1, count: 400)
        let before = rawfx_thread_allocation_count()
        timestamps.withUnsafeMutableBufferPointer { stamps in
            for index in 20..<400 { stamps[index] = compositor.compose(frameIndex: Int64(index)).timestampMicroseconds }
        }
        let allocations = rawfx_thread_allocation_count() - before
        XCTAssertEqual(Array(timestamps[20...]), (20..<400).map { Int64($0) * 10_000 })
        stop.store(true, ordering: .relaxed)
        XCTAssertEqual(compositor.framesComposed, 400)
        if counting { XCTAssertEqual(allocations, 0, "allocations on the compose thread over 380 frames") }
    }
}

final class AudioMixerTests: XCTestCase {
    /// A mono block over `samples` at `rate`.
    func withBlock<T>(_ samples: [Int16], rate: Int = 48000, channels: Int = 1, _ body: (AudioBlock) throws -> T) rethrows -> T {
        var copy = samples
        return try copy.withUnsafeMutableBufferPointer { buffer in
            try body(AudioBlock(samples: buffer.baseAddress!, frameCount: samples.count / channels,
                                format: AudioFormat(sampleRate: rate, channels: channels)))
        }
    }

    func testTheMixIsTheGainedSumSaturatedToInt16() throws {
        let mixer = try AudioMixer(sampleRate: 48000, primingBlocks: 0)
        let a = try mixer.addInput(id: "a"), b = try mixer.addInput(id: "b", gainDecibels: 20 * log10(0.5)), c = try mixer.addInput(id: "c")
        c.isMuted = true
        // Two blocks of loud, different signals: sums pass 32767 and -32768.
        let n = 960
        let sa = (0..<n).map { Int16(clamping: Int(20000 * sin(Double($0) * 0.05))) }
        let sb = (0..<n).map { Int16(clamping: Int(30000 * sin(Double($0) * 0.031 + 1))) }
        let sc = [Int16](repeating: 12345, count: n)
        try withBlock(sa) { try a.submit($0) }
        try withBlock(sb) { try b.submit($0) }
        try withBlock(sc) { try c.submit($0) }
        var mixed: [Int16] = []
        for index: Int64 in 0..<2 {
            let block = mixer.mix(blockIndex: index)
            XCTAssertEqual(block.timestampMicroseconds, index * 10_000)
            XCTAssertEqual(block.frameCount, 480)
            mixed += Array(block.buffer)
        }
        let expected = (0..<n).map { i -> Int16 in
            let sum = Double(sa[i]) + Double(sb[i]) * 0.5
            return Int16(max(-32768, min(32767, sum.rounded(.toNearestOrEven))))
        }
        XCTAssertEqual(mixed, expected)
        XCTAssert(expected.contains(32767) && expected.contains(-32768), "the reference saturates both ways")
        // Nothing left: the next block is silence and counts as a short block for a and b.
        XCTAssert(mixer.mix(blockIndex: 2).buffer.allSatisfy { $0 == 0 })
        XCTAssertEqual(a.underruns, 1)
    }

    func testAnInputAtAnotherRateIsTheResampleFilterOutputAlone() throws {
        let registry = PluginRegistry()
        let mixer = try AudioMixer(sampleRate: 48000, primingBlocks: 0, registry: registry)
        let input = try mixer.addInput(id: "remote")
        let reference = try AudioChain("resample=rate=48000:channels=mono", registry: registry)
        var expected: [Int16] = []
        // Stereo 16 kHz in 10 ms blocks, as a one-way stream could come.
        for block in 0..<20 {
            let samples = (0..<320).map { Int16(clamping: Int(8000 * sin(Double(block * 160 + $0 / 2) * 0.07)) + ($0 % 2) * 100) }
            try withBlock(samples, rate: 16000, channels: 2) { b in
                try input.submit(b)
                try reference.process(b) { expected += Array($0.buffer) }
            }
        }
        var mixed: [Int16] = []
        for index in 0..<Int64(expected.count / 480) { mixed += Array(mixer.mix(blockIndex: index).buffer) }
        XCTAssertGreaterThan(mixed.count, 4000)
        XCTAssertEqual(mixed, Array(expected.prefix(mixed.count)))
    }

    func testALiveInputWaitsForItsPrimingBlocksAndPrimesAgainAfterRunningDry() throws {
        let mixer = try AudioMixer(sampleRate: 16000, primingBlocks: 2)
        let input = try mixer.addInput(id: "a")
        let ones = [Int16](repeating: 1000, count: 160)
        try withBlock(ones, rate: 16000) { try input.submit($0) }
        XCTAssert(mixer.mix(blockIndex: 0).buffer.allSatisfy { $0 == 0 }, "one block buffered: still priming")
        try withBlock(ones, rate: 16000) { try input.submit($0) }
        XCTAssert(mixer.mix(blockIndex: 1).buffer.allSatisfy { $0 == 1000 })
        XCTAssert(mixer.mix(blockIndex: 2).buffer.allSatisfy { $0 == 1000 })
        XCTAssert(mixer.mix(blockIndex: 3).buffer.allSatisfy { $0 == 0 })
        XCTAssertEqual(input.underruns, 1)
        XCTAssertEqual(input.buffered, 0)
    }

    func testAVideoFrameAndTheAudioOfTheSameInstantLeaveTogether() throws {
        // A flash in the video and a click in the audio at the same instant, 1.2 s in; inputs
        // at 25 fps and 16 kHz, the program at 30 fps and 48 kHz.
        let rate = FrameRate(30)
        let compositor = try Compositor(.init(width: 64, height: 64, frameRate: rate, layout: .single))
        let mixer = try AudioMixer(sampleRate: 48000, primingBlocks: 0, registry: PluginRegistry())
        let video = try compositor.addInput(id: "cam")
        let audio = try mixer.addInput(id: "cam")
        let dark = VideoBuffer(format: VideoFormat(width: 64, height: 64)), bright = VideoBuffer(format: VideoFormat(width: 64, height: 64))
        dark.fill(y: 16)
        bright.fill(y: 235)
        let instant: Int64 = 1_200_000
        var flashFrame: Int64?, clickBlock: Int64?
        var videoNext: Int64 = 0, audioNext: Int64 = 0
        for frame: Int64 in 0..<60 {
            let time = rate.timestamp(ofFrame: frame)
            let blocks = AudioMixer.blocks(forVideoFrame: frame, rate: rate)
            // Feed the inputs up to the end of this output frame's audio, as a file tool does.
            while videoNext * 40_000 <= time {
                video.submit(videoNext * 40_000 == instant ? bright.frame : dark.frame, at: videoNext * 40_000)
                videoNext += 1
            }
            while audioNext * 10_000 < blocks.upperBound * 10_000 + 40_000 {
                var samples = [Int16](repeating: 0, count: 160)
                if audioNext * 10_000 == instant { samples[0] = 30000 }
                try withBlock(samples, rate: 16000) { try audio.submit($0) }
                audioNext += 1
            }
            let picture = compositor.compose(frameIndex: frame)
            if flashFrame == nil, picture.plane(0)[0] > 200 { flashFrame = frame }
            for block in blocks where clickBlock == nil {
                if mixer.mix(blockIndex: block).buffer.contains(where: { abs(Int($0)) > 3000 }) { clickBlock = block }
            }
        }
        let flashTime = rate.timestamp(ofFrame: try XCTUnwrap(flashFrame))
        let clickTime = try XCTUnwrap(clickBlock) * 10_000
        XCTAssertLessThanOrEqual(abs(flashTime - clickTime), rate.timestamp(ofFrame: 1), "flash at \(flashTime) µs, click at \(clickTime) µs")
    }
}

final class CompositorClockTests: XCTestCase {
    /// Inputs that jitter, burst and stall do not move the output: frames come in order, one
    /// per interval, their timestamps exact multiples of it, each with the audio blocks of its
    /// instant (every block exactly once).
    func testTheClockKeepsItsRateWhateverTheInputsDo() throws {
        let compositor = try Compositor(.init(width: 64, height: 64, frameRate: FrameRate(50)))
        let mixer = try AudioMixer(sampleRate: 16000, primingBlocks: 0)
        let input = try compositor.addInput(id: "a")
        let picture = noisePicture(width: 32, height: 32, seed: 1)
        let ticks = Locked<[(index: Int64, timestamp: Int64, audio: Range<Int64>)]>([])
        let clock = CompositorClock(compositor: compositor, mixer: mixer) { tick, mixer in
            for block in tick.audio { _ = mixer?.mix(blockIndex: block) }
            ticks.withLock { $0.append((tick.index, tick.frame.timestampMicroseconds, tick.audio)) }
        }
        clock.start()
        // A producer that bursts 10 frames at once, stalls 120 ms, then jitters.
        for _ in 0..<10 { input.submit(picture.frame) }
        usleep(120_000)
        for delay in [3_000, 40_000, 1_000, 25_000, 60_000] as [UInt32] {
            input.submit(picture.frame)
            usleep(delay)
        }
        clock.stop()
        let seen = ticks.withLock { $0 }
        XCTAssertGreaterThan(seen.count, 5)
        XCTAssertEqual(clock.framesDelivered, Int64(seen.count))
        for (previous, next) in zip(seen, seen.dropFirst()) {
            XCTAssertEqual(next.index, previous.index + 1 + (clock.framesSkipped > 0 ? next.index - previous.index - 1 : 0))
            XCTAssertEqual(next.audio.lowerBound, previous.audio.upperBound, "every audio block once")
        }
        if clock.framesSkipped == 0 {
            XCTAssertEqual(seen.map(\.index), Array(seen.first!.index...seen.last!.index), "no output frame lost")
        }
        for tick in seen {
            XCTAssertEqual(tick.timestamp, tick.index * 20_000)
            XCTAssertEqual(tick.audio.count, 2, "two 10 ms blocks per 20 ms frame")
        }
    }
}

final class ActiveSpeakerTests: XCTestCase {
    /// A 10 ms block at 16 kHz: a tone of `amplitude` (0: silence).
    func block(_ amplitude: Double, _ body: (AudioBlock) -> Void) {
        var samples = (0..<160).map { Int16(amplitude * sin(Double($0) * 0.3)) }
        samples.withUnsafeMutableBufferPointer { body(AudioBlock(samples: $0.baseAddress!, frameCount: 160, format: AudioFormat(sampleRate: 16000, channels: 1))) }
    }

    func testTheSpeakerFollowsTheTalkerWithinTheHoldAndNeverFlaps() {
        let detector = ActiveSpeakerDetector()
        // a talks 0–3 s, b 3–7 s with a 0.3 s interjection by c at 4.5 s, a again from 7 s.
        func talker(at t: Int64) -> String? {
            if t >= 4_500_000 && t < 4_800_000 { return "c" }
            return t < 3_000_000 ? "a" : t < 7_000_000 ? "b" : "a"
        }
        var changes: [(time: Int64, speaker: String)] = []
        for step in 0..<1000 {
            let t = Int64(step) * 10_000
            for user in ["a", "b", "c"] {
                // The talker loud (−16 dBFS), the others with room noise (−60 dBFS).
                block(user == talker(at: t) ? 5000 : 30) { detector.observe(user: user, block: $0, at: t) }
            }
            let (speaker, changed) = detector.update(at: t)
            if changed { changes.append((t, speaker!)) }
        }
        XCTAssertEqual(changes.map(\.speaker), ["a", "b", "a"], "c's 0.3 s never takes over")
        XCTAssertLessThanOrEqual(changes[1].time - 3_000_000, 1_500_000, "b within 1.5 s of starting")
        XCTAssertLessThanOrEqual(changes[2].time - 7_000_000, 1_500_000)
        for (previous, next) in zip(changes, changes.dropFirst()) {
            XCTAssertGreaterThanOrEqual(next.time - previous.time, 1_500_000, "held at least 1.5 s")
        }
        XCTAssertEqual(detector.recentSpeakers.first, "a")
        XCTAssertEqual(Array(detector.recentSpeakers.prefix(3)), ["a", "b", "c"])
    }

    func testHysteresisKeepsSpeechBetweenTheThresholds() {
        let detector = ActiveSpeakerDetector()
        // −44 dBFS (between −50 and −40): not speech from silence, still speech once speaking.
        let between = 32768 * pow(10, -44 / 20) * 2.squareRoot()
        block(between) { detector.observe(user: "a", block: $0, at: 0) }
        XCTAssertFalse(detector.isSpeaking("a"))
        block(5000) { detector.observe(user: "a", block: $0, at: 10_000) }
        XCTAssertTrue(detector.isSpeaking("a"))
        block(between) { detector.observe(user: "a", block: $0, at: 20_000) }
        XCTAssertTrue(detector.isSpeaking("a"))
        block(0) { detector.observe(user: "a", block: $0, at: 30_000) }
        XCTAssertFalse(detector.isSpeaking("a"))
    }

    func testAShareSwitchesTheLayoutOnTheNextFrameAndItsEndSwitchesBack() throws {
        let compositor = try Compositor(.init(width: 320, height: 180, layout: .grid))
        for id in ["a", "b", "screen"] { _ = try compositor.addInput(id: id) }
        let director = ProgramDirector(compositor: compositor, shareLayout: .share(speaker: .inset))
        director.setSpeaker("b")
        _ = compositor.compose(frameIndex: 0)
        XCTAssertEqual(compositor.currentScene.layout, .grid)
        director.setShare("screen")
        _ = compositor.compose(frameIndex: 1)
        XCTAssertEqual(compositor.currentScene.layout, .share(speaker: .inset))
        XCTAssertEqual(compositor.currentScene.placements.map(\.id), ["screen", "b"])
        director.setShare(nil)
        _ = compositor.compose(frameIndex: 2)
        XCTAssertEqual(compositor.currentScene.layout, .grid)
    }
}

final class CompositorOverlayTests: XCTestCase {
    /// Equal sample arrays; a failure names the first difference, not the whole picture.
    func assertSame(_ a: [UInt8], _ b: [UInt8], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        guard a != b else { return }
        let common = min(a.count, b.count)
        let differing = (0..<common).filter { a[$0] != b[$0] }
        let first = differing.first.map { "at \($0) (\(a[$0]) vs \(b[$0]))" } ?? "past the shorter one"
        XCTFail("\(message): \(a.count) and \(b.count) samples, \(differing.count) differ, the first \(first)",
                file: file, line: line)
    }

    /// A copy of the canvas (compose returns a view that the next compose redraws).
    func snapshot(_ frame: VideoFrame) -> VideoBuffer {
        let copy = VideoBuffer(format: frame.format)
        frame.copy(to: copy.frame)
        return copy
    }

    /// Plane samples of `rect` turned half a turn: rows reversed, each row reversed.
    func halfTurn(_ frame: VideoFrame, plane p: Int, in rect: TileRect) -> [UInt8] {
        let shift = p > 0 ? 1 : 0
        let width = rect.width >> shift
        let rows = samples(frame, plane: p, in: rect)
        return stride(from: rows.count - width, through: 0, by: -width).flatMap { rows[$0..<($0 + width)].reversed() }
    }

    /// A tile's overlay runs in place on its rectangle of the output (here a half turn, a filter
    /// that is not in place, so its output is copied back), a tile's own border replaces the
    /// compositor's, the program overlay runs on the whole output last, and a lower tile's
    /// overlay never reaches the tile above it.
    func testOverlaysAndBordersDrawOnTheirTileAndTheProgramInZOrder() throws {
        let registry = PluginRegistry()
        let red = YUVColor(red: 220, green: 20, blue: 20)
        func make(decorated: Bool, layout: CompositorLayout) throws -> Compositor {
            let compositor = try Compositor(.init(width: 640, height: 360, layout: layout, fit: .cover,
                                                  background: .color(.black()), inputTimeoutMicroseconds: 3_600_000_000))
            let a = try compositor.addInput(id: "a", overlay: decorated ? VideoChain("rotate=angle=180", registry: registry) : nil)
            let b = try compositor.addInput(id: "b", border: decorated ? TileBorder(width: 4, color: red) : nil)
            a.submit(noisePicture(width: 320, height: 180, seed: 1).frame, at: 0)
            b.submit(noisePicture(width: 320, height: 240, seed: 2).frame, at: 0)
            compositor.setRoles(speaker: "b", share: "a")
            return compositor
        }
        // The grid: tiles side by side.
        let plain = snapshot(try make(decorated: false, layout: .grid).compose(frameIndex: 0))
        let decorated = try make(decorated: true, layout: .grid)
        let output = snapshot(decorated.compose(frameIndex: 0))
        let rects = Dictionary(uniqueKeysWithValues: decorated.currentScene.placements.map { ($0.id, $0.rect) })
        let (ra, rb) = (rects["a"]!, rects["b"]!)
        for p in 0..<3 {
            assertSame(samples(output.frame, plane: p, in: ra), halfTurn(plain.frame, plane: p, in: ra), "a's overlay, plane \(p)")
        }
        let inner = TileRect(x: rb.x + 4, y: rb.y + 4, width: rb.width - 8, height: rb.height - 8)
        for p in 0..<3 {
            assertSame(samples(output.frame, plane: p, in: inner), samples(plain.frame, plane: p, in: inner), "b inside its border")
            let top = TileRect(x: rb.x, y: rb.y, width: rb.width, height: 4)
            let left = TileRect(x: rb.x, y: rb.y, width: 4, height: rb.height)
            let colour = [red.y, red.u, red.v][p]
            XCTAssert(samples(output.frame, plane: p, in: top).allSatisfy { $0 == colour }, "b's border, plane \(p)")
            XCTAssert(samples(output.frame, plane: p, in: left).allSatisfy { $0 == colour }, "b's border, plane \(p)")
        }
        for piece in LayoutGeometry.uncovered(by: [ra, rb], in: TileRect(x: 0, y: 0, width: 640, height: 360)) {
            assertSame(samples(output.frame, plane: 0, in: piece), samples(plain.frame, plane: 0, in: piece), "outside the tiles")
        }
        // The program overlay: the whole output, after the tiles.
        decorated.setOverlay(try VideoChain("rotate=angle=180", registry: registry))
        let turned = decorated.compose(frameIndex: 1)
        let whole = TileRect(x: 0, y: 0, width: 640, height: 360)
        for p in 0..<3 { assertSame(samples(turned, plane: p), halfTurn(output.frame, plane: p, in: whole), "program overlay, plane \(p)") }
        // Overlays on tiles and on the program allocate nothing once negotiated.
        for index: Int64 in 2..<6 { _ = decorated.compose(frameIndex: index) }
        let counting = rawfx_allocation_counter_active() != 0
        // An Int loop: iterating a Range<Int64> allocates in a debug build.
        let before = rawfx_thread_allocation_count()
        for index in 6..<36 { _ = decorated.compose(frameIndex: Int64(index)) }
        let allocations = rawfx_thread_allocation_count() - before
        if counting { XCTAssertEqual(allocations, 0, "allocations over 30 frames with overlays") }
        decorated.setOverlay(nil)
        assertSame(samples(decorated.compose(frameIndex: 36), plane: 0), samples(output.frame, plane: 0), "without the program overlay")
        XCTAssertEqual(decorated.overlayFailureCount, 0)

        // The share with the speaker inset: a's overlay turns a's tile before b is drawn over it.
        let plainInset = snapshot(try make(decorated: false, layout: .share(speaker: .inset)).compose(frameIndex: 0))
        let inset = try make(decorated: true, layout: .share(speaker: .inset))
        let insetOutput = snapshot(inset.compose(frameIndex: 0))
        let placed = Dictionary(uniqueKeysWithValues: inset.currentScene.placements.map { ($0.id, $0.rect) })
        let (share, speaker) = (placed["a"]!, placed["b"]!)
        XCTAssert(share.intersects(speaker), "the inset lies on the share")
        let speakerInner = TileRect(x: speaker.x + 4, y: speaker.y + 4, width: speaker.width - 8, height: speaker.height - 8)
        assertSame(samples(insetOutput.frame, plane: 0, in: speakerInner), samples(plainInset.frame, plane: 0, in: speakerInner),
                       "the speaker's tile is drawn after the share's overlay")
        // Where the share shows, it is the half turn of the share drawn alone.
        let shareAlone = try Compositor(.init(width: 640, height: 360, layout: .custom([
            CustomTile(id: "a", rect: share, z: 0)]), fit: .cover, background: .color(.black())))
        try shareAlone.addInput(id: "a").submit(noisePicture(width: 320, height: 180, seed: 1).frame, at: 0)
        let alone = shareAlone.compose(frameIndex: 0)
        let turnedShare = halfTurn(alone, plane: 0, in: share)
        let drawn = samples(insetOutput.frame, plane: 0, in: share)
        for row in stride(from: 0, to: share.height, by: 2) where !(speaker.y..<speaker.maxY).contains(share.y + row) {
            assertSame(Array(drawn[(row * share.width)..<((row + 1) * share.width)]), Array(turnedShare[(row * share.width)..<((row + 1) * share.width)]),
                           "share row \(row)")
        }
    }

    /// A placeholder overlay runs only while the tile shows its placeholder: over the avatar
    /// while the input is off, never over its pictures.
    func testAPlaceholderOverlayRunsOnlyOverThePlaceholder() throws {
        let registry = PluginRegistry()
        let avatar = noisePicture(width: 160, height: 90, seed: 7)
        func make(card: Bool) throws -> (Compositor, CompositorInput) {
            let compositor = try Compositor(.init(width: 320, height: 180, layout: .single, fit: .cover,
                                                  inputTimeoutMicroseconds: 3_600_000_000))
            let input = try compositor.addInput(id: "a", placeholder: .image(avatar),
                                                placeholderOverlay: card ? VideoChain("rotate=angle=180", registry: registry) : nil)
            input.submit(noisePicture(width: 320, height: 180, seed: 8).frame, at: 0)
            return (compositor, input)
        }
        let (plain, plainInput) = try make(card: false)
        let (carded, cardedInput) = try make(card: true)
        let whole = TileRect(x: 0, y: 0, width: 320, height: 180)
        assertSame(samples(carded.compose(frameIndex: 0), plane: 0), samples(plain.compose(frameIndex: 0), plane: 0),
                   "a picture: no card")
        plainInput.isActive = false
        cardedInput.isActive = false
        let avatarTile = snapshot(plain.compose(frameIndex: 1))
        for p in 0..<3 {
            assertSame(samples(carded.compose(frameIndex: 1 + Int64(p)), plane: p), halfTurn(avatarTile.frame, plane: p, in: whole),
                       "the placeholder with its card, plane \(p)")
        }
    }
}

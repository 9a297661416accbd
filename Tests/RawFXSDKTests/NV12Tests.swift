import Foundation
import RawFX
import RawFXAllocCounter
import RawFXCompose
import RawFXEmulator
@testable import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// NV12 (`onPixelBuffer`) to I420 by libyuv at the head of a stream's chain, checked against a
/// deinterleave written here by hand, with padded strides and odd sizes, and without
/// allocation per frame.
final class NV12Tests: XCTestCase {
    var ledger: ContractLedger!

    override func setUp() { ledger = ContractLedger() }

    /// An NV12 picture with padded rows, filled from a pattern.
    func pixels(width: Int, height: Int, seed: Int, limited: Bool = true, memoryMode: RawDataMemoryMode = .heap) -> EmulatedNV12PixelBuffer {
        let p = EmulatedNV12PixelBuffer(width: width, height: height, limitedRange: limited, padding: 11,
                                        timestampMicroseconds: Int64(seed) * 33_000, memoryMode: memoryMode, ledger: ledger)
        p.capture(patternBuffer(width: width, height: height, seed: seed).frame)
        return p
    }

    /// The I420 planes of an NV12 picture, deinterleaved by hand from its own bytes.
    func deinterleaved(_ p: EmulatedNV12PixelBuffer) -> [[UInt8]] {
        let y = p.yPlane!, uv = p.uvPlane!
        let cw = (p.width + 1) / 2, ch = (p.height + 1) / 2
        var planes: [[UInt8]] = [[], [], []]
        for row in 0..<p.height { for x in 0..<p.width { planes[0].append(y[row * p.yStride + x]) } }
        for row in 0..<ch {
            for x in 0..<cw {
                planes[1].append(uv[row * p.uvStride + 2 * x])
                planes[2].append(uv[row * p.uvStride + 2 * x + 1])
            }
        }
        return planes
    }

    func testConverterMatchesAHandDeinterleaveAtOddSizesAndPaddedStrides() throws {
        for (w, h) in [(64, 36), (37, 23), (1, 1), (2, 3)] {
            let source = pixels(width: w, height: h, seed: w)
            let converter = NV12ToI420Converter()
            let format = source.videoFormat(rotation: .rotation90)
            let frame = try converter.convert(source, format: format)
            XCTAssertEqual((0..<3).map { planeBytes(frame, $0) }, deinterleaved(source), "\(w)x\(h)")
            XCTAssertEqual(frame.format, VideoFormat(width: w, height: h, colorRange: .limited, rotation: 90))
            XCTAssertEqual(frame.timestampMicroseconds, source.timestampMicroseconds)
            XCTAssertTrue(source.paddingIntact)
            // The original I420 picture round-trips through the interleave.
            let original = patternBuffer(width: w, height: h, seed: w).frame
            XCTAssertEqual((0..<3).map { planeBytes(frame, $0) }, (0..<3).map { planeBytes(original, $0) })
        }
    }

    func testConverterAllocatesOnlyWhenTheFormatChanges() throws {
        let converter = NV12ToI420Converter()
        let a = pixels(width: 640, height: 360, seed: 1), b = pixels(width: 320, height: 180, seed: 2)
        XCTAssertTrue(converter.prepare(a.videoFormat(rotation: .none)))
        _ = try converter.convert(a, format: a.videoFormat(rotation: .none))
        let before = rawfx_thread_allocation_count()
        for _ in 0..<20 { _ = try converter.convert(a, format: a.videoFormat(rotation: .none)) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        XCTAssertTrue(converter.prepare(b.videoFormat(rotation: .none)), "a new size allocates")
        XCTAssertFalse(converter.prepare(b.videoFormat(rotation: .rotation180)), "a new rotation does not")
    }

    /// NV12 into a compositor input: converted straight into the input's frame, then the tile
    /// is that picture scaled by the `scale` filter, as for an I420 input.
    func testNV12GoesIntoACompositorInputThroughTheSameConversion() throws {
        let compositor = try Compositor(.init(width: 320, height: 180, layout: .single))
        let input = try compositor.addInput(id: "nv12")
        let source = pixels(width: 160, height: 90, seed: 4)
        try input.submit(nv12: source, at: 0)
        let output = compositor.compose(frameIndex: 0)
        let expected = try VideoChain("scale=width=320:height=180:mode=fit", registry: PluginRegistry())
            .process(patternBuffer(width: 160, height: 90, seed: 4).frame)
        for p in 0..<3 { XCTAssertEqual(planeBytes(output, p), planeBytes(expected, p), "plane \(p)") }
        XCTAssertThrowsError(try input.submit(nv12: pixels(width: 1, height: 1, seed: 1))) {
            XCTAssert("\($0)".contains("NV12 frame of 1x1: the compositor draws pictures of at least 2x2"), "\($0)")
        }
    }

    func testBadStridesAreRefusedWithAMessage() throws {
        final class Short: NV12PixelBuffer {
            let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
            deinit { storage.deallocate() }
            var width: Int { 8 }
            var height: Int { 2 }
            var yPlane: UnsafeMutablePointer<UInt8>? { storage }
            var yStride: Int { 8 }
            var uvPlane: UnsafeMutablePointer<UInt8>? { storage + 32 }
            var uvStride: Int { 4 }
            var isLimitedRange: Bool { true }
            var timestampMicroseconds: Int64 { 0 }
            func canAddRef() -> Bool { false }
            func addRef() -> Bool { false }
            func releaseRef() -> Int { 0 }
        }
        XCTAssertThrowsChainError(try NV12ToI420Converter().convert(Short(), format: VideoFormat(width: 8, height: 2))) { error in
            XCTAssertTrue("\(error)".contains("UV 4") && "\(error)".contains("UV 8 bytes"), "\(error)")
        }
    }

    func testHookTakesNV12FramesSyncAndAsyncWithoutAllocatingPerFrame() throws {
        let registry = try ReceiveFixture.registry()
        for mode in [ProcessingMode.sync, .async(capacity: 8)] {
            for memoryMode in [RawDataMemoryMode.heap, .stack] {
                let recorder = ReceivedFrames()
                let hook = try ReceiveVideoHook(chain: "blend", registry: registry, mode: mode, sink: recorder.sink)
                let pipe = EmulatedVideoPipe(user: SDKUser(6), ledger: ledger)
                try hook.subscribe(pipe, user: SDKUser(6), resolution: .p360)
                let sources = (0..<4).map { pixels(width: 48, height: 30, seed: $0, memoryMode: memoryMode) }
                for source in sources { pipe.deliverNV12(source, rotation: .none) }
                hook.waitUntilIdle()
                // Reference: the same chain on I420 pictures deinterleaved by hand.
                let chain = try VideoChain("blend", registry: registry)
                let expected: [[[UInt8]]] = try sources.map { source in
                    let planes = deinterleaved(EmulatedNV12PixelBuffer.copyForReference(source, ledger: ledger))
                    let buffer = VideoBuffer(format: VideoFormat(width: 48, height: 30))
                    for p in 0..<3 {
                        let (w, h) = buffer.frame.planeSize(p)
                        for row in 0..<h { for x in 0..<w { buffer.frame.plane(p)[row * buffer.frame.stride(p) + x] = planes[p][row * w + x] } }
                    }
                    return try withExtendedLifetime(buffer) { let o = try chain.process(buffer.frame); return (0..<3).map { planeBytes(o, $0) } }
                }
                XCTAssertEqual(recorder.frames(of: ReceiveStreamID(user: SDKUser(6))).map(\.planes), expected, "\(mode) \(memoryMode)")
                hook.close()
                XCTAssertEqual(ledger.outstandingReferences, 0)
                XCTAssertEqual(ledger.violations, [], "\(mode) \(memoryMode)")
            }
        }
        // Sync, steady state: nothing allocated per NV12 frame.
        let hook = try ReceiveVideoHook(chain: "mirror", registry: registry, sink: { _, _ in })
        let pipe = EmulatedVideoPipe(user: SDKUser(1), ledger: ledger)
        try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360)
        let source = pixels(width: 640, height: 360, seed: 3)
        pipe.deliverNV12(source)
        let before = rawfx_thread_allocation_count()
        for _ in 0..<30 { pipe.deliverNV12(source) }
        XCTAssertEqual(rawfx_thread_allocation_count() - before, 0)
        XCTAssertEqual(hook.metrics(for: ReceiveStreamID(user: SDKUser(1)))?.hook.frames, 31)
    }
}

extension EmulatedNV12PixelBuffer {
    /// A fresh copy of what `source` was captured from, readable outside a callback (the
    /// source itself is poisoned once delivered).
    static func copyForReference(_ source: EmulatedNV12PixelBuffer, ledger: ContractLedger) -> EmulatedNV12PixelBuffer {
        let seed = Int(source.timestampMicroseconds / 33_000)
        let copy = EmulatedNV12PixelBuffer(width: source.width, height: source.height, padding: 11, ledger: ledger)
        copy.capture(patternBuffer(width: source.width, height: source.height, seed: seed).frame)
        return copy
    }
}

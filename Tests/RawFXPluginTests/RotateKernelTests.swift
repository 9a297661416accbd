import CLibYUV
import Foundation
import RawFX
import RawFXAllocCounter
import XCTest
@testable import RawFXTestSupport

/// The `rotate` and `mirror` filters on their own kernels (Plugins/YUV/rotate_kernels.c),
/// checked byte for byte against libyuv's I420Rotate, I420Mirror and I420Copy called here
/// directly, at each kernel level the CPU has (forced down with the test-only environment
/// variable RAWFX_KERNELS, read at configure), on 1 and 2 threads of the host's pool.
final class RotateKernelTests: XCTestCase {
    var registry: PluginRegistry!
    var threadsBefore = 1

    override func setUpWithError() throws {
        registry = try registryOfBuiltPlugin("rawfx-yuv", file: "libRawFXYUV.so", product: "RawFXYUV")
        threadsBefore = RawFXThreadPool.threadCount
    }

    override func tearDown() {
        unsetenv("RAWFX_KERNELS")
        RawFXThreadPool.threadCount = threadsBefore
    }

    /// Every transformation the two filters have, with libyuv's answer for it.
    private static let operations: [(chain: String, reference: Reference)] = [
        ("rotate=angle=0", .copy), ("rotate=angle=0:mirror=true", .mirror),
        ("rotate=angle=90", .rotate(kRotate90)), ("rotate=angle=90:mirror=true", .rotateThenMirror(kRotate90)),
        ("rotate=angle=180", .rotate(kRotate180)), ("rotate=angle=180:mirror=true", .rotateThenMirror(kRotate180)),
        ("rotate=angle=270", .rotate(kRotate270)), ("rotate=angle=270:mirror=true", .rotateThenMirror(kRotate270)),
        ("mirror", .mirror), ("mirror=vertical=true", .flipTopBottom),
    ]

    /// The kernel levels, portable C first; the CPU caps what a forced level gives.
    static let levels = ["c", "ssse3", "avx2"]

    // MARK: Against libyuv

    func testEveryAngleAndMirrorMatchesLibyuvAtEveryKernelLevel() throws {
        // 2x2 and 2-wide/2-high frames have 1-sample chroma rows or columns; 66x38 has odd
        // chroma (33x19); 130x98 and 322x180 cross the 16- and 32-column blocks with
        // overlapping edge blocks; strides wider than the width on both sides.
        let sizes = [(2, 2), (2, 34), (34, 2), (18, 16), (66, 38), (130, 98), (322, 180)]
        for level in Self.levels {
            setenv("RAWFX_KERNELS", level, 1)
            for (width, height) in sizes {
                let input = randomBuffer(width: width, height: height, extraStride: 5, seed: width * 31 + height)
                for (text, reference) in Self.operations {
                    let expected = reference.apply(input)
                    let got = try run(text, input)
                    XCTAssertEqual(got, expected, "\(text) on \(width)x\(height), kernels \(level)")
                }
            }
        }
    }

    func testEachSIMDPathEqualsThePortableCOnAFullFrame() throws {
        let input = randomBuffer(width: 1282, height: 722, extraStride: 7, seed: 5)
        for (text, _) in Self.operations {
            var outputs: [String: PlanarPicture] = [:]
            for level in Self.levels {
                setenv("RAWFX_KERNELS", level, 1)
                outputs[level] = try run(text, input)
            }
            XCTAssertEqual(outputs["ssse3"], outputs["c"], text)
            XCTAssertEqual(outputs["avx2"], outputs["c"], text)
        }
    }

    // MARK: Slices

    func testTwoThreadsGiveTheSameBytesAsOne() throws {
        for (width, height) in [(1280, 720), (642, 362), (66, 64)] {
            let input = randomBuffer(width: width, height: height, extraStride: 3, seed: width)
            for (text, reference) in Self.operations {
                RawFXThreadPool.threadCount = 1
                let one = try run(text, input)
                RawFXThreadPool.threadCount = 2
                let two = try run(text, input)
                XCTAssertEqual(two, one, "\(text) on \(width)x\(height)")
                XCTAssertEqual(two, reference.apply(input), "\(text) on \(width)x\(height)")
            }
        }
    }

    func testNoAllocationPerFrameAfterWarmUpOnOneAndTwoThreads() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let input = randomBuffer(width: 640, height: 360, extraStride: 3, seed: 9)
        for threads in [1, 2] {
            RawFXThreadPool.threadCount = threads
            for (text, _) in Self.operations {
                let chain = try VideoChain(text, registry: registry)
                try withExtendedLifetime((chain, input)) {
                    let frame = input.frame
                    for _ in 0..<3 { _ = try chain.process(frame) }
                    let before = rawfx_thread_allocation_count()
                    for _ in 0..<20 { _ = try chain.process(frame) }
                    XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "\(text) on \(threads) threads")
                }
            }
        }
    }

    // MARK: Helpers

    /// Runs one frame through a new chain and copies the output out.
    private func run(_ text: String, _ buffer: VideoBuffer) throws -> PlanarPicture {
        let chain = try VideoChain(text, registry: registry)
        return try withExtendedLifetime((chain, buffer)) { PlanarPicture(try chain.process(buffer.frame)) }
    }
}

/// libyuv's answer for one transformation.
private enum Reference {
    case copy, mirror, flipTopBottom
    case rotate(RotationMode)
    case rotateThenMirror(RotationMode)

    func apply(_ buffer: VideoBuffer) -> PlanarPicture {
        withExtendedLifetime(buffer) {
            let f = buffer.frame
            let (w, h) = (f.planeSize(0).width, f.planeSize(0).height)
            let source = (f.plane(0), Int32(f.stride(0)), f.plane(1), Int32(f.stride(1)), f.plane(2), Int32(f.stride(2)))
            switch self {
            case .copy, .flipTopBottom:
                return PlanarPicture.filled(width: w, height: h) { d in
                    // A negative height reads the source bottom up: libyuv's vertical flip.
                    I420Copy(source.0, source.1, source.2, source.3, source.4, source.5,
                             d.0, d.1, d.2, d.3, d.4, d.5, Int32(w), Int32(self.isFlip ? -h : h))
                }
            case .mirror:
                return PlanarPicture.filled(width: w, height: h) { d in
                    I420Mirror(source.0, source.1, source.2, source.3, source.4, source.5,
                               d.0, d.1, d.2, d.3, d.4, d.5, Int32(w), Int32(h))
                }
            case .rotate(let mode), .rotateThenMirror(let mode):
                let quarter = mode == kRotate90 || mode == kRotate270
                let (ow, oh) = quarter ? (h, w) : (w, h)
                let turned = PlanarPicture.filled(width: ow, height: oh) { d in
                    I420Rotate(source.0, source.1, source.2, source.3, source.4, source.5,
                               d.0, d.1, d.2, d.3, d.4, d.5, Int32(w), Int32(h), mode)
                }
                guard case .rotateThenMirror = self else { return turned }
                let t = turned.buffer()
                return withExtendedLifetime(t) {
                    let tf = t.frame
                    return PlanarPicture.filled(width: ow, height: oh) { d in
                        I420Mirror(tf.plane(0), Int32(tf.stride(0)), tf.plane(1), Int32(tf.stride(1)), tf.plane(2),
                                   Int32(tf.stride(2)), d.0, d.1, d.2, d.3, d.4, d.5, Int32(ow), Int32(oh))
                    }
                }
            }
        }
    }

    private var isFlip: Bool { if case .flipTopBottom = self { return true } else { return false } }
}

/// A tightly packed I420 picture, for comparisons.
private struct PlanarPicture: Equatable, CustomStringConvertible {
    var width: Int
    var height: Int
    var planes: [[UInt8]]

    init(_ frame: VideoFrame) {
        width = frame.planeSize(0).width
        height = frame.planeSize(0).height
        planes = (0..<3).map { planeBytes(frame, $0) }
    }

    /// Size and per-plane sums: enough to tell two failing pictures apart in a message.
    var description: String {
        "\(width)x\(height) picture (sums \(planes.map { $0.reduce(0) { $0 &+ Int($1) } }))"
    }

    /// A picture written by `body` into a tightly packed buffer (y, stride, u, stride, v, stride).
    static func filled(width: Int, height: Int,
                       _ body: ((UnsafeMutablePointer<UInt8>, Int32, UnsafeMutablePointer<UInt8>, Int32,
                                 UnsafeMutablePointer<UInt8>, Int32)) -> Int32) -> PlanarPicture {
        let buffer = VideoBuffer(format: VideoFormat(width: width, height: height), strideAlignment: 1)
        return withExtendedLifetime(buffer) {
            let f = buffer.frame
            let rc = body((f.plane(0), Int32(f.stride(0)), f.plane(1), Int32(f.stride(1)), f.plane(2), Int32(f.stride(2))))
            precondition(rc == 0, "libyuv failed (\(rc))")
            return PlanarPicture(f)
        }
    }

    /// A buffer holding this picture, tightly packed.
    func buffer() -> VideoBuffer {
        let buffer = VideoBuffer(format: VideoFormat(width: width, height: height), strideAlignment: 1)
        withExtendedLifetime(buffer) {
            let f = buffer.frame
            for p in 0..<3 {
                let (w, h) = f.planeSize(p)
                planes[p].withUnsafeBufferPointer { bytes in
                    for y in 0..<h { (f.plane(p) + y * f.stride(p)).update(from: bytes.baseAddress! + y * w, count: w) }
                }
            }
        }
        return buffer
    }
}

/// An I420 buffer of pseudo-random samples (a fixed LCG per seed), rows padded by
/// `extraStride` bytes.
private func randomBuffer(width: Int, height: Int, extraStride: Int, seed: Int) -> VideoBuffer {
    let buffer = VideoBuffer(format: VideoFormat(width: width, height: height), strideAlignment: 1, extraStride: extraStride)
    var state = UInt64(truncatingIfNeeded: seed) &* 6364136223846793005 &+ 1442695040888963407
    withExtendedLifetime(buffer) {
        let f = buffer.frame
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h {
                let row = f.plane(p) + y * f.stride(p)
                for x in 0..<w {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    row[x] = UInt8(truncatingIfNeeded: state >> 33)
                }
            }
        }
    }
    return buffer
}

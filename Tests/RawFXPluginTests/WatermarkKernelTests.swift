import Foundation
import RawFX
import RawFXAllocCounter
import XCTest
@testable import RawFXTestSupport

/// The watermark's SIMD blends (Plugins/WatermarkKernels) against the exact integer formulas,
/// computed here from libyuv's per-pixel conversion of the image: every sample of the frame,
/// at each kernel level (forced down with the test-only RAWFX_KERNELS) and on 1 and 2 threads
/// of the host's pool (an overlay this large is blended in slices).
extension WatermarkPluginTests {
    func testExactBlendAtEveryKernelLevelOnOneAndTwoThreadsAtClippedPositions() throws {
        let threadsBefore = RawFXThreadPool.threadCount
        defer { unsetenv("RAWFX_KERNELS"); RawFXThreadPool.threadCount = threadsBefore }
        let pic = picture(width: 300, height: 250, seed: 21)
        let path = writeRGBA(pic)
        let (w, h) = (321, 271)
        // Inside at odd offsets; past the left and top edges; past the right and bottom edges.
        for (x, y) in [(7, 5), (-40, -30), (40, 30)] {
            let left = x >= 0 ? x : w - pic.width + x, top = y >= 0 ? y : h - pic.height + y
            for (opacity, range) in [(1.0, ColorRange.limited), (0.6, .full), (0.25, .limited)] {
                let converted = libyuvConversion(pic, range)
                let input = patternBuffer(width: w, height: h, range: range, extraStride: 3, seed: x + y)
                let before = snapshot(input.frame)
                let expected = exactBlend(before, strides: (0..<3).map { input.frame.stride($0) }, width: w, height: h,
                                          picture: pic, converted: converted, left: left, top: top, opacity: opacity)
                for level in ["c", "ssse3", "avx2"] {
                    setenv("RAWFX_KERNELS", level, 1)
                    for threads in [1, 2] {
                        RawFXThreadPool.threadCount = threads
                        let chain = try VideoChain("watermark=image=\(path):x=\(x):y=\(y):opacity=\(opacity)",
                                                   registry: registry)
                        let buffer = patternBuffer(width: w, height: h, range: range, extraStride: 3, seed: x + y)
                        let out = try withExtendedLifetime(buffer) { snapshot(try chain.process(buffer.frame)) }
                        XCTAssertTrue(out == expected, "at \(x),\(y) opacity \(opacity) \(range), kernels \(level), \(threads) threads")
                    }
                }
            }
        }
    }

    func testSlicedBlendDoesNotAllocate() throws {
        XCTAssertEqual(rawfx_allocation_counter_active(), 1, "the malloc interposer is not in effect")
        let threadsBefore = RawFXThreadPool.threadCount
        defer { RawFXThreadPool.threadCount = threadsBefore }
        let path = writeRGBA(picture(width: 300, height: 250, seed: 22))
        for threads in [1, 2] {
            RawFXThreadPool.threadCount = threads
            let chain = try VideoChain("watermark=image=\(path):x=-5:y=3:opacity=0.7", registry: registry)
            let buffer = patternBuffer(width: 320, height: 270, extraStride: 5)
            try withExtendedLifetime(buffer) {
                for _ in 0..<3 { _ = try chain.process(buffer.frame) }
                let before = rawfx_thread_allocation_count()
                for _ in 0..<50 { _ = try chain.process(buffer.frame) }
                XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "\(threads) threads")
            }
        }
    }

    /// The frame `before` (planes with their strides) with `picture` blended at (left, top) by
    /// the exact integer formulas of Overlay.swift, from libyuv's per-pixel Y, U, V.
    private func exactBlend(_ before: [[UInt8]], strides: [Int], width w: Int, height h: Int, picture: Picture,
                            converted: (y: [UInt8], u: [UInt8], v: [UInt8]), left: Int, top: Int,
                            opacity: Double) -> [[UInt8]] {
        var out = before
        func alpha(_ x: Int, _ y: Int) -> Int? {
            let (ix, iy) = (x - left, y - top)
            guard ix >= 0, iy >= 0, ix < picture.width, iy < picture.height else { return nil }
            return Int((Double(picture.rgba[(iy * picture.width + ix) * 4 + 3]) * opacity).rounded())
        }
        for y in 0..<h {
            for x in 0..<w {
                guard let a = alpha(x, y) else { continue }
                let i = y * strides[0] + x
                let img = Int(converted.y[(y - top) * picture.width + x - left])
                out[0][i] = UInt8((Int(before[0][i]) * (255 - a) + img * a + 127) / 255)
            }
        }
        for cy in 0..<(h + 1) / 2 {
            for cx in 0..<(w + 1) / 2 {
                // The 2x2 footprint, its positions past the last row/column repeating it.
                var s = 0, su = 0, sv = 0
                for dy in 0..<2 {
                    for dx in 0..<2 {
                        let (px, py) = (min(2 * cx + dx, w - 1), min(2 * cy + dy, h - 1))
                        guard let a = alpha(px, py) else { continue }
                        let j = (py - top) * picture.width + px - left
                        s += a; su += a * Int(converted.u[j]); sv += a * Int(converted.v[j])
                    }
                }
                for (p, sum) in [(1, su), (2, sv)] {
                    let i = cy * strides[p] + cx
                    out[p][i] = UInt8((Int(before[p][i]) * (1020 - s) + sum + 510) / 1020)
                }
            }
        }
        return out
    }
}

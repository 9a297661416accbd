#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// Memory the validator lends a plugin. Every byte starts as a known pattern that depends on
/// its position (so a shifted copy shows too); after a call, any byte outside what the plugin
/// may write must still hold it. Filled and compared with memcpy/memcmp: frames up to 1080p
/// are checked on every call.
final class PatternedStorage {
    /// A prime period, so the pattern never lines up with a power-of-two stride.
    static let period = 4093
    /// Two periods, so that any `period` bytes starting at any phase are contiguous.
    static let pattern: [UInt8] = {
        var state: UInt32 = 0x9E37_79B9
        let one = (0..<period).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        return one + one
    }()

    let bytes: UnsafeMutablePointer<UInt8>
    let count: Int

    init(count: Int) {
        self.count = count
        bytes = .allocate(capacity: max(count, 1))
        fillPattern(0..<count)
    }

    deinit { bytes.deallocate() }

    /// Writes the pattern into `range` (offsets from the start of the storage).
    func fillPattern(_ range: Range<Int>) {
        PatternedStorage.pattern.withUnsafeBufferPointer { pattern in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let phase = offset % PatternedStorage.period
                let n = min(PatternedStorage.period, range.upperBound - offset)
                memcpy(bytes + offset, pattern.baseAddress! + phase, n)
                offset += n
            }
        }
    }

    /// The first offset in `range` that no longer holds the pattern, or nil.
    func firstDamage(in range: Range<Int>) -> Int? {
        PatternedStorage.pattern.withUnsafeBufferPointer { pattern in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let phase = offset % PatternedStorage.period
                let n = min(PatternedStorage.period, range.upperBound - offset)
                if memcmp(bytes + offset, pattern.baseAddress! + phase, n) != 0 {
                    for i in 0..<n where bytes[offset + i] != pattern[phase + i] { return offset + i }
                }
                offset += n
            }
            return nil
        }
    }

    /// A copy of every byte, to compare with after a call that must change nothing.
    func snapshot() -> [UInt8] { Array(UnsafeBufferPointer(start: bytes, count: count)) }

    /// The first offset that differs from `snapshot`, or nil.
    func firstDifference(from snapshot: [UInt8]) -> Int? {
        snapshot.withUnsafeBufferPointer { old in
            guard memcmp(bytes, old.baseAddress!, count) != 0 else { return nil }
            return (0..<count).first { bytes[$0] != old[$0] }
        }
    }
}

/// Picture content: deterministic noise rows, in the sample range of the frame, so filters
/// see detail everywhere and every plane differs from frame to frame.
enum TestContent {
    static let poolSize = 1 << 20
    /// Bytes 0...255 (full range), and the same mapped to 16...235 (limited range).
    static let full: [UInt8] = {
        var state: UInt32 = 12345
        return (0..<poolSize + 8192).map { _ in
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 23)
        }
    }()
    static let limited: [UInt8] = full.map { UInt8(16 + Int($0) * 219 / 255) }
    /// Speech-level samples (about -12 dBFS peaks): noise shaped by a slow envelope.
    static let audio: [Int16] = {
        var state: UInt32 = 777
        return (0..<(poolSize / 2)).map { i in
            state = state &* 1_103_515_245 &+ 12345
            let noise = Double(Int32(bitPattern: state) >> 16) / 32768
            let envelope = 0.5 + 0.5 * sin(Double(i) * 2 * .pi / 4800)
            return Int16(noise * envelope * 8000)
        }
    }()

    /// Where row `row` of plane `plane` of frame `seed` starts in the pool.
    static func offset(seed: Int, plane: Int, row: Int, length: Int) -> Int {
        ((seed &* 7919 &+ plane &* 104_729 &+ row &* 2053) & 0x7FFF_FFFF) % (poolSize - length)
    }
}

/// An I420 frame in one patterned allocation: a guard zone before, between and after the
/// planes, and rows wider than the picture (stride = plane width + 64, made odd, so nothing
/// is aligned by accident). The row padding and the guard zones must never change.
final class GuardedVideoFrame {
    static let guardBytes = 512

    let format: VideoFormat
    let storage: PatternedStorage
    private let offsets: [Int]
    let strides: [Int]
    /// The frame as a plugin sees it (planes, strides, format; timestamp 0).
    let frame: rawfx_video_frame

    init(format: VideoFormat) {
        self.format = format
        let sizes = GuardedVideoFrame.planeSizes(width: format.width, height: format.height)
        var strides: [Int] = []
        var offsets: [Int] = []
        var offset = GuardedVideoFrame.guardBytes
        for p in 0..<3 {
            let stride = (sizes[p].width + 64) | 1
            strides.append(stride)
            offsets.append(offset)
            offset += stride * sizes[p].height + GuardedVideoFrame.guardBytes
        }
        self.strides = strides
        self.offsets = offsets
        storage = PatternedStorage(count: offset)
        let base = storage.bytes
        frame = VideoFrame(format: format, y: base + offsets[0], yStride: strides[0],
                           u: base + offsets[1], uStride: strides[1],
                           v: base + offsets[2], vStride: strides[2]).raw
    }

    private func planeSize(_ p: Int) -> (width: Int, height: Int) { VideoFrame(frame).planeSize(p) }

    /// Plane sizes of a `width` x `height` picture (the engine's rule: chroma rounds up).
    private static func planeSizes(width: Int, height: Int) -> [(width: Int, height: Int)] {
        var frame = rawfx_video_frame()
        frame.width = UInt32(width)
        frame.height = UInt32(height)
        return (0..<3).map { VideoFrame(frame).planeSize($0) }
    }

    private func row(_ p: Int, _ r: Int) -> UnsafeMutablePointer<UInt8> { storage.bytes + offsets[p] + r * strides[p] }

    /// Pattern everywhere, then frame `seed`'s noise in the picture.
    func fill(seed: Int) {
        storage.fillPattern(0..<storage.count)
        let pool = format.colorRange == .full ? TestContent.full : TestContent.limited
        pool.withUnsafeBufferPointer { pool in
            for p in 0..<3 {
                let (w, h) = planeSize(p)
                for r in 0..<h {
                    memcpy(row(p, r), pool.baseAddress! + TestContent.offset(seed: seed, plane: p, row: r, length: w), w)
                }
            }
        }
    }

    /// Pattern everywhere, then `byte` in every picture sample: an output buffer before the call.
    func prefill(byte: UInt8) {
        storage.fillPattern(0..<storage.count)
        for p in 0..<3 {
            let (w, h) = planeSize(p)
            for r in 0..<h { memset(row(p, r), Int32(byte), w) }
        }
    }

    /// Where the first byte outside the picture that changed is, or nil when none did.
    func damageOutsidePicture() -> String? {
        var regions: [Range<Int>] = [0..<offsets[0]]
        for p in 0..<3 {
            let (w, h) = planeSize(p)
            for r in 0..<h {
                let start = offsets[p] + r * strides[p]
                regions.append(start + w..<start + strides[p])
            }
            let end = offsets[p] + strides[p] * h
            regions.append(end..<(p < 2 ? offsets[p + 1] : storage.count))
        }
        for region in regions {
            if let offset = storage.firstDamage(in: region) { return describe(offset) }
        }
        return nil
    }

    /// The place of a byte, for people: "plane U, row 3, 2 bytes into the row padding".
    func describe(_ offset: Int) -> String {
        let names = ["Y", "U", "V"]
        if offset < offsets[0] { return "\(plural(offsets[0] - offset, "byte")) before plane Y" }
        for p in (0..<3).reversed() where offset >= offsets[p] {
            let (w, h) = planeSize(p)
            let relative = offset - offsets[p]
            let end = strides[p] * h
            if relative >= end { return "\(plural(relative - end + 1, "byte")) past the end of plane \(names[p]) (after its last row)" }
            let (r, column) = relative.quotientAndRemainder(dividingBy: strides[p])
            if column >= w {
                return "plane \(names[p]), row \(r), \(plural(column - w + 1, "byte")) into the row padding (width \(w), stride \(strides[p]))"
            }
            return "plane \(names[p]), row \(r), column \(column)"
        }
        return "offset \(offset)"
    }

    /// The top-left `width` x `height` of the picture (at most the whole), rows without padding.
    func picture(width: Int, height: Int) -> [UInt8] {
        let sizes = GuardedVideoFrame.planeSizes(width: width, height: height)
        var out: [UInt8] = []
        out.reserveCapacity(VideoFormat(width: width, height: height).packedByteCount)
        for p in 0..<3 {
            let (w, h) = sizes[p]
            for r in 0..<h { out.append(contentsOf: UnsafeBufferPointer(start: row(p, r), count: w)) }
        }
        return out
    }

    /// The place of byte `index` of a `picture(width:height:)`, for people.
    static func describePictureIndex(_ index: Int, width: Int, height: Int) -> String {
        let sizes = planeSizes(width: width, height: height)
        var rest = index
        for p in 0..<3 {
            let (w, h) = sizes[p]
            if rest < w * h { return "plane \(["Y", "U", "V"][p]), row \(rest / w), column \(rest % w)" }
            rest -= w * h
        }
        return "byte \(index)"
    }
}

/// Interleaved 16-bit samples with guard samples before and after the part a plugin may use.
final class GuardedAudioBuffer {
    static let guardSamples = 64

    let capacityFrames: Int
    let channels: Int
    let storage: PatternedStorage
    let samples: UnsafeMutablePointer<Int16>

    init(capacityFrames: Int, channels: Int) {
        self.capacityFrames = capacityFrames
        self.channels = channels
        storage = PatternedStorage(count: (2 * GuardedAudioBuffer.guardSamples + capacityFrames * channels) * 2)
        samples = UnsafeMutableRawPointer(storage.bytes + GuardedAudioBuffer.guardSamples * 2)
            .bindMemory(to: Int16.self, capacity: capacityFrames * channels)
    }

    /// Pattern everywhere, then `frames` frames of block `seed`'s audio at the start.
    func fill(seed: Int, frames: Int) {
        storage.fillPattern(0..<storage.count)
        let n = frames * channels
        TestContent.audio.withUnsafeBufferPointer { pool in
            let start = ((seed &* 7919) & 0x7FFF_FFFF) % (pool.count - n)
            memcpy(samples, pool.baseAddress! + start, n * 2)
        }
    }

    /// Pattern everywhere, then `value` in the first `frames` frames: an output before the call.
    func prefill(value: Int16, frames: Int) {
        storage.fillPattern(0..<storage.count)
        for i in 0..<frames * channels { samples[i] = value }
    }

    /// Where the first changed sample outside the first `frames` frames is, or nil.
    func damage(outsideFrames frames: Int) -> String? {
        let start = GuardedAudioBuffer.guardSamples * 2
        let end = start + frames * channels * 2
        if let offset = storage.firstDamage(in: 0..<start) {
            return "\(plural((start - offset + 1) / 2, "sample")) before the block"
        }
        if let offset = storage.firstDamage(in: end..<storage.count) {
            return "sample \((offset - end) / 2) after the \(plural(frames, "frame")) (\(plural(frames * channels, "sample"))) it may use"
        }
        return nil
    }
}

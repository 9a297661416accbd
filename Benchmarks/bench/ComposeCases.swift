// The compositor's cases (issue #26): many received streams into one output picture, one
// output frame per unit, against FFmpeg's filter graph for the same picture (a scale per input
// and xstack, one thread), the memory floor (every input byte read once, every output byte
// written once) and the same compose at 2 threads.
import CBenchPeers
import CLibYUV
import Foundation
import RawFX
import RawFXCompose

#if canImport(Glibc)
import Glibc
#endif

/// One compose case: the output, the layout, and the inputs' sizes (input k is named "in<k>").
struct ComposeSpec {
    let name: String
    let width: Int, height: Int
    let layout: CompositorLayout
    let inputs: [(width: Int, height: Int)]
    var speaker: String? = nil
    var share: String? = nil
    let summary: String
}

func composeSpecs() -> [ComposeSpec] {
    let p360 = (width: 640, height: 360)
    return [
        ComposeSpec(name: "compose-grid-9x360p-720p", width: 1280, height: 720, layout: .grid,
                    inputs: Array(repeating: p360, count: 9),
                    summary: "9 inputs of 640x360 in a grid on 1280x720 (bilinear, contain)"),
        ComposeSpec(name: "compose-grid-25x360p-1080p", width: 1920, height: 1080, layout: .grid,
                    inputs: Array(repeating: p360, count: 25),
                    summary: "25 inputs of 640x360 in a grid on 1920x1080 (bilinear, contain)"),
        ComposeSpec(name: "compose-speaker-1080p", width: 1920, height: 1080, layout: .speaker(filmstrip: .bottom, others: 4),
                    inputs: [(1280, 720)] + Array(repeating: p360, count: 4), speaker: "in0",
                    summary: "speaker layout on 1920x1080: a 1280x720 speaker and a filmstrip of 4 640x360 inputs (bilinear, contain)"),
        ComposeSpec(name: "compose-share-1080p", width: 1920, height: 1080, layout: .share(speaker: .beside),
                    inputs: [(1920, 1080), p360], speaker: "in1", share: "in0",
                    summary: "share layout on 1920x1080: a 1920x1080 share and a 640x360 speaker beside it (bilinear, contain)"),
    ]
}

/// Where each input's frames come from: a pool per input size, input k taking frame
/// `unit * sharing + slot` of its pool, so every input of every unit is a distinct frame and
/// every path (engine, FFmpeg, floor) draws the same frames for the same unit.
final class ComposeFeed {
    let pools: [FramePool]
    /// Per input: its pool, how many inputs share that pool, and its slot among them.
    let pool: UnsafeMutablePointer<FramePool>
    let sharing: UnsafeMutablePointer<Int>
    let slot: UnsafeMutablePointer<Int>
    let count: Int

    init(_ spec: ComposeSpec, context: BenchContext) {
        var bySize: [String: FramePool] = [:]
        var uses: [String: Int] = [:]
        count = spec.inputs.count
        pool = .allocate(capacity: count)
        sharing = .allocate(capacity: count)
        slot = .allocate(capacity: count)
        var pools: [FramePool] = []
        for (k, size) in spec.inputs.enumerated() {
            let key = "\(size.width)x\(size.height)"
            let made = bySize[key] ?? context.composePool(width: size.width, height: size.height)
            if bySize[key] == nil { pools.append(made) }
            bySize[key] = made
            (pool + k).initialize(to: made)
            slot[k] = uses[key, default: 0]
            uses[key, default: 0] += 1
        }
        for (k, size) in spec.inputs.enumerated() { sharing[k] = uses["\(size.width)x\(size.height)"]! }
        self.pools = pools
    }

    deinit {
        pool.deinitialize(count: count)
        pool.deallocate()
        sharing.deallocate()
        slot.deallocate()
    }

    @inline(__always) func frame(_ input: Int, unit: Int) -> VideoFrame {
        pool[input].frame(unit &* sharing[input] &+ slot[input])
    }
}

/// The engine: every input's frame of unit i submitted, then one output frame composed, with
/// the engine's thread pool at `threads` (set before each slice, as EngineVideo does).
final class EngineCompose: Workload, ThreadCounted {
    let compositor: Compositor
    let feed: ComposeFeed
    let threads: Int
    private let inputs: UnsafeMutablePointer<CompositorInput>
    private let count: Int
    private(set) var lastOutput = rawfx_video_frame()

    init(_ spec: ComposeSpec, feed: ComposeFeed, threads: Int = 1) throws {
        self.feed = feed
        self.threads = threads
        compositor = try Compositor(.init(width: spec.width, height: spec.height, frameRate: FrameRate(30),
                                          layout: spec.layout, fit: .contain, filter: .bilinear))
        count = spec.inputs.count
        inputs = .allocate(capacity: count)
        for k in 0..<count { (inputs + k).initialize(to: try compositor.addInput(id: "in\(k)")) }
        if spec.speaker != nil || spec.share != nil { compositor.setRoles(speaker: spec.speaker, share: spec.share) }
    }

    deinit {
        inputs.deinitialize(count: count)
        inputs.deallocate()
    }

    func prepareSlice() { useEngineThreads() }

    func run(_ i: Int) throws {
        let index = Int64(i)
        let time = compositor.configuration.frameRate.timestamp(ofFrame: index)
        var k = 0
        while k < count {
            inputs[k].submit(feed.frame(k, unit: i), at: time)
            k += 1
        }
        lastOutput = compositor.compose(frameIndex: index).raw
    }

    /// Composes unit `i` into a copy (outside any timing): the picture FFmpeg's must match.
    func picture(_ i: Int) throws -> VideoBuffer {
        useEngineThreads()
        try run(i)
        let out = VideoBuffer(format: compositor.format)
        VideoFrame(lastOutput).copy(to: out.frame)
        return out
    }
}

/// Where each input's picture lands on the output: its tile's rectangle with the contain fit
/// of scale_fit_geometry (scale_kernels.c) applied, the same arithmetic.
func containedRects(_ spec: ComposeSpec, placements: [TilePlacement]) throws -> [TileRect] {
    func roundEven(_ n: Int, _ d: Int) -> Int { max(2, (n + d) / (2 * d) * 2) }
    return try spec.inputs.enumerated().map { k, size in
        guard let tile = placements.first(where: { $0.id == "in\(k)" })?.rect else {
            throw PeerFailure(description: "\(spec.name): input in\(k) has no tile in the compositor's scene")
        }
        let inCross = size.width * tile.height, outCross = tile.width * size.height
        var r = tile
        if inCross > outCross {
            let h = min(tile.height, roundEven(tile.width * size.height, size.width))
            r.y += ((tile.height - h) / 2) & ~1
            r.height = h
        } else if inCross < outCross {
            let w = min(tile.width, roundEven(tile.height * size.width, size.height))
            r.x += ((tile.width - w) / 2) & ~1
            r.width = w
        }
        return r
    }
}

/// FFmpeg's graph for the same picture: each input scaled (bilinear) to its picture's size,
/// then `xstack` placing them on a black canvas (`fill=black`), padded to the output's size
/// when the pictures do not reach its right or bottom edge (pad allocates the larger frame
/// upstream, so xstack writes into it and nothing is copied).
func composeGraph(_ spec: ComposeSpec, rects: [TileRect]) -> String {
    var parts: [String] = []
    for (k, r) in rects.enumerated() {
        parts.append("[in\(k)]scale=\(r.width):\(r.height):flags=bilinear[s\(k)]")
    }
    let layout = rects.map { "\($0.x)_\($0.y)" }.joined(separator: "|")
    var stack = rects.indices.map { "[s\($0)]" }.joined() + "xstack=inputs=\(rects.count):layout=\(layout):fill=black"
    let right = rects.map(\.maxX).max() ?? 0, bottom = rects.map(\.maxY).max() ?? 0
    if right != spec.width || bottom != spec.height {
        stack += ",pad=\(spec.width):\(spec.height):0:0:black"
    }
    parts.append(stack)
    return parts.joined(separator: ";")
}

/// The FFmpeg peer: the multi-input graph fed every input's frame of unit i
/// (`bench_peers_multi_graph_run`), one thread.
final class FFmpegCompose: Workload {
    let feed: ComposeFeed
    let description: String
    private let graph: OpaquePointer
    private let count: Int
    private let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: 512)
    private let planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private let strides: UnsafeMutablePointer<Int32>
    private var pending = 0

    init(_ spec: ComposeSpec, description: String, feed: ComposeFeed) throws {
        self.feed = feed
        self.description = description
        let inputCount = spec.inputs.count
        count = inputCount
        var widths = spec.inputs.map { Int32($0.width) }, heights = spec.inputs.map { Int32($0.height) }
        var buffer = [CChar](repeating: 0, count: 512)
        let made = buffer.withUnsafeMutableBufferPointer { text in
            bench_peers_multi_graph_create(description, Int32(inputCount), &widths, &heights, text.baseAddress, text.count)
        }
        guard let made else { throw PeerFailure(description: String(nulTerminated: buffer)) }
        graph = made
        errorText.initialize(repeating: 0, count: 512)
        planes = .allocate(capacity: 3 * count + 3)
        planes.initialize(repeating: nil, count: 3 * count + 3)
        strides = .allocate(capacity: 3 * count + 3)
        strides.initialize(repeating: 0, count: 3 * count + 3)
    }

    deinit {
        bench_peers_graph_destroy(graph)
        errorText.deallocate()
        planes.deallocate()
        strides.deallocate()
    }

    func run(_ i: Int) throws { _ = try feed(unit: i, copyTo: nil) }

    /// Feeds unit i's frames; with `copyTo` each output frame is copied there. Frames taken.
    func feed(unit i: Int, copyTo: VideoFrame?) throws -> Int {
        var k = 0
        while k < count {
            let frame = feed.frame(k, unit: i)
            for p in 0..<3 {
                planes[3 * k + p] = frame.plane(p)
                strides[3 * k + p] = Int32(frame.stride(p))
            }
            k += 1
        }
        let out = 3 * count
        if let copyTo {
            for p in 0..<3 {
                planes[out + p] = copyTo.plane(p)
                strides[out + p] = Int32(copyTo.stride(p))
            }
        }
        let taken = bench_peers_multi_graph_run(graph, planes, strides, copyTo == nil ? nil : planes + out,
                                                copyTo == nil ? nil : strides + out, errorText, 512)
        if taken < 0 { throw PeerFailure(description: "FFmpeg '\(description)': \(String(cString: errorText))") }
        pending += 1 - Int(taken)
        if pending > 2 {
            throw PeerFailure(description: "FFmpeg '\(description)': \(pending) frames fed without a frame out of the buffer sink")
        }
        return Int(taken)
    }
}

/// The memory floor of one output frame: every input frame's bytes read once and the
/// output's bytes written once, cold, on one thread. The inputs' bytes are copied (memcpy)
/// into the output in order until it is full; input bytes past the output's size are only
/// read (libyuv's SIMD sum of squared differences of a row with itself: loads, no stores);
/// output bytes past the inputs' are only written (memset). vs_floor = this time / RawFX's.
final class ComposeFloor: Workload {
    static let summary = "the memory floor: every input frame's bytes read once and the output's bytes written once "
        + "(memcpy of the inputs into the output, cold; bytes past the output only read, past the inputs only written)"
    let feed: ComposeFeed
    private let output: UnsafeMutableRawPointer
    private let outputBytes: Int
    private(set) var sink: UInt64 = 0

    init(_ spec: ComposeSpec, feed: ComposeFeed) {
        self.feed = feed
        outputBytes = VideoFormat(width: spec.width, height: spec.height).packedByteCount
        output = .allocate(byteCount: outputBytes, alignment: 64)
        output.initializeMemory(as: UInt8.self, repeating: 0, count: outputBytes)
    }

    deinit { output.deallocate() }

    func run(_ i: Int) throws {
        var written = 0
        var k = 0
        while k < feed.count {
            let frame = feed.frame(k, unit: i)
            for p in 0..<3 {
                // Each plane's rows as one block (the pool's strides are the row widths, 64-aligned).
                let bytes = frame.stride(p) * frame.planeSize(p).height
                let source = UnsafeRawPointer(frame.plane(p))
                let copied = min(bytes, outputBytes - written)
                if copied > 0 {
                    memcpy(output + written, source, copied)
                    written += copied
                }
                if bytes > copied {
                    let rest = source.assumingMemoryBound(to: UInt8.self) + copied
                    sink &+= UInt64(ComputeSumSquareError(rest, rest, Int32(bytes - copied)))
                }
            }
            k += 1
        }
        if written < outputBytes { memset(output + written, 0, outputBytes - written) }
    }
}

/// PSNR of `b` against `a` per plane (same size), and the mean absolute difference of luma.
func planePSNR(_ a: VideoFrame, _ b: VideoFrame) -> (psnr: [Double], meanAbsLuma: Double) {
    var out: [Double] = []
    var meanAbs = 0.0
    for p in 0..<3 {
        let (w, h) = a.planeSize(p)
        var squares = 0.0, absolute = 0.0
        for y in 0..<h {
            let ra = a.plane(p) + y * a.stride(p), rb = b.plane(p) + y * b.stride(p)
            for x in 0..<w {
                let d = Double(Int(ra[x]) - Int(rb[x]))
                squares += d * d
                absolute += abs(d)
            }
        }
        out.append(squares == 0 ? Double.infinity : 10 * log10(255 * 255 * Double(w * h) / squares))
        if p == 0 { meanAbs = absolute / Double(w * h) }
    }
    return (out, meanAbs)
}

/// The compose cases' minimum PSNR of FFmpeg's picture against RawFX's (every plane): below
/// it the two do not draw the same picture and the case fails rather than compare them.
let composePeerMinimumPSNR = 30.0

func composeCases() -> [BenchCase] {
    composeSpecs().map { spec in
        BenchCase(
            name: spec.name, kind: .video, filters: [], unit: "frame",
            summary: spec.summary + "; one unit = every input's next frame submitted and one output frame composed",
            directSummary: nil,
            make: { context in
                let feed = ComposeFeed(spec, context: context)
                let engine = try EngineCompose(spec, feed: feed)
                let two = try EngineCompose(spec, feed: feed, threads: 2)
                var references: [BenchCase.Reference] = []
                if context.peersEnabled {
                    // The scene after one compose: the tiles FFmpeg must draw into.
                    let picture = try engine.picture(0)
                    let rects = try containedRects(spec, placements: engine.compositor.currentScene.placements)
                    let description = composeGraph(spec, rects: rects)
                    let ffmpeg = try FFmpegCompose(spec, description: description, feed: feed)
                    // Checked once, untimed: unit 0's frames until the graph gives its first output.
                    let theirs = VideoBuffer(format: engine.compositor.format)
                    var fed = 0
                    while try ffmpeg.feed(unit: 0, copyTo: theirs.frame) == 0 {
                        fed += 1
                        if fed > 3 { throw PeerFailure(description: "FFmpeg '\(description)' gave no frame for 4 fed") }
                    }
                    let (psnr, meanAbs) = planePSNR(picture.frame, theirs.frame)
                    let check = "PSNR against RawFX's picture Y \(Report.format(psnr[0], 1)) U \(Report.format(psnr[1], 1)) "
                        + "V \(Report.format(psnr[2], 1)) dB, mean |ΔY| \(Report.format(meanAbs, 2))"
                    guard psnr.allSatisfy({ $0 >= composePeerMinimumPSNR }) else {
                        throw PeerFailure(description: "FFmpeg '\(description)' does not draw RawFX's picture: \(check) "
                            + "(expected at least \(Int(composePeerMinimumPSNR)) dB)")
                    }
                    standardError("bench: \(spec.name): FFmpeg's picture checked: \(check)")
                    references.append(.init(short: "ffmpeg", label: "FFmpeg libavfilter '\(description)', one thread (\(check))",
                                            workload: ffmpeg, peer: .ffmpeg))
                }
                references.append(.init(short: "floor", label: ComposeFloor.summary, workload: ComposeFloor(spec, feed: feed),
                                        peer: .floor))
                references.append(.init(short: "2 threads", label: "the same compose with RawFXThreadPool.threadCount = 2",
                                        workload: two, threads: 2))
                return .init(chain: "compositor \(spec.layout.name), \(spec.inputs.count) inputs -> \(spec.width)x\(spec.height)",
                             engine: engine, direct: nil, filterCount: 1,
                             references: references + BenchCase.ceilingReferences())
            })
    }
}

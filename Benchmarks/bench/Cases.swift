// The benchmark cases: what the engine runs, and what the direct path runs for comparison.
//
// Adding a case: a name, the filters it needs (so a missing .so is named before anything runs),
// and a `make` closure returning the engine path (`EngineVideo` or `EngineAudio` around a chain
// string) and the direct path (`DirectVideo` steps over libyuv, or a `Workload` of your own). A
// workload's `run(i)` processes unit `i` and must not allocate (what it allocates is counted and
// shown). Keep the direct path doing exactly what the plugin does; alternatives go in
// `references`. A reference tagged with a `peer` (`.ffmpeg`, `.copy`, ...) gives the case its
// `vs_<peer>` figure; `ffmpegReferences(context, "<graph>", pool:, sameAs:)` adds an FFmpeg row
// under --peers, checked against a libyuv step before it is timed; a reference with `threads` is
// a second engine path at that thread count and gives the case its `speedup`. Compositor cases
// (ComposeCases.swift) are a `ComposeSpec`: output size, layout, input sizes.
import CBenchPeers
import CLibYUV
import Foundation
import RawFX
import RawFXSDK

/// Shared inputs: the plugin registry, frame pools by size (one size kept at a time), the logo.
final class BenchContext {
    let options: Options
    let registry: PluginRegistry
    private var pool: FramePool?
    private var audioPools: [String: AudioPool] = [:]
    private var logoStore: Logo?
    private var logoPlanesStore: LogoPlanes?
    /// The compose cases' pools, one per input size, kept across those cases (they share the
    /// 640x360 pool) and released by `finish`.
    private var composePools: [String: FramePool] = [:]

    init(options: Options, registry: PluginRegistry) {
        self.options = options
        self.registry = registry
    }

    /// The pool of input frames of this size; the previous size's pool is released first so
    /// that two cold pools never sit in memory together.
    func framePool(width: Int, height: Int) -> FramePool {
        if let pool, pool.format.width == width, pool.format.height == height { return pool }
        pool = nil
        let format = VideoFormat(width: width, height: height)
        let made = FramePool(width: width, height: height, count: options.poolFrames(frameBytes: format.packedByteCount))
        pool = made
        return made
    }

    /// A cold pool of this size for the compose cases (the single-size pool is released first).
    func composePool(width: Int, height: Int) -> FramePool {
        pool = nil
        let key = "\(width)x\(height)"
        if let made = composePools[key] { return made }
        let format = VideoFormat(width: width, height: height)
        let made = FramePool(width: width, height: height, count: options.poolFrames(frameBytes: format.packedByteCount))
        composePools[key] = made
        return made
    }

    func audioPool(sampleRate: Int, multiple: Int) -> AudioPool {
        let key = "\(sampleRate)/\(multiple)"
        if let made = audioPools[key] { return made }
        let made = AudioPool(sampleRate: sampleRate, seconds: 4, multiple: multiple)
        audioPools[key] = made
        return made
    }

    /// `--peers` was given and FFmpeg loaded (`FFmpegPeer.availability` says why not).
    var peersEnabled: Bool { options.peers && FFmpegPeer.isAvailable }

    /// The logo as I420 planes and premultiplied alpha, for libyuv's and FFmpeg's blends.
    func logoPlanes() throws -> LogoPlanes {
        if let logoPlanesStore { return logoPlanesStore }
        let made = LogoPlanes(logo: try logo(), opacity: WatermarkPlacement.opacity)
        logoPlanesStore = made
        return made
    }

    func logo() throws -> Logo {
        if let logoStore { return logoStore }
        let made = try Logo.make()
        logoStore = made
        return made
    }

    /// Frees the frame pool and deletes the temporary logo PNG (exit() runs no deinit).
    func finish() {
        pool = nil
        composePools = [:]
        logoStore?.remove()
    }
}

struct Resolution {
    let name: String
    let width: Int
    let height: Int
    static let p240 = Resolution(name: "240p", width: 320, height: 240)
    static let p360 = Resolution(name: "360p", width: 640, height: 360)
    static let p480 = Resolution(name: "480p", width: 640, height: 480)
    static let p540 = Resolution(name: "540p", width: 960, height: 540)
    static let p720 = Resolution(name: "720p", width: 1280, height: 720)
    static let p1080 = Resolution(name: "1080p", width: 1920, height: 1080)
}

struct BenchCase {
    enum Kind: String { case video, audio }
    let name: String
    let kind: Kind
    /// Filter ids the engine chain needs (to name a missing .so before running).
    let filters: [String]
    /// What the unit of p50/p99 is for the engine path.
    let unit: String
    let summary: String
    /// What the direct path does, or nil when the case has none (the null chains).
    let directSummary: String?
    let make: (BenchContext) throws -> Built

    struct Built {
        var chain: String
        var engine: Workload
        var direct: Workload?
        var sampleRate: Int?
        /// Filters in the engine chain (for the per-filter figure of pass-through chains).
        var filterCount: Int
        /// Further direct variants measured in the same interleave, shown but not in the ratio.
        var references: [Reference] = []
    }

    struct Reference {
        /// A few characters for the table's path column.
        var short: String
        var label: String
        var workload: Workload
        /// What the case reports this row as (`vs_ffmpeg`, `vs_copy`, …), if anything.
        var peer: Peer? = nil
        /// The engine's thread count on this path, for a threaded case's second engine path.
        var threads: Int? = nil
        /// A ceiling path (ParallelCeiling, MemoryCeiling) at this many threads, not the case's work.
        var ceilingThreads: Int? = nil
        var ceilingKind: CeilingKind? = nil
    }

    enum CeilingKind { case arithmetic, memory }

    /// The machine's 2-thread ceilings in the same rounds as a threaded case: arithmetic
    /// (ParallelCeiling) and a cold copy (MemoryCeiling), each at 1 and 2 threads.
    static func ceilingReferences() -> [Reference] {
        [1, 2].map { n in
            Reference(short: "ceiling \(n)", label: "SIMD arithmetic in L1 through the engine's pool at \(n) thread\(n == 1 ? "" : "s") "
                          + "(\(ParallelCeiling.jobCount) jobs)",
                      workload: ParallelCeiling(threads: n), ceilingThreads: n, ceilingKind: .arithmetic)
        } + [1, 2].map { n in
            Reference(short: "memory \(n)", label: "a cold 1080p frame copied through the engine's pool at \(n) thread\(n == 1 ? "" : "s") "
                          + "(\(MemoryCeiling.jobCount) jobs)",
                      workload: MemoryCeiling(threads: n), ceilingThreads: n, ceilingKind: .memory)
        }
    }
}

/// Logo placement used by every watermark case: 400×100, 32 px from the top-right corner,
/// at 80 % opacity (so both the logo's own alpha and the opacity multiply in).
enum WatermarkPlacement {
    static let width = 400
    static let height = 100
    static let margin = 32
    static let opacity = 0.8
    static func x(frameWidth: Int) -> Int { frameWidth - width - margin }
    static let y = margin
}

func videoCases() -> [BenchCase] {
    var cases: [BenchCase] = []
    let resolutions = [Resolution.p720, Resolution.p1080]

    func engine(_ context: BenchContext, _ chain: String, _ r: Resolution) throws -> EngineVideo {
        let pool = context.framePool(width: r.width, height: r.height)
        return try EngineVideo(chain: VideoChain(chain, registry: context.registry), pool: pool)
    }

    for r in resolutions {
        cases.append(BenchCase(
            name: "watermark-\(r.name)", kind: .video, filters: ["watermark"], unit: "frame",
            summary: "watermark: \(WatermarkPlacement.width)x\(WatermarkPlacement.height) RGBA logo blended in place on \(r.name) I420",
            directSummary: DirectBlend.summary,
            make: { context in
                let logo = try context.logo()
                let chain = watermarkChain(logo: logo, frameWidth: r.width)
                let e = try engine(context, chain, r)
                let d = DirectVideo(steps: [DirectBlend(logo: logo, x: WatermarkPlacement.x(frameWidth: r.width),
                                                        y: WatermarkPlacement.y, opacity: WatermarkPlacement.opacity)],
                                    pool: e.pool)
                let reference = DirectVideo(steps: [LibyuvBlend(logo: try context.logoPlanes(),
                                                                x: WatermarkPlacement.x(frameWidth: r.width), y: WatermarkPlacement.y)],
                                            pool: e.pool)
                let raw = try RawABIVideo([("watermark", watermarkParameters(logo: logo, frameWidth: r.width))],
                                          pool: e.pool, registry: context.registry)
                return .init(chain: chain, engine: e, direct: d, filterCount: 1,
                             references: [.init(short: "libyuv", label: LibyuvBlend.summary, workload: reference, peer: .libyuv),
                                          .init(short: "raw-abi", label: RawABIVideo.summary, workload: raw)]
                                 + (try ffmpegReferences(context, overlayGraph(frameWidth: r.width), pool: e.pool, logo: true)))
            }))
    }

    // The ratios conferencing uses (issue 11), then sizes outside the fixed ratios that apps ask
    // for (the any-ratio kernels): 854x480 "480p", a 5:6 step, a gallery tile, upscales of
    // received video to a larger tile, and 1080p to gallery thumbnails past 4:1 (4.5:1, 6:1).
    // Each in bilinear and box.
    let wide480 = Resolution(name: "854x480", width: 854, height: 480)
    let tile240 = Resolution(name: "426x240", width: 426, height: 240)
    let scales: [(Resolution, Resolution)] = [
        (.p1080, .p720), (.p1080, .p360), (.p720, .p360), (.p720, .p540), (.p480, .p240),
        (.p720, wide480), (.p1080, wide480), (.p1080, Resolution(name: "1600x900", width: 1600, height: 900)),
        (.p720, tile240), (.p540, .p720), (.p360, .p540),
        (.p1080, tile240), (.p1080, Resolution(name: "180p", width: 320, height: 180)),
    ]
    for (from, to) in scales {
        for (filterName, mode) in [("bilinear", kFilterBilinear), ("box", kFilterBox)] {
            cases.append(BenchCase(
                name: "scale-\(filterName)-\(from.name)-\(to.name)", kind: .video, filters: ["scale"], unit: "frame",
                summary: "scale \(from.width)x\(from.height) -> \(to.width)x\(to.height), filter=\(filterName)",
                directSummary: "libyuv I420Scale(\(filterName == "box" ? "kFilterBox" : "kFilterBilinear"))",
                make: { context in
                    let chain = "scale=width=\(to.width):height=\(to.height):filter=\(filterName):mode=stretch"
                    let e = try engine(context, chain, from)
                    let d = DirectVideo(steps: [DirectScale(width: to.width, height: to.height, filter: mode)], pool: e.pool)
                    var references: [BenchCase.Reference] = []
                    if context.peersEnabled {
                        // swscale's counterpart of each libyuv filter, and its fastest bilinear beside.
                        let algorithms = filterName == "box"
                            ? [(BENCH_PEERS_SWS_AREA, Peer.ffmpeg)]
                            : [(BENCH_PEERS_SWS_BILINEAR, Peer.ffmpeg), (BENCH_PEERS_SWS_FAST_BILINEAR, Peer.ffmpegFastBilinear)]
                        for (algorithm, peer) in algorithms {
                            let step = try FFmpegScale(from: e.pool.format, width: to.width, height: to.height, algorithm: algorithm)
                            try checkPeer(FFmpegScale.label(algorithm), pool: e.pool,
                                          step: DirectScale(width: to.width, height: to.height, filter: mode), exact: false,
                                          peer: { step.apply($0, $1) })
                            references.append(.init(short: peer == .ffmpeg ? "ffmpeg" : "ffmpeg-fast", label: FFmpegScale.label(algorithm),
                                                    workload: DirectVideo(steps: [step], pool: e.pool), peer: peer))
                        }
                    }
                    return .init(chain: chain, engine: e, direct: d, filterCount: 1, references: references)
                }))
        }
    }

    for degrees in [90, 270, 180] {
        for r in resolutions {
            cases.append(BenchCase(
                name: "rotate\(degrees)-\(r.name)", kind: .video, filters: ["rotate"], unit: "frame",
                summary: "rotate \(r.name) by \(degrees) degrees",
                directSummary: degrees == 180 ? "libyuv I420Mirror writing the destination bottom up (what the plugin calls)"
                                              : "libyuv I420Rotate(kRotate\(degrees))",
                make: { context in
                    let chain = "rotate=angle=\(degrees)"
                    let e = try engine(context, chain, r)
                    let d = DirectVideo(steps: [DirectRotate(degrees: degrees)], pool: e.pool)
                    var references: [BenchCase.Reference] = []
                    if degrees == 180 {
                        references.append(.init(short: "rotate180", label: "libyuv I420Rotate(kRotate180), the obvious call",
                                                workload: DirectVideo(steps: [DirectRotate180Naive()], pool: e.pool)))
                        references.append(copyReference(e.pool))
                    }
                    // transpose=1 is clockwise, 2 counter-clockwise; a half turn is two flips.
                    let graph = [90: "transpose=1", 270: "transpose=2", 180: "hflip,vflip"][degrees]!
                    references += try ffmpegReferences(context, graph, pool: e.pool, sameAs: DirectRotate(degrees: degrees))
                    return .init(chain: chain, engine: e, direct: d, filterCount: 1, references: references)
                }))
        }
    }

    for vertical in [false, true] {
        for r in resolutions {
            cases.append(BenchCase(
                name: "mirror\(vertical ? "-vertical" : "")-\(r.name)", kind: .video, filters: ["mirror"], unit: "frame",
                summary: "mirror \(r.name) \(vertical ? "top to bottom" : "left to right")",
                directSummary: vertical ? "libyuv I420Copy writing the destination bottom up (what the plugin calls)" : "libyuv I420Mirror",
                make: { context in
                    let chain = vertical ? "mirror=vertical=true" : "mirror"
                    let e = try engine(context, chain, r)
                    let d = DirectVideo(steps: [DirectMirror(vertical: vertical)], pool: e.pool)
                    // libavfilter's vflip moves no pixels (its output is a view with negative
                    // strides), so its output is copied into a frame buffer, as RawFX's is.
                    let references = [copyReference(e.pool)]
                        + (try ffmpegReferences(context, vertical ? "vflip" : "hflip", pool: e.pool, copyOutput: vertical,
                                                sameAs: DirectMirror(vertical: vertical)))
                    return .init(chain: chain, engine: e, direct: d, filterCount: 1, references: references)
                }))
        }
    }

    for r in resolutions {
        let to = r.height == 1080 ? Resolution.p720 : Resolution.p360
        cases.append(BenchCase(
            name: "chain-\(r.name)", kind: .video, filters: ["watermark", "scale", "rotate"], unit: "frame",
            summary: "watermark -> scale \(to.width)x\(to.height) bilinear -> rotate 90 on \(r.name)",
            directSummary: "the blend, I420Scale and I420Rotate in sequence through two buffers",
            make: { context in
                let logo = try context.logo()
                let chain = watermarkChain(logo: logo, frameWidth: r.width)
                    + ",scale=width=\(to.width):height=\(to.height):filter=bilinear:mode=stretch,rotate=angle=90"
                let e = try engine(context, chain, r)
                let d = DirectVideo(steps: [
                    DirectBlend(logo: logo, x: WatermarkPlacement.x(frameWidth: r.width), y: WatermarkPlacement.y,
                                opacity: WatermarkPlacement.opacity),
                    DirectScale(width: to.width, height: to.height, filter: kFilterBilinear),
                    DirectRotate(degrees: 90),
                ], pool: e.pool)
                let graph = overlayGraph(frameWidth: r.width) + ",scale=\(to.width):\(to.height):flags=bilinear,transpose=1"
                return .init(chain: chain, engine: e, direct: d, filterCount: 3,
                             references: try ffmpegReferences(context, graph, pool: e.pool, logo: true))
            }))
    }

    // Slice threading (issue 11, item 5): the same chain at 1 and at 2 engine threads, p50 per
    // frame on wall time (the workers' CPU time is not the measuring thread's, so the
    // per-round CPU-time ratio means nothing here).
    let threadedChains: [(name: String, filters: [String], chain: (BenchContext) throws -> String)] = [
        ("chain-1080p", ["watermark", "scale", "rotate"], { context in
            watermarkChain(logo: try context.logo(), frameWidth: 1920) + ",scale=width=1280:height=720:filter=bilinear:mode=stretch,rotate=angle=90"
        }),
        ("watermark-1080p", ["watermark"], { context in watermarkChain(logo: try context.logo(), frameWidth: 1920) }),
        ("scale-bilinear-1080p-720p", ["scale"], { _ in "scale=width=1280:height=720:filter=bilinear:mode=stretch" }),
        ("rotate90-1080p", ["rotate"], { _ in "rotate=angle=90" }),
        ("mirror-1080p", ["mirror"], { _ in "mirror" }),
    ]
    for threaded in threadedChains {
        cases.append(BenchCase(
            name: "threads-\(threaded.name)", kind: .video, filters: threaded.filters, unit: "frame",
            summary: "\(threaded.name) with the engine thread pool at 1 and at 2 threads; speedup = p50(1) / p50(2)",
            directSummary: nil,
            make: { context in
                let chain = try threaded.chain(context)
                let one = try engine(context, chain, .p1080)
                let two = try EngineVideo(chain: VideoChain(chain, registry: context.registry), pool: one.pool, threads: 2)
                return .init(chain: chain, engine: one, direct: nil, filterCount: threaded.filters.count,
                             references: [.init(short: "2 threads", label: "the same chain with RawFXThreadPool.threadCount = 2",
                                                workload: two, threads: 2)] + BenchCase.ceilingReferences())
            }))
    }

    for (count, r) in [(8, Resolution.p720), (8, Resolution.p1080), (1, Resolution.p720), (1, Resolution.p1080)] {
        cases.append(BenchCase(
            name: "null\(count)-\(r.name)", kind: .video, filters: ["null"], unit: "frame",
            summary: "\(count) x null (in-place pass-through): the engine's own cost per filter",
            directSummary: nil,
            make: { context in
                let chain = Array(repeating: "null", count: count).joined(separator: ",")
                let e = try engine(context, chain, r)
                let raw = try RawABIVideo(Array(repeating: ("null", []), count: count), pool: e.pool, registry: context.registry)
                return .init(chain: chain, engine: e, direct: nil, filterCount: count,
                             references: [.init(short: "raw-abi", label: RawABIVideo.summary, workload: raw)])
            }))
    }
    // Isolation (docs/isolation.md): the same chain in a helper process against in process;
    // the "direct" column is the in-process engine, so the difference is the added cost.
    for r in resolutions {
        for filter in ["null", "watermark"] {
            cases.append(BenchCase(
                name: "isolated-\(filter)-\(r.name)", kind: .video, filters: [filter], unit: "frame",
                summary: "\(filter)@isolate on \(r.name): one copy into shared memory, a futex round trip, the filter in rawfx-isolate",
                directSummary: "the same \(filter) in process (the engine)",
                make: { context in
                    let plain = filter == "null" ? "null" : watermarkChain(logo: try context.logo(), frameWidth: r.width)
                    let isolated = plain.replacingOccurrences(of: filter, with: "\(filter)@isolate(deadline=1000ms)", options: .anchored)
                    let e = try engine(context, isolated, r)
                    let inProcess = try engine(context, plain, r)
                    // The copy in split over the engine's pool (iso_proxy.c, copy_frame_in).
                    let twoThreads = try EngineVideo(chain: VideoChain(isolated, registry: context.registry), pool: e.pool, threads: 2)
                    return .init(chain: isolated, engine: e, direct: inProcess, filterCount: 1,
                                 references: [.init(short: "2 threads", label: "the same isolated stage with RawFXThreadPool.threadCount = 2 (the copy in split over the pool)",
                                                    workload: twoThreads, threads: 2)])
                }))
        }
        // At a camera's cadence (30 fps), with every thread idle between frames.
        cases.append(BenchCase(
            name: "isolated-watermark-\(r.name)-paced", kind: .video, filters: ["watermark"], unit: "frame",
            summary: "watermark@isolate on \(r.name), one frame every 33.3 ms (30 fps): the helper between frames as it would be",
            directSummary: "the same watermark in process (the engine), paced alike",
            make: { context in
                let plain = watermarkChain(logo: try context.logo(), frameWidth: r.width)
                let isolated = plain.replacingOccurrences(of: "watermark", with: "watermark@isolate(deadline=1000ms)", options: .anchored)
                let e = try engine(context, isolated, r)
                let inProcess = try engine(context, plain, r)
                return .init(chain: isolated + ", paced 30 fps", engine: Paced(e, intervalNanoseconds: 33_333_333),
                             direct: Paced(inProcess, intervalNanoseconds: 33_333_333), filterCount: 1)
            }))
        // A group: watermark and rotate in one helper (one copy in, one round trip) against
        // each in its own helper (two copies, two round trips), and against in process.
        cases.append(BenchCase(
            name: "isolated-group-watermark-rotate-\(r.name)", kind: .video, filters: ["watermark", "rotate"], unit: "frame",
            summary: "watermark,rotate=angle=90 both @isolate(group=fx) on \(r.name): one helper, the frame copied in once",
            directSummary: "the same two stages each @isolate (two helpers, two copies in, two round trips)",
            make: { context in
                let plain = watermarkChain(logo: try context.logo(), frameWidth: r.width) + ",rotate=angle=90"
                func isolated(_ option: String) -> String {
                    plain.replacingOccurrences(of: "watermark=", with: "watermark@isolate(\(option))=")
                        .replacingOccurrences(of: "rotate=", with: "rotate@isolate(\(option))=")
                }
                let grouped = isolated("group=fx,deadline=1000ms")
                let e = try engine(context, grouped, r)
                let perStage = try engine(context, isolated("deadline=1000ms"), r)
                let inProcess = try engine(context, plain, r)
                return .init(chain: grouped, engine: e, direct: perStage, filterCount: 2,
                             references: [.init(short: "in process", label: "the same chain in process (the engine)", workload: inProcess)])
            }))
        // Behind an out-of-place stage: its output (in the chain's memory, which the helper
        // cannot write) is copied in once, like a borrowed frame (scale to the same size: a
        // plane copy).
        cases.append(BenchCase(
            name: "isolated-scale-watermark-\(r.name)", kind: .video, filters: ["scale", "watermark"], unit: "frame",
            summary: "scale (same size) then watermark@isolate on \(r.name): scale's output copied in once, a futex round trip",
            directSummary: "the same scale,watermark in process (the engine)",
            make: { context in
                let scale = "scale=width=\(r.width):height=\(r.height)"
                let plain = scale + "," + watermarkChain(logo: try context.logo(), frameWidth: r.width)
                let isolated = plain.replacingOccurrences(of: ",watermark=", with: ",watermark@isolate(deadline=1000ms)=")
                let e = try engine(context, isolated, r)
                let inProcess = try engine(context, plain, r)
                return .init(chain: isolated, engine: e, direct: inProcess, filterCount: 2)
            }))
    }
    return cases
}

/// libyuv I420Copy of the frame (the memory floor), reported as `vs_copy`.
func copyReference(_ pool: FramePool) -> BenchCase.Reference {
    .init(short: "copy", label: DirectCopy.summary, workload: DirectVideo(steps: [DirectCopy()], pool: pool), peer: .copy)
}

/// With `--peers` and FFmpeg loaded: the libavfilter graph `description` on the same frames,
/// reported as `vs_ffmpeg`; otherwise none. `logo`: the graph has the [logo] input (overlay).
/// `sameAs`: the libyuv step whose output FFmpeg's must equal (checked once, before timing).
func ffmpegReferences(_ context: BenchContext, _ description: String, pool: FramePool, logo: Bool = false,
                      copyOutput: Bool = false, sameAs: DirectStep? = nil) throws -> [BenchCase.Reference] {
    guard context.peersEnabled else { return [] }
    let graph = try FFmpegGraph(description, pool: pool, logo: logo ? try context.logoPlanes() : nil, copyOutput: copyOutput)
    if let sameAs {
        try checkPeer("FFmpeg '\(description)'", pool: pool, step: sameAs, exact: true) { input, output in
            guard try graph.feed(input, copyTo: output) == 1 else {
                throw PeerFailure(description: "FFmpeg '\(description)' held its first frame back")
            }
        }
    }
    let label = "FFmpeg libavfilter '\(description)', one thread\(copyOutput ? ", its output copied with av_image_copy" : "")"
    return [.init(short: "ffmpeg", label: label, workload: graph, peer: .ffmpeg)]
}

/// FFmpeg's overlay of the watermark cases' logo, where the plugin puts it.
func overlayGraph(frameWidth: Int) -> String {
    "[in][logo]overlay=x=\(WatermarkPlacement.x(frameWidth: frameWidth)):y=\(WatermarkPlacement.y):format=yuv420"
}

func watermarkParameters(logo: Logo, frameWidth: Int) -> [(String, String)] {
    [("image", logo.path), ("x", "\(WatermarkPlacement.x(frameWidth: frameWidth))"), ("y", "\(WatermarkPlacement.y)"),
     ("opacity", "\(WatermarkPlacement.opacity)")]
}

func watermarkChain(logo: Logo, frameWidth: Int) -> String {
    "watermark=" + watermarkParameters(logo: logo, frameWidth: frameWidth).map { "\($0)=\($1)" }.joined(separator: ":")
}

func audioCases() -> [BenchCase] {
    var cases: [BenchCase] = []
    for rate in [48_000, 32_000] {
        let k = "\(rate / 1000)k"
        let block = rate / 100
        cases.append(BenchCase(
            name: "denoise-\(k)", kind: .audio, filters: ["denoise"], unit: "block",
            summary: "denoise=level=-30, \(k)Hz mono, fed exact 10 ms blocks (\(block) frames)",
            directSummary: "speex_preprocess_run on the same 10 ms blocks",
            make: { context in
                let pool = context.audioPool(sampleRate: rate, multiple: block)
                let chain = "denoise=level=-30"
                let e = try EngineAudio(chain: AudioChain(chain, registry: context.registry), pool: pool, chunkSizes: [block])
                return .init(chain: chain, engine: e, direct: DirectDenoise(pool: pool, level: -30),
                             sampleRate: rate, filterCount: 1)
            }))
        cases.append(BenchCase(
            name: "denoise-odd-\(k)", kind: .audio, filters: ["denoise"], unit: "chunk",
            summary: "denoise=level=-30, \(k)Hz mono, fed chunks of \(oddChunkSizes.map(String.init).joined(separator: "/")) frames (re-blocked to 10 ms)",
            directSummary: "speex_preprocess_run on exact 10 ms blocks of the same signal (no re-blocking)",
            make: { context in
                let cycle = oddChunkSizes.reduce(0, +)
                let multiple = cycle * block / gcd(cycle, block)
                let pool = context.audioPool(sampleRate: rate, multiple: multiple)
                let chain = "denoise=level=-30"
                let e = try EngineAudio(chain: AudioChain(chain, registry: context.registry), pool: pool, chunkSizes: oddChunkSizes)
                return .init(chain: chain, engine: e, direct: DirectDenoise(pool: pool, level: -30),
                             sampleRate: rate, filterCount: 1)
            }))
    }
    cases.append(BenchCase(
        name: "denoise-setparam-48k", kind: .audio, filters: ["denoise"], unit: "block",
        summary: "denoise at 48kHz mono in 10 ms blocks, its level set (-30/-20 alternately) before every block with setParameter",
        directSummary: "speex_preprocess_ctl(SET_NOISE_SUPPRESS) + speex_preprocess_run per block",
        make: { context in
            let pool = context.audioPool(sampleRate: 48_000, multiple: 480)
            let chain = "denoise=level=-30"
            let e = try EngineAudio(chain: AudioChain(chain, registry: context.registry), pool: pool, chunkSizes: [480],
                                    beforeChunk: { chain, i in try chain.control.setParameter("denoise.level", i % 2 == 0 ? "-20" : "-30") })
            return .init(chain: chain + " + setParameter per block", engine: e,
                         direct: DirectDenoise(pool: pool, level: -30, alternateLevel: -20), sampleRate: 48_000, filterCount: 1)
        }))
    // The speech models (issue #30). Back to back (offline), a block's time is the model's (dfn's
    // process waits for its worker's answer to the previous hop); paced like the SDK (real time), dfn's worker has
    // the 10 ms between blocks and what is left on the process thread is the hand-over.
    for (filter, what) in [("rnnoise", "rnnoise_process_frame"), ("dfn", "df_process_frame")] {
        for paced in [false, true] where !paced || filter == "dfn" {
            cases.append(BenchCase(
                name: "\(filter)-48k" + (paced ? "-paced" : ""), kind: .audio, filters: [filter], unit: "block",
                summary: "\(filter), 48kHz mono in 10 ms blocks" + (paced ? ", one every 10 ms" : ""),
                directSummary: "\(what) of the wheel's library on the same blocks, on this thread" + (paced ? ", paced alike" : ""),
                make: { context in
                    // Back to back is a file's pace: offline, dfn's process waits for its worker
                    // (rawfx/ext/render_mode.h); paced is a hook's: real time (main resets it).
                    RawFXRenderMode.isOffline = !paced
                    let pool = context.audioPool(sampleRate: 48_000, multiple: 480)
                    let e = try EngineAudio(chain: AudioChain(filter, registry: context.registry), pool: pool, chunkSizes: [480])
                    let direct = try DirectSpeechModel(pool: pool, filter: filter)
                    guard paced else { return .init(chain: filter, engine: e, direct: direct, sampleRate: 48_000, filterCount: 1) }
                    return .init(chain: filter + ", paced 10 ms", engine: Paced(e, intervalNanoseconds: 10_000_000),
                                 direct: Paced(direct, intervalNanoseconds: 10_000_000), sampleRate: 48_000, filterCount: 1)
                }))
        }
    }
    // Back to back, and one block every 10 ms as the SDK delivers them (the helper between
    // blocks as it would be); pipelined (one block late, never waited for) at that cadence.
    for (paced, pipelined) in [(false, false), (true, false), (true, true)] {
        cases.append(BenchCase(
            name: "isolated-denoise-48k" + (pipelined ? "-pipelined" : "") + (paced ? "-paced" : ""), kind: .audio,
            filters: ["denoise"], unit: "block",
            summary: "denoise@isolate\(pipelined ? "(pipeline)" : "")=level=-30, 48kHz mono in 10 ms blocks"
                + (paced ? ", one every 10 ms" : ": the block crosses to rawfx-isolate and back")
                + (pipelined ? ": each call posts its block and returns the previous one's answer" : ""),
            directSummary: "the same denoise in process (the engine)" + (paced ? ", paced alike" : ""),
            make: { context in
                let pool = context.audioPool(sampleRate: 48_000, multiple: 480)
                let chain = "denoise@isolate(deadline=1000ms\(pipelined ? ",pipeline" : ""))=level=-30"
                let e = try EngineAudio(chain: AudioChain(chain, registry: context.registry), pool: pool, chunkSizes: [480])
                let inProcess = try EngineAudio(chain: AudioChain("denoise=level=-30", registry: context.registry), pool: pool, chunkSizes: [480])
                guard paced else { return .init(chain: chain, engine: e, direct: inProcess, sampleRate: 48_000, filterCount: 1) }
                return .init(chain: chain + ", paced 10 ms", engine: Paced(e, intervalNanoseconds: 10_000_000),
                             direct: Paced(inProcess, intervalNanoseconds: 10_000_000), sampleRate: 48_000, filterCount: 1)
            }))
    }
    cases.append(BenchCase(
        name: "resample-44k1-48k", kind: .audio, filters: ["resample"], unit: "block",
        summary: "resample=rate=48000 (quality 5), 44.1 kHz mono in 10 ms blocks (441 frames)",
        directSummary: "speex_resampler_process_interleaved_int, quality 5, same blocks",
        make: { context in
            let pool = context.audioPool(sampleRate: 44_100, multiple: 441)
            let chain = "resample=rate=48000:quality=5"
            let e = try EngineAudio(chain: AudioChain(chain, registry: context.registry), pool: pool, chunkSizes: [441])
            return .init(chain: chain, engine: e, direct: DirectResample(pool: pool, outputRate: 48_000, quality: 5),
                         sampleRate: 44_100, filterCount: 1)
        }))
    return cases
}

func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

func allCases() -> [BenchCase] { videoCases() + receiveCases() + streamCases() + composeCases() + programCases() + audioCases() }

// swift run -c release bench [--quick] [--json] [--filter SUBSTRING] [--hot] [--peers]
//
// Throughput of RawFX's I420 and PCM hot paths against the same work done by calling libyuv,
// SpeexDSP or a plain loop directly, in the same process, in interleaved slices; with --peers
// also against FFmpeg on the same frames.
// See docs/benchmarks.md.
import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXMedia

#if canImport(Glibc)
import Glibc
#endif

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    if error.description.isEmpty {
        print(Options.usage)
        exit(0)
    }
    standardError("bench: \(error.description)\n\n\(Options.usage)")
    exit(2)
}

if let path = options.writeLogo {
    do {
        try PNGWriter.write(RGBAImage.rawFXLogo(width: WatermarkPlacement.width, height: WatermarkPlacement.height), to: path)
        print(path)
        exit(0)
    } catch {
        standardError("bench: \(error)")
        exit(1)
    }
}

let cases = allCases().filter { options.selects($0.name) }
if options.list {
    for c in allCases() { print("\(c.name)\t\(c.summary)") }
    exit(0)
}
guard !cases.isEmpty else {
    standardError("bench: no case matches \(options.filters.map { "'\($0)'" }.joined(separator: ", ")); --list shows them")
    exit(2)
}

let registry = PluginRegistry(environment: ProcessInfo.processInfo.environment)

// Which selected cases cannot run because a plugin is missing. With --quick (CI, which builds
// every plugin) that is a hard error before anything runs.
var missing: [String: String] = [:]
for c in cases {
    let problems = PluginFiles.problems(filters: c.filters, registry: registry)
    if !problems.isEmpty { missing[c.name] = problems.joined(separator: "; ") }
}
if options.quick && !missing.isEmpty {
    let problems = PluginFiles.problems(filters: Array(Set(cases.flatMap(\.filters))).sorted(), registry: registry)
    standardError("bench: missing plugins (--quick treats that as an error; CI builds every plugin):")
    for p in problems { standardError("  " + p) }
    exit(2)
}

let counterActive = rawfx_allocation_counter_active() != 0
if !counterActive {
    standardError("bench: warning: the allocation counter is not active in this process; allocation figures are meaningless")
}

let build = PluginFiles.isDebugBuild ? "debug" : "release"
if build == "debug" && !options.json {
    standardError("bench: note: a debug build measures unoptimized Swift; use swift run -c release bench for figures")
}

// --peers: which peers run, or why not (said once, before the cases).
var peers: [String: String] = [:]
if options.peers {
    switch FFmpegPeer.availability {
    case .success(let versions): peers["ffmpeg"] = versions
    case .failure(let failure):
        peers["ffmpeg"] = "unavailable: \(failure.description)"
        standardError("bench: --peers: \(failure.description); the cases run without FFmpeg")
    }
    peers["gstreamer"] = GStreamerPeer.note
}

let harnessCost = harnessOverheadNanoseconds()
let context = BenchContext(options: options, registry: registry)
var results: [CaseResult] = []
var poolBytes: [String: (frames: Int, bytes: Int)] = [:]

for c in cases {
    var result = CaseResult(name: c.name, kind: c.kind, summary: c.summary)
    if let problem = missing[c.name] {
        result.error = problem
        standardError("bench: \(c.name): cannot run: \(problem)")
        results.append(result)
        continue
    }
    standardError("bench: \(c.name) …")
    do {
        var built = try c.make(context)
        if options.aa {
            // A/A: a second engine chain of the same case takes the direct path's place.
            built.direct = try c.make(context).engine
            built.references = []
        }
        result.chain = built.chain
        result.filterCount = built.filterCount
        if let engine = built.engine as? EngineVideo {
            poolBytes["\(engine.pool.format.width)x\(engine.pool.format.height)"] = (engine.pool.count, engine.pool.totalBytes)
        }
        if let engine = built.engine as? EngineCompose {
            for pool in engine.feed.pools {
                poolBytes["\(pool.format.width)x\(pool.format.height)"] = (pool.count, pool.totalBytes)
            }
        }
        var paths: [Workload] = [built.engine]
        if let direct = built.direct { paths.append(direct) }
        paths += built.references.map(\.workload)
        let measured = try measure(paths, options: options, sampleRate: built.sampleRate)
        let figures = measured.figures
        result.measuredRatio = measured.ratio
        result.ratioQuartiles = measured.ratioQuartiles
        result.rounds = measured.rounds
        let threaded = built.references.contains { $0.threads != nil }
        result.paths.append(PathResult(role: .engine, label: "RawFX chain: \(built.chain)", unit: c.unit, figures: figures[0],
                                       threads: threaded ? (built.engine as? ThreadCounted)?.threads : nil))
        var next = 1
        if built.direct != nil {
            result.paths.append(PathResult(role: .direct, label: options.aa ? "A/A: a second engine chain" : c.directSummary ?? "direct",
                                           unit: c.kind == .audio ? "block" : "frame", figures: figures[1]))
            next = 2
        }
        for (i, reference) in built.references.enumerated() {
            // A path at more threads works partly off this thread: its CPU-time ratio means nothing.
            result.paths.append(PathResult(role: .reference, label: reference.label, short: reference.short,
                                           unit: c.kind == .audio ? "block" : "frame", figures: figures[next + i],
                                           engineOverThis: reference.threads == nil && reference.ceilingThreads == nil
                                               ? measured.ratios[next + i - 1] : nil,
                                           peer: reference.peer, threads: reference.threads,
                                           ceilingThreads: reference.ceilingThreads, ceilingKind: reference.ceilingKind))
        }
    } catch let error as ChainError {
        result.error = error.description
    } catch {
        result.error = "\(error)"
    }
    if let error = result.error { standardError("bench: \(c.name): failed: \(error)") }
    // A threaded case leaves the process-wide pool at its last setting; the next case starts at 1.
    RawFXThreadPool.threadCount = 1
    RawFXRenderMode.isOffline = false
    results.append(result)
}
context.finish()

let info = RunInfo(cpu: Report.cpuModel(), cpus: ProcessInfo.processInfo.activeProcessorCount,
                   loadAverage: Report.loadAverage(), build: build, options: options,
                   clockReadNanoseconds: clockReadNanoseconds(), harnessNanoseconds: harnessCost,
                   cpuPressure: Report.cpuPressure(), allocationCounterActive: counterActive,
                   poolBytes: poolBytes, peers: peers)
print(options.json ? Report.json(results, info: info) : Report.table(results, info: info), terminator: "")
if let path = options.jsonOut {
    do {
        try Report.json(results, info: info).write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
        standardError("bench: cannot write \(path): \(error)")
        exit(1)
    }
}

let failed = results.filter { $0.error != nil }
if !failed.isEmpty {
    standardError("bench: \(failed.count) case\(failed.count == 1 ? "" : "s") failed: \(failed.map(\.name).joined(separator: ", "))")
    exit(1)
}
exit(0)

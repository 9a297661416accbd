// Results: a table for people, JSON for machines.
import Foundation

struct PathResult {
    enum Role: String { case engine, direct, reference }
    var role: Role
    var label: String
    /// The table's path column for references.
    var short = ""
    var unit: String
    var figures: PathFigures
    /// Engine throughput / this path's, per-round median (not for the engine itself).
    var engineOverThis: Double?
    /// What the case reports this reference as (vs_ffmpeg, vs_copy, …).
    var peer: Peer?
    /// The engine's thread count on this path (threaded cases only).
    var threads: Int?
    /// The thread count and kind of a ceiling path (threaded cases only).
    var ceilingThreads: Int?
    var ceilingKind: BenchCase.CeilingKind?

    init(role: Role, label: String, short: String = "", unit: String, figures: PathFigures, engineOverThis: Double? = nil,
         peer: Peer? = nil, threads: Int? = nil, ceilingThreads: Int? = nil, ceilingKind: BenchCase.CeilingKind? = nil) {
        self.role = role
        self.label = label
        self.short = short
        self.unit = unit
        self.figures = figures
        self.engineOverThis = engineOverThis
        self.peer = peer
        self.threads = threads
        self.ceilingThreads = ceilingThreads
        self.ceilingKind = ceilingKind
    }
}

struct CaseResult {
    var name: String
    var kind: BenchCase.Kind
    var summary: String
    var chain: String?
    var paths: [PathResult] = []
    var filterCount = 1
    var error: String?
    /// From the measurement: median per-round engine/direct throughput (see MeasureResult).
    var measuredRatio: Double?
    var ratioQuartiles: (Double, Double)?
    var rounds = 0

    var engine: PathFigures? { paths.first { $0.role == .engine }?.figures }
    var direct: PathFigures? { paths.first { $0.role == .direct }?.figures }

    /// Engine throughput / direct throughput (video: frames/s; audio: audio frames/s), the
    /// median of the per-round ratios.
    var ratio: Double? { direct == nil ? nil : measuredRatio }

    /// Engine ns per frame divided by the filters in the chain (pass-through chains).
    var nanosecondsPerFilter: Double? {
        guard let e = engine, filterCount > 0, speedup == nil else { return nil }
        return e.nanosecondsPerThroughputUnit / Double(filterCount)
    }

    /// `vs_<peer>` per tagged reference: the peer's time / RawFX's time (per-round median of
    /// engine throughput / peer throughput, on thread CPU time).
    var versus: [(peer: Peer, ratio: Double)] {
        paths.compactMap { p in
            guard p.role == .reference, let peer = p.peer, let r = p.engineOverThis, r.isFinite else { return nil }
            return (peer, r)
        }
    }

    func versus(_ peer: Peer) -> Double? { versus.first { $0.peer == peer }?.ratio }

    /// The engine path and the path with the most threads, in a threaded case.
    private var threadedPair: (one: PathResult, most: PathResult)? {
        guard let e = paths.first(where: { $0.role == .engine }), let one = e.threads,
              let most = paths.filter({ $0.threads != nil }).max(by: { $0.threads! < $1.threads! }), most.threads! > one,
              most.figures.p50Nanoseconds > 0 else { return nil }
        return (e, most)
    }

    /// Threaded cases: p50 per frame (wall time) of the engine at its thread count / p50 of the
    /// path with the most threads, over the whole case.
    var speedup: (threads: [Int], value: Double)? {
        guard let (e, most) = threadedPair else { return nil }
        return ([e.threads!, most.threads!], Double(e.figures.p50Nanoseconds) / Double(most.figures.p50Nanoseconds))
    }

    /// The same ratio taken round by round (each round's two slices run back to back: the p50
    /// of each slice, paired), the median over rounds. It cancels a machine that changes
    /// between rounds, but a slice of a few units has a coarse p50 (a `streams-*` slice holds
    /// 6-12 units, the first of which waits for nothing), and there it can stray far (7.9
    /// where the whole-case ratio was 1.7), so it is a cross-check in the JSON, not the figure.
    var speedupPaired: Double? {
        guard let (e, most) = threadedPair else { return nil }
        return e.figures.roundPairedP50Ratio(over: most.figures)
    }

    /// The ceiling paths of `kind` at the speedup's two thread counts.
    private func ceilingPair(_ kind: BenchCase.CeilingKind) -> (low: PathResult, high: PathResult)? {
        guard let threads = speedup?.threads,
              let low = paths.first(where: { $0.ceilingKind == kind && $0.ceilingThreads == threads[0] }),
              let high = paths.first(where: { $0.ceilingKind == kind && $0.ceilingThreads == threads[1] }),
              high.figures.p50Nanoseconds > 0 else { return nil }
        return (low, high)
    }

    /// The machine's ceiling for `speedup` in the same rounds: p50 of the ParallelCeiling path
    /// at 1 thread / p50 at the speedup's thread count, taken as `speedup` is.
    var ceiling: Double? { ceiling(.arithmetic) }

    /// The same for MemoryCeiling: how much more a cold copy got from two threads than one.
    var memoryCeiling: Double? { ceiling(.memory) }

    func ceiling(_ kind: BenchCase.CeilingKind) -> Double? {
        guard let (low, high) = ceilingPair(kind) else { return nil }
        return Double(low.figures.p50Nanoseconds) / Double(high.figures.p50Nanoseconds)
    }

    /// The arithmetic ceiling taken round by round, as `speedupPaired`.
    var ceilingPaired: Double? {
        guard let (low, high) = ceilingPair(.arithmetic) else { return nil }
        return low.figures.roundPairedP50Ratio(over: high.figures)
    }

    /// speedup / ceiling: the share of what the machine allowed that the case turned into speed.
    var speedupOfCeiling: Double? {
        guard let s = speedup?.value, let c = ceiling, c > 0 else { return nil }
        return s / c
    }

    /// Heap allocations per call on the engine path (engine and plugins, libraries inside
    /// them included); > 0 is flagged in the report.
    var engineAllocationsPerCall: Double? { engine.map { $0.allocationsPerUnit } }
    var engineAllocates: Bool { (engine?.allocations ?? 0) > 0 }

    /// Allocations per unit the engine makes beyond what the same library calls make directly.
    var engineExtraAllocationsPerUnit: Double? {
        guard let e = engine else { return nil }
        guard let d = direct else { return e.allocationsPerUnit }
        // Per 10 ms block for audio (units differ for odd chunks), per frame for video.
        let eBlocks = e.blocksPerSecond.map { $0 * e.seconds } ?? Double(e.units)
        let dBlocks = d.blocksPerSecond.map { $0 * d.seconds } ?? Double(d.units)
        guard eBlocks > 0, dBlocks > 0 else { return nil }
        return Double(e.allocations) / eBlocks - Double(d.allocations) / dBlocks
    }
}

struct RunInfo {
    var cpu: String
    var cpus: Int
    var loadAverage: [Double]
    var build: String
    var options: Options
    var clockReadNanoseconds: Double
    var harnessNanoseconds: Double
    var cpuPressure: Double?
    var allocationCounterActive: Bool
    var poolBytes: [String: (frames: Int, bytes: Int)]
    /// --peers: "ffmpeg" and "gstreamer" with their versions, or why they did not run.
    var peers: [String: String]
}

enum Report {
    static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }

    /// /proc/pressure/cpu "some avg10": % of the last 10 s in which some task waited for a CPU.
    static func cpuPressure() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/pressure/cpu", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("some") {
            for field in line.split(separator: " ") where field.hasPrefix("avg10=") { return Double(field.dropFirst(6)) }
        }
        return nil
    }

    /// From null1-R and null8-R: the marginal cost of one more filter, and the fixed cost.
    static func derivedNullFigures(_ results: [CaseResult], harness: Double) -> [(resolution: String, marginal: Double, fixed: Double)] {
        var out: [(String, Double, Double)] = []
        for one in results where one.name.hasPrefix("null1-") && one.error == nil {
            let resolution = String(one.name.dropFirst("null1-".count))
            guard let eight = results.first(where: { $0.name == "null8-" + resolution && $0.error == nil }),
                  let t1 = one.engine?.nanosecondsPerUnit, let t8 = eight.engine?.nanosecondsPerUnit else { continue }
            let marginal = (t8 - t1) / 7
            out.append((resolution, marginal, t1 - marginal - harness))
        }
        return out
    }

    static func loadAverage() -> [Double] {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return [] }
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    // MARK: - Table

    static func table(_ results: [CaseResult], info: RunInfo) -> String {
        var out = ""
        let o = info.options
        let pools = info.poolBytes.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value.frames) frames, \(Report.format(Double($0.value.bytes) / 1_048_576, 0)) MiB" }
            .joined(separator: "; ")
        out += "RawFX bench: \(info.build) build, \(o.cacheState) input (\(pools.isEmpty ? "no video" : pools); "
        out += "L3 \(CacheInfo.lastLevelBytes >> 20) MiB), "
        out += "\(format(o.caseSeconds, 1)) s per case, \(format(Double(o.sliceNanoseconds) / 1e6, 0)) ms slices\n"
        out += "CPU: \(info.cpu), \(info.cpus) CPUs, load \(info.loadAverage.map { format($0, 2) }.joined(separator: " "))"
        if let p = info.cpuPressure { out += "; CPU pressure (PSI some avg10) \(format(p, 1)) %" }
        out += "\nclock_gettime \(format(info.clockReadNanoseconds, 1)) ns; harness cost per unit \(format(info.harnessNanoseconds, 1)) ns"
        if o.aa { out += "; A/A CHECK: 'direct' is a second engine chain" }
        if !info.allocationCounterActive { out += "; WARNING: allocation counter inactive, alloc figures are meaningless" }
        out += "\n"
        if !info.peers.isEmpty {
            out += "peers: FFmpeg \(info.peers["ffmpeg"] ?? "-"); \(info.peers["gstreamer"] ?? "")\n"
        }
        out += "rate: frames/s (video) or 10 ms blocks/s (audio); ns/unit per frame or per 10 ms block; "
        out += "p50/p99 per process call; alloc: heap allocations per frame/call in steady state;\n"
        out += "ratio: engine/direct throughput, median of interleaved rounds on thread CPU time; "
        out += "off-CPU: share of wall time the thread was preempted;\n"
        out += "vs_ffmpeg, vs_copy: FFmpeg's / a plain frame copy's time over RawFX's (>1: RawFX faster), same rounds; "
        out += "vs_floor (compose): reading every input byte once and writing the output once, over RawFX's time;\n"
        out += "speedup: p50 at 1 thread / p50 at 2; alloc '!': the engine path allocates per call;\n"
        out += "ceiling 1, ceiling 2: SIMD arithmetic in L1 through the engine's pool at 1 and 2 threads in the same rounds; "
        out += "memory 1, memory 2: a cold 1080p frame copied the same way; 'max': their speedup, what the machine gave those rounds\n\n"
        let header = ["case", "path", "rate", "ns/unit", "p50 µs", "p99 µs", "alloc", "RT x", "ratio", "vs_ffmpeg", "vs_copy",
                      "vs_floor", "speedup", "off-CPU"]
        var rows: [[String]] = [header]
        var notes: [String] = []
        for r in results {
            if let error = r.error {
                rows.append([r.name, "FAILED"] + Array(repeating: "", count: header.count - 2))
                notes.append("\(r.name): \(error)")
                continue
            }
            for (i, p) in r.paths.enumerated() {
                let f = p.figures
                let perCall = p.figures.units > 0 ? Double(p.figures.allocations) / Double(p.figures.units) : 0
                let name: String
                switch p.role {
                case .engine: name = p.unit == "chunk" ? "engine/chunk" : "engine"
                case .direct: name = "direct"
                case .reference: name = p.short
                }
                rows.append([
                    i == 0 ? r.name : "",
                    name,
                    format(f.throughput, 0),
                    format(f.nanosecondsPerThroughputUnit, 0),
                    format(Double(f.p50Nanoseconds) / 1000, 1),
                    format(Double(f.p99Nanoseconds) / 1000, 1),
                    allocationText(perCall) + (p.role == .engine && f.allocations > 0 ? " !" : ""),
                    f.realtimeFactor.map { format($0, 0) } ?? "",
                    p.role == .engine ? (r.ratio.map { format($0, 3) } ?? "") : "",
                    p.role == .engine ? (r.versus(.ffmpeg).map { format($0, 2) } ?? "") : "",
                    p.role == .engine ? (r.versus(.copy).map { format($0, 2) } ?? "") : "",
                    p.role == .engine ? (r.versus(.floor).map { format($0, 2) } ?? "") : "",
                    speedupCell(r, p),
                    format(f.descheduled * 100, 0) + " %",
                ])
                if p.role == .reference, p.ceilingThreads == nil {
                    let relative = p.engineOverThis.map { "; engine/ref \(format($0, 3))" } ?? ""
                    notes.append("\(r.name) \(p.short): \(p.label)\(relative)")
                }
            }
            if let speedup = r.speedup, let ceiling = r.ceiling, let share = r.speedupOfCeiling {
                let memory = r.memoryCeiling.map { " and a cold copy \(format($0, 2))" } ?? ""
                notes.append("\(r.name): speedup \(format(speedup.value, 2)) where the machine gave plain arithmetic "
                    + "\(format(ceiling, 2))\(memory) in the same rounds (\(format(share * 100, 0)) % of the arithmetic)")
            }
            if r.direct == nil, let perFilter = r.nanosecondsPerFilter {
                notes.append("\(r.name): \(format(perFilter, 0)) ns per filter per frame (no direct path: the engine's own cost)")
            }
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        for row in rows {
            var line = ""
            for (i, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                line += i < 2 ? cell + pad : pad + cell
                line += i == row.count - 1 ? "" : "  "
            }
            out += line.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) + "\n"
        }
        let allocating = results.filter(\.engineAllocates)
        if !allocating.isEmpty {
            notes.append("ALLOCATES per call on the engine path (engine + plugins): "
                + allocating.map { "\($0.name) \(allocationText($0.engineAllocationsPerCall ?? 0))" }.joined(separator: ", "))
        }
        for d in derivedNullFigures(results, harness: info.harnessNanoseconds) {
            notes.append("\(d.resolution): null chains: \(format(d.marginal, 0)) ns per added filter per frame (null8 - null1) / 7; "
                + "\(format(d.fixed, 0)) ns fixed per frame (null1 minus one filter minus the harness)")
        }
        if !notes.isEmpty { out += "\n" + notes.joined(separator: "\n") + "\n" }
        return out
    }

    /// The speedup column: the speedup on the engine row, the ceiling on the ceiling row at
    /// the most threads, else the row's thread count.
    static func speedupCell(_ r: CaseResult, _ p: PathResult) -> String {
        if p.role == .engine { return r.speedup.map { format($0.value, 2) } ?? "" }
        if let n = p.ceilingThreads, let kind = p.ceilingKind, n == r.speedup?.threads.last, let ceiling = r.ceiling(kind) {
            return format(ceiling, 2) + " max"
        }
        if let n = p.threads ?? p.ceilingThreads { return "\(n) thr" }
        return ""
    }

    static func allocationText(_ perUnit: Double) -> String {
        if perUnit == 0 { return "0" }
        if perUnit == perUnit.rounded() { return format(perUnit, 0) }
        return format(perUnit, 2)
    }

    static func format(_ x: Double, _ decimals: Int) -> String {
        guard x.isFinite else { return "-" }
        return String(format: "%.\(decimals)f", x)
    }

    // MARK: - JSON

    static func json(_ results: [CaseResult], info: RunInfo) -> String {
        var cases: [[String: Any]] = []
        for r in results {
            var c: [String: Any] = ["name": r.name, "kind": r.kind.rawValue, "summary": r.summary]
            if let chain = r.chain { c["chain"] = chain }
            if let error = r.error {
                c["error"] = error
                cases.append(c)
                continue
            }
            for p in r.paths where p.role != .reference {
                c[p.role.rawValue] = pathJSON(p)
            }
            let references = r.paths.filter { $0.role == .reference }.map(pathJSON)
            if !references.isEmpty { c["references"] = references }
            if let ratio = r.ratio, ratio.isFinite {
                c["ratio"] = ratio
                if let (lo, hi) = r.ratioQuartiles { c["round_spread_p25_p75"] = [lo, hi] }
            }
            for (peer, ratio) in r.versus { c["vs_" + peer.rawValue] = ratio }
            if let speedup = r.speedup {
                c["threads"] = speedup.threads
                c["speedup"] = speedup.value
            }
            if let paired = r.speedupPaired { c["speedup_paired"] = paired }
            if let ceiling = r.ceiling { c["ceiling"] = ceiling }
            if let paired = r.ceilingPaired { c["ceiling_paired"] = paired }
            if let memory = r.memoryCeiling { c["ceiling_memory"] = memory }
            if let share = r.speedupOfCeiling { c["speedup_of_ceiling"] = share }
            if let perCall = r.engineAllocationsPerCall { c["engine_allocs_per_call"] = perCall }
            c["engine_allocates"] = r.engineAllocates
            c["rounds"] = r.rounds
            if let extra = r.engineExtraAllocationsPerUnit, extra.isFinite { c["engine_extra_allocs_per_unit"] = extra }
            c["filters"] = r.filterCount
            if r.direct == nil, let perFilter = r.nanosecondsPerFilter { c["ns_per_filter"] = perFilter }
            cases.append(c)
        }
        let o = info.options
        let root: [String: Any] = [
            "tool": "rawfx-bench",
            "build": info.build,
            "cpu": info.cpu,
            "cpus": info.cpus,
            "load_average": info.loadAverage,
            "cache": o.cacheState,
            "pools": Dictionary(uniqueKeysWithValues: info.poolBytes.map { ($0.key, ["frames": $0.value.frames, "bytes": $0.value.bytes]) }),
            "last_level_cache_bytes": CacheInfo.lastLevelBytes,
            "seconds_per_case": o.caseSeconds,
            "slice_ms": Double(o.sliceNanoseconds) / 1e6,
            "quick": o.quick,
            "aa_check": o.aa,
            "clock_read_ns": info.clockReadNanoseconds,
            "harness_ns_per_unit": info.harnessNanoseconds,
            "cpu_pressure_some_avg10": info.cpuPressure ?? -1,
            "null_chain": derivedNullFigures(results, harness: info.harnessNanoseconds).map {
                ["resolution": $0.resolution, "marginal_ns_per_filter": $0.marginal, "fixed_ns_per_frame": $0.fixed] as [String: Any]
            },
            "alloc_counter_active": info.allocationCounterActive,
            "allocating_cases": results.filter(\.engineAllocates).map(\.name),
            "peers": info.peers,
            "cases": cases,
            "failed": results.filter { $0.error != nil }.map(\.name),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func pathJSON(_ p: PathResult) -> [String: Any] {
        let f = p.figures
        var d: [String: Any] = [
            "path": p.label,
            "name": p.role == .reference ? p.short : p.role.rawValue,
            "unit": p.unit,
            "units": f.units,
            "seconds": f.seconds,
            "slices": f.slices,
            "per_second": f.throughput,
            "ns_per_unit": f.nanosecondsPerThroughputUnit,
            "calls_per_second": f.unitsPerSecond,
            "ns_per_call": f.nanosecondsPerUnit,
            "p50_ns": f.p50Nanoseconds,
            "p99_ns": f.p99Nanoseconds,
            "max_ns": f.maxNanoseconds,
            "allocs_total": f.allocations,
            "descheduled": f.descheduled,
            "cpu_ns_per_call": f.cpuNanosecondsPerUnit,
            "allocs_per_call": f.units > 0 ? Double(f.allocations) / Double(f.units) : 0,
        ]
        if let rt = f.realtimeFactor { d["realtime_factor"] = rt }
        if let peer = p.peer { d["peer"] = peer.rawValue }
        if let threads = p.threads { d["threads"] = threads }
        if let ratio = p.engineOverThis, ratio.isFinite { d["engine_over_this"] = ratio }
        if let blocks = f.blocksPerSecond, blocks > 0 {
            d["allocs_per_block"] = Double(f.allocations) / (blocks * f.seconds)
        }
        return d
    }
}

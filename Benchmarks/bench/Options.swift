import Foundation

// Command-line options of `bench`. Plain CommandLine.arguments parsing: the target has no
// argument-parser dependency, and the options are few.

struct Options {
    /// Run each case a few hundred milliseconds (CI).
    var quick = false
    /// Print JSON instead of the table.
    var json = false
    /// Case-name substrings; a case runs when its name contains any of them (all when empty).
    var filters: [String] = []
    /// Distinct input frames cycled through; nil: cold, enough frames to hold twice the L3
    /// cache (every frame comes from DRAM, as fresh camera frames do). `--hot` is 1.
    var poolFrames: Int?
    /// Seconds per case, split between the engine and the direct path; nil: 2 (0.3 quick).
    var seconds: Double?
    /// Length of one interleaved slice in milliseconds; nil: 20 (10 quick).
    var sliceMilliseconds: Double?
    /// List the case names and exit.
    var list = false
    /// A/A check: the direct path is replaced by a second, identical engine chain, so every
    /// ratio shows the measurement's own noise (it should be 1.0).
    var aa = false
    /// Also write the JSON report to this file (the table still goes to stdout).
    var jsonOut: String?
    /// Write the benchmark logo PNG here and exit (for the FFmpeg/GStreamer comparisons).
    var writeLogo: String?
    /// Also run FFmpeg (libswscale, libavfilter) on the same frames in the same interleave.
    var peers = false

    var caseSeconds: Double { seconds ?? (quick ? 0.3 : 2.0) }
    var sliceNanoseconds: UInt64 { UInt64((sliceMilliseconds ?? (quick ? 10 : 20)) * 1_000_000) }
    var cacheState: String {
        switch poolFrames {
        case nil: return "cold"
        case 1: return "hot"
        case let n?: return "pool of \(n)"
        }
    }

    /// Frames in the pool for frames of `frameBytes`: the explicit count, or for cold input
    /// enough to fill twice the L3 cache (at least 8), so a frame has left the cache before
    /// it comes round again.
    func poolFrames(frameBytes: Int) -> Int {
        poolFrames ?? CacheInfo.coldPoolFrames(frameBytes: frameBytes)
    }

    static let usage = """
    usage: bench [--quick] [--json] [--json-out FILE] [--filter SUBSTRING]... [--hot | --pool N] [--seconds S] [--slice-ms MS] [--aa] [--peers] [--list] [--write-logo PATH]

    Throughput of RawFX's I420 and PCM hot paths, each against the same work calling libyuv,
    SpeexDSP or a plain loop directly, in the same process, in interleaved slices.

      --quick          each case runs about 0.3 s (CI: swift run -c release bench --quick)
      --json           machine-readable output: every ratio under "ratio", allocation counts
                       under keys containing "alloc"
      --json-out F     also write the JSON report to the file F (the table still goes to stdout)
      --filter S       run the cases whose name contains S (repeatable; comma-separated works too)
      --hot            one input frame, reused (stays in cache)
      --pool N         cycle through N distinct input frames (default: enough frames to fill twice
                       the last-level cache, so each frame comes from DRAM: cold)
      --seconds S      measuring time per case, split between the engine and the direct path
                       (default 2, quick 0.3)
      --slice-ms MS    length of one interleaved slice (default 20, quick 10)
      --aa             A/A check: compare the engine with a second, identical engine chain instead
                       of the direct path; every ratio should be 1.0 within the noise
      --peers          also time FFmpeg on the same frames in the same run (libswscale and libavfilter,
                       one thread, opened at run time) and report vs_ffmpeg = FFmpeg's time / RawFX's
                       time per case; without FFmpeg 5.1 installed it says why and runs the rest
      --list           print the case names and exit
      --write-logo P   write the watermark cases' 400x100 RGBA logo to the PNG file P and exit
                       (the same image for the FFmpeg and GStreamer comparisons)

    Plugins are loaded from the directory of this executable (and RAWFX_PLUGIN_PATH). Build them
    first: swift build -c release (or swift build for a debug bench).
    Exit status: 0 when every selected case ran, 1 when a case failed, 2 for a usage error or,
    with --quick, a missing plugin.
    """

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(name) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            // --name=value is accepted too.
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inline = String(argument[argument.index(after: eq)...])
            }
            func take() throws(UsageError) -> String {
                if let inline { return inline }
                return try value(name)
            }
            switch name {
            case "--quick": options.quick = true
            case "--json": options.json = true
            case "--hot": options.poolFrames = 1
            case "--list": options.list = true
            case "--aa": options.aa = true
            case "--peers": options.peers = true
            case "--write-logo": options.writeLogo = try take()
            case "--json-out": options.jsonOut = try take()
            case "--filter":
                options.filters += try take().split(separator: ",").map(String.init).filter { !$0.isEmpty }
            case "--pool":
                let text = try take()
                guard let n = Int(text), n >= 1, n <= 256 else {
                    throw UsageError(description: "--pool takes a frame count from 1 to 256, not '\(text)'")
                }
                options.poolFrames = n
            case "--seconds":
                let text = try take()
                guard let s = Double(text), s > 0, s <= 600 else {
                    throw UsageError(description: "--seconds takes a positive number of seconds, not '\(text)'")
                }
                options.seconds = s
            case "--slice-ms":
                let text = try take()
                guard let ms = Double(text), ms >= 0.1, ms <= 10_000 else {
                    throw UsageError(description: "--slice-ms takes milliseconds from 0.1 to 10000, not '\(text)'")
                }
                options.sliceMilliseconds = ms
            case "-h", "--help":
                throw UsageError(description: "")
            default:
                throw UsageError(description: "unknown option '\(argument)'")
            }
            index += 1
        }
        return options
    }

    func selects(_ caseName: String) -> Bool {
        filters.isEmpty || filters.contains { caseName.contains($0) }
    }
}

enum CacheInfo {
    /// Frames of `frameBytes` that fill twice the last-level cache (at least 8): cycled in
    /// order, a frame has left the cache before it comes round again.
    static func coldPoolFrames(frameBytes: Int) -> Int {
        max(8, (2 * lastLevelBytes + frameBytes - 1) / frameBytes)
    }

    /// The size of the largest CPU cache (sysfs), or 32 MiB when it cannot be read.
    static let lastLevelBytes: Int = {
        var best = 0
        for index in 0..<8 {
            let path = "/sys/devices/system/cpu/cpu0/cache/index\(index)/size"
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
            var scale = 1
            var digits = Substring(t)
            if t.hasSuffix("K") { scale = 1 << 10; digits = t.dropLast() }
            if t.hasSuffix("M") { scale = 1 << 20; digits = t.dropLast() }
            if let n = Int(digits) { best = max(best, n * scale) }
        }
        return best > 0 ? best : 32 << 20
    }()
}

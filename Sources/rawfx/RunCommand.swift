#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import RawFX
import RawFXSDK
import RawFXMedia
import RawFXObservability

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a filter chain over a Y4M video or a WAV audio file or pipe.",
        discussion: """
        INPUT and OUTPUT are .y4m (video) or .wav (audio) paths, or - for standard input/output. \
        With -, the input's format is read from its first bytes ('YUV4MPEG2' or 'RIFF') and the \
        output has the same format. Without a chain, frames pass through unchanged.

        Y4M: 8-bit 4:2:0 only (C420, C420jpeg, C420mpeg2, C420paldv, or no C tag), with the \
        frame rate, interlace, aspect and X fields kept, and XCOLORRANGE=FULL|LIMITED for the \
        range. Frame parameters on FRAME lines pass through. Convert other inputs with \
        'ffmpeg -pix_fmt yuv420p -f yuv4mpegpipe'.
        WAV: 16-bit integer PCM, any rate and channel count. On a pipe the sizes are written \
        as 0xFFFFFFFF (unknown), which FFmpeg reads.

        A filter that delays (a denoiser delays by 10 ms) has its leading delay dropped and its \
        tail drained, so the output has the input's length and lines up with it sample for \
        sample (or frame for frame). Filters log warnings and errors to stderr as \
        'rawfx: <filter>: <message>' (-v adds info lines, -vv debug lines). --metrics prints \
        each filter's figures at the end (docs/observability.md).

        A progress line (frames, fps, ETA) appears when stderr is a terminal. A file output is \
        written beside its target (.NAME.rawfx-XXXXXX) and renamed over it when complete. A \
        truncated input or a failed write still leaves a valid output of every complete frame; \
        rawfx then exits with status 1 saying how many frames it wrote; with none, an existing \
        output is left as it was. A reader that closes the pipe (| head) ends rawfx quietly by \
        SIGPIPE (status 141), as Unix filters end. INPUT may be a FIFO, read as a stream.

        Examples:
          rawfx run --vf scale=width=1280:height=720 in.y4m out.y4m
          rawfx run --vf 'watermark=image=logo.png:opacity=0.8,rotate=angle=90' --snapshot 0:first.png in.y4m out.y4m
          rawfx run --af denoise=level=-30,resample=rate=16000 in.wav out.wav
          ffmpeg -i in.mp4 -f yuv4mpegpipe - | rawfx run --vf rotate=angle=90 - - | ffmpeg -f yuv4mpegpipe -i - out.mp4
          ffmpeg -i talk.m4a -f wav -c:a pcm_s16le - | rawfx run --af denoise - - | ffmpeg -f wav -i - talk-clean.m4a
        """)

    @Option(name: .customLong("vf"), help: ArgumentHelp("The video chain, e.g. scale=width=1280:height=720,rotate=angle=90.", valueName: "chain"))
    var videoChain: String?

    @Option(name: .customLong("af"), help: ArgumentHelp("The audio chain, e.g. denoise=level=-30.", valueName: "chain"))
    var audioChain: String?

    @Flag(name: .customLong("isolate"),
          help: "Run every filter in a helper process of its own (as name@isolate, docs/isolation.md): a filter that crashes or hangs passes its frames through unchanged and is restarted; rawfx warns at the end. --isolate=chain runs a video chain's filters together in ONE helper (as name@isolate(group=chain) on each): the frame crosses into it once, and a fault in any of them passes the frame through the whole chain. --isolate=pipeline isolates every filter and pipelines the audio ones (as name@isolate(pipeline)): each block goes to the helper while the previous block's answer comes back, for one block more latency, which rawfx's output alignment takes out.")
    var isolate = false

    /// `--isolate=chain`, which `RawfxCommand.runReportingErrors` spells so for ArgumentParser
    /// (a flag takes no value).
    @Flag(name: .customLong("isolate-chain"), help: .hidden)
    var isolateChain = false

    /// `--isolate=pipeline`, spelled so for ArgumentParser as `--isolate=chain` is.
    @Flag(name: .customLong("isolate-pipeline"), help: .hidden)
    var isolatePipeline = false

    /// The arguments `--isolate=chain` and `--isolate=pipeline` as this command's flags
    /// (`isolateChain`, `isolatePipeline`); any other `--isolate=VALUE` is refused by name.
    static func spellingIsolateValues(_ arguments: [String]) throws -> [String] {
        try arguments.map { argument in
            switch argument {
            case "--isolate=chain": return "--isolate-chain"
            case "--isolate=pipeline": return "--isolate-pipeline"
            case let other where other.hasPrefix("--isolate="):
                throw CLIError("'\(other)': --isolate takes no value, or chain (one helper for a video chain) or pipeline (audio filters pipelined)", exitCode: 64)
            default: return argument
            }
        }
    }

    @Option(name: .customLong("plugin-path"),
            help: ArgumentHelp("A directory (or .so file) to search for plugins first; repeatable.", valueName: "dir"))
    var pluginPath: [String] = []

    @Option(name: .customLong("snapshot"),
            help: ArgumentHelp("Write frame N (counting from 0) as it leaves the chain to a PNG; repeatable.",
                               valueName: "N:file.png"))
    var snapshots: [String] = []

    @Option(name: .customLong("threads"),
            help: ArgumentHelp("Threads that plugins may split a frame over (rawfx.thread-pool/1), and that an isolated stage splits its copy of the frame in over, the calling one included; default $RAWFX_THREADS, else the online cores up to 8 (as FFmpeg's threads=auto). The output is the same on any count.",
                               valueName: "n"))
    var threads: Int?

    @Option(name: .customLong("max-frame-size"),
            help: ArgumentHelp("The largest video frame rawfx accepts, as WxH or a pixel count; default 8192x8192 (64 Mi pixels, every 8K format). A bigger size in a Y4M header is an error before anything is allocated.",
                               valueName: "WxH|pixels"))
    var maxFrameSize: String?

    @Flag(name: .short,
          help: "Also print the engine's and plugins' info lines (-v) and debug lines (-vv) to stderr; by default only warnings and errors.")
    var verbose: Int

    @Flag(help: "At the end, print the filters' metrics (frames, errors, drops, bypassed, p50/p99/max time) to stderr, as text or as JSON.")
    var metrics: MetricsOutput?

    @Argument(help: ArgumentHelp("A .y4m or .wav file (or a FIFO), or - for standard input.", valueName: "input"))
    var input: String

    @Argument(help: ArgumentHelp("A .y4m or .wav file (the input's format), or - for standard output.", valueName: "output"))
    var output: String

    /// 8192×8192: 8K UHD (7680×4320) and DCI 8K (8192×4320) in either orientation, about
    /// 96 MiB per frame buffer.
    static let defaultMaxFramePixels = 8192 * 8192

    /// `--max-frame-size` in pixels: `WxH` or a count.
    func maxFramePixels() throws -> Int {
        guard let text = maxFrameSize else { return Self.defaultMaxFramePixels }
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        let numbers = parts.map { part in part.allSatisfy(\.isASCII) ? Int(part) : nil }
        guard (1...2).contains(numbers.count), numbers.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw ValidationError("--max-frame-size '\(text)' is neither WxH (e.g. 16384x16384) nor a pixel count (e.g. 268435456)")
        }
        let (pixels, overflow) = numbers.count == 2 ? numbers[0]!.multipliedReportingOverflow(by: numbers[1]!) : (numbers[0]!, false)
        guard !overflow else { throw ValidationError("--max-frame-size '\(text)' is too large a number") }
        return pixels
    }

    func validate() throws {
        _ = try parsedSnapshots()
        _ = try maxFramePixels()
        if let threads, threads < 1 || threads > 64 {
            throw ValidationError("--threads \(threads) is out of range: give 1 to 64")
        }
    }

    /// Threads when neither `--threads` nor `RAWFX_THREADS` says: the online cores, at most 8
    /// (past that a frame's slices get too thin to pay their wake-ups).
    static var defaultThreadCount: Int { min(WorkerPool.defaultWorkerCount, 8) }

    /// --threads, else RAWFX_THREADS, else `defaultThreadCount`.
    func threadCount() throws -> Int { try Self.threadCount(threads) }

    /// `option` (--threads), else RAWFX_THREADS, else `defaultThreadCount`: every command that
    /// runs frames on the pool.
    static func threadCount(_ option: Int?) throws -> Int {
        if let threads = option { return threads }
        guard let text = ProcessInfo.processInfo.environment["RAWFX_THREADS"], !text.isEmpty else { return Self.defaultThreadCount }
        guard let n = Int(text), (1...64).contains(n) else {
            throw CLIError("RAWFX_THREADS='\(text)' is not a thread count from 1 to 64")
        }
        return n
    }

    func parsedSnapshots() throws -> [(frame: Int, path: String)] {
        try snapshots.map { text in
            guard let colon = text.firstIndex(of: ":"), let n = Int(text[..<colon]), n >= 0,
                  text.index(after: colon) < text.endIndex else {
                throw ValidationError("--snapshot '\(text)' is not of the form N:file.png (N = frame number from 0)")
            }
            return (n, String(text[text.index(after: colon)...]))
        }.sorted { $0.frame < $1.frame }
    }

    /// `--metrics` (text) or `--metrics-json`.
    enum MetricsOutput: String, EnumerableFlag {
        case metrics, metricsJson
    }

    /// The figures of the run, collected through swift-metrics (`MetricsReporter`); nil
    /// without `--metrics`.
    private func makeCollector() -> (reporter: MetricsReporter, backend: CollectedMetrics)? {
        guard metrics != nil else { return nil }
        let backend = CollectedMetrics()
        return (MetricsReporter(factory: backend), backend)
    }

    /// Reports every this many frames or audio reads: fewer new durations than a recorder's
    /// window (`TimingRecorder.window`) between two reports, so the timers get every one.
    static let framesPerReport = 256

    /// Prints what `--metrics` collected, after a last report.
    private func printMetrics(_ collected: (reporter: MetricsReporter, backend: CollectedMetrics)?) {
        guard let collected, let metrics else { return }
        collected.reporter.report()
        switch metrics {
        case .metrics: writeStandardError(collected.backend.text())
        case .metricsJson: writeStandardError((try? collected.backend.json()) ?? "")
        }
    }

    func run() throws {
        // Files as fast as they can be read: filters with a worker may wait for it (docs/threading.md).
        RawFXRenderMode.isOffline = true
        RawFXThreadPool.threadCount = try threadCount()
        RawFXLog.logLevel = verbose >= 2 ? .debug : verbose == 1 ? .info : .warning
        RawFXLog.log(.info, source: "run", "threads: \(RawFXThreadPool.threadCount) (--threads, else RAWFX_THREADS, else the online cores up to 8)")
        // Lines plugins logged reach stderr before rawfx exits, whatever the outcome.
        defer { RawFXLog.sync() }
        let registry = try loadRegistry(pluginPath)
        let source = try MediaInput(path: input)
        let kind = try Container.of(input: source, path: input)
        let outputKind = try Container.of(output: output, input: kind)
        guard outputKind == kind else {
            throw CLIError("the input is \(kind) and the output '\(output)' is \(outputKind); rawfx runs Y4M to Y4M and WAV to WAV")
        }
        try checkDistinctFiles(source, registry: registry)
        switch kind {
        case .y4m:
            if audioChain != nil {
                throw CLIError("--af is an audio chain but the input is Y4M video; use --vf")
            }
            try runVideo(source, registry: registry)
        case .wav:
            if videoChain != nil {
                throw CLIError("--vf is a video chain but the input is WAV audio; use --af")
            }
            if !snapshots.isEmpty { throw CLIError("--snapshot needs a Y4M video input") }
            try runAudio(source, registry: registry)
        }
    }

    /// The chain's stages, each isolated with `--isolate` (a stage's own `@isolate` options stay),
    /// or all in isolation group `chain` with `--isolate=chain` (video only); `--isolate=pipeline`
    /// isolates them and pipelines an audio chain's.
    private func chainSpecs(_ text: String?, audio: Bool = false) throws(ChainError) -> [FilterSpec] {
        var specs = try FilterSpec.parseChain(text ?? "")
        if isolateChain {
            for index in specs.indices where specs[index].isolation?.group == nil {
                var isolation = specs[index].isolation ?? StageIsolation()
                isolation.group = "chain"
                specs[index].isolation = isolation
            }
        } else if isolate || isolatePipeline {
            for index in specs.indices where specs[index].isolation == nil { specs[index].isolation = StageIsolation() }
        }
        if isolatePipeline && audio {
            // Video stages are isolated as with --isolate: pipelining is an audio mode.
            for index in specs.indices { specs[index].isolation?.pipeline = true }
        }
        return specs
    }

    /// One warning per isolated stage that faulted: the run went on, its frames passed through.
    /// In an isolation group, per stage that faulted, and once for faults between frames.
    private func warnAboutFaults(_ metrics: [Metrics]) {
        for (index, stage) in metrics.enumerated() {
            guard let isolation = stage.isolation, isolation.faults > 0 else { continue }
            if isolation.groupSize > 1 {
                let group = "isolation group of \(isolation.groupSize) stages from stage \(index - isolation.groupMember)"
                let passed = "restarted \(isolation.restarts) time\(isolation.restarts == 1 ? "" : "s"); \(isolation.passthrough) frame\(isolation.passthrough == 1 ? "" : "s") passed through the whole group unchanged"
                if isolation.stageFaults > 0 {
                    printWarning("filter '\(stage.name)' (stage \(index)) faulted \(isolation.stageFaults) time\(isolation.stageFaults == 1 ? "" : "s") in its helper process (\(group)), which was \(passed)")
                }
                // Faults between frames belong to no stage: said once, at the group's first.
                let attributed = metrics[(index - isolation.groupMember)..<(index - isolation.groupMember + isolation.groupSize)]
                    .reduce(UInt64(0)) { $0 + ($1.isolation?.stageFaults ?? 0) }
                if isolation.groupMember == 0, isolation.faults > attributed {
                    printWarning("the helper process of the \(group) (filter '\(stage.name)' first) faulted \(isolation.faults - attributed) time\(isolation.faults - attributed == 1 ? "" : "s") between frames, and was \(passed)")
                }
                continue
            }
            printWarning("filter '\(stage.name)' (stage \(index)) faulted \(isolation.faults) time\(isolation.faults == 1 ? "" : "s") in its helper process and was restarted \(isolation.restarts) time\(isolation.restarts == 1 ? "" : "s"); \(isolation.passthrough) frame\(isolation.passthrough == 1 ? "" : "s") passed through it unchanged")
        }
    }

    // MARK: - Video

    private func runVideo(_ source: MediaInput, registry: PluginRegistry) throws {
        let chain: VideoChain
        do { chain = try VideoChain(specs: chainSpecs(videoChain), registry: registry) } catch { throw explain(error, registry: registry) }
        let control = chain.control
        defer { warnAboutFaults(control.metrics) }
        let collected = makeCollector()
        collected?.reporter.addChain(named: "video") { control.metrics }
        defer { printMetrics(collected) }
        let reader = try Y4MReader(source)
        let inFormat = reader.header.format
        let limit = try maxFramePixels()
        guard inFormat.width * inFormat.height <= limit else {
            throw CLIError("\(source.name): the header declares \(inFormat.width)x\(inFormat.height) (\(inFormat.width * inFormat.height) pixels), more than the limit of \(limit) pixels\(limit == Self.defaultMaxFramePixels ? " (8192x8192)" : ""); raise it with --max-frame-size WxH or a pixel count")
        }
        let pending = try parsedSnapshots()
        var nextSnapshot = 0
        let progress = ProgressLine(total: reader.estimatedFrameCount, unit: "frames")
        var index = 0
        // Memory follows the data, not the header: the chain negotiates (and allocates its
        // buffers) on the first whole frame, and the output is opened then, under a temporary
        // name that replaces the target only once something valid is in it.
        var writer: Y4MWriter?
        func open(_ outFormat: VideoFormat) throws -> Y4MWriter {
            try Y4MWriter(MediaOutput(replacing: output), header: outputHeader(reader.header, input: inFormat, output: outFormat))
        }
        // A delaying chain's first `latency` outputs come before any input frame: drop them,
        // and at the end push the last `latency` frames out by repeating the last input.
        var toSkip = 0
        var last: VideoFrame?
        func write(_ out: VideoFrame) throws {
            if toSkip > 0 {
                toSkip -= 1
                return
            }
            try writer!.write(out, parameters: reader.frameParameters)
            let written = writer!.framesWritten - 1
            while nextSnapshot < pending.count && pending[nextSnapshot].frame == written {
                try writeReplacing(pending[nextSnapshot].path) { try PNGWriter.write(out, to: $0) }
                nextSnapshot += 1
            }
        }
        do {
            while let frame = try reader.readFrame() {
                let out = try chain.process(frame)
                if writer == nil {
                    writer = try open(chain.outputFormat!)
                    toSkip = chain.latency
                }
                try write(out)
                last = frame
                index += 1
                progress.update(index)
                if index % Self.framesPerReport == 0 { collected?.reporter.report() }
            }
            if writer == nil {
                // No frame at all: a valid empty stream, its header sized as the chain would
                // size the frames, with no frame buffer allocated.
                writer = try open(try chain.negotiate(inFormat, allocatingBuffers: false))
            }
            if let last { try chain.drain(repeating: last, emit: write) }
            try writer!.close()
        } catch {
            progress.finish(index)
            // A refusal of the first frame's format is the chain's error, nothing else to say.
            if writer == nil, let refusal = error as? ChainError { throw explain(refusal, registry: registry) }
            let kept = writer?.closeKeepingWholeFrames() ?? 0
            throw ending(error, kept: kept, output: writer?.output, wrote: "\(kept) complete frame\(kept == 1 ? "" : "s")")
        }
        progress.finish(index)
        if nextSnapshot < pending.count {
            let missed = pending[nextSnapshot...].map { "\($0.frame)" }.joined(separator: ", ")
            throw CLIError("--snapshot: the input has \(index) frame\(index == 1 ? "" : "s") (0 to \(index - 1)); no frame \(missed)")
        }
    }

    /// The output stream's header: the input's rate, interlace and X fields; the chain's size
    /// and range; the pixel aspect turned with the picture when the chain swaps width and height.
    private func outputHeader(_ input: Y4MHeader, input inFormat: VideoFormat, output outFormat: VideoFormat) -> Y4MHeader {
        var header = input
        header.width = outFormat.width
        header.height = outFormat.height
        header.colorRange = outFormat.colorRange == .full ? .full : (input.colorRange == .limited ? .limited : nil)
        if inFormat.width != inFormat.height, outFormat.width == inFormat.height, outFormat.height == inFormat.width,
           let a = input.pixelAspect {
            header.pixelAspect = Y4MRatio(a.denominator, a.numerator)
        }
        return header
    }

    // MARK: - Audio

    private func runAudio(_ source: MediaInput, registry: PluginRegistry) throws {
        let chain: AudioChain
        if isolateChain {
            throw CLIError("--isolate=chain runs a video chain in one helper; audio filters are isolated one per helper: use --isolate")
        }
        do { chain = try AudioChain(specs: chainSpecs(audioChain, audio: true), registry: registry) } catch { throw explain(error, registry: registry) }
        let control = chain.control
        defer { warnAboutFaults(control.metrics) }
        let collected = makeCollector()
        collected?.reporter.addChain(named: "audio") { control.metrics }
        defer { printMetrics(collected) }
        let reader = try WAVReader(source)
        let inFormat = reader.format
        let outFormat = try chain.negotiate(inFormat)
        let writer = try WAVWriter(MediaOutput(replacing: output), format: outFormat)
        let chunk = max(1, inFormat.framesPer10ms) * 10  // 100 ms per read
        let samples = UnsafeMutablePointer<Int16>.allocate(capacity: chunk * inFormat.channels)
        defer { samples.deallocate() }
        let progress = ProgressLine(total: reader.frameCount.map { ($0 + chunk - 1) / chunk }, unit: "blocks")
        var framesIn = 0
        var blocks = 0
        var writeError: MediaError?
        // The chain's output lags its input by `latency` frames (a denoiser: 10 ms): drop
        // that many leading frames, and drain the tail, so the output has the input's length
        // and lines up with it sample for sample.
        var toSkip = chain.latency
        func emit(_ block: AudioBlock) {
            guard writeError == nil else { return }
            var b = block
            if toSkip > 0 {
                let skip = min(toSkip, block.frameCount)
                toSkip -= skip
                guard skip < block.frameCount else { return }
                b.raw.samples += skip * outFormat.channels
                b.raw.frame_count -= UInt32(skip)
            }
            do { try writer.write(b) } catch { writeError = error }
        }
        // A read error still drains the chain, so the output has every frame read; any
        // error then ends the file on its last whole frame with its sizes patched.
        var failure: Error?
        do {
            while true {
                let n: Int
                do { n = try reader.read(into: samples, maxFrames: chunk) } catch { failure = error; break }
                if n == 0 { break }
                let timestamp = Int64(framesIn) * 1_000_000 / Int64(inFormat.sampleRate)
                framesIn += n
                try chain.process(AudioBlock(samples: samples, frameCount: n, format: inFormat, timestampMicroseconds: timestamp), emit: emit)
                if let writeError { throw writeError }
                blocks += 1
                progress.update(blocks)
                // A read is 100 ms: at most 10 blocks of 10 ms per stage (more after upsampling).
                if blocks % (Self.framesPerReport / 16) == 0 { collected?.reporter.report() }
            }
            try chain.drain(emit: emit)
            if let writeError { throw writeError }
            if failure == nil { try writer.close() }
        } catch {
            failure = error
        }
        progress.finish(blocks)
        guard let failure else { return }
        let kept = writer.closeKeepingWholeFrames()
        let seconds = Double(kept) / Double(outFormat.sampleRate)
        throw ending(failure, kept: kept, output: writer.output, wrote: "\(kept) frames (\(String(format: "%.3f", seconds)) s)")
    }

    /// How a run an error ended is reported, once its output kept `kept` whole frames
    /// (`wrote` says so): quietly for a closed pipe; with none kept in a file, that the
    /// target was not written.
    private func ending(_ error: Error, kept: Int, output out: MediaOutput?, wrote: String) -> Error {
        let ending = closedPipeOr(error, out)
        if ending is ReaderClosedPipe { return ending }
        if kept == 0 && output != "-" && out?.isSeekable != false {
            return CLIError("\(error); no complete frame to write, so \(output) was not written (an existing file is left as it was)")
        }
        return CLIError("\(error); wrote \(wrote) to \(out?.name ?? output)")
    }

    // MARK: - Files

    /// Refuses an output or a snapshot that is the input file (however named: a link, a `>>`
    /// redirection of standard output), or a snapshot that is the output: writing it would
    /// destroy what rawfx reads or writes.
    private func checkDistinctFiles(_ source: MediaInput, registry: PluginRegistry) throws {
        let inputFile = FileIdentity(regularFile: source.fileDescriptor)
        let outputFile = output == "-" ? FileIdentity(regularFile: STDOUT_FILENO) : FileIdentity(path: output)
        if let inputFile, outputFile == inputFile {
            if output == "-" {
                throw CLIError("standard output is the input file \(source.name) (redirected with > or >>); writing it would destroy the input, or grow it without end")
            }
            throw CLIError("the output '\(output)' is the input file; writing it would destroy the input")
        }
        let readByChain = chainFiles(registry).map { (identity: FileIdentity(path: $0), path: $0) }
        var taken: [(identity: FileIdentity, frame: Int, path: String)] = []
        for (frame, path) in try parsedSnapshots() where path != "-" {
            var st = stat()
            if stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO {
                throw CLIError("--snapshot \(frame):\(path) is a FIFO; a snapshot is a whole PNG file (written beside it, then renamed into place): give a file path")
            }
            let snapshot = FileIdentity(path: path)
            if snapshot == inputFile {
                throw CLIError("--snapshot \(frame):\(path) is the input file; writing it would destroy the input")
            }
            if snapshot == outputFile {
                throw CLIError("--snapshot \(frame):\(path) is the output file \(output); give the PNG another name")
            }
            if let read = readByChain.first(where: { $0.identity == snapshot }) {
                throw CLIError("--snapshot \(frame):\(path) is \(read.path), a file the chain reads; writing it would change what the chain reads: give the PNG another name")
            }
            if let earlier = taken.first(where: { $0.identity == snapshot }) {
                throw CLIError("--snapshot \(earlier.frame):\(earlier.path) and --snapshot \(frame):\(path) name the same file; give each frame a PNG of its own")
            }
            taken.append((snapshot, frame, path))
        }
    }

    /// The files the chain's filters read: the values of their path parameters
    /// (RAWFX_PARAM_FLAG_PATH, a watermark's image), by name or by position.
    private func chainFiles(_ registry: PluginRegistry) -> [String] {
        guard let specs = try? FilterSpec.parseChain(videoChain ?? audioChain ?? "") else { return [] }
        var paths: [String] = []
        for spec in specs {
            guard let type = try? registry.filterType(spec.name) else { continue }
            for (index, argument) in spec.arguments.enumerated() {
                let parameter = argument.key.map { type.parameter(named: $0) }
                    ?? (index < type.parameters.count ? type.parameters[index] : nil)
                if let parameter, parameter.isPath { paths.append(argument.value) }
            }
        }
        return paths
    }
}

/// The two formats rawfx reads and writes.
enum Container: CustomStringConvertible {
    case y4m, wav

    var description: String { self == .y4m ? "Y4M video" : "WAV audio" }

    static func byExtension(_ path: String) -> Container? {
        switch (path as NSString).pathExtension.lowercased() {
        case "y4m", "yuv4mpeg": return .y4m
        case "wav", "wave": return .wav
        default: return nil
        }
    }

    /// By extension; for `-` or another extension, by the first bytes (Y4M unless 'RIFF').
    static func of(input: MediaInput, path: String) throws -> Container {
        if path != "-", let kind = byExtension(path) { return kind }
        let magic = try input.peek(4)
        if magic == Array("RIFF".utf8) || magic == Array("RIFX".utf8) || magic == Array("RF64".utf8) { return .wav }
        return .y4m
    }

    /// By extension; `-` and an existing FIFO or device (`/dev/null`) get the input's format.
    static func of(output path: String, input: Container) throws -> Container {
        if path == "-" { return input }
        var st = stat()
        if byExtension(path) == nil, stat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG, (st.st_mode & S_IFMT) != S_IFDIR {
            return input
        }
        guard let kind = byExtension(path) else {
            throw CLIError("cannot tell the output format of '\(path)': name it .y4m or .wav, or use - (rawfx writes Y4M and WAV; pipe to ffmpeg to encode)")
        }
        return kind
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import RawFX
import RawFXCompose
import RawFXMedia

/// `rawfx compose`: Y4M files or pipes of any sizes and rates into one picture on a steady
/// clock (docs/compose.md).
struct ComposeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Compose Y4M inputs (files or pipes) into one Y4M picture: gallery, speaker, share or your own layout.",
        discussion: """
        Each input is [ID=]PATH of a Y4M or WAV file or pipe. WAV inputs are mixed (any rate and \
        channel count, resampled, saturating) into --audio-output on the same clock: the audio of \
        an instant leaves with the video frame of that instant. The ID names an input in --speaker, --share and custom layouts (default: \
        the file name without its extension). Inputs may have any size and frame rate: the output \
        runs at --fps on its own clock, and every tile shows its input's newest frame at each \
        output frame's time, scaled into the tile by the 'scale' filter's kernels. An input that \
        ends early, or is cut short, shows its placeholder from then on; the run goes on. The \
        output has exactly fps x duration frames (the duration defaults to the longest input's).

        Layouts: grid (the gallery, up to 49 tiles), speaker (--speaker large, a filmstrip of the \
        others), share (--share large, the speaker beside it, inset or hidden), single, custom \
        (--layout-file: a JSON array of {"id", "x", "y", "width", "height", "z"}, even pixels).

        Examples:
          rawfx compose a.y4m b.y4m c.y4m d.y4m -o gallery.y4m
          rawfx compose --layout speaker --speaker alice alice=a.y4m bob=b.y4m carol=c.y4m -o - \\
              | ffmpeg -f yuv4mpegpipe -i - speaker.mp4
          rawfx compose --layout share --share-placement inset --share screen screen=s.y4m me=cam.y4m -o out.y4m
          rawfx compose --switch 5=speaker --layout-json layouts.jsonl a.y4m b.y4m -o out.y4m
          rawfx compose --name alice='Alice Smith' --name bob='Bob' --captions talk.srt alice=a.y4m bob=b.y4m -o out.y4m

        Labels (--label, --name) and captions (--captions) are drawn by the 'text' filter (the \
        Text plugin; its parameters go in --label-style and --caption-style); --overlay runs any \
        in-place chain over the whole program.
        """)

    @Argument(help: ArgumentHelp("Inputs, each [ID=]PATH: a .y4m file, a FIFO, or - (standard input, once).", valueName: "input"))
    var inputs: [String] = []

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("The output .y4m file, or - for standard output.", valueName: "path"))
    var output: String

    @Option(help: ArgumentHelp("grid, speaker, share, single or custom.", valueName: "layout"))
    var layout: String = "grid"

    @Option(name: .customLong("layout-file"), help: ArgumentHelp("The tiles of --layout custom, as JSON.", valueName: "file.json"))
    var layoutFile: String?

    @Option(help: ArgumentHelp("The active speaker's input ID (speaker, share and single layouts; default: the first input).", valueName: "id"))
    var speaker: String?

    @Option(help: ArgumentHelp("The share's input ID (share layout).", valueName: "id"))
    var share: String?

    @Option(name: .customLong("filmstrip"), help: ArgumentHelp("Speaker layout: where the others go: top, bottom, left or right.", valueName: "side"))
    var filmstrip: String = "bottom"

    @Option(name: .customLong("filmstrip-count"), help: ArgumentHelp("Speaker layout: at most this many others.", valueName: "n"))
    var filmstripCount: Int = 4

    @Option(name: .customLong("share-placement"), help: ArgumentHelp("Share layout: the speaker beside, inset or hidden.", valueName: "where"))
    var sharePlacement: String = "beside"

    @Option(name: .customLong("switch"),
            help: ArgumentHelp("Change the layout at a time in seconds, e.g. 5=speaker or 7.5=share; repeat for more.", valueName: "seconds=layout"))
    var switches: [String] = []

    @Option(help: ArgumentHelp("The output size.", valueName: "WxH"))
    var size: String = "1280x720"

    @Option(help: ArgumentHelp("The output frame rate: 30, 25, 30000/1001…", valueName: "rate"))
    var fps: String = "30"

    @Option(help: ArgumentHelp("Seconds of output (default: the longest input's length).", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("contain (the whole picture, bars around it) or cover (the tile filled, cropped at the centre).", valueName: "fit"))
    var fit: String = "contain"

    @Option(help: ArgumentHelp("Behind the tiles: black, white, gray, #rrggbb, or a PNG file.", valueName: "colour|file.png"))
    var background: String = "black"

    @Option(help: ArgumentHelp("What a tile with no fresh frame shows: a colour, a PNG file (an avatar), or last (its last frame).", valueName: "colour|file.png|last"))
    var placeholder: String = "#282828"

    @Option(help: ArgumentHelp("Seconds without a frame before an input shows its placeholder.", valueName: "seconds"))
    var timeout: Double = 1

    @Option(help: ArgumentHelp("A border inside every tile, in even pixels.", valueName: "pixels"))
    var border: Int = 0

    @Option(name: .customLong("layout-json"),
            help: ArgumentHelp("Write one JSON line per layout in force: the output frame it started at and each input's rectangle.", valueName: "file"))
    var layoutJSON: String?

    @Option(name: .customLong("audio-output"),
            help: ArgumentHelp("Where the mix of the WAV inputs goes: a mono 16-bit .wav file, or - for standard output (then -o is a file).", valueName: "file.wav"))
    var audioOutput: String?

    @Option(name: .customLong("audio-rate"), help: ArgumentHelp("The mix's sample rate (Hz; the SDKs take 32000 or 48000).", valueName: "hz"))
    var audioRate: Int = 48000

    @Flag(name: .customLong("label"), help: "Name every tile (its input ID, or --name) with the 'text' filter, placeholders too.")
    var label = false

    @Option(name: .customLong("name"), help: ArgumentHelp("A tile's label: ID=Full Name (repeat for more; implies --label).", valueName: "id=name"))
    var names: [String] = []

    @Option(name: .customLong("label-style"),
            help: ArgumentHelp("The labels' 'text' filter parameters (its text is the name).", valueName: "options"))
    var labelStyle: String = "anchor=bottom_left:size=22:box=true"

    @Option(name: .customLong("captions"), help: ArgumentHelp("Burn in the cues of a SubRip (.srt) file, at their times, in a caption bar.", valueName: "file.srt"))
    var captions: String?

    @Option(name: .customLong("caption-style"),
            help: ArgumentHelp("The caption bar's 'text' filter parameters (its text is the cue in force).", valueName: "options"))
    var captionStyle: String = "anchor=bottom:size=36:box=true:max_width=0.8"

    @Option(name: .customLong("overlay"),
            help: ArgumentHelp("Any in-place video chain over the whole program after the tiles, e.g. watermark=image=logo.png.", valueName: "chain"))
    var overlay: String?

    @Option(name: .customLong("plugin-path"), help: ArgumentHelp("More plugin folders or files (the labels', captions' and --overlay's filters).", valueName: "path"))
    var pluginPath: [String] = []

    @Option(name: .customLong("threads"), help: ArgumentHelp("Threads the tiles are scaled on, the calling one included (1 to 64); default as rawfx run.", valueName: "n"))
    var threads: Int?

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("no input: give one or more [ID=]PATH of Y4M files or pipes") }
        guard inputs.count <= Compositor.maximumInputs else {
            throw ValidationError("\(inputs.count) inputs; the compositor draws at most \(Compositor.maximumInputs)")
        }
        if let threads, !(1...64).contains(threads) { throw ValidationError("--threads \(threads) is out of range: give 1 to 64") }
        if let duration, !(duration > 0 && duration <= 86_400) { throw ValidationError("--duration \(duration): give seconds from above 0 to 86400") }
        guard timeout >= 0.001, timeout <= 3600 else { throw ValidationError("--timeout \(timeout): give seconds from 0.001 to 3600") }
        _ = try parsedSize()
        _ = try parsedRate()
        _ = try parsedSwitches()
        _ = try parsedNames()
    }

    /// `--name ID=Full Name` pairs.
    func parsedNames() throws -> [String: String] {
        var result: [String: String] = [:]
        for text in names {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw ValidationError("--name '\(text)': give ID=NAME, e.g. alice='Alice Smith'")
            }
            result[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return result
    }

    /// A chain of the `text` filter styled by `style`, showing `text`. The text is set as a
    /// parameter, not spelled in the chain, so that any name or cue needs no quoting.
    static func textChain(style: String, text: String, registry: PluginRegistry, option: String) throws -> VideoChain {
        do {
            let chain = try VideoChain(style.isEmpty ? "text" : "text=\(style)", registry: registry)
            try chain.control.setParameter("text.text", text)
            return chain
        } catch {
            throw CLIError("\(option): \(error)")
        }
    }

    func parsedSize() throws -> (width: Int, height: Int) {
        let parts = size.lowercased().split(separator: "x").map { Int($0) }
        guard parts.count == 2, let w = parts[0], let h = parts[1], w >= 2, h >= 2, w <= 16384, h <= 16384, (w | h) & 1 == 0 else {
            throw ValidationError("--size '\(size)': give WxH with even numbers from 2 to 16384, e.g. 1280x720")
        }
        return (w, h)
    }

    func parsedRate() throws -> FrameRate {
        let parts = fps.split(separator: "/").map { Int($0) }
        guard (1...2).contains(parts.count), let n = parts[0], let d = parts.count == 2 ? parts[1] : 1, n > 0, d > 0,
              n <= 240 * d else {
            throw ValidationError("--fps '\(fps)': give a rate up to 240 as N or N/D, e.g. 30 or 30000/1001")
        }
        return FrameRate(n, d)
    }

    func parsedSwitches() throws -> [(seconds: Double, layout: String)] {
        try switches.map { text in
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let seconds = Double(parts[0]), seconds >= 0 else {
                throw ValidationError("--switch '\(text)': give SECONDS=LAYOUT, e.g. 5=speaker")
            }
            return (seconds, parts[1])
        }.sorted { $0.seconds < $1.seconds }
    }

    /// A layout by name, with the options that shape it.
    func makeLayout(_ name: String) throws -> CompositorLayout {
        switch name {
        case "grid": return .grid
        case "single": return .single
        case "speaker":
            guard let side = FilmstripPosition(rawValue: filmstrip) else {
                throw CLIError("--filmstrip '\(filmstrip)': expected top, bottom, left or right")
            }
            return .speaker(filmstrip: side, others: filmstripCount)
        case "share":
            guard let placement = SpeakerPlacement(rawValue: sharePlacement) else {
                throw CLIError("--share-placement '\(sharePlacement)': expected beside, inset or hidden")
            }
            return .share(speaker: placement)
        case "custom":
            guard let layoutFile else { throw CLIError("--layout custom needs --layout-file with the tiles as JSON") }
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: layoutFile)) } catch {
                throw CLIError("--layout-file \(layoutFile): cannot read it: \(error.localizedDescription)")
            }
            do { return .custom(try JSONDecoder().decode([CustomTile].self, from: data)) } catch {
                throw CLIError("--layout-file \(layoutFile): expected a JSON array of {\"id\", \"x\", \"y\", \"width\", \"height\", \"z\"}: \(error)")
            }
        default:
            throw CLIError("layout '\(name)': expected grid, speaker, share, single or custom")
        }
    }

    /// A colour by name or #rrggbb, in the output's range.
    static func color(_ text: String) -> YUVColor? {
        let named: [String: (UInt8, UInt8, UInt8)] = ["black": (0, 0, 0), "white": (255, 255, 255), "gray": (128, 128, 128),
                                                      "grey": (128, 128, 128), "red": (255, 0, 0), "green": (0, 128, 0),
                                                      "blue": (0, 0, 255)]
        if let rgb = named[text.lowercased()] { return YUVColor(red: rgb.0, green: rgb.1, blue: rgb.2) }
        guard text.hasPrefix("#"), text.count == 7, let value = UInt32(text.dropFirst(), radix: 16) else { return nil }
        return YUVColor(red: UInt8(value >> 16 & 0xFF), green: UInt8(value >> 8 & 0xFF), blue: UInt8(value & 0xFF))
    }

    /// One input: its reader, the clock of its own frames, and the compositor's handle.
    final class Source {
        let id: String
        let path: String
        let reader: Y4MReader
        let rate: FrameRate
        let handle: CompositorInput
        /// Frames read so far; the next one's time is `rate.timestamp(ofFrame: read)`.
        var read: Int64 = 0
        var ended = false
        var endTime: Int64 = .max

        init(id: String, path: String, reader: Y4MReader, handle: CompositorInput) {
            self.id = id
            self.path = path
            self.reader = reader
            let r = reader.header.frameRate
            rate = r.numerator > 0 && r.denominator > 0 ? FrameRate(r.numerator, r.denominator) : FrameRate(25)
            self.handle = handle
        }

        /// The input's length in microseconds, when its file size tells.
        var length: Int64? { reader.estimatedFrameCount.map { rate.timestamp(ofFrame: Int64($0)) } }

        /// Reads every frame whose time is at or before `time` and hands the last of them over.
        func advance(to time: Int64) {
            var latest: VideoFrame?
            while !ended, rate.timestamp(ofFrame: read) <= time {
                do {
                    guard let frame = try reader.readFrame() else {
                        finish(at: rate.timestamp(ofFrame: read), reason: nil)
                        break
                    }
                    latest = frame
                    read += 1
                } catch {
                    finish(at: rate.timestamp(ofFrame: read), reason: "\(error)")
                }
            }
            if let latest { handle.submit(copying: latest, at: rate.timestamp(ofFrame: read - 1)) }
            if ended, time >= endTime { handle.isActive = false }
        }

        private func finish(at time: Int64, reason: String?) {
            ended = true
            endTime = time
            if let reason { printWarning("input '\(id)' (\(path)) ends after \(read) frames: \(reason); it shows its placeholder from then on") }
        }
    }

    /// A WAV input: its reader and the mixer's handle; fed in 10 ms reads up to a time.
    final class AudioSource {
        let id: String
        let path: String
        let reader: WAVReader
        let handle: MixerInput
        let buffer: UnsafeMutablePointer<Int16>
        let chunk: Int
        var ended = false

        init(id: String, path: String, reader: WAVReader, handle: MixerInput) {
            self.id = id
            self.path = path
            self.reader = reader
            self.handle = handle
            chunk = max(1, reader.format.sampleRate / 100)
            buffer = .allocate(capacity: chunk * reader.format.channels)
        }

        deinit { buffer.deallocate() }

        var length: Int64? { reader.frameCount.map { Int64($0) * 1_000_000 / Int64(reader.format.sampleRate) } }

        /// Reads and mixes in every sample before `time` (µs).
        func advance(to time: Int64) {
            let target = time * Int64(reader.format.sampleRate) / 1_000_000
            while !ended, Int64(reader.framesRead) < target {
                do {
                    let wanted = min(chunk, Int(target - Int64(reader.framesRead)))
                    let got = try reader.read(into: buffer, maxFrames: wanted)
                    if got == 0 {
                        ended = true
                        break
                    }
                    try handle.submit(AudioBlock(samples: buffer, frameCount: got, format: reader.format))
                } catch {
                    ended = true
                    printWarning("input '\(id)' (\(path)) ends after \(reader.framesRead) samples: \(error); silence from then on")
                }
            }
        }
    }

    func run() throws {
        // Files as fast as they can be read: filters with a worker may wait for it (docs/threading.md).
        RawFXRenderMode.isOffline = true
        RawFXThreadPool.threadCount = try RunCommand.threadCount(threads)
        defer { RawFXLog.sync() }
        let (width, height) = try parsedSize()
        let rate = try parsedRate()
        guard let fitValue = TileFit(rawValue: fit) else { throw CLIError("--fit '\(fit)': expected contain or cover") }
        guard border >= 0, border <= 64, border & 1 == 0 else { throw CLIError("--border \(border): give an even number of pixels from 0 to 64") }
        let backgroundValue: Background
        if let color = Self.color(background) {
            backgroundValue = .color(color)
        } else if background.lowercased().hasSuffix(".png") {
            backgroundValue = .image(try PNGReader.readI420(background))
        } else {
            throw CLIError("--background '\(background)': expected black, white, gray, #rrggbb or a .png file")
        }
        let placeholderValue: Placeholder
        if placeholder == "last" {
            placeholderValue = .lastFrame(otherwise: YUVColor(red: 40, green: 40, blue: 40))
        } else if let color = Self.color(placeholder) {
            placeholderValue = .color(color)
        } else if placeholder.lowercased().hasSuffix(".png") {
            placeholderValue = .image(try PNGReader.readI420(placeholder))
        } else {
            throw CLIError("--placeholder '\(placeholder)': expected a colour (#rrggbb, black…), a .png file or last")
        }
        let initial = try makeLayout(layout)
        let timeline = try parsedSwitches().map { ($0.seconds, try makeLayout($0.layout)) }

        let compositor: Compositor
        do {
            compositor = try Compositor(.init(width: width, height: height, frameRate: rate, layout: initial, fit: fitValue,
                                              background: backgroundValue, placeholder: placeholderValue,
                                              inputTimeoutMicroseconds: Int64(timeout * 1_000_000), border: border))
            for (_, layout) in timeline { try layout.validate(width: width, height: height) }
        } catch {
            throw CLIError("\(error)")
        }

        // Labels, captions and the program overlay: chains of the filters the registry has.
        let labelNames = try parsedNames()
        var registryLoaded: PluginRegistry?
        func overlayRegistry() throws -> PluginRegistry {
            if let registryLoaded { return registryLoaded }
            let loaded = try loadRegistry(pluginPath)
            registryLoaded = loaded
            return loaded
        }
        let cues = try captions.map { try SubRip.read($0) } ?? []
        let captionChain = captions == nil ? nil
            : try Self.textChain(style: captionStyle, text: "", registry: try overlayRegistry(), option: "--caption-style")
        var programChain: VideoChain?
        if let overlay {
            do { programChain = try VideoChain(overlay, registry: try overlayRegistry()) } catch let error as ChainError {
                throw CLIError("--overlay: \(error)")
            }
        }
        switch (captionChain, programChain) {
        case let (c?, o?): compositor.setOverlay(ChainPair(first: o, second: c))
        case let (c?, nil): compositor.setOverlay(c)
        case let (nil, o?): compositor.setOverlay(o)
        case (nil, nil): break
        }

        // The inputs, each with an ID.
        var sources: [Source] = []
        var audioSources: [AudioSource] = []
        var mixer: AudioMixer?
        if audioOutput != nil {
            guard (8000...96000).contains(audioRate), audioRate % 100 == 0 else {
                throw CLIError("--audio-rate \(audioRate): expected a multiple of 100 from 8000 to 96000 Hz")
            }
            mixer = try AudioMixer(sampleRate: audioRate, primingBlocks: 0, registry: loadRegistry([]))
        }
        var usedStandardInput = false
        for text in inputs {
            var id: String, path: String
            if let equals = text.firstIndex(of: "="), !text[..<equals].contains("/") {
                id = String(text[..<equals])
                path = String(text[text.index(after: equals)...])
            } else {
                path = text
                id = path == "-" ? "stdin" : URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            }
            if path == "-" {
                if usedStandardInput { throw CLIError("standard input (-) is given twice; it can be read once") }
                usedStandardInput = true
            }
            var unique = id, suffix = 2
            while sources.contains(where: { $0.id == unique }) { unique = "\(id)-\(suffix)"; suffix += 1 }
            id = unique
            let media = try MediaInput(path: path)
            if try Container.of(input: media, path: path) == .wav {
                guard let mixer else {
                    throw CLIError("input '\(id)' (\(path)) is WAV audio: give --audio-output FILE.wav for the mix")
                }
                let reader = try WAVReader(media)
                audioSources.append(AudioSource(id: id, path: path, reader: reader, handle: try mixer.addInput(id: id)))
                continue
            }
            let reader = try Y4MReader(media)
            let label = self.label || !names.isEmpty
                ? try Self.textChain(style: labelStyle, text: labelNames[id] ?? id, registry: try overlayRegistry(),
                                     option: "--label-style") : nil
            let handle = try compositor.addInput(id: id, overlay: label)
            sources.append(Source(id: id, path: path, reader: reader, handle: handle))
        }
        guard !sources.isEmpty else { throw CLIError("no Y4M input: compose draws video inputs (WAV inputs are mixed beside them)") }
        compositor.setRoles(speaker: speaker ?? sources.first?.id, share: share)
        for id in labelNames.keys where !sources.contains(where: { $0.id == id }) {
            throw CLIError("--name '\(id)=…': '\(id)' is not an input ID; the inputs are \(sources.map(\.id).joined(separator: ", "))")
        }
        for (option, value) in [("--speaker", speaker), ("--share", share)] {
            if let value, !sources.contains(where: { $0.id == value }) {
                throw CLIError("\(option) '\(value)' is not an input ID; the inputs are \(sources.map(\.id).joined(separator: ", "))")
            }
        }

        // Exactly fps × duration frames.
        let seconds: Double
        if let duration {
            seconds = duration
        } else {
            guard let longest = (sources.compactMap(\.length) + audioSources.compactMap(\.length)).max(), longest > 0 else {
                throw CLIError("the inputs' lengths are unknown (pipes): give --duration")
            }
            seconds = Double(longest) / 1e6
        }
        let frameCount = Int64((seconds * Double(rate.numerator) / Double(rate.denominator)).rounded())

        let writer = try Y4MWriter(MediaOutput(replacing: output),
                                   header: Y4MHeader(format: compositor.format, frameRate: Y4MRatio(rate.numerator, rate.denominator)))
        var audioWriter: WAVWriter?
        if let audioOutput, let mixer { audioWriter = try WAVWriter(MediaOutput(replacing: audioOutput), format: mixer.format) }
        var layoutLines: MediaOutput?
        if let layoutJSON { layoutLines = try MediaOutput(replacing: layoutJSON) }
        let progress = ProgressLine(total: Int(frameCount), unit: "frames")
        var shownVersion = -1
        var shownCue: Int?
        var nextSwitch = 0
        do {
            for index in 0..<frameCount {
                let time = rate.timestamp(ofFrame: index)
                while nextSwitch < timeline.count, Int64(timeline[nextSwitch].0 * 1_000_000) <= time {
                    try compositor.setLayout(timeline[nextSwitch].1)
                    nextSwitch += 1
                }
                for source in sources { source.advance(to: time) }
                if let captionChain {
                    let cue = SubRip.cue(in: cues, at: time)
                    if cue != shownCue {
                        shownCue = cue
                        try captionChain.control.setParameter("text.text", cue.map { cues[$0].text } ?? "")
                    }
                }
                let frame = compositor.compose(frameIndex: index)
                if let mixer, let audioWriter {
                    // The blocks that leave with this frame; inputs read 50 ms ahead so that the
                    // resampler's latency never leaves a block short.
                    let blocks = AudioMixer.blocks(forVideoFrame: index, rate: rate)
                    for source in audioSources { source.advance(to: blocks.upperBound * 10_000 + 50_000) }
                    for block in blocks { try audioWriter.write(mixer.mix(blockIndex: block)) }
                }
                let scene = compositor.currentScene
                if scene.version != shownVersion, let lines = layoutLines {
                    shownVersion = scene.version
                    try lines.write(scene.json(extra: [("frame", index)]) + "\n")
                }
                try writer.write(frame)
                progress.update(Int(index + 1))
            }
            try writer.close()
            try audioWriter?.close()
            try layoutLines?.close()
        } catch {
            progress.finish(Int(writer.framesWritten))
            _ = audioWriter?.closeKeepingWholeFrames()
            let kept = writer.closeKeepingWholeFrames()
            throw CLIError("\(closedPipeOr(error, writer.output)) (the output keeps \(kept) complete frame\(kept == 1 ? "" : "s"))")
        }
        progress.finish(Int(frameCount))
    }
}

/// Two overlays over the program, one after the other (`--overlay`, then the captions). A
/// process handle, like the chains in it: run by the compose thread only.
final class ChainPair: VideoProcessor {
    let first: VideoChain
    let second: VideoChain

    init(first: VideoChain, second: VideoChain) {
        self.first = first
        self.second = second
    }

    func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        try second.process(try first.process(frame))
    }
}

/// Cues of a SubRip (.srt) file: `1`, `00:00:01,000 --> 00:00:04,500`, text lines, a blank line.
enum SubRip {
    struct Cue: Equatable {
        var start: Int64  // µs
        var end: Int64
        var text: String
    }

    static func read(_ path: String) throws -> [Cue] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw CLIError("--captions \(path): cannot read it as UTF-8 text: \(error.localizedDescription)")
        }
        return try parse(text, path: path)
    }

    static func parse(_ text: String, path: String) throws -> [Cue] {
        var cues: [Cue] = []
        let blocks = text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")
        for block in blocks {
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            guard let timing = lines.firstIndex(where: { $0.contains("-->") }) else {
                if lines.contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty && Int($0.trimmingCharacters(in: .whitespaces)) == nil }) {
                    throw CLIError("--captions \(path): a cue without a 'HH:MM:SS,mmm --> HH:MM:SS,mmm' line: \(lines.first ?? "")")
                }
                continue
            }
            let ends = lines[timing].components(separatedBy: "-->")
            guard ends.count == 2, let start = time(ends[0]), let end = time(ends[1]), end >= start else {
                throw CLIError("--captions \(path): '\(lines[timing])': expected HH:MM:SS,mmm --> HH:MM:SS,mmm, the end not before the start")
            }
            cues.append(Cue(start: start, end: end, text: lines[(timing + 1)...].joined(separator: " ")))
        }
        return cues.sorted { $0.start < $1.start }
    }

    /// `HH:MM:SS,mmm` (or with a dot) in microseconds.
    static func time(_ text: String) -> Int64? {
        let parts = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: ".").split(separator: ":")
        guard parts.count == 3, let h = Int64(parts[0]), let m = Int64(parts[1]), let s = Double(parts[2]),
              h >= 0, (0..<60).contains(m), s >= 0, s < 60 else { return nil }
        return (h * 3600 + m * 60) * 1_000_000 + Int64((s * 1_000_000).rounded())
    }

    /// The cue in force at `time` (the last one started), if any.
    static func cue(in cues: [Cue], at time: Int64) -> Int? {
        cues.lastIndex { $0.start <= time && time < $0.end }
    }
}

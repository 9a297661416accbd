import Foundation
import RawFX
import RawFXSDK
import RawFXAllocCounter
import RawFXEmulator
import RawFXMedia
import Synchronization
import XCTest
@testable import RawFXTestSupport

/// Soak: 720p video and 48 kHz audio through every hook at once (pre-processor, virtual
/// camera, share, production studio video and audio, virtual mic, virtual speaker), plus a
/// `SwappableVideoChain` and an `AudioChain` driven directly, while a control thread swaps
/// chains and changes parameters (`setParameter`, `setBypass`, `replace`) every interval.
/// Checks that no frame or sample is lost, the SDK's rules hold (the emulators' ledgers),
/// raw data references balance, every hook and chain is freed at the end, and resident
/// memory stays flat.
///
/// The suite runs a short version (10 s); `scripts/soak.sh` runs minutes. Environment:
/// RAWFX_SOAK_SECONDS (run length), RAWFX_SOAK_INTERVAL_MS (control period, default 1000),
/// RAWFX_SOAK_FPS (video pacing, default 30; 0: as fast as possible).
final class SoakTests: XCTestCase {
    func testSoakEveryHookWithChainSwapsAndParameterChanges() throws {
        for id in ["mirror", "rotate", "scale", "watermark", "copy", "gain"] where !hasFilter(id, in: builtPlugins) {
            throw XCTSkip("the shipped plugins are not built (no \(id) filter)")
        }
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["RAWFX_SOAK_SECONDS"].flatMap(Double.init) ?? 10
        let interval = environment["RAWFX_SOAK_INTERVAL_MS"].flatMap(Int.init) ?? 1000
        let fps = environment["RAWFX_SOAK_FPS"].flatMap(Int.init) ?? 30

        let leakWatch = LeakWatch()
        let figures = try runSoak(seconds: seconds, intervalMilliseconds: interval, fps: fps, leakWatch: leakWatch)
        print(figures.report)

        XCTAssertGreaterThan(figures.videoFrames, 0)
        XCTAssertGreaterThan(figures.swaps, 0)
        XCTAssertGreaterThan(figures.parameterChanges, 0)
        XCTAssertEqual(leakWatch.alive, [], "still alive after the run (a reference cycle or an unreleased chain)")
        // ASan keeps freed blocks in quarantine (256 MB by default) and TSan's shadow grows with
        // the threads it has seen: resident memory there is not the program's own.
        if rawfx_built_with_sanitizer() == 0 {
            XCTAssertLessThanOrEqual(figures.rssGrowthBytes, Self.rssGrowthLimit,
                                     "resident memory grew after warm-up: \(figures.rssLine)")
        }
    }

    /// The soak's memory check relies on senders that keep no bytes: with them, the emulator's
    /// records stay a few dozen bytes per frame or chunk whatever the run length.
    func testSendersWithoutKeepBytesKeepNoPictureOrPCM() {
        let ledger = ContractLedger()
        let clock = EmulatorClock(manualStart: 0)
        let mic = FakeAudioSender(ledger: ledger, clock: clock)
        let studio = FakePSSender(capability: PSVideoSourceCapability(width: 64, height: 36), ledger: ledger, clock: clock)
        let video = FakeVideoSender(ledger: ledger, clock: clock)
        video.acceptedSizes = [[64, 36]]
        for sender in [mic, studio, video] as [any FakeSender] {
            sender.keepBytes = false
            sender.isAccepting = true
        }
        var buffer = [CChar](repeating: 1, count: 3456)
        buffer.withUnsafeMutableBufferPointer { b in
            XCTAssertEqual(mic.send(b.baseAddress!, dataLength: 960, sampleRate: 48000, channel: .mono), .success)
            XCTAssertEqual(studio.sendAudio(b.baseAddress!, dataLength: 960, sampleRate: 48000, channel: .mono), .success)
            XCTAssertEqual(studio.sendVideoFrame(b.baseAddress!, width: 64, height: 36, frameLength: 3456, format: .i420Full), .success)
            _ = video.sendVideoFrame(b.baseAddress!, width: 64, height: 36, dataLength: 3456, rotation: 0, format: .i420Limited)
        }
        XCTAssertEqual(ledger.violations.map(\.description), [])
        XCTAssertEqual(mic.sent.map(\.samples.count), [0], "the mic sender kept the PCM")
        XCTAssertEqual(studio.sentAudio.map(\.samples.count), [0], "the production studio sender kept the PCM")
        XCTAssertEqual(studio.sentVideo.map(\.bytes.count), [0])
        XCTAssertEqual(video.sent.map(\.bytes.count), [0])
    }

    /// Growth allowed between the warm-up's plateau and the run's last quarter: glibc's arenas
    /// and the emulators' ledgers (a few dozen bytes per frame sent) move a little; a leaked
    /// 720p frame per swap or per second would not fit.
    static let rssGrowthLimit = 24 << 20

    func runSoak(seconds: Double, intervalMilliseconds: Int, fps: Int, leakWatch: LeakWatch) throws -> SoakFigures {
        let registry = builtPlugins
        let processor = RawFXProcessor(registry: registry)
        let format = VideoFormat(width: 1280, height: 720)
        let capability = VideoSourceCapability(width: 1280, height: 720, frame: 30)
        let psCapability = PSVideoSourceCapability(width: 1280, height: 720, format: .i420Full)
        let audioFormat = AudioFormat(sampleRate: 48000, channels: 1)
        let hasDenoise = hasFilter("denoise", in: registry)
        let image = repositoryRoot.appendingPathComponent("docs/images/before-640x360.png").path

        // Chains each hook cycles through. The pre-processor keeps size, rotation and range.
        let preChains = ["mirror", "watermark=image=\(image):opacity=0.6", "copy,mirror=vertical=true", ""]
        let cameraChains = ["rotate=angle=180", "mirror,copy", "watermark=image=\(image):corner=top-right", ""]
        let shareChains = ["scale=width=640:height=360", "mirror", "", "rotate=angle=180"]
        let micChains = ["gain=db=-6", hasDenoise ? "denoise=level=-20" : "gain=db=3", "", "gain=db=2"]
        let speakerChains = ["gain=db=-3", hasDenoise ? "denoise=level=-25" : "gain=db=1", "", "gain=db=4"]

        // One emulator per SDK thread: each has its own manual clock for the pacing checks.
        let videoEmulator = SDKSessionEmulator()
        let publishEmulator = SDKSessionEmulator(clock: EmulatorClock())
        let audioEmulator = SDKSessionEmulator()
        let speakerEmulator = SDKSessionEmulator()
        let emulators = [videoEmulator, publishEmulator, audioEmulator, speakerEmulator]

        let pre = try processor.configurePreProcessor(chain: preChains[0], frameFormat: format)
        let camera = try processor.configureVideoSource(chain: cameraChains[0], mode: .asyncVideoDefault)
        let cameraSession = videoEmulator.videoSourceSession(camera, supported: [capability], suggested: capability)
        let share = try processor.configureShareSource(chain: shareChains[0])
        let shareSession = publishEmulator.shareSession(share)
        // The default pacing: the PS pacer thread sends audio and video (one producer), while
        // the app pushes video and audio from two threads.
        let studio = try processor.configureProductionStudio(capability: psCapability, videoChain: "mirror", audioChain: "gain=db=-1")
        let studioSession = audioEmulator.productionStudioSession(studio)
        let mic = try processor.configureVirtualMic(chain: micChains[0], pacing: .caller)
        let micSession = audioEmulator.micSession(mic)
        for sender in [cameraSession.sender, shareSession.sender, studioSession.sender, micSession.sender] as [any FakeSender] {
            sender.keepBytes = false
        }
        leakWatch.watch(pre, "pre-processor")
        leakWatch.watch(camera, "video source")
        leakWatch.watch(share, "share source")
        leakWatch.watch(studio, "production studio")
        leakWatch.watch(mic, "virtual mic")

        // Driven directly: a swappable video chain and an audio chain with run-time parameters.
        let directChainText = "mirror,watermark=image=\(image):opacity=0.5"
        let firstDirect = try VideoChain(directChainText, registry: registry)
        leakWatch.watch(firstDirect, "direct video chain 0")
        let direct = SwappableVideoChain(firstDirect)
        leakWatch.watch(direct, "swappable video chain")
        let directAudio = try AudioChain(hasDenoise ? "gain=db=0,denoise=level=-20" : "gain=db=0,gain=db=0", registry: registry)
        leakWatch.watch(directAudio, "direct audio chain")
        // The audio thread runs the chain; the control thread reaches it through its control handle.
        let directAudioControl = directAudio.control
        let directAudioOwned = ProcessingThreadOwned(directAudio)

        cameraSession.initialize()
        cameraSession.startSend()
        let cameraSent = Atomic<Int>(0)
        let cameraFailures = Mutex<[String]>([])
        camera.setAsyncResultHandler { status in
            if status == .sent { cameraSent.add(1, ordering: .relaxed) } else { cameraFailures.withLock { if $0.count < 20 { $0.append(status.description) } } }
        }
        shareSession.start()
        studioSession.startResult(true)
        studioSession.startSend()
        micSession.initialize()
        micSession.startSend()

        let stop = Atomic<Bool>(false)
        let speakerGeneration = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let fail: @Sendable (String) -> Void = { message in failures.withLock { if $0.count < 20 { $0.append(message) } } }
        let frameNanoseconds = fps > 0 ? UInt64(1_000_000_000 / fps) : 0
        let counts = SoakCounts()

        // SDK capture thread: camera frames through the pre-processor, then the swappable chain.
        let videoThread = SoakThread("soak-video") {
            let source = PatternFrameSource(format: format)
            let capture = videoEmulator.makeCaptureFrame(format: format)
            var pace = Pacer(periodNanoseconds: frameNanoseconds)
            while !stop.load(ordering: .relaxed) {
                let picture = source.nextFrame()!
                videoEmulator.deliverPreProcess(pre, picture: picture, into: capture)
                do { _ = try direct.process(picture) } catch { fail("swappable chain, frame \(source.index): \(error)") }
                counts.videoFrames.add(1, ordering: .relaxed)
                pace.wait()
            }
        }
        // App threads publishing frames: virtual camera (async), share and production studio (sync).
        let publishThread = SoakThread("soak-publish") {
            // Full range: production studio was started for I420_FULL.
            let source = PatternFrameSource(format: VideoFormat(width: 1280, height: 720, colorRange: .full))
            var pace = Pacer(periodNanoseconds: frameNanoseconds)
            while !stop.load(ordering: .relaxed) {
                let frame = source.nextFrame()!
                // Wait for the worker instead of letting the bounded queue drop: the app's pacing.
                while camera.queuedFrames >= 2 { usleep(500) }
                let cameraStatus = camera.pushFrame(frame)
                if cameraStatus != .queued { fail("video source, frame \(source.index): \(cameraStatus)") }
                let shareStatus = share.pushFrame(frame)
                if shareStatus != .sent { fail("share, frame \(source.index): \(shareStatus)") }
                let studioStatus = studio.pushFrame(frame)
                if studioStatus != .sent { fail("production studio, frame \(source.index): \(studioStatus)") }
                counts.publishedFrames.add(1, ordering: .relaxed)
                pace.wait()
            }
        }
        // App audio thread: 20 ms pushes to the mic and production studio, pumped every 10 ms of
        // the emulator's clock (paced in real time), and the direct audio chain.
        let audioThread = SoakThread("soak-audio") {
            let directAudio = directAudioOwned.value
            let speech = ArrayPCMSource(speechAt: audioFormat, seconds: 3, seed: 7, loop: true)
            var chunk = [Int16](repeating: 0, count: 960)
            var scratch = [Int16](repeating: 0, count: 960)
            var pace = Pacer(periodNanoseconds: 20_000_000)
            var timestamp: Int64 = 0
            while !stop.load(ordering: .relaxed) {
                chunk.withUnsafeMutableBufferPointer { p in
                    _ = speech.read(into: p.baseAddress!, maxFrames: 960)
                    let micStatus = mic.pushAudio(p.baseAddress!, frameCount: 960, format: audioFormat)
                    if !micStatus.isAccepted { fail("virtual mic: \(micStatus)") }
                    let studioStatus = studio.pushAudio(p.baseAddress!, frameCount: 960, format: audioFormat)
                    if !studioStatus.isAccepted { fail("production studio audio: \(studioStatus)") }
                }
                scratch = chunk
                do {
                    try scratch.withUnsafeMutableBufferPointer { p in
                        try directAudio.process(AudioBlock(samples: p.baseAddress!, frameCount: 960, format: audioFormat,
                                                           timestampMicroseconds: timestamp)) { counts.directAudioOut.add($0.frameCount, ordering: .relaxed) }
                    }
                } catch { fail("direct audio chain: \(error)") }
                timestamp += 20_000
                counts.audioPushedFrames.add(960, ordering: .relaxed)
                for _ in 0..<2 {
                    mic.pump(nowMicroseconds: audioEmulator.clock.microseconds)
                    studio.pump(nowMicroseconds: audioEmulator.clock.microseconds)
                    audioEmulator.clock.advance(microseconds: 10_000)
                }
                pace.wait()
            }
            // Drain: every chunk pushed must be sent.
            for _ in 0..<400 where mic.queuedChunks > 0 {
                mic.pump(nowMicroseconds: audioEmulator.clock.microseconds)
                studio.pump(nowMicroseconds: audioEmulator.clock.microseconds)
                audioEmulator.clock.advance(microseconds: 10_000)
            }
            do { try directAudio.flush { counts.directAudioOut.add($0.frameCount, ordering: .relaxed) } } catch { fail("direct audio flush: \(error)") }
        }
        // SDK audio thread: 10 ms speaker callbacks (heap memory, kept with addRef by the async
        // hook) for three streams; the app re-registers the speaker with the next chain at each
        // control tick, as it would to change the speaker's chain.
        let speakerSink = SpeakerCounts()
        // Each hook's streams come out as their input plus the chain's latency (the silence
        // they begin with; the tail is drained when the hook closes): summed here per hook.
        let speakerLatencyFrames = Atomic<Int>(0)
        let speakerThread = SoakThread("soak-speaker") {
            let streams: [AudioStreamID] = [.mixed, .oneWay(SDKUser(1)), .shared]
            let speech = ArrayPCMSource(speechAt: audioFormat, seconds: 2, seed: 11, loop: true)
            var samples = [Int16](repeating: 0, count: 480)
            var generation = 0
            var speaker: VirtualSpeakerHook?
            var pace = Pacer(periodNanoseconds: 10_000_000)
            var milliseconds: UInt64 = 0
            while !stop.load(ordering: .relaxed) {
                let wanted = speakerGeneration.load(ordering: .relaxed)
                if speaker == nil || wanted != generation {
                    generation = wanted
                    do {
                        let chain = speakerChains[generation % speakerChains.count]
                        speaker = try processor.configureVirtualSpeaker(chain: chain, mode: .asyncAudioDefault, retainInAsync: true,
                                                                        sink: speakerSink.sink)
                        let latency = try AudioChain(chain, registry: registry)
                        try latency.negotiate(audioFormat)
                        speakerLatencyFrames.add(latency.latency, ordering: .relaxed)
                        leakWatch.watch(speaker!, "virtual speaker \(generation)")
                    } catch { fail("virtual speaker chain \(generation): \(error)") }
                }
                samples.withUnsafeMutableBufferPointer { p in _ = speech.read(into: p.baseAddress!, maxFrames: 480) }
                for stream in streams {
                    samples.withUnsafeBufferPointer {
                        speakerEmulator.deliverSpeakerAudio(speaker!, stream: stream, samples: $0, format: audioFormat,
                                                            timeStampMilliseconds: milliseconds, memoryMode: .heap)
                    }
                }
                counts.speakerFramesIn.add(480, ordering: .relaxed)
                milliseconds += 10
                speakerEmulator.clock.advance(microseconds: 10_000)
                pace.wait()
            }
            speaker?.close()
        }

        // Control thread (this one): swaps and parameter changes every interval, RSS sampled
        // every 250 ms from /proc/self/statm.
        let start = monotonicNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        var nextControl = start + UInt64(intervalMilliseconds) * 1_000_000
        var nextSample = start
        var tick = 0
        var rss: [(seconds: Double, bytes: Int)] = []
        var swaps = 0
        var parameterChanges = 0
        var metricsReads = 0
        while true {
            let now = monotonicNanoseconds()
            if now >= nextSample {
                rss.append((Double(now - start) / 1e9, residentBytes()))
                nextSample += 250_000_000
            }
            if now >= end { break }
            if now >= nextControl {
                tick += 1
                nextControl += UInt64(intervalMilliseconds) * 1_000_000
                do {
                    try pre.configure(chain: preChains[tick % preChains.count], frameFormat: format)
                    try camera.setChain(cameraChains[tick % cameraChains.count])
                    try share.setChain(shareChains[tick % shareChains.count])
                    try mic.setChain(micChains[tick % micChains.count])
                    speakerGeneration.add(1, ordering: .relaxed)
                    swaps += 5
                    if tick % 3 == 0 {
                        let chain = try VideoChain(directChainText, registry: registry)
                        leakWatch.watch(chain, "direct video chain \(tick)")
                        try direct.replace(with: chain, negotiatingFor: format)
                        swaps += 1
                    }
                    try direct.setParameter("watermark.opacity", String(format: "%.2f", 0.2 + Double(tick % 7) / 10))
                    try direct.setParameter("mirror.vertical", tick % 2 == 0 ? "true" : "false")
                    try direct.setBypass("watermark", tick % 4 == 1)
                    try directAudioControl.setParameter("0.db", String(tick % 13 - 6))
                    try directAudioControl.setBypass("1", tick % 2 == 1)
                    parameterChanges += 5
                    // An app's status display reads every hook's figures while frames flow.
                    metricsReads += processor.metrics.count
                } catch {
                    fail("control tick \(tick): \(error)")
                }
            }
            usleep(10_000)
        }
        stop.store(true, ordering: .relaxed)
        for thread in [videoThread, publishThread, audioThread, speakerThread] { thread.join() }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        XCTAssertGreaterThan(metricsReads, 0)

        // The worker sends what is queued before the session stops.
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while camera.queuedFrames > 0 || camera.metrics.hook.frames + camera.metrics.hook.errors < UInt64(counts.published),
              monotonicNanoseconds() < deadline { usleep(1000) }
        // The PS pacer sends its audio in real time: wait for the last chunks.
        while studio.queuedAudioChunks > 0, monotonicNanoseconds() < deadline { usleep(1000) }
        cameraSession.stopSend()
        cameraSession.uninitialize()
        shareSession.stop()
        studioSession.stopSend()
        micSession.stopSend()
        micSession.uninitialize()

        var figures = SoakFigures(seconds: elapsed, videoFrames: counts.videoFrames.load(ordering: .relaxed),
                                  publishedFrames: counts.published, swaps: swaps,
                                  directSwaps: direct.swapCount, parameterChanges: parameterChanges, rss: rss)
        figures.audioSeconds = Double(counts.audioPushedFrames.load(ordering: .relaxed)) / 48000

        // No frame lost, anywhere.
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(cameraFailures.withLock { $0 }, [])
        let preMetrics = pre.metrics.hook
        XCTAssertEqual(preMetrics.frames, UInt64(figures.videoFrames), "pre-processor frames")
        XCTAssertEqual(preMetrics.errors + preMetrics.drops, 0, "pre-processor: \(preMetrics)")
        XCTAssertEqual(cameraSent.load(ordering: .relaxed), figures.publishedFrames, "video source frames the worker sent")
        XCTAssertEqual(cameraSession.sender.sent.count, figures.publishedFrames, "video source frames the SDK accepted")
        XCTAssertEqual(Set(cameraSession.sender.sent.map { "\($0.width)x\($0.height)" }), ["1280x720"])
        XCTAssertEqual(shareSession.sender.sent.count, figures.publishedFrames, "share frames sent")
        XCTAssertEqual(studioSession.sender.sentVideo.count, figures.publishedFrames, "production studio frames sent")
        let pushedChunks = counts.audioPushedFrames.load(ordering: .relaxed) / 480
        XCTAssertEqual(micSession.sender.sent.count, pushedChunks, "virtual mic chunks sent")
        XCTAssertEqual(studioSession.sender.sentAudio.count, pushedChunks, "production studio audio chunks sent")
        XCTAssertEqual(counts.directAudioOut.load(ordering: .relaxed), counts.audioPushedFrames.load(ordering: .relaxed), "direct audio chain frames")
        let speakerOut = counts.speakerFramesIn.load(ordering: .relaxed) + speakerLatencyFrames.load(ordering: .relaxed)
        for stream in ["mixed", "user 1", "shared"] {
            XCTAssertEqual(speakerSink.frames(stream), speakerOut, "virtual speaker frames, stream \(stream): input plus latency")
        }
        for metrics in processor.metrics where metrics.name != "virtualSpeaker" {
            XCTAssertEqual(metrics.hook.errors + metrics.hook.drops + metrics.refused + metrics.overflows + metrics.sendRejected, 0,
                           "\(metrics)")
        }
        // The SDK's rules and the raw data references (addRef / releaseRef balanced).
        for emulator in emulators {
            XCTAssertEqual(emulator.violations.map(\.description), [])
            XCTAssertEqual(emulator.ledger.outstandingReferences, 0, "raw data references never released")
        }
        figures.speakerFrames = counts.speakerFramesIn.load(ordering: .relaxed)
        figures.micChunks = micSession.sender.sent.count
        processor.close()
        return figures
    }
}

/// Frame and sample counters shared by the soak's threads.
final class SoakCounts: Sendable {
    let videoFrames = Atomic<Int>(0)
    let publishedFrames = Atomic<Int>(0)
    let audioPushedFrames = Atomic<Int>(0)
    let directAudioOut = Atomic<Int>(0)
    let speakerFramesIn = Atomic<Int>(0)
    var published: Int { publishedFrames.load(ordering: .relaxed) }
}

/// Frames the speaker's sink received, per stream (the sink runs on the hooks' workers).
final class SpeakerCounts: @unchecked Sendable {
    private let counts = Mutex<[String: Int]>([:])
    var sink: VirtualSpeakerHook.Sink {
        { [self] stream, block in counts.withLock { $0[stream.description, default: 0] += block.frameCount } }
    }
    func frames(_ stream: String) -> Int { counts.withLock { $0[stream] ?? 0 } }
}

/// Weak references to what the run created: all must be gone once it returns.
final class LeakWatch: Sendable {
    private final class Entry: @unchecked Sendable {
        weak var object: AnyObject?
        let name: String
        init(_ object: AnyObject, _ name: String) {
            self.object = object
            self.name = name
        }
    }
    private let entries = Mutex<[Entry]>([])
    /// From any thread.
    func watch(_ object: AnyObject, _ name: String) { entries.withLock { $0.append(Entry(object, name)) } }
    var alive: [String] { entries.withLock { $0.filter { $0.object != nil }.map(\.name) } }
}

/// What a soak run did.
struct SoakFigures {
    var seconds: Double
    var videoFrames: Int
    var publishedFrames: Int
    var swaps: Int
    var directSwaps: Int
    var parameterChanges: Int
    var rss: [(seconds: Double, bytes: Int)]
    var audioSeconds = 0.0
    var speakerFrames = 0
    var micChunks = 0

    /// Growth of resident memory from the warm-up plateau (the highest sample in the run's
    /// second quarter) to the highest in its last quarter.
    var rssGrowthBytes: Int {
        guard rss.count >= 8 else { return 0 }
        let quarter = rss.count / 4
        let plateau = rss[quarter..<(2 * quarter)].map(\.bytes).max()!
        let last = rss[(rss.count - quarter)...].map(\.bytes).max()!
        return last - plateau
    }

    var rssLine: String {
        // One sample per second is enough to read the trend.
        var line: [String] = []
        var nextSecond = 0.0
        for sample in rss where sample.seconds >= nextSecond {
            line.append(String(format: "%.0fs %.1f", sample.seconds, Double(sample.bytes) / 1_048_576))
            nextSecond = sample.seconds.rounded(.down) + 1
        }
        return "RSS MiB: " + line.joined(separator: ", ")
    }

    var report: String {
        """
        soak: \(String(format: "%.1f", seconds)) s; 720p video frames: \(videoFrames) through the pre-processor and the swappable chain, \
        \(publishedFrames) each to the video source, share and production studio; audio: \(String(format: "%.1f", audioSeconds)) s \
        to the mic and production studio (\(micChunks) chunks), \(speakerFrames / 48) ms on each of 3 speaker streams
        soak: chain swaps \(swaps) (\(directSwaps) taken by the swappable chain), parameter and bypass changes \(parameterChanges), \
        RSS growth after warm-up \(String(format: "%.1f", Double(rssGrowthBytes) / 1_048_576)) MiB
        soak: \(rssLine)
        """
    }
}

/// A thread that runs `body` once; `join` waits for it.
final class SoakThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    init(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [done] in
            body()
            done.signal()
        }
        thread.name = name
        thread.start()
    }
    func join() { done.wait() }
}

/// Sleeps to the next period (a thread that falls behind does not burst to catch up).
struct Pacer {
    let periodNanoseconds: UInt64
    private var next = monotonicNanoseconds()
    init(periodNanoseconds: UInt64) { self.periodNanoseconds = periodNanoseconds }
    mutating func wait() {
        guard periodNanoseconds > 0 else { return }
        next += periodNanoseconds
        let now = monotonicNanoseconds()
        if next > now { usleep(UInt32((next - now) / 1000)) } else { next = now }
    }
}

/// Resident set size of this process, from /proc/self/statm (its second field, in pages).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

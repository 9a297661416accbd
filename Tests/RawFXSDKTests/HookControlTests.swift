import Foundation
import RawFX
import RawFXAllocCounter
import RawFXSDK
import RawFXEmulator
import Synchronization
import XCTest
@testable import RawFXTestSupport

/// Senders that only count: no allocation on the sending thread, so a test can count the
/// frame path's allocations around them.
final class CountingSenders: SDKVideoSender, SDKShareSender, SDKAudioSender, SDKPSSender, Sendable {
    let video = Atomic<Int>(0)
    let audio = Atomic<Int>(0)
    private func counted<E>(_ counter: borrowing Atomic<Int>, _ success: E) -> E {
        counter.add(1, ordering: .relaxed)
        return success
    }
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                        rotation: Int, format: FrameDataFormat) -> VideoSDKError { counted(video, .success) }
    func sendShareFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> VideoSDKError { counted(video, .success) }
    func send(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> VideoSDKError {
        counted(audio, .success)
    }
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> MeetingSDKError { counted(video, .success) }
    func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> MeetingSDKError {
        counted(audio, .success)
    }
}

/// An `AudioRawData` over a buffer the test owns, reused for every callback (the emulator's
/// makes an object per callback, which would count as the hook's allocation).
final class ReusedAudioRawData: AudioRawData, @unchecked Sendable {
    let samples: UnsafeMutablePointer<Int16>
    let frames: Int
    init(frames: Int, value: Int16 = 100) {
        self.frames = frames
        samples = .allocate(capacity: frames)
        samples.initialize(repeating: value, count: frames)
    }
    deinit { samples.deallocate() }
    var buffer: UnsafeMutablePointer<CChar>? { UnsafeMutableRawPointer(samples).assumingMemoryBound(to: CChar.self) }
    var bufferLen: Int { frames * 2 }
    var sampleRate: Int { 48000 }
    var channelNum: Int { 1 }
    var timeStamp: UInt64 { 0 }
    func canAddRef() -> Bool { false }
    func addRef() -> Bool { false }
    func releaseRef() -> Int { 0 }
}

/// Issue #10 for every hook: reconfigured from another thread while the SDK keeps calling it,
/// no callback is lost; the frame path allocates nothing in steady state; lifecycle events
/// reach the app as callbacks and as streams, in order.
final class HookControlTests: XCTestCase {
    let mono48 = AudioFormat(sampleRate: 48000, channels: 1)

    /// Runs `calls` on this thread while another thread runs `reconfigure(i)` in a loop until
    /// the calls are done; returns how many reconfigurations happened (at least one is required).
    @discardableResult
    func whileReconfiguring(_ reconfigure: @escaping @Sendable (Int) throws -> Void, calls: () -> Void) -> Int {
        let done = Atomic<Bool>(false)
        let count = Atomic<Int>(0)
        let failures = Locked<[String]>([])
        let control = Thread {
            var i = 0
            while !done.load(ordering: .acquiring) || i == 0 {
                do { try reconfigure(i) } catch { failures.withLock { $0.append("\(error)") } }
                i += 1
                count.store(i, ordering: .releasing)
                usleep(200)
            }
        }
        control.start()
        calls()
        done.store(true, ordering: .releasing)
        while !control.isFinished { usleep(100) }
        XCTAssertEqual(failures.withLock { $0 }, [], "a reconfiguration was refused")
        let n = count.load(ordering: .acquiring)
        XCTAssertGreaterThan(n, 0)
        return n
    }

    // MARK: Reconfiguring while the SDK calls

    func testPreProcessorReconfiguredWhileFramesFlowLosesNoFrame() throws {
        let hook = try PreProcessorHook(chain: "test_gate=add=1", registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let picture = patternBuffer(width: 64, height: 48)
        let capture = emulator.makeCaptureFrame(format: picture.format)
        let chains = ["test_gate=add=1", "copy,test_gate=add=2"]
        let n = 400
        let edits = whileReconfiguring({ i in
            switch i % 3 {
            case 0: try hook.setChain(chains[(i / 3) % 2])
            case 1: try hook.setParameter("test_gate.add", String(i % 7))
            default: try hook.setBypass("test_gate", i % 2 == 0)
            }
        }) {
            for _ in 0..<n { emulator.deliverPreProcess(hook, picture: picture.frame, into: capture) }
        }
        let m = hook.metrics
        XCTAssertEqual(m.hook.frames, UInt64(n), "frames in \(n), processed \(m.hook.frames) (\(edits) reconfigurations): \(m)")
        XCTAssertEqual(m.hook.errors, 0, "\(String(describing: hook.lastError))")
        // The test_gate stage's figures carry over every swap: processed plus bypassed is every frame.
        let gate = try XCTUnwrap(m.filters.last)
        XCTAssertEqual(gate.frames + gate.bypassed, UInt64(n))
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
    }

    func testSpeakerReconfiguredWhileAudioFlowsLosesNoBlock() throws {
        for mode in [ProcessingMode.sync, .async(capacity: 100)] {
            let out = Atomic<Int>(0)
            let hook = try VirtualSpeakerHook(chain: "gain=db=0,test_accum", registry: processorRegistry(), mode: mode) { _, block in
                out.add(block.frameCount, ordering: .relaxed)
            }
            let emulator = SDKSessionEmulator()
            let pcm = [Int16](repeating: 100, count: 480)
            let streams: [AudioStreamID] = [.mixed, .oneWay(SDKUser(1)), .oneWay(SDKUser(2))]
            let chains = ["gain=db=0,test_accum", "test_accum,gain=db=0"]
            let n = 300
            whileReconfiguring({ i in
                switch i % 3 {
                case 0: try hook.setChain(chains[(i / 3) % 2])
                case 1: try hook.setBypass("test_accum", i % 2 == 0)
                default: try hook.setParameter("gain.db", String(-(i % 3)))
                }
            }) {
                for b in 0..<n {
                    for id in streams { deliverPCM(emulator, hook, id, pcm[...], mono48, ms: UInt64(b * 10)) }
                }
            }
            hook.drain()
            XCTAssertEqual(hook.metrics.hook.frames, UInt64(3 * n), "\(mode)")
            XCTAssertEqual(out.load(ordering: .relaxed), 3 * n * 480, "\(mode): samples in \(3 * n * 480)")
            XCTAssertEqual(hook.metrics.hook.errors, hook.metrics.overflows, "\(mode) \(String(describing: hook.lastError))")
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
            hook.close()
        }
    }

    func testVideoAndShareSourcesReconfiguredWhileFramesArePushedLoseNoFrame() throws {
        let picture = patternBuffer(width: 64, height: 48)
        let chains = ["test_gate=add=1", "copy,test_gate=add=2"]
        let n = 300
        for mode in [ProcessingMode.sync, .async(capacity: n + 1)] {
            let source = try VideoSourceAdapter(chain: "test_gate=add=1", registry: processorRegistry(), mode: mode)
            let share = try ShareSourceAdapter(chain: "test_gate=add=1", registry: processorRegistry(), mode: mode)
            let emulator = SDKSessionEmulator()
            let session = emulator.videoSourceSession(source, supported: [VideoSourceCapability(width: 64, height: 48)],
                                                      suggested: VideoSourceCapability(width: 64, height: 48))
            let shareSession = emulator.shareSession(share)
            session.initialize()
            session.startSend()
            shareSession.start()
            for target: any RunTimeControl in [source, share] {
                whileReconfiguring({ i in
                    switch i % 3 {
                    case 0: try target.setChain(chains[(i / 3) % 2])
                    case 1: try target.setParameter("test_gate.add", String(i % 7))
                    default: try target.setBypass("test_gate", i % 2 == 0)
                    }
                }) {
                    for _ in 0..<n {
                        let status = target === source ? source.pushFrame(picture.frame) : share.pushFrame(picture.frame)
                        XCTAssertTrue(status == .sent || status == .queued, "\(status)")
                    }
                }
            }
            XCTAssertTrue(waitUntil { session.sender.sent.count == n && shareSession.sender.sent.count == n },
                          "\(mode): sent \(session.sender.sent.count) and \(shareSession.sender.sent.count) of \(n)")
            for m in [source.metrics, share.metrics] {
                XCTAssertEqual(m.hook.frames, UInt64(n), "\(mode) \(m.name)")
                XCTAssertEqual(m.hook.errors + m.hook.drops, 0, "\(mode) \(m.name)")
            }
            XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
            source.close()
            share.close()
        }
    }

    func testMicReconfiguredWhileAudioIsPushedLosesNoSample() throws {
        let mic = try VirtualMicAdapter(chain: "gain=db=0", registry: processorRegistry(), pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.micSession(mic)
        session.sender.maxLeadMilliseconds = nil
        session.initialize()
        session.startSend()
        let pcm = [Int16](repeating: 100, count: 480)
        let chains = ["gain=db=0", "gain=db=0,test_accum"]
        let n = 300
        whileReconfiguring({ i in
            switch i % 3 {
            case 0: try mic.setChain(chains[(i / 3) % 2])
            case 1: try mic.setParameter("gain.db", "0")
            default: try mic.setBypass("gain", i % 2 == 0)
            }
        }) {
            for b in 0..<n {
                let status = pcm.withUnsafeBufferPointer { mic.pushAudio($0.baseAddress!, frameCount: 480, format: mono48, timestampMicroseconds: Int64(b) * 10_000) }
                XCTAssertEqual(status, .accepted(chunks: 1))
                mic.pump(nowMicroseconds: Int64(b) * 10_000)
            }
        }
        XCTAssertEqual(session.sender.sent.count, n)
        XCTAssertEqual(session.sender.allSamples.count, n * 480)
        XCTAssertEqual(mic.metrics.hook.frames, UInt64(n))
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        mic.close()
    }

    func testProductionStudioReconfiguredWhileMediaIsPushedLosesNothing() throws {
        let registry = processorRegistry()
        try XCTSkipUnless(hasFilter("scale", in: registry), "the YUV plugin (scale) is not built")
        let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 64, height: 48, format: .i420Limited),
                                             videoChain: "test_gate=add=1", audioChain: "gain=db=0", registry: registry, pacing: .caller)
        let emulator = SDKSessionEmulator()
        let session = emulator.productionStudioSession(ps)
        session.startResult(true)
        session.startSend()
        let picture = patternBuffer(width: 64, height: 48)
        let pcm = [Int16](repeating: 100, count: 480)
        let n = 200
        whileReconfiguring({ i in
            switch i % 4 {
            case 0: try ps.setChain(["test_gate=add=1", "copy,test_gate=add=2"][(i / 4) % 2], for: .video)
            case 1: try ps.setParameter("test_gate.add", String(i % 7), for: .video)
            case 2: try ps.setChain(["gain=db=0", "gain=db=0,test_accum"][(i / 4) % 2], for: .audio)
            default: try ps.setBypass("gain", i % 2 == 0, for: .audio)
            }
        }) {
            for b in 0..<n {
                XCTAssertEqual(ps.push(picture), .sent)
                let status = pcm.withUnsafeBufferPointer { ps.pushAudio($0.baseAddress!, frameCount: 480, format: mono48, timestampMicroseconds: Int64(b) * 10_000) }
                XCTAssertEqual(status, .accepted(chunks: 1))
                ps.pump(nowMicroseconds: Int64(b) * 10_000)
            }
        }
        XCTAssertEqual(session.sender.sentVideo.count, n)
        XCTAssertEqual(session.sender.sentAudio.count, n)
        XCTAssertEqual(ps.videoMetrics.hook.errors + ps.audioMetrics.hook.errors, 0)
        XCTAssertTrue(emulator.violations.isEmpty, "\(emulator.violations)")
        ps.close()
    }

    // MARK: No allocation per frame

    /// Each hook's frame path, sync, and the callback side of async: nothing allocated per
    /// frame or block once warm (counted on this thread with the malloc interposer).
    func testNoHookAllocatesPerFrameInSteadyState() throws {
        let registry = processorRegistry()
        let picture = patternBuffer(width: 64, height: 48)
        let senders = CountingSenders()
        // Warm: an async queue makes its slots on demand, up to capacity + the two in hand
        // (under ThreadSanitizer the worker is slow and the peak comes later).
        let warm = rawfx_built_with_sanitizer() != 0 ? 1000 : 100
        /// Async: with the worker held inside the chain (the test gate), pushes make every slot
        /// the queue can ever need (the one in the worker, `capacity` queued) and fill each with
        /// a picture, then one more push evicts; released, the worker drains them. Slots are
        /// made when needed, so without this a rare interleaving makes the last one mid-test.
        func fillEverySlot(_ mode: ProcessingMode, queued: () -> Int, _ push: () -> PublishStatus) {
            guard mode != .sync else { return }
            GatePlugin.close()
            let entered = GatePlugin.entered
            XCTAssertEqual(push(), .queued)
            // The gate counts every worker: another hook's worker still draining may be the one
            // that entered, so also wait for this queue to be empty (its worker took the frame).
            XCTAssertTrue(waitUntil { GatePlugin.entered > entered && queued() == 0 }, "the worker reached the gate")
            for _ in 0..<3 { XCTAssertEqual(push(), .queued) }
            XCTAssertEqual(push(), .queuedDroppingOldest)
            GatePlugin.open()
        }
        func steady(_ name: String, _ body: () -> Void) {
            for _ in 0..<warm { body() }
            let before = rawfx_thread_allocation_count()
            for _ in 0..<50 { body() }
            XCTAssertEqual(rawfx_thread_allocation_count() - before, 0, "\(name) allocates per frame")
        }
        for mode in [ProcessingMode.sync, .async(capacity: 3)] {
            let chain = "copy,test_gate=add=1"
            let source = try VideoSourceAdapter(chain: chain, registry: registry, mode: mode)
            source.onInitialize(senders, supportCapabilityArray: [VideoSourceCapability(width: 64, height: 48)],
                                suggestCapability: VideoSourceCapability(width: 64, height: 48))
            source.onStartSend()
            fillEverySlot(mode, queued: { source.queuedFrames }) { source.pushFrame(picture.frame) }
            steady("video source \(mode)") { _ = source.pushFrame(picture.frame) }
            let share = try ShareSourceAdapter(chain: chain, registry: registry, mode: mode)
            share.onShareSendStarted(senders)
            fillEverySlot(mode, queued: { share.queuedFrames }) { share.pushFrame(picture.frame) }
            steady("share source \(mode)") { _ = share.pushFrame(picture.frame) }
            let data = ReusedAudioRawData(frames: 480)
            let speaker = try VirtualSpeakerHook(chain: "gain=db=-3,test_accum", registry: registry, mode: mode) { _, _ in }
            steady("virtual speaker \(mode)") {
                speaker.onVirtualSpeakerOneWayAudioReceived(data, user: SDKUser(1))
                speaker.onMixedAudioRawDataReceived(data)
                speaker.drain()
            }
            source.close()
            share.close()
            speaker.close()
        }
        let mic = try VirtualMicAdapter(chain: "gain=db=-3", registry: registry, pacing: .caller)
        mic.onMicInitialize(senders)
        mic.onMicStartSend()
        let pcm = [Int16](repeating: 100, count: 480)
        var t: Int64 = 0
        steady("virtual mic") {
            pcm.withUnsafeBufferPointer { _ = mic.pushAudio($0.baseAddress!, frameCount: 480, format: mono48, timestampMicroseconds: t) }
            mic.pump(nowMicroseconds: t)
            t += 10_000
        }
        XCTAssertGreaterThan(senders.audio.load(ordering: .relaxed), 0)
        mic.close()
        // Production studio: video sent through the audio sender thread, audio paced by pump.
        let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 64, height: 48, format: .i420Limited),
                                             videoChain: "copy,test_gate=add=1", audioChain: "gain=db=-3", registry: registry, pacing: .caller)
        ps.onStartPSModeResult(true)
        ps.onStartSend(senders)
        let videoBefore = senders.video.load(ordering: .relaxed)
        steady("production studio video") { _ = ps.pushFrame(picture.frame) }
        steady("production studio") {
            _ = ps.pushFrame(picture.frame)
            pcm.withUnsafeBufferPointer { _ = ps.pushAudio($0.baseAddress!, frameCount: 480, format: mono48, timestampMicroseconds: t) }
            ps.pump(nowMicroseconds: t)
            t += 10_000
        }
        XCTAssertEqual(senders.video.load(ordering: .relaxed) - videoBefore, 2 * (warm + 50), "every frame pushed was sent")
        ps.close()
    }

    // MARK: Lifecycle events

    func testLifecycleEventsReachTheAppAsCallbacksAndStreamsInOrder() async throws {
        let registry = processorRegistry()
        let source = try VideoSourceAdapter(registry: registry)
        let share = try ShareSourceAdapter(registry: registry)
        let mic = try VirtualMicAdapter(registry: registry, pacing: .caller)
        let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 64, height: 48), registry: registry, pacing: .caller)
        let seen = Locked<[LifecycleEvent]>([])
        for events in [source.lifecycle, share.lifecycle, mic.lifecycle, ps.lifecycle] {
            events.setHandler { event in seen.withLock { $0.append(event) } }
        }
        let streams = [source.lifecycle.stream(), share.lifecycle.stream(), mic.lifecycle.stream(), ps.lifecycle.stream()]
        let emulator = SDKSessionEmulator()
        let small = VideoSourceCapability(width: 64, height: 48)
        let large = VideoSourceCapability(width: 128, height: 96)
        let video = emulator.videoSourceSession(source, supported: [small, large], suggested: small)
        let shareSession = emulator.shareSession(share)
        let micSession = emulator.micSession(mic)
        let psSession = emulator.productionStudioSession(ps)
        // The handler sees the adapter already acting on the event: after a start, frames go out.
        let startedAndSending = Locked<[Bool]>([])
        source.lifecycle.setHandler { event in
            seen.withLock { $0.append(event) }
            if event == .videoSourceStarted { startedAndSending.withLock { $0.append(source.isSending) } }
        }
        video.initialize()
        video.propertyChange(supported: [small, large], suggested: large)
        video.startSend()
        shareSession.start()
        micSession.initialize()
        micSession.startSend()
        psSession.startResult(true)
        psSession.startSend()
        micSession.stopSend()
        psSession.stopSend()
        shareSession.stop()
        video.stopSend()
        video.uninitialize()
        micSession.uninitialize()
        let expected: [LifecycleEvent] = [
            .videoSourceInitialized(small, supported: [small, large]),
            .videoSourceCapabilityChanged(large, supported: [small, large]),
            .videoSourceStarted,
            .shareStarted(hasSender: true),
            .micInitialized, .micStarted,
            .productionStudioModeResult(success: true), .productionStudioStarted,
            .micStopped, .productionStudioStopped, .shareStopped,
            .videoSourceStopped, .videoSourceUninitialized, .micUninitialized,
        ]
        XCTAssertEqual(seen.withLock { $0 }, expected)
        XCTAssertEqual(startedAndSending.withLock { $0 }, [true])
        // Each stream has its source's events in order, and ends when the adapter closes.
        source.close()
        share.close()
        mic.close()
        ps.close()
        var streamed: [[LifecycleEvent]] = []
        for stream in streams {
            var events: [LifecycleEvent] = []
            for await event in stream { events.append(event) }
            streamed.append(events)
        }
        XCTAssertEqual(streamed[0], Array(expected.filter { "\($0)".hasPrefix("video source") }))
        XCTAssertEqual(streamed[1], [.shareStarted(hasSender: true), .shareStopped])
        XCTAssertEqual(streamed[2], [.micInitialized, .micStarted, .micStopped, .micUninitialized])
        XCTAssertEqual(streamed[3], [.productionStudioModeResult(success: true), .productionStudioStarted, .productionStudioStopped])
    }

    /// An app that starts and stops its pump from the stream alone, without wrapping the adapter.
    func testAnAppPumpDrivenByTheLifecycleStream() async throws {
        let source = try VideoSourceAdapter(registry: processorRegistry())
        let emulator = SDKSessionEmulator()
        let cap = VideoSourceCapability(width: 64, height: 48)
        let session = emulator.videoSourceSession(source, supported: [cap], suggested: cap)
        let events = source.lifecycle.stream()
        let picture = patternBuffer(width: 64, height: 48)
        let pump = Task {
            var pushed = 0
            for await event in events {
                guard event == .videoSourceStarted else { continue }
                for _ in 0..<10 where source.pushFrame(picture.frame) == .sent { pushed += 1 }
            }
            return pushed
        }
        session.initialize()
        session.startSend()
        XCTAssertTrue(waitUntil { session.sender.sent.count == 10 })
        session.stopSend()
        source.close()
        let pushed = await pump.value
        XCTAssertEqual(pushed, 10)
    }
}

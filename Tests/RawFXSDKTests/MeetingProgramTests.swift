import Foundation
import RawFX
import RawFXAllocCounter
import RawFXCompose
import RawFXEmulator
import RawFXMedia
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// The meeting's program (#27, first part): received pipes into compositor inputs, status and
/// departures into placeholders and re-flow, one-way audio into the mix and the active speaker,
/// a share into the share layout.
final class MeetingProgramTests: XCTestCase {
    let ledger = ContractLedger()

    func send(_ pipe: EmulatedVideoPipe, _ picture: VideoBuffer) {
        let raw = EmulatedVideoRawData(format: picture.format, ledger: ledger)
        raw.capture(picture.frame)
        pipe.deliver(raw)
    }

    func testPipesBecomeTilesStatusAndDeparturesShowAndReflowAudioPicksTheSpeaker() throws {
        let grey = YUVColor(y: 90)
        let program = try MeetingProgram(compositor: .init(width: 320, height: 180, layout: .grid, placeholder: .color(grey)),
                                         registry: PluginRegistry(), receiveChain: "", mode: .sync)
        let users = (1...3).map { SDKUser(UInt64($0)) }
        let pipes = users.map { EmulatedVideoPipe(user: $0, ledger: ledger) }
        for (pipe, user) in zip(pipes, users) { try program.subscribe(pipe, user: user, resolution: .p360) }
        let pictures = (1...3).map { patternBuffer(width: 160, height: 90, seed: $0) }
        for (pipe, picture) in zip(pipes, pictures) { send(pipe, picture) }
        let compositor = program.compositor
        var output = compositor.compose(frameIndex: 0)
        let placements = compositor.currentScene.placements
        XCTAssertEqual(placements.map(\.id), ["1", "2", "3"])
        // Each tile is its user's frame, scaled alone.
        for (placement, picture) in zip(placements, pictures) {
            let r = placement.rect
            let alone = try VideoChain("scale=width=\(r.width):height=\(r.height):mode=fit", registry: PluginRegistry()).process(picture.frame)
            let tile = tileView(output.raw, x: r.x, y: r.y, width: r.width, height: r.height)
            XCTAssertEqual(planeBytes(tile, 0), planeBytes(alone, 0), placement.id)
        }
        // User 2 turns video off: the placeholder on the next frame, whatever the timeout.
        pipes[1].setStatus(.off)
        output = compositor.compose(frameIndex: 1)
        let second = placements[1].rect
        XCTAssertEqual(output.plane(0)[(second.y + 40) * output.stride(0) + second.x + 40], grey.y)
        pipes[1].setStatus(.on)
        send(pipes[1], pictures[1])
        output = compositor.compose(frameIndex: 2)
        XCTAssertNotEqual(output.plane(0)[(second.y + 40) * output.stride(0) + second.x + 40], grey.y)
        // User 3 leaves: two tiles, re-flowed.
        program.userLeft(users[2])
        _ = compositor.compose(frameIndex: 3)
        XCTAssertEqual(compositor.currentScene.placements.map(\.id), ["1", "2"])
        XCTAssertEqual(pipes[2].subscriberCount, 0)

        // Audio: user 2 talks for 2 s, then user 1: the speaker follows within the hold.
        var samples = [Int16](repeating: 0, count: 480)
        for step in 0..<400 {
            let time = Int64(step) * 10_000
            for user in users.prefix(2) {
                let talking = (step < 200) == (user.userID == 2)
                for i in samples.indices { samples[i] = talking ? Int16(6000 * sin(Double(i) * 0.2)) : 0 }
                try samples.withUnsafeMutableBufferPointer {
                    try program.oneWayAudio(AudioBlock(samples: $0.baseAddress!, frameCount: 480, format: AudioFormat(sampleRate: 48000, channels: 1)),
                                            from: user, at: time)
                }
            }
            if step == 150 { XCTAssertEqual(program.activeSpeaker, "2") }
        }
        XCTAssertEqual(program.activeSpeaker, "1")
        XCTAssertEqual(program.mixer.input("1")?.buffered ?? 0 > 0, true, "the one-way audio reaches the mix")

        // A share: the share layout on the next frame, the speaker beside it; its end: back.
        let sharePipe = EmulatedVideoPipe(user: users[0], kind: .share, ledger: ledger)
        try program.subscribe(sharePipe, user: users[0], kind: .share, resolution: .p720)
        program.shareStarted(by: users[0])
        _ = compositor.compose(frameIndex: 4)
        XCTAssertEqual(compositor.currentScene.layout, .share(speaker: .beside))
        XCTAssertEqual(compositor.currentScene.placements.map(\.id), ["share:1", "1"])
        program.shareStopped()
        _ = compositor.compose(frameIndex: 5)
        XCTAssertEqual(compositor.currentScene.layout, .grid)
    }
}

extension MeetingProgramTests {
    /// The emulated meeting of #27 (`EmulatedMeeting`'s default script: 25 users, jittered
    /// 15 fps cameras, speech-like one-way audio at 32000 Hz with talkers changing every 5 s,
    /// user 2's video off 10–52 s, user 25 leaving at 15 s, a share 20–40 s, users 11 and 12
    /// stalling at 44 s) published by `ProgramPublisher` to the PS sender fake for 60 s: the
    /// whole Done-when list of the issue, asserted on what the sender got.
    func testAnEmulatedMeetingOf25UsersFor60SecondsThroughTheProductionStudioSender() throws {
        let rate = FrameRate(30)
        let clock = EmulatorClock(manualStart: 0)
        let capability = PSVideoSourceCapability(width: 640, height: 360, format: .i420Full)
        let hold: Int64 = 1_500_000
        let program = try MeetingProgram(compositor: .init(width: 640, height: 360, frameRate: rate, colorRange: .full,
                                                           layout: .grid, inputTimeoutMicroseconds: 500_000),
                                         registry: builtPlugins, receiveChain: "", mode: .sync, audioRate: 48000,
                                         speaker: .init(holdMicroseconds: hold), recentSpeakersFirst: true,
                                         decorations: .init(labelStyle: "anchor=bottom_left:size=11:box=true:padding=2:margin=3",
                                                            cardStyle: "anchor=center:size=28",
                                                            captionStyle: "anchor=bottom:size=16:box=true:max_width=0.8:margin=8"),
                                         clock: { clock.microseconds })
        let meeting = try EmulatedMeeting(program: program, clock: clock, ledger: ledger)
        // Live captions, a new one ten times a second (set outside the counted region: the app's
        // control call; the frame path must not allocate for it).
        let words = ["so", "the", "numbers", "for", "this", "quarter", "look", "good", "and", "the", "launch", "is", "on", "track"]
        let ps = try ProductionStudioAdapter(capability: capability, registry: builtPlugins, audioRate: 48000, pacing: .caller)
        let session = SDKSessionEmulator(clock: clock).productionStudioSession(ps)
        session.sender.keepBytes = false
        session.sender.reserveCapacity(video: 2000, audio: 7000)
        session.startResult(true)
        session.startSend()
        let publisher = try ProgramPublisher(program: program, output: .productionStudio(ps))
        let compositor = program.compositor

        var allocations: UInt64 = 0
        var worstOffset: Int64 = 0, worstOffsetSamples: Int64 = 0
        var layouts: [(frame: Int64, layout: CompositorLayout)] = []
        var mainTile: [(time: Int64, id: String?)] = []
        var placeholderChecks: [Int64: Int] = [:]
        var frozen: [String] = []
        let checkFrames: Set<Int64> = [301, 480, 1350, 1590]  // 10 s + 1 frame, 16 s, 45 s, 53 s
        // The pictures of docs/production.md (written there with RAWFX_WRITE_DOCS_IMAGES=1).
        let pictures: [Int64: String] = [150: "production-gallery", 360: "production-video-off", 750: "production-share",
                                         1380: "production-stalled"]
        for frame in 0..<meeting.script.frameCount {
            try meeting.advance(toFrame: frame)
            if frame % 3 == 0 {
                let at = Int(frame / 3)
                program.setCaption((0..<6).map { words[(at + $0) % words.count] }.joined(separator: " "))
            }
            let before = rawfx_thread_allocation_count()
            let picture = publisher.publish(frameIndex: frame)
            if frame >= 60 { allocations += rawfx_thread_allocation_count() - before }
            if let name = pictures[frame] { try writeDocsPicture(picture, name) }
            worstOffset = max(worstOffset, abs(publisher.avOffsetMicroseconds))
            worstOffsetSamples = max(worstOffsetSamples, abs(publisher.avOffsetSamples))
            let scene = compositor.currentScene
            if layouts.last?.layout != scene.layout { layouts.append((frame, scene.layout)) }
            // The speaker's tile: the gallery's first (recent speakers first), beside the share.
            let main = scene.placements.first { !$0.id.hasPrefix("share:") }?.id
            if mainTile.last?.id != main { mainTile.append((rate.timestamp(ofFrame: frame), main)) }
            // Video off, left or stalled: the placeholder, never a frozen tile past the timeout.
            if checkFrames.contains(frame) {
                let shown = compositor.placeholderTilesShown
                _ = compositor.compose(frameIndex: frame)
                placeholderChecks[frame] = compositor.placeholderTilesShown - shown
                if frame == 480, scene.placements.contains(where: { $0.id == "25" }) { frozen.append("25 after leaving") }
            }
        }
        XCTAssertEqual(ps.queuedAudioChunks, 0, "every chunk left with its frame (caller pacing on the program's clock)")
        session.stopSend()
        let sent = session.sender.sentVideo
        XCTAssertEqual(sent.count, 1800, "exactly 30 × 60 frames reached the PS sender")
        XCTAssertTrue(sent.allSatisfy { $0.width == 640 && $0.height == 360 && $0.format == .i420Full && $0.dataLength == capability.frameLength },
                      "every frame capability-exact")
        XCTAssertEqual(publisher.framesSent, 1800)
        XCTAssertEqual(publisher.videoFailures + publisher.audioFailures, 0, "\(String(describing: publisher.lastVideoFailure))")
        let audio = session.sender.sentAudio
        XCTAssertEqual(audio.reduce(0) { $0 + $1.dataLength / 2 }, 60 * 48000, "audio samples out = 60 s × 48000")
        XCTAssertTrue(audio.allSatisfy { $0.sampleRate == 48000 && $0.dataLength % 2 == 0 })
        XCTAssertEqual(publisher.audioSamplesSent, 60 * 48000)
        XCTAssertLessThan(worstOffset, publisher.frameMicroseconds, "A/V offset within one frame throughout")
        XCTAssertLessThan(worstOffsetSamples, 1600, "A/V offset in samples within one frame (1600 at 48000 Hz, 30 fps)")
        XCTAssertEqual(publisher.maximumAVOffsetMicroseconds, worstOffset)
        XCTAssertTrue(ledger.violations.isEmpty, "\(ledger.violations)")
        if rawfx_allocation_counter_active() != 0 {
            XCTAssertEqual(allocations, 0, "allocations per output frame (receive excluded) after warm-up")
        }
        // The speaker tile follows each talker within 1.5 s and never switches faster than the hold.
        let turns = meeting.script.talkTurnMicroseconds
        for change in stride(from: turns, to: 60_000_000, by: Int(turns)) {
            let expected = "\(meeting.talker(at: change))"
            XCTAssert(meeting.speakerChanges.contains { $0.speaker == expected && $0.time >= change && $0.time - change <= 1_500_000 },
                      "talker \(expected) from \(change) µs: \(meeting.speakerChanges)")
            XCTAssert(mainTile.contains { $0.id == expected && $0.time >= change && $0.time - change <= 1_500_000 },
                      "the speaker tile shows \(expected) within 1.5 s of \(change) µs: \(mainTile)")
        }
        for (previous, next) in zip(meeting.speakerChanges, meeting.speakerChanges.dropFirst()) {
            XCTAssertGreaterThanOrEqual(next.time - previous.time, hold, "switched faster than the hold")
        }
        // Share start and stop switch the layout on the next frame.
        XCTAssertEqual(layouts.map(\.frame), [0, 600, 1200])
        XCTAssertEqual(layouts.map(\.layout), [.grid, .share(speaker: .beside), .grid])
        // Placeholders: user 2 off (10 s), still off (16 s; 25 gone, not frozen), + 11 and 12 stalled (45 s), 2 back (53 s).
        XCTAssertTrue(frozen.isEmpty, "\(frozen)")
        XCTAssertEqual(placeholderChecks, [301: 1, 480: 1, 1350: 3, 1590: 2], "tiles showing their placeholder")
        XCTAssertEqual(compositor.currentScene.placements.count, 24, "the user who left is gone")
        XCTAssertEqual(meeting.events.map(\.event), [.videoOff(2), .left(25), .shareStarted(1), .shareStopped(1), .stalled(11), .stalled(12), .videoOn(2)])
    }

    /// Writes a program picture: to docs/images with RAWFX_WRITE_DOCS_IMAGES=1, else to a
    /// temporary folder (read back either way).
    func writeDocsPicture(_ frame: VideoFrame, _ name: String) throws {
        let folder = ProcessInfo.processInfo.environment["RAWFX_WRITE_DOCS_IMAGES"] == "1"
            ? repositoryRoot.appendingPathComponent("docs/images") : temporaryDirectory()
        let path = folder.appendingPathComponent(name + ".png").path
        try PNGWriter.write(frame, to: path)
        let image = try PNGReader.readRGBA(path)
        XCTAssertEqual([image.width, image.height], [frame.width, frame.height], name)
    }

    /// The speaker layout over the emulated meeting's first 8 s: the big tile follows the
    /// talker (users 3, then 4 from 5 s); a picture for docs/production.md.
    func testTheSpeakerLayoutFollowsTheEmulatedTalker() throws {
        let clock = EmulatorClock(manualStart: 0)
        let program = try MeetingProgram(compositor: .init(width: 640, height: 360, colorRange: .full,
                                                           layout: .speaker(filmstrip: .bottom, others: 4),
                                                           inputTimeoutMicroseconds: 500_000),
                                         registry: builtPlugins, receiveChain: "", mode: .sync, audioRate: 48000,
                                         recentSpeakersFirst: true, clock: { clock.microseconds })
        var script = EmulatedMeeting.Script()
        script.seconds = 8
        let meeting = try EmulatedMeeting(program: program, clock: clock, script: script, ledger: ledger)
        program.setGain(SDKUser(4), decibels: -6)  // before their first block: applied when their input is made
        let publisher = try ProgramPublisher(program: program, output: .custom(video: { _ in true }, audio: { _ in true }))
        var big: [Int64: String?] = [:]
        for frame in 0..<script.frameCount {
            try meeting.advance(toFrame: frame)
            let picture = publisher.publish(frameIndex: frame)
            if frame == 120 || frame == 230 { big[frame] = program.compositor.currentScene.placements.first?.id }
            if frame == 230 { try writeDocsPicture(picture, "production-speaker") }
        }
        XCTAssertEqual(big[120], "3", "user 3 talks from 0 s")
        XCTAssertEqual(big[230], "4", "user 4 talks from 5 s")
        XCTAssertEqual(publisher.framesSent, 240)
        XCTAssertEqual(publisher.audioSamplesSent, 8 * 48000)
        XCTAssertEqual(program.mixer.input("4")?.gainDecibels ?? 0, -6, accuracy: 0.001, "the per-user gain")
        XCTAssertEqual(program.name(ofInput: "4"), "User 4")
        XCTAssertEqual(program.name(ofInput: "share:1"), "User 1 (share)")
    }

    /// The other destinations: the external video source with the virtual mic, the program's
    /// sound the virtual speaker's mixed audio (the one-way streams only pick the speaker),
    /// denoised by the Speex plugin before it leaves.
    func testTheProgramGoesToTheVideoSourceAndMicWithTheMixedAudioDenoised() throws {
        let clock = EmulatorClock(manualStart: 0)
        let program = try MeetingProgram(compositor: .init(width: 640, height: 360, layout: .grid, inputTimeoutMicroseconds: 500_000),
                                         registry: builtPlugins, receiveChain: "", mode: .sync, audioRate: 48000,
                                         audioSource: .virtualSpeakerMixed, clock: { clock.microseconds })
        var script = EmulatedMeeting.Script()
        script.seconds = 3
        let meeting = try EmulatedMeeting(program: program, clock: clock, script: script, ledger: ledger)
        let emulator = SDKSessionEmulator(clock: clock)
        let source = try VideoSourceAdapter(registry: builtPlugins)
        let capability = VideoSourceCapability(width: 640, height: 360, frame: 30)
        let video = emulator.videoSourceSession(source, supported: [capability], suggested: capability)
        video.sender.keepBytes = false
        video.initialize()
        video.startSend()
        let mic = try VirtualMicAdapter(registry: builtPlugins, pacing: .caller)
        let micSession = emulator.micSession(mic)
        micSession.sender.maxLeadMilliseconds = nil
        micSession.initialize()
        micSession.startSend()
        let publisher = try ProgramPublisher(program: program, output: .videoSource(source, mic: mic), audioChain: "denoise",
                                             registry: builtPlugins)
        for frame in 0..<script.frameCount {
            try meeting.advance(toFrame: frame)
            publisher.publish(frameIndex: frame)
        }
        XCTAssertEqual(video.sender.sent.count, 90)
        XCTAssertTrue(video.sender.sent.allSatisfy { $0.width == 640 && $0.height == 360 })
        XCTAssertGreaterThan(publisher.audioSamplesSent, 3 * 48000 - 4800, "denoised (its latency aside)")
        XCTAssertGreaterThan(micSession.sender.sent.count, 280)
        XCTAssertNotNil(program.mixer.input(MeetingProgram.mixedAudioInputID))
        XCTAssertNil(program.mixer.input("3"), "the one-way streams are not heard twice")
        XCTAssertEqual(program.activeSpeaker, "3", "the one-way streams still pick the speaker")
        XCTAssertLessThan(publisher.maximumAVOffsetMicroseconds, publisher.frameMicroseconds)
        XCTAssertTrue(ledger.violations.isEmpty, "\(ledger.violations)")
    }

    /// The share source as the destination (a bot that shares its program into the meeting),
    /// video only; and a production studio started for another size is refused up front.
    func testTheProgramGoesToTheShareSourceAndAMismatchedCapabilityIsRefused() throws {
        let clock = EmulatorClock(manualStart: 0)
        let program = try MeetingProgram(compositor: .init(width: 640, height: 360, layout: .grid),
                                         registry: builtPlugins, receiveChain: "", mode: .sync, audioRate: 48000,
                                         clock: { clock.microseconds })
        var script = EmulatedMeeting.Script()
        script.seconds = 1
        let meeting = try EmulatedMeeting(program: program, clock: clock, script: script, ledger: ledger)
        let share = try ShareSourceAdapter(registry: builtPlugins)
        let session = SDKSessionEmulator(clock: clock).shareSession(share)
        session.sender.keepBytes = false
        session.start()
        let publisher = try ProgramPublisher(program: program, output: .shareSource(share, mic: nil))
        for frame in 0..<script.frameCount {
            try meeting.advance(toFrame: frame)
            publisher.publish(frameIndex: frame)
        }
        XCTAssertEqual(session.sender.sent.count, 30)
        XCTAssertEqual(publisher.audioSamplesSent, 0, "no mic: video only")
        let ps = try ProductionStudioAdapter(capability: PSVideoSourceCapability(width: 1280, height: 720), registry: builtPlugins)
        XCTAssertThrowsError(try ProgramPublisher(program: program, output: .productionStudio(ps))) {
            XCTAssertTrue("\($0)".contains("production studio was started for 1280x720"), "\($0)")
        }
    }

    /// Names, initials cards and captions: each tile of the decorated program is the `text`
    /// filter run alone on that tile of the undecorated program (a frame of the tile's size), a
    /// placeholder tile gets the initials card first, the caption bar is the filter run alone on
    /// the whole picture, and a rename or a new caption shows within a few frames (the filter
    /// lays text out on a control thread, then swaps it in).
    func testNamesInitialsAndCaptionsAreTheTextFilterOnEachTileAndTheProgram() throws {
        let registry = PluginRegistry()
        guard (try? registry.filterType("text")) != nil else { throw XCTSkip("the Text plugin was not built") }
        let style = MeetingProgram.Decorations.standard
        func make(_ decorations: MeetingProgram.Decorations?) throws -> (MeetingProgram, [EmulatedVideoPipe]) {
            let program = try MeetingProgram(compositor: .init(width: 640, height: 360, layout: .grid, placeholder: .color(YUVColor(y: 60)),
                                                               inputTimeoutMicroseconds: 3_600_000_000),
                                             registry: registry, receiveChain: "", mode: .sync, decorations: decorations)
            let users = [SDKUser(1), SDKUser(2)]
            program.userJoined(users[0], name: "Ada Lovelace")
            let pipes = users.map { EmulatedVideoPipe(user: $0, ledger: ledger) }
            for (pipe, user) in zip(pipes, users) { try program.subscribe(pipe, user: user, resolution: .p360) }
            program.userJoined(users[1], name: "Grace Hopper")  // after subscribing: the label follows
            for (index, pipe) in pipes.enumerated() { send(pipe, patternBuffer(width: 320, height: 180, seed: index + 1)) }
            return (program, pipes)
        }
        let (plain, plainPipes) = try make(nil)
        let (decorated, decoratedPipes) = try make(style)
        decorated.setCaption("The analytical engine weaves algebraic patterns")

        /// A copy of the tile `rect` of `frame` as a frame of its own.
        func tile(_ frame: VideoFrame, _ r: TileRect) -> VideoBuffer {
            let copy = VideoBuffer(format: VideoFormat(width: r.width, height: r.height, colorRange: frame.format.colorRange))
            tileView(frame.raw, x: r.x, y: r.y, width: r.width, height: r.height).copy(to: copy.frame)
            return copy
        }
        func textAlone(_ picture: VideoBuffer, _ style: String, _ text: String) throws -> VideoBuffer {
            let chain = try VideoChain("text=\(style)", registry: registry)
            try chain.control.setParameter("text.text", text)
            let out = try chain.process(picture.frame)
            let copy = VideoBuffer(format: picture.format)
            out.copy(to: copy.frame)
            return copy
        }
        /// The expected program: the undecorated one with the filter run alone on each tile, then on the whole.
        func expected(_ names: [String: String], cards: Set<String>, caption: String, frame index: Int64) throws -> VideoBuffer {
            let base = plain.compositor.compose(frameIndex: index)
            let whole = VideoBuffer(format: base.format)
            base.copy(to: whole.frame)
            for placement in plain.compositor.currentScene.placements {
                var piece = tile(whole.frame, placement.rect)
                if cards.contains(placement.id) {
                    piece = try textAlone(piece, style.cardStyle!, MeetingProgram.initials(of: names[placement.id]!))
                }
                piece = try textAlone(piece, style.labelStyle!, names[placement.id]!)
                let r = placement.rect
                piece.frame.copy(to: tileView(whole.frame.raw, x: r.x, y: r.y, width: r.width, height: r.height))
            }
            return try textAlone(whole, style.captionStyle!, caption)
        }
        /// Composes until the decorated program equals `want` (the text filter swaps new text in
        /// after its control-thread layout), at most 10 s (a bound for a stuck layout, not a
        /// speed: under a sanitizer on a loaded machine the layout thread may lag seconds).
        func composeUntilEqual(_ want: VideoBuffer, from index: inout Int64, _ what: String) {
            let deadline = Date().addingTimeInterval(10)
            var got: [UInt8] = []
            repeat {
                got = planeBytes(decorated.compositor.compose(frameIndex: index), 0)
                index += 1
                if got == planeBytes(want.frame, 0) { return }
                usleep(5000)
            } while Date() < deadline
            XCTFail("\(what): the decorated program is not the text filter's drawing on each tile and the whole")
        }
        var index: Int64 = 0
        var names = ["1": "Ada Lovelace", "2": "Grace Hopper"]
        var want = try expected(names, cards: [], caption: "The analytical engine weaves algebraic patterns", frame: 0)
        composeUntilEqual(want, from: &index, "names and a caption")
        XCTAssertEqual(planeBytes(decorated.compositor.compose(frameIndex: index), 1), planeBytes(want.frame, 1), "chroma")
        // Video off: the placeholder with the initials card under the name.
        plainPipes[1].setStatus(.off)
        decoratedPipes[1].setStatus(.off)
        want = try expected(names, cards: ["2"], caption: "The analytical engine weaves algebraic patterns", frame: index)
        composeUntilEqual(want, from: &index, "an initials card on the placeholder")
        // A rename and a new caption.
        decorated.userJoined(SDKUser(1), name: "Augusta Ada King")
        decorated.setCaption("مرحبا بالعالم")
        names["1"] = "Augusta Ada King"
        want = try expected(names, cards: ["2"], caption: "مرحبا بالعالم", frame: index)
        composeUntilEqual(want, from: &index, "a rename and an Arabic caption")
        XCTAssertEqual(decorated.compositor.overlayFailureCount, 0)
        XCTAssertEqual(MeetingProgram.initials(of: "Grace Hopper"), "GH")
        XCTAssertEqual(MeetingProgram.initials(of: "Plato"), "P")
        XCTAssertEqual(MeetingProgram.initials(of: "User 7"), "U7")
    }

    /// By default (`.sync`) a received frame is copied once, on the SDK's thread, into its
    /// input, and the stream's chain (`rotate=angle=auto`) runs on the compose thread: a frame
    /// with rotation metadata is drawn upright, as the rotate filter turns it alone, and the
    /// SDK's buffer is never read after the callback (the ledger says so).
    func testTheDefaultReceiveChainTurnsARotatedFrameOnTheComposeThread() throws {
        let program = try MeetingProgram(compositor: .init(width: 180, height: 320, layout: .single), registry: builtPlugins)
        let pipe = EmulatedVideoPipe(user: SDKUser(5), ledger: ledger)
        try program.subscribe(pipe, user: SDKUser(5), resolution: .p360)
        let picture = patternBuffer(width: 320, height: 180, rotation: 90, seed: 3)
        let raw = EmulatedVideoRawData(format: picture.format, rotation: .rotation90, ledger: ledger)
        raw.capture(picture.frame)
        pipe.deliver(raw)
        let output = program.compositor.compose(frameIndex: 0)
        let turned = try VideoChain("rotate=angle=auto", registry: builtPlugins).process(picture.frame)
        let upright = VideoBuffer(format: turned.format)
        turned.copy(to: upright.frame)
        let expected = try VideoChain("scale=width=180:height=320:mode=fit", registry: builtPlugins).process(upright.frame)
        XCTAssertEqual(turned.width, 180)
        for p in 0..<3 { XCTAssert(planeBytes(output, p) == planeBytes(expected, p), "plane \(p)") }
        XCTAssertEqual(ledger.violations, [], "the SDK's frame is not touched after its callback")
    }
}

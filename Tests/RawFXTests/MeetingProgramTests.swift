import Foundation
import RawFX
import RawFXAllocCounter
import RawFXCompose
import RawFXEmulator
import RawFXSDK
import XCTest

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
            var tile = output.raw
            tile.width = UInt32(r.width)
            tile.height = UInt32(r.height)
            tile.planes.0 = tile.planes.0! + r.y * Int(tile.strides.0) + r.x
            tile.planes.1 = tile.planes.1! + r.y / 2 * Int(tile.strides.1) + r.x / 2
            tile.planes.2 = tile.planes.2! + r.y / 2 * Int(tile.strides.2) + r.x / 2
            XCTAssertEqual(planeBytes(VideoFrame(tile), 0), planeBytes(alone, 0), placement.id)
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
    /// The emulated meeting of #27: 25 users, 60 s of media on a virtual clock (frames and
    /// audio blocks delivered with jitter in their order), talkers changing every 5 s, a share
    /// from 20 s to 40 s, two users turning video off and one leaving.
    func testAnEmulatedMeetingOf25UsersFor60Seconds() throws {
        let rate = FrameRate(30)
        let virtualTime = Locked<Int64>(0)
        let program = try MeetingProgram(compositor: .init(width: 640, height: 360, frameRate: rate, layout: .grid,
                                                           inputTimeoutMicroseconds: 500_000),
                                         registry: PluginRegistry(), receiveChain: "", mode: .sync, audioRate: 48000,
                                         clock: { virtualTime.withLock { $0 } })
        let users = (1...25).map { SDKUser(UInt64($0)) }
        let pipes = users.map { EmulatedVideoPipe(user: $0, ledger: ledger) }
        for (pipe, user) in zip(pipes, users) { try program.subscribe(pipe, user: user, resolution: .p180) }
        let sharePipe = EmulatedVideoPipe(user: users[0], kind: .share, ledger: ledger)
        let pictures = (0..<4).map { patternBuffer(width: 320, height: 180, seed: $0) }
        let raws = pictures.map { picture -> EmulatedVideoRawData in
            let raw = EmulatedVideoRawData(format: picture.format, ledger: ledger)
            raw.capture(picture.frame)
            return raw
        }
        let compositor = program.compositor
        func talker(at t: Int64) -> Int { Int(t / 5_000_000) % 7 + 3 }  // users 3…9 in turn
        var samples = [Int16](repeating: 0, count: 480)
        var frameTimes: [Int64] = []
        var changes: [(time: Int64, speaker: String)] = []
        var lastSpeaker: String?
        var audioBlocks: Int64 = 0, audioSamples = 0
        var nextBlock: Int64 = 0
        var composeAllocations: UInt64 = 0
        var layouts: [(frame: Int64, layout: CompositorLayout)] = []
        for frame: Int64 in 0..<(30 * 60) {
            let time = rate.timestamp(ofFrame: frame)
            virtualTime.withLock { $0 = time }
            // Events.
            if frame == 20 * 30 { try program.subscribe(sharePipe, user: users[0], kind: .share, resolution: .p720); program.shareStarted(by: users[0]) }
            if frame == 40 * 30 { program.shareStopped(); program.unsubscribe(user: users[0], kind: .share) }
            if frame == 10 * 30 { pipes[1].setStatus(.off) }
            if frame == 15 * 30 { program.userLeft(users[24]) }
            // Video: each user's frames at 15 fps with a jitter of a few ms (users 11 and 12
            // stall from 44 s on: a frozen tile never outlives the 0.5 s timeout).
            for (index, pipe) in pipes.enumerated() where index != 24 || frame < 15 * 30 {
                if index == 1 && frame >= 10 * 30 { continue }
                if (index == 10 || index == 11) && frame >= 44 * 30 { continue }
                if (frame + Int64(index)) % 2 == 0 { pipe.deliver(raws[(Int(frame) + index) % 4]) }
            }
            if frame >= 20 * 30 && frame < 40 * 30 { sharePipe.deliver(raws[0]) }
            // Audio: every user's 10 ms blocks up to this frame's end, the talker loud.
            let blocks = AudioMixer.blocks(forVideoFrame: frame, rate: rate)
            while nextBlock < blocks.upperBound + 2 {
                let blockTime = nextBlock * 10_000
                for user in users.prefix(24) {
                    let loud = Int(user.userID) == talker(at: blockTime)
                    for i in samples.indices { samples[i] = loud ? Int16(6000 * sin(Double(i) * 0.2 + Double(user.userID))) : Int16(i % 3) }
                    try samples.withUnsafeMutableBufferPointer {
                        try program.oneWayAudio(AudioBlock(samples: $0.baseAddress!, frameCount: 480,
                                                           format: AudioFormat(sampleRate: 48000, channels: 1)), from: user, at: blockTime)
                    }
                }
                if program.activeSpeaker != lastSpeaker, let speaker = program.activeSpeaker {
                    changes.append((blockTime, speaker))
                    lastSpeaker = speaker
                }
                nextBlock += 1
            }
            // The program: the picture, then its audio blocks.
            let before = rawfx_thread_allocation_count()
            let picture = compositor.compose(frameIndex: frame)
            if frame >= 60 { composeAllocations += rawfx_thread_allocation_count() - before }
            frameTimes.append(picture.timestampMicroseconds)
            XCTAssertEqual(picture.width, 640)
            for block in blocks {
                audioSamples += program.mixer.mix(blockIndex: block).frameCount
                audioBlocks += 1
            }
            if layouts.last?.layout != compositor.currentScene.layout { layouts.append((frame, compositor.currentScene.layout)) }
            // Video off and stalled users show their placeholder; nobody's tile is frozen past the timeout.
            if frame == 10 * 30 + 1 || frame == 45 * 30 {
                let shown = compositor.placeholderTilesShown
                _ = compositor.compose(frameIndex: frame)
                let placeholders = compositor.placeholderTilesShown - shown
                XCTAssertEqual(placeholders, frame == 10 * 30 + 1 ? 1 : 3, "frame \(frame): tiles showing their placeholder")
            }
        }
        XCTAssertEqual(frameTimes.count, 1800, "exactly 30 × 60 frames")
        XCTAssertEqual(frameTimes, (0..<1800).map { rate.timestamp(ofFrame: Int64($0)) })
        XCTAssertEqual(audioBlocks, 6000, "every 10 ms block once")
        XCTAssertEqual(audioSamples, 60 * 48000)
        if rawfx_allocation_counter_active() != 0 { XCTAssertEqual(composeAllocations, 0, "allocations on the compose calls after warm-up") }
        // The speaker follows each talker within 1.5 s and never switches faster than the hold.
        for change in stride(from: Int64(5_000_000), to: 60_000_000, by: 5_000_000) {
            let expected = "\(talker(at: change))"
            XCTAssert(changes.contains { $0.speaker == expected && $0.time >= change && $0.time - change <= 1_500_000 },
                      "talker \(expected) from \(change) µs: \(changes)")
        }
        for (previous, next) in zip(changes, changes.dropFirst()) { XCTAssertGreaterThanOrEqual(next.time - previous.time, 1_500_000) }
        // The share switched the layout on the next frame, and back.
        XCTAssertEqual(layouts.map(\.frame), [0, 600, 1200])
        XCTAssertEqual(layouts.map(\.layout), [.grid, .share(speaker: .beside), .grid])
        XCTAssertEqual(compositor.currentScene.placements.count, 24, "the user who left is gone")
    }
}

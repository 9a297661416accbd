import Foundation
import RawFX
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

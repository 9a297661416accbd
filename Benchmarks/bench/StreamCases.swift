// Many received streams over the receive hook's worker pool (issue #11, item 6): N users, each
// with its own chain instance and state, driven through `onRawDataFrameReceived` in async mode
// with 1 worker and with 2. Aggregate throughput is frames of all users per second of wall time.
import Foundation
import Synchronization
import RawFX
import RawFXSDK

/// One unit = `framesPerUser` frames of every user (each a different frame of the pool),
/// delivered user after user on the bench thread as the SDK's threads would, then waited for:
/// the sink counts processed frames and signals once, at the unit's last (a wake-up of the
/// bench thread per frame would take the CPU the workers measure). Several frames per unit keep the workers busy
/// across a user's frames, as a live session does, instead of measuring one wake-up per frame.
/// p50 per unit is the batch's wall time, so the throughput ratio between worker counts is the
/// speedup. The capacity exceeds the frames per user in flight: nothing is dropped.
final class ReceiveStreamsAsync: Workload, ThreadCounted {
    static let framesPerUser = 4
    let hook: ReceiveVideoHook
    let threads: Int
    let pool: FramePool
    private let pipes: [BenchPipe]
    /// [user * framesPerUser + k]: a frame object per frame in flight, in the SDK's heap memory
    /// mode (`addRef` succeeds: the hook queues the frame and the SDK's thread copies nothing);
    /// turned 90°, as phones send it, for the chain's `rotate=angle=auto`.
    private let frames: [BenchVideoRawData]
    private let unitDone = DispatchSemaphore(value: 0)
    /// Frames processed so far, over all units.
    private let processed = FrameCounter()

    final class FrameCounter: @unchecked Sendable {
        let value = Atomic<Int>(0)
    }

    init(chain: String, registry: PluginRegistry, users: Int, workers: Int, pool: FramePool) throws {
        self.pool = pool
        threads = workers
        let unitDone = self.unitDone, processed = self.processed
        let perUnit = users * Self.framesPerUser
        hook = try ReceiveVideoHook(chain: chain, registry: registry,
                                    mode: .async(capacity: 2 * Self.framesPerUser, workers: workers)) { _, _ in
            // A unit's frames all finish before the next unit is delivered.
            if processed.value.add(1, ordering: .acquiringAndReleasing).newValue % perUnit == 0 { unitDone.signal() }
        }
        pipes = (0..<users).map { _ in BenchPipe() }
        frames = (0..<users * Self.framesPerUser).map { _ in BenchVideoRawData(retainable: true) }
        let format = VideoFormat(width: pool.format.width, height: pool.format.height, rotation: 90)
        for (user, pipe) in pipes.enumerated() {
            try hook.subscribe(pipe, user: SDKUser(UInt64(user + 1)), resolution: .p360, format: format)
        }
    }

    deinit { hook.close() }

    func run(_ i: Int) throws {
        let users = pipes.count, count = frames.count
        for k in 0..<Self.framesPerUser {
            for user in 0..<users {
                let index = user &* Self.framesPerUser &+ k
                let raw = frames[index]
                raw.frame = pool.frame(i &* count &+ index)
                raw.timeStamp = UInt64(i &* Self.framesPerUser &+ k) &* 33
                pipes[user].delegate!.onRawDataFrameReceived(raw)
            }
        }
        unitDone.wait()
    }
}

func streamCases() -> [BenchCase] {
    let shapes: [(users: Int, input: Resolution, tile: (width: Int, height: Int))] = [
        // 8 users at 360p, each uprighted and scaled to a 180×320 gallery tile.
        (8, .p360, (180, 320)),
        // 25 users at 180p (the SDK's size for a 5×5 gallery), uprighted, to 90×160 tiles.
        (25, Resolution(name: "180p", width: 320, height: 180), (90, 160)),
    ]
    return shapes.map { shape in
        let chain = "rotate=angle=auto,scale=width=\(shape.tile.width):height=\(shape.tile.height):filter=bilinear:mode=stretch"
        return BenchCase(
            name: "streams-\(shape.users)x\(shape.input.name)", kind: .video, filters: ["rotate", "scale"], unit: "batch",
            summary: "\(shape.users) users' received \(shape.input.name) video (turned 90), each through its own `\(chain)`, "
                + "via onRawDataFrameReceived in async mode over the hook's pool at 1 worker; one unit = "
                + "\(ReceiveStreamsAsync.framesPerUser) frames of every user, delivered and processed "
                + "(frames/s = rate × \(ReceiveStreamsAsync.framesPerUser * shape.users))",
            directSummary: nil,
            make: { context in
                let pool = context.framePool(width: shape.input.width, height: shape.input.height)
                let one = try ReceiveStreamsAsync(chain: chain, registry: context.registry, users: shape.users, workers: 1, pool: pool)
                let two = try ReceiveStreamsAsync(chain: chain, registry: context.registry, users: shape.users, workers: 2, pool: pool)
                return .init(chain: chain, engine: one, direct: nil, filterCount: 2,
                             references: [.init(short: "2 workers", label: "the same users over a pool of 2 workers (wall time: "
                                                    + "its ratio to 1 worker is the speedup)", workload: two, threads: 2)]
                                 + BenchCase.ceilingReferences())
            })
    }
}

// Many received streams over the receive hook's worker pool (issue #11, item 6): N users, each
// with its own chain instance and state, driven through `onRawDataFrameReceived` in async mode
// with 1 worker and with 2. Aggregate throughput is frames of all users per second of wall time.
import Foundation
import Synchronization
import RawFX
import RawFXSDK

/// One unit = `framesPerUser` frames of every user (each a different frame of the pool),
/// delivered user after user on the bench thread as the SDK's threads would. Two units are in
/// flight, as in a live session where frames keep arriving while earlier ones are processed:
/// `prepareSlice` delivers one unit, then each `run` delivers the next and waits until the
/// oldest is done, so the workers never run dry between units (a barrier per unit cost the
/// 2-worker path a wake-up and an idle tail each time, 10-15 % of its speed at 180p). The sink
/// counts each user's frames and signals once per unit, at its last frame (a wake-up of the
/// bench thread per frame would take the CPU the workers measure); `finishSlice` waits for
/// what is in flight, so no path's slice overlaps another's. p50 per unit is the steady-state
/// time per unit, so the ratio between worker counts is the speedup. Each user's queue holds
/// two units: nothing is dropped.
final class ReceiveStreamsAsync: Workload, ThreadCounted {
    static let framesPerUser = 4
    let hook: ReceiveVideoHook
    let threads: Int
    let pool: FramePool
    private let pipes: [BenchPipe]
    /// [set * users * framesPerUser + user * framesPerUser + k]: a frame object per frame in
    /// flight (two sets: units alternate), in the SDK's heap memory mode (`addRef` succeeds:
    /// the hook queues the frame and the SDK's thread copies nothing); turned 90°, as phones
    /// send it, for the chain's `rotate=angle=auto`.
    private let frames: [BenchVideoRawData]
    private let unitDone = DispatchSemaphore(value: 0)
    private let progress: Progress
    /// Units delivered and not yet waited for (0, 1 or 2), and units delivered in all.
    private var inFlight = 0
    private var delivered = 0

    /// Counted on the workers: a user's frames arrive at the sink in order, so a user's
    /// count says which unit its frame belongs to; the units' counts say when one is done.
    final class Progress: @unchecked Sendable {
        final class Counter: @unchecked Sendable { let value = Atomic<Int>(0) }
        let perUser: [Counter]
        let perUnit = [Counter(), Counter()]
        let framesPerUnit: Int
        init(users: Int, framesPerUnit: Int) {
            perUser = (0..<users).map { _ in Counter() }
            self.framesPerUnit = framesPerUnit
        }
    }

    init(chain: String, registry: PluginRegistry, users: Int, workers: Int, pool: FramePool) throws {
        self.pool = pool
        threads = workers
        let unitDone = self.unitDone
        let progress = Progress(users: users, framesPerUnit: users * Self.framesPerUser)
        self.progress = progress
        hook = try ReceiveVideoHook(chain: chain, registry: registry,
                                    mode: .async(capacity: 2 * Self.framesPerUser, workers: workers)) { stream, _ in
            let user = Int(stream.user.userID) - 1
            let unit = progress.perUser[user].value.add(1, ordering: .relaxed).oldValue / Self.framesPerUser
            let slot = progress.perUnit[unit & 1]
            if slot.value.add(1, ordering: .acquiringAndReleasing).newValue == progress.framesPerUnit {
                // Reused by unit + 2, which is delivered only after this signal is taken.
                slot.value.store(0, ordering: .releasing)
                unitDone.signal()
            }
        }
        pipes = (0..<users).map { _ in BenchPipe() }
        frames = (0..<2 * users * Self.framesPerUser).map { _ in BenchVideoRawData(retainable: true) }
        let format = VideoFormat(width: pool.format.width, height: pool.format.height, rotation: 90)
        for (user, pipe) in pipes.enumerated() {
            try hook.subscribe(pipe, user: SDKUser(UInt64(user + 1)), resolution: .p360, format: format)
        }
    }

    deinit {
        finishSlice()
        hook.close()
    }

    /// Delivers the next unit (the pool's frames in order, the frame objects of set
    /// `delivered` mod 2), user after user, as the SDK's threads would.
    private func deliver() {
        let users = pipes.count, perSet = users &* Self.framesPerUser
        let set = (delivered & 1) &* perSet
        for k in 0..<Self.framesPerUser {
            for user in 0..<users {
                let index = user &* Self.framesPerUser &+ k
                let raw = frames[set &+ index]
                raw.frame = pool.frame(delivered &* perSet &+ index)
                raw.timeStamp = UInt64(delivered &* Self.framesPerUser &+ k) &* 33
                pipes[user].delegate!.onRawDataFrameReceived(raw)
            }
        }
        delivered &+= 1
        inFlight += 1
    }

    /// Outside the timed region: one unit goes in first, so that every timed unit delivers
    /// one and waits for the one before it (a timed first unit with nothing to wait for
    /// would be a sample of delivery alone, and with few units per slice it set the p50).
    func prepareSlice() {
        deliver()
    }

    func run(_ i: Int) throws {
        deliver()
        // Units finish in order (each user's frames do): this takes the oldest unit's signal.
        unitDone.wait()
        inFlight -= 1
    }

    func finishSlice() {
        while inFlight > 0 {
            unitDone.wait()
            inFlight -= 1
        }
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

// Received video (issue #10): what the receive hook costs over running each user's chain
// directly. Both paths run the same chain text, one chain instance per user.
import RawFX
import RawFXSDK
import Synchronization

/// A participant's frame as the SDK lends it: planes from the bench's pool. Not retainable by
/// default (the hook copies or processes it in the callback); `retainable` is the SDK's heap
/// memory mode, where `addRef` succeeds and the hook queues the frame itself.
final class BenchVideoRawData: VideoRawData {
    let retainable: Bool
    /// References the hook holds (`addRef` minus `releaseRef`): a workload that reuses frame
    /// objects picks one nobody holds.
    let references = Atomic<Int>(0)
    init(retainable: Bool = false, rotation: SDKVideoRawDataRotation = .rotation90) {
        self.retainable = retainable
        rotationValue = rotation
    }
    var frame = VideoFrame(rawfx_video_frame())
    var rotationValue: SDKVideoRawDataRotation
    var streamWidth: Int { frame.width }
    var streamHeight: Int { frame.height }
    var yBuffer: UnsafeMutablePointer<CChar>? { UnsafeMutableRawPointer(frame.plane(0)).assumingMemoryBound(to: CChar.self) }
    var uBuffer: UnsafeMutablePointer<CChar>? { UnsafeMutableRawPointer(frame.plane(1)).assumingMemoryBound(to: CChar.self) }
    var vBuffer: UnsafeMutablePointer<CChar>? { UnsafeMutableRawPointer(frame.plane(2)).assumingMemoryBound(to: CChar.self) }
    var yStride: Int { frame.stride(0) }
    var uStride: Int { frame.stride(1) }
    var vStride: Int { frame.stride(2) }
    var rotation: SDKVideoRawDataRotation { rotationValue }
    var isLimitedI420: Bool { true }
    var timeStamp: UInt64 = 0
    func canAddRef() -> Bool { retainable }
    func addRef() -> Bool {
        guard retainable else { return false }
        references.add(1, ordering: .acquiringAndReleasing)
        return true
    }
    func releaseRef() -> Int { references.subtract(1, ordering: .acquiringAndReleasing).newValue }
}

/// The smallest pipe: it keeps the delegate the hook subscribes and calls it.
final class BenchPipe: SDKRawDataPipe {
    var delegate: (any SDKRawDataPipeDelegate)?
    func subscribe(with delegate: any SDKRawDataPipeDelegate, resolution: SDKVideoResolution) -> VideoSDKError {
        self.delegate = delegate
        return .success
    }
    func unSubscribe(with delegate: any SDKRawDataPipeDelegate) -> VideoSDKError {
        self.delegate = nil
        return .success
    }
}

/// The hook path: frame i goes to user i % users through `onRawDataFrameReceived`, sync mode.
final class EngineReceive: Workload {
    let hook: ReceiveVideoHook
    private let pipes: [BenchPipe]
    private let raw = BenchVideoRawData()
    let pool: FramePool

    init(chain: String, registry: PluginRegistry, users: Int, pool: FramePool) throws {
        self.pool = pool
        hook = try ReceiveVideoHook(chain: chain, registry: registry) { _, _ in }
        pipes = (0..<users).map { _ in BenchPipe() }
        let format = VideoFormat(width: pool.format.width, height: pool.format.height, rotation: 90)
        for (user, pipe) in pipes.enumerated() {
            try hook.subscribe(pipe, user: SDKUser(UInt64(user + 1)), resolution: .p360, format: format)
        }
    }

    deinit { hook.close() }

    func run(_ i: Int) throws {
        raw.frame = pool.frame(i)
        raw.timeStamp = UInt64(i) &* 33
        pipes[i % pipes.count].delegate!.onRawDataFrameReceived(raw)
    }
}

/// The direct path: one `VideoChain` per user, called with the same frames.
final class DirectPerUserChains: Workload {
    private let chains: [VideoChain]
    let pool: FramePool

    init(chain: String, registry: PluginRegistry, users: Int, pool: FramePool) throws {
        self.pool = pool
        chains = try (0..<users).map { _ in try VideoChain(chain, registry: registry) }
        let format = VideoFormat(width: pool.format.width, height: pool.format.height, rotation: 90)
        for chain in chains { _ = try chain.negotiate(format) }
    }

    func run(_ i: Int) throws {
        var frame = pool.frame(i)
        frame.format.rotation = 90
        frame.timestampMicroseconds = Int64(i) &* 33_000
        _ = try chains[i % chains.count].process(frame)
    }
}

/// What `onRawDataFrameReceived` costs the SDK's thread in async mode while the worker is
/// busy: a chain far slower than frames arrive (an upscale to 4K), one worker, frames
/// delivered back to back. A unit is one callback; the queue drops the oldest, so the
/// callback never waits for the worker, and its p99 is what the SDK's thread pays.
final class ReceiveCallbackUnderLoad: Workload {
    let hook: ReceiveVideoHook
    let pool: FramePool
    private let pipe = BenchPipe()
    private let frames = (0..<32).map { _ in BenchVideoRawData(retainable: true, rotation: .none) }
    private var next = 0

    init(chain: String, registry: PluginRegistry, pool: FramePool) throws {
        self.pool = pool
        hook = try ReceiveVideoHook(chain: chain, registry: registry, mode: .async(capacity: 4, workers: 1)) { _, _ in }
        try hook.subscribe(pipe, user: SDKUser(1), resolution: .p360,
                           format: VideoFormat(width: pool.format.width, height: pool.format.height))
    }

    deinit { hook.close() }

    func run(_ i: Int) throws {
        // The next frame object the hook does not hold (it holds at most capacity + 1).
        var raw = frames[next & 31]
        while raw.references.load(ordering: .acquiring) > 0 {
            next &+= 1
            raw = frames[next & 31]
        }
        next &+= 1
        raw.frame = pool.frame(i)
        raw.timeStamp = UInt64(i) &* 33
        pipe.delegate!.onRawDataFrameReceived(raw)
    }
}

func receiveCases() -> [BenchCase] {
    let users = 8
    let r = Resolution.p360
    let chain = "rotate=angle=auto"
    let slow = "scale=width=3840:height=2160:filter=bilinear:mode=stretch"
    return [BenchCase(
        name: "receive-async-callback-busy-worker", kind: .video, filters: ["scale"], unit: "callback",
        summary: "onRawDataFrameReceived in async mode (addRef, 1 worker, queue of 4 dropping the oldest) while the worker runs "
            + "`\(slow)` on 360p frames, far slower than they arrive: the time the SDK's thread spends per callback "
            + "(goal: p99 at most 50 µs)",
        directSummary: nil,
        make: { context in
            let pool = context.framePool(width: r.width, height: r.height)
            let engine = try ReceiveCallbackUnderLoad(chain: slow, registry: context.registry, pool: pool)
            return .init(chain: slow, engine: engine, direct: nil, filterCount: 0)
        }), BenchCase(
        name: "receive-\(users)users-\(r.name)", kind: .video, filters: ["rotate"], unit: "frame",
        summary: "\(users) users' received \(r.name) video, each through its own `\(chain)` (frames rotated 90), via onRawDataFrameReceived (sync)",
        directSummary: "\(users) VideoChains of the same text, called directly",
        make: { context in
            let pool = context.framePool(width: r.width, height: r.height)
            let engine = try EngineReceive(chain: chain, registry: context.registry, users: users, pool: pool)
            let direct = try DirectPerUserChains(chain: chain, registry: context.registry, users: users, pool: pool)
            return .init(chain: chain, engine: engine, direct: direct, filterCount: 1)
        })]
}

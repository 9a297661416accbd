// Received video (issue #10): what the receive hook costs over running each user's chain
// directly. Both paths run the same chain text, one chain instance per user.
import RawFX
import RawFXSDK

/// A participant's frame as the SDK lends it: planes from the bench's pool. Not retainable by
/// default (the hook copies or processes it in the callback); `retainable` is the SDK's heap
/// memory mode, where `addRef` succeeds and the hook queues the frame itself.
final class BenchVideoRawData: VideoRawData {
    let retainable: Bool
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
    func addRef() -> Bool { retainable }
    func releaseRef() -> Int { 0 }
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

func receiveCases() -> [BenchCase] {
    let users = 8
    let r = Resolution.p360
    let chain = "rotate=angle=auto"
    return [BenchCase(
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

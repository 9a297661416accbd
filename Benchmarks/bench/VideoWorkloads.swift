// Video paths: the engine's chain, and the same libyuv calls made directly.
import CLibYUV
import RawFX
import RawFXSDK

#if canImport(Glibc)
import Glibc
#endif

/// A path that runs on a known number of threads: a threaded case's rows report it, and the
/// case's speedup is p50 at 1 thread over p50 at the most threads.
protocol ThreadCounted { var threads: Int { get } }

extension ThreadCounted {
    /// Sets the engine's process-wide pool to this path's thread count (before each slice:
    /// the paths of a threaded case alternate). `rfx_runtime_set_thread_count` parks the
    /// workers it does not need, so switching is cheap.
    func useEngineThreads() {
        if RawFXThreadPool.threadCount != threads { RawFXThreadPool.threadCount = threads }
    }
}

/// The engine: `VideoChain.process` on frame i of the pool, with the engine's thread pool at
/// `threads` (set before each slice: the pool is process-wide, and the paths of a threaded
/// case alternate between 1 and 2).
final class EngineVideo: Workload, ThreadCounted {
    let chain: VideoChain
    let pool: FramePool
    let threads: Int
    private(set) var lastOutput = rawfx_video_frame()

    init(chain: VideoChain, pool: FramePool, threads: Int = 1) throws {
        self.chain = chain
        self.pool = pool
        self.threads = threads
        try chain.negotiate(pool.format)
    }

    func prepareSlice() { useEngineThreads() }

    func run(_ i: Int) throws {
        var frame = pool.frame(i)
        frame.timestampMicroseconds = Int64(i) &* 33_333
        lastOutput = try chain.process(frame).raw
    }
}

/// One step of a direct pipeline, on plain frames: what the plugin would call, minus the engine.
protocol DirectStep: AnyObject {
    /// Output format for an input format (equal for in-place steps).
    func output(for input: VideoFormat) -> VideoFormat
    var inPlace: Bool { get }
    func apply(_ input: VideoFrame, _ output: VideoFrame)
}

/// The direct path: the steps in order, each out-of-place step into a buffer allocated once
/// (the same 64-byte aligned VideoBuffer the engine allocates per stage).
final class DirectVideo: Workload {
    let pool: FramePool
    let steps: [DirectStep]
    /// Output buffer per step (nil for in-place steps), in an allocation-free pointer.
    private let outputs: UnsafeMutablePointer<VideoFrame?>
    private let buffers: [VideoBuffer]
    private(set) var lastOutput = rawfx_video_frame()

    init(steps: [DirectStep], pool: FramePool) {
        self.pool = pool
        self.steps = steps
        var format = pool.format
        var buffers: [VideoBuffer] = []
        outputs = .allocate(capacity: steps.count)
        for (i, step) in steps.enumerated() {
            let out = step.output(for: format)
            if step.inPlace {
                (outputs + i).initialize(to: nil)
            } else {
                let buffer = VideoBuffer(format: out)
                buffers.append(buffer)
                (outputs + i).initialize(to: buffer.frame)
            }
            format = out
        }
        self.buffers = buffers
    }

    deinit {
        outputs.deinitialize(count: steps.count)
        outputs.deallocate()
    }

    func run(_ i: Int) throws {
        var frame = pool.frame(i)
        var s = 0
        let count = steps.count
        while s < count {
            let step = steps[s]
            if let out = outputs[s] {
                step.apply(frame, out)
                frame = out
            } else {
                step.apply(frame, frame)
            }
            s += 1
        }
        lastOutput = frame.raw
    }
}

@inline(__always) private func s32(_ n: Int) -> Int32 { Int32(truncatingIfNeeded: n) }

/// libyuv I420Scale, stretch (what `scale` calls for mode=stretch).
final class DirectScale: DirectStep {
    let width: Int, height: Int
    let filter: FilterMode
    init(width: Int, height: Int, filter: FilterMode) {
        self.width = width
        self.height = height
        self.filter = filter
    }
    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat {
        VideoFormat(width: width, height: height, colorRange: input.colorRange, rotation: input.rotation)
    }
    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        let rc = I420Scale(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                           s32(i.width), s32(i.height),
                           o.plane(0), s32(o.stride(0)), o.plane(1), s32(o.stride(1)), o.plane(2), s32(o.stride(2)),
                           s32(width), s32(height), filter)
        precondition(rc == 0, "I420Scale failed")
    }
}

/// Plane `p` of `o` written bottom up: its last row and the negated stride. A half turn or a
/// top-bottom flip reads the cold source top down, the order the prefetchers follow, and
/// writes the warm destination bottom up, as the plugin does.
@inline(__always) private func bottomUp(_ o: VideoFrame, _ p: Int) -> (UnsafeMutablePointer<UInt8>, Int32) {
    (o.plane(p) + (o.planeSize(p).height - 1) * o.stride(p), -s32(o.stride(p)))
}

/// libyuv rotation as `rotate` does it: I420Rotate for quarter turns, and for 180 degrees
/// I420Mirror writing the destination bottom up, which needs no row buffer.
final class DirectRotate: DirectStep {
    let degrees: Int
    init(degrees: Int) { self.degrees = degrees }
    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat {
        degrees % 180 == 0 ? input
            : VideoFormat(width: input.height, height: input.width, colorRange: input.colorRange, rotation: input.rotation)
    }
    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        let rc: Int32
        if degrees == 180 {
            let (y, u, v) = (bottomUp(o, 0), bottomUp(o, 1), bottomUp(o, 2))
            rc = I420Mirror(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                            y.0, y.1, u.0, u.1, v.0, v.1, s32(i.width), s32(i.height))
        } else {
            rc = I420Rotate(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                            o.plane(0), s32(o.stride(0)), o.plane(1), s32(o.stride(1)), o.plane(2), s32(o.stride(2)),
                            s32(i.width), s32(i.height), degrees == 90 ? kRotate90 : kRotate270)
        }
        precondition(rc == 0, "libyuv rotation failed")
    }
}

/// libyuv I420Rotate(kRotate180): the obvious direct call, for comparison with the mirror
/// trick (it allocates a row buffer per plane per call).
final class DirectRotate180Naive: DirectStep {
    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat { input }
    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        let rc = I420Rotate(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                            o.plane(0), s32(o.stride(0)), o.plane(1), s32(o.stride(1)), o.plane(2), s32(o.stride(2)),
                            s32(i.width), s32(i.height), kRotate180)
        precondition(rc == 0, "I420Rotate failed")
    }
}

/// libyuv I420Mirror (horizontal), or for vertical I420Copy writing the destination bottom
/// up: what `mirror` calls.
final class DirectMirror: DirectStep {
    let vertical: Bool
    init(vertical: Bool) { self.vertical = vertical }
    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat { input }
    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        let (y, u, v) = (bottomUp(o, 0), bottomUp(o, 1), bottomUp(o, 2))
        let rc = vertical
            ? I420Copy(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                       y.0, y.1, u.0, u.1, v.0, v.1, s32(i.width), s32(i.height))
            : I420Mirror(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                         o.plane(0), s32(o.stride(0)), o.plane(1), s32(o.stride(1)), o.plane(2), s32(o.stride(2)),
                         s32(i.width), s32(i.height))
        precondition(rc == 0, "libyuv mirror failed")
    }
}

/// libyuv I420Copy of the whole frame into another buffer: the memory floor that any
/// out-of-place operation which reads and writes every pixel once is compared with (vs_copy).
final class DirectCopy: DirectStep {
    static let summary = "libyuv I420Copy of the frame into another buffer: the memory floor"
    var inPlace: Bool { false }
    func output(for input: VideoFormat) -> VideoFormat { input }
    func apply(_ i: VideoFrame, _ o: VideoFrame) {
        let rc = I420Copy(i.plane(0), s32(i.stride(0)), i.plane(1), s32(i.stride(1)), i.plane(2), s32(i.stride(2)),
                          o.plane(0), s32(o.stride(0)), o.plane(1), s32(o.stride(1)), o.plane(2), s32(o.stride(2)),
                          s32(i.width), s32(i.height))
        precondition(rc == 0, "I420Copy failed")
    }
}

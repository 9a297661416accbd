import RawFX
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The compositor's steady clock for live inputs: a thread of its own that draws output frame
/// N at N / rate after `start`, whatever the inputs do (jitter, bursts, stalls), and hands it
/// with the audio of the same instant (`AudioMixer.blocks(forVideoFrame:rate:)`) to `deliver`.
///
/// Deadlines are absolute (`clock_nanosleep(TIMER_ABSTIME)` on CLOCK_MONOTONIC), so lateness
/// never accumulates into drift. When drawing falls behind by more than `maximumLag` frames
/// (a stalled sink), the clock skips ahead: those frames are counted in `framesSkipped` and
/// the next frame keeps its place on the timeline (timestamps stay multiples of the interval).
/// Unchecked `Sendable`: `deliver` runs on the clock's thread only; `thread` is the control side's (`start`, `stop`); the rest is atomic.
public final class CompositorClock: @unchecked Sendable {
    /// One output instant: the picture, and the program's audio blocks for it (empty without
    /// a mixer). Both are valid during the call only.
    public struct Tick {
        public var index: Int64
        public var frame: VideoFrame
        public var audio: Range<Int64>
    }

    public let compositor: Compositor
    public let mixer: AudioMixer?
    public let maximumLag: Int64
    private let deliver: (Tick, AudioMixer?) -> Void
    private let running = Atomic<Bool>(false)
    private let skipped = Atomic<Int64>(0)
    private let delivered = Atomic<Int64>(0)
    private var thread: pthread_t?

    /// `deliver` runs on the clock's thread for every frame: send the picture (and mix the
    /// audio blocks it names) there, and return promptly.
    public init(compositor: Compositor, mixer: AudioMixer? = nil, maximumLag: Int64 = 5,
                deliver: @escaping (Tick, AudioMixer?) -> Void) {
        self.compositor = compositor
        self.mixer = mixer
        self.maximumLag = max(1, maximumLag)
        self.deliver = deliver
    }

    deinit { stop() }

    /// Frames drawn and handed to `deliver`, and frames skipped because the thread fell behind.
    public var framesDelivered: Int64 { delivered.load(ordering: .relaxed) }
    public var framesSkipped: Int64 { skipped.load(ordering: .relaxed) }

    /// Starts the clock at the next frame due on the compositor's timeline (frame 0 is the
    /// compositor's creation, when inputs' `now` is 0).
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let context = Unmanaged.passRetained(self).toOpaque()
        var made = pthread_t()
        let result = pthread_create(&made, nil, { raw in
            let clock = Unmanaged<CompositorClock>.fromOpaque(raw!).takeRetainedValue()
            clock.run()
            return nil
        }, context)
        precondition(result == 0, "CompositorClock: pthread_create failed (\(result))")
        thread = made
    }

    /// Stops after the frame in progress; returns when the thread has ended.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing), let thread else { return }
        pthread_join(thread, nil)
        self.thread = nil
    }

    private func run() {
        let rate = compositor.configuration.frameRate
        let origin = compositor.originNanoseconds
        var index = rate.frameIndex(atOrAfter: Int64((monotonicNanoseconds() - origin) / 1000))
        while running.load(ordering: .acquiring) {
            let deadline = origin + UInt64(rate.timestamp(ofFrame: index)) * 1000
            var now = monotonicNanoseconds()
            if now < deadline {
                var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
                now = monotonicNanoseconds()
            }
            // Behind by more than maximumLag frames: jump to the frame due now.
            let due = rate.frameIndex(atOrAfter: Int64((now - origin) / 1000)) - 1
            if due - index > maximumLag {
                skipped.add(due - index, ordering: .relaxed)
                index = due
            }
            let frame = compositor.compose(frameIndex: index)
            deliver(Tick(index: index, frame: frame, audio: AudioMixer.blocks(forVideoFrame: index, rate: rate)), mixer)
            delivered.add(1, ordering: .relaxed)
            index += 1
        }
    }
}

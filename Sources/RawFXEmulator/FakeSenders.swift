#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import RawFXSDK
import Synchronization

/// A frame a fake sender accepted.
public struct SentVideoFrame: Sendable {
    public var width: Int
    public var height: Int
    public var dataLength: Int
    public var rotation: Int
    public var format: FrameDataFormat
    /// The packed I420 bytes (empty when the sender does not keep bytes).
    public var bytes: [UInt8]
    /// The emulator clock when it was sent (microseconds).
    public var time: Int64

    /// Plane `p` of the packed picture.
    public func plane(_ p: Int) -> ArraySlice<UInt8> {
        let ySize = width * height
        let cSize = ((width + 1) / 2) * ((height + 1) / 2)
        switch p {
        case 0: return bytes[0..<ySize]
        case 1: return bytes[ySize..<(ySize + cSize)]
        default: return bytes[(ySize + cSize)..<(ySize + 2 * cSize)]
        }
    }
}

/// Audio a fake sender accepted.
public struct SentAudio: Sendable {
    /// The PCM sent (empty when the sender does not keep bytes).
    public var samples: [Int16]
    public var dataLength: Int
    public var sampleRate: Int
    public var channel: SDKAudioChannel
    /// The emulator clock when it was sent (microseconds).
    public var time: Int64
}

/// The session's clock: real monotonic time, or a manual clock a test advances.
public final class EmulatorClock: Sendable {
    private let manual: Bool
    private let now = Atomic<Int64>(0)

    /// A manual clock starting at `start` microseconds.
    public init(manualStart start: Int64) {
        manual = true
        now.store(start, ordering: .relaxed)
    }

    /// The monotonic clock.
    public init() { manual = false }

    public var isManual: Bool { manual }

    public var microseconds: Int64 {
        manual ? now.load(ordering: .acquiring) : Int64(monotonicNanoseconds() / 1000)
    }

    /// Manual clocks only.
    public func advance(microseconds delta: Int64) {
        precondition(manual, "only a manual clock can be advanced")
        now.add(delta, ordering: .acquiringAndReleasing)
    }

    public func set(microseconds value: Int64) {
        precondition(manual, "only a manual clock can be set")
        now.store(value, ordering: .releasing)
    }
}

/// Shared by the fake senders: whether the SDK currently accepts sends (it flips this at
/// the start/stop callbacks it delivers), what was sent, and what was rejected.
///
/// `@unchecked Sendable` (and the subclasses): what a sender records is behind `lock`, the
/// flags are atomics, the rest is immutable.
public class FakeSenderBase: @unchecked Sendable {
    public let ledger: ContractLedger
    public let clock: EmulatorClock
    /// Keep the bytes of sent frames and audio (for comparisons); off for long runs.
    public var keepBytes: Bool {
        get { keeping.load(ordering: .relaxed) }
        set { keeping.store(newValue, ordering: .relaxed) }
    }
    private let keeping = Atomic<Bool>(true)
    let accepting = Atomic<Bool>(false)
    /// Guards every sender's recorded sends and settings.
    let lock = EmulatorLock()

    init(ledger: ContractLedger, clock: EmulatorClock) {
        self.ledger = ledger
        self.clock = clock
    }

    /// Set by the emulator as it delivers onStartSend (true) and onStopSend / onUninitialized (false).
    public var isAccepting: Bool {
        get { accepting.load(ordering: .acquiring) }
        set { accepting.store(newValue, ordering: .releasing) }
    }

    func reject(_ call: String, _ code: Int32, _ reason: String) {
        ledger.record(ContractViolation(call: call, code: code, reason: reason))
    }
}

/// `IZoomVideoSDKVideoSender` as the SDK behaves: accepts packed I420 only between
/// onStartSend and onStopSend, of a size in the capability list it offered, with
/// dataLength = w·h·3/2 and a rotation of 0/90/180/270. (The real Video SDK call returns
/// nothing and drops bad frames silently; the fake answers the error it would log.)
public final class FakeVideoSender: FakeSenderBase, SDKVideoSender, @unchecked Sendable {
    /// `frames`, `accepted`, `required`: guarded by `lock`.
    private var frames: [SentVideoFrame] = []
    private var accepted: Set<[Int]> = []
    private var required: [Int]?
    /// Sizes the SDK accepts (the capability list it offered); set by the emulator.
    public var acceptedSizes: Set<[Int]> {
        get { lock.withLock { accepted } }
        set { lock.withLock { accepted = newValue } }
    }
    /// When set, frames must be exactly this size (the capability the SDK expects now).
    public var requiredSize: (width: Int, height: Int)? {
        get { lock.withLock { required.map { ($0[0], $0[1]) } } }
        set { lock.withLock { required = newValue.map { [$0.width, $0.height] } } }
    }

    public override init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { super.init(ledger: ledger, clock: clock) }

    public var sent: [SentVideoFrame] { lock.withLock { frames } }
    public func clear() { lock.withLock { frames.removeAll() } }

    public func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                               rotation: Int, format: FrameDataFormat) -> VideoSDKError {
        guard isAccepting else {
            reject("sendVideoFrame", VideoSDKError.wrongUsage.rawValue, "sent outside onStartSend…onStopSend")
            return .wrongUsage
        }
        if let error = validateI420(call: "sendVideoFrame", width: width, height: height, length: dataLength) { return error }
        let sizes: (required: [Int]?, accepted: Set<[Int]>) = lock.withLock { (self.required, self.accepted) }
        let acceptedSizes = sizes.accepted
        if let required = sizes.required, required[0] != width || required[1] != height {
            reject("sendVideoFrame", VideoSDKError.invalidParameter.rawValue,
                   "frame is \(width)x\(height), the capability is \(required[0])x\(required[1])")
            return .invalidParameter
        }
        if !acceptedSizes.isEmpty, !acceptedSizes.contains([width, height]) {
            reject("sendVideoFrame", VideoSDKError.invalidParameter.rawValue, "\(width)x\(height) is not in the capability list")
            return .invalidParameter
        }
        guard [0, 90, 180, 270].contains(rotation) else {
            reject("sendVideoFrame", VideoSDKError.invalidParameter.rawValue, "rotation \(rotation) is not 0, 90, 180 or 270")
            return .invalidParameter
        }
        record(frameBuffer, width: width, height: height, length: dataLength, rotation: rotation, format: format)
        return .success
    }

    func record(_ buffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, length: Int, rotation: Int, format: FrameDataFormat) {
        let bytes = keepBytes ? Array(UnsafeRawBufferPointer(start: buffer, count: length)) : []
        let frame = SentVideoFrame(width: width, height: height, dataLength: length, rotation: rotation, format: format,
                                   bytes: bytes, time: clock.microseconds)
        lock.withLock { frames.append(frame) }
    }

    func validateI420(call: String, width: Int, height: Int, length: Int) -> VideoSDKError? {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
            reject(call, VideoSDKError.invalidParameter.rawValue, "\(width)x\(height): width and height must be even and non-zero")
            return .invalidParameter
        }
        guard length == width * height * 3 / 2 else {
            reject(call, VideoSDKError.invalidParameter.rawValue, "length \(length) is not \(width)·\(height)·3/2 = \(width * height * 3 / 2)")
            return .invalidParameter
        }
        return nil
    }
}

/// `IZoomVideoSDKShareSender`: like the video sender, between onShareSendStarted and
/// onShareSendStopped, any even size.
public final class FakeShareSender: FakeSenderBase, SDKShareSender, @unchecked Sendable {
    /// Guarded by `lock`.
    private var frames: [SentVideoFrame] = []

    public override init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { super.init(ledger: ledger, clock: clock) }

    public var sent: [SentVideoFrame] { lock.withLock { frames } }

    public func sendShareFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                               format: FrameDataFormat) -> VideoSDKError {
        guard isAccepting else {
            reject("sendShareFrame", VideoSDKError.wrongUsage.rawValue, "sent outside onShareSendStarted…onShareSendStopped")
            return .wrongUsage
        }
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, frameLength == width * height * 3 / 2 else {
            reject("sendShareFrame", VideoSDKError.invalidParameter.rawValue, "\(width)x\(height) with frameLength \(frameLength)")
            return .invalidParameter
        }
        let bytes = keepBytes ? Array(UnsafeRawBufferPointer(start: frameBuffer, count: frameLength)) : []
        let frame = SentVideoFrame(width: width, height: height, dataLength: frameLength, rotation: 0, format: format,
                                   bytes: bytes, time: clock.microseconds)
        lock.withLock { frames.append(frame) }
        return .success
    }
}

/// `IZoomVideoSDKAudioSender::Send` as documented: 16-bit little-endian, even and whole-frame
/// dataLength, a rate from the SDK's list for the channel layout, only between
/// onMicStartSend and onMicStopSend. Emulator policies (not documented numbers): a send over
/// `maxChunkMilliseconds` is "too much data in a single time" (6020); audio more than
/// `maxLeadMilliseconds` ahead of the clock since the first send is "too frequently" (6021).
public final class FakeAudioSender: FakeSenderBase, SDKAudioSender, @unchecked Sendable {
    /// Guarded by `lock`.
    private var chunks: [SentAudio] = []
    private var firstSendTime: Int64?
    private var sentMicroseconds: Int64 = 0
    private var policy: (requiredRate: Int?, maxChunkMilliseconds: Int, maxLeadMilliseconds: Int?) = (nil, 1000, 300)
    /// nil: any rate the SDK takes; otherwise exactly this rate.
    public var requiredRate: Int? {
        get { lock.withLock { policy.requiredRate } }
        set { lock.withLock { policy.requiredRate = newValue } }
    }
    public var maxChunkMilliseconds: Int {
        get { lock.withLock { policy.maxChunkMilliseconds } }
        set { lock.withLock { policy.maxChunkMilliseconds = newValue } }
    }
    /// nil disables the pacing check.
    public var maxLeadMilliseconds: Int? {
        get { lock.withLock { policy.maxLeadMilliseconds } }
        set { lock.withLock { policy.maxLeadMilliseconds = newValue } }
    }

    public override init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { super.init(ledger: ledger, clock: clock) }

    public var sent: [SentAudio] { lock.withLock { chunks } }

    /// Every sent sample, in order.
    public var allSamples: [Int16] { lock.withLock { chunks.flatMap(\.samples) } }

    public func send(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> VideoSDKError {
        guard isAccepting else {
            reject("send", VideoSDKError.wrongUsage.rawValue, "sent outside onMicStartSend…onMicStopSend")
            return .wrongUsage
        }
        guard dataLength > 0, dataLength % (2 * channel.count) == 0 else {
            reject("send", VideoSDKError.invalidParameter.rawValue, "dataLength \(dataLength) is not an even, whole number of \(channel) 16-bit frames")
            return .invalidParameter
        }
        guard SDKAudioRates.accepts(sampleRate, channel: channel) else {
            reject("send", VideoSDKError.invalidParameter.rawValue, "\(sampleRate) Hz \(channel) is not a rate the SDK takes")
            return .invalidParameter
        }
        if let required = requiredRate, required != sampleRate {
            reject("send", VideoSDKError.invalidParameter.rawValue, "\(sampleRate) Hz, the session expects \(required) Hz")
            return .invalidParameter
        }
        let durationMicroseconds = Int64(dataLength / (2 * channel.count)) * 1_000_000 / Int64(sampleRate)
        if durationMicroseconds > Int64(maxChunkMilliseconds) * 1000 {
            reject("send", VideoSDKError.rawdataSendTooMuchDataInSingleTime.rawValue, "\(durationMicroseconds / 1000) ms in one send")
            return .rawdataSendTooMuchDataInSingleTime
        }
        let now = clock.microseconds
        let tooFast = lock.withLock { () -> Bool in
            let first = firstSendTime ?? now
            firstSendTime = first
            guard let lead = policy.maxLeadMilliseconds else { return false }
            return sentMicroseconds - (now - first) > Int64(lead) * 1000
        }
        if tooFast {
            reject("send", VideoSDKError.rawdataSendTooFrequently.rawValue, "audio is sent faster than real time")
            return .rawdataSendTooFrequently
        }
        let samples = keepBytes ? Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: Int16.self), count: dataLength / 2)) : []
        let chunk = SentAudio(samples: samples, dataLength: dataLength, sampleRate: sampleRate, channel: channel, time: now)
        lock.withLock {
            chunks.append(chunk)
            sentMicroseconds += durationMicroseconds
        }
        return .success
    }

    /// Forget the pacing history (the SDK restarts its accounting at onMicStartSend).
    public func resetPacing() { lock.withLock { firstSendTime = nil; sentMicroseconds = 0 } }
}

/// `IZoomSDKPSSender` (Meeting SDK production studio): video exactly the declared
/// capability, audio 32000/48000 Hz with even lengths, only between onStartSend and onStopSend.
///
/// The seed asks for `sendVideoFrame` and `sendAudio` "on a single producer thread": each
/// call's thread is recorded (`callingThreads`), and a call from a second thread within one
/// sending period (onStartSend…onStopSend) is a violation.
public final class FakePSSender: FakeSenderBase, SDKPSSender, @unchecked Sendable {
    public let capability: PSVideoSourceCapability
    /// Guarded by `lock`.
    private var frames: [SentVideoFrame] = []
    /// Guarded by `lock`.
    private var audio: [SentAudio] = []
    /// The thread of this sending period's first call, and every calling thread (guarded by `lock`).
    private var producer: UInt?
    /// Whether this sending period's second producer was already reported (once per period).
    private var reported = false
    private var threads: (video: Set<UInt>, audio: Set<UInt>) = ([], [])

    public init(capability: PSVideoSourceCapability, ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) {
        self.capability = capability
        super.init(ledger: ledger, clock: clock)
    }

    public var sentVideo: [SentVideoFrame] { lock.withLock { frames } }
    public var sentAudio: [SentAudio] { lock.withLock { audio } }
    /// The threads (pthread ids) that called `sendVideoFrame` and `sendAudio`.
    public var callingThreads: (video: Set<UInt>, audio: Set<UInt>) { lock.withLock { threads } }

    /// Makes room for `video` frames and `audio` chunks, so that recording them allocates
    /// nothing (with `keepBytes` off): a test can count a program's allocations per frame
    /// with this sender at the end of it.
    public func reserveCapacity(video: Int, audio: Int) {
        lock.withLock {
            frames.reserveCapacity(video)
            self.audio.reserveCapacity(audio)
        }
    }

    /// A new sending period (the emulator calls it as it delivers onStartSend).
    public func beginSendingPeriod() { lock.withLock { producer = nil; reported = false } }

    private func noteProducer(_ call: String, video: Bool) {
        let me = currentThreadID()
        let second = lock.withLock { () -> Bool in
            if video { threads.video.insert(me) } else { threads.audio.insert(me) }
            if producer == nil { producer = me }
            guard producer != me, !reported else { return false }
            reported = true
            return true
        }
        if second {
            ledger.record(ContractViolation(call: call, code: nil,
                                            reason: "called from a second thread: production studio wants sendVideoFrame and sendAudio from one producer thread"))
        }
    }

    public func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                               format: FrameDataFormat) -> MeetingSDKError {
        noteProducer("PS sendVideoFrame", video: true)
        guard isAccepting else {
            reject("PS sendVideoFrame", MeetingSDKError.wrongUsage.rawValue, "sent outside onStartSend…onStopSend")
            return .wrongUsage
        }
        guard width == capability.width, height == capability.height, format == capability.format,
              frameLength == capability.frameLength else {
            reject("PS sendVideoFrame", MeetingSDKError.invalidParameter.rawValue,
                   "\(width)x\(height) \(format) length \(frameLength), PS mode was started for \(capability)")
            return .invalidParameter
        }
        let bytes = keepBytes ? Array(UnsafeRawBufferPointer(start: frameBuffer, count: frameLength)) : []
        let frame = SentVideoFrame(width: width, height: height, dataLength: frameLength, rotation: 0, format: format,
                                   bytes: bytes, time: clock.microseconds)
        lock.withLock { frames.append(frame) }
        return .success
    }

    public func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> MeetingSDKError {
        noteProducer("PS sendAudio", video: false)
        guard isAccepting else {
            reject("PS sendAudio", MeetingSDKError.wrongUsage.rawValue, "sent outside onStartSend…onStopSend")
            return .wrongUsage
        }
        guard SDKAudioRates.productionStudio.contains(sampleRate), dataLength > 0, dataLength % 2 == 0,
              dataLength % (2 * channel.count) == 0 else {
            reject("PS sendAudio", MeetingSDKError.invalidParameter.rawValue, "\(dataLength) bytes at \(sampleRate) Hz \(channel)")
            return .invalidParameter
        }
        let samples = keepBytes ? Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: Int16.self), count: dataLength / 2)) : []
        let chunk = SentAudio(samples: samples, dataLength: dataLength, sampleRate: sampleRate, channel: channel, time: clock.microseconds)
        lock.withLock { audio.append(chunk) }
        return .success
    }
}

/// The calling thread's pthread id, as a number.
func currentThreadID() -> UInt {
    #if canImport(Glibc)
    return UInt(pthread_self())
    #else
    return UInt(bitPattern: pthread_self())
    #endif
}

/// A plain pthread mutex for the fake senders' fields, which live across a class hierarchy.
/// Not `Locked<Void>`: ThreadSanitizer reports the inout access of a zero-size state as a
/// race on the object header.
public final class EmulatorLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

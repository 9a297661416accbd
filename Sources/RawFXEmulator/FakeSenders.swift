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

/// What every fake sender has: whether the SDK currently accepts sends (it flips this at
/// the start/stop callbacks it delivers), whether sent bytes are kept, and where rejections
/// are recorded. Each sender keeps what it recorded in its own `Locked` state.
public final class FakeSenderCommon: Sendable {
    public let ledger: ContractLedger
    public let clock: EmulatorClock
    fileprivate let keeping = Atomic<Bool>(true)
    fileprivate let accepting = Atomic<Bool>(false)

    init(ledger: ContractLedger, clock: EmulatorClock) {
        self.ledger = ledger
        self.clock = clock
    }
}

/// A fake SDK sender: video, share, audio or production studio.
public protocol FakeSender: AnyObject, Sendable {
    var common: FakeSenderCommon { get }
}

extension FakeSender {
    public var ledger: ContractLedger { common.ledger }
    public var clock: EmulatorClock { common.clock }
    /// Keep the bytes of sent frames and audio (for comparisons); off for long runs.
    public var keepBytes: Bool {
        get { common.keeping.load(ordering: .relaxed) }
        set { common.keeping.store(newValue, ordering: .relaxed) }
    }

    /// Set by the emulator as it delivers onStartSend (true) and onStopSend / onUninitialized (false).
    public var isAccepting: Bool {
        get { common.accepting.load(ordering: .acquiring) }
        set { common.accepting.store(newValue, ordering: .releasing) }
    }

    func reject(_ call: String, _ code: Int32, _ reason: String) {
        ledger.record(ContractViolation(call: call, code: code, reason: reason))
    }
}

/// `IZoomVideoSDKVideoSender` as the SDK behaves: accepts packed I420 only between
/// onStartSend and onStopSend, of a size in the capability list it offered, with
/// dataLength = w·h·3/2 and a rotation of 0/90/180/270. (The real Video SDK call returns
/// nothing and drops bad frames silently; the fake answers the error it would log.)
public final class FakeVideoSender: FakeSender, SDKVideoSender {
    public let common: FakeSenderCommon
    private let state = Locked<(frames: [SentVideoFrame], accepted: Set<[Int]>, required: [Int]?)>(([], [], nil))
    /// Sizes the SDK accepts (the capability list it offered); set by the emulator.
    public var acceptedSizes: Set<[Int]> {
        get { state.withLock { $0.accepted } }
        set { state.withLock { $0.accepted = newValue } }
    }
    /// When set, frames must be exactly this size (the capability the SDK expects now).
    public var requiredSize: (width: Int, height: Int)? {
        get { state.withLock { $0.required.map { ($0[0], $0[1]) } } }
        set { state.withLock { $0.required = newValue.map { [$0.width, $0.height] } } }
    }

    public init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { common = FakeSenderCommon(ledger: ledger, clock: clock) }

    public var sent: [SentVideoFrame] { state.withLock { $0.frames } }
    public func clear() { state.withLock { $0.frames.removeAll() } }

    public func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                               rotation: Int, format: FrameDataFormat) -> VideoSDKError {
        guard isAccepting else {
            reject("sendVideoFrame", VideoSDKError.wrongUsage.rawValue, "sent outside onStartSend…onStopSend")
            return .wrongUsage
        }
        if let error = validateI420(call: "sendVideoFrame", width: width, height: height, length: dataLength) { return error }
        let sizes: (required: [Int]?, accepted: Set<[Int]>) = state.withLock { ($0.required, $0.accepted) }
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
        state.withLock { $0.frames.append(frame) }
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
public final class FakeShareSender: FakeSender, SDKShareSender {
    public let common: FakeSenderCommon
    private let frames = Locked<[SentVideoFrame]>([])

    public init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { common = FakeSenderCommon(ledger: ledger, clock: clock) }

    public var sent: [SentVideoFrame] { frames.withLock { $0 } }

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
        frames.withLock { $0.append(frame) }
        return .success
    }
}

/// `IZoomVideoSDKAudioSender::Send` as documented: 16-bit little-endian, even and whole-frame
/// dataLength, a rate from the SDK's list for the channel layout, only between
/// onMicStartSend and onMicStopSend. Emulator policies (not documented numbers): a send over
/// `maxChunkMilliseconds` is "too much data in a single time" (6020); audio more than
/// `maxLeadMilliseconds` ahead of the clock since the first send is "too frequently" (6021).
public final class FakeAudioSender: FakeSender, SDKAudioSender {
    public let common: FakeSenderCommon
    private struct Recorded {
        var chunks: [SentAudio] = []
        var firstSendTime: Int64?
        var sentMicroseconds: Int64 = 0
        var requiredRate: Int?
        var maxChunkMilliseconds = 1000
        var maxLeadMilliseconds: Int? = 300
    }
    private let state = Locked(Recorded())
    /// nil: any rate the SDK takes; otherwise exactly this rate.
    public var requiredRate: Int? {
        get { state.withLock { $0.requiredRate } }
        set { state.withLock { $0.requiredRate = newValue } }
    }
    public var maxChunkMilliseconds: Int {
        get { state.withLock { $0.maxChunkMilliseconds } }
        set { state.withLock { $0.maxChunkMilliseconds = newValue } }
    }
    /// nil disables the pacing check.
    public var maxLeadMilliseconds: Int? {
        get { state.withLock { $0.maxLeadMilliseconds } }
        set { state.withLock { $0.maxLeadMilliseconds = newValue } }
    }

    public init(ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) { common = FakeSenderCommon(ledger: ledger, clock: clock) }

    public var sent: [SentAudio] { state.withLock { $0.chunks } }

    /// Every sent sample, in order.
    public var allSamples: [Int16] { state.withLock { $0.chunks.flatMap(\.samples) } }

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
        let tooFast = state.withLock { recorded -> Bool in
            let first = recorded.firstSendTime ?? now
            recorded.firstSendTime = first
            guard let lead = recorded.maxLeadMilliseconds else { return false }
            return recorded.sentMicroseconds - (now - first) > Int64(lead) * 1000
        }
        if tooFast {
            reject("send", VideoSDKError.rawdataSendTooFrequently.rawValue, "audio is sent faster than real time")
            return .rawdataSendTooFrequently
        }
        let samples = keepBytes ? Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: Int16.self), count: dataLength / 2)) : []
        let chunk = SentAudio(samples: samples, dataLength: dataLength, sampleRate: sampleRate, channel: channel, time: now)
        state.withLock {
            $0.chunks.append(chunk)
            $0.sentMicroseconds += durationMicroseconds
        }
        return .success
    }

    /// Forget the pacing history (the SDK restarts its accounting at onMicStartSend).
    public func resetPacing() { state.withLock { $0.firstSendTime = nil; $0.sentMicroseconds = 0 } }
}

/// `IZoomSDKPSSender` (Meeting SDK production studio): video exactly the declared
/// capability, audio 32000/48000 Hz with even lengths, only between onStartSend and onStopSend.
///
/// The seed asks for `sendVideoFrame` and `sendAudio` "on a single producer thread": each
/// call's thread is recorded (`callingThreads`), and a call from a second thread within one
/// sending period (onStartSend…onStopSend) is a violation.
public final class FakePSSender: FakeSender, SDKPSSender {
    public let common: FakeSenderCommon
    public let capability: PSVideoSourceCapability
    private struct Recorded {
        var frames: [SentVideoFrame] = []
        var audio: [SentAudio] = []
        /// The thread of this sending period's first call.
        var producer: UInt?
        /// Whether this sending period's second producer was already reported (once per period).
        var reported = false
        var threads: (video: Set<UInt>, audio: Set<UInt>) = ([], [])
    }
    private let state = Locked(Recorded())

    public init(capability: PSVideoSourceCapability, ledger: ContractLedger, clock: EmulatorClock = EmulatorClock()) {
        self.capability = capability
        common = FakeSenderCommon(ledger: ledger, clock: clock)
    }

    public var sentVideo: [SentVideoFrame] { state.withLock { $0.frames } }
    public var sentAudio: [SentAudio] { state.withLock { $0.audio } }
    /// The threads (pthread ids) that called `sendVideoFrame` and `sendAudio`.
    public var callingThreads: (video: Set<UInt>, audio: Set<UInt>) { state.withLock { $0.threads } }

    /// Makes room for `video` frames and `audio` chunks, so that recording them allocates
    /// nothing (with `keepBytes` off): a test can count a program's allocations per frame
    /// with this sender at the end of it.
    public func reserveCapacity(video: Int, audio: Int) {
        state.withLock {
            $0.frames.reserveCapacity(video)
            $0.audio.reserveCapacity(audio)
        }
    }

    /// A new sending period (the emulator calls it as it delivers onStartSend).
    public func beginSendingPeriod() { state.withLock { $0.producer = nil; $0.reported = false } }

    private func noteProducer(_ call: String, video: Bool) {
        let me = currentThreadID()
        let second = state.withLock { recorded -> Bool in
            if video { recorded.threads.video.insert(me) } else { recorded.threads.audio.insert(me) }
            if recorded.producer == nil { recorded.producer = me }
            guard recorded.producer != me, !recorded.reported else { return false }
            recorded.reported = true
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
        state.withLock { $0.frames.append(frame) }
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
        state.withLock { $0.audio.append(chunk) }
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

import RawFX
import RawFXSDK
import Synchronization

/// An SDK session without the SDK: it calls the hooks in the order the SDK documents, lends
/// raw data under the SDK's rules (buffers valid only during the callback, padded strides,
/// reference counting) and gives the sources fake senders that reject what the SDK rejects
/// and record what they accept. Violations go to `ledger`.
///
/// Lifecycle helpers (`VideoSourceSession`, `MicSession`, `ShareSession`,
/// `ProductionStudioSession`) deliver each callback on the calling thread, so a test can
/// deliver `stopSend` from another thread while a frame is in a chain.
public final class SDKSessionEmulator: Sendable {
    public let ledger = ContractLedger()
    public let clock: EmulatorClock

    /// `clock`: a manual clock (the default) makes pacing checks deterministic.
    public init(clock: EmulatorClock = EmulatorClock(manualStart: 0)) { self.clock = clock }

    public var violations: [ContractViolation] { ledger.violations }

    // MARK: Pre-processor

    /// A capture buffer as the SDK owns it (reuse it for every frame of a format).
    public func makeCaptureFrame(format: VideoFormat, padding: Int = 32) -> EmulatedProcessData {
        EmulatedProcessData(format: format, padding: padding, ledger: ledger)
    }

    /// One camera frame: copies `picture` into the SDK's planes, calls `onPreProcessRawData`,
    /// ends the frame's validity, and checks the hook kept out of the row padding. Returns
    /// the planes as the SDK would encode them (valid until the next delivery).
    @discardableResult
    public func deliverPreProcess(_ hook: any SDKVideoSourcePreProcessor, picture: VideoFrame,
                                  into capture: EmulatedProcessData) -> VideoFrame {
        capture.beginCallback()
        capture.capture(picture)
        hook.onPreProcessRawData(capture)
        capture.endCallback()
        if !capture.paddingIntact {
            ledger.record(ContractViolation(call: "onPreProcessRawData", code: nil, reason: "the hook wrote into the row padding"))
        }
        return capture.planes.frame
    }

    /// Runs `count` frames (or until the source ends) of `source` through the pre-processor;
    /// `onFrame` sees each processed frame.
    public func runPreProcessor(_ hook: any SDKVideoSourcePreProcessor, source: any FrameSource, count: Int? = nil,
                                padding: Int = 32, onFrame: (Int, VideoFrame) -> Void = { _, _ in }) throws {
        var capture: EmulatedProcessData?
        var index = 0
        while count == nil || index < count!, let picture = try source.nextFrame() {
            if capture?.planes.format != picture.format { capture = makeCaptureFrame(format: picture.format, padding: padding) }
            onFrame(index, deliverPreProcess(hook, picture: picture, into: capture!))
            index += 1
        }
    }

    // MARK: Virtual speaker

    /// One speaker callback on `stream` with these samples (interleaved), in `memoryMode`;
    /// the data's validity ends when the callback returns.
    public func deliverSpeakerAudio(_ speaker: any SDKVirtualAudioSpeaker, stream: AudioStreamID,
                                    samples: UnsafeBufferPointer<Int16>, format: AudioFormat, timeStampMilliseconds: UInt64,
                                    memoryMode: RawDataMemoryMode = .stack, misalign: Bool = false) {
        lendAudio(samples, format, timeStampMilliseconds, memoryMode, misalign) { data in
            switch stream {
            case .mixed: speaker.onVirtualSpeakerMixedAudioReceived(data)
            case .oneWay(let user): speaker.onVirtualSpeakerOneWayAudioReceived(data, user: user)
            case .shared: speaker.onVirtualSpeakerSharedAudioReceived(data)
            }
        }
    }

    /// The same audio through the Video SDK's session delegate spellings:
    /// `onMixedAudioRawDataReceived`, `onOneWayAudioRawDataReceived(_:user:)`, `onSharedAudioRawDataReceived`.
    public func deliverVideoSDKAudio(_ delegate: any SDKVideoSDKAudioRawDataDelegate, stream: AudioStreamID,
                                     samples: UnsafeBufferPointer<Int16>, format: AudioFormat, timeStampMilliseconds: UInt64,
                                     memoryMode: RawDataMemoryMode = .stack) {
        lendAudio(samples, format, timeStampMilliseconds, memoryMode, false) { data in
            switch stream {
            case .mixed: delegate.onMixedAudioRawDataReceived(data)
            case .oneWay(let user): delegate.onOneWayAudioRawDataReceived(data, user: user)
            case .shared: delegate.onSharedAudioRawDataReceived(data)
            }
        }
    }

    /// The same audio through the Meeting SDK's `IZoomSDKAudioRawDataDelegate` spellings:
    /// `onMixedAudioRawDataReceived`, `onOneWayAudioRawDataReceived(_:userID:)`,
    /// `onShareAudioRawDataReceived(_:userID:)` (`sharerUserID` names the sharer). A Meeting
    /// SDK user id is 32-bit: a larger `SDKUser` is recorded as a violation and not delivered.
    public func deliverMeetingSDKAudio(_ delegate: any SDKAudioRawDataDelegate, stream: AudioStreamID,
                                       samples: UnsafeBufferPointer<Int16>, format: AudioFormat, timeStampMilliseconds: UInt64,
                                       sharerUserID: UInt32 = 0, memoryMode: RawDataMemoryMode = .stack) {
        if case .oneWay(let user) = stream, user.userID > UInt64(UInt32.max) {
            ledger.record(ContractViolation(call: "onOneWayAudioRawDataReceived", code: nil,
                                            reason: "\(user) does not fit the Meeting SDK's 32-bit user id"))
            return
        }
        lendAudio(samples, format, timeStampMilliseconds, memoryMode, false) { data in
            switch stream {
            case .mixed: delegate.onMixedAudioRawDataReceived(data)
            case .oneWay(let user): delegate.onOneWayAudioRawDataReceived(data, userID: UInt32(user.userID))
            case .shared: delegate.onShareAudioRawDataReceived(data, userID: sharerUserID)
            }
        }
    }

    /// Lends `samples` as the SDK's `AudioRawData` for the duration of `callback`.
    private func lendAudio(_ samples: UnsafeBufferPointer<Int16>, _ format: AudioFormat, _ timeStampMilliseconds: UInt64,
                           _ memoryMode: RawDataMemoryMode, _ misalign: Bool, _ callback: (EmulatedAudioRawData) -> Void) {
        let data = EmulatedAudioRawData(samples: samples, sampleRate: format.sampleRate, channels: format.channels,
                                        timeStampMilliseconds: timeStampMilliseconds, memoryMode: memoryMode,
                                        misalign: misalign, ledger: ledger)
        callback(data)
        data.endCallback()
    }

    /// A speaker session: every `chunkMilliseconds`, one callback per stream that still has
    /// audio, in the order given; users in `leaves` leave after the chunk that reaches their
    /// time (`onUserLeave` on `userEvents`). Advances a manual clock by each chunk.
    public func runVirtualSpeaker(_ speaker: any SDKVirtualAudioSpeaker, userEvents: (any SDKUserEvents)? = nil,
                                  streams: [(AudioStreamID, any PCMSource)], chunkMilliseconds: Int = 10,
                                  leaves: [(milliseconds: Int, user: SDKUser)] = [],
                                  memoryMode: RawDataMemoryMode = .stack) throws {
        var active = streams.map { ($0.0, $0.1, true) }
        var pendingLeaves = leaves.sorted { $0.milliseconds < $1.milliseconds }
        var scratch = [Int16](repeating: 0, count: 192_000 * 8 * max(chunkMilliseconds, 1) / 1000 + 64)
        var elapsed = 0
        while active.contains(where: { $0.2 }) {
            var delivered = false
            for i in active.indices where active[i].2 {
                let (id, source, _) = active[i]
                let frames = source.format.sampleRate * chunkMilliseconds / 1000
                let got = try scratch.withUnsafeMutableBufferPointer { try source.read(into: $0.baseAddress!, maxFrames: frames) }
                if got == 0 {
                    active[i].2 = false
                    continue
                }
                delivered = true
                scratch.withUnsafeBufferPointer {
                    deliverSpeakerAudio(speaker, stream: id,
                                        samples: UnsafeBufferPointer(rebasing: $0[0..<(got * source.format.channels)]),
                                        format: source.format, timeStampMilliseconds: UInt64(elapsed), memoryMode: memoryMode)
                }
            }
            guard delivered else { break }
            elapsed += chunkMilliseconds
            if clock.isManual { clock.advance(microseconds: Int64(chunkMilliseconds) * 1000) }
            while let leave = pendingLeaves.first, leave.milliseconds <= elapsed {
                pendingLeaves.removeFirst()
                userEvents?.onUserLeave([leave.user])
                for i in active.indices where active[i].0 == .oneWay(leave.user) { active[i].2 = false }
            }
        }
    }

    // MARK: Sources with a lifecycle

    public func videoSourceSession(_ source: any SDKVideoSource, supported: [VideoSourceCapability],
                                   suggested: VideoSourceCapability) -> VideoSourceSession {
        VideoSourceSession(source: source, sender: FakeVideoSender(ledger: ledger, clock: clock),
                           supported: supported, suggested: suggested)
    }

    public func micSession(_ mic: any SDKVirtualAudioMic) -> MicSession {
        MicSession(mic: mic, sender: FakeAudioSender(ledger: ledger, clock: clock))
    }

    public func shareSession(_ share: any SDKShareSource) -> ShareSession {
        ShareSession(share: share, sender: FakeShareSender(ledger: ledger, clock: clock))
    }

    /// Production studio for an adapter: the fake sender checks the capability the adapter
    /// was created with (the one the app passes to `startPSMode`), given once.
    public func productionStudioSession(_ adapter: ProductionStudioAdapter) -> ProductionStudioSession {
        productionStudioSession(adapter, capability: adapter.capability)
    }

    /// Production studio for any event object, started for `capability`.
    public func productionStudioSession(_ events: any SDKProductionStudioEvent,
                                        capability: PSVideoSourceCapability) -> ProductionStudioSession {
        ProductionStudioSession(events: events, sender: FakePSSender(capability: capability, ledger: ledger, clock: clock))
    }
}

/// The external video source's lifecycle, driven by the SDK side. Each call delivers one
/// callback; `sender.isAccepting` follows the SDK: on at onStartSend, off when onStopSend
/// (or onUninitialized) returns. Unchecked `Sendable`: its state is behind `Locked`; the
/// source is the app's object, called on the SDK's thread as the SDK would.
public final class VideoSourceSession: @unchecked Sendable {
    public let source: any SDKVideoSource
    public let sender: FakeVideoSender
    /// What the SDK offers now, and the callbacks delivered in order (for assertions).
    private let state: Locked<(supported: [VideoSourceCapability], suggested: VideoSourceCapability, log: [String])>

    public var supported: [VideoSourceCapability] { state.withLock { $0.supported } }
    public var suggested: VideoSourceCapability { state.withLock { $0.suggested } }
    public var log: [String] { state.withLock { $0.log } }

    init(source: any SDKVideoSource, sender: FakeVideoSender, supported: [VideoSourceCapability], suggested: VideoSourceCapability) {
        self.source = source
        self.sender = sender
        state = Locked((supported, suggested, []))
        sender.acceptedSizes = Set(supported.map { [$0.width, $0.height] } + [[suggested.width, suggested.height]])
    }

    private func note(_ s: String) { state.withLock { $0.log.append(s) } }

    public func initialize() {
        note("onInitialize")
        source.onInitialize(sender, supportCapabilityArray: supported, suggestCapability: suggested)
    }

    public func propertyChange(supported: [VideoSourceCapability], suggested: VideoSourceCapability) {
        note("onPropertyChange")
        state.withLock {
            $0.supported = supported
            $0.suggested = suggested
        }
        source.onPropertyChange(supported, suggestCapability: suggested)
        sender.acceptedSizes = Set(supported.map { [$0.width, $0.height] } + [[suggested.width, suggested.height]])
    }

    public func startSend() {
        note("onStartSend")
        sender.isAccepting = true
        source.onStartSend()
    }

    public func stopSend() {
        note("onStopSend")
        source.onStopSend()
        sender.isAccepting = false
    }

    public func uninitialize() {
        note("onUninitialized")
        source.onUninitialized()
        sender.isAccepting = false
    }
}

/// The virtual mic's lifecycle.
/// Unchecked `Sendable`: immutable; the hook it drives is the app's object (not declared `Sendable`).
public final class MicSession: @unchecked Sendable {
    public let mic: any SDKVirtualAudioMic
    public let sender: FakeAudioSender

    init(mic: any SDKVirtualAudioMic, sender: FakeAudioSender) {
        self.mic = mic
        self.sender = sender
    }

    public func initialize() { mic.onMicInitialize(sender) }

    public func startSend() {
        sender.resetPacing()
        sender.isAccepting = true
        mic.onMicStartSend()
    }

    public func stopSend() {
        mic.onMicStopSend()
        sender.isAccepting = false
    }

    public func uninitialize() {
        mic.onMicUninitialized()
        sender.isAccepting = false
    }
}

/// The share source's lifecycle: started (with a sender) and stopped.
/// Unchecked `Sendable`: immutable; the hook it drives is the app's object (not declared `Sendable`).
public final class ShareSession: @unchecked Sendable {
    public let share: any SDKShareSource
    public let sender: FakeShareSender

    init(share: any SDKShareSource, sender: FakeShareSender) {
        self.share = share
        self.sender = sender
    }

    public func start() {
        sender.isAccepting = true
        share.onShareSendStarted(sender)
    }

    public func stop() {
        share.onShareSendStopped()
        sender.isAccepting = false
    }
}

/// Production studio's lifecycle: startPSMode's result, then onStartSend / onStopSend.
/// Unchecked `Sendable`: immutable; the hook it drives is the app's object (not declared `Sendable`).
public final class ProductionStudioSession: @unchecked Sendable {
    public let events: any SDKProductionStudioEvent
    public let sender: FakePSSender

    init(events: any SDKProductionStudioEvent, sender: FakePSSender) {
        self.events = events
        self.sender = sender
    }

    /// The SDK's answer to startPSMode.
    public func startResult(_ success: Bool) { events.onStartPSModeResult(success) }

    public func startSend() {
        sender.beginSendingPeriod()
        sender.isAccepting = true
        events.onStartSend(sender)
    }

    public func stopSend() {
        events.onStopSend()
        sender.isAccepting = false
    }

    public func userStatus(_ userID: UInt32, isStart: Bool) { events.onPSUserStatusChanged(userID, isStart: isStart) }
}

import RawFX
import RawFXCompose
import Synchronization

/// The meeting's program: every subscribed video and share pipe drawn by one compositor, every
/// participant's one-way audio mixed and listened to for who speaks, a share switching the
/// layout (docs/compose.md). The app publishes `compositor`'s frames and `mixer`'s blocks on
/// one clock (`CompositorClock`): the PS sender, the external video source, a file.
///
/// - Video: each pipe is subscribed through a `ReceiveVideoHook` (its chain, default
///   `rotate=angle=auto`, runs per stream; async mode by default, off the SDK's thread); each
///   processed frame is copied once into its compositor input. `onRawDataStatusChanged(.off)`
///   shows the input's placeholder from the next frame; `.on` and the next frame bring it back.
///   Unsubscribing removes the input and the layout re-flows.
/// - Audio: `oneWayAudio` feeds the user's mixer input and the `ActiveSpeakerDetector`; a new
///   active speaker becomes the compositor's speaker (and, with `recentSpeakersFirst`, the
///   gallery's order).
/// - Share: `shareStarted` / `shareStopped` switch to `shareLayout` and back on the next frame.
///
/// Input ids are the user id in decimal for video and `share:<id>` for a share pipe.
///
/// The output side (the PS sender, the external video source, the share source, a file or
/// pipe, on one clock) is `ProgramPublisher` (docs/production.md).
public final class MeetingProgram: @unchecked Sendable {
    /// What the program's sound is.
    public enum AudioSource: Sendable, Equatable {
        /// The one-way streams (`oneWayAudio`), each a mixer input with its own gain
        /// (`setGain`): what the program hears is under the app's control.
        case oneWayMix
        /// The virtual speaker's mixed audio (`mixedAudio`, from
        /// `onVirtualSpeakerMixedAudioReceived`) as the mixer's one input; the one-way streams
        /// still pick the active speaker but are not heard twice.
        case virtualSpeakerMixed
    }
    /// The mixer input id of the virtual speaker's mixed audio (`AudioSource.virtualSpeakerMixed`).
    public static let mixedAudioInputID = "mixed"
    public let compositor: Compositor
    public let mixer: AudioMixer
    public let director: ProgramDirector
    public let recentSpeakersFirst: Bool
    /// The time frames and audio are stamped with (µs of the compositor's timeline): its clock,
    /// or a virtual one (a test, an offline render).
    private let clock: @Sendable () -> Int64
    private var receive: ReceiveVideoHook!
    /// The inputs by stream, read on the receive workers without a lock: each change publishes a
    /// new immutable table; old tables are kept until the program ends, so a reader never holds
    /// a freed one (subscriptions are few; frames are many).
    private let table = Atomic<UInt>(0)
    private let tables = Locked<[InputTable]>([])
    /// The audio side's detector: confined to the thread that calls `oneWayAudio`.
    private let detector: ActiveSpeakerDetector
    private let audioInputs = Locked<[SDKUser: MixerInput]>([:])
    /// Users who left, for the detector (confined to the audio thread) to forget at its next block.
    private let departed = Locked<[String]>([])
    private let anyDeparted = Atomic<Bool>(false)
    /// Gains set before a user's first audio (dB), applied when their input is made.
    private let pendingGains = Locked<[SDKUser: Double]>([:])
    public let audioSource: AudioSource
    /// Display names (`userJoined(_:name:)`), read for tile labels.
    private let names = Locked<[String: String]>([:])
    /// The caption shown over the program (`setCaption`), nil: none.
    private let caption = Locked<String?>(nil)

    final class InputTable: @unchecked Sendable {
        let inputs: [ReceiveStreamID: CompositorInput]
        init(_ inputs: [ReceiveStreamID: CompositorInput]) { self.inputs = inputs }
    }

    public init(compositor configuration: Compositor.Configuration, registry: PluginRegistry,
                receiveChain: String = "rotate=angle=auto", mode: ProcessingMode = .async(capacity: 2, workers: 0),
                audioRate: Int = 48000, shareLayout: CompositorLayout = .share(speaker: .beside),
                speaker: ActiveSpeakerDetector.Configuration = .init(), recentSpeakersFirst: Bool = false,
                audioSource: AudioSource = .oneWayMix, clock: (@Sendable () -> Int64)? = nil) throws {
        self.audioSource = audioSource
        let compositor = try Compositor(configuration)
        self.compositor = compositor
        self.clock = clock ?? { compositor.now }
        mixer = try AudioMixer(sampleRate: audioRate, registry: registry)
        director = ProgramDirector(compositor: compositor, shareLayout: shareLayout)
        detector = ActiveSpeakerDetector(speaker)
        self.recentSpeakersFirst = recentSpeakersFirst
        publish([:])
        receive = try ReceiveVideoHook(chain: receiveChain, registry: registry, mode: mode, name: "program",
                                       statusSink: { [unowned self] id, status in
                                           self.input(for: id)?.isActive = status == .on
                                       },
                                       sink: { [unowned self] id, frame in
                                           _ = self.input(for: id)?.submit(copying: frame, at: self.clock())
                                       })
    }

    deinit { receive?.close() }

    /// The compositor input id of a stream.
    public static func inputID(_ user: SDKUser, _ kind: SDKRawDataPipeKind) -> String {
        kind == .share ? "share:\(user.userID)" : "\(user.userID)"
    }

    private func input(for id: ReceiveStreamID) -> CompositorInput? {
        let bits = table.load(ordering: .acquiring)
        return Unmanaged<InputTable>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue().inputs[id]
    }

    private func publish(_ inputs: [ReceiveStreamID: CompositorInput]) {
        tables.withLock { publish(inputs, into: &$0) }
    }

    private func publish(_ inputs: [ReceiveStreamID: CompositorInput], into tables: inout [InputTable]) {
        let next = InputTable(inputs)
        tables.append(next)  // kept alive until the program ends
        table.store(UInt(bitPattern: Unmanaged.passUnretained(next).toOpaque()), ordering: .releasing)
    }

    /// Changes the table under the lock (control calls one at a time), then publishes it.
    private func updateInputs<R>(_ change: (inout [ReceiveStreamID: CompositorInput]) -> R) -> R {
        tables.withLock { tables in
            var inputs = tables.last?.inputs ?? [:]
            let result = change(&inputs)
            publish(inputs, into: &tables)
            return result
        }
    }

    /// [app thread] Subscribes a user's video or share pipe and adds its input (its placeholder
    /// until the first frame).
    public func subscribe(_ pipe: any SDKRawDataPipe, user: SDKUser, kind: SDKRawDataPipeKind = .video,
                          resolution: SDKVideoResolution, placeholder: Placeholder? = nil) throws {
        let id = ReceiveStreamID(user: user, pipe: kind)
        let input = try compositor.addInput(id: Self.inputID(user, kind), placeholder: placeholder)
        updateInputs { $0[id] = input }
        do {
            try receive.subscribe(pipe, user: user, kind: kind, resolution: resolution)
        } catch {
            updateInputs { $0[id] = nil }
            try? compositor.removeInput(input.id)
            throw error
        }
    }

    /// [app thread] Unsubscribes a pipe and removes its input: the layout re-flows.
    public func unsubscribe(user: SDKUser, kind: SDKRawDataPipeKind = .video) {
        let id = ReceiveStreamID(user: user, pipe: kind)
        receive.unsubscribe(user: user, kind: kind)
        guard let input = updateInputs({ $0.removeValue(forKey: id) }) else { return }
        try? compositor.removeInput(input.id)
    }

    /// [app thread] A user left: both pipes, their audio and their place as a speaker go.
    public func userLeft(_ user: SDKUser) {
        unsubscribe(user: user, kind: .video)
        unsubscribe(user: user, kind: .share)
        if audioInputs.withLock({ $0.removeValue(forKey: user) }) != nil {
            try? mixer.removeInput("\(user.userID)")
        }
        departed.withLock { $0.append("\(user.userID)") }
        anyDeparted.store(true, ordering: .releasing)
    }

    /// [app thread] A share started (`onShareStatusChanged`); subscribe its pipe too.
    public func shareStarted(by user: SDKUser) { director.setShare(Self.inputID(user, .share)) }

    /// [app thread] The share ended.
    public func shareStopped() { director.setShare(nil) }

    /// [the SDK's audio thread] A user's one-way audio (`onVirtualSpeakerOneWayAudioReceived`):
    /// into the mix, and to the speaker detector; at `time` µs of the compositor's clock (nil:
    /// now).
    public func oneWayAudio(_ block: AudioBlock, from user: SDKUser, at time: Int64? = nil) throws {
        // The user's id as the detector knows it: the mixer input's (made once), else made here.
        var name: String?
        if audioSource == .oneWayMix {
            let input = try audioInputs.withLock { inputs -> MixerInput in
                if let existing = inputs[user] { return existing }
                let gain = pendingGains.withLock { $0.removeValue(forKey: user) } ?? 0
                let made = try mixer.addInput(id: "\(user.userID)", gainDecibels: gain)
                inputs[user] = made
                return made
            }
            try input.submit(block)
            name = input.id
        }
        let now = time ?? clock()
        if anyDeparted.exchange(false, ordering: .acquiring) {
            // Who left is no candidate any more: a departed speaker is replaced at this update.
            for gone in departed.withLock({ list -> [String] in defer { list.removeAll() }; return list }) {
                detector.remove(user: gone)
            }
        }
        detector.observe(user: name ?? "\(user.userID)", block: block, at: now)
        let (speaker, changed) = detector.update(at: now)
        if changed {
            director.setSpeaker(speaker, order: recentSpeakersFirst ? detector.recentSpeakers : nil)
        }
    }

    /// The active speaker's input id, as the detector last decided (nil: nobody spoke yet).
    public var activeSpeaker: String? { detector.speaker }

    /// [the SDK's audio thread] The virtual speaker's mixed audio
    /// (`onVirtualSpeakerMixedAudioReceived`): the program's sound with
    /// `AudioSource.virtualSpeakerMixed` (ignored with `.oneWayMix`).
    public func mixedAudio(_ block: AudioBlock) throws {
        guard audioSource == .virtualSpeakerMixed else { return }
        let input = try audioInputs.withLock { inputs -> MixerInput in
            let key = SDKUser(0)
            if let existing = inputs[key] { return existing }
            let made = try mixer.addInput(id: Self.mixedAudioInputID)
            inputs[key] = made
            return made
        }
        try input.submit(block)
    }

    /// [any thread] A user's gain in the program's mix (dB; 0: as received), now or from their
    /// first block.
    public func setGain(_ user: SDKUser, decibels: Double) {
        let existing = audioInputs.withLock { $0[user] }
        if let existing { existing.gainDecibels = decibels } else { pendingGains.withLock { $0[user] = decibels } }
    }

    // MARK: Labels and captions (the hook for the `text` plugin, issue-27-text)

    /// [app thread] A user joined (`onUserJoin`): their display name, drawn on their tile.
    public func userJoined(_ user: SDKUser, name: String) {
        names.withLock { $0[Self.inputID(user, .video)] = name }
    }

    /// The display name of an input (its user's; a share: "<name> (share)").
    public func name(ofInput id: String) -> String? {
        names.withLock { names in
            if id.hasPrefix("share:") { return names[String(id.dropFirst(6))].map { "\($0) (share)" } }
            return names[id]
        }
    }

    /// [any thread] The live caption over the program (nil: none).
    public func setCaption(_ text: String?) { caption.withLock { $0 = text } }
    public var currentCaption: String? { caption.withLock { $0 } }

    /// The per-tile label chain of an input: the `text` filter (branch issue-27-text) naming its
    /// user. HOOK: once the compositor takes per-tile overlay chains, each input gets this
    /// chain; until then it is computed and not drawn.
    public func labelChain(forInput id: String) -> String? {
        guard let name = name(ofInput: id) else { return nil }
        return FilterSpec("text", [("text", name), ("size", "24"), ("anchor", "bottom-left")]).description
    }

    /// The program caption chain: the `text` filter burning in the caption. HOOK: the
    /// compositor's output chain takes it once it has one; until then it is not drawn.
    public var captionChain: String? {
        currentCaption.map { FilterSpec("text", [("text", $0), ("size", "36"), ("anchor", "bottom")]).description }
    }
}

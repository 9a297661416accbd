import RawFX
import RawFXCompose
import Synchronization

/// Why a program cannot start.
public enum MeetingProgramError: Error, Equatable, CustomStringConvertible {
    /// Names and captions were asked for (`decorations`) but no plugin has the `text` filter.
    case noTextFilter(known: [String])

    public var description: String {
        switch self {
        case .noTextFilter(let known):
            return "names and captions need the 'text' filter (the Text plugin) but the registry has only "
                + "\(known.joined(separator: ", ")); install it or pass decorations: nil to go without"
        }
    }
}

/// The meeting's program: every subscribed video and share pipe drawn by one compositor, every
/// participant's one-way audio mixed and listened to for who speaks, a share switching the
/// layout (docs/compose.md). The app publishes `compositor`'s frames and `mixer`'s blocks on
/// one clock (`CompositorClock`): the PS sender, the external video source, a file.
///
/// - Video: each pipe is subscribed through a `ReceiveVideoHook`. In `.sync` mode (the
///   default) the SDK's frame is copied once, on the SDK's thread, into its compositor input
///   (the only copy its lent buffer needs: about 40 µs for 640x360), and the stream's chain
///   (default `rotate=angle=auto`) runs on the compose thread once per new frame of the input;
///   in `.async` mode the hook's workers run the chain off the SDK's thread and the input takes
///   a second copy. `onRawDataStatusChanged(.off)`
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
/// Unchecked: `receive` is set once in init; the rest is immutable, `Locked` or atomic
/// (the detector is used on the compose thread only).
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
    private let receiveChain: String
    private let mode: ProcessingMode
    /// How tiles are named and captions drawn (nil: neither).
    public let decorations: Decorations?
    private let registry: PluginRegistry
    /// Per input id: its label and its placeholder card (the `text` filter).
    private let labels = Locked<[String: (label: TextOverlay?, card: TextOverlay?)]>([:])
    /// The caption bar over the program.
    /// The caption bar over the program: the control handle of the chain the compositor runs.
    private let captionBar: ChainControl?

    /// Names on tiles, initials on placeholder cards and a caption bar, drawn by the `text`
    /// filter (the Text plugin, docs/plugins/text.md) as compositor overlays: each style is
    /// that filter's options, its text set by the program. nil: not drawn.
    public struct Decorations: Sendable {
        public var labelStyle: String?
        public var cardStyle: String?
        public var captionStyle: String?

        public init(labelStyle: String? = "anchor=bottom_left:size=24:box=true:padding=6:margin=8",
                    cardStyle: String? = "anchor=center:size=72",
                    captionStyle: String? = "anchor=bottom:size=36:box=true:max_width=0.8:margin=24") {
            self.labelStyle = labelStyle
            self.cardStyle = cardStyle
            self.captionStyle = captionStyle
        }

        public static let standard = Decorations()
    }

    final class InputTable: Sendable {
        let inputs: [ReceiveStreamID: CompositorInput]
        init(_ inputs: [ReceiveStreamID: CompositorInput]) { self.inputs = inputs }
    }

    public init(compositor configuration: Compositor.Configuration, registry: PluginRegistry,
                receiveChain: String = "rotate=angle=auto", mode: ProcessingMode = .sync,
                audioRate: Int = 48000, shareLayout: CompositorLayout = .share(speaker: .beside),
                speaker: ActiveSpeakerDetector.Configuration = .init(), recentSpeakersFirst: Bool = false,
                audioSource: AudioSource = .oneWayMix, decorations: Decorations? = nil,
                clock: (@Sendable () -> Int64)? = nil) throws {
        self.audioSource = audioSource
        self.receiveChain = receiveChain
        self.mode = mode
        self.registry = registry
        self.decorations = decorations
        if decorations != nil, (try? registry.filterType("text")) == nil {
            throw MeetingProgramError.noTextFilter(known: registry.filterTypes.map(\.id))
        }
        let compositor = try Compositor(configuration)
        self.compositor = compositor
        let bar = try decorations?.captionStyle.map { try Self.textChain($0, "", registry) }
        captionBar = bar?.control
        compositor.setOverlay(bar)
        self.clock = clock ?? { compositor.now }
        mixer = try AudioMixer(sampleRate: audioRate, registry: registry)
        director = ProgramDirector(compositor: compositor, shareLayout: shareLayout)
        detector = ActiveSpeakerDetector(speaker)
        self.recentSpeakersFirst = recentSpeakersFirst
        publish([:])
        // Synchronous: the SDK's frame is copied once, on its thread, straight into the input
        // (the one copy the SDK's lent buffer needs), and the chain runs on the compose thread,
        // once per new frame of the input. Async: the hook's queue holds its copy and its workers
        // run the chain, then the input takes a second copy.
        receive = try ReceiveVideoHook(chain: mode == .sync ? "" : receiveChain, registry: registry, mode: mode, name: "program",
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
        let inputID = Self.inputID(user, kind)
        let name = self.name(ofInput: inputID) ?? "\(user.userID)"
        let label = try decorations?.labelStyle.map { try TextOverlay(style: $0, text: name, registry: registry) }
        let card = try decorations?.cardStyle.map { try TextOverlay(style: $0, text: Self.initials(of: name), registry: registry) }
        labels.withLock { $0[inputID] = (label, card) }
        let chain = mode == .sync && !receiveChain.isEmpty ? try VideoChain(receiveChain, registry: registry) : nil
        let input = try compositor.addInput(id: inputID, placeholder: placeholder, chain: chain, overlay: label,
                                            placeholderOverlay: card)
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
        labels.withLock { $0[input.id] = nil }
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

    // MARK: Labels and captions

    /// [app thread] A user joined (`onUserJoin`) or was renamed: their display name, drawn on
    /// their tiles (and their initials on the placeholder card) from the next frame.
    public func userJoined(_ user: SDKUser, name: String) {
        names.withLock { $0[Self.inputID(user, .video)] = name }
        for kind in [SDKRawDataPipeKind.video, .share] {
            let id = Self.inputID(user, kind)
            guard let chains = labels.withLock({ $0[id] }), let shown = self.name(ofInput: id) else { continue }
            chains.label?.setText(shown)
            chains.card?.setText(Self.initials(of: shown))
        }
    }

    /// The display name of an input (its user's; a share: "<name> (share)").
    public func name(ofInput id: String) -> String? {
        names.withLock { names in
            if id.hasPrefix("share:") { return names[String(id.dropFirst(6))].map { "\($0) (share)" } }
            return names[id]
        }
    }

    /// [any thread] The live caption over the program (nil: none), from the next frame: the
    /// `text` filter's text changes between two frames, with no allocation on the compose
    /// thread (captions may change ten times a second).
    public func setCaption(_ text: String?) {
        caption.withLock { $0 = text }
        try? captionBar?.setParameter("text.text", text ?? "")
    }
    public var currentCaption: String? { caption.withLock { $0 } }

    /// Up to two initials of a name, upper-cased: "Ada Lovelace" → "AL", "Grace" → "G",
    /// "User 7" → "U7".
    public static func initials(of name: String) -> String {
        let words = name.split(whereSeparator: { $0.isWhitespace || $0 == "(" })
            .filter { $0.first.map { $0.isLetter || $0.isNumber } ?? false }
        let picked = words.count > 1 ? [words.first!, words.last!] : Array(words.prefix(1))
        let letters = picked.compactMap { $0.first.map { String($0).uppercased() } }.joined()
        return letters.isEmpty ? String(name.prefix(2)) : letters
    }

    /// A `text` filter chain styled by `style`, showing `text` (set as a parameter: never quoted).
    static func textChain(_ style: String, _ text: String, _ registry: PluginRegistry) throws -> VideoChain {
        let chain = try VideoChain(style.isEmpty ? "text" : "text=\(style)", registry: registry)
        try chain.control.setParameter("text.text", text)
        return chain
    }
}

/// A `text` filter over a tile: one chain per tile size, each built and negotiated on the
/// control side when the compositor lays a tile of a new size out (`prepared(for:)`), so that
/// a re-flow allocates nothing on the compose thread; the text reaches the chain in use.
final class TextOverlay: VideoProcessor, Sendable {
    private let style: String
    private let registry: PluginRegistry
    private struct State {
        var text: String
        var format: VideoFormat?
        var chain: VideoChain
    }
    private let state: Locked<State>

    init(style: String, text: String, registry: PluginRegistry) throws {
        self.style = style
        self.registry = registry
        state = Locked(State(text: text, format: nil, chain: try MeetingProgram.textChain(style, text, registry)))
    }

    /// [any thread] The text from the next frame (of the chain in use, and of later ones).
    func setText(_ text: String) {
        state.withLock { state in
            state.text = text
            try? state.chain.control.setParameter("text.text", text)
        }
    }

    /// [control] The chain for tiles of `format`: the one in use if it has that size, else a
    /// new one, negotiated here.
    func prepared(for format: VideoFormat) -> any VideoProcessor {
        state.withLock { state in
            if state.format == format { return state.chain }
            guard let chain = try? MeetingProgram.textChain(style, state.text, registry) else { return state.chain }
            _ = try? chain.negotiate(format)
            state.format = format
            state.chain = chain
            return chain
        }
    }

    /// [compose thread] Only when used unprepared: the chain in use.
    func process(_ frame: VideoFrame) throws(ChainError) -> VideoFrame {
        let chain = state.withLock { $0.chain }
        return try chain.process(frame)
    }
}

// FoundationEssentials where there is one: librawfx links this module, and the packages link
// it statically, without Foundation's international part (ICU).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFX

#if canImport(Glibc)
import Glibc
#endif

/// Who is speaking, decided from each participant's own audio (the virtual speaker's one-way
/// streams): per-user speech activity, and the active speaker as the user with the most speech
/// over a window, held for at least `holdMicroseconds` so the picture never flaps.
///
/// Speech in a 10 ms block is the block's voice flag when a voice-activity filter set it
/// (`RAWFX_AUDIO_FLAG_VOICE`), else its level with hysteresis: speech starts above `onDBFS` and
/// stops below `offDBFS`. [one thread] Feed every user's blocks and ask `update` on the same
/// thread (the SDK's audio thread, or a file tool's loop); only the decisions leave it.
public final class ActiveSpeakerDetector {
    public struct Configuration: Sendable {
        /// The window over which speech is summed.
        public var windowMicroseconds: Int64
        /// The shortest time a speaker stays on before another may take over.
        public var holdMicroseconds: Int64
        public var onDBFS: Double
        public var offDBFS: Double

        public init(windowMicroseconds: Int64 = 1_000_000, holdMicroseconds: Int64 = 1_500_000,
                    onDBFS: Double = -40, offDBFS: Double = -50) {
            self.windowMicroseconds = windowMicroseconds
            self.holdMicroseconds = holdMicroseconds
            self.onDBFS = onDBFS
            self.offDBFS = offDBFS
        }
    }

    /// One user's recent activity: a ring of 10 ms blocks, 1 when speaking.
    private final class Track {
        var ring: [Bool]
        var next = 0
        var spoken = 0
        var speaking = false
        var lastBlockTime: Int64 = .min
        var lastSpeech: Int64 = .min
        let joined: Int
        init(blocks: Int, joined: Int) {
            ring = [Bool](repeating: false, count: blocks)
            self.joined = joined
        }

        func push(_ speech: Bool) {
            if ring[next] { spoken -= 1 }
            ring[next] = speech
            if speech { spoken += 1 }
            next = (next + 1) % ring.count
        }
    }

    public let configuration: Configuration
    private var tracks: [String: Track] = [:]
    private var joinCounter = 0
    public private(set) var speaker: String?
    private var speakerSince: Int64 = .min

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    private var blocksInWindow: Int { max(1, Int(configuration.windowMicroseconds / 10_000)) }

    /// A user's 10 ms block at `time` (µs). Blocks of other lengths count as one block each.
    public func observe(user: String, block: AudioBlock, at time: Int64) {
        let track = tracks[user] ?? {
            joinCounter += 1
            let made = Track(blocks: blocksInWindow, joined: joinCounter)
            tracks[user] = made
            return made
        }()
        // Blocks missed since the last one (a user's stream stalls when they are muted) are silence.
        if track.lastBlockTime != .min {
            let missed = min(blocksInWindow, Int((time - track.lastBlockTime) / 10_000) - 1)
            if missed > 0 { for _ in 0..<missed { track.push(false) } }
        }
        track.lastBlockTime = time
        let speech: Bool
        if block.hasVoice {
            speech = true
        } else {
            let level = Self.levelDBFS(block)
            speech = track.speaking ? level > configuration.offDBFS : level > configuration.onDBFS
        }
        track.speaking = speech
        if speech { track.lastSpeech = time }
        track.push(speech)
    }

    /// A user left: no longer a candidate (the speaker is chosen again at the next update).
    public func remove(user: String) {
        tracks[user] = nil
        if speaker == user {
            speaker = nil
            speakerSince = .min
        }
    }

    /// The active speaker at `time`: the user with the most speech in the window, once the
    /// current one has held for the hold time (or has no speech left in the window). Returns
    /// the speaker and whether it changed.
    @discardableResult
    public func update(at time: Int64) -> (speaker: String?, changed: Bool) {
        // A plain loop (a filter would make a dictionary per call: one allocation per user's block).
        var bestKey: String?
        var bestSpoken = 0, bestJoined = 0
        for (key, track) in tracks where track.spoken > 0 {
            if bestKey == nil || track.spoken > bestSpoken || (track.spoken == bestSpoken && track.joined < bestJoined) {
                bestKey = key
                bestSpoken = track.spoken
                bestJoined = track.joined
            }
        }
        guard let bestKey, bestKey != speaker else { return (speaker, false) }
        let currentSpoken = speaker.flatMap { tracks[$0]?.spoken } ?? 0
        let held = speakerSince == .min || time - speakerSince >= configuration.holdMicroseconds
        guard held || currentSpoken == 0, bestSpoken > currentSpoken else { return (speaker, false) }
        speaker = bestKey
        speakerSince = time
        return (speaker, true)
    }

    /// Users by their last speech, most recent first, then the ones who never spoke in join
    /// order: the gallery's "recent speakers first" order.
    public var recentSpeakers: [String] {
        tracks.sorted { a, b in
            if a.value.lastSpeech != b.value.lastSpeech { return a.value.lastSpeech > b.value.lastSpeech }
            return a.value.joined < b.value.joined
        }.map(\.key)
    }

    /// Whether `user` is speaking now (hysteresis applied).
    public func isSpeaking(_ user: String) -> Bool { tracks[user]?.speaking ?? false }

    /// The block's RMS level in dBFS (−∞ for silence as −200).
    public static func levelDBFS(_ block: AudioBlock) -> Double {
        let count = block.frameCount * block.format.channels
        guard count > 0 else { return -200 }
        var sum = 0.0
        let samples = block.samples
        for i in 0..<count {
            let s = Double(samples[i])
            sum += s * s
        }
        let rms = (sum / Double(count)).squareRoot() / 32768
        return rms > 0 ? 20 * log10(rms) : -200
    }
}

/// The program's direction: who is on screen and in which layout, from the events a meeting
/// gives (a share starting and stopping, the active speaker changing), applied to a compositor.
/// A share switches to `shareLayout` on the next output frame, and its end back to the layout
/// before it.
public final class ProgramDirector: Sendable {
    public let compositor: Compositor
    public let shareLayout: CompositorLayout
    private let state: Locked<(base: CompositorLayout, speaker: String?, share: String?, order: [String]?)>

    public init(compositor: Compositor, shareLayout: CompositorLayout = .share(speaker: .beside)) {
        self.compositor = compositor
        self.shareLayout = shareLayout
        state = Locked((compositor.layout, nil, nil, nil))
    }

    /// [any thread] The layout when nobody shares.
    public func setLayout(_ layout: CompositorLayout) throws(CompositorError) {
        let sharing = state.withLock { s -> Bool in
            s.base = layout
            return s.share != nil
        }
        if !sharing { try compositor.setLayout(layout) }
    }

    /// [any thread] A share started (`id`: its compositor input) or ended (nil).
    public func setShare(_ id: String?) {
        let (layout, speaker, order) = state.withLock { s -> (CompositorLayout, String?, [String]?) in
            s.share = id
            return (id == nil ? s.base : shareLayout, s.speaker, s.order)
        }
        try? compositor.setLayout(layout)
        compositor.setRoles(speaker: speaker, share: id, order: order)
    }

    /// [any thread] The active speaker (from an `ActiveSpeakerDetector`, or the app) and,
    /// optionally, the gallery order.
    public func setSpeaker(_ id: String?, order: [String]? = nil) {
        let share = state.withLock { s -> String? in
            s.speaker = id
            if let order { s.order = order }
            return s.share
        }
        compositor.setRoles(speaker: id, share: share, order: order)
    }
}

import RawFX
import RawFXCompose
import RawFXMedia
import RawFXSDK

/// An emulated meeting for a recording or streaming bot (issue #27), on a virtual clock: users
/// join with video (subscribed pipes) and speech-like audio (the virtual speaker's one-way
/// streams), turn video off and on, stall, leave, share; talkers change on a schedule; every
/// frame arrives with jitter. It drives a `MeetingProgram` the way the SDK's callbacks would;
/// the caller composes and publishes (`ProgramPublisher.publish(frameIndex:)`) after each
/// `advance(toFrame:)`.
///
/// The default script (`Script()`), 60 s at 30 fps output:
/// - 25 users, each sending 15 fps with up to 25 ms of jitter (arrival order kept per user);
/// - talkers: users 3…9 in turn, 5 s each, speech-like audio (`TestAudio.speech`); the others
///   send near-silence (room noise around −80 dBFS);
/// - 10 s: user 2 turns video off (`onRawDataStatusChanged(.off)`), back on at 52 s;
/// - 15 s: user 25 leaves;
/// - 20 s: user 1 starts a share (its pipe subscribed, `onShareStatusChanged`), stopped at 40 s;
/// - 44 s: users 11 and 12 stall (no frames, no status: a frozen tile must not outlive the
///   compositor's input timeout).
public final class EmulatedMeeting {
    public struct Script: Sendable {
        public var users = 25
        public var seconds = 60
        public var outputRate = FrameRate(30)
        /// Each user's camera rate and the jitter of each frame's arrival (µs, uniform 0…jitter).
        public var cameraFPS = 15
        public var jitterMicroseconds: Int64 = 25_000
        /// Each user's picture (the subscribed resolution's size) and the share's.
        public var pictureWidth = 320
        public var pictureHeight = 180
        public var shareWidth = 1280
        public var shareHeight = 720
        /// The one-way streams' rate (the SDK's virtual speaker gives 32000 Hz mono).
        public var audioRate = 32000
        /// Audio blocks delivered ahead of the output frame (the network's lead over playout).
        public var audioLeadBlocks: Int64 = 2
        /// Talkers in turn, each for `talkTurnMicroseconds`.
        public var talkers: [UInt64] = Array(3...9)
        public var talkTurnMicroseconds: Int64 = 5_000_000
        public var videoOff: [(user: UInt64, from: Int64, to: Int64?)] = [(2, 10_000_000, 52_000_000)]
        public var leaves: [(user: UInt64, at: Int64)] = [(25, 15_000_000)]
        public var share: (user: UInt64, from: Int64, to: Int64)? = (1, 20_000_000, 40_000_000)
        public var stalls: [(user: UInt64, from: Int64)] = [(11, 44_000_000), (12, 44_000_000)]
        public init() {}

        public var frameCount: Int64 { Int64(seconds) * Int64(outputRate.numerator) / Int64(outputRate.denominator) }
    }

    /// What happened, for a test or a picture.
    public enum Event: Sendable, Equatable {
        case videoOff(UInt64), videoOn(UInt64), left(UInt64), shareStarted(UInt64), shareStopped(UInt64), stalled(UInt64)
    }

    public let script: Script
    public let program: MeetingProgram
    public let clock: EmulatorClock
    public let ledger: ContractLedger
    public let users: [SDKUser]
    public let pipes: [EmulatedVideoPipe]
    public let sharePipe: EmulatedVideoPipe?
    /// The events so far, with the output frame they preceded.
    public private(set) var events: [(frame: Int64, event: Event)] = []
    /// Video frames and audio blocks delivered.
    public private(set) var framesDelivered = 0
    public private(set) var audioBlocksDelivered: Int64 = 0
    /// Each change of the program's active speaker, at the audio block that made it (µs).
    public private(set) var speakerChanges: [(time: Int64, speaker: String)] = []

    private let raws: [EmulatedVideoRawData]
    private let pictures: [[VideoBuffer]]
    private let shareRaw: EmulatedVideoRawData?
    private let sharePicture: VideoBuffer?
    private let speech: [[Int16]]
    private let noise: [Int16]
    private let audioBlock: UnsafeMutablePointer<Int16>
    private let blockFrames: Int
    private var nextCameraFrame: [Int64]
    private var shareFrame: Int64 = 0
    private var nextAudioBlock: Int64 = 0
    private var left = Set<UInt64>()
    private var off = Set<UInt64>()
    private var stalled = Set<UInt64>()
    private var sharing = false
    private var arrivals: [(time: Int64, user: Int)] = []
    private var lastFrame: Int64 = -1

    /// `program` must read `clock` (`MeetingProgram(…, clock: { clock.microseconds })`).
    /// Subscribes every user's video pipe.
    public init(program: MeetingProgram, clock: EmulatorClock, script: Script = Script(), ledger: ContractLedger = ContractLedger()) throws {
        precondition(clock.isManual, "the emulated meeting runs on a manual clock")
        self.script = script
        self.program = program
        self.clock = clock
        self.ledger = ledger
        users = (1...script.users).map { SDKUser(UInt64($0)) }
        pipes = users.map { EmulatedVideoPipe(user: $0, ledger: ledger) }
        let format = VideoFormat(width: script.pictureWidth, height: script.pictureHeight)
        let pattern = TestPattern(format: format)
        // Two pictures per user (the box moves), each user's tinted with a chroma of its own.
        pictures = users.map { user in
            (0..<2).map { k in
                let buffer = pattern.frame(Int(user.userID) * 5 + k * 8)
                EmulatedMeeting.tint(buffer.frame, seed: Int(user.userID))
                return buffer
            }
        }
        raws = users.map { _ in EmulatedVideoRawData(format: format, ledger: ledger) }
        let resolution: SDKVideoResolution = script.pictureHeight >= 720 ? .p720 : script.pictureHeight >= 360 ? .p360 : .p180
        for (pipe, user) in zip(pipes, users) { try program.subscribe(pipe, user: user, resolution: resolution) }
        for user in users { program.userJoined(user, name: "User \(user.userID)") }
        if let share = script.share {
            sharePipe = EmulatedVideoPipe(user: SDKUser(share.user), kind: .share, ledger: ledger)
            let shareFormat = VideoFormat(width: script.shareWidth, height: script.shareHeight)
            let slide = TestPattern(format: shareFormat).frame(3)
            EmulatedMeeting.tint(slide.frame, seed: 99)
            sharePicture = slide
            shareRaw = EmulatedVideoRawData(format: shareFormat, ledger: ledger)
        } else {
            sharePipe = nil
            sharePicture = nil
            shareRaw = nil
        }
        // Speech: four voices, one per talker in turn (seeded), each a turn long.
        let turnSeconds = Double(script.talkTurnMicroseconds) / 1_000_000
        speech = (0..<4).map { TestAudio.speech(sampleRate: script.audioRate, seconds: turnSeconds, seed: UInt64($0 + 1)) }
        blockFrames = script.audioRate / 100
        var random = SeededRandom(seed: 7)
        noise = (0..<blockFrames * 10).map { _ in Int16(Int(random.next() % 5) - 2) }
        audioBlock = .allocate(capacity: blockFrames)
        audioBlock.initialize(repeating: 0, count: blockFrames)
        nextCameraFrame = [Int64](repeating: 0, count: script.users)
        arrivals.reserveCapacity(script.users * 4)
    }

    deinit { audioBlock.deallocate() }

    /// The user talking at `time` (µs).
    public func talker(at time: Int64) -> UInt64 {
        script.talkers[Int(time / script.talkTurnMicroseconds) % script.talkers.count]
    }

    /// The arrival time of user `index`'s camera frame `k` (µs): its nominal time, a phase per
    /// user and a deterministic jitter.
    public func arrival(user index: Int, frame k: Int64) -> Int64 {
        let interval = 1_000_000 / Int64(script.cameraFPS)
        var random = SeededRandom(seed: UInt64(index) &* 1_000_003 &+ UInt64(k))
        let jitter = script.jitterMicroseconds > 0 ? Int64(random.next() % UInt64(script.jitterMicroseconds)) : 0
        return k * interval + Int64(index) * interval / Int64(max(1, script.users)) + jitter
    }

    /// Runs the meeting up to output frame `frame`'s instant: the events due, every camera and
    /// share frame that arrived by then (the clock set to each arrival), and the audio blocks
    /// up to the end of that frame plus the lead. Call once per output frame, in order, then
    /// compose frame `frame`.
    public func advance(toFrame frame: Int64) throws {
        precondition(frame > lastFrame, "advance in order")
        lastFrame = frame
        let now = script.outputRate.timestamp(ofFrame: frame)
        applyEvents(through: now, frame: frame)
        // Camera frames that arrived by now, in arrival order.
        arrivals.removeAll(keepingCapacity: true)
        for index in 0..<users.count {
            let id = users[index].userID
            while true {
                let k = nextCameraFrame[index]
                let at = arrival(user: index, frame: k)
                guard at <= now else { break }
                nextCameraFrame[index] = k + 1
                if left.contains(id) || off.contains(id) || stalled.contains(id) { continue }
                arrivals.append((at, index))
            }
        }
        // Insertion sort: a few dozen, nearly in order; no allocation.
        if arrivals.count > 1 {
            for i in 1..<arrivals.count {
                let item = arrivals[i]
                var j = i - 1
                while j >= 0 && arrivals[j].time > item.time {
                    arrivals[j + 1] = arrivals[j]
                    j -= 1
                }
                arrivals[j + 1] = item
            }
        }
        for (time, index) in arrivals {
            clock.set(microseconds: time)
            let raw = raws[index]
            let picture = pictures[index][Int(nextCameraFrame[index] / 8) % 2]
            raw.capture(picture.frame, timeStampMilliseconds: UInt64(time / 1000))
            pipes[index].deliver(raw)
            framesDelivered += 1
        }
        clock.set(microseconds: now)
        // The share: 5 fps, on time.
        if sharing, let sharePipe, let shareRaw, let sharePicture, frame % 6 == 0 {
            shareRaw.capture(sharePicture.frame, timeStampMilliseconds: UInt64(now / 1000))
            sharePipe.deliver(shareRaw)
            shareFrame += 1
        }
        // Audio: every present user's 10 ms block up to this frame's end plus the lead.
        let blocks = AudioMixer.blocks(forVideoFrame: frame, rate: script.outputRate)
        let format = AudioFormat(sampleRate: script.audioRate, channels: 1)
        while nextAudioBlock < blocks.upperBound + script.audioLeadBlocks {
            let blockTime = nextAudioBlock * 10_000
            let speaking = talker(at: blockTime)
            for user in users where !left.contains(user.userID) {
                fillBlock(talking: user.userID == speaking, blockTime: blockTime)
                try program.oneWayAudio(AudioBlock(samples: audioBlock, frameCount: blockFrames, format: format), from: user, at: blockTime)
            }
            if program.audioSource == .virtualSpeakerMixed {
                fillBlock(talking: true, blockTime: blockTime)
                try program.mixedAudio(AudioBlock(samples: audioBlock, frameCount: blockFrames, format: format))
            }
            if let speaker = program.activeSpeaker, speaker != speakerChanges.last?.speaker {
                speakerChanges.append((blockTime, speaker))
            }
            nextAudioBlock += 1
            audioBlocksDelivered += 1
        }
    }

    private func fillBlock(talking: Bool, blockTime: Int64) {
        if talking {
            let turn = blockTime / script.talkTurnMicroseconds
            let voice = speech[Int(turn) % speech.count]
            let offset = Int((blockTime % script.talkTurnMicroseconds) / 10_000) * blockFrames
            voice.withUnsafeBufferPointer { v in
                let count = max(0, min(blockFrames, v.count - offset))
                if count > 0 { audioBlock.update(from: v.baseAddress! + offset, count: count) }
                if count < blockFrames { (audioBlock + count).update(repeating: 0, count: blockFrames - count) }
            }
        } else {
            let offset = Int(blockTime / 10_000 % 9) * (blockFrames / 9)
            noise.withUnsafeBufferPointer { audioBlock.update(from: $0.baseAddress! + offset, count: blockFrames) }
        }
    }

    private func note(_ event: Event, _ frame: Int64) { events.append((frame, event)) }

    private func applyEvents(through now: Int64, frame: Int64) {
        for item in script.videoOff {
            let index = Int(item.user) - 1
            if item.from <= now && !off.contains(item.user) && (item.to.map { now < $0 } ?? true) && !left.contains(item.user) {
                off.insert(item.user)
                pipes[index].setStatus(.off)
                note(.videoOff(item.user), frame)
            } else if let to = item.to, to <= now, off.contains(item.user) {
                off.remove(item.user)
                pipes[index].setStatus(.on)
                note(.videoOn(item.user), frame)
            }
        }
        for item in script.leaves where item.at <= now && !left.contains(item.user) {
            left.insert(item.user)
            program.userLeft(SDKUser(item.user))
            note(.left(item.user), frame)
        }
        for item in script.stalls where item.from <= now && !stalled.contains(item.user) {
            stalled.insert(item.user)
            note(.stalled(item.user), frame)
        }
        if let share = script.share, let sharePipe {
            if !sharing && share.from <= now && now < share.to {
                sharing = true
                try? program.subscribe(sharePipe, user: SDKUser(share.user), kind: .share,
                                       resolution: script.shareHeight >= 720 ? .p720 : .p360)
                program.shareStarted(by: SDKUser(share.user))
                note(.shareStarted(share.user), frame)
            } else if sharing && share.to <= now {
                sharing = false
                program.shareStopped()
                program.unsubscribe(user: SDKUser(share.user), kind: .share)
                note(.shareStopped(share.user), frame)
            }
        }
    }

    /// Gives a picture a chroma of its own (a gallery where tiles tell apart at a glance).
    static func tint(_ frame: VideoFrame, seed: Int) {
        let du = UInt8(truncatingIfNeeded: (seed * 37) % 96 + 80), dv = UInt8(truncatingIfNeeded: (seed * 71) % 96 + 80)
        for p in 1...2 {
            let (w, h) = frame.planeSize(p)
            let value = p == 1 ? du : dv
            for y in 0..<h {
                let row = frame.plane(p) + y * frame.stride(p)
                for x in 0..<w where row[x] == 128 { row[x] = value }
            }
        }
    }
}

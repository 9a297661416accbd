#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import RawFXSDK
import Synchronization

/// Something a hook did that the SDK's contract forbids, seen by the emulator.
public struct ContractViolation: Sendable, Hashable, CustomStringConvertible {
    /// The SDK call or object involved, e.g. "sendVideoFrame", "AudioRawData.buffer".
    public var call: String
    /// The SDK error code the real SDK would answer (its raw value), or nil for misuse the
    /// SDK does not report (e.g. reading a buffer after the callback).
    public var code: Int32?
    public var reason: String

    public init(call: String, code: Int32?, reason: String) {
        self.call = call
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(call): \(reason)" + (code.map { " [\($0)]" } ?? "") }
}

/// Collects violations and reference counts from every emulated object of a session.
public final class ContractLedger: Sendable {
    private let state = Locked<(violations: [ContractViolation], addRefs: Int, releases: Int, live: Int)>(([], 0, 0, 0))

    public init() {}

    public func record(_ violation: ContractViolation) { state.withLock { $0.violations.append(violation) } }
    public var violations: [ContractViolation] { state.withLock { $0.violations } }
    /// addRef calls that succeeded.
    public var addRefs: Int { state.withLock { $0.addRefs } }
    public var releases: Int { state.withLock { $0.releases } }
    /// References taken and not yet released (a leak if non-zero at the end).
    public var outstandingReferences: Int { state.withLock { $0.addRefs - $0.releases } }

    func didAddRef() { state.withLock { $0.addRefs += 1 } }
    func didRelease() { state.withLock { $0.releases += 1 } }
    public func reset() { state.withLock { $0 = ([], 0, 0, 0) } }
}

/// The pre-processor's frame as the SDK lends it: its own planes, with row padding (filled
/// with 0xEE so the emulator can tell whether a hook wrote past a row), valid only during
/// `onPreProcessRawData`. After the callback, buffer accessors return nil and count a
/// violation. The planes are the SDK's memory, written by the hook during the callback only.
public final class EmulatedProcessData: YUVProcessDataI420, Sendable {
    public static let paddingByte: UInt8 = 0xEE
    /// The SDK's planes.
    public let planes: VideoBuffer
    let ledger: ContractLedger
    private let valid = Atomic<Bool>(true)

    /// A frame of `format` whose rows are `padding` bytes wider than the picture.
    public init(format: VideoFormat, padding: Int = 32, ledger: ContractLedger) {
        planes = VideoBuffer(format: format, strideAlignment: 16, extraStride: padding)
        self.ledger = ledger
        fillPadding()
    }

    /// Copies a picture into the SDK's planes (as a camera capture would).
    public func capture(_ frame: VideoFrame) { frame.copy(to: planes.frame) }

    public var width: Int { planes.format.width }
    public var height: Int { planes.format.height }
    public var yStride: Int { planes.frame.stride(0) }
    public var uStride: Int { planes.frame.stride(1) }
    public var vStride: Int { planes.frame.stride(2) }
    public var rotation: Int { planes.format.rotation }
    public var isLimitedI420: Bool { planes.format.colorRange == .limited }

    public func getYBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { row(0, lineNum) }
    public func getUBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { row(1, lineNum) }
    public func getVBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { row(2, lineNum) }

    private func row(_ plane: Int, _ line: Int) -> UnsafeMutablePointer<CChar>? {
        guard valid.load(ordering: .acquiring) else {
            ledger.record(ContractViolation(call: "YUVProcessDataI420.get\(["Y", "U", "V"][plane])Buffer", code: nil,
                                            reason: "the frame was used after onPreProcessRawData returned"))
            return nil
        }
        guard line >= 0, line < planes.frame.planeSize(plane).height else { return nil }
        return UnsafeMutableRawPointer(planes.frame.plane(plane) + line * planes.frame.stride(plane))
            .assumingMemoryBound(to: CChar.self)
    }

    /// Called by the emulator when the callback returns.
    func endCallback() { valid.store(false, ordering: .releasing) }

    /// Re-opens the frame for the next callback (the SDK reuses its capture buffers).
    func beginCallback() {
        valid.store(true, ordering: .releasing)
        fillPadding()
    }

    private func fillPadding() {
        let f = planes.frame
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h { memset(f.plane(p) + y * f.stride(p) + w, Int32(Self.paddingByte), f.stride(p) - w) }
        }
    }

    /// True when every padding byte still holds `paddingByte`.
    public var paddingIntact: Bool {
        let f = planes.frame
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h {
                let row = f.plane(p) + y * f.stride(p)
                for x in w..<f.stride(p) where row[x] != Self.paddingByte { return false }
            }
        }
        return true
    }
}

/// How the SDK hands out received audio (`ZoomVideoSDKRawDataMemoryMode`).
public enum RawDataMemoryMode: Sendable {
    /// The default: the buffer dies when the callback returns; `canAddRef()` is false.
    case stack
    /// Reference counted: `addRef` keeps the buffer past the callback until `releaseRef`.
    case heap
}

/// Received PCM as the SDK lends it (`AudioRawData`). The emulator calls `endCallback`
/// when the hook's callback returns: from then on, unless references are held, the buffer
/// is poisoned (overwritten with 0x5A5A) and any read through `buffer` is a violation.
/// Unchecked `Sendable`: immutable but for the lease (behind its lock); the PCM is written
/// at init and at poisoning only.
public final class EmulatedAudioRawData: AudioRawData, @unchecked Sendable {
    public static let poison: UInt8 = 0x5A
    private let storage: UnsafeMutablePointer<CChar>
    private let bufferStart: UnsafeMutablePointer<CChar>
    public let bufferLen: Int
    public let sampleRate: Int
    public let channelNum: Int
    public let timeStamp: UInt64
    public let memoryMode: RawDataMemoryMode
    private let lease: RawDataLease

    /// `samples` interleaved, `channels` per frame. `misalign` places the PCM at an odd
    /// address (some SDK builds hand out such buffers).
    public init(samples: UnsafeBufferPointer<Int16>, sampleRate: Int, channels: Int, timeStampMilliseconds: UInt64,
                memoryMode: RawDataMemoryMode = .stack, misalign: Bool = false, ledger: ContractLedger) {
        let length = samples.count * 2
        let raw = UnsafeMutablePointer<CChar>.allocate(capacity: length + 1)
        storage = raw
        let start = misalign ? raw + 1 : raw
        if let base = samples.baseAddress { memcpy(start, base, length) }
        bufferStart = start
        bufferLen = length
        self.sampleRate = sampleRate
        self.channelNum = channels
        timeStamp = timeStampMilliseconds
        self.memoryMode = memoryMode
        lease = RawDataLease(object: "AudioRawData", memoryMode: memoryMode, ledger: ledger) {
            memset(start, Int32(EmulatedAudioRawData.poison), length)
        }
    }

    deinit { storage.deallocate() }

    public var buffer: UnsafeMutablePointer<CChar>? {
        _ = lease.checkUsable("buffer")
        return bufferStart
    }

    public func canAddRef() -> Bool { lease.canAddRef }
    public func addRef() -> Bool { lease.addRef() }
    public func releaseRef() -> Int { lease.releaseRef() }

    /// The SDK's side: the callback returned.
    public func endCallback() { lease.endCallback() }

    public var references: Int { lease.references }
}

/// The validity and reference count of one lent frame, as the SDK keeps them: usable during
/// the callback, and afterwards only while `addRef` references are held. When neither holds
/// any more the frame is poisoned (its planes overwritten with 0x5A), so a late read shows.
/// Unchecked `Sendable`: its state is behind `Locked`; `poison` writes the SDK's memory once, when the last holder lets go.
final class RawDataLease: @unchecked Sendable {
    let ledger: ContractLedger
    let memoryMode: RawDataMemoryMode
    let object: String
    private let poison: () -> Void
    /// Usable until first delivered (the SDK filling it), as `EmulatedAudioRawData` starts.
    private let state = Locked<(inCallback: Bool, references: Int, poisoned: Bool)>((true, 0, false))

    init(object: String, memoryMode: RawDataMemoryMode, ledger: ContractLedger, poison: @escaping () -> Void) {
        self.object = object
        self.memoryMode = memoryMode
        self.ledger = ledger
        self.poison = poison
    }

    /// True when the planes may be read now; records a violation otherwise.
    func checkUsable(_ accessor: String) -> Bool {
        let usable = state.withLock { $0.inCallback || $0.references > 0 }
        if !usable {
            ledger.record(ContractViolation(call: "\(object).\(accessor)", code: nil,
                                            reason: "read after the callback returned without addRef (\(memoryMode) memory)"))
        }
        return usable
    }

    var canAddRef: Bool { memoryMode == .heap }

    func addRef() -> Bool {
        guard memoryMode == .heap else {
            ledger.record(ContractViolation(call: "\(object).addRef", code: nil, reason: "addRef on stack memory (canAddRef() is false)"))
            return false
        }
        let ok = state.withLock { s -> Bool in
            guard s.inCallback || s.references > 0 else { return false }
            s.references += 1
            return true
        }
        if ok {
            ledger.didAddRef()
        } else {
            ledger.record(ContractViolation(call: "\(object).addRef", code: nil, reason: "addRef after the callback returned"))
        }
        return ok
    }

    func releaseRef() -> Int {
        let (remaining, poisonNow) = state.withLock { s -> (Int, Bool) in
            s.references -= 1
            let poison = s.references == 0 && !s.inCallback && !s.poisoned
            if poison { s.poisoned = true }
            return (s.references, poison)
        }
        if remaining < 0 {
            ledger.record(ContractViolation(call: "\(object).releaseRef", code: nil, reason: "released more often than retained"))
        } else {
            ledger.didRelease()
        }
        if poisonNow { poison() }
        return max(remaining, 0)
    }

    /// The SDK's side: the callback starts. False (and a violation) if the frame is still
    /// referenced: the SDK cannot recycle a buffer a delegate holds.
    func beginCallback() -> Bool {
        let ok = state.withLock { s -> Bool in
            guard s.references == 0 else { return false }
            s = (true, 0, false)
            return true
        }
        if !ok {
            ledger.record(ContractViolation(call: "\(object)", code: nil, reason: "delivered again while a reference is still held"))
        }
        return ok
    }

    /// The SDK's side: the callback returned.
    func endCallback() {
        let poisonNow = state.withLock { s -> Bool in
            s.inCallback = false
            let poison = s.references == 0 && !s.poisoned
            if poison { s.poisoned = true }
            return poison
        }
        if poisonNow { poison() }
    }

    var references: Int { state.withLock { $0.references } }
    var isPoisoned: Bool { state.withLock { $0.poisoned } }
}


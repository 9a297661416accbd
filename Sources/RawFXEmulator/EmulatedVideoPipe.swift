#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import RawFXSDK
import Synchronization

/// A received I420 frame as the SDK lends it (`ZoomVideoSDKVideoRawData` / `YUVRawDataI420`):
/// its own planes with `padding` bytes of row padding (filled with 0xEE), a rotation, a range,
/// and the SDK's reference counting (`.heap` memory: `canAddRef()` true). Once the callback has
/// returned and no reference is held, the planes are poisoned (0x5A) and reading a plane
/// pointer is recorded as a violation. The emulator reuses a frame for the next delivery only
/// when nothing references it (`isReusable`).
public final class EmulatedVideoRawData: VideoRawData, Sendable {
    public static let paddingByte: UInt8 = 0xEE
    public static let poison: UInt8 = 0x5A
    /// The SDK's planes.
    public let planes: VideoBuffer
    public let rotation: SDKVideoRawDataRotation
    public let isLimitedI420: Bool
    /// Set by `capture` on the delivering thread before delivery; read by delegates after.
    public var timeStamp: UInt64 { stamp.load(ordering: .relaxed) }
    private let stamp: Atomic<UInt64>
    public let sourceID: Int
    let lease: RawDataLease

    public init(format: VideoFormat, rotation: SDKVideoRawDataRotation = .none, padding: Int = 16,
                timeStampMilliseconds: UInt64 = 0, sourceID: Int = 0, memoryMode: RawDataMemoryMode = .heap,
                ledger: ContractLedger) {
        let planes = VideoBuffer(format: VideoFormat(width: format.width, height: format.height, colorRange: format.colorRange,
                                                     rotation: rotation.rawValue),
                                 strideAlignment: 1, extraStride: padding)
        self.planes = planes
        self.rotation = rotation
        isLimitedI420 = format.colorRange == .limited
        stamp = Atomic(timeStampMilliseconds)
        self.sourceID = sourceID
        lease = RawDataLease(object: "VideoRawData", memoryMode: memoryMode, ledger: ledger) {
            let f = planes.frame
            for p in 0..<3 {
                let (w, h) = f.planeSize(p)
                for y in 0..<h { memset(f.plane(p) + y * f.stride(p), Int32(Self.poison), w) }
            }
        }
        Self.fillPadding(planes.frame)
    }

    /// Copies a picture into the SDK's planes (what a decoder would write).
    public func capture(_ frame: VideoFrame, timeStampMilliseconds: UInt64? = nil) {
        frame.copy(to: planes.frame)
        if let timeStampMilliseconds { stamp.store(timeStampMilliseconds, ordering: .relaxed) }
    }

    public var streamWidth: Int { planes.format.width }
    public var streamHeight: Int { planes.format.height }
    public var yStride: Int { planes.frame.stride(0) }
    public var uStride: Int { planes.frame.stride(1) }
    public var vStride: Int { planes.frame.stride(2) }
    public var yBuffer: UnsafeMutablePointer<CChar>? { plane(0, "yBuffer") }
    public var uBuffer: UnsafeMutablePointer<CChar>? { plane(1, "uBuffer") }
    public var vBuffer: UnsafeMutablePointer<CChar>? { plane(2, "vBuffer") }
    public func canAddRef() -> Bool { lease.canAddRef }
    public func addRef() -> Bool { lease.addRef() }
    public func releaseRef() -> Int { lease.releaseRef() }

    /// References held now.
    public var references: Int { lease.references }
    /// Not referenced and not in a callback: the emulator may deliver it again.
    public var isReusable: Bool { lease.references == 0 }
    /// True when every padding byte still holds `paddingByte`.
    public var paddingIntact: Bool { Self.paddingIntact(planes.frame) }

    private func plane(_ index: Int, _ accessor: String) -> UnsafeMutablePointer<CChar>? {
        guard lease.checkUsable(accessor) else { return nil }
        return UnsafeMutableRawPointer(planes.frame.plane(index)).assumingMemoryBound(to: CChar.self)
    }

    /// Fills the row padding of every plane of `f` with `paddingByte`.
    public static func fillPadding(_ f: VideoFrame) {
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h { memset(f.plane(p) + y * f.stride(p) + w, Int32(paddingByte), f.stride(p) - w) }
        }
    }

    /// True when the row padding of every plane of `f` holds `paddingByte`.
    public static func paddingIntact(_ f: VideoFrame) -> Bool {
        for p in 0..<3 {
            let (w, h) = f.planeSize(p)
            for y in 0..<h {
                let row = f.plane(p) + y * f.stride(p)
                for x in w..<f.stride(p) where row[x] != paddingByte { return false }
            }
        }
        return true
    }
}

/// A received NV12 picture as `onPixelBuffer` lends it (a `CVPixelBuffer` of
/// `kCVPixelFormatType_420YpCbCr8BiPlanar…`): a Y plane and an interleaved U,V plane, each with
/// `padding` bytes of row padding, reference counted like `EmulatedVideoRawData`.
/// Unchecked `Sendable`: the planes are written by `capture` before delivery and read during it; the lease is behind its lock.
public final class EmulatedNV12PixelBuffer: NV12PixelBuffer, @unchecked Sendable {
    public let width: Int
    public let height: Int
    public let yStride: Int
    public let uvStride: Int
    public let isLimitedRange: Bool
    /// Set by `capture` on the delivering thread before delivery; read by delegates after.
    public private(set) var timestampMicroseconds: Int64
    private let storage: UnsafeMutablePointer<UInt8>
    private let byteCount: Int
    let lease: RawDataLease

    public init(width: Int, height: Int, limitedRange: Bool = true, padding: Int = 16, timestampMicroseconds: Int64 = 0,
                memoryMode: RawDataMemoryMode = .heap, ledger: ContractLedger) {
        precondition(width > 0 && height > 0, "an NV12 picture needs a non-empty size")
        self.width = width
        self.height = height
        yStride = width + padding
        uvStride = (width + 1) / 2 * 2 + padding
        isLimitedRange = limitedRange
        self.timestampMicroseconds = timestampMicroseconds
        let count = yStride * height + uvStride * ((height + 1) / 2)
        byteCount = count
        let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
        storage.initialize(repeating: EmulatedVideoRawData.paddingByte, count: count)
        self.storage = storage
        lease = RawDataLease(object: "CVPixelBuffer", memoryMode: memoryMode, ledger: ledger) {
            memset(storage, Int32(EmulatedVideoRawData.poison), count)
        }
    }

    deinit { storage.deallocate() }

    /// Interleaves an I420 picture of the same size into the buffer (U then V in each pair).
    public func capture(_ frame: VideoFrame, timestampMicroseconds: Int64? = nil) {
        precondition(frame.width == width && frame.height == height, "capture of \(frame.width)x\(frame.height) into \(width)x\(height)")
        for y in 0..<height { memcpy(storage + y * yStride, frame.plane(0) + y * frame.stride(0), width) }
        let uv = storage + yStride * height
        let (cw, ch) = frame.planeSize(1)
        for y in 0..<ch {
            let row = uv + y * uvStride
            for x in 0..<cw {
                row[2 * x] = frame.plane(1)[y * frame.stride(1) + x]
                row[2 * x + 1] = frame.plane(2)[y * frame.stride(2) + x]
            }
        }
        if let timestampMicroseconds { self.timestampMicroseconds = timestampMicroseconds }
    }

    public var yPlane: UnsafeMutablePointer<UInt8>? { lease.checkUsable("yPlane") ? storage : nil }
    public var uvPlane: UnsafeMutablePointer<UInt8>? { lease.checkUsable("uvPlane") ? storage + yStride * height : nil }
    public func canAddRef() -> Bool { lease.canAddRef }
    public func addRef() -> Bool { lease.addRef() }
    public func releaseRef() -> Int { lease.releaseRef() }
    public var references: Int { lease.references }
    public var isReusable: Bool { lease.references == 0 }

    /// True when every padding byte of both planes still holds 0xEE.
    public var paddingIntact: Bool {
        let rows = [(storage, yStride, width, height), (storage + yStride * height, uvStride, (width + 1) / 2 * 2, (height + 1) / 2)]
        for (base, stride, used, count) in rows {
            for y in 0..<count {
                for x in used..<stride where base[y * stride + x] != EmulatedVideoRawData.paddingByte { return false }
            }
        }
        return true
    }
}

/// One user's video pipe or share pipe (`ZoomVideoSDKRawDataPipe`), as the SDK keeps it:
/// `subscribe(with:resolution:)` refuses `.auto` (`Errors_Invalid_Parameter`) and a delegate
/// subscribed twice (`Errors_Wrong_Usage`); frames and status changes reach only the delegates
/// subscribed at that moment, each inside one callback, after which the frame's validity ends
/// (see `EmulatedVideoRawData`). The test or app drives it with `deliver`, `deliverNV12` and
/// `setStatus`, from any thread (one at a time per pipe, as the SDK's one delivery thread).
public final class EmulatedVideoPipe: SDKRawDataPipe, Sendable {
    public let user: SDKUser
    public let kind: SDKRawDataPipeKind
    public let ledger: ContractLedger
    private let state = Locked<(delegates: [any SDKRawDataPipeDelegate], resolution: SDKVideoResolution?,
                                delivered: Int, undelivered: Int)>(([], nil, 0, 0))

    public init(user: SDKUser, kind: SDKRawDataPipeKind = .video, ledger: ContractLedger) {
        self.user = user
        self.kind = kind
        self.ledger = ledger
    }

    public func subscribe(with delegate: any SDKRawDataPipeDelegate, resolution: SDKVideoResolution) -> VideoSDKError {
        guard resolution != .auto else { return .invalidParameter }
        return state.withLock { s -> VideoSDKError in
            guard !s.delegates.contains(where: { $0 === delegate }) else { return .wrongUsage }
            s.delegates.append(delegate)
            s.resolution = resolution
            return .success
        }
    }

    public func unSubscribe(with delegate: any SDKRawDataPipeDelegate) -> VideoSDKError {
        state.withLock { s -> VideoSDKError in
            guard let index = s.delegates.firstIndex(where: { $0 === delegate }) else { return .wrongUsage }
            s.delegates.remove(at: index)
            if s.delegates.isEmpty { s.resolution = nil }
            return .success
        }
    }

    /// The resolution of the current subscription (nil when none).
    public var resolution: SDKVideoResolution? { state.withLock { $0.resolution } }
    public var subscriberCount: Int { state.withLock { $0.delegates.count } }
    /// Frames handed to at least one delegate, and frames offered with none subscribed (not delivered).
    public var deliveredCount: Int { state.withLock { $0.delivered } }
    public var undeliveredCount: Int { state.withLock { $0.undelivered } }

    /// Delivers `rawData` to every subscribed delegate (`onRawDataFrameReceived`), then ends
    /// its validity. Returns how many delegates got it (0: not subscribed, nothing delivered).
    /// Allocates nothing when the frame is reused.
    @discardableResult
    public func deliver(_ rawData: EmulatedVideoRawData) -> Int {
        let delegates = takeDelegates()
        guard !delegates.isEmpty, rawData.lease.beginCallback() else { return 0 }
        // Index loops: a for-in over existentials is unspecialized in debug builds and allocates.
        for index in 0..<delegates.count { delegates[index].onRawDataFrameReceived(rawData) }
        rawData.lease.endCallback()
        return delegates.count
    }

    /// Delivers `pixels` through `onPixelBuffer(_:rotation:)`, as `deliver` does.
    @discardableResult
    public func deliverNV12(_ pixels: EmulatedNV12PixelBuffer, rotation: SDKVideoRawDataRotation = .none) -> Int {
        let delegates = takeDelegates()
        guard !delegates.isEmpty, pixels.lease.beginCallback() else { return 0 }
        for index in 0..<delegates.count { delegates[index].onPixelBuffer(pixels, rotation: rotation) }
        pixels.lease.endCallback()
        return delegates.count
    }

    /// `onRawDataStatusChanged` to every subscribed delegate.
    public func setStatus(_ status: SDKUserRawdataStatus) {
        for delegate in state.withLock({ $0.delegates }) { delegate.onRawDataStatusChanged(status) }
    }

    private func takeDelegates() -> [any SDKRawDataPipeDelegate] {
        state.withLock { s in
            if s.delegates.isEmpty { s.undelivered += 1 } else { s.delivered += 1 }
            return s.delegates
        }
    }
}

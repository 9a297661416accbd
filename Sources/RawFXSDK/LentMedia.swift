import RawFX

// The hooks' frame-shaped core: what the SDK lends a callback (a video frame, a block of PCM)
// and the SDK object's reference counting that keeps it past the callback. The SDK-named Swift
// protocols, the C API and the C++ adapter all convert straight into these; nothing mimics an
// SDK type on the way.

/// The reference counting of an SDK object (`CanAddRef` / `AddRef` / `Release`): what async
/// mode calls to keep the SDK's memory instead of copying it.
public protocol SDKReferenceCounted: AnyObject {
    /// `CanAddRef()`: false in the SDK's stack memory mode.
    func canAddRef() -> Bool
    /// `AddRef()`: keeps the buffers past the callback; true on success.
    @discardableResult func addRef() -> Bool
    /// `Release()`: drops one reference; the remaining count (the SDK deletes the object at 0).
    @discardableResult func releaseRef() -> Int
}

/// The SDK object behind lent media, as a value: a Swift SDK object, C functions over the
/// SDK's object (the C API), or nothing to keep (stack memory). Stored inline: no allocation.
public struct SDKObjectReference {
    public typealias CFunction = @convention(c) (UnsafeMutableRawPointer?) -> Int32

    enum Owner {
        case none
        case object(any SDKReferenceCounted)
        case functions(UnsafeMutableRawPointer?, canAddRef: CFunction?, addRef: CFunction?, release: CFunction?)
    }
    let owner: Owner

    /// Media that cannot be kept past the callback.
    public static var none: SDKObjectReference { SDKObjectReference(owner: .none) }

    init(owner: Owner) { self.owner = owner }

    public init(_ object: any SDKReferenceCounted) { owner = .object(object) }

    /// The SDK's object and its functions as the C structs carry them. NULL `add_ref` or
    /// `release`: it cannot be kept; NULL `can_add_ref`: it always can.
    public init(object: UnsafeMutableRawPointer?, canAddRef: CFunction?, addRef: CFunction?, release: CFunction?) {
        owner = .functions(object, canAddRef: canAddRef, addRef: addRef, release: release)
    }

    public func canAddRef() -> Bool {
        switch owner {
        case .none: return false
        case .object(let o): return o.canAddRef()
        case .functions(let object, let can, let add, let release):
            return add != nil && release != nil && (can.map { $0(object) != 0 } ?? true)
        }
    }

    /// Keeps the media; true on success (then exactly one `releaseRef` is owed).
    public func addRef() -> Bool {
        switch owner {
        case .none: return false
        case .object(let o): return o.addRef()
        case .functions(let object, _, let add, _): return add.map { $0(object) != 0 } ?? false
        }
    }

    /// Drops one reference taken with `addRef`; the remaining count.
    @discardableResult
    public func releaseRef() -> Int {
        switch owner {
        case .none: return 0
        case .object(let o): return o.releaseRef()
        case .functions(let object, _, _, let release): return release.map { Int($0(object)) } ?? 0
        }
    }

    /// `canAddRef` then `addRef`: whether the media may be kept past the callback.
    func keep() -> Bool { canAddRef() && addRef() }
}

/// A block of received PCM as the speaker takes it: interleaved 16-bit samples the SDK lends
/// for the callback, and its object's reference counting for keeping them longer.
public struct LentAudioBlock {
    public var bytes: UnsafeRawPointer
    /// Bytes in `bytes`: whole frames of `format.channels` samples.
    public var byteCount: Int
    public var format: AudioFormat
    /// Milliseconds, as the SDK stamps it.
    public var timestampMilliseconds: UInt64
    public var reference: SDKObjectReference

    public init(bytes: UnsafeRawPointer, byteCount: Int, format: AudioFormat, timestampMilliseconds: UInt64,
                reference: SDKObjectReference = .none) {
        self.bytes = bytes
        self.byteCount = byteCount
        self.format = format
        self.timestampMilliseconds = timestampMilliseconds
        self.reference = reference
    }

    /// An SDK object's block, or nil when it has no buffer or does not hold whole frames.
    public init?(_ data: any AudioRawData) {
        let channels = data.channelNum, length = data.bufferLen
        guard let buffer = data.buffer, channels > 0, data.sampleRate > 0, length > 0, length % (2 * channels) == 0 else {
            return nil
        }
        self.init(bytes: UnsafeRawPointer(buffer), byteCount: length,
                  format: AudioFormat(sampleRate: data.sampleRate, channels: channels),
                  timestampMilliseconds: data.timeStamp, reference: SDKObjectReference(data))
    }
}

/// A subscribed stream's frame-shaped core, beside its SDK-named delegate
/// (`onRawDataFrameReceived`): what an adapter that already has the planes (the C API) calls.
public protocol ReceivedFrameInput: AnyObject {
    /// [the SDK's thread for the pipe] A frame lent for the call: the rotation in its format,
    /// the SDK's time in its timestamp; async mode keeps it through `reference` when it can.
    func receive(_ frame: VideoFrame, reference: SDKObjectReference)
}

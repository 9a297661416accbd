import RawFX
// The receive side of the video SDKs' raw data (seed 001, "Receive raw data"): a user's video
// pipe or share pipe, the delegate it calls with each frame, and the frame objects it lends.
// Names follow the Video SDK (`ZoomVideoSDKRawDataPipe`, `ZoomVideoSDKRawDataPipeDelegate`,
// `ZoomVideoSDKVideoRawData`, C++ `YUVRawDataI420`); enum values follow the C++ headers, as in
// SDKTypes.swift. An adapter over the real SDK wraps its objects in these protocols; the session
// emulator (`EmulatedVideoPipe` in RawFXEmulator) implements them with the SDK's contracts.

/// The resolution a pipe is subscribed at (`ZoomVideoSDKVideoResolution`, Meeting SDK
/// `ZoomSDKResolution`). Raw-data subscriptions need a concrete one: `subscribe` answers
/// `.auto` with `Errors_Invalid_Parameter`, as the SDK does.
public enum SDKVideoResolution: Int32, Sendable, CaseIterable, CustomStringConvertible {
    case p90 = 0     // ZoomVideoSDKVideoResolution_90
    case p180 = 1    // ZoomVideoSDKVideoResolution_180
    case p360 = 2    // ZoomVideoSDKVideoResolution_360
    case p720 = 3    // ZoomVideoSDKVideoResolution_720
    case p1080 = 4   // ZoomVideoSDKVideoResolution_1080 (Meeting SDK ZoomSDKResolution_1080P)
    case auto = 100  // ZoomVideoSDKVideoResolution_Auto: refused for raw data

    /// The 16:9 picture the resolution names (the SDK may deliver another size: the frame's
    /// own `streamWidth`/`streamHeight` are authoritative). Nil for `.auto`.
    public var nominalSize: (width: Int, height: Int)? {
        switch self {
        case .p90: return (160, 90)
        case .p180: return (320, 180)
        case .p360: return (640, 360)
        case .p720: return (1280, 720)
        case .p1080: return (1920, 1080)
        case .auto: return nil
        }
    }

    public var description: String {
        switch self {
        case .p90: return "ZoomVideoSDKVideoResolution_90"
        case .p180: return "ZoomVideoSDKVideoResolution_180"
        case .p360: return "ZoomVideoSDKVideoResolution_360"
        case .p720: return "ZoomVideoSDKVideoResolution_720"
        case .p1080: return "ZoomVideoSDKVideoResolution_1080"
        case .auto: return "ZoomVideoSDKVideoResolution_Auto"
        }
    }
}

/// How far a received frame is turned (`ZoomVideoSDKVideoRawDataRotation`; C++
/// `YUVRawDataI420::GetRotation`): the clockwise degrees a viewer must apply to see it upright.
/// Raw values are the C++ degrees; iOS numbers the same cases 1...4, so adapters convert by name.
public enum SDKVideoRawDataRotation: Int, Sendable, CaseIterable, CustomStringConvertible {
    case none = 0         // ZoomVideoSDKVideoRawDataRotationNone
    case rotation90 = 90  // ZoomVideoSDKVideoRawDataRotation90
    case rotation180 = 180
    case rotation270 = 270

    public var description: String { self == .none ? "RotationNone" : "Rotation\(rawValue)" }
}

/// Whether a user's raw data is flowing (`ZoomVideoSDKUserRawdataStatus`), reported by
/// `onRawDataStatusChanged` when the sender starts or stops sending.
public enum SDKUserRawdataStatus: Int32, Sendable, CustomStringConvertible {
    case on = 0   // ZoomVideoSDKUserRawdataOn
    case off = 1  // ZoomVideoSDKUserRawdataOff

    public var description: String { self == .on ? "ZoomVideoSDKUserRawdataOn" : "ZoomVideoSDKUserRawdataOff" }
}

/// Which of a user's pipes a stream comes from (`IZoomVideoSDKUser::GetVideoPipe` /
/// `GetSharePipe`). The same delegate callback serves both.
public enum SDKRawDataPipeKind: Sendable, Hashable, CustomStringConvertible {
    case video
    case share

    public var description: String { self == .video ? "video" : "share" }
}

/// One received I420 frame (`ZoomVideoSDKVideoRawData`; C++ `YUVRawDataI420`). Lent for the
/// duration of `onRawDataFrameReceived`; kept longer only after `addRef()` (when `canAddRef()`
/// says the SDK's heap memory mode allows it), and then released with exactly one `releaseRef()`
/// per `addRef()`, or the SDK leaks the buffer.
public protocol VideoRawData: SDKReferenceCounted {
    /// `GetStreamWidth()` / iOS `size.width`.
    var streamWidth: Int { get }
    /// `GetStreamHeight()` / iOS `size.height`.
    var streamHeight: Int { get }
    /// `GetYBuffer()` / `yBuffer`: the Y plane.
    var yBuffer: UnsafeMutablePointer<CChar>? { get }
    /// `GetUBuffer()` / `uBuffer`.
    var uBuffer: UnsafeMutablePointer<CChar>? { get }
    /// `GetVBuffer()` / `vBuffer`.
    var vBuffer: UnsafeMutablePointer<CChar>? { get }
    /// Bytes between row starts. The SDK's classes have no stride accessor (their planes are
    /// packed, as `GetBuffer`/`GetBufferLen` show): the default is the row width; an adapter
    /// that knows of row padding returns the real stride.
    var yStride: Int { get }
    var uStride: Int { get }
    var vStride: Int { get }
    /// `GetRotation()` / `rotation`.
    var rotation: SDKVideoRawDataRotation { get }
    /// `IsLimitedI420()` / iOS `format == ZoomVideoSDKFrameDataFormat_I420_Limit`.
    var isLimitedI420: Bool { get }
    /// `GetTimeStamp()`: milliseconds (iOS `timeStamp` is an NSDate; adapters convert).
    var timeStamp: UInt64 { get }
    /// `GetSourceID()`.
    var sourceID: Int { get }
}

extension VideoRawData {
    public var yStride: Int { streamWidth }
    public var uStride: Int { (streamWidth + 1) / 2 }
    public var vStride: Int { (streamWidth + 1) / 2 }
    public var sourceID: Int { 0 }

    /// The frame's format as RawFX describes it (`format` / `IsLimitedI420`, rotation).
    public var videoFormat: VideoFormat {
        VideoFormat(width: streamWidth, height: streamHeight, colorRange: isLimitedI420 ? .limited : .full,
                    rotation: rotation.rawValue)
    }
}

/// One received NV12 frame: the `CVPixelBuffer` of `onPixelBuffer(_:rotation:)` (a bi-planar
/// 4:2:0 buffer: a Y plane and one plane of interleaved U,V pairs, each with its bytes per row).
/// An adapter maps `CVPixelBufferGetBaseAddressOfPlane` / `GetBytesPerRowOfPlane` here, reports
/// `kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange` as limited range, and forwards
/// `CVPixelBufferRetain`/`Release` to `addRef`/`releaseRef` (or answers `canAddRef()` false).
public protocol NV12PixelBuffer: AnyObject {
    var width: Int { get }
    var height: Int { get }
    /// Plane 0: `height` rows of `width` luma samples.
    var yPlane: UnsafeMutablePointer<UInt8>? { get }
    var yStride: Int { get }
    /// Plane 1: ⌈height/2⌉ rows of ⌈width/2⌉ U,V pairs.
    var uvPlane: UnsafeMutablePointer<UInt8>? { get }
    var uvStride: Int { get }
    var isLimitedRange: Bool { get }
    /// Microseconds (`CVBufferGetAttachment` presentation time, or the adapter's clock).
    var timestampMicroseconds: Int64 { get }
    func canAddRef() -> Bool
    @discardableResult func addRef() -> Bool
    @discardableResult func releaseRef() -> Int
}

/// `ZoomVideoSDKRawDataPipeDelegate`: what a subscribed pipe calls. The SDK calls one pipe's
/// delegate from one thread of its own; the seed advises implementing one of the two frame
/// callbacks, not both.
public protocol SDKRawDataPipeDelegate: AnyObject {
    /// `onRawDataFrameReceived:` with a YUV420 frame (video or share, whichever pipe this
    /// delegate was subscribed to).
    func onRawDataFrameReceived(_ rawData: any VideoRawData)
    /// `onRawDataStatusChanged:` when the sender stops (`.off`) or starts (`.on`) sending.
    func onRawDataStatusChanged(_ userRawdataStatus: SDKUserRawdataStatus)
    /// `onPixelBuffer:rotation:` with an NV12 frame (the Apple renderers' path).
    func onPixelBuffer(_ pixelBuffer: any NV12PixelBuffer, rotation: SDKVideoRawDataRotation)
}

extension SDKRawDataPipeDelegate {
    /// Not implemented by default, as the SDK allows.
    public func onPixelBuffer(_ pixelBuffer: any NV12PixelBuffer, rotation: SDKVideoRawDataRotation) {}
}

/// `ZoomVideoSDKRawDataPipe` (`IZoomVideoSDKRawDataPipe`): one user's video or share pipe.
public protocol SDKRawDataPipe: AnyObject {
    /// `subscribeWithDelegate:resolution:`: `.success` means frames start arriving on the
    /// delegate; any other value is a refusal and nothing is delivered (`.auto` gives
    /// `.invalidParameter`).
    @discardableResult
    func subscribe(with delegate: any SDKRawDataPipeDelegate, resolution: SDKVideoResolution) -> VideoSDKError
    /// `unSubscribeWithDelegate:`: no frame reaches `delegate` once it returns.
    @discardableResult
    func unSubscribe(with delegate: any SDKRawDataPipeDelegate) -> VideoSDKError
}

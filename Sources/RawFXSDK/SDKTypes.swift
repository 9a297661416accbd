import RawFX
// Swift mirrors of the video SDKs' raw-data hooks (Zoom Video SDK / Meeting SDK style).
//
// The protocols keep the SDK's callback names, so an app, or a thin adapter over the real SDK,
// forwards each call one to one: `onPreProcessRawData(_:)` to `onPreProcessRawData(_:)`. The
// SDK's objects (raw data, senders) are protocols too: an adapter wraps the SDK's C++ or
// Objective-C object, and the session emulator (RawFXEmulator) provides fakes that keep the
// SDK's contracts. Numbering of the enums follows the C++ headers; see docs/sdk-integration.md.

// MARK: - Enums

/// The layout and range of an I420 buffer handed to a sender (C++ `FrameDataFormat`).
/// The C++ numbering: limited 0, full 1. The SDKs' senders default to full.
public enum FrameDataFormat: Int32, Sendable, CustomStringConvertible {
    /// `FrameDataFormat_I420_LIMITED`: Y 16...235, U/V 16...240 (TV range).
    case i420Limited = 0
    /// `FrameDataFormat_I420_FULL`: 0...255 (PC range); the senders' default.
    case i420Full = 1

    public init(_ range: ColorRange) { self = range == .full ? .i420Full : .i420Limited }
    public var colorRange: ColorRange { self == .i420Full ? .full : .limited }
    public var description: String { self == .i420Full ? "I420_FULL" : "I420_LIMITED" }
}

/// Mono or stereo PCM for an audio sender (`ZoomVideoSDKAudioChannel` / `ZoomSDKAudioChannel`).
public enum SDKAudioChannel: Int32, Sendable, CustomStringConvertible {
    case mono = 0
    case stereo = 1

    public var count: Int { self == .mono ? 1 : 2 }
    public var description: String { self == .mono ? "mono" : "stereo" }
}

/// How an external source's frame is organised (`VideoSourceDataMode`): one picture, or two
/// side by side / top and bottom (a special use RawFX passes through and does not interpret).
public enum VideoSourceDataMode: Int32, Sendable {
    case none = 0
    case horizontal = 1
    case vertical = 2
}

/// A resolution and frame rate the session and the device both support (`VideoSourceCapability`).
public struct VideoSourceCapability: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Frames per second (the SDK's field is named `frame`).
    public var frame: Int
    public var dataMode: VideoSourceDataMode

    public init(width: Int, height: Int, frame: Int = 30, dataMode: VideoSourceDataMode = .none) {
        self.width = width
        self.height = height
        self.frame = frame
        self.dataMode = dataMode
    }

    /// Bytes of one I420 frame at this size: the sender's `dataLength` (w·h·3/2 for even sizes).
    public var frameLength: Int { VideoFormat(width: width, height: height).packedByteCount }
    public var description: String { "\(width)x\(height)@\(frame)" }
}

/// What an app declares when it starts production studio mode (`PSVideoSourceCapability`):
/// every `sendVideoFrame` afterwards must have exactly this width, height and format.
public struct PSVideoSourceCapability: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var format: FrameDataFormat

    public init(width: Int, height: Int, format: FrameDataFormat = .i420Full) {
        self.width = width
        self.height = height
        self.format = format
    }

    public var frameLength: Int { VideoFormat(width: width, height: height).packedByteCount }
    public var description: String { "\(width)x\(height) \(format)" }
}

/// A participant, as the speaker hook's one-way callback names it (`IZoomVideoSDKUser*` in the
/// Video SDK, a `uint32_t user_id` in the Meeting SDK). RawFX keys per-user audio state by `userID`.
public struct SDKUser: Hashable, Sendable, CustomStringConvertible {
    public var userID: UInt64

    public init(_ userID: UInt64) { self.userID = userID }

    /// A Video SDK user id is a string: it becomes a stable 64-bit key (its decimal value
    /// when it is a number, otherwise an FNV-1a hash of its UTF-8 bytes).
    public init(userIDString: String) {
        if let value = UInt64(userIDString) {
            userID = value
        } else {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in userIDString.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            userID = hash
        }
    }

    public var description: String { "user \(userID)" }
}

/// The Video SDK's error codes that the raw-data senders return (`ZoomVideoSDKErrors`;
/// values as in the C++ header). The Meeting SDK numbers the same ideas differently:
/// see `MeetingSDKError`.
public enum VideoSDKError: Int32, Error, Sendable, CustomStringConvertible {
    case success = 0
    case wrongUsage = 1
    case internalError = 2
    case uninitialize = 3
    case memoryError = 4
    case invalidParameter = 7
    case callTooFrequently = 8
    case noImpl = 9
    case dontSupportFeature = 10
    case unknown = 11
    case rawdataMallocFailed = 6001
    case rawdataNotInSession = 6002
    case rawdataNoLicense = 6003
    case rawdataVideoModuleNotReady = 6004
    case rawdataAudioModuleNotReady = 6011
    case rawdataInternalError = 6019
    case rawdataSendTooMuchDataInSingleTime = 6020
    case rawdataSendTooFrequently = 6021
    case rawdataVirtualMicIsTerminate = 6022

    public var description: String {
        switch self {
        case .success: return "Errors_Success"
        case .wrongUsage: return "Errors_Wrong_Usage"
        case .internalError: return "Errors_Internal_Error"
        case .uninitialize: return "Errors_Uninitialize"
        case .memoryError: return "Errors_Memory_Error"
        case .invalidParameter: return "Errors_Invalid_Parameter"
        case .callTooFrequently: return "Errors_Call_Too_Frequently"
        case .noImpl: return "Errors_No_Impl"
        case .dontSupportFeature: return "Errors_Dont_Support_Feature"
        case .unknown: return "Errors_Unknown"
        case .rawdataMallocFailed: return "Errors_RAWDATA_MALLOC_FAILED"
        case .rawdataNotInSession: return "Errors_RAWDATA_NOT_IN_Session"
        case .rawdataNoLicense: return "Errors_RAWDATA_NO_LICENSE"
        case .rawdataVideoModuleNotReady: return "Errors_RAWDATA_VIDEO_MODULE_NOT_READY"
        case .rawdataAudioModuleNotReady: return "Errors_RAWDATA_AUDIO_MODULE_NOT_READY"
        case .rawdataInternalError: return "Errors_RAWDATA_INTERNAL_ERROR"
        case .rawdataSendTooMuchDataInSingleTime: return "Errors_RAWDATA_SEND_TOO_MUCH_DATA_IN_SINGLE_TIME"
        case .rawdataSendTooFrequently: return "Errors_RAWDATA_SEND_TOO_FREQUENTLY"
        case .rawdataVirtualMicIsTerminate: return "Errors_RAWDATA_VIRTUAL_MIC_IS_TERMINATE"
        }
    }
}

/// The Meeting SDK's `SDKError` (values as in its C++ header): what the production studio
/// sender returns. Note wrong usage is 2 and invalid parameter 3 here, 1 and 7 in `VideoSDKError`.
public enum MeetingSDKError: Int32, Error, Sendable, CustomStringConvertible {
    case success = 0
    case noImpl = 1
    case wrongUsage = 2
    case invalidParameter = 3
    case moduleLoadFailed = 4
    case memoryFailed = 5
    case serviceFailed = 6
    case uninitialize = 7
    case unauthentication = 8
    case internalError = 15
    case tooFrequentCall = 18
    case meetingDontSupportFeature = 20
    case unknown = 13

    public var description: String {
        switch self {
        case .success: return "SDKERR_SUCCESS"
        case .noImpl: return "SDKERR_NO_IMPL"
        case .wrongUsage: return "SDKERR_WRONG_USAGE"
        case .invalidParameter: return "SDKERR_INVALID_PARAMETER"
        case .moduleLoadFailed: return "SDKERR_MODULE_LOAD_FAILED"
        case .memoryFailed: return "SDKERR_MEMORY_FAILED"
        case .serviceFailed: return "SDKERR_SERVICE_FAILED"
        case .uninitialize: return "SDKERR_UNINITIALIZE"
        case .unauthentication: return "SDKERR_UNAUTHENTICATION"
        case .internalError: return "SDKERR_INTERNAL_ERROR"
        case .tooFrequentCall: return "SDKERR_TOO_FREQUENT_CALL"
        case .meetingDontSupportFeature: return "SDKERR_MEETING_DONT_SUPPORT_FEATURE"
        case .unknown: return "SDKERR_UNKNOWN"
        }
    }
}

/// Sample rates the SDK's audio sender takes (`IZoomVideoSDKAudioSender::Send` documentation).
public enum SDKAudioRates {
    public static let mono: Set<Int> = [8000, 11025, 16000, 32000, 44100, 48000, 50000, 50400, 96000, 192000, 2822400]
    public static let stereo: Set<Int> = [8000, 16000, 32000, 44100, 48000, 50000, 50400, 96000, 192000]
    /// Production studio's `sendAudio`: 32 kHz or 48 kHz (48 kHz recommended).
    public static let productionStudio: Set<Int> = [32000, 48000]

    public static func accepts(_ rate: Int, channel: SDKAudioChannel) -> Bool {
        channel == .mono ? mono.contains(rate) : stereo.contains(rate)
    }
}

// MARK: - Raw data the SDK lends to a callback

/// The pre-processor's frame (`YUVProcessDataI420`): the SDK's own capture planes, lent for
/// the duration of `onPreProcessRawData` and edited in place. No reference count, no
/// timestamp: it must not be kept after the callback returns.
public protocol YUVProcessDataI420: AnyObject {
    var width: Int { get }
    var height: Int { get }
    /// The start of row `lineNum` of the Y plane (`GetYBuffer(lineNum)`); row 0 is the plane.
    func getYBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>?
    func getUBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>?
    func getVBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>?
    var yStride: Int { get }
    var uStride: Int { get }
    var vStride: Int { get }
    /// Clockwise degrees: 0, 90, 180 or 270.
    var rotation: Int { get }
    var isLimitedI420: Bool { get }
}

extension YUVProcessDataI420 {
    public func getYBuffer() -> UnsafeMutablePointer<CChar>? { getYBuffer(0) }
    public func getUBuffer() -> UnsafeMutablePointer<CChar>? { getUBuffer(0) }
    public func getVBuffer() -> UnsafeMutablePointer<CChar>? { getVBuffer(0) }

    /// The frame's format as RawFX describes it.
    public var videoFormat: VideoFormat {
        VideoFormat(width: width, height: height, colorRange: isLimitedI420 ? .limited : .full, rotation: rotation)
    }
}

/// A block of received PCM (`AudioRawData`): interleaved 16-bit little-endian samples, valid
/// only inside the callback unless retained with `addRef` (when `canAddRef` allows) and then
/// released with exactly one `releaseRef` per `addRef`.
public protocol AudioRawData: SDKReferenceCounted {
    var buffer: UnsafeMutablePointer<CChar>? { get }
    /// Bytes in `buffer`.
    var bufferLen: Int { get }
    var sampleRate: Int { get }
    var channelNum: Int { get }
    /// Milliseconds.
    var timeStamp: UInt64 { get }
}

// MARK: - Senders the SDK hands to a source

/// The external video source's sender (`IZoomVideoSDKVideoSender`). `frameBuffer` is tightly
/// packed I420 (Y, U, V; no stride padding) of `dataLength` = width·height·3/2 bytes.
/// The Video SDK's C++ call returns nothing; adapters over it return `.success`.
public protocol SDKVideoSender: AnyObject {
    @discardableResult
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, dataLength: Int,
                        rotation: Int, format: FrameDataFormat) -> VideoSDKError
}

/// The virtual mic's sender (`IZoomVideoSDKAudioSender::Send`): 16-bit little-endian PCM,
/// an even `dataLength`, a rate from `SDKAudioRates`.
public protocol SDKAudioSender: AnyObject {
    @discardableResult
    func send(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int, channel: SDKAudioChannel) -> VideoSDKError
}

/// The share source's sender (`IZoomVideoSDKShareSender`): packed I420, like `SDKVideoSender`.
public protocol SDKShareSender: AnyObject {
    @discardableResult
    func sendShareFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> VideoSDKError
}

/// The production studio sender (`IZoomSDKPSSender`, Meeting SDK). Width, height and format
/// must equal the capability passed to start PS mode; audio is 32000 or 48000 Hz, even lengths.
public protocol SDKPSSender: AnyObject {
    @discardableResult
    func sendVideoFrame(_ frameBuffer: UnsafeMutablePointer<CChar>, width: Int, height: Int, frameLength: Int,
                        format: FrameDataFormat) -> MeetingSDKError
    @discardableResult
    func sendAudio(_ data: UnsafeMutablePointer<CChar>, dataLength: Int, sampleRate: Int,
                   channel: SDKAudioChannel) -> MeetingSDKError
}

// MARK: - The hooks the SDK calls

/// `IZoomVideoSDKVideoSourcePreProcessor` / `IZoomSDKPreProcessor`: edit each captured camera
/// frame in place before the SDK encodes it.
public protocol SDKVideoSourcePreProcessor: AnyObject {
    func onPreProcessRawData(_ rawData: any YUVProcessDataI420)
}

/// `IZoomVideoSDKVirtualAudioSpeaker`: the audio a speaker would play, as the session mix,
/// per user, and share audio.
public protocol SDKVirtualAudioSpeaker: AnyObject {
    func onVirtualSpeakerMixedAudioReceived(_ data: any AudioRawData)
    func onVirtualSpeakerOneWayAudioReceived(_ data: any AudioRawData, user: SDKUser)
    func onVirtualSpeakerSharedAudioReceived(_ data: any AudioRawData)
}

/// The Meeting SDK's receive-side audio delegate (`IZoomSDKAudioRawDataDelegate`): the same
/// three streams under its names, with numeric user ids.
public protocol SDKAudioRawDataDelegate: AnyObject {
    func onMixedAudioRawDataReceived(_ data: any AudioRawData)
    func onOneWayAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32)
    func onShareAudioRawDataReceived(_ data: any AudioRawData, userID: UInt32)
}

/// The Video SDK's receive-side audio callbacks (`IZoomVideoSDKDelegate`): the same three
/// streams under its spellings, the user as an object. `onMixedAudioRawDataReceived` has the
/// same name in both SDKs, so one method serves both delegates.
public protocol SDKVideoSDKAudioRawDataDelegate: AnyObject {
    func onMixedAudioRawDataReceived(_ data: any AudioRawData)
    func onOneWayAudioRawDataReceived(_ data: any AudioRawData, user: SDKUser)
    func onSharedAudioRawDataReceived(_ data: any AudioRawData)
}

/// The part of the session delegate (`IZoomVideoSDKDelegate::onUserLeave`) per-user state needs.
public protocol SDKUserEvents: AnyObject {
    func onUserLeave(_ users: [SDKUser])
}

/// `IZoomVideoSDKVideoSource`: a virtual camera. Order: onInitialize → (onPropertyChange)* →
/// onStartSend → … → onStopSend → (onStartSend … onStopSend)* → onUninitialized.
public protocol SDKVideoSource: AnyObject {
    func onInitialize(_ sender: any SDKVideoSender, supportCapabilityArray: [VideoSourceCapability],
                      suggestCapability: VideoSourceCapability)
    func onPropertyChange(_ supportCapabilityArray: [VideoSourceCapability], suggestCapability: VideoSourceCapability)
    func onStartSend()
    func onStopSend()
    func onUninitialized()
}

/// `IZoomVideoSDKVirtualAudioMic`: a virtual microphone.
public protocol SDKVirtualAudioMic: AnyObject {
    func onMicInitialize(_ sender: any SDKAudioSender)
    func onMicStartSend()
    func onMicStopSend()
    func onMicUninitialized()
}

/// `IZoomVideoSDKShareSource`: raw share frames; the sender is valid from
/// onShareSendStarted until onShareSendStopped (nil when the SDK could not start).
public protocol SDKShareSource: AnyObject {
    func onShareSendStarted(_ sender: (any SDKShareSender)?)
    func onShareSendStopped()
}

/// `IMeetingProductionStudioCtrlEvent` (Meeting SDK): production studio mode's events.
/// Send only between onStartSend (non-nil sender, after onStartPSModeResult(true)) and onStopSend.
public protocol SDKProductionStudioEvent: AnyObject {
    func onStartPSModeResult(_ success: Bool)
    func onStartSend(_ sender: (any SDKPSSender)?)
    func onStopSend()
    func onPSUserStatusChanged(_ userID: UInt32, isStart: Bool)
}

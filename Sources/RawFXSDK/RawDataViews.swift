import RawFX
/// A `YUVProcessDataI420` over plane pointers an adapter already has (a C shim, a wrapper
/// around the SDK's C++ or Objective-C object). Reuse one instance per capture thread and
/// `update` it for each frame: the hook never keeps it past the call. Not `Sendable`: its
/// fields belong to the capture thread that updates it.
public final class YUVProcessDataView: YUVProcessDataI420 {
    public private(set) var width = 0
    public private(set) var height = 0
    public private(set) var yStride = 0
    public private(set) var uStride = 0
    public private(set) var vStride = 0
    public private(set) var rotation = 0
    public private(set) var isLimitedI420 = true
    private var planes: (UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?) = (nil, nil, nil)

    public init() {}

    public func update(width: Int, height: Int,
                       y: UnsafeMutablePointer<CChar>?, yStride: Int,
                       u: UnsafeMutablePointer<CChar>?, uStride: Int,
                       v: UnsafeMutablePointer<CChar>?, vStride: Int,
                       rotation: Int, isLimitedI420: Bool) {
        self.width = width
        self.height = height
        planes = (y, u, v)
        self.yStride = yStride
        self.uStride = uStride
        self.vStride = vStride
        self.rotation = rotation
        self.isLimitedI420 = isLimitedI420
    }

    /// Forgets the planes (call when the SDK's callback returns).
    public func clear() { planes = (nil, nil, nil) }

    public func getYBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { planes.0.map { $0 + lineNum * yStride } }
    public func getUBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { planes.1.map { $0 + lineNum * uStride } }
    public func getVBuffer(_ lineNum: Int) -> UnsafeMutablePointer<CChar>? { planes.2.map { $0 + lineNum * vStride } }
}

/// An `AudioRawData` over a buffer an adapter already has, with the SDK object's reference
/// counting forwarded through closures (nil: the buffer cannot be retained, as in the SDK's
/// default stack memory mode). Unchecked: immutable; the closures are the
/// adapter's (the async speaker calls `releaseRef` on its worker thread).
public final class AudioRawDataView: AudioRawData, @unchecked Sendable {
    public let buffer: UnsafeMutablePointer<CChar>?
    public let bufferLen: Int
    public let sampleRate: Int
    public let channelNum: Int
    public let timeStamp: UInt64
    private let retain: (() -> Bool)?
    private let release: (() -> Int)?

    public init(buffer: UnsafeMutablePointer<CChar>?, bufferLen: Int, sampleRate: Int, channelNum: Int, timeStamp: UInt64,
                addRef: (() -> Bool)? = nil, releaseRef: (() -> Int)? = nil) {
        self.buffer = buffer
        self.bufferLen = bufferLen
        self.sampleRate = sampleRate
        self.channelNum = channelNum
        self.timeStamp = timeStamp
        retain = addRef
        release = releaseRef
    }

    public func canAddRef() -> Bool { retain != nil && release != nil }
    public func addRef() -> Bool { retain?() ?? false }
    public func releaseRef() -> Int { release?() ?? 0 }
}

import RawFX
import Synchronization

/// One stream of the compositor: the latest frame of a participant, a share or a file.
///
/// [any thread, one at a time] `submit` hands a frame over; the compositor's thread reads
/// the newest one when it draws an output frame. The two meet in a triple buffer: three
/// slots, the writer's, the reader's and the one in the middle, swapped with one atomic
/// exchange. Neither side waits for the other and nothing is allocated per frame.
///
/// Frames are kept by reference (`submit`): a frame whose planes belong to a `VideoBuffer`
/// (what a chain returns, what async receive keeps) is retained, never copied, and must not
/// be written after it is submitted. A frame over borrowed planes (an SDK callback's) is
/// copied once into a buffer of this input's (`submit(copying:)`).
/// Unchecked `Sendable`: each slot belongs to the writer, the reader or the middle, exchanged atomically; `chain` and the overlays (process handles) are the compose thread's; the rest is immutable.
public final class CompositorInput: @unchecked Sendable {
    /// The input's name in layouts (`speaker`, `custom` tiles, `--layout-json`).
    public let id: String
    /// Shown when the input has no fresh frame; nil: the compositor's.
    public let placeholder: Placeholder?
    /// How the picture fills its tile; nil: the compositor's.
    public let fit: TileFit?
    /// [compose thread] Filters run on each new frame before it is scaled into its tile: a
    /// process handle, run by the compose thread only.
    let chain: VideoChain?
    /// [any thread] The control handle of the input's chain (parameters, bypass, metrics).
    public let chainControl: ChainControl?
    /// Filters run in place on the tile itself, after it is drawn (its picture or its
    /// placeholder) and before the tiles above it: a name label, an initials card. They see
    /// the tile's rectangle of the output as an I420 frame of the tile's size with the
    /// output's strides; the chain renegotiates when the tile's size changes (compose thread).
    public let overlay: (any VideoProcessor)?
    /// In-place filters run on the tile before `overlay` while it shows its placeholder (the
    /// user's initials on a card): never over a picture.
    public let placeholderOverlay: (any VideoProcessor)?
    /// The tile's border; nil: the compositor's.
    public let border: TileBorder?

    struct Slot {
        var frame: VideoFrame?
        var sequence: UInt64 = 0
        /// When it was submitted, in microseconds of the compositor's timeline.
        var time: Int64 = 0
    }

    private static let fresh: UInt32 = 4
    private let slots: UnsafeMutablePointer<Slot>
    /// Bits 0–1: the middle slot; bit 2: it holds a frame the reader has not taken.
    private let middle = Atomic<UInt32>(1)
    /// The writer's slot and the buffers `submit(copying:)` writes, one per slot.
    @exclusivity(unchecked) private var back = 0
    @exclusivity(unchecked) private var sequence: UInt64 = 0
    @exclusivity(unchecked) private var copies: [VideoBuffer?] = [nil, nil, nil]
    /// The reader's slot (compose thread only).
    @exclusivity(unchecked) private var front = 2
    private let active = Atomic<Bool>(true)
    private let originNanoseconds: UInt64

    /// The compose thread's memory of this input: the frame it showed and the result of the
    /// input's chain for it, so that a chain runs once per input frame, not per output frame.
    @exclusivity(unchecked) var shownSequence: UInt64 = 0
    @exclusivity(unchecked) var processed: VideoFrame?
    @exclusivity(unchecked) var chainErrors = 0

    init(id: String, placeholder: Placeholder?, fit: TileFit?, chain: VideoChain?, overlay: (any VideoProcessor)?,
         placeholderOverlay: (any VideoProcessor)?, border: TileBorder?, originNanoseconds: UInt64) {
        self.id = id
        self.placeholder = placeholder
        self.fit = fit
        self.chain = chain
        chainControl = chain?.control
        self.overlay = overlay
        self.placeholderOverlay = placeholderOverlay
        self.border = border
        self.originNanoseconds = originNanoseconds
        slots = .allocate(capacity: 3)
        slots.initialize(repeating: Slot(), count: 3)
    }

    deinit {
        slots.deinitialize(count: 3)
        slots.deallocate()
    }

    /// The compositor's clock now: microseconds since it was created (CLOCK_MONOTONIC).
    public var now: Int64 { Int64((monotonicNanoseconds() &- originNanoseconds) / 1000) }

    /// [any thread, one at a time] Makes `frame` the input's latest, shown from the next
    /// output frame whose time is at or after `time` (default: now). The frame's planes must
    /// be owned by `frame.storage` (a `VideoBuffer`'s frame); use `submit(copying:)` for
    /// borrowed planes. Returns false (and keeps nothing) for a frame that is not I420 of at
    /// least 2×2 or has borrowed planes.
    @discardableResult
    public func submit(_ frame: VideoFrame, at time: Int64? = nil) -> Bool {
        guard frame.storage != nil, Self.isDrawable(frame) else { return false }
        publish(frame, at: time ?? now)
        return true
    }

    /// [any thread, one at a time] Copies `frame` (any strides, borrowed planes) into a buffer
    /// of this input's and makes it the latest. The copy is the one copy the SDK's contract
    /// requires (its buffers die when the callback returns); nothing is allocated unless the
    /// size changed.
    @discardableResult
    public func submit(copying frame: VideoFrame, at time: Int64? = nil) -> Bool {
        guard Self.isDrawable(frame) else { return false }
        // The rotation metadata too: the input's chain (`rotate=angle=auto`) reads it.
        let format = VideoFormat(width: frame.width, height: frame.height, colorRange: frame.format.colorRange,
                                 rotation: frame.format.rotation)
        return submit(writing: format, at: time) { buffer in
            frame.copy(to: buffer)
            return true
        }
    }

    /// [any thread, one at a time] Hands `write` a frame of `format` in a buffer of this input's
    /// (allocated only when the size changes) to fill, then makes it the latest: a conversion
    /// (NV12 to I420, a decoder) writes the input's frame directly, with no copy after it.
    /// Nothing is published when `write` returns false or throws, or for a size under 2×2
    /// (returns false then).
    @discardableResult
    public func submit<E: Error>(writing format: VideoFormat, at time: Int64? = nil,
                                 _ write: (VideoFrame) throws(E) -> Bool) throws(E) -> Bool {
        guard format.width >= 2, format.height >= 2 else { return false }
        let buffer: VideoBuffer
        if let existing = copies[back], existing.format == format {
            buffer = existing
        } else {
            buffer = VideoBuffer(format: format)
            copies[back] = buffer
        }
        // The back slot may still hold a frame of this buffer: the reader never sees that slot.
        guard try write(buffer.frame) else { return false }
        publish(buffer.frame, at: time ?? now)
        return true
    }

    /// [any thread] Marks the input off (its video stopped: `onRawDataStatusChanged(off)`) or
    /// on again. An input that is off shows its placeholder from the next output frame.
    public var isActive: Bool {
        get { active.load(ordering: .relaxed) }
        set { active.store(newValue, ordering: .relaxed) }
    }

    private static func isDrawable(_ frame: VideoFrame) -> Bool {
        frame.raw.pixel_format == rawfx_pixel_format(RAWFX_PIXEL_I420) && frame.width >= 2 && frame.height >= 2
            && frame.raw.planes.0 != nil && frame.raw.planes.1 != nil && frame.raw.planes.2 != nil
    }

    private func publish(_ frame: VideoFrame, at time: Int64) {
        sequence &+= 1
        slots[back] = Slot(frame: frame, sequence: sequence, time: time)
        let previous = middle.exchange(UInt32(back) | Self.fresh, ordering: .acquiringAndReleasing)
        back = Int(previous & 3)
    }

    /// [compose thread] The newest frame submitted (nil before the first).
    func latest() -> Slot {
        if middle.load(ordering: .relaxed) & Self.fresh != 0 {
            let previous = middle.exchange(UInt32(front), ordering: .acquiringAndReleasing)
            front = Int(previous & 3)
        }
        return slots[front]
    }
}

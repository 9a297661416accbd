// FoundationEssentials where there is one: librawfx links this module, and the packages link
// it statically, without Foundation's international part (ICU).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFX
import RawFXComposeKernels
import RawFXRuntime
import RawFXScaleKernels
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A colour in I420's terms.
public struct YUVColor: Hashable, Sendable, CustomStringConvertible {
    public var y: UInt8
    public var u: UInt8
    public var v: UInt8

    public init(y: UInt8, u: UInt8 = 128, v: UInt8 = 128) {
        self.y = y
        self.u = u
        self.v = v
    }

    /// An sRGB colour in BT.601, limited range (Y 16–235) or full, rounded to nearest.
    public init(red: UInt8, green: UInt8, blue: UInt8, range: ColorRange = .limited) {
        let r = Double(red), g = Double(green), b = Double(blue)
        let luma = 0.299 * r + 0.587 * g + 0.114 * b
        let cb = (b - luma) / 1.772, cr = (r - luma) / 1.402
        func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        if range == .full {
            self.init(y: clamp(luma), u: clamp(128 + cb), v: clamp(128 + cr))
        } else {
            self.init(y: clamp(16 + luma * 219 / 255), u: clamp(128 + cb * 224 / 255), v: clamp(128 + cr * 224 / 255))
        }
    }

    /// Black of a range: Y 16 (limited) or 0 (full).
    public static func black(_ range: ColorRange = .limited) -> YUVColor { YUVColor(y: range == .full ? 0 : 16) }

    public var description: String { "Y \(y) U \(u) V \(v)" }
}

/// What a tile shows when its input has nothing fresh: no frame yet, none for longer than
/// the timeout, or the input marked off.
public enum Placeholder: Sendable {
    /// A plain colour.
    case color(YUVColor)
    /// A picture (an avatar) of any size, scaled into the tile like a frame.
    case image(VideoBuffer)
    /// The input's last frame, frozen (the colour when there never was one).
    case lastFrame(otherwise: YUVColor)
}

/// The canvas behind the tiles.
public enum Background: Sendable {
    case color(YUVColor)
    /// A picture of any size, scaled to the output once (stretched).
    case image(VideoBuffer)
}

/// A frame rate as a fraction, as Y4M and the SDKs' capabilities give it.
public struct FrameRate: Hashable, Sendable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int

    public init(_ numerator: Int, _ denominator: Int = 1) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The time of output frame `index`: index · 10⁶ · den / num microseconds, rounded down.
    /// Exact multiples of the interval whenever the interval is a whole number of µs.
    public func timestamp(ofFrame index: Int64) -> Int64 {
        index * 1_000_000 * Int64(denominator) / Int64(numerator)
    }

    /// The first output frame whose time is at or after `microseconds`.
    public func frameIndex(atOrAfter microseconds: Int64) -> Int64 {
        let scaled = microseconds * Int64(numerator)
        let per = 1_000_000 * Int64(denominator)
        return (scaled + per - 1) / per
    }

    public var description: String { denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)" }
}

/// Why a compositor refused a setting or an input.
public enum CompositorError: Error, Hashable, CustomStringConvertible {
    case badSize(width: Int, height: Int)
    case badFrameRate(FrameRate)
    case badTimeout(Int64)
    case badBorder(Int)
    case tooManyInputs(maximum: Int)
    case duplicateInput(id: String)
    case unknownInput(id: String)
    case layout(LayoutError)

    public var description: String {
        switch self {
        case .badSize(let width, let height):
            return "output size \(width)x\(height): expected even width and height from 2 to 16384 (I420)"
        case .badFrameRate(let rate):
            return "frame rate \(rate): expected a positive fraction of at most 240 frames per second"
        case .badTimeout(let value):
            return "input timeout \(value) µs: expected 1 ms to 1 hour"
        case .badBorder(let value):
            return "border of \(value) pixels: expected an even width from 0 to 64"
        case .tooManyInputs(let maximum):
            return "the compositor already has \(maximum) inputs, its maximum; remove one first"
        case .duplicateInput(let id):
            return "an input named '\(id)' already exists; input ids are unique"
        case .unknownInput(let id):
            return "no input named '\(id)'"
        case .layout(let error):
            return error.description
        }
    }
}

/// A border drawn inside a tile's rectangle, over its picture or placeholder.
public struct TileBorder: Sendable, Hashable {
    /// Pixels, even, 0 (none) to 64.
    public var width: Int
    public var color: YUVColor

    public init(width: Int, color: YUVColor) {
        self.width = width
        self.color = color
    }

    func validate() throws(CompositorError) {
        guard (0...64).contains(width), width & 1 == 0 else { throw .badBorder(width) }
    }
}

/// Scaling filters of the tiles (the `scale` filter's `filter` parameter).
public enum ScaleQuality: Int32, Sendable, CaseIterable {
    case none = 0, linear = 1, bilinear = 2, box = 3
    public var name: String { ["none", "linear", "bilinear", "box"][Int(rawValue)] }
}

/// Many streams into one picture: the engine's compositor.
///
/// Inputs are added and removed from any thread, each with an id, and each hands over frames
/// of any size at any rate (`CompositorInput.submit`). `compose(frameIndex:)` draws output
/// frame `index` of a steady clock (a `CompositorClock`, or a file tool's loop): every tile
/// shows its input's newest frame scaled into the tile's rectangle by the `scale` filter's
/// kernels, straight from the input's planes into the canvas, spread over the host's thread
/// pool (`RawFXThreadPool`); an input with nothing fresh shows its placeholder.
///
/// Control calls (`addInput`, `removeInput`, `setLayout`, `setRoles`) build the next scene
/// (the tiles' rectangles, the background's pieces) on the caller's thread and post it; the
/// compose thread takes it at the start of the next output frame. Drawing a frame allocates
/// nothing in steady state and takes no lock.
/// Unchecked `Sendable`: the canvas, tiles and columns are the compose thread's; control threads use `control` (`Locked`) and the scene `Mailbox`.
public final class Compositor: @unchecked Sendable {
    public static let maximumInputs = 49
    public static let maximumDimension = 16384

    public struct Configuration: Sendable {
        public var width: Int
        public var height: Int
        public var frameRate: FrameRate
        public var colorRange: ColorRange
        public var layout: CompositorLayout
        public var fit: TileFit
        public var filter: ScaleQuality
        public var background: Background
        public var placeholder: Placeholder
        /// An input with no frame for longer than this shows its placeholder.
        public var inputTimeoutMicroseconds: Int64
        /// A border inside every tile, in pixels (even; 0: none).
        public var border: Int
        public var borderColor: YUVColor

        public init(width: Int, height: Int, frameRate: FrameRate = FrameRate(30), colorRange: ColorRange = .limited,
                    layout: CompositorLayout = .grid, fit: TileFit = .contain, filter: ScaleQuality = .bilinear,
                    background: Background? = nil, placeholder: Placeholder? = nil,
                    inputTimeoutMicroseconds: Int64 = 1_000_000, border: Int = 0, borderColor: YUVColor? = nil) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.colorRange = colorRange
            self.layout = layout
            self.fit = fit
            self.filter = filter
            self.background = background ?? .color(.black(colorRange))
            self.placeholder = placeholder ?? .color(YUVColor(red: 40, green: 40, blue: 40, range: colorRange))
            self.inputTimeoutMicroseconds = inputTimeoutMicroseconds
            self.border = border
            self.borderColor = borderColor ?? YUVColor(red: 255, green: 255, blue: 255, range: colorRange)
        }

        public var format: VideoFormat { VideoFormat(width: width, height: height, colorRange: colorRange) }
    }

    public let configuration: Configuration
    public var format: VideoFormat { configuration.format }

    // Control side.
    private struct ControlState {
        var inputs: [CompositorInput] = []
        var layout: CompositorLayout
        var speaker: String?
        var share: String?
        /// The app's order (ids); inputs not in it follow in the order they were added.
        var order: [String] = []
        var overlay: (any VideoProcessor)?
        var version = 0
    }
    private let control: Locked<ControlState>
    private let scenes = Mailbox<CompositorScene>()
    /// The start of the compositor's timeline (CLOCK_MONOTONIC): inputs' `now`, the clock's frame 0.
    let originNanoseconds = monotonicNanoseconds()

    /// [any thread] The compositor's clock now: microseconds since it was created, the time
    /// inputs' frames and a program's audio are stamped with.
    public var now: Int64 { Int64((monotonicNanoseconds() &- originNanoseconds) / 1000) }

    // Compose side: all of it allocated at init (or when the pool grows), reused per frame.
    private let canvas: VideoBuffer
    private let backgroundImage: VideoBuffer?
    private let tiles: UnsafeMutablePointer<compose_tile>
    private let columns: UnsafeMutablePointer<scale_column_block>
    private let columnsPerTile: (luma: Int, chroma: Int)
    private let frame: UnsafeMutablePointer<compose_frame>
    @exclusivity(unchecked) private var items: UnsafeMutablePointer<compose_item>?
    @exclusivity(unchecked) private var chunkStarts: UnsafeMutablePointer<UInt32>?
    @exclusivity(unchecked) private var rowBuffers: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var chunkCapacity: UInt32 = 0
    @exclusivity(unchecked) private var scene: CompositorScene
    private let isa: scale_isa
    private let composed = Atomic<Int>(0)
    private let placeholdersShown = Atomic<Int>(0)
    private let lastComposeNanoseconds = Atomic<UInt64>(0)
    private let overlayFailures = Atomic<Int>(0)
    /// Per tile of the frame being drawn: whether it shows its placeholder (compose thread).
    private let showsPlaceholder = UnsafeMutablePointer<Bool>.allocate(capacity: Compositor.maximumInputs)

    public init(_ configuration: Configuration) throws(CompositorError) {
        let c = configuration
        guard (2...Self.maximumDimension).contains(c.width), (2...Self.maximumDimension).contains(c.height),
              (c.width | c.height) & 1 == 0 else { throw .badSize(width: c.width, height: c.height) }
        guard c.frameRate.numerator > 0, c.frameRate.denominator > 0,
              c.frameRate.numerator <= 240 * c.frameRate.denominator else { throw .badFrameRate(c.frameRate) }
        guard (1000...3_600_000_000).contains(c.inputTimeoutMicroseconds) else {
            throw .badTimeout(c.inputTimeoutMicroseconds)
        }
        guard (0...64).contains(c.border), c.border & 1 == 0 else { throw .badBorder(c.border) }
        do { try c.layout.validate(width: c.width, height: c.height) } catch { throw .layout(error) }
        self.configuration = c
        control = Locked(ControlState(layout: c.layout))
        canvas = VideoBuffer(format: c.format)
        isa = yuv_kernels_select(nil)

        var luma = 0, chroma = 0
        compose_tile_column_blocks(Int32(c.width), &luma, &chroma)
        columnsPerTile = (luma, chroma)
        let perTile = luma + chroma
        let columnBytes = MemoryLayout<scale_column_block>.stride * perTile * Self.maximumInputs
        columns = UnsafeMutableRawPointer(aligned_alloc(64, (columnBytes + 63) & ~63)!)
            .bindMemory(to: scale_column_block.self, capacity: perTile * Self.maximumInputs)
        tiles = .allocate(capacity: Self.maximumInputs)
        tiles.initialize(repeating: compose_tile(), count: Self.maximumInputs)
        for index in 0..<Self.maximumInputs {
            tiles[index].columns = columns + index * perTile
            tiles[index].luma_columns = luma
            tiles[index].chroma_columns = chroma
            tiles[index].planned_src_width = -1
        }
        frame = .allocate(capacity: 1)
        frame.initialize(to: compose_frame())
        let raw = canvas.raw
        frame.pointee.dst = (raw.planes.0, raw.planes.1, raw.planes.2)
        frame.pointee.dst_stride = raw.strides
        frame.pointee.width = Int32(c.width)
        frame.pointee.height = Int32(c.height)
        frame.pointee.tiles = tiles

        switch c.background {
        case .color(let color):
            backgroundImage = nil
            frame.pointee.background_value = (color.y, color.u, color.v)
        case .image(let image):
            let scaled = Compositor.stretch(image, to: c.format, isa: isa)
            backgroundImage = scaled
            frame.pointee.background = (UnsafePointer(scaled.raw.planes.0), UnsafePointer(scaled.raw.planes.1),
                                        UnsafePointer(scaled.raw.planes.2))
            frame.pointee.background_stride = scaled.raw.strides
        }
        scene = CompositorScene.empty(width: c.width, height: c.height)
        ensureChunks(Self.chunkCount())
        postScene { _ in }
    }

    deinit {
        showsPlaceholder.deallocate()
        free(items)
        free(chunkStarts)
        free(rowBuffers)
        free(UnsafeMutableRawPointer(columns))
        tiles.deinitialize(count: Self.maximumInputs)
        tiles.deallocate()
        frame.deallocate()
    }

    // MARK: control

    /// [any thread] Adds an input; it is drawn from the next output frame on (its placeholder
    /// until its first frame). `chain`: filters run on each of its frames before scaling.
    /// `overlay`: in-place filters run on its tile once drawn (a name label);
    /// `placeholderOverlay`: before it, only while the tile shows its placeholder (initials on
    /// a card); `border`: the tile's own border instead of the compositor's (an active
    /// speaker's highlight).
    public func addInput(id: String, placeholder: Placeholder? = nil, fit: TileFit? = nil,
                         chain: VideoChain? = nil, overlay: (any VideoProcessor)? = nil,
                         placeholderOverlay: (any VideoProcessor)? = nil,
                         border: TileBorder? = nil) throws(CompositorError) -> CompositorInput {
        try border?.validate()
        let input = CompositorInput(id: id, placeholder: placeholder, fit: fit, chain: chain, overlay: overlay,
                                    placeholderOverlay: placeholderOverlay, border: border,
                                    originNanoseconds: originNanoseconds)
        try control.withLock { (state: inout ControlState) throws(CompositorError) in
            guard state.inputs.count < Self.maximumInputs else { throw .tooManyInputs(maximum: Self.maximumInputs) }
            guard !state.inputs.contains(where: { $0.id == id }) else { throw .duplicateInput(id: id) }
            state.inputs.append(input)
        }
        postScene { _ in }
        return input
    }

    /// [any thread] Removes an input; the layout re-flows from the next output frame.
    public func removeInput(_ id: String) throws(CompositorError) {
        try control.withLock { (state: inout ControlState) throws(CompositorError) in
            guard let index = state.inputs.firstIndex(where: { $0.id == id }) else { throw .unknownInput(id: id) }
            state.inputs.remove(at: index)
        }
        postScene { _ in }
    }

    /// [any thread] The input named `id`, if any.
    public func input(_ id: String) -> CompositorInput? {
        control.withLock { $0.inputs.first { $0.id == id } }
    }

    /// [any thread] Changes the layout from the next output frame on.
    public func setLayout(_ layout: CompositorLayout) throws(CompositorError) {
        do { try layout.validate(width: configuration.width, height: configuration.height) } catch {
            throw .layout(error)
        }
        postScene { $0.layout = layout }
    }

    /// [any thread] The active speaker and the share (ids; nil: none), and the gallery order
    /// (nil: keep it). Unknown ids are kept and take effect when such an input is added.
    public func setRoles(speaker: String?, share: String?, order: [String]? = nil) {
        postScene { state in
            state.speaker = speaker
            state.share = share
            if let order { state.order = order }
        }
    }

    /// [any thread] In-place filters run on the whole output after every tile (a caption bar,
    /// a logo), from the next output frame on; nil: none. The chain's parameters change at run
    /// time through its own control (`setParameter`), without a new scene.
    public func setOverlay(_ chain: (any VideoProcessor)?) {
        postScene { $0.overlay = chain }
    }

    /// [any thread] The layout in force for the control side (the compose thread may still
    /// draw the previous one until its next frame).
    public var layout: CompositorLayout { control.withLock { $0.layout } }

    private func postScene(_ change: (inout ControlState) -> Void) {
        let next: CompositorScene = control.withLock { state in
            change(&state)
            state.version += 1
            return CompositorScene(state.inputs, layout: state.layout, roles: Self.roles(state),
                                   overlay: state.overlay, configuration: configuration, version: state.version)
        }
        scenes.post { _ in next }
    }

    private static func roles(_ state: ControlState) -> LayoutRoles {
        let ids = state.inputs.map(\.id)
        let known = Set(ids)
        var order = state.order.filter { known.contains($0) }
        let ordered = Set(order)
        order += ids.filter { !ordered.contains($0) }
        return LayoutRoles(order: order, speaker: state.speaker, share: state.share)
    }

    // MARK: compose thread

    /// What the compose thread drew last: the layout and where each input went.
    public struct SceneInfo: Sendable {
        public var version: Int
        public var layout: CompositorLayout
        public var placements: [TilePlacement]

        /// `{"version": N, "layout": "grid", "tiles": {"id": {"x": …, "y": …, "width": …, "height": …, "z": …}}}`
        /// with `extra` fields first (`"frame": 30`): a line of `--layout-json`, the C API's
        /// rawfx_compositor_scene_json.
        public func json(extra: [(String, Int64)] = []) -> String {
            func quoted(_ s: String) -> String {
                (try? JSONEncoder().encode(s)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
            }
            let fields = extra.map { "\(quoted($0.0)): \($0.1)" } + ["\"version\": \(version)", "\"layout\": \(quoted(layout.name))"]
            let tiles = placements.map { p in
                "\(quoted(p.id)): {\"x\": \(p.rect.x), \"y\": \(p.rect.y), \"width\": \(p.rect.width), \"height\": \(p.rect.height), \"z\": \(p.z)}"
            }
            return "{\(fields.joined(separator: ", ")), \"tiles\": {\(tiles.joined(separator: ", "))}}"
        }
    }

    /// [compose thread] The scene of the last `compose` (changes only when a control call
    /// was taken: compare `version`).
    public var currentScene: SceneInfo {
        SceneInfo(version: scene.version, layout: scene.layout, placements: scene.placements)
    }

    /// [compose thread, one at a time] Draws output frame `index`: its timestamp is
    /// `frameRate.timestamp(ofFrame: index)`. Returns the canvas, valid until the next call
    /// (the canvas is redrawn whole each time: every tile, bar and background piece).
    public func compose(frameIndex index: Int64) -> VideoFrame {
        let start = monotonicNanoseconds()
        if scenes.hasPending, let next = scenes.take() {
            scenes.retire(scene)
            scene = next
        }
        let time = configuration.frameRate.timestamp(ofFrame: index)
        let current = scene
        let count = current.inputs.count
        var placeholders = 0
        for index in 0..<count {
            let tile = tiles + index
            let input = current.inputs[index]
            tile.pointee.rect = current.rects[index]
            tile.pointee.pass = Int32(current.passes[index])
            tile.pointee.mode = (input.fit ?? configuration.fit) == .cover ? Int32(SCALE_MODE_FILL) : Int32(SCALE_MODE_FIT)
            tile.pointee.filter = configuration.filter.rawValue
            let live = show(input, in: tile, at: time)
            showsPlaceholder[index] = !live
            if !live { placeholders += 1 }
            compose_prepare_tile(tile, isa)
        }
        frame.pointee.tile_count = Int32(count)
        frame.pointee.background_rects = UnsafePointer(current.backgroundRects.baseAddress)
        frame.pointee.background_rect_count = Int32(current.backgroundRects.count)

        let chunks = ensureChunks(Self.chunkCount())
        for pass in 0..<current.passCount {
            let jobs = compose_schedule(frame, Int32(pass), chunks)
            if jobs == 1 {
                compose_run_chunk(frame, 0)
            } else if jobs > 1 {
                rfx_runtime_run_jobs(compose_run_chunk, frame, jobs)
            }
            // A pass's borders and overlays before the tiles above them.
            for index in 0..<count where current.passes[index] == pass {
                decorate(current.inputs[index], tiles[index].rect, overlays: current.overlays, cards: current.cards,
                         index: index, placeholder: showsPlaceholder[index], at: time)
            }
        }
        if let overlay = current.overlay {
            var whole = canvas.frame
            whole.raw.timestamp_us = time
            runOverlay(overlay, on: whole)
        }
        composed.add(1, ordering: .relaxed)
        placeholdersShown.add(placeholders, ordering: .relaxed)
        lastComposeNanoseconds.store(monotonicNanoseconds() &- start, ordering: .relaxed)
        var output = canvas.frame
        output.raw.timestamp_us = time
        return output
    }

    /// The tile's border (its own or the compositor's), then its overlay chain on the tile's
    /// rectangle of the canvas.
    private func decorate(_ input: CompositorInput, _ rect: compose_rect, overlays: [(any VideoProcessor)?],
                          cards: [(any VideoProcessor)?], index: Int, placeholder: Bool, at time: Int64) {
        let border = input.border ?? TileBorder(width: configuration.border, color: configuration.borderColor)
        if border.width > 0 {
            var c = (border.color.y, border.color.u, border.color.v)
            withUnsafePointer(to: &c) { pointer in
                pointer.withMemoryRebound(to: UInt8.self, capacity: 3) {
                    compose_draw_border(frame, rect, Int32(border.width), $0)
                }
            }
        }
        let card = placeholder ? cards[index] : nil
        let overlay = overlays[index]
        guard overlay != nil || card != nil, rect.width > 0, rect.height > 0 else { return }
        let whole = canvas.frame
        let x = Int(rect.x), y = Int(rect.y)
        let view = VideoFrame(format: VideoFormat(width: Int(rect.width), height: Int(rect.height),
                                                  colorRange: configuration.colorRange),
                              y: whole.plane(0) + y * whole.stride(0) + x, yStride: whole.stride(0),
                              u: whole.plane(1) + y / 2 * whole.stride(1) + x / 2, uStride: whole.stride(1),
                              v: whole.plane(2) + y / 2 * whole.stride(2) + x / 2, vStride: whole.stride(2),
                              timestampMicroseconds: time)
        if let card { runOverlay(card, on: view) }
        if let overlay { runOverlay(overlay, on: view) }
    }

    /// Runs an overlay chain in place on `view`. A chain whose output is elsewhere (a filter
    /// that is not in place) is copied back when it kept the size; a failure or another size
    /// leaves the picture as drawn and is counted.
    private func runOverlay(_ chain: any VideoProcessor, on view: VideoFrame) {
        do {
            let result = try chain.process(view)
            guard result.raw.planes.0 != view.raw.planes.0 else { return }
            guard result.width == view.width, result.height == view.height else {
                overlayFailures.add(1, ordering: .relaxed)
                return
            }
            result.copy(to: view)
        } catch {
            overlayFailures.add(1, ordering: .relaxed)
        }
    }

    /// Points the tile at what the input should show at `time`: its newest frame (through its
    /// chain, once per frame), or its placeholder. True when a frame is shown.
    private func show(_ input: CompositorInput, in tile: UnsafeMutablePointer<compose_tile>, at time: Int64) -> Bool {
        let slot = input.latest()
        if let frame = slot.frame, input.isActive, time - slot.time <= configuration.inputTimeoutMicroseconds {
            set(tile, source: processed(input, frame, sequence: slot.sequence))
            return true
        }
        let color: YUVColor
        switch input.placeholder ?? configuration.placeholder {
        case .image(let image):
            set(tile, source: image.frame)
            return false
        case .lastFrame(let otherwise):
            if let frame = slot.frame {
                set(tile, source: processed(input, frame, sequence: slot.sequence))
                return false
            }
            color = otherwise
        case .color(let c):
            color = c
        }
        tile.pointee.src = (nil, nil, nil)
        tile.pointee.fill = (color.y, color.u, color.v)
        return false
    }

    private func set(_ tile: UnsafeMutablePointer<compose_tile>, source: VideoFrame) {
        let raw = source.raw
        tile.pointee.src = (UnsafePointer(raw.planes.0), UnsafePointer(raw.planes.1), UnsafePointer(raw.planes.2))
        tile.pointee.src_stride = raw.strides
        tile.pointee.src_width = Int32(raw.width)
        tile.pointee.src_height = Int32(raw.height)
        let bars = backgroundColor
        tile.pointee.fill = (bars.y, bars.u, bars.v)
    }

    /// The bars' colour: the background's (an image background gives black bars).
    private var backgroundColor: YUVColor {
        if case .color(let color) = configuration.background { return color }
        return .black(configuration.colorRange)
    }

    /// The input's frame after its chain: run once per new frame, kept for the next output
    /// frames that show the same one. A chain that fails shows the frame as it came.
    private func processed(_ input: CompositorInput, _ frame: VideoFrame, sequence: UInt64) -> VideoFrame {
        guard let chain = input.chain else { return frame }
        if input.shownSequence == sequence, let processed = input.processed { return processed }
        input.shownSequence = sequence
        do {
            input.processed = try chain.process(frame)
        } catch {
            input.chainErrors += 1
            input.processed = frame
        }
        return input.processed!
    }

    /// Jobs per pass: four per pool thread (a thread on a slower vCPU takes fewer), one when
    /// the pool has one thread.
    private static func chunkCount() -> UInt32 {
        let threads = max(1, rfx_runtime_thread_count())
        return threads == 1 ? 1 : threads * 4
    }

    /// Items, chunk starts and row buffers for `count` chunks of every pass; allocates only
    /// when the pool grew.
    @discardableResult
    private func ensureChunks(_ count: UInt32) -> UInt32 {
        if count <= chunkCapacity { return count }
        free(items)
        free(chunkStarts)
        free(rowBuffers)
        let itemCapacity = compose_item_capacity(Int32(Self.maximumInputs), Int32(CompositorScene.maximumBackgroundRects), count)
        items = malloc(itemCapacity * MemoryLayout<compose_item>.stride)!.bindMemory(to: compose_item.self, capacity: itemCapacity)
        chunkStarts = malloc(Int(count + 1) * MemoryLayout<UInt32>.stride)!.bindMemory(to: UInt32.self, capacity: Int(count + 1))
        let rowBytes = scale_row_buffer_size(Int32(Self.maximumDimension), Int32(configuration.width))
        rowBuffers = aligned_alloc(64, rowBytes * Int(count))
        frame.pointee.items = items
        frame.pointee.item_capacity = itemCapacity
        frame.pointee.chunk_starts = chunkStarts
        frame.pointee.chunk_capacity = count
        frame.pointee.row_buffers = rowBuffers?.assumingMemoryBound(to: UInt8.self)
        frame.pointee.row_buffer_bytes = rowBytes
        chunkCapacity = count
        return count
    }

    /// A picture scaled (stretched) to `format` with the tiles' kernels, once: a background.
    static func stretch(_ image: VideoBuffer, to format: VideoFormat, isa: scale_isa) -> VideoBuffer {
        let output = VideoBuffer(format: format)
        var luma = 0, chroma = 0
        compose_tile_column_blocks(Int32(format.width), &luma, &chroma)
        let columns = UnsafeMutablePointer<scale_column_block>.allocate(capacity: luma + chroma)
        defer { columns.deallocate() }
        var tile = compose_tile()
        tile.rect = compose_rect(x: 0, y: 0, width: Int32(format.width), height: Int32(format.height))
        tile.mode = Int32(SCALE_MODE_STRETCH)
        tile.filter = ScaleQuality.bilinear.rawValue
        tile.planned_src_width = -1
        tile.columns = columns
        tile.luma_columns = luma
        tile.chroma_columns = chroma
        let raw = image.raw
        tile.src = (UnsafePointer(raw.planes.0), UnsafePointer(raw.planes.1), UnsafePointer(raw.planes.2))
        tile.src_stride = raw.strides
        tile.src_width = Int32(raw.width)
        tile.src_height = Int32(raw.height)
        compose_prepare_tile(&tile, isa)
        let capacity = compose_item_capacity(1, 0, 1)
        let items = UnsafeMutablePointer<compose_item>.allocate(capacity: capacity)
        defer { items.deallocate() }
        var starts: (UInt32, UInt32) = (0, 0)
        let rowBytes = scale_row_buffer_size(Int32(raw.width), Int32(format.width))
        let rows = aligned_alloc(64, rowBytes)!
        defer { free(rows) }
        withUnsafeMutablePointer(to: &tile) { tilePointer in
            withUnsafeMutablePointer(to: &starts) { startsPointer in
                var frame = compose_frame()
                let out = output.raw
                frame.dst = out.planes
                frame.dst_stride = out.strides
                frame.width = Int32(format.width)
                frame.height = Int32(format.height)
                frame.tiles = tilePointer
                frame.tile_count = 1
                frame.items = items
                frame.item_capacity = capacity
                frame.chunk_starts = UnsafeMutableRawPointer(startsPointer).assumingMemoryBound(to: UInt32.self)
                frame.chunk_capacity = 1
                frame.row_buffers = rows.assumingMemoryBound(to: UInt8.self)
                frame.row_buffer_bytes = rowBytes
                if compose_schedule(&frame, 0, 1) > 0 { compose_run_chunk(&frame, 0) }
            }
        }
        return output
    }

    // MARK: figures

    /// Output frames drawn so far.
    public var framesComposed: Int { composed.load(ordering: .relaxed) }
    /// Tiles drawn with a placeholder, summed over every output frame.
    public var placeholderTilesShown: Int { placeholdersShown.load(ordering: .relaxed) }
    /// Overlay chains (a tile's or the program's) that failed or changed the size, summed over
    /// every output frame; the picture is then left as drawn.
    public var overlayFailureCount: Int { overlayFailures.load(ordering: .relaxed) }
    /// Time the last `compose` took, in nanoseconds.
    public var lastComposeTime: UInt64 { lastComposeNanoseconds.load(ordering: .relaxed) }
}

/// Everything the compose thread needs of the control state, resolved once per change on
/// the control side: the inputs in drawing order with their rectangles and passes, and the
/// background's pieces. Immutable; handed over whole through a `Mailbox`, so not `Sendable`.
final class CompositorScene {
    /// With at most 49 tiles the uncovered area cuts into at most (2·49 + 1) × 50 pieces.
    static let maximumBackgroundRects = (2 * Compositor.maximumInputs + 1) * (Compositor.maximumInputs + 1)

    let version: Int
    let layout: CompositorLayout
    let placements: [TilePlacement]
    let inputs: [CompositorInput]
    let rects: [compose_rect]
    let passes: [Int]
    let passCount: Int
    let backgroundRects: UnsafeMutableBufferPointer<compose_rect>
    /// In-place filters on the whole output after the tiles.
    let overlay: (any VideoProcessor)?
    /// Per tile: its input's overlay and placeholder card, each prepared for the tile's size
    /// here, on the control side (`VideoProcessor.prepared(for:)`).
    let overlays: [(any VideoProcessor)?]
    let cards: [(any VideoProcessor)?]

    init(_ all: [CompositorInput], layout: CompositorLayout, roles: LayoutRoles, overlay: (any VideoProcessor)? = nil,
         configuration: Compositor.Configuration, version: Int) {
        self.version = version
        self.overlay = overlay
        self.layout = layout
        let placements = layout.placements(width: configuration.width, height: configuration.height, roles: roles)
        self.placements = placements
        let byID = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        inputs = placements.map { byID[$0.id]! }
        rects = placements.map {
            compose_rect(x: Int32($0.rect.x), y: Int32($0.rect.y), width: Int32($0.rect.width), height: Int32($0.rect.height))
        }
        let tileFormats = placements.map {
            VideoFormat(width: $0.rect.width, height: $0.rect.height, colorRange: configuration.colorRange)
        }
        overlays = zip(inputs, tileFormats).map { input, format in input.overlay?.prepared(for: format) }
        cards = zip(inputs, tileFormats).map { input, format in input.placeholderOverlay?.prepared(for: format) }
        let passes = LayoutGeometry.passes(for: placements)
        self.passes = passes
        passCount = max(1, (passes.max() ?? 0) + 1)
        let uncovered = LayoutGeometry.uncovered(by: placements.map(\.rect),
                                                 in: TileRect(x: 0, y: 0, width: configuration.width,
                                                              height: configuration.height))
        let storage = UnsafeMutablePointer<compose_rect>.allocate(capacity: max(1, uncovered.count))
        for (index, r) in uncovered.enumerated() {
            storage[index] = compose_rect(x: Int32(r.x), y: Int32(r.y), width: Int32(r.width), height: Int32(r.height))
        }
        backgroundRects = UnsafeMutableBufferPointer(start: storage, count: uncovered.count)
        backgroundStorage = storage
    }

    private let backgroundStorage: UnsafeMutablePointer<compose_rect>

    deinit { backgroundStorage.deallocate() }

    static func empty(width: Int, height: Int) -> CompositorScene {
        CompositorScene([], layout: .grid, roles: LayoutRoles(order: []),
                        configuration: Compositor.Configuration(width: width, height: height), version: 0)
    }
}

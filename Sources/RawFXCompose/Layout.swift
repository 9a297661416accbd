// FoundationEssentials where there is one: librawfx links this module, and the packages link
// it statically, without Foundation's international part (ICU).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A rectangle of the output picture, in luma pixels. The compositor draws on even
/// coordinates only (I420's chroma is a quarter of the samples), so every layout gives
/// even rectangles and a custom one must.
public struct TileRect: Hashable, Sendable, Codable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var isEmpty: Bool { width <= 0 || height <= 0 }
    public var description: String { "\(width)x\(height) at \(x),\(y)" }

    func intersects(_ other: TileRect) -> Bool {
        x < other.maxX && other.x < maxX && y < other.maxY && other.y < maxY
    }
}

/// How a picture fills its tile (CSS's `object-fit`).
public enum TileFit: String, Sendable, CaseIterable {
    /// The whole picture, scaled to fit; the rest of the tile in the background colour.
    case contain
    /// The tile filled, the picture cropped at its centre.
    case cover
}

/// Where the speaker layout puts the other participants.
public enum FilmstripPosition: String, Sendable, CaseIterable {
    case top, bottom, left, right
}

/// Where the share layout puts the active speaker.
public enum SpeakerPlacement: String, Sendable, CaseIterable {
    /// A column to the right of the share.
    case beside
    /// A small tile over the share's bottom-right corner.
    case inset
    /// Not shown: the share alone.
    case hidden
}

/// One tile of a custom layout.
public struct CustomTile: Hashable, Sendable, Codable {
    /// The input shown here.
    public var id: String
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    /// Higher tiles are drawn over lower ones.
    public var z: Int

    public init(id: String, rect: TileRect, z: Int = 0) {
        self.id = id
        x = rect.x
        y = rect.y
        width = rect.width
        height = rect.height
        self.z = z
    }

    public var rect: TileRect { TileRect(x: x, y: y, width: width, height: height) }

    private enum CodingKeys: String, CodingKey { case id, x, y, width, height, z }

    /// `z` may be left out (0).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        x = try c.decode(Int.self, forKey: .x)
        y = try c.decode(Int.self, forKey: .y)
        width = try c.decode(Int.self, forKey: .width)
        height = try c.decode(Int.self, forKey: .height)
        z = try c.decodeIfPresent(Int.self, forKey: .z) ?? 0
    }
}

/// How the inputs are arranged on the output picture.
public enum CompositorLayout: Hashable, Sendable, CustomStringConvertible {
    /// The gallery: every input (up to 49) in rows × columns chosen for the output's
    /// aspect ratio, in the app's order, the last row centred.
    case grid
    /// The active speaker large, up to `others` other inputs in a filmstrip.
    case speaker(filmstrip: FilmstripPosition = .bottom, others: Int = 4)
    /// The share large, the active speaker beside it, inset or hidden. With no share
    /// input set this is the speaker layout.
    case share(speaker: SpeakerPlacement = .beside)
    /// The active speaker alone (or the share, or the first input).
    case single
    /// Rectangles given by the app, drawn in z order.
    case custom([CustomTile])

    public var description: String {
        switch self {
        case .grid: return "grid"
        case .speaker(let filmstrip, let others): return "speaker (filmstrip \(filmstrip.rawValue), \(others) others)"
        case .share(let speaker): return "share (speaker \(speaker.rawValue))"
        case .single: return "single"
        case .custom(let tiles): return "custom (\(tiles.count) tiles)"
        }
    }

    /// The layout's name as `--layout` takes it.
    public var name: String {
        switch self {
        case .grid: return "grid"
        case .speaker: return "speaker"
        case .share: return "share"
        case .single: return "single"
        case .custom: return "custom"
        }
    }
}

/// Where one input goes.
public struct TilePlacement: Hashable, Sendable {
    public var id: String
    public var rect: TileRect
    public var z: Int
}

/// Who is on screen: the inputs in the app's order, the active speaker and the share.
public struct LayoutRoles: Hashable, Sendable {
    public var order: [String]
    public var speaker: String?
    public var share: String?

    public init(order: [String], speaker: String? = nil, share: String? = nil) {
        self.order = order
        self.speaker = speaker
        self.share = share
    }
}

/// Why a layout cannot be used.
public enum LayoutError: Error, Hashable, CustomStringConvertible {
    case oddOrEmptyRectangle(id: String, rect: TileRect)
    case outsideTheOutput(id: String, rect: TileRect, width: Int, height: Int)
    case duplicateTile(id: String)
    case tooManyTiles(count: Int, maximum: Int)
    case badFilmstripCount(Int)
    case badText(String, reason: String)

    public var description: String {
        switch self {
        case .oddOrEmptyRectangle(let id, let rect):
            return "tile '\(id)' is \(rect): x, y, width and height must be even and the size at least 2x2 (I420)"
        case .outsideTheOutput(let id, let rect, let width, let height):
            return "tile '\(id)' is \(rect), which reaches outside the \(width)x\(height) output"
        case .duplicateTile(let id):
            return "input '\(id)' has two tiles in the custom layout; give each input one rectangle"
        case .tooManyTiles(let count, let maximum):
            return "\(count) tiles; the compositor draws at most \(maximum)"
        case .badFilmstripCount(let count):
            return "a filmstrip of \(count) tiles; expected 0 to 48"
        case .badText(let text, let reason):
            return "layout '\(text)': \(reason)"
        }
    }
}

extension CompositorLayout {
    /// The tiles of this layout on a `width` × `height` output, in drawing order (z, then
    /// the app's order). Pure: the same roles give the same rectangles.
    public func placements(width: Int, height: Int, roles: LayoutRoles) -> [TilePlacement] {
        let order = roles.order
        let present = Set(order)
        let share = roles.share.flatMap { present.contains($0) ? $0 : nil }
        let speaker = roles.speaker.flatMap { present.contains($0) && $0 != share ? $0 : nil }
            ?? order.first { $0 != share }
        let canvas = TileRect(x: 0, y: 0, width: width, height: height)
        switch self {
        case .grid:
            return LayoutGeometry.grid(order, in: canvas)
        case .single:
            guard let shown = speaker ?? share else { return [] }
            return [TilePlacement(id: shown, rect: canvas, z: 0)]
        case .speaker(let filmstrip, let others):
            return LayoutGeometry.speaker(speaker, others: order.filter { $0 != speaker && $0 != share },
                                          count: others, filmstrip: filmstrip, in: canvas)
        case .share(let placement):
            guard let share else {
                return LayoutGeometry.speaker(speaker, others: order.filter { $0 != speaker }, count: 4,
                                              filmstrip: .bottom, in: canvas)
            }
            return LayoutGeometry.share(share, speaker: speaker, placement: placement, in: canvas)
        case .custom(let tiles):
            return tiles.enumerated()
                .filter { present.contains($0.element.id) }
                .sorted { ($0.element.z, $0.offset) < ($1.element.z, $1.offset) }
                .map { TilePlacement(id: $0.element.id, rect: $0.element.rect, z: $0.element.z) }
        }
    }

    /// Checks a layout against an output size: custom rectangles even, inside, one per input.
    public func validate(width: Int, height: Int, maximumTiles: Int = Compositor.maximumInputs) throws(LayoutError) {
        switch self {
        case .speaker(_, let others) where !(0...(maximumTiles - 1)).contains(others):
            throw .badFilmstripCount(others)
        case .custom(let tiles):
            if tiles.count > maximumTiles { throw .tooManyTiles(count: tiles.count, maximum: maximumTiles) }
            var seen = Set<String>()
            for tile in tiles {
                let r = tile.rect
                if r.width < 2 || r.height < 2 || (r.x | r.y | r.width | r.height) & 1 != 0 {
                    throw .oddOrEmptyRectangle(id: tile.id, rect: r)
                }
                if r.x < 0 || r.y < 0 || r.maxX > width || r.maxY > height {
                    throw .outsideTheOutput(id: tile.id, rect: r, width: width, height: height)
                }
                if !seen.insert(tile.id).inserted { throw .duplicateTile(id: tile.id) }
            }
        default:
            break
        }
    }
}

/// The arithmetic of the built-in layouts. Every rectangle is even: cuts are rounded down
/// to even pixels, so neighbouring tiles share an edge and nothing overlaps.
enum LayoutGeometry {
    @inline(__always) static func even(_ value: Int) -> Int { value & ~1 }

    /// Columns for `count` tiles in `area`: the choice that gives each tile the largest
    /// picture of the output's aspect ratio; choices within 3 % of that count as equal, and the
    /// one with the most columns wins (two people side by side, six in 3 × 2).
    static func gridColumns(count: Int, in area: TileRect) -> Int {
        guard count > 1 else { return 1 }
        let aspect = Double(area.width) / Double(area.height)
        func pictureArea(columns: Int) -> Double {
            let rows = (count + columns - 1) / columns
            let cellWidth = Double(area.width / columns), cellHeight = Double(area.height / rows)
            let width = min(cellWidth, cellHeight * aspect)
            return width * width / aspect
        }
        let best = (1...count).map { pictureArea(columns: $0) }.max()!
        return (1...count).last { pictureArea(columns: $0) >= best * 0.97 }!
    }

    /// Rows × columns over `area`, in order, the last row centred.
    static func grid(_ ids: [String], in area: TileRect, z: Int = 0) -> [TilePlacement] {
        guard !ids.isEmpty else { return [] }
        let columns = gridColumns(count: ids.count, in: area)
        let rows = (ids.count + columns - 1) / columns
        let cellWidth = even(area.width / columns)
        var placements: [TilePlacement] = []
        placements.reserveCapacity(ids.count)
        for row in 0..<rows {
            let top = area.y + even(area.height * row / rows)
            let bottom = area.y + (row == rows - 1 ? area.height : even(area.height * (row + 1) / rows))
            let first = row * columns
            let inRow = min(columns, ids.count - first)
            // A full row uses the cuts across the whole width; a short last row is centred
            // with the same cell width.
            let offset = inRow == columns ? 0 : even((area.width - inRow * cellWidth) / 2)
            for column in 0..<inRow {
                let left: Int, right: Int
                if inRow == columns {
                    left = area.x + even(area.width * column / columns)
                    right = area.x + (column == columns - 1 ? area.width : even(area.width * (column + 1) / columns))
                } else {
                    left = area.x + offset + column * cellWidth
                    right = left + cellWidth
                }
                placements.append(TilePlacement(id: ids[first + column],
                                                rect: TileRect(x: left, y: top, width: right - left, height: bottom - top),
                                                z: z))
            }
        }
        return placements
    }

    /// The speaker large; the others in a strip a fifth of the output's height (top,
    /// bottom) or width (left, right), cells of the output's aspect ratio, centred.
    static func speaker(_ speaker: String?, others: [String], count: Int, filmstrip: FilmstripPosition,
                        in area: TileRect) -> [TilePlacement] {
        guard let speaker else { return [] }
        let strip = Array(others.prefix(count))
        guard !strip.isEmpty else { return [TilePlacement(id: speaker, rect: area, z: 0)] }
        var placements: [TilePlacement] = []
        let horizontal = filmstrip == .top || filmstrip == .bottom
        if horizontal {
            let stripHeight = max(2, even(area.height / 5))
            var cellWidth = even(stripHeight * area.width / max(area.height, 1))
            if cellWidth * strip.count > area.width { cellWidth = even(area.width / strip.count) }
            let stripY = filmstrip == .top ? area.y : area.maxY - stripHeight
            let mainY = filmstrip == .top ? area.y + stripHeight : area.y
            placements.append(TilePlacement(id: speaker, rect: TileRect(x: area.x, y: mainY, width: area.width,
                                                                        height: area.height - stripHeight), z: 0))
            let left = area.x + even((area.width - cellWidth * strip.count) / 2)
            for (index, id) in strip.enumerated() {
                placements.append(TilePlacement(id: id, rect: TileRect(x: left + index * cellWidth, y: stripY,
                                                                       width: cellWidth, height: stripHeight), z: 0))
            }
        } else {
            let stripWidth = max(2, even(area.width / 5))
            var cellHeight = even(stripWidth * area.height / max(area.width, 1))
            if cellHeight * strip.count > area.height { cellHeight = even(area.height / strip.count) }
            let stripX = filmstrip == .left ? area.x : area.maxX - stripWidth
            let mainX = filmstrip == .left ? area.x + stripWidth : area.x
            placements.append(TilePlacement(id: speaker, rect: TileRect(x: mainX, y: area.y,
                                                                        width: area.width - stripWidth,
                                                                        height: area.height), z: 0))
            let top = area.y + even((area.height - cellHeight * strip.count) / 2)
            for (index, id) in strip.enumerated() {
                placements.append(TilePlacement(id: id, rect: TileRect(x: stripX, y: top + index * cellHeight,
                                                                       width: stripWidth, height: cellHeight), z: 0))
            }
        }
        return placements
    }

    /// The share large; the speaker in a column a quarter of the width beside it (a
    /// picture of the output's aspect, centred), as an inset a fifth of the width over the
    /// bottom-right corner, or not at all.
    static func share(_ share: String, speaker: String?, placement: SpeakerPlacement, in area: TileRect) -> [TilePlacement] {
        guard let speaker, placement != .hidden else { return [TilePlacement(id: share, rect: area, z: 0)] }
        switch placement {
        case .beside:
            let column = even(area.width / 4)
            let height = min(area.height, max(2, even(column * area.height / max(area.width, 1))))
            return [
                TilePlacement(id: share, rect: TileRect(x: area.x, y: area.y, width: area.width - column,
                                                        height: area.height), z: 0),
                TilePlacement(id: speaker, rect: TileRect(x: area.maxX - column, y: area.y + even((area.height - height) / 2),
                                                          width: column, height: height), z: 0),
            ]
        default:
            let width = max(2, even(area.width / 5))
            let height = max(2, even(width * area.height / max(area.width, 1)))
            let margin = even(area.width / 60)
            return [
                TilePlacement(id: share, rect: area, z: 0),
                TilePlacement(id: speaker, rect: TileRect(x: area.maxX - width - margin, y: area.maxY - height - margin,
                                                          width: width, height: height), z: 1),
            ]
        }
    }

    /// The output minus the tiles: the rectangles the background shows through, cut at
    /// every tile edge into horizontal bands (at most (2n + 1) × (n + 1) pieces).
    static func uncovered(by rects: [TileRect], in area: TileRect) -> [TileRect] {
        guard !rects.isEmpty else { return [area] }
        var edges = Set([area.y, area.maxY])
        for r in rects {
            edges.insert(max(area.y, min(area.maxY, r.y)))
            edges.insert(max(area.y, min(area.maxY, r.maxY)))
        }
        let ys = edges.sorted()
        var pieces: [TileRect] = []
        for (top, bottom) in zip(ys, ys.dropFirst()) where bottom > top {
            // The tiles across this band, as x intervals, merged.
            let spans = rects.filter { $0.y < bottom && $0.maxY > top }.map { ($0.x, $0.maxX) }.sorted { $0.0 < $1.0 }
            var cursor = area.x
            for (left, right) in spans {
                if left > cursor { pieces.append(TileRect(x: cursor, y: top, width: left - cursor, height: bottom - top)) }
                cursor = max(cursor, right)
            }
            if cursor < area.maxX {
                pieces.append(TileRect(x: cursor, y: top, width: area.maxX - cursor, height: bottom - top))
            }
        }
        return pieces
    }

    /// Passes so that no two tiles of one pass overlap: a tile is drawn in the pass after
    /// the last one holding a lower tile it covers. A layout with no overlap is one pass.
    static func passes(for placements: [TilePlacement]) -> [Int] {
        var pass = [Int](repeating: 0, count: placements.count)
        for i in placements.indices {
            for j in 0..<i where placements[j].rect.intersects(placements[i].rect) {
                pass[i] = max(pass[i], pass[j] + 1)
            }
        }
        return pass
    }
}

extension CompositorLayout {
    /// A layout from its text form, as the C API, Python and `rawfx compose --switch` take it:
    /// `grid`, `single`, `speaker` or `speaker:filmstrip=left:others=3`, `share` or
    /// `share:speaker=inset`, or a custom layout as a JSON array of
    /// `{"id", "x", "y", "width", "height", "z"}` (optionally after `custom:`).
    public init(parsing text: String) throws(LayoutError) {
        let trimmed = String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        let json = trimmed.hasPrefix("custom:") ? String(trimmed.dropFirst(7)) : trimmed
        if json.hasPrefix("[") {
            do {
                self = .custom(try JSONDecoder().decode([CustomTile].self, from: Data(json.utf8)))
            } catch {
                throw .badText(text, reason: "a custom layout is a JSON array of {\"id\", \"x\", \"y\", \"width\", \"height\", \"z\"} (\(error))")
            }
            return
        }
        let parts = trimmed.split(separator: ":").map(String.init)
        var options: [String: String] = [:]
        for part in parts.dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw .badText(text, reason: "option '\(part)' is not key=value") }
            options[pair[0]] = pair[1]
        }
        func unknown(_ allowed: [String]) throws(LayoutError) {
            if let key = options.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw .badText(text, reason: "'\(parts.first ?? "")' takes \(allowed.isEmpty ? "no options" : allowed.joined(separator: ", ")), not '\(key)'")
            }
        }
        switch parts.first ?? "" {
        case "grid":
            try unknown([])
            self = .grid
        case "single":
            try unknown([])
            self = .single
        case "speaker":
            try unknown(["filmstrip", "others"])
            guard let side = FilmstripPosition(rawValue: options["filmstrip"] ?? "bottom") else {
                throw .badText(text, reason: "filmstrip is top, bottom, left or right")
            }
            guard let others = Int(options["others"] ?? "4") else { throw .badText(text, reason: "others is a count of tiles") }
            self = .speaker(filmstrip: side, others: others)
        case "share":
            try unknown(["speaker"])
            guard let placement = SpeakerPlacement(rawValue: options["speaker"] ?? "beside") else {
                throw .badText(text, reason: "speaker is beside, inset or hidden")
            }
            self = .share(speaker: placement)
        default:
            throw .badText(text, reason: "expected grid, speaker, share, single or a custom layout's JSON array")
        }
    }
}

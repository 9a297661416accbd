import RawFXRuntime

/// One filter in a chain's text: `name=key=value:key=value` or `name=value:value` (positional,
/// in the order the filter declares its parameters), FFmpeg's `-vf` syntax.
///
/// A stage option follows the name after `@`: `watermark@isolate=image=logo.png` runs the filter
/// in a helper process (docs/isolation.md), `@isolate(deadline=40ms)` with its own per-frame
/// deadline, `@isolate(group=fx)` on consecutive stages runs them in one helper. `@` cannot
/// occur in a filter name, so an option never clashes with a parameter.
///
/// Chains separate filters with `,`. Inside a value, `\` escapes the next character and
/// `'…'` quotes a run (so a path may hold `:` or `,`): `watermark=image='/tmp/a,b.png'`.
public struct FilterSpec: Hashable, Sendable, CustomStringConvertible {
    public struct Argument: Hashable, Sendable {
        /// nil for a positional value.
        public var key: String?
        public var value: String
        public init(key: String?, value: String) { self.key = key; self.value = value }
    }

    public var name: String
    public var arguments: [Argument]
    /// Set by `@isolate`: the stage runs in a helper process.
    public var isolation: StageIsolation?

    public init(name: String, arguments: [Argument] = [], isolation: StageIsolation? = nil) {
        self.name = name
        self.arguments = arguments
        self.isolation = isolation
    }

    public init(_ name: String, _ keyed: [(String, String)]) {
        self.init(name: name, arguments: keyed.map { Argument(key: $0.0, value: $0.1) })
    }

    public var description: String {
        let head = name + (isolation.map { "@" + $0.description } ?? "")
        guard !arguments.isEmpty else { return head }
        return head + "=" + arguments.map { ($0.key.map { $0 + "=" } ?? "") + FilterSpec.quote($0.value) }.joined(separator: ":")
    }

    /// The value as the parser reads it back: quoted when it holds a separator, a quote or a
    /// backslash, or starts or ends with a blank (the parser trims unquoted blanks). Both found
    /// by fuzzing: `a=x'y'\n` was printed `a=xy\n` (read back `xy`), a `\\` lost its escape.
    static func quote(_ value: String) -> String {
        let scalars = value.unicodeScalars
        let needsQuotes = scalars.contains(where: { ":,'\\=".unicodeScalars.contains($0) })
            || scalars.first.map(isBlank) == true || scalars.last.map(isBlank) == true
        guard needsQuotes else { return value }
        // Inside quotes `\` still escapes the next character: both it and `'` need one.
        var out = String.UnicodeScalarView()
        out.append("'")
        for c in scalars {
            if c == "'" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        out.append("'")
        return String(out)
    }

    /// Parses a whole chain: `a=x=1:y=2,b,c=3`. An empty or blank text is an empty chain.
    public static func parseChain(_ text: String) throws(ChainError) -> [FilterSpec] {
        var parser = ChainParser(text: text)
        let specs = try parser.parse()
        try checkIsolationGroups(specs)
        return specs
    }

    /// The isolation groups of a chain (`@isolate(group=NAME)`), as stage ranges in order.
    /// Throws unless each group's stages are consecutive, agree on their options and number
    /// at most `StageIsolation.groupLimit`.
    @discardableResult
    public static func checkIsolationGroups(_ specs: [FilterSpec]) throws(ChainError) -> [Range<Int>] {
        var groups: [Range<Int>] = []
        var index = 0
        while index < specs.count {
            guard let name = specs[index].isolation?.group else { index += 1; continue }
            let start = index
            while index < specs.count, specs[index].isolation?.group == name {
                guard specs[index].isolation == specs[start].isolation else {
                    throw .contract("'\(specs[index].name)' (stage \(index)) has @\(specs[index].isolation!) but '\(specs[start].name)' (stage \(start)), the first stage of isolation group '\(name)', has @\(specs[start].isolation!): expected the same options on every stage of a group")
                }
                index += 1
            }
            if let earlier = groups.first(where: { specs[$0.lowerBound].isolation?.group == name }) {
                throw .contract("'\(specs[start].name)' (stage \(start)) is in isolation group '\(name)', whose stages \(earlier.lowerBound)...\(earlier.upperBound - 1) end before '\(specs[earlier.upperBound].name)' (stage \(earlier.upperBound)): expected the stages of a group to be consecutive")
            }
            guard index - start <= StageIsolation.groupLimit else {
                throw .contract("isolation group '\(name)' has \(index - start) stages: expected at most \(StageIsolation.groupLimit)")
            }
            groups.append(start..<index)
        }
        return groups
    }

    /// The chain text of a list of specs (inverse of `parseChain`).
    public static func chainText(_ specs: [FilterSpec]) -> String {
        specs.map(\.description).joined(separator: ",")
    }
}

/// A small hand-written scanner: tokens are separated by `,` (filters), `=` and `:` (arguments).
/// It reads Unicode scalars, not Characters: a combining mark after a separator would make one
/// Character of both and hide the separator (found by fuzzing: `rot=\u{35C}720`).
private struct ChainParser {
    let text: String
    let chars: [Unicode.Scalar]
    var i = 0

    init(text: String) {
        self.text = text
        chars = Array(text.unicodeScalars)
    }

    func error(_ reason: String) -> ChainError { .syntax(chain: text, offset: i, reason: reason) }

    /// Reads a run up to one of `stops`, honouring `\` and `'…'`; trims unquoted blanks at the ends.
    mutating func token(stops: Set<Unicode.Scalar>) throws(ChainError) -> (String, quoted: Bool) {
        var out = String.UnicodeScalarView()
        var quoted = false
        while i < chars.count, !stops.contains(chars[i]) {
            let c = chars[i]
            if c == "\\" {
                i += 1
                guard i < chars.count else { throw error("a backslash ends the text") }
                out.append(chars[i])
                i += 1
            } else if c == "'" {
                quoted = true
                i += 1
                while i < chars.count, chars[i] != "'" {
                    if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                    out.append(chars[i])
                    i += 1
                }
                guard i < chars.count else { throw error("a quote is not closed") }
                i += 1
            } else {
                out.append(c)
                i += 1
            }
        }
        return (quoted ? String(out) : String(out).trimmingBlanks(), quoted)
    }

    mutating func parse() throws(ChainError) -> [FilterSpec] {
        var specs: [FilterSpec] = []
        if chars.allSatisfy(isBlank) { return [] }
        while true {
            let (name, _) = try token(stops: ["=", ",", ":", "@"])
            guard !name.isEmpty else { throw error("a filter name is missing") }
            guard FilterType.isValidIdentifier(name) else { throw error("'\(name)' is not a filter name (\(FilterType.identifierRule))") }
            var spec = FilterSpec(name: name)
            while i < chars.count, chars[i] == "@" {
                i += 1
                guard spec.isolation == nil else { throw error("filter '\(name)' has '@isolate' twice") }
                spec.isolation = try stageOption(filter: name)
            }
            if i < chars.count, chars[i] == ":" { throw error("':' after a filter name; write name=key=value:key=value") }
            if i < chars.count, chars[i] == "=" {
                i += 1
                while true {
                    let (first, firstQuoted) = try token(stops: ["=", ":", ","])
                    if i < chars.count, chars[i] == "=" {
                        guard !firstQuoted, FilterType.isValidIdentifier(first) else {
                            throw error("'\(first)' is not a parameter name")
                        }
                        i += 1
                        let (value, _) = try token(stops: [":", ","])
                        if i < chars.count, chars[i] == "=" { throw error("'=' inside a value; quote it") }
                        // The last one would win silently: a typo in a long chain would go unseen.
                        if spec.arguments.contains(where: { $0.key == first }) {
                            throw error("parameter '\(first)' is given twice in filter '\(name)'")
                        }
                        spec.arguments.append(.init(key: first, value: value))
                    } else {
                        guard !first.isEmpty || firstQuoted else { throw error("an empty argument") }
                        spec.arguments.append(.init(key: nil, value: first))
                    }
                    if i < chars.count, chars[i] == ":" { i += 1; continue }
                    break
                }
            }
            specs.append(spec)
            if i >= chars.count { break }
            guard chars[i] == "," else { throw error("expected ',' between filters") }
            i += 1
        }
        return specs
    }
}

extension ChainParser {
    /// `isolate`, or `isolate(OPTIONS)` with options `group=NAME`, `deadline=40ms`,
    /// `seccomp=strict` and `pipeline` separated by `,`, after a `@` (docs/isolation.md).
    mutating func stageOption(filter: String) throws(ChainError) -> StageIsolation {
        var word = String.UnicodeScalarView()
        while i < chars.count, !"=,:@(".unicodeScalars.contains(chars[i]) { word.append(chars[i]); i += 1 }
        guard String(word) == "isolate" else {
            throw error("'@\(String(word))' after filter '\(filter)' is not a stage option; expected '@isolate' or '@isolate(group=NAME,deadline=40ms,seccomp=strict)'")
        }
        guard i < chars.count, chars[i] == "(" else { return StageIsolation() }
        i += 1
        var inside = String.UnicodeScalarView()
        while i < chars.count, chars[i] != ")" { inside.append(chars[i]); i += 1 }
        guard i < chars.count else { throw error("'@isolate(' is not closed with ')'") }
        i += 1
        var isolation = StageIsolation()
        var seen: Set<String> = []
        for option in String(inside).split(separator: ",", omittingEmptySubsequences: false).map({ String($0).trimmingBlanks() }) {
            let key = String(option.prefix(while: { $0 != "=" }))
            let value = option.dropFirst(key.count + 1)
            guard seen.insert(key).inserted else { throw error("'@isolate(\(String(inside)))': '\(key)' is given twice") }
            switch key {
            case "group":
                guard FilterType.isValidIdentifier(String(value)) else {
                    throw error("'@isolate(\(String(inside)))': expected group=NAME with NAME of \(FilterType.identifierRule), e.g. group=fx, not group=\(value)")
                }
                isolation.group = String(value)
            case "deadline":
                guard let microseconds = StageIsolation.parseDuration(String(value)) else {
                    throw error("'@isolate(\(String(inside)))': expected deadline=N with N in ms or us, e.g. deadline=40ms")
                }
                isolation.deadlineMicroseconds = microseconds
            case "seccomp":
                guard let mode = StageIsolation.Seccomp(rawValue: String(value)) else {
                    throw error("'@isolate(\(String(inside)))': expected seccomp=strict or seccomp=off, not seccomp=\(value)")
                }
                isolation.seccomp = mode
            case "pipeline":
                guard option == "pipeline" else {
                    throw error("'@isolate(\(String(inside)))': pipeline takes no value; write @isolate(pipeline)")
                }
                isolation.pipeline = true
            default:
                throw error("'@isolate(\(String(inside)))': '\(option)' is not an isolation option; expected group=NAME, deadline=N (ms or us), seccomp=strict|off or pipeline")
            }
        }
        return isolation
    }
}

/// How an isolated stage runs (`@isolate`): in a helper process, with a per-frame deadline
/// (nil: half a video frame, one audio block) and optionally under a seccomp filter; see
/// docs/isolation.md.
public struct StageIsolation: Hashable, Sendable, CustomStringConvertible {
    /// The system calls the helper may make (`seccomp=`).
    public enum Seccomp: String, Hashable, Sendable {
        /// Only no-new-privileges: any system call.
        case off
        /// An allow-list (memory, threads, futex, clocks, files, signals to itself): anything
        /// else, such as exec, fork, sockets or ptrace, kills the helper (a fault).
        case strict
    }

    public var deadlineMicroseconds: Int?
    public var seccomp: Seccomp
    /// The isolation group (`group=NAME`): consecutive stages of one group run in one helper,
    /// the frame crossing into its shared memory once for all of them. Nil: a helper of its own.
    public var group: String?
    /// Audio (`pipeline`): each block goes to the helper while the previous block's answer
    /// comes back, so the processing thread does not wait for the helper; the stage's latency
    /// grows by one block (10 ms unless the filter asks for another).
    public var pipeline: Bool
    /// The most stages one group holds (`RFX_ISO_GROUP_MAX`).
    public static let groupLimit = Int(RFX_ISO_GROUP_MAX)

    public init(deadlineMicroseconds: Int? = nil, seccomp: Seccomp = .off, group: String? = nil, pipeline: Bool = false) {
        self.deadlineMicroseconds = deadlineMicroseconds
        self.seccomp = seccomp
        self.group = group
        self.pipeline = pipeline
    }

    public var description: String {
        var options: [String] = []
        if let group { options.append("group=" + group) }
        if let us = deadlineMicroseconds { options.append("deadline=" + (us % 1000 == 0 ? "\(us / 1000)ms" : "\(us)us")) }
        if seccomp != .off { options.append("seccomp=\(seccomp.rawValue)") }
        if pipeline { options.append("pipeline") }
        return options.isEmpty ? "isolate" : "isolate(" + options.joined(separator: ",") + ")"
    }

    /// `40ms` or `2500us` (a whole, positive number) in microseconds, or nil.
    static func parseDuration(_ text: String) -> Int? {
        let (digits, scale) = text.hasSuffix("ms") ? (text.dropLast(2), 1000) : text.hasSuffix("us") ? (text.dropLast(2), 1) : (Substring(""), 0)
        guard scale > 0, let n = Int(digits), n > 0, n <= 60_000_000 / scale else { return nil }
        return n * scale
    }
}

/// The blanks the parser trims around unquoted tokens.
func isBlank(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" || c == "\n" }

extension String {
    func trimmingBlanks() -> String {
        var s = Substring(self).unicodeScalars[...]
        while let f = s.first, isBlank(f) { s = s.dropFirst() }
        while let l = s.last, isBlank(l) { s = s.dropLast() }
        return String(String.UnicodeScalarView(s))
    }
}

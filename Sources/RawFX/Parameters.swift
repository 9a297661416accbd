/// The type of a filter parameter (`rawfx_param_type`).
public enum ParameterType: Hashable, Sendable, CustomStringConvertible {
    case int
    case float
    case bool
    case enumeration([String])
    case string

    public var description: String {
        switch self {
        case .int: return "int"
        case .float: return "float"
        case .bool: return "bool"
        case .enumeration: return "enum"
        case .string: return "string"
        }
    }
}

/// A parameter value, already validated against its descriptor.
public enum ParameterValue: Hashable, Sendable, CustomStringConvertible {
    case int(Int64)
    case float(Double)
    case bool(Bool)
    case enumeration(index: Int, name: String)
    case string(String)

    public var description: String {
        switch self {
        case .int(let v): return String(v)
        case .float(let v): return String(v)
        case .bool(let v): return v ? "true" : "false"
        case .enumeration(_, let name): return name
        case .string(let s): return s
        }
    }

    /// Calls `body` with the C form (`rawfx_param_value`), alive for the call.
    func withCValue<R>(_ body: (UnsafePointer<rawfx_param_value>) -> R) -> R {
        let value = CParameterValue(self)
        return withExtendedLifetime(value) { body(value.pointer) }
    }
}

/// Describes one parameter of a filter (`rawfx_param_descriptor`), so a host lists and
/// validates values without creating an instance.
public struct ParameterDescriptor: Hashable, Sendable {
    public var id: String
    public var name: String
    public var help: String
    public var unit: String
    public var type: ParameterType
    /// The value an instance starts with; nil for a string without a default.
    public var defaultValue: ParameterValue?
    /// The inclusive range of an int or float parameter.
    public var range: ClosedRange<Double>?
    public var isPath: Bool
    public var isRequired: Bool
    /// A change needs a new negotiation (RAWFX_PARAM_FLAG_RECONFIGURE).
    public var needsReconfigure: Bool

    /// What values are allowed, for help text and error messages.
    public var allowed: String {
        switch type {
        case .int:
            guard let r = range else { return "an integer" }
            return "an integer from \(Int64(r.lowerBound)) to \(Int64(r.upperBound))" + (unit.isEmpty ? "" : " \(unit)")
        case .float:
            guard let r = range else { return "a number" }
            return "a number from \(r.lowerBound.shortDescription) to \(r.upperBound.shortDescription)" + (unit.isEmpty ? "" : " \(unit)")
        case .bool:
            return "true or false"
        case .enumeration(let names):
            return "one of \(names.joined(separator: ", "))"
        case .string:
            return isPath ? "a file path" : "text"
        }
    }

    /// Parses the text form used in chains (`opacity=0.8`). `filter` names the filter in errors.
    public func parse(_ text: String, filter: String) throws(ChainError) -> ParameterValue {
        // Built only on a refusal: `allowed` formats the range (a run-time change parses on
        // every call, and most values are fine).
        var invalid: ChainError { .invalidValue(filter: filter, parameter: id, value: text, expected: allowed) }
        // Numbers are plain decimals (`DecimalNumber`): the refusal of a number in another
        // spelling (`0x10`, `1e3`, `inf`) says which one is accepted; `abc` needs no lesson.
        var badSpelling: ChainError {
            guard DecimalNumber.looksLikeANumber(text) else { return invalid }
            return .invalidValue(filter: filter, parameter: id, value: text, expected: allowed + " " + DecimalNumber.rule(integer: type == .int))
        }
        switch type {
        case .int:
            guard DecimalNumber.isValid(text, integer: true) else { throw badSpelling }
            guard let v = Int64(text) else { throw invalid }
            if let r = range, !r.contains(Double(v)) { throw invalid }
            return .int(v)
        case .float:
            guard DecimalNumber.isValid(text, integer: false) else { throw badSpelling }
            guard let v = Double(text), v.isFinite else { throw invalid }
            if let r = range, !r.contains(v) { throw invalid }
            return .float(v)
        case .bool:
            switch text.lowercased() {
            case "1", "true", "yes", "on": return .bool(true)
            case "0", "false", "no", "off": return .bool(false)
            default: throw invalid
            }
        case .enumeration(let names):
            guard let i = names.firstIndex(of: text) else { throw invalid }
            return .enumeration(index: i, name: text)
        case .string:
            return .string(text)
        }
    }
}

/// The one spelling of numbers in chains: an optional `-`, digits, and for a float an optional
/// `.` followed by digits (`12`, `-30`, `0.5`). Refused: `+5`, `.5`, `5.`, `1e3`, `0x10`, `inf`,
/// `nan`, `1_000` and blanks, which Swift's and C's parsers would each read their own way.
enum DecimalNumber {
    static func isValid(_ text: String, integer: Bool) -> Bool {
        var bytes = Substring(text).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        let whole = bytes.prefix(while: isDigit)
        guard !whole.isEmpty else { return false }
        let rest = bytes.dropFirst(whole.count)
        if rest.isEmpty { return true }
        guard !integer, rest.first == UInt8(ascii: "."), rest.count > 1 else { return false }
        return rest.dropFirst().allSatisfy(isDigit)
    }

    /// Holds an ASCII digit, or is a number to Swift (`inf`, `nan`).
    static func looksLikeANumber(_ text: String) -> Bool {
        text.utf8.contains { $0 >= 0x30 && $0 <= 0x39 } || Double(text) != nil
    }

    static func rule(integer: Bool) -> String {
        integer ? "written in decimal digits with an optional leading '-' (such as 12 or -3; no '+', spaces, exponent or 0x)"
                : "written in decimal with an optional leading '-' and a '.' between digits (such as 12, -3 or 0.5; no '+', spaces, exponent, 0x, inf or nan)"
    }
}

extension Double {
    /// 0.5 rather than 0.5000000, 30 rather than 30.0.
    var shortDescription: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}

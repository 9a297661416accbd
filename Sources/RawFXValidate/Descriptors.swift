import RawFX

/// The end of a member: a struct is read only as far as its `struct_size` covers a member.
func fieldEnd<T>(_ path: PartialKeyPath<T>, _ size: Int) -> Int {
    MemoryLayout<T>.offset(of: path)! + size
}

/// A value to hand to `set_param` (`rawfx_param_value`), with how to say it.
struct TrialValue: CustomStringConvertible {
    var type: rawfx_param_type
    var integer: Int64 = 0
    var real: Double = 0
    var text: String?
    /// "max (16384)", "true", "bilinear".
    var label: String

    var description: String { label }

    /// Calls `body` with the C value; a string lives only for the call, as in the engine.
    func withC<R>(_ body: (UnsafePointer<rawfx_param_value>) -> R) -> R {
        var c = rawfx_param_value()
        c.struct_size = UInt32(MemoryLayout<rawfx_param_value>.size)
        c.type = type
        c.int_value = integer
        c.float_value = real
        guard let text else { return withUnsafePointer(to: &c, body) }
        return text.withCString { p in
            c.string_value = p
            return withUnsafePointer(to: &c, body)
        }
    }
}

/// A parameter as its descriptor declares it.
struct ParameterInfo {
    let index: Int
    let id: String
    let type: rawfx_param_type
    let flags: UInt32
    let defaultValue: Double
    let range: ClosedRange<Double>?
    let defaultString: String?
    let enumValues: [String]

    var needsReconfigure: Bool { flags & UInt32(RAWFX_PARAM_FLAG_RECONFIGURE) != 0 }
    /// REQUIRED and without a default: an instance cannot configure until it is set.
    var needsValue: Bool {
        flags & UInt32(RAWFX_PARAM_FLAG_REQUIRED) != 0 && type == rawfx_param_type(RAWFX_PARAM_STRING) && defaultString == nil
    }

    /// The values the parameter-extremes check tries: both ends of a range, both booleans,
    /// every enum value. Strings have no extremes.
    var extremes: [TrialValue] {
        switch Int(type) {
        case RAWFX_PARAM_INT:
            guard let range else { return [] }
            return [(range.lowerBound, "min"), (range.upperBound, "max")].map {
                TrialValue(type: type, integer: Int64($0.0), label: "\($0.1) (\(Int64($0.0)))")
            }
        case RAWFX_PARAM_FLOAT:
            guard let range else { return [] }
            return [(range.lowerBound, "min"), (range.upperBound, "max")].map {
                TrialValue(type: type, real: $0.0, label: "\($0.1) (\($0.0))")
            }
        case RAWFX_PARAM_BOOL:
            return [TrialValue(type: type, integer: 0, label: "false"), TrialValue(type: type, integer: 1, label: "true")]
        case RAWFX_PARAM_ENUM:
            return enumValues.enumerated().map { TrialValue(type: type, integer: Int64($0.offset), label: $0.element) }
        default:
            return []
        }
    }

    /// The default as a value: nil for a string without one, and for a number no 64-bit
    /// integer holds (NaN, 1e300: the descriptors check reports it).
    var defaultTrial: TrialValue? {
        switch Int(type) {
        case RAWFX_PARAM_FLOAT: return TrialValue(type: type, real: defaultValue, label: "default (\(defaultValue))")
        case RAWFX_PARAM_STRING: return defaultString.map { TrialValue(type: type, text: $0, label: "default ('\($0)')") }
        default:
            guard let integer = Int64(exactly: defaultValue.rounded(.towardZero)) else { return nil }
            return TrialValue(type: type, integer: integer, label: "default (\(integer))")
        }
    }

    /// A `--set` value, checked as the host checks chain values (type, range, enum name).
    func parse(_ text: String, filter: String) throws(ValidatorError) -> TrialValue {
        func bad(_ expected: String) -> ValidatorError {
            ValidatorError("--set \(filter).\(id)=\(text): expected \(expected)")
        }
        switch Int(type) {
        case RAWFX_PARAM_INT:
            guard let v = Int64(text), range.map({ $0.contains(Double(v)) }) ?? true else {
                throw bad("an integer" + (range.map { " from \(Int64($0.lowerBound)) to \(Int64($0.upperBound))" } ?? ""))
            }
            return TrialValue(type: type, integer: v, label: text)
        case RAWFX_PARAM_FLOAT:
            guard let v = Double(text), v.isFinite, range.map({ $0.contains(v) }) ?? true else {
                throw bad("a number" + (range.map { " from \($0.lowerBound) to \($0.upperBound)" } ?? ""))
            }
            return TrialValue(type: type, real: v, label: text)
        case RAWFX_PARAM_BOOL:
            let truth = ["1": 1, "true": 1, "yes": 1, "on": 1, "0": 0, "false": 0, "no": 0, "off": 0]
            guard let v = truth[text.lowercased()] else { throw bad("true or false") }
            return TrialValue(type: type, integer: Int64(v), label: text)
        case RAWFX_PARAM_ENUM:
            guard let i = enumValues.firstIndex(of: text) else { throw bad("one of \(enumValues.joined(separator: ", "))") }
            return TrialValue(type: type, integer: Int64(i), label: text)
        default:
            return TrialValue(type: type, text: text, label: "'\(text)'")
        }
    }
}

typealias CreateFunction = @convention(c) (UnsafePointer<rawfx_filter_descriptor>?, UnsafeMutablePointer<CChar>?, Int)
    -> UnsafePointer<rawfx_filter>?
typealias CreateWithHostFunction = @convention(c) (UnsafePointer<rawfx_filter_descriptor>?, UnsafePointer<rawfx_host>?,
                                                   UnsafeMutablePointer<CChar>?, Int) -> UnsafePointer<rawfx_filter>?

/// One filter descriptor as the validator read it: what instances need, and every rule of
/// rawfx.h it breaks (the `descriptors` check).
struct FilterDescription {
    let index: Int
    let descriptor: UnsafePointer<rawfx_filter_descriptor>
    /// The id, or "filter#<index>" when it has none.
    let id: String
    let kind: MediaKind?
    let processing: Processing?
    let parameters: [ParameterInfo]
    let create: CreateFunction?
    /// Only for a plugin that declares ABI 1.1 or later and whose struct_size covers it.
    let createWithHost: CreateWithHostFunction?
    /// The ABI minor the plugin declared (its structs are read as far as it defines them).
    let pluginMinor: UInt32
    let problems: [String]
    /// Why no instance can be made at all (no kind, no create function…), or nil.
    let unusable: String?

    init(index: Int, descriptor: UnsafePointer<rawfx_filter_descriptor>, pluginMinor: UInt32) {
        self.index = index
        self.descriptor = descriptor
        self.pluginMinor = pluginMinor
        var d = PluginStruct.read(descriptor, zero: rawfx_filter_descriptor(),
                                 sizeForMinor: PluginStruct.filterDescriptorSize(minor: pluginMinor))
        var problems: [String] = []
        var unusable: String?
        let size = Int(d.struct_size)
        if size < PluginStruct.filterDescriptor10 {
            problems.append("struct_size \(size) is smaller than the 1.0 size \(PluginStruct.filterDescriptor10) (RAWFX_SIZE_1_0_FILTER_DESCRIPTOR)")
            // Read as far as struct_size, a pointer field may be cut in two: nothing past the
            // size field is read (the engine's loader refuses such a descriptor outright).
            d = rawfx_filter_descriptor()
            d.struct_size = UInt32(size)
        }
        let id = boundedString(d.id, field: "id", problems: &problems)
        self.id = id ?? "filter#\(index)"
        if let id {
            if !FilterType.isValidIdentifier(id) {
                problems.append("id '\(id)' does not follow RAWFX_ID_RULE \(FilterType.identifierRule)")
            }
        } else {
            problems.append("no id")
        }
        for (field, value) in [("name", d.name), ("version", d.version), ("description", d.description)]
        where boundedString(value, field: field, problems: &problems)?.isEmpty ?? true {
            problems.append("\(field) is missing or empty")
        }
        kind = MediaKind(rawValue: d.media_kind)
        if kind == nil {
            problems.append("media_kind \(d.media_kind) is neither RAWFX_MEDIA_VIDEO (1) nor RAWFX_MEDIA_AUDIO (2)")
            unusable = "its media_kind is unknown"
        }
        processing = Processing(rawValue: d.processing)
        if processing == nil {
            problems.append("processing \(d.processing) is neither in place (1) nor out of place (2)")
            unusable = "its processing mode is unknown"
        }
        create = d.create
        // Zero unless the plugin declared 1.1 and its struct_size covers the field.
        createWithHost = d.create_with_host
        if create == nil && createWithHost == nil {
            problems.append(pluginMinor >= 1 ? "neither create nor create_with_host is set" : "create is NULL")
            unusable = "it has no create function"
        }
        var parameters: [ParameterInfo] = []
        // The array's stride is the plugin's own struct_size (a later minor may grow it).
        let stride = d.param_count > 0 && d.params != nil ? Int(d.params.pointee.struct_size) : 0
        if d.param_count > maxDescriptorCount {
            problems.append("param_count is \(d.param_count), over the \(maxDescriptorCount) any host walks: no parameter read")
            unusable = "its param_count is implausible"
        } else if d.param_count > 0 && d.params == nil {
            problems.append("param_count is \(d.param_count) but params is NULL")
            unusable = "its parameter array is missing"
        } else if d.param_count > 0 && stride < PluginStruct.paramDescriptor10 {
            problems.append("the first parameter descriptor has struct_size \(stride), less than \(PluginStruct.paramDescriptor10)")
            unusable = "its parameter array cannot be walked"
        } else if d.param_count > 0 && stride % PluginStruct.paramDescriptorAlignment != 0 {
            problems.append("the first parameter descriptor has struct_size \(stride), not a multiple of \(PluginStruct.paramDescriptorAlignment) (a C array's stride is)")
            unusable = "its parameter array cannot be walked"
        } else {
            var seen = Set<String>()
            for i in 0..<Int(d.param_count) {
                let element = (UnsafeRawPointer(d.params!) + i * stride).assumingMemoryBound(to: rawfx_param_descriptor.self)
                let p = PluginStruct.read(element, zero: rawfx_param_descriptor(), sizeForMinor: PluginStruct.paramDescriptor10)
                let (info, found) = FilterDescription.readParameter(p, index: i)
                problems += found
                if !seen.insert(info.id).inserted { problems.append("parameter id '\(info.id)' appears twice") }
                parameters.append(info)
            }
        }
        self.parameters = parameters
        self.problems = problems
        self.unusable = unusable
    }

    private static func readParameter(_ read: rawfx_param_descriptor, index: Int) -> (ParameterInfo, [String]) {
        var p = read
        if Int(p.struct_size) < PluginStruct.paramDescriptor10 {
            // As for a short filter descriptor: a field past struct_size may be half read.
            p = rawfx_param_descriptor()
            p.struct_size = read.struct_size
        }
        var problems: [String] = []
        var strings: [String] = []  // a string's problem, named after the id is known
        let id = boundedString(p.id, field: "id", problems: &strings) ?? "parameter#\(index)"
        func problem(_ text: String) { problems.append("parameter '\(id)': \(text)") }
        if Int(p.struct_size) < PluginStruct.paramDescriptor10 {
            problem("struct_size \(p.struct_size) is smaller than \(PluginStruct.paramDescriptor10)")
        }
        if p.id == nil {
            problem("no id")
        } else if !FilterType.isValidIdentifier(id) {
            problem("id does not follow RAWFX_ID_RULE \(FilterType.identifierRule)")
        }
        for (field, value) in [("name", p.name), ("help", p.help)] where boundedString(value, field: field, problems: &strings)?.isEmpty ?? true {
            problem("\(field) is missing or empty")
        }
        var range: ClosedRange<Double>?
        var enumValues: [String] = []
        switch Int(p.type) {
        case RAWFX_PARAM_INT, RAWFX_PARAM_FLOAT:
            let numbers = [("min_value", p.min_value), ("max_value", p.max_value), ("default_value", p.default_value)]
            if let bad = numbers.first(where: { !$0.1.isFinite }) {
                problem("\(bad.0) is \(bad.1), not a finite number")
            } else if p.min_value > p.max_value {
                problem("range [\(p.min_value), \(p.max_value)] is empty: min_value > max_value")
            } else if Int(p.type) == RAWFX_PARAM_INT, !PluginStruct.holdsInt64(p.min_value) || !PluginStruct.holdsInt64(p.max_value) {
                problem("an INT range [\(p.min_value), \(p.max_value)] beyond a 64-bit integer")
            } else {
                range = p.min_value...p.max_value
                if !range!.contains(p.default_value) {
                    problem("default \(p.default_value) lies outside [\(p.min_value), \(p.max_value)]")
                }
                if Int(p.type) == RAWFX_PARAM_INT, let fraction = numbers.first(where: { $0.1.rounded() != $0.1 }) {
                    problem("an INT parameter with a fractional \(fraction.0) \(fraction.1)")
                }
            }
        case RAWFX_PARAM_BOOL:
            if p.default_value != 0 && p.default_value != 1 { problem("a BOOL default of \(p.default_value), expected 0 or 1") }
        case RAWFX_PARAM_ENUM:
            if p.enum_count == 0 || p.enum_values == nil {
                problem("an ENUM with no values (enum_count \(p.enum_count))")
            } else if p.enum_count > maxDescriptorCount {
                problem("enum_count is \(p.enum_count), over the \(maxDescriptorCount) any host walks: no value read")
            } else {
                for i in 0..<Int(p.enum_count) {
                    let name = boundedString(p.enum_values[i], field: "enum value \(i)", problems: &strings) ?? ""
                    if name.isEmpty { problem("enum value \(i) is NULL or empty") }
                    if enumValues.contains(name) { problem("enum value '\(name)' appears twice") }
                    enumValues.append(name)
                }
                let index = p.default_value
                if index.rounded() != index || index < 0 || index >= Double(p.enum_count) {
                    problem("default index \(index) is not one of the \(p.enum_count) values")
                }
            }
        case RAWFX_PARAM_STRING:
            break
        default:
            problem("unknown type \(p.type)")
        }
        if p.flags & UInt32(RAWFX_PARAM_FLAG_PATH) != 0 && Int(p.type) != RAWFX_PARAM_STRING {
            problem("RAWFX_PARAM_FLAG_PATH on a parameter that is not a STRING")
        }
        let defaultString = boundedString(p.default_string, field: "default_string", problems: &strings)
        strings.forEach(problem)
        let info = ParameterInfo(index: index, id: id, type: p.type, flags: p.flags, defaultValue: p.default_value,
                                 range: range, defaultString: defaultString, enumValues: enumValues)
        return (info, problems)
    }
}

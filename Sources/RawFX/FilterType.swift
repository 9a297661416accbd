import RawFXRuntime

/// A kind of filter a plugin provides (`rawfx_filter_descriptor`): its identity, its
/// parameters, and the factory for instances.
/// Unchecked `Sendable`: immutable; its pointers are the plugin's static descriptor, alive as long as its library.
public final class FilterType: @unchecked Sendable, CustomStringConvertible {
    public let id: String
    public let name: String
    public let version: String
    public let summary: String
    public let mediaKind: MediaKind
    public let processing: Processing
    public let parameters: [ParameterDescriptor]
    /// The plugin file it came from; kept alive as long as this type is.
    public let library: PluginLibrary
    /// The plugin's descriptor, as the plugin wrote it (`rawfx_filter_descriptor`).
    public let descriptor: UnsafePointer<rawfx_filter_descriptor>
    /// The descriptor read by the plugin's `struct_size` and ABI minor: fields the plugin did
    /// not write are zero.
    let fields: rawfx_filter_descriptor
    /// The ABI minor the plugin was built against (its entry's `abi.minor`).
    public let abiMinor: UInt32

    struct Malformed: Error { let reason: String }

    init(descriptor: UnsafePointer<rawfx_filter_descriptor>, library: PluginLibrary) throws(Malformed) {
        let minor = library.abi.minor
        let size = descriptor.pointee.struct_size
        guard Int(size) >= PluginStruct.filterDescriptor10 else {
            throw Malformed(reason: "filter descriptor struct_size \(size), expected at least \(PluginStruct.filterDescriptor10) (the ABI 1.0 size)")
        }
        let d = PluginStruct.read(descriptor, zero: rawfx_filter_descriptor(), structSize: size,
                                  sizeForMinor: PluginStruct.filterDescriptorSize(minor: minor))
        guard let idPointer = d.id else { throw Malformed(reason: "a filter descriptor has no id") }
        let id = String(cString: idPointer)
        guard FilterType.isValidIdentifier(id) else {
            throw Malformed(reason: "filter id '\(id)' does not follow the id rule \(FilterType.identifierRule)")
        }
        guard let kind = MediaKind(rawValue: d.media_kind) else {
            throw Malformed(reason: "filter '\(id)': media_kind \(d.media_kind) is neither video (1) nor audio (2)")
        }
        guard let processing = Processing(rawValue: d.processing) else {
            throw Malformed(reason: "filter '\(id)': processing \(d.processing) is neither in place (1) nor out of place (2)")
        }
        guard d.create != nil || d.create_with_host != nil else {
            throw Malformed(reason: "filter '\(id)' has neither create nor create_with_host")
        }
        guard d.param_count == 0 || d.params != nil else {
            throw Malformed(reason: "filter '\(id)' declares \(d.param_count) parameters but no array")
        }
        var parameters: [ParameterDescriptor] = []
        // The array's stride is the plugin's own struct_size (a later minor may grow the
        // descriptor), never the host's sizeof.
        let stride = d.param_count > 0 ? Int(d.params[0].struct_size) : 0
        if d.param_count > 0, stride < PluginStruct.paramDescriptor10 {
            throw Malformed(reason: "filter '\(id)': a parameter descriptor has struct_size \(stride), expected at least \(PluginStruct.paramDescriptor10)")
        }
        if d.param_count > 0, stride % PluginStruct.paramDescriptorAlignment != 0 {
            throw Malformed(reason: "filter '\(id)': the parameter descriptors' struct_size \(stride) is not a multiple of \(PluginStruct.paramDescriptorAlignment) (a C array's stride is)")
        }
        for i in 0..<Int(d.param_count) {
            let element = (UnsafeRawPointer(d.params!) + i * stride).assumingMemoryBound(to: rawfx_param_descriptor.self)
            let p = PluginStruct.read(element, zero: rawfx_param_descriptor(), structSize: element.pointee.struct_size,
                                      sizeForMinor: PluginStruct.paramDescriptor10)
            parameters.append(try FilterType.parameter(p, filter: id))
        }
        if let duplicate = Dictionary(grouping: parameters, by: \.id).first(where: { $0.value.count > 1 }) {
            throw Malformed(reason: "filter '\(id)' declares parameter '\(duplicate.key)' twice")
        }
        self.id = id
        self.name = d.name.map { String(cString: $0) } ?? id
        self.version = d.version.map { String(cString: $0) } ?? ""
        self.summary = d.description.map { String(cString: $0) } ?? ""
        self.mediaKind = kind
        self.processing = processing
        self.parameters = parameters
        self.library = library
        self.descriptor = descriptor
        self.fields = d
        self.abiMinor = minor
    }

    public var description: String { "\(id) (\(mediaKind), \(processing)) from \(library.path)" }

    /// Whether `set_param` of a parameter without RECONFIGURE may be called on a live instance
    /// on the process thread: the REAL-TIME rule of ABI 1.1, for plugins that declare it. A 1.0
    /// plugin's set_param may allocate (the 1.0 header did not make it real-time), so its values
    /// are set on a new instance on a control thread instead (docs/plugin-abi.md). An isolated
    /// stage's proxy hands the value to its helper, which is real-time on the host's side.
    var setParameterIsRealTime: Bool { abiMinor >= 1 || rfx_isolation_is_proxy(descriptor) != 0 }

    public func parameter(named id: String) -> ParameterDescriptor? {
        parameters.first { $0.id == id }
    }

    /// Creates an instance with every parameter at its default (`descriptor->create`).
    package func makeInstance() throws(ChainError) -> FilterInstance {
        try FilterInstance(type: self)
    }

    /// The one rule for filter and parameter ids (RAWFX_ID_RULE): `[a-z0-9_]+`.
    public static let identifierRule = RAWFX_ID_RULE

    /// True when `s` follows `identifierRule`.
    public static func isValidIdentifier(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }
    }

    private static func parameter(_ p: rawfx_param_descriptor, filter: String) throws(Malformed) -> ParameterDescriptor {
        guard Int(p.struct_size) >= PluginStruct.paramDescriptor10 else {
            throw Malformed(reason: "filter '\(filter)': a parameter descriptor has struct_size \(p.struct_size), expected at least \(PluginStruct.paramDescriptor10)")
        }
        guard let idPointer = p.id else { throw Malformed(reason: "filter '\(filter)': a parameter has no id") }
        let id = String(cString: idPointer)
        guard isValidIdentifier(id) else {
            throw Malformed(reason: "filter '\(filter)': parameter id '\(id)' does not follow the id rule \(identifierRule)")
        }
        func bad(_ why: String) -> Malformed { Malformed(reason: "filter '\(filter)', parameter '\(id)': \(why)") }
        let type: ParameterType
        var defaultValue: ParameterValue?
        var range: ClosedRange<Double>?
        switch Int(p.type) {
        case RAWFX_PARAM_INT, RAWFX_PARAM_FLOAT:
            guard p.min_value.isFinite, p.max_value.isFinite, p.min_value <= p.max_value else {
                throw bad("range [\(p.min_value), \(p.max_value)] is empty or not finite")
            }
            guard p.default_value >= p.min_value, p.default_value <= p.max_value else {
                throw bad("default \(p.default_value) lies outside [\(p.min_value), \(p.max_value)]")
            }
            if Int(p.type) == RAWFX_PARAM_INT, !PluginStruct.holdsInt64(p.min_value) || !PluginStruct.holdsInt64(p.max_value) {
                throw bad("an INT range [\(p.min_value), \(p.max_value)] beyond a 64-bit integer")
            }
            range = p.min_value...p.max_value
            if Int(p.type) == RAWFX_PARAM_INT {
                type = .int
                defaultValue = .int(Int64(p.default_value))
            } else {
                type = .float
                defaultValue = .float(p.default_value)
            }
        case RAWFX_PARAM_BOOL:
            type = .bool
            defaultValue = .bool(p.default_value != 0)
        case RAWFX_PARAM_ENUM:
            guard p.enum_count > 0, let values = p.enum_values else { throw bad("an enum with no values") }
            var names: [String] = []
            for i in 0..<Int(p.enum_count) {
                guard let name = values[i] else { throw bad("enum value \(i) is NULL") }
                names.append(String(cString: name))
            }
            guard p.default_value >= 0, p.default_value < Double(names.count) else {
                throw bad("default index \(p.default_value) is not one of \(names.count) values")
            }
            let index = Int(p.default_value)
            type = .enumeration(names)
            defaultValue = .enumeration(index: index, name: names[index])
        case RAWFX_PARAM_STRING:
            type = .string
            defaultValue = p.default_string.map { .string(String(cString: $0)) }
        default:
            throw bad("unknown type \(p.type)")
        }
        return ParameterDescriptor(
            id: id,
            name: p.name.map { String(cString: $0) } ?? id,
            help: p.help.map { String(cString: $0) } ?? "",
            unit: p.unit.map { String(cString: $0) } ?? "",
            type: type, defaultValue: defaultValue, range: range,
            isPath: p.flags & UInt32(RAWFX_PARAM_FLAG_PATH) != 0,
            isRequired: p.flags & UInt32(RAWFX_PARAM_FLAG_REQUIRED) != 0,
            needsReconfigure: p.flags & UInt32(RAWFX_PARAM_FLAG_RECONFIGURE) != 0)
    }
}

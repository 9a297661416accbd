/// Why a plugin file could not be loaded. Every case names the file as it was given.
public enum PluginLoadError: Error, Equatable, CustomStringConvertible {
    /// Nothing at this path (a file, or an explicit search-path entry).
    case notFound(path: String)
    /// Something other than a regular file (`kind`: "a FIFO", "a directory"…); never opened.
    case notRegularFile(path: String, kind: String)
    /// The file exists but cannot be resolved or opened (`reason` is `strerror`).
    case cannotOpen(path: String, reason: String)
    /// The file or a directory above it may be changed by someone other than root and the
    /// current user (see `PluginTrust`).
    case untrusted(path: String, violation: TrustViolation)
    /// `dlopen` refused the file (`reason` is `dlerror()`).
    case notSharedObject(path: String, reason: String)
    /// The file loads but exports no `rawfx_get_plugin_entry` (RAWFX_ENTRY_SYMBOL).
    case missingEntrySymbol(path: String)
    /// The plugin was built for another ABI major version.
    case abiMajorMismatch(path: String, plugin: ABIVersion, host: ABIVersion)
    /// The plugin's `init` refused this host.
    case refusedHost(path: String, message: String)
    /// The entry or a descriptor breaks the ABI's rules.
    case malformedDescriptor(path: String, reason: String)
    /// The file is a plugin this program has built in (same plugin name): never initialised,
    /// its filters come from the built-in (docs/plugin-abi.md, "Built-in plugins").
    case copyOfBuiltin(path: String, plugin: String)

    public var path: String {
        switch self {
        case .notFound(let p), .notRegularFile(let p, _), .cannotOpen(let p, _), .untrusted(let p, _),
             .notSharedObject(let p, _), .missingEntrySymbol(let p), .abiMajorMismatch(let p, _, _),
             .refusedHost(let p, _), .malformedDescriptor(let p, _), .copyOfBuiltin(let p, _):
            return p
        }
    }

    public var description: String {
        switch self {
        case .notFound(let path):
            return "\(path): no such plugin file or directory"
        case .notRegularFile(let path, let kind):
            return "\(path): not a regular file (\(kind)); not opened"
        case .cannotOpen(let path, let reason):
            return "\(path): cannot open: \(reason)"
        case .untrusted(let path, let violation):
            return "\(path): not loaded: \(violation); a plugin file and every directory above it must be owned "
                + "by root or uid \(violation.user) and not writable by group or others (a sticky directory "
                + "such as /tmp excepted); set \(PluginTrust.overrideVariable)=1 to load it anyway"
        case .notSharedObject(let path, let reason):
            return "\(path): not a loadable shared object (\(reason))"
        case .missingEntrySymbol(let path):
            return "\(path): not a RawFX plugin: it exports no \(RAWFX_ENTRY_SYMBOL) function"
        case .abiMajorMismatch(let path, let plugin, let host):
            return "\(path): plugin ABI \(plugin) is incompatible with host ABI \(host) (major versions differ)"
        case .refusedHost(let path, let message):
            return "\(path): the plugin refused this host: \(message)"
        case .malformedDescriptor(let path, let reason):
            return "\(path): malformed plugin: \(reason)"
        case .copyOfBuiltin(let path, let plugin):
            return "\(path): not loaded: it is plugin '\(plugin)', which this program has built in; its filters come from the built-in"
        }
    }
}

/// An ABI version (`rawfx_abi_version`).
public struct ABIVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: UInt32
    public var minor: UInt32
    public init(major: UInt32, minor: UInt32) { self.major = major; self.minor = minor }
    /// The version of rawfx.h this host was compiled against.
    public static let host = ABIVersion(major: UInt32(RAWFX_ABI_MAJOR), minor: UInt32(RAWFX_ABI_MINOR))
    public var description: String { "\(major).\(minor)" }
}

/// Why a chain could not be built, negotiated or run. Every case names the filter.
public enum ChainError: Error, Equatable, CustomStringConvertible {
    /// The chain text does not parse.
    case syntax(chain: String, offset: Int, reason: String)
    /// No loaded plugin provides this filter.
    case unknownFilter(name: String, known: [String])
    /// The filter has no such parameter.
    case unknownParameter(filter: String, parameter: String, valid: [String])
    /// A value of the wrong type or out of range; `expected` says what is allowed.
    case invalidValue(filter: String, parameter: String, value: String, expected: String)
    /// More positional values than the filter has parameters.
    case tooManyValues(filter: String, count: Int, parameters: [String])
    /// A required parameter has no value.
    case missingParameter(filter: String, parameter: String)
    /// A video filter in an audio chain or the reverse.
    case wrongMediaKind(filter: String, filterKind: MediaKind, chainKind: MediaKind)
    /// The plugin could not create an instance.
    case createFailed(filter: String, message: String)
    /// The filter refused the format at negotiation.
    case refused(filter: String, input: StreamFormat, message: String)
    /// The chain's output cannot be what the caller requires (e.g. pre-processing cannot resize).
    case contract(String)
    /// A filter failed on a frame.
    case processFailed(filter: String, status: Int32, message: String)

    public var description: String {
        switch self {
        case .syntax(let chain, let offset, let reason):
            return "chain '\(chain)': \(reason) at character \(offset + 1)"
        case .unknownFilter(let name, let known):
            return "unknown filter '\(name)'; known filters: \(known.isEmpty ? "(none loaded)" : known.joined(separator: ", "))"
        case .unknownParameter(let filter, let parameter, let valid):
            return "\(filter): unknown parameter '\(parameter)'; valid parameters: \(valid.isEmpty ? "(none)" : valid.joined(separator: ", "))"
        case .invalidValue(let filter, let parameter, let value, let expected):
            return "\(filter): invalid value '\(value)' for \(parameter): expected \(expected)"
        case .tooManyValues(let filter, let count, let parameters):
            return "\(filter): \(count) positional values but only \(parameters.count) parameters (\(parameters.joined(separator: ", ")))"
        case .missingParameter(let filter, let parameter):
            return "\(filter): parameter '\(parameter)' is required"
        case .wrongMediaKind(let filter, let filterKind, let chainKind):
            return "\(filter) is a \(filterKind) filter and cannot go in a \(chainKind) chain"
        case .createFailed(let filter, let message):
            return "\(filter): could not create an instance: \(message)"
        case .refused(let filter, let input, let message):
            return "\(filter) refused \(input): \(message)"
        case .contract(let message):
            return message
        case .processFailed(let filter, let status, let message):
            return "\(filter) failed on a frame (status \(status)): \(message)"
        }
    }
}

extension String {
    /// The text in a C buffer up to its first NUL (a message a plugin wrote into a
    /// host-provided `char error[capacity]`).
    public init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

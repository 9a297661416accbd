#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX

/// A plugin file opened by the validator itself (`dlopen` and `rawfx_get_plugin_entry`),
/// so that it checks a file on the contract of rawfx.h alone, whatever the engine's loader
/// would decide about it, and reaches every descriptor pointer. The file is initialized
/// with an instrumented library host and de-initialized by `close()`.
final class PluginFile {
    let path: String
    let fileName: String
    /// The entry as read by its struct_size.
    let entry: rawfx_plugin_entry
    let abi: ABIVersion
    let name: String
    let version: String
    let filters: [FilterDescription]
    /// Rules of rawfx.h the entry breaks (the file's `descriptors` line), beyond loading.
    let problems: [String]
    /// Facts worth a note (a newer minor read as this host's).
    let notes: [String]
    let libraryHost: ValidatorHost
    private var open = true

    /// "rawfx-yuv 1.0.0, ABI 1.1".
    var summary: String { "\(name) \(version), ABI \(abi)" }

    /// Loads and initializes the file, or returns why it cannot be loaded, worded as the
    /// engine words it (`PluginLoadError`).
    /// `step` names each step before it runs (a worker streams them, so that a crash, a hang
    /// or an exit in the plugin's code is pinned on the step).
    static func load(path given: String, step: (String) -> Void = { _ in }) -> Result<PluginFile, PluginLoadError> {
        var status = stat()
        guard stat(given, &status) == 0 else { return .failure(.notFound(path: given)) }
        // dlopen would block on a FIFO and fail obscurely on a directory.
        guard status.st_mode & S_IFMT == S_IFREG else {
            return .failure(.notSharedObject(path: given, reason: "not a regular file"))
        }
        // The plugin's own path must be absolute (rawfx_host_info.plugin_path).
        var path = given
        if let resolved = realpath(given, nil) {
            path = String(cString: resolved)
            free(resolved)
        }
        step("dlopen (the library's constructors)")
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            return .failure(.notSharedObject(path: path, reason: dlerror().map { String(cString: $0) } ?? "unknown dlopen error"))
        }
        // From here on the handle stays open: RTLD_NODELETE keeps the code mapped anyway,
        // and a Swift plugin's runtime records must outlive every use of the file.
        guard let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL) else { return .failure(.missingEntrySymbol(path: path)) }
        let getEntry = unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self)
        step("\(RAWFX_ENTRY_SYMBOL)() and the entry")
        guard let entry = getEntry() else {
            return .failure(.malformedDescriptor(path: path, reason: "\(RAWFX_ENTRY_SYMBOL) returned NULL"))
        }
        let e = PluginStruct.read(entry, zero: rawfx_plugin_entry(), sizeForMinor: PluginStruct.entry10)
        guard Int(e.struct_size) >= fieldEnd(\rawfx_plugin_entry.abi, MemoryLayout<rawfx_abi_version>.size) else {
            return .failure(.malformedDescriptor(path: path, reason: "entry struct_size \(e.struct_size) does not even reach its ABI version"))
        }
        let abi = ABIVersion(major: e.abi.major, minor: e.abi.minor)
        guard abi.major == ABIVersion.host.major else {
            return .failure(.abiMajorMismatch(path: path, plugin: abi, host: .host))
        }
        guard Int(e.struct_size) >= PluginStruct.entry10 else {
            return .failure(.malformedDescriptor(path: path, reason: "entry struct_size \(e.struct_size), expected at least \(PluginStruct.entry10)"))
        }
        guard let initialize = e.`init`, let count = e.filter_count, let describe = e.filter_descriptor else {
            return .failure(.malformedDescriptor(path: path, reason: "the entry lacks init, filter_count or filter_descriptor"))
        }
        step("init")
        let host = ValidatorHost(kind: .library, source: RawFXValidate.fileName(path))
        var message = [CChar](repeating: 0, count: 512)
        host.begin(.initialize)
        let initStatus = path.withCString { pathPointer in
            var info = rawfx_host_info(struct_size: UInt32(MemoryLayout<rawfx_host_info>.size),
                                       abi: rawfx_abi_version(major: ABIVersion.host.major, minor: ABIVersion.host.minor),
                                       name: ValidatorHost.hostName, version: ValidatorHost.hostVersion,
                                       plugin_path: pathPointer, host: host.pointer)
            return initialize(&info, &message, message.count)
        }
        host.end()
        guard initStatus == RAWFX_OK else {
            host.release()
            let text = String(nulTerminated: message)
            return .failure(.refusedHost(path: path, message: text.isEmpty ? "init returned status \(initStatus) without a message" : text))
        }
        step("filter_count")
        let filterCount = count()
        step("filter_descriptor and the descriptors' strings and parameters")
        return .success(PluginFile(path: path, entry: e, abi: abi, host: host,
                                   count: filterCount, describe: { describe($0) }))
    }

    private init(path: String, entry e: rawfx_plugin_entry, abi: ABIVersion, host: ValidatorHost,
                 count: UInt32, describe: (UInt32) -> UnsafePointer<rawfx_filter_descriptor>?) {
        self.path = path
        fileName = RawFXValidate.fileName(path)
        entry = e
        self.abi = abi
        libraryHost = host
        let walked = PluginFile.walk(entry: e, abi: abi, count: count, describe: describe)
        name = walked.name
        version = walked.version
        filters = walked.filters
        problems = walked.problems
        notes = walked.notes
    }

    /// What an initialized plugin's entry and descriptors say (its names, every filter
    /// descriptor with its parameters) and every rule of rawfx.h they break: counts over
    /// `maxDescriptorCount` are not followed, strings are read at most `maxDescriptorString`
    /// bytes far, structs as far as their `struct_size` and the plugin's minor cover. Only
    /// reads the plugin's memory (FuzzPluginDescriptors feeds it forged descriptors).
    static func walk(entry e: rawfx_plugin_entry, abi: ABIVersion, count: UInt32,
                     describe: (UInt32) -> UnsafePointer<rawfx_filter_descriptor>?)
        -> (name: String, version: String, filters: [FilterDescription], problems: [String], notes: [String]) {
        var problems: [String] = []
        let name = boundedString(e.plugin_name, field: "plugin_name", problems: &problems) ?? ""
        let version = boundedString(e.plugin_version, field: "plugin_version", problems: &problems) ?? ""
        var notes: [String] = []
        if name.isEmpty { problems.append("plugin_name is missing or empty") }
        if version.isEmpty { problems.append("plugin_version is missing or empty") }
        if abi.minor > ABIVersion.host.minor {
            notes.append("built for ABI \(abi), newer than this host's \(ABIVersion.host): read as \(ABIVersion.host)")
        }
        if count == 0 { problems.append("filter_count is 0: the file provides no filters") }
        var filters: [FilterDescription] = []
        if count > maxDescriptorCount {
            problems.append("filter_count is \(count), over the \(maxDescriptorCount) any host walks: no descriptor read")
        }
        for index in 0..<(count > maxDescriptorCount ? 0 : count) {
            guard let descriptor = describe(index) else {
                problems.append("filter_descriptor(\(index)) returned NULL though filter_count is \(count)")
                continue
            }
            filters.append(FilterDescription(index: Int(index), descriptor: descriptor, pluginMinor: abi.minor))
        }
        let ids = filters.map(\.id)
        for id in Set(ids) where ids.count(where: { $0 == id }) > 1 {
            problems.append("filter id '\(id)' appears \(ids.count(where: { $0 == id })) times")
        }
        return (name, version, filters, problems, notes)
    }

    /// Calls the plugin's `deinit` (once; every instance must be gone).
    func close() {
        guard open else { return }
        open = false
        libraryHost.begin(.deinitialize)
        entry.deinit?()
        libraryHost.end()
        libraryHost.release()
    }

    /// The file's `descriptors` line.
    var descriptorsResult: CheckResult {
        var findings = Findings()
        problems.forEach { findings.fail($0) }
        findings.notes = notes
        let list = filters.map(\.id).joined(separator: ", ")
        return findings.result(fileName, .descriptors,
                               passing: "\(summary): \(filters.count) filter\(filters.count == 1 ? "" : "s") (\(list))")
    }
}

/// The most filters, parameters or enum values the validator walks: a larger count is
/// reported, not followed (a garbage count would read far past the plugin's arrays).
let maxDescriptorCount: UInt32 = 4096

/// The longest string the validator reads from a plugin's struct.
let maxDescriptorString = 4096

/// A plugin's C string, read at most `maxDescriptorString` bytes far; a longer one (not
/// NUL-terminated, say) is a problem and reads as its first bytes.
func boundedString(_ pointer: UnsafePointer<CChar>?, field: String, problems: inout [String]) -> String? {
    guard let pointer else { return nil }
    let length = strnlen(pointer, maxDescriptorString + 1)
    if length > maxDescriptorString {
        problems.append("\(field) is longer than \(maxDescriptorString) bytes (not NUL-terminated?)")
    }
    let bytes = UnsafeRawBufferPointer(start: pointer, count: min(length, maxDescriptorString))
    return String(decoding: bytes, as: UTF8.self)
}

/// The last component of a path.
func fileName(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}

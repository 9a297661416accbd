#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One loaded plugin file: the `dlopen` handle and the entry it exported.
///
/// Lives as long as any `FilterType` or instance from it; `deinit` calls the plugin's
/// `deinit` and `dlclose`.
public final class PluginLibrary: @unchecked Sendable {
    public let path: String
    public let name: String
    public let version: String
    public let abi: ABIVersion
    let entry: UnsafePointer<rawfx_plugin_entry>
    private let handle: UnsafeMutableRawPointer
    public private(set) var filters: [FilterType] = []

    /// Loads `path` with `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)`, checks the ABI version both ways
    /// (`entry->abi` against the host's, then the plugin's `init`), and reads every filter
    /// descriptor. Throws a `PluginLoadError` naming the file.
    public init(path: String) throws(PluginLoadError) {
        guard access(path, F_OK) == 0 else { throw .notFound(path: path) }
        // RTLD_NODELETE: a library is never unmapped, even after dlclose. The Swift runtime
        // (and Rust's) registers type metadata and conformances from every loaded image and
        // cannot forget them; unmapping a Swift plugin would leave dangling records behind.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
            throw .notSharedObject(path: path, reason: reason)
        }
        guard let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL) else {
            dlclose(handle)
            throw .missingEntrySymbol(path: path)
        }
        let getEntry = unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self)
        guard let entry = getEntry() else {
            dlclose(handle)
            throw .malformedDescriptor(path: path, reason: "rawfx_get_plugin_entry returned NULL")
        }
        let e = entry.pointee
        let minimumEntrySize = MemoryLayout<rawfx_plugin_entry>.size
        guard e.struct_size >= UInt32(MemoryLayout<UInt32>.size + MemoryLayout<rawfx_abi_version>.size) else {
            dlclose(handle)
            throw .malformedDescriptor(path: path, reason: "entry struct_size \(e.struct_size) is too small")
        }
        let pluginABI = ABIVersion(major: e.abi.major, minor: e.abi.minor)
        if pluginABI.major != ABIVersion.host.major {
            dlclose(handle)
            throw .abiMajorMismatch(path: path, plugin: pluginABI, host: .host)
        }
        if pluginABI.minor > ABIVersion.host.minor {
            dlclose(handle)
            throw .newerMinorVersion(path: path, plugin: pluginABI, host: .host)
        }
        guard e.struct_size >= UInt32(minimumEntrySize) else {
            dlclose(handle)
            throw .malformedDescriptor(path: path, reason: "entry struct_size \(e.struct_size), expected at least \(minimumEntrySize)")
        }
        guard let initFn = e.`init`, let count = e.filter_count, let describe = e.filter_descriptor else {
            dlclose(handle)
            throw .malformedDescriptor(path: path, reason: "entry lacks init, filter_count or filter_descriptor")
        }
        var hostInfo = rawfx_host_info()
        hostInfo.struct_size = UInt32(MemoryLayout<rawfx_host_info>.size)
        hostInfo.abi = rawfx_abi_version(major: ABIVersion.host.major, minor: ABIVersion.host.minor)
        let status = RawFXHost.name.withCString { name in
            RawFXHost.version.withCString { version in
                hostInfo.name = name
                hostInfo.version = version
                var message = [CChar](repeating: 0, count: 512)
                let status = initFn(&hostInfo, &message, message.count)
                return (status, String(nulTerminated: message))
            }
        }
        guard status.0 == RAWFX_OK else {
            dlclose(handle)
            let message = status.1.isEmpty ? "init returned status \(status.0)" : status.1
            throw .refusedHost(path: path, message: message)
        }
        self.path = path
        self.handle = handle
        self.entry = entry
        self.abi = pluginABI
        self.name = e.plugin_name.map { String(cString: $0) } ?? fileName(of: path)
        self.version = e.plugin_version.map { String(cString: $0) } ?? ""
        var types: [FilterType] = []
        for index in 0..<count() {
            guard let descriptor = describe(index) else {
                e.deinit?()
                dlclose(handle)
                throw .malformedDescriptor(path: path, reason: "filter_descriptor(\(index)) returned NULL")
            }
            do {
                types.append(try FilterType(descriptor: descriptor, library: self))
            } catch {
                e.deinit?()
                dlclose(handle)
                throw .malformedDescriptor(path: path, reason: error.reason)
            }
        }
        var seen = Set<String>()
        for type in types where !seen.insert(type.id).inserted {
            e.deinit?()
            dlclose(handle)
            throw .duplicateFilterID(id: type.id, path: path, firstPath: path)
        }
        filters = types
    }

    deinit {
        entry.pointee.deinit?()
        dlclose(handle)
    }
}

/// The host's name and version, as plugins see them in `rawfx_host_info`.
public enum RawFXHost {
    public static let name = "rawfx"
    public static let version = "0.1.0"
}

/// The last component of a path: "libRawFXYUV.so" of "/x/libRawFXYUV.so".
func fileName(of path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}

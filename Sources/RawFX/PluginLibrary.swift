#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
// FoundationEssentials, not Foundation: librawfx and rawfx-isolate link the Swift runtime in
// statically for the packages (scripts/build-release.sh), and Foundation would bring ICU's data
// (about 40 MB) into each; the engine needs none of its international part.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFXRuntime

/// One loaded plugin file: the `dlopen` handle, the entry it exported, and the host object
/// its `init` received.
///
/// Ownership runs one way: a registry holds its libraries and their filter types, every
/// `FilterType` (and so every instance, through its type) holds its library, and a library
/// refers to its types only weakly. The plugin's `deinit` and `dlclose` run exactly once, when
/// the last of these lets go, so a chain may outlive the registry it was built from.
///
/// A file is loaded once per process however its path is spelled (compared by device and
/// inode): registries that load the same file share one `PluginLibrary`, so a plugin's `init`
/// and `deinit` strictly alternate, and every call into it of the `[loader]` kind is made
/// under one process-wide lock.
/// Unchecked `Sendable`: immutable after `init` but for the type cache, which `loaderLock` guards.
public final class PluginLibrary: @unchecked Sendable {
    /// The file's canonical path (`realpath`), as the plugin gets it in `rawfx_host_info.plugin_path`.
    public let path: String
    public let name: String
    public let version: String
    /// The ABI version the plugin declared (any minor of the host's major is accepted).
    public let abi: ABIVersion
    /// The plugin's entry, read at the size it declared into a zeroed host-sized struct.
    let entry: rawfx_plugin_entry
    /// The plugin file's `rawfx_host` (`rawfx_host_info.host`); freed after the plugin's `deinit`.
    let host: HostContext
    private let handle: UnsafeMutableRawPointer
    private let identity: FileIdentity
    private var descriptors: [UnsafePointer<rawfx_filter_descriptor>] = []
    /// One slot per descriptor; guarded by `loaderLock`.
    private var cachedTypes: [WeakFilterType] = []
    /// Set by the loader when `init` refused a descriptor: the plugin is already unloaded.
    private var unloadedByLoader = false

    /// Loads `path` (a file; a bare name is relative to the current directory), or returns the
    /// library already loaded from the same file. `allowUntrusted` skips `PluginTrust`.
    static func load(path: String, allowUntrusted: Bool) throws(PluginLoadError) -> PluginLibrary {
        let file = try PluginFile.check(path, allowUntrusted: allowUntrusted)
        while true {
            let loaded = try loaderLock.withLock { (open: inout [FileIdentity: LibraryRecord]) throws(PluginLoadError) -> PluginLibrary? in
                if let record = open[file.identity] {
                    // nil: its last owner let go on another thread, whose `deinit` waits for this
                    // lock: let it finish so that the plugin's deinit comes before its next init.
                    return record.library
                }
                let library = try PluginLibrary(file: file, givenPath: path)
                open[file.identity] = LibraryRecord(library: library, object: ObjectIdentifier(library))
                return library
            }
            if let loaded { return loaded }
            sched_yield()
        }
    }

    /// `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)`, the entry read by its own size, the
    /// ABI major checked, `init` called with the host info, every filter descriptor validated.
    /// Called with `loaderLock` held; a descriptor refused after `init` unloads the plugin here
    /// (`unloadedByLoader`), since `deinit` would wait for the lock its loader holds.
    private init(file: PluginFile, givenPath path: String) throws(PluginLoadError) {
        // RTLD_NODELETE: a library is never unmapped, even after dlclose. The Swift runtime
        // (and Rust's) registers type metadata and conformances from every loaded image and
        // cannot forget them; unmapping a Swift plugin would leave dangling records behind.
        guard let handle = dlopen(file.canonicalPath, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
            throw .notSharedObject(path: path, reason: reason)
        }
        let entry: rawfx_plugin_entry
        do {
            entry = try PluginLibrary.readEntry(handle, path: path)
        } catch {
            dlclose(handle)
            throw error
        }
        let host = HostContext(source: fileName(of: file.canonicalPath), kind: .library)
        var message = [CChar](repeating: 0, count: 512)
        let status = file.canonicalPath.withCString { pluginPath in
            RawFXHost.name.withCString { name in
                RawFXHost.version.withCString { version in
                    var info = rawfx_host_info(
                        struct_size: UInt32(MemoryLayout<rawfx_host_info>.size),
                        abi: rawfx_abi_version(major: ABIVersion.host.major, minor: ABIVersion.host.minor),
                        name: name, version: version, plugin_path: pluginPath, host: host.host)
                    return entry.`init`!(&info, &message, message.count)
                }
            }
        }
        guard status == RAWFX_OK else {
            // A plugin that refused the host is not initialised: no deinit.
            dlclose(handle)
            let text = String(nulTerminated: message)
            throw .refusedHost(path: path, message: text.isEmpty ? "init returned status \(status)" : text)
        }
        // The plugin is initialised. Every stored property is set before anything else can
        // fail, so a throw below runs `deinit` (Swift does for a fully initialised object) on
        // this thread, which holds `loaderLock`: the plugin is unloaded here instead.
        self.path = file.canonicalPath
        self.identity = file.identity
        self.handle = handle
        self.entry = entry
        self.host = host
        self.abi = ABIVersion(major: entry.abi.major, minor: entry.abi.minor)
        self.name = entry.plugin_name.map { String(cString: $0) } ?? fileName(of: file.canonicalPath)
        self.version = entry.plugin_version.map { String(cString: $0) } ?? ""

        do {
            try readDescriptors()
        } catch {
            entry.deinit?()
            dlclose(handle)
            unloadedByLoader = true
            throw error
        }
    }

    private func readDescriptors() throws(PluginLoadError) {
        var ids = Set<String>()
        for index in 0..<entry.filter_count!() {
            guard let descriptor = entry.filter_descriptor!(index) else {
                throw .malformedDescriptor(path: path, reason: "filter_descriptor(\(index)) returned NULL")
            }
            let type: FilterType
            do {
                type = try FilterType(descriptor: descriptor, library: self)
            } catch {
                throw .malformedDescriptor(path: path, reason: error.reason)
            }
            guard ids.insert(type.id).inserted else {
                throw .malformedDescriptor(path: path, reason: "filter id '\(type.id)' is declared twice")
            }
            descriptors.append(descriptor)
            cachedTypes.append(WeakFilterType(type: type))
        }
    }

    deinit {
        guard !unloadedByLoader else { return }
        loaderLock.withLock { open in
            entry.deinit?()
            dlclose(handle)
            if open[identity]?.object == ObjectIdentifier(self) { open[identity] = nil }
        }
    }

    /// The filters this file provides, in the plugin's order. The same objects as long as
    /// anyone (a registry, an instance) holds them; made again from the descriptors if not.
    public var filters: [FilterType] {
        loaderLock.withLock { _ in filtersMade() }
    }

    /// `filters`, with `loaderLock` held.
    private func filtersMade() -> [FilterType] {
        descriptors.indices.compactMap { index in
            if let type = cachedTypes[index].type { return type }
            // Validated at load; the descriptors are the plugin's static data.
            guard let type = try? FilterType(descriptor: descriptors[index], library: self) else { return nil }
            cachedTypes[index].type = type
            return type
        }
    }

    /// Reads the entry by the plugin's `struct_size` (`PluginStruct.read`): the version first
    /// (it decides how to read the rest), then min(struct_size, host size) bytes into a zeroed
    /// struct, so a newer plugin's extra fields are ignored.
    private static func readEntry(_ handle: UnsafeMutableRawPointer, path: String) throws(PluginLoadError) -> rawfx_plugin_entry {
        guard let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL) else { throw .missingEntrySymbol(path: path) }
        let getEntry = unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self)
        guard let pointer = getEntry() else {
            throw .malformedDescriptor(path: path, reason: "\(RAWFX_ENTRY_SYMBOL) returned NULL")
        }
        let raw = UnsafeRawPointer(pointer)
        let size = Int(raw.load(as: UInt32.self))
        let abiOffset = MemoryLayout<rawfx_plugin_entry>.offset(of: \.abi)!
        let versionEnd = abiOffset + MemoryLayout<rawfx_abi_version>.size
        guard size >= versionEnd else {
            throw .malformedDescriptor(path: path, reason: "entry struct_size \(size) does not even cover struct_size and abi (\(versionEnd) bytes)")
        }
        let declared = raw.load(fromByteOffset: abiOffset, as: rawfx_abi_version.self)
        let pluginABI = ABIVersion(major: declared.major, minor: declared.minor)
        guard pluginABI.major == ABIVersion.host.major else {
            throw .abiMajorMismatch(path: path, plugin: pluginABI, host: .host)
        }
        guard size >= PluginStruct.entry10 else {
            throw .malformedDescriptor(path: path, reason: "entry struct_size \(size), expected at least \(PluginStruct.entry10) (the ABI 1.0 size)")
        }
        // rawfx_plugin_entry has not grown since 1.0: every minor defines all of it.
        let entry = PluginStruct.read(pointer, zero: rawfx_plugin_entry(), structSize: UInt32(size),
                                      sizeForMinor: MemoryLayout<rawfx_plugin_entry>.size)
        guard entry.`init` != nil, entry.filter_count != nil, entry.filter_descriptor != nil else {
            throw .malformedDescriptor(path: path, reason: "entry lacks init, filter_count or filter_descriptor")
        }
        return entry
    }
}

/// The libraries loaded in this process, by file. Its lock serialises every `[loader]` call
/// (dlopen, init, deinit, dlclose) and guards the libraries' type caches. Not recursive: the
/// only nested path, a load refused after `init`, unloads without taking it again.
private let loaderLock = Locked<[FileIdentity: LibraryRecord]>([:])

/// Classes, not structs: Swift 6.3.1 at -Onone crashes in swift_weakCopyInit when reading
/// `dictionary[key]?.field` of a missing key whose value struct holds a weak reference and an
/// ObjectIdentifier.
private final class LibraryRecord {
    weak var library: PluginLibrary?
    /// Which library the record is for, still comparable once `library` reads nil.
    let object: ObjectIdentifier

    init(library: PluginLibrary, object: ObjectIdentifier) {
        self.library = library
        self.object = object
    }
}

private final class WeakFilterType {
    weak var type: FilterType?
    init(type: FilterType) { self.type = type }
}

/// The host's name and version, as plugins see them in `rawfx_host_info` and `rawfx_host`.
public enum RawFXHost {
    public static let name = "rawfx"
    /// RAWFX_HOST_VERSION_STRING (rawfx_runtime.h).
    public static let version: String = RAWFX_HOST_VERSION_STRING
}

/// The last component of a path: "libRawFXYUV.so" of "/x/libRawFXYUV.so".
func fileName(of path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}

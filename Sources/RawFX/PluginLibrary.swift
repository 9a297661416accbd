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
/// inode), and a built-in plugin once per record: registries that load the same plugin share
/// one `PluginLibrary`, so a plugin's `init` and `deinit` strictly alternate, and every call
/// into it of the `[loader]` kind is made under one process-wide lock.
///
/// A built-in plugin (linked into the process, `rawfx_builtins.h`) goes through the same entry,
/// `init`, descriptors and `deinit` as a file; only `dlopen` and `dlclose` are not done, and its
/// `path` is the image it is linked into (the app's executable).
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
    /// True for a plugin linked into the process (`loadBuiltin`), false for a file.
    public let isBuiltin: Bool
    /// The `dlopen` handle; nil for a built-in.
    private let handle: UnsafeMutableRawPointer?
    private let key: LibraryKey
    private var descriptors: [UnsafePointer<rawfx_filter_descriptor>] = []
    /// One slot per descriptor; guarded by `loaderLock`.
    private var cachedTypes: [WeakFilterType] = []
    /// Set by the loader when `init` refused a descriptor: the plugin is already unloaded.
    private var unloadedByLoader = false

    /// Loads `path` (a file; a bare name is relative to the current directory), or returns the
    /// library already loaded from the same file. `allowUntrusted` skips `PluginTrust`.
    /// `builtinNames`: plugin names this caller has built in; a file declaring one of them is
    /// closed before its `init` and refused as `.copyOfBuiltin`.
    static func load(path: String, allowUntrusted: Bool,
                     builtinNames: Set<String> = []) throws(PluginLoadError) -> PluginLibrary {
        let file = try PluginFile.check(path, allowUntrusted: allowUntrusted)
        return try shared(.file(file.identity)) { () throws(PluginLoadError) in
            // RTLD_NODELETE: a library is never unmapped, even after dlclose. The Swift runtime
            // (and Rust's) registers type metadata and conformances from every loaded image and
            // cannot forget them; unmapping a Swift plugin would leave dangling records behind.
            guard let handle = dlopen(file.canonicalPath, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
                let reason = dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
                throw .notSharedObject(path: path, reason: reason)
            }
            let entry: rawfx_plugin_entry
            do throws(PluginLoadError) {
                guard let symbol = dlsym(handle, RAWFX_ENTRY_SYMBOL) else { throw .missingEntrySymbol(path: path) }
                entry = try PluginLibrary.readEntry(unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self), path: path)
                if let name = entry.plugin_name.map({ String(cString: $0) }), builtinNames.contains(name) {
                    throw .copyOfBuiltin(path: path, plugin: name)
                }
            } catch {
                dlclose(handle)
                throw error
            }
            return try PluginLibrary(key: .file(file.identity), path: file.canonicalPath, givenPath: path,
                                     handle: handle, entry: entry, logSource: fileName(of: file.canonicalPath))
        }
    }

    /// The built-in plugin `record` registered (`rawfx_builtins.h`), initialised once for all
    /// registries that load it, like a file.
    static func loadBuiltin(_ record: UnsafePointer<rawfx_builtin_plugin>) throws(PluginLoadError) -> PluginLibrary {
        guard let getEntry = record.pointee.get_entry else {
            throw .malformedDescriptor(path: record.pointee.library_name.map { String(cString: $0) } ?? "a built-in plugin",
                                       reason: "its built-in record has no get_entry")
        }
        // The image the plugin is linked into: what a plugin gets as its own path.
        var path = FileSystem.executablePath ?? ""
        if let library = rawfx_builtin_plugin_library_path(record), let resolved = realpath(library, nil) {
            path = String(cString: resolved)
            free(resolved)
        }
        let logSource = record.pointee.library_name.map { String(cString: $0) } ?? fileName(of: path)
        return try shared(.builtin(UInt(bitPattern: record))) { () throws(PluginLoadError) in
            try PluginLibrary(key: .builtin(UInt(bitPattern: record)), path: path, givenPath: path, handle: nil,
                              entry: PluginLibrary.readEntry(getEntry, path: path), logSource: logSource)
        }
    }

    /// The library already loaded under `key`, or `make()`'s, recorded under it.
    private static func shared(_ key: LibraryKey,
                               _ make: () throws(PluginLoadError) -> PluginLibrary) throws(PluginLoadError) -> PluginLibrary {
        while true {
            let loaded = try loaderLock.withLock { (open: inout [LibraryKey: LibraryRecord]) throws(PluginLoadError) -> PluginLibrary? in
                if let record = open[key] {
                    // nil: its last owner let go on another thread, whose `deinit` waits for this
                    // lock: let it finish so that the plugin's deinit comes before its next init.
                    return record.library
                }
                let library = try make()
                open[key] = LibraryRecord(library: library, object: ObjectIdentifier(library))
                return library
            }
            if let loaded { return loaded }
            sched_yield()
        }
    }

    /// The entry already read by its own size, its ABI major checked: `init` called with the
    /// host info, every filter descriptor validated. Called with `loaderLock` held; `handle`
    /// (nil for a built-in) is closed if this throws, and a descriptor refused after `init`
    /// unloads the plugin here (`unloadedByLoader`), since `deinit` would wait for the lock
    /// its loader holds.
    private init(key: LibraryKey, path canonicalPath: String, givenPath path: String,
                 handle: UnsafeMutableRawPointer?, entry: rawfx_plugin_entry, logSource: String) throws(PluginLoadError) {
        let host = HostContext(source: logSource, kind: .library)
        var message = [CChar](repeating: 0, count: 512)
        let status = canonicalPath.withCString { pluginPath in
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
            if let handle { dlclose(handle) }
            let text = String(nulTerminated: message)
            throw .refusedHost(path: path, message: text.isEmpty ? "init returned status \(status)" : text)
        }
        // The plugin is initialised. Every stored property is set before anything else can
        // fail, so a throw below runs `deinit` (Swift does for a fully initialised object) on
        // this thread, which holds `loaderLock`: the plugin is unloaded here instead.
        self.path = canonicalPath
        self.key = key
        self.isBuiltin = handle == nil
        self.handle = handle
        self.entry = entry
        self.host = host
        self.abi = ABIVersion(major: entry.abi.major, minor: entry.abi.minor)
        self.name = entry.plugin_name.map { String(cString: $0) } ?? logSource
        self.version = entry.plugin_version.map { String(cString: $0) } ?? ""
        do {
            try readDescriptors(path: path)
        } catch {
            entry.deinit?()
            if let handle { dlclose(handle) }
            unloadedByLoader = true
            throw error
        }
    }

    private func readDescriptors(path: String) throws(PluginLoadError) {
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
            if let handle { dlclose(handle) }
            if open[key]?.object == ObjectIdentifier(self) { open[key] = nil }
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
    private static func readEntry(_ getEntry: rawfx_get_plugin_entry_fn, path: String) throws(PluginLoadError) -> rawfx_plugin_entry {
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

/// The libraries loaded in this process, by file or built-in record. Its lock serialises every
/// `[loader]` call (dlopen, init, deinit, dlclose) and guards the libraries' type caches. Not
/// recursive: the only nested path, a load refused after `init`, unloads without taking it again.
private let loaderLock = Locked<[LibraryKey: LibraryRecord]>([:])

/// What makes two loads the same plugin: the file (device and inode), or the built-in's record.
private enum LibraryKey: Hashable {
    case file(FileIdentity)
    case builtin(UInt)
}

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

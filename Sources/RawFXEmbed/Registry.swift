#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CRawFXEmbed
// FoundationEssentials, not Foundation: librawfx and rawfx-isolate link the Swift runtime in
// statically for the packages (scripts/build-release.sh), and Foundation would bring ICU's data
// (about 40 MB) into each; the engine needs none of its international part.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFX

/// A registry behind `rawfx_registry *`, with the C strings the getters lend (freed with it).
final class RegistryHandle {
    let registry: PluginRegistry
    let searchPath: [UnsafeMutablePointer<CChar>]
    let failures: [UnsafeMutablePointer<CChar>]
    let filterIDs: [UnsafeMutablePointer<CChar>]

    init(_ registry: PluginRegistry) {
        self.registry = registry
        searchPath = registry.searchPath.map { strdup($0)! }
        failures = registry.failures.map { strdup($0.description)! }
        filterIDs = registry.filterTypes.map { strdup($0.id)! }
    }

    deinit { (searchPath + failures + filterIDs).forEach { free($0) } }
}

/// The plugins installed with librawfx: `<libdir>/rawfx/plugins`; or, in a SwiftPM build
/// folder (the `rawfx` command beside the library), that folder, where the plugins are built.
/// Nothing otherwise: a system library directory is full of `.so` files that are no plugins.
func defaultPluginDirectories() -> [String] {
    guard let file = libraryFile() else { return [] }
    let directory = URL(fileURLWithPath: file).resolvingSymlinksInPath().deletingLastPathComponent().path
    let installed = directory + "/rawfx/plugins"
    if FileSystem.isDirectory(installed) {
        return [installed]
    }
    if FileSystem.isExecutableFile(directory + "/rawfx") {
        return [directory]
    }
    return []
}

@_cdecl("rawfx_registry_open")
public func rawfxRegistryOpen(_ options: UnsafePointer<rawfx_registry_options>?,
                              _ out: UnsafeMutablePointer<OpaquePointer?>?) -> rawfx_result {
    let function = "rawfx_registry_open"
    guard let out else { return invalid(function, "registry is NULL; expected the address of a rawfx_registry *") }
    out.pointee = nil
    var settings = rawfx_registry_options()
    settings.use_environment = 1
    if let options {
        let size = Int(options.pointee.struct_size)
        guard size >= MemoryLayout<UInt32>.size, size <= MemoryLayout<rawfx_registry_options>.size else {
            return invalid(function, "options->struct_size is \(size); expected sizeof(rawfx_registry_options) = \(MemoryLayout<rawfx_registry_options>.size) (or the smaller size of an older header; a larger one comes from a newer header: check rawfx_embed_version() first)")
        }
        // Fields past the caller's struct_size read as zero.
        settings = rawfx_registry_options()
        withUnsafeMutableBytes(of: &settings) { mine in
            mine.copyMemory(from: UnsafeRawBufferPointer(start: options, count: min(size, mine.count)))
        }
    }
    var explicit: [String] = []
    if settings.search_path_count > 0 {
        guard let entries = settings.search_path else {
            return invalid(function, "options->search_path is NULL with search_path_count \(settings.search_path_count)")
        }
        for index in 0..<settings.search_path_count {
            guard let entry = entries[index] else { return invalid(function, "options->search_path[\(index)] is NULL") }
            explicit.append(String(cString: entry))
        }
    }
    for entry in explicit {
        var status = stat()
        guard stat(entry, &status) == 0 else { return fail(RAWFX_E_NOT_FOUND, PluginLoadError.notFound(path: entry).description) }
    }
    let processEnvironment = ProcessInfo.processInfo.environment
    var environment = settings.use_environment != 0 ? processEnvironment : [:]
    if settings.allow_untrusted != 0 { environment[PluginTrust.overrideVariable] = "1" }
    let path = PluginRegistry.searchPath(explicit: explicit, environment: environment,
                                         defaults: settings.skip_default_directory != 0 ? [] : defaultPluginDirectories())
    out.pointee = handle(RegistryHandle(PluginRegistry.scanning(path, environment: environment)))
    return rawfxOK
}

@_cdecl("rawfx_registry_close")
public func rawfxRegistryClose(_ registry: OpaquePointer?) {
    if let registry { release(registry, as: RegistryHandle.self) }
}

/// The registry behind a handle, or nil for NULL.
func registry(_ pointer: OpaquePointer?) -> RegistryHandle? {
    pointer.map { object($0, as: RegistryHandle.self) }
}

@_cdecl("rawfx_registry_search_path_count")
public func rawfxRegistrySearchPathCount(_ pointer: OpaquePointer?) -> Int {
    registry(pointer)?.searchPath.count ?? 0
}

@_cdecl("rawfx_registry_search_path_entry")
public func rawfxRegistrySearchPathEntry(_ pointer: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    element(registry(pointer)?.searchPath, index)
}

@_cdecl("rawfx_registry_failure_count")
public func rawfxRegistryFailureCount(_ pointer: OpaquePointer?) -> Int {
    registry(pointer)?.failures.count ?? 0
}

@_cdecl("rawfx_registry_failure")
public func rawfxRegistryFailure(_ pointer: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    element(registry(pointer)?.failures, index)
}

@_cdecl("rawfx_registry_filter_count")
public func rawfxRegistryFilterCount(_ pointer: OpaquePointer?) -> Int {
    registry(pointer)?.filterIDs.count ?? 0
}

@_cdecl("rawfx_registry_filter_id")
public func rawfxRegistryFilterID(_ pointer: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    element(registry(pointer)?.filterIDs, index)
}

private func element(_ strings: [UnsafeMutablePointer<CChar>]?, _ index: Int) -> UnsafePointer<CChar>? {
    guard let strings, index >= 0, index < strings.count else { return nil }
    return UnsafePointer(strings[index])
}

/// The file this code was loaded from (librawfx.so, or the program it is linked into), by
/// `dladdr`. Glibc's module hides `dladdr` (it needs _GNU_SOURCE), so it is looked up.
nonisolated(unsafe) private var addressInThisLibrary: UInt8 = 0

private func libraryFile() -> String? {
    typealias DLAddr = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "dladdr") else { return nil }
    let dladdr = unsafeBitCast(symbol, to: DLAddr.self)
    // Dl_info: dli_fname, dli_fbase, dli_sname, dli_saddr.
    var info: (UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafePointer<CChar>?, UnsafeRawPointer?) = (nil, nil, nil, nil)
    let found = withUnsafeMutablePointer(to: &addressInThisLibrary) { address in
        withUnsafeMutableBytes(of: &info) { dladdr(address, $0.baseAddress) }
    }
    guard found != 0, let name = info.0 else { return nil }
    return String(cString: name)
}

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

/// Every filter from the built-in plugins and the plugin files on a search path, by id.
///
/// `PluginRegistry()` loads the built-in plugins (those linked into the process: an app that
/// depends on the RawFX product has all of RawFX's, `rawfx_builtins.h`), then the standard
/// search path; `PluginRegistry.empty()` and `scanning(_:)` load no built-in, and nothing
/// until `load(path:)` or `scan(_:)`. The search path, in order: entries given explicitly
/// (`init(searchPath:)`, `rawfx --plugin-path`), then `RAWFX_PLUGIN_PATH` (colon-separated),
/// then the directory of the running executable, so `swift run` and `swift test` find the
/// plugins SwiftPM just built. Each entry is a directory (its `*.so` files, in name order) or a
/// file. A file that fails to load is recorded in `failures` and never stops the scan.
///
/// When two plugins provide the same filter id, the one met first (a built-in, then earlier on
/// the search path, or loaded first) keeps it; only that filter of the later file is skipped
/// and the clash is recorded in `clashes`. A file that is a built-in plugin again (same plugin
/// name, as the build folder's libRawFXYUV.so is to the built-in `rawfx-yuv`) is not
/// initialised at all and is listed in `builtinCopies`. Only trusted files are loaded (see
/// `PluginTrust`). docs/plugin-abi.md, "Loading" and "Built-in plugins".
/// Unchecked `Sendable`: loads (`load`, `scan`) happen on one thread before the registry is shared; after that it is read only.
public final class PluginRegistry: @unchecked Sendable {
    /// The environment variable that adds plugin directories.
    public static let environmentVariable = "RAWFX_PLUGIN_PATH"

    /// The entries this registry scanned when it was made (empty for `empty()`).
    public let searchPath: [String]
    /// True when the environment set `RAWFX_ALLOW_UNTRUSTED_PLUGINS=1`.
    public let allowsUntrustedPlugins: Bool
    public private(set) var libraries: [PluginLibrary] = []
    public private(set) var failures: [PluginLoadError] = []
    public private(set) var clashes: [FilterIDClash] = []
    /// Files on the search path that are a built-in plugin again, not loaded (`.copyOfBuiltin`).
    public private(set) var builtinCopies: [PluginLoadError] = []
    /// The plugin names of the built-ins this registry loaded: files declaring one are copies.
    private var builtinNames: Set<String> = []
    /// Every type of every library, clashing ones included: the registry's owning references
    /// (a library holds its types only weakly).
    private var types: [FilterType] = []
    private var byID: [String: FilterType] = [:]

    private init(builtins: [UnsafePointer<rawfx_builtin_plugin>], scanning entries: [String], environment: [String: String]) {
        searchPath = entries
        allowsUntrustedPlugins = PluginTrust.isOverridden(in: environment)
        for record in builtins {
            do { try loadBuiltin(record) } catch { failures.append(error) }
        }
        scan(entries)
    }

    /// Loads `builtins` (in order), then the standard search path: what `init(environment:)`
    /// does with `registeredBuiltins`; for tests that stand a plugin in for a built-in.
    package convenience init(builtins: [UnsafePointer<rawfx_builtin_plugin>], environment: [String: String]) {
        self.init(builtins: builtins, scanning: PluginRegistry.searchPath(environment: environment), environment: environment)
    }

    /// The built-in plugins linked into this process, in the order they registered (none
    /// unless the app links Sources/RawFXBuiltins, as the RawFX product does).
    package static var registeredBuiltins: [UnsafePointer<rawfx_builtin_plugin>] {
        var records: [UnsafePointer<rawfx_builtin_plugin>] = []
        var record = rawfx_builtin_plugins()
        while let current = record {
            records.append(current)
            record = current.pointee.next
        }
        return records.reversed()
    }

    /// Loads the built-in plugins, then every plugin on the standard search path:
    /// `RAWFX_PLUGIN_PATH`, then the executable's directory. A `RAWFX_PLUGIN_PATH` entry that
    /// does not exist is recorded in `failures` (as `.notFound`), like a file that fails to load.
    public convenience init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init(builtins: PluginRegistry.registeredBuiltins, environment: environment)
    }

    /// Loads the built-in plugins, then `explicit` entries, then the standard search path. An explicit entry that
    /// does not exist is an error, not a failure: someone asked for it by name.
    public convenience init(searchPath explicit: [String],
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(PluginLoadError) {
        for entry in explicit {
            var status = stat()
            guard stat(entry, &status) == 0 else { throw .notFound(path: entry) }
        }
        self.init(builtins: PluginRegistry.registeredBuiltins,
                  scanning: PluginRegistry.searchPath(explicit: explicit, environment: environment), environment: environment)
    }

    /// Loads exactly `entries`, in order, and nothing from the standard search path (an
    /// embedder, whose executable's directory is no plugin directory, builds its own path).
    /// An entry that does not exist is recorded in `failures`. `environment` is read for
    /// `RAWFX_ALLOW_UNTRUSTED_PLUGINS` only.
    public static func scanning(_ entries: [String],
                                environment: [String: String] = ProcessInfo.processInfo.environment) -> PluginRegistry {
        PluginRegistry(builtins: [], scanning: entries, environment: environment)
    }

    /// A registry that has loaded nothing; add files with `load(path:)` or `scan(_:)`.
    /// `environment` is read for `RAWFX_ALLOW_UNTRUSTED_PLUGINS` only.
    public static func empty(environment: [String: String] = ProcessInfo.processInfo.environment) -> PluginRegistry {
        PluginRegistry(builtins: [], scanning: [], environment: environment)
    }

    /// Every registered filter type, sorted by id (skipped clashing filters are not listed).
    public var filterTypes: [FilterType] { byID.values.sorted { $0.id < $1.id } }

    /// The search path: explicit entries, then RAWFX_PLUGIN_PATH, then `defaults` (nil: the
    /// executable's directory, and `../lib/rawfx/plugins` from it when that exists, where
    /// scripts/install.sh puts the plugins; an embedding library passes its own directory).
    public static func searchPath(explicit: [String] = [],
                                  environment: [String: String] = ProcessInfo.processInfo.environment,
                                  defaults: [String]? = nil) -> [String] {
        var path = explicit
        if let value = environment[environmentVariable] {
            path += value.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        if let defaults {
            path += defaults
        } else if let executable = FileSystem.executablePath {
            let directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
            path.append(directory.path)
            // An installed command (PREFIX/bin/rawfx) finds the plugins installed with it.
            let installed = directory.deletingLastPathComponent().appendingPathComponent("lib/rawfx/plugins").path
            if FileSystem.isDirectory(installed) {
                path.append(installed)
            }
        }
        var seen = Set<String>()
        return path.filter { seen.insert($0).inserted }
    }

    /// The embedding library (the engine behind a C API: built as libRawFXEmbed.so beside the
    /// plugins, installed as librawfx.so): a directory scan passes over it, as it is the host,
    /// never a plugin.
    public static let hostLibraries: Set<String> = ["libRawFXEmbed.so", "librawfx.so"]

    /// Loads every `*.so` in each directory (in name order, the embedding library excepted)
    /// and each entry that is a file.
    /// Nothing is opened before it is known to be a regular file. Failures, missing entries
    /// included, are kept in `failures`.
    public func scan(_ entries: [String]) {
        for entry in entries {
            var status = stat()
            guard stat(entry, &status) == 0 else {
                failures.append(.notFound(path: entry))
                continue
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                loadRecordingFailure(entry)
                continue
            }
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: entry)
            } catch {
                // The C library's words for it ("Permission denied"): FoundationEssentials' error
                // prints as a CocoaError dump.
                var reason = "\(error)"
                if let handle = opendir(entry) { closedir(handle) } else { reason = String(cString: strerror(errno)) }
                failures.append(.cannotOpen(path: entry, reason: "cannot list the directory: \(reason)"))
                continue
            }
            let directory = entry.hasSuffix("/") ? entry : entry + "/"
            for name in names.filter({ $0.hasSuffix(".so") && !PluginRegistry.hostLibraries.contains($0) }).sorted() {
                loadRecordingFailure(directory + name)
            }
        }
    }

    private func loadRecordingFailure(_ path: String) {
        do {
            try load(path: path)
        } catch .copyOfBuiltin(let path, let plugin) {
            builtinCopies.append(.copyOfBuiltin(path: path, plugin: plugin))
        } catch {
            failures.append(error)
        }
    }

    /// Loads one plugin file and registers its filters; returns its library. A file already
    /// loaded (under any spelling of its path) is not loaded again. A filter whose id is
    /// already registered is skipped and recorded in `clashes`; the file's other filters are
    /// registered. A file that is one of this registry's built-in plugins again throws
    /// `.copyOfBuiltin` (the scan lists it in `builtinCopies`).
    @discardableResult
    public func load(path: String) throws(PluginLoadError) -> PluginLibrary {
        let library = try PluginLibrary.load(path: path, allowUntrusted: allowsUntrustedPlugins, builtinNames: builtinNames)
        // Loaded earlier by a registry without built-ins: still a copy here.
        if !library.isBuiltin, builtinNames.contains(library.name) {
            throw .copyOfBuiltin(path: path, plugin: library.name)
        }
        return register(library)
    }

    /// Loads the built-in plugin `record` (`rawfx_builtins.h`) and registers its filters like a
    /// file's; files of the same plugin name are copies from then on.
    @discardableResult
    package func loadBuiltin(_ record: UnsafePointer<rawfx_builtin_plugin>) throws(PluginLoadError) -> PluginLibrary {
        let library = try PluginLibrary.loadBuiltin(record)
        builtinNames.insert(library.name)
        return register(library)
    }

    private func register(_ library: PluginLibrary) -> PluginLibrary {
        guard !libraries.contains(where: { $0 === library }) else { return library }
        libraries.append(library)
        for type in library.filters {
            types.append(type)
            if let kept = byID[type.id] {
                clashes.append(FilterIDClash(id: type.id, skippedPath: library.path, keptPath: kept.library.path,
                                             keptIsBuiltin: kept.library.isBuiltin))
            } else {
                byID[type.id] = type
            }
        }
        return library
    }

    /// The filter type with this id, or `.unknownFilter` listing the known ones.
    public func filterType(_ id: String) throws(ChainError) -> FilterType {
        guard let type = byID[id] else { throw .unknownFilter(name: id, known: byID.keys.sorted()) }
        return type
    }
}

/// Two plugin files that provide the same filter id: the one met first keeps it, and only
/// that filter of the other file is skipped.
public struct FilterIDClash: Equatable, Sendable, CustomStringConvertible {
    public var id: String
    /// The file whose filter was skipped (canonical path).
    public var skippedPath: String
    /// The file that provides the id (canonical path; for a built-in, the image it is linked into).
    public var keptPath: String
    /// True when a built-in plugin provides the id: it came before any file.
    public var keptIsBuiltin: Bool

    public init(id: String, skippedPath: String, keptPath: String, keptIsBuiltin: Bool = false) {
        self.id = id
        self.skippedPath = skippedPath
        self.keptPath = keptPath
        self.keptIsBuiltin = keptIsBuiltin
    }

    public var description: String {
        keptIsBuiltin
            ? "filter '\(id)' of \(skippedPath) is skipped: a plugin built into \(keptPath) already provides it"
            : "filter '\(id)' of \(skippedPath) is skipped: \(keptPath), earlier on the plugin path, already provides it"
    }
}

/// The few file-system questions the engine asks, answered by the C library (the engine uses
/// FoundationEssentials, which has no `Bundle`).
package enum FileSystem {
    /// The running executable's path, symbolic links resolved (`/proc/self/exe`), as
    /// `Bundle.main.executableURL` resolved gave it.
    package static var executablePath: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        buffer[length] = 0
        return String(nulTerminated: buffer)
    }

    /// True when `path` names a directory (symbolic links followed).
    package static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    /// True when `path` names a file, not a directory, that this process may execute.
    package static func isExecutableFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT != S_IFDIR && access(path, X_OK) == 0
    }
}

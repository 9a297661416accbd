import Foundation

/// Every filter from the plugin files on a search path, by id.
///
/// The search path, in order: directories or files given explicitly (`--plugin-path`),
/// then `RAWFX_PLUGIN_PATH` (colon-separated), then the directory of the running
/// executable, so `swift run` and `swift test` find the plugins SwiftPM just built.
/// A file that fails to load is recorded in `failures` and never stops the scan.
public final class PluginRegistry: @unchecked Sendable {
    /// The environment variable that adds plugin directories.
    public static let environmentVariable = "RAWFX_PLUGIN_PATH"

    public private(set) var libraries: [PluginLibrary] = []
    public private(set) var failures: [PluginLoadError] = []
    private var byID: [String: FilterType] = [:]

    public init() {}

    /// Scans the default search path (see the type's documentation).
    public convenience init(searchPath explicit: [String] = [],
                            environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init()
        scan(PluginRegistry.searchPath(explicit: explicit, environment: environment))
    }

    /// Every filter type, sorted by id.
    public var filterTypes: [FilterType] { byID.values.sorted { $0.id < $1.id } }

    /// The search path: explicit entries, then RAWFX_PLUGIN_PATH, then the executable's directory.
    public static func searchPath(explicit: [String] = [],
                                  environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        var path = explicit
        if let value = environment[environmentVariable] {
            path += value.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        if let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            path.append(executable.deletingLastPathComponent().path)
        }
        var seen = Set<String>()
        return path.filter { seen.insert($0).inserted }
    }

    /// Loads every `*.so` in each directory (and each entry that is a file). Failures are
    /// kept in `failures`; a filter id already loaded from an earlier entry wins.
    public func scan(_ entries: [String]) {
        let fm = FileManager.default
        for entry in entries {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: entry, isDirectory: &isDirectory) else { continue }
            let files: [String]
            if isDirectory.boolValue {
                let names = (try? fm.contentsOfDirectory(atPath: entry)) ?? []
                files = names.filter { $0.hasSuffix(".so") }.sorted().map { entry + "/" + $0 }
            } else {
                files = [entry]
            }
            for file in files where !libraries.contains(where: { $0.path == file }) {
                do { try load(path: file) } catch { failures.append(error) }
            }
        }
    }

    /// Loads one plugin file and registers its filters. Throws if it cannot be loaded or if
    /// one of its filter ids is already registered (nothing from the file is registered then).
    public func load(path: String) throws(PluginLoadError) {
        let library = try PluginLibrary(path: path)
        for type in library.filters {
            if let existing = byID[type.id] {
                throw .duplicateFilterID(id: type.id, path: path, firstPath: existing.library.path)
            }
        }
        libraries.append(library)
        for type in library.filters { byID[type.id] = type }
    }

    /// The filter type with this id, or `.unknownFilter` listing the known ones.
    public func filterType(_ id: String) throws(ChainError) -> FilterType {
        guard let type = byID[id] else { throw .unknownFilter(name: id, known: byID.keys.sorted()) }
        return type
    }
}

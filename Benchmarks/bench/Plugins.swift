// Which plugin file provides which filter, and a precise message when one is missing.
import Foundation
import RawFX
import RawFXSDK

enum PluginFiles {
    /// The .so each filter the cases use comes from (SwiftPM builds lib<product>.so).
    static let fileForFilter: [String: String] = [
        "null": "libRawFXBasics.so",
        "scale": "libRawFXYUV.so",
        "rotate": "libRawFXYUV.so",
        "mirror": "libRawFXYUV.so",
        "watermark": "libRawFXWatermark.so",
        "denoise": "libRawFXSpeex.so",
        "resample": "libRawFXSpeex.so",
    ]

    /// The directory of the running executable, where SwiftPM puts the plugins it builds.
    static var executableDirectory: String {
        Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent().path ?? "."
    }

    /// Why these filters cannot be made, one message per plugin file (naming the .so and the
    /// filters it should provide); empty when the registry has them all.
    static func problems(filters: [String], registry: PluginRegistry) -> [String] {
        var missingByFile: [String: [String]] = [:]
        for filter in filters where (try? registry.filterType(filter)) == nil {
            missingByFile[fileForFilter[filter] ?? "the plugin providing '\(filter)'", default: []].append(filter)
        }
        return missingByFile.keys.sorted().map { file in
            let needed = missingByFile[file]!.map { "'\($0)'" }.joined(separator: ", ")
            if let failure = registry.failures.first(where: { $0.path.hasSuffix("/" + file) }) {
                return "\(file) failed to load (needed for \(needed)): \(failure.description)"
            }
            if let library = registry.libraries.first(where: { $0.path.hasSuffix("/" + file) }) {
                let ids = library.filters.map(\.id).joined(separator: ", ")
                return "\(library.path) is loaded but lacks \(needed) (it provides: \(ids.isEmpty ? "none" : ids))"
            }
            let searched = PluginRegistry.searchPath(environment: ProcessInfo.processInfo.environment)
            return "\(file) is missing (needed for \(needed)): not in \(searched.joined(separator: ":")). "
                + "Build the plugins first: swift build\(isDebugBuild ? "" : " -c release")"
        }
    }

    static var isDebugBuild: Bool {
        #if DEBUG
        return true
        #else
        return false
        #endif
    }
}

import ArgumentParser
import Foundation
import RawFX
import RawFXSDK

struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List every filter on the plugin path with its parameters.",
        discussion: """
        For each filter: its id (the name used in chains), media kind, whether it works in place, \
        the plugin file, and each parameter with its type, default, allowed range or values, unit \
        and help. Then the filter ids that two files provide (the file earlier on the plugin path \
        keeps the id; only that filter of the other file is skipped), and the plugin files that \
        failed to load with the reason, untrusted files included (see 'Which plugin files are \
        loaded' in docs/cli.md). Neither stops the listing, and the exit status stays 0; a \
        --plugin-path that does not exist is an error.

        Examples:
          rawfx plugins
          rawfx plugins --json | jq '.filters[].id'
          rawfx plugins --plugin-path ./build/plugins
        """)

    @Flag(help: "Print JSON (filters, parameters, clashes, failures, search path) instead of text.")
    var json = false

    @Option(name: .customLong("plugin-path"),
            help: ArgumentHelp("A directory (or .so file) to search first; repeatable.", valueName: "dir"))
    var pluginPath: [String] = []

    func run() throws {
        let registry = try loadRegistry(pluginPath)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(Listing(registry: registry))
            print(String(decoding: data, as: UTF8.self))
        } else {
            printText(registry)
        }
    }

    private func printText(_ registry: PluginRegistry) {
        // Names, versions, summaries, help and failure reasons are the plugins' own bytes.
        func print(_ line: String) { Swift.print(terminalSafe(line)) }
        print("Plugin path: \(registry.searchPath.joined(separator: ":"))")
        let types = registry.filterTypes
        if types.isEmpty { print("\nNo filters found.") }
        for type in types {
            let library = type.library
            print("\n\(type.id)  \(type.mediaKind), \(type.processing) — \(library.name) \(library.version) (\(library.path))")
            if !type.summary.isEmpty { print("    \(type.summary)") }
            if type.parameters.isEmpty { print("    (no parameters)") }
            for p in type.parameters {
                var line = "    \(p.id)=\(p.type.description.uppercased())".padding(toLength: 26, withPad: " ", startingAt: 0)
                var facts: [String] = []
                if let d = p.defaultValue { facts.append("default \(d)") }
                facts.append(p.allowed)
                if p.isRequired { facts.append("required") }
                if p.needsReconfigure { facts.append("takes effect at the next configure") }
                line += facts.joined(separator: "; ")
                print(line)
                if !p.help.isEmpty { print(String(repeating: " ", count: 26) + p.help) }
            }
        }
        if !registry.clashes.isEmpty {
            print("\nFilter ids provided by two files (\(registry.clashes.count)); the file met first keeps the id:")
            for clash in registry.clashes { print("    \(clash.description)") }
        }
        if !registry.failures.isEmpty {
            print("\nPlugin files that failed to load (\(registry.failures.count)):")
            for failure in registry.failures { print("    \(failure.description)") }
        }
    }
}

/// The JSON form of `rawfx plugins --json`.
struct Listing: Encodable {
    struct Parameter: Encodable {
        var id: String
        var name: String
        var type: String
        var `default`: JSONValue?
        var min: Double?
        var max: Double?
        var values: [String]?
        var unit: String
        var help: String
        var allowed: String
        var required: Bool
        var path: Bool
        var reconfigure: Bool
    }
    struct Filter: Encodable {
        var id: String
        var name: String
        var version: String
        var description: String
        var kind: String
        var processing: String
        var plugin: String
        var pluginName: String
        var pluginVersion: String
        var parameters: [Parameter]
    }
    struct Failure: Encodable {
        var path: String
        var error: String
    }
    struct Clash: Encodable {
        var id: String
        var skipped: String
        var kept: String
        var warning: String
    }
    var searchPath: [String]
    var filters: [Filter]
    var clashes: [Clash]
    var failures: [Failure]

    init(registry: PluginRegistry) {
        searchPath = registry.searchPath
        filters = registry.filterTypes.map { t in
            Filter(id: t.id, name: t.name, version: t.version, description: t.summary,
                   kind: t.mediaKind.description, processing: t.processing == .inPlace ? "in-place" : "out-of-place",
                   plugin: t.library.path, pluginName: t.library.name, pluginVersion: t.library.version,
                   parameters: t.parameters.map { p in
                       var values: [String]?
                       if case .enumeration(let names) = p.type { values = names }
                       return Parameter(id: p.id, name: p.name, type: p.type.description,
                                        default: p.defaultValue.map(JSONValue.init), min: p.range?.lowerBound,
                                        max: p.range?.upperBound, values: values, unit: p.unit, help: p.help,
                                        allowed: p.allowed, required: p.isRequired, path: p.isPath,
                                        reconfigure: p.needsReconfigure)
                   })
        }
        clashes = registry.clashes.map {
            Clash(id: $0.id, skipped: $0.skippedPath, kept: $0.keptPath, warning: $0.description)
        }
        failures = registry.failures.map { Failure(path: $0.path, error: $0.description) }
    }
}

/// A parameter value as its natural JSON type.
enum JSONValue: Encodable {
    case number(Double), integer(Int64), bool(Bool), string(String)

    init(_ value: ParameterValue) {
        switch value {
        case .int(let v): self = .integer(v)
        case .float(let v): self = .number(v)
        case .bool(let v): self = .bool(v)
        case .enumeration(_, let name): self = .string(name)
        case .string(let s): self = .string(s)
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let v): try c.encode(v)
        case .integer(let v): try c.encode(v)
        case .bool(let v): try c.encode(v)
        case .string(let v): try c.encode(v)
        }
    }
}

// swift-tools-version:6.0
//
// libFuzzer harnesses for RawFX's parsers (docs/fuzzing.md). Built only by scripts/fuzz.sh,
// with `-sanitize=fuzzer,address`. Each harness's main.swift hands its test function to
// libFuzzer's driver (`runFuzzer`): SwiftPM renames an executable's entry point, so
// libFuzzer's own `main` cannot be the one.
//
// Sources/* are symbolic links to the main package's targets: the harnesses need internal
// parsers (RawFXMedia is not a product, the watermark's PNG loader is internal to its plugin),
// and a link compiles the very same files instead of a copy.
import PackageDescription

func harness(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: dependencies + ["FuzzSupport"], path: "Harnesses/\(name)")
}

let package = Package(
    name: "RawFXFuzz",
    dependencies: [
        // The engine logs through swift-log (docs/observability.md), as in the main package.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(name: "CRawFX", path: "Sources/CRawFX"),
        .systemLibrary(name: "CLibPNG", path: "Sources/CLibPNG", pkgConfig: "libpng"),
        .target(name: "RawFXRuntime", dependencies: ["CRawFX", "RawFXIsolationChannel"], path: "Sources/RawFXRuntime"),
        .target(name: "RawFXIsolationChannel", dependencies: ["CRawFX"], path: "Sources/RawFXIsolationChannel"),
        .target(name: "RawFX", dependencies: ["CRawFX", "RawFXRuntime", .product(name: "Logging", package: "swift-log")],
                path: "Sources/RawFX"),
        .target(name: "RawFXMedia", dependencies: ["RawFX", "CLibPNG"], path: "Sources/RawFXMedia"),
        .target(name: "RawFXPluginKit", dependencies: ["CRawFX"], path: "Sources/RawFXPluginKit"),
        .target(name: "FuzzSupport", dependencies: ["RawFXMedia"], path: "Harnesses/FuzzSupport"),

        harness("FuzzY4M", ["RawFXMedia"]),
        harness("FuzzWAV", ["RawFXMedia"]),
        harness("FuzzWatermarkPNG", ["RawFXPluginKit", "CLibPNG"]),
        harness("FuzzChain", ["RawFX"]),
    ]
)

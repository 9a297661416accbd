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

/// -sanitize=fuzzer,address reaches Swift code only: the C of the isolation protocol's host side
/// gets coverage and AddressSanitizer with these (FuzzIsolationProtocol).
let instrumentedC: [CSetting] = [.unsafeFlags(["-fsanitize=fuzzer-no-link,address"])]

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
        .target(name: "RawFXRuntime", dependencies: ["CRawFX", "RawFXIsolationChannel"], path: "Sources/RawFXRuntime",
                cSettings: instrumentedC),
        .target(name: "RawFXIsolationChannel", dependencies: ["CRawFX"], path: "Sources/RawFXIsolationChannel",
                cSettings: instrumentedC),
        .target(name: "RawFX", dependencies: ["CRawFX", "RawFXRuntime", .product(name: "Logging", package: "swift-log")],
                path: "Sources/RawFX"),
        .target(name: "RawFXMedia", dependencies: ["RawFX", "CLibPNG"], path: "Sources/RawFXMedia"),
        .target(name: "RawFXPluginKit", dependencies: ["CRawFX"], path: "Sources/RawFXPluginKit"),
        // -sanitize=address reaches Swift code only, so the counters' C cannot see it: told here,
        // they count through the sanitizer's hooks instead of interposing malloc and
        // pthread_create (which broke AddressSanitizer's own threads).
        .target(name: "RawFXAllocCounter", path: "Sources/RawFXAllocCounter",
                cSettings: [.define("RAWFX_UNDER_SANITIZER", to: "1"), .define("RAWFX_RT_UNDER_SANITIZER", to: "1")]),
        .target(name: "RawFXValidate", dependencies: ["RawFX", "RawFXRuntime", "RawFXAllocCounter"], path: "Sources/RawFXValidate"),
        .target(name: "FuzzSupport", dependencies: ["RawFXMedia"], path: "Harnesses/FuzzSupport"),
        // The host's side of an isolated stage and a hostile helper in one process: C, for
        // the proxy's private header (isolation_internal.h).
        .target(name: "FuzzIsolationHost", dependencies: ["RawFXRuntime", "RawFXIsolationChannel"],
                path: "Harnesses/FuzzIsolationHost", cSettings: [.headerSearchPath("../../Sources/RawFXRuntime")] + instrumentedC),

        harness("FuzzY4M", ["RawFXMedia"]),
        harness("FuzzWAV", ["RawFXMedia"]),
        harness("FuzzWatermarkPNG", ["RawFXPluginKit", "CLibPNG"]),
        harness("FuzzChain", ["RawFX"]),
        harness("FuzzPluginDescriptors", ["RawFXValidate"]),
        harness("FuzzIsolationProtocol", ["FuzzIsolationHost"]),
    ]
)

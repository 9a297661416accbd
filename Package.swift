// swift-tools-version:6.0
//
// RawFX: a frame-effects engine for the raw-data hooks of video SDKs.
//
// Platforms: Linux (built and tested on Debian 12, x86-64, Swift 6.3). The SDKs it serves run
// bots on Linux, and the engine uses Linux itself: futexes, seccomp and prctl for isolated
// stages, ELF plugins (`.so`), glibc's malloc interposition for the allocation counts. It
// does not build on macOS, and no Apple platform is declared.
//
// Layout
//   Sources/CRawFX          the plugin ABI: one C99 header, rawfx.h
//   Sources/RawFXRuntime    the host object plugins call (log ring, callbacks, thread pool), in C,
//                           and the engine's side of an isolated stage (iso_*.c: channel, log,
//                           supervisor, handshake, proxy, audio, group)
//   Sources/RawFXIsolationChannel  the channel an isolated stage's two processes share (layout, futex)
//   Sources/RawFXIsolateHelper     the helper's half of an isolated stage, linked by rawfx-isolate only
//   Sources/RawFX           the engine: typed Swift over the ABI, loader, chains (no SDK code)
//   Sources/RawFXSDK        the SDK layer: Zoom-style hook protocols and the adapters that run chains at them
//   Sources/RawFXObservability  swift-metrics export of the engine's and hooks' figures
//   Sources/RawFXValidate   the conformance checker behind `rawfx validate`
//   Sources/RawFXMedia      Y4M, WAV, PNG and test signals (files and pipes, the demo)
//   Sources/RawFXEmulator   an SDK session that drives the hooks with the SDK's contracts
//   Sources/RawFXPluginKit  write a filter in Swift: a protocol and one line of export
//   Sources/RawFXEmbed      librawfx.so: the engine behind a C API (Sources/CRawFXEmbed: its header)
//   Sources/rawfx           the command-line tool
//   Sources/rawfx-isolate   the helper process of an isolated stage (docs/isolation.md)
//   Sources/C*              system libraries: libyuv, SpeexDSP, libpng, FreeType, HarfBuzz
//   Plugins/*               one folder per plugin .so, loaded at run time; the same code is linked
//                           into an app by the RawFX product (Sources/RawFXBuiltins, Plugins/Entries)
//   Benchmarks/bench        `swift run -c release bench`
//   Tests/RawFX*Tests       one test target per layer: Engine, Runtime (C host, isolation), SDK,
//                           Plugin (plugins and kernels), Process (CLI, C API, validator),
//                           Compose, Text; Tests/RawFXTestSupport what they share, Tests/Fixtures
//                           the C sources they compile
import PackageDescription

/// The packaging build (scripts/build-release.sh sets RAWFX_PACKAGING=1, with
/// `-c release -Xswiftc -static-stdlib` and its own scratch path): librawfx gets its SONAME
/// (librawfx.so.1) and a version script that exports the C API and nothing else; each plugin
/// exports its entry point only, so the Swift runtime linked statically into it stays its own.
/// Off by default: unsafe flags would keep a package that depends on RawFX from building.
let packaging = Context.environment["RAWFX_PACKAGING"] == "1"
let packageRoot = Context.packageDirectory
func packagingLinkerFlags(_ flags: [String]) -> [LinkerSetting] {
    packaging ? [.unsafeFlags(flags)] : []
}
let pluginLinkerFlags = packagingLinkerFlags(["-Xlinker", "--version-script=\(packageRoot)/Plugins/plugin.map"])

/// A plugin is a dynamic library product: SwiftPM builds it as lib<name>.so next to
/// the executables, where the loader looks by default. Its code (`target`) is also a built-in
/// (RawFXBuiltins), so the .so alone adds `<target>Entry`: the ABI's one export over the
/// plugin's own entry name (Plugins/Entries).
func plugin(_ name: String, target: String) -> Product {
    .library(name: name, type: .dynamic, targets: [target, target + "Entry"])
}
/// A built-in plugin's C code: its symbols are named after it (`rawfx_<prefix>_…`,
/// rawfx/plugin_helpers.h), so several plugins fit in one image.
func builtinSymbols(_ prefix: String) -> [CSetting] {
    [.define("RAWFX_PLUGIN_SYMBOL_PREFIX", to: "rawfx_" + prefix)]
}
/// The .so's export target of a plugin (`<plugin>Entry`, Plugins/Entries/<folder>).
func pluginEntry(_ plugin: String, folder: String) -> Target {
    .target(name: plugin + "Entry", dependencies: ["CRawFX", .target(name: plugin)], path: "Plugins/Entries/" + folder)
}
/// Every shipped plugin: its .so (product), its code (target, also a built-in), its entry folder.
let shippedPlugins: [(product: String, target: String, folder: String)] = [
    ("RawFXWatermark", "WatermarkPlugin", "Watermark"),
    ("RawFXYUV", "YUVPlugin", "YUV"),
    ("RawFXSpeex", "SpeexPlugin", "Speex"),
    ("RawFXBasics", "BasicsPlugin", "Basics"),
    ("RawFXSpeech", "SpeechPlugin", "Speech"),
    ("RawFXText", "TextPlugin", "Text"),
]

let package = Package(
    name: "RawFX",
    products: [
        .executable(name: "rawfx", targets: ["rawfx"]),
        .executable(name: "bench", targets: ["bench"]),
        // The helper process of an isolated stage (`name@isolate`), found beside the engine.
        .executable(name: "rawfx-isolate", targets: ["rawfx-isolate"]),
        // The engine, and with it every built-in plugin, registered before main: an app that
        // depends on this product gets them all from PluginRegistry() (docs/embedding.md, "Swift
        // apps"). The package's own executables, librawfx and tests link the RawFX target alone.
        .library(name: "RawFX", targets: ["RawFX", "RawFXBuiltins"]),
        .library(name: "RawFXSDK", targets: ["RawFXSDK"]),
        // A session emulator apps drive their own integration tests with (as swift-nio ships NIOEmbedded).
        .library(name: "RawFXEmulator", targets: ["RawFXEmulator"]),
        .library(name: "RawFXMedia", targets: ["RawFXMedia"]),
        // The compositor: many received streams into one program (docs/compose.md).
        .library(name: "RawFXCompose", targets: ["RawFXCompose"]),
        .library(name: "RawFXPluginKit", targets: ["RawFXPluginKit"]),
        .library(name: "RawFXValidate", targets: ["RawFXValidate"]),
        // Engine and hook figures exported through swift-metrics (docs/observability.md).
        .library(name: "RawFXObservability", targets: ["RawFXObservability"]),
        // The C API for embedding (rawfx_embed.h), for C, C++ and Python hosts: libRawFXEmbed.so,
        // installed as librawfx.so (a product named `rawfx` would clash with the command; the
        // library has no SONAME, so a program linked with -lrawfx needs librawfx.so).
        .library(name: "RawFXEmbed", type: .dynamic, targets: ["RawFXEmbed"]),
    ] + shippedPlugins.map { plugin($0.product, target: $0.target) },
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        // The ABI header (and compile-time checks of its layout).
        .target(name: "CRawFX", path: "Sources/CRawFX"),

        // System libraries (scripts/bootstrap installs them).
        .systemLibrary(name: "CLibYUV", path: "Sources/CLibYUV",
                       providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CSpeexDSP", path: "Sources/CSpeexDSP", pkgConfig: "speexdsp",
                       providers: [.apt(["libspeexdsp-dev"])]),
        .systemLibrary(name: "CLibPNG", path: "Sources/CLibPNG", pkgConfig: "libpng",
                       providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CFreeType", path: "Sources/CFreeType", pkgConfig: "freetype2",
                       providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CHarfBuzz", path: "Sources/CHarfBuzz", pkgConfig: "harfbuzz",
                       providers: [.apt(["libharfbuzz-dev"])]),

        // The engine: the C runtime behind rawfx_host, then the Swift engine.
        .target(name: "RawFXRuntime", dependencies: ["CRawFX", "RawFXIsolationChannel"], path: "Sources/RawFXRuntime"),
        // An isolated stage's channel, what the engine and the helper agree on: the control
        // block's layout and the futex primitives (a header; its .c only checks the layout).
        .target(name: "RawFXIsolationChannel", dependencies: ["CRawFX"], path: "Sources/RawFXIsolationChannel"),
        // The helper's half of an isolated stage (its end of the channel, log forwarding,
        // seccomp): only rawfx-isolate links it, never the engine.
        .target(name: "RawFXIsolateHelper", dependencies: ["RawFXRuntime", "RawFXIsolationChannel"],
                path: "Sources/RawFXIsolateHelper"),
        // swift-log here: the engine's and plugins' lines leave the log ring as swift-log records.
        .target(name: "RawFX",
                dependencies: ["CRawFX", "RawFXRuntime", .product(name: "Logging", package: "swift-log")],
                path: "Sources/RawFX"),
        .target(name: "RawFXSDK",
                dependencies: ["RawFX", "RawFXCompose", "CLibYUV", .product(name: "DequeModule", package: "swift-collections")],
                path: "Sources/RawFXSDK"),
        // swift-metrics export of the engine's and hooks' counters, beside the engine so that
        // neither it nor librawfx links a metrics API it never calls on the frame path.
        .target(name: "RawFXObservability",
                dependencies: ["RawFX", "RawFXSDK", .product(name: "CoreMetrics", package: "swift-metrics")],
                path: "Sources/RawFXObservability"),
        .target(name: "RawFXValidate", dependencies: ["RawFX", "RawFXRuntime", "RawFXAllocCounter"],
                path: "Sources/RawFXValidate"),
        .target(name: "RawFXMedia", dependencies: ["RawFX", "CLibPNG"], path: "Sources/RawFXMedia"),
        .target(name: "RawFXEmulator", dependencies: ["RawFX", "RawFXSDK", "RawFXMedia"], path: "Sources/RawFXEmulator"),
        .target(name: "RawFXPluginKit", dependencies: ["CRawFX"], path: "Sources/RawFXPluginKit"),
        .target(name: "CRawFXEmbed", dependencies: ["CRawFX"], path: "Sources/CRawFXEmbed"),
        .target(name: "RawFXEmbed", dependencies: ["RawFX", "RawFXSDK", "RawFXCompose", "CRawFXEmbed"], path: "Sources/RawFXEmbed",
                exclude: ["librawfx.map"],
                linkerSettings: packagingLinkerFlags(["-Xlinker", "-soname=librawfx.so.1",
                                                      "-Xlinker", "--version-script=\(packageRoot)/Sources/RawFXEmbed/librawfx.map"])),
        .executableTarget(
            name: "rawfx",
            dependencies: ["RawFX", "RawFXSDK", "RawFXMedia", "RawFXEmulator", "RawFXValidate", "RawFXObservability",
                           "RawFXCompose",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "CoreMetrics", package: "swift-metrics")],
            path: "Sources/rawfx"),

        // docs/production.md's recording bot in Swift: the emulated meeting to a Y4M/WAV pipe or the PS sender.
        .executableTarget(name: "recording-bot",
                          dependencies: ["RawFX", "RawFXSDK", "RawFXCompose", "RawFXEmulator", "RawFXMedia"],
                          path: "docs/examples/RecordingBot"),

        .executableTarget(name: "rawfx-isolate",
                         dependencies: ["RawFX", "RawFXRuntime", "RawFXIsolationChannel", "RawFXIsolateHelper",
                                        .product(name: "Logging", package: "swift-log")],
                         path: "Sources/rawfx-isolate"),

        // The plane scaler (libyuv's arithmetic, SIMD chosen at run time) and the kernel-level
        // choice: linked into the YUV plugin's `scale` and into the compositor, hidden in each.
        .target(name: "RawFXScaleKernels", path: "Sources/RawFXScaleKernels",
                linkerSettings: [.linkedLibrary("yuv")]),

        // The compositor's frame: tiles and background as thread-pool jobs (C, over the scale kernels).
        .target(name: "RawFXComposeKernels", dependencies: ["RawFXScaleKernels"], path: "Sources/RawFXComposeKernels"),
        // Many streams into one picture and one mix: layouts, the steady clock, placeholders.
        .target(name: "RawFXCompose",
                dependencies: ["RawFX", "RawFXRuntime", "RawFXComposeKernels", "RawFXScaleKernels"],
                path: "Sources/RawFXCompose"),

        // Counts heap allocations per thread (malloc interposition) for tests and bench.
        .target(name: "RawFXAllocCounter", path: "Sources/RawFXAllocCounter"),

        // Plugins: each is its own .so, and a built-in of an app linked with the RawFX product.
        .target(name: "RawFXBuiltins",
                dependencies: ["RawFXRuntime"] + shippedPlugins.map { .target(name: $0.target) },
                path: "Sources/RawFXBuiltins"),
        .target(name: "WatermarkPlugin", dependencies: ["RawFXPluginKit", "CLibPNG", "CLibYUV", "WatermarkKernels"],
                path: "Plugins/Watermark", linkerSettings: pluginLinkerFlags),
        // The watermark's SIMD row blends (C: run-time CPU dispatch), linked into its .so.
        .target(name: "WatermarkKernels", path: "Plugins/WatermarkKernels"),
        // C targets do not inherit a system module's `link`: name the library here.
        .target(name: "YUVPlugin", dependencies: ["CRawFX", "CLibYUV", "RawFXScaleKernels"], path: "Plugins/YUV",
                cSettings: builtinSymbols("yuv"), linkerSettings: [.linkedLibrary("yuv")] + pluginLinkerFlags),
        .target(name: "SpeexPlugin", dependencies: ["CRawFX", "CSpeexDSP"], path: "Plugins/Speex",
                cSettings: builtinSymbols("speex"), linkerSettings: [.linkedLibrary("speexdsp")] + pluginLinkerFlags),
        // The text filter: its layout, rendering and blending (C over FreeType and HarfBuzz) are
        // a target of their own, linked into its .so and into RawFXTextTests.
        .target(name: "TextKernels", dependencies: ["CFreeType", "CHarfBuzz"], path: "Plugins/TextKernels",
                linkerSettings: [.linkedLibrary("freetype"), .linkedLibrary("harfbuzz")]),
        .target(name: "TextPlugin", dependencies: ["CRawFX", "TextKernels"], path: "Plugins/Text",
                cSettings: builtinSymbols("text"), linkerSettings: [.linkedLibrary("freetype"), .linkedLibrary("harfbuzz")] + pluginLinkerFlags),
        .target(name: "BasicsPlugin", dependencies: ["RawFXPluginKit"], path: "Plugins/Basics", linkerSettings: pluginLinkerFlags),
        // dfn and rnnoise: their libraries (PyPI wheels) are opened with dlopen, never linked.
        .target(name: "SpeechPlugin", dependencies: ["CRawFX", "CSpeexDSP"], path: "Plugins/Speech",
                cSettings: builtinSymbols("speech"), linkerSettings: [.linkedLibrary("speexdsp"), .linkedLibrary("dl"), .linkedLibrary("pthread")] + pluginLinkerFlags),

        .executableTarget(
            name: "bench",
            dependencies: ["RawFX", "RawFXRuntime", "RawFXSDK", "RawFXMedia", "RawFXAllocCounter", "CLibYUV", "CSpeexDSP", "CBenchPeers", "RawFXCompose",
                           "RawFXEmulator"],
            path: "Benchmarks/bench"),
        // FFmpeg for `bench --peers`, opened with dlopen at run time (never linked).
        .target(name: "CBenchPeers", path: "Benchmarks/CBenchPeers", linkerSettings: [.linkedLibrary("dl")]),

        // The compositor's own tests: its only engine dependency besides RawFX is the YUV plugin
        // (the reference for every tile), found in the build folder like any plugin.
        .testTarget(
            name: "RawFXComposeTests",
            dependencies: ["RawFXCompose", "RawFX", "RawFXRuntime", "RawFXAllocCounter"],
            path: "Tests/RawFXComposeTests"),
        // The text plugin against FreeType and HarfBuzz called directly (docs/plugins/text.md).
        .testTarget(
            name: "RawFXTextTests",
            dependencies: ["RawFX", "RawFXAllocCounter", "TextKernels", "CFreeType", "CHarfBuzz"],
            path: "Tests/RawFXTextTests"),
        // What the test targets share (fixtures, plugin compilation, the `rawfx` binary, direct
        // plugin drivers); built with testing enabled and imported `@testable`. Tests/Fixtures
        // holds the C sources and headers the tests compile.
        .target(
            name: "RawFXTestSupport",
            dependencies: ["RawFX", "RawFXSDK", "RawFXMedia", "RawFXEmulator", "RawFXRuntime", "RawFXAllocCounter", "CSpeexDSP"],
            path: "Tests/RawFXTestSupport"),
        // The engine: chains, negotiation, run-time control, the plugin helpers and PluginKit,
        // trust, terminal text, media files.
        .testTarget(
            name: "RawFXEngineTests",
            dependencies: ["RawFXTestSupport", "RawFX", "RawFXSDK", "RawFXMedia", "RawFXAllocCounter", "RawFXRuntime",
                           "CSpeexDSP", "CLibPNG"],
            path: "Tests/RawFXEngineTests"),
        // The runtime in C: the host object, the thread pool, isolated stages and groups.
        .testTarget(
            name: "RawFXRuntimeTests",
            dependencies: ["RawFXTestSupport", "RawFX", "RawFXSDK", "RawFXMedia", "RawFXEmulator", "RawFXAllocCounter",
                           "RawFXRuntime"],
            path: "Tests/RawFXRuntimeTests"),
        // The SDK layer: every hook against the emulator's contracts, the program, observability.
        .testTarget(
            name: "RawFXSDKTests",
            dependencies: ["RawFXTestSupport", "RawFX", "RawFXSDK", "RawFXMedia", "RawFXEmulator", "RawFXAllocCounter",
                           "RawFXCompose", "RawFXObservability", "CLibYUV",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "InMemoryLogging", package: "swift-log"),
                           .product(name: "MetricsTestKit", package: "swift-metrics")],
            path: "Tests/RawFXSDKTests"),
        // The shipped plugins and their kernels against libyuv, SpeexDSP and the models called directly.
        .testTarget(
            name: "RawFXPluginTests",
            dependencies: ["RawFXTestSupport", "RawFX", "RawFXSDK", "RawFXMedia", "RawFXEmulator", "RawFXAllocCounter",
                           "CLibYUV", "CSpeexDSP", "CLibPNG"],
            path: "Tests/RawFXPluginTests"),
        // Whole processes and files: the rawfx command, librawfx's C API (C and C++ programs
        // compiled against it), the validator, the loader's files.
        .testTarget(
            name: "RawFXProcessTests",
            dependencies: ["RawFXTestSupport", "RawFX", "RawFXSDK", "RawFXMedia", "RawFXAllocCounter", "RawFXValidate",
                           "RawFXRuntime", "RawFXEmbed", "RawFXCompose", "CSpeexDSP"],
            path: "Tests/RawFXProcessTests"),
    ] + shippedPlugins.map { pluginEntry($0.target, folder: $0.folder) }
)

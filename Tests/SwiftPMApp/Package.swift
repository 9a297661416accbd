// swift-tools-version:6.0
//
// A new app that depends on RawFX by path, as an app depends on it by URL: its one executable,
// builtins-check, lists every built-in filter with PluginRegistry() and no RAWFX_PLUGIN_PATH and
// runs a video and an audio chain through them (issue #28, item 5). .ci/run builds it in its own
// scratch path and runs it against the main build's plugin folder:
//     swift build --package-path Tests/SwiftPMApp --scratch-path .build-swiftpm-app
//     env -u RAWFX_PLUGIN_PATH .build-swiftpm-app/debug/builtins-check .build/debug
import PackageDescription

let package = Package(
    name: "SwiftPMApp",
    dependencies: [
        // `name:`: a path dependency's identity is its folder's name (the clone's, here), and
        // the product below names the package RawFX.
        .package(name: "RawFX", path: "../.."),
    ],
    targets: [
        // libyuv called directly: the reference for the `scale` the built-in YUV plugin runs.
        .systemLibrary(name: "CYUVReference", path: "Sources/CYUVReference"),
        .executableTarget(name: "builtins-check",
                          dependencies: [.product(name: "RawFX", package: "RawFX"), "CYUVReference"],
                          path: "Sources/BuiltinsCheck"),
    ]
)

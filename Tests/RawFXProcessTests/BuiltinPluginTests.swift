#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import RawFX
import RawFXRuntime
@testable import RawFXTestSupport
import XCTest

/// Built-in plugins (rawfx_builtins.h): loaded before the search path, the id-clash rule
/// against them, and a file that is a built-in again. The test binary links no built-in (the
/// RawFX target alone; Tests/SwiftPMApp links them all through the RawFX product), so each test
/// stands a plugin file in for one: its entry, reached by dlsym, in a registration record.
final class BuiltinPluginTests: XCTestCase {
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// A built-in record whose entry is `path`'s. Never freed: the loader keys the plugin by the
    /// record's address for the life of the process, as it does a real built-in's static record.
    func builtinRecord(standingInFor path: String) throws -> UnsafePointer<rawfx_builtin_plugin> {
        let handle = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE), path)
        let symbol = try XCTUnwrap(dlsym(handle, RAWFX_ENTRY_SYMBOL), "\(path) exports no entry")
        let record = UnsafeMutablePointer<rawfx_builtin_plugin>.allocate(capacity: 1)
        record.initialize(to: rawfx_builtin_plugin(library_name: UnsafePointer(strdup(fileName(of: path))),
                                                   get_entry: unsafeBitCast(symbol, to: rawfx_get_plugin_entry_fn.self),
                                                   next: nil))
        return UnsafePointer(record)
    }

    func testTheTestBinaryLinksNoBuiltinSoTheBuildFolderPluginsAreFiles() {
        XCTAssertEqual(PluginRegistry.registeredBuiltins.count, 0)
        XCTAssertEqual(builtPlugins.builtinCopies, [])
        XCTAssertFalse(builtPlugins.libraries.contains { $0.isBuiltin })
    }

    /// The same plugin (plugin name) found again as a file: never initialised, listed as a copy,
    /// and its filters come from the built-in, which was initialised once.
    func testAFileThatIsABuiltinAgainIsNotInitialisedAndListedAsACopy() throws {
        let builtinFile = try compileCPlugin(fixtureSource, into: directory, name: "builtin.so")
        let onPath = directory.appendingPathComponent("path")
        try FileManager.default.createDirectory(at: onPath, withIntermediateDirectories: false)
        let copy = try compileCPlugin(fixtureSource, into: onPath, name: "copy.so")

        let registry = PluginRegistry(builtins: [try builtinRecord(standingInFor: builtinFile)],
                                      environment: [PluginRegistry.environmentVariable: onPath.path])
        let stamp = try registry.filterType("stamp")
        XCTAssertTrue(stamp.library.isBuiltin)
        XCTAssertEqual(stamp.library.name, "fixture")
        // A built-in's path is the image it is linked into: here the stand-in's own file.
        XCTAssertEqual(stamp.library.path, builtinFile)
        XCTAssertEqual(registry.builtinCopies, [.copyOfBuiltin(path: copy, plugin: "fixture")])
        XCTAssertEqual(registry.builtinCopies[0].description,
                       "\(copy): not loaded: it is plugin 'fixture', which this program has built in; its filters come from the built-in")
        XCTAssertEqual(registry.clashes, [])
        XCTAssertEqual(registry.failures, [])
        XCTAssertEqual(try FixtureProbe(copy).initCalls, 0)
        XCTAssertEqual(try FixtureProbe(builtinFile).initCalls, 1)
        // Asked for by name, the copy is an error with the same words.
        XCTAssertThrowsError(try registry.load(path: copy)) { error in
            XCTAssertEqual(error as? PluginLoadError, .copyOfBuiltin(path: copy, plugin: "fixture"))
        }
        // A registry without built-ins loads the same file as any plugin.
        let plain = PluginRegistry.empty(environment: [:])
        XCTAssertFalse(try plain.load(path: copy).isBuiltin)
        XCTAssertEqual(try FixtureProbe(copy).initCalls, 1)
    }

    /// The build folder's YUV plugin standing in for the built-in `rawfx-yuv`: its file on the
    /// path (next to the executable) is a copy, `mirror` runs through the built-in and is the
    /// picture flipped left to right, and a different plugin claiming `scale` is refused as a
    /// clash even from earlier on the path.
    func testADifferentPluginClaimingABuiltinsIDIsAClashAndTheBuiltinKeepsIt() throws {
        let yuv = try XCTUnwrap(builtPlugins.libraries.first { $0.name == "rawfx-yuv" }, "libRawFXYUV.so is built").path
        let third = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ID=\"scale\"", "FIXTURE_SECOND_ID=\"extra\""],
                                       into: directory, name: "third.so")
        let registry = PluginRegistry(builtins: [try builtinRecord(standingInFor: yuv)],
                                      environment: [PluginRegistry.environmentVariable: directory.path])
        let scale = try registry.filterType("scale")
        XCTAssertTrue(scale.library.isBuiltin)
        XCTAssertEqual(registry.clashes, [FilterIDClash(id: "scale", skippedPath: third, keptPath: yuv, keptIsBuiltin: true)])
        XCTAssertEqual(registry.clashes[0].description,
                       "filter 'scale' of \(third) is skipped: a plugin built into \(yuv) already provides it")
        XCTAssertEqual(try registry.filterType("extra").library.path, third)
        XCTAssertEqual(registry.builtinCopies.map(\.path), [yuv])
        XCTAssertEqual(registry.failures, [])
        // Every filter of the build folder is there once, the built-in's included.
        XCTAssertEqual(Set(registry.filterTypes.map(\.id)), Set(builtPlugins.filterTypes.map(\.id) + ["extra"]))

        XCTAssertTrue(try registry.filterType("mirror").library.isBuiltin)
        let input = patternBuffer(width: 90, height: 50, seed: 5)
        let chain = try VideoChain("mirror", registry: registry)
        try withExtendedLifetime(input) {
            let out = try chain.process(input.frame)
            for p in 0..<3 {
                let (w, h) = input.frame.planeSize(p)
                let source = planeBytes(input.frame, p)
                let flipped = (0..<h).flatMap { y in (0..<w).map { x in source[y * w + w - 1 - x] } }
                XCTAssertEqual(planeBytes(out, p), flipped, "plane \(p)")
            }
        }
    }
}

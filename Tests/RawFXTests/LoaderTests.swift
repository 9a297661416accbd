import Foundation
import RawFX
import XCTest

/// Every loader error, and the ABI version check in both directions.
final class LoaderTests: XCTestCase {
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func load(_ path: String) -> PluginLoadError? {
        do {
            let registry = PluginRegistry()
            try registry.load(path: path)
            return nil
        } catch {
            return error
        }
    }

    func testMissingFileNamesThePath() {
        let path = directory.appendingPathComponent("nope.so").path
        XCTAssertEqual(load(path), .notFound(path: path))
        XCTAssertEqual(load(path)?.description, "\(path): no such plugin file")
    }

    func testTextFileIsNotASharedObject() throws {
        let path = directory.appendingPathComponent("fake.so").path
        try "not an ELF file".write(toFile: path, atomically: true, encoding: .utf8)
        guard case .notSharedObject(let p, let reason)? = load(path) else { return XCTFail("expected notSharedObject") }
        XCTAssertEqual(p, path)
        XCTAssertFalse(reason.isEmpty)
    }

    func testLibraryWithoutEntrySymbol() throws {
        let path = try compileCPlugin(fixtureSource, defines: ["FIXTURE_NO_ENTRY"], into: directory, name: "noentry.so")
        XCTAssertEqual(load(path), .missingEntrySymbol(path: path))
        XCTAssertTrue(load(path)!.description.contains("rawfx_get_plugin_entry"))
    }

    func testHostRefusesAnotherMajor() throws {
        let path = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ABI_MAJOR=2"], into: directory, name: "major.so")
        XCTAssertEqual(load(path), .abiMajorMismatch(path: path, plugin: ABIVersion(major: 2, minor: 0), host: .host))
        XCTAssertTrue(load(path)!.description.contains("plugin ABI 2.0"))
        XCTAssertTrue(load(path)!.description.contains("host ABI \(ABIVersion.host)"))
    }

    func testHostRefusesANewerMinor() throws {
        let path = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ABI_MINOR=99"], into: directory, name: "minor.so")
        XCTAssertEqual(load(path), .newerMinorVersion(path: path, plugin: ABIVersion(major: 1, minor: 99), host: .host))
    }

    func testPluginRefusesTheHost() throws {
        let path = try compileCPlugin(fixtureSource, defines: ["FIXTURE_REFUSE_HOST"], into: directory, name: "refuse.so")
        XCTAssertEqual(load(path), .refusedHost(path: path, message: "needs host ABI 1.\(ABIVersion.host.minor + 1) or newer, host has \(ABIVersion.host)"))
    }

    func testDuplicateFilterIDAcrossFiles() throws {
        let first = try compileCPlugin(fixtureSource, into: directory, name: "a.so")
        let second = try compileCPlugin(fixtureSource, into: directory, name: "b.so")
        let registry = PluginRegistry()
        try registry.load(path: first)
        XCTAssertThrowsError(try registry.load(path: second)) { error in
            XCTAssertEqual(error as? PluginLoadError, .duplicateFilterID(id: "stamp", path: second, firstPath: first))
        }
        XCTAssertEqual(registry.libraries.count, 1)
    }

    func testMalformedDescriptors() throws {
        let badDefault = try compileCPlugin(fixtureSource, defines: ["FIXTURE_BAD_DEFAULT"], into: directory, name: "default.so")
        guard case .malformedDescriptor(_, let reason)? = load(badDefault) else { return XCTFail("expected malformed") }
        XCTAssertEqual(reason, "filter 'stamp', parameter 'value': default 500.0 lies outside [0.0, 100.0]")

        let badID = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ID=\"Bad Id\""], into: directory, name: "id.so")
        guard case .malformedDescriptor(_, let idReason)? = load(badID) else { return XCTFail("expected malformed") }
        XCTAssertTrue(idReason.contains("'Bad Id'"), idReason)
    }

    func testScanRecordsBrokenFilesAndKeepsGoing() throws {
        _ = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ABI_MAJOR=2"], into: directory, name: "a-broken.so")
        _ = try compileCPlugin(invertSource, into: directory, name: "b-invert.so")
        try "junk".write(to: directory.appendingPathComponent("c-junk.so"), atomically: true, encoding: .utf8)
        let registry = PluginRegistry()
        registry.scan([directory.path])
        XCTAssertNotNil(try? registry.filterType("invert"))
        let failed = Set(registry.failures.map { fileNameOf($0.path) })
        XCTAssertEqual(failed, ["a-broken.so", "c-junk.so"])
    }

    func testSearchPathOrder() {
        let path = PluginRegistry.searchPath(explicit: ["/explicit"], environment: ["RAWFX_PLUGIN_PATH": "/env/a:/env/b"])
        XCTAssertEqual(Array(path.prefix(3)), ["/explicit", "/env/a", "/env/b"])
        XCTAssertEqual(path.count, 4, "the executable's directory comes last")
    }

    func testBuiltPluginsAreFoundNextToTheExecutable() throws {
        let ids = builtPlugins.filterTypes.map(\.id)
        for id in ["null", "copy", "gain"] { XCTAssertTrue(ids.contains(id), "\(id) missing from \(ids)") }
        XCTAssertEqual(builtPlugins.failures, [])
    }

    func testDescriptorsAreReadWithoutAnInstance() throws {
        let gain = try builtPlugins.filterType("gain")
        XCTAssertEqual(gain.mediaKind, .audio)
        XCTAssertEqual(gain.processing, .inPlace)
        let db = try XCTUnwrap(gain.parameter(named: "db"))
        XCTAssertEqual(db.type, .float)
        XCTAssertEqual(db.unit, "dB")
        XCTAssertEqual(db.range, -60...40)
        XCTAssertEqual(db.defaultValue, .float(0))
        XCTAssertFalse(db.help.isEmpty)
    }

    private func fileNameOf(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RawFX
import RawFXSDK
import XCTest
@testable import RawFXTestSupport

/// The loader's trust rule (`PluginTrust`): regular files that only root and the current user
/// can change, in directories only they can change (sticky ones excepted), as ld.so and
/// OpenSSH judge; the override variable; and a FIFO on the plugin path never opened.
final class TrustTests: XCTestCase {
    var directory: URL!
    let user = geteuid()

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// A working plugin at `directory/sub/name` (sub created with `subMode` when given).
    func plugin(_ name: String = "p.so", in sub: String? = nil, subMode: Int = 0o755) throws -> String {
        var folder = directory!
        if let sub {
            folder = folder.appendingPathComponent(sub)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            try chmod(folder.path, subMode)
        }
        return try compileCPlugin(fixtureSource, into: folder, name: name)
    }

    func chmod(_ path: String, _ mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    func chown(_ path: String, to uid: uid_t) throws {
        guard Glibc.chown(path, uid, gid_t.max) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
    }

    /// nobody's uid: a user other than root and the test's.
    var otherUser: uid_t { getpwnam("nobody")?.pointee.pw_uid ?? 65534 }

    func requireRoot() throws {
        guard user == 0 else { throw XCTSkip("changing a file's owner needs root") }
    }

    func load(_ path: String, environment: [String: String] = [:]) -> PluginLoadError? {
        do {
            try PluginRegistry.empty(environment: environment).load(path: path)
            return nil
        } catch {
            return error
        }
    }

    func canonical(_ path: String) -> String { URL(fileURLWithPath: path).resolvingSymlinksInPath().path }

    func violation(_ path: String, directory: Bool = false, owner: uid_t? = nil, mode: Int,
                   _ rule: TrustViolation.Rule) -> TrustViolation {
        TrustViolation(path: canonical(path), isDirectory: directory, ownerUID: owner ?? user,
                       mode: UInt32(mode) | (directory ? UInt32(S_IFDIR) : UInt32(S_IFREG)), rule: rule, user: user)
    }

    // MARK: Files

    func testTrustedFileLoads() throws {
        XCTAssertNil(load(try plugin()))
    }

    func testFileOwnedByAnotherUserIsRefused() throws {
        try requireRoot()
        let path = try plugin()
        try chown(path, to: otherUser)
        let error = load(path)
        XCTAssertEqual(error, .untrusted(path: path, violation: violation(path, owner: otherUser, mode: 0o755, .ownedByAnotherUser)))
        XCTAssertEqual(error?.description,
                       "\(path): not loaded: file \(canonical(path)) is owned by uid \(otherUser), not by root or uid 0 (mode 0755); "
                       + "a plugin file and every directory above it must be owned by root or uid 0 and not writable by "
                       + "group or others (a sticky directory such as /tmp excepted); set RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 to load it anyway")
    }

    func testGroupWritableFileIsRefused() throws {
        let path = try plugin()
        try chmod(path, 0o775)
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(path, mode: 0o775, .writableByGroup)))
        XCTAssertTrue(load(path)!.description.contains("is writable by its group (owner uid \(user), mode 0775)"))
    }

    func testOtherWritableFileIsRefused() throws {
        let path = try plugin()
        try chmod(path, 0o757)
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(path, mode: 0o757, .writableByOthers)))
    }

    // MARK: Directories

    func testGroupWritableDirectoryIsRefused() throws {
        let path = try plugin(in: "shared", subMode: 0o775)
        let folder = directory.appendingPathComponent("shared").path
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(folder, directory: true, mode: 0o775, .writableByGroup)))
        XCTAssertTrue(load(path)!.description.contains("directory \(canonical(folder)) is writable by its group"))
    }

    func testWorldWritableDirectoryWithoutTheStickyBitIsRefused() throws {
        let path = try plugin(in: "open", subMode: 0o777)
        let folder = directory.appendingPathComponent("open").path
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(folder, directory: true, mode: 0o777, .writableByOthers)))
    }

    func testStickyWorldWritableDirectoryIsAcceptedForTheUsersOwnFile() throws {
        let path = try plugin(in: "sticky", subMode: 0o1777)
        XCTAssertNil(load(path))
    }

    func testStickyDirectoryDoesNotExcuseAFileOfAnotherUser() throws {
        try requireRoot()
        let path = try plugin(in: "sticky", subMode: 0o1777)
        try chown(path, to: otherUser)
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(path, owner: otherUser, mode: 0o755, .ownedByAnotherUser)))
    }

    func testDirectoryOwnedByAnotherUserIsRefused() throws {
        try requireRoot()
        let path = try plugin(in: "theirs")
        let folder = directory.appendingPathComponent("theirs").path
        try chown(folder, to: otherUser)
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(folder, directory: true, owner: otherUser,
                                                                               mode: 0o755, .ownedByAnotherUser)))
    }

    func testADirectoryHigherUpIsJudgedToo() throws {
        let outer = directory.appendingPathComponent("outer")
        try FileManager.default.createDirectory(at: outer.appendingPathComponent("inner"), withIntermediateDirectories: true)
        try chmod(outer.appendingPathComponent("inner").path, 0o755)
        try chmod(outer.path, 0o775)
        let path = try compileCPlugin(fixtureSource, into: outer.appendingPathComponent("inner"), name: "deep.so")
        XCTAssertEqual(load(path), .untrusted(path: path, violation: violation(outer.path, directory: true, mode: 0o775, .writableByGroup)))
    }

    func testASymlinkIsJudgedByWhereItLeads() throws {
        let path = try plugin(in: "shared", subMode: 0o775)
        let link = directory.appendingPathComponent("link.so").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let folder = directory.appendingPathComponent("shared").path
        XCTAssertEqual(load(link), .untrusted(path: link, violation: violation(folder, directory: true, mode: 0o775, .writableByGroup)))
    }

    // MARK: Override

    func testOverrideVariableLoadsAnUntrustedFile() throws {
        let path = try plugin()
        try chmod(path, 0o777)
        XCTAssertNil(load(path, environment: [PluginTrust.overrideVariable: "1"]))
        XCTAssertTrue(PluginRegistry.empty(environment: ["RAWFX_ALLOW_UNTRUSTED_PLUGINS": "1"]).allowsUntrustedPlugins)
        for value in ["0", "yes", ""] {
            guard case .untrusted? = load(path, environment: [PluginTrust.overrideVariable: value]) else {
                return XCTFail("\(PluginTrust.overrideVariable)=\(value) must not lift the rule")
            }
        }
    }

    func testTheOverrideAppliesToScansOfTheSearchPath() throws {
        let path = try plugin()
        try chmod(path, 0o666)
        let refused = try PluginRegistry(searchPath: [directory.path], environment: [:])
        XCTAssertEqual(refused.failures.map(\.path), [path])
        XCTAssertNil(try? refused.filterType("stamp"))
        let allowed = try PluginRegistry(searchPath: [directory.path], environment: [PluginTrust.overrideVariable: "1"])
        XCTAssertEqual(allowed.failures, [])
        XCTAssertNotNil(try? allowed.filterType("stamp"))
    }

    // MARK: Files that are not regular

    /// A FIFO named like a plugin would block an open for reading until a writer comes; the
    /// scan must report it without opening it, and load the rest.
    func testScanReportsAFIFOWithoutOpeningIt() throws {
        let fifo = directory.appendingPathComponent("a-fifo.so").path
        XCTAssertEqual(mkfifo(fifo, 0o644), 0, String(cString: strerror(errno)))
        let link = directory.appendingPathComponent("b-link-to-fifo.so").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: fifo)
        let folder = directory.appendingPathComponent("c-folder.so")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        _ = try plugin("d-good.so")

        let registry = try PluginRegistry(searchPath: [directory.path], environment: [:])

        XCTAssertEqual(registry.failures, [
            .notRegularFile(path: fifo, kind: "a FIFO"),
            .notRegularFile(path: link, kind: "a FIFO"),
            .notRegularFile(path: folder.path, kind: "a directory"),
        ])
        XCTAssertEqual(registry.failures[0].description, "\(fifo): not a regular file (a FIFO); not opened")
        XCTAssertNotNil(try? registry.filterType("stamp"), "the regular file after them loads")
        XCTAssertEqual(load(fifo), .notRegularFile(path: fifo, kind: "a FIFO"))
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RawFX
import RawFXSDK
import RawFXRuntime
import Synchronization
import XCTest
@testable import RawFXTestSupport

/// Every loader error, the ABI version check in both directions, growth by the plugin's own
/// struct sizes, init/deinit counts, one load per file, and filter id clashes.
final class LoaderTests: XCTestCase {
    var directory: URL!

    override func setUp() { directory = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func load(_ path: String) -> PluginLoadError? {
        do {
            try PluginRegistry.empty(environment: [:]).load(path: path)
            return nil
        } catch {
            return error
        }
    }

    func fixture(_ name: String, _ defines: String..., includeFirst: [URL] = []) throws -> String {
        try compileCPlugin(fixtureSource, defines: defines, includeFirst: includeFirst, into: directory, name: name)
    }

    /// A 16x8 frame through `chain` on `registry`; returns the first luma sample before and after.
    func firstLuma(through chain: String, _ registry: PluginRegistry) throws -> (before: UInt8, after: UInt8) {
        let chain = try VideoChain(chain, registry: registry)
        let buffer = patternBuffer(width: 16, height: 8)
        let before = buffer.frame.plane(0)[0]
        let out = try chain.process(buffer.frame)
        return (before, out.plane(0)[0])
    }

    // MARK: Errors

    func testMissingFileNamesThePath() {
        let path = directory.appendingPathComponent("nope.so").path
        XCTAssertEqual(load(path), .notFound(path: path))
        XCTAssertEqual(load(path)?.description, "\(path): no such plugin file or directory")
    }

    func testTextFileIsNotASharedObject() throws {
        let path = directory.appendingPathComponent("fake.so").path
        try "not an ELF file".write(toFile: path, atomically: true, encoding: .utf8)
        guard case .notSharedObject(let p, let reason)? = load(path) else { return XCTFail("expected notSharedObject") }
        XCTAssertEqual(p, path)
        XCTAssertFalse(reason.isEmpty)
    }

    func testLibraryWithoutEntrySymbol() throws {
        let path = try fixture("noentry.so", "FIXTURE_NO_ENTRY")
        XCTAssertEqual(load(path), .missingEntrySymbol(path: path))
        XCTAssertTrue(load(path)!.description.contains("rawfx_get_plugin_entry"))
    }

    func testHostRefusesAnotherMajor() throws {
        let path = try fixture("major.so", "FIXTURE_ABI_MAJOR=2", "FIXTURE_ABI_MINOR=0")
        XCTAssertEqual(load(path), .abiMajorMismatch(path: path, plugin: ABIVersion(major: 2, minor: 0), host: .host))
        XCTAssertTrue(load(path)!.description.contains("plugin ABI 2.0"))
        XCTAssertTrue(load(path)!.description.contains("host ABI \(ABIVersion.host)"))
    }

    func testEntrySmallerThanTheABI10SizeIsRefused() throws {
        let path = try fixture("small.so", "FIXTURE_ENTRY_SIZE=16")
        // The 1.0 entry: struct_size, abi, two names and four functions on LP64.
        let size10 = 4 + 8 + 4 /* padding */ + 2 * 8 + 4 * 8
        XCTAssertEqual(load(path), .malformedDescriptor(
            path: path, reason: "entry struct_size 16, expected at least \(size10) (the ABI 1.0 size)"))
    }

    func testPluginRefusesTheHost() throws {
        let path = try fixture("refuse.so", "FIXTURE_REFUSE_HOST")
        XCTAssertEqual(load(path), .refusedHost(path: path, message: "needs host ABI 1.\(ABIVersion.host.minor + 1) or newer, host has \(ABIVersion.host)"))
    }

    func testMalformedDescriptors() throws {
        let badDefault = try fixture("default.so", "FIXTURE_BAD_DEFAULT")
        guard case .malformedDescriptor(_, let reason)? = load(badDefault) else { return XCTFail("expected malformed") }
        XCTAssertEqual(reason, "filter 'stamp', parameter 'value': default 500.0 lies outside [0.0, 100.0]")

        let badID = try fixture("id.so", "FIXTURE_ID=\"Bad Id\"")
        guard case .malformedDescriptor(_, let idReason)? = load(badID) else { return XCTFail("expected malformed") }
        XCTAssertTrue(idReason.contains("'Bad Id'"), idReason)
        XCTAssertTrue(idReason.contains(RAWFX_ID_RULE), "the message states the rule: \(idReason)")

        let twice = try fixture("twice.so", "FIXTURE_SECOND_ID=\"stamp\"")
        XCTAssertEqual(load(twice), .malformedDescriptor(path: twice, reason: "filter id 'stamp' is declared twice"))
    }

    func testScanRecordsBrokenFilesAndKeepsGoing() throws {
        _ = try fixture("a-broken.so", "FIXTURE_ABI_MAJOR=2")
        _ = try compileCPlugin(invertSource, into: directory, name: "b-invert.so")
        try "junk".write(to: directory.appendingPathComponent("c-junk.so"), atomically: true, encoding: .utf8)
        let registry = PluginRegistry.empty(environment: [:])
        registry.scan([directory.path])
        XCTAssertNotNil(try? registry.filterType("invert"))
        let failed = Set(registry.failures.map { URL(fileURLWithPath: $0.path).lastPathComponent })
        XCTAssertEqual(failed, ["a-broken.so", "c-junk.so"])
    }

    // MARK: Versions and growth

    /// CLAP's rule: any minor of the host's major. A 1.99 plugin whose entry and descriptors
    /// end in fields of that future minor (pointers to nowhere) loads and runs: the host reads
    /// only the fields it knows.
    func testNewerMinorLoadsAndItsStructsAreReadAtTheirDeclaredSize() throws {
        let path = try fixture("minor.so", "FIXTURE_ABI_MINOR=99", "FIXTURE_GROWN", "FIXTURE_SECOND_ID=\"extra\"")
        let registry = PluginRegistry.empty(environment: [:])
        let library = try registry.load(path: path)
        XCTAssertEqual(library.abi, ABIVersion(major: 1, minor: 99))
        XCTAssertEqual(library.filters.map(\.id), ["stamp", "extra"])
        let luma = try firstLuma(through: "stamp=value=5,extra=value=2", registry)
        XCTAssertEqual(luma.after, luma.before &+ 7)
    }

    /// The plugin compiled against the 1.0 header (Fixtures/abi-1.0) as a third party did:
    /// its descriptor and instance structs are 1.0-sized, and it runs a frame in this host.
    func testPluginBuiltAgainstTheABI10HeaderLoadsAndRuns() throws {
        let path = try fixture("abi10.so", includeFirst: [abi10HeaderDirectory])
        let probe = try FixtureProbe(path)
        XCTAssertEqual(probe.descriptorSize, UInt32(MemoryLayout<rawfx_filter_descriptor>.offset(of: \.create_with_host)!),
                       "the fixture was compiled against the 1.0 header (RAWFX_SIZE_1_0_FILTER_DESCRIPTOR)")
        let registry = PluginRegistry.empty(environment: [:])
        let library = try registry.load(path: path)
        XCTAssertEqual(library.abi, ABIVersion(major: 1, minor: 0))
        XCTAssertEqual(probe.hostMinor, ABIVersion.host.minor)
        let luma = try firstLuma(through: "stamp=value=9", registry)
        XCTAssertEqual(luma.after, luma.before &+ 9)
    }

    /// The real-time set_param rule is 1.1's: a plugin built against the 1.0 header gets a
    /// value change on a new instance, configured off the process thread and swapped in (its
    /// set_param may allocate); a 1.1 plugin gets it on the live instance. Both then apply it.
    func testAnABI10PluginsParameterChangeGoesToANewInstance() throws {
        for (name, include, live) in [("abi10.so", [abi10HeaderDirectory], false), ("abi11.so", [URL](), true)] {
            let registry = PluginRegistry.empty(environment: [:])
            try registry.load(path: try fixture(name, includeFirst: include))
            let chain = try VideoChain("stamp=value=9", registry: registry)
            let buffer = patternBuffer(width: 16, height: 8)
            let before = buffer.frame.plane(0)[0]
            _ = try chain.process(buffer.frame)
            let first = ObjectIdentifier(chain.filters[0])
            try chain.control.setParameter("stamp.value", "3")
            let again = patternBuffer(width: 16, height: 8)
            let out = try chain.process(again.frame)
            XCTAssertEqual(out.plane(0)[0], before &+ 3, name)
            XCTAssertEqual(ObjectIdentifier(chain.filters[0]) == first, live, "\(name): the live instance \(live ? "kept" : "replaced")")
        }
    }

    /// A plugin written for 1.1 refuses a 1.0 host in init (called here as a 1.0 host would,
    /// with a 1.0-sized rawfx_host_info), and loads in this 1.1 host.
    func testPluginNeedingABI11RefusesA10HostAndAcceptsThisOne() throws {
        let path = try fixture("needs11.so", "FIXTURE_REQUIRE_HOST_MINOR=1")
        let probe = try FixtureProbe(path)
        let getEntry = unsafeBitCast(try XCTUnwrap(dlsym(probe.handle, RAWFX_ENTRY_SYMBOL)), to: rawfx_get_plugin_entry_fn.self)
        let initialize = try XCTUnwrap(try XCTUnwrap(getEntry()).pointee.`init`)
        var message = [CChar](repeating: 0, count: 256)
        let status = "rawfx".withCString { name in
            "0.1.0".withCString { version in
                var info = rawfx_host_info()
                info.struct_size = UInt32(MemoryLayout<rawfx_host_info>.offset(of: \.plugin_path)!)  // RAWFX_SIZE_1_0_HOST_INFO
                info.abi = rawfx_abi_version(major: 1, minor: 0)
                info.name = name
                info.version = version
                return initialize(&info, &message, message.count)
            }
        }
        XCTAssertEqual(status, Int32(RAWFX_ERR_VERSION))
        XCTAssertEqual(String(nulTerminated: message), "needs host ABI 1.1 or newer, host has 1.0")
        XCTAssertEqual(probe.pluginPath, "", "the plugin read no 1.1 field beyond a 1.0 struct_size")

        let registry = PluginRegistry.empty(environment: [:])
        XCTAssertNoThrow(try registry.load(path: path))
        XCTAssertNotNil(try? registry.filterType("stamp"))
    }

    /// init gets the host's version (RAWFX_HOST_VERSION_STRING), the file's canonical path
    /// however it was spelled, and a working 1.1 host object that names the file in log lines.
    func testInitGetsTheCanonicalPathAndTheHostObject() throws {
        let path = try fixture("info.so")
        let probe = try FixtureProbe(path)
        let logged = Mutex<[RawFXLog.Record]>([])
        RawFXLog.setHandler { record in logged.withLock { $0.append(record) } }
        defer { RawFXLog.setHandler(nil) }
        let canonical = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let name = directory.lastPathComponent
        let spelled = directory.path + "/../" + name + "/./info.so"
        let library = try PluginRegistry.empty(environment: [:]).load(path: spelled)
        XCTAssertEqual(probe.pluginPath, canonical)
        XCTAssertEqual(library.path, canonical)
        XCTAssertEqual(probe.hostVersion, RAWFX_HOST_VERSION_STRING)
        XCTAssertEqual(RawFXHost.version, RAWFX_HOST_VERSION_STRING)
        XCTAssertEqual(probe.hostInfoSize, UInt32(MemoryLayout<rawfx_host_info>.size))
        XCTAssertEqual(probe.hostObjectName, RawFXHost.name)
        RawFXLog.sync()
        let lines = logged.withLock { $0 }.map { "\($0.severity) \($0.source): \($0.message)" }
        XCTAssertEqual(lines, ["info info.so: init"])
    }

    // MARK: Ownership: init and deinit exactly once

    func testDeinitRunsOnceWhenTheRegistryIsDropped() throws {
        let path = try fixture("count.so")
        let probe = try FixtureProbe(path)
        do {
            let registry = PluginRegistry.empty(environment: [:])
            try registry.load(path: path)
            XCTAssertEqual(probe.initCalls, 1)
            withExtendedLifetime(registry) { XCTAssertEqual(probe.deinitCalls, 0) }
        }
        XCTAssertEqual(probe.deinitCalls, 1)
        // The file stays mapped (RTLD_NODELETE); loading it again initialises it again.
        do {
            let registry = PluginRegistry.empty(environment: [:])
            try registry.load(path: path)
            XCTAssertEqual(probe.initCalls, 2)
        }
        XCTAssertEqual(probe.deinitCalls, 2)
    }

    /// The registry and a library list the same FilterType objects; a library kept alone,
    /// after its registry went, still lists its filters and makes instances.
    func testALibraryKeptAloneStillListsItsFilters() throws {
        let path = try fixture("alone.so")
        let probe = try FixtureProbe(path)
        let registry = PluginRegistry.empty(environment: [:])
        let library = try registry.load(path: path)
        XCTAssertTrue(try registry.filterType("stamp") === library.filters[0])
        withExtendedLifetime(registry) {}
        XCTAssertEqual(library.filters.map(\.id), ["stamp"])
        XCTAssertNoThrow(try library.filters[0].makeInstance())
        XCTAssertEqual(probe.deinitCalls, 0)
    }

    func testAChainOutlivesItsRegistry() throws {
        let path = try fixture("outlive.so")
        let probe = try FixtureProbe(path)
        var chain: VideoChain? = try {
            let registry = PluginRegistry.empty(environment: [:])
            try registry.load(path: path)
            return try VideoChain("stamp=value=4", registry: registry)
        }()
        XCTAssertEqual(probe.deinitCalls, 0, "the chain's instance keeps its plugin initialised")
        let buffer = patternBuffer(width: 16, height: 8)
        let before = buffer.frame.plane(0)[0]
        XCTAssertEqual(try chain!.process(buffer.frame).plane(0)[0], before &+ 4)
        chain = nil
        XCTAssertEqual(probe.initCalls, 1)
        XCTAssertEqual(probe.deinitCalls, 1)
    }

    /// A registry of its own loads `path` and makes a `stamp` instance; both are dropped on return.
    static func loadAndMakeAnInstance(_ path: String) throws {
        let registry = PluginRegistry.empty(environment: [:])
        try registry.load(path: path)
        _ = try registry.filterType("stamp").makeInstance()
    }

    /// `loadAndMakeAnInstance` `times` times on each of `threads` threads at once; the errors met.
    static func loadConcurrently(_ path: String, threads: Int, times: Int) -> [String] {
        let errors = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<times {
                do {
                    try loadAndMakeAnInstance(path)
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
        }
        return errors.withLock { $0 }
    }

    /// Registries made and dropped on several threads at once share the file while any is
    /// alive; the plugin sees init and deinit strictly alternate, never init twice.
    func testInitAndDeinitAlternateUnderConcurrentLoads() throws {
        let path = try fixture("concurrent.so")
        let probe = try FixtureProbe(path)
        XCTAssertEqual(Self.loadConcurrently(path, threads: 4, times: 200), [])
        XCTAssertEqual(probe.overlaps, 0)
        XCTAssertEqual(probe.initCalls, probe.deinitCalls)
        XCTAssertGreaterThan(probe.initCalls, 0)
    }

    /// The log handler is user code on the service thread: one that loads the plugin whose
    /// `init` logged, and makes and drops an instance of it, while other threads load and drop
    /// the same file, neither waits for a lock held around it (the loader lock is not held
    /// while the handler runs, and is not recursive) nor breaks the init/deinit alternation.
    func testALogHandlerThatLoadsThePluginAgainDoesNotDeadlock() throws {
        let path = try fixture("reentrant.so")
        let probe = try FixtureProbe(path)
        let handlerErrors = Mutex<[String]>([])
        let handlerLoads = Atomic<Int>(0)
        RawFXLog.setHandler { record in
            guard record.origin == .library, record.message == "init", handlerLoads.load(ordering: .relaxed) < 20 else { return }
            do {
                try Self.loadAndMakeAnInstance(path)
                handlerLoads.add(1, ordering: .relaxed)
            } catch {
                handlerErrors.withLock { $0.append("\(error)") }
            }
        }
        defer { RawFXLog.setHandler(nil) }
        let loaderErrors = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let errors = Self.loadConcurrently(path, threads: 2, times: 100)
            loaderErrors.withLock { $0 = errors }
            RawFXLog.sync()
            done.signal()
        }
        // A guard against a hang only: a deadlock never signals.
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success, "loading waited for the log handler, or it for the loader")
        XCTAssertEqual(loaderErrors.withLock { $0 }, [])
        XCTAssertEqual(handlerErrors.withLock { $0 }, [])
        XCTAssertGreaterThan(handlerLoads.load(ordering: .relaxed), 0, "the handler never loaded the plugin")
        XCTAssertEqual(probe.overlaps, 0)
        XCTAssertEqual(probe.initCalls, probe.deinitCalls)
    }

    func testErrorAfterInitRunsDeinitOnce() throws {
        let path = try fixture("late-error.so", "FIXTURE_BAD_DEFAULT")
        let probe = try FixtureProbe(path)
        guard case .malformedDescriptor? = load(path) else { return XCTFail("expected malformed") }
        XCTAssertEqual(probe.initCalls, 1)
        XCTAssertEqual(probe.deinitCalls, 1)
    }

    func testRefusedInitIsNotFollowedByDeinit() throws {
        let path = try fixture("refused.so", "FIXTURE_REFUSE_HOST")
        let probe = try FixtureProbe(path)
        guard case .refusedHost? = load(path) else { return XCTFail("expected refusedHost") }
        XCTAssertEqual(probe.initCalls, 1)
        XCTAssertEqual(probe.deinitCalls, 0)
    }

    // MARK: One file, one load

    func testOneFileIsLoadedOnceHoweverSpelled() throws {
        let path = try fixture("once.so")
        let probe = try FixtureProbe(path)
        let link = directory.appendingPathComponent("link.so").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let name = directory.lastPathComponent
        let spellings = [path, directory.path + "/../" + name + "/once.so", link, directory.path + "//./once.so"]
        let registry = PluginRegistry.empty(environment: [:])
        for spelling in spellings { try registry.load(path: spelling) }
        registry.scan([directory.path])  // once.so and link.so again
        XCTAssertEqual(registry.libraries.count, 1)
        XCTAssertEqual(registry.clashes, [])
        XCTAssertEqual(registry.failures, [])
        // Another registry shares the loaded file rather than initialising it twice.
        let other = PluginRegistry.empty(environment: [:])
        try other.load(path: link)
        XCTAssertTrue(other.libraries[0] === registry.libraries[0])
        XCTAssertEqual(probe.initCalls, 1)
        XCTAssertEqual(probe.deinitCalls, 0)
    }

    func testABareNameIsAPathNotALibrarySearch() throws {
        let path = try fixture("bare.so")
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(directory.path))
        let library = try PluginRegistry.empty(environment: [:]).load(path: "bare.so")
        XCTAssertEqual(library.path, URL(fileURLWithPath: path).resolvingSymlinksInPath().path)
        // dlopen("libc.so.6") would find the C library on the system search path.
        XCTAssertEqual(load("libc.so.6"), .notFound(path: "libc.so.6"))
    }

    // MARK: Search path

    func testSearchPathOrder() {
        let path = PluginRegistry.searchPath(explicit: ["/explicit"], environment: ["RAWFX_PLUGIN_PATH": "/env/a:/env/b"])
        XCTAssertEqual(Array(path.prefix(3)), ["/explicit", "/env/a", "/env/b"])
        XCTAssertEqual(path.count, 4, "the executable's directory comes last")
    }

    func testMissingExplicitEntryIsAnErrorAndAMissingEnvironmentEntryAFailure() throws {
        let missing = directory.appendingPathComponent("nope").path
        XCTAssertThrowsError(try PluginRegistry(searchPath: [missing], environment: [:])) { error in
            XCTAssertEqual(error as? PluginLoadError, .notFound(path: missing))
        }
        let registry = PluginRegistry(environment: [PluginRegistry.environmentVariable: missing])
        XCTAssertEqual(registry.failures, [.notFound(path: missing)])
        XCTAssertEqual(registry.searchPath.first, missing)
        XCTAssertFalse(registry.filterTypes.isEmpty, "the executable's directory is still scanned")
    }

    func testEmptyLoadsNothingAndTheDefaultScansTheStandardPath() {
        XCTAssertEqual(PluginRegistry.empty(environment: [:]).libraries.count, 0)
        XCTAssertEqual(PluginRegistry.empty(environment: [:]).searchPath, [])
        let standard = PluginRegistry(environment: [:])
        XCTAssertEqual(standard.searchPath, PluginRegistry.searchPath(environment: [:]))
        XCTAssertEqual(Set(standard.libraries.map(\.path)), Set(builtPlugins.libraries.map(\.path)))
    }

    func testBuiltPluginsAreFoundNextToTheExecutable() throws {
        let ids = builtPlugins.filterTypes.map(\.id)
        for id in ["null", "copy", "gain"] { XCTAssertTrue(ids.contains(id), "\(id) missing from \(ids)") }
        XCTAssertEqual(builtPlugins.failures, [])
        XCTAssertEqual(builtPlugins.clashes, [])
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

    // MARK: Filter id clashes

    /// A third-party file providing `scale` next to the shipped YUV plugin: only `scale` of
    /// the file met second is skipped; `rotate`, `mirror` and the third party's other filter stay.
    func testIDClashSkipsOnlyTheClashingFilter() throws {
        let yuv = try XCTUnwrap(builtPlugins.libraries.first { $0.name == "rawfx-yuv" }, "libRawFXYUV.so is built").path
        let thirdDirectory = directory.appendingPathComponent("third")
        try FileManager.default.createDirectory(at: thirdDirectory, withIntermediateDirectories: false)
        let third = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ID=\"scale\"", "FIXTURE_SECOND_ID=\"extra\""],
                                       into: thirdDirectory, name: "third.so")

        // Earlier on the search path wins: the explicit entry comes before the executable's directory.
        let registry = try PluginRegistry(searchPath: [thirdDirectory.path], environment: [:])
        XCTAssertEqual(registry.clashes, [FilterIDClash(id: "scale", skippedPath: yuv, keptPath: third)])
        XCTAssertEqual(try registry.filterType("scale").library.path, third)
        for id in ["rotate", "mirror"] { XCTAssertEqual(try registry.filterType(id).library.path, yuv) }
        XCTAssertEqual(try registry.filterType("extra").library.path, third)
        XCTAssertEqual(registry.failures, [])
        XCTAssertEqual(registry.clashes[0].description,
                       "filter 'scale' of \(yuv) is skipped: \(third), earlier on the plugin path, already provides it")

        // Loaded first wins, the other way round.
        let reversed = PluginRegistry.empty(environment: [:])
        try reversed.load(path: yuv)
        try reversed.load(path: third)
        XCTAssertEqual(reversed.clashes, [FilterIDClash(id: "scale", skippedPath: third, keptPath: yuv)])
        XCTAssertEqual(try reversed.filterType("scale").library.path, yuv)
        XCTAssertEqual(try reversed.filterType("extra").library.path, third)
        XCTAssertEqual(reversed.filterTypes.map(\.id), ["extra", "mirror", "range", "rotate", "scale"])
    }
}

/// The records fixture_plugin.c exports (how often init and deinit ran, what init was given),
/// read from the loaded image: dlopen of the same file returns the image the registry uses.
struct FixtureProbe {
    let handle: UnsafeMutableRawPointer

    init(_ path: String) throws {
        handle = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_LOCAL), dlerror().map { String(cString: $0) } ?? path)
    }

    private func symbol<T>(_ name: String, _ type: T.Type) -> UnsafeMutablePointer<T> {
        dlsym(handle, name)!.assumingMemoryBound(to: type)
    }

    var initCalls: Int32 { symbol("fixture_init_calls", Int32.self).pointee }
    var deinitCalls: Int32 { symbol("fixture_deinit_calls", Int32.self).pointee }
    var overlaps: Int32 { symbol("fixture_overlaps", Int32.self).pointee }
    var hostMinor: UInt32 { symbol("fixture_host_minor", UInt32.self).pointee }
    var hostInfoSize: UInt32 { symbol("fixture_host_info_size", UInt32.self).pointee }
    var hostVersion: String { String(cString: symbol("fixture_host_version", CChar.self)) }
    var pluginPath: String { String(cString: symbol("fixture_plugin_path", CChar.self)) }
    var hostObjectName: String { String(cString: symbol("fixture_host_object_name", CChar.self)) }
    var descriptorSize: UInt32 { symbol("fixture_descriptor_size", UInt32.self).pointee }
}

// MARK: - The rawfx command: clashes, trust refusals and missing plugin paths

extension CLITests {
    /// A directory with a third-party plugin providing `scale` (and `extra`), and an untrusted
    /// (group-writable) one; returns the directory and the third-party file.
    func thirdPartyPluginDirectory() throws -> (directory: URL, plugin: String, untrusted: String) {
        let dir = temporaryDirectory()
        let plugin = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ID=\"scale\"", "FIXTURE_SECOND_ID=\"extra\""],
                                        into: dir, name: "third.so")
        let untrusted = try compileCPlugin(fixtureSource, defines: ["FIXTURE_ID=\"loose\""], into: dir, name: "untrusted.so")
        try FileManager.default.setAttributes([.posixPermissions: 0o775], ofItemAtPath: untrusted)
        return (dir, plugin, untrusted)
    }

    var builtYUVPath: String? { builtPlugins.libraries.first { $0.name == "rawfx-yuv" }?.path }

    func testRunWarnsOnceAboutAClashingFilterID() throws {
        guard has("rotate", "scale"), let yuv = builtYUVPath else { throw XCTSkip("rawfx cannot load libRawFXYUV.so") }
        let third = try thirdPartyPluginDirectory()
        let input = try makeY4M(third.directory)
        let output = third.directory.appendingPathComponent("out.y4m").path
        let outcome = try rawfx("run", "--plugin-path", third.directory.path, "--vf", "rotate=angle=90", input, output)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertEqual(outcome.stderrLines.map(String.init), [
            "rawfx: warning: filter 'scale' of \(yuv) is skipped: \(third.plugin), earlier on the plugin path, already provides it",
        ])
        XCTAssertEqual(try frames(of: output).count, 5, "rotate, from the file that lost scale, ran")
    }

    func testPluginsListsClashesAndTrustRefusals() throws {
        guard has("scale"), let yuv = builtYUVPath else { throw XCTSkip("rawfx cannot load libRawFXYUV.so") }
        let third = try thirdPartyPluginDirectory()
        let text = try rawfx("plugins", "--plugin-path", third.directory.path)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdoutText.contains("Filter ids provided by two files (1); the file met first keeps the id:\n"
            + "    filter 'scale' of \(yuv) is skipped: \(third.plugin), earlier on the plugin path, already provides it\n"),
                      text.stdoutText)
        XCTAssertTrue(text.stdoutText.contains("    \(third.untrusted): not loaded: file \(third.untrusted) is writable by its group"),
                      text.stdoutText)
        XCTAssertTrue(text.stdoutText.contains("set RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 to load it anyway"))

        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: try rawfx("plugins", "--json", "--plugin-path", third.directory.path).stdout) as? [String: Any])
        let clashes = try XCTUnwrap(json["clashes"] as? [[String: String]])
        XCTAssertEqual(clashes.map { [$0["id"], $0["skipped"], $0["kept"]] }, [["scale", yuv, third.plugin]])
        XCTAssertEqual((json["failures"] as? [[String: String]])?.map { $0["path"] }, [third.untrusted])

        let allowed = try shell("RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 \"$RAWFX\" plugins --json --plugin-path '\(third.directory.path)'")
        let allowedJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: allowed.stdout) as? [String: Any])
        XCTAssertEqual((allowedJSON["failures"] as? [Any])?.count, 0)
        XCTAssertTrue(((allowedJSON["filters"] as? [[String: Any]]) ?? []).contains { $0["id"] as? String == "loose" })
    }

    func testMissingPluginPathIsAnError() throws {
        let dir = temporaryDirectory()
        let missing = dir.appendingPathComponent("nope").path
        let input = try makeY4M(dir)
        let run = try rawfx("run", "--plugin-path", missing, input, dir.appendingPathComponent("out.y4m").path)
        assertOneErrorLine(run, "--plugin-path \(missing): no such plugin file or directory")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.y4m").path))
        assertOneErrorLine(try rawfx("plugins", "--plugin-path", missing), "--plugin-path \(missing): no such plugin file or directory")
    }
}

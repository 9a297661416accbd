import Foundation
import RawFX
import RawFXSDK
import XCTest

/// The repository root, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A fresh temporary directory for one test, mode 0755 whatever the umask, so the plugins
/// compiled into it pass the loader's trust rule (not writable by group or others).
func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("rawfx-tests-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                             attributes: [.posixPermissions: 0o755])
    return url
}

/// The 1.0 header, kept to compile plugins as they were written for ABI 1.0.
let abi10HeaderDirectory = repositoryRoot.appendingPathComponent("Tests/Fixtures/abi-1.0")

/// Compiles a C plugin against rawfx.h alone (`cc -std=c99 -shared -fPIC`), returns the .so path
/// (mode 0755). `includeFirst` directories come before the 1.1 header's on the include path.
func compileCPlugin(_ source: URL, defines: [String] = [], includeFirst: [URL] = [],
                    into directory: URL, name: String) throws -> String {
    let output = directory.appendingPathComponent(name).path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["cc", "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC"]
        + (includeFirst + [repositoryRoot.appendingPathComponent("Sources/CRawFX/include")]).flatMap { ["-I", $0.path] }
        + defines.map { "-D" + $0 } + [source.path, "-o", output]
    let pipe = Pipe()
    process.standardError = pipe
    try process.run()
    process.waitUntilExit()
    let errors = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    guard process.terminationStatus == 0 else { throw CompileFailure(message: errors) }
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: output)
    return output
}

struct CompileFailure: Error { let message: String }

let fixtureSource = repositoryRoot.appendingPathComponent("Tests/Fixtures/fixture_plugin.c")
let invertSource = repositoryRoot.appendingPathComponent("docs/examples/invert.c")

/// The plugins SwiftPM built next to the test binary (the default search path).
let builtPlugins: PluginRegistry = PluginRegistry(environment: [:])

/// A registry holding only the plugin SwiftPM built next to the tests as `file`
/// ("libRawFXYUV.so", plugin name `name`); skips the test when it is not built.
func registryOfBuiltPlugin(_ name: String, file: String, product: String) throws -> PluginRegistry {
    guard let library = builtPlugins.libraries.first(where: { $0.name == name }) else {
        throw XCTSkip("\(file) is not built next to the tests (swift build --product \(product))")
    }
    let registry = PluginRegistry.empty()
    try registry.load(path: library.path)
    return registry
}

/// An I420 buffer with a deterministic pattern in every plane and `extraStride` bytes of
/// padding per row (filled with 0xEE, so tests can check filters leave padding alone).
func patternBuffer(width: Int, height: Int, range: ColorRange = .limited, rotation: Int = 0,
                   extraStride: Int = 0, seed: Int = 0) -> VideoBuffer {
    let buffer = VideoBuffer(format: VideoFormat(width: width, height: height, colorRange: range, rotation: rotation),
                             strideAlignment: 1, extraStride: extraStride)
    let f = buffer.frame
    for p in 0..<3 {
        let (w, h) = f.planeSize(p)
        for y in 0..<h {
            let row = f.plane(p) + y * f.stride(p)
            for x in 0..<f.stride(p) {
                row[x] = x < w ? UInt8(truncatingIfNeeded: (x * 7 + y * 13 + p * 50 + seed * 31) ^ (x * y)) : 0xEE
            }
        }
    }
    return buffer
}

/// Plane `p` of a frame as rows of exactly its width (no padding), for comparisons.
func planeBytes(_ frame: VideoFrame, _ p: Int) -> [UInt8] {
    let (w, h) = frame.planeSize(p)
    var out: [UInt8] = []
    out.reserveCapacity(w * h)
    for y in 0..<h { out.append(contentsOf: UnsafeBufferPointer(start: frame.plane(p) + y * frame.stride(p), count: w)) }
    return out
}

/// The padding bytes of every row of plane `p` (between width and stride).
/// The largest difference between the samples at one index of two byte arrays of one length.
func largestDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
    precondition(a.count == b.count)
    return zip(a, b).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
}

/// Asserts that the packed frame `bytes` is `reference` but for samples at most one step
/// apart: a picture scaled by the plugin against libyuv's I420Scale, where the plugin's kernels
/// round once and libyuv's rows twice (ScaleKernelTests checks the kernels byte for byte).
/// One step still catches a size, bar, crop or offset that is off.
func XCTAssertWithinOneStep(_ bytes: [UInt8]?, of reference: [UInt8], _ message: String = "",
                            file: StaticString = #filePath, line: UInt = #line) {
    guard let bytes, bytes.count == reference.count else {
        return XCTFail("\(bytes?.count ?? 0) bytes where \(reference.count) were expected \(message)", file: file, line: line)
    }
    let largest = largestDifference(bytes, reference)
    XCTAssertLessThanOrEqual(largest, 1, "samples differ by up to \(largest) \(message)", file: file, line: line)
}

func paddingBytes(_ frame: VideoFrame, _ p: Int) -> [UInt8] {
    let (w, h) = frame.planeSize(p)
    var out: [UInt8] = []
    for y in 0..<h { out.append(contentsOf: UnsafeBufferPointer(start: frame.plane(p) + y * frame.stride(p) + w, count: frame.stride(p) - w)) }
    return out
}

func XCTAssertThrowsChainError<T>(_ expression: @autoclosure () throws -> T, _ check: (ChainError) -> Void,
                                  file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try expression()
        XCTFail("expected a ChainError", file: file, line: line)
    } catch let error as ChainError {
        check(error)
    } catch {
        XCTFail("expected a ChainError, got \(error)", file: file, line: line)
    }
}

/// What a program run by `runProgram` did.
struct ProgramOutcome {
    var status: Int32
    var exitedNormally: Bool
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrLines: [Substring] { stderr.split(separator: "\n", omittingEmptySubsequences: true) }
}

/// Runs a program with stdin from a file (or /dev/null); stdout and stderr go to files, so
/// nothing blocks on a full pipe. `environment` sets (or, with nil, removes) variables.
func runProgram(_ executable: URL, _ arguments: [String], stdin: String? = nil, directory: URL? = nil,
                environment changes: [String: String?] = [:]) throws -> ProgramOutcome {
    let dir = temporaryDirectory()
    let out = dir.appendingPathComponent("stdout"), err = dir.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    var environment = ProcessInfo.processInfo.environment
    for (key, value) in changes { environment[key] = value }
    process.environment = environment
    process.standardInput = try stdin.map { try FileHandle(forReadingFrom: URL(fileURLWithPath: $0)) } ?? FileHandle.nullDevice
    let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    process.waitUntilExit()
    try outHandle.close()
    try errHandle.close()
    return ProgramOutcome(status: process.terminationStatus, exitedNormally: process.terminationReason == .exit,
                          stdout: try Data(contentsOf: out), stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
}

/// Equal sample arrays; on a difference says where, not the whole arrays.
func assertSamplesEqual(_ got: [Int16], _ expected: [Int16], _ what: String,
                        file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(got.count, expected.count, what, file: file, line: line)
    if let first = zip(got, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
        let differing = zip(got, expected).filter { $0.0 != $0.1 }.count
        XCTFail("\(what): \(differing) samples differ, the first at \(first) (\(got[first]) instead of \(expected[first]))",
                file: file, line: line)
    }
}

/// The rectangle (x, y, width, height; even luma coordinates) of an I420 frame as a frame of
/// its own over the same planes and strides: a compositor tile, nothing copied.
func tileView(_ frame: rawfx_video_frame, x: Int, y: Int, width: Int, height: Int) -> VideoFrame {
    var view = frame
    view.width = UInt32(width)
    view.height = UInt32(height)
    view.planes.0 = view.planes.0! + y * Int(view.strides.0) + x
    view.planes.1 = view.planes.1! + y / 2 * Int(view.strides.1) + x / 2
    view.planes.2 = view.planes.2! + y / 2 * Int(view.strides.2) + x / 2
    return VideoFrame(view)
}

/// The built plugins' registry's counterpart for the host object: the probe fixture
/// (Fixtures/host_plugin.c, filter `hostprobe`), compiled once per test run.
let hostProbePlugins: PluginRegistry = {
    let directory = temporaryDirectory()
    let source = repositoryRoot.appendingPathComponent("Tests/Fixtures/host_plugin.c")
    let path = try! compileCPlugin(source, defines: ["_GNU_SOURCE"], into: directory, name: "host_plugin.so")
    let registry = PluginRegistry(environment: [:])
    try! registry.load(path: path)
    return registry
}()

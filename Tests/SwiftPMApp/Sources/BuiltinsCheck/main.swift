// builtins-check: what an app that depends on the RawFX product gets with no plugin path.
//
// 1. PluginRegistry() lists the built-in plugins, and exactly the plugins and filters of the
//    .so files the main build made (the folder given as the argument, loaded here with
//    `PluginRegistry.scanning`, which loads no built-in): every filter, from a built-in.
// 2. A video chain of C and Swift built-ins (mirror, scale, copy, null) against the mirror
//    computed here and libyuv's I420Scale called directly.
// 3. An audio chain (the Swift built-in gain) against the gain formula.
// Between 1 and 2: with RAWFX_PLUGIN_PATH (given to the registry, not set) at the main build,
// every plugin file there is a copy of a built-in (builtinCopies), neither a clash nor loaded.
// Ends with "builtins-check: N passed, N failed"; exit status 1 on any failure.
import CYUVReference
import Foundation
import RawFX

var passed = 0
var failed = 0
@MainActor func check(_ name: String, _ body: () throws -> String?) {
    do {
        if let problem = try body() {
            failed += 1
            print("builtins-check: FAIL \(name): \(problem)")
        } else {
            passed += 1
            print("builtins-check: ok \(name)")
        }
    } catch {
        failed += 1
        print("builtins-check: FAIL \(name): \(error)")
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    print("usage: builtins-check PLUGIN_FOLDER (the main build's folder of libRawFX*.so, e.g. .build/debug)")
    exit(2)
}
if let path = ProcessInfo.processInfo.environment[PluginRegistry.environmentVariable] {
    print("builtins-check: \(PluginRegistry.environmentVariable) is set (\(path)); run it with "
        + "`env -u \(PluginRegistry.environmentVariable)`: the check is that the built-ins need no plugin path")
    exit(2)
}

let registry = PluginRegistry()

check("PluginRegistry() lists every built-in filter") {
    let files = PluginRegistry.scanning([arguments[1]])
    guard files.failures.isEmpty else { return "the main build's plugins failed to load: \(files.failures)" }
    guard !files.libraries.isEmpty else { return "no plugin .so in \(arguments[1]) (build the main package first)" }
    guard registry.failures.isEmpty, registry.clashes.isEmpty else {
        return "failures \(registry.failures), clashes \(registry.clashes)"
    }
    let notBuiltin = registry.libraries.filter { !$0.isBuiltin }.map(\.path)
    guard notBuiltin.isEmpty else { return "loaded from files, not built in: \(notBuiltin)" }
    func inventory(_ r: PluginRegistry) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: r.libraries.map { ($0.name, $0.filters.map(\.id).sorted()) })
    }
    let expected = inventory(files), got = inventory(registry)
    guard got == expected else { return "built in: \(got.sorted { $0.key < $1.key }); the .so files: \(expected.sorted { $0.key < $1.key })" }
    print("builtins-check: \(got.count) built-in plugins, filters \(registry.filterTypes.map(\.id).joined(separator: " "))")
    return nil
}

check("RAWFX_PLUGIN_PATH at the main build: its plugin files are copies of the built-ins, not loaded") {
    let files = PluginRegistry.scanning([arguments[1]])
    let withPath = PluginRegistry(environment: [PluginRegistry.environmentVariable: arguments[1]])
    guard withPath.failures.isEmpty, withPath.clashes.isEmpty else {
        return "failures \(withPath.failures), clashes \(withPath.clashes)"
    }
    // The copies by the path as scanned, the files by their canonical path: both in one folder.
    func names(_ paths: [String]) -> [String] { paths.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted() }
    let copies = names(withPath.builtinCopies.map(\.path)), expected = names(files.libraries.map(\.path))
    guard copies == expected else { return "copies \(copies); the plugin files \(expected)" }
    let fromFiles = withPath.filterTypes.filter { !$0.library.isBuiltin }.map(\.id)
    guard fromFiles.isEmpty else { return "filters from files: \(fromFiles)" }
    return nil
}

/// 64x36 I420 with a different ramp in each plane.
func pattern(width: Int, height: Int) -> VideoBuffer {
    let buffer = VideoBuffer(format: VideoFormat(width: width, height: height))
    let frame = buffer.frame
    for p in 0..<3 {
        let (w, h) = frame.planeSize(p)
        for y in 0..<h { for x in 0..<w { frame.plane(p)[y * frame.stride(p) + x] = UInt8((x * 7 + y * 13 + p * 50) & 0xFF) } }
    }
    return buffer
}

check("mirror,scale,copy,null against the mirror formula and libyuv's I420Scale") {
    let (width, height, outWidth, outHeight) = (64, 36, 40, 22)
    let input = pattern(width: width, height: height)
    // The reference: mirrored here, then scaled by libyuv with point sampling.
    let mirrored = VideoBuffer(format: VideoFormat(width: width, height: height))
    let expected = VideoBuffer(format: VideoFormat(width: outWidth, height: outHeight))
    let (source, flipped, reference) = (input.frame, mirrored.frame, expected.frame)
    for p in 0..<3 {
        let (w, h) = source.planeSize(p)
        for y in 0..<h { for x in 0..<w { flipped.plane(p)[y * flipped.stride(p) + x] = source.plane(p)[y * source.stride(p) + w - 1 - x] } }
    }
    let status = I420Scale(flipped.plane(0), Int32(flipped.stride(0)), flipped.plane(1), Int32(flipped.stride(1)),
                           flipped.plane(2), Int32(flipped.stride(2)), Int32(width), Int32(height),
                           reference.plane(0), Int32(reference.stride(0)), reference.plane(1), Int32(reference.stride(1)),
                           reference.plane(2), Int32(reference.stride(2)), Int32(outWidth), Int32(outHeight), kFilterNone)
    guard status == 0 else { return "I420Scale returned \(status)" }

    let chain = try VideoChain("mirror,scale=width=\(outWidth):height=\(outHeight):filter=none,copy,null", registry: registry)
    _ = try chain.negotiate(input.frame.format)
    let out = try chain.process(source)
    guard out.width == outWidth, out.height == outHeight else { return "output \(out.width)x\(out.height), expected \(outWidth)x\(outHeight)" }
    for p in 0..<3 {
        let (w, h) = out.planeSize(p)
        for y in 0..<h {
            for x in 0..<w where out.plane(p)[y * out.stride(p) + x] != reference.plane(p)[y * reference.stride(p) + x] {
                return "plane \(p) differs first at (\(x), \(y)): \(out.plane(p)[y * out.stride(p) + x]), libyuv \(reference.plane(p)[y * reference.stride(p) + x])"
            }
        }
    }
    return withExtendedLifetime((input, mirrored, expected, chain)) { nil }
}

check("gain=db=-6 against round(x * 10^(-6/20)), saturated") {
    let format = AudioFormat(sampleRate: 48000, channels: 2)
    let frames = 480
    var samples = (0..<frames * 2).map { Int16(truncatingIfNeeded: ($0 * 997) % 65536 - 32768) }
    let input = samples
    let chain = try AudioChain("gain=db=-6", registry: registry)
    _ = try chain.negotiate(format)
    var got: [Int16] = []
    try samples.withUnsafeMutableBufferPointer { buffer in
        try chain.process(AudioBlock(samples: buffer.baseAddress!, frameCount: frames, format: format)) { got += $0.buffer }
    }
    let factor = pow(10, -6.0 / 20)
    let expected = input.map { Int16(max(-32768, min(32767, (Double($0) * factor).rounded()))) }
    guard got == expected else {
        let index = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, expected.count)
        return "\(got.count) samples out, \(expected.count) expected; first difference at \(index)"
    }
    return nil
}

print("builtins-check: \(passed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)

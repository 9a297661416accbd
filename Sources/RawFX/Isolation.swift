#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RawFXRuntime

/// Isolated stages (`name@isolate`, docs/isolation.md): the filter runs in a `rawfx-isolate`
/// helper process behind a proxy instance (Sources/RawFXRuntime/isolation.c), so a crash or a
/// hang in it costs frames passed through unchanged, never the host.
public enum Isolation {
    /// The environment variable naming the helper executable explicitly.
    public static let helperVariable = "RAWFX_ISOLATE_HELPER"
    /// The helper's file name.
    public static let helperName = "rawfx-isolate"

    /// Where the helper is: `RAWFX_ISOLATE_HELPER`, else `rawfx-isolate` in the running
    /// executable's directory (where SwiftPM builds it, beside the plugins), else on `PATH`.
    public static func helperPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit = environment[helperVariable], !explicit.isEmpty { return explicit }
        var directories: [String] = []
        if let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            directories.append(executable.deletingLastPathComponent().path)
        }
        directories += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in directories where !directory.isEmpty {
            let candidate = directory + "/" + helperName
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Proxy types by real type and options. A proxy descriptor lives as long as the process:
    /// few distinct (filter, deadline) pairs exist, and a type may outlive any chain.
    private static let proxies = Locked<[String: FilterType]>([:])

    /// [control] The proxy type that runs `type`'s instances in helpers.
    static func proxyType(for type: FilterType, _ isolation: StageIsolation, allowUntrusted: Bool) throws(ChainError) -> FilterType {
        guard let helper = helperPath() else {
            throw .createFailed(filter: type.id, message: "cannot isolate it: the helper '\(helperName)' is neither named by \(helperVariable) nor beside the executable nor on PATH")
        }
        let key = "\(type.library.path)\u{0}\(type.id)\u{0}\(isolation)\u{0}\(allowUntrusted)\u{0}\(helper)"
        return try proxies.withLock { (cache: inout [String: FilterType]) throws(ChainError) -> FilterType in
            if let known = cache[key] { return known }
            var config = rfx_isolation_config()
            let descriptor: UnsafeMutablePointer<rawfx_filter_descriptor>? = helper.withCString { helperC in
                type.library.path.withCString { pluginC in
                    config.helper_path = helperC
                    config.plugin_path = pluginC
                    config.allow_untrusted = allowUntrusted ? 1 : 0
                    config.deadline_ns = Int64(isolation.deadlineMicroseconds ?? 0) * 1000
                    config.seccomp_strict = isolation.seccomp == .strict ? 1 : 0
                    var fields = type.fields
                    return rfx_isolation_descriptor_create(&fields, &config)
                }
            }
            guard let descriptor else { throw .createFailed(filter: type.id, message: "out of memory for an isolated type") }
            let proxy: FilterType
            do {
                proxy = try FilterType(descriptor: descriptor, library: type.library)
            } catch let error as FilterType.Malformed {
                rfx_isolation_descriptor_destroy(descriptor)
                throw .createFailed(filter: type.id, message: error.reason)
            } catch {
                preconditionFailure("FilterType.init throws Malformed only")
            }
            cache[key] = proxy
            return proxy
        }
    }
}

/// The figures of an isolated stage.
public struct IsolationMetrics: Hashable, Sendable, CustomStringConvertible {
    /// Crashes, exits, hangs past the deadline and protocol violations of the helper.
    public var faults: UInt64
    /// Helpers brought back after a fault.
    public var restarts: UInt64
    /// Frames or blocks passed on unchanged while the helper was down.
    public var passthrough: UInt64
    /// Video frames copied into the shared memory: those that did not arrive there already
    /// (a borrowed frame processed in place; 0 behind an out-of-place stage, which writes there).
    public var copiedIn: UInt64
    /// True while the helper serves frames.
    public var isUp: Bool
    /// The current helper's pid (0 while none runs).
    public var pid: Int32
    /// The per-frame deadline in force, in nanoseconds.
    public var deadlineNanoseconds: Int64

    public var description: String {
        "isolated: \(faults) faults, \(restarts) restarts, \(passthrough) passed through, \(isUp ? "up" : "down")"
    }
}

extension FilterInstance {
    /// [any] The isolation figures of a proxy instance (`@isolate`), nil for an in-process one.
    public var isolation: IsolationMetrics? {
        // Only a proxy is asked: a real plugin's get_extension must not run during process.
        guard rfx_isolation_is_proxy(type.descriptor) != 0,
              let pointer = extensionPointer(RFX_ISOLATION_EXTENSION) else { return nil }
        var c = rfx_isolation_counters()
        rfx_isolation_read_counters(pointer, &c)
        return IsolationMetrics(faults: c.faults, restarts: c.restarts, passthrough: c.passthrough, copiedIn: c.copied_in,
                                isUp: c.up != 0, pid: c.pid, deadlineNanoseconds: c.deadline_ns)
    }
}

extension FilterInstance {
    /// [any] True for the proxy of an isolated stage (`@isolate`).
    var isIsolated: Bool { rfx_isolation_is_proxy(type.descriptor) != 0 }

    /// [control or process, after configure; never waits] The isolated stage's video input in its shared memory
    /// (`rfx_isolation_video_input_frame`), as a buffer of `format` that keeps this instance,
    /// and so the mapping, alive. A frame written there crosses to the helper with no copy.
    /// Nil for an in-process stage, audio, a stage negotiated as a passthrough, or while a
    /// restart holds the stage.
    func sharedVideoInput(format: VideoFormat) -> VideoBuffer? {
        guard isIsolated else { return nil }
        var raw = rawfx_video_frame()
        guard rfx_isolation_video_input_frame(filter, &raw) != 0,
              Int(raw.width) == format.width, Int(raw.height) == format.height else { return nil }
        raw.color_range = format.colorRange.rawValue
        raw.rotation = UInt32(format.rotation)
        return VideoBuffer(format: format, planes: raw, owner: self)
    }
}

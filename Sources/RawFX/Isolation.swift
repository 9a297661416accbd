#if canImport(Glibc)
import Glibc
#endif
// FoundationEssentials, not Foundation: librawfx and rawfx-isolate link the Swift runtime in
// statically for the packages (scripts/build-release.sh), and Foundation would bring ICU's data
// (about 40 MB) into each; the engine needs none of its international part.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RawFXRuntime

/// Isolated stages (`name@isolate`, docs/isolation.md): the filter runs in a `rawfx-isolate`
/// helper process behind a proxy instance (Sources/RawFXRuntime/iso_*.c), so a crash or a
/// hang in it costs frames passed through unchanged, never the host.
public enum Isolation {
    /// The environment variable naming the helper executable explicitly.
    public static let helperVariable = "RAWFX_ISOLATE_HELPER"
    /// The helper's file name.
    public static let helperName = "rawfx-isolate"

    /// Where an installation keeps the helper, relative to the directory of the engine's file
    /// (`PREFIX/bin/rawfx` or `PREFIX/lib/librawfx.so`): `PREFIX/libexec/rawfx/rawfx-isolate`
    /// (scripts/install.sh).
    public static let installedHelper = "../libexec/rawfx/" + helperName

    /// Where the helper is: `RAWFX_ISOLATE_HELPER`; else beside the running executable or the
    /// engine's own file (librawfx.so for a C, C++ or Python host), where SwiftPM builds it,
    /// or in `../libexec/rawfx/` from either (an installation); else on `PATH`.
    public static func helperPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit = environment[helperVariable], !explicit.isEmpty { return explicit }
        var candidates: [String] = []
        var bases: [URL] = []
        if let executable = FileSystem.executablePath { bases.append(URL(fileURLWithPath: executable)) }
        if let image = rfx_isolation_engine_image_path() { bases.append(URL(fileURLWithPath: String(cString: image))) }
        for base in bases {
            let directory = base.resolvingSymlinksInPath().deletingLastPathComponent().path
            candidates += [directory + "/" + helperName, directory + "/" + installedHelper]
        }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map { $0 + "/" + helperName }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// Proxy types by real type and options. A proxy descriptor lives as long as the process:
    /// few distinct (filter, deadline) pairs exist, and a type may outlive any chain.
    private static let proxies = Locked<[String: FilterType]>([:])

    /// [control] The proxy type that runs `type`'s instances in helpers; with `group`, the
    /// types of the following stages of its isolation group, which its helper runs after it.
    static func proxyType(for type: FilterType, _ isolation: StageIsolation, group: [FilterType] = [],
                          allowUntrusted: Bool) throws(ChainError) -> FilterType {
        if isolation.pipeline, type.mediaKind != .audio {
            throw .contract("'\(type.id)' is a video filter: @isolate(pipeline) runs an audio stage one block late; isolate a video stage without pipeline")
        }
        guard let helper = helperPath() else {
            throw .createFailed(filter: type.id, message: "cannot isolate it: the helper '\(helperName)' is neither named by \(helperVariable) nor beside the executable or librawfx (nor in ../libexec/rawfx/ from them) nor on PATH")
        }
        let members = [type] + group
        let key = members.map { "\($0.library.path)\u{0}\($0.id)" }.joined(separator: "\u{0}")
            + "\u{0}\(isolation)\u{0}\(allowUntrusted)\u{0}\(helper)"
        return try proxies.withLock { (cache: inout [String: FilterType]) throws(ChainError) -> FilterType in
            if let known = cache[key] { return known }
            var config = rfx_isolation_config()
            // C strings and descriptors that live through the call (the descriptor copies them).
            let paths = members.map { strdup($0.library.path) }
            let reals = members.map { member -> UnsafeMutablePointer<rawfx_filter_descriptor> in
                let p = UnsafeMutablePointer<rawfx_filter_descriptor>.allocate(capacity: 1)
                p.initialize(to: member.fields)
                return p
            }
            defer {
                paths.forEach { free($0) }
                reals.forEach { $0.deallocate() }
            }
            var list = zip(paths, reals).map { rfx_isolation_member(plugin_path: $0.0, real: $0.1) }
            let descriptor: UnsafeMutablePointer<rawfx_filter_descriptor>? = helper.withCString { helperC in
                list.withUnsafeMutableBufferPointer { memberList in
                    config.helper_path = helperC
                    config.plugin_path = UnsafePointer(paths[0])
                    config.allow_untrusted = allowUntrusted ? 1 : 0
                    config.deadline_ns = Int64(isolation.deadlineMicroseconds ?? 0) * 1000
                    config.seccomp_strict = isolation.seccomp == .strict ? 1 : 0
                    config.pipeline = isolation.pipeline ? 1 : 0
                    config.member_count = UInt32(members.count)
                    config.members = UnsafePointer(memberList.baseAddress)
                    return rfx_isolation_descriptor_create(reals[0], &config)
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

    /// Shell types by real type: a grouped stage after the first (rfx_isolation_shell_descriptor_create).
    private static let shells = Locked<[String: FilterType]>([:])

    /// [control] The shell type of `type` in an isolation group: its id and parameters, its
    /// processing done by the group's proxy.
    static func shellType(for type: FilterType) throws(ChainError) -> FilterType {
        let key = "\(type.library.path)\u{0}\(type.id)"
        return try shells.withLock { (cache: inout [String: FilterType]) throws(ChainError) -> FilterType in
            if let known = cache[key] { return known }
            var fields = type.fields
            guard let descriptor = rfx_isolation_shell_descriptor_create(&fields) else {
                throw .createFailed(filter: type.id, message: "out of memory for an isolated type")
            }
            let shell: FilterType
            do {
                shell = try FilterType(descriptor: descriptor, library: type.library)
            } catch let error as FilterType.Malformed {
                free(descriptor)
                throw .createFailed(filter: type.id, message: error.reason)
            } catch {
                preconditionFailure("FilterType.init throws Malformed only")
            }
            cache[key] = shell
            return shell
        }
    }

    /// [control] The instances of an isolation group's stages (`types`, in order, video): a
    /// proxy for the first, whose helper runs them all, and a shell for each other one.
    static func makeGroup(_ types: [FilterType], _ isolation: StageIsolation, allowUntrusted: Bool) throws(ChainError) -> [FilterInstance] {
        for type in types where type.mediaKind != .video {
            throw .contract("'\(type.id)' is an audio filter: isolation groups (@isolate(group=\(isolation.group ?? ""))) run video stages; isolate an audio stage in a helper of its own (@isolate without group=)")
        }
        let owner = try proxyType(for: types[0], isolation, group: Array(types.dropFirst()), allowUntrusted: allowUntrusted).makeInstance()
        var instances = [owner]
        for (offset, type) in types.dropFirst().enumerated() {
            instances.append(try FilterInstance(type: shellType(for: type), groupOwner: owner, member: offset + 1))
        }
        return instances
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
    /// In an isolation group (`@isolate(group=NAME)`) the figures above are the group's: a
    /// fault in any of its stages passes the frame through all of them. These are the stage's:
    /// the faults that happened while it ran (a fault between frames belongs to none), its
    /// position in the group (from 0) and the group's size (1 for a stage alone).
    public var stageFaults: UInt64 = 0
    public var groupMember: Int = 0
    public var groupSize: Int = 1

    public var description: String {
        "isolated: \(faults) faults, \(restarts) restarts, \(passthrough) passed through, \(isUp ? "up" : "down")"
            + (groupSize > 1 ? " (stage \(groupMember + 1) of a group of \(groupSize), \(stageFaults) faults in it)" : "")
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
                                isUp: c.up != 0, pid: c.pid, deadlineNanoseconds: c.deadline_ns, stageFaults: c.stage_faults,
                                groupMember: Int(c.group_member), groupSize: Int(c.group_size))
    }
}

extension FilterInstance {
    /// [any] True for the proxy of an isolated stage (`@isolate`), or a shell of its group.
    var isIsolated: Bool { rfx_isolation_is_proxy(type.descriptor) != 0 }

    /// [any] The stage's position in its isolation group (from 0) and the group's size, when
    /// it is in a group of several; nil otherwise.
    var isolationGroupPosition: (member: Int, count: Int)? {
        guard isIsolated else { return nil }
        var member: UInt32 = 0, count: UInt32 = 0
        guard rfx_isolation_group_position(filter, &member, &count) != 0, count > 1 else { return nil }
        return (Int(member), Int(count))
    }

    /// [after configure] What this stage of an isolation group was negotiated as in its helper
    /// (the chain sees the group's output at its first stage, and shells that pass it on).
    var isolationGroupNegotiation: (input: StreamFormat, output: StreamFormat, latency: Int)? {
        var input = rawfx_format(), negotiation = rawfx_negotiation()
        guard isolationGroupPosition != nil, rfx_isolation_member_negotiation(filter, &input, &negotiation) != 0,
              let i = StreamFormat(input), let o = StreamFormat(negotiation.output) else { return nil }
        return (i, o, Int(negotiation.latency))
    }

    /// [after a failed configure or process of a group's proxy] The group's stage (from 0) whose
    /// filter returned the error; nil for a stage alone.
    var isolationGroupFailedStage: Int? {
        guard isolationGroupPosition != nil else { return nil }
        let member = rfx_isolation_failed_stage(filter)
        return member >= 0 ? Int(member) : nil
    }

    /// [any, never waits] Bypasses (skips) this stage of an isolation group in its helper.
    func setIsolationGroupBypass(_ bypassed: Bool) { rfx_isolation_set_bypass(filter, bypassed ? 1 : 0) }
}

/// The chains' view of isolated stages (`StageGroupPolicy`): an isolation group's stages run in
/// one helper behind the first stage's proxy, and an isolated stage reads its input from, and
/// writes its output to, its shared memory.
struct IsolationStageGroups: StageGroupPolicy {
    func groupStart(of instance: FilterInstance, at index: Int) -> Int? {
        instance.isolationGroupPosition.map { index - $0.member }
    }

    func memberNegotiation(of instance: FilterInstance) -> (input: StreamFormat, output: StreamFormat, latency: Int)? {
        instance.isolationGroupNegotiation
    }

    func failedMemberOffset(of instance: FilterInstance) -> Int? { instance.isolationGroupFailedStage }

    func setBypassInGroup(_ instance: FilterInstance, _ bypassed: Bool) -> Bool {
        guard instance.isolationGroupPosition != nil else { return false }
        instance.setIsolationGroupBypass(bypassed)
        return true
    }
}

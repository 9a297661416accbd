// rawfx-isolate: the helper process of an isolated stage (docs/isolation.md).
//
// Started by the engine's supervisor thread (Sources/RawFXRuntime/iso_supervisor.c) with the
// shared memory as fd 3: `rawfx-isolate --plugin PATH --filter ID [--plugin PATH --filter ID ...]
// [--allow-untrusted] [--seccomp-strict]`, one pair per stage (several for an isolation group,
// `@isolate(group=NAME)`, run in order on the shared frame). It loads the plugins with the
// engine's loader and trust rules, creates one instance per stage, and serves commands from
// the control block until the host kills it. Everything runs on the main thread; the futex
// wait is the only blocking call between frames.
#if canImport(Glibc)
import Glibc
#endif
import Logging
import RawFX
import RawFXIsolateHelper
import RawFXIsolationChannel
import RawFXRuntime

// Only this helper's own start-up failures reach stderr (`report`, inherited from the host).
LoggingSystem.bootstrap(StandardErrorLogHandler.init)

/// Writes one line to stderr (the host's, inherited).
func report(_ message: String) {
    let line = Array("rawfx-isolate: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    report(message)
    exit(2)
}

/// The stages, in order: each filter with the plugin named before it.
var stages: [(plugin: String, filter: String)] = []
var pluginPath: String?
var allowUntrusted = false
var seccompStrict = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--plugin": pluginPath = arguments.popFirst()
    case "--filter":
        guard let plugin = pluginPath, let filter = arguments.popFirst() else { fail("--filter ID needs a --plugin PATH before it") }
        stages.append((plugin, filter))
    case "--allow-untrusted": allowUntrusted = true
    case "--seccomp-strict": seccompStrict = true
    default: fail("unknown argument '\(argument)'; expected --plugin PATH --filter ID ... [--allow-untrusted] [--seccomp-strict]")
    }
}
guard !stages.isEmpty, stages.count <= Int(RFX_ISO_GROUP_MAX) else {
    fail("expected --plugin PATH --filter ID, 1 to \(RFX_ISO_GROUP_MAX) times (started by the engine, not by hand)")
}

// Least privilege before any plugin code runs (a plugin cannot undo no_new_privs).
if rfx_iso_helper_restrict() != 0 { report("the kernel refused a restriction (no_new_privs or pdeathsig); continuing") }
// `@isolate(seccomp=strict)`: the allow-list, before the plugin is loaded (dlopen runs its
// constructors). Asked for and refused is fatal: the stage then never comes up unfiltered.
if seccompStrict, rfx_iso_helper_seccomp_strict() != 0 {
    fail("the kernel refused the seccomp filter (\(String(cString: strerror(errno)))); the stage asked for seccomp=strict")
}
// Otherwise the default filter: the plugin cannot signal, stop or trace the host or its
// group, and what it starts stays in the helper's group. Refused is fatal too: a helper
// never runs a plugin that could kill the call it serves.
if !seccompStrict, rfx_iso_helper_seccomp_default() != 0 {
    fail("the kernel refused the default seccomp filter (\(String(cString: strerror(errno))))")
}

let sharedFD: Int32 = 3
var mapping = UnsafeMutableRawPointer(bitPattern: 1)!
var mappedSize = 0

/// Maps the memfd at its current size (at start, and after MAP).
@MainActor func mapShared() -> Bool {
    var status = stat()
    guard fstat(sharedFD, &status) == 0, status.st_size >= MemoryLayout<rfx_iso_control>.size else { return false }
    guard let p = mmap(nil, Int(status.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, sharedFD, 0), p != MAP_FAILED else { return false }
    mapping = p
    mappedSize = Int(status.st_size)
    return true
}

guard mapShared() else { fail("fd 3 is not the shared memory of an isolated stage") }
var control = mapping.assumingMemoryBound(to: rfx_iso_control.self)
guard control.pointee.magic == RFX_ISO_MAGIC else { fail("fd 3 does not start with an isolation control block") }
// Every line logged from here on (the loader's, the plugins') goes to the host through the
// control block's log ring: the host logs it as the plugin's, with the filter's name, to its
// own handler (`rawfx_set_log_callback`, `-v`), not to this process's stderr.
rfx_iso_helper_forward_log(control)

var registry: PluginRegistry?
/// One instance per stage, in order (empty until HELLO).
var instances: [FilterInstance] = []
/// Frames handed to the plugin: [0] input, [1] output; reused for every call.
let videoFrames = UnsafeMutablePointer<rawfx_video_frame>.allocate(capacity: 2)
videoFrames.initialize(repeating: rawfx_video_frame(), count: 2)
let audioFrames = UnsafeMutablePointer<rawfx_audio_frame>.allocate(capacity: 2)
audioFrames.initialize(repeating: rawfx_audio_frame(), count: 2)

/// Writes the reply's message (cut to the block's size).
@MainActor func setError(_ message: String) {
    withUnsafeMutableBytes(of: &control.pointee.error) { buffer in
        let bytes = Array(message.utf8.prefix(buffer.count - 1))
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
}

/// The message of a ChainError as the plugin said it (the host adds the filter's name).
@MainActor func message(of error: ChainError) -> String {
    switch error {
    case .refused(_, _, let message): return message
    case .invalidValue(_, _, _, let expected): return expected
    case .createFailed(_, let message): return message
    default: return "\(error)"
    }
}

/// An offset from the host, checked to lie inside the mapping with `bytes` after it.
@MainActor func pointer<T>(_ offset: UnsafeMutablePointer<T>?, bytes: Int) -> UnsafeMutablePointer<T>? {
    let value = Int(bitPattern: offset)
    guard value > 0, bytes >= 0, value + bytes <= mappedSize else { return nil }
    return (mapping + value).assumingMemoryBound(to: T.self)
}

@MainActor func toPointers(_ frame: inout rawfx_video_frame) -> Bool {
    let cw = (Int(frame.width) + 1) / 2, ch = (Int(frame.height) + 1) / 2
    guard let y = pointer(frame.planes.0, bytes: Int(frame.strides.0) * Int(frame.height)),
          let u = pointer(frame.planes.1, bytes: Int(frame.strides.1) * ch),
          let v = pointer(frame.planes.2, bytes: Int(frame.strides.2) * ch),
          Int(frame.strides.0) >= Int(frame.width), Int(frame.strides.1) >= cw, Int(frame.strides.2) >= cw else { return false }
    frame.planes = (y, u, v)
    return true
}

@MainActor func toOffsets(_ frame: inout rawfx_video_frame) {
    func offset(_ p: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
        guard let p else { return nil }
        return UnsafeMutablePointer(bitPattern: UnsafeMutableRawPointer(p) - mapping)
    }
    frame.planes = (offset(frame.planes.0), offset(frame.planes.1), offset(frame.planes.2))
}

/// A stage's message; in a group, naming the stage (the host's errors name the group's first).
@MainActor func stageMessage(_ stage: Int, _ message: String) -> String {
    stages.count == 1 ? message : "in stage \(stage + 1) of \(stages.count) of the isolation group (\(stages[stage].filter)): \(message)"
}

/// A bypassed out-of-place stage's output: its input, copied plane by plane (same format: the
/// host bypasses only a stage that keeps it).
@MainActor func copyPlanes(from source: rawfx_video_frame, to target: rawfx_video_frame) {
    guard source.width == target.width, source.height == target.height else { return }
    // Plane by plane with no array: this runs per frame while the stage is bypassed.
    func copy(_ from: UnsafeMutablePointer<UInt8>?, _ fromStride: Int32, _ to: UnsafeMutablePointer<UInt8>?, _ toStride: Int32, chroma: Bool) {
        guard let from, let to else { return }
        let width = chroma ? (Int(source.width) + 1) / 2 : Int(source.width)
        let height = chroma ? (Int(source.height) + 1) / 2 : Int(source.height)
        for row in 0..<height { memcpy(to + row * Int(toStride), from + row * Int(fromStride), width) }
    }
    copy(source.planes.0, source.strides.0, target.planes.0, target.strides.0, chroma: false)
    copy(source.planes.1, source.strides.1, target.planes.1, target.strides.1, chroma: true)
    copy(source.planes.2, source.strides.2, target.planes.2, target.strides.2, chroma: true)
}

extension Array where Element == FilterInstance {
    /// No out-of-place stage: the group edits the input frame.
    var allInPlace: Bool {
        for instance in self where instance.type.processing != .inPlace { return false }
        return true
    }
}

@MainActor func serve(_ command: UInt32) -> rawfx_status {
    switch command {
    case UInt32(RFX_ISO_HELLO):
        do {
            let loaded = PluginRegistry.empty(environment: allowUntrusted ? [PluginTrust.overrideVariable: "1"] : [:])
            var paths: Set<String> = []
            for stage in stages where paths.insert(stage.plugin).inserted { try loaded.load(path: stage.plugin) }
            registry = loaded
            for (k, stage) in stages.enumerated() {
                control.pointee.member = UInt32(k)
                instances.append(try loaded.filterType(stage.filter).makeInstance())
            }
            return rawfx_status(RAWFX_OK)
        } catch let error as ChainError {
            setError(message(of: error))
        } catch {
            setError("\(error)")
        }
        return rawfx_status(RAWFX_ERR_INTERNAL)
    case UInt32(RFX_ISO_SET_PARAM):
        // The group's parameters are one list: the first stage's, then the second's, ...
        var index = Int(control.pointee.param_index)
        var stage = 0
        while stage < instances.count, index >= instances[stage].type.parameters.count {
            index -= instances[stage].type.parameters.count
            stage += 1
        }
        guard stage < instances.count else { break }
        let instance = instances[stage]
        let c = control.pointee
        let value: ParameterValue
        switch instance.type.parameters[index].type {
        case .int: value = .int(c.param_int)
        case .float: value = .float(c.param_float)
        case .bool: value = .bool(c.param_int != 0)
        case .enumeration(let names):
            guard c.param_int >= 0, Int(c.param_int) < names.count else {
                setError("enum index \(c.param_int), expected below \(names.count)")
                return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
            }
            value = .enumeration(index: Int(c.param_int), name: names[Int(c.param_int)])
        case .string:
            value = .string(withUnsafeBytes(of: control.pointee.param_string) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) })
        }
        do {
            try instance.set(index: index, value: value)
            return rawfx_status(RAWFX_OK)
        } catch {
            setError(stageMessage(stage, message(of: error)))
            return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
        }
    case UInt32(RFX_ISO_CONFIGURE):
        guard !instances.isEmpty, var format = StreamFormat(control.pointee.input) else { break }
        // Each stage for the previous one's output; the host reads every stage's answer.
        for (k, instance) in instances.enumerated() {
            control.pointee.member = UInt32(k)
            do {
                let n = try instance.configure(input: format)
                var c = rawfx_negotiation()
                c.struct_size = UInt32(MemoryLayout<rawfx_negotiation>.size)
                c.output = n.output.cValue
                c.block_frames = UInt32(n.blockFrames)
                c.max_output_frames = UInt32(n.maxOutputFrames)
                c.latency = UInt32(n.latency)
                rfx_iso_member_negotiation(control, UInt32(k)).pointee = c
                control.pointee.negotiation = c
                format = n.output
            } catch {
                setError(stageMessage(k, message(of: error)))
                return rawfx_status(RAWFX_ERR_UNSUPPORTED)
            }
        }
        return rawfx_status(RAWFX_OK)
    case UInt32(RFX_ISO_MAP):
        let size = Int(control.pointee.mapped_size_lo) | Int(control.pointee.mapped_size_hi) << 32
        let old = mapping, oldSize = mappedSize
        guard mapShared(), mappedSize >= size else { break }
        control = mapping.assumingMemoryBound(to: rfx_iso_control.self)
        rfx_iso_helper_forward_log(control)
        munmap(old, oldSize)
        return rawfx_status(RAWFX_OK)
    case UInt32(RFX_ISO_PROCESS_VIDEO):
        guard !instances.isEmpty else { break }
        // videoFrames[0]: the frame so far (the input, then each out-of-place stage's
        // output); videoFrames[1]: the next out-of-place stage's output, in the memfd.
        videoFrames[0] = control.pointee.video_in
        guard toPointers(&videoFrames[0]) else { break }
        let bypassed = control.pointee.bypass_mask
        var status = rawfx_status(RAWFX_OK)
        var stage = 0
        while stage < instances.count {
            let instance = instances[stage]
            control.pointee.member = UInt32(stage)
            let skipped = bypassed & (1 << UInt32(stage)) != 0
            if instance.type.processing == .inPlace {
                if !skipped { status = instance.processVideo(videoFrames, videoFrames) }
            } else {
                videoFrames[1] = rfx_iso_member_out(control, UInt32(stage)).pointee
                guard toPointers(&videoFrames[1]) else { status = rawfx_status(RAWFX_ERR_STATE); break }
                videoFrames[1].timestamp_us = videoFrames[0].timestamp_us
                // A bypassed stage's output is its input, where the next stage (or the host) expects it.
                if skipped { copyPlanes(from: videoFrames[0], to: videoFrames[1]) } else { status = instance.processVideo(videoFrames, videoFrames + 1) }
                videoFrames[0] = videoFrames[1]
            }
            if status != RAWFX_OK {
                setError(stageMessage(stage, instance.lastError))
                break
            }
            stage += 1
        }
        HostContext.leaveProcess()
        toOffsets(&videoFrames[0])
        // The group's output: the input frame edited in place, or the last out-of-place stage's.
        if instances.allInPlace { control.pointee.video_in = videoFrames[0] } else { control.pointee.video_out = videoFrames[0] }
        return status
    case UInt32(RFX_ISO_PROCESS_AUDIO):
        // Audio stages are isolated one per helper (groups are video only).
        guard instances.count == 1, let instance = instances.first else { break }
        audioFrames[0] = control.pointee.audio_in
        audioFrames[1] = control.pointee.audio_out
        let inBytes = Int(audioFrames[0].frame_count) * Int(audioFrames[0].channels) * 2
        let outBytes = Int(audioFrames[1].frame_count) * Int(audioFrames[1].channels) * 2
        guard let input = pointer(audioFrames[0].samples, bytes: inBytes),
              let output = pointer(audioFrames[1].samples, bytes: outBytes) else { break }
        audioFrames[0].samples = input
        audioFrames[1].samples = output
        let inPlace = instance.type.processing == .inPlace
        let status = instance.processAudio(audioFrames, inPlace ? audioFrames : audioFrames + 1)
        HostContext.leaveProcess()
        if status != RAWFX_OK { setError(instance.lastError) }
        for k in 0..<2 {
            audioFrames[k].samples = audioFrames[k].samples.map { UnsafeMutablePointer(bitPattern: UnsafeMutableRawPointer($0) - mapping)! }
        }
        control.pointee.audio_in = audioFrames[0]
        control.pointee.audio_out = audioFrames[1]
        return status
    case UInt32(RFX_ISO_RESET):
        for instance in instances { instance.reset() }
        return rawfx_status(RAWFX_OK)
    default:
        break
    }
    setError("command \(command) is not valid now (the instances exist: \(!instances.isEmpty))")
    return rawfx_status(RAWFX_ERR_STATE)
}

while true {
    let command = rfx_iso_helper_wait(control)
    let status = serve(command)
    rfx_iso_helper_reply(control, status)
}

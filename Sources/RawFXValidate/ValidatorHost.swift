#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RawFX
import RawFXAllocCounter
import RawFXRuntime
import Synchronization

/// What the validator was asking of the plugin when the plugin called its host.
enum PluginCall: Int, CustomStringConvertible {
    case none, initialize, create, setParam, configure, process, reset, liveSetParam, destroy, onCallback, deinitialize

    var description: String {
        switch self {
        case .none: return "no call (between calls)"
        case .initialize: return "init"
        case .create: return "create"
        case .setParam: return "set_param (control thread)"
        case .configure: return "configure"
        case .process: return "process"
        case .reset: return "reset"
        case .liveSetParam: return "set_param between frames"
        case .destroy: return "destroy"
        case .onCallback: return "on_callback"
        case .deinitialize: return "deinit"
        }
    }

    /// The calls rawfx.h tags REAL-TIME (as the validator makes them: on the process thread).
    var isRealTime: Bool { self == .process || self == .reset || self == .liveSetParam }
}

/// How a plugin used one host object, and which of its rules it broke. Counts add up over
/// every host object of a filter for the `threads` check.
struct HostUsage {
    var logLines = 0
    var processThreadQueries = 0
    var poolRuns = 0
    var poolJobs = 0
    var reconfigureRequests = 0
    var callbackRequests = 0
    var callbacksDelivered = 0
    /// Broken rules: how often, and the call during which the first happened.
    var violations: [(rule: String, count: Int, first: PluginCall)] = []

    static func + (a: HostUsage, b: HostUsage) -> HostUsage {
        var sum = a
        sum.logLines += b.logLines
        sum.processThreadQueries += b.processThreadQueries
        sum.poolRuns += b.poolRuns
        sum.poolJobs += b.poolJobs
        sum.reconfigureRequests += b.reconfigureRequests
        sum.callbackRequests += b.callbackRequests
        sum.callbacksDelivered += b.callbacksDelivered
        for v in b.violations {
            if let i = sum.violations.firstIndex(where: { $0.rule == v.rule }) {
                sum.violations[i].count += v.count
            } else {
                sum.violations.append(v)
            }
        }
        return sum
    }

    /// One line per broken rule.
    var violationLines: [String] {
        violations.map { "\($0.rule) \(times($0.count)), first during \($0.first)" }
    }

    /// "3 log lines, 12 thread-pool runs (48 jobs)…", or "no host calls".
    var summary: String {
        var parts: [String] = []
        if logLines > 0 { parts.append(plural(logLines, "log line")) }
        if poolRuns > 0 { parts.append("\(plural(poolRuns, "thread-pool run")) (\(plural(poolJobs, "job")))") }
        if processThreadQueries > 0 { parts.append("is_process_thread asked \(times(processThreadQueries))") }
        if callbackRequests > 0 {
            parts.append("\(plural(callbackRequests, "callback request")), \(plural(callbacksDelivered, "on_callback call"))")
        }
        if reconfigureRequests > 0 {
            parts.append("\(plural(reconfigureRequests, "reconfigure request")) (counted; the validator does not reconfigure)")
        }
        return parts.isEmpty ? "no host calls" : parts.joined(separator: ", ")
    }
}

/// An instrumented `rawfx_host` (rawfx.h 1.1): what the validator hands to `init` (kind
/// `.library`) and to each instance's `create_with_host` (kind `.instance`).
///
/// Every function the plugin may call on its process thread is allocation-free and lock-free:
/// atomics, and the C runtime (`rfx_runtime_log`, `rfx_runtime_run_jobs`, and a runtime host
/// context for `is_process_thread`, which knows the pool's worker threads). `log` is
/// forwarded to RawFX's log (`RawFXLog`). The thread pool is offered as
/// "rawfx.thread-pool/1"; its `run` first checks that it was called from inside `process`
/// on the process thread, as the extension's header demands.
/// Unchecked `Sendable`: the plugin calls it from any thread through C; what those calls change is atomic or behind `Mutex`, the rest is the validator's thread's.
final class ValidatorHost: @unchecked Sendable {
    enum Kind { case library, instance }

    let kind: Kind
    /// The struct the plugin gets; `host_data` points back at this object.
    let raw: UnsafeMutablePointer<rawfx_host>
    private let source: UnsafeMutablePointer<CChar>
    /// The runtime's own host object for this one (kind INSTANCE): its process-thread mark
    /// is what `rfx_runtime_run_jobs` hands to the pool's workers.
    private var runtime: OpaquePointer?
    private let runtimeHost: UnsafePointer<rawfx_host>?
    /// The job and context of the run in progress, read by the pool's workers.
    private let slot: UnsafeMutablePointer<(job: rawfx_slice_job?, context: UnsafeMutableRawPointer?)>

    private let call = Atomic<Int>(PluginCall.none.rawValue)
    private let released = Atomic<Bool>(false)
    private let runDepth = Atomic<Int>(0)
    private let callbackPending = Atomic<Bool>(false)
    /// Allocations made by slice jobs on the pool's worker threads.
    let workerAllocations = Atomic<UInt64>(0)
    /// Locks, sleeps, I/O and thread starts of slice jobs on the pool's worker threads.
    let workerBlocking = Mutex(BlockingCalls())

    private let logLines = Atomic<Int>(0)
    private let processThreadQueries = Atomic<Int>(0)
    private let poolRuns = Atomic<Int>(0)
    private let poolJobs = Atomic<Int>(0)
    private let reconfigureRequests = Atomic<Int>(0)
    private let callbackRequests = Atomic<Int>(0)
    private var callbacksDelivered = 0

    /// Rule breaks: a count and the call during which the first happened (-1: none yet).
    private struct Violation: ~Copyable {
        let count = Atomic<Int>(0)
        let firstCall = Atomic<Int>(-1)
        func record(_ call: Int) {
            count.add(1, ordering: .relaxed)
            _ = firstCall.compareExchange(expected: -1, desired: call, ordering: .relaxed)
        }
    }
    private let badLogCalls = Violation()
    private let poolOutsideProcess = Violation()
    private let poolOnLibraryHost = Violation()
    private let nestedRuns = Violation()
    private let badPoolArguments = Violation()
    private let realTimeExtensionQueries = Violation()
    private let callsAfterRelease = Violation()

    /// `source` names the object in log lines: the filter id, or the plugin file's name.
    init(kind: Kind, source: String) {
        self.kind = kind
        self.source = strdup(source)
        slot = .allocate(capacity: 1)
        slot.initialize(to: (nil, nil))
        if kind == .instance {
            let context = rfx_host_context_create(source, RFX_HOST_INSTANCE)
            runtime = context
            runtimeHost = rfx_host_context_host(context)
        } else {
            runtime = nil
            runtimeHost = nil
        }
        // Globals initialize lazily, and allocate: never first on the process thread.
        _ = ValidatorHost.threadPoolID
        _ = ValidatorHost.renderModeID
        _ = threadPoolExtension
        _ = renderModeExtension
        _ = runSliceJob
        raw = .allocate(capacity: 1)
        raw.initialize(to: rawfx_host(
            struct_size: UInt32(MemoryLayout<rawfx_host>.size),
            abi: rawfx_abi_version(major: UInt32(RAWFX_ABI_MAJOR), minor: UInt32(RAWFX_ABI_MINOR)),
            name: ValidatorHost.hostName, version: ValidatorHost.hostVersion, host_data: nil,
            log: hostLog, request_reconfigure: hostRequestReconfigure, is_process_thread: hostIsProcessThread,
            get_extension: hostGetExtension, request_callback: hostRequestCallback))
        raw.pointee.host_data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        if let runtime { rfx_host_context_destroy(runtime) }
        raw.deallocate()
        slot.deallocate()
        free(source)
    }

    /// The host object the plugin was handed.
    var pointer: UnsafePointer<rawfx_host> { UnsafePointer(raw) }

    nonisolated(unsafe) static let hostName = UnsafePointer(strdup("rawfx")!)
    nonisolated(unsafe) static let hostVersion = UnsafePointer(strdup(RAWFX_HOST_VERSION_STRING)!)
    nonisolated(unsafe) private static let threadPoolID = UnsafePointer(strdup(RAWFX_EXT_THREAD_POOL)!)
    nonisolated(unsafe) private static let renderModeID = UnsafePointer(strdup(RAWFX_EXT_RENDER_MODE)!)

    /// What "rawfx.render-mode/1" answers: offline for the checks that compare outputs (a
    /// filter with a worker of its own may wait for it, so its output is reproducible), real
    /// time while the real-time check counts what process, reset and set_param do.
    let renderOffline = Atomic<Bool>(true)

    /// The host object behind a pointer the plugin passed back, or nil for NULL.
    static func of(_ host: UnsafePointer<rawfx_host>?) -> ValidatorHost? {
        guard let data = host?.pointee.host_data else { return nil }
        return Unmanaged<ValidatorHost>.fromOpaque(data).takeUnretainedValue()
    }

    /// Calls that came with a NULL host (they cannot be pinned on one instance).
    static let nullHostCalls = Atomic<Int>(0)

    // MARK: - The validator's side

    /// Marks the call the validator is making into the plugin (from the thread making it).
    func begin(_ current: PluginCall) { call.store(current.rawValue, ordering: .relaxed) }
    func end() { call.store(PluginCall.none.rawValue, ordering: .relaxed) }

    /// [process thread] `begin(.process)` and the runtime's process-thread mark.
    func enterProcess() {
        begin(.process)
        if let runtime { rfx_host_context_enter_process(runtime) }
    }

    func leaveProcess() {
        if runtime != nil { rfx_host_context_leave_process() }
        end()
    }

    /// The instance's `destroy` (or the file's `deinit`) returned: later calls are violations.
    func release() { released.store(true, ordering: .releasing) }

    /// True (once) when the plugin asked for `on_callback` since the last time.
    func takeCallbackRequest() -> Bool { callbackPending.exchange(false, ordering: .acquiringAndReleasing) }
    func noteCallbackDelivered() { callbacksDelivered += 1 }

    /// Counts and broken rules so far.
    var usage: HostUsage {
        var u = HostUsage()
        u.logLines = logLines.load(ordering: .relaxed)
        u.processThreadQueries = processThreadQueries.load(ordering: .relaxed)
        u.poolRuns = poolRuns.load(ordering: .relaxed)
        u.poolJobs = poolJobs.load(ordering: .relaxed)
        u.reconfigureRequests = reconfigureRequests.load(ordering: .relaxed)
        u.callbackRequests = callbackRequests.load(ordering: .relaxed)
        u.callbacksDelivered = callbacksDelivered
        func add(_ v: borrowing Violation, _ what: String) {
            let n = v.count.load(ordering: .relaxed)
            guard n > 0 else { return }
            u.violations.append((what, n, PluginCall(rawValue: v.firstCall.load(ordering: .relaxed)) ?? .none))
        }
        add(poolOutsideProcess, "called the thread pool's run outside process (run is [process]; it returned RAWFX_ERR_STATE)")
        add(poolOnLibraryHost, "called the thread pool's run with the plugin file's host (the pool belongs to instance hosts)")
        add(nestedRuns, "called run from inside a slice job (jobs must not call run; it ran inline)")
        add(badPoolArguments, "called run with a NULL job")
        add(realTimeExtensionQueries, "called get_extension, which is not real-time, from a real-time call")
        add(badLogCalls, "called log with a NULL message or a severity outside 0-3")
        add(callsAfterRelease, "called its host after \(kind == .instance ? "destroy" : "deinit") returned")
        return u
    }

    // MARK: - The plugin's side (called from any thread)

    /// False (and counted) after release.
    fileprivate func accepts() -> Bool {
        guard released.load(ordering: .acquiring) else { return true }
        callsAfterRelease.record(call.load(ordering: .relaxed))
        return false
    }

    fileprivate var currentCall: Int { call.load(ordering: .relaxed) }

    /// True on the thread processing this instance right now, or on a pool worker running one
    /// of its slice jobs (the runtime's answer).
    fileprivate var runtimeSaysProcessThread: Bool {
        guard let runtimeHost, let ask = runtimeHost.pointee.is_process_thread else { return false }
        return ask(runtimeHost) != 0
    }

    /// Inside a real-time call, on the thread making it (or one of its slice jobs).
    fileprivate var inRealTimeCall: Bool {
        guard (PluginCall(rawValue: currentCall) ?? .none).isRealTime else { return false }
        return ProcessThread.shared.isCurrent || runtimeSaysProcessThread
    }

    fileprivate func log(_ severity: rawfx_log_severity, _ message: UnsafePointer<CChar>?) {
        guard accepts() else { return }
        logLines.add(1, ordering: .relaxed)
        guard let message, severity <= rawfx_log_severity(RAWFX_LOG_ERROR) else {
            badLogCalls.record(currentCall)
            return
        }
        rfx_runtime_log_from(kind == .instance ? RFX_LOG_PLUGIN_INSTANCE : RFX_LOG_PLUGIN_LIBRARY,
                             severity, source, message)
    }

    fileprivate func requestReconfigure() {
        guard accepts() else { return }
        reconfigureRequests.add(1, ordering: .relaxed)
    }

    fileprivate func requestCallback() {
        guard accepts() else { return }
        callbackRequests.add(1, ordering: .relaxed)
        if kind == .instance { callbackPending.store(true, ordering: .releasing) }
    }

    fileprivate func isProcessThread() -> Int32 {
        guard accepts() else { return 0 }
        processThreadQueries.add(1, ordering: .relaxed)
        return kind == .instance && runtimeSaysProcessThread ? 1 : 0
    }

    fileprivate func getExtension(_ id: UnsafePointer<CChar>?) -> UnsafeRawPointer? {
        guard accepts() else { return nil }
        if inRealTimeCall { realTimeExtensionQueries.record(currentCall) }
        guard kind == .instance, let id else { return nil }
        if strcmp(id, ValidatorHost.threadPoolID) == 0 { return UnsafeRawPointer(threadPoolExtension) }
        if strcmp(id, ValidatorHost.renderModeID) == 0 { return UnsafeRawPointer(renderModeExtension) }
        return nil
    }

    fileprivate func run(_ job: rawfx_slice_job?, _ context: UnsafeMutableRawPointer?, _ count: UInt32) -> rawfx_status {
        guard accepts() else { return rawfx_status(RAWFX_ERR_STATE) }
        guard kind == .instance else {
            poolOnLibraryHost.record(currentCall)
            return rawfx_status(RAWFX_ERR_STATE)
        }
        guard let job else {
            badPoolArguments.record(currentCall)
            return rawfx_status(RAWFX_ERR_INVALID_ARGUMENT)
        }
        if runDepth.load(ordering: .acquiring) > 0 && runtimeSaysProcessThread {
            // A slice job called run: the header says it runs inline. The slot is in use.
            nestedRuns.record(currentCall)
            for index in 0..<count { job(context, index) }
            return rawfx_status(RAWFX_OK)
        }
        guard currentCall == PluginCall.process.rawValue, runtimeSaysProcessThread else {
            poolOutsideProcess.record(currentCall)
            return rawfx_status(RAWFX_ERR_STATE)
        }
        poolRuns.add(1, ordering: .relaxed)
        poolJobs.add(Int(count), ordering: .relaxed)
        runDepth.add(1, ordering: .acquiringAndReleasing)
        slot.pointee = (job, context)
        rfx_runtime_run_jobs(runSliceJob, Unmanaged.passUnretained(self).toOpaque(), count)
        runDepth.subtract(1, ordering: .acquiringAndReleasing)
        return rawfx_status(RAWFX_OK)
    }

    /// One slice job, on whichever thread the pool chose. Allocations on a worker thread are
    /// added up here (the process thread's own are counted around `process`).
    fileprivate func runJob(_ index: UInt32) {
        let (job, context) = slot.pointee
        if ProcessThread.shared.isCurrent {
            // Counted as part of process (run paused the count for the pool's own waits).
            let paused = rawfx_rt_set(1)
            job?(context, index)
            _ = rawfx_rt_set(paused)
            return
        }
        let before = rawfx_thread_allocation_count()
        _ = rawfx_rt_take()
        let paused = rawfx_rt_set(1)
        job?(context, index)
        _ = rawfx_rt_set(paused)
        let made = rawfx_thread_allocation_count() &- before
        if made > 0 { workerAllocations.add(made, ordering: .relaxed) }
        let blocking = BlockingCalls(rawfx_rt_take())
        if blocking.total > 0 { workerBlocking.withLock { $0.add(blocking) } }
    }
}

// The C function pointers of the host object and of the thread-pool extension. They capture
// nothing (C cannot carry a context); each finds its ValidatorHost through host_data.

nonisolated(unsafe) private let hostLog: @convention(c) (UnsafePointer<rawfx_host>?, rawfx_log_severity, UnsafePointer<CChar>?) -> Void = {
    host, severity, message in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else { ValidatorHost.nullHostCalls.add(1, ordering: .relaxed); return }
    h.log(severity, message)
}

nonisolated(unsafe) private let hostRequestReconfigure: @convention(c) (UnsafePointer<rawfx_host>?) -> Void = { host in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else { ValidatorHost.nullHostCalls.add(1, ordering: .relaxed); return }
    h.requestReconfigure()
}

nonisolated(unsafe) private let hostRequestCallback: @convention(c) (UnsafePointer<rawfx_host>?) -> Void = { host in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else { ValidatorHost.nullHostCalls.add(1, ordering: .relaxed); return }
    h.requestCallback()
}

nonisolated(unsafe) private let hostIsProcessThread: @convention(c) (UnsafePointer<rawfx_host>?) -> Int32 = { host in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else { ValidatorHost.nullHostCalls.add(1, ordering: .relaxed); return 0 }
    return h.isProcessThread()
}

nonisolated(unsafe) private let hostGetExtension: @convention(c) (UnsafePointer<rawfx_host>?, UnsafePointer<CChar>?) -> UnsafeRawPointer? = {
    host, id in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else { ValidatorHost.nullHostCalls.add(1, ordering: .relaxed); return nil }
    return h.getExtension(id)
}

nonisolated(unsafe) private let poolThreadCount: @convention(c) (UnsafePointer<rawfx_host>?) -> UInt32 = { _ in rfx_runtime_thread_count() }

nonisolated(unsafe) private let poolRun: @convention(c) (UnsafePointer<rawfx_host>?, rawfx_slice_job?, UnsafeMutableRawPointer?, UInt32) -> rawfx_status = {
    host, job, context, count in
    let paused = rawfx_rt_set(0)  // the host's own locks and writes are not the plugin's
    defer { _ = rawfx_rt_set(paused) }
    guard let h = ValidatorHost.of(host) else {
        ValidatorHost.nullHostCalls.add(1, ordering: .relaxed)
        return rawfx_status(RAWFX_ERR_STATE)
    }
    return h.run(job, context, count)
}

nonisolated(unsafe) private let runSliceJob: @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Void = { context, index in
    Unmanaged<ValidatorHost>.fromOpaque(context!).takeUnretainedValue().runJob(index)
}

/// "rawfx.thread-pool/1" as the validator offers it: the runtime's pool behind checks.
nonisolated(unsafe) private let renderModeExtension: UnsafeMutablePointer<rawfx_host_render_mode> = {
    let made = UnsafeMutablePointer<rawfx_host_render_mode>.allocate(capacity: 1)
    made.initialize(to: rawfx_host_render_mode(struct_size: UInt32(MemoryLayout<rawfx_host_render_mode>.size), mode: { host in
        guard let h = ValidatorHost.of(host) else { return rawfx_render_mode(RAWFX_RENDER_REALTIME) }
        return rawfx_render_mode(h.renderOffline.load(ordering: .relaxed) ? RAWFX_RENDER_OFFLINE : RAWFX_RENDER_REALTIME)
    }))
    return made
}()

nonisolated(unsafe) private let threadPoolExtension: UnsafeMutablePointer<rawfx_host_thread_pool> = {
    let p = UnsafeMutablePointer<rawfx_host_thread_pool>.allocate(capacity: 1)
    p.initialize(to: rawfx_host_thread_pool(struct_size: UInt32(MemoryLayout<rawfx_host_thread_pool>.size),
                                            thread_count: poolThreadCount, run: poolRun))
    return p
}()

import Dispatch
import RawFX
import RawFXAllocCounter

/// "-2 (RAWFX_ERR_UNSUPPORTED)".
func statusName(_ status: rawfx_status) -> String {
    let names = [RAWFX_OK: "RAWFX_OK", RAWFX_ERR_INVALID_ARGUMENT: "RAWFX_ERR_INVALID_ARGUMENT",
                 RAWFX_ERR_UNSUPPORTED: "RAWFX_ERR_UNSUPPORTED", RAWFX_ERR_OUT_OF_MEMORY: "RAWFX_ERR_OUT_OF_MEMORY",
                 RAWFX_ERR_IO: "RAWFX_ERR_IO", RAWFX_ERR_STATE: "RAWFX_ERR_STATE", RAWFX_ERR_VERSION: "RAWFX_ERR_VERSION",
                 RAWFX_ERR_INTERNAL: "RAWFX_ERR_INTERNAL"]
    return "\(status)" + (names[Int(status)].map { " (\($0))" } ?? "")
}

/// What a real-time call did besides allocating, as RawFXAllocCounter's interposers counted
/// it (rawfx_rt_counter.h): locks and blocking waits, sleeps, file opens and writes, thread
/// starts; with the function of the first of each kind.
struct BlockingCalls: Sendable {
    var locks: UInt64 = 0, sleeps: UInt64 = 0, io: UInt64 = 0, threads: UInt64 = 0
    var firstLock: String?, firstSleep: String?, firstIO: String?, firstThread: String?

    init() {}

    init(_ c: rawfx_rt_counts) {
        locks = c.locks
        sleeps = c.sleeps
        io = c.ios
        threads = c.threads
        firstLock = c.first_locks.map { String(cString: $0) }
        firstSleep = c.first_sleeps.map { String(cString: $0) }
        firstIO = c.first_ios.map { String(cString: $0) }
        firstThread = c.first_threads.map { String(cString: $0) }
    }

    var total: UInt64 { locks + sleeps + io + threads }

    mutating func add(_ other: BlockingCalls) {
        locks += other.locks
        sleeps += other.sleeps
        io += other.io
        threads += other.threads
        firstLock = firstLock ?? other.firstLock
        firstSleep = firstSleep ?? other.firstSleep
        firstIO = firstIO ?? other.firstIO
        firstThread = firstThread ?? other.firstThread
    }

    mutating func add(_ other: rawfx_rt_counts) { add(BlockingCalls(other)) }

    /// "2 locks or blocking waits (first: pthread_mutex_lock), 1 sleep (first: nanosleep)".
    var summary: String {
        var parts: [String] = []
        func part(_ n: UInt64, _ what: String, _ first: String?) {
            if n > 0 { parts.append("\(n) \(what)\(n == 1 ? "" : "s") (first: \(first ?? "?"))") }
        }
        part(locks, "lock or blocking wait", firstLock)
        part(sleeps, "sleep", firstSleep)
        part(io, "file open or write", firstIO)
        part(threads, "thread start", firstThread)
        return parts.joined(separator: ", ")
    }
}

/// Runs `body` as a real-time call on this thread: RawFXAllocCounter's interposers count its
/// locks, sleeps, I/O and thread starts (the host's own functions pause the count). The raw
/// counts: making a BlockingCalls allocates (its strings), so only after the allocation count.
func countingBlockingCalls(_ body: () -> Void) -> rawfx_rt_counts {
    _ = rawfx_rt_take()
    let before = rawfx_rt_set(1)
    body()
    _ = rawfx_rt_set(before)
    return rawfx_rt_take()
}

/// What one call into the plugin did.
struct CallOutcome {
    var status: rawfx_status
    /// `get_error` right after a failure ("" when the plugin left it empty).
    var message: String
    /// Heap allocations on the calling thread (and, for process, in slice jobs on workers).
    var allocations: UInt64
    /// Locks, sleeps, I/O and thread starts of a real-time call (process, reset, live set_param).
    var blocking = BlockingCalls()
    /// How long process took, in seconds (0 for other calls).
    var seconds: Double = 0
    var succeeded: Bool { status == RAWFX_OK }
    /// "returned -2 (RAWFX_ERR_UNSUPPORTED): <message>".
    var failure: String { "returned \(statusName(status))" + (message.isEmpty ? " with no message" : ": \(message)") }
}

/// Every instance of one filter reports here: failed calls (for `error-messages`) and host
/// objects (kept until the filter is done, so a late call from the plugin is caught, not a
/// crash).
final class InstanceLedger {
    var missingMessages = Findings()
    var failedCalls = 0
    var hosts: [ValidatorHost] = []

    func noteFailure(_ call: String, _ outcome: CallOutcome) {
        failedCalls += 1
        if outcome.message.isEmpty {
            missingMessages.fail("\(call) returned \(statusName(outcome.status)) with an empty get_error message")
        }
    }
}

/// One instance of the filter under validation, driven as a host drives it: control calls
/// on the caller's thread; process, and the real-time calls between frames, on the process
/// thread. Each call is marked on the instance's host object, so the host knows which call
/// the plugin is in when it calls back.
final class TestInstance {
    typealias VideoProcess = @convention(c) (UnsafePointer<rawfx_filter>?, UnsafePointer<rawfx_video_frame>?,
                                              UnsafeMutablePointer<rawfx_video_frame>?) -> rawfx_status
    typealias AudioProcess = @convention(c) (UnsafePointer<rawfx_filter>?, UnsafePointer<rawfx_audio_frame>?,
                                              UnsafeMutablePointer<rawfx_audio_frame>?) -> rawfx_status

    let filter: UnsafePointer<rawfx_filter>
    /// The instance struct read by its struct_size and the plugin's minor (on_callback is
    /// NULL for a 1.0 plugin, whatever lies past its struct).
    private let fields: rawfx_filter
    let host: ValidatorHost?
    let ledger: InstanceLedger
    private let video: VideoProcess?
    private let audio: AudioProcess?
    private(set) var negotiation: rawfx_negotiation?
    private var destroyed = false

    /// Creates an instance (`create_with_host` when the plugin has it, else `create`) and
    /// checks its struct, or says what went wrong.
    static func create(_ description: FilterDescription, ledger: InstanceLedger) -> Result<TestInstance, StepFailure> {
        let host = description.createWithHost != nil ? ValidatorHost(kind: .instance, source: description.id) : nil
        if let host { ledger.hosts.append(host) }
        var message = [CChar](repeating: 0, count: 512)
        host?.begin(.create)
        let made: UnsafePointer<rawfx_filter>?
        if let createWithHost = description.createWithHost, let host {
            made = createWithHost(description.descriptor, host.pointer, &message, message.count)
        } else {
            made = description.create!(description.descriptor, &message, message.count)
        }
        host?.end()
        guard let filter = made else {
            host?.release()
            let text = String(nulTerminated: message)
            return .failure(StepFailure(text.isEmpty ? "returned NULL without a message in its error buffer" : "returned NULL: \(text)"))
        }
        let f = PluginStruct.read(filter, zero: rawfx_filter(), sizeForMinor: PluginStruct.filterSize(minor: description.pluginMinor))
        var missing: [String] = []
        if Int(f.struct_size) < PluginStruct.filter10 {
            missing.append("struct_size \(f.struct_size) (less than the 1.0 size \(PluginStruct.filter10), RAWFX_SIZE_1_0_FILTER)")
        }
        if f.descriptor != description.descriptor { missing.append("a descriptor pointer other than its own") }
        if f.destroy == nil { missing.append("no destroy") }
        if f.set_param == nil { missing.append("no set_param") }
        if f.configure == nil { missing.append("no configure") }
        if f.reset == nil { missing.append("no reset") }
        if f.get_error == nil { missing.append("no get_error") }
        if description.kind == .video && f.process_video == nil { missing.append("no process_video (a video filter)") }
        if description.kind == .audio && f.process_audio == nil { missing.append("no process_audio (an audio filter)") }
        guard missing.isEmpty else {
            if let destroy = f.destroy {
                host?.begin(.destroy)
                destroy(filter)
                host?.end()
            }
            host?.release()
            return .failure(StepFailure("gave an instance with " + missing.joined(separator: ", ")))
        }
        return .success(TestInstance(filter: filter, fields: f, host: host, ledger: ledger, kind: description.kind!))
    }

    private init(filter: UnsafePointer<rawfx_filter>, fields: rawfx_filter, host: ValidatorHost?, ledger: InstanceLedger,
                 kind: MediaKind) {
        self.filter = filter
        self.fields = fields
        self.host = host
        self.ledger = ledger
        video = kind == .video ? fields.process_video : nil
        audio = kind == .audio ? fields.process_audio : nil
    }

    deinit { destroy() }

    /// `destroy`, once; the host object is released when it returns.
    func destroy() {
        guard !destroyed else { return }
        destroyed = true
        host?.begin(.destroy)
        fields.destroy(filter)
        host?.end()
        host?.release()
    }

    private var lastError: String {
        guard let p = fields.get_error(filter) else { return "" }
        return String(cString: p)
    }

    /// Runs `on_callback` on this (control) thread when the plugin asked for it: a host must
    /// never run it concurrently with another control call.
    private func serviceCallbacks() {
        guard let host, host.takeCallbackRequest(), let onCallback = fields.on_callback else { return }
        host.begin(.onCallback)
        onCallback(filter)
        host.end()
        host.noteCallbackDelivered()
    }

    /// `set_param`: before configure (or for a RECONFIGURE parameter) on the control thread;
    /// `live`, between two frames on the process thread, counting allocations there.
    func set(_ parameter: ParameterInfo, _ value: TrialValue, live: Bool) -> CallOutcome {
        let filter = self.filter, host = self.host, index = UInt32(parameter.index)
        let setParam = fields.set_param!
        var status: rawfx_status = 0
        var allocations: UInt64 = 0
        var blocking = rawfx_rt_counts()
        value.withC { c in
            let call = {
                host?.begin(live ? .liveSetParam : .setParam)
                let before = rawfx_thread_allocation_count()
                if live {
                    blocking = countingBlockingCalls { status = setParam(filter, index, c) }
                } else {
                    status = setParam(filter, index, c)
                }
                allocations = rawfx_thread_allocation_count() &- before
                host?.end()
            }
            if live { ProcessThread.shared.run(call) } else { call() }
        }
        var outcome = finish("set_param(\(parameter.id)=\(value))", status, allocations: allocations)
        outcome.blocking = BlockingCalls(blocking)
        return outcome
    }

    /// The outcome of a call that returned `status`: on failure with `get_error` (read right
    /// away, before any other call) and noted for error-messages; then any callback it asked for.
    private func finish(_ call: String, _ status: rawfx_status, allocations: UInt64) -> CallOutcome {
        var outcome = CallOutcome(status: status, message: "", allocations: allocations)
        if !outcome.succeeded {
            outcome.message = lastError
            ledger.noteFailure(call, outcome)
        }
        serviceCallbacks()
        return outcome
    }

    /// `configure` with the host's prefill (output = input, the rest zero).
    func configure(_ input: rawfx_format, label: String) -> CallOutcome {
        var cInput = input
        var result = rawfx_negotiation()
        result.struct_size = UInt32(MemoryLayout<rawfx_negotiation>.size)
        result.output = input
        host?.begin(.configure)
        let status = fields.configure(filter, &cInput, &result)
        host?.end()
        negotiation = status == RAWFX_OK ? result : nil
        return finish("configure(\(label))", status, allocations: 0)
    }

    /// `process_video` / `process_audio` on the process thread, with `is_process_thread`
    /// true for the call; allocations counted on that thread and in slice jobs.
    func process(_ io: StreamIO, label: String) -> CallOutcome {
        let call = processCall(io)
        ProcessThread.shared.run(call.work)
        return call.finish(label)
    }

    /// `a` on the process thread and `b` on a second one, at the same time (two instances
    /// used on different threads, as rawfx.h allows).
    static func processInParallel(_ a: TestInstance, _ ioA: StreamIO, _ b: TestInstance, _ ioB: StreamIO,
                                  label: String) -> (CallOutcome, CallOutcome) {
        let first = a.processCall(ioA), second = b.processCall(ioB)
        ProcessThread.shared.begin(first.work)
        ProcessThread.second.begin(second.work)
        ProcessThread.shared.wait()
        ProcessThread.second.wait()
        return (first.finish("\(label), first instance"), second.finish("\(label), second instance"))
    }

    /// What a process call on another thread hands back: written by the process thread during
    /// the call, read after `ProcessThread.wait()`; it travels with the work, so not `Sendable`.
    private final class ProcessResult {
        var status: rawfx_status = 0
        var allocations: UInt64 = 0
        var counts = rawfx_rt_counts()
        var nanoseconds: UInt64 = 0
    }

    /// The work of one process call (to run on a process thread) and what makes its outcome.
    private func processCall(_ io: StreamIO) -> (work: () -> Void, finish: (String) -> CallOutcome) {
        let filter = self.filter, host = self.host, video = self.video, audio = self.audio
        let input = io.inputPointer, output = io.outputPointer
        let workerBefore = host?.workerAllocations.load(ordering: .relaxed) ?? 0
        let result = ProcessResult()
        host?.workerBlocking.withLock { $0 = BlockingCalls() }
        let work = {
            host?.enterProcess()
            let before = rawfx_thread_allocation_count()
            let start = DispatchTime.now().uptimeNanoseconds
            result.counts = countingBlockingCalls {
                if let video {
                    result.status = video(filter, input.assumingMemoryBound(to: rawfx_video_frame.self),
                                          output.assumingMemoryBound(to: rawfx_video_frame.self))
                } else {
                    result.status = audio!(filter, input.assumingMemoryBound(to: rawfx_audio_frame.self),
                                           output.assumingMemoryBound(to: rawfx_audio_frame.self))
                }
            }
            result.nanoseconds = DispatchTime.now().uptimeNanoseconds &- start
            result.allocations = rawfx_thread_allocation_count() &- before
            host?.leaveProcess()
        }
        let finish = { (label: String) -> CallOutcome in
            let allocations = result.allocations &+ ((host?.workerAllocations.load(ordering: .relaxed) ?? 0) &- workerBefore)
            var blocking = BlockingCalls(result.counts)
            if let host { blocking.add(host.workerBlocking.withLock { $0 }) }
            var outcome = self.finish("process (\(label))", result.status, allocations: allocations)
            outcome.blocking = blocking
            outcome.seconds = Double(result.nanoseconds) / 1e9
            return outcome
        }
        return (work, finish)
    }

    /// `reset` between frames: on the process thread, or on this (control) thread. Returns
    /// the allocations it made on the thread that ran it, and on the process thread its
    /// locks, sleeps, I/O and thread starts.
    @discardableResult
    func reset(onProcessThread: Bool) -> (allocations: UInt64, blocking: BlockingCalls) {
        let filter = self.filter, host = self.host
        let reset = fields.reset!
        var allocations: UInt64 = 0
        var blocking = rawfx_rt_counts()
        let call = {
            host?.begin(.reset)
            let before = rawfx_thread_allocation_count()
            if onProcessThread {
                blocking = countingBlockingCalls { reset(filter) }
            } else {
                reset(filter)
            }
            allocations = rawfx_thread_allocation_count() &- before
            host?.end()
        }
        if onProcessThread { ProcessThread.shared.run(call) } else { call() }
        serviceCallbacks()
        return (allocations, BlockingCalls(blocking))
    }
}

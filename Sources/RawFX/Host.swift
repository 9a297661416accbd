import RawFXRuntime
import Synchronization

/// One `rawfx_host` object (rawfx.h 1.1): what a plugin file gets in `init` (`.library`)
/// and what each filter instance gets in `create_with_host` (`.instance`).
///
/// Thin Swift over `rfx_host_context_*` (rawfx_runtime.h). The functions the plugin calls
/// through it are C and real-time safe; this class only creates, ties and frees.
public final class HostContext: @unchecked Sendable {
    public enum Kind: Sendable { case library, instance }

    let context: OpaquePointer
    public let kind: Kind

    /// `source` names the object in log lines: a filter id, or a plugin file's name
    /// (`rfx_host_context_create`).
    public init(source: String, kind: Kind) {
        self.kind = kind
        context = rfx_host_context_create(source, kind == .library ? RFX_HOST_LIBRARY : RFX_HOST_INSTANCE)
    }

    /// Frees the object (`rfx_host_context_destroy`): only after the instance's `destroy`
    /// or the plugin's `deinit` returned.
    deinit { rfx_host_context_destroy(context) }

    /// The pointer to hand to the plugin (`rfx_host_context_host`).
    public var host: UnsafePointer<rawfx_host> { rfx_host_context_host(context) }

    /// Ties an instance object to its filter, so `on_callback` can be called
    /// (`rfx_host_context_attach_filter`).
    func attach(_ filter: UnsafePointer<rawfx_filter>) { rfx_host_context_attach_filter(context, filter) }

    /// Unties the filter before its `destroy`: no `on_callback` after this returns.
    func detach() { rfx_host_context_attach_filter(context, nil) }

    /// Runs a control call with the instance's control lock held, so `on_callback` (on the
    /// runtime's service thread) never overlaps it (`rfx_host_context_lock_control`).
    func withControlLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        rfx_host_context_lock_control(context)
        defer { rfx_host_context_unlock_control(context) }
        return try body()
    }

    /// [process] Marks the calling thread as this instance's process thread, until another
    /// instance's `enterProcess` or `leaveProcess` (one TLS store, inlined).
    @inline(__always) func enterProcess() { rfx_host_context_enter_process(context) }
    /// [process] The calling thread processes no instance (after a frame).
    @inline(__always) package static func leaveProcess() { rfx_host_context_leave_process() }
}

/// Severity of an engine or plugin log line (`rawfx_log_severity`).
public enum LogSeverity: UInt32, Sendable, Comparable, CustomStringConvertible {
    case debug = 0, info = 1, warning = 2, error = 3
    public static func < (a: LogSeverity, b: LogSeverity) -> Bool { a.rawValue < b.rawValue }
    public var description: String { ["debug", "info", "warning", "error"][Int(rawValue)] }
}

/// Where plugin `log` calls end up. Lines are copied into a lock-free ring on the calling
/// thread (the process thread, often) and handed to the handler on the runtime's service
/// thread, in order. Without a handler, warnings and errors go to stderr.
public enum RawFXLog {
    public struct Record: Sendable, Hashable {
        public var severity: LogSeverity
        /// The filter id or plugin file that logged.
        public var source: String
        public var message: String

        public init(severity: LogSeverity, source: String, message: String) {
            self.severity = severity
            self.source = source
            self.message = message
        }
    }

    private static let handler = Locked<(@Sendable (Record) -> Void)?>(nil)

    /// Sets (or, with nil, removes) the handler (`rfx_runtime_set_log_sink`).
    public static func setHandler(_ newHandler: (@Sendable (Record) -> Void)?) {
        handler.withLock { $0 = newHandler }
        rfx_runtime_set_log_sink(newHandler == nil ? nil : { severity, source, message in
            let record = Record(severity: LogSeverity(rawValue: severity) ?? .error,
                                source: source.map { String(cString: $0) } ?? "",
                                message: message.map { String(cString: $0) } ?? "")
            RawFXLog.handler.withLock { $0 }?(record)
        })
    }

    /// Logs a line as the engine (`rfx_runtime_log`); real-time safe.
    public static func log(_ severity: LogSeverity, source: String, _ message: String) {
        rfx_runtime_log(severity.rawValue, source, message)
    }

    /// Returns when every line logged and every callback requested before the call has
    /// been handled (`rfx_runtime_sync`).
    public static func sync() { rfx_runtime_sync() }

    /// Lines dropped because the ring was full (`rfx_runtime_dropped_log_lines`).
    public static var droppedLines: UInt64 { rfx_runtime_dropped_log_lines() }
}

/// The engine's thread pool, offered to plugins as `rawfx.thread-pool/1`.
public enum RawFXThreadPool {
    /// Threads that run slice jobs, the calling thread included; 1 (the default) runs every
    /// job inline. Setting it starts the workers, on the calling (control) thread
    /// (`rfx_runtime_set_thread_count`). The environment variable `RAWFX_THREADS` sets it
    /// for the `rawfx` command.
    public static var threadCount: Int {
        get { Int(rfx_runtime_thread_count()) }
        set { rfx_runtime_set_thread_count(UInt32(clamping: max(1, newValue))) }
    }
}

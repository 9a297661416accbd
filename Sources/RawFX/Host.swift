#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import RawFXRuntime
import Synchronization

/// One `rawfx_host` object (rawfx.h 1.1): what a plugin file gets in `init` (`.library`)
/// and what each filter instance gets in `create_with_host` (`.instance`).
///
/// Thin Swift over `rfx_host_context_*` (rawfx_runtime.h). The functions the plugin calls
/// through it are C and real-time safe; this class only creates, ties and frees.
/// Unchecked `Sendable`: the C host object is the runtime's, whose functions are thread-safe (rawfx_runtime.h); this class only creates and frees it.
public final class HostContext: @unchecked Sendable {
    public enum Kind: Sendable { case library, instance }

    let context: OpaquePointer
    public let kind: Kind

    /// `source` names the object in log lines: a filter id, or a plugin file's name
    /// (`rfx_host_context_create`).
    public init(source: String, kind: Kind) {
        self.kind = kind
        RawFXLog.installSink()
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

/// Where the engine's lines and plugin `log` calls end up. Lines are copied into a lock-free
/// ring on the calling thread (the process thread, often: no formatting, no lock, no
/// allocation there) and delivered on the runtime's service thread, in order, to swift-log:
/// a `Logger` labelled `rawfx.engine` for the engine's own lines and `rawfx.plugin.<source>`
/// for a plugin's (its filter id, or its file's name for the plugin's `init`/`deinit`), with
/// metadata `rawfx.source` and `rawfx.origin` (`engine`, `instance`, `library`). An app that
/// bootstrapped swift-log sees them in its backend; without a bootstrap swift-log writes to
/// stderr. Quiet by default: `logLevel` is `.warning`.
public enum RawFXLog {
    /// Who wrote a line (`rfx_log_origin`).
    public enum Origin: UInt32, Sendable, Hashable, CustomStringConvertible {
        /// The engine itself (`RawFXLog.log`, `rfx_runtime_log`): the source is a filter id or a hook.
        case engine = 0
        /// A filter instance through its host object: the source is the filter id.
        case instance = 1
        /// A plugin file's `init` or `deinit` through its host object: the source is the file's name.
        case library = 2

        public var description: String { ["engine", "instance", "library"][Int(rawValue)] }
    }

    public struct Record: Sendable, Hashable {
        public var severity: LogSeverity
        /// The filter id, hook or plugin file that logged.
        public var source: String
        public var message: String
        public var origin: Origin

        public init(severity: LogSeverity, source: String, message: String, origin: Origin = .engine) {
            self.severity = severity
            self.source = source
            self.message = message
            self.origin = origin
        }

        /// The swift-log label the record is delivered under.
        public var label: String { origin == .engine ? "rawfx.engine" : "rawfx.plugin.\(source)" }
    }

    /// A replacement for swift-log delivery (tests, a host that wants the raw records), or nil.
    private static let handler = Locked<(@Sendable (Record) -> Void)?>(nil)
    /// One `Logger` per label, made on first use with `makeLogHandler` (the service thread,
    /// or a control thread in `sync` before the service thread started: hence the lock).
    private static let loggers = Locked<[String: Logger]>([:])
    /// Test hook: a factory used instead of `LoggingSystem` (which may be bootstrapped once
    /// per process); nil uses `LoggingSystem`.
    private static let logHandlerFactory = Locked<(@Sendable (String) -> any LogHandler)?>(nil)
    private static let level = Atomic<UInt8>(levelCode(.warning))
    /// Installs the runtime's sink once, so lines reach swift-log without any set-up call.
    private static let sinkInstalled: Void = rfx_runtime_set_log_sink(deliverFromRing)

    /// The lowest level delivered to swift-log (default `.warning`: warnings and errors).
    /// Lines below it are dropped on the service thread before any `Logger` is involved.
    /// Any thread. The `rawfx` command sets it from `-v` (`.info`) and `-vv` (`.debug`).
    public static var logLevel: Logger.Level {
        get { Logger.Level.allCases[Int(level.load(ordering: .relaxed))] }
        set { level.store(levelCode(newValue), ordering: .relaxed) }
    }

    private static func levelCode(_ level: Logger.Level) -> UInt8 {
        UInt8(Logger.Level.allCases.firstIndex(of: level)!)
    }

    /// Replaces swift-log delivery with `newHandler` (any thread; the handler runs on the
    /// service thread), or with nil returns to swift-log (`rfx_runtime_set_log_sink`). The
    /// handler gets every record, whatever `logLevel` says.
    public static func setHandler(_ newHandler: (@Sendable (Record) -> Void)?) {
        installSink()
        handler.withLock { $0 = newHandler }
    }

    /// Test hook: makes every `Logger` with `factory` instead of `LoggingSystem` (nil: back
    /// to `LoggingSystem`). Forgets the loggers made so far.
    package static func setLogHandlerFactory(_ factory: (@Sendable (String) -> any LogHandler)?) {
        installSink()
        logHandlerFactory.withLock { $0 = factory }
        loggers.withLock { $0.removeAll() }
    }

    /// Makes sure the runtime delivers to swift-log (once per process; cheap afterwards).
    /// Called by every `HostContext` and `log`, so no app has to.
    @inline(__always) static func installSink() { _ = sinkInstalled }

    /// [service thread] The runtime's sink: a record, then swift-log or the replacement handler.
    private static let deliverFromRing: rfx_log_sink = { severity, origin, source, message in
        RawFXLog.deliver(Record(severity: LogSeverity(rawValue: severity) ?? .error,
                                source: source.map { String(cString: $0) } ?? "",
                                message: message.map { String(cString: $0) } ?? "",
                                origin: Origin(rawValue: origin.rawValue) ?? .engine))
    }

    /// [service thread] One record to the replacement handler, or to its `Logger`.
    static func deliver(_ record: Record) {
        // Every byte of a line may be a plugin's: escaped once, here, for every handler.
        var record = record
        record.source = terminalSafe(record.source)
        record.message = terminalSafe(record.message)
        if let replacement = handler.withLock({ $0 }) {
            replacement(record)
            return
        }
        let minimum = logLevel
        let level = record.severity.loggerLevel
        guard level >= minimum else { return }
        var logger = loggers.withLock { cache in
            if let made = cache[record.label] { return made }
            let made = logHandlerFactory.withLock { $0 }.map { Logger(label: record.label, factory: $0) }
                ?? Logger(label: record.label)
            cache[record.label] = made
            return made
        }
        logger.logLevel = minimum
        logger.log(level: level, "\(record.message)",
                   metadata: ["rawfx.source": "\(record.source)", "rawfx.origin": "\(record.origin)"])
    }

    /// Logs a line as the engine (`rfx_runtime_log`); real-time safe.
    public static func log(_ severity: LogSeverity, source: String, _ message: String) {
        installSink()
        rfx_runtime_log(severity.rawValue, source, message)
    }

    /// Returns when every line logged and every callback requested before the call has
    /// been handled (`rfx_runtime_sync`).
    public static func sync() { rfx_runtime_sync() }

    /// Lines dropped because the ring was full (`rfx_runtime_dropped_log_lines`).
    public static var droppedLines: UInt64 { rfx_runtime_dropped_log_lines() }
}

/// A swift-log backend for programs whose stderr is for people: each line as
/// `rawfx: <source>: <message>` (the source is the filter id, plugin file or hook that
/// logged; the label without one), one line per record, written with write(2) on the
/// calling thread. The `rawfx` command and the `rawfx-isolate` helper bootstrap it
/// (`LoggingSystem.bootstrap(StandardErrorLogHandler.init)`); an app may too.
public struct StandardErrorLogHandler: LogHandler {
    public let label: String
    public var metadata: Logger.Metadata = [:]
    /// swift-log's own filter; RawFX's lines are filtered first by `RawFXLog.logLevel`.
    public var logLevel: Logger.Level = .trace

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let source = terminalSafe(event.metadata?["rawfx.source"].map { "\($0)" } ?? label)
        let flat = terminalSafe("\(event.message)".split(whereSeparator: \.isNewline).joined(separator: " "))
        let line = Array("rawfx: \(source.isEmpty ? "plugin" : source): \(flat)\n".utf8)
        var done = 0
        while done < line.count {
            let n = line.withUnsafeBytes { write(2, $0.baseAddress! + done, $0.count - done) }
            if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }
}

extension LogSeverity {
    /// The swift-log level of a severity (debug, info, warning and error map one to one).
    public var loggerLevel: Logger.Level {
        switch self {
        case .debug: return .debug
        case .info: return .info
        case .warning: return .warning
        case .error: return .error
        }
    }
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

/// Whether anyone waits for this process's output in real time ("rawfx.render-mode/1",
/// rawfx/ext/render_mode.h). Real-time (the default) for hooks: process never waits. Offline
/// for a tool that reads files as fast as it can: a filter with a worker of its own (`dfn`)
/// may wait for it, so that its output does not depend on the machine's speed.
public enum RawFXRenderMode {
    /// [control, before other threads start] Sets the mode for every instance of this process
    /// (`rfx_runtime_set_render_mode`), and for the isolation helpers it starts from now on,
    /// through `RAWFX_RENDER_MODE` in their environment.
    public static var isOffline: Bool {
        get { rfx_runtime_render_mode() == rawfx_render_mode(RAWFX_RENDER_OFFLINE) }
        set {
            rfx_runtime_set_render_mode(rawfx_render_mode(newValue ? RAWFX_RENDER_OFFLINE : RAWFX_RENDER_REALTIME))
            setenv("RAWFX_RENDER_MODE", newValue ? "offline" : "realtime", 1)
        }
    }
}

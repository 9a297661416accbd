import CRawFXEmbed
import RawFX

// rawfx_set_log_callback: the engine's log lines to a C function instead of swift-log.

/// The C callback and its level, set by `rawfx_set_log_callback`; read by the engine's
/// logging thread for each line.
private struct LogCallbackRoute: Sendable {
    var target: CCallback<rawfx_log_callback>
    var minimum: LogSeverity
}
private let logCallbackRoute = Locked<LogCallbackRoute?>(nil)

@_cdecl("rawfx_set_log_callback")
public func rawfxSetLogCallback(_ callback: rawfx_log_callback?, _ userData: UnsafeMutableRawPointer?,
                                _ minLevel: UInt32) -> rawfx_result {
    guard let minimum = LogSeverity(rawValue: minLevel) else {
        return invalid("rawfx_set_log_callback", "min_level \(minLevel) is not a log level: expected "
                       + "RAWFX_LOG_DEBUG (0), RAWFX_LOG_INFO (1), RAWFX_LOG_WARNING (2) or RAWFX_LOG_ERROR (3)")
    }
    guard let callback else {
        logCallbackRoute.withLock { $0 = nil }
        RawFXLog.setHandler(nil)
        return rawfxOK
    }
    logCallbackRoute.withLock { $0 = LogCallbackRoute(target: CCallback(function: callback, userData: userData), minimum: minimum) }
    // [logging thread] One record to the callback, if it is at its level.
    RawFXLog.setHandler { record in
        guard let route = logCallbackRoute.withLock({ $0 }), record.severity >= route.minimum else { return }
        record.source.withCString { source in
            record.message.withCString { message in route.target.function(route.target.userData, record.severity.rawValue, source, message) }
        }
    }
    return rawfxOK
}

@_cdecl("rawfx_log_sync")
public func rawfxLogSync() { RawFXLog.sync() }

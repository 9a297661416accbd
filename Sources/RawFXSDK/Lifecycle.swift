import RawFX

/// A start, stop or capability change of a sending source, as the SDK reported it to the
/// adapter: what an app needs to start and stop its own frame or audio pump.
public enum LifecycleEvent: Sendable, Equatable, CustomStringConvertible {
    /// Video source `onInitialize`: the capability frames will be sent at, and what the SDK offered.
    case videoSourceInitialized(VideoSourceCapability, supported: [VideoSourceCapability])
    /// Video source `onPropertyChange`: the capability from the next frame on.
    case videoSourceCapabilityChanged(VideoSourceCapability, supported: [VideoSourceCapability])
    /// Video source `onStartSend`: push frames from now on.
    case videoSourceStarted
    /// Video source `onStopSend`: stop pushing.
    case videoSourceStopped
    /// Video source `onUninitialized`.
    case videoSourceUninitialized
    /// Share source `onShareSendStarted` (false: the SDK gave no sender, nothing will be sent).
    case shareStarted(hasSender: Bool)
    /// Share source `onShareSendStopped`.
    case shareStopped
    /// Virtual mic `onMicInitialize`.
    case micInitialized
    /// Virtual mic `onMicStartSend`: push audio from now on.
    case micStarted
    /// Virtual mic `onMicStopSend`.
    case micStopped
    /// Virtual mic `onMicUninitialized`.
    case micUninitialized
    /// Production studio `onStartPSModeResult`.
    case productionStudioModeResult(success: Bool)
    /// Production studio `onStartSend` with a sender after a successful mode result: push now.
    case productionStudioStarted
    /// Production studio `onStopSend`.
    case productionStudioStopped

    public var description: String {
        switch self {
        case .videoSourceInitialized(let c, _): return "video source initialized at \(c)"
        case .videoSourceCapabilityChanged(let c, _): return "video source capability changed to \(c)"
        case .videoSourceStarted: return "video source started"
        case .videoSourceStopped: return "video source stopped"
        case .videoSourceUninitialized: return "video source uninitialized"
        case .shareStarted(let hasSender): return hasSender ? "share started" : "share start failed (no sender)"
        case .shareStopped: return "share stopped"
        case .micInitialized: return "mic initialized"
        case .micStarted: return "mic started"
        case .micStopped: return "mic stopped"
        case .micUninitialized: return "mic uninitialized"
        case .productionStudioModeResult(let ok): return "production studio mode \(ok ? "accepted" : "refused")"
        case .productionStudioStarted: return "production studio started"
        case .productionStudioStopped: return "production studio stopped"
        }
    }
}

/// Delivers a source's lifecycle events to the app, as a callback and as `AsyncStream`s.
///
/// Events are delivered on the SDK's callback thread, in the order the SDK called the
/// adapter, after the adapter has acted on them (after `onStartSend` the source accepts
/// frames; after `onStopSend` nothing more is sent). The handler must return quickly: the
/// SDK's callback waits for it. Streams: each `stream(...)` call makes a new stream that gets
/// every event from then on; with the default `.unbounded` policy nothing is lost (a session
/// has a handful of events); `.bufferingNewest(n)` bounds what waits for a slow reader.
public final class LifecycleEvents: Sendable {
    private struct Listeners {
        var handler: (@Sendable (LifecycleEvent) -> Void)?
        var streams: [Int: AsyncStream<LifecycleEvent>.Continuation] = [:]
        var nextID = 0
    }
    private let listeners = Locked(Listeners())
    /// Serializes deliveries so a handler and the streams see one order even if two SDK
    /// threads call back at once. Not held while listeners change.
    private let delivery = Locked(())

    init() {}

    /// [any thread] Sets (or, with nil, removes) the callback.
    public func setHandler(_ handler: (@Sendable (LifecycleEvent) -> Void)?) {
        listeners.withLock { $0.handler = handler }
    }

    /// [any thread] A stream of the events from now on; it finishes when the adapter closes.
    public func stream(bufferingPolicy: AsyncStream<LifecycleEvent>.Continuation.BufferingPolicy = .unbounded)
        -> AsyncStream<LifecycleEvent> {
        let (stream, continuation) = AsyncStream<LifecycleEvent>.makeStream(bufferingPolicy: bufferingPolicy)
        let id = listeners.withLock { l -> Int in
            defer { l.nextID += 1 }
            l.streams[l.nextID] = continuation
            return l.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.listeners.withLock { _ = $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// [SDK thread] Delivers one event.
    func emit(_ event: LifecycleEvent) {
        delivery.withLock { _ in
            let (handler, streams) = listeners.withLock { ($0.handler, Array($0.streams.values)) }
            handler?(event)
            for continuation in streams { continuation.yield(event) }
        }
    }

    /// Ends every stream (the adapter closed).
    func finish() {
        let streams = listeners.withLock { l -> [AsyncStream<LifecycleEvent>.Continuation] in
            defer { l.streams.removeAll() }
            return Array(l.streams.values)
        }
        for continuation in streams { continuation.finish() }
    }
}

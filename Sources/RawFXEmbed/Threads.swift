import CRawFXEmbed
import RawFX

// rawfx_set_thread_count / rawfx_thread_count: the engine's thread pool, for C and Python
// (Swift sets RawFXThreadPool.threadCount).

@_cdecl("rawfx_set_thread_count")
public func rawfxSetThreadCount(_ count: UInt32) -> rawfx_result {
    guard count >= 1, count <= 64 else {
        return invalid("rawfx_set_thread_count", "count \(count) is not a thread count: expected 1 (no pool) to 64, the calling thread included")
    }
    RawFXThreadPool.threadCount = Int(count)
    return rawfxOK
}

@_cdecl("rawfx_thread_count")
public func rawfxThreadCount() -> UInt32 { UInt32(RawFXThreadPool.threadCount) }

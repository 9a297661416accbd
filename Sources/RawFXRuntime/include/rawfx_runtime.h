/*
 * rawfx_runtime.h — the engine's side of `rawfx_host` (rawfx.h 1.1), in C.
 *
 * Written in C because every function a plugin may call from its process thread
 * must be real-time safe: no allocation, no lock, no Swift runtime call. The
 * Swift engine (HostContext, RawFXLog, RawFXThreadPool) wraps these.
 *
 * - A host context is one rawfx_host object: one per plugin file (kind
 *   LIBRARY) and one per filter instance (kind INSTANCE).
 * - log() copies the line into a lock-free ring; a service thread drains it
 *   into the sink the engine set, and calls on_callback for instances that
 *   asked with request_callback, and the owner's reconfigure sink for those
 *   that asked with request_reconfigure.
 * - The thread pool behind "rawfx.thread-pool/1" (rawfx/ext/thread_pool.h).
 */
#ifndef RAWFX_RUNTIME_H
#define RAWFX_RUNTIME_H

#include "rawfx.h"
#include "rawfx/ext/thread_pool.h"
#include "rawfx/ext/render_mode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host's version string (rawfx_host.version, rawfx --version). */
#define RAWFX_HOST_VERSION_STRING "0.2.0"

typedef struct rfx_host_context rfx_host_context;

typedef enum rfx_host_kind {
    RFX_HOST_LIBRARY = 0,  /* handed to a plugin's init */
    RFX_HOST_INSTANCE = 1  /* handed to create_with_host */
} rfx_host_kind;

/* [control] A new host object. `source` (copied, cut at 63 bytes) names it in
 * log lines: the filter id, or the plugin file's name. Never NULL. */
rfx_host_context *rfx_host_context_create(const char *source, rfx_host_kind kind);

/* [control] Unregisters and frees. Call after the instance's destroy (or the
 * plugin's deinit) returned. Waits for an on_callback in progress to finish. */
void rfx_host_context_destroy(rfx_host_context *context);

/* The rawfx_host to hand to the plugin. */
const rawfx_host *rfx_host_context_host(rfx_host_context *context);

/* [control] Ties an instance context to the instance created with it, so that
 * the service thread can call its on_callback; NULL unties it (before destroy), waiting for
 * an on_callback in progress. */
void rfx_host_context_attach_filter(rfx_host_context *context, const rawfx_filter *filter);

/* [control] Held around every control call into the instance (configure, set_param on a
 * control thread, destroy) so that on_callback never overlaps one: the service thread only
 * calls on_callback when it gets this lock. Not on the process thread in steady state. */
void rfx_host_context_lock_control(rfx_host_context *context);
void rfx_host_context_unlock_control(rfx_host_context *context);

/* [control] Who rebuilds the instance when it calls request_reconfigure:
 * `sink(owner, context)` runs on the service thread (never on the process
 * thread). `owner` is not retained; pass NULL to detach. */
typedef void (*rfx_reconfigure_sink)(void *owner, rfx_host_context *context);
void rfx_host_context_set_owner(rfx_host_context *context, void *owner, rfx_reconfigure_sink sink);

/* The context the calling thread is processing, or NULL. Initial-exec TLS (the
 * runtime is linked into the executable): one store, no call, no allocation. */
extern __thread rfx_host_context *rfx_process_context_of_thread __attribute__((tls_model("initial-exec")));

/* [process] Marks the calling thread as processing this context's instance
 * (is_process_thread answers 1, the thread pool runs), until another enter or
 * leave. Inline: the engine calls it before every stage of every frame. */
static inline void rfx_host_context_enter_process(rfx_host_context *context) {
    rfx_process_context_of_thread = context;
}
static inline void rfx_host_context_leave_process(void) { rfx_process_context_of_thread = 0; }

/* Who wrote a log line: the engine itself, or a plugin through its host object
 * (an instance's host names the filter id, a file's host the plugin file). */
typedef enum rfx_log_origin {
    RFX_LOG_ENGINE = 0,
    RFX_LOG_PLUGIN_INSTANCE = 1,
    RFX_LOG_PLUGIN_LIBRARY = 2
} rfx_log_origin;

/* [any] Whether a filter's answer `n` to `input` keeps the caps of rawfx.h
 * (RAWFX_MAX_VIDEO_LATENCY_FRAMES, RAWFX_MAX_AUDIO_FRAMES): NULL when it does, else
 * `message` (capacity bytes), which
 * names the number, the cap and why. The engine checks every configure with it, and an
 * isolated stage's proxy the helper's answer, before either sizes anything from it. */
const char *rfx_negotiation_cap_violation(const rawfx_format *input, const rawfx_negotiation *n, char *message,
                                          size_t capacity);

/* Log lines reach the sink on the service thread, in order. The default sink
 * (NULL) writes warnings and errors to stderr as "rawfx: <source>: <message>". */
typedef void (*rfx_log_sink)(rawfx_log_severity severity, rfx_log_origin origin,
                             const char *source, const char *message);
void rfx_runtime_set_log_sink(rfx_log_sink sink);

/* [any, real-time] Where an isolated stage's helper sends its lines instead of its own ring
 * and sink (rfx_iso_helper_forward_log): called on the logging thread, synchronously, so a
 * line logged just before a crash is not lost with the process. NULL: the ring (default). */
typedef void (*rfx_log_forward)(void *context, rfx_log_origin origin, rawfx_log_severity severity,
                                const char *source, const char *message);
void rfx_runtime_set_log_forward(rfx_log_forward forward, void *context);

/* [control] Returns when every line logged before the call has reached the
 * sink, and every callback requested before it has run. */
void rfx_runtime_sync(void);

/* Lines dropped because the ring was full (RAWFX_LOG_MESSAGE_MAX-byte slots). */
uint64_t rfx_runtime_dropped_log_lines(void);

/* [any, real-time] Copies `text` (NULL: empty) into `destination`, at most capacity - 1 bytes,
 * never ending inside a UTF-8 sequence, and terminates it: how a log line is cut to a slot. */
void rfx_runtime_copy_cut(char *destination, size_t capacity, const char *text);

/* [any, real-time] Log a line from the engine itself, as a plugin would. */
void rfx_runtime_log(rawfx_log_severity severity, const char *source, const char *message);

/* [any, real-time] Log a line on behalf of a plugin (a host object other than the
 * runtime's own, such as the validator's instrumented one). */
void rfx_runtime_log_from(rfx_log_origin origin, rawfx_log_severity severity, const char *source,
                          const char *message);

/* The thread pool: `count` threads including the caller (1 = inline). Takes
 * effect for the next run; threads are started on first use. Default: 1. */
void rfx_runtime_set_thread_count(uint32_t count);
uint32_t rfx_runtime_thread_count(void);

/* [any] The render mode every instance host reports ("rawfx.render-mode/1",
 * rawfx/ext/render_mode.h) for this process: RAWFX_RENDER_REALTIME unless set,
 * or unless the environment says RAWFX_RENDER_MODE=offline when first asked (so
 * that an isolation helper inherits its parent's mode). A file tool sets
 * offline before it starts; hooks leave it real-time. */
void rfx_runtime_set_render_mode(rawfx_render_mode mode);
rawfx_render_mode rfx_runtime_render_mode(void);

/* The pool as the engine itself uses it (same rules as the extension's run,
 * without the process-thread check). */
void rfx_runtime_run_jobs(rawfx_slice_job job, void *context, uint32_t job_count);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_RUNTIME_H */

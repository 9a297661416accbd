/*
 * isolation_internal.h — the engine's side of an isolated stage, in parts (private to
 * RawFXRuntime; the public API is include/rawfx_isolation.h, the channel's layout shared with
 * the helper is rawfx_iso_channel.h of Sources/RawFXIsolationChannel).
 *
 *   iso_channel.c     the host's end of the channel: the shared memory and its layout,
 *                     post and wait_reply (sequence numbers, futex), a command round trip
 *   iso_log.c         the engine's log lines of a stage, and the helper's, drained from the
 *                     control block's log ring
 *   iso_supervisor.c  the helper's life: spawn, the supervisor thread, restart with
 *                     back-off, faults (claimed once, the helper taken down)
 *   iso_handshake.c   the commands that bring a helper to the stage's state: HELLO, the
 *                     parameters, CONFIGURE and MAP (the negotiation and the frames' layout)
 *   iso_proxy.c       the rawfx_filter the engine calls: create, configure, set_param,
 *                     reset, video processing and passthrough, counters, the types
 *   iso_audio.c       audio: blocks, the delay line of the passthrough, `@isolate(pipeline)`
 *   iso_group.c       isolation groups: the shells of a group's later stages, positions,
 *                     per-stage negotiation, bypass
 *
 * Threads: the chain's process thread calls process/reset/set_param without any lock (it
 * only looks at `sup.state`); control calls (create, configure, set_param before configure,
 * destroy) hold `sup.lock`; one supervisor thread per instance spawns the helper, waits for it
 * to exit, and restarts it with back-off while holding `sup.lock`. The process thread and the
 * supervisor meet through `sup.state` and `sup.in_call` (sequentially consistent), so the
 * supervisor never rewrites the control block while a frame is in flight, and a pid is never
 * signalled after it could have been reused (the helper stays a zombie until that point).
 */
#ifndef RAWFX_ISOLATION_INTERNAL_H
#define RAWFX_ISOLATION_INTERNAL_H

#include "rawfx_isolation.h"
#include "rawfx_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Functions shared by the parts, never exported from the engine's library. */
#define ISO_INTERNAL __attribute__((visibility("hidden")))

/* ------------------------------------------------------------ the types -- */

/* One stage of the helper: a proxy runs one, or an isolation group's stages in order. */
typedef struct iso_member_type {
    char *plugin_path;
    char *filter_id;
    rawfx_processing processing;
    uint32_t param_count;
    uint32_t param_offset;              /* its first parameter's index in the group's list */
} iso_member_type;

typedef struct iso_type {
    rawfx_filter_descriptor descriptor; /* first: the proxy's create gets this pointer */
    rawfx_processing real_processing;   /* the first stage's */
    char *helper_path;
    char *plugin_path;
    char *filter_id;
    int32_t allow_untrusted;
    int32_t seccomp_strict;
    int32_t pipeline;                   /* audio: one block late, never waited for */
    int64_t deadline_ns;
    int64_t control_timeout_ns;
    int64_t backoff_min_ns;
    int64_t backoff_max_ns;
    uint32_t member_count;              /* 1 for a stage alone */
    uint32_t total_params;              /* every stage's parameters, one list */
    iso_member_type members[RFX_ISO_GROUP_MAX];
} iso_type;

/* ------------------------------------------------------- the instance -- */

/* A parameter value as last set, replayed into a restarted helper. */
typedef struct param_slot {
    int32_t set;
    rawfx_param_type type;
    int64_t int_value;
    double float_value;
    char string_value[RFX_ISO_STRING_MAX];
} param_slot;

enum { STATE_DOWN = 0, STATE_UP = 1, STATE_QUIT = 2 };

struct iso_instance;
/* What a stage's extension pointer points at: its group's instance and its place in it
 * (a stage alone: member 0 of a group of one). */
typedef struct iso_view {
    struct iso_instance *inst;
    uint32_t member;
} iso_view;

/* The channel (iso_channel.c): one memfd per instance, the control block then the input and
 * output frames. `map` and `control` never change after create (the mapping is reserved
 * whole); `seq` belongs to whichever thread holds the channel (a call, or the supervisor). */
typedef struct iso_channel {
    int memfd;
    uint8_t *map;
    size_t map_size;                    /* the memfd's size now (it only grows) */
    rfx_iso_control *control;
    uint32_t seq;                       /* the host's own copy of request_seq */
    _Atomic uint32_t generation;        /* bumped by the supervisor for each fresh helper */
} iso_channel;

/* The helper's life (iso_supervisor.c): `lock` and `changed` are the supervisor's and the
 * control calls'; `state` and `in_call` are how the process thread meets the supervisor. */
typedef struct iso_supervisor {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    _Atomic int state;
    _Atomic int in_call;                /* the process thread is using the channel */
    _Atomic int pid;
    _Atomic int fault_claimed;          /* this helper's fault is counted (once) */
    int exit_status;                    /* of the last helper, for the log line */
    int started;                        /* the first start finished (ok or not) */
    int start_ok;
} iso_supervisor;

/* What the stage was negotiated as, and where its frames lie (replayed after a restart;
 * written under the lock by configure and the supervisor, read by the process thread). */
typedef struct iso_stream {
    int configured;
    _Atomic int provisional;            /* answered as a passthrough: the helper died in configure */
    rawfx_format input;
    rawfx_negotiation negotiation;
    size_t in_offset, out_offset, audio_in_frames, audio_out_frames;
    /* Deadline: configured, or derived from the stream (process thread). */
    int64_t deadline_ns;
    int64_t last_timestamp;
} iso_stream;

/* Parameters, replayed after a restart. */
typedef struct iso_params {
    param_slot *slots;
    uint32_t count;
    _Atomic uint32_t generation;
} iso_params;

/* Counters (rfx_isolation_counters). */
typedef struct iso_counters {
    _Atomic uint64_t faults, restarts, passthrough, copied_in;
} iso_counters;

/* Audio passthrough (iso_audio.c): the input delayed by the stage's latency (same format
 * only). Process thread, and configure. */
typedef struct iso_audio {
    int16_t *delay;
    uint32_t delay_frames, delay_position, channels;
    uint64_t frames_in, frames_out;     /* for the passthrough length of a rate change */
} iso_audio;

/* A pipelined audio stage (`@isolate(pipeline)`, iso_audio.c): the request in flight, posted
 * by the last process call on channel generation `generation`, and its answer once collected
 * (by the next process call, or by a command that needed the channel first). Process thread
 * only, except configure and destroy (no frames flow then). */
typedef struct iso_pipe {
    int active;                         /* negotiated pipelined (not as a passthrough) */
    uint32_t seq;                       /* the request in flight; 0: none */
    uint32_t generation;
    int ready;                          /* out holds the answer to return next */
    int primed;                         /* a block went in since configure or reset */
    rawfx_status status;                /* the filter's error for the block in flight */
    int16_t *out;                       /* host memory: the collected answer */
    uint32_t out_frames, flags;
    uint32_t in_frames;                 /* the request in flight: its block */
    rawfx_audio_frame layout_out;       /* and where its answer is to lie */
    size_t out_capacity;                /* samples */
} iso_pipe;

/* The copy in of a borrowed frame, in bands over the engine's thread pool (iso_proxy.c). */
typedef struct iso_copy_in_plan {
    uint8_t *dst[3];
    const uint8_t *src[3];
    int32_t dst_stride[3], src_stride[3];
    uint32_t width[3], height[3];
    uint32_t bands;
} iso_copy_in_plan;

/* The group's stages (iso_group.c): what each was negotiated as, where its output lies. */
typedef struct iso_group {
    iso_view view;                      /* stage 0's extension */
    int in_place;                       /* no out-of-place stage: the output is the input frame */
    rawfx_format member_input[RFX_ISO_GROUP_MAX];
    rawfx_negotiation member_negotiation[RFX_ISO_GROUP_MAX];
    rawfx_video_frame member_layout[RFX_ISO_GROUP_MAX];
    _Atomic uint32_t bypass_mask;
    _Atomic uint64_t member_faults[RFX_ISO_GROUP_MAX];
    int failed_member;                  /* the stage of the last error returned, or -1 */
} iso_group;

/* The helper's log ring (rfx_iso_control.log, iso_log.c): the read position and the drops
 * reported, the host's own (the helper could write anything in the shared block); one drainer
 * at a time (`draining`). */
typedef struct iso_log {
    _Atomic int draining;
    _Atomic uint32_t dequeue;           /* atomic: drain_log's look before taking the flag */
    _Atomic uint32_t dropped_seen;
} iso_log;

typedef struct iso_instance {
    rawfx_filter filter;                /* first: the chain holds a pointer to it */
    const iso_type *type;
    char error[RFX_ISO_ERROR_MAX];
    iso_channel chan;
    iso_supervisor sup;
    iso_stream stream;
    iso_params params;
    iso_counters counters;
    iso_audio audio;
    iso_pipe pipe;
    iso_copy_in_plan copy_in;
    iso_group group;
    iso_log log;
} iso_instance;

static inline iso_instance *iso_instance_of(const rawfx_filter *filter) { return (iso_instance *)filter->filter_data; }

/* [process] Enters a call on the channel while the helper is up (1), or finds it down (0);
 * the supervisor reaps a helper only once no call is in it. */
static inline int iso_enter_call(iso_instance *inst) {
    if (atomic_load(&inst->sup.state) != STATE_UP) return 0;
    atomic_store(&inst->sup.in_call, 1);
    if (atomic_load(&inst->sup.state) == STATE_UP) return 1;
    atomic_store(&inst->sup.in_call, 0);
    return 0;
}

static inline void iso_leave_call(iso_instance *inst) { atomic_store(&inst->sup.in_call, 0); }

static inline size_t iso_round_page(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* ------------------------------------------------- iso_channel.c -------- */

enum { REPLY_OK = 0, REPLY_TIMEOUT = 1, REPLY_DEAD = 2 };

/* The host maps this much address space once, at create, and only grows the file inside it:
 * the mapping never moves, so `map` and `control` are constant and the supervisor thread can
 * use them while the control thread grows the memory (a moving mremap raced with it). Room
 * for an 8K I420 frame in and out, with the control block. */
#define ISO_MAP_RESERVE ((size_t)256 << 20)

/* [control, create] The memfd with a control block's page, mapped; 0, or -1 with errno. */
ISO_INTERNAL int iso_channel_open(iso_channel *chan);
ISO_INTERNAL void iso_channel_close(iso_channel *chan);
/* [supervisor, no helper running] A fresh channel for the next helper. */
ISO_INTERNAL void iso_channel_renew(iso_channel *chan, int helper_may_sleep);
/* [supervisor] Marks this thread as the supervisor's (wait_reply then watches the helper). */
ISO_INTERNAL void iso_channel_on_supervisor(void);
/* [control] Grows the memfd to `size` inside the reserved mapping (the helper maps again on MAP). */
ISO_INTERNAL int iso_ensure_size(iso_instance *inst, size_t size);
ISO_INTERNAL size_t iso_plane_bytes(uint32_t w, uint32_t h);
ISO_INTERNAL void iso_video_layout(rawfx_video_frame *f, const rawfx_video_format *format, size_t offset);
ISO_INTERNAL uint32_t iso_post(iso_instance *inst, uint32_t command);
ISO_INTERNAL int iso_wait_reply(iso_instance *inst, uint32_t seq, int64_t timeout_ns);
/* A command round trip; on failure the helper is taken down with `what` in the log. */
ISO_INTERNAL int iso_call(iso_instance *inst, uint32_t command, int64_t timeout_ns, const char *what);
ISO_INTERNAL int iso_running_member(iso_instance *inst);
ISO_INTERNAL void iso_copy_error(iso_instance *inst);

/* ----------------------------------------------------- iso_log.c -------- */

ISO_INTERNAL void iso_log_member_line(iso_instance *inst, int member, rawfx_log_severity severity, const char *message);
ISO_INTERNAL void iso_log_line(iso_instance *inst, rawfx_log_severity severity, const char *message);
/* Forwards the helper's lines before a fault's own (iso_claim_fault). */
ISO_INTERNAL void iso_drain_log_before_fault(iso_instance *inst);
ISO_INTERNAL void iso_drain_log(iso_instance *inst);
ISO_INTERNAL void iso_reset_log(iso_instance *inst);

/* ---------------------------------------------- iso_supervisor.c -------- */

ISO_INTERNAL int iso_wait_status_of(const siginfo_t *info);
ISO_INTERNAL void iso_claim_fault(iso_instance *inst, int member, const char *reason);
ISO_INTERNAL void iso_take_down_in(iso_instance *inst, int member, const char *reason);
ISO_INTERNAL void iso_take_down(iso_instance *inst, const char *reason);
/* Takes the helper down after a wait for `what` ended without a reply. */
ISO_INTERNAL void iso_fail_wait(iso_instance *inst, int result, const char *what, int64_t timeout_ns);
/* [control, create, lock held] Starts the supervisor and waits for the first helper's
 * bring-up; 0, or -1 when the thread could not start. */
ISO_INTERNAL int iso_supervisor_start(iso_instance *inst);
/* [control, destroy] Stops the helper and joins the supervisor. */
ISO_INTERNAL void iso_supervisor_stop(iso_instance *inst);

/* ----------------------------------------------- iso_handshake.c -------- */

ISO_INTERNAL int32_t iso_send_param(iso_instance *inst, uint32_t index, const param_slot *slot, int64_t timeout_ns);
ISO_INTERNAL int32_t iso_negotiate(iso_instance *inst, const rawfx_format *input, rawfx_negotiation *result);
/* [supervisor, lock held] HELLO, the parameters, the negotiation: 1 when it may serve frames. */
ISO_INTERNAL int iso_bring_up(iso_instance *inst);

/* ---------------------------------------------------- iso_proxy.c ------- */

ISO_INTERNAL const rawfx_filter *iso_proxy_create(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity);
/* [control] An instance of `type`: its shared memory and its rawfx_filter, no helper yet
 * (iso_proxy_create starts the supervisor; Fuzz/Harnesses/FuzzIsolationHost answers in
 * process, as a hostile helper); NULL with a message. */
ISO_INTERNAL iso_instance *iso_instance_create(const iso_type *type, char *error, size_t capacity);
/* [control] Frees what iso_instance_create made; no helper or supervisor may be left. */
ISO_INTERNAL void iso_instance_free(iso_instance *inst);
ISO_INTERNAL rawfx_status iso_proxy_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value);

/* ---------------------------------------------------- iso_audio.c ------- */

ISO_INTERNAL rawfx_status iso_proxy_process_audio(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out);
/* [control, lock held] The delay line and the pipelined answer's room for a negotiation. */
ISO_INTERNAL rawfx_status iso_audio_configure(iso_instance *inst, const rawfx_format *input, const rawfx_negotiation *answer);
/* [process] The delay line silent, no block in since. */
ISO_INTERNAL void iso_audio_reset(iso_instance *inst);
/* [in a call, or configure] A pipelined block in flight is answered first: one request at a time. */
ISO_INTERNAL void iso_pipe_settle(iso_instance *inst);
/* No block in flight nor answer waiting (and, `with_status`, no error to report). */
ISO_INTERNAL void iso_pipe_forget(iso_instance *inst, int with_status);
/* [control, configure] Not pipelined until the negotiation says so. */
ISO_INTERNAL void iso_pipe_stop(iso_instance *inst);
ISO_INTERNAL void iso_audio_free(iso_instance *inst);

#endif /* RAWFX_ISOLATION_INTERNAL_H */

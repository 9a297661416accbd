/*
 * rawfx_isolation.h — an isolated stage: a proxy rawfx_filter whose calls run
 * the real filter in a helper process (rawfx-isolate), through shared memory.
 *
 * The proxy looks like any other filter to the chains. The helper maps one
 * memfd: a control block (command, arguments, reply, futex words) followed by
 * the stage's input and output frames. A crash, an exit, a hang past the
 * deadline or a reply that breaks the protocol turns into a passthrough of the
 * frame; a supervisor thread per instance restarts the helper with back-off and
 * replays the parameters and the negotiation. See docs/isolation.md.
 */
#ifndef RAWFX_ISOLATION_H
#define RAWFX_ISOLATION_H

#include "rawfx.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most stages one helper runs (an isolation group, `@isolate(group=NAME)`). */
#define RFX_ISO_GROUP_MAX 16

/* One stage of an isolation group: the real filter and its plugin file. */
typedef struct rfx_isolation_member {
    const char *plugin_path;
    const rawfx_filter_descriptor *real;
} rfx_isolation_member;

/* How an isolated type runs its instances. Strings are copied. */
typedef struct rfx_isolation_config {
    const char *helper_path;      /* the rawfx-isolate executable */
    const char *plugin_path;      /* the real plugin file */
    int32_t allow_untrusted;      /* the helper loads with the trust rule skipped */
    int64_t deadline_ns;          /* per frame; 0: half a video frame, one audio block */
    int32_t seccomp_strict;       /* the helper runs under rfx_iso_helper_seccomp_strict */
    int64_t control_timeout_ns;   /* start, configure, parameters before configure */
    int64_t backoff_min_ns;       /* first restart delay, doubled up to backoff_max_ns */
    int64_t backoff_max_ns;
    /* An isolation group (video only): the stages one helper runs, in chain order, the first
     * being `real` itself; 0 (or 1) for a stage alone. The proxy carries the whole group's
     * processing; the other stages are shells (rfx_isolation_shell_create). */
    uint32_t member_count;
    const rfx_isolation_member *members;
    /* Audio (`@isolate(pipeline)`): each call posts its block and returns the previous
     * block's answer, so the calling thread never waits for the helper; the stage's latency
     * grows by one block (10 ms unless the filter asks for another). */
    int32_t pipeline;
} rfx_isolation_config;

/* A descriptor that creates proxies of `real` (read at the host's size, as the
 * engine normalised it). The proxy of a video filter is out of place (its output
 * lies in shared memory: no copy back); audio keeps the real processing. Lives
 * until rfx_isolation_descriptor_destroy. */
rawfx_filter_descriptor *rfx_isolation_descriptor_create(const rawfx_filter_descriptor *real,
                                                         const rfx_isolation_config *config);
void rfx_isolation_descriptor_destroy(rawfx_filter_descriptor *descriptor);

/* [any] 1 when `descriptor` is a proxy's or a group shell's (so its instances answer the
 * extension below from any thread); a real plugin's get_extension is a [control] call. */
int32_t rfx_isolation_is_proxy(const rawfx_filter_descriptor *descriptor);

/* ---------------------------------------------------- isolation groups -- */

/* A shell type for `real`: a stage of an isolation group other than the first, whose
 * processing the group's proxy (the first stage) carries in its helper. The shell has the
 * real filter's id and parameters; it is in place and passes frames on untouched, its
 * set_param reaches its stage in the helper through the proxy, and its counters are the
 * group's. Its plain create fails: shells are made by rfx_isolation_shell_create. */
rawfx_filter_descriptor *rfx_isolation_shell_descriptor_create(const rawfx_filter_descriptor *real);

/* [control] A shell of `descriptor` (a shell type) for stage `member` (1...) of the group
 * whose proxy is `owner`. The caller keeps `owner` alive until the shell is destroyed. */
const rawfx_filter *rfx_isolation_shell_create(const rawfx_filter_descriptor *descriptor, const rawfx_filter *owner,
                                               uint32_t member, char *error, size_t capacity);

/* [any] The position of a proxy (stage 0) or shell in its group: returns 1 and fills
 * `member` and `count` (count 1 for a stage alone), or 0 for anything else. */
int32_t rfx_isolation_group_position(const rawfx_filter *filter, uint32_t *member, uint32_t *count);

/* [any] What stage `filter` (a proxy or shell) was negotiated as inside its group: its own
 * input and negotiation. Returns 0 before a negotiation (or for anything else). */
int32_t rfx_isolation_member_negotiation(const rawfx_filter *filter, rawfx_format *input, rawfx_negotiation *negotiation);

/* [after a call that failed] The group's stage (from 0) whose filter returned the error of the
 * proxy's last failed configure or process (the proxy's get_error holds its message), or -1. */
int32_t rfx_isolation_failed_stage(const rawfx_filter *filter);

/* [any, never waits] Skips (1) or runs again (0) the stage `filter` (a proxy or shell) in
 * its group's helper, from the next frame: a bypass inside the group. */
void rfx_isolation_set_bypass(const rawfx_filter *filter, int32_t bypassed);

/* [any] The file the engine runs from: the executable it is linked into, or librawfx.so when
 * a C, C++ or Python host loaded it (dladdr of this function); NULL if unknown. Where the
 * helper is looked for (Isolation.helperPath). */
const char *rfx_isolation_engine_image_path(void);

/* The proxy's extension: its counters (filter->get_extension). */
#define RFX_ISOLATION_EXTENSION "rawfx.isolation/1"

typedef struct rfx_isolation_counters {
    uint64_t faults;       /* crashes, exits, hangs past the deadline, protocol violations */
    uint64_t restarts;     /* helpers brought back after a fault */
    uint64_t passthrough;  /* frames or blocks passed unchanged while the helper was down */
    uint64_t copied_in;    /* video frames copied into shared memory (not already there) */
    int32_t up;            /* 1 when the helper is serving frames now */
    int32_t pid;           /* the current helper's pid, or 0 */
    int64_t deadline_ns;   /* the deadline in force (derived or configured) */
    /* An isolation group: the counters above are the group's (a fault anywhere in it passes
     * the frame through the whole group); these are the stage's own. */
    uint64_t stage_faults; /* faults that happened while this stage ran (crash, hang, ...) */
    uint32_t group_member; /* its position in the group, from 0 */
    uint32_t group_size;   /* stages in the group; 1 for a stage alone */
} rfx_isolation_counters;

/* [control or process, after configure] The proxy's video input frame in shared memory, as pointers in
 * the host's mapping with the negotiated input's size and strides: a stage upstream that
 * writes its output there hands the frame over with no copy (the proxy sees its own planes
 * and skips the copy). The memory stays mapped, at the same address, until the instance is
 * destroyed. Returns 1 and fills `frame`, or 0 (not a video proxy, not negotiated, or
 * negotiated as a passthrough because the helper died in configure, or a restart holds the
 * instance now: it never waits). */
int32_t rfx_isolation_video_input_frame(const rawfx_filter *filter, rawfx_video_frame *frame);

/* [any] Reads the counters of a proxy through its extension pointer. */
void rfx_isolation_read_counters(const void *extension, rfx_isolation_counters *out);

/* ------------------------------------------------------- helper's side -- */

/* Commands of the protocol (rfx_iso_control.command). */
enum {
    RFX_ISO_HELLO = 1,       /* load the plugin, create the instance */
    RFX_ISO_SET_PARAM = 2,
    RFX_ISO_CONFIGURE = 3,
    RFX_ISO_MAP = 4,         /* the memfd grew to data_size: map it again */
    RFX_ISO_PROCESS_VIDEO = 5,
    RFX_ISO_PROCESS_AUDIO = 6,
    RFX_ISO_RESET = 7
};

#define RFX_ISO_MAGIC 0x52465849u   /* "RFXI" */
#define RFX_ISO_STRING_MAX 4096
#define RFX_ISO_ERROR_MAX 512
/* reply_seq after the supervisor reaped the helper. */
#define RFX_ISO_DEAD 0xFFFFFFFFu

/* The helper's log lines (docs/isolation.md, "Log lines"): a bounded ring of slots in the
 * control block (Dmitry Vyukov's queue, as the engine's own log ring). The helper's threads
 * claim slots with a CAS on log_enqueue and publish each with its sequence; the host drains
 * them after each call and before it reports a fault, into its own log with the filter's
 * name, and keeps its read position to itself. A full ring drops the line (log_dropped). */
#define RFX_ISO_LOG_SLOTS 32u       /* a power of two */
#define RFX_ISO_LOG_SOURCE_MAX 64

typedef struct rfx_iso_log_slot {
    uint32_t sequence;        /* position + 1 once written; position + SLOTS once read */
    int32_t severity;         /* rawfx_log_severity */
    int32_t origin;           /* rfx_log_origin in the helper */
    uint32_t reserved;
    char source[RFX_ISO_LOG_SOURCE_MAX];
    char message[RAWFX_LOG_MESSAGE_MAX];
} rfx_iso_log_slot;

/* The control block at offset 0 of the shared memory. Offsets, not pointers:
 * the two processes map it at different addresses. The host never trusts what
 * the helper wrote: it copies each field once and checks it. */
typedef struct rfx_iso_control {
    uint32_t magic;
    uint32_t request_seq;     /* host: bumped after writing a command; futex word */
    uint32_t reply_seq;       /* helper: set to request_seq when done; futex word */
    uint32_t command;
    int32_t status;           /* reply: a rawfx_status */
    uint32_t mapped_size_lo;  /* MAP: the size to map (bytes) */
    uint32_t mapped_size_hi;
    /* Wake-up hints (docs/isolation.md, Cost): the host skips its FUTEX_WAKE while the
     * helper polls, and stamps each request so the helper learns the cadence. */
    uint32_t helper_polling;  /* helper: 1 while it polls request_seq */
    int32_t helper_cpu;       /* helper: the CPU it polled or replied on last (sched_getcpu) */
    int64_t posted_ns;        /* host: CLOCK_MONOTONIC when it bumped request_seq */
    int32_t host_cpu;         /* host: the CPU its processing thread runs a frame on; -1 between frames */
    uint32_t helper_may_sleep; /* host: 1 when no caller waits for the answer (`@isolate(pipeline)`):
                                * the helper sleeps until woken, with no cadence polling */
    /* SET_PARAM */
    uint32_t param_index;
    rawfx_param_type param_type;
    int64_t param_int;
    double param_float;
    char param_string[RFX_ISO_STRING_MAX];
    /* CONFIGURE */
    rawfx_format input;
    rawfx_negotiation negotiation; /* reply */
    /* PROCESS_VIDEO: frames at offsets from the start of the mapping */
    rawfx_video_frame video_in;    /* planes as offsets (uintptr_t) */
    rawfx_video_frame video_out;   /* in: layout; reply: what the filter left */
    /* PROCESS_AUDIO */
    rawfx_audio_frame audio_in;    /* samples as an offset */
    rawfx_audio_frame audio_out;
    char error[RFX_ISO_ERROR_MAX]; /* reply: the filter's message on failure */
    /* An isolation group: the stages run in order (CONFIGURE, PROCESS_VIDEO, RESET: all;
     * SET_PARAM: param_index counts the stages' parameters one after another). */
    uint32_t member_count;
    uint32_t member;          /* helper: the stage it is running now (names a crash's stage) */
    uint32_t bypass_mask;     /* PROCESS_VIDEO: bit k skips stage k */
    uint32_t reserved_group;
    rawfx_negotiation member_negotiation[RFX_ISO_GROUP_MAX]; /* CONFIGURE reply, per stage */
    rawfx_video_frame member_out[RFX_ISO_GROUP_MAX];         /* PROCESS_VIDEO: each out-of-place
                                                              * stage's output layout (offsets) */
    /* Log lines, helper to host (above). The host resets them before each helper starts. */
    uint32_t log_enqueue;     /* helper: the next position to claim */
    uint32_t log_dropped;     /* helper: lines dropped because the ring was full */
    rfx_iso_log_slot log[RFX_ISO_LOG_SLOTS];
} rfx_iso_control;

/* [helper] Accessors for Swift (which sees the arrays above as tuples). */
static inline rawfx_negotiation *rfx_iso_member_negotiation(rfx_iso_control *control, uint32_t member) {
    return &control->member_negotiation[member];
}
static inline rawfx_video_frame *rfx_iso_member_out(rfx_iso_control *control, uint32_t member) {
    return &control->member_out[member];
}

/* [helper] Waits for the next command (request_seq != reply_seq); returns it. */
uint32_t rfx_iso_helper_wait(rfx_iso_control *control);
/* [helper] Publishes the reply to the command being served. */
void rfx_iso_helper_reply(rfx_iso_control *control, int32_t status);
/* [helper] From now on every line logged in the helper (the plugins' host objects, the
 * loader) goes into `control`'s log ring instead of the helper's stderr. Call again after the
 * control block is mapped anew. */
void rfx_iso_helper_forward_log(rfx_iso_control *control);
/* [helper] Least privilege before the plugin loads: no new privileges, die with
 * the host's supervisor thread. Returns 0, or -1 when the kernel refuses. */
int rfx_iso_helper_restrict(void);
/* [helper] Installs the strict seccomp filter (`@isolate(seccomp=strict)`, docs/isolation.md):
 * an allow-list of what filters need (memory, threads, futex, clocks, files, signals to itself,
 * exit); any other system call (exec, fork, sockets, ptrace, ...) kills the helper
 * (SECCOMP_RET_KILL_PROCESS), which the host counts as a fault. Call before any plugin code
 * runs, on the only thread. Returns 0, or -1 with errno when the kernel refuses. */
int rfx_iso_helper_seccomp_strict(void);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_ISOLATION_H */

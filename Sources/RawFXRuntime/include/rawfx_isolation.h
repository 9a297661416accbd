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
#include "rawfx_iso_channel.h" /* the control block's layout, shared with the helper; RFX_ISO_GROUP_MAX */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
    uint64_t copied_in;    /* video frames copied into shared memory (every frame sent to the helper) */
    int32_t up;            /* 1 when the helper is serving frames now */
    int32_t pid;           /* the current helper's pid, or 0 */
    int64_t deadline_ns;   /* the deadline in force (derived or configured) */
    /* An isolation group: the counters above are the group's (a fault anywhere in it passes
     * the frame through the whole group); these are the stage's own. */
    uint64_t stage_faults; /* faults that happened while this stage ran (crash, hang, ...) */
    uint32_t group_member; /* its position in the group, from 0 */
    uint32_t group_size;   /* stages in the group; 1 for a stage alone */
} rfx_isolation_counters;

/* [any] Reads the counters of a proxy through its extension pointer. */
void rfx_isolation_read_counters(const void *extension, rfx_isolation_counters *out);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_ISOLATION_H */

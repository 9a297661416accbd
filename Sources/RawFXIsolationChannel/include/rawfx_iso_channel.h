/*
 * rawfx_iso_channel.h — the channel between the engine and an isolated stage's helper
 * (rawfx-isolate): the layout of the shared memory's control block, the commands, and the
 * futex and sequence-number primitives both ends use. One place for what both processes must
 * agree on: the engine's side (Sources/RawFXRuntime, iso_channel.c) and the helper's
 * (Sources/RawFXIsolateHelper) include this header and nothing of each other.
 *
 * The protocol: the host writes a command's arguments, then bumps request_seq (release) and
 * wakes the word; the helper serves it and sets reply_seq to request_seq (release) and wakes
 * that word. Both words are shared futexes in a MAP_SHARED memfd. docs/isolation.md.
 */
#ifndef RAWFX_ISO_CHANNEL_H
#define RAWFX_ISO_CHANNEL_H

#include "rawfx.h"
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most stages one helper runs (an isolation group, `@isolate(group=NAME)`). */
#define RFX_ISO_GROUP_MAX 16

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

/* ------------------------------------------------------------ primitives -- */

/* CLOCK_MONOTONIC in nanoseconds: the clock of posted_ns and of every deadline. */
static inline int64_t rfx_iso_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Shared (not PRIVATE) futex operations: the word lives in a MAP_SHARED memfd. A negative
 * timeout waits until woken. */
static inline void rfx_iso_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec ts = { (time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000) };
    syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns >= 0 ? &ts : NULL, NULL, 0);
}

static inline void rfx_iso_futex_wake(uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The sequence words and the log slots' sequences: acquire to read what was published
 * before them, release to publish. */
static inline uint32_t rfx_iso_load_acquire(uint32_t *word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }
static inline void rfx_iso_store_release(uint32_t *word, uint32_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }

/* One round of a spin-wait (either end polls its sequence word before it sleeps). */
static inline void rfx_iso_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_ISO_CHANNEL_H */

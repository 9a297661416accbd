/*
 * isolation.c — the host side of an isolated stage (rawfx_isolation.h).
 *
 * Threads: the chain's process thread calls process/reset/set_param without any
 * lock (it only looks at `state`); control calls (create, configure, set_param
 * before configure, destroy) hold `lock`; one supervisor thread per instance
 * spawns the helper, waits for it to exit, and restarts it with back-off while
 * holding `lock`. The process thread and the supervisor meet through `state`
 * and `in_call` (sequentially consistent), so the supervisor never rewrites the
 * control block while a frame is in flight, and a pid is never signalled after
 * it could have been reused (the helper stays a zombie until that point).
 */
#define _GNU_SOURCE
#include "rawfx_isolation.h"
#include "rawfx_runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <spawn.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *rfx_isolation_engine_image_path(void) {
    Dl_info info;
    if (dladdr((const void *)&rfx_isolation_engine_image_path, &info) == 0 || info.dli_fname == NULL) return NULL;
    return info.dli_fname;
}

/* ------------------------------------------------------------ primitives -- */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Shared (not PRIVATE) futex operations: the word lives in a MAP_SHARED memfd. */
static void futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec ts = { (time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000) };
    syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns >= 0 ? &ts : NULL, NULL, 0);
}

static void futex_wake(uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static uint32_t load_acquire(uint32_t *word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }
static void store_release(uint32_t *word, uint32_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }

static size_t round_page(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* ------------------------------------------------------------ the helper -- */

/* How long the helper polls for the request after a wake-up that brought none: the host
 * wakes it early, before it copies a frame in (the FUTEX_WAKE in proxy_process_video), so
 * that the helper's wake-up (40-140 us on an idle VM) overlaps the copy instead of
 * following it. */
#define EARLY_WAKE_POLL_NS 1000000

/* Frames and blocks come at a cadence (a 10 ms audio block, a video frame every 33 ms), and
 * on an idle VM waking a sleeping thread costs 100-300 us (the vCPU is halted; a futex
 * wake-up and a timer alike), more than an audio block's whole budget. So the helper
 * learns the interval between process requests (the host stamps each one) and, after a
 * reply, sleeps until shortly before the next is due, then polls for it: the request is
 * seen within a microsecond, and the host skips its FUTEX_WAKE. The window is a margin
 * either side of the prediction, sized from how far recent requests missed it; the sleep
 * ends earlier still by how late the helper's own timed wake-ups have been. A request
 * further than PREDICT_OUTLIER_NS from its prediction (a late or skipped frame) does not
 * move the cadence; two in a row start it over. Polling costs the margin and the wake-up
 * allowance in CPU per request: on the 2-vCPU VM of docs/isolation.md about 0.5 ms per
 * 10 ms audio block; on a machine whose threads wake fast, much less. */
#define PREDICT_MARGIN_MIN_NS 100000
#define PREDICT_OUTLIER_NS 500000
#define PREDICT_OVERSLEEP_MAX_NS 1000000
#define PREDICT_INTERVAL_MAX_NS 1000000000

/* [helper] The cadence of process requests, from the host's stamps (one helper process
 * serves one instance, on one thread). */
static struct {
    int64_t last_posted;   /* the stamp of the last process request; 0: none yet */
    int64_t interval;      /* smoothed interval between requests; 0: not known */
    int64_t miss;          /* smoothed distance of a request from its prediction */
    int outliers;          /* requests in a row further than PREDICT_OUTLIER_NS from it */
    int64_t oversleep;     /* smoothed lateness of the helper's timed wake-ups */
    int64_t oversleep_dev; /* and its smoothed deviation */
} cadence;

static int64_t distance(int64_t a, int64_t b) { return a > b ? a - b : b - a; }

static void cadence_observe(int64_t posted) {
    int64_t interval = posted - cadence.last_posted, error = distance(interval, cadence.interval);
    if (cadence.last_posted == 0 || interval <= 0 || interval > PREDICT_INTERVAL_MAX_NS) {
        cadence.interval = 0; /* the first request, a pause or a clock oddity: start over */
    } else if (cadence.interval == 0 || (error > PREDICT_OUTLIER_NS && ++cadence.outliers >= 2)) {
        /* The first interval, or the cadence changed (two outliers in a row). */
        cadence.interval = interval;
        cadence.miss = PREDICT_MARGIN_MIN_NS;
        cadence.outliers = 0;
    } else if (error <= PREDICT_OUTLIER_NS) {
        cadence.outliers = 0;
        cadence.miss += (error - cadence.miss) / 4;
        cadence.interval += (interval - cadence.interval) / 8;
    } /* else one outlier: the cadence stands */
    cadence.last_posted = posted;
}

static void oversleep_observe(int64_t late) {
    if (late < 0) late = 0;
    if (late > PREDICT_OVERSLEEP_MAX_NS) late = PREDICT_OVERSLEEP_MAX_NS;
    cadence.oversleep_dev += (distance(late, cadence.oversleep) - cadence.oversleep_dev) / 4;
    cadence.oversleep += (late - cadence.oversleep) / 4;
}

/* The window in which the next request is expected; 0 when no cadence is known. */
static int cadence_window(int64_t *from, int64_t *until) {
    if (cadence.interval == 0) return 0;
    int64_t margin = PREDICT_MARGIN_MIN_NS + 2 * cadence.miss;
    int64_t predicted = cadence.last_posted + cadence.interval;
    *from = predicted - margin;
    *until = predicted + margin;
    return 1;
}

/* Polls request_seq until it moves from `request` or the clock reaches `until`, with
 * helper_polling set so the host sends no FUTEX_WAKE meanwhile. Returns 1 when it moved.
 * The two seq_cst fences pair with post()'s: either the host sees the flag cleared and
 * wakes the helper, or the helper's last look sees the new request. */
static int poll_request(rfx_iso_control *control, uint32_t request, int64_t until) {
    __atomic_store_n(&control->helper_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    __atomic_store_n(&control->helper_polling, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (uint32_t round = 0; load_acquire(&control->request_seq) == request; round++) {
        /* Not on the CPU the host's processing thread is on (both woke on one vCPU): the
         * poll would take the time the host needs for the frame; it will wake us. */
        if ((round & 63) == 63) {
            if (now_ns() >= until || sched_getcpu() == __atomic_load_n(&control->host_cpu, __ATOMIC_RELAXED)) break;
            sched_yield(); /* a runnable thread here (the host's pool copying the frame in) goes first */
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    __atomic_store_n(&control->helper_polling, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return load_acquire(&control->request_seq) != request;
}

uint32_t rfx_iso_helper_wait(rfx_iso_control *control) {
    for (;;) {
        uint32_t request = load_acquire(&control->request_seq);
        if (request != __atomic_load_n(&control->reply_seq, __ATOMIC_RELAXED)) {
            uint32_t command = control->command;
            if (command == RFX_ISO_PROCESS_VIDEO || command == RFX_ISO_PROCESS_AUDIO) cadence_observe(control->posted_ns);
            return command;
        }
        /* A pipelined stage's answer is wanted a whole block after its request, so the
         * helper sleeps until woken. Polling would spare the host's FUTEX_WAKE (A/B on the
         * 2-vCPU VM, paced 48 kHz denoise: 25 against 39 us p50 on the calling thread) for
         * about 0.9 ms of helper CPU per 10 ms block: 9 % of a core per stream. */
        if (__atomic_load_n(&control->helper_may_sleep, __ATOMIC_RELAXED)) {
            futex_wait(&control->request_seq, request, -1);
            continue;
        }
        int64_t from, until, now = now_ns();
        if (cadence_window(&from, &until) && now < until) {
            int64_t wake_at = from - cadence.oversleep - 2 * cadence.oversleep_dev;
            if (wake_at > now) {
                futex_wait(&control->request_seq, request, wake_at - now);
                int64_t woke = now_ns();
                if (load_acquire(&control->request_seq) == request) oversleep_observe(woke - wake_at);
            }
            if (poll_request(control, request, until)) continue;
        }
        futex_wait(&control->request_seq, request, -1);
        if (load_acquire(&control->request_seq) != request) continue;
        poll_request(control, request, now_ns() + EARLY_WAKE_POLL_NS);
    }
}

void rfx_iso_helper_reply(rfx_iso_control *control, int32_t status) {
    control->status = status;
    __atomic_store_n(&control->helper_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    store_release(&control->reply_seq, __atomic_load_n(&control->request_seq, __ATOMIC_RELAXED));
    futex_wake(&control->reply_seq);
}

/* [helper, any thread, real-time] A line into the control block's log ring; a full ring
 * drops it (counted). */
static void helper_forward_line(void *context, rfx_log_origin origin, rawfx_log_severity severity,
                                const char *source, const char *message) {
    rfx_iso_control *control = context;
    uint32_t position = __atomic_load_n(&control->log_enqueue, __ATOMIC_RELAXED);
    rfx_iso_log_slot *slot;
    for (;;) {
        slot = &control->log[position & (RFX_ISO_LOG_SLOTS - 1)];
        int32_t difference = (int32_t)(load_acquire(&slot->sequence) - position);
        if (difference == 0) {
            if (__atomic_compare_exchange_n(&control->log_enqueue, &position, position + 1, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
        } else if (difference < 0) {
            __atomic_fetch_add(&control->log_dropped, 1, __ATOMIC_RELAXED);
            return;
        } else {
            position = __atomic_load_n(&control->log_enqueue, __ATOMIC_RELAXED);
        }
    }
    slot->severity = (int32_t)severity;
    slot->origin = (int32_t)origin;
    rfx_runtime_copy_cut(slot->source, sizeof slot->source, source);
    rfx_runtime_copy_cut(slot->message, sizeof slot->message, message);
    store_release(&slot->sequence, position + 1);
}

void rfx_iso_helper_forward_log(rfx_iso_control *control) {
    rfx_runtime_set_log_forward(helper_forward_line, control);
}

int rfx_iso_helper_restrict(void) {
    int result = 0;
    /* No setuid gain through exec, for the plugin or anything it starts. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) result = -1;
    /* Timed waits end when asked (rfx_iso_helper_wait sleeps until a request is due), not
     * up to the default 50 us later. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    /* Gone with the host (the supervisor thread that spawned us). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) result = -1;
    /* Descriptors the host left open (sockets, pipes): the plugin needs none of them. */
    syscall(SYS_close_range, 4u, ~0u, 0u);
    return result;
}

/* ------------------------------------------------------------- seccomp -- */

#if defined(__x86_64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* What a filter legitimately does in a helper: memory, threads and their futexes, clocks,
 * files (a plugin loads its libraries at HELLO, a watermark its image at configure), polling
 * descriptors it holds, signals to itself, exit. Not in the list, hence fatal: exec, fork,
 * sockets, ptrace, process_vm_*, mount, chmod, unlink, rename, kill of another process, ... */
static const int strict_allowed[] = {
    __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_pwrite64, __NR_lseek,
    __NR_close, __NR_dup, __NR_dup3, __NR_fcntl, __NR_fstat, __NR_newfstatat, __NR_statx,
    __NR_fstatfs, __NR_statfs, __NR_openat, __NR_faccessat, __NR_readlinkat, __NR_getdents64,
    __NR_getcwd, __NR_ftruncate, __NR_memfd_create, __NR_pipe2, __NR_eventfd2, __NR_ppoll,
    __NR_mmap, __NR_munmap, __NR_mprotect, __NR_mremap, __NR_madvise, __NR_brk, __NR_msync,
    __NR_mincore, __NR_membarrier,
    __NR_futex, __NR_get_robust_list, __NR_set_robust_list, __NR_set_tid_address,
    __NR_clock_gettime, __NR_clock_getres, __NR_clock_nanosleep, __NR_nanosleep, __NR_gettimeofday,
    __NR_sched_yield, __NR_getcpu, __NR_sched_getaffinity, __NR_sched_getparam, __NR_sched_getscheduler,
    __NR_getpriority, __NR_getpid, __NR_gettid, __NR_getppid, __NR_getuid, __NR_geteuid,
    __NR_getgid, __NR_getegid, __NR_getresuid, __NR_getresgid, __NR_getrandom,
    __NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_sigaltstack,
    __NR_exit, __NR_exit_group, __NR_prlimit64, __NR_uname, __NR_sysinfo, __NR_getrusage, __NR_times,
#ifdef __NR_faccessat2
    __NR_faccessat2,
#endif
#ifdef __NR_rseq
    __NR_rseq,
#endif
#ifdef __NR_futex_waitv
    __NR_futex_waitv,
#endif
#if defined(__x86_64__)
    __NR_open, __NR_stat, __NR_lstat, __NR_access, __NR_readlink, __NR_dup2, __NR_poll, __NR_pipe,
    __NR_getrlimit, __NR_arch_prctl, __NR_time, __NR_select,
#endif
};

#define BPF_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define BPF_KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define BPF_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))
#define BPF_LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(field))
#define BPF_ARG_LO(n) BPF_LOAD(offsetof(struct seccomp_data, args[n]))
/* if (A == value) skip `t` instructions else skip `f` */
#define BPF_IF_EQ(value, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(value), t, f)

int rfx_iso_helper_seccomp_strict(void) {
#ifndef ISO_AUDIT_ARCH
    errno = ENOSYS;
    return -1;
#else
    enum { ALLOWED = sizeof strict_allowed / sizeof strict_allowed[0] };
    const uint32_t self = (uint32_t)getpid();
    struct sock_filter program[2 * ALLOWED + 48];
    size_t n = 0;
#define EMIT(instruction) program[n++] = (struct sock_filter)instruction
    /* Another architecture's numbering (a 32-bit entry point) would bypass the list. */
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, arch)));
    EMIT(BPF_IF_EQ(ISO_AUDIT_ARCH, 1, 0));
    EMIT(BPF_KILL);
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* x32 */, 0, 1));
    EMIT(BPF_KILL);
#endif
    for (size_t k = 0; k < ALLOWED; k++) {
        EMIT(BPF_IF_EQ(strict_allowed[k], 0, 1));
        EMIT(BPF_ALLOW);
    }
    /* Threads, not processes: clone only with CLONE_THREAD; clone3 (whose flags sit in
     * memory BPF cannot read) answers ENOSYS, and glibc falls back to clone. */
    EMIT(BPF_IF_EQ(__NR_clone, 0, 4));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_KILL);
#ifdef __NR_clone3
    EMIT(BPF_IF_EQ(__NR_clone3, 0, 1));
    EMIT(BPF_ERRNO(ENOSYS));
#endif
    /* Signals to itself only (raise, abort, pthread_kill): never to the host, whose
     * process group the helper shares. */
    EMIT(BPF_IF_EQ(__NR_kill, 1, 0));
    EMIT(BPF_IF_EQ(__NR_tgkill, 0, 4));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(self, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_KILL);
    /* Naming threads and mappings; any other prctl (undoing the death signal, ...) is refused. */
    EMIT(BPF_IF_EQ(__NR_prctl, 0, 6));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(PR_SET_NAME, 2, 0));
    EMIT(BPF_IF_EQ(PR_GET_NAME, 1, 0));
    EMIT(BPF_IF_EQ(0x53564d41 /* PR_SET_VMA */, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_ERRNO(EPERM));
    /* isatty and friends: no terminal here. A plugin may stack a stricter filter, never a wider one. */
    EMIT(BPF_IF_EQ(__NR_ioctl, 0, 1));
    EMIT(BPF_ERRNO(ENOTTY));
    EMIT(BPF_IF_EQ(__NR_seccomp, 0, 1));
    EMIT(BPF_ERRNO(EPERM));
    EMIT(BPF_KILL);
#undef EMIT
    struct sock_fprog fprog = { (unsigned short)n, program };
    /* NO_NEW_PRIVS (set by rfx_iso_helper_restrict, again here for a caller alone) lets an
     * unprivileged process install it; filters only stack, so a plugin cannot widen it. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
#endif
}

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

typedef struct iso_instance {
    rawfx_filter filter;                /* first: the chain holds a pointer to it */
    const iso_type *type;
    char error[RFX_ISO_ERROR_MAX];

    /* Shared memory: the control block, then the input and output frames. */
    int memfd;
    uint8_t *map;
    size_t map_size;
    rfx_iso_control *control;
    uint32_t seq;                       /* the host's own copy of request_seq */

    /* The helper and its supervisor. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t supervisor;
    _Atomic int state;
    _Atomic int in_call;                /* the process thread is using the channel */
    _Atomic int pid;
    _Atomic int fault_claimed;          /* this helper's fault is counted (once) */
    int exit_status;                    /* of the last helper, for the log line */
    int started;                        /* the first start finished (ok or not) */
    int start_ok;

    /* The negotiation, replayed after a restart. */
    int configured;
    _Atomic int provisional;            /* answered as a passthrough: the helper died in configure */
    rawfx_format input;
    rawfx_negotiation negotiation;
    size_t in_offset, out_offset, audio_in_frames, audio_out_frames;

    /* Parameters, replayed after a restart. */
    param_slot *params;
    uint32_t param_count;
    _Atomic uint32_t param_generation;

    /* Deadline: configured, or derived from the stream. */
    int64_t deadline_ns;
    int64_t last_timestamp;

    /* Audio passthrough: the input delayed by the stage's latency (same format only). */
    int16_t *delay;
    uint32_t delay_frames, delay_position, channels;
    uint64_t frames_in, frames_out;     /* for the passthrough length of a rate change */

    /* Counters (rfx_isolation_counters). */
    _Atomic uint64_t faults, restarts, passthrough, copied_in;

    /* A pipelined audio stage (`@isolate(pipeline)`): the request in flight, posted by the
     * last process call on channel `pipe_channel`, and its answer once collected (by the next
     * process call, or by a command that needed the channel first). Process thread only,
     * except configure and destroy (no frames flow then). */
    _Atomic uint32_t channel;           /* bumped by the supervisor for each fresh helper */
    int pipe_active;                    /* negotiated pipelined (not as a passthrough) */
    uint32_t pipe_seq;                  /* the request in flight; 0: none */
    uint32_t pipe_channel;
    int pipe_ready;                     /* pipe_out holds the answer to return next */
    int pipe_primed;                    /* a block went in since configure or reset */
    rawfx_status pipe_status;           /* the filter's error for the block in flight */
    int16_t *pipe_out;                  /* host memory: the collected answer */
    uint32_t pipe_out_frames, pipe_flags;
    uint32_t pipe_in_frames;            /* the request in flight: its block */
    rawfx_audio_frame pipe_layout_out;  /* and where its answer is to lie */
    size_t pipe_out_capacity;           /* samples */

    /* The copy in of a borrowed frame, in bands over the engine's thread pool. */
    struct copy_in_plan {
        uint8_t *dst[3];
        const uint8_t *src[3];
        int32_t dst_stride[3], src_stride[3];
        uint32_t width[3], height[3];
        uint32_t bands;
    } copy_in;

    /* The group's stages: what each was negotiated as, where its output lies. */
    iso_view view;                      /* stage 0's extension */
    int group_in_place;                 /* no out-of-place stage: the output is the input frame */
    rawfx_format member_input[RFX_ISO_GROUP_MAX];
    rawfx_negotiation member_negotiation[RFX_ISO_GROUP_MAX];
    rawfx_video_frame member_layout[RFX_ISO_GROUP_MAX];
    _Atomic uint32_t bypass_mask;
    _Atomic uint64_t member_faults[RFX_ISO_GROUP_MAX];
    int failed_member;                  /* the stage of the last error returned, or -1 */

    /* The helper's log ring (rfx_iso_control.log): the read position and the drops reported,
     * the host's own (the helper could write anything in the shared block); one drainer at a
     * time (`log_draining`). */
    _Atomic int log_draining;
    _Atomic uint32_t log_dequeue;       /* atomic: drain_log's look before taking the flag */
    _Atomic uint32_t log_dropped_seen;
} iso_instance;

static iso_instance *instance_of(const rawfx_filter *filter) { return (iso_instance *)filter->filter_data; }

/* -------------------------------------------------------------- logging -- */

/* [any] One engine log line, named by the filter (a group's stage `member`, or its first
 * when it is not known: -1). Real-time: the runtime's ring. */
static void log_member_line(iso_instance *inst, int member, rawfx_log_severity severity, const char *message) {
    rfx_runtime_log(severity, member >= 0 ? inst->type->members[member].filter_id : inst->type->filter_id, message);
}

static void log_line(iso_instance *inst, rawfx_log_severity severity, const char *message) {
    log_member_line(inst, -1, severity, message);
}

/* The helper's lines and the engine's must come out in the order they happened (a plugin's
 * last words before a crash, then the fault), so a fault's report waits for a drain under way
 * rather than skip it; a drain is a few slot copies. */
static void log_lock(iso_instance *inst) {
    while (atomic_exchange_explicit(&inst->log_draining, 1, memory_order_acquire)) sched_yield();
}
static void log_unlock(iso_instance *inst) { atomic_store_explicit(&inst->log_draining, 0, memory_order_release); }

/* [lock held] Forwards what the helper logged into the engine's log (real-time: the
 * runtime's ring), at most one ring's worth, as the plugin's own lines: named by the filter,
 * never as the engine. Nothing of the slot is trusted: the strings are cut and terminated
 * here, the severity and origin clamped. */
static void drain_log_locked(iso_instance *inst) {
    rfx_iso_control *c = inst->control;
    for (uint32_t n = 0; n < RFX_ISO_LOG_SLOTS; n++) {
        const uint32_t position = atomic_load_explicit(&inst->log_dequeue, memory_order_relaxed);
        rfx_iso_log_slot *slot = &c->log[position & (RFX_ISO_LOG_SLOTS - 1)];
        if (load_acquire(&slot->sequence) != position + 1) break;
        char source[RFX_ISO_LOG_SOURCE_MAX], message[RAWFX_LOG_MESSAGE_MAX];
        memcpy(source, slot->source, sizeof source);
        memcpy(message, slot->message, sizeof message);
        source[sizeof source - 1] = '\0';
        message[sizeof message - 1] = '\0';
        int32_t severity = __atomic_load_n(&slot->severity, __ATOMIC_RELAXED);
        int32_t origin = __atomic_load_n(&slot->origin, __ATOMIC_RELAXED);
        store_release(&slot->sequence, position + RFX_ISO_LOG_SLOTS);
        atomic_store_explicit(&inst->log_dequeue, position + 1, memory_order_relaxed);
        if (severity < RAWFX_LOG_DEBUG) severity = RAWFX_LOG_DEBUG;
        if (severity > RAWFX_LOG_ERROR) severity = RAWFX_LOG_ERROR;
        rfx_log_origin from = origin == RFX_LOG_PLUGIN_LIBRARY ? RFX_LOG_PLUGIN_LIBRARY : RFX_LOG_PLUGIN_INSTANCE;
        rfx_runtime_log_from(from, (rawfx_log_severity)severity, source[0] ? source : inst->type->filter_id, message);
    }
    uint32_t dropped = __atomic_load_n(&c->log_dropped, __ATOMIC_RELAXED);
    uint32_t seen = atomic_load_explicit(&inst->log_dropped_seen, memory_order_relaxed);
    if (dropped != seen) {
        char line[RAWFX_LOG_MESSAGE_MAX];
        snprintf(line, sizeof line, "the isolated helper dropped %u log lines: its log ring (%u lines) was full",
                 dropped - seen, RFX_ISO_LOG_SLOTS);
        atomic_store_explicit(&inst->log_dropped_seen, dropped, memory_order_relaxed);
        rfx_runtime_log(RAWFX_LOG_WARNING, inst->type->filter_id, line);
    }
}

/* [process, control or supervisor] Forwards the helper's lines, if it logged any (one load of
 * the shared word when it did not); skipped while another thread drains. */
static void drain_log(iso_instance *inst) {
    if (__atomic_load_n(&inst->control->log_enqueue, __ATOMIC_RELAXED) == atomic_load_explicit(&inst->log_dequeue, memory_order_relaxed)
        && __atomic_load_n(&inst->control->log_dropped, __ATOMIC_RELAXED)
               == atomic_load_explicit(&inst->log_dropped_seen, memory_order_relaxed)) return;
    if (atomic_exchange_explicit(&inst->log_draining, 1, memory_order_acquire)) return;
    drain_log_locked(inst);
    log_unlock(inst);
}

/* [supervisor, no helper running] An empty ring for the next helper. */
static void reset_log(iso_instance *inst) {
    log_lock(inst);
    drain_log_locked(inst); /* the last helper's last lines */
    rfx_iso_control *c = inst->control;
    for (uint32_t i = 0; i < RFX_ISO_LOG_SLOTS; i++) store_release(&c->log[i].sequence, i);
    __atomic_store_n(&c->log_enqueue, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->log_dropped, 0, __ATOMIC_RELAXED);
    atomic_store_explicit(&inst->log_dequeue, 0, memory_order_relaxed);
    atomic_store_explicit(&inst->log_dropped_seen, 0, memory_order_relaxed);
    log_unlock(inst);
}

/* A wait status (as waitpid gives) from what waitid saw. */
static int wait_status_of(const siginfo_t *info) {
    return info->si_code == CLD_EXITED ? (info->si_status & 0xff) << 8 : (info->si_status & 0x7f);
}

static void describe_exit(int status, int seccomp, char *out, size_t capacity) {
    if (seccomp && WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
        snprintf(out, capacity, "killed by signal %d (%s: a system call the seccomp filter forbids)", SIGSYS, strsignal(SIGSYS));
    else if (WIFSIGNALED(status))
        snprintf(out, capacity, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(out, capacity, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(out, capacity, "stopped");
}

/* [any] Counts and logs this helper's fault once, whoever sees it first. `member` is the
 * group's stage it happened in, -1 when not known (between frames); a stage alone is 0. */
static void claim_fault(iso_instance *inst, int member, const char *reason) {
    if (atomic_exchange(&inst->fault_claimed, 1)) return;
    log_lock(inst);
    drain_log_locked(inst);
    log_unlock(inst);
    atomic_fetch_add(&inst->faults, 1);
    uint32_t count = inst->type->member_count;
    if (count == 1) member = 0;
    if (member >= 0) atomic_fetch_add(&inst->member_faults[member], 1);
    char line[RAWFX_LOG_MESSAGE_MAX];
    if (count == 1)
        snprintf(line, sizeof line, "isolated helper (pid %d) %s: frames pass through unchanged until it restarts",
                 atomic_load(&inst->pid), reason);
    else if (member >= 0)
        snprintf(line, sizeof line, "isolated helper (pid %d) %s in stage %d of %u of its isolation group: "
                 "frames pass through the whole group unchanged until it restarts", atomic_load(&inst->pid), reason, member + 1, count);
    else
        snprintf(line, sizeof line, "isolated helper (pid %d) of an isolation group of %u stages %s: "
                 "frames pass through the whole group unchanged until it restarts", atomic_load(&inst->pid), count, reason);
    log_member_line(inst, member, RAWFX_LOG_WARNING, line);
}

/* [process or control] The group's stage the helper was running when it failed (it says so
 * before each call: only trusted to name a stage in a log line), or -1. */
static int running_member(iso_instance *inst) {
    uint32_t member = __atomic_load_n(&inst->control->member, __ATOMIC_RELAXED);
    return member < inst->type->member_count ? (int)member : -1;
}

/* [process or control] The helper is faulty: down, and killed (it may hang). The
 * pid cannot be reused yet: the supervisor reaps only after in_call drops. */
static void take_down_in(iso_instance *inst, int member, const char *reason) {
    claim_fault(inst, member, reason);
    atomic_store(&inst->state, STATE_DOWN);
    int pid = atomic_load(&inst->pid);
    if (pid > 0) kill(pid, SIGKILL);
}

static void take_down(iso_instance *inst, const char *reason) { take_down_in(inst, -1, reason); }

/* ------------------------------------------------------------- protocol -- */

enum { REPLY_OK = 0, REPLY_TIMEOUT = 1, REPLY_DEAD = 2 };

static uint32_t post(iso_instance *inst, uint32_t command) {
    inst->control->command = command;
    inst->seq += 1;
    if (inst->seq == 0 || inst->seq == RFX_ISO_DEAD) inst->seq = 1;
    inst->control->posted_ns = now_ns();
    store_release(&inst->control->request_seq, inst->seq);
    /* Pairs with poll_request's fences: a helper that polls sees the request itself. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&inst->control->helper_polling, __ATOMIC_RELAXED)) futex_wake(&inst->control->request_seq);
    return inst->seq;
}

/* Waits for the reply to `seq`, at most `timeout_ns`. A reply_seq that is neither
 * the answer nor DEAD is garbage: it runs into the deadline. */
/* True on the supervisor thread: nobody else would notice its helper's death, so it
 * looks for itself while it waits. */
static __thread int on_supervisor;

/* How long the processing thread polls for a reply before it sleeps on the futex. On a
 * VM whose other vCPU is idle, a futex wake-up takes 40-140 us (the vCPU is halted and must
 * be woken through the hypervisor); a reply that arrives while the waiter still polls costs
 * nothing of that. The processing thread would be blocked anyway: polling costs only the
 * core it already holds. Not on the supervisor thread, which waits for restarts. */
#define REPLY_POLL_NS 250000

static int wait_reply(iso_instance *inst, uint32_t seq, int64_t timeout_ns) {
    int64_t start = now_ns(), end = start + timeout_ns;
    /* Not when the helper last ran on this CPU: it is likely queued behind this thread
     * (both woke on one vCPU), and polling would keep it from running. Sleeping hands it
     * the CPU at once. */
    if (!on_supervisor && sched_getcpu() != __atomic_load_n(&inst->control->helper_cpu, __ATOMIC_RELAXED)) {
        int64_t poll_end = start + (timeout_ns < REPLY_POLL_NS ? timeout_ns : REPLY_POLL_NS);
        for (uint32_t round = 0;; round++) {
            uint32_t reply = load_acquire(&inst->control->reply_seq);
            if (reply == seq) return REPLY_OK;
            if (reply == RFX_ISO_DEAD) return REPLY_DEAD;
            if ((round & 63) == 63 && now_ns() >= poll_end) break;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    for (;;) {
        uint32_t reply = load_acquire(&inst->control->reply_seq);
        if (reply == seq) return REPLY_OK;
        if (reply == RFX_ISO_DEAD) return REPLY_DEAD;
        int64_t left = end - now_ns();
        if (left <= 0) return REPLY_TIMEOUT;
        if (on_supervisor) {
            siginfo_t info;
            memset(&info, 0, sizeof info);
            if (waitid(P_PID, (id_t)atomic_load(&inst->pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
                inst->exit_status = wait_status_of(&info);
                return REPLY_DEAD;
            }
            if (left > 20000000) left = 20000000;
        }
        futex_wait(&inst->control->reply_seq, reply, left);
    }
}

/* Takes the helper down after a wait for `what` ended without a reply. */
static void fail_wait(iso_instance *inst, int result, const char *what, int64_t timeout_ns) {
    char reason[160];
    if (result == REPLY_DEAD) {
        char how[80];
        describe_exit(inst->exit_status, inst->type->seccomp_strict, how, sizeof how);
        snprintf(reason, sizeof reason, "%s during %s", how, what);
    } else {
        snprintf(reason, sizeof reason, "did not finish %s within the %.2f ms deadline", what, (double)timeout_ns / 1e6);
    }
    take_down_in(inst, running_member(inst), reason);
}

/* A command round trip; on failure the helper is taken down with `what` in the log. */
static int call(iso_instance *inst, uint32_t command, int64_t timeout_ns, const char *what) {
    uint32_t seq = post(inst, command);
    int result = wait_reply(inst, seq, timeout_ns);
    if (result != REPLY_OK) fail_wait(inst, result, what, timeout_ns);
    else drain_log(inst);
    return result;
}

/* An error the filter returned: its message, and the group's stage that returned it. */
static void copy_error(iso_instance *inst) {
    memcpy(inst->error, inst->control->error, RFX_ISO_ERROR_MAX);
    inst->error[RFX_ISO_ERROR_MAX - 1] = 0;
    inst->failed_member = running_member(inst);
}

/* ------------------------------------------------------ memory layout -- */

/* Rows and planes in shared memory start on 64-byte boundaries, as in the engine's own
 * buffers (VideoBuffer): a transpose writes 16- and 32-byte pieces down a column, and with
 * rows of a 1080-wide frame at 1080-byte strides every other piece straddled two cache
 * lines (rotate 90 of 1080p in a helper took 1.7 ms, against 0.74 ms in process). */
#define ISO_ROW_ALIGN 64u

static size_t align_row(size_t n) { return (n + ISO_ROW_ALIGN - 1) & ~(size_t)(ISO_ROW_ALIGN - 1); }

static size_t plane_bytes(uint32_t w, uint32_t h) {
    return align_row(align_row(w) * h) + 2 * align_row(align_row((w + 1) / 2) * ((h + 1) / 2));
}

static void video_layout(rawfx_video_frame *f, const rawfx_video_format *format, size_t offset) {
    memset(f, 0, sizeof *f);
    f->struct_size = sizeof *f;
    f->width = format->width;
    f->height = format->height;
    f->pixel_format = format->pixel_format;
    f->color_range = format->color_range;
    f->rotation = format->rotation;
    size_t ystride = align_row(format->width), cstride = align_row((format->width + 1) / 2);
    size_t ysize = align_row(ystride * format->height), csize = align_row(cstride * ((format->height + 1) / 2));
    f->planes[0] = (uint8_t *)(uintptr_t)offset;
    f->planes[1] = (uint8_t *)(uintptr_t)(offset + ysize);
    f->planes[2] = (uint8_t *)(uintptr_t)(offset + ysize + csize);
    f->strides[0] = (int32_t)ystride;
    f->strides[1] = (int32_t)cstride;
    f->strides[2] = (int32_t)cstride;
}

/* The host maps this much address space once, at create, and only grows the file inside it:
 * the mapping never moves, so `map` and `control` are constant and the supervisor thread can
 * use them while the control thread grows the memory (a moving mremap raced with it). Room
 * for an 8K I420 frame in and out, with the control block. */
#define ISO_MAP_RESERVE ((size_t)256 << 20)

/* [control] Grows the memfd to `size` inside the reserved mapping (the helper maps again on MAP). */
static int ensure_size(iso_instance *inst, size_t size) {
    if (size <= inst->map_size) return 0;
    if (size > ISO_MAP_RESERVE) {
        errno = EFBIG;
        return -1;
    }
    if (ftruncate(inst->memfd, (off_t)size) != 0) return -1;
    inst->map_size = size;
    return 0;
}

/* ----------------------------------------------------------- handshake -- */

static int32_t send_param(iso_instance *inst, uint32_t index, const param_slot *slot, int64_t timeout_ns) {
    rfx_iso_control *c = inst->control;
    c->param_index = index;
    c->param_type = slot->type;
    c->param_int = slot->int_value;
    c->param_float = slot->float_value;
    memcpy(c->param_string, slot->string_value, RFX_ISO_STRING_MAX);
    if (call(inst, RFX_ISO_SET_PARAM, timeout_ns, "set_param") != REPLY_OK) return RAWFX_ERR_INTERNAL;
    int32_t status = c->status;
    if (status != RAWFX_OK) copy_error(inst);
    return status;
}

/* [control, lock held] CONFIGURE then MAP: returns the plugin's status, or
 * RAWFX_ERR_INTERNAL with inst->error set when the helper failed. Fills
 * `result` and the layout. */
static int32_t negotiate(iso_instance *inst, const rawfx_format *input, rawfx_negotiation *result) {
    rfx_iso_control *c = inst->control;
    c->input = *input;
    c->negotiation = *result;
    c->member_count = inst->type->member_count;
    if (call(inst, RFX_ISO_CONFIGURE, inst->type->control_timeout_ns, "configure") != REPLY_OK) {
        snprintf(inst->error, sizeof inst->error, "the isolated helper failed during configure");
        return RAWFX_ERR_INTERNAL;
    }
    if (c->status != RAWFX_OK) {
        copy_error(inst);
        return c->status;
    }
    /* Each stage's answer, copied once and checked; the group's is the last stage's output
     * with every stage's latency (the host sums them, it does not take the helper's word). */
    const iso_type *t = inst->type;
    uint32_t count = t->member_count;
    rawfx_format stage_input = *input;
    rawfx_negotiation answered = { 0 };
    uint32_t latency = 0;
    for (uint32_t k = 0; k < count; k++) {
        rawfx_negotiation n = c->member_negotiation[k];
        const char *problem = NULL;
        if (n.output.kind != input->kind) problem = "answered configure with another media kind";
        else if (input->kind == RAWFX_MEDIA_VIDEO) {
            const rawfx_video_format *o = &n.output.video;
            if (o->width == 0 || o->height == 0 || o->width > 16384 || o->height > 16384) problem = "answered an impossible output size";
            else if (t->members[k].processing == RAWFX_PROCESS_IN_PLACE
                     && (o->width != stage_input.video.width || o->height != stage_input.video.height))
                problem = "answered another size for an in-place stage";
        } else {
            const rawfx_audio_format *o = &n.output.audio;
            if (o->channels == 0 || o->channels > 64 || o->sample_rate == 0 || o->sample_rate > 1000000) problem = "answered an impossible audio format";
        }
        if (problem) {
            take_down_in(inst, (int)k, problem);
            snprintf(inst->error, sizeof inst->error, "the isolated helper %s", problem);
            return RAWFX_ERR_INTERNAL;
        }
        inst->member_input[k] = stage_input;
        inst->member_negotiation[k] = n;
        latency += n.latency;
        stage_input = n.output;
        if (k == 0) answered = n;
    }
    answered.output = stage_input;
    answered.latency = latency;
    if (t->pipeline) {
        /* One block late: a fixed block (10 ms unless the filter asked for one), so that
         * every call returns as many frames as it brings, and one block more latency. */
        const rawfx_audio_format *i = &input->audio, *o = &answered.output.audio;
        if (o->sample_rate != i->sample_rate || o->channels != i->channels) {
            snprintf(inst->error, sizeof inst->error,
                     "@isolate(pipeline) needs a stage that keeps rate and channels; this one makes %u Hz, %u ch of %u Hz, %u ch",
                     o->sample_rate, o->channels, i->sample_rate, i->channels);
            return RAWFX_ERR_UNSUPPORTED;
        }
        if (answered.block_frames == 0) answered.block_frames = (i->sample_rate + 99) / 100;
        answered.latency += answered.block_frames;
    }
    size_t header = round_page(sizeof(rfx_iso_control));
    size_t in_size, out_size = 0;
    if (input->kind == RAWFX_MEDIA_VIDEO) {
        /* The input frame, then each out-of-place stage's output: the last of them is the
         * group's output (in-place stages after it edit it there). */
        in_size = round_page(plane_bytes(input->video.width, input->video.height));
        inst->group_in_place = 1;
        inst->out_offset = header + in_size;
        for (uint32_t k = 0; k < count; k++) {
            memset(&inst->member_layout[k], 0, sizeof inst->member_layout[k]);
            if (t->members[k].processing != RAWFX_PROCESS_OUT_OF_PLACE) continue;
            const rawfx_video_format *o = &inst->member_negotiation[k].output.video;
            inst->out_offset = header + in_size + out_size;
            video_layout(&inst->member_layout[k], o, inst->out_offset);
            out_size += round_page(plane_bytes(o->width, o->height));
            inst->group_in_place = 0;
        }
    } else {
        const rawfx_audio_format *i = &input->audio, *o = &answered.output.audio;
        /* One second per call (or the block the filter asked for): larger chunks pass through. */
        size_t frames = answered.block_frames > i->sample_rate ? answered.block_frames : i->sample_rate;
        inst->audio_in_frames = frames;
        in_size = round_page(frames * i->channels * sizeof(int16_t));
        if (inst->type->real_processing == RAWFX_PROCESS_OUT_OF_PLACE) {
            size_t bound = frames * o->sample_rate / i->sample_rate + 16;
            if (answered.max_output_frames > bound) bound = answered.max_output_frames;
            inst->audio_out_frames = bound;
            out_size = round_page(bound * o->channels * sizeof(int16_t));
        }
        inst->out_offset = header + in_size;
    }
    inst->in_offset = header;
    size_t total = header + in_size + out_size;
    if (ensure_size(inst, total) != 0) {
        snprintf(inst->error, sizeof inst->error, "cannot grow the shared memory to %zu bytes: %s", total, strerror(errno));
        return RAWFX_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t k = 0; k < count; k++) c->member_out[k] = inst->member_layout[k];
    c = inst->control;
    c->mapped_size_lo = (uint32_t)inst->map_size;
    c->mapped_size_hi = (uint32_t)((uint64_t)inst->map_size >> 32);
    if (call(inst, RFX_ISO_MAP, inst->type->control_timeout_ns, "mapping the shared memory") != REPLY_OK || c->status != RAWFX_OK) {
        snprintf(inst->error, sizeof inst->error, "the isolated helper could not map %zu bytes of shared memory", inst->map_size);
        return RAWFX_ERR_INTERNAL;
    }
    *result = answered;
    return RAWFX_OK;
}

static int same_negotiation(const rawfx_negotiation *a, const rawfx_negotiation *b) {
    return memcmp(&a->output, &b->output, sizeof a->output) == 0 && a->block_frames == b->block_frames
        && a->max_output_frames == b->max_output_frames && a->latency == b->latency;
}

/* [supervisor] Starts one helper: spawn with the memfd as fd 3 and stdout on /dev/null
 * (the host's stdout may be a media pipe). Returns the pid or -1. */
static int spawn_helper(iso_instance *inst) {
    const iso_type *t = inst->type;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, inst->memfd, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    /* --plugin PATH --filter ID per stage, in the group's order. */
    char *argv[4 * RFX_ISO_GROUP_MAX + 4] = { t->helper_path };
    int argc = 1;
    for (uint32_t k = 0; k < t->member_count; k++) {
        argv[argc++] = "--plugin";
        argv[argc++] = t->members[k].plugin_path;
        argv[argc++] = "--filter";
        argv[argc++] = t->members[k].filter_id;
    }
    if (t->allow_untrusted) argv[argc++] = "--allow-untrusted";
    if (t->seccomp_strict) argv[argc++] = "--seccomp-strict";
    /* The host's environment, with the Swift runtime's crash backtracer off: a plugin's
     * crash is the engine's to report (one log line), not a page on the host's stderr. */
    size_t count = 0;
    while (environ[count]) count++;
    char **environment = calloc(count + 2, sizeof *environment);
    size_t kept = 0;
    for (size_t i = 0; environment && i < count; i++)
        if (strncmp(environ[i], "SWIFT_BACKTRACE=", 16) != 0) environment[kept++] = environ[i];
    if (environment) environment[kept] = "SWIFT_BACKTRACE=enable=no";
    pid_t pid = -1;
    int rc = posix_spawn(&pid, t->helper_path, &actions, &attributes, argv, environment ? environment : environ);
    free(environment);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        snprintf(inst->error, sizeof inst->error, "cannot start the isolation helper %s: %s", t->helper_path, strerror(rc));
        return -1;
    }
    return pid;
}

/* [supervisor, lock held] Brings a freshly spawned helper to the state the stage
 * had: the instance, every parameter set so far, the negotiation. Returns 1 when
 * it may serve frames. */
static int bring_up(iso_instance *inst) {
    int64_t timeout = inst->type->control_timeout_ns;
    if (call(inst, RFX_ISO_HELLO, timeout, "start-up") != REPLY_OK) {
        if (!inst->error[0]) snprintf(inst->error, sizeof inst->error, "the isolated helper did not start");
        return 0;
    }
    if (inst->control->status != RAWFX_OK) {
        copy_error(inst);
        return 0;
    }
    uint32_t generation;
    do {
        generation = atomic_load(&inst->param_generation);
        for (uint32_t i = 0; i < inst->param_count; i++) {
            if (!inst->params[i].set) continue;
            if (send_param(inst, i, &inst->params[i], timeout) != RAWFX_OK) return 0;
        }
    } while (generation != atomic_load(&inst->param_generation));
    if (inst->configured) {
        rawfx_negotiation answer = inst->negotiation;
        if (negotiate(inst, &inst->input, &answer) != RAWFX_OK) return 0;
        if (!same_negotiation(&answer, &inst->negotiation)) {
            /* The chain was negotiated without the filter (it died in configure): the
             * chain rebuilds this stage with a fresh configure. */
            log_line(inst, RAWFX_LOG_WARNING, "the restarted helper negotiated another format than the chain holds: "
                     "the stage stays passed through until the chain negotiates again");
            return 0;
        }
        inst->provisional = 0;
    }
    return 1;
}

static void sleep_interruptible(iso_instance *inst, int64_t ns) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t t = (int64_t)until.tv_sec * 1000000000 + until.tv_nsec + ns;
    until.tv_sec = t / 1000000000;
    until.tv_nsec = t % 1000000000;
    while (atomic_load(&inst->state) != STATE_QUIT)
        if (pthread_cond_timedwait(&inst->changed, &inst->lock, &until) == ETIMEDOUT) break;
}

/* [supervisor] Spawn, bring up, wait for the exit, restart with back-off. */
static void *supervise(void *argument) {
    iso_instance *inst = argument;
    on_supervisor = 1;
    int64_t backoff = inst->type->backoff_min_ns;
    int first = 1;
    pthread_mutex_lock(&inst->lock);
    while (atomic_load(&inst->state) != STATE_QUIT) {
        /* A fresh channel: the last helper is reaped, nobody is in a call. */
        inst->seq = 0;
        atomic_fetch_add(&inst->channel, 1); /* a request of the last helper is never answered */
        inst->control->magic = RFX_ISO_MAGIC;
        store_release(&inst->control->request_seq, 0);
        store_release(&inst->control->reply_seq, 0);
        /* A helper killed while it polled left the flag set: the new one must be woken. */
        store_release(&inst->control->helper_polling, 0);
        __atomic_store_n(&inst->control->helper_cpu, -1, __ATOMIC_RELAXED);
        __atomic_store_n(&inst->control->host_cpu, -1, __ATOMIC_RELAXED);
        inst->control->helper_may_sleep = inst->type->pipeline ? 1 : 0;
        reset_log(inst);
        inst->error[0] = 0;
        int pid = spawn_helper(inst);
        int up = 0;
        if (pid > 0) {
            atomic_store(&inst->pid, pid);
            atomic_store(&inst->fault_claimed, 0);
            up = bring_up(inst);
        }
        int64_t up_since = now_ns();
        if (up && atomic_load(&inst->state) != STATE_QUIT) {
            if (!first) {
                atomic_fetch_add(&inst->restarts, 1);
                log_line(inst, RAWFX_LOG_INFO, "isolated helper restarted: the stage processes frames again");
            }
            atomic_store(&inst->state, STATE_UP);
        }
        if (first) {
            inst->started = 1;
            inst->start_ok = up;
            first = 0;
            pthread_cond_broadcast(&inst->changed);
        }
        if (pid > 0) {
            if (up) {
                pthread_mutex_unlock(&inst->lock);
                /* Exit seen, not reaped: the pid stays ours while a caller may still signal it. */
                siginfo_t info;
                memset(&info, 0, sizeof info);
                while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
                /* Down, and a caller waiting on the channel (a frame, or a configure that
                 * holds the lock) wakes now rather than at its deadline. */
                int expected_up = STATE_UP;
                atomic_compare_exchange_strong(&inst->state, &expected_up, STATE_DOWN);
                inst->exit_status = wait_status_of(&info);
                store_release(&inst->control->reply_seq, RFX_ISO_DEAD);
                futex_wake(&inst->control->reply_seq);
                pthread_mutex_lock(&inst->lock);
            } else {
                kill(pid, SIGKILL);
            }
            int status = 0;
            while (atomic_load(&inst->in_call)) {
                pthread_mutex_unlock(&inst->lock);
                struct timespec pause = { 0, 200000 };
                nanosleep(&pause, NULL);
                pthread_mutex_lock(&inst->lock);
            }
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            atomic_store(&inst->pid, 0);
            if (up && atomic_load(&inst->state) != STATE_QUIT) {
                char how[80], reason[120];
                describe_exit(status, inst->type->seccomp_strict, how, sizeof how);
                snprintf(reason, sizeof reason, "%s between frames", how);
                claim_fault(inst, -1, reason);
            }
        }
        if (atomic_load(&inst->state) == STATE_QUIT) break;
        /* Back-off: doubled after a helper that did not last a second, reset after one that did. */
        if (up && now_ns() - up_since > 1000000000) backoff = inst->type->backoff_min_ns;
        sleep_interruptible(inst, backoff);
        backoff = backoff * 2 > inst->type->backoff_max_ns ? inst->type->backoff_max_ns : backoff * 2;
    }
    pthread_mutex_unlock(&inst->lock);
    return NULL;
}

/* ------------------------------------------------------ the proxy's ABI -- */

static const char *proxy_get_error(const rawfx_filter *filter) { return instance_of(filter)->error; }

static void proxy_destroy(const rawfx_filter *filter) {
    iso_instance *inst = instance_of(filter);
    pthread_mutex_lock(&inst->lock);
    atomic_store(&inst->state, STATE_QUIT);
    int pid = atomic_load(&inst->pid);
    if (pid > 0) kill(pid, SIGKILL);
    pthread_cond_broadcast(&inst->changed);
    pthread_mutex_unlock(&inst->lock);
    pthread_join(inst->supervisor, NULL);
    munmap(inst->map, ISO_MAP_RESERVE);
    close(inst->memfd);
    pthread_cond_destroy(&inst->changed);
    pthread_mutex_destroy(&inst->lock);
    free(inst->params);
    free(inst->delay);
    free(inst->pipe_out);
    free(inst);
}

static void pipe_collect(iso_instance *inst);

/* [process or control] Records the value (for restarts) and forwards it when the
 * helper is up. Never blocks on the lock: while a restart holds it, the value is
 * only recorded and the restart replays it. */
static rawfx_status proxy_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    iso_instance *inst = instance_of(filter);
    inst->error[0] = 0;
    if (index >= inst->param_count) {
        snprintf(inst->error, sizeof inst->error, "parameter index %u, expected below %u", index, inst->param_count);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    param_slot slot = { 1, value->type, value->int_value, value->float_value, { 0 } };
    if (value->type == RAWFX_PARAM_STRING && value->string_value) {
        if (strlen(value->string_value) >= RFX_ISO_STRING_MAX) {
            snprintf(inst->error, sizeof inst->error, "a string of %zu bytes, expected at most %d for an isolated filter",
                     strlen(value->string_value), RFX_ISO_STRING_MAX - 1);
            return RAWFX_ERR_INVALID_ARGUMENT;
        }
        strcpy(slot.string_value, value->string_value);
    }
    if (pthread_mutex_trylock(&inst->lock) != 0) {
        inst->params[index] = slot;
        atomic_fetch_add(&inst->param_generation, 1);
        return RAWFX_OK;
    }
    rawfx_status status = RAWFX_OK;
    if (atomic_load(&inst->state) == STATE_UP) {
        atomic_store(&inst->in_call, 1);
        /* A pipelined block in flight is answered first: one request at a time. */
        if (inst->pipe_seq) pipe_collect(inst);
        if (atomic_load(&inst->state) == STATE_UP) {
            int64_t timeout = inst->configured ? inst->deadline_ns : inst->type->control_timeout_ns;
            status = send_param(inst, index, &slot, timeout);
            /* A helper that failed here restarts; the value is replayed then. */
            if (status == RAWFX_ERR_INTERNAL && atomic_load(&inst->state) != STATE_UP) status = RAWFX_OK;
        }
        atomic_store(&inst->in_call, 0);
    }
    if (status == RAWFX_OK) {
        inst->params[index] = slot;
        atomic_fetch_add(&inst->param_generation, 1);
    }
    pthread_mutex_unlock(&inst->lock);
    return status;
}

static void reset_delay(iso_instance *inst) {
    if (inst->delay) memset(inst->delay, 0, (size_t)inst->delay_frames * inst->channels * sizeof(int16_t));
    inst->delay_position = 0;
}

static rawfx_status proxy_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    iso_instance *inst = instance_of(filter);
    inst->error[0] = 0;
    pthread_mutex_lock(&inst->lock);
    rawfx_status status;
    rawfx_negotiation answer = *result;
    int up = atomic_load(&inst->state) == STATE_UP;
    /* No frames flow now; a pipelined block still in flight is answered and forgotten. */
    if (up && inst->pipe_seq) pipe_collect(inst);
    inst->pipe_seq = 0;
    inst->pipe_ready = 0;
    inst->pipe_primed = 0;
    inst->pipe_active = 0;
    inst->pipe_status = RAWFX_OK;
    up = atomic_load(&inst->state) == STATE_UP;
    if (up) {
        status = negotiate(inst, input, &answer);
    } else {
        status = RAWFX_ERR_INTERNAL;
    }
    int helper_failed = status == RAWFX_ERR_INTERNAL && atomic_load(&inst->state) != STATE_UP;
    if (status != RAWFX_OK && !helper_failed) {
        pthread_mutex_unlock(&inst->lock);
        return status;
    }
    if (helper_failed) {
        /* The filter is down: the stage passes its input on, so it negotiates as a
         * passthrough; a restarted helper that answers otherwise leaves it passed through. */
        answer = *result;
        answer.block_frames = 0;
        answer.max_output_frames = 0;
        answer.latency = 0;
        inst->provisional = 1;
        if (input->kind == RAWFX_MEDIA_AUDIO) inst->audio_in_frames = 0;
        for (uint32_t k = 0; k < inst->type->member_count; k++) {
            inst->member_input[k] = *input;
            inst->member_negotiation[k] = answer;
        }
    }
    inst->input = *input;
    inst->negotiation = answer;
    inst->configured = 1;
    *result = answer;
    /* The deadline: configured, or half a frame at 30 fps until timestamps tell the rate;
     * one 10 ms block for audio until blocks tell their length. */
    inst->deadline_ns = inst->type->deadline_ns > 0 ? inst->type->deadline_ns
                      : input->kind == RAWFX_MEDIA_VIDEO ? 1000000000 / 60 : 10000000;
    inst->last_timestamp = INT64_MIN;
    inst->frames_in = inst->frames_out = 0;
    free(inst->delay);
    inst->delay = NULL;
    inst->delay_frames = 0;
    if (input->kind == RAWFX_MEDIA_AUDIO) {
        inst->channels = input->audio.channels;
        if (answer.latency > 0 && answer.output.audio.sample_rate == input->audio.sample_rate
            && answer.output.audio.channels == input->audio.channels) {
            inst->delay = calloc((size_t)answer.latency * inst->channels, sizeof(int16_t));
            inst->delay_frames = inst->delay ? answer.latency : 0;
        }
        reset_delay(inst);
        if (inst->type->pipeline && !inst->provisional) {
            /* Where a collected answer waits for the next call: the most one block makes. */
            size_t samples = (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE ? inst->audio_in_frames
                                                                                     : inst->audio_out_frames) * inst->channels;
            if (samples > inst->pipe_out_capacity) {
                free(inst->pipe_out);
                inst->pipe_out = malloc(samples * sizeof(int16_t));
                inst->pipe_out_capacity = inst->pipe_out ? samples : 0;
            }
            if (!inst->pipe_out) {
                snprintf(inst->error, sizeof inst->error, "cannot allocate %zu samples for the pipelined answer", samples);
                pthread_mutex_unlock(&inst->lock);
                return RAWFX_ERR_OUT_OF_MEMORY;
            }
            inst->pipe_active = 1;
        }
    }
    pthread_mutex_unlock(&inst->lock);
    return RAWFX_OK;
}

static void proxy_reset(const rawfx_filter *filter) {
    iso_instance *inst = instance_of(filter);
    reset_delay(inst);
    inst->pipe_primed = 0;
    if (pthread_mutex_trylock(&inst->lock) != 0) { /* restarting: a fresh helper has no history */
        inst->pipe_seq = 0;
        inst->pipe_ready = 0;
        return;
    }
    if (atomic_load(&inst->state) == STATE_UP) {
        atomic_store(&inst->in_call, 1);
        if (inst->pipe_seq) pipe_collect(inst); /* answered, then forgotten with the history */
        if (atomic_load(&inst->state) == STATE_UP)
            call(inst, RFX_ISO_RESET, inst->configured ? inst->deadline_ns : inst->type->control_timeout_ns, "reset");
        atomic_store(&inst->in_call, 0);
    }
    inst->pipe_seq = 0;
    inst->pipe_ready = 0;
    inst->pipe_status = RAWFX_OK;
    pthread_mutex_unlock(&inst->lock);
}

/* [process] The frame goes on unchanged: the input itself, or black in the negotiated
 * output format for a stage that changes the format (no input fits there). */
static void video_passthrough(iso_instance *inst, const rawfx_video_frame *in, rawfx_video_frame *out) {
    atomic_fetch_add_explicit(&inst->passthrough, 1, memory_order_relaxed);
    const rawfx_video_format *o = &inst->negotiation.output.video;
    if (o->width == in->width && o->height == in->height) {
        int64_t timestamp = out->timestamp_us;
        *out = *in;
        out->timestamp_us = timestamp;
        out->rotation = o->rotation;
        out->color_range = o->color_range;
        return;
    }
    for (int p = 0; p < 3; p++) {
        uint32_t w = p ? (out->width + 1) / 2 : out->width, h = p ? (out->height + 1) / 2 : out->height;
        for (uint32_t y = 0; y < h; y++) memset(out->planes[p] + (size_t)y * out->strides[p], p ? 128 : 16, w);
    }
}

static void copy_plane(uint8_t *dst, int32_t dst_stride, const uint8_t *src, int32_t src_stride, uint32_t w, uint32_t h) {
    /* One memcpy when the rows lie alike (10-15 % faster than row by row for a cold 1080p
     * frame here): the padding between rows goes along, the last row stops at its width. */
    if (dst_stride == src_stride && dst_stride > 0 && (uint32_t)dst_stride >= w && h > 0) {
        memcpy(dst, src, (size_t)dst_stride * (h - 1) + w);
        return;
    }
    for (uint32_t y = 0; y < h; y++) memcpy(dst + (size_t)y * dst_stride, src + (size_t)y * src_stride, w);
}

/* A band of the copy in: about this many bytes, so that a worker of the pool that
 * wakes late holds the caller up for one band at most. */
#define COPY_IN_BAND_BYTES (256u * 1024u)
#define COPY_IN_MAX_BANDS 64u

/* [any thread of the pool] Rows [h * index / n, h * (index + 1) / n) of every plane. */
static void copy_in_band(void *context, uint32_t index) {
    const struct copy_in_plan *plan = context;
    for (int p = 0; p < 3; p++) {
        const uint32_t begin = (uint32_t)((uint64_t)plan->height[p] * index / plan->bands);
        const uint32_t end = (uint32_t)((uint64_t)plan->height[p] * (index + 1) / plan->bands);
        if (end > begin)
            copy_plane(plan->dst[p] + (ptrdiff_t)begin * plan->dst_stride[p], plan->dst_stride[p],
                       plan->src[p] + (ptrdiff_t)begin * plan->src_stride[p], plan->src_stride[p], plan->width[p], end - begin);
    }
}

/* [process] The one copy of a borrowed frame into shared memory. With the engine's thread
 * pool at 2 or more threads it is cut into bands that the workers and this thread take
 * as they come (rfx_runtime_run_jobs): one thread copying a cold 1080p frame is held to
 * about 370 us by memory latency here, two take about 220 us (C microbench, 2-vCPU AMD
 * EPYC). A worker that is asleep or busy costs nothing but its wake-up post: this thread
 * takes the bands it leaves. */
static void copy_frame_in(iso_instance *inst, const rawfx_video_frame *in, const rawfx_video_frame *layout) {
    struct copy_in_plan *plan = &inst->copy_in;
    size_t bytes = 0;
    for (int p = 0; p < 3; p++) {
        plan->width[p] = p ? (in->width + 1) / 2 : in->width;
        plan->height[p] = p ? (in->height + 1) / 2 : in->height;
        plan->dst[p] = inst->map + (uintptr_t)layout->planes[p];
        plan->dst_stride[p] = layout->strides[p];
        plan->src[p] = in->planes[p];
        plan->src_stride[p] = in->strides[p];
        bytes += (size_t)plan->width[p] * plan->height[p];
    }
    uint32_t bands = 1;
    if (rfx_runtime_thread_count() > 1) {
        size_t wanted = bytes / COPY_IN_BAND_BYTES;
        bands = wanted < 1 ? 1 : wanted > COPY_IN_MAX_BANDS ? COPY_IN_MAX_BANDS : (uint32_t)wanted;
        if (bands > plan->height[1]) bands = plan->height[1]; /* every band has chroma rows */
    }
    plan->bands = bands;
    if (bands > 1) rfx_runtime_run_jobs(copy_in_band, plan, bands);
    else copy_in_band(plan, 0);
}

/* [process] Half the frame interval the timestamps show (clamped to 2..100 ms). */
static void derive_video_deadline(iso_instance *inst, int64_t timestamp) {
    if (inst->type->deadline_ns > 0) return;
    int64_t interval = timestamp - inst->last_timestamp;
    if (inst->last_timestamp != INT64_MIN && interval > 0 && interval < 1000000) {
        int64_t half = interval * 500;
        inst->deadline_ns = half < 2000000 ? 2000000 : half > 100000000 ? 100000000 : half;
    }
    inst->last_timestamp = timestamp;
}

static int enter_call(iso_instance *inst) {
    if (atomic_load(&inst->state) != STATE_UP) return 0;
    atomic_store(&inst->in_call, 1);
    if (atomic_load(&inst->state) == STATE_UP) return 1;
    atomic_store(&inst->in_call, 0);
    return 0;
}

static void leave_call(iso_instance *inst) { atomic_store(&inst->in_call, 0); }

static rawfx_status proxy_process_video(const rawfx_filter *filter, const rawfx_video_frame *in, rawfx_video_frame *out) {
    iso_instance *inst = instance_of(filter);
    derive_video_deadline(inst, in->timestamp_us);
    const rawfx_video_format *fi = &inst->input.video;
    if (in->width != fi->width || in->height != fi->height) {
        snprintf(inst->error, sizeof inst->error, "a %ux%u frame, negotiated %ux%u", in->width, in->height, fi->width, fi->height);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (inst->provisional || !enter_call(inst)) {
        video_passthrough(inst, in, out);
        return RAWFX_OK;
    }
    rfx_iso_control *c = inst->control;
    __atomic_store_n(&c->host_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    rawfx_video_frame layout_in, layout_out;
    video_layout(&layout_in, fi, inst->in_offset);
    layout_in.timestamp_us = in->timestamp_us;
    layout_in.rotation = in->rotation;
    layout_in.color_range = in->color_range;
    int in_place = inst->group_in_place;
    if (in_place) layout_out = layout_in;
    else {
        video_layout(&layout_out, &inst->negotiation.output.video, inst->out_offset);
        layout_out.timestamp_us = in->timestamp_us;
    }
    /* The one copy, the borrowed frame into shared memory, unless the stage upstream wrote
     * it there already (rfx_isolation_video_input_frame). */
    int in_shared = 1;
    for (int p = 0; p < 3; p++)
        in_shared &= in->planes[p] == inst->map + (uintptr_t)layout_in.planes[p] && in->strides[p] == layout_in.strides[p];
    if (!in_shared) {
        /* Wake the helper now (unless it polls already): it polls for the request while
         * the frame is copied in. */
        if (!__atomic_load_n(&c->helper_polling, __ATOMIC_RELAXED)) futex_wake(&c->request_seq);
        atomic_fetch_add_explicit(&inst->copied_in, 1, memory_order_relaxed);
        copy_frame_in(inst, in, &layout_in);
    }
    c->video_in = layout_in;
    c->video_out = layout_out;
    c->bypass_mask = atomic_load_explicit(&inst->bypass_mask, memory_order_relaxed);
    uint32_t seq = post(inst, RFX_ISO_PROCESS_VIDEO);
    int result = wait_reply(inst, seq, inst->deadline_ns);
    rawfx_status status = RAWFX_OK;
    if (result != REPLY_OK) {
        fail_wait(inst, result, "a frame", inst->deadline_ns);
        video_passthrough(inst, in, out);
    } else if ((status = c->status) != RAWFX_OK) {
        copy_error(inst);
    } else {
        rawfx_video_frame answered = in_place ? c->video_in : c->video_out; /* copied once, then checked */
        const rawfx_video_frame *expected = in_place ? &layout_in : &layout_out;
        int moved = 0;
        for (int p = 0; p < 3; p++)
            moved |= answered.planes[p] != expected->planes[p] || answered.strides[p] != expected->strides[p];
        if (answered.width != expected->width || answered.height != expected->height
            || answered.pixel_format != RAWFX_PIXEL_I420 || moved || answered.color_range > RAWFX_RANGE_FULL
            || answered.rotation % 90 != 0 || answered.rotation >= 360) {
            char reason[200];
            snprintf(reason, sizeof reason, "broke the protocol: it reported a %ux%u frame (format %u, rotation %u%s), the negotiated output is %ux%u",
                     answered.width, answered.height, answered.pixel_format, answered.rotation,
                     moved ? ", planes moved" : "", expected->width, expected->height);
            take_down(inst, reason);
            video_passthrough(inst, in, out);
        } else {
            /* No copy back: the output view lies in shared memory until the next frame. */
            int64_t timestamp = out->timestamp_us;
            *out = *expected;
            for (int p = 0; p < 3; p++) out->planes[p] = inst->map + (uintptr_t)expected->planes[p];
            out->rotation = answered.rotation;
            out->color_range = answered.color_range;
            out->timestamp_us = timestamp;
        }
    }
    /* Between calls this thread may sleep or run anywhere: a stale CPU here made a helper
     * that woke early on that CPU give up its poll (288 of 306 paced audio blocks were then
     * seen 12-15 us late, after a FUTEX_WAKE; with -1, 294 of 306 were seen by the poll). */
    __atomic_store_n(&c->host_cpu, -1, __ATOMIC_RELAXED);
    drain_log(inst);
    leave_call(inst);
    return status;
}

/* [process] Feeds `count` frames of `samples` through the delay line; with
 * `delayed`, writes them delayed by the stage's latency there (may alias). */
static void delay_push(iso_instance *inst, const int16_t *samples, int16_t *delayed, uint32_t count) {
    if (!inst->delay) {
        if (delayed && delayed != samples) memcpy(delayed, samples, (size_t)count * inst->channels * sizeof(int16_t));
        return;
    }
    uint32_t ch = inst->channels;
    for (uint32_t f = 0; f < count; f++) {
        int16_t *slot = inst->delay + (size_t)inst->delay_position * ch;
        for (uint32_t k = 0; k < ch; k++) {
            int16_t x = samples[(size_t)f * ch + k];
            if (delayed) delayed[(size_t)f * ch + k] = slot[k];
            slot[k] = x;
        }
        inst->delay_position = inst->delay_position + 1 == inst->delay_frames ? 0 : inst->delay_position + 1;
    }
}

/* [process] The block goes on unchanged: the input delayed by the stage's latency;
 * for a stage that changes rate or channels, silence of the length it would have made. */
static void audio_passthrough(iso_instance *inst, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    atomic_fetch_add_explicit(&inst->passthrough, 1, memory_order_relaxed);
    const rawfx_audio_format *o = &inst->negotiation.output.audio;
    if (o->sample_rate == in->sample_rate && o->channels == in->channels) {
        delay_push(inst, in->samples, out->samples, in->frame_count);
        out->frame_count = in->frame_count;
    } else {
        uint64_t target = (inst->frames_in * o->sample_rate) / (in->sample_rate ? in->sample_rate : 1);
        uint64_t count = target > inst->frames_out ? target - inst->frames_out : 0;
        if (count > out->frame_count) count = out->frame_count;
        memset(out->samples, 0, (size_t)count * o->channels * sizeof(int16_t));
        out->frame_count = (uint32_t)count;
    }
    out->sample_rate = o->sample_rate;
    out->channels = o->channels;
}

/* [process, in a call] Copies block `in` into the shared memory and posts it. `*layout_out`
 * gets where the helper is to write its answer (the input itself for an in-place stage). */
static uint32_t post_audio_block(iso_instance *inst, const rawfx_audio_frame *in, const rawfx_audio_frame *out,
                                 rawfx_audio_frame *layout_out) {
    rfx_iso_control *c = inst->control;
    memcpy(inst->map + inst->in_offset, in->samples, (size_t)in->frame_count * in->channels * sizeof(int16_t));
    rawfx_audio_frame layout_in = *in;
    layout_in.samples = (int16_t *)(uintptr_t)inst->in_offset;
    *layout_out = *out;
    if (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE) *layout_out = layout_in;
    else {
        layout_out->samples = (int16_t *)(uintptr_t)inst->out_offset;
        if (layout_out->frame_count > inst->audio_out_frames) layout_out->frame_count = (uint32_t)inst->audio_out_frames;
    }
    c->audio_in = layout_in;
    c->audio_out = *layout_out;
    return post(inst, RFX_ISO_PROCESS_AUDIO);
}

/* Why the helper's answer (copied once from the control block) to a block of `in_frames`
 * posted with `layout_out` breaks the protocol, or NULL. */
static const char *audio_answer_violation(const iso_instance *inst, const rawfx_audio_frame *answered,
                                          const rawfx_audio_frame *layout_out, uint32_t in_frames) {
    if (answered->samples != layout_out->samples) return "moved the output samples";
    if (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE ? answered->frame_count != in_frames
                                                              : answered->frame_count > layout_out->frame_count)
        return "reported more output frames than the buffer holds";
    if (answered->sample_rate != inst->negotiation.output.audio.sample_rate
        || answered->channels != inst->negotiation.output.audio.channels)
        return "reported another rate or channel count than negotiated";
    return NULL;
}

/* [process, in a call; or configure, with no frames flowing] Waits for the answer to the
 * pipelined block in flight (at most the deadline, counted from now: the helper has had the
 * whole interval since the call that posted it) and keeps it in pipe_out for the next process
 * call. A helper that restarted since never answers it: that block is lost, and the next
 * call passes it through from the delay line. */
static void pipe_collect(iso_instance *inst) {
    const uint32_t seq = inst->pipe_seq;
    inst->pipe_seq = 0;
    if (seq == 0 || inst->pipe_channel != atomic_load(&inst->channel) || atomic_load(&inst->state) != STATE_UP) return;
    rfx_iso_control *c = inst->control;
    const int result = wait_reply(inst, seq, inst->deadline_ns);
    if (result != REPLY_OK) {
        fail_wait(inst, result, "a block", inst->deadline_ns);
        return;
    }
    if (c->status != RAWFX_OK) {
        copy_error(inst);
        inst->pipe_status = c->status;
        return;
    }
    const int in_place = inst->type->real_processing == RAWFX_PROCESS_IN_PLACE;
    const rawfx_audio_frame answered = in_place ? c->audio_in : c->audio_out; /* copied once, then checked */
    const char *violation = audio_answer_violation(inst, &answered, &inst->pipe_layout_out, inst->pipe_in_frames);
    if (violation) {
        char reason[160];
        snprintf(reason, sizeof reason, "broke the protocol: it %s", violation);
        take_down(inst, reason);
        return;
    }
    memcpy(inst->pipe_out, inst->map + (uintptr_t)answered.samples, (size_t)answered.frame_count * answered.channels * sizeof(int16_t));
    inst->pipe_out_frames = answered.frame_count;
    inst->pipe_flags = answered.flags;
    inst->pipe_ready = 1;
}

/* [process] `@isolate(pipeline)`: block N goes to the helper and block N-1's answer comes
 * back, so this thread waits only when the helper has not finished block N-1 in the whole
 * interval between two calls (and then at most the deadline). The negotiation made the
 * block fixed and added it to the latency. A block the helper did not answer (a fault, a
 * restart, a stage down) comes out of the delay line instead: the input, as late as every
 * answer. No block is lost or doubled: each call brings one and returns one. */
static rawfx_status pipe_process_audio(iso_instance *inst, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    const uint32_t n = in->frame_count;
    const int up = n <= inst->audio_in_frames && enter_call(inst);
    if (up) pipe_collect(inst);
    else inst->pipe_seq = 0; /* the helper that had it is gone (or going) */
    const rawfx_status status = inst->pipe_status;
    inst->pipe_status = RAWFX_OK;
    const int answered = inst->pipe_ready;
    inst->pipe_ready = 0;
    /* Block N to the helper first: `out` may be `in` (an in-place stage). */
    if (up && atomic_load(&inst->state) == STATE_UP) {
        inst->pipe_in_frames = n;
        inst->pipe_channel = atomic_load(&inst->channel);
        inst->pipe_seq = post_audio_block(inst, in, out, &inst->pipe_layout_out);
    }
    /* Block N-1 out. */
    if (answered && inst->pipe_out_frames <= out->frame_count) {
        delay_push(inst, in->samples, NULL, n);
        memcpy(out->samples, inst->pipe_out, (size_t)inst->pipe_out_frames * inst->channels * sizeof(int16_t));
        out->frame_count = inst->pipe_out_frames;
        out->flags |= inst->pipe_flags;
    } else {
        /* The first call after configure or reset returns the delay line's silence. */
        if (inst->pipe_primed) atomic_fetch_add_explicit(&inst->passthrough, 1, memory_order_relaxed);
        delay_push(inst, in->samples, out->samples, n);
        out->frame_count = n;
    }
    out->sample_rate = in->sample_rate;
    out->channels = in->channels;
    inst->pipe_primed = 1;
    inst->frames_out += out->frame_count;
    if (up) {
        drain_log(inst);
        leave_call(inst);
    }
    return status;
}

static rawfx_status proxy_process_audio(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    iso_instance *inst = instance_of(filter);
    inst->frames_in += in->frame_count;
    if (inst->type->deadline_ns <= 0 && in->sample_rate > 0) {
        int64_t block = (int64_t)in->frame_count * 1000000000 / in->sample_rate;
        inst->deadline_ns = block < 2000000 ? 2000000 : block > 500000000 ? 500000000 : block;
    }
    if (inst->pipe_active) return pipe_process_audio(inst, in, out);
    int in_place = inst->type->real_processing == RAWFX_PROCESS_IN_PLACE;
    if (inst->provisional || in->frame_count > inst->audio_in_frames || !enter_call(inst)) {
        audio_passthrough(inst, in, out);
        inst->frames_out += out->frame_count;
        return RAWFX_OK;
    }
    rfx_iso_control *c = inst->control;
    __atomic_store_n(&c->host_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    rawfx_audio_frame layout_out;
    uint32_t seq = post_audio_block(inst, in, out, &layout_out);
    int result = wait_reply(inst, seq, inst->deadline_ns);
    rawfx_status status = RAWFX_OK;
    const char *violation = NULL;
    rawfx_audio_frame answered;
    if (result == REPLY_OK && (status = c->status) == RAWFX_OK) {
        answered = in_place ? c->audio_in : c->audio_out; /* copied once, then checked */
        violation = audio_answer_violation(inst, &answered, &layout_out, in->frame_count);
    }
    if (result != REPLY_OK || violation) {
        if (violation) {
            char reason[160];
            snprintf(reason, sizeof reason, "broke the protocol: it %s", violation);
            take_down(inst, reason);
        } else {
            fail_wait(inst, result, "a block", inst->deadline_ns);
        }
        audio_passthrough(inst, in, out);
    } else if (status != RAWFX_OK) {
        copy_error(inst);
        delay_push(inst, in->samples, NULL, in->frame_count);
    } else {
        delay_push(inst, in->samples, NULL, in->frame_count);
        size_t out_bytes = (size_t)answered.frame_count * answered.channels * sizeof(int16_t);
        memcpy(out->samples, inst->map + (uintptr_t)answered.samples, out_bytes);
        out->frame_count = answered.frame_count;
        out->flags |= answered.flags;
        if (!in_place) {
            out->sample_rate = answered.sample_rate;
            out->channels = answered.channels;
        }
    }
    inst->frames_out += out->frame_count;
    __atomic_store_n(&c->host_cpu, -1, __ATOMIC_RELAXED); /* as after a frame */
    drain_log(inst);
    leave_call(inst);
    return status;
}

static void counters_of(const void *extension, rfx_isolation_counters *out);

static const void *proxy_get_extension(const rawfx_filter *filter, const char *id) {
    if (strcmp(id, RFX_ISOLATION_EXTENSION) == 0) return &instance_of(filter)->view;
    return NULL;
}

void rfx_isolation_read_counters(const void *extension, rfx_isolation_counters *out) { counters_of(extension, out); }

static void counters_of(const void *extension, rfx_isolation_counters *out) {
    const iso_view *view = extension;
    iso_instance *inst = view->inst;
    out->stage_faults = atomic_load(&inst->member_faults[view->member]);
    out->group_member = view->member;
    out->group_size = inst->type->member_count;
    out->faults = atomic_load(&inst->faults);
    out->restarts = atomic_load(&inst->restarts);
    out->passthrough = atomic_load(&inst->passthrough);
    out->copied_in = atomic_load(&inst->copied_in);
    out->up = atomic_load(&inst->state) == STATE_UP && !inst->provisional;
    out->pid = atomic_load(&inst->pid);
    out->deadline_ns = inst->deadline_ns;
}

static const rawfx_filter *proxy_create(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity);

int32_t rfx_isolation_video_input_frame(const rawfx_filter *filter, rawfx_video_frame *frame) {
    if (filter->descriptor->create != proxy_create || filter->descriptor->media_kind != RAWFX_MEDIA_VIDEO) return 0;
    iso_instance *inst = instance_of(filter);
    /* Never waits: the chain may ask between two frames, while a restart holds the lock for
     * seconds; it then keeps (or makes) a buffer of its own and the frame is copied. */
    if (pthread_mutex_trylock(&inst->lock) != 0) return 0;
    int ok = inst->configured && !atomic_load(&inst->provisional) && inst->in_offset != 0;
    if (ok) {
        video_layout(frame, &inst->input.video, inst->in_offset);
        for (int p = 0; p < 3; p++) frame->planes[p] = inst->map + (uintptr_t)frame->planes[p];
    }
    pthread_mutex_unlock(&inst->lock);
    return ok;
}

/* [control] A proxy with a helper serving the real filter; NULL with a message
 * when the helper cannot start (not found, the plugin refused, ...). */
static const rawfx_filter *proxy_create(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity) {
    const iso_type *type = (const iso_type *)descriptor;
    iso_instance *inst = calloc(1, sizeof *inst);
    if (!inst) return NULL;
    inst->type = type;
    inst->param_count = type->total_params;
    inst->view.inst = inst;
    inst->failed_member = -1;
    inst->params = calloc(inst->param_count ? inst->param_count : 1, sizeof(param_slot));
    inst->memfd = memfd_create("rawfx-isolate", MFD_CLOEXEC);
    if (inst->memfd == 3) { /* dup2(3, 3) in the child would keep CLOEXEC */
        int moved = fcntl(inst->memfd, F_DUPFD_CLOEXEC, 10);
        close(inst->memfd);
        inst->memfd = moved;
    }
    size_t header = round_page(sizeof(rfx_iso_control));
    if (!inst->params || inst->memfd < 0 || ftruncate(inst->memfd, (off_t)header) != 0
        || (inst->map = mmap(NULL, ISO_MAP_RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                             inst->memfd, 0)) == MAP_FAILED) {
        snprintf(error, capacity, "cannot make the shared memory of an isolated stage: %s", strerror(errno));
        if (inst->memfd >= 0) close(inst->memfd);
        free(inst->params);
        free(inst);
        return NULL;
    }
    inst->map_size = header;
    inst->control = (rfx_iso_control *)inst->map;
    inst->deadline_ns = type->deadline_ns > 0 ? type->deadline_ns : 1000000000 / 60;
    pthread_mutex_init(&inst->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&inst->changed, &attributes);
    pthread_condattr_destroy(&attributes);
    inst->filter.struct_size = sizeof inst->filter;
    inst->filter.descriptor = descriptor;
    inst->filter.filter_data = inst;
    inst->filter.destroy = proxy_destroy;
    inst->filter.set_param = proxy_set_param;
    inst->filter.configure = proxy_configure;
    if (descriptor->media_kind == RAWFX_MEDIA_VIDEO) inst->filter.process_video = proxy_process_video;
    else inst->filter.process_audio = proxy_process_audio;
    inst->filter.reset = proxy_reset;
    inst->filter.get_error = proxy_get_error;
    inst->filter.get_extension = proxy_get_extension;
    pthread_mutex_lock(&inst->lock);
    if (pthread_create(&inst->supervisor, NULL, supervise, inst) != 0) {
        pthread_mutex_unlock(&inst->lock);
        snprintf(error, capacity, "cannot start the supervisor thread of an isolated stage");
        munmap(inst->map, ISO_MAP_RESERVE);
        close(inst->memfd);
        free(inst->params);
        free(inst);
        return NULL;
    }
    while (!inst->started) pthread_cond_wait(&inst->changed, &inst->lock);
    int ok = inst->start_ok;
    if (!ok) snprintf(error, capacity, "%s", inst->error[0] ? inst->error : "the isolated helper did not start");
    pthread_mutex_unlock(&inst->lock);
    if (!ok) {
        proxy_destroy(&inst->filter);
        return NULL;
    }
    return &inst->filter;
}

static const rawfx_filter *proxy_create_with_host(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                                  char *error, size_t capacity) {
    (void)host;
    return proxy_create(descriptor, error, capacity);
}

rawfx_filter_descriptor *rfx_isolation_descriptor_create(const rawfx_filter_descriptor *real,
                                                         const rfx_isolation_config *config) {
    iso_type *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->descriptor = *real;
    t->descriptor.struct_size = sizeof t->descriptor;
    t->real_processing = real->processing;
    /* Video: out of place, so the output is read where the helper wrote it. */
    if (real->media_kind == RAWFX_MEDIA_VIDEO) t->descriptor.processing = RAWFX_PROCESS_OUT_OF_PLACE;
    t->descriptor.create = proxy_create;
    t->descriptor.create_with_host = proxy_create_with_host;
    t->helper_path = strdup(config->helper_path);
    t->plugin_path = strdup(config->plugin_path);
    t->filter_id = strdup(real->id);
    /* The stages the helper runs: the filter alone, or its isolation group. */
    rfx_isolation_member alone = { config->plugin_path, real };
    const rfx_isolation_member *members = config->member_count > 1 ? config->members : &alone;
    t->member_count = config->member_count > 1 ? config->member_count : 1;
    if (t->member_count > RFX_ISO_GROUP_MAX || (t->member_count > 1 && real->media_kind != RAWFX_MEDIA_VIDEO)) {
        free(t->helper_path);
        free(t->plugin_path);
        free(t->filter_id);
        free(t);
        return NULL;
    }
    for (uint32_t k = 0; k < t->member_count; k++) {
        iso_member_type *m = &t->members[k];
        m->plugin_path = strdup(members[k].plugin_path);
        m->filter_id = strdup(members[k].real->id);
        m->processing = members[k].real->processing;
        m->param_count = members[k].real->param_count;
        m->param_offset = t->total_params;
        t->total_params += m->param_count;
    }
    t->allow_untrusted = config->allow_untrusted;
    t->seccomp_strict = config->seccomp_strict;
    t->pipeline = config->pipeline && real->media_kind == RAWFX_MEDIA_AUDIO;
    t->deadline_ns = config->deadline_ns;
    t->control_timeout_ns = config->control_timeout_ns > 0 ? config->control_timeout_ns : 10000000000;
    t->backoff_min_ns = config->backoff_min_ns > 0 ? config->backoff_min_ns : 10000000;
    t->backoff_max_ns = config->backoff_max_ns > t->backoff_min_ns ? config->backoff_max_ns : 2000000000;
    return &t->descriptor;
}

static const rawfx_filter *shell_create_alone(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity);

int32_t rfx_isolation_is_proxy(const rawfx_filter_descriptor *descriptor) {
    return descriptor->create == proxy_create || descriptor->create == shell_create_alone;
}

/* ------------------------------------------------------ group shells -- */

/* A stage of an isolation group after the first: the proxy (stage 0) runs it in the helper.
 * Host side it passes frames on untouched (in place, nothing to do), and its parameters,
 * bypass and counters are its stage's in the proxy. */
typedef struct iso_shell {
    rawfx_filter filter;                /* first: the chain holds a pointer to it */
    iso_instance *owner;
    iso_view view;                      /* the extension: the group's counters, this stage's place */
} iso_shell;

static iso_shell *shell_of(const rawfx_filter *filter) { return (iso_shell *)filter->filter_data; }

static const rawfx_filter *shell_create_alone(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity) {
    snprintf(error, capacity, "%s runs inside an isolation group: only its group makes it", descriptor->id);
    return NULL;
}

static void shell_destroy(const rawfx_filter *filter) { free(shell_of(filter)); }

static rawfx_status shell_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    iso_shell *shell = shell_of(filter);
    const iso_member_type *m = &shell->owner->type->members[shell->view.member];
    if (index >= m->param_count) {
        snprintf(shell->owner->error, sizeof shell->owner->error, "parameter index %u, expected below %u", index, m->param_count);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    return proxy_set_param(&shell->owner->filter, m->param_offset + index, value);
}

/* The proxy's output is already this stage's work: the shell passes it on, as negotiated. */
static rawfx_status shell_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    (void)filter;
    result->output = *input;
    result->latency = 0;
    return RAWFX_OK;
}

static rawfx_status shell_process_video(const rawfx_filter *filter, const rawfx_video_frame *in, rawfx_video_frame *out) {
    (void)filter; (void)in; (void)out;
    return RAWFX_OK;
}

static void shell_reset(const rawfx_filter *filter) { (void)filter; /* the proxy resets every stage */ }

static const char *shell_get_error(const rawfx_filter *filter) { return shell_of(filter)->owner->error; }

static const void *shell_get_extension(const rawfx_filter *filter, const char *id) {
    if (strcmp(id, RFX_ISOLATION_EXTENSION) == 0) return &shell_of(filter)->view;
    return NULL;
}

rawfx_filter_descriptor *rfx_isolation_shell_descriptor_create(const rawfx_filter_descriptor *real) {
    rawfx_filter_descriptor *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    *d = *real;
    d->struct_size = sizeof *d;
    d->processing = RAWFX_PROCESS_IN_PLACE;
    d->create = shell_create_alone;
    d->create_with_host = NULL;
    return d;
}

const rawfx_filter *rfx_isolation_shell_create(const rawfx_filter_descriptor *descriptor, const rawfx_filter *owner,
                                               uint32_t member, char *error, size_t capacity) {
    if (owner->descriptor->create != proxy_create || member == 0 || member >= instance_of(owner)->type->member_count) {
        snprintf(error, capacity, "%s: not a stage of this isolation group", descriptor->id);
        return NULL;
    }
    iso_shell *shell = calloc(1, sizeof *shell);
    if (!shell) return NULL;
    shell->owner = instance_of(owner);
    shell->view.inst = shell->owner;
    shell->view.member = member;
    shell->filter.struct_size = sizeof shell->filter;
    shell->filter.descriptor = descriptor;
    shell->filter.filter_data = shell;
    shell->filter.destroy = shell_destroy;
    shell->filter.set_param = shell_set_param;
    shell->filter.configure = shell_configure;
    shell->filter.process_video = shell_process_video;
    shell->filter.reset = shell_reset;
    shell->filter.get_error = shell_get_error;
    shell->filter.get_extension = shell_get_extension;
    return &shell->filter;
}

/* The view of a proxy (stage 0) or a shell, or NULL. */
static const iso_view *view_of(const rawfx_filter *filter) {
    if (filter->descriptor->create == proxy_create) return &instance_of(filter)->view;
    if (filter->descriptor->create == shell_create_alone) return &shell_of(filter)->view;
    return NULL;
}

int32_t rfx_isolation_group_position(const rawfx_filter *filter, uint32_t *member, uint32_t *count) {
    const iso_view *view = view_of(filter);
    if (!view) return 0;
    *member = view->member;
    *count = view->inst->type->member_count;
    return 1;
}

int32_t rfx_isolation_member_negotiation(const rawfx_filter *filter, rawfx_format *input, rawfx_negotiation *negotiation) {
    const iso_view *view = view_of(filter);
    if (!view || !view->inst->configured) return 0;
    *input = view->inst->member_input[view->member];
    *negotiation = view->inst->member_negotiation[view->member];
    return 1;
}

int32_t rfx_isolation_failed_stage(const rawfx_filter *filter) {
    const iso_view *view = view_of(filter);
    return view ? view->inst->failed_member : -1;
}

void rfx_isolation_set_bypass(const rawfx_filter *filter, int32_t bypassed) {
    const iso_view *view = view_of(filter);
    if (!view) return;
    uint32_t bit = 1u << view->member;
    if (bypassed) atomic_fetch_or(&view->inst->bypass_mask, bit);
    else atomic_fetch_and(&view->inst->bypass_mask, ~bit);
}

void rfx_isolation_descriptor_destroy(rawfx_filter_descriptor *descriptor) {
    iso_type *t = (iso_type *)descriptor;
    free(t->helper_path);
    free(t->plugin_path);
    free(t->filter_id);
    for (uint32_t k = 0; k < t->member_count; k++) {
        free(t->members[k].plugin_path);
        free(t->members[k].filter_id);
    }
    free(t);
}

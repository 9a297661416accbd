/*
 * helper.c — the helper's end of the channel (rawfx_isolate_helper.h): it waits for the
 * host's commands, learning their cadence so that it polls when one is due instead of paying
 * a wake-up, replies, forwards its log lines into the control block, and restricts itself
 * before any plugin code runs. Only rawfx-isolate links it; one helper process serves one
 * instance, on one thread.
 */
#define _GNU_SOURCE
#include "rawfx_isolate_helper.h"
#include "rawfx_runtime.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long the helper polls for the request after a wake-up that brought none: the host
 * wakes it early, before it copies a frame in (the FUTEX_WAKE in proxy_process_video), so
 * that the helper's wake-up (slow on an idle VM) overlaps the copy instead of following
 * it. */
#define EARLY_WAKE_POLL_NS 1000000

/* Frames and blocks come at a cadence (a 10 ms audio block, a video frame every 33 ms), and
 * on an idle VM waking a sleeping thread (the vCPU is halted; a futex wake-up and a timer
 * alike) can cost more than an audio block's whole budget. So the helper
 * learns the interval between process requests (the host stamps each one) and, after a
 * reply, sleeps until shortly before the next is due, then polls for it: the request is
 * seen within a microsecond, and the host skips its FUTEX_WAKE. The window is a margin
 * either side of the prediction, sized from how far recent requests missed it; the sleep
 * ends earlier still by how late the helper's own timed wake-ups have been. A request
 * further than PREDICT_OUTLIER_NS from its prediction (a late or skipped frame) does not
 * move the cadence; two in a row start it over. Polling costs the margin and the wake-up
 * allowance in CPU per request (docs/isolation.md has the figures); on a machine whose
 * threads wake fast, much less. */
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
    for (uint32_t round = 0; rfx_iso_load_acquire(&control->request_seq) == request; round++) {
        /* Not on the CPU the host's processing thread is on (both woke on one vCPU): the
         * poll would take the time the host needs for the frame; it will wake us. */
        if ((round & 63) == 63) {
            if (rfx_iso_now_ns() >= until || sched_getcpu() == __atomic_load_n(&control->host_cpu, __ATOMIC_RELAXED)) break;
            sched_yield(); /* a runnable thread here (the host's pool copying the frame in) goes first */
        }
        rfx_iso_cpu_relax();
    }
    __atomic_store_n(&control->helper_polling, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return rfx_iso_load_acquire(&control->request_seq) != request;
}

uint32_t rfx_iso_helper_wait(rfx_iso_control *control) {
    for (;;) {
        uint32_t request = rfx_iso_load_acquire(&control->request_seq);
        if (request != __atomic_load_n(&control->reply_seq, __ATOMIC_RELAXED)) {
            uint32_t command = control->command;
            if (command == RFX_ISO_PROCESS_VIDEO || command == RFX_ISO_PROCESS_AUDIO) cadence_observe(control->posted_ns);
            return command;
        }
        /* A pipelined stage's answer is wanted a whole block after its request, so the
         * helper sleeps until woken. Polling would spare the host's FUTEX_WAKE on the
         * calling thread, but cost a large share of a core per stream in helper CPU. */
        if (__atomic_load_n(&control->helper_may_sleep, __ATOMIC_RELAXED)) {
            rfx_iso_futex_wait(&control->request_seq, request, -1);
            continue;
        }
        int64_t from, until, now = rfx_iso_now_ns();
        if (cadence_window(&from, &until) && now < until) {
            int64_t wake_at = from - cadence.oversleep - 2 * cadence.oversleep_dev;
            if (wake_at > now) {
                rfx_iso_futex_wait(&control->request_seq, request, wake_at - now);
                int64_t woke = rfx_iso_now_ns();
                if (rfx_iso_load_acquire(&control->request_seq) == request) oversleep_observe(woke - wake_at);
            }
            if (poll_request(control, request, until)) continue;
        }
        rfx_iso_futex_wait(&control->request_seq, request, -1);
        if (rfx_iso_load_acquire(&control->request_seq) != request) continue;
        poll_request(control, request, rfx_iso_now_ns() + EARLY_WAKE_POLL_NS);
    }
}

void rfx_iso_helper_reply(rfx_iso_control *control, int32_t status) {
    control->status = status;
    __atomic_store_n(&control->helper_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    rfx_iso_store_release(&control->reply_seq, __atomic_load_n(&control->request_seq, __ATOMIC_RELAXED));
    rfx_iso_futex_wake(&control->reply_seq);
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
        int32_t difference = (int32_t)(rfx_iso_load_acquire(&slot->sequence) - position);
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
    rfx_iso_store_release(&slot->sequence, position + 1);
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

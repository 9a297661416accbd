/*
 * iso_channel.c — the host's end of the channel to a helper (the layout both ends share is
 * rawfx_iso_channel.h): the shared memory, reserved once and grown inside, the frames' layout
 * in it, and the protocol's round trip: post a command (a new sequence number, a futex wake
 * unless the helper polls), wait for its reply (polling, then the futex, to the deadline).
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------ the memory -- */

int iso_channel_open(iso_channel *chan) {
    chan->memfd = memfd_create("rawfx-isolate", MFD_CLOEXEC);
    if (chan->memfd == 3) { /* dup2(3, 3) in the child would keep CLOEXEC */
        int moved = fcntl(chan->memfd, F_DUPFD_CLOEXEC, 10);
        close(chan->memfd);
        chan->memfd = moved;
    }
    size_t header = iso_round_page(sizeof(rfx_iso_control));
    if (chan->memfd < 0 || ftruncate(chan->memfd, (off_t)header) != 0
        || (chan->map = mmap(NULL, ISO_MAP_RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                             chan->memfd, 0)) == MAP_FAILED) {
        if (chan->memfd >= 0) {
            int saved = errno;
            close(chan->memfd);
            errno = saved;
        }
        return -1;
    }
    chan->map_size = header;
    chan->control = (rfx_iso_control *)chan->map;
    return 0;
}

void iso_channel_close(iso_channel *chan) {
    munmap(chan->map, ISO_MAP_RESERVE);
    close(chan->memfd);
}

void iso_channel_renew(iso_channel *chan, int helper_may_sleep) {
    chan->seq = 0;
    atomic_fetch_add(&chan->generation, 1); /* a request of the last helper is never answered */
    chan->control->magic = RFX_ISO_MAGIC;
    rfx_iso_store_release(&chan->control->request_seq, 0);
    rfx_iso_store_release(&chan->control->reply_seq, 0);
    /* A helper killed while it polled left the flag set: the new one must be woken. */
    rfx_iso_store_release(&chan->control->helper_polling, 0);
    __atomic_store_n(&chan->control->helper_cpu, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&chan->control->host_cpu, -1, __ATOMIC_RELAXED);
    chan->control->helper_may_sleep = helper_may_sleep ? 1 : 0;
}

/* ------------------------------------------------------ memory layout -- */

/* Rows and planes in shared memory start on 64-byte boundaries, as in the engine's own
 * buffers (VideoBuffer): a transpose writes 16- and 32-byte pieces down a column, and with
 * rows of a 1080-wide frame at 1080-byte strides every other piece straddled two cache
 * lines (a quarter turn in a helper took more than twice its time in process). */
#define ISO_ROW_ALIGN 64u

static size_t align_row(size_t n) { return (n + ISO_ROW_ALIGN - 1) & ~(size_t)(ISO_ROW_ALIGN - 1); }

size_t iso_plane_bytes(uint32_t w, uint32_t h) {
    return align_row(align_row(w) * h) + 2 * align_row(align_row((w + 1) / 2) * ((h + 1) / 2));
}

void iso_video_layout(rawfx_video_frame *f, const rawfx_video_format *format, size_t offset) {
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

/* [control] Grows the memfd to `size` inside the reserved mapping (the helper maps again on MAP). */
int iso_ensure_size(iso_instance *inst, size_t size) {
    if (size <= inst->chan.map_size) return 0;
    if (size > ISO_MAP_RESERVE) {
        errno = EFBIG;
        return -1;
    }
    if (ftruncate(inst->chan.memfd, (off_t)size) != 0) return -1;
    inst->chan.map_size = size;
    return 0;
}

/* ------------------------------------------------------------- protocol -- */

uint32_t iso_post(iso_instance *inst, uint32_t command) {
    inst->chan.control->command = command;
    inst->chan.seq += 1;
    if (inst->chan.seq == 0 || inst->chan.seq == RFX_ISO_DEAD) inst->chan.seq = 1;
    inst->chan.control->posted_ns = rfx_iso_now_ns();
    rfx_iso_store_release(&inst->chan.control->request_seq, inst->chan.seq);
    /* Pairs with poll_request's fences: a helper that polls sees the request itself. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&inst->chan.control->helper_polling, __ATOMIC_RELAXED)) rfx_iso_futex_wake(&inst->chan.control->request_seq);
    return inst->chan.seq;
}

/* True on the supervisor thread: nobody else would notice its helper's death, so it
 * looks for itself while it waits. */
static __thread int on_supervisor;

/* How long the processing thread polls for a reply before it sleeps on the futex. On a
 * VM whose other vCPU is idle, a futex wake-up is slow (the vCPU is halted and must be woken
 * through the hypervisor); a reply that arrives while the waiter still polls costs nothing
 * of that. The processing thread would be blocked anyway: polling costs only the
 * core it already holds. Not on the supervisor thread, which waits for restarts. */
#define REPLY_POLL_NS 250000

void iso_channel_on_supervisor(void) { on_supervisor = 1; }

/* Waits for the reply to `seq`, at most `timeout_ns`. A reply_seq that is neither
 * the answer nor DEAD is garbage: it runs into the deadline. */
int iso_wait_reply(iso_instance *inst, uint32_t seq, int64_t timeout_ns) {
    int64_t start = rfx_iso_now_ns(), end = start + timeout_ns;
    /* Not when the helper last ran on this CPU: it is likely queued behind this thread
     * (both woke on one vCPU), and polling would keep it from running. Sleeping hands it
     * the CPU at once. */
    if (!on_supervisor && sched_getcpu() != __atomic_load_n(&inst->chan.control->helper_cpu, __ATOMIC_RELAXED)) {
        int64_t poll_end = start + (timeout_ns < REPLY_POLL_NS ? timeout_ns : REPLY_POLL_NS);
        for (uint32_t round = 0;; round++) {
            uint32_t reply = rfx_iso_load_acquire(&inst->chan.control->reply_seq);
            if (reply == seq) return REPLY_OK;
            if (reply == RFX_ISO_DEAD) return REPLY_DEAD;
            if ((round & 63) == 63 && rfx_iso_now_ns() >= poll_end) break;
            rfx_iso_cpu_relax();
        }
    }
    for (;;) {
        uint32_t reply = rfx_iso_load_acquire(&inst->chan.control->reply_seq);
        if (reply == seq) return REPLY_OK;
        if (reply == RFX_ISO_DEAD) return REPLY_DEAD;
        int64_t left = end - rfx_iso_now_ns();
        if (left <= 0) return REPLY_TIMEOUT;
        if (on_supervisor) {
            siginfo_t info;
            memset(&info, 0, sizeof info);
            if (waitid(P_PID, (id_t)atomic_load(&inst->sup.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
                inst->sup.exit_status = iso_wait_status_of(&info);
                return REPLY_DEAD;
            }
            if (left > 20000000) left = 20000000;
        }
        rfx_iso_futex_wait(&inst->chan.control->reply_seq, reply, left);
    }
}

/* A command round trip; on failure the helper is taken down with `what` in the log. */
int iso_call(iso_instance *inst, uint32_t command, int64_t timeout_ns, const char *what) {
    uint32_t seq = iso_post(inst, command);
    int result = iso_wait_reply(inst, seq, timeout_ns);
    if (result != REPLY_OK) iso_fail_wait(inst, result, what, timeout_ns);
    else iso_drain_log(inst);
    return result;
}

/* An error the filter returned: its message, and the group's stage that returned it. */
void iso_copy_error(iso_instance *inst) {
    memcpy(inst->error, inst->chan.control->error, RFX_ISO_ERROR_MAX);
    inst->error[RFX_ISO_ERROR_MAX - 1] = 0;
    inst->group.failed_member = iso_running_member(inst);
}

/* [process or control] The group's stage the helper was running when it failed (it says so
 * before each call: only trusted to name a stage in a log line), or -1. */
int iso_running_member(iso_instance *inst) {
    uint32_t member = __atomic_load_n(&inst->chan.control->member, __ATOMIC_RELAXED);
    return member < inst->type->member_count ? (int)member : -1;
}

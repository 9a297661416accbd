/*
 * Filters that fail on purpose, for the isolation tests (docs/isolation.md):
 *   faulty_video  in place: adds `delta` to every luma sample; on frame `at` (counted by
 *                 this instance, from 1) it does `fault`: segv (a null write), hang (an
 *                 endless loop), exit (exit(3) in process). fault=configure crashes in
 *                 configure when the file `marker` does not exist yet (creating it first),
 *                 so the first helper dies there and the restarted one works.
 *   faulty_oop    out of place: the input plus `delta` into the output; on frame `at` it
 *                 reports a width two pixels wider than negotiated.
 *   faulty_audio  in place: adds `delta` to every sample, delayed by `latency` frames (mono
 *                 ring; the negotiation says so); on block `at` it does `fault` (segv, hang,
 *                 exit).
 *   fault=socket opens a TCP socket in process (and closes it: harmless unless a seccomp
 *   filter forbids it); fault=exec runs /bin/true in place of the process. fault=killparent
 *   sends SIGKILL to its parent (the host, when isolated), fault=stopgroup SIGSTOP to the
 *   parent's process group and the parent, fault=orphan forks a child that waits forever
 *   (its pid written to `marker`), then crashes. fault=editcrash edits the first half of the
 *   frame or block in place, then crashes; fault=scribble fills every byte of the isolated
 *   helper's shared memory (found in /proc/self/maps), control block included, with 0xA5 and
 *   returns success (a hostile plugin; the host must pass the frame in flight through intact).
 *   faulty_video and faulty_audio with say=1 log a warning through the host object just before
 *   the fault: "<fault> on call N" (a plugin's last words, for the isolation log tests).
 * Built with -DFAULTY_CLAIM_LATENCY=N, -DFAULTY_CLAIM_BLOCK=N or -DFAULTY_CLAIM_MAX_OUTPUT=N,
 * configure answers that number with nothing behind it (a hostile or broken plugin).
 */
#define _GNU_SOURCE /* kill, getpgid, fork, setsid, pause under -std=c99 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rawfx.h"

enum { FAULT_NONE, FAULT_SEGV, FAULT_HANG, FAULT_EXIT, FAULT_CONFIGURE, FAULT_SOCKET, FAULT_EXEC,
       FAULT_KILL_PARENT, FAULT_STOP_GROUP, FAULT_ORPHAN, FAULT_EDIT_CRASH, FAULT_SCRIBBLE, FAULT_COUNT };
static const char *const fault_names[] = { "none", "segv", "hang", "exit", "configure", "socket", "exec",
                                           "killparent", "stopgroup", "orphan", "editcrash", "scribble" };

typedef struct faulty {
    rawfx_filter filter;
    const rawfx_host *host;
    int delta, at, fault, count, latency, position, say;
    int16_t *ring;
    char marker[1024];
    char error[128];
} faulty;

static const rawfx_param_descriptor params[] = {
    { sizeof(rawfx_param_descriptor), "delta", "Delta", "Added to every sample.", "",
      RAWFX_PARAM_INT, 0, 10.0, -100.0, 100.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "at", "At", "The frame (from 1) the fault happens on.", "",
      RAWFX_PARAM_INT, 0, 5.0, 1.0, 1000000.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "fault", "Fault", "What goes wrong.", "",
      RAWFX_PARAM_ENUM, 0, 0.0, 0.0, 0.0, NULL, fault_names, FAULT_COUNT },
    { sizeof(rawfx_param_descriptor), "marker", "Marker", "fault=configure: crash while this file does not exist.", "",
      RAWFX_PARAM_STRING, 0, 0.0, 0.0, 0.0, "", NULL, 0 },
    { sizeof(rawfx_param_descriptor), "say", "Say", "1: log a warning just before the fault.", "",
      RAWFX_PARAM_INT, 0, 0.0, 0.0, 1.0, NULL, NULL, 0 },
};

/* faulty_audio's: delta, at, fault, then latency. */
static const rawfx_param_descriptor audio_params[] = {
    { sizeof(rawfx_param_descriptor), "delta", "Delta", "Added to every sample.", "",
      RAWFX_PARAM_INT, 0, 10.0, -100.0, 100.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "at", "At", "The block (from 1) the fault happens on.", "",
      RAWFX_PARAM_INT, 0, 5.0, 1.0, 1000000.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "fault", "Fault", "What goes wrong.", "",
      RAWFX_PARAM_ENUM, 0, 0.0, 0.0, 0.0, NULL, fault_names, FAULT_COUNT },
    { sizeof(rawfx_param_descriptor), "latency", "Latency", "Frames the output is delayed by (mono).", "frames",
      RAWFX_PARAM_INT, RAWFX_PARAM_FLAG_RECONFIGURE, 0.0, 0.0, 4800.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "say", "Say", "1: log a warning just before the fault.", "",
      RAWFX_PARAM_INT, 0, 0.0, 0.0, 1.0, NULL, NULL, 0 },
};

static faulty *of(const rawfx_filter *f) { return (faulty *)f->filter_data; }
static void destroy(const rawfx_filter *f) {
    free(of(f)->ring);
    free(of(f));
}
static rawfx_status set_param(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
    faulty *s = of(f);
    if (i == 0) s->delta = (int)v->int_value;
    else if (i == 1) s->at = (int)v->int_value;
    else if (i == 2) s->fault = (int)v->int_value;
    else if (i == 4) s->say = (int)v->int_value;
    else if (f->descriptor->media_kind == RAWFX_MEDIA_AUDIO) s->latency = (int)v->int_value;
    else snprintf(s->marker, sizeof s->marker, "%s", v->string_value ? v->string_value : "");
    return RAWFX_OK;
}

static void crash(void) {
    volatile int *nothing = NULL;
    *nothing = 1;
}

static rawfx_status configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
    faulty *s = of(f);
    s->count = 0;
    if (in->kind == RAWFX_MEDIA_AUDIO) {
        if (s->latency > 0 && in->audio.channels != 1) {
            snprintf(s->error, sizeof s->error, "latency needs mono, got %u channels", in->audio.channels);
            return RAWFX_ERR_UNSUPPORTED;
        }
        free(s->ring);
        s->ring = s->latency > 0 ? calloc((size_t)s->latency, sizeof(int16_t)) : NULL;
        s->position = 0;
        r->latency = (uint32_t)s->latency;
#ifdef FAULTY_CLAIM_BLOCK
        r->block_frames = (uint32_t)(FAULTY_CLAIM_BLOCK);
#endif
#ifdef FAULTY_CLAIM_MAX_OUTPUT
        r->max_output_frames = (uint32_t)(FAULTY_CLAIM_MAX_OUTPUT);
#endif
    }
#ifdef FAULTY_CLAIM_LATENCY
    r->latency = (uint32_t)(FAULTY_CLAIM_LATENCY);
#endif
    if (s->fault == FAULT_CONFIGURE) {
        FILE *exists = fopen(s->marker, "r");
        if (exists) fclose(exists);
        else {
            FILE *created = fopen(s->marker, "w");
            if (created) fclose(created);
            crash();
        }
    }
    return RAWFX_OK;
}

/* Writes 0xA5 over every writable mapping of the isolated helper's shared memory (the memfd
 * named "rawfx-isolate"): the frames, the control block, the log ring. */
static void scribble_shared_memory(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return;
    char line[512];
    while (fgets(line, sizeof line, maps)) {
        unsigned long begin, end;
        char permissions[8];
        if (strstr(line, "memfd:rawfx-isolate") && sscanf(line, "%lx-%lx %7s", &begin, &end, permissions) == 3
            && permissions[1] == 'w')
            memset((void *)begin, 0xA5, end - begin);
    }
    fclose(maps);
}

/* The fault of this call, if it is the `at`-th: 1 when it is (editcrash and scribble are the
 * process functions' to do). */
static int maybe_fail(faulty *s) {
    if (++s->count != s->at) return 0;
    if (s->say && s->fault != FAULT_NONE && s->host != NULL) {
        char line[64];
        snprintf(line, sizeof line, "%s on call %d", fault_names[s->fault], s->count);
        s->host->log(s->host, RAWFX_LOG_WARNING, line);
    }
    if (s->fault == FAULT_SEGV) crash();
    if (s->fault == FAULT_HANG) for (volatile int spin = 1; spin;) {}
    if (s->fault == FAULT_EXIT) exit(3);
    if (s->fault == FAULT_SOCKET) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0) close(fd);
    }
    if (s->fault == FAULT_EXEC) execl("/bin/true", "true", (char *)NULL);
    /* A hostile plugin: the host itself, the host's whole process group, a child left behind
     * (its pid written to `marker`) before the helper crashes. */
    if (s->fault == FAULT_KILL_PARENT) kill(getppid(), SIGKILL);
    if (s->fault == FAULT_STOP_GROUP) {
        pid_t group = getpgid(getppid());
        if (group > 0) kill(-group, SIGSTOP);
        kill(getppid(), SIGSTOP);
    }
    if (s->fault == FAULT_ORPHAN) {
        pid_t child = fork();
        if (child == 0) {
            setsid();  /* refused by the helper's filter: it stays in the helper's group */
            for (;;) pause();
        }
        FILE *out = fopen(s->marker, "w");
        if (out) {
            fprintf(out, "%d\n", (int)child);
            fclose(out);
        }
        crash();
    }
    return 1;
}

static rawfx_status process_video(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    (void)in;
    faulty *s = of(f);
    int faulting = maybe_fail(s);
    if (faulting && s->fault == FAULT_SCRIBBLE) {
        scribble_shared_memory();
        return RAWFX_OK;
    }
    for (uint32_t y = 0; y < out->height; y++) {
        if (faulting && s->fault == FAULT_EDIT_CRASH && y == out->height / 2) crash();
        for (uint32_t x = 0; x < out->width; x++) out->planes[0][(size_t)y * out->strides[0] + x] += (uint8_t)s->delta;
    }
    return RAWFX_OK;
}

static rawfx_status process_oop(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    faulty *s = of(f);
    for (int p = 0; p < 3; p++) {
        uint32_t w = p ? (in->width + 1) / 2 : in->width, h = p ? (in->height + 1) / 2 : in->height;
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++)
                out->planes[p][(size_t)y * out->strides[p] + x] =
                    (uint8_t)(in->planes[p][(size_t)y * in->strides[p] + x] + (p == 0 ? s->delta : 0));
    }
    if (++s->count == s->at) out->width = in->width + 2;
    return RAWFX_OK;
}

static rawfx_status process_audio(const rawfx_filter *f, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    (void)in;
    faulty *s = of(f);
    int faulting = maybe_fail(s);
    if (faulting && s->fault == FAULT_SCRIBBLE) {
        scribble_shared_memory();
        return RAWFX_OK;
    }
    for (uint32_t i = 0; i < out->frame_count * out->channels; i++) {
        if (faulting && s->fault == FAULT_EDIT_CRASH && i == out->frame_count * out->channels / 2) crash();
        int16_t x = out->samples[i];
        if (s->ring) {
            int16_t delayed = s->ring[s->position];
            s->ring[s->position] = x;
            s->position = (s->position + 1) % s->latency;
            x = delayed;
        }
        out->samples[i] = (int16_t)(x + s->delta);
    }
    return RAWFX_OK;
}

static void reset(const rawfx_filter *f) { of(f)->count = 0; }
static const char *get_error(const rawfx_filter *f) { return of(f)->error; }

static const rawfx_filter *create(const rawfx_filter_descriptor *d, const rawfx_host *host, char *error, size_t capacity) {
    (void)error; (void)capacity;
    faulty *s = calloc(1, sizeof *s);
    s->host = host;
    s->filter.struct_size = sizeof s->filter;
    s->filter.descriptor = d;
    s->filter.filter_data = s;
    s->filter.destroy = destroy;
    s->filter.set_param = set_param;
    s->filter.configure = configure;
    if (d->media_kind == RAWFX_MEDIA_AUDIO) s->filter.process_audio = process_audio;
    else if (d->processing == RAWFX_PROCESS_OUT_OF_PLACE) s->filter.process_video = process_oop;
    else s->filter.process_video = process_video;
    s->filter.reset = reset;
    s->filter.get_error = get_error;
    s->delta = 10;
    s->at = 5;
    return &s->filter;
}

static const rawfx_filter_descriptor filters[] = {
    { sizeof(rawfx_filter_descriptor), "faulty_video", "Faulty video", "1.0", "Fails on purpose.",
      RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, params, 5, NULL, create },
    { sizeof(rawfx_filter_descriptor), "faulty_oop", "Faulty out of place", "1.0", "Reports a wrong size on purpose.",
      RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, params, 2, NULL, create },
    { sizeof(rawfx_filter_descriptor), "faulty_audio", "Faulty audio", "1.0", "Fails on purpose.",
      RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, audio_params, 5, NULL, create },
};

static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
    (void)host; (void)error; (void)capacity;
    return RAWFX_OK;
}
static void deinit(void) {}
static uint32_t filter_count(void) { return 3; }
static const rawfx_filter_descriptor *filter_descriptor(uint32_t i) { return i < 3 ? &filters[i] : NULL; }

static const rawfx_plugin_entry entry = {
    sizeof entry, RAWFX_ABI_VERSION_INIT, "faulty", "1.0", init, deinit, filter_count, filter_descriptor
};
RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }

/*
 * A well-behaved filter, `probe`, that `rawfx validate` must pass, and one compile-time
 * fault per check of the validator, each of which must fail that check and no other
 * (ValidatorTests):
 *
 *   -DBREAK_DESCRIPTOR        descriptors         a parameter id with a capital letter
 *   -DBREAK_CREATE            create-destroy      the 5th create returns NULL with no message
 *   -DBREAK_FORMATS           formats             accepts odd sizes, then process fails on them
 *   -DBREAK_PADDING           guard-bytes         writes a byte into the row padding
 *   -DBREAK_PAST_PLANE        guard-bytes         writes just past the last plane (audio: the block)
 *   -DBREAK_INPUT_WRITE       guard-bytes         out of place, writes into its input
 *   -DBREAK_INPLACE_FORMAT    output-format       in place, changes the frame's rotation (audio: frame_count)
 *   -DBREAK_OUTPUT_SIZE       output-format       out of place, writes and reports half the negotiated size
 *   -DBREAK_LATENCY_CAP       output-format       answers a latency of 0xFFFFFFFF (past rawfx.h's cap)
 *   -DBREAK_DETERMINISM       determinism         output depends on a counter shared by all instances
 *   -DBREAK_RESET             reset               reset forgets to clear the frame counter
 *   -DBREAK_ALLOC_PROCESS     real-time           process mallocs
 *   -DBREAK_ALLOC_SET_PARAM   real-time           set_param of a real-time parameter mallocs
 *   -DBREAK_ALLOC_FIRST       real-time           the first process after configure mallocs a scratch buffer
 *   -DBREAK_LOCK              real-time           process locks a mutex
 *   -DBREAK_SLEEP             real-time           process sleeps (usleep(100))
 *   -DBREAK_FILE_IO           real-time           process opens /dev/null and writes to it
 *   -DBREAK_THREAD_IN_RESET   real-time           reset starts (and joins) a thread
 *   -DBREAK_SLOW              budget              process busy-waits 50 ms on 320x240 frames (30 fps: 33 ms)
 *   -DBREAK_LATENCY           latency             reports a latency (2 frames, audio 480) it does not apply
 *   -DBREAK_SHARED_SCRATCH    concurrency         process goes through a static buffer all instances share
 *   -DBREAK_SET_PARAM_RESETS  reset               set_param of amount restarts the frame counter
 *   -DBREAK_TIMESTAMP         output-format       process adds 1 to the frame's timestamp_us
 *   -DBREAK_ANY_PIXEL_FORMAT  formats             configure accepts any pixel format (reads it as I420)
 *   -DBREAK_DEFAULT_REFUSED   parameter-extremes  set_param refuses chroma=false, its own default
 *
 * Loading faults, each a FAIL of the file's descriptors line naming the step (the isolated run
 * loads the file in a worker first):
 *   -DBREAK_LOAD_CRASH        a library constructor writes through NULL
 *   -DBREAK_INIT_EXIT         init calls exit(0)
 *   -DBREAK_INIT_HANG         init never returns
 *   -DBREAK_INIT_HEAP         init frees a block twice (glibc aborts)
 *   -DBREAK_HUGE_COUNT        filter_count answers 0xFFFFFFFF
 *   -DBREAK_UNTERMINATED      plugin_name has no NUL in its first 6000 bytes
 *   -DBREAK_EXTREMES          parameter-extremes  rows=64 (its maximum) configures, then process fails
 *   -DBREAK_CRASH             parameter-extremes  rows=64 crashes configure (for the isolated run)
 *   -DBREAK_HANG              parameter-extremes  rows=64 never returns from configure (isolated run)
 *   -DBREAK_NO_MESSAGE        error-messages      refuses 641-wide frames without a message
 *   -DBREAK_POOL_IN_CONFIGURE threads             calls the thread pool's run from configure
 *
 * Variants: -DPROBE_OUT_OF_PLACE (copy instead of edit), -DPROBE_AUDIO (an audio filter),
 * -DPROBE_ABI_1_0 (built against the 1.0 header kept in Fixtures/abi-1.0: no host).
 *
 * The filter XORs each luma sample (and chroma with chroma=true; audio: each sample) with
 * `amount` (refusing 13) and with a frame counter modulo 4 that reset and configure clear. Video frames
 * are processed in `rows` slice jobs through the host's thread pool when it offers one, and
 * process checks that the host says it runs on the process thread (and configure, that it
 * does not).
 */
#define _DEFAULT_SOURCE /* usleep, clock_gettime under -std=c99 */
#ifdef PROBE_ABI_1_0
#include "abi-1.0/rawfx.h"
#else
#include "rawfx.h"
#include "rawfx/ext/thread_pool.h"
#endif

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef PROBE_AUDIO
#define PROBE_KIND RAWFX_MEDIA_AUDIO
#else
#define PROBE_KIND RAWFX_MEDIA_VIDEO
#endif
#ifdef PROBE_OUT_OF_PLACE
#define PROBE_PROCESSING RAWFX_PROCESS_OUT_OF_PLACE
#else
#define PROBE_PROCESSING RAWFX_PROCESS_IN_PLACE
#endif
#ifdef BREAK_DESCRIPTOR
#define AMOUNT_ID "Amount"
#else
#define AMOUNT_ID "amount"
#endif

enum { P_AMOUNT, P_CHROMA, P_ROWS, P_COUNT };

static const rawfx_param_descriptor params[P_COUNT] = {
    { sizeof(rawfx_param_descriptor), AMOUNT_ID, "Amount", "XORed into every sample.", "",
      RAWFX_PARAM_INT, 0, 85.0, 0.0, 255.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "chroma", "Chroma", "Also XOR the chroma planes.", "",
      RAWFX_PARAM_BOOL, 0, 0.0, 0.0, 1.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "rows", "Slices", "Slice jobs per frame (thread pool).", "",
      RAWFX_PARAM_INT, RAWFX_PARAM_FLAG_RECONFIGURE, 4.0, 1.0, 64.0, NULL, NULL, 0 },
};

typedef struct probe {
    rawfx_filter filter;
    int amount, chroma, rows;
    unsigned frames;          /* since configure or reset */
    char error[200];
#ifndef PROBE_ABI_1_0
    const rawfx_host *host;
    const rawfx_host_thread_pool *pool;
#endif
    /* The frame being processed, for the slice jobs. */
    const rawfx_video_frame *in;
    rawfx_video_frame *out;
    int key;
    void *scratch;            /* BREAK_ALLOC_FIRST: made by the first process after configure */
} probe;

static int creates;            /* BREAK_CREATE */
#ifdef BREAK_DETERMINISM
static unsigned shared_frames;
#endif
#if defined(BREAK_ALLOC_PROCESS) || defined(BREAK_ALLOC_SET_PARAM)
static void *volatile sink;    /* keeps a malloc from being optimized away */
#endif

static probe *of(const rawfx_filter *f) { return (probe *)f->filter_data; }

static rawfx_status fail(probe *p, rawfx_status status, const char *message) {
#ifdef BREAK_NO_MESSAGE
    (void)message;
    p->error[0] = 0;
#else
    snprintf(p->error, sizeof p->error, "probe: %s", message);
#endif
    return status;
}

static void destroy(const rawfx_filter *f) {
    free(of(f)->scratch);
    free(of(f));
}

#ifdef BREAK_LOCK
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
#ifdef BREAK_THREAD_IN_RESET
static void *idle(void *argument) { return argument; }
#endif

#ifdef BREAK_SHARED_SCRATCH
/* The luma plane goes through one static buffer, with some work between the copy in and
 * the copy out: two instances on two threads mix their pictures. */
static uint8_t shared_scratch[320 * 240];
static void shared_scratch_pass(uint8_t *plane, int32_t stride, uint32_t width, uint32_t height) {
    if ((size_t)width * height > sizeof shared_scratch) return;
    for (uint32_t y = 0; y < height; y++) memcpy(shared_scratch + (size_t)y * width, plane + (ptrdiff_t)y * stride, width);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 10000000L); /* 10 ms: wide enough that two threads overlap */
    for (uint32_t y = 0; y < height; y++) memcpy(plane + (ptrdiff_t)y * stride, shared_scratch + (size_t)y * width, width);
}
#endif

/* The faults every process call shares (the real-time and budget checks). */
static void real_time_faults(probe *p, uint32_t width) {
    (void)p; (void)width;
#ifdef BREAK_ALLOC_FIRST
    if (p->scratch == NULL) p->scratch = malloc(256); /* a lazy buffer: the first call allocates */
#endif
#ifdef BREAK_LOCK
    pthread_mutex_lock(&shared_lock);
    pthread_mutex_unlock(&shared_lock);
#endif
#ifdef BREAK_SLEEP
    usleep(100);
#endif
#ifdef BREAK_FILE_IO
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        (void)!write(fd, "x", 1);
        close(fd);
    }
#endif
#ifdef BREAK_SLOW
    if (width == 320) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do clock_gettime(CLOCK_MONOTONIC, &now);
        while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 50000000L);
    }
#endif
}

static rawfx_status set_param(const rawfx_filter *f, uint32_t index, const rawfx_param_value *value) {
    probe *p = of(f);
    p->error[0] = 0;
    switch (index) {
    case P_AMOUNT:
        /* A refusal with a message, for the test of a --set value the filter refuses. */
        if (value->int_value == 13) return fail(p, RAWFX_ERR_INVALID_ARGUMENT, "amount 13 is unlucky");
#ifdef BREAK_ALLOC_SET_PARAM
        sink = malloc(32);
        free(sink);
#endif
        p->amount = (int)value->int_value;
#ifdef BREAK_SET_PARAM_RESETS
        p->frames = 0;
#endif
        return RAWFX_OK;
    case P_CHROMA:
#ifdef BREAK_DEFAULT_REFUSED
        if (value->int_value == 0) return fail(p, RAWFX_ERR_INVALID_ARGUMENT, "chroma must be on");
#endif
        p->chroma = value->int_value != 0;
        return RAWFX_OK;
    case P_ROWS: p->rows = (int)value->int_value; return RAWFX_OK;
    default: return fail(p, RAWFX_ERR_INVALID_ARGUMENT, "no such parameter");
    }
}

#ifndef PROBE_ABI_1_0
static void nothing(void *context, uint32_t index) { (void)context; (void)index; }
#endif

static rawfx_status configure(const rawfx_filter *f, const rawfx_format *input, rawfx_negotiation *result) {
    probe *p = of(f);
    p->error[0] = 0;
    if (input->kind != PROBE_KIND) return fail(p, RAWFX_ERR_UNSUPPORTED, "wrong media kind");
#ifndef PROBE_AUDIO
#ifndef BREAK_ANY_PIXEL_FORMAT
    if (input->video.pixel_format != RAWFX_PIXEL_I420) return fail(p, RAWFX_ERR_UNSUPPORTED, "I420 only");
#endif
#ifdef BREAK_NO_MESSAGE
    if (input->video.width == 641) return fail(p, RAWFX_ERR_UNSUPPORTED, "641 is not welcome");
#endif
#ifdef BREAK_CRASH
    if (p->rows == 64) *(volatile int *)NULL = 1;
#endif
#ifdef BREAK_HANG
    for (volatile int forever = 1; p->rows == 64 && forever;) {}
#endif
#ifdef BREAK_OUTPUT_SIZE
    (void)result;
#endif
#else
    (void)result;
#endif
#ifndef PROBE_ABI_1_0
    if (p->host && p->host->is_process_thread(p->host))
        return fail(p, RAWFX_ERR_STATE, "the host says configure runs on the process thread");
#ifdef BREAK_POOL_IN_CONFIGURE
    if (p->pool) p->pool->run(p->host, nothing, NULL, 4); /* not [process]: refused, status ignored */
#else
    (void)nothing;
#endif
    if (p->host) p->host->log(p->host, RAWFX_LOG_DEBUG, "configured");
#endif
    p->frames = 0;
    free(p->scratch);
    p->scratch = NULL;
#ifdef BREAK_LATENCY
    result->latency = PROBE_KIND == RAWFX_MEDIA_AUDIO ? 480 : 2;
#endif
#ifdef BREAK_LATENCY_CAP
    result->latency = 0xFFFFFFFFu;
#endif
    return RAWFX_OK;
}

static unsigned next_key(probe *p) {
#ifdef BREAK_DETERMINISM
    (void)p;
    return shared_frames++ & 3;
#else
    return p->frames++ & 3;
#endif
}

#ifndef PROBE_AUDIO
/* Rows [index * h / n, (index + 1) * h / n) of every plane. */
static void slice(void *context, uint32_t index) {
    probe *p = context;
    const rawfx_video_frame *in = p->in;
    rawfx_video_frame *out = p->out;
    for (int plane = 0; plane < 3; plane++) {
        int w = plane ? (int)(in->width + 1) / 2 : (int)in->width;
        int h = plane ? (int)(in->height + 1) / 2 : (int)in->height;
#ifdef BREAK_OUTPUT_SIZE
        w = plane ? (int)(in->width / 2 + 1) / 2 : (int)in->width / 2;
        h = plane ? (int)(in->height / 2 + 1) / 2 : (int)in->height / 2;
#endif
        int first = (int)index * h / p->rows, last = ((int)index + 1) * h / p->rows;
        int key = plane == 0 || p->chroma ? (p->amount ^ p->key) : 0;
        for (int y = first; y < last; y++) {
            const uint8_t *src = in->planes[plane] + (ptrdiff_t)y * in->strides[plane];
            uint8_t *dst = out->planes[plane] + (ptrdiff_t)y * out->strides[plane];
            for (int x = 0; x < w; x++) dst[x] = (uint8_t)(src[x] ^ key);
        }
    }
}

static rawfx_status process_video(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    probe *p = of(f);
    p->error[0] = 0;
#ifndef PROBE_ABI_1_0
    if (p->host && !p->host->is_process_thread(p->host))
        return fail(p, RAWFX_ERR_STATE, "the host says this is not the process thread");
#endif
#ifdef BREAK_FORMATS
    if ((in->width | in->height) & 1) return fail(p, RAWFX_ERR_UNSUPPORTED, "odd sizes are not supported");
#endif
#ifdef BREAK_EXTREMES
    if (p->rows == 64) return fail(p, RAWFX_ERR_INTERNAL, "64 slices are more than this filter handles");
#endif
#ifdef BREAK_ALLOC_PROCESS
    sink = malloc(64);
    free(sink);
#endif
    real_time_faults(p, in->width);
    p->in = in;
    p->out = out;
    p->key = (int)next_key(p);
#ifndef PROBE_ABI_1_0
    if (p->pool) {
        if (p->pool->run(p->host, slice, p, (uint32_t)p->rows) != RAWFX_OK)
            return fail(p, RAWFX_ERR_STATE, "the thread pool refused to run");
    } else
#endif
    {
        for (int i = 0; i < p->rows; i++) slice(p, (uint32_t)i);
    }
#ifdef BREAK_OUTPUT_SIZE
    out->width = in->width / 2;
    out->height = in->height / 2;
#endif
#ifdef BREAK_INPLACE_FORMAT
    out->rotation = 90;
#endif
#ifdef BREAK_TIMESTAMP
    out->timestamp_us += 1;
#endif
#ifdef BREAK_PADDING
    if (out->height > 1) out->planes[0][out->strides[0] + out->width] = 0x42;
#endif
#ifdef BREAK_PAST_PLANE
    out->planes[2][(ptrdiff_t)out->strides[2] * ((out->height + 1) / 2)] = 0x42;
#endif
#ifdef BREAK_INPUT_WRITE
    in->planes[0][0] ^= 1;
#endif
#ifdef BREAK_SHARED_SCRATCH
    shared_scratch_pass(out->planes[0], out->strides[0], out->width, out->height);
#endif
    return RAWFX_OK;
}
#else
static rawfx_status process_audio(const rawfx_filter *f, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    probe *p = of(f);
    p->error[0] = 0;
#ifdef BREAK_ALLOC_PROCESS
    sink = malloc(64);
    free(sink);
#endif
    real_time_faults(p, 0);
    int key = p->amount ^ (int)next_key(p);
    uint32_t n = in->frame_count * in->channels;
    for (uint32_t i = 0; i < n; i++) out->samples[i] = (int16_t)(in->samples[i] ^ key);
#ifdef BREAK_PAST_PLANE
    out->samples[n] = 0x4242;
#endif
#ifdef BREAK_INPLACE_FORMAT
    out->frame_count = in->frame_count / 2;
#endif
#ifdef BREAK_TIMESTAMP
    out->timestamp_us += 1;
#endif
    return RAWFX_OK;
}
#endif

static void reset(const rawfx_filter *f) {
    probe *p = of(f);
#ifndef BREAK_RESET
    p->frames = 0;
#endif
#ifdef BREAK_THREAD_IN_RESET
    pthread_t thread;
    if (pthread_create(&thread, NULL, idle, NULL) == 0) pthread_join(thread, NULL);
#endif
#ifndef PROBE_ABI_1_0
    if (p->host) p->host->request_callback(p->host);
#endif
}

static const char *get_error(const rawfx_filter *f) { return of(f)->error; }

#ifndef PROBE_ABI_1_0
static void on_callback(const rawfx_filter *f) { (void)f; }
#endif

static const rawfx_filter *make(const rawfx_filter_descriptor *d, const void *host, char *error, size_t capacity) {
    if (++creates == 5) {
#ifdef BREAK_CREATE
        (void)error; (void)capacity;
        return NULL;
#endif
    }
    probe *p = calloc(1, sizeof *p);
    if (p == NULL) {
        snprintf(error, capacity, "probe: out of memory");
        return NULL;
    }
    p->filter.struct_size = sizeof p->filter;
    p->filter.descriptor = d;
    p->filter.filter_data = p;
    p->filter.destroy = destroy;
    p->filter.set_param = set_param;
    p->filter.configure = configure;
#ifdef PROBE_AUDIO
    p->filter.process_audio = process_audio;
#else
    p->filter.process_video = process_video;
#endif
    p->filter.reset = reset;
    p->filter.get_error = get_error;
    p->amount = 85;
    p->rows = 4;
#ifndef PROBE_ABI_1_0
    p->filter.on_callback = on_callback;
    p->host = host;
    if (p->host) p->pool = p->host->get_extension(p->host, RAWFX_EXT_THREAD_POOL);
#else
    (void)host;
#endif
    return &p->filter;
}

static const rawfx_filter *create(const rawfx_filter_descriptor *d, char *error, size_t capacity) {
    return make(d, NULL, error, capacity);
}

#ifndef PROBE_ABI_1_0
static const rawfx_filter *create_with_host(const rawfx_filter_descriptor *d, const rawfx_host *host,
                                            char *error, size_t capacity) {
    return make(d, host, error, capacity);
}
#endif

static const rawfx_filter_descriptor descriptor = {
    sizeof(rawfx_filter_descriptor), "probe", "Probe", "1.0.0",
    "XORs samples with a parameter and a frame counter; the validator's test subject.",
    PROBE_KIND, PROBE_PROCESSING, params, P_COUNT, create,
#ifndef PROBE_ABI_1_0
    create_with_host,
#endif
};

#ifdef BREAK_LOAD_CRASH
__attribute__((constructor)) static void crash_on_load(void) { *(volatile int *)NULL = 1; }
#endif
#ifdef BREAK_UNTERMINATED
static char plugin_name[6001]; /* filled with 'A' by init, the last byte stays 0 */
#define PLUGIN_NAME plugin_name
#else
#define PLUGIN_NAME "rawfx-probe"
#endif

static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
    (void)error; (void)capacity;
#ifdef BREAK_INIT_EXIT
    exit(0);
#endif
#ifdef BREAK_INIT_HANG
    for (volatile int forever = 1; forever;) {}
#endif
#ifdef BREAK_INIT_HEAP
    char *volatile twice = malloc(24);
    free(twice);
    free(twice);
#endif
#ifdef BREAK_UNTERMINATED
    memset(plugin_name, 'A', 6000);
#endif
    return host->abi.major == RAWFX_ABI_MAJOR ? RAWFX_OK : RAWFX_ERR_VERSION;
}
static void deinit(void) {}
#ifdef BREAK_HUGE_COUNT
static uint32_t filter_count(void) { return 0xFFFFFFFFu; }
#else
static uint32_t filter_count(void) { return 1; }
#endif
static const rawfx_filter_descriptor *filter_descriptor(uint32_t i) { return i == 0 ? &descriptor : NULL; }

static const rawfx_plugin_entry entry = {
    sizeof entry, RAWFX_ABI_VERSION_INIT, PLUGIN_NAME, "1.0.0", init, deinit, filter_count, filter_descriptor,
};

RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }

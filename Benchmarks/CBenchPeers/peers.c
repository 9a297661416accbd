/* The FFmpeg peer of `bench --peers` (bench_peers.h): libswscale and libavfilter through
 * dlopen, so that the bench never links FFmpeg. */
#define _GNU_SOURCE
#include "bench_peers.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *error, size_t capacity, const char *format, ...) {
    if (!error || capacity == 0) return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error, capacity, format, arguments);
    va_end(arguments);
}

/* BENCH_PEERS_NO_FFMPEG builds the fallback even where the headers exist (to try it). */
#if !defined(BENCH_PEERS_NO_FFMPEG) && __has_include(<libswscale/swscale.h>) && __has_include(<libavfilter/buffersrc.h>) \
    && __has_include(<libavutil/imgutils.h>)
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>

/* The sonames of FFmpeg 5.1 (Debian 12), whose headers this is compiled against: another
 * major version has other structure layouts, so it is not tried. */
static const char *const library_names[3] = {"libavutil.so.57", "libswscale.so.6", "libavfilter.so.8"};

/* Every FFmpeg function the peer calls, resolved once by bench_peers_ffmpeg_load. */
static struct {
    __typeof__(&avutil_version) avutil_version;
    __typeof__(&av_frame_alloc) av_frame_alloc;
    __typeof__(&av_frame_free) av_frame_free;
    __typeof__(&av_frame_unref) av_frame_unref;
    __typeof__(&av_buffer_create) av_buffer_create;
    __typeof__(&av_strerror) av_strerror;
    __typeof__(&av_image_copy) av_image_copy;
    __typeof__(&av_strdup) av_strdup;
    __typeof__(&av_log_set_level) av_log_set_level;
    __typeof__(&swscale_version) swscale_version;
    __typeof__(&sws_getContext) sws_getContext;
    __typeof__(&sws_scale) sws_scale;
    __typeof__(&sws_freeContext) sws_freeContext;
    __typeof__(&avfilter_version) avfilter_version;
    __typeof__(&avfilter_get_by_name) avfilter_get_by_name;
    __typeof__(&avfilter_graph_alloc) avfilter_graph_alloc;
    __typeof__(&avfilter_graph_create_filter) avfilter_graph_create_filter;
    __typeof__(&avfilter_graph_parse_ptr) avfilter_graph_parse_ptr;
    __typeof__(&avfilter_graph_config) avfilter_graph_config;
    __typeof__(&avfilter_graph_free) avfilter_graph_free;
    __typeof__(&avfilter_inout_alloc) avfilter_inout_alloc;
    __typeof__(&avfilter_inout_free) avfilter_inout_free;
    __typeof__(&av_buffersrc_add_frame_flags) av_buffersrc_add_frame_flags;
    __typeof__(&av_buffersink_get_frame) av_buffersink_get_frame;
    __typeof__(&av_buffersink_get_w) av_buffersink_get_w;
    __typeof__(&av_buffersink_get_h) av_buffersink_get_h;
} ff;

static int load_result = 1; /* 1: not tried yet */
static char load_error[512];
static char versions[160];

static int resolve(void *library, const char *library_name, const char *symbol, void **slot, char *error, size_t capacity) {
    *slot = dlsym(library, symbol);
    if (*slot) return 0;
    say(error, capacity, "FFmpeg: %s has no symbol %s (FFmpeg 5.1 expected)", library_name, symbol);
    return -1;
}

static int load_once(char *error, size_t capacity) {
    void *libraries[3];
    for (int i = 0; i < 3; i++) {
        libraries[i] = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!libraries[i]) {
            say(error, capacity, "FFmpeg unavailable: cannot load %s (%s); install libswscale6, libavfilter8 and libavutil57 "
                "(FFmpeg 5.1, Debian 12)", library_names[i], dlerror());
            return -1;
        }
    }
#define RESOLVE(lib, name) \
    if (resolve(libraries[lib], library_names[lib], #name, (void **)&ff.name, error, capacity)) return -1
    RESOLVE(0, avutil_version);
    RESOLVE(0, av_frame_alloc);
    RESOLVE(0, av_frame_free);
    RESOLVE(0, av_frame_unref);
    RESOLVE(0, av_buffer_create);
    RESOLVE(0, av_strerror);
    RESOLVE(0, av_image_copy);
    RESOLVE(0, av_strdup);
    RESOLVE(0, av_log_set_level);
    RESOLVE(1, swscale_version);
    RESOLVE(1, sws_getContext);
    RESOLVE(1, sws_scale);
    RESOLVE(1, sws_freeContext);
    RESOLVE(2, avfilter_version);
    RESOLVE(2, avfilter_get_by_name);
    RESOLVE(2, avfilter_graph_alloc);
    RESOLVE(2, avfilter_graph_create_filter);
    RESOLVE(2, avfilter_graph_parse_ptr);
    RESOLVE(2, avfilter_graph_config);
    RESOLVE(2, avfilter_graph_free);
    RESOLVE(2, avfilter_inout_alloc);
    RESOLVE(2, avfilter_inout_free);
    RESOLVE(2, av_buffersrc_add_frame_flags);
    RESOLVE(2, av_buffersink_get_frame);
    RESOLVE(2, av_buffersink_get_w);
    RESOLVE(2, av_buffersink_get_h);
#undef RESOLVE
    /* The headers' major versions must be the loaded ones: the structures are used directly. */
    unsigned loaded[3] = {ff.avutil_version(), ff.swscale_version(), ff.avfilter_version()};
    unsigned built[3] = {LIBAVUTIL_VERSION_INT, LIBSWSCALE_VERSION_INT, LIBAVFILTER_VERSION_INT};
    for (int i = 0; i < 3; i++) {
        if (AV_VERSION_MAJOR(loaded[i]) != AV_VERSION_MAJOR(built[i])) {
            say(error, capacity, "FFmpeg: %s reports version %u.%u.%u, the bench was built with headers of %u.%u.%u",
                library_names[i], AV_VERSION_MAJOR(loaded[i]), AV_VERSION_MINOR(loaded[i]), AV_VERSION_MICRO(loaded[i]),
                AV_VERSION_MAJOR(built[i]), AV_VERSION_MINOR(built[i]), AV_VERSION_MICRO(built[i]));
            return -1;
        }
    }
    snprintf(versions, sizeof versions, "libswscale %u.%u.%u, libavfilter %u.%u.%u, libavutil %u.%u.%u",
             AV_VERSION_MAJOR(loaded[1]), AV_VERSION_MINOR(loaded[1]), AV_VERSION_MICRO(loaded[1]),
             AV_VERSION_MAJOR(loaded[2]), AV_VERSION_MINOR(loaded[2]), AV_VERSION_MICRO(loaded[2]),
             AV_VERSION_MAJOR(loaded[0]), AV_VERSION_MINOR(loaded[0]), AV_VERSION_MICRO(loaded[0]));
    /* Graph set-up logs at info level; errors are returned, so keep stderr quiet. */
    ff.av_log_set_level(AV_LOG_QUIET);
    return 0;
}

int bench_peers_ffmpeg_load(char *error, size_t capacity) {
    if (load_result == 1) load_result = load_once(load_error, sizeof load_error);
    if (load_result != 0) say(error, capacity, "%s", load_error);
    return load_result;
}

const char *bench_peers_ffmpeg_versions(void) { return versions; }

static int loaded(char *error, size_t capacity) {
    if (load_result == 0) return 1;
    say(error, capacity, "FFmpeg: bench_peers_ffmpeg_load has not succeeded");
    return 0;
}

/* av_strerror's text for a failed call, after what was being done. */
static void say_av(char *error, size_t capacity, const char *doing, int code) {
    char text[128] = "";
    if (ff.av_strerror(code, text, sizeof text) < 0) snprintf(text, sizeof text, "error %d", code);
    say(error, capacity, "FFmpeg: %s: %s", doing, text);
}

/* ------------------------------------------------------------------ swscale -- */

struct bench_peers_scaler {
    struct SwsContext *context;
    int source_height;
};

bench_peers_scaler *bench_peers_scaler_create(int source_width, int source_height, int output_width, int output_height,
                                              enum bench_peers_sws_algorithm algorithm, char *error, size_t capacity) {
    if (!loaded(error, capacity)) return NULL;
    int flags;
    switch (algorithm) {
    case BENCH_PEERS_SWS_FAST_BILINEAR: flags = SWS_FAST_BILINEAR; break;
    case BENCH_PEERS_SWS_BILINEAR: flags = SWS_BILINEAR; break;
    case BENCH_PEERS_SWS_AREA: flags = SWS_AREA; break;
    default:
        say(error, capacity, "FFmpeg: unknown scaling algorithm %d (expected fast_bilinear, bilinear or area)", (int)algorithm);
        return NULL;
    }
    /* sws_getContext makes a context without slice threads (its "threads" option is 1). */
    struct SwsContext *context = ff.sws_getContext(source_width, source_height, AV_PIX_FMT_YUV420P, output_width, output_height,
                                                   AV_PIX_FMT_YUV420P, flags, NULL, NULL, NULL);
    if (!context) {
        say(error, capacity, "FFmpeg: sws_getContext refused yuv420p %dx%d -> %dx%d", source_width, source_height,
            output_width, output_height);
        return NULL;
    }
    bench_peers_scaler *scaler = calloc(1, sizeof *scaler);
    if (!scaler) {
        ff.sws_freeContext(context);
        say(error, capacity, "out of memory");
        return NULL;
    }
    scaler->context = context;
    scaler->source_height = source_height;
    return scaler;
}

int bench_peers_scaler_run(bench_peers_scaler *scaler, const uint8_t *const source[3], const int source_strides[3],
                           uint8_t *const output[3], const int output_strides[3]) {
    const uint8_t *const in[4] = {source[0], source[1], source[2], NULL};
    const int in_strides[4] = {source_strides[0], source_strides[1], source_strides[2], 0};
    uint8_t *const out[4] = {output[0], output[1], output[2], NULL};
    const int out_strides[4] = {output_strides[0], output_strides[1], output_strides[2], 0};
    return ff.sws_scale(scaler->context, in, in_strides, 0, scaler->source_height, out, out_strides);
}

void bench_peers_scaler_destroy(bench_peers_scaler *scaler) {
    if (!scaler) return;
    ff.sws_freeContext(scaler->context);
    free(scaler);
}

/* --------------------------------------------------------------- libavfilter -- */

struct bench_peers_graph {
    AVFilterGraph *graph;
    AVFilterContext *source;
    AVFilterContext *sink;
    AVFrame *input;
    AVFrame *output;
    int width, height;
    int64_t pts;
    /* multi-input graphs: the sources [in0] … and their sizes (NULL for one input) */
    AVFilterContext **sources;
    int *sizes; /* width, height per source */
    int source_count;
};

/* The frame's planes belong to the bench. */
static void keep_planes(void *opaque, uint8_t *data) {
    (void)opaque;
    (void)data;
}

static AVFilterContext *buffer_source(AVFilterGraph *graph, const char *name, int width, int height, enum AVPixelFormat format,
                                      char *error, size_t capacity) {
    char arguments[160];
    snprintf(arguments, sizeof arguments, "video_size=%dx%d:pix_fmt=%d:time_base=1/30:pixel_aspect=1/1", width, height,
             (int)format);
    AVFilterContext *context = NULL;
    int rc = ff.avfilter_graph_create_filter(&context, ff.avfilter_get_by_name("buffer"), name, arguments, NULL, graph);
    if (rc < 0) {
        char doing[64];
        snprintf(doing, sizeof doing, "creating the buffer source [%s]", name);
        say_av(error, capacity, doing, rc);
        return NULL;
    }
    return context;
}

/* Wraps the planes (one buffer over their span) in `frame` without copying or owning them. */
static int wrap_planes(AVFrame *frame, enum AVPixelFormat format, int width, int height, int plane_count,
                       uint8_t *const planes[], const int strides[], int64_t pts) {
    uint8_t *low = planes[0], *high = planes[0];
    for (int p = 0; p < plane_count; p++) {
        int rows = p == 0 || p == 3 ? height : (height + 1) / 2;
        uint8_t *end = planes[p] + (size_t)strides[p] * (size_t)rows;
        if (planes[p] < low) low = planes[p];
        if (end > high) high = end;
        frame->data[p] = planes[p];
        frame->linesize[p] = strides[p];
    }
    frame->buf[0] = ff.av_buffer_create(low, (size_t)(high - low), keep_planes, NULL, 0);
    if (!frame->buf[0]) return AVERROR(ENOMEM);
    frame->format = format;
    frame->width = width;
    frame->height = height;
    frame->pts = pts;
    return 0;
}

/* The end of a create: frees the open ends; on failure (`ok` 0) the graph too. */
static bench_peers_graph *finish_create(bench_peers_graph *g, AVFilterInOut **inputs, AVFilterInOut **outputs, int ok) {
    ff.avfilter_inout_free(inputs);
    ff.avfilter_inout_free(outputs);
    if (ok) return g;
    bench_peers_graph_destroy(g);
    return NULL;
}

/* Links `description` between the open ends and configures the graph; `shape` ends the message. */
static int parse_and_configure(bench_peers_graph *g, const char *description, AVFilterInOut **inputs,
                               AVFilterInOut **outputs, const char *shape, char *error, size_t capacity) {
    char doing[320];
    int rc = ff.avfilter_graph_parse_ptr(g->graph, description, inputs, outputs, NULL);
    if (rc < 0) {
        snprintf(doing, sizeof doing, "parsing the filter graph '%.240s'", description);
        say_av(error, capacity, doing, rc);
        return rc;
    }
    rc = ff.avfilter_graph_config(g->graph, NULL);
    if (rc < 0) {
        snprintf(doing, sizeof doing, "configuring the filter graph '%.200s' %s", description, shape);
        say_av(error, capacity, doing, rc);
    }
    return rc;
}

bench_peers_graph *bench_peers_graph_create(const char *description, int width, int height,
                                            const bench_peers_logo *logo, char *error, size_t capacity) {
    if (!loaded(error, capacity)) return NULL;
    bench_peers_graph *g = calloc(1, sizeof *g);
    if (!g) {
        say(error, capacity, "out of memory");
        return NULL;
    }
    g->width = width;
    g->height = height;
    AVFilterInOut *outputs = NULL, *inputs = NULL;
    AVFilterContext *logo_source = NULL;
    int rc;
    g->graph = ff.avfilter_graph_alloc();
    g->input = ff.av_frame_alloc();
    g->output = ff.av_frame_alloc();
    if (!g->graph || !g->input || !g->output) {
        say(error, capacity, "out of memory");
        goto fail;
    }
    g->graph->nb_threads = 1;
    if (!(g->source = buffer_source(g->graph, "in", width, height, AV_PIX_FMT_YUV420P, error, capacity))) goto fail;
    if (logo && !(logo_source = buffer_source(g->graph, "logo", logo->width, logo->height, AV_PIX_FMT_YUVA420P, error, capacity)))
        goto fail;
    rc = ff.avfilter_graph_create_filter(&g->sink, ff.avfilter_get_by_name("buffersink"), "out", NULL, NULL, g->graph);
    if (rc < 0) {
        say_av(error, capacity, "creating the buffer sink", rc);
        goto fail;
    }
    /* The open ends of `description`: [in] (and [logo]) feed it, its output goes to [out]. */
    outputs = ff.avfilter_inout_alloc();
    inputs = ff.avfilter_inout_alloc();
    if (!outputs || !inputs) {
        say(error, capacity, "out of memory");
        goto fail;
    }
    outputs->name = ff.av_strdup("in");
    outputs->filter_ctx = g->source;
    if (logo) {
        AVFilterInOut *second = ff.avfilter_inout_alloc();
        if (!second) {
            say(error, capacity, "out of memory");
            goto fail;
        }
        second->name = ff.av_strdup("logo");
        second->filter_ctx = logo_source;
        outputs->next = second;
    }
    inputs->name = ff.av_strdup("out");
    inputs->filter_ctx = g->sink;
    char shape[64];
    snprintf(shape, sizeof shape, "for yuv420p %dx%d", width, height);
    if (parse_and_configure(g, description, &inputs, &outputs, shape, error, capacity) < 0) goto fail;
    if (logo) {
        /* The logo once, then end of stream: overlay repeats the last logo frame (eof_action=repeat). */
        AVFrame *frame = ff.av_frame_alloc();
        if (!frame) {
            say(error, capacity, "out of memory");
            goto fail;
        }
        rc = wrap_planes(frame, AV_PIX_FMT_YUVA420P, logo->width, logo->height, 4, (uint8_t *const *)logo->planes,
                         logo->strides, 0);
        if (rc >= 0) rc = ff.av_buffersrc_add_frame_flags(logo_source, frame, AV_BUFFERSRC_FLAG_KEEP_REF);
        ff.av_frame_free(&frame);
        if (rc >= 0) rc = ff.av_buffersrc_add_frame_flags(logo_source, NULL, 0);
        if (rc < 0) {
            say_av(error, capacity, "feeding the logo to [logo]", rc);
            goto fail;
        }
    }
    return finish_create(g, &inputs, &outputs, 1);
fail:
    return finish_create(g, &inputs, &outputs, 0);
}

/* Takes every frame the sink has; with `copy_to`, copies each there. The frames taken, or a
 * negative AVERROR. */
static int drain_sink(bench_peers_graph *g, uint8_t *const copy_to[3], const int copy_strides[3], char *error,
                      size_t capacity) {
    int taken = 0;
    for (;;) {
        int rc = ff.av_buffersink_get_frame(g->sink, g->output);
        if (rc == AVERROR(EAGAIN)) break;
        if (rc < 0) {
            say_av(error, capacity, "av_buffersink_get_frame", rc);
            return rc;
        }
        if (copy_to) {
            uint8_t *to[4] = {copy_to[0], copy_to[1], copy_to[2], NULL};
            int to_strides[4] = {copy_strides[0], copy_strides[1], copy_strides[2], 0};
            ff.av_image_copy(to, to_strides, (const uint8_t **)g->output->data, g->output->linesize, AV_PIX_FMT_YUV420P,
                             g->output->width, g->output->height);
        }
        ff.av_frame_unref(g->output);
        taken++;
    }
    return taken;
}

int bench_peers_graph_run(bench_peers_graph *g, uint8_t *const planes[3], const int strides[3],
                          uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity) {
    int rc = wrap_planes(g->input, AV_PIX_FMT_YUV420P, g->width, g->height, 3, planes, strides, g->pts++);
    if (rc < 0) {
        say_av(error, capacity, "wrapping the frame in an AVBufferRef", rc);
        return rc;
    }
    /* Without AV_BUFFERSRC_FLAG_KEEP_REF the source takes the reference: the frame stays writable. */
    rc = ff.av_buffersrc_add_frame_flags(g->source, g->input, 0);
    if (rc < 0) {
        ff.av_frame_unref(g->input);
        say_av(error, capacity, "av_buffersrc_add_frame_flags", rc);
        return rc;
    }
    return drain_sink(g, copy_to, copy_strides, error, capacity);
}

bench_peers_graph *bench_peers_multi_graph_create(const char *description, int input_count, const int widths[],
                                                  const int heights[], char *error, size_t capacity) {
    if (!loaded(error, capacity)) return NULL;
    if (input_count < 1 || input_count > 64) {
        say(error, capacity, "FFmpeg: %d inputs (expected 1 to 64)", input_count);
        return NULL;
    }
    bench_peers_graph *g = calloc(1, sizeof *g);
    if (!g) {
        say(error, capacity, "out of memory");
        return NULL;
    }
    AVFilterInOut *outputs = NULL, *inputs = NULL;
    int rc;
    g->source_count = input_count;
    g->sources = calloc((size_t)input_count, sizeof *g->sources);
    g->sizes = calloc((size_t)input_count * 2, sizeof *g->sizes);
    g->graph = ff.avfilter_graph_alloc();
    g->input = ff.av_frame_alloc();
    g->output = ff.av_frame_alloc();
    if (!g->sources || !g->sizes || !g->graph || !g->input || !g->output) {
        say(error, capacity, "out of memory");
        goto fail;
    }
    g->graph->nb_threads = 1;
    for (int k = 0; k < input_count; k++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", k);
        g->sizes[2 * k] = widths[k];
        g->sizes[2 * k + 1] = heights[k];
        if (!(g->sources[k] = buffer_source(g->graph, name, widths[k], heights[k], AV_PIX_FMT_YUV420P, error, capacity)))
            goto fail;
    }
    g->source = g->sources[0];
    g->width = widths[0];
    g->height = heights[0];
    rc = ff.avfilter_graph_create_filter(&g->sink, ff.avfilter_get_by_name("buffersink"), "out", NULL, NULL, g->graph);
    if (rc < 0) {
        say_av(error, capacity, "creating the buffer sink", rc);
        goto fail;
    }
    /* The open ends: [in0] … feed the description, its output goes to [out]. */
    for (int k = input_count - 1; k >= 0; k--) {
        AVFilterInOut *end = ff.avfilter_inout_alloc();
        if (!end) {
            say(error, capacity, "out of memory");
            goto fail;
        }
        char name[16];
        snprintf(name, sizeof name, "in%d", k);
        end->name = ff.av_strdup(name);
        end->filter_ctx = g->sources[k];
        end->next = outputs;
        outputs = end;
    }
    inputs = ff.avfilter_inout_alloc();
    if (!inputs) {
        say(error, capacity, "out of memory");
        goto fail;
    }
    inputs->name = ff.av_strdup("out");
    inputs->filter_ctx = g->sink;
    char shape[64];
    snprintf(shape, sizeof shape, "with %d yuv420p inputs", input_count);
    if (parse_and_configure(g, description, &inputs, &outputs, shape, error, capacity) < 0) goto fail;
    return finish_create(g, &inputs, &outputs, 1);
fail:
    return finish_create(g, &inputs, &outputs, 0);
}

int bench_peers_multi_graph_run(bench_peers_graph *g, uint8_t *const planes[], const int strides[],
                                uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity) {
    if (!g->sources) {
        say(error, capacity, "FFmpeg: not a multi-input graph");
        return -1;
    }
    for (int k = 0; k < g->source_count; k++) {
        int rc = wrap_planes(g->input, AV_PIX_FMT_YUV420P, g->sizes[2 * k], g->sizes[2 * k + 1], 3, planes + 3 * k,
                             strides + 3 * k, g->pts);
        if (rc < 0) {
            say_av(error, capacity, "wrapping a frame in an AVBufferRef", rc);
            return rc;
        }
        rc = ff.av_buffersrc_add_frame_flags(g->sources[k], g->input, 0);
        if (rc < 0) {
            ff.av_frame_unref(g->input);
            say_av(error, capacity, "av_buffersrc_add_frame_flags", rc);
            return rc;
        }
    }
    g->pts++;
    return drain_sink(g, copy_to, copy_strides, error, capacity);
}

int bench_peers_graph_output_width(const bench_peers_graph *g) { return ff.av_buffersink_get_w(g->sink); }
int bench_peers_graph_output_height(const bench_peers_graph *g) { return ff.av_buffersink_get_h(g->sink); }

void bench_peers_graph_destroy(bench_peers_graph *g) {
    if (!g) return;
    ff.avfilter_graph_free(&g->graph);
    ff.av_frame_free(&g->input);
    ff.av_frame_free(&g->output);
    free(g->sources);
    free(g->sizes);
    free(g);
}

#else /* built without the FFmpeg -dev headers */

#define NO_HEADERS "FFmpeg unavailable: the bench was built without the FFmpeg headers (install libswscale-dev, " \
                   "libavfilter-dev and libavutil-dev, then rebuild)"

int bench_peers_ffmpeg_load(char *error, size_t capacity) {
    say(error, capacity, NO_HEADERS);
    return -1;
}
const char *bench_peers_ffmpeg_versions(void) { return ""; }
bench_peers_scaler *bench_peers_scaler_create(int source_width, int source_height, int output_width, int output_height,
                                              enum bench_peers_sws_algorithm algorithm, char *error, size_t capacity) {
    (void)source_width, (void)source_height, (void)output_width, (void)output_height, (void)algorithm;
    say(error, capacity, NO_HEADERS);
    return NULL;
}
int bench_peers_scaler_run(bench_peers_scaler *scaler, const uint8_t *const source[3], const int source_strides[3],
                           uint8_t *const output[3], const int output_strides[3]) {
    (void)scaler, (void)source, (void)source_strides, (void)output, (void)output_strides;
    return -1;
}
void bench_peers_scaler_destroy(bench_peers_scaler *scaler) { (void)scaler; }
bench_peers_graph *bench_peers_graph_create(const char *description, int width, int height,
                                            const bench_peers_logo *logo, char *error, size_t capacity) {
    (void)description, (void)width, (void)height, (void)logo;
    say(error, capacity, NO_HEADERS);
    return NULL;
}
int bench_peers_graph_run(bench_peers_graph *graph, uint8_t *const planes[3], const int strides[3],
                          uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity) {
    (void)graph, (void)planes, (void)strides, (void)copy_to, (void)copy_strides;
    say(error, capacity, NO_HEADERS);
    return -1;
}
bench_peers_graph *bench_peers_multi_graph_create(const char *description, int input_count, const int widths[],
                                                  const int heights[], char *error, size_t capacity) {
    (void)description, (void)input_count, (void)widths, (void)heights;
    say(error, capacity, NO_HEADERS);
    return NULL;
}
int bench_peers_multi_graph_run(bench_peers_graph *graph, uint8_t *const planes[], const int strides[],
                                uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity) {
    (void)graph, (void)planes, (void)strides, (void)copy_to, (void)copy_strides;
    say(error, capacity, NO_HEADERS);
    return -1;
}
int bench_peers_graph_output_width(const bench_peers_graph *graph) { (void)graph; return 0; }
int bench_peers_graph_output_height(const bench_peers_graph *graph) { (void)graph; return 0; }
void bench_peers_graph_destroy(bench_peers_graph *graph) { (void)graph; }

#endif

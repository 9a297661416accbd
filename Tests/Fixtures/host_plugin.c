/*
 * A 1.1 plugin that exercises the host object, for the engine's tests.
 *
 * hostprobe (video, in place): each frame, Y[0][0] = mark, Y[0][1] = generation (a
 *   RECONFIGURE parameter), Y[0][2] = is_process_thread(), Y[0][3] = how many slice jobs
 *   saw is_process_thread() == 1, Y[0][4] = 1 when the host passed out == in (rows are split over the host's thread pool: each job adds
 *   1 to every luma sample of its rows from row 1 on). On frame `reconfigure_at` (1-based)
 *   it calls request_reconfigure; on frame `log_at` it logs "frame N".
 * vdelay (video, out of place): outputs the frame it got `frames` calls earlier (the first
 *   frame until then), and reports that latency; a model of a temporal filter.
 */
#include "rawfx.h"
#include "rawfx/ext/thread_pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe {
    rawfx_filter filter;
    const rawfx_host *host;
    const rawfx_host_thread_pool *pool;
    int mark, generation, reconfigure_at, log_at, slices;
    long frame;
    const rawfx_video_frame *current;
    atomic_int jobs_on_process_thread;
    char error[128];
} probe;

enum { P_MARK, P_GENERATION, P_RECONFIGURE_AT, P_LOG_AT, P_SLICES, P_PROBE_COUNT };

static const rawfx_param_descriptor probe_params[P_PROBE_COUNT] = {
    { sizeof(rawfx_param_descriptor), "mark", "Mark", "Written to Y[0][0].", "", RAWFX_PARAM_INT, 0, 0, 0, 255, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "generation", "Generation", "Written to Y[0][1]; needs a new configure.", "",
      RAWFX_PARAM_INT, RAWFX_PARAM_FLAG_RECONFIGURE, 0, 0, 255, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "reconfigure_at", "Reconfigure at", "Frame that calls request_reconfigure (0: never).", "",
      RAWFX_PARAM_INT, 0, 0, 0, 1000000, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "log_at", "Log at", "Frame that logs (0: never).", "",
      RAWFX_PARAM_INT, 0, 0, 0, 1000000, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "slices", "Slices", "Slice jobs per frame.", "",
      RAWFX_PARAM_INT, 0, 4, 1, 64, NULL, NULL, 0 },
};

static probe *of(const rawfx_filter *f) { return (probe *)f->filter_data; }
static void probe_destroy(const rawfx_filter *f) { free(of(f)); }

static rawfx_status probe_set(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
    int value = (int)v->int_value;
    switch (i) {
    case P_MARK: of(f)->mark = value; break;
    case P_GENERATION: of(f)->generation = value; break;
    case P_RECONFIGURE_AT: of(f)->reconfigure_at = value; break;
    case P_LOG_AT: of(f)->log_at = value; break;
    default: of(f)->slices = value; break;
    }
    return RAWFX_OK;
}

static rawfx_status probe_configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
    (void)r;
    if (in->video.width < 4) {
        snprintf(of(f)->error, sizeof of(f)->error, "needs a width of at least 4, got %u", (unsigned)in->video.width);
        return RAWFX_ERR_UNSUPPORTED;
    }
    of(f)->frame = 0;
    return RAWFX_OK;
}

static void probe_slice(void *context, uint32_t index) {
    probe *p = context;
    const rawfx_video_frame *v = p->current;
    uint32_t rows = v->height - 1, per = (rows + (uint32_t)p->slices - 1) / (uint32_t)p->slices;
    if (p->host->is_process_thread(p->host)) atomic_fetch_add(&p->jobs_on_process_thread, 1);
    for (uint32_t y = 1 + index * per; y < 1 + (index + 1) * per && y < v->height; y++)
        for (uint32_t x = 0; x < v->width; x++) v->planes[0][(size_t)y * (size_t)v->strides[0] + x] += 1;
}

static rawfx_status probe_process(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    probe *p = of(f);
    p->frame++;
    p->current = in;
    atomic_store(&p->jobs_on_process_thread, 0);
    if (p->pool) {
        if (p->pool->run(p->host, probe_slice, p, (uint32_t)p->slices) != RAWFX_OK) return RAWFX_ERR_STATE;
    } else {
        for (int i = 0; i < p->slices; i++) probe_slice(p, (uint32_t)i);
    }
    in->planes[0][0] = (uint8_t)p->mark;
    in->planes[0][1] = (uint8_t)p->generation;
    in->planes[0][2] = (uint8_t)p->host->is_process_thread(p->host);
    in->planes[0][3] = (uint8_t)atomic_load(&p->jobs_on_process_thread);
    in->planes[0][4] = (uint8_t)(out == in);
    if (p->frame == p->reconfigure_at) p->host->request_reconfigure(p->host);
    if (p->frame == p->log_at) {
        char line[64];
        snprintf(line, sizeof line, "frame %ld", p->frame);
        p->host->log(p->host, RAWFX_LOG_WARNING, line);
    }
    return RAWFX_OK;
}

static void probe_reset(const rawfx_filter *f) { of(f)->frame = 0; }
static const char *probe_error(const rawfx_filter *f) { return of(f)->error; }

static const rawfx_filter *probe_create(const rawfx_filter_descriptor *d, const rawfx_host *host, char *error, size_t capacity) {
    if (host == NULL) {
        snprintf(error, capacity, "hostprobe needs a 1.1 host (create_with_host)");
        return NULL;
    }
    probe *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->host = host;
    p->slices = 4;
    p->pool = host->get_extension(host, RAWFX_EXT_THREAD_POOL);
    p->filter.struct_size = sizeof(rawfx_filter);
    p->filter.descriptor = d;
    p->filter.filter_data = p;
    p->filter.destroy = probe_destroy;
    p->filter.set_param = probe_set;
    p->filter.configure = probe_configure;
    p->filter.process_video = probe_process;
    p->filter.reset = probe_reset;
    p->filter.get_error = probe_error;
    return &p->filter;
}

/* ------------------------------------------------------------------ vdelay -- */

typedef struct vdelay {
    rawfx_filter filter;
    int frames;
    uint8_t *ring;          /* frames + 1 packed pictures */
    size_t picture;
    uint32_t width, height;
    long written;
    char error[128];
} vdelay;

static const rawfx_param_descriptor delay_params[] = {
    { sizeof(rawfx_param_descriptor), "frames", "Frames", "How many frames of delay.", "frames",
      RAWFX_PARAM_INT, RAWFX_PARAM_FLAG_RECONFIGURE, 1, 1, 8, NULL, NULL, 0 },
};

static vdelay *dof(const rawfx_filter *f) { return (vdelay *)f->filter_data; }
static void delay_destroy(const rawfx_filter *f) { free(dof(f)->ring); free(dof(f)); }
static rawfx_status delay_set(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
    (void)i;
    dof(f)->frames = (int)v->int_value;
    return RAWFX_OK;
}

static rawfx_status delay_configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
    vdelay *d = dof(f);
    d->width = in->video.width;
    d->height = in->video.height;
    d->picture = (size_t)d->width * d->height + 2 * (size_t)((d->width + 1) / 2) * ((d->height + 1) / 2);
    free(d->ring);
    d->ring = calloc((size_t)d->frames + 1, d->picture);
    if (d->ring == NULL) return RAWFX_ERR_OUT_OF_MEMORY;
    d->written = 0;
    r->latency = (uint32_t)d->frames;
    return RAWFX_OK;
}

static void copy_picture(const rawfx_video_frame *from, uint8_t *packed, int to_frame, rawfx_video_frame *to) {
    uint32_t w[3] = { from ? from->width : to->width, 0, 0 }, h[3] = { from ? from->height : to->height, 0, 0 };
    w[1] = w[2] = (w[0] + 1) / 2;
    h[1] = h[2] = (h[0] + 1) / 2;
    size_t offset = 0;
    for (int p = 0; p < 3; p++)
        for (uint32_t y = 0; y < h[p]; y++, offset += w[p]) {
            if (to_frame) memcpy(to->planes[p] + (size_t)y * (size_t)to->strides[p], packed + offset, w[p]);
            else memcpy(packed + offset, from->planes[p] + (size_t)y * (size_t)from->strides[p], w[p]);
        }
}

static rawfx_status delay_process(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    vdelay *d = dof(f);
    size_t slots = (size_t)d->frames + 1;
    copy_picture(in, d->ring + (size_t)(d->written % (long)slots) * d->picture, 0, NULL);
    if (d->written == 0)  /* prime: until a frame is `frames` old, repeat the first */
        for (size_t s = 1; s < slots; s++) memcpy(d->ring + s * d->picture, d->ring, d->picture);
    d->written++;
    long oldest = d->written - 1 - d->frames;
    copy_picture(NULL, d->ring + (size_t)((oldest < 0 ? 0 : oldest) % (long)slots) * d->picture, 1, out);
    return RAWFX_OK;
}

static void delay_reset(const rawfx_filter *f) { dof(f)->written = 0; }
static const char *delay_error(const rawfx_filter *f) { return dof(f)->error; }

static const rawfx_filter *delay_create(const rawfx_filter_descriptor *d, const rawfx_host *host, char *error, size_t capacity) {
    (void)host; (void)error; (void)capacity;
    vdelay *v = calloc(1, sizeof *v);
    if (v == NULL) return NULL;
    v->frames = 1;
    v->filter.struct_size = sizeof(rawfx_filter);
    v->filter.descriptor = d;
    v->filter.filter_data = v;
    v->filter.destroy = delay_destroy;
    v->filter.set_param = delay_set;
    v->filter.configure = delay_configure;
    v->filter.process_video = delay_process;
    v->filter.reset = delay_reset;
    v->filter.get_error = delay_error;
    return &v->filter;
}

/* ------------------------------------------------------------------- entry -- */

static const rawfx_filter_descriptor descriptors[] = {
    { sizeof(rawfx_filter_descriptor), "hostprobe", "Host probe", "1.0.0", "Exercises the 1.1 host object.",
      RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, probe_params, P_PROBE_COUNT, NULL, probe_create },
    { sizeof(rawfx_filter_descriptor), "vdelay", "Video delay", "1.0.0", "Outputs the frame of N calls ago.",
      RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, delay_params, 1, NULL, delay_create },
};

static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
    if (host->abi.major != RAWFX_ABI_MAJOR || host->abi.minor < 1) {
        snprintf(error, capacity, "needs RawFX ABI 1.1, the host has %u.%u", (unsigned)host->abi.major, (unsigned)host->abi.minor);
        return RAWFX_ERR_VERSION;
    }
    return RAWFX_OK;
}
static void deinit(void) {}
static uint32_t count(void) { return 2; }
static const rawfx_filter_descriptor *describe(uint32_t i) { return i < 2 ? &descriptors[i] : NULL; }

static const rawfx_plugin_entry entry = {
    sizeof(rawfx_plugin_entry), RAWFX_ABI_VERSION_INIT, "host-fixture", "1.0.0", init, deinit, count, describe
};

RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }

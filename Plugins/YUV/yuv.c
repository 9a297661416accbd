/*
 * rawfx-yuv: the `scale`, `rotate` and `mirror` video filters over libyuv,
 * and `range` (limited <-> full range conversion, by lookup tables).
 *
 * One plugin file, four filter types, all I420 and out of place (range too:
 * the engine forbids an in-place filter to change the format, and range changes
 * its colour range). The only
 * exported symbol of the .so is the function `rawfx_get_plugin_entry`
 * (Plugins/Entries/YUV, over rawfx_yuv_plugin_entry); everything else is
 * static.
 *
 * Rules this file keeps (see rawfx.h):
 * - configure validates and allocates; process only reads, computes and writes
 *   pixels (no malloc, no locks, no I/O of its own); set_param of the live
 *   parameters (scale's filter and mode, rotate's mirror, mirror's vertical)
 *   only stores numbers and recomputes the geometry (and scale's plans, which
 *   allocate nothing).
 * - Every host struct is read only as far as its struct_size reaches, and a
 *   struct we fill gets our struct_size.
 * - Each instance owns its error message; get_error returns "" when the last
 *   call succeeded. Instance base, entry and checks: rawfx/plugin_helpers.h.
 *
 * `scale` does not call libyuv's I420Scale, which mallocs (and frees) three
 * row buffers per call at most ratios (libyuv 1857): it plans each plane at
 * configure and runs the kernels of scale_kernels.c with row buffers allocated
 * there, one per thread the host's pool may run, cutting the output rows into
 * slices when the pool has more than one thread.
 *
 * rotate and mirror run on the kernels of rotate_kernels.c (transposes and row
 * reversals and row copies, AVX2/SSSE3/C chosen at configure) and libyuv's CopyPlane, split
 * into slices over the host's thread pool (rawfx/ext/thread_pool.h). The other
 * libyuv calls used here do not allocate.
 */
#include "rawfx/plugin_helpers.h"
#include "rawfx/ext/thread_pool.h"
#include "rotate_kernels.h"
#include "scale_kernels.h"

#include <libyuv.h>
#include <unistd.h>

#define YUV_PLUGIN_NAME    "rawfx-yuv"
#define YUV_PLUGIN_VERSION "1.1.0"
#define YUV_MAX_DIMENSION  16384u

/* ------------------------------------------------------------ parameters -- */

static const char *const scale_filter_names[] = { "none", "linear", "bilinear", "box" };
static const char *const scale_mode_names[] = { "stretch", "fit", "fill" };
static const char *const rotate_angle_names[] = { "0", "90", "180", "270", "auto" };
static const char *const range_to_names[] = { "full", "limited" };

enum { SCALE_PARAM_WIDTH, SCALE_PARAM_HEIGHT, SCALE_PARAM_FILTER, SCALE_PARAM_MODE, SCALE_PARAM_COUNT };
enum { ROTATE_PARAM_ANGLE, ROTATE_PARAM_MIRROR, ROTATE_PARAM_COUNT };
enum { ROTATE_ANGLE_0, ROTATE_ANGLE_90, ROTATE_ANGLE_180, ROTATE_ANGLE_270, ROTATE_ANGLE_AUTO };
enum { MIRROR_PARAM_VERTICAL, MIRROR_PARAM_COUNT };
enum { RANGE_PARAM_TO, RANGE_PARAM_COUNT };
enum { RANGE_TO_FULL, RANGE_TO_LIMITED };

static const rawfx_param_descriptor scale_params[SCALE_PARAM_COUNT] = {
    [SCALE_PARAM_WIDTH] = RAWFX_INT_PARAM(
        "width", "Width",
        "Output width in pixels, even. 0 keeps the input width when height is 0 too; "
        "with only height set, the width follows the input aspect ratio, rounded to an "
        "even number.",
        "px", RAWFX_PARAM_FLAG_RECONFIGURE, 0, 0, YUV_MAX_DIMENSION),
    [SCALE_PARAM_HEIGHT] = RAWFX_INT_PARAM(
        "height", "Height",
        "Output height in pixels, even. 0 keeps the input height when width is 0 too; "
        "with only width set, the height follows the input aspect ratio, rounded to an "
        "even number (width=1280 on 1920x1080 gives 1280x720).",
        "px", RAWFX_PARAM_FLAG_RECONFIGURE, 0, 0, YUV_MAX_DIMENSION),
    [SCALE_PARAM_FILTER] = RAWFX_ENUM_PARAM(
        "filter", "Filter",
        "Resampling filter (libyuv FilterMode): none picks the nearest pixel (fastest, "
        "blocky), linear blends horizontally only, bilinear blends both ways (good for "
        "upscaling), box averages every source pixel covered (best for large downscales).",
        "", 0, 2 /* bilinear */, scale_filter_names),
    [SCALE_PARAM_MODE] = RAWFX_ENUM_PARAM(
        "mode", "Mode",
        "How a different aspect ratio is handled: stretch distorts to fill the output, "
        "fit shows the whole picture with black bars (letterbox or pillarbox), fill "
        "crops the centre of the input so it covers the output without bars.",
        "", 0, SCALE_MODE_STRETCH, scale_mode_names),
};

static const rawfx_param_descriptor rotate_params[ROTATE_PARAM_COUNT] = {
    [ROTATE_PARAM_ANGLE] = RAWFX_ENUM_PARAM(
        "angle", "Angle",
        "Clockwise rotation in degrees: 0, 90, 180 or 270 (90 and 270 swap width and "
        "height; the rotation metadata passes through unchanged). auto turns the frame "
        "upright by the rotation its metadata asks for and then sets that metadata to 0.",
        "deg", RAWFX_PARAM_FLAG_RECONFIGURE, ROTATE_ANGLE_90, rotate_angle_names),
    [ROTATE_PARAM_MIRROR] = RAWFX_BOOL_PARAM(
        "mirror", "Mirror",
        "Also flip left to right, after the rotation (as a front camera preview does). "
        "angle=90:mirror=true is a transpose.",
        0, 0),
};

static const rawfx_param_descriptor mirror_params[MIRROR_PARAM_COUNT] = {
    [MIRROR_PARAM_VERTICAL] = RAWFX_BOOL_PARAM(
        "vertical", "Vertical",
        "Flip top to bottom instead of left to right. For both at once use "
        "rotate=angle=180.",
        0, 0),
};

static const rawfx_param_descriptor range_params[RANGE_PARAM_COUNT] = {
    [RANGE_PARAM_TO] = RAWFX_ENUM_PARAM(
        "to", "To",
        "The sample range to convert to: full (0..255) or limited (Y 16..235, U and V "
        "16..240). The input range comes from the frame's format; when it is already "
        "the target, frames pass through untouched.",
        "", RAWFX_PARAM_FLAG_RECONFIGURE, RANGE_TO_FULL, range_to_names),
};

/* -------------------------------------------------------------- instance -- */

typedef enum { KIND_SCALE, KIND_ROTATE, KIND_MIRROR, KIND_RANGE } yuv_kind;


/* One plane of a rotate or mirror: what `op` reads and writes. Strides may be
 * negative (rows read or written bottom up); width and height are the source's. */
typedef enum { PLANE_OP_COPY, PLANE_OP_REVERSE, PLANE_OP_TRANSPOSE } plane_op;

typedef struct plane_turn {
    const uint8_t *src;
    ptrdiff_t src_stride;
    uint8_t *dst;
    ptrdiff_t dst_stride;
    int width, height;
} plane_turn;

/* The frame being turned, set on the process thread before the slice jobs run
 * and only read by them (pool->run orders the two). */
typedef struct turn_plan {
    plane_op op;
    rotate_kernel_level kernels;
    uint32_t slices;
    plane_turn planes[3];
} turn_plan;

typedef struct yuv_instance {
    rawfx_instance_base base;       /* filter, host, error buffer */
    yuv_kind kind;

    /* Negotiated by the last successful configure. */
    int configured;
    uint32_t in_width, in_height;
    uint32_t out_width, out_height;
    uint32_t in_rotation;

    /* scale */
    uint32_t scale_width, scale_height; /* as set; used at the next configure */
    int scale_filter;                   /* live */
    int scale_mode;                     /* live: geometry recomputed on change */
    scale_geometry geometry;
    scale_isa isa;                      /* chosen at configure (RAWFX_KERNELS caps it) */
    scale_plan luma_plan, chroma_plan;  /* remade whenever geometry or filter changes */
    uint8_t *scale_rows;                /* one row buffer per slice, allocated at configure */
    scale_column_block *scale_columns;  /* the plans' column tables: luma, then chroma (configure) */
    size_t scale_luma_columns, scale_chroma_columns;
    size_t scale_row_bytes;
    uint32_t scale_row_buffers;
    /* The frame being scaled: written by the process thread before pool->run,
     * read by the slice jobs during it (the pool's wake-up orders them). */
    const uint8_t *slice_src[3];
    uint8_t *slice_dst[3];
    ptrdiff_t slice_src_stride[3], slice_dst_stride[3];
    uint32_t slice_count;

    /* rotate */
    int rotate_angle_set;               /* as set; used at the next configure */
    int rotate_angle;                   /* configured */
    int rotate_mirror;                  /* live */

    /* rotate and mirror: kernels chosen at configure, the plan per frame */
    rotate_kernel_level kernels;
    turn_plan turn;

    /* every kind that slices: the host's pool, or NULL (slices run inline);
     * asked for at configure (yuv_thread_pool) */
    const rawfx_host_thread_pool *pool;

    /* mirror */
    int mirror_vertical;                /* live */

    /* range */
    int range_to_set;                   /* as set; used at the next configure */
    uint32_t range_in, range_out;       /* configured RAWFX_RANGE_* */
    uint8_t luma_lut[256], chroma_lut[256]; /* built at configure */
} yuv_instance;

static yuv_instance *instance_of(const rawfx_filter *filter) {
    return filter ? (yuv_instance *)filter->filter_data : NULL;
}


/* ------------------------------------------------------------- geometry -- */

static int rotation_is_valid(uint32_t rotation) {
    return rotation == 0 || rotation == 90 || rotation == 180 || rotation == 270;
}

/* ------------------------------------------------------- format checking -- */

static rawfx_status check_output_size(yuv_instance *self, uint32_t width, uint32_t height) {
    if ((width | height) & 1u)
        return rawfx_fail(&self->base, RAWFX_ERR_UNSUPPORTED,
                          "output size %ux%u is odd; I420 needs even width and height", width, height);
    return RAWFX_OK;
}

/* Check one plane pointer and stride against the row width it must hold. */
static int plane_ok(const uint8_t *plane, int32_t stride, uint32_t row_bytes) {
    return plane != NULL && stride > 0 && (uint32_t)stride >= row_bytes;
}

/* Validate a frame pair against the configured format. Runs in process:
 * messages only, no allocation. */
static rawfx_status check_frames(yuv_instance *self, const rawfx_video_frame *in,
                                 const rawfx_video_frame *out) {
    if (!self->configured)
        return rawfx_fail(&self->base, RAWFX_ERR_STATE, "process before a successful configure");
    if (in == NULL || out == NULL || in == out)
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "process needs two distinct frames (the filter is out of place)");
    if (!rawfx_video_frame_is_complete(in) || !rawfx_video_frame_is_complete(out))
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "frame struct_size in=%u out=%u is smaller than %zu, the 1.0 frame",
                          in->struct_size, out->struct_size, RAWFX_FIELD_END(rawfx_video_frame, timestamp_us));
    if (in->pixel_format != RAWFX_PIXEL_I420)
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "frame pixel format %u is not I420 (%u), the configured format",
                          in->pixel_format, (unsigned)RAWFX_PIXEL_I420);
    if (in->width != self->in_width || in->height != self->in_height)
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "frame is %ux%u but the filter was configured for %ux%u; configure again when the size changes",
                          in->width, in->height, self->in_width, self->in_height);
    uint32_t in_cw = (in->width + 1) / 2;
    if (!plane_ok(in->planes[0], in->strides[0], in->width) ||
        !plane_ok(in->planes[1], in->strides[1], in_cw) || !plane_ok(in->planes[2], in->strides[2], in_cw))
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "input frame has a missing plane or a stride shorter than its row (strides %d/%d/%d for width %u)",
                          in->strides[0], in->strides[1], in->strides[2], in->width);
    uint32_t out_cw = self->out_width / 2;
    if (!plane_ok(out->planes[0], out->strides[0], self->out_width) ||
        !plane_ok(out->planes[1], out->strides[1], out_cw) || !plane_ok(out->planes[2], out->strides[2], out_cw))
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "output frame has a missing plane or a stride shorter than its row (strides %d/%d/%d for width %u)",
                          out->strides[0], out->strides[1], out->strides[2], self->out_width);
    return RAWFX_OK;
}

static void finish_frame(const yuv_instance *self, const rawfx_video_frame *in,
                         rawfx_video_frame *out, uint32_t rotation) {
    out->struct_size = sizeof(rawfx_video_frame);
    out->width = self->out_width;
    out->height = self->out_height;
    out->pixel_format = RAWFX_PIXEL_I420;
    rawfx_copy_video_metadata(in, out);
    out->rotation = rotation;
}

/* ------------------------------------------------------------------ scale -- */

/* Plans the luma and chroma planes for the current geometry and filter. Called at
 * configure and by set_param of filter or mode (no allocation). */
static void scale_update_plans(yuv_instance *self) {
    const scale_geometry *g = &self->geometry;
    scale_plan_init(&self->luma_plan, g->src_w, g->src_h, g->dst_w, g->dst_h, self->scale_filter, self->isa,
                    self->scale_columns, self->scale_luma_columns);
    scale_plan_init(&self->chroma_plan, (g->src_w + 1) / 2, (g->src_h + 1) / 2, (g->dst_w + 1) / 2,
                    (g->dst_h + 1) / 2, self->scale_filter, self->isa,
                    self->scale_columns ? self->scale_columns + self->scale_luma_columns : NULL,
                    self->scale_chroma_columns);
}

static void scale_free_rows(yuv_instance *self) {
    free(self->scale_rows);
    self->scale_rows = NULL;
    self->scale_row_buffers = 0;
    free(self->scale_columns);
    self->scale_columns = NULL;
    self->scale_luma_columns = self->scale_chroma_columns = 0;
}

/* The host's thread pool (rawfx.thread-pool/1) as far as this file needs it,
 * or NULL; at configure (get_extension is not real-time). */
static const rawfx_host_thread_pool *yuv_thread_pool(const rawfx_host *host) {
    const rawfx_host_thread_pool *pool = host ? host->get_extension(host, RAWFX_EXT_THREAD_POOL) : NULL;
    if (pool != NULL && pool->struct_size < RAWFX_FIELD_END(rawfx_host_thread_pool, run)) pool = NULL;
    return pool;
}

/* The kernels' instruction set for this CPU (kernel_level.h), logging a
 * RAWFX_KERNELS value it ignored; at configure (getenv is not real-time). */
static yuv_kernel_level yuv_select_kernels(yuv_instance *self) {
    const char *refused;
    yuv_kernel_level level = yuv_kernels_select(&refused);
    if (refused != NULL)
        rawfx_log(&self->base, RAWFX_LOG_WARNING, "RAWFX_KERNELS=%s is not c, ssse3, avx2 or avx512; using %s", refused,
                  yuv_kernels_name(level));
    return level;
}

/* Slices of a scaled frame per pool thread. The pool hands slices out one at a
 * time, so a thread that runs slower (a vCPU whose core is shared with another
 * guest) takes fewer of them; with one slice per thread the frame waited for the
 * slower thread's half. Rotate and mirror stay at one slice per thread: more
 * slices cut their transposes into bands too short to stream well. */
#define SCALE_SLICES_PER_THREAD 4

/* One row buffer per slice the host's pool may run (at least one), for every
 * geometry and filter the live parameters can reach from this input size. The
 * pool's size can grow after configure (RAWFX_THREADS, RawFXThreadPool), so
 * the count is SCALE_SLICES_PER_THREAD times the larger of its size now and
 * the online cores; process never cuts more slices than there are buffers. */
static rawfx_status scale_allocate_rows(yuv_instance *self, uint32_t in_width) {
    const rawfx_host *host = self->base.host;
    const rawfx_host_thread_pool *pool = yuv_thread_pool(host);
    self->pool = pool;
    uint32_t threads = pool ? pool->thread_count(host) : 1;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (pool != NULL && cores > (long)threads) threads = (uint32_t)(cores > 64 ? 64 : cores);
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    threads *= SCALE_SLICES_PER_THREAD;
    const size_t bytes = scale_row_buffer_size((int)in_width, (int)self->out_width);
    if (self->scale_rows == NULL || self->scale_row_buffers < threads || self->scale_row_bytes < bytes) {
        scale_free_rows(self);
        self->scale_rows = aligned_alloc(64, bytes * threads);
        if (self->scale_rows == NULL)
            return rawfx_fail(&self->base, RAWFX_ERR_OUT_OF_MEMORY, "cannot allocate %u scale row buffers of %zu bytes",
                              threads, bytes);
        self->scale_row_bytes = bytes;
        self->scale_row_buffers = threads;
    }
    /* Column tables for the widest output any mode gives at this size (fit and
     * fill never make the picture wider than the frame). */
    const size_t luma = scale_column_blocks((int)self->out_width);
    const size_t chroma = scale_column_blocks(((int)self->out_width + 1) / 2);
    if (self->scale_columns == NULL || self->scale_luma_columns < luma || self->scale_chroma_columns < chroma) {
        free(self->scale_columns);
        self->scale_luma_columns = self->scale_chroma_columns = 0;
        self->scale_columns = aligned_alloc(64, (luma + chroma) * sizeof(scale_column_block));
        if (self->scale_columns == NULL)
            return rawfx_fail(&self->base, RAWFX_ERR_OUT_OF_MEMORY, "cannot allocate %zu scale column tables of %zu bytes",
                              luma + chroma, sizeof(scale_column_block));
        self->scale_luma_columns = luma;
        self->scale_chroma_columns = chroma;
    }
    return RAWFX_OK;
}

/* One slice job: rows `index` of slice_count of each plane. A pool thread or the
 * process thread; writes only its own rows and its own row buffer. */
static void scale_slice(void *context, uint32_t index) {
    yuv_instance *self = context;
    uint8_t *rows = self->scale_rows + (size_t)index * self->scale_row_bytes;
    for (int p = 0; p < 3; p++) {
        const scale_plan *plan = p == 0 ? &self->luma_plan : &self->chroma_plan;
        int begin, end;
        scale_slice_rows(plan, self->slice_count, index, &begin, &end);
        scale_plane_rows(plan, self->slice_src[p], self->slice_src_stride[p], self->slice_dst[p],
                         self->slice_dst_stride[p], begin, end, rows);
    }
}

static rawfx_status scale_configure(yuv_instance *self, const rawfx_video_format *in,
                                    rawfx_negotiation *result) {
    uint64_t w = self->scale_width, h = self->scale_height;
    if (w == 0 && h == 0) {
        w = in->width;
        h = in->height;
    } else if (h == 0) {
        h = scale_round_even(w * in->height, in->width);
    } else if (w == 0) {
        w = scale_round_even(h * in->width, in->height);
    }
    if (w > YUV_MAX_DIMENSION || h > YUV_MAX_DIMENSION)
        return rawfx_fail(&self->base, RAWFX_ERR_UNSUPPORTED,
                          "output size %llux%llu (following the %ux%u input aspect ratio) is larger than %u; "
                          "set both width and height", (unsigned long long)w, (unsigned long long)h,
                          in->width, in->height, YUV_MAX_DIMENSION);
    rawfx_status status = check_output_size(self, (uint32_t)w, (uint32_t)h);
    if (status != RAWFX_OK) return status;
    self->out_width = (uint32_t)w;
    self->out_height = (uint32_t)h;
    self->geometry = scale_fit_geometry(self->scale_mode, in->width, in->height,
                                            self->out_width, self->out_height);
    const scale_geometry *g = &self->geometry;
    rawfx_log(&self->base, RAWFX_LOG_INFO, "%ux%u -> %ux%u, mode %s: input %dx%d at %d,%d to output %dx%d at %d,%d",
              in->width, in->height, self->out_width, self->out_height, scale_mode_names[self->scale_mode],
              g->src_w, g->src_h, g->src_x, g->src_y, g->dst_w, g->dst_h, g->dst_x, g->dst_y);
    self->isa = yuv_select_kernels(self);
    status = scale_allocate_rows(self, in->width);
    if (status != RAWFX_OK) return status;
    scale_update_plans(self);
    result->output.video.width = self->out_width;
    result->output.video.height = self->out_height;
    return RAWFX_OK;
}

static rawfx_status scale_process(const rawfx_filter *filter, const rawfx_video_frame *in,
                                  rawfx_video_frame *out) {
    yuv_instance *self = instance_of(filter);
    rawfx_clear_error(&self->base);
    rawfx_status status = check_frames(self, in, out);
    if (status != RAWFX_OK) return status;

    const scale_geometry *g = &self->geometry;
    const int ow = (int)self->out_width, oh = (int)self->out_height;
    uint8_t *const *dp = out->planes;
    const int32_t *ds = out->strides;

    if (g->dst_w != ow || g->dst_h != oh) {
        /* fit: paint the bars (only the bars) with black of the frame's range */
        const int black_y = in->color_range == RAWFX_RANGE_FULL ? 0 : 16;
        const int bottom = g->dst_y + g->dst_h, right = g->dst_x + g->dst_w;
        if (g->dst_y > 0)
            I420Rect(dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], 0, 0, ow, g->dst_y, black_y, 128, 128);
        if (bottom < oh)
            I420Rect(dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], 0, bottom, ow, oh - bottom, black_y, 128, 128);
        if (g->dst_x > 0)
            I420Rect(dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], 0, g->dst_y, g->dst_x, g->dst_h, black_y, 128, 128);
        if (right < ow)
            I420Rect(dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], right, g->dst_y, ow - right, g->dst_h,
                     black_y, 128, 128);
    }

    const int sx = g->src_x, sy = g->src_y, dx = g->dst_x, dy = g->dst_y;
    for (int p = 0; p < 3; p++) {
        const int shift = p > 0; /* chroma offsets are half the (even) luma offsets */
        self->slice_src[p] = in->planes[p] + (ptrdiff_t)(sy >> shift) * in->strides[p] + (sx >> shift);
        self->slice_src_stride[p] = in->strides[p];
        self->slice_dst[p] = dp[p] + (ptrdiff_t)(dy >> shift) * ds[p] + (dx >> shift);
        self->slice_dst_stride[p] = ds[p];
    }
    const rawfx_host *host = self->base.host;
    uint32_t slices = self->pool ? self->pool->thread_count(host) : 1;
    if (slices > 1) slices *= SCALE_SLICES_PER_THREAD;
    if (slices > self->scale_row_buffers) slices = self->scale_row_buffers;
    if (slices < 1) slices = 1;
    self->slice_count = slices;
    if (slices == 1 || self->pool->run(host, scale_slice, self, slices) != RAWFX_OK)
        for (uint32_t i = 0; i < slices; i++) scale_slice(self, i);
    finish_frame(self, in, out, in->rotation);
    return RAWFX_OK;
}

/* ---------------------------------------------------------- turn slices -- */

/* Columns per slice of a transpose are a multiple of this: whole AVX2 blocks. */
#define TURN_SLICE_COLUMNS 32
/* Planes smaller than this (luma samples) are turned in one slice: waking the
 * pool would cost more than the work. */
#define TURN_MIN_THREADED_SAMPLES (64u * 64u)

/* Kernels and thread pool for rotate and mirror; at configure (getenv and
 * get_extension are not real-time). */
static void turn_configure(yuv_instance *self) {
    self->kernels = yuv_select_kernels(self);
    self->pool = yuv_thread_pool(self->base.host);
}

/* Fills plane `p` of the plan: source (w x h) and destination, each read or
 * written bottom up when its flag says so. */
static void turn_plane(turn_plan *plan, int p, const rawfx_video_frame *in, rawfx_video_frame *out,
                       int w, int h, int src_bottom_up, int dst_bottom_up, int dst_rows) {
    plane_turn *t = &plan->planes[p];
    const ptrdiff_t ss = in->strides[p], ds = out->strides[p];
    t->src = src_bottom_up ? in->planes[p] + (ptrdiff_t)(h - 1) * ss : in->planes[p];
    t->src_stride = src_bottom_up ? -ss : ss;
    t->dst = dst_bottom_up ? out->planes[p] + (ptrdiff_t)(dst_rows - 1) * ds : out->planes[p];
    t->dst_stride = dst_bottom_up ? -ds : ds;
    t->width = w;
    t->height = h;
}

/* Slice `index` of the plan: a band of destination rows of every plane. */
static void turn_slice(void *context, uint32_t index) {
    const turn_plan *plan = context;
    const uint32_t n = plan->slices;
    for (int p = 0; p < 3; p++) {
        const plane_turn *t = &plan->planes[p];
        if (plan->op == PLANE_OP_TRANSPOSE) {
            /* Destination rows are source columns: bands of whole kernel blocks. */
            const int begin = index == 0 ? 0 : (int)((uint64_t)t->width * index / n) & ~(TURN_SLICE_COLUMNS - 1);
            const int end = index + 1 == n ? t->width
                                           : (int)((uint64_t)t->width * (index + 1) / n) & ~(TURN_SLICE_COLUMNS - 1);
            rotate_transpose_plane(plan->kernels, t->src, t->src_stride, t->dst, t->dst_stride, t->height, begin, end);
        } else {
            const int begin = (int)((uint64_t)t->height * index / n), end = (int)((uint64_t)t->height * (index + 1) / n);
            const uint8_t *src = t->src + (ptrdiff_t)begin * t->src_stride;
            uint8_t *dst = t->dst + (ptrdiff_t)begin * t->dst_stride;
            if (plan->op == PLANE_OP_REVERSE)
                rotate_reverse_rows(plan->kernels, src, t->src_stride, dst, t->dst_stride, t->width, end - begin);
            else if (t->dst_stride < 0)
                rotate_copy_rows(plan->kernels, src, t->src_stride, dst, t->dst_stride, t->width, end - begin);
            else if (end > begin) /* coalesces rows into one copy when the strides allow */
                CopyPlane(src, (int)t->src_stride, dst, (int)t->dst_stride, t->width, end - begin);
        }
    }
}

/* Turns one frame by its plan: `degrees` clockwise (0, 90, 180, 270), then a
 * left-right flip when `flip`. Every case is one operation per plane:
 *   0: copy, flipped: reverse rows;  180: reverse rows written bottom up,
 *   flipped: copy written bottom up (a top-bottom flip);  90: transpose of the
 *   source read bottom up, flipped: plain transpose;  270: transpose written
 *   bottom up, flipped: both bottom up.
 * A half turn or top-bottom flip reads the source top down and writes the
 * destination bottom up, not the other way: the source is cold and the
 * prefetchers follow ascending rows only (read bottom up, the top-bottom flip of
 * a cold frame took twice a copy's time); the destination is the chain's own
 * buffer and warm. */
static void turn_frame(yuv_instance *self, const rawfx_video_frame *in, rawfx_video_frame *out,
                       uint32_t degrees, int flip) {
    turn_plan *plan = &self->turn;
    const int w = (int)in->width, h = (int)in->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    const int quarter = degrees == 90 || degrees == 270;
    int src_bottom_up, dst_bottom_up = 0;
    if (quarter) {
        plan->op = PLANE_OP_TRANSPOSE;
        src_bottom_up = (degrees == 90) != flip;
        dst_bottom_up = degrees == 270;
    } else {
        plan->op = flip == (degrees == 180) ? PLANE_OP_COPY : PLANE_OP_REVERSE;
        src_bottom_up = 0;
        dst_bottom_up = degrees == 180;
    }
    turn_plane(plan, 0, in, out, w, h, src_bottom_up, dst_bottom_up, quarter ? w : h);
    turn_plane(plan, 1, in, out, cw, ch, src_bottom_up, dst_bottom_up, quarter ? cw : ch);
    turn_plane(plan, 2, in, out, cw, ch, src_bottom_up, dst_bottom_up, quarter ? cw : ch);
    plan->kernels = self->kernels;

    const rawfx_host *host = self->base.host;
    uint32_t slices = 1;
    if (self->pool != NULL && (uint64_t)w * (uint64_t)h >= TURN_MIN_THREADED_SAMPLES)
        slices = self->pool->thread_count(host);
    plan->slices = slices;
    /* run fails only off the process thread: then the slices run here. */
    if (slices > 1 && self->pool->run(host, turn_slice, plan, slices) == RAWFX_OK) return;
    plan->slices = 1;
    turn_slice(plan, 0);
}

/* ----------------------------------------------------------------- rotate -- */

static rawfx_status rotate_configure(yuv_instance *self, const rawfx_video_format *in,
                                     rawfx_negotiation *result) {
    int angle = self->rotate_angle_set;
    uint32_t degrees;
    if (angle == ROTATE_ANGLE_AUTO) {
        if (!rotation_is_valid(in->rotation))
            return rawfx_fail(&self->base, RAWFX_ERR_UNSUPPORTED,
                              "angle=auto needs rotation metadata of 0, 90, 180 or 270; the input says %u",
                              in->rotation);
        degrees = in->rotation;
    } else {
        degrees = (uint32_t)angle * 90;
    }
    const int swap = degrees == 90 || degrees == 270;
    const uint32_t ow = swap ? in->height : in->width, oh = swap ? in->width : in->height;
    rawfx_status status = check_output_size(self, ow, oh);
    if (status != RAWFX_OK) return status;
    turn_configure(self);
    self->rotate_angle = angle;
    self->out_width = ow;
    self->out_height = oh;
    result->output.video.width = ow;
    result->output.video.height = oh;
    if (angle == ROTATE_ANGLE_AUTO) {
        result->output.video.rotation = 0;
        rawfx_log(&self->base, RAWFX_LOG_INFO, "angle=auto: the input's rotation metadata is %u: turning %ux%u by "
                  "%u degrees to %ux%u, rotation 0", in->rotation, in->width, in->height, degrees, ow, oh);
    }
    return RAWFX_OK;
}

static rawfx_status rotate_process(const rawfx_filter *filter, const rawfx_video_frame *in,
                                   rawfx_video_frame *out) {
    yuv_instance *self = instance_of(filter);
    rawfx_clear_error(&self->base);
    rawfx_status status = check_frames(self, in, out);
    if (status != RAWFX_OK) return status;

    uint32_t degrees;
    if (self->rotate_angle == ROTATE_ANGLE_AUTO) {
        degrees = in->rotation;
        /* The output buffer was sized at configure: a frame may turn by 180
         * degrees against the negotiated metadata, not by a quarter turn. */
        if (!rotation_is_valid(degrees) || (degrees % 180) != (self->in_rotation % 180))
            return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                              "angle=auto: frame rotation %u does not fit the negotiated %u (output %ux%u); "
                              "configure again when the rotation changes by a quarter turn",
                              in->rotation, self->in_rotation, self->out_width, self->out_height);
    } else {
        degrees = (uint32_t)self->rotate_angle * 90;
    }
    turn_frame(self, in, out, degrees, self->rotate_mirror);
    finish_frame(self, in, out, self->rotate_angle == ROTATE_ANGLE_AUTO ? 0 : in->rotation);
    return RAWFX_OK;
}

/* ----------------------------------------------------------------- mirror -- */

static rawfx_status mirror_configure(yuv_instance *self, const rawfx_video_format *in,
                                     rawfx_negotiation *result) {
    (void)result; /* the output format is the input format */
    rawfx_status status = check_output_size(self, in->width, in->height);
    if (status != RAWFX_OK) return status;
    turn_configure(self);
    self->out_width = in->width;
    self->out_height = in->height;
    return RAWFX_OK;
}

static rawfx_status mirror_process(const rawfx_filter *filter, const rawfx_video_frame *in,
                                   rawfx_video_frame *out) {
    yuv_instance *self = instance_of(filter);
    rawfx_clear_error(&self->base);
    rawfx_status status = check_frames(self, in, out);
    if (status != RAWFX_OK) return status;
    /* Top to bottom is a half turn plus a left-right flip. */
    turn_frame(self, in, out, self->mirror_vertical ? 180 : 0, 1);
    finish_frame(self, in, out, in->rotation);
    return RAWFX_OK;
}

/* ------------------------------------------------------------------ range -- */

/* n / d rounded to the nearest integer, halves away from zero (as lround), d > 0. */
static int32_t divide_rounded(int32_t n, int32_t d) {
    return n >= 0 ? (2 * n + d) / (2 * d) : -((2 * -n + d) / (2 * d));
}

static uint8_t clamp_byte(int32_t v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The tables for full -> limited:  Y' = round(Y*219/255) + 16,
 *                                  C' = round((C-128)*224/255) + 128;
 * and limited -> full:             Y' = clamp(round((Y-16)*255/219)),
 *                                  C' = clamp(round((C-128)*255/224) + 128).
 * Only limited -> full chroma has exact halves (C = 16 and 240 give -127.5 and
 * 127.5): rounding away from zero maps them to 0 and 255, keeping the
 * conversion symmetric about 128. */
static void range_build_tables(yuv_instance *self, uint32_t to) {
    for (int32_t v = 0; v < 256; v++) {
        if (to == RAWFX_RANGE_LIMITED) {
            self->luma_lut[v] = clamp_byte(divide_rounded(v * 219, 255) + 16);
            self->chroma_lut[v] = clamp_byte(divide_rounded((v - 128) * 224, 255) + 128);
        } else {
            self->luma_lut[v] = clamp_byte(divide_rounded((v - 16) * 255, 219));
            self->chroma_lut[v] = clamp_byte(divide_rounded((v - 128) * 255, 224) + 128);
        }
    }
}

static rawfx_status range_configure(yuv_instance *self, const rawfx_video_format *in,
                                    rawfx_negotiation *result) {
    if (in->color_range != RAWFX_RANGE_LIMITED && in->color_range != RAWFX_RANGE_FULL)
        return rawfx_fail(&self->base, RAWFX_ERR_UNSUPPORTED,
                          "input colour range %u is neither limited (%u) nor full (%u)",
                          in->color_range, (unsigned)RAWFX_RANGE_LIMITED, (unsigned)RAWFX_RANGE_FULL);
    self->range_in = in->color_range;
    self->range_out = self->range_to_set == RANGE_TO_LIMITED ? RAWFX_RANGE_LIMITED : RAWFX_RANGE_FULL;
    if (self->range_in != self->range_out) range_build_tables(self, self->range_out);
    self->out_width = in->width;
    self->out_height = in->height;
    result->output.video.color_range = self->range_out;
    return RAWFX_OK;
}

/* Maps one plane's visible samples from `src` to `dst` through `lut`; row padding
 * on either side is neither read nor written. */
static void range_map_plane(const uint8_t *src, int32_t src_stride, uint8_t *dst, int32_t dst_stride,
                            uint32_t width, uint32_t height, const uint8_t *lut) {
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *in = src + (ptrdiff_t)y * src_stride;
        uint8_t *out = dst + (ptrdiff_t)y * dst_stride;
        for (uint32_t x = 0; x < width; x++) out[x] = lut[in[x]];
    }
}

static rawfx_status range_process(const rawfx_filter *filter, const rawfx_video_frame *in,
                                  rawfx_video_frame *out) {
    yuv_instance *self = instance_of(filter);
    rawfx_clear_error(&self->base);
    rawfx_status status = check_frames(self, in, out);
    if (status != RAWFX_OK) return status;
    if (in->color_range != self->range_in)
        return rawfx_fail(&self->base, RAWFX_ERR_INVALID_ARGUMENT,
                          "frame range %u differs from the configured input range %u (0 limited, 1 full); "
                          "configure again when the range changes", in->color_range, self->range_in);
    const int w = (int)in->width, h = (int)in->height;
    uint8_t *const *sp = in->planes;
    const int32_t *ss = in->strides;
    uint8_t *const *dp = out->planes;
    const int32_t *ds = out->strides;
    if (self->range_in == self->range_out) {
        I420Copy(sp[0], ss[0], sp[1], ss[1], sp[2], ss[2], dp[0], ds[0], dp[1], ds[1], dp[2], ds[2], w, h);
    } else {
        const uint32_t cw = (in->width + 1) / 2, ch = (in->height + 1) / 2;
        range_map_plane(sp[0], ss[0], dp[0], ds[0], in->width, in->height, self->luma_lut);
        range_map_plane(sp[1], ss[1], dp[1], ds[1], cw, ch, self->chroma_lut);
        range_map_plane(sp[2], ss[2], dp[2], ds[2], cw, ch, self->chroma_lut);
    }
    finish_frame(self, in, out, in->rotation);
    out->color_range = self->range_out;
    return RAWFX_OK;
}

/* ------------------------------------------------------ shared callbacks -- */

static void yuv_destroy(const rawfx_filter *filter) {
    yuv_instance *self = instance_of(filter);
    if (self == NULL) return;
    scale_free_rows(self);
    rawfx_instance_free(&self->base);
}

static rawfx_status yuv_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    yuv_instance *self = instance_of(filter);
    rawfx_status status = rawfx_check_param(&self->base, index, value);
    if (status != RAWFX_OK) return status;
    const int64_t v = value->int_value;

    switch (self->kind) {
    case KIND_SCALE:
        switch (index) {
        case SCALE_PARAM_WIDTH: self->scale_width = (uint32_t)v; break;   /* at next configure */
        case SCALE_PARAM_HEIGHT: self->scale_height = (uint32_t)v; break; /* at next configure */
        case SCALE_PARAM_FILTER:
            self->scale_filter = (int)v;
            if (self->configured) scale_update_plans(self);
            break;
        case SCALE_PARAM_MODE:
            self->scale_mode = (int)v;
            if (self->configured) {
                self->geometry = scale_fit_geometry(self->scale_mode, self->in_width, self->in_height,
                                                        self->out_width, self->out_height);
                scale_update_plans(self);
            }
            break;
        }
        break;
    case KIND_ROTATE:
        if (index == ROTATE_PARAM_ANGLE) self->rotate_angle_set = (int)v; /* at next configure */
        else self->rotate_mirror = (int)v;
        break;
    case KIND_MIRROR:
        self->mirror_vertical = (int)v;
        break;
    case KIND_RANGE:
        self->range_to_set = (int)v; /* at next configure */
        break;
    }
    return RAWFX_OK;
}

static rawfx_status yuv_configure(const rawfx_filter *filter, const rawfx_format *input,
                                  rawfx_negotiation *result) {
    yuv_instance *self = instance_of(filter);
    rawfx_clear_error(&self->base);
    self->configured = 0; /* a failed configure leaves the instance unconfigured */
    rawfx_status status = rawfx_check_video_input(&self->base, input, YUV_MAX_DIMENSION);
    if (status == RAWFX_OK) status = rawfx_check_negotiation(&self->base, result);
    if (status != RAWFX_OK) return status;
    const rawfx_video_format video = input->video;
    switch (self->kind) {
    case KIND_SCALE: status = scale_configure(self, &video, result); break;
    case KIND_ROTATE: status = rotate_configure(self, &video, result); break;
    case KIND_MIRROR: status = mirror_configure(self, &video, result); break;
    case KIND_RANGE: status = range_configure(self, &video, result); break;
    }
    if (status != RAWFX_OK) return status;
    self->in_width = video.width;
    self->in_height = video.height;
    self->in_rotation = video.rotation;
    self->configured = 1;
    return RAWFX_OK;
}

static void yuv_reset(const rawfx_filter *filter) {
    /* No history: every frame is processed on its own. */
    rawfx_clear_error(rawfx_instance_base_of(filter));
}

/* ----------------------------------------------------------- descriptors -- */

static const rawfx_filter *yuv_create(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                      char *error, size_t error_capacity);

enum { FILTER_SCALE, FILTER_ROTATE, FILTER_MIRROR, FILTER_RANGE, FILTER_COUNT };

static const rawfx_filter_descriptor yuv_descriptors[FILTER_COUNT] = {
    [FILTER_SCALE] = RAWFX_FILTER_DESCRIPTOR(
        "scale", "Scale", YUV_PLUGIN_VERSION,
        "Resizes I420 video with libyuv: stretch to the new size, fit it inside with "
        "black bars, or fill it by cropping the centre.",
        RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, scale_params, yuv_create),
    [FILTER_ROTATE] = RAWFX_FILTER_DESCRIPTOR(
        "rotate", "Rotate", YUV_PLUGIN_VERSION,
        "Turns I420 video by quarter turns clockwise, optionally mirrored; angle=auto "
        "uprights frames by their rotation metadata.",
        RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, rotate_params, yuv_create),
    [FILTER_MIRROR] = RAWFX_FILTER_DESCRIPTOR(
        "mirror", "Mirror", YUV_PLUGIN_VERSION,
        "Flips I420 video left to right (or top to bottom with vertical=true).",
        RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, mirror_params, yuv_create),
    [FILTER_RANGE] = RAWFX_FILTER_DESCRIPTOR(
        "range", "Range", YUV_PLUGIN_VERSION,
        "Converts I420 video between limited (TV, Y 16..235) and full (PC, 0..255) sample "
        "range through lookup tables; a frame already in the target range is copied unchanged.",
        RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_OUT_OF_PLACE, range_params, yuv_create),
};

/* One function table per filter, in the order of yuv_descriptors. */
static const rawfx_filter yuv_functions[FILTER_COUNT] = {
    [FILTER_SCALE] = RAWFX_FILTER_FUNCTIONS(yuv_destroy, yuv_set_param, yuv_configure, scale_process, NULL,
                                            yuv_reset, NULL, NULL),
    [FILTER_ROTATE] = RAWFX_FILTER_FUNCTIONS(yuv_destroy, yuv_set_param, yuv_configure, rotate_process, NULL,
                                             yuv_reset, NULL, NULL),
    [FILTER_MIRROR] = RAWFX_FILTER_FUNCTIONS(yuv_destroy, yuv_set_param, yuv_configure, mirror_process, NULL,
                                             yuv_reset, NULL, NULL),
    [FILTER_RANGE] = RAWFX_FILTER_FUNCTIONS(yuv_destroy, yuv_set_param, yuv_configure, range_process, NULL,
                                            yuv_reset, NULL, NULL),
};

static const rawfx_filter *yuv_create(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                      char *error, size_t error_capacity) {
    int which = -1;
    for (int i = 0; i < FILTER_COUNT; i++)
        if (descriptor == &yuv_descriptors[i]) which = i;
    if (which < 0) {
        rawfx_format_message(error, error_capacity, YUV_PLUGIN_NAME ": create was given a descriptor this plugin "
                             "does not own");
        return NULL;
    }
    yuv_instance *self = (yuv_instance *)rawfx_instance_new(sizeof *self, descriptor, host, &yuv_functions[which],
                                                            error, error_capacity);
    if (self == NULL) return NULL;
    static const yuv_kind kinds[FILTER_COUNT] = {
        [FILTER_SCALE] = KIND_SCALE, [FILTER_ROTATE] = KIND_ROTATE, [FILTER_MIRROR] = KIND_MIRROR,
        [FILTER_RANGE] = KIND_RANGE,
    };
    self->kind = kinds[which];
    return rawfx_instance_ready(&self->base, error, error_capacity);
}

/* ------------------------------------------------------------------ entry -- */

RAWFX_PLUGIN_ENTRY(YUV_PLUGIN_NAME, YUV_PLUGIN_VERSION,
                   &yuv_descriptors[FILTER_SCALE], &yuv_descriptors[FILTER_ROTATE], &yuv_descriptors[FILTER_MIRROR],
                   &yuv_descriptors[FILTER_RANGE])

/*
 * rawfx-text: the `text` filter. A caption or a name label drawn on I420 video in
 * place, shaped by HarfBuzz and rasterised by FreeType (Plugins/TextKernels).
 *
 * Real time. Every parameter but `font` is real-time: the host may set it on the
 * process thread between two frames. Shaping and rasterising allocate and take
 * time, so they never run there:
 *
 *   set_param (process thread or control)
 *       copies the value into `staged` (the caption into a fixed 1024-byte buffer;
 *       a longer one is refused with a message naming the limit), publishes
 *       `staged` to `shared` under a sequence lock (relaxed atomic words, one
 *       writer) and asks the host for on_callback (host->request_callback).
 *       Colours and opacities are used by process directly.
 *   on_callback (control thread, possibly while process runs)
 *       reads `shared` (retrying while a write is under way), lays the text out,
 *       renders its coverage into the back mask and publishes it: a triple buffer
 *       whose middle index changes hands with one atomic exchange.
 *   process_video (process thread)
 *       takes the newest mask when one is fresh (one exchange) and blends it.
 *       No allocation, no lock, no I/O.
 *
 * configure allocates the three masks (two planes of width x height bytes each:
 * the fill and the outline; any caption is clipped to the frame, so that is the
 * most a mask needs), opens the fonts and renders the current caption before the
 * first frame.
 *
 * Without host callbacks (a 1.0 host, which never sets a real-time parameter on a
 * live instance but configures a new one), a change takes effect at configure.
 *
 * Offline ("rawfx.render-mode/1": a file, nobody waits in real time) process waits
 * for the layout of every change made before it, so a caption set before frame N
 * is on frame N whatever the machine's speed (`rawfx compose --captions` is then
 * exact); in real time it shows the newest layout ready, a frame or two later.
 */
#include "rawfx/plugin_helpers.h"
#include "rawfx/ext/render_mode.h"
#include "text_kernels.h"

#include <stdatomic.h>
#include <time.h>

enum {
    P_TEXT, P_FONT, P_SIZE, P_COLOR, P_OPACITY, P_OUTLINE, P_OUTLINE_COLOR, P_BOX, P_BOX_COLOR, P_BOX_OPACITY,
    P_PADDING, P_ANCHOR, P_X, P_Y, P_MARGIN, P_MAX_WIDTH, P_MAX_LINES, P_COUNT
};

enum {
    A_TOP_LEFT, A_TOP, A_TOP_RIGHT, A_LEFT, A_CENTER, A_RIGHT, A_BOTTOM_LEFT, A_BOTTOM, A_BOTTOM_RIGHT
};
static const char *const anchors[] = {"top_left", "top", "top_right", "left", "center", "right",
                                      "bottom_left", "bottom", "bottom_right"};

static const rawfx_param_descriptor text_params[] = {
    RAWFX_STRING_PARAM("text", "Text", "The caption, UTF-8, at most 1023 bytes; a newline starts a line. Changes "
                       "take effect within a frame or two without a reconfigure.", 0, ""),
    RAWFX_STRING_PARAM("font", "Font", "A font file (TrueType, OpenType, TTC). Empty: the first of DejaVu Sans, "
                       "Noto Sans, Liberation Sans, FreeSans found under /usr/share/fonts. Characters it lacks come "
                       "from the fallback fonts (Noto Sans Arabic, Hebrew, Devanagari, Thai; a CJK font).",
                       RAWFX_PARAM_FLAG_PATH | RAWFX_PARAM_FLAG_RECONFIGURE, ""),
    RAWFX_INT_PARAM("size", "Size", "The font size (the em square), in pixels.", "px", 0, 36, 4, 512),
    RAWFX_STRING_PARAM("color", "Colour", "The text colour: #rrggbb, r,g,b or a name (white, black, yellow, ...).",
                       0, "white"),
    RAWFX_FLOAT_PARAM("opacity", "Opacity", "The text's opacity, 0 (invisible) to 1.", "", 0, 1.0, 0.0, 1.0),
    RAWFX_INT_PARAM("outline", "Outline", "The width of the outline around the glyphs (FreeType's stroker); 0 for "
                    "none.", "px", 0, 2, 0, 32),
    RAWFX_STRING_PARAM("outline_color", "Outline colour", "The outline's colour, as `color`.", 0, "black"),
    RAWFX_BOOL_PARAM("box", "Box", "Draws a box behind the text (the text block grown by `padding`).", 0, 0),
    RAWFX_STRING_PARAM("box_color", "Box colour", "The box's colour, as `color`.", 0, "black"),
    RAWFX_FLOAT_PARAM("box_opacity", "Box opacity", "The box's opacity, 0 to 1.", "", 0, 0.6, 0.0, 1.0),
    RAWFX_INT_PARAM("padding", "Padding", "Space between the text and the box's edges.", "px", 0, 8, 0, 256),
    RAWFX_ENUM_PARAM("anchor", "Anchor", "Where the text block sits in the frame; lines are aligned the same way "
                     "(left, centred, right).", "", 0, 7, anchors),
    RAWFX_INT_PARAM("x", "X offset", "Moves the block right (negative: left) from its anchored place.", "px", 0, 0,
                    -16384, 16384),
    RAWFX_INT_PARAM("y", "Y offset", "Moves the block down (negative: up) from its anchored place.", "px", 0, 0,
                    -16384, 16384),
    RAWFX_INT_PARAM("margin", "Margin", "Distance from the frame's edges for the anchors at an edge.", "px", 0, 24, 0,
                    4096),
    RAWFX_FLOAT_PARAM("max_width", "Maximum width", "Lines wrap at spaces to this width: pixels above 1, a fraction of "
                      "the frame's width up to 1 (0.8: 80 %), 0: the frame's width less the margins.", "", 0, 0.0, 0.0,
                      16384.0),
    RAWFX_INT_PARAM("max_lines", "Maximum lines", "Lines beyond this are dropped and the last kept line ends in "
                    "\"\xE2\x80\xA6\".", "", 0, 2, 1, RFX_TEXT_MAX_LINES),
};

/* What on_callback lays out: the caption and every parameter that moves or
 * reshapes it. Plain data; shared as 32-bit words. */
typedef struct text_request {
    uint32_t length;
    int32_t size, outline, box, padding, anchor, x, y, margin, max_lines;
    int32_t max_width_px;       /* max_width above 1 */
    int32_t max_width_fraction; /* max_width in (0, 1], in 1/65536 of the frame's width */
    char text[RFX_TEXT_MAX_BYTES + 1];
} text_request;

#define REQUEST_WORDS ((sizeof(text_request) + 3) / 4)
#define FRESH 4u

typedef struct text_filter {
    rawfx_instance_base base;
    /* set_param's side (one writer at a time). */
    union { text_request r; uint32_t words[REQUEST_WORDS]; } staged;
    uint8_t rgb[3], outline_rgb[3], box_rgb[3];
    double opacity, box_opacity;
    /* Shared with on_callback: a sequence lock over relaxed atomic words. */
    _Atomic uint32_t sequence;
    _Atomic uint32_t shared[REQUEST_WORDS];
    /* Process's: the paints, derived from the colours and the range. */
    rfx_text_paint fill, outline, box;
    int full_range;
    /* Control's. */
    char font[RAWFX_HELPER_PATH_CAPACITY];
    rfx_text_engine *engine;
    rfx_text_layout *layout;
    union { text_request r; uint32_t words[REQUEST_WORDS]; } snapshot;
    uint32_t rendered_sequence;
    int32_t width, height;
    _Atomic int configured;
    /* The request sequence the newest published mask was laid out from. */
    _Atomic uint32_t published;
    const rawfx_host_render_mode *render;
    /* The masks: back (on_callback's), middle (exchanged), front (process's). */
    rfx_text_mask masks[3];
    uint32_t back, front;
    _Atomic uint32_t middle;
} text_filter;

static text_filter *text_of(const rawfx_filter *f) { return (text_filter *)f->filter_data; }

static uint8_t alpha_of(double opacity) { return (uint8_t)(opacity * 255.0 + 0.5); }

static void update_paints(text_filter *t) {
    t->fill = rfx_text_paint_from_rgb(t->rgb[0], t->rgb[1], t->rgb[2], t->full_range, alpha_of(t->opacity));
    t->outline = rfx_text_paint_from_rgb(t->outline_rgb[0], t->outline_rgb[1], t->outline_rgb[2], t->full_range,
                                         alpha_of(t->opacity));
    t->box = rfx_text_paint_from_rgb(t->box_rgb[0], t->box_rgb[1], t->box_rgb[2], t->full_range,
                                     alpha_of(t->box_opacity));
}

/* [process or control] staged -> shared; then ask for on_callback. Real-time. */
static void publish_request(text_filter *t) {
    uint32_t s = atomic_load_explicit(&t->sequence, memory_order_relaxed);
    atomic_store_explicit(&t->sequence, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t i = 0; i < REQUEST_WORDS; i++)
        atomic_store_explicit(&t->shared[i], t->staged.words[i], memory_order_relaxed);
    atomic_store_explicit(&t->sequence, s + 2, memory_order_release);
    if (atomic_load_explicit(&t->configured, memory_order_acquire) && t->base.host != NULL)
        t->base.host->request_callback(t->base.host);
}

/* [control] shared -> snapshot; returns the sequence read. */
static uint32_t read_request(text_filter *t) {
    for (;;) {
        uint32_t s1 = atomic_load_explicit(&t->sequence, memory_order_acquire);
        if (s1 & 1u) continue;
        for (size_t i = 0; i < REQUEST_WORDS; i++)
            t->snapshot.words[i] = atomic_load_explicit(&t->shared[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&t->sequence, memory_order_relaxed) == s1) return s1;
    }
}

static rawfx_status set_color(text_filter *t, uint8_t rgb[3], const char *id, const char *value) {
    uint8_t parsed[3];
    if (rfx_text_parse_color(value, parsed) != 0)
        return rawfx_fail(&t->base, RAWFX_ERR_INVALID_ARGUMENT, "%s=%s is not a colour; accepted: #rrggbb, r,g,b "
                          "(0-255 each) or white, black, red, green, blue, yellow, cyan, magenta, gray, orange",
                          id, value != NULL ? value : "(null)");
    memcpy(rgb, parsed, 3);
    update_paints(t);
    return RAWFX_OK;
}

static rawfx_status text_set_param(const rawfx_filter *f, uint32_t index, const rawfx_param_value *v) {
    text_filter *t = text_of(f);
    rawfx_status status = rawfx_check_param(&t->base, index, v);
    if (status != RAWFX_OK) return status;
    text_request *r = &t->staged.r;
    int32_t i = (int32_t)v->int_value;
    switch (index) {
    case P_TEXT: {
        const char *s = v->string_value != NULL ? v->string_value : "";
        size_t n = strlen(s);
        if (n > RFX_TEXT_MAX_BYTES)
            return rawfx_fail(&t->base, RAWFX_ERR_INVALID_ARGUMENT, "text is %zu bytes of UTF-8; the limit is %u "
                              "bytes: shorten the caption", n, (unsigned)RFX_TEXT_MAX_BYTES);
        memcpy(r->text, s, n);
        memset(r->text + n, 0, sizeof r->text - n);
        r->length = (uint32_t)n;
        break;
    }
    case P_FONT: {
        const char *s = v->string_value != NULL ? v->string_value : "";
        size_t n = strlen(s);
        if (n >= sizeof t->font)
            return rawfx_fail(&t->base, RAWFX_ERR_INVALID_ARGUMENT, "font: the path is %zu bytes; the limit is %zu",
                              n, sizeof t->font - 1);
        memcpy(t->font, s, n + 1);
        return RAWFX_OK;
    }
    case P_SIZE: r->size = i; break;
    case P_COLOR: return set_color(t, t->rgb, "color", v->string_value);
    case P_OPACITY: t->opacity = v->float_value; update_paints(t); return RAWFX_OK;
    case P_OUTLINE: r->outline = i; break;
    case P_OUTLINE_COLOR: return set_color(t, t->outline_rgb, "outline_color", v->string_value);
    case P_BOX: r->box = i; break;
    case P_BOX_COLOR: return set_color(t, t->box_rgb, "box_color", v->string_value);
    case P_BOX_OPACITY: t->box_opacity = v->float_value; update_paints(t); return RAWFX_OK;
    case P_PADDING: r->padding = i; break;
    case P_ANCHOR: r->anchor = i; break;
    case P_X: r->x = i; break;
    case P_Y: r->y = i; break;
    case P_MARGIN: r->margin = i; break;
    case P_MAX_WIDTH:
        r->max_width_px = v->float_value > 1.0 ? (int32_t)(v->float_value + 0.5) : 0;
        r->max_width_fraction = v->float_value > 0.0 && v->float_value <= 1.0 ? (int32_t)(v->float_value * 65536.0 + 0.5) : 0;
        break;
    case P_MAX_LINES: r->max_lines = i; break;
    default: return RAWFX_OK;
    }
    publish_request(t);
    return RAWFX_OK;
}

/* [control] Lays out and renders the current request into the back mask and
 * publishes it. */
static void render_current(text_filter *t, int force) {
    uint32_t sequence = read_request(t);
    if (!force && sequence == t->rendered_sequence) return;
    const text_request *r = &t->snapshot.r;
    int32_t column = r->anchor % 3, row = r->anchor / 3;
    int32_t max_width = r->max_width_px > 0 ? r->max_width_px
        : r->max_width_fraction > 0 ? (int32_t)(((int64_t)t->width * r->max_width_fraction + 32768) >> 16)
        : t->width - 2 * r->margin;
    if (max_width <= 0) max_width = t->width;
    int32_t align = column == 0 ? RFX_TEXT_ALIGN_LEFT : column == 1 ? RFX_TEXT_ALIGN_CENTER : RFX_TEXT_ALIGN_RIGHT;
    rfx_text_layout_run(t->engine, r->text, r->length, r->size, max_width, r->max_lines, align, t->layout);
    const rfx_text_layout_info l = rfx_text_layout_get_info(t->layout);
    int32_t ox = column == 0 ? r->margin : column == 1 ? (t->width - l.width) / 2 : t->width - r->margin - l.width;
    int32_t oy = row == 0 ? r->margin : row == 1 ? (t->height - l.height) / 2 : t->height - r->margin - l.height;
    ox += r->x;
    oy += r->y;
    rfx_text_mask *m = &t->masks[t->back];
    if (rfx_text_render(t->engine, t->layout, r->size, ox, oy, t->width, t->height, r->outline, r->box ? r->padding : -1, m) != 0)
        rawfx_log(&t->base, RAWFX_LOG_WARNING, "FreeType could not render every glyph of the caption");
    if (l.skipped > 0)
        rawfx_log(&t->base, RAWFX_LOG_DEBUG, "%u characters left out: no font has them", (unsigned)l.skipped);
    t->back = atomic_exchange_explicit(&t->middle, t->back | FRESH, memory_order_acq_rel) & 3u;
    t->rendered_sequence = sequence;
    atomic_store_explicit(&t->published, sequence, memory_order_release);
}

static void text_on_callback(const rawfx_filter *f) {
    text_filter *t = text_of(f);
    if (!atomic_load_explicit(&t->configured, memory_order_acquire) || t->engine == NULL) return;
    render_current(t, 0);
}

static void free_masks(text_filter *t) {
    for (int i = 0; i < 3; i++) {
        free(t->masks[i].fill);
        free(t->masks[i].outline);
        memset(&t->masks[i], 0, sizeof t->masks[i]);
    }
}

static rawfx_status text_configure(const rawfx_filter *f, const rawfx_format *input, rawfx_negotiation *result) {
    text_filter *t = text_of(f);
    rawfx_clear_error(&t->base);
    rawfx_status status = rawfx_check_video_input(&t->base, input, 16384);
    if (status != RAWFX_OK) return status;
    status = rawfx_check_negotiation(&t->base, result);
    if (status != RAWFX_OK) return status;
    atomic_store_explicit(&t->configured, 0, memory_order_release);
    free_masks(t);
    rfx_text_engine_free(t->engine);
    t->engine = NULL;
    char error[RAWFX_HELPER_ERROR_CAPACITY];
    t->engine = rfx_text_engine_new(t->font, error, sizeof error);
    if (t->engine == NULL) return rawfx_fail(&t->base, RAWFX_ERR_UNSUPPORTED, "%s", error);
    if (t->layout == NULL) t->layout = rfx_text_layout_new();
    t->width = (int32_t)input->video.width;
    t->height = (int32_t)input->video.height;
    size_t bytes = (size_t)t->width * (size_t)t->height;
    for (int i = 0; i < 3; i++) {
        t->masks[i].fill = calloc(bytes, 1);
        t->masks[i].outline = calloc(bytes, 1);
        t->masks[i].capacity = bytes;
        if (t->masks[i].fill == NULL || t->masks[i].outline == NULL || t->layout == NULL) {
            free_masks(t);
            return rawfx_fail(&t->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for three %dx%d coverage masks",
                              (int)t->width, (int)t->height);
        }
    }
    t->back = 0;
    atomic_store_explicit(&t->middle, 1, memory_order_relaxed);
    t->front = 2;
    t->full_range = input->video.color_range == RAWFX_RANGE_FULL;
    t->render = t->base.host != NULL
        ? (const rawfx_host_render_mode *)t->base.host->get_extension(t->base.host, RAWFX_EXT_RENDER_MODE) : NULL;
    if (t->render != NULL && (t->render->struct_size < sizeof *t->render || t->render->mode == NULL)) t->render = NULL;
    update_paints(t);
    render_current(t, 1);
    atomic_store_explicit(&t->configured, 1, memory_order_release);
    return RAWFX_OK;
}

static rawfx_status text_process(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    (void)in; /* in place: out == in */
    text_filter *t = text_of(f);
    if (!rawfx_video_frame_is_complete(out))
        return rawfx_fail(&t->base, RAWFX_ERR_INVALID_ARGUMENT, "the frame is incomplete (struct_size too small)");
    if ((int32_t)out->width != t->width || (int32_t)out->height != t->height)
        return rawfx_fail(&t->base, RAWFX_ERR_INVALID_ARGUMENT, "the frame is %ux%u; configured for %dx%d",
                          (unsigned)out->width, (unsigned)out->height, (int)t->width, (int)t->height);
    if (t->render != NULL && t->render->mode(t->base.host) == RAWFX_RENDER_OFFLINE) {
        /* Offline: wait (at most 2 s, for a host whose callbacks never come) for the layout of
         * every change made so far. */
        const uint32_t wanted = atomic_load_explicit(&t->sequence, memory_order_acquire) & ~1u;
        for (int waited = 0; (int32_t)(atomic_load_explicit(&t->published, memory_order_acquire) - wanted) < 0 && waited < 10000;
             waited++) {
            const struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
        }
    }
    if (atomic_load_explicit(&t->middle, memory_order_relaxed) & FRESH)
        t->front = atomic_exchange_explicit(&t->middle, t->front, memory_order_acq_rel) & 3u;
    rfx_text_blend_i420(&t->masks[t->front], out->planes, out->strides, t->width, t->height, t->fill, t->outline,
                        t->box);
    return RAWFX_OK;
}

static void text_reset(const rawfx_filter *f) { (void)f; /* no history: the caption stays */ }

static void text_destroy(const rawfx_filter *f) {
    text_filter *t = text_of(f);
    free_masks(t);
    rfx_text_engine_free(t->engine);
    rfx_text_layout_free(t->layout);
    rawfx_instance_free(&t->base);
}

static const rawfx_filter text_functions = RAWFX_FILTER_FUNCTIONS(
    text_destroy, text_set_param, text_configure, text_process, NULL, text_reset, NULL, text_on_callback);

static const rawfx_filter *text_create(const rawfx_filter_descriptor *d, const rawfx_host *host, char *error,
                                       size_t capacity) {
    text_filter *t = (text_filter *)rawfx_instance_new(sizeof *t, d, host, &text_functions, error, capacity);
    if (t == NULL) return NULL;
    t->staged.r.max_lines = 2;
    return rawfx_instance_ready(&t->base, error, capacity);
}

RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_text_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "text", "Text", "1.0.0",
    "Draws a caption or a label (UTF-8, any script: HarfBuzz shaping, font fallback) on the video, with an "
    "outline or a box, wrapped and anchored.",
    RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, text_params, text_create);

RAWFX_PLUGIN_ENTRY("rawfx-text", "1.0.0", &rfx_text_descriptor)

/*
 * The `text` filter's kernels (Plugins/Text): fonts, shaping, wrapping and the
 * coverage masks, over FreeType and HarfBuzz. Linked into libRawFXText.so and into
 * RawFXTextTests, which check the layout against hb_shape and the masks against
 * FreeType's own rendering.
 *
 * Threads: an engine is used by one thread at a time (the plugin's control thread:
 * configure and on_callback). Layout and rendering allocate (HarfBuzz buffers,
 * FreeType glyph slots): never on the process thread. rfx_text_blend_i420 allocates
 * nothing and takes no lock: the process thread's part.
 */
#ifndef RAWFX_TEXT_KERNELS_H
#define RAWFX_TEXT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest caption, in bytes of UTF-8 (the NUL not counted). */
#define RFX_TEXT_MAX_BYTES 1023
/* Fonts an engine holds: the primary and its fallbacks. */
#define RFX_TEXT_MAX_FONTS 12
/* Glyphs a layout holds; more are dropped (1023 bytes never shape to more). */
#define RFX_TEXT_MAX_GLYPHS 2048
/* Lines a layout holds (max_lines is at most this). */
#define RFX_TEXT_MAX_LINES 64

/* The primary fonts searched when none is given, in order. */
extern const char *const rfx_text_default_fonts[];
extern const uint32_t rfx_text_default_font_count;
/* The fallback fonts: tried, in order, for characters the primary font lacks. */
extern const char *const rfx_text_fallback_fonts[];
extern const uint32_t rfx_text_fallback_font_count;

typedef struct rfx_text_engine rfx_text_engine;

/* [control] Opens the primary font (`font_path`, or the first of
 * rfx_text_default_fonts that opens when NULL or "") and every fallback font that
 * exists. NULL with a message in `error` when no primary font opens. */
rfx_text_engine *rfx_text_engine_new(const char *font_path, char *error, size_t error_capacity);
void rfx_text_engine_free(rfx_text_engine *engine);
uint32_t rfx_text_engine_font_count(const rfx_text_engine *engine);
/* The path of font `index` (0: the primary). */
const char *rfx_text_engine_font_path(const rfx_text_engine *engine, uint32_t index);

/* One positioned glyph. x and y are 26.6 fixed point, in the text block: x from
 * the block's left edge to the glyph origin (HarfBuzz's pen position plus its
 * x_offset), y from the block's top edge down to the glyph origin (the line's
 * baseline minus HarfBuzz's y_offset). */
typedef struct rfx_text_glyph {
    uint32_t glyph_id;
    uint32_t font;     /* index into the engine's fonts */
    uint32_t line;
    int32_t x, y;
} rfx_text_glyph;

/* A layout: opaque (its arrays are large), read through the functions below. */
typedef struct rfx_text_layout rfx_text_layout;

typedef struct rfx_text_layout_info {
    uint32_t glyph_count;
    uint32_t line_count;
    int32_t width, height;      /* the block in pixels: widest line, lines * line height */
    int32_t ascender;           /* pixels from a line's top to its baseline (primary font) */
    int32_t line_height;        /* pixels */
    uint32_t skipped;           /* characters no font has: left out, no .notdef box */
    int32_t ellipsized;         /* 1 when text was cut and "…" added */
    int32_t rtl;                /* 1 when the first line runs right to left */
} rfx_text_layout_info;

/* [control] A layout's storage (about 50 kB), or NULL. */
rfx_text_layout *rfx_text_layout_new(void);
void rfx_text_layout_free(rfx_text_layout *layout);
rfx_text_layout_info rfx_text_layout_get_info(const rfx_text_layout *layout);
/* Glyph `index` (< glyph_count), in visual order line by line. */
rfx_text_glyph rfx_text_layout_glyph(const rfx_text_layout *layout, uint32_t index);
/* The advance width of line `line` (< line_count), in pixels. */
int32_t rfx_text_layout_line_width(const rfx_text_layout *layout, uint32_t line);

enum { RFX_TEXT_ALIGN_LEFT = 0, RFX_TEXT_ALIGN_CENTER = 1, RFX_TEXT_ALIGN_RIGHT = 2 };

/* [control] Shapes `utf8` (`length` bytes; invalid bytes are skipped) at `size_px`
 * pixels: one line per '\n', wrapped at spaces to `max_width` pixels (0: no
 * wrapping), at most `max_lines` lines, the last cut with "…" when text is left
 * over or a line is wider than max_width. Lines are aligned within the block by
 * `align`. Each run of one font and one script is shaped by HarfBuzz with the
 * direction and script hb_buffer_guess_segment_properties gives; a line whose
 * first run is right to left places its runs right to left. Returns 0, or -1
 * (out of memory, or a FreeType error). */
int rfx_text_layout_run(rfx_text_engine *engine, const char *utf8, size_t length, int32_t size_px,
                        int32_t max_width, int32_t max_lines, int32_t align, rfx_text_layout *layout);

/* The coverage a caption leaves in frame coordinates: `fill` (the glyphs) and
 * `outline` (FreeType's stroker around them), each `w` x `h` bytes, row stride
 * `w`, placed at (x, y) in the frame and already clipped to it. The box (when
 * has_box) is the rectangle [box_x0, box_x1) x [box_y0, box_y1), clipped. */
typedef struct rfx_text_mask {
    uint8_t *fill;
    uint8_t *outline;
    size_t capacity;            /* bytes of each plane */
    int32_t x, y, w, h;
    int32_t has_outline;
    int32_t has_box;
    int32_t box_x0, box_y0, box_x1, box_y1;
} rfx_text_mask;

/* [control] Renders `layout` with its block's top-left corner at (origin_x,
 * origin_y) of a frame_width x frame_height frame into `mask`, whose planes hold
 * `capacity` bytes each (frame_width * frame_height is always enough). Each
 * glyph: FT_Load_Glyph (FT_LOAD_DEFAULT), FT_Render_Glyph (FT_RENDER_MODE_NORMAL),
 * its bitmap's top-left at (origin_x + round(x) + bitmap_left, origin_y + round(y)
 * - bitmap_top), where round(v) = (v + 32) >> 6; overlapping glyphs keep the
 * larger coverage. outline_px > 0 adds the stroked glyphs (FT_Stroker, round
 * joins) in `outline`. box_padding >= 0 adds the box: the block grown by the
 * padding on every side. Returns 0, or -1 (a FreeType error). */
int rfx_text_render(rfx_text_engine *engine, const rfx_text_layout *layout, int32_t size_px,
                    int32_t origin_x, int32_t origin_y, int32_t frame_width, int32_t frame_height,
                    int32_t outline_px, int32_t box_padding, rfx_text_mask *mask);

/* One colour's I420 values and opacity (0..255). */
typedef struct rfx_text_paint {
    uint8_t y, u, v, alpha;
} rfx_text_paint;

/* [process] Blends `mask` into an I420 frame (any strides): the box first, then
 * the outline, then the fill. Each layer, luma: Y' = (Y*(255-a) + C*a + 127) / 255
 * with a = (coverage * alpha + 127) / 255; chroma: the same with the coverage
 * of the 2x2 luma samples (their sum + 2) / 4. No allocation, no lock. */
void rfx_text_blend_i420(const rfx_text_mask *mask, uint8_t *const planes[3], const int32_t strides[3],
                         int32_t width, int32_t height, rfx_text_paint fill, rfx_text_paint outline,
                         rfx_text_paint box);

/* sRGB to BT.601 Y'CbCr, limited (16-235/240) or full range, rounded to nearest:
 * the conversion RawFXCompose's YUVColor uses. */
rfx_text_paint rfx_text_paint_from_rgb(uint8_t red, uint8_t green, uint8_t blue, int full_range, uint8_t alpha);

/* Parses a colour: "#rrggbb", "rrggbb", "r,g,b" (0-255 each) or a name (white,
 * black, red, green, blue, yellow, cyan, magenta, gray, orange). 0, or -1. No
 * allocation. */
int rfx_text_parse_color(const char *text, uint8_t rgb[3]);

#ifdef __cplusplus
}
#endif

#endif

/*
 * The `text` filter's kernels: see include/text_kernels.h.
 *
 * Layout: the UTF-8 is decoded into code points; each takes the first font (the
 * primary, then the fallbacks) that maps it to a glyph; white space, controls,
 * marks and joiners keep the font of the character before them; a character no
 * font has is left out (counted in `skipped`), so no .notdef box is drawn. A line
 * is cut into runs of one font and one script (Common and Inherited characters
 * join the run they sit in), each shaped by hb_shape after
 * hb_buffer_guess_segment_properties, so Arabic runs right to left with its joined
 * forms. A line whose first strong run is right to left lays its runs out from the
 * right (a simple bidi: runs, not the full Unicode algorithm).
 */
#include "text_kernels.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_GLYPH_H
#include FT_STROKER_H
#include <hb.h>
#include <hb-ft.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const rfx_text_default_fonts[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
};
const uint32_t rfx_text_default_font_count = sizeof rfx_text_default_fonts / sizeof rfx_text_default_fonts[0];

const char *const rfx_text_fallback_fonts[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSansArabic-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSansHebrew-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSansThai-Regular.ttf",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
};
const uint32_t rfx_text_fallback_font_count = sizeof rfx_text_fallback_fonts / sizeof rfx_text_fallback_fonts[0];

struct rfx_text_layout {
    uint32_t glyph_count;
    uint32_t line_count;
    int32_t width, height;      /* the block in pixels: widest line, lines * line height */
    int32_t ascender;           /* pixels from a line's top to its baseline (primary font) */
    int32_t line_height;        /* pixels */
    int32_t line_width[RFX_TEXT_MAX_LINES]; /* pixels (advances) */
    uint32_t skipped;           /* characters no font has: left out, no .notdef box */
    int32_t ellipsized;         /* 1 when text was cut and "…" added */
    int32_t rtl;                /* 1 when the first paragraph runs right to left */
    rfx_text_glyph glyphs[RFX_TEXT_MAX_GLYPHS];
};

rfx_text_layout *rfx_text_layout_new(void) { return calloc(1, sizeof(rfx_text_layout)); }
void rfx_text_layout_free(rfx_text_layout *l) { free(l); }
rfx_text_layout_info rfx_text_layout_get_info(const rfx_text_layout *l) {
    rfx_text_layout_info i = {l->glyph_count, l->line_count, l->width, l->height, l->ascender, l->line_height,
                              l->skipped, l->ellipsized, l->rtl};
    return i;
}
rfx_text_glyph rfx_text_layout_glyph(const rfx_text_layout *l, uint32_t index) {
    rfx_text_glyph none = {0, 0, 0, 0, 0};
    return index < l->glyph_count ? l->glyphs[index] : none;
}
int32_t rfx_text_layout_line_width(const rfx_text_layout *l, uint32_t line) {
    return line < l->line_count ? l->line_width[line] : 0;
}

typedef struct rfx_text_run {
    size_t start, length;
    uint32_t font;
} rfx_text_run;

typedef struct rfx_font {
    FT_Face face;
    hb_font_t *hb;
    char path[512];
} rfx_font;

struct rfx_text_engine {
    FT_Library library;
    FT_Stroker stroker;
    hb_buffer_t *buffer;
    uint32_t font_count;
    int32_t size_px;
    rfx_font fonts[RFX_TEXT_MAX_FONTS];
    /* Scratch for one layout (control thread). */
    uint32_t cps[RFX_TEXT_MAX_BYTES + 8];
    uint8_t font_of[RFX_TEXT_MAX_BYTES + 8];
    uint32_t line_cps[RFX_TEXT_MAX_BYTES + 8];
    uint8_t line_font[RFX_TEXT_MAX_BYTES + 8];
    rfx_text_glyph line_glyphs[RFX_TEXT_MAX_GLYPHS];
    rfx_text_run runs[RFX_TEXT_MAX_BYTES + 8];
    size_t run_glyph_start[RFX_TEXT_MAX_BYTES + 8];
    int64_t run_width[RFX_TEXT_MAX_BYTES + 8];
};

static int open_font(rfx_text_engine *e, const char *path) {
    if (e->font_count >= RFX_TEXT_MAX_FONTS) return -1;
    for (uint32_t i = 0; i < e->font_count; i++)
        if (strcmp(e->fonts[i].path, path) == 0) return 0;
    FT_Face face;
    if (FT_New_Face(e->library, path, 0, &face) != 0) return -1;
    rfx_font *f = &e->fonts[e->font_count];
    f->face = face;
    f->hb = hb_ft_font_create_referenced(face);
    snprintf(f->path, sizeof f->path, "%s", path);
    e->font_count++;
    return 0;
}

rfx_text_engine *rfx_text_engine_new(const char *font_path, char *error, size_t error_capacity) {
    rfx_text_engine *e = calloc(1, sizeof *e);
    if (e == NULL) {
        if (error) snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    if (FT_Init_FreeType(&e->library) != 0) {
        if (error) snprintf(error, error_capacity, "FreeType did not initialise");
        free(e);
        return NULL;
    }
    if (font_path != NULL && font_path[0] != '\0') {
        if (open_font(e, font_path) != 0) {
            if (error) snprintf(error, error_capacity, "font %s does not open (FreeType reads TrueType, OpenType, "
                                "TTC and Type 1 files)", font_path);
            rfx_text_engine_free(e);
            return NULL;
        }
    } else {
        for (uint32_t i = 0; i < rfx_text_default_font_count && e->font_count == 0; i++)
            open_font(e, rfx_text_default_fonts[i]);
        if (e->font_count == 0) {
            if (error) snprintf(error, error_capacity, "no default font found (tried %s, %s, %s, %s); install "
                                "fonts-dejavu-core or set font=PATH", rfx_text_default_fonts[0],
                                rfx_text_default_fonts[1], rfx_text_default_fonts[2], rfx_text_default_fonts[3]);
            rfx_text_engine_free(e);
            return NULL;
        }
    }
    for (uint32_t i = 0; i < rfx_text_fallback_font_count; i++)
        if (access(rfx_text_fallback_fonts[i], R_OK) == 0) open_font(e, rfx_text_fallback_fonts[i]);
    e->buffer = hb_buffer_create();
    FT_Stroker_New(e->library, &e->stroker);
    if (!hb_buffer_allocation_successful(e->buffer) || e->stroker == NULL) {
        if (error) snprintf(error, error_capacity, "out of memory");
        rfx_text_engine_free(e);
        return NULL;
    }
    return e;
}

void rfx_text_engine_free(rfx_text_engine *e) {
    if (e == NULL) return;
    for (uint32_t i = 0; i < e->font_count; i++) hb_font_destroy(e->fonts[i].hb); /* drops the face too */
    if (e->buffer) hb_buffer_destroy(e->buffer);
    if (e->stroker) FT_Stroker_Done(e->stroker);
    FT_Done_FreeType(e->library);
    free(e);
}

uint32_t rfx_text_engine_font_count(const rfx_text_engine *e) { return e->font_count; }
const char *rfx_text_engine_font_path(const rfx_text_engine *e, uint32_t i) {
    return i < e->font_count ? e->fonts[i].path : NULL;
}

static void set_size(rfx_text_engine *e, int32_t size_px) {
    if (e->size_px == size_px) return;
    for (uint32_t i = 0; i < e->font_count; i++) {
        FT_Face face = e->fonts[i].face;
        if (FT_IS_SCALABLE(face)) FT_Set_Pixel_Sizes(face, 0, (FT_UInt)size_px);
        else if (face->num_fixed_sizes > 0) FT_Select_Size(face, 0);
        hb_ft_font_changed(e->fonts[i].hb);
    }
    e->size_px = size_px;
}

/* ------------------------------------------------------------- decoding -- */

static size_t decode_utf8(const char *s, size_t n, uint32_t *out, size_t capacity) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, count = 0;
    while (i < n && count < capacity) {
        unsigned c = p[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) { cp = c; len = 1; }
        else if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; len = 2; }
        else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; len = 3; }
        else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; len = 4; }
        else { i++; continue; }
        if (i + len > n) break;
        int ok = 1;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) { ok = 0; break; }
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (!ok) { i++; continue; }
        i += len;
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF
            || (cp >= 0xD800 && cp <= 0xDFFF))
            continue;
        out[count++] = cp;
    }
    return count;
}

/* Characters that keep the font of the one before them. */
static int inherits_font(uint32_t cp) {
    if (cp == ' ' || cp == '\t' || cp < 0x20 || cp == 0x200C || cp == 0x200D || cp == 0xA0) return 1;
    hb_unicode_general_category_t c = hb_unicode_general_category(hb_unicode_funcs_get_default(), cp);
    return c == HB_UNICODE_GENERAL_CATEGORY_NON_SPACING_MARK || c == HB_UNICODE_GENERAL_CATEGORY_SPACING_MARK
        || c == HB_UNICODE_GENERAL_CATEGORY_ENCLOSING_MARK || c == HB_UNICODE_GENERAL_CATEGORY_FORMAT;
}

static int font_for(const rfx_text_engine *e, uint32_t cp) {
    for (uint32_t i = 0; i < e->font_count; i++)
        if (FT_Get_Char_Index(e->fonts[i].face, cp) != 0) return (int)i;
    return -1;
}

/* ------------------------------------------------------------- shaping -- */

/* Shapes line_cps[0..n) into line_glyphs (x from the line start, y = -y_offset, 26.6);
 * returns the advance width in 26.6, and the glyph count in *count. *rtl: 1 when the
 * first strong run is right to left. */
static int64_t shape_line(rfx_text_engine *e, size_t n, uint32_t *count, int *rtl) {
    hb_unicode_funcs_t *uf = hb_unicode_funcs_get_default();
    rfx_text_run *runs = e->runs;
    size_t run_count = 0;
    hb_script_t run_script = HB_SCRIPT_COMMON;
    for (size_t i = 0; i < n; i++) {
        hb_script_t s = hb_unicode_script(uf, e->line_cps[i]);
        int weak = s == HB_SCRIPT_COMMON || s == HB_SCRIPT_INHERITED || s == HB_SCRIPT_UNKNOWN;
        int new_run = run_count == 0 || e->line_font[i] != runs[run_count - 1].font
            || (!weak && run_script != HB_SCRIPT_COMMON && s != run_script);
        if (new_run) {
            runs[run_count].start = i;
            runs[run_count].length = 0;
            runs[run_count].font = e->line_font[i];
            run_count++;
            run_script = weak ? HB_SCRIPT_COMMON : s;
        } else if (!weak && run_script == HB_SCRIPT_COMMON) {
            run_script = s;
        }
        runs[run_count - 1].length++;
    }
    /* Shape each run, keep its glyphs with x relative to the run, then place the runs. */
    size_t *glyph_start = e->run_glyph_start;
    int64_t *run_width = e->run_width;
    uint32_t total = 0;
    int first_dir = 0; /* 0 unknown, 1 ltr, 2 rtl */
    for (size_t r = 0; r < run_count; r++) {
        hb_buffer_clear_contents(e->buffer);
        hb_buffer_add_utf32(e->buffer, e->line_cps, (int)n, (unsigned)runs[r].start, (int)runs[r].length);
        hb_buffer_guess_segment_properties(e->buffer);
        hb_direction_t dir = hb_buffer_get_direction(e->buffer);
        hb_script_t script = hb_buffer_get_script(e->buffer);
        if (first_dir == 0 && script != HB_SCRIPT_COMMON && script != HB_SCRIPT_INHERITED && script != HB_SCRIPT_UNKNOWN)
            first_dir = dir == HB_DIRECTION_RTL ? 2 : 1;
        hb_shape(e->fonts[runs[r].font].hb, e->buffer, NULL, 0);
        unsigned gn = 0;
        hb_glyph_info_t *info = hb_buffer_get_glyph_infos(e->buffer, &gn);
        hb_glyph_position_t *pos = hb_buffer_get_glyph_positions(e->buffer, NULL);
        glyph_start[r] = total;
        int64_t pen = 0;
        for (unsigned g = 0; g < gn; g++) {
            if (total < RFX_TEXT_MAX_GLYPHS) {
                rfx_text_glyph *out = &e->line_glyphs[total++];
                out->glyph_id = info[g].codepoint;
                out->font = runs[r].font;
                out->line = 0;
                out->x = (int32_t)(pen + pos[g].x_offset);
                out->y = -pos[g].y_offset;
            }
            pen += pos[g].x_advance;
        }
        run_width[r] = pen;
    }
    *rtl = first_dir == 2;
    /* Place runs: logical order from the left, or from the right for a right-to-left line. */
    int64_t x = 0;
    for (size_t k = 0; k < run_count; k++) {
        size_t r = *rtl ? run_count - 1 - k : k;
        size_t end = r + 1 < run_count ? glyph_start[r + 1] : total;
        for (size_t g = glyph_start[r]; g < end; g++) e->line_glyphs[g].x += (int32_t)x;
        x += run_width[r];
    }
    *count = total;
    return x;
}

static int64_t shape_range(rfx_text_engine *e, size_t a, size_t b, int ellipsis, uint32_t *count, int *rtl) {
    size_t n = 0;
    for (size_t i = a; i < b; i++) {
        e->line_cps[n] = e->cps[i];
        e->line_font[n] = e->font_of[i];
        n++;
    }
    if (ellipsis) {
        int f = font_for(e, 0x2026);
        e->line_cps[n] = f >= 0 ? 0x2026 : '.';
        e->line_font[n] = (uint8_t)(f >= 0 ? f : (n > 0 ? e->line_font[n - 1] : 0));
        n++;
        if (f < 0) { /* "..." when no font has the ellipsis */
            e->line_cps[n] = '.'; e->line_font[n] = e->line_font[n - 1]; n++;
            e->line_cps[n] = '.'; e->line_font[n] = e->line_font[n - 1]; n++;
        }
    }
    return shape_line(e, n, count, rtl);
}

static int is_space(uint32_t cp) { return cp == ' ' || cp == '\t' || cp == 0x3000; }

/* Appends the shaped line [a, b) (+ ellipsis) to the layout. */
static void emit_line(rfx_text_engine *e, rfx_text_layout *l, size_t a, size_t b, int ellipsis) {
    uint32_t count = 0;
    int rtl = 0;
    int64_t w = shape_range(e, a, b, ellipsis, &count, &rtl);
    if (l->line_count == 0) l->rtl = rtl;
    uint32_t line = l->line_count++;
    l->line_width[line] = (int32_t)((w + 63) >> 6);
    for (uint32_t g = 0; g < count && l->glyph_count < RFX_TEXT_MAX_GLYPHS; g++) {
        rfx_text_glyph glyph = e->line_glyphs[g];
        glyph.line = line;
        l->glyphs[l->glyph_count++] = glyph;
    }
    if (ellipsis) l->ellipsized = 1;
}

static int32_t width_px(rfx_text_engine *e, size_t a, size_t b, int ellipsis) {
    uint32_t count;
    int rtl;
    return (int32_t)((shape_range(e, a, b, ellipsis, &count, &rtl) + 63) >> 6);
}

/* The last line: [a, b) followed by "…", cut from the end (at a space when one
 * fits, else at any character) until it fits in max_width. */
static void emit_ellipsized(rfx_text_engine *e, rfx_text_layout *l, size_t a, size_t b, int32_t max_width) {
    while (b > a && is_space(e->cps[b - 1])) b--;
    if (max_width > 0) {
        while (b > a && width_px(e, a, b, 1) > max_width) {
            b--;
            while (b > a && is_space(e->cps[b - 1])) b--;
        }
    }
    emit_line(e, l, a, b, 1);
}

int rfx_text_layout_run(rfx_text_engine *e, const char *utf8, size_t length, int32_t size_px, int32_t max_width,
                        int32_t max_lines, int32_t align, rfx_text_layout *l) {
    l->glyph_count = 0;
    l->line_count = 0;
    l->width = l->height = 0;
    l->skipped = 0;
    l->ellipsized = 0;
    l->rtl = 0;
    if (size_px < 1) size_px = 1;
    if (max_lines < 1) max_lines = 1;
    if (max_lines > RFX_TEXT_MAX_LINES) max_lines = RFX_TEXT_MAX_LINES;
    if (length > RFX_TEXT_MAX_BYTES) length = RFX_TEXT_MAX_BYTES;
    set_size(e, size_px);
    FT_Size_Metrics *m = &e->fonts[0].face->size->metrics;
    l->ascender = (int32_t)((m->ascender + 63) >> 6);
    int32_t descender = (int32_t)((-m->descender + 63) >> 6);
    l->line_height = (int32_t)((m->height + 63) >> 6);
    if (l->line_height < l->ascender + descender) l->line_height = l->ascender + descender;

    size_t raw = decode_utf8(utf8, length, e->cps, RFX_TEXT_MAX_BYTES + 1);
    /* Fonts; drop what no font has. */
    size_t n = 0;
    int previous = 0;
    for (size_t i = 0; i < raw; i++) {
        uint32_t cp = e->cps[i];
        if (cp == '\r') continue;
        int f;
        if (cp == '\n' || inherits_font(cp)) {
            f = previous;
            if (cp != '\n' && cp != ' ' && cp < 0x20) continue; /* other controls */
        } else {
            f = font_for(e, cp);
            if (f < 0) { l->skipped++; continue; }
        }
        e->cps[n] = cp;
        e->font_of[n] = (uint8_t)f;
        previous = f;
        n++;
    }
    /* A run of white space starting a text or a line takes the next letter's font. */
    for (size_t i = n; i-- > 0;)
        if (e->cps[i] != '\n' && inherits_font(e->cps[i]) && i + 1 < n && e->cps[i + 1] != '\n'
            && (i == 0 || e->cps[i - 1] == '\n' || inherits_font(e->cps[i - 1])))
            e->font_of[i] = e->font_of[i + 1];

    /* Lines: paragraphs at '\n', wrapped greedily at spaces. */
    size_t p = 0;
    while (p <= n && (int32_t)l->line_count < max_lines) {
        size_t end = p;
        while (end < n && e->cps[end] != '\n') end++;
        size_t start = p;
        int last_allowed;
        for (;;) {
            last_allowed = (int32_t)l->line_count == max_lines - 1;
            size_t fit = start, scan = start;
            if (max_width > 0) {
                /* The longest [start, word end) that fits. */
                size_t best = (size_t)-1;
                while (scan <= end) {
                    size_t word_end = scan;
                    while (word_end < end && !is_space(e->cps[word_end])) word_end++;
                    if (word_end > start && width_px(e, start, word_end, 0) > max_width) break;
                    best = word_end;
                    if (word_end >= end) break;
                    scan = word_end + 1;
                }
                fit = best;
                if (best == (size_t)-1) { /* the first word alone is too wide: it is cut with "…" */
                    size_t word_end = start;
                    while (word_end < end && !is_space(e->cps[word_end])) word_end++;
                    fit = word_end;
                }
            } else {
                fit = end;
            }
            size_t next = fit;
            while (next < end && is_space(e->cps[next])) next++;
            int more = next < end || end < n;
            int too_wide = max_width > 0 && width_px(e, start, fit, 0) > max_width;
            if (last_allowed && (more || too_wide)) {
                emit_ellipsized(e, l, start, fit, max_width);
                break;
            }
            if (too_wide) emit_ellipsized(e, l, start, fit, max_width);
            else emit_line(e, l, start, fit, 0);
            if (next >= end || (int32_t)l->line_count >= max_lines) break;
            start = next;
        }
        if (end >= n) break;
        p = end + 1;
    }
    int32_t widest = 0;
    for (uint32_t i = 0; i < l->line_count; i++) if (l->line_width[i] > widest) widest = l->line_width[i];
    l->width = widest;
    l->height = (int32_t)l->line_count * l->line_height;
    /* Align the lines in the block and put each on its baseline. */
    for (uint32_t g = 0; g < l->glyph_count; g++) {
        rfx_text_glyph *glyph = &l->glyphs[g];
        int32_t slack = widest - l->line_width[glyph->line];
        int32_t shift = align == RFX_TEXT_ALIGN_CENTER ? slack / 2 : align == RFX_TEXT_ALIGN_RIGHT ? slack : 0;
        glyph->x += shift * 64;
        glyph->y += (l->ascender + (int32_t)glyph->line * l->line_height) * 64;
    }
    return 0;
}

/* ------------------------------------------------------------ rendering -- */

static int32_t round26(int32_t v) { return (v + 32) >> 6; }

static void blit_max(rfx_text_mask *m, uint8_t *plane, const FT_Bitmap *b, int32_t left, int32_t top) {
    for (unsigned r = 0; r < b->rows; r++) {
        int32_t y = top + (int32_t)r - m->y;
        if (y < 0 || y >= m->h) continue;
        const uint8_t *src = b->buffer + (ptrdiff_t)r * b->pitch;
        uint8_t *dst = plane + (size_t)y * (size_t)m->w;
        for (unsigned c = 0; c < b->width; c++) {
            int32_t x = left + (int32_t)c - m->x;
            if (x < 0 || x >= m->w) continue;
            if (src[c] > dst[x]) dst[x] = src[c];
        }
    }
}

static int32_t clampi(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

int rfx_text_render(rfx_text_engine *e, const rfx_text_layout *l, int32_t size_px, int32_t ox, int32_t oy,
                    int32_t fw, int32_t fh, int32_t outline_px, int32_t box_padding, rfx_text_mask *m) {
    set_size(e, size_px < 1 ? 1 : size_px);
    int32_t grow = size_px / 2 + (outline_px > 0 ? outline_px + 1 : 0);
    if (box_padding > grow) grow = box_padding;
    int32_t x0 = clampi(ox - grow, 0, fw), y0 = clampi(oy - grow, 0, fh);
    int32_t x1 = clampi(ox + l->width + grow, 0, fw), y1 = clampi(oy + l->height + grow, 0, fh);
    if (l->glyph_count == 0 && box_padding < 0) x1 = x0, y1 = y0;
    if ((size_t)(x1 - x0) * (size_t)(y1 - y0) > m->capacity) { x1 = x0; y1 = y0; }
    m->x = x0; m->y = y0; m->w = x1 - x0; m->h = y1 - y0;
    m->has_outline = outline_px > 0;
    m->has_box = box_padding >= 0 && l->glyph_count > 0;
    m->box_x0 = clampi(ox - box_padding, 0, fw);
    m->box_y0 = clampi(oy - box_padding, 0, fh);
    m->box_x1 = clampi(ox + l->width + box_padding, 0, fw);
    m->box_y1 = clampi(oy + l->height + box_padding, 0, fh);
    size_t bytes = (size_t)m->w * (size_t)m->h;
    memset(m->fill, 0, bytes);
    if (m->has_outline) memset(m->outline, 0, bytes);
    if (bytes == 0) return 0;
    if (m->has_outline)
        FT_Stroker_Set(e->stroker, (FT_Fixed)outline_px * 64, FT_STROKER_LINECAP_ROUND, FT_STROKER_LINEJOIN_ROUND, 0);
    int status = 0;
    for (uint32_t i = 0; i < l->glyph_count; i++) {
        const rfx_text_glyph *g = &l->glyphs[i];
        FT_Face face = e->fonts[g->font].face;
        int32_t gx = ox + round26(g->x), gy = oy + round26(g->y);
        if (m->has_outline && FT_Load_Glyph(face, g->glyph_id, FT_LOAD_NO_BITMAP) == 0
            && face->glyph->format == FT_GLYPH_FORMAT_OUTLINE) {
            FT_Glyph glyph;
            if (FT_Get_Glyph(face->glyph, &glyph) == 0) {
                if (FT_Glyph_Stroke(&glyph, e->stroker, 1) == 0
                    && FT_Glyph_To_Bitmap(&glyph, FT_RENDER_MODE_NORMAL, NULL, 1) == 0) {
                    FT_BitmapGlyph bg = (FT_BitmapGlyph)glyph;
                    blit_max(m, m->outline, &bg->bitmap, gx + bg->left, gy - bg->top);
                }
                FT_Done_Glyph(glyph);
            }
        }
        if (FT_Load_Glyph(face, g->glyph_id, FT_LOAD_DEFAULT) != 0) { status = -1; continue; }
        if (face->glyph->format != FT_GLYPH_FORMAT_BITMAP
            && FT_Render_Glyph(face->glyph, FT_RENDER_MODE_NORMAL) != 0) { status = -1; continue; }
        FT_GlyphSlot s = face->glyph;
        if (s->bitmap.pixel_mode != FT_PIXEL_MODE_GRAY) continue; /* colour or mono bitmaps: not drawn */
        blit_max(m, m->fill, &s->bitmap, gx + s->bitmap_left, gy - s->bitmap_top);
    }
    return status;
}

/* -------------------------------------------------------------- blending -- */

static inline uint8_t div255(uint32_t x) { x += 128; return (uint8_t)((x + (x >> 8)) >> 8); }

static inline uint8_t mix(uint8_t base, uint8_t colour, uint32_t a) {
    return div255((uint32_t)base * (255 - a) + (uint32_t)colour * a);
}

static void blend_box(const rfx_text_mask *m, uint8_t *const planes[3], const int32_t strides[3], int32_t width,
                      int32_t height, rfx_text_paint box) {
    if (box.alpha == 0) return;
    for (int32_t y = m->box_y0; y < m->box_y1; y++) {
        uint8_t *row = planes[0] + (ptrdiff_t)y * strides[0];
        for (int32_t x = m->box_x0; x < m->box_x1; x++) row[x] = mix(row[x], box.y, box.alpha);
    }
    int32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
    int32_t cx0 = m->box_x0 / 2, cy0 = m->box_y0 / 2;
    int32_t cx1 = (m->box_x1 + 1) / 2, cy1 = (m->box_y1 + 1) / 2;
    if (cx1 > cw) cx1 = cw;
    if (cy1 > ch) cy1 = ch;
    for (int32_t y = cy0; y < cy1; y++) {
        /* The share of the chroma sample's 2x2 luma samples inside the box. */
        int32_t rows = (2 * y >= m->box_y0 && 2 * y < m->box_y1) + (2 * y + 1 >= m->box_y0 && 2 * y + 1 < m->box_y1);
        uint8_t *u = planes[1] + (ptrdiff_t)y * strides[1];
        uint8_t *v = planes[2] + (ptrdiff_t)y * strides[2];
        for (int32_t x = cx0; x < cx1; x++) {
            int32_t cols = (2 * x >= m->box_x0 && 2 * x < m->box_x1) + (2 * x + 1 >= m->box_x0 && 2 * x + 1 < m->box_x1);
            uint32_t coverage = (uint32_t)(255 * rows * cols + 2) / 4;
            uint32_t a = div255(coverage * box.alpha);
            u[x] = mix(u[x], box.u, a);
            v[x] = mix(v[x], box.v, a);
        }
    }
}

static void blend_plane(const rfx_text_mask *m, const uint8_t *cov, uint8_t *const planes[3], const int32_t strides[3],
                        int32_t width, int32_t height, rfx_text_paint paint) {
    if (paint.alpha == 0) return;
    for (int32_t y = 0; y < m->h; y++) {
        const uint8_t *c = cov + (size_t)y * (size_t)m->w;
        uint8_t *row = planes[0] + (ptrdiff_t)(m->y + y) * strides[0] + m->x;
        for (int32_t x = 0; x < m->w; x++) {
            if (c[x] == 0) continue;
            row[x] = mix(row[x], paint.y, div255((uint32_t)c[x] * paint.alpha));
        }
    }
    int32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
    int32_t cx0 = m->x / 2, cy0 = m->y / 2, cx1 = (m->x + m->w + 1) / 2, cy1 = (m->y + m->h + 1) / 2;
    if (cx1 > cw) cx1 = cw;
    if (cy1 > ch) cy1 = ch;
    for (int32_t y = cy0; y < cy1; y++) {
        int32_t ly0 = 2 * y - m->y, ly1 = ly0 + 1;
        const uint8_t *r0 = ly0 >= 0 && ly0 < m->h ? cov + (size_t)ly0 * (size_t)m->w : NULL;
        const uint8_t *r1 = ly1 >= 0 && ly1 < m->h ? cov + (size_t)ly1 * (size_t)m->w : NULL;
        uint8_t *u = planes[1] + (ptrdiff_t)y * strides[1];
        uint8_t *v = planes[2] + (ptrdiff_t)y * strides[2];
        for (int32_t x = cx0; x < cx1; x++) {
            int32_t lx0 = 2 * x - m->x, lx1 = lx0 + 1;
            uint32_t sum = 0;
            if (lx0 >= 0 && lx0 < m->w) sum += (r0 ? r0[lx0] : 0) + (r1 ? r1[lx0] : 0);
            if (lx1 >= 0 && lx1 < m->w) sum += (r0 ? r0[lx1] : 0) + (r1 ? r1[lx1] : 0);
            if (sum == 0) continue;
            uint32_t a = div255(((sum + 2) / 4) * paint.alpha);
            u[x] = mix(u[x], paint.u, a);
            v[x] = mix(v[x], paint.v, a);
        }
    }
}

void rfx_text_blend_i420(const rfx_text_mask *m, uint8_t *const planes[3], const int32_t strides[3], int32_t width,
                         int32_t height, rfx_text_paint fill, rfx_text_paint outline, rfx_text_paint box) {
    if (m->has_box) blend_box(m, planes, strides, width, height, box);
    if (m->w <= 0 || m->h <= 0) return;
    if (m->has_outline) blend_plane(m, m->outline, planes, strides, width, height, outline);
    blend_plane(m, m->fill, planes, strides, width, height, fill);
}

/* --------------------------------------------------------------- colours -- */

static uint8_t clamp_round(double v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : (int)(v + 0.5)); }

rfx_text_paint rfx_text_paint_from_rgb(uint8_t red, uint8_t green, uint8_t blue, int full_range, uint8_t alpha) {
    double r = red, g = green, b = blue;
    double luma = 0.299 * r + 0.587 * g + 0.114 * b;
    double cb = (b - luma) / 1.772, cr = (r - luma) / 1.402;
    rfx_text_paint p;
    if (full_range) {
        p.y = clamp_round(luma); p.u = clamp_round(128 + cb); p.v = clamp_round(128 + cr);
    } else {
        p.y = clamp_round(16 + luma * 219 / 255); p.u = clamp_round(128 + cb * 224 / 255);
        p.v = clamp_round(128 + cr * 224 / 255);
    }
    p.alpha = alpha;
    return p;
}

static int hex(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rfx_text_parse_color(const char *t, uint8_t rgb[3]) {
    static const struct { const char *name; uint8_t r, g, b; } names[] = {
        {"white", 255, 255, 255}, {"black", 0, 0, 0}, {"red", 255, 0, 0}, {"green", 0, 128, 0},
        {"blue", 0, 0, 255}, {"yellow", 255, 255, 0}, {"cyan", 0, 255, 255}, {"magenta", 255, 0, 255},
        {"gray", 128, 128, 128}, {"grey", 128, 128, 128}, {"orange", 255, 165, 0},
    };
    if (t == NULL) return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i].name) == 0) { rgb[0] = names[i].r; rgb[1] = names[i].g; rgb[2] = names[i].b; return 0; }
    const char *h = t[0] == '#' ? t + 1 : t;
    if (strlen(h) == 6 && hex(h[0]) >= 0 && hex(h[1]) >= 0 && hex(h[2]) >= 0 && hex(h[3]) >= 0 && hex(h[4]) >= 0
        && hex(h[5]) >= 0) {
        for (int i = 0; i < 3; i++) rgb[i] = (uint8_t)(hex(h[2 * i]) * 16 + hex(h[2 * i + 1]));
        return 0;
    }
    /* r,g,b */
    int values[3], k = 0;
    const char *p = t;
    while (k < 3) {
        while (*p == ' ') p++;
        if (*p < '0' || *p > '9') return -1;
        int v = 0, digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 4) { v = v * 10 + (*p - '0'); p++; digits++; }
        if (v > 255) return -1;
        values[k++] = v;
        while (*p == ' ') p++;
        if (k < 3) { if (*p != ',') return -1; p++; }
    }
    if (*p != '\0') return -1;
    for (int i = 0; i < 3; i++) rgb[i] = (uint8_t)values[i];
    return 0;
}

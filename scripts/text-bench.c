/*
 * The text filter's figures (docs/plugins/text.md): time per 1080p frame of the blend (what
 * process_video does) and of a caption change (on_callback: layout and render), for a caption
 * bar and a name label, over the kernels the plugin links (Plugins/TextKernels).
 *
 *   cc -O2 -std=gnu11 -I Plugins/TextKernels/include $(pkg-config --cflags freetype2 harfbuzz) \
 *      scripts/text-bench.c Plugins/TextKernels/text_kernels.c $(pkg-config --libs freetype2 harfbuzz) \
 *      -o /tmp/text-bench && /tmp/text-bench
 */
#include "text_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    enum { W = 1920, H = 1080, RUNS = 300, CHANGES = 60 };
    char error[512];
    rfx_text_engine *engine = rfx_text_engine_new(NULL, error, sizeof error);
    if (engine == NULL) { fprintf(stderr, "%s\n", error); return 1; }
    rfx_text_layout *layout = rfx_text_layout_new();
    rfx_text_mask mask = {0};
    mask.capacity = (size_t)W * H;
    mask.fill = calloc(mask.capacity, 1);
    mask.outline = calloc(mask.capacity, 1);
    uint8_t *y = malloc((size_t)W * H), *u = malloc((size_t)W * H / 4), *v = malloc((size_t)W * H / 4);
    memset(y, 100, (size_t)W * H); memset(u, 128, (size_t)W * H / 4); memset(v, 128, (size_t)W * H / 4);
    uint8_t *planes[3] = {y, u, v};
    int32_t strides[3] = {W, W / 2, W / 2};
    struct { const char *name, *text; int size, outline, box, anchor_bottom, max_lines; } cases[] = {
        {"caption bar (48 px, 2 lines, box)", "The meeting's program: keynote at nine, budget review at ten, then "
         "questions from the floor, and lunch in the atrium at noon for everyone", 48, 0, 1, 1, 2},
        {"caption bar (48 px, 2 lines, 2 px outline)", "The meeting's program: keynote at nine, budget review at "
         "ten, then questions from the floor, and lunch in the atrium at noon for everyone", 48, 2, 0, 1, 2},
        {"name label (32 px, box)", "Ada Lovelace \xE2\x80\x94 Analytical Engines", 32, 0, 1, 0, 1},
        {"arabic caption (48 px, box)", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9"
         "\xD8\xA7\xD9\x84\xD9\x85", 48, 0, 1, 1, 1},
    };
    rfx_text_paint fill = rfx_text_paint_from_rgb(255, 255, 255, 0, 255);
    rfx_text_paint outline = rfx_text_paint_from_rgb(0, 0, 0, 0, 255);
    rfx_text_paint box = rfx_text_paint_from_rgb(0, 0, 0, 0, 153);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double change[CHANGES], blend[RUNS];
        for (int i = 0; i < CHANGES; i++) {
            char text[1024];
            snprintf(text, sizeof text, "%s %d", cases[c].text, i);
            double t0 = now_ms();
            rfx_text_layout_run(engine, text, strlen(text), cases[c].size, W - 48, cases[c].max_lines,
                                RFX_TEXT_ALIGN_CENTER, layout);
            rfx_text_layout_info info = rfx_text_layout_get_info(layout);
            int32_t ox = cases[c].anchor_bottom ? (W - info.width) / 2 : 24;
            int32_t oy = H - 24 - info.height;
            rfx_text_render(engine, layout, cases[c].size, ox, oy, W, H, cases[c].outline, cases[c].box ? 8 : -1, &mask);
            change[i] = now_ms() - t0;
        }
        for (int i = 0; i < RUNS; i++) {
            double t0 = now_ms();
            rfx_text_blend_i420(&mask, planes, strides, W, H, fill, outline, box);
            blend[i] = now_ms() - t0;
        }
        qsort(change, CHANGES, sizeof change[0], cmp);
        qsort(blend, RUNS, sizeof blend[0], cmp);
        rfx_text_layout_info info = rfx_text_layout_get_info(layout);
        printf("%-44s block %4dx%-3d mask %4dx%-3d  process median %.3f ms (p99 %.3f)  change median %.2f ms "
               "(max %.2f)\n", cases[c].name, info.width, info.height, mask.w, mask.h, blend[RUNS / 2],
               blend[RUNS * 99 / 100], change[CHANGES / 2], change[CHANGES - 1]);
    }
    rfx_text_layout_free(layout);
    rfx_text_engine_free(engine);
    return 0;
}

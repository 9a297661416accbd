/*
 * scripts/scale-compare.c — the `scale` plugin's plane kernels against libyuv's I420Scale
 * and FFmpeg's swscale, one thread, on the same frames (issue #11). Not part of the build
 * or of CI: a measuring tool. Needs libswscale-dev and libavutil-dev, and ffmpeg to make
 * the frames (testsrc2):
 *
 *   gcc -O2 -ISources/RawFXScaleKernels/include scripts/scale-compare.c Sources/RawFXScaleKernels/scale_kernels.c Sources/RawFXScaleKernels/kernel_level.c \
 *       -o /tmp/scale-compare -lyuv -lswscale -lavutil -lm && /tmp/scale-compare [cases]
 *
 * Per case and filter (bilinear = SWS_BILINEAR, box = SWS_AREA) it prints milliseconds per
 * frame (the best of REPS passes over a pool of distinct frames larger than the cache, in
 * thread CPU time so that other processes on a shared machine do not count; WALL=1 for
 * wall time), swscale's time over ours, PSNR of libyuv and ours against swscale's bicubic,
 * whether every instruction-set level gave the C bytes, and the plan's path.
 */
#define _GNU_SOURCE
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
#include <libyuv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scale_kernels.h"

typedef struct frame { int w, h; uint8_t *p[3]; int s[3]; } frame;

static double seconds(void) {
    struct timespec t;
    clock_gettime(getenv("WALL") ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static frame frame_new(int w, int h) {
    frame f = { w, h, { 0 }, { w, w / 2, w / 2 } };
    for (int i = 0; i < 3; i++) f.p[i] = aligned_alloc(64, ((size_t)f.s[i] * (i ? h / 2 : h) + 127) / 64 * 64);
    return f;
}

/* Column tables for the any-ratio path (scale_column_blocks(4096): the blocks and the 512-bit
 * kernel's tables): luma and chroma of each level's plan set. */
#define COMPARE_COLUMN_BLOCKS (4096 / 16 + 4096 / 32)
static scale_column_block column_tables[SCALE_ISA_AVX512 + 1][2][COMPARE_COLUMN_BLOCKS];

static void plan_frame(scale_plan *plans, const frame *in, const frame *out, int filter, scale_isa isa) {
    scale_column_block(*tables)[COMPARE_COLUMN_BLOCKS] = column_tables[isa];
    scale_plan_init(&plans[0], in->w, in->h, out->w, out->h, filter, isa, tables[0], COMPARE_COLUMN_BLOCKS);
    scale_plan_init(&plans[1], in->w / 2, in->h / 2, out->w / 2, out->h / 2, filter, isa, tables[1],
                    COMPARE_COLUMN_BLOCKS);
}

static void ours(const scale_plan *plans, const frame *in, frame *out, uint8_t *rows) {
    for (int i = 0; i < 3; i++)
        scale_plane_rows(&plans[i ? 1 : 0], in->p[i], in->s[i], out->p[i], out->s[i], 0, plans[i ? 1 : 0].dst_h, rows);
}

static void libyuv(const frame *in, frame *out, int filter) {
    I420Scale(in->p[0], in->s[0], in->p[1], in->s[1], in->p[2], in->s[2], in->w, in->h, out->p[0], out->s[0],
              out->p[1], out->s[1], out->p[2], out->s[2], out->w, out->h, (enum FilterMode)filter);
}

static void sws(struct SwsContext *context, const frame *in, frame *out) {
    sws_scale(context, (const uint8_t *const *)in->p, in->s, 0, in->h, out->p, out->s);
}

static double psnr(const frame *a, const frame *b) {
    double squared = 0;
    long count = 0;
    for (int i = 0; i < 3; i++)
        for (int y = 0; y < (i ? a->h / 2 : a->h); y++)
            for (int x = 0; x < (i ? a->w / 2 : a->w); x++, count++) {
                const int d = a->p[i][y * a->s[i] + x] - b->p[i][y * b->s[i] + x];
                squared += d * d;
            }
    return squared == 0 ? 99 : 10 * log10(255.0 * 255 * (double)count / squared);
}

static int same(const frame *a, const frame *b) {
    for (int i = 0; i < 3; i++)
        for (int y = 0; y < (i ? a->h / 2 : a->h); y++)
            if (memcmp(a->p[i] + y * a->s[i], b->p[i] + y * b->s[i], (size_t)(i ? a->w / 2 : a->w))) return 0;
    return 1;
}

int main(int argc, char **argv) {
    static const int cases[][4] = { { 1920, 1080, 1280, 720 }, { 1920, 1080, 640, 360 }, { 1280, 720, 640, 360 },
                                    { 1280, 720, 960, 540 },   { 640, 480, 320, 240 },   { 1920, 1080, 1024, 576 },
                                    { 1280, 720, 1920, 1080 }, { 640, 360, 1280, 720 },  { 1920, 1080, 480, 270 },
                                    { 1920, 1080, 854, 480 },  { 1280, 720, 854, 480 },   { 1920, 1080, 1600, 900 },
                                    { 1280, 720, 1024, 576 },  { 640, 360, 426, 240 },    { 960, 540, 1280, 720 },
                                    { 640, 360, 960, 540 },    { 1280, 720, 426, 240 },   { 1920, 1080, 426, 240 },
                                    { 1280, 720, 256, 144 } };
    const int count = (int)(sizeof cases / sizeof cases[0]), first = argc > 1 ? atoi(argv[1]) : 0;
    const int reps = getenv("REPS") ? atoi(getenv("REPS")) : 9;
    uint8_t *rows = aligned_alloc(64, scale_row_buffer_size(4096, 4096));
    printf("%-20s %-8s %8s %8s %8s %7s %8s %8s %8s %s\n", "case", "filter", "libyuv", "swscale", "ours", "sws/ours",
           "dB libyuv", "dB ours", "dB sws", "levels=C path");
    for (int c = first; c < count; c++) {
        const int sw = cases[c][0], sh = cases[c][1], dw = cases[c][2], dh = cases[c][3];
        const int n = (int)(96e6 / (sw * sh * 1.5)) + 1; /* 96 MB of frames: more than the caches */
        char path[64], command[256];
        snprintf(path, sizeof path, "/tmp/scale-compare-%dx%d-%d.yuv", sw, sh, n);
        snprintf(command, sizeof command,
                 "ffmpeg -loglevel error -f lavfi -i testsrc2=s=%dx%d:r=25 -frames:v %d -f rawvideo -pix_fmt yuv420p -y %s",
                 sw, sh, n, path);
        FILE *file = fopen(path, "rb");
        if (file == NULL && (system(command) != 0 || (file = fopen(path, "rb")) == NULL)) return 1;
        frame *in = malloc(sizeof *in * (size_t)n);
        for (int k = 0; k < n; k++) {
            in[k] = frame_new(sw, sh);
            for (int i = 0; i < 3; i++) {
                const size_t bytes = (size_t)(i ? sw / 2 : sw) * (i ? sh / 2 : sh);
                if (fread(in[k].p[i], 1, bytes, file) != bytes) return 1;
            }
        }
        fclose(file);
        frame a = frame_new(dw, dh), b = frame_new(dw, dh), reference = frame_new(dw, dh);
        struct SwsContext *bicubic = sws_getContext(sw, sh, AV_PIX_FMT_YUV420P, dw, dh, AV_PIX_FMT_YUV420P,
                                                    SWS_BICUBIC, NULL, NULL, NULL);
        for (int filter = SCALE_FILTER_BILINEAR; filter <= SCALE_FILTER_BOX; filter++) {
            struct SwsContext *context = sws_getContext(sw, sh, AV_PIX_FMT_YUV420P, dw, dh, AV_PIX_FMT_YUV420P,
                                                        filter == SCALE_FILTER_BOX ? SWS_AREA : SWS_BILINEAR,
                                                        NULL, NULL, NULL);
            scale_plan best_plans[2], c_plans[2], ssse3_plans[2];
            const char *refused;
            plan_frame(best_plans, &in[0], &a, filter, yuv_kernels_select(&refused));
            plan_frame(c_plans, &in[0], &a, filter, SCALE_ISA_C);
            plan_frame(ssse3_plans, &in[0], &a, filter, SCALE_ISA_SSSE3);
            double best[3] = { 1e9, 1e9, 1e9 };
            for (int r = 0; r < reps; r++) {
                double t = seconds();
                for (int k = 0; k < n; k++) libyuv(&in[k], &a, filter);
                if ((t = (seconds() - t) / n) < best[0]) best[0] = t;
                t = seconds();
                for (int k = 0; k < n; k++) sws(context, &in[k], &a);
                if ((t = (seconds() - t) / n) < best[1]) best[1] = t;
                t = seconds();
                for (int k = 0; k < n; k++) ours(best_plans, &in[k], &a, rows);
                if ((t = (seconds() - t) / n) < best[2]) best[2] = t;
            }
            double db[3] = { 0, 0, 0 };
            int levels_equal = 1, checked = 0;
            for (int k = 0; k < n; k += n / 4 + 1, checked++) {
                sws(bicubic, &in[k], &reference);
                libyuv(&in[k], &a, filter);
                db[0] += psnr(&a, &reference);
                sws(context, &in[k], &a);
                db[2] += psnr(&a, &reference);
                ours(best_plans, &in[k], &a, rows);
                db[1] += psnr(&a, &reference);
                ours(c_plans, &in[k], &b, rows);
                levels_equal &= same(&a, &b);
                ours(ssse3_plans, &in[k], &b, rows);
                levels_equal &= same(&a, &b);
            }
            char name[32];
            snprintf(name, sizeof name, "%dx%d->%dx%d", sw, sh, dw, dh);
            printf("%-20s %-8s %8.3f %8.3f %8.3f %7.2f %8.2f %8.2f %8.2f %d %d\n", name,
                   filter == SCALE_FILTER_BOX ? "box" : "bilinear", best[0] * 1e3, best[1] * 1e3, best[2] * 1e3,
                   best[1] / best[2], db[0] / checked, db[1] / checked, db[2] / checked, levels_equal,
                   (int)best_plans[0].path);
            fflush(stdout);
            sws_freeContext(context);
        }
        sws_freeContext(bicubic);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 3; i++) free(in[k].p[i]);
        free(in);
    }
    return 0;
}

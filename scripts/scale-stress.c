/*
 * scripts/scale-stress.c — the `scale` plugin's plane kernels (Sources/RawFXScaleKernels/scale_kernels.c) at
 * random sizes, filters, strides and slice counts, under AddressSanitizer and UBSan, with every
 * buffer exactly as large as its rows (so any read or write past a row's end is reported). At
 * every instruction-set level the plugin has its own kernels for (fixed ratios, any ratio in
 * bilinear and linear, the area mean up to 7:1), the SIMD bytes must equal the portable C's; the paths that
 * call libyuv's rows are run for memory errors only (libyuv's C and SIMD rows round differently).
 * Part of CI (.ci/run), about 30 s:
 *
 *   clang -fuse-ld=lld -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -ISources/RawFXScaleKernels/include \
 *       scripts/scale-stress.c Sources/RawFXScaleKernels/scale_kernels.c Sources/RawFXScaleKernels/kernel_level.c \
 *       -o /tmp/scale-stress -lyuv && /tmp/scale-stress [cases]
 *
 * Every other case's source ends at a PROT_NONE page instead (mmap), so a load past the plane's
 * last byte faults even where the sanitizer does not see it (the 512-bit kernel's masked loads).
 * The levels run are C, SSSE3, AVX2 and, when the CPU has it (yuv_kernels_select), AVX-512.
 *
 * Exit status 0 when every case passed; 1 with the first case whose levels differ (a sanitizer
 * report stops it before that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scale_kernels.h"

#define MAX_DST_W 700

/* A random size pair: any sizes, a downscale by up to 8:1 (the area mean's range reaches 7:1), one
 * between 2:1 and 4:1 in both dimensions, a fixed ratio in both dimensions, or an upscale. */
static void random_sizes(int *sw, int *sh, int *dw, int *dh) {
    *sw = 1 + rand() % 400;
    *sh = 1 + rand() % 200;
    switch (rand() % 5) {
    case 0:
        *dw = 1 + rand() % MAX_DST_W;
        *dh = 1 + rand() % 300;
        break;
    case 1: {
        const int percent = 12 + rand() % 89; /* 1:1 to 8:1 */
        *dw = 1 + *sw * percent / 100;
        *dh = 1 + *sh * (12 + rand() % 89) / 100;
        break;
    }
    case 4:
        *sw += 8;
        *sh += 8;
        *dw = 1 + *sw * (25 + rand() % 25) / 100; /* 4:1 to 2:1 */
        *dh = 1 + *sh * (25 + rand() % 25) / 100;
        break;
    case 2: { /* 3:2, 3:1, 2:1 or 4:3 */
        static const int ratios[4][2] = { { 3, 2 }, { 3, 1 }, { 2, 1 }, { 4, 3 } };
        const int *r = ratios[rand() % 4];
        *sw = r[0] * (1 + rand() % (400 / r[0]));
        *sh = r[0] * (1 + rand() % (200 / r[0]));
        *dw = *sw / r[0] * r[1];
        *dh = *sh / r[0] * r[1];
        break;
    }
    default: /* upscales up to 3x */
        *dw = *sw + rand() % (2 * *sw + 1);
        *dh = *sh + rand() % (2 * *sh + 1);
        if (*dw > MAX_DST_W) *dw = MAX_DST_W;
        break;
    }
}

/* The paths whose every level gives the C bytes (the plugin's own arithmetic). */
static int levels_agree(scale_path path) {
    return path != SCALE_PATH_DOWN && path != SCALE_PATH_UP && path != SCALE_PATH_BOX && path != SCALE_PATH_LIBYUV;
}

/* `bytes` whose last one is the last before a PROT_NONE page; *map and *map_bytes to unmap. */
static uint8_t *guarded(size_t bytes, void **map, size_t *map_bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), data = (bytes + page - 1) / page * page;
    *map_bytes = data + page;
    uint8_t *base = mmap(NULL, *map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base + data, page, PROT_NONE) != 0) {
        perror("scale-stress: mmap");
        exit(2);
    }
    *map = base;
    return base + data - bytes;
}

int main(int argc, char **argv) {
    const int cases = argc > 1 ? atoi(argv[1]) : 20000;
    const size_t capacity = scale_column_blocks(MAX_DST_W);
    scale_column_block *tables = malloc(capacity * sizeof *tables);
    long per_path[16] = { 0 };
    const int top = yuv_kernels_select(NULL) > SCALE_ISA_AVX2 ? SCALE_ISA_AVX512 : SCALE_ISA_AVX2;
    srand(7);
    for (int c = 0; c < cases; c++) {
        int sw, sh, dw, dh;
        random_sizes(&sw, &sh, &dw, &dh);
        const int filter = rand() % 4, stride = sw + rand() % 3, dst_stride = dw + rand() % 3;
        const size_t src_bytes = (size_t)stride * (size_t)(sh - 1) + (size_t)sw;
        const size_t dst_bytes = (size_t)dst_stride * (size_t)(dh - 1) + (size_t)dw;
        void *map = NULL;
        size_t map_bytes = 0;
        uint8_t *src = c % 2 ? guarded(src_bytes, &map, &map_bytes) : malloc(src_bytes);
        uint8_t *rows = malloc(scale_row_buffer_size(sw, dw));
        for (size_t i = 0; i < src_bytes; i++) src[i] = (uint8_t)rand();
        uint8_t *out[SCALE_ISA_AVX512 + 1];
        scale_path path = SCALE_PATH_COPY;
        const int slices = 1 + rand() % 4;
        for (int level = SCALE_ISA_C; level <= top; level++) {
            scale_plan plan;
            scale_plan_init(&plan, sw, sh, dw, dh, filter, (scale_isa)level, tables, capacity);
            path = plan.path;
            out[level] = malloc(dst_bytes);
            for (int s = 0; s < slices; s++) {
                int begin, end;
                scale_slice_rows(&plan, (uint32_t)slices, (uint32_t)s, &begin, &end);
                /* SCALE_PATH_LIBYUV runs whole planes only (one slice in the plugin) */
                if (path != SCALE_PATH_LIBYUV || (begin == 0 && end == dh))
                    scale_plane_rows(&plan, src, stride, out[level], dst_stride, begin, end, rows);
            }
            if (path == SCALE_PATH_LIBYUV && slices > 1)
                scale_plane_rows(&plan, src, stride, out[level], dst_stride, 0, dh, rows);
        }
        per_path[path]++;
        for (int level = SCALE_ISA_SSSE3; level <= top && levels_agree(path); level++)
            for (int y = 0; y < dh; y++)
                if (memcmp(out[SCALE_ISA_C] + (size_t)y * dst_stride, out[level] + (size_t)y * dst_stride, (size_t)dw)) {
                    printf("case %d: %dx%d -> %dx%d, filter %d, path %d: level %d differs from C in row %d\n", c, sw,
                           sh, dw, dh, filter, (int)path, level, y);
                    return 1;
                }
        for (int level = SCALE_ISA_C; level <= top; level++) free(out[level]);
        if (map != NULL) munmap(map, map_bytes);
        else free(src);
        free(rows);
    }
    free(tables);
    printf("scale-stress: %d cases, levels up to %s, every level equal where the plugin's own kernels ran; cases per path:",
           cases, yuv_kernels_name((yuv_kernel_level)top));
    for (int p = 0; p <= SCALE_PATH_LIBYUV; p++) printf(" %d:%ld", p, per_path[p]);
    printf("\n");
    return 0;
}

/*
 * scale_kernels.h — the plane scaler behind the `scale` filter and the compositor's
 * tiles (scale_kernels.c).
 *
 * A plan is made whenever the geometry or the filter changes (configure or
 * set_param: no allocation, no I/O); scale_plane_rows then scales any band of
 * output rows that starts at a multiple of the plan's row_alignment, so a
 * frame can be cut into slices that run on different threads, each with its
 * own row buffer of scale_row_buffer_size bytes (allocated at configure). The
 * any-ratio two-tap path and the area path read per-column tables that the plan writes into
 * storage the caller allocated at configure (scale_column_blocks).
 * Linked into the YUV plugin (`scale`) and the engine's compositor; the symbols
 * are hidden in each.
 */
#ifndef RAWFX_YUV_SCALE_KERNELS_H
#define RAWFX_YUV_SCALE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define SCALE_HIDDEN __attribute__((visibility("hidden")))

#include "kernel_level.h"

/* The instruction set the kernels run: yuv_kernels_select (kernel_level.h). */
typedef yuv_kernel_level scale_isa;
#define SCALE_ISA_C     YUV_KERNELS_C
#define SCALE_ISA_SSSE3 YUV_KERNELS_SSSE3
#define SCALE_ISA_AVX2  YUV_KERNELS_AVX2
#define SCALE_ISA_AVX512 YUV_KERNELS_AVX512

/* The filters of the `scale` parameter, in libyuv's FilterMode order. */
enum { SCALE_FILTER_NONE, SCALE_FILTER_LINEAR, SCALE_FILTER_BILINEAR, SCALE_FILTER_BOX };

typedef enum {
    SCALE_PATH_COPY,      /* equal sizes */
    SCALE_PATH_HALF,      /* exact 2:1, bilinear or box: libyuv ScaleRowDown2Box rows */
    SCALE_PATH_THREE_QUARTERS, /* exact 4:3, bilinear or box: libyuv ScaleRowDown34_0/1_Box rows */
    SCALE_PATH_FIXED2,    /* exact ratio, 2 taps a dimension (3:2; 2:1, 4:3 mixed): fixed weights */
    SCALE_PATH_FIXED3,    /* exact 3:1, 3 taps a dimension */
    SCALE_PATH_COLUMNS,   /* any other ratio, bilinear or linear: per-column tables, one fused pass */
    SCALE_PATH_AREA,      /* box past 2:1, up to 7:1: the area mean, rows first into 16 bits */
    SCALE_PATH_POINT,     /* libyuv ScaleCols_C rows (filter=none) */
    SCALE_PATH_DOWN,      /* libyuv InterpolateRow + ScaleFilterCols, vertical first */
    SCALE_PATH_UP,        /* libyuv ScaleFilterCols + InterpolateRow, horizontal first, two cached rows */
    SCALE_PATH_BOX,       /* libyuv ScaleAddRow + box columns (ScalePlaneBox's arithmetic) */
    SCALE_PATH_LIBYUV,    /* libyuv ScalePlane whole (its cases that allocate nothing): one slice */
} scale_path;

/* One dimension of a fixed-ratio kernel: `period_in` source samples make
 * `period_out` output samples; output q of a period reads source samples
 * first[q] .. first[q] + taps - 1 of the period with `weight`s summing to `total`. */
typedef struct scale_phases {
    int period_in, period_out, taps, total;
    int first[4];
    int weight[4][3];
} scale_phases;

/* 16 outputs of the any-ratio path (two taps each), 8 per 128-bit lane (half).
 * Output 8k + i of half k reads source bytes offset[k] + a and offset[k] + b, where
 * a and b are pshufb indices into the 16 bytes loaded at offset[k] (`near`) or, for
 * spans over 16 bytes (downscales past 2:1), into the 16 bytes after them (`far`;
 * 0x80 in the other table). Weights are pmaddubsw's unsigned bytes and sum to 128
 * per output: (128 - f, f) with f the 7-bit fraction of libyuv's 16.16 position. */
typedef struct scale_column_block {
    uint8_t near[32];
    uint8_t far[32];
    uint8_t weights[32];
    int32_t offset[2];
    int32_t reserved[6];
} scale_column_block;

/* 32 outputs of the any-ratio path for the 512-bit kernel, in the storage after the
 * blocks (scale_column_blocks counts it): output i reads source bytes base + index[2i]
 * and base + index[2i + 1] (vpermb indices into the 64 bytes loaded at base, the first
 * tap of the group's first output), weighed with weights[2i], weights[2i + 1]: the
 * blocks' taps and weights (0 past the row). */
typedef struct scale_column_wide {
    uint8_t index[64];
    uint8_t weights[64];
} scale_column_wide;

typedef struct scale_plan {
    scale_path path;
    scale_isa isa;
    int filter;                      /* after libyuv's ScaleFilterReduce (as asked for the libyuv path) */
    int src_w, src_h, dst_w, dst_h;
    int row_alignment;               /* a slice starts at a multiple of this output row */
    /* fixed ratios */
    scale_phases h, v;
    int bias, multiplier;            /* out = (sum + bias) * multiplier >> 16, exact for every sum */
    int group_count;                 /* 8-output groups before the horizontal pattern repeats */
    int group_offset[4];             /* where group g's 16-byte load starts in its block */
    int block_in;                    /* source bytes a block of group_count groups advances */
    uint8_t shuffle[4][16];          /* pshufb: pairs (fixed2) for group g */
    uint8_t weights[4][16];          /* pmaddubsw weights for group g */
    /* libyuv's 16.16 positions (ScaleSlope) */
    int x, y, dx, dy;
    /* any ratio, two taps: one block per 16 outputs; the first `simd_halves`
     * halves are whole and their loads stay inside the source row */
    const scale_column_block *columns;
    int column_far;                  /* some output reaches past the near 16 bytes */
    int column_prefetch;             /* prefetch source rows ahead (downscales past 5:4) */
    int simd_halves;
    /* the 512-bit kernel's tables (NULL when a group of 32 outputs spans more than 64
     * source bytes or the storage is too small): one per 32 outputs, `wide_whole` of
     * them first whose 64-byte loads stay inside the source row */
    const scale_column_wide *wide;   /* group g loads at columns[2g].offset[0] */
    int wide_whole;
    /* the area path, in the same storage: output o's taps are the SCALE_AREA_TAPS
     * samples from area_offsets[o] with the int16 weights area_weights[SCALE_AREA_TAPS
     * * o ...], summing to 16384 */
    const int16_t *area_weights;
    const int32_t *area_offsets;
    int area_narrow;                 /* no output has more than 4 column taps */
} scale_plan;

/* Samples a dimension of the area path: the area of up to 7:1. */
#define SCALE_AREA_TAPS 8

/* Plans one plane's scale; sizes >= 1. Any thread; no allocation. `columns`
 * holds `column_capacity` blocks for the any-ratio path (scale_column_blocks of
 * the widest output the plan may get: room for either path's tables); with too
 * few (or NULL) those paths run libyuv's rows instead. The plan points into
 * `columns` while it is used. */
SCALE_HIDDEN void scale_plan_init(scale_plan *plan, int src_w, int src_h, int dst_w, int dst_h,
                                  int filter, scale_isa isa, scale_column_block *columns, size_t column_capacity);

/* Column blocks a plan of output width up to max_dst_w may write (either path). */
SCALE_HIDDEN size_t scale_column_blocks(int max_dst_w);

/* Bytes of row buffer one slice needs for any plan of planes up to these widths. */
SCALE_HIDDEN size_t scale_row_buffer_size(int max_src_w, int max_dst_w);

/* Scales output rows [row_begin, row_end) of one plane; row_begin is a multiple of
 * plan->row_alignment (or row_end is dst_h). `row_buffer` is 64-byte aligned and of
 * scale_row_buffer_size bytes, used by this call only. The process thread or a
 * pool thread: no allocation, no lock. */
SCALE_HIDDEN void scale_plane_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride,
                                   uint8_t *dst, ptrdiff_t dst_stride, int row_begin, int row_end,
                                   uint8_t *row_buffer);

/* Cuts dst_h rows into `count` slices at multiples of the plan's alignment:
 * slice `index` is [*begin, *end), possibly empty. */
SCALE_HIDDEN void scale_slice_rows(const scale_plan *plan, uint32_t count, uint32_t index, int *begin, int *end);

/* How a picture is placed into an output of another shape: stretched over all of it,
 * fitted inside it (bars, in the output's remaining rows or columns), or filling it
 * (the input cropped at its centre). The `scale` filter's mode parameter and the
 * compositor's tile fit. */
enum { SCALE_MODE_STRETCH, SCALE_MODE_FIT, SCALE_MODE_FILL };

/* Where a scale reads from and writes to, in luma pixels; all offsets even. */
typedef struct scale_geometry {
    int src_x, src_y, src_w, src_h;
    int dst_x, dst_y, dst_w, dst_h;
} scale_geometry;

/* The even number nearest to numerator / denominator (halves round up), at least 2. */
SCALE_HIDDEN uint64_t scale_round_even(uint64_t numerator, uint64_t denominator);

/* The source and destination rectangles of a scale of in_w x in_h into out_w x out_h
 * (even) in `mode`, aspect ratios compared exactly, offsets centred and even. Any thread. */
SCALE_HIDDEN scale_geometry scale_fit_geometry(int mode, uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h);

#endif /* RAWFX_YUV_SCALE_KERNELS_H */

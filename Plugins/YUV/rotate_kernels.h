/*
 * rotate_kernels.h — the plane kernels behind `rotate` and `mirror` (yuv.c).
 *
 * Three operations cover every quarter turn and flip of an I420 plane:
 * - transpose: dst[x][y] = src[y][x]. With a negative source stride (rows read
 *   bottom up) it is a clockwise quarter turn; with a negative destination
 *   stride a counter-clockwise one; with both, a quarter turn plus a flip.
 * - reverse rows: dst[y][x] = src[y][w-1-x] (a left-right flip; with the
 *   source read bottom up, a half turn).
 * - copy rows, for the top-bottom flip (a copy written bottom up).
 *
 * Each has an AVX2, an SSSE3 (SSE2 transpose, pshufb reversal) and a portable C
 * version, chosen at run time from the CPU (never from the build machine). The
 * functions are hidden: the plugin's only exported symbol stays
 * rawfx_get_plugin_entry. They allocate nothing, take no lock and may run on
 * any thread; concurrent calls must write disjoint rows.
 */
#ifndef RAWFX_YUV_ROTATE_KERNELS_H
#define RAWFX_YUV_ROTATE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define ROTATE_KERNELS_HIDDEN __attribute__((visibility("hidden")))

#include "kernel_level.h"

/* The level the kernels below run at: yuv_kernels_select (kernel_level.h). */
typedef yuv_kernel_level rotate_kernel_level;
#define ROTATE_KERNELS_C     YUV_KERNELS_C
#define ROTATE_KERNELS_SSSE3 YUV_KERNELS_SSSE3
#define ROTATE_KERNELS_AVX2  YUV_KERNELS_AVX2

/* dst[x][y] = src[y][x] for the source columns [column_begin, column_end) of a
 * width x height plane, i.e. the destination rows [column_begin, column_end)
 * (so slices by column ranges write disjoint rows). Strides may be negative. */
ROTATE_KERNELS_HIDDEN void rotate_transpose_plane(rotate_kernel_level level, const uint8_t *src,
                                                  ptrdiff_t src_stride, uint8_t *dst, ptrdiff_t dst_stride,
                                                  int height, int column_begin, int column_end);

/* dst[y][x] = src[y][width-1-x] for y in [0, height). Strides may be negative. */
ROTATE_KERNELS_HIDDEN void rotate_reverse_rows(rotate_kernel_level level, const uint8_t *src, ptrdiff_t src_stride,
                                               uint8_t *dst, ptrdiff_t dst_stride, int width, int height);

/* dst[y][x] = src[y][x] for y in [0, height), one row at a time: for a
 * destination written bottom up, which no whole-plane copy can do. Strides may
 * be negative. */
ROTATE_KERNELS_HIDDEN void rotate_copy_rows(rotate_kernel_level level, const uint8_t *src, ptrdiff_t src_stride,
                                            uint8_t *dst, ptrdiff_t dst_stride, int width, int height);

#endif /* RAWFX_YUV_ROTATE_KERNELS_H */

/*
 * watermark_kernels.h — the per-row blends of the watermark plugin
 * (Plugins/Watermark/Overlay.swift), in AVX2, SSE2 and portable C, chosen at
 * run time from the CPU. Bit-exact with the formulas below at every level.
 * No allocation, no lock; any thread (concurrent calls on disjoint rows).
 */
#ifndef RAWFX_WATERMARK_KERNELS_H
#define RAWFX_WATERMARK_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Linked into libRawFXWatermark.so and hidden there: its exports stay the plugin entry. */
#pragma GCC visibility push(hidden)

/* 0 portable C, 1 SSE2, 2 AVX2: the best this CPU runs, lowered by the
 * test-only environment variable RAWFX_KERNELS ("c", "ssse3" or "avx2", the
 * same switch as the YUV plugin's; SSE2 counts as "ssse3"). Not real-time
 * (getenv): call at configure. */
int rfx_watermark_kernels_select(void);

/* dst = (dst * (255 - a) + y * a + 127) / 255, exactly rounded, over `rows`
 * rows of `count` samples: dst rows `dst_stride` apart, y and alpha rows
 * `count` apart (the overlay's packed planes). */
void rfx_watermark_blend_luma(int level, uint8_t *dst, int dst_stride, const uint8_t *y, const uint8_t *alpha,
                              int count, int rows);

/* Over `rows` rows as in the luma blend (kq, kr, bq, br rows `count` apart):
 * dst = (dst * k + b + 510) / 1020 with k = 1020 - S (S the chroma
 * footprint's alpha sum) and b the footprint's alpha-weighted colour sum,
 * exactly, from k and b split so that 16-bit lanes hold every term:
 *   k = 4 * kq + kr and b + 510 = 4 * bq + br (kr, br in 0...3), then
 *   (dst * k + b + 510) / 4 = dst * kq + bq + (dst * kr + br) / 4 <= 65152,
 * and / 255 as in the luma blend. */
void rfx_watermark_blend_chroma(int level, uint8_t *dst, int dst_stride, const uint8_t *kq, const uint8_t *kr,
                                const uint16_t *bq, const uint8_t *br, int count, int rows);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_WATERMARK_KERNELS_H */

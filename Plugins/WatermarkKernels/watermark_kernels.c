/*
 * watermark_kernels.c — see include/watermark_kernels.h. The SIMD versions do
 * the same integer steps in 16-bit lanes (every intermediate fits: at most
 * 65152 + 1 + 254), 16 (SSE2) or 32 (AVX2) samples at a time; a row's tail
 * goes through the C version.
 */
#include "watermark_kernels.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define WATERMARK_KERNELS_X86 1
#include <immintrin.h>
#endif

int rfx_watermark_kernels_select(void) {
    int best = 0;
#ifdef WATERMARK_KERNELS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse2")) best = 1;
    if (__builtin_cpu_supports("avx2")) best = 2;
#endif
    const char *forced = getenv("RAWFX_KERNELS");
    if (forced != NULL) {
        int cap = best;
        if (strcmp(forced, "c") == 0) cap = 0;
        else if (strcmp(forced, "ssse3") == 0) cap = 1;
        else if (strcmp(forced, "avx2") == 0 || strcmp(forced, "avx512") == 0) cap = 2; /* no 512-bit kernels */
        if (cap < best) best = cap;
    }
    return best;
}

/* x / 255 for x <= 65152, exactly. */
static inline uint32_t divide_255(uint32_t v) { return (v + 1 + (v >> 8)) >> 8; }

static void luma_c(uint8_t *dst, const uint8_t *y, const uint8_t *alpha, int count) {
    for (int i = 0; i < count; i++) {
        const uint32_t a = alpha[i];
        dst[i] = (uint8_t)divide_255(dst[i] * (255 - a) + y[i] * a + 127);
    }
}

static void chroma_c(uint8_t *dst, const uint8_t *kq, const uint8_t *kr, const uint16_t *bq, const uint8_t *br,
                     int count) {
    for (int i = 0; i < count; i++) {
        const uint32_t s = dst[i];
        dst[i] = (uint8_t)divide_255(s * kq[i] + bq[i] + ((s * kr[i] + br[i]) >> 2));
    }
}

#ifdef WATERMARK_KERNELS_X86

__attribute__((target("sse2"), always_inline)) static inline __m128i divide_255_sse2(__m128i v) {
    const __m128i one = _mm_set1_epi16(1);
    return _mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(v, one), _mm_srli_epi16(v, 8)), 8);
}

__attribute__((target("sse2"))) static int luma_sse2(uint8_t *dst, const uint8_t *y, const uint8_t *alpha, int count) {
    const __m128i zero = _mm_setzero_si128(), c255 = _mm_set1_epi16(255), c127 = _mm_set1_epi16(127);
    int i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m128i d = _mm_loadu_si128((const __m128i *)(dst + i));
        const __m128i s = _mm_loadu_si128((const __m128i *)(y + i));
        const __m128i a = _mm_loadu_si128((const __m128i *)(alpha + i));
        __m128i out[2];
        for (int h = 0; h < 2; h++) {
            const __m128i d16 = h ? _mm_unpackhi_epi8(d, zero) : _mm_unpacklo_epi8(d, zero);
            const __m128i s16 = h ? _mm_unpackhi_epi8(s, zero) : _mm_unpacklo_epi8(s, zero);
            const __m128i a16 = h ? _mm_unpackhi_epi8(a, zero) : _mm_unpacklo_epi8(a, zero);
            const __m128i v = _mm_add_epi16(_mm_add_epi16(_mm_mullo_epi16(d16, _mm_sub_epi16(c255, a16)),
                                                          _mm_mullo_epi16(s16, a16)), c127);
            out[h] = divide_255_sse2(v);
        }
        _mm_storeu_si128((__m128i *)(dst + i), _mm_packus_epi16(out[0], out[1]));
    }
    return i;
}

__attribute__((target("sse2"))) static int chroma_sse2(uint8_t *dst, const uint8_t *kq, const uint8_t *kr,
                                                      const uint16_t *bq, const uint8_t *br, int count) {
    const __m128i zero = _mm_setzero_si128();
    int i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m128i d = _mm_loadu_si128((const __m128i *)(dst + i));
        const __m128i q = _mm_loadu_si128((const __m128i *)(kq + i));
        const __m128i r = _mm_loadu_si128((const __m128i *)(kr + i));
        const __m128i e = _mm_loadu_si128((const __m128i *)(br + i));
        __m128i out[2];
        for (int h = 0; h < 2; h++) {
            const __m128i d16 = h ? _mm_unpackhi_epi8(d, zero) : _mm_unpacklo_epi8(d, zero);
            const __m128i q16 = h ? _mm_unpackhi_epi8(q, zero) : _mm_unpacklo_epi8(q, zero);
            const __m128i r16 = h ? _mm_unpackhi_epi8(r, zero) : _mm_unpacklo_epi8(r, zero);
            const __m128i e16 = h ? _mm_unpackhi_epi8(e, zero) : _mm_unpacklo_epi8(e, zero);
            const __m128i b16 = _mm_loadu_si128((const __m128i *)(bq + i + 8 * h));
            const __m128i low = _mm_srli_epi16(_mm_add_epi16(_mm_mullo_epi16(d16, r16), e16), 2);
            out[h] = divide_255_sse2(_mm_add_epi16(_mm_add_epi16(_mm_mullo_epi16(d16, q16), b16), low));
        }
        _mm_storeu_si128((__m128i *)(dst + i), _mm_packus_epi16(out[0], out[1]));
    }
    return i;
}

__attribute__((target("avx2"), always_inline)) static inline __m256i divide_255_avx2(__m256i v) {
    const __m256i one = _mm256_set1_epi16(1);
    return _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(v, one), _mm256_srli_epi16(v, 8)), 8);
}

/* 16 bytes widened to 16 lanes. */
__attribute__((target("avx2"), always_inline)) static inline __m256i widen_avx2(const uint8_t *p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
}

/* Two 16-lane results packed back to 32 bytes in order (packus works per lane). */
__attribute__((target("avx2"), always_inline)) static inline __m256i pack_avx2(__m256i lo, __m256i hi) {
    return _mm256_permute4x64_epi64(_mm256_packus_epi16(lo, hi), 0xD8);
}

__attribute__((target("avx2"))) static int luma_avx2(uint8_t *dst, const uint8_t *y, const uint8_t *alpha, int count) {
    const __m256i c255 = _mm256_set1_epi16(255), c127 = _mm256_set1_epi16(127);
    int i = 0;
    for (; i + 32 <= count; i += 32) {
        __m256i out[2];
        for (int h = 0; h < 2; h++) {
            const int o = i + 16 * h;
            const __m256i d16 = widen_avx2(dst + o), s16 = widen_avx2(y + o), a16 = widen_avx2(alpha + o);
            const __m256i v = _mm256_add_epi16(_mm256_add_epi16(_mm256_mullo_epi16(d16, _mm256_sub_epi16(c255, a16)),
                                                                _mm256_mullo_epi16(s16, a16)), c127);
            out[h] = divide_255_avx2(v);
        }
        _mm256_storeu_si256((__m256i *)(dst + i), pack_avx2(out[0], out[1]));
    }
    return i;
}

__attribute__((target("avx2"))) static int chroma_avx2(uint8_t *dst, const uint8_t *kq, const uint8_t *kr,
                                                      const uint16_t *bq, const uint8_t *br, int count) {
    int i = 0;
    for (; i + 32 <= count; i += 32) {
        __m256i out[2];
        for (int h = 0; h < 2; h++) {
            const int o = i + 16 * h;
            const __m256i d16 = widen_avx2(dst + o);
            const __m256i low = _mm256_srli_epi16(
                _mm256_add_epi16(_mm256_mullo_epi16(d16, widen_avx2(kr + o)), widen_avx2(br + o)), 2);
            const __m256i b16 = _mm256_loadu_si256((const __m256i *)(bq + o));
            out[h] = divide_255_avx2(
                _mm256_add_epi16(_mm256_add_epi16(_mm256_mullo_epi16(d16, widen_avx2(kq + o)), b16), low));
        }
        _mm256_storeu_si256((__m256i *)(dst + i), pack_avx2(out[0], out[1]));
    }
    return i;
}

#endif /* WATERMARK_KERNELS_X86 */

/* The frame rows a blend writes are a stride apart, which the hardware
 * prefetchers do not follow from one row to the next: the row PREFETCH_ROWS
 * ahead is prefetched by hand. */
#define PREFETCH_ROWS 4

static inline void prefetch_row(const uint8_t *row, int count) {
    for (int i = 0; i < count; i += 64) __builtin_prefetch(row + i, 1);
    __builtin_prefetch(row + count - 1, 1);
}

static void blend_luma_row(int level, uint8_t *dst, const uint8_t *y, const uint8_t *alpha, int count) {
    int done = 0;
#ifdef WATERMARK_KERNELS_X86
    if (level >= 2) done = luma_avx2(dst, y, alpha, count);
    else if (level >= 1) done = luma_sse2(dst, y, alpha, count);
#else
    (void)level;
#endif
    luma_c(dst + done, y + done, alpha + done, count - done);
}

static void blend_chroma_row(int level, uint8_t *dst, const uint8_t *kq, const uint8_t *kr, const uint16_t *bq,
                             const uint8_t *br, int count) {
    int done = 0;
#ifdef WATERMARK_KERNELS_X86
    if (level >= 2) done = chroma_avx2(dst, kq, kr, bq, br, count);
    else if (level >= 1) done = chroma_sse2(dst, kq, kr, bq, br, count);
#else
    (void)level;
#endif
    chroma_c(dst + done, kq + done, kr + done, bq + done, br + done, count - done);
}

void rfx_watermark_blend_luma(int level, uint8_t *dst, int dst_stride, const uint8_t *y, const uint8_t *alpha,
                              int count, int rows) {
    if (count <= 0) return;
    for (int r = 0; r < rows; r++) {
        if (r + PREFETCH_ROWS < rows) prefetch_row(dst + (ptrdiff_t)(r + PREFETCH_ROWS) * dst_stride, count);
        const ptrdiff_t o = (ptrdiff_t)r * count;
        blend_luma_row(level, dst + (ptrdiff_t)r * dst_stride, y + o, alpha + o, count);
    }
}

void rfx_watermark_blend_chroma(int level, uint8_t *dst, int dst_stride, const uint8_t *kq, const uint8_t *kr,
                                const uint16_t *bq, const uint8_t *br, int count, int rows) {
    if (count <= 0) return;
    for (int r = 0; r < rows; r++) {
        if (r + PREFETCH_ROWS < rows) prefetch_row(dst + (ptrdiff_t)(r + PREFETCH_ROWS) * dst_stride, count);
        const ptrdiff_t o = (ptrdiff_t)r * count;
        blend_chroma_row(level, dst + (ptrdiff_t)r * dst_stride, kq + o, kr + o, bq + o, br + o, count);
    }
}

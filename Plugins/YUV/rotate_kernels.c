/*
 * rotate_kernels.c — transposes and row reversals for `rotate` and `mirror`
 * (see rotate_kernels.h), in AVX2, SSSE3 and portable C.
 *
 * Transpose: byte blocks are transposed in registers by four rounds of unpacks
 * (8-, 16-, 32- and 64-bit interleaves), 16x16 with SSE2 and two 16x16 blocks
 * side by side with AVX2 (the unpacks work per 128-bit lane, so a 16x32 source
 * block becomes two 16x16 results). The plane is walked in bands of 64 source
 * columns, one cache line of every source row, from top to bottom: each source
 * line is read once, and each band writes 64 destination rows front to back,
 * a write stream the prefetchers follow. An edge narrower than a block is done
 * by one more block that overlaps the previous one (the overlap is written
 * twice with the same bytes), so only planes smaller than a block take the
 * scalar path. The band reads one line per source row, a stride the hardware
 * prefetchers follow poorly from DRAM: the lines TRANSPOSE_PREFETCH_ROWS ahead
 * are prefetched by hand (cold frames come from DRAM), and the end of a band
 * prefetches the start of the next one.
 *
 * Row reversal: 32 (AVX2) or 16 (SSSE3) bytes at a time through pshufb (plus a
 * lane swap for AVX2), with the same overlapping last block. The source is read
 * in the direction its rows go (ascending for a positive stride, descending for
 * a negative one), one stream the prefetchers follow; the destination, written
 * the other way, is the chain's own buffer and warm. Within a row the stores
 * walk down through memory, which the prefetchers do not take up, so with rows
 * going up (the left-right mirror) each row prefetches the lines of the next
 * destination row for writing, which brings the cold mirror close to a plain
 * copy's speed. With rows going down too (the half turn) the whole destination
 * is one falling stream and the same prefetch made it slower, so it is not done
 * there. Prefetching source rows ahead by hand, which pays in the scaler
 * (scale_kernels.c), made both mirrors slower: the prefetchers follow these
 * ascending rows by themselves.
 *
 * Row copy with a bottom-up destination (the top-bottom flip): one row at a
 * time, since the rows cannot be coalesced into one copy. libyuv's CopyPlane
 * does each row with `rep movsb` or memcpy, whose start-up costs show at 640-
 * to 1920-byte rows: 0.63-0.82 of a whole-frame copy's speed against 0.82-1.01
 * for the AVX2 loop below (C microbench; in the bench the cold 720p flip went
 * from 0.73 to 0.85-0.87).
 */
#include "rotate_kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define ROTATE_KERNELS_X86 1
#include <immintrin.h>
#endif

/* ------------------------------------------------------------- portable -- */

/* Columns [c0, c1) of `height` rows, in 32x32 tiles so that both the rows read
 * and the rows written stay in L1 within a tile. */
static void transpose_c(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int height, int c0, int c1) {
    enum { TILE = 32 };
    for (int cb = c0; cb < c1; cb += TILE) {
        const int ce = cb + TILE < c1 ? cb + TILE : c1;
        for (int rb = 0; rb < height; rb += TILE) {
            const int re = rb + TILE < height ? rb + TILE : height;
            for (int c = cb; c < ce; c++) {
                uint8_t *d = dst + (ptrdiff_t)c * ds;
                for (int r = rb; r < re; r++) d[r] = src[(ptrdiff_t)r * ss + c];
            }
        }
    }
}

static void reverse_rows_c(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height) {
    for (int y = 0; y < height; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * ss;
        uint8_t *d = dst + (ptrdiff_t)y * ds;
        for (int x = 0; x < width; x++) d[x] = s[width - 1 - x];
    }
}

static void copy_rows_c(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height) {
    for (int y = 0; y < height; y++) memcpy(dst + (ptrdiff_t)y * ds, src + (ptrdiff_t)y * ss, (size_t)width);
}

#ifdef ROTATE_KERNELS_X86

/* Prefetches a destination row's lines for writing (PREFETCHW where the CPU has
 * it, a read prefetch elsewhere; never a fault). */
__attribute__((always_inline)) static inline void prefetch_row_for_write(uint8_t *row, int width) {
    for (int x = 0; x < width; x += 64) __builtin_prefetch(row + x, 1, 3);
}

/* ----------------------------------------------------------- SSE2/SSSE3 -- */

/* The four unpack rounds of a 16x16 byte transpose; `T`, `LO8`… name the
 * vector type and its interleaves, so SSE2 and AVX2 share one network. */
#define TRANSPOSE_16x16(T, LO8, HI8, LO16, HI16, LO32, HI32, LO64, HI64, r)                                  \
    do {                                                                                                   \
        T a_[16], b_[16];                                                                                  \
        for (int i_ = 0; i_ < 8; i_++) {                                                                   \
            a_[2 * i_] = LO8(r[2 * i_], r[2 * i_ + 1]);                                                    \
            a_[2 * i_ + 1] = HI8(r[2 * i_], r[2 * i_ + 1]);                                                \
        }                                                                                                  \
        /* a_[2k], a_[2k+1]: rows 2k, 2k+1 interleaved, columns 0-7 and 8-15 */                           \
        for (int g_ = 0; g_ < 4; g_++) {                                                                   \
            T *p_ = a_ + 4 * g_, *q_ = b_ + 4 * g_;                                                        \
            q_[0] = LO16(p_[0], p_[2]); q_[1] = HI16(p_[0], p_[2]);                                        \
            q_[2] = LO16(p_[1], p_[3]); q_[3] = HI16(p_[1], p_[3]);                                        \
        }                                                                                                  \
        /* b_[4g + k]: rows 4g..4g+3, columns 4k..4k+3 */                                                 \
        for (int g_ = 0; g_ < 2; g_++) {                                                                   \
            T *p_ = b_ + 8 * g_, *q_ = a_ + 8 * g_;                                                        \
            for (int k_ = 0; k_ < 4; k_++) {                                                               \
                q_[2 * k_] = LO32(p_[k_], p_[k_ + 4]);                                                     \
                q_[2 * k_ + 1] = HI32(p_[k_], p_[k_ + 4]);                                                 \
            }                                                                                              \
        }                                                                                                  \
        /* a_[8g + j]: rows 8g..8g+7, columns 2j, 2j+1 */                                                 \
        for (int j_ = 0; j_ < 8; j_++) {                                                                   \
            r[2 * j_] = LO64(a_[j_], a_[j_ + 8]);                                                          \
            r[2 * j_ + 1] = HI64(a_[j_], a_[j_ + 8]);                                                      \
        }                                                                                                  \
        /* r[c]: column c, rows 0..15 */                                                                  \
    } while (0)

/* How far ahead of the band's current 16 rows its source lines are prefetched. */
#define TRANSPOSE_PREFETCH_ROWS 128
/* Source columns per band: one cache line of every source row. */
#define TRANSPOSE_BAND_COLUMNS 64

/* Prefetches the band's lines of source rows [row, row + 16). Rows past the
 * plane's end wrap to the top of the next band (up to c1), so that a band's
 * first rows are already on their way when it starts: without the wrap they
 * were demand misses. TRANSPOSE_PREFETCH_ROWS ahead: further than the band's
 * own height, because a row's line arrives from DRAM long after it is asked
 * for (the A/B runs behind the distance are in git's history of
 * docs/benchmarks.md). */
__attribute__((always_inline)) static inline void
prefetch_band(const uint8_t *src, ptrdiff_t ss, int height, int row, int band, int band_end, int c1) {
    if (row + 16 > height) {
        row = row - height < 0 ? 0 : row - height;
        band = band_end;
        band_end = band + TRANSPOSE_BAND_COLUMNS < c1 ? band + TRANSPOSE_BAND_COLUMNS : c1;
        if (band >= c1 || row + 16 > height) return;
    }
    for (int k = 0; k < 16; k++) {
        const uint8_t *line = src + (ptrdiff_t)(row + k) * ss;
        _mm_prefetch((const char *)(line + band), _MM_HINT_T0);
        _mm_prefetch((const char *)(line + band_end - 1), _MM_HINT_T0);
    }
}

/* src: 16 rows x 16 columns; dst: 16 rows x 16 columns. */
__attribute__((target("sse2"), always_inline)) static inline void
transpose_16x16_sse2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds) {
    __m128i r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm_loadu_si128((const __m128i *)(src + i * ss));
    TRANSPOSE_16x16(__m128i, _mm_unpacklo_epi8, _mm_unpackhi_epi8, _mm_unpacklo_epi16, _mm_unpackhi_epi16,
                    _mm_unpacklo_epi32, _mm_unpackhi_epi32, _mm_unpacklo_epi64, _mm_unpackhi_epi64, r);
    for (int i = 0; i < 16; i++) _mm_storeu_si128((__m128i *)(dst + i * ds), r[i]);
}

/* Columns [c0, c1), c1 - c0 >= 16 and height >= 16: 16x16 blocks, the last
 * block of a band or of the rows overlapping its neighbour. */
__attribute__((target("sse2"))) static void
transpose_sse2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int height, int c0, int c1) {
    for (int band = c0; band < c1; band += TRANSPOSE_BAND_COLUMNS) {
        const int band_end = band + TRANSPOSE_BAND_COLUMNS < c1 ? band + TRANSPOSE_BAND_COLUMNS : c1;
        for (int r = 0; r < height; r += 16) {
            const int rr = r + 16 <= height ? r : height - 16;
            prefetch_band(src, ss, height, rr + TRANSPOSE_PREFETCH_ROWS, band, band_end, c1);
            for (int c = band; c < band_end; c += 16) {
                const int cc = c + 16 <= c1 ? c : c1 - 16;
                transpose_16x16_sse2(src + rr * ss + cc, ss, dst + cc * ds + rr, ds);
            }
        }
    }
}

static const uint8_t reverse_bytes[32] = { 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                           15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 };

/* width >= 16. */
__attribute__((target("ssse3"))) static void
reverse_rows_ssse3(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height) {
    const __m128i shuffle = _mm_loadu_si128((const __m128i *)reverse_bytes);
    for (int y = 0; y < height; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * ss;
        uint8_t *d = dst + (ptrdiff_t)y * ds;
        if (ds > 0 && y + 1 < height) prefetch_row_for_write(d + ds, width);
        int x = 0;
        for (; x + 32 <= width; x += 32) {
            const int at = ss > 0 ? x : width - 32 - x;
            const __m128i lo = _mm_loadu_si128((const __m128i *)(s + at));
            const __m128i hi = _mm_loadu_si128((const __m128i *)(s + at + 16));
            _mm_storeu_si128((__m128i *)(d + width - 16 - at), _mm_shuffle_epi8(lo, shuffle));
            _mm_storeu_si128((__m128i *)(d + width - 32 - at), _mm_shuffle_epi8(hi, shuffle));
        }
        for (; x < width; x += 16) {
            /* xx counts from the end the source is read from. */
            const int xx = x + 16 <= width ? x : width - 16;
            const int at = ss > 0 ? xx : width - 16 - xx;
            const __m128i v = _mm_loadu_si128((const __m128i *)(s + at));
            _mm_storeu_si128((__m128i *)(d + width - 16 - at), _mm_shuffle_epi8(v, shuffle));
        }
    }
}

/* ------------------------------------------------------------------ AVX2 -- */

/* src: 16 rows x 32 columns; dst: 32 rows x 16 columns. */
__attribute__((target("avx2"), always_inline)) static inline void
transpose_16x32_avx2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds) {
    __m256i r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i *)(src + i * ss));
    TRANSPOSE_16x16(__m256i, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, _mm256_unpacklo_epi16,
                    _mm256_unpackhi_epi16, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32, _mm256_unpacklo_epi64,
                    _mm256_unpackhi_epi64, r);
    /* The low lane of r[c] is source column c, the high lane column 16 + c. */
    for (int i = 0; i < 16; i++) {
        _mm_storeu_si128((__m128i *)(dst + i * ds), _mm256_castsi256_si128(r[i]));
        _mm_storeu_si128((__m128i *)(dst + (i + 16) * ds), _mm256_extracti128_si256(r[i], 1));
    }
}

/* Columns [c0, c1), c1 - c0 >= 32 and height >= 16. */
__attribute__((target("avx2"))) static void
transpose_avx2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int height, int c0, int c1) {
    for (int band = c0; band < c1; band += TRANSPOSE_BAND_COLUMNS) {
        const int band_end = band + TRANSPOSE_BAND_COLUMNS < c1 ? band + TRANSPOSE_BAND_COLUMNS : c1;
        for (int r = 0; r < height; r += 16) {
            const int rr = r + 16 <= height ? r : height - 16;
            prefetch_band(src, ss, height, rr + TRANSPOSE_PREFETCH_ROWS, band, band_end, c1);
            for (int c = band; c < band_end; c += 32) {
                const int cc = c + 32 <= c1 ? c : c1 - 32;
                transpose_16x32_avx2(src + rr * ss + cc, ss, dst + cc * ds + rr, ds);
            }
        }
    }
}

/* width >= 32. */
__attribute__((target("avx2"))) static void
reverse_rows_avx2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height) {
    const __m256i shuffle = _mm256_loadu_si256((const __m256i *)reverse_bytes);
    for (int y = 0; y < height; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * ss;
        uint8_t *d = dst + (ptrdiff_t)y * ds;
        if (ds > 0 && y + 1 < height) prefetch_row_for_write(d + ds, width);
        /* Two vectors an iteration: more loads in flight on cold frames. */
        int x = 0;
        for (; x + 64 <= width; x += 64) {
            const int at = ss > 0 ? x : width - 64 - x;
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(s + at));
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(s + at + 32));
            /* Reverse within each 128-bit lane, then swap the lanes. */
            _mm256_storeu_si256((__m256i *)(d + width - 32 - at),
                                _mm256_permute4x64_epi64(_mm256_shuffle_epi8(lo, shuffle), 0x4E));
            _mm256_storeu_si256((__m256i *)(d + width - 64 - at),
                                _mm256_permute4x64_epi64(_mm256_shuffle_epi8(hi, shuffle), 0x4E));
        }
        for (; x < width; x += 32) {
            const int xx = x + 32 <= width ? x : width - 32;
            const int at = ss > 0 ? xx : width - 32 - xx;
            const __m256i v = _mm256_loadu_si256((const __m256i *)(s + at));
            _mm256_storeu_si256((__m256i *)(d + width - 32 - at),
                                _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, shuffle), 0x4E));
        }
    }
}

/* width >= 32. */
__attribute__((target("avx2"))) static void
copy_rows_avx2(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height) {
    for (int y = 0; y < height; y++) {
        const uint8_t *s = src + (ptrdiff_t)y * ss;
        uint8_t *d = dst + (ptrdiff_t)y * ds;
        int x = 0;
        for (; x + 64 <= width; x += 64) {
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(s + x));
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(s + x + 32));
            _mm256_storeu_si256((__m256i *)(d + x), lo);
            _mm256_storeu_si256((__m256i *)(d + x + 32), hi);
        }
        for (; x < width; x += 32) {
            const int xx = x + 32 <= width ? x : width - 32;
            _mm256_storeu_si256((__m256i *)(d + xx), _mm256_loadu_si256((const __m256i *)(s + xx)));
        }
    }
}

#endif /* ROTATE_KERNELS_X86 */

/* --------------------------------------------------------------- dispatch -- */

void rotate_transpose_plane(rotate_kernel_level level, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                            ptrdiff_t dst_stride, int height, int column_begin, int column_end) {
    const int columns = column_end - column_begin;
    if (columns <= 0 || height <= 0) return;
#ifdef ROTATE_KERNELS_X86
    if (level >= ROTATE_KERNELS_AVX2 && columns >= 32 && height >= 16) {
        transpose_avx2(src, src_stride, dst, dst_stride, height, column_begin, column_end);
        return;
    }
    if (level >= ROTATE_KERNELS_SSSE3 && columns >= 16 && height >= 16) {
        transpose_sse2(src, src_stride, dst, dst_stride, height, column_begin, column_end);
        return;
    }
#else
    (void)level;
#endif
    transpose_c(src, src_stride, dst, dst_stride, height, column_begin, column_end);
}

void rotate_reverse_rows(rotate_kernel_level level, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                         ptrdiff_t dst_stride, int width, int height) {
    if (width <= 0 || height <= 0) return;
#ifdef ROTATE_KERNELS_X86
    if (level >= ROTATE_KERNELS_AVX2 && width >= 32) {
        reverse_rows_avx2(src, src_stride, dst, dst_stride, width, height);
        return;
    }
    if (level >= ROTATE_KERNELS_SSSE3 && width >= 16) {
        reverse_rows_ssse3(src, src_stride, dst, dst_stride, width, height);
        return;
    }
#else
    (void)level;
#endif
    reverse_rows_c(src, src_stride, dst, dst_stride, width, height);
}

void rotate_copy_rows(rotate_kernel_level level, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                      ptrdiff_t dst_stride, int width, int height) {
    if (width <= 0 || height <= 0) return;
#ifdef ROTATE_KERNELS_X86
    if (level >= ROTATE_KERNELS_AVX2 && width >= 32) {
        copy_rows_avx2(src, src_stride, dst, dst_stride, width, height);
        return;
    }
#else
    (void)level;
#endif
    copy_rows_c(src, src_stride, dst, dst_stride, width, height);
}

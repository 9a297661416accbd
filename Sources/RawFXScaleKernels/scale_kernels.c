/*
 * scale_kernels.c — the plane scaler behind the `scale` filter.
 *
 * Why not libyuv's I420Scale: it mallocs three row buffers per call at most
 * ratios, and its general bilinear path (a vertical InterpolateRow over the
 * whole source row, then a per-pixel ScaleFilterCols gather) is behind swscale
 * at 1080p -> 720p. The means here:
 *
 * - Fixed ratios (2:1, 3:2, 4:3 and 3:1 in both dimensions, filter=bilinear or
 *   box): the phase pattern repeats every few pixels, so the weights are
 *   constants. One fused pass per output row: pshufb gathers each output's
 *   source pairs, pmaddubsw applies the horizontal weights to two (or three)
 *   source rows, pmullw/paddw the vertical weights, and one pmulhuw divides by
 *   the weight total with a single rounding: out = (sum + total/2) / total,
 *   exactly (the multiplier is checked against exact division for every
 *   possible sum when the plan is made). No row buffer, no second pass.
 *   Weights: bilinear samples the centre of each output pixel with quarter
 *   precision (3:2: 0.25/1.75 -> (3,1),(1,3); 4:3: (3,1),(2,2),(1,3);
 *   2:1: (1,1)); box is the exact area average (3:2: (2,1),(1,2)/3; 2:1 the
 *   2x2 mean, libyuv's ScaleRowDown2Box exactly; 4:3 equals bilinear). At 3:1,
 *   where libyuv's bilinear degrades to point sampling, bilinear is the tent
 *   (1,2,1)/4 and box the 3x3 mean.
 * - Any other ratio in bilinear or linear (and box where libyuv reduces it to
 *   bilinear, up to 2:1): per-column tables made with the plan (the 16 outputs of
 *   a block: pshufb indices into one or two 16-byte loads, pmaddubsw weights),
 *   libyuv's positions (ScaleSlope), one fused pass per output row; upscales blend
 *   each source row's columns once and keep two such rows. libyuv's general rows
 *   (InterpolateRow over the whole source row, then ScaleFilterCols, two samples a
 *   step) were behind swscale there.
 * - Box past 2:1 in both dimensions, up to 7:1: the area mean, rows first. The
 *   rows an output row covers are weighed into one 16-bit row, each source row
 *   read once as one stream, then each output takes an eight-sample window of it
 *   with pmaddwd. libyuv's ScalePlaneBox averages boxes of whole samples and
 *   truncates, and past 4:1 it was 0.77-0.88 of swscale's area.
 * - Everything else (point sampling, box past 7:1, bilinear past about 4:1,
 *   libyuv's whole-plane special cases): libyuv's own exported row functions,
 *   driven the way libyuv's ScalePlaneBilinearDown / ScalePlaneBilinearUp /
 *   ScalePlaneBox / ScalePlaneSimple drive them (ScaleSlope positions,
 *   ScaleFilterReduce), but with the row buffers allocated at configure and
 *   each output row a function of its index only, so any band of rows can run
 *   on its own thread and give the same bytes.
 * - Run-time dispatch: the AVX-512 (any ratio only: 32 outputs a step, one
 *   vpermb gathering their taps from one 64-byte load), AVX2 and SSSE3 kernels
 *   are compiled with __attribute__((target)) and chosen with
 *   __builtin_cpu_supports; the portable C path computes the same integers
 *   (tests compare them byte for byte by forcing RAWFX_KERNELS=c). The build
 *   assumes nothing about the CPU.
 */
#include "scale_kernels.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libyuv.h>
#include <libyuv/row.h>
#include <libyuv/scale_row.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SCALE_X86 1
#else
#define SCALE_X86 0
#endif

/* ----------------------------------------------------------------- plan -- */

/* The fixed phase pattern for src -> dst in one dimension, or 0. */
static int fixed_phases(int src, int dst, int filter, scale_phases *p) {
    static const scale_phases half = { 2, 1, 2, 2, { 0 }, { { 1, 1 } } };
    static const scale_phases two_thirds_bilinear = { 3, 2, 2, 4, { 0, 1 }, { { 3, 1 }, { 1, 3 } } };
    static const scale_phases two_thirds_box = { 3, 2, 2, 3, { 0, 1 }, { { 2, 1 }, { 1, 2 } } };
    static const scale_phases three_quarters = { 4, 3, 2, 4, { 0, 1, 2 }, { { 3, 1 }, { 2, 2 }, { 1, 3 } } };
    /* the 3-tap SIMD rows rely on these shapes: outer weights 1, middle 1 or 2 */
    static const scale_phases third_bilinear = { 3, 1, 3, 4, { 0 }, { { 1, 2, 1 } } };
    static const scale_phases third_box = { 3, 1, 3, 3, { 0 }, { { 1, 1, 1 } } };
    const int box = filter == SCALE_FILTER_BOX;
    if (dst * 2 == src) *p = half;
    else if (dst * 3 == src * 2) *p = box ? two_thirds_box : two_thirds_bilinear;
    else if (dst * 4 == src * 3) *p = three_quarters;
    else if (dst * 3 == src) *p = box ? third_box : third_bilinear;
    else return 0;
    return 1;
}

/* Finds a multiplier m with (s + total/2) * m >> 16 == (s + total/2) / total for
 * every sum s of 8-bit samples, or returns 0. */
static int exact_multiplier(int total) {
    const int bias = total / 2;
    for (int m = 65536 / total; m <= 65536 / total + 1; m++) {
        int ok = 1;
        for (int s = 0; s <= 255 * total && ok; s++)
            ok = (((s + bias) * m) >> 16) == (s + bias) / total;
        if (ok && (255 * total + bias) * (int64_t)m < (1 << 16) * 65536LL) return m;
    }
    return 0;
}

/* The pshufb / pmaddubsw tables of the two-tap kernel: 8 outputs a group. */
static void fixed2_build_tables(scale_plan *plan) {
    const scale_phases *h = &plan->h;
    plan->group_count = h->period_out == 3 ? 3 : 1;
    plan->block_in = 8 * plan->group_count / h->period_out * h->period_in;
    for (int g = 0; g < plan->group_count; g++) {
        int start[8];
        for (int i = 0; i < 8; i++) {
            const int o = 8 * g + i, q = o % h->period_out;
            start[i] = o / h->period_out * h->period_in + h->first[q];
            plan->weights[g][2 * i] = (uint8_t)h->weight[q][0];
            plan->weights[g][2 * i + 1] = (uint8_t)h->weight[q][1];
        }
        plan->group_offset[g] = start[0];
        for (int i = 0; i < 8; i++) {
            plan->shuffle[g][2 * i] = (uint8_t)(start[i] - start[0]);
            plan->shuffle[g][2 * i + 1] = (uint8_t)(start[i] - start[0] + 1);
        }
    }
}

/* Source bytes a row's SIMD loads may reach past a block's offset. */
#define COLUMN_NEAR_BYTES 16
#define COLUMN_FAR_BYTES 32

/* Blocks for either path's tables: the any-ratio path's (one block per 16 outputs) or the
 * area path's (SCALE_AREA_TAPS int16 weights and an int32 offset per output). */
static size_t area_table_bytes(int dst_w) {
    return (size_t)dst_w * (SCALE_AREA_TAPS * sizeof(int16_t) + sizeof(int32_t));
}

_Static_assert(sizeof(scale_column_wide) == sizeof(scale_column_block), "a wide table takes one block's storage");

size_t scale_column_blocks(int max_dst_w) {
    if (max_dst_w <= 0) return 0;
    /* the blocks, then the 512-bit kernel's tables: one per two blocks */
    const size_t columns = ((size_t)max_dst_w + 15) / 16 + ((size_t)max_dst_w + 31) / 32;
    const size_t area = (area_table_bytes(max_dst_w) + sizeof(scale_column_block) - 1) / sizeof(scale_column_block);
    return columns > area ? columns : area;
}


/* Output o's two taps on the bilinear / linear path: columns a and a + 1 at libyuv's
 * position x + o * dx, weights (128 - f, f) with f its 7-bit fraction. */
static int bilinear_taps(const scale_plan *plan, int o, int *index, int *weight) {
    const int64_t x = (int64_t)plan->x + (int64_t)o * plan->dx;
    int a = (int)(x >> 16), fraction = (int)((x >> 9) & 127);
    if (a < 0) a = 0, fraction = 0;
    if (a >= plan->src_w - 1) a = plan->src_w - 1, fraction = 0;
    index[0] = a;
    index[1] = fraction ? a + 1 : a;
    weight[0] = 128 - fraction;
    weight[1] = fraction;
    return 2;
}

/* Output o's area taps when `src` samples shrink to `dst`: every source sample that
 * [o * src / dst, (o + 1) * src / dst) covers, weighted by the part it covers in
 * units of 1/total of the output, apportioned by largest remainder (each weight is
 * its exact share rounded down, and the units left go one each to the largest
 * remainders, the first on ties), so the weights sum to `total` and each is within
 * one unit of its share. 0 when more than max_taps samples are covered. */
static int area_taps(int src, int dst, int o, int total, int *index, int *weight, int max_taps) {
    const int64_t lo = (int64_t)o * src, hi = (int64_t)(o + 1) * src; /* in 1/dst of a sample */
    const int first = (int)(lo / dst), count = (int)((hi - 1) / dst) - first + 1;
    if (count > max_taps || count > SCALE_AREA_TAPS) return 0;
    int64_t remainder[SCALE_AREA_TAPS];
    int left = total;
    for (int n = 0; n < count; n++) {
        const int64_t k = first + n, from = lo > k * dst ? lo : k * dst, to = hi < (k + 1) * dst ? hi : (k + 1) * dst;
        index[n] = (int)k;
        weight[n] = (int)((to - from) * total / src);
        remainder[n] = (to - from) * total % src;
        left -= weight[n];
    }
    for (; left > 0; left--) {
        int largest = 0;
        for (int n = 1; n < count; n++)
            if (remainder[n] > remainder[largest]) largest = n;
        weight[largest]++;
        remainder[largest] = -1;
    }
    return count;
}

/* The 512-bit kernel's tables (scale_column_wide) into `storage`, after the blocks, when
 * every group of 32 outputs reads inside the 64 bytes from its first tap and there is room;
 * else plan->wide stays NULL and the 256-bit kernel runs. */
static void columns_plan_wide(scale_plan *plan, scale_column_block *storage, size_t capacity) {
    const int groups = (plan->dst_w + 31) / 32;
    plan->wide = NULL;
    plan->wide_whole = 0;
    if (plan->isa < SCALE_ISA_AVX512 || (size_t)groups > capacity) return;
    scale_column_wide *wide = (scale_column_wide *)(void *)storage;
    int whole = 0, open = 1;
    for (int g = 0; g < groups; g++) {
        int index[2], weight[2];
        bilinear_taps(plan, 32 * g, index, weight);
        const int base = index[0];
        if (base != plan->columns[2 * g].offset[0]) return;
        memset(wide[g].index, 0, sizeof wide[g].index);
        memset(wide[g].weights, 0, sizeof wide[g].weights);
        for (int i = 0; i < 32 && 32 * g + i < plan->dst_w; i++) {
            bilinear_taps(plan, 32 * g + i, index, weight);
            for (int n = 0; n < 2; n++) {
                const int relative = index[n] - base;
                if (relative < 0 || relative >= 64) return;
                wide[g].index[2 * i + n] = (uint8_t)relative;
                wide[g].weights[2 * i + n] = (uint8_t)weight[n];
            }
        }
        open = open && base + 64 <= plan->src_w;
        whole += open;
    }
    plan->wide = wide;
    plan->wide_whole = whole;
}

/* Fills the any-ratio path's column tables into `blocks`; 0 when there are too few
 * blocks or 8 outputs span more than 32 source bytes (then libyuv's rows stay). */
static int columns_plan(scale_plan *plan, scale_column_block *blocks, size_t capacity) {
    const size_t count = ((size_t)plan->dst_w + 15) / 16;
    if (blocks == NULL || count > capacity) return 0;
    int far = 0, simd_halves = 0, simd_open = 1;
    for (size_t b = 0; b < count; b++) {
        scale_column_block *block = &blocks[b];
        memset(block->near, 0x80, sizeof block->near);
        memset(block->far, 0x80, sizeof block->far);
        memset(block->weights, 0, sizeof block->weights);
        for (int k = 0; k < 2; k++) {
            int offset = -1;
            for (int i = 0; i < 8; i++) {
                const int o = (int)(16 * b) + 8 * k + i, lane = 16 * k + 2 * i;
                if (o >= plan->dst_w) break; /* past the row: no taps, weight 0 */
                int index[2], weight[2];
                bilinear_taps(plan, o, index, weight);
                if (offset < 0) offset = index[0]; /* taps only move right */
                for (int n = 0; n < 2; n++) {
                    const int relative = index[n] - offset, slot = lane + n;
                    if (relative < 0 || relative >= COLUMN_FAR_BYTES) return 0;
                    if (relative >= COLUMN_NEAR_BYTES) far = 1;
                    if (relative < COLUMN_NEAR_BYTES) block->near[slot] = (uint8_t)relative;
                    else block->far[slot] = (uint8_t)(relative - COLUMN_NEAR_BYTES);
                    block->weights[slot] = (uint8_t)weight[n];
                }
            }
            block->offset[k] = offset < 0 ? 0 : offset;
        }
    }
    /* Whole halves whose loads stay in the row run in SIMD; offsets only grow. */
    const int load = far ? COLUMN_FAR_BYTES : COLUMN_NEAR_BYTES;
    for (int h = 0; h < plan->dst_w / 8 && simd_open; h++) {
        simd_open = blocks[h / 2].offset[h % 2] + load <= plan->src_w;
        simd_halves += simd_open;
    }
    plan->columns = blocks;
    plan->column_far = far;
    plan->simd_halves = simd_halves;
    columns_plan_wide(plan, blocks + count, capacity - count);
    /* Source rows are prefetched (SCALE_PREFETCH_ROWS) on downscales past 5:4, where a
     * row is read before the prefetchers catch up; nearer 1:1 and on upscales the rows
     * come slowly enough that the prefetch only costs. */
    plan->column_prefetch = 4 * plan->src_h > 5 * plan->dst_h;
    return 1;
}

/* Fills the area path's tables into `storage` (capacity blocks): 0 when they do not
 * fit or an output covers more than SCALE_AREA_TAPS samples in either dimension. */
static int area_plan(scale_plan *plan, scale_column_block *storage, size_t capacity) {
    const size_t weight_bytes = (size_t)plan->dst_w * SCALE_AREA_TAPS * sizeof(int16_t);
    if (storage == NULL || area_table_bytes(plan->dst_w) > capacity * sizeof *storage) return 0;
    int index[SCALE_AREA_TAPS], weight[SCALE_AREA_TAPS];
    for (int j = 0; j < plan->dst_h; j++)
        if (area_taps(plan->src_h, plan->dst_h, j, 256, index, weight, SCALE_AREA_TAPS) == 0) return 0;
    int16_t *weights = (int16_t *)(void *)storage;
    int32_t *offsets = (int32_t *)(void *)((uint8_t *)storage + weight_bytes);
    int widest = 0;
    for (int o = 0; o < plan->dst_w; o++) {
        const int taps = area_taps(plan->src_w, plan->dst_w, o, 16384, index, weight, SCALE_AREA_TAPS);
        if (taps == 0) return 0;
        if (taps > widest) widest = taps;
        offsets[o] = index[0];
        for (int n = 0; n < SCALE_AREA_TAPS; n++) weights[SCALE_AREA_TAPS * o + n] = (int16_t)(n < taps ? weight[n] : 0);
    }
    plan->area_weights = weights;
    plan->area_offsets = offsets;
    plan->area_narrow = widest <= 4;
    return 1;
}

void scale_plan_init(scale_plan *plan, int src_w, int src_h, int dst_w, int dst_h, int filter, scale_isa isa,
                     scale_column_block *columns, size_t column_capacity) {
    memset(plan, 0, sizeof *plan);
    plan->isa = isa;
    plan->src_w = src_w;
    plan->src_h = src_h;
    plan->dst_w = dst_w;
    plan->dst_h = dst_h;
    plan->row_alignment = 1;
    plan->filter = filter;
    if (src_w == dst_w && src_h == dst_h) {
        plan->path = SCALE_PATH_COPY;
        return;
    }
    const int smooth = filter == SCALE_FILTER_BILINEAR || filter == SCALE_FILTER_BOX;
    if (smooth && 2 * dst_w == src_w && 2 * dst_h == src_h) {
        plan->path = SCALE_PATH_HALF;
        return;
    }
    if (smooth && 4 * dst_w == 3 * src_w && 4 * dst_h == 3 * src_h) {
        plan->path = SCALE_PATH_THREE_QUARTERS;
        plan->row_alignment = 3;
        return;
    }
    if (smooth &&
        fixed_phases(src_w, dst_w, filter, &plan->h) && fixed_phases(src_h, dst_h, filter, &plan->v) &&
        plan->h.taps == plan->v.taps) {
        const int total = plan->h.total * plan->v.total;
        const int multiplier = exact_multiplier(total);
        if (multiplier != 0) {
            plan->path = plan->h.taps == 2 ? SCALE_PATH_FIXED2 : SCALE_PATH_FIXED3;
            plan->bias = total / 2;
            plan->multiplier = multiplier;
            plan->row_alignment = plan->v.period_out;
            if (plan->path == SCALE_PATH_FIXED2) fixed2_build_tables(plan);
            return;
        }
    }
    /* libyuv's own choice of algorithm, in ScalePlane's order. */
    const enum FilterMode f = ScaleFilterReduce(src_w, src_h, dst_w, dst_h, (enum FilterMode)filter);
    plan->filter = (int)f;
    ScaleSlope(src_w, src_h, dst_w, dst_h, f, &plan->x, &plan->y, &plan->dx, &plan->dy);
    const int down = dst_w <= src_w && dst_h <= src_h;
    if ((dst_w == src_w && f != kFilterBox) ||
        (down && ((4 * dst_w == 3 * src_w && 4 * dst_h == 3 * src_h) || (2 * dst_w == src_w && 2 * dst_h == src_h) ||
                  (8 * dst_w == 3 * src_w && 8 * dst_h == 3 * src_h) ||
                  (4 * dst_w == src_w && 4 * dst_h == src_h && (f == kFilterBox || f == kFilterNone)))) ||
        (!(f == kFilterBox && dst_h * 2 < src_h) &&
         (((dst_w + 1) / 2 == src_w && f == kFilterLinear) ||
          ((dst_h + 1) / 2 == src_h && (dst_w + 1) / 2 == src_w && (f == kFilterBilinear || f == kFilterBox))))) {
        /* ScalePlane's special cases: they allocate nothing; one slice runs them whole */
        plan->path = SCALE_PATH_LIBYUV;
        plan->filter = filter;
        plan->row_alignment = dst_h;
    } else if (f == kFilterBox && dst_h * 2 < src_h) {
        /* box past 2:1 in both dimensions: the area mean up to 7:1 (SCALE_AREA_TAPS),
         * libyuv's integer boxes beyond */
        plan->path = area_plan(plan, columns, column_capacity) ? SCALE_PATH_AREA : SCALE_PATH_BOX;
    } else if (f == kFilterNone) {
        plan->path = SCALE_PATH_POINT;
    } else {
        plan->path = dst_h > src_h ? SCALE_PATH_UP : SCALE_PATH_DOWN;
        if (f == kFilterBox) plan->filter = kFilterBilinear;
        if (columns_plan(plan, columns, column_capacity)) plan->path = SCALE_PATH_COLUMNS;
    }
}

size_t scale_row_buffer_size(int max_src_w, int max_dst_w) {
    const size_t widest = (size_t)(max_src_w > max_dst_w ? max_src_w : max_dst_w);
    /* libyuv's rows: two 8-bit rows or one 16-bit row of sums; the any-ratio upscale: two
     * 16-bit rows of column blends (columns_up_rows) */
    return (4 * widest + 128 + 63) & ~(size_t)63;
}

void scale_slice_rows(const scale_plan *plan, uint32_t count, uint32_t index, int *begin, int *end) {
    const int64_t a = plan->row_alignment, units = (plan->dst_h + a - 1) / a;
    const int64_t per = (units + count - 1) / count;
    int64_t b = (int64_t)index * per * a, e = b + per * a;
    if (b > plan->dst_h) b = plan->dst_h;
    if (e > plan->dst_h) e = plan->dst_h;
    *begin = (int)b;
    *end = (int)e;
}

/* ------------------------------------------------- fixed ratios, in C -- */

/* Outputs [from, dst_w) of one row of the fixed kernels: `rows` source rows
 * (2 or 3) with vertical weights `vw`. The reference the SIMD kernels match. */
static void fixed_row_c(const scale_plan *plan, const uint8_t *const *rows, const int *vw, uint8_t *dst, int from) {
    const scale_phases *h = &plan->h;
    const int total = plan->h.total * plan->v.total;
    for (int x = from; x < plan->dst_w; x++) {
        const int q = x % h->period_out, s = x / h->period_out * h->period_in + h->first[q];
        int sum = 0;
        for (int r = 0; r < plan->v.taps; r++) {
            int across = 0;
            for (int t = 0; t < h->taps; t++) across += h->weight[q][t] * rows[r][s + t];
            sum += vw[r] * across;
        }
        dst[x] = (uint8_t)((sum + plan->bias) / total);
    }
}

#if SCALE_X86
/* The SIMD loops run whole blocks (group_count groups of 8 outputs, block_in
 * source bytes) while every 16-byte load stays inside the row; the C loop
 * finishes the row from where they stop. */

__attribute__((target("ssse3")))
static int fixed2_row_ssse3(const scale_plan *plan, const uint8_t *r0, const uint8_t *r1, int w0, int w1,
                            uint8_t *dst, int done) {
    const int gc = plan->group_count, block_out = 8 * gc, last = plan->group_offset[gc - 1];
    const __m128i vw0 = _mm_set1_epi16((short)w0), vw1 = _mm_set1_epi16((short)w1);
    const __m128i bias = _mm_set1_epi16((short)plan->bias), mul = _mm_set1_epi16((short)plan->multiplier);
    __m128i mask[3], wt[3];
    for (int g = 0; g < gc; g++) {
        mask[g] = _mm_loadu_si128((const __m128i *)plan->shuffle[g]);
        wt[g] = _mm_loadu_si128((const __m128i *)plan->weights[g]);
    }
    for (int base = done / block_out * plan->block_in;
         done + block_out <= plan->dst_w && base + last + 16 <= plan->src_w; done += block_out, base += plan->block_in) {
        for (int g = 0; g < gc; g++) {
            const int off = base + plan->group_offset[g];
            __m128i a = _mm_maddubs_epi16(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(r0 + off)), mask[g]), wt[g]);
            __m128i b = _mm_maddubs_epi16(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(r1 + off)), mask[g]), wt[g]);
            __m128i sum = _mm_add_epi16(_mm_mullo_epi16(a, vw0), _mm_mullo_epi16(b, vw1));
            __m128i out = _mm_mulhi_epu16(_mm_add_epi16(sum, bias), mul);
            _mm_storel_epi64((__m128i *)(dst + done + 8 * g), _mm_packus_epi16(out, out));
        }
    }
    return done;
}

__attribute__((target("avx2")))
static inline __m256i load_two(const uint8_t *lo, const uint8_t *hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                   _mm_loadu_si128((const __m128i *)hi), 1);
}

/* Two blocks at a time; pair k of 8-output groups (2k, 2k+1) fills one ymm. */
__attribute__((target("avx2")))
static int fixed2_row_avx2(const scale_plan *plan, const uint8_t *r0, const uint8_t *r1, int w0, int w1,
                           uint8_t *dst, int done) {
    const int gc = plan->group_count, span_out = 16 * gc, span_in = 2 * plan->block_in;
    const __m256i vw0 = _mm256_set1_epi16((short)w0), vw1 = _mm256_set1_epi16((short)w1);
    const __m256i bias = _mm256_set1_epi16((short)plan->bias), mul = _mm256_set1_epi16((short)plan->multiplier);
    __m256i mask[3], wt[3];
    int off[3][2];
    for (int k = 0; k < gc; k++) {
        for (int half = 0; half < 2; half++) {
            const int i = 2 * k + half, g = i % gc;
            off[k][half] = i / gc * plan->block_in + plan->group_offset[g];
        }
        const int g0 = (2 * k) % gc, g1 = (2 * k + 1) % gc;
        mask[k] = load_two(plan->shuffle[g0], plan->shuffle[g1]);
        wt[k] = load_two(plan->weights[g0], plan->weights[g1]);
    }
    const int last = off[gc - 1][1];
    for (int base = done / span_out * span_in;
         done + span_out <= plan->dst_w && base + last + 16 <= plan->src_w; done += span_out, base += span_in) {
        for (int k = 0; k < gc; k++) {
            const int o0 = base + off[k][0], o1 = base + off[k][1];
            __m256i a = _mm256_maddubs_epi16(_mm256_shuffle_epi8(load_two(r0 + o0, r0 + o1), mask[k]), wt[k]);
            __m256i b = _mm256_maddubs_epi16(_mm256_shuffle_epi8(load_two(r1 + o0, r1 + o1), mask[k]), wt[k]);
            __m256i sum = _mm256_add_epi16(_mm256_mullo_epi16(a, vw0), _mm256_mullo_epi16(b, vw1));
            __m256i out = _mm256_mulhi_epu16(_mm256_add_epi16(sum, bias), mul);
            /* packus works per lane: bytes 0-7 of each lane hold a group; gather them. */
            __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(out, out), 0x08);
            _mm_storeu_si128((__m128i *)(dst + done + 16 * k), _mm256_castsi256_si128(packed));
        }
    }
    return done;
}

/* 3:1: output j of a group of 8 reads bytes 3j..3j+2; bytes 0-15 come from
 * load 0 (at the group's start) and 8-23 from load 1 (8 bytes on). */
static const uint8_t third_pair_lo[16] = { 0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80 };
static const uint8_t third_pair_hi[16] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                           7, 8, 10, 11, 13, 14 };
static const uint8_t third_last_lo[16] = { 2, 0x80, 5, 0x80, 8, 0x80, 11, 0x80, 14, 0x80,
                                           0x80, 0x80, 0x80, 0x80, 0x80, 0x80 };
static const uint8_t third_last_hi[16] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                           9, 0x80, 12, 0x80, 15, 0x80 };

__attribute__((target("ssse3")))
static inline __m128i fixed3_across_ssse3(const uint8_t *s, __m128i wt) {
    const __m128i lo = _mm_loadu_si128((const __m128i *)s), hi = _mm_loadu_si128((const __m128i *)(s + 8));
    const __m128i pairs = _mm_or_si128(_mm_shuffle_epi8(lo, _mm_loadu_si128((const __m128i *)third_pair_lo)),
                                       _mm_shuffle_epi8(hi, _mm_loadu_si128((const __m128i *)third_pair_hi)));
    const __m128i last = _mm_or_si128(_mm_shuffle_epi8(lo, _mm_loadu_si128((const __m128i *)third_last_lo)),
                                      _mm_shuffle_epi8(hi, _mm_loadu_si128((const __m128i *)third_last_hi)));
    return _mm_add_epi16(_mm_maddubs_epi16(pairs, wt), last); /* the third tap's weight is 1 */
}

__attribute__((target("ssse3")))
static int fixed3_row_ssse3(const scale_plan *plan, const uint8_t *const *rows, const int *vw, uint8_t *dst,
                            int done) {
    const __m128i wt = _mm_set1_epi16((short)(plan->h.weight[0][0] | plan->h.weight[0][1] << 8));
    /* vertical weights (1, 1 or 2, 1): the middle row is shifted, not multiplied */
    const __m128i middle_shift = _mm_cvtsi32_si128(vw[1] >> 1);
    const __m128i bias = _mm_set1_epi16((short)plan->bias), mul = _mm_set1_epi16((short)plan->multiplier);
    for (; done + 8 <= plan->dst_w && done * 3 + 24 <= plan->src_w; done += 8) {
        const int off = done * 3;
        __m128i sum = _mm_add_epi16(fixed3_across_ssse3(rows[0] + off, wt), fixed3_across_ssse3(rows[2] + off, wt));
        sum = _mm_add_epi16(sum, _mm_sll_epi16(fixed3_across_ssse3(rows[1] + off, wt), middle_shift));
        __m128i out = _mm_mulhi_epu16(_mm_add_epi16(sum, bias), mul);
        _mm_storel_epi64((__m128i *)(dst + done), _mm_packus_epi16(out, out));
    }
    return done;
}

__attribute__((target("avx2")))
static inline __m256i fixed3_across_avx2(const uint8_t *s, __m256i wt) {
    /* lane 0: the group at s, lane 1: the next group, 24 bytes on */
    const __m256i lo = load_two(s, s + 24), hi = load_two(s + 8, s + 32);
    const __m256i pair_lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)third_pair_lo));
    const __m256i pair_hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)third_pair_hi));
    const __m256i last_lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)third_last_lo));
    const __m256i last_hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)third_last_hi));
    const __m256i pairs = _mm256_or_si256(_mm256_shuffle_epi8(lo, pair_lo), _mm256_shuffle_epi8(hi, pair_hi));
    const __m256i last = _mm256_or_si256(_mm256_shuffle_epi8(lo, last_lo), _mm256_shuffle_epi8(hi, last_hi));
    return _mm256_add_epi16(_mm256_maddubs_epi16(pairs, wt), last);
}

__attribute__((target("avx2")))
static int fixed3_row_avx2(const scale_plan *plan, const uint8_t *const *rows, const int *vw, uint8_t *dst,
                           int done) {
    const __m256i wt = _mm256_set1_epi16((short)(plan->h.weight[0][0] | plan->h.weight[0][1] << 8));
    const __m128i middle_shift = _mm_cvtsi32_si128(vw[1] >> 1);
    const __m256i bias = _mm256_set1_epi16((short)plan->bias), mul = _mm256_set1_epi16((short)plan->multiplier);
    for (; done + 16 <= plan->dst_w && done * 3 + 48 <= plan->src_w; done += 16) {
        const int off = done * 3;
        __m256i sum = _mm256_add_epi16(fixed3_across_avx2(rows[0] + off, wt), fixed3_across_avx2(rows[2] + off, wt));
        sum = _mm256_add_epi16(sum, _mm256_sll_epi16(fixed3_across_avx2(rows[1] + off, wt), middle_shift));
        __m256i out = _mm256_mulhi_epu16(_mm256_add_epi16(sum, bias), mul);
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(out, out), 0x08);
        _mm_storeu_si128((__m128i *)(dst + done), _mm256_castsi256_si128(packed));
    }
    return done;
}
#endif /* SCALE_X86 */

/* Source rows the fixed-ratio and 2:1 kernels prefetch ahead of the last row
 * they read. A frame from the camera or the network is often cold, and the
 * hardware prefetchers stop at every 4 KiB page (two 1080p luma rows), so each
 * row began with demand misses. Four rows was as good as 2, 8 or 16 in A/B runs
 * on cold frames. The 4:3 path (libyuv's ScaleRowDown34 rows) was slower with it
 * and has none. */
#define SCALE_PREFETCH_ROWS 4

/* Prefetches source rows [*next, until] (clamped to the plane), each over the
 * plan's source width, and advances *next past them. */
static inline void prefetch_source_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, int *next,
                                        int until) {
    if (until >= plan->src_h) until = plan->src_h - 1;
    for (; *next <= until; (*next)++) {
        const uint8_t *row = src + (ptrdiff_t)*next * src_stride;
        for (int x = 0; x < plan->src_w; x += 64) __builtin_prefetch(row + x);
        __builtin_prefetch(row + plan->src_w - 1);
    }
}

static void fixed_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                       ptrdiff_t dst_stride, int row_begin, int row_end) {
    const scale_phases *v = &plan->v;
    int prefetched = row_begin / v->period_out * v->period_in;
    for (int j = row_begin; j < row_end; j++) {
        const int q = j % v->period_out, first = j / v->period_out * v->period_in + v->first[q];
        prefetch_source_rows(plan, src, src_stride, &prefetched, first + v->taps - 1 + SCALE_PREFETCH_ROWS);
        const uint8_t *rows[3];
        for (int r = 0; r < v->taps; r++) rows[r] = src + (ptrdiff_t)(first + r) * src_stride;
        const int *vw = v->weight[q];
        uint8_t *out = dst + (ptrdiff_t)j * dst_stride;
        int done = 0;
#if SCALE_X86
        if (plan->path == SCALE_PATH_FIXED2) {
            if (plan->isa >= SCALE_ISA_AVX2) done = fixed2_row_avx2(plan, rows[0], rows[1], vw[0], vw[1], out, done);
            if (plan->isa >= SCALE_ISA_SSSE3) done = fixed2_row_ssse3(plan, rows[0], rows[1], vw[0], vw[1], out, done);
        } else {
            if (plan->isa >= SCALE_ISA_AVX2) done = fixed3_row_avx2(plan, rows, vw, out, done);
            if (plan->isa >= SCALE_ISA_SSSE3) done = fixed3_row_ssse3(plan, rows, vw, out, done);
        }
#endif
        fixed_row_c(plan, rows, vw, out, done);
    }
}

/* libyuv's y for output row j: the first y plus j steps, clamped (its loops clamp as they step). */
static int row_position(const scale_plan *plan, int j, int64_t max_y) {
    int64_t y = plan->y + (int64_t)j * plan->dy;
    return (int)(y > max_y ? max_y : y);
}

/* ----------------------------------------- any ratio: column tables, fused -- */

/* One pass per output row, horizontal first. Each source row's taps are weighed
 * with pmaddubsw (unsigned weights summing to 128) on samples biased by -128, so
 * that the products fit 16 bits: h = sum of w * (s - 128), the blend times 128
 * minus 128*128. Rows are blended with pmulhrsw at 8-bit vertical weights, and
 * out = (v + 128*128 + 64) >> 7:
 * - bilinear and linear: v = h0 + round((h1 - h0) * fy / 256), fy the 8-bit
 *   fraction of libyuv's row position (0 for linear: the row is point-sampled).
 *   libyuv's positions; one rounding per dimension and none to 8 bits between
 *   them (libyuv's rows round the intermediate row).
 * docs/plugins/scale-rotate.md has the definitions the tests check. */
#define COLUMN_BIAS (128 * 128 + 64)

/* pmulhrsw: (a * b + 2^14) >> 15, arithmetic. */
static inline int mulhrs(int a, int b) { return (a * b + 0x4000) >> 15; }

/* h of output 8k + i of `block` on one source row, in portable C. */
static inline int column_sample(const uint8_t *row, const scale_column_block *block, int k, int i) {
    const uint8_t *base = row + block->offset[k];
    int h = 0;
    for (int t = 0; t < 2; t++) {
        const int slot = 16 * k + 2 * i + t;
        const int index = block->near[slot] != 0x80 ? block->near[slot]
                        : block->far[slot] != 0x80  ? block->far[slot] + COLUMN_NEAR_BYTES
                                                    : -1;
        if (index >= 0) h += block->weights[slot] * (base[index] - 128);
    }
    return h;
}

/* Outputs [8 * from_half, dst_w) of a row in portable C, the SIMD kernels' integers:
 * rows[0] and rows[1] with fraction `fy` (rows[1] unread when fy is 0). */
static void columns_row_c(const scale_plan *plan, const uint8_t *const *rows, int fy, uint8_t *dst, int from_half) {
    for (int o = 8 * from_half; o < plan->dst_w; o++) {
        const scale_column_block *block = &plan->columns[o / 16];
        const int k = (o / 8) & 1, i = o % 8;
        int v = column_sample(rows[0], block, k, i);
        if (fy) v += mulhrs(column_sample(rows[1], block, k, i) - v, fy << 7);
        dst[o] = (uint8_t)((v + COLUMN_BIAS) >> 7);
    }
}

#if SCALE_X86
/* h of half k of `block` from its source bytes `s` (the row at the half's offset). */
__attribute__((target("ssse3")))
static inline __m128i columns_taps_ssse3(const uint8_t *s, const scale_column_block *block, int k, int far) {
    __m128i taps = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)s), _mm_loadu_si128((const __m128i *)(block->near + 16 * k)));
    if (far)
        taps = _mm_or_si128(taps, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + COLUMN_NEAR_BYTES)),
                                                   _mm_loadu_si128((const __m128i *)(block->far + 16 * k))));
    taps = _mm_xor_si128(taps, _mm_set1_epi8((char)0x80));
    return _mm_maddubs_epi16(_mm_loadu_si128((const __m128i *)(block->weights + 16 * k)), taps);
}

__attribute__((target("ssse3")))
static inline __m128i columns_half_ssse3(const uint8_t *row, const scale_column_block *block, int k, int far) {
    return columns_taps_ssse3(row + block->offset[k], block, k, far);
}

__attribute__((target("ssse3")))
static int columns_row_ssse3(const scale_plan *plan, const uint8_t *const *rows, int fy, uint8_t *dst, int half,
                             int limit) {
    const int far = plan->column_far;
    const __m128i bias = _mm_set1_epi16(COLUMN_BIAS), vertical = _mm_set1_epi16((short)(fy << 7));
    for (; half < limit; half++) {
        const scale_column_block *block = &plan->columns[half / 2];
        __m128i v = columns_half_ssse3(rows[0], block, half & 1, far);
        if (fy)
            v = _mm_add_epi16(v, _mm_mulhrs_epi16(_mm_sub_epi16(columns_half_ssse3(rows[1], block, half & 1, far), v), vertical));
        const __m128i out = _mm_srli_epi16(_mm_add_epi16(v, bias), 7);
        _mm_storel_epi64((__m128i *)(dst + 8 * half), _mm_packus_epi16(out, out));
    }
    return half;
}

__attribute__((target("avx2")))
static inline __m256i columns_block_avx2(const uint8_t *row, const scale_column_block *block, int far) {
    const uint8_t *s0 = row + block->offset[0], *s1 = row + block->offset[1];
    __m256i taps = _mm256_shuffle_epi8(load_two(s0, s1), _mm256_loadu_si256((const __m256i *)block->near));
    if (far)
        taps = _mm256_or_si256(taps, _mm256_shuffle_epi8(load_two(s0 + COLUMN_NEAR_BYTES, s1 + COLUMN_NEAR_BYTES),
                                                         _mm256_loadu_si256((const __m256i *)block->far)));
    taps = _mm256_xor_si256(taps, _mm256_set1_epi8((char)0x80));
    return _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)block->weights), taps);
}

/* The whole halves past simd_halves, whose loads would pass the row's end: each row's
 * bytes from the half's offset to the row's end are copied into a zeroed buffer first, and
 * the half runs in SSSE3 there. A lane past the row has weight 0 (the C path's integers),
 * so the output is the C path's; only a row's last one or two halves come here. */
__attribute__((target("ssse3")))
static int columns_tail_ssse3(const scale_plan *plan, const uint8_t *const *rows, int fy, uint8_t *dst, int half) {
    const int far = plan->column_far;
    const __m128i bias = _mm_set1_epi16(COLUMN_BIAS), vertical = _mm_set1_epi16((short)(fy << 7));
    uint8_t padded[2][COLUMN_FAR_BYTES];
    for (; half < plan->dst_w / 8; half++) {
        const scale_column_block *block = &plan->columns[half / 2];
        const int offset = block->offset[half & 1];
        const int bytes = plan->src_w - offset < COLUMN_FAR_BYTES ? plan->src_w - offset : COLUMN_FAR_BYTES;
        if (bytes <= 0) break;
        for (int r = 0; r < (fy ? 2 : 1); r++) {
            memset(padded[r], 0, sizeof padded[r]);
            memcpy(padded[r], rows[r] + offset, (size_t)bytes);
        }
        __m128i v = columns_taps_ssse3(padded[0], block, half & 1, far);
        if (fy) v = _mm_add_epi16(v, _mm_mulhrs_epi16(_mm_sub_epi16(columns_taps_ssse3(padded[1], block, half & 1, far), v), vertical));
        const __m128i out = _mm_srli_epi16(_mm_add_epi16(v, bias), 7);
        _mm_storel_epi64((__m128i *)(dst + 8 * half), _mm_packus_epi16(out, out));
    }
    return half;
}

/* Whole blocks (two halves); the caller finishes an odd half in SSSE3. */
__attribute__((target("avx2")))
static int columns_row_avx2(const scale_plan *plan, const uint8_t *const *rows, int fy, uint8_t *dst, int half,
                            int limit) {
    const int far = plan->column_far;
    const __m256i bias = _mm256_set1_epi16(COLUMN_BIAS), vertical = _mm256_set1_epi16((short)(fy << 7));
    for (; half + 2 <= limit; half += 2) {
        const scale_column_block *block = &plan->columns[half / 2];
        __m256i v = columns_block_avx2(rows[0], block, far);
        if (fy)
            v = _mm256_add_epi16(v, _mm256_mulhrs_epi16(_mm256_sub_epi16(columns_block_avx2(rows[1], block, far), v), vertical));
        const __m256i out = _mm256_srli_epi16(_mm256_add_epi16(v, bias), 7);
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(out, out), 0x08);
        _mm_storeu_si128((__m128i *)(dst + 8 * half), _mm256_castsi256_si128(packed));
    }
    return half;
}

/* The 512-bit kernel: 32 outputs a step from one 64-byte load per source row, vpermb
 * gathering every output's two taps at once (plan->wide). The groups past wide_whole
 * load only the bytes up to the row's end (a masked load: the rest read as 0, at
 * weight 0), and a short last group stores only its outputs, so a whole row runs here
 * and nothing is read past a row or written past dst_w. The C path's integers. */
#define COLUMNS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

COLUMNS_AVX512
static inline __m512i columns_wide_taps(__m512i bytes, const scale_column_wide *wide) {
    const __m512i taps = _mm512_xor_si512(_mm512_permutexvar_epi8(_mm512_loadu_si512(wide->index), bytes),
                                          _mm512_set1_epi8((char)0x80));
    return _mm512_maddubs_epi16(_mm512_loadu_si512(wide->weights), taps);
}

COLUMNS_AVX512
static inline __m256i columns_wide_out(__m512i v0, __m512i v1, int fy) {
    if (fy) v0 = _mm512_add_epi16(v0, _mm512_mulhrs_epi16(_mm512_sub_epi16(v1, v0), _mm512_set1_epi16((short)(fy << 7))));
    return _mm512_cvtusepi16_epi8(_mm512_srli_epi16(_mm512_add_epi16(v0, _mm512_set1_epi16(COLUMN_BIAS)), 7));
}

/* Outputs [32 * g, dst_w) of a row, a group at a time, loads and the last store masked. */
COLUMNS_AVX512
static inline void columns_row_tail_avx512(const scale_plan *plan, const uint8_t *r0, const uint8_t *r1, int fy,
                                           uint8_t *dst, int g) {
    for (; 32 * g < plan->dst_w; g++) {
        const int base = plan->columns[2 * g].offset[0], bytes = plan->src_w - base;
        const __mmask64 load = bytes >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << bytes) - 1);
        const int outputs = plan->dst_w - 32 * g;
        const __mmask32 store = outputs >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << outputs) - 1);
        const __m512i v0 = columns_wide_taps(_mm512_maskz_loadu_epi8(load, r0 + base), &plan->wide[g]);
        const __m512i v1 = fy ? columns_wide_taps(_mm512_maskz_loadu_epi8(load, r1 + base), &plan->wide[g]) : v0;
        _mm256_mask_storeu_epi8(dst + 32 * g, store, columns_wide_out(v0, v1, fy));
    }
}

/* v = h0 + round((h1 - h0) * fy / 256) of the group loading at `base` (h1 unread unless `two`). */
COLUMNS_AVX512
static inline __attribute__((always_inline)) __m512i columns_wide_blend(const uint8_t *r0, const uint8_t *r1, int base,
                                                                        const scale_column_wide *wide, int two,
                                                                        __m512i vertical) {
    const __m512i v0 = columns_wide_taps(_mm512_loadu_si512(r0 + base), wide);
    if (!two) return v0;
    const __m512i v1 = columns_wide_taps(_mm512_loadu_si512(r1 + base), wide);
    return _mm512_add_epi16(v0, _mm512_mulhrs_epi16(_mm512_sub_epi16(v1, v0), vertical));
}

/* Groups [0, end) of a row (end even, every load whole), two a step, packed to bytes together;
 * `two` a constant where it is called, so each loop is made for one or two source rows. */
COLUMNS_AVX512
static inline __attribute__((always_inline)) void columns_pairs_avx512(const scale_plan *plan, const uint8_t *r0,
                                                                       const uint8_t *r1, int fy, uint8_t *out,
                                                                       int end, int two) {
    const __m512i bias = _mm512_set1_epi16(COLUMN_BIAS), order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    const __m512i vertical = _mm512_set1_epi16((short)(fy << 7));
    for (int g = 0; g < end; g += 2) {
        const __m512i a = columns_wide_blend(r0, r1, plan->columns[2 * g].offset[0], &plan->wide[g], two, vertical);
        const __m512i b = columns_wide_blend(r0, r1, plan->columns[2 * g + 2].offset[0], &plan->wide[g + 1], two, vertical);
        /* packus interleaves the two groups' 8-byte runs lane by lane; the permute orders them */
        const __m512i packed = _mm512_packus_epi16(_mm512_srli_epi16(_mm512_add_epi16(a, bias), 7),
                                                   _mm512_srli_epi16(_mm512_add_epi16(b, bias), 7));
        _mm512_storeu_si512(out + 32 * g, _mm512_permutexvar_epi64(order, packed));
    }
}

/* columns_rows at the 512-bit level: the band's rows in one call, whole groups two at a time,
 * then the row's last groups masked. A group's 64-byte load may pass its row's end: from a
 * row with two more rows below it (rows at least 64 bytes wide) those bytes are the plane's
 * own (weight 0), so every group whose outputs are whole loads whole; the plane's last rows
 * load only the bytes of the row (wide_whole). */
COLUMNS_AVX512
static void columns_rows_avx512(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                                ptrdiff_t dst_stride, int row_begin, int row_end) {
    const int64_t max_y = (int64_t)(plan->src_h - 1) << 16;
    const int outputs_whole = plan->dst_w / 32;
    const int whole_in_row = plan->wide_whole < outputs_whole ? plan->wide_whole : outputs_whole;
    const int plane_rows = plan->src_w >= 64 && src_stride >= plan->src_w;
    int prefetched = 0;
    for (int j = row_begin; j < row_end; j++) {
        const int y = row_position(plan, j, max_y), top = y >> 16;
        const int fy = plan->filter == kFilterLinear ? 0 : (y >> 8) & 255;
        const uint8_t *r0 = src + (ptrdiff_t)top * src_stride, *r1 = src + (ptrdiff_t)(fy ? top + 1 : top) * src_stride;
        if (plan->column_prefetch) {
            if (prefetched < top) prefetched = top;
            prefetch_source_rows(plan, src, src_stride, &prefetched, top + 1 + SCALE_PREFETCH_ROWS);
        }
        uint8_t *out = dst + (ptrdiff_t)j * dst_stride;
        const int end = (plane_rows && top + 2 < plan->src_h ? outputs_whole : whole_in_row) & ~1;
        if (fy) columns_pairs_avx512(plan, r0, r1, fy, out, end, 1);
        else columns_pairs_avx512(plan, r0, r1, fy, out, end, 0);
        columns_row_tail_avx512(plan, r0, r1, fy, out, end);
    }
}

/* The column blends of one source row for every output (upscales), 32 at a time. */
COLUMNS_AVX512
static void columns_across_avx512(const scale_plan *plan, const uint8_t *row, int16_t *h) {
    const int groups = (plan->dst_w + 31) / 32;
    for (int g = 0; g < groups; g++) {
        const int base = plan->columns[2 * g].offset[0], bytes = plan->src_w - base;
        const __mmask64 load = g < plan->wide_whole || bytes >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << bytes) - 1);
        const int outputs = plan->dst_w - 32 * g;
        const __mmask32 store = outputs >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << outputs) - 1);
        _mm512_mask_storeu_epi16(h + 32 * g, store, columns_wide_taps(_mm512_maskz_loadu_epi8(load, row + base), &plan->wide[g]));
    }
}

/* columns_blend_avx2's arithmetic, 32 outputs a step, the last step masked. */
COLUMNS_AVX512
static void columns_blend_avx512(const scale_plan *plan, const int16_t *h0, const int16_t *h1, int fy, uint8_t *dst) {
    for (int o = 0; o < plan->dst_w; o += 32) {
        const int outputs = plan->dst_w - o;
        const __mmask32 mask = outputs >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << outputs) - 1);
        const __m512i v0 = _mm512_maskz_loadu_epi16(mask, h0 + o);
        const __m512i v1 = fy ? _mm512_maskz_loadu_epi16(mask, h1 + o) : v0;
        _mm256_mask_storeu_epi8(dst + o, mask, columns_wide_out(v0, v1, fy));
    }
}

__attribute__((target("ssse3")))
static int columns_across_ssse3(const scale_plan *plan, const uint8_t *row, int16_t *h, int half) {
    for (; half < plan->simd_halves; half++)
        _mm_storeu_si128((__m128i *)(h + 8 * half),
                         columns_half_ssse3(row, &plan->columns[half / 2], half & 1, plan->column_far));
    return half;
}

__attribute__((target("avx2")))
static int columns_across_avx2(const scale_plan *plan, const uint8_t *row, int16_t *h) {
    int half = 0;
    for (; half + 2 <= plan->simd_halves; half += 2)
        _mm256_storeu_si256((__m256i *)(h + 8 * half),
                            columns_block_avx2(row, &plan->columns[half / 2], plan->column_far));
    return half;
}

/* out = (h0 + round((h1 - h0) * fy / 256) + bias) >> 7 over a whole row, 16 at a time. */
__attribute__((target("avx2")))
static int columns_blend_avx2(const scale_plan *plan, const int16_t *h0, const int16_t *h1, int fy, uint8_t *dst) {
    const __m256i vertical = _mm256_set1_epi16((short)(fy << 7)), bias = _mm256_set1_epi16(COLUMN_BIAS);
    int o = 0;
    for (; o + 16 <= plan->dst_w; o += 16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(h0 + o));
        if (fy) v = _mm256_add_epi16(v, _mm256_mulhrs_epi16(_mm256_sub_epi16(_mm256_loadu_si256((const __m256i *)(h1 + o)), v),
                                                            vertical));
        const __m256i out = _mm256_srli_epi16(_mm256_add_epi16(v, bias), 7);
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(out, out), 0x08);
        _mm_storeu_si128((__m128i *)(dst + o), _mm256_castsi256_si128(packed));
    }
    return o;
}

__attribute__((target("ssse3")))
static int columns_blend_ssse3(const scale_plan *plan, const int16_t *h0, const int16_t *h1, int fy, uint8_t *dst, int o) {
    const __m128i vertical = _mm_set1_epi16((short)(fy << 7)), bias = _mm_set1_epi16(COLUMN_BIAS);
    for (; o + 8 <= plan->dst_w; o += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(h0 + o));
        if (fy) v = _mm_add_epi16(v, _mm_mulhrs_epi16(_mm_sub_epi16(_mm_loadu_si128((const __m128i *)(h1 + o)), v), vertical));
        const __m128i out = _mm_srli_epi16(_mm_add_epi16(v, bias), 7);
        _mm_storel_epi64((__m128i *)(dst + o), _mm_packus_epi16(out, out));
    }
    return o;
}
#endif /* SCALE_X86 */

static void columns_blend(const scale_plan *plan, const int16_t *h0, const int16_t *h1, int fy, uint8_t *dst) {
    int o = 0;
#if SCALE_X86
    if (plan->isa >= SCALE_ISA_AVX512) {
        columns_blend_avx512(plan, h0, h1, fy, dst);
        return;
    }
    if (plan->isa >= SCALE_ISA_AVX2) o = columns_blend_avx2(plan, h0, h1, fy, dst);
    if (plan->isa >= SCALE_ISA_SSSE3) o = columns_blend_ssse3(plan, h0, h1, fy, dst, o);
#endif
    for (; o < plan->dst_w; o++) {
        int v = h0[o];
        if (fy) v += mulhrs(h1[o] - v, fy << 7);
        dst[o] = (uint8_t)((v + COLUMN_BIAS) >> 7);
    }
}

/* The column blends h of one source row for every output, into `h` (16-bit). */
static void columns_across(const scale_plan *plan, const uint8_t *row, int16_t *h) {
    int half = 0;
#if SCALE_X86
    if (plan->isa >= SCALE_ISA_AVX512 && plan->wide != NULL) {
        columns_across_avx512(plan, row, h);
        return;
    }
    if (plan->isa >= SCALE_ISA_AVX2) half = columns_across_avx2(plan, row, h);
    if (plan->isa >= SCALE_ISA_SSSE3) half = columns_across_ssse3(plan, row, h, half);
#endif
    for (int o = 8 * half; o < plan->dst_w; o++)
        h[o] = (int16_t)column_sample(row, &plan->columns[o / 16], (o / 8) & 1, o % 8);
}

/* Upscales keep two column-filtered source rows (slots 0 and 1, `cached` their row
 * numbers) for the output rows that share them. Returns the slot that holds source
 * row want[k] for output row want; *fill says the caller must compute it there. A
 * slot is only reused if this output does not need what it holds: want[1] while
 * placing want[0], and the slot want[0] took (`taken`) while placing want[1]. */
static int two_row_slot(int cached[2], const int want[2], int k, int taken, int *fill) {
    int slot = cached[0] == want[k] ? 0 : cached[1] == want[k] ? 1 : -1;
    *fill = slot < 0;
    if (slot < 0) {
        slot = k == 0 ? (cached[0] == want[1] ? 1 : 0) : 1 - taken;
        cached[slot] = want[k];
    }
    return slot;
}

/* Bilinear upscales: each source row's column blends once, kept for the output rows
 * that share it (a 2:3 upscale uses each source row for three), then the rows'
 * blend with the arithmetic of columns_rows, so the bytes are the same. In one A/B
 * run (cold frames, one thread, 2-vCPU AMD EPYC VM), ms per frame with the cache and
 * without: 540p -> 720p 0.36 and 0.50, 360p -> 540p 0.20 and 0.31, 720p -> 1080p 0.75
 * and 1.04. */
static void columns_up_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                            ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *buffer) {
    const int64_t max_y = (int64_t)(plan->src_h - 1) << 16;
    const size_t row_size = ((size_t)plan->dst_w + 31) & ~(size_t)31;
    int16_t *cache[2] = { (int16_t *)(void *)buffer, (int16_t *)(void *)buffer + row_size };
    int cached[2] = { -1, -1 };
    for (int j = row_begin; j < row_end; j++) {
        const int y = row_position(plan, j, max_y), top = y >> 16;
        const int fy = plan->filter == kFilterLinear ? 0 : (y >> 8) & 255;
        const int want[2] = { top, fy ? top + 1 : top };
        int slot[2] = { 0, 0 }, fill;
        for (int k = 0; k < 2; k++) {
            slot[k] = two_row_slot(cached, want, k, slot[0], &fill);
            if (fill) columns_across(plan, src + (ptrdiff_t)want[k] * src_stride, cache[slot[k]]);
        }
        const int16_t *h[2] = { cache[slot[0]], cache[slot[1]] };
        columns_blend(plan, h[0], h[1], fy, dst + (ptrdiff_t)j * dst_stride);
    }
}

static void columns_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                         ptrdiff_t dst_stride, int row_begin, int row_end) {
    const int64_t max_y = (int64_t)(plan->src_h - 1) << 16;
    int prefetched = 0;
#if SCALE_X86
    if (plan->isa >= SCALE_ISA_AVX512 && plan->wide != NULL) {
        columns_rows_avx512(plan, src, src_stride, dst, dst_stride, row_begin, row_end);
        return;
    }
#endif
    for (int j = row_begin; j < row_end; j++) {
        const int y = row_position(plan, j, max_y), top = y >> 16;
        /* linear filters columns only: the row is point-sampled */
        const int fy = plan->filter == kFilterLinear ? 0 : (y >> 8) & 255;
        const uint8_t *rows[2] = { src + (ptrdiff_t)top * src_stride, src + (ptrdiff_t)(fy ? top + 1 : top) * src_stride };
        if (plan->column_prefetch) {
            if (prefetched < top) prefetched = top;
            prefetch_source_rows(plan, src, src_stride, &prefetched, top + 1 + SCALE_PREFETCH_ROWS);
        }
        uint8_t *out = dst + (ptrdiff_t)j * dst_stride;
        int half = 0;
#if SCALE_X86
        /* A row's last halves load up to 32 bytes past its end: from a row with two more
         * rows below it (rows at least 32 bytes wide, running top down) those bytes are
         * the plane's own, else the halves take the padded copy. Lanes past the row have
         * weight 0 either way, so the output is the same. */
        const int inside = plan->src_w >= COLUMN_FAR_BYTES && src_stride >= plan->src_w && top + 2 < plan->src_h;
        const int limit = inside ? plan->dst_w / 8 : plan->simd_halves;
        if (plan->isa >= SCALE_ISA_AVX2) half = columns_row_avx2(plan, rows, fy, out, half, limit);
        if (plan->isa >= SCALE_ISA_SSSE3) half = columns_tail_ssse3(plan, rows, fy, out, columns_row_ssse3(plan, rows, fy, out, half, limit));
#endif
        columns_row_c(plan, rows, fy, out, half);
    }
}

/* ------------------------------------------------- box: the area mean -- */

/* Rows first: V(x) = sum of wy_r * s[r][x] over the rows output row j covers
 * (area_taps, weights summing to 256), so V <= 255 * 256 fits 16 bits; stored
 * less 32768 as int16 (pmaddwd multiplies signed words). Then each output's
 * eight-sample window of V with the column weights (area_taps in 16384ths,
 * zero past its taps): out = (sum of wx * (V - 32768) + 2^29 + 2^21) >> 22, the
 * area mean rounded once. V has 8 zeros past the row's end for the windows that
 * reach over it (their weights there are 0). */
#define AREA_BIAS ((1 << 29) + (1 << 21))

/* V for columns [from, width), a column at a time: the SIMD loops' tail. */
static void area_rows_c(const uint8_t *const *rows, const int *wy, int count, int16_t *v, int from, int width) {
    for (int x = from; x < width; x++) {
        int sum = 0;
        for (int r = 0; r < count; r++) sum += wy[r] * rows[r][x];
        v[x] = (int16_t)(sum - 32768);
    }
}

static void area_columns_c(const scale_plan *plan, const int16_t *v, uint8_t *dst, int from) {
    for (int o = from; o < plan->dst_w; o++) {
        const int16_t *w = plan->area_weights + SCALE_AREA_TAPS * o, *window = v + plan->area_offsets[o];
        int sum = 0;
        for (int n = 0; n < SCALE_AREA_TAPS; n++) sum += w[n] * window[n];
        dst[o] = (uint8_t)((sum + AREA_BIAS) >> 22);
    }
}

#if SCALE_X86
/* V a row at a time: each source row is read once, start to end, so the rows of an
 * output row are one ascending stream the hardware prefetchers follow (column by
 * column over all the rows at once was clearly slower on cold frames). Each row is widened
 * to 16 bits and weighed with pmullw, V kept in the row buffer (L1) between rows; the
 * sums wrap modulo 2^16 in between and end at most 255 * 256, the bits of the C.
 * Whole vectors only: returns the columns done, the C does the rest. */
__attribute__((target("sse2"))) static int area_rows_sse2(const uint8_t *const *rows, const int *wy, int count,
                                                          int16_t *v, int width) {
    const int whole = width & ~15;
    const __m128i zero = _mm_setzero_si128(), bias = _mm_set1_epi16((short)0x8000);
    for (int r = 0; r < count; r++) {
        const __m128i w = _mm_set1_epi16((short)wy[r]);
        const uint8_t *s = rows[r];
        for (int x = 0; x < whole; x += 16) {
            const __m128i bytes = _mm_loadu_si128((const __m128i *)(s + x));
            __m128i lo = _mm_mullo_epi16(_mm_unpacklo_epi8(bytes, zero), w);
            __m128i hi = _mm_mullo_epi16(_mm_unpackhi_epi8(bytes, zero), w);
            if (r > 0) {
                lo = _mm_add_epi16(lo, _mm_loadu_si128((const __m128i *)(v + x)));
                hi = _mm_add_epi16(hi, _mm_loadu_si128((const __m128i *)(v + x + 8)));
            }
            if (r == count - 1) {
                lo = _mm_xor_si128(lo, bias);
                hi = _mm_xor_si128(hi, bias);
            }
            _mm_storeu_si128((__m128i *)(v + x), lo);
            _mm_storeu_si128((__m128i *)(v + x + 8), hi);
        }
    }
    return whole;
}

__attribute__((target("avx2"))) static int area_rows_avx2(const uint8_t *const *rows, const int *wy, int count,
                                                          int16_t *v, int width) {
    const int whole = width & ~31;
    const __m256i bias = _mm256_set1_epi16((short)0x8000);
    for (int r = 0; r < count; r++) {
        const __m256i w = _mm256_set1_epi16((short)wy[r]);
        const uint8_t *s = rows[r];
        for (int x = 0; x < whole; x += 32) {
            __m256i lo = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(s + x))), w);
            __m256i hi = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(s + x + 16))), w);
            if (r > 0) {
                lo = _mm256_add_epi16(lo, _mm256_loadu_si256((const __m256i *)(v + x)));
                hi = _mm256_add_epi16(hi, _mm256_loadu_si256((const __m256i *)(v + x + 16)));
            }
            if (r == count - 1) {
                lo = _mm256_xor_si256(lo, bias);
                hi = _mm256_xor_si256(hi, bias);
            }
            _mm256_storeu_si256((__m256i *)(v + x), lo);
            _mm256_storeu_si256((__m256i *)(v + x + 16), hi);
        }
    }
    return whole;
}

/* 8 outputs a step: one pmaddwd per output window, phaddd to the 8 sums; the last
 * step overlaps the one before. Returns the outputs done (0 or dst_w). */
__attribute__((target("ssse3"))) static int area_columns_ssse3(const scale_plan *plan, const int16_t *v, uint8_t *dst) {
    const int dst_w = plan->dst_w;
    if (dst_w < 8) return 0;
    const __m128i bias = _mm_set1_epi32(AREA_BIAS);
    for (int o = 0; o < dst_w; o += 8) {
        const int at = o + 8 <= dst_w ? o : dst_w - 8;
        const int16_t *w = plan->area_weights + SCALE_AREA_TAPS * at;
        const int32_t *offset = plan->area_offsets + at;
        __m128i a, b;
        if (plan->area_narrow) {
            /* every output has at most 4 taps (ratios up to 3:1 across): two outputs'
             * 4-sample windows per pmaddwd, half the work (the same sums) */
            __m128i p[4];
            for (int i = 0; i < 4; i++) {
                const int16_t *w0 = w + SCALE_AREA_TAPS * 2 * i, *w1 = w0 + SCALE_AREA_TAPS;
                const __m128i windows = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(v + offset[2 * i])),
                                                           _mm_loadl_epi64((const __m128i *)(v + offset[2 * i + 1])));
                const __m128i weights = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)w0),
                                                           _mm_loadl_epi64((const __m128i *)w1));
                p[i] = _mm_madd_epi16(windows, weights);
            }
            a = _mm_hadd_epi32(p[0], p[1]);
            b = _mm_hadd_epi32(p[2], p[3]);
        } else {
            __m128i p[8];
            for (int i = 0; i < 8; i++)
                p[i] = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(v + offset[i])),
                                      _mm_loadu_si128((const __m128i *)(w + SCALE_AREA_TAPS * i)));
            a = _mm_hadd_epi32(_mm_hadd_epi32(p[0], p[1]), _mm_hadd_epi32(p[2], p[3]));
            b = _mm_hadd_epi32(_mm_hadd_epi32(p[4], p[5]), _mm_hadd_epi32(p[6], p[7]));
        }
        const __m128i sums = _mm_packs_epi32(_mm_srai_epi32(_mm_add_epi32(a, bias), 22),
                                             _mm_srai_epi32(_mm_add_epi32(b, bias), 22));
        _mm_storel_epi64((__m128i *)(dst + at), _mm_packus_epi16(sums, sums));
    }
    return dst_w;
}
#endif

/* Rows are read top down, once each (a row on an area boundary twice). Prefetching
 * them 8 to 32 rows ahead, as the any-ratio path does, made no difference that a C
 * harness could tell from the noise (1080p -> 426x240, cold), so there is none. */
static void area_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                      ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *buffer) {
    int16_t *v = (int16_t *)(void *)buffer; /* src_w + SCALE_AREA_TAPS: scale_row_buffer_size */
    memset(v + plan->src_w, 0, SCALE_AREA_TAPS * sizeof *v);
    for (int j = row_begin; j < row_end; j++) {
        int index[SCALE_AREA_TAPS], wy[SCALE_AREA_TAPS];
        const uint8_t *rows[SCALE_AREA_TAPS];
        const int count = area_taps(plan->src_h, plan->dst_h, j, 256, index, wy, SCALE_AREA_TAPS); /* >= 1: planned */
        for (int r = 0; r < count; r++) rows[r] = src + (ptrdiff_t)index[r] * src_stride;
        uint8_t *out = dst + (ptrdiff_t)j * dst_stride;
        int x = 0, o = 0;
#if SCALE_X86
        if (plan->isa >= SCALE_ISA_AVX2) x = area_rows_avx2(rows, wy, count, v, plan->src_w);
        else if (plan->isa >= SCALE_ISA_SSSE3) x = area_rows_sse2(rows, wy, count, v, plan->src_w);
#endif
        area_rows_c(rows, wy, count, v, x, plan->src_w);
#if SCALE_X86
        if (plan->isa >= SCALE_ISA_SSSE3) o = area_columns_ssse3(plan, v, out);
#endif
        if (o == 0) area_columns_c(plan, v, out, 0);
    }
}

/* ------------------------------------------------ libyuv's row functions -- */

typedef void (*interpolate_row_fn)(uint8_t *dst, const uint8_t *src, ptrdiff_t src_stride, int width, int fraction);
typedef void (*filter_cols_fn)(uint8_t *dst, const uint8_t *src, int dst_width, int x, int dx);
typedef void (*add_row_fn)(const uint8_t *src, uint16_t *dst, int width);

/* libyuv's row functions for `width` pixels, chosen as libyuv chooses them:
 * the whole-vector kernel when the width is a multiple of its vector, the Any
 * wrapper otherwise (which, built with assertions, refuses an empty tail). */
static interpolate_row_fn interpolate_row_for(scale_isa isa, int width) {
#if SCALE_X86
    if (isa >= SCALE_ISA_AVX2) return width % 32 == 0 ? InterpolateRow_AVX2 : InterpolateRow_Any_AVX2;
    if (isa >= SCALE_ISA_SSSE3) return width % 16 == 0 ? InterpolateRow_SSSE3 : InterpolateRow_Any_SSSE3;
#endif
    (void)isa;
    (void)width;
    return InterpolateRow_C;
}

static filter_cols_fn filter_cols_for(scale_isa isa) {
#if SCALE_X86
    if (isa >= SCALE_ISA_SSSE3) return ScaleFilterCols_SSSE3;
#endif
    (void)isa;
    return ScaleFilterCols_C;
}

static add_row_fn add_row_for(scale_isa isa, int width) {
#if SCALE_X86
    if (isa >= SCALE_ISA_AVX2) return width % 32 == 0 ? ScaleAddRow_AVX2 : ScaleAddRow_Any_AVX2;
    if (isa >= SCALE_ISA_SSSE3) return width % 16 == 0 ? ScaleAddRow_SSE2 : ScaleAddRow_Any_SSE2;
#endif
    (void)isa;
    (void)width;
    return ScaleAddRow_C;
}

/* 2:1, bilinear or box: libyuv's ScalePlaneDown2 rows (the 2x2 mean, rounded). */
static void half_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                      ptrdiff_t dst_stride, int row_begin, int row_end) {
    void (*down2)(const uint8_t *, ptrdiff_t, uint8_t *, int) = ScaleRowDown2Box_C;
#if SCALE_X86
    if (plan->isa >= SCALE_ISA_SSSE3)
        down2 = plan->dst_w % 16 == 0 ? ScaleRowDown2Box_SSSE3 : ScaleRowDown2Box_Any_SSSE3;
    if (plan->isa >= SCALE_ISA_AVX2)
        down2 = plan->dst_w % 32 == 0 ? ScaleRowDown2Box_AVX2 : ScaleRowDown2Box_Any_AVX2;
#endif
    int prefetched = 2 * row_begin;
    for (int j = row_begin; j < row_end; j++) {
        prefetch_source_rows(plan, src, src_stride, &prefetched, 2 * j + 1 + SCALE_PREFETCH_ROWS);
        down2(src + (ptrdiff_t)(2 * j) * src_stride, src_stride, dst + (ptrdiff_t)j * dst_stride, plan->dst_w);
    }
}

/* The arithmetic of libyuv's ScaleRowDown34_{0,1}_Box_SSSE3 in portable C (libyuv's
 * own _C rows round differently): the rows are blended with pavgb first, (3a+b)/4
 * as avg(a, avg(a, b)) for row 0 and avg(a, b) for row 1, then each group of four
 * pixels gives three with weights (3,1), (2,2), (1,3) and +2 >> 2. */
static inline uint8_t average_rounded(int a, int b) { return (uint8_t)((a + b + 1) >> 1); }

static void three_quarter_row_c(const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst, int dst_width, int outer) {
    const uint8_t *a = src, *b = src + src_stride;
    for (int x = 0; x < dst_width; x += 3) {
        uint8_t v[4];
        for (int k = 0; k < 4; k++) {
            const uint8_t mid = average_rounded(b[k], a[k]);
            v[k] = outer ? average_rounded(a[k], mid) : mid;
        }
        dst[x] = (uint8_t)((3 * v[0] + v[1] + 2) >> 2);
        if (x + 1 < dst_width) dst[x + 1] = (uint8_t)((2 * v[1] + 2 * v[2] + 2) >> 2);
        if (x + 2 < dst_width) dst[x + 2] = (uint8_t)((v[2] + 3 * v[3] + 2) >> 2);
        a += 4;
        b += 4;
    }
}

static void three_quarter_row0_c(const uint8_t *src, ptrdiff_t stride, uint8_t *dst, int width) {
    three_quarter_row_c(src, stride, dst, width, 1);
}

static void three_quarter_row1_c(const uint8_t *src, ptrdiff_t stride, uint8_t *dst, int width) {
    three_quarter_row_c(src, stride, dst, width, 0);
}

#if SCALE_X86
static void three_quarter_row_ssse3(const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst, int dst_width, int outer) {
    const int simd = dst_width / 24 * 24;
    if (outer) ScaleRowDown34_0_Box_SSSE3(src, src_stride, dst, simd);
    else ScaleRowDown34_1_Box_SSSE3(src, src_stride, dst, simd);
    if (simd < dst_width) three_quarter_row_c(src + simd / 3 * 4, src_stride, dst + simd, dst_width - simd, outer);
}

static void three_quarter_row0_ssse3(const uint8_t *src, ptrdiff_t stride, uint8_t *dst, int width) {
    three_quarter_row_ssse3(src, stride, dst, width, 1);
}

static void three_quarter_row1_ssse3(const uint8_t *src, ptrdiff_t stride, uint8_t *dst, int width) {
    three_quarter_row_ssse3(src, stride, dst, width, 0);
}
#endif

/* 4:3, bilinear or box: libyuv's ScalePlaneDown34 rows, three output rows from
 * four source rows (weights 3:1, 1:1, 1:3 each way); a short last group leaves
 * its last row vertically unfiltered, as libyuv does. libyuv's bytes, except the
 * last dst_w % 24 pixels of a row, which follow its SIMD arithmetic rather than
 * its C rows' (so that every level gives the same bytes). */
static void three_quarter_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                               ptrdiff_t dst_stride, int row_begin, int row_end) {
    void (*row0)(const uint8_t *, ptrdiff_t, uint8_t *, int) = three_quarter_row0_c;
    void (*row1)(const uint8_t *, ptrdiff_t, uint8_t *, int) = three_quarter_row1_c;
#if SCALE_X86
    /* Whole 24-pixel blocks only: libyuv's Any wrappers would finish with its _C rows. */
    if (plan->isa >= SCALE_ISA_SSSE3 && plan->dst_w >= 24) {
        row0 = three_quarter_row0_ssse3;
        row1 = three_quarter_row1_ssse3;
    }
#endif
    const int w = plan->dst_w, full = plan->dst_h / 3 * 3;
    for (int j = row_begin; j < row_end; j += 3) {
        const uint8_t *s = src + (ptrdiff_t)(j / 3 * 4) * src_stride;
        uint8_t *d = dst + (ptrdiff_t)j * dst_stride;
        if (j < full) {
            row0(s, src_stride, d, w);
            row1(s + src_stride, src_stride, d + dst_stride, w);
            row0(s + 3 * src_stride, -src_stride, d + 2 * dst_stride, w);
        } else if (plan->dst_h - j == 2) {
            row0(s, src_stride, d, w);
            row1(s + src_stride, 0, d + dst_stride, w);
        } else {
            row0(s, 0, d, w);
        }
    }
}

/* ScalePlaneBilinearDown: vertical blend of the whole source row, then columns. */
static void down_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                      ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *row) {
    const interpolate_row_fn interpolate = interpolate_row_for(plan->isa, plan->src_w);
    const filter_cols_fn cols = filter_cols_for(plan->isa);
    const int64_t max_y = (int64_t)(plan->src_h - 1) << 16;
    for (int j = row_begin; j < row_end; j++) {
        const int y = row_position(plan, j, max_y);
        const uint8_t *s = src + (ptrdiff_t)(y >> 16) * src_stride;
        uint8_t *d = dst + (ptrdiff_t)j * dst_stride;
        if (plan->filter == kFilterLinear) {
            cols(d, s, plan->dst_w, plan->x, plan->dx);
        } else {
            interpolate(row, s, src_stride, plan->src_w, (y >> 8) & 255);
            cols(d, row, plan->dst_w, plan->x, plan->dx);
        }
    }
}

/* ScalePlaneBilinearUp: columns of each source row once (two rows cached), then the vertical blend. */
static void up_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                    ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *buffer) {
    const interpolate_row_fn interpolate = interpolate_row_for(plan->isa, plan->dst_w);
    const filter_cols_fn cols = filter_cols_for(plan->isa);
    const int64_t max_y = (int64_t)(plan->src_h - 1) << 16;
    const size_t row_size = ((size_t)plan->dst_w + 31) & ~(size_t)31;
    uint8_t *cache[2] = { buffer, buffer + row_size };
    int cached[2] = { -1, -1 };
    for (int j = row_begin; j < row_end; j++) {
        const int y = row_position(plan, j, max_y), top = y >> 16;
        const int bottom = top + 1 < plan->src_h ? top + 1 : top;
        const int want[2] = { top, bottom };
        int slot[2] = { 0, 0 }, fill;
        for (int k = 0; k < 2; k++) {
            slot[k] = two_row_slot(cached, want, k, slot[0], &fill);
            if (fill) cols(cache[slot[k]], src + (ptrdiff_t)want[k] * src_stride, plan->dst_w, plan->x, plan->dx);
        }
        uint8_t *rows[2] = { cache[slot[0]], cache[slot[1]] };
        uint8_t *d = dst + (ptrdiff_t)j * dst_stride;
        if (plan->filter == kFilterLinear) memcpy(d, rows[0], (size_t)plan->dst_w);
        else interpolate(d, rows[0], rows[1] - rows[0], plan->dst_w, (y >> 8) & 255);
    }
}

/* Boxes of 2 or 3 columns (downscales between 2:1 and 3:1), unrolled. */
static void box_columns_2(const uint16_t *sums, uint8_t *d, int dst_w, int x, int dx, const int *scale) {
    for (int i = 0; i < dst_w; i++) {
        const int ix = x >> 16;
        x += dx;
        const int extra = (x >> 16) - ix - 2;
        d[i] = (uint8_t)((sums[ix] + sums[ix + 1] + extra * sums[ix + 2]) * scale[extra] >> 16);
    }
}

/* ScalePlaneBox: sum boxheight rows into 16 bits, then average boxes of columns
 * (libyuv's ScaleAddCols0/1/2_C arithmetic: truncating, by 65536 / area). */
static void box_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                     ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *buffer) {
    const add_row_fn add_row = add_row_for(plan->isa, plan->src_w);
    uint16_t *sums = (uint16_t *)buffer;
    const int64_t max_y = (int64_t)plan->src_h << 16;
    const int dx = plan->dx, min_width = dx >> 16;
    for (int j = row_begin; j < row_end; j++) {
        const int top = row_position(plan, j, max_y) >> 16, next = row_position(plan, j + 1, max_y) >> 16;
        const int height = next - top < 1 ? 1 : next - top;
        memset(sums, 0, ((size_t)plan->src_w + 1) * sizeof *sums);
        for (int k = 0; k < height; k++) add_row(src + (ptrdiff_t)(top + k) * src_stride, sums, plan->src_w);
        uint8_t *d = dst + (ptrdiff_t)j * dst_stride;
        if (!(dx & 0xffff) && dx != 0x10000) {          /* whole boxes: ScaleAddCols1_C */
            const int width = min_width < 1 ? 1 : min_width, scale = 65536 / (width * height);
            for (int i = 0, x = plan->x >> 16; i < plan->dst_w; i++, x += width) {
                int sum = 0;
                for (int k = 0; k < width; k++) sum += sums[x + k];
                d[i] = (uint8_t)(sum * scale >> 16);
            }
        } else if (dx == 0x10000) {                     /* one column a pixel: ScaleAddCols0_C */
            const int scale = 65536 / height;
            const uint16_t *s = sums + (plan->x >> 16);
            for (int i = 0; i < plan->dst_w; i++) d[i] = (uint8_t)(s[i] * scale >> 16);
        } else {                                        /* ScaleAddCols2_C */
            const int scale[2] = { 65536 / ((min_width < 1 ? 1 : min_width) * height),
                                   65536 / ((min_width + 1) * height) };
            /* Boxes are min_width or min_width + 1 wide, irregularly: add the extra
             * column times 0 or 1 instead of branching on the width (the column past
             * the row's end is in the buffer, zeroed above). */
            if (min_width == 2) {
                box_columns_2(sums, d, plan->dst_w, plan->x, dx, scale);
            } else {
                for (int i = 0, x = plan->x; i < plan->dst_w; i++) {
                    const int ix = x >> 16;
                    x += dx;
                    const int width = (x >> 16) - ix < 1 ? 1 : (x >> 16) - ix, extra = width - min_width;
                    int sum = extra * sums[ix + min_width];
                    for (int k = 0; k < min_width; k++) sum += sums[ix + k];
                    d[i] = (uint8_t)(sum * scale[extra] >> 16);
                }
            }
        }
    }
}

/* ScalePlaneSimple: the nearest pixel. */
static void point_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                       ptrdiff_t dst_stride, int row_begin, int row_end) {
    for (int j = row_begin; j < row_end; j++) {
        const int64_t y = plan->y + (int64_t)j * plan->dy;
        ScaleCols_C(dst + (ptrdiff_t)j * dst_stride, src + (ptrdiff_t)(y >> 16) * src_stride, plan->dst_w,
                    plan->x, plan->dx);
    }
}

void scale_plane_rows(const scale_plan *plan, const uint8_t *src, ptrdiff_t src_stride, uint8_t *dst,
                      ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *row_buffer) {
    switch (plan->path) {
    case SCALE_PATH_COPY:
        for (int j = row_begin; j < row_end; j++)
            memcpy(dst + (ptrdiff_t)j * dst_stride, src + (ptrdiff_t)j * src_stride, (size_t)plan->dst_w);
        break;
    case SCALE_PATH_FIXED2:
    case SCALE_PATH_FIXED3:
        fixed_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end);
        break;
    case SCALE_PATH_COLUMNS:
        if (plan->dst_h > plan->src_h) columns_up_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end, row_buffer);
        else columns_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end);
        break;
    case SCALE_PATH_AREA: area_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end, row_buffer); break;
    case SCALE_PATH_POINT: point_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end); break;
    case SCALE_PATH_DOWN: down_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end, row_buffer); break;
    case SCALE_PATH_UP: up_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end, row_buffer); break;
    case SCALE_PATH_HALF: half_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end); break;
    case SCALE_PATH_THREE_QUARTERS:
        three_quarter_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end);
        break;
    case SCALE_PATH_LIBYUV:
        if (row_begin == 0 && row_end == plan->dst_h)
            ScalePlane(src, (int)src_stride, plan->src_w, plan->src_h, dst, (int)dst_stride, plan->dst_w, plan->dst_h,
                       (enum FilterMode)plan->filter);
        break;
    case SCALE_PATH_BOX: box_rows(plan, src, src_stride, dst, dst_stride, row_begin, row_end, row_buffer); break;
    }
}

/* ------------------------------------------------------------- geometry -- */

uint64_t scale_round_even(uint64_t numerator, uint64_t denominator) {
    uint64_t value = (numerator + denominator) / (2 * denominator) * 2;
    return value < 2 ? 2 : value;
}

scale_geometry scale_fit_geometry(int mode, uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h) {
    scale_geometry g = { 0, 0, (int)in_w, (int)in_h, 0, 0, (int)out_w, (int)out_h };
    /* Compare aspect ratios exactly: in_w/in_h against out_w/out_h. */
    uint64_t in_cross = (uint64_t)in_w * out_h, out_cross = (uint64_t)out_w * in_h;
    if (mode == SCALE_MODE_FIT && in_cross != out_cross) {
        if (in_cross > out_cross) { /* input wider: full width, bars top and bottom */
            uint64_t h = scale_round_even((uint64_t)out_w * in_h, in_w);
            if (h > out_h) h = out_h;
            g.dst_h = (int)h;
            g.dst_y = (int)(((out_h - h) / 2) & ~1u);
        } else {                    /* input taller: full height, bars left and right */
            uint64_t w = scale_round_even((uint64_t)out_h * in_w, in_h);
            if (w > out_w) w = out_w;
            g.dst_w = (int)w;
            g.dst_x = (int)(((out_w - w) / 2) & ~1u);
        }
    } else if (mode == SCALE_MODE_FILL && in_cross != out_cross) {
        if (in_cross > out_cross) { /* input wider: crop left and right */
            uint64_t w = scale_round_even((uint64_t)in_h * out_w, out_h);
            if (w > in_w) w = in_w;
            g.src_w = (int)w;
            g.src_x = (int)(((in_w - w) / 2) & ~1u);
        } else {                    /* input taller: crop top and bottom */
            uint64_t h = scale_round_even((uint64_t)in_w * out_h, out_w);
            if (h > in_h) h = in_h;
            g.src_h = (int)h;
            g.src_y = (int)(((in_h - h) / 2) & ~1u);
        }
    }
    return g;
}

/*
 * kernel_level.h — which instruction set the YUV plugin's kernels use (scale
 * and rotate/mirror alike), chosen at run time from the CPU, never from the
 * build machine. Hidden: the plugin exports only rawfx_get_plugin_entry.
 */
#ifndef RAWFX_YUV_KERNEL_LEVEL_H
#define RAWFX_YUV_KERNEL_LEVEL_H

/* Instruction sets, in order: a level includes the ones below it. */
typedef enum yuv_kernel_level {
    YUV_KERNELS_C = 0,
    YUV_KERNELS_SSSE3 = 1,
    YUV_KERNELS_AVX2 = 2,
    YUV_KERNELS_AVX512 = 3, /* AVX-512 F, BW, VL and VBMI (Ice Lake and later, Zen 4) */
} yuv_kernel_level;

/* The best level this CPU runs, lowered by the environment variable
 * RAWFX_KERNELS ("c", "ssse3", "avx2" or "avx512"; test-only: it lets tests compare each
 * SIMD path with the portable one; the watermark plugin reads it too). Never
 * raises it above what the CPU supports. When the variable holds anything
 * else, *refused (if not NULL) is set to it, for the caller to log; otherwise
 * to NULL. Not real-time (getenv): call at configure. */
__attribute__((visibility("hidden"))) yuv_kernel_level yuv_kernels_select(const char **refused);

/* "c", "ssse3", "avx2" or "avx512". Kernels with no 512-bit version run their
 * AVX2 one at "avx512". */
__attribute__((visibility("hidden"))) const char *yuv_kernels_name(yuv_kernel_level level);

#endif

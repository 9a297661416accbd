#include "kernel_level.h"

#include <stdlib.h>
#include <strings.h>

yuv_kernel_level yuv_kernels_select(const char **refused) {
    yuv_kernel_level best = YUV_KERNELS_C;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("ssse3")) best = YUV_KERNELS_SSSE3;
    if (__builtin_cpu_supports("avx2")) best = YUV_KERNELS_AVX2;
    /* the 512-bit kernels permute bytes across the whole vector (vpermb: VBMI) */
    if (best == YUV_KERNELS_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi"))
        best = YUV_KERNELS_AVX512;
#endif
    const char *cap = getenv("RAWFX_KERNELS");
    if (refused != NULL) *refused = NULL;
    if (cap != NULL && *cap != '\0') {
        yuv_kernel_level limit = best;
        if (strcasecmp(cap, "c") == 0) limit = YUV_KERNELS_C;
        else if (strcasecmp(cap, "ssse3") == 0) limit = YUV_KERNELS_SSSE3;
        else if (strcasecmp(cap, "avx2") == 0) limit = YUV_KERNELS_AVX2;
        else if (strcasecmp(cap, "avx512") == 0) limit = YUV_KERNELS_AVX512;
        else if (refused != NULL) *refused = cap;
        if (limit < best) best = limit;
    }
    return best;
}

const char *yuv_kernels_name(yuv_kernel_level level) {
    switch (level) {
    case YUV_KERNELS_AVX512: return "avx512";
    case YUV_KERNELS_AVX2: return "avx2";
    case YUV_KERNELS_SSSE3: return "ssse3";
    default: return "c";
    }
}

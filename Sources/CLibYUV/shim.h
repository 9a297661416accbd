#include <libyuv.h>

/* libyuv's sample positions (declared in libyuv/scale_row.h, exported by libyuv.so), for
 * the tests' reference of the `scale` plugin's any-ratio path, which samples where libyuv
 * does (Sources/RawFXScaleKernels/scale_kernels.c). */
enum FilterMode ScaleFilterReduce(int src_width, int src_height, int dst_width, int dst_height,
                                  enum FilterMode filtering);
void ScaleSlope(int src_width, int src_height, int dst_width, int dst_height, enum FilterMode filtering,
                int *x, int *y, int *dx, int *dy);

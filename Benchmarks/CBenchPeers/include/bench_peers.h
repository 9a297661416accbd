/*
 * The bench's FFmpeg peer: libswscale and libavfilter called directly, one thread, on the
 * bench's own frames, so `bench --peers` can time them per frame beside RawFX in one run.
 *
 * The libraries (libavutil.so.57, libswscale.so.6, libavfilter.so.8: FFmpeg 5.1) are opened
 * with dlopen at run time, never linked: the bench builds and runs without them, and then
 * reports FFmpeg as unavailable with the reason. The FFmpeg -dev headers give the
 * declarations when they are installed at build time; without them every call reports that.
 *
 * Every function reports failure with a message in `error` (capacity bytes, NUL-terminated)
 * naming what failed and why (the library or symbol missing, or FFmpeg's own av_strerror text).
 * Not thread-safe: the bench calls it from its one measuring thread.
 */
#ifndef BENCH_PEERS_H
#define BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the three libraries and resolves every symbol the peer uses, once (later calls
 * return the first result). 0 on success. */
int bench_peers_ffmpeg_load(char *error, size_t capacity);

/* "libswscale 6.7.100, libavfilter 8.44.100, libavutil 57.28.100" once loaded; "" before. */
const char *bench_peers_ffmpeg_versions(void);

/* The swscale algorithms the bench compares (SWS_FAST_BILINEAR, SWS_BILINEAR, SWS_AREA). */
enum bench_peers_sws_algorithm {
    BENCH_PEERS_SWS_FAST_BILINEAR = 0,
    BENCH_PEERS_SWS_BILINEAR = 1,
    BENCH_PEERS_SWS_AREA = 2,
};

typedef struct bench_peers_scaler bench_peers_scaler;

/* sws_getContext for yuv420p source_width x source_height -> yuv420p output, one thread. */
bench_peers_scaler *bench_peers_scaler_create(int source_width, int source_height, int output_width, int output_height,
                                              enum bench_peers_sws_algorithm algorithm, char *error, size_t capacity);

/* sws_scale of the whole frame from the three planes into the three output planes (caller's
 * buffers, any strides). Returns the output height, or a negative AVERROR. No allocation. */
int bench_peers_scaler_run(bench_peers_scaler *scaler, const uint8_t *const source[3], const int source_strides[3],
                           uint8_t *const output[3], const int output_strides[3]);

void bench_peers_scaler_destroy(bench_peers_scaler *scaler);

/* An optional second input "[logo]" for overlay graphs: a yuva420p image. */
typedef struct bench_peers_logo {
    const uint8_t *planes[4]; /* Y, U, V, A */
    int strides[4];
    int width, height;
} bench_peers_logo;

typedef struct bench_peers_graph bench_peers_graph;

/* A libavfilter graph with one thread from a yuv420p buffer source of width x height to a
 * buffer sink, e.g. "transpose=1" or "hflip,vflip". With a logo the graph has a second
 * source, named as in "[in][logo]overlay=x=1488:y=32", fed the logo once and then closed, so
 * overlay repeats it on every frame. */
bench_peers_graph *bench_peers_graph_create(const char *description, int width, int height,
                                            const bench_peers_logo *logo, char *error, size_t capacity);

/* Feeds the planes as one frame (av_buffersrc_add_frame_flags; the planes are wrapped in a
 * writable AVBufferRef that does not own them, so overlay may blend in place, as RawFX's
 * watermark does), then takes every frame the sink has (av_buffersink_get_frame). With
 * `copy_to` (three planes of the output size), the output is copied there with av_image_copy
 * (for filters whose output is only a view of the input, such as vflip). Returns the number
 * of frames taken (0 while a filter holds a frame back), or a negative AVERROR with the
 * message in `error`. */
int bench_peers_graph_run(bench_peers_graph *graph, uint8_t *const planes[3], const int strides[3],
                          uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity);

/* The size of the sink's output, valid after create. */
int bench_peers_graph_output_width(const bench_peers_graph *graph);
int bench_peers_graph_output_height(const bench_peers_graph *graph);

void bench_peers_graph_destroy(bench_peers_graph *graph);

/* A graph of `input_count` yuv420p buffer sources named [in0] … [in<N-1>], input k of
 * widths[k] x heights[k], into one buffer sink, one thread (the compositor's peer:
 * "[in0]scale=…[s0];…;[s0][s1]…xstack=inputs=N:…"). Destroyed with bench_peers_graph_destroy. */
bench_peers_graph *bench_peers_multi_graph_create(const char *description, int input_count, const int widths[],
                                                  const int heights[], char *error, size_t capacity);

/* Feeds one frame to every source (planes[3k..3k+2] and strides[3k..3k+2] are input k's),
 * then takes every frame the sink has, as bench_peers_graph_run (copy_to: the output's size). */
int bench_peers_multi_graph_run(bench_peers_graph *graph, uint8_t *const planes[], const int strides[],
                                uint8_t *const copy_to[3], const int copy_strides[3], char *error, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif

/*
 * rawfx_embed.h — run RawFX filter chains from C, C++ or any language with a C FFI.
 *
 * The HOST side of RawFX, exported by librawfx.so (`pkg-config --cflags --libs rawfx`).
 * rawfx.h, next to this header, is the PLUGIN side; this header reuses its frame and format
 * structs (rawfx_video_frame, rawfx_audio_frame, rawfx_video_format, rawfx_audio_format).
 * Pure C99; compiles as C++ too.
 *
 * Conventions
 * - Handles are opaque pointers: rawfx_registry, rawfx_video_chain, rawfx_audio_chain. Each
 *   is created by a *_open / *_create function and freed by its *_close / *_destroy; a
 *   chain keeps what it needs of its registry, so the registry may be closed first.
 * - Structs the caller fills in start with `uint32_t struct_size`, set to sizeof as the
 *   caller compiled it; fields beyond it read as zero, so new fields are appended. A
 *   struct_size larger than this library's sizeof is refused (RAWFX_E_INVALID_ARGUMENT):
 *   it comes from a newer header, whose fields this library would ignore; such a program
 *   checks rawfx_embed_version() first.
 * - Frames: 1 to 16384 pixels each way; each plane's row stride from the plane's width to
 *   65536 bytes (a tile of a wide canvas fits; anything larger is refused, never used).
 * - Every function that can fail returns rawfx_result. On failure (anything but RAWFX_OK) it
 *   stores a message for the calling thread that rawfx_last_error() returns: it names what
 *   was wrong and what was expected. Bad arguments are reported, never a crash.
 * - Thread tags, as in rawfx.h:
 *     [any]      any thread, at any time.
 *     [control]  any thread, but not concurrently with another [control] or [process] call
 *                on the same handle (may allocate, lock, load files).
 *     [process]  the one thread that runs frames or audio through a chain. Once the chain is
 *                negotiated and the format does not change, REAL-TIME: no heap allocation,
 *                no lock, no I/O inside the engine (plugins keep the rawfx.h contract).
 *     [control, concurrent] any thread, concurrently with [process] calls on the same chain:
 *                the change is applied between two frames or chunks.
 * - Strings passed in are UTF-8 and NUL-terminated; they are copied, never kept.
 */
#ifndef RAWFX_EMBED_H
#define RAWFX_EMBED_H

#include "rawfx.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API. Minor versions only append functions and struct fields. */
#define RAWFX_EMBED_VERSION_MAJOR 1
#define RAWFX_EMBED_VERSION_MINOR 5

/* [any] The version of the library loaded, as RAWFX_EMBED_VERSION_MAJOR * 1000 + MINOR.
 * A program built against a newer minor than the library checks this before calling the
 * newer functions. */
uint32_t rawfx_embed_version(void);

/* ----------------------------------------------------------------- errors -- */

/* RAWFX_OK (0, from rawfx.h) is success; failures are positive, unlike a plugin's
 * rawfx_status. */
typedef int32_t rawfx_result;
enum {
    RAWFX_E_INVALID_ARGUMENT   = 1, /* a NULL handle, a bad struct_size, a bad format or frame */
    RAWFX_E_NOT_FOUND          = 2, /* a search-path entry, a filter, a stage or parameter */
    RAWFX_E_CHAIN              = 3, /* chain text, a parameter value, wrong media kind */
    RAWFX_E_NEGOTIATION        = 4, /* a filter refused the format */
    RAWFX_E_PROCESS            = 5, /* a filter failed while processing */
    RAWFX_E_STATE              = 6, /* not negotiated yet, or a call out of order */
    RAWFX_E_BUFFER_TOO_SMALL   = 7  /* the caller's buffer cannot hold the result */
};

/* [any] The message of the last failed call on the calling thread ("" if none). Valid
 * until the next failing call on this thread. */
const char *rawfx_last_error(void);

/* [any] The name of a result code ("RAWFX_E_CHAIN"); a static string. */
const char *rawfx_result_name(rawfx_result result);

/* ---------------------------------------------------------------- logging -- */

/* One log line of the engine or a plugin: `level` is a rawfx_log_severity (RAWFX_LOG_DEBUG to
 * RAWFX_LOG_ERROR, rawfx.h); `source` names who logged (a filter id, a plugin file, a hook;
 * "" for none); both strings are valid during the call only. */
typedef void (*rawfx_log_callback)(void *user_data, uint32_t level, const char *source, const char *message);

/* [any] (since 1.1) Sends the log lines of the engine and its plugins from `min_level` up to
 * `callback`. The callback runs on the engine's logging thread, never on a process thread,
 * one line at a time and in order; it must not call rawfx_set_log_callback. Plugins log into a
 * lock-free ring that this thread drains, so a slow callback never stalls a frame (a full
 * ring drops lines). With callback NULL the lines go back to swift-log, whose default
 * handler writes them to standard error, warnings and errors only (docs/observability.md).
 * RAWFX_E_INVALID_ARGUMENT for a level above RAWFX_LOG_ERROR. */
rawfx_result rawfx_set_log_callback(rawfx_log_callback callback, void *user_data, uint32_t min_level);

/* [control] (since 1.1) Returns when every line logged before the call has been delivered
 * (to the callback, or to swift-log): call it before checking for a line, or before exit. */
void rawfx_log_sync(void);

/* ---------------------------------------------------------------- threads -- */

/* [control] (since 1.2) Sets the engine's thread pool to `count` threads, the calling process
 * thread included (rfx_runtime_set_thread_count; Swift: RawFXThreadPool.threadCount). The
 * plugins split a frame into slices over it (scale, rotate, mirror; plugins see it as the
 * host extension rawfx.thread-pool/1), and an isolated stage its copy of a borrowed frame
 * into the helper's shared memory (docs/isolation.md). 1, the default, runs everything on
 * the process thread. Workers start here, never on a frame path; lowering the count parks
 * them. One pool per process, shared by every chain and hook. RAWFX_E_INVALID_ARGUMENT for
 * a count outside 1 to 64 (1.2 took a larger one as 64), changing nothing. */
rawfx_result rawfx_set_thread_count(uint32_t count);

/* [any] (since 1.2) The thread pool's size, the calling thread included (1: no pool). */
uint32_t rawfx_thread_count(void);

/* --------------------------------------------------------------- registry -- */

typedef struct rawfx_registry rawfx_registry;

/* Where plugin files are looked for, in this order (earlier entries win a filter id):
 *   1. search_path entries (a directory of *.so files, or one .so file); one that does not
 *      exist is an error (RAWFX_E_NOT_FOUND);
 *   2. if use_environment: the colon-separated entries of $RAWFX_PLUGIN_PATH (one that does
 *      not exist is listed as a failure and the scan goes on);
 *   3. unless skip_default_directory: the plugins installed with librawfx
 *      (<libdir>/rawfx/plugins), or, when that does not exist, the directory of librawfx.so
 *      itself (where `swift build` puts the plugins).
 * Trust, as the engine applies it (docs/cli.md): a plugin file and every directory above it
 * must be owned by root or the current user and not writable by group or others. With
 * allow_untrusted (or RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 in the environment when
 * use_environment is set) only the regular-file rule applies. */
typedef struct rawfx_registry_options {
    uint32_t struct_size;
    const char *const *search_path; /* search_path_count entries; may be NULL when 0 */
    size_t search_path_count;
    int32_t use_environment;        /* nonzero: read RAWFX_PLUGIN_PATH and RAWFX_ALLOW_UNTRUSTED_PLUGINS */
    int32_t skip_default_directory; /* nonzero: do not scan librawfx's own plugin directory */
    int32_t allow_untrusted;        /* nonzero: lift the ownership and permission rule */
} rawfx_registry_options;

/* [control] Scans the search path and loads every trusted plugin. `options` may be NULL:
 * the environment and the default directory. A file that fails to load does not fail the
 * call: it is listed by rawfx_registry_failure. On success *registry is set; close it with
 * rawfx_registry_close. */
rawfx_result rawfx_registry_open(const rawfx_registry_options *options, rawfx_registry **registry);

/* [control] Frees the registry. Chains made from it stay valid. NULL is ignored. */
void rawfx_registry_close(rawfx_registry *registry);

/* [control] The entries scanned, in order (index < count). The string is valid until the
 * registry is closed. */
size_t rawfx_registry_search_path_count(const rawfx_registry *registry);
const char *rawfx_registry_search_path_entry(const rawfx_registry *registry, size_t index);

/* [control] The plugin files that failed to load or were refused by the trust rule, each
 * with its reason ("/x/a.so: not loaded: directory /x is writable by its group ..."). The
 * string is valid until the registry is closed; NULL for an index past the end. */
size_t rawfx_registry_failure_count(const rawfx_registry *registry);
const char *rawfx_registry_failure(const rawfx_registry *registry, size_t index);

/* [control] The registered filter ids, sorted ("denoise", "rotate", ...). Valid until the
 * registry is closed; NULL for an index past the end. */
size_t rawfx_registry_filter_count(const rawfx_registry *registry);
const char *rawfx_registry_filter_id(const rawfx_registry *registry, size_t index);

/* ---------------------------------------------------------------- metrics -- */

/* Figures for one stage of a chain (a filter), as `rawfx run --metrics` would print. */
typedef struct rawfx_stage_metrics {
    uint32_t struct_size;
    char name[64];          /* the filter id, NUL-terminated (cut at 63 bytes) */
    uint64_t frames;        /* frames or blocks processed */
    uint64_t errors;        /* process calls that failed */
    uint64_t drops;
    uint64_t bypassed;      /* frames or blocks passed on while bypassed (not in frames) */
    uint64_t p50_ns;        /* median and 99th percentile time per call, recent calls */
    uint64_t p99_ns;
} rawfx_stage_metrics;

/* ------------------------------------------------------------ video chain -- */

typedef struct rawfx_video_chain rawfx_video_chain;

/* [control] Builds a video chain from the chain syntax of `rawfx run --vf`
 * ("watermark=image=logo.png,scale=width=1280:height=720,rotate=angle=90"; "" copies).
 * The chain can be replaced later as a whole (rawfx_video_chain_replace). */
rawfx_result rawfx_video_chain_create(rawfx_registry *registry, const char *chain_text,
                                      rawfx_video_chain **chain);

/* [control] Frees the chain and its buffers. NULL is ignored. */
void rawfx_video_chain_destroy(rawfx_video_chain *chain);

/* [control] Negotiates every filter for `input` (I420) and allocates the buffers, so that
 * processing frames of this format allocates nothing. Writes the chain's output format to
 * `output` (may be NULL). Optional: the first frame negotiates too. */
rawfx_result rawfx_video_chain_negotiate(rawfx_video_chain *chain, const rawfx_video_format *input,
                                         rawfx_video_format *output);

/* [process] Runs `input` (the caller's planes and strides; borrowed for the call) through
 * the chain. `*output` receives a view of the result: the caller's own planes when every
 * filter works in place, otherwise an engine buffer, valid until the next process or drain
 * call on this chain or its destruction. A frame of another format than the negotiated one
 * renegotiates first (allocating). The caller's planes may be edited by in-place filters. */
rawfx_result rawfx_video_chain_process(rawfx_video_chain *chain, const rawfx_video_frame *input,
                                       rawfx_video_frame *output);

/* [process] As rawfx_video_chain_process, then copies the result into `destination`'s
 * planes (its own strides: a tile of a larger canvas, say), which must have the output's
 * width and height. `destination` may be `input` itself when the chain keeps the size (an
 * SDK pre-processor's frame); planes that partly overlap the input's are refused
 * (RAWFX_E_INVALID_ARGUMENT, since 1.3). A destination of the wrong size is refused before
 * the frame is consumed (RAWFX_E_STATE) whenever the chain is already negotiated for the
 * input's format with no change pending. */
rawfx_result rawfx_video_chain_process_into(rawfx_video_chain *chain, const rawfx_video_frame *input,
                                            const rawfx_video_frame *destination);

/* Receives one frame from rawfx_video_chain_drain; the view is valid during the call. */
typedef void (*rawfx_video_emit)(void *user_data, const rawfx_video_frame *frame);

/* [process] Frames of delay from input to output (the sum of the filters' latencies),
 * known once negotiated (a pending replacement chain is installed first, as process does). A file's first `latency` outputs precede any input: drop them, and
 * call rawfx_video_chain_drain at the end. */
uint32_t rawfx_video_chain_latency(const rawfx_video_chain *chain);

/* [process] At the end of a stream, pushes out the `latency` frames a delaying filter still
 * holds by repeating `last_input` (the last frame given to process); emits nothing for a
 * chain without latency. */
rawfx_result rawfx_video_chain_drain(rawfx_video_chain *chain, const rawfx_video_frame *last_input,
                                     rawfx_video_emit emit, void *user_data);

/* [control, concurrent] Sets a parameter while frames flow: "scale.width" (filter id) or
 * "1.width" (stage index), value in chain syntax ("960"). Validated now (a bad value fails
 * here); applied between two frames, keeping the filter's state. */
rawfx_result rawfx_video_chain_set_parameter(rawfx_video_chain *chain, const char *address, const char *value);

/* [control, concurrent] Bypasses (nonzero) or re-enables (0) a stage: "watermark" or "0". A
 * stage that changes the size cannot be bypassed (RAWFX_E_CHAIN); bypassed before the chain
 * knows its formats, the refusal comes from the negotiation (or the first frame), and no
 * frame passes until the bypass is lifted. */
rawfx_result rawfx_video_chain_set_bypass(rawfx_video_chain *chain, const char *stage, int32_t bypassed);

/* [control, concurrent] Replaces the whole chain with one built from `chain_text`, from the
 * next frame: no frame dropped, none split between the two chains. If `negotiate_for` is not
 * NULL the new chain is negotiated now, so a refusal fails this call, not a frame. The old
 * chain is freed on a later control call, never on the processing thread. Parameters and
 * bypasses set afterwards go to the new chain. */
rawfx_result rawfx_video_chain_replace(rawfx_video_chain *chain, rawfx_registry *registry,
                                       const char *chain_text, const rawfx_video_format *negotiate_for);

/* [any] How many times the processing thread has switched to a replacement chain. */
uint64_t rawfx_video_chain_swap_count(const rawfx_video_chain *chain);

/* [process] (allocates: call it between frames, not for each) The figures of the chain in
 * force, one per stage, into `metrics[0..capacity)`
 * (each with struct_size set by the caller, or 0 for this header's size); `*count` receives
 * the number of stages. RAWFX_E_BUFFER_TOO_SMALL (with *count set) when capacity is smaller. */
rawfx_result rawfx_video_chain_metrics(const rawfx_video_chain *chain, rawfx_stage_metrics *metrics,
                                       size_t capacity, size_t *count);

/* [process] (allocates, as above) The same figures as one JSON object, {"stages":[{"name":..,"frames":..,...}]},
 * NUL-terminated into `buffer` (capacity bytes). `*length` receives the length without the
 * NUL; RAWFX_E_BUFFER_TOO_SMALL when it does not fit (call again with length + 1). */
rawfx_result rawfx_video_chain_metrics_json(const rawfx_video_chain *chain, char *buffer, size_t capacity,
                                            size_t *length);

/* ------------------------------------------------------------ audio chain -- */

typedef struct rawfx_audio_chain rawfx_audio_chain;

/* Receives one block of interleaved 16-bit PCM that left the chain; valid during the call. */
typedef void (*rawfx_audio_emit)(void *user_data, const rawfx_audio_frame *block);

/* [control] Builds an audio chain from the syntax of `rawfx run --af`
 * ("denoise=level=-30,resample=rate=16000"; "" copies). */
rawfx_result rawfx_audio_chain_create(rawfx_registry *registry, const char *chain_text,
                                      rawfx_audio_chain **chain);

/* [control] Frees the chain. NULL is ignored. */
void rawfx_audio_chain_destroy(rawfx_audio_chain *chain);

/* [control] Negotiates for `input` (interleaved s16) and sizes the FIFOs and buffers.
 * Writes the output format to `output` (may be NULL). Samples still pending are dropped. */
rawfx_result rawfx_audio_chain_negotiate(rawfx_audio_chain *chain, const rawfx_audio_format *input,
                                         rawfx_audio_format *output);

/* [process] Runs a chunk of any size (`input->frame_count` frames, 0 included); `emit`
 * receives every block that comes out, in order, during the call. A filter that works on
 * fixed blocks (SpeexDSP: 10 ms) gets exactly those: the chain re-blocks. */
rawfx_result rawfx_audio_chain_process(rawfx_audio_chain *chain, const rawfx_audio_frame *input,
                                       rawfx_audio_emit emit, void *user_data);

/* [process] (since 1.3) The most frames rawfx_audio_chain_process of a chunk of
 * `input_frames` frames can emit now, as FFmpeg's swr_get_out_samples: the samples waiting
 * in the chain plus the chunk, through every stage's block size and rate. Exact for chains
 * that keep the rate; with a resampler, an upper bound. 0 before negotiation. */
uint32_t rawfx_audio_chain_max_output(const rawfx_audio_chain *chain, uint32_t input_frames);

/* [process] (since 1.3) As rawfx_audio_chain_process, but the blocks that come out are
 * written one after another into `destination` (interleaved s16 at the output's channel
 * count, room for `capacity` frames), and `*written` receives their frame count. No
 * callback: the fast path for bindings such as Python's. A chunk of another format
 * renegotiates first, as process does. RAWFX_E_BUFFER_TOO_SMALL, before anything is
 * consumed, when `capacity` is below rawfx_audio_chain_max_output for the chunk. */
rawfx_result rawfx_audio_chain_process_into(rawfx_audio_chain *chain, const rawfx_audio_frame *input,
                                            int16_t *destination, uint32_t capacity, uint32_t *written);

/* [process] Frames (at the output rate) by which the output lags the input. Known once
 * negotiated. A file's first `latency` output frames precede the input: drop them. */
uint32_t rawfx_audio_chain_latency(const rawfx_audio_chain *chain);

/* [process] At the end of a stream: feeds silence until every input sample has come out,
 * and cuts the last block there, so that with the first `latency` frames dropped the output
 * has the input's length and lines up with it sample for sample (as `rawfx run`). */
rawfx_result rawfx_audio_chain_drain(rawfx_audio_chain *chain, rawfx_audio_emit emit, void *user_data);

/* [control, concurrent] As rawfx_video_chain_set_parameter: "denoise.level", "-15". A
 * parameter without RECONFIGURE keeps the filter's state (a denoiser's noise estimate). */
rawfx_result rawfx_audio_chain_set_parameter(rawfx_audio_chain *chain, const char *address, const char *value);

/* [control, concurrent] As rawfx_video_chain_set_bypass; a bypassed stage's input is delayed
 * by its latency so the stream never shifts. A resampler cannot be bypassed. */
rawfx_result rawfx_audio_chain_set_bypass(rawfx_audio_chain *chain, const char *stage, int32_t bypassed);

/* [process] (allocates) As rawfx_video_chain_metrics and rawfx_video_chain_metrics_json. */
rawfx_result rawfx_audio_chain_metrics(const rawfx_audio_chain *chain, rawfx_stage_metrics *metrics,
                                       size_t capacity, size_t *count);
rawfx_result rawfx_audio_chain_metrics_json(const rawfx_audio_chain *chain, char *buffer, size_t capacity,
                                            size_t *length);

/* ------------------------------------------------------------- compositor -- */
/* Since 1.4: many streams into one picture (docs/compose.md). Inputs of any size and rate
 * are drawn into the tiles of one I420 output of a declared size on a steady clock:
 * rawfx_compositor_compose draws output frame N with the timestamp N / rate, every tile
 * showing its input's newest frame scaled by the `scale` filter's kernels; an input with no
 * frame for longer than the timeout, or set inactive, shows its placeholder. */

typedef struct rawfx_compositor rawfx_compositor;
typedef struct rawfx_compositor_input rawfx_compositor_input;

enum { RAWFX_FIT_CONTAIN = 0, RAWFX_FIT_COVER = 1 };

typedef struct rawfx_compositor_config {
    uint32_t struct_size;
    uint32_t width, height;          /* even, 2 to 16384 */
    uint32_t rate_numerator;         /* frames per second as a fraction; 0: 30/1 */
    uint32_t rate_denominator;       /* 0: 1 */
    uint32_t color_range;            /* RAWFX_RANGE_LIMITED (default) or RAWFX_RANGE_FULL */
    uint32_t fit;                    /* RAWFX_FIT_CONTAIN (bars) or RAWFX_FIT_COVER (cropped) */
    uint32_t border;                 /* pixels inside each tile, even, 0 to 64 */
    uint32_t background_rgb;         /* 0xRRGGBB behind the tiles; 0: black */
    uint32_t placeholder_rgb;        /* 0xRRGGBB of a tile with nothing fresh; 0: black */
    int64_t input_timeout_us;        /* no frame for longer: the placeholder; 0: 1 s */
    const char *layout;              /* as rawfx_compositor_set_layout; NULL: "grid" */
} rawfx_compositor_config;

/* [control] Creates a compositor. */
rawfx_result rawfx_compositor_create(const rawfx_compositor_config *config, rawfx_compositor **compositor);

/* [control] Frees it; input handles stay valid until released (their frames are dropped). */
void rawfx_compositor_destroy(rawfx_compositor *compositor);

/* [any] Adds an input named `id` (unique; at most 49). `*input` receives a handle the caller
 * releases with rawfx_compositor_input_release, after removing it or not. */
rawfx_result rawfx_compositor_add_input(rawfx_compositor *compositor, const char *id, rawfx_compositor_input **input);

/* [any] Removes the input named `id`; the layout re-flows from the next output frame. */
rawfx_result rawfx_compositor_remove_input(rawfx_compositor *compositor, const char *id);

/* [any, one thread per input at a time] Copies `frame` (the caller's planes and strides,
 * borrowed for the call, as an SDK callback's) into the input, as its newest frame, shown
 * from the next output frame whose time is at or after `time_us` (microseconds of the
 * compositor's clock; INT64_MIN: now). No allocation unless the size changed. */
rawfx_result rawfx_compositor_input_submit(rawfx_compositor_input *input, const rawfx_video_frame *frame, int64_t time_us);

/* [any] Marks the input off (0: its placeholder from the next frame) or on again. */
rawfx_result rawfx_compositor_input_set_active(rawfx_compositor_input *input, int32_t active);

/* [any] Releases an input handle. NULL is ignored. */
void rawfx_compositor_input_release(rawfx_compositor_input *input);

/* [any] The layout from the next output frame: "grid", "single", "speaker" or
 * "speaker:filmstrip=left:others=3", "share" or "share:speaker=inset", or a JSON array of
 * {"id","x","y","width","height","z"} (even pixels inside the output). */
rawfx_result rawfx_compositor_set_layout(rawfx_compositor *compositor, const char *layout);

/* [any] The active speaker and the share (input ids; NULL: none). */
rawfx_result rawfx_compositor_set_roles(rawfx_compositor *compositor, const char *speaker, const char *share);

/* [process] Draws output frame `frame_index` (timestamp frame_index / rate). `*output`
 * receives a view of the canvas, valid until the next compose or the compositor's end.
 * REAL-TIME once warm: no allocation, no lock. */
rawfx_result rawfx_compositor_compose(rawfx_compositor *compositor, int64_t frame_index, rawfx_video_frame *output);

/* Since 1.5: decorations. An overlay is a video chain of in-place filters (a `text` label,
 * a watermark) run on a tile's rectangle of the output once the tile is drawn, picture or
 * placeholder, before the tiles above it; the program overlay runs on the whole output after
 * every tile (a caption bar). The compositor keeps the chain: destroy your handle whenever you
 * like, and change its parameters at any time with rawfx_video_chain_set_parameter ("text.text",
 * a new caption): the compose thread takes them between two frames, without allocating. The
 * chain runs on the compose thread only: do not process frames with it yourself. */
typedef struct rawfx_compositor_input_options {
    uint32_t struct_size;
    rawfx_video_chain *overlay;      /* NULL: none */
    int32_t has_border;              /* nonzero: this tile's own border, instead of config.border */
    uint32_t border;                 /* pixels inside the tile, even, 0 to 64 */
    uint32_t border_rgb;             /* 0xRRGGBB */
    rawfx_video_chain *placeholder_overlay; /* before `overlay`, only while the tile shows its
                                        placeholder (the user's initials on a card); NULL: none */
} rawfx_compositor_input_options;

/* [any] As rawfx_compositor_add_input, with an overlay and a border of the tile's own (an
 * active speaker's highlight). `options` NULL: as rawfx_compositor_add_input. */
rawfx_result rawfx_compositor_add_input_with_options(rawfx_compositor *compositor, const char *id,
                                                     const rawfx_compositor_input_options *options,
                                                     rawfx_compositor_input **input);

/* [any] The program overlay from the next output frame (NULL: none). */
rawfx_result rawfx_compositor_set_overlay(rawfx_compositor *compositor, rawfx_video_chain *overlay);

/* [process] (allocates) Where each input went in the last compose, as JSON:
 * {"version":N,"layout":"grid","tiles":{"id":{"x":..,"y":..,"width":..,"height":..,"z":..}}}.
 * Buffer rules as rawfx_video_chain_metrics_json. */
rawfx_result rawfx_compositor_scene_json(const rawfx_compositor *compositor, char *buffer, size_t capacity,
                                         size_t *length);

/* ------------------------------------------------------------------ mixer -- */
/* Since 1.5: the program's sound (docs/production.md): N streams of 16-bit PCM at any rate
 * and channel count (a virtual speaker's one-way streams, files) mixed into one mono stream in
 * 10 ms blocks: block N is the audio of [N * 10 ms, (N + 1) * 10 ms) on the compositor's clock,
 * and video frame F leaves with the blocks rawfx_mixer_blocks_for_frame names. Each input is
 * converted to the mixer's rate, mono, by the `resample` filter, then gained and summed with
 * saturation. */

typedef struct rawfx_mixer rawfx_mixer;
typedef struct rawfx_mixer_input rawfx_mixer_input;

/* [control] A mixer at `sample_rate` (a multiple of 100 from 8000 to 96000: production studio
 * takes 32000 or 48000). `registry` finds `resample` for inputs of another rate or channel
 * count (NULL: inputs must come at the mixer's rate, mono). `priming_blocks`: blocks an input
 * buffers before it is heard, and again after it ran dry (2 for live streams, 0 for files). */
rawfx_result rawfx_mixer_create(const rawfx_registry *registry, uint32_t sample_rate, uint32_t priming_blocks,
                                rawfx_mixer **mixer);

/* [control] Frees it; input handles stay valid until released. */
void rawfx_mixer_destroy(rawfx_mixer *mixer);

/* [any] Adds an input named `id` (unique; at most 64) at `gain_db` (0: as it comes). `*input`
 * receives a handle the caller releases with rawfx_mixer_input_release. */
rawfx_result rawfx_mixer_add_input(rawfx_mixer *mixer, const char *id, double gain_db, rawfx_mixer_input **input);

/* [any] Removes the input named `id` from the next block on. */
rawfx_result rawfx_mixer_remove_input(rawfx_mixer *mixer, const char *id);

/* [any, one thread per input at a time] Appends a block of any size, rate and channel count
 * (borrowed for the call, as an SDK callback's) to the input's one-second ring. */
rawfx_result rawfx_mixer_input_submit(rawfx_mixer_input *input, const rawfx_audio_frame *block);

/* [any] The input's gain in dB, from the next block. */
rawfx_result rawfx_mixer_input_set_gain(rawfx_mixer_input *input, double gain_db);

/* [any] Releases an input handle. NULL is ignored. */
void rawfx_mixer_input_release(rawfx_mixer_input *input);

/* [process] Mixes block `block_index` (timestamp block_index * 10 ms) into `*output`: a view of
 * sample_rate / 100 mono samples, valid until the next mix. REAL-TIME: no allocation, no lock. */
rawfx_result rawfx_mixer_mix(rawfx_mixer *mixer, int64_t block_index, rawfx_audio_frame *output);

/* [any] The blocks that leave with video frame `frame_index` at rate_numerator/rate_denominator
 * fps (0: 30/1): [*first, *end), those whose start lies in the frame's span. Consecutive frames
 * cover every block once; the audio sent runs ahead of the video by less than one block. */
void rawfx_mixer_blocks_for_frame(int64_t frame_index, uint32_t rate_numerator, uint32_t rate_denominator,
                                  int64_t *first, int64_t *end);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_EMBED_H */

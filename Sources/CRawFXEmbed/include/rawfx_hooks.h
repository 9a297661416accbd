/*
 * rawfx_hooks.h — RawFX's SDK hooks from C: the pre-processor, the virtual speaker, the
 * external video source and the virtual mic of the Zoom Video SDK / Meeting SDK, in librawfx.
 *
 * Each hook is the engine's own (RawFXSDK: PreProcessorHook, VirtualSpeakerHook,
 * VideoSourceAdapter, VirtualMicAdapter, ReceiveVideoHook) behind an opaque `rawfx_hook`; the SDK's objects
 * (raw audio with its reference count, the senders) are plain structs and function pointers
 * here, so any SDK binding can forward to them. rawfx/zoom_adapter.hpp implements the Linux
 * SDKs' C++ callback interfaces over these functions. Conventions (struct_size, results,
 * rawfx_last_error, thread tags) are those of rawfx_embed.h. Tags used here:
 *     [sdk]      the SDK's callback thread for that hook (as the SDK calls it).
 *     [app]      the application's thread that pushes frames or audio into a source.
 *     [control]  any thread, concurrently with [sdk] and [app] calls: applied between frames.
 * Pure C99; compiles as C++ too.
 */
#ifndef RAWFX_HOOKS_H
#define RAWFX_HOOKS_H

#include "rawfx_embed.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rawfx_hook rawfx_hook;

/* Which hook a handle is; calls for another kind fail with RAWFX_E_INVALID_ARGUMENT. */
enum {
    RAWFX_HOOK_PREPROCESSOR    = 1,
    RAWFX_HOOK_VIRTUAL_SPEAKER = 2,
    RAWFX_HOOK_VIDEO_SOURCE    = 3,
    RAWFX_HOOK_VIRTUAL_MIC     = 4,
    RAWFX_HOOK_RECEIVE_VIDEO   = 5,
    RAWFX_HOOK_PRODUCTION_STUDIO = 6,
    RAWFX_HOOK_SHARE_SOURCE    = 7
};

/* ------------------------------------------------------ every hook -- */

/* [control] Stops the hook (a speaker flushes every stream to its sink; a source stops
 * sending; workers are joined) and frees it. NULL is ignored. Not from inside a callback of
 * this hook. */
void rawfx_hook_destroy(rawfx_hook *hook);

/* [any] RAWFX_HOOK_*, or 0 for NULL. */
int32_t rawfx_hook_kind(const rawfx_hook *hook);

/* Production studio has two chains: its control calls are rawfx_production_studio_set_*
 * (these three answer RAWFX_E_INVALID_ARGUMENT for it). */

/* [control] Replaces the hook's chain (syntax of `rawfx run`), built and negotiated on the
 * calling thread for the last format seen, swapped in before the next frame or block; a
 * refusal fails here and keeps the chain in force. A pre-processor refuses a chain that
 * would resize the frame. */
rawfx_result rawfx_hook_set_chain(rawfx_hook *hook, const char *chain_text);

/* [control] As rawfx_video_chain_set_parameter ("denoise.level", "-15"). */
rawfx_result rawfx_hook_set_parameter(rawfx_hook *hook, const char *address, const char *value);

/* [control] As rawfx_video_chain_set_bypass. */
rawfx_result rawfx_hook_set_bypass(rawfx_hook *hook, const char *stage, int32_t bypassed);

/* [control] (allocates) The hook's figures as JSON (production studio: {"video":..,"audio":..}):
 * {"hook":{"name":..,"frames":..,"errors":..,"drops":..,"p50_ns":..,"p99_ns":..},
 *  "refused":..,"overflows":..,"send_rejected":..,"filters":[{"name":..,...}]}
 * (a speaker names its filters "mixed/denoise", "user 7/denoise"). Buffer rules as
 * rawfx_video_chain_metrics_json. */
rawfx_result rawfx_hook_metrics_json(const rawfx_hook *hook, char *buffer, size_t capacity, size_t *length);

/* What a source reports after it acted on an SDK callback: start the frame or audio pump
 * on STARTED, stop it on STOPPED. */
enum {
    RAWFX_EVENT_VIDEO_SOURCE_INITIALIZED = 1, /* capability: what frames will be sent at */
    RAWFX_EVENT_VIDEO_SOURCE_CAPABILITY_CHANGED = 2,
    RAWFX_EVENT_VIDEO_SOURCE_STARTED = 3,
    RAWFX_EVENT_VIDEO_SOURCE_STOPPED = 4,
    RAWFX_EVENT_VIDEO_SOURCE_UNINITIALIZED = 5,
    RAWFX_EVENT_MIC_INITIALIZED = 6,
    RAWFX_EVENT_MIC_STARTED = 7,
    RAWFX_EVENT_MIC_STOPPED = 8,
    RAWFX_EVENT_MIC_UNINITIALIZED = 9,
    RAWFX_EVENT_PS_MODE_ACCEPTED = 10,
    RAWFX_EVENT_PS_MODE_REFUSED = 11,
    RAWFX_EVENT_PS_STARTED = 12,
    RAWFX_EVENT_PS_STOPPED = 13,
    RAWFX_EVENT_SHARE_STARTED = 14,   /* also when the SDK gave no sender: nothing is sent then */
    RAWFX_EVENT_SHARE_STOPPED = 15
};

/* One capability (`VideoSourceCapability`): frame = frames per second; data_mode 0 none, 1
 * side by side, 2 top and bottom (passed through). A fixed layout (it is passed in arrays). */
typedef struct rawfx_video_capability {
    uint32_t width;
    uint32_t height;
    uint32_t frame;
    int32_t data_mode;
} rawfx_video_capability;

typedef struct rawfx_lifecycle_event {
    uint32_t struct_size;
    int32_t kind;                       /* RAWFX_EVENT_* */
    rawfx_video_capability capability;  /* the two video source capability events; else zero */
    const char *description;            /* "video source started"; valid during the call */
} rawfx_lifecycle_event;

/* Called on the SDK's thread, in the SDK's order, after the hook acted on the event; must
 * return quickly. The event is valid during the call. */
typedef void (*rawfx_lifecycle_callback)(void *user_data, const rawfx_lifecycle_event *event);

/* [control] Sets (NULL: removes) the lifecycle callback of a video source, a share source, a
 * virtual mic or production studio. */
rawfx_result rawfx_hook_set_lifecycle_callback(rawfx_hook *hook, rawfx_lifecycle_callback callback, void *user_data);

/* Processing mode of the hooks that have one: 0 = sync (in the SDK's or the app's call);
 * nonzero = async on a worker the hook owns (queue of `async_capacity`: frames for video,
 * milliseconds for audio; 0 takes the default, 3 frames / 2000 ms). */
typedef struct rawfx_hook_options {
    uint32_t struct_size;
    int32_t async;
    uint32_t async_capacity;
    int32_t retain_in_async;  /* speaker, async: keep the SDK's buffer with add_ref instead of copying */
    /* Received video, async: the threads every stream's queue shares (0: one per core), each
     * stream on one of them at a time. Other hooks have one worker. Added after 1.0: a
     * struct_size that ends before it reads as 0. */
    uint32_t async_workers;
} rawfx_hook_options;

/* ------------------------------------------------------ pre-processor -- */

/* [control] `IZoomVideoSDKVideoSourcePreProcessor` / `IZoomSDKPreProcessor`: the chain edits
 * each captured frame in place. `frame_format` (may be NULL) checks the chain against the
 * camera's format now; a chain that would resize, rotate or change the range is refused. */
rawfx_result rawfx_preprocessor_create(rawfx_registry *registry, const char *chain_text,
                                       const rawfx_video_format *frame_format, rawfx_hook **hook);

/* [sdk] onPreProcessRawData: runs the chain on `frame` (the SDK's planes and strides, lent
 * for the call) and writes the result into those planes. Allocates nothing once the format
 * is known. A frame the chain cannot take (it would resize it, a filter failed) is left as
 * captured: RAWFX_E_PROCESS with the reason. */
rawfx_result rawfx_preprocessor_process(rawfx_hook *hook, const rawfx_video_frame *frame);

/* ---------------------------------------------------- virtual speaker -- */

/* Which stream a block belongs to (`IZoomVideoSDKVirtualAudioSpeaker`'s three callbacks,
 * `IZoomSDKAudioRawDataDelegate`'s three). */
enum {
    RAWFX_STREAM_MIXED   = 0,
    RAWFX_STREAM_ONE_WAY = 1, /* one user: user_id names them */
    RAWFX_STREAM_SHARED  = 2
};

/* The SDK's `AudioRawData`: interleaved s16 PCM lent for the call. The reference count
 * functions act on `sdk_object` (NULL functions: the buffer cannot be kept past the call);
 * add_ref returns nonzero on success, release the remaining count. */
typedef struct rawfx_audio_raw_data {
    uint32_t struct_size;
    const char *buffer;
    uint32_t buffer_len;        /* bytes */
    uint32_t sample_rate;
    uint32_t channel_num;
    uint64_t timestamp_ms;
    void *sdk_object;
    int32_t (*can_add_ref)(void *sdk_object);
    int32_t (*add_ref)(void *sdk_object);
    int32_t (*release)(void *sdk_object);
} rawfx_audio_raw_data;

/* Receives each processed block of a stream, valid during the call: on the SDK's thread
 * (sync) or the hook's worker (async), one thread per stream at a time. */
typedef void (*rawfx_speaker_sink)(void *user_data, int32_t stream, uint64_t user_id, const rawfx_audio_frame *block);

/* [any] The 64-bit key of a Video SDK user id string (`IZoomVideoSDKUser::getUserID`), as
 * the speaker's user_id: its decimal value when it is a number, else an FNV-1a hash of its
 * UTF-8 bytes. 0 for NULL. (May allocate for ids over 15 bytes.) */
uint64_t rawfx_user_key(const char *user_id);

/* [control] The virtual speaker: every stream (the mix, each user, share audio) runs its own
 * instance of the audio chain, created on its first block. `options` may be NULL (sync). */
rawfx_result rawfx_speaker_create(rawfx_registry *registry, const char *chain_text, const rawfx_hook_options *options,
                                  rawfx_speaker_sink sink, void *user_data, rawfx_hook **hook);

/* [sdk] One block of a stream (user_id: ONE_WAY only). The buffer is never written. Sync:
 * the sink is called before this returns. Allocates nothing in steady state (sync, or async
 * copying). A malformed block is RAWFX_E_INVALID_ARGUMENT. */
rawfx_result rawfx_speaker_receive(rawfx_hook *hook, int32_t stream, uint64_t user_id, const rawfx_audio_raw_data *data);

/* [control] A user left (`onUserLeave`), or a stream ended: every sample still in its chain
 * (the latency tail included: the chain is drained with silence, its last block cut where
 * the input ended) goes to the sink, then its chain is released. Async: after the audio
 * queued before it. */
rawfx_result rawfx_speaker_remove_stream(rawfx_hook *hook, int32_t stream, uint64_t user_id);

/* [control] Async: waits until the worker has processed everything queued (not from the
 * SDK's thread). Sync: returns at once. */
rawfx_result rawfx_speaker_drain(rawfx_hook *hook);

/* [control] Frames by which a stream's sink output lags its input (its chain's latency; a
 * denoiser: 10 ms): the stream's first `*frames` output frames precede its audio. */
rawfx_result rawfx_speaker_latency(const rawfx_hook *hook, int32_t stream, uint64_t user_id, uint32_t *frames);

/* ------------------------------------------------------ receive video -- */

/* One subscribed pipe's delegate (`IZoomVideoSDKRawDataPipeDelegate`): made by
 * rawfx_receive_video_subscribe and handed to the pipe's subscribe function; the SDK side
 * passes it back with every frame until unsubscribe returns. Owned by the hook. */
typedef struct rawfx_pipe_delegate rawfx_pipe_delegate;

/* The SDK's received frame (`YUVRawDataI420`): I420 planes lent for the call (strides: the
 * row widths when the SDK's planes are packed), rotation in degrees, reference counting as
 * in rawfx_audio_raw_data (NULL functions: the frame cannot be kept; async copies it). */
typedef struct rawfx_video_raw_data {
    uint32_t struct_size;
    uint32_t width;
    uint32_t height;
    char *planes[3];
    int32_t strides[3];
    uint32_t rotation;
    int32_t is_limited;
    uint64_t timestamp_ms;
    void *sdk_object;
    int32_t (*can_add_ref)(void *sdk_object);
    int32_t (*add_ref)(void *sdk_object);
    int32_t (*release)(void *sdk_object);
} rawfx_video_raw_data;

/* The SDK's pipe (`IZoomVideoSDKRawDataPipe`): subscribe(resolution, delegate) and
 * unSubscribe(delegate), returning the SDK's error code (0 success). resolution: 0 90p, 1 180p,
 * 2 360p, 3 720p, 4 1080p (100, auto, is refused for raw data). */
typedef int32_t (*rawfx_pipe_subscribe)(void *pipe, rawfx_pipe_delegate *delegate, int32_t resolution);
typedef int32_t (*rawfx_pipe_unsubscribe)(void *pipe, rawfx_pipe_delegate *delegate);

enum { RAWFX_PIPE_VIDEO = 0, RAWFX_PIPE_SHARE = 1 };

/* Receives each processed frame with the stream it belongs to, valid during the call: on the
 * SDK's thread (sync) or a worker of the hook's pool (async), one thread per stream at a time. */
typedef void (*rawfx_receive_sink)(void *user_data, uint64_t user_id, int32_t pipe_kind, const rawfx_video_frame *frame);

/* [control] Received video per user: every subscribed (user, pipe) stream runs its own
 * instance of the chain. `options` may be NULL (sync); async queues `async_capacity` frames
 * per stream (oldest dropped), processed by a pool of `async_workers` threads that every
 * stream shares (0: one per core; threads start as streams need them). */
rawfx_result rawfx_receive_video_create(rawfx_registry *registry, const char *chain_text, const rawfx_hook_options *options,
                                        rawfx_receive_sink sink, void *user_data, rawfx_hook **hook);

/* [control] Builds the stream's chain (negotiated for `format`, or NULL: the resolution's
 * nominal size) and subscribes: calls `subscribe(pipe, delegate, resolution)` once. A refusal
 * by the pipe is RAWFX_E_PROCESS with the SDK's code in the message; a stream already
 * subscribed is RAWFX_E_STATE. */
rawfx_result rawfx_receive_video_subscribe(rawfx_hook *hook, void *pipe, rawfx_pipe_subscribe subscribe,
                                           rawfx_pipe_unsubscribe unsubscribe, uint64_t user_id, int32_t pipe_kind,
                                           int32_t resolution, const rawfx_video_format *format);

/* [control] Calls the pipe's unsubscribe, then releases the stream (queued frames released,
 * the frame a worker is processing finished, its delegate freed). RAWFX_E_NOT_FOUND if it was
 * not subscribed. */
rawfx_result rawfx_receive_video_unsubscribe(rawfx_hook *hook, uint64_t user_id, int32_t pipe_kind);

/* [control] Async: waits until every stream's queued frames are processed. */
rawfx_result rawfx_receive_video_wait_idle(rawfx_hook *hook);

/* [sdk] The pipe delegate's onRawDataFrameReceived. Allocates nothing in steady state (sync). */
rawfx_result rawfx_pipe_frame_received(rawfx_pipe_delegate *delegate, const rawfx_video_raw_data *frame);

/* [sdk] onRawDataStatusChanged: 0 on, 1 off (queued frames discarded, the chain drained to the sink). */
rawfx_result rawfx_pipe_status_changed(rawfx_pipe_delegate *delegate, int32_t status);

/* ------------------------------------------------------- video source -- */

/* The SDK's video sender (`IZoomVideoSDKVideoSender::sendVideoFrame`,
 * `IZoomSDKVideoSender`): packed I420 of `frame_length` bytes; format 0 limited, 1 full
 * range. Returns the SDK's error code (0 success; the Video SDK's void call: return 0). */
typedef int32_t (*rawfx_video_send)(void *sender, char *frame_buffer, int32_t width, int32_t height,
                                    int32_t frame_length, int32_t rotation, int32_t format);

/* [control] `IZoomVideoSDKVideoSource` / `IZoomSDKVideoSource`: a virtual camera. Frames
 * pushed by the app run through the chain and are fitted to the capability the SDK suggests
 * (a `scale ... mode=fit` stage is appended when the chain does not end at that size),
 * packed, and sent only between on_start_send and on_stop_send. */
rawfx_result rawfx_video_source_create(rawfx_registry *registry, const char *chain_text,
                                       const rawfx_hook_options *options, rawfx_hook **hook);

/* [sdk] onInitialize: keeps the sender (`send` and its `sender` object, until
 * on_uninitialized), takes `suggested` (must not be NULL; `supported` may be NULL with 0). */
rawfx_result rawfx_video_source_on_initialize(rawfx_hook *hook, rawfx_video_send send, void *sender,
                                              const rawfx_video_capability *supported, size_t supported_count,
                                              const rawfx_video_capability *suggested);
/* [sdk] onPropertyChange: frames take the new capability from the next one. */
rawfx_result rawfx_video_source_on_property_change(rawfx_hook *hook, const rawfx_video_capability *supported,
                                                   size_t supported_count, const rawfx_video_capability *suggested);
/* [sdk] onStartSend, onStopSend (once it returns nothing more is sent), onUninitialized. */
rawfx_result rawfx_video_source_on_start_send(rawfx_hook *hook);
rawfx_result rawfx_video_source_on_stop_send(rawfx_hook *hook);
rawfx_result rawfx_video_source_on_uninitialized(rawfx_hook *hook);

/* [app] Offers one frame (any size and strides; lent for the call). Sync: processed and
 * sent before this returns (in-place filters may edit the caller's planes); async: copied
 * into the queue. RAWFX_E_STATE when refused (outside start/stop: never sent),
 * RAWFX_E_PROCESS when a filter failed or the sender answered an error (message names it).
 * Allocates nothing in steady state. */
rawfx_result rawfx_video_source_push_frame(rawfx_hook *hook, const rawfx_video_frame *frame);

/* [control] The capability frames are sent at; RAWFX_E_STATE before on_initialize. */
rawfx_result rawfx_video_source_capability(const rawfx_hook *hook, rawfx_video_capability *capability);

/* ------------------------------------------------------- share source -- */

/* The SDK's share sender (`IZoomVideoSDKShareSender::sendShareFrame`, `IZoomSDKShareSender`):
 * packed I420 of `frame_length` bytes; format 0 limited, 1 full range. Returns the SDK's
 * error code (0 success). */
typedef int32_t (*rawfx_share_send)(void *sender, char *frame_buffer, int32_t width, int32_t height,
                                    int32_t frame_length, int32_t format);

/* [control] `IZoomVideoSDKShareSource` / `IZoomSDKShareSource`: raw frames shared as a
 * screen. Frames pushed by the app run through the chain and are sent at the chain's output
 * size cut to even dimensions, or, when `output_width` and `output_height` are both nonzero,
 * fitted to that size (a `scale ... mode=fit` stage is appended when the chain does not end
 * there); packed; only between on_share_send_started and on_share_send_stopped. */
rawfx_result rawfx_share_source_create(rawfx_registry *registry, const char *chain_text, const rawfx_hook_options *options,
                                       uint32_t output_width, uint32_t output_height, rawfx_hook **hook);

/* [sdk] onShareSendStarted (Meeting SDK: onStartSend): keeps `send` and its `sender` object
 * until on_share_send_stopped and sends from now on. `send` NULL: the SDK gave no sender,
 * nothing is sent (pushes are refused). */
rawfx_result rawfx_share_source_on_share_send_started(rawfx_hook *hook, rawfx_share_send send, void *sender);

/* [sdk] onShareSendStopped (Meeting SDK: onStopSend): once it returns nothing more is sent;
 * queued frames (async) are dropped. */
rawfx_result rawfx_share_source_on_share_send_stopped(rawfx_hook *hook);

/* [app] As rawfx_video_source_push_frame: RAWFX_E_STATE outside started/stopped. Allocates
 * nothing in steady state. */
rawfx_result rawfx_share_source_push_frame(rawfx_hook *hook, const rawfx_video_frame *frame);

/* -------------------------------------------------------- virtual mic -- */

/* The SDK's audio sender (`IZoomVideoSDKAudioSender::Send`, `IZoomSDKAudioRawDataSender::send`):
 * s16 little-endian; channel 0 mono. Returns the SDK's error code (0 success). */
typedef int32_t (*rawfx_audio_send)(void *sender, char *data, uint32_t data_length, int32_t sample_rate, int32_t channel);

/* Who sends the mic's 10 ms chunks, and when. */
enum {
    RAWFX_PACING_WORKER    = 0, /* the hook's thread, on the monotonic clock */
    RAWFX_PACING_CALLER    = 1, /* the app's clock: rawfx_virtual_mic_pump */
    RAWFX_PACING_IMMEDIATE = 2  /* each chunk as soon as it is complete, during the push */
};

/* [control] `IZoomVideoSDKVirtualAudioMic` / `IZoomSDKVirtualAudioMicEvent`: pushed PCM of
 * any rate, channels and chunk size runs through the chain, is converted to mono s16 at
 * `target_rate` (0: 48000; a rate the SDK takes) and sent in chunks of exactly 10 ms. */
rawfx_result rawfx_virtual_mic_create(rawfx_registry *registry, const char *chain_text, uint32_t target_rate,
                                      int32_t pacing, rawfx_hook **hook);

/* [sdk] onMicInitialize (keeps the sender until on_uninitialized), onMicStartSend,
 * onMicStopSend (the chunks still waiting are discarded; once it returns nothing more is
 * sent), onMicUninitialized. */
rawfx_result rawfx_virtual_mic_on_initialize(rawfx_hook *hook, rawfx_audio_send send, void *sender);
rawfx_result rawfx_virtual_mic_on_start_send(rawfx_hook *hook);
rawfx_result rawfx_virtual_mic_on_stop_send(rawfx_hook *hook);
rawfx_result rawfx_virtual_mic_on_uninitialized(rawfx_hook *hook);

/* Pass as timestamp_us to continue from the previous push as if contiguous. */
#define RAWFX_TIMESTAMP_CONTINUE INT64_MIN

/* [app] Pushes interleaved s16 PCM (`block`, lent for the call), whose first sample is at
 * `timestamp_us` (or RAWFX_TIMESTAMP_CONTINUE). RAWFX_E_STATE when refused (outside
 * start/stop), RAWFX_E_PROCESS when a filter failed. Allocates nothing in steady state. */
rawfx_result rawfx_virtual_mic_push_audio(rawfx_hook *hook, const rawfx_audio_frame *block, int64_t timestamp_us);

/* [app] RAWFX_PACING_CALLER: sends the chunks due at `now_us` (any monotonic microsecond
 * clock; the first chunk is due at the first call). `*next_due_us` (may be NULL) receives
 * when the next one is due, or -1 when none is waiting. */
rawfx_result rawfx_virtual_mic_pump(rawfx_hook *hook, int64_t now_us, int64_t *next_due_us);

/* [any] Chunks sent so far. */
uint64_t rawfx_virtual_mic_chunks_sent(const rawfx_hook *hook);

/* -------------------------------------------------- production studio -- */

/* The Meeting SDK's PS sender (`IZoomSDKPSSender`): video of exactly the declared capability
 * (format 0 limited, 1 full), audio s16 mono at 32000 or 48000 Hz. Return the SDK's
 * `SDKError` (0 success). Both are called from one thread, as the SDK asks. */
typedef int32_t (*rawfx_ps_send_video)(void *sender, char *frame_buffer, int32_t width, int32_t height,
                                       int32_t frame_length, int32_t format);
typedef int32_t (*rawfx_ps_send_audio)(void *sender, char *data, uint32_t data_length, int32_t sample_rate, int32_t channel);

/* [control] Production studio mode (`IMeetingProductionStudioCtrlEvent`), for the capability
 * the app passes to StartPSMode (width x height, even; format 0 limited, 1 full): pushed video
 * runs through `video_chain` and is fitted to exactly that; pushed audio through
 * `audio_chain`, to mono at `audio_rate` (0: 48000; or 32000) in paced 10 ms chunks
 * (`pacing`: RAWFX_PACING_*). `options`: the video processing mode (may be NULL). */
rawfx_result rawfx_production_studio_create(rawfx_registry *registry, const char *video_chain, const char *audio_chain,
                                            uint32_t width, uint32_t height, int32_t format, uint32_t audio_rate,
                                            int32_t pacing, const rawfx_hook_options *options, rawfx_hook **hook);

/* [sdk] onStartPSModeResult, onStartSend (a sender after a successful result opens sending;
 * sender functions NULL: the SDK gave none), onStopSend (once it returns nothing more is
 * sent), onPSUserStatusChanged. */
rawfx_result rawfx_production_studio_on_start_ps_mode_result(rawfx_hook *hook, int32_t success);
rawfx_result rawfx_production_studio_on_start_send(rawfx_hook *hook, rawfx_ps_send_video send_video,
                                                   rawfx_ps_send_audio send_audio, void *sender);
rawfx_result rawfx_production_studio_on_stop_send(rawfx_hook *hook);
rawfx_result rawfx_production_studio_on_ps_user_status_changed(rawfx_hook *hook, uint32_t user_id, int32_t is_start);

/* [app] As rawfx_video_source_push_frame and rawfx_virtual_mic_push_audio / _pump. */
rawfx_result rawfx_production_studio_push_frame(rawfx_hook *hook, const rawfx_video_frame *frame);
rawfx_result rawfx_production_studio_push_audio(rawfx_hook *hook, const rawfx_audio_frame *block, int64_t timestamp_us);
rawfx_result rawfx_production_studio_pump(rawfx_hook *hook, int64_t now_us, int64_t *next_due_us);

/* [control] Run-time control of one of the two chains (media: rawfx.h's RAWFX_MEDIA_VIDEO or
 * RAWFX_MEDIA_AUDIO). */
rawfx_result rawfx_production_studio_set_chain(rawfx_hook *hook, int32_t media, const char *chain_text);
rawfx_result rawfx_production_studio_set_parameter(rawfx_hook *hook, int32_t media, const char *address, const char *value);
rawfx_result rawfx_production_studio_set_bypass(rawfx_hook *hook, int32_t media, const char *stage, int32_t bypassed);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_HOOKS_H */

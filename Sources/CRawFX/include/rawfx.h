/*
 * rawfx.h — the RawFX plugin ABI.
 *
 * One header, pure C99, usable from C++. A plugin is a shared object (.so) that
 * exports one function, `rawfx_get_plugin_entry` (RAWFX_ENTRY_SYMBOL), which
 * returns a pointer to a static `rawfx_plugin_entry`; everything else is reached
 * through that struct. (A function rather than a data symbol, so that plugins
 * written in Swift or Rust, which export functions easily, can provide it.)
 *
 * Conventions
 * - Growth. Every struct that may grow starts with `uint32_t struct_size`, set by
 *   whoever fills it in to `sizeof` of the struct as they compiled it. A reader
 *   uses only the fields that fit inside `struct_size`, and only fields of the
 *   ABI minor version the writer declared; new fields are appended, never
 *   inserted, and a new field's zero (or NULL) value always means "as before".
 *   A 1.1 host reads a 1.0 plugin's structs at their 1.0 size; a 1.0 plugin that
 *   never heard of a 1.1 field is never asked for it. Fields marked "(1.1)" are
 *   new in 1.1; see RAWFX_SIZE_1_0_* for the 1.0 sizes.
 * - Frozen from 1.1 on: the core structs (entry, host_info, host, filter
 *   descriptor, filter, param descriptor) keep their 1.1 size, and the structs
 *   embedded in others (formats, frames, negotiation, param value) never change
 *   size. Later features are extensions by string id (get_extension), each in
 *   its own header under rawfx/ext/.
 * - Real-time rules follow the minor a plugin declared: the REAL-TIME set_param
 *   and reset of 1.1 apply to plugins of minor >= 1. A 1.0 plugin's set_param is
 *   never called on a live instance (the host configures a new one instead).
 * - Versions. A host accepts a plugin of its own major version and any minor,
 *   older or newer (as CLAP does): it reads a newer plugin's structs only as far
 *   as it knows them. A plugin that needs a host feature of a newer minor checks
 *   `host->abi.minor` in init and refuses with RAWFX_ERR_VERSION.
 * - Thread tags on every function:
 *     [loader]   the thread that loads the plugin (dlopen); never concurrent with
 *                any other call into the same plugin file.
 *     [control]  any thread, but the host never makes two calls on the same
 *                instance at once, and never while that instance is processing.
 *                May allocate, lock and do I/O.
 *     [process]  the thread that runs frames through the chain (often an SDK
 *                callback thread). REAL-TIME: must not block, lock, allocate,
 *                free or do I/O, and must return in bounded time.
 *     [process or control]  either, as the host chooses; REAL-TIME either way.
 *     [any]      any thread, at any time, concurrently with anything: must be
 *                thread-safe, and is REAL-TIME unless it says otherwise.
 *   Different instances may be used on different threads at the same time: a
 *   filter must keep all mutable state in its instance.
 * - Real-time calls, in short: process_video, process_audio, reset, set_param of
 *   a parameter without RAWFX_PARAM_FLAG_RECONFIGURE, get_error, and every
 *   function of rawfx_host except get_extension. `rawfx validate` counts heap
 *   allocations, locks and blocking waits, sleeps, file opens and writes, and thread
 *   starts in process, reset and real-time set_param (the first process after
 *   configure included), and times process against the frame's duration.
 * - Frames are planes plus strides. Never assume stride == width. Pointers in a
 *   frame are valid only for the duration of the call that received them.
 * - Functions that can fail return rawfx_status. On failure an instance keeps a
 *   human-readable message that `get_error` returns until the next call.
 *
 * See docs/plugin-abi.md for the full contract and a worked example.
 */
#ifndef RAWFX_H
#define RAWFX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version -- */

/* The ABI version this header describes. A host refuses a plugin of another
 * major and accepts any minor (see "Versions" above). A plugin may refuse a host
 * in init. 1.1 added: rawfx_host (log, request_reconfigure, is_process_thread,
 * get_extension, request_callback), create_with_host, on_callback, and the
 * plugin's own path in rawfx_host_info. */
#define RAWFX_ABI_MAJOR 1
#define RAWFX_ABI_MINOR 1

/* The name of the one symbol a plugin exports (see rawfx_get_plugin_entry). */
#define RAWFX_ENTRY_SYMBOL "rawfx_get_plugin_entry"

typedef struct rawfx_abi_version {
    uint32_t major;
    uint32_t minor;
} rawfx_abi_version;

#define RAWFX_ABI_VERSION_INIT { RAWFX_ABI_MAJOR, RAWFX_ABI_MINOR }

/* ----------------------------------------------------------------- status -- */

typedef int32_t rawfx_status;
enum {
    RAWFX_OK                    = 0,
    RAWFX_ERR_INVALID_ARGUMENT  = -1, /* a parameter value or argument is wrong */
    RAWFX_ERR_UNSUPPORTED       = -2, /* the format or feature is not supported */
    RAWFX_ERR_OUT_OF_MEMORY     = -3,
    RAWFX_ERR_IO                = -4, /* a file the filter needs could not be read */
    RAWFX_ERR_STATE             = -5, /* called in the wrong state (e.g. process before configure) */
    RAWFX_ERR_VERSION           = -6, /* init: the plugin refuses this host's ABI */
    RAWFX_ERR_INTERNAL          = -7
};

/* ---------------------------------------------------------------- formats -- */

typedef uint32_t rawfx_media_kind;
enum {
    RAWFX_MEDIA_VIDEO = 1,
    RAWFX_MEDIA_AUDIO = 2
};

/* How a filter produces its output. */
typedef uint32_t rawfx_processing;
enum {
    /* Edits the input frame; `out` is the same pointer as `in`. Output format
     * equals input format. */
    RAWFX_PROCESS_IN_PLACE = 1,
    /* Reads `in`, writes `out`, a buffer the host allocated for the negotiated
     * output format from its pool. `in` must not be written. */
    RAWFX_PROCESS_OUT_OF_PLACE = 2
};

typedef uint32_t rawfx_pixel_format;
enum {
    RAWFX_PIXEL_I420 = 1 /* 8-bit Y, then U and V subsampled 2x2 */
};

typedef uint32_t rawfx_color_range;
enum {
    RAWFX_RANGE_LIMITED = 0, /* Y 16..235, UV 16..240 (BT.601 "TV" range) */
    RAWFX_RANGE_FULL    = 1  /* 0..255 ("PC"/JPEG range) */
};

/* Video stream format. `rotation` is metadata: the clockwise rotation in
 * degrees (0, 90, 180, 270) a viewer must apply to see the frame upright,
 * as the SDKs report it. */
typedef struct rawfx_video_format {
    uint32_t struct_size;
    uint32_t width;
    uint32_t height;
    rawfx_pixel_format pixel_format;
    rawfx_color_range color_range;
    uint32_t rotation;
} rawfx_video_format;

/* Audio stream format: interleaved signed 16-bit native-endian samples. */
typedef struct rawfx_audio_format {
    uint32_t struct_size;
    uint32_t sample_rate;  /* Hz */
    uint32_t channels;     /* interleaved channel count, >= 1 */
} rawfx_audio_format;

/* A stream format: `kind` says which member is meaningful. */
typedef struct rawfx_format {
    uint32_t struct_size;
    rawfx_media_kind kind;
    rawfx_video_format video;
    rawfx_audio_format audio;
} rawfx_format;

/* What configure answers. The host fills `output` with a copy of the input
 * format and zeroes the rest before the call; the filter changes what it
 * changes (a scaler writes its output width and height). */
typedef struct rawfx_negotiation {
    uint32_t struct_size;
    rawfx_format output;
    /* Audio: the exact number of frames (samples per channel) every process
     * call must carry, or 0 for any count. SpeexDSP filters ask for 10 ms
     * (sample_rate / 100, rounded up for rates like 22050); the host re-blocks
     * so the filter never sees another size. Ignored for video. */
    uint32_t block_frames;
    /* Audio out-of-place: the most output frames one process call can write
     * (the host sizes its pool buffer from this); 0 means "block_frames, or
     * the input count". Ignored for video. */
    uint32_t max_output_frames;
    /* Delay the filter adds: frames for video, frames (samples per channel)
     * at the output rate for audio. The host adds these up along the chain.
     * A timestamp stays with its content: the host stamps each output with
     * the time of the input it came from, so output timestamps run `latency`
     * behind the arrival of the frames that pushed them out. At the end of a
     * stream the host drains a delaying chain (audio: silence; video: the last
     * frame again) and a file writer drops the leading `latency`, so that an
     * output lines up with its input sample for sample (or frame for frame). */
    uint32_t latency;
} rawfx_negotiation;

/* The caps a host puts on a negotiation's numbers, since it sizes buffers and drains from
 * them: a configure that answers more is refused with a message naming the cap (rawfx
 * validate reports it too). Video: latency at most RAWFX_MAX_VIDEO_LATENCY_FRAMES frames.
 * Audio: block_frames, max_output_frames and latency at most RAWFX_MAX_AUDIO_FRAMES each
 * (about 21 s at 48 kHz: far past any real filter, and a buffer a host can hold). */
#define RAWFX_MAX_VIDEO_LATENCY_FRAMES 64u
#define RAWFX_MAX_AUDIO_FRAMES (1u << 20)

/* ----------------------------------------------------------------- frames -- */

/* An I420 picture. planes[0] is Y (width x height), planes[1] U and planes[2]
 * V ((width+1)/2 x (height+1)/2). strides[i] is the distance in bytes between
 * the starts of two rows of plane i; it is >= the row width and may be larger. */
typedef struct rawfx_video_frame {
    uint32_t struct_size;
    uint32_t width;
    uint32_t height;
    rawfx_pixel_format pixel_format;
    rawfx_color_range color_range;
    uint32_t rotation;        /* as in rawfx_video_format; a rotator may change it */
    uint8_t *planes[3];
    int32_t strides[3];
    int64_t timestamp_us;     /* presentation time in microseconds */
} rawfx_video_frame;

/* Where a block of audio came from (the SDK hook that delivered it). */
typedef uint32_t rawfx_audio_source;
enum {
    RAWFX_AUDIO_SOURCE_MIXED   = 0, /* virtual speaker: the session mix */
    RAWFX_AUDIO_SOURCE_ONE_WAY = 1, /* virtual speaker: one user (see user_id) */
    RAWFX_AUDIO_SOURCE_SHARED  = 2, /* virtual speaker: share audio */
    RAWFX_AUDIO_SOURCE_MIC     = 3, /* virtual mic / publish path */
    RAWFX_AUDIO_SOURCE_FILE    = 4  /* a file or pipe (the rawfx command) */
};

/* Per-block metadata flags a filter may set on its output. */
enum {
    RAWFX_AUDIO_FLAG_VOICE = 1u << 0 /* a VAD filter found voice in this block */
};

/* A block of interleaved 16-bit PCM. For out-of-place filters the host sets
 * `frame_count` of `out` to its capacity before the call and the filter sets it
 * to the number of frames it wrote. */
typedef struct rawfx_audio_frame {
    uint32_t struct_size;
    int16_t *samples;         /* frame_count * channels interleaved samples */
    uint32_t frame_count;     /* samples per channel */
    uint32_t sample_rate;
    uint32_t channels;
    rawfx_audio_source source;
    uint64_t user_id;         /* for RAWFX_AUDIO_SOURCE_ONE_WAY */
    uint32_t flags;           /* RAWFX_AUDIO_FLAG_*; filters OR into it */
    int64_t timestamp_us;
} rawfx_audio_frame;

/* ------------------------------------------------------------------- host -- */

/* Severity of a log line (rawfx_host.log). */
typedef uint32_t rawfx_log_severity;
enum {
    RAWFX_LOG_DEBUG   = 0,
    RAWFX_LOG_INFO    = 1,
    RAWFX_LOG_WARNING = 2,
    RAWFX_LOG_ERROR   = 3
};

/* The bytes of one log line the host keeps (NUL included); a longer one is cut. */
#define RAWFX_LOG_MESSAGE_MAX 256

/* (1.1) The host, as a plugin sees it. There are two kinds of host object, of
 * this one type: the PLUGIN-FILE HOST handed to init (rawfx_host_info.host),
 * valid until deinit, and an INSTANCE HOST handed to each instance
 * (create_with_host), valid until its destroy returns. Every function pointer is
 * non-NULL in both; each function says what it does on each. The struct is
 * frozen at this size: later host features are extensions (get_extension). */
typedef struct rawfx_host rawfx_host;
struct rawfx_host {
    uint32_t struct_size;
    rawfx_abi_version abi;   /* the host's ABI version */
    const char *name;        /* "rawfx" */
    const char *version;     /* the host's version string */
    void *host_data;         /* the host's own; a plugin never touches it */

    /* [any] Log one line (UTF-8, no trailing newline needed) at a severity.
     * REAL-TIME: copies at most RAWFX_LOG_MESSAGE_MAX bytes into a lock-free
     * ring and returns; the host formats and writes it on another thread. When
     * the ring is full the line is dropped and counted, never waited for. The
     * host names the filter (or plugin file) in front of the line. */
    void (*log)(const rawfx_host *host, rawfx_log_severity severity, const char *message);

    /* [any] Ask for configure to be called again, with the same input format,
     * before this instance's next frame (say, a file it watches changed). The
     * host prepares the reconfigured chain on a control thread and swaps it in
     * between two frames. REAL-TIME. No effect on the plugin-file host. */
    void (*request_reconfigure)(const rawfx_host *host);

    /* [any] 1 when the calling thread is the one processing this instance's
     * frames right now (inside process, or a slice job of it), else 0. For
     * assertions. REAL-TIME. Always 0 on the plugin-file host. */
    int32_t (*is_process_thread)(const rawfx_host *host);

    /* [any, not real-time] A host extension by string id, or NULL:
     * RAWFX_EXT_THREAD_POOL ("rawfx.thread-pool/1", rawfx/ext/thread_pool.h).
     * The pointer lives as long as this host object. Both kinds of host. */
    const void *(*get_extension)(const rawfx_host *host, const char *id);

    /* [any] Ask the host to call this instance's on_callback soon, on a
     * control thread (CLAP's request_callback). For work that must not happen
     * on the process thread, such as re-creating state a real-time reset used
     * up. REAL-TIME. No effect on the plugin-file host. */
    void (*request_callback)(const rawfx_host *host);
};

/* ------------------------------------------------------------- parameters -- */

/* The one rule for filter ids and parameter ids: one or more of a-z, 0-9 and
 * '_' (no capitals, dashes, dots or spaces: chains address a parameter as
 * "filter.parameter"). The host refuses a file with any other id. */
#define RAWFX_ID_RULE "[a-z0-9_]+"

typedef uint32_t rawfx_param_type;
enum {
    RAWFX_PARAM_INT    = 1, /* integer in [min_value, max_value] */
    RAWFX_PARAM_FLOAT  = 2, /* double in [min_value, max_value] */
    RAWFX_PARAM_BOOL   = 3, /* 0 or 1, spelled true/false/1/0/yes/no/on/off */
    RAWFX_PARAM_ENUM   = 4, /* an index into enum_values, spelled by name */
    RAWFX_PARAM_STRING = 5  /* free text, or a path with RAWFX_PARAM_FLAG_PATH */
};

enum {
    RAWFX_PARAM_FLAG_PATH     = 1u << 0, /* a STRING that names a file */
    RAWFX_PARAM_FLAG_REQUIRED = 1u << 1, /* the filter cannot configure without it */
    /* A change needs a new configure (an output size, a file to read). The
     * host then never calls set_param on a live instance: it sets the value on
     * a new instance on a control thread, configures it there, and swaps it in
     * between two frames. Without this flag set_param is REAL-TIME and takes
     * effect from the next frame, keeping the stream's state. */
    RAWFX_PARAM_FLAG_RECONFIGURE = 1u << 2
};

/* Describes one parameter, so a host can list and validate parameters without
 * creating an instance. All strings are static, UTF-8, owned by the plugin. */
typedef struct rawfx_param_descriptor {
    uint32_t struct_size;
    const char *id;          /* spelled in chains: "opacity"; RAWFX_ID_RULE */
    const char *name;        /* for people: "Opacity" */
    const char *help;        /* one or two sentences */
    const char *unit;        /* "px", "dB", "Hz", "" */
    rawfx_param_type type;
    uint32_t flags;          /* RAWFX_PARAM_FLAG_* */
    double default_value;    /* INT, FLOAT, BOOL, ENUM (index) */
    double min_value;        /* INT, FLOAT */
    double max_value;        /* INT, FLOAT */
    const char *default_string;       /* STRING default, NULL for none */
    const char *const *enum_values;   /* ENUM: enum_count names */
    uint32_t enum_count;
} rawfx_param_descriptor;

/* A parameter value. The host has validated it against the descriptor (type,
 * range, enum index) before a filter sees it. */
typedef struct rawfx_param_value {
    uint32_t struct_size;
    rawfx_param_type type;
    int64_t int_value;       /* INT, BOOL (0/1), ENUM (index) */
    double float_value;      /* FLOAT */
    const char *string_value;/* STRING: valid only during the call; copy it */
} rawfx_param_value;

/* --------------------------------------------------------------- instance -- */

typedef struct rawfx_filter rawfx_filter;
typedef struct rawfx_filter_descriptor rawfx_filter_descriptor;

/* A filter instance: the plugin allocates it in `create`, the host releases it
 * with `destroy`. All function pointers must be non-NULL except where noted. */
struct rawfx_filter {
    uint32_t struct_size;
    const rawfx_filter_descriptor *descriptor;
    void *filter_data;       /* the plugin's own state */

    /* [control] Release everything the instance owns, including itself. */
    void (*destroy)(const rawfx_filter *filter);

    /* [process or control] Set parameter `index` (into descriptor->params).
     * Never concurrent with process. Before configure, and for a parameter
     * with RAWFX_PARAM_FLAG_RECONFIGURE, the host calls it on a control thread
     * and configures afterwards; otherwise it may call it on the process
     * thread between two frames, so it is REAL-TIME: no allocation, no lock,
     * and the stream's state (history, phase, estimates) is kept. */
    rawfx_status (*set_param)(const rawfx_filter *filter, uint32_t index,
                              const rawfx_param_value *value);

    /* [control] Negotiate. `input` is the format frames will arrive in;
     * `result` is prefilled (see rawfx_negotiation). Return RAWFX_OK, or a
     * refusal with a message in get_error that says what was wrong and what
     * would be accepted. All allocation belongs here, not in process. May be
     * called again to renegotiate; it implies reset. */
    rawfx_status (*configure)(const rawfx_filter *filter, const rawfx_format *input,
                              rawfx_negotiation *result);

    /* [process] Process one frame. Video filters set process_video and leave
     * process_audio NULL, audio filters the reverse. In-place filters get
     * out == in (the same pointer). REAL-TIME. A filter may split the work
     * into slice jobs through the host's RAWFX_EXT_THREAD_POOL. */
    rawfx_status (*process_video)(const rawfx_filter *filter,
                                  const rawfx_video_frame *in, rawfx_video_frame *out);
    rawfx_status (*process_audio)(const rawfx_filter *filter,
                                  const rawfx_audio_frame *in, rawfx_audio_frame *out);

    /* [process or control] Forget history (a stream discontinuity: seek,
     * source switch, a user's video turned off). Keeps the negotiated format.
     * REAL-TIME: state that must be re-created is prepared ahead (in configure)
     * and topped up in on_callback. */
    void (*reset)(const rawfx_filter *filter);

    /* [any, about this instance] The message for the last failed call, or "".
     * Owned by the instance, valid until its next call of any function other
     * than get_error itself. */
    const char *(*get_error)(const rawfx_filter *filter);

    /* [control] Optional (may be NULL): an extension by string id, e.g.
     * RAWFX_EXT_VOICE_ACTIVITY (rawfx/ext/voice_activity.h). NULL if not
     * supported. */
    const void *(*get_extension)(const rawfx_filter *filter, const char *id);

    /* (1.1) [control, possibly while the instance processes on another
     * thread] Optional (may be NULL). Called after the instance asked with
     * host->request_callback; several requests may fold into one call. Never
     * concurrent with another control call on the instance, but it may run
     * during process: share state with process through atomics only. */
    void (*on_callback)(const rawfx_filter *filter);
};

/* Static description of one filter type. */
struct rawfx_filter_descriptor {
    uint32_t struct_size;
    const char *id;          /* stable, unique among loaded plugins: "watermark" */
    const char *name;        /* "Watermark" */
    const char *version;     /* the filter's own version: "1.0.0" */
    const char *description; /* one or two sentences */
    rawfx_media_kind media_kind;
    rawfx_processing processing;
    const rawfx_param_descriptor *params;
    uint32_t param_count;

    /* [control] Create an instance with every parameter at its default.
     * On failure return NULL and, if `error` is not NULL, write a message of
     * at most error_capacity bytes (NUL included). A 1.1 host calls it only
     * when create_with_host is NULL; a 1.1 plugin may leave it NULL. */
    const rawfx_filter *(*create)(const rawfx_filter_descriptor *descriptor,
                                  char *error, size_t error_capacity);

    /* (1.1) [control] Optional: as create, with the host object of the new
     * instance (valid until its destroy returns; keep the pointer). */
    const rawfx_filter *(*create_with_host)(const rawfx_filter_descriptor *descriptor,
                                            const rawfx_host *host,
                                            char *error, size_t error_capacity);
};

/* ------------------------------------------------------------------ entry -- */

/* What the host tells a plugin in init. Valid during init only, except `host`
 * (until deinit returns) and `plugin_path` (copy it). */
typedef struct rawfx_host_info {
    uint32_t struct_size;
    rawfx_abi_version abi;   /* the host's ABI version */
    const char *name;        /* "rawfx" */
    const char *version;     /* the host's version string */
    /* (1.1) The absolute path of the plugin's own file, for resources that
     * ship beside it. */
    const char *plugin_path;
    /* (1.1) The host object for the plugin file (log, get_extension). */
    const rawfx_host *host;
} rawfx_host_info;

/* The plugin's description of itself, returned by its one exported function. */
typedef struct rawfx_plugin_entry {
    uint32_t struct_size;
    rawfx_abi_version abi;   /* RAWFX_ABI_VERSION_INIT: what the plugin was built against */
    const char *plugin_name; /* "rawfx-yuv" */
    const char *plugin_version;

    /* [loader] Called once after the host accepted the plugin's ABI version.
     * Return RAWFX_OK, or refuse the host (RAWFX_ERR_VERSION when its ABI is
     * too old) with a message in `error` (at most error_capacity bytes). */
    rawfx_status (*init)(const rawfx_host_info *host, char *error, size_t error_capacity);

    /* [loader] Called exactly once, after every instance has been destroyed,
     * when the host lets go of the file (the registry that loaded it is gone).
     * The host keeps the code mapped afterwards (RTLD_NODELETE: the Swift and
     * Rust runtimes keep records that point into a loaded image), so a second
     * host in the same process that loads the file again calls init again. */
    void (*deinit)(void);

    /* [loader, or any thread after init] The filters this file provides. */
    uint32_t (*filter_count)(void);
    const rawfx_filter_descriptor *(*filter_descriptor)(uint32_t index);
} rawfx_plugin_entry;

/* ------------------------------------------------------------- 1.0 sizes -- */

/* The struct_size of a plugin struct written against the 1.0 header: the
 * smallest a host accepts, and where the 1.1 fields begin. */
#define RAWFX_SIZE_1_0_FILTER_DESCRIPTOR offsetof(rawfx_filter_descriptor, create_with_host)
#define RAWFX_SIZE_1_0_FILTER            offsetof(rawfx_filter, on_callback)
#define RAWFX_SIZE_1_0_HOST_INFO         offsetof(rawfx_host_info, plugin_path)

#if defined(_WIN32)
#  define RAWFX_EXPORT __declspec(dllexport)
#else
#  define RAWFX_EXPORT __attribute__((visibility("default")))
#endif

/* [loader] The one function a plugin exports. Returns a pointer to a static
 * entry that lives as long as the library is loaded; called before init and
 * possibly more than once. Define it in a plugin as
 *
 *     static const rawfx_plugin_entry entry = { sizeof entry, RAWFX_ABI_VERSION_INIT, ... };
 *     RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }
 */
RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void);
typedef const rawfx_plugin_entry *(*rawfx_get_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_H */

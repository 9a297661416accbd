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
 * - Every struct that may grow starts with `uint32_t struct_size`, set by whoever
 *   fills it in to `sizeof` of the struct as they compiled it. A reader uses only
 *   the fields that fit inside `struct_size`; new fields are appended, never
 *   inserted, and a new field's zero value always means "as before".
 * - Thread tags on every function:
 *     [loader]   the thread that loads the plugin (dlopen); never concurrent with
 *                any other call into the same plugin file.
 *     [control]  any thread, but the host never makes two calls on the same
 *                instance at once, and never while that instance is processing.
 *     [process]  the thread that runs frames through the chain (often an SDK
 *                callback thread): must not block, lock, allocate or do I/O.
 *   Different instances may be used on different threads at the same time: a
 *   filter must keep all mutable state in its instance.
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
 * major, or of a newer minor than its own. A plugin may refuse a host in init. */
#define RAWFX_ABI_MAJOR 1
#define RAWFX_ABI_MINOR 0

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
     * at the output rate for audio. The host adds these up along the chain
     * and shifts timestamps by the total. */
    uint32_t latency;
} rawfx_negotiation;

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

/* ------------------------------------------------------------- parameters -- */

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
    RAWFX_PARAM_FLAG_RECONFIGURE = 1u << 2 /* a change needs a new configure */
};

/* Describes one parameter, so a host can list and validate parameters without
 * creating an instance. All strings are static, UTF-8, owned by the plugin. */
typedef struct rawfx_param_descriptor {
    uint32_t struct_size;
    const char *id;          /* spelled in chains: "opacity"; [a-z0-9_]+ */
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

    /* [control, or process between two frames] Set parameter `index` (into
     * descriptor->params). Never concurrent with process. A parameter whose
     * descriptor has RAWFX_PARAM_FLAG_RECONFIGURE (an output size, a file) takes
     * effect at the next configure, which the host makes before the next frame. */
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
     * out == in. Must not allocate, lock or block. */
    rawfx_status (*process_video)(const rawfx_filter *filter,
                                  const rawfx_video_frame *in, rawfx_video_frame *out);
    rawfx_status (*process_audio)(const rawfx_filter *filter,
                                  const rawfx_audio_frame *in, rawfx_audio_frame *out);

    /* [control, or process between two frames] Forget history (a stream
     * discontinuity: seek, source switch). Keeps the negotiated format. */
    void (*reset)(const rawfx_filter *filter);

    /* [any, about this instance] The message for the last failed call, or "".
     * Owned by the instance, valid until its next call of any function other
     * than get_error itself. */
    const char *(*get_error)(const rawfx_filter *filter);

    /* [control] Optional (may be NULL): an extension by string id, e.g.
     * "rawfx.voice-activity/1". NULL if not supported. */
    const void *(*get_extension)(const rawfx_filter *filter, const char *id);
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
     * at most error_capacity bytes (NUL included). */
    const rawfx_filter *(*create)(const rawfx_filter_descriptor *descriptor,
                                  char *error, size_t error_capacity);
};

/* ------------------------------------------------------------------ entry -- */

/* What the host tells a plugin in init. */
typedef struct rawfx_host_info {
    uint32_t struct_size;
    rawfx_abi_version abi;   /* the host's ABI version */
    const char *name;        /* "rawfx" */
    const char *version;     /* the host's version string */
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

    /* [loader] Called once before the host unloads the plugin, after every
     * instance has been destroyed. */
    void (*deinit)(void);

    /* [loader, or any thread after init] The filters this file provides. */
    uint32_t (*filter_count)(void);
    const rawfx_filter_descriptor *(*filter_descriptor)(uint32_t index);
} rawfx_plugin_entry;

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

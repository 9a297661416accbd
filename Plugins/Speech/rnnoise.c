/*
 * `rnnoise`: RNNoise (Xiph, BSD) speech denoising, from librnnoise.so in the
 * PyPI wheel pyrnnoise, opened with dlopen at create. The model: 480-frame
 * hops at 48 kHz, float samples on the 16-bit scale, in and out of
 * rnnoise_process_frame(state, out, in), which returns the hop's speech
 * probability. It allocates nothing per hop and rnnoise_init clears a state
 * in place (both counted with a malloc interposer), so it runs on the process
 * thread: about 1.5-3 ms per 10 ms hop and channel on this kind of machine.
 *
 * Delay: 960 frames at 48 kHz (one hop of overlap-add and one of lookahead),
 * measured by cross-correlating clean speech with the output of speech in
 * noise; stage.c drops it and reports the stage's latency.
 *
 * The mix is gated by RNNoise's own VAD: in hops it hears as speech the output
 * is `mix` denoised plus 1 - mix of the input (delayed to match, so the two add
 * in phase); elsewhere it is fully denoised, so the input's noise never comes
 * back in the pauses. The gain ramps over a hop to avoid steps.
 */
#define _GNU_SOURCE
#include "stage.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HOP 480
#define DELAY 960 /* two hops */
#define RNNOISE_INSTALL "scripts/bootstrap.sh installs it, or run: pip install --no-deps --target " \
    SPEECH_DEFAULT_DIR " pyrnnoise (the PyPI wheel with librnnoise.so)"

enum { P_MIX, P_VAD_THRESHOLD, P_COUNT };

static const rawfx_param_descriptor rnnoise_params[P_COUNT] = {
    [P_MIX] = RAWFX_FLOAT_PARAM(
        "mix", "Denoised share in speech",
        "In hops RNNoise hears as speech (see vad_threshold), the share of the denoised signal in the output; "
        "the rest is the unprocessed input, aligned. 1 is fully denoised; 0.7 keeps some of the voice's "
        "natural texture. Non-speech hops are always fully denoised.",
        "", 0, 1.0, 0.0, 1.0),
    [P_VAD_THRESHOLD] = RAWFX_FLOAT_PARAM(
        "vad_threshold", "Speech probability threshold",
        "RNNoise's speech probability (0-1) from which a hop counts as speech for the mix. Lower it to keep "
        "more of the input around soft speech; raise it if noise bursts count as speech.",
        "", 0, 0.5, 0.0, 1.0),
};

typedef void *(*rnnoise_create_fn)(void *model);
typedef void (*rnnoise_destroy_fn)(void *state);
typedef int (*rnnoise_init_fn)(void *state, void *model);
typedef float (*rnnoise_process_fn)(void *state, float *out, const float *in);
typedef int (*rnnoise_frame_size_fn)(void);

static const char *const rnnoise_symbols[] = {"rnnoise_create", "rnnoise_destroy", "rnnoise_init",
                                              "rnnoise_process_frame", "rnnoise_get_frame_size"};

typedef struct rnnoise_instance {
    speech_stage stage; /* first */
    rnnoise_create_fn create;
    rnnoise_destroy_fn destroy;
    rnnoise_init_fn init;
    rnnoise_process_fn process;
    _Atomic float mix, vad_threshold;
} rnnoise_instance;

/* One channel: the model state and the input of the last two hops with their
 * speech probabilities, which line up with the hop the model returns. */
typedef struct channel_state {
    void *model;
    float dry[2][HOP];
    float probability[2];
    uint32_t next;  /* the slot holding the hop from two calls ago */
    float gain;     /* denoised share at the end of the last hop */
} channel_state;

static rnnoise_instance *instance_of(const rawfx_filter *filter)
{
    return filter ? (rnnoise_instance *)filter->filter_data : NULL;
}

static void *create_state(speech_stage *stage)
{
    rnnoise_instance *r = (rnnoise_instance *)stage;
    channel_state *ch = (channel_state *)calloc(1, sizeof *ch);
    if (ch == NULL) {
        rawfx_fail(&stage->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for a channel state");
        return NULL;
    }
    ch->model = r->create(NULL);
    if (ch->model == NULL) {
        free(ch);
        rawfx_fail(&stage->base, RAWFX_ERR_OUT_OF_MEMORY, "rnnoise_create failed");
        return NULL;
    }
    ch->gain = 1.0f;
    return ch;
}

static void destroy_state(speech_stage *stage, void *state)
{
    channel_state *ch = (channel_state *)state;
    ((rnnoise_instance *)stage)->destroy(ch->model);
    free(ch);
}

static void reset_state(speech_stage *stage, void *state)
{
    channel_state *ch = (channel_state *)state;
    ((rnnoise_instance *)stage)->init(ch->model, NULL); /* clears in place, no allocation */
    memset(ch->dry, 0, sizeof ch->dry);
    ch->probability[0] = ch->probability[1] = 0.0f;
    ch->next = 0;
    ch->gain = 1.0f;
}

static void snapshot(speech_stage *stage, float *params)
{
    rnnoise_instance *r = (rnnoise_instance *)stage;
    params[P_MIX] = atomic_load_explicit(&r->mix, memory_order_relaxed);
    params[P_VAD_THRESHOLD] = atomic_load_explicit(&r->vad_threshold, memory_order_relaxed);
}

static void run(speech_stage *stage, void *state, const float *params, float *in, float *out)
{
    rnnoise_instance *r = (rnnoise_instance *)stage;
    channel_state *ch = (channel_state *)state;
    const float p = r->process(ch->model, out, in);
    const float mix = params[P_MIX], threshold = params[P_VAD_THRESHOLD];
    float *dry = ch->dry[ch->next];
    const float target = ch->probability[ch->next] >= threshold ? mix : 1.0f;
    if (target < 1.0f || ch->gain < 1.0f) {
        const float step = (target - ch->gain) / HOP;
        for (uint32_t i = 0; i < HOP; i++) {
            const float g = ch->gain + step * (float)(i + 1);
            out[i] = g * out[i] + (1.0f - g) * dry[i];
        }
    }
    ch->gain = target;
    memcpy(dry, in, sizeof ch->dry[0]); /* rnnoise_process_frame does not write its input */
    ch->probability[ch->next] = p;
    ch->next ^= 1;
}

static const speech_model_ops rnnoise_ops = {
    .hop = HOP, .delay = DELAY, .scale = 1.0f, .on_worker = 0,
    .create_state = create_state, .destroy_state = destroy_state, .reset_state = reset_state,
    .snapshot = snapshot, .run = run,
};

static void rnnoise_destroy_instance(const rawfx_filter *filter)
{
    rnnoise_instance *r = instance_of(filter);
    if (r == NULL)
        return;
    speech_stage_release(&r->stage);
    rawfx_instance_free(&r->stage.base);
}

static rawfx_status rnnoise_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    rnnoise_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_status status = rawfx_check_param(&r->stage.base, index, value);
    if (status != RAWFX_OK)
        return status;
    const float v = (float)value->float_value;
    atomic_store_explicit(index == P_MIX ? &r->mix : &r->vad_threshold, v, memory_order_relaxed);
    return RAWFX_OK;
}

static rawfx_status rnnoise_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    rnnoise_instance *r = instance_of(filter);
    return r ? speech_stage_configure(&r->stage, input, result) : RAWFX_ERR_INVALID_ARGUMENT;
}

static rawfx_status rnnoise_process(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    rnnoise_instance *r = instance_of(filter);
    return r ? speech_stage_process(&r->stage, in, out) : RAWFX_ERR_INVALID_ARGUMENT;
}

static void rnnoise_reset(const rawfx_filter *filter)
{
    rnnoise_instance *r = instance_of(filter);
    if (r != NULL)
        speech_stage_reset(&r->stage);
}

static const rawfx_filter rnnoise_functions = RAWFX_FILTER_FUNCTIONS(
    rnnoise_destroy_instance, rnnoise_set_param, rnnoise_configure, NULL, rnnoise_process, rnnoise_reset, NULL, NULL);

static const rawfx_filter *rnnoise_create_instance(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                                   char *error, size_t error_capacity)
{
    /* The wheel's librnnoise.so uses libm (sincos) without naming it as a
     * dependency: make libm's symbols global before loading it. */
    dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
    void *fns[5];
    char path[PATH_MAX];
    if (!speech_load_library("rnnoise", "RAWFX_RNNOISE_LIBRARY", "pyrnnoise/librnnoise.so", rnnoise_symbols, fns, 5,
                             RNNOISE_INSTALL, path, error, error_capacity))
        return NULL;
    const int frame = ((rnnoise_frame_size_fn)fns[4])();
    if (frame != HOP) {
        rawfx_format_message(error, error_capacity, "rnnoise: %s works on %d-frame hops; this filter was written "
                             "for RNNoise's %d. Install the supported wheel: %s", path, frame, HOP, RNNOISE_INSTALL);
        return NULL;
    }
    rnnoise_instance *r = (rnnoise_instance *)rawfx_instance_new(sizeof *r, descriptor, host, &rnnoise_functions,
                                                                 error, error_capacity);
    if (r == NULL)
        return NULL;
    speech_stage_init(&r->stage, &rnnoise_ops);
    r->create = (rnnoise_create_fn)fns[0];
    r->destroy = (rnnoise_destroy_fn)fns[1];
    r->init = (rnnoise_init_fn)fns[2];
    r->process = (rnnoise_process_fn)fns[3];
    atomic_init(&r->mix, 1.0f);
    atomic_init(&r->vad_threshold, 0.5f);
    return rawfx_instance_ready(&r->stage.base, error, error_capacity);
}

RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speech_rnnoise_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "rnnoise", "Denoise (RNNoise)", "1.0.0",
    "Speech noise suppression by RNNoise (librnnoise.so from the PyPI wheel pyrnnoise, loaded at run time), "
    "with a mix gated by its voice activity. Any rate from 8 to 192 kHz (resampled to 48 kHz inside), 1-8 "
    "channels with one model state each, 10 ms blocks; latency 20 ms at 48 kHz, 32-41 ms at other rates, "
    "reported exactly.",
    RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, rnnoise_params, rnnoise_create_instance);

/*
 * `denoise`: speech noise suppression over the SpeexDSP preprocessor
 * (speex_preprocess_*), with optional AGC, voice-activity flags and the
 * dereverberation switch. Audio, in place.
 *
 * Blocks: SpeexDSP works on fixed frames; we ask the host for 10 ms
 * (sample_rate / 100 frames) and refuse any other count. Rates 8000..192000 Hz
 * that are multiples of 100 Hz (so 10 ms is a whole number of frames).
 *
 * Channels: SpeexDSP's preprocessor is mono. Each channel gets its own
 * SpeexPreprocessState; a multi-channel block is de-interleaved into scratch
 * buffers (allocated in configure), run channel by channel, and re-interleaved.
 * Mono runs directly on the host's buffer.
 *
 * Latency: speex_preprocess_run is a weighted overlap-add over a 2-block
 * window; the block it returns is the previous block's input. Measured by
 * cross-correlation (white noise in, level 0) at 8, 16, 32, 44.1, 48 and
 * 96 kHz: exactly one block, sample_rate / 100 frames (10 ms). We report that.
 *
 * Reset: SpeexDSP 1.2 has no call that clears a preprocessor, so reset()
 * re-creates the states (destroy + init): it allocates. It is a no-op when
 * nothing was processed since configure or the last reset. Hosts should call
 * it from the control thread when they can.
 *
 * VAD: SpeexDSP's VAD only changes what speex_preprocess_run returns, never the
 * audio. Enabling it (SPEEX_PREPROCESS_SET_VAD) makes SpeexDSP print a warning on
 * stderr, so `vad` takes effect at configure (RECONFIGURE), never on the process
 * thread. The flag of the block a call returns describes SpeexDSP's analysis
 * window: that block and the 10 ms after it.
 *
 * Voice activity extension "rawfx.voice-activity/1": get_extension returns a
 * `const rfx_voice_activity_v1 *` (layout below) that lives as long as the
 * instance. The counters restart at configure (not at reset). Read it on the
 * control thread, between process calls, like any control call; the process
 * thread updates the fields with relaxed atomic stores, so a monitor that reads
 * them concurrently with relaxed atomic loads sees whole (never torn) values.
 */
#include "rawfx.h"

#include <speex/speex_preprocess.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RFX_HIDDEN __attribute__((visibility("hidden")))

/* Shared helpers, defined in speex.c. */
RFX_HIDDEN void rfx_speex_format(char *buffer, size_t capacity, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
RFX_HIDDEN int rfx_speex_frame_is_complete(const rawfx_audio_frame *frame);
RFX_HIDDEN rawfx_status rfx_speex_check_audio_input(const char *filter_id, const rawfx_format *input,
                                                    char *error, size_t capacity);
RFX_HIDDEN rawfx_status rfx_speex_check_negotiation(const char *filter_id, const rawfx_negotiation *result,
                                                    char *error, size_t capacity);
RFX_HIDDEN void rfx_speex_copy_metadata(const rawfx_audio_frame *in, rawfx_audio_frame *out);

/* ------------------------------------------------- the extension's struct -- */

#define RFX_VOICE_ACTIVITY_EXTENSION_ID "rawfx.voice-activity/1"

/* What get_extension("rawfx.voice-activity/1") points to. 32 bytes on every
 * platform RawFX targets (natural alignment, no padding):
 *
 *   offset size field
 *        0    4 struct_size        sizeof(rfx_voice_activity_v1) = 32
 *        4    4 vad_enabled        1 if the instance was configured with vad=true
 *        8    8 voice_blocks       blocks flagged RAWFX_AUDIO_FLAG_VOICE since configure
 *       16    8 total_blocks       blocks processed since configure
 *       24    4 last_block_voice   1 if the most recent block was flagged
 *       28    4 speech_probability SpeexDSP's speech probability of the most recent
 *                                  block, percent 0..100, the highest over channels
 *                                  (SPEEX_PREPROCESS_GET_PROB); computed even with vad off
 *
 * Fields may be appended (struct_size grows); existing ones never move. */
typedef struct rfx_voice_activity_v1 {
    uint32_t struct_size;
    uint32_t vad_enabled;
    uint64_t voice_blocks;
    uint64_t total_blocks;
    uint32_t last_block_voice;
    uint32_t speech_probability;
} rfx_voice_activity_v1;

_Static_assert(sizeof(rfx_voice_activity_v1) == 32, "rawfx.voice-activity/1 layout is 32 bytes");
_Static_assert(offsetof(rfx_voice_activity_v1, voice_blocks) == 8, "voice_blocks at 8");
_Static_assert(offsetof(rfx_voice_activity_v1, speech_probability) == 28, "speech_probability at 28");

#define RFX_STORE_RELAXED(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

/* -------------------------------------------------------------- parameters -- */

enum { P_LEVEL, P_AGC, P_AGC_LEVEL, P_VAD, P_VAD_START, P_VAD_CONTINUE, P_DEREVERB, P_COUNT };

#define DEFAULT_LEVEL (-30)
#define DEFAULT_AGC_LEVEL 8000
/* VAD thresholds on SpeexDSP's speech probability, percent. SpeexDSP's own
 * defaults are 35 and 20, but in steady noise its probability settles near 25 %,
 * above the continue threshold, so once speech has been seen the flag rarely
 * drops: on RawFXMedia's TestAudio.speech with white noise it flagged 98-100 % of
 * the pauses at 5 and 15 dB SNR (45-62 % at 30 dB). With 70/50 the pauses were
 * flagged 23-31 % (mostly the ~150 ms hangover after each utterance) and the
 * voiced blocks 99-100 %, at 16 and 48 kHz, 5 to 30 dB SNR. */
#define DEFAULT_VAD_START 70
#define DEFAULT_VAD_CONTINUE 50

static const rawfx_param_descriptor denoise_params[P_COUNT] = {
    [P_LEVEL] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "level",
        .name = "Noise suppression",
        .help = "How far noise may be pulled down, in dB (SpeexDSP's gain floor for noise-only bands). "
                "-30 suits speech; -15 keeps more room tone; -45 to -60 is aggressive and can sound watery. "
                "SpeexDSP treats the value as an attenuation and ignores its sign: write it negative, as "
                "SpeexDSP does. 0 means a 0 dB floor (almost no suppression), not a bypass.",
        .unit = "dB",
        .type = RAWFX_PARAM_INT,
        .flags = 0,
        .default_value = DEFAULT_LEVEL,
        .min_value = -60,
        .max_value = 0,
    },
    [P_AGC] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "agc",
        .name = "Automatic gain control",
        .help = "Let SpeexDSP steer the loudness of speech toward agc_level (at most +12 dB/s up, "
                "-40 dB/s down, 30 dB of gain), and limit peaks to about 28000. Good for a quiet or "
                "distant microphone; leave it off for music and for mixed session audio.",
        .unit = "",
        .type = RAWFX_PARAM_BOOL,
        .flags = 0,
        .default_value = 0,
        .min_value = 0,
        .max_value = 1,
    },
    [P_AGC_LEVEL] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "agc_level",
        .name = "AGC target level",
        .help = "The loudness AGC aims for, as a linear 16-bit amplitude on SpeexDSP's scale "
                "(SPEEX_PREPROCESS_SET_AGC_LEVEL): 8000 is about -12 dBFS, 4000 about -18 dBFS, "
                "32768 full scale. Used only when agc is on.",
        .unit = "",
        .type = RAWFX_PARAM_INT,
        .flags = 0,
        .default_value = DEFAULT_AGC_LEVEL,
        .min_value = 1,
        .max_value = 32768,
    },
    [P_VAD] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "vad",
        .name = "Voice activity flags",
        .help = "Mark each 10 ms block in which SpeexDSP hears speech with the VOICE flag "
                "(RAWFX_AUDIO_FLAG_VOICE; any channel counts) and count such blocks in the "
                "rawfx.voice-activity/1 extension. The audio is not changed. Takes effect at the next "
                "configure (SpeexDSP prints a one-line warning on stderr when its VAD is enabled).",
        .unit = "",
        .type = RAWFX_PARAM_BOOL,
        .flags = RAWFX_PARAM_FLAG_RECONFIGURE,
        .default_value = 0,
        .min_value = 0,
        .max_value = 1,
    },
    [P_VAD_START] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "vad_start",
        .name = "VAD start threshold",
        .help = "Speech probability (percent) above which a block starts a run of VOICE flags "
                "(SPEEX_PREPROCESS_SET_PROB_START). Lower it to catch softer speech, raise it if noise "
                "gets flagged. The default 70 replaces SpeexDSP's 35, which flags steady noise as speech.",
        .unit = "%",
        .type = RAWFX_PARAM_INT,
        .flags = 0,
        .default_value = DEFAULT_VAD_START,
        .min_value = 0,
        .max_value = 100,
    },
    [P_VAD_CONTINUE] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "vad_continue",
        .name = "VAD continue threshold",
        .help = "Speech probability (percent) above which a block right after a VOICE block stays flagged "
                "(SPEEX_PREPROCESS_SET_PROB_CONTINUE): the hangover that keeps the ends of words. Keep it "
                "at or below vad_start. The default 50 replaces SpeexDSP's 20, which is below the "
                "probability SpeexDSP reports for steady noise.",
        .unit = "%",
        .type = RAWFX_PARAM_INT,
        .flags = 0,
        .default_value = DEFAULT_VAD_CONTINUE,
        .min_value = 0,
        .max_value = 100,
    },
    [P_DEREVERB] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "dereverb",
        .name = "Dereverberation",
        .help = "Ask SpeexDSP to treat late room reverberation as noise (SPEEX_PREPROCESS_SET_DEREVERB). "
                "Note: SpeexDSP 1.2.x accepts the switch but its reverberation model is disabled upstream, "
                "so with those versions the output is identical with it on or off.",
        .unit = "",
        .type = RAWFX_PARAM_BOOL,
        .flags = 0,
        .default_value = 0,
        .min_value = 0,
        .max_value = 1,
    },
};

/* ---------------------------------------------------------------- instance -- */

#define MAX_CHANNELS 8

typedef struct denoise_instance {
    rawfx_filter filter;          /* handed to the host; filter_data points back here */
    char error[320];

    /* parameters (live except vad, which is read at configure) */
    int32_t level;
    int32_t agc;
    int32_t agc_level;
    int32_t vad;
    int32_t vad_start;
    int32_t vad_continue;
    int32_t dereverb;

    /* negotiated */
    int configured;
    int vad_active;               /* vad as configured (SpeexDSP VAD enabled on the states) */
    uint32_t sample_rate;
    uint32_t channels;
    uint32_t block_frames;
    SpeexPreprocessState *states[MAX_CHANNELS];
    int16_t *scratch;             /* channels * block_frames, planar, multi-channel only */
    int dirty;                    /* processed since configure or the last reset */

    rfx_voice_activity_v1 activity;
} denoise_instance;

static denoise_instance *instance_of(const rawfx_filter *filter)
{
    return filter ? (denoise_instance *)filter->filter_data : NULL;
}

/* Applies the live parameters to one state. Returns 0, or the failing request. */
static int apply_live_settings(denoise_instance *d, SpeexPreprocessState *st)
{
    spx_int32_t denoise_on = 1;
    spx_int32_t level = d->level; /* negative dB; SpeexDSP stores -|level| */
    spx_int32_t agc = d->agc ? 1 : 0;
    float agc_level = (float)d->agc_level;
    spx_int32_t dereverb = d->dereverb ? 1 : 0;
    spx_int32_t vad_start = d->vad_start, vad_continue = d->vad_continue; /* SpeexDSP clamps in place */
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_DENOISE, &denoise_on) != 0)
        return SPEEX_PREPROCESS_SET_DENOISE;
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level) != 0)
        return SPEEX_PREPROCESS_SET_NOISE_SUPPRESS;
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC_LEVEL, &agc_level) != 0 && d->agc)
        return SPEEX_PREPROCESS_SET_AGC_LEVEL;
    /* A fixed-point SpeexDSP has no AGC: only a failure to switch it on matters. */
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC, &agc) != 0 && d->agc)
        return SPEEX_PREPROCESS_SET_AGC;
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_START, &vad_start) != 0)
        return SPEEX_PREPROCESS_SET_PROB_START;
    if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_PROB_CONTINUE, &vad_continue) != 0)
        return SPEEX_PREPROCESS_SET_PROB_CONTINUE;
    /* Only call SET_DEREVERB when it changes: it also clears the reverb estimate. */
    spx_int32_t current = 0;
    speex_preprocess_ctl(st, SPEEX_PREPROCESS_GET_DEREVERB, &current);
    if (current != dereverb && speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_DEREVERB, &dereverb) != 0)
        return SPEEX_PREPROCESS_SET_DEREVERB;
    return 0;
}

/* Creates one fully configured state (control thread: allocates). */
static SpeexPreprocessState *new_state(denoise_instance *d, int *failed_request)
{
    SpeexPreprocessState *st = speex_preprocess_state_init((int)d->block_frames, (int)d->sample_rate);
    if (st == NULL)
        return NULL;
    int request = apply_live_settings(d, st);
    if (request == 0 && d->vad_active) {
        spx_int32_t on = 1;
        if (speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_VAD, &on) != 0)
            request = SPEEX_PREPROCESS_SET_VAD;
    }
    if (request != 0) {
        if (failed_request)
            *failed_request = request;
        speex_preprocess_state_destroy(st);
        return NULL;
    }
    return st;
}

static void release_states(denoise_instance *d)
{
    for (uint32_t c = 0; c < MAX_CHANNELS; c++) {
        if (d->states[c] != NULL) {
            speex_preprocess_state_destroy(d->states[c]);
            d->states[c] = NULL;
        }
    }
    free(d->scratch);
    d->scratch = NULL;
    d->configured = 0;
}

static void clear_activity(denoise_instance *d)
{
    d->activity.struct_size = sizeof(rfx_voice_activity_v1);
    RFX_STORE_RELAXED(d->activity.vad_enabled, (uint32_t)(d->configured && d->vad_active));
    RFX_STORE_RELAXED(d->activity.voice_blocks, (uint64_t)0);
    RFX_STORE_RELAXED(d->activity.total_blocks, (uint64_t)0);
    RFX_STORE_RELAXED(d->activity.last_block_voice, (uint32_t)0);
    RFX_STORE_RELAXED(d->activity.speech_probability, (uint32_t)0);
}

/* --------------------------------------------------------------- callbacks -- */

static void denoise_destroy(const rawfx_filter *filter)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return;
    release_states(d);
    free(d);
}

static rawfx_status denoise_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    d->error[0] = '\0';
    if (value == NULL || index >= P_COUNT) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: no parameter at index %u (it has %d: level, agc, "
                         "agc_level, vad, vad_start, vad_continue, dereverb)", (unsigned)index, P_COUNT);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    const rawfx_param_descriptor *p = &denoise_params[index];
    if (value->type != p->type) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: %s is %s, the value given has another type",
                         p->id, p->type == RAWFX_PARAM_BOOL ? "a bool" : "an integer");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    int64_t v = value->int_value;
    if (v < (int64_t)p->min_value || v > (int64_t)p->max_value) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: %s=%lld is out of range; accepted: %lld to %lld%s%s",
                         p->id, (long long)v, (long long)p->min_value, (long long)p->max_value,
                         p->unit[0] ? " " : "", p->unit);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    switch (index) {
    case P_LEVEL: d->level = (int32_t)v; break;
    case P_AGC: d->agc = (int32_t)v; break;
    case P_AGC_LEVEL: d->agc_level = (int32_t)v; break;
    case P_VAD: d->vad = (int32_t)v; return RAWFX_OK; /* RECONFIGURE: read at configure */
    case P_VAD_START: d->vad_start = (int32_t)v; break;
    case P_VAD_CONTINUE: d->vad_continue = (int32_t)v; break;
    case P_DEREVERB: d->dereverb = (int32_t)v; break;
    }
    /* Live parameters: speex_preprocess_ctl only stores numbers (no allocation,
     * no I/O), so this is safe on the process thread between two frames. */
    if (d->configured) {
        for (uint32_t c = 0; c < d->channels; c++) {
            int request = apply_live_settings(d, d->states[c]);
            if (request != 0) {
                rfx_speex_format(d->error, sizeof d->error, "denoise: SpeexDSP refused %s (preprocess request %d); "
                                 "this SpeexDSP build may be fixed-point, which has no AGC", p->id, request);
                return RAWFX_ERR_UNSUPPORTED;
            }
        }
    }
    return RAWFX_OK;
}

static rawfx_status denoise_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    d->error[0] = '\0';
    release_states(d);
    clear_activity(d);

    rawfx_status status = rfx_speex_check_audio_input("denoise", input, d->error, sizeof d->error);
    if (status == RAWFX_OK)
        status = rfx_speex_check_negotiation("denoise", result, d->error, sizeof d->error);
    if (status != RAWFX_OK)
        return status;

    uint32_t rate = input->audio.sample_rate;
    if (rate < 8000 || rate > 192000 || rate % 100 != 0) {
        rfx_speex_format(d->error, sizeof d->error,
                         "denoise: a sample rate of %u Hz is not supported; accepted: 8000 to 192000 Hz in "
                         "multiples of 100 Hz (SpeexDSP runs on 10 ms blocks, which must be a whole number of "
                         "frames), e.g. 16000, 32000, 44100, 48000. Put resample=rate=48000 before denoise.",
                         (unsigned)rate);
        return RAWFX_ERR_UNSUPPORTED;
    }

    d->sample_rate = rate;
    d->channels = input->audio.channels;
    d->block_frames = rate / 100;
    d->vad_active = d->vad != 0;

    if (d->channels > 1) {
        d->scratch = (int16_t *)calloc((size_t)d->channels * d->block_frames, sizeof(int16_t));
        if (d->scratch == NULL) {
            rfx_speex_format(d->error, sizeof d->error, "denoise: out of memory for %u channel buffers",
                             (unsigned)d->channels);
            return RAWFX_ERR_OUT_OF_MEMORY;
        }
    }
    for (uint32_t c = 0; c < d->channels; c++) {
        int request = 0;
        d->states[c] = new_state(d, &request);
        if (d->states[c] == NULL) {
            if (request != 0) {
                rfx_speex_format(d->error, sizeof d->error, "denoise: SpeexDSP refused preprocess request %d "
                                 "(a fixed-point SpeexDSP has no AGC: set agc=false)", request);
                release_states(d);
                return RAWFX_ERR_UNSUPPORTED;
            }
            rfx_speex_format(d->error, sizeof d->error, "denoise: speex_preprocess_state_init(%u, %u) failed",
                             (unsigned)d->block_frames, (unsigned)rate);
            release_states(d);
            return RAWFX_ERR_OUT_OF_MEMORY;
        }
    }

    d->configured = 1;
    d->dirty = 0;
    clear_activity(d);

    /* output format = input format (the host prefilled it) */
    result->block_frames = d->block_frames;
    result->max_output_frames = 0;
    result->latency = d->block_frames; /* one block: see the header comment */
    return RAWFX_OK;
}

static rawfx_status denoise_process(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    d->error[0] = '\0';
    if (!d->configured) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: process before a successful configure");
        return RAWFX_ERR_STATE;
    }
    if (!rfx_speex_frame_is_complete(in) || !rfx_speex_frame_is_complete(out) || in->samples == NULL
        || out->samples == NULL) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: incomplete audio frame (NULL samples or short struct_size)");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (in->sample_rate != d->sample_rate || in->channels != d->channels) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: block is %u Hz x %u channels but the filter was "
                         "configured for %u Hz x %u; reconfigure on a format change",
                         (unsigned)in->sample_rate, (unsigned)in->channels,
                         (unsigned)d->sample_rate, (unsigned)d->channels);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (in->frame_count != d->block_frames) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: got %u frames; every block must be exactly %u "
                         "frames (10 ms at %u Hz), as negotiated in block_frames",
                         (unsigned)in->frame_count, (unsigned)d->block_frames, (unsigned)d->sample_rate);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (out != in && out->frame_count < d->block_frames) {
        rfx_speex_format(d->error, sizeof d->error, "denoise: output buffer holds %u frames, needs %u",
                         (unsigned)out->frame_count, (unsigned)d->block_frames);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }

    const uint32_t n = d->block_frames, channels = d->channels;
    int voice = 0;
    uint32_t probability = 0;
    if (channels == 1) {
        if (out->samples != in->samples)
            memcpy(out->samples, in->samples, (size_t)n * sizeof(int16_t));
        voice = speex_preprocess_run(d->states[0], out->samples) == 1;
        spx_int32_t p = 0;
        speex_preprocess_ctl(d->states[0], SPEEX_PREPROCESS_GET_PROB, &p);
        probability = p > 0 ? (uint32_t)p : 0;
    } else {
        const int16_t *src = in->samples;
        for (uint32_t c = 0; c < channels; c++) {
            int16_t *plane = d->scratch + (size_t)c * n;
            for (uint32_t i = 0; i < n; i++)
                plane[i] = src[(size_t)i * channels + c];
        }
        for (uint32_t c = 0; c < channels; c++) {
            if (speex_preprocess_run(d->states[c], d->scratch + (size_t)c * n) == 1)
                voice = 1;
            spx_int32_t p = 0;
            speex_preprocess_ctl(d->states[c], SPEEX_PREPROCESS_GET_PROB, &p);
            if (p > 0 && (uint32_t)p > probability)
                probability = (uint32_t)p;
        }
        int16_t *dst = out->samples;
        for (uint32_t c = 0; c < channels; c++) {
            const int16_t *plane = d->scratch + (size_t)c * n;
            for (uint32_t i = 0; i < n; i++)
                dst[(size_t)i * channels + c] = plane[i];
        }
    }
    d->dirty = 1;

    /* SpeexDSP returns 1 on every block when its VAD is off: only trust it when on. */
    voice = voice && d->vad_active;

    if (out != in) {
        rfx_speex_copy_metadata(in, out);
        out->frame_count = n;
        out->sample_rate = d->sample_rate;
        out->channels = channels;
    }
    if (voice)
        out->flags |= RAWFX_AUDIO_FLAG_VOICE;

    RFX_STORE_RELAXED(d->activity.total_blocks, d->activity.total_blocks + 1);
    if (voice)
        RFX_STORE_RELAXED(d->activity.voice_blocks, d->activity.voice_blocks + 1);
    RFX_STORE_RELAXED(d->activity.last_block_voice, (uint32_t)voice);
    RFX_STORE_RELAXED(d->activity.speech_probability, probability);
    return RAWFX_OK;
}

static void denoise_reset(const rawfx_filter *filter)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL || !d->configured || !d->dirty)
        return;
    /* SpeexDSP has no reset: make fresh states. New before old, so that a failed
     * allocation leaves a working (if not forgetful) filter. */
    for (uint32_t c = 0; c < d->channels; c++) {
        SpeexPreprocessState *fresh = new_state(d, NULL);
        if (fresh == NULL) {
            rfx_speex_format(d->error, sizeof d->error, "denoise: reset could not re-create the SpeexDSP state of "
                             "channel %u; it keeps its history", (unsigned)c);
            continue;
        }
        speex_preprocess_state_destroy(d->states[c]);
        d->states[c] = fresh;
    }
    d->dirty = 0;
}

static const char *denoise_get_error(const rawfx_filter *filter)
{
    denoise_instance *d = instance_of(filter);
    return d ? d->error : "";
}

static const void *denoise_get_extension(const rawfx_filter *filter, const char *id)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL || id == NULL)
        return NULL;
    if (strcmp(id, RFX_VOICE_ACTIVITY_EXTENSION_ID) == 0)
        return &d->activity;
    return NULL;
}

static const rawfx_filter *denoise_create(const rawfx_filter_descriptor *descriptor, char *error, size_t error_capacity);

RFX_HIDDEN const rawfx_filter_descriptor rfx_speex_denoise_descriptor = {
    .struct_size = sizeof(rawfx_filter_descriptor),
    .id = "denoise",
    .name = "Denoise (SpeexDSP)",
    .version = "1.0.0",
    .description = "Speech noise suppression by the SpeexDSP preprocessor, with optional AGC and voice-activity "
                   "flags; one state per channel (1-8), 10 ms blocks, 8-192 kHz in 100 Hz steps, 10 ms latency. "
                   "reset() re-creates the SpeexDSP states and so allocates: prefer calling it off the audio thread.",
    .media_kind = RAWFX_MEDIA_AUDIO,
    .processing = RAWFX_PROCESS_IN_PLACE,
    .params = denoise_params,
    .param_count = P_COUNT,
    .create = denoise_create,
};

static const rawfx_filter *denoise_create(const rawfx_filter_descriptor *descriptor, char *error, size_t error_capacity)
{
    if (descriptor != &rfx_speex_denoise_descriptor) {
        rfx_speex_format(error, error_capacity, "denoise: create called with another filter's descriptor");
        return NULL;
    }
    denoise_instance *d = (denoise_instance *)calloc(1, sizeof *d);
    if (d == NULL) {
        rfx_speex_format(error, error_capacity, "denoise: out of memory");
        return NULL;
    }
    d->filter.struct_size = sizeof(rawfx_filter);
    d->filter.descriptor = descriptor;
    d->filter.filter_data = d;
    d->filter.destroy = denoise_destroy;
    d->filter.set_param = denoise_set_param;
    d->filter.configure = denoise_configure;
    d->filter.process_video = NULL;
    d->filter.process_audio = denoise_process;
    d->filter.reset = denoise_reset;
    d->filter.get_error = denoise_get_error;
    d->filter.get_extension = denoise_get_extension;

    d->level = DEFAULT_LEVEL;
    d->agc = 0;
    d->agc_level = DEFAULT_AGC_LEVEL;
    d->vad = 0;
    d->vad_start = DEFAULT_VAD_START;
    d->vad_continue = DEFAULT_VAD_CONTINUE;
    d->dereverb = 0;
    clear_activity(d);
    return &d->filter;
}

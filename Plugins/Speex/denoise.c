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
 * Reset without allocating: SpeexDSP 1.2 has no call that clears a
 * preprocessor, so forgetting history means fresh states. configure makes two
 * sets of states: the live one and a spare that has never run. reset (real
 * time) swaps the spare in, applies the current parameters to it (ctl calls
 * only store numbers), retires the used set and asks the host for on_callback
 * (host->request_callback); on_callback (control thread, possibly while audio
 * runs) destroys the retired set and builds the next spare. The two sets change
 * hands through two atomic pointers, `spare` and `retired`: reset is the only
 * writer of a non-NULL `retired`, on_callback the only writer of a non-NULL
 * `spare`, so each handover is one exchange or store. If reset comes again
 * before on_callback has run, or there is no host (a 1.0 host, which never
 * calls on_callback: only the first reset after a configure has a spare), reset
 * falls back to re-creating the states in place, which allocates, and logs a
 * warning through the host. reset is a no-op when nothing was processed since
 * configure or the last reset.
 *
 * VAD: SpeexDSP's VAD only changes what speex_preprocess_run returns, never the
 * audio. Enabling it (SPEEX_PREPROCESS_SET_VAD) makes SpeexDSP print a warning on
 * stderr, so `vad` takes effect at configure (RECONFIGURE), and it is set when a
 * state is created (configure, on_callback), never on the process thread; the
 * warning is caught (set_vad_quietly) and becomes a debug line of the filter's log. The
 * flag of the block a call returns describes SpeexDSP's analysis window: that
 * block and the 10 ms after it.
 *
 * The other parameters apply between two blocks without a configure: set_param
 * passes them to speex_preprocess_ctl, which only stores numbers (counted: no
 * allocation, see SpeexPluginTests).
 *
 * Voice activity extension RAWFX_EXT_VOICE_ACTIVITY (rawfx/ext/voice_activity.h):
 * get_extension returns the instance's rawfx_voice_activity_v1, which lives as
 * long as the instance. speech_probability is SpeexDSP's
 * SPEEX_PREPROCESS_GET_PROB of the most recent block, the highest over channels,
 * computed even with vad off. The process thread writes the fields with relaxed
 * atomic stores.
 */
#define _GNU_SOURCE /* pipe2 */
#include "rawfx/plugin_helpers.h"
#include "rawfx/ext/voice_activity.h"

#include <speex/speex_preprocess.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    [P_LEVEL] = RAWFX_INT_PARAM(
        "level", "Noise suppression",
        "How far noise may be pulled down, in dB (SpeexDSP's gain floor for noise-only bands). "
        "-30 suits speech; -15 keeps more room tone; -45 to -60 is aggressive and can sound watery. "
        "SpeexDSP treats the value as an attenuation and ignores its sign: write it negative, as "
        "SpeexDSP does. 0 means a 0 dB floor (almost no suppression), not a bypass.",
        "dB", 0, DEFAULT_LEVEL, -60, 0),
    [P_AGC] = RAWFX_BOOL_PARAM(
        "agc", "Automatic gain control",
        "Let SpeexDSP steer the loudness of speech toward agc_level (at most +12 dB/s up, "
        "-40 dB/s down, 30 dB of gain), and limit peaks to about 28000. Good for a quiet or "
        "distant microphone; leave it off for music and for mixed session audio.",
        0, 0),
    [P_AGC_LEVEL] = RAWFX_INT_PARAM(
        "agc_level", "AGC target level",
        "The loudness AGC aims for, as a linear 16-bit amplitude on SpeexDSP's scale "
        "(SPEEX_PREPROCESS_SET_AGC_LEVEL): 8000 is about -12 dBFS, 4000 about -18 dBFS, "
        "32768 full scale. Used only when agc is on.",
        "", 0, DEFAULT_AGC_LEVEL, 1, 32768),
    [P_VAD] = RAWFX_BOOL_PARAM(
        "vad", "Voice activity flags",
        "Mark each 10 ms block in which SpeexDSP hears speech with the VOICE flag "
        "(RAWFX_AUDIO_FLAG_VOICE; any channel counts) and count such blocks in the "
        "rawfx.voice-activity/1 extension. The audio is not changed. Takes effect at the next "
        "configure (SpeexDSP prints a one-line warning on stderr when its VAD is enabled).",
        RAWFX_PARAM_FLAG_RECONFIGURE, 0),
    [P_VAD_START] = RAWFX_INT_PARAM(
        "vad_start", "VAD start threshold",
        "Speech probability (percent) above which a block starts a run of VOICE flags "
        "(SPEEX_PREPROCESS_SET_PROB_START). Lower it to catch softer speech, raise it if noise "
        "gets flagged. The default 70 replaces SpeexDSP's 35, which flags steady noise as speech.",
        "%", 0, DEFAULT_VAD_START, 0, 100),
    [P_VAD_CONTINUE] = RAWFX_INT_PARAM(
        "vad_continue", "VAD continue threshold",
        "Speech probability (percent) above which a block right after a VOICE block stays flagged "
        "(SPEEX_PREPROCESS_SET_PROB_CONTINUE): the hangover that keeps the ends of words. Keep it "
        "at or below vad_start. The default 50 replaces SpeexDSP's 20, which is below the "
        "probability SpeexDSP reports for steady noise.",
        "%", 0, DEFAULT_VAD_CONTINUE, 0, 100),
    [P_DEREVERB] = RAWFX_BOOL_PARAM(
        "dereverb", "Dereverberation",
        "Ask SpeexDSP to treat late room reverberation as noise (SPEEX_PREPROCESS_SET_DEREVERB). "
        "Note: SpeexDSP 1.2.x accepts the switch but its reverberation model is disabled upstream, "
        "so with those versions the output is identical with it on or off.",
        0, 0),
};

/* ---------------------------------------------------------------- instance -- */

#define MAX_CHANNELS 8

/* One SpeexDSP state per channel. */
typedef struct state_set {
    SpeexPreprocessState *channel[MAX_CHANNELS];
} state_set;

typedef struct denoise_instance {
    rawfx_instance_base base;     /* filter, host, error buffer */

    /* parameters (live except vad, which is read at configure) */
    int32_t level;
    int32_t agc;
    int32_t agc_level;
    int32_t vad;
    int32_t vad_start;
    int32_t vad_continue;
    int32_t dereverb;

    /* negotiated; fixed between two configures, so on_callback may read them */
    int configured;
    int vad_active;               /* vad as configured (SpeexDSP VAD enabled on the states) */
    uint32_t sample_rate;
    uint32_t channels;
    uint32_t block_frames;
    int16_t *scratch;             /* channels * block_frames, planar, multi-channel only */

    /* The two sets of states (see the header comment): `live` is the process
     * thread's; the other one is `spare` (fresh, ready for reset), `retired`
     * (used, waiting for on_callback), or in on_callback's hands. */
    state_set sets[2];
    state_set *live;
    _Atomic(state_set *) spare;
    _Atomic(state_set *) retired;
    int dirty;                    /* processed since configure or the last reset */

    rawfx_voice_activity_v1 activity;
} denoise_instance;

static denoise_instance *instance_of(const rawfx_filter *filter)
{
    return filter ? (denoise_instance *)filter->filter_data : NULL;
}

/* Applies the live parameters to one state. Returns 0, or the failing request.
 * Real-time: speex_preprocess_ctl only stores numbers for these requests. */
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

/* Applies the live parameters to every channel of a set. Returns 0 or the
 * failing request. */
static int apply_live_settings_to_set(denoise_instance *d, state_set *set)
{
    for (uint32_t c = 0; c < d->channels; c++) {
        int request = apply_live_settings(d, set->channel[c]);
        if (request != 0)
            return request;
    }
    return 0;
}

/* [control] One fresh state for the negotiated format, VAD as configured. It
 * reads only what configure fixed, so on_callback may call it while set_param
 * changes the live parameters on the process thread; those are applied when
 * the state goes live. Returns NULL when SpeexDSP fails. */
/* [control] SPEEX_PREPROCESS_SET_VAD, whose speex_warning ("warning: The VAD has been
 * replaced by a hack pending a complete rewrite") SpeexDSP writes to stderr itself: for the
 * call, stderr is a pipe, and what came through it is logged (debug) through the host, so
 * that the host's own output keeps its form (every line of the rawfx tool starts "rawfx:").
 * Another thread's stderr write in those microseconds would land in the pipe too. */
static int set_vad_quietly(const denoise_instance *d, SpeexPreprocessState *st)
{
    spx_int32_t on = 1;
    int fds[2] = { -1, -1 }, saved = -1;
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        if (saved >= 0 && dup2(fds[1], STDERR_FILENO) < 0) {
            close(saved);
            saved = -1;
        }
    }
    int status = speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_VAD, &on);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (fds[0] >= 0) {
        char text[512];
        ssize_t n = read(fds[0], text, sizeof text - 1);
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
            n--;
        if (n > 0) {
            text[n] = 0;
            rawfx_log(&d->base, RAWFX_LOG_DEBUG, "SpeexDSP: %s", text);
        }
        close(fds[0]);
        close(fds[1]);
    }
    return status;
}

static SpeexPreprocessState *new_state(const denoise_instance *d)
{
    SpeexPreprocessState *st = speex_preprocess_state_init((int)d->block_frames, (int)d->sample_rate);
    if (st != NULL && d->vad_active) {
        if (set_vad_quietly(d, st) != 0) {
            speex_preprocess_state_destroy(st);
            return NULL;
        }
    }
    return st;
}

static void destroy_set(state_set *set)
{
    for (uint32_t c = 0; c < MAX_CHANNELS; c++) {
        if (set->channel[c] != NULL) {
            speex_preprocess_state_destroy(set->channel[c]);
            set->channel[c] = NULL;
        }
    }
}

/* [control] Fills `set` with a fresh state per channel; on failure leaves it
 * empty and returns 0. */
static int fill_set(const denoise_instance *d, state_set *set)
{
    for (uint32_t c = 0; c < d->channels; c++) {
        set->channel[c] = new_state(d);
        if (set->channel[c] == NULL) {
            destroy_set(set);
            return 0;
        }
    }
    return 1;
}

static void release_states(denoise_instance *d)
{
    destroy_set(&d->sets[0]);
    destroy_set(&d->sets[1]);
    d->live = NULL;
    atomic_store_explicit(&d->spare, NULL, memory_order_relaxed);
    atomic_store_explicit(&d->retired, NULL, memory_order_relaxed);
    free(d->scratch);
    d->scratch = NULL;
    d->configured = 0;
}

static void clear_activity(denoise_instance *d)
{
    d->activity.struct_size = sizeof(rawfx_voice_activity_v1);
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
    rawfx_instance_free(&d->base);
}

static rawfx_status denoise_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_status status = rawfx_check_param(&d->base, index, value);
    if (status != RAWFX_OK)
        return status;
    const int32_t v = (int32_t)value->int_value;
    switch (index) {
    case P_LEVEL: d->level = v; break;
    case P_AGC: d->agc = v; break;
    case P_AGC_LEVEL: d->agc_level = v; break;
    case P_VAD: d->vad = v; return RAWFX_OK; /* RECONFIGURE: read at configure */
    case P_VAD_START: d->vad_start = v; break;
    case P_VAD_CONTINUE: d->vad_continue = v; break;
    case P_DEREVERB: d->dereverb = v; break;
    }
    /* Live parameters reach the live states now and the spare when it goes live. */
    if (d->configured) {
        int request = apply_live_settings_to_set(d, d->live);
        if (request != 0)
            return rawfx_fail(&d->base, RAWFX_ERR_UNSUPPORTED, "SpeexDSP refused %s (preprocess request %d); "
                              "this SpeexDSP build may be fixed-point, which has no AGC",
                              denoise_params[index].id, request);
    }
    return RAWFX_OK;
}

static rawfx_status denoise_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_clear_error(&d->base);
    release_states(d);
    clear_activity(d);

    rawfx_status status = rawfx_check_audio_input(&d->base, input, MAX_CHANNELS);
    if (status == RAWFX_OK)
        status = rawfx_check_negotiation(&d->base, result);
    if (status != RAWFX_OK)
        return status;

    uint32_t rate = input->audio.sample_rate;
    if (rate < 8000 || rate > 192000 || rate % 100 != 0)
        return rawfx_fail(&d->base, RAWFX_ERR_UNSUPPORTED,
                          "a sample rate of %u Hz is not supported; accepted: 8000 to 192000 Hz in "
                          "multiples of 100 Hz (SpeexDSP runs on 10 ms blocks, which must be a whole number of "
                          "frames), e.g. 16000, 32000, 44100, 48000. Put resample=rate=48000 before denoise.",
                          (unsigned)rate);

    d->sample_rate = rate;
    d->channels = input->audio.channels;
    d->block_frames = rate / 100;
    d->vad_active = d->vad != 0;

    if (d->channels > 1) {
        d->scratch = (int16_t *)calloc((size_t)d->channels * d->block_frames, sizeof(int16_t));
        if (d->scratch == NULL)
            return rawfx_fail(&d->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for %u channel buffers",
                              (unsigned)d->channels);
    }
    if (!fill_set(d, &d->sets[0]) || !fill_set(d, &d->sets[1])) {
        release_states(d);
        return rawfx_fail(&d->base, RAWFX_ERR_OUT_OF_MEMORY, "speex_preprocess_state_init(%u, %u) failed "
                          "for one of %u channels", (unsigned)d->block_frames, (unsigned)rate, (unsigned)d->channels);
    }
    int request = apply_live_settings_to_set(d, &d->sets[0]);
    if (request != 0) {
        release_states(d);
        return rawfx_fail(&d->base, RAWFX_ERR_UNSUPPORTED, "SpeexDSP refused preprocess request %d "
                          "(a fixed-point SpeexDSP has no AGC: set agc=false)", request);
    }
    d->live = &d->sets[0];
    atomic_store_explicit(&d->spare, &d->sets[1], memory_order_release);

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
    rawfx_clear_error(&d->base);
    if (!d->configured)
        return rawfx_fail(&d->base, RAWFX_ERR_STATE, "process before a successful configure");
    if (!rawfx_audio_frame_is_complete(in) || !rawfx_audio_frame_is_complete(out))
        return rawfx_fail(&d->base, RAWFX_ERR_INVALID_ARGUMENT, "incomplete audio frame (NULL samples or short struct_size)");
    if (in->sample_rate != d->sample_rate || in->channels != d->channels)
        return rawfx_fail(&d->base, RAWFX_ERR_INVALID_ARGUMENT, "block is %u Hz x %u channels but the filter was "
                          "configured for %u Hz x %u; reconfigure on a format change",
                          (unsigned)in->sample_rate, (unsigned)in->channels,
                          (unsigned)d->sample_rate, (unsigned)d->channels);
    if (in->frame_count != d->block_frames)
        return rawfx_fail(&d->base, RAWFX_ERR_INVALID_ARGUMENT, "got %u frames; every block must be exactly %u "
                          "frames (10 ms at %u Hz), as negotiated in block_frames",
                          (unsigned)in->frame_count, (unsigned)d->block_frames, (unsigned)d->sample_rate);
    if (out != in && out->frame_count < d->block_frames)
        return rawfx_fail(&d->base, RAWFX_ERR_INVALID_ARGUMENT, "output buffer holds %u frames, needs %u",
                          (unsigned)out->frame_count, (unsigned)d->block_frames);

    const uint32_t n = d->block_frames, channels = d->channels;
    SpeexPreprocessState *const *states = d->live->channel;
    int voice = 0;
    uint32_t probability = 0;
    if (channels == 1) {
        if (out->samples != in->samples)
            memcpy(out->samples, in->samples, (size_t)n * sizeof(int16_t));
        voice = speex_preprocess_run(states[0], out->samples) == 1;
        spx_int32_t p = 0;
        speex_preprocess_ctl(states[0], SPEEX_PREPROCESS_GET_PROB, &p);
        probability = p > 0 ? (uint32_t)p : 0;
    } else {
        const int16_t *src = in->samples;
        for (uint32_t c = 0; c < channels; c++) {
            int16_t *plane = d->scratch + (size_t)c * n;
            for (uint32_t i = 0; i < n; i++)
                plane[i] = src[(size_t)i * channels + c];
        }
        for (uint32_t c = 0; c < channels; c++) {
            if (speex_preprocess_run(states[c], d->scratch + (size_t)c * n) == 1)
                voice = 1;
            spx_int32_t p = 0;
            speex_preprocess_ctl(states[c], SPEEX_PREPROCESS_GET_PROB, &p);
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
        rawfx_copy_audio_metadata(in, out);
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

/* The fallback of reset: fresh states made here (allocates). New before old, so
 * that a failed allocation leaves a working (if not forgetful) channel. */
static void recreate_live_states(denoise_instance *d)
{
    for (uint32_t c = 0; c < d->channels; c++) {
        SpeexPreprocessState *fresh = new_state(d);
        if (fresh == NULL) {
            rawfx_log(&d->base, RAWFX_LOG_ERROR, "reset could not re-create the SpeexDSP state of channel %u; "
                      "it keeps its history", (unsigned)c);
            continue;
        }
        apply_live_settings(d, fresh);
        speex_preprocess_state_destroy(d->live->channel[c]);
        d->live->channel[c] = fresh;
    }
}

static void denoise_reset(const rawfx_filter *filter)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL || !d->configured || !d->dirty)
        return;
    /* Only reset stores a set into `retired`, so NULL here stays NULL until our store. */
    state_set *fresh = NULL;
    if (atomic_load_explicit(&d->retired, memory_order_acquire) == NULL)
        fresh = atomic_exchange_explicit(&d->spare, NULL, memory_order_acq_rel);
    if (fresh != NULL) {
        apply_live_settings_to_set(d, fresh); /* set_param already checked these values */
        state_set *used = d->live;
        d->live = fresh;
        atomic_store_explicit(&d->retired, used, memory_order_release);
    } else {
        rawfx_log(&d->base, RAWFX_LOG_WARNING, "reset came before the spare SpeexDSP states were ready (%s): "
                  "re-created them on the calling thread, which allocates",
                  d->base.host ? "on_callback has not run since the last reset" : "no host object");
        recreate_live_states(d);
    }
    if (d->base.host != NULL)
        d->base.host->request_callback(d->base.host);
    d->dirty = 0;
}

/* Control thread, possibly while process runs: replaces the retired set by a
 * new spare. Touches only the set it took out of `retired`. */
static void denoise_on_callback(const rawfx_filter *filter)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL)
        return;
    state_set *used = atomic_exchange_explicit(&d->retired, NULL, memory_order_acq_rel);
    if (used == NULL)
        return; /* nothing retired: requests fold, or the spare is already there */
    destroy_set(used);
    if (!fill_set(d, used)) {
        rawfx_log(&d->base, RAWFX_LOG_WARNING, "could not create spare SpeexDSP states (out of memory?): "
                  "resets re-create states on the calling thread until the next on_callback succeeds");
        atomic_store_explicit(&d->retired, used, memory_order_release); /* try again on the next callback */
        return;
    }
    atomic_store_explicit(&d->spare, used, memory_order_release);
}

static const void *denoise_get_extension(const rawfx_filter *filter, const char *id)
{
    denoise_instance *d = instance_of(filter);
    if (d == NULL || id == NULL)
        return NULL;
    if (strcmp(id, RAWFX_EXT_VOICE_ACTIVITY) == 0)
        return &d->activity;
    return NULL;
}

static const rawfx_filter denoise_functions = RAWFX_FILTER_FUNCTIONS(
    denoise_destroy, denoise_set_param, denoise_configure, NULL, denoise_process, denoise_reset,
    denoise_get_extension, denoise_on_callback);

static const rawfx_filter *denoise_create(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                          char *error, size_t error_capacity)
{
    denoise_instance *d = (denoise_instance *)rawfx_instance_new(sizeof *d, descriptor, host, &denoise_functions,
                                                                 error, error_capacity);
    if (d == NULL)
        return NULL;
    atomic_init(&d->spare, NULL);
    atomic_init(&d->retired, NULL);
    clear_activity(d);
    return rawfx_instance_ready(&d->base, error, error_capacity);
}

RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speex_denoise_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "denoise", "Denoise (SpeexDSP)", "1.1.0",
    "Speech noise suppression by the SpeexDSP preprocessor, with optional AGC and voice-activity flags; one "
    "state per channel (1-8), 10 ms blocks, 8-192 kHz in 100 Hz steps, 10 ms latency. Parameters other than "
    "vad change between blocks; reset swaps in spare states prepared off the audio thread.",
    RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, denoise_params, denoise_create);

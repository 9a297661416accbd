/*
 * `resample`: sample-rate conversion over the SpeexDSP resampler
 * (speex_resampler_*), with an optional average downmix to mono. Audio, out of
 * place.
 *
 * Blocks: we ask the host for blocks of ceil(input_rate / 100) frames (10 ms at
 * rates that are multiples of 100 Hz) so the largest output of one call is
 * known: max_output_frames = ceil(block * out_rate / in_rate) + 2. SpeexDSP
 * never wrote more than ceil(block * out / in) in a sweep of 12 common rates
 * (8 k .. 192 k, every pair, qualities 0/5/10, 2000 blocks each); the 2 are a
 * margin. A shorter block (1..block frames, e.g. a stream's tail) is accepted;
 * a longer one is refused.
 *
 * Latency: speex_resampler_get_output_latency, in output frames (it matched a
 * measured pulse delay to within a frame for 44.1k->48k, 48k->32k, 48k->16k and
 * 16k->48k). Pass-through (same rate, channels=keep) and downmix-only (same
 * rate, channels=mono) do not use SpeexDSP at all and have no latency.
 *
 * Process allocates nothing: speex_resampler_process_*_int converts through a
 * stack buffer, the downmix buffer is allocated in configure, reset is
 * speex_resampler_reset_mem.
 */
#include "rawfx/plugin_helpers.h"

#include <speex/speex_resampler.h>

#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- parameters -- */

enum { P_RATE, P_QUALITY, P_CHANNELS, P_COUNT };
enum { CHANNELS_KEEP = 0, CHANNELS_MONO = 1 };

#define MIN_RATE 8000
#define MAX_RATE 192000
#define DEFAULT_RATE 48000
/* SpeexDSP's best: flat within 0.1 dB to 0.9 of the lower Nyquist frequency (quality 5 lost
 * 1.85 dB at 7.2 kHz for 48 -> 16 kHz). See the quality help text for the cost. */
#define DEFAULT_QUALITY 10
/* The most zeros fed ahead of the stream to make the filter's delay a whole number of output
 * frames: 10 ms of input (rates whose ratio needs more keep SpeexDSP's fractional delay). */
#define MAX_ALIGN_MS 10

static const char *const channel_modes[] = { "keep", "mono" };

/* All three need a configure: a new rate or channel count changes the output
 * format, and speex_resampler_set_quality re-allocates the filter. */
static const rawfx_param_descriptor resample_params[P_COUNT] = {
    [P_RATE] = RAWFX_INT_PARAM(
        "rate", "Output rate",
        "The sample rate to convert to, in Hz (8000 to 192000, any integer). The virtual mic and "
        "production studio paths take 32000 or 48000. When it equals the input rate and channels=keep "
        "the audio passes through untouched.",
        "Hz", RAWFX_PARAM_FLAG_RECONFIGURE, DEFAULT_RATE, MIN_RATE, MAX_RATE),
    [P_QUALITY] = RAWFX_INT_PARAM(
        "quality", "Quality",
        "SpeexDSP resampler quality, 0 (fastest) to 10 (best). The default 10 is flat within 0.1 dB "
        "up to 0.9 of the lower Nyquist frequency (7.2 kHz for 48k->16k), at about 3.3 ms of latency "
        "for 44.1k->48k and 8 ms for 48k->16k, and several times the CPU of 5, SpeexDSP's \"desktop\" "
        "preset (1.85 dB down at 7.2 kHz for 48k->16k, about 1 ms of latency). 3 is its VoIP preset.",
        "", RAWFX_PARAM_FLAG_RECONFIGURE, DEFAULT_QUALITY, 0, 10),
    [P_CHANNELS] = RAWFX_ENUM_PARAM(
        "channels", "Channels",
        "keep: convert every channel as it is. mono: average all channels into one (rounded) before "
        "converting, for the virtual-mic and production-studio paths, which take 16-bit mono.",
        "", RAWFX_PARAM_FLAG_RECONFIGURE, CHANNELS_KEEP, channel_modes),
};

/* ---------------------------------------------------------------- instance -- */

typedef struct resample_instance {
    rawfx_instance_base base;     /* filter, host, error buffer */

    /* parameters (all take effect at configure) */
    int32_t rate;
    int32_t quality;
    int32_t channel_mode;

    /* negotiated */
    int configured;
    uint32_t in_rate, in_channels;
    uint32_t out_rate, out_channels;
    uint32_t block_frames;
    uint32_t max_output_frames;
    SpeexResamplerState *resampler; /* NULL when the rates are equal */
    int16_t *mix;                   /* block_frames, when downmixing more than one channel */
    /* Alignment: `align_zeros` zero frames go through the resampler after init and each reset,
     * and its output (align_out, discarded) is left out of the latency, so that the delay is a
     * whole number of output frames (SpeexDSP's own is filt_len/2 input frames: 43.5 output
     * frames for 44.1k->48k at quality 5, which read as 44 put every sample 0.46 frames early). */
    uint32_t align_zeros;
    int16_t *align_in;              /* align_zeros frames of zeros */
    int16_t *align_out;             /* the output of those */
    uint32_t align_out_capacity;    /* frames */
} resample_instance;

static resample_instance *instance_of(const rawfx_filter *filter)
{
    return filter ? (resample_instance *)filter->filter_data : NULL;
}

static void release(resample_instance *r)
{
    if (r->resampler != NULL) {
        speex_resampler_destroy(r->resampler);
        r->resampler = NULL;
    }
    free(r->mix);
    r->mix = NULL;
    free(r->align_in);
    free(r->align_out);
    r->align_in = r->align_out = NULL;
    r->align_zeros = r->align_out_capacity = 0;
    r->configured = 0;
}

static uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b != 0) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* [process or control] Feeds the alignment zeros; returns the frames they made. No allocation. */
static uint32_t feed_alignment(resample_instance *r)
{
    if (r->align_zeros == 0)
        return 0;
    spx_uint32_t in_len = r->align_zeros, out_len = r->align_out_capacity;
    speex_resampler_process_interleaved_int(r->resampler, r->align_in, &in_len, r->align_out, &out_len);
    return out_len;
}

/* --------------------------------------------------------------- callbacks -- */

static void resample_destroy(const rawfx_filter *filter)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return;
    release(r);
    rawfx_instance_free(&r->base);
}

static rawfx_status resample_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_status status = rawfx_check_param(&r->base, index, value);
    if (status != RAWFX_OK)
        return status;
    switch (index) {
    case P_RATE: r->rate = (int32_t)value->int_value; break;
    case P_QUALITY: r->quality = (int32_t)value->int_value; break;
    case P_CHANNELS: r->channel_mode = (int32_t)value->int_value; break;
    }
    /* All three are RAWFX_PARAM_FLAG_RECONFIGURE: they apply at the next configure. */
    return RAWFX_OK;
}

static rawfx_status resample_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_clear_error(&r->base);
    release(r);

    rawfx_status status = rawfx_check_audio_input(&r->base, input, 8);
    if (status == RAWFX_OK)
        status = rawfx_check_negotiation(&r->base, result);
    if (status != RAWFX_OK)
        return status;

    uint32_t in_rate = input->audio.sample_rate;
    if (in_rate < MIN_RATE || in_rate > MAX_RATE)
        return rawfx_fail(&r->base, RAWFX_ERR_UNSUPPORTED, "an input rate of %u Hz is not supported; accepted: "
                          "%u to %u Hz (any integer rate)", (unsigned)in_rate, (unsigned)MIN_RATE, (unsigned)MAX_RATE);

    r->in_rate = in_rate;
    r->in_channels = input->audio.channels;
    r->out_rate = (uint32_t)r->rate;
    r->out_channels = r->channel_mode == CHANNELS_MONO ? 1 : r->in_channels;
    r->block_frames = (in_rate + 99) / 100;

    if (r->channel_mode == CHANNELS_MONO && r->in_channels > 1) {
        r->mix = (int16_t *)calloc(r->block_frames, sizeof(int16_t));
        if (r->mix == NULL)
            return rawfx_fail(&r->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for the downmix buffer");
    }

    uint32_t latency = 0;
    if (r->out_rate != r->in_rate) {
        int err = RESAMPLER_ERR_SUCCESS;
        r->resampler = speex_resampler_init(r->out_channels, r->in_rate, r->out_rate, r->quality, &err);
        if (r->resampler == NULL || err != RESAMPLER_ERR_SUCCESS) {
            release(r);
            return rawfx_fail(&r->base, err == RESAMPLER_ERR_ALLOC_FAILED ? RAWFX_ERR_OUT_OF_MEMORY : RAWFX_ERR_INTERNAL,
                              "speex_resampler_init(%u ch, %u -> %u Hz, quality %d) failed: %s",
                              (unsigned)r->out_channels, (unsigned)r->in_rate, (unsigned)r->out_rate,
                              (int)r->quality, speex_resampler_strerror(err));
        }
        /* The filter delays by filt_len/2 input frames: `delay` output frames, a whole number once
         * (delay + zeros) input frames is a multiple of in_rate / gcd(in_rate, out_rate). */
        const uint32_t delay = (uint32_t)speex_resampler_get_input_latency(r->resampler);
        const uint32_t period = r->in_rate / gcd(r->in_rate, r->out_rate);
        const uint32_t zeros = (period - delay % period) % period;
        if (zeros > 0 && zeros <= r->in_rate * MAX_ALIGN_MS / 1000) {
            r->align_zeros = zeros;
            r->align_out_capacity = (uint32_t)(((uint64_t)zeros * r->out_rate + r->in_rate - 1) / r->in_rate) + 2;
            r->align_in = (int16_t *)calloc((size_t)zeros * r->out_channels, sizeof(int16_t));
            r->align_out = (int16_t *)calloc((size_t)r->align_out_capacity * r->out_channels, sizeof(int16_t));
            if (r->align_in == NULL || r->align_out == NULL) {
                release(r);
                return rawfx_fail(&r->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for the resampler's alignment");
            }
        }
        if (r->align_zeros > 0 || zeros == 0) {
            const uint64_t whole = (uint64_t)(delay + r->align_zeros) * r->out_rate / r->in_rate;
            latency = (uint32_t)whole - feed_alignment(r);
        } else {
            int l = speex_resampler_get_output_latency(r->resampler); /* rounded: a fractional delay remains */
            latency = l > 0 ? (uint32_t)l : 0;
        }
        uint64_t most = ((uint64_t)r->block_frames * r->out_rate + r->in_rate - 1) / r->in_rate;
        r->max_output_frames = (uint32_t)most + 2;
    } else {
        r->max_output_frames = r->block_frames;
    }

    r->configured = 1;
    rawfx_log(&r->base, RAWFX_LOG_INFO, "%u Hz x %u -> %u Hz x %u, %s, latency %u frames",
              (unsigned)r->in_rate, (unsigned)r->in_channels, (unsigned)r->out_rate, (unsigned)r->out_channels,
              r->resampler != NULL ? "SpeexDSP resampler" : "no rate conversion", (unsigned)latency);

    result->output.kind = RAWFX_MEDIA_AUDIO;
    result->output.audio.sample_rate = r->out_rate;
    result->output.audio.channels = r->out_channels;
    result->block_frames = r->block_frames;
    result->max_output_frames = r->max_output_frames;
    result->latency = latency;
    return RAWFX_OK;
}

static rawfx_status resample_process(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    rawfx_clear_error(&r->base);
    if (!r->configured)
        return rawfx_fail(&r->base, RAWFX_ERR_STATE, "process before a successful configure");
    if (!rawfx_audio_frame_is_complete(in) || !rawfx_audio_frame_is_complete(out))
        return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "incomplete audio frame (NULL samples or short struct_size)");
    if (in->sample_rate != r->in_rate || in->channels != r->in_channels)
        return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "block is %u Hz x %u channels but the filter was "
                          "configured for %u Hz x %u; reconfigure on a format change",
                          (unsigned)in->sample_rate, (unsigned)in->channels,
                          (unsigned)r->in_rate, (unsigned)r->in_channels);
    const uint32_t n = in->frame_count;
    if (n == 0 || n > r->block_frames)
        return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "got %u frames; blocks carry 1 to %u frames "
                          "(block_frames, 10 ms at %u Hz)", (unsigned)n, (unsigned)r->block_frames,
                          (unsigned)r->in_rate);
    if (out == in || out->samples == in->samples)
        return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "is out of place; the output must be another buffer");
    const uint32_t capacity = out->frame_count;

    /* Source for the rate stage: the host's block, or our downmix of it. */
    const int16_t *source = in->samples;
    if (r->mix != NULL) {
        const uint32_t channels = r->in_channels;
        const int32_t half = (int32_t)(channels / 2);
        for (uint32_t i = 0; i < n; i++) {
            const int16_t *frame = in->samples + (size_t)i * channels;
            int32_t sum = 0;
            for (uint32_t c = 0; c < channels; c++)
                sum += frame[c];
            /* round to nearest, halves away from zero; |mean| <= 32768 fits */
            r->mix[i] = (int16_t)((sum >= 0 ? sum + half : sum - half) / (int32_t)channels);
        }
        source = r->mix;
    }

    uint32_t written;
    if (r->resampler == NULL) {
        if (capacity < n)
            return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "output buffer holds %u frames, needs %u",
                              (unsigned)capacity, (unsigned)n);
        memcpy(out->samples, source, (size_t)n * r->out_channels * sizeof(int16_t));
        written = n;
    } else {
        spx_uint32_t in_len = n, out_len = capacity;
        int err = speex_resampler_process_interleaved_int(r->resampler, source, &in_len, out->samples, &out_len);
        if (err != RESAMPLER_ERR_SUCCESS)
            return rawfx_fail(&r->base, RAWFX_ERR_INTERNAL, "SpeexDSP failed: %s", speex_resampler_strerror(err));
        if (in_len != n) {
            /* SpeexDSP stopped when the output was full: the host gave less than
             * max_output_frames. The unconsumed input is lost; say so. */
            out->frame_count = out_len;
            return rawfx_fail(&r->base, RAWFX_ERR_INVALID_ARGUMENT, "output buffer of %u frames was too small "
                              "(needs up to %u, max_output_frames); %u of %u input frames were dropped",
                              (unsigned)capacity, (unsigned)r->max_output_frames, (unsigned)(n - in_len), (unsigned)n);
        }
        written = out_len;
    }

    rawfx_copy_audio_metadata(in, out);
    out->frame_count = written;
    out->sample_rate = r->out_rate;
    out->channels = r->out_channels;
    return RAWFX_OK;
}

static void resample_reset(const rawfx_filter *filter)
{
    resample_instance *r = instance_of(filter);
    if (r != NULL && r->resampler != NULL) {
        speex_resampler_reset_mem(r->resampler); /* clears history and phase; no allocation */
        feed_alignment(r);                       /* the same frames as at configure */
    }
}

static const rawfx_filter resample_functions = RAWFX_FILTER_FUNCTIONS(
    resample_destroy, resample_set_param, resample_configure, NULL, resample_process, resample_reset, NULL, NULL);

static const rawfx_filter *resample_create(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                           char *error, size_t error_capacity)
{
    resample_instance *r = (resample_instance *)rawfx_instance_new(sizeof *r, descriptor, host, &resample_functions,
                                                                   error, error_capacity);
    return r != NULL ? rawfx_instance_ready(&r->base, error, error_capacity) : NULL;
}

RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speex_resample_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "resample", "Resample (SpeexDSP)", "1.1.0",
    "Sample-rate conversion by the SpeexDSP resampler (8-192 kHz, 1-8 channels), with an optional average "
    "downmix to mono. Latency: the resampler's filter delay, a whole number of output frames (about 3.3 ms "
    "for 44.1k->48k at quality 10); none when the rate is unchanged.",
    RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_OUT_OF_PLACE, resample_params, resample_create);

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
#include "rawfx.h"

#include <speex/speex_resampler.h>

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

/* -------------------------------------------------------------- parameters -- */

enum { P_RATE, P_QUALITY, P_CHANNELS, P_COUNT };
enum { CHANNELS_KEEP = 0, CHANNELS_MONO = 1 };

#define MIN_RATE 8000
#define MAX_RATE 192000
#define DEFAULT_RATE 48000
/* SPEEX_RESAMPLER_QUALITY_DESKTOP: see the quality help text for why. */
#define DEFAULT_QUALITY 5

static const char *const channel_modes[] = { "keep", "mono" };

static const rawfx_param_descriptor resample_params[P_COUNT] = {
    [P_RATE] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "rate",
        .name = "Output rate",
        .help = "The sample rate to convert to, in Hz (8000 to 192000, any integer). The virtual mic and "
                "production studio paths take 32000 or 48000. When it equals the input rate and channels=keep "
                "the audio passes through untouched.",
        .unit = "Hz",
        .type = RAWFX_PARAM_INT,
        .flags = RAWFX_PARAM_FLAG_RECONFIGURE,
        .default_value = DEFAULT_RATE,
        .min_value = MIN_RATE,
        .max_value = MAX_RATE,
    },
    [P_QUALITY] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "quality",
        .name = "Quality",
        .help = "SpeexDSP resampler quality, 0 (fastest) to 10 (best). The default 5 is SpeexDSP's "
                "\"desktop\" preset: one step above its default 4, for music and shared audio, at little CPU "
                "cost and under 1.3 ms of latency for 44.1k->48k or 48k->32k. 3 is its VoIP preset; "
                "higher values use longer filters: more CPU and latency, lower aliasing.",
        .unit = "",
        .type = RAWFX_PARAM_INT,
        .flags = RAWFX_PARAM_FLAG_RECONFIGURE,
        .default_value = DEFAULT_QUALITY,
        .min_value = 0,
        .max_value = 10,
    },
    [P_CHANNELS] = {
        .struct_size = sizeof(rawfx_param_descriptor),
        .id = "channels",
        .name = "Channels",
        .help = "keep: convert every channel as it is. mono: average all channels into one (rounded) before "
                "converting, for the virtual-mic and production-studio paths, which take 16-bit mono.",
        .unit = "",
        .type = RAWFX_PARAM_ENUM,
        .flags = RAWFX_PARAM_FLAG_RECONFIGURE,
        .default_value = CHANNELS_KEEP,
        .min_value = 0,
        .max_value = 1,
        .enum_values = channel_modes,
        .enum_count = 2,
    },
};

/* ---------------------------------------------------------------- instance -- */

typedef struct resample_instance {
    rawfx_filter filter;          /* handed to the host; filter_data points back here */
    char error[320];

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
    r->configured = 0;
}

/* --------------------------------------------------------------- callbacks -- */

static void resample_destroy(const rawfx_filter *filter)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return;
    release(r);
    free(r);
}

static rawfx_status resample_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    r->error[0] = '\0';
    if (value == NULL || index >= P_COUNT) {
        rfx_speex_format(r->error, sizeof r->error, "resample: no parameter at index %u (it has %d: rate, quality, "
                         "channels)", (unsigned)index, P_COUNT);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    const rawfx_param_descriptor *p = &resample_params[index];
    if (value->type != p->type) {
        rfx_speex_format(r->error, sizeof r->error, "resample: %s is %s, the value given has another type",
                         p->id, p->type == RAWFX_PARAM_ENUM ? "an enum (keep or mono)" : "an integer");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    int64_t v = value->int_value;
    if (v < (int64_t)p->min_value || v > (int64_t)p->max_value) {
        if (index == P_CHANNELS)
            rfx_speex_format(r->error, sizeof r->error, "resample: channels index %lld is not valid; accepted: "
                             "keep (0) or mono (1)", (long long)v);
        else
            rfx_speex_format(r->error, sizeof r->error, "resample: %s=%lld is out of range; accepted: %lld to %lld%s%s",
                             p->id, (long long)v, (long long)p->min_value, (long long)p->max_value,
                             p->unit[0] ? " " : "", p->unit);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    switch (index) {
    case P_RATE: r->rate = (int32_t)v; break;
    case P_QUALITY: r->quality = (int32_t)v; break;
    case P_CHANNELS: r->channel_mode = (int32_t)v; break;
    }
    /* All three are RAWFX_PARAM_FLAG_RECONFIGURE: they apply at the next configure. */
    return RAWFX_OK;
}

static rawfx_status resample_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result)
{
    resample_instance *r = instance_of(filter);
    if (r == NULL)
        return RAWFX_ERR_INVALID_ARGUMENT;
    r->error[0] = '\0';
    release(r);

    rawfx_status status = rfx_speex_check_audio_input("resample", input, r->error, sizeof r->error);
    if (status == RAWFX_OK)
        status = rfx_speex_check_negotiation("resample", result, r->error, sizeof r->error);
    if (status != RAWFX_OK)
        return status;
    if (result->output.struct_size < offsetof(rawfx_format, audio) + sizeof(rawfx_audio_format)
        || result->output.audio.struct_size < offsetof(rawfx_audio_format, channels) + sizeof(uint32_t)) {
        rfx_speex_format(r->error, sizeof r->error, "resample: the negotiation's output format is incomplete "
                         "(struct_size too small), so the new rate cannot be written");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }

    uint32_t in_rate = input->audio.sample_rate;
    if (in_rate < MIN_RATE || in_rate > MAX_RATE) {
        rfx_speex_format(r->error, sizeof r->error, "resample: an input rate of %u Hz is not supported; accepted: "
                         "%u to %u Hz (any integer rate)", (unsigned)in_rate, (unsigned)MIN_RATE, (unsigned)MAX_RATE);
        return RAWFX_ERR_UNSUPPORTED;
    }

    r->in_rate = in_rate;
    r->in_channels = input->audio.channels;
    r->out_rate = (uint32_t)r->rate;
    r->out_channels = r->channel_mode == CHANNELS_MONO ? 1 : r->in_channels;
    r->block_frames = (in_rate + 99) / 100;

    if (r->channel_mode == CHANNELS_MONO && r->in_channels > 1) {
        r->mix = (int16_t *)calloc(r->block_frames, sizeof(int16_t));
        if (r->mix == NULL) {
            rfx_speex_format(r->error, sizeof r->error, "resample: out of memory for the downmix buffer");
            return RAWFX_ERR_OUT_OF_MEMORY;
        }
    }

    uint32_t latency = 0;
    if (r->out_rate != r->in_rate) {
        int err = RESAMPLER_ERR_SUCCESS;
        r->resampler = speex_resampler_init(r->out_channels, r->in_rate, r->out_rate, r->quality, &err);
        if (r->resampler == NULL || err != RESAMPLER_ERR_SUCCESS) {
            rfx_speex_format(r->error, sizeof r->error, "resample: speex_resampler_init(%u ch, %u -> %u Hz, "
                             "quality %d) failed: %s", (unsigned)r->out_channels, (unsigned)r->in_rate,
                             (unsigned)r->out_rate, (int)r->quality, speex_resampler_strerror(err));
            release(r);
            return err == RESAMPLER_ERR_ALLOC_FAILED ? RAWFX_ERR_OUT_OF_MEMORY : RAWFX_ERR_INTERNAL;
        }
        int l = speex_resampler_get_output_latency(r->resampler);
        latency = l > 0 ? (uint32_t)l : 0;
        uint64_t most = ((uint64_t)r->block_frames * r->out_rate + r->in_rate - 1) / r->in_rate;
        r->max_output_frames = (uint32_t)most + 2;
    } else {
        r->max_output_frames = r->block_frames;
    }

    r->configured = 1;

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
    r->error[0] = '\0';
    if (!r->configured) {
        rfx_speex_format(r->error, sizeof r->error, "resample: process before a successful configure");
        return RAWFX_ERR_STATE;
    }
    if (!rfx_speex_frame_is_complete(in) || !rfx_speex_frame_is_complete(out) || in->samples == NULL
        || out->samples == NULL) {
        rfx_speex_format(r->error, sizeof r->error, "resample: incomplete audio frame (NULL samples or short struct_size)");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (in->sample_rate != r->in_rate || in->channels != r->in_channels) {
        rfx_speex_format(r->error, sizeof r->error, "resample: block is %u Hz x %u channels but the filter was "
                         "configured for %u Hz x %u; reconfigure on a format change",
                         (unsigned)in->sample_rate, (unsigned)in->channels,
                         (unsigned)r->in_rate, (unsigned)r->in_channels);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    const uint32_t n = in->frame_count;
    if (n == 0 || n > r->block_frames) {
        rfx_speex_format(r->error, sizeof r->error, "resample: got %u frames; blocks carry 1 to %u frames "
                         "(block_frames, 10 ms at %u Hz)", (unsigned)n, (unsigned)r->block_frames,
                         (unsigned)r->in_rate);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (out == in || out->samples == in->samples) {
        rfx_speex_format(r->error, sizeof r->error, "resample: is out of place; the output must be another buffer");
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
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
        if (capacity < n) {
            rfx_speex_format(r->error, sizeof r->error, "resample: output buffer holds %u frames, needs %u",
                             (unsigned)capacity, (unsigned)n);
            return RAWFX_ERR_INVALID_ARGUMENT;
        }
        memcpy(out->samples, source, (size_t)n * r->out_channels * sizeof(int16_t));
        written = n;
    } else {
        spx_uint32_t in_len = n, out_len = capacity;
        int err = speex_resampler_process_interleaved_int(r->resampler, source, &in_len, out->samples, &out_len);
        if (err != RESAMPLER_ERR_SUCCESS) {
            rfx_speex_format(r->error, sizeof r->error, "resample: SpeexDSP failed: %s", speex_resampler_strerror(err));
            return RAWFX_ERR_INTERNAL;
        }
        if (in_len != n) {
            /* SpeexDSP stopped when the output was full: the host gave less than
             * max_output_frames. The unconsumed input is lost; say so. */
            rfx_speex_format(r->error, sizeof r->error, "resample: output buffer of %u frames was too small (needs up "
                             "to %u, max_output_frames); %u of %u input frames were dropped",
                             (unsigned)capacity, (unsigned)r->max_output_frames, (unsigned)(n - in_len), (unsigned)n);
            out->frame_count = out_len;
            return RAWFX_ERR_INVALID_ARGUMENT;
        }
        written = out_len;
    }

    rfx_speex_copy_metadata(in, out);
    out->frame_count = written;
    out->sample_rate = r->out_rate;
    out->channels = r->out_channels;
    return RAWFX_OK;
}

static void resample_reset(const rawfx_filter *filter)
{
    resample_instance *r = instance_of(filter);
    if (r != NULL && r->resampler != NULL)
        speex_resampler_reset_mem(r->resampler); /* clears history; no allocation */
}

static const char *resample_get_error(const rawfx_filter *filter)
{
    resample_instance *r = instance_of(filter);
    return r ? r->error : "";
}

static const rawfx_filter *resample_create(const rawfx_filter_descriptor *descriptor, char *error, size_t error_capacity);

RFX_HIDDEN const rawfx_filter_descriptor rfx_speex_resample_descriptor = {
    .struct_size = sizeof(rawfx_filter_descriptor),
    .id = "resample",
    .name = "Resample (SpeexDSP)",
    .version = "1.0.0",
    .description = "Sample-rate conversion by the SpeexDSP resampler (8-192 kHz, 1-8 channels), with an optional "
                   "average downmix to mono. Latency: the resampler's filter delay (about 1 ms at quality 5); "
                   "none when the rate is unchanged.",
    .media_kind = RAWFX_MEDIA_AUDIO,
    .processing = RAWFX_PROCESS_OUT_OF_PLACE,
    .params = resample_params,
    .param_count = P_COUNT,
    .create = resample_create,
};

static const rawfx_filter *resample_create(const rawfx_filter_descriptor *descriptor, char *error, size_t error_capacity)
{
    if (descriptor != &rfx_speex_resample_descriptor) {
        rfx_speex_format(error, error_capacity, "resample: create called with another filter's descriptor");
        return NULL;
    }
    resample_instance *r = (resample_instance *)calloc(1, sizeof *r);
    if (r == NULL) {
        rfx_speex_format(error, error_capacity, "resample: out of memory");
        return NULL;
    }
    r->filter.struct_size = sizeof(rawfx_filter);
    r->filter.descriptor = descriptor;
    r->filter.filter_data = r;
    r->filter.destroy = resample_destroy;
    r->filter.set_param = resample_set_param;
    r->filter.configure = resample_configure;
    r->filter.process_video = NULL;
    r->filter.process_audio = resample_process;
    r->filter.reset = resample_reset;
    r->filter.get_error = resample_get_error;
    r->filter.get_extension = NULL; /* optional: resample offers none */

    r->rate = DEFAULT_RATE;
    r->quality = DEFAULT_QUALITY;
    r->channel_mode = CHANNELS_KEEP;
    return &r->filter;
}

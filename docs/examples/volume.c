/*
 * volume.c — a complete RawFX audio filter written with rawfx/plugin_helpers.h, the optional
 * helper header (compare invert.c, which uses rawfx.h alone). It compiles as C99 and as C++11:
 *
 *     cc  -std=c99   -shared -fPIC -O2 -I Sources/CRawFX/include docs/examples/volume.c -o volume.so
 *     c++ -std=c++11 -x c++ -shared -fPIC -O2 -I Sources/CRawFX/include docs/examples/volume.c -o volume.so
 *     RAWFX_PLUGIN_PATH=. rawfx run --af volume=factor=0.5 in.wav out.wav
 *
 * `volume` multiplies 16-bit samples by `factor` in place, rounding to nearest and clipping
 * to the 16-bit range. `factor` changes in real time (set_param only stores a number); a
 * change of more than 6 dB is logged through the host, as an example of rawfx_log.
 * The test suite (PluginHelperTests) compiles this file both ways and checks the output
 * against the formula.
 */
#include "rawfx/plugin_helpers.h"

#include <math.h>

typedef struct volume {
    rawfx_instance_base base;   /* first: filter, host, error buffer */
    double factor;
} volume;

static const rawfx_param_descriptor volume_params[] = {
    RAWFX_FLOAT_PARAM("factor", "Factor", "Linear volume: 0.5 halves the amplitude, 2 doubles it (clipped).",
                      "", 0, 1.0, 0.0, 8.0),
};

static volume *volume_of(const rawfx_filter *filter) { return (volume *)filter->filter_data; }

static void volume_destroy(const rawfx_filter *filter) { rawfx_instance_free(&volume_of(filter)->base); }

static rawfx_status volume_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    volume *g = volume_of(filter);
    rawfx_status status = rawfx_check_param(&g->base, index, value);
    if (status != RAWFX_OK)
        return status;
    /* Compare ratios, not decibels: log10 of 0 is -inf. */
    double ratio = value->float_value > g->factor ? value->float_value / g->factor : g->factor / value->float_value;
    if (ratio > 2.0)
        rawfx_log(&g->base, RAWFX_LOG_INFO, "factor %ld%% -> %ld%%", lround(100 * g->factor),
                  lround(100 * value->float_value));
    g->factor = value->float_value;
    return RAWFX_OK;
}

static rawfx_status volume_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    volume *g = volume_of(filter);
    rawfx_clear_error(&g->base);
    rawfx_status status = rawfx_check_audio_input(&g->base, input, 32);
    if (status == RAWFX_OK)
        status = rawfx_check_negotiation(&g->base, result);
    return status; /* in place: the output format is the input format, any block size, no latency */
}

static rawfx_status volume_process(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    volume *g = volume_of(filter);
    if (!rawfx_audio_frame_is_complete(out))
        return rawfx_fail(&g->base, RAWFX_ERR_INVALID_ARGUMENT, "incomplete audio frame");
    (void)in; /* in place: out == in */
    const size_t count = (size_t)out->frame_count * out->channels;
    for (size_t i = 0; i < count; i++) {
        double v = floor(out->samples[i] * g->factor + 0.5);
        out->samples[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
    }
    return RAWFX_OK;
}

static void volume_reset(const rawfx_filter *filter) { (void)filter; /* no history */ }

static const rawfx_filter volume_functions = RAWFX_FILTER_FUNCTIONS(
    volume_destroy, volume_set_param, volume_configure, NULL /* video */, volume_process, volume_reset,
    NULL /* get_extension */, NULL /* on_callback */);

static const rawfx_filter *volume_create(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                         char *error, size_t error_capacity) {
    volume *v = (volume *)rawfx_instance_new(sizeof *v, descriptor, host, &volume_functions, error, error_capacity);
    if (v == NULL)
        return NULL;
    v->factor = 1.0; /* so that setting the default (1.0) logs no change */
    return rawfx_instance_ready(&v->base, error, error_capacity); /* every parameter at its default */
}

static const rawfx_filter_descriptor volume_descriptor = RAWFX_FILTER_DESCRIPTOR(
    "volume", "Volume", "1.0.0", "Multiplies 16-bit samples by a factor, rounded and clipped; in place.",
    RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, volume_params, volume_create);

RAWFX_PLUGIN_ENTRY("volume-example", "1.0.0", &volume_descriptor)

/*
 * invert.c — a complete RawFX filter in plain C99, built against rawfx.h alone:
 *
 *     cc -std=c99 -shared -fPIC -O2 -I Sources/CRawFX/include docs/examples/invert.c -o invert.so
 *     RAWFX_PLUGIN_PATH=. rawfx run --vf invert input.y4m output.y4m
 *
 * `invert` makes a photographic negative of an I420 frame, in place. With chroma=false
 * (the default) only luma is inverted; with chroma=true U and V are mirrored around 128 too.
 * The test suite compiles this file and runs it on frames whose strides exceed their width.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfx.h"

typedef struct invert_state {
    rawfx_filter filter;    /* what the host sees; filter.filter_data points back here */
    int chroma;             /* parameter 0 */
    char error[256];        /* get_error's message */
} invert_state;

static const rawfx_param_descriptor invert_params[] = {
    {
        sizeof(rawfx_param_descriptor), "chroma", "Invert chroma",
        "Also invert colour (U and V mirrored around 128), not only brightness.", "",
        RAWFX_PARAM_BOOL, 0, 0.0, 0.0, 1.0, NULL, NULL, 0
    },
};

static invert_state *state_of(const rawfx_filter *filter) { return (invert_state *)filter->filter_data; }

static void invert_destroy(const rawfx_filter *filter) { free(state_of(filter)); }

static rawfx_status invert_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    invert_state *s = state_of(filter);
    if (index != 0) {
        snprintf(s->error, sizeof s->error, "invert: no parameter %u", (unsigned)index);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    s->chroma = value->int_value != 0;
    s->error[0] = '\0';
    return RAWFX_OK;
}

static rawfx_status invert_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    invert_state *s = state_of(filter);
    if (input->kind != RAWFX_MEDIA_VIDEO || input->video.pixel_format != RAWFX_PIXEL_I420) {
        snprintf(s->error, sizeof s->error, "invert: needs I420 video");
        return RAWFX_ERR_UNSUPPORTED;
    }
    (void)result; /* in place: the output format is the input format, no latency */
    s->error[0] = '\0';
    return RAWFX_OK;
}

static void invert_rows(uint8_t *plane, int32_t stride, uint32_t width, uint32_t height, int around128) {
    for (uint32_t y = 0; y < height; y++) {
        uint8_t *row = plane + (size_t)y * (size_t)stride; /* strides may exceed the width */
        for (uint32_t x = 0; x < width; x++) row[x] = around128 ? (uint8_t)(256 - row[x] > 255 ? 255 : 256 - row[x]) : (uint8_t)(255 - row[x]);
    }
}

static rawfx_status invert_process_video(const rawfx_filter *filter, const rawfx_video_frame *in, rawfx_video_frame *out) {
    invert_state *s = state_of(filter);
    (void)in; /* in place: out == in */
    invert_rows(out->planes[0], out->strides[0], out->width, out->height, 0);
    if (s->chroma) {
        uint32_t cw = (out->width + 1) / 2, ch = (out->height + 1) / 2;
        invert_rows(out->planes[1], out->strides[1], cw, ch, 1);
        invert_rows(out->planes[2], out->strides[2], cw, ch, 1);
    }
    return RAWFX_OK;
}

static void invert_reset(const rawfx_filter *filter) { (void)filter; /* no history */ }

static const char *invert_get_error(const rawfx_filter *filter) { return state_of(filter)->error; }

static const rawfx_filter *invert_create(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity) {
    invert_state *s = (invert_state *)calloc(1, sizeof *s); /* the cast: C++ needs it */
    if (s == NULL) {
        if (error != NULL && capacity > 0) snprintf(error, capacity, "invert: out of memory");
        return NULL;
    }
    s->filter.struct_size = sizeof s->filter;
    s->filter.descriptor = descriptor;
    s->filter.filter_data = s;
    s->filter.destroy = invert_destroy;
    s->filter.set_param = invert_set_param;
    s->filter.configure = invert_configure;
    s->filter.process_video = invert_process_video;
    s->filter.process_audio = NULL;
    s->filter.reset = invert_reset;
    s->filter.get_error = invert_get_error;
    s->filter.get_extension = NULL;
    return &s->filter;
}

static const rawfx_filter_descriptor invert_descriptor = {
    sizeof(rawfx_filter_descriptor), "invert", "Invert", "1.0.0",
    "Photographic negative of an I420 frame, in place.",
    RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE,
    invert_params, 1, invert_create,
    NULL /* create_with_host (ABI 1.1): optional; the host then calls create */
};

static rawfx_status plugin_init(const rawfx_host_info *host, char *error, size_t capacity) {
    if (host->abi.major != RAWFX_ABI_MAJOR) {
        snprintf(error, capacity, "built for RawFX ABI %d.x", RAWFX_ABI_MAJOR);
        return RAWFX_ERR_VERSION;
    }
    return RAWFX_OK;
}

static void plugin_deinit(void) {}
static uint32_t plugin_filter_count(void) { return 1; }
static const rawfx_filter_descriptor *plugin_filter_descriptor(uint32_t index) {
    return index == 0 ? &invert_descriptor : NULL;
}

static const rawfx_plugin_entry entry = {
    sizeof(rawfx_plugin_entry), RAWFX_ABI_VERSION_INIT, "invert-example", "1.0.0",
    plugin_init, plugin_deinit, plugin_filter_count, plugin_filter_descriptor
};

RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }

/*
 * A plugin whose faults are chosen at compile time, for the loader's tests:
 *   -DFIXTURE_ABI_MAJOR=2 / -DFIXTURE_ABI_MINOR=99   version checks
 *   -DFIXTURE_REFUSE_HOST                            init refuses the host
 *   -DFIXTURE_NO_ENTRY                               no rawfx_get_plugin_entry
 *   -DFIXTURE_BAD_DEFAULT                            a default outside its range
 *   -DFIXTURE_ID='"stamp"'                           the filter id
 * The filter, `stamp`, adds `value` to the first luma sample of each frame (in place) and
 * refuses frames wider than `max_width` at configure, so tests can see which chain ran a
 * frame and how negotiation refusals read.
 */
#include <stdio.h>
#include <stdlib.h>
#include "rawfx.h"

#ifndef FIXTURE_ABI_MAJOR
#define FIXTURE_ABI_MAJOR RAWFX_ABI_MAJOR
#endif
#ifndef FIXTURE_ABI_MINOR
#define FIXTURE_ABI_MINOR RAWFX_ABI_MINOR
#endif
#ifndef FIXTURE_ID
#define FIXTURE_ID "stamp"
#endif
#ifdef FIXTURE_BAD_DEFAULT
#define VALUE_DEFAULT 500.0
#else
#define VALUE_DEFAULT 1.0
#endif

typedef struct stamp { rawfx_filter filter; int value; int max_width; char error[200]; } stamp;

static const rawfx_param_descriptor params[] = {
    { sizeof(rawfx_param_descriptor), "value", "Value", "Added to the first luma sample.", "",
      RAWFX_PARAM_INT, 0, VALUE_DEFAULT, 0.0, 100.0, NULL, NULL, 0 },
    { sizeof(rawfx_param_descriptor), "max_width", "Maximum width", "Frames wider than this are refused.", "px",
      RAWFX_PARAM_INT, RAWFX_PARAM_FLAG_RECONFIGURE, 4096.0, 2.0, 16384.0, NULL, NULL, 0 },
};

static stamp *of(const rawfx_filter *f) { return (stamp *)f->filter_data; }
static void destroy(const rawfx_filter *f) { free(of(f)); }
static rawfx_status set_param(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
    if (i == 0) of(f)->value = (int)v->int_value; else of(f)->max_width = (int)v->int_value;
    return RAWFX_OK;
}
static rawfx_status configure(const rawfx_filter *f, const rawfx_format *in, rawfx_negotiation *r) {
    (void)r;
    if ((int)in->video.width > of(f)->max_width) {
        snprintf(of(f)->error, sizeof of(f)->error, "width %u is over max_width %d",
                 (unsigned)in->video.width, of(f)->max_width);
        return RAWFX_ERR_UNSUPPORTED;
    }
    of(f)->error[0] = 0;
    return RAWFX_OK;
}
static rawfx_status process_video(const rawfx_filter *f, const rawfx_video_frame *in, rawfx_video_frame *out) {
    (void)in;
    out->planes[0][0] = (uint8_t)(out->planes[0][0] + of(f)->value);
    return RAWFX_OK;
}
static void reset(const rawfx_filter *f) { (void)f; }
static const char *get_error(const rawfx_filter *f) { return of(f)->error; }

static const rawfx_filter *create(const rawfx_filter_descriptor *d, char *error, size_t capacity) {
    (void)error; (void)capacity;
    stamp *s = calloc(1, sizeof *s);
    s->filter.struct_size = sizeof s->filter;
    s->filter.descriptor = d;
    s->filter.filter_data = s;
    s->filter.destroy = destroy;
    s->filter.set_param = set_param;
    s->filter.configure = configure;
    s->filter.process_video = process_video;
    s->filter.reset = reset;
    s->filter.get_error = get_error;
    s->value = 1;
    s->max_width = 4096;
    return &s->filter;
}

static const rawfx_filter_descriptor descriptor = {
    sizeof(rawfx_filter_descriptor), FIXTURE_ID, "Stamp", "1.0.0", "Test filter.",
    RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, params, 2, create
};

static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
#ifdef FIXTURE_REFUSE_HOST
    snprintf(error, capacity, "needs host ABI 1.%u or newer, host has %u.%u",
             (unsigned)(host->abi.minor + 1), (unsigned)host->abi.major, (unsigned)host->abi.minor);
    return RAWFX_ERR_VERSION;
#else
    (void)host; (void)error; (void)capacity;
    return RAWFX_OK;
#endif
}
static void deinit(void) {}
static uint32_t count(void) { return 1; }
static const rawfx_filter_descriptor *describe(uint32_t i) { return i == 0 ? &descriptor : NULL; }

static const rawfx_plugin_entry entry = {
    sizeof(rawfx_plugin_entry), { FIXTURE_ABI_MAJOR, FIXTURE_ABI_MINOR }, "fixture", "1.0.0",
    init, deinit, count, describe
};

#ifndef FIXTURE_NO_ENTRY
RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return &entry; }
#else
RAWFX_EXPORT const rawfx_plugin_entry *some_other_symbol(void) { return &entry; }
#endif

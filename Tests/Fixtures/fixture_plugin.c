/*
 * A plugin whose faults are chosen at compile time, for the loader's tests:
 *   -DFIXTURE_ABI_MAJOR=2 / -DFIXTURE_ABI_MINOR=99   version checks
 *   -DFIXTURE_REFUSE_HOST                            init refuses the host
 *   -DFIXTURE_REQUIRE_HOST_MINOR=1                   init refuses a host older than 1.1
 *   -DFIXTURE_NO_ENTRY                               no rawfx_get_plugin_entry
 *   -DFIXTURE_BAD_DEFAULT                            a default outside its range
 *   -DFIXTURE_VALUE_MIN=x -DFIXTURE_VALUE_MAX=y      the range of `value` (0 and 100)
 *   -DFIXTURE_PARAM_STRUCT_SIZE=n                    the first parameter's struct_size (the
 *                                                    array's stride to a host; sizeof)
 *   -DFIXTURE_ID='"stamp"'                           the filter id
 *   -DFIXTURE_SECOND_ID='"extra"'                    a second filter (a copy of stamp)
 *   -DFIXTURE_GROWN                                  entry and descriptors carry fields of a
 *                                                    future minor (garbage a host must not read)
 *   -DFIXTURE_ENTRY_SIZE=16                          the entry's struct_size
 * It compiles against the 1.1 header and against the 1.0 one (Fixtures/abi-1.0 first on the
 * include path). It exports what it saw, for the tests to read with dlsym: how often init and
 * deinit ran, the host's ABI minor and version, its own path, and the name of the 1.1 host
 * object, through which it also logs one line ("init").
 * The filter, `stamp`, adds `value` to the first luma sample of each frame (in place) and
 * refuses frames wider than `max_width` at configure, so tests can see which chain ran a
 * frame and how negotiation refusals read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#ifndef FIXTURE_VALUE_MIN
#define FIXTURE_VALUE_MIN 0.0
#endif
#ifndef FIXTURE_VALUE_MAX
#define FIXTURE_VALUE_MAX 100.0
#endif
#ifndef FIXTURE_PARAM_STRUCT_SIZE
#define FIXTURE_PARAM_STRUCT_SIZE sizeof(rawfx_param_descriptor)
#endif
static const rawfx_param_descriptor params[] = {
    { FIXTURE_PARAM_STRUCT_SIZE, "value", "Value", "Added to the first luma sample.", "",
      RAWFX_PARAM_INT, 0, VALUE_DEFAULT, FIXTURE_VALUE_MIN, FIXTURE_VALUE_MAX, NULL, NULL, 0 },
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

/* A future minor's fields after the known ones: pointers no host may follow. */
#define FUTURE_FIELDS { (void *)(uintptr_t)0xdead0001u, (void *)(uintptr_t)0xdead0002u }
typedef struct grown_descriptor { rawfx_filter_descriptor known; void *future[2]; } grown_descriptor;
typedef struct grown_entry { rawfx_plugin_entry known; void *future[2]; } grown_entry;

#ifdef FIXTURE_GROWN
#define DESCRIPTOR_SIZE sizeof(grown_descriptor)
#else
#define DESCRIPTOR_SIZE sizeof(rawfx_filter_descriptor)
#endif
#define DESCRIBE(id) { DESCRIPTOR_SIZE, id, "Stamp", "1.0.0", "Test filter.", \
                       RAWFX_MEDIA_VIDEO, RAWFX_PROCESS_IN_PLACE, params, 2, create }
#ifdef FIXTURE_GROWN
static const grown_descriptor descriptors[] = {
    { DESCRIBE(FIXTURE_ID), FUTURE_FIELDS },
#ifdef FIXTURE_SECOND_ID
    { DESCRIBE(FIXTURE_SECOND_ID), FUTURE_FIELDS },
#endif
};
#define DESCRIPTOR(i) (&descriptors[i].known)
#else
static const rawfx_filter_descriptor descriptors[] = {
    DESCRIBE(FIXTURE_ID),
#ifdef FIXTURE_SECOND_ID
    DESCRIBE(FIXTURE_SECOND_ID),
#endif
};
#define DESCRIPTOR(i) (&descriptors[i])
#endif
#define FILTER_COUNT ((uint32_t)(sizeof descriptors / sizeof descriptors[0]))

/* What the plugin saw, for the tests (read with dlsym). */
RAWFX_EXPORT int fixture_init_calls, fixture_deinit_calls;
/* init while initialised, or deinit while not: the host broke init/deinit alternation. */
RAWFX_EXPORT int fixture_overlaps;
static int initialised;
RAWFX_EXPORT uint32_t fixture_host_minor, fixture_host_info_size;
RAWFX_EXPORT char fixture_host_version[64], fixture_plugin_path[4096], fixture_host_object_name[64];
RAWFX_EXPORT const uint32_t fixture_descriptor_size = sizeof(rawfx_filter_descriptor);

static rawfx_status init(const rawfx_host_info *host, char *error, size_t capacity) {
    fixture_init_calls++;
    if (initialised) fixture_overlaps++;
    fixture_host_minor = host->abi.minor;
    fixture_host_info_size = host->struct_size;
    snprintf(fixture_host_version, sizeof fixture_host_version, "%s", host->version);
#if RAWFX_ABI_MINOR >= 1
    /* A 1.1 field is read only when the host's struct_size covers it. */
    if (host->struct_size >= offsetof(rawfx_host_info, host) + sizeof host->host) {
        snprintf(fixture_plugin_path, sizeof fixture_plugin_path, "%s", host->plugin_path);
        if (host->host != NULL) {
            snprintf(fixture_host_object_name, sizeof fixture_host_object_name, "%s", host->host->name);
            host->host->log(host->host, RAWFX_LOG_INFO, "init");
        }
    }
#endif
#ifdef FIXTURE_REFUSE_HOST
    snprintf(error, capacity, "needs host ABI 1.%u or newer, host has %u.%u",
             (unsigned)(host->abi.minor + 1), (unsigned)host->abi.major, (unsigned)host->abi.minor);
    return RAWFX_ERR_VERSION;
#elif defined(FIXTURE_REQUIRE_HOST_MINOR)
    if (host->abi.major != RAWFX_ABI_MAJOR || host->abi.minor < FIXTURE_REQUIRE_HOST_MINOR) {
        snprintf(error, capacity, "needs host ABI 1.%u or newer, host has %u.%u",
                 (unsigned)FIXTURE_REQUIRE_HOST_MINOR, (unsigned)host->abi.major, (unsigned)host->abi.minor);
        return RAWFX_ERR_VERSION;
    }
    initialised = 1;
    return RAWFX_OK;
#else
    (void)error; (void)capacity;
    initialised = 1;
    return RAWFX_OK;
#endif
}
static void deinit(void) {
    fixture_deinit_calls++;
    if (!initialised) fixture_overlaps++;
    initialised = 0;
}
static uint32_t count(void) { return FILTER_COUNT; }
static const rawfx_filter_descriptor *describe(uint32_t i) { return i < FILTER_COUNT ? DESCRIPTOR(i) : NULL; }

#define ENTRY_FIELDS { FIXTURE_ABI_MAJOR, FIXTURE_ABI_MINOR }, "fixture", "1.0.0", init, deinit, count, describe
#ifdef FIXTURE_GROWN
#ifndef FIXTURE_ENTRY_SIZE
#define FIXTURE_ENTRY_SIZE sizeof(grown_entry)
#endif
static const grown_entry grown = { { FIXTURE_ENTRY_SIZE, ENTRY_FIELDS }, FUTURE_FIELDS };
#define ENTRY (&grown.known)
#else
#ifndef FIXTURE_ENTRY_SIZE
#define FIXTURE_ENTRY_SIZE sizeof(rawfx_plugin_entry)
#endif
static const rawfx_plugin_entry entry = { FIXTURE_ENTRY_SIZE, ENTRY_FIELDS };
#define ENTRY (&entry)
#endif

#ifndef FIXTURE_NO_ENTRY
RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return ENTRY; }
#else
RAWFX_EXPORT const rawfx_plugin_entry *some_other_symbol(void) { return ENTRY; }
#endif

/*
 * rawfx/plugin_helpers.h — optional helpers for writing a RawFX plugin in C or C++.
 *
 * Header-only C99 that also compiles as C++11 (no designated initialisers: the
 * descriptor macros fill fields in declaration order). Nothing here is part of
 * the ABI: a plugin may use all of it, some of it, or none. It removes what
 * every C plugin otherwise writes again:
 *
 *   RAWFX_PLUGIN_ENTRY(name, version, &descriptor, ...)
 *       the exported rawfx_get_plugin_entry, init (checks the host's major and
 *       RAWFX_HELPER_MIN_HOST_MINOR, records the plugin-file host and the
 *       plugin's path), deinit, filter_count and filter_descriptor.
 *       RAWFX_PLUGIN_ENTRY_WITH(name, version, init_hook, deinit_hook, ...)
 *       adds the plugin's own init/deinit (either may be NULL).
 *   RAWFX_FILTER_DESCRIPTOR(id, name, version, description, kind, processing,
 *                           params, create_with_host)
 *       a descriptor whose 1.0 `create` is rawfx_create_without_host, so the
 *       filter loads in a 1.0 host too (with a NULL host). `params` is an
 *       array of at least one parameter (its size is counted).
 *   RAWFX_INT_PARAM, RAWFX_FLOAT_PARAM, RAWFX_BOOL_PARAM, RAWFX_ENUM_PARAM,
 *   RAWFX_STRING_PARAM
 *       rawfx_param_descriptor initialisers.
 *   rawfx_instance_base (embed it first in the instance struct):
 *       RAWFX_FILTER_FUNCTIONS  the filter's function table, for:
 *       rawfx_instance_new    calloc + fill the rawfx_filter + keep the host
 *       rawfx_instance_ready  set every parameter to its default (set_param)
 *       rawfx_instance_free   free
 *       rawfx_fail            "<filter id>: <message>" into the error buffer,
 *                             returns the status; never allocates
 *       rawfx_clear_error, rawfx_instance_get_error (the get_error function)
 *       rawfx_log             a formatted line through the host, if there is one
 *       rawfx_check_param     set_param's validation against the descriptor
 *   rawfx_check_audio_input, rawfx_check_video_input, rawfx_check_negotiation,
 *   rawfx_audio_frame_is_complete, rawfx_video_frame_is_complete
 *       struct_size and media-kind checks with messages that say what was
 *       expected.
 *   rawfx_copy_audio_metadata, rawfx_copy_video_metadata
 *       what an out-of-place filter carries from `in` to `out`.
 *   rawfx_format_message
 *       vsnprintf into a fixed buffer.
 *
 * Real time: rawfx_fail, rawfx_log, rawfx_format_message, rawfx_check_param,
 * the frame checks and the metadata copies neither allocate nor lock, so they
 * may run in process, reset and set_param. They format with vsnprintf into a
 * fixed buffer, which in glibc allocates nothing for %s, %c, %d, %u, %ld, %lld,
 * %zu and %x conversions; keep to those there (rawfx_check_param prints floats
 * with %g only for FLOAT parameters, on a refusal). rawfx_instance_new and
 * rawfx_instance_free allocate: create and destroy only.
 *
 * C++: include it as it is (the functions are static inline, in extern "C");
 * use the initialiser macros where C code would use designated initialisers,
 * which C++ lacks before C++20, and cast what rawfx_instance_new returns.
 * docs/examples/volume.c compiles both ways (PluginHelperTests).
 *
 * A complete filter (`volume`: multiplies 16-bit audio in place):
 *
 *     #include "rawfx/plugin_helpers.h"
 *
 *     typedef struct volume { rawfx_instance_base base; double factor; } volume;
 *
 *     static const rawfx_param_descriptor volume_params[] = {
 *         RAWFX_FLOAT_PARAM("factor", "Factor", "Linear gain.", "", 0, 1.0, 0.0, 4.0),
 *     };
 *
 *     static volume *volume_of(const rawfx_filter *f) { return (volume *)f->filter_data; }
 *
 *     static void volume_destroy(const rawfx_filter *f) { rawfx_instance_free(&volume_of(f)->base); }
 *
 *     static rawfx_status volume_set_param(const rawfx_filter *f, uint32_t i, const rawfx_param_value *v) {
 *         rawfx_status status = rawfx_check_param(&volume_of(f)->base, i, v);
 *         if (status == RAWFX_OK) volume_of(f)->factor = v->float_value;
 *         return status;
 *     }
 *
 *     static rawfx_status volume_configure(const rawfx_filter *f, const rawfx_format *in,
 *                                          rawfx_negotiation *result) {
 *         rawfx_status status = rawfx_check_audio_input(&volume_of(f)->base, in, 8);
 *         return status != RAWFX_OK ? status : rawfx_check_negotiation(&volume_of(f)->base, result);
 *     }
 *
 *     static rawfx_status volume_process(const rawfx_filter *f, const rawfx_audio_frame *in,
 *                                        rawfx_audio_frame *out) {
 *         (void)in; // in place: out == in
 *         size_t n = (size_t)out->frame_count * out->channels;
 *         for (size_t i = 0; i < n; i++) {
 *             double v = out->samples[i] * volume_of(f)->factor;
 *             out->samples[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
 *         }
 *         return RAWFX_OK;
 *     }
 *
 *     static void volume_reset(const rawfx_filter *f) { (void)f; }
 *
 *     static const rawfx_filter volume_functions = RAWFX_FILTER_FUNCTIONS(
 *         volume_destroy, volume_set_param, volume_configure, NULL, volume_process, volume_reset, NULL, NULL);
 *
 *     static const rawfx_filter *volume_create(const rawfx_filter_descriptor *d, const rawfx_host *host,
 *                                              char *error, size_t capacity) {
 *         volume *v = (volume *)rawfx_instance_new(sizeof *v, d, host, &volume_functions, error, capacity);
 *         return v != NULL ? rawfx_instance_ready(&v->base, error, capacity) : NULL; // factor = 1.0
 *     }
 *
 *     static const rawfx_filter_descriptor volume_descriptor = RAWFX_FILTER_DESCRIPTOR(
 *         "volume", "Volume", "1.0.0", "Multiplies the samples by a factor.",
 *         RAWFX_MEDIA_AUDIO, RAWFX_PROCESS_IN_PLACE, volume_params, volume_create);
 *
 *     RAWFX_PLUGIN_ENTRY("volume-example", "1.0.0", &volume_descriptor)
 *
 * docs/examples/volume.c is this filter as a file, with logging; the shipped C plugins
 * (Plugins/Speex, Plugins/YUV) use the rest.
 *
 * Before including, a plugin may define:
 *   RAWFX_HELPER_MIN_HOST_MINOR  the oldest host minor init accepts (default 0:
 *                                any 1.x host; create_with_host is then used
 *                                when the host has it, create otherwise)
 *   RAWFX_HELPER_ERROR_CAPACITY  bytes of each instance's error buffer (512;
 *                                the same in every file of one plugin)
 */
#ifndef RAWFX_PLUGIN_HELPERS_H
#define RAWFX_PLUGIN_HELPERS_H

#include "../rawfx.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RAWFX_HELPER_MIN_HOST_MINOR
#define RAWFX_HELPER_MIN_HOST_MINOR 0
#endif
#ifndef RAWFX_HELPER_ERROR_CAPACITY
#define RAWFX_HELPER_ERROR_CAPACITY 512
#endif
/* The longest plugin path init keeps (Linux's PATH_MAX). */
#define RAWFX_HELPER_PATH_CAPACITY 4096

#if defined(__GNUC__) || defined(__clang__)
#  define RAWFX_HELPER_PRINTF(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#  define RAWFX_HELPER_HIDDEN __attribute__((visibility("hidden")))
#else
#  define RAWFX_HELPER_PRINTF(format_index, first_arg)
#  define RAWFX_HELPER_HIDDEN
#endif

/* The byte just past `member`: a struct_size must reach it for the member to be used. */
#define RAWFX_FIELD_END(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* The number of elements of an array (not a pointer). */
#define RAWFX_ARRAY_COUNT(array) ((uint32_t)(sizeof(array) / sizeof((array)[0])))

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- messages -- */

/* Formats into a fixed buffer, cut to `capacity` bytes (NUL included). Does
 * nothing when buffer is NULL or capacity 0. See "Real time" above. */
static inline void rawfx_format_message(char *buffer, size_t capacity, const char *format, ...)
    RAWFX_HELPER_PRINTF(3, 4);
static inline void rawfx_format_message_v(char *buffer, size_t capacity, const char *format, va_list args)
{
    if (buffer == NULL || capacity == 0)
        return;
    vsnprintf(buffer, capacity, format, args);
}
static inline void rawfx_format_message(char *buffer, size_t capacity, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    rawfx_format_message_v(buffer, capacity, format, args);
    va_end(args);
}

/* ------------------------------------------------------------- instance -- */

/* The part of an instance every filter has. Put it first in the instance's
 * struct: filter.filter_data points at the instance, which is also the base. */
typedef struct rawfx_instance_base {
    rawfx_filter filter;        /* what the host holds */
    const rawfx_host *host;     /* NULL when created through the 1.0 `create` */
    char error[RAWFX_HELPER_ERROR_CAPACITY]; /* get_error's message; "" after success */
} rawfx_instance_base;

/* The base of an instance made by rawfx_instance_new, or NULL. */
static inline rawfx_instance_base *rawfx_instance_base_of(const rawfx_filter *filter)
{
    return filter != NULL ? (rawfx_instance_base *)filter->filter_data : NULL;
}

/* get_error for every instance made by rawfx_instance_new. */
static inline const char *rawfx_instance_get_error(const rawfx_filter *filter)
{
    rawfx_instance_base *base = rawfx_instance_base_of(filter);
    return base != NULL ? base->error : "";
}

/* The id the messages start with. */
static inline const char *rawfx_instance_id(const rawfx_instance_base *base)
{
    const rawfx_filter_descriptor *d = base->filter.descriptor;
    return d != NULL && d->id != NULL ? d->id : "filter";
}

/* A host is kept only when it has every 1.1 function (struct_size), so the
 * helpers can call them without checking again. */
static inline const rawfx_host *rawfx_usable_host(const rawfx_host *host)
{
    return host != NULL && host->struct_size >= RAWFX_FIELD_END(rawfx_host, request_callback) ? host : NULL;
}

/* A rawfx_filter holding only the filter's functions, in field order, for
 * rawfx_instance_new; NULL for the optional ones and for the process function
 * of the other media kind. get_error is rawfx_instance_get_error. */
#define RAWFX_FILTER_FUNCTIONS(destroy, set_param, configure, process_video, process_audio, reset, \
                               get_extension, on_callback) \
    { (uint32_t)sizeof(rawfx_filter), NULL, NULL, destroy, set_param, configure, process_video, process_audio, \
      reset, rawfx_instance_get_error, get_extension, on_callback }

/* [control] Allocates a zeroed instance of `size` bytes (the plugin's struct,
 * which starts with a rawfx_instance_base) and fills its rawfx_filter from
 * `functions` (RAWFX_FILTER_FUNCTIONS) plus struct_size, descriptor and
 * filter_data. Keeps `host` (NULL is fine: a 1.0 host). On failure writes
 * "<id>: out of memory" into `error` and returns NULL. Finish create with
 * rawfx_instance_ready. */
static inline void *rawfx_instance_new(size_t size, const rawfx_filter_descriptor *descriptor,
                                       const rawfx_host *host, const rawfx_filter *functions,
                                       char *error, size_t error_capacity)
{
    if (size < sizeof(rawfx_instance_base)) {
        rawfx_format_message(error, error_capacity, "%s: instance size %zu is smaller than rawfx_instance_base (%zu)",
                             descriptor && descriptor->id ? descriptor->id : "filter", size,
                             sizeof(rawfx_instance_base));
        return NULL;
    }
    rawfx_instance_base *base = (rawfx_instance_base *)calloc(1, size);
    if (base == NULL) {
        rawfx_format_message(error, error_capacity, "%s: out of memory creating an instance (%zu bytes)",
                             descriptor && descriptor->id ? descriptor->id : "filter", size);
        return NULL;
    }
    base->filter = *functions;
    base->filter.struct_size = (uint32_t)sizeof(rawfx_filter);
    base->filter.descriptor = descriptor;
    base->filter.filter_data = base;
    if (base->filter.get_error == NULL)
        base->filter.get_error = rawfx_instance_get_error;
    base->host = rawfx_usable_host(host);
    return base;
}

/* [control] Frees an instance made by rawfx_instance_new (after the plugin
 * released what it owns). */
static inline void rawfx_instance_free(rawfx_instance_base *base)
{
    free(base);
}

static inline void rawfx_clear_error(rawfx_instance_base *base)
{
    base->error[0] = '\0';
}

/* Writes "<filter id>: <message>" for get_error and returns `status`, so a
 * failure reads `return rawfx_fail(&self->base, RAWFX_ERR_..., "...", ...);`.
 * Real-time safe (see above). */
static inline rawfx_status rawfx_fail(rawfx_instance_base *base, rawfx_status status, const char *format, ...)
    RAWFX_HELPER_PRINTF(3, 4);
static inline rawfx_status rawfx_fail(rawfx_instance_base *base, rawfx_status status, const char *format, ...)
{
    int prefix = snprintf(base->error, sizeof base->error, "%s: ", rawfx_instance_id(base));
    if (prefix < 0 || (size_t)prefix >= sizeof base->error)
        prefix = 0;
    va_list args;
    va_start(args, format);
    rawfx_format_message_v(base->error + prefix, sizeof base->error - (size_t)prefix, format, args);
    va_end(args);
    return status;
}

/* [control] The end of create: sets every parameter to its descriptor's
 * default through the filter's own set_param (so the defaults live in one
 * place), then returns the filter. If set_param refuses a default, writes why
 * into `error`, destroys the instance and returns NULL. A STRING parameter
 * without a default_string is left unset. */
static inline const rawfx_filter *rawfx_instance_ready(rawfx_instance_base *base, char *error, size_t error_capacity)
{
    const rawfx_filter_descriptor *d = base->filter.descriptor;
    for (uint32_t i = 0; i < d->param_count; i++) {
        const rawfx_param_descriptor *p = &d->params[i];
        if (p->type == RAWFX_PARAM_STRING && p->default_string == NULL)
            continue;
        rawfx_param_value value;
        memset(&value, 0, sizeof value);
        value.struct_size = (uint32_t)sizeof value;
        value.type = p->type;
        value.int_value = (int64_t)p->default_value;
        value.float_value = p->default_value;
        value.string_value = p->default_string;
        if (base->filter.set_param(&base->filter, i, &value) != RAWFX_OK) {
            rawfx_format_message(error, error_capacity, "%s: the default of parameter %s was refused: %s",
                                 rawfx_instance_id(base), p->id, base->error);
            base->filter.destroy(&base->filter);
            return NULL;
        }
    }
    rawfx_clear_error(base);
    return &base->filter;
}

/* [any] Logs a formatted line through the instance's host (which names the
 * filter in front of it). Real-time safe: formats on the stack, and the host's
 * log never blocks. Without a host (a 1.0 host) the line is dropped. Not per
 * frame: the host's ring drops lines when it is full. */
static inline void rawfx_log(const rawfx_instance_base *base, rawfx_log_severity severity, const char *format, ...)
    RAWFX_HELPER_PRINTF(3, 4);
static inline void rawfx_log(const rawfx_instance_base *base, rawfx_log_severity severity, const char *format, ...)
{
    if (base->host == NULL)
        return;
    char line[RAWFX_LOG_MESSAGE_MAX];
    va_list args;
    va_start(args, format);
    rawfx_format_message_v(line, sizeof line, format, args);
    va_end(args);
    base->host->log(base->host, severity, line);
}

/* A `create` for the 1.0 ABI that calls the descriptor's create_with_host with
 * a NULL host. RAWFX_FILTER_DESCRIPTOR uses it. */
static inline const rawfx_filter *rawfx_create_without_host(const rawfx_filter_descriptor *descriptor,
                                                            char *error, size_t error_capacity)
{
    if (descriptor == NULL || descriptor->struct_size < RAWFX_FIELD_END(rawfx_filter_descriptor, create_with_host)
        || descriptor->create_with_host == NULL) {
        rawfx_format_message(error, error_capacity, "%s: the descriptor has no create_with_host",
                             descriptor && descriptor->id ? descriptor->id : "filter");
        return NULL;
    }
    return descriptor->create_with_host(descriptor, NULL, error, error_capacity);
}

/* ----------------------------------------------------------- parameters -- */

/* rawfx_param_descriptor initialisers, in field order (C and C++). `flags` is
 * RAWFX_PARAM_FLAG_*; `values` is an array of names (its size is counted). */
#define RAWFX_INT_PARAM(id, name, help, unit, flags, default_value, min_value, max_value) \
    { (uint32_t)sizeof(rawfx_param_descriptor), id, name, help, unit, RAWFX_PARAM_INT, flags, \
      default_value, min_value, max_value, NULL, NULL, 0 }
#define RAWFX_FLOAT_PARAM(id, name, help, unit, flags, default_value, min_value, max_value) \
    { (uint32_t)sizeof(rawfx_param_descriptor), id, name, help, unit, RAWFX_PARAM_FLOAT, flags, \
      default_value, min_value, max_value, NULL, NULL, 0 }
#define RAWFX_BOOL_PARAM(id, name, help, flags, default_value) \
    { (uint32_t)sizeof(rawfx_param_descriptor), id, name, help, "", RAWFX_PARAM_BOOL, flags, \
      default_value, 0, 1, NULL, NULL, 0 }
#define RAWFX_ENUM_PARAM(id, name, help, unit, flags, default_index, values) \
    { (uint32_t)sizeof(rawfx_param_descriptor), id, name, help, unit, RAWFX_PARAM_ENUM, flags, \
      default_index, 0, RAWFX_ARRAY_COUNT(values) - 1, NULL, values, RAWFX_ARRAY_COUNT(values) }
#define RAWFX_STRING_PARAM(id, name, help, flags, default_string) \
    { (uint32_t)sizeof(rawfx_param_descriptor), id, name, help, "", RAWFX_PARAM_STRING, flags, \
      0, 0, 0, default_string, NULL, 0 }

/* A filter descriptor in field order, `params` an array (its size is counted).
 * `create` is rawfx_create_without_host, so a 1.0 host gets the same filter
 * with a NULL host. */
#define RAWFX_FILTER_DESCRIPTOR(id, name, version, description, media_kind, processing, params, create_with_host) \
    { (uint32_t)sizeof(rawfx_filter_descriptor), id, name, version, description, media_kind, processing, \
      params, RAWFX_ARRAY_COUNT(params), rawfx_create_without_host, create_with_host }

/* [process or control] Checks a value against parameter `index` of the
 * instance's descriptor: the index, the type, and the range (INT, FLOAT), 0/1
 * (BOOL) or the index (ENUM). The host validated it already; this keeps a
 * filter safe from another host. Real-time safe. */
static inline rawfx_status rawfx_check_param(rawfx_instance_base *base, uint32_t index, const rawfx_param_value *value)
{
    const rawfx_filter_descriptor *d = base->filter.descriptor;
    rawfx_clear_error(base);
    if (index >= d->param_count)
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "no parameter at index %u (it has %u)",
                          (unsigned)index, (unsigned)d->param_count);
    const rawfx_param_descriptor *p = &d->params[index];
    if (value == NULL || value->struct_size < RAWFX_FIELD_END(rawfx_param_value, string_value))
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s: missing value, or its struct_size is too small",
                          p->id);
    if (value->type != p->type)
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s: the value has type %u; the parameter has type %u",
                          p->id, (unsigned)value->type, (unsigned)p->type);
    const int64_t v = value->int_value;
    switch (p->type) {
    case RAWFX_PARAM_INT:
        if ((double)v < p->min_value || (double)v > p->max_value)
            return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s=%lld is out of range; accepted: %lld to %lld%s%s",
                              p->id, (long long)v, (long long)p->min_value, (long long)p->max_value,
                              p->unit != NULL && p->unit[0] ? " " : "", p->unit != NULL ? p->unit : "");
        break;
    case RAWFX_PARAM_FLOAT:
        if (!(value->float_value >= p->min_value && value->float_value <= p->max_value))
            return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s=%g is out of range; accepted: %g to %g%s%s",
                              p->id, value->float_value, p->min_value, p->max_value,
                              p->unit != NULL && p->unit[0] ? " " : "", p->unit != NULL ? p->unit : "");
        break;
    case RAWFX_PARAM_BOOL:
        if (v != 0 && v != 1)
            return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s=%lld is not a boolean; accepted: 0 or 1",
                              p->id, (long long)v);
        break;
    case RAWFX_PARAM_ENUM:
        if (v < 0 || v >= (int64_t)p->enum_count)
            return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "%s: index %lld is not one of its %u values (0 to %u)",
                              p->id, (long long)v, (unsigned)p->enum_count,
                              (unsigned)(p->enum_count > 0 ? p->enum_count - 1 : 0));
        break;
    default:
        break;
    }
    return RAWFX_OK;
}

/* -------------------------------------------------------- format checks -- */

/* [control] The part of both input checks below: `input` is of the filter's
 * kind, and it and its member of that kind are complete. */
static inline rawfx_status rawfx_check_input_kind(rawfx_instance_base *base, const rawfx_format *input,
                                                  rawfx_media_kind kind)
{
    const int video = kind == RAWFX_MEDIA_VIDEO;
    size_t needed = video ? RAWFX_FIELD_END(rawfx_format, video) : RAWFX_FIELD_END(rawfx_format, audio);
    if (input == NULL || input->struct_size < needed)
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT,
                          "configure needs a complete rawfx_format (NULL, or struct_size too small)");
    if (input->kind != kind)
        return rawfx_fail(base, RAWFX_ERR_UNSUPPORTED, "is %s filter and cannot process %s frames; place it in %s chain",
                          video ? "a video" : "an audio",
                          input->kind == RAWFX_MEDIA_VIDEO ? "video" : input->kind == RAWFX_MEDIA_AUDIO ? "audio" : "unknown-kind",
                          video ? "a video (I420)" : "an audio (interleaved 16-bit PCM)");
    uint32_t member_size = video ? input->video.struct_size : input->audio.struct_size;
    size_t member_needed = video ? RAWFX_FIELD_END(rawfx_video_format, rotation)
                                 : RAWFX_FIELD_END(rawfx_audio_format, channels);
    if (member_size < member_needed)
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT, "the %s format is incomplete (struct_size %u, needs %u)",
                          video ? "video" : "audio", (unsigned)member_size, (unsigned)member_needed);
    return RAWFX_OK;
}

/* [control] Checks what configure reads of an audio input: the structs are
 * complete, the kind is audio, 1..max_channels channels. On success the
 * caller may read input->audio. */
static inline rawfx_status rawfx_check_audio_input(rawfx_instance_base *base, const rawfx_format *input,
                                                   uint32_t max_channels)
{
    rawfx_status status = rawfx_check_input_kind(base, input, RAWFX_MEDIA_AUDIO);
    if (status != RAWFX_OK)
        return status;
    if (input->audio.channels == 0 || input->audio.channels > max_channels)
        return rawfx_fail(base, RAWFX_ERR_UNSUPPORTED,
                          "%u channels is not supported; accepted: 1 to %u interleaved channels",
                          (unsigned)input->audio.channels, (unsigned)max_channels);
    return RAWFX_OK;
}

/* [control] Checks what configure reads of a video input: the structs are
 * complete, the kind is video, the pixel format I420, the size 1..max_size
 * both ways. On success the caller may read input->video. */
static inline rawfx_status rawfx_check_video_input(rawfx_instance_base *base, const rawfx_format *input,
                                                   uint32_t max_size)
{
    rawfx_status status = rawfx_check_input_kind(base, input, RAWFX_MEDIA_VIDEO);
    if (status != RAWFX_OK)
        return status;
    const rawfx_video_format *v = &input->video;
    if (v->pixel_format != RAWFX_PIXEL_I420)
        return rawfx_fail(base, RAWFX_ERR_UNSUPPORTED,
                          "pixel format %u is not supported; this filter accepts only I420 (RAWFX_PIXEL_I420 = %u)",
                          (unsigned)v->pixel_format, (unsigned)RAWFX_PIXEL_I420);
    if (v->width == 0 || v->height == 0 || v->width > max_size || v->height > max_size)
        return rawfx_fail(base, v->width == 0 || v->height == 0 ? RAWFX_ERR_INVALID_ARGUMENT : RAWFX_ERR_UNSUPPORTED,
                          "input size %ux%u is not supported; width and height must be 1 to %u",
                          (unsigned)v->width, (unsigned)v->height, (unsigned)max_size);
    return RAWFX_OK;
}

/* [control] Checks that configure's result has room for every field the
 * filter may write: block_frames, max_output_frames, latency, and the output
 * format of the input's kind. */
static inline rawfx_status rawfx_check_negotiation(rawfx_instance_base *base, const rawfx_negotiation *result)
{
    if (result == NULL || result->struct_size < RAWFX_FIELD_END(rawfx_negotiation, latency))
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT,
                          "configure needs a complete rawfx_negotiation (NULL, or struct_size too small)");
    const rawfx_format *out = &result->output;
    int complete = out->kind == RAWFX_MEDIA_VIDEO
        ? out->struct_size >= RAWFX_FIELD_END(rawfx_format, video)
              && out->video.struct_size >= RAWFX_FIELD_END(rawfx_video_format, rotation)
        : out->struct_size >= RAWFX_FIELD_END(rawfx_format, audio)
              && out->audio.struct_size >= RAWFX_FIELD_END(rawfx_audio_format, channels);
    if (!complete)
        return rawfx_fail(base, RAWFX_ERR_INVALID_ARGUMENT,
                          "the negotiation's output format is incomplete (struct_size too small)");
    return RAWFX_OK;
}

/* [process] 1 when a frame the host passed carries every 1.0 field. */
static inline int rawfx_audio_frame_is_complete(const rawfx_audio_frame *frame)
{
    return frame != NULL && frame->struct_size >= RAWFX_FIELD_END(rawfx_audio_frame, timestamp_us)
        && frame->samples != NULL;
}
static inline int rawfx_video_frame_is_complete(const rawfx_video_frame *frame)
{
    return frame != NULL && frame->struct_size >= RAWFX_FIELD_END(rawfx_video_frame, timestamp_us);
}

/* [process] What an out-of-place filter carries over from `in` (nothing when
 * in == out). The filter writes the rest (sizes, counts, rates). */
static inline void rawfx_copy_audio_metadata(const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    if (in == out)
        return;
    out->timestamp_us = in->timestamp_us;
    out->source = in->source;
    out->user_id = in->user_id;
    out->flags = in->flags;
}
static inline void rawfx_copy_video_metadata(const rawfx_video_frame *in, rawfx_video_frame *out)
{
    if (in == out)
        return;
    out->color_range = in->color_range;
    out->rotation = in->rotation;
    out->timestamp_us = in->timestamp_us;
}

/* ---------------------------------------------------------------- entry -- */

/* [loader] Whether a host of ABI `host_abi` can run a plugin that needs at
 * least minor `minimum_minor` of this header's major. */
static inline int rawfx_host_abi_is_enough(rawfx_abi_version host_abi, uint32_t minimum_minor)
{
    return host_abi.major == RAWFX_ABI_MAJOR && host_abi.minor >= minimum_minor;
}

/* A plugin that is also linked into apps as a built-in (docs/plugin-abi.md, "Built-in
 * plugins") shares one image with other plugins, so its entry cannot be the ABI symbol and
 * its helper functions need names of their own: its build defines
 * RAWFX_PLUGIN_SYMBOL_PREFIX (e.g. rawfx_yuv) in every file of the plugin. The entry is then
 * <prefix>_plugin_entry (hidden: reached only from inside the image), and the .so gets
 * rawfx_get_plugin_entry from RAWFX_EXPORT_PLUGIN_ENTRY in a file only the .so links. */
#define RAWFX_HELPER_CONCAT_(a, b) a##b
#define RAWFX_HELPER_CONCAT(a, b) RAWFX_HELPER_CONCAT_(a, b)
#ifdef RAWFX_PLUGIN_SYMBOL_PREFIX
#  define rawfx_plugin_file_host RAWFX_HELPER_CONCAT(RAWFX_PLUGIN_SYMBOL_PREFIX, _plugin_file_host)
#  define rawfx_plugin_file_path RAWFX_HELPER_CONCAT(RAWFX_PLUGIN_SYMBOL_PREFIX, _plugin_file_path)
#  define RAWFX_HELPER_ENTRY_DEFINITION RAWFX_HELPER_HIDDEN const rawfx_plugin_entry *RAWFX_HELPER_CONCAT(RAWFX_PLUGIN_SYMBOL_PREFIX, _plugin_entry)(void)
#else
#  define RAWFX_HELPER_ENTRY_DEFINITION RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void)
#endif

/* The .so's one export over a plugin entry named `named_entry` (a built-in's
 * <prefix>_plugin_entry, C or Swift): write it alone in a file that only the .so links. */
#define RAWFX_EXPORT_PLUGIN_ENTRY(named_entry) \
    const rawfx_plugin_entry *named_entry(void); \
    RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void) { return named_entry(); }

/* The plugin-file host and the plugin's own path, as init recorded them
 * (RAWFX_PLUGIN_ENTRY defines these). The host is NULL before init, after the
 * last deinit, with a 1.0 host, and from the moment a second host initialises
 * the file (two registries in one process) until the last deinit: deinit does
 * not say which host lets go, so the helper cannot tell which one is still
 * valid. The path is "" when the host gave none. [any] after init. */
RAWFX_HELPER_HIDDEN const rawfx_host *rawfx_plugin_file_host(void);
RAWFX_HELPER_HIDDEN const char *rawfx_plugin_file_path(void);

/* The plugin's whole entry: RAWFX_PLUGIN_ENTRY_WITH without hooks. */
#define RAWFX_PLUGIN_ENTRY(plugin_name, plugin_version, ...) \
    RAWFX_PLUGIN_ENTRY_WITH(plugin_name, plugin_version, NULL, NULL, __VA_ARGS__)

/* Defines rawfx_get_plugin_entry (or, with RAWFX_PLUGIN_SYMBOL_PREFIX,
 * <prefix>_plugin_entry) and everything behind it. Write it once, at
 * file scope, after the descriptors:
 *   init_hook    rawfx_status (*)(const rawfx_host_info *, char *error, size_t capacity),
 *                called after the version checks, or NULL
 *   deinit_hook  void (*)(void), called first in deinit, or NULL
 *   ...          pointers to the filter descriptors */
#define RAWFX_PLUGIN_ENTRY_WITH(plugin_name, plugin_version, init_hook, deinit_hook, ...) \
    static const rawfx_filter_descriptor *const rawfx_helper_descriptors[] = { __VA_ARGS__ }; \
    static const rawfx_host *rawfx_helper_file_host; \
    static uint32_t rawfx_helper_init_count; \
    static char rawfx_helper_path[RAWFX_HELPER_PATH_CAPACITY]; \
    static rawfx_status (*const rawfx_helper_init_hook)(const rawfx_host_info *, char *, size_t) = init_hook; \
    static void (*const rawfx_helper_deinit_hook)(void) = deinit_hook; \
    RAWFX_HELPER_HIDDEN const rawfx_host *rawfx_plugin_file_host(void) { return rawfx_helper_file_host; } \
    RAWFX_HELPER_HIDDEN const char *rawfx_plugin_file_path(void) { return rawfx_helper_path; } \
    static rawfx_status rawfx_helper_init(const rawfx_host_info *info, char *error, size_t capacity) \
    { \
        if (info == NULL || info->struct_size < RAWFX_FIELD_END(rawfx_host_info, abi)) { \
            rawfx_format_message(error, capacity, "%s: the host passed no ABI version", plugin_name); \
            return RAWFX_ERR_VERSION; \
        } \
        if (!rawfx_host_abi_is_enough(info->abi, RAWFX_HELPER_MIN_HOST_MINOR)) { \
            rawfx_format_message(error, capacity, "%s: needs a host of RawFX ABI %u.%u or a later %u.x; " \
                                 "the host speaks %u.%u", plugin_name, (unsigned)RAWFX_ABI_MAJOR, \
                                 (unsigned)(RAWFX_HELPER_MIN_HOST_MINOR), (unsigned)RAWFX_ABI_MAJOR, \
                                 (unsigned)info->abi.major, (unsigned)info->abi.minor); \
            return RAWFX_ERR_VERSION; \
        } \
        if (rawfx_helper_init_hook != NULL) { \
            rawfx_status status = rawfx_helper_init_hook(info, error, capacity); \
            if (status != RAWFX_OK) \
                return status; \
        } \
        if (rawfx_helper_init_count++ == 0) { \
            int has_1_1 = info->struct_size >= RAWFX_FIELD_END(rawfx_host_info, host); \
            rawfx_helper_file_host = has_1_1 ? rawfx_usable_host(info->host) : NULL; \
            const char *path = has_1_1 && info->plugin_path != NULL ? info->plugin_path : ""; \
            size_t length = strlen(path); \
            if (length >= sizeof rawfx_helper_path) \
                length = 0; /* longer than any Linux path: keep none rather than a wrong one */ \
            memcpy(rawfx_helper_path, path, length); \
            rawfx_helper_path[length] = '\0'; \
        } else { \
            rawfx_helper_file_host = NULL; /* two hosts: which one a deinit ends is unknown */ \
        } \
        return RAWFX_OK; \
    } \
    static void rawfx_helper_deinit(void) \
    { \
        if (rawfx_helper_deinit_hook != NULL) \
            rawfx_helper_deinit_hook(); \
        if (rawfx_helper_init_count > 0 && --rawfx_helper_init_count == 0) { \
            rawfx_helper_file_host = NULL; \
            rawfx_helper_path[0] = '\0'; \
        } \
    } \
    static uint32_t rawfx_helper_filter_count(void) { return RAWFX_ARRAY_COUNT(rawfx_helper_descriptors); } \
    static const rawfx_filter_descriptor *rawfx_helper_filter_descriptor(uint32_t index) \
    { \
        return index < RAWFX_ARRAY_COUNT(rawfx_helper_descriptors) ? rawfx_helper_descriptors[index] : NULL; \
    } \
    static const rawfx_plugin_entry rawfx_helper_entry = { \
        (uint32_t)sizeof(rawfx_plugin_entry), RAWFX_ABI_VERSION_INIT, plugin_name, plugin_version, \
        rawfx_helper_init, rawfx_helper_deinit, rawfx_helper_filter_count, rawfx_helper_filter_descriptor \
    }; \
    RAWFX_HELPER_ENTRY_DEFINITION { return &rawfx_helper_entry; }

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_PLUGIN_HELPERS_H */

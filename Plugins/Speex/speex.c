/*
 * rawfx-speex: the `denoise` and `resample` filters over SpeexDSP.
 *
 * This file holds the plugin entry point and the few helpers both filters
 * share; the filters live in denoise.c and resample.c. The shared helpers are
 * declared again (extern, hidden) at the top of those files: the plugin has no
 * private header on purpose, and those declarations are the whole interface.
 *
 * Exactly one symbol leaves the .so: the function `rawfx_get_plugin_entry`
 * (RAWFX_ENTRY_SYMBOL). Everything else is static or has hidden visibility.
 */
#include "rawfx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RFX_HIDDEN __attribute__((visibility("hidden")))

extern RFX_HIDDEN const rawfx_filter_descriptor rfx_speex_denoise_descriptor;
extern RFX_HIDDEN const rawfx_filter_descriptor rfx_speex_resample_descriptor;

/* ---------------------------------------------------------- shared helpers -- */

RFX_HIDDEN void rfx_speex_format(char *buffer, size_t capacity, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats a message into a fixed buffer. Only used with %s/%u/%d/%lu
 * conversions, which glibc's vsnprintf handles without touching the heap, so it
 * is also safe on the process thread for the rare refusal there. */
RFX_HIDDEN void rfx_speex_format(char *buffer, size_t capacity, const char *format, ...)
{
    if (buffer == NULL || capacity == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(buffer, capacity, format, args);
    va_end(args);
}

/* Checks that an audio frame the host handed us carries every v1.0 field we
 * read or write (the struct_size convention: a reader uses only fields inside
 * struct_size; all our fields are v1.0 fields, so we require all of them). */
RFX_HIDDEN int rfx_speex_frame_is_complete(const rawfx_audio_frame *frame)
{
    return frame != NULL
        && frame->struct_size >= offsetof(rawfx_audio_frame, timestamp_us) + sizeof(int64_t);
}

/* Validates the common part of an audio input format for both filters:
 * audio kind, 1..8 channels. Writes a message and returns a status. */
RFX_HIDDEN rawfx_status rfx_speex_check_audio_input(const char *filter_id, const rawfx_format *input,
                                                    char *error, size_t capacity)
{
    if (input == NULL || input->struct_size < offsetof(rawfx_format, audio) + sizeof(rawfx_audio_format)) {
        rfx_speex_format(error, capacity, "%s: configure needs a complete rawfx_format (struct_size too small or NULL)",
                         filter_id);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (input->kind != RAWFX_MEDIA_AUDIO) {
        rfx_speex_format(error, capacity, "%s: is an audio filter and cannot process %s frames; "
                         "place it in an audio chain (interleaved 16-bit PCM)",
                         filter_id, input->kind == RAWFX_MEDIA_VIDEO ? "video" : "unknown-kind");
        return RAWFX_ERR_UNSUPPORTED;
    }
    if (input->audio.struct_size < offsetof(rawfx_audio_format, channels) + sizeof(uint32_t)) {
        rfx_speex_format(error, capacity, "%s: the audio format is incomplete (struct_size %u)",
                         filter_id, (unsigned)input->audio.struct_size);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (input->audio.channels == 0 || input->audio.channels > 8) {
        rfx_speex_format(error, capacity, "%s: %u channels is not supported; accepted: 1 to 8 interleaved channels",
                         filter_id, (unsigned)input->audio.channels);
        return RAWFX_ERR_UNSUPPORTED;
    }
    return RAWFX_OK;
}

/* Checks the negotiation struct has room for everything we write. */
RFX_HIDDEN rawfx_status rfx_speex_check_negotiation(const char *filter_id, const rawfx_negotiation *result,
                                                    char *error, size_t capacity)
{
    if (result == NULL || result->struct_size < offsetof(rawfx_negotiation, latency) + sizeof(uint32_t)) {
        rfx_speex_format(error, capacity, "%s: configure needs a complete rawfx_negotiation (struct_size too small or NULL)",
                         filter_id);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    return RAWFX_OK;
}

/* Copies the per-block metadata the ABI asks every filter to carry over. */
RFX_HIDDEN void rfx_speex_copy_metadata(const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    if (in == out)
        return;
    out->timestamp_us = in->timestamp_us;
    out->source = in->source;
    out->user_id = in->user_id;
    out->flags = in->flags;
}

/* ------------------------------------------------------------------ entry -- */

static const rawfx_filter_descriptor *const filters[] = {
    &rfx_speex_denoise_descriptor,
    &rfx_speex_resample_descriptor,
};

static rawfx_status plugin_init(const rawfx_host_info *host, char *error, size_t error_capacity)
{
    if (host != NULL && host->struct_size >= offsetof(rawfx_host_info, abi) + sizeof(rawfx_abi_version)
        && host->abi.major != RAWFX_ABI_MAJOR) {
        rfx_speex_format(error, error_capacity,
                         "rawfx-speex was built for RawFX ABI %u.%u; the host speaks %u.%u",
                         (unsigned)RAWFX_ABI_MAJOR, (unsigned)RAWFX_ABI_MINOR,
                         (unsigned)host->abi.major, (unsigned)host->abi.minor);
        return RAWFX_ERR_VERSION;
    }
    return RAWFX_OK;
}

static void plugin_deinit(void) {}

static uint32_t plugin_filter_count(void)
{
    return (uint32_t)(sizeof(filters) / sizeof(filters[0]));
}

static const rawfx_filter_descriptor *plugin_filter_descriptor(uint32_t index)
{
    return index < plugin_filter_count() ? filters[index] : NULL;
}

static const rawfx_plugin_entry entry = {
    .struct_size = sizeof(rawfx_plugin_entry),
    .abi = RAWFX_ABI_VERSION_INIT,
    .plugin_name = "rawfx-speex",
    .plugin_version = "1.0.0",
    .init = plugin_init,
    .deinit = plugin_deinit,
    .filter_count = plugin_filter_count,
    .filter_descriptor = plugin_filter_descriptor,
};

RAWFX_EXPORT const rawfx_plugin_entry *rawfx_get_plugin_entry(void)
{
    return &entry;
}

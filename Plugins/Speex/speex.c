/*
 * rawfx-speex: the `denoise` and `resample` filters over SpeexDSP.
 *
 * This file is the plugin's entry; the filters live in denoise.c and
 * resample.c, and what they share (instance base, messages, format checks)
 * comes from rawfx/plugin_helpers.h. Exactly one symbol leaves the .so: the
 * function `rawfx_get_plugin_entry` (RAWFX_ENTRY_SYMBOL, Plugins/Entries/Speex
 * over rawfx_speex_plugin_entry); the descriptors have hidden visibility.
 */
#include "rawfx/plugin_helpers.h"

extern RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speex_denoise_descriptor;
extern RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speex_resample_descriptor;

RAWFX_PLUGIN_ENTRY("rawfx-speex", "1.1.0", &rfx_speex_denoise_descriptor, &rfx_speex_resample_descriptor)

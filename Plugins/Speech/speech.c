/*
 * rawfx-speech: the `dfn` (DeepFilterNet 3) and `rnnoise` (RNNoise) speech
 * denoisers. Their libraries come from PyPI wheels and are opened with dlopen
 * when an instance is created, so this .so loads (and `rawfx plugins` lists
 * it) without them; stage.c holds what the two filters share. Exactly one
 * symbol leaves the .so: rawfx_get_plugin_entry (Plugins/Entries/Speech, over
 * rawfx_speech_plugin_entry).
 */
#include "rawfx/plugin_helpers.h"

extern RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speech_dfn_descriptor;
extern RAWFX_HELPER_HIDDEN const rawfx_filter_descriptor rfx_speech_rnnoise_descriptor;

RAWFX_PLUGIN_ENTRY("rawfx-speech", "1.0.0", &rfx_speech_dfn_descriptor, &rfx_speech_rnnoise_descriptor)

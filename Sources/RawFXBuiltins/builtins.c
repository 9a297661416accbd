/*
 * The built-in plugins: every plugin RawFX ships, linked into an app that
 * depends on the RawFX product (SwiftPM builds no dependency's plugin .so) and
 * registered before main, so PluginRegistry() lists them with no plugin path.
 * Each is the code of its .so, reached through its own entry name
 * (RAWFX_PLUGIN_SYMBOL_PREFIX, Plugins/Entries). docs/plugin-abi.md, "Built-in
 * plugins".
 */
#include "rawfx_builtins.h"

const rawfx_plugin_entry *rawfx_basics_plugin_entry(void);
const rawfx_plugin_entry *rawfx_speech_plugin_entry(void);
const rawfx_plugin_entry *rawfx_speex_plugin_entry(void);
const rawfx_plugin_entry *rawfx_text_plugin_entry(void);
const rawfx_plugin_entry *rawfx_watermark_plugin_entry(void);
const rawfx_plugin_entry *rawfx_yuv_plugin_entry(void);

/* In the order a directory scan meets their .so files. */
static rawfx_builtin_plugin builtins[] = {
    { "libRawFXBasics.so", rawfx_basics_plugin_entry, NULL },
    { "libRawFXSpeech.so", rawfx_speech_plugin_entry, NULL },
    { "libRawFXSpeex.so", rawfx_speex_plugin_entry, NULL },
    { "libRawFXText.so", rawfx_text_plugin_entry, NULL },
    { "libRawFXWatermark.so", rawfx_watermark_plugin_entry, NULL },
    { "libRawFXYUV.so", rawfx_yuv_plugin_entry, NULL },
};

__attribute__((constructor)) static void rawfx_register_builtins(void)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        rawfx_register_builtin_plugin(&builtins[i]);
}

/*
 * rawfx_builtins.h — plugins linked into the process rather than loaded from a
 * file: the built-in plugins (Sources/RawFXBuiltins, which the RawFX product
 * links into an app) register here before main, as GStreamer registers its
 * static elements, and PluginRegistry() loads them through the same entry
 * points as a .so before it scans for files (docs/plugin-abi.md, "Built-in
 * plugins").
 */
#ifndef RAWFX_BUILTINS_H
#define RAWFX_BUILTINS_H

#include "rawfx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One built-in plugin. Static storage: the list links the records themselves,
 * so registering allocates nothing. */
typedef struct rawfx_builtin_plugin {
    /* The file the plugin ships as otherwise ("libRawFXYUV.so"): its log source. */
    const char *library_name;
    /* The plugin's entry, under its own name (rawfx_yuv_plugin_entry). */
    rawfx_get_plugin_entry_fn get_entry;
    /* Set by rawfx_register_builtin_plugin. */
    const struct rawfx_builtin_plugin *next;
} rawfx_builtin_plugin;

/* Adds `plugin` to the process's built-in plugins (any thread; lock-free). A
 * record registered twice is a caller's bug and is ignored the second time. */
void rawfx_register_builtin_plugin(rawfx_builtin_plugin *plugin);

/* The most recently registered plugin (then ->next, back to the first), or
 * NULL when none is. */
const rawfx_builtin_plugin *rawfx_builtin_plugins(void);

/* The file of the library `plugin`'s entry is linked into, as the dynamic
 * linker names it, or NULL when that is the main program (its path is
 * /proc/self/exe) or unknown. */
const char *rawfx_builtin_plugin_library_path(const rawfx_builtin_plugin *plugin);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_BUILTINS_H */

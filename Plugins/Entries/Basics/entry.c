/* libRawFXBasics.so's one export (Plugins/plugin.map). Only the .so links this file: an app that
 * links the built-ins reaches rawfx_basics_plugin_entry by name (Sources/RawFXBuiltins). */
#include "rawfx/plugin_helpers.h"

RAWFX_EXPORT_PLUGIN_ENTRY(rawfx_basics_plugin_entry)

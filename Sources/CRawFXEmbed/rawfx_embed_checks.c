/* Compile-time checks of rawfx_embed.h (and what makes CRawFXEmbed a target: SwiftPM needs a
 * source file). The Swift side writes rawfx_stage_metrics field by field up to struct_size,
 * so its first field must be struct_size. */
#include "rawfx_embed.h"

#include <stddef.h>

typedef char rawfx_embed_check_metrics_starts_with_size[offsetof(rawfx_stage_metrics, struct_size) == 0 ? 1 : -1];
typedef char rawfx_embed_check_options_starts_with_size[offsetof(rawfx_registry_options, struct_size) == 0 ? 1 : -1];

/* rawfx_hooks.h: the Swift side checks struct_size first, so it must be the first field. */
#include "rawfx_hooks.h"
typedef char rawfx_embed_check_hook_options_starts_with_size[offsetof(rawfx_hook_options, struct_size) == 0 ? 1 : -1];
typedef char rawfx_embed_check_raw_data_starts_with_size[offsetof(rawfx_audio_raw_data, struct_size) == 0 ? 1 : -1];
typedef char rawfx_embed_check_event_starts_with_size[offsetof(rawfx_lifecycle_event, struct_size) == 0 ? 1 : -1];

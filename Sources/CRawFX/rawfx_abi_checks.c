/* Compile-time checks that the ABI header is self-contained C99 and that its
 * layout is what docs/plugin-abi.md promises on LP64 targets. */
#include "rawfx.h"

#define RAWFX_STATIC_ASSERT(cond, name) typedef char rawfx_static_assert_##name[(cond) ? 1 : -1]

RAWFX_STATIC_ASSERT(sizeof(rawfx_abi_version) == 8, abi_version_size);
RAWFX_STATIC_ASSERT(offsetof(rawfx_plugin_entry, abi) == 4, entry_abi_offset);
RAWFX_STATIC_ASSERT(sizeof(rawfx_get_plugin_entry_fn) == sizeof(void (*)(void)), entry_fn_size);
RAWFX_STATIC_ASSERT(offsetof(rawfx_video_frame, struct_size) == 0, video_frame_size_first);
RAWFX_STATIC_ASSERT(offsetof(rawfx_audio_frame, struct_size) == 0, audio_frame_size_first);

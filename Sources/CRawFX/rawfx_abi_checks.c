/* Compile-time checks that the ABI headers are self-contained C99 (and C++11:
 * PluginHelperTests compiles this file as C++ too) and that their layout is
 * what docs/plugin-abi.md promises on LP64 targets. A field moved or inserted
 * by mistake breaks every plugin already built; these make it a build error. */
#include "rawfx.h"
#include "rawfx/ext/thread_pool.h"
#include "rawfx/ext/voice_activity.h"
#include "rawfx/plugin_helpers.h"

#define RAWFX_STATIC_ASSERT(cond, name) typedef char rawfx_static_assert_##name[(cond) ? 1 : -1]
#define RAWFX_CHECK_OFFSET(type, member, offset) \
    RAWFX_STATIC_ASSERT(offsetof(type, member) == (offset), type##_##member##_at_##offset)
#define RAWFX_CHECK_SIZE(type, size) RAWFX_STATIC_ASSERT(sizeof(type) == (size), type##_is_##size##_bytes)

/* Independent of the data model. */
RAWFX_CHECK_SIZE(rawfx_abi_version, 8);
RAWFX_CHECK_OFFSET(rawfx_plugin_entry, abi, 4);
RAWFX_STATIC_ASSERT(sizeof(rawfx_get_plugin_entry_fn) == sizeof(void (*)(void)), entry_fn_size);
RAWFX_CHECK_OFFSET(rawfx_video_frame, struct_size, 0);
RAWFX_CHECK_OFFSET(rawfx_audio_frame, struct_size, 0);
RAWFX_CHECK_SIZE(rawfx_audio_format, 12);
RAWFX_CHECK_SIZE(rawfx_video_format, 24);
/* rawfx.voice-activity/1: 32 bytes everywhere (natural alignment, no padding). */
RAWFX_CHECK_SIZE(rawfx_voice_activity_v1, 32);
RAWFX_CHECK_OFFSET(rawfx_voice_activity_v1, vad_enabled, 4);
RAWFX_CHECK_OFFSET(rawfx_voice_activity_v1, voice_blocks, 8);
RAWFX_CHECK_OFFSET(rawfx_voice_activity_v1, total_blocks, 16);
RAWFX_CHECK_OFFSET(rawfx_voice_activity_v1, last_block_voice, 24);
RAWFX_CHECK_OFFSET(rawfx_voice_activity_v1, speech_probability, 28);
/* The helpers' instance base starts with the rawfx_filter the host holds. */
RAWFX_CHECK_OFFSET(rawfx_instance_base, filter, 0);

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu && UINT_LEAST64_MAX == 0xFFFFFFFFFFFFFFFFu
/* LP64: 8-byte pointers and 8-byte alignment of pointers and 64-bit integers. */

/* The 1.0 sizes are where each 1.1 field begins (and what the 1.0 header's sizeof
 * gave: PluginHelperTests checks the fixture header against these numbers). */
RAWFX_STATIC_ASSERT(RAWFX_SIZE_1_0_FILTER_DESCRIPTOR == 72, size_1_0_filter_descriptor);
RAWFX_STATIC_ASSERT(RAWFX_SIZE_1_0_FILTER == 88, size_1_0_filter);
RAWFX_STATIC_ASSERT(RAWFX_SIZE_1_0_HOST_INFO == 32, size_1_0_host_info);

RAWFX_CHECK_SIZE(rawfx_filter_descriptor, 80);
RAWFX_CHECK_OFFSET(rawfx_filter_descriptor, params, 48);
RAWFX_CHECK_OFFSET(rawfx_filter_descriptor, create, 64);
RAWFX_CHECK_OFFSET(rawfx_filter_descriptor, create_with_host, 72);

RAWFX_CHECK_SIZE(rawfx_filter, 96);
RAWFX_CHECK_OFFSET(rawfx_filter, destroy, 24);
RAWFX_CHECK_OFFSET(rawfx_filter, get_extension, 80);
RAWFX_CHECK_OFFSET(rawfx_filter, on_callback, 88);

RAWFX_CHECK_SIZE(rawfx_host_info, 48);
RAWFX_CHECK_OFFSET(rawfx_host_info, name, 16);
RAWFX_CHECK_OFFSET(rawfx_host_info, plugin_path, 32);
RAWFX_CHECK_OFFSET(rawfx_host_info, host, 40);

RAWFX_CHECK_SIZE(rawfx_plugin_entry, 64);
RAWFX_CHECK_OFFSET(rawfx_plugin_entry, init, 32);
RAWFX_CHECK_OFFSET(rawfx_plugin_entry, filter_descriptor, 56);

RAWFX_CHECK_SIZE(rawfx_host, 80);
RAWFX_CHECK_OFFSET(rawfx_host, abi, 4);
RAWFX_CHECK_OFFSET(rawfx_host, name, 16);
RAWFX_CHECK_OFFSET(rawfx_host, host_data, 32);
RAWFX_CHECK_OFFSET(rawfx_host, log, 40);
RAWFX_CHECK_OFFSET(rawfx_host, request_reconfigure, 48);
RAWFX_CHECK_OFFSET(rawfx_host, is_process_thread, 56);
RAWFX_CHECK_OFFSET(rawfx_host, get_extension, 64);
RAWFX_CHECK_OFFSET(rawfx_host, request_callback, 72);

RAWFX_CHECK_SIZE(rawfx_host_thread_pool, 24);
RAWFX_CHECK_OFFSET(rawfx_host_thread_pool, thread_count, 8);
RAWFX_CHECK_OFFSET(rawfx_host_thread_pool, run, 16);

RAWFX_CHECK_SIZE(rawfx_param_descriptor, 96);
RAWFX_CHECK_OFFSET(rawfx_param_descriptor, default_value, 48);
RAWFX_CHECK_OFFSET(rawfx_param_descriptor, enum_count, 88);
RAWFX_CHECK_SIZE(rawfx_param_value, 32);
RAWFX_CHECK_SIZE(rawfx_negotiation, 60);
RAWFX_CHECK_OFFSET(rawfx_negotiation, latency, 56);
RAWFX_CHECK_SIZE(rawfx_video_frame, 72);
RAWFX_CHECK_OFFSET(rawfx_video_frame, timestamp_us, 64);
RAWFX_CHECK_SIZE(rawfx_audio_frame, 56);
RAWFX_CHECK_OFFSET(rawfx_audio_frame, timestamp_us, 48);
#endif

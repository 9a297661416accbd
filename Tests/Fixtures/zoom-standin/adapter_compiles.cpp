// adapter_compiles.cpp — compiled, never run, by HooksCTests
// (testAdapterCompilesAgainstTheStandInsWithAndWithoutProductionStudio) with g++ and clang++,
// -fsyntax-only and every warning an error: rawfx/zoom_adapter.hpp against the stand-ins of
// both SDKs, with no `using namespace` anywhere, so every SDK name in the adapter must be
// qualified as the SDK declares it.
//
// EXPECT_PRODUCTION_STUDIO (0 or 1, from the test) says whether the production-studio stand-in
// is to be found: this folder is on the include path or not (zoom_sdk_standin.h is found beside
// this file either way; the adapter looks for the production-studio header with <...>, which
// does not search here), or RAWFX_ZOOM_HAS_PRODUCTION_STUDIO=0 hides it.
#include "zoom_sdk_standin.h"
#define RAWFX_WITH_ZOOM_VIDEO_SDK 1
#define RAWFX_WITH_ZOOM_MEETING_SDK 1
#include "rawfx/zoom_adapter.hpp"

#include <type_traits>

#if !defined(EXPECT_PRODUCTION_STUDIO)
#error "define EXPECT_PRODUCTION_STUDIO 0 or 1"
#endif
static_assert(RAWFX_ZOOM_HAS_PRODUCTION_STUDIO == EXPECT_PRODUCTION_STUDIO,
              "RAWFX_ZOOM_HAS_PRODUCTION_STUDIO does not say whether the SDK's header is there");

// Every adapter class is concrete: it overrides every callback of its SDK interface. (The
// renderer and pipe delegates, private to meeting_receive_video and receive_video, are asserted
// in the adapter itself.)
static_assert(!std::is_abstract<rawfx::zoom::meeting_pre_processor>::value, "meeting_pre_processor");
static_assert(!std::is_abstract<rawfx::zoom::meeting_audio_delegate>::value, "meeting_audio_delegate");
static_assert(!std::is_abstract<rawfx::zoom::meeting_video_source>::value, "meeting_video_source");
static_assert(!std::is_abstract<rawfx::zoom::meeting_share_source>::value, "meeting_share_source");
static_assert(!std::is_abstract<rawfx::zoom::meeting_virtual_mic>::value, "meeting_virtual_mic");
static_assert(!std::is_abstract<rawfx::zoom::meeting_receive_video>::value, "meeting_receive_video");
#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
static_assert(!std::is_abstract<rawfx::zoom::meeting_production_studio>::value, "meeting_production_studio");
#endif
static_assert(!std::is_abstract<rawfx::zoom::pre_processor>::value, "pre_processor");
static_assert(!std::is_abstract<rawfx::zoom::virtual_speaker>::value, "virtual_speaker");
static_assert(!std::is_abstract<rawfx::zoom::video_source>::value, "video_source");
static_assert(!std::is_abstract<rawfx::zoom::share_source>::value, "share_source");
static_assert(!std::is_abstract<rawfx::zoom::virtual_mic>::value, "virtual_mic");
static_assert(!std::is_abstract<rawfx::zoom::receive_video>::value, "receive_video");

// Each class is constructed, so that every member of the class templates, the callbacks and
// the senders' trampolines, is instantiated and checked: a template's body is checked only
// when instantiated. Never called.
void rawfx_adapter_compiles(rawfx_registry *registry);
void rawfx_adapter_compiles(rawfx_registry *registry) {
    rawfx::zoom::meeting_pre_processor meeting_pre(registry, "");
    rawfx::zoom::meeting_audio_delegate meeting_audio(registry, "", nullptr);
    rawfx::zoom::meeting_video_source meeting_video(registry, "");
    rawfx::zoom::meeting_share_source meeting_share(registry, "");
    rawfx::zoom::meeting_virtual_mic meeting_mic(registry, "");
    rawfx::zoom::meeting_receive_video meeting_receive(registry, "", nullptr, nullptr, nullptr);
#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
    ZOOMSDK::PSVideoSourceCapability capability;
    rawfx::zoom::meeting_production_studio studio(registry, "", "", capability);
#endif
    rawfx::zoom::pre_processor pre(registry, "");
    rawfx::zoom::virtual_speaker speaker(registry, "", nullptr);
    rawfx::zoom::video_source video(registry, "");
    rawfx::zoom::share_source share(registry, "");
    rawfx::zoom::virtual_mic mic(registry, "");
    rawfx::zoom::receive_video receive(registry, "", nullptr);
}

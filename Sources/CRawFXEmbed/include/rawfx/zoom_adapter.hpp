// rawfx/zoom_adapter.hpp — RawFX behind the Zoom Linux SDKs' raw-data callback interfaces.
//
// Header-only C++17 over rawfx_hooks.h (librawfx): each class below IS the SDK's interface
// (install it where the SDK takes one) and forwards every callback to the C hook API.
//
//   #include <zoom_video_sdk_interface.h>           // or the Meeting SDK's headers, first
//   #define RAWFX_WITH_ZOOM_VIDEO_SDK 1              // and/or RAWFX_WITH_ZOOM_MEETING_SDK
//   #include <rawfx/zoom_adapter.hpp>
//
//   rawfx::zoom::video_source camera(registry, "watermark=image=logo.png");
//   sessionContext.externalVideoSource = &camera;   // then camera.push_frame(frame) from your loop
//
// Video SDK (namespace ZOOMVIDEOSDK):   pre_processor, virtual_speaker, video_source, share_source,
//                                       virtual_mic, receive_video (IZoomVideoSDKRawDataPipeDelegate
//                                       per pipe)
// Meeting SDK (namespace ZOOMSDK):      meeting_pre_processor, meeting_audio_delegate,
//                                       meeting_video_source, meeting_share_source,
//                                       meeting_virtual_mic, meeting_receive_video
//                                       (IZoomSDKRendererDelegate per renderer),
//                                       meeting_production_studio (where the SDK has it: below)
//
// The SDK's headers come first. With the Meeting SDK those are zoom_sdk_raw_data_def.h and the
// rawdata/ headers of the interfaces used (rawdata_video_source_helper_interface.h,
// rawdata_audio_helper_interface.h, rawdata_renderer_interface.h,
// rawdata_share_source_helper_interface.h). Every SDK name here is qualified: ZOOMVIDEOSDK::,
// ZOOMSDK::, or :: for what both SDKs declare globally (AudioRawData, YUVRawDataI420,
// YUVProcessDataI420, zchar_t), so no `using namespace` is needed, and one in force is harmless.
//
// Production studio: meeting_production_studio needs the Meeting SDK's
// meeting_service_components/meeting_production_studio_ctrl_interface.h, which not every SDK
// package has. RAWFX_ZOOM_HAS_PRODUCTION_STUDIO decides whether the class is compiled:
//   - defined before this header (0 or 1): as defined. With 1 the SDK's header is included here
//     when it is on the include path; otherwise it must have been included already.
//   - left undefined: 1 when __has_include(<meeting_service_components/
//     meeting_production_studio_ctrl_interface.h>) finds it (the SDK's h/ folder is on the
//     include path), and it is included here; else 0, and the class is left out.
// After this header RAWFX_ZOOM_HAS_PRODUCTION_STUDIO is defined, 0 or 1 (0 without
// RAWFX_WITH_ZOOM_MEETING_SDK, unless you defined it).
//
// Meeting SDK releases: RAWFX_ZOOM_MEETING_SDK_VERSION is the Linux Meeting SDK's version as
// major * 10000 + minor * 100 + patch (5.17.11: 51711; 6.7.5.7391: 60705, the default when
// undefined). It decides which IZoomSDKAudioRawDataDelegate callbacks meeting_audio_delegate
// overrides, each also settable on its own before this header:
//   RAWFX_ZOOM_MEETING_SHARE_AUDIO        0: no share-audio callback (before 5.16.10);
//                                         1: onShareAudioRawDataReceived(AudioRawData*);
//                                         2: onShareAudioRawDataReceived(AudioRawData*, uint32_t
//                                            user_id) (from 6.5)
//   RAWFX_ZOOM_MEETING_INTERPRETER_AUDIO  1: onOneWayInterpreterAudioRawDataReceived (from 6.1.0)
// A wrong version shows as a compile error: an override of a callback the SDK lacks, or an
// abstract meeting_audio_delegate (a static_assert that names this macro).
// Two differences need no macro, being found in the SDK's classes themselves: the raw data
// timestamps (AudioRawData / YUVRawDataI420::GetTimeStamp, from 6.4; where the SDK has none,
// the C API gets timestamp_ms 0), and the mic sender's channel argument
// (IZoomSDKAudioRawDataSender::send with ZoomSDKAudioChannel in every release checked, 5.15.5
// on; where send has none, the mic's mono chunks are sent without it). docs/embedding.md names
// the releases checked.
//
// Constructors and run-time control throw rawfx::error (code + rawfx_last_error()); SDK
// callbacks never throw: their result is kept (last_result(), last_error()). Thread rules
// are those of rawfx_hooks.h: a callback runs on the SDK's thread, push_* on the app's.
#ifndef RAWFX_ZOOM_ADAPTER_HPP
#define RAWFX_ZOOM_ADAPTER_HPP

#include "../rawfx_hooks.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(RAWFX_WITH_ZOOM_MEETING_SDK)
#if defined(__has_include)
#if __has_include(<meeting_service_components/meeting_production_studio_ctrl_interface.h>)
#define RAWFX_ZOOM_PRODUCTION_STUDIO_HEADER_FOUND 1
#endif
#endif
#if !defined(RAWFX_ZOOM_HAS_PRODUCTION_STUDIO)
#if defined(RAWFX_ZOOM_PRODUCTION_STUDIO_HEADER_FOUND)
#define RAWFX_ZOOM_HAS_PRODUCTION_STUDIO 1
#else
#define RAWFX_ZOOM_HAS_PRODUCTION_STUDIO 0
#endif
#endif
#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO && defined(RAWFX_ZOOM_PRODUCTION_STUDIO_HEADER_FOUND)
#include <meeting_service_components/meeting_production_studio_ctrl_interface.h>
#endif
#undef RAWFX_ZOOM_PRODUCTION_STUDIO_HEADER_FOUND
#elif !defined(RAWFX_ZOOM_HAS_PRODUCTION_STUDIO)
#define RAWFX_ZOOM_HAS_PRODUCTION_STUDIO 0
#endif

#if !defined(RAWFX_ZOOM_MEETING_SDK_VERSION)
#define RAWFX_ZOOM_MEETING_SDK_VERSION 60705
#endif
#if !defined(RAWFX_ZOOM_MEETING_SHARE_AUDIO)
#if RAWFX_ZOOM_MEETING_SDK_VERSION >= 60500
#define RAWFX_ZOOM_MEETING_SHARE_AUDIO 2
#elif RAWFX_ZOOM_MEETING_SDK_VERSION >= 51610
#define RAWFX_ZOOM_MEETING_SHARE_AUDIO 1
#else
#define RAWFX_ZOOM_MEETING_SHARE_AUDIO 0
#endif
#endif
#if !defined(RAWFX_ZOOM_MEETING_INTERPRETER_AUDIO)
#if RAWFX_ZOOM_MEETING_SDK_VERSION >= 60100
#define RAWFX_ZOOM_MEETING_INTERPRETER_AUDIO 1
#else
#define RAWFX_ZOOM_MEETING_INTERPRETER_AUDIO 0
#endif
#endif

namespace rawfx {

// A failed call of the C API: its code and message.
class error : public std::runtime_error {
public:
    error(const char *call, rawfx_result code)
        : std::runtime_error(std::string(call) + ": " + rawfx_result_name(code) + ": " + rawfx_last_error()), code_(code) {}
    rawfx_result code() const noexcept { return code_; }

private:
    rawfx_result code_;
};

inline void check(rawfx_result result, const char *call) {
    if (result != RAWFX_OK) throw error(call, result);
}

// Owns one rawfx_hook: run-time control and metrics, the same for every hook.
class hook {
public:
    hook(const hook &) = delete;
    hook &operator=(const hook &) = delete;
    virtual ~hook() { close(); }

    rawfx_hook *get() const noexcept { return handle_; }
    // [control] As rawfx_hook_set_chain / _set_parameter / _set_bypass; throw rawfx::error.
    void set_chain(const std::string &chain) { check(rawfx_hook_set_chain(handle_, chain.c_str()), "rawfx_hook_set_chain"); }
    void set_parameter(const std::string &address, const std::string &value) {
        check(rawfx_hook_set_parameter(handle_, address.c_str(), value.c_str()), "rawfx_hook_set_parameter");
    }
    void set_bypass(const std::string &stage, bool bypassed) {
        check(rawfx_hook_set_bypass(handle_, stage.c_str(), bypassed ? 1 : 0), "rawfx_hook_set_bypass");
    }
    // [control] (allocates) rawfx_hook_metrics_json.
    std::string metrics_json() const {
        size_t length = 0;
        rawfx_hook_metrics_json(handle_, nullptr, 0, &length);
        std::string text(length + 1, '\0');
        check(rawfx_hook_metrics_json(handle_, &text[0], text.size(), &length), "rawfx_hook_metrics_json");
        text.resize(length);
        return text;
    }
    // The result of the last SDK callback or push, and its message when it failed.
    rawfx_result last_result() const noexcept { return last_; }
    const std::string &last_error() const noexcept { return last_error_; }

protected:
    explicit hook(rawfx_hook *handle) : handle_(handle) {}
    // Stops and frees the hook. A class whose callbacks the hook calls (a sink, a listener)
    // closes in its own destructor, before those members are destroyed.
    void close() noexcept {
        rawfx_hook_destroy(handle_);
        handle_ = nullptr;
    }
    // Keeps a callback's result; the message is copied only on failure (no allocation on success).
    rawfx_result keep(rawfx_result result) {
        last_ = result;
        if (result != RAWFX_OK) last_error_ = rawfx_last_error();
        return result;
    }

private:
    rawfx_hook *handle_;
    rawfx_result last_ = RAWFX_OK;
    std::string last_error_;
};

// Sources report start/stop: a callback, called on the SDK's thread after the source acted.
class lifecycle_source : public hook {
public:
    ~lifecycle_source() override { close(); }
    using listener = std::function<void(const rawfx_lifecycle_event &)>;
    // [control] Sets (empty: removes) the listener.
    void on_lifecycle(listener l) {
        listener_ = std::move(l);
        check(rawfx_hook_set_lifecycle_callback(get(), listener_ ? &lifecycle_source::deliver : nullptr, this),
              "rawfx_hook_set_lifecycle_callback");
    }

protected:
    using hook::hook;

private:
    static void deliver(void *self, const rawfx_lifecycle_event *event) { static_cast<lifecycle_source *>(self)->listener_(*event); }
    listener listener_;
};

namespace zoom {
namespace detail {

inline rawfx_hook *create_preprocessor(rawfx_registry *registry, const char *chain, const rawfx_video_format *format) {
    rawfx_hook *h = nullptr;
    check(rawfx_preprocessor_create(registry, chain, format, &h), "rawfx_preprocessor_create");
    return h;
}
inline rawfx_hook *create_video_source(rawfx_registry *registry, const char *chain, const rawfx_hook_options *options) {
    rawfx_hook *h = nullptr;
    check(rawfx_video_source_create(registry, chain, options, &h), "rawfx_video_source_create");
    return h;
}
inline rawfx_hook *create_mic(rawfx_registry *registry, const char *chain, uint32_t rate, int32_t pacing) {
    rawfx_hook *h = nullptr;
    check(rawfx_virtual_mic_create(registry, chain, rate, pacing, &h), "rawfx_virtual_mic_create");
    return h;
}

// A capability as the C API takes it (the Meeting SDK's has no data_mode).
template <class C, class = void> struct has_data_mode : std::false_type {};
template <class C> struct has_data_mode<C, std::void_t<decltype(std::declval<C>().data_mode)>> : std::true_type {};
template <class C> rawfx_video_capability capability(const C &c) {
    rawfx_video_capability out{c.width, c.height, c.frame, 0};
    if constexpr (has_data_mode<C>::value) out.data_mode = static_cast<int32_t>(c.data_mode);
    return out;
}
// The SDK's list (IVideoSDKVector / IList): copied, as the SDK owns it only for the call.
template <class List> std::vector<rawfx_video_capability> capabilities(List *list) {
    std::vector<rawfx_video_capability> out;
    if (list)
        for (int i = 0; i < list->GetCount(); i++) out.push_back(capability(list->GetItem(i)));
    return out;
}

// A sender's answer as a code: the Video SDK's video sender returns nothing (success).
template <class F> int32_t code_of(F &&call) {
    if constexpr (std::is_void_v<decltype(call())>) {
        call();
        return 0;
    } else {
        return static_cast<int32_t>(call());
    }
}

// The raw data's GetTimeStamp() (milliseconds), where the SDK's class has it (the Meeting SDK's
// from 6.4); 0 where it has none.
template <class T, class = void> struct has_timestamp : std::false_type {};
template <class T> struct has_timestamp<T, std::void_t<decltype(std::declval<T &>().GetTimeStamp())>> : std::true_type {};
template <class T> uint64_t timestamp_of(T *data) {
    if constexpr (has_timestamp<T>::value)
        return static_cast<uint64_t>(data->GetTimeStamp());
    else
        return 0;
}

// A received frame (the same class in both SDKs) as rawfx_video_raw_data: the planes lent for
// the call, the SDK's reference counting.
inline rawfx_video_raw_data raw_data_of(::YUVRawDataI420 *data) {
    rawfx_video_raw_data raw{};
    raw.struct_size = sizeof raw;
    raw.width = data->GetStreamWidth();
    raw.height = data->GetStreamHeight();
    raw.planes[0] = data->GetYBuffer();
    raw.planes[1] = data->GetUBuffer();
    raw.planes[2] = data->GetVBuffer();
    // The SDK's received planes are packed: each row is the plane's width.
    raw.strides[0] = static_cast<int32_t>(raw.width);
    raw.strides[1] = raw.strides[2] = static_cast<int32_t>((raw.width + 1) / 2);
    raw.rotation = data->GetRotation();
    raw.is_limited = data->IsLimitedI420() ? 1 : 0;
    raw.timestamp_ms = timestamp_of(data);
    raw.sdk_object = data;
    raw.can_add_ref = [](void *o) -> int32_t { return static_cast<::YUVRawDataI420 *>(o)->CanAddRef() ? 1 : 0; };
    raw.add_ref = [](void *o) -> int32_t { return static_cast<::YUVRawDataI420 *>(o)->AddRef() ? 1 : 0; };
    raw.release = [](void *o) -> int32_t { return static_cast<::YUVRawDataI420 *>(o)->Release(); };
    return raw;
}

inline rawfx_hook *create_share_source(rawfx_registry *registry, const char *chain, const rawfx_hook_options *options,
                                       uint32_t output_width, uint32_t output_height) {
    rawfx_hook *h = nullptr;
    check(rawfx_share_source_create(registry, chain, options, output_width, output_height, &h), "rawfx_share_source_create");
    return h;
}
} // namespace detail

// onPreProcessRawData(YUVProcessDataI420*), the same in both SDKs: runs the chain in place.
template <class Interface> class basic_pre_processor : public Interface, public hook {
public:
    // `frame_format` (may be null) checks the chain against the camera's format now.
    basic_pre_processor(rawfx_registry *registry, const std::string &chain, const rawfx_video_format *frame_format = nullptr)
        : hook(detail::create_preprocessor(registry, chain.c_str(), frame_format)) {}

    void onPreProcessRawData(::YUVProcessDataI420 *data) override {
        if (!data) return;
        rawfx_video_frame frame{};
        frame.struct_size = sizeof frame;
        frame.width = data->GetWidth();
        frame.height = data->GetHeight();
        frame.pixel_format = RAWFX_PIXEL_I420;
        frame.color_range = data->IsLimitedI420() ? RAWFX_RANGE_LIMITED : RAWFX_RANGE_FULL;
        frame.rotation = data->GetRotation();
        frame.planes[0] = reinterpret_cast<uint8_t *>(data->GetYBuffer(0));
        frame.planes[1] = reinterpret_cast<uint8_t *>(data->GetUBuffer(0));
        frame.planes[2] = reinterpret_cast<uint8_t *>(data->GetVBuffer(0));
        frame.strides[0] = static_cast<int32_t>(data->GetYStride());
        frame.strides[1] = static_cast<int32_t>(data->GetUStride());
        frame.strides[2] = static_cast<int32_t>(data->GetVStride());
        keep(rawfx_preprocessor_process(get(), &frame));
    }
};

// Received audio (AudioRawData*, global in both SDKs) into the speaker hook.
class audio_receiver : public hook {
public:
    // Called with each processed block of a stream (RAWFX_STREAM_*), valid during the call.
    using sink = std::function<void(int32_t stream, uint64_t user_id, const rawfx_audio_frame &block)>;

    audio_receiver(rawfx_registry *registry, const std::string &chain, sink s, const rawfx_hook_options *options = nullptr)
        : hook(create(registry, chain.c_str(), options, this)), sink_(std::move(s)) {}
    // The speaker flushes every stream to the sink as it closes: before sink_ goes.
    ~audio_receiver() override { close(); }

    // [control] A user left, or a stream ended: its chain is flushed to the sink and released.
    void remove_stream(int32_t stream, uint64_t user_id = 0) {
        check(rawfx_speaker_remove_stream(get(), stream, user_id), "rawfx_speaker_remove_stream");
    }
    // [control] Async mode: waits for the worker.
    void drain() { check(rawfx_speaker_drain(get()), "rawfx_speaker_drain"); }
    // [control] The frames by which a stream's output lags its input.
    uint32_t latency(int32_t stream, uint64_t user_id = 0) const {
        uint32_t frames = 0;
        check(rawfx_speaker_latency(get(), stream, user_id, &frames), "rawfx_speaker_latency");
        return frames;
    }

protected:
    void receive(int32_t stream, uint64_t user_id, ::AudioRawData *data) {
        if (!data) return;
        rawfx_audio_raw_data raw{};
        raw.struct_size = sizeof raw;
        raw.buffer = data->GetBuffer();
        raw.buffer_len = data->GetBufferLen();
        raw.sample_rate = data->GetSampleRate();
        raw.channel_num = data->GetChannelNum();
        raw.timestamp_ms = detail::timestamp_of(data);
        raw.sdk_object = data;
        raw.can_add_ref = [](void *o) -> int32_t { return static_cast<::AudioRawData *>(o)->CanAddRef() ? 1 : 0; };
        raw.add_ref = [](void *o) -> int32_t { return static_cast<::AudioRawData *>(o)->AddRef() ? 1 : 0; };
        raw.release = [](void *o) -> int32_t { return static_cast<::AudioRawData *>(o)->Release(); };
        keep(rawfx_speaker_receive(get(), stream, user_id, &raw));
    }

private:
    static rawfx_hook *create(rawfx_registry *registry, const char *chain, const rawfx_hook_options *options, audio_receiver *self) {
        rawfx_hook *h = nullptr;
        check(rawfx_speaker_create(registry, chain, options, &audio_receiver::deliver, self, &h), "rawfx_speaker_create");
        return h;
    }
    static void deliver(void *self, int32_t stream, uint64_t user_id, const rawfx_audio_frame *block) {
        auto *receiver = static_cast<audio_receiver *>(self);
        if (receiver->sink_) receiver->sink_(stream, user_id, *block);
    }
    sink sink_;
};

// A virtual camera: the SDK's video source interface. `send` calls the SDK's sender with the
// format as the SDK's own FrameDataFormat (ZOOMVIDEOSDK:: or ZOOMSDK::).
template <class Interface, class Sender, class List, class Capability, class Format>
class basic_video_source : public Interface, public lifecycle_source {
public:
    basic_video_source(rawfx_registry *registry, const std::string &chain, const rawfx_hook_options *options = nullptr)
        : lifecycle_source(detail::create_video_source(registry, chain.c_str(), options)) {}

    void onInitialize(Sender *sender, List *support_cap_list, Capability &suggest_cap) override {
        auto supported = detail::capabilities(support_cap_list);
        auto suggested = detail::capability(suggest_cap);
        keep(rawfx_video_source_on_initialize(get(), &basic_video_source::send, sender, supported.data(), supported.size(), &suggested));
    }
    void onPropertyChange(List *support_cap_list, Capability suggest_cap) override {
        auto supported = detail::capabilities(support_cap_list);
        auto suggested = detail::capability(suggest_cap);
        keep(rawfx_video_source_on_property_change(get(), supported.data(), supported.size(), &suggested));
    }
    void onStartSend() override { keep(rawfx_video_source_on_start_send(get())); }
    void onStopSend() override { keep(rawfx_video_source_on_stop_send(get())); }
    void onUninitialized() override { keep(rawfx_video_source_on_uninitialized(get())); }

    // [app] One frame from the app's loop (any size and strides): RAWFX_OK when sent or
    // queued, RAWFX_E_STATE outside start/stop.
    rawfx_result push_frame(const rawfx_video_frame &frame) { return keep(rawfx_video_source_push_frame(get(), &frame)); }
    // The capability frames are sent at.
    rawfx_video_capability capability() const {
        rawfx_video_capability c{};
        check(rawfx_video_source_capability(get(), &c), "rawfx_video_source_capability");
        return c;
    }

private:
    static int32_t send(void *sender, char *buffer, int32_t width, int32_t height, int32_t length, int32_t rotation, int32_t format) {
        return detail::code_of([&] {
            return static_cast<Sender *>(sender)->sendVideoFrame(buffer, width, height, length, rotation,
                                                                 static_cast<Format>(format));
        });
    }
};

// A virtual microphone: `Send` calls the sender's method (the Video SDK's `Send`, the Meeting
// SDK's `send`) with the channel as that SDK takes it.
template <class Interface, class Sender, class Send>
class basic_virtual_mic : public Interface, public lifecycle_source {
public:
    // target_rate 0: 48000; pacing RAWFX_PACING_*.
    basic_virtual_mic(rawfx_registry *registry, const std::string &chain, uint32_t target_rate = 0,
                      int32_t pacing = RAWFX_PACING_WORKER)
        : lifecycle_source(detail::create_mic(registry, chain.c_str(), target_rate, pacing)) {}

    void onMicInitialize(Sender *sender) override { keep(rawfx_virtual_mic_on_initialize(get(), &basic_virtual_mic::send, sender)); }
    void onMicStartSend() override { keep(rawfx_virtual_mic_on_start_send(get())); }
    void onMicStopSend() override { keep(rawfx_virtual_mic_on_stop_send(get())); }
    void onMicUninitialized() override { keep(rawfx_virtual_mic_on_uninitialized(get())); }

    // [app] Interleaved s16 PCM; timestamp_us of its first sample, or RAWFX_TIMESTAMP_CONTINUE.
    rawfx_result push_audio(const rawfx_audio_frame &block, int64_t timestamp_us = RAWFX_TIMESTAMP_CONTINUE) {
        return keep(rawfx_virtual_mic_push_audio(get(), &block, timestamp_us));
    }
    // [app] RAWFX_PACING_CALLER: sends what is due at now_us; returns when the next is due (-1: none).
    int64_t pump(int64_t now_us) {
        int64_t next = -1;
        keep(rawfx_virtual_mic_pump(get(), now_us, &next));
        return next;
    }
    uint64_t chunks_sent() const { return rawfx_virtual_mic_chunks_sent(get()); }

private:
    static int32_t send(void *sender, char *data, uint32_t length, int32_t rate, int32_t channel) {
        return detail::code_of([&] { return Send()(static_cast<Sender *>(sender), data, length, rate, channel); });
    }
};

// Raw frames shared as a screen: what both SDKs' share source interfaces do, under their own
// callback names (the subclasses below). Frames go out at the chain's output size (even), or
// fitted to output_width x output_height when both are nonzero. `Format`: the SDK's FrameDataFormat.
template <class Sender, class Format>
class basic_share_source : public lifecycle_source {
public:
    // [app] One frame from the app's loop (any size and strides): RAWFX_OK when sent or
    // queued, RAWFX_E_STATE outside started/stopped.
    rawfx_result push_frame(const rawfx_video_frame &frame) { return keep(rawfx_share_source_push_frame(get(), &frame)); }

protected:
    basic_share_source(rawfx_registry *registry, const std::string &chain, const rawfx_hook_options *options,
                       uint32_t output_width, uint32_t output_height)
        : lifecycle_source(detail::create_share_source(registry, chain.c_str(), options, output_width, output_height)) {}
    // [sdk] The SDK's start (a null sender: nothing is sent) and stop.
    void started(Sender *sender) {
        keep(rawfx_share_source_on_share_send_started(get(), sender ? &basic_share_source::send : nullptr, sender));
    }
    void stopped() { keep(rawfx_share_source_on_share_send_stopped(get())); }

private:
    static int32_t send(void *sender, char *buffer, int32_t width, int32_t height, int32_t length, int32_t format) {
        return detail::code_of([&] {
            return static_cast<Sender *>(sender)->sendShareFrame(buffer, width, height, length, static_cast<Format>(format));
        });
    }
};

#if defined(RAWFX_WITH_ZOOM_VIDEO_SDK)
// ---- Video SDK ----
using pre_processor = basic_pre_processor<ZOOMVIDEOSDK::IZoomVideoSDKVideoSourcePreProcessor>;

// IZoomVideoSDKVirtualAudioSpeaker: the mix, each user (keyed by rawfx_user_key of the user
// id), share audio.
class virtual_speaker : public ZOOMVIDEOSDK::IZoomVideoSDKVirtualAudioSpeaker, public audio_receiver {
public:
    using audio_receiver::audio_receiver;
    void onVirtualSpeakerMixedAudioReceived(::AudioRawData *data) override { receive(RAWFX_STREAM_MIXED, 0, data); }
    void onVirtualSpeakerOneWayAudioReceived(::AudioRawData *data, ZOOMVIDEOSDK::IZoomVideoSDKUser *user) override {
        receive(RAWFX_STREAM_ONE_WAY, user ? rawfx_user_key(user->getUserID()) : 0, data);
    }
    void onVirtualSpeakerSharedAudioReceived(::AudioRawData *data) override { receive(RAWFX_STREAM_SHARED, 0, data); }
    // onUserLeave (IZoomVideoSDKDelegate): release that user's stream.
    void user_left(ZOOMVIDEOSDK::IZoomVideoSDKUser *user) {
        if (user) remove_stream(RAWFX_STREAM_ONE_WAY, rawfx_user_key(user->getUserID()));
    }
};

using video_source = basic_video_source<ZOOMVIDEOSDK::IZoomVideoSDKVideoSource, ZOOMVIDEOSDK::IZoomVideoSDKVideoSender,
                                        ZOOMVIDEOSDK::IVideoSDKVector<ZOOMVIDEOSDK::VideoSourceCapability>,
                                        ZOOMVIDEOSDK::VideoSourceCapability, ZOOMVIDEOSDK::FrameDataFormat>;

// IZoomVideoSDKShareSource (startSharingExternalSource): onShareSendStarted / onShareSendStopped.
class share_source : public ZOOMVIDEOSDK::IZoomVideoSDKShareSource,
                     public basic_share_source<ZOOMVIDEOSDK::IZoomVideoSDKShareSender, ZOOMVIDEOSDK::FrameDataFormat> {
public:
    share_source(rawfx_registry *registry, const std::string &chain, const rawfx_hook_options *options = nullptr,
                 uint32_t output_width = 0, uint32_t output_height = 0)
        : basic_share_source(registry, chain, options, output_width, output_height) {}
    void onShareSendStarted(ZOOMVIDEOSDK::IZoomVideoSDKShareSender *sender) override { started(sender); }
    void onShareSendStopped() override { stopped(); }
};

// Received video per user: subscribe each user's video or share pipe; each (user, pipe) runs
// its own chain, and the sink gets the processed frames. One IZoomVideoSDKRawDataPipeDelegate
// per subscription, owned here.
class receive_video : public hook {
public:
    using sink = std::function<void(uint64_t user_id, int32_t pipe_kind, const rawfx_video_frame &frame)>;

    receive_video(rawfx_registry *registry, const std::string &chain, sink s, const rawfx_hook_options *options = nullptr)
        : hook(create(registry, chain.c_str(), options, this)), sink_(std::move(s)) {}
    // Unsubscribes every pipe (through the subscriptions, still alive here), then frees.
    ~receive_video() override { close(); }

    // [control] Subscribes `pipe` at `resolution` (a concrete one: Auto is refused for raw
    // data); `format` (may be null) is what the chain is negotiated for now. Throws rawfx::error.
    void subscribe(ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipe *pipe, uint64_t user_id, int32_t pipe_kind,
                   ZOOMVIDEOSDK::ZoomVideoSDKResolution resolution, const rawfx_video_format *format = nullptr) {
        // Kept here only once the hook took it: a refusal (this pipe already subscribed, say)
        // frees the new delegate and leaves the live subscription as it was.
        auto made = std::make_unique<subscription>(pipe);
        check(rawfx_receive_video_subscribe(get(), made.get(), &subscription::subscribe, &subscription::unsubscribe, user_id,
                                            pipe_kind, static_cast<int32_t>(resolution), format),
              "rawfx_receive_video_subscribe");
        subscriptions_[{user_id, pipe_kind}] = std::move(made);
    }
    // [control] A user's video (or share) pipe, keyed by rawfx_user_key of its id.
    void subscribe(ZOOMVIDEOSDK::IZoomVideoSDKUser *user, int32_t pipe_kind, ZOOMVIDEOSDK::ZoomVideoSDKResolution resolution) {
        subscribe(pipe_kind == RAWFX_PIPE_SHARE ? user->GetSharePipe() : user->GetVideoPipe(), rawfx_user_key(user->getUserID()),
                  pipe_kind, resolution);
    }
    // [control] Unsubscribes one pipe; false if it was not subscribed.
    bool unsubscribe(uint64_t user_id, int32_t pipe_kind) {
        bool done = rawfx_receive_video_unsubscribe(get(), user_id, pipe_kind) == RAWFX_OK;
        subscriptions_.erase({user_id, pipe_kind});
        return done;
    }
    // [control] Async: waits until every stream's worker is idle.
    void wait_idle() { check(rawfx_receive_video_wait_idle(get()), "rawfx_receive_video_wait_idle"); }

private:
    struct subscription : ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipeDelegate {
        explicit subscription(ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipe *p) : pipe(p) {}
        ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipe *pipe;
        rawfx_pipe_delegate *token = nullptr;
        rawfx_result last = RAWFX_OK;

        void onRawDataFrameReceived(::YUVRawDataI420 *data) override {
            if (!data) return;
            rawfx_video_raw_data raw = detail::raw_data_of(data);
            last = rawfx_pipe_frame_received(token, &raw);
        }
        void onRawDataStatusChanged(ZOOMVIDEOSDK::RawDataStatus status) override {
            last = rawfx_pipe_status_changed(token, status == ZOOMVIDEOSDK::RawData_On ? 0 : 1);
        }
        static int32_t subscribe(void *self, rawfx_pipe_delegate *token, int32_t resolution) {
            auto *s = static_cast<subscription *>(self);
            s->token = token;
            return static_cast<int32_t>(s->pipe->subscribe(static_cast<ZOOMVIDEOSDK::ZoomVideoSDKResolution>(resolution), s));
        }
        static int32_t unsubscribe(void *self, rawfx_pipe_delegate *) {
            auto *s = static_cast<subscription *>(self);
            return static_cast<int32_t>(s->pipe->unSubscribe(s));
        }
    };
    static_assert(!std::is_abstract<subscription>::value, "IZoomVideoSDKRawDataPipeDelegate: a callback is not overridden");

    static rawfx_hook *create(rawfx_registry *registry, const char *chain, const rawfx_hook_options *options, receive_video *self) {
        rawfx_hook *h = nullptr;
        check(rawfx_receive_video_create(registry, chain, options, &receive_video::deliver, self, &h), "rawfx_receive_video_create");
        return h;
    }
    static void deliver(void *self, uint64_t user_id, int32_t pipe_kind, const rawfx_video_frame *frame) {
        auto *r = static_cast<receive_video *>(self);
        if (r->sink_) r->sink_(user_id, pipe_kind, *frame);
    }
    sink sink_;
    std::map<std::pair<uint64_t, int32_t>, std::unique_ptr<subscription>> subscriptions_;
};

namespace detail {
struct video_sdk_audio_send {
    ZOOMVIDEOSDK::ZoomVideoSDKErrors operator()(ZOOMVIDEOSDK::IZoomVideoSDKAudioSender *s, char *data, unsigned int length,
                                                int rate, int32_t channel) const {
        return s->Send(data, length, rate, static_cast<ZOOMVIDEOSDK::ZoomVideoSDKAudioChannel>(channel));
    }
};
} // namespace detail
using virtual_mic = basic_virtual_mic<ZOOMVIDEOSDK::IZoomVideoSDKVirtualAudioMic, ZOOMVIDEOSDK::IZoomVideoSDKAudioSender,
                                      detail::video_sdk_audio_send>;
#endif

#if defined(RAWFX_WITH_ZOOM_MEETING_SDK)
// ---- Meeting SDK ----
using meeting_pre_processor = basic_pre_processor<ZOOMSDK::IZoomSDKPreProcessor>;

// IZoomSDKAudioRawDataDelegate (subscribe it with IZoomSDKAudioRawDataHelper::subscribe), with
// the callbacks of RAWFX_ZOOM_MEETING_SDK_VERSION's release (above). Share audio is one stream
// whether or not the SDK names the sharer. Interpreter audio is not processed (no stream of its
// own in RawFX yet).
class meeting_audio_delegate : public ZOOMSDK::IZoomSDKAudioRawDataDelegate, public audio_receiver {
public:
    using audio_receiver::audio_receiver;
    void onMixedAudioRawDataReceived(::AudioRawData *data) override { receive(RAWFX_STREAM_MIXED, 0, data); }
    void onOneWayAudioRawDataReceived(::AudioRawData *data, uint32_t user_id) override { receive(RAWFX_STREAM_ONE_WAY, user_id, data); }
#if RAWFX_ZOOM_MEETING_SHARE_AUDIO == 2
    void onShareAudioRawDataReceived(::AudioRawData *data, uint32_t) override { receive(RAWFX_STREAM_SHARED, 0, data); }
#elif RAWFX_ZOOM_MEETING_SHARE_AUDIO == 1
    void onShareAudioRawDataReceived(::AudioRawData *data) override { receive(RAWFX_STREAM_SHARED, 0, data); }
#endif
#if RAWFX_ZOOM_MEETING_INTERPRETER_AUDIO
    void onOneWayInterpreterAudioRawDataReceived(::AudioRawData *, const ::zchar_t *) override {}
#endif
};
static_assert(!std::is_abstract<meeting_audio_delegate>::value,
              "IZoomSDKAudioRawDataDelegate has callbacks meeting_audio_delegate does not override: define "
              "RAWFX_ZOOM_MEETING_SDK_VERSION as your Meeting SDK's version (major * 10000 + minor * 100 + patch)");

using meeting_video_source = basic_video_source<ZOOMSDK::IZoomSDKVideoSource, ZOOMSDK::IZoomSDKVideoSender,
                                                ZOOMSDK::IList<ZOOMSDK::VideoSourceCapability>, ZOOMSDK::VideoSourceCapability,
                                                ZOOMSDK::FrameDataFormat>;

// IZoomSDKShareSource (the Meeting SDK's external share source): onStartSend / onStopSend.
class meeting_share_source : public ZOOMSDK::IZoomSDKShareSource,
                             public basic_share_source<ZOOMSDK::IZoomSDKShareSender, ZOOMSDK::FrameDataFormat> {
public:
    meeting_share_source(rawfx_registry *registry, const std::string &chain, const rawfx_hook_options *options = nullptr,
                         uint32_t output_width = 0, uint32_t output_height = 0)
        : basic_share_source(registry, chain, options, output_width, output_height) {}
    void onStartSend(ZOOMSDK::IZoomSDKShareSender *sender) override { started(sender); }
    void onStopSend() override { stopped(); }
};

// Received video through the Meeting SDK's renderers: one IZoomSDKRendererDelegate per
// (subscribe id, raw data type), owned here, each bound to a renderer made for it by the SDK's
// createRenderer and destroyed by its destroyRenderer when unsubscribed. Every stream runs its
// own chain; the sink gets the processed frames with the subscribe id (the user id for video,
// the share source id for share) and RAWFX_PIPE_VIDEO or RAWFX_PIPE_SHARE.
// onRendererBeDestroyed (the SDK tore the renderer down, e.g. the user left): the stream is
// stopped as by RawData_Off (queued frames dropped, the chain drained) and the renderer is never
// touched again; unsubscribe() then only releases the stream.
class meeting_receive_video : public hook {
public:
    using sink = std::function<void(uint64_t subscribe_id, int32_t pipe_kind, const rawfx_video_frame &frame)>;
    // ZOOMSDK::createRenderer and ZOOMSDK::destroyRenderer (rawdata/zoom_rawdata_api.h), or wrappers.
    using create_renderer = std::function<ZOOMSDK::SDKError(ZOOMSDK::IZoomSDKRenderer **, ZOOMSDK::IZoomSDKRendererDelegate *)>;
    using destroy_renderer = std::function<ZOOMSDK::SDKError(ZOOMSDK::IZoomSDKRenderer *)>;

    meeting_receive_video(rawfx_registry *registry, const std::string &chain, sink s, create_renderer create,
                          destroy_renderer destroy, const rawfx_hook_options *options = nullptr)
        : hook(create_hook(registry, chain.c_str(), options, this)), sink_(std::move(s)), create_(std::move(create)),
          destroy_(std::move(destroy)) {}
    // Unsubscribes every renderer (through the delegates, still alive here), frees the hook,
    // then the delegates destroy their renderers.
    ~meeting_receive_video() override { close(); }

    // [control] Makes a renderer for a new delegate, then (through the C hook, which builds the
    // stream's chain for `format`, or for the resolution's nominal size when null)
    // setRawDataResolution(resolution) and subscribe(subscribe_id, type). Throws rawfx::error:
    // the renderer's refusal is RAWFX_E_PROCESS with its SDKError code.
    void subscribe(uint32_t subscribe_id, ZOOMSDK::ZoomSDKRawDataType type, ZOOMSDK::ZoomSDKResolution resolution,
                   const rawfx_video_format *format = nullptr) {
        auto made = std::make_unique<delegate>(subscribe_id, type, &destroy_);
        ZOOMSDK::IZoomSDKRenderer *renderer = nullptr;
        ZOOMSDK::SDKError created = create_(&renderer, made.get());
        if (created != ZOOMSDK::SDKERR_SUCCESS || !renderer) throw error("createRenderer", RAWFX_E_PROCESS);
        made->renderer.store(renderer);
        int32_t kind = pipe_kind(type);
        // Kept here only once the hook took it: a refusal (this stream already subscribed, say)
        // destroys the new delegate and its renderer, and leaves the live subscription as it was.
        check(rawfx_receive_video_subscribe(get(), made.get(), &delegate::subscribe, &delegate::unsubscribe, subscribe_id, kind,
                                            static_cast<int32_t>(resolution), format),
              "rawfx_receive_video_subscribe");
        subscriptions_[{subscribe_id, kind}] = std::move(made);
    }
    // [control] Unsubscribes one renderer and destroys it; false if it was not subscribed.
    bool unsubscribe(uint32_t subscribe_id, ZOOMSDK::ZoomSDKRawDataType type) {
        int32_t kind = pipe_kind(type);
        bool done = rawfx_receive_video_unsubscribe(get(), subscribe_id, kind) == RAWFX_OK;
        subscriptions_.erase({subscribe_id, kind});
        return done;
    }
    // [control] Async: waits until every stream's queued frames are processed.
    void wait_idle() { check(rawfx_receive_video_wait_idle(get()), "rawfx_receive_video_wait_idle"); }
    // The renderer of a subscription (null once the SDK destroyed it, or if not subscribed).
    ZOOMSDK::IZoomSDKRenderer *renderer(uint32_t subscribe_id, ZOOMSDK::ZoomSDKRawDataType type) const {
        auto found = subscriptions_.find({subscribe_id, pipe_kind(type)});
        return found == subscriptions_.end() ? nullptr : found->second->renderer.load();
    }
    // The result of the last callback of a subscription's delegate.
    rawfx_result last_result(uint32_t subscribe_id, ZOOMSDK::ZoomSDKRawDataType type) const {
        auto found = subscriptions_.find({subscribe_id, pipe_kind(type)});
        return found == subscriptions_.end() ? RAWFX_E_NOT_FOUND : found->second->last.load();
    }
    using hook::last_result;

private:
    static int32_t pipe_kind(ZOOMSDK::ZoomSDKRawDataType type) {
        return type == ZOOMSDK::RAW_DATA_TYPE_SHARE ? RAWFX_PIPE_SHARE : RAWFX_PIPE_VIDEO;
    }

    struct delegate : ZOOMSDK::IZoomSDKRendererDelegate {
        delegate(uint32_t id_, ZOOMSDK::ZoomSDKRawDataType type_, const destroy_renderer *destroy_)
            : id(id_), type(type_), destroy(destroy_) {}
        // The SDK's thread clears it (onRendererBeDestroyed) while the app's may read it.
        std::atomic<ZOOMSDK::IZoomSDKRenderer *> renderer{nullptr};
        uint32_t id;
        ZOOMSDK::ZoomSDKRawDataType type;
        const destroy_renderer *destroy;
        rawfx_pipe_delegate *token = nullptr;
        std::atomic<rawfx_result> last{RAWFX_OK};

        ~delegate() override {
            ZOOMSDK::IZoomSDKRenderer *r = renderer.exchange(nullptr);
            if (r && *destroy) (*destroy)(r);
        }
        void onRawDataFrameReceived(::YUVRawDataI420 *data) override {
            if (!data) return;
            rawfx_video_raw_data raw = detail::raw_data_of(data);
            last = rawfx_pipe_frame_received(token, &raw);
        }
        void onRawDataStatusChanged(ZOOMSDK::IZoomSDKRendererDelegate::RawDataStatus status) override {
            last = rawfx_pipe_status_changed(token, status == ZOOMSDK::IZoomSDKRendererDelegate::RawData_On ? 0 : 1);
        }
        void onRendererBeDestroyed() override {
            renderer.store(nullptr);
            last = rawfx_pipe_status_changed(token, 1);
        }
        static int32_t subscribe(void *self, rawfx_pipe_delegate *token, int32_t resolution) {
            auto *d = static_cast<delegate *>(self);
            d->token = token;
            ZOOMSDK::IZoomSDKRenderer *r = d->renderer.load();
            if (!r) return ZOOMSDK::SDKERR_WRONG_USAGE;
            ZOOMSDK::SDKError set = r->setRawDataResolution(static_cast<ZOOMSDK::ZoomSDKResolution>(resolution));
            if (set != ZOOMSDK::SDKERR_SUCCESS) return static_cast<int32_t>(set);
            return static_cast<int32_t>(r->subscribe(d->id, d->type));
        }
        static int32_t unsubscribe(void *self, rawfx_pipe_delegate *) {
            ZOOMSDK::IZoomSDKRenderer *r = static_cast<delegate *>(self)->renderer.load();
            return r ? static_cast<int32_t>(r->unSubscribe()) : 0;
        }
    };
    static_assert(!std::is_abstract<delegate>::value, "IZoomSDKRendererDelegate: a callback is not overridden");

    static rawfx_hook *create_hook(rawfx_registry *registry, const char *chain, const rawfx_hook_options *options,
                                   meeting_receive_video *self) {
        rawfx_hook *h = nullptr;
        check(rawfx_receive_video_create(registry, chain, options, &meeting_receive_video::deliver, self, &h),
              "rawfx_receive_video_create");
        return h;
    }
    static void deliver(void *self, uint64_t id, int32_t pipe_kind, const rawfx_video_frame *frame) {
        auto *r = static_cast<meeting_receive_video *>(self);
        if (r->sink_) r->sink_(id, pipe_kind, *frame);
    }
    sink sink_;
    create_renderer create_;
    destroy_renderer destroy_;
    std::map<std::pair<uint64_t, int32_t>, std::unique_ptr<delegate>> subscriptions_;
};

namespace detail {
// The channel parameter of the sender's send: its type (ZOOMSDK::ZoomSDKAudioChannel), or void
// where send has none (Meeting SDK before 5.15: mono only).
template <class F> struct send_channel { using type = void; };
template <class R, class S, class C> struct send_channel<R (S::*)(char *, unsigned int, int, C)> { using type = C; };
struct meeting_sdk_audio_send {
    template <class Sender> ZOOMSDK::SDKError operator()(Sender *s, char *data, unsigned int length, int rate, int32_t channel) const {
        using channel_type = typename send_channel<decltype(&Sender::send)>::type;
        if constexpr (std::is_void_v<channel_type>) {
            if (channel != 0) return ZOOMSDK::SDKERR_INVALID_PARAMETER;  // stereo, which such a sender cannot take
            return s->send(data, length, rate);
        } else {
            return s->send(data, length, rate, static_cast<channel_type>(channel));
        }
    }
};
} // namespace detail
using meeting_virtual_mic = basic_virtual_mic<ZOOMSDK::IZoomSDKVirtualAudioMicEvent, ZOOMSDK::IZoomSDKAudioRawDataSender,
                                              detail::meeting_sdk_audio_send>;

#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
// Production studio mode (IMeetingProductionStudioCtrlEvent; set it with the controller's
// SetEvent): pushed video is fitted to exactly `capability` (what you pass to StartPSMode),
// pushed audio goes out as paced 10 ms chunks at audio_rate; both through the one PS sender.
class meeting_production_studio : public ZOOMSDK::IMeetingProductionStudioCtrlEvent, public lifecycle_source {
public:
    meeting_production_studio(rawfx_registry *registry, const std::string &video_chain, const std::string &audio_chain,
                              const ZOOMSDK::PSVideoSourceCapability &capability, uint32_t audio_rate = 0,
                              int32_t pacing = RAWFX_PACING_WORKER, const rawfx_hook_options *options = nullptr)
        : lifecycle_source(create(registry, video_chain.c_str(), audio_chain.c_str(), capability, audio_rate, pacing, options)) {}

    void onStartPSModeResult(bool success) override { keep(rawfx_production_studio_on_start_ps_mode_result(get(), success ? 1 : 0)); }
    void onStartSend(ZOOMSDK::IZoomSDKPSSender *sender) override {
        keep(sender ? rawfx_production_studio_on_start_send(get(), &send_video, &send_audio, sender)
                    : rawfx_production_studio_on_start_send(get(), nullptr, nullptr, nullptr));
    }
    void onStopSend() override { keep(rawfx_production_studio_on_stop_send(get())); }
    void onPSUserStatusChanged(unsigned int user_id, bool start) override {
        keep(rawfx_production_studio_on_ps_user_status_changed(get(), user_id, start ? 1 : 0));
    }

    // [app] As video_source::push_frame and virtual_mic::push_audio / pump.
    rawfx_result push_frame(const rawfx_video_frame &frame) { return keep(rawfx_production_studio_push_frame(get(), &frame)); }
    rawfx_result push_audio(const rawfx_audio_frame &block, int64_t timestamp_us = RAWFX_TIMESTAMP_CONTINUE) {
        return keep(rawfx_production_studio_push_audio(get(), &block, timestamp_us));
    }
    int64_t pump(int64_t now_us) {
        int64_t next = -1;
        keep(rawfx_production_studio_pump(get(), now_us, &next));
        return next;
    }
    // [control] One of the two chains: RAWFX_MEDIA_VIDEO or RAWFX_MEDIA_AUDIO.
    void set_chain(int32_t media, const std::string &chain) {
        check(rawfx_production_studio_set_chain(get(), media, chain.c_str()), "rawfx_production_studio_set_chain");
    }
    void set_parameter(int32_t media, const std::string &address, const std::string &value) {
        check(rawfx_production_studio_set_parameter(get(), media, address.c_str(), value.c_str()), "rawfx_production_studio_set_parameter");
    }
    void set_bypass(int32_t media, const std::string &stage, bool bypassed) {
        check(rawfx_production_studio_set_bypass(get(), media, stage.c_str(), bypassed ? 1 : 0), "rawfx_production_studio_set_bypass");
    }

private:
    static rawfx_hook *create(rawfx_registry *registry, const char *video, const char *audio,
                              const ZOOMSDK::PSVideoSourceCapability &c, uint32_t rate, int32_t pacing, const rawfx_hook_options *options) {
        rawfx_hook *h = nullptr;
        check(rawfx_production_studio_create(registry, video, audio, c.width, c.height, static_cast<int32_t>(c.format), rate, pacing,
                                             options, &h),
              "rawfx_production_studio_create");
        return h;
    }
    static int32_t send_video(void *sender, char *buffer, int32_t width, int32_t height, int32_t length, int32_t format) {
        return static_cast<int32_t>(static_cast<ZOOMSDK::IZoomSDKPSSender *>(sender)->sendVideoFrame(
            buffer, width, height, length, static_cast<ZOOMSDK::FrameDataFormat>(format)));
    }
    static int32_t send_audio(void *sender, char *data, uint32_t length, int32_t rate, int32_t channel) {
        return static_cast<int32_t>(static_cast<ZOOMSDK::IZoomSDKPSSender *>(sender)->sendAudio(
            data, length, rate, static_cast<ZOOMSDK::ZoomSDKAudioChannel>(channel)));
    }
};
#endif // RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
#endif // RAWFX_WITH_ZOOM_MEETING_SDK

} // namespace zoom
} // namespace rawfx

#endif // RAWFX_ZOOM_ADAPTER_HPP

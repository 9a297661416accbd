// adapter_test.cpp — drives rawfx/zoom_adapter.hpp with fake SDK objects, as the Linux SDKs
// would call it, over files (built and run by HooksCTests):
//
//   adapter_test video-source video|meeting CHAIN WxH in.y4m out.y4m
//       a fake SDK offers capability WxH and starts sending; every input frame is pushed;
//       the fake sender checks the SDK's rules and writes what it receives as Y4M
//   adapter_test pre-processor video|meeting CHAIN in.y4m out.y4m
//       every frame is lent to onPreProcessRawData in padded planes, then written
//   adapter_test speaker video|meeting CHAIN in.wav out.wav
//       the WAV arrives as 10 ms mixed-audio callbacks (reference-counted fake AudioRawData),
//       then silence as a session would go on, until every input sample has come out of
//       the chain; the first `latency` frames are dropped (they precede the input)
//   adapter_test receive|receive-async video|meeting CHAIN in.y4m out.y4m
//       a fake user's video pipe (Video SDK) or a renderer made by a fake createRenderer
//       (Meeting SDK) is subscribed; the SDK delivers every frame to the delegate as a
//       reference-counted YUVRawDataI420, then RawData_Off (Meeting SDK, async: then
//       onRendererBeDestroyed, after which the renderer is never called); the sink writes Y4M
//   adapter_test share-source video|meeting CHAIN in.y4m out.y4m
//       the SDK starts sharing with a fake share sender (packed I420, even sides, only while
//       started); every input frame is pushed; what the sender receives is written
//   adapter_test production-studio meeting VCHAIN WxH in.y4m out.y4m ACHAIN in.wav out.wav
//       PS mode accepted, onStartSend with a fake PS sender (exact capability, 32/48 kHz
//       mono, even lengths, one thread, only while sending); frames and audio pushed, paced
//       by a fake clock; what the sender receives is written
//   adapter_test mic video|meeting CHAIN in.wav out.wav
//       the WAV is pushed in 37 ms pieces into the virtual mic, paced by a fake clock; the
//       fake sender checks 10 ms chunks and writes them
//
// Exit status 0 on success; any broken SDK rule is a message on stderr and status 1.
//
// -DRAWFX_ZOOM_MEETING_SDK_VERSION=51400 (say) builds it against the stand-in's shape of an
// older Meeting SDK, and the adapter for that release: no timestamps on the raw data, the mic's
// send without a channel. The stand-in's production studio is a 6.x header: left out before 6.0.
#include "zoom_sdk_standin.h"
#if RAWFX_ZOOM_MEETING_SDK_VERSION >= 60000
#include "meeting_service_components/meeting_production_studio_ctrl_interface.h"
#else
#define RAWFX_ZOOM_HAS_PRODUCTION_STUDIO 0
#endif
#define RAWFX_WITH_ZOOM_VIDEO_SDK 1
#define RAWFX_WITH_ZOOM_MEETING_SDK 1
#include "rawfx/zoom_adapter.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

static int failures = 0;
#define EXPECT(condition, ...)                                  \
    do {                                                        \
        if (!(condition)) {                                     \
            std::fprintf(stderr, "adapter_test: " __VA_ARGS__); \
            std::fputc('\n', stderr);                           \
            failures++;                                         \
        }                                                       \
    } while (0)

// ---------------------------------------------------------------- Y4M I/O --

struct y4m {
    std::string header;  // the first line, without '\n'
    uint32_t width = 0, height = 0;
    bool full_range = false;
    std::vector<std::vector<uint8_t>> frames;  // packed I420
};

static bool read_y4m(const char *path, y4m &out) {
    FILE *f = std::fopen(path, "rb");
    if (!f) return false;
    char line[4096];
    if (!std::fgets(line, sizeof line, f)) return false;
    line[std::strcspn(line, "\n")] = 0;
    out.header = line;
    for (char *t = std::strtok(line, " "); t; t = std::strtok(nullptr, " ")) {
        if (t[0] == 'W') out.width = (uint32_t)std::strtoul(t + 1, nullptr, 10);
        if (t[0] == 'H') out.height = (uint32_t)std::strtoul(t + 1, nullptr, 10);
        if (std::strcmp(t, "XCOLORRANGE=FULL") == 0) out.full_range = true;
    }
    size_t size = (size_t)out.width * out.height + 2 * (size_t)((out.width + 1) / 2) * ((out.height + 1) / 2);
    while (std::fgets(line, sizeof line, f)) {
        std::vector<uint8_t> frame(size);
        if (std::fread(frame.data(), 1, size, f) != size) return false;
        out.frames.push_back(std::move(frame));
    }
    std::fclose(f);
    return true;
}

// The header as rawfx writes it for an output of w x h: W and H replaced, and the pixel
// aspect turned when the picture was (the same rule as docs/examples/embed.c).
static std::string output_header(const y4m &in, uint32_t w, uint32_t h) {
    bool turned = in.width != in.height && w == in.height && h == in.width;
    std::string out, copy = in.header;
    for (char *t = std::strtok(&copy[0], " "); t; t = std::strtok(nullptr, " ")) {
        if (!out.empty()) out += ' ';
        unsigned a, b;
        char field[64];
        if (t[0] == 'W') std::snprintf(field, sizeof field, "W%u", w), out += field;
        else if (t[0] == 'H') std::snprintf(field, sizeof field, "H%u", h), out += field;
        else if (t[0] == 'A' && turned && std::sscanf(t, "A%u:%u", &a, &b) == 2) std::snprintf(field, sizeof field, "A%u:%u", b, a), out += field;
        else out += t;
    }
    return out + "\n";
}

static rawfx_video_frame frame_over(uint8_t *packed, uint32_t w, uint32_t h, bool full) {
    rawfx_video_frame f{};
    f.struct_size = sizeof f;
    f.width = w;
    f.height = h;
    f.pixel_format = RAWFX_PIXEL_I420;
    f.color_range = full ? RAWFX_RANGE_FULL : RAWFX_RANGE_LIMITED;
    uint32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    f.planes[0] = packed;
    f.planes[1] = packed + (size_t)w * h;
    f.planes[2] = packed + (size_t)w * h + (size_t)cw * ch;
    f.strides[0] = (int32_t)w;
    f.strides[1] = f.strides[2] = (int32_t)cw;
    return f;
}

// ---------------------------------------------------------------- WAV I/O --

struct wav {
    uint32_t rate = 0, channels = 0;
    std::vector<int16_t> samples;
};

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static bool read_wav(const char *path, wav &out) {
    FILE *f = std::fopen(path, "rb");
    if (!f) return false;
    uint8_t riff[12], chunk[8], fmt[16];
    if (std::fread(riff, 1, 12, f) != 12 || std::memcmp(riff, "RIFF", 4) != 0) return false;
    for (;;) {
        if (std::fread(chunk, 1, 8, f) != 8) return false;
        uint32_t size = le32(chunk + 4);
        if (std::memcmp(chunk, "data", 4) == 0) {
            out.samples.resize(size / 2);
            if (std::fread(out.samples.data(), 2, size / 2, f) != size / 2) return false;
            break;
        }
        if (std::memcmp(chunk, "fmt ", 4) == 0) {
            if (std::fread(fmt, 1, 16, f) != 16) return false;
            out.channels = fmt[2] | fmt[3] << 8;
            out.rate = le32(fmt + 4);
            size -= 16;
        }
        std::fseek(f, (long)(size + (size & 1)), SEEK_CUR);
    }
    std::fclose(f);
    return true;
}

static void put32(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; p[2] = (v >> 16) & 0xFF; p[3] = v >> 24; }
static void put16(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; }

// 16-bit PCM with the 44-byte header rawfx writes.
static bool write_wav(const char *path, uint32_t rate, uint32_t channels, const std::vector<int16_t> &samples) {
    uint8_t h[44];
    uint32_t bytes = (uint32_t)samples.size() * 2;
    std::memcpy(h, "RIFF", 4); put32(h + 4, 36 + bytes); std::memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16); put16(h + 20, 1); put16(h + 22, channels); put32(h + 24, rate);
    put32(h + 28, rate * channels * 2); put16(h + 32, channels * 2); put16(h + 34, 16);
    std::memcpy(h + 36, "data", 4); put32(h + 40, bytes);
    FILE *f = std::fopen(path, "wb");
    if (!f) return false;
    std::fwrite(h, 1, 44, f);
    std::fwrite(samples.data(), 2, samples.size(), f);
    return std::fclose(f) == 0;
}

// 10 ms of silence in the WAV's format, as a block to push.
struct silence_10ms {
    std::vector<int16_t> samples;
    rawfx_audio_frame block{};
    explicit silence_10ms(const wav &w) : samples((size_t)(w.rate / 100) * w.channels, 0) {
        block.struct_size = sizeof block;
        block.samples = samples.data();
        block.frame_count = w.rate / 100;
        block.sample_rate = w.rate;
        block.channels = w.channels;
    }
};

// ------------------------------------------------------------- fake SDK --

template <class List, class T> struct fake_list : List {
    std::vector<T> items;
    int GetCount() override { return (int)items.size(); }
    T GetItem(int i) override { return items.at((size_t)i); }
};

// The SDK's rule for the video sender: packed I420 of the capability's size, only between
// onStartSend and onStopSend.
struct video_rules {
    bool sending = false;
    uint32_t width = 0, height = 0;
    std::vector<std::vector<uint8_t>> received;
    // sent_full: the sender was given its SDK's FrameDataFormat_I420_FULL.
    void check(char *buffer, int w, int h, int length, int rotation, bool sent_full, bool full) {
        EXPECT(sending, "sendVideoFrame outside onStartSend..onStopSend");
        EXPECT((uint32_t)w == width && (uint32_t)h == height, "sent %dx%d; the capability is %ux%u", w, h, width, height);
        EXPECT(length == w * h * 3 / 2, "frameLength %d for %dx%d", length, w, h);
        EXPECT(rotation == 0, "rotation %d", rotation);
        EXPECT(sent_full == full, "format %s for a %s range input", sent_full ? "full" : "limited", full ? "full" : "limited");
        received.emplace_back(buffer, buffer + length);
    }
};

struct fake_video_sender : ZOOMVIDEOSDK::IZoomVideoSDKVideoSender {
    video_rules *rules;
    bool full;
    void sendVideoFrame(char *b, int w, int h, int l, int r, ZOOMVIDEOSDK::FrameDataFormat f) override {
        rules->check(b, w, h, l, r, f == ZOOMVIDEOSDK::FrameDataFormat_I420_FULL, full);
    }
};
struct fake_meeting_video_sender : ZOOMSDK::IZoomSDKVideoSender {
    video_rules *rules;
    bool full;
    ZOOMSDK::SDKError sendVideoFrame(char *b, int w, int h, int l, int r, ZOOMSDK::FrameDataFormat f) override {
        rules->check(b, w, h, l, r, f == ZOOMSDK::FrameDataFormat_I420_FULL, full);
        return ZOOMSDK::SDKERR_SUCCESS;
    }
};

template <class Source, class Sender, class List, class Capability>
static int run_video_source(rawfx_registry *registry, const char *chain, uint32_t w, uint32_t h, const y4m &in, const char *out_path) {
    Source source(registry, chain);
    std::vector<int> events;
    source.on_lifecycle([&](const rawfx_lifecycle_event &e) { events.push_back(e.kind); });
    video_rules rules;
    rules.width = w;
    rules.height = h;
    Sender sender;
    sender.rules = &rules;
    sender.full = in.full_range;
    fake_list<List, Capability> list;
    Capability suggested{};
    suggested.width = w;
    suggested.height = h;
    suggested.frame = 25;
    Capability other = suggested;
    other.width = 1280;
    other.height = 720;
    list.items = {other, suggested};

    std::vector<uint8_t> copy(in.frames.empty() ? 0 : in.frames[0].size());
    // Before onStartSend a frame is refused and never sent.
    source.onInitialize(&sender, &list, suggested);
    if (!in.frames.empty()) {
        std::memcpy(copy.data(), in.frames[0].data(), copy.size());
        rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
        EXPECT(source.push_frame(f) == RAWFX_E_STATE, "a frame before onStartSend was not refused: %d", source.last_result());
    }
    rules.sending = true;
    source.onStartSend();
    for (const auto &frame : in.frames) {
        std::memcpy(copy.data(), frame.data(), copy.size());
        rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
        EXPECT(source.push_frame(f) == RAWFX_OK, "push_frame: %s", source.last_error().c_str());
    }
    source.onStopSend();
    rules.sending = false;
    if (!in.frames.empty()) {
        std::memcpy(copy.data(), in.frames[0].data(), copy.size());
        rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
        EXPECT(source.push_frame(f) == RAWFX_E_STATE, "a frame after onStopSend was not refused");
    }
    source.onUninitialized();
    EXPECT(events == std::vector<int>({RAWFX_EVENT_VIDEO_SOURCE_INITIALIZED, RAWFX_EVENT_VIDEO_SOURCE_STARTED,
                                       RAWFX_EVENT_VIDEO_SOURCE_STOPPED, RAWFX_EVENT_VIDEO_SOURCE_UNINITIALIZED}),
           "lifecycle events out of order (%zu)", events.size());
    EXPECT(rules.received.size() == in.frames.size(), "%zu frames sent for %zu pushed", rules.received.size(), in.frames.size());
    std::fprintf(stderr, "adapter_test: %s\n", source.metrics_json().c_str());

    FILE *out = std::fopen(out_path, "wb");
    std::string header = output_header(in, w, h);
    std::fwrite(header.data(), 1, header.size(), out);
    for (const auto &frame : rules.received) {
        std::fputs("FRAME\n", out);
        std::fwrite(frame.data(), 1, frame.size(), out);
    }
    std::fclose(out);
    return failures ? 1 : 0;
}

// The SDK's pre-processor frame: its own planes with padded strides, edited in place.
struct fake_process_data : YUVProcessDataI420 {
    uint32_t w, h, cw, ch, ystride, cstride;
    bool limited;
    std::vector<uint8_t> y, u, v;
    fake_process_data(uint32_t w_, uint32_t h_, bool limited_)
        : w(w_), h(h_), cw((w_ + 1) / 2), ch((h_ + 1) / 2), ystride(w_ + 32), cstride(cw + 16), limited(limited_),
          y((size_t)ystride * h), u((size_t)cstride * ch), v((size_t)cstride * ch) {}
    unsigned int GetWidth() override { return w; }
    unsigned int GetHeight() override { return h; }
    char *GetYBuffer(unsigned int line) override { return (char *)y.data() + (size_t)line * ystride; }
    char *GetUBuffer(unsigned int line) override { return (char *)u.data() + (size_t)line * cstride; }
    char *GetVBuffer(unsigned int line) override { return (char *)v.data() + (size_t)line * cstride; }
    unsigned int GetYStride() override { return ystride; }
    unsigned int GetUStride() override { return cstride; }
    unsigned int GetVStride() override { return cstride; }
    unsigned int GetRotation() override { return 0; }
    bool IsLimitedI420() override { return limited; }
};

template <class PreProcessor>
static int run_pre_processor(rawfx_registry *registry, const char *chain, const y4m &in, const char *out_path) {
    PreProcessor hook(registry, chain);
    fake_process_data data(in.width, in.height, !in.full_range);
    std::memset(data.y.data(), 0xAB, data.y.size());  // the padding must survive
    FILE *out = std::fopen(out_path, "wb");
    std::string header = in.header + "\n";
    std::fwrite(header.data(), 1, header.size(), out);
    for (const auto &frame : in.frames) {
        const uint8_t *p = frame.data();
        for (uint32_t r = 0; r < data.h; r++, p += data.w) std::memcpy(data.GetYBuffer(r), p, data.w);
        for (uint32_t r = 0; r < data.ch; r++, p += data.cw) std::memcpy(data.GetUBuffer(r), p, data.cw);
        for (uint32_t r = 0; r < data.ch; r++, p += data.cw) std::memcpy(data.GetVBuffer(r), p, data.cw);
        hook.onPreProcessRawData(&data);
        EXPECT(hook.last_result() == RAWFX_OK, "onPreProcessRawData: %s", hook.last_error().c_str());
        std::fputs("FRAME\n", out);
        for (uint32_t r = 0; r < data.h; r++) {
            std::fwrite(data.GetYBuffer(r), 1, data.w, out);
            EXPECT((uint8_t)data.GetYBuffer(r)[data.w] == 0xAB, "the Y padding of row %u was written", r);
        }
        for (uint32_t r = 0; r < data.ch; r++) std::fwrite(data.GetUBuffer(r), 1, data.cw, out);
        for (uint32_t r = 0; r < data.ch; r++) std::fwrite(data.GetVBuffer(r), 1, data.cw, out);
    }
    std::fclose(out);
    return failures ? 1 : 0;
}

// The SDK's reference counting of the raw data it lends (AudioRawData, YUVRawDataI420): the SDK
// holds one reference itself; the object is deleted at 0; no AddRef after that.
template <class Base> struct refcounted : Base {
    int references = 1;
    bool CanAddRef() override { return true; }
    bool AddRef() override {
        EXPECT(references > 0, "AddRef on released raw data");
        references++;
        return true;
    }
    int Release() override {
        EXPECT(references > 0, "Release below zero");
        int left = --references;
        if (left == 0) delete this;
        return left;
    }
};

// The SDK's received audio: lent for the callback, kept only through AddRef/Release; the
// SDK holds one reference itself and drops it after the callback.
// Atomic: an async hook releases objects on its worker while the SDK's thread makes new ones.
static std::atomic<int> live_audio_objects{0};
struct fake_audio_raw_data : refcounted<AudioRawData> {
    std::vector<int16_t> samples;
    uint32_t rate, channels;
    unsigned long long ms;
    fake_audio_raw_data(const int16_t *p, size_t count, uint32_t r, uint32_t c, unsigned long long t)
        : samples(p, p + count), rate(r), channels(c), ms(t) { live_audio_objects++; }
    ~fake_audio_raw_data() override { live_audio_objects--; }
    char *GetBuffer() override { return (char *)samples.data(); }
    unsigned int GetBufferLen() override { return (unsigned int)samples.size() * 2; }
    unsigned int GetSampleRate() override { return rate; }
    unsigned int GetChannelNum() override { return channels; }
#if RAWFX_ZOOM_STANDIN_TIMESTAMPS
    unsigned long long GetTimeStamp() override { return ms; }
#endif
};

template <class Speaker> struct speaker_calls;
template <> struct speaker_calls<rawfx::zoom::virtual_speaker> {
    static void mixed(rawfx::zoom::virtual_speaker &s, AudioRawData *d) { s.onVirtualSpeakerMixedAudioReceived(d); }
};
template <> struct speaker_calls<rawfx::zoom::meeting_audio_delegate> {
    static void mixed(rawfx::zoom::meeting_audio_delegate &s, AudioRawData *d) { s.onMixedAudioRawDataReceived(d); }
};

template <class Speaker>
static int run_speaker(rawfx_registry *registry, const char *chain, const wav &in, const char *out_path, bool async) {
    std::vector<int16_t> output;
    uint32_t out_rate = 0, out_channels = 0;
    rawfx_hook_options options{};
    options.struct_size = sizeof options;
    options.async = async ? 1 : 0;
    options.retain_in_async = 1;
    Speaker speaker(registry, chain, [&](int32_t stream, uint64_t, const rawfx_audio_frame &block) {
        EXPECT(stream == RAWFX_STREAM_MIXED, "stream %d", stream);
        out_rate = block.sample_rate;
        out_channels = block.channels;
        output.insert(output.end(), block.samples, block.samples + (size_t)block.frame_count * block.channels);
    }, &options);
    uint32_t block_frames = in.rate / 100, frames = (uint32_t)(in.samples.size() / in.channels);
    std::vector<int16_t> silence((size_t)block_frames * in.channels, 0);
    unsigned long long ms = 0;
    auto deliver = [&](const int16_t *p, uint32_t n) {
        auto *data = new fake_audio_raw_data(p, (size_t)n * in.channels, in.rate, in.channels, ms);
        speaker_calls<Speaker>::mixed(speaker, data);
        EXPECT(speaker.last_result() == RAWFX_OK, "receive: %s", speaker.last_error().c_str());
        data->Release();  // the SDK's own reference, after the callback
        ms += 10;
    };
    for (uint32_t at = 0; at < frames; at += block_frames)
        deliver(in.samples.data() + (size_t)at * in.channels, frames - at < block_frames ? frames - at : block_frames);
    speaker.drain();
    uint32_t latency = speaker.latency(RAWFX_STREAM_MIXED);
    // The session goes on: silence until the chain has given back every input sample.
    for (int guard = 0; output.size() / in.channels < (size_t)latency + frames && guard < 100; guard++) {
        deliver(silence.data(), block_frames);
        speaker.drain();
    }
    speaker.remove_stream(RAWFX_STREAM_MIXED);
    speaker.drain();
    EXPECT(live_audio_objects == 0, "%d AudioRawData objects were never released", live_audio_objects.load());
    std::fprintf(stderr, "adapter_test: latency %u; %s\n", latency, speaker.metrics_json().c_str());
    if (out_channels == 0) return 1;
    size_t keep = (size_t)frames * out_channels;
    std::vector<int16_t> cut(output.begin() + (long)latency * out_channels, output.begin() + (long)(latency * out_channels + keep));
    return write_wav(out_path, out_rate, out_channels, cut) && failures == 0 ? 0 : 1;
}

// A received frame as the SDK lends it: packed planes, one reference held by the SDK itself.
static std::atomic<int> live_video_objects{0};
struct fake_yuv_raw_data : refcounted<YUVRawDataI420> {
    std::vector<uint8_t> bytes;
    uint32_t w, h;
    bool limited;
    fake_yuv_raw_data(const std::vector<uint8_t> &b, uint32_t w_, uint32_t h_, bool l) : bytes(b), w(w_), h(h_), limited(l) {
        live_video_objects++;
    }
    ~fake_yuv_raw_data() override { live_video_objects--; }
    char *GetYBuffer() override { return (char *)bytes.data(); }
    char *GetUBuffer() override { return (char *)bytes.data() + (size_t)w * h; }
    char *GetVBuffer() override { return (char *)bytes.data() + (size_t)w * h + (size_t)((w + 1) / 2) * ((h + 1) / 2); }
    char *GetBuffer() override { return (char *)bytes.data(); }
    unsigned int GetBufferLen() override { return (unsigned int)bytes.size(); }
    bool IsLimitedI420() override { return limited; }
    unsigned int GetStreamWidth() override { return w; }
    unsigned int GetStreamHeight() override { return h; }
    unsigned int GetRotation() override { return 0; }
    unsigned int GetSourceID() override { return 0; }
#if RAWFX_ZOOM_STANDIN_TIMESTAMPS
    unsigned long long GetTimeStamp() override { return 0; }
#endif
};

// The SDK's pipe: one delegate at a time, frames only between subscribe and unSubscribe.
struct fake_pipe : ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipe {
    ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipeDelegate *delegate = nullptr;
    int subscribes = 0, unsubscribes = 0;
    ZOOMVIDEOSDK::ZoomVideoSDKErrors subscribe(ZOOMVIDEOSDK::ZoomVideoSDKResolution resolution,
                                               ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipeDelegate *listener) override {
        if (resolution == ZOOMVIDEOSDK::ZoomVideoSDKResolution_Auto) return ZOOMVIDEOSDK::ZoomVideoSDKErrors_Invalid_Parameter;
        EXPECT(delegate == nullptr, "subscribe twice");
        delegate = listener;
        subscribes++;
        return ZOOMVIDEOSDK::ZoomVideoSDKErrors_Success;
    }
    ZOOMVIDEOSDK::ZoomVideoSDKErrors unSubscribe(ZOOMVIDEOSDK::IZoomVideoSDKRawDataPipeDelegate *listener) override {
        EXPECT(listener == delegate && listener, "unSubscribe with another delegate");
        delegate = nullptr;
        unsubscribes++;
        return ZOOMVIDEOSDK::ZoomVideoSDKErrors_Success;
    }
};

// A processed frame, packed (the sink's copy).
static std::vector<uint8_t> packed_of(const rawfx_video_frame &f) {
    std::vector<uint8_t> packed;
    uint32_t cw = (f.width + 1) / 2, ch = (f.height + 1) / 2;
    for (int p = 0; p < 3; p++)
        for (uint32_t r = 0; r < (p ? ch : f.height); r++)
            packed.insert(packed.end(), f.planes[p] + (size_t)r * f.strides[p], f.planes[p] + (size_t)r * f.strides[p] + (p ? cw : f.width));
    return packed;
}

static bool write_y4m(const char *out_path, const y4m &in, uint32_t w, uint32_t h, const std::vector<std::vector<uint8_t>> &frames) {
    FILE *out = std::fopen(out_path, "wb");
    if (!out) return false;
    std::string header = output_header(in, w, h);
    std::fwrite(header.data(), 1, header.size(), out);
    for (const auto &frame : frames) {
        std::fputs("FRAME\n", out);
        std::fwrite(frame.data(), 1, frame.size(), out);
    }
    return std::fclose(out) == 0;
}

static rawfx_hook_options receive_options(bool async) {
    rawfx_hook_options options{};
    options.struct_size = sizeof options;
    options.async = async ? 1 : 0;
    options.async_capacity = 64;  // enough that no frame is dropped: the output is compared whole
    options.async_workers = 2;
    return options;
}

static int run_receive(rawfx_registry *registry, const char *chain, const y4m &in, const char *out_path, bool async) {
    std::vector<std::vector<uint8_t>> received;
    uint32_t w = 0, h = 0;
    rawfx_hook_options options = receive_options(async);
    fake_pipe pipe;
    {
        rawfx::zoom::receive_video receiver(registry, chain, [&](uint64_t user, int32_t kind, const rawfx_video_frame &f) {
            EXPECT(user == 16778240 && kind == RAWFX_PIPE_VIDEO, "frame of user %llu pipe %d", (unsigned long long)user, kind);
            w = f.width;
            h = f.height;
            received.push_back(packed_of(f));
        }, &options);
        bool refused = false;
        try {
            receiver.subscribe(&pipe, 16778240, RAWFX_PIPE_VIDEO, ZOOMVIDEOSDK::ZoomVideoSDKResolution_Auto);
        } catch (const rawfx::error &e) {
            refused = e.code() == RAWFX_E_PROCESS && std::strstr(e.what(), "Errors_Invalid_Parameter") != nullptr;
        }
        EXPECT(refused, "a subscription at Auto was not refused with the pipe's answer");
        receiver.subscribe(&pipe, 16778240, RAWFX_PIPE_VIDEO, ZOOMVIDEOSDK::ZoomVideoSDKResolution_360P);
        // The same pipe again: refused, and the live subscription keeps working (its delegate
        // stays the pipe's; under ASan a freed one shows).
        bool duplicate = false;
        try {
            receiver.subscribe(&pipe, 16778240, RAWFX_PIPE_VIDEO, ZOOMVIDEOSDK::ZoomVideoSDKResolution_360P);
        } catch (const rawfx::error &e) {
            duplicate = e.code() == RAWFX_E_STATE && std::strstr(e.what(), "already subscribed") != nullptr;
        }
        EXPECT(duplicate, "a second subscription of the same pipe was not refused as already subscribed");
        for (const auto &frame : in.frames) {
            auto *data = new fake_yuv_raw_data(frame, in.width, in.height, !in.full_range);
            pipe.delegate->onRawDataFrameReceived(data);
            data->Release();
        }
        receiver.wait_idle();
        pipe.delegate->onRawDataStatusChanged(ZOOMVIDEOSDK::RawData_Off);
        receiver.wait_idle();
        std::fprintf(stderr, "adapter_test: %s\n", receiver.metrics_json().c_str());
        EXPECT(receiver.unsubscribe(16778240, RAWFX_PIPE_VIDEO), "unsubscribe");
    }
    EXPECT(pipe.subscribes == 1 && pipe.unsubscribes == 1 && pipe.delegate == nullptr, "subscribe %d, unsubscribe %d",
           pipe.subscribes, pipe.unsubscribes);
    EXPECT(live_video_objects == 0, "%d YUVRawDataI420 objects were never released", live_video_objects.load());
    EXPECT(received.size() == in.frames.size(), "%zu frames received for %zu delivered", received.size(), in.frames.size());
    return write_y4m(out_path, in, w, h, received) && failures == 0 ? 0 : 1;
}

// The Meeting SDK's renderer: bound to the delegate it was made for; frames only between
// subscribe and unSubscribe; NoUse is no resolution for raw data.
struct fake_renderer : ZOOMSDK::IZoomSDKRenderer {
    ZOOMSDK::IZoomSDKRendererDelegate *delegate;
    ZOOMSDK::ZoomSDKResolution resolution = ZOOMSDK::ZoomSDKResolution_NoUse;
    ZOOMSDK::ZoomSDKRawDataType type = ZOOMSDK::RAW_DATA_TYPE_VIDEO;
    uint32_t id = 0;
    bool subscribed = false, torn_down = false;
    int unsubscribes = 0;
    explicit fake_renderer(ZOOMSDK::IZoomSDKRendererDelegate *d) : delegate(d) {}
    ZOOMSDK::SDKError setRawDataResolution(ZOOMSDK::ZoomSDKResolution r) override {
        EXPECT(!torn_down, "setRawDataResolution on a destroyed renderer");
        if (r == ZOOMSDK::ZoomSDKResolution_NoUse) return ZOOMSDK::SDKERR_INVALID_PARAMETER;
        resolution = r;
        return ZOOMSDK::SDKERR_SUCCESS;
    }
    ZOOMSDK::SDKError subscribe(uint32_t subscribe_id, ZOOMSDK::ZoomSDKRawDataType t) override {
        EXPECT(!torn_down && !subscribed, "subscribe on a destroyed or subscribed renderer");
        id = subscribe_id;
        type = t;
        subscribed = true;
        return ZOOMSDK::SDKERR_SUCCESS;
    }
    ZOOMSDK::SDKError unSubscribe() override {
        EXPECT(!torn_down, "unSubscribe on a renderer the SDK destroyed");
        subscribed = false;
        unsubscribes++;
        return ZOOMSDK::SDKERR_SUCCESS;
    }
    ZOOMSDK::ZoomSDKResolution getResolution() override { return resolution; }
    ZOOMSDK::ZoomSDKRawDataType getRawDataType() override { return type; }
    uint32_t getSubscribeId() override { return id; }
};

static int run_meeting_receive(rawfx_registry *registry, const char *chain, const y4m &in, const char *out_path, bool async) {
    std::vector<std::vector<uint8_t>> received;
    uint32_t w = 0, h = 0;
    rawfx_hook_options options = receive_options(async);
    std::vector<std::unique_ptr<fake_renderer>> renderers;  // what the SDK made (it frees them itself)
    int destroyed = 0;
    auto create = [&](ZOOMSDK::IZoomSDKRenderer **out, ZOOMSDK::IZoomSDKRendererDelegate *d) {
        renderers.push_back(std::make_unique<fake_renderer>(d));
        *out = renderers.back().get();
        return ZOOMSDK::SDKERR_SUCCESS;
    };
    auto destroy = [&](ZOOMSDK::IZoomSDKRenderer *r) {
        auto *fake = static_cast<fake_renderer *>(r);
        EXPECT(!fake->torn_down && !fake->subscribed, "destroyRenderer on a destroyed or subscribed renderer");
        fake->torn_down = true;
        destroyed++;
        return ZOOMSDK::SDKERR_SUCCESS;
    };
    fake_renderer *renderer = nullptr;
    {
        rawfx::zoom::meeting_receive_video receiver(registry, chain, [&](uint64_t user, int32_t kind, const rawfx_video_frame &f) {
            EXPECT(user == 16778240 && kind == RAWFX_PIPE_VIDEO, "frame of user %llu pipe %d", (unsigned long long)user, kind);
            w = f.width;
            h = f.height;
            received.push_back(packed_of(f));
        }, create, destroy, &options);
        bool refused = false;
        try {
            receiver.subscribe(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO, ZOOMSDK::ZoomSDKResolution_NoUse);
        } catch (const rawfx::error &e) {
            refused = e.code() == RAWFX_E_PROCESS;
        }
        EXPECT(refused && destroyed == 1, "a subscription at NoUse was not refused, or its renderer not destroyed (%d)", destroyed);
        receiver.subscribe(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO, ZOOMSDK::ZoomSDKResolution_360P);
        renderer = renderers.back().get();
        // The same stream again: refused, its new renderer destroyed, the live one untouched.
        bool duplicate = false;
        try {
            receiver.subscribe(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO, ZOOMSDK::ZoomSDKResolution_360P);
        } catch (const rawfx::error &e) {
            duplicate = e.code() == RAWFX_E_STATE && std::strstr(e.what(), "already subscribed") != nullptr;
        }
        EXPECT(duplicate && destroyed == 2 && renderers.back()->torn_down && !renderer->torn_down,
               "a second subscription of the same stream was not refused, or the wrong renderer destroyed (%d)", destroyed);
        EXPECT(renderer->subscribed && renderer->id == 16778240 && renderer->resolution == ZOOMSDK::ZoomSDKResolution_360P,
               "the renderer was not subscribed to the user at 360P");
        EXPECT(receiver.renderer(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO) == renderer, "renderer()");
        for (const auto &frame : in.frames) {
            auto *data = new fake_yuv_raw_data(frame, in.width, in.height, !in.full_range);
            renderer->delegate->onRawDataFrameReceived(data);
            data->Release();
        }
        receiver.wait_idle();
        renderer->delegate->onRawDataStatusChanged(ZOOMSDK::IZoomSDKRendererDelegate::RawData_Off);
        receiver.wait_idle();
        if (async) {
            // The SDK tears the renderer down (the user left): from now on it must not be called.
            renderer->delegate->onRendererBeDestroyed();
            renderer->torn_down = true;
            renderer->subscribed = false;
            EXPECT(receiver.renderer(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO) == nullptr, "renderer() after onRendererBeDestroyed");
        }
        std::fprintf(stderr, "adapter_test: %s\n", receiver.metrics_json().c_str());
        EXPECT(receiver.unsubscribe(16778240, ZOOMSDK::RAW_DATA_TYPE_VIDEO), "unsubscribe");
    }
    EXPECT(renderer->unsubscribes == (async ? 0 : 1) && destroyed == (async ? 2 : 3), "unSubscribe %d, destroyRenderer %d",
           renderer->unsubscribes, destroyed);
    EXPECT(live_video_objects == 0, "%d YUVRawDataI420 objects were never released", live_video_objects.load());
    EXPECT(received.size() == in.frames.size(), "%zu frames received for %zu delivered", received.size(), in.frames.size());
    return write_y4m(out_path, in, w, h, received) && failures == 0 ? 0 : 1;
}

// The SDK's rule for the share sender: packed I420 with even sides, only while sharing.
struct share_rules {
    bool sending = false;
    uint32_t width = 0, height = 0;
    std::vector<std::vector<uint8_t>> received;
    void check(char *buffer, int w, int h, int length, bool sent_full, bool full) {
        EXPECT(sending, "sendShareFrame outside started..stopped");
        EXPECT(w > 0 && h > 0 && w % 2 == 0 && h % 2 == 0, "shared %dx%d", w, h);
        EXPECT(length == w * h * 3 / 2, "frameLength %d for %dx%d", length, w, h);
        EXPECT(sent_full == full, "format %s for a %s range input", sent_full ? "full" : "limited", full ? "full" : "limited");
        width = (uint32_t)w;
        height = (uint32_t)h;
        received.emplace_back(buffer, buffer + length);
    }
};

// Each SDK's share sender: the same rules, the SDK's own success code and FrameDataFormat.
template <class Sender, class Code, Code success, class Format, Format full_range> struct basic_fake_share_sender : Sender {
    share_rules *rules;
    bool full;
    Code sendShareFrame(char *b, int w, int h, int l, Format f) override {
        rules->check(b, w, h, l, f == full_range, full);
        return success;
    }
};
using fake_share_sender = basic_fake_share_sender<ZOOMVIDEOSDK::IZoomVideoSDKShareSender, ZOOMVIDEOSDK::ZoomVideoSDKErrors,
                                                  ZOOMVIDEOSDK::ZoomVideoSDKErrors_Success, ZOOMVIDEOSDK::FrameDataFormat,
                                                  ZOOMVIDEOSDK::FrameDataFormat_I420_FULL>;
using fake_meeting_share_sender = basic_fake_share_sender<ZOOMSDK::IZoomSDKShareSender, ZOOMSDK::SDKError, ZOOMSDK::SDKERR_SUCCESS,
                                                          ZOOMSDK::FrameDataFormat, ZOOMSDK::FrameDataFormat_I420_FULL>;

// Each SDK's names for the share source's two callbacks.
static void share_started(rawfx::zoom::share_source &s, ZOOMVIDEOSDK::IZoomVideoSDKShareSender *x) { s.onShareSendStarted(x); }
static void share_stopped(rawfx::zoom::share_source &s) { s.onShareSendStopped(); }
static void share_started(rawfx::zoom::meeting_share_source &s, ZOOMSDK::IZoomSDKShareSender *x) { s.onStartSend(x); }
static void share_stopped(rawfx::zoom::meeting_share_source &s) { s.onStopSend(); }

template <class Source, class Sender>
static int run_share_source(rawfx_registry *registry, const char *chain, const y4m &in, const char *out_path) {
    Source source(registry, chain);
    std::vector<int> events;
    source.on_lifecycle([&](const rawfx_lifecycle_event &e) { events.push_back(e.kind); });
    share_rules rules;
    Sender sender;
    sender.rules = &rules;
    sender.full = in.full_range;
    std::vector<uint8_t> copy(in.frames.empty() ? 0 : in.frames[0].size());
    auto push = [&](const std::vector<uint8_t> &frame) {
        std::memcpy(copy.data(), frame.data(), copy.size());
        rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
        return source.push_frame(f);
    };
    if (!in.frames.empty()) EXPECT(push(in.frames[0]) == RAWFX_E_STATE, "a frame before the share started was not refused");
    rules.sending = true;
    share_started(source, &sender);
    for (const auto &frame : in.frames) EXPECT(push(frame) == RAWFX_OK, "push_frame: %s", source.last_error().c_str());
    share_stopped(source);
    rules.sending = false;
    if (!in.frames.empty()) EXPECT(push(in.frames[0]) == RAWFX_E_STATE, "a frame after the share stopped was not refused");
    EXPECT(events == std::vector<int>({RAWFX_EVENT_SHARE_STARTED, RAWFX_EVENT_SHARE_STOPPED}), "share events (%zu)", events.size());
    EXPECT(rules.received.size() == in.frames.size(), "%zu frames shared for %zu pushed", rules.received.size(), in.frames.size());
    std::fprintf(stderr, "adapter_test: %s\n", source.metrics_json().c_str());
    return write_y4m(out_path, in, rules.width, rules.height, rules.received) && failures == 0 ? 0 : 1;
}

// The SDK's audio sender rules: 16-bit mono, an even length, 10 ms chunks, only while sending.
struct audio_rules {
    bool sending = false;
    uint32_t rate = 48000;
    std::vector<int16_t> received;
    void check(char *data, unsigned int length, int rate_, int channel) {
        EXPECT(sending, "Send outside onMicStartSend..onMicStopSend");
        EXPECT(length % 2 == 0 && length == rate / 100 * 2, "Send of %u bytes; 10 ms is %u", length, rate / 100 * 2);
        EXPECT((uint32_t)rate_ == rate && channel == 0, "Send at %d Hz, channel %d", rate_, channel);
        received.insert(received.end(), (int16_t *)data, (int16_t *)(data + length));
    }
};
struct fake_audio_sender : ZOOMVIDEOSDK::IZoomVideoSDKAudioSender {
    audio_rules *rules;
    ZOOMVIDEOSDK::ZoomVideoSDKErrors Send(char *d, unsigned int l, int r, ZOOMVIDEOSDK::ZoomVideoSDKAudioChannel c) override {
        rules->check(d, l, r, (int)c);
        return ZOOMVIDEOSDK::ZoomVideoSDKErrors_Success;
    }
};
// The Meeting SDK's sender takes the channel from 5.15; before, mono only (RAWFX_ZOOM_MEETING_SDK_VERSION).
struct fake_meeting_audio_sender : ZOOMSDK::IZoomSDKAudioRawDataSender {
    audio_rules *rules;
#if RAWFX_ZOOM_STANDIN_SEND_CHANNEL
    ZOOMSDK::SDKError send(char *d, unsigned int l, int r, ZOOMSDK::ZoomSDKAudioChannel c) override {
        rules->check(d, l, r, (int)c);
        return ZOOMSDK::SDKERR_SUCCESS;
    }
#else
    ZOOMSDK::SDKError send(char *d, unsigned int l, int r) override {
        rules->check(d, l, r, 0);
        return ZOOMSDK::SDKERR_SUCCESS;
    }
#endif
};

template <class Mic, class Sender>
static int run_mic(rawfx_registry *registry, const char *chain, const wav &in, const char *out_path) {
    Mic mic(registry, chain, in.rate, RAWFX_PACING_CALLER);
    audio_rules rules;
    rules.rate = in.rate;
    Sender sender;
    sender.rules = &rules;
    mic.onMicInitialize(&sender);
    rules.sending = true;
    mic.onMicStartSend();
    uint32_t piece = in.rate * 37 / 1000, frames = (uint32_t)(in.samples.size() / in.channels);
    int64_t now = 0;
    for (uint32_t at = 0; at < frames; at += piece) {
        rawfx_audio_frame block{};
        block.struct_size = sizeof block;
        block.samples = const_cast<int16_t *>(in.samples.data()) + (size_t)at * in.channels;
        block.frame_count = frames - at < piece ? frames - at : piece;
        block.sample_rate = in.rate;
        block.channels = in.channels;
        EXPECT(mic.push_audio(block) == RAWFX_OK, "push_audio: %s", mic.last_error().c_str());
        now += 37000;
        mic.pump(now);
    }
    // A live mic sends whole 10 ms chunks only: the session goes on with silence, which
    // completes the last one; the output is cut to the input's length.
    EXPECT(mic.push_audio(silence_10ms(in).block) == RAWFX_OK, "push_audio: %s", mic.last_error().c_str());
    for (int i = 0; i < 100; i++) mic.pump(now += 10000);
    mic.onMicStopSend();
    rules.sending = false;
    mic.onMicUninitialized();
    std::fprintf(stderr, "adapter_test: %llu chunks; %s\n", (unsigned long long)mic.chunks_sent(), mic.metrics_json().c_str());
    EXPECT(rules.received.size() >= frames, "%zu frames sent for %u pushed", rules.received.size(), frames);
    rules.received.resize(frames);
    return write_wav(out_path, in.rate, 1, rules.received) && failures == 0 ? 0 : 1;
}

#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
struct fake_ps_sender : ZOOMSDK::IZoomSDKPSSender {
    video_rules video;
    audio_rules audio;
    bool full = false;
    ZOOMSDK::SDKError sendVideoFrame(char *b, int w, int h, int l, ZOOMSDK::FrameDataFormat f) override {
        video.check(b, w, h, l, 0, f == ZOOMSDK::FrameDataFormat_I420_FULL, full);
        return ZOOMSDK::SDKERR_SUCCESS;
    }
    ZOOMSDK::SDKError sendAudio(char *d, unsigned int l, int r, ZOOMSDK::ZoomSDKAudioChannel c) override {
        audio.check(d, l, r, (int)c);
        return ZOOMSDK::SDKERR_SUCCESS;
    }
};

static int run_production_studio(rawfx_registry *registry, char **argv) {
    const char *video_chain = argv[3], *audio_chain = argv[7];
    y4m in;
    wav sound;
    if (!read_y4m(argv[5], in) || !read_wav(argv[8], sound)) return 1;
    fake_ps_sender sender;
    std::sscanf(argv[4], "%ux%u", &sender.video.width, &sender.video.height);
    sender.full = in.full_range;
    sender.audio.rate = sound.rate;
    ZOOMSDK::PSVideoSourceCapability capability;  // as the SDK's: a constructor, not an aggregate
    capability.width = sender.video.width;
    capability.height = sender.video.height;
    capability.format = in.full_range ? ZOOMSDK::FrameDataFormat_I420_FULL : ZOOMSDK::FrameDataFormat_I420_LIMITED;
    rawfx::zoom::meeting_production_studio studio(registry, video_chain, audio_chain, capability, sound.rate, RAWFX_PACING_CALLER);
    std::vector<int> events;
    studio.on_lifecycle([&](const rawfx_lifecycle_event &e) { events.push_back(e.kind); });
    studio.onStartSend(&sender);  // before the mode result: ignored, nothing may be sent
    std::vector<uint8_t> copy(in.frames.empty() ? 0 : in.frames[0].size());
    if (!in.frames.empty()) {
        std::memcpy(copy.data(), in.frames[0].data(), copy.size());
        rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
        EXPECT(studio.push_frame(f) == RAWFX_E_STATE, "a frame before PS mode was not refused");
    }
    studio.onStartPSModeResult(true);
    sender.video.sending = sender.audio.sending = true;
    studio.onStartSend(&sender);
    uint32_t frames = (uint32_t)(sound.samples.size() / sound.channels), piece = sound.rate / 25;  // 40 ms per video frame
    int64_t now = 0;
    for (size_t i = 0; i < in.frames.size() || (size_t)i * piece < frames; i++) {
        if (i < in.frames.size()) {
            std::memcpy(copy.data(), in.frames[i].data(), copy.size());
            rawfx_video_frame f = frame_over(copy.data(), in.width, in.height, in.full_range);
            EXPECT(studio.push_frame(f) == RAWFX_OK, "push_frame: %s", studio.last_error().c_str());
        }
        uint32_t at = (uint32_t)i * piece;
        if (at < frames) {
            rawfx_audio_frame block{};
            block.struct_size = sizeof block;
            block.samples = sound.samples.data() + (size_t)at * sound.channels;
            block.frame_count = frames - at < piece ? frames - at : piece;
            block.sample_rate = sound.rate;
            block.channels = sound.channels;
            EXPECT(studio.push_audio(block) == RAWFX_OK, "push_audio: %s", studio.last_error().c_str());
        }
        studio.pump(now += 40000);
    }
    // Live audio goes in whole 10 ms chunks: silence completes the last one.
    studio.push_audio(silence_10ms(sound).block);
    for (int i = 0; i < 100; i++) studio.pump(now += 10000);
    studio.onStopSend();
    sender.video.sending = sender.audio.sending = false;
    EXPECT(events == std::vector<int>({RAWFX_EVENT_PS_MODE_ACCEPTED, RAWFX_EVENT_PS_STARTED, RAWFX_EVENT_PS_STOPPED}),
           "production studio events (%zu)", events.size());
    EXPECT(sender.video.received.size() == in.frames.size(), "%zu frames sent", sender.video.received.size());
    std::fprintf(stderr, "adapter_test: %s\n", studio.metrics_json().c_str());

    FILE *out = std::fopen(argv[6], "wb");
    std::string header = output_header(in, sender.video.width, sender.video.height);
    std::fwrite(header.data(), 1, header.size(), out);
    for (const auto &frame : sender.video.received) {
        std::fputs("FRAME\n", out);
        std::fwrite(frame.data(), 1, frame.size(), out);
    }
    std::fclose(out);
    EXPECT(sender.audio.received.size() >= frames, "%zu audio frames sent for %u", sender.audio.received.size(), frames);
    sender.audio.received.resize(frames);
    return write_wav(argv[9], sound.rate, 1, sender.audio.received) && failures == 0 ? 0 : 1;
}
#endif

int main(int argc, char **argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: adapter_test video-source|share-source|pre-processor|speaker|speaker-async|receive|receive-async|mic video|meeting CHAIN [WxH] IN OUT\n");
        return 2;
    }
    std::string mode = argv[1], sdk = argv[2];
    const char *chain = argv[3];
    bool meeting = sdk == "meeting";
    rawfx_registry *registry = nullptr;
    rawfx::check(rawfx_registry_open(nullptr, &registry), "rawfx_registry_open");
    int status = 2;
    try {
        if (mode == "production-studio" && argc == 10) {
#if RAWFX_ZOOM_HAS_PRODUCTION_STUDIO
            status = run_production_studio(registry, argv);
#else
            std::fprintf(stderr, "adapter_test: built without production studio\n");
#endif
        } else if (mode == "video-source" && argc == 7) {
            uint32_t w = 0, h = 0;
            std::sscanf(argv[4], "%ux%u", &w, &h);
            y4m in;
            if (!read_y4m(argv[5], in)) return 1;
            status = meeting ? run_video_source<rawfx::zoom::meeting_video_source, fake_meeting_video_sender,
                                                ZOOMSDK::IList<ZOOMSDK::VideoSourceCapability>, ZOOMSDK::VideoSourceCapability>(
                                   registry, chain, w, h, in, argv[6])
                             : run_video_source<rawfx::zoom::video_source, fake_video_sender,
                                                ZOOMVIDEOSDK::IVideoSDKVector<ZOOMVIDEOSDK::VideoSourceCapability>,
                                                ZOOMVIDEOSDK::VideoSourceCapability>(registry, chain, w, h, in, argv[6]);
        } else if (mode == "pre-processor") {
            y4m in;
            if (!read_y4m(argv[4], in)) return 1;
            status = meeting ? run_pre_processor<rawfx::zoom::meeting_pre_processor>(registry, chain, in, argv[5])
                             : run_pre_processor<rawfx::zoom::pre_processor>(registry, chain, in, argv[5]);
        } else if (mode == "speaker" || mode == "speaker-async") {
            wav in;
            if (!read_wav(argv[4], in)) return 1;
            bool async = mode == "speaker-async";
            status = meeting ? run_speaker<rawfx::zoom::meeting_audio_delegate>(registry, chain, in, argv[5], async)
                             : run_speaker<rawfx::zoom::virtual_speaker>(registry, chain, in, argv[5], async);
        } else if (mode == "receive" || mode == "receive-async") {
            y4m in;
            if (!read_y4m(argv[4], in)) return 1;
            bool async = mode == "receive-async";
            status = meeting ? run_meeting_receive(registry, chain, in, argv[5], async) : run_receive(registry, chain, in, argv[5], async);
        } else if (mode == "share-source") {
            y4m in;
            if (!read_y4m(argv[4], in)) return 1;
            status = meeting ? run_share_source<rawfx::zoom::meeting_share_source, fake_meeting_share_sender>(registry, chain, in, argv[5])
                             : run_share_source<rawfx::zoom::share_source, fake_share_sender>(registry, chain, in, argv[5]);
        } else if (mode == "mic") {
            wav in;
            if (!read_wav(argv[4], in)) return 1;
            status = meeting ? run_mic<rawfx::zoom::meeting_virtual_mic, fake_meeting_audio_sender>(registry, chain, in, argv[5])
                             : run_mic<rawfx::zoom::virtual_mic, fake_audio_sender>(registry, chain, in, argv[5]);
        }
    } catch (const rawfx::error &e) {
        std::fprintf(stderr, "adapter_test: %s\n", e.what());
        status = 1;
    }
    rawfx_registry_close(registry);
    return status;
}

/*
 * hooks.c — the SDK hooks from C (rawfx_hooks.h): a virtual camera and a virtual speaker,
 * driven the way a video SDK drives them, over files.
 *
 *   cc -std=c99 hooks.c $(pkg-config --cflags --libs rawfx) -o hooks
 *   ./hooks --vf 'scale=width=320:height=180,rotate=angle=90' 180x320 in.y4m out.y4m
 *   ./hooks --af 'denoise=level=-30' in.wav out.wav
 *
 * --vf: the camera (rawfx_video_source_*). This program plays the SDK: it initializes the
 * source with a sender and the capability WxH, starts sending, pushes every Y4M frame, stops.
 * The sender receives packed I420 at WxH and writes it as Y4M.
 * --af: the speaker (rawfx_speaker_*). The WAV arrives as 10 ms blocks of mixed audio, then
 * silence as a live session goes on, until every input sample has come out of the chain; the
 * sink writes it, less the chain's latency (the first `latency` frames precede the input).
 * With a chain that ends at WxH, both outputs are byte for byte what `rawfx run` writes.
 * Limits: the Y4M and WAV forms docs/examples/embed.c reads.
 */
#include "rawfx_hooks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail_rawfx(const char *call, rawfx_result result) {
    fprintf(stderr, "hooks: %s: %s: %s\n", call, rawfx_result_name(result), rawfx_last_error());
    return 1;
}

/* ------------------------------------------------------------ the camera -- */

typedef struct fake_sdk {
    FILE *out;
    int sending;
    uint32_t width, height;
    long frames, broken_rules;
} fake_sdk;

/* The SDK's sender (IZoomVideoSDKVideoSender::sendVideoFrame), with its rules checked. */
static int32_t send_video_frame(void *sender, char *buffer, int32_t width, int32_t height, int32_t length,
                                int32_t rotation, int32_t format) {
    fake_sdk *sdk = (fake_sdk *)sender;
    (void)rotation;
    (void)format;
    if (!sdk->sending || (uint32_t)width != sdk->width || (uint32_t)height != sdk->height || length != width * height * 3 / 2) {
        sdk->broken_rules++;
        return 7; /* Errors_Invalid_Parameter */
    }
    fputs("FRAME\n", sdk->out);
    fwrite(buffer, 1, (size_t)length, sdk->out);
    sdk->frames++;
    return 0;
}

static void print_event(void *user_data, const rawfx_lifecycle_event *event) {
    (void)user_data;
    fprintf(stderr, "hooks: %s\n", event->description);
}

static int run_camera(rawfx_registry *registry, const char *chain, const char *size, const char *in_path, const char *out_path) {
    fake_sdk sdk = {NULL, 0, 0, 0, 0, 0};
    if (sscanf(size, "%ux%u", &sdk.width, &sdk.height) != 2) return fprintf(stderr, "hooks: size is WxH\n"), 2;
    FILE *in = fopen(in_path, "rb");
    char line[4096], header[4096];
    if (!in || !fgets(line, sizeof line, in)) return fprintf(stderr, "hooks: cannot read %s\n", in_path), 1;
    line[strcspn(line, "\n")] = 0;
    strcpy(header, line);
    uint32_t w = 0, h = 0;
    rawfx_video_frame frame = {0};
    frame.struct_size = sizeof frame;
    frame.pixel_format = RAWFX_PIXEL_I420;
    frame.color_range = RAWFX_RANGE_LIMITED;
    for (char *t = strtok(line, " "); t; t = strtok(NULL, " ")) {
        if (t[0] == 'W') w = (uint32_t)strtoul(t + 1, NULL, 10);
        if (t[0] == 'H') h = (uint32_t)strtoul(t + 1, NULL, 10);
        if (strcmp(t, "XCOLORRANGE=FULL") == 0) frame.color_range = RAWFX_RANGE_FULL;
    }
    size_t luma = (size_t)w * h, chroma = (size_t)((w + 1) / 2) * ((h + 1) / 2);
    uint8_t *picture = malloc(luma + 2 * chroma);
    frame.width = w;
    frame.height = h;
    frame.planes[0] = picture;
    frame.planes[1] = picture + luma;
    frame.planes[2] = picture + luma + chroma;
    frame.strides[0] = (int32_t)w;
    frame.strides[1] = frame.strides[2] = (int32_t)((w + 1) / 2);

    rawfx_hook *camera = NULL;
    rawfx_result result = rawfx_video_source_create(registry, chain, NULL, &camera);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_video_source_create", result);
    rawfx_hook_set_lifecycle_callback(camera, print_event, NULL);

    /* The Y4M header as rawfx writes it: the output's size, the pixel aspect turned with the picture. */
    sdk.out = fopen(out_path, "wb");
    int turned = w != h && sdk.width == h && sdk.height == w;
    int first = 1;
    for (char *t = strtok(header, " "); t; t = strtok(NULL, " "), first = 0) {
        unsigned a, b;
        if (!first) fputc(' ', sdk.out);
        if (t[0] == 'W') fprintf(sdk.out, "W%u", sdk.width);
        else if (t[0] == 'H') fprintf(sdk.out, "H%u", sdk.height);
        else if (t[0] == 'A' && turned && sscanf(t, "A%u:%u", &a, &b) == 2) fprintf(sdk.out, "A%u:%u", b, a);
        else fputs(t, sdk.out);
    }
    fputc('\n', sdk.out);

    /* The SDK's calls: onInitialize (a capability list and its suggestion), onStartSend. */
    rawfx_video_capability supported[2] = {{1280, 720, 30, 0}, {sdk.width, sdk.height, 25, 0}};
    rawfx_video_source_on_initialize(camera, send_video_frame, &sdk, supported, 2, &supported[1]);
    sdk.sending = 1;
    rawfx_video_source_on_start_send(camera);
    /* The app's capture loop. */
    while (fgets(line, sizeof line, in) && fread(picture, 1, luma + 2 * chroma, in) == luma + 2 * chroma) {
        result = rawfx_video_source_push_frame(camera, &frame);
        if (result != RAWFX_OK) return fail_rawfx("rawfx_video_source_push_frame", result);
    }
    rawfx_video_source_on_stop_send(camera);
    sdk.sending = 0;
    rawfx_video_source_on_uninitialized(camera);

    char metrics[2048];
    size_t length;
    if (rawfx_hook_metrics_json(camera, metrics, sizeof metrics, &length) == RAWFX_OK) fprintf(stderr, "hooks: %s\n", metrics);
    rawfx_hook_destroy(camera);
    free(picture);
    fclose(in);
    fclose(sdk.out);
    fprintf(stderr, "hooks: %ld frames sent, %ld broken sender rules\n", sdk.frames, sdk.broken_rules);
    return sdk.broken_rules == 0 ? 0 : 1;
}

/* ----------------------------------------------------------- the speaker -- */

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; p[2] = (v >> 16) & 0xFF; p[3] = v >> 24; }
static void put16(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; }

typedef struct recording {
    int16_t *samples;         /* every frame the sink received */
    size_t frames, capacity;
    uint32_t rate, channels;
} recording;

/* The speaker's sink: the processed mix, on the SDK's thread (sync mode). */
static void record(void *user_data, int32_t stream, uint64_t user_id, const rawfx_audio_frame *block) {
    recording *r = (recording *)user_data;
    (void)stream;
    (void)user_id;
    if (r->frames + block->frame_count > r->capacity) {
        r->capacity = 2 * (r->frames + block->frame_count);
        r->samples = realloc(r->samples, r->capacity * block->channels * 2);
    }
    memcpy(r->samples + r->frames * block->channels, block->samples, (size_t)block->frame_count * block->channels * 2);
    r->frames += block->frame_count;
    r->rate = block->sample_rate;
    r->channels = block->channels;
}

static int run_speaker(rawfx_registry *registry, const char *chain, const char *in_path, const char *out_path) {
    FILE *in = fopen(in_path, "rb");
    uint8_t head[12], chunk[8], fmt[16];
    uint32_t rate = 0, channels = 0, bytes = 0;
    if (!in || fread(head, 1, 12, in) != 12 || memcmp(head, "RIFF", 4) != 0) return fprintf(stderr, "hooks: not a WAV\n"), 1;
    while (fread(chunk, 1, 8, in) == 8) {
        uint32_t size = le32(chunk + 4);
        if (memcmp(chunk, "data", 4) == 0) { bytes = size; break; }
        if (memcmp(chunk, "fmt ", 4) == 0 && fread(fmt, 1, 16, in) == 16) {
            channels = fmt[2] | fmt[3] << 8;
            rate = le32(fmt + 4);
            size -= 16;
        }
        fseek(in, (long)(size + (size & 1)), SEEK_CUR);
    }
    int16_t *pcm = malloc(bytes + 1);
    size_t frames = fread(pcm, 2 * channels, bytes / (2 * channels), in);
    fclose(in);

    recording r = {NULL, 0, 0, 0, 0};
    rawfx_hook *speaker = NULL;
    rawfx_result result = rawfx_speaker_create(registry, chain, NULL, record, &r, &speaker);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_speaker_create", result);

    /* The SDK's onVirtualSpeakerMixedAudioReceived every 10 ms; its AudioRawData cannot be
     * kept here (no reference-count functions), which a sync speaker never needs. */
    uint32_t block = rate / 100;
    int16_t *silence = calloc((size_t)block * channels, 2);
    rawfx_audio_raw_data data = {0};
    data.struct_size = sizeof data;
    data.sample_rate = rate;
    data.channel_num = channels;
    uint32_t latency = 0;
    for (size_t at = 0;; at += block) {
        if (at >= frames) { /* the session goes on with silence until every input sample is out */
            rawfx_speaker_latency(speaker, RAWFX_STREAM_MIXED, 0, &latency);
            if (r.frames >= latency + frames) break;
        }
        size_t n = at < frames ? (frames - at < block ? frames - at : block) : block;
        data.buffer = (const char *)(at < frames ? pcm + at * channels : silence);
        data.buffer_len = (uint32_t)(n * channels * 2);
        data.timestamp_ms = at * 1000 / rate;
        result = rawfx_speaker_receive(speaker, RAWFX_STREAM_MIXED, 0, &data);
        if (result != RAWFX_OK) return fail_rawfx("rawfx_speaker_receive", result);
    }
    rawfx_hook_destroy(speaker);

    uint8_t h[44];
    uint32_t out_bytes = (uint32_t)(frames * r.channels * 2);
    memcpy(h, "RIFF", 4); put32(h + 4, 36 + out_bytes); memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16); put16(h + 20, 1); put16(h + 22, r.channels); put32(h + 24, r.rate);
    put32(h + 28, r.rate * r.channels * 2); put16(h + 32, r.channels * 2); put16(h + 34, 16);
    memcpy(h + 36, "data", 4); put32(h + 40, out_bytes);
    FILE *out = fopen(out_path, "wb");
    fwrite(h, 1, 44, out);
    fwrite(r.samples + (size_t)latency * r.channels, 2 * r.channels, frames, out);
    fprintf(stderr, "hooks: latency %u frames; %zu frames recorded\n", latency, r.frames);
    free(pcm);
    free(silence);
    free(r.samples);
    return fclose(out) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    int video = argc == 6 && strcmp(argv[1], "--vf") == 0, audio = argc == 5 && strcmp(argv[1], "--af") == 0;
    if (!video && !audio) {
        fprintf(stderr, "usage: hooks --vf CHAIN WxH in.y4m out.y4m | hooks --af CHAIN in.wav out.wav\n");
        return 2;
    }
    rawfx_registry *registry = NULL;
    rawfx_result result = rawfx_registry_open(NULL, &registry);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_registry_open", result);
    int status = video ? run_camera(registry, argv[2], argv[3], argv[4], argv[5]) : run_speaker(registry, argv[2], argv[3], argv[4]);
    rawfx_registry_close(registry);
    return status;
}

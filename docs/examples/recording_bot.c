/* A recording bot's program through the C API (docs/production.md): every participant's
 * video into a compositor input, the gallery composed on a steady 30 fps clock, written as
 * Y4M to a file or to stdout for FFmpeg, with the program's audio as WAV on the same clock:
 * each user's one-way stream (32000 Hz) into a mixer input with its own gain, resampled to
 * 48000 Hz, and frame N leaves with the 10 ms blocks rawfx_mixer_blocks_for_frame names.
 *
 *   cc -std=c99 recording_bot.c -I<include dirs> -L<lib dir> -lRawFXEmbed -o recording_bot
 *   ./recording_bot --frames 300 - out.wav | ffmpeg -f yuv4mpegpipe -i - -i out.wav out.mp4
 *
 * In a bot the pictures come from onRawDataFrameReceived (submit them as they come, from the
 * SDK's thread) and the audio from onVirtualSpeakerOneWayAudioReceived; here 9 users are
 * emulated: moving colour patterns, user 2 turning video off (onRawDataStatusChanged(off)),
 * user 9 leaving (the layout re-flows), user 1 sharing (the share layout from the next frame),
 * the active speaker changing every 2 s. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfx_embed.h"

#define PI 3.14159265358979323846

#define USERS 9
#define WIDTH 1280
#define HEIGHT 720
#define TILE_W 320
#define TILE_H 180
#define RATE 48000         /* the program's (production studio's) rate */
#define STREAM_RATE 32000  /* the virtual speaker's one-way streams */

static int check(rawfx_result r, const char *what) {
    if (r != RAWFX_OK) {
        fprintf(stderr, "recording_bot: %s: %s\n", what, rawfx_last_error());
        return 0;
    }
    return 1;
}

/* A user's picture: a flat colour of their own with a box moving with the frame count. */
static void draw_user(uint8_t *planes[3], int user, int64_t n, int w, int h) {
    memset(planes[0], 60 + 12 * user, (size_t)(w * h));
    memset(planes[1], 90 + 17 * user % 80, (size_t)(w * h / 4));
    memset(planes[2], 170 - 13 * user % 80, (size_t)(w * h / 4));
    int bx = (int)((n * 4 + user * 30) % (w - 40)), by = (int)((n * 2 + user * 20) % (h - 40));
    for (int y = by; y < by + 40; y++) memset(planes[0] + y * w + bx, 235, 40);
}

static int write_all(FILE *out, const void *bytes, size_t count) { return fwrite(bytes, 1, count, out) == count; }

static void le32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

/* A 44-byte WAV header for mono 16-bit PCM of `samples` samples. */
static void wav_header(uint8_t h[44], uint32_t samples) {
    memcpy(h, "RIFF", 4); le32(h + 4, 36 + 2 * samples); memcpy(h + 8, "WAVEfmt ", 8);
    le32(h + 16, 16); h[20] = 1; h[21] = 0; h[22] = 1; h[23] = 0;
    le32(h + 24, RATE); le32(h + 28, RATE * 2); h[32] = 2; h[33] = 0; h[34] = 16; h[35] = 0;
    memcpy(h + 36, "data", 4); le32(h + 40, 2 * samples);
}

int main(int argc, char **argv) {
    long frames = 150;
    int arg = 1;
    if (arg + 1 < argc && strcmp(argv[arg], "--frames") == 0) { frames = atol(argv[arg + 1]); arg += 2; }
    if (arg >= argc || frames <= 0) {
        fprintf(stderr, "usage: recording_bot [--frames N] OUT.y4m|- [OUT.wav]\n");
        return 2;
    }
    FILE *video = strcmp(argv[arg], "-") == 0 ? stdout : fopen(argv[arg], "wb");
    FILE *audio = arg + 1 < argc ? fopen(argv[arg + 1], "wb") : NULL;
    if (!video || (arg + 1 < argc && !audio)) { perror("recording_bot: open"); return 1; }

    rawfx_compositor_config config = { .struct_size = sizeof config, .width = WIDTH, .height = HEIGHT,
                                       .rate_numerator = 30, .rate_denominator = 1, .border = 2,
                                       .background_rgb = 0x202428, .placeholder_rgb = 0x3c4650,
                                       .input_timeout_us = 500000, .layout = "grid" };
    rawfx_compositor *comp = NULL;
    if (!check(rawfx_compositor_create(&config, &comp), "rawfx_compositor_create")) return 1;

    /* The mixer finds `resample` (the SpeexDSP plugin) in the registry: the one-way streams
     * come at 32000 Hz, the program goes out at 48000. */
    rawfx_registry *registry = NULL;
    rawfx_mixer *mixer = NULL;
    if (!check(rawfx_registry_open(NULL, &registry), "rawfx_registry_open")) return 1;
    if (!check(rawfx_mixer_create(registry, RATE, 2, &mixer), "rawfx_mixer_create")) return 1;
    rawfx_mixer_input *voices[USERS] = { 0 };

    /* Names and captions: the `text` filter (the Text plugin) as overlays. Each tile gets a
     * label chain and a card for when its video is off (initials); the program gets a caption
     * bar. The compositor keeps the chains; their text changes with set_parameter, any time. */
    rawfx_video_chain *captions = NULL;
    if (!check(rawfx_video_chain_create(registry, "text=anchor=bottom:size=32:box=true:max_width=0.8", &captions),
               "caption chain")) return 1;
    rawfx_compositor_set_overlay(comp, captions);

    rawfx_compositor_input *inputs[USERS + 1] = { 0 };  /* users 1…9, then the share */
    char id[16], name[32];
    for (int u = 0; u < USERS; u++) {
        snprintf(id, sizeof id, "%d", u + 1);
        snprintf(name, sizeof name, "User %d", u + 1);
        rawfx_video_chain *label = NULL, *card = NULL;
        if (!check(rawfx_video_chain_create(registry, "text=anchor=bottom_left:size=20:box=true:margin=6", &label), "label")
            || !check(rawfx_video_chain_set_parameter(label, "text.text", name), "label text")
            || !check(rawfx_video_chain_create(registry, "text=anchor=center:size=64", &card), "card")
            || !check(rawfx_video_chain_set_parameter(card, "text.text", id), "card text")) return 1;
        rawfx_compositor_input_options options = { .struct_size = sizeof options, .overlay = label,
                                                   .placeholder_overlay = card };
        if (!check(rawfx_compositor_add_input_with_options(comp, id, &options, &inputs[u]), "rawfx_compositor_add_input_with_options"))
            return 1;
        rawfx_video_chain_destroy(label);  /* the compositor keeps them */
        rawfx_video_chain_destroy(card);
        if (!check(rawfx_mixer_add_input(mixer, id, 0, &voices[u]), "rawfx_mixer_add_input")) return 1;
    }
    uint8_t *pixels = malloc((size_t)(1280 * 720 * 3 / 2));
    uint8_t *planes[3] = { pixels, pixels + 1280 * 720, pixels + 1280 * 720 * 5 / 4 };
    int16_t *pcm = malloc(sizeof(int16_t) * STREAM_RATE / 100);
    double phase[USERS] = { 0 };
    uint8_t header[44];
    if (audio) { wav_header(header, 0); write_all(audio, header, 44); }

    char y4m[96];
    int length = snprintf(y4m, sizeof y4m, "YUV4MPEG2 W%d H%d F30:1 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=LIMITED\n", WIDTH, HEIGHT);
    write_all(video, y4m, (size_t)length);
    int64_t samples_sent = 0, next_block = 0;
    int left = 0, sharing = 0;
    for (int64_t n = 0; n < frames; n++) {
        int64_t now = n * 1000000 / 30;
        /* The SDK's events, as the callbacks would bring them. */
        if (n == 30) rawfx_compositor_input_set_active(inputs[1], 0);           /* user 2: video off */
        if (n == 60 && !left) {                                                 /* user 9 leaves */
            rawfx_compositor_remove_input(comp, "9");
            rawfx_compositor_input_release(inputs[8]);
            inputs[8] = NULL;
            rawfx_mixer_remove_input(mixer, "9");
            rawfx_mixer_input_release(voices[8]);
            voices[8] = NULL;
            left = 1;
        }
        if (n == 45 && !sharing) {                                              /* user 1 shares */
            if (!check(rawfx_compositor_add_input(comp, "share:1", &inputs[USERS]), "add share")) return 1;
            rawfx_compositor_set_layout(comp, "share");
            sharing = 1;
        }
        if (n == 105 && sharing == 1) {                                         /* the share ends */
            rawfx_compositor_set_layout(comp, "grid");
            rawfx_compositor_remove_input(comp, "share:1");
            rawfx_compositor_input_release(inputs[USERS]);
            inputs[USERS] = NULL;
            sharing = 2;
        }
        int speaker = (int)(now / 2000000) % 4 + 3;                             /* users 3…6 in turn */
        if (n % 3 == 0) {                                                       /* a live caption, 10 a second */
            char line[96];
            snprintf(line, sizeof line, "User %d: caption line %lld", speaker, (long long)(n / 3));
            rawfx_video_chain_set_parameter(captions, "text.text", line);
        }
        snprintf(id, sizeof id, "%d", speaker);
        rawfx_compositor_set_roles(comp, id, sharing == 1 ? "share:1" : NULL);

        /* Video: each user's frame at 15 fps (every other output frame), the share at 5 fps. */
        for (int u = 0; u < USERS; u++) {
            if (!inputs[u] || u == 1 || (n + u) % 2) continue;
            draw_user(planes, u + 1, n, TILE_W * 2, TILE_H * 2);
            rawfx_video_frame frame = { .struct_size = sizeof frame, .width = TILE_W * 2, .height = TILE_H * 2,
                                        .pixel_format = RAWFX_PIXEL_I420, .color_range = RAWFX_RANGE_LIMITED,
                                        .planes = { planes[0], planes[1], planes[2] },
                                        .strides = { TILE_W * 2, TILE_W, TILE_W }, .timestamp_us = now };
            if (!check(rawfx_compositor_input_submit(inputs[u], &frame, now), "submit")) return 1;
        }
        if (sharing == 1 && n % 6 == 0) {
            draw_user(planes, 0, 0, 1280, 720);
            rawfx_video_frame slide = { .struct_size = sizeof slide, .width = 1280, .height = 720,
                                        .pixel_format = RAWFX_PIXEL_I420, .color_range = RAWFX_RANGE_LIMITED,
                                        .planes = { planes[0], planes[1], planes[2] }, .strides = { 1280, 640, 640 },
                                        .timestamp_us = now };
            if (!check(rawfx_compositor_input_submit(inputs[USERS], &slide, now), "submit share")) return 1;
        }

        /* The program frame, written row by row (the canvas has its own strides). */
        rawfx_video_frame out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        if (!check(rawfx_compositor_compose(comp, n, &out), "rawfx_compositor_compose")) return 1;
        if (!write_all(video, "FRAME\n", 6)) break;  /* the reader left */
        for (int p = 0; p < 3; p++) {
            uint32_t w = p ? out.width / 2 : out.width, h = p ? out.height / 2 : out.height;
            for (uint32_t y = 0; y < h; y++) write_all(video, out.planes[p] + (size_t)y * (size_t)out.strides[p], w);
        }

        /* The one-way streams up to this frame's end plus two blocks (what the SDK's audio
         * thread delivered by now, onVirtualSpeakerOneWayAudioReceived): the speaker loud, the
         * others quiet; the speaker's gain raised by 6 dB in the mix. */
        int64_t first = 0, end = 0;
        rawfx_mixer_blocks_for_frame(n, 30, 1, &first, &end);
        for (; next_block < end + 2; next_block++) {
            for (int u = 0; u < USERS; u++) {
                if (!voices[u]) continue;
                for (int i = 0; i < STREAM_RATE / 100; i++) {
                    double t = (double)(next_block * (STREAM_RATE / 100) + i) / STREAM_RATE;
                    double level = u + 1 == speaker ? 0.3 * (0.5 + 0.5 * sin(2 * PI * 4 * t)) : 0.002;
                    phase[u] += 2 * PI * (110 + 15 * u) / STREAM_RATE;
                    pcm[i] = (int16_t)(32767 * level * (0.6 * sin(phase[u]) + 0.3 * sin(2 * phase[u])));
                }
                rawfx_audio_frame block = { .struct_size = sizeof block, .samples = pcm, .frame_count = STREAM_RATE / 100,
                                            .sample_rate = STREAM_RATE, .channels = 1, .source = RAWFX_AUDIO_SOURCE_ONE_WAY,
                                            .user_id = (uint64_t)(u + 1), .timestamp_us = next_block * 10000 };
                rawfx_mixer_input_set_gain(voices[u], u + 1 == speaker ? 6 : 0);
                if (!check(rawfx_mixer_input_submit(voices[u], &block), "rawfx_mixer_input_submit")) return 1;
            }
        }
        /* The program's audio of this frame: its blocks, mixed (48000 Hz mono, 10 ms each). */
        for (int64_t b = first; b < end; b++) {
            rawfx_audio_frame mixed;
            memset(&mixed, 0, sizeof mixed);
            mixed.struct_size = sizeof mixed;
            if (!check(rawfx_mixer_mix(mixer, b, &mixed), "rawfx_mixer_mix")) return 1;
            if (audio) write_all(audio, mixed.samples, mixed.frame_count * sizeof *mixed.samples);
            samples_sent += mixed.frame_count;
        }
    }
    fflush(video);
    if (audio) {
        wav_header(header, (uint32_t)samples_sent);
        fseek(audio, 0, SEEK_SET);
        write_all(audio, header, 44);
        fclose(audio);
    }
    char scene[4096];
    size_t scene_length = 0;
    if (rawfx_compositor_scene_json(comp, scene, sizeof scene, &scene_length) == RAWFX_OK)
        fprintf(stderr, "recording_bot: %ld frames, %lld audio samples at %d Hz; last scene %s\n", frames,
                (long long)samples_sent, RATE, scene);
    for (int u = 0; u <= USERS; u++) rawfx_compositor_input_release(inputs[u]);
    for (int u = 0; u < USERS; u++) rawfx_mixer_input_release(voices[u]);
    rawfx_compositor_destroy(comp);
    rawfx_video_chain_destroy(captions);
    rawfx_mixer_destroy(mixer);
    rawfx_registry_close(registry);
    free(pixels);
    free(pcm);
    if (video != stdout) fclose(video);
    return 0;
}

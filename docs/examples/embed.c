/*
 * embed.c — run a RawFX chain over a Y4M or WAV file from C, through librawfx.
 *
 *   cc -std=c99 embed.c $(pkg-config --cflags --libs rawfx) -o embed
 *   ./embed --vf 'scale=width=320:height=180,rotate=angle=90' in.y4m out.y4m
 *   ./embed --af 'denoise=level=-30' [--chunk FRAMES] in.wav out.wav
 *
 * The output is byte for byte what `rawfx run` writes for the same chain and input: the
 * tiny readers and writers below keep the Y4M header's fields and write 16-bit PCM WAV, and
 * the chain's latency is handled as rawfx run does (first `latency` outputs dropped, the
 * tail drained). Optional: --plugin-path DIR (repeatable) before the chain.
 * Limits of this example: 8-bit 4:2:0 Y4M whose header has every field rawfx writes in its
 * order (F, I, A, C, X..., XCOLORRANGE last, as FFmpeg writes them; rawfx fills in a missing
 * F as 25:1); PCM WAV with 1 or 2 channels.
 */
#include "rawfx_embed.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "embed: %s\n", what);
    return 1;
}

static int fail_rawfx(const char *call, rawfx_result result) {
    fprintf(stderr, "embed: %s: %s: %s\n", call, rawfx_result_name(result), rawfx_last_error());
    return 1;
}

/* ------------------------------------------------------------------ Y4M -- */

/* Writes the header line of `in` with the output's size (and, when the chain turned the
 * picture a quarter, the pixel aspect turned too), every other field as it was. */
static void write_y4m_header(FILE *out, char *line, const rawfx_video_format *in, const rawfx_video_format *o) {
    int turned = in->width != in->height && o->width == in->height && o->height == in->width;
    char *token = strtok(line, " ");
    int first = 1;
    for (; token; token = strtok(NULL, " "), first = 0) {
        if (!first) fputc(' ', out);
        unsigned a, b;
        if (token[0] == 'W') fprintf(out, "W%u", (unsigned)o->width);
        else if (token[0] == 'H') fprintf(out, "H%u", (unsigned)o->height);
        else if (token[0] == 'A' && turned && sscanf(token, "A%u:%u", &a, &b) == 2) fprintf(out, "A%u:%u", b, a);
        else fputs(token, out);
    }
    fputc('\n', out);
}

static void write_plane(FILE *out, const uint8_t *plane, int32_t stride, uint32_t width, uint32_t height) {
    for (uint32_t row = 0; row < height; row++) fwrite(plane + (size_t)row * (size_t)stride, 1, width, out);
}

typedef struct video_output {
    FILE *file;
    uint32_t to_skip; /* the first `latency` outputs precede any input */
} video_output;

static void write_frame(void *user_data, const rawfx_video_frame *frame) {
    video_output *output = (video_output *)user_data;
    if (output->to_skip > 0) {
        output->to_skip--;
        return;
    }
    uint32_t cw = (frame->width + 1) / 2, ch = (frame->height + 1) / 2;
    fputs("FRAME\n", output->file);
    write_plane(output->file, frame->planes[0], frame->strides[0], frame->width, frame->height);
    write_plane(output->file, frame->planes[1], frame->strides[1], cw, ch);
    write_plane(output->file, frame->planes[2], frame->strides[2], cw, ch);
}

static int run_video(rawfx_registry *registry, const char *chain_text, const char *in_path, const char *out_path) {
    FILE *in = fopen(in_path, "rb");
    if (!in) return fail("cannot open the input");
    char line[4096], header[4096];
    if (!fgets(line, sizeof line, in) || strncmp(line, "YUV4MPEG2 ", 10) != 0) return fail("not a Y4M file");
    line[strcspn(line, "\n")] = 0;
    strcpy(header, line);
    rawfx_video_format format = {sizeof format, 0, 0, RAWFX_PIXEL_I420, RAWFX_RANGE_LIMITED, 0};
    for (char *t = strtok(line, " "); t; t = strtok(NULL, " ")) {
        if (t[0] == 'W') format.width = (uint32_t)strtoul(t + 1, NULL, 10);
        if (t[0] == 'H') format.height = (uint32_t)strtoul(t + 1, NULL, 10);
        if (t[0] == 'C' && strncmp(t, "C420", 4) != 0) return fail("only 4:2:0 Y4M is supported");
        if (strcmp(t, "XCOLORRANGE=FULL") == 0) format.color_range = RAWFX_RANGE_FULL;
    }

    rawfx_video_chain *chain = NULL;
    rawfx_result result = rawfx_video_chain_create(registry, chain_text, &chain);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_video_chain_create", result);
    rawfx_video_format output_format;
    result = rawfx_video_chain_negotiate(chain, &format, &output_format);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_video_chain_negotiate", result);

    /* One buffer for every input frame, tightly packed: planes are rows of it. */
    uint32_t cw = (format.width + 1) / 2, chh = (format.height + 1) / 2;
    size_t luma = (size_t)format.width * format.height, chroma = (size_t)cw * chh;
    uint8_t *picture = malloc(luma + 2 * chroma);
    rawfx_video_frame frame = {0};
    frame.struct_size = sizeof frame;
    frame.width = format.width;
    frame.height = format.height;
    frame.pixel_format = RAWFX_PIXEL_I420;
    frame.color_range = format.color_range;
    frame.planes[0] = picture;
    frame.planes[1] = picture + luma;
    frame.planes[2] = picture + luma + chroma;
    frame.strides[0] = (int32_t)format.width;
    frame.strides[1] = frame.strides[2] = (int32_t)cw;

    FILE *out = fopen(out_path, "wb");
    if (!out) return fail("cannot create the output");
    write_y4m_header(out, header, &format, &output_format);
    video_output output = {out, rawfx_video_chain_latency(chain)};
    long frames = 0;
    while (fgets(line, sizeof line, in)) {
        if (strncmp(line, "FRAME", 5) != 0) return fail("expected a FRAME line");
        if (fread(picture, 1, luma + 2 * chroma, in) != luma + 2 * chroma) return fail("the input ends inside a frame");
        rawfx_video_frame processed;
        result = rawfx_video_chain_process(chain, &frame, &processed);
        if (result != RAWFX_OK) return fail_rawfx("rawfx_video_chain_process", result);
        write_frame(&output, &processed);
        frames++;
    }
    if (frames > 0) {
        result = rawfx_video_chain_drain(chain, &frame, write_frame, &output);
        if (result != RAWFX_OK) return fail_rawfx("rawfx_video_chain_drain", result);
    }

    char metrics[1024];
    size_t length;
    if (rawfx_video_chain_metrics_json(chain, metrics, sizeof metrics, &length) == RAWFX_OK)
        fprintf(stderr, "embed: %ld frames; %s\n", frames, metrics);
    rawfx_video_chain_destroy(chain);
    free(picture);
    fclose(in);
    return fclose(out) == 0 ? 0 : fail("cannot write the output");
}

/* ------------------------------------------------------------------ WAV -- */

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void put32(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; p[2] = (v >> 16) & 0xFF; p[3] = v >> 24; }
static void put16(uint8_t *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; }

/* The 44-byte header of 16-bit PCM, as rawfx writes it. */
static void wav_header(uint8_t h[44], const rawfx_audio_format *f, uint32_t data_bytes) {
    memcpy(h, "RIFF", 4); put32(h + 4, 36 + data_bytes); memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16); put16(h + 20, 1); put16(h + 22, f->channels); put32(h + 24, f->sample_rate);
    put32(h + 28, f->sample_rate * f->channels * 2); put16(h + 32, f->channels * 2); put16(h + 34, 16);
    memcpy(h + 36, "data", 4); put32(h + 40, data_bytes);
}

typedef struct audio_output {
    FILE *file;
    uint32_t channels;
    uint32_t to_skip; /* frames: the chain's latency */
    uint32_t frames_written;
} audio_output;

static void write_block(void *user_data, const rawfx_audio_frame *block) {
    audio_output *output = (audio_output *)user_data;
    uint32_t skip = block->frame_count < output->to_skip ? block->frame_count : output->to_skip;
    output->to_skip -= skip;
    uint32_t frames = block->frame_count - skip;
    fwrite(block->samples + (size_t)skip * output->channels, 2 * output->channels, frames, output->file);
    output->frames_written += frames;
}

static int run_audio(rawfx_registry *registry, const char *chain_text, const char *in_path, const char *out_path,
                     uint32_t chunk_frames) {
    FILE *in = fopen(in_path, "rb");
    if (!in) return fail("cannot open the input");
    uint8_t riff[12], chunk[8], fmt[16];
    if (fread(riff, 1, 12, in) != 12 || memcmp(riff, "RIFF", 4) || memcmp(riff + 8, "WAVE", 4)) return fail("not a WAV file");
    rawfx_audio_format format = {sizeof format, 0, 0};
    uint32_t data_bytes = 0;
    for (;;) {
        if (fread(chunk, 1, 8, in) != 8) return fail("no data chunk");
        uint32_t size = le32(chunk + 4);
        if (memcmp(chunk, "data", 4) == 0) { data_bytes = size; break; }
        if (memcmp(chunk, "fmt ", 4) == 0) {
            if (size < 16 || fread(fmt, 1, 16, in) != 16) return fail("short fmt chunk");
            if (le16(fmt + 14) != 16) return fail("only 16-bit PCM is supported");
            format.channels = le16(fmt + 2);
            format.sample_rate = le32(fmt + 4);
            size -= 16;
        }
        if (fseek(in, (long)(size + (size & 1)), SEEK_CUR) != 0) return fail("cannot skip a chunk");
    }
    if (format.channels < 1 || format.channels > 2) return fail("only mono and stereo are supported");

    rawfx_audio_chain *chain = NULL;
    rawfx_result result = rawfx_audio_chain_create(registry, chain_text, &chain);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_audio_chain_create", result);
    rawfx_audio_format output_format;
    result = rawfx_audio_chain_negotiate(chain, &format, &output_format);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_audio_chain_negotiate", result);

    FILE *out = fopen(out_path, "wb");
    if (!out) return fail("cannot create the output");
    uint8_t header[44];
    wav_header(header, &output_format, 0);
    fwrite(header, 1, 44, out);
    audio_output output = {out, output_format.channels, rawfx_audio_chain_latency(chain), 0};

    if (chunk_frames == 0) chunk_frames = format.sample_rate / 10; /* 100 ms, as rawfx run reads */
    int16_t *samples = malloc((size_t)chunk_frames * format.channels * 2);
    uint32_t frames_left = data_bytes / (2 * format.channels);
    int64_t frames_read = 0;
    while (frames_left > 0) {
        uint32_t want = frames_left < chunk_frames ? frames_left : chunk_frames;
        size_t got = fread(samples, 2 * format.channels, want, in);
        if (got == 0) break;
        rawfx_audio_frame block = {0};
        block.struct_size = sizeof block;
        block.samples = samples;
        block.frame_count = (uint32_t)got;
        block.sample_rate = format.sample_rate;
        block.channels = format.channels;
        block.source = RAWFX_AUDIO_SOURCE_FILE;
        block.timestamp_us = frames_read * 1000000 / format.sample_rate;
        result = rawfx_audio_chain_process(chain, &block, write_block, &output);
        if (result != RAWFX_OK) return fail_rawfx("rawfx_audio_chain_process", result);
        frames_read += (int64_t)got;
        frames_left -= (uint32_t)got;
    }
    result = rawfx_audio_chain_drain(chain, write_block, &output);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_audio_chain_drain", result);

    wav_header(header, &output_format, output.frames_written * 2 * output_format.channels);
    fseek(out, 0, SEEK_SET);
    fwrite(header, 1, 44, out);
    rawfx_stage_metrics stages[8];
    size_t count = 0;
    for (size_t i = 0; i < 8; i++) stages[i].struct_size = sizeof stages[i];
    if (rawfx_audio_chain_metrics(chain, stages, 8, &count) == RAWFX_OK)
        for (size_t i = 0; i < count; i++)
            fprintf(stderr, "embed: %s: %llu blocks\n", stages[i].name, (unsigned long long)stages[i].frames);
    rawfx_audio_chain_destroy(chain);
    free(samples);
    fclose(in);
    return fclose(out) == 0 ? 0 : fail("cannot write the output");
}

int main(int argc, char **argv) {
    const char *plugin_path[16];
    size_t plugin_path_count = 0;
    uint32_t chunk_frames = 0;
    int arg = 1;
    for (; arg + 1 < argc; arg += 2) {
        if (strcmp(argv[arg], "--plugin-path") == 0 && plugin_path_count < 16) plugin_path[plugin_path_count++] = argv[arg + 1];
        else if (strcmp(argv[arg], "--chunk") == 0) chunk_frames = (uint32_t)strtoul(argv[arg + 1], NULL, 10);
        else break;
    }
    if (argc - arg != 4 || (strcmp(argv[arg], "--vf") != 0 && strcmp(argv[arg], "--af") != 0)) {
        fprintf(stderr, "usage: embed [--plugin-path DIR]... [--chunk FRAMES] --vf|--af CHAIN INPUT OUTPUT\n");
        return 2;
    }
    rawfx_registry_options options = {0};
    options.struct_size = sizeof options;
    options.search_path = plugin_path;
    options.search_path_count = plugin_path_count;
    options.use_environment = 1;
    rawfx_registry *registry = NULL;
    rawfx_result result = rawfx_registry_open(&options, &registry);
    if (result != RAWFX_OK) return fail_rawfx("rawfx_registry_open", result);
    for (size_t i = 0; i < rawfx_registry_failure_count(registry); i++)
        fprintf(stderr, "embed: warning: %s\n", rawfx_registry_failure(registry, i));

    int status = argv[arg][2] == 'v' ? run_video(registry, argv[arg + 1], argv[arg + 2], argv[arg + 3])
                                     : run_audio(registry, argv[arg + 1], argv[arg + 2], argv[arg + 3], chunk_frames);
    rawfx_registry_close(registry);
    return status;
}

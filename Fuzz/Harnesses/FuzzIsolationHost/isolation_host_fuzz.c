/*
 * isolation_host_fuzz.c — the host's side of an isolated stage (iso_proxy.c, iso_handshake.c,
 * iso_audio.c, iso_channel.c, iso_log.c) against a hostile helper that a thread of this
 * process plays: no process per input. The proxy is made without its supervisor
 * (iso_instance_create) and marked up; the "helper" waits for each request in the shared
 * memory and answers it as the fuzz input says: the negotiation of each stage, the frame or
 * block it reports back (sizes, offsets, strides, format, frame counts), the status, the
 * error text and log ring (unterminated), the stage index, bytes scribbled anywhere in the
 * memfd, and the reply's sequence number (right, ahead, "dead", or none: then the deadline
 * ends the wait). Out of input, it answers like a well-behaved helper that changes nothing.
 *
 * The host calls configure, then process (video or audio, in place or out of place, a group
 * of up to three stages, pipelined audio) and reset, as a chain would. Oracles besides
 * AddressSanitizer: the caller's input is never written; a frame or block the proxy counts as
 * passed through is byte for byte the input (audio: when the stage has no latency and keeps
 * the format); a processed frame has the negotiated size and lies inside the shared memory.
 */
#define _GNU_SOURCE
#include "isolation_host_fuzz.h"
#include "isolation_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_reader {
    const uint8_t *data;
    size_t size, position;
} fuzz_reader;

static uint8_t next_byte(fuzz_reader *r) { return r->position < r->size ? r->data[r->position++] : 0; }

static uint32_t next_u32(fuzz_reader *r) {
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) value = value << 8 | next_byte(r);
    return value;
}

/* A value for a size or count: mostly near `usual`, sometimes anything. */
static uint32_t next_size(fuzz_reader *r, uint32_t usual) {
    uint8_t kind = next_byte(r);
    if (kind % 4 == 0) return next_u32(r);
    if (kind % 4 == 1) return usual + (uint32_t)(int8_t)next_byte(r);
    return usual;
}

typedef struct hostile_helper {
    iso_instance *inst;
    fuzz_reader script;
    _Atomic int stop;
} hostile_helper;

static void fill(fuzz_reader *r, void *target, size_t count) {
    uint8_t *bytes = target;
    for (size_t i = 0; i < count; i++) bytes[i] = next_byte(r) | 1; /* never a NUL */
}

/* Up to 4 KB of input bytes at an offset the input picks, anywhere in the memfd as it is now. */
static void scribble(hostile_helper *h, fuzz_reader *r) {
    size_t size = __atomic_load_n(&h->inst->chan.map_size, __ATOMIC_ACQUIRE);
    size_t offset = next_u32(r) % size, count = (size_t)next_byte(r) * 16;
    if (count > size - offset) count = size - offset;
    uint8_t *at = h->inst->chan.map + offset;
    for (size_t i = 0; i < count; i++) at[i] = next_byte(r);
}

static void perturb_video(fuzz_reader *r, rawfx_video_frame *f) {
    switch (next_byte(r) % 9) {
    case 0: f->width = next_size(r, f->width); break;
    case 1: f->height = next_size(r, f->height); break;
    case 2: f->pixel_format = next_size(r, f->pixel_format); break;
    case 3: f->rotation = next_size(r, 90); break;
    case 4: f->color_range = next_size(r, f->color_range); break;
    case 5: { /* planes are offsets in the control block: any value */
        uint8_t **plane = &f->planes[next_byte(r) % 3];
        *plane = (uint8_t *)((uintptr_t)*plane + (uintptr_t)(intptr_t)(int32_t)next_u32(r));
        break;
    }
    case 6: f->strides[next_byte(r) % 3] = (int32_t)next_size(r, (uint32_t)f->strides[0]); break;
    default: break;
    }
}

static void perturb_audio(fuzz_reader *r, rawfx_audio_frame *f) {
    switch (next_byte(r) % 6) {
    case 0: f->samples = (int16_t *)((uintptr_t)f->samples + (intptr_t)(int32_t)next_u32(r)); break;
    case 1: f->frame_count = next_size(r, f->frame_count); break;
    case 2: f->sample_rate = next_size(r, f->sample_rate); break;
    case 3: f->channels = next_size(r, f->channels); break;
    case 4: f->flags = next_u32(r); break;
    default: break;
    }
}

/* One answer to request `request`, as the script says. */
static void answer(hostile_helper *h, rfx_iso_control *c, uint32_t request) {
    fuzz_reader *r = &h->script;
    uint8_t how = next_byte(r);
    if (how & 1) scribble(h, r);
    uint32_t command = c->command;
    if (command == RFX_ISO_CONFIGURE) {
        uint32_t count = c->member_count < RFX_ISO_GROUP_MAX ? c->member_count : RFX_ISO_GROUP_MAX;
        rawfx_format stage_input = c->input;
        for (uint32_t k = 0; k < count; k++) {
            rawfx_negotiation n = c->negotiation;
            n.output = stage_input;
            if (how & 2) {
                switch (next_byte(r) % 9) {
                case 0: n.output.kind = next_size(r, n.output.kind); break;
                case 1: n.output.video.width = next_size(r, n.output.video.width); break;
                case 2: n.output.video.height = next_size(r, n.output.video.height); break;
                case 3: n.output.audio.sample_rate = next_size(r, n.output.audio.sample_rate); break;
                case 4: n.output.audio.channels = next_size(r, n.output.audio.channels); break;
                case 5: n.latency = next_size(r, 0); break;
                case 6: n.block_frames = next_size(r, 0); break;
                case 7: n.max_output_frames = next_size(r, 0); break;
                default: break;
                }
            }
            c->member_negotiation[k] = n;
            stage_input = n.output;
        }
    } else if (command == RFX_ISO_PROCESS_VIDEO && (how & 2)) {
        perturb_video(r, next_byte(r) & 1 ? &c->video_in : &c->video_out);
    } else if (command == RFX_ISO_PROCESS_AUDIO && (how & 2)) {
        perturb_audio(r, next_byte(r) & 1 ? &c->audio_in : &c->audio_out);
    }
    if (how & 4) fill(r, c->error, sizeof c->error);
    if (how & 8) {
        rfx_iso_log_slot *slot = &c->log[next_byte(r) % RFX_ISO_LOG_SLOTS];
        slot->sequence = next_u32(r);
        slot->severity = (int32_t)next_u32(r);
        slot->origin = (int32_t)next_u32(r);
        fill(r, slot->source, sizeof slot->source);
        fill(r, slot->message, sizeof slot->message);
        __atomic_store_n(&c->log_enqueue, next_u32(r), __ATOMIC_RELEASE);
        c->log_dropped = next_u32(r);
    }
    if (how & 16) c->member = next_u32(r);
    c->status = (how & 32) ? (int32_t)next_u32(r) : RAWFX_OK;
    uint8_t reply = (how & 64) ? next_byte(r) % 4 : 0;
    if (reply == 3) return; /* no answer: the host's deadline ends the wait */
    uint32_t value = reply == 0 ? request : reply == 1 ? request + 1 : RFX_ISO_DEAD;
    rfx_iso_store_release(&c->reply_seq, value);
    rfx_iso_futex_wake(&c->reply_seq);
}

static void *serve(void *argument) {
    hostile_helper *h = argument;
    rfx_iso_control *c = h->inst->chan.control;
    uint32_t seen = 0;
    while (!atomic_load(&h->stop)) {
        uint32_t request = rfx_iso_load_acquire(&c->request_seq);
        if (request == seen) {
            rfx_iso_futex_wait(&c->request_seq, request, 200000);
            continue;
        }
        seen = request;
        answer(h, c, request);
    }
    return NULL;
}

__attribute__((noinline)) static void check(int condition, const char *what) {
    if (condition) return;
    fprintf(stderr, "FuzzIsolationProtocol oracle: %s\n", what);
    abort();
}

/* The most a negotiated frame may be for the harness to hold its output: larger sizes are
 * valid (the host lays them out) but only configured, not processed. */
#define MAX_FRAME_BYTES ((size_t)8 << 20)

static void run_video(const rawfx_filter *f, iso_instance *inst, fuzz_reader *plan, uint32_t width, uint32_t height,
                      const rawfx_negotiation *negotiated) {
    const rawfx_video_format *o = &negotiated->output.video;
    size_t in_bytes = iso_plane_bytes(width, height), out_bytes = iso_plane_bytes(o->width, o->height);
    if (negotiated->output.kind != RAWFX_MEDIA_VIDEO || out_bytes > MAX_FRAME_BYTES) return;
    uint8_t *input = malloc(in_bytes), *pristine = malloc(in_bytes), *output = malloc(out_bytes);
    rawfx_video_frame in, out_layout;
    iso_video_layout(&in, &inst->stream.input.video, 0);
    iso_video_layout(&out_layout, o, 0);
    for (int p = 0; p < 3; p++) {
        in.planes[p] = input + (uintptr_t)in.planes[p];
        out_layout.planes[p] = output + (uintptr_t)out_layout.planes[p];
    }
    uint32_t calls = 1 + next_byte(plan) % 6;
    for (uint32_t call = 0; call < calls; call++) {
        for (size_t i = 0; i < in_bytes; i++) input[i] = (uint8_t)(i * 7 + call * 13);
        memcpy(pristine, input, in_bytes);
        in.timestamp_us = (int64_t)call * 33333;
        rawfx_video_frame out = out_layout;
        uint64_t passed = atomic_load(&inst->counters.passthrough);
        rawfx_status status = f->process_video(f, &in, &out);
        check(memcmp(input, pristine, in_bytes) == 0, "the proxy wrote into the caller's input frame");
        if (status != RAWFX_OK) continue;
        if (atomic_load(&inst->counters.passthrough) == passed + 1) {
            if (o->width == width && o->height == height) {
                for (int p = 0; p < 3; p++) {
                    uint32_t w = p ? (width + 1) / 2 : width, hgt = p ? (height + 1) / 2 : height;
                    for (uint32_t y = 0; y < hgt; y++)
                        check(memcmp(out.planes[p] + (size_t)y * out.strides[p], in.planes[p] + (size_t)y * in.strides[p], w) == 0,
                              "a passed-through frame differs from the input");
                }
            }
        } else {
            check(out.width == o->width && out.height == o->height, "a processed frame of another size than negotiated");
            size_t map_size = inst->chan.map_size;
            for (int p = 0; p < 3; p++) {
                uint32_t hgt = p ? (out.height + 1) / 2 : out.height, w = p ? (out.width + 1) / 2 : out.width;
                const uint8_t *last = out.planes[p] + (size_t)(hgt - 1) * (size_t)out.strides[p] + w - 1;
                check(out.planes[p] >= inst->chan.map && last < inst->chan.map + map_size, "a processed plane outside the shared memory");
            }
        }
        if (next_byte(plan) % 8 == 0) f->reset(f);
    }
    free(input);
    free(pristine);
    free(output);
}

static void run_audio(const rawfx_filter *f, iso_instance *inst, fuzz_reader *plan, const rawfx_format *format,
                      const rawfx_negotiation *negotiated, int in_place) {
    uint32_t channels = format->audio.channels;
    uint32_t frames = 1 + next_byte(plan) % 200;
    if (negotiated->block_frames > 0 && negotiated->block_frames <= 4800) frames = negotiated->block_frames;
    const rawfx_audio_format *o = &negotiated->output.audio;
    if (negotiated->output.kind != RAWFX_MEDIA_AUDIO || o->channels > 64) return;
    /* Room for what the stage may return: its declared maximum or the rate's ratio, bounded. */
    uint64_t room = (uint64_t)frames * o->sample_rate / format->audio.sample_rate + 16;
    if (negotiated->max_output_frames > room) room = negotiated->max_output_frames;
    if (room * o->channels * sizeof(int16_t) > MAX_FRAME_BYTES) return;
    int keeps_format = o->sample_rate == format->audio.sample_rate && o->channels == channels;
    /* An in-place stage works in the caller's block, exactly its size (the host refused any
     * other format for it). */
    check(!in_place || keeps_format, "an in-place audio stage negotiated another format");
    size_t in_samples = (size_t)frames * channels;
    int16_t *input = malloc(in_samples * sizeof(int16_t));
    int16_t *pristine = malloc(in_samples * sizeof(int16_t));
    int16_t *output = in_place ? input : malloc(room * o->channels * sizeof(int16_t));
    uint32_t calls = 1 + next_byte(plan) % 6;
    for (uint32_t call = 0; call < calls; call++) {
        for (size_t i = 0; i < in_samples; i++) input[i] = (int16_t)(i * 31 + call * 977);
        memcpy(pristine, input, in_samples * sizeof(int16_t));
        rawfx_audio_frame in = { sizeof in, input, frames, format->audio.sample_rate, channels, 0, 0, 0, (int64_t)call * 10000 };
        rawfx_audio_frame out = in;
        out.samples = output;
        out.frame_count = in_place ? frames : (uint32_t)room;
        uint64_t passed = atomic_load(&inst->counters.passthrough);
        rawfx_status status = f->process_audio(f, &in, &out);
        if (!in_place) check(memcmp(input, pristine, in_samples * sizeof(int16_t)) == 0, "the proxy wrote into the caller's input block");
        if (status != RAWFX_OK) continue;
        check(out.frame_count <= (in_place ? frames : room), "more frames out than the buffer holds");
        if (atomic_load(&inst->counters.passthrough) == passed + 1 && keeps_format && negotiated->latency == 0 && !inst->pipe.active) {
            check(out.frame_count == frames && memcmp(output, pristine, in_samples * sizeof(int16_t)) == 0,
                  "a passed-through block differs from the input");
        }
        if (next_byte(plan) % 8 == 0) f->reset(f);
    }
    if (!in_place) free(output);
    free(input);
    free(pristine);
}

/* The engine's log lines (the helper's forwarded ones among them) are read, not printed:
 * AddressSanitizer sees a line that is not terminated within its buffer. */
static void read_log_line(rawfx_log_severity severity, rfx_log_origin origin, const char *source, const char *message) {
    (void)severity;
    (void)origin;
    check(strlen(source) < RAWFX_LOG_MESSAGE_MAX && strlen(message) < RAWFX_LOG_MESSAGE_MAX, "a log line over its bound");
}

int rfx_fuzz_isolation_host(const uint8_t *data, size_t size) {
    rfx_runtime_set_log_sink(read_log_line);
    /* The first bytes shape the stage and the calls; the rest is the helper's script. */
    enum { PLAN_BYTES = 16 };
    fuzz_reader plan = { data, size < PLAN_BYTES ? size : PLAN_BYTES, 0 };
    hostile_helper helper = { NULL, { data + plan.size, size - plan.size, 0 }, 0 };
    uint8_t shape = next_byte(&plan);
    int video = !(shape & 1), pipeline = !video && (shape & 2);
    uint32_t members = video ? 1 + (shape >> 2) % 3 : 1;
    rawfx_filter_descriptor real[3];
    rfx_isolation_member list[3];
    static const char *const ids[3] = { "fuzz_a", "fuzz_b", "fuzz_c" };
    for (uint32_t k = 0; k < 3; k++) {
        memset(&real[k], 0, sizeof real[k]);
        real[k].struct_size = sizeof real[k];
        real[k].id = ids[k];
        real[k].media_kind = video ? RAWFX_MEDIA_VIDEO : RAWFX_MEDIA_AUDIO;
        real[k].processing = (shape >> (4 + k)) & 1 ? RAWFX_PROCESS_OUT_OF_PLACE : RAWFX_PROCESS_IN_PLACE;
        list[k].plugin_path = "/nonexistent/libfuzz.so";
        list[k].real = &real[k];
    }
    rfx_isolation_config config = { 0 };
    config.helper_path = "/nonexistent/rawfx-isolate";
    config.plugin_path = "/nonexistent/libfuzz.so";
    config.deadline_ns = 2000000;
    config.control_timeout_ns = 2000000;
    config.member_count = members;
    config.members = list;
    config.pipeline = pipeline;
    rawfx_filter_descriptor *type = rfx_isolation_descriptor_create(&real[0], &config);
    check(type != NULL, "the proxy's type was refused");
    char error[256];
    iso_instance *inst = iso_instance_create((const iso_type *)type, error, sizeof error);
    if (!inst) { /* out of file descriptors or memory: not the protocol's doing */
        rfx_isolation_descriptor_destroy(type);
        return 0;
    }
    atomic_store(&inst->sup.state, STATE_UP);
    helper.inst = inst;
    pthread_t thread;
    check(pthread_create(&thread, NULL, serve, &helper) == 0, "cannot start the helper's thread");

    const rawfx_filter *f = &inst->filter;
    rawfx_format format = { sizeof format, video ? RAWFX_MEDIA_VIDEO : RAWFX_MEDIA_AUDIO, { 0 }, { 0 } };
    uint32_t width = 2 + next_byte(&plan) % 40, height = 2 + next_byte(&plan) % 30;
    format.video = (rawfx_video_format){ sizeof format.video, width, height, RAWFX_PIXEL_I420, RAWFX_RANGE_LIMITED, 0 };
    format.audio = (rawfx_audio_format){ sizeof format.audio, next_byte(&plan) & 1 ? 16000 : 48000, 1 + next_byte(&plan) % 2 };
    rawfx_negotiation negotiated = { sizeof negotiated, format, 0, 0, 0 };
    if (f->configure(f, &format, &negotiated) == RAWFX_OK) {
        if (video) run_video(f, inst, &plan, width, height, &negotiated);
        else run_audio(f, inst, &plan, &format, &negotiated, ((const iso_type *)type)->real_processing == RAWFX_PROCESS_IN_PLACE);
    }
    atomic_store(&helper.stop, 1);
    rfx_iso_futex_wake(&inst->chan.control->request_seq);
    pthread_join(thread, NULL);
    iso_instance_free(inst);
    rfx_isolation_descriptor_destroy(type);
    return 0;
}

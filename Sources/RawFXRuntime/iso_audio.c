/*
 * iso_audio.c — an isolated audio stage: each block copied into the shared memory and the
 * answer copied back; the delay line that keeps a passed-through block as late as an answered
 * one; and `@isolate(pipeline)`, where each call posts its block and returns the previous
 * block's answer, so the calling thread never waits for the helper.
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reset_delay(iso_instance *inst) {
    if (inst->audio.delay) memset(inst->audio.delay, 0, (size_t)inst->audio.delay_frames * inst->audio.channels * sizeof(int16_t));
    inst->audio.delay_position = 0;
}

/* [process] Feeds `count` frames of `samples` through the delay line; with
 * `delayed`, writes them delayed by the stage's latency there (may alias). */
static void delay_push(iso_instance *inst, const int16_t *samples, int16_t *delayed, uint32_t count) {
    if (!inst->audio.delay) {
        if (delayed && delayed != samples) memcpy(delayed, samples, (size_t)count * inst->audio.channels * sizeof(int16_t));
        return;
    }
    uint32_t ch = inst->audio.channels;
    for (uint32_t f = 0; f < count; f++) {
        int16_t *slot = inst->audio.delay + (size_t)inst->audio.delay_position * ch;
        for (uint32_t k = 0; k < ch; k++) {
            int16_t x = samples[(size_t)f * ch + k];
            if (delayed) delayed[(size_t)f * ch + k] = slot[k];
            slot[k] = x;
        }
        inst->audio.delay_position = inst->audio.delay_position + 1 == inst->audio.delay_frames ? 0 : inst->audio.delay_position + 1;
    }
}

/* [process] The block goes on unchanged: the input delayed by the stage's latency;
 * for a stage that changes rate or channels, silence of the length it would have made. */
static void audio_passthrough(iso_instance *inst, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    atomic_fetch_add_explicit(&inst->counters.passthrough, 1, memory_order_relaxed);
    const rawfx_audio_format *o = &inst->stream.negotiation.output.audio;
    if (o->sample_rate == in->sample_rate && o->channels == in->channels) {
        delay_push(inst, in->samples, out->samples, in->frame_count);
        out->frame_count = in->frame_count;
    } else {
        uint64_t target = (inst->audio.frames_in * o->sample_rate) / (in->sample_rate ? in->sample_rate : 1);
        uint64_t count = target > inst->audio.frames_out ? target - inst->audio.frames_out : 0;
        if (count > out->frame_count) count = out->frame_count;
        memset(out->samples, 0, (size_t)count * o->channels * sizeof(int16_t));
        out->frame_count = (uint32_t)count;
    }
    out->sample_rate = o->sample_rate;
    out->channels = o->channels;
}

/* [process, in a call] Copies block `in` into the shared memory and posts it. `*layout_out`
 * gets where the helper is to write its answer (the input itself for an in-place stage). */
static uint32_t post_audio_block(iso_instance *inst, const rawfx_audio_frame *in, const rawfx_audio_frame *out,
                                 rawfx_audio_frame *layout_out) {
    rfx_iso_control *c = inst->chan.control;
    memcpy(inst->chan.map + inst->stream.in_offset, in->samples, (size_t)in->frame_count * in->channels * sizeof(int16_t));
    rawfx_audio_frame layout_in = *in;
    layout_in.samples = (int16_t *)(uintptr_t)inst->stream.in_offset;
    *layout_out = *out;
    if (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE) *layout_out = layout_in;
    else {
        layout_out->samples = (int16_t *)(uintptr_t)inst->stream.out_offset;
        if (layout_out->frame_count > inst->stream.audio_out_frames) layout_out->frame_count = (uint32_t)inst->stream.audio_out_frames;
    }
    c->audio_in = layout_in;
    c->audio_out = *layout_out;
    return iso_post(inst, RFX_ISO_PROCESS_AUDIO);
}

/* Why the helper's answer (copied once from the control block) to a block of `in_frames`
 * posted with `layout_out` breaks the protocol, or NULL. */
static const char *audio_answer_violation(const iso_instance *inst, const rawfx_audio_frame *answered,
                                          const rawfx_audio_frame *layout_out, uint32_t in_frames) {
    if (answered->samples != layout_out->samples) return "moved the output samples";
    if (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE ? answered->frame_count != in_frames
                                                              : answered->frame_count > layout_out->frame_count)
        return "reported more output frames than the buffer holds";
    if (answered->sample_rate != inst->stream.negotiation.output.audio.sample_rate
        || answered->channels != inst->stream.negotiation.output.audio.channels)
        return "reported another rate or channel count than negotiated";
    return NULL;
}

/* [process, in a call; or configure, with no frames flowing] Waits for the answer to the
 * pipelined block in flight (at most the deadline, counted from now: the helper has had the
 * whole interval since the call that posted it) and keeps it in pipe.out for the next process
 * call. A helper that restarted since never answers it: that block is lost, and the next
 * call passes it through from the delay line. */
static void pipe_collect(iso_instance *inst) {
    const uint32_t seq = inst->pipe.seq;
    inst->pipe.seq = 0;
    if (seq == 0 || inst->pipe.generation != atomic_load(&inst->chan.generation) || atomic_load(&inst->sup.state) != STATE_UP) return;
    rfx_iso_control *c = inst->chan.control;
    const int result = iso_wait_reply(inst, seq, inst->stream.deadline_ns);
    if (result != REPLY_OK) {
        iso_fail_wait(inst, result, "a block", inst->stream.deadline_ns);
        return;
    }
    if (c->status != RAWFX_OK) {
        iso_copy_error(inst);
        inst->pipe.status = c->status;
        return;
    }
    const int in_place = inst->type->real_processing == RAWFX_PROCESS_IN_PLACE;
    const rawfx_audio_frame answered = in_place ? c->audio_in : c->audio_out; /* copied once, then checked */
    const char *violation = audio_answer_violation(inst, &answered, &inst->pipe.layout_out, inst->pipe.in_frames);
    if (violation) {
        char reason[160];
        snprintf(reason, sizeof reason, "broke the protocol: it %s", violation);
        iso_take_down(inst, reason);
        return;
    }
    memcpy(inst->pipe.out, inst->chan.map + (uintptr_t)answered.samples, (size_t)answered.frame_count * answered.channels * sizeof(int16_t));
    inst->pipe.out_frames = answered.frame_count;
    inst->pipe.flags = answered.flags;
    inst->pipe.ready = 1;
}

/* [process] `@isolate(pipeline)`: block N goes to the helper and block N-1's answer comes
 * back, so this thread waits only when the helper has not finished block N-1 in the whole
 * interval between two calls (and then at most the deadline). The negotiation made the
 * block fixed and added it to the latency. A block the helper did not answer (a fault, a
 * restart, a stage down) comes out of the delay line instead: the input, as late as every
 * answer. No block is lost or doubled: each call brings one and returns one. */
static rawfx_status pipe_process_audio(iso_instance *inst, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    const uint32_t n = in->frame_count;
    const int up = n <= inst->stream.audio_in_frames && iso_enter_call(inst);
    if (up) pipe_collect(inst);
    else inst->pipe.seq = 0; /* the helper that had it is gone (or going) */
    const rawfx_status status = inst->pipe.status;
    inst->pipe.status = RAWFX_OK;
    const int answered = inst->pipe.ready;
    inst->pipe.ready = 0;
    /* Block N to the helper first: `out` may be `in` (an in-place stage). */
    if (up && atomic_load(&inst->sup.state) == STATE_UP) {
        inst->pipe.in_frames = n;
        inst->pipe.generation = atomic_load(&inst->chan.generation);
        inst->pipe.seq = post_audio_block(inst, in, out, &inst->pipe.layout_out);
    }
    /* Block N-1 out. */
    if (answered && inst->pipe.out_frames <= out->frame_count) {
        delay_push(inst, in->samples, NULL, n);
        memcpy(out->samples, inst->pipe.out, (size_t)inst->pipe.out_frames * inst->audio.channels * sizeof(int16_t));
        out->frame_count = inst->pipe.out_frames;
        out->flags |= inst->pipe.flags;
    } else {
        /* The first call after configure or reset returns the delay line's silence. */
        if (inst->pipe.primed) atomic_fetch_add_explicit(&inst->counters.passthrough, 1, memory_order_relaxed);
        delay_push(inst, in->samples, out->samples, n);
        out->frame_count = n;
    }
    out->sample_rate = in->sample_rate;
    out->channels = in->channels;
    inst->pipe.primed = 1;
    inst->audio.frames_out += out->frame_count;
    if (up) {
        iso_drain_log(inst);
        iso_leave_call(inst);
    }
    return status;
}

rawfx_status iso_proxy_process_audio(const rawfx_filter *filter, const rawfx_audio_frame *in, rawfx_audio_frame *out) {
    iso_instance *inst = iso_instance_of(filter);
    inst->audio.frames_in += in->frame_count;
    if (inst->type->deadline_ns <= 0 && in->sample_rate > 0) {
        int64_t block = (int64_t)in->frame_count * 1000000000 / in->sample_rate;
        inst->stream.deadline_ns = block < 2000000 ? 2000000 : block > 500000000 ? 500000000 : block;
    }
    if (inst->pipe.active) return pipe_process_audio(inst, in, out);
    int in_place = inst->type->real_processing == RAWFX_PROCESS_IN_PLACE;
    if (inst->stream.provisional || in->frame_count > inst->stream.audio_in_frames || !iso_enter_call(inst)) {
        audio_passthrough(inst, in, out);
        inst->audio.frames_out += out->frame_count;
        return RAWFX_OK;
    }
    rfx_iso_control *c = inst->chan.control;
    __atomic_store_n(&c->host_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    rawfx_audio_frame layout_out;
    uint32_t seq = post_audio_block(inst, in, out, &layout_out);
    int result = iso_wait_reply(inst, seq, inst->stream.deadline_ns);
    rawfx_status status = RAWFX_OK;
    const char *violation = NULL;
    rawfx_audio_frame answered;
    if (result == REPLY_OK && (status = c->status) == RAWFX_OK) {
        answered = in_place ? c->audio_in : c->audio_out; /* copied once, then checked */
        violation = audio_answer_violation(inst, &answered, &layout_out, in->frame_count);
    }
    if (result != REPLY_OK || violation) {
        if (violation) {
            char reason[160];
            snprintf(reason, sizeof reason, "broke the protocol: it %s", violation);
            iso_take_down(inst, reason);
        } else {
            iso_fail_wait(inst, result, "a block", inst->stream.deadline_ns);
        }
        audio_passthrough(inst, in, out);
    } else if (status != RAWFX_OK) {
        iso_copy_error(inst);
        delay_push(inst, in->samples, NULL, in->frame_count);
    } else {
        delay_push(inst, in->samples, NULL, in->frame_count);
        size_t out_bytes = (size_t)answered.frame_count * answered.channels * sizeof(int16_t);
        memcpy(out->samples, inst->chan.map + (uintptr_t)answered.samples, out_bytes);
        out->frame_count = answered.frame_count;
        out->flags |= answered.flags;
        if (!in_place) {
            out->sample_rate = answered.sample_rate;
            out->channels = answered.channels;
        }
    }
    inst->audio.frames_out += out->frame_count;
    __atomic_store_n(&c->host_cpu, -1, __ATOMIC_RELAXED); /* as after a frame */
    iso_drain_log(inst);
    iso_leave_call(inst);
    return status;
}

/* ------------------------------------------------ configure and reset -- */

rawfx_status iso_audio_configure(iso_instance *inst, const rawfx_format *input, const rawfx_negotiation *answer) {
    inst->audio.frames_in = inst->audio.frames_out = 0;
    free(inst->audio.delay);
    inst->audio.delay = NULL;
    inst->audio.delay_frames = 0;
    if (input->kind == RAWFX_MEDIA_AUDIO) {
        inst->audio.channels = input->audio.channels;
        if (answer->latency > 0 && answer->output.audio.sample_rate == input->audio.sample_rate
            && answer->output.audio.channels == input->audio.channels) {
            inst->audio.delay = calloc((size_t)answer->latency * inst->audio.channels, sizeof(int16_t));
            inst->audio.delay_frames = inst->audio.delay ? answer->latency : 0;
        }
        reset_delay(inst);
        if (inst->type->pipeline && !inst->stream.provisional) {
            /* Where a collected answer waits for the next call: the most one block makes. */
            size_t samples = (inst->type->real_processing == RAWFX_PROCESS_IN_PLACE ? inst->stream.audio_in_frames
                                                                                     : inst->stream.audio_out_frames) * inst->audio.channels;
            if (samples > inst->pipe.out_capacity) {
                free(inst->pipe.out);
                inst->pipe.out = malloc(samples * sizeof(int16_t));
                inst->pipe.out_capacity = inst->pipe.out ? samples : 0;
            }
            if (!inst->pipe.out) {
                snprintf(inst->error, sizeof inst->error, "cannot allocate %zu samples for the pipelined answer", samples);
                return RAWFX_ERR_OUT_OF_MEMORY;
            }
            inst->pipe.active = 1;
        }
    }
    return RAWFX_OK;
}

void iso_audio_reset(iso_instance *inst) {
    reset_delay(inst);
    inst->pipe.primed = 0;
}

void iso_audio_free(iso_instance *inst) {
    free(inst->audio.delay);
    free(inst->pipe.out);
}

void iso_pipe_settle(iso_instance *inst) {
    if (inst->pipe.seq) pipe_collect(inst);
}

void iso_pipe_forget(iso_instance *inst, int with_status) {
    inst->pipe.seq = 0;
    inst->pipe.ready = 0;
    if (with_status) inst->pipe.status = RAWFX_OK;
}

void iso_pipe_stop(iso_instance *inst) {
    iso_pipe_forget(inst, 1);
    inst->pipe.primed = 0;
    inst->pipe.active = 0;
}

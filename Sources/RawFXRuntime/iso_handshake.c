/*
 * iso_handshake.c — the commands that bring a helper to the stage's state: HELLO (load the
 * plugins, create the instances), every parameter set so far, and the negotiation (CONFIGURE,
 * each stage's answer checked, the frames laid out in the shared memory, MAP). The supervisor
 * runs it after each start; configure and set_param run their parts of it.
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int32_t iso_send_param(iso_instance *inst, uint32_t index, const param_slot *slot, int64_t timeout_ns) {
    rfx_iso_control *c = inst->chan.control;
    c->param_index = index;
    c->param_type = slot->type;
    c->param_int = slot->int_value;
    c->param_float = slot->float_value;
    memcpy(c->param_string, slot->string_value, RFX_ISO_STRING_MAX);
    if (iso_call(inst, RFX_ISO_SET_PARAM, timeout_ns, "set_param") != REPLY_OK) return RAWFX_ERR_INTERNAL;
    int32_t status = c->status;
    if (status != RAWFX_OK) iso_copy_error(inst);
    return status;
}

/* [control, lock held] CONFIGURE then MAP: returns the plugin's status, or
 * RAWFX_ERR_INTERNAL with inst->error set when the helper failed. Fills
 * `result` and the layout. */
int32_t iso_negotiate(iso_instance *inst, const rawfx_format *input, rawfx_negotiation *result) {
    rfx_iso_control *c = inst->chan.control;
    c->input = *input;
    c->negotiation = *result;
    c->member_count = inst->type->member_count;
    if (iso_call(inst, RFX_ISO_CONFIGURE, inst->type->control_timeout_ns, "configure") != REPLY_OK) {
        snprintf(inst->error, sizeof inst->error, "the isolated helper failed during configure");
        return RAWFX_ERR_INTERNAL;
    }
    int32_t status = c->status; /* read once: the helper may change it under us */
    if (status != RAWFX_OK) {
        iso_copy_error(inst);
        return status;
    }
    /* Each stage's answer, copied once and checked; the group's is the last stage's output
     * with every stage's latency (the host sums them, it does not take the helper's word). */
    const iso_type *t = inst->type;
    uint32_t count = t->member_count;
    rawfx_format stage_input = *input;
    rawfx_negotiation answered = { 0 };
    uint32_t latency = 0;
    for (uint32_t k = 0; k < count; k++) {
        rawfx_negotiation n = c->member_negotiation[k];
        const char *problem = NULL;
        if (n.output.kind != input->kind) problem = "answered configure with another media kind";
        else if (input->kind == RAWFX_MEDIA_VIDEO) {
            const rawfx_video_format *o = &n.output.video;
            if (o->width == 0 || o->height == 0 || o->width > 16384 || o->height > 16384) problem = "answered an impossible output size";
            else if (t->members[k].processing == RAWFX_PROCESS_IN_PLACE
                     && (o->width != stage_input.video.width || o->height != stage_input.video.height))
                problem = "answered another size for an in-place stage";
        } else {
            const rawfx_audio_format *o = &n.output.audio;
            if (o->channels == 0 || o->channels > 64 || o->sample_rate == 0 || o->sample_rate > 1000000) problem = "answered an impossible audio format";
            else if (t->members[k].processing == RAWFX_PROCESS_IN_PLACE
                     && (o->channels != stage_input.audio.channels || o->sample_rate != stage_input.audio.sample_rate))
                problem = "answered another rate or channel count for an in-place stage"; /* its answer lands in the input block */
        }
        /* Before anything here is sized from it: the caps every configure keeps. */
        char beyond[200], capped[240];
        if (!problem && rfx_negotiation_cap_violation(&stage_input, &n, beyond, sizeof beyond)) {
            snprintf(capped, sizeof capped, "answered configure with %s", beyond);
            problem = capped;
        }
        if (problem) {
            iso_take_down_in(inst, (int)k, problem);
            snprintf(inst->error, sizeof inst->error, "the isolated helper %s", problem);
            return RAWFX_ERR_INTERNAL;
        }
        inst->group.member_input[k] = stage_input;
        inst->group.member_negotiation[k] = n;
        latency += n.latency;
        stage_input = n.output;
        if (k == 0) answered = n;
    }
    answered.output = stage_input;
    answered.latency = latency;
    if (t->pipeline) {
        /* One block late: a fixed block (10 ms unless the filter asked for one), so that
         * every call returns as many frames as it brings, and one block more latency. */
        const rawfx_audio_format *i = &input->audio, *o = &answered.output.audio;
        if (o->sample_rate != i->sample_rate || o->channels != i->channels) {
            snprintf(inst->error, sizeof inst->error,
                     "@isolate(pipeline) needs a stage that keeps rate and channels; this one makes %u Hz, %u ch of %u Hz, %u ch",
                     o->sample_rate, o->channels, i->sample_rate, i->channels);
            return RAWFX_ERR_UNSUPPORTED;
        }
        if (answered.block_frames == 0) answered.block_frames = (i->sample_rate + 99) / 100;
        answered.latency += answered.block_frames;
    }
    /* The stages' latencies add up (and a pipeline adds a block): the sum keeps the caps too. */
    char beyond[200];
    if (rfx_negotiation_cap_violation(input, &answered, beyond, sizeof beyond)) {
        snprintf(inst->error, sizeof inst->error, "the isolated stages together answer %s", beyond);
        return RAWFX_ERR_UNSUPPORTED;
    }
    size_t header = iso_round_page(sizeof(rfx_iso_control));
    size_t in_size, out_size = 0;
    if (input->kind == RAWFX_MEDIA_VIDEO) {
        /* The input frame, then each out-of-place stage's output: the last of them is the
         * group's output (in-place stages after it edit it there). */
        in_size = iso_round_page(iso_plane_bytes(input->video.width, input->video.height));
        inst->group.in_place = 1;
        inst->stream.out_offset = header + in_size;
        for (uint32_t k = 0; k < count; k++) {
            memset(&inst->group.member_layout[k], 0, sizeof inst->group.member_layout[k]);
            if (t->members[k].processing != RAWFX_PROCESS_OUT_OF_PLACE) continue;
            const rawfx_video_format *o = &inst->group.member_negotiation[k].output.video;
            inst->stream.out_offset = header + in_size + out_size;
            iso_video_layout(&inst->group.member_layout[k], o, inst->stream.out_offset);
            out_size += iso_round_page(iso_plane_bytes(o->width, o->height));
            inst->group.in_place = 0;
        }
    } else {
        const rawfx_audio_format *i = &input->audio, *o = &answered.output.audio;
        /* One second per call (or the block the filter asked for): larger chunks pass through. */
        size_t frames = answered.block_frames > i->sample_rate ? answered.block_frames : i->sample_rate;
        inst->stream.audio_in_frames = frames;
        in_size = iso_round_page(frames * i->channels * sizeof(int16_t));
        if (inst->type->real_processing == RAWFX_PROCESS_OUT_OF_PLACE) {
            size_t bound = frames * o->sample_rate / i->sample_rate + 16;
            if (answered.max_output_frames > bound) bound = answered.max_output_frames;
            inst->stream.audio_out_frames = bound;
            out_size = iso_round_page(bound * o->channels * sizeof(int16_t));
        }
        inst->stream.out_offset = header + in_size;
    }
    inst->stream.in_offset = header;
    size_t total = header + in_size + out_size;
    if (iso_ensure_size(inst, total) != 0) {
        snprintf(inst->error, sizeof inst->error, "cannot grow the shared memory to %zu bytes: %s", total, strerror(errno));
        return RAWFX_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t k = 0; k < count; k++) c->member_out[k] = inst->group.member_layout[k];
    c = inst->chan.control;
    c->mapped_size_lo = (uint32_t)inst->chan.map_size;
    c->mapped_size_hi = (uint32_t)((uint64_t)inst->chan.map_size >> 32);
    if (iso_call(inst, RFX_ISO_MAP, inst->type->control_timeout_ns, "mapping the shared memory") != REPLY_OK || c->status != RAWFX_OK) {
        snprintf(inst->error, sizeof inst->error, "the isolated helper could not map %zu bytes of shared memory", inst->chan.map_size);
        return RAWFX_ERR_INTERNAL;
    }
    *result = answered;
    return RAWFX_OK;
}

static int same_negotiation(const rawfx_negotiation *a, const rawfx_negotiation *b) {
    return memcmp(&a->output, &b->output, sizeof a->output) == 0 && a->block_frames == b->block_frames
        && a->max_output_frames == b->max_output_frames && a->latency == b->latency;
}

/* [supervisor, lock held] Brings a freshly spawned helper to the state the stage
 * had: the instance, every parameter set so far, the negotiation. Returns 1 when
 * it may serve frames. */
int iso_bring_up(iso_instance *inst) {
    int64_t timeout = inst->type->control_timeout_ns;
    if (iso_call(inst, RFX_ISO_HELLO, timeout, "start-up") != REPLY_OK) {
        if (!inst->error[0]) snprintf(inst->error, sizeof inst->error, "the isolated helper did not start");
        return 0;
    }
    if (inst->chan.control->status != RAWFX_OK) {
        iso_copy_error(inst);
        return 0;
    }
    uint32_t generation;
    do {
        generation = atomic_load(&inst->params.generation);
        for (uint32_t i = 0; i < inst->params.count; i++) {
            if (!inst->params.slots[i].set) continue;
            if (iso_send_param(inst, i, &inst->params.slots[i], timeout) != RAWFX_OK) return 0;
        }
    } while (generation != atomic_load(&inst->params.generation));
    if (inst->stream.configured) {
        rawfx_negotiation answer = inst->stream.negotiation;
        if (iso_negotiate(inst, &inst->stream.input, &answer) != RAWFX_OK) return 0;
        if (!same_negotiation(&answer, &inst->stream.negotiation)) {
            /* The chain was negotiated without the filter (it died in configure): the
             * chain rebuilds this stage with a fresh configure. */
            iso_log_line(inst, RAWFX_LOG_WARNING, "the restarted helper negotiated another format than the chain holds: "
                     "the stage stays passed through until the chain negotiates again");
            return 0;
        }
        inst->stream.provisional = 0;
    }
    return 1;
}

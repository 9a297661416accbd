/*
 * iso_proxy.c — the proxy: the rawfx_filter the engine calls for an isolated stage, and its
 * types (rawfx_isolation.h). Control calls (create, configure, destroy) take the lock; the
 * process thread never waits for it. A video frame is copied into the shared memory once,
 * processed by the helper, and read where the helper wrote it; at a fault and while the
 * helper is down it passes through unchanged (the caller's frame, never the shared copy).
 * Audio is iso_audio.c, groups' shells iso_group.c.
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rfx_isolation_engine_image_path(void) {
    Dl_info info;
    if (dladdr((const void *)&rfx_isolation_engine_image_path, &info) == 0 || info.dli_fname == NULL) return NULL;
    return info.dli_fname;
}

/* ------------------------------------------------------ the proxy's ABI -- */

static const char *proxy_get_error(const rawfx_filter *filter) { return iso_instance_of(filter)->error; }

void iso_instance_free(iso_instance *inst) {
    iso_channel_close(&inst->chan);
    pthread_cond_destroy(&inst->sup.changed);
    pthread_mutex_destroy(&inst->sup.lock);
    free(inst->params.slots);
    iso_audio_free(inst);
    free(inst);
}

static void proxy_destroy(const rawfx_filter *filter) {
    iso_instance *inst = iso_instance_of(filter);
    iso_supervisor_stop(inst);
    iso_instance_free(inst);
}

/* [process or control] Records the value (for restarts) and forwards it when the
 * helper is up. Never blocks on the lock: while a restart holds it, the value is
 * only recorded and the restart replays it. */
rawfx_status iso_proxy_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    iso_instance *inst = iso_instance_of(filter);
    inst->error[0] = 0;
    if (index >= inst->params.count) {
        snprintf(inst->error, sizeof inst->error, "parameter index %u, expected below %u", index, inst->params.count);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    param_slot slot = { 1, value->type, value->int_value, value->float_value, { 0 } };
    if (value->type == RAWFX_PARAM_STRING && value->string_value) {
        if (strlen(value->string_value) >= RFX_ISO_STRING_MAX) {
            snprintf(inst->error, sizeof inst->error, "a string of %zu bytes, expected at most %d for an isolated filter",
                     strlen(value->string_value), RFX_ISO_STRING_MAX - 1);
            return RAWFX_ERR_INVALID_ARGUMENT;
        }
        strcpy(slot.string_value, value->string_value);
    }
    if (pthread_mutex_trylock(&inst->sup.lock) != 0) {
        inst->params.slots[index] = slot;
        atomic_fetch_add(&inst->params.generation, 1);
        return RAWFX_OK;
    }
    rawfx_status status = RAWFX_OK;
    if (atomic_load(&inst->sup.state) == STATE_UP) {
        atomic_store(&inst->sup.in_call, 1);
        iso_pipe_settle(inst); /* a pipelined block in flight is answered first */
        if (atomic_load(&inst->sup.state) == STATE_UP) {
            int64_t timeout = inst->stream.configured ? inst->stream.deadline_ns : inst->type->control_timeout_ns;
            status = iso_send_param(inst, index, &slot, timeout);
            /* A helper that failed here restarts; the value is replayed then. */
            if (status == RAWFX_ERR_INTERNAL && atomic_load(&inst->sup.state) != STATE_UP) status = RAWFX_OK;
        }
        atomic_store(&inst->sup.in_call, 0);
    }
    if (status == RAWFX_OK) {
        inst->params.slots[index] = slot;
        atomic_fetch_add(&inst->params.generation, 1);
    }
    pthread_mutex_unlock(&inst->sup.lock);
    return status;
}

static rawfx_status proxy_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    iso_instance *inst = iso_instance_of(filter);
    inst->error[0] = 0;
    pthread_mutex_lock(&inst->sup.lock);
    rawfx_status status;
    rawfx_negotiation answer = *result;
    int up = atomic_load(&inst->sup.state) == STATE_UP;
    /* No frames flow now; a pipelined block still in flight is answered and forgotten. */
    if (up) iso_pipe_settle(inst);
    iso_pipe_stop(inst);
    up = atomic_load(&inst->sup.state) == STATE_UP;
    if (up) {
        status = iso_negotiate(inst, input, &answer);
    } else {
        status = RAWFX_ERR_INTERNAL;
    }
    int helper_failed = status == RAWFX_ERR_INTERNAL && atomic_load(&inst->sup.state) != STATE_UP;
    if (status != RAWFX_OK && !helper_failed) {
        pthread_mutex_unlock(&inst->sup.lock);
        return status;
    }
    if (helper_failed) {
        /* The filter is down: the stage passes its input on, so it negotiates as a
         * passthrough; a restarted helper that answers otherwise leaves it passed through. */
        answer = *result;
        answer.block_frames = 0;
        answer.max_output_frames = 0;
        answer.latency = 0;
        inst->stream.provisional = 1;
        if (input->kind == RAWFX_MEDIA_AUDIO) inst->stream.audio_in_frames = 0;
        for (uint32_t k = 0; k < inst->type->member_count; k++) {
            inst->group.member_input[k] = *input;
            inst->group.member_negotiation[k] = answer;
        }
    }
    inst->stream.input = *input;
    inst->stream.negotiation = answer;
    inst->stream.configured = 1;
    *result = answer;
    /* The deadline: configured, or half a frame at 30 fps until timestamps tell the rate;
     * one 10 ms block for audio until blocks tell their length. */
    inst->stream.deadline_ns = inst->type->deadline_ns > 0 ? inst->type->deadline_ns
                      : input->kind == RAWFX_MEDIA_VIDEO ? 1000000000 / 60 : 10000000;
    inst->stream.last_timestamp = INT64_MIN;
    /* The delay line of a passthrough, the room for a pipelined answer. */
    status = iso_audio_configure(inst, input, &answer);
    pthread_mutex_unlock(&inst->sup.lock);
    return status;
}

static void proxy_reset(const rawfx_filter *filter) {
    iso_instance *inst = iso_instance_of(filter);
    iso_audio_reset(inst);
    if (pthread_mutex_trylock(&inst->sup.lock) != 0) { /* restarting: a fresh helper has no history */
        iso_pipe_forget(inst, 0);
        return;
    }
    if (atomic_load(&inst->sup.state) == STATE_UP) {
        atomic_store(&inst->sup.in_call, 1);
        iso_pipe_settle(inst); /* answered, then forgotten with the history */
        if (atomic_load(&inst->sup.state) == STATE_UP)
            iso_call(inst, RFX_ISO_RESET, inst->stream.configured ? inst->stream.deadline_ns : inst->type->control_timeout_ns, "reset");
        atomic_store(&inst->sup.in_call, 0);
    }
    iso_pipe_forget(inst, 1);
    pthread_mutex_unlock(&inst->sup.lock);
}

/* [process] The frame goes on unchanged: the input itself, or black in the negotiated
 * output format for a stage that changes the format (no input fits there). */
static void video_passthrough(iso_instance *inst, const rawfx_video_frame *in, rawfx_video_frame *out) {
    atomic_fetch_add_explicit(&inst->counters.passthrough, 1, memory_order_relaxed);
    const rawfx_video_format *o = &inst->stream.negotiation.output.video;
    if (o->width == in->width && o->height == in->height) {
        int64_t timestamp = out->timestamp_us;
        *out = *in;
        out->timestamp_us = timestamp;
        out->rotation = o->rotation;
        out->color_range = o->color_range;
        return;
    }
    for (int p = 0; p < 3; p++) {
        uint32_t w = p ? (out->width + 1) / 2 : out->width, h = p ? (out->height + 1) / 2 : out->height;
        for (uint32_t y = 0; y < h; y++) memset(out->planes[p] + (size_t)y * out->strides[p], p ? 128 : 16, w);
    }
}

static void copy_plane(uint8_t *dst, int32_t dst_stride, const uint8_t *src, int32_t src_stride, uint32_t w, uint32_t h) {
    /* One memcpy when the rows lie alike (faster than row by row for a cold frame): the
     * padding between rows goes along, the last row stops at its width. */
    if (dst_stride == src_stride && dst_stride > 0 && (uint32_t)dst_stride >= w && h > 0) {
        memcpy(dst, src, (size_t)dst_stride * (h - 1) + w);
        return;
    }
    for (uint32_t y = 0; y < h; y++) memcpy(dst + (size_t)y * dst_stride, src + (size_t)y * src_stride, w);
}

/* A band of the copy in: about this many bytes, so that a worker of the pool that
 * wakes late holds the caller up for one band at most. */
#define COPY_IN_BAND_BYTES (256u * 1024u)
#define COPY_IN_MAX_BANDS 64u

/* [any thread of the pool] Rows [h * index / n, h * (index + 1) / n) of every plane. */
static void copy_in_band(void *context, uint32_t index) {
    const iso_copy_in_plan *plan = context;
    for (int p = 0; p < 3; p++) {
        const uint32_t begin = (uint32_t)((uint64_t)plan->height[p] * index / plan->bands);
        const uint32_t end = (uint32_t)((uint64_t)plan->height[p] * (index + 1) / plan->bands);
        if (end > begin)
            copy_plane(plan->dst[p] + (ptrdiff_t)begin * plan->dst_stride[p], plan->dst_stride[p],
                       plan->src[p] + (ptrdiff_t)begin * plan->src_stride[p], plan->src_stride[p], plan->width[p], end - begin);
    }
}

/* [process] The one copy of a borrowed frame into shared memory. With the engine's thread
 * pool at 2 or more threads it is cut into bands that the workers and this thread take
 * as they come (rfx_runtime_run_jobs): one thread copying a cold frame is held back by
 * memory latency, and two keep more misses in flight. A worker that is asleep or busy costs
 * nothing but its wake-up post: this thread takes the bands it leaves. */
static void copy_frame_in(iso_instance *inst, const rawfx_video_frame *in, const rawfx_video_frame *layout) {
    iso_copy_in_plan *plan = &inst->copy_in;
    size_t bytes = 0;
    for (int p = 0; p < 3; p++) {
        plan->width[p] = p ? (in->width + 1) / 2 : in->width;
        plan->height[p] = p ? (in->height + 1) / 2 : in->height;
        plan->dst[p] = inst->chan.map + (uintptr_t)layout->planes[p];
        plan->dst_stride[p] = layout->strides[p];
        plan->src[p] = in->planes[p];
        plan->src_stride[p] = in->strides[p];
        bytes += (size_t)plan->width[p] * plan->height[p];
    }
    uint32_t bands = 1;
    if (rfx_runtime_thread_count() > 1) {
        size_t wanted = bytes / COPY_IN_BAND_BYTES;
        bands = wanted < 1 ? 1 : wanted > COPY_IN_MAX_BANDS ? COPY_IN_MAX_BANDS : (uint32_t)wanted;
        if (bands > plan->height[1]) bands = plan->height[1]; /* every band has chroma rows */
    }
    plan->bands = bands;
    if (bands > 1) rfx_runtime_run_jobs(copy_in_band, plan, bands);
    else copy_in_band(plan, 0);
}

/* [process] Half the frame interval the timestamps show (clamped to 2..100 ms). */
static void derive_video_deadline(iso_instance *inst, int64_t timestamp) {
    if (inst->type->deadline_ns > 0) return;
    int64_t interval = timestamp - inst->stream.last_timestamp;
    if (inst->stream.last_timestamp != INT64_MIN && interval > 0 && interval < 1000000) {
        int64_t half = interval * 500;
        inst->stream.deadline_ns = half < 2000000 ? 2000000 : half > 100000000 ? 100000000 : half;
    }
    inst->stream.last_timestamp = timestamp;
}

static rawfx_status proxy_process_video(const rawfx_filter *filter, const rawfx_video_frame *in, rawfx_video_frame *out) {
    iso_instance *inst = iso_instance_of(filter);
    derive_video_deadline(inst, in->timestamp_us);
    const rawfx_video_format *fi = &inst->stream.input.video;
    if (in->width != fi->width || in->height != fi->height) {
        snprintf(inst->error, sizeof inst->error, "a %ux%u frame, negotiated %ux%u", in->width, in->height, fi->width, fi->height);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    if (inst->stream.provisional || !iso_enter_call(inst)) {
        video_passthrough(inst, in, out);
        return RAWFX_OK;
    }
    rfx_iso_control *c = inst->chan.control;
    __atomic_store_n(&c->host_cpu, sched_getcpu(), __ATOMIC_RELAXED);
    rawfx_video_frame layout_in, layout_out;
    iso_video_layout(&layout_in, fi, inst->stream.in_offset);
    layout_in.timestamp_us = in->timestamp_us;
    layout_in.rotation = in->rotation;
    layout_in.color_range = in->color_range;
    int in_place = inst->group.in_place;
    if (in_place) layout_out = layout_in;
    else {
        iso_video_layout(&layout_out, &inst->stream.negotiation.output.video, inst->stream.out_offset);
        layout_out.timestamp_us = in->timestamp_us;
    }
    /* The one copy: the frame into shared memory. It is never read there by the host again: the
     * helper may write anywhere in that memory (an in-place edit, a scribble, a crash halfway),
     * and a fault passes `in`, which only the host's side can write, on unchanged. Wake the
     * helper first (unless it polls already): it polls for the request during the copy. */
    if (!__atomic_load_n(&c->helper_polling, __ATOMIC_RELAXED)) rfx_iso_futex_wake(&c->request_seq);
    atomic_fetch_add_explicit(&inst->counters.copied_in, 1, memory_order_relaxed);
    copy_frame_in(inst, in, &layout_in);
    c->video_in = layout_in;
    c->video_out = layout_out;
    c->bypass_mask = atomic_load_explicit(&inst->group.bypass_mask, memory_order_relaxed);
    uint32_t seq = iso_post(inst, RFX_ISO_PROCESS_VIDEO);
    int result = iso_wait_reply(inst, seq, inst->stream.deadline_ns);
    rawfx_status status = RAWFX_OK;
    if (result != REPLY_OK) {
        iso_fail_wait(inst, result, "a frame", inst->stream.deadline_ns);
        video_passthrough(inst, in, out);
    } else if ((status = c->status) != RAWFX_OK) {
        iso_copy_error(inst);
    } else {
        rawfx_video_frame answered = in_place ? c->video_in : c->video_out; /* copied once, then checked */
        const rawfx_video_frame *expected = in_place ? &layout_in : &layout_out;
        int moved = 0;
        for (int p = 0; p < 3; p++)
            moved |= answered.planes[p] != expected->planes[p] || answered.strides[p] != expected->strides[p];
        if (answered.width != expected->width || answered.height != expected->height
            || answered.pixel_format != RAWFX_PIXEL_I420 || moved || answered.color_range > RAWFX_RANGE_FULL
            || answered.rotation % 90 != 0 || answered.rotation >= 360) {
            char reason[200];
            snprintf(reason, sizeof reason, "broke the protocol: it reported a %ux%u frame (format %u, rotation %u%s), the negotiated output is %ux%u",
                     answered.width, answered.height, answered.pixel_format, answered.rotation,
                     moved ? ", planes moved" : "", expected->width, expected->height);
            iso_take_down(inst, reason);
            video_passthrough(inst, in, out);
        } else {
            /* No copy back: the output view lies in shared memory until the next frame. */
            int64_t timestamp = out->timestamp_us;
            *out = *expected;
            for (int p = 0; p < 3; p++) out->planes[p] = inst->chan.map + (uintptr_t)expected->planes[p];
            out->rotation = answered.rotation;
            out->color_range = answered.color_range;
            out->timestamp_us = timestamp;
        }
    }
    /* Between calls this thread may sleep or run anywhere: a stale CPU here made a helper
     * that woke early on that CPU give up its poll, so most paced blocks were seen late,
     * after a FUTEX_WAKE, instead of by the poll. */
    __atomic_store_n(&c->host_cpu, -1, __ATOMIC_RELAXED);
    iso_drain_log(inst);
    iso_leave_call(inst);
    return status;
}

static const void *proxy_get_extension(const rawfx_filter *filter, const char *id) {
    if (strcmp(id, RFX_ISOLATION_EXTENSION) == 0) return &iso_instance_of(filter)->group.view;
    return NULL;
}

iso_instance *iso_instance_create(const iso_type *type, char *error, size_t capacity) {
    iso_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(error, capacity, "cannot allocate an isolated stage");
        return NULL;
    }
    inst->type = type;
    inst->params.count = type->total_params;
    inst->group.view.inst = inst;
    inst->group.failed_member = -1;
    inst->params.slots = calloc(inst->params.count ? inst->params.count : 1, sizeof(param_slot));
    if (!inst->params.slots || iso_channel_open(&inst->chan) != 0) {
        snprintf(error, capacity, "cannot make the shared memory of an isolated stage: %s", strerror(errno));
        free(inst->params.slots);
        free(inst);
        return NULL;
    }
    inst->stream.deadline_ns = type->deadline_ns > 0 ? type->deadline_ns : 1000000000 / 60;
    pthread_mutex_init(&inst->sup.lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&inst->sup.changed, &attributes);
    pthread_condattr_destroy(&attributes);
    inst->filter.struct_size = sizeof inst->filter;
    inst->filter.descriptor = &type->descriptor;
    inst->filter.filter_data = inst;
    inst->filter.destroy = proxy_destroy;
    inst->filter.set_param = iso_proxy_set_param;
    inst->filter.configure = proxy_configure;
    if (type->descriptor.media_kind == RAWFX_MEDIA_VIDEO) inst->filter.process_video = proxy_process_video;
    else inst->filter.process_audio = iso_proxy_process_audio;
    inst->filter.reset = proxy_reset;
    inst->filter.get_error = proxy_get_error;
    inst->filter.get_extension = proxy_get_extension;
    return inst;
}

/* [control] A proxy with a helper serving the real filter; NULL with a message
 * when the helper cannot start (not found, the plugin refused, ...). */
const rawfx_filter *iso_proxy_create(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity) {
    iso_instance *inst = iso_instance_create((const iso_type *)descriptor, error, capacity);
    if (!inst) return NULL;
    pthread_mutex_lock(&inst->sup.lock);
    if (iso_supervisor_start(inst) != 0) {
        pthread_mutex_unlock(&inst->sup.lock);
        snprintf(error, capacity, "cannot start the supervisor thread of an isolated stage");
        iso_instance_free(inst);
        return NULL;
    }
    int ok = inst->sup.start_ok;
    if (!ok) snprintf(error, capacity, "%s", inst->error[0] ? inst->error : "the isolated helper did not start");
    pthread_mutex_unlock(&inst->sup.lock);
    if (!ok) {
        proxy_destroy(&inst->filter);
        return NULL;
    }
    return &inst->filter;
}

static const rawfx_filter *proxy_create_with_host(const rawfx_filter_descriptor *descriptor, const rawfx_host *host,
                                                  char *error, size_t capacity) {
    (void)host;
    return iso_proxy_create(descriptor, error, capacity);
}

rawfx_filter_descriptor *rfx_isolation_descriptor_create(const rawfx_filter_descriptor *real,
                                                         const rfx_isolation_config *config) {
    iso_type *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->descriptor = *real;
    t->descriptor.struct_size = sizeof t->descriptor;
    t->real_processing = real->processing;
    /* Video: out of place, so the output is read where the helper wrote it. */
    if (real->media_kind == RAWFX_MEDIA_VIDEO) t->descriptor.processing = RAWFX_PROCESS_OUT_OF_PLACE;
    t->descriptor.create = iso_proxy_create;
    t->descriptor.create_with_host = proxy_create_with_host;
    t->helper_path = strdup(config->helper_path);
    t->plugin_path = strdup(config->plugin_path);
    t->filter_id = strdup(real->id);
    /* The stages the helper runs: the filter alone, or its isolation group. */
    rfx_isolation_member alone = { config->plugin_path, real };
    const rfx_isolation_member *members = config->member_count > 1 ? config->members : &alone;
    t->member_count = config->member_count > 1 ? config->member_count : 1;
    if (t->member_count > RFX_ISO_GROUP_MAX || (t->member_count > 1 && real->media_kind != RAWFX_MEDIA_VIDEO)) {
        free(t->helper_path);
        free(t->plugin_path);
        free(t->filter_id);
        free(t);
        return NULL;
    }
    for (uint32_t k = 0; k < t->member_count; k++) {
        iso_member_type *m = &t->members[k];
        m->plugin_path = strdup(members[k].plugin_path);
        m->filter_id = strdup(members[k].real->id);
        m->processing = members[k].real->processing;
        m->param_count = members[k].real->param_count;
        m->param_offset = t->total_params;
        t->total_params += m->param_count;
    }
    t->allow_untrusted = config->allow_untrusted;
    t->seccomp_strict = config->seccomp_strict;
    t->pipeline = config->pipeline && real->media_kind == RAWFX_MEDIA_AUDIO;
    t->deadline_ns = config->deadline_ns;
    t->control_timeout_ns = config->control_timeout_ns > 0 ? config->control_timeout_ns : 10000000000;
    t->backoff_min_ns = config->backoff_min_ns > 0 ? config->backoff_min_ns : 10000000;
    t->backoff_max_ns = config->backoff_max_ns > t->backoff_min_ns ? config->backoff_max_ns : 2000000000;
    return &t->descriptor;
}

void rfx_isolation_descriptor_destroy(rawfx_filter_descriptor *descriptor) {
    iso_type *t = (iso_type *)descriptor;
    free(t->helper_path);
    free(t->plugin_path);
    free(t->filter_id);
    for (uint32_t k = 0; k < t->member_count; k++) {
        free(t->members[k].plugin_path);
        free(t->members[k].filter_id);
    }
    free(t);
}

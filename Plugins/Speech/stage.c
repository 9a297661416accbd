/*
 * The shared stage of `dfn` and `rnnoise`: resampling to and from 48 kHz,
 * hop FIFOs, per-channel model states, the worker, reset and library lookup.
 * See stage.h for the design.
 */
#define _GNU_SOURCE
#include "stage.h"

#include <speex/speex_resampler.h>

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* SpeexDSP's "desktop" quality: stopband well below the 16-bit noise floor,
 * about 1 ms of filter at 48 kHz. */
#define RESAMPLER_QUALITY 5

/* ------------------------------------------------------------------ states -- */

static void destroy_set(speech_stage *s, speech_state_set *set)
{
    for (uint32_t c = 0; c < SPEECH_MAX_CHANNELS; c++) {
        if (set->channel[c] != NULL) {
            s->ops->destroy_state(s, set->channel[c]);
            set->channel[c] = NULL;
        }
    }
}

static void drop_pool(speech_stage *s)
{
    while (s->pool_count > 0)
        s->ops->destroy_state(s, s->pool[--s->pool_count]);
}

/* [control] One fresh state per channel (from the pool first); on failure leaves `set`
 * empty and returns 0. */
static int fill_set(speech_stage *s, speech_state_set *set)
{
    for (uint32_t c = 0; c < s->channels; c++) {
        set->channel[c] = s->pool_count > 0 ? s->pool[--s->pool_count] : s->ops->create_state(s);
        if (set->channel[c] == NULL) {
            destroy_set(s, set);
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ worker -- */

static void wait_for(sem_t *sem)
{
    while (sem_wait(sem) != 0 && errno == EINTR) {
    }
}

static void run_hop(speech_stage *s, speech_slot *slot)
{
    const uint32_t hop = s->ops->hop;
    for (uint32_t c = 0; c < s->channels; c++)
        s->ops->run(s, slot->set->channel[c], slot->params, slot->in + (size_t)c * hop, slot->out + (size_t)c * hop);
}

/* The worker runs hops in the order process handed them over; `work` orders its
 * reads of a slot after process's writes, and `completed` (release) process's
 * reads of the output after the worker's writes. `done` only wakes a waiter. */
static void *worker_main(void *arg)
{
    speech_stage *s = (speech_stage *)arg;
    for (;;) {
        wait_for(&s->work);
        if (atomic_load_explicit(&s->stop, memory_order_acquire))
            break;
        run_hop(s, &s->slots[s->worker_next % s->slot_count]);
        s->worker_next++;
        atomic_store_explicit(&s->completed, s->worker_next, memory_order_release);
        sem_post(&s->done);
    }
    return NULL;
}

/* Hops the worker has finished. */
static uint64_t completed(speech_stage *s)
{
    return atomic_load_explicit(&s->completed, memory_order_acquire);
}

/* [control, or process offline] Waits until the worker has finished `count` hops. */
static void wait_completed(speech_stage *s, uint64_t count)
{
    while (completed(s) < count)
        wait_for(&s->done);
}

/* [control] Waits for every hop handed over: after this the worker is idle. */
static void drain(speech_stage *s)
{
    if (s->worker_running)
        wait_completed(s, s->handed);
}

static void stop_worker(speech_stage *s)
{
    if (!s->worker_running)
        return;
    drain(s);
    atomic_store_explicit(&s->stop, 1, memory_order_release);
    sem_post(&s->work);
    pthread_join(s->worker, NULL);
    sem_destroy(&s->work);
    sem_destroy(&s->done);
    s->worker_running = 0;
}

/* ---------------------------------------------------------------- plumbing -- */

void speech_stage_init(speech_stage *s, const speech_model_ops *ops)
{
    s->ops = ops;
    atomic_init(&s->spare, NULL);
    atomic_init(&s->retired, NULL);
    atomic_init(&s->stop, 0);
}

void speech_stage_release(speech_stage *s)
{
    stop_worker(s);
    drop_pool(s);
    destroy_set(s, &s->sets[0]);
    destroy_set(s, &s->sets[1]);
    s->live = NULL;
    atomic_store_explicit(&s->spare, NULL, memory_order_relaxed);
    atomic_store_explicit(&s->retired, NULL, memory_order_relaxed);
    for (uint32_t c = 0; c < SPEECH_MAX_CHANNELS; c++) {
        if (s->up[c] != NULL)
            speex_resampler_destroy((SpeexResamplerState *)s->up[c]);
        if (s->down[c] != NULL)
            speex_resampler_destroy((SpeexResamplerState *)s->down[c]);
        s->up[c] = s->down[c] = NULL;
    }
    if (s->slots != NULL) {
        for (uint32_t i = 0; i < s->slot_count; i++) {
            free(s->slots[i].in);
            free(s->slots[i].out);
        }
        free(s->slots);
        s->slots = NULL;
    }
    free(s->block_in);
    free(s->in48);
    free(s->hop_out);
    free(s->outq);
    free(s->history);
    free(s->dry);
    s->block_in = s->in48 = s->hop_out = s->outq = s->history = s->dry = NULL;
    s->configured = 0;
}

/* Frames the model path drops at 48 kHz: the model's delay and the hops the
 * worker holds. */
static uint32_t dropped_frames(const speech_stage *s)
{
    return s->ops->delay + s->queue * s->ops->hop;
}

/* [real time] The stream starts again: empty FIFOs, outq primed with
 * `latency` zeros, resamplers cleared and re-aligned. */
static void restart_stream(speech_stage *s)
{
    s->in48_count = 0;
    memset(s->outq, 0, (size_t)s->latency * s->channels * sizeof(float));
    s->outq_count = s->latency;
    s->skip = dropped_frames(s);
    s->boundary = s->stream_hop = s->decided;
    if (s->history != NULL)
        memset(s->history, 0, (size_t)s->history_capacity * s->channels * sizeof(float));
    for (uint32_t c = 0; s->up[0] != NULL && c < s->channels; c++) {
        speex_resampler_reset_mem((SpeexResamplerState *)s->up[c]);
        speex_resampler_skip_zeros((SpeexResamplerState *)s->up[c]);
        speex_resampler_reset_mem((SpeexResamplerState *)s->down[c]);
        speex_resampler_skip_zeros((SpeexResamplerState *)s->down[c]);
    }
    s->dirty = 0;
}

rawfx_status speech_stage_configure(speech_stage *s, const rawfx_format *input, rawfx_negotiation *result)
{
    rawfx_clear_error(&s->base);
    /* The spare set has never run: keep its states for the new live and spare sets, which
     * saves DeepFilterNet's model load (about 0.8 s a state) on a renegotiation. */
    void *fresh[SPEECH_MAX_CHANNELS];
    uint32_t fresh_count = 0;
    speech_state_set *spare = atomic_exchange_explicit(&s->spare, NULL, memory_order_acq_rel);
    for (uint32_t c = 0; spare != NULL && c < SPEECH_MAX_CHANNELS; c++) {
        if (spare->channel[c] != NULL) {
            fresh[fresh_count++] = spare->channel[c];
            spare->channel[c] = NULL;
        }
    }
    speech_stage_release(s);
    memcpy(s->pool, fresh, fresh_count * sizeof fresh[0]);
    s->pool_count = fresh_count;
    rawfx_status status = rawfx_check_audio_input(&s->base, input, SPEECH_MAX_CHANNELS);
    if (status == RAWFX_OK)
        status = rawfx_check_negotiation(&s->base, result);
    if (status != RAWFX_OK)
        return status;
    const uint32_t rate = input->audio.sample_rate, channels = input->audio.channels, hop = s->ops->hop;
    if (rate < 8000 || rate > 192000)
        return rawfx_fail(&s->base, RAWFX_ERR_UNSUPPORTED, "a sample rate of %u Hz is not supported; accepted: "
                          "8000 to 192000 Hz (the model runs at 48000 Hz and the filter resamples to it)",
                          (unsigned)rate);
    s->rate = rate;
    s->channels = channels;
    s->block = (rate + 99) / 100; /* 10 ms, rounded up like the Speex filters */
    s->queue = s->ops->on_worker ? SPEECH_MAX_QUEUE : 0;
    s->slot_count = s->ops->on_worker ? s->queue + 1 + SPEECH_SLACK : 1;
    s->history_capacity = s->ops->on_worker ? s->ops->delay + (s->queue + 2) * hop : 0;
    s->render = s->base.host != NULL
        ? (const rawfx_host_render_mode *)s->base.host->get_extension(s->base.host, RAWFX_EXT_RENDER_MODE) : NULL;
    if (s->render != NULL && (s->render->struct_size < sizeof *s->render || s->render->mode == NULL))
        s->render = NULL;

    int err = 0;
    for (uint32_t c = 0; rate != SPEECH_MODEL_RATE && c < channels; c++) {
        /* Mono states reading and writing interleaved buffers through their strides. */
        s->up[c] = speex_resampler_init(1, rate, SPEECH_MODEL_RATE, RESAMPLER_QUALITY, &err);
        if (s->up[c] != NULL)
            s->down[c] = speex_resampler_init(1, SPEECH_MODEL_RATE, rate, RESAMPLER_QUALITY, &err);
        if (s->up[c] != NULL && s->down[c] != NULL) {
            speex_resampler_set_input_stride((SpeexResamplerState *)s->up[c], channels);
            speex_resampler_set_output_stride((SpeexResamplerState *)s->up[c], channels);
            speex_resampler_set_input_stride((SpeexResamplerState *)s->down[c], channels);
            speex_resampler_set_output_stride((SpeexResamplerState *)s->down[c], channels);
        } else {
            speech_stage_release(s);
            return rawfx_fail(&s->base, RAWFX_ERR_OUT_OF_MEMORY, "speex_resampler_init(%u channels, %u <-> %u Hz) "
                              "failed: %s", (unsigned)channels, (unsigned)rate, SPEECH_MODEL_RATE,
                              speex_resampler_strerror(err));
        }
    }

    /* The zeros outq starts with: enough that it never runs dry. After T input
     * frames, outq has received at least T - latency frames, because the
     * up-resampler holds back h1 input frames, whole hops leave up to hop - 1
     * frames waiting, the model path drops `dropped`, the down-resampler holds
     * back h2 (48 kHz frames), and each resampler may round one frame down. At
     * 48 kHz, blocks are exactly one hop and only the dropped frames count. */
    if (s->up[0] == NULL) {
        s->latency = dropped_frames(s);
    } else {
        const double h1 = speex_resampler_get_input_latency((SpeexResamplerState *)s->up[0]);
        const double h2 = speex_resampler_get_input_latency((SpeexResamplerState *)s->down[0]);
        s->latency = (uint32_t)ceil(h1 + (hop + dropped_frames(s) + h2 + 2) * (double)rate / SPEECH_MODEL_RATE) + 2;
    }

    const uint32_t block48 = (uint32_t)(((uint64_t)s->block * SPEECH_MODEL_RATE + rate - 1) / rate);
    const uint32_t hop_out = (uint32_t)(((uint64_t)hop * rate + SPEECH_MODEL_RATE - 1) / SPEECH_MODEL_RATE);
    s->in48_capacity = block48 + hop + 64;
    s->outq_capacity = s->latency + s->block + 2 * hop_out + 64;
    s->block_in = (float *)calloc((size_t)s->block * channels, sizeof(float));
    s->in48 = (float *)calloc((size_t)s->in48_capacity * channels, sizeof(float));
    s->hop_out = (float *)calloc((size_t)hop * channels, sizeof(float));
    s->outq = (float *)calloc((size_t)s->outq_capacity * channels, sizeof(float));
    s->slots = (speech_slot *)calloc(s->slot_count, sizeof(speech_slot));
    int ok = s->block_in && s->in48 && s->hop_out && s->outq && s->slots;
    if (ok && s->history_capacity > 0) {
        s->history = (float *)calloc((size_t)s->history_capacity * channels, sizeof(float));
        s->dry = (float *)calloc((size_t)hop * channels, sizeof(float));
        ok = s->history && s->dry;
    }
    for (uint32_t i = 0; ok && i < s->slot_count; i++) {
        s->slots[i].in = (float *)calloc((size_t)hop * channels, sizeof(float));
        s->slots[i].out = (float *)calloc((size_t)hop * channels, sizeof(float));
        ok = s->slots[i].in && s->slots[i].out;
    }
    if (!ok) {
        speech_stage_release(s);
        return rawfx_fail(&s->base, RAWFX_ERR_OUT_OF_MEMORY, "out of memory for the buffers of %u channels",
                          (unsigned)channels);
    }

    if (!fill_set(s, &s->sets[0])) {
        char why[sizeof s->base.error];
        memcpy(why, s->base.error, sizeof why);
        speech_stage_release(s);
        memcpy(s->base.error, why, sizeof why);
        return RAWFX_ERR_INTERNAL;
    }
    s->live = &s->sets[0];
    if (s->ops->reset_state == NULL || s->ops->on_worker) {
        /* The spare for reset is built off this call: on_callback when there is
         * a host, here when there is none. (A model on the worker swaps sets even
         * if it could reset in place: the worker may still run hops on the old one.) */
        if (s->base.host != NULL) {
            atomic_store_explicit(&s->retired, &s->sets[1], memory_order_release);
            s->base.host->request_callback(s->base.host);
        } else if (fill_set(s, &s->sets[1])) {
            atomic_store_explicit(&s->spare, &s->sets[1], memory_order_release);
        }
    }

    if (s->ops->on_worker) {
        atomic_store_explicit(&s->stop, 0, memory_order_relaxed);
        if (sem_init(&s->work, 0, 0) != 0 || sem_init(&s->done, 0, 0) != 0 ||
            pthread_create(&s->worker, NULL, worker_main, s) != 0) {
            speech_stage_release(s);
            return rawfx_fail(&s->base, RAWFX_ERR_INTERNAL, "could not start the model's worker thread: %s",
                              strerror(errno));
        }
        s->worker_running = 1;
    }

    drop_pool(s);
    s->decided = s->handed = s->worker_next = s->late_hops = 0;
    atomic_store_explicit(&s->completed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->retire_after, 0, memory_order_relaxed);
    s->configured = 1;
    restart_stream(s);
    result->block_frames = s->block;
    result->max_output_frames = 0;
    result->latency = s->latency;
    return RAWFX_OK;
}

/* ----------------------------------------------------------------- process -- */

/* Appends n interleaved 48 kHz frames of model output to outq (resampled). */
static void push_out(speech_stage *s, const float *frames, uint32_t n)
{
    const uint32_t channels = s->channels;
    if (s->down[0] == NULL) {
        uint32_t room = s->outq_capacity - s->outq_count;
        n = n < room ? n : room;
        memcpy(s->outq + (size_t)s->outq_count * channels, frames, (size_t)n * channels * sizeof(float));
        s->outq_count += n;
        return;
    }
    spx_uint32_t made = 0;
    for (uint32_t c = 0; c < channels; c++) {
        spx_uint32_t in_len = n, out_len = s->outq_capacity - s->outq_count;
        speex_resampler_process_float((SpeexResamplerState *)s->down[c], 0, frames + c, &in_len,
                                      s->outq + (size_t)s->outq_count * channels + c, &out_len);
        made = out_len; /* the same for every channel: same rates, same history length */
    }
    s->outq_count += made;
}

/* One hop of model output (planar, model scale; NULL: a hop the worker has not
 * returned yet, which is always within the dropped frames). */
static void emit(speech_stage *s, const float *planar)
{
    const uint32_t hop = s->ops->hop, channels = s->channels;
    const uint32_t first = s->skip < hop ? s->skip : hop;
    s->skip -= first;
    const uint32_t n = hop - first;
    if (n == 0 || planar == NULL)
        return;
    const float unscale = 1.0f / s->ops->scale;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < channels; c++)
            s->hop_out[(size_t)i * channels + c] = planar[(size_t)c * hop + first + i] * unscale;
    push_out(s, s->hop_out, n);
}

/* The slot's input: the hop planar at model scale, and the parameters and
 * states it runs with. */
static void fill_slot(speech_stage *s, speech_slot *slot, const float *frames)
{
    const uint32_t hop = s->ops->hop, channels = s->channels;
    const float scale = s->ops->scale;
    s->ops->snapshot(s, slot->params);
    for (uint32_t c = 0; c < channels; c++)
        for (uint32_t i = 0; i < hop; i++)
            slot->in[(size_t)c * hop + i] = frames[(size_t)i * channels + c] * scale;
    slot->set = s->live;
}

/* 1 when nobody waits for the output in real time (a file). */
static int offline(const speech_stage *s)
{
    return s->render != NULL && s->render->mode(s->base.host) == RAWFX_RENDER_OFFLINE;
}

/* Keeps the hop being decided in the input history, for a dry output later. */
static void remember(speech_stage *s, const float *frames)
{
    const uint32_t hop = s->ops->hop, channels = s->channels;
    const uint64_t first = (s->decided - s->stream_hop) * hop;
    for (uint32_t i = 0; i < hop; i++)
        memcpy(s->history + (size_t)((first + i) % s->history_capacity) * channels, frames + (size_t)i * channels,
               channels * sizeof(float));
}

/* Hop `d`'s output when the model's is not there: the input, dry, where the
 * model's output of hop d lies in time (`delay` frames earlier). */
static void emit_dry(speech_stage *s, uint64_t d)
{
    const uint32_t hop = s->ops->hop, channels = s->channels;
    const int64_t start = (int64_t)((d - s->stream_hop) * hop) - (int64_t)s->ops->delay;
    for (uint32_t i = 0; i < hop; i++) {
        const int64_t f = start + (int64_t)i;
        for (uint32_t c = 0; c < channels; c++)
            s->dry[(size_t)c * hop + i] =
                f < 0 ? 0.0f : s->history[(size_t)((uint64_t)f % s->history_capacity) * channels + c] * s->ops->scale;
    }
    emit(s, s->dry);
    if (s->late_hops++ % 1000 == 0)
        rawfx_log(&s->base, RAWFX_LOG_WARNING, "the model's worker is behind real time: %llu hop(s) of 10 ms passed "
                  "through unprocessed so far (the machine is too busy for this model)",
                  (unsigned long long)s->late_hops);
}

/* One hop of in48 (interleaved) through the model, inline or via the worker. */
static void model_hop(speech_stage *s, const float *frames)
{
    if (!s->ops->on_worker) {
        fill_slot(s, &s->slots[0], frames);
        run_hop(s, &s->slots[0]);
        emit(s, s->slots[0].out);
        s->decided++;
        return;
    }
    const int may_wait = offline(s);
    const uint64_t n = s->decided;
    remember(s, frames);
    /* Hand the hop over if a slot is free: offline, wait for one; in real time
     * a worker SPEECH_SLACK hops behind gets no more until it catches up. */
    if (may_wait)
        wait_completed(s, s->handed + 1 > s->slot_count ? s->handed + 1 - s->slot_count : 0);
    uint64_t ticket = 0;
    if (s->handed - completed(s) < s->slot_count) {
        fill_slot(s, &s->slots[s->handed % s->slot_count], frames);
        ticket = ++s->handed;
        sem_post(&s->work);
    }
    s->ticket[n % (s->queue + 1)] = ticket;
    s->decided++;
    /* The hop decided `queue` hops ago is due: its model output, or (before the
     * stream's first `queue` hops are through) nothing but the dropped frames. */
    if (n < s->boundary + s->queue) {
        emit(s, NULL);
        return;
    }
    const uint64_t d = n - s->queue, due = s->ticket[d % (s->queue + 1)];
    if (due != 0 && may_wait)
        wait_completed(s, due);
    if (due != 0 && completed(s) >= due)
        emit(s, s->slots[(due - 1) % s->slot_count].out);
    else
        emit_dry(s, d);
}

static int16_t to_int16(float x)
{
    if (x >= 32767.0f)
        return 32767;
    if (x <= -32768.0f)
        return -32768;
    return (int16_t)lrintf(x);
}

rawfx_status speech_stage_process(speech_stage *s, const rawfx_audio_frame *in, rawfx_audio_frame *out)
{
    rawfx_clear_error(&s->base);
    if (!s->configured)
        return rawfx_fail(&s->base, RAWFX_ERR_STATE, "process before a successful configure");
    if (!rawfx_audio_frame_is_complete(in) || !rawfx_audio_frame_is_complete(out))
        return rawfx_fail(&s->base, RAWFX_ERR_INVALID_ARGUMENT, "incomplete audio frame (NULL samples or short struct_size)");
    if (in->sample_rate != s->rate || in->channels != s->channels)
        return rawfx_fail(&s->base, RAWFX_ERR_INVALID_ARGUMENT, "block is %u Hz x %u channels but the filter was "
                          "configured for %u Hz x %u; reconfigure on a format change",
                          (unsigned)in->sample_rate, (unsigned)in->channels, (unsigned)s->rate, (unsigned)s->channels);
    if (in->frame_count != s->block)
        return rawfx_fail(&s->base, RAWFX_ERR_INVALID_ARGUMENT, "got %u frames; every block must be exactly %u "
                          "frames (10 ms at %u Hz), as negotiated in block_frames",
                          (unsigned)in->frame_count, (unsigned)s->block, (unsigned)s->rate);
    if (out != in && out->frame_count < s->block)
        return rawfx_fail(&s->base, RAWFX_ERR_INVALID_ARGUMENT, "output buffer holds %u frames, needs %u",
                          (unsigned)out->frame_count, (unsigned)s->block);

    const uint32_t channels = s->channels, block = s->block, hop = s->ops->hop;
    const size_t samples = (size_t)block * channels;
    for (size_t i = 0; i < samples; i++)
        s->block_in[i] = (float)in->samples[i];
    if (s->up[0] == NULL) {
        memcpy(s->in48 + (size_t)s->in48_count * channels, s->block_in, samples * sizeof(float));
        s->in48_count += block;
    } else {
        spx_uint32_t made = 0;
        for (uint32_t c = 0; c < channels; c++) {
            spx_uint32_t in_len = block, out_len = s->in48_capacity - s->in48_count;
            speex_resampler_process_float((SpeexResamplerState *)s->up[c], 0, s->block_in + c, &in_len,
                                          s->in48 + (size_t)s->in48_count * channels + c, &out_len);
            made = out_len;
        }
        s->in48_count += made;
    }
    uint32_t used = 0;
    while (s->in48_count - used >= hop) {
        model_hop(s, s->in48 + (size_t)used * channels);
        used += hop;
    }
    s->in48_count -= used;
    memmove(s->in48, s->in48 + (size_t)used * channels, (size_t)s->in48_count * channels * sizeof(float));

    /* outq holds at least a block by the choice of latency; a shortfall would
     * be a bug, so it is reported rather than hidden. */
    const uint32_t have = s->outq_count < block ? s->outq_count : block;
    for (size_t i = 0; i < (size_t)have * channels; i++)
        out->samples[i] = to_int16(s->outq[i]);
    for (size_t i = (size_t)have * channels; i < samples; i++)
        out->samples[i] = 0;
    s->outq_count -= have;
    memmove(s->outq, s->outq + (size_t)have * channels, (size_t)s->outq_count * channels * sizeof(float));
    s->dirty = 1;
    if (out != in) {
        rawfx_copy_audio_metadata(in, out);
        out->frame_count = block;
        out->sample_rate = s->rate;
        out->channels = channels;
    }
    if (have < block)
        return rawfx_fail(&s->base, RAWFX_ERR_INTERNAL, "output ran %u frames short of the block (a bug in the "
                          "latency computation at %u Hz)", (unsigned)(block - have), (unsigned)s->rate);
    return RAWFX_OK;
}

/* ------------------------------------------------------------------- reset -- */

/* The fallback when no spare is ready: new states on the calling thread. */
static void recreate_live_states(speech_stage *s)
{
    for (uint32_t c = 0; c < s->channels; c++) {
        void *fresh = s->ops->create_state(s);
        if (fresh == NULL) {
            rawfx_log(&s->base, RAWFX_LOG_ERROR, "reset could not re-create the model state of channel %u; "
                      "it keeps its history", (unsigned)c);
            continue;
        }
        s->ops->destroy_state(s, s->live->channel[c]);
        s->live->channel[c] = fresh;
    }
}

void speech_stage_reset(speech_stage *s)
{
    if (!s->configured || !s->dirty)
        return;
    if (s->ops->reset_state != NULL && !s->ops->on_worker) {
        for (uint32_t c = 0; c < s->channels; c++)
            s->ops->reset_state(s, s->live->channel[c]);
    } else {
        speech_state_set *fresh = NULL;
        if (atomic_load_explicit(&s->retired, memory_order_acquire) == NULL)
            fresh = atomic_exchange_explicit(&s->spare, NULL, memory_order_acq_rel);
        if (fresh != NULL) {
            speech_state_set *used = s->live;
            s->live = fresh;
            /* Hops handed over so far still run on `used`: on_callback waits for them. */
            atomic_store_explicit(&s->retire_after, s->handed, memory_order_relaxed);
            atomic_store_explicit(&s->retired, used, memory_order_release);
        } else {
            rawfx_log(&s->base, RAWFX_LOG_WARNING, "reset came before the spare model states were ready (%s): "
                      "re-created them on the calling thread, which allocates and takes about a second",
                      s->base.host ? "on_callback has not run since the last reset" : "no host object");
            drain(s); /* the worker must be off the live states it replaces */
            recreate_live_states(s);
        }
        if (s->base.host != NULL)
            s->base.host->request_callback(s->base.host);
    }
    restart_stream(s);
}

/* Control thread, possibly while process runs: turns the retired set into a
 * new spare. Touches only the set it took out of `retired`. */
void speech_stage_on_callback(speech_stage *s)
{
    speech_state_set *used = atomic_exchange_explicit(&s->retired, NULL, memory_order_acq_rel);
    if (used == NULL)
        return;
    /* The worker may still be on hops handed over before the reset that retired
     * `used`: a few model calls at most. This is a control thread: it may wait. */
    const uint64_t after = atomic_load_explicit(&s->retire_after, memory_order_relaxed);
    while (s->worker_running && completed(s) < after) {
        const struct timespec pause = {0, 500000};
        nanosleep(&pause, NULL);
    }
    destroy_set(s, used);
    if (!fill_set(s, used)) {
        rawfx_log(&s->base, RAWFX_LOG_WARNING, "could not create spare model states: resets re-create them on "
                  "the calling thread until the next on_callback succeeds");
        atomic_store_explicit(&s->retired, used, memory_order_release);
        return;
    }
    atomic_store_explicit(&s->spare, used, memory_order_release);
}

/* ----------------------------------------------------------------- library -- */

/* The engine's rule for plugin files (docs/cli.md, Sources/RawFX/PluginTrust.swift) for the
 * library a filter opens, which runs code in the host just as a plugin does: the file and
 * every directory above it owned by root or us and writable by nobody else (a sticky
 * directory excepted), unless RAWFX_ALLOW_UNTRUSTED_PLUGINS=1. Returns 1, or 0 with why. */
static int trusted(const char *filter_id, const char *path, char *error, size_t capacity)
{
    const char *allow = getenv("RAWFX_ALLOW_UNTRUSTED_PLUGINS");
    if (allow != NULL && strcmp(allow, "1") == 0)
        return 1;
    char real[PATH_MAX];
    if (realpath(path, real) == NULL) {
        snprintf(error, capacity, "%s: cannot resolve %s: %s", filter_id, path, strerror(errno));
        return 0;
    }
    const uid_t me = geteuid();
    for (int file = 1;; file = 0) {
        struct stat st;
        if (stat(real, &st) != 0) {
            snprintf(error, capacity, "%s: cannot check %s: %s", filter_id, real, strerror(errno));
            return 0;
        }
        const int sticky = !file && (st.st_mode & S_ISVTX);
        const char *broken = st.st_uid != 0 && st.st_uid != me ? "owned by another user"
                             : (st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky ? "writable by group or others" : NULL;
        if (broken != NULL) {
            snprintf(error, capacity, "%s: refusing to load %s: %s is %s (mode %04o, uid %u); like a plugin "
                     "file, the library and its directories must be owned by root or uid %u and writable by "
                     "nobody else (RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 lifts this)", filter_id, path, real, broken,
                     (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)me);
            return 0;
        }
        if (strcmp(real, "/") == 0)
            return 1;
        char *slash = strrchr(real, '/');
        if (slash == real)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
}

static int open_library(const char *filter_id, const char *path, const char *const *names, void **out, int count,
                        const char *install_hint, char *error, size_t capacity)
{
    if (!trusted(filter_id, path, error, capacity))
        return 0;
    /* Never unloaded: the libraries keep thread-locals and run-time state. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == NULL) {
        snprintf(error, capacity, "%s: could not load %s: %s; reinstall it: %s", filter_id, path, dlerror(),
                 install_hint);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        out[i] = dlsym(handle, names[i]);
        if (out[i] == NULL) {
            snprintf(error, capacity, "%s: %s has no function %s, so it is not the library this filter was "
                     "written for; install it with: %s", filter_id, path, names[i], install_hint);
            return 0;
        }
    }
    return 1;
}

int speech_load_library(const char *filter_id, const char *env, const char *relative,
                        const char *const *names, void **out, int count, const char *install_hint,
                        char *found, char *error, size_t capacity)
{
    const char *explicit_path = getenv(env);
    if (explicit_path != NULL && explicit_path[0] != '\0') {
        if (access(explicit_path, R_OK) != 0) {
            snprintf(error, capacity, "%s: %s=%s, but there is no readable file there (%s); point %s at the "
                     "library, or unset it to use the folder bootstrap installs into. To install: %s",
                     filter_id, env, explicit_path, strerror(errno), env, install_hint);
            return 0;
        }
        snprintf(found, PATH_MAX, "%s", explicit_path);
        return open_library(filter_id, found, names, out, count, install_hint, error, capacity);
    }
    const char *home = getenv("HOME");
    char user_dir[PATH_MAX];
    snprintf(user_dir, sizeof user_dir, "%s/.local/lib/rawfx/speech", home ? home : "");
    const char *folders[3] = {getenv("RAWFX_SPEECH_DIR"), SPEECH_DEFAULT_DIR, home ? user_dir : NULL};
    char tried[1024] = "";
    for (int i = 0; i < 3; i++) {
        if (folders[i] == NULL || folders[i][0] == '\0')
            continue;
        snprintf(found, PATH_MAX, "%s/%s", folders[i], relative);
        if (access(found, R_OK) == 0)
            return open_library(filter_id, found, names, out, count, install_hint, error, capacity);
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", found);
    }
    snprintf(error, capacity, "%s: %s not found (%s unset; looked for %s). Install it: %s", filter_id,
             strrchr(relative, '/') ? strrchr(relative, '/') + 1 : relative, env, tried, install_hint);
    return 0;
}

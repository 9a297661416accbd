/*
 * The machinery `dfn` and `rnnoise` share: a speech model that runs at 48 kHz
 * on fixed hops of mono float samples, wrapped into a RawFX audio filter that
 * takes 16-bit PCM at any rate (8-192 kHz) and 1-8 channels.
 *
 * Per block (ceil(rate / 100) frames, declared as block_frames):
 *
 *   int16 -> float -> [SpeexDSP resampler to 48 kHz] -> in48 FIFO
 *   each whole hop in in48 -> one model state per channel -> (drop the first
 *   `delay` frames the model returns) -> [resampler back] -> outq FIFO -> int16
 *
 * Alignment is exact by construction, not by tuning: both resamplers start
 * with speex_resampler_skip_zeros (their first output sample is centred on the
 * first input sample), and the model's own delay is dropped at 48 kHz, so the
 * whole path is zero-phase except for the zeros outq starts with. That count,
 * `latency` frames at the stream rate, is what configure reports; it only has
 * to be large enough that outq never runs dry (see speech_stage_configure).
 *
 * A model whose hop allocates (DeepFilterNet's tract runtime: about 2,200 heap
 * allocations per hop) runs on a worker thread: process hands each hop to the
 * worker through a ring of slots and takes back the hop it handed over `queue`
 * hops earlier. That adds queue * hop frames of delay (dropped like the
 * model's). When that hop is not back yet: in real time (a hook) process never
 * waits, and the hop's output is its input, dry, at the same place in time
 * (counted and logged); offline ("rawfx.render-mode/1": a file) process waits
 * on a semaphore, so a file's output is the same however fast the machine is,
 * and identical to an inline run. A worker more than SPEECH_SLACK hops behind
 * gets no new hops in real time (they too pass dry) until it catches up.
 *
 * Reset: a model with an in-place reset (RNNoise's rnnoise_init) uses it; one
 * without (DeepFilterNet) swaps in a spare set of states built off the audio
 * thread, as Plugins/Speex/denoise.c does. Reset never waits for the worker:
 * each handed-over hop names the state set it runs on, hops handed over before
 * the reset finish on the old set and their output is dropped, and on_callback
 * (a control thread) waits for them before it recycles that set.
 */
#ifndef RAWFX_SPEECH_STAGE_H
#define RAWFX_SPEECH_STAGE_H

#include "rawfx/plugin_helpers.h"
#include "rawfx/ext/render_mode.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#define SPEECH_MAX_CHANNELS 8
/* Slots beyond `queue + 1`: how far the worker may fall behind in real time
 * before new hops pass dry (each slot is a hop, 10 ms at 48 kHz). */
#define SPEECH_SLACK 6
#define SPEECH_MAX_QUEUE 1
#define SPEECH_MODEL_RATE 48000

typedef struct speech_stage speech_stage;

/* What a model wrapper provides. States are per channel. */
typedef struct speech_model_ops {
    uint32_t hop;      /* frames per model call at 48 kHz */
    uint32_t delay;    /* frames the model's output lags its input, at 48 kHz (measured) */
    float scale;       /* model sample = 16-bit sample * scale */
    int on_worker;     /* 1: run hops on the worker thread (the model's hop allocates) */
    /* [control] A fresh state, or NULL with a message left by rawfx_fail. */
    void *(*create_state)(speech_stage *stage);
    void (*destroy_state)(speech_stage *stage, void *state);
    /* [real time, or the worker] Forgets history in place; NULL if the model cannot. */
    void (*reset_state)(speech_stage *stage, void *state);
    /* [process thread] Copies the live parameters into `params` when a hop is handed
     * over, so that a change between two blocks applies from the next block's hops on,
     * whenever the worker gets to them. */
    void (*snapshot)(speech_stage *stage, float *params);
    /* One hop of one channel: `in` (hop samples, may be overwritten) to `out`, with the
     * parameters snapshot took for this hop. */
    void (*run)(speech_stage *stage, void *state, const float *params, float *in, float *out);
} speech_model_ops;

struct speech_state_set {
    void *channel[SPEECH_MAX_CHANNELS];
};

#define SPEECH_MAX_PARAMS 4

typedef struct speech_state_set speech_state_set;

typedef struct speech_slot {
    float *in, *out;   /* planar: channels * hop */
    float params[SPEECH_MAX_PARAMS];
    speech_state_set *set; /* the states this hop runs on (the live set when handed over) */
} speech_slot;

struct speech_stage {
    rawfx_instance_base base; /* first: the helper's instance functions find it */
    const speech_model_ops *ops;

    int configured;
    uint32_t rate, channels, block, latency;
    /* SpeexResamplerState per channel, NULL at 48 kHz: mono states because
     * speex_resampler_reset_mem of SpeexDSP 1.2.1 clears only part of a
     * multi-channel state's history (its stride is not filt_len - 1). */
    void *up[SPEECH_MAX_CHANNELS], *down[SPEECH_MAX_CHANNELS];

    float *block_in;          /* block * channels, the input as float */
    float *in48;              /* interleaved FIFO at 48 kHz */
    uint32_t in48_count, in48_capacity;
    float *hop_out;           /* interleaved, one hop */
    float *outq;              /* interleaved FIFO at the stream rate */
    uint32_t outq_count, outq_capacity;
    uint32_t skip;            /* model-output frames still to drop */

    /* model states: `live` is the process thread's (and the worker's) */
    speech_state_set sets[2];
    speech_state_set *live;
    _Atomic(speech_state_set *) spare;
    _Atomic(speech_state_set *) retired;
    int dirty;
    /* During configure only: never-used states of the previous spare set, which configure
     * hands on (a model state does not depend on the stream's format). */
    void *pool[SPEECH_MAX_CHANNELS];
    uint32_t pool_count;

    /* the worker (ops->on_worker) */
    int worker_running;
    pthread_t worker;
    sem_t work, done;
    atomic_int stop;
    uint32_t queue;           /* hops between handing one over and taking its output */
    uint32_t slot_count;      /* queue + 1 + SPEECH_SLACK with a worker, else 1 */
    speech_slot *slots;       /* slot_count */
    uint64_t decided;         /* hops process has seen since configure (handed over or dry) */
    uint64_t handed, worker_next; /* hops handed to the worker; run by it */
    _Atomic uint64_t completed;   /* hops the worker has finished: their output is in their slot */
    /* Per decided hop, by decided % (queue + 1): the handed-over index + 1, or 0 for a hop that
     * passes dry (the worker was too far behind). */
    uint64_t ticket[SPEECH_MAX_QUEUE + 1];
    uint64_t boundary;        /* decided hops before it belong to the stream before the last reset */
    uint64_t stream_hop;      /* the decided index of the current stream's first hop */
    _Atomic uint64_t retire_after; /* the retired set is free once `completed` reaches this */
    /* The input at 48 kHz (interleaved, 16-bit scale), for dry hops: history_capacity frames,
     * frame f of the stream at f % history_capacity. */
    float *history;
    uint32_t history_capacity;
    float *dry;               /* planar, model scale: one hop */
    const rawfx_host_render_mode *render;
    uint64_t late_hops;       /* hops that passed dry since configure */
};

/* The functions an instance's rawfx_filter uses; `stage` is the start of the instance. */
void speech_stage_init(speech_stage *stage, const speech_model_ops *ops);
void speech_stage_release(speech_stage *stage);
rawfx_status speech_stage_configure(speech_stage *stage, const rawfx_format *input, rawfx_negotiation *result);
rawfx_status speech_stage_process(speech_stage *stage, const rawfx_audio_frame *in, rawfx_audio_frame *out);
void speech_stage_reset(speech_stage *stage);
void speech_stage_on_callback(speech_stage *stage);

/* Where bootstrap installs the wheels (pip install --target): the folder the
 * plugin searches after an explicit library path. */
#define SPEECH_DEFAULT_DIR "/usr/local/lib/rawfx/speech"

/* [control] Finds and opens a wheel's library, then resolves `count` symbols
 * (`names`) into `out`. Search: the env var `env` (a path to the .so; if set,
 * nothing else is tried), then `relative` under $RAWFX_SPEECH_DIR,
 * SPEECH_DEFAULT_DIR and $HOME/.local/lib/rawfx/speech. On failure writes
 * "<filter>: ..." into `error`: every path tried, then `install_hint`.
 * `found` (PATH_MAX bytes) receives the path opened. */
int speech_load_library(const char *filter_id, const char *env, const char *relative,
                        const char *const *names, void **out, int count, const char *install_hint,
                        char *found, char *error, size_t capacity);

#endif

/*
 * The caps on a negotiation's numbers (rawfx.h, RAWFX_MAX_VIDEO_LATENCY_FRAMES): the one
 * place both the engine (FilterInstance.configure) and an isolated stage's proxy (the
 * helper's answer) check a filter's latency, block and output sizes before sizing a FIFO,
 * a delay line or a drain from them. A hostile or broken plugin's 0xFFFFFFFF is a refused
 * configure, not a 34 GB allocation or a drain that never ends.
 */
#include "rawfx_runtime.h"

#include <stdio.h>

const char *rfx_negotiation_cap_violation(const rawfx_format *input, const rawfx_negotiation *n, char *message,
                                          size_t capacity) {
    if (input->kind == RAWFX_MEDIA_VIDEO) {
        if (n->latency > RAWFX_MAX_VIDEO_LATENCY_FRAMES) {
            snprintf(message, capacity, "a latency of %u frames is over the host's cap of %u frames (RAWFX_MAX_VIDEO_LATENCY_FRAMES)",
                     n->latency, RAWFX_MAX_VIDEO_LATENCY_FRAMES);
            return message;
        }
        return NULL;
    }
    static const char *const names[] = { "a block of", "max_output_frames", "a latency of" };
    const uint32_t values[] = { n->block_frames, n->max_output_frames, n->latency };
    for (int i = 0; i < 3; i++) {
        if (values[i] > RAWFX_MAX_AUDIO_FRAMES) {
            snprintf(message, capacity, "%s %u frames is over the host's cap of %u frames (RAWFX_MAX_AUDIO_FRAMES)", names[i],
                     values[i], RAWFX_MAX_AUDIO_FRAMES);
            return message;
        }
    }
    return NULL;
}

/*
 * rawfx/ext/voice_activity.h — "rawfx.voice-activity/1", a filter extension.
 *
 * An audio filter that detects voice (the shipped `denoise` with vad=true)
 * flags each output block with RAWFX_AUDIO_FLAG_VOICE and may also offer
 * running counts through this extension:
 *
 *     const rawfx_voice_activity_v1 *va =
 *         filter->get_extension(filter, RAWFX_EXT_VOICE_ACTIVITY);
 *
 * The struct lives as long as the instance. Counters restart at configure
 * (not at reset). Read it on a control thread between process calls, or
 * concurrently with relaxed atomic loads: the process thread writes each field
 * with a relaxed atomic store, so values are never torn.
 */
#ifndef RAWFX_EXT_VOICE_ACTIVITY_H
#define RAWFX_EXT_VOICE_ACTIVITY_H

#include "../../rawfx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RAWFX_EXT_VOICE_ACTIVITY "rawfx.voice-activity/1"

/* 32 bytes on every platform RawFX targets (natural alignment, no padding).
 * Fields may be appended (struct_size grows); existing ones never move. */
typedef struct rawfx_voice_activity_v1 {
    uint32_t struct_size;        /* sizeof(rawfx_voice_activity_v1) = 32 */
    uint32_t vad_enabled;        /* 1 if the instance was configured with vad on */
    uint64_t voice_blocks;       /* blocks flagged RAWFX_AUDIO_FLAG_VOICE since configure */
    uint64_t total_blocks;       /* blocks processed since configure */
    uint32_t last_block_voice;   /* 1 if the most recent block was flagged */
    uint32_t speech_probability; /* of the most recent block, percent 0..100 */
} rawfx_voice_activity_v1;

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_EXT_VOICE_ACTIVITY_H */

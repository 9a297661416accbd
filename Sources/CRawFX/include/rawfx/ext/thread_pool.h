/*
 * rawfx/ext/thread_pool.h — "rawfx.thread-pool/1", a host extension.
 *
 * Lets a filter split one process call into N slice jobs that run on the
 * host's threads (FFmpeg's slice threading, CLAP's thread pool). The engine
 * owns the threads; their number is the host's setting (1 means every job runs
 * inline on the calling thread). A filter asks for it once, at create or
 * configure:
 *
 *     const rawfx_host_thread_pool *pool =
 *         host->get_extension(host, RAWFX_EXT_THREAD_POOL);
 *
 * and in process, for rows split into slices:
 *
 *     if (pool) pool->run(host, scale_slice, self, slices);
 *     else for (uint32_t i = 0; i < slices; i++) scale_slice(self, i);
 *
 * Jobs of one run must be independent (write disjoint rows) and must not call
 * run themselves (a nested run executes inline).
 *
 * Jobs are handed out one at a time to whichever thread is free, so a few
 * jobs per thread (the bundled scale filter cuts 4) let a thread that runs
 * slower, on a vCPU shared with another guest, take fewer of them instead of
 * holding the frame up; one job per thread is right when each job's memory
 * traffic suffers from being cut finer (the bundled transposes).
 */
#ifndef RAWFX_EXT_THREAD_POOL_H
#define RAWFX_EXT_THREAD_POOL_H

#include "../../rawfx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RAWFX_EXT_THREAD_POOL "rawfx.thread-pool/1"

/* One slice job: `index` runs from 0 to job_count - 1. */
typedef void (*rawfx_slice_job)(void *context, uint32_t index);

typedef struct rawfx_host_thread_pool {
    uint32_t struct_size;

    /* [any] How many threads run jobs, the caller included (>= 1). A filter
     * uses it to choose a slice count; 1 means run() is a plain loop. */
    uint32_t (*thread_count)(const rawfx_host *host);

    /* [process] Runs job(context, i) for every i in [0, job_count), spread
     * over the pool's threads and the calling thread, and returns when all
     * have finished. REAL-TIME: no allocation and no lock beyond waking the
     * workers; when the pool is busy with another stream's jobs, the jobs run
     * inline on the caller instead of waiting. Returns RAWFX_OK, or
     * RAWFX_ERR_STATE when called off the instance's process thread (the jobs
     * then have not run). */
    rawfx_status (*run)(const rawfx_host *host, rawfx_slice_job job, void *context,
                        uint32_t job_count);
} rawfx_host_thread_pool;

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_EXT_THREAD_POOL_H */

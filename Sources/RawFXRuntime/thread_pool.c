/*
 * The thread pool behind "rawfx.thread-pool/1": N - 1 worker threads plus the
 * caller. One run at a time: a run that finds the pool busy (another stream's
 * process thread got there first) runs its jobs inline instead of waiting, so
 * no process thread ever blocks on another. Wake-ups are POSIX semaphores
 * (futexes): the only system calls on the frame path.
 */
#include "rawfx_runtime.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>

#define MAX_THREADS 64

rfx_host_context *rfx_current_process_context(void);
void rfx_set_current_process_context(rfx_host_context *context);

static struct {
    pthread_mutex_t resize_mutex;      /* control side only: starting workers */
    atomic_uint wanted;                /* threads including the caller */
    uint32_t started;                  /* workers running */
    sem_t start;                       /* one post per worker per run */
    sem_t finished;                    /* one post per run: the last job done */
    atomic_int busy;                   /* a run owns the pool */
    atomic_int running;                /* workers may take jobs */
    atomic_int inside;                 /* workers between start and leaving a run */
    rawfx_slice_job job;
    void *context;
    rfx_host_context *owner;
    uint32_t count;
    atomic_uint next;
    atomic_uint done;
} pool = { .resize_mutex = PTHREAD_MUTEX_INITIALIZER, .wanted = 1 };

static __thread int inside_job __attribute__((tls_model("initial-exec")));

static void take_jobs(void) {
    for (;;) {
        uint32_t index = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed);
        if (index >= pool.count) return;
        pool.job(pool.context, index);
        if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_acq_rel) + 1 == pool.count)
            sem_post(&pool.finished);
    }
}

static void *worker_main(void *unused) {
    (void)unused;
    inside_job = 1;
    for (;;) {
        sem_wait(&pool.start);
        atomic_fetch_add_explicit(&pool.inside, 1, memory_order_acq_rel);
        if (atomic_load_explicit(&pool.running, memory_order_acquire)) {
            rfx_set_current_process_context(pool.owner);
            take_jobs();
            rfx_set_current_process_context(NULL);
        }
        atomic_fetch_sub_explicit(&pool.inside, 1, memory_order_acq_rel);
    }
    return NULL;
}

static pthread_once_t semaphores_once = PTHREAD_ONCE_INIT;
static void init_semaphores(void) {
    sem_init(&pool.start, 0, 0);
    sem_init(&pool.finished, 0, 0);
}

void rfx_runtime_set_thread_count(uint32_t count) {
    if (count < 1) count = 1;
    if (count > MAX_THREADS) count = MAX_THREADS;
    pthread_once(&semaphores_once, init_semaphores);
    pthread_mutex_lock(&pool.resize_mutex);
    /* Workers are started here, on the control side, never on a frame path.
     * Extra workers of a larger earlier setting stay parked (they only take
     * jobs when posted, and a run posts wanted - 1). */
    while (pool.started + 1 < count) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attributes, worker_main, NULL);
        pthread_attr_destroy(&attributes);
        if (failed) break;
        pool.started++;
    }
    atomic_store_explicit(&pool.wanted, pool.started + 1 < count ? pool.started + 1 : count, memory_order_release);
    pthread_mutex_unlock(&pool.resize_mutex);
}

uint32_t rfx_runtime_thread_count(void) {
    return atomic_load_explicit(&pool.wanted, memory_order_acquire);
}

void rfx_runtime_run_jobs(rawfx_slice_job job, void *context, uint32_t job_count) {
    if (job_count == 0 || job == NULL) return;
    uint32_t threads = atomic_load_explicit(&pool.wanted, memory_order_acquire);
    int expected = 0;
    if (threads <= 1 || job_count == 1 || inside_job
        || !atomic_compare_exchange_strong_explicit(&pool.busy, &expected, 1, memory_order_acquire, memory_order_relaxed)) {
        for (uint32_t i = 0; i < job_count; i++) job(context, i);
        return;
    }
    pool.job = job;
    pool.context = context;
    pool.owner = rfx_current_process_context();
    pool.count = job_count;
    atomic_store_explicit(&pool.next, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.running, 1, memory_order_release);
    uint32_t helpers = threads - 1 < job_count - 1 ? threads - 1 : job_count - 1;
    for (uint32_t i = 0; i < helpers; i++) sem_post(&pool.start);
    inside_job = 1;
    take_jobs();
    inside_job = 0;
    while (sem_wait(&pool.finished) != 0) {}
    atomic_store_explicit(&pool.running, 0, memory_order_release);
    /* Workers still inside have no job left; wait for them to leave before the
     * next run rewrites job and context. */
    while (atomic_load_explicit(&pool.inside, memory_order_acquire) != 0) {}
    atomic_store_explicit(&pool.busy, 0, memory_order_release);
}

static uint32_t extension_thread_count(const rawfx_host *host) {
    (void)host;
    return rfx_runtime_thread_count();
}

static rawfx_status extension_run(const rawfx_host *host, rawfx_slice_job job, void *context, uint32_t job_count) {
    if (host == NULL || host->is_process_thread(host) == 0) return RAWFX_ERR_STATE;
    rfx_runtime_run_jobs(job, context, job_count);
    return RAWFX_OK;
}

const rawfx_host_thread_pool rfx_thread_pool_extension = {
    .struct_size = sizeof(rawfx_host_thread_pool),
    .thread_count = extension_thread_count,
    .run = extension_run,
};

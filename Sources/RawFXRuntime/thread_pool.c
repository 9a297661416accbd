/*
 * The thread pool behind "rawfx.thread-pool/1": N - 1 worker threads plus the
 * caller. One run at a time: a run that finds the pool busy (another stream's
 * process thread got there first) runs its jobs inline instead of waiting, so
 * no process thread ever blocks on another.
 *
 * Wake-ups: a sleeping thread of a VM takes as long to run again after a
 * semaphore post (vCPU halt and IPI) as a slice of a 720p rotate takes to run,
 * so a pool that only slept gave no speedup. Each thread therefore spins for SPIN_NANOSECONDS before it
 * sleeps: a worker after a run (the chain's next filter runs within
 * microseconds, a frame's first one wakes it from sleep), the caller waiting
 * for the last job. Sleeping is on POSIX semaphores (futexes), and a run posts
 * only the workers that announced they sleep (`sleepers`), so a run whose
 * workers are spinning makes no system call. A spinning thread calls
 * sched_yield between looks, so that it never holds a CPU that another runnable
 * thread (an isolated stage's helper) is waiting for.
 */
#include "rawfx_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 64
/* How long a worker spins for the next run, and the caller for the last job,
 * before sleeping: longer than a sleep's wake-up on a VM (above), short enough
 * that an idle stream costs little (one spin per frame and worker). */
#define SPIN_NANOSECONDS 100000

rfx_host_context *rfx_current_process_context(void);
void rfx_set_current_process_context(rfx_host_context *context);

static struct {
    pthread_mutex_t resize_mutex;      /* control side only: starting workers */
    atomic_uint wanted;                /* threads including the caller */
    uint32_t started;                  /* workers running */
    sem_t start;                       /* one post per sleeper a run wakes */
    sem_t finished;                    /* one post per run: the last job done */
    sem_t parked[MAX_THREADS];         /* worker i waits here while i + 1 >= wanted */
    atomic_uint generation;            /* bumped by every run: spinning workers watch it */
    atomic_uint sleepers;              /* workers that announced a sleep on `start` */
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

static uint64_t monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* vDSO: no system call */
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Spins until `ready(argument)` or SPIN_NANOSECONDS have passed; returns ready's last answer. */
static int spin_until(int (*ready)(uint32_t), uint32_t argument) {
    const uint64_t deadline = monotonic_nanoseconds() + SPIN_NANOSECONDS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (ready(argument)) return 1;
            CPU_RELAX();
        }
        if (monotonic_nanoseconds() >= deadline) return ready(argument);
        /* Any other runnable thread on this CPU (an isolated stage's helper, another
         * stream's thread) goes first instead of waiting for a tick; with nothing else
         * runnable this returns at once: a spinning worker no longer starves an isolated
         * stage's helper of its CPU. */
        sched_yield();
    }
}

static int generation_changed(uint32_t seen) { return atomic_load(&pool.generation) != seen; }
static int all_done(uint32_t count) { return atomic_load_explicit(&pool.done, memory_order_acquire) == count; }

static void take_jobs(void) {
    for (;;) {
        uint32_t index = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed);
        if (index >= pool.count) return;
        pool.job(pool.context, index);
        if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_acq_rel) + 1 == pool.count)
            sem_post(&pool.finished);
    }
}

/* Takes back a sleep announced in `sleepers` when no run has counted it yet;
 * returns 0 when a run did (its post is then on the way and must be taken). */
static int withdraw_sleep(void) {
    uint32_t sleepers = atomic_load(&pool.sleepers);
    while (sleepers > 0)
        if (atomic_compare_exchange_weak(&pool.sleepers, &sleepers, sleepers - 1)) return 1;
    return 0;
}

static void *worker_main(void *argument) {
    const uint32_t index = (uint32_t)(uintptr_t)argument; /* 0 for the first worker */
    inside_job = 1;
    /* One behind: a run that began before this thread started, or while it was
     * parked, is joined too (joining checks `running`, so a stale guess costs
     * one look). */
    uint32_t seen = atomic_load(&pool.generation) - 1;
    for (;;) {
        if (index + 1 >= atomic_load(&pool.wanted)) {
            /* Not among the threads wanted now: park until the count grows. */
            sem_wait(&pool.parked[index]);
            seen = atomic_load(&pool.generation) - 1;
            continue;
        }
        if (!spin_until(generation_changed, seen)) {
            /* Announce the sleep, then look once more (a run bumps the
             * generation before it reads `sleepers`: one of the two sees the
             * other). */
            atomic_fetch_add(&pool.sleepers, 1);
            if (!generation_changed(seen) || !withdraw_sleep()) sem_wait(&pool.start);
        }
        seen = atomic_load(&pool.generation);
        if (index + 1 >= atomic_load(&pool.wanted)) continue; /* lowered while asleep */
        /* Dekker with the end of a run: either the caller sees us inside, or
         * we see running == 0 (or a later run's 1, its fields already set). */
        atomic_fetch_add(&pool.inside, 1);
        if (atomic_load(&pool.running)) {
            rfx_set_current_process_context(pool.owner);
            take_jobs();
            rfx_set_current_process_context(NULL);
        }
        atomic_fetch_sub(&pool.inside, 1);
    }
    return NULL;
}

static pthread_once_t semaphores_once = PTHREAD_ONCE_INIT;
static void init_semaphores(void) {
    sem_init(&pool.start, 0, 0);
    sem_init(&pool.finished, 0, 0);
    for (int i = 0; i < MAX_THREADS; i++) sem_init(&pool.parked[i], 0, 0);
}

void rfx_runtime_set_thread_count(uint32_t count) {
    if (count < 1) count = 1;
    if (count > MAX_THREADS) count = MAX_THREADS;
    pthread_once(&semaphores_once, init_semaphores);
    pthread_mutex_lock(&pool.resize_mutex);
    /* Workers are started here, on the control side, never on a frame path.
     * Workers beyond the new count park on their own semaphore; the ones the
     * new count takes in are posted (a post to a worker that had not parked
     * yet only makes it look at the count once more). */
    while (pool.started + 1 < count) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attributes, worker_main, (void *)(uintptr_t)pool.started);
        pthread_attr_destroy(&attributes);
        if (failed) break;
        pool.started++;
    }
    const uint32_t before = atomic_load(&pool.wanted);
    const uint32_t wanted = pool.started + 1 < count ? pool.started + 1 : count;
    atomic_store(&pool.wanted, wanted);
    for (uint32_t i = before > 0 ? before - 1 : 0; i + 1 < wanted; i++) sem_post(&pool.parked[i]);
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
    atomic_store(&pool.running, 1);
    atomic_fetch_add(&pool.generation, 1);
    /* Wake the workers that went to sleep; spinning ones have seen the generation. */
    for (uint32_t sleepers = atomic_exchange(&pool.sleepers, 0); sleepers > 0; sleepers--) sem_post(&pool.start);
    inside_job = 1;
    take_jobs();
    inside_job = 0;
    /* The last job's post is taken either way, so the semaphore stays balanced. */
    spin_until(all_done, job_count);
    while (sem_wait(&pool.finished) != 0) {}
    atomic_store(&pool.running, 0);
    /* Workers still inside have no job left; wait for them to leave before the
     * next run rewrites job and context. */
    while (atomic_load(&pool.inside) != 0) CPU_RELAX();
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

/* Counts what a real-time call must not do besides allocating (rawfx.h: [real-time]):
 * take a lock or wait, sleep, open or write a file (blocking I/O), start a thread.
 *
 * The executable that links this target interposes the libc functions below; they count
 * only on a thread whose "in a real-time call" flag is set (rawfx_rt_set), so everything
 * else in the process pays one thread-local test. `rawfx validate` sets the flag around
 * every process, reset and real-time set_param it makes, and clears it while the plugin is
 * inside a host function (the host's own locks are the host's business).
 *
 * Counted:
 *   locks   pthread_mutex_lock, pthread_rwlock_rdlock/wrlock, pthread_spin_lock (any call);
 *           sem_wait, sem_timedwait and pthread_cond_wait/timedwait when they block (a
 *           sem_wait that a sem_trywait would have passed is not counted), and
 *           syscall(SYS_futex, FUTEX_WAIT...) (a futex wait)
 *   sleeps  nanosleep, clock_nanosleep, usleep, sleep
 *   io      open, open64, openat, fopen, fopen64, write, fwrite, fputs, puts, printf,
 *           fprintf, vprintf, vfprintf, fflush
 *   threads pthread_create
 *
 * Under AddressSanitizer or ThreadSanitizer the sanitizer intercepts these functions
 * itself: nothing is interposed there and rawfx_rt_counter_active() answers 0. */
#ifndef RAWFX_RT_COUNTER_H
#define RAWFX_RT_COUNTER_H
#include <stdint.h>

typedef struct rawfx_rt_counts {
    uint64_t locks;
    uint64_t sleeps;
    uint64_t ios;
    uint64_t threads;
    /* The function of the first counted call of each kind on this thread since the last
     * rawfx_rt_take (a string literal, or NULL). */
    const char *first_locks;
    const char *first_sleeps;
    const char *first_ios;
    const char *first_threads;
} rawfx_rt_counts;

/* Sets the calling thread's "in a real-time call" flag; returns the previous value. */
int rawfx_rt_set(int on);

/* The calling thread's counts since the last call, and zeroes them. */
rawfx_rt_counts rawfx_rt_take(void);

/* 1 when the interposed functions are the ones the process calls (probed with a counted
 * nanosleep of 0 ns); 0 under a sanitizer or when another library won the binding. */
int rawfx_rt_counter_active(void);

#endif

/* Interposes the libc functions a real-time call must not use and counts them on a thread
 * whose flag is set (rawfx_rt_counter.h). The real functions are reached through glibc's
 * exported aliases where it has them, else dlsym(RTLD_NEXT), resolved once. */
#define _GNU_SOURCE
#include "rawfx_rt_counter.h"
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RAWFX_RT_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RAWFX_RT_UNDER_SANITIZER 1
#endif

static __thread int in_real_time;
static __thread rawfx_rt_counts counts;

int rawfx_rt_set(int on) {
    int previous = in_real_time;
    in_real_time = on;
    return previous;
}

rawfx_rt_counts rawfx_rt_take(void) {
    rawfx_rt_counts taken = counts;
    counts = (rawfx_rt_counts){0};
    return taken;
}

#ifdef RAWFX_RT_UNDER_SANITIZER

int rawfx_rt_counter_active(void) { return 0; }

#else
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define COUNT(kind, name)                                                                       \
    do {                                                                                        \
        if (in_real_time) {                                                                     \
            counts.kind++;                                                                      \
            if (counts.first_##kind == NULL) counts.first_##kind = name;                        \
        }                                                                                       \
    } while (0)

/* The next definitions after this executable's, resolved before main (dlsym allocates: not
 * inside a counted call). */
static int (*real_pthread_mutex_lock)(pthread_mutex_t *);
static int (*real_pthread_rwlock_rdlock)(pthread_rwlock_t *);
static int (*real_pthread_rwlock_wrlock)(pthread_rwlock_t *);
static int (*real_pthread_spin_lock)(pthread_spinlock_t *);
static int (*real_pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_sem_wait)(sem_t *);
static int (*real_sem_trywait)(sem_t *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static long (*real_syscall)(long, ...);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
static unsigned int (*real_sleep)(unsigned int);
static int (*real_openat)(int, const char *, int, ...);
static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);
static int (*real_fputs)(const char *, FILE *);
static int (*real_puts)(const char *);
static int (*real_fflush)(FILE *);
static int (*real_vfprintf)(FILE *, const char *, va_list);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Also resolved on first use: a library's constructor may call one before this one runs. */
#define R(name) (real_##name ? real_##name : (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)))

__attribute__((constructor(101))) static void resolve_real_functions(void) {
    real_pthread_mutex_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real_pthread_rwlock_rdlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
    real_pthread_rwlock_wrlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
    real_pthread_spin_lock = (int (*)(pthread_spinlock_t *))dlsym(RTLD_NEXT, "pthread_spin_lock");
    real_pthread_cond_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_cond_wait");
    real_pthread_cond_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    real_sem_wait = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_wait");
    real_sem_trywait = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_trywait");
    real_sem_timedwait = (int (*)(sem_t *, const struct timespec *))dlsym(RTLD_NEXT, "sem_timedwait");
    real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    real_clock_nanosleep = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "clock_nanosleep");
    real_sleep = (unsigned int (*)(unsigned int))dlsym(RTLD_NEXT, "sleep");
    real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    real_fopen = (FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen");
    real_fopen64 = (FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen64");
    real_fwrite = (size_t (*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
    real_fputs = (int (*)(const char *, FILE *))dlsym(RTLD_NEXT, "fputs");
    real_puts = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
    real_fflush = (int (*)(FILE *))dlsym(RTLD_NEXT, "fflush");
    real_vfprintf = (int (*)(FILE *, const char *, va_list))dlsym(RTLD_NEXT, "vfprintf");
    real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
}

extern int __nanosleep(const struct timespec *, struct timespec *);
extern int __open(const char *, int, ...);
extern ssize_t __write(int, const void *, size_t);

/* A counted lock of one argument, passed on to the real function. */
#define COUNTED_LOCK(name, type)                                                                \
    __attribute__((visibility("default"))) int name(type *lock) {                              \
        COUNT(locks, #name);                                                                    \
        return R(name)(lock);                                                                   \
    }
COUNTED_LOCK(pthread_mutex_lock, pthread_mutex_t)
COUNTED_LOCK(pthread_rwlock_rdlock, pthread_rwlock_t)
COUNTED_LOCK(pthread_rwlock_wrlock, pthread_rwlock_t)
COUNTED_LOCK(pthread_spin_lock, pthread_spinlock_t)
__attribute__((visibility("default"))) int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex) {
    COUNT(locks, "pthread_cond_wait");
    return R(pthread_cond_wait)(cond, mutex);
}
__attribute__((visibility("default"))) int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                                                  const struct timespec *until) {
    COUNT(locks, "pthread_cond_timedwait");
    return R(pthread_cond_timedwait)(cond, mutex, until);
}
/* A semaphore a trywait passes did not block: a lock-free hand-over signals with sem_post
 * and may consume a result that is ready. Only a wait that would block is counted. */
__attribute__((visibility("default"))) int sem_wait(sem_t *sem) {
    if (in_real_time) {
        if (R(sem_trywait)(sem) == 0) return 0;
        COUNT(locks, "sem_wait (blocked)");
    }
    return R(sem_wait)(sem);
}
__attribute__((visibility("default"))) int sem_timedwait(sem_t *sem, const struct timespec *until) {
    if (in_real_time) {
        if (R(sem_trywait)(sem) == 0) return 0;
        COUNT(locks, "sem_timedwait (blocked)");
    }
    return R(sem_timedwait)(sem, until);
}
__attribute__((visibility("default"))) long syscall(long number, ...) {
    va_list list;
    va_start(list, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(list, long);
    va_end(list);
    if (number == SYS_futex && in_real_time) {
        int op = (int)a[1] & FUTEX_CMD_MASK;
        if (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET || op == FUTEX_LOCK_PI || op == FUTEX_WAIT_REQUEUE_PI)
            COUNT(locks, "futex wait");
    }
    return R(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

__attribute__((visibility("default"))) int nanosleep(const struct timespec *duration, struct timespec *left) {
    COUNT(sleeps, "nanosleep");
    return __nanosleep(duration, left);
}
__attribute__((visibility("default"))) int clock_nanosleep(clockid_t clock, int flags, const struct timespec *t,
                                                           struct timespec *left) {
    COUNT(sleeps, "clock_nanosleep");
    return R(clock_nanosleep)(clock, flags, t, left);
}
__attribute__((visibility("default"))) int usleep(useconds_t microseconds) {
    COUNT(sleeps, "usleep");
    struct timespec t = { (time_t)(microseconds / 1000000u), (long)(microseconds % 1000000u) * 1000L };
    return __nanosleep(&t, NULL);
}
__attribute__((visibility("default"))) unsigned int sleep(unsigned int seconds) {
    COUNT(sleeps, "sleep");
    return R(sleep)(seconds);
}

/* The mode argument of open: present only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(last, flags, mode)                                                            \
    unsigned mode = 0;                                                                          \
    if ((flags) & (O_CREAT | O_TMPFILE)) {                                                      \
        va_list list;                                                                           \
        va_start(list, last);                                                                   \
        mode = va_arg(list, unsigned);                                                          \
        va_end(list);                                                                           \
    }

__attribute__((visibility("default"))) int open(const char *path, int flags, ...) {
    COUNT(ios, "open");
    OPEN_MODE(flags, flags, mode);
    return __open(path, flags, mode);
}
__attribute__((visibility("default"))) int open64(const char *path, int flags, ...) {
    COUNT(ios, "open64");
    OPEN_MODE(flags, flags, mode);
    return __open(path, flags, mode);
}
__attribute__((visibility("default"))) int openat(int directory, const char *path, int flags, ...) {
    COUNT(ios, "openat");
    OPEN_MODE(flags, flags, mode);
    return R(openat)(directory, path, flags, mode);
}
__attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode) {
    COUNT(ios, "fopen");
    return R(fopen)(path, mode);
}
__attribute__((visibility("default"))) FILE *fopen64(const char *path, const char *mode) {
    COUNT(ios, "fopen64");
    return R(fopen64)(path, mode);
}
__attribute__((visibility("default"))) ssize_t write(int fd, const void *bytes, size_t count) {
    COUNT(ios, "write");
    return __write(fd, bytes, count);
}
__attribute__((visibility("default"))) size_t fwrite(const void *bytes, size_t size, size_t count, FILE *file) {
    COUNT(ios, "fwrite");
    return R(fwrite)(bytes, size, count, file);
}
__attribute__((visibility("default"))) int fputs(const char *text, FILE *file) {
    COUNT(ios, "fputs");
    return R(fputs)(text, file);
}
__attribute__((visibility("default"))) int puts(const char *text) {
    COUNT(ios, "puts");
    return R(puts)(text);
}
__attribute__((visibility("default"))) int fflush(FILE *file) {
    COUNT(ios, "fflush");
    return R(fflush)(file);
}
__attribute__((visibility("default"))) int vfprintf(FILE *file, const char *format, va_list list) {
    COUNT(ios, "vfprintf");
    return R(vfprintf)(file, format, list);
}
__attribute__((visibility("default"))) int vprintf(const char *format, va_list list) {
    COUNT(ios, "vprintf");
    return R(vfprintf)(stdout, format, list);
}
static int vfprintf_uncounted(FILE *file, const char *format, va_list list) { return R(vfprintf)(file, format, list); }
__attribute__((visibility("default"))) int fprintf(FILE *file, const char *format, ...) {
    COUNT(ios, "fprintf");
    va_list list;
    va_start(list, format);
    int n = R(vfprintf)(file, format, list);
    va_end(list);
    return n;
}
__attribute__((visibility("default"))) int printf(const char *format, ...) {
    COUNT(ios, "printf");
    va_list list;
    va_start(list, format);
    int n = vfprintf_uncounted(stdout, format, list);
    va_end(list);
    return n;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *thread, const pthread_attr_t *attributes,
                                                          void *(*start)(void *), void *argument) {
    COUNT(threads, "pthread_create");
    return R(pthread_create)(thread, attributes, start, argument);
}

int rawfx_rt_counter_active(void) {
    int previous = rawfx_rt_set(1);
    rawfx_rt_counts saved = rawfx_rt_take();
    struct timespec zero = {0, 0};
    int (*volatile call)(const struct timespec *, struct timespec *) = nanosleep; /* through the PLT */
    call(&zero, NULL);
    int seen = rawfx_rt_take().sleeps > 0;
    counts = saved;
    rawfx_rt_set(previous);
    return seen;
}
#endif

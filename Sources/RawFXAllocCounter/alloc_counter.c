/* Counts the calling thread's heap allocations.
 *
 * Normal builds interpose malloc and friends; glibc exports __libc_* entry
 * points, so the real allocator is reached without dlsym (which itself
 * allocates).
 *
 * Under AddressSanitizer or ThreadSanitizer the sanitizer owns the allocator:
 * interposing would hand it blocks it never saw (TSan crashes at start). There
 * the counter uses the sanitizer's own malloc hook instead, which sees the same
 * calls, so allocation tests keep running under sanitizers. */
#include "rawfx_alloc_counter.h"
#include <stddef.h>
#include <stdlib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RAWFX_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RAWFX_UNDER_SANITIZER 1
#endif

static __thread uint64_t thread_allocations;
/* Per thread: the probe below and the allocation it makes are on one thread, and a
 * shared flag written by every allocation would be a data race. */
static __thread int counter_seen;

#ifdef RAWFX_UNDER_SANITIZER
#include <sanitizer/allocator_interface.h>

/* Runs for every user allocation (malloc, calloc, realloc, memalign, ...). */
static void count_allocation(const volatile void *pointer, size_t size) {
    (void)pointer;
    (void)size;
    thread_allocations++;
    counter_seen = 1;
}
static void ignore_free(const volatile void *pointer) { (void)pointer; }

/* Installed before main, so every allocation the tests measure is seen. A
 * runtime with no room for another hook returns 0: the counter then reports
 * itself inactive and allocation checks skip. */
__attribute__((constructor)) static void install_hooks(void) {
    __sanitizer_install_malloc_and_free_hooks(count_allocation, ignore_free);
}

#else
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

__attribute__((visibility("default"))) void *malloc(size_t size) {
    thread_allocations++;
    counter_seen = 1;
    return __libc_malloc(size);
}
__attribute__((visibility("default"))) void *calloc(size_t count, size_t size) {
    thread_allocations++;
    return __libc_calloc(count, size);
}
__attribute__((visibility("default"))) void *realloc(void *pointer, size_t size) {
    thread_allocations++;
    return __libc_realloc(pointer, size);
}
__attribute__((visibility("default"))) void free(void *pointer) { __libc_free(pointer); }
__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size) {
    thread_allocations++;
    return __libc_memalign(alignment, size);
}
__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    thread_allocations++;
    return __libc_memalign(alignment, size);
}
__attribute__((visibility("default"))) int posix_memalign(void **out, size_t alignment, size_t size) {
    thread_allocations++;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *out = pointer;
    return 0;
}
#endif

int rawfx_built_with_sanitizer(void) {
#ifdef RAWFX_UNDER_SANITIZER
    return 1;
#else
    return 0;
#endif
}

uint64_t rawfx_thread_allocation_count(void) { return thread_allocations; }

int rawfx_allocation_counter_active(void) {
    counter_seen = 0;
    void *volatile probe = malloc(1); /* through the PLT: whichever malloc the process binds */
    free(probe);
    return counter_seen;
}

/* malloc interposition for counting. glibc exports __libc_* entry points, so
 * the real allocator is reached without dlsym (which itself allocates). */
#include "rawfx_alloc_counter.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread uint64_t thread_allocations;
static volatile int interposer_seen;

__attribute__((visibility("default"))) void *malloc(size_t size) {
    thread_allocations++;
    interposer_seen = 1;
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

uint64_t rawfx_thread_allocation_count(void) { return thread_allocations; }

int rawfx_allocation_counter_active(void) {
    interposer_seen = 0;
    void *volatile probe = malloc(1); /* through the PLT: whichever malloc the process binds */
    free(probe);
    return interposer_seen;
}

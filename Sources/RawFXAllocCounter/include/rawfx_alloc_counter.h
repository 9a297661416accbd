/* Counts heap allocations made by the calling thread, by interposing malloc and
 * friends in the executable that links this target (tests and bench only); under
 * AddressSanitizer or ThreadSanitizer, through the sanitizer's malloc hook.
 * Deterministic: counts calls, not bytes or time. */
#ifndef RAWFX_ALLOC_COUNTER_H
#define RAWFX_ALLOC_COUNTER_H
#include <stdint.h>

/* Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
 * memalign) made so far by the calling thread. */
uint64_t rawfx_thread_allocation_count(void);

/* 1 when the counter sees this process's allocations (the interposer's malloc
 * is the one the process uses, or the sanitizer hook is installed); 0 means
 * counts are meaningless. */
int rawfx_allocation_counter_active(void);

/* 1 when this target was built under AddressSanitizer or ThreadSanitizer: the
 * sanitizer owns the heap (ASan keeps freed blocks in quarantine, so resident
 * memory is not the program's own). */
int rawfx_built_with_sanitizer(void);

#endif

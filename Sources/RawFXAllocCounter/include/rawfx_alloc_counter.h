/* Counts heap allocations made by the calling thread, by interposing malloc and
 * friends in the executable that links this target (tests and bench only).
 * Deterministic: counts calls, not bytes or time. */
#ifndef RAWFX_ALLOC_COUNTER_H
#define RAWFX_ALLOC_COUNTER_H
#include <stdint.h>

/* Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
 * memalign) made so far by the calling thread. */
uint64_t rawfx_thread_allocation_count(void);

/* 1 when the interposer is active in this process (its malloc is the one the
 * process uses); 0 means counts are meaningless. */
int rawfx_allocation_counter_active(void);

#endif

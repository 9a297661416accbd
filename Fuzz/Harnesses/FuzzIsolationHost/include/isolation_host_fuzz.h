/* The host's side of an isolated stage against a hostile helper simulated in process
 * (isolation_host_fuzz.c; the FuzzIsolationProtocol harness). */
#ifndef RAWFX_ISOLATION_HOST_FUZZ_H
#define RAWFX_ISOLATION_HOST_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input: 0, or aborts (an oracle failed; AddressSanitizer reports memory errors). */
int rfx_fuzz_isolation_host(const uint8_t *data, size_t size);

#endif

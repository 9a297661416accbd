/*
 * rawfx_isolate_helper.h — the helper's half of an isolated stage: what only the
 * rawfx-isolate executable runs (docs/isolation.md). Its end of the channel (waiting for a
 * command, replying), the forwarding of its log lines into the control block, and least
 * privilege (no_new_privs, the death signal, the strict seccomp filter). The engine does not
 * link this target; the channel's layout both sides agree on is rawfx_iso_channel.h.
 */
#ifndef RAWFX_ISOLATE_HELPER_H
#define RAWFX_ISOLATE_HELPER_H

#include "rawfx_iso_channel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* [helper] Waits for the next command (request_seq != reply_seq); returns it. */
uint32_t rfx_iso_helper_wait(rfx_iso_control *control);
/* [helper] Publishes the reply to the command being served. */
void rfx_iso_helper_reply(rfx_iso_control *control, int32_t status);
/* [helper] From now on every line logged in the helper (the plugins' host objects, the
 * loader) goes into `control`'s log ring instead of the helper's stderr. Call again after the
 * control block is mapped anew. */
void rfx_iso_helper_forward_log(rfx_iso_control *control);
/* [helper] Least privilege before the plugin loads: no new privileges, die with
 * the host's supervisor thread. Returns 0, or -1 when the kernel refuses. */
int rfx_iso_helper_restrict(void);
/* [helper] Installs the default seccomp filter, which every helper gets: a signal only to
 * itself or its own process group (it leads its own session), no tkill, pidfd signals,
 * ptrace or process_vm_* (EPERM), and no setsid or setpgid, so the children it starts stay
 * in its group and die with it. Everything else a plugin needs stays allowed. Call before any
 * plugin code runs, on the only thread. Returns 0, or -1 with errno when the kernel refuses. */
int rfx_iso_helper_seccomp_default(void);
/* [helper] Installs the strict seccomp filter (`@isolate(seccomp=strict)`, docs/isolation.md):
 * an allow-list of what filters need (memory, threads, futex, clocks, files, signals to itself,
 * exit); any other system call (exec, fork, sockets, ptrace, ...) kills the helper
 * (SECCOMP_RET_KILL_PROCESS), which the host counts as a fault. Call before any plugin code
 * runs, on the only thread. Returns 0, or -1 with errno when the kernel refuses. */
int rfx_iso_helper_seccomp_strict(void);

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_ISOLATE_HELPER_H */

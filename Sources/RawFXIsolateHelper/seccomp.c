/*
 * seccomp.c — a helper's seccomp filters (rawfx_isolate_helper.h, docs/isolation.md): the
 * default one, which keeps the helper's signals and debugging calls inside its own session,
 * and the strict allow-list of `@isolate(seccomp=strict)`.
 */
#define _GNU_SOURCE
#include "rawfx_isolate_helper.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>


#if defined(__x86_64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* What a filter legitimately does in a helper: memory, threads and their futexes, clocks,
 * files (a plugin loads its libraries at HELLO, a watermark its image at configure), polling
 * descriptors it holds, signals to itself, exit. Not in the list, hence fatal: exec, fork,
 * sockets, ptrace, process_vm_*, mount, chmod, unlink, rename, kill of another process, ... */
static const int strict_allowed[] = {
    __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_pwrite64, __NR_lseek,
    __NR_close, __NR_dup, __NR_dup3, __NR_fcntl, __NR_fstat, __NR_newfstatat, __NR_statx,
    __NR_fstatfs, __NR_statfs, __NR_openat, __NR_faccessat, __NR_readlinkat, __NR_getdents64,
    __NR_getcwd, __NR_ftruncate, __NR_memfd_create, __NR_pipe2, __NR_eventfd2, __NR_ppoll,
    __NR_mmap, __NR_munmap, __NR_mprotect, __NR_mremap, __NR_madvise, __NR_brk, __NR_msync,
    __NR_mincore, __NR_membarrier,
    __NR_futex, __NR_get_robust_list, __NR_set_robust_list, __NR_set_tid_address,
    __NR_clock_gettime, __NR_clock_getres, __NR_clock_nanosleep, __NR_nanosleep, __NR_gettimeofday,
    __NR_sched_yield, __NR_getcpu, __NR_sched_getaffinity, __NR_sched_getparam, __NR_sched_getscheduler,
    __NR_getpriority, __NR_getpid, __NR_gettid, __NR_getppid, __NR_getuid, __NR_geteuid,
    __NR_getgid, __NR_getegid, __NR_getresuid, __NR_getresgid, __NR_getrandom,
    __NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_sigaltstack,
    __NR_exit, __NR_exit_group, __NR_prlimit64, __NR_uname, __NR_sysinfo, __NR_getrusage, __NR_times,
#ifdef __NR_faccessat2
    __NR_faccessat2,
#endif
#ifdef __NR_rseq
    __NR_rseq,
#endif
#ifdef __NR_futex_waitv
    __NR_futex_waitv,
#endif
#if defined(__x86_64__)
    __NR_open, __NR_stat, __NR_lstat, __NR_access, __NR_readlink, __NR_dup2, __NR_poll, __NR_pipe,
    __NR_getrlimit, __NR_arch_prctl, __NR_time, __NR_select,
#endif
};

#define BPF_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define BPF_KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define BPF_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))
#define BPF_LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(field))
#define BPF_ARG_LO(n) BPF_LOAD(offsetof(struct seccomp_data, args[n]))
/* if (A == value) skip `t` instructions else skip `f` */
#define BPF_IF_EQ(value, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(value), t, f)

int rfx_iso_helper_seccomp_default(void) {
#ifndef ISO_AUDIT_ARCH
    errno = ENOSYS;
    return -1;
#else
    /* The helper leads its own session and process group (the host spawns it so), so its
     * pid is also its group's id; its children stay in that group, since setsid and
     * setpgid are refused below, and die with it (the supervisor kills the group). */
    const uint32_t self = (uint32_t)getpid(), own_group = (uint32_t)-(int32_t)getpid();
    struct sock_filter program[64];
    size_t n = 0;
#define EMIT(instruction) program[n++] = (struct sock_filter)instruction
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, arch)));
    EMIT(BPF_IF_EQ(ISO_AUDIT_ARCH, 1, 0));
    EMIT(BPF_ERRNO(ENOSYS));
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* x32 */, 0, 1));
    EMIT(BPF_ERRNO(ENOSYS));
#endif
    /* kill: itself, its own group (0, or minus its pid), nothing else: never the host or its
     * group. tgkill and the sigqueue calls: its own threads only. */
    EMIT(BPF_IF_EQ(__NR_kill, 0, 6));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(self, 3, 0));
    EMIT(BPF_IF_EQ(0, 2, 0));
    EMIT(BPF_IF_EQ(own_group, 1, 0));
    EMIT(BPF_ERRNO(EPERM));
    EMIT(BPF_ALLOW);
    EMIT(BPF_IF_EQ(__NR_tgkill, 2, 0));
    EMIT(BPF_IF_EQ(__NR_rt_sigqueueinfo, 1, 0));
    EMIT(BPF_IF_EQ(__NR_rt_tgsigqueueinfo, 0, 4));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(self, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_ERRNO(EPERM));
    /* Refused outright: signals by thread id alone or through a pidfd, reading or writing
     * another process, and leaving the group (which would let a child outlive the helper). */
    static const int refused[] = {
        __NR_tkill, __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_setsid, __NR_setpgid,
#ifdef __NR_pidfd_send_signal
        __NR_pidfd_send_signal,
#endif
#ifdef __NR_pidfd_open
        __NR_pidfd_open,
#endif
#ifdef __NR_pidfd_getfd
        __NR_pidfd_getfd,
#endif
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        EMIT(BPF_IF_EQ(refused[k], 0, 1));
        EMIT(BPF_ERRNO(EPERM));
    }
    EMIT(BPF_ALLOW);
#undef EMIT
    struct sock_fprog fprog = { (unsigned short)n, program };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
#endif
}

int rfx_iso_helper_seccomp_strict(void) {
#ifndef ISO_AUDIT_ARCH
    errno = ENOSYS;
    return -1;
#else
    enum { ALLOWED = sizeof strict_allowed / sizeof strict_allowed[0] };
    const uint32_t self = (uint32_t)getpid();
    struct sock_filter program[2 * ALLOWED + 48];
    size_t n = 0;
#define EMIT(instruction) program[n++] = (struct sock_filter)instruction
    /* Another architecture's numbering (a 32-bit entry point) would bypass the list. */
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, arch)));
    EMIT(BPF_IF_EQ(ISO_AUDIT_ARCH, 1, 0));
    EMIT(BPF_KILL);
    EMIT(BPF_LOAD(offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* x32 */, 0, 1));
    EMIT(BPF_KILL);
#endif
    for (size_t k = 0; k < ALLOWED; k++) {
        EMIT(BPF_IF_EQ(strict_allowed[k], 0, 1));
        EMIT(BPF_ALLOW);
    }
    /* Threads, not processes: clone only with CLONE_THREAD; clone3 (whose flags sit in
     * memory BPF cannot read) answers ENOSYS, and glibc falls back to clone. */
    EMIT(BPF_IF_EQ(__NR_clone, 0, 4));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_KILL);
#ifdef __NR_clone3
    EMIT(BPF_IF_EQ(__NR_clone3, 0, 1));
    EMIT(BPF_ERRNO(ENOSYS));
#endif
    /* Signals to itself only (raise, abort, pthread_kill): never to the host, whose
     * process group the helper shares. */
    EMIT(BPF_IF_EQ(__NR_kill, 1, 0));
    EMIT(BPF_IF_EQ(__NR_tgkill, 0, 4));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(self, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_KILL);
    /* Naming threads and mappings; any other prctl (undoing the death signal, ...) is refused. */
    EMIT(BPF_IF_EQ(__NR_prctl, 0, 6));
    EMIT(BPF_ARG_LO(0));
    EMIT(BPF_IF_EQ(PR_SET_NAME, 2, 0));
    EMIT(BPF_IF_EQ(PR_GET_NAME, 1, 0));
    EMIT(BPF_IF_EQ(0x53564d41 /* PR_SET_VMA */, 0, 1));
    EMIT(BPF_ALLOW);
    EMIT(BPF_ERRNO(EPERM));
    /* isatty and friends: no terminal here. A plugin may stack a stricter filter, never a wider one. */
    EMIT(BPF_IF_EQ(__NR_ioctl, 0, 1));
    EMIT(BPF_ERRNO(ENOTTY));
    EMIT(BPF_IF_EQ(__NR_seccomp, 0, 1));
    EMIT(BPF_ERRNO(EPERM));
    EMIT(BPF_KILL);
#undef EMIT
    struct sock_fprog fprog = { (unsigned short)n, program };
    /* NO_NEW_PRIVS (set by rfx_iso_helper_restrict, again here for a caller alone) lets an
     * unprivileged process install it; filters only stack, so a plugin cannot widen it. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
#endif
}

/*
 * iso_supervisor.c — the helper's life: the supervisor thread of each instance spawns it,
 * brings it up (iso_handshake.c), waits for it to exit, and restarts it with back-off; a
 * fault (a crash, an exit, a hang past the deadline, a broken protocol) is claimed once by
 * whoever sees it first, logged, and the helper taken down.
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* -------------------------------------------------------------- faults -- */

/* A wait status (as waitpid gives) from what waitid saw. */
int iso_wait_status_of(const siginfo_t *info) {
    return info->si_code == CLD_EXITED ? (info->si_status & 0xff) << 8 : (info->si_status & 0x7f);
}

static void describe_exit(int status, int seccomp, char *out, size_t capacity) {
    if (seccomp && WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
        snprintf(out, capacity, "killed by signal %d (%s: a system call the seccomp filter forbids)", SIGSYS, strsignal(SIGSYS));
    else if (WIFSIGNALED(status))
        snprintf(out, capacity, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(out, capacity, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(out, capacity, "stopped");
}

/* [any] Counts and logs this helper's fault once, whoever sees it first. `member` is the
 * group's stage it happened in, -1 when not known (between frames); a stage alone is 0. */
void iso_claim_fault(iso_instance *inst, int member, const char *reason) {
    if (atomic_exchange(&inst->sup.fault_claimed, 1)) return;
    iso_drain_log_before_fault(inst);
    atomic_fetch_add(&inst->counters.faults, 1);
    uint32_t count = inst->type->member_count;
    if (count == 1) member = 0;
    if (member >= 0) atomic_fetch_add(&inst->group.member_faults[member], 1);
    char line[RAWFX_LOG_MESSAGE_MAX];
    if (count == 1)
        snprintf(line, sizeof line, "isolated helper (pid %d) %s: frames pass through unchanged until it restarts",
                 atomic_load(&inst->sup.pid), reason);
    else if (member >= 0)
        snprintf(line, sizeof line, "isolated helper (pid %d) %s in stage %d of %u of its isolation group: "
                 "frames pass through the whole group unchanged until it restarts", atomic_load(&inst->sup.pid), reason, member + 1, count);
    else
        snprintf(line, sizeof line, "isolated helper (pid %d) of an isolation group of %u stages %s: "
                 "frames pass through the whole group unchanged until it restarts", atomic_load(&inst->sup.pid), count, reason);
    iso_log_member_line(inst, member, RAWFX_LOG_WARNING, line);
}


/* The helper and what it started: it leads its own process group (POSIX_SPAWN_SETSID), so
 * minus its pid names them all, children included, for as long as any of them lives. */
static void kill_helper_and_group(int pid) {
    kill(pid, SIGKILL);
    kill(-pid, SIGKILL);
}

/* [process or control] The helper is faulty: down, and killed (it may hang). The
 * pid cannot be reused yet: the supervisor reaps only after in_call drops. */
void iso_take_down_in(iso_instance *inst, int member, const char *reason) {
    iso_claim_fault(inst, member, reason);
    atomic_store(&inst->sup.state, STATE_DOWN);
    int pid = atomic_load(&inst->sup.pid);
    if (pid > 0) kill_helper_and_group(pid);
}

void iso_take_down(iso_instance *inst, const char *reason) { iso_take_down_in(inst, -1, reason); }

/* Takes the helper down after a wait for `what` ended without a reply. */
void iso_fail_wait(iso_instance *inst, int result, const char *what, int64_t timeout_ns) {
    char reason[160];
    if (result == REPLY_DEAD) {
        char how[80];
        describe_exit(inst->sup.exit_status, inst->type->seccomp_strict, how, sizeof how);
        snprintf(reason, sizeof reason, "%s during %s", how, what);
    } else {
        snprintf(reason, sizeof reason, "did not finish %s within the %.2f ms deadline", what, (double)timeout_ns / 1e6);
    }
    iso_take_down_in(inst, iso_running_member(inst), reason);
}

/* ----------------------------------------------------------- the helper -- */

/* [supervisor] Starts one helper: spawn with the memfd as fd 3 and stdout on /dev/null
 * (the host's stdout may be a media pipe). Returns the pid or -1. */
static int spawn_helper(iso_instance *inst) {
    const iso_type *t = inst->type;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, inst->chan.memfd, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    /* Its own session and process group: a signal to the host's group (Ctrl-C in a
     * terminal) does not reach it, and killing its group takes anything it started. */
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
    /* --plugin PATH --filter ID per stage, in the group's order. */
    char *argv[4 * RFX_ISO_GROUP_MAX + 4] = { t->helper_path };
    int argc = 1;
    for (uint32_t k = 0; k < t->member_count; k++) {
        argv[argc++] = "--plugin";
        argv[argc++] = t->members[k].plugin_path;
        argv[argc++] = "--filter";
        argv[argc++] = t->members[k].filter_id;
    }
    if (t->allow_untrusted) argv[argc++] = "--allow-untrusted";
    if (t->seccomp_strict) argv[argc++] = "--seccomp-strict";
    /* The host's environment, with the Swift runtime's crash backtracer off: a plugin's
     * crash is the engine's to report (one log line), not a page on the host's stderr. */
    size_t count = 0;
    while (environ[count]) count++;
    char **environment = calloc(count + 2, sizeof *environment);
    size_t kept = 0;
    for (size_t i = 0; environment && i < count; i++)
        if (strncmp(environ[i], "SWIFT_BACKTRACE=", 16) != 0) environment[kept++] = environ[i];
    if (environment) environment[kept] = "SWIFT_BACKTRACE=enable=no";
    pid_t pid = -1;
    int rc = posix_spawn(&pid, t->helper_path, &actions, &attributes, argv, environment ? environment : environ);
    free(environment);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        snprintf(inst->error, sizeof inst->error, "cannot start the isolation helper %s: %s", t->helper_path, strerror(rc));
        return -1;
    }
    return pid;
}

static void sleep_interruptible(iso_instance *inst, int64_t ns) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t t = (int64_t)until.tv_sec * 1000000000 + until.tv_nsec + ns;
    until.tv_sec = t / 1000000000;
    until.tv_nsec = t % 1000000000;
    while (atomic_load(&inst->sup.state) != STATE_QUIT)
        if (pthread_cond_timedwait(&inst->sup.changed, &inst->sup.lock, &until) == ETIMEDOUT) break;
}

/* [supervisor] Spawn, bring up, wait for the exit, restart with back-off. */
static void *supervise(void *argument) {
    iso_instance *inst = argument;
    iso_channel_on_supervisor();
    int64_t backoff = inst->type->backoff_min_ns;
    int first = 1;
    pthread_mutex_lock(&inst->sup.lock);
    while (atomic_load(&inst->sup.state) != STATE_QUIT) {
        /* A fresh channel: the last helper is reaped, nobody is in a call. */
        iso_channel_renew(&inst->chan, inst->type->pipeline);
        iso_reset_log(inst);
        inst->error[0] = 0;
        int pid = spawn_helper(inst);
        int up = 0;
        if (pid > 0) {
            atomic_store(&inst->sup.pid, pid);
            atomic_store(&inst->sup.fault_claimed, 0);
            up = iso_bring_up(inst);
        }
        int64_t up_since = rfx_iso_now_ns();
        if (up && atomic_load(&inst->sup.state) != STATE_QUIT) {
            if (!first) {
                atomic_fetch_add(&inst->counters.restarts, 1);
                iso_log_line(inst, RAWFX_LOG_INFO, "isolated helper restarted: the stage processes frames again");
            }
            atomic_store(&inst->sup.state, STATE_UP);
        }
        if (first) {
            inst->sup.started = 1;
            inst->sup.start_ok = up;
            first = 0;
            pthread_cond_broadcast(&inst->sup.changed);
        }
        if (pid > 0) {
            if (up) {
                pthread_mutex_unlock(&inst->sup.lock);
                /* Exit seen, not reaped: the pid stays ours while a caller may still signal it. */
                siginfo_t info;
                memset(&info, 0, sizeof info);
                while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
                /* Down, and a caller waiting on the channel (a frame, or a configure that
                 * holds the lock) wakes now rather than at its deadline. */
                int expected_up = STATE_UP;
                atomic_compare_exchange_strong(&inst->sup.state, &expected_up, STATE_DOWN);
                inst->sup.exit_status = iso_wait_status_of(&info);
                rfx_iso_store_release(&inst->chan.control->reply_seq, RFX_ISO_DEAD);
                rfx_iso_futex_wake(&inst->chan.control->reply_seq);
                /* Anything it started goes with it. */
                kill(-pid, SIGKILL);
                pthread_mutex_lock(&inst->sup.lock);
            } else {
                kill_helper_and_group(pid);
            }
            int status = 0;
            while (atomic_load(&inst->sup.in_call)) {
                pthread_mutex_unlock(&inst->sup.lock);
                struct timespec pause = { 0, 200000 };
                nanosleep(&pause, NULL);
                pthread_mutex_lock(&inst->sup.lock);
            }
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            atomic_store(&inst->sup.pid, 0);
            if (up && atomic_load(&inst->sup.state) != STATE_QUIT) {
                char how[80], reason[120];
                describe_exit(status, inst->type->seccomp_strict, how, sizeof how);
                snprintf(reason, sizeof reason, "%s between frames", how);
                iso_claim_fault(inst, -1, reason);
            }
        }
        if (atomic_load(&inst->sup.state) == STATE_QUIT) break;
        /* Back-off: doubled after a helper that did not last a second, reset after one that did. */
        if (up && rfx_iso_now_ns() - up_since > 1000000000) backoff = inst->type->backoff_min_ns;
        sleep_interruptible(inst, backoff);
        backoff = backoff * 2 > inst->type->backoff_max_ns ? inst->type->backoff_max_ns : backoff * 2;
    }
    pthread_mutex_unlock(&inst->sup.lock);
    return NULL;
}

int iso_supervisor_start(iso_instance *inst) {
    if (pthread_create(&inst->sup.thread, NULL, supervise, inst) != 0) return -1;
    while (!inst->sup.started) pthread_cond_wait(&inst->sup.changed, &inst->sup.lock);
    return 0;
}

void iso_supervisor_stop(iso_instance *inst) {
    pthread_mutex_lock(&inst->sup.lock);
    atomic_store(&inst->sup.state, STATE_QUIT);
    int pid = atomic_load(&inst->sup.pid);
    if (pid > 0) kill_helper_and_group(pid);
    pthread_cond_broadcast(&inst->sup.changed);
    pthread_mutex_unlock(&inst->sup.lock);
    pthread_join(inst->sup.thread, NULL);
}

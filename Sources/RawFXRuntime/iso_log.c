/*
 * iso_log.c — the log lines of an isolated stage: the engine's own about it, and the
 * helper's, drained from the control block's log ring (docs/isolation.md, "Log lines") into
 * the engine's log as the plugin's lines. The read position is the host's (iso_log).
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* [any] One engine log line, named by the filter (a group's stage `member`, or its first
 * when it is not known: -1). Real-time: the runtime's ring. */
void iso_log_member_line(iso_instance *inst, int member, rawfx_log_severity severity, const char *message) {
    rfx_runtime_log(severity, member >= 0 ? inst->type->members[member].filter_id : inst->type->filter_id, message);
}

void iso_log_line(iso_instance *inst, rawfx_log_severity severity, const char *message) {
    iso_log_member_line(inst, -1, severity, message);
}

/* The helper's lines and the engine's must come out in the order they happened (a plugin's
 * last words before a crash, then the fault), so a fault's report waits for a drain under way
 * rather than skip it; a drain is a few slot copies. */
static void log_lock(iso_instance *inst) {
    while (atomic_exchange_explicit(&inst->log.draining, 1, memory_order_acquire)) sched_yield();
}
static void log_unlock(iso_instance *inst) { atomic_store_explicit(&inst->log.draining, 0, memory_order_release); }

/* [log.draining held] Forwards what the helper logged into the engine's log (real-time: the
 * runtime's ring), at most one ring's worth, as the plugin's own lines: named by the filter,
 * never as the engine. Nothing of the slot is trusted: the strings are cut and terminated
 * here, the severity and origin clamped. */
static void drain_log_locked(iso_instance *inst) {
    rfx_iso_control *c = inst->chan.control;
    for (uint32_t n = 0; n < RFX_ISO_LOG_SLOTS; n++) {
        const uint32_t position = atomic_load_explicit(&inst->log.dequeue, memory_order_relaxed);
        rfx_iso_log_slot *slot = &c->log[position & (RFX_ISO_LOG_SLOTS - 1)];
        if (rfx_iso_load_acquire(&slot->sequence) != position + 1) break;
        char source[RFX_ISO_LOG_SOURCE_MAX], message[RAWFX_LOG_MESSAGE_MAX];
        memcpy(source, slot->source, sizeof source);
        memcpy(message, slot->message, sizeof message);
        source[sizeof source - 1] = '\0';
        message[sizeof message - 1] = '\0';
        int32_t severity = __atomic_load_n(&slot->severity, __ATOMIC_RELAXED);
        int32_t origin = __atomic_load_n(&slot->origin, __ATOMIC_RELAXED);
        rfx_iso_store_release(&slot->sequence, position + RFX_ISO_LOG_SLOTS);
        atomic_store_explicit(&inst->log.dequeue, position + 1, memory_order_relaxed);
        if (severity < RAWFX_LOG_DEBUG) severity = RAWFX_LOG_DEBUG;
        if (severity > RAWFX_LOG_ERROR) severity = RAWFX_LOG_ERROR;
        rfx_log_origin from = origin == RFX_LOG_PLUGIN_LIBRARY ? RFX_LOG_PLUGIN_LIBRARY : RFX_LOG_PLUGIN_INSTANCE;
        rfx_runtime_log_from(from, (rawfx_log_severity)severity, source[0] ? source : inst->type->filter_id, message);
    }
    uint32_t dropped = __atomic_load_n(&c->log_dropped, __ATOMIC_RELAXED);
    uint32_t seen = atomic_load_explicit(&inst->log.dropped_seen, memory_order_relaxed);
    if (dropped != seen) {
        char line[RAWFX_LOG_MESSAGE_MAX];
        snprintf(line, sizeof line, "the isolated helper dropped %u log lines: its log ring (%u lines) was full",
                 dropped - seen, RFX_ISO_LOG_SLOTS);
        atomic_store_explicit(&inst->log.dropped_seen, dropped, memory_order_relaxed);
        rfx_runtime_log(RAWFX_LOG_WARNING, inst->type->filter_id, line);
    }
}

/* [process, control or supervisor] Forwards the helper's lines, if it logged any (one load of
 * the shared word when it did not); skipped while another thread drains. */
void iso_drain_log(iso_instance *inst) {
    if (__atomic_load_n(&inst->chan.control->log_enqueue, __ATOMIC_RELAXED) == atomic_load_explicit(&inst->log.dequeue, memory_order_relaxed)
        && __atomic_load_n(&inst->chan.control->log_dropped, __ATOMIC_RELAXED)
               == atomic_load_explicit(&inst->log.dropped_seen, memory_order_relaxed)) return;
    if (atomic_exchange_explicit(&inst->log.draining, 1, memory_order_acquire)) return;
    drain_log_locked(inst);
    log_unlock(inst);
}

/* [supervisor, no helper running] An empty ring for the next helper. */
void iso_reset_log(iso_instance *inst) {
    log_lock(inst);
    drain_log_locked(inst); /* the last helper's last lines */
    rfx_iso_control *c = inst->chan.control;
    for (uint32_t i = 0; i < RFX_ISO_LOG_SLOTS; i++) rfx_iso_store_release(&c->log[i].sequence, i);
    __atomic_store_n(&c->log_enqueue, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->log_dropped, 0, __ATOMIC_RELAXED);
    atomic_store_explicit(&inst->log.dequeue, 0, memory_order_relaxed);
    atomic_store_explicit(&inst->log.dropped_seen, 0, memory_order_relaxed);
    log_unlock(inst);
}


/* [any] The helper's last lines before a fault's own line: waits for a drain under way. */
void iso_drain_log_before_fault(iso_instance *inst) {
    log_lock(inst);
    drain_log_locked(inst);
    log_unlock(inst);
}

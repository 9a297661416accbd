/*
 * The rawfx_host objects, the log ring and the service thread.
 *
 * Real-time paths (log, request_reconfigure, request_callback,
 * is_process_thread, enter/leave_process) touch only atomics, a thread-local
 * pointer and sem_post.
 *
 * Locks, in the order they may nest (docs/threading.md):
 *   drain_mutex            the ring's one consumer at a time, and the service
 *                          pass's pinned list; the log sink runs under it;
 *   a context's `control`  held by the engine's control calls on the instance
 *                          (configure, set_param, attach/detach, set_owner) and
 *                          by the service thread around on_callback and the
 *                          reconfigure sink (trylock): what keeps the two apart;
 *   registry_mutex         the list of contexts, and their pins; held for a few
 *                          pointer moves, never while code outside this file
 *                          runs (no log sink, no on_callback, no sink).
 */
#include "rawfx_runtime.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SOURCE_MAX 64
#define RING_SLOTS 1024 /* a power of two */

struct rfx_host_context {
    rawfx_host host;                 /* first: a rawfx_host* is a context* */
    rfx_host_kind kind;
    char source[SOURCE_MAX];
    const rawfx_filter *filter;      /* INSTANCE, once attached */
    void *owner;
    rfx_reconfigure_sink reconfigure_sink;
    pthread_mutex_t control;         /* guards filter, owner and reconfigure_sink (above) */
    atomic_int callback_requested;
    atomic_int reconfigure_requested;
    rfx_host_context *next, *previous; /* the registry */
    int pins;                        /* registry_mutex: service passes working on it */
    int doomed;                      /* registry_mutex: destroyed while pinned; the last unpin frees */
};

/* The context the calling thread is processing (rawfx_runtime.h): set by
 * enter_process and by the thread pool's workers while they run a job of it. */
__thread rfx_host_context *rfx_process_context_of_thread __attribute__((tls_model("initial-exec")));
#define current_context rfx_process_context_of_thread

/* ------------------------------------------------------------- log ring -- */

/* Dmitry Vyukov's bounded MPMC queue: each slot carries a sequence number, so
 * producers claim slots with one CAS and never wait for each other. */
typedef struct log_slot {
    atomic_size_t sequence;
    rawfx_log_severity severity;
    rfx_log_origin origin;
    char source[SOURCE_MAX];
    char message[RAWFX_LOG_MESSAGE_MAX];
} log_slot;

static log_slot ring[RING_SLOTS];
static atomic_size_t ring_enqueue, ring_dequeue; /* dequeue: the service thread only */
static atomic_uint_fast64_t dropped_lines;
static atomic_uint_fast64_t lines_logged, lines_delivered;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t drain_mutex = PTHREAD_MUTEX_INITIALIZER;
static rfx_host_context *registry_head;
static sem_t wake;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static atomic_int service_started;
static atomic_uint_fast64_t service_rounds;  /* completed passes of the service loop */
static pthread_mutex_t sync_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static _Atomic(rfx_log_sink) log_sink;
static _Atomic(rfx_log_forward) log_forward;
static void *_Atomic log_forward_context;

void rfx_runtime_copy_cut(char *destination, size_t capacity, const char *text) {
    size_t n = 0;
    if (text != NULL)
        while (n + 1 < capacity && text[n] != '\0') n++;
    /* Never end inside a UTF-8 sequence. */
    if (text != NULL && text[n] != '\0')
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    if (n > 0) memcpy(destination, text, n);
    destination[n] = '\0';
}

static void wake_service(void) {
    if (atomic_load_explicit(&service_started, memory_order_acquire))
        sem_post(&wake);
}

void rfx_runtime_log(rawfx_log_severity severity, const char *source, const char *message) {
    rfx_runtime_log_from(RFX_LOG_ENGINE, severity, source, message);
}

static void ensure_started(void);

void rfx_runtime_log_from(rfx_log_origin origin, rawfx_log_severity severity, const char *source,
                          const char *message) {
    /* An isolated stage's helper: the line goes to the host now, not through this ring. */
    rfx_log_forward forward = atomic_load_explicit(&log_forward, memory_order_acquire);
    if (forward != NULL) {
        forward(atomic_load_explicit(&log_forward_context, memory_order_relaxed), origin, severity, source, message);
        return;
    }
    /* The ring's slots get their sequence numbers when the service starts: a line logged
     * before that would be wiped and the ring stuck. pthread_once is one acquire load once done. */
    ensure_started();
    size_t position = atomic_load_explicit(&ring_enqueue, memory_order_relaxed);
    log_slot *slot;
    for (;;) {
        slot = &ring[position & (RING_SLOTS - 1)];
        size_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
        intptr_t difference = (intptr_t)sequence - (intptr_t)position;
        if (difference == 0) {
            if (atomic_compare_exchange_weak_explicit(&ring_enqueue, &position, position + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (difference < 0) {
            atomic_fetch_add_explicit(&dropped_lines, 1, memory_order_relaxed);
            return; /* full: drop, never wait */
        } else {
            position = atomic_load_explicit(&ring_enqueue, memory_order_relaxed);
        }
    }
    slot->severity = severity;
    slot->origin = origin;
    rfx_runtime_copy_cut(slot->source, sizeof slot->source, source);
    rfx_runtime_copy_cut(slot->message, sizeof slot->message, message);
    atomic_fetch_add_explicit(&lines_logged, 1, memory_order_relaxed);
    atomic_store_explicit(&slot->sequence, position + 1, memory_order_release);
    wake_service();
}

void rfx_runtime_set_log_forward(rfx_log_forward forward, void *context) {
    atomic_store_explicit(&log_forward_context, context, memory_order_relaxed);
    atomic_store_explicit(&log_forward, forward, memory_order_release);
}

uint64_t rfx_runtime_dropped_log_lines(void) {
    return atomic_load_explicit(&dropped_lines, memory_order_relaxed);
}

void rfx_runtime_set_log_sink(rfx_log_sink sink) {
    atomic_store_explicit(&log_sink, sink, memory_order_release);
}

/* Writes `text` to `out` with every control character (C0, DEL, C1) and bidirectional
 * formatting character escaped, as terminalSafe does in Swift: a plugin's bytes cannot drive
 * the terminal or forge a line. */
static void write_escaped(FILE *out, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        unsigned c = p[0];
        if (c < 0x20 || c == 0x7F) {
            fprintf(out, c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : "\\x%02x", c);
            p++;
        } else if (c == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {                       /* C1 */
            fprintf(out, "\\x%02x", p[1]);
            p += 2;
        } else if (c == 0xD8 && p[1] == 0x9C) {                                        /* U+061C */
            fputs("\\u{61C}", out);
            p += 2;
        } else if (c == 0xE2 && ((p[1] == 0x80 && (p[2] == 0x8E || p[2] == 0x8F || (p[2] >= 0xAA && p[2] <= 0xAE)))
                                 || (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9))) { /* bidi */
            fprintf(out, "\\u{%X}", ((unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F)) | 0x2000);
            p += 3;
        } else {
            fputc((int)c, out);
            p++;
        }
    }
}

/* [service, drain_mutex held] Delivers every line in the ring to the sink. */
static void drain_log(void) {
    for (;;) {
        size_t position = atomic_load_explicit(&ring_dequeue, memory_order_relaxed);
        log_slot *slot = &ring[position & (RING_SLOTS - 1)];
        size_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
        if ((intptr_t)sequence - (intptr_t)(position + 1) < 0) return; /* empty */
        rfx_log_sink sink = atomic_load_explicit(&log_sink, memory_order_acquire);
        if (sink != NULL) sink(slot->severity, slot->origin, slot->source, slot->message);
        else if (slot->severity >= RAWFX_LOG_WARNING) {
            fputs("rawfx: ", stderr);
            write_escaped(stderr, slot->source[0] ? slot->source : "plugin");
            fputs(": ", stderr);
            write_escaped(stderr, slot->message);
            fputc('\n', stderr);
        }
        atomic_store_explicit(&ring_dequeue, position + 1, memory_order_relaxed);
        atomic_store_explicit(&slot->sequence, position + RING_SLOTS, memory_order_release);
        atomic_fetch_add_explicit(&lines_delivered, 1, memory_order_relaxed);
    }
}

/* --------------------------------------------------------- service thread -- */

/* The contexts a pass works on: pinned under registry_mutex, worked on without it.
 * The service thread's own (or, before it starts, sync's under drain_mutex). */
static rfx_host_context **pending;
static size_t pending_capacity;

static void free_context(rfx_host_context *c) {
    pthread_mutex_destroy(&c->control);
    free(c);
}

/* One pass over the contexts with a request. Returns 1 when a request had to wait because a
 * control call held the instance (on_callback and the reconfigure sink never overlap
 * configure, set_param, set_owner or detach): the service thread then tries again shortly.
 * trylock, because a control call may be waiting on the service thread (rfx_runtime_sync). */
static int run_requests(void) {
    int retry = 0;
    size_t count = 0;
    pthread_mutex_lock(&registry_mutex);
    for (rfx_host_context *c = registry_head; c != NULL; c = c->next) {
        if (!atomic_load_explicit(&c->reconfigure_requested, memory_order_acquire)
            && !atomic_load_explicit(&c->callback_requested, memory_order_acquire))
            continue;
        if (count == pending_capacity) {
            size_t capacity = pending_capacity ? 2 * pending_capacity : 64;
            rfx_host_context **grown = realloc(pending, capacity * sizeof *grown);
            if (grown == NULL) { retry = 1; break; } /* the rest wait for the next pass */
            pending = grown;
            pending_capacity = capacity;
        }
        c->pins++;
        pending[count++] = c;
    }
    pthread_mutex_unlock(&registry_mutex);

    for (size_t i = 0; i < count; i++) {
        rfx_host_context *c = pending[i];
        int reconfigure = atomic_load_explicit(&c->reconfigure_requested, memory_order_acquire);
        int callback = atomic_load_explicit(&c->callback_requested, memory_order_acquire);
        if (!reconfigure && !callback) continue;
        if (pthread_mutex_trylock(&c->control) != 0) {
            retry = 1;
            continue;
        }
        if (atomic_exchange_explicit(&c->reconfigure_requested, 0, memory_order_acq_rel) && c->reconfigure_sink)
            c->reconfigure_sink(c->owner, c);
        if (atomic_exchange_explicit(&c->callback_requested, 0, memory_order_acq_rel)) {
            const rawfx_filter *f = c->filter; /* NULL once detached: destroy has begun */
            if (f != NULL && f->struct_size >= offsetof(rawfx_filter, on_callback) + sizeof f->on_callback
                && f->on_callback != NULL)
                f->on_callback(f);
        }
        pthread_mutex_unlock(&c->control);
    }

    pthread_mutex_lock(&registry_mutex);
    size_t doomed = 0;
    for (size_t i = 0; i < count; i++) {
        rfx_host_context *c = pending[i];
        if (--c->pins == 0 && c->doomed) pending[doomed++] = c;
    }
    pthread_mutex_unlock(&registry_mutex);
    for (size_t i = 0; i < doomed; i++) free_context(pending[i]);
    return retry;
}

static void *service_main(void *unused) {
    (void)unused;
    int retry = 0;
    for (;;) {
        if (retry) {
            struct timespec pause = { 0, 1000000 }; /* 1 ms: a control call is running */
            nanosleep(&pause, NULL);
        } else {
            sem_wait(&wake);
        }
        while (sem_trywait(&wake) == 0) {} /* fold a burst of wake-ups into one pass */
        pthread_mutex_lock(&drain_mutex);
        drain_log();
        retry = run_requests();
        pthread_mutex_unlock(&drain_mutex);
        pthread_mutex_lock(&sync_mutex);
        atomic_fetch_add_explicit(&service_rounds, 1, memory_order_release);
        pthread_cond_broadcast(&sync_cond);
        pthread_mutex_unlock(&sync_mutex);
    }
    return NULL;
}

static void start_service(void) {
    for (size_t i = 0; i < RING_SLOTS; i++) atomic_init(&ring[i].sequence, i);
    sem_init(&wake, 0, 0);
    pthread_t thread;
    pthread_attr_t thread_attributes;
    pthread_attr_init(&thread_attributes);
    pthread_attr_setdetachstate(&thread_attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &thread_attributes, service_main, NULL) == 0)
        atomic_store_explicit(&service_started, 1, memory_order_release);
    pthread_attr_destroy(&thread_attributes);
}

static void ensure_started(void) { pthread_once(&start_once, start_service); }

void rfx_runtime_sync(void) {
    ensure_started();
    if (!atomic_load_explicit(&service_started, memory_order_acquire)) {
        pthread_mutex_lock(&drain_mutex);
        drain_log();
        run_requests();
        pthread_mutex_unlock(&drain_mutex);
        return;
    }
    /* Two full passes after this point: the first may have begun before our
     * lines were in the ring. */
    uint64_t target = atomic_load_explicit(&service_rounds, memory_order_acquire) + 2;
    pthread_mutex_lock(&sync_mutex);
    while (atomic_load_explicit(&service_rounds, memory_order_acquire) < target) {
        sem_post(&wake);
        pthread_cond_wait(&sync_cond, &sync_mutex);
    }
    pthread_mutex_unlock(&sync_mutex);
}

/* ------------------------------------------------------- host functions -- */

static rfx_host_context *context_of(const rawfx_host *host) { return (rfx_host_context *)host->host_data; }

static void host_log(const rawfx_host *host, rawfx_log_severity severity, const char *message) {
    if (host == NULL) return;
    rfx_host_context *c = context_of(host);
    rfx_runtime_log_from(c->kind == RFX_HOST_INSTANCE ? RFX_LOG_PLUGIN_INSTANCE : RFX_LOG_PLUGIN_LIBRARY,
                         severity, c->source, message);
}

static void host_request_reconfigure(const rawfx_host *host) {
    if (host == NULL) return;
    rfx_host_context *c = context_of(host);
    if (c->kind != RFX_HOST_INSTANCE) return;
    if (!atomic_exchange_explicit(&c->reconfigure_requested, 1, memory_order_acq_rel)) wake_service();
}

static void host_request_callback(const rawfx_host *host) {
    if (host == NULL) return;
    rfx_host_context *c = context_of(host);
    if (c->kind != RFX_HOST_INSTANCE) return;
    if (!atomic_exchange_explicit(&c->callback_requested, 1, memory_order_acq_rel)) wake_service();
}

static int32_t host_is_process_thread(const rawfx_host *host) {
    return host != NULL && current_context != NULL && current_context == context_of(host);
}

/* Defined in thread_pool.c. */
extern const rawfx_host_thread_pool rfx_thread_pool_extension;

/* The process's render mode: -1 until first asked (then the environment's). */
static _Atomic int render_mode = -1;

void rfx_runtime_set_render_mode(rawfx_render_mode mode) {
    atomic_store_explicit(&render_mode, mode == RAWFX_RENDER_OFFLINE ? RAWFX_RENDER_OFFLINE : RAWFX_RENDER_REALTIME,
                          memory_order_relaxed);
}

rawfx_render_mode rfx_runtime_render_mode(void) {
    int mode = atomic_load_explicit(&render_mode, memory_order_relaxed);
    if (mode < 0) {
        const char *text = getenv("RAWFX_RENDER_MODE");
        mode = text != NULL && strcmp(text, "offline") == 0 ? RAWFX_RENDER_OFFLINE : RAWFX_RENDER_REALTIME;
        int unset = -1;
        atomic_compare_exchange_strong_explicit(&render_mode, &unset, mode, memory_order_relaxed, memory_order_relaxed);
        mode = atomic_load_explicit(&render_mode, memory_order_relaxed);
    }
    return (rawfx_render_mode)mode;
}

static rawfx_render_mode host_render_mode(const rawfx_host *host) {
    (void)host;
    return rfx_runtime_render_mode();
}

static const rawfx_host_render_mode render_mode_extension = {
    .struct_size = sizeof(rawfx_host_render_mode),
    .mode = host_render_mode,
};

static const void *host_get_extension(const rawfx_host *host, const char *id) {
    if (host == NULL || id == NULL) return NULL;
    if (context_of(host)->kind != RFX_HOST_INSTANCE) return NULL;
    if (strcmp(id, RAWFX_EXT_THREAD_POOL) == 0) return &rfx_thread_pool_extension;
    if (strcmp(id, RAWFX_EXT_RENDER_MODE) == 0) return &render_mode_extension;
    return NULL;
}

/* Used by thread_pool.c: the context the calling thread is processing. */
rfx_host_context *rfx_current_process_context(void) { return current_context; }
void rfx_set_current_process_context(rfx_host_context *context) { current_context = context; }

/* ------------------------------------------------------------- contexts -- */

rfx_host_context *rfx_host_context_create(const char *source, rfx_host_kind kind) {
    ensure_started();
    rfx_host_context *c = calloc(1, sizeof *c);
    if (c == NULL) abort();
    c->host.struct_size = sizeof(rawfx_host);
    c->host.abi.major = RAWFX_ABI_MAJOR;
    c->host.abi.minor = RAWFX_ABI_MINOR;
    c->host.name = "rawfx";
    c->host.version = RAWFX_HOST_VERSION_STRING;
    c->host.host_data = c;
    c->host.log = host_log;
    c->host.request_reconfigure = host_request_reconfigure;
    c->host.is_process_thread = host_is_process_thread;
    c->host.get_extension = host_get_extension;
    c->host.request_callback = host_request_callback;
    c->kind = kind;
    pthread_mutex_init(&c->control, NULL);
    rfx_runtime_copy_cut(c->source, sizeof c->source, source);
    pthread_mutex_lock(&registry_mutex);
    c->next = registry_head;
    if (registry_head) registry_head->previous = c;
    registry_head = c;
    pthread_mutex_unlock(&registry_mutex);
    return c;
}

void rfx_host_context_destroy(rfx_host_context *c) {
    if (c == NULL) return;
    pthread_mutex_lock(&registry_mutex);
    if (c->previous) c->previous->next = c->next; else registry_head = c->next;
    if (c->next) c->next->previous = c->previous;
    /* A service pass that pinned it frees it when done (it calls nothing on it: the
     * filter was detached and the owner cleared before this). */
    c->doomed = 1;
    int now = c->pins == 0;
    pthread_mutex_unlock(&registry_mutex);
    if (now) free_context(c);
}

const rawfx_host *rfx_host_context_host(rfx_host_context *c) { return &c->host; }

/* Under the instance's control lock: a detach waits for an on_callback in progress, and
 * none starts after it. */
void rfx_host_context_attach_filter(rfx_host_context *c, const rawfx_filter *filter) {
    pthread_mutex_lock(&c->control);
    c->filter = filter;
    pthread_mutex_unlock(&c->control);
}

void rfx_host_context_set_owner(rfx_host_context *c, void *owner, rfx_reconfigure_sink sink) {
    pthread_mutex_lock(&c->control);
    c->owner = owner;
    c->reconfigure_sink = sink;
    pthread_mutex_unlock(&c->control);
}

void rfx_host_context_lock_control(rfx_host_context *c) { pthread_mutex_lock(&c->control); }
void rfx_host_context_unlock_control(rfx_host_context *c) { pthread_mutex_unlock(&c->control); }


/*
 * iso_group.c — isolation groups (`@isolate(group=NAME)`): one helper runs several stages in
 * order behind the first stage's proxy; each later stage is a shell that passes frames on and
 * hands its parameters to the proxy. A stage's extension (iso_view) names its group's instance
 * and its place: its counters, its negotiation inside the group, its bypass.
 */
#define _GNU_SOURCE
#include "isolation_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counters of a proxy or shell, through its extension pointer (its iso_view). */
void rfx_isolation_read_counters(const void *extension, rfx_isolation_counters *out) {
    const iso_view *view = extension;
    iso_instance *inst = view->inst;
    out->stage_faults = atomic_load(&inst->group.member_faults[view->member]);
    out->group_member = view->member;
    out->group_size = inst->type->member_count;
    out->faults = atomic_load(&inst->counters.faults);
    out->restarts = atomic_load(&inst->counters.restarts);
    out->passthrough = atomic_load(&inst->counters.passthrough);
    out->copied_in = atomic_load(&inst->counters.copied_in);
    out->up = atomic_load(&inst->sup.state) == STATE_UP && !inst->stream.provisional;
    out->pid = atomic_load(&inst->sup.pid);
    out->deadline_ns = inst->stream.deadline_ns;
}

static const rawfx_filter *shell_create_alone(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity);

int32_t rfx_isolation_is_proxy(const rawfx_filter_descriptor *descriptor) {
    return descriptor->create == iso_proxy_create || descriptor->create == shell_create_alone;
}

/* ------------------------------------------------------ group shells -- */

/* A stage of an isolation group after the first: the proxy (stage 0) runs it in the helper.
 * Host side it passes frames on untouched (in place, nothing to do), and its parameters,
 * bypass and counters are its stage's in the proxy. */
typedef struct iso_shell {
    rawfx_filter filter;                /* first: the chain holds a pointer to it */
    iso_instance *owner;
    iso_view view;                      /* the extension: the group's counters, this stage's place */
} iso_shell;

static iso_shell *shell_of(const rawfx_filter *filter) { return (iso_shell *)filter->filter_data; }

static const rawfx_filter *shell_create_alone(const rawfx_filter_descriptor *descriptor, char *error, size_t capacity) {
    snprintf(error, capacity, "%s runs inside an isolation group: only its group makes it", descriptor->id);
    return NULL;
}

static void shell_destroy(const rawfx_filter *filter) { free(shell_of(filter)); }

static rawfx_status shell_set_param(const rawfx_filter *filter, uint32_t index, const rawfx_param_value *value) {
    iso_shell *shell = shell_of(filter);
    const iso_member_type *m = &shell->owner->type->members[shell->view.member];
    if (index >= m->param_count) {
        snprintf(shell->owner->error, sizeof shell->owner->error, "parameter index %u, expected below %u", index, m->param_count);
        return RAWFX_ERR_INVALID_ARGUMENT;
    }
    return iso_proxy_set_param(&shell->owner->filter, m->param_offset + index, value);
}

/* The proxy's output is already this stage's work: the shell passes it on, as negotiated. */
static rawfx_status shell_configure(const rawfx_filter *filter, const rawfx_format *input, rawfx_negotiation *result) {
    (void)filter;
    result->output = *input;
    result->latency = 0;
    return RAWFX_OK;
}

static rawfx_status shell_process_video(const rawfx_filter *filter, const rawfx_video_frame *in, rawfx_video_frame *out) {
    (void)filter; (void)in; (void)out;
    return RAWFX_OK;
}

static void shell_reset(const rawfx_filter *filter) { (void)filter; /* the proxy resets every stage */ }

static const char *shell_get_error(const rawfx_filter *filter) { return shell_of(filter)->owner->error; }

static const void *shell_get_extension(const rawfx_filter *filter, const char *id) {
    if (strcmp(id, RFX_ISOLATION_EXTENSION) == 0) return &shell_of(filter)->view;
    return NULL;
}

rawfx_filter_descriptor *rfx_isolation_shell_descriptor_create(const rawfx_filter_descriptor *real) {
    rawfx_filter_descriptor *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    *d = *real;
    d->struct_size = sizeof *d;
    d->processing = RAWFX_PROCESS_IN_PLACE;
    d->create = shell_create_alone;
    d->create_with_host = NULL;
    return d;
}

const rawfx_filter *rfx_isolation_shell_create(const rawfx_filter_descriptor *descriptor, const rawfx_filter *owner,
                                               uint32_t member, char *error, size_t capacity) {
    if (owner->descriptor->create != iso_proxy_create || member == 0 || member >= iso_instance_of(owner)->type->member_count) {
        snprintf(error, capacity, "%s: not a stage of this isolation group", descriptor->id);
        return NULL;
    }
    iso_shell *shell = calloc(1, sizeof *shell);
    if (!shell) return NULL;
    shell->owner = iso_instance_of(owner);
    shell->view.inst = shell->owner;
    shell->view.member = member;
    shell->filter.struct_size = sizeof shell->filter;
    shell->filter.descriptor = descriptor;
    shell->filter.filter_data = shell;
    shell->filter.destroy = shell_destroy;
    shell->filter.set_param = shell_set_param;
    shell->filter.configure = shell_configure;
    shell->filter.process_video = shell_process_video;
    shell->filter.reset = shell_reset;
    shell->filter.get_error = shell_get_error;
    shell->filter.get_extension = shell_get_extension;
    return &shell->filter;
}

/* The view of a proxy (stage 0) or a shell, or NULL. */
static const iso_view *view_of(const rawfx_filter *filter) {
    if (filter->descriptor->create == iso_proxy_create) return &iso_instance_of(filter)->group.view;
    if (filter->descriptor->create == shell_create_alone) return &shell_of(filter)->view;
    return NULL;
}

int32_t rfx_isolation_group_position(const rawfx_filter *filter, uint32_t *member, uint32_t *count) {
    const iso_view *view = view_of(filter);
    if (!view) return 0;
    *member = view->member;
    *count = view->inst->type->member_count;
    return 1;
}

int32_t rfx_isolation_member_negotiation(const rawfx_filter *filter, rawfx_format *input, rawfx_negotiation *negotiation) {
    const iso_view *view = view_of(filter);
    if (!view || !view->inst->stream.configured) return 0;
    *input = view->inst->group.member_input[view->member];
    *negotiation = view->inst->group.member_negotiation[view->member];
    return 1;
}

int32_t rfx_isolation_failed_stage(const rawfx_filter *filter) {
    const iso_view *view = view_of(filter);
    return view ? view->inst->group.failed_member : -1;
}

void rfx_isolation_set_bypass(const rawfx_filter *filter, int32_t bypassed) {
    const iso_view *view = view_of(filter);
    if (!view) return;
    uint32_t bit = 1u << view->member;
    if (bypassed) atomic_fetch_or(&view->inst->group.bypass_mask, bit);
    else atomic_fetch_and(&view->inst->group.bypass_mask, ~bit);
}

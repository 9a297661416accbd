/*
 * rawfx/ext/render_mode.h — "rawfx.render-mode/1", a host extension.
 *
 * Tells a filter whether anyone waits for its output in real time (CLAP's
 * render extension). REAL-TIME, the default and the answer when the host does
 * not offer this extension: frames come from an SDK callback or a device, one
 * block per block duration, and process must never wait (rawfx.h). OFFLINE:
 * the host reads a file as fast as it can and nobody waits for the output, so
 * a filter whose work runs on a worker of its own may wait for that worker in
 * process, which makes its output the same however fast the machine is
 * (`rawfx run` and `rawfx compose` of files). Everything else in the contract
 * is unchanged: no allocation, no lock shared with other threads.
 *
 * A filter asks once, at create or configure (get_extension is not real-time):
 *
 *     const rawfx_host_render_mode *render =
 *         host->get_extension(host, RAWFX_EXT_RENDER_MODE);
 *
 * and in process, where it would otherwise have to wait:
 *
 *     if (render && render->mode(host) == RAWFX_RENDER_OFFLINE) wait_for_worker();
 *     else use_what_is_ready();
 *
 * The mode may change between two process calls (a validator flips it between
 * checks), never during one.
 */
#ifndef RAWFX_EXT_RENDER_MODE_H
#define RAWFX_EXT_RENDER_MODE_H

#include "../../rawfx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RAWFX_EXT_RENDER_MODE "rawfx.render-mode/1"

typedef uint32_t rawfx_render_mode;
enum {
    RAWFX_RENDER_REALTIME = 0, /* never wait in process */
    RAWFX_RENDER_OFFLINE = 1   /* a file: process may wait for the filter's own worker */
};

typedef struct rawfx_host_render_mode {
    uint32_t struct_size;

    /* [any] The mode now. REAL-TIME. */
    rawfx_render_mode (*mode)(const rawfx_host *host);
} rawfx_host_render_mode;

#ifdef __cplusplus
}
#endif

#endif /* RAWFX_EXT_RENDER_MODE_H */

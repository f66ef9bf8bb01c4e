/*
 * trim.h: giving memory back to the system after large requests, so that
 * ikd's resident memory tracks what it holds (server/trim.c says why and
 * how). One for the process (ctx->sh->trim), on the first loop: any loop
 * may note, the first loop trims.
 */
#ifndef SRV_TRIM_H
#define SRV_TRIM_H

#include <stddef.h>

#include "server/srv.h"

/* Requests, answers or messages of at least this many bytes are large. */
#define SRV_TRIM_LARGE (1024 * 1024)

/* Sets up the timer and the wake-up on ctx->loop (the first loop's, before
 * the loops start) as ctx->sh->trim. 0, or SRV_ENOMEM (then nothing is
 * ever trimmed, which is only a matter of memory). */
int srv_trim_start(srv_ctx *ctx);
/* Closes the handles (ctx's loop thread, once no other loop runs any
 * more); a trim running on the pool finishes on its own. The state is
 * freed once both are done. */
void srv_trim_stop(srv_ctx *ctx);

/* Something of `bytes` was freed; when it is large (SRV_TRIM_LARGE), a
 * trim follows soon, at most one a second. Any loop thread. */
void srv_trim_note(srv_ctx *ctx, size_t bytes);

#endif /* SRV_TRIM_H */

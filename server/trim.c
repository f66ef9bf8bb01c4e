/*
 * trim.c: giving memory back to the system after large requests (contract
 * in trim.h).
 *
 * Why: a large request (a URDF chain of megabytes, a batch, a large stream
 * message) is decoded on a pool thread, into many small blocks (libxml2's
 * tree, jansson's), freed when the work is done. glibc keeps what a thread
 * freed in that thread's arena (up to eight per core) and gives back to
 * the system only what lies at the top of each heap, so after a burst of
 * such requests ikd's resident memory stayed hundreds of megabytes above
 * what it held (registry bound 16M, 3.9 MB URDF chains from 16 clients
 * with --threads 8: +204 MB after the burst). malloc_trim(0) gives back
 * every free page of every arena.
 *
 * How: srv_trim_note() from a loop when something large was freed (a
 * request's body and the work on it, an answer that was sent, a large
 * stream message); the trim itself runs on the pool (it walks every arena,
 * milliseconds on a large heap), TRIM_DELAY_MS after the note, and at most
 * one every TRIM_INTERVAL_MS, so that a burst costs one trim. malloc_trim
 * serves the whole process, so one trimmer does: its timer lives on the
 * first loop, and a note from any loop reaches it through an atomic flag
 * and a uv_async_t (one wake-up per burst: the flag stays set until the
 * first loop has seen it).
 */
#include "server/trim.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "server/pool.h"

#define TRIM_DELAY_MS 100
#define TRIM_INTERVAL_MS 1000

struct srv_trim {
    srv_ctx *ctx;     /* the first loop's: the handles and the work are on it */
    uv_timer_t timer;
    uv_async_t noted; /* a note from any loop */
    atomic_bool pending; /* a note waits for the first loop to see it */
    srv_work work;
    bool armed;    /* the timer will trim */
    bool running;  /* a trim is on the pool */
    bool stopped;  /* srv_trim_stop: the handles are closing */
    int open;      /* handles not yet closed */
    uint64_t last; /* uv_now() of the last trim's end */
};

static void maybe_free(srv_trim *t)
{
    if (t->stopped && t->open == 0 && !t->running)
        free(t);
}

static void trim_work(srv_work *w)
{
    malloc_trim(0);
}

static void trim_done(srv_work *w, int status)
{
    srv_trim *t = w->data;
    t->running = false;
    t->last = uv_now(t->ctx->loop);
    maybe_free(t);
}

static void on_timer(uv_timer_t *h)
{
    srv_trim *t = h->data;
    t->armed = false;
    if (t->running)
        return;
    t->work.data = t;
    if (srv_pool_submit_always(t->ctx, &t->work, trim_work, trim_done) == SRV_OK)
        t->running = true;
}

/* A note reached the first loop: the timer is armed, unless it is. */
static void on_noted(uv_async_t *h)
{
    srv_trim *t = h->data;
    atomic_store(&t->pending, false);
    if (t->armed || t->stopped)
        return;
    uint64_t now = uv_now(t->ctx->loop);
    uint64_t at = t->last + TRIM_INTERVAL_MS;
    uint64_t delay = at > now + TRIM_DELAY_MS ? at - now : TRIM_DELAY_MS;
    t->armed = true;
    uv_timer_start(&t->timer, on_timer, delay, 0);
}

int srv_trim_start(srv_ctx *ctx)
{
    srv_trim *t = calloc(1, sizeof *t);
    if (!t)
        return SRV_ENOMEM;
    t->ctx = ctx;
    atomic_init(&t->pending, false);
    uv_timer_init(ctx->loop, &t->timer);
    uv_async_init(ctx->loop, &t->noted, on_noted);
    t->timer.data = t->noted.data = t;
    t->open = 2;
    ctx->sh->trim = t;
    return SRV_OK;
}

static void handle_closed(uv_handle_t *h)
{
    srv_trim *t = h->data;
    t->open--;
    maybe_free(t);
}

void srv_trim_stop(srv_ctx *ctx)
{
    srv_trim *t = ctx->sh->trim;
    if (!t)
        return;
    ctx->sh->trim = NULL;
    t->stopped = true;
    uv_timer_stop(&t->timer);
    uv_close((uv_handle_t *)&t->timer, handle_closed);
    uv_close((uv_handle_t *)&t->noted, handle_closed);
}

void srv_trim_note(srv_ctx *ctx, size_t bytes)
{
    srv_trim *t = ctx->sh->trim;
    if (!t || bytes < SRV_TRIM_LARGE || atomic_exchange(&t->pending, true))
        return;
    uv_async_send(&t->noted);
}

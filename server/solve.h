/*
 * solve.h: the one place where the daemon decides where a job is solved
 * (inline on the loop, or on the thread pool), times the solve and records
 * it in the metrics; and, with the same struct, how other work of a
 * request goes to the pool (a large body's decode, a batch's chunks). HTTP
 * requests (server/http_handlers.c, server/http_batch.c) and stream targets
 * (server/ws_stream.c, server/ws_tick.c) all go through it, so that the rule is written
 * once: a job whose estimated cost for all its targets
 * (proto_job_cost_us() times the count) is below --inline-cost-us (the
 * analytic seed solvers: a hop to the pool and back costs 10-30 us, far
 * more than the solve) is solved right away on the loop; any other goes to
 * the pool as admitted work. Work made of many one-target jobs (a stream
 * tick: the targets of many streams) is split into parts the same way
 * (srv_solve_parts): one part solved inline when cheap, else parts of
 * SRV_SOLVE_PART_MIN_US to SRV_SOLVE_PART_MAX_US of estimated work, at
 * least one per pool thread when there is enough of it.
 */
#ifndef SRV_SOLVE_H
#define SRV_SOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/proto.h"
#include "server/srv.h"
#include "server/pool.h"

typedef struct srv_solve srv_solve;

/* One solve: targets [begin, end) of job (or items [begin, end) of items),
 * or other pool work (work). The caller owns the struct (it may embed it)
 * and keeps it alive until done has run; it fills job, items, jobs or
 * work, begin, end, done, data, and optionally after and stage. */
struct srv_solve {
    srv_work w; /* private */
    proto_job *job;
    /* or, instead of job, items [begin, end) of a batch of items (each
     * recorded as the one-target job it is) */
    proto_items *items;
    /* or one-target jobs jobs[begin, end) (NULL entries are skipped): the
     * targets of a stream tick, each of its own stream */
    proto_job *const *jobs;
    /* or, instead of a solve, work run on a pool thread (decoding a large
     * body, and solving it there with srv_solve_run): never inline */
    void (*work)(srv_ctx *ctx, srv_solve *s);
    size_t begin, end;
    /* A later stage of work that was admitted already (a batch's chunks,
     * a tick's parts after the first): always on the pool, never refused
     * for the queue bound, holding no admission of its own. */
    bool stage;
    /* Admitted work (not a stage) whose unit of ctx->admitted passes to the
     * caller when done runs (server/pool.h's keep_admission). */
    bool keep_admission;
    /* Optional: runs right after the solve on the same thread (a pool
     * thread, or the loop for an inline solve), for work that belongs with
     * it (encoding the answer). */
    void (*after)(srv_solve *s);
    /* Loop thread, exactly once after a successful submit: status SRV_OK,
     * or SRV_ESHUTDOWN when the pool cancelled the work before it ran (the
     * job was not solved). */
    void (*done)(srv_solve *s, int status);
    void *data;       /* the caller's */
    double seconds;   /* wall time the solve took (set before after/done) */
    bool ran_inline;  /* set by srv_solve_submit: solved on the loop, done
                         already ran when it returned */
    /* The caller lets a cheap solve wait for a later turn of the loop when
     * this turn's inline budget is spent (a stream's; an HTTP request's is
     * never deferred, one per request). */
    bool may_defer;
    bool deferred; /* set by srv_solve_submit: it waited for a later turn and
                      runs (done included) on the loop, among others */
    srv_solve *next_deferred; /* private */
};

/* Request bodies and stream messages above this many bytes are decoded on
 * the pool (with the solve they lead to: solve.work): parsing a megabyte
 * of JSON or an inline URDF takes milliseconds, which the loop owes every
 * other client; below it a decode takes microseconds and a hop to the pool
 * would cost more. */
#define SRV_DECODE_INLINE_MAX (64 * 1024)

/* True when job is cheap enough to solve on the loop right now. */
bool srv_solve_is_cheap(const srv_ctx *ctx, const proto_job *job);

/* The inline budget of a turn of the loop: SRV_TURN_BUDGET_US of inline
 * solving (with its after and done: encoding, queuing the answer) before
 * the loop polls its sockets, and as much after; a cheap solve that may
 * wait (may_defer) and finds the budget spent waits, in order, for a later
 * turn, so that streams asking for more inline work than the loop can do
 * (hundreds of paths at 1000 Hz) cannot hold it from everyone else. The
 * handles live in ctx->turn: srv_solve_start() sets them up (0 or
 * SRV_ENOMEM: then nothing is deferred), srv_solve_stop() closes them and
 * runs the done of every deferred solve with SRV_ESHUTDOWN. */
#define SRV_TURN_BUDGET_US 2000
int srv_solve_start(srv_ctx *ctx);
void srv_solve_stop(srv_ctx *ctx);

/* Parts of estimated work that a hop to the pool is worth, and the most
 * one part holds so that others' work gets a thread in between. */
#define SRV_SOLVE_PART_MIN_US 50.0
#define SRV_SOLVE_PART_MAX_US 5000.0

/* How many parts n one-target jobs of total estimated cost cost_us (the
 * sum of proto_job_cost_us()) are solved in: 1 when cheap (then
 * srv_solve_submit solves them inline), else as many as --threads when each
 * gets at least SRV_SOLVE_PART_MIN_US, more when a part would hold more
 * than SRV_SOLVE_PART_MAX_US; never more than n. 0 when n is 0. The caller
 * splits the jobs into that many runs of about equal cost and submits the
 * first with srv_solve_submit (the admission), the others with
 * srv_solve_submit_stage, keeping at most srv_solve_parallel() of them in
 * flight. */
size_t srv_solve_parts(const srv_ctx *ctx, double cost_us, size_t n);
/* Parts of one piece of work worth running at once: the pool threads. */
size_t srv_solve_parallel(const srv_ctx *ctx);

/* Solves s: inline when cheap (solve, after and done all run before this
 * returns; or, with may_defer and this turn's inline budget spent, in a
 * later turn, ran_inline false; for jobs, the sum of their costs decides),
 * else queued on the pool as newly admitted work (work and stages always
 * go to the pool; a stage is not admitted again). Returns 0 (done runs
 * exactly once), or SRV_EBUSY when --max-queue units of work are admitted
 * already (nothing ran; done never runs), or SRV_EINVAL, or SRV_EIO when
 * libuv refuses the work. Loop thread only. */
int srv_solve_submit(srv_ctx *ctx, srv_solve *s);

/* srv_solve_submit of s as a stage (s->stage set). */
int srv_solve_submit_stage(srv_ctx *ctx, srv_solve *s);

/* Solves s right here on the calling thread (a pool item that also did
 * something else first, such as decoding a large body): solve, time,
 * after, then record. Does not run done. Any thread. */
void srv_solve_run(srv_ctx *ctx, srv_solve *s);

#endif /* SRV_SOLVE_H */

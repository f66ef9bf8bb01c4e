/*
 * proto_job_run.c: a decoded job's life after decoding: solving its targets
 * (proto_job_run, on any thread, disjoint ranges in parallel), the cost
 * model the daemon uses to choose between the loop and the pool
 * (proto_job_cost_us), the warm start of a stream's next job from the
 * previous one (proto_job_warm_start). Contract in proto.h.
 *
 * Not here: decoding, the constructor and freeing (proto_job_decode.c), answers (proto_job_encode.c), the
 * solver bindings (proto_solver.c).
 */
#include "proto/proto_kind.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

size_t proto_job_count(const proto_job *job)
{
    return job->n;
}

bool proto_job_has_seed(const proto_job *job, size_t i)
{
    return i < job->n && job->has_seed && job->has_seed[i] && job->seed_q;
}

const char *proto_job_solver_name(const proto_job *job)
{
    return proto_solver_names[job->solver];
}

double proto_job_cost_us(const proto_job *job)
{
    switch (job->solver) {
    case PROTO_SOLVER_TWO_LINK:
    case PROTO_SOLVER_THREE_LINK:
    case PROTO_SOLVER_THREE_LINK_3D:
    case PROTO_SOLVER_TWO_BONE:
        return 0.5;
    case PROTO_SOLVER_FABRIK:
    case PROTO_SOLVER_CCD: {
        size_t it = job->opt.max_iterations ? job->opt.max_iterations : 32;
        return 0.01 * (double)it * (double)job->npos;
    }
    case PROTO_SOLVER_CLOSED:
        /* about 2 microseconds (ikbench closed); every solution, with the
         * turns of 2 pi joints, about 15 */
        return job->opt.all_solutions || job->opt.max_joint_step_in > 0 ? 20.0 : 2.0;
    default: {
        /* the numeric solver: tens of microseconds typically, bounded by
         * the time budget (a tree of bones answers rotations, no joints:
         * its variables count) */
        double dof = (double)(job->chain->tree ? job->chain->tree->dof : job->dof);
        return job->opt.timeout_ms > 0 ? fmin(50.0 * dof, 1000 * job->opt.timeout_ms) : 50.0 * dof;
    }
    }
}

double proto_job_budget_us(const proto_job *job)
{
    if (job->solver != PROTO_SOLVER_NUMERIC)
        return proto_job_cost_us(job);
    /* the time budget (of CPU time: the wall-clock ceiling is ten times
     * it, solver/ik_budget.h, reached only on a loaded machine) */
    if (job->opt.timeout_ms > 0)
        return 1000.0 * job->opt.timeout_ms;
    /* no time budget: the iterations, at about a microsecond per joint
     * each (a guess: the bound is only as good as it) */
    size_t it = job->opt.max_iterations ? job->opt.max_iterations : job->opt.iter_cap;
    return (double)it * (double)(job->dof ? job->dof : 1);
}

void proto_job_run(proto_job *job, size_t begin, size_t end)
{
    if (end > job->n)
        end = job->n;
    if (begin >= end)
        return;
    size_t ws_size = proto_kinds[job->chain->kind]->workspace(job);
    void *ws = ws_size ? malloc(ws_size) : NULL;
    for (size_t i = begin; i < end; i++) {
        if (ws_size && !ws) {
            proto__result(job, i)->status = IK_ENOSPC;
            proto__result(job, i)->answered = NULL;
        } else {
            proto__run_one(job, i, ws, ws_size);
        }
        job->done[i % job->slots] = true;
    }
    free(ws);
}

/* True when the answer's points lie on one line (within 1e-7 of the
 * chain's length): a straight or folded limb, which says nothing about the
 * side the knee or elbow bends to. Only for chains whose seed is a pose
 * with such a side (planar arms, bones, skeletons). */
static bool straight_answer(const proto_job *job, const proto_result *r)
{
    const proto_chain *c = job->chain;
    if (c->kind != PROTO_CHAIN_PLANAR && c->kind != PROTO_CHAIN_BONES &&
        c->kind != PROTO_CHAIN_SKELETON)
        return false;
    size_t n = job->npos;
    if (n < 3)
        return false;
    const ik_vec3 *p = r->positions;
    double len = 0, far = 0;
    size_t j = 0;
    for (size_t k = 1; k < n; k++) {
        len += ik_vec3_dist(p[k], p[k - 1]);
        double d = ik_vec3_dist(p[k], p[0]);
        if (d > far)
            far = d, j = k;
    }
    if (!(len > 0))
        return true;
    ik_vec3 u = ik_vec3_scale(ik_vec3_sub(p[j], p[0]), 1 / far);
    for (size_t k = 1; k < n; k++) {
        ik_vec3 v = ik_vec3_sub(p[k], p[0]);
        if (ik_vec3_len(ik_vec3_sub(v, ik_vec3_scale(u, ik_vec3_dot(v, u)))) > 1e-7 * len)
            return false;
    }
    return true;
}

void proto_job_warm_start(proto_job *job, const proto_job *prev)
{
    /* every solve of a stream follows a motion (ik_numeric.h, FOLLOWING A
     * MOTION), from its open seed on */
    job->opt.follow = true;
    if (job->n > 0 && job->seed_q && job->has_seed[0] && proto__seed_len(job->chain) > 0) {
        /* the client's seed (a stream's open seed, or a re-synchronisation
         * after the arm moved by other means) wins over the previous
         * answer, and the solve continues from it */
        job->opt.nearest = true;
        return;
    }
    if (!prev || prev->n == 0 || prev->chain != job->chain || job->n == 0)
        return;
    size_t last = prev->n - 1;
    const proto_result *r = proto__result(prev, last);
    if (!prev->done[last % prev->slots] || r->status == IK_EINVAL || r->status == IK_ENOSPC)
        return;
    size_t sl = proto__seed_len(job->chain);
    if (sl == 0)
        return;
    /* An answer that failed (out of reach, not converged, timed out) or
     * came out straight is no pose to continue from: a straight limb has no
     * bend side, so the next knee could go either way, and a failed numeric
     * search may have ended anywhere. The stream then keeps the previous
     * job's own starting point, which by induction is the last answer that
     * was a proper pose (or the chain's own pose when there was none). */
    bool carry = r->status != IK_OK || straight_answer(prev, r);
    if (carry && !(prev->seed_q && prev->has_seed[last]))
        return; /* no seed: the job starts from the chain's own pose */
    const proto_chain *c = job->chain;
    /* a bones chain: room for the rotations that go with the seed's
     * positions, beside the seed (no allocation of their own) */
    size_t nrot = c->kind == PROTO_CHAIN_BONES ? c->nbones : 0;
    if (!job->seed_q) {
        /* the job was decoded without seeds: give it room for one */
        double *s = calloc(sl + 4 * nrot, sizeof *s);
        if (!s)
            return;
        free(job->seed_owned);
        job->seed_owned = s;
        job->seed_q = s;
        job->rot_room = nrot ? (ik_quat *)(s + sl) : NULL;
    } else if (nrot && !job->rot_room) {
        /* a seed without that room (a batch's): the rotations' own */
        free(job->seed_owned);
        job->seed_owned = malloc(nrot * sizeof *job->seed_rot);
        job->rot_room = (ik_quat *)job->seed_owned;
    }
    double *s = job->seed_q;
    if (carry) {
        memmove(s, prev->seed_q + last * sl, sl * sizeof *s);
    } else {
        switch (c->skel ? PROTO_CHAIN_SKELETON : c->kind) { /* trees of bones too */
        case PROTO_CHAIN_BONES:
            for (size_t i = 0; i < c->nbones; i++) {
                s[3 * i] = r->positions[i].x;
                s[3 * i + 1] = r->positions[i].y;
                s[3 * i + 2] = r->positions[i].z;
            }
            break;
        case PROTO_CHAIN_SKELETON:
            for (size_t i = 0; i < c->nskel; i++) {
                s[4 * i] = r->local[i].x;
                s[4 * i + 1] = r->local[i].y;
                s[4 * i + 2] = r->local[i].z;
                s[4 * i + 3] = r->local[i].w;
            }
            break;
        default:
            if (prev->dof != sl)
                return;
            memcpy(s, r->q, sl * sizeof *s);
        }
    }
    job->has_seed[0] = true;
    job->opt.nearest = true;
    /* a bones chain: the rotations that go with those positions (the
     * answer's, or, carried, the ones the previous job started from) */
    const ik_quat *rot = !nrot ? NULL : carry ? prev->seed_rot : r->rotations;
    job->seed_rot = rot && job->rot_room ? job->rot_room : NULL; /* else from the chain's own */
    if (job->seed_rot)
        memcpy(job->seed_rot, rot, nrot * sizeof *rot);
}


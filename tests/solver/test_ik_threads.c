/*
 * test_ik_threads.c: the solver library is safe to call from many threads
 * at once (ik_numeric.h "THREADS", ik_twobone.h, ik_anim.h
 * "THREAD-SAFETY"): no globals, no static state, one workspace per thread.
 *
 * Several pthreads solve at the same time on chains shared read-only
 * between them (a UR5 built from its URDF numbers and a 7-dof chain with
 * prismatic and continuous joints), each with its own workspace. Every
 * answer is checked by forward kinematics against its target, and must be
 * bit-identical to the answer the same solve gave on the main thread before
 * the threads started (timeout_s = 0, so the search is fully deterministic):
 * any shared scratch or hidden state would make threads disturb each other's
 * answers. Two-bone (seed 001) and FABRIK/CCD solves run in the same threads
 * and are checked the same way. The shared chains must be byte-for-byte
 * unchanged afterwards.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_ccd.h"
#include "solver/ik_chain.h"
#include "solver/ik_fabrik.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "solver/ik_twobone.h"
#include "chains.h"

#define N_THREADS  4
#define N_NUMERIC  60  /* numeric targets per chain */
#define N_TWOBONE  4000
#define N_ANIM     200
#define ROUNDS     8   /* each thread solves the whole set this many times */

static void make_chains(ik_chain *ur5, ik_chain *mixed)
{
    ik_joint u[UR5_JOINTS];
    ur5_joints(u);
    ck_assert_int_eq(chain_init(ur5, u, UR5_JOINTS), IK_OK);
    ik_joint m[9] = {
        joint(IK_JOINT_PRISMATIC, ZERO, ZERO, ik_v3(0, 0, 1), 0, 0.3),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.2), ZERO, ik_v3(0, 0, 1), -2.5, 2.5),
        joint(IK_JOINT_FIXED, ik_v3(0.05, 0, 0.05), ik_v3(0.2, 0, 0), ZERO, 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.1, 0, 0), ZERO, ik_v3(0, 1, 0), -1.8, 1.8),
        joint(IK_JOINT_CONTINUOUS, ik_v3(0.3, 0, 0), ZERO, ik_v3(1, 0, 0), 0, 0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.05, 0, 0), ZERO, ik_v3(0, 1, 0), -2.0, 2.0),
        joint(IK_JOINT_REVOLUTE, ik_v3(0.25, 0, 0), ZERO, ik_v3(0, 1, 0), -2.1, 0.2),
        joint(IK_JOINT_CONTINUOUS, ZERO, ZERO, ik_v3(1, 0, 0), 0, 0),
        joint(IK_JOINT_FIXED, ik_v3(0.12, 0, 0), ZERO, ZERO, 0, 0),
    };
    ck_assert_int_eq(chain_init(mixed, m, 9), IK_OK);
}

/* ---- the shared, read-only problem set -------------------------------- */

static ik_chain g_chain[2];
static ik_target g_target[2][N_NUMERIC];
static double g_ref_q[2][N_NUMERIC][TEST_DOF_CAP]; /* main thread's answers */
static int g_ref_st[2][N_NUMERIC];
static ik_vec3 g_limb[N_TWOBONE][4]; /* a, b, c, t */
static ik_twobone_result g_ref_tb[N_TWOBONE];
static ik_vec3 g_anim[N_ANIM][5]; /* 4 joints, target */

static uint64_t rng_state;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * ((double)(rng_state >> 11) * 0x1.0p-53);
}
static ik_vec3 rvec(double s)
{
    return ik_v3(urand(-s, s), urand(-s, s), urand(-s, s));
}

static ik_numeric_opts det_opts(size_t i)
{
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0.0; /* deterministic: bounded by restarts, not the clock */
    o.max_restarts = 100;
    o.rng_seed = 1000 + i;
    o.search = (i % 3 == 0) ? IK_SEARCH_NEAREST_TO_SEED : IK_SEARCH_FIRST_FOUND;
    return o;
}

static void build_problems(void)
{
    rng_state = 42;
    make_chains(&g_chain[0], &g_chain[1]);
    for (int c = 0; c < 2; c++) {
        const ik_chain *ch = &g_chain[c];
        for (size_t i = 0; i < N_NUMERIC; i++) {
            double q[TEST_DOF_CAP];
            for (size_t k = 0; k < ch->dof; k++) {
                double lo = ch->lower[k], hi = ch->upper[k];
                if (ch->type[k] == IK_JOINT_CONTINUOUS) {
                    lo = -IK_PI;
                    hi = IK_PI;
                }
                q[k] = urand(lo, hi);
            }
            g_target[c][i] = ik_target_full_pose(ik_chain_fk(ch, q));
            if (i % 4 == 1)
                g_target[c][i] = ik_target_position(g_target[c][i].pose.p);
        }
    }
    for (size_t i = 0; i < N_TWOBONE; i++) {
        ik_vec3 a = rvec(1);
        ik_vec3 b = ik_vec3_add(a, ik_vec3_scale(ik_vec3_normalize(rvec(1)), urand(0.2, 1)));
        ik_vec3 c = ik_vec3_add(b, ik_vec3_scale(ik_vec3_normalize(rvec(1)), urand(0.2, 1)));
        g_limb[i][0] = a;
        g_limb[i][1] = b;
        g_limb[i][2] = c;
        g_limb[i][3] = ik_vec3_add(a, rvec(1.2));
    }
    for (size_t i = 0; i < N_ANIM; i++) {
        g_anim[i][0] = ik_v3(0, 0, 0);
        for (int k = 1; k < 4; k++)
            g_anim[i][k] =
                ik_vec3_add(g_anim[i][k - 1], ik_vec3_scale(ik_vec3_normalize(rvec(1)), 0.5));
        g_anim[i][4] = rvec(0.8);
    }
}

/* ---- checks by forward kinematics ------------------------------------- */

static bool fk_meets(const ik_chain *c, const ik_target *t, const double *q)
{
    if (!ik_chain_within_limits(c, q, 0.0))
        return false;
    double e[6];
    ik_xform target = t->pose;
    if (t->mode == IK_TARGET_POSITION)
        target.q = ik_quat_identity();
    ik_pose_error(target, ik_chain_fk(c, q), e);
    int rows = t->mode == IK_TARGET_POSITION ? 3 : 6;
    for (int r = 0; r < rows; r++)
        if (!(fabs(e[r]) < 1e-5))
            return false;
    return true;
}

/* ---- the worker ------------------------------------------------------- */

typedef struct worker {
    int id;
    size_t numeric_ok, numeric_mismatch, numeric_bad_fk;
    size_t twobone_mismatch, twobone_bad;
    size_t anim_bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    /* one workspace per thread, on its own stack */
    unsigned char ws[8192];
    double anim_ws[64];
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t k = 0; k < N_NUMERIC; k++) {
            /* threads walk the set in different orders */
            size_t i = (k + (size_t)w->id * 17 + (size_t)round * 5) % N_NUMERIC;
            for (int c = 0; c < 2; c++) {
                const ik_chain *ch = &g_chain[c];
                ik_numeric_opts o = det_opts(i);
                double q[TEST_DOF_CAP];
                ik_numeric_result res;
                int st = ik_numeric_solve(ch, &g_target[c][i], NULL, &o, ws, sizeof ws, q, &res);
                if (st != g_ref_st[c][i] || memcmp(q, g_ref_q[c][i], ch->dof * sizeof *q) != 0)
                    w->numeric_mismatch++;
                if (st == IK_OK) {
                    w->numeric_ok++;
                    if (!fk_meets(ch, &g_target[c][i], q))
                        w->numeric_bad_fk++;
                }
            }
        }
        for (size_t k = 0; k < N_TWOBONE; k++) {
            size_t i = (k + (size_t)w->id * 101) % N_TWOBONE;
            ik_twobone_result r;
            int st = ik_twobone_solve(g_limb[i][0], g_limb[i][1], g_limb[i][2], g_limb[i][3], NULL,
                                      &r);
            /* field by field: the struct has padding */
            const ik_twobone_result *ref = &g_ref_tb[i];
            if (memcmp(&r.b, &ref->b, sizeof r.b) || memcmp(&r.c, &ref->c, sizeof r.c) ||
                memcmp(&r.error, &ref->error, sizeof r.error) || r.reach != ref->reach)
                w->twobone_mismatch++;
            /* forward check: bone lengths kept, the foot on the target when
             * reachable */
            double lab = ik_vec3_dist(g_limb[i][0], g_limb[i][1]);
            double lbc = ik_vec3_dist(g_limb[i][1], g_limb[i][2]);
            if (fabs(ik_vec3_dist(g_limb[i][0], r.b) - lab) > 1e-12 ||
                fabs(ik_vec3_dist(r.b, r.c) - lbc) > 1e-12 ||
                (st == IK_OK && ik_vec3_dist(r.c, g_limb[i][3]) > 1e-12))
                w->twobone_bad++;
        }
        for (size_t i = 0; i < N_ANIM; i++) {
            ik_vec3 out[4];
            ik_anim_result r;
            int (*solve)(const ik_vec3 *, size_t, ik_vec3, const ik_anim_options *, void *,
                         size_t, ik_vec3 *, ik_quat *, ik_quat *, ik_anim_result *) =
                (i + (size_t)w->id) % 2 ? ik_fabrik_solve : ik_ccd_solve;
            int st = solve(g_anim[i], 4, g_anim[i][4], NULL, anim_ws, sizeof anim_ws, out, NULL,
                           NULL, &r);
            bool bad = st != IK_OK && st != IK_ENOTCONV && st != IK_EUNREACHABLE;
            for (int b = 0; b < 3; b++)
                bad |= fabs(ik_vec3_dist(out[b], out[b + 1]) - 0.5) > 1e-9;
            bad |= fabs(ik_vec3_dist(out[3], g_anim[i][4]) - r.error) > 1e-12;
            bad |= st == IK_OK && r.error > 1e-4 * 1.5;
            if (bad)
                w->anim_bad++;
        }
    }
    return NULL;
}

/* A copy of every array of chain c (its storage's content), to compare
 * with the chain after the threads ran. */
typedef struct chain_copy {
    unsigned char bytes[2048];
    size_t n;
} chain_copy;

static void copy_arrays(const ik_chain *c, chain_copy *k)
{
    const size_t d = c->dof;
    const struct {
        const void *p;
        size_t size;
    } parts[] = {{c->type, d * sizeof *c->type},           {c->pre, d * sizeof *c->pre},
                 {c->axis, d * sizeof *c->axis},           {c->lower, d * sizeof *c->lower},
                 {c->upper, d * sizeof *c->upper},         {c->source_index, d * sizeof(size_t)},
                 {c->fast_rot, (d + 1) * sizeof *c->fast_rot},
                 {c->fast_pos, (d + 1) * sizeof *c->fast_pos}};
    k->n = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ck_assert_uint_le(k->n + parts[i].size, sizeof k->bytes);
        memcpy(k->bytes + k->n, parts[i].p, parts[i].size);
        k->n += parts[i].size;
    }
}

START_TEST(test_threads_share_readonly_chains)
{
    build_problems();
    ik_chain before[2];
    memcpy(before, g_chain, sizeof before);
    static chain_copy arrays_before[2], arrays_after[2];
    copy_arrays(&g_chain[0], &arrays_before[0]);
    copy_arrays(&g_chain[1], &arrays_before[1]);

    /* reference answers, single-threaded */
    static unsigned char ws[8192];
    size_t ref_ok = 0;
    for (int c = 0; c < 2; c++) {
        for (size_t i = 0; i < N_NUMERIC; i++) {
            ik_numeric_opts o = det_opts(i);
            g_ref_st[c][i] = ik_numeric_solve(&g_chain[c], &g_target[c][i], NULL, &o, ws,
                                              sizeof ws, g_ref_q[c][i], NULL);
            ref_ok += g_ref_st[c][i] == IK_OK;
        }
    }
    ck_assert_uint_ge(ref_ok, 2 * N_NUMERIC - 4);
    for (size_t i = 0; i < N_TWOBONE; i++)
        ik_twobone_solve(g_limb[i][0], g_limb[i][1], g_limb[i][2], g_limb[i][3], NULL,
                         &g_ref_tb[i]);

    pthread_t th[N_THREADS];
    worker w[N_THREADS];
    memset(w, 0, sizeof w);
    for (int t = 0; t < N_THREADS; t++) {
        w[t].id = t;
        ck_assert_int_eq(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++)
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);

    for (int t = 0; t < N_THREADS; t++) {
        ck_assert_msg(w[t].numeric_mismatch == 0, "thread %d: %zu numeric answers differ", t,
                      w[t].numeric_mismatch);
        ck_assert_msg(w[t].numeric_bad_fk == 0, "thread %d: %zu answers fail FK", t,
                      w[t].numeric_bad_fk);
        ck_assert_uint_eq(w[t].numeric_ok, (size_t)ROUNDS * ref_ok);
        ck_assert_uint_eq(w[t].twobone_mismatch, 0);
        ck_assert_uint_eq(w[t].twobone_bad, 0);
        ck_assert_uint_eq(w[t].anim_bad, 0);
    }
    ck_assert_int_eq(memcmp(before, g_chain, sizeof before), 0);
    for (int c = 0; c < 2; c++) { /* the storage too: nothing wrote it */
        copy_arrays(&g_chain[c], &arrays_after[c]);
        ck_assert_uint_eq(arrays_after[c].n, arrays_before[c].n);
        ck_assert_int_eq(memcmp(arrays_after[c].bytes, arrays_before[c].bytes, arrays_after[c].n),
                         0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ik_threads");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_threads_share_readonly_chains);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * test_proto_solver.c: proto/proto_solver.c, the solver bindings of the
 * wire format, for what issue 15 added there: the closed-form solver
 * (solver/ik_closed.h) in requests ("auto" picks it for full poses on
 * 6-joint OPW and UR arms, "closed" asks for it, options.all_solutions
 * lists every solution), the chain description saying which solvers a chain
 * gets and why not the closed form, and the cause every failing answer
 * carries ("cause": out_of_reach, no_solution, outside_limits, budget).
 *
 * Every answer is checked by forward kinematics computed in this test (the
 * joint-list FK of proto_check.h for chains written here: a UR10-like and a
 * KUKA KR6-like arm; ik_chain_fk on the chain read from the URDF for the
 * UR5 and the ABB IRB 120 of tests/data), inside the limits, never against
 * the solver's own report.
 */
#include "tests/proto/proto_check.h"

#include "proto/proto_kind.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_reason.h"
#include "solver/ik_status.h"
#include "tests/solver/storage.h"

static uint64_t rng = 88172645463325252ull;
static double urand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * ((double)(rng >> 11) * 0x1.0p-53);
}

static json_t *ok(const char *body, proto_kind kind)
{
    proto_error e;
    json_t *r = pc_solve(body, kind, &e);
    ck_assert_msg(r != NULL, "rejected: %s at %s", e.message, e.path);
    return r;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

/* ---- arms written here ---------------------------------------------------- */

#define PI2    1.5707963267948966
#define TWO_PI 6.283185307179586

typedef struct arm {
    const char *name;
    pc_joint j[7];
    double lim[7][2];
} arm;

/* The UR10's published lengths on the UR5's layout, elbow within +-pi. */
static const arm UR10 = {
    "ur10_like",
    {{{0, 0, 0.1273}, {0, 0, 0}, {0, 0, 1}, 'r'},
     {{0, 0.220941, 0}, {0, PI2, 0}, {0, 1, 0}, 'r'},
     {{0, -0.1719, 0.612}, {0, 0, 0}, {0, 1, 0}, 'r'},
     {{0, 0, 0.5723}, {0, PI2, 0}, {0, 1, 0}, 'r'},
     {{0, 0.1157, 0}, {0, 0, 0}, {0, 0, 1}, 'r'},
     {{0, 0, 0.1157}, {0, 0, 0}, {0, 1, 0}, 'r'},
     {{0, 0.0922, 0}, {-PI2, 0, 0}, {0, 0, 0}, 'f'}},
    {{-TWO_PI, TWO_PI},
     {-TWO_PI, TWO_PI},
     {-3.141592653589793, 3.141592653589793},
     {-TWO_PI, TWO_PI},
     {-TWO_PI, TWO_PI},
     {-TWO_PI, TWO_PI},
     {0, 0}},
};

/* A KUKA KR 6 R700-like arm (OPW a1 0.025, a2 -0.035, c1 0.4, c2 0.315,
 * c3 0.365, c4 0.08) written as KUKA's URDFs do: axes 1, 4 and 6 against
 * z and x, here also with the upper arm's zero tilted by 0.3 rad and the
 * tool turned about y. */
static const arm KR6 = {
    "kr6_like",
    {{{0, 0, 0.4}, {0, 0, 0}, {0, 0, -1}, 'r'},
     {{0.025, 0, 0}, {0, 0.3, 0}, {0, 1, 0}, 'r'},
     {{0.315, 0, 0}, {0, -0.3, 0}, {0, 1, 0}, 'r'},
     {{0, 0, 0.035}, {0, 0, 0}, {-1, 0, 0}, 'r'},
     {{0.365, 0, 0}, {0, 0, 0}, {0, 1, 0}, 'r'},
     {{0.08, 0, 0}, {0, 0, 0}, {-1, 0, 0}, 'r'},
     {{0, 0, 0}, {0, PI2, 0}, {0, 0, 0}, 'f'}},
    {{-2.967, 2.967},
     {-3.3, 0.8},
     {-2.0, 2.7},
     {-3.228, 3.228},
     {-2.09, 2.09},
     {-6.1, 6.1},
     {0, 0}},
};

static void random_q(const arm *a, double q[6])
{
    for (int k = 0; k < 6; k++)
        q[k] = urand(a->lim[k][0], a->lim[k][1]);
}

/* Tip pose of arm a at q by this test's FK, as a position and a unit
 * quaternion. */
static ik_xform arm_fk(const arm *a, const double *q)
{
    double R[9];
    ik_vec3 p = pc_fk(a->j, 7, q, R);
    ik_xform x = {p, ik_quat_normalize(ik_quat_from_mat3(R))};
    return x;
}

/* Position (max component) and rotation errors of q on arm a against x. */
static void arm_err(const arm *a, const double *q, ik_xform x, double *pos, double *rot)
{
    ik_xform y = arm_fk(a, q);
    *pos = fmax(fabs(y.p.x - x.p.x), fmax(fabs(y.p.y - x.p.y), fabs(y.p.z - x.p.z)));
    *rot = ik_quat_angle_between(y.q, x.q);
}

static bool arm_within(const arm *a, const double *q)
{
    for (int k = 0; k < 6; k++)
        if (!(q[k] >= a->lim[k][0] - 1e-9 && q[k] <= a->lim[k][1] + 1e-9))
            return false;
    return true;
}

/* A solve request on arm a (chain, target x, optional seed and options). */
static char *arm_body(const arm *a, ik_xform x, const double *seed, const char *options)
{
    char chain[8192];
    pc_joints_json(chain, sizeof chain, a->j, 7, &a->lim[0][0]);
    char seedtxt[256] = "";
    if (seed)
        snprintf(seedtxt, sizeof seedtxt, ",\"seed\":[%.17g,%.17g,%.17g,%.17g,%.17g,%.17g]",
                 seed[0], seed[1], seed[2], seed[3], seed[4], seed[5]);
    size_t n = strlen(chain) + 1024;
    char *b = malloc(n);
    snprintf(b, n,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],\"orientation\":"
             "[%.17g,%.17g,%.17g,%.17g]}%s,\"options\":{%s}}",
             chain, x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w, seedtxt,
             options ? options : "");
    return b;
}

static void joints_of(const json_t *a, double *q, size_t n)
{
    ck_assert_uint_eq(json_array_size(a), n);
    for (size_t k = 0; k < n; k++)
        q[k] = json_number_value(json_array_get(a, k));
}

/* ---- the robots of tests/data ------------------------------------------------ */

typedef struct robot {
    char *xml;
    size_t len;
    ik_chain chain;
} robot;

static void robot_load(robot *r, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/%s", pc_data_dir(), file);
    r->xml = pc_read_file(path, &r->len);
    ck_assert_msg(r->xml != NULL, "cannot read %s", path);
    ik_joint joints[32];
    size_t n;
    proto_error e;
    ck_assert_int_eq(
        proto_urdf_chain(r->xml, r->len, "base_link", "tool0", joints, 32, &n, NULL, &e), 0);
    ck_assert_int_eq(chain_init(&r->chain, joints, n), IK_OK);
}

static char *robot_body(const robot *r, const char *tip, const char *target, const char *seed,
                        const char *options)
{
    json_t *req = json_pack("{s:{s:s, s:s, s:s, s:s}}", "chain", "kind", "urdf", "urdf", r->xml,
                            "base", "base_link", "tip", tip);
    json_object_set_new(req, "target", json_loads(target, 0, NULL));
    if (seed)
        json_object_set_new(req, "seed", json_loads(seed, 0, NULL));
    json_object_set_new(req, "options", json_loads(options ? options : "{}", 0, NULL));
    char *b = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(req);
    return b;
}

static char *pose_target(ik_xform x)
{
    char *t = malloc(256);
    snprintf(t, 256, "{\"position\":[%.17g,%.17g,%.17g],\"orientation\":[%.17g,%.17g,%.17g,%.17g]}",
             x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w);
    return t;
}

static void random_chain_q(const ik_chain *c, double *q)
{
    for (size_t k = 0; k < c->dof; k++) {
        double lo = fmax(c->lower[k], -IK_PI), hi = fmin(c->upper[k], IK_PI);
        q[k] = urand(lo, hi);
    }
}

/* ---- auto picks the closed form -------------------------------------------------- */

/* The UR5 and the IRB 120 (URDF), full-pose targets from random
 * configurations: "auto" answers with the closed form, every answer on the
 * target within 1e-9 (exactness, not just the 1e-5 tolerance) by FK. */
START_TEST(test_auto_closed_urdf_robots)
{
    static const char *const files[] = {"ur5.urdf", "abb_irb120.urdf"};
    for (int f = 0; f < 2; f++) {
        robot rb;
        robot_load(&rb, files[f]);
        for (int i = 0; i < 40; i++) {
            double qt[6], q[6];
            random_chain_q(&rb.chain, qt);
            ik_xform x = ik_chain_fk(&rb.chain, qt);
            char *t = pose_target(x);
            char *body = robot_body(&rb, "tool0", t, NULL, NULL);
            json_t *r = ok(body, PROTO_SOLVE);
            ck_assert_str_eq(str(r, "solver"), "closed");
            ck_assert_msg(strcmp(str(r, "status"), "success") == 0, "%s sample %d: %s", files[f], i,
                          str(r, "status"));
            joints_of(json_object_get(r, "joints"), q, 6);
            ck_assert(ik_chain_within_limits(&rb.chain, q, 1e-12));
            ik_xform y = ik_chain_fk(&rb.chain, q);
            ck_assert_double_le(ik_vec3_dist(x.p, y.p), 1e-9);
            ck_assert_double_le(ik_quat_angle_between(x.q, y.q), 1e-9);
            ck_assert_uint_eq(json_integer_value(json_object_get(r, "iterations")), 0);
            json_decref(r);
            free(body);
            free(t);
        }
        free(rb.xml);
    }
}
END_TEST

/* The UR10-like and the KR6-like arms as joint lists: the same, by this
 * test's own FK. */
START_TEST(test_auto_closed_joint_lists)
{
    const arm *arms[2] = {&UR10, &KR6};
    for (int a = 0; a < 2; a++) {
        for (int i = 0; i < 40; i++) {
            double qt[6], q[6], pe, re;
            random_q(arms[a], qt);
            ik_xform x = arm_fk(arms[a], qt);
            char *body = arm_body(arms[a], x, NULL, NULL);
            json_t *r = ok(body, PROTO_SOLVE);
            ck_assert_str_eq(str(r, "solver"), "closed");
            ck_assert_msg(strcmp(str(r, "status"), "success") == 0, "%s sample %d: %s",
                          arms[a]->name, i, str(r, "status"));
            joints_of(json_object_get(r, "joints"), q, 6);
            ck_assert(arm_within(arms[a], q));
            arm_err(arms[a], q, x, &pe, &re);
            ck_assert_msg(pe <= 1e-9 && re <= 1e-9, "%s sample %d: errors %g %g", arms[a]->name, i,
                          pe, re);
            json_decref(r);
            free(body);
        }
    }
}
END_TEST

/* What the closed form cannot give goes to numeric under "auto": a
 * position-only target and a weighted one; asked for by name, the closed
 * solver refuses them with the member's path. */
START_TEST(test_auto_numeric_when_not_full_pose)
{
    double qt[6] = {0.3, -1.0, 1.2, -0.8, 0.6, 0.4};
    ik_xform x = arm_fk(&UR10, qt);
    char chain[8192], body[16384];
    pc_joints_json(chain, sizeof chain, UR10.j, 7, &UR10.lim[0][0]);
    snprintf(body, sizeof body, "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g]}}",
             chain, x.p.x, x.p.y, x.p.z);
    json_t *r = ok(body, PROTO_SOLVE);
    ck_assert_str_eq(str(r, "solver"), "numeric");
    ck_assert_str_eq(str(r, "status"), "success");
    double q[6];
    joints_of(json_object_get(r, "joints"), q, 6);
    ck_assert_double_le(ik_vec3_dist(arm_fk(&UR10, q).p, x.p), 1e-4);
    json_decref(r);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],\"orientation\":"
             "[%.17g,%.17g,%.17g,%.17g],\"weights\":[1,1,1,0,0,1]}}",
             chain, x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w);
    r = ok(body, PROTO_SOLVE);
    ck_assert_str_eq(str(r, "solver"), "numeric");
    json_decref(r);
    /* by name */
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g]},\"options\":"
             "{\"solver\":\"closed\"}}",
             chain, x.p.x, x.p.y, x.p.z);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/orientation");
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[%.17g,%.17g,%.17g],\"orientation\":"
             "[%.17g,%.17g,%.17g,%.17g],\"weights\":[1,1,1,0,0,1]},\"options\":{\"solver\":"
             "\"closed\"}}",
             chain, x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/target/weights");
    /* a batch decided by its first target: a later position-only one is
     * refused with its path */
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"targets\":[{\"position\":[%.17g,%.17g,%.17g],\"orientation\":"
             "[%.17g,%.17g,%.17g,%.17g]},{\"position\":[0.5,0.2,0.3]}]}",
             chain, x.p.x, x.p.y, x.p.z, x.q.x, x.q.y, x.q.z, x.q.w);
    pc_reject(body, PROTO_BATCH, "invalid_request", 400, "/targets/1/orientation");
}
END_TEST

/* "closed" on a chain without a closed form is refused at /options/solver,
 * naming why (ik_closed_why_name). */
START_TEST(test_closed_refused_names_why)
{
    robot iiwa;
    char path[1024];
    snprintf(path, sizeof path, "%s/robots/kuka_iiwa14_r820.urdf", pc_data_dir());
    iiwa.xml = pc_read_file(path, &iiwa.len);
    ck_assert_ptr_nonnull(iiwa.xml);
    char *body = robot_body(&iiwa, "tool0", "{\"position\":[0.5,0,0.6],\"orientation\":[0,1,0,0]}",
                            NULL, "{\"solver\":\"closed\"}");
    proto_error e;
    ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
    ck_assert_str_eq(e.path, "/options/solver");
    ck_assert_msg(strstr(e.message, "not_six_joints") != NULL, "%s", e.message);
    free(body);
    /* six joints whose wrist axes do not meet */
    arm bent = KR6;
    bent.j[4].xyz[1] = 0.05; /* axis 5 moved off axis 4 */
    bent.j[5].xyz[2] = 0.04;
    double q[6] = {0, 0, 0, 0, 0, 0};
    body = arm_body(&bent, arm_fk(&bent, q), NULL, "\"solver\":\"closed\"");
    ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
    ck_assert_str_eq(e.path, "/options/solver");
    ck_assert_msg(strstr(e.message, "geometry") != NULL, "%s", e.message);
    free(body);
    /* "auto" on it: numeric */
    body = arm_body(&bent, arm_fk(&bent, q), NULL, NULL);
    json_t *r = ok(body, PROTO_SOLVE);
    ck_assert_str_eq(str(r, "solver"), "numeric");
    json_decref(r);
    free(body);
    free(iiwa.xml);
}
END_TEST

/* ---- seeds, every solution, steps --------------------------------------------- */

/* The answer is the solution nearest the seed: a seed next to any of the
 * listed solutions gets that one. options.all_solutions lists them all,
 * nearest the seed first, each on the target by FK and inside the limits,
 * the UR10-like arm's whole turns included (more than 8). */
START_TEST(test_all_solutions_and_nearest)
{
    const arm *arms[2] = {&UR10, &KR6};
    for (int a = 0; a < 2; a++) {
        for (int i = 0; i < 10; i++) {
            double qt[6], seed[6];
            random_q(arms[a], qt);
            for (int k = 0; k < 6; k++)
                seed[k] = qt[k] + urand(-0.05, 0.05);
            ik_xform x = arm_fk(arms[a], qt);
            for (int deg = 0; deg < 2; deg++) {
                double u = deg ? 180 / IK_PI : 1, su[6];
                for (int k = 0; k < 6; k++)
                    su[k] = seed[k] * u;
                char *body = arm_body(arms[a], x, su,
                                      deg ? "\"all_solutions\":true,\"units\":\"degrees\""
                                          : "\"all_solutions\":true");
                json_t *r = ok(body, PROTO_SOLVE);
                free(body);
                ck_assert_str_eq(str(r, "status"), "success");
                json_t *all = json_object_get(r, "solutions");
                size_t n = json_array_size(all);
                size_t count = (size_t)json_integer_value(json_object_get(r, "solution_count"));
                ck_assert_uint_ge(n, 1);
                ck_assert_uint_eq(n, count < PROTO_MAX_SOLUTIONS ? count : PROTO_MAX_SOLUTIONS);
                if (a == 0)
                    ck_assert_uint_gt(count, 8); /* +-2 pi joints: whole turns */
                double q0[6], prev = -1;
                joints_of(json_object_get(r, "joints"), q0, 6);
                bool found = false;
                for (size_t s = 0; s < n; s++) {
                    double q[6], pe, re, d = 0;
                    joints_of(json_array_get(all, s), q, 6);
                    for (int k = 0; k < 6; k++) {
                        q[k] /= u;
                        d += (q[k] - seed[k]) * (q[k] - seed[k]);
                    }
                    ck_assert(arm_within(arms[a], q));
                    arm_err(arms[a], q, x, &pe, &re);
                    ck_assert_msg(pe <= 1e-9 && re <= 1e-9, "%s solution %zu: %g %g", arms[a]->name,
                                  s, pe, re);
                    ck_assert_double_ge(d, prev - 1e-12); /* nearest first */
                    prev = d;
                    if (s == 0)
                        for (int k = 0; k < 6; k++)
                            ck_assert_double_eq_tol(q[k] * u, q0[k], 1e-9 * u);
                    double dt = 0;
                    for (int k = 0; k < 6; k++)
                        dt = fmax(dt, fabs(q[k] - qt[k]));
                    found |= dt < 1e-6;
                }
                ck_assert_msg(found, "%s: the drawn configuration is not listed", arms[a]->name);
                /* the answer is the drawn configuration: the seed is next
                 * to it */
                for (int k = 0; k < 6; k++)
                    ck_assert_double_eq_tol(q0[k] / u, qt[k], 1e-6);
                /* a seed next to another solution gets that one */
                if (n > 1 && deg == 0) {
                    double q1[6];
                    joints_of(json_array_get(all, n - 1), q1, 6);
                    body = arm_body(arms[a], x, q1, NULL);
                    json_t *r2 = ok(body, PROTO_SOLVE);
                    free(body);
                    double q2[6];
                    joints_of(json_object_get(r2, "joints"), q2, 6);
                    for (int k = 0; k < 6; k++)
                        ck_assert_double_eq_tol(q2[k], q1[k], 1e-6);
                    json_decref(r2);
                }
                json_decref(r);
            }
        }
    }
}
END_TEST

/* options.all_solutions needs the closed solver (path and reason), and a
 * batch asking for it is bounded. */
START_TEST(test_all_solutions_refusals)
{
    static char chain[8192], body[1 << 20];
    pc_joints_json(chain, sizeof chain, UR10.j, 7, &UR10.lim[0][0]);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.5,0.2,0.3]},\"options\":"
             "{\"all_solutions\":true}}",
             chain);
    proto_error e;
    ck_assert_ptr_null(pc_solve(body, PROTO_SOLVE, &e));
    ck_assert_str_eq(e.path, "/options/all_solutions");
    ck_assert_msg(strstr(e.message, "full pose") != NULL, "%s", e.message);
    snprintf(body, sizeof body,
             "{\"chain\":%s,\"target\":{\"position\":[0.5,0.2,0.3]},\"options\":"
             "{\"all_solutions\":1}}",
             chain);
    pc_reject(body, PROTO_SOLVE, "invalid_request", 400, "/options/all_solutions");
    pc_reject("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,1]},\"target\":{\"position\":"
              "[1,1]},\"options\":{\"all_solutions\":true}}",
              PROTO_SOLVE, "invalid_request", 400, "/options/all_solutions");
    /* PROTO_MAX_SOLUTION_TARGETS + 1 targets */
    size_t off = (size_t)snprintf(body, sizeof body, "{\"chain\":%s,\"targets\":[", chain);
    for (int i = 0; i <= PROTO_MAX_SOLUTION_TARGETS; i++)
        off += (size_t)snprintf(body + off, sizeof body - off,
                                "%s{\"position\":[0.5,0.2,0.3],\"orientation\":[0,0,0,1]}",
                                i ? "," : "");
    snprintf(body + off, sizeof body - off, "],\"options\":{\"all_solutions\":true}}");
    pc_reject(body, PROTO_BATCH, "too_large", 413, "/targets");
    /* the same bound on a batch of items: the items past it are answered
     * with the error, the others solved */
    off = (size_t)snprintf(body, sizeof body, "{\"items\":[");
    for (int i = 0; i <= PROTO_MAX_SOLUTION_TARGETS; i++)
        off += (size_t)snprintf(body + off, sizeof body - off,
                                "%s{\"chain\":%s,\"target\":{\"position\":[0.5,0.2,0.3],"
                                "\"orientation\":[0,0,0,1]}}",
                                i ? "," : "", chain);
    snprintf(body + off, sizeof body - off, "],\"options\":{\"all_solutions\":true}}");
    proto_items *it;
    ck_assert_int_eq(proto_items_decode(body, strlen(body), NULL, NULL, NULL, &it, &e), 0);
    ck_assert_ptr_nonnull(proto_items_job(it, PROTO_MAX_SOLUTION_TARGETS - 1));
    ck_assert_ptr_null(proto_items_job(it, PROTO_MAX_SOLUTION_TARGETS));
    proto_items_free(it);
}
END_TEST

/* max_joint_step with the closed form: the nearest solution within the
 * step; otherwise refused with the seed and the refused step. */
START_TEST(test_closed_max_joint_step)
{
    double qt[6] = {0.4, -1.1, 1.3, -1.6, 1.2, 0.3}, seed[6], q[6];
    ik_xform x = arm_fk(&UR10, qt);
    for (int far = 0; far < 2; far++) {
        for (int k = 0; k < 6; k++)
            seed[k] = qt[k] + (far ? 0.9 : 0.05);
        char *body = arm_body(&UR10, x, seed, "\"max_joint_step\":0.2");
        json_t *r = ok(body, PROTO_SOLVE);
        free(body);
        ck_assert_str_eq(str(r, "solver"), "closed");
        joints_of(json_object_get(r, "joints"), q, 6);
        double step = pc_num(r, "max_joint_step"), big = 0;
        for (int k = 0; k < 6; k++)
            big = fmax(big, fabs(q[k] - seed[k]));
        if (far) {
            ck_assert_str_eq(str(r, "reason"), "joint_step");
            ck_assert_double_eq_tol(big, 0, 1e-12);
            ck_assert_double_gt(step, 0.2);
        } else {
            ck_assert_str_eq(str(r, "status"), "success");
            ck_assert_double_eq_tol(step, big, 1e-12);
            ck_assert_double_le(step, 0.2);
            double pe, re;
            arm_err(&UR10, q, x, &pe, &re);
            ck_assert(pe <= 1e-9 && re <= 1e-9);
        }
        json_decref(r);
    }
}
END_TEST

/* ---- the chain description -------------------------------------------------------- */

START_TEST(test_describe_closed_form)
{
    static const struct {
        const char *file, *tip, *family, *why;
    } cases[] = {
        {"ur5.urdf", "tool0", "ur", NULL},
        {"abb_irb120.urdf", "tool0", "opw", NULL},
        {"kuka_iiwa14_r820.urdf", "tool0", "none", "not_six_joints"},
    };
    for (size_t i = 0; i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/robots/%s", pc_data_dir(), cases[i].file);
        char *xml = pc_read_file(path, NULL);
        ck_assert_ptr_nonnull(xml);
        json_t *cj = json_pack("{s:s, s:s, s:s, s:s}", "kind", "urdf", "urdf", xml, "base",
                               "base_link", "tip", cases[i].tip);
        proto_error e;
        proto_chain *c = proto_chain_decode_json(cj, "", NULL, &e);
        ck_assert_ptr_nonnull(c);
        json_t *d = proto_chain_describe(c);
        json_t *sol = json_object_get(d, "solvers");
        bool has_closed = false;
        for (size_t k = 0; k < json_array_size(sol); k++)
            has_closed |= strcmp(json_string_value(json_array_get(sol, k)), "closed") == 0;
        json_t *cf = json_object_get(d, "closed_form");
        ck_assert_ptr_nonnull(cf);
        ck_assert_str_eq(str(cf, "family"), cases[i].family);
        ck_assert(has_closed == (cases[i].why == NULL));
        if (cases[i].why) {
            ck_assert_str_eq(str(cf, "why"), cases[i].why);
            ck_assert(strlen(str(cf, "message")) > 10);
        }
        json_decref(d);
        proto_chain_unref(c);
        json_decref(cj);
        free(xml);
    }
    /* a six-joint chain with a prismatic joint; a bones chain has none */
    arm p = KR6;
    p.j[0].type = 'p';
    p.lim[0][0] = 0;
    p.lim[0][1] = 0.2;
    char chain[8192];
    pc_joints_json(chain, sizeof chain, p.j, 7, &p.lim[0][0]);
    proto_error e;
    proto_chain *c = proto_chain_decode(chain, strlen(chain), NULL, &e);
    ck_assert_ptr_nonnull(c);
    json_t *d = proto_chain_describe(c);
    ck_assert_str_eq(str(json_object_get(d, "closed_form"), "why"), "prismatic_joint");
    json_decref(d);
    proto_chain_unref(c);
    const char *bones = "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,1],[0,0,2]]}";
    c = proto_chain_decode(bones, strlen(bones), NULL, &e);
    d = proto_chain_describe(c);
    ck_assert_ptr_null(json_object_get(d, "closed_form"));
    json_decref(d);
    proto_chain_unref(c);
}
END_TEST

/* ---- why a solve failed ---------------------------------------------------------------- */

START_TEST(test_causes)
{
    /* beyond the reach: closed (auto) and numeric both say so, numeric
     * without spending its budget */
    double q0[6] = {0, 0, 0, 0, 0, 0};
    ik_xform far = arm_fk(&UR10, q0);
    far.p = ik_v3(3.0, 0.0, 0.5);
    for (int numeric = 0; numeric < 2; numeric++) {
        char *body = arm_body(&UR10, far, NULL,
                              numeric ? "\"solver\":\"numeric\",\"timeout_ms\":1000,"
                                        "\"max_iterations\":10000"
                                      : NULL);
        json_t *r = ok(body, PROTO_SOLVE);
        free(body);
        ck_assert_str_eq(str(r, "solver"), numeric ? "numeric" : "closed");
        ck_assert_str_eq(str(r, "status"), "no_ik_solution");
        ck_assert_str_eq(str(r, "reason"), "unreachable");
        ck_assert_str_eq(str(r, "cause"), "out_of_reach");
        ck_assert_uint_le(json_integer_value(json_object_get(r, "iterations")), 50);
        ck_assert_uint_eq(json_integer_value(json_object_get(r, "restarts")), 0);
        /* the best pose and its error, by FK */
        double q[6];
        joints_of(json_object_get(r, "joints"), q, 6);
        ck_assert(arm_within(&UR10, q));
        ck_assert_double_eq_tol(pc_num(r, "position_error"),
                                ik_vec3_dist(arm_fk(&UR10, q).p, far.p), 1e-9);
        json_decref(r);
    }
    /* within reach, outside the limits: the KR6-like arm with its
     * shoulder and elbow held near zero */
    arm held = KR6;
    held.lim[1][0] = held.lim[2][0] = -0.2;
    held.lim[1][1] = held.lim[2][1] = 0.2;
    ik_xform x = {{0.3, 0.2, 0.1}, {0, 0, 0, 1}};
    char *body = arm_body(&held, x, NULL, "\"solver\":\"numeric\",\"timeout_ms\":2");
    json_t *r = ok(body, PROTO_SOLVE);
    free(body);
    ck_assert_str_eq(str(r, "status"), "timed_out");
    ck_assert_str_eq(str(r, "cause"), "outside_limits");
    json_decref(r);
    body = arm_body(&held, x, NULL, NULL); /* closed: certain */
    r = ok(body, PROTO_SOLVE);
    free(body);
    ck_assert_str_eq(str(r, "solver"), "closed");
    ck_assert_str_eq(str(r, "reason"), "joint_limits");
    ck_assert_str_eq(str(r, "cause"), "outside_limits");
    json_decref(r);
    /* not found in the budget: one iteration on a reachable target */
    double qt[6] = {0.3, -1.0, 1.2, -0.8, 0.6, 0.4};
    body = arm_body(&UR10, arm_fk(&UR10, qt), NULL,
                    "\"solver\":\"numeric\",\"max_iterations\":1,\"timeout_ms\":0");
    r = ok(body, PROTO_SOLVE);
    free(body);
    ck_assert_str_eq(str(r, "reason"), "not_converged");
    ck_assert_str_eq(str(r, "cause"), "budget");
    json_decref(r);
    /* success has none; the seeds' solvers: too far and too close */
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.6]},\"target\":{\"position\":[1,1]}}",
           PROTO_SOLVE);
    ck_assert_ptr_null(json_object_get(r, "cause"));
    json_decref(r);
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.6]},\"target\":{\"position\":[3,0]}}",
           PROTO_SOLVE);
    ck_assert_str_eq(str(r, "cause"), "out_of_reach");
    json_decref(r);
    r = ok("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.6]},\"target\":{\"position\":"
           "[0.1,0]}}",
           PROTO_SOLVE);
    ck_assert_str_eq(str(r, "cause"), "no_solution");
    json_decref(r);
    r = ok("{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,1],[0,0,2]]},"
           "\"target\":{\"position\":[0,0,5]}}",
           PROTO_SOLVE);
    ck_assert_str_eq(str(r, "cause"), "out_of_reach");
    json_decref(r);
}
END_TEST

/* ---- the UR5's singular poses ------------------------------------------------------ */

/* The UR5 of tests/data/robots/ur5.urdf, base_link -> tool0, as its joints
 * say (the URDF's own digits), for this test's FK. */
static const arm UR5 = {
    "ur5",
    {{{0, 0, 0.089159}, {0, 0, 0}, {0, 0, 1}, 'r'},
     {{0, 0.13585, 0}, {0, 1.57079632679, 0}, {0, 1, 0}, 'r'},
     {{0, -0.1197, 0.425}, {0, 0, 0}, {0, 1, 0}, 'r'},
     {{0, 0, 0.39225}, {0, 1.57079632679, 0}, {0, 1, 0}, 'r'},
     {{0, 0.093, 0}, {0, 0, 0}, {0, 0, 1}, 'r'},
     {{0, 0, 0.09465}, {0, 0, 0}, {0, 1, 0}, 'r'},
     {{0, 0.0823, 0}, {-1.57079632679, 0, 0}, {0, 0, 0}, 'f'}},
    {{-6.28318530718, 6.28318530718},
     {-6.28318530718, 6.28318530718},
     {-3.14159265359, 3.14159265359},
     {-6.28318530718, 6.28318530718},
     {-6.28318530718, 6.28318530718},
     {-6.28318530718, 6.28318530718},
     {0, 0}},
};

static void ur5_check(const double *q, ik_xform x, const char *what, int mode, int i)
{
    double pe, re;
    ck_assert_msg(arm_within(&UR5, q), "%s mode %d sample %d: outside the limits", what, mode, i);
    arm_err(&UR5, q, x, &pe, &re);
    ck_assert_msg(pe <= 1e-5 && re <= 1e-5, "%s mode %d sample %d: off by %g m, %g rad", what,
                  mode, i, pe, re);
}

/* Poses made by FK of random joints with the elbow stretched (q3 = 0) and
 * the wrist folded (q5 = 0, or pi), together (mode 0: the double singularity,
 * where only q4 + q6 is fixed and the elbow is at the workspace boundary)
 * and each alone (modes 1 and 2): "auto" and "closed", without a seed and
 * with a random one, succeed with joints on the pose (this test's FK, 1e-5)
 * inside the limits, and options.all_solutions lists only such joints. The
 * closed form used to answer no_solution for a fifth of the double ones. */
START_TEST(test_ur5_singular_poses)
{
    robot rb;
    robot_load(&rb, "ur5.urdf");
    static const char *const opts[] = {"{}", "{\"solver\":\"closed\"}",
                                       "{\"solver\":\"closed\",\"all_solutions\":true}"};
    for (int mode = 0; mode < 3; mode++) {
        for (int i = 0; i < 120; i++) {
            double qt[6], seed[6];
            random_q(&UR5, qt);
            for (int k = 0; k < 6; k++)
                qt[k] = fmod(qt[k], IK_PI); /* one turn: the poses, not the turns */
            if (mode != 2)
                qt[2] = 0.0;
            if (mode != 1)
                qt[4] = i % 4 == 3 ? IK_PI : 0.0; /* folded either way */
            for (int k = 0; k < 6; k++)
                seed[k] = urand(-IK_PI, IK_PI);
            ik_xform x = arm_fk(&UR5, qt);
            char *t = pose_target(x);
            char seedtxt[256];
            snprintf(seedtxt, sizeof seedtxt, "[%.17g,%.17g,%.17g,%.17g,%.17g,%.17g]", seed[0],
                     seed[1], seed[2], seed[3], seed[4], seed[5]);
            for (int o = 0; o < 3; o++) {
                for (int s = 0; s < 2; s++) {
                    char *body = robot_body(&rb, "tool0", t, s ? seedtxt : NULL, opts[o]);
                    json_t *r = ok(body, PROTO_SOLVE);
                    free(body);
                    char what[96];
                    snprintf(what, sizeof what, "%s%s (%s)", opts[o], s ? " seeded" : "",
                             str(r, "solver"));
                    ck_assert_msg(strcmp(str(r, "status"), "success") == 0,
                                  "%s mode %d sample %d: %s (%s)", what, mode, i,
                                  str(r, "status"), str(r, "cause"));
                    double q[6];
                    joints_of(json_object_get(r, "joints"), q, 6);
                    ur5_check(q, x, what, mode, i);
                    json_t *all = json_object_get(r, "solutions");
                    if (o == 2) {
                        ck_assert_uint_ge(json_array_size(all), 1);
                        for (size_t a = 0; a < json_array_size(all); a++) {
                            joints_of(json_array_get(all, a), q, 6);
                            ur5_check(q, x, what, mode, i);
                        }
                    }
                    json_decref(r);
                }
            }
            free(t);
        }
    }
    free(rb.xml);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("proto_solver");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_auto_closed_urdf_robots);
    tcase_add_test(tc, test_auto_closed_joint_lists);
    tcase_add_test(tc, test_auto_numeric_when_not_full_pose);
    tcase_add_test(tc, test_closed_refused_names_why);
    tcase_add_test(tc, test_all_solutions_and_nearest);
    tcase_add_test(tc, test_all_solutions_refusals);
    tcase_add_test(tc, test_closed_max_joint_step);
    tcase_add_test(tc, test_describe_closed_form);
    tcase_add_test(tc, test_causes);
    tcase_add_test(tc, test_ur5_singular_poses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

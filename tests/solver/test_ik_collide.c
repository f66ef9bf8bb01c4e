/*
 * test_ik_collide.c: solver/ik_collide.h, checked against geometry written
 * here (collide_data.h's reference, itself checked against sampled
 * surfaces), never against ik_collide.c's own numbers:
 *   - the distance of a sphere to a box, a sphere and a capsule, outside
 *     and inside, with the nearest points on both surfaces;
 *   - the KUKA iiwa with its sphere model of tests/data among three boxes:
 *     the robot's distance at random configurations equals the brute-force
 *     reference over the pairs the URDF's joint list says are checked;
 *   - the penalty and its gradient: the penalty summed here pair by pair,
 *     the gradient against central differences;
 *   - the covers of capsules, cylinders and boxes contain every sampled
 *     point of the primitive and bulge little; the skeleton;
 *   - the allowed pairs (defaults, SRDF-like changes, the pairs touching
 *     at a configuration), rigid distances, the servo scaling (the arm
 *     slows, stops short of the pillar, moves away again), invalid input,
 *     and queries that write only inside the workspace they announce.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_chain.h"
#include "solver/ik_collide.h"
#include "solver/ik_math.h"
#include "solver/ik_rng.h"
#include "solver/ik_servo.h"
#include "solver/ik_status.h"
#include "chains.h"
#include "collide_data.h"
#include "storage.h"

static ik_collide_model M; /* large: static */
static unsigned char ws[1 << 18];

static ik_chain iiwa(void)
{
    ik_joint j[IIWA_JOINTS];
    iiwa_joints(j);
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, IIWA_JOINTS), IK_OK);
    return c;
}

/* The iiwa's model (M), its spheres and scene (r). */
static ik_chain iiwa_model(cd_robot *r)
{
    ik_chain c = iiwa();
    cd_read("kuka_iiwa14_r820.json", IIWA_LINK_NAMES, IIWA_LINKS, r);
    cd_model_chain(&M, &c, r, IIWA_LINK_BODY, IIWA_LINKS);
    return c;
}

static void random_q(const ik_chain *c, ik_rng *g, double *q)
{
    for (size_t k = 0; k < c->dof; k++)
        q[k] = ik_rng_uniform(g, c->lower[k], c->upper[k]);
}

static ik_vec3 rand_vec(ik_rng *g, double s)
{
    return ik_v3(ik_rng_uniform(g, -s, s), ik_rng_uniform(g, -s, s), ik_rng_uniform(g, -s, s));
}

static ik_quat rand_quat(ik_rng *g)
{
    ik_quat q = {ik_rng_uniform(g, -1, 1), ik_rng_uniform(g, -1, 1), ik_rng_uniform(g, -1, 1),
                 ik_rng_uniform(g, -1, 1)};
    return ik_quat_normalize(q);
}

static ik_obstacle rand_obstacle(ik_rng *g, int kind)
{
    ik_obstacle o;
    if (kind == 0)
        ck_assert_int_eq(
            ik_obstacle_box(&o, rand_vec(g, 0.5), rand_quat(g),
                            ik_v3(ik_rng_uniform(g, 0.05, 0.8), ik_rng_uniform(g, 0.05, 0.8),
                                  ik_rng_uniform(g, 0.05, 0.8))),
            IK_OK);
    else if (kind == 1)
        ck_assert_int_eq(ik_obstacle_sphere(&o, rand_vec(g, 0.5), ik_rng_uniform(g, 0, 0.4)),
                         IK_OK);
    else
        ck_assert_int_eq(
            ik_obstacle_capsule(&o, rand_vec(g, 0.5), rand_vec(g, 0.5), ik_rng_uniform(g, 0, 0.3)),
            IK_OK);
    return o;
}

/* ---- the reference itself against sampled surfaces ------------------------ */

/* The distance from point p to the surface of o, by sampling it densely
 * (a grid on each face of a box, rings on a capsule), and whether p is
 * inside: what ref_obstacle(p, 0, o) must equal up to the sampling step. */
static double sampled(ik_vec3 p, const ik_obstacle *o, double *step)
{
    double best = INFINITY;
    const int N = 60;
    if (o->shape == IK_SHAPE_BOX) {
        double h[3] = {o->half.x, o->half.y, o->half.z};
        for (int ax = 0; ax < 3; ax++)
            for (int sgn = -1; sgn <= 1; sgn += 2)
                for (int i = 0; i <= N; i++)
                    for (int j = 0; j <= N; j++) {
                        double v[3];
                        int a1 = (ax + 1) % 3, a2 = (ax + 2) % 3;
                        v[ax] = sgn * h[ax];
                        v[a1] = -h[a1] + 2 * h[a1] * i / N;
                        v[a2] = -h[a2] + 2 * h[a2] * j / N;
                        ik_vec3 w =
                            ik_vec3_add(o->p, ik_quat_rotate(o->q, ik_v3(v[0], v[1], v[2])));
                        best = fmin(best, ik_vec3_dist(p, w));
                    }
        *step = 2.0 * ik_vec3_len(o->half) / N;
        ik_vec3 l = ik_quat_rotate(ik_quat_conj(o->q), ik_vec3_sub(p, o->p));
        bool in = fabs(l.x) <= h[0] && fabs(l.y) <= h[1] && fabs(l.z) <= h[2];
        return in ? -best : best;
    }
    /* capsule (a sphere is a capsule of zero length): points of the axis,
     * then the radius */
    ik_vec3 a = o->p, b = o->shape == IK_SHAPE_CAPSULE ? o->p2 : o->p;
    double axis = INFINITY;
    for (int i = 0; i <= 20 * N; i++)
        axis = fmin(axis, ik_vec3_dist(p, ik_vec3_lerp(a, b, (double)i / (20 * N))));
    *step = ik_vec3_dist(a, b) / (20 * N);
    return axis - o->radius;
}

START_TEST(test_reference_against_samples)
{
    ik_rng g = {11};
    for (int i = 0; i < 120; i++) {
        ik_obstacle o = rand_obstacle(&g, i % 3);
        ik_vec3 p = rand_vec(&g, 0.9);
        double step;
        double s = sampled(p, &o, &step);
        double d = ref_obstacle(p, 0.0, &o, NULL);
        ck_assert_msg(fabs(s - d) <= step + 1e-12, "shape %d: sampled %g reference %g", i % 3, s,
                      d);
    }
}
END_TEST

/* ---- sphere against obstacle ------------------------------------------------ */

/* A one-joint chain whose base body carries one link: spheres there stay
 * where they are put. */
static void one_sphere_model(ik_vec3 c, double r)
{
    ik_joint j = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -1, 1);
    ik_chain ch;
    ck_assert_int_eq(chain_init(&ch, &j, 1), IK_OK);
    ck_assert_int_eq(ik_collide_model_from_chain(&M, &ch), IK_OK);
    ck_assert_int_eq(ik_collide_add_link(&M, 0, ik_xform_identity()), 0);
    ck_assert_int_eq(ik_collide_add_sphere(&M, 0, c, r), IK_OK);
    ck_assert_int_eq(ik_collide_model_finish(&M), IK_OK);
}

START_TEST(test_sphere_against_shapes)
{
    ik_rng g = {12};
    size_t inside = 0;
    for (int i = 0; i < 3000; i++) {
        ik_obstacle o = rand_obstacle(&g, i % 3);
        ik_vec3 c = rand_vec(&g, 0.9);
        double r = ik_rng_uniform(&g, 0, 0.2);
        one_sphere_model(c, r);
        ik_collide_scene sc = {&o, 1};
        double q = 0.3;
        ik_collide_pair p;
        double d = ik_collide_distance(&M, &sc, &q, ws, sizeof ws, &p);
        ik_vec3 at;
        double want = ref_obstacle(c, r, &o, &at);
        ck_assert_msg(fabs(d - want) < 1e-12, "shape %d: %.17g against %.17g", i % 3, d, want);
        inside += want + r < 0;
        ck_assert_int_eq(p.link, 0);
        ck_assert_int_eq(p.obstacle, 0);
        ck_assert_int_eq(p.other_link, -1);
        ck_assert_double_eq(p.distance, d);
        /* the nearest points: on the sphere, on the obstacle, d apart */
        ck_assert_double_eq_tol(ik_vec3_dist(p.point, c), r, 1e-12);
        ck_assert_double_eq_tol(fabs(ref_obstacle(p.other, 0.0, &o, NULL)), 0.0, 1e-12);
        ck_assert_double_eq_tol(ik_vec3_dist(p.point, p.other), fabs(d), 1e-12);
        if (o.shape != IK_SHAPE_CAPSULE || ik_vec3_dist(c, at) > 0)
            ck_assert_double_eq_tol(ik_vec3_dist(p.other, at), 0.0, 1e-9);
    }
    ck_assert_uint_gt(inside, 20); /* centres inside obstacles were met */
}
END_TEST

/* ---- the iiwa ------------------------------------------------------------- */

START_TEST(test_iiwa_distance_against_reference)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    ck_assert_uint_eq(M.nspheres, 23);
    ck_assert_uint_eq(r.nobst, 3);
    bool chk[IIWA_LINKS * IIWA_LINKS];
    iiwa_checked(chk);
    ik_collide_scene sc = {r.obst, r.nobst};
    ik_rng g = {13};
    size_t self = 0, world = 0, hit = 0;
    for (int i = 0; i < 3000; i++) {
        double q[7];
        random_q(&c, &g, q);
        ik_collide_pair p;
        double d = ik_collide_distance(&M, &sc, q, ws, sizeof ws, &p);
        double want = ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, r.obst, r.nobst, q);
        ck_assert_msg(fabs(d - want) < 1e-12, "%.17g against %.17g", d, want);
        self += p.other_link >= 0;
        world += p.obstacle >= 0;
        hit += d < 0;
        /* the pair is one the reference checks */
        if (p.other_link >= 0)
            ck_assert(chk[p.link * IIWA_LINKS + p.other_link]);
    }
    ck_assert_uint_gt(self, 30);
    ck_assert_uint_gt(world, 30);
    ck_assert_uint_gt(hit, 100);
    /* self-collision only: no scene */
    double q[7] = {0, 1.5, 0, 2.0, 0, 2.0, 0};
    double d = ik_collide_distance(&M, NULL, q, ws, sizeof ws, NULL);
    ck_assert_double_eq_tol(d, ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, NULL, 0, q),
                            1e-12);
}
END_TEST

/* The penalty summed pair by pair here, for the same pairs. */
static double ref_penalty(const ik_chain *c, const cd_robot *r, const bool *chk, const double *q,
                          double active)
{
    ik_xform F[IK_COLLIDE_MAX_BODIES];
    F[0] = ik_xform_identity();
    ik_chain_frames(c, q, F + 1);
    ik_vec3 w[CD_MAX_SPHERES];
    for (size_t i = 0; i < r->ns; i++)
        w[i] = ik_xform_point(F[IIWA_LINK_BODY[r->s[i].link]], r->s[i].c);
    double P = 0;
    for (size_t i = 0; i < r->ns; i++) {
        for (size_t k = 0; k < r->nobst; k++) {
            double d = ref_obstacle(w[i], r->s[i].r, &r->obst[k], NULL);
            if (d < active)
                P += 0.5 * (active - d) * (active - d);
        }
        for (size_t j = 0; j < r->ns; j++) {
            int a = r->s[i].link, b = r->s[j].link;
            double d = ik_vec3_dist(w[i], w[j]) - r->s[i].r - r->s[j].r;
            if (a < b && chk[a * IIWA_LINKS + b] && d < active)
                P += 0.5 * (active - d) * (active - d);
        }
    }
    return P;
}

START_TEST(test_penalty_and_gradient)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    bool chk[IIWA_LINKS * IIWA_LINKS];
    iiwa_checked(chk);
    ik_collide_scene sc = {r.obst, r.nobst};
    ik_rng g = {14};
    const double active = 0.05;
    size_t tested = 0;
    for (int i = 0; i < 4000 && tested < 200; i++) {
        double q[7], grad[7];
        random_q(&c, &g, q);
        ik_collide_pair p;
        double P = ik_collide_penalty(&M, &sc, q, active, grad, ws, sizeof ws, &p);
        double want = ref_penalty(&c, &r, chk, q, active);
        ck_assert_double_eq_tol(P, want, 1e-12 * (1 + want));
        if (!(P > 1e-6))
            continue;
        tested++;
        /* the closest pair is exact when nearer than the activation */
        ck_assert_double_eq_tol(
            p.distance, ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, r.obst, r.nobst, q),
            1e-12);
        for (int k = 0; k < 7; k++) {
            const double h = 1e-6;
            double qa[7], qb[7];
            memcpy(qa, q, sizeof q);
            memcpy(qb, q, sizeof q);
            qa[k] += h;
            qb[k] -= h;
            double fd =
                (ref_penalty(&c, &r, chk, qa, active) - ref_penalty(&c, &r, chk, qb, active)) /
                (2 * h);
            ck_assert_msg(fabs(grad[k] - fd) <= 1e-5 * (1 + fabs(fd)),
                          "joint %d: gradient %g, difference %g", k, grad[k], fd);
        }
    }
    ck_assert_uint_eq(tested, 200);
}
END_TEST

/* A prismatic joint's gradient, and bodies hanging off a tree. */
START_TEST(test_gradient_prismatic)
{
    ik_joint j[3] = {
        joint(IK_JOINT_PRISMATIC, ZERO, ZERO, ik_v3(0, 0, 1), -1, 1),
        joint(IK_JOINT_REVOLUTE, ik_v3(0, 0, 0.3), ZERO, ik_v3(1, 0, 0), -3, 3),
        joint(IK_JOINT_FIXED, ik_v3(0, 0.4, 0), ZERO, ZERO, 0, 0),
    };
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    ck_assert_int_eq(ik_collide_model_from_chain(&M, &c), IK_OK);
    int l = ik_collide_add_link(&M, 2, ik_xform_identity());
    ck_assert_int_eq(ik_collide_add_capsule(&M, l, ZERO, ik_v3(0, 0.4, 0), 0.05), IK_OK);
    ck_assert_int_eq(ik_collide_model_finish(&M), IK_OK);
    ik_obstacle o;
    ck_assert_int_eq(
        ik_obstacle_box(&o, ik_v3(0, 0.2, 0.35), ik_quat_identity(), ik_v3(0.3, 0.3, 0.05)), IK_OK);
    ik_collide_scene sc = {&o, 1};
    double q[2] = {0.02, 0.3}, grad[2];
    double P = ik_collide_penalty(&M, &sc, q, 0.1, grad, ws, sizeof ws, NULL);
    ck_assert_double_gt(P, 0);
    for (int k = 0; k < 2; k++) {
        double qa[2] = {q[0], q[1]}, qb[2] = {q[0], q[1]};
        qa[k] += 1e-6;
        qb[k] -= 1e-6;
        double fd = (ik_collide_penalty(&M, &sc, qa, 0.1, NULL, ws, sizeof ws, NULL) -
                     ik_collide_penalty(&M, &sc, qb, 0.1, NULL, ws, sizeof ws, NULL)) /
                    2e-6;
        ck_assert_double_eq_tol(grad[k], fd, 1e-6 * (1 + fabs(fd)));
    }
}
END_TEST

/* ---- covers ----------------------------------------------------------------- */

/* True when p lies in one of link l's spheres (link frame = body frame
 * here: identity offset). */
static bool covered(int l, ik_vec3 p)
{
    for (size_t i = 0; i < M.nspheres; i++) {
        const ik_collide_sphere *s = &M.sphere[i];
        if (s->link == l && ik_vec3_dist(p, ik_v3(s->c[0], s->c[1], s->c[2])) <= s->r + 1e-12)
            return true;
    }
    return false;
}

static void empty_model(void)
{
    ik_joint j = joint(IK_JOINT_REVOLUTE, ZERO, ZERO, ik_v3(0, 0, 1), -1, 1);
    ik_chain ch;
    ck_assert_int_eq(chain_init(&ch, &j, 1), IK_OK);
    ck_assert_int_eq(ik_collide_model_from_chain(&M, &ch), IK_OK);
    ck_assert_int_eq(ik_collide_add_link(&M, 1, ik_xform_identity()), 0);
}

START_TEST(test_covers)
{
    ik_rng g = {15};
    for (int i = 0; i < 60; i++) {
        empty_model();
        int kind = i % 3;
        ik_xform pose = {rand_vec(&g, 0.3), rand_quat(&g)};
        double r = ik_rng_uniform(&g, 0.01, 0.1);
        ik_vec3 a = rand_vec(&g, 0.3), b = rand_vec(&g, 0.3);
        ik_vec3 size = ik_v3(ik_rng_uniform(&g, 0.01, 0.6), ik_rng_uniform(&g, 0.01, 0.6),
                             ik_rng_uniform(&g, 0.01, 0.6));
        double len = ik_rng_uniform(&g, 0.01, 0.6);
        if (kind == 0)
            ck_assert_int_eq(ik_collide_add_capsule(&M, 0, a, b, r), IK_OK);
        else if (kind == 1)
            ck_assert_int_eq(ik_collide_add_cylinder(&M, 0, pose, r, len), IK_OK);
        else
            ck_assert_int_eq(ik_collide_add_box(&M, 0, pose, size), IK_OK);
        ck_assert_uint_le(M.nspheres, IK_COLLIDE_MAX_COVER);
        /* points of the solid: its surface and inside */
        for (int k = 0; k < 3000; k++) {
            ik_vec3 p;
            if (kind == 0) {
                ik_vec3 d = ik_vec3_normalize(rand_vec(&g, 1));
                double s = k % 2 ? 1.0 : ik_rng_uniform(&g, 0, 1);
                p = ik_vec3_madd(ik_vec3_lerp(a, b, ik_rng_uniform(&g, 0, 1)), d, r * s);
            } else if (kind == 1) {
                double t = ik_rng_uniform(&g, 0, 2 * IK_PI),
                       s = k % 2 ? 1.0 : ik_rng_uniform(&g, 0, 1);
                double z =
                    k % 3 == 0 ? (k % 6 ? 0.5 : -0.5) * len : ik_rng_uniform(&g, -0.5, 0.5) * len;
                p = ik_xform_point(pose, ik_v3(r * s * cos(t), r * s * sin(t), z));
            } else {
                double v[3] = {ik_rng_uniform(&g, -0.5, 0.5) * size.x,
                               ik_rng_uniform(&g, -0.5, 0.5) * size.y,
                               ik_rng_uniform(&g, -0.5, 0.5) * size.z};
                if (k % 2) { /* a corner region or a face */
                    int ax = k % 3;
                    v[ax] = (k % 4 < 2 ? 0.5 : -0.5) * (ax == 0   ? size.x
                                                        : ax == 1 ? size.y
                                                                  : size.z);
                }
                p = ik_xform_point(pose, ik_v3(v[0], v[1], v[2]));
            }
            ck_assert_msg(covered(0, p), "shape %d: a point is not covered", kind);
        }
        /* and not much more: a capsule's spheres at most 1.15 r */
        if (kind == 0)
            for (size_t s = 0; s < M.nspheres; s++)
                ck_assert_double_le(
                    M.sphere[s].r, 1.15 * r + 1e-12 + 0.5 * ik_vec3_dist(a, b) * (M.nspheres == 1));
    }
}
END_TEST

START_TEST(test_skeleton)
{
    ik_chain c = iiwa();
    ck_assert_int_eq(ik_collide_model_from_chain(&M, &c), IK_OK);
    int link_of_body[IK_COLLIDE_MAX_BODIES];
    for (size_t b = 0; b < M.nbodies; b++)
        link_of_body[b] = ik_collide_add_link(&M, (int)b, ik_xform_identity());
    ck_assert_int_eq(ik_collide_add_skeleton(&M, link_of_body, 0.06), IK_OK);
    ck_assert_int_eq(ik_collide_model_finish(&M), IK_OK);
    /* the segment from each joint to the next is covered, at any q */
    ik_rng g = {16};
    unsigned char *w = ws;
    for (int i = 0; i < 50; i++) {
        double q[7];
        random_q(&c, &g, q);
        ik_xform F[IK_COLLIDE_MAX_BODIES];
        ik_chain_frames(&c, q, F);
        ik_vec3 pts[IK_COLLIDE_MAX_BODIES];
        pts[0] = ZERO;
        for (size_t k = 0; k <= c.dof; k++)
            pts[k + 1] = F[k].p;
        /* every point of the capsule around the skeleton (radius 0.06) is
         * inside a sphere: a point obstacle there is at distance <= 0 */
        for (size_t k = 0; k + 1 < c.dof + 2; k++) {
            ik_vec3 ax = ik_vec3_sub(pts[k + 1], pts[k]);
            ik_vec3 u = ik_vec3_any_perpendicular(ax), v = ik_vec3_normalize(ik_vec3_cross(ax, u));
            if (!(ik_vec3_len(ax) > 0)) {
                u = ik_v3(1, 0, 0);
                v = ik_v3(0, 1, 0);
            }
            for (int s = 0; s <= 10; s++)
                for (int a = 0; a < 8; a++) {
                    double t = a * IK_PI / 4;
                    ik_vec3 p = ik_vec3_lerp(pts[k], pts[k + 1], s / 10.0);
                    p = ik_vec3_madd(
                        p, ik_vec3_add(ik_vec3_scale(u, cos(t)), ik_vec3_scale(v, sin(t))), 0.06);
                    ik_obstacle o;
                    ck_assert_int_eq(ik_obstacle_sphere(&o, p, 0.0), IK_OK);
                    ik_collide_scene sc = {&o, 1};
                    ck_assert_double_le(ik_collide_distance(&M, &sc, q, w, sizeof ws, NULL), 1e-12);
                }
        }
    }
    /* the coarse model overlaps at every joint: allowing the pairs in
     * contact at one configuration leaves none in contact there */
    double q0[7] = {0};
    ck_assert_int_ge(ik_collide_allow_colliding(&M, q0, ws, sizeof ws), 0);
    ck_assert_double_ge(ik_collide_distance(&M, NULL, q0, ws, sizeof ws, NULL), 0.0);
}
END_TEST

/* ---- allowed pairs --------------------------------------------------------- */

START_TEST(test_allowed_pairs)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    (void)c;
    bool chk[IIWA_LINKS * IIWA_LINKS];
    iiwa_checked(chk);
    for (int a = 0; a < IIWA_LINKS; a++)
        for (int b = 0; b < IIWA_LINKS; b++)
            ck_assert_msg(ik_collide_allowed(&M, a, b) == (a == b || !chk[a * IIWA_LINKS + b]),
                          "%s - %s", IIWA_LINK_NAMES[a], IIWA_LINK_NAMES[b]);
    /* an SRDF's disable_collisions, and back */
    ck_assert_int_eq(ik_collide_allow(&M, 2, 7, true), IK_OK);
    ck_assert(ik_collide_allowed(&M, 7, 2));
    ck_assert_int_eq(ik_collide_allow(&M, 7, 2, false), IK_OK);
    ck_assert(!ik_collide_allowed(&M, 2, 7));
    ck_assert_int_eq(ik_collide_allow(&M, 2, 9, true), IK_EINVAL);
    ck_assert_int_eq(ik_collide_allow(&M, -1, 2, true), IK_EINVAL);
    /* every pair allowed: only the obstacles count */
    for (int a = 0; a < IIWA_LINKS; a++)
        for (int b = 0; b < IIWA_LINKS; b++)
            ik_collide_allow(&M, a, b, true);
    double q[7] = {0, 1.5, 0, 2.0, 0, 2.0, 0};
    ck_assert(isinf(ik_collide_distance(&M, NULL, q, ws, sizeof ws, NULL)));
}
END_TEST

START_TEST(test_rigid_distance)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    ik_rng g = {17};
    /* the tip's links at the tip's pose, whatever the other joints: the
     * reference over tool0 and link_7's spheres only */
    for (int i = 0; i < 500; i++) {
        double q[7];
        random_q(&c, &g, q);
        ik_xform tip = ik_chain_fk(&c, q);
        ik_collide_scene sc = {r.obst, r.nobst};
        ik_collide_pair p;
        double d = ik_collide_rigid_distance(&M, &sc, ik_collide_tip_body(&M, 0), tip, &p);
        ik_xform F[IK_COLLIDE_MAX_BODIES];
        ik_chain_frames(&c, q, F);
        double want = INFINITY;
        for (size_t s = 0; s < r.ns; s++) {
            int l = r.s[s].link;
            if (l != 7 && l != 8)
                continue;
            ik_vec3 w = ik_xform_point(F[IIWA_LINK_BODY[l] - 1], r.s[s].c);
            for (size_t k = 0; k < r.nobst; k++)
                want = fmin(want, ref_obstacle(w, r.s[s].r, &r.obst[k], NULL));
        }
        ck_assert_double_eq_tol(d, want, 1e-9);
        ck_assert(p.link == 7 || p.link == 8);
    }
    /* the base's links: none near these obstacles */
    ik_collide_scene sc = {r.obst, r.nobst};
    ck_assert_double_gt(ik_collide_rigid_distance(&M, &sc, 0, ik_xform_identity(), NULL), 0.1);
    ck_assert(isinf(ik_collide_rigid_distance(&M, NULL, 0, ik_xform_identity(), NULL)));
}
END_TEST

/* ---- the servo ---------------------------------------------------------- */

START_TEST(test_servo_slows_and_stops)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    /* the pillar alone: every pair of links allowed */
    bool chk[IIWA_LINKS * IIWA_LINKS] = {false};
    for (int a = 0; a < IIWA_LINKS; a++)
        for (int b = 0; b < IIWA_LINKS; b++)
            ik_collide_allow(&M, a, b, true);
    ik_collide_scene sc = {&r.obst[0], 1};
    /* from an upright pose, joint 1 swings the arm through the pillar */
    double q0[7] = {0.8, 0.6, 0, -0.5, 0, 0.5, 0}, goal[7], q[7];
    memcpy(goal, q0, sizeof goal);
    goal[0] = -1.4;
    ck_assert_double_gt(ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, sc.obstacle, 1, q0),
                        0.15);
    /* the goal is in the pillar */
    double mid[7];
    memcpy(mid, q0, sizeof mid);
    mid[0] = -0.7;
    ck_assert_double_lt(ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, sc.obstacle, 1, mid),
                        0.0);
    const double vmax[7] = {1, 1, 1, 1, 1, 1, 1}, T = 0.01, margin = 0.02, slow = 0.1;
    memcpy(q, q0, sizeof q);
    double prev_d = ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, sc.obstacle, 1, q);
    double first_step = 0, last_step = 0;
    int steps = 0;
    for (int t = 0; t < 400; t++) {
        double next[7];
        ck_assert_double_ge(ik_servo_step(7, q, goal, vmax, T, next), 0);
        double s = ik_collide_servo_scale(&M, &sc, q, next, margin, slow, ws, sizeof ws, NULL);
        ck_assert(s >= 0 && s <= 1);
        double step = fabs(s * (next[0] - q[0]));
        for (int k = 0; k < 7; k++)
            q[k] += s * (next[k] - q[k]);
        double d = ref_distance(&c, &r, IIWA_LINK_BODY, IIWA_LINKS, chk, sc.obstacle, 1, q);
        ck_assert_msg(d >= margin - 1e-9, "period %d: %g from the pillar", t, d);
        if (t == 0)
            first_step = step;
        /* slower in proportion to the room left (vmax T = first_step) */
        if (prev_d < margin + slow)
            ck_assert_double_le(step, first_step * (prev_d - margin) / slow + 1e-12);
        last_step = step;
        prev_d = d;
        steps++;
    }
    /* it came close and (nearly) stopped short */
    ck_assert_double_lt(prev_d, margin + 0.005);
    ck_assert_double_lt(last_step, first_step * 0.05);
    /* moving away is never held back */
    double back[7];
    ck_assert_double_ge(ik_servo_step(7, q, q0, vmax, T, back), 0);
    ck_assert_double_eq(ik_collide_servo_scale(&M, &sc, q, back, margin, slow, ws, sizeof ws, NULL),
                        1.0);
    /* invalid */
    ck_assert_double_eq(ik_collide_servo_scale(&M, &sc, q, back, margin, 0.0, ws, sizeof ws, NULL),
                        -1.0);
    ck_assert_double_eq(ik_collide_servo_scale(&M, &sc, q, back, -1.0, 0.1, ws, sizeof ws, NULL),
                        -1.0);
    ck_assert_int_eq(steps, 400);
}
END_TEST

/* ---- invalid input ---------------------------------------------------------- */

START_TEST(test_invalid_input)
{
    ik_obstacle o, keep;
    memset(&keep, 0x5a, sizeof keep);
    o = keep;
    ck_assert_int_eq(ik_obstacle_sphere(&o, ZERO, -0.1), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_sphere(&o, ik_v3(NAN, 0, 0), 0.1), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_box(&o, ZERO, ik_quat_identity(), ik_v3(0, 1, 1)), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_box(&o, ZERO, ik_quat_identity(), ik_v3(-1, 1, 1)), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_box(&o, ZERO, (ik_quat){0, 0, 0, 0}, ik_v3(1, 1, 1)), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_box(&o, ZERO, ik_quat_identity(), ik_v3(INFINITY, 1, 1)),
                     IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_capsule(&o, ZERO, ik_v3(0, 0, INFINITY), 0.1), IK_EINVAL);
    ck_assert_int_eq(ik_obstacle_capsule(&o, ZERO, ZERO, -1), IK_EINVAL);
    ck_assert_mem_eq(&o, &keep, sizeof o);
    /* a box's quaternion is normalised */
    ck_assert_int_eq(ik_obstacle_box(&o, ZERO, (ik_quat){0, 0, 0, 2}, ik_v3(1, 1, 1)), IK_OK);
    ck_assert_double_eq(o.q.w, 1.0);

    empty_model();
    size_t before = M.nspheres;
    ck_assert_int_eq(ik_collide_add_sphere(&M, 0, ZERO, -0.01), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_sphere(&M, 1, ZERO, 0.01), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_sphere(&M, 0, ik_v3(0, NAN, 0), 0.01), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_capsule(&M, 0, ZERO, ik_v3(0, 0, 1), 0.0), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_box(&M, 0, ik_xform_identity(), ik_v3(1, 0, 1)), IK_EINVAL);
    ik_xform bad = {ZERO, {0, 0, 0, 2}};
    ck_assert_int_eq(ik_collide_add_box(&M, 0, bad, ik_v3(1, 1, 1)), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_cylinder(&M, 0, ik_xform_identity(), 0.1, 0.0), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_link(&M, 7, ik_xform_identity()), IK_EINVAL);
    ck_assert_int_eq(ik_collide_add_link(&M, 0, bad), IK_EINVAL);
    ck_assert_uint_eq(M.nspheres, before);
    /* capacity: spheres, then links */
    for (size_t i = 0; i < IK_COLLIDE_MAX_SPHERES; i++)
        ck_assert_int_eq(ik_collide_add_sphere(&M, 0, ZERO, 0.01), IK_OK);
    ck_assert_int_eq(ik_collide_add_sphere(&M, 0, ZERO, 0.01), IK_ENOSPC);
    ck_assert_int_eq(ik_collide_add_capsule(&M, 0, ZERO, ik_v3(0, 0, 1), 0.01), IK_ENOSPC);
    ck_assert_uint_eq(M.nspheres, IK_COLLIDE_MAX_SPHERES);
    while (M.nlinks < IK_COLLIDE_MAX_LINKS)
        ck_assert_int_ge(ik_collide_add_link(&M, 0, ik_xform_identity()), 0);
    ck_assert_int_eq(ik_collide_add_link(&M, 0, ik_xform_identity()), IK_ENOSPC);

    /* queries: an unfinished model, a small workspace, non-finite joints */
    empty_model();
    ck_assert_int_eq(ik_collide_add_sphere(&M, 0, ZERO, 0.01), IK_OK);
    double q = 0;
    ck_assert(isnan(ik_collide_distance(&M, NULL, &q, ws, sizeof ws, NULL)));
    ck_assert_int_eq(ik_collide_model_finish(&M), IK_OK);
    ck_assert(isinf(ik_collide_distance(&M, NULL, &q, ws, sizeof ws, NULL)));
    ck_assert(
        isnan(ik_collide_distance(&M, NULL, &q, ws, ik_collide_workspace_size(&M) - 1, NULL)));
    double qn = NAN;
    ck_assert(isnan(ik_collide_distance(&M, NULL, &qn, ws, sizeof ws, NULL)));
    ck_assert(isnan(ik_collide_penalty(&M, NULL, &q, NAN, NULL, ws, sizeof ws, NULL)));
    /* checks */
    ik_collide_check chk = {&M, {NULL, 0}, 0.0, true, ws, sizeof ws};
    ck_assert_int_eq(ik_collide_check_valid(&chk, 1), IK_OK);
    ck_assert_int_eq(ik_collide_check_valid(&chk, 2), IK_EINVAL);
    chk.margin = -0.1;
    ck_assert_int_eq(ik_collide_check_valid(&chk, 1), IK_EINVAL);
    chk.margin = 0.0;
    chk.scene.count = 1;
    ck_assert_int_eq(ik_collide_check_valid(&chk, 1), IK_EINVAL);
    ik_obstacle broken = o;
    broken.half.x = -1;
    chk.scene.obstacle = &broken;
    ck_assert_int_eq(ik_collide_check_valid(&chk, 1), IK_EINVAL);
    chk.scene.count = 0;
    chk.ws_size = ik_collide_workspace_size(&M) - 1;
    ck_assert_int_eq(ik_collide_check_valid(&chk, 1), IK_ENOSPC);
    /* builders on nothing */
    ck_assert_int_eq(ik_collide_model_from_chain(&M, NULL), IK_EINVAL);
    ck_assert_int_eq(ik_collide_model_from_tree(&M, NULL), IK_EINVAL);
}
END_TEST

/* Queries and the skeleton write only inside the workspace they announce
 * (any alignment). */
START_TEST(test_workspace_bounds)
{
    cd_robot r;
    ik_chain c = iiwa_model(&r);
    ik_collide_scene sc = {r.obst, r.nobst};
    const size_t need = ik_collide_workspace_size(&M);
    ck_assert_uint_lt(need + 64, sizeof ws);
    for (size_t off = 0; off < 8; off += 3) {
        memset(ws, 0xA5, sizeof ws);
        double q[7] = {0.3, 0.8, -0.2, -1.2, 0.4, 1.0, 0.1}, next[7], grad[7];
        memcpy(next, q, sizeof q);
        next[0] -= 0.2;
        ik_collide_distance(&M, &sc, q, ws + off, need, NULL);
        ik_collide_penalty(&M, &sc, q, 0.05, grad, ws + off, need, NULL);
        ik_collide_servo_scale(&M, &sc, q, next, 0.0, 0.1, ws + off, need, NULL);
        for (size_t i = 0; i < off; i++)
            ck_assert_uint_eq(ws[i], 0xA5);
        for (size_t i = off + need; i < sizeof ws; i++)
            ck_assert_uint_eq(ws[i], 0xA5);
    }
    (void)c;
}
END_TEST

static Suite *collide_suite(void)
{
    Suite *s = suite_create("ik_collide");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reference_against_samples);
    tcase_add_test(tc, test_sphere_against_shapes);
    tcase_add_test(tc, test_iiwa_distance_against_reference);
    tcase_add_test(tc, test_penalty_and_gradient);
    tcase_add_test(tc, test_gradient_prismatic);
    tcase_add_test(tc, test_covers);
    tcase_add_test(tc, test_skeleton);
    tcase_add_test(tc, test_allowed_pairs);
    tcase_add_test(tc, test_rigid_distance);
    tcase_add_test(tc, test_servo_slows_and_stops);
    tcase_add_test(tc, test_invalid_input);
    tcase_add_test(tc, test_workspace_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(collide_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * ik_collide.c: spheres on a robot's bodies, obstacles, signed distances,
 * the collision penalty and its gradient, and the servo's collision
 * scaling (contract in ik_collide.h).
 *
 * A query first poses the bodies (each body's frame is its parent's times
 * the fixed transform times the joint's motion: the forward kinematics of
 * ik_chain.c, redone here over the bodies of a chain or a tree, with the
 * joint rotation by Rodrigues' formula), then the spheres (their centres
 * in the base frame) and one bounding sphere per link. Pairs are visited
 * link by link: a pair of links (or a link and an obstacle) is skipped
 * when the distance between their bounding spheres cannot beat what is
 * sought (the nearest pair so far; for the penalty also the activation
 * distance), else its spheres are measured one by one:
 *   sphere-sphere   |c1 - c2| - r1 - r2;
 *   sphere-capsule  |c - x| - r - rc, x the nearest point of the segment;
 *   sphere-box      c in the box's frame; outside: the distance to the
 *                   clamped point, inside: minus the distance to the
 *                   nearest face; minus r (Ericson, "Real-Time Collision
 *                   Detection", 2005, sections 5.1.3 and 5.1.2).
 * Each measurement also gives the unit normal n along which the distance
 * grows when the link's sphere moves. The penalty's gradient is the chain
 * rule through those normals: a sphere of a pair nearer than `active`
 * gets the force f = -(active - d) n (minus for the other link's sphere),
 * forces and their moments c x f are summed per body, then from the
 * last body to the first into their parents (parents come first), and
 * each joint's component is its world axis a dotted with the moment about
 * its origin o, a . (M - o x F) (revolute), or a . F (prismatic): the
 * adjoint of the Jacobian, O(bodies + spheres) instead of a 3 x n Jacobian
 * per sphere.
 *
 * Not here: the searches that use these (ik_avoid.c, ik_numeric.c,
 * ik_tree_avoid.c), anything about names or documents (proto/).
 */
#include "solver/ik_collide.h"

#include <math.h>
#include <string.h>

#include "solver/ik_avoid.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"

/* ---- small 3-vector helpers on double[3] ---------------------------------- */

static void mat_vec(const double R[9], const double v[3], double out[3])
{
    out[0] = R[0] * v[0] + R[1] * v[1] + R[2] * v[2];
    out[1] = R[3] * v[0] + R[4] * v[1] + R[5] * v[2];
    out[2] = R[6] * v[0] + R[7] * v[1] + R[8] * v[2];
}

static void mat_tvec(const double R[9], const double v[3], double out[3])
{
    out[0] = R[0] * v[0] + R[3] * v[1] + R[6] * v[2];
    out[1] = R[1] * v[0] + R[4] * v[1] + R[7] * v[2];
    out[2] = R[2] * v[0] + R[5] * v[1] + R[8] * v[2];
}

static void mat_mul(const double A[9], const double B[9], double C[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

static double dist3(const double a[3], const double b[3])
{
    double x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];
    return sqrt(x * x + y * y + z * z);
}

static bool finite3(ik_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static bool unit_quat(ik_quat q)
{
    return ik_quat_isfinite(q) && fabs(ik_quat_dot(q, q) - 1.0) <= 1e-6;
}

/* ---- building the model --------------------------------------------------- */

static void set_pre(ik_collide_body *b, ik_xform x)
{
    ik_quat_to_mat3(x.q, b->pre_R);
    b->pre_p[0] = x.p.x;
    b->pre_p[1] = x.p.y;
    b->pre_p[2] = x.p.z;
}

static void model_reset(ik_collide_model *m)
{
    memset(m, 0, sizeof *m);
    for (size_t b = 0; b < IK_COLLIDE_MAX_BODIES; b++)
        m->var_body[b] = -1;
    for (size_t t = 0; t < sizeof m->tip_body / sizeof m->tip_body[0]; t++)
        m->tip_body[t] = -1;
    ik_collide_body *root = &m->body[0];
    root->parent = -1;
    root->var = -1;
    root->type = IK_JOINT_FIXED;
    set_pre(root, ik_xform_identity());
    m->nbodies = 1;
}

/* Appends a body; -1 when full. */
static int add_body(ik_collide_model *m, int parent, int var, ik_joint_type type, ik_vec3 axis,
                    ik_xform pre)
{
    if (m->nbodies >= IK_COLLIDE_MAX_BODIES)
        return -1;
    int b = (int)m->nbodies++;
    ik_collide_body *B = &m->body[b];
    B->parent = parent;
    B->var = var;
    B->type = var >= 0 ? type : IK_JOINT_FIXED;
    B->axis = var >= 0 ? ik_vec3_normalize(axis) : ik_v3(0, 0, 1);
    set_pre(B, pre);
    B->rigid = var >= 0 ? b : m->body[parent].rigid;
    if (var >= 0) {
        m->var_body[var] = b;
        if ((size_t)var + 1 > m->nvars)
            m->nvars = (size_t)var + 1;
    }
    return b;
}

int ik_collide_model_from_chain(ik_collide_model *m, const ik_chain *c)
{
    if (!m)
        return IK_EINVAL;
    model_reset(m);
    if (!c || c->dof == 0 || c->dof + 2 > IK_COLLIDE_MAX_BODIES) {
        memset(m, 0, sizeof *m);
        return IK_EINVAL;
    }
    for (size_t k = 0; k < c->dof; k++)
        add_body(m, (int)k, (int)k, c->type[k], c->axis[k], c->pre[k]);
    m->tip_body[0] = add_body(m, (int)c->dof, -1, IK_JOINT_FIXED, ik_v3(0, 0, 1), c->tip);
    m->ntips = 1;
    m->task_rows = 6;
    return IK_OK;
}

int ik_collide_model_from_tree(ik_collide_model *m, const ik_tree *T)
{
    if (!m)
        return IK_EINVAL;
    model_reset(m);
    size_t maxtips = sizeof m->tip_body / sizeof m->tip_body[0];
    if (!T || T->ntips == 0 || T->ntips > IK_TREE_MAX_TIPS || T->ntips > maxtips || T->dof == 0 ||
        1 + T->dof + T->ntips > IK_COLLIDE_MAX_BODIES) {
        memset(m, 0, sizeof *m);
        return IK_EINVAL;
    }
    for (size_t t = 0; t < T->ntips; t++) {
        const ik_chain *c = &T->chain[t];
        int prev = 0;
        for (size_t i = 0; i < c->dof; i++) {
            int v = T->var[t][i];
            if (m->var_body[v] < 0)
                add_body(m, prev, v, c->type[i], c->axis[i], c->pre[i]);
            prev = m->var_body[v];
        }
    }
    for (size_t t = 0; t < T->ntips; t++) {
        const ik_chain *c = &T->chain[t];
        m->tip_body[t] = add_body(m, m->var_body[T->var[t][c->dof - 1]], -1, IK_JOINT_FIXED,
                                  ik_v3(0, 0, 1), c->tip);
    }
    m->ntips = T->ntips;
    m->nvars = T->dof;
    m->task_rows = 6 * T->ntips;
    return IK_OK;
}

int ik_collide_tip_body(const ik_collide_model *m, size_t t)
{
    return m && t < m->ntips ? m->tip_body[t] : -1;
}

int ik_collide_var_body(const ik_collide_model *m, size_t v)
{
    return m && v < m->nvars && v < IK_COLLIDE_MAX_BODIES ? m->var_body[v] : -1;
}

int ik_collide_add_link(ik_collide_model *m, int body, ik_xform offset)
{
    if (!m || body < 0 || (size_t)body >= m->nbodies || !finite3(offset.p) || !unit_quat(offset.q))
        return IK_EINVAL;
    if (m->nlinks >= IK_COLLIDE_MAX_LINKS)
        return IK_ENOSPC;
    int l = (int)m->nlinks++;
    memset(&m->link[l], 0, sizeof m->link[l]);
    m->link[l].body = body;
    m->link[l].offset = offset;
    m->finished = false;
    return l;
}

static bool valid_link(const ik_collide_model *m, int link)
{
    return m && link >= 0 && (size_t)link < m->nlinks;
}

/* A sphere with its centre in the link frame; no checks. */
static void push_sphere(ik_collide_model *m, int link, ik_vec3 c, double r)
{
    ik_vec3 b = ik_xform_point(m->link[link].offset, c);
    ik_collide_sphere *s = &m->sphere[m->nspheres++];
    s->c[0] = b.x;
    s->c[1] = b.y;
    s->c[2] = b.z;
    s->r = r;
    s->link = (uint16_t)link;
    m->finished = false;
}

int ik_collide_add_sphere(ik_collide_model *m, int link, ik_vec3 centre, double radius)
{
    if (!valid_link(m, link) || !finite3(centre) || !isfinite(radius) || radius < 0.0)
        return IK_EINVAL;
    if (m->nspheres >= IK_COLLIDE_MAX_SPHERES)
        return IK_ENOSPC;
    push_sphere(m, link, centre, radius);
    return IK_OK;
}

/* Spheres covering the capsule a-b of radius r (r > 0, or a == b): k on
 * the segment, evenly spaced, of the radius through the rim halfway
 * between two of them. */
static int cover_capsule(ik_collide_model *m, int link, ik_vec3 a, ik_vec3 b, double r)
{
    double len = ik_vec3_dist(a, b);
    if (!isfinite(len))
        return IK_EINVAL;
    if (!(len > 0.0) || len <= 1e-12 * r) {
        if (m->nspheres >= IK_COLLIDE_MAX_SPHERES)
            return IK_ENOSPC;
        push_sphere(m, link, ik_vec3_lerp(a, b, 0.5), r + 0.5 * len);
        return IK_OK;
    }
    if (!(r > 0.0))
        return IK_EINVAL; /* a bare segment cannot be covered by spheres */
    /* 1.15 r covers spacings up to 2 r sqrt(1.15^2 - 1) */
    const double spacing = 2.0 * r * sqrt(1.15 * 1.15 - 1.0);
    double kd = ceil(len / spacing) + 1.0;
    size_t k = kd > IK_COLLIDE_MAX_COVER ? IK_COLLIDE_MAX_COVER : (size_t)kd;
    if (m->nspheres + k > IK_COLLIDE_MAX_SPHERES)
        return IK_ENOSPC;
    const double step = len / (double)(k - 1);
    const double R = sqrt(r * r + 0.25 * step * step);
    for (size_t i = 0; i < k; i++)
        push_sphere(m, link, ik_vec3_lerp(a, b, (double)i / (double)(k - 1)), R);
    return IK_OK;
}

int ik_collide_add_capsule(ik_collide_model *m, int link, ik_vec3 a, ik_vec3 b, double radius)
{
    if (!valid_link(m, link) || !finite3(a) || !finite3(b) || !isfinite(radius) || radius < 0.0)
        return IK_EINVAL;
    return cover_capsule(m, link, a, b, radius);
}

int ik_collide_add_cylinder(ik_collide_model *m, int link, ik_xform pose, double radius,
                            double length)
{
    if (!valid_link(m, link) || !finite3(pose.p) || !unit_quat(pose.q) || !isfinite(radius) ||
        radius < 0.0 || !isfinite(length) || !(length > 0.0))
        return IK_EINVAL;
    double kd = radius > 0.0 ? ceil(length / radius) : IK_COLLIDE_MAX_COVER;
    size_t k = kd > IK_COLLIDE_MAX_COVER ? IK_COLLIDE_MAX_COVER : (kd < 1.0 ? 1 : (size_t)kd);
    if (m->nspheres + k > IK_COLLIDE_MAX_SPHERES)
        return IK_ENOSPC;
    const double h = 0.5 * length / (double)k; /* half height of a slice */
    const double R = sqrt(radius * radius + h * h);
    for (size_t i = 0; i < k; i++) {
        double z = -0.5 * length + (2.0 * (double)i + 1.0) * h;
        push_sphere(m, link, ik_xform_point(pose, ik_v3(0, 0, z)), R);
    }
    return IK_OK;
}

int ik_collide_add_box(ik_collide_model *m, int link, ik_xform pose, ik_vec3 size)
{
    if (!valid_link(m, link) || !finite3(pose.p) || !unit_quat(pose.q) || !finite3(size) ||
        !(size.x > 0.0) || !(size.y > 0.0) || !(size.z > 0.0))
        return IK_EINVAL;
    const double s[3] = {size.x, size.y, size.z};
    double cell = fmin(s[0], fmin(s[1], s[2]));
    size_t n[3], total;
    for (;;) {
        total = 1;
        for (int i = 0; i < 3; i++) {
            double c = ceil(s[i] / cell - 1e-9);
            n[i] = c < 1.0 ? 1 : (c > IK_COLLIDE_MAX_COVER ? IK_COLLIDE_MAX_COVER : (size_t)c);
            total *= n[i];
        }
        if (total <= IK_COLLIDE_MAX_COVER)
            break;
        cell *= 1.25;
    }
    if (m->nspheres + total > IK_COLLIDE_MAX_SPHERES)
        return IK_ENOSPC;
    double h[3], r2 = 0.0;
    for (int i = 0; i < 3; i++) {
        h[i] = 0.5 * s[i] / (double)n[i];
        r2 += h[i] * h[i];
    }
    const double R = sqrt(r2);
    for (size_t i = 0; i < n[0]; i++)
        for (size_t j = 0; j < n[1]; j++)
            for (size_t k = 0; k < n[2]; k++) {
                ik_vec3 c = ik_v3(-0.5 * s[0] + (2.0 * (double)i + 1.0) * h[0],
                                  -0.5 * s[1] + (2.0 * (double)j + 1.0) * h[1],
                                  -0.5 * s[2] + (2.0 * (double)k + 1.0) * h[2]);
                push_sphere(m, link, ik_xform_point(pose, c), R);
            }
    return IK_OK;
}

int ik_collide_add_skeleton(ik_collide_model *m, const int *link_of_body, double radius)
{
    if (!m || !link_of_body || !isfinite(radius) || !(radius > 0.0))
        return IK_EINVAL;
    for (size_t b = 0; b < m->nbodies; b++)
        if (link_of_body[b] >= 0 &&
            (!valid_link(m, link_of_body[b]) || m->link[link_of_body[b]].body != (int)b))
            return IK_EINVAL;
    /* count first, so that an error changes nothing */
    const size_t before = m->nspheres;
    for (size_t c = 1; c < m->nbodies; c++) {
        int b = m->body[c].parent, l = link_of_body[b];
        if (l < 0)
            continue;
        const ik_collide_link *L = &m->link[l];
        ik_xform inv = ik_xform_inverse(L->offset);
        ik_vec3 a = ik_xform_point(inv, ik_v3(0, 0, 0));
        ik_vec3 e = ik_xform_point(
            inv, ik_v3(m->body[c].pre_p[0], m->body[c].pre_p[1], m->body[c].pre_p[2]));
        int rc = cover_capsule(m, l, a, e, radius);
        if (rc != IK_OK) {
            m->nspheres = before;
            return rc;
        }
    }
    return IK_OK;
}

static void set_allowed(ik_collide_model *m, int a, int b, bool allowed)
{
    uint64_t bit_b = (uint64_t)1 << (b % 64), bit_a = (uint64_t)1 << (a % 64);
    if (allowed) {
        m->allowed[a][b / 64] |= bit_b;
        m->allowed[b][a / 64] |= bit_a;
    } else {
        m->allowed[a][b / 64] &= ~bit_b;
        m->allowed[b][a / 64] &= ~bit_a;
    }
}

bool ik_collide_allowed(const ik_collide_model *m, int a, int b)
{
    if (!valid_link(m, a) || !valid_link(m, b))
        return false;
    return a == b || ((m->allowed[a][b / 64] >> (b % 64)) & 1u);
}

int ik_collide_allow(ik_collide_model *m, int a, int b, bool allowed)
{
    if (!valid_link(m, a) || !valid_link(m, b))
        return IK_EINVAL;
    if (a != b)
        set_allowed(m, a, b, allowed);
    return IK_OK;
}

int ik_collide_model_finish(ik_collide_model *m)
{
    if (!m)
        return IK_EINVAL;
    /* spheres sorted by link (stable insertion sort: models are small and
     * usually given link by link, already in order) */
    for (size_t i = 1; i < m->nspheres; i++) {
        ik_collide_sphere s = m->sphere[i];
        size_t j = i;
        while (j > 0 && m->sphere[j - 1].link > s.link) {
            m->sphere[j] = m->sphere[j - 1];
            j--;
        }
        m->sphere[j] = s;
    }
    double rsum = 0.0;
    for (size_t l = 0; l < m->nlinks; l++) {
        m->link[l].first = 0;
        m->link[l].count = 0;
    }
    for (size_t i = m->nspheres; i-- > 0;) {
        ik_collide_link *L = &m->link[m->sphere[i].link];
        L->first = (uint32_t)i;
        L->count++;
        rsum += m->sphere[i].r;
    }
    m->scale = m->nspheres ? rsum / (double)m->nspheres : 0.0;
    /* bounds: the centroid of the centres, and the farthest surface */
    for (size_t l = 0; l < m->nlinks; l++) {
        ik_collide_link *L = &m->link[l];
        double c[3] = {0, 0, 0}, r = 0.0;
        for (uint32_t i = L->first; i < L->first + L->count; i++)
            for (int k = 0; k < 3; k++)
                c[k] += m->sphere[i].c[k] / (double)L->count;
        for (uint32_t i = L->first; i < L->first + L->count; i++)
            r = fmax(r, dist3(c, m->sphere[i].c) + m->sphere[i].r);
        memcpy(L->bound_c, c, sizeof c);
        L->bound_r = r * (1.0 + 1e-12) + 1e-300; /* rounding can only widen it */
    }
    /* defaults: rigidly joined and adjacent links */
    for (size_t a = 0; a < m->nlinks; a++)
        for (size_t b = 0; b < a; b++) {
            int ga = m->body[m->link[a].body].rigid, gb = m->body[m->link[b].body].rigid;
            bool adj = ga == gb || (ga != 0 && m->body[m->body[ga].parent].rigid == gb) ||
                       (gb != 0 && m->body[m->body[gb].parent].rigid == ga);
            if (adj)
                set_allowed(m, (int)a, (int)b, true);
        }
    m->finished = true;
    return IK_OK;
}

/* ---- obstacles ------------------------------------------------------------ */

static void obstacle_bound(ik_obstacle *o)
{
    switch (o->shape) {
    case IK_SHAPE_SPHERE:
        o->bound_c = o->p;
        o->bound_r = o->radius;
        break;
    case IK_SHAPE_BOX:
        o->bound_c = o->p;
        o->bound_r = ik_vec3_len(o->half);
        break;
    case IK_SHAPE_CAPSULE:
        o->bound_c = ik_vec3_lerp(o->p, o->p2, 0.5);
        o->bound_r = 0.5 * ik_vec3_dist(o->p, o->p2) + o->radius;
        break;
    }
    o->bound_r = o->bound_r * (1.0 + 1e-12) + 1e-300;
}

int ik_obstacle_sphere(ik_obstacle *o, ik_vec3 centre, double radius)
{
    if (!o || !finite3(centre) || !isfinite(radius) || radius < 0.0)
        return IK_EINVAL;
    memset(o, 0, sizeof *o);
    o->shape = IK_SHAPE_SPHERE;
    o->p = o->p2 = centre;
    o->radius = radius;
    o->q = ik_quat_identity();
    obstacle_bound(o);
    return IK_OK;
}

int ik_obstacle_box(ik_obstacle *o, ik_vec3 centre, ik_quat orientation, ik_vec3 size)
{
    if (!o || !finite3(centre) || !finite3(size) || !(size.x > 0.0) || !(size.y > 0.0) ||
        !(size.z > 0.0) || !ik_quat_isfinite(orientation) ||
        !(ik_quat_dot(orientation, orientation) > 1e-24))
        return IK_EINVAL;
    ik_vec3 half = ik_vec3_scale(size, 0.5);
    if (!finite3(half) || !isfinite(ik_vec3_len(half)))
        return IK_EINVAL;
    memset(o, 0, sizeof *o);
    o->shape = IK_SHAPE_BOX;
    o->p = o->p2 = centre;
    o->half = half;
    o->q = ik_quat_normalize(orientation);
    ik_quat_to_mat3(o->q, o->R);
    obstacle_bound(o);
    return IK_OK;
}

int ik_obstacle_capsule(ik_obstacle *o, ik_vec3 from, ik_vec3 to, double radius)
{
    if (!o || !finite3(from) || !finite3(to) || !isfinite(radius) || radius < 0.0 ||
        !isfinite(ik_vec3_dist(from, to)))
        return IK_EINVAL;
    memset(o, 0, sizeof *o);
    o->shape = IK_SHAPE_CAPSULE;
    o->p = from;
    o->p2 = to;
    o->radius = radius;
    o->q = ik_quat_identity();
    obstacle_bound(o);
    return IK_OK;
}

static bool obstacle_valid(const ik_obstacle *o)
{
    if (!finite3(o->p) || !finite3(o->p2) || !isfinite(o->bound_r) || !finite3(o->bound_c))
        return false;
    switch (o->shape) {
    case IK_SHAPE_SPHERE:
    case IK_SHAPE_CAPSULE:
        return isfinite(o->radius) && o->radius >= 0.0;
    case IK_SHAPE_BOX:
        return finite3(o->half) && o->half.x > 0.0 && o->half.y > 0.0 && o->half.z > 0.0;
    }
    return false;
}

/* ---- posing the robot ----------------------------------------------------- */

/* The aligned workspace: per body R (9), p (3), world axis (3), force (3),
 * moment (3); per sphere its centre (3); per link its bound's centre (3)
 * and whether its spheres are posed (1); then a configuration (nvars) for
 * the servo, then the repair's scratch. */
typedef struct pose {
    const ik_collide_model *m;
    double *R, *p, *ax, *F, *M, *c, *lb, *posed, *qs;
} pose;

#define WS_ALIGN 64

static size_t query_doubles(const ik_collide_model *m)
{
    return 21 * m->nbodies + 3 * m->nspheres + 4 * m->nlinks + m->nvars;
}

size_t ik_collide_workspace_size(const ik_collide_model *m)
{
    if (!m)
        return WS_ALIGN + sizeof(double);
    return (query_doubles(m) + ik__avoid_doubles(m->nvars, m->task_rows) + 1) * sizeof(double) +
           WS_ALIGN;
}

static double *aligned(void *ws)
{
    return (double *)(((uintptr_t)ws + (WS_ALIGN - 1)) & ~(uintptr_t)(WS_ALIGN - 1));
}

double *ik__avoid_scratch(const ik_collide_model *m, void *ws)
{
    return aligned(ws) + query_doubles(m);
}

static void pose_layout(const ik_collide_model *m, void *ws, pose *P)
{
    double *d = aligned(ws);
    const size_t nb = m->nbodies;
    P->R = d;
    P->p = P->R + 9 * nb;
    P->ax = P->p + 3 * nb;
    P->F = P->ax + 3 * nb;
    P->M = P->F + 3 * nb;
    P->c = P->M + 3 * nb;
    P->lb = P->c + 3 * m->nspheres;
    P->posed = P->lb + 3 * m->nlinks;
    P->qs = P->posed + m->nlinks;
    P->m = m;
}

/* Rotation by angle about the unit axis a (Rodrigues), row-major. */
static void axis_angle(ik_vec3 a, double angle, double R[9])
{
    const double c = cos(angle), s = sin(angle), t = 1.0 - c;
    R[0] = c + t * a.x * a.x;
    R[1] = t * a.x * a.y - s * a.z;
    R[2] = t * a.x * a.z + s * a.y;
    R[3] = t * a.x * a.y + s * a.z;
    R[4] = c + t * a.y * a.y;
    R[5] = t * a.y * a.z - s * a.x;
    R[6] = t * a.x * a.z - s * a.y;
    R[7] = t * a.y * a.z + s * a.x;
    R[8] = c + t * a.z * a.z;
}

/* Every body's frame, world axis and every link bound's centre at q; the
 * spheres are posed link by link when first needed (posed_link). */
static void pose_robot(const ik_collide_model *m, const double *q, const pose *P)
{
    static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(P->R, I, sizeof I);
    P->p[0] = P->p[1] = P->p[2] = 0.0;
    P->ax[0] = P->ax[1] = 0.0;
    P->ax[2] = 1.0;
    for (size_t b = 1; b < m->nbodies; b++) {
        const ik_collide_body *B = &m->body[b];
        const double *Rp = P->R + 9 * B->parent, *pp = P->p + 3 * B->parent;
        double *R = P->R + 9 * b, *p = P->p + 3 * b, *ax = P->ax + 3 * b;
        double R1[9], t[3];
        mat_mul(Rp, B->pre_R, R1);
        mat_vec(Rp, B->pre_p, t);
        p[0] = pp[0] + t[0];
        p[1] = pp[1] + t[1];
        p[2] = pp[2] + t[2];
        const double a[3] = {B->axis.x, B->axis.y, B->axis.z};
        mat_vec(R1, a, ax);
        if (B->var < 0) {
            memcpy(R, R1, sizeof R1);
        } else if (B->type == IK_JOINT_PRISMATIC) {
            memcpy(R, R1, sizeof R1);
            const double v = q[B->var];
            p[0] += ax[0] * v;
            p[1] += ax[1] * v;
            p[2] += ax[2] * v;
        } else {
            double Rm[9];
            axis_angle(B->axis, q[B->var], Rm);
            mat_mul(R1, Rm, R);
        }
    }
    for (size_t l = 0; l < m->nlinks; l++) {
        const int b = m->link[l].body;
        double *c = P->lb + 3 * l;
        mat_vec(P->R + 9 * b, m->link[l].bound_c, c);
        c[0] += P->p[3 * b];
        c[1] += P->p[3 * b + 1];
        c[2] += P->p[3 * b + 2];
        P->posed[l] = 0.0;
    }
}

/* The centres of link l's spheres (base frame), posed on first use. */
static const double *posed_link(const pose *P, size_t l)
{
    const ik_collide_model *m = P->m;
    const ik_collide_link *L = &m->link[l];
    if (P->posed[l] == 0.0) {
        const double *R = P->R + 9 * L->body, *p = P->p + 3 * L->body;
        for (uint32_t i = L->first; i < L->first + L->count; i++) {
            double *c = P->c + 3 * i;
            mat_vec(R, m->sphere[i].c, c);
            c[0] += p[0];
            c[1] += p[1];
            c[2] += p[2];
        }
        P->posed[l] = 1.0;
    }
    return P->c;
}

/* ---- distance kernels ----------------------------------------------------- */

/* Each returns the signed distance of sphere (c, r) from the other shape
 * and the unit normal n along which moving c increases it. */

static double d_point(const double c[3], double r, const double x[3], double rx, double n[3])
{
    double v[3] = {c[0] - x[0], c[1] - x[1], c[2] - x[2]};
    double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (len > 0.0) {
        n[0] = v[0] / len;
        n[1] = v[1] / len;
        n[2] = v[2] / len;
    } else {
        n[0] = 0.0; /* coincident centres: any direction separates them */
        n[1] = 0.0;
        n[2] = 1.0;
    }
    return len - r - rx;
}

static double d_capsule(const double c[3], double r, const ik_obstacle *o, double n[3])
{
    const double a[3] = {o->p.x, o->p.y, o->p.z}, b[3] = {o->p2.x, o->p2.y, o->p2.z};
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double l2 = ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2];
    double t = 0.0;
    if (l2 > 0.0) {
        t = ((c[0] - a[0]) * ab[0] + (c[1] - a[1]) * ab[1] + (c[2] - a[2]) * ab[2]) / l2;
        t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    }
    double x[3] = {a[0] + t * ab[0], a[1] + t * ab[1], a[2] + t * ab[2]};
    if (l2 > 0.0 && dist3(c, x) == 0.0) {
        /* on the axis: away from it, perpendicular to the segment */
        ik_vec3 perp = ik_vec3_any_perpendicular(ik_v3(ab[0], ab[1], ab[2]));
        n[0] = perp.x;
        n[1] = perp.y;
        n[2] = perp.z;
        return -r - o->radius;
    }
    return d_point(c, r, x, o->radius, n);
}

static double d_box(const double c[3], double r, const ik_obstacle *o, double n[3])
{
    const double h[3] = {o->half.x, o->half.y, o->half.z};
    double v[3] = {c[0] - o->p.x, c[1] - o->p.y, c[2] - o->p.z}, l[3], nl[3] = {0, 0, 0};
    mat_tvec(o->R, v, l);
    double out2 = 0.0, d[3], inside = -INFINITY;
    int imax = 0;
    for (int i = 0; i < 3; i++) {
        double e = fabs(l[i]) - h[i];
        d[i] = e > 0.0 ? (l[i] > 0.0 ? e : -e) : 0.0;
        out2 += d[i] * d[i];
        if (e > inside) {
            inside = e;
            imax = i;
        }
    }
    double dist;
    if (out2 > 0.0) {
        double len = sqrt(out2);
        for (int i = 0; i < 3; i++)
            nl[i] = d[i] / len;
        dist = len;
    } else {
        nl[imax] = l[imax] < 0.0 ? -1.0 : 1.0;
        dist = inside; /* <= 0: minus the depth below the nearest face */
    }
    mat_vec(o->R, nl, n);
    return dist - r;
}

static double d_obstacle(const double c[3], double r, const ik_obstacle *o, double n[3])
{
    switch (o->shape) {
    case IK_SHAPE_SPHERE: {
        const double x[3] = {o->p.x, o->p.y, o->p.z};
        return d_point(c, r, x, o->radius, n);
    }
    case IK_SHAPE_BOX:
        return d_box(c, r, o, n);
    case IK_SHAPE_CAPSULE:
        return d_capsule(c, r, o, n);
    }
    return INFINITY;
}

/* ---- the pair walk -------------------------------------------------------- */

typedef struct walk {
    const ik_collide_model *m;
    const ik_collide_scene *sc;
    const pose *P;
    bool penalty; /* accumulate the penalty and the forces */
    double active;
    double sum; /* the penalty */
    ik_collide_pair best;
} walk;

static void pair_none(ik_collide_pair *p)
{
    memset(p, 0, sizeof *p);
    p->link = p->other_link = p->obstacle = -1;
    p->distance = INFINITY;
}

/* What a pair must beat to be measured: the nearest pair so far (for
 * the penalty, the activation distance: beyond it a pair adds nothing, and
 * the closest pair is reported exactly only when nearer). */
static double cull_at(const walk *W)
{
    return W->penalty ? W->active : W->best.distance;
}

static void add_force(const walk *W, int body, const double c[3], double w, const double n[3])
{
    /* f = w n at c */
    double f[3] = {w * n[0], w * n[1], w * n[2]};
    double *F = W->P->F + 3 * body, *M = W->P->M + 3 * body;
    F[0] += f[0];
    F[1] += f[1];
    F[2] += f[2];
    M[0] += c[1] * f[2] - c[2] * f[1];
    M[1] += c[2] * f[0] - c[0] * f[2];
    M[2] += c[0] * f[1] - c[1] * f[0];
}

/* Records one measured pair: sphere i of link la against the other shape
 * (sphere j of link lb, or obstacle ob), distance d, normal n. */
static void visit(walk *W, size_t i, int la, int lb, size_t j, int ob, double d, const double n[3])
{
    const double *c = W->P->c + 3 * i;
    if (d < W->best.distance) {
        ik_collide_pair *b = &W->best;
        const double r = W->m->sphere[i].r;
        b->link = la;
        b->other_link = lb;
        b->obstacle = ob;
        b->distance = d;
        b->point = ik_v3(c[0] - r * n[0], c[1] - r * n[1], c[2] - r * n[2]);
        b->other = ik_v3(b->point.x - d * n[0], b->point.y - d * n[1], b->point.z - d * n[2]);
    }
    if (W->penalty && d < W->active) {
        const double w = W->active - d;
        W->sum += 0.5 * w * w;
        add_force(W, W->m->link[la].body, c, -w, n);
        if (lb >= 0)
            add_force(W, W->m->link[lb].body, W->P->c + 3 * j, w, n);
    }
}

/* True when two spheres (centres a and b, radii summing to rs) cannot be
 * nearer than `at`: |a - b| - rs >= at, without a square root. */
static bool apart(const double a[3], const double b[3], double rs, double at)
{
    const double x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];
    const double reach = at + rs;
    return reach < 0.0 ? false : x * x + y * y + z * z >= reach * reach;
}

static void walk_pairs(walk *W)
{
    const ik_collide_model *m = W->m;
    const pose *P = W->P;
    /* the robot against the obstacles: a link is skipped when its bounding
     * sphere's own distance from the obstacle cannot beat the cull */
    for (size_t l = 0; l < m->nlinks; l++) {
        const ik_collide_link *L = &m->link[l];
        if (!L->count)
            continue;
        const double *lc = P->lb + 3 * l;
        for (size_t k = 0; k < W->sc->count; k++) {
            const ik_obstacle *o = &W->sc->obstacle[k];
            const double oc[3] = {o->bound_c.x, o->bound_c.y, o->bound_c.z};
            double n[3];
            if (apart(lc, oc, L->bound_r + o->bound_r, cull_at(W)) ||
                d_obstacle(lc, L->bound_r, o, n) >= cull_at(W))
                continue;
            const double *c = posed_link(P, l);
            for (uint32_t i = L->first; i < L->first + L->count; i++) {
                double d = d_obstacle(c + 3 * i, m->sphere[i].r, o, n);
                visit(W, i, (int)l, -1, 0, (int)k, d, n);
            }
        }
    }
    /* the robot against itself */
    for (size_t a = 0; a < m->nlinks; a++) {
        const ik_collide_link *A = &m->link[a];
        if (!A->count)
            continue;
        for (size_t b = a + 1; b < m->nlinks; b++) {
            const ik_collide_link *B = &m->link[b];
            if (!B->count || ((m->allowed[a][b / 64] >> (b % 64)) & 1u))
                continue;
            if (apart(P->lb + 3 * a, P->lb + 3 * b, A->bound_r + B->bound_r, cull_at(W)))
                continue;
            posed_link(P, a);
            const double *c = posed_link(P, b);
            for (uint32_t i = A->first; i < A->first + A->count; i++)
                for (uint32_t j = B->first; j < B->first + B->count; j++) {
                    double n[3];
                    double d = d_point(c + 3 * i, m->sphere[i].r, c + 3 * j, m->sphere[j].r, n);
                    visit(W, i, (int)a, (int)b, j, -1, d, n);
                }
        }
    }
}

static bool query_ok(const ik_collide_model *m, const ik_collide_scene *scene, const double *q,
                     void *ws, size_t ws_size)
{
    if (!m || !q || !ws || !m->finished || ws_size < ik_collide_workspace_size(m))
        return false;
    if (scene && scene->count > 0 && !scene->obstacle)
        return false;
    for (size_t v = 0; v < m->nvars; v++)
        if (!isfinite(q[v]))
            return false;
    return true;
}

static const ik_collide_scene *scene_or_empty(const ik_collide_scene *s)
{
    static const ik_collide_scene empty = {NULL, 0};
    return s ? s : &empty;
}

double ik_collide_distance(const ik_collide_model *m, const ik_collide_scene *scene,
                           const double *q, void *ws, size_t ws_size, ik_collide_pair *closest)
{
    if (!query_ok(m, scene, q, ws, ws_size)) {
        if (closest)
            pair_none(closest);
        return NAN;
    }
    pose P;
    pose_layout(m, ws, &P);
    pose_robot(m, q, &P);
    walk W = {m, scene_or_empty(scene), &P, false, 0.0, 0.0, {0}};
    pair_none(&W.best);
    walk_pairs(&W);
    if (closest)
        *closest = W.best;
    return W.best.distance;
}

double ik_collide_penalty(const ik_collide_model *m, const ik_collide_scene *scene, const double *q,
                          double active, double *grad, void *ws, size_t ws_size,
                          ik_collide_pair *closest)
{
    if (!query_ok(m, scene, q, ws, ws_size) || !isfinite(active)) {
        if (closest)
            pair_none(closest);
        return NAN;
    }
    pose P;
    pose_layout(m, ws, &P);
    pose_robot(m, q, &P);
    memset(P.F, 0, 6 * m->nbodies * sizeof *P.F); /* F and M are adjacent */
    walk W = {m, scene_or_empty(scene), &P, true, active, 0.0, {0}};
    pair_none(&W.best);
    walk_pairs(&W);
    if (grad) {
        for (size_t v = 0; v < m->nvars; v++)
            grad[v] = 0.0;
        for (size_t b = m->nbodies; b-- > 1;) {
            const ik_collide_body *B = &m->body[b];
            double *F = P.F + 3 * b, *M = P.M + 3 * b;
            if (B->var >= 0) {
                const double *a = P.ax + 3 * b, *o = P.p + 3 * b;
                double g;
                if (B->type == IK_JOINT_PRISMATIC) {
                    g = a[0] * F[0] + a[1] * F[1] + a[2] * F[2];
                } else {
                    double t[3] = {M[0] - (o[1] * F[2] - o[2] * F[1]),
                                   M[1] - (o[2] * F[0] - o[0] * F[2]),
                                   M[2] - (o[0] * F[1] - o[1] * F[0])};
                    g = a[0] * t[0] + a[1] * t[1] + a[2] * t[2];
                }
                grad[B->var] += g;
            }
            double *Fp = P.F + 3 * B->parent, *Mp = P.M + 3 * B->parent;
            for (int k = 0; k < 3; k++) {
                Fp[k] += F[k];
                Mp[k] += M[k];
            }
        }
    }
    if (closest)
        *closest = W.best;
    return W.sum;
}

int ik_collide_allow_colliding(ik_collide_model *m, const double *q, void *ws, size_t ws_size)
{
    if (!query_ok(m, NULL, q, ws, ws_size))
        return IK_EINVAL;
    pose P;
    pose_layout(m, ws, &P);
    pose_robot(m, q, &P);
    int added = 0;
    for (size_t a = 0; a < m->nlinks; a++)
        for (size_t b = a + 1; b < m->nlinks; b++) {
            const ik_collide_link *A = &m->link[a], *B = &m->link[b];
            if (ik_collide_allowed(m, (int)a, (int)b))
                continue;
            bool contact = false;
            posed_link(&P, a);
            posed_link(&P, b);
            for (uint32_t i = A->first; i < A->first + A->count && !contact; i++)
                for (uint32_t j = B->first; j < B->first + B->count && !contact; j++)
                    contact =
                        dist3(P.c + 3 * i, P.c + 3 * j) - m->sphere[i].r - m->sphere[j].r < 0.0;
            if (contact) {
                set_allowed(m, (int)a, (int)b, true);
                added++;
            }
        }
    return added;
}

double ik_collide_rigid_distance(const ik_collide_model *m, const ik_collide_scene *scene, int body,
                                 ik_xform pose_in, ik_collide_pair *closest)
{
    ik_collide_pair best;
    pair_none(&best);
    if (!m || !m->finished || body < 0 || (size_t)body >= m->nbodies || !scene || !scene->count ||
        !scene->obstacle) {
        if (closest)
            *closest = best;
        return INFINITY;
    }
    const int g = m->body[body].rigid;
    /* rel(x): body g's frame -> body x's frame, through fixed bodies only */
    ik_xform to_body = ik_xform_identity();
    for (int x = body; x != g; x = m->body[x].parent) {
        const ik_collide_body *B = &m->body[x];
        ik_xform pre = {ik_v3(B->pre_p[0], B->pre_p[1], B->pre_p[2]), ik_quat_from_mat3(B->pre_R)};
        to_body = ik_xform_mul(pre, to_body);
    }
    const ik_xform world_g = ik_xform_mul(pose_in, ik_xform_inverse(to_body));
    for (size_t l = 0; l < m->nlinks; l++) {
        const ik_collide_link *L = &m->link[l];
        if (!L->count || m->body[L->body].rigid != g)
            continue;
        ik_xform rel = ik_xform_identity();
        for (int x = L->body; x != g; x = m->body[x].parent) {
            const ik_collide_body *B = &m->body[x];
            ik_xform pre = {ik_v3(B->pre_p[0], B->pre_p[1], B->pre_p[2]),
                            ik_quat_from_mat3(B->pre_R)};
            rel = ik_xform_mul(pre, rel);
        }
        const ik_xform world = ik_xform_mul(world_g, rel);
        for (uint32_t i = L->first; i < L->first + L->count; i++) {
            const ik_collide_sphere *s = &m->sphere[i];
            ik_vec3 c = ik_xform_point(world, ik_v3(s->c[0], s->c[1], s->c[2]));
            const double cc[3] = {c.x, c.y, c.z};
            for (size_t k = 0; k < scene->count; k++) {
                double n[3];
                double d = d_obstacle(cc, s->r, &scene->obstacle[k], n);
                if (d < best.distance) {
                    best.link = (int)l;
                    best.obstacle = (int)k;
                    best.distance = d;
                    best.point =
                        ik_v3(cc[0] - s->r * n[0], cc[1] - s->r * n[1], cc[2] - s->r * n[2]);
                    best.other = ik_v3(best.point.x - d * n[0], best.point.y - d * n[1],
                                       best.point.z - d * n[2]);
                }
            }
        }
    }
    if (closest)
        *closest = best;
    return best.distance;
}

/* ---- servo ---------------------------------------------------------------- */

#define SERVO_BISECTIONS 12

double ik_collide_servo_scale(const ik_collide_model *m, const ik_collide_scene *scene,
                              const double *q, const double *next, double margin, double slow,
                              void *ws, size_t ws_size, ik_collide_pair *closest)
{
    if (!query_ok(m, scene, q, ws, ws_size) || !next || !isfinite(margin) || margin < 0.0 ||
        !isfinite(slow) || !(slow > 0.0)) {
        if (closest)
            pair_none(closest);
        return -1.0;
    }
    for (size_t v = 0; v < m->nvars; v++)
        if (!isfinite(next[v]))
            return -1.0;
    pose P;
    pose_layout(m, ws, &P);
    const double d0 = ik_collide_distance(m, scene, q, ws, ws_size, closest);
    const double d1 = ik_collide_distance(m, scene, next, ws, ws_size, NULL);
    if (!(d1 < d0))
        return 1.0; /* not nearer: never held back */
    double s = (d0 - margin) / slow;
    s = s > 1.0 ? 1.0 : (s > 0.0 ? s : 0.0);
    if (s == 0.0)
        return 0.0;
    double *qs = P.qs;
    /* the step's end must stay clear: the largest share that does, by
     * bisection (the distance along one small step is taken as falling
     * monotonically) */
    double lo = 0.0, hi = s;
    for (size_t v = 0; v < m->nvars; v++)
        qs[v] = q[v] + hi * (next[v] - q[v]);
    if (ik_collide_distance(m, scene, qs, ws, ws_size, NULL) >= margin)
        return hi;
    for (int it = 0; it < SERVO_BISECTIONS; it++) {
        double mid = 0.5 * (lo + hi);
        for (size_t v = 0; v < m->nvars; v++)
            qs[v] = q[v] + mid * (next[v] - q[v]);
        if (ik_collide_distance(m, scene, qs, ws, ws_size, NULL) >= margin)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ---- checks --------------------------------------------------------------- */

int ik_collide_check_valid(const ik_collide_check *chk, size_t nvars)
{
    if (!chk || !chk->model || !chk->model->finished || chk->model->nvars != nvars ||
        !isfinite(chk->margin) || chk->margin < 0.0 || !chk->ws)
        return IK_EINVAL;
    if (chk->scene.count > 0 && !chk->scene.obstacle)
        return IK_EINVAL;
    for (size_t k = 0; k < chk->scene.count; k++)
        if (!obstacle_valid(&chk->scene.obstacle[k]))
            return IK_EINVAL;
    if (chk->ws_size < ik_collide_workspace_size(chk->model))
        return IK_ENOSPC;
    return IK_OK;
}

/*
 * proto_collide.c: a chain's or tree's collision model from its URDF, the
 * client's spheres and an SRDF (contract in proto_collide.h).
 *
 * The URDF is read whole (proto_urdf_robot: links with their
 * <collision>s, joints; a chain's decode reads it from the document its
 * joints were read from, not parsed again). The links are placed on the
 * model's bodies in three sweeps: down each base-to-tip path (a movable
 * joint's child on that joint's body, a fixed joint's child on its
 * parent's body with the joint's origin composed), then through fixed
 * joints from placed links to unplaced ones, both ways (a tool beyond the
 * tip, the world link above the base), until nothing changes. Geometry and the SRDF follow.
 *
 * A joint list (proto_collide_build_joints) is made such a robot first:
 * its base link, and per joint the link that joint moves, named as the
 * joint, with no <collision>s; the same sweeps place them.
 *
 * Not here: the wire format (which members carry these: proto/README.md),
 * the geometry itself (solver/ik_collide.c).
 */
#include "proto/proto_collide.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json.h"
#include "proto/proto_srdf.h"
#include "solver/ik_status.h"

const char *proto_link_state_name(proto_link_state s)
{
    switch (s) {
#define PROTO__LINK_STATE_NAME(name, wire, text)                                                   \
    case PROTO_LINK_##name:                                                                        \
        return wire;
        PROTO_LINK_STATE_MAP(PROTO__LINK_STATE_NAME)
#undef PROTO__LINK_STATE_NAME
    }
    return "";
}

typedef struct build {
    const proto_urdf_robot *R;
    ik_collide_model *m;
    int *body;     /* per URDF link: its body, -1 unplaced */
    ik_xform *off; /* its frame in the body's */
    int *path;     /* scratch: a path's joints, R->njoints of them at most */
    proto_collide_link *out;
    proto_error *err;
    const char *owner; /* in messages: "the URDF", "the chain" */
} build;

static int find_link(const proto_urdf_robot *R, const char *name)
{
    for (size_t l = 0; l < R->nlinks; l++)
        if (!R->link[l].long_name && strcmp(R->link[l].name, name) == 0)
            return (int)l;
    return -1;
}

/* The movable joints' bodies along the path base -> tip t. */
static int place_path(build *B, int base, int tip, size_t t, const ik_chain *chain,
                      const ik_tree *tree)
{
    const proto_urdf_robot *R = B->R;
    int *path = B->path;
    size_t n = 0;
    for (int l = tip; l != base;) {
        int j = R->link[l].parent_joint;
        if (j < 0 || n == R->njoints || !R->joint[j].usable)
            return proto_error_set(B->err, PROTO_E_INTERNAL, NULL,
                                   "the path to link '%.64s' does not match its chain",
                                   R->link[tip].name);
        path[n++] = j;
        l = R->joint[j].parent;
    }
    const ik_chain *c = chain ? chain : &tree->chain[t];
    size_t k = 0;
    for (size_t i = n; i-- > 0;) {
        const proto_urdf_joint_info *J = &R->joint[path[i]];
        int p = J->parent, ch = J->child;
        if (J->joint.type == IK_JOINT_FIXED) {
            B->body[ch] = B->body[p];
            B->off[ch] = ik_xform_mul(B->off[p], J->joint.origin);
            continue;
        }
        if (k >= c->dof)
            break;
        B->body[ch] = chain ? (int)k + 1 : ik_collide_var_body(B->m, tree->var[t][k]);
        B->off[ch] = ik_xform_identity();
        k++;
    }
    if (k != c->dof)
        return proto_error_set(B->err, PROTO_E_INTERNAL, NULL,
                               "the path to link '%.64s' does not match its chain",
                               R->link[tip].name);
    return 0;
}

/* Places links reached through fixed joints from placed ones. */
static void place_rigid(build *B)
{
    const proto_urdf_robot *R = B->R;
    for (bool more = true; more;) {
        more = false;
        for (size_t j = 0; j < R->njoints; j++) {
            const proto_urdf_joint_info *J = &R->joint[j];
            if (!J->usable || J->joint.type != IK_JOINT_FIXED)
                continue;
            if (B->body[J->parent] >= 0 && B->body[J->child] < 0) {
                B->body[J->child] = B->body[J->parent];
                B->off[J->child] = ik_xform_mul(B->off[J->parent], J->joint.origin);
                more = true;
            } else if (B->body[J->child] >= 0 && B->body[J->parent] < 0) {
                B->body[J->parent] = B->body[J->child];
                B->off[J->parent] =
                    ik_xform_mul(B->off[J->child], ik_xform_inverse(J->joint.origin));
                more = true;
            }
        }
    }
}

static int add_rc(build *B, int rc, const char *link)
{
    if (rc == IK_ENOSPC)
        return proto_error_set(B->err, PROTO_E_TOO_LARGE, NULL,
                               "the collision model of link '%.64s' exceeds %d spheres", link,
                               IK_COLLIDE_MAX_SPHERES);
    if (rc != IK_OK)
        return proto_error_set(B->err, PROTO_E_INVALID_URDF, NULL,
                               "link '%.64s': a <collision> cannot be modelled", link);
    return 0;
}

/* The URDF primitives of link l (model link ml). */
static int add_primitives(build *B, size_t l, int ml)
{
    const proto_urdf_link_info *L = &B->R->link[l];
    proto_collide_link *o = &B->out[l];
    for (size_t s = L->shape0; s < L->shape0 + L->nshapes; s++) {
        const proto_urdf_shape *sh = &B->R->shape[s];
        int rc = IK_OK;
        switch (sh->kind) {
        case PROTO_URDF_SPHERE:
            rc = ik_collide_add_sphere(B->m, ml, sh->origin.p, sh->size[0]);
            break;
        case PROTO_URDF_BOX:
            if (!(sh->size[0] > 0 && sh->size[1] > 0 && sh->size[2] > 0))
                continue; /* an empty box: nothing to hit */
            rc = ik_collide_add_box(B->m, ml, sh->origin,
                                    ik_v3(sh->size[0], sh->size[1], sh->size[2]));
            break;
        case PROTO_URDF_CYLINDER:
            if (!(sh->size[1] > 0))
                rc = ik_collide_add_sphere(B->m, ml, sh->origin.p, sh->size[0]);
            else
                rc = ik_collide_add_cylinder(B->m, ml, sh->origin, sh->size[0], sh->size[1]);
            break;
        default:
            o->meshes_ignored = true;
            continue;
        }
        if (add_rc(B, rc, L->name))
            return -1;
    }
    return 0;
}

static bool is_primitive(proto_urdf_shape_kind k)
{
    return k == PROTO_URDF_SPHERE || k == PROTO_URDF_BOX || k == PROTO_URDF_CYLINDER;
}

/* The client's spheres: checked, each for a link of the URDF. */
static int check_spheres(build *B, const proto_collide_spec *spec)
{
    char path[PROTO_PATH_MAX], at[PROTO_PATH_MAX];
    for (size_t i = 0; i < spec->nspheres; i++) {
        const proto_collide_sphere *s = &spec->spheres[i];
        size_t k = 0; /* its index within its link's list */
        for (size_t j = 0; j < i; j++)
            k += strcmp(spec->spheres[j].link, s->link) == 0;
        proto_json_path_key(path, "/collision_spheres", s->link);
        if (find_link(B->R, s->link) < 0)
            return proto_error_set(B->err, PROTO_E_INVALID_CHAIN, path,
                                   "collision_spheres names link '%.64s', which %s does not "
                                   "have",
                                   s->link, B->owner);
        proto_json_path_index(at, path, k);
        for (int c = 0; c < 4; c++)
            if (!isfinite(s->s[c]))
                return proto_error_set(B->err, PROTO_E_INVALID_REQUEST, at,
                                       "a sphere of link '%.64s' has a number that is not "
                                       "finite",
                                       s->link);
        if (s->s[3] < 0.0)
            return proto_error_set(B->err, PROTO_E_INVALID_REQUEST, at,
                                   "a sphere of link '%.64s' has a negative radius %g", s->link,
                                   s->s[3]);
    }
    if (spec->nspheres > IK_COLLIDE_MAX_SPHERES)
        return proto_error_set(B->err, PROTO_E_TOO_LARGE, "/collision_spheres",
                               "collision_spheres has %zu spheres, more than the %d allowed",
                               spec->nspheres, IK_COLLIDE_MAX_SPHERES);
    return 0;
}

static int apply_srdf(build *B, const proto_collide_spec *spec)
{
    proto_srdf_entry *e = NULL;
    size_t n = 0;
    if (proto_srdf_read(spec->srdf, spec->srdf_len, &e, &n, B->err)) {
        if (B->err)
            snprintf(B->err->path, sizeof B->err->path, "/srdf");
        return -1;
    }
    int r = 0;
    for (int pass = 0; pass < 2 && r == 0; pass++)
        for (size_t i = 0; i < n && r == 0; i++) {
            bool enable = e[i].kind == PROTO_SRDF_ENABLE;
            if (enable != (pass == 1))
                continue; /* enables after every disable, as MoveIt */
            int a = find_link(B->R, e[i].link1);
            int b = e[i].kind == PROTO_SRDF_DISABLE_LINK ? a : find_link(B->R, e[i].link2);
            const char *bad = a < 0 ? e[i].link1 : (b < 0 ? e[i].link2 : NULL);
            if (bad) {
                r = proto_error_set(B->err, PROTO_E_INVALID_SRDF, "/srdf",
                                    "SRDF names link '%.64s', which %s does not have", bad,
                                    B->owner);
                break;
            }
            int ma = B->out[a].model_link, mb = B->out[b].model_link;
            if (ma < 0 || mb < 0)
                continue; /* off the chain */
            if (e[i].kind == PROTO_SRDF_DISABLE_LINK) {
                for (size_t l = 0; l < B->m->nlinks; l++)
                    ik_collide_allow(B->m, ma, (int)l, true);
            } else {
                ik_collide_allow(B->m, ma, mb, !enable);
            }
        }
    free(e);
    return r;
}

/* The bodies whose parent is body b (a skeleton link has a capsule toward
 * each). */
static size_t child_bodies(const ik_collide_model *m, int b)
{
    size_t n = 0;
    for (size_t c = 1; c < m->nbodies; c++)
        n += m->body[c].parent == b;
    return n;
}

/* Skeleton capsules that meet at a joint in every pose. Where a body's
 * joint sits at its parent's origin (a link of zero length: the iiwa's
 * link_2, link_4 and link_6), the capsules of the bodies from it up to the
 * first body with a length start at one point, where the capsule of the
 * body below that one ends; each such pair is allowed as adjacent links
 * are, else a skeleton would collide with itself in every pose. Not when
 * the link below branches (a tree's torso, with a capsule toward each
 * child): allowing it would hide its capsules toward the other branches
 * (an arm through the neck), so the pair stays checked, and an SRDF may
 * disable it. */
static void allow_skeleton_joints(ik_collide_model *m, const int *link_of_body)
{
    for (size_t c = 1; c < m->nbodies; c++) {
        const int lc = link_of_body[c];
        int x = (int)c;
        while (lc >= 0 && x > 0) {
            const double *p = m->body[x].pre_p;
            const int up = m->body[x].parent;
            if (up >= 0 && link_of_body[up] >= 0 && (x == (int)c || child_bodies(m, up) == 1))
                ik_collide_allow(m, lc, link_of_body[up], true);
            if (fabs(p[0]) + fabs(p[1]) + fabs(p[2]) > 1e-12)
                break;
            x = up;
        }
    }
}

static int build_robot(const proto_urdf_robot *robot, const char *owner, const char *base,
                       const char *const *tips, size_t ntips, const ik_chain *chain,
                       const ik_tree *tree, const proto_collide_spec *spec, ik_collide_model *m,
                       proto_collide_link **links, size_t *nlinks, proto_error *err)
{
    const proto_urdf_robot R = *robot;
    build B = {&R, m, NULL, NULL, NULL, NULL, err, owner};
    B.body = malloc((R.nlinks ? R.nlinks : 1) * sizeof *B.body);
    B.off = malloc((R.nlinks ? R.nlinks : 1) * sizeof *B.off);
    B.out = calloc(R.nlinks ? R.nlinks : 1, sizeof *B.out);
    B.path = malloc((R.njoints ? R.njoints : 1) * sizeof *B.path);
    int r = 0;
    if (!B.body || !B.off || !B.out || !B.path)
        r = proto_error_set(err, PROTO_E_INTERNAL, NULL, "out of memory");
    if (r == 0)
        r = (chain ? ik_collide_model_from_chain(m, chain) : ik_collide_model_from_tree(m, tree)) ==
                    IK_OK
                ? 0
                : proto_error_set(err, PROTO_E_INTERNAL, NULL, "collision model: bad chain");
    if (r == 0)
        r = check_spheres(&B, spec);
    int b0 = r ? -1 : find_link(&R, base);
    if (r == 0 && b0 < 0)
        r = proto_error_set(err, PROTO_E_INVALID_URDF, NULL, "unknown base link '%.64s'", base);
    for (size_t l = 0; r == 0 && l < R.nlinks; l++) {
        B.body[l] = -1;
        B.off[l] = ik_xform_identity();
        snprintf(B.out[l].name, sizeof B.out[l].name, "%s", R.link[l].name);
        B.out[l].model_link = -1;
        B.out[l].state = PROTO_LINK_OFF_CHAIN;
    }
    if (r == 0)
        B.body[b0] = 0;
    for (size_t t = 0; r == 0 && t < ntips; t++) {
        int tl = find_link(&R, tips[t]);
        r = tl < 0 ? proto_error_set(err, PROTO_E_INVALID_URDF, NULL, "unknown tip link '%.64s'",
                                     tips[t])
                   : place_path(&B, b0, tl, t, chain, tree);
    }
    if (r == 0)
        place_rigid(&B);

    /* the model's links, then their geometry */
    int link_of_body[IK_COLLIDE_MAX_BODIES];
    for (size_t b = 0; b < IK_COLLIDE_MAX_BODIES; b++)
        link_of_body[b] = -1;
    bool skeleton = false;
    for (size_t l = 0; r == 0 && l < R.nlinks; l++) {
        if (B.body[l] < 0)
            continue;
        int ml = ik_collide_add_link(m, B.body[l], B.off[l]);
        if (ml < 0) {
            r = proto_error_set(err, PROTO_E_TOO_LARGE, NULL,
                                "the collision model has more than %d links", IK_COLLIDE_MAX_LINKS);
            break;
        }
        proto_collide_link *o = &B.out[l];
        o->model_link = ml;
        size_t before = m->nspheres;
        bool mine = false, prim = false, other = false;
        for (size_t i = 0; i < spec->nspheres && r == 0; i++)
            if (strcmp(spec->spheres[i].link, R.link[l].name) == 0) {
                const double *s = spec->spheres[i].s;
                mine = true;
                r = add_rc(&B, ik_collide_add_sphere(m, ml, ik_v3(s[0], s[1], s[2]), s[3]),
                           R.link[l].name);
            }
        for (size_t s = 0; s < R.link[l].nshapes; s++) {
            bool p = is_primitive(R.shape[R.link[l].shape0 + s].kind);
            prim |= p;
            other |= !p;
        }
        if (mine) {
            o->state = PROTO_LINK_SPHERES;
        } else if (prim) {
            o->state = PROTO_LINK_PRIMITIVES;
            r = add_primitives(&B, l, ml);
        } else {
            o->state = other ? PROTO_LINK_UNMODELLED : PROTO_LINK_NONE;
            /* the frame of its body (the base link, a movable joint's
             * child): the skeleton may stand for it */
            const ik_xform o2 = B.off[l];
            bool frame = o2.p.x == 0.0 && o2.p.y == 0.0 && o2.p.z == 0.0 && o2.q.x == 0.0 &&
                         o2.q.y == 0.0 && o2.q.z == 0.0 && link_of_body[B.body[l]] < 0;
            if (spec->skeleton_radius > 0.0 && frame) {
                link_of_body[B.body[l]] = ml;
                o->state = PROTO_LINK_SKELETON;
                skeleton = true;
            }
        }
        o->spheres = m->nspheres - before;
    }
    if (r == 0 && skeleton) {
        r = add_rc(&B, ik_collide_add_skeleton(m, link_of_body, spec->skeleton_radius),
                   "(skeleton)");
        for (size_t l = 0; r == 0 && l < R.nlinks; l++)
            if (B.out[l].state == PROTO_LINK_SKELETON) {
                size_t c = 0;
                for (size_t s = 0; s < m->nspheres; s++)
                    c += m->sphere[s].link == B.out[l].model_link;
                B.out[l].spheres = c;
            }
    }
    if (r == 0)
        ik_collide_model_finish(m);
    if (r == 0 && skeleton)
        allow_skeleton_joints(m, link_of_body);
    if (r == 0 && spec->srdf)
        r = apply_srdf(&B, spec);
    const size_t count = R.nlinks;
    free(B.body);
    free(B.off);
    free(B.path);
    if (r) {
        free(B.out);
        return -1;
    }
    *links = B.out;
    *nlinks = count;
    return 0;
}

int proto_collide_build_robot(const proto_urdf_robot *urdf, const char *base,
                              const char *const *tips, size_t ntips, const ik_chain *chain,
                              const ik_tree *tree, const proto_collide_spec *spec,
                              ik_collide_model *m, proto_collide_link **links, size_t *nlinks,
                              proto_error *err)
{
    *links = NULL;
    *nlinks = 0;
    if (!urdf || !base || !tips || ntips == 0 || !spec || !m || (!chain == !tree) ||
        (chain && ntips != 1) || (tree && ntips != tree->ntips))
        return proto_error_set(err, PROTO_E_INTERNAL, NULL, "collision model: bad arguments");
    return build_robot(urdf, "the URDF", base, tips, ntips, chain, tree, spec, m, links, nlinks,
                       err);
}

int proto_collide_build_joints(const ik_joint *joints, const int *parent,
                               char (*names)[PROTO_URDF_NAME_MAX], size_t n,
                               const size_t *tip_joint, size_t ntips, const ik_chain *chain,
                               const ik_tree *tree, const proto_collide_spec *spec,
                               ik_collide_model *m, proto_collide_link **links, size_t *nlinks,
                               proto_error *err)
{
    *links = NULL;
    *nlinks = 0;
    if (!joints || n == 0 || !names || !tip_joint || ntips == 0 || ntips > IK_TREE_MAX_TIPS ||
        !spec || !m || (!chain == !tree) || (chain && ntips != 1) || (tree && ntips != tree->ntips))
        return proto_error_set(err, PROTO_E_INTERNAL, NULL, "collision model: bad arguments");
    /* link 0 is the base, link i + 1 the one joint i moves */
    proto_urdf_robot R = {
        calloc(n + 1, sizeof *R.link), n + 1, calloc(n, sizeof *R.joint), n, NULL, 0};
    int r = 0;
    if (!R.link || !R.joint)
        r = proto_error_set(err, PROTO_E_INTERNAL, NULL, "out of memory");
    for (size_t l = 0; r == 0 && l <= n; l++) {
        const char *name = l ? names[l - 1] : PROTO_COLLIDE_BASE;
        for (size_t k = 0; k < l; k++)
            if (strcmp(R.link[k].name, name) == 0) {
                r = proto_error_set(err, PROTO_E_INVALID_CHAIN, NULL,
                                    "two links are named '%.64s': collisions name a joint list's "
                                    "links \"" PROTO_COLLIDE_BASE "\" and its joints' names, "
                                    "which must then differ",
                                    name);
                break;
            }
        snprintf(R.link[l].name, sizeof R.link[l].name, "%s", name);
        R.link[l].parent_joint = l ? (int)l - 1 : -1;
    }
    for (size_t i = 0; r == 0 && i < n; i++) {
        proto_urdf_joint_info *J = &R.joint[i];
        snprintf(J->name, sizeof J->name, "%s", names[i]);
        J->parent = parent ? parent[i] + 1 : (int)i;
        J->child = (int)i + 1;
        J->usable = true;
        J->joint = joints[i];
    }
    const char *tips[IK_TREE_MAX_TIPS];
    for (size_t t = 0; t < ntips; t++)
        tips[t] = tip_joint[t] < n ? names[tip_joint[t]] : PROTO_COLLIDE_BASE;
    if (r == 0)
        r = build_robot(&R, "the chain", PROTO_COLLIDE_BASE, tips, ntips, chain, tree, spec, m,
                        links, nlinks, err);
    proto_urdf_robot_free(&R);
    return r;
}

/*
 * ik_skeleton.c: the translate-rotate-scale hierarchy of seed 001 ("Some
 * Recap": T_i = trans(Delta_i) rot(q_i) scale(s_i), aggregate transforms
 * G_i = G_parent(i) T_i) and its bone orientation update for a two-bone limb
 * ("Adjusting the Orientations": b_local = G_k^-1 b, b'_local = G_k^-1 b',
 * q_k <- q_k * GetRotationBetween(b_local, b'_local), then the same for the
 * knee with c and c').
 *
 * The affine maps are 3x4 matrices (the homogeneous 4x4's last row is
 * always 0 0 0 1). The seed's matrices have two typos that are corrected
 * here (see ik_skeleton.h): the scale matrix is diagonal, and the rotation
 * matrix's row 3, column 2 entry is 2(q_y q_z + q_w q_x).
 *
 * Directions are compared in each bone's rotation frame (after its own
 * scale), so a bone's own non-uniform scale does not bend its direction;
 * with a uniform scale this is the seed's formula. When the update is exact
 * and when it cannot be (sheared parent frames) is explained in
 * ik_skeleton.h.
 *
 * Not here: the two-bone position solve (ik_twobone.c), animation.
 */
#include "solver/ik_skeleton.h"

#include <math.h>

#include "solver/ik_status.h"

/* ---- affine helpers --------------------------------------------------- */

ik_mat34 ik_mat34_identity(void)
{
    ik_mat34 m = {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}};
    return m;
}

ik_mat34 ik_mat34_from_trs(ik_vec3 t, ik_quat q, ik_vec3 s)
{
    double r[9];
    ik_quat_to_mat3(ik_quat_normalize(q), r);
    double sc[3] = {s.x, s.y, s.z};
    double tr[3] = {t.x, t.y, t.z};
    ik_mat34 m;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            m.m[i][j] = r[i * 3 + j] * sc[j]; /* rot * scale: column j scaled */
        m.m[i][3] = tr[i];
    }
    return m;
}

ik_mat34 ik_mat34_mul(const ik_mat34 *a, const ik_mat34 *b)
{
    ik_mat34 m;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 4; j++) {
            double v = a->m[i][0] * b->m[0][j] + a->m[i][1] * b->m[1][j] + a->m[i][2] * b->m[2][j];
            if (j == 3)
                v += a->m[i][3];
            m.m[i][j] = v;
        }
    }
    return m;
}

int ik_mat34_inverse(const ik_mat34 *a, ik_mat34 *out)
{
    const double(*m)[4] = a->m;
    /* Cofactors of the linear part. */
    double c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1];
    double c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2];
    double c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0];
    double det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
    if (!isfinite(det) || det == 0.0)
        return IK_EINVAL;
    double id = 1.0 / det;
    ik_mat34 r;
    r.m[0][0] = c00 * id;
    r.m[0][1] = (m[0][2] * m[2][1] - m[0][1] * m[2][2]) * id;
    r.m[0][2] = (m[0][1] * m[1][2] - m[0][2] * m[1][1]) * id;
    r.m[1][0] = c01 * id;
    r.m[1][1] = (m[0][0] * m[2][2] - m[0][2] * m[2][0]) * id;
    r.m[1][2] = (m[0][2] * m[1][0] - m[0][0] * m[1][2]) * id;
    r.m[2][0] = c02 * id;
    r.m[2][1] = (m[0][1] * m[2][0] - m[0][0] * m[2][1]) * id;
    r.m[2][2] = (m[0][0] * m[1][1] - m[0][1] * m[1][0]) * id;
    for (int i = 0; i < 3; i++) {
        r.m[i][3] = -(r.m[i][0] * m[0][3] + r.m[i][1] * m[1][3] + r.m[i][2] * m[2][3]);
        for (int j = 0; j < 4; j++)
            if (!isfinite(r.m[i][j]))
                return IK_EINVAL;
    }
    *out = r;
    return IK_OK;
}

ik_vec3 ik_mat34_point(const ik_mat34 *a, ik_vec3 p)
{
    const double(*m)[4] = a->m;
    return ik_v3(m[0][0] * p.x + m[0][1] * p.y + m[0][2] * p.z + m[0][3],
                 m[1][0] * p.x + m[1][1] * p.y + m[1][2] * p.z + m[1][3],
                 m[2][0] * p.x + m[2][1] * p.y + m[2][2] * p.z + m[2][3]);
}

ik_vec3 ik_mat34_dir(const ik_mat34 *a, ik_vec3 d)
{
    const double(*m)[4] = a->m;
    return ik_v3(m[0][0] * d.x + m[0][1] * d.y + m[0][2] * d.z,
                 m[1][0] * d.x + m[1][1] * d.y + m[1][2] * d.z,
                 m[2][0] * d.x + m[2][1] * d.y + m[2][2] * d.z);
}

ik_vec3 ik_mat34_origin(const ik_mat34 *a)
{
    return ik_v3(a->m[0][3], a->m[1][3], a->m[2][3]);
}

/* ---- hierarchy -------------------------------------------------------- */

static bool bone_valid(const ik_bone *b, size_t index)
{
    if (b->parent < -1 || (b->parent >= 0 && (size_t)b->parent >= index))
        return false;
    if (!ik_vec3_isfinite(b->translation) || !ik_vec3_isfinite(b->scale) ||
        !ik_quat_isfinite(b->rotation))
        return false;
    if (!(ik_quat_dot(b->rotation, b->rotation) > 0.0))
        return false;
    return b->scale.x != 0.0 && b->scale.y != 0.0 && b->scale.z != 0.0;
}

int ik_skeleton_check(const ik_bone *bones, size_t n)
{
    if (n > 0 && !bones)
        return IK_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!bone_valid(&bones[i], i))
            return IK_EINVAL;
    return IK_OK;
}

ik_mat34 ik_bone_local(const ik_bone *bone)
{
    return ik_mat34_from_trs(bone->translation, bone->rotation, bone->scale);
}

static void globals_from(const ik_bone *bones, size_t n, size_t first, ik_mat34 *g)
{
    for (size_t i = first; i < n; i++) {
        ik_mat34 t = ik_bone_local(&bones[i]);
        if (bones[i].parent < 0)
            g[i] = t;
        else
            g[i] = ik_mat34_mul(&g[bones[i].parent], &t);
    }
}

static bool mat34_isfinite(const ik_mat34 *m)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            if (!isfinite(m->m[i][j]))
                return false;
    return true;
}

/* Computes the globals into g; when one of them overflows (a product of
 * large scales or a sum of large translations that is not finite), every
 * entry is reset to the identity and false is returned, so that no
 * non-finite number is ever left in the caller's array. */
static bool globals_checked(const ik_bone *bones, size_t n, ik_mat34 *g)
{
    globals_from(bones, n, 0, g);
    for (size_t i = 0; i < n; i++) {
        if (!mat34_isfinite(&g[i])) {
            for (size_t k = 0; k < n; k++)
                g[k] = ik_mat34_identity();
            return false;
        }
    }
    return true;
}

int ik_skeleton_globals(const ik_bone *bones, size_t n, ik_mat34 *globals)
{
    if (ik_skeleton_check(bones, n) != IK_OK || (n > 0 && !globals))
        return IK_EINVAL;
    return globals_checked(bones, n, globals) ? IK_OK : IK_EINVAL;
}

/* Global transform of bone i's parent (identity for a root), walking up
 * the parents without touching the caller's globals. */
static ik_mat34 parent_global(const ik_bone *bones, size_t i)
{
    ik_mat34 g = ik_mat34_identity();
    int p = bones[i].parent;
    while (p >= 0) {
        ik_mat34 t = ik_bone_local(&bones[p]);
        g = ik_mat34_mul(&t, &g);
        p = bones[p].parent;
    }
    return g;
}

static ik_vec3 hadamard(ik_vec3 a, ik_vec3 b)
{
    return ik_v3(a.x * b.x, a.y * b.y, a.z * b.z);
}

/* The direction of world point x seen from bone frame g, in the bone's
 * rotation frame (its own scale s applied: s * (g^-1 x)). */
static int rot_frame_dir(const ik_mat34 *g, ik_vec3 s, ik_vec3 x, ik_vec3 *out)
{
    ik_mat34 gi;
    if (ik_mat34_inverse(g, &gi) != IK_OK)
        return IK_EINVAL;
    ik_vec3 v = hadamard(s, ik_mat34_point(&gi, x));
    if (!ik_vec3_isfinite(v))
        return IK_EINVAL;
    *out = v;
    return IK_OK;
}

int ik_skeleton_twobone(ik_bone *bones, size_t n, size_t hip, size_t knee, size_t foot,
                        ik_vec3 target, const ik_vec3 *pole, ik_mat34 *globals,
                        ik_twobone_result *res)
{
    if (!globals || ik_skeleton_check(bones, n) != IK_OK)
        return IK_EINVAL;
    if (hip >= n || knee >= n || foot >= n)
        return IK_EINVAL;
    if (bones[foot].parent != (int)knee || bones[knee].parent != (int)hip)
        return IK_EINVAL;

    /* Current globals of the limb (seed: "we should already have the
     * aggregate transforms computed"), computed here so the caller's array
     * stays untouched until the update is known to succeed. */
    ik_mat34 g_parent = parent_global(bones, hip);
    ik_mat34 t_k = ik_bone_local(&bones[hip]);
    ik_mat34 t_j = ik_bone_local(&bones[knee]);
    ik_mat34 t_i = ik_bone_local(&bones[foot]);
    ik_mat34 g_k = ik_mat34_mul(&g_parent, &t_k);
    ik_mat34 g_j = ik_mat34_mul(&g_k, &t_j);
    ik_mat34 g_i = ik_mat34_mul(&g_j, &t_i);
    ik_vec3 a = ik_mat34_origin(&g_k);
    ik_vec3 b = ik_mat34_origin(&g_j);
    ik_vec3 c = ik_mat34_origin(&g_i);

    ik_twobone_result tb;
    int st = ik_twobone_solve(a, b, c, target, pole, &tb);
    if (st == IK_EINVAL)
        return IK_EINVAL;

    /* Bone k: rotate b's direction onto b''s, in k's own frame. */
    ik_vec3 cur, fin;
    if (rot_frame_dir(&g_k, bones[hip].scale, b, &cur) != IK_OK ||
        rot_frame_dir(&g_k, bones[hip].scale, tb.b, &fin) != IK_OK)
        return IK_EINVAL;
    ik_quat q_k = ik_quat_normalize(
        ik_quat_mul(ik_quat_normalize(bones[hip].rotation), ik_quat_between(cur, fin)));

    /* Propagate to the knee: G_k' and G_j'. */
    ik_mat34 t_k2 = ik_mat34_from_trs(bones[hip].translation, q_k, bones[hip].scale);
    ik_mat34 g_k2 = ik_mat34_mul(&g_parent, &t_k2);
    ik_mat34 g_j2 = ik_mat34_mul(&g_k2, &t_j);

    /* Bone j: c seen from the old G_j, c' from the new one (as the seed). */
    if (rot_frame_dir(&g_j, bones[knee].scale, c, &cur) != IK_OK ||
        rot_frame_dir(&g_j2, bones[knee].scale, tb.c, &fin) != IK_OK)
        return IK_EINVAL;
    ik_quat q_j = ik_quat_normalize(
        ik_quat_mul(ik_quat_normalize(bones[knee].rotation), ik_quat_between(cur, fin)));
    if (!ik_quat_isfinite(q_k) || !ik_quat_isfinite(q_j))
        return IK_EINVAL;

    const ik_quat old_k = bones[hip].rotation, old_j = bones[knee].rotation;
    bones[hip].rotation = q_k;
    bones[knee].rotation = q_j;
    if (!globals_checked(bones, n, globals)) {
        /* a bone outside the limb overflows: undo, report invalid input */
        bones[hip].rotation = old_k;
        bones[knee].rotation = old_j;
        return IK_EINVAL;
    }
    if (res)
        *res = tb;
    return st;
}

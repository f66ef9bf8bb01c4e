/*
 * proto_frame.c: frame conventions and angle units (derivation in
 * proto_frame.h). Each convention is its matrix M (p_ros = M p); everything
 * else is derived from M so the conversions cannot drift apart (det(M) is
 * a table, which the frame tests hold to M).
 */
#include "proto/proto_frame.h"

#include <stddef.h>

const char *const proto_frame_names[] = {"ros", "unity", "unreal", NULL};
const char *const proto_units_names[] = {"radians", "degrees", NULL};

/* Row-major M for each convention. */
static const double M_TABLE[3][9] = {
    {1, 0, 0, 0, 1, 0, 0, 0, 1},  /* ros */
    {0, 0, 1, -1, 0, 0, 0, 1, 0}, /* unity: (z, -x, y) */
    {1, 0, 0, 0, -1, 0, 0, 0, 1}, /* unreal: (x, -y, z) */
};

static const double *mat(proto_frame f)
{
    return M_TABLE[(unsigned)f < 3 ? (unsigned)f : 0];
}

static ik_vec3 mul(const double *m, ik_vec3 v)
{
    return ik_v3(m[0] * v.x + m[1] * v.y + m[2] * v.z, m[3] * v.x + m[4] * v.y + m[5] * v.z,
                 m[6] * v.x + m[7] * v.y + m[8] * v.z);
}

static ik_vec3 mul_t(const double *m, ik_vec3 v)
{
    return ik_v3(m[0] * v.x + m[3] * v.y + m[6] * v.z, m[1] * v.x + m[4] * v.y + m[7] * v.z,
                 m[2] * v.x + m[5] * v.y + m[8] * v.z);
}

/* det(M) of each convention: +1 for a rotation of axes, -1 for a
 * reflection (answers' quaternions and joint axes are pseudo-vectors). A
 * table rather than computed from M for every quaternion of every answer;
 * a wrong sign here fails the rotation identities of
 * tests/proto/test_proto_frame.c, which hold M and these together. */
static const double DET_TABLE[3] = {1, -1, -1}; /* ros, unity, unreal */

static double det(proto_frame f)
{
    return DET_TABLE[(unsigned)f < 3 ? (unsigned)f : 0];
}

ik_vec3 proto_frame_vec_in(proto_frame f, ik_vec3 v)
{
    return mul(mat(f), v);
}

ik_vec3 proto_frame_vec_out(proto_frame f, ik_vec3 v)
{
    return mul_t(mat(f), v);
}

ik_vec3 proto_frame_axis_in(proto_frame f, ik_vec3 a)
{
    /* pseudo-vector: a_ros = det(M) M a */
    return ik_vec3_scale(mul(mat(f), a), det(f));
}

ik_quat proto_frame_quat_in(proto_frame f, ik_quat q)
{
    ik_vec3 v = proto_frame_axis_in(f, ik_v3(q.x, q.y, q.z));
    ik_quat r = {v.x, v.y, v.z, q.w};
    return r;
}

ik_quat proto_frame_quat_out(proto_frame f, ik_quat q)
{
    ik_vec3 v = ik_vec3_scale(mul_t(mat(f), ik_v3(q.x, q.y, q.z)), det(f));
    ik_quat r = {v.x, v.y, v.z, q.w};
    return r;
}

void proto_frame_mat3_in(proto_frame f, const double m[9], double out[9])
{
    const double *M = mat(f);
    double t[9];
    /* t = M m */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[i * 3 + j] = M[i * 3] * m[j] + M[i * 3 + 1] * m[3 + j] + M[i * 3 + 2] * m[6 + j];
    /* out = t M^T (m, which out may be, is read whole into t) */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out[i * 3 + j] =
                t[i * 3] * M[j * 3] + t[i * 3 + 1] * M[j * 3 + 1] + t[i * 3 + 2] * M[j * 3 + 2];
}

ik_xform proto_frame_xform_in(proto_frame f, ik_xform x)
{
    ik_xform r = {proto_frame_vec_in(f, x.p), proto_frame_quat_in(f, x.q)};
    return r;
}

ik_xform proto_frame_xform_out(proto_frame f, ik_xform x)
{
    ik_xform r = {proto_frame_vec_out(f, x.p), proto_frame_quat_out(f, x.q)};
    return r;
}

double proto_angle_in(proto_units u, double a)
{
    return u == PROTO_UNITS_DEGREES ? a * (IK_PI / 180.0) : a;
}

double proto_angle_out(proto_units u, double a)
{
    return u == PROTO_UNITS_DEGREES ? a * (180.0 / IK_PI) : a;
}

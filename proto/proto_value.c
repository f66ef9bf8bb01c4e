/*
 * proto_value.c: the decoders of the values every part of the wire format
 * shares (a point, a quaternion, a rotation matrix), used by chains
 * (proto_chain.c), requests (proto_job_decode.c) and streams
 * (proto_session.c). Each checks its value strictly and fills the caller's
 * proto_error with the value's JSON path; none converts frames or units.
 */
#include "proto/proto_impl.h"

#include <math.h>
#include <string.h>

int proto__vec3(const json_t *v, const char *path, ik_vec3 *out, proto_error *err)
{
    double d[3];
    if (proto_json_numbers(v, path, 3, d, err))
        return -1;
    *out = ik_v3(d[0], d[1], d[2]);
    return 0;
}

int proto__quat(const json_t *v, const char *path, ik_quat *out, proto_error *err)
{
    double d[4];
    if (proto_json_numbers(v, path, 4, d, err))
        return -1;
    double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]);
    if (!(fabs(n - 1.0) <= PROTO_QUAT_UNIT_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s must be a unit quaternion [x, y, z, w] (its norm is %.6g; "
                               "at most %g away from 1 is normalised)",
                               name, n, PROTO_QUAT_UNIT_TOL);
    }
    ik_quat q = {d[0] / n, d[1] / n, d[2] / n, d[3] / n};
    *out = q;
    return 0;
}

int proto__mat3(const json_t *v, const char *path, double m[9], proto_error *err)
{
    size_t n;
    if (proto_json_array(v, path, 3, 3, false, &n, err))
        return -1;
    double r[9];
    for (size_t i = 0; i < 3; i++) {
        char p[PROTO_PATH_MAX];
        proto_json_path_index(p, path, i);
        if (proto_json_numbers(json_array_get(v, i), p, 3, r + 3 * i, err))
            return -1;
    }
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = r[3 * i] * r[3 * j] + r[3 * i + 1] * r[3 * j + 1] +
                       r[3 * i + 2] * r[3 * j + 2];
            double e = fabs(s - (i == j ? 1.0 : 0.0));
            if (e > worst)
                worst = e;
        }
    double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                 r[2] * (r[3] * r[7] - r[4] * r[6]);
    if (!(worst <= PROTO_MAT_ORTHO_TOL) || !(fabs(det - 1.0) <= PROTO_MAT_ORTHO_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "%s must be a rotation matrix (orthonormal rows, determinant +1; "
                               "got max |R R^T - I| = %.3g, det = %.6g)",
                               name, worst, det);
    }
    memcpy(m, r, sizeof r);
    return 0;
}

/*
 * proto_check.h: helpers shared by the proto/ tests: run a request through
 * the same path as the daemon (decode, run, encode) and parse the response,
 * open a stream's session on a chain object,
 * and check answers independently of the solver that produced them:
 * forward kinematics of joint chains (ik_chain_fk on a chain built by the
 * test itself, or the test's own FK in a caller's frame), and geometry of
 * bone answers (lengths kept, end on the target).
 *
 * Header-only (static functions); every test file that includes it uses
 * what it needs.
 */
#ifndef PROTO_CHECK_H
#define PROTO_CHECK_H

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_json_write.h"
#include "proto/proto_session.h"
#include "solver/ik_chain.h"
#include "solver/ik_math.h"

/* The HTTP status of a wire error code, from the HTTP column of
 * PROTO_ERROR_MAP (the daemon's srv_http_status does the same). */
static inline int pc_http_status(proto_errcode code)
{
    switch (code) {
#define PC_HTTP_STATUS_CASE(name, wire, http, moveit, text)                                        \
    case PROTO_E_##name:                                                                           \
        return http;
        PROTO_ERROR_MAP(PC_HTTP_STATUS_CASE)
#undef PC_HTTP_STATUS_CASE
    default:
        return 500;
    }
}

/* Decodes (kind), runs and encodes body; returns the parsed response or NULL
 * with *err set when the request was rejected. */
/* How jansson prints text: json_dumps(json_loads(text), COMPACT |
 * REAL_PRECISION(17) | ENCODE_ANY, plus SORT_KEYS when sort). ikd writes
 * reals with the fewest digits that read back (proto_json_format_shortest),
 * jansson with 17: a text of ikd's reprinted this way equals jansson's own
 * text of the same tree exactly when the two agree on everything but the
 * digits and ikd's reals read back bit for bit. malloc'd; NULL when text is
 * not JSON. */
static inline char *pc_reprint17(const char *text, bool sort)
{
    json_error_t je;
    json_t *t = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!t)
        return NULL;
    char *s = json_dumps(t, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY |
                                (sort ? JSON_SORT_KEYS : 0));
    json_decref(t);
    return s;
}

static inline json_t *pc_solve(const char *body, proto_kind kind, proto_error *err)
{
    proto_job *job = NULL;
    proto_error_clear(err);
    if (proto_job_decode(body, strlen(body), kind, NULL, NULL, NULL, &job, err))
        return NULL;
    proto_job_run(job, 0, proto_job_count(job));
    size_t len;
    char *s = proto_job_encode(job, &len);
    proto_job_free(job);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), len);
    json_error_t je;
    json_t *r = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(r != NULL, "response is not JSON: %s", je.text);
    free(s);
    return r;
}

/* The request must be rejected with this code and path. */
static inline void pc_reject(const char *body, proto_kind kind, const char *code, int status,
                             const char *path)
{
    proto_error e;
    json_t *r = pc_solve(body, kind, &e);
    ck_assert_msg(r == NULL, "accepted: %s", body);
    ck_assert_msg(strcmp(proto_error_name(e.code), code) == 0, "code %s (%s) for %s", proto_error_name(e.code), e.message, body);
    ck_assert_int_eq(pc_http_status(e.code), status);
    if (path)
        ck_assert_msg(strcmp(e.path, path) == 0, "path %s (%s) for %s", e.path, e.message, body);
    ck_assert(strlen(e.message) > 0);
}

static inline double pc_num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_number(v), "%s is not a number", key);
    return json_number_value(v);
}

static inline ik_vec3 pc_vec(const json_t *a)
{
    ck_assert(json_is_array(a));
    return ik_v3(json_number_value(json_array_get(a, 0)), json_number_value(json_array_get(a, 1)),
                 json_array_size(a) > 2 ? json_number_value(json_array_get(a, 2)) : 0);
}

static inline ik_quat pc_quat(const json_t *a)
{
    ck_assert(json_is_array(a) && json_array_size(a) == 4);
    ik_quat q = {json_number_value(json_array_get(a, 0)), json_number_value(json_array_get(a, 1)),
                 json_number_value(json_array_get(a, 2)), json_number_value(json_array_get(a, 3))};
    return q;
}

/* Reads a whole file (NULL if it cannot); *len gets its size. */
static inline char *pc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return b;
}

static inline const char *pc_data_dir(void)
{
    const char *d = getenv("IKD_DATA");
    return d && *d ? d : "tests/data";
}

/* Rotation by angle t about axis a (any frame, the usual formula). */
static inline ik_vec3 pc_rot(ik_vec3 a, double t, ik_vec3 v)
{
    ik_vec3 k = ik_vec3_normalize(a);
    ik_vec3 c = ik_vec3_cross(k, v);
    return ik_vec3_add(ik_vec3_add(ik_vec3_scale(v, cos(t)), ik_vec3_scale(c, sin(t))),
                       ik_vec3_scale(k, ik_vec3_dot(k, v) * (1 - cos(t))));
}

/* The test's own forward kinematics of a joint list, numerically in
 * whatever frame its numbers are in: each joint is (xyz, rpy, axis, type
 * 'r'evolute/'p'rismatic/'f'ixed); returns the tip position. Rotations are
 * kept as 3 column vectors so nothing of proto/ or ik_math's quaternion code
 * is reused. */
typedef struct pc_joint {
    double xyz[3], rpy[3], axis[3];
    char type;
} pc_joint;

static inline void pc_mat_rpy(const double rpy[3], double m[9])
{
    double cr = cos(rpy[0]), sr = sin(rpy[0]), cp = cos(rpy[1]), sp = sin(rpy[1]),
           cy = cos(rpy[2]), sy = sin(rpy[2]);
    double r[9] = {cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
                   sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
                   -sp,     cp * sr,                cp * cr};
    memcpy(m, r, sizeof r);
}

static inline void pc_mat_mul(const double a[9], const double b[9], double out[9])
{
    double r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    memcpy(out, r, sizeof r);
}

static inline void pc_mat_axis_angle(const double ax[3], double t, double m[9])
{
    ik_vec3 a = ik_v3(ax[0], ax[1], ax[2]);
    ik_vec3 c0 = pc_rot(a, t, ik_v3(1, 0, 0)), c1 = pc_rot(a, t, ik_v3(0, 1, 0)),
            c2 = pc_rot(a, t, ik_v3(0, 0, 1));
    double r[9] = {c0.x, c1.x, c2.x, c0.y, c1.y, c2.y, c0.z, c1.z, c2.z};
    memcpy(m, r, sizeof r);
}

/* Tip pose (position, rotation matrix) of the joint list at q (movable
 * joints in order). */
static inline ik_vec3 pc_fk(const pc_joint *j, size_t n, const double *q, double R[9])
{
    double Rc[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, p[3] = {0, 0, 0};
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (int r = 0; r < 3; r++)
            p[r] += Rc[3 * r] * j[i].xyz[0] + Rc[3 * r + 1] * j[i].xyz[1] +
                    Rc[3 * r + 2] * j[i].xyz[2];
        double o[9];
        pc_mat_rpy(j[i].rpy, o);
        pc_mat_mul(Rc, o, Rc);
        if (j[i].type == 'r') {
            double m[9];
            pc_mat_axis_angle(j[i].axis, q[k++], m);
            pc_mat_mul(Rc, m, Rc);
        } else if (j[i].type == 'p') {
            ik_vec3 a = ik_vec3_normalize(ik_v3(j[i].axis[0], j[i].axis[1], j[i].axis[2]));
            double d = q[k++];
            for (int r = 0; r < 3; r++)
                p[r] += d * (Rc[3 * r] * a.x + Rc[3 * r + 1] * a.y + Rc[3 * r + 2] * a.z);
        }
    }
    if (R)
        memcpy(R, Rc, sizeof Rc);
    return ik_v3(p[0], p[1], p[2]);
}

/* The "joints" chain object of n joints (lim[2k], lim[2k + 1]: the limits
 * of joint k, used for revolute and prismatic joints) into buf, compact
 * JSON, joint k named "j<k>". */
static inline void pc_joints_json(char *buf, size_t size, const pc_joint *j, size_t n,
                                  const double *lim)
{
    size_t off = (size_t)snprintf(buf, size, "{\"kind\":\"joints\",\"joints\":[");
    for (size_t k = 0; k < n && off < size; k++) {
        const char *type = j[k].type == 'r' ? "revolute" : j[k].type == 'p' ? "prismatic" : "fixed";
        off += (size_t)snprintf(buf + off, size - off,
                                "%s{\"name\":\"j%zu\",\"type\":\"%s\",\"origin\":{\"xyz\":"
                                "[%.17g,%.17g,%.17g],\"rpy\":[%.17g,%.17g,%.17g]}",
                                k ? "," : "", k, type, j[k].xyz[0], j[k].xyz[1], j[k].xyz[2],
                                j[k].rpy[0], j[k].rpy[1], j[k].rpy[2]);
        if (j[k].type != 'f' && off < size)
            off += (size_t)snprintf(buf + off, size - off,
                                    ",\"axis\":[%.17g,%.17g,%.17g],\"limits\":{\"lower\":%.17g,"
                                    "\"upper\":%.17g}",
                                    j[k].axis[0], j[k].axis[1], j[k].axis[2], lim[2 * k], lim[2 * k + 1]);
        if (off < size)
            off += (size_t)snprintf(buf + off, size - off, "}");
    }
    if (off < size)
        snprintf(buf + off, size - off, "]}");
}

/* A stream session on the chain object chain (JSON text), with options
 * (JSON text) or none. */
static inline proto_session *pc_session_on(const char *chain, const char *options)
{
    proto_error e;
    proto_chain *c = proto_chain_decode(chain, strlen(chain), NULL, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    json_t *opt = options ? json_loads(options, 0, NULL) : NULL;
    proto_session *s = NULL;
    ck_assert_int_eq(proto_session_open(c, opt, NULL, NULL, &s, &e), 0);
    json_decref(opt);
    proto_chain_unref(c);
    return s;
}

#endif /* PROTO_CHECK_H */

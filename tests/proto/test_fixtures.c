/*
 * test_fixtures.c: the golden fixtures of the wire format (tests/fixtures/)
 * and the documents that show them (proto/README.md, proto/openapi.yaml,
 * proto/STREAM.md).
 *
 * tests/fixtures/INDEX lists one HTTP exchange per line: a request file, the
 * method and path it is sent to, the expected status and response file, and
 * any daemon limit that differs from the default. For every line this test
 *   - runs the request through the path the daemon and "ikd solve" use
 *     (proto_job_decode -> proto_job_run -> proto_job_encode; for POST
 *     /v1/chains proto_chain_decode -> proto_chain_describe without the
 *     chain's own document, as the daemon answers; for GET
 *     /v1/solvers proto_solvers_describe), with "chain_id" resolved against
 *     the chains the POST /v1/chains lines register;
 *   - compares the answer with the response file: the same members, strings
 *     and integers exactly, numbers within 1e-6 (relative for magnitudes
 *     above 1, absolute below). Three members are only required to be
 *     present: "time_ms" (wall-clock time), "iterations" and "restarts" (how
 *     hard a solver worked, not what it answered). "memory_bytes" is exact:
 *     it follows struct sizes, so that a change of what a chain or scene
 *     holds shows here and in the documents that show it. Rejections are
 *     compared the same way, which makes code, message, path and HTTP
 *     status exact;
 *   - checks every answer independently of the solver: forward kinematics
 *     computed here (planar angles summed, the test's own joint-list FK of
 *     proto_check.h in the caller's frame and units, ik_chain_fk on a chain
 *     read from the URDF, ik_skeleton_globals on the answered local
 *     rotations), bone lengths kept, the root fixed, the bone rotation rules
 *     of proto_solver.c, joint limits, and the end effector on the target
 *     whenever the answer says "success". A test perturbs answers to show
 *     that these checks do fail.
 * The response files were first written by "ikd solve" and the daemon; these
 * checks are what makes them more than the program's own earlier output.
 *
 * The documents: every block of proto/README.md marked
 * "<!-- fixture: tests/fixtures/FILE -->" must equal FILE byte for byte;
 * every example of proto/openapi.yaml names its fixture ("x-fixture: FILE")
 * and holds it as one line of JSON ("value: {...}") that must equal the file
 * and decode with the outcome INDEX gives; every request and response of
 * INDEX appears in openapi.yaml. Blocks of proto/STREAM.md marked
 * "<!-- check: client -->" must decode with proto_stream_decode() (and their
 * chains and targets with proto.h), blocks marked "<!-- check: server -->"
 * must be JSON messages of a type ikd sends, and the two-bone answers among
 * them must keep the knee on one side (no flip after an unreachable
 * target). A tick's answer must be the one proto/ gives for the tick before
 * it: each target solved by its stream's session (warm-started as the
 * daemon does) and written by the tick encoders, an error in the same
 * place with the same code and path. proto/README.md's error table has
 * exactly the codes of PROTO_ERROR_MAP, and README.md's error list (in "The
 * API at a glance") names each under its HTTP status.
 *
 * Files are found relative to the repository root, where tests/run.sh runs
 * every test.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_json.h"
#include "proto/proto_session.h"
#include "proto/proto_scene.h"
#include "proto/proto_stream.h"
#include "tests/proto/urdf_read.h"
#include "solver/ik_chain.h"
#include "solver/ik_math.h"
#include "solver/ik_skeleton.h"
#include "tests/solver/storage.h"
#include "tests/proto/proto_check.h"

#define FIXTURES     "tests/fixtures/"
#define MAX_FIXTURES 128

/* ---- the index -------------------------------------------------------- */

typedef struct fixture {
    char name[64];
    char method[8];
    char path[64];
    int status;
    proto_limits lim;
} fixture;

static fixture fx[MAX_FIXTURES];
static size_t nfx;

static void load_index(void)
{
    FILE *f = fopen(FIXTURES "INDEX", "r");
    if (!f) {
        fprintf(stderr, "cannot open " FIXTURES "INDEX (run from the repository root)\n");
        exit(2);
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *tok[8];
        size_t n = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 8;
             t = strtok_r(NULL, " \t\r\n", &save))
            tok[n++] = t;
        if (n == 0 || tok[0][0] == '#')
            continue;
        if (n < 4 || nfx == MAX_FIXTURES) {
            fprintf(stderr, "INDEX: bad line for %s\n", tok[0]);
            exit(2);
        }
        fixture *x = &fx[nfx++];
        snprintf(x->name, sizeof x->name, "%s", tok[0]);
        snprintf(x->method, sizeof x->method, "%s", tok[1]);
        snprintf(x->path, sizeof x->path, "%s", tok[2]);
        x->status = atoi(tok[3]);
        proto_limits_default(&x->lim);
        for (size_t i = 4; i < n; i++) {
            unsigned long v;
            if (sscanf(tok[i], "max_targets=%lu", &v) == 1)
                x->lim.max_targets = v;
            else if (sscanf(tok[i], "max_joints=%lu", &v) == 1)
                x->lim.max_joints = v;
            else if (sscanf(tok[i], "max_body_bytes=%lu", &v) == 1)
                x->lim.max_body_bytes = v;
            else {
                fprintf(stderr, "INDEX: unknown limit %s\n", tok[i]);
                exit(2);
            }
        }
    }
    fclose(f);
}

static const fixture *find_fixture(const char *name)
{
    for (size_t i = 0; i < nfx; i++)
        if (strcmp(fx[i].name, name) == 0)
            return &fx[i];
    return NULL;
}

static bool has_request(const fixture *x)
{
    return strcmp(x->method, "GET") != 0;
}

static char *fixture_text(const char *name, const char *suffix, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, FIXTURES "%s.%s.json", name, suffix);
    char *s = pc_read_file(path, len);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

static json_t *fixture_json(const char *name, const char *suffix)
{
    size_t len;
    char *s = fixture_text(name, suffix, &len);
    json_error_t je;
    json_t *v = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(v != NULL, "%s.%s.json: %s", name, suffix, je.text);
    free(s);
    return v;
}

/* ---- the registry of POST /v1/chains fixtures --------------------------- */

/* The chain object registered with this id (new reference), or NULL. */
static json_t *registered_chain_json(const char *id)
{
    for (size_t i = 0; i < nfx; i++) {
        if (strcmp(fx[i].path, "/v1/chains") != 0 || fx[i].status >= 300)
            continue;
        json_t *c = fixture_json(fx[i].name, "request");
        proto_error e;
        proto_chain *pc = proto_chain_decode_json(c, "", &fx[i].lim, &e);
        bool match = pc && strcmp(proto_chain_id(pc), id) == 0;
        proto_chain_unref(pc);
        if (match)
            return c;
        json_decref(c);
    }
    return NULL;
}

/* The scene registered by a POST /v1/scenes fixture with this id (new
 * reference), or NULL. */
static proto_scene *registered_scene(const char *id)
{
    for (size_t i = 0; i < nfx; i++) {
        if (strcmp(fx[i].path, "/v1/scenes") != 0 || fx[i].status >= 300)
            continue;
        size_t len;
        char *body = fixture_text(fx[i].name, "request", &len);
        proto_error e;
        proto_scene *s = proto_scene_decode(body, len, &fx[i].lim, &e);
        free(body);
        if (s && strcmp(s->id, id) == 0)
            return s;
        proto_scene_free(s);
    }
    return NULL;
}

static void *lookup(void *ud, proto_reg_kind kind, const char *id)
{
    if (kind == PROTO_REG_SCENE)
        return registered_scene(id);
    (void)ud;
    json_t *c = registered_chain_json(id);
    if (!c)
        return NULL;
    proto_error e;
    proto_chain *pc = proto_chain_decode_json(c, "", NULL, &e);
    json_decref(c);
    return pc;
}

/* ---- running one exchange ------------------------------------------------ */

static json_t *error_json(const proto_error *e)
{
    char buf[1024];
    proto_error_format(e, buf, sizeof buf);
    json_error_t je;
    json_t *v = json_loads(buf, 0, &je);
    ck_assert_msg(v != NULL, "error body is not JSON: %s", buf);
    return v;
}

/* The answer ikd gives to fixture x, from a body of len bytes: *status and a
 * new reference. */
static json_t *exchange(const fixture *x, const char *body, size_t len, int *status)
{
    proto_error e;
    proto_error_clear(&e);
    if (strcmp(x->path, "/v1/solvers") == 0) {
        *status = 200;
        return proto_solvers_describe(&x->lim);
    }
    if (strcmp(x->path, "/v1/chains") == 0) {
        proto_chain *c = proto_chain_decode(body, len, &x->lim, &e);
        if (!c) {
            *status = pc_http_status(e.code);
            return error_json(&e);
        }
        json_t *d = proto_chain_describe(c);
        json_object_set_new(d, "id", json_string(proto_chain_id(c)));
        /* the daemon's answer leaves the chain's document out (the
         * description only; ?include=source adds it, server/http_chains.c) */
        json_object_del(d, "chain");
        proto_chain_unref(c);
        *status = 201;
        return d;
    }
    if (strcmp(x->path, "/v1/scenes") == 0) {
        proto_scene *sc = proto_scene_decode(body, len, &x->lim, &e);
        if (!sc) {
            *status = pc_http_status(e.code);
            return error_json(&e);
        }
        json_t *d = proto_scene_describe(sc, false);
        proto_scene_free(sc);
        *status = 201;
        return d;
    }
    proto_kind kind = strcmp(x->path, "/v1/solve/batch") == 0 ? PROTO_BATCH : PROTO_SOLVE;
    ck_assert_msg(kind == PROTO_BATCH || strcmp(x->path, "/v1/solve") == 0, "%s: endpoint %s",
                  x->name, x->path);
    proto_job *job = NULL;
    if (proto_job_decode(body, len, kind, &x->lim, lookup, NULL, &job, &e)) {
        *status = pc_http_status(e.code);
        return error_json(&e);
    }
    proto_job_run(job, 0, proto_job_count(job));
    size_t n;
    char *s = proto_job_encode(job, &n);
    proto_job_free(job);
    ck_assert_ptr_nonnull(s);
    json_error_t je;
    json_t *v = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    ck_assert_msg(v != NULL, "response is not JSON: %s", je.text);
    free(s);
    *status = 200;
    return v;
}

static json_t *run_fixture(const fixture *x, int *status)
{
    size_t len = 0;
    char *body = has_request(x) ? fixture_text(x->name, "request", &len) : NULL;
    json_t *v = exchange(x, body, len, status);
    free(body);
    return v;
}

/* ---- comparing answers --------------------------------------------------- */

static const char *const effort_keys[] = {"time_ms", "iterations", "restarts", NULL};

static bool is_effort(const char *key)
{
    for (size_t i = 0; effort_keys[i]; i++)
        if (strcmp(key, effort_keys[i]) == 0)
            return true;
    return false;
}

static bool close_enough(double a, double b)
{
    double scale = fmax(1.0, fmax(fabs(a), fabs(b)));
    return fabs(a - b) <= 1e-6 * scale;
}

/* 0 when actual matches expected; otherwise a description in why. */
static int compare(const json_t *want, const json_t *act, const char *path, char *why, size_t size)
{
    if (json_is_number(want) && json_is_number(act)) {
        if (json_is_integer(want) && json_is_integer(act)) {
            if (json_integer_value(want) == json_integer_value(act))
                return 0;
        } else if (close_enough(json_number_value(want), json_number_value(act))) {
            return 0;
        }
        snprintf(why, size, "%s: expected %.17g, got %.17g", path, json_number_value(want),
                 json_number_value(act));
        return -1;
    }
    if (json_typeof(want) != json_typeof(act)) {
        snprintf(why, size, "%s: expected a value of JSON type %d, got %d", path,
                 (int)json_typeof(want), (int)json_typeof(act));
        return -1;
    }
    char p[PROTO_PATH_MAX];
    switch (json_typeof(want)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)act, k, v)
        {
            if (!json_object_get(want, k)) {
                snprintf(why, size, "%s: unexpected member \"%s\"", path, k);
                return -1;
            }
        }
        json_object_foreach((json_t *)want, k, v)
        {
            json_t *a = json_object_get(act, k);
            snprintf(p, sizeof p, "%s/%s", path, k);
            if (!a) {
                snprintf(why, size, "%s: missing", p);
                return -1;
            }
            if (is_effort(k)) {
                if (!json_is_number(a) || json_number_value(a) < 0) {
                    snprintf(why, size, "%s: not a number >= 0", p);
                    return -1;
                }
                continue;
            }
            if (compare(v, a, p, why, size))
                return -1;
        }
        return 0;
    }
    case JSON_ARRAY:
        if (json_array_size(want) != json_array_size(act)) {
            snprintf(why, size, "%s: expected %zu elements, got %zu", path, json_array_size(want),
                     json_array_size(act));
            return -1;
        }
        for (size_t i = 0; i < json_array_size(want); i++) {
            snprintf(p, sizeof p, "%s/%zu", path, i);
            if (compare(json_array_get(want, i), json_array_get(act, i), p, why, size))
                return -1;
        }
        return 0;
    case JSON_STRING:
        if (strcmp(json_string_value(want), json_string_value(act)) == 0)
            return 0;
        snprintf(why, size, "%s: expected \"%s\", got \"%s\"", path, json_string_value(want),
                 json_string_value(act));
        return -1;
    default: /* true, false, null */
        return 0;
    }
}

/* ---- independent checks of an answer -------------------------------------- */

typedef struct answer {
    const json_t *chain;   /* the chain object */
    const json_t *options; /* may be NULL */
    const json_t *target;
    const json_t *top;    /* the whole response (solver, units, frame) */
    const json_t *result; /* one result (the response itself for a solve) */
    const json_t *seed;   /* its seed, or NULL */
} answer;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, size, __VA_ARGS__);                                                          \
        return -1;                                                                                 \
    } while (0)

static const char *str_of(const json_t *o, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : def;
}

static double num_of(const json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

static bool degrees(const json_t *o)
{
    return strcmp(str_of(o, "units", "radians"), "degrees") == 0;
}

static double near(ik_vec3 a, ik_vec3 b)
{
    return ik_vec3_dist(a, b);
}

static bool same_rotation(ik_quat a, ik_quat b, double tol)
{
    return 1.0 - fabs(ik_quat_dot(ik_quat_normalize(a), ik_quat_normalize(b))) <= tol;
}

/* Largest component of the rotation vector taking the rotation matrix A to
 * B (both row-major), from the skew part of A^T B (accurate for small
 * angles). */
static double rot_err(const double A[9], const double B[9])
{
    double E[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            E[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
    double v[3] = {0.5 * (E[7] - E[5]), 0.5 * (E[2] - E[6]), 0.5 * (E[3] - E[1])};
    double tr = E[0] + E[4] + E[8];
    double m = fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2])));
    return tr < 1.0 ? INFINITY : m; /* more than 90 degrees off: reject */
}

/* The target's orientation as a row-major matrix, or false when it has
 * none. */
static bool target_rotation(const json_t *t, double R[9])
{
    json_t *q = json_object_get(t, "orientation"), *r = json_object_get(t, "rotation");
    if (q) {
        ik_quat_to_mat3(ik_quat_normalize(pc_quat(q)), R);
        return true;
    }
    if (r) {
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 3; j++)
                R[3 * i + j] = json_number_value(json_array_get(json_array_get(r, i), j));
        return true;
    }
    return false;
}

/* Position tolerance per component that "success" promises. */
static double numeric_tol(const answer *a)
{
    return num_of(a->options, "tolerance", 1e-5) * (1 + 1e-9) + 1e-12;
}

static double angular_tol(const answer *a)
{
    double t = num_of(a->options, "angular_tolerance", -1);
    if (t < 0)
        return 1e-5 * (1 + 1e-9) + 1e-12;
    return (degrees(a->options) ? t * IK_PI / 180 : t) * (1 + 1e-9) + 1e-12;
}

static bool success(const answer *a)
{
    return strcmp(str_of(a->result, "status", ""), "success") == 0;
}

static int check_planar(const answer *a, char *why, size_t size)
{
    const json_t *L = json_object_get(a->chain, "lengths");
    const json_t *q = json_object_get(a->result, "joints");
    const json_t *pos = json_object_get(a->result, "positions");
    size_t n = json_array_size(L);
    if (json_array_size(q) != n || json_array_size(pos) != n + 1)
        FAIL("planar: %zu joints and %zu positions for %zu links", json_array_size(q),
             json_array_size(pos), n);
    ik_vec3 p = ik_v3(0, 0, 0);
    if (json_object_get(a->chain, "base"))
        p = pc_vec(json_object_get(a->chain, "base"));
    double ang = 0;
    for (size_t k = 0; k <= n; k++) {
        ik_vec3 got = pc_vec(json_array_get(pos, k));
        if (near(got, p) > 1e-9)
            FAIL("planar: position %zu is (%g, %g), forward kinematics gives (%g, %g)", k, got.x,
                 got.y, p.x, p.y);
        if (k == n)
            break;
        double qk = json_number_value(json_array_get(q, k));
        ang += degrees(a->options) ? qk * IK_PI / 180 : qk;
        double l = json_number_value(json_array_get(L, k));
        p = ik_vec3_add(p, ik_v3(l * cos(ang), l * sin(ang), 0));
    }
    if (!success(a))
        return 0;
    ik_vec3 t = pc_vec(json_object_get(a->target, "position"));
    bool numeric = strcmp(str_of(a->top, "solver", ""), "numeric") == 0;
    double tol = numeric ? numeric_tol(a) : 1e-9;
    if (fabs(p.x - t.x) > tol || fabs(p.y - t.y) > tol)
        FAIL("planar: the end is at (%.12g, %.12g), the target at (%.12g, %.12g)", p.x, p.y, t.x,
             t.y);
    json_t *up = json_object_get(a->target, "up");
    if (up) {
        ik_vec3 u = ik_vec3_normalize(pc_vec(up));
        if (near(u, ik_v3(cos(ang), sin(ang), 0)) > 1e-9)
            FAIL("planar: the last link points at angle %g, not along up", ang);
    }
    return 0;
}

static int check_links3d(const answer *a, char *why, size_t size)
{
    const json_t *L = json_object_get(a->chain, "lengths");
    const json_t *pos = json_object_get(a->result, "positions");
    if (json_array_size(json_object_get(a->result, "joints")) != 5 || json_array_size(pos) != 4)
        FAIL("links3d: expected 5 joint values and 4 positions");
    ik_vec3 o = ik_v3(0, 0, 0);
    json_t *og = json_object_get(a->chain, "origin");
    if (og && json_object_get(og, "position"))
        o = pc_vec(json_object_get(og, "position"));
    ik_vec3 p[4];
    for (size_t k = 0; k < 4; k++)
        p[k] = pc_vec(json_array_get(pos, k));
    if (near(p[0], o) > 1e-9)
        FAIL("links3d: the base moved");
    for (size_t k = 0; k < 3; k++) {
        double l = json_number_value(json_array_get(L, k));
        if (fabs(near(p[k + 1], p[k]) - l) > 1e-9)
            FAIL("links3d: link %zu has length %.12g, not %g", k, near(p[k + 1], p[k]), l);
    }
    if (!success(a))
        return 0;
    ik_vec3 t = pc_vec(json_object_get(a->target, "position"));
    if (near(p[3], t) > 1e-9)
        FAIL("links3d: the end is %g away from the target", near(p[3], t));
    ik_vec3 u = ik_vec3_normalize(pc_vec(json_object_get(a->target, "up")));
    double l3 = json_number_value(json_array_get(L, 2));
    if (near(ik_vec3_scale(ik_vec3_sub(p[3], p[2]), 1 / l3), u) > 1e-9)
        FAIL("links3d: the last link does not point along up");
    return 0;
}

static int check_bones(const answer *a, char *why, size_t size)
{
    const json_t *cp = json_object_get(a->chain, "positions");
    const json_t *cr = json_object_get(a->chain, "rotations");
    const json_t *pos = json_object_get(a->result, "positions");
    const json_t *rot = json_object_get(a->result, "rotations");
    const json_t *loc = json_object_get(a->result, "local_rotations");
    size_t n = json_array_size(cp);
    if (json_array_size(pos) != n || json_array_size(rot) != n || json_array_size(loc) != n)
        FAIL("bones: expected %zu positions, rotations and local rotations", n);
    double total = 0;
    for (size_t k = 0; k < n; k++) {
        ik_vec3 p = pc_vec(json_array_get(pos, k)), c = pc_vec(json_array_get(cp, k));
        if (k == 0 && near(p, c) > 1e-12)
            FAIL("bones: the root moved");
        if (k == 0)
            continue;
        ik_vec3 pp = pc_vec(json_array_get(pos, k - 1)), cc = pc_vec(json_array_get(cp, k - 1));
        double lc = near(c, cc), lp = near(p, pp);
        total += lc;
        if (fabs(lc - lp) > 1e-9)
            FAIL("bones: bone %zu has length %.12g instead of %.12g", k - 1, lp, lc);
        /* the bone's world rotation turned by the minimal rotation from its
         * old direction to its new one */
        ik_quat r0 = cr ? pc_quat(json_array_get(cr, k - 1)) : ik_quat_identity();
        ik_quat r1 = pc_quat(json_array_get(rot, k - 1));
        ik_quat turn = ik_quat_mul(r1, ik_quat_conj(r0));
        ik_vec3 d = ik_quat_rotate(turn, ik_vec3_scale(ik_vec3_sub(c, cc), 1 / lc));
        if (near(d, ik_vec3_scale(ik_vec3_sub(p, pp), 1 / lp)) > 1e-9)
            FAIL("bones: rotation %zu does not turn bone %zu onto its new direction", k - 1, k - 1);
    }
    /* the end joint turns with the last bone; local = parent^-1 * world */
    ik_quat rl0 = cr ? pc_quat(json_array_get(cr, n - 2)) : ik_quat_identity();
    ik_quat re0 = cr ? pc_quat(json_array_get(cr, n - 1)) : ik_quat_identity();
    ik_quat turn = ik_quat_mul(pc_quat(json_array_get(rot, n - 2)), ik_quat_conj(rl0));
    if (!same_rotation(ik_quat_mul(turn, re0), pc_quat(json_array_get(rot, n - 1)), 1e-12))
        FAIL("bones: the end joint does not turn with the last bone");
    for (size_t k = 0; k < n; k++) {
        ik_quat w = pc_quat(json_array_get(rot, k));
        ik_quat l = k ? ik_quat_mul(ik_quat_conj(pc_quat(json_array_get(rot, k - 1))), w) : w;
        if (!same_rotation(l, pc_quat(json_array_get(loc, k)), 1e-12))
            FAIL("bones: local rotation %zu is not parent^-1 * world", k);
    }
    ik_vec3 t = pc_vec(json_object_get(a->target, "position"));
    ik_vec3 end = pc_vec(json_array_get(pos, n - 1)), root = pc_vec(json_array_get(pos, 0));
    if (fabs(num_of(a->result, "position_error", -1) - near(end, t)) > 1e-9)
        FAIL("bones: position_error is not the distance from the end to the target");
    if (success(a)) {
        const char *solver = str_of(a->top, "solver", "");
        double tol =
            strcmp(solver, "two_bone") == 0 ? 1e-9 : num_of(a->options, "tolerance", 1e-4 * total);
        if (near(end, t) > tol * (1 + 1e-9))
            FAIL("bones: the end is %g away from the target", near(end, t));
    } else if (strcmp(str_of(a->result, "reason", ""), "unreachable") == 0 && n == 3) {
        /* too far: fully extended towards the target */
        if (fabs(near(end, root) - total) > 1e-9)
            FAIL("bones: unreachable answer is not fully extended");
        ik_vec3 u = ik_vec3_normalize(ik_vec3_sub(t, root));
        if (near(ik_vec3_scale(ik_vec3_sub(end, root), 1 / total), u) > 1e-9)
            FAIL("bones: unreachable answer does not point at the target");
    }
    return 0;
}

static int bone_index(const json_t *bones, const char *name)
{
    for (size_t i = 0; i < json_array_size(bones); i++)
        if (strcmp(str_of(json_array_get(bones, i), "name", ""), name) == 0)
            return (int)i;
    return -1;
}

static int check_skeleton(const answer *a, char *why, size_t size)
{
    const json_t *bones = json_object_get(a->chain, "bones");
    const json_t *rot = json_object_get(a->result, "rotations");
    const json_t *pos = json_object_get(a->result, "positions");
    size_t n = json_array_size(bones);
    if (strcmp(str_of(a->chain, "frame", "ros"), "ros") != 0 ||
        strcmp(str_of(a->options, "frame", "ros"), "ros") != 0)
        FAIL("skeleton: this check reads ros-frame skeletons only");
    if (json_array_size(rot) != n || json_array_size(pos) != 3)
        FAIL("skeleton: expected %zu rotations and 3 positions", n);
    ik_bone b[16];
    ik_mat34 g[16];
    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(bones, i);
        const char *parent = str_of(o, "parent", NULL);
        b[i].parent = parent ? bone_index(bones, parent) : -1;
        b[i].translation = json_object_get(o, "translation")
                               ? pc_vec(json_object_get(o, "translation"))
                               : ik_v3(0, 0, 0);
        b[i].scale =
            json_object_get(o, "scale") ? pc_vec(json_object_get(o, "scale")) : ik_v3(1, 1, 1);
        ik_quat before = json_object_get(o, "rotation") ? pc_quat(json_object_get(o, "rotation"))
                                                        : ik_quat_identity();
        b[i].rotation = pc_quat(json_array_get(rot, i));
        bool limb = false;
        for (size_t k = 0; k < 2; k++)
            limb |= strcmp(json_string_value(json_array_get(json_object_get(a->chain, "limb"), k)),
                           str_of(o, "name", "")) == 0;
        if (!limb && !same_rotation(before, b[i].rotation, 1e-12))
            FAIL("skeleton: bone %zu is not in the limb but was turned", i);
    }
    ck_assert_int_eq(ik_skeleton_globals(b, n, g), 0);
    for (size_t k = 0; k < 3; k++) {
        const char *name = json_string_value(json_array_get(json_object_get(a->chain, "limb"), k));
        int i = bone_index(bones, name);
        ik_vec3 got = pc_vec(json_array_get(pos, k)), fk = ik_mat34_origin(&g[i]);
        if (near(got, fk) > 1e-9)
            FAIL("skeleton: position %zu is not where the rotations put bone %s", k, name);
        if (k == 2 && success(a) && near(fk, pc_vec(json_object_get(a->target, "position"))) > 1e-9)
            FAIL("skeleton: the answered rotations put %s %g away from the target", name,
                 near(fk, pc_vec(json_object_get(a->target, "position"))));
    }
    return 0;
}

/* Tip pose check shared by joints and urdf chains: p and R in the caller's
 * frame. */
static int check_tip(const answer *a, ik_vec3 p, const double R[9], char *why, size_t size)
{
    const json_t *tip = json_object_get(a->result, "tip");
    if (!tip || near(pc_vec(json_object_get(tip, "position")), p) > 1e-9)
        FAIL("the answered tip is not where forward kinematics puts it");
    double Rt[9];
    ik_quat_to_mat3(pc_quat(json_object_get(tip, "orientation")), Rt);
    if (rot_err(R, Rt) > 1e-9)
        FAIL("the answered tip orientation is not the forward kinematics one");
    if (!success(a))
        return 0;
    ik_vec3 t = pc_vec(json_object_get(a->target, "position"));
    double tol = numeric_tol(a);
    if (fabs(p.x - t.x) > tol || fabs(p.y - t.y) > tol || fabs(p.z - t.z) > tol)
        FAIL("forward kinematics puts the tip at (%.12g, %.12g, %.12g), the target is "
             "(%.12g, %.12g, %.12g)",
             p.x, p.y, p.z, t.x, t.y, t.z);
    double Rg[9];
    if (target_rotation(a->target, Rg) && rot_err(Rg, R) > angular_tol(a))
        FAIL("forward kinematics turns the tip %g away from the target orientation",
             rot_err(Rg, R));
    return 0;
}

static int check_joints(const answer *a, char *why, size_t size)
{
    const json_t *js = json_object_get(a->chain, "joints");
    const json_t *q = json_object_get(a->result, "joints");
    pc_joint pj[64];
    double qr[64], lo[64], hi[64];
    size_t n = json_array_size(js), dof = 0;
    ck_assert_uint_le(n, 64);
    double cu = degrees(a->chain) ? IK_PI / 180 : 1, ou = degrees(a->options) ? IK_PI / 180 : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_array_get(js, i), *o = json_object_get(j, "origin");
        const char *type = str_of(j, "type", "");
        memset(&pj[i], 0, sizeof pj[i]);
        pj[i].axis[0] = 1;
        for (int k = 0; k < 3; k++) {
            if (o && json_object_get(o, "xyz"))
                pj[i].xyz[k] = json_number_value(json_array_get(json_object_get(o, "xyz"), k));
            if (o && json_object_get(o, "rpy"))
                pj[i].rpy[k] = cu * json_number_value(json_array_get(json_object_get(o, "rpy"), k));
            if (json_object_get(j, "axis"))
                pj[i].axis[k] = json_number_value(json_array_get(json_object_get(j, "axis"), k));
        }
        bool prismatic = strcmp(type, "prismatic") == 0;
        pj[i].type = strcmp(type, "fixed") == 0 ? 'f' : prismatic ? 'p' : 'r';
        if (pj[i].type == 'f')
            continue;
        if (dof >= json_array_size(q))
            FAIL("joints: fewer joint values than movable joints");
        const json_t *lim = json_object_get(j, "limits");
        double s = prismatic ? 1 : cu;
        lo[dof] = lim ? s * num_of(lim, "lower", 0) : -INFINITY;
        hi[dof] = lim ? s * num_of(lim, "upper", 0) : INFINITY;
        qr[dof] = (prismatic ? 1 : ou) * json_number_value(json_array_get(q, dof));
        if (qr[dof] < lo[dof] - 1e-9 || qr[dof] > hi[dof] + 1e-9)
            FAIL("joints: joint value %zu is outside its limits", dof);
        dof++;
    }
    if (dof != json_array_size(q))
        FAIL("joints: %zu joint values for %zu movable joints", json_array_size(q), dof);
    double R[9];
    ik_vec3 p = pc_fk(pj, n, qr, R);
    return check_tip(a, p, R, why, size);
}

static int check_urdf(const answer *a, char *why, size_t size)
{
    const char *xml = str_of(a->chain, "urdf", "");
    proto_error e;
    ik_chain *cp = proto_urdf_load_chain(xml, strlen(xml), str_of(a->chain, "base", ""),
                                         str_of(a->chain, "tip", ""), 1024, NULL, &e);
    if (!cp)
        FAIL("urdf: %s", e.message);
    test_adopt(cp); /* FAIL returns at once: freed when the test ends */
    ik_chain c = *cp;
    const size_t dof = c.dof;
    if (strcmp(str_of(a->options, "frame", "ros"), "ros") != 0)
        FAIL("urdf: this check reads ros-frame answers only");
    const json_t *q = json_object_get(a->result, "joints");
    if (json_array_size(q) != dof)
        FAIL("urdf: %zu joint values for %zu movable joints", json_array_size(q), dof);
    double qr[TEST_DOF_CAP];
    for (size_t i = 0; i < dof; i++)
        qr[i] = (c.type[i] == IK_JOINT_PRISMATIC || !degrees(a->options) ? 1 : IK_PI / 180) *
                json_number_value(json_array_get(q, i));
    if (!ik_chain_within_limits(&c, qr, 1e-9))
        FAIL("urdf: the joint values leave the limits");
    ik_xform fr[TEST_DOF_CAP + 1];
    ik_chain_frames(&c, qr, fr);
    const json_t *pos = json_object_get(a->result, "positions");
    if (json_array_size(pos) != dof + 1)
        FAIL("urdf: expected %zu positions", dof + 1);
    for (size_t k = 0; k <= dof; k++)
        if (near(pc_vec(json_array_get(pos, k)), fr[k].p) > 1e-9)
            FAIL("urdf: position %zu is not where joint %zu is", k, k);
    ik_xform x = ik_chain_fk(&c, qr);
    if (near(x.p, fr[dof].p) > 1e-12)
        FAIL("urdf: ik_chain_fk and ik_chain_frames disagree");
    double R[9];
    ik_quat_to_mat3(x.q, R);
    return check_tip(a, x.p, R, why, size);
}

/* A joint object of a joint list, read here (ROS frame, radians). */
static ik_joint json_joint(const json_t *o)
{
    ik_joint j;
    memset(&j, 0, sizeof j);
    const char *type = str_of(o, "type", "");
    j.type = strcmp(type, "revolute") == 0     ? IK_JOINT_REVOLUTE
             : strcmp(type, "continuous") == 0 ? IK_JOINT_CONTINUOUS
             : strcmp(type, "prismatic") == 0  ? IK_JOINT_PRISMATIC
                                               : IK_JOINT_FIXED;
    const json_t *og = json_object_get(o, "origin");
    ik_vec3 rpy = ik_v3(0, 0, 0);
    j.origin = ik_xform_identity();
    if (og && json_object_get(og, "xyz"))
        j.origin.p = pc_vec(json_object_get(og, "xyz"));
    if (og && json_object_get(og, "rpy"))
        rpy = pc_vec(json_object_get(og, "rpy"));
    j.origin.q = ik_quat_from_rpy(rpy.x, rpy.y, rpy.z);
    j.axis = json_object_get(o, "axis") ? pc_vec(json_object_get(o, "axis")) : ik_v3(1, 0, 0);
    const json_t *lim = json_object_get(o, "limits");
    j.lower = lim ? num_of(lim, "lower", 0) : -INFINITY;
    j.upper = lim ? num_of(lim, "upper", 0) : INFINITY;
    return j;
}

/* Tree chains: each tip's pose composed here from its path (read from the
 * URDF with proto_urdf_chain, or followed up the joint list's parents),
 * the answered joints matched by name; limits, the answered tip poses,
 * and every tip answered success on its target. */
static int check_tree(const answer *a, char *why, size_t size)
{
    if (strcmp(str_of(a->options, "frame", "ros"), "ros") != 0 || degrees(a->options) ||
        strcmp(str_of(a->chain, "frame", "ros"), "ros") != 0 || degrees(a->chain))
        FAIL("tree: this check reads ros-frame, radian answers only");
    const json_t *names = json_object_get(a->top, "joint_names");
    const json_t *q = json_object_get(a->result, "joints");
    const json_t *tips = json_object_get(a->result, "tips");
    const json_t *tnames = json_object_get(a->chain, "tips");
    if (json_array_size(q) != json_array_size(names))
        FAIL("tree: %zu joint values for %zu names", json_array_size(q), json_array_size(names));
    if (json_array_size(tips) != json_array_size(tnames))
        FAIL("tree: %zu tips answered for %zu", json_array_size(tips), json_array_size(tnames));
    bool all = true;
    for (size_t k = 0; k < json_array_size(tnames); k++) {
        const char *tn = json_string_value(json_array_get(tnames, k));
        ik_joint path[64];
        char pn[64][PROTO_URDF_NAME_MAX];
        size_t n = 0;
        if (json_object_get(a->chain, "urdf")) {
            const char *xml = str_of(a->chain, "urdf", "");
            proto_error e;
            if (proto_urdf_chain(xml, strlen(xml), str_of(a->chain, "base", ""), tn, path, 64, &n,
                                 pn, &e))
                FAIL("tree: %s", e.message);
        } else {
            const json_t *js = json_object_get(a->chain, "joints");
            const char *cur = tn;
            ik_joint rev[64];
            char rn[64][PROTO_URDF_NAME_MAX];
            while (cur) {
                const json_t *o = NULL;
                for (size_t i = 0; i < json_array_size(js) && !o; i++)
                    if (strcmp(str_of(json_array_get(js, i), "name", ""), cur) == 0)
                        o = json_array_get(js, i);
                if (!o || n == 64)
                    FAIL("tree: no joint %s", cur);
                rev[n] = json_joint(o);
                snprintf(rn[n], sizeof rn[n], "%s", cur);
                n++;
                cur = str_of(o, "parent", NULL);
            }
            for (size_t i = 0; i < n; i++) {
                path[i] = rev[n - 1 - i];
                memcpy(pn[i], rn[n - 1 - i], sizeof pn[i]);
            }
        }
        ik_xform x = ik_xform_identity();
        for (size_t i = 0; i < n; i++) {
            x = ik_xform_mul(x, path[i].origin);
            if (path[i].type == IK_JOINT_FIXED)
                continue;
            double v = NAN;
            for (size_t m = 0; m < json_array_size(names); m++)
                if (strcmp(json_string_value(json_array_get(names, m)), pn[i]) == 0)
                    v = json_number_value(json_array_get(q, m));
            if (isnan(v))
                FAIL("tree: no value for joint %s", pn[i]);
            if (path[i].type != IK_JOINT_CONTINUOUS &&
                (v < path[i].lower - 1e-9 || v > path[i].upper + 1e-9))
                FAIL("tree: joint %s is outside its limits", pn[i]);
            ik_xform mo = ik_xform_identity();
            if (path[i].type == IK_JOINT_PRISMATIC)
                mo.p = ik_vec3_scale(ik_vec3_normalize(path[i].axis), v);
            else
                mo.q = ik_quat_from_axis_angle(path[i].axis, v);
            x = ik_xform_mul(x, mo);
        }
        const json_t *at = json_array_get(tips, k);
        if (near(pc_vec(json_object_get(at, "position")), x.p) > 1e-9 ||
            !same_rotation(pc_quat(json_object_get(at, "orientation")), x.q, 1e-12))
            FAIL("tree: tip %s is not where forward kinematics puts it", tn);
        const char *st = str_of(at, "status", NULL);
        all &= !st || strcmp(st, "success") == 0;
        if (!st || strcmp(st, "success") != 0)
            continue;
        const json_t *g = json_object_get(json_object_get(a->target, "tips"), tn);
        if (!g)
            continue; /* a pose kept: checked against the seed by the solver */
        const json_t *w = json_object_get(g, "weights");
        ik_vec3 t = pc_vec(json_object_get(g, "position"));
        double d[3] = {x.p.x - t.x, x.p.y - t.y, x.p.z - t.z};
        for (int c = 0; c < 3; c++)
            if ((!w || json_number_value(json_array_get(w, (size_t)c)) > 0) &&
                fabs(d[c]) > numeric_tol(a))
                FAIL("tree: tip %s answered success, %g away from its target", tn, fabs(d[c]));
        double Rg[9], R[9];
        ik_quat_to_mat3(x.q, R);
        if (!w && target_rotation(g, Rg) && rot_err(Rg, R) > angular_tol(a))
            FAIL("tree: tip %s answered success, turned %g from its target", tn, rot_err(Rg, R));
    }
    if (success(a) && !all)
        FAIL("tree: success with a tip that is not");
    return 0;
}

/* Trees of bones: every bone's frame composed here, G = G_parent *
 * translation * rotation * scale with the answered local rotations (and
 * the rotation alone, for the tips' poses: the bones above a tip scale
 * uniformly); the answered positions and tip poses those frames, every
 * bone as long as in the chain's pose, the bones off the tips' paths
 * unturned, tips answered success on their targets and tips kept (no
 * target, keep pose) where the start put them. */
#define MAX_BONES 64

typedef struct bone_frames {
    double M[MAX_BONES][12]; /* row-major 3x4 */
    ik_quat Q[MAX_BONES];    /* the rotation alone */
} bone_frames;

static void bones_fk(const json_t *bones, const json_t *rot, bone_frames *f)
{
    for (size_t i = 0; i < json_array_size(bones); i++) {
        const json_t *o = json_array_get(bones, i);
        const char *parent = str_of(o, "parent", NULL);
        int p = parent ? bone_index(bones, parent) : -1;
        ik_vec3 t = json_object_get(o, "translation") ? pc_vec(json_object_get(o, "translation"))
                                                      : ik_v3(0, 0, 0);
        ik_vec3 sc =
            json_object_get(o, "scale") ? pc_vec(json_object_get(o, "scale")) : ik_v3(1, 1, 1);
        ik_quat q = ik_quat_identity();
        if (rot)
            q = pc_quat(json_array_get(rot, i));
        else if (json_object_get(o, "rotation"))
            q = pc_quat(json_object_get(o, "rotation"));
        q = ik_quat_normalize(q);
        double R[9], L[12];
        ik_quat_to_mat3(q, R);
        const double s3[3] = {sc.x, sc.y, sc.z}, t3[3] = {t.x, t.y, t.z};
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++)
                L[4 * r + c] = R[3 * r + c] * s3[c];
            L[4 * r + 3] = t3[r];
        }
        if (p < 0) {
            memcpy(f->M[i], L, sizeof L);
            f->Q[i] = q;
            continue;
        }
        const double *P = f->M[p];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++)
                f->M[i][4 * r + c] = P[4 * r] * L[c] + P[4 * r + 1] * L[4 + c] +
                                     P[4 * r + 2] * L[8 + c] + (c == 3 ? P[4 * r + 3] : 0.0);
        f->Q[i] = ik_quat_normalize(ik_quat_mul(f->Q[p], q));
    }
}

static ik_vec3 bone_origin(const bone_frames *f, size_t i)
{
    return ik_v3(f->M[i][3], f->M[i][7], f->M[i][11]);
}

static int check_tree_bones(const answer *a, char *why, size_t size)
{
    const json_t *bones = json_object_get(a->chain, "bones");
    const json_t *rot = json_object_get(a->result, "rotations");
    const json_t *pos = json_object_get(a->result, "positions");
    const json_t *tips = json_object_get(a->result, "tips");
    const json_t *tnames = json_object_get(a->chain, "tips");
    const size_t n = json_array_size(bones);
    if (strcmp(str_of(a->chain, "frame", "ros"), "ros") != 0 ||
        strcmp(str_of(a->options, "frame", "ros"), "ros") != 0)
        FAIL("tree of bones: this check reads ros-frame skeletons only");
    ck_assert_uint_le(n, MAX_BONES);
    if (json_array_size(rot) != n || json_array_size(pos) != n)
        FAIL("tree of bones: expected %zu rotations and positions", n);
    if (json_array_size(tips) != json_array_size(tnames))
        FAIL("tree of bones: %zu tips answered for %zu", json_array_size(tips),
             json_array_size(tnames));
    static bone_frames got, chain, start;
    bones_fk(bones, rot, &got);
    bones_fk(bones, NULL, &chain);
    bones_fk(bones, a->seed, &start);
    bool on[MAX_BONES] = {false};
    for (size_t k = 0; k < json_array_size(tnames); k++)
        for (int b = bone_index(bones, json_string_value(json_array_get(tnames, k))); b >= 0;
             b = str_of(json_array_get(bones, (size_t)b), "parent", NULL)
                     ? bone_index(bones, str_of(json_array_get(bones, (size_t)b), "parent", ""))
                     : -1)
            on[b] = true;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(bones, i);
        if (near(pc_vec(json_array_get(pos, i)), bone_origin(&got, i)) > 1e-9)
            FAIL("tree of bones: position %zu is not where the rotations put bone %s", i,
                 str_of(o, "name", ""));
        const char *parent = str_of(o, "parent", NULL);
        if (parent) {
            int p = bone_index(bones, parent);
            double want = near(bone_origin(&chain, i), bone_origin(&chain, (size_t)p));
            double have = near(bone_origin(&got, i), bone_origin(&got, (size_t)p));
            if (fabs(want - have) > 1e-9 * (1 + want))
                FAIL("tree of bones: bone %s is %.12g long, %.12g in the chain",
                     str_of(o, "name", ""), have, want);
        }
        ik_quat before = ik_quat_identity();
        if (a->seed)
            before = pc_quat(json_array_get(a->seed, i));
        else if (json_object_get(o, "rotation"))
            before = pc_quat(json_object_get(o, "rotation"));
        if (!on[i] && !same_rotation(before, pc_quat(json_array_get(rot, i)), 1e-12))
            FAIL("tree of bones: bone %s is on no tip's path but was turned",
                 str_of(o, "name", ""));
    }
    const bool keep_pose = strcmp(str_of(a->target, "keep", "pose"), "pose") == 0;
    bool all = true;
    for (size_t k = 0; k < json_array_size(tnames); k++) {
        const char *tn = json_string_value(json_array_get(tnames, k));
        const size_t b = (size_t)bone_index(bones, tn);
        const json_t *at = json_array_get(tips, k);
        ik_vec3 p = bone_origin(&got, b);
        if (near(pc_vec(json_object_get(at, "position")), p) > 1e-9 ||
            !same_rotation(pc_quat(json_object_get(at, "orientation")), got.Q[b], 1e-12))
            FAIL("tree of bones: tip %s is not where the rotations put it", tn);
        const char *st = str_of(at, "status", NULL);
        all &= !st || strcmp(st, "success") == 0;
        if (!st || strcmp(st, "success") != 0)
            continue;
        const json_t *g = json_object_get(json_object_get(a->target, "tips"), tn);
        ik_vec3 t = g ? pc_vec(json_object_get(g, "position")) : bone_origin(&start, b);
        double R[9], Rg[9];
        ik_quat_to_mat3(got.Q[b], R);
        bool has_rot = g ? target_rotation(g, Rg) : (ik_quat_to_mat3(start.Q[b], Rg), keep_pose);
        const json_t *w = g ? json_object_get(g, "weights") : NULL;
        double d[3] = {p.x - t.x, p.y - t.y, p.z - t.z};
        for (int c = 0; c < 3; c++)
            if ((!w || json_number_value(json_array_get(w, (size_t)c)) > 0) &&
                fabs(d[c]) > numeric_tol(a))
                FAIL("tree of bones: tip %s answered success, %g away from %s", tn, fabs(d[c]),
                     g ? "its target" : "where it started");
        if (!w && has_rot && rot_err(Rg, R) > angular_tol(a))
            FAIL("tree of bones: tip %s answered success, turned %g from %s", tn, rot_err(Rg, R),
                 g ? "its target" : "where it started");
    }
    if (success(a) && !all)
        FAIL("tree of bones: success with a tip that is not");
    return 0;
}

/* Checks one answer; 0 or -1 with why. */
static int check_answer(const answer *a, char *why, size_t size)
{
    const char *kind = str_of(a->chain, "kind", "");
    if (!json_object_get(a->result, "status"))
        FAIL("no status");
    const char *st = str_of(a->result, "status", "");
    if (strcmp(st, "success") == 0 && num_of(a->result, "code", 0) != 1)
        FAIL("success with MoveIt code %g", num_of(a->result, "code", 0));
    if (strcmp(st, "no_ik_solution") == 0 && num_of(a->result, "code", 0) != -31)
        FAIL("no_ik_solution with MoveIt code %g", num_of(a->result, "code", 0));
    if (strcmp(kind, "planar") == 0)
        return check_planar(a, why, size);
    if (strcmp(kind, "links3d") == 0)
        return check_links3d(a, why, size);
    if (strcmp(kind, "bones") == 0)
        return check_bones(a, why, size);
    if (strcmp(kind, "skeleton") == 0)
        return check_skeleton(a, why, size);
    if (strcmp(kind, "joints") == 0)
        return check_joints(a, why, size);
    if (strcmp(kind, "urdf") == 0)
        return check_urdf(a, why, size);
    if (strcmp(kind, "tree") == 0)
        return json_object_get(a->chain, "bones") ? check_tree_bones(a, why, size)
                                                  : check_tree(a, why, size);
    FAIL("unknown chain kind %s", kind);
}

/* Checks every answer of a response to req; the number of answers checked
 * comes back in *count. */
static int check_response(const json_t *req, const json_t *resp, size_t *count, char *why,
                          size_t size)
{
    json_t *chain = json_object_get(req, "chain");
    json_t *owned = NULL;
    if (!chain)
        chain = owned = registered_chain_json(str_of(req, "chain_id", ""));
    ck_assert_msg(chain != NULL, "no chain for this request");
    answer a = {chain, json_object_get(req, "options"), NULL, resp, resp, NULL};
    int rc = 0;
    json_t *targets = json_object_get(req, "targets");
    *count = 0;
    if (!targets) {
        a.target = json_object_get(req, "target");
        a.seed = json_object_get(req, "seed");
        rc = check_answer(&a, why, size);
        *count = 1;
    }
    for (size_t i = 0; rc == 0 && targets && i < json_array_size(targets); i++) {
        a.target = json_array_get(targets, i);
        a.result = json_array_get(json_object_get(resp, "results"), i);
        a.seed = json_array_get(json_object_get(req, "seeds"), i);
        if (json_is_null(a.seed))
            a.seed = NULL;
        if (!a.result) {
            snprintf(why, size, "no result %zu", i);
            rc = -1;
            break;
        }
        rc = check_answer(&a, why, size);
        if (rc) {
            size_t l = strlen(why);
            snprintf(why + l, size - l, " (result %zu)", i);
        }
        (*count)++;
    }
    json_decref(owned);
    return rc;
}

/* ---- tests: the fixtures ----------------------------------------------- */

START_TEST(index_matches_files)
{
    ck_assert_uint_ge(nfx, 20);
    for (size_t i = 0; i < nfx; i++) {
        char path[256];
        snprintf(path, sizeof path, FIXTURES "%.63s.response.json", fx[i].name);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "%s is missing", path);
        fclose(f);
        snprintf(path, sizeof path, FIXTURES "%.63s.request.json", fx[i].name);
        f = fopen(path, "r");
        ck_assert_msg((f != NULL) == has_request(&fx[i]), "%s: %s", path,
                      f ? "a GET has no body" : "missing");
        if (f)
            fclose(f);
        for (size_t k = 0; k < i; k++)
            ck_assert_msg(strcmp(fx[k].name, fx[i].name) != 0, "%s listed twice", fx[i].name);
    }
    /* every file of the folder is listed */
    DIR *d = opendir(FIXTURES);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "INDEX") == 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s", e->d_name);
        char *dot = strstr(name, ".request.json");
        if (!dot)
            dot = strstr(name, ".response.json");
        ck_assert_msg(dot != NULL, "%s is not NAME.request.json or NAME.response.json", name);
        *dot = '\0';
        ck_assert_msg(find_fixture(name) != NULL, "%s is not listed in INDEX", e->d_name);
    }
    closedir(d);
}
END_TEST

START_TEST(golden)
{
    const fixture *x = &fx[_i];
    int status = 0;
    json_t *got = run_fixture(x, &status);
    json_t *want = fixture_json(x->name, "response");
    char why[1024] = "";
    int rc = compare(want, got, "", why, sizeof why);
    if (rc) {
        char *s = json_dumps(got, JSON_COMPACT | JSON_REAL_PRECISION(17));
        fprintf(stderr, "%s: got %s\n", x->name, s);
        free(s);
    }
    ck_assert_msg(rc == 0, "%s: %s", x->name, why);
    ck_assert_msg(status == x->status, "%s: HTTP status %d, INDEX says %d", x->name, status,
                  x->status);
    if (status >= 400)
        ck_assert_msg(json_object_get(want, "error") != NULL, "%s: an error needs an error body",
                      x->name);
    json_decref(got);
    json_decref(want);
}
END_TEST

/* The expected responses themselves pass the independent checks, and so
 * does what the code answers now. */
START_TEST(forward_kinematics)
{
    const fixture *x = &fx[_i];
    if (x->status != 200 ||
        (strcmp(x->path, "/v1/solve") != 0 && strcmp(x->path, "/v1/solve/batch") != 0))
        return;
    json_t *req = fixture_json(x->name, "request");
    json_t *want = fixture_json(x->name, "response");
    int status;
    json_t *got = run_fixture(x, &status);
    char why[1024] = "";
    size_t n1 = 0, n2 = 0;
    ck_assert_msg(check_response(req, want, &n1, why, sizeof why) == 0, "%s (fixture): %s", x->name,
                  why);
    ck_assert_msg(check_response(req, got, &n2, why, sizeof why) == 0, "%s (now): %s", x->name,
                  why);
    ck_assert_uint_ge(n1, 1);
    ck_assert_uint_eq(n1, n2);
    json_decref(req);
    json_decref(want);
    json_decref(got);
}
END_TEST

/* The same arm and target stated in ROS's, Unity's and Unreal's conventions
 * give the same joint values, and every fixture kind is covered. */
START_TEST(frames_agree)
{
    static const char *const names[] = {"solve_joints_ros", "solve_joints_unity",
                                        "solve_joints_unreal"};
    json_t *q0 = NULL;
    for (size_t i = 0; i < 3; i++) {
        const fixture *x = find_fixture(names[i]);
        ck_assert_ptr_nonnull(x);
        int status;
        json_t *r = run_fixture(x, &status);
        json_t *q = json_object_get(r, "joints");
        ck_assert_uint_eq(json_array_size(q), 6);
        ck_assert_str_eq(str_of(r, "frame", ""), names[i] + strlen("solve_joints_"));
        if (!q0) {
            q0 = json_incref(q);
        } else {
            for (size_t k = 0; k < 6; k++)
                ck_assert_double_eq_tol(json_number_value(json_array_get(q, k)),
                                        json_number_value(json_array_get(q0, k)), 1e-9);
        }
        json_decref(r);
    }
    json_decref(q0);
    /* every chain kind, both angle units and every frame appear */
    static const char *const need[] = {"planar", "links3d", "bones", "skeleton",
                                       "joints", "urdf",    "tree"};
    bool seen[7] = {false}, deg = false, frames[3] = {false};
    for (size_t i = 0; i < nfx; i++) {
        if (!has_request(&fx[i]) || fx[i].status != 200)
            continue;
        json_t *req = fixture_json(fx[i].name, "request");
        json_t *c = json_object_get(req, "chain");
        for (size_t k = 0; c && k < 7; k++)
            seen[k] |= strcmp(str_of(c, "kind", ""), need[k]) == 0;
        json_t *o = json_object_get(req, "options");
        deg |= degrees(o);
        const char *f = str_of(o, "frame", "ros");
        frames[0] |= strcmp(f, "ros") == 0;
        frames[1] |= strcmp(f, "unity") == 0;
        frames[2] |= strcmp(f, "unreal") == 0;
        json_decref(req);
    }
    for (size_t k = 0; k < 7; k++)
        ck_assert_msg(seen[k], "no fixture solves a %s chain", need[k]);
    ck_assert(deg && frames[0] && frames[1] && frames[2]);
}
END_TEST

/* The independent checks do reject wrong answers. */
static void expect_rejected(const char *name, const char *member, size_t index, size_t comp,
                            double delta)
{
    json_t *req = fixture_json(name, "request");
    json_t *resp = fixture_json(name, "response");
    json_t *arr = json_object_get(resp, member);
    size_t at = index;
    if (json_is_array(json_array_get(arr, index))) {
        arr = json_array_get(arr, index);
        at = comp;
    }
    json_t *m = json_array_get(arr, at);
    ck_assert_msg(json_is_number(m), "%s: %s[%zu] is not there", name, member, index);
    json_array_set_new(arr, at, json_real(json_number_value(m) + delta));
    char why[1024] = "";
    size_t n;
    ck_assert_msg(check_response(req, resp, &n, why, sizeof why) != 0,
                  "%s: %s[%zu] off by %g was not noticed", name, member, index, delta);
    json_decref(req);
    json_decref(resp);
}

START_TEST(checks_can_fail)
{
    expect_rejected("solve_two_link", "joints", 0, 0, 1e-6);
    expect_rejected("solve_three_link", "joints", 2, 0, 1e-6);
    expect_rejected("solve_links3d", "positions", 2, 1, 1e-6);
    expect_rejected("solve_two_bone", "positions", 1, 0, 1e-6);
    expect_rejected("solve_two_bone", "rotations", 0, 1, 1e-6);
    expect_rejected("solve_fabrik", "positions", 2, 2, 1e-6);
    expect_rejected("solve_skeleton", "rotations", 2, 1, 1e-6);
    expect_rejected("solve_joints_ros", "joints", 4, 0, 1e-4);
    expect_rejected("solve_joints_unity", "joints", 0, 0, 1e-4);
    expect_rejected("solve_joints_degrees", "joints", 0, 0, 1e-3);
    expect_rejected("solve_urdf", "joints", 1, 0, 1e-4);
    /* a joint position that does not follow the joint values */
    expect_rejected("solve_urdf", "positions", 3, 0, 1e-6);
    expect_rejected("solve_tree_urdf", "joints", 2, 0, 1e-4);
    expect_rejected("solve_tree_priorities", "joints", 0, 0, 1e-4);
    /* a tree of bones: a turned bone, a bone off its place */
    expect_rejected("solve_tree_skeleton", "rotations", 2, 1, 1e-6);
    expect_rejected("solve_tree_skeleton", "positions", 4, 0, 1e-6);
}
END_TEST

/* ---- tests: the documents ---------------------------------------------- */

static char *read_doc(const char *path)
{
    char *s = pc_read_file(path, NULL);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

START_TEST(readme_shows_fixtures)
{
    char *doc = read_doc("proto/README.md");
    static const char marker[] = "<!-- fixture: ";
    size_t shown = 0;
    for (char *m = strstr(doc, marker); m; m = strstr(m + 1, marker)) {
        char file[256];
        ck_assert_msg(sscanf(m + strlen(marker), "%255s", file) == 1, "bad marker");
        char *open = strstr(m, "\n```");
        ck_assert_msg(open != NULL, "%s: no code block after the marker", file);
        char *body = strchr(open + 1, '\n');
        ck_assert_ptr_nonnull(body);
        body++;
        char *close = strstr(body, "\n```");
        ck_assert_ptr_nonnull(close);
        size_t len;
        char *want = pc_read_file(file, &len);
        ck_assert_msg(want != NULL, "README shows %s, which does not exist", file);
        size_t have = (size_t)(close - body) + 1; /* with its last newline */
        ck_assert_msg(have == len && memcmp(body, want, len) == 0,
                      "proto/README.md's copy of %s differs from the file", file);
        free(want);
        shown++;
    }
    ck_assert_uint_ge(shown, 10);
    free(doc);
}
END_TEST

/* openapi.yaml: every example names its fixture and holds it as one line of
 * JSON. */
START_TEST(openapi_examples_are_fixtures)
{
    char *doc = read_doc("proto/openapi.yaml");
    ck_assert_ptr_nonnull(strstr(doc, "openapi: 3.1"));
    bool used[MAX_FIXTURES][2];
    memset(used, 0, sizeof used);
    char pending[256] = "";
    size_t examples = 0;
    char *save = NULL;
    for (char *line = strtok_r(doc, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *s = line + strspn(line, " ");
        if (strncmp(s, "x-fixture: ", 11) == 0) {
            ck_assert_msg(!pending[0], "x-fixture %s has no value", pending);
            snprintf(pending, sizeof pending, "%s", s + 11);
            continue;
        }
        if (strncmp(s, "value: ", 7) != 0)
            continue;
        ck_assert_msg(pending[0], "an example value without x-fixture: %.60s", s);
        json_error_t je;
        json_t *v = json_loads(s + 7, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
        ck_assert_msg(v != NULL, "example %s is not one line of JSON: %s", pending, je.text);
        /* tests/fixtures/NAME.(request|response).json */
        char name[128], which[16];
        ck_assert_msg(sscanf(pending, FIXTURES "%127[^.].%15[^.].json", name, which) == 2,
                      "x-fixture %s is not a fixture path", pending);
        const fixture *x = find_fixture(name);
        ck_assert_msg(x != NULL, "x-fixture %s is not in INDEX", pending);
        bool req = strcmp(which, "request") == 0;
        char *body;
        if (json_is_string(v)) {
            /* a body that is not JSON, given as a string: the exact text */
            size_t len;
            char *raw = fixture_text(name, which, &len);
            ck_assert_msg(json_string_length(v) == len &&
                              memcmp(json_string_value(v), raw, len) == 0,
                          "openapi.yaml's example %s differs from the file", pending);
            body = raw;
        } else {
            json_t *f = fixture_json(name, which);
            ck_assert_msg(json_equal(v, f), "openapi.yaml's example %s differs from the file",
                          pending);
            json_decref(f);
            body = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
        }
        if (req) {
            /* the example itself gets the answer INDEX says */
            int status;
            json_t *r = exchange(x, body, strlen(body), &status);
            ck_assert_msg(status == x->status, "openapi example %s gives %d, not %d", pending,
                          status, x->status);
            json_decref(r);
        }
        free(body);
        used[x - fx][req ? 0 : 1] = true;
        json_decref(v);
        pending[0] = '\0';
        examples++;
    }
    ck_assert_msg(!pending[0], "x-fixture %s has no value", pending);
    for (size_t i = 0; i < nfx; i++) {
        ck_assert_msg(used[i][0] || !has_request(&fx[i]),
                      "openapi.yaml does not show %s.request.json", fx[i].name);
        ck_assert_msg(used[i][1], "openapi.yaml does not show %s.response.json", fx[i].name);
    }
    ck_assert_uint_ge(examples, nfx);
    free(doc);
}
END_TEST

/* The wire error codes: proto/README.md's error table has exactly the rows
 * of PROTO_ERROR_MAP (proto/proto_error.h), each with the table's HTTP
 * status and MoveIt code ("| `code` | status | MoveIt |", "-" where none
 * applies), and every code of the table is set somewhere in proto/ or
 * server/ (no dead row). */
static const struct {
    const char *name, *enum_name;
    int http, moveit;
} error_rows[] = {
#define ROW(name, wire, http, moveit, text) {wire, "PROTO_E_" #name, http, moveit},
    PROTO_ERROR_MAP(ROW)
#undef ROW
};

static bool used_in_sources(const char *enum_name)
{
    static const char *const dirs[] = {"proto", "server"};
    bool used = false;
    for (size_t d = 0; d < 2 && !used; d++) {
        DIR *dir = opendir(dirs[d]);
        ck_assert_ptr_nonnull(dir);
        struct dirent *e;
        while (!used && (e = readdir(dir))) {
            size_t n = strlen(e->d_name);
            if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0 ||
                strcmp(e->d_name, "proto_error.c") == 0)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            char *src = read_doc(path);
            for (char *p = strstr(src, enum_name); p && !used; p = strstr(p + 1, enum_name))
                used = !isalnum((unsigned char)p[strlen(enum_name)]) &&
                       p[strlen(enum_name)] != '_';
            free(src);
        }
        closedir(dir);
    }
    return used;
}

START_TEST(error_codes_documented)
{
    char *readme = read_doc("proto/README.md");
    size_t nrows = sizeof error_rows / sizeof error_rows[0];
    ck_assert_uint_eq(nrows, PROTO_E_COUNT - 1);
    for (size_t i = 0; i < nrows; i++) {
        ck_assert_str_eq(proto_error_name((proto_errcode)(i + 1)), error_rows[i].name);
        ck_assert_int_eq(proto_error_moveit((proto_errcode)(i + 1)), error_rows[i].moveit);
        char want[160], mv[32];
        if (error_rows[i].moveit)
            snprintf(mv, sizeof mv, "%d", error_rows[i].moveit);
        else
            snprintf(mv, sizeof mv, "-");
        snprintf(want, sizeof want, "\n| `%s` | %d | %s |", error_rows[i].name,
                 error_rows[i].http, mv);
        ck_assert_msg(strstr(readme, want) != NULL, "proto/README.md's error table lacks \"%s\"",
                      want + 1);
        ck_assert_msg(used_in_sources(error_rows[i].enum_name), "%s is set nowhere in proto/ or server/",
                      error_rows[i].enum_name);
    }
    /* and no row the table does not have: every "| `code` | 4xx/5xx |" line
     * of the section "## Errors" */
    size_t doc_rows = 0;
    char *sec = strstr(readme, "\n## Errors\n");
    ck_assert_ptr_nonnull(sec);
    char *sec_end = strstr(sec + 1, "\n## ");
    if (sec_end)
        *sec_end = '\0';
    for (char *p = strstr(sec, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
        char name[64];
        int status;
        if (sscanf(p, "\n| `%63[a-z_]` | %d |", name, &status) != 2 || status < 400)
            continue;
        bool known = false;
        for (size_t i = 0; i < nrows; i++)
            known |= strcmp(name, error_rows[i].name) == 0;
        ck_assert_msg(known, "proto/README.md documents code %s, which PROTO_ERROR_MAP lacks", name);
        doc_rows++;
    }
    ck_assert_uint_eq(doc_rows, nrows);
    free(readme);
}
END_TEST

/* README.md's error list ("The API at a glance"): a row per HTTP status,
 * "| status | `code`, `code` | when |", naming every code of
 * PROTO_ERROR_MAP under its status, and no status the table lacks but
 * libmicrohttpd's own 431 (headers beyond --connection-memory). */
START_TEST(readme_error_statuses)
{
    char *readme = read_doc("README.md");
    char *sec = strstr(readme, "\n## The API at a glance\n");
    ck_assert_msg(sec != NULL, "README.md has no \"The API at a glance\" section");
    char *sec_end = strstr(sec + 1, "\n## ");
    if (sec_end)
        *sec_end = '\0';
    size_t nrows = sizeof error_rows / sizeof error_rows[0];
    for (size_t i = 0; i < nrows; i++) {
        char start[16], code[80];
        snprintf(start, sizeof start, "\n| %d | ", error_rows[i].http);
        const char *line = strstr(sec, start);
        ck_assert_msg(line != NULL, "README.md's error list has no row for %d", error_rows[i].http);
        const char *eol = strchr(line + 1, '\n');
        snprintf(code, sizeof code, "`%s`", error_rows[i].name);
        const char *at = strstr(line, code);
        ck_assert_msg(at != NULL && (!eol || at < eol), "README.md's row for %d lacks %s",
                      error_rows[i].http, code);
    }
    size_t statuses = 0;
    for (char *p = strstr(sec, "\n| "); p; p = strstr(p + 1, "\n| ")) {
        int status;
        if (sscanf(p, "\n| %d |", &status) != 1 || status < 400 || status > 599)
            continue;
        bool known = status == 431;
        for (size_t i = 0; i < nrows; i++)
            known |= error_rows[i].http == status;
        ck_assert_msg(known, "README.md lists status %d, which PROTO_ERROR_MAP lacks", status);
        statuses++;
    }
    ck_assert_uint_ge(statuses, 12);
    free(readme);
}
END_TEST

/* STREAM.md's streams by name (the examples open a few). */
typedef struct named_session {
    char name[PROTO_STREAM_NAME_MAX + 1];
    proto_session *s;
} named_session;
#define NAMED_MAX 8

static proto_session *named_find(named_session *n, const char *name)
{
    for (size_t i = 0; i < NAMED_MAX; i++)
        if (n[i].s && strcmp(n[i].name, name) == 0)
            return n[i].s;
    return NULL;
}

/* The answer proto/ gives for a tick message: each target solved by its
 * stream's session, as the daemon does (prepared from the warm start, run,
 * then the session's next warm start), with nothing skipped. New
 * reference. */
static json_t *tick_answer(named_session *named, const proto_stream_msg *msg)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_stream_tick_head(&w, msg->seq, 0);
    for (size_t i = 0; i < proto_stream_tick_count(msg); i++) {
        if (i)
            proto_jw_raw(&w, ",", 1);
        proto_stream_tick_target t;
        proto_error e;
        if (proto_stream_tick_target_get(msg, i, &t, &e) != 0) {
            proto_stream_tick_error(&w, t.stream, t.has_seq, t.seq, &e);
            continue;
        }
        proto_session *s = named_find(named, t.stream);
        proto_job *job;
        if (!s) {
            char where[64];
            snprintf(where, sizeof where, "/targets/%zu/stream", i);
            proto_error_set(&e, PROTO_E_UNKNOWN_STREAM, where, "no such stream");
            proto_stream_tick_error(&w, t.stream, true, t.seq, &e);
        } else if (proto_session_tick_target(s, proto_session_scene_of(s), &t, i, &job, &e) != 0) {
            proto_stream_tick_error(&w, t.stream, true, t.seq, &e);
        } else {
            proto_session_prepare(s, job);
            proto_job_run(job, 0, 1);
            proto_stream_tick_solution(&w, t.stream, t.seq, 0, job, 0);
            proto_session_solved(s, job);
        }
    }
    proto_stream_tick_tail(&w);
    size_t len;
    char *text = proto_jw_finish(&w, &len);
    ck_assert_ptr_nonnull(text);
    json_error_t je;
    json_t *v = json_loadb(text, len, 0, &je);
    ck_assert_msg(v != NULL, "%s: %s", text, je.text);
    free(text);
    return v;
}

/* got (a tick_solution of STREAM.md) is want (tick_answer): the same
 * results exactly, errors with the same stream, seq, code and path. */
static void same_tick_answer(const json_t *got, const json_t *want)
{
    ck_assert_int_eq(json_integer_value(json_object_get(got, "seq")),
                     json_integer_value(json_object_get(want, "seq")));
    const json_t *gs = json_object_get(got, "solutions"), *ws = json_object_get(want, "solutions");
    ck_assert_uint_eq(json_array_size(gs), json_array_size(ws));
    for (size_t i = 0; i < json_array_size(ws); i++) {
        const json_t *g = json_array_get(gs, i), *x = json_array_get(ws, i);
        const json_t *xe = json_object_get(x, "error");
        if (!xe) {
            /* skipped: the daemon's bookkeeping, the rest proto's answer */
            json_t *gc = json_deep_copy(g);
            json_object_set_new(gc, "skipped", json_integer(0));
            ck_assert_msg(json_equal(gc, x), "STREAM.md's tick answer %zu is not proto's", i);
            json_decref(gc);
            continue;
        }
        const json_t *ge = json_object_get(g, "error");
        ck_assert_msg(ge != NULL, "STREAM.md's tick answer %zu is no error", i);
        ck_assert(json_equal(json_object_get(g, "stream"), json_object_get(x, "stream")));
        ck_assert(json_equal(json_object_get(g, "seq"), json_object_get(x, "seq")));
        ck_assert_str_eq(str_of(ge, "code", ""), str_of(xe, "code", "?"));
        ck_assert_str_eq(str_of(ge, "path", ""), str_of(xe, "path", "?"));
    }
}

/* STREAM.md: client messages decode, server messages are messages ikd
 * sends. */
START_TEST(stream_examples)
{
    char *doc = read_doc("proto/STREAM.md");
    static const char marker[] = "<!-- check: ";
    size_t client = 0, server = 0, knees = 0, ticks = 0;
    ik_vec3 side = ik_v3(0, 0, 0);
    proto_session *session = NULL; /* the last opened on a chain */
    named_session named[NAMED_MAX];
    memset(named, 0, sizeof named);
    json_t *tick_want = NULL;
    for (char *m = strstr(doc, marker); m; m = strstr(m + 1, marker)) {
        bool is_client = strncmp(m + strlen(marker), "client", 6) == 0;
        ck_assert(is_client || strncmp(m + strlen(marker), "server", 6) == 0);
        char *open = strstr(m, "\n```");
        ck_assert_ptr_nonnull(open);
        char *body = strchr(open + 1, '\n');
        ck_assert_ptr_nonnull(body);
        body++;
        char *close = strstr(body, "\n```");
        ck_assert_ptr_nonnull(close);
        size_t len = (size_t)(close - body);
        if (is_client) {
            proto_stream_msg msg;
            proto_error e;
            ck_assert_msg(proto_stream_decode(body, len, &msg, &e) == 0, "%.*s: %s", (int)len, body,
                          e.message);
            if (msg.type == PROTO_STREAM_OPEN && msg.chain) {
                proto_chain *chain = proto_chain_decode_json(msg.chain, "/chain", NULL, &e);
                ck_assert_msg(chain != NULL, "stream chain: %s", e.message);
                session = NULL;
                ck_assert_msg(proto_session_open(chain, msg.options, msg.seed, NULL, &session,
                                                 &e) == 0,
                              "stream open: %s at %s", e.message, e.path);
                proto_chain_unref(chain);
                size_t k = 0;
                while (k < NAMED_MAX && named[k].s && strcmp(named[k].name, msg.stream) != 0)
                    k++;
                ck_assert_uint_lt(k, NAMED_MAX);
                proto_session_free(named[k].s);
                snprintf(named[k].name, sizeof named[k].name, "%s", msg.stream);
                named[k].s = session;
            }
            proto_session *ss = named_find(named, msg.stream);
            if (!ss)
                ss = session;
            if (msg.type == PROTO_STREAM_TARGET || msg.type == PROTO_STREAM_PATH) {
                ck_assert_msg(ss != NULL, "a target before any open with a chain");
                size_t ns = msg.type == PROTO_STREAM_PATH ? proto_stream_path_count(msg.path) : 1;
                if (msg.type == PROTO_STREAM_PATH)
                    ck_assert_msg(proto_session_path(ss, msg.path, &e) == 0,
                                  "stream path: %s at %s", e.message, e.path);
                for (size_t i = 0; i < ns; i++) {
                    proto_job *job;
                    int rc = msg.type == PROTO_STREAM_PATH
                                 ? proto_session_sample(ss, msg.path, i, &job, &e)
                                 : proto_session_target(ss, msg.target, msg.seed, &job, &e);
                    ck_assert_msg(rc == 0, "stream target: %s", e.message);
                    proto_job_free(job);
                }
            }
            if (msg.type == PROTO_STREAM_TICK) {
                json_decref(tick_want);
                tick_want = tick_answer(named, &msg);
            }
            proto_stream_msg_free(&msg);
            client++;
        } else {
            json_error_t je;
            json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
            ck_assert_msg(v != NULL, "%.*s: %s", (int)len, body, je.text);
            static const char *const types[] = {"opened", "closed", "solution",     "path_end",
                                                "error",  "tick_solution", NULL};
            bool ok = false;
            for (size_t i = 0; types[i]; i++)
                ok |= strcmp(str_of(v, "type", ""), types[i]) == 0;
            ck_assert_msg(ok, "unknown server message type in %.*s", (int)len, body);
            if (strcmp(str_of(v, "type", ""), "tick_solution") == 0) {
                ck_assert_msg(tick_want != NULL, "a tick answer without a tick before it");
                same_tick_answer(v, tick_want);
                json_decref(tick_want);
                tick_want = NULL;
                ticks++;
            }
            /* the example's leg never flips: every bent answer's knee is on
             * the side of the first one (straight answers bend to no side) */
            json_t *pos = json_object_get(json_object_get(v, "result"), "positions");
            if (json_array_size(pos) == 3) {
                ik_vec3 hip = pc_vec(json_array_get(pos, 0)), knee = pc_vec(json_array_get(pos, 1));
                ik_vec3 foot = pc_vec(json_array_get(pos, 2));
                ik_vec3 d = ik_vec3_normalize(ik_vec3_sub(foot, hip)), k = ik_vec3_sub(knee, hip);
                ik_vec3 off = ik_vec3_sub(k, ik_vec3_scale(d, ik_vec3_dot(k, d)));
                if (ik_vec3_len(off) > 1e-9) {
                    if (knees++)
                        ck_assert_msg(ik_vec3_dot(off, side) > 0, "the knee flips in %.*s",
                                      (int)len, body);
                    else
                        side = off;
                }
            }
            json_decref(v);
            server++;
        }
    }
    for (size_t k = 0; k < NAMED_MAX; k++)
        proto_session_free(named[k].s);
    json_decref(tick_want);
    ck_assert_uint_ge(client, 4);
    ck_assert_uint_ge(server, 5);
    ck_assert_uint_ge(knees, 2);
    ck_assert_uint_ge(ticks, 2);
    free(doc);
}
END_TEST

int main(void)
{
    load_index();
    Suite *s = suite_create("fixtures");
    TCase *tc = tcase_create("fixtures");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, index_matches_files);
    tcase_add_loop_test(tc, golden, 0, (int)nfx);
    tcase_add_loop_test(tc, forward_kinematics, 0, (int)nfx);
    tcase_add_test(tc, frames_agree);
    tcase_add_test(tc, checks_can_fail);
    suite_add_tcase(s, tc);
    TCase *td = tcase_create("documents");
    tcase_add_test(td, readme_shows_fixtures);
    tcase_add_test(td, openapi_examples_are_fixtures);
    tcase_add_test(td, stream_examples);
    tcase_add_test(td, error_codes_documented);
    tcase_add_test(td, readme_error_statuses);
    suite_add_tcase(s, td);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

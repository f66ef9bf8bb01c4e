/*
 * test_proto_binary.c: the binary form of batches (proto/proto_binary.c)
 * against the JSON form, the reference.
 *
 * Requests: each JSON batch below is also written in the binary layout of
 * proto/README.md ("Binary batches"), by this test's own writer; both must
 * decode to the same job (chain, options, solver, targets byte for byte),
 * and a binary batch whose numbers a JSON batch can carry (out of range,
 * not a unit quaternion) must fail with the JSON batch's error, path
 * included. The errors only the binary form can have (its framing, NaN,
 * a planar target off its plane, targets in the head) are named too.
 *
 * Answers: each batch is solved once and answered in both forms from the
 * same results; the binary answer, read by this test's own reader of the
 * documented layout, must hold every number of the JSON answer (default
 * digits, which read back exactly) as the same double, in the places the
 * layout gives, with NaN where the JSON answer has no member, the same
 * codes, iterations, restarts and counts; options.fields shapes both
 * alike; the answer in pieces joins to the whole.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary_le.h"
#include "proto/proto.h"
#include "proto/proto_kind.h"

/* ---- the layout, written and read by this test ---------------------------------- */

/* The binary request of a JSON batch body: its head (the body without
 * "targets") and its targets' positions (3 numbers: a planar target's third
 * is 0) and orientations (when every target has one). */
static unsigned char *to_binary(const char *json, size_t *len)
{
    json_t *req = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(req);
    json_t *ts = json_incref(json_object_get(req, "targets"));
    json_object_del(req, "targets");
    char *head = json_dumps(req, JSON_COMPACT);
    size_t hl = strlen(head), n = json_array_size(ts);
    bool orient = true;
    for (size_t i = 0; i < n; i++)
        orient &= json_object_get(json_array_get(ts, i), "orientation") != NULL;
    size_t at = (16 + hl + 7) & ~(size_t)7, stride = orient ? 56 : 24;
    unsigned char *b = calloc(1, at + n * stride);
    memcpy(b, "IKDB", 4);
    b[4] = 1;
    b[6] = orient;
    le32(b + 8, (uint32_t)hl);
    le32(b + 12, (uint32_t)n);
    memcpy(b + 16, head, hl);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(ts, i);
        json_t *p = json_object_get(t, "position"), *o = json_object_get(t, "orientation");
        for (size_t k = 0; k < 3; k++)
            le64d(b + at + i * stride + 8 * k,
                  k < json_array_size(p) ? json_number_value(json_array_get(p, k)) : 0.0);
        for (size_t k = 0; orient && k < 4; k++)
            le64d(b + at + i * stride + 24 + 8 * k, json_number_value(json_array_get(o, k)));
    }
    free(head);
    json_decref(ts);
    json_decref(req);
    *len = at + n * stride;
    return b;
}

static void same_jobs(const proto_job *a, const proto_job *b)
{
    ck_assert(a->n == b->n && a->solver == b->solver && a->dof == b->dof && a->npos == b->npos &&
              a->nrot == b->nrot && a->dims2 == b->dims2);
    ck_assert_str_eq(proto_chain_id(a->chain), proto_chain_id(b->chain));
    ck_assert(memcmp(&a->opt, &b->opt, sizeof a->opt) == 0);
    ck_assert(memcmp(a->targets, b->targets, a->n * sizeof *a->targets) == 0);
}

/* The JSON array member m of result r as doubles (n of them, flattened:
 * arrays of arrays too); false when r has no m. */
static bool json_numbers(const json_t *r, const char *m, double *out, size_t n)
{
    const json_t *a = json_object_get(r, m);
    if (!a)
        return false;
    size_t k = 0;
    if (json_is_number(a)) {
        out[k++] = json_number_value(a);
    } else if (json_is_object(a)) { /* the tip: position then orientation */
        const json_t *p = json_object_get(a, "position"), *q = json_object_get(a, "orientation");
        for (size_t i = 0; i < json_array_size(p); i++)
            out[k++] = json_number_value(json_array_get(p, i));
        for (size_t i = 0; i < json_array_size(q); i++)
            out[k++] = json_number_value(json_array_get(q, i));
    } else {
        for (size_t i = 0; i < json_array_size(a); i++) {
            const json_t *e = json_array_get(a, i);
            if (json_is_array(e))
                for (size_t j = 0; j < json_array_size(e); j++)
                    out[k++] = json_number_value(json_array_get(e, j));
            else
                out[k++] = json_number_value(e);
        }
    }
    ck_assert_uint_eq(k, n);
    return true;
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a == 0 && b == 0 && signbit(a) == signbit(b));
}

static int code_of(const char *status)
{
    return strcmp(status, "success") == 0                    ? 1
           : strcmp(status, "no_ik_solution") == 0           ? -31
           : strcmp(status, "timed_out") == 0                ? -6
           : strcmp(status, "invalid_goal_constraints") == 0 ? -16
                                                             : 99999;
}

/* Every number of the JSON answer (parsed) in the binary one (bytes). */
static void same_numbers(const json_t *a, const unsigned char *bin, size_t blen)
{
    ck_assert_uint_ge(blen, 32 + 20);
    ck_assert(memcmp(bin, "IKDA", 4) == 0);
    ck_assert_uint_eq(rd16(bin + 4), 1);
    size_t dims = rd16(bin + 6), n = rd32(bin + 8), rec = rd32(bin + 12);
    uint32_t fields = rd32(bin + 16);
    size_t dof = rd16(bin + 20), npos = rd16(bin + 22), nrot = rd16(bin + 24);
    const json_t *results = json_object_get(a, "results");
    ck_assert_uint_eq(n, json_array_size(results));
    ck_assert_uint_eq(blen, 32 + n * rec + 20);
    static const struct {
        const char *name;
        unsigned bit;
    } members[] = {{"joints", 1},           {"positions", 2},          {"rotations", 4},
                   {"local_rotations", 8},  {"tip", 16},               {"position_error", 32},
                   {"orientation_error", 64}, {"max_joint_step", 128}, {"time_ms", 256}};
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(results, i);
        const unsigned char *p = bin + 32 + i * rec;
        ck_assert_int_eq((int32_t)rd32(p), code_of(json_string_value(json_object_get(r, "status"))));
        uint32_t flags = rd32(p + 4);
        if (json_object_get(r, "iterations"))
            ck_assert_uint_eq(rd32(p + 8), json_integer_value(json_object_get(r, "iterations")));
        if (json_object_get(r, "restarts"))
            ck_assert_uint_eq(rd32(p + 12), json_integer_value(json_object_get(r, "restarts")));
        const unsigned char *q = p + 16;
        for (size_t m = 0; m < sizeof members / sizeof members[0]; m++) {
            /* every number the JSON answer has, the binary one has a place for */
            ck_assert_msg(!json_object_get(r, members[m].name) || (fields & members[m].bit),
                          "result %zu: %s has no place", i, members[m].name);
            if (!(fields & members[m].bit))
                continue;
            size_t k = m == 0   ? dof
                       : m == 1 ? dims * npos
                       : m < 4  ? 4 * nrot
                       : m == 4 ? 7
                                : 1;
            double want[512];
            ck_assert_uint_le(k, 512);
            bool has = json_numbers(r, members[m].name, want,
                                    m == 4 && json_object_get(r, "tip") ? 7 : k);
            for (size_t j = 0; j < k; j++) {
                double got = rd64d(q + 8 * j);
                if (has)
                    ck_assert_msg(same_double(got, want[j]), "result %zu %s[%zu]: %.17g, JSON %.17g",
                                  i, members[m].name, j, got, want[j]);
                else
                    ck_assert_msg(isnan(got), "result %zu %s: %.17g where JSON has none", i,
                                  members[m].name, got);
            }
            if (m == 4)
                ck_assert_int_eq(!!(flags & 2), has);
            if (m == 6)
                ck_assert_int_eq(!!(flags & 4), has);
            if (m == 7)
                ck_assert_int_eq(!!(flags & 8), has);
            q += 8 * k;
        }
        ck_assert_uint_eq((size_t)(q - p), rec);
        ck_assert_int_eq(!!(flags & 1), json_object_get(r, "position_error") != NULL ||
                                            !(fields & 32));
    }
    const unsigned char *t = bin + 32 + n * rec;
    ck_assert(memcmp(t, "IKDC", 4) == 0);
    const json_t *c = json_object_get(a, "counts");
    static const char *const cn[4] = {"success", "no_ik_solution", "timed_out", "other"};
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(rd32(t + 4 + 4 * k), json_integer_value(json_object_get(c, cn[k])));
}

/* Decodes json and its binary twin, checks they are one job, solves it and
 * checks the two answers; the binary one in pieces of `per` too. */
static void check_both(const char *json, size_t per)
{
    proto_job *jj = NULL, *jb = NULL;
    proto_error err;
    ck_assert_msg(proto_job_decode(json, strlen(json), PROTO_BATCH, NULL, NULL, NULL, &jj, &err) ==
                      0,
                  "%s: %s", json, err.message);
    size_t blen;
    unsigned char *b = to_binary(json, &blen);
    ck_assert_msg(proto_batch_decode_binary((char *)b, blen, NULL, NULL, NULL, &jb, &err) == 0,
                  "%s: %s %s", json, err.path, err.message);
    same_jobs(jj, jb);
    ck_assert(proto_job_binary_ok(jj));
    proto_job_run(jj, 0, jj->n);
    /* the JSON answer at the default digits, which read back exactly
     * (options.digits does not apply to doubles) */
    int digits = jj->opt.digits;
    jj->opt.digits = 0;
    size_t tl;
    char *text = proto_job_encode(jj, &tl);
    jj->opt.digits = digits;
    json_t *a = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(a);
    size_t counts[PROTO_COUNT_BUCKETS] = {0}, l;
    size_t cap = 32 + jj->n * proto_job_binary_record(jj) + 20, o = 0;
    unsigned char *bin = malloc(cap);
    char *h = proto_job_encode_binary_head(jj, &l);
    memcpy(bin + o, h, l);
    o += l;
    free(h);
    for (size_t k = 0; k < jj->n; k += per) {
        char *r = proto_job_encode_binary_results(jj, k, k + per, counts, &l);
        ck_assert_uint_le(o + l, cap);
        memcpy(bin + o, r, l);
        o += l;
        free(r);
    }
    char *t = proto_job_encode_binary_tail(jj, counts, &l);
    ck_assert_uint_le(o + l, cap);
    memcpy(bin + o, t, l);
    o += l;
    free(t);
    same_numbers(a, bin, o);
    free(bin);
    json_decref(a);
    free(text);
    free(b);
    proto_job_free(jj);
    proto_job_free(jb);
}

#define BONES "{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],[0,0,0.1]]}"
#define JOINTS                                                                                     \
    "{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\",\"type\":\"revolute\",\"axis\":[0,0,1],"     \
    "\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"b\",\"type\":\"revolute\",\"axis\":[0,1,"  \
    "0],\"origin\":{\"xyz\":[0,0,0.5]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"s\","    \
    "\"type\":\"prismatic\",\"axis\":[1,0,0],\"origin\":{\"xyz\":[0,0,0.4]},\"limits\":{"          \
    "\"lower\":0,\"upper\":0.3}},{\"name\":\"c\",\"type\":\"revolute\",\"axis\":[1,0,0],"          \
    "\"origin\":{\"xyz\":[0,0,0.1]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"tip\","     \
    "\"type\":\"fixed\",\"origin\":{\"xyz\":[0.1,0,0.2]}}]}"

START_TEST(test_answers_equal_json)
{
    static const char *const bodies[] = {
        /* two-bone: reachable, out of reach, too close; frames */
        "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]},{\"position\":[3,3,3]},"
        "{\"position\":[0,0,0.99]},{\"position\":[-0.1,0.2,0.4]}]}",
        "{\"chain\":" BONES ",\"options\":{\"frame\":\"unity\",\"units\":\"degrees\"},"
        "\"targets\":[{\"position\":[0.2,0.25,0.1]},{\"position\":[-0.1,0.4,0.2]}]}",
        /* compact: what a game asks, and digits (not applied to doubles) */
        "{\"chain\":" BONES ",\"options\":{\"fields\":[\"local_rotations\"],\"digits\":6},"
        "\"targets\":[{\"position\":[0.2,0.1,0.25]},{\"position\":[0.1,0.1,0.3]}]}",
        "{\"chain\":" BONES ",\"options\":{\"fields\":[]},\"targets\":[{\"position\":[0.2,0.1,"
        "0.25]}]}",
        /* fabrik and ccd */
        "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0.3],[0,0,0.6],[0,0,0.9]]},"
        "\"options\":{\"solver\":\"fabrik\"},\"targets\":[{\"position\":[0.5,0.3,0.4]},{"
        "\"position\":[2,2,2]}]}",
        "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0.3],[0,0,0.6],[0,0,0.9]]},"
        "\"options\":{\"solver\":\"ccd\",\"max_iterations\":9},\"targets\":[{\"position\":[0.5,"
        "0.3,0.4]}]}",
        /* planar: 2-D points, numeric planar three-link */
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"options\":{\"units\":\"degrees\"},"
        "\"targets\":[{\"position\":[1.2,0.4]},{\"position\":[9,9]}]}",
        "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75,0.5]},\"options\":{\"timeout_ms\":0,"
        "\"max_iterations\":500},\"targets\":[{\"position\":[1.2,0.4]},{\"position\":[0.3,-0.9]}]}",
        /* joints: numeric, tip, orientation errors, a prismatic joint in degrees */
        "{\"chain\":" JOINTS ",\"options\":{\"timeout_ms\":0,\"max_iterations\":2000,\"units\":"
        "\"degrees\"},\"targets\":[{\"position\":[0.2,0.1,0.9]},{\"position\":[0.1,0.2,0.8]}]}",
        "{\"chain\":" JOINTS ",\"options\":{\"timeout_ms\":0,\"max_iterations\":2000,\"frame\":"
        "\"unreal\"},\"targets\":[{\"position\":[0.2,0.1,0.9],\"orientation\":[0,0,0,1]},{"
        "\"position\":[0.1,0.2,0.8],\"orientation\":[0,0.3826834,0,0.9238795]},{\"position\":[5,5,"
        "5],\"orientation\":[0,0,0,1]}]}",
        /* a skeleton: rotations are local, no local_rotations */
        "{\"chain\":{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"pelvis\",\"translation\":[0,0,1]},"
        "{\"name\":\"thigh\",\"parent\":\"pelvis\",\"translation\":[0,0.1,0],\"rotation\":[0,"
        "-0.258819,0,0.9659258]},{\"name\":\"shin\",\"parent\":\"thigh\",\"translation\":[0,0,"
        "-0.45],\"rotation\":[0,0.5,0,0.8660254]},{\"name\":\"foot\",\"parent\":\"shin\","
        "\"translation\":[0,0,-0.45]}],\"limb\":[\"thigh\",\"shin\",\"foot\"]},\"targets\":[{"
        "\"position\":[0.15,0.1,0.25]},{\"position\":[0.1,0.1,0.3]}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        for (size_t per = 1; per <= 3; per += 2)
            check_both(bodies[i], per);
    /* the UR5 of tests/data by the closed-form solver: joints and tips */
    FILE *f = fopen("tests/data/robots/ur5.urdf", "rb");
    ck_assert_ptr_nonnull(f);
    static char urdf[1 << 18];
    size_t n = fread(urdf, 1, sizeof urdf - 1, f);
    fclose(f);
    urdf[n] = '\0';
    json_t *req = json_pack("{s:{s:s,s:s,s:s,s:s},s:{s:s},s:[{s:[f,f,f],s:[i,i,i,i]},"
                            "{s:[f,f,f],s:[i,i,i,i]},{s:[i,i,i],s:[i,i,i,i]}]}",
                            "chain", "kind", "urdf", "urdf", urdf, "base", "base_link", "tip",
                            "tool0", "options", "solver", "closed", "targets", "position", 0.4,
                            0.2, 0.3, "orientation", 0, 1, 0, 0, "position", 0.3, -0.3, 0.4,
                            "orientation", 0, 1, 0, 0, "position", 5, 5, 5, "orientation", 0, 0,
                            0, 1);
    ck_assert_ptr_nonnull(req);
    char *body = json_dumps(req, JSON_COMPACT);
    check_both(body, 2);
    free(body);
    json_decref(req);
}
END_TEST

/* Random two-bone batches: every number of two answers. */
START_TEST(test_random_two_bone)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char *body = malloc(1 << 16);
    for (int round = 0; round < 20; round++) {
        int o = snprintf(body, 1 << 16, "{\"chain\":" BONES ",\"targets\":[");
        for (int i = 0; i < 200; i++) {
            double v[3];
            for (int k = 0; k < 3; k++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                v[k] = ((double)(x >> 11) * 0x1.0p-53 * 2 - 1) * 1.2;
            }
            o += snprintf(body + o, (size_t)(1 << 16) - (size_t)o,
                          "%s{\"position\":[%.17g,%.17g,%.17g]}", i ? "," : "", v[0], v[1], v[2]);
        }
        snprintf(body + o, (size_t)(1 << 16) - (size_t)o, "]}");
        check_both(body, 64);
    }
    free(body);
}
END_TEST

/* A binary batch must fail as its JSON twin does. */
static void same_error(const char *json)
{
    proto_job *job = NULL;
    proto_error ej, eb;
    ck_assert_int_eq(proto_job_decode(json, strlen(json), PROTO_BATCH, NULL, NULL, NULL, &job, &ej),
                     -1);
    size_t blen;
    unsigned char *b = to_binary(json, &blen);
    ck_assert_int_eq(proto_batch_decode_binary((char *)b, blen, NULL, NULL, NULL, &job, &eb), -1);
    ck_assert_ptr_null(job);
    ck_assert_msg(ej.code == eb.code && strcmp(ej.path, eb.path) == 0 &&
                      strcmp(ej.message, eb.message) == 0,
                  "%s:\n binary %s %s\n JSON   %s %s", json, eb.path, eb.message, ej.path,
                  ej.message);
    free(b);
}

/* A binary body's own error: code, path and a word of the message. */
static void binary_error(const unsigned char *b, size_t len, const proto_limits *lim,
                         proto_errcode code, const char *path, const char *word)
{
    proto_job *job = NULL;
    proto_error e;
    ck_assert_int_eq(proto_batch_decode_binary((const char *)b, len, lim, NULL, NULL, &job, &e), -1);
    ck_assert_ptr_null(job);
    ck_assert_msg(e.code == code && strcmp(e.path, path) == 0 && strstr(e.message, word),
                  "%d %s %s", e.code, e.path, e.message);
}

START_TEST(test_errors)
{
    same_error("{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]},{\"position\":[0.2,"
               "2e6,0.25]}]}");
    same_error("{\"chain\":" JOINTS ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"orientation\":[0,"
               "0,0,2]}]}");
    same_error("{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"orientation\":[0,"
               "0,0,1]}]}");
    same_error("{\"chain\":" BONES ",\"options\":{\"frame\":\"nope\"},\"targets\":[{\"position\":["
               "0.2,0.1,0.25]}]}");
    same_error("{\"chain_id\":\"nothing\",\"targets\":[{\"position\":[0.2,0.1,0.25]}]}");
    same_error("{\"targets\":[{\"position\":[0.2,0.1,0.25]}]}");

    const char *good = "{\"chain\":" BONES ",\"targets\":[{\"position\":[0.2,0.1,0.25]},{"
                       "\"position\":[0.1,0.1,0.3]}]}";
    size_t len;
    unsigned char *b = to_binary(good, &len);
    proto_limits lim;
    proto_limits_default(&lim);
    binary_error(b, len - 1, &lim, PROTO_E_INVALID_REQUEST, "", "bytes");
    binary_error(b, 15, &lim, PROTO_E_INVALID_REQUEST, "", "IKDB");
    b[0] = 'J';
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "", "IKDB");
    b[0] = 'I';
    b[4] = 2;
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "", "version");
    b[4] = 1;
    b[6] = 2;
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "", "flags");
    b[6] = 0;
    lim.max_targets = 1;
    binary_error(b, len, &lim, PROTO_E_TOO_LARGE, "/targets", "at most 1");
    proto_limits_default(&lim);
    lim.max_body_bytes = len - 1;
    binary_error(b, len, &lim, PROTO_E_TOO_LARGE, "", "limit");
    proto_limits_default(&lim);
    size_t at = len - 2 * 24;
    /* the padding after the head is zero bytes: a nonzero byte there is
     * named by its offset */
    size_t head_end = 16 + (b[8] | (size_t)b[9] << 8);
    ck_assert_uint_gt(at, head_end); /* this head has padding */
    b[at - 1] = 0x20;
    char where[32];
    snprintf(where, sizeof where, "byte %zu", at - 1);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "", where);
    b[at - 1] = 0;
    le64d(b + at + 24 + 8, NAN);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "/targets/1/position/1", "finite");
    le64d(b + at + 24 + 8, INFINITY);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "/targets/1/position/1", "finite");
    /* two wrong numbers in a target: the first in the order the JSON twin
     * reads them is named (each number's finiteness and range together),
     * not the first non-finite one */
    le64d(b + at + 24, 2e6);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "/targets/1/position/0", "within");
    free(b);
    same_error("{\"chain\":" JOINTS ",\"targets\":[{\"position\":[0.2,0.1,0.25],\"orientation\":"
               "[0,0,0,1]},{\"position\":[3e6,0.1,0.25],\"orientation\":[0,0,0,1]}]}");
    /* no targets at all */
    b = to_binary(good, &len);
    le32(b + 12, 0);
    binary_error(b, len - 48, &lim, PROTO_E_INVALID_REQUEST, "/targets", "at least 1");
    free(b);
    /* a planar target off its plane */
    b = to_binary("{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"targets\":[{"
                  "\"position\":[1.2,0.4]}]}",
                  &len);
    le64d(b + len - 8, 0.5);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "/targets/0/position/2", "plane");
    free(b);
    /* targets in the head, and a head that is not JSON */
    b = to_binary("{\"chain\":" BONES ",\"seeds\":[null],\"targets\":[{\"position\":[0.2,0.1,0.25]"
                  "}]}",
                  &len);
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "/seeds", "head");
    free(b);
    b = to_binary(good, &len);
    le32(b + 8, 1000000); /* a head longer than the body: what such a batch has */
    binary_error(b, len, &lim, PROTO_E_INVALID_REQUEST, "", "has 1000064 bytes, not");
    free(b);
    b = to_binary(good, &len);
    b[16] = '[';
    binary_error(b, len, &lim, PROTO_E_INVALID_JSON, "", "");
    free(b);
}
END_TEST

static Suite *binary_suite(void)
{
    Suite *s = suite_create("proto_binary");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_answers_equal_json);
    tcase_add_test(tc, test_random_two_bone);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(binary_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

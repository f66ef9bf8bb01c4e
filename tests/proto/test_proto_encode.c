/*
 * test_proto_encode.c: the text of answers and of chain ids, checked
 * against independent oracles.
 *
 * proto_job_encode() writes the response body directly, without a jansson
 * tree. The oracle (tests/proto/oracle.h) builds the tree the way the
 * response is specified (oracle_result_json() for each result, the
 * chain_id, solver, units,
 * frame and name members around it, counts and results for batches) and
 * prints it with jansson's own json_dumps(JSON_COMPACT |
 * JSON_REAL_PRECISION(17)); ikd's text, whose reals have the fewest digits
 * that read back, read and printed the same way (pc_reprint17), must agree
 * with it byte for byte on every chain
 * kind, solver, frame and unit, on batches with and without seeds, on
 * failures, on names that need escaping, on random two-bone requests, on
 * every request of tests/fixtures/ that is accepted, and on results with a
 * NaN or an infinity forced into each member (answered as failures that
 * name the member, never with the number left out). The oracle counts a
 * batch's results by the status word each is answered with.
 *
 * Chain ids are the first 128 bits of the SHA-256 of the chain's canonical
 * JSON (keys sorted, every number as a 17-digit real): the oracle converts
 * the numbers on a copy, prints it with json_dumps(JSON_SORT_KEYS) and
 * hashes it with nettle, and a few ids are pinned to literal values so that
 * they never change across versions.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_kind.h"
#include "proto/proto_stream.h"
#include "solver/ik_status.h"
#include "tests/proto/oracle.h"
#include "tests/proto/proto_check.h"

/* A batch's answer in pieces (proto_job_encode_head, _results of ranges
 * of `per` results encoded last range first, so that the counts are added
 * out of order, _tail), joined: the whole answer's text. */
static char *joined_pieces(const proto_job *job, size_t per)
{
    size_t n = proto_job_count(job), nr = (n + per - 1) / per, len;
    char **parts = calloc(nr, sizeof *parts);
    size_t *lens = calloc(nr, sizeof *lens);
    size_t counts[PROTO_COUNT_BUCKETS] = {0};
    ck_assert_ptr_nonnull(parts);
    for (size_t k = nr; k-- > 0;) {
        parts[k] = proto_job_encode_results(job, k * per, (k + 1) * per, counts, &lens[k]);
        ck_assert_ptr_nonnull(parts[k]);
        ck_assert_uint_eq(lens[k], strlen(parts[k]));
    }
    char *head = proto_job_encode_head(job, &len);
    ck_assert_ptr_nonnull(head);
    size_t total = len;
    for (size_t k = 0; k < nr; k++)
        total += lens[k];
    size_t tl;
    char *tail = proto_job_encode_tail(job, counts, &tl);
    ck_assert_ptr_nonnull(tail);
    char *all = malloc(total + tl + 1);
    ck_assert_ptr_nonnull(all);
    memcpy(all, head, len);
    size_t o = len;
    for (size_t k = 0; k < nr; k++) {
        memcpy(all + o, parts[k], lens[k]);
        o += lens[k];
        free(parts[k]);
    }
    memcpy(all + o, tail, tl + 1);
    free(head);
    free(tail);
    free(parts);
    free(lens);
    return all;
}

/* Decodes body (solve, else batch), runs it and compares the encoding with
 * the oracle's; a batch's answer in pieces of 1, 2 and 3 results must be
 * the same text. Returns 1 when the request was accepted, 0 when
 * rejected. */
static int same_as_oracle(const char *body, size_t len, const char *what)
{
    proto_job *job = NULL;
    proto_error err;
    proto_kind kind = PROTO_SOLVE;
    if (proto_job_decode(body, len, kind, NULL, NULL, NULL, &job, &err)) {
        kind = PROTO_BATCH;
        if (proto_job_decode(body, len, kind, NULL, NULL, NULL, &job, &err))
            return 0;
    }
    proto_job_run(job, 0, proto_job_count(job));
    size_t n = 0;
    char *got = proto_job_encode(job, &n);
    json_t *t = oracle_tree(job);
    char *want = json_dumps(t, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(want);
    ck_assert_uint_eq(n, strlen(got));
    char *again = pc_reprint17(got, false);
    ck_assert_msg(again && strcmp(again, want) == 0, "%s:\n got  %s\n want %s", what, got, want);
    for (size_t per = 1; kind == PROTO_BATCH && per <= 3; per++) {
        char *pieces = joined_pieces(job, per);
        ck_assert_msg(strcmp(pieces, got) == 0, "%s in pieces of %zu:\n got  %s\n want %s", what,
                      per, pieces, got);
        free(pieces);
    }
    free(again);
    free(got);
    free(want);
    json_decref(t);
    proto_job_free(job);
    return 1;
}

static int same_as_oracle_str(const char *body)
{
    return same_as_oracle(body, strlen(body), body);
}

/* ---- requests of every kind ----------------------------------------------- */

/* a tree of two tips for the tree requests below */
#define TREE "{\"kind\":\"tree\",\"joints\":[{\"name\":\"s\",\"type\":\"prismatic\",\"axis\":[0,0,1]," \
    "\"limits\":{\"lower\":0,\"upper\":0.3}},{\"name\":\"a\",\"parent\":\"s\",\"type\":" \
    "\"continuous\",\"origin\":{\"xyz\":[0,0.2,0]},\"axis\":[0,0,1]},{\"name\":\"a2\"," \
    "\"parent\":\"a\",\"type\":\"revolute\",\"origin\":{\"xyz\":[0.4,0,0]},\"axis\":[0,1,0]," \
    "\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":\"hand \\\"a\\\"\",\"parent\":\"a2\"," \
    "\"type\":\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}},{\"name\":\"b\",\"parent\":\"s\"," \
    "\"type\":\"revolute\",\"origin\":{\"xyz\":[0,-0.2,0]},\"axis\":[0,0,1],\"limits\":" \
    "{\"lower\":-3,\"upper\":3}},{\"name\":\"b2\",\"parent\":\"b\",\"type\":\"revolute\"," \
    "\"origin\":{\"xyz\":[0.4,0,0]},\"axis\":[0,1,0],\"limits\":{\"lower\":-2,\"upper\":2}}," \
    "{\"name\":\"hand_b\",\"parent\":\"b2\",\"type\":\"fixed\",\"origin\":{\"xyz\":[0.3,0,0]}}]," \
    "\"tips\":[\"hand \\\"a\\\"\",\"hand_b\"]}"

/* a tree of bones: a hip, an arm and a leg, names that need escaping */
#define BONES "{\"kind\":\"tree\",\"bones\":[{\"name\":\"hip\"},{\"name\":\"arm\"," \
    "\"parent\":\"hip\",\"translation\":[0,0.2,0],\"scale\":[2,2,2]},{\"name\":" \
    "\"hand \\\"a\\\"\",\"parent\":\"arm\",\"translation\":[0.1,0,0],\"scale\":[1,2,3]}," \
    "{\"name\":\"leg\",\"parent\":\"hip\",\"translation\":[0,-0.1,-0.1],\"rotation\":" \
    "[0,0.3826834,0,0.9238795]},{\"name\":\"foot\",\"parent\":\"leg\",\"translation\":" \
    "[0,0,-0.4]}],\"tips\":[\"hand \\\"a\\\"\",\"foot\"]}"

static const char *const REQUESTS[] = {
    /* the HTTP benchmark's body */
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]},"
    "\"target\":{\"position\":[0.3,0.6,0.2]}}",
    /* two-bone: pole, frames, out of reach, too close */
    "{\"chain\":{\"kind\":\"bones\",\"frame\":\"unity\",\"positions\":[[0,0,0],[0,0.5,0.1],"
    "[0,1,0]],\"rotations\":[[0,0,0,1],[0,0.3826834,0,0.9238795],[0,0,0,1]]},"
    "\"target\":{\"position\":[0.3,0.6,0.2],\"pole\":[1,0,0]},\"options\":{\"frame\":"
    "\"unreal\"}}",
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1,0]]},"
    "\"target\":{\"position\":[3,4,5]}}",
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,0.7,0]]},"
    "\"target\":{\"position\":[0,0.01,0]},\"seed\":[[0,0,0],[0.5,0,0],[0.5,0.2,0]]}",
    /* fabrik, ccd */
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0.3],[0,0,0.6],[0,0,0.9]]},"
    "\"target\":{\"position\":[0.5,0.3,0.4]},\"options\":{\"solver\":\"fabrik\"}}",
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0,0.3],[0,0,0.6],[0,0,0.9]]},"
    "\"target\":{\"position\":[0.5,0.3,0.4],\"pole\":[0,1,0]},\"options\":{\"solver\":\"ccd\","
    "\"max_iterations\":7,\"frame\":\"unity\"}}",
    /* planar: two-link with seed and bend, three-link with up, numeric */
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75],\"base\":[0.1,-0.2]},"
    "\"target\":{\"position\":[1.2,0.4]},\"seed\":[0.3,-0.4],\"options\":{\"units\":"
    "\"degrees\"}}",
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"target\":{\"position\":[1.2,0.4]},"
    "\"options\":{\"bend\":-1}}",
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75,0.25]},\"target\":{\"position\":"
    "[1.1,0.5],\"up\":[0,1]}}",
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75,0.25]},\"target\":{\"position\":"
    "[1.1,0.5]},\"options\":{\"timeout_ms\":50}}",
    /* links3d in another frame and degrees */
    "{\"chain\":{\"kind\":\"links3d\",\"lengths\":[0.5,0.4,0.1],\"origin\":{\"position\":"
    "[0,0,0.2]}},\"target\":{\"position\":[0.6,0.2,0.3],\"up\":[0.2,0.1,-1]}}",
    "{\"chain\":{\"kind\":\"links3d\",\"frame\":\"unity\",\"lengths\":[0.5,0.4,0.1]},"
    "\"target\":{\"position\":[0.2,0.3,0.6],\"up\":[0,-1,0.1]},\"options\":{\"units\":"
    "\"degrees\",\"frame\":\"unity\"}}",
    /* skeleton */
    "{\"chain\":{\"kind\":\"skeleton\",\"bones\":[{\"name\":\"pelvis\",\"translation\":[0,0,1]},"
    "{\"name\":\"thigh\",\"parent\":\"pelvis\",\"translation\":[0,0.1,0],\"rotation\":[0,"
    "-0.258819,0,0.9659258]},{\"name\":\"shin\",\"parent\":\"thigh\",\"translation\":[0,0,"
    "-0.45],\"rotation\":[0,0.5,0,0.8660254]},{\"name\":\"foot\",\"parent\":\"shin\","
    "\"translation\":[0,0,-0.45]}],\"limb\":[\"thigh\",\"shin\",\"foot\"]},\"target\":"
    "{\"position\":[0.15,0.1,0.25]},\"options\":{\"frame\":\"unreal\"}}",
    /* joints: revolute, prismatic, continuous; full pose, degrees, weights;
     * names that need escaping */
    "{\"chain\":{\"kind\":\"joints\",\"joints\":[{\"name\":\"a\\\"q\\\\\\u0001\\u00e9\","
    "\"type\":\"revolute\",\"axis\":[0,0,1],\"limits\":{\"lower\":-2,\"upper\":2}},{\"name\":"
    "\"slide\",\"type\":\"prismatic\",\"axis\":[1,0,0],\"origin\":{\"xyz\":[0,0,0.3]},"
    "\"limits\":{\"lower\":0,\"upper\":0.5}},{\"name\":\"c\",\"type\":\"continuous\","
    "\"axis\":[0,1,0],\"origin\":{\"xyz\":[0.2,0,0]}},{\"name\":\"tool\",\"type\":\"fixed\","
    "\"origin\":{\"xyz\":[0.1,0,0]}}]},\"target\":{\"position\":[0.25,0.2,0.25]},"
    "\"options\":{\"units\":\"degrees\",\"timeout_ms\":20}}",
    "{\"chain\":{\"kind\":\"joints\",\"joints\":[{\"name\":\"j0\",\"type\":\"revolute\","
    "\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"j1\",\"type\":"
    "\"revolute\",\"axis\":[0,1,0],\"origin\":{\"xyz\":[0,0,0.3]},\"limits\":{\"lower\":-3,"
    "\"upper\":3}},{\"name\":\"j2\",\"type\":\"revolute\",\"axis\":[1,0,0],\"origin\":{\"xyz\":"
    "[0.3,0,0]},\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"tip\",\"type\":\"fixed\","
    "\"origin\":{\"xyz\":[0.2,0,0]}}]},\"target\":{\"position\":[0.3,0.2,0.4],\"orientation\":"
    "[0,0,0.3826834,0.9238795],\"weights\":[1,1,1,0.5,0,0.5]},\"options\":{\"frame\":"
    "\"unity\",\"timeout_ms\":20,\"max_iterations\":50}}",
    /* batches: two-bone with seeds (some null), joints */
    "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1,0]]},"
    "\"targets\":[{\"position\":[0.3,0.6,0.2]},{\"position\":[5,5,5]},{\"position\":"
    "[-0.2,0.5,0.1],\"pole\":[0,0,1]}],\"seeds\":[null,[[0,0,0],[0.5,0,0],[1,0,0]],null]}",
    "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75]},\"targets\":[{\"position\":"
    "[1.2,0.4]},{\"position\":[9,9]},{\"position\":[0.5,-0.5]}],\"options\":{\"units\":"
    "\"degrees\"}}",
    /* trees: two tips over a shared prismatic joint, names that need
     * escaping; position and weighted targets with priorities, degrees,
     * another frame; a tip kept by its joints (no status); a batch with a
     * target out of reach (budgets of iterations: the outcome of the one
     * out of reach must not depend on the clock) */
    "{\"chain\":" TREE ",\"target\":{\"tips\":{\"hand \\\"a\\\"\":{\"position\":"
    "[0.5,0.3,0.15]},\"hand_b\":{\"position\":[0.5,-0.2,0.1],\"orientation\":[0,0,0,1],"
    "\"weights\":[1,1,1,0,0,1],\"priority\":1}}},\"seed\":[0.1,0,0.2,0.1,0],"
    "\"options\":{\"units\":\"degrees\",\"frame\":\"unity\",\"timeout_ms\":0,\"max_iterations\":2000}}",
    "{\"chain\":" TREE ",\"target\":{\"tips\":{\"hand_b\":{\"position\":[0.5,-0.2,0.1]}},"
    "\"keep\":\"joints\"},\"options\":{\"objective\":\"mid_limits\",\"timeout_ms\":0,\"max_iterations\":2000}}",
    "{\"chain\":" TREE ",\"targets\":[{\"tips\":{\"hand_b\":{\"position\":[0.5,-0.2,"
    "0.1],\"orientation\":[0,0.3826834,0,0.9238795]}}},{\"tips\":{\"hand_b\":{"
    "\"position\":[5,5,5]}}}],\"options\":{\"timeout_ms\":0,\"max_iterations\":2000}}",
    /* trees of bones: local rotations and every bone's position, tips in
     * another frame; a batch from seeds with a step refused and a target
     * out of reach */
    "{\"chain\":" BONES ",\"target\":{\"tips\":{\"hand \\\"a\\\"\":{\"position\":"
    "[0.3,0.35,0.1]}}},\"options\":{\"frame\":\"unreal\",\"timeout_ms\":0,"
    "\"max_iterations\":2000}}",
    "{\"chain\":" BONES ",\"targets\":[{\"tips\":{\"foot\":{\"position\":[0.2,-0.2,-0.3],"
    "\"orientation\":[0,0,0,1]}}},{\"tips\":{\"foot\":{\"position\":[5,5,5]}},\"keep\":"
    "\"joints\"}],\"seeds\":[null,[[0,0,0,1],[0,0,0,1],[0,0,0,1],[0,0,0,1],[0,0,0,1]]],"
    "\"options\":{\"units\":\"degrees\",\"timeout_ms\":0,\"max_iterations\":2000}}",
    "{\"chain\":" BONES ",\"target\":{\"tips\":{\"foot\":{\"position\":[0.2,-0.2,-0.3]}}},"
    "\"seed\":[[0,0,0,1],[0,0,0,1],[0,0,0,1],[0,0,0,1],[0,0,0,1]],\"options\":{"
    "\"max_joint_step\":0.01,\"timeout_ms\":0,\"max_iterations\":2000}}",
};

/* The closed form's answers (issue 15): every solution listed
 * (options.all_solutions, in degrees), a refused step, a failure with its
 * cause; on a UR10-like arm built here. */
START_TEST(test_closed_answers)
{
    static const pc_joint ur10[7] = {
        {{0, 0, 0.1273}, {0, 0, 0}, {0, 0, 1}, 'r'},
        {{0, 0.220941, 0}, {0, 1.5707963267948966, 0}, {0, 1, 0}, 'r'},
        {{0, -0.1719, 0.612}, {0, 0, 0}, {0, 1, 0}, 'r'},
        {{0, 0, 0.5723}, {0, 1.5707963267948966, 0}, {0, 1, 0}, 'r'},
        {{0, 0.1157, 0}, {0, 0, 0}, {0, 0, 1}, 'r'},
        {{0, 0, 0.1157}, {0, 0, 0}, {0, 1, 0}, 'r'},
        {{0, 0.0922, 0}, {-1.5707963267948966, 0, 0}, {0, 0, 0}, 'f'}};
    static const double lim[14] = {-6.28, 6.28, -6.28, 6.28, -3.14, 3.14, -6.28, 6.28,
                                   -6.28, 6.28, -6.28, 6.28, 0,     0};
    char chain[8192], body[16384];
    pc_joints_json(chain, sizeof chain, ur10, 7, lim);
    static const char *const rest[] = {
        "\"target\":{\"position\":[0.6,0.3,0.4],\"orientation\":[0,1,0,0]},\"seed\":[10,-60,"
        "70,-90,-80,5],\"options\":{\"units\":\"degrees\",\"all_solutions\":true,\"frame\":"
        "\"unity\"}",
        "\"target\":{\"position\":[0.6,0.3,0.4],\"orientation\":[0,1,0,0]},\"seed\":[2,-2,"
        "2,-2,2,2],\"options\":{\"max_joint_step\":0.1}",
        "\"target\":{\"position\":[3,0,0.4],\"orientation\":[0,1,0,0]}",
        "\"targets\":[{\"position\":[0.6,0.3,0.4],\"orientation\":[0,1,0,0]},{\"position\":"
        "[3,0,0.4],\"orientation\":[0,1,0,0]}],\"options\":{\"all_solutions\":true}",
    };
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
        snprintf(body, sizeof body, "{\"chain\":%s,%s}", chain, rest[i]);
        ck_assert_msg(same_as_oracle_str(body), "request %zu was rejected", i);
    }
}
END_TEST

START_TEST(test_every_kind)
{
    for (size_t i = 0; i < sizeof REQUESTS / sizeof REQUESTS[0]; i++)
        ck_assert_msg(same_as_oracle_str(REQUESTS[i]), "request %zu was rejected", i);
}
END_TEST

/* ---- non-finite numbers in a result ---------------------------------------- */

/* The solvers promise finite answers; should a non-finite number ever come
 * out, the result is answered as a failure (MoveIt's FAILURE, 99999) whose
 * reason names the member, never with the member silently left out. Each
 * member of each request's last result gets a NaN or an infinity in turn;
 * both encoders must agree with the oracle, and the other results of a
 * batch keep their answers. */
typedef struct poke {
    const char *member;
    double *at;
} poke;

static size_t pokes_of(proto_job *job, size_t i, poke *p)
{
    proto_result *r = &job->results[i];
    bool skel = job->chain->skel != NULL; /* skeletons and trees of bones */
    size_t n = 0;
    if (job->dof)
        p[n++] = (poke){"joints", &r->q[job->dof - 1]};
    if (job->npos)
        p[n++] = (poke){"positions", &r->positions[job->npos / 2].y};
    if (job->nrot && !skel)
        p[n++] = (poke){"rotations", &r->rotations[0].z};
    if (job->nrot)
        p[n++] = (poke){skel ? "rotations" : "local_rotations", &r->local[job->nrot - 1].w};
    if (r->has_tip)
        p[n++] = (poke){"tip", &r->tip.p.x};
    if (r->has_tip)
        p[n++] = (poke){"tip", &r->tip.q.y};
    for (size_t k = 0; k < job->ntips; k++) {
        p[n++] = (poke){"tips", k ? &r->tips[k].pose.q.w : &r->tips[k].pose.p.z};
        if (r->tips[k].checked)
            p[n++] = (poke){"tips", &r->tips[k].pos_err};
    }
    p[n++] = (poke){"position_error", &r->pos_err};
    if (r->rot_err >= 0)
        p[n++] = (poke){"orientation_error", &r->rot_err};
    p[n++] = (poke){"time_ms", &r->time_s};
    return n;
}

static void check_non_finite(const char *body)
{
    proto_job *job = NULL;
    proto_error err;
    proto_kind kind = PROTO_SOLVE;
    size_t len = strlen(body);
    if (proto_job_decode(body, len, kind, NULL, NULL, NULL, &job, &err)) {
        kind = PROTO_BATCH;
        ck_assert_int_eq(proto_job_decode(body, len, kind, NULL, NULL, NULL, &job, &err), 0);
    }
    size_t n = proto_job_count(job), last = n - 1;
    proto_job_run(job, 0, n);
    if (job->results[last].status == IK_EINVAL || job->results[last].status == IK_ENOSPC) {
        proto_job_free(job);
        return;
    }
    char *before = proto_job_encode(job, NULL);
    json_t *b = json_loads(before, 0, NULL);
    ck_assert_ptr_nonnull(b);
    poke p[32];
    size_t np = pokes_of(job, last, p);
    static const double bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < np; k++) {
        for (size_t v = 0; v < 3; v++) {
            /* a negative orientation error means "not applicable" */
            if (p[k].at == &job->results[last].rot_err && bad[v] < 0)
                continue;
            double keep = *p[k].at;
            *p[k].at = bad[v];
            size_t elen;
            char *got = proto_job_encode(job, &elen);
            json_t *t = oracle_tree(job);
            char *want = json_dumps(t, JSON_COMPACT | JSON_REAL_PRECISION(17));
            char *again = pc_reprint17(got, false);
            ck_assert_msg(again && strcmp(again, want) == 0,
                          "%s with %s = %g:\n got  %s\n want %s", body, p[k].member, bad[v], got,
                          want);
            free(again);
            json_t *a = json_loads(got, 0, NULL);
            ck_assert_msg(a != NULL, "not JSON: %s", got);
            json_t *r = kind == PROTO_SOLVE ? a
                                            : json_array_get(json_object_get(a, "results"), last);
            char reason[64];
            snprintf(reason, sizeof reason, "non_finite_%s", p[k].member);
            ck_assert_msg(strcmp(json_string_value(json_object_get(r, "status")), "failure") == 0,
                          "%s with %s = %g: %s", body, p[k].member, bad[v], got);
            ck_assert_int_eq(json_integer_value(json_object_get(r, "code")), 99999);
            ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), reason);
            /* no numbers of the pose: a failure carries none, as an
             * invalid goal does; the work counters and the time stay */
            static const char *const gone[] = {"joints", "positions", "rotations",
                                               "local_rotations", "tip", "tips",
                                               "position_error", "orientation_error", NULL};
            for (size_t g = 0; gone[g]; g++)
                ck_assert_msg(json_object_get(r, gone[g]) == NULL, "%s still in %s", gone[g], got);
            ck_assert(json_is_integer(json_object_get(r, "iterations")));
            ck_assert(json_is_integer(json_object_get(r, "restarts")));
            ck_assert(json_is_number(json_object_get(r, "time_ms")));
            /* the tree form and a stream solution say the same */
            json_t *tr = oracle_result_json(job, last);
            ck_assert_str_eq(json_string_value(json_object_get(tr, "reason")), reason);
            char *s1 = oracle_stream_solution("s", 1, 0, tr, 0, 0, &elen);
            char *s2 = proto_stream_encode_job_solution("s", 1, 0, job, last, 0, 0, &elen);
            ck_assert_str_eq(s1, s2);
            free(s1);
            free(s2);
            json_decref(tr);
            if (kind == PROTO_BATCH) {
                /* the others are answered as before (time aside), and
                 * counted */
                json_t *counts = json_object_get(a, "counts");
                json_int_t other = json_integer_value(json_object_get(counts, "other"));
                json_int_t other0 =
                    json_integer_value(json_object_get(json_object_get(b, "counts"), "other"));
                const char *w0 = json_string_value(json_object_get(
                    json_array_get(json_object_get(b, "results"), last), "status"));
                ck_assert_int_eq(other, other0 + (strcmp(w0, "failure") != 0));
                for (size_t i = 0; i < last; i++) {
                    json_t *x = json_array_get(json_object_get(a, "results"), i);
                    json_t *y = json_array_get(json_object_get(b, "results"), i);
                    json_object_del(x, "time_ms");
                    json_object_del(y, "time_ms");
                    ck_assert(json_equal(x, y));
                }
            }
            json_decref(a);
            json_decref(t);
            free(got);
            free(want);
            *p[k].at = keep;
        }
    }
    /* restored: answered as before */
    char *after = proto_job_encode(job, NULL);
    ck_assert_str_eq(after, before);
    free(after);
    free(before);
    json_decref(b);
    proto_job_free(job);
}


/* ---- options.fields and options.digits ------------------------------------ */

/* Every number of want (a value of the default answer, shortest digits:
 * the exact double) rounded by the C library to k digits (%.*e, read
 * back) equals the number at the same place in got; the same shape
 * otherwise. */
static void same_rounded(const json_t *got, const json_t *want, int k, const char *where)
{
    if (json_is_real(want)) {
        char t[64];
        snprintf(t, sizeof t, "%.*e", k - 1, json_real_value(want));
        ck_assert_msg(json_is_real(got) && json_real_value(got) == strtod(t, NULL),
                      "%s: %.17g at %d digits is %s", where, json_real_value(want), k, t);
    } else if (json_is_array(want)) {
        ck_assert_msg(json_is_array(got) && json_array_size(got) == json_array_size(want), "%s",
                      where);
        for (size_t i = 0; i < json_array_size(want); i++)
            same_rounded(json_array_get(got, i), json_array_get(want, i), k, where);
    } else if (json_is_object(want)) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)want, key, v)
        {
            ck_assert_msg(json_object_get(got, key), "%s: %s missing", where, key);
            same_rounded(json_object_get(got, key), v, k, where);
        }
    } else {
        ck_assert_msg(json_equal(got, want), "%s", where);
    }
}

/* The answer of req with options.fields and options.digits set (fields
 * NULL: not set; digits 0: not set), parsed; the direct text checked
 * against the tree form on the way. */
static json_t *answer_with(const char *req, const char *fields, int digits)
{
    json_t *r = json_loads(req, 0, NULL);
    ck_assert_ptr_nonnull(r);
    json_t *o = json_object_get(r, "options");
    if (!o) {
        o = json_object();
        json_object_set_new(r, "options", o);
    }
    if (fields)
        json_object_set_new(o, "fields", json_loads(fields, 0, NULL));
    if (digits)
        json_object_set_new(o, "digits", json_integer(digits));
    char *body = json_dumps(r, JSON_COMPACT);
    proto_kind kind = json_object_get(r, "targets") ? PROTO_BATCH : PROTO_SOLVE;
    json_decref(r);
    ck_assert_msg(same_as_oracle_str(body), "rejected: %s", body);
    proto_job *job = NULL;
    proto_error err;
    ck_assert_int_eq(proto_job_decode(body, strlen(body), kind, NULL, NULL, NULL, &job, &err), 0);
    proto_job_run(job, 0, proto_job_count(job));
    char *text = proto_job_encode(job, NULL);
    json_t *a = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(a);
    free(text);
    free(body);
    proto_job_free(job);
    return a;
}

/* The members of one result, against the default answer's result d:
 * exactly "status" and the members of fields that d has (fields NULL:
 * all of d's), each number rounded to digits (solver-dependent counters
 * and times only present). */
static void check_result(const json_t *g, const json_t *d, const json_t *fields, int digits,
                         bool exact, const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)d, key, v)
    {
        bool want = !fields || strcmp(key, "status") == 0;
        for (size_t i = 0; fields && i < json_array_size(fields); i++)
            want |= strcmp(json_string_value(json_array_get(fields, i)), key) == 0;
        json_t *gv = json_object_get(g, key);
        ck_assert_msg(!gv == !want, "%s: member %s %s", where, key,
                      want ? "missing" : "not asked for");
        if (!gv || strcmp(key, "time_ms") == 0 || !exact)
            continue;
        if (digits)
            same_rounded(gv, v, digits, where);
        else
            ck_assert_msg(json_equal(gv, v), "%s: %s differs", where, key);
    }
    json_object_foreach((json_t *)g, key, v)
        ck_assert_msg(json_object_get(d, key), "%s: extra member %s", where, key);
}

START_TEST(test_fields_and_digits)
{
    static const struct {
        const char *fields;
        int digits;
    } asks[] = {
        {"[\"joints\"]", 0},
        {"[\"local_rotations\"]", 6},
        {"[\"status\",\"positions\",\"rotations\"]", 9},
        {"[]", 0},
        {NULL, 3},
        {NULL, 17},
        {"[\"code\",\"reason\",\"tip\",\"position_error\",\"orientation_error\",\"iterations\","
         "\"restarts\",\"time_ms\",\"joints\"]",
         1},
        {"[\"positions\",\"local_rotations\",\"joints\"]", 15},
        {"[\"tips\",\"joints\"]", 5},
    };
    static const char *const top[] = {"chain_id",    "solver",     "units",    "frame", "count",
                                      "counts",      "joint_names", "bone_names", "tip_names"};
    for (size_t i = 0; i < sizeof REQUESTS / sizeof REQUESTS[0]; i++) {
        json_t *d = answer_with(REQUESTS[i], NULL, 0);
        /* the numeric solver may stop at another iteration under load */
        bool exact = strcmp(json_string_value(json_object_get(d, "solver")), "numeric") != 0;
        for (size_t a = 0; a < sizeof asks / sizeof asks[0]; a++) {
            char where[96];
            snprintf(where, sizeof where, "request %zu, ask %zu", i, a);
            json_t *g = answer_with(REQUESTS[i], asks[a].fields, asks[a].digits);
            json_t *fields = asks[a].fields ? json_loads(asks[a].fields, 0, NULL) : NULL;
            for (size_t t = 0; t < sizeof top / sizeof top[0]; t++) /* unchanged */
                ck_assert_msg(json_equal(json_object_get(g, top[t]), json_object_get(d, top[t])) ||
                                  (!json_object_get(g, top[t]) && !json_object_get(d, top[t])),
                              "%s: %s", where, top[t]);
            json_t *gr = json_object_get(g, "results"), *dr = json_object_get(d, "results");
            if (dr) {
                ck_assert_uint_eq(json_array_size(gr), json_array_size(dr));
                for (size_t k = 0; k < json_array_size(dr); k++)
                    check_result(json_array_get(gr, k), json_array_get(dr, k), fields,
                                 asks[a].digits, exact, where);
            } else {
                json_t *gc = json_deep_copy(g), *dc = json_deep_copy(d);
                for (size_t t = 0; t < sizeof top / sizeof top[0]; t++) {
                    json_object_del(gc, top[t]);
                    json_object_del(dc, top[t]);
                }
                check_result(gc, dc, fields, asks[a].digits, exact, where);
                json_decref(gc);
                json_decref(dc);
            }
            json_decref(fields);
            json_decref(g);
        }
        json_decref(d);
    }
}
END_TEST

/* options.fields and options.digits refused with their paths. */
START_TEST(test_fields_and_digits_errors)
{
    static const struct {
        const char *options, *path;
    } bad[] = {
        {"{\"fields\":[\"joints\",\"elbow\"]}", "/options/fields/1"},
        {"{\"fields\":\"joints\"}", "/options/fields"},
        {"{\"fields\":[3]}", "/options/fields/0"},
        {"{\"digits\":0}", "/options/digits"},
        {"{\"digits\":18}", "/options/digits"},
        {"{\"digits\":6.5}", "/options/digits"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1,0]]},"
                 "\"target\":{\"position\":[0.3,0.6,0.2]},\"options\":%s}",
                 bad[i].options);
        proto_job *job = NULL;
        proto_error err;
        ck_assert_int_eq(
            proto_job_decode(body, strlen(body), PROTO_SOLVE, NULL, NULL, NULL, &job, &err), -1);
        ck_assert_msg(strcmp(err.path, bad[i].path) == 0, "%s: path %s, not %s (%s)",
                      bad[i].options, err.path, bad[i].path, err.message);
        ck_assert_int_eq(err.code, PROTO_E_INVALID_REQUEST);
    }
}
END_TEST

START_TEST(test_non_finite_results)
{
    for (size_t i = 0; i < sizeof REQUESTS / sizeof REQUESTS[0]; i++)
        check_non_finite(REQUESTS[i]);
}
END_TEST

/* In [-1, 1). */
static double rnd(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*x >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

/* Random two-bone chains and targets (reachable or not, poles or not) in
 * random frames and units: numbers of every usual magnitude in the text. */
START_TEST(test_random_two_bone)
{
    static const char *const frames[] = {"ros", "unity", "unreal"};
    uint64_t x = 0x853c49e6748fea9bull;
    for (int i = 0; i < 300; i++) {
        double r[12];
        for (int k = 0; k < 12; k++)
            r[k] = rnd(&x);
        char body[1024];
        double s = i % 3 == 0 ? 1e-3 : i % 3 == 1 ? 1.0 : 100.0;
        snprintf(body, sizeof body,
                 "{\"chain\":{\"kind\":\"bones\",\"positions\":[[%.17g,%.17g,%.17g],"
                 "[%.17g,%.17g,%.17g],[%.17g,%.17g,%.17g]]},\"target\":{\"position\":"
                 "[%.17g,%.17g,%.17g]%s},\"options\":{\"frame\":\"%s\",\"units\":\"%s\"}}",
                 s * r[0], s * r[1], s * r[2], s * (1 + r[3]), s * (2 + r[4]), s * r[5],
                 s * (3 + r[6]), s * (1 + r[7]), s * (2 + r[8]), 2 * s * r[9], 2 * s * r[10],
                 2 * s * r[11], i % 2 ? ",\"pole\":[0.3,-1,0.2]" : "", frames[i % 3],
                 i % 4 ? "radians" : "degrees");
        ck_assert_msg(same_as_oracle_str(body), "rejected: %s", body);
    }
}
END_TEST

/* A batch whose job keeps the results of 2 ranges of `per` targets only
 * (proto_job_limit_results), run and encoded as a streamed batch is (a
 * range runs while the one before it waits to be encoded, so that the
 * places are reused): the same text as the whole batch with every result
 * kept. The answers leave time_ms out, which differs from run to run. */
static void check_limited(const char *body, size_t per)
{
    proto_job *whole = NULL, *job = NULL;
    proto_error err;
    size_t len = strlen(body);
    ck_assert_int_eq(proto_job_decode(body, len, PROTO_BATCH, NULL, NULL, NULL, &whole, &err), 0);
    ck_assert_int_eq(proto_job_decode(body, len, PROTO_BATCH, NULL, NULL, NULL, &job, &err), 0);
    size_t n = proto_job_count(job);
    ck_assert_int_eq(proto_job_limit_results(job, 2 * per), 0);
    ck_assert_uint_eq(job->slots, 2 * per < n ? 2 * per : n);
    proto_job_run(whole, 0, n);
    size_t wl;
    char *want = proto_job_encode(whole, &wl);
    size_t counts[PROTO_COUNT_BUCKETS] = {0}, l;
    char *got = proto_job_encode_head(job, &l);
    size_t gl = l;
    proto_job_run(job, 0, per);
    for (size_t b = 0; b < n; b += per) {
        proto_job_run(job, b + per, b + 2 * per); /* the next range, in the other places */
        char *p = proto_job_encode_results(job, b, b + per, counts, &l);
        got = realloc(got, gl + l + 1);
        memcpy(got + gl, p, l + 1);
        gl += l;
        free(p);
    }
    char *t = proto_job_encode_tail(job, counts, &l);
    got = realloc(got, gl + l + 1);
    memcpy(got + gl, t, l + 1);
    ck_assert_msg(strcmp(got, want) == 0, "%s:\n got  %s\n want %s", body, got, want);
    free(t);
    free(got);
    free(want);
    proto_job_free(job);
    proto_job_free(whole);
}

START_TEST(test_limited_results)
{
    static const char *const fields =
        "\"fields\":[\"code\",\"reason\",\"joints\",\"positions\",\"rotations\","
        "\"local_rotations\",\"tip\",\"position_error\",\"orientation_error\","
        "\"iterations\",\"restarts\"]";
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char *body = malloc(1 << 16);
    ck_assert_ptr_nonnull(body);
    /* two-bone: 101 targets, some out of reach */
    int o = snprintf(body, 1 << 16, "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,0],"
                                    "[0,0.5,0],[0,1,0]]},\"options\":{%s},\"targets\":[",
                     fields);
    for (int i = 0; i < 101; i++)
        o += snprintf(body + o, (size_t)(1 << 16) - (size_t)o, "%s{\"position\":[%.6f,%.6f,%.6f]}",
                      i ? "," : "", 1.2 * rnd(&x), 1.2 * rnd(&x), 1.2 * rnd(&x));
    snprintf(body + o, (size_t)(1 << 16) - (size_t)o, "]}");
    for (size_t per = 1; per <= 40; per += 13)
        check_limited(body, per);
    /* numeric: joints, tip and errors; seeded */
    o = snprintf(body, 1 << 16,
                 "{\"chain\":{\"kind\":\"planar\",\"lengths\":[1,0.75,0.5]},\"options\":"
                 "{\"timeout_ms\":50,%s},\"targets\":[",
                 fields);
    for (int i = 0; i < 37; i++)
        o += snprintf(body + o, (size_t)(1 << 16) - (size_t)o, "%s{\"position\":[%.6f,%.6f]}",
                      i ? "," : "", 1.5 * rnd(&x), 1.5 * rnd(&x));
    snprintf(body + o, (size_t)(1 << 16) - (size_t)o, "]}");
    check_limited(body, 5);
    free(body);
}
END_TEST

/* Every accepted request among the shared fixtures (when they are there). */
START_TEST(test_fixture_requests)
{
    DIR *d = opendir("tests/fixtures");
    if (!d)
        return;
    struct dirent *e;
    int accepted = 0;
    while ((e = readdir(d))) {
        const char *suffix = ".request.json";
        size_t n = strlen(e->d_name), k = strlen(suffix);
        if (n <= k || strcmp(e->d_name + n - k, suffix) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fixtures/%s", e->d_name);
        size_t len;
        char *body = pc_read_file(path, &len);
        if (!body)
            continue;
        accepted += same_as_oracle(body, len, path);
        free(body);
    }
    closedir(d);
    ck_assert_int_gt(accepted, 0);
}
END_TEST

/* A URDF chain from the shared robots, when IKD_DATA has them. */
START_TEST(test_urdf_chain)
{
    const char *data = getenv("IKD_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/robots/ur5.urdf", data ? data : "tests/data");
    size_t len;
    char *xml = pc_read_file(path, &len);
    if (!xml)
        return;
    json_t *req = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[f,f,f], s:[f,f,f,f]}, s:{s:f}}",
                            "chain", "kind", "urdf", "urdf", xml, "base", "base_link", "tip",
                            "tool0", "target", "position", 0.4, 0.1, 0.3, "orientation", 0.0,
                            1.0, 0.0, 0.0, "options", "timeout_ms", 20.0);
    free(xml);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    ck_assert(same_as_oracle_str(body));
    free(body);
}
END_TEST

/* ---- chain ids ------------------------------------------------------------ */

static json_t *reals(const json_t *v)
{
    if (json_is_integer(v))
        return json_real((double)json_integer_value(v));
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, reals(json_array_get(v, i)));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e)
        json_object_set_new(o, k, reals(e));
        return o;
    }
    return json_deep_copy(v);
}

static void oracle_id(const json_t *chain, char out[PROTO_ID_HEX + 1])
{
    json_t *r = reals(chain);
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(r);
    ck_assert_ptr_nonnull(text);
    struct sha256_ctx ctx;
    uint8_t dg[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(text), (const uint8_t *)text);
    sha256_digest(&ctx, sizeof dg, dg);
    free(text);
    for (int i = 0; i < PROTO_ID_HEX / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", dg[i]);
}

START_TEST(test_chain_ids)
{
    for (size_t i = 0; i < sizeof REQUESTS / sizeof REQUESTS[0]; i++) {
        json_t *req = json_loads(REQUESTS[i], 0, NULL);
        ck_assert_ptr_nonnull(req);
        json_t *jc = json_object_get(req, "chain");
        proto_error err;
        proto_chain *c = proto_chain_decode_json(jc, "/chain", NULL, &err);
        ck_assert_ptr_nonnull(c);
        char want[PROTO_ID_HEX + 1];
        oracle_id(jc, want);
        ck_assert_str_eq(proto_chain_id(c), want);
        /* the same id through a job, whatever the rest of the request */
        proto_job *job;
        ck_assert_int_eq(proto_job_decode(REQUESTS[i], strlen(REQUESTS[i]),
                                          json_object_get(req, "targets") ? PROTO_BATCH
                                                                          : PROTO_SOLVE,
                                          NULL, NULL, NULL, &job, &err),
                         0);
        ck_assert_str_eq(proto_chain_id(job->chain), want);
        proto_job_free(job);
        proto_chain_unref(c);
        json_decref(req);
    }
    /* pinned: ids must never change between versions (clients keep them) */
    static const struct {
        const char *chain, *id;
    } pinned[] = {
        {"{\"kind\":\"bones\",\"positions\":[[0,0,0],[0,0.5,0],[0,1.0,0]]}",
         "92914bccf49cb4b9f68575cd486bac0b"},
        {"{\"positions\":[[0.0,0,0],[0,0.5,0.0],[0,1,0]],\"kind\":\"bones\"}",
         "92914bccf49cb4b9f68575cd486bac0b"},
    };
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        proto_error err;
        proto_chain *c =
            proto_chain_decode(pinned[i].chain, strlen(pinned[i].chain), NULL, &err);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(proto_chain_id(c), pinned[i].id);
        proto_chain_unref(c);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_encode");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_kind);
    tcase_add_test(tc, test_fields_and_digits);
    tcase_add_test(tc, test_fields_and_digits_errors);
    tcase_add_test(tc, test_closed_answers);
    tcase_add_test(tc, test_non_finite_results);
    tcase_add_test(tc, test_random_two_bone);
    tcase_add_test(tc, test_limited_results);
    tcase_add_test(tc, test_fixture_requests);
    tcase_add_test(tc, test_urdf_chain);
    tcase_add_test(tc, test_chain_ids);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

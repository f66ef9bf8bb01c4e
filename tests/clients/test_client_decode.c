/*
 * test_client_decode.c: libikdclient's reading and writing, without a
 * daemon (clients/c/lib/json.c, decode.c, encode.c, copy.c, handshake.c,
 * error.c).
 *
 *   - Every answer ikd documents decodes, and every number lands in its
 *     struct member bit for bit as jansson reads it (a differential check of
 *     the client's own number reader): the solve and batch response files
 *     of tests/fixtures/, the chain descriptions, the error answers, and the
 *     server messages of proto/STREAM.md (solutions, ticks with per-stream
 *     errors, errors). A result member ikd sends that ikd_result has no
 *     place for fails the test, so the struct keeps up with the wire.
 *   - Numbers: the reader against strtod on literals of every form (and the
 *     fast path's edges); the writer's text reads back as the same double,
 *     for random bit patterns and for short decimals (which must come out
 *     short).
 *   - Malformed text: a catalogue of broken messages and every truncation
 *     of a tick answer are refused as IKD_E_BAD_ANSWER, never read half.
 *   - What the client sends: NaN members named, caller JSON checked, stream
 *     names checked; the upgrade answer's checks (101, Accept, refusals).
 *   - The error table: every wire code of proto/proto_error.h is known to
 *     the client under the same word, and the codes are distinct.
 *   - Copies of results and ticks equal their originals and own their bytes.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/c/lib/conn.h"
#include "proto/proto_error.h"
#include "tests/clients/tick_answer.h"

/* The entries of a tick answer a connection reads at most: its max_streams,
 * 1024 by default. */
#define TICK_MAX 1024

/* ---- helpers ------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return p;
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    ck_assert_msg(v != NULL, "jansson: %s", je.text);
    return v;
}

/* The same double, bit for bit. */
static void same(double got, double want, const char *what)
{
    ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s: %.17g, expected %.17g", what, got,
                  want);
}

static void same_json_number(double got, const json_t *v, const char *what)
{
    ck_assert_msg(json_is_number(v), "%s is not a number in the reference", what);
    same(got, json_number_value(v), what);
}

/* rows: an array of arrays of numbers, against flat values of width w */
static void same_rows(const double *flat, size_t rows, size_t w, const json_t *ref,
                      const char *what)
{
    ck_assert_msg(json_is_array(ref), "%s", what);
    ck_assert_uint_eq(rows, json_array_size(ref));
    for (size_t i = 0; i < rows; i++) {
        const json_t *row = json_array_get(ref, i);
        ck_assert_uint_eq(w, json_array_size(row));
        for (size_t k = 0; k < w; k++)
            same_json_number(flat[i * w + k], json_array_get(row, k), what);
    }
}

static void same_string(const char *got, const json_t *ref, const char *what)
{
    ck_assert_msg(json_is_string(ref), "%s", what);
    ck_assert_msg(got && strcmp(got, json_string_value(ref)) == 0, "%s: \"%s\", expected \"%s\"",
                  what, got ? got : "(null)", json_string_value(ref));
}

/* Every member of the reference result object is in r, equal. */
static void check_result(const ikd_result *r, const json_t *ref)
{
    const char *k;
    const json_t *v;
    unsigned seen = 0;
    json_object_foreach((json_t *)ref, k, v)
    {
        if (strcmp(k, "status") == 0) {
            same_string(r->status_text, v, k);
            ck_assert_int_ne(r->status, IKD_STATUS_OTHER);
        } else if (strcmp(k, "code") == 0) {
            ck_assert_int_eq(r->code, json_integer_value(v));
            seen |= IKD_HAS_CODE;
        } else if (strcmp(k, "reason") == 0) {
            same_string(r->reason, v, k);
            seen |= IKD_HAS_REASON;
        } else if (strcmp(k, "cause") == 0) {
            same_string(r->cause, v, k);
            seen |= IKD_HAS_CAUSE;
        } else if (strcmp(k, "joints") == 0) {
            ck_assert_uint_eq(r->joint_count, json_array_size(v));
            for (size_t i = 0; i < r->joint_count; i++)
                same_json_number(r->joints[i], json_array_get(v, i), k);
            seen |= IKD_HAS_JOINTS;
        } else if (strcmp(k, "positions") == 0) {
            same_rows(r->positions, r->position_count, (size_t)r->position_dim, v, k);
            seen |= IKD_HAS_POSITIONS;
        } else if (strcmp(k, "rotations") == 0) {
            same_rows(r->rotations, r->rotation_count, 4, v, k);
            seen |= IKD_HAS_ROTATIONS;
        } else if (strcmp(k, "local_rotations") == 0) {
            same_rows(r->local_rotations, r->local_rotation_count, 4, v, k);
            seen |= IKD_HAS_LOCAL_ROTATIONS;
        } else if (strcmp(k, "tip") == 0) {
            for (int i = 0; i < 3; i++)
                same_json_number(r->tip_position[i],
                                 json_array_get(json_object_get(v, "position"), (size_t)i),
                                 "tip.position");
            for (int i = 0; i < 4; i++)
                same_json_number(r->tip_orientation[i],
                                 json_array_get(json_object_get(v, "orientation"), (size_t)i),
                                 "tip.orientation");
            seen |= IKD_HAS_TIP;
        } else if (strcmp(k, "tips") == 0) {
            ck_assert_uint_eq(r->tip_count, json_array_size(v));
            for (size_t i = 0; i < r->tip_count; i++) {
                const json_t *t = json_array_get(v, i);
                const ikd_tip *tp = &r->tips[i];
                for (int a = 0; a < 3; a++)
                    same_json_number(tp->position[a],
                                     json_array_get(json_object_get(t, "position"), (size_t)a),
                                     "tips.position");
                for (int a = 0; a < 4; a++)
                    same_json_number(tp->orientation[a],
                                     json_array_get(json_object_get(t, "orientation"), (size_t)a),
                                     "tips.orientation");
                ck_assert_int_eq(!!(tp->has & IKD_HAS_STATUS),
                                 json_object_get(t, "status") != NULL);
                if (json_object_get(t, "code"))
                    ck_assert_int_eq(tp->code, json_integer_value(json_object_get(t, "code")));
                if (json_object_get(t, "position_error"))
                    same_json_number(tp->position_error, json_object_get(t, "position_error"),
                                     "tips.position_error");
                if (json_object_get(t, "orientation_error"))
                    same_json_number(tp->orientation_error, json_object_get(t, "orientation_error"),
                                     "tips.orientation_error");
            }
            seen |= IKD_HAS_TIPS;
        } else if (strcmp(k, "position_error") == 0) {
            same_json_number(r->position_error, v, k);
            seen |= IKD_HAS_POSITION_ERROR;
        } else if (strcmp(k, "orientation_error") == 0) {
            same_json_number(r->orientation_error, v, k);
            seen |= IKD_HAS_ORIENTATION_ERROR;
        } else if (strcmp(k, "max_joint_step") == 0) {
            same_json_number(r->max_joint_step, v, k);
            seen |= IKD_HAS_MAX_JOINT_STEP;
        } else if (strcmp(k, "arrived") == 0) {
            ck_assert_int_eq(r->arrived, json_is_true(v));
            seen |= IKD_HAS_ARRIVED;
        } else if (strcmp(k, "solutions") == 0) {
            same_rows(r->solutions, r->solution_list_count, r->solution_width, v, k);
            seen |= IKD_HAS_SOLUTIONS;
        } else if (strcmp(k, "solution_count") == 0) {
            ck_assert_int_eq(r->solution_count, json_integer_value(v));
            seen |= IKD_HAS_SOLUTION_COUNT;
        } else if (strcmp(k, "iterations") == 0) {
            ck_assert_int_eq(r->iterations, json_integer_value(v));
            seen |= IKD_HAS_ITERATIONS;
        } else if (strcmp(k, "restarts") == 0) {
            ck_assert_int_eq(r->restarts, json_integer_value(v));
            seen |= IKD_HAS_RESTARTS;
        } else if (strcmp(k, "time_ms") == 0) {
            same_json_number(r->time_ms, v, k);
            seen |= IKD_HAS_TIME_MS;
        } else {
            ck_abort_msg("ikd_result has no member for \"%s\"", k);
        }
    }
    ck_assert_uint_eq(r->has, seen);
}

static const char *const answer_keys[] = {"chain_id",    "solver",     "units",     "frame",
                                          "joint_names", "bone_names", "tip_names", "count",
                                          "results",     "counts",     NULL};

static bool is_answer_key(const char *k)
{
    for (int i = 0; answer_keys[i]; i++)
        if (strcmp(k, answer_keys[i]) == 0)
            return true;
    return false;
}

static void check_names(const char *const *names, size_t n, const json_t *ref)
{
    ck_assert_uint_eq(n, json_array_size(ref));
    for (size_t i = 0; i < n; i++)
        same_string(names[i], json_array_get(ref, i), "name");
}

/* ---- fixtures ------------------------------------------------------------ */

START_TEST(fixture_answers_decode_exactly)
{
    static const char *const files[] = {"solve_two_link",      "solve_three_link",
                                        "solve_links3d",       "solve_two_bone",
                                        "solve_skeleton",      "solve_fabrik",
                                        "solve_ccd",           "solve_urdf",
                                        "solve_joints_ros",    "solve_joints_unity",
                                        "solve_joints_unreal", "solve_joints_degrees",
                                        "solve_out_of_reach",  "solve_chain_id",
                                        "solve_closed_all",    "solve_tree_urdf",
                                        "solve_tree_skeleton", "solve_tree_priorities",
                                        "batch_two_bone",      "batch_joints",
                                        "batch_tree",          NULL};
    for (int f = 0; files[f]; f++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/%s.response.json", files[f]);
        size_t len;
        char *text = read_file(path, &len);
        json_t *ref = parse(text);
        ikd__dec d = {0};
        ikd_answer a;
        ikd_error e;
        int rc = ikd__decode_answer(&d, text, len, &a, &e);
        ck_assert_msg(rc == 0, "%s: %s", files[f], e.message);
        same_string(a.chain_id, json_object_get(ref, "chain_id"), "chain_id");
        same_string(a.solver, json_object_get(ref, "solver"), "solver");
        if (json_object_get(ref, "frame"))
            same_string(a.frame, json_object_get(ref, "frame"), "frame");
        else
            ck_assert_ptr_null(a.frame);
        const json_t *names = json_object_get(ref, "joint_names");
        if (!names)
            names = json_object_get(ref, "bone_names");
        if (names)
            check_names(a.joint_names, a.joint_name_count, names);
        if (json_object_get(ref, "tip_names"))
            check_names(a.tip_names, a.tip_name_count, json_object_get(ref, "tip_names"));
        const json_t *results = json_object_get(ref, "results");
        if (results) {
            ck_assert_uint_eq(a.count, json_array_size(results));
            ck_assert_int_eq(a.count, json_integer_value(json_object_get(ref, "count")));
            for (size_t i = 0; i < a.count; i++)
                check_result(&a.results[i], json_array_get(results, i));
            const json_t *counts = json_object_get(ref, "counts");
            ck_assert(a.has_counts);
            ck_assert_int_eq(a.counts_success,
                             json_integer_value(json_object_get(counts, "success")));
            ck_assert_int_eq(a.counts_no_ik_solution,
                             json_integer_value(json_object_get(counts, "no_ik_solution")));
        } else {
            /* a solve: the result's members are the answer's other members */
            json_t *only = json_object();
            const char *k;
            json_t *v;
            json_object_foreach(ref, k, v) if (!is_answer_key(k)) json_object_set(only, k, v);
            ck_assert_uint_eq(a.count, 1);
            check_result(&a.results[0], only);
            json_decref(only);
        }
        ikd__dec_free(&d);
        json_decref(ref);
        free(text);
    }
}
END_TEST

START_TEST(fixture_chain_descriptions)
{
    static const char *const files[] = {"chain_urdf", "chain_tree", "chain_joints6", NULL};
    for (int f = 0; files[f]; f++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/%s.response.json", files[f]);
        size_t len;
        char *text = read_file(path, &len);
        json_t *ref = parse(text);
        ikd__dec d = {0};
        ikd_chain_info c;
        ikd_error e;
        ck_assert_msg(ikd__decode_chain_info(&d, text, len, &c, &e) == 0, "%s", e.message);
        same_string(c.id, json_object_get(ref, "id"), "id");
        same_string(c.kind, json_object_get(ref, "kind"), "kind");
        ck_assert_int_eq(c.dof, json_integer_value(json_object_get(ref, "dof")));
        check_names(c.joint_names, c.joint_count, json_object_get(ref, "joint_names"));
        check_names(c.solvers, c.solver_count, json_object_get(ref, "solvers"));
        const json_t *joints = json_object_get(ref, "joints");
        for (size_t i = 0; i < json_array_size(joints); i++) {
            const json_t *j = json_array_get(joints, i);
            same_string(c.joints[i].type, json_object_get(j, "type"), "type");
            if (json_object_get(j, "lower")) {
                ck_assert(c.joints[i].has_limits);
                same_json_number(c.joints[i].lower, json_object_get(j, "lower"), "lower");
                same_json_number(c.joints[i].upper, json_object_get(j, "upper"), "upper");
            }
        }
        const json_t *cf = json_object_get(ref, "closed_form");
        if (cf)
            same_string(c.closed_form, json_object_get(cf, "family"), "closed_form.family");
        ck_assert_int_eq(c.memory_bytes, json_integer_value(json_object_get(ref, "memory_bytes")));
        ck_assert_ptr_eq(c.text, text);
        ikd__dec_free(&d);
        json_decref(ref);
        free(text);
    }
}
END_TEST

START_TEST(fixture_errors)
{
    static const char *const files[] = {"error_invalid_json",
                                        "error_unknown_field",
                                        "error_unknown_chain",
                                        "error_too_many_targets",
                                        "error_zero_length_link",
                                        "error_urdf_not_serial",
                                        NULL};
    for (int f = 0; files[f]; f++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/%s.response.json", files[f]);
        size_t len;
        char *text = read_file(path, &len);
        json_t *root = parse(text);
        json_t *ref = json_object_get(root, "error");
        ikd_error e;
        int rc = ikd__decode_http_error(text, len, 400, &e);
        same_string(e.wire_code, json_object_get(ref, "code"), "code");
        ck_assert_int_eq(rc,
                         ikd_errcode_from_wire(json_string_value(json_object_get(ref, "code"))));
        ck_assert_int_ne(rc, IKD_E_SERVER);
        same_string(e.message, json_object_get(ref, "message"), "message");
        same_string(e.path, json_object_get(ref, "path"), "path");
        ck_assert_int_eq(e.http_status, 400);
        json_decref(root);
        free(text);
    }
    /* not an error object: said with the status, the text quoted no
     * further than its length (fuzz_client found the read past it; here
     * in an allocation of exactly its size, for AddressSanitizer) */
    ikd_error e;
    char *raw = malloc(24);
    memcpy(raw, "<html>bad gateway</html>", 24);
    ck_assert_int_eq(ikd__decode_http_error(raw, 24, 502, &e), IKD_E_HTTP);
    ck_assert_ptr_nonnull(strstr(e.message, "502"));
    ck_assert_ptr_nonnull(strstr(e.message, "bad gateway</html>"));
    free(raw);
}
END_TEST

/* The server messages of proto/STREAM.md. */
START_TEST(stream_md_messages)
{
    char *doc = read_file("proto/STREAM.md", NULL);
    int seen_solution = 0, seen_tick = 0, seen_error = 0, seen_tick_error = 0;
    for (char *p = strstr(doc, "<!-- check: server -->"); p;
         p = strstr(p + 1, "<!-- check: server -->")) {
        char *start = strstr(p, "```json\n") + 8;
        char *end = strstr(start, "\n```");
        size_t len = (size_t)(end - start);
        char *text = strndup(start, len);
        json_t *ref = parse(text);
        ikd__dec d = {0};
        ikd__msg m;
        ikd_error e;
        ck_assert_msg(ikd__decode_message(&d, text, len, TICK_MAX, &m, &e) == 0, "%s: %s", text,
                      e.message);
        same_string(m.type, json_object_get(ref, "type"), "type");
        if (json_object_get(ref, "stream"))
            same_string(m.stream, json_object_get(ref, "stream"), "stream");
        if (json_object_get(ref, "seq"))
            ck_assert_int_eq(m.seq, json_integer_value(json_object_get(ref, "seq")));
        if (strcmp(m.type, "solution") == 0) {
            check_result(&m.result, json_object_get(ref, "result"));
            seen_solution++;
        } else if (strcmp(m.type, "tick_solution") == 0) {
            const json_t *sol = json_object_get(ref, "solutions");
            ck_assert_uint_eq(m.tick.count, json_array_size(sol));
            ck_assert_int_eq(m.tick.seq, m.seq);
            for (size_t i = 0; i < m.tick.count; i++) {
                const json_t *r = json_array_get(sol, i);
                const ikd_tick_entry *te = &m.tick.entries[i];
                same_string(te->stream, json_object_get(r, "stream"), "entry stream");
                ck_assert_int_eq(te->seq, json_integer_value(json_object_get(r, "seq")));
                if (json_object_get(r, "error")) {
                    ck_assert_ptr_null(te->result);
                    const json_t *er = json_object_get(r, "error");
                    same_string(te->error->wire_code, json_object_get(er, "code"), "code");
                    same_string(te->error->path, json_object_get(er, "path"), "path");
                    same_string(te->error->stream, json_object_get(r, "stream"), "error stream");
                    ck_assert(te->error->has_seq);
                    seen_tick_error++;
                } else {
                    ck_assert_ptr_null(te->error);
                    check_result(te->result, json_object_get(r, "result"));
                }
            }
            seen_tick++;
        } else if (strcmp(m.type, "error") == 0) {
            const json_t *er = json_object_get(ref, "error");
            same_string(m.error.wire_code, json_object_get(er, "code"), "code");
            same_string(m.error.message, json_object_get(er, "message"), "message");
            same_string(m.error.path, json_object_get(er, "path"), "path");
            ck_assert_int_eq(m.error.code, ikd_errcode_from_wire(m.error.wire_code));
            seen_error++;
        }
        json_decref(ref);
        ikd__dec_free(&d);
        free(text);
    }
    ck_assert_int_ge(seen_solution, 2);
    ck_assert_int_ge(seen_tick, 2);
    ck_assert_int_ge(seen_tick_error, 2);
    ck_assert_int_ge(seen_error, 1);
    free(doc);
}
END_TEST

/* ---- numbers ------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double read_one(const char *lit)
{
    ikd__arena a = {0};
    ikd__jr r;
    ikd__jr_init(&r, lit, strlen(lit), &a);
    double v = 0;
    ck_assert_msg(ikd__jr_number(&r, &v) == 0, "%s: %s", lit, r.err);
    ck_assert_msg(ikd__jr_end(&r), "%s not read whole", lit);
    ikd__arena_free(&a);
    return v;
}

START_TEST(number_reader_matches_strtod)
{
    static const char *const edge[] = {"0",
                                       "-0",
                                       "0.0",
                                       "1",
                                       "-1",
                                       "0.1",
                                       "0.3",
                                       "1e22",
                                       "1e23",
                                       "-1e-22",
                                       "9007199254740992",
                                       "9007199254740993",
                                       "9007199254740993.0",
                                       "123456789012345678901234567890",
                                       "0.000000000000000000000000000001",
                                       "4.9e-324",
                                       "2.2250738585072014e-308",
                                       "1.7976931348623157e308",
                                       "1e-400",
                                       "0.1000000000000000055511151231257827",
                                       "2.00000000000000000000000000000000000001",
                                       "1234567890123456789",
                                       "12345678901234567890",
                                       "1E5",
                                       "1e+5",
                                       "1.5E-3",
                                       "100000000000000000000000",
                                       "0.50000000000000000000001",
                                       NULL};
    for (int i = 0; edge[i]; i++)
        same(read_one(edge[i]), strtod(edge[i], NULL), edge[i]);
    char buf[64];
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = rng();
        double v;
        if (i % 2) {
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
        } else {
            v = ((double)(bits >> 11) / 9007199254740992.0 - 0.5) * pow(10, (int)(rng() % 12) - 6);
        }
        switch (i % 7) {
        case 0:
            snprintf(buf, sizeof buf, "%.17g", v);
            break;
        case 1:
            snprintf(buf, sizeof buf, "%.6f", v);
            break;
        case 2:
            snprintf(buf, sizeof buf, "%.15g", v);
            break;
        case 3:
            snprintf(buf, sizeof buf, "%.3e", v);
            break;
        case 4:
            snprintf(buf, sizeof buf, "%.9g", v);
            break;
        case 5:
            snprintf(buf, sizeof buf, "%.1f", v);
            break;
        default:
            snprintf(buf, sizeof buf, "%.20f", v);
            break;
        }
        if (strlen(buf) >= sizeof buf - 1 || strchr(buf, 'i') || strchr(buf, 'n'))
            continue;
        same(read_one(buf), strtod(buf, NULL), buf);
    }
}
END_TEST

static void roundtrip(double v)
{
    char buf[48];
    size_t n = ikd__fmt_double(buf, v);
    ck_assert_uint_lt(n, 40);
    buf[n] = '\0';
    same(strtod(buf, NULL), v, buf);
    /* valid JSON: the reader takes it whole */
    same(read_one(buf), v, buf);
}

START_TEST(number_writer_reads_back)
{
    for (int i = 0; i < 50000; i++) {
        uint64_t bits = rng();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (isfinite(v))
            roundtrip(v);
        roundtrip(((double)(bits >> 11) / 9007199254740992.0 - 0.5) * 2e6);
        roundtrip((double)(int64_t)(rng() % 2000001) / 1e6 - 1.0);     /* 6 decimals */
        roundtrip((double)(float)((double)(bits >> 40) / 16777216.0)); /* a float's value */
    }
    static const struct {
        double v;
        const char *text;
    } exact[] = {
        {0.25, "0.25"},         {1.0, "1.0"},      {-0.0, "-0.0"},    {0.0, "0.0"},
        {0.1, "0.1"},           {-2.5, "-2.5"},    {1e-5, "0.00001"}, {123456.789, "123456.789"},
        {0.123457, "0.123457"}, {1e6, "1000000.0"}};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        char buf[48];
        size_t n = ikd__fmt_double(buf, exact[i].v);
        buf[n] = '\0';
        ck_assert_str_eq(buf, exact[i].text);
    }
}
END_TEST

/* ---- malformed text ------------------------------------------------------ */

static int decode_text(const char *text, size_t len, ikd_error *e)
{
    ikd__dec d = {0};
    ikd__msg m;
    int rc = ikd__decode_message(&d, text, len, TICK_MAX, &m, e);
    ikd__dec_free(&d);
    return rc;
}

START_TEST(malformed_messages_refused)
{
    static const char *const bad[] = {
        "",
        "[]",
        "{",
        "{\"type\":\"solution\"",
        "{\"type\":solution}",
        "{\"type\":\"solution\",}",
        "{\"type\":\"solution\" \"stream\":\"a\"}",
        "{\"type\":\"x\"} trailing",
        "{\"stream\":\"a\"}",
        "{\"type\":\"solution\",\"stream\":\"a\",\"seq\":1.5}",
        "{\"type\":\"solution\",\"seq\":01}",
        "{\"type\":\"solution\",\"seq\":-}",
        "{\"type\":\"solution\",\"result\":{\"status\":\"success\",\"joints\":[1,2,]}}",
        "{\"type\":\"solution\",\"result\":{\"status\":\"success\",\"joints\":[1,\"a\"]}}",
        "{\"type\":\"solution\",\"result\":{\"joints\":[1]}}",
        "{\"type\":\"solution\",\"result\":{\"status\":\"success\",\"positions\":[[1,2,3],[1,2]]}}",
        "{\"type\":\"solution\",\"result\":{\"status\":\"success\",\"rotations\":[[1,2,3]]}}",
        "{\"type\":\"solution\",\"result\":{\"status\":\"success\",\"time_ms\":1e400}}",
        "{\"type\":\"a\\q\"}",
        "{\"type\":\"a\\u12\"}",
        "{\"type\":\"a\x01\"}",
        "{\"type\":\"tick_solution\",\"seq\":1,\"solutions\":[{\"stream\":\"a\",\"seq\":1}]}",
        "{\"type\":\"tick_solution\",\"seq\":1,\"solutions\":[{\"seq\":1,\"result\":{\"status\":"
        "\"success\"}}]}",
        "{\"type\":\"error\",\"error\":{\"message\":\"no code\"}}",
        "{\"type\":\"x\",\"deep\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "[[[[["
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{\"type\":\"x\",\"v\":tru}",
        "{\"type\":\"x\",\"v\":nul}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        ikd_error e;
        ck_assert_msg(decode_text(bad[i], strlen(bad[i]), &e) == IKD_E_BAD_ANSWER, "accepted: %s",
                      bad[i]);
        ck_assert_msg(strstr(e.message, "byte") != NULL, "no offset in: %s", e.message);
    }
    /* every truncation of a tick answer */
    const char *tick =
        "{\"type\":\"tick_solution\",\"seq\":120,\"skipped\":0,\"solutions\":[{\"stream\":"
        "\"c1\",\"seq\":120,\"skipped\":0,\"result\":{\"status\":\"success\","
        "\"local_rotations\":[[-0.194492,0.0648307,-0.0432205,0.977805]]}},{"
        "\"stream\":\"c3\",\"seq\":121,\"error\":{\"code\":\"unknown_stream\","
        "\"message\":\"no stream \\\"c3\\\"\",\"path\":\"/targets/2/stream\"}}]}";
    size_t n = strlen(tick);
    ikd_error e;
    ck_assert_int_eq(decode_text(tick, n, &e), 0);
    for (size_t k = 0; k < n; k++) {
        char *cut = malloc(k ? k : 1); /* exactly k bytes: a read past them is ASan's */
        memcpy(cut, tick, k);
        ck_assert_msg(decode_text(cut, k, &e) == IKD_E_BAD_ANSWER, "accepted %zu bytes", k);
        free(cut);
    }
}
END_TEST

/* ikd's error for a tick target whose stream is not a valid name has no
 * "stream" (and no "seq" when that was unreadable): the entry is still an
 * error of the answer, as in the binary form, not a broken answer */
START_TEST(tick_error_without_stream)
{
    const char *text =
        "{\"type\":\"tick_solution\",\"seq\":4,\"skipped\":0,\"solutions\":[{\"seq\":4,"
        "\"error\":{\"code\":\"invalid_request\",\"message\":\"bad name\",\"path\":"
        "\"/targets/0/stream\"}},{\"error\":{\"code\":\"invalid_request\",\"message\":"
        "\"bad seq\",\"path\":\"/targets/1/seq\"}},{\"stream\":\"a\",\"seq\":4,\"error\":{"
        "\"code\":\"unknown_stream\",\"message\":\"no a\",\"path\":\"/targets/2/stream\"}}]}";
    ikd__dec d = {0};
    ikd__msg m;
    ikd_error e;
    ck_assert_msg(ikd__decode_message(&d, text, strlen(text), TICK_MAX, &m, &e) == 0, "%s",
                  e.message);
    ck_assert_uint_eq(m.tick.count, 3);
    ck_assert_str_eq(m.tick.entries[0].stream, "");
    ck_assert(m.tick.entries[0].error->has_seq);
    ck_assert_int_eq(m.tick.entries[0].error->seq, 4);
    ck_assert_str_eq(m.tick.entries[0].error->path, "/targets/0/stream");
    ck_assert(!m.tick.entries[1].error->has_seq);
    ck_assert_str_eq(m.tick.entries[1].error->stream, "");
    ck_assert_str_eq(m.tick.entries[2].error->stream, "a");
    ck_assert_int_eq(m.tick.entries[2].error->code, IKD_E_UNKNOWN_STREAM);
    ikd_tick *copy = ikd_tick_copy(&m.tick);
    ck_assert_str_eq(copy->entries[1].stream, "");
    ikd_tick_free(copy);
    ikd__dec_free(&d);
}
END_TEST

/* A tick answer holds at most max_entries entries (the connection's
 * max_streams: no tick holds more targets): one more is refused at that
 * entry, before the rest is read, keeping the message's type and seq (the
 * connection fails that tick with them). */
START_TEST(tick_entries_bounded)
{
    ikd__dec d = {0};
    ikd__msg m;
    ikd_error e;
    char *t = tick_answer(4);
    ck_assert_msg(ikd__decode_message(&d, t, strlen(t), 4, &m, &e) == 0, "%s", e.message);
    ck_assert_uint_eq(m.tick.count, 4);
    ck_assert_str_eq(m.tick.entries[3].stream, "s3");
    ck_assert_int_eq(decode_text(t, strlen(t), &e), 0);
    ck_assert_int_eq(ikd__decode_message(&d, t, strlen(t), 3, &m, &e), IKD_E_BAD_ANSWER);
    ck_assert_msg(strstr(e.message, "more than 3 entries (max_streams") != NULL, "%s", e.message);
    ck_assert_str_eq(m.type, "tick_solution");
    ck_assert(m.has_seq);
    ck_assert_int_eq(m.seq, 7);
    free(t);
    ikd__dec_free(&d);
    /* 20,000 entries: accepted whole they take megabytes, refused past 4
     * they take next to nothing */
    t = tick_answer(20000);
    ikd__dec all = {0}, few = {0};
    ck_assert_int_eq(ikd__decode_message(&all, t, strlen(t), 20000, &m, &e), 0);
    ck_assert_uint_eq(m.tick.count, 20000);
    ck_assert_uint_gt(ikd__dec_memory(&all), 1 << 20);
    ck_assert_int_eq(ikd__decode_message(&few, t, strlen(t), 4, &m, &e), IKD_E_BAD_ANSWER);
    ck_assert_uint_lt(ikd__dec_memory(&few), 64 * 1024);
    ikd__dec_free(&all);
    ikd__dec_free(&few);
    free(t);
}
END_TEST

START_TEST(unknown_members_skipped)
{
    const char *text = "{\"new\":{\"a\":[1,{\"b\":null}]},\"type\":\"solution\",\"stream\":"
                       "\"s\\u00e9\",\"seq\":3,\"skipped\":2,\"result\":{\"future\":true,"
                       "\"status\":\"something_new\",\"joints\":[0.5]},\"later\":\"x\"}";
    ikd__dec d = {0};
    ikd__msg m;
    ikd_error e;
    ck_assert_int_eq(ikd__decode_message(&d, text, strlen(text), TICK_MAX, &m, &e), 0);
    ck_assert_str_eq(m.type, "solution");
    ck_assert_str_eq(m.stream, "s\xc3\xa9");
    ck_assert_int_eq(m.seq, 3);
    ck_assert_int_eq(m.skipped, 2);
    ck_assert_int_eq(m.result.status, IKD_STATUS_OTHER);
    ck_assert_str_eq(m.result.status_text, "something_new");
    ck_assert_uint_eq(m.result.joint_count, 1);
    ikd__dec_free(&d);
}
END_TEST

/* ---- what is sent -------------------------------------------------------- */

START_TEST(encoders_check_their_input)
{
    ikd__buf b = {0};
    ikd_error e;
    double nan_pos[3] = {0.1, NAN, 0.3};
    ikd_target t = {.dims = 3};
    memcpy(t.position, nan_pos, sizeof nan_pos);
    ck_assert_int_eq(ikd__put_target(&b, &t, "target", &e), IKD_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(e.message, "target.position[1]"));
    double q[4] = {0, 0, INFINITY, 1};
    ikd_target t2 = {.position = {0.1, 0.2, 0.3}};
    t2.orientation = q;
    b.len = 0;
    ck_assert_int_eq(ikd__put_target(&b, &t2, "waypoints[3]", &e), IKD_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(e.message, "waypoints[3].orientation[2]"));
    /* a full target, read back by jansson */
    double pole[3] = {1, 0, 0.5}, w[6] = {1, 1, 1, 0, 0, 0.5};
    ikd_target t3 = {.position = {0.2, -0.1, 0.25}};
    t3.pole = pole;
    t3.weights = w;
    b.len = 0;
    ck_assert_int_eq(ikd__put_target(&b, &t3, "target", &e), 0);
    b.p[b.len] = '\0';
    json_t *v = parse(b.p);
    same_json_number(0.2, json_array_get(json_object_get(v, "position"), 0), "x");
    same_json_number(-0.1, json_array_get(json_object_get(v, "position"), 1), "y");
    same_json_number(0.5, json_array_get(json_object_get(v, "weights"), 5), "w5");
    ck_assert_uint_eq(json_array_size(json_object_get(v, "pole")), 3);
    ck_assert_uint_eq(json_object_size(v), 3);
    json_decref(v);
    /* a planar target */
    ikd_target t4 = {.position = {1.2, 0.6}, .dims = 2};
    b.len = 0;
    ck_assert_int_eq(ikd__put_target(&b, &t4, "target", &e), 0);
    b.p[b.len] = '\0';
    ck_assert_str_eq(b.p, "{\"position\":[1.2,0.6]}");
    /* caller JSON */
    ikd_chain bad = {.json = "{\"kind\":\"bones\","};
    b.len = 0;
    ck_assert_int_eq(ikd__put_chain(&b, &bad, &e), IKD_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(e.message, "chain.json"));
    ikd_chain both = {.json = "{}", .id = "abc"};
    ck_assert_int_eq(ikd__put_chain(&b, &both, &e), IKD_E_INVALID_ARGUMENT);
    ikd_seed s = {0};
    s.json = "{\"not\":\"an array\"}";
    ck_assert_int_eq(ikd__put_seed(&b, &s, "seed", &e), IKD_E_INVALID_ARGUMENT);
    double rows[6] = {0, 0, 1, 0.1, 0, 0.55};
    ikd_seed s2 = {.values = rows, .count = 2, .width = 3};
    b.len = 0;
    ck_assert_int_eq(ikd__put_seed(&b, &s2, "seed", &e), 0);
    b.p[b.len] = '\0';
    ck_assert_str_eq(b.p, "[[0.0,0.0,1.0],[0.1,0.0,0.55]]");
    /* stream names */
    ck_assert(ikd__stream_name_ok("left_leg.1:a-b"));
    ck_assert(!ikd__stream_name_ok(""));
    ck_assert(!ikd__stream_name_ok("a b"));
    ck_assert(!ikd__stream_name_ok("a\"b"));
    char longname[70];
    memset(longname, 'a', 65);
    longname[65] = '\0';
    ck_assert(!ikd__stream_name_ok(longname));
    longname[64] = '\0';
    ck_assert(ikd__stream_name_ok(longname));
    ikd__buf_free(&b);
}
END_TEST

START_TEST(upgrade_answer_checked)
{
    ikd__buf req = {0};
    char accept[32];
    ikd_error e;
    ck_assert_int_eq(
        ikd__handshake_request(&req, "/v1/stream", "127.0.0.1:8080", "s3cret", accept, &e), 0);
    req.p[req.len] = '\0';
    ck_assert_ptr_nonnull(strstr(req.p, "Authorization: Bearer s3cret\r\n"));
    ck_assert_ptr_nonnull(strstr(req.p, "Sec-WebSocket-Protocol: ikd.v1\r\n"));
    ck_assert_uint_eq(strlen(accept), 28);
    char ok[512];
    snprintf(ok, sizeof ok,
             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: ikd.v1\r\n\r\n\x81\x02hi",
             accept);
    size_t used;
    long body;
    ck_assert_int_eq(ikd__handshake_answer(ok, strlen(ok), accept, &used, &body, &e), 101);
    ck_assert_uint_eq(used, strlen(ok) - 4); /* the frame after the head is not the head's */
    /* incomplete */
    ck_assert_int_eq(ikd__handshake_answer(ok, 40, accept, &used, &body, &e), 0);
    /* a wrong accept */
    char wrong[512];
    strcpy(wrong, ok);
    char *a = strstr(wrong, accept);
    a[0] = a[0] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(ikd__handshake_answer(wrong, strlen(wrong), accept, &used, &body, &e),
                     IKD_E_HANDSHAKE);
    /* another subprotocol */
    snprintf(wrong, sizeof wrong,
             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
             accept);
    ck_assert_int_eq(ikd__handshake_answer(wrong, strlen(wrong), accept, &used, &body, &e),
                     IKD_E_HANDSHAKE);
    /* a refusal, its body's length given */
    const char *no = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 17\r\n\r\n{\"error\":{...}}";
    ck_assert_int_eq(ikd__handshake_answer(no, strlen(no), accept, &used, &body, &e), 401);
    ck_assert_int_eq(body, 17);
    /* not HTTP */
    const char *junk = "SSH-2.0-OpenSSH\r\n\r\n";
    ck_assert_int_eq(ikd__handshake_answer(junk, strlen(junk), accept, &used, &body, &e),
                     IKD_E_HANDSHAKE);
    /* a status line without its status: the digits are read from the
     * status line's own bytes, not from what follows the head nor from
     * past the n bytes given */
    const char *bare = "HTTP/1.1 \r\n\r\n401";
    ck_assert_int_eq(ikd__handshake_answer(bare, strlen(bare), accept, &used, &body, &e),
                     IKD_E_HANDSHAKE);
    ck_assert_int_eq(ikd__handshake_answer(bare, 13, accept, &used, &body, &e), IKD_E_HANDSHAKE);
    ikd__buf_free(&req);
}
END_TEST

/* ---- errors and copies --------------------------------------------------- */

START_TEST(error_table_knows_every_wire_code)
{
    for (int i = PROTO_E_NONE + 1; i < PROTO_E_COUNT; i++) {
        const char *word = proto_error_name((proto_errcode)i);
        int code = ikd_errcode_from_wire(word);
        ck_assert_msg(code != IKD_E_SERVER, "the client does not know ikd's code %s", word);
        ck_assert_str_eq(ikd_errcode_name(code), word);
        ck_assert(ikd_errcode_text(code)[0] != '\0');
    }
    for (int a = 1; a <= IKD__EI_COUNT; a++) {
        ck_assert(ikd_errcode_name(-a)[0] != '\0');
        for (int b = a + 1; b <= IKD__EI_COUNT; b++)
            ck_assert_str_ne(ikd_errcode_name(-a), ikd_errcode_name(-b));
    }
    ck_assert_str_eq(ikd_errcode_name(IKD_OK), "ok");
    ck_assert_str_eq(ikd_errcode_name(-IKD__EI_COUNT - 1), "");
    ck_assert_int_eq(ikd_errcode_from_wire("a_code_from_the_future"), IKD_E_SERVER);
    ck_assert_int_eq(ikd_errcode_from_wire("connect"), IKD_E_SERVER); /* the client's own */
}
END_TEST

/* The codes are libikdclient's ABI: a program built against an earlier
 * <ikd/client.h> reads the same numbers. Codes ikd gains go at the end. */
START_TEST(error_numbers_do_not_move)
{
    ck_assert_int_eq(IKD_E_INVALID_JSON, -1);
    ck_assert_int_eq(IKD_E_INVALID_URDF, -15);
    ck_assert_int_eq(IKD_E_UPGRADE_REQUIRED, -16);
    ck_assert_int_eq(IKD_E_SHUTTING_DOWN, -19);
    ck_assert_int_eq(IKD_E_SERVER, -20);
    ck_assert_int_eq(IKD_E_CONNECT, -23);
    ck_assert_int_eq(IKD_E_UNEXPECTED, -34);
    ck_assert_int_eq(IKD_E_INVALID_SRDF, -35);
    ck_assert_int_eq(ikd_errcode_from_wire("invalid_srdf"), IKD_E_INVALID_SRDF);
    ck_assert_int_eq(IKD_E_UNKNOWN_SCENE, -36);
    ck_assert_int_eq(ikd_errcode_from_wire("unknown_scene"), IKD_E_UNKNOWN_SCENE);
}
END_TEST

START_TEST(copies_own_their_bytes)
{
    char *doc = read_file("tests/fixtures/solve_tree_urdf.response.json", NULL);
    ikd__dec d = {0};
    ikd_answer a;
    ikd_error e;
    ck_assert_int_eq(ikd__decode_answer(&d, doc, strlen(doc), &a, &e), 0);
    ikd_result *copy = ikd_result_copy(&a.results[0]);
    json_t *ref = parse(doc);
    json_t *only = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(ref, k, v) if (!is_answer_key(k)) json_object_set(only, k, v);
    ikd__dec_free(&d); /* the original's bytes are gone */
    memset(doc, 'x', strlen(doc));
    check_result(copy, only);
    ikd_result_free(copy);
    json_decref(only);
    json_decref(ref);
    free(doc);

    const char *tick =
        "{\"type\":\"tick_solution\",\"seq\":121,\"skipped\":1,\"solutions\":[{"
        "\"stream\":\"c2\",\"seq\":121,\"skipped\":0,\"result\":{\"status\":\"success\","
        "\"local_rotations\":[[-0.0224536,-0.269577,-0.00449072,0.962707]]}},{"
        "\"stream\":\"c3\",\"seq\":121,\"error\":{\"code\":\"unknown_stream\","
        "\"message\":\"no stream\",\"path\":\"/targets/2/stream\"}}]}";
    char *t = strdup(tick);
    ikd__dec d2 = {0};
    ikd__msg m;
    ck_assert_int_eq(ikd__decode_message(&d2, t, strlen(t), TICK_MAX, &m, &e), 0);
    ikd_tick *tc = ikd_tick_copy(&m.tick);
    ikd__dec_free(&d2);
    memset(t, 'x', strlen(t));
    ck_assert_int_eq(tc->seq, 121);
    ck_assert_int_eq(tc->skipped, 1);
    ck_assert_uint_eq(tc->count, 2);
    ck_assert_str_eq(tc->entries[0].stream, "c2");
    same(tc->entries[0].result->local_rotations[3], 0.962707, "w");
    ck_assert_str_eq(tc->entries[1].error->wire_code, "unknown_stream");
    ck_assert_int_eq(tc->entries[1].error->code, IKD_E_UNKNOWN_STREAM);
    ck_assert_str_eq(tc->entries[1].error->stream, "c3");
    ikd_tick_free(tc);
    free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_decode");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fixture_answers_decode_exactly);
    tcase_add_test(tc, fixture_chain_descriptions);
    tcase_add_test(tc, fixture_errors);
    tcase_add_test(tc, stream_md_messages);
    tcase_add_test(tc, number_reader_matches_strtod);
    tcase_add_test(tc, number_writer_reads_back);
    tcase_add_test(tc, malformed_messages_refused);
    tcase_add_test(tc, tick_error_without_stream);
    tcase_add_test(tc, tick_entries_bounded);
    tcase_add_test(tc, unknown_members_skipped);
    tcase_add_test(tc, encoders_check_their_input);
    tcase_add_test(tc, upgrade_answer_checked);
    tcase_add_test(tc, error_table_knows_every_wire_code);
    tcase_add_test(tc, error_numbers_do_not_move);
    tcase_add_test(tc, copies_own_their_bytes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

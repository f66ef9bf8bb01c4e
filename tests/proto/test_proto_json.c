/*
 * test_proto_json.c: the strict JSON layer of proto/ (proto_json.h): parse
 * errors with line and column, duplicate keys, numbers jansson refuses
 * (NaN, Infinity, 1e400), typed getters and their JSON pointers and
 * messages, unknown fields, limits, and the exact round trip of doubles;
 * the number writers (shortest, options.digits) against references of
 * their own, at every layout edge and digit count; the tree writer
 * (proto_json_dump) against jansson; the canonical text ids hash
 * (proto/proto_id.c) against jansson's json_dumps() of the tree with its
 * integers made reals, on random trees and the edge doubles;
 * the hint for XML sent where JSON is expected, right for each place (a
 * solve, a batch, /v1/chains, a stream message) as each decoder reports it.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_json.h"
#include "proto/proto_json_write.h"
#include "proto/proto_kind.h"
#include "proto/proto_pow10.h"
#include "proto/proto_stream.h"
#include "tests/proto/proto_check.h"
#include "tests/proto/oracle.h"

/* The random samples' counts: in full on the plain build; an eighth under
 * AddressSanitizer, which makes this arithmetic about five times slower
 * and checks memory, not digits (the plain build and fuzz_json check the
 * digits; the hand-picked and edge cases run in full on every build). */
#ifdef __SANITIZE_ADDRESS__
#define RANDOM_N(n) ((n) / 8)
#else
#define RANDOM_N(n) (n)
#endif

static json_t *parse(const char *s, proto_error *e)
{
    proto_error_clear(e);
    return proto_json_parse(s, strlen(s), 1 << 20, PROTO_JSON_SOLVE, e);
}

START_TEST(test_parse_ok_and_errors)
{
    proto_error e;
    json_t *v = parse("{\"a\": [1, 2.5]}", &e);
    ck_assert_ptr_nonnull(v);
    json_decref(v);

    ck_assert_ptr_null(parse("", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_int_eq(pc_http_status(e.code), 400);

    ck_assert_ptr_null(parse("{\"a\": 1,\n \"b\": }", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_ptr_nonnull(strstr(e.message, "line 2"));
    ck_assert_ptr_nonnull(strstr(e.message, "column"));

    ck_assert_ptr_null(parse("{\"a\": 1, \"a\": 2}", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_ptr_nonnull(strstr(e.message, "duplicate"));

    /* jansson has no NaN/Infinity literals and refuses overflowing reals */
    ck_assert_ptr_null(parse("[NaN]", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_ptr_null(parse("[Infinity]", &e));
    ck_assert_ptr_null(parse("[-Infinity]", &e));
    ck_assert_ptr_null(parse("[1e400]", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    ck_assert_ptr_nonnull(strstr(e.message, "overflow"));
    ck_assert_ptr_null(parse("[-1e400]", &e));
    ck_assert_ptr_null(parse("[123456789012345678901234567890]", &e));
    ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
    /* an underflowing real reads as (nearly) zero */
    v = parse("[1e-400]", &e);
    ck_assert_ptr_nonnull(v);
    ck_assert(fabs(json_real_value(json_array_get(v, 0))) < 1e-300);
    json_decref(v);

    /* the body limit */
    proto_error_clear(&e);
    ck_assert_ptr_null(proto_json_parse("[1,2,3]", 7, 6, PROTO_JSON_SOLVE, &e));
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    ck_assert_int_eq(pc_http_status(e.code), 413);
    /* a body need not be NUL-terminated */
    v = proto_json_parse("[1]garbage", 3, 100, PROTO_JSON_SOLVE, &e);
    ck_assert_ptr_nonnull(v);
    json_decref(v);
}
END_TEST

START_TEST(test_paths)
{
    char p[PROTO_PATH_MAX], q[PROTO_PATH_MAX], n[PROTO_PATH_MAX];
    proto_json_path_key(p, "", "target");
    ck_assert_str_eq(p, "/target");
    proto_json_path_key(q, p, "position");
    proto_json_path_index(p, q, 2);
    ck_assert_str_eq(p, "/target/position/2");
    proto_json_path_name(n, sizeof n, p);
    ck_assert_str_eq(n, "target.position[2]");
    proto_json_path_key(p, "/x", "a/b~c");
    ck_assert_str_eq(p, "/x/a~1b~0c");
    proto_json_path_name(n, sizeof n, p);
    ck_assert_str_eq(n, "x.a/b~c");
    proto_json_path_name(n, sizeof n, "");
    ck_assert_str_eq(n, "the request");
    proto_json_path_name(n, sizeof n, "/targets/3/position/0");
    ck_assert_str_eq(n, "targets[3].position[0]");
    /* a very long path is truncated, never overflows */
    char longkey[600];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    proto_json_path_key(p, "/a", longkey);
    ck_assert_uint_eq(strlen(p), PROTO_PATH_MAX - 1);
}
END_TEST

START_TEST(test_getters)
{
    proto_error e;
    json_t *v = parse("{\"n\": 1.5, \"i\": 7, \"s\": \"ros\", \"b\": true, \"big\": 2e6,"
                      " \"a\": [1, 2, 3], \"z\": 0, \"neg\": -1, \"str\": \"x\"}",
                      &e);
    ck_assert_ptr_nonnull(v);
    double d;
    long long i;
    bool b;
    const char *s;
    int k;
    size_t n;
    ck_assert_int_eq(proto_json_number(json_object_get(v, "n"), "/n", -10, 10, &d, &e), 0);
    ck_assert_double_eq(d, 1.5);
    /* integers are numbers too */
    ck_assert_int_eq(proto_json_number(json_object_get(v, "i"), "/i", -10, 10, &d, &e), 0);
    ck_assert_double_eq(d, 7);
    ck_assert_int_eq(proto_json_number(json_object_get(v, "big"), "/big", -PROTO_MAX_ABS,
                                       PROTO_MAX_ABS, &d, &e),
                     -1);
    ck_assert_str_eq(e.path, "/big");
    ck_assert_ptr_nonnull(strstr(e.message, "big must be within"));
    ck_assert_int_eq(proto_json_number(json_object_get(v, "s"), "/target/position/2", -1, 1, &d,
                                       &e),
                     -1);
    ck_assert_str_eq(e.message, "target.position[2] must be a finite number");
    ck_assert_str_eq(e.path, "/target/position/2");
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_int_eq(pc_http_status(e.code), 400);

    ck_assert_int_eq(proto_json_positive(json_object_get(v, "z"), "/z", 1, &d, &e), -1);
    ck_assert_int_eq(proto_json_positive(json_object_get(v, "neg"), "/neg", 1, &d, &e), -1);
    ck_assert_int_eq(proto_json_positive(json_object_get(v, "n"), "/n", 1, &d, &e), -1);
    ck_assert_int_eq(proto_json_positive(json_object_get(v, "n"), "/n", 2, &d, &e), 0);

    ck_assert_int_eq(proto_json_integer(json_object_get(v, "i"), "/i", 0, 10, &i, &e), 0);
    ck_assert_int_eq(i, 7);
    ck_assert_int_eq(proto_json_integer(json_object_get(v, "n"), "/n", 0, 10, &i, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.message, "integer"));
    ck_assert_int_eq(proto_json_integer(json_object_get(v, "i"), "/i", 0, 5, &i, &e), -1);

    ck_assert_int_eq(proto_json_bool(json_object_get(v, "b"), "/b", &b, &e), 0);
    ck_assert(b);
    ck_assert_int_eq(proto_json_bool(json_object_get(v, "i"), "/i", &b, &e), -1);

    ck_assert_int_eq(proto_json_string(json_object_get(v, "s"), "/s", 0, &s, &e), 0);
    ck_assert_str_eq(s, "ros");
    ck_assert_int_eq(proto_json_string(json_object_get(v, "s"), "/s", 2, &s, &e), -1);
    ck_assert_int_eq(proto_json_string(json_object_get(v, "i"), "/i", 0, &s, &e), -1);

    static const char *const names[] = {"ros", "unity", NULL};
    ck_assert_int_eq(proto_json_enum(json_object_get(v, "s"), "/s", names, &k, &e), 0);
    ck_assert_int_eq(k, 0);
    ck_assert_int_eq(proto_json_enum(json_object_get(v, "str"), "/str", names, &k, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.message, "\"unity\""));

    ck_assert_int_eq(proto_json_array(json_object_get(v, "a"), "/a", 1, 3, true, &n, &e), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(proto_json_array(json_object_get(v, "a"), "/a", 1, 2, true, &n, &e), -1);
    ck_assert_str_eq(proto_error_name(e.code), "too_large");
    ck_assert_int_eq(pc_http_status(e.code), 413);
    ck_assert_int_eq(proto_json_array(json_object_get(v, "a"), "/a", 1, 2, false, &n, &e), -1);
    ck_assert_str_eq(proto_error_name(e.code), "invalid_request");
    ck_assert_int_eq(proto_json_array(json_object_get(v, "a"), "/a", 4, 5, false, &n, &e), -1);
    ck_assert_int_eq(proto_json_array(json_object_get(v, "n"), "/n", 0, 5, false, &n, &e), -1);

    double three[3];
    ck_assert_int_eq(proto_json_numbers(json_object_get(v, "a"), "/a", 3, three, &e), 0);
    ck_assert_double_eq(three[2], 3);
    ck_assert_int_eq(proto_json_numbers(json_object_get(v, "a"), "/a", 2, three, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.message, "exactly 2"));

    ck_assert_ptr_null(proto_json_require(v, "/x", "missing", &e));
    ck_assert_str_eq(e.path, "/x/missing");
    ck_assert_str_eq(e.message, "x.missing is required");
    json_decref(v);
}
END_TEST

START_TEST(test_unknown_fields)
{
    proto_error e;
    json_t *v = parse("{\"kind\": 1, \"lenghts\": [1]}", &e);
    static const char *const keys[] = {"kind", "lengths", NULL};
    ck_assert_int_eq(proto_json_check_object(v, "/chain", keys, &e), -1);
    ck_assert_str_eq(e.path, "/chain/lenghts");
    ck_assert_ptr_nonnull(strstr(e.message, "unknown field \"lenghts\""));
    ck_assert_int_eq(proto_json_check_object(json_object_get(v, "kind"), "/chain/kind", keys, &e),
                     -1);
    ck_assert_ptr_nonnull(strstr(e.message, "must be an object"));
    json_decref(v);
}
END_TEST

START_TEST(test_double_round_trip)
{
    /* 17 significant digits: every double survives dump + parse exactly */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    json_t *a = json_array();
    double vals[200];
    for (int i = 0; i < 200; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d = ((double)(x >> 11) / 9007199254740992.0 - 0.5) * pow(10, (int)(x % 21) - 10);
        if (i == 0)
            d = 0.1;
        if (i == 1)
            d = 1.0 / 3.0;
        vals[i] = d;
        json_array_append_new(a, json_real(d));
    }
    char *s = proto_json_dump(a);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_null(strchr(s, ' ')); /* compact */
    proto_error e;
    json_t *b = parse(s, &e);
    ck_assert_ptr_nonnull(b);
    for (int i = 0; i < 200; i++)
        ck_assert(json_number_value(json_array_get(b, (size_t)i)) == vals[i]);
    free(s);
    json_decref(a);
    json_decref(b);

    double three[3] = {1, -2.5, 1e-300};
    json_t *arr = proto_json_array_of(three, 3);
    ck_assert_uint_eq(json_array_size(arr), 3);
    ck_assert(json_real_value(json_array_get(arr, 2)) == 1e-300);
    json_decref(arr);
}
END_TEST

/* proto_json_dump() must write what json_dumps() writes with the same
 * flags (the independent oracle), reals but for their digits (the shortest
 * form reprinted with 17 digits), for doubles of every magnitude and sign,
 * integers at the extremes, escaped strings and nested trees. */
static uint64_t xs_next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static double random_double(uint64_t *x)
{
    uint64_t r = xs_next(x);
    switch (r % 4) {
    case 0: { /* any finite bit pattern */
        double d;
        uint64_t bits = xs_next(x);
        memcpy(&d, &bits, sizeof d);
        return isfinite(d) ? d : 1.5;
    }
    case 1: /* the usual magnitudes, with a random exponent */
        return ((double)(xs_next(x) >> 11) / 9007199254740992.0 - 0.5) *
               pow(10, (int)(xs_next(x) % 41) - 20);
    case 2: /* integers and short decimals */
        return (double)((int64_t)(xs_next(x) % 2000001) - 1000000) / pow(10, (int)(r >> 8) % 6);
    default: /* near powers of ten (the digit-count edges) */
        return nextafter(pow(10, (int)(xs_next(x) % 41) - 20), (r >> 8) & 1 ? 0.0 : 1e300) *
               ((r >> 9) & 1 ? -1 : 1);
    }
}

static void same_as_jansson(const json_t *v)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    char *got = proto_json_dump(v);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    char *again = pc_reprint17(got, false);
    ck_assert_ptr_nonnull(again);
    ck_assert_str_eq(again, want);
    free(again);
    free(want);
    free(got);
}

/* An object of 40 keys k0 to k39 set in a scrambled order, key kj holding
 * the integer j * 33 % 40 (17 * 33 is 1 modulo 40): more keys than the 16
 * the canonical writer sorts on the stack, so it allocates and qsorts. */
static json_t *forty_keys(void)
{
    json_t *v = json_object();
    for (int i = 0; i < 40; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", (i * 17) % 40);
        json_object_set_new(v, k, json_integer(i));
    }
    return v;
}

START_TEST(test_dump_matches_jansson)
{
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < RANDOM_N(12500); i++) {
        json_t *r = json_real(random_double(&x));
        same_as_jansson(r);
        json_decref(r);
    }
    static const double edge[] = {0.0, -0.0, 1.0, -1.0, 1e-4, 9.9999999999999991e-5, 1e16,
                                  9999999999999998.0, 0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308,
                                  123456789012345678.0, 1e-300, 2.5, 1e22};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        json_t *r = json_real(edge[i]);
        same_as_jansson(r);
        json_decref(r);
    }

    /* a tree with every kind of value, objects in both orders */
    json_t *t = json_pack("{s:[i,I,I,f,b,b,n], s:s, s:{s:f, s:[]}, s:{s:f}}", "zeta", 0,
                          (json_int_t)INT64_MAX, (json_int_t)INT64_MIN, -2.75, 1, 0, "alpha",
                          "quote\" back\\ nl\n tab\t ctl\x01 bs\b ff\f cr\r utf8 \xc3\xa9 /",
                          "mid", "b", 1e-7, "a", "empty", "k~/", 3.0);
    ck_assert_ptr_nonnull(t);
    same_as_jansson(t);
    json_decref(t);
    t = forty_keys();
    same_as_jansson(t);
    json_decref(t);

    /* every control character jansson escapes as \uXXXX, whose hex digits
     * it writes in upper case (\u001E; found by tests/fuzz/fuzz_json) */
    for (int c = 0; c < 0x20; c++) {
        char one[1] = {(char)c};
        json_t *str = json_stringn(one, 1);
        same_as_jansson(str);
        json_decref(str);
    }
    json_t *del = json_string("\x7f \xc2\x80 \xe2\x80\xa8");
    same_as_jansson(del);
    json_decref(del);
}
END_TEST

static int by_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The direct writer (proto_jw): a caller's buffer outgrown mid-text, the
 * text copied out of a buffer that was never outgrown; and the canonical
 * text chain ids hash (proto/proto_id.c: keys sorted, integers as reals)
 * of a small object (larger ones: test_canonical_matches_jansson). */
START_TEST(test_writer)
{
    char small[8];
    proto_jw w;
    proto_jw_init(&w, small, sizeof small);
    proto_jw_raw(&w, "[", 1);
    proto_jw_double(&w, 0.1);
    proto_jw_raw(&w, ",", 1);
    proto_jw_integer(&w, -5);
    proto_jw_raw(&w, ",", 1);
    proto_jw_string(&w, "a\"b\n", 4);
    proto_jw_raw(&w, "]", 1);
    size_t n = 0;
    char *s = proto_jw_finish(&w, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "[0.1,-5,\"a\\\"b\\n\"]");
    ck_assert_uint_eq(n, strlen(s));
    free(s);

    char big[64];
    proto_jw_init(&w, big, sizeof big);
    proto_jw_raw(&w, "{}", 2);
    s = proto_jw_finish(&w, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert(s != big);
    ck_assert_str_eq(s, "{}");
    ck_assert_uint_eq(n, 2);
    free(s);

    json_t *v = json_pack("{s:[i,f], s:{s:i, s:s}}", "z", 1, 2.5, "a", "y", -3, "b", "x");
    s = proto__canonical_text(v, &n);
    ck_assert_str_eq(s, "{\"a\":{\"b\":\"x\",\"y\":-3.0},\"z\":[1.0,2.5]}");
    ck_assert_uint_eq(n, strlen(s));
    free(s);
    ck_assert(json_is_integer(json_array_get(json_object_get(v, "z"), 0))); /* left as it was */
    json_decref(v);
}
END_TEST

/* The canonical text chain and scene ids hash (proto__canonical_text,
 * written by proto/proto_id.c itself) must be byte for byte what jansson's
 * json_dumps() writes for the same tree with every integer made the real
 * it converts to, keys sorted, 17 digits: every id hashes that text, so a
 * differing byte is another id. Random trees (any finite double, integers
 * of every size, strings with control characters and UTF-8, objects below
 * and above the writer's 16 keys sorted in place, keys that are prefixes
 * of others), then each edge double alone and in a tree, integers beyond
 * 2^53, and an object of 40 keys. */
static void same_canonical(const json_t *v)
{
    char *want = oracle_canonical_text(v);
    size_t n = 0;
    char *got = proto__canonical_text(v, &n);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    ck_assert_uint_eq(n, strlen(want));
    char id[PROTO_ID_HEX + 1], id_text[PROTO_ID_HEX + 1];
    ck_assert_int_eq(proto__content_id(v, id, NULL, NULL), 0);
    proto__text_id(want, strlen(want), id_text);
    ck_assert_str_eq(id, id_text);
    free(got);
    free(want);
}

static json_t *random_tree(uint64_t *x, int depth)
{
    uint64_t r = xs_next(x);
    switch (depth > 3 ? r % 5 : r % 8) {
    case 0: { /* an integer of any size and sign */
        int64_t i = (int64_t)(xs_next(x) >> (r >> 8) % 64);
        return json_integer((r >> 16) & 1 ? -i : i);
    }
    case 1:
        return json_real(random_double(x));
    case 2: { /* control characters, '"', '\\', '/', DEL and UTF-8 */
        static const char *const parts[] = {"\x01", "\x1e", "\n", "\"", "\\", "/", "\x7f",
                                            "a",    "Z",    " ", "\xc3\xa9", "\xe2\x80\xa8",
                                            "\xf0\x9f\x98\x80"};
        char s[64] = "";
        for (int i = (int)(r >> 8) % 6; i > 0; i--)
            strcat(s, parts[xs_next(x) % (sizeof parts / sizeof parts[0])]);
        return json_string(s);
    }
    case 3:
        return (r >> 8) & 1 ? json_true() : json_false();
    case 4:
        return json_null();
    case 5: {
        json_t *a = json_array();
        for (int i = (int)(r >> 8) % 6; i > 0; i--)
            json_array_append_new(a, random_tree(x, depth + 1));
        return a;
    }
    default: { /* up to 40 keys of 1 to 3 characters, some prefixes of others */
        static const char *const chars[] = {"a", "b", "_", "~", "\x01", "\xc3\xa9"};
        json_t *o = json_object();
        for (int i = (int)(r >> 8) % 41; i > 0; i--) {
            char k[8] = "";
            for (int j = 1 + (int)(xs_next(x) % 3); j > 0; j--)
                strcat(k, chars[xs_next(x) % (sizeof chars / sizeof chars[0])]);
            json_object_set_new(o, k, random_tree(x, depth + 1));
        }
        return o;
    }
    }
}

START_TEST(test_canonical_matches_jansson)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < RANDOM_N(4000); i++) {
        json_t *t = random_tree(&x, 0);
        same_canonical(t);
        json_decref(t);
    }
    /* random doubles, 64 to an array */
    for (int i = 0; i < RANDOM_N(3200); i++) {
        json_t *a = json_array();
        for (int j = 0; j < 64; j++)
            json_array_append_new(a, json_real(random_double(&x)));
        same_canonical(a);
        json_decref(a);
    }

    /* the edges: zeros, subnormals (the least, the greatest), the least
     * normal, %.17g's switch to exponents (1e-4 below, 1e17 above: 1e16
     * to 1e22 and their neighbours, where the 17 digits stop being the
     * integer's), the greatest double, exponents of one to three digits */
    static const double edge[] = {0.0,
                                  -0.0,
                                  5e-324,
                                  -5e-324,
                                  1e-323,
                                  2.2250738585072009e-308,
                                  2.2250738585072014e-308,
                                  1e-308,
                                  1e-100,
                                  1e-10,
                                  1e-5,
                                  9.9999999999999991e-5,
                                  1e-4,
                                  1.0000000000000001e-4,
                                  0.1,
                                  0.3,
                                  1.0 / 3.0,
                                  2.5,
                                  9007199254740992.0,
                                  9007199254740994.0,
                                  9999999999999998.0,
                                  1e16,
                                  10000000000000002.0,
                                  99999999999999984.0,
                                  1e17,
                                  100000000000000016.0,
                                  123456789012345678.0,
                                  1e18,
                                  1e19,
                                  1e20,
                                  1e21,
                                  9.9999999999999992e21,
                                  1e22,
                                  1.0000000000000001e22,
                                  1e23,
                                  9223372036854775807.0,
                                  1e100,
                                  1.7976931348623157e308,
                                  -1.7976931348623157e308};
    json_t *all = json_array();
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        for (int side = -1; side <= 1; side++) {
            double d = side ? nextafter(edge[i], side * INFINITY) : edge[i];
            if (!isfinite(d))
                continue;
            json_t *r = json_real(d);
            same_canonical(r);
            json_decref(r);
            json_array_append_new(all, json_real(d));
            json_array_append_new(all, json_real(-d));
        }
    }
    same_canonical(all);
    json_decref(all);

    /* integers beyond 2^53, made the reals they round to (2^53 + 1 is
     * written as 2^53), and the int64 extremes */
    static const json_int_t ints[] = {0,
                                      1,
                                      -1,
                                      9007199254740991,
                                      9007199254740992,
                                      9007199254740993,
                                      -9007199254740993,
                                      99999999999999999,
                                      123456789012345678,
                                      1000000000000000001,
                                      INT64_MAX,
                                      INT64_MAX - 1,
                                      INT64_MIN,
                                      INT64_MIN + 1};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        json_t *n = json_integer(ints[i]);
        same_canonical(n);
        json_decref(n);
        char k[32];
        snprintf(k, sizeof k, "%lld", (long long)ints[i]);
        json_object_set_new(o, k, json_integer(ints[i]));
    }
    same_canonical(o);
    json_decref(o);

    /* 40 keys, whatever the random trees drew: sorted as strcmp sorts them
     * ("k1" < "k10" < "k2"), each integer a real, the text also written
     * out here */
    o = forty_keys();
    const char *order[40];
    char names[40][16];
    for (int j = 0; j < 40; j++) {
        snprintf(names[j], sizeof names[j], "k%d", j);
        order[j] = names[j];
    }
    qsort(order, 40, sizeof *order, by_strcmp);
    char want[1024] = "{";
    for (int j = 0; j < 40; j++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s\"%s\":%d.0",
                 j ? "," : "", order[j], atoi(order[j] + 1) * 33 % 40);
    strcat(want, "}");
    char *s = proto__canonical_text(o, NULL);
    ck_assert_str_eq(s, want);
    free(s);
    same_canonical(o);
    json_decref(o);
}
END_TEST

/* proto_jw_printf: text that fits, text that outgrows the caller's buffer
 * mid-format (formatted again in full after growing), a writer that starts
 * with no buffer at all, and raw writes around it. */
START_TEST(test_writer_printf)
{
    char small[8];
    proto_jw w;
    proto_jw_init(&w, small, sizeof small);
    proto_jw_printf(&w, "%d", 42);
    ck_assert_uint_eq(w.len, 2);
    ck_assert(w.p == small);
    proto_jw_raw(&w, " ", 1);
    proto_jw_printf(&w, "%s=%.3f %zu", "a_long_name", 0.5, (size_t)123456789);
    proto_jw_raw(&w, "\n", 1);
    size_t n = 0;
    char *s = proto_jw_finish(&w, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "42 a_long_name=0.500 123456789\n");
    ck_assert_uint_eq(n, strlen(s));
    free(s);

    proto_jw_init(&w, NULL, 0);
    proto_jw_printf(&w, "%s", "");
    proto_jw_printf(&w, "x%cy", '-');
    s = proto_jw_finish(&w, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "x-y");
    ck_assert_uint_eq(n, 3);
    free(s);
}
END_TEST

/* Significant digits of a number text ("-1.25e-7" has 3). */
static int sig_digits(const char *s)
{
    int n = 0, lead = 1, trail = 0;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (lead && *s == '0')
            continue;
        lead = 0;
        n++;
        trail = *s == '0' ? trail + 1 : 0;
    }
    return n - trail > 0 ? n - trail : 1;
}

/* d's text by proto_json_format_shortest reads back as d (strtod), and no
 * text with one digit fewer does: the (k-1)-digit rounding that the C
 * library makes (%.*e, correctly rounded) does not read back, nor, for a
 * power of two (whose interval of reals reading back is lopsided), its
 * neighbours up to three steps away. Independent of the code under test:
 * the C library's rounding and strtod are the oracle. */
static void check_shortest(double d, bool minimal)
{
    char buf[PROTO_DOUBLE_MAX];
    int n = proto_json_format_shortest(d, buf);
    ck_assert_int_eq(n, (int)strlen(buf));
    char *end;
    double back = strtod(buf, &end);
    ck_assert_msg(*end == '\0' && back == d && signbit(back) == signbit(d),
                  "%a printed as %s reads back as %a", d, buf, back);
    int k = sig_digits(buf);
    if (!minimal || k == 1 || d == 0.0)
        return;
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%.*e", k - 2, d);
    ck_assert_msg(strtod(tmp, NULL) != d, "%a: %s (%d digits) but %s reads back too", d, buf, k,
                  tmp);
    int ex;
    if (frexp(fabs(d), &ex) == 0.5 && fabs(d) >= DBL_MIN) {
        /* the digits as an integer, stepped */
        char *e = strchr(tmp, 'e');
        long long D = 0;
        for (char *q = tmp; q < e; q++)
            if (*q >= '0' && *q <= '9')
                D = D * 10 + (*q - '0');
        int x = atoi(e + 1) - (k - 2);
        for (int step = -3; step <= 3; step++) {
            char c[48];
            snprintf(c, sizeof c, "%s%lldE%d", d < 0 ? "-" : "", D + step, x);
            ck_assert_msg(strtod(c, NULL) != d, "%a: %s but %s reads back too", d, buf, c);
        }
    }
}

/* Shortest round-trip numbers: hand-picked values, then millions of random
 * doubles (1.5 million: any bit pattern, subnormals included, the usual magnitudes,
 * short decimals, near powers of ten) and every power of ten with its two
 * neighbours, against strtod. */
START_TEST(test_shortest)
{
    static const struct {
        double v;
        const char *text;
    } known[] = {
        {0.1, "0.1"},
        {0.3, "0.3"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {0.8, "0.8"},
        {-2.5, "-2.5"},
        {1.0, "1.0"},
        {100000.0, "100000.0"},
        {1e16, "10000000000000000.0"},
        {1e17, "1e17"},
        {1.5e300, "1.5e300"},
        {1e-4, "0.0001"},
        {1e-5, "1e-5"},
        {1.25e-7, "1.25e-7"},
        {5e-324, "5e-324"},
        {-5e-324, "-5e-324"},
        {1.5e-323, "1.5e-323"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
        {9007199254740993.0, "9007199254740992.0"},
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {123456789012345680.0, "1.2345678901234568e17"},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        char buf[PROTO_DOUBLE_MAX];
        proto_json_format_shortest(known[i].v, buf);
        ck_assert_msg(strcmp(buf, known[i].text) == 0, "%a: %s, not %s", known[i].v, buf,
                      known[i].text);
        check_shortest(known[i].v, true);
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < RANDOM_N(1500000); i++) {
        double d;
        if (i % 2 == 0) {
            uint64_t bits = xs_next(&x);
            if (i % 64 == 0) /* subnormals: exponent field zero */
                bits &= 0x800fffffffffffffull;
            memcpy(&d, &bits, sizeof d);
            if (!isfinite(d))
                continue;
        } else {
            d = random_double(&x);
        }
        check_shortest(d, i % 4 < 2);
    }
    for (int e = -323; e <= 308; e++) {
        char t[16];
        snprintf(t, sizeof t, "1e%d", e);
        double p = strtod(t, NULL);
        check_shortest(p, true);
        check_shortest(nextafter(p, 0.0), true);
        check_shortest(nextafter(p, INFINITY), true);
        char buf[PROTO_DOUBLE_MAX];
        proto_json_format_shortest(p, buf);
        ck_assert_int_eq(sig_digits(buf), 1);
    }
}
END_TEST

/* ---- the reference shortest writer ---------------------------------------
 *
 * The shortest writer ikd had before the Schubfach one, kept here as the
 * reference: 17 correctly rounded digits by exact integer arithmetic, then
 * the candidates with fewer digits each tried with strtod (Clinger's fast
 * path where it is exact), the nearest first; the C library's %.*e outside
 * [1e-4, 1e16). Slow, but every step is checked against strtod, so it
 * tells the fewest digits and the nearest of them independently of the
 * code under test.
 */

__extension__ typedef unsigned __int128 ref_u128;

/* 10^n for n <= 19. */
static const uint64_t ref_pow10_u64[20] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

/* 5^n for n <= 27 (5^27 < 2^64). */
static const uint64_t ref_pow5_u64[28] = {
    1ull,
    5ull,
    25ull,
    125ull,
    625ull,
    3125ull,
    15625ull,
    78125ull,
    390625ull,
    1953125ull,
    9765625ull,
    48828125ull,
    244140625ull,
    1220703125ull,
    6103515625ull,
    30517578125ull,
    152587890625ull,
    762939453125ull,
    3814697265625ull,
    19073486328125ull,
    95367431640625ull,
    476837158203125ull,
    2384185791015625ull,
    11920928955078125ull,
    59604644775390625ull,
    298023223876953125ull,
    1490116119384765625ull,
    7450580596923828125ull,
};

/* round(m * 2^e * 10^k) to nearest, ties to even, exactly, for m < 2^53
 * and 0 <= k <= 22: m * 5^k < 2^53 * 2^52 fits 128 bits, and the factor
 * 2^(e + k) is a shift. *dir tells where the exact value lies: 0 on the
 * result, 1 above it, -1 below it. */
static uint64_t ref_scaled_round(uint64_t m, int e, int k, int *dir)
{
    ref_u128 x = (ref_u128)m * ref_pow5_u64[k];
    int sh = e + k;
    *dir = 0;
    if (sh >= 0)
        return sh >= 64 ? 0 : (uint64_t)(x << sh);
    sh = -sh;
    if (sh >= 127)
        return 0;
    ref_u128 q = x >> sh;
    ref_u128 rem = x - (q << sh);
    ref_u128 half = (ref_u128)1 << (sh - 1);
    if (rem != 0)
        *dir = 1; /* the exact value lies above q */
    if (rem > half || (rem == half && (q & 1u))) {
        q++;
        *dir = -1; /* ... and below q + 1 */
    }
    return (uint64_t)q;
}

/* The 17 significant digits of a (1e-4 <= a < 1e16), correctly rounded,
 * as an integer in [10^16, 10^17) with *x10 = floor(log10(a)) (of the
 * rounded value), by exact integer arithmetic; 0 when that fails (not
 * expected in this range). *dir: where a lies against the digits (0 on
 * them exactly, 1 above, -1 below). */
static uint64_t ref_digits17(double a, int *x10_out, int *dir)
{
    /* a = m * 2^e with m < 2^53 (a is normal in this range): the bits
     * themselves, as frexp() would give them (a = fr * 2^e2, fr in [0.5,
     * 1), m = fr * 2^53) */
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int e2 = (int)(bits >> 52) - 1022;
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int e = e2 - 53;
    /* x10 = floor(log10(a)): log10(2) * (e2 - 1) rounded down is at most one
     * below it (an arithmetic shift rounds negatives down too); the loop
     * settles it (and a rounding that carries to 18 digits) by looking at
     * the digit count. */
    int x10 = ((e2 - 1) * 78913) >> 18; /* 78913 / 2^18 just below log10(2) */
    uint64_t d = 0;
    for (int tries = 0; tries < 4; tries++) {
        int k = 16 - x10;
        if (k < 0 || k > 22)
            break;
        d = ref_scaled_round(m, e, k, dir);
        if (d >= ref_pow10_u64[17])
            x10++;
        else if (d < ref_pow10_u64[16])
            x10--;
        else
            break;
        d = 0;
    }
    *x10_out = x10;
    return d;
}

/* The decimal digits of d (nd of them, no more than 17) into dig, without
 * trailing zeros; returns their count. */
static int ref_digits_of(uint64_t d, int nd, char dig[18])
{
    for (int i = nd - 1; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10u);
        d /= 10u;
    }
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    return nd;
}

/* a, nd significant digits dig[] (first digit worth 10^x10), laid out as
 * %.17g lays it out (fixed for -4 <= x10 < 17, else d.ddde-X) with
 * jansson's touch-ups: ".0" on integral values, no '+' and no leading
 * zeros in the exponent. Returns the length; buf is NUL-terminated. */
static int ref_layout(bool neg, const char *dig, int nd, int x10, char *buf)
{
    int o = 0;
    if (neg)
        buf[o++] = '-';
    if (x10 >= 17 || x10 < -4) {
        buf[o++] = dig[0];
        if (nd > 1) {
            buf[o++] = '.';
            for (int i = 1; i < nd; i++)
                buf[o++] = dig[i];
        }
        o += snprintf(buf + o, 8, "e%d", x10);
    } else if (x10 >= 0) {
        for (int i = 0; i <= x10; i++)
            buf[o++] = i < nd ? dig[i] : '0';
        buf[o++] = '.';
        if (nd > x10 + 1)
            for (int i = x10 + 1; i < nd; i++)
                buf[o++] = dig[i];
        else
            buf[o++] = '0';
    } else {
        buf[o++] = '0';
        buf[o++] = '.';
        for (int i = 0; i < -x10 - 1; i++)
            buf[o++] = '0';
        for (int i = 0; i < nd; i++)
            buf[o++] = dig[i];
    }
    buf[o] = '\0';
    return o;
}

/* 10^n as a double, exact for n <= 22. */
static const double ref_pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Whether the decimal D * 10^s reads back as a. When D < 2^53 and |s| <=
 * 22 both D and 10^|s| are exact doubles and one IEEE multiplication or
 * division rounds their exact product or quotient correctly, which is what
 * strtod gives (Clinger's fast path); otherwise strtod itself decides. */
static bool ref_reads_back(uint64_t D, int s, double a)
{
    if (D < (1ull << 53) && s >= -22 && s <= 22)
        return (s >= 0 ? (double)D * ref_pow10_exact[s] : (double)D / ref_pow10_exact[-s]) == a;
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%llue%d", (unsigned long long)D, s);
    return strtod(tmp, NULL) == a;
}

/* D / 10^k rounded to nearest (halves up; the caller checks the result). */
static uint64_t ref_div_round(uint64_t D, int k)
{
    uint64_t p = ref_pow10_u64[k];
    return (D + p / 2) / p;
}

/* Shortest digits of a > 0 given its 17 correctly rounded digits d17
 * (first worth 10^x10): the fewest digits that read back as a, the nearest
 * to a among those. A decimal of 15 digits or fewer that reads back lies
 * within 2^-53 relative of a, far less than half a step of 15 digits
 * (10^-15 relative at least), so it is d17 rounded to 15 digits with its
 * trailing zeros dropped: one candidate. A 16-digit step can be finer than
 * the interval of reals that read back as a, so the 16-digit rounding and
 * its neighbours up to two steps away are tried, nearest first. Otherwise
 * the 17 digits, which always read back. */
static int ref_shortest_from17(double a, uint64_t d17, int *x10, char dig[18])
{
    uint64_t d15 = ref_div_round(d17, 2);
    if (d15 < ref_pow10_u64[15] && ref_reads_back(d15, *x10 - 14, a))
        return ref_digits_of(d15, 15, dig);
    if (d15 == ref_pow10_u64[15] && ref_reads_back(1, *x10 + 1, a)) { /* 99..9|5 carried */
        (*x10)++;
        return ref_digits_of(1, 1, dig);
    }
    uint64_t d16 = ref_div_round(d17, 1);
    int64_t side = (int64_t)(d17 - d16 * 10u) >= 0 ? 1 : -1;
    if (d17 % 10u == 5u) {
        /* rounding the rounded 17 digits can go the wrong way: ask the C
         * library for the correctly rounded 16 */
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.15e", a);
        uint64_t D = (uint64_t)(tmp[0] - '0');
        for (int i = 2; i <= 16; i++)
            D = D * 10u + (uint64_t)(tmp[i] - '0');
        if (D >= ref_pow10_u64[15] && D < ref_pow10_u64[16] && D != d16) {
            side = d16 > D ? 1 : -1; /* a lies between D and the old d16 */
            d16 = D;
        }
    }
    /* which side of the 16-digit rounding a lies on: that neighbour first */
    static const int order[5] = {0, 1, -1, 2, -2};
    for (int i = 0; i < 5; i++) {
        uint64_t c = d16 + (uint64_t)(order[i] * side);
        if (c >= ref_pow10_u64[15] && c < ref_pow10_u64[16] && ref_reads_back(c, *x10 - 15, a))
            return ref_digits_of(c, 16, dig);
    }
    return ref_digits_of(d17, 17, dig);
}

/* The same outside the exact range: the digits %.*e gives at 15, 16 and 17
 * significant digits (each correctly rounded by the C library), the first
 * that reads back; at 16 its neighbours are tried as above. A subnormal's
 * interval of reals that read back is wider than 2^-53 relative (5e-324
 * reads back from "5e-324" and from 15-digit strings alike), so for them
 * every count from 1 digit up is tried. */
static int ref_shortest_libc(double a, int *x10, char dig[18])
{
    char tmp[40];
    for (int p = a < DBL_MIN ? 1 : 15; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, a);
        uint64_t D = (uint64_t)(tmp[0] - '0');
        for (int i = 2; i <= p; i++)
            D = D * 10u + (uint64_t)(tmp[i] - '0');
        int e = atoi(tmp + (p > 1 ? p + 2 : 2)); /* after "d.ddd" (or "d") and 'e' */
        if (p == 17 || ref_reads_back(D, e - (p - 1), a)) {
            *x10 = e;
            return ref_digits_of(D, p, dig);
        }
        if (p == 16) {
            static const int order[4] = {1, -1, 2, -2};
            for (int i = 0; i < 4; i++) {
                uint64_t c = D + (uint64_t)(int64_t)order[i];
                if (c >= ref_pow10_u64[15] && c < ref_pow10_u64[16] && ref_reads_back(c, e - 15, a)) {
                    *x10 = e;
                    return ref_digits_of(c, 16, dig);
                }
            }
        }
    }
    return 0; /* not reached: 17 digits always read back */
}

static int ref_shortest(double v, char buf[PROTO_DOUBLE_MAX])
{
    if (v == 0.0) {
        int n = signbit(v) ? 4 : 3;
        memcpy(buf, signbit(v) ? "-0.0" : "0.0", (size_t)n + 1);
        return n;
    }
    double a = fabs(v);
    char dig[18];
    int x10 = 0, nd = 0;
    int dir;
    uint64_t d17 = a >= 1e-4 && a < 1e16 ? ref_digits17(a, &x10, &dir) : 0;
    if (d17)
        nd = ref_shortest_from17(a, d17, &x10, dig);
    else
        nd = ref_shortest_libc(a, &x10, dig);
    return ref_layout(v < 0, dig, nd, x10, buf);
}

/* ---- the powers of ten of the shortest writer --------------------------- */

/* Non-negative integers of up to 64 * 32 bits, little-endian limbs: just
 * enough arithmetic to check proto/proto_pow10.h exactly. */
typedef struct big {
    uint32_t l[64];
} big;

static void big_set(big *b, uint64_t v)
{
    memset(b, 0, sizeof *b);
    b->l[0] = (uint32_t)v;
    b->l[1] = (uint32_t)(v >> 32);
}

static void big_mul(big *b, uint32_t m)
{
    uint64_t carry = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t x = (uint64_t)b->l[i] * m + carry;
        b->l[i] = (uint32_t)x;
        carry = x >> 32;
    }
    ck_assert_uint_eq(carry, 0);
}

static void big_shl(big *b, int n)
{
    for (; n >= 32; n -= 32) {
        ck_assert_uint_eq(b->l[63], 0);
        memmove(b->l + 1, b->l, 63 * sizeof b->l[0]);
        b->l[0] = 0;
    }
    if (n) {
        ck_assert_uint_eq(b->l[63] >> (32 - n), 0);
        for (int i = 63; i > 0; i--)
            b->l[i] = b->l[i] << n | b->l[i - 1] >> (32 - n);
        b->l[0] <<= n;
    }
}

static void big_shr(big *b, int n)
{
    for (; n >= 32; n -= 32) {
        memmove(b->l, b->l + 1, 63 * sizeof b->l[0]);
        b->l[63] = 0;
    }
    if (n) {
        for (int i = 0; i < 63; i++)
            b->l[i] = b->l[i] >> n | b->l[i + 1] << (32 - n);
        b->l[63] >>= n;
    }
}

static int big_cmp(const big *a, const big *b)
{
    for (int i = 63; i >= 0; i--)
        if (a->l[i] != b->l[i])
            return a->l[i] < b->l[i] ? -1 : 1;
    return 0;
}

static int big_bits(const big *b)
{
    for (int i = 63; i >= 0; i--)
        if (b->l[i])
            return 32 * i + 32 - __builtin_clz(b->l[i]);
    return 0;
}

/* G = {hi, lo} as a big number, plus add (0 or -1). */
static void big_g(big *b, const uint64_t g[2], int add)
{
    big_set(b, g[1]);
    b->l[2] = (uint32_t)g[0];
    b->l[3] = (uint32_t)(g[0] >> 32);
    if (add < 0) { /* minus one: g is never 0 */
        int i = 0;
        while (b->l[i] == 0)
            b->l[i++] = UINT32_MAX;
        b->l[i]--;
    }
}

/* Every entry of proto/proto_pow10.h, by exact arithmetic: for k <= 0 with
 * an integral scale, 10^-k * 2^(125 - F) itself (F = floor(log2(10^-k))),
 * else the floor of it plus one. */
START_TEST(test_pow10_table)
{
    for (int k = PROTO_POW10_KMIN; k <= PROTO_POW10_KMAX; k++) {
        const uint64_t *g = proto_pow10_g[k - PROTO_POW10_KMIN];
        int e = -k, f, s;
        big p, x, y;
        big_set(&p, 1);
        for (int i = 0; i < (e >= 0 ? e : -e); i++)
            big_mul(&p, 10); /* 10^|e| */
        if (e >= 0) {
            f = big_bits(&p) - 1;
        } else {
            big q = p; /* F = -ceil(log2(10^-e)) */
            int bits = big_bits(&q);
            big one;
            big_set(&one, 1);
            big_shl(&one, bits - 1);
            f = big_cmp(&q, &one) == 0 ? -(bits - 1) : -bits;
        }
        s = 125 - f;
        if (e >= 0) {
            x = p;
            if (s >= 0)
                big_shl(&x, s);
            else
                big_shr(&x, -s);
            big_g(&y, g, s >= 0 ? 0 : -1);
            ck_assert_msg(big_cmp(&x, &y) == 0, "pow10 entry %d", k);
        } else {
            /* (g - 1) * 10^-e <= 2^s < g * 10^-e */
            big two, lo, hi;
            big_set(&two, 1);
            big_shl(&two, s);
            big_g(&lo, g, -1);
            big_g(&hi, g, 0);
            for (int i = 0; i < -e; i++) {
                big_mul(&lo, 10);
                big_mul(&hi, 10);
            }
            ck_assert_msg(big_cmp(&lo, &two) <= 0 && big_cmp(&two, &hi) < 0, "pow10 entry %d", k);
        }
    }
}
END_TEST

/* The Schubfach writer gives the reference writer's text (the fewest
 * digits that read back, the nearest of them, the even one of two): on
 * three million random bit patterns, 200,000 subnormals from the smallest
 * up, every power of two with three neighbours on each side, every power of
 * ten with three neighbours, and 200 random significands at every
 * exponent. */
START_TEST(test_shortest_matches_reference)
{
    char a[PROTO_DOUBLE_MAX], b[PROTO_DOUBLE_MAX];
    size_t checked = 0;
#define SAME(d)                                                                                    \
    do {                                                                                           \
        double d_ = (d);                                                                           \
        if (!isfinite(d_))                                                                         \
            break;                                                                                 \
        int na = proto_json_format_shortest(d_, a), nb = ref_shortest(d_, b);                     \
        ck_assert_msg(na == nb && strcmp(a, b) == 0, "%a: %s, the reference %s", d_, a, b);      \
        checked++;                                                                                 \
    } while (0)
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < RANDOM_N(3000000); i++) {
        uint64_t bits = xs_next(&x);
        double d;
        memcpy(&d, &bits, sizeof d);
        SAME(d);
    }
    for (uint64_t c = 1; c <= 200000; c++) {
        double d;
        memcpy(&d, &c, sizeof d);
        SAME(d);
    }
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1.0, e), up = p, down = p;
        SAME(p);
        for (int i = 0; i < 3; i++) {
            up = nextafter(up, INFINITY);
            down = nextafter(down, 0.0);
            SAME(up);
            SAME(down);
        }
    }
    for (int e = -323; e <= 308; e++) {
        char t[16];
        snprintf(t, sizeof t, "1e%d", e);
        double p = strtod(t, NULL), up = p, down = p;
        SAME(p);
        for (int i = 0; i < 3; i++) {
            up = nextafter(up, INFINITY);
            down = nextafter(down, 0.0);
            SAME(up);
            SAME(down);
        }
    }
    for (uint64_t be = 1; be < 2047; be++)
        for (int i = 0; i < 200; i++) {
            uint64_t bits = be << 52 | (xs_next(&x) & ((1ull << 52) - 1));
            double d;
            memcpy(&d, &bits, sizeof d);
            SAME(d);
        }
#undef SAME
    ck_assert_uint_gt(checked, RANDOM_N(3000000) + 500000);
}
END_TEST

/* A URDF sent as it is, where each decoder expects JSON: the same
 * invalid_json words as any syntax error, then the JSON that this place
 * wants around the URDF, whole (not cut by the message's size). */
START_TEST(test_xml_hints)
{
    static const char urdf[] = "\n  <robot name=\"arm\"><link name=\"a\"/></robot>";
    const size_t n = strlen(urdf);
    static const char chain[] =
        "{\"kind\":\"urdf\",\"urdf\":\"<robot ...>\",\"base\":...,\"tip\":...}";
    char want[256];
    proto_error e;

    proto_job *job = NULL;
    ck_assert_int_eq(proto_job_decode(urdf, n, PROTO_SOLVE, NULL, NULL, NULL, &job, &e), -1);
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    ck_assert_str_eq(e.path, "");
    ck_assert_ptr_nonnull(strstr(e.message, "(line 2, column 3)"));
    snprintf(want, sizeof want,
             "; this looks like XML: send {\"chain\":%s,\"target\":...} (ikd chain FILE.urdf "
             "--base B --tip T prints the chain)",
             chain);
    ck_assert_str_eq(e.message + strlen(e.message) - strlen(want), want);

    ck_assert_int_eq(proto_job_decode(urdf, n, PROTO_BATCH, NULL, NULL, NULL, &job, &e), -1);
    snprintf(want, sizeof want,
             "; this looks like XML: send {\"chain\":%s,\"targets\":[...]} (ikd chain "
             "FILE.urdf --base B --tip T prints the chain)",
             chain);
    ck_assert_str_eq(e.message + strlen(e.message) - strlen(want), want);

    /* /v1/chains takes the chain object itself, not {"chain":...} */
    ck_assert_ptr_null(proto_chain_decode(urdf, n, NULL, &e));
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    snprintf(want, sizeof want,
             "; this looks like XML: /v1/chains takes the chain object %s (ikd chain FILE.urdf "
             "--base B --tip T prints it)",
             chain);
    ck_assert_str_eq(e.message + strlen(e.message) - strlen(want), want);
    ck_assert_ptr_null(strstr(e.message, "{\"chain\":"));

    /* a stream message: the URDF goes in an open message */
    proto_stream_msg m;
    ck_assert_int_eq(proto_stream_decode(urdf, n, &m, &e), -1);
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    snprintf(want, sizeof want,
             "; this looks like XML: a URDF goes in the open message, as "
             "{\"type\":\"open\",\"stream\":...,\"chain\":%s}",
             chain);
    ck_assert_str_eq(e.message + strlen(e.message) - strlen(want), want);

    /* the same words before the hint everywhere; no hint for other text */
    ck_assert_int_eq(proto_job_decode("nonsense", 8, PROTO_SOLVE, NULL, NULL, NULL, &job, &e),
                     -1);
    ck_assert_ptr_null(strstr(e.message, "XML"));
    ck_assert_ptr_null(proto_chain_decode("{\"a\" <", 7, NULL, &e));
    ck_assert_ptr_null(strstr(e.message, "XML"));
}
END_TEST

/* A text that starts with a UTF-8 byte order mark: a message that says
 * so, the same for a solve, a chain and a stream message (jansson names an
 * invisible character). */
START_TEST(test_bom)
{
    static const char bom[] = "\xEF\xBB\xBF{\"type\":\"close\",\"stream\":\"a\"}";
    static const char want[] = "the JSON starts with a UTF-8 byte order mark (bytes EF BB BF); "
                               "send it without one";
    const size_t n = strlen(bom);
    proto_error e;
    proto_job *job = NULL;
    ck_assert_int_eq(proto_job_decode(bom, n, PROTO_SOLVE, NULL, NULL, NULL, &job, &e), -1);
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    ck_assert_str_eq(e.message, want);
    ck_assert_ptr_null(proto_chain_decode(bom, n, NULL, &e));
    ck_assert_str_eq(e.message, want);
    proto_stream_msg m;
    ck_assert_int_eq(proto_stream_decode(bom, n, &m, &e), -1);
    ck_assert_int_eq(e.code, PROTO_E_INVALID_JSON);
    ck_assert_str_eq(e.message, want);
}
END_TEST

/* A decimal text's significant digits (leading and trailing zeros dropped)
 * and the power of ten of its first digit, for comparing two texts of the
 * same number written in different layouts. */
static void decimal_parts(const char *s, char *dig, int *x10)
{
    int n = 0, before = -1, all = 0, lead = 0;
    for (; *s && *s != 'e' && *s != 'E'; s++) {
        if (*s == '-')
            continue;
        if (*s == '.') {
            before = all;
            continue;
        }
        if (n == 0 && *s == '0') {
            lead++;
        } else {
            dig[n++] = *s;
        }
        all++;
    }
    if (before < 0)
        before = all;
    int e = *s ? atoi(s + 1) : 0;
    while (n > 1 && dig[n - 1] == '0')
        n--;
    if (n == 0) { /* zero */
        dig[n++] = '0';
        lead = before - 1;
        e = 0;
    }
    dig[n] = '\0';
    *x10 = before + e - 1 - lead; /* the power of ten of the first digit */
}

/* d with k significant digits by proto_json_format_digits, against the C
 * library's correctly rounded %.*e: the same digits (trailing zeros
 * dropped) and exponent, in the layout proto_json_format_shortest uses. */
static void check_digits(double d, int k)
{
    char buf[PROTO_DOUBLE_MAX], ref[64], dg[40], dr[40];
    int n = proto_json_format_digits(d, k, buf);
    ck_assert_int_eq(n, (int)strlen(buf));
    snprintf(ref, sizeof ref, "%.*e", k - 1, d);
    int xg, xr;
    decimal_parts(buf, dg, &xg);
    decimal_parts(ref, dr, &xr);
    ck_assert_msg(strcmp(dg, dr) == 0 && xg == xr && (buf[0] == '-') == (ref[0] == '-'),
                  "%a at %d digits: %s, the C library says %s", d, k, buf, ref);
    /* the layout is the shortest form's: the rounded value printed shortest
     * is the same text when it reads back to a double that short (15
     * digits or fewer of a normal double) */
    if (k <= 15 && fabs(d) >= DBL_MIN && isfinite(strtod(buf, NULL))) {
        char s[PROTO_DOUBLE_MAX];
        proto_json_format_shortest(strtod(buf, NULL), s);
        ck_assert_msg(strcmp(s, buf) == 0, "%a at %d digits: %s, laid out shortest %s", d, k,
                      buf, s);
    }
}

/* Numbers at a chosen count of significant digits (options.digits):
 * hand-picked values and ties (exact halves round to even, as the C
 * library does), then millions of random doubles at every count 1..17
 * against snprintf("%.*e"). */
START_TEST(test_digits)
{
    static const struct {
        double v;
        int k;
        const char *text;
    } known[] = {
        {0.1, 17, "0.10000000000000001"},
        {0.1, 6, "0.1"},
        {1.0 / 3.0, 6, "0.333333"},
        {2.0 / 3.0, 3, "0.667"},
        {-2.5, 1, "-2.0"},
        {3.5, 1, "4.0"},
        {0.125, 2, "0.12"},
        {0.375, 2, "0.38"},
        {999.96, 4, "1000.0"},
        {0.00099996, 4, "0.001"},
        {1e-5, 3, "1e-5"},
        {1.23456e-7, 3, "1.23e-7"},
        {123456789.0, 3, "123000000.0"},
        {1.5e300, 9, "1.5e300"},
        {0.0, 6, "0.0"},
        {-0.0, 6, "-0.0"},
        {5e-324, 3, "4.94e-324"},
        {0.97780456074152, 6, "0.977805"},
        {9.5, 1, "10.0"},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        char buf[PROTO_DOUBLE_MAX];
        proto_json_format_digits(known[i].v, known[i].k, buf);
        ck_assert_msg(strcmp(buf, known[i].text) == 0, "%a at %d: %s, not %s", known[i].v,
                      known[i].k, buf, known[i].text);
        if (known[i].v != 0.0)
            check_digits(known[i].v, known[i].k);
    }
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < RANDOM_N(3000000); i++) {
        double d;
        if (i % 2 == 0) {
            uint64_t bits = xs_next(&x);
            if (i % 64 == 0)
                bits &= 0x800fffffffffffffull;
            memcpy(&d, &bits, sizeof d);
            if (!isfinite(d) || d == 0.0)
                continue;
        } else {
            d = random_double(&x);
            if (d == 0.0)
                continue;
        }
        check_digits(d, 1 + i % 17);
    }
    /* small magnitudes, 1e-28 to 1e-4, where the digits come from exact
     * integer arithmetic (digits_small) rather than the C library: a
     * quaternion's noise components are there; and dyadic values, some of
     * which are exact halves at some count */
    for (int i = 0; i < RANDOM_N(400000); i++) {
        double u = (double)(xs_next(&x) >> 11) * 0x1.0p-53;
        double d = pow(10.0, -28.0 + 24.0 * u) * (i % 2 ? -1.0 : 1.0);
        check_digits(d, 1 + i % 17);
        check_digits(ldexp((double)(1 + 2 * (int)(xs_next(&x) % 4096)), -14 - i % 70), 1 + i % 15);
    }
    /* exact ties at every count: small integers and halves are exact */
    for (int i = 1; i < 20000; i++) {
        double d = (double)i + 0.5;
        check_digits(d, 1 + i % 6);
        check_digits((double)i * 0.125, 1 + i % 5);
        check_digits((double)i * 1e-3 + 5e-4, 1 + i % 5);
    }
}
END_TEST

/* ---- the number layouts at their edges ----------------------------------- */

/* Texts whose digits end in zeros (the writer counts them) and magnitudes
 * at each edge of the layout: the last power of ten written with an
 * exponent below (x10 = -5) and the first without (-4), 0.x (-1), d.ddd
 * (0), the longest integral form (16) and the first exponent above (17);
 * each as it is and negated. */
START_TEST(test_number_texts)
{
    static const struct {
        double v;
        const char *text;
    } known[] = {
        {0.5, "0.5"},
        {0.25, "0.25"},
        {1.0, "1.0"},
        {10.0, "10.0"},
        {100.0, "100.0"},
        {1e8, "100000000.0"},
        {1e15, "1000000000000000.0"},
        {1e16, "10000000000000000.0"},
        {1e17, "1e17"},
        {1e18, "1e18"},
        {1e21, "1e21"},
        {1e100, "1e100"},
        {1e308, "1e308"},
        {123456789012345680.0, "1.2345678901234568e17"},
        {12345678901234568.0, "12345678901234568.0"},
        {99999999999999980.0, "99999999999999980.0"},
        {9007199254740993.0, "9007199254740992.0"},
        {4503599627370497.0, "4503599627370497.0"},
        {1234567.0, "1234567.0"},
        {123456789.0, "123456789.0"},
        {100000000.5, "100000000.5"},
        {1.5e-5, "1.5e-5"},
        {1.2345678901234566e-5, "1.2345678901234566e-5"},
        {9.99999999999999e-5, "9.99999999999999e-5"},
        {1e-4, "0.0001"},
        {1.5e-4, "0.00015"},
        {1.2345678901234567e-4, "0.00012345678901234567"},
        {0.001, "0.001"},
        {0.01, "0.01"},
        {0.1, "0.1"},
        {0.7, "0.7"},
        {0.12345678901234568, "0.12345678901234568"},
        {0.030033999792067334, "0.030033999792067334"},
        {0.9919273676577025, "0.9919273676577025"},
        {9.999999999999998, "9.999999999999998"},
        {1.2345678901234567, "1.2345678901234567"},
        {1e-10, "1e-10"},
        {2e-17, "2e-17"},
        {6.123233995736766e-17, "6.123233995736766e-17"},
        {1e-100, "1e-100"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {1e-320, "1e-320"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        for (int neg = 0; neg < 2; neg++) {
            double v = neg ? -known[i].v : known[i].v;
            char want[PROTO_DOUBLE_MAX + 1], buf[PROTO_DOUBLE_MAX];
            snprintf(want, sizeof want, "%s%s", neg ? "-" : "", known[i].text);
            int n = proto_json_format_shortest(v, buf);
            ck_assert_msg(strcmp(buf, want) == 0, "%a: %s, not %s", v, buf, want);
            ck_assert_int_eq(n, (int)strlen(want));
            n = proto_json_format_digits(v, 17, buf);
            ck_assert_int_eq(n, (int)strlen(buf));
            ck_assert(strtod(buf, NULL) == v);
        }
}
END_TEST

/* proto_json_format_digits' text built without it: the C library's
 * correctly rounded digits (%.*e), trailing zeros dropped, laid out by the
 * reference layout. */
static int ref_digits_text(double d, int k, char buf[PROTO_DOUBLE_MAX])
{
    if (d == 0.0)
        return snprintf(buf, PROTO_DOUBLE_MAX, "%s", signbit(d) ? "-0.0" : "0.0");
    char tmp[64], dig[18];
    snprintf(tmp, sizeof tmp, "%.*e", k - 1, fabs(d));
    int nd = 0;
    const char *e = strchr(tmp, 'e');
    for (const char *p = tmp; p < e; p++)
        if (*p >= '0' && *p <= '9')
            dig[nd++] = *p;
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    return ref_layout(d < 0, dig, nd, atoi(e + 1), buf);
}

/* Every layout the writers have, for every count of significant digits
 * (1..17) at every power of ten from 1e-12 to 1e24 and at the far ones
 * (exponents of one, two and three digits, subnormals), both signs: the
 * shortest text against the reference writer, and options.digits at that
 * count and at another against the C library's digits (byte for byte,
 * through the reference layout). */
START_TEST(test_number_grid)
{
    static const int far[] = {-324, -323, -320, -310, -308, -307, -300, -100, -99,
                              -20,  -17,  -16,  25,   99,   100,  300,  307,  308};
    int x10s[37 + sizeof far / sizeof *far], nx = 0;
    for (int x10 = -12; x10 <= 24; x10++)
        x10s[nx++] = x10;
    for (size_t i = 0; i < sizeof far / sizeof *far; i++)
        x10s[nx++] = far[i];
    uint64_t x = 0x6a09e667f3bcc909ull;
    size_t checked = 0;
    for (int i = 0; i < nx; i++)
        for (int nd = 1; nd <= 17; nd++)
            for (int sample = 0; sample < 60; sample++) {
                /* nd digits, the first and (but for sample 0: 1, 10..0
                 * or 9..9) the last not zero */
                char text[40];
                int o = 0;
                for (int j = 0; j < nd; j++) {
                    int dg = (int)(xs_next(&x) % 10);
                    if (sample == 0)
                        dg = j == 0;
                    else if (sample == 1)
                        dg = 9;
                    else if ((j == 0 || j == nd - 1) && dg == 0)
                        dg = 1 + (int)(xs_next(&x) % 9);
                    text[o++] = (char)('0' + dg);
                    if (j == 0)
                        text[o++] = '.';
                }
                snprintf(text + o, sizeof text - (size_t)o, "e%d", x10s[i]);
                double a = strtod(text, NULL);
                if (!isfinite(a) || a == 0.0)
                    continue;
                for (int neg = 0; neg < 2; neg++) {
                    double d = neg ? -a : a;
                    char got[PROTO_DOUBLE_MAX], want[PROTO_DOUBLE_MAX];
                    int ng = proto_json_format_shortest(d, got), nw = ref_shortest(d, want);
                    ck_assert_msg(ng == nw && strcmp(got, want) == 0,
                                  "%a (%s): %s, the reference %s", d, text, got, want);
                    int ks[2] = {nd, 1 + (int)(xs_next(&x) % 17)};
                    for (int j = 0; j < 2; j++) {
                        ng = proto_json_format_digits(d, ks[j], got);
                        nw = ref_digits_text(d, ks[j], want);
                        ck_assert_msg(ng == nw && strcmp(got, want) == 0,
                                      "%a at %d digits: %s, the C library's %s", d, ks[j], got,
                                      want);
                    }
                    checked++;
                }
            }
    ck_assert_uint_gt(checked, 90000);
}
END_TEST

/* Numbers appended by the writer: the same text as the formatters give,
 * one after another, in a buffer that starts in the caller's storage and
 * grows; and the longest texts written into a caller's buffer of just
 * PROTO_DOUBLE_MAX + 1 bytes on the heap (the sanitizer builds catch a
 * byte written past it). */
START_TEST(test_writer_numbers)
{
    char small[40], want[8192], one[PROTO_DOUBLE_MAX];
    proto_jw w;
    proto_jw_init(&w, small, sizeof small);
    size_t n = 0;
    uint64_t x = 0xbb67ae8584caa73bull;
    for (int i = 0; i < 200; i++) {
        double d = random_double(&x);
        int digits = i % 19 - 1; /* -1 and 0: the shortest form */
        if (i % 3 == 0) {
            proto_jw_double(&w, d);
            n += (size_t)proto_json_format_shortest(d, one);
        } else {
            proto_jw_double_digits(&w, d, digits);
            n += (size_t)proto_json_format_digits(d, digits, one);
        }
        ck_assert_uint_lt(n + 1, sizeof want);
        memcpy(want + n - strlen(one), one, strlen(one));
        proto_jw_raw(&w, ",", 1);
        want[n++] = ',';
    }
    want[n] = '\0';
    size_t len = 0;
    char *s = proto_jw_finish(&w, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, n);
    ck_assert_str_eq(s, want);
    free(s);

    static const struct {
        double v;
        int digits;
        const char *text;
    } longest[] = {
        {-1.2345678901234567e-308, 0, "-1.2345678901234567e-308"},
        {-2.2250738585072014e-308, 0, "-2.2250738585072014e-308"},
        {-1.7976931348623157e308, 0, "-1.7976931348623157e308"},
        {-1.2345678901234567e-4, 0, "-0.00012345678901234567"},
        {-12345678901234568.0, 0, "-12345678901234568.0"},
        {-1.2345678901234567e-300, 17, "-1.2345678901234568e-300"},
        {-0.1, 17, "-0.10000000000000001"},
        {-1.2345678901234567e-4, 17, "-0.00012345678901234567"},
        {-9.8765432109876543e-5, 16, "-9.876543210987655e-5"},
    };
    for (size_t i = 0; i < sizeof longest / sizeof *longest; i++) {
        char *heap = malloc(PROTO_DOUBLE_MAX + 1);
        ck_assert_ptr_nonnull(heap);
        proto_jw_init(&w, heap, PROTO_DOUBLE_MAX + 1);
        proto_jw_double_digits(&w, longest[i].v, longest[i].digits);
        ck_assert(w.p == heap);
        ck_assert_uint_eq(w.len, strlen(longest[i].text));
        ck_assert(memcmp(w.p, longest[i].text, w.len) == 0);
        proto_jw_release(&w);
        free(heap);
    }
}
END_TEST

/* Numbers in messages round-trip: a bound and the value that broke it
 * never print alike (%g wrote "[-1e+06, 1e+06] (got 1e+06)" for 1000000.5),
 * and every %g of a message reads back as the double it printed. */
START_TEST(test_message_numbers_round_trip)
{
    proto_error e;
    json_t *v = json_real(1000000.5);
    double d;
    ck_assert_int_eq(proto_json_number(v, "/target/position/2", -1e6, 1e6, &d, &e), -1);
    ck_assert_str_eq(e.message,
                     "target.position[2] must be within [-1000000, 1000000] (got 1000000.5)");
    json_decref(v);
    v = json_real(0.30000000000000004);
    ck_assert_int_eq(proto_json_positive(v, "/x", 0.3, &d, &e), -1);
    ck_assert_str_eq(e.message, "x must be > 0 and <= 0.3 (got 0.30000000000000004)");
    json_decref(v);

    /* the formatter: shortest text, fixed notation for integers below 1e16 */
    static const double cases[] = {1e6, 1000000.5, 0.1, 1e-7, 2.5e9, 123456789012345678.0,
                                   -0.0, 5e-324, 1.7976931348623157e308, 1.0 / 3.0};
    static const char *const want[] = {"1000000", "1000000.5", "0.1", "1e-07", "2500000000",
                                       "1.2345678901234568e+17", "-0", "5e-324",
                                       "1.7976931348623157e+308", "0.3333333333333333"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        proto_error_format_text(buf, sizeof buf, "%g", cases[i]);
        ck_assert_msg(strcmp(buf, want[i]) == 0, "%%g of case %zu: %s, want %s", i, buf,
                      want[i]);
        ck_assert(strtod(buf, NULL) == cases[i] || (cases[i] == 0 && strtod(buf, NULL) == 0));
    }
    /* the other conversions are printf's, with their arguments in order */
    char buf[128];
    size_t n = proto_error_format_text(buf, sizeof buf, "%s|%5.2f|%.6g|%zu|%lld|%*d|%.*s|%%|%c|%g",
                                       "ab", 3.14159, 1.0 / 3.0, (size_t)7, -8LL, 3, 9, 2,
                                       "xyz", 'q', 1e6);
    ck_assert_str_eq(buf, "ab| 3.14|0.333333|7|-8|  9|xy|%|q|1000000");
    ck_assert_uint_eq(n, strlen(buf));
    /* truncated like snprintf: the length the whole text needs */
    n = proto_error_format_text(buf, 6, "abc %g def", 1000000.5);
    ck_assert_str_eq(buf, "abc 1");
    ck_assert_uint_eq(n, strlen("abc 1000000.5 def"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_json");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 180); /* millions of doubles: seconds, more on a loaded machine */
    tcase_add_test(tc, test_parse_ok_and_errors);
    tcase_add_test(tc, test_dump_matches_jansson);
    tcase_add_test(tc, test_shortest);
    tcase_add_test(tc, test_pow10_table);
    tcase_add_test(tc, test_shortest_matches_reference);
    tcase_add_test(tc, test_digits);
    tcase_add_test(tc, test_number_texts);
    tcase_add_test(tc, test_number_grid);
    tcase_add_test(tc, test_writer_numbers);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_getters);
    tcase_add_test(tc, test_unknown_fields);
    tcase_add_test(tc, test_double_round_trip);
    tcase_add_test(tc, test_writer);
    tcase_add_test(tc, test_canonical_matches_jansson);
    tcase_add_test(tc, test_writer_printf);
    tcase_add_test(tc, test_xml_hints);
    tcase_add_test(tc, test_bom);
    tcase_add_test(tc, test_message_numbers_round_trip);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}


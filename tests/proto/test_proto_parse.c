/*
 * test_proto_parse.c: the JSON reader of proto/ (proto_json_loadb() and its
 * fast reader proto__json_read(), proto_json.c) against jansson's own
 * json_loadb(), text by text:
 *
 *   - when jansson accepts a text, proto_json_loadb() returns the same tree:
 *     same types everywhere (an integer is never a real, json_equal() alone
 *     would not say 1 and 1.0 differ in the way we need), same keys in the
 *     same order, same string bytes, reals bit for bit (-0.0 is not 0.0), and
 *     with JSON_REJECT_DUPLICATES the fast reader itself built it (it
 *     declines no valid text, else the speed-up would be lost silently);
 *   - when jansson refuses it, so does proto_json_loadb(), with the very same
 *     json_error_t (text, source, line, column, position).
 *
 * The texts: a hand-written corpus (every JSON type, every escape, \u0000,
 * surrogate pairs and lone surrogates, invalid UTF-8, control characters,
 * BOMs, NUL bytes, empty and whitespace-only input, trailing garbage, deep
 * nesting at and over jansson's limit, numbers at every edge of json_int_t
 * and of double), a few hundred thousand random numbers, and a few hundred
 * thousand random mutations (bytes flipped, inserted, deleted, slices
 * repeated, cut) of the fixture requests in tests/fixtures/, from a fixed
 * seed so that a failure repeats.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto_json.h"
#include "solver/ik_rng.h"

#define FIXTURES "tests/fixtures/"

/* ---- comparing with jansson --------------------------------------------- */

/* Where two trees first differ, for the failure message. */
static char diff_at[256];

static bool same_tree(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b)) {
        snprintf(diff_at, sizeof diff_at, "types %d and %d", json_typeof(a), json_typeof(b));
        return false;
    }
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) {
            snprintf(diff_at, sizeof diff_at, "object sizes %zu and %zu", json_object_size(a),
                     json_object_size(b));
            return false;
        }
        /* same keys in the same order */
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        while (ia && ib) {
            size_t la = json_object_iter_key_len(ia), lb = json_object_iter_key_len(ib);
            const char *ka = json_object_iter_key(ia), *kb = json_object_iter_key(ib);
            if (la != lb || memcmp(ka, kb, la) != 0) {
                snprintf(diff_at, sizeof diff_at, "keys \"%.40s\" and \"%.40s\"", ka, kb);
                return false;
            }
            if (!same_tree(json_object_iter_value(ia), json_object_iter_value(ib)))
                return false;
            ia = json_object_iter_next((json_t *)a, ia);
            ib = json_object_iter_next((json_t *)b, ib);
        }
        return !ia && !ib;
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(diff_at, sizeof diff_at, "array sizes %zu and %zu", json_array_size(a),
                     json_array_size(b));
            return false;
        }
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_tree(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    case JSON_STRING:
        if (json_string_length(a) != json_string_length(b) ||
            memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) != 0) {
            snprintf(diff_at, sizeof diff_at, "strings \"%.40s\" and \"%.40s\"",
                     json_string_value(a), json_string_value(b));
            return false;
        }
        return true;
    case JSON_INTEGER:
        if (json_integer_value(a) != json_integer_value(b)) {
            snprintf(diff_at, sizeof diff_at,
                     "integers %" JSON_INTEGER_FORMAT " and %" JSON_INTEGER_FORMAT,
                     json_integer_value(a), json_integer_value(b));
            return false;
        }
        return true;
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        if (memcmp(&x, &y, sizeof x) != 0) {
            snprintf(diff_at, sizeof diff_at, "reals %.17g and %.17g", x, y);
            return false;
        }
        return true;
    }
    default:
        return true; /* true, false, null: the type says it all */
    }
}

static bool same_error(const json_error_t *a, const json_error_t *b)
{
    return strcmp(a->text, b->text) == 0 && strcmp(a->source, b->source) == 0 &&
           a->line == b->line && a->column == b->column && a->position == b->position;
}

typedef struct {
    size_t valid, invalid;
} tally;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A printable excerpt of a text for failure messages. */
static const char *show(const char *t, size_t n)
{
    static char out[200];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < sizeof out; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", c);
    }
    out[o] = '\0';
    return out;
}

/* One text under one set of flags: proto_json_loadb() must answer exactly as
 * json_loadb() does. */
static void differ_exact(const char *t, size_t n, size_t flags, tally *c);

static void differ(const char *t, size_t n, size_t flags, tally *c)
{
    /* in a buffer of exactly n bytes, so that a sanitizer sees any read
     * beyond the text (the literals and buffers here have bytes after it) */
    char *x = malloc(n);
    if (!x) {
        ck_assert_uint_eq(n, 0);
        differ_exact(t, n, flags, c);
        return;
    }
    memcpy(x, t, n);
    differ_exact(x, n, flags, c);
    free(x);
}

static void differ_exact(const char *t, size_t n, size_t flags, tally *c)
{
    json_error_t ej, ep;
    memset(&ej, 0x5a, sizeof ej);
    memset(&ep, 0xa5, sizeof ep);
    json_t *j = json_loadb(t, n, flags, &ej);
    json_t *p = proto_json_loadb(t, n, flags, &ep);
    if (!j) {
        ck_assert_msg(!p, "accepted what jansson refuses (%s): %s", ej.text, show(t, n));
        ck_assert_msg(same_error(&ej, &ep),
                      "errors differ for %s: jansson \"%s\" %d:%d@%d, ours \"%s\" %d:%d@%d",
                      show(t, n), ej.text, ej.line, ej.column, ej.position, ep.text, ep.line,
                      ep.column, ep.position);
        c->invalid++;
        return;
    }
    ck_assert_msg(p != NULL, "refused what jansson accepts: %s", show(t, n));
    ck_assert_msg(same_tree(j, p), "trees differ (%s): %s", diff_at, show(t, n));
    ck_assert_msg(same_error(&ej, &ep), "error struct differs on success: %s", show(t, n));
    if (flags & JSON_REJECT_DUPLICATES) {
        json_t *f = proto__json_read(t, n, flags);
        ck_assert_msg(f != NULL, "the fast reader declined valid text: %s", show(t, n));
        json_decref(f);
    }
    json_decref(j);
    json_decref(p);
    c->valid++;
}

static const size_t all_flags[] = {JSON_REJECT_DUPLICATES, 0,
                                   JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, JSON_DECODE_ANY};

static void differ_all_flags(const char *t, size_t n, tally *c)
{
    for (size_t i = 0; i < sizeof all_flags / sizeof all_flags[0]; i++)
        differ(t, n, all_flags[i], c);
}

/* ---- the hand-written corpus ---------------------------------------------- */

typedef struct {
    const char *s;
    size_t n;
} text;

/* sizeof, not strlen: NUL bytes inside are part of the text */
#define T(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof lit - 1                                                                        \
    }

static const text corpus[] = {
    /* structure and whitespace */
    T("{}"),
    T("[]"),
    T(" \t\r\n{ \t\r\n} \t\r\n"),
    T("[ ]"),
    T("[[[]]]"),
    T("{\"a\":[{\"b\":[]},{}],\"c\":{\"d\":{}}}"),
    T("[1,[2,[3,{\"x\":[4]}]]]"),
    T("{\"a\" : 1 , \"b\" : [ 1 , 2 ] }"),
    T(""),
    T(" "),
    T("\n\n"),
    T("\t"),
    T("\f[]"),
    T("\v[]"),
    T("\xc2\xa0[]"),
    T("[1]//c"),
    T("/*c*/[1]"),
    T("[1,]"),
    T("[,1]"),
    T("[1 2]"),
    T("[1,,2]"),
    T("{,}"),
    T("{\"a\":1,}"),
    T("{\"a\"}"),
    T("{\"a\":}"),
    T("{\"a\" 1}"),
    T("{a:1}"),
    T("{'a':1}"),
    T("{\"a\":1 \"b\":2}"),
    T("{1:2}"),
    T("{\"a\":1]"),
    T("[1}"),
    T("["),
    T("{"),
    T("]"),
    T("}"),
    T("[{]"),
    T("{\"a\":[}"),
    T("[\"a\":1]"),
    /* trailing text */
    T("{}x"),
    T("{} {}"),
    T("[] []"),
    T("{}\0"),
    T("[1]\n\n "),
    T("{}\0 "),
    T("[1]]"),
    T("{}}"),
    T("[1],"),
    T("[1] \xef\xbb\xbf"),
    /* BOMs and NUL bytes outside strings */
    T("\xef\xbb\xbf{}"),
    T("\xef\xbb\xbf[1]"),
    T("\xfe\xff[]"),
    T("\0{}"),
    T("[1\0]"),
    T("[\0]"),
    T("{\"a\":\0}"),
    /* jansson drops one NUL right after a number or a literal (it reads the
     * byte after the token and puts it back, and a NUL put back is lost) */
    T("[1\0]"),
    T("[1\0\0]"),
    T("[1\0 ,2]"),
    T("[1.5\0]"),
    T("[1e5\0]"),
    T("[-0\0]"),
    T("[true\0]"),
    T("[null\0,false\0]"),
    T("{\"a\":1\0}"),
    T("[\"a\"\0]"),
    T("[[]\0]"),
    T("1\0"),
    T("true\0"),
    T("1\0 "),
    T("1 \0"),
    T("[1\0"),
    T("[-\0]"),
    T("[1.\0]"),
    /* top-level scalars (only with JSON_DECODE_ANY) */
    T("1"),
    T("-1"),
    T("1.5"),
    T("\"a\""),
    T("true"),
    T("false"),
    T("null"),
    T(" 0 "),
    T("\"\""),
    T("1e400"),
    T("\"\\u0000\""),
    /* literals */
    T("[true,false,null]"),
    T("[tru]"),
    T("[truex]"),
    T("[True]"),
    T("[nul]"),
    T("[nulll]"),
    T("[fals]"),
    T("[falsey]"),
    T("[t]"),
    T("[n]"),
    T("[f]"),
    T("[true"),
    T("[nulltrue]"),
    T("[true1]"),
    T("[null,]"),
    T("[NULL]"),
    /* integers */
    T("[0]"),
    T("[-0]"),
    T("[1]"),
    T("[-1]"),
    T("[42]"),
    T("[9007199254740993]"),
    T("[999999999999999999]"),
    T("[1000000000000000000]"),
    T("[9223372036854775806]"),
    T("[9223372036854775807]"),
    T("[9223372036854775808]"),
    T("[-9223372036854775807]"),
    T("[-9223372036854775808]"),
    T("[-9223372036854775809]"),
    T("[18446744073709551615]"),
    T("[18446744073709551616]"),
    T("[99999999999999999999]"),
    T("[123456789012345678901234567890]"),
    T("[-123456789012345678901234567890]"),
    T("[00]"),
    T("[01]"),
    T("[-01]"),
    T("[-00]"),
    T("[+1]"),
    T("[-]"),
    T("[--1]"),
    T("[- 1]"),
    T("[0x10]"),
    T("[1a]"),
    T("[1_000]"),
    T("[0,-0,00]"),
    /* reals */
    T("[0.0]"),
    T("[-0.0]"),
    T("[0e0]"),
    T("[-0e-0]"),
    T("[0E+0]"),
    T("[-0.0e999]"),
    T("[0.0e-999]"),
    T("[1.5]"),
    T("[-1.5]"),
    T("[0.1]"),
    T("[0.30000000000000004]"),
    T("[1e0]"),
    T("[1E5]"),
    T("[1e+5]"),
    T("[1e-5]"),
    T("[1.5E-5]"),
    T("[1e22]"),
    T("[1e23]"),
    T("[1e-22]"),
    T("[1e-23]"),
    T("[9007199254740992e0]"),
    T("[9007199254740993e0]"),
    T("[9007199254740993.0]"),
    T("[9007199254740992.5]"),
    T("[123456789012345678e-5]"),
    T("[1234567890123456789e-5]"),
    T("[12345678901234567890e-5]"),
    T("[123456789012345678901234567890.0]"),
    T("[0.1000000000000000055511151231257827021181583404541015625]"),
    T("[0.0000000000000000000000000000001]"),
    T("[1.00000000000000000000000000000000000001]"),
    T("[123456789.123456789123456789]"),
    T("[1e400]"),
    T("[-1e400]"),
    T("[1e309]"),
    T("[1e308]"),
    T("[1.7976931348623157e308]"),
    T("[1.7976931348623158e308]"),
    T("[1.7976931348623159e308]"),
    T("[-1.797693134862315807e308]"),
    T("[1.797693134862315708e308]"),
    T("[1e-400]"),
    T("[-1e-400]"),
    T("[1e-324]"),
    T("[2.4703282292062327e-324]"),
    T("[2.4703282292062328e-324]"),
    T("[4.9406564584124654e-324]"),
    T("[5e-324]"),
    T("[2.2250738585072011e-308]"),
    T("[2.2250738585072014e-308]"),
    T("[1e-307]"),
    T("[1e0000000000000000000001]"),
    T("[1e-0000000000000000000001]"),
    T("[1e99999999999999999999]"),
    T("[1e-99999999999999999999]"),
    T("[0e99999999999999999999]"),
    T("[1.]"),
    T("[.5]"),
    T("[1.e5]"),
    T("[1e]"),
    T("[1e+]"),
    T("[1e-]"),
    T("[1E]"),
    T("[1.0e]"),
    T("[1.5.5]"),
    T("[1e5e5]"),
    T("[1e5.5]"),
    T("[-.5]"),
    T("[NaN]"),
    T("[nan]"),
    T("[Infinity]"),
    T("[-Infinity]"),
    T("[inf]"),
    T("[0.5,-0.25,1e3,2E-3,0.000001,1000000.0]"),
    T("[3.141592653589793,2.718281828459045,1.4142135623730951]"),
    T("[0.12345678901234567,-9.8765432109876543e-10,4.4408920985006262e-16]"),
    /* strings and escapes */
    T("[\"\"]"),
    T("[\"abc\"]"),
    T("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"]"),
    T("[\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\uD83D\\uDE00\\uFFFF\\uffFE\"]"),
    T("[\"\\u007f\\u0080\\u07ff\\u0800\\ud7ff\\ue000\\udbff\\udfff\\ud800\\udc00\"]"),
    T("[\"\\u0001\\u001f\"]"),
    T("[\"\\u0000\"]"),
    T("[\"a\\u0000b\"]"),
    T("{\"\\u0000\":1}"),
    T("{\"a\\u0000\":1}"),
    T("[\"\\ud800\"]"),
    T("[\"\\udc00\"]"),
    T("[\"\\udfff\\ud800\"]"),
    T("[\"\\ud800\\u0041\"]"),
    T("[\"\\ud800x\"]"),
    T("[\"\\ud800\\\"]"),
    T("[\"\\ud800\\udbff\"]"),
    T("[\"\\ud800\\ud800\\udc00\"]"),
    T("[\"\\uZZZZ\"]"),
    T("[\"\\u12\"]"),
    T("[\"\\u12\"]\"]"),
    T("[\"\\u\"]"),
    T("[\"\\U0041\"]"),
    T("[\"\\x41\"]"),
    T("[\"\\a\"]"),
    T("[\"\\'\"]"),
    T("[\"\\0\"]"),
    T("[\"\\\"]"),
    T("[\"\\"),
    T("[\"abc]"),
    T("[\"abc"),
    T("[\""),
    T("[\"a\tb\"]"),
    T("[\"a\nb\"]"),
    T("[\"a\rb\"]"),
    T("[\"\x01\"]"),
    T("[\"\x1f\"]"),
    T("[\"\x7f\"]"),
    T("[\"a\0b\"]"),
    T("[\"\0\"]"),
    T("{\"a\0\":1}"),
    T("[\"\\\x01\"]"),
    T("[\"\\\xc3\xa9\"]"),
    T("[\"\\ud83d\\ude00x\\n\"]"),
    /* UTF-8 */
    T("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]"),
    T("[\"\xc2\x80\xdf\xbf\"]"),
    T("[\"\xe0\xa0\x80\xef\xbf\xbf\xed\x9f\xbf\xee\x80\x80\"]"),
    T("[\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\xf1\x80\x80\x80\xf3\xbf\xbf\xbf\"]"),
    T("{\"\xc3\xa9\":\"\xc3\xa9\"}"),
    T("[\"\xc0\xaf\"]"),
    T("[\"\xc1\xbf\"]"),
    T("[\"\xe0\x80\xaf\"]"),
    T("[\"\xe0\x9f\xbf\"]"),
    T("[\"\xed\xa0\x80\"]"),
    T("[\"\xed\xbf\xbf\"]"),
    T("[\"\xf0\x80\x80\x80\"]"),
    T("[\"\xf0\x8f\xbf\xbf\"]"),
    T("[\"\xf4\x90\x80\x80\"]"),
    T("[\"\xf5\x80\x80\x80\"]"),
    T("[\"\xf8\x88\x80\x80\x80\"]"),
    T("[\"\x80\"]"),
    T("[\"\xbf\"]"),
    T("[\"\xc3\"]"),
    T("[\"\xc3"),
    T("[\"\xe2\x82\"]"),
    T("[\"\xe2\x82"),
    T("[\"\xf0\x9f\x98\"]"),
    T("[\"\xff\"]"),
    T("[\"\xfe\"]"),
    T("[\"\xc3\x28\"]"),
    T("[\"\xe2\x28\xa1\"]"),
    T("[\"\xf0\x28\x8c\xbc\"]"),
    T("[\xc3\xa9]"),
    T("{\"\xff\":1}"),
    T("[1,\"\xc3\"]"),
    T("\xc3\xa9"),
    /* duplicate keys (also after unescaping, and in nested objects) */
    T("{\"a\":1,\"a\":2}"),
    T("{\"a\":1,\"b\":{\"a\":2}}"),
    T("{\"a\\u0062\":1,\"ab\":2}"),
    T("{\"a\":1,\"b\":2,\"a\":3}"),
    T("{\"\":1,\"\":2}"),
    T("{\"a\":{\"x\":1,\"x\":2}}"),
    T("[{\"a\":1},{\"a\":1}]"),
    T("{\"a\":[],\"A\":[]}"),
    T("{\"\\u00e9\":1,\"\xc3\xa9\":2}"),
    /* keys */
    T("{\"\":0}"),
    T("{\"a/b~c\":1}"),
    T("{\"\\n\\t\\\"\":[]}"),
    T("{\"k\\ud83d\\ude00\":null}"),
};

START_TEST(test_corpus)
{
    double t0 = now_s();
    tally c = {0, 0};
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++)
        differ_all_flags(corpus[i].s, corpus[i].n, &c);
    /* both kinds are well represented */
    ck_assert_uint_gt(c.valid, 200);
    ck_assert_uint_gt(c.invalid, 400);
    fprintf(stderr, "corpus: %zu texts x 4 flag sets: %zu valid, %zu invalid (%.2f s)\n",
            sizeof corpus / sizeof corpus[0], c.valid, c.invalid, now_s() - t0);
}
END_TEST

/* Long strings, long keys (escaped and not), long numbers. */
START_TEST(test_long_texts)
{
    double t0 = now_s();
    tally c = {0, 0};
    size_t n = 5000;
    char *t = malloc(4 * n + 64);
    ck_assert_ptr_nonnull(t);
    for (int variant = 0; variant < 6; variant++) {
        size_t o = 0;
        const char *pre = variant < 3 ? "[\"" : "{\"";
        memcpy(t, pre, 2);
        o = 2;
        for (size_t i = 0; i < n; i++) {
            if (variant % 3 == 1 && i % 7 == 0) {
                memcpy(t + o, "\\n", 2);
                o += 2;
            } else if (variant % 3 == 2 && i % 11 == 0) {
                memcpy(t + o, "\\u00e9", 6);
                o += 6;
            } else {
                t[o++] = (char)('a' + i % 26);
            }
        }
        const char *post = variant < 3 ? "\"]" : "\":1}";
        memcpy(t + o, post, strlen(post));
        o += strlen(post);
        differ_all_flags(t, o, &c);
    }
    /* a 1000-digit integer, real and fraction */
    for (int variant = 0; variant < 3; variant++) {
        size_t o = 0;
        t[o++] = '[';
        if (variant == 2) {
            memcpy(t + o, "0.", 2);
            o += 2;
        }
        for (size_t i = 0; i < 1000; i++)
            t[o++] = (char)('1' + i % 9);
        if (variant == 1) {
            memcpy(t + o, "e-990", 5);
            o += 5;
        }
        t[o++] = ']';
        differ_all_flags(t, o, &c);
    }
    free(t);
    ck_assert_uint_eq(c.valid + c.invalid, 9 * 4);
    fprintf(stderr, "long texts: %zu valid, %zu invalid (%.2f s)\n", c.valid, c.invalid,
            now_s() - t0);
}
END_TEST

/* Nesting at and over jansson's limit (JSON_PARSER_MAX_DEPTH counts every
 * value, scalars included). */
START_TEST(test_depth)
{
    double t0 = now_s();
    tally c = {0, 0};
    int max = JSON_PARSER_MAX_DEPTH;
    char *t = malloc((size_t)(max + 8) * 8 + 16);
    ck_assert_ptr_nonnull(t);
    const int depths[] = {1, 2, max - 2, max - 1, max, max + 1, max + 2, max + 5};
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        for (int inner = 0; inner < 4; inner++) {
            for (int kind = 0; kind < 3; kind++) {
                int n = depths[d];
                size_t o = 0;
                for (int i = 0; i < n; i++) {
                    if (kind == 0 || (kind == 2 && i % 2)) {
                        t[o++] = '[';
                    } else {
                        memcpy(t + o, "{\"k\":", 5);
                        o += 5;
                    }
                }
                /* innermost: nothing (an object needs a value), 1, "s", [] */
                static const char *const in[] = {"", "1", "\"s\"", "[]"};
                memcpy(t + o, in[inner], strlen(in[inner]));
                o += strlen(in[inner]);
                for (int i = n - 1; i >= 0; i--)
                    t[o++] = (kind == 0 || (kind == 2 && i % 2)) ? ']' : '}';
                differ_all_flags(t, o, &c);
            }
        }
    }
    free(t);
    ck_assert_uint_gt(c.valid, 20);
    ck_assert_uint_gt(c.invalid, 20);
    fprintf(stderr, "depth: %zu valid, %zu invalid (%.2f s)\n", c.valid, c.invalid, now_s() - t0);
}
END_TEST

/* ---- random texts ------------------------------------------------------- */

static ik_rng rng_state;

static uint64_t rnd(void)
{
    return ik_rng_next(&rng_state);
}

static size_t rnd_below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

static size_t put_digits(char *t, size_t o, size_t n, bool first_nonzero)
{
    for (size_t i = 0; i < n; i++) {
        int d = (int)rnd_below(10);
        /* runs of zeros and nines: the rounding edges */
        if (rnd_below(4) == 0)
            d = rnd_below(2) ? 0 : 9;
        if (i == 0 && first_nonzero && d == 0)
            d = 1 + (int)rnd_below(9);
        t[o++] = (char)('0' + d);
    }
    return o;
}

/* Random numbers, mostly valid, of every shape: as clients write them (%.17g,
 * %.6g of random doubles) and raw digit strings with exponents near the ends
 * of double. */
START_TEST(test_random_numbers)
{
    double t0 = now_s();
    rng_state.s = 0x1234abcd;
    tally c = {0, 0};
    char t[160];
    for (int k = 0; k < 150000; k++) {
        size_t o = 0;
        t[o++] = '[';
        int shape = (int)rnd_below(4);
        if (shape == 0) {
            uint64_t bits = rnd();
            double d;
            memcpy(&d, &bits, sizeof d);
            if (d != d)
                d = 1.0;
            o += (size_t)snprintf(t + o, 40, "%.17g", d);
        } else if (shape == 1) {
            double d = ((double)(rnd() >> 11) / 9007199254740992.0 - 0.5) * 4.0;
            d *= rnd_below(2) ? 1 : 1e3;
            switch (rnd_below(5)) {
            case 0:
                o += (size_t)snprintf(t + o, 40, "%.17g", d);
                break;
            case 1:
                o += (size_t)snprintf(t + o, 40, "%.15g", d);
                break;
            case 2:
                o += (size_t)snprintf(t + o, 40, "%.6g", d);
                break;
            case 3:
                o += (size_t)snprintf(t + o, 40, "%.3f", d);
                break;
            default:
                o += (size_t)snprintf(t + o, 40, "%.10e", d);
                break;
            }
        } else {
            if (rnd_below(2))
                t[o++] = '-';
            if (rnd_below(4) == 0)
                t[o++] = '0';
            else
                o = put_digits(t, o, 1 + rnd_below(shape == 2 ? 20 : 30), true);
            if (rnd_below(3)) {
                t[o++] = '.';
                o = put_digits(t, o, 1 + rnd_below(shape == 2 ? 20 : 30), false);
            }
            if (rnd_below(3)) {
                t[o++] = rnd_below(2) ? 'e' : 'E';
                size_t s = rnd_below(3);
                if (s)
                    t[o++] = s == 1 ? '+' : '-';
                static const int edges[] = {0,   1,   9,   15,  16,  22,  23,  37,  38,  290, 300,
                                            307, 308, 309, 320, 323, 324, 325, 330, 340, 400};
                int e = rnd_below(2) ? edges[rnd_below(sizeof edges / sizeof edges[0])]
                                     : (int)rnd_below(400);
                o += (size_t)snprintf(t + o, 8, "%d", e);
            }
        }
        t[o++] = ']';
        differ(t, o, JSON_REJECT_DUPLICATES, &c);
    }
    ck_assert_uint_gt(c.valid, 120000);
    fprintf(stderr, "random numbers: %zu valid, %zu invalid (%.2f s)\n", c.valid, c.invalid,
            now_s() - t0);
}
END_TEST

typedef struct {
    char *s;
    size_t n;
} owned;

static size_t load_fixtures(owned *out, size_t max)
{
    DIR *d = opendir(FIXTURES);
    ck_assert_msg(d != NULL, "cannot open " FIXTURES);
    size_t k = 0;
    struct dirent *e;
    while ((e = readdir(d)) && k < max) {
        size_t l = strlen(e->d_name);
        const char *suffix = ".request.json";
        if (l < strlen(suffix) || strcmp(e->d_name + l - strlen(suffix), suffix) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s", e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        out[k].s = malloc((size_t)n + 1);
        ck_assert_ptr_nonnull(out[k].s);
        ck_assert_uint_eq(fread(out[k].s, 1, (size_t)n, f), (size_t)n);
        out[k].n = (size_t)n;
        fclose(f);
        k++;
    }
    closedir(d);
    /* readdir's order is the file system's: sort for a repeatable run */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i;
             j > 0 && (out[j - 1].n > out[j].n ||
                       (out[j - 1].n == out[j].n && memcmp(out[j - 1].s, out[j].s, out[j].n) > 0));
             j--) {
            owned x = out[j];
            out[j] = out[j - 1];
            out[j - 1] = x;
        }
    return k;
}

/* Bytes a mutation likes to insert: JSON's own punctuation and the edges. */
static const char interesting[] = "{}[],:\"\\0123456789eE.-+ \t\n\rtfnu/\x00\x01\x1f\x7f"
                                  "\x80\xbf\xc0\xc3\xe2\xed\xf0\xf4\xff";

static size_t mutate(char *t, size_t n, size_t cap)
{
    int ops = 1 + (int)rnd_below(3);
    for (int k = 0; k < ops; k++) {
        size_t at = rnd_below(n + 1);
        switch (rnd_below(7)) {
        case 0: /* flip a bit */
            if (at < n)
                t[at] ^= (char)(1u << rnd_below(8));
            break;
        case 1: /* replace a byte */
            if (at < n)
                t[at] = rnd_below(2) ? interesting[rnd_below(sizeof interesting - 1)]
                                     : (char)rnd_below(256);
            break;
        case 2: /* insert a byte */
            if (n < cap) {
                memmove(t + at + 1, t + at, n - at);
                t[at] = interesting[rnd_below(sizeof interesting - 1)];
                n++;
            }
            break;
        case 3: { /* delete a few bytes */
            size_t m = 1 + rnd_below(4);
            if (at + m <= n) {
                memmove(t + at, t + at + m, n - at - m);
                n -= m;
            }
            break;
        }
        case 4: { /* repeat a slice (duplicate keys, deeper nesting) */
            size_t m = 1 + rnd_below(40);
            if (at + m <= n && n + m <= cap) {
                memmove(t + at + m, t + at, n - at);
                n += m;
            }
            break;
        }
        case 5: /* cut the end */
            n = at;
            break;
        default: /* change a digit: mostly valid numbers of new values */
            for (size_t i = at; i < n; i++)
                if (t[i] >= '0' && t[i] <= '9') {
                    t[i] = (char)('0' + rnd_below(10));
                    break;
                }
            break;
        }
    }
    return n;
}

START_TEST(test_mutated_fixtures)
{
    double t0 = now_s();
    owned fx[128];
    size_t nf = load_fixtures(fx, 128);
    ck_assert_uint_ge(nf, 20);
    rng_state.s = 0x5eed1dea;
    tally c = {0, 0};
    size_t cap = 8192;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    /* every fixture as it is, then the mutants */
    for (size_t i = 0; i < nf; i++)
        differ_all_flags(fx[i].s, fx[i].n, &c);
    int total = 200000;
    for (int k = 0; k < total; k++) {
        const owned *f = &fx[rnd_below(nf)];
        ck_assert_uint_le(f->n, cap / 2);
        memcpy(t, f->s, f->n);
        size_t n = mutate(t, f->n, cap);
        differ(t, n, k % 8 ? JSON_REJECT_DUPLICATES : 0, &c);
    }
    free(t);
    for (size_t i = 0; i < nf; i++)
        free(fx[i].s);
    /* enough of both kinds to mean something */
    ck_assert_uint_gt(c.valid, 20000);
    ck_assert_uint_gt(c.invalid, 100000);
    fprintf(stderr, "mutated fixtures: %zu fixtures, %d mutants: %zu valid, %zu invalid (%.2f s)\n",
            nf, total, c.valid, c.invalid, now_s() - t0);
}
END_TEST

/* proto_json_parse() (the HTTP bodies) keeps its messages: jansson's text,
 * line and column. */
START_TEST(test_parse_messages)
{
    static const char *const bad[] = {"{\"a\": 1,\n \"b\": }",
                                      "{\"a\":1,\"a\":2}",
                                      "[1e400]",
                                      "[\"\\u0000\"]",
                                      "{}x",
                                      "[\"\\ud800\"]",
                                      "\"a\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_error_t je;
        ck_assert_ptr_null(json_loadb(bad[i], strlen(bad[i]), JSON_REJECT_DUPLICATES, &je));
        char want[512];
        snprintf(want, sizeof want, "%s (line %d, column %d)", je.text, je.line, je.column);
        proto_error e;
        proto_error_clear(&e);
        ck_assert_ptr_null(proto_json_parse(bad[i], strlen(bad[i]), 1 << 20, PROTO_JSON_SOLVE, &e));
        ck_assert_str_eq(proto_error_name(e.code), "invalid_json");
        ck_assert_str_eq(e.message, want);
    }
    proto_error e;
    const char *ok = "{\"a\":[1,2.5,\"x\"]}";
    json_t *v = proto_json_parse(ok, strlen(ok), 1 << 20, PROTO_JSON_SOLVE, &e);
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_integer(json_array_get(json_object_get(v, "a"), 0)));
    ck_assert(json_is_real(json_array_get(json_object_get(v, "a"), 1)));
    json_decref(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_parse");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_corpus);
    tcase_add_test(tc, test_long_texts);
    tcase_add_test(tc, test_depth);
    tcase_add_test(tc, test_random_numbers);
    tcase_add_test(tc, test_mutated_fixtures);
    tcase_add_test(tc, test_parse_messages);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

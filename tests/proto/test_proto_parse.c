/*
 * test_proto_parse.c: reading JSON text as jansson reads it where ikd reads
 * it without jansson, and the words of jansson's refusals.
 *
 *   - The scanner's numbers (proto__json_number(), proto/proto_scan.c), which
 *     the text mode of every decoder reads single solves, batches and ticks
 *     with, against json_loadb() on the same text: a number jansson reads is
 *     taken whole, with jansson's type (an integer is never a real) and
 *     value (reals bit for bit, -0.0 is not 0.0); a text jansson refuses is
 *     never taken whole. The texts: every edge of json_int_t and of double,
 *     a few hundred thousand random numbers as clients write them and as
 *     digit strings near the ends of double (from a fixed seed so that a
 *     failure repeats), and numbers a thousand digits long.
 *   - The scanner's UTF-8 sequences (proto__utf8_seq(), which checks every
 *     stream text frame): a string is valid to jansson exactly when each of
 *     its sequences is.
 *   - proto_json_parse() (HTTP bodies): its message is jansson's text, line
 *     and column.
 */
#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto_json.h"
#include "proto/proto_scan.h"
#include "solver/ik_rng.h"

typedef struct {
    size_t valid, invalid;
} tally;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- numbers -------------------------------------------------------------- */

/* One number text: proto__json_number() takes it whole exactly when
 * json_loadb() reads it, and then as the same integer or the same real. */
static void number_differ(const char *t, size_t n, tally *c)
{
    /* in a buffer of exactly n bytes, so that a sanitizer sees any read
     * beyond the text */
    char *x = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(x);
    memcpy(x, t, n);
    json_t *j = json_loadb(x, n, JSON_DECODE_ANY, NULL);
    proto_json_num v;
    size_t k = proto__json_number(x, n, &v);
    if (!j) {
        ck_assert_msg(k != n, "the scanner took \"%.*s\", which jansson refuses", (int)n, t);
        c->invalid++;
        free(x);
        return;
    }
    ck_assert_msg(json_is_number(j), "\"%.*s\" is no number", (int)n, t);
    ck_assert_msg(k == n, "the scanner took %zu of the %zu bytes of \"%.*s\"", k, n, (int)n, t);
    if (json_is_integer(j)) {
        ck_assert_msg(v.is_int, "\"%.*s\": a real for jansson's integer", (int)n, t);
        ck_assert_msg(v.i == json_integer_value(j),
                      "\"%.*s\": %" JSON_INTEGER_FORMAT " for jansson's %" JSON_INTEGER_FORMAT,
                      (int)n, t, v.i, json_integer_value(j));
    } else {
        double want = json_real_value(j);
        ck_assert_msg(!v.is_int, "\"%.*s\": an integer for jansson's real", (int)n, t);
        ck_assert_msg(memcmp(&v.d, &want, sizeof want) == 0, "\"%.*s\": %.17g for jansson's %.17g",
                      (int)n, t, v.d, want);
    }
    json_decref(j);
    free(x);
    c->valid++;
}

/* clang-format off */
static const char *const numbers[] = {
    /* integers */
    "0", "-0", "1", "-1", "42", "9007199254740993", "999999999999999999", "1000000000000000000",
    "9223372036854775806", "9223372036854775807", "9223372036854775808", "-9223372036854775807",
    "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
    "99999999999999999999", "123456789012345678901234567890", "-123456789012345678901234567890",
    "00", "01", "-01", "-00", "+1", "-", "--1", "- 1", "0x10", "1a", "1_000",
    /* reals */
    "0.0", "-0.0", "0e0", "-0e-0", "0E+0", "-0.0e999", "0.0e-999", "1.5", "-1.5", "0.1",
    "0.30000000000000004", "1e0", "1E5", "1e+5", "1e-5", "1.5E-5", "1e22", "1e23", "1e-22", "1e-23",
    "9007199254740992e0", "9007199254740993e0", "9007199254740993.0", "9007199254740992.5",
    "123456789012345678e-5", "1234567890123456789e-5", "12345678901234567890e-5",
    "123456789012345678901234567890.0", "0.1000000000000000055511151231257827021181583404541015625",
    "0.0000000000000000000000000000001", "1.00000000000000000000000000000000000001",
    "123456789.123456789123456789", "1e400", "-1e400", "1e309", "1e308", "1.7976931348623157e308",
    "1.7976931348623158e308", "1.7976931348623159e308", "-1.797693134862315807e308",
    "1.797693134862315708e308", "1e-400", "-1e-400", "1e-324", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "4.9406564584124654e-324", "5e-324", "2.2250738585072011e-308",
    "2.2250738585072014e-308", "1e-307", "1e0000000000000000000001", "1e-0000000000000000000001",
    "1e99999999999999999999", "1e-99999999999999999999", "0e99999999999999999999", "1.", ".5",
    "1.e5", "1e", "1e+", "1e-", "1E", "1.0e", "1.5.5", "1e5e5", "1e5.5", "-.5", "NaN", "nan",
    "Infinity", "-Infinity", "inf", "0.5", "-0.25", "1e3", "2E-3", "0.000001", "1000000.0",
    "3.141592653589793", "2.718281828459045", "1.4142135623730951", "0.12345678901234567",
    "-9.8765432109876543e-10", "4.4408920985006262e-16",
};
/* clang-format on */

START_TEST(test_numbers)
{
    tally c = {0, 0};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        number_differ(numbers[i], strlen(numbers[i]), &c);
    ck_assert_uint_gt(c.valid, 60);
    ck_assert_uint_gt(c.invalid, 30);
}
END_TEST

/* A thousand-digit integer (beyond json_int_t), real and fraction. */
START_TEST(test_long_numbers)
{
    tally c = {0, 0};
    char t[1100];
    for (int variant = 0; variant < 3; variant++) {
        size_t o = 0;
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
        number_differ(t, o, &c);
    }
    ck_assert_uint_eq(c.valid, 2);
    ck_assert_uint_eq(c.invalid, 1);
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
        number_differ(t, o, &c);
    }
    ck_assert_uint_gt(c.valid, 120000);
    fprintf(stderr, "random numbers: %zu valid, %zu invalid (%.2f s)\n", c.valid, c.invalid,
            now_s() - t0);
}
END_TEST

/* ---- UTF-8 ------------------------------------------------------------------ */

/* Every lead byte 0x80..0xff followed by three bytes from the edges of the
 * continuation ranges (and ASCII), in a string: jansson reads it exactly
 * when a walk of its bytes with proto__utf8_seq() finds only whole
 * sequences. */
START_TEST(test_utf8_sequences)
{
    static const unsigned char edges[] = {0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f,
                                          0xa0, 0xbf, 0xc0, 0xc3, 0xf4, 0xff};
    const size_t ne = sizeof edges;
    tally c = {0, 0};
    for (unsigned lead = 0x80; lead <= 0xff; lead++)
        for (size_t a = 0; a < ne; a++)
            for (size_t b = 0; b < ne; b++)
                for (size_t d = 0; d < ne; d++) {
                    unsigned char t[6] = {'"', (unsigned char)lead, edges[a], edges[b], edges[d],
                                          '"'};
                    bool ok = true;
                    for (const unsigned char *p = t + 1, *end = t + 5; p < end && ok;) {
                        size_t k = *p < 0x80 ? 1 : proto__utf8_seq(p, end);
                        ok = k > 0;
                        p += k;
                    }
                    json_t *j = json_loadb((const char *)t, sizeof t, JSON_DECODE_ANY, NULL);
                    ck_assert_msg(!j == !ok, "%02x %02x %02x %02x: jansson %s, the scanner %s",
                                  t[1], t[2], t[3], t[4], j ? "reads it" : "refuses it",
                                  ok ? "takes it" : "refuses it");
                    json_decref(j);
                    if (ok)
                        c.valid++;
                    else
                        c.invalid++;
                }
    ck_assert_uint_gt(c.valid, 1000);
    ck_assert_uint_gt(c.invalid, 100000);
}
END_TEST

/* ---- messages ---------------------------------------------------------------- */

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
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_long_numbers);
    tcase_add_test(tc, test_random_numbers);
    tcase_add_test(tc, test_utf8_sequences);
    tcase_add_test(tc, test_parse_messages);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

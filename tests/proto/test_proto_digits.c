/*
 * test_proto_digits.c: proto/proto_digits.h, the eight-digits-at-once
 * converter of the number writers: every x < 10^8 against a decimal counter
 * kept as text (incremented by hand, so independent of the code under test
 * and fast enough to cover all of them), the counter itself against the C
 * library's snprintf("%08u") at every 9973rd value and around every power
 * of ten, the trailing-zero count the writers read off the word, and the
 * byte order of the stores.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_digits.h"

/* The digits of x as characters, in reading order. */
static void text_of(uint32_t x, char out[8])
{
    proto__store8(out, proto__digits8(x) + 0x3030303030303030ull);
}

static void check_snprintf(uint32_t x)
{
    char want[16], got[8];
    snprintf(want, sizeof want, "%08u", (unsigned)x);
    text_of(x, got);
    ck_assert_msg(memcmp(got, want, 8) == 0, "%u: %.8s", (unsigned)x, got);
}

/* Every x < 10^8: the word's bytes are the counter's digits, and its high
 * zero bytes are the counter's trailing '0's. */
START_TEST(test_every_eight_digits)
{
    char count[8];
    memset(count, '0', sizeof count);
    for (uint32_t x = 0; x < 100000000u; x++) {
        uint64_t w = proto__digits8(x);
        char got[8];
        proto__store8(got, w + 0x3030303030303030ull);
        if (memcmp(got, count, 8) != 0)
            ck_abort_msg("%u: %.8s, not %.8s", (unsigned)x, got, count);
        int zeros = 0;
        while (zeros < 8 && count[7 - zeros] == '0')
            zeros++;
        if ((w ? __builtin_clzll(w) / 8 : 8) != zeros)
            ck_abort_msg("%u: %d trailing zeros read off the word, not %d", (unsigned)x,
                         w ? __builtin_clzll(w) / 8 : 8, zeros);
        if (x % 9973u == 0)
            check_snprintf(x);
        for (int i = 7; i >= 0 && ++count[i] > '9'; i--)
            count[i] = '0';
    }
    ck_assert(memcmp(count, "00000000", 8) == 0); /* wrapped once, at 10^8 */
}
END_TEST

/* The edges against the C library: around every power of ten and of the
 * lanes' ranges (10^4 splits the word, 100 each half). */
START_TEST(test_edges)
{
    uint32_t p = 1;
    for (int e = 0; e <= 8; e++, p *= 10u)
        for (uint32_t d = 0; d < 3; d++) {
            if (p - 1u + d < 100000000u)
                check_snprintf(p - 1u + d);
            if (p * 5u + d - 1u < 100000000u)
                check_snprintf(p * 5u + d - 1u);
        }
    static const uint32_t edge[] = {0u,        9999u,     10000u,    10001u,    99990000u,
                                    99999999u, 12345678u, 87654321u, 10203040u, 90807060u};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
        check_snprintf(edge[i]);
}
END_TEST

/* proto__store8 puts the lowest byte first on any machine. */
START_TEST(test_store_order)
{
    char b[9] = {0};
    proto__store8(b, 0x3837363534333231ull);
    ck_assert_str_eq(b, "12345678");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_digits");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60); /* 10^8 values: about a second, far more under a sanitizer */
    tcase_add_test(tc, test_every_eight_digits);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_store_order);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

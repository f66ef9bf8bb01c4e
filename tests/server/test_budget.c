/*
 * test_budget.c: server/budget.c on its own: a reservation is all or
 * nothing and never passes the limit (exactly up to it, n = 0 always
 * fits, sizes near SIZE_MAX do not wrap), releasing makes room again, take
 * counts past the limit and the bound then refuses until enough is
 * released, and several threads racing on one budget never see it over its
 * limit and leave it at zero once each released what it got (the property
 * issue 22's several loops rely on).
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/budget.h"

START_TEST(test_reserve_up_to_the_limit)
{
    srv_budget b;
    srv_budget_init(&b, 100);
    ck_assert_uint_eq(srv_budget_used(&b), 0);
    ck_assert(srv_budget_reserve(&b, 60));
    ck_assert(srv_budget_fits(&b, 40));
    ck_assert(!srv_budget_fits(&b, 41));
    ck_assert(!srv_budget_reserve(&b, 41)); /* all or nothing */
    ck_assert_uint_eq(srv_budget_used(&b), 60);
    ck_assert(srv_budget_reserve(&b, 40)); /* exactly to the limit */
    ck_assert_uint_eq(srv_budget_used(&b), 100);
    ck_assert(!srv_budget_reserve(&b, 1));
    ck_assert(srv_budget_reserve(&b, 0)); /* nothing always fits */
    ck_assert(srv_budget_fits(&b, 0));
    srv_budget_release(&b, 60);
    ck_assert_uint_eq(srv_budget_used(&b), 40);
    ck_assert(srv_budget_reserve(&b, 60));
    srv_budget_release(&b, 100);
    ck_assert_uint_eq(srv_budget_used(&b), 0);
}
END_TEST

START_TEST(test_no_wrap_near_size_max)
{
    srv_budget b;
    srv_budget_init(&b, 1000);
    ck_assert(!srv_budget_reserve(&b, SIZE_MAX));
    ck_assert(!srv_budget_fits(&b, SIZE_MAX));
    ck_assert(!srv_budget_reserve(&b, 1001));
    ck_assert(srv_budget_reserve(&b, 10));
    ck_assert(!srv_budget_reserve(&b, SIZE_MAX - 5)); /* 10 + that wraps to 4 */
    ck_assert(!srv_budget_fits(&b, SIZE_MAX - 5));
    ck_assert_uint_eq(srv_budget_used(&b), 10);

    srv_budget u; /* no bound: a plain count */
    srv_budget_init(&u, SIZE_MAX);
    ck_assert(srv_budget_reserve(&u, SIZE_MAX - 1));
    ck_assert(srv_budget_reserve(&u, 1));
    ck_assert(!srv_budget_reserve(&u, 1));
    ck_assert_uint_eq(srv_budget_used(&u), SIZE_MAX);
}
END_TEST

START_TEST(test_take_passes_the_limit)
{
    srv_budget b;
    srv_budget_init(&b, 10);
    ck_assert(srv_budget_reserve(&b, 8));
    srv_budget_take(&b, 5); /* cannot be refused */
    ck_assert_uint_eq(srv_budget_used(&b), 13);
    ck_assert(!srv_budget_fits(&b, 0)); /* past the limit nothing fits */
    ck_assert(!srv_budget_reserve(&b, 0));
    ck_assert(!srv_budget_reserve(&b, 1)); /* over: refused until released */
    srv_budget_release(&b, 5);
    ck_assert(!srv_budget_reserve(&b, 3));
    ck_assert(srv_budget_reserve(&b, 2));
    ck_assert_uint_eq(srv_budget_used(&b), 10);
    srv_budget_take(&b, SIZE_MAX); /* saturates rather than wraps */
    ck_assert_uint_eq(srv_budget_used(&b), SIZE_MAX);
}
END_TEST

/* ---- several threads on one budget ------------------------------------------ */

#define RACERS     4
#define ROUNDS     200000
#define RACE_LIMIT 10

typedef struct racer {
    srv_budget *b;
    unsigned seed;
    size_t granted, refused, over; /* over: a look saw more than the limit */
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    size_t held[RACE_LIMIT + 1], n = 0;
    for (int i = 0; i < ROUNDS; i++) {
        r->seed = r->seed * 1103515245u + 12345u;
        size_t k = 1 + (r->seed >> 16) % 3;
        if (n < RACE_LIMIT && srv_budget_reserve(r->b, k)) {
            held[n++] = k;
            r->granted++;
        } else {
            r->refused++;
        }
        if (srv_budget_used(r->b) > RACE_LIMIT)
            r->over++;
        if (n > 0 && ((r->seed >> 8) & 1))
            srv_budget_release(r->b, held[--n]);
    }
    while (n > 0)
        srv_budget_release(r->b, held[--n]);
    return NULL;
}

START_TEST(test_threads_never_pass_the_limit)
{
    srv_budget b;
    srv_budget_init(&b, RACE_LIMIT);
    pthread_t th[RACERS];
    racer r[RACERS] = {{0}};
    for (int i = 0; i < RACERS; i++) {
        r[i].b = &b;
        r[i].seed = 7u + (unsigned)i * 7919u;
        ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    size_t granted = 0, refused = 0, over = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        granted += r[i].granted;
        refused += r[i].refused;
        over += r[i].over;
    }
    ck_assert_uint_eq(over, 0);
    ck_assert_uint_eq(srv_budget_used(&b), 0); /* every release matched a grant */
    ck_assert_uint_gt(granted, 0);
    ck_assert_uint_gt(refused, 0); /* the bound was reached: the race was real */
}
END_TEST

static Suite *budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reserve_up_to_the_limit);
    tcase_add_test(tc, test_no_wrap_near_size_max);
    tcase_add_test(tc, test_take_passes_the_limit);
    tcase_add_test(tc, test_threads_never_pass_the_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(budget_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

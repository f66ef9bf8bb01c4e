/*
 * tick_answer.h: a JSON tick answer of n entries for the C client's
 * readers to be fed (test_client_decode's decoder tests, and the hostile
 * server of test_client_hostile): {"type":"tick_solution","seq":7,...}
 * whose entries are two-joint results of streams s0, s1, ...
 */
#ifndef TESTS_CLIENTS_TICK_ANSWER_H
#define TESTS_CLIENTS_TICK_ANSWER_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* The answer of n entries (malloc'd). */
static inline char *tick_answer(size_t n)
{
    static const char entry[] = "{\"stream\":\"s%zu\",\"seq\":7,\"skipped\":0,\"result\":"
                                "{\"status\":\"success\",\"joints\":[0.25,-0.5]}}";
    size_t cap = 128 + n * (sizeof entry + 24), o = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    o += (size_t)snprintf(t, cap, "{\"type\":\"tick_solution\",\"seq\":7,\"skipped\":0,"
                                  "\"solutions\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            t[o++] = ',';
        o += (size_t)snprintf(t + o, cap - o, entry, i);
    }
    snprintf(t + o, cap - o, "]}");
    return t;
}

#endif /* TESTS_CLIENTS_TICK_ANSWER_H */

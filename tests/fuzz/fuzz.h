/*
 * fuzz.h: what the libFuzzer targets of tests/fuzz share. Each fuzz_*.c
 * defines LLVMFuzzerTestOneInput for one decoder; `make fuzz` builds them
 * with clang (-fsanitize=fuzzer,address,undefined) and runs each for
 * FUZZ_SECONDS on a corpus seeded from tests/fixtures and tests/data
 * (tests/fuzz/run.sh).
 *
 * A target reports a wrong answer (not only a crash) by calling
 * fuzz_fail(), which prints what differed and aborts, so that libFuzzer
 * keeps the input as a crash file. Every input found that way becomes a
 * regression test in the check suite of the module it belongs to.
 */
#ifndef IKD_FUZZ_H
#define IKD_FUZZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static inline void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz: %s\n", what);
    abort();
}

/* True when a and b are the same tree as the fast reader promises it:
 * same types, keys in the same order, same string bytes, same integers and
 * reals bit for bit (-0.0 is not 0.0). */
static inline bool fuzz_same_tree(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia),
                         ib = json_object_iter_next((json_t *)b, ib)) {
            size_t la = json_object_iter_key_len(ia), lb = json_object_iter_key_len(ib);
            if (la != lb || memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la) != 0)
                return false;
            if (!fuzz_same_tree(json_object_iter_value(ia), json_object_iter_value(ib)))
                return false;
        }
        return !ia && !ib;
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!fuzz_same_tree(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    default:
        return true;
    }
}

#endif /* IKD_FUZZ_H */

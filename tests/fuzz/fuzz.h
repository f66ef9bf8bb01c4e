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

#endif /* IKD_FUZZ_H */

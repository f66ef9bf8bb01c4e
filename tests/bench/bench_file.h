/*
 * bench_file.h: reading a whole input file (URDF, target list, request
 * body) for the benchmark tools (ikbench.c, ws_bench.c). Header-only.
 */
#ifndef TESTS_BENCH_BENCH_FILE_H
#define TESTS_BENCH_BENCH_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, malloc'd and NUL-terminated (the caller frees), its size
 * in *len when len is not NULL; NULL when it cannot be opened or memory
 * runs out (errno tells which). */
static inline char *bench_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

#endif /* TESTS_BENCH_BENCH_FILE_H */

/*
 * mem.c: the growable buffer, the arena answers are decoded into, and the
 * clock (internal.h says what each promises).
 */
#include <stdlib.h>
#include <time.h>

#include "internal.h"

/* ---- buffers ------------------------------------------------------------ */

int ikd__buf_reserve(ikd__buf *b, size_t n)
{
    if (b->len + n + 1 <= b->cap)
        return 0;
    if (n > SIZE_MAX / 4 - b->len)
        return -1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void ikd__buf_free(ikd__buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void ikd__buf_trim(ikd__buf *b, size_t keep)
{
    if (b->cap <= keep || b->len + 1 > keep)
        return;
    if (keep == 0) {
        ikd__buf_free(b);
        return;
    }
    char *p = realloc(b->p, keep);
    if (p) {
        b->p = p;
        b->cap = keep;
    }
}

/* ---- arena -------------------------------------------------------------- */

#define ARENA_ALIGN 16
#define ARENA_FIRST 4096

struct ikd__block {
    ikd__block *next;
    size_t size, used; /* of data */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void *ikd__arena_alloc(ikd__arena *a, size_t n)
{
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    ikd__block *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = b ? b->size * 2 : ARENA_FIRST;
        while (size < n)
            size *= 2;
        b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->next = a->head;
        b->size = size;
        b->used = 0;
        a->head = b;
        a->total += size;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used += n;
    return p;
}

char *ikd__arena_strndup(ikd__arena *a, const char *s, size_t n)
{
    char *p = ikd__arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void ikd__arena_free(ikd__arena *a)
{
    for (ikd__block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
    a->total = a->used = 0;
}

void ikd__arena_reset(ikd__arena *a, size_t keep_max)
{
    if (!a->head)
        return;
    size_t want = a->used;
    if (a->head->next || a->head->size > keep_max) {
        /* several blocks (or one too large): one block that holds what the
         * last answer needed, when that is not too much */
        ikd__arena_free(a);
        if (want && want <= keep_max) {
            size_t size = ARENA_FIRST;
            while (size < want)
                size *= 2;
            ikd__block *b = malloc(sizeof *b + size);
            if (b) {
                b->next = NULL;
                b->size = size;
                b->used = 0;
                a->head = b;
                a->total = size;
            }
        }
        a->used = 0;
        return;
    }
    a->head->used = 0;
    a->used = 0;
}

/* ---- time --------------------------------------------------------------- */

int64_t ikd__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

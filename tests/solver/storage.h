/*
 * storage.h: storage for the tests' chains and trees. A compiled chain or
 * tree (solver/ik_chain.h, solver/ik_tree.h) is a view of storage its
 * caller sizes up front; the tests build many small ones and keep some
 * for the length of a test, so chain_init(), tree_init() and
 * tree_from_chains() take each one's storage from the heap and keep it on
 * a list that an atexit() handler frees when the test process ends (check
 * forks one per test, so nothing outlives its test; the sanitizer builds
 * see every block freed). A view copied by value stays valid until then.
 * Loops that compile thousands of chains use ik_chain_init() with storage
 * of their own instead. Header-only; everything is static inline so that
 * a test that uses only part of it compiles warning-free.
 */
#ifndef TESTS_SOLVER_STORAGE_H
#define TESTS_SOLVER_STORAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "solver/ik_chain.h"
#include "solver/ik_status.h"
#include "solver/ik_tree.h"

/* Room for the joints of every chain or tree that the tests hold in fixed
 * arrays (double q[TEST_DOF_CAP]); longer ones use arrays sized from the
 * chain. */
#define TEST_DOF_CAP 64
/* Room for the described joints of every URDF path the tests read into
 * fixed arrays. */
#define TEST_JOINTS_CAP 128

typedef struct test_block {
    struct test_block *next;
    void *adopted; /* test_adopt's block, freed with this one */
    max_align_t data[];
} test_block;

static test_block *test_blocks;

static inline void test_storage_free(void)
{
    while (test_blocks) {
        test_block *b = test_blocks;
        test_blocks = b->next;
        free(b->adopted);
        free(b);
    }
}

static inline test_block *test_block_new(size_t bytes)
{
    static int registered;
    if (bytes == SIZE_MAX || bytes > SIZE_MAX - sizeof(test_block))
        return NULL;
    if (!registered) {
        registered = 1;
        atexit(test_storage_free);
    }
    test_block *b = calloc(1, sizeof *b + bytes);
    if (!b)
        return NULL;
    b->next = test_blocks;
    test_blocks = b;
    return b;
}

/* bytes of zeroed memory, kept until the process exits (NULL when bytes is
 * SIZE_MAX or out of memory) */
static inline void *test_storage(size_t bytes)
{
    test_block *b = test_block_new(bytes);
    return b ? b->data : NULL;
}

/* p (from malloc; NULL is fine), freed when the process exits; returns p */
static inline void *test_adopt(void *p)
{
    test_block *b = p ? test_block_new(0) : NULL;
    if (b)
        b->adopted = p;
    return p;
}

/* ik_chain_init() with storage for n joints of the list's */
static inline int chain_init(ik_chain *c, const ik_joint *j, size_t n)
{
    size_t bytes = ik_chain_storage_size(n);
    void *mem = test_storage(bytes);
    return mem ? ik_chain_init(c, mem, bytes, j, n) : IK_EINVAL;
}

/* ik_tree_init() with storage of the size it asks for */
static inline int tree_init(ik_tree *t, const ik_joint *j, const int *parent, size_t n,
                            const size_t *tip_joint, size_t ntips)
{
    size_t bytes = ik_tree_storage_size(parent, n, tip_joint, ntips);
    void *mem = test_storage(bytes == SIZE_MAX ? 64 : bytes);
    return ik_tree_init(t, mem, bytes == SIZE_MAX ? 64 : bytes, j, parent, n, tip_joint, ntips);
}

/* ik_tree_from_chains() likewise */
static inline int tree_from_chains(ik_tree *t, const ik_joint *const *chains, const size_t *len,
                                   size_t ntips)
{
    size_t bytes = ik_tree_chains_storage_size(len, ntips);
    void *mem = test_storage(bytes == SIZE_MAX ? 64 : bytes);
    return ik_tree_from_chains(t, mem, bytes == SIZE_MAX ? 64 : bytes, chains, len, ntips);
}

#endif /* TESTS_SOLVER_STORAGE_H */

/*
 * test_registry.c: server/registry.c on its own: content addressing (the
 * same chain twice is one entry), references (a looked-up chain outlives
 * its removal), the memory bound with least-recently-used eviction (uses
 * stamped by lookups under the read lock), lookups and insertions from
 * several threads at once (the loops'), the proto_chain_lookup_fn
 * adapter, and scenes held beside chains (ids per kind, their bytes under
 * the same bound, evicted by the same LRU, references that outlive
 * removal), and a fetched chain refused after a removal or the check's
 * bar. Chains are small planar arms decoded by proto/.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "proto/proto_scene.h"
#include "server/registry.h"
#include "server/srv.h"

static proto_chain *planar(double l2)
{
    char body[128];
    snprintf(body, sizeof body, "{\"kind\":\"planar\",\"lengths\":[1.0,%.3f]}", l2);
    proto_limits lim;
    proto_limits_default(&lim);
    proto_error err;
    proto_chain *c = proto_chain_decode(body, strlen(body), &lim, &err);
    ck_assert_msg(c != NULL, "decode failed: %s", err.message);
    return c;
}

/* A registration body of one sphere of radius r. */
static proto_scene *scene(double r)
{
    char body[128];
    snprintf(body, sizeof body, "{\"spheres\":[{\"radius\":%.3f,\"position\":[1,2,3]}]}", r);
    proto_error err;
    proto_scene *s = proto_scene_decode(body, strlen(body), NULL, &err);
    ck_assert_msg(s != NULL, "decode failed: %s", err.message);
    return s;
}

/* A fetched chain is put unless a removal (of any id, held or not) or a
 * bar (the check after a cut-off) came since its fetch was sent. */
START_TEST(test_fetched_after_a_removal_or_a_bar)
{
    proto_chain *c = planar(2.5);
    srv_registry *r = srv_registry_new(1 << 20);
    size_t sent = srv__registry_removals(r);
    ck_assert_int_eq(srv_registry_remove(r, "0123456789abcdef0123456789abcdef"), SRV_ENOTFOUND);
    ck_assert_int_eq(srv__registry_put_fetched(r, PROTO_REG_CHAIN, c, sent), SRV_EBUSY);
    ck_assert_uint_eq(srv_registry_count(r), 0);
    sent = srv__registry_removals(r);
    srv__registry_bar_fetches(r);
    ck_assert_int_eq(srv__registry_put_fetched(r, PROTO_REG_CHAIN, c, sent), SRV_EBUSY);
    ck_assert_uint_eq(srv_registry_count(r), 0);
    sent = srv__registry_removals(r); /* sent after: put */
    ck_assert_int_eq(srv__registry_put_fetched(r, PROTO_REG_CHAIN, c, sent), SRV_OK);
    proto_chain *got = srv_registry_get(r, proto_chain_id(c));
    ck_assert_ptr_eq(got, c);
    proto_chain_unref(got);
    srv_registry_free(r);
    proto_chain_unref(c);
}
END_TEST

START_TEST(test_scenes_beside_chains)
{
    proto_chain *c = planar(2.0);
    proto_scene *a = scene(0.5), *b = scene(0.5), *d = scene(0.25);
    ck_assert_str_eq(a->id, b->id); /* content-addressed */
    ck_assert_str_ne(a->id, d->id);
    ck_assert_uint_eq(strlen(a->id), PROTO_SCENE_ID_LEN);
    ck_assert_uint_gt(a->memory, sizeof *a);
    /* room for the chain and one scene: a second scene evicts the least
     * recently used entry, of whichever kind */
    size_t bound = proto_chain_memory(c) + a->memory + a->memory / 2;
    srv_registry *r = srv_registry_new(bound);
    bool created = false;
    ck_assert_int_eq(srv_registry_put(r, c, NULL), SRV_OK);
    ck_assert_int_eq(srv_registry_put_scene(r, a, &created), SRV_OK);
    ck_assert(created);
    ck_assert_int_eq(srv_registry_put_scene(r, b, &created), SRV_OK);
    ck_assert(!created);
    ck_assert_uint_eq(srv_registry_count(r), 2);
    ck_assert_uint_eq(srv_registry_bytes(r), proto_chain_memory(c) + a->memory);
    /* ids are per kind: a scene's id names no chain, and the reverse */
    ck_assert_ptr_null(srv_registry_get(r, a->id));
    ck_assert_ptr_null(srv_registry_get_scene(r, proto_chain_id(c)));
    proto_chain_lookup_fn fn = srv_registry_lookup;
    proto_scene *got = fn(r, PROTO_REG_SCENE, a->id);
    ck_assert_ptr_eq(got, a);
    ck_assert_ptr_null(fn(r, PROTO_REG_CHAIN, a->id));
    proto_scene_free(b);
    proto_scene_free(a); /* the registry's and got keep it */
    /* the chain is the least recently used: d evicts it */
    ck_assert_int_eq(srv_registry_put_scene(r, d, NULL), SRV_OK);
    ck_assert_uint_eq(srv_registry_evictions(r), 1);
    ck_assert_ptr_null(srv_registry_get(r, proto_chain_id(c)));
    ck_assert_uint_le(srv_registry_bytes(r), bound);
    /* a removed scene lives on in the reference held */
    ck_assert_int_eq(srv_registry_remove_kind(r, PROTO_REG_SCENE, got->id), SRV_OK);
    ck_assert_int_eq(srv_registry_remove_kind(r, PROTO_REG_SCENE, got->id), SRV_ENOTFOUND);
    ck_assert_ptr_null(srv_registry_get_scene(r, got->id));
    ck_assert_uint_eq(got->count, 1);
    ck_assert_double_eq_tol(got->ob[0].radius, 0.5, 1e-12);
    ck_assert_uint_eq(srv_registry_bytes(r), d->memory);
    proto_scene_free(got);
    proto_scene_free(d);
    proto_chain_unref(c);
    srv_registry_free(r);
}
END_TEST

START_TEST(test_same_chain_same_id)
{
    srv_registry *r = srv_registry_new(1u << 20);
    proto_chain *a = planar(2.0), *b = planar(2.0), *c = planar(3.0);
    bool created = false;
    ck_assert_int_eq(srv_registry_put(r, a, &created), SRV_OK);
    ck_assert(created);
    ck_assert_int_eq(srv_registry_put(r, b, &created), SRV_OK);
    ck_assert(!created);
    ck_assert_str_eq(proto_chain_id(a), proto_chain_id(b));
    ck_assert_int_eq(srv_registry_put(r, c, &created), SRV_OK);
    ck_assert(created);
    ck_assert_uint_eq(srv_registry_count(r), 2);
    ck_assert_uint_eq(srv_registry_bytes(r), proto_chain_memory(a) + proto_chain_memory(c));
    proto_chain_unref(a);
    proto_chain_unref(b);
    proto_chain_unref(c);
    srv_registry_free(r);
}
END_TEST

START_TEST(test_get_remove_references)
{
    srv_registry *r = srv_registry_new(1u << 20);
    proto_chain *a = planar(2.0);
    char id[256];
    snprintf(id, sizeof id, "%s", proto_chain_id(a));
    ck_assert_int_eq(srv_registry_put(r, a, NULL), SRV_OK);
    proto_chain_unref(a); /* the registry's reference keeps it alive */

    proto_chain *got = srv_registry_get(r, id);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(proto_chain_id(got), id);
    ck_assert_int_eq(srv_registry_remove(r, id), SRV_OK);
    ck_assert_int_eq(srv_registry_remove(r, id), SRV_ENOTFOUND);
    ck_assert_ptr_null(srv_registry_get(r, id));
    /* Still usable after removal: we hold our own reference. */
    ck_assert_str_eq(proto_chain_id(got), id);
    proto_chain_unref(got);

    ck_assert_ptr_null(srv_registry_get(r, "no-such-id"));
    ck_assert_ptr_null(srv_registry_get(r, ""));
    ck_assert_uint_eq(srv_registry_count(r), 0);
    ck_assert_uint_eq(srv_registry_bytes(r), 0);
    srv_registry_free(r);
}
END_TEST

START_TEST(test_lru_eviction)
{
    proto_chain *c[4];
    for (int i = 0; i < 4; i++)
        c[i] = planar(2.0 + i);
    size_t m = proto_chain_memory(c[0]);
    for (int i = 1; i < 4; i++)
        ck_assert_uint_eq(proto_chain_memory(c[i]), m); /* same shape, same size */
    /* Room for exactly two. */
    srv_registry *r = srv_registry_new(2 * m + m / 2);
    ck_assert_int_eq(srv_registry_put(r, c[0], NULL), SRV_OK);
    ck_assert_int_eq(srv_registry_put(r, c[1], NULL), SRV_OK);
    /* Use 0, so 1 is the least recently used. */
    proto_chain *tmp = srv_registry_get(r, proto_chain_id(c[0]));
    proto_chain_unref(tmp);
    ck_assert_int_eq(srv_registry_put(r, c[2], NULL), SRV_OK);
    ck_assert_uint_eq(srv_registry_count(r), 2);
    ck_assert_uint_eq(srv_registry_evictions(r), 1);
    ck_assert_ptr_null(srv_registry_get(r, proto_chain_id(c[1])));
    tmp = srv_registry_get(r, proto_chain_id(c[0]));
    ck_assert_ptr_nonnull(tmp);
    proto_chain_unref(tmp);
    /* Recency is now 0 (just read), 2. Re-putting 2 refreshes it, so 0
     * becomes the least recently used and the next insertion evicts it. */
    ck_assert_int_eq(srv_registry_put(r, c[2], NULL), SRV_OK);
    ck_assert_int_eq(srv_registry_put(r, c[3], NULL), SRV_OK);
    ck_assert_ptr_null(srv_registry_get(r, proto_chain_id(c[0])));
    tmp = srv_registry_get(r, proto_chain_id(c[2]));
    ck_assert_ptr_nonnull(tmp);
    proto_chain_unref(tmp);
    ck_assert_uint_le(srv_registry_bytes(r), 2 * m + m / 2);
    for (int i = 0; i < 4; i++)
        proto_chain_unref(c[i]);
    srv_registry_free(r);
}
END_TEST

START_TEST(test_too_big_for_bound)
{
    proto_chain *a = planar(2.0);
    srv_registry *r = srv_registry_new(proto_chain_memory(a) - 1);
    bool created = true;
    ck_assert_int_eq(srv_registry_put(r, a, &created), SRV_ENOMEM);
    ck_assert_uint_eq(srv_registry_count(r), 0);
    proto_chain_unref(a);
    srv_registry_free(r);
}
END_TEST

START_TEST(test_many_and_lookup_fn)
{
    /* Enough entries to grow the hash table several times. */
    srv_registry *r = srv_registry_new(64u << 20);
    enum { N = 1500 };
    char (*ids)[128] = calloc(N, sizeof *ids);
    for (int i = 0; i < N; i++) {
        proto_chain *c = planar(1.0 + i * 0.001);
        snprintf(ids[i], sizeof ids[i], "%s", proto_chain_id(c));
        ck_assert_int_eq(srv_registry_put(r, c, NULL), SRV_OK);
        proto_chain_unref(c);
    }
    ck_assert_uint_eq(srv_registry_count(r), N);
    proto_chain_lookup_fn fn = srv_registry_lookup;
    for (int i = 0; i < N; i += 7) {
        proto_chain *c = fn(r, PROTO_REG_CHAIN, ids[i]);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(proto_chain_id(c), ids[i]);
        proto_chain_unref(c);
    }
    free(ids);
    srv_registry_free(r);
    srv_registry_free(NULL);
}
END_TEST

static void sleep_ms(unsigned ms)
{
    uv_sleep(ms);
}

/* Lookups stamp their use without moving entries: eviction still takes the
 * least recently used, an entry used since it was placed going back by its
 * last use (here at least a millisecond apart: uses are stamped to it). */
START_TEST(test_lru_by_stamped_use)
{
    proto_chain *c[5];
    for (int i = 0; i < 5; i++)
        c[i] = planar(3.0 + i);
    size_t m = proto_chain_memory(c[0]);
    srv_registry *r = srv_registry_new(3 * m + m / 2); /* room for three */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(srv_registry_put(r, c[i], NULL), SRV_OK);
    /* last uses: 2 when put, then 1, then 0 */
    sleep_ms(3);
    proto_chain_unref(srv_registry_get(r, proto_chain_id(c[1])));
    sleep_ms(3);
    proto_chain_unref(srv_registry_get(r, proto_chain_id(c[0])));
    ck_assert_int_eq(srv_registry_put(r, c[3], NULL), SRV_OK); /* 2 goes */
    proto_chain *g = srv_registry_get(r, proto_chain_id(c[2]));
    ck_assert_ptr_null(g);
    ck_assert_int_eq(srv_registry_put(r, c[4], NULL), SRV_OK); /* then 1, not 0 */
    g = srv_registry_get(r, proto_chain_id(c[1]));
    ck_assert_ptr_null(g);
    g = srv_registry_get(r, proto_chain_id(c[0]));
    ck_assert_ptr_nonnull(g);
    proto_chain_unref(g);
    ck_assert_uint_eq(srv_registry_evictions(r), 2);
    for (int i = 0; i < 5; i++)
        proto_chain_unref(c[i]);
    srv_registry_free(r);
}
END_TEST

enum { CHAINS = 64, READERS = 4, LOOKUPS = 20000 };

typedef struct shared_reg {
    srv_registry *r;
    proto_chain *c[CHAINS];
    atomic_int found;
} shared_reg;

static void reader(void *arg)
{
    shared_reg *t = arg;
    int found = 0;
    for (int i = 0; i < LOOKUPS; i++) {
        proto_chain *g = srv_registry_get(t->r, proto_chain_id(t->c[(i * 7) % CHAINS]));
        if (g) {
            found++;
            proto_chain_unref(g);
        }
    }
    atomic_fetch_add(&t->found, found);
}

static void writer(void *arg)
{
    shared_reg *t = arg;
    for (int i = 0; i < 20 * CHAINS; i++)
        srv_registry_put(t->r, t->c[(i * 5) % CHAINS], NULL);
}

/* Four threads look chains up while a fifth puts them into a registry with
 * room for a quarter of them (evicting all the while): the bound holds and
 * what is stored is found. ThreadSanitizer's check of the lock. */
START_TEST(test_lookups_from_several_threads)
{
    static shared_reg t;
    for (int i = 0; i < CHAINS; i++)
        t.c[i] = planar(1.5 + i * 0.01);
    size_t m = proto_chain_memory(t.c[0]);
    size_t bound = (CHAINS / 4) * m + m / 2;
    t.r = srv_registry_new(bound);
    for (int i = 0; i < CHAINS / 4; i++)
        ck_assert_int_eq(srv_registry_put(t.r, t.c[i], NULL), SRV_OK);
    atomic_init(&t.found, 0);
    uv_thread_t th[READERS + 1];
    for (int k = 0; k < READERS; k++)
        ck_assert_int_eq(uv_thread_create(&th[k], reader, &t), 0);
    ck_assert_int_eq(uv_thread_create(&th[READERS], writer, &t), 0);
    for (int k = 0; k <= READERS; k++)
        uv_thread_join(&th[k]);
    ck_assert_uint_le(srv_registry_bytes(t.r), bound);
    ck_assert_uint_eq(srv_registry_count(t.r), CHAINS / 4);
    ck_assert_int_gt(atomic_load(&t.found), 0);
    size_t present = 0;
    for (int i = 0; i < CHAINS; i++) {
        proto_chain *g = srv_registry_get(t.r, proto_chain_id(t.c[i]));
        if (g) {
            present++;
            proto_chain_unref(g);
        }
    }
    ck_assert_uint_eq(present, CHAINS / 4);
    srv_registry_free(t.r);
    for (int i = 0; i < CHAINS; i++)
        proto_chain_unref(t.c[i]);
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_same_chain_same_id);
    tcase_add_test(tc, test_get_remove_references);
    tcase_add_test(tc, test_lru_eviction);
    tcase_add_test(tc, test_too_big_for_bound);
    tcase_add_test(tc, test_many_and_lookup_fn);
    tcase_add_test(tc, test_lru_by_stamped_use);
    tcase_add_test(tc, test_lookups_from_several_threads);
    tcase_add_test(tc, test_scenes_beside_chains);
    tcase_add_test(tc, test_fetched_after_a_removal_or_a_bar);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(registry_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

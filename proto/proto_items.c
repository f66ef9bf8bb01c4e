/*
 * proto_items.c: the many-rigs batch (contract in proto.h, "items"; the
 * JSON in proto/README.md, section "Many rigs in one batch").
 *
 * A game server's tick holds a thousand characters, each with its own rig
 * (chain), pose (seed) and target: a POST /v1/solve/batch body with
 * "items" instead of "targets" carries them all, each item shaped like a
 * POST /v1/solve body. Each item is decoded exactly as that body would be
 * (proto__job_decode_item: the one decoder of request bodies), from the
 * text (items_text) and, for an item the text mode declines, from its own
 * tree, which words its errors; their paths are put under "/items/<i>".
 * An item that fails is answered with its error object and the others are
 * solved. The batch's "options" hold for every item that has none of its
 * own (an item's own replace them whole); an error inside the batch's
 * options keeps its "/options" path.
 *
 * Memory: one array of items, each a one-target job (or the error that
 * took its place); the count is bounded by lim->max_items and the whole
 * body by lim->max_body_bytes; at most PROTO_MAX_SOLUTION_TARGETS items may
 * ask for every solution (options.all_solutions), the others that do are
 * answered with a too_large error.
 *
 * It also reads a batch body of either form (proto_batch_decode): the
 * items, or one chain's targets (proto_job_decode.c).
 *
 * Not here: the HTTP pipeline (server/http_batch.c), answers of a single
 * chain's batch (proto_job_encode.c).
 */
#include "proto/proto_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct proto_item {
    proto_job *job;     /* NULL when the item failed */
    proto_error *error; /* the item's error (malloc'd), or NULL */
} proto_item;

struct proto_items {
    size_t n;
    proto_item *items;
    double cost_us; /* mean estimated cost of a solved item */
};

/* err's path placed under "/items/<i>". */
static void prefix_path(proto_error *err, size_t i)
{
    char p[sizeof err->path + 32];
    snprintf(p, sizeof p, "/items/%zu%s", i, err->path);
    p[sizeof err->path - 1] = '\0'; /* a path past the bound is cut */
    memcpy(err->path, p, sizeof err->path);
}

/* Item i answered with err, its path under "/items/<i>" but for an error
 * in the batch's options (batch_opts: the item took them), which keeps
 * its "/options" path. */
static void item_error(proto_item *item, size_t i, proto_error *err, bool batch_opts)
{
    if (!(batch_opts && strncmp(err->path, "/options", 8) == 0 &&
          (err->path[8] == '\0' || err->path[8] == '/')))
        prefix_path(err, i);
    item->job = NULL;
    item->error = malloc(sizeof *item->error);
    if (item->error)
        *item->error = *err;
}

/* Item i (el) into it->items[i], with the batch's options (opts, otree
 * their tree; absent: none): its job, or its error. In text mode an item
 * the text mode declines is read from its own tree, which words its
 * error; el is left after it. 0, or -1 in text mode when the item's text
 * is not JSON. */
static int decode_item(proto_items *it, size_t i, proto_in *el, const proto_in *opts,
                       const json_t *otree, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud)
{
    proto_item *item = &it->items[i];
    proto_error err;
    if (proto_in_is_text(el)) {
        const char *at = el->s.p, *s;
        size_t n, count;
        if (proto__job_decode_item(el, opts, lim, lookup, ud, &item->job, &err) == 0)
            return 0;
        el->s.p = at;
        json_t *v = proto__scan_skim(&el->s, &s, &n, &count)
                        ? json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL)
                        : NULL;
        proto_in tin = proto_in_tree(v), tops = proto_in_tree(otree);
        if (v)
            decode_item(it, i, &tin, &tops, otree, lim, lookup, ud);
        json_decref(v);
        return v ? 0 : -1;
    }
    if (!json_is_object(el->node))
        proto_error_set(&err, PROTO_E_INVALID_REQUEST, "",
                        "an item must be an object (a POST /v1/solve body)");
    else if (proto__job_decode_item(el, opts, lim, lookup, ud, &item->job, &err) == 0)
        return 0;
    item_error(item, i, &err, otree && !json_object_get(el->node, "options"));
    return 0;
}

/*
 * The one reader of a body of items (in), in either of the codec's modes
 * (proto_codec.h), each item by the decoder of POST /v1/solve bodies. In
 * text mode, an item the text mode declines is read as a tree of its own
 * text, which is its subtree of the body's tree (the body is JSON when this
 * returns 0: its envelope and every item were read, and the options as a
 * tree); -1 (*err set in tree mode only) for an envelope that is wrong or
 * text that is not JSON, which the tree mode words.
 */
static int items_read(proto_in *in, const proto_limits *lim, proto_chain_lookup_fn lookup,
                      void *ud, proto_items **out, proto_error *err)
{
    bool text = proto_in_is_text(in);
    proto_object env;
    proto_in none = proto_in_tree(NULL);
    size_t n;
    *out = NULL;
    if (proto__object_read(in, "", proto_request_members, PROTO_R_COUNT, PROTO_REQUEST_ITEMS,
                           NULL, &env, err) ||
        (text && !proto__scan_end(&in->s)))
        return -1;
    proto_in *items = &env.in[PROTO_R_ITEMS];
    proto_in *opts = env.has & PROTO_BIT(PROTO_R_OPTIONS) ? &env.in[PROTO_R_OPTIONS] : &none;
    if (!(env.has & PROTO_BIT(PROTO_R_ITEMS)))
        return proto__required(err, "", "items");
    if (proto__array(items, "/items", 1, lim->max_items, true, &n, err))
        return -1;
    json_t *otree = (json_t *)opts->node, *own = NULL;
    if (proto_in_present(opts) && (text ? *opts->s.p != '{' : !json_is_object(otree)))
        return proto__bad(err, "/options", "must be an object");
    if (text && proto_in_present(opts) &&
        !(otree = own = json_loadb(opts->s.p, (size_t)(opts->s.end - opts->s.p),
                                   JSON_REJECT_DUPLICATES, NULL)))
        return -1;
    proto_items *it = calloc(1, sizeof *it);
    int rc = it && (it->items = calloc(n, sizeof *it->items)) ? 0 : -1;
    if (rc == 0)
        it->n = n;
    double cost = 0;
    size_t solved = 0, all_solutions = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        proto_in el;
        proto_item *item = &it->items[i];
        rc = proto__element(items, i, &el) ? decode_item(it, i, &el, opts, otree, lim, lookup, ud)
                                           : -1;
        proto__element_done(items, &el);
        if (item->job && item->job->opt.all_solutions &&
            ++all_solutions > PROTO_MAX_SOLUTION_TARGETS) {
            /* every solution of a target is up to PROTO_MAX_SOLUTIONS rows:
             * as for a batch, at most PROTO_MAX_SOLUTION_TARGETS of them */
            proto_job_free(item->job);
            proto_error e;
            proto_error_set(&e, PROTO_E_TOO_LARGE, "/options/all_solutions",
                            "options.all_solutions: at most %d items of a batch may ask for "
                            "every solution",
                            PROTO_MAX_SOLUTION_TARGETS);
            item_error(item, i, &e, false);
        }
        if (item->job) {
            cost += proto_job_cost_us(item->job);
            solved++;
        } else if (!item->error) {
            rc = -1; /* its error could not be kept: out of memory */
        }
    }
    json_decref(own);
    if (rc == 0 && proto__elements_end(items)) {
        it->cost_us = solved ? cost / (double)solved : 0.0;
        *out = it;
        return 0;
    }
    proto_items_free(it);
    return text ? -1 : proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
}

int proto_items_decode_json(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                            void *ud, proto_items **out, proto_error *err)
{
    proto_limits def;
    proto_in in = proto_in_tree(req);
    return items_read(&in, proto__limits_or_default(lim, &def), lookup, ud, out, err);
}

/* A batch body: the text mode of one chain's targets (with job), then of
 * items, else the tree, then the decoder of its form (items only, without
 * job). */
int proto_batch_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_job **job,
                       proto_items **items, proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    *items = NULL;
    if (job && proto__job_decode_text(body, len, PROTO_BATCH, lim, lookup, ud, job) == 0)
        return 0;
    if (body && len > 0 && len <= lim->max_body_bytes) {
        proto_in in = proto_in_text(body, len);
        if (items_read(&in, lim, lookup, ud, items, err) == 0)
            return 0;
    }
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!root)
        return -1;
    int rc = !job || (json_is_object(root) && json_object_get(root, "items"))
                 ? proto_items_decode_json(root, lim, lookup, ud, items, err)
                 : proto_job_decode_json(root, PROTO_BATCH, lim, lookup, ud, job, err);
    json_decref(root);
    return rc;
}

int proto_items_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_items **out,
                       proto_error *err)
{
    return proto_batch_decode(body, len, lim, lookup, ud, NULL, out, err);
}

size_t proto_items_count(const proto_items *it)
{
    return it->n;
}

double proto_items_cost_us(const proto_items *it)
{
    return it->cost_us;
}

proto_job *proto_items_job(const proto_items *it, size_t i)
{
    return i < it->n ? it->items[i].job : NULL;
}

void proto_items_run(proto_items *it, size_t begin, size_t end)
{
    for (size_t i = begin; i < end && i < it->n; i++)
        if (it->items[i].job)
            proto_job_run(it->items[i].job, 0, 1);
}

/* ---- answers ---------------------------------------------------------- */

#define RAW(w, s) proto_jw_raw(w, s, sizeof(s) - 1)

/* {"error":{"code","message","path"}} as the HTTP error bodies are. */
static void put_error(proto_jw *w, const proto_error *e)
{
    RAW(w, "{\"error\":");
    if (!proto_error_write(w, e))
        RAW(w, "{\"code\":\"internal\",\"message\":\"out of memory\",\"path\":\"\"}");
    RAW(w, "}");
}

static void put_head(proto_jw *w, const proto_items *it)
{
    RAW(w, "{\"count\":");
    proto_jw_integer(w, (json_int_t)it->n);
    RAW(w, ",\"results\":[");
}

static void put_results(proto_jw *w, const proto_items *it, size_t begin, size_t end,
                        size_t counts[PROTO_COUNT_BUCKETS])
{
    for (size_t i = begin; i < end && i < it->n; i++) {
        if (i)
            RAW(w, ",");
        if (it->items[i].job) {
            counts[proto__count_bucket(proto__job_result_write(w, it->items[i].job, 0))]++;
        } else {
            put_error(w, it->items[i].error);
            counts[4]++;
        }
    }
}

char *proto_items_encode_head(const proto_items *it, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    put_head(&w, it);
    return proto_jw_finish(&w, len);
}

char *proto_items_encode_results(const proto_items *it, size_t begin, size_t end,
                                 size_t counts[PROTO_COUNT_BUCKETS], size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    put_results(&w, it, begin, end, counts);
    return proto_jw_finish(&w, len);
}

char *proto_items_encode_tail(const proto_items *it, const size_t counts[PROTO_COUNT_BUCKETS],
                              size_t *len)
{
    (void)it;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto__counts_write(&w, counts, PROTO_COUNT_BUCKETS);
    return proto_jw_finish(&w, len);
}

size_t proto_items_result_bytes(const proto_items *it)
{
    /* an error's answer: its code, message and path, escaped */
    size_t most = 64 + 6 * (sizeof it->items[0].error->message + sizeof it->items[0].error->path);
    for (size_t i = 0; i < it->n; i++) {
        size_t b = it->items[i].job ? proto_job_result_bytes(it->items[i].job) : 0;
        if (b > most)
            most = b;
    }
    return most;
}

char *proto_items_encode(const proto_items *it, size_t *len)
{
    size_t counts[PROTO_COUNT_BUCKETS] = {0};
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    put_head(&w, it);
    put_results(&w, it, 0, it->n, counts);
    proto__counts_write(&w, counts, PROTO_COUNT_BUCKETS);
    return proto_jw_finish(&w, len);
}

void proto_items_free(proto_items *it)
{
    if (!it)
        return;
    for (size_t i = 0; i < it->n; i++) {
        proto_job_free(it->items[i].job);
        free(it->items[i].error);
    }
    free(it->items);
    free(it);
}

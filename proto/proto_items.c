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

/* Tree mode: item i (v) into it->items[i], with the batch's options
 * (opts, or NULL): its job, or its error. */
static void decode_item(proto_items *it, size_t i, const json_t *v, const json_t *opts,
                        const proto_limits *lim, proto_chain_lookup_fn lookup, void *ud)
{
    proto_item *item = &it->items[i];
    proto_error err;
    proto_in in = proto_in_tree(v), o = proto_in_tree(opts);
    if (!json_is_object(v))
        proto_error_set(&err, PROTO_E_INVALID_REQUEST, "",
                        "an item must be an object (a POST /v1/solve body)");
    else if (proto__job_decode_item(&in, &o, lim, lookup, ud, &item->job, &err) == 0)
        return;
    item_error(item, i, &err, opts && !json_object_get(v, "options"));
}

static proto_items *items_new(size_t n)
{
    proto_items *it = calloc(1, sizeof *it);
    if (it && !(it->items = calloc(n, sizeof *it->items))) {
        free(it);
        return NULL;
    }
    if (it)
        it->n = n;
    return it;
}

/* Once every item is decoded: at most PROTO_MAX_SOLUTION_TARGETS of them
 * ask for every solution (each is up to PROTO_MAX_SOLUTIONS rows: as for a
 * batch), the later ones that do answered with too_large; the mean cost of
 * a solved item. 0, or -1 when an item's error could not be kept (out of
 * memory). */
static int items_finish(proto_items *it)
{
    double cost = 0;
    size_t solved = 0, all_solutions = 0;
    for (size_t i = 0; i < it->n; i++) {
        proto_item *item = &it->items[i];
        if (item->job && item->job->opt.all_solutions &&
            ++all_solutions > PROTO_MAX_SOLUTION_TARGETS) {
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
            return -1;
        }
    }
    it->cost_us = solved ? cost / (double)solved : 0.0;
    return 0;
}

int proto_items_decode_json(json_t *req, const proto_limits *lim, proto_chain_lookup_fn lookup,
                            void *ud, proto_items **out, proto_error *err)
{
    static const char *const keys[] = {"items", "options", NULL};
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    *out = NULL;
    if (proto_json_check_object(req, "", keys, err))
        return -1;
    json_t *ji = proto_json_require(req, "", "items", err);
    size_t n;
    if (!ji || proto_json_array(ji, "/items", 1, lim->max_items, true, &n, err))
        return -1;
    json_t *opts = json_object_get(req, "options");
    if (opts && !json_is_object(opts))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options",
                               "options must be an object");
    proto_items *it = items_new(n);
    for (size_t i = 0; it && i < n; i++)
        decode_item(it, i, json_array_get(ji, i), opts, lim, lookup, ud);
    if (!it || items_finish(it)) {
        proto_items_free(it);
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    }
    *out = it;
    return 0;
}

/* Text mode: item i, which the text mode declined (el, from at), read
 * from its own tree, el left after it; -1 when its text is not JSON. */
static int item_tree(proto_items *it, size_t i, proto_in *el, const char *at, const json_t *opts,
                     const proto_limits *lim, proto_chain_lookup_fn lookup, void *ud)
{
    const char *s;
    size_t n, count;
    el->s.p = at;
    if (!proto__scan_skim(&el->s, &s, &n, &count))
        return -1;
    json_t *v = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    if (!v)
        return -1;
    decode_item(it, i, v, opts, lim, lookup, ud);
    json_decref(v);
    return 0;
}

/*
 * The text mode of a body of items (proto_codec.h): the envelope read
 * from the text, then each item by the text mode of a POST /v1/solve body
 * (proto__job_decode_item), with the batch's options when it has none of
 * its own. An item that mode declines (any error, a scene...) is read
 * from its own tree and words its own error; that tree is the item's
 * subtree of the body's tree, as the body is JSON when this returns 0: its
 * envelope was read from the text, each item either by the text mode
 * (which takes only JSON) or as a tree, the batch's options as a tree.
 * 0 and *out, or -1 with nothing allocated: the body's tree must be read
 * (an error of the envelope, text that is not JSON).
 */
static int items_text(const char *body, size_t len, const proto_limits *lim,
                      proto_chain_lookup_fn lookup, void *ud, proto_items **out)
{
    *out = NULL;
    if (!body || len == 0 || len > lim->max_body_bytes)
        return -1;
    proto_in in = proto_in_text(body, len), none = proto_in_tree(NULL);
    proto_object env;
    size_t n;
    if (proto__object_read(&in, "", proto_request_members, PROTO_R_COUNT, PROTO_REQUEST_ITEMS,
                           NULL, &env, NULL) ||
        !proto__scan_end(&in.s) || !(env.has & PROTO_BIT(PROTO_R_ITEMS)) ||
        proto__array(&env.in[PROTO_R_ITEMS], "/items", 1, lim->max_items, true, &n, NULL))
        return -1;
    proto_in *items = &env.in[PROTO_R_ITEMS], *opts = &none;
    json_t *otree = NULL; /* the batch's options, for items read as trees */
    if (env.has & PROTO_BIT(PROTO_R_OPTIONS)) {
        opts = &env.in[PROTO_R_OPTIONS];
        if (*opts->s.p != '{' ||
            !(otree = json_loadb(opts->s.p, (size_t)(opts->s.end - opts->s.p),
                                 JSON_REJECT_DUPLICATES, NULL)))
            return -1;
    }
    proto_items *it = items_new(n);
    int rc = it ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        proto_in el;
        proto_error err;
        if (!proto__element(items, i, &el)) {
            rc = -1;
            break;
        }
        proto__scan_ws(&el.s);
        const char *at = el.s.p;
        if (proto__job_decode_item(&el, opts, lim, lookup, ud, &it->items[i].job, &err))
            rc = item_tree(it, i, &el, at, otree, lim, lookup, ud);
        proto__element_done(items, &el);
    }
    json_decref(otree);
    if (rc == 0 && proto__elements_end(items) && items_finish(it) == 0) {
        *out = it;
        return 0;
    }
    proto_items_free(it);
    return -1;
}

int proto_items_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_items **out,
                       proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    if (items_text(body, len, lim, lookup, ud, out) == 0)
        return 0;
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!root)
        return -1;
    int rc = proto_items_decode_json(root, lim, lookup, ud, out, err);
    json_decref(root);
    return rc;
}

/* A batch body of either form: the text mode of a batch of one chain's
 * targets (proto_job_decode.c), then of a batch of items, else the tree,
 * then the decoder of its form. */
int proto_batch_decode(const char *body, size_t len, const proto_limits *lim,
                       proto_chain_lookup_fn lookup, void *ud, proto_job **job,
                       proto_items **items, proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    *job = NULL;
    *items = NULL;
    if (proto__job_decode_text(body, len, PROTO_BATCH, lim, lookup, ud, job) == 0 ||
        items_text(body, len, lim, lookup, ud, items) == 0)
        return 0;
    /* the tree: then the decoder of its form */
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!root)
        return -1;
    int rc;
    if (json_is_object(root) && json_object_get(root, "items"))
        rc = proto_items_decode_json(root, lim, lookup, ud, items, err);
    else
        rc = proto_job_decode_json(root, PROTO_BATCH, lim, lookup, ud, job, err);
    json_decref(root);
    return rc;
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

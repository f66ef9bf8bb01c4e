/*
 * fuzz_json.c: the JSON writer (proto/proto_json_write.c) against jansson,
 * differentially, on every tree jansson reads.
 *
 * The first byte picks the flags (JSON_DECODE_ANY or not; duplicate keys
 * are always rejected, as every decoder of ikd does); the rest is the text,
 * read by json_loadb(). On every tree it reads:
 *   - the canonical text chain and scene ids hash (proto__canonical_text in
 *     proto/proto_id.c: keys sorted, every number a 17-digit real) must be
 *     byte for byte json_dumps() of the same tree with its integers made
 *     reals, with JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) |
 *     JSON_ENCODE_ANY: ids are hashes of that text, so one differing byte
 *     (an escape written \u001e instead of \u001E) is another id;
 *   - proto_json_dump(), which writes reals in their shortest form, must be
 *     byte for byte json_dumps() (JSON_COMPACT | JSON_REAL_PRECISION(17) |
 *     JSON_ENCODE_ANY) on a tree without reals (strings, their escapes,
 *     integers, keys, layout), and on any tree must read back (jansson) to
 *     the tree json_dumps() describes.
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto_json_write.h"
#include "proto/proto_kind.h"
#include "tests/proto/oracle.h"

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY)

static bool has_reals(const json_t *v)
{
    const char *key;
    json_t *x;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_REAL:
        return true;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, key, x) if (has_reals(x)) return true;
        return false;
    case JSON_ARRAY:
        json_array_foreach(v, i, x) if (has_reals(x)) return true;
        return false;
    default:
        return false;
    }
}


static void same_text(const char *want, const char *got, const char *what)
{
    if (!want || !got)
        fuzz_fail("a dump returned NULL");
    if (strcmp(want, got) != 0) {
        fprintf(stderr, "jansson: %s\nproto:   %s\n", want, got);
        fuzz_fail(what);
    }
}

static void check_canonical(const json_t *v)
{
    char *want = oracle_canonical_text(v);
    char *got = proto__canonical_text(v, NULL);
    same_text(want, got, "the canonical text (chain ids) differs from json_dumps");
    free(want);
    free(got);
}

static void check_dump(const json_t *v)
{
    char *want = json_dumps(v, DUMP_FLAGS);
    char *got = proto_json_dump(v);
    if (!has_reals(v))
        same_text(want, got, "proto_json_dump differs from json_dumps");
    json_t *back = got ? json_loads(got, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
    char *again = back ? json_dumps(back, DUMP_FLAGS) : NULL;
    same_text(want, again, "proto_json_dump does not read back as json_dumps describes");
    json_decref(back);
    free(again);
    free(want);
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t flags = JSON_REJECT_DUPLICATES | ((data[0] & 1) ? JSON_DECODE_ANY : 0);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    json_t *j = json_loadb(text, len, flags, NULL);
    if (j) {
        check_canonical(j);
        check_dump(j);
    }
    json_decref(j);
    return 0;
}

/*
 * fuzz_json.c: the fast JSON reader and writer (proto/proto_json.c,
 * proto/proto_json_write.c) against jansson, differentially.
 *
 * The first byte picks the flags (JSON_DECODE_ANY or not; the reader is
 * always asked to reject duplicate keys, as every decoder of ikd does); the
 * rest is the text. proto_json_loadb() must give exactly what json_loadb()
 * gives: the same tree (types, key order, reals bit for bit) or the same
 * error (text, line, column, position). The fast reader alone
 * (proto__json_read) may decline a text but never accept an invalid one or
 * build a different tree. Then the writer, on every tree jansson read:
 * proto_json_dump(), which writes reals in their shortest form, must be
 * byte for byte json_dumps() (JSON_COMPACT | JSON_REAL_PRECISION(17) |
 * JSON_ENCODE_ANY) on a tree without reals (strings, their escapes,
 * integers, keys, layout), and on any tree must read back (jansson) to the
 * tree json_dumps() describes.
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto_json.h"
#include "proto/proto_json_write.h"

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

    json_error_t ej, ep;
    json_t *j = json_loadb(text, len, flags, &ej);
    json_t *p = proto_json_loadb(text, len, flags, &ep);
    if (!j != !p)
        fuzz_fail(j ? "proto_json_loadb refused what jansson read"
                    : "proto_json_loadb read what jansson refused");
    if (j && !fuzz_same_tree(j, p))
        fuzz_fail("proto_json_loadb built another tree than jansson");
    if (!j && (strcmp(ej.text, ep.text) != 0 || ej.line != ep.line ||
               ej.column != ep.column || ej.position != ep.position))
        fuzz_fail("proto_json_loadb failed with another error than jansson");
    if (j && (ej.position != ep.position))
        fuzz_fail("proto_json_loadb reports another end position than jansson");

    json_t *f = proto__json_read(text, len, flags);
    if (f && !j)
        fuzz_fail("the fast reader accepted an invalid text");
    if (f && !fuzz_same_tree(j, f))
        fuzz_fail("the fast reader built another tree than jansson");

    if (j)
        check_dump(j);
    json_decref(f);
    json_decref(p);
    json_decref(j);
    return 0;
}

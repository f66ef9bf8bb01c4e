/*
 * proto_json.c: strict JSON reading into jansson trees (contract in
 * proto_json.h): the parse entry point (jansson's json_loadb() with
 * duplicate keys rejected and the body bounded, its errors worded with
 * line, column and the XML hint), the estimate of a tree's heap bytes, and
 * the getters the tree mode of the decoders reads values with. Every getter
 * fills the caller's proto_error with the offending value's JSON pointer;
 * nothing here allocates an error. Text read without a tree is the
 * scanner's (proto_scan.c); writing is proto_json_write.c's.
 */
#include "proto/proto_json.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- paths ------------------------------------------------------------ */

void proto_json_path_key(char out[PROTO_PATH_MAX], const char *base, const char *key)
{
    /* runs for every field of every request: copies, not a byte loop */
    const char *b = base ? base : "";
    size_t n = strnlen(b, PROTO_PATH_MAX - 1);
    memcpy(out, b, n);
    if (n < PROTO_PATH_MAX - 1)
        out[n++] = '/';
    size_t kl = strcspn(key, "~/");
    if (kl > PROTO_PATH_MAX - 1 - n)
        kl = PROTO_PATH_MAX - 1 - n;
    memcpy(out + n, key, kl);
    n += kl;
    for (const char *k = key + kl; *k && n < PROTO_PATH_MAX - 1; k++) {
        if (*k == '~' || *k == '/') {
            if (n + 2 >= PROTO_PATH_MAX)
                break;
            out[n++] = '~';
            out[n++] = *k == '~' ? '0' : '1';
        } else {
            out[n++] = *k;
        }
    }
    out[n] = '\0';
}

void proto_json_path_index(char out[PROTO_PATH_MAX], const char *base, size_t i)
{
    /* on every array element of every request: no snprintf */
    char key[24];
    int o = (int)sizeof key - 1;
    key[o] = '\0';
    do {
        key[--o] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    proto_json_path_key(out, base, key + o);
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

void proto_json_path_name(char *out, size_t size, const char *path)
{
    if (size == 0)
        return;
    if (!path || !*path) {
        snprintf(out, size, "the request");
        return;
    }
    size_t n = 0;
    const char *p = path;
    while (*p == '/') {
        p++;
        size_t len = strcspn(p, "/");
        bool index = all_digits(p, len) && n > 0;
        if (index && n < size - 1)
            out[n++] = '[';
        else if (n > 0 && n < size - 1)
            out[n++] = '.';
        for (size_t i = 0; i < len && n < size - 1; i++) {
            char c = p[i];
            if (c == '~' && i + 1 < len) {
                c = p[i + 1] == '1' ? '/' : '~';
                i++;
            }
            out[n++] = c;
        }
        if (index && n < size - 1)
            out[n++] = ']';
        p += len;
    }
    out[n] = '\0';
}

int proto__bad(proto_error *err, const char *path, const char *what)
{
    char name[PROTO_PATH_MAX];
    proto_json_path_name(name, sizeof name, path);
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "%s %s", name, what);
}

/* ---- memory of a tree ------------------------------------------------- */

/* One malloc block of n bytes: a header word, rounded to 16, at least 32. */
static size_t heap_block(size_t n)
{
    size_t b = (n + 8 + 15) & ~(size_t)15;
    return b < 32 ? 32 : b;
}

size_t proto__json_tree_bytes(const json_t *v)
{
    if (!v)
        return 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        /* json_object_t (json_t + hashtable_t), its buckets (two pointers
         * each, a power of two >= 8 and >= the size) and one pair per key
         * (hash, two list links, value, key length, the key) */
        size_t n = json_object_size(v), buckets = 8;
        while (buckets < n)
            buckets *= 2;
        size_t total = heap_block(72) + heap_block(buckets * 16);
        const char *key;
        size_t klen;
        json_t *value;
        json_object_keylen_foreach((json_t *)v, key, klen, value)
        {
            total += heap_block(56 + klen + 1) + proto__json_tree_bytes(value);
        }
        return total;
    }
    case JSON_ARRAY: {
        /* json_array_t and its table (capacity doubles from 8) */
        size_t n = json_array_size(v), cap = 8;
        while (cap < n)
            cap *= 2;
        size_t total = heap_block(40) + heap_block(cap * sizeof(json_t *));
        for (size_t i = 0; i < n; i++)
            total += proto__json_tree_bytes(json_array_get(v, i));
        return total;
    }
    case JSON_STRING:
        return heap_block(32) + heap_block(json_string_length(v) + 1);
    case JSON_INTEGER:
    case JSON_REAL:
        return heap_block(24);
    default:
        return 0; /* true, false, null: static singletons */
    }
}

/* ---- parsing ---------------------------------------------------------- */

json_t *proto_json_parse(const char *body, size_t len, size_t max_bytes, proto_json_ctx ctx,
                         proto_error *err)
{
    if (len > max_bytes) {
        proto_error_set(err, PROTO_E_TOO_LARGE, "", "the body has %zu bytes; the limit is %zu", len,
                        max_bytes);
        return NULL;
    }
    if (!body || len == 0) {
        proto_error_set(err, PROTO_E_INVALID_JSON, "", "the body is empty");
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        proto_json_syntax_error(body, len, &je, ctx, err);
        return NULL;
    }
    return v;
}

/* The JSON a URDF chain goes in, for each place a text can be sent; each
 * hint fits in a proto_error message after jansson's words. */
#define URDF_CHAIN "{\"kind\":\"urdf\",\"urdf\":\"<robot ...>\",\"base\":...,\"tip\":...}"
#define IKD_CHAIN  "ikd chain FILE.urdf --base B --tip T"
static const char *const xml_hints[] = {
    [PROTO_JSON_SOLVE] = "; this looks like XML: send {\"chain\":" URDF_CHAIN
                         ",\"target\":...} (" IKD_CHAIN " prints the chain)",
    [PROTO_JSON_BATCH] = "; this looks like XML: send {\"chain\":" URDF_CHAIN
                         ",\"targets\":[...]} (" IKD_CHAIN " prints the chain)",
    [PROTO_JSON_CHAIN] = "; this looks like XML: /v1/chains takes the chain object " URDF_CHAIN
                         " (" IKD_CHAIN " prints it)",
    [PROTO_JSON_STREAM] = "; this looks like XML: a URDF goes in the open message, as "
                          "{\"type\":\"open\",\"stream\":...,\"chain\":" URDF_CHAIN "}",
};

int proto_json_syntax_error(const char *text, size_t len, const json_error_t *je,
                            proto_json_ctx ctx, proto_error *err)
{
    /* a UTF-8 byte order mark, which jansson would name as an invisible
     * character (JSON texts carry none, RFC 8259 section 8.1) */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        return proto_error_set(err, PROTO_E_INVALID_JSON, "",
                               "the JSON starts with a UTF-8 byte order mark (bytes EF BB BF); "
                               "send it without one");
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    const char *hint =
        i < len && text[i] == '<' && (unsigned)ctx <= PROTO_JSON_STREAM ? xml_hints[ctx] : "";
    return proto_error_set(err, PROTO_E_INVALID_JSON, "", "%s (line %d, column %d)%s", je->text,
                           je->line, je->column, hint);
}

/* ---- getters ---------------------------------------------------------- */

int proto_json_check_object(const json_t *v, const char *path, const char *const *allowed,
                            proto_error *err)
{
    if (!json_is_object(v))
        return proto__bad(err, path, "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        bool ok = false;
        for (size_t i = 0; allowed && allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0) {
                ok = true;
                break;
            }
        if (!ok) {
            char p[PROTO_PATH_MAX], name[PROTO_PATH_MAX];
            proto_json_path_key(p, path, key);
            proto_json_path_name(name, sizeof name, path);
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p, "unknown field \"%.64s\" in %s",
                                   key, name);
        }
    }
    return 0;
}

json_t *proto_json_require(const json_t *obj, const char *path, const char *key,
                           proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, key);
        proto__bad(err, p, "is required");
    }
    return v;
}

int proto_json_number(const json_t *v, const char *path, double lo, double hi, double *out,
                      proto_error *err)
{
    if (!json_is_number(v))
        return proto__bad(err, path, "must be a finite number");
    double d = json_number_value(v);
    if (proto__number_in(d, path, lo, hi, err))
        return -1;
    *out = d;
    return 0;
}

int proto__number_in(double d, const char *path, double lo, double hi, proto_error *err)
{
    if (!isfinite(d))
        return proto__bad(err, path, "must be a finite number");
    if (d < lo || d > hi) {
        char what[128];
        proto_error_format_text(what, sizeof what, "must be within [%g, %g] (got %g)", lo, hi, d);
        return proto__bad(err, path, what);
    }
    return 0;
}

int proto_json_positive(const json_t *v, const char *path, double hi, double *out,
                        proto_error *err)
{
    double d;
    if (proto_json_number(v, path, -INFINITY, INFINITY, &d, err))
        return -1;
    if (!(d > 0) || d > hi) {
        char what[128];
        proto_error_format_text(what, sizeof what, "must be > 0 and <= %g (got %g)", hi, d);
        return proto__bad(err, path, what);
    }
    *out = d;
    return 0;
}

int proto_json_integer(const json_t *v, const char *path, long long lo, long long hi,
                       long long *out, proto_error *err)
{
    if (!json_is_integer(v))
        return proto__bad(err, path, "must be an integer");
    long long i = (long long)json_integer_value(v);
    if (i < lo || i > hi) {
        char what[128];
        snprintf(what, sizeof what, "must be within [%lld, %lld] (got %lld)", lo, hi, i);
        return proto__bad(err, path, what);
    }
    *out = i;
    return 0;
}

int proto_json_bool(const json_t *v, const char *path, bool *out, proto_error *err)
{
    if (!json_is_boolean(v))
        return proto__bad(err, path, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

int proto_json_string(const json_t *v, const char *path, size_t max_len, const char **out,
                      proto_error *err)
{
    if (!json_is_string(v))
        return proto__bad(err, path, "must be a string");
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (strlen(s) != n)
        return proto__bad(err, path, "must not contain NUL characters");
    if (max_len && n > max_len) {
        char what[96];
        snprintf(what, sizeof what, "is too long (%zu bytes; at most %zu)", n, max_len);
        return proto__bad(err, path, what);
    }
    *out = s;
    return 0;
}

int proto_json_enum(const json_t *v, const char *path, const char *const *names, int *out,
                    proto_error *err)
{
    const char *s;
    if (proto_json_string(v, path, 0, &s, err))
        return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return proto__enum_error(err, path, names);
}

int proto__enum_error(proto_error *err, const char *path, const char *const *names)
{
    char what[200];
    size_t n = (size_t)snprintf(what, sizeof what, "must be one of");
    for (int i = 0; names[i] && n < sizeof what; i++)
        n += (size_t)snprintf(what + n, sizeof what - n, "%s \"%s\"", i ? "," : "", names[i]);
    return proto__bad(err, path, what);
}

int proto_json_array(const json_t *v, const char *path, size_t min, size_t max, bool too_large,
                     size_t *n, proto_error *err)
{
    if (!json_is_array(v))
        return proto__bad(err, path, "must be an array");
    size_t k = json_array_size(v);
    char what[128];
    if (k > max) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        if (too_large)
            return proto_error_set(err, PROTO_E_TOO_LARGE, path,
                                   "%s has %zu elements; the limit is %zu", name, k, max);
        if (min == max)
            snprintf(what, sizeof what, "must have exactly %zu elements (got %zu)", min, k);
        else
            snprintf(what, sizeof what, "must have at most %zu elements (got %zu)", max, k);
        return proto__bad(err, path, what);
    }
    if (k < min) {
        if (min == max)
            snprintf(what, sizeof what, "must have exactly %zu elements (got %zu)", min, k);
        else
            snprintf(what, sizeof what, "must have at least %zu elements (got %zu)", min, k);
        return proto__bad(err, path, what);
    }
    *n = k;
    return 0;
}

int proto_json_numbers(const json_t *v, const char *path, size_t n, double *out,
                       proto_error *err)
{
    size_t k;
    if (proto_json_array(v, path, n, n, false, &k, err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        char p[PROTO_PATH_MAX];
        proto_json_path_index(p, path, i);
        if (proto_json_number(json_array_get(v, i), p, -PROTO_MAX_ABS, PROTO_MAX_ABS, &out[i],
                              err))
            return -1;
    }
    return 0;
}

/* ---- writing ---------------------------------------------------------- */

json_t *proto_json_array_of(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_real(v[i]))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

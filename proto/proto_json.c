/*
 * proto_json.c: strict JSON reading into jansson trees (contract in
 * proto_json.h): the fast reader that builds exactly jansson's tree (its
 * numbers are the one scanner's, proto_scan.c) with jansson's own reader
 * behind it for every text it declines, and the getters the tree mode of
 * the decoders reads values with. Every getter fills the caller's
 * proto_error with the offending value's JSON pointer; nothing here
 * allocates an error. Writing is proto_json_write.c's.
 */
#include "proto/proto_json.h"
#include "proto/proto_scan.h"

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

/* ---- parsing ---------------------------------------------------------- */

/*
 * The reader. jansson's own parser reads one character at a time through a
 * stream abstraction and calls localeconv() for every number; on a two-bone
 * request that is most of the decode. This reader walks the buffer directly
 * and builds the tree json_loadb() would build, with the same public
 * constructors, in the same order:
 *
 *   - objects and arrays as jansson fills them (keys in text order), strings
 *     with json_stringn_nocheck() once their UTF-8 has been checked here;
 *   - a number without fraction or exponent that fits json_int_t is an
 *     integer (-0 is the integer 0), any other number a real;
 *   - reals are correctly rounded: exactly (one IEEE multiplication or
 *     division of two exact doubles) when the digits fit 2^53 and the power
 *     of ten is at most 22, else strtod() as jansson itself converts them
 *     (the daemon never calls setlocale(); a locale whose decimal point is
 *     not '.' makes strtod() stop early and the text goes to jansson);
 *   - nesting counts as jansson counts it: every value, scalars included,
 *     one level deeper than its container, JSON_PARSER_MAX_DEPTH at most.
 *
 * It gives up (returns NULL, nothing leaked) at the first thing it does not
 * accept: every syntax error, a duplicate key (also without
 * JSON_REJECT_DUPLICATES: jansson's replacement rules are left to jansson),
 * \u0000, lone surrogates, invalid UTF-8, integers beyond json_int_t, reals
 * that overflow, depth beyond the limit, a top-level scalar without
 * JSON_DECODE_ANY, anything after the value but whitespace, out of memory.
 * It copies the one quirk jansson shows on text it accepts (see
 * jr_after_token()).
 * proto_json_loadb() then calls json_loadb() on the same text with the same
 * flags, so that every error is jansson's own, byte for byte (text, line,
 * column, position), and any valid text this reader declines still gives
 * jansson's tree.
 */

typedef struct {
    const unsigned char *p, *end;
    size_t swallowed; /* NUL bytes skipped after numbers and literals */
} jr;

/* jansson's one quirk on valid text: the byte after a number or a literal
 * is read and put back, and a NUL byte put back reads as "nothing buffered",
 * so one NUL right after a number or a literal vanishes ("[1\0]" is [1]) and
 * is not counted in the position. */
static inline void jr_after_token(jr *r)
{
    if (r->p < r->end && *r->p == '\0') {
        r->p++;
        r->swallowed++;
    }
}

static inline void jr_ws(jr *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
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

size_t proto__utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t left = (size_t)(end - p);
    unsigned lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

static int jr_hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* The escapes of s[0..n) (between the quotes, already checked by
 * jr_string() for everything but the escapes) decoded into out, which has
 * room for n bytes (no escape grows). Returns the decoded length or -1. */
static ptrdiff_t jr_unescape(const unsigned char *s, size_t n, char *out)
{
    const unsigned char *e = s + n;
    char *o = out;
    while (s < e) {
        if (*s != '\\') {
            *o++ = (char)*s++;
            continue;
        }
        if (e - s < 2)
            return -1;
        unsigned c = s[1];
        s += 2;
        switch (c) {
        case '"':
            *o++ = '"';
            continue;
        case '\\':
            *o++ = '\\';
            continue;
        case '/':
            *o++ = '/';
            continue;
        case 'b':
            *o++ = '\b';
            continue;
        case 'f':
            *o++ = '\f';
            continue;
        case 'n':
            *o++ = '\n';
            continue;
        case 'r':
            *o++ = '\r';
            continue;
        case 't':
            *o++ = '\t';
            continue;
        case 'u':
            break;
        default:
            return -1;
        }
        unsigned u;
        if (e - s < 4 || jr_hex4(s, &u))
            return -1;
        s += 4;
        if (u == 0)
            return -1; /* \u0000: jansson's, with or without JSON_ALLOW_NUL */
        if (u >= 0xdc00 && u <= 0xdfff)
            return -1; /* a low surrogate first */
        if (u >= 0xd800 && u <= 0xdbff) {
            unsigned l;
            if (e - s < 6 || s[0] != '\\' || s[1] != 'u' || jr_hex4(s + 2, &l) || l < 0xdc00 ||
                l > 0xdfff)
                return -1;
            s += 6;
            u = 0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00);
        }
        if (u < 0x80) {
            *o++ = (char)u;
        } else if (u < 0x800) {
            *o++ = (char)(0xc0 | u >> 6);
            *o++ = (char)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            *o++ = (char)(0xe0 | u >> 12);
            *o++ = (char)(0x80 | (u >> 6 & 0x3f));
            *o++ = (char)(0x80 | (u & 0x3f));
        } else {
            *o++ = (char)(0xf0 | u >> 18);
            *o++ = (char)(0x80 | (u >> 12 & 0x3f));
            *o++ = (char)(0x80 | (u >> 6 & 0x3f));
            *o++ = (char)(0x80 | (u & 0x3f));
        }
    }
    return o - out;
}

/* A string at r->p (on the opening quote). Its bytes in *s, *n: in the text
 * itself, or, when it has escapes (rare in requests), decoded into *heap
 * (malloc'd; the caller frees it, also on error). 0 or -1. */
static int jr_string(jr *r, char **heap, const char **s, size_t *n)
{
    const unsigned char *start = ++r->p, *p = start, *end = r->end;
    bool escaped = false;
    for (;;) {
        while (p < end && proto__plain[*p]) /* the scanner's plain bytes (proto_scan.h) */
            p++;
        if (p >= end)
            return -1;
        unsigned c = *p;
        if (c == '"')
            break;
        if (c == 0x7f) { /* DEL: as it is, too */
            p++;
            continue;
        }
        if (c == '\\') {
            escaped = true;
            if (end - p < 2)
                return -1;
            p += 2; /* the escape itself is checked by jr_unescape() */
            continue;
        }
        if (c < 0x80)
            return -1; /* a control character */
        size_t k = proto__utf8_seq(p, end);
        if (!k)
            return -1;
        p += k;
    }
    size_t raw = (size_t)(p - start);
    r->p = p + 1;
    if (!escaped) {
        *s = (const char *)start;
        *n = raw;
        return 0;
    }
    char *out = *heap = malloc(raw ? raw : 1);
    if (!out)
        return -1;
    ptrdiff_t k = jr_unescape(start, raw, out);
    if (k < 0)
        return -1;
    *s = out;
    *n = (size_t)k;
    return 0;
}

static json_t *jr_string_value(jr *r)
{
    char *heap = NULL;
    const char *s;
    size_t n;
    json_t *v = NULL;
    if (jr_string(r, &heap, &s, &n) == 0)
        v = json_stringn_nocheck(s, n);
    free(heap);
    return v;
}

static json_t *jr_number(jr *r)
{
    proto_json_num n;
    size_t k = proto__json_number((const char *)r->p, (size_t)(r->end - r->p), &n);
    if (!k)
        return NULL;
    r->p += k;
    return n.is_int ? json_integer(n.i) : json_real(n.d);
}

static json_t *jr_value(jr *r, int depth);

static json_t *jr_object(jr *r, int depth)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    r->p++;
    jr_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            goto fail;
        char *heap = NULL;
        const char *key;
        size_t klen;
        if (jr_string(r, &heap, &key, &klen))
            goto fail_key;
        jr_ws(r);
        if (r->p >= r->end || *r->p != ':')
            goto fail_key;
        r->p++;
        json_t *v = jr_value(r, depth + 1);
        if (!v)
            goto fail_key;
        size_t before = json_object_size(o);
        /* a duplicate replaces the value without growing the object */
        if (json_object_setn_new_nocheck(o, key, klen, v) || json_object_size(o) == before)
            goto fail_key;
        free(heap);
        jr_ws(r);
        if (r->p >= r->end)
            goto fail;
        if (*r->p == '}') {
            r->p++;
            return o;
        }
        if (*r->p != ',')
            goto fail;
        r->p++;
        jr_ws(r);
        continue;
    fail_key:
        free(heap);
        goto fail;
    }
fail:
    json_decref(o);
    return NULL;
}

static json_t *jr_array(jr *r, int depth)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    r->p++;
    jr_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = jr_value(r, depth + 1);
        if (!v || json_array_append_new(a, v))
            goto fail;
        jr_ws(r);
        if (r->p >= r->end)
            goto fail;
        if (*r->p == ']') {
            r->p++;
            return a;
        }
        if (*r->p != ',')
            goto fail;
        r->p++;
    }
fail:
    json_decref(a);
    return NULL;
}

static bool jr_word(jr *r, const char *w, size_t n)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
        return false;
    r->p += n;
    return true;
}

/* A value at depth (the top level is 1), after optional whitespace. */
static json_t *jr_value(jr *r, int depth)
{
    jr_ws(r);
    if (r->p >= r->end || depth > JSON_PARSER_MAX_DEPTH)
        return NULL;
    json_t *v;
    switch (*r->p) {
    case '{':
        return jr_object(r, depth);
    case '[':
        return jr_array(r, depth);
    case '"':
        return jr_string_value(r);
    case 't':
        v = jr_word(r, "true", 4) ? json_true() : NULL;
        break;
    case 'f':
        v = jr_word(r, "false", 5) ? json_false() : NULL;
        break;
    case 'n':
        v = jr_word(r, "null", 4) ? json_null() : NULL;
        break;
    default:
        if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
            return NULL;
        v = jr_number(r);
        break;
    }
    if (v)
        jr_after_token(r);
    return v;
}

/* The reader behind proto__json_read() and proto_json_loadb(); the number
 * of NUL bytes jansson would not count in *swallowed. */
static json_t *jr_read(const char *text, size_t len, size_t flags, size_t *swallowed)
{
    if (!text || (flags & ~(size_t)(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)))
        return NULL;
    jr r = {(const unsigned char *)text, (const unsigned char *)text + len, 0};
    jr_ws(&r);
    if (r.p == r.end || !(*r.p == '{' || *r.p == '[' || (flags & JSON_DECODE_ANY)))
        return NULL;
    json_t *v = jr_value(&r, 1);
    if (v) {
        jr_ws(&r);
        if (r.p != r.end) {
            json_decref(v);
            v = NULL;
        }
    }
    *swallowed = r.swallowed;
    return v;
}

json_t *proto__json_read(const char *text, size_t len, size_t flags)
{
    size_t swallowed;
    return jr_read(text, len, flags, &swallowed);
}

json_t *proto_json_loadb(const char *text, size_t len, size_t flags, json_error_t *error)
{
    size_t swallowed = 0;
    json_t *v = jr_read(text, len, flags, &swallowed);
    if (!v)
        return json_loadb(text, len, flags, error);
    if (error) {
        /* as json_loadb() leaves it on success: it has read every byte */
        error->text[0] = '\0';
        error->line = error->column = -1;
        error->position = (int)(len - swallowed);
        memcpy(error->source, "<buffer>", sizeof "<buffer>");
    }
    return v;
}

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
    json_t *v = proto_json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
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

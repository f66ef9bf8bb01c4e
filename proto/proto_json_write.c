/*
 * proto_json_write.c: the JSON writer behind proto_json_dump() and
 * proto_json_format_double() (contract in proto_json.h).
 *
 * Why not json_dumps(): jansson prints every real with snprintf("%.17g"),
 * whose multi-precision path was the largest single cost of answering a
 * two-bone solve over HTTP (profiled: about a third of the daemon's time).
 * This writer produces the same text jansson would for the same tree, with
 * JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY (and
 * JSON_SORT_KEYS for the canonical form): 17 significant digits correctly
 * rounded (so every double reads back exactly), ".0" on integral reals,
 * exponents without '+' or leading zeros, strings escaped as jansson escapes
 * them. The usual magnitudes (1e-4 <= |v| < 1e16) are converted with exact
 * integer arithmetic; other magnitudes go through snprintf and get jansson's
 * touch-ups. tests/proto/test_proto_json.c checks the text against
 * json_dumps() itself on random trees and doubles.
 *
 * Not done here: pretty printing, ASCII-only output, NaN or infinities
 * (jansson refuses them when the tree is built, so they never arrive).
 */
#include "proto/proto_json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the growing output buffer ---------------------------------------- */

typedef struct wbuf {
    char *p;
    size_t len, cap;
    bool oom;
} wbuf;

static void put(wbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* ---- doubles ---------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

/* 10^n for n <= 19. */
static const uint64_t pow10_u64[20] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

/* round(m * 2^e * 10^k) to nearest, ties to even, exactly, for m < 2^53
 * and 0 <= k <= 20: m * 5^k < 2^53 * 2^47 fits 128 bits, and the factor
 * 2^(e + k) is a shift. */
static uint64_t scaled_round(uint64_t m, int e, int k)
{
    uint64_t p5 = 1;
    for (int i = 0; i < k; i++)
        p5 *= 5u;
    u128 x = (u128)m * p5;
    int sh = e + k;
    if (sh >= 0)
        return sh >= 64 ? 0 : (uint64_t)(x << sh);
    sh = -sh;
    if (sh >= 127)
        return 0;
    u128 q = x >> sh;
    u128 rem = x - (q << sh);
    u128 half = (u128)1 << (sh - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (uint64_t)q;
}

/* snprintf("%.17g") with jansson's touch-ups: ".0" when there is neither a
 * point nor an exponent, no '+' and no leading zeros in the exponent. */
static int format_libc(double v, char *buf)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    int o = 0;
    bool frac = false;
    for (int i = 0; i < n; i++) {
        char c = tmp[i];
        if (c == '.')
            frac = true;
        buf[o++] = c;
        if (c == 'e') {
            frac = true;
            i++;
            if (tmp[i] == '-')
                buf[o++] = '-';
            while (i + 1 < n - 1 && tmp[i + 1] == '0')
                i++;
        }
    }
    if (!frac) {
        buf[o++] = '.';
        buf[o++] = '0';
    }
    buf[o] = '\0';
    return o;
}

int proto_json_format_double(double v, char buf[PROTO_DOUBLE_MAX])
{
    if (v == 0.0) {
        int n = signbit(v) ? 4 : 3;
        memcpy(buf, signbit(v) ? "-0.0" : "0.0", (size_t)n + 1);
        return n;
    }
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e16))
        return format_libc(v, buf);
    int e2;
    double fr = frexp(a, &e2); /* a = fr * 2^e2, fr in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(fr, 53);
    int e = e2 - 53;
    /* x10 = floor(log10(a)): log10(2) * (e2 - 1) rounded down is at most one
     * below it; the loop settles it (and a rounding that carries to 18
     * digits) by looking at the digit count. */
    int x10 = (int)floor(0.30102999566398120 * (double)(e2 - 1));
    uint64_t d = 0;
    for (int tries = 0; tries < 4; tries++) {
        int k = 16 - x10;
        if (k < 0 || k > 20)
            break;
        d = scaled_round(m, e, k);
        if (d >= pow10_u64[17])
            x10++;
        else if (d < pow10_u64[16])
            x10--;
        else
            break;
        d = 0;
    }
    if (d == 0) /* not expected in this range; the C library is exact */
        return format_libc(v, buf);
    char dig[17];
    for (int i = 16; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10u);
        d /= 10u;
    }
    int nd = 17; /* %g drops trailing zeros */
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    int o = 0;
    if (v < 0)
        buf[o++] = '-';
    if (x10 >= 0) { /* x10 <= 16: %.17g prints it without an exponent */
        for (int i = 0; i <= x10; i++)
            buf[o++] = i < nd ? dig[i] : '0';
        buf[o++] = '.';
        if (nd > x10 + 1)
            for (int i = x10 + 1; i < nd; i++)
                buf[o++] = dig[i];
        else
            buf[o++] = '0';
    } else { /* -4 <= x10 < 0 */
        buf[o++] = '0';
        buf[o++] = '.';
        for (int i = 0; i < -x10 - 1; i++)
            buf[o++] = '0';
        for (int i = 0; i < nd; i++)
            buf[o++] = dig[i];
    }
    buf[o] = '\0';
    return o;
}

/* ---- values ----------------------------------------------------------- */

static void put_string(wbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0, '0', '0', 0, 0};
        size_t el = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        put(b, esc, el);
    }
    put(b, s + run, n - run);
    put(b, "\"", 1);
}

static void put_integer(wbuf *b, json_int_t v)
{
    char tmp[24];
    int o = (int)sizeof tmp;
    /* through unsigned, so that the most negative value has a magnitude */
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[--o] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    if (v < 0)
        tmp[--o] = '-';
    put(b, tmp + o, sizeof tmp - (size_t)o);
}

static int key_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void put_value(wbuf *b, const json_t *v, bool canonical, int depth);

static void put_object(wbuf *b, const json_t *v, bool canonical, int depth)
{
    put(b, "{", 1);
    size_t n = json_object_size(v);
    const char *key;
    json_t *val;
    if (!canonical || n < 2) {
        bool first = true;
        json_object_foreach((json_t *)v, key, val)
        {
            if (!first)
                put(b, ",", 1);
            first = false;
            put_string(b, key, strlen(key));
            put(b, ":", 1);
            put_value(b, val, canonical, depth + 1);
        }
    } else {
        const char **keys = malloc(n * sizeof *keys);
        if (!keys) {
            b->oom = true;
            return;
        }
        size_t k = 0;
        json_object_foreach((json_t *)v, key, val)
        keys[k++] = key;
        qsort(keys, k, sizeof *keys, key_cmp);
        for (size_t i = 0; i < k; i++) {
            if (i)
                put(b, ",", 1);
            put_string(b, keys[i], strlen(keys[i]));
            put(b, ":", 1);
            put_value(b, json_object_get(v, keys[i]), canonical, depth + 1);
        }
        free(keys);
    }
    put(b, "}", 1);
}

static void put_value(wbuf *b, const json_t *v, bool canonical, int depth)
{
    if (depth > 2048) { /* jansson's own parser stops far earlier */
        b->oom = true;
        return;
    }
    char num[PROTO_DOUBLE_MAX];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(b, v, canonical, depth);
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        put(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                put(b, ",", 1);
            put_value(b, json_array_get(v, i), canonical, depth + 1);
        }
        put(b, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        put_integer(b, json_integer_value(v));
        break;
    case JSON_REAL:
        put(b, num, (size_t)proto_json_format_double(json_real_value(v), num));
        break;
    case JSON_TRUE:
        put(b, "true", 4);
        break;
    case JSON_FALSE:
        put(b, "false", 5);
        break;
    case JSON_NULL:
        put(b, "null", 4);
        break;
    }
}

char *proto_json_dump(const json_t *v, bool canonical)
{
    if (!v)
        return NULL;
    wbuf b = {0};
    put_value(&b, v, canonical, 0);
    put(&b, "", 0);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    return b.p;
}

/*
 * proto_scan.c: the tree-less scanner (contract in proto_scan.h): strings,
 * keys, numbers, literals, UTF-8 sequences and the skim that finds the
 * extent of a value. Numbers and UTF-8 are read as jansson reads them, so
 * that a value reads the same from the text as from a tree
 * (tests/proto/test_proto_parse.c compares them with json_loadb()).
 */
#include "proto/proto_scan.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* 10^0 .. 10^22, each exact in a double. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Leaves out of the recursion: kept out of line so that their buffers do
 * not sit in every level's stack frame. */
#if defined(__GNUC__)
#define SCAN_NOINLINE __attribute__((noinline))
#else
#define SCAN_NOINLINE
#endif

/* The text of a real through strtod(), as jansson converts it; false when
 * it overflows. */
static SCAN_NOINLINE bool number_strtod(const unsigned char *t, size_t n, double *out)
{
    char buf[64], *s = buf;
    if (n >= sizeof buf && !(s = malloc(n + 1)))
        return false;
    memcpy(s, t, n);
    s[n] = '\0';
    char *e;
    errno = 0;
    double d = strtod(s, &e);
    bool ok = e == s + n && !((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE);
    if (s != buf)
        free(s);
    *out = d;
    return ok;
}

/* The number at *pp (before end): its value as jansson gives it, *pp past
 * it; false (and *pp unspecified) for anything the reader leaves to
 * jansson. */
static bool scan_number(const unsigned char **pp, const unsigned char *end,
                           proto_json_num *out)
{
    const unsigned char *start = *pp, *p = start;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return false;
    uint64_t m = 0;    /* the digits, while they fit */
    int digits = 0;    /* significant digits in m (leading zeros not counted) */
    bool many = false; /* more than 19 significant digits */
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9')
            return false; /* a leading zero */
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                digits++;
            } else {
                many = true;
            }
            p++;
        }
    }
    if (p == end || (*p != '.' && *p != 'e' && *p != 'E')) {
        *pp = p;
        out->is_int = true;
        if (many)
            return false; /* beyond json_int_t: jansson's "too big integer" */
        if (neg) {
            if (m > (uint64_t)INT64_MAX + 1)
                return false;
            out->i = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)m;
            return true;
        }
        if (m > (uint64_t)INT64_MAX)
            return false;
        out->i = (json_int_t)m;
        return true;
    }
    /* a real: m * 10^exp10 while the digits fit (many: strtod() anyway) */
    out->is_int = false;
    int exp10 = 0;
    if (*p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return false;
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits < 19 && !many && exp10 > -100000) {
                if (m || *p != '0')
                    digits++;
                m = m * 10 + (uint64_t)(*p - '0');
                exp10--;
            } else {
                many = true;
            }
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p >= end || *p < '0' || *p > '9')
            return false;
        int e = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (e < 100000)
                e = e * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -e : e;
    }
    *pp = p;
    if (!many) {
        double d;
        if (m == 0) {
            d = 0.0;
            out->d = neg ? -d : d;
            return true;
        }
        if (m <= (UINT64_C(1) << 53) && exp10 >= -22 && exp10 <= 22) {
            d = (double)m;
            d = exp10 < 0 ? d / pow10_exact[-exp10] : d * pow10_exact[exp10];
            out->d = neg ? -d : d;
            return true;
        }
    }
    return number_strtod(start, (size_t)(p - start), &out->d);
}

size_t proto__json_number(const char *text, size_t len, proto_json_num *out)
{
    const unsigned char *p = (const unsigned char *)text;
    if (!scan_number(&p, p + len, out))
        return 0;
    return (size_t)(p - (const unsigned char *)text);
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

/* 1 for the bytes a plain string holds: printable ASCII but '"' and '\\'. */
/* clang-format off */
const unsigned char proto__plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
/* clang-format on */

bool proto__scan_number(proto_scan *r, proto_json_num *v)
{
    proto__scan_ws(r);
    size_t k = proto__json_number(r->p, (size_t)(r->end - r->p), v);
    r->p += k;
    return k > 0;
}

bool proto__scan_bool(proto_scan *r, bool *out)
{
    proto__scan_ws(r);
    size_t left = (size_t)(r->end - r->p);
    if (left >= 4 && memcmp(r->p, "true", 4) == 0) {
        r->p += 4;
        *out = true;
        return true;
    }
    if (left >= 5 && memcmp(r->p, "false", 5) == 0) {
        r->p += 5;
        *out = false;
        return true;
    }
    return false;
}

bool proto__scan_null(proto_scan *r)
{
    proto__scan_ws(r);
    if (r->end - r->p < 4 || memcmp(r->p, "null", 4) != 0)
        return false;
    r->p += 4;
    return true;
}

bool proto__scan_numbers(proto_scan *r, double *out, size_t max, size_t *n)
{
    *n = 0;
    if (!proto__scan_char(r, '['))
        return false;
    if (proto__scan_char(r, ']'))
        return true;
    do {
        proto_json_num v;
        if (*n == max || !proto__scan_number(r, &v))
            return false;
        out[(*n)++] = v.is_int ? (double)v.i : v.d;
    } while (proto__scan_char(r, ','));
    return proto__scan_char(r, ']');
}

/* What proto__scan_skim makes of a byte outside strings: a bracket that
 * opens or closes, a quote, a comma, or one it passes over (0). It checks
 * nothing else: every text it skims is read whole afterwards (proto_scan.h),
 * which finds what is wrong in it. */
enum { SK_PASS = 0, SK_OPEN, SK_CLOSE, SK_QUOTE, SK_COMMA };
static const unsigned char sk_class[256] = {
    ['{'] = SK_OPEN, ['['] = SK_OPEN, ['}'] = SK_CLOSE, [']'] = SK_CLOSE, ['"'] = SK_QUOTE,
    [','] = SK_COMMA,
};

/* The bytes from p (inside a bracket, depth 1) to the bracket that closes
 * it, strings passed over: the commas at depth 1 counted in *commas and,
 * with marks, comma c noted in marks[c / every] when c is 1 or a multiple
 * of every (c at most most). The closing bracket, or NULL (a string or the
 * text unterminated, nesting beyond 32, more than most commas). */
static const unsigned char *skim_to_close(const unsigned char *p, const unsigned char *end,
                                          size_t *commas, const char **marks, size_t every,
                                          size_t most)
{
    int depth = 1;
    for (; p < end; p++) {
        unsigned c = sk_class[*p];
        if (!c)
            continue;
        if (c == SK_OPEN) {
            if (++depth > 32)
                return NULL;
        } else if (c == SK_CLOSE) {
            if (--depth == 0)
                return p;
        } else if (c == SK_COMMA) {
            if (depth > 1)
                continue;
            if (++*commas > most)
                return NULL;
            if (marks && (*commas == 1 || *commas % every == 0))
                marks[*commas / every] = (const char *)p;
        } else { /* a string */
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && ++p >= end)
                    return NULL;
            if (p >= end)
                return NULL;
        }
    }
    return NULL;
}

bool proto__scan_commas(proto_scan *r, const char **marks, size_t every, size_t most,
                        size_t *commas)
{
    *commas = 0;
    const unsigned char *p = skim_to_close((const unsigned char *)r->p,
                                           (const unsigned char *)r->end, commas, marks, every,
                                           most);
    if (!p)
        return false;
    r->p = (const char *)p;
    return true;
}

bool proto__scan_skim(proto_scan *r, const char **s, size_t *n, size_t *count)
{
    proto__scan_ws(r);
    const unsigned char *p = (const unsigned char *)r->p, *end = (const unsigned char *)r->end;
    const char *b = r->p;
    size_t commas = 0;
    bool array = p < end && *p == '[';
    if (p < end && *p != '{' && *p != '[') {
        /* a scalar: a string, or the bytes up to the next separator */
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && ++p >= end)
                    return false;
            if (p++ >= end)
                return false;
        } else {
            while (p < end && !sk_class[*p] && *p != ' ' && *p != ':' && *p != '\n' &&
                   *p != '\r' && *p != '\t')
                p++;
            if (p == (const unsigned char *)b)
                return false;
        }
        goto done;
    }
    if (p >= end || !(p = skim_to_close(p + 1, end, &commas, NULL, 1, SIZE_MAX)))
        return false;
    p++;
done:
    r->p = (const char *)p;
    *s = b;
    *n = (size_t)(r->p - b);
    /* an array's elements: none when only whitespace lies between its brackets */
    const char *q = b + 1;
    while (array && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
        q++;
    *count = array && *q != ']' ? commas + 1 : 0;
    return true;
}

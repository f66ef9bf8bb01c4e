/*
 * json.c: the client's JSON reader and number writer.
 *
 * The reader is a pull parser (internal.h, ikd__jr): the decoders ask for
 * the value they expect next (an object's keys, an array's elements, a
 * number) and the reader checks the grammar of RFC 8259 as it goes (a
 * value it skips is checked as well), so a truncated or malformed answer
 * is an error with its byte offset, never a crash or a half-read struct.
 * It allocates nothing but the strings it returns (into the caller's
 * arena), which is what lets a connection decode a tick of a thousand
 * answers without a malloc.
 *
 * Numbers: a literal of at most 19 significant digits whose decimal
 * exponent is within 22 and whose digits fit in 53 bits is computed as
 * digits times or over an exact power of ten, which IEEE arithmetic rounds
 * correctly (Clinger's fast path; every number ikd prints with
 * options.digits and most shortest forms take it); anything else goes to
 * strtod_l in the C locale. Both give the correctly rounded double.
 *
 * The writer prints a finite double as the shortest fixed-point text with
 * at most 22 decimals whose digits fit in 53 bits and that reads back as
 * the same double (the same argument in reverse: m / 10^k computed in IEEE
 * arithmetic equals v exactly, and strtod rounds the decimal m * 10^-k to
 * that same double), else as %.17g in the C locale, which always reads
 * back.
 */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define MAX_DEPTH 64

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static pthread_once_t locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

void *ikd__c_locale(void)
{
    pthread_once(&locale_once, make_c_locale);
    return c_locale;
}

/* ---- reader ------------------------------------------------------------- */

void ikd__jr_init(ikd__jr *r, const char *text, size_t len, ikd__arena *arena)
{
    r->start = r->p = text;
    r->end = text + len;
    r->arena = arena;
    r->depth = 0;
    r->err[0] = '\0';
}

int ikd__jr_fail(ikd__jr *r, const char *what)
{
    if (!r->err[0])
        snprintf(r->err, sizeof r->err, "%s at byte %zu", what, (size_t)(r->p - r->start));
    return -1;
}

static inline void skip_ws(ikd__jr *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

int ikd__jr_peek(ikd__jr *r)
{
    skip_ws(r);
    return r->p < r->end ? (unsigned char)*r->p : 0;
}

int ikd__jr_object(ikd__jr *r)
{
    if (ikd__jr_peek(r) != '{')
        return ikd__jr_fail(r, "an object expected");
    if (++r->depth > MAX_DEPTH)
        return ikd__jr_fail(r, "nested too deep");
    r->p++;
    return 0;
}

int ikd__jr_array(ikd__jr *r)
{
    if (ikd__jr_peek(r) != '[')
        return ikd__jr_fail(r, "an array expected");
    if (++r->depth > MAX_DEPTH)
        return ikd__jr_fail(r, "nested too deep");
    r->p++;
    return 0;
}

/* Scans a string's body from after its opening quote to its closing one;
 * *escaped tells whether a backslash occurs. The escapes are checked. */
/* The bytes that stop a run of plain string characters: '"', '\\' and
 * the control characters. */
static const unsigned char string_stop[256] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, ['\\'] = 1};

static int scan_string(ikd__jr *r, const char **s, size_t *n, bool *escaped)
{
    const char *p = r->p;
    *escaped = false;
    for (;;) {
        while (p < r->end && !string_stop[(unsigned char)*p])
            p++;
        if (p >= r->end) {
            r->p = p;
            return ikd__jr_fail(r, "an unterminated string");
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c < 0x20) {
            r->p = p;
            return ikd__jr_fail(r, "a control character in a string");
        }
        if (c == '\\') {
            *escaped = true;
            if (p + 1 >= r->end) {
                r->p = p;
                return ikd__jr_fail(r, "an unterminated escape");
            }
            char e = p[1];
            if (e == 'u') {
                if (r->end - p < 6) {
                    r->p = p;
                    return ikd__jr_fail(r, "an unterminated \\u escape");
                }
                for (int k = 2; k < 6; k++) {
                    char h = p[k];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') ||
                          (h >= 'A' && h <= 'F'))) {
                        r->p = p;
                        return ikd__jr_fail(r, "a bad \\u escape");
                    }
                }
                p += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == '\0') {
                r->p = p;
                return ikd__jr_fail(r, "a bad escape");
            }
            p += 2;
            continue;
        }
        p++;
    }
    *s = r->p;
    *n = (size_t)(p - r->p);
    r->p = p + 1;
    return 0;
}

static unsigned hex4(const char *h)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = h[k];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The unescaped copy of a scanned string body (checked by scan_string). */
static char *unescape(ikd__jr *r, const char *s, size_t n, size_t *out_n)
{
    char *o = ikd__arena_alloc(r->arena, n + 1); /* unescaping never lengthens */
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            o[k++] = s[i++];
            continue;
        }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case 'b':
            o[k++] = '\b';
            break;
        case 'f':
            o[k++] = '\f';
            break;
        case 'n':
            o[k++] = '\n';
            break;
        case 'r':
            o[k++] = '\r';
            break;
        case 't':
            o[k++] = '\t';
            break;
        case 'u': {
            unsigned cp = hex4(s + i);
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u') {
                unsigned lo = hex4(s + i + 2);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000)
                cp = 0xFFFD; /* a lone surrogate */
            k += put_utf8(o + k, cp);
            break;
        }
        default:
            o[k++] = e;
            break; /* " \ / */
        }
    }
    o[k] = '\0';
    *out_n = k;
    return o;
}

int ikd__jr_string(ikd__jr *r, const char **s, size_t *len)
{
    if (ikd__jr_peek(r) != '"')
        return ikd__jr_fail(r, "a string expected");
    r->p++;
    const char *raw;
    size_t n;
    bool escaped;
    if (scan_string(r, &raw, &n, &escaped))
        return -1;
    char *o;
    size_t on = n;
    if (escaped)
        o = unescape(r, raw, n, &on);
    else
        o = ikd__arena_strndup(r->arena, raw, n);
    if (!o)
        return ikd__jr_fail(r, "out of memory");
    *s = o;
    if (len)
        *len = on;
    return 0;
}

/* The reader remembers nothing about position within a container: the
 * state is in the text. A key or element is the first of its container
 * when the last non-blank character before it is the opening bracket. */
static bool at_first(const ikd__jr *r, char open)
{
    const char *q = r->p;
    while (q > r->start) {
        char c = q[-1];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            q--;
            continue;
        }
        return c == open;
    }
    return false;
}

int ikd__jr_key(ikd__jr *r, const char **key, size_t *len)
{
    int c = ikd__jr_peek(r);
    if (!at_first(r, '{')) {
        /* after a member: ',' then a key, or '}' */
        if (c == '}') {
            r->p++;
            r->depth--;
            return 0;
        }
        if (c != ',')
            return ikd__jr_fail(r, "',' or '}' expected");
        r->p++;
        c = ikd__jr_peek(r);
    } else if (c == '}') {
        r->p++;
        r->depth--;
        return 0;
    }
    if (c != '"')
        return ikd__jr_fail(r, "a key expected");
    r->p++;
    const char *raw;
    size_t n;
    bool escaped;
    if (scan_string(r, &raw, &n, &escaped))
        return -1;
    if (escaped) {
        /* keys ikd sends never need escapes: compare the unescaped text */
        char *o = unescape(r, raw, n, &n);
        if (!o)
            return ikd__jr_fail(r, "out of memory");
        raw = o;
    }
    if (ikd__jr_peek(r) != ':')
        return ikd__jr_fail(r, "':' expected");
    r->p++;
    *key = raw;
    *len = n;
    return 1;
}

int ikd__jr_more(ikd__jr *r)
{
    int c = ikd__jr_peek(r);
    if (at_first(r, '[')) {
        if (c == ']') {
            r->p++;
            r->depth--;
            return 0;
        }
        return 1;
    }
    if (c == ']') {
        r->p++;
        r->depth--;
        return 0;
    }
    if (c != ',')
        return ikd__jr_fail(r, "',' or ']' expected");
    r->p++;
    return 1;
}

/* strtod_l on the literal s..p (its grammar checked), in the C locale. */
static int slow_number(ikd__jr *r, const char *s, const char *p, double *v)
{
    char buf[64];
    size_t n = (size_t)(p - s);
    char *heap = NULL, *text = buf;
    if (n >= sizeof buf) {
        heap = malloc(n + 1);
        if (!heap)
            return ikd__jr_fail(r, "out of memory");
        text = heap;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    double d = strtod_l(text, NULL, (locale_t)ikd__c_locale());
    free(heap);
    if (!isfinite(d))
        return ikd__jr_fail(r, "a number that overflows a double");
    *v = d;
    return 0;
}

#define IS_DIGIT(c) ((unsigned)((c) - '0') < 10u)

/* Scans a number literal (RFC 8259 grammar) and computes it: digits into
 * an integer m (at most 19 of them, which fit), the point and the
 * exponent into a power of ten; Clinger's fast path when m < 2^53 and the
 * power is within 22, strtod_l otherwise. */
static int read_number(ikd__jr *r, double *v, long long *iv, bool *is_int)
{
    skip_ws(r);
    const char *s = r->p, *p = s, *end = r->end;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= end || !IS_DIGIT(*p))
        return ikd__jr_fail(r, "a number expected");
    uint64_t m = 0;
    const char *d0 = p;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && IS_DIGIT(*p))
            m = m * 10 + (uint64_t)(*p++ - '0');
    }
    size_t ndig = (size_t)(p - d0);
    int exp10 = 0;
    bool integral = true;
    if (p < end && *p == '.') {
        integral = false;
        const char *f0 = ++p;
        while (p < end && IS_DIGIT(*p))
            m = m * 10 + (uint64_t)(*p++ - '0');
        if (p == f0) {
            r->p = p;
            return ikd__jr_fail(r, "a digit expected after '.'");
        }
        ndig += (size_t)(p - f0);
        exp10 = -(int)(p - f0);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integral = false;
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p >= end || !IS_DIGIT(*p)) {
            r->p = p;
            return ikd__jr_fail(r, "a digit expected in an exponent");
        }
        int e = 0;
        while (p < end && IS_DIGIT(*p)) {
            if (e < 100000)
                e = e * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -e : e;
    }
    r->p = p;
    bool fits = ndig <= 19; /* m holds every digit */
    if (is_int) {
        *is_int = integral && fits && m <= (uint64_t)INT64_MAX;
        if (*is_int)
            *iv = neg ? -(long long)m : (long long)m;
    }
    if (fits && m <= (1ull << 53) && exp10 >= -22 && exp10 <= 22) {
        double d = (double)m;
        d = exp10 < 0 ? d / pow10_exact[-exp10] : d * pow10_exact[exp10];
        *v = neg ? -d : d;
        return 0;
    }
    return slow_number(r, s, p, v);
}

int ikd__jr_number(ikd__jr *r, double *v)
{
    return read_number(r, v, NULL, NULL);
}

int ikd__jr_integer(ikd__jr *r, long long *v)
{
    double d;
    bool is_int;
    const char *at = r->p;
    if (read_number(r, &d, v, &is_int))
        return -1;
    if (!is_int) {
        r->p = at;
        return ikd__jr_fail(r, "an integer expected");
    }
    return 0;
}

static int literal(ikd__jr *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return -1;
    r->p += n;
    return 0;
}

int ikd__jr_bool(ikd__jr *r, bool *v)
{
    skip_ws(r);
    if (literal(r, "true") == 0) {
        *v = true;
        return 0;
    }
    if (literal(r, "false") == 0) {
        *v = false;
        return 0;
    }
    return ikd__jr_fail(r, "true or false expected");
}

int ikd__jr_null(ikd__jr *r)
{
    skip_ws(r);
    return literal(r, "null") == 0 ? 1 : 0;
}

int ikd__jr_skip(ikd__jr *r)
{
    int c = ikd__jr_peek(r);
    if (c == '{') {
        if (ikd__jr_object(r))
            return -1;
        const char *k;
        size_t n;
        int more;
        while ((more = ikd__jr_key(r, &k, &n)) == 1)
            if (ikd__jr_skip(r))
                return -1;
        return more;
    }
    if (c == '[') {
        if (ikd__jr_array(r))
            return -1;
        int more;
        while ((more = ikd__jr_more(r)) == 1)
            if (ikd__jr_skip(r))
                return -1;
        return more;
    }
    if (c == '"') {
        r->p++;
        const char *s;
        size_t n;
        bool escaped;
        return scan_string(r, &s, &n, &escaped);
    }
    if (c == 't' || c == 'f') {
        bool b;
        return ikd__jr_bool(r, &b);
    }
    if (c == 'n') {
        if (ikd__jr_null(r) == 1)
            return 0;
        return ikd__jr_fail(r, "a value expected");
    }
    double d;
    return read_number(r, &d, NULL, NULL);
}

int ikd__jr_end(ikd__jr *r)
{
    skip_ws(r);
    return r->p == r->end;
}

int ikd__json_check(const char *text, size_t len, char open, char *why, size_t why_size)
{
    ikd__jr r;
    ikd__arena none = {0};
    ikd__jr_init(&r, text, len, &none);
    int rc = 0;
    if (ikd__jr_peek(&r) != open)
        rc = ikd__jr_fail(&r, open == '{' ? "an object expected" : "an array expected");
    else if (ikd__jr_skip(&r))
        rc = -1;
    else if (!ikd__jr_end(&r))
        rc = ikd__jr_fail(&r, "text after the value");
    ikd__arena_free(&none);
    if (rc && why)
        ikd__strlcpy(why, r.err, why_size);
    return rc;
}

/* ---- writer ------------------------------------------------------------- */

static const uint64_t pow10_u64[20] = {1ull,
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
                                       10000000000000000000ull};

/* Writes m (its nd digits) as a decimal with k of them after the point
 * ("0.00m" when k >= nd), a sign first when neg. */
static size_t put_fixed(char *out, bool neg, uint64_t m, int k)
{
    char dig[24];
    int nd = 0, n = 0;
    do {
        dig[nd++] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (neg)
        out[n++] = '-';
    if (nd <= k) {
        out[n++] = '0';
        out[n++] = '.';
        for (int z = 0; z < k - nd; z++)
            out[n++] = '0';
        while (nd)
            out[n++] = dig[--nd];
    } else {
        while (nd > k)
            out[n++] = dig[--nd];
        out[n++] = '.';
        if (k == 0)
            out[n++] = '0';
        while (nd)
            out[n++] = dig[--nd];
    }
    return (size_t)n;
}

/* a in [1e-3, 2^53): its 17 significant digits, correctly rounded (ties
 * to even), as q with *k digits after the point: exact, in 128-bit
 * integers (a = f 2^e2 with f < 2^53, and q = round(f 10^k 2^e2), where
 * f 10^k < 2^53 10^19 < 2^117). False outside that range. 17 significant
 * digits always read back as the same double. */
static bool digits17(double a, uint64_t *q_out, int *k_out)
{
    int e2;
    double fr = frexp(a, &e2); /* a = fr 2^e2, fr in [0.5, 1) */
    uint64_t f = (uint64_t)ldexp(fr, 53);
    e2 -= 53;
    if (e2 > 0 || e2 < -127)
        return false;
    int k = 16 - (int)floor(log10(a)); /* a 10^k has 17 digits before the point */
    for (int tries = 0; tries < 2; tries++) {
        if (k < 0 || k > 19)
            return false;
        __uint128_t n = (__uint128_t)f * pow10_u64[k];
        int sh = -e2;
        __uint128_t q = n >> sh;
        __uint128_t rem = n - (q << sh);
        if (sh > 0) {
            __uint128_t half = (__uint128_t)1 << (sh - 1);
            if (rem > half || (rem == half && (q & 1)))
                q++;
        }
        if (q >= (__uint128_t)100000000000000000ull) { /* 18 digits: log10 was low */
            k--;
            continue;
        }
        if (q < (__uint128_t)10000000000000000ull) { /* 16 digits: it was high */
            k++;
            continue;
        }
        *q_out = (uint64_t)q;
        *k_out = k;
        return true;
    }
    return false;
}

size_t ikd__fmt_double(char *out, double v)
{
    double a = fabs(v);
    if (a == 0) {
        size_t n = 0;
        if (signbit(v))
            out[n++] = '-';
        memcpy(out + n, "0.0", 3);
        return n + 3;
    }
    if (a < 9007199254740992.0 && a >= 1e-22) {
        /* the fewest decimals whose digits fit in 53 bits and read back */
        for (int k = 0; k <= 22; k++) {
            double sc = a * pow10_exact[k];
            if (sc >= 9007199254740992.0)
                break;
            double m = nearbyint(sc);
            if (m / pow10_exact[k] == a)
                return put_fixed(out, v < 0, (uint64_t)m, k);
        }
        /* none: 17 significant digits, trailing zeros dropped */
        uint64_t q;
        int k;
        if (digits17(a, &q, &k)) {
            while (k > 0 && q % 10 == 0) {
                q /= 10;
                k--;
            }
            return put_fixed(out, v < 0, q, k);
        }
    }
    locale_t old = uselocale((locale_t)ikd__c_locale());
    char buf[40];
    int w = snprintf(buf, sizeof buf, "%.17g", v);
    uselocale(old);
    if (w < 0 || w >= (int)sizeof buf)
        w = 0;
    memcpy(out, buf, (size_t)w);
    return (size_t)w;
}

int ikd__put_double(ikd__buf *b, double v)
{
    if (ikd__buf_reserve(b, 40))
        return -1;
    b->len += ikd__fmt_double(b->p + b->len, v);
    return 0;
}

int ikd__put_integer(ikd__buf *b, long long v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    return ikd__buf_put(b, buf, (size_t)n);
}

int ikd__put_string(ikd__buf *b, const char *s, size_t n)
{
    if (ikd__buf_reserve(b, n + 2))
        return -1;
    b->p[b->len++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            if (ikd__buf_put(b, &s[i], 1))
                return -1;
            continue;
        }
        char esc[8];
        int k;
        switch (c) {
        case '"':
            k = snprintf(esc, sizeof esc, "\\\"");
            break;
        case '\\':
            k = snprintf(esc, sizeof esc, "\\\\");
            break;
        case '\n':
            k = snprintf(esc, sizeof esc, "\\n");
            break;
        case '\r':
            k = snprintf(esc, sizeof esc, "\\r");
            break;
        case '\t':
            k = snprintf(esc, sizeof esc, "\\t");
            break;
        default:
            k = snprintf(esc, sizeof esc, "\\u%04x", c);
            break;
        }
        if (ikd__buf_put(b, esc, (size_t)k))
            return -1;
    }
    return ikd__buf_put(b, "\"", 1);
}

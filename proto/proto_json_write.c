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
 * The same writer is public as proto_jw (proto_json.h): responses are
 * written with it directly, without building a tree (proto_job_encode()),
 * and chain ids hash its canonical text written straight from the request's
 * tree (integers as reals, keys sorted by insertion into a small array). Its
 * buffer may start in the caller's storage (a stack array) and moves to the
 * heap only when it outgrows it. proto_jw_printf appends printf-formatted
 * text unescaped, for text other than JSON kept in the same kind of buffer
 * (server/metrics.c's Prometheus exposition).
 *
 * Not done here: pretty printing, ASCII-only output, NaN or infinities
 * (jansson refuses them when the tree is built, so they never arrive).
 */
#include "proto/proto_json_write.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the growing output buffer ---------------------------------------- */

void proto_jw_init(proto_jw *w, char *buf, size_t cap)
{
    w->p = buf;
    w->len = 0;
    w->cap = buf ? cap : 0;
    w->oom = false;
    w->heap = false;
}

int proto_jw_reserve(proto_jw *w, size_t n)
{
    if (w->oom)
        return -1;
    if (w->len + n + 1 <= w->cap)
        return 0;
    size_t cap = w->cap ? 2 * w->cap : 256;
    while (cap < w->len + n + 1)
        cap *= 2;
    char *p = w->heap ? realloc(w->p, cap) : malloc(cap);
    if (!p) {
        w->oom = true;
        return -1;
    }
    if (!w->heap && w->len)
        memcpy(p, w->p, w->len);
    w->p = p;
    w->cap = cap;
    w->heap = true;
    return 0;
}

void proto_jw_printf(proto_jw *w, const char *fmt, ...)
{
    if (w->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    size_t room = w->cap - w->len;
    int n = vsnprintf(room ? w->p + w->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->oom = true;
        return;
    }
    if ((size_t)n >= room) { /* did not fit with its NUL: grow, format again */
        if (proto_jw_reserve(w, (size_t)n))
            return;
        va_start(ap, fmt);
        vsnprintf(w->p + w->len, w->cap - w->len, fmt, ap);
        va_end(ap);
    }
    w->len += (size_t)n;
}

char *proto_jw_finish(proto_jw *w, size_t *len)
{
    if (w->oom || proto_jw_reserve(w, 0)) {
        proto_jw_release(w);
        return NULL;
    }
    char *p = w->p;
    if (!w->heap) {
        p = malloc(w->len + 1);
        if (!p)
            return NULL;
        memcpy(p, w->p, w->len);
    }
    p[w->len] = '\0';
    if (len)
        *len = w->len;
    w->p = NULL;
    w->len = w->cap = 0;
    w->heap = false;
    return p;
}

void proto_jw_release(proto_jw *w)
{
    if (w->heap)
        free(w->p);
    w->p = NULL;
    w->len = w->cap = 0;
    w->heap = false;
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

/* 5^n for n <= 27 (5^27 < 2^64). */
static const uint64_t pow5_u64[28] = {
    1ull,
    5ull,
    25ull,
    125ull,
    625ull,
    3125ull,
    15625ull,
    78125ull,
    390625ull,
    1953125ull,
    9765625ull,
    48828125ull,
    244140625ull,
    1220703125ull,
    6103515625ull,
    30517578125ull,
    152587890625ull,
    762939453125ull,
    3814697265625ull,
    19073486328125ull,
    95367431640625ull,
    476837158203125ull,
    2384185791015625ull,
    11920928955078125ull,
    59604644775390625ull,
    298023223876953125ull,
    1490116119384765625ull,
    7450580596923828125ull,
};

/* round(m * 2^e * 10^k) to nearest, ties to even, exactly, for m < 2^53
 * and 0 <= k <= 22: m * 5^k < 2^53 * 2^52 fits 128 bits, and the factor
 * 2^(e + k) is a shift. *dir tells where the exact value lies: 0 on the
 * result, 1 above it, -1 below it. */
static uint64_t scaled_round(uint64_t m, int e, int k, int *dir)
{
    u128 x = (u128)m * pow5_u64[k];
    int sh = e + k;
    *dir = 0;
    if (sh >= 0)
        return sh >= 64 ? 0 : (uint64_t)(x << sh);
    sh = -sh;
    if (sh >= 127)
        return 0;
    u128 q = x >> sh;
    u128 rem = x - (q << sh);
    u128 half = (u128)1 << (sh - 1);
    if (rem != 0)
        *dir = 1; /* the exact value lies above q */
    if (rem > half || (rem == half && (q & 1u))) {
        q++;
        *dir = -1; /* ... and below q + 1 */
    }
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

/* The 17 significant digits of a (1e-4 <= a < 1e16), correctly rounded,
 * as an integer in [10^16, 10^17) with *x10 = floor(log10(a)) (of the
 * rounded value), by exact integer arithmetic; 0 when that fails (not
 * expected in this range). *dir: where a lies against the digits (0 on
 * them exactly, 1 above, -1 below). */
static uint64_t digits17(double a, int *x10_out, int *dir)
{
    /* a = m * 2^e with m < 2^53 (a is normal in this range): the bits
     * themselves, as frexp() would give them (a = fr * 2^e2, fr in [0.5,
     * 1), m = fr * 2^53) */
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int e2 = (int)(bits >> 52) - 1022;
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int e = e2 - 53;
    /* x10 = floor(log10(a)): log10(2) * (e2 - 1) rounded down is at most one
     * below it (an arithmetic shift rounds negatives down too); the loop
     * settles it (and a rounding that carries to 18 digits) by looking at
     * the digit count. */
    int x10 = ((e2 - 1) * 78913) >> 18; /* 78913 / 2^18 just below log10(2) */
    uint64_t d = 0;
    for (int tries = 0; tries < 4; tries++) {
        int k = 16 - x10;
        if (k < 0 || k > 22)
            break;
        d = scaled_round(m, e, k, dir);
        if (d >= pow10_u64[17])
            x10++;
        else if (d < pow10_u64[16])
            x10--;
        else
            break;
        d = 0;
    }
    *x10_out = x10;
    return d;
}

/* The decimal digits of d (nd of them, no more than 17) into dig, without
 * trailing zeros; returns their count. */
static int digits_of(uint64_t d, int nd, char dig[18])
{
    for (int i = nd - 1; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10u);
        d /= 10u;
    }
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    return nd;
}

/* a, nd significant digits dig[] (first digit worth 10^x10), laid out as
 * %.17g lays it out (fixed for -4 <= x10 < 17, else d.ddde-X) with
 * jansson's touch-ups: ".0" on integral values, no '+' and no leading
 * zeros in the exponent. Returns the length; buf is NUL-terminated. */
static int layout(bool neg, const char *dig, int nd, int x10, char *buf)
{
    int o = 0;
    if (neg)
        buf[o++] = '-';
    if (x10 >= 17 || x10 < -4) {
        buf[o++] = dig[0];
        if (nd > 1) {
            buf[o++] = '.';
            for (int i = 1; i < nd; i++)
                buf[o++] = dig[i];
        }
        /* "e" and the exponent, without '+' or leading zeros */
        buf[o++] = 'e';
        unsigned ex = (unsigned)(x10 < 0 ? -x10 : x10);
        if (x10 < 0)
            buf[o++] = '-';
        char t[4];
        int nt = 0;
        do {
            t[nt++] = (char)('0' + ex % 10);
            ex /= 10;
        } while (ex);
        while (nt)
            buf[o++] = t[--nt];
    } else if (x10 >= 0) {
        for (int i = 0; i <= x10; i++)
            buf[o++] = i < nd ? dig[i] : '0';
        buf[o++] = '.';
        if (nd > x10 + 1)
            for (int i = x10 + 1; i < nd; i++)
                buf[o++] = dig[i];
        else
            buf[o++] = '0';
    } else {
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

/* 10^n as a double, exact for n <= 22. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Whether the decimal D * 10^s reads back as a. When D < 2^53 and |s| <=
 * 22 both D and 10^|s| are exact doubles and one IEEE multiplication or
 * division rounds their exact product or quotient correctly, which is what
 * strtod gives (Clinger's fast path); otherwise strtod itself decides. */
static bool reads_back(uint64_t D, int s, double a)
{
    if (D < (1ull << 53) && s >= -22 && s <= 22)
        return (s >= 0 ? (double)D * pow10_exact[s] : (double)D / pow10_exact[-s]) == a;
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%llue%d", (unsigned long long)D, s);
    return strtod(tmp, NULL) == a;
}

/* D / 10^k rounded to nearest (halves up; the caller checks the result). */
static uint64_t div_round(uint64_t D, int k)
{
    uint64_t p = pow10_u64[k];
    return (D + p / 2) / p;
}

/* Shortest digits of a > 0 given its 17 correctly rounded digits d17
 * (first worth 10^x10): the fewest digits that read back as a, the nearest
 * to a among those. A decimal of 15 digits or fewer that reads back lies
 * within 2^-53 relative of a, far less than half a step of 15 digits
 * (10^-15 relative at least), so it is d17 rounded to 15 digits with its
 * trailing zeros dropped: one candidate. A 16-digit step can be finer than
 * the interval of reals that read back as a, so the 16-digit rounding and
 * its neighbours up to two steps away are tried, nearest first. Otherwise
 * the 17 digits, which always read back. */
static int shortest_from17(double a, uint64_t d17, int *x10, char dig[18])
{
    uint64_t d15 = div_round(d17, 2);
    if (d15 < pow10_u64[15] && reads_back(d15, *x10 - 14, a))
        return digits_of(d15, 15, dig);
    if (d15 == pow10_u64[15] && reads_back(1, *x10 + 1, a)) { /* 99..9|5 carried */
        (*x10)++;
        return digits_of(1, 1, dig);
    }
    uint64_t d16 = div_round(d17, 1);
    int64_t side = (int64_t)(d17 - d16 * 10u) >= 0 ? 1 : -1;
    if (d17 % 10u == 5u) {
        /* rounding the rounded 17 digits can go the wrong way: ask the C
         * library for the correctly rounded 16 */
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.15e", a);
        uint64_t D = (uint64_t)(tmp[0] - '0');
        for (int i = 2; i <= 16; i++)
            D = D * 10u + (uint64_t)(tmp[i] - '0');
        if (D >= pow10_u64[15] && D < pow10_u64[16] && D != d16) {
            side = d16 > D ? 1 : -1; /* a lies between D and the old d16 */
            d16 = D;
        }
    }
    /* which side of the 16-digit rounding a lies on: that neighbour first */
    static const int order[5] = {0, 1, -1, 2, -2};
    for (int i = 0; i < 5; i++) {
        uint64_t c = d16 + (uint64_t)(order[i] * side);
        if (c >= pow10_u64[15] && c < pow10_u64[16] && reads_back(c, *x10 - 15, a))
            return digits_of(c, 16, dig);
    }
    return digits_of(d17, 17, dig);
}

/* The same outside the exact range: the digits %.*e gives at 15, 16 and 17
 * significant digits (each correctly rounded by the C library), the first
 * that reads back; at 16 its neighbours are tried as above. A subnormal's
 * interval of reals that read back is wider than 2^-53 relative (5e-324
 * reads back from "5e-324" and from 15-digit strings alike), so for them
 * every count from 1 digit up is tried. */
static int shortest_libc(double a, int *x10, char dig[18])
{
    char tmp[40];
    for (int p = a < DBL_MIN ? 1 : 15; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, a);
        uint64_t D = (uint64_t)(tmp[0] - '0');
        for (int i = 2; i <= p; i++)
            D = D * 10u + (uint64_t)(tmp[i] - '0');
        int e = atoi(tmp + (p > 1 ? p + 2 : 2)); /* after "d.ddd" (or "d") and 'e' */
        if (p == 17 || reads_back(D, e - (p - 1), a)) {
            *x10 = e;
            return digits_of(D, p, dig);
        }
        if (p == 16) {
            static const int order[4] = {1, -1, 2, -2};
            for (int i = 0; i < 4; i++) {
                uint64_t c = D + (uint64_t)(int64_t)order[i];
                if (c >= pow10_u64[15] && c < pow10_u64[16] && reads_back(c, e - 15, a)) {
                    *x10 = e;
                    return digits_of(c, 16, dig);
                }
            }
        }
    }
    return 0; /* not reached: 17 digits always read back */
}

int proto_json_format_shortest(double v, char buf[PROTO_DOUBLE_MAX])
{
    if (v == 0.0) {
        int n = signbit(v) ? 4 : 3;
        memcpy(buf, signbit(v) ? "-0.0" : "0.0", (size_t)n + 1);
        return n;
    }
    double a = fabs(v);
    char dig[18];
    int x10 = 0, nd = 0;
    int dir;
    uint64_t d17 = a >= 1e-4 && a < 1e16 ? digits17(a, &x10, &dir) : 0;
    if (d17)
        nd = shortest_from17(a, d17, &x10, dig);
    else
        nd = shortest_libc(a, &x10, dig);
    return layout(v < 0, dig, nd, x10, buf);
}

/* The nd (1..17) significant digits of a > 0, correctly rounded (exact
 * halves to even, as the C library's printf rounds), as an integer of nd
 * digits with *x10 the power of ten of its first. From the 17 correctly
 * rounded digits when a is in the exact range: dropping digits rounds
 * them again, which can only go wrong when the dropped tail is exactly
 * half a step, and then the side a lies on (known exactly) decides.
 * Elsewhere the C library's %.*e, which is correctly rounded. */
/* The nd (1..17) significant digits of a (DBL_MIN <= a < 1e-4), correctly
 * rounded, as digits17() finds 17: a = m * 2^e exactly, and m * 2^e *
 * 10^k rounded to an integer (halves to even) by exact integer arithmetic
 * while 5^k fits 64 bits (k <= 27, so down to about 10^(nd - 28)); 0 out
 * of that range. */
static uint64_t digits_small(double a, int nd, int *x10_out)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int e2 = (int)(bits >> 52) - 1022;
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int e = e2 - 53;
    int x10 = ((e2 - 1) * 78913) >> 18;
    for (int tries = 0; tries < 4; tries++) {
        int k = nd - 1 - x10, dir;
        if (k < 0 || k > 27)
            return 0;
        uint64_t d = scaled_round(m, e, k, &dir);
        if (d >= pow10_u64[nd])
            x10++;
        else if (d < pow10_u64[nd - 1])
            x10--;
        else {
            *x10_out = x10;
            return d;
        }
    }
    return 0;
}

static uint64_t round_digits(double a, int nd, int *x10)
{
    int dir = 0;
    if (a < 1e-4 && a >= DBL_MIN) {
        uint64_t d = digits_small(a, nd, x10);
        if (d)
            return d;
    }
    uint64_t d17 = a >= 1e-4 && a < 1e16 ? digits17(a, x10, &dir) : 0;
    if (!d17) {
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.*e", nd - 1, a);
        uint64_t D = (uint64_t)(tmp[0] - '0');
        for (int i = 2; i <= nd; i++)
            D = D * 10u + (uint64_t)(tmp[i] - '0');
        *x10 = atoi(tmp + (nd > 1 ? nd + 2 : 2));
        return D;
    }
    if (nd >= 17)
        return d17;
    uint64_t p = pow10_u64[17 - nd], q = d17 / p, r = d17 % p, half = p / 2;
    if (r > half || (r == half && (dir > 0 || (dir == 0 && (q & 1u)))))
        q++;
    if (q == pow10_u64[nd]) { /* 99..9 carried into one more digit */
        q = pow10_u64[nd - 1];
        (*x10)++;
    }
    return q;
}

int proto_json_format_digits(double v, int digits, char buf[PROTO_DOUBLE_MAX])
{
    if (digits < 1 || digits > 17)
        return proto_json_format_shortest(v, buf);
    if (v == 0.0) {
        int n = signbit(v) ? 4 : 3;
        memcpy(buf, signbit(v) ? "-0.0" : "0.0", (size_t)n + 1);
        return n;
    }
    int x10;
    char dig[18];
    uint64_t d = round_digits(fabs(v), digits, &x10);
    int nd = digits_of(d, digits, dig);
    return layout(v < 0, dig, nd, x10, buf);
}

double proto_json_round_digits(double v, int digits)
{
    if (digits < 1 || digits > 17 || v == 0.0 || !isfinite(v))
        return v;
    char buf[PROTO_DOUBLE_MAX];
    proto_json_format_digits(v, digits, buf);
    return strtod(buf, NULL);
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
    int x10, dir;
    uint64_t d = digits17(a, &x10, &dir);
    if (d == 0) /* not expected in this range; the C library is exact */
        return format_libc(v, buf);
    char dig[18];
    {
        /* two digits per step: 17 digits as 1 + 8 pairs */
        static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                       "25262728293031323334353637383940414243444546474849"
                                       "50515253545556575859606162636465666768697071727374"
                                       "75767778798081828384858687888990919293949596979899";
        uint64_t hi = d / 100000000u;
        uint32_t lo = (uint32_t)(d - hi * 100000000u);
        uint32_t h8 = (uint32_t)(hi % 100000000u);
        dig[0] = (char)('0' + hi / 100000000u);
        for (int i = 7; i >= 1; i -= 2) {
            memcpy(dig + i, pairs + 2 * (h8 % 100u), 2);
            h8 /= 100u;
            memcpy(dig + 8 + i, pairs + 2 * (lo % 100u), 2);
            lo /= 100u;
        }
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

void proto_jw_string(proto_jw *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF"; /* as jansson writes \u001E */
    /* the usual case (nothing to escape) in one copy */
    if (b->len + n + 3 > b->cap && proto_jw_reserve(b, n + 2))
        return;
    proto_jw_raw(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        proto_jw_raw(b, s + run, i - run);
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
        proto_jw_raw(b, esc, el);
    }
    proto_jw_raw(b, s + run, n - run);
    proto_jw_raw(b, "\"", 1);
}

void proto_jw_integer(proto_jw *b, json_int_t v)
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
    proto_jw_raw(b, tmp + o, sizeof tmp - (size_t)o);
}

void proto_jw_double(proto_jw *b, double v)
{
    if (b->len + PROTO_DOUBLE_MAX + 1 > b->cap && proto_jw_reserve(b, PROTO_DOUBLE_MAX))
        return;
    b->len += (size_t)proto_json_format_shortest(v, b->p + b->len);
}

void proto_jw_double_digits(proto_jw *b, double v, int digits)
{
    if (b->len + PROTO_DOUBLE_MAX + 1 > b->cap && proto_jw_reserve(b, PROTO_DOUBLE_MAX))
        return;
    b->len += (size_t)proto_json_format_digits(v, digits, b->p + b->len);
}

/* The 17-digit form, for the canonical text chain ids hash (ids stay what
 * they were before answers got the shortest form). */
static void put_double17(proto_jw *b, double v)
{
    if (b->len + PROTO_DOUBLE_MAX + 1 > b->cap && proto_jw_reserve(b, PROTO_DOUBLE_MAX))
        return;
    b->len += (size_t)proto_json_format_double(v, b->p + b->len);
}

/* Modes of the tree writer. */
enum { W_SORT = 1, W_INT_AS_REAL = 2 };

static void put_value(proto_jw *b, const json_t *v, int mode, int depth);

static void put_member(proto_jw *b, const char *key, const json_t *val, int mode, int depth)
{
    proto_jw_string(b, key, strlen(key));
    proto_jw_raw(b, ":", 1);
    put_value(b, val, mode, depth + 1);
}

static void put_object(proto_jw *b, const json_t *v, int mode, int depth)
{
    proto_jw_raw(b, "{", 1);
    size_t n = json_object_size(v);
    const char *key;
    json_t *val;
    if (!(mode & W_SORT) || n < 2) {
        bool first = true;
        json_object_foreach((json_t *)v, key, val)
        {
            if (!first)
                proto_jw_raw(b, ",", 1);
            first = false;
            put_member(b, key, val, mode, depth);
        }
    } else {
        /* keys sorted as strcmp sorts them (JSON_SORT_KEYS); small objects
         * (every chain object) by insertion into a stack array */
        struct kv {
            const char *k;
            json_t *v;
        } small[16], *kv = small;
        if (n > sizeof small / sizeof small[0]) {
            kv = malloc(n * sizeof *kv);
            if (!kv) {
                b->oom = true;
                return;
            }
        }
        size_t k = 0;
        json_object_foreach((json_t *)v, key, val)
        {
            if (k == n)
                break;
            size_t i = k++;
            while (i > 0 && strcmp(kv[i - 1].k, key) > 0) {
                kv[i] = kv[i - 1];
                i--;
            }
            kv[i].k = key;
            kv[i].v = val;
        }
        for (size_t i = 0; i < k; i++) {
            if (i)
                proto_jw_raw(b, ",", 1);
            put_member(b, kv[i].k, kv[i].v, mode, depth);
        }
        if (kv != small)
            free(kv);
    }
    proto_jw_raw(b, "}", 1);
}

static void put_value(proto_jw *b, const json_t *v, int mode, int depth)
{
    if (depth > 2048) { /* jansson's own parser stops far earlier */
        b->oom = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(b, v, mode, depth);
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        proto_jw_raw(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                proto_jw_raw(b, ",", 1);
            put_value(b, json_array_get(v, i), mode, depth + 1);
        }
        proto_jw_raw(b, "]", 1);
        break;
    }
    case JSON_STRING:
        proto_jw_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        if (mode & W_INT_AS_REAL)
            put_double17(b, (double)json_integer_value(v));
        else
            proto_jw_integer(b, json_integer_value(v));
        break;
    case JSON_REAL:
        if (mode & W_INT_AS_REAL)
            put_double17(b, json_real_value(v));
        else
            proto_jw_double(b, json_real_value(v));
        break;
    case JSON_TRUE:
        proto_jw_raw(b, "true", 4);
        break;
    case JSON_FALSE:
        proto_jw_raw(b, "false", 5);
        break;
    case JSON_NULL:
        proto_jw_raw(b, "null", 4);
        break;
    }
}

void proto_jw_value(proto_jw *w, const json_t *v, bool canonical)
{
    put_value(w, v, canonical ? W_SORT : 0, 0);
}

void proto_jw_canonical_reals(proto_jw *w, const json_t *v)
{
    put_value(w, v, W_SORT | W_INT_AS_REAL, 0);
}

char *proto_json_dump(const json_t *v, bool canonical)
{
    if (!v)
        return NULL;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_jw_value(&w, v, canonical);
    return proto_jw_finish(&w, NULL);
}

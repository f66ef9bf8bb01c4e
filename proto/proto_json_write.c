/*
 * proto_json_write.c: the JSON writer of answers and of the trees ikd
 * prints (contract in proto_json_write.h).
 *
 * Why not json_dumps(): jansson prints every real with snprintf("%.17g"),
 * which is slow (its multi-precision path was once about a third of the
 * daemon's time answering a two-bone solve) and writes 0.3 as
 * 0.29999999999999999. Answers print each real in its shortest form
 * instead (the fewest digits that read back), computed by the Schubfach
 * method with exact integer arithmetic over every finite double (section
 * "the shortest digits" below), or correctly rounded to options.digits;
 * everything else is jansson's text (JSON_COMPACT): ".0" on integral reals,
 * exponents without '+' or leading zeros, strings escaped as jansson
 * escapes them. The canonical text chain and scene ids hash (jansson's
 * 17-digit json_dumps() text, keys sorted) is written by proto/proto_id.c
 * with this file's strings and its 17-digit options.digits form.
 *
 * Both number forms end in one text writer (section "the text of a
 * number"): 17 digits made eight at a time by arithmetic on 64-bit words
 * (proto/proto_digits.h), stored straight into the output where the layout
 * puts them, with no scratch copy. It stores a few bytes past the text
 * (at most NUMBER_STORES in all), which PROTO_DOUBLE_MAX and the writer's
 * reservation cover.
 *
 * The writer is public as proto_jw (proto_json_write.h): responses are
 * written with it directly, without building a tree (proto_job_encode()),
 * and the few trees ikd prints (chain and scene descriptions, a value
 * quoted in an error) go through proto_json_dump(), the same text with
 * reals in the shortest form. Its buffer may start in the caller's storage
 * (a stack array) and moves to the heap only when it outgrows it.
 * proto_jw_printf appends printf-formatted text unescaped, for text other
 * than JSON kept in the same kind of buffer (server/metrics.c's Prometheus
 * exposition).
 *
 * Not done here: pretty printing, sorted keys, ASCII-only output, NaN or
 * infinities (jansson refuses them when the tree is built, so they never
 * arrive).
 */
#include "proto/proto_json_write.h"
#include "proto/proto_digits.h"

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
 * 2^(e + k) is a shift. */
static uint64_t scaled_round(uint64_t m, int e, int k)
{
    u128 x = (u128)m * pow5_u64[k];
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

/* The same for the small magnitudes, where 5^k outgrows 64 bits: m * 5^k
 * exactly in 64-bit limbs (k <= 350: at most 14 of them), then shifted
 * right by -(e + k) > 0 with the bits shifted out deciding the rounding.
 * The result has at most 17 digits, so it fits one limb. */
static uint64_t scaled_round_big(uint64_t m, int e, int k)
{
    uint64_t x[16] = {m};
    size_t n = 1;
    for (int left = k; left > 0;) {
        int step = left > 27 ? 27 : left;
        u128 carry = 0;
        for (size_t i = 0; i < n; i++) {
            u128 t = (u128)x[i] * pow5_u64[step] + carry;
            x[i] = (uint64_t)t;
            carry = t >> 64;
        }
        if (carry && n < 16)
            x[n++] = (uint64_t)carry;
        left -= step;
    }
    int sh = -(e + k);
    if (sh <= 0 || sh > 64 * (int)n + 1)
        return 0; /* not in this function's range: the caller checks */
    /* q = x >> sh (below 10^18 < 2^64: the caller's power of ten is at
     * most one too large), and where the bits below lie against half of
     * 2^sh */
    size_t w = (size_t)sh / 64;
    int b = sh % 64;
    uint64_t q = w < n ? x[w] >> b : 0;
    if (b && w + 1 < n)
        q |= x[w + 1] << (64 - b);
    /* the half bit (bit sh - 1) and anything below it */
    size_t hw = (size_t)(sh - 1) / 64;
    int hb = (sh - 1) % 64;
    bool half = hw < n && (x[hw] >> hb) & 1u;
    bool below = hw < n && (x[hw] & ((1ull << hb) - 1)) != 0;
    for (size_t i = 0; i < hw && !below; i++)
        below = x[i] != 0;
    if (half && (below || (q & 1u)))
        q++;
    return q;
}

/* round(m * 2^e * 10^k) as scaled_round (0 <= k <= 22) or
 * scaled_round_big (up to 350) computes it; 0 when neither applies. */
static uint64_t scaled(uint64_t m, int e, int k)
{
    return k < 0 || k > 350 ? 0 : k <= 22 ? scaled_round(m, e, k) : scaled_round_big(m, e, k);
}

/* a (0 < a, finite) = m * 2^e with m < 2^53: the bits themselves (a
 * subnormal has no hidden bit and the smallest exponent). Returns
 * floor(log10(a)) or one below it: log10(2) * (the leading bit's
 * exponent) rounded down (an arithmetic shift rounds negatives down too);
 * the callers settle it by the digit count of what they compute. */
static int split_double(double a, uint64_t *m_out, int *e_out)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int be = (int)(bits >> 52);
    uint64_t m = bits & ((1ull << 52) - 1);
    int e;
    if (be == 0) {
        e = -1074;
    } else {
        m |= 1ull << 52;
        e = be - 1075;
    }
    *m_out = m;
    *e_out = e;
    int lead = e + 63 - __builtin_clzll(m);
    return (lead * 78913) >> 18; /* 78913 / 2^18 just below log10(2) */
}

/* The shortest writer and its text are inlined whole into each caller:
 * one function entry per number instead of four, and the position of the
 * point known where it is constant. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- the text of a number ------------------------------------------------
 *
 * Every writer below ends the same way: 17 digits D (10^16 <= D < 10^17;
 * fewer significant ones padded with zeros, which multiplying by a power of
 * ten does) and the power of ten x10 of the first, laid out as %.17g lays
 * its digits out, with jansson's touch-ups. The text goes straight to its
 * place in the output, by whole 8-byte stores: the significant digits are
 * counted off the stored words (trailing zeros are their high zero bytes)
 * rather than by dividing, and the layout only decides where the digits go
 * and where the text ends.
 */

/* Bytes the writers below may store at their output, counting those past
 * the end of the text: 24 ('-', "0.000" and 17 digits; or '-', 17 digits,
 * a point and "e-308"), below the 32 of PROTO_DOUBLE_MAX, which also
 * leaves room for a NUL. */
#define NUMBER_STORES 24
_Static_assert(NUMBER_STORES < PROTO_DOUBLE_MAX, "a number's stores fit PROTO_DOUBLE_MAX");

/* Eight characters packed as proto__digits8() packs digits, with a '.'
 * inserted after the first n (0..7): the last falls out. */
static inline uint64_t with_point(uint64_t w, int n)
{
    uint64_t low = (1ull << (8 * n)) - 1;
    return (w & low) | ((uint64_t)'.' << (8 * n)) | ((w & ~low) << 8);
}

/* The 17 digits of D (10^16 <= D < 10^17) at o, with a '.' after the first
 * point of them when point is 1..16, or after all 17 followed by '0' when
 * point is 17 (0: no point): stores o[0..17), o[0..18) with a point, and
 * o[0..19) for 17. Returns the significant digits (1..17: the 17 less
 * their trailing zeros). */
ALWAYS_INLINE int put_digits17(char *o, uint64_t D, int point)
{
    const uint64_t zeros = 0x3030303030303030ull;
    uint64_t hi = D / 100000000u; /* the first 9 digits, < 10^9 < 2^32 */
    uint32_t first = (uint32_t)hi / 100000000u;
    uint64_t a = proto__digits8((uint32_t)hi - first * 100000000u);
    uint64_t b = proto__digits8((uint32_t)(D - hi * 100000000u));
    /* significant digits: the trailing zeros are the high zero bytes of
     * the last word that has a digit other than zero */
    int nd = 1;
    if (b)
        nd = 17 - (int)((unsigned)__builtin_clzll(b) >> 3);
    else if (a)
        nd = 9 - (int)((unsigned)__builtin_clzll(a) >> 3);
    a += zeros;
    b += zeros;
    o[0] = (char)('0' + first);
    if (point >= 1 && point <= 8) {
        proto__store8(o + 1, with_point(a, point - 1));
        o[9] = (char)(a >> 56);
        proto__store8(o + 10, b);
        return nd;
    }
    proto__store8(o + 1, a);
    if (point >= 9 && point <= 16) {
        proto__store8(o + 9, with_point(b, point - 9));
        o[17] = (char)(b >> 56);
    } else {
        proto__store8(o + 9, b);
        if (point == 17)
            memcpy(o + 17, ".0", 2);
    }
    return nd;
}

/* "e" and x10 (at most 3 digits), '-' when negative, no '+' and no leading
 * zeros (jansson's touch-ups of %g); returns the length. */
static inline int put_exponent(char *o, int x10)
{
    int n = 0;
    o[n++] = 'e';
    if (x10 < 0)
        o[n++] = '-';
    unsigned ex = (unsigned)(x10 < 0 ? -x10 : x10); /* at most 324 */
    if (ex >= 100)
        o[n++] = (char)('0' + ex / 100);
    if (ex >= 10)
        o[n++] = (char)('0' + ex / 10 % 10);
    o[n++] = (char)('0' + ex % 10);
    return n;
}

/* The 17 digits D, the first worth 10^x10, laid out at out: fixed for
 * -4 <= x10 < 17 (".0" on integral values, the digits D pads with zeros
 * being the integer's own), else d.ddde-X; '-' first when neg. Stores at
 * most NUMBER_STORES bytes; returns the length (no NUL). */
ALWAYS_INLINE int put_decimal(char *out, bool neg, uint64_t D, int x10)
{
    out[0] = '-'; /* overwritten when not negative */
    char *o = out + neg;
    int n;
    if (x10 >= 0 && x10 < 17) { /* ddd.ddd, or ddd.0 where nd <= x10 + 1 */
        int nd = put_digits17(o, D, x10 + 1);
        n = nd > x10 + 1 ? nd + 1 : x10 + 3;
    } else if (x10 < 0 && x10 >= -4) { /* 0.ddd, 0.000ddd */
        memcpy(o, "0.000000", 8);
        n = 1 - x10 + put_digits17(o + 1 - x10, D, 0);
    } else { /* d.ddde-X, or de-X for one digit ('e' over the point) */
        int nd = put_digits17(o, D, 1);
        n = nd > 1 ? nd + 1 : 1;
        n += put_exponent(o + n, x10);
    }
    return neg + n;
}

/* 0.0 and -0.0 (no NUL). */
static inline int put_zero(char *out, bool neg)
{
    out[0] = '-';
    memcpy(out + neg, "0.0", 3);
    return neg + 3;
}

/* ---- the shortest digits: Schubfach -------------------------------------
 *
 * The fewest significant digits that read back as v, the nearest to v when
 * several do (the even one of two equally near), by exact integer
 * arithmetic after R. Giulietti, "The Schubfach way to render doubles"
 * (2020). v = c * 2^q with an integer c. The reals that read back as v are
 * those strictly within half a step of it on either side (the step below
 * is half as wide when c is a power of two and q is not the smallest),
 * the two bounds included when c is even (round half to even reads them
 * as v). With k such that 10^k <= 2^q < 10^(k+1), the interval is less
 * than ten units of 10^k wide, so it holds at most one multiple of
 * 10^(k+1): when exactly one of the two multiples around v is in it, that
 * one is the answer (one digit fewer than the units; trailing zeros drop
 * further); else the unit below or above v (the one inside, or the nearer
 * when both are). Everything is compared in quarter units: v, the bounds
 * (4c and 4c +- 2, or 4c - 1 below a power of two) times 10^-k, each
 * computed as a 64-bit integer rounded to odd (the low bit set when
 * anything was cut off) from a 126-bit over-approximation of 10^-k
 * (proto/proto_pow10.h, generated by proto/gen_pow10.py); rounding to odd
 * keeps every comparison with a multiple of four exact, which is what the
 * paper proves for this choice of k and scale.
 */

#include "proto/proto_pow10.h"

/* floor(q log10 2), floor(log10(3/4 2^q)) and floor(e log2 10) by integer
 * arithmetic, exact for |q| <= 1200 and |e| <= 400 (checked against exact
 * rational arithmetic when these constants were chosen, and again by
 * test_proto_json over every exponent a double has). */
static inline int flog10_pow2(int q)
{
    return (q * 315653) >> 20;
}

static inline int flog10_three_quarters_pow2(int q)
{
    return (q * 315653 - 131237) >> 20;
}

static inline int flog2_pow10(int e)
{
    return (e * 1741647) >> 19;
}

/* floor(g * cp / 2^127), its low bit set when the bits of g * cp between
 * 2^64 and 2^127 are not all zero (round to odd); g = {high, low} <=
 * 2^126, so the result is < 2^63. The lowest 64 bits of the product are
 * left out on purpose: g exceeds 10^-k scaled by less than one, which adds
 * less than cp < 2^64 to the product, so an exact value (a bound of v on a
 * decimal) keeps its low bit clear. */
static inline uint64_t round_to_odd(const uint64_t g[2], uint64_t cp)
{
    u128 lo = (u128)g[1] * cp;
    u128 mid = (u128)g[0] * cp + (lo >> 64); /* floor(g * cp / 2^64) */
    uint64_t r = (uint64_t)(mid >> 63);
    bool cut = ((uint64_t)mid & ((1ull << 63) - 1)) != 0;
    return r | (uint64_t)cut;
}

/* The shortest digits of c * 2^q (c > 0) as an integer *d times 10^*k,
 * with trailing zeros (the text's writer counts them off its digits). *d
 * < 10^17: it is c * 2^q / 10^k rounded to a unit or to ten, and 2^q /
 * 10^k < 10 (10^k <= 2^q < 10^(k+1)) with c < 2^53, so *d <= 10 * 2^53 + 10
 * < 9.1e16; below a power of two 2^q / 10^k < 40 / 3 but c = 2^52, and *d
 * < 6.1e16. */
ALWAYS_INLINE void schubfach(uint64_t c, int q, uint64_t *d, int *k_out)
{
    uint64_t out = c & 1u; /* odd: the bounds read back as the neighbours */
    uint64_t cb = c << 2, cbr = cb + 2, cbl;
    int k;
    if (c != (1ull << 52) || q == -1074) {
        cbl = cb - 2;
        k = flog10_pow2(q);
    } else { /* the step below a power of two is half as wide */
        cbl = cb - 1;
        k = flog10_three_quarters_pow2(q);
    }
    int h = q + flog2_pow10(-k) + 2;
    const uint64_t *g = proto_pow10_g[k - PROTO_POW10_KMIN];
    uint64_t vb = round_to_odd(g, cb << h);
    uint64_t vbl = round_to_odd(g, cbl << h);
    uint64_t vbr = round_to_odd(g, cbr << h);
    /* Every candidate is weighed before one is chosen: fewer jumps that go
     * one way or the other at random from one number to the next (on
     * random answer-like numbers a tenth faster than deciding step by
     * step, for a few more instructions). */
    uint64_t s = vb >> 2, t = s + 1;
    /* one digit fewer: the multiple of ten below or above, when exactly one
     * is inside (there is none below ten) */
    uint64_t sp10 = s / 10u * 10u, tp10 = sp10 + 10u;
    unsigned upin = vbl + out <= sp10 << 2;
    unsigned wpin = (tp10 << 2) + out <= vbr;
    /* else the unit below or above: the one inside, or (both, or, not
     * expected, neither) the nearer, the even one on a tie; vb is v in
     * quarter units, so v lies vb & 3 quarters past s, and their midpoint
     * two */
    unsigned uin = vbl + out <= s << 2;
    unsigned win = (t << 2) + out <= vbr;
    unsigned near = (vb & 3u) + (s & 1u) < 3u;
    unsigned below = win ? uin & near : uin | near;
    uint64_t r = (s >= 10) & (upin ^ wpin) ? tp10 - 10u * upin : t - below;
    *d = r;
    *k_out = k;
}

/* v (finite) in its shortest form at out (no NUL); stores at most
 * NUMBER_STORES bytes. */
ALWAYS_INLINE int put_shortest(char *out, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bool neg = bits >> 63;
    int be = (int)((bits >> 52) & 0x7ffu);
    uint64_t c = bits & ((1ull << 52) - 1);
    int q;
    if (be == 0) {
        if (c == 0)
            return put_zero(out, neg);
        q = -1074; /* subnormal */
    } else {
        c |= 1ull << 52;
        q = be - 1075;
    }
    uint64_t d;
    int k;
    schubfach(c, q, &d, &k);
    /* digits of d: from its bit length (log10 2 ~ 1233 / 4096), then one
     * comparison; padded to 17 */
    int nd = ((64 - __builtin_clzll(d)) * 1233) >> 12;
    nd += d >= pow10_u64[nd];
    return put_decimal(out, neg, d * pow10_u64[17 - nd], k + nd - 1);
}

int proto_json_format_shortest(double v, char buf[PROTO_DOUBLE_MAX])
{
    int n = put_shortest(buf, v);
    buf[n] = '\0';
    return n;
}

/* The nd (1..17) significant digits of a > 0, correctly rounded (exact
 * halves to even, as the C library's printf rounds), as an integer of nd
 * digits with *x10 the power of ten of its first: round(a * 10^k), k =
 * nd - 1 - x10, exactly (scaled). split_double's x10 may
 * be one low (nd + 1 digits come: once more one place up), and the
 * rounding may carry to 10^nd (one place up, it rounds to 10^(nd - 1)).
 * Where that does not apply (a >= 10^nd), the C library's %.*e, which is
 * correctly rounded. */
static uint64_t round_digits(double a, int nd, int *x10)
{
    uint64_t m;
    int e, x = split_double(a, &m, &e);
    uint64_t q = scaled(m, e, nd - 1 - x);
    if (q >= pow10_u64[nd])
        q = scaled(m, e, nd - 1 - ++x);
    if (q == pow10_u64[nd]) {
        q = pow10_u64[nd - 1];
        x++;
    }
    if (q >= pow10_u64[nd - 1] && q < pow10_u64[nd]) {
        *x10 = x;
        return q;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.*e", nd - 1, a);
    uint64_t D = (uint64_t)(tmp[0] - '0');
    for (int i = 2; i <= nd; i++)
        D = D * 10u + (uint64_t)(tmp[i] - '0');
    *x10 = atoi(tmp + (nd > 1 ? nd + 2 : 2));
    return D;
}

/* v (finite) at digits (1..17) significant digits at out (no NUL);
 * stores at most NUMBER_STORES bytes. Not inlined: the shortest form's
 * callers keep the registers this one would make them save. */
static __attribute__((noinline)) int put_rounded(char *out, double v, int digits)
{
    if (v == 0.0)
        return put_zero(out, signbit(v));
    int x10;
    uint64_t d = round_digits(fabs(v), digits, &x10);
    return put_decimal(out, v < 0, d * pow10_u64[17 - digits], x10);
}

/* v at options.digits: rounded to digits (1..17) significant ones, any
 * other count (0) the shortest form; stores at most NUMBER_STORES bytes. */
ALWAYS_INLINE int put_digits(char *out, double v, int digits)
{
    return digits >= 1 && digits <= 17 ? put_rounded(out, v, digits) : put_shortest(out, v);
}

int proto_json_format_digits(double v, int digits, char buf[PROTO_DOUBLE_MAX])
{
    int n = put_digits(buf, v, digits);
    buf[n] = '\0';
    return n;
}

double proto_json_round_digits(double v, int digits)
{
    if (digits < 1 || digits > 17 || v == 0.0 || !isfinite(v))
        return v;
    char buf[PROTO_DOUBLE_MAX];
    proto_json_format_digits(v, digits, buf);
    return strtod(buf, NULL);
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
    b->len += (size_t)put_shortest(b->p + b->len, v);
}

void proto_jw_double_digits(proto_jw *b, double v, int digits)
{
    if (b->len + PROTO_DOUBLE_MAX + 1 > b->cap && proto_jw_reserve(b, PROTO_DOUBLE_MAX))
        return;
    b->len += (size_t)put_digits(b->p + b->len, v, digits);
}

/* The tree writer: proto_jw_value(), proto_jw_canonical() and
 * proto_json_dump(). canonical: jansson's dump with JSON_SORT_KEYS and
 * JSON_REAL_PRECISION(17) of the tree with its integers made reals (keys
 * in strcmp order: jansson compares the keys' bytes, and keys hold no
 * NUL; every number at 17 digits, proto_json_format_digits' layout). */
typedef struct member {
    const char *key;
    json_t *value;
} member;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const member *)a)->key, ((const member *)b)->key);
}

static void put_value(proto_jw *b, const json_t *v, bool canonical, int depth);

static void put_object(proto_jw *b, const json_t *v, bool canonical, int depth)
{
    member small[16], *m = small;
    size_t n = json_object_size(v), k = 0;
    if (canonical && n > sizeof small / sizeof small[0] && !(m = malloc(n * sizeof *m))) {
        b->oom = true;
        return;
    }
    const char *key;
    json_t *x;
    proto_jw_raw(b, "{", 1);
    json_object_foreach((json_t *)v, key, x)
    {
        if (canonical) { /* every member first, sorted below */
            if (k < n)
                m[k++] = (member){key, x};
            continue;
        }
        if (k++)
            proto_jw_raw(b, ",", 1);
        proto_jw_string(b, key, strlen(key));
        proto_jw_raw(b, ":", 1);
        put_value(b, x, false, depth + 1);
    }
    if (canonical) {
        if (k <= sizeof small / sizeof small[0]) { /* every object of a chain */
            for (size_t i = 1; i < k; i++)
                for (size_t j = i; j > 0 && strcmp(m[j - 1].key, m[j].key) > 0; j--) {
                    member t = m[j];
                    m[j] = m[j - 1];
                    m[j - 1] = t;
                }
        } else {
            qsort(m, k, sizeof *m, by_key);
        }
        for (size_t i = 0; i < k; i++) {
            if (i)
                proto_jw_raw(b, ",", 1);
            proto_jw_string(b, m[i].key, strlen(m[i].key));
            proto_jw_raw(b, ":", 1);
            put_value(b, m[i].value, true, depth + 1);
        }
        if (m != small)
            free(m);
    }
    proto_jw_raw(b, "}", 1);
}

static void put_value(proto_jw *b, const json_t *v, bool canonical, int depth)
{
    if (depth > 2048) { /* jansson's own parser stops far earlier */
        b->oom = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(b, v, canonical, depth);
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        proto_jw_raw(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                proto_jw_raw(b, ",", 1);
            put_value(b, json_array_get(v, i), canonical, depth + 1);
        }
        proto_jw_raw(b, "]", 1);
        break;
    }
    case JSON_STRING:
        proto_jw_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        if (canonical)
            proto_jw_double_digits(b, (double)json_integer_value(v), 17);
        else
            proto_jw_integer(b, json_integer_value(v));
        break;
    case JSON_REAL:
        if (canonical)
            proto_jw_double_digits(b, json_real_value(v), 17);
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

void proto_jw_value(proto_jw *w, const json_t *v)
{
    put_value(w, v, false, 0);
}

void proto_jw_canonical(proto_jw *w, const json_t *v)
{
    put_value(w, v, true, 0);
}

char *proto_json_dump(const json_t *v)
{
    if (!v)
        return NULL;
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    proto_jw_value(&w, v);
    return proto_jw_finish(&w, NULL);
}

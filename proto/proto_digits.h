/*
 * proto_digits.h: eight decimal digits at once, in one 64-bit word, for the
 * number writers of proto_json_write.c. No table and no division: the word
 * is cut into lanes (two of 32 bits, then four of 16) and each lane divided
 * by 100, then by 10, with one multiplication and a shift for all lanes
 * together ("SWAR", SIMD within a register). Why every constant is exact
 * over the range it meets is written next to it;
 * tests/proto/test_proto_digits.c checks every x < 10^8.
 *
 * Internal to proto/ (static inline, for proto_json_write.c and its test).
 * Not done here: the layout of a number, its digit count, other bases.
 */
#ifndef PROTO_DIGITS_H
#define PROTO_DIGITS_H

#include <stdint.h>
#include <string.h>

/* The eight decimal digits of x < 10^8 (leading zeros included) as byte
 * values 0..9 of one word, the first digit (worth 10^7) in the lowest byte:
 * add 0x3030303030303030 for their characters, in reading order once
 * stored by proto__store8(). Trailing zero digits are the word's high zero
 * bytes (__builtin_clzll(w) / 8 of them when w != 0). */
static inline uint64_t proto__digits8(uint32_t x)
{
    /* Each step below splits every lane of v in two, a quotient d = y / m
     * kept low and the remainder y - m d raised into the lane's high half:
     * v << s - d (m << s) + d = v << s - d ((m << s) - 1), one
     * multiplication for all lanes at once. No step wraps: every lane
     * stays non-negative and the highest ends below bit 63. */
    /* two 32-bit lanes y < 10^4: the first four digits low, the last four
     * high */
    uint64_t hi = x / 10000u;
    uint64_t v = ((uint64_t)x << 32) - hi * ((10000ull << 32) - 1);
    /* y / 100 in each lane: y * 5243 < 2^26 stays inside its lane (the high
     * lane's lands at bit 13 after the shift, above the 7 bits kept), and
     * floor(y * 5243 / 2^19) = floor(y / 100): with y = 100a + b it is
     * a + b / 100 + y * 0.12 / 2^19, whose fraction stays below
     * 0.99 + 0.0023 < 1 for y < 10^4 (the first y it fails for is 43699) */
    uint64_t q = ((v * 5243u) >> 19) & 0x0000007F0000007Full;
    /* four 16-bit lanes z < 100 in reading order: y / 100 low, y % 100 high */
    v = (v << 16) - q * ((100u << 16) - 1);
    /* z / 10 in each lane: z * 103 < 2^14 stays inside its lane (the next
     * lane's lands at bit 6 after the shift, above the 4 bits kept), and
     * floor(z * 103 / 2^10) = floor(z / 10): with z = 10a + b it is
     * a + b / 10 + z * 0.6 / 2^10, fraction below 0.9 + 0.058 < 1 for
     * z < 100 (the first z it fails for is 179) */
    uint64_t t = ((v * 103u) >> 10) & 0x000F000F000F000Full;
    /* eight bytes: tens low, units high in each 16-bit lane */
    return (v << 8) - t * ((10u << 8) - 1);
}

/* The word w at p[0..8), its lowest byte first whatever the machine's byte
 * order (the digits above, and characters packed the same way). */
static inline void proto__store8(char *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, sizeof w);
}

#endif /* PROTO_DIGITS_H */

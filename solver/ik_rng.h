/*
 * ik_rng.h: the one pseudo-random generator of ikd, splitmix64 (Steele,
 * Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
 * the numeric and tree solvers' restarts, the closed form's self-proof,
 * and every test and benchmark that draws random configurations.
 *
 * The state is the caller's (no globals: the solver stays reentrant); any
 * seed is fine, 0 included, and the same seed gives the same sequence on
 * every machine. Not for anything that needs unpredictability.
 */
#ifndef IK_RNG_H
#define IK_RNG_H

#include <stdint.h>

typedef struct ik_rng {
    uint64_t s;
} ik_rng;

/* The next 64 random bits. */
static inline uint64_t ik_rng_next(ik_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A double uniform in [0, 1) with 53 random bits. */
static inline double ik_rng_unit(ik_rng *r)
{
    return (double)(ik_rng_next(r) >> 11) * 0x1.0p-53;
}

/* A double uniform in [lo, hi). */
static inline double ik_rng_uniform(ik_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ik_rng_unit(r);
}

#endif /* IK_RNG_H */

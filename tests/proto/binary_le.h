/*
 * binary_le.h: the little-endian fields of the binary forms (a binary
 * batch, proto/proto_binary.h; a binary tick, proto/proto_stream_binary.h)
 * as the tests write and read them: their own code, independent of
 * proto/'s readers and writers, so that a test compares the two. Shared by
 * test_proto_binary.c and test_stream_binary.c. Header-only; a test that
 * uses only part of it compiles warning-free.
 */
#ifndef TESTS_PROTO_BINARY_LE_H
#define TESTS_PROTO_BINARY_LE_H

#include <stdint.h>
#include <string.h>

static inline void le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void le32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static inline void le64d(unsigned char *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(u >> (8 * k));
}

static inline uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline double rd64d(const unsigned char *p)
{
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--)
        u = u << 8 | p[k];
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#endif /* TESTS_PROTO_BINARY_LE_H */

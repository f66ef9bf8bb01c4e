/*
 * proto_le.h: little-endian numbers in byte buffers, the binary wire forms'
 * one convention (binary batches, proto_binary.c; binary ticks,
 * proto_stream_binary.c): u16, u32 and IEEE doubles read and written at
 * any address, whatever the host's byte order.
 */
#ifndef PROTO_LE_H
#define PROTO_LE_H

#include <stdint.h>
#include <string.h>

/* A little-endian machine copies the bytes as they are; any other
 * assembles them. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PROTO_HOST_LE 1
#else
#define PROTO_HOST_LE 0
#endif

static inline uint32_t proto_le_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint16_t proto_le_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline double proto_le_f64(const unsigned char *p)
{
    uint64_t u = 0;
    if (PROTO_HOST_LE) {
        memcpy(&u, p, sizeof u);
    } else {
        for (int k = 7; k >= 0; k--)
            u = u << 8 | p[k];
    }
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline void proto_le_put_u32(unsigned char *p, uint32_t v)
{
    if (PROTO_HOST_LE) {
        memcpy(p, &v, sizeof v);
        return;
    }
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static inline void proto_le_put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void proto_le_put_f64(unsigned char *p, double d)
{
    if (PROTO_HOST_LE) {
        memcpy(p, &d, sizeof d);
        return;
    }
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(u >> (8 * k));
}

#endif /* PROTO_LE_H */

/*
 * proto_limits.h: the bounds the wire format holds every request to (the
 * daemon's flags set them; GET /v1/solvers lists them), and the one place
 * their defaults and the default time budget of a solve are written.
 */
#ifndef PROTO_LIMITS_H
#define PROTO_LIMITS_H

#include <stddef.h>

#include "solver/ik_numeric.h"

#define PROTO_DEFAULT_MAX_BODY_BYTES (8u << 20)
#define PROTO_DEFAULT_MAX_JOINTS 64
#define PROTO_DEFAULT_MAX_TARGETS 100000
#define PROTO_DEFAULT_MAX_ITERATIONS 10000
#define PROTO_DEFAULT_MAX_TIME_MS 1000.0
#define PROTO_DEFAULT_MAX_URDF_BYTES (4u << 20)
#define PROTO_DEFAULT_MAX_ITEMS 10000

/* Limits the daemon configures (flags), with sane defaults. */
typedef struct proto_limits {
    size_t max_body_bytes; /* request body; default 8 MiB */
    size_t max_joints;     /* joints/bones per chain; default 64 */
    size_t max_targets;    /* targets per batch; default 100000 */
    size_t max_iterations; /* per solve; default 10000 */
    double max_time_ms;    /* per solve time budget cap; default 1000 */
    size_t max_urdf_bytes; /* URDF document inside a request; default 4 MiB */
    size_t max_items;      /* items (rigs) per batch of items; default 10000 */
} proto_limits;

/* Fills *l with the defaults above. */
void proto_limits_default(proto_limits *l);
/* lim, or (NULL) the defaults filled into *def. */
static inline const proto_limits *proto__limits_or_default(const proto_limits *lim,
                                                           proto_limits *def)
{
    if (lim)
        return lim;
    proto_limits_default(def);
    return def;
}

/* The time budget of a solve whose options give none: the numeric solver's
 * own default (IK_NUMERIC_DEFAULT_TIMEOUT_S, 5 ms), or the daemon's cap
 * when that is lower. */
double proto_limits_default_timeout_ms(const proto_limits *l);

#endif /* PROTO_LIMITS_H */

/*
 * proto_limits.c: the defaults of proto_limits (proto/proto_limits.h), the
 * bounds the daemon's flags configure.
 */
#include "proto/proto_limits.h"

void proto_limits_default(proto_limits *l)
{
    l->max_body_bytes = PROTO_DEFAULT_MAX_BODY_BYTES;
    l->max_joints = PROTO_DEFAULT_MAX_JOINTS;
    l->max_targets = PROTO_DEFAULT_MAX_TARGETS;
    l->max_iterations = PROTO_DEFAULT_MAX_ITERATIONS;
    l->max_time_ms = PROTO_DEFAULT_MAX_TIME_MS;
    l->max_urdf_bytes = PROTO_DEFAULT_MAX_URDF_BYTES;
    l->max_items = PROTO_DEFAULT_MAX_ITEMS;
}

double proto_limits_default_timeout_ms(const proto_limits *l)
{
    double ms = IK_NUMERIC_DEFAULT_TIMEOUT_S * 1e3;
    return ms < l->max_time_ms ? ms : l->max_time_ms;
}

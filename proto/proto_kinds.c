/*
 * proto_kinds.c: the table of chain kinds: each kind's operations
 * (proto_kind_ops, proto/proto_kind.h), indexed by proto_chain_kind, in the
 * order of proto_chain_kind_names (proto_names.c).
 */
#include "proto/proto_kind.h"

const proto_kind_ops *const proto_kinds[] = {
    [PROTO_CHAIN_PLANAR] = &proto_kind_planar,     [PROTO_CHAIN_LINKS3D] = &proto_kind_links3d,
    [PROTO_CHAIN_BONES] = &proto_kind_bones,       [PROTO_CHAIN_SKELETON] = &proto_kind_skeleton,
    [PROTO_CHAIN_JOINTS] = &proto_kind_joints,     [PROTO_CHAIN_URDF] = &proto_kind_urdf,
    [PROTO_CHAIN_TREE] = &proto_kind_tree,
};

/*
 * proto_names.c: the names of the wire format's enumerations that more than
 * one file of proto/ reads (chain kinds, solvers, tree objectives), indexed
 * by their enums (proto_kind.h, proto_job.h) and NULL-terminated for
 * proto_json_enum().
 * A leaf: it refers to nothing, so that the files that name these tables
 * depend on it and never on each other through them.
 */
#include "proto/proto_kind.h"

const char *const proto_chain_kind_names[] = {"planar", "links3d", "bones", "skeleton",
                                              "joints", "urdf",    "tree",  NULL};

const char *const proto_solver_names[] = {"auto",     "two_link", "three_link", "three_link_3d",
                                          "two_bone", "fabrik",   "ccd",        "numeric",
                                          "closed",   NULL};

const char *const proto_objective_names[] = {"none",   "distance",   "manip1",
                                             "manip2", "mid_limits", NULL};

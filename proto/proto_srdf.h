/*
 * proto_srdf.h: reading the allowed-collision entries of an SRDF document
 * (MoveIt's Semantic Robot Description Format, the companion of a URDF
 * that every MoveIt robot has) with libxml2.
 *
 * What is read, children of the root <robot> (MoveIt's srdfdom):
 *   <disable_collisions link1="a" link2="b" [reason="..."]/>
 *       the pair (a, b) is never checked (reason is not read);
 *   <disable_default_collisions link="a"/>
 *       a is checked against no link, unless re-enabled by ...
 *   <enable_collisions link1="a" link2="b"/>
 *       the pair is checked again (applied after the two above, as
 *       MoveIt applies it).
 * Groups, end effectors, virtual and passive joints, group states and
 * everything else are skipped: they say nothing about collisions. Entries
 * name links, which the caller checks against its URDF (proto_collide.c).
 *
 * Safety: the document is parsed by proto_xml_parse() (no network, no
 * entities, no <!DOCTYPE>, no huge documents); the caller enforces its byte
 * limit before calling.
 *
 * Errors: 0 on success, -1 with *err set: "invalid_srdf" (HTTP 422)
 * naming the entry for a
 * malformed document, a root other than <robot>, an entry without its
 * link attributes or naming a link twice; "too_large" for a name longer
 * than PROTO_URDF_NAME_MAX - 1 bytes. Messages start with "SRDF".
 *
 * Memory: *entries is a heap array the caller frees with free() (also
 * NULL with 0 entries); nothing else survives the call.
 */
#ifndef PROTO_SRDF_H
#define PROTO_SRDF_H

#include <stddef.h>

#include "proto/proto_error.h"
#include "proto/proto_urdf.h"

typedef enum proto_srdf_kind {
    PROTO_SRDF_DISABLE = 0,  /* disable_collisions link1 link2 */
    PROTO_SRDF_DISABLE_LINK, /* disable_default_collisions link (link2 "") */
    PROTO_SRDF_ENABLE        /* enable_collisions link1 link2 */
} proto_srdf_kind;

typedef struct proto_srdf_entry {
    proto_srdf_kind kind;
    char link1[PROTO_URDF_NAME_MAX];
    char link2[PROTO_URDF_NAME_MAX];
} proto_srdf_entry;

/* Reads the collision entries of the SRDF document xml[0..len), in
 * document order, into *entries (heap) and *count. */
int proto_srdf_read(const char *xml, size_t len, proto_srdf_entry **entries, size_t *count,
                    proto_error *err);

#endif /* PROTO_SRDF_H */

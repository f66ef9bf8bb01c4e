/*
 * proto_xml.h: the one hardened way proto/ parses an XML document a client
 * sent (URDF in proto_urdf.c, SRDF in proto_srdf.c) with libxml2.
 *
 * Safety: XML_PARSE_NONET (no network access), no entity substitution
 * (XML_PARSE_NOENT is never set), no DTD loading and no XML_PARSE_HUGE, and
 * any <!DOCTYPE> is refused as soon as the parser meets it (neither format
 * needs one), which rules out external entities (XXE) and entity expansion
 * bombs ("billion laughs"). len must fit in an int (about 2 GiB); callers
 * enforce their own byte limits first. The parse uses a parser context of
 * its own, so that its first error (with its line) is this document's and
 * not a thread-global one; nothing is printed.
 *
 * Size: the tree is only ever read, so short text nodes are stored inside
 * their node (XML_PARSE_COMPACT) and white space between elements is not
 * kept (XML_PARSE_NOBLANKS): neither format reads text, only elements and
 * attributes. On the iiwa padded to 4.4 MB this takes a URDF chain's
 * decode from 85 to 76 MB of peak RSS and 7% fewer instructions.
 *
 * Thread-safety: may be called from many threads at once; the first call
 * initialises libxml2 (xmlInitParser under pthread_once), xmlCleanupParser
 * is never called.
 *
 * Not here: what the documents mean (proto_urdf.c, proto_srdf.c).
 */
#ifndef PROTO_XML_H
#define PROTO_XML_H

#include <libxml/tree.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/proto_error.h"

/* Parses xml[0..len) into a document the caller frees with xmlFreeDoc().
 * `what` names the format in messages ("URDF", "SRDF"). On error returns
 * NULL with *err (may be NULL) set, code `code` (the format's own, e.g.
 * PROTO_E_INVALID_URDF) for a malformed document or a <!DOCTYPE>,
 * PROTO_E_TOO_LARGE when len does not fit an int, PROTO_E_INTERNAL when
 * out of memory. */
xmlDocPtr proto_xml_parse(const char *xml, size_t len, const char *what, proto_errcode code,
                          proto_error *err);

/* The value of attribute `name` of element n (no namespace): 1 and *out
 * set when present (the empty string for an empty value), 0 when absent,
 * -1 when the value is not a single text node (impossible without a DTD;
 * refused to be safe). */
int proto_xml_attr(xmlNodePtr n, const char *name, const char **out);

/* True when n is an element called name, without a namespace. */
bool proto_xml_is(xmlNodePtr n, const char *name);

/* The first child element of n called name, or NULL. */
xmlNodePtr proto_xml_child(xmlNodePtr n, const char *name);

#endif /* PROTO_XML_H */

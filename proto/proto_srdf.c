/*
 * proto_srdf.c: the allowed-collision entries of an SRDF document
 * (contract in proto_srdf.h): parsed by proto_xml_parse(), the <robot>
 * root's children walked once, the three entry elements copied out.
 */
#include "proto/proto_srdf.h"

#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_xml.h"

static int name_of(xmlNodePtr el, const char *attr, char *out, size_t line, proto_error *err)
{
    const char *s;
    int has = proto_xml_attr(el, attr, &s);
    if (has != 1 || !s[0])
        return proto_error_set(err, PROTO_E_INVALID_SRDF, NULL, "SRDF: <%s> at line %zu has no %s",
                               (const char *)el->name, line, attr);
    if (strlen(s) >= PROTO_URDF_NAME_MAX)
        return proto_error_set(err, PROTO_E_TOO_LARGE, NULL,
                               "SRDF: link name '%.64s...' is longer than %d bytes", s,
                               PROTO_URDF_NAME_MAX - 1);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

int proto_srdf_read(const char *xml, size_t len, proto_srdf_entry **entries, size_t *count,
                    proto_error *err)
{
    *entries = NULL;
    *count = 0;
    xmlDocPtr doc = proto_xml_parse(xml, len, "SRDF", PROTO_E_INVALID_SRDF, err);
    if (!doc)
        return -1;
    xmlNodePtr robot = xmlDocGetRootElement(doc);
    int r = 0;
    if (!robot || !proto_xml_is(robot, "robot"))
        r = proto_error_set(err, PROTO_E_INVALID_SRDF, NULL,
                            "SRDF: the root element is <%.40s>, not <robot>",
                            robot ? (const char *)robot->name : "(none)");
    size_t n = 0;
    for (xmlNodePtr c = r ? NULL : robot->children; c; c = c->next)
        n += proto_xml_is(c, "disable_collisions") ||
             proto_xml_is(c, "disable_default_collisions") || proto_xml_is(c, "enable_collisions");
    proto_srdf_entry *e = NULL;
    if (r == 0 && n > 0 && !(e = calloc(n, sizeof *e)))
        r = proto_error_set(err, PROTO_E_INTERNAL, NULL, "out of memory reading the SRDF");
    size_t k = 0;
    for (xmlNodePtr c = r || !e ? NULL : robot->children; c && r == 0; c = c->next) {
        size_t line = (size_t)xmlGetLineNo(c);
        if (proto_xml_is(c, "disable_collisions") || proto_xml_is(c, "enable_collisions")) {
            proto_srdf_entry *x = &e[k++];
            x->kind = proto_xml_is(c, "enable_collisions") ? PROTO_SRDF_ENABLE : PROTO_SRDF_DISABLE;
            r = name_of(c, "link1", x->link1, line, err) || name_of(c, "link2", x->link2, line, err)
                    ? -1
                    : 0;
            if (r == 0 && strcmp(x->link1, x->link2) == 0)
                r = proto_error_set(err, PROTO_E_INVALID_SRDF, NULL,
                                    "SRDF: <%s> at line %zu names link '%.64s' twice",
                                    (const char *)c->name, line, x->link1);
        } else if (proto_xml_is(c, "disable_default_collisions")) {
            proto_srdf_entry *x = &e[k++];
            x->kind = PROTO_SRDF_DISABLE_LINK;
            r = name_of(c, "link", x->link1, line, err);
        }
    }
    xmlFreeDoc(doc);
    if (r) {
        free(e);
        return -1;
    }
    *entries = e;
    *count = k;
    return 0;
}

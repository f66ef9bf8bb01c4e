/*
 * proto_xml.c: hardened parsing of client XML (contract in proto_xml.h):
 * a parser context of our own whose SAX hooks refuse any <!DOCTYPE> and
 * keep the first error, options without network, entities or huge
 * documents.
 */
#include "proto/proto_xml.h"

#include <libxml/parser.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

/* What the SAX hooks below learn during one parse (ctxt->_private). */
typedef struct parse_state {
    bool doctype; /* a <!DOCTYPE> was met and the parse stopped */
    bool have_error;
    int line;
    char message[200]; /* the first error, which is the useful one */
} parse_state;

/* Called when the parser meets <!DOCTYPE ...>: refusing it here, before
 * any entity declaration is read, keeps external entities and entity
 * expansion out entirely. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
                           const xmlChar *system_id)
{
    (void)name;
    (void)external_id;
    (void)system_id;
    xmlParserCtxtPtr ctxt = ctx;
    parse_state *st = ctxt->_private;
    st->doctype = true;
    xmlStopParser(ctxt);
}

/* Keeps the first error (libxml2's last one is often a consequence of the
 * first) and prints nothing. */
static void record_error(void *ctx, xmlErrorPtr e)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state *st = ctxt ? ctxt->_private : NULL;
    if (!st || !e || st->have_error || e->level < XML_ERR_ERROR)
        return;
    st->have_error = true;
    st->line = e->line;
    snprintf(st->message, sizeof st->message, "%s", e->message ? e->message : "unknown error");
    size_t k = strlen(st->message);
    while (k > 0 && (st->message[k - 1] == '\n' || st->message[k - 1] == ' '))
        st->message[--k] = '\0';
}

xmlDocPtr proto_xml_parse(const char *xml, size_t len, const char *what, proto_errcode code,
                          proto_error *err)
{
    if (!xml) {
        proto_error_set(err, code, NULL, "no %s document", what);
        return NULL;
    }
    if (len > INT_MAX) {
        proto_error_set(err, PROTO_E_TOO_LARGE, NULL, "%s document of %zu bytes is too large", what,
                        len);
        return NULL;
    }
    pthread_once(&xml_once, xml_init);
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        proto_error_set(err, PROTO_E_INTERNAL, NULL, "out of memory creating the XML parser");
        return NULL;
    }
    parse_state st = {0};
    ctxt->_private = &st;
    ctxt->sax->internalSubset = refuse_doctype;
    ctxt->sax->serror = record_error;
    int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA |
               XML_PARSE_COMPACT | XML_PARSE_NOBLANKS;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, xml, (int)len, "document.xml", NULL, opts);
    if (st.doctype) {
        xmlFreeParserCtxt(ctxt);
        if (doc)
            xmlFreeDoc(doc);
        proto_error_set(err, code, NULL, "%s documents must not contain a <!DOCTYPE> declaration",
                        what);
        return NULL;
    }
    if (!doc || st.have_error) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        if (!st.have_error && e && e->message)
            record_error(ctxt, (xmlErrorPtr)e);
        xmlFreeParserCtxt(ctxt);
        if (doc)
            xmlFreeDoc(doc);
        proto_error_set(err, code, NULL, "malformed XML at line %d: %s", st.line,
                        st.have_error ? st.message : "unknown error");
        return NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}

int proto_xml_attr(xmlNodePtr n, const char *name, const char **out)
{
    for (xmlAttrPtr a = n->properties; a; a = a->next) {
        if (a->ns || strcmp((const char *)a->name, name) != 0)
            continue;
        if (!a->children) {
            *out = "";
            return 1;
        }
        if (a->children->type != XML_TEXT_NODE || a->children->next || !a->children->content)
            return -1;
        *out = (const char *)a->children->content;
        return 1;
    }
    return 0;
}

bool proto_xml_is(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->ns == NULL && strcmp((const char *)n->name, name) == 0;
}

xmlNodePtr proto_xml_child(xmlNodePtr n, const char *name)
{
    for (xmlNodePtr c = n->children; c; c = c->next)
        if (proto_xml_is(c, name))
            return c;
    return NULL;
}

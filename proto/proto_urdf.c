/*
 * proto_urdf.c: URDF text to the joint list of one serial chain, or of a
 * tree of several from one base (see proto_urdf.h).
 *
 * The document is parsed into a libxml2 tree with a parser context of our
 * own (so that the error of this parse, with its line, is ours and not a
 * thread-global), the <link> and <joint> children of <robot> are indexed by
 * name (two sorted arrays: joints by child link, links by name), and the
 * path is found by walking up from the tip through each link's unique parent
 * joint until the base is reached. Only the joints of that path are then
 * decoded in full (type, origin, axis, limits).
 *
 * Walking up rather than searching down makes "tip is not a descendant of
 * base" a simple outcome (the walk reaches the root without meeting the base)
 * and costs O(depth log n); indexing is O(n log n), so a multi-MiB document
 * with thousands of links stays fast.
 *
 * Not here: anything JSON (proto.c wraps these errors into responses), mimic
 * joints, the compiled chain's math (solver/ik_chain.c).
 */
#include "proto/proto_urdf.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

/* ---- errors ---------------------------------------------------------- */

static int urdf_fail(proto_error *err, proto_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int urdf_fail(proto_error *err, proto_errcode code, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return proto_error_set(err, code, NULL, "%s", msg);
}

#define INVALID(err, ...)   urdf_fail((err), PROTO_E_INVALID_URDF, __VA_ARGS__)
#define TOO_LARGE(err, ...) urdf_fail((err), PROTO_E_TOO_LARGE, __VA_ARGS__)

/* ---- libxml2 setup --------------------------------------------------- */

static pthread_once_t urdf_once = PTHREAD_ONCE_INIT;

static void urdf_init_libxml(void)
{
    xmlInitParser();
}

/* What the SAX hooks below learn during one parse (ctxt->_private). */
typedef struct urdf_parse_state {
    bool doctype; /* a <!DOCTYPE> was met and the parse stopped */
    bool have_error;
    int line;
    char message[200]; /* the first error, which is the useful one */
} urdf_parse_state;

/* SAX hook called when the parser meets <!DOCTYPE ...>: URDF never needs a
 * DTD, and refusing it here (before any entity declaration is read) keeps
 * external entities and entity expansion out entirely. */
static void urdf_refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
                                const xmlChar *system_id)
{
    xmlParserCtxtPtr ctxt = ctx;
    urdf_parse_state *st = ctxt->_private;
    st->doctype = true;
    xmlStopParser(ctxt);
}

/* Structured error hook of our own parser context: keeps the first error
 * (libxml2's lastError is the last one, often a consequence of the first)
 * and prints nothing. */
static void urdf_record_error(void *ctx, xmlErrorPtr e)
{
    xmlParserCtxtPtr ctxt = ctx;
    urdf_parse_state *st = ctxt ? ctxt->_private : NULL;
    if (!st || !e || st->have_error || e->level < XML_ERR_ERROR)
        return;
    st->have_error = true;
    st->line = e->line;
    snprintf(st->message, sizeof st->message, "%s", e->message ? e->message : "unknown error");
    size_t k = strlen(st->message);
    while (k > 0 && (st->message[k - 1] == '\n' || st->message[k - 1] == ' '))
        st->message[--k] = '\0';
}

/* ---- the indexed document ------------------------------------------- */

typedef struct urdf_joint {
    const char *name;
    const char *type;
    const char *parent;
    const char *child;
    xmlNodePtr node;
} urdf_joint;

typedef struct urdf_doc {
    xmlDocPtr doc;
    const char **links;        /* document order */
    const char **links_sorted; /* by name */
    size_t n_links;
    urdf_joint *joints; /* sorted by child link */
    size_t n_joints;
} urdf_doc;

/* Value of attribute `name` of element n: 1 and *out set when present (the
 * empty string for an empty value), 0 when absent, -1 when the value is not
 * a single text node (cannot happen without a DTD; refused to be safe). */
static int attr_text(xmlNodePtr n, const char *name, const char **out)
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

static bool is_element(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->ns == NULL && strcmp((const char *)n->name, name) == 0;
}

/* First child element called name, or NULL. */
static xmlNodePtr child_element(xmlNodePtr n, const char *name)
{
    for (xmlNodePtr c = n->children; c; c = c->next)
        if (is_element(c, name))
            return c;
    return NULL;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_joint_child(const void *a, const void *b)
{
    const urdf_joint *x = a, *y = b;
    int c = strcmp(x->child, y->child);
    if (c)
        return c;
    return strcmp(x->name, y->name);
}

static void urdf_close(urdf_doc *d)
{
    free(d->links);
    free(d->links_sorted);
    free(d->joints);
    if (d->doc)
        xmlFreeDoc(d->doc);
    memset(d, 0, sizeof *d);
}

/* Parses the document and checks the tree-wide structure: a <robot> root,
 * named links and joints, every joint with a parent and a child link, no
 * link with two parents, no link declared twice. */
static int urdf_open(urdf_doc *d, const char *xml, size_t len, proto_error *err)
{
    memset(d, 0, sizeof *d);
    if (!xml)
        return INVALID(err, "no URDF document");
    if (len > INT_MAX)
        return TOO_LARGE(err, "URDF document of %zu bytes is too large", len);
    pthread_once(&urdf_once, urdf_init_libxml);

    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        return urdf_fail(err, PROTO_E_INTERNAL, "out of memory creating the XML parser");
    urdf_parse_state st = {0};
    ctxt->_private = &st;
    ctxt->sax->internalSubset = urdf_refuse_doctype;
    ctxt->sax->serror = urdf_record_error;
    int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, xml, (int)len, "urdf.xml", NULL, opts);
    if (st.doctype) {
        xmlFreeParserCtxt(ctxt);
        if (doc)
            xmlFreeDoc(doc);
        return INVALID(err, "URDF documents must not contain a <!DOCTYPE> declaration");
    }
    if (!doc || st.have_error) {
        const xmlError *e = xmlCtxtGetLastError(ctxt);
        if (!st.have_error && e && e->message)
            urdf_record_error(ctxt, (xmlErrorPtr)e);
        xmlFreeParserCtxt(ctxt);
        if (doc)
            xmlFreeDoc(doc);
        return INVALID(err, "malformed XML at line %d: %s", st.line,
                       st.have_error ? st.message : "unknown error");
    }
    xmlFreeParserCtxt(ctxt);
    d->doc = doc;

    xmlNodePtr robot = xmlDocGetRootElement(doc);
    if (!robot || !is_element(robot, "robot")) {
        int r = INVALID(err, "the root element is <%.40s>, not <robot>",
                        robot ? (const char *)robot->name : "(none)");
        urdf_close(d);
        return r;
    }

    size_t nl = 0, nj = 0;
    for (xmlNodePtr c = robot->children; c; c = c->next) {
        if (is_element(c, "link"))
            nl++;
        else if (is_element(c, "joint"))
            nj++;
    }
    d->links = malloc((nl ? nl : 1) * sizeof *d->links);
    d->links_sorted = malloc((nl ? nl : 1) * sizeof *d->links_sorted);
    d->joints = malloc((nj ? nj : 1) * sizeof *d->joints);
    if (!d->links || !d->links_sorted || !d->joints) {
        urdf_close(d);
        return urdf_fail(err, PROTO_E_INTERNAL, "out of memory indexing the URDF document");
    }

    int r = 0;
    for (xmlNodePtr c = robot->children; c && r == 0; c = c->next) {
        if (is_element(c, "link")) {
            const char *name;
            if (attr_text(c, "name", &name) != 1 || !name[0]) {
                r = INVALID(err, "a <link> at line %ld has no name", (long)xmlGetLineNo(c));
                break;
            }
            d->links[d->n_links++] = name;
        } else if (is_element(c, "joint")) {
            urdf_joint *j = &d->joints[d->n_joints];
            xmlNodePtr p, ch;
            j->node = c;
            if (attr_text(c, "name", &j->name) != 1 || !j->name[0]) {
                r = INVALID(err, "a <joint> at line %ld has no name", (long)xmlGetLineNo(c));
                break;
            }
            if (attr_text(c, "type", &j->type) != 1)
                j->type = NULL; /* reported only if the joint is on the chain */
            p = child_element(c, "parent");
            ch = child_element(c, "child");
            if (!p || attr_text(p, "link", &j->parent) != 1 || !j->parent[0]) {
                r = INVALID(err, "joint '%.64s' has no <parent link=\"...\"/>", j->name);
                break;
            }
            if (!ch || attr_text(ch, "link", &j->child) != 1 || !j->child[0]) {
                r = INVALID(err, "joint '%.64s' has no <child link=\"...\"/>", j->name);
                break;
            }
            d->n_joints++;
        }
    }
    if (r) {
        urdf_close(d);
        return r;
    }

    memcpy(d->links_sorted, d->links, d->n_links * sizeof *d->links);
    qsort(d->links_sorted, d->n_links, sizeof *d->links_sorted, cmp_str_ptr);
    for (size_t i = 1; i < d->n_links; i++) {
        if (strcmp(d->links_sorted[i - 1], d->links_sorted[i]) == 0) {
            r = INVALID(err, "link '%.64s' is declared twice", d->links_sorted[i]);
            urdf_close(d);
            return r;
        }
    }
    qsort(d->joints, d->n_joints, sizeof *d->joints, cmp_joint_child);
    for (size_t i = 1; i < d->n_joints; i++) {
        if (strcmp(d->joints[i - 1].child, d->joints[i].child) == 0) {
            r = INVALID(err,
                        "link '%.64s' has two parents (joints '%.64s' and '%.64s'): "
                        "the robot is not a tree",
                        d->joints[i].child, d->joints[i - 1].name, d->joints[i].name);
            urdf_close(d);
            return r;
        }
    }
    return 0;
}

static bool has_link(const urdf_doc *d, const char *name)
{
    return bsearch(&name, d->links_sorted, d->n_links, sizeof *d->links_sorted, cmp_str_ptr) !=
           NULL;
}

/* The joint whose child is `link`, or NULL for a root link. */
static const urdf_joint *parent_joint(const urdf_doc *d, const char *link)
{
    size_t lo = 0, hi = d->n_joints;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(d->joints[mid].child, link);
        if (c == 0)
            return &d->joints[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A short list of link names for error messages ("a, b, c, ..."). */
static void link_list(const urdf_doc *d, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < d->n_links && used + 1 < size; i++) {
        int k = snprintf(buf + used, size - used, "%s%.40s", i ? ", " : "", d->links[i]);
        if (k < 0 || (size_t)k >= size - used) {
            buf[used] = '\0';
            snprintf(buf + used, size - used, "%s", i ? ", ..." : "...");
            return;
        }
        used += (size_t)k;
    }
}

/* ---- numbers --------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parses exactly n finite numbers separated by white space. */
static bool parse_numbers(const char *s, double *out, int n)
{
    const char *p = s;
    for (int i = 0; i < n; i++) {
        while (is_space(*p))
            p++;
        if (!*p)
            return false;
        char *end;
        double v = strtod(p, &end);
        if (end == p || !isfinite(v))
            return false;
        if (*end && !is_space(*end))
            return false;
        out[i] = v;
        p = end;
    }
    while (is_space(*p))
        p++;
    return *p == '\0';
}

/* Reads attribute attr of element el (of joint jname) as n numbers into out;
 * leaves out untouched when absent. */
static int read_numbers(xmlNodePtr el, const char *attr, double *out, int n, const char *jname,
                        proto_error *err)
{
    const char *s;
    int has = attr_text(el, attr, &s);
    if (has == 0)
        return 0;
    if (has < 0 || !parse_numbers(s, out, n))
        return INVALID(err, "joint '%.64s': <%s %s=\"%.40s\"> must be %d finite number%s", jname,
                       (const char *)el->name, attr, has < 0 ? "?" : s, n, n > 1 ? "s" : "");
    return 0;
}

/* Decodes the full description of one joint on the chain. */
static int decode_joint(const urdf_joint *j, ik_joint *out, proto_error *err)
{
    ik_joint_type type;
    if (!j->type)
        return INVALID(err, "joint '%.64s' has no type", j->name);
    if (strcmp(j->type, "revolute") == 0)
        type = IK_JOINT_REVOLUTE;
    else if (strcmp(j->type, "continuous") == 0)
        type = IK_JOINT_CONTINUOUS;
    else if (strcmp(j->type, "prismatic") == 0)
        type = IK_JOINT_PRISMATIC;
    else if (strcmp(j->type, "fixed") == 0)
        type = IK_JOINT_FIXED;
    else if (strcmp(j->type, "floating") == 0 || strcmp(j->type, "planar") == 0)
        return INVALID(err,
                       "joint '%.64s' is of type '%s', which a serial IK chain does not support "
                       "(revolute, continuous, prismatic and fixed are)",
                       j->name, j->type);
    else
        return INVALID(err, "joint '%.64s' has unknown type '%.40s'", j->name, j->type);

    double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0}, axis[3] = {1, 0, 0};
    xmlNodePtr origin = child_element(j->node, "origin");
    if (origin) {
        if (read_numbers(origin, "xyz", xyz, 3, j->name, err) ||
            read_numbers(origin, "rpy", rpy, 3, j->name, err))
            return -1;
    }
    xmlNodePtr ax = child_element(j->node, "axis");
    if (ax && read_numbers(ax, "xyz", axis, 3, j->name, err))
        return -1;
    double lower = 0.0, upper = 0.0;
    if (type == IK_JOINT_REVOLUTE || type == IK_JOINT_PRISMATIC) {
        xmlNodePtr lim = child_element(j->node, "limit");
        if (!lim)
            return INVALID(err, "%s joint '%.64s' has no <limit lower=... upper=...> element",
                           j->type, j->name);
        if (read_numbers(lim, "lower", &lower, 1, j->name, err) ||
            read_numbers(lim, "upper", &upper, 1, j->name, err))
            return -1;
        if (lower > upper)
            return INVALID(err, "joint '%.64s': lower limit %g is above upper limit %g", j->name,
                           lower, upper);
    } else if (type == IK_JOINT_CONTINUOUS) {
        lower = -INFINITY;
        upper = INFINITY;
    }
    ik_vec3 a = ik_v3(axis[0], axis[1], axis[2]);
    if (type != IK_JOINT_FIXED && !(ik_vec3_len(a) > 1e-12))
        return INVALID(err, "joint '%.64s' has a zero axis", j->name);

    out->type = type;
    out->origin.p = ik_v3(xyz[0], xyz[1], xyz[2]);
    out->origin.q = ik_quat_from_rpy(rpy[0], rpy[1], rpy[2]);
    out->axis = a;
    out->lower = lower;
    out->upper = upper;
    return 0;
}

/* ---- public ---------------------------------------------------------- */

/* The joints on the path from base_link down to tip_link, tip first, into
 * *path (malloc'd, caller frees; also on error) and *n. */
static int find_path(urdf_doc *d, const char *base_link, const char *tip_link,
                     const urdf_joint ***path_out, size_t *n_out, proto_error *err)
{
    char list[160];
    *path_out = NULL;
    if (!has_link(d, base_link)) {
        link_list(d, list, sizeof list);
        return INVALID(err, "unknown base link '%.64s' (links: %s)", base_link, list);
    }
    if (!has_link(d, tip_link)) {
        link_list(d, list, sizeof list);
        return INVALID(err, "unknown tip link '%.64s' (links: %s)", tip_link, list);
    }
    if (strcmp(base_link, tip_link) == 0)
        return INVALID(err, "base and tip are the same link '%.64s': the chain has no joint",
                       base_link);
    const urdf_joint **path = malloc((d->n_joints ? d->n_joints : 1) * sizeof *path);
    if (!path)
        return urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
    *path_out = path;
    /* Walk up from the tip. Every link has at most one parent joint, so the
     * walk is unique; more steps than joints means a cycle. */
    size_t n = 0;
    const char *cur = tip_link;
    while (strcmp(cur, base_link) != 0) {
        const urdf_joint *j = parent_joint(d, cur);
        if (!j)
            return INVALID(err,
                           "tip link '%.64s' is not a descendant of base link '%.64s': there is "
                           "no serial path between them (going up from the tip ends at root link "
                           "'%.64s')",
                           tip_link, base_link, cur);
        if (n == d->n_joints)
            return INVALID(err,
                           "the joints above link '%.64s' form a cycle: the robot is not a tree",
                           tip_link);
        if (!has_link(d, j->parent))
            return INVALID(err, "joint '%.64s' names parent link '%.64s', which is not a <link>",
                           j->name, j->parent);
        path[n++] = j;
        cur = j->parent;
    }
    *n_out = n;
    return 0;
}

/* The <limit velocity> of joint j into *v (0 when fixed, absent or not
 * positive); -1 with *err set when it is not a number. */
static int joint_velocity(const urdf_joint *j, double *v, proto_error *err)
{
    *v = 0.0;
    if (!j->type || strcmp(j->type, "fixed") == 0)
        return 0;
    xmlNodePtr lim = child_element(j->node, "limit");
    if (lim && read_numbers(lim, "velocity", v, 1, j->name, err))
        return -1;
    if (!(*v > 0.0))
        *v = 0.0;
    return 0;
}

static int read_chain(const char *xml, size_t len, const char *base_link, const char *tip_link,
                      ik_joint *joints, size_t cap, size_t *n_joints,
                      char (*names)[PROTO_URDF_NAME_MAX], double *vel, int *vel_rc,
                      proto_error *vel_err, proto_error *err)
{
    if (!base_link || !tip_link || !n_joints || (cap > 0 && !joints))
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "base and tip links must be given");
    urdf_doc d;
    if (urdf_open(&d, xml, len, err))
        return -1;

    const urdf_joint **path = NULL;
    size_t n = 0;
    int r = find_path(&d, base_link, tip_link, &path, &n, err);
    if (r)
        goto done;
    if (n > cap) {
        r = TOO_LARGE(err,
                      "the chain from '%.64s' to '%.64s' has %zu joints, more than the %zu allowed",
                      base_link, tip_link, n, cap);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const urdf_joint *j = path[n - 1 - i];
        if (names && strlen(j->name) >= PROTO_URDF_NAME_MAX) {
            r = TOO_LARGE(err, "joint name '%.64s...' is longer than %d bytes", j->name,
                          PROTO_URDF_NAME_MAX - 1);
            goto done;
        }
        if (decode_joint(j, &joints[i], err)) {
            r = -1;
            goto done;
        }
        if (names)
            snprintf(names[i], PROTO_URDF_NAME_MAX, "%s", j->name);
        if (vel && *vel_rc == 0 && joint_velocity(j, &vel[i], vel_err))
            *vel_rc = -1;
    }
    *n_joints = n;

done:
    free(path);
    urdf_close(&d);
    return r;
}

int proto_urdf_chain(const char *xml, size_t len, const char *base_link, const char *tip_link,
                     ik_joint *joints, size_t cap, size_t *n_joints,
                     char (*names)[PROTO_URDF_NAME_MAX], proto_error *err)
{
    return read_chain(xml, len, base_link, tip_link, joints, cap, n_joints, names, NULL, NULL,
                      NULL, err);
}

int proto_urdf_chain_velocities(const char *xml, size_t len, const char *base_link,
                                const char *tip_link, ik_joint *joints, size_t cap,
                                size_t *n_joints, char (*names)[PROTO_URDF_NAME_MAX],
                                double *vel, int *vel_rc, proto_error *vel_err,
                                proto_error *err)
{
    if (!vel || !vel_rc)
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "no room for the velocities");
    *vel_rc = 0;
    return read_chain(xml, len, base_link, tip_link, joints, cap, n_joints, names, vel, vel_rc,
                      vel_err, err);
}

int proto_urdf_velocities(const char *xml, size_t len, const char *base_link,
                          const char *tip_link, double *vel, size_t cap, size_t *n_movable,
                          proto_error *err)
{
    if (!base_link || !tip_link || !n_movable || (cap > 0 && !vel))
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "base and tip links must be given");
    urdf_doc d;
    if (urdf_open(&d, xml, len, err))
        return -1;
    const urdf_joint **path = NULL;
    size_t n = 0, m = 0;
    int r = find_path(&d, base_link, tip_link, &path, &n, err);
    for (size_t i = 0; r == 0 && i < n; i++) {
        const urdf_joint *j = path[n - 1 - i];
        if (!j->type || strcmp(j->type, "fixed") == 0)
            continue;
        double v;
        if (joint_velocity(j, &v, err)) {
            r = -1;
            break;
        }
        if (m >= cap) {
            r = TOO_LARGE(err, "the chain has more than %zu movable joints", cap);
            break;
        }
        vel[m++] = v;
    }
    if (r == 0)
        *n_movable = m;
    free(path);
    urdf_close(&d);
    return r;
}

ik_chain *proto_urdf_load_chain(const char *xml, size_t len, const char *base_link,
                                const char *tip_link, size_t max_joints,
                                char (**names)[PROTO_URDF_NAME_MAX], proto_error *err)
{
    if (max_joints == 0 || max_joints > SIZE_MAX / sizeof(ik_joint) / 4) {
        urdf_fail(err, PROTO_E_INVALID_REQUEST, "max_joints is out of range");
        return NULL;
    }
    ik_joint *joints = malloc(max_joints * sizeof *joints);
    char(*jn)[PROTO_URDF_NAME_MAX] = malloc(max_joints * sizeof *jn);
    char(*out_names)[PROTO_URDF_NAME_MAX] = NULL;
    ik_chain *chain = NULL;
    size_t n = 0;
    if (!joints || !jn) {
        urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
        goto done;
    }
    if (proto_urdf_chain(xml, len, base_link, tip_link, joints, max_joints, &n, jn, err))
        goto done;
    size_t dof = 0;
    for (size_t i = 0; i < n; i++)
        dof += joints[i].type != IK_JOINT_FIXED;
    if (dof == 0) {
        INVALID(err, "the chain from '%.64s' to '%.64s' has no movable joint", base_link, tip_link);
        goto done;
    }
    const size_t store = ik_chain_storage_size(dof);
    chain = malloc(sizeof *chain + store);
    if (names)
        out_names = malloc(dof * sizeof *out_names);
    if (!chain || (names && !out_names)) {
        urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
        goto fail;
    }
    int st = ik_chain_init(chain, chain + 1, store, joints, n);
    if (st != IK_OK) {
        INVALID(err, "the chain from '%.64s' to '%.64s' cannot be built: %s", base_link, tip_link,
                ik_status_message(st));
        goto fail;
    }
    if (names) {
        for (size_t i = 0; i < chain->dof; i++)
            memcpy(out_names[i], jn[chain->source_index[i]], PROTO_URDF_NAME_MAX);
        *names = out_names;
    }
    goto done;
fail:
    free(chain);
    free(out_names);
    chain = NULL;
done:
    free(joints);
    free(jn);
    return chain;
}

int proto_urdf_tree(const char *xml, size_t len, const char *base_link,
                    const char *const *tip_links, size_t ntips, ik_joint *joints, int *parent,
                    size_t cap, size_t *n_joints, size_t *tip_joint,
                    char (*names)[PROTO_URDF_NAME_MAX], proto_error *err)
{
    if (!base_link || !tip_links || ntips == 0 || !n_joints || !parent || !tip_joint ||
        (cap > 0 && !joints))
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "a base link and tip links must be given");
    for (size_t t = 0; t < ntips; t++)
        for (size_t u = 0; u < t; u++)
            if (strcmp(tip_links[t], tip_links[u]) == 0)
                return INVALID(err, "tip link '%.64s' is named twice", tip_links[t]);
    urdf_doc d;
    if (urdf_open(&d, xml, len, err))
        return -1;
    /* the joints met so far (urdf_joint pointers), to list each once */
    const urdf_joint **seen = malloc((d.n_joints ? d.n_joints : 1) * sizeof *seen);
    const urdf_joint **path = NULL;
    size_t n = 0;
    int r = seen ? 0 : urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
    for (size_t t = 0; r == 0 && t < ntips; t++) {
        size_t np = 0;
        free(path);
        path = NULL;
        r = find_path(&d, base_link, tip_links[t], &path, &np, err);
        /* from the base down: a joint already listed keeps its index */
        int up = -1;
        for (size_t i = np; r == 0 && i-- > 0;) {
            const urdf_joint *j = path[i];
            size_t k = 0;
            while (k < n && seen[k] != j)
                k++;
            if (k == n) {
                if (n == cap) {
                    r = TOO_LARGE(err, "the paths from '%.64s' to the tips have more than %zu "
                                       "joints",
                                  base_link, cap);
                    break;
                }
                if (names && strlen(j->name) >= PROTO_URDF_NAME_MAX) {
                    r = TOO_LARGE(err, "joint name '%.64s...' is longer than %d bytes", j->name,
                                  PROTO_URDF_NAME_MAX - 1);
                    break;
                }
                if (decode_joint(j, &joints[n], err)) {
                    r = -1;
                    break;
                }
                if (names)
                    snprintf(names[n], PROTO_URDF_NAME_MAX, "%s", j->name);
                parent[n] = up;
                seen[n++] = j;
            }
            up = (int)k;
        }
        if (r == 0)
            tip_joint[t] = (size_t)up;
    }
    if (r == 0)
        *n_joints = n;
    free(path);
    free(seen);
    urdf_close(&d);
    return r;
}

int proto_urdf_links(const char *xml, size_t len, char (*names)[PROTO_URDF_NAME_MAX], size_t cap,
                     size_t *n_links, proto_error *err)
{
    urdf_doc d;
    if (urdf_open(&d, xml, len, err))
        return -1;
    for (size_t i = 0; i < d.n_links && i < cap && names; i++)
        snprintf(names[i], PROTO_URDF_NAME_MAX, "%s", d.links[i]);
    if (n_links)
        *n_links = d.n_links;
    urdf_close(&d);
    return 0;
}

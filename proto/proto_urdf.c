/*
 * proto_urdf.c: URDF text to the joint list of one serial chain, or of a
 * tree of several from one base (see proto_urdf.h).
 *
 * The document is parsed into a libxml2 tree by proto_xml_parse() (the
 * hardening of proto_urdf.h's "Safety", shared with SRDF), the <link> and <joint> children of
 * <robot> are indexed by name (two sorted arrays: joints by child link, links by name), and the
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

#include <libxml/tree.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_xml.h"
#include "solver/ik_status.h"

/* ---- errors ---------------------------------------------------------- */

/* An error of the document: its path left empty for the caller to fill in
 * (proto_urdf.h). */
#define urdf_fail(err, code, ...) proto_error_set((err), (code), NULL, __VA_ARGS__)
#define INVALID(err, ...)   urdf_fail((err), PROTO_E_INVALID_URDF, __VA_ARGS__)
#define TOO_LARGE(err, ...) urdf_fail((err), PROTO_E_TOO_LARGE, __VA_ARGS__)

/* ---- the indexed document ------------------------------------------- */

typedef struct urdf_joint {
    const char *name;
    const char *type;
    const char *parent;
    const char *child;
    xmlNodePtr node;
} urdf_joint;

/* proto_urdf.h's handle: the parsed document and its index (the strings
 * point into doc). */
struct proto_urdf_doc {
    xmlDocPtr doc;
    const char **links;        /* document order */
    const char **links_sorted; /* by name */
    size_t n_links;
    urdf_joint *joints; /* sorted by child link */
    size_t n_joints;
};

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

static void urdf_close(proto_urdf_doc *d)
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
static int urdf_open(proto_urdf_doc *d, const char *xml, size_t len, proto_error *err)
{
    memset(d, 0, sizeof *d);
    xmlDocPtr doc = proto_xml_parse(xml, len, "URDF", PROTO_E_INVALID_URDF, err);
    if (!doc)
        return -1;
    d->doc = doc;

    xmlNodePtr robot = xmlDocGetRootElement(doc);
    if (!robot || !proto_xml_is(robot, "robot")) {
        int r = INVALID(err, "the root element is <%.40s>, not <robot>",
                        robot ? (const char *)robot->name : "(none)");
        urdf_close(d);
        return r;
    }

    size_t nl = 0, nj = 0;
    for (xmlNodePtr c = robot->children; c; c = c->next) {
        if (proto_xml_is(c, "link"))
            nl++;
        else if (proto_xml_is(c, "joint"))
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
        if (proto_xml_is(c, "link")) {
            const char *name;
            if (proto_xml_attr(c, "name", &name) != 1 || !name[0]) {
                r = INVALID(err, "a <link> at line %ld has no name", (long)xmlGetLineNo(c));
                break;
            }
            d->links[d->n_links++] = name;
        } else if (proto_xml_is(c, "joint")) {
            urdf_joint *j = &d->joints[d->n_joints];
            xmlNodePtr p, ch;
            j->node = c;
            if (proto_xml_attr(c, "name", &j->name) != 1 || !j->name[0]) {
                r = INVALID(err, "a <joint> at line %ld has no name", (long)xmlGetLineNo(c));
                break;
            }
            if (proto_xml_attr(c, "type", &j->type) != 1)
                j->type = NULL; /* reported only if the joint is on the chain */
            p = proto_xml_child(c, "parent");
            ch = proto_xml_child(c, "child");
            if (!p || proto_xml_attr(p, "link", &j->parent) != 1 || !j->parent[0]) {
                r = INVALID(err, "joint '%.64s' has no <parent link=\"...\"/>", j->name);
                break;
            }
            if (!ch || proto_xml_attr(ch, "link", &j->child) != 1 || !j->child[0]) {
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

static bool has_link(const proto_urdf_doc *d, const char *name)
{
    return bsearch(&name, d->links_sorted, d->n_links, sizeof *d->links_sorted, cmp_str_ptr) !=
           NULL;
}

/* The joint whose child is `link`, or NULL for a root link. */
static const urdf_joint *parent_joint(const proto_urdf_doc *d, const char *link)
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
static void link_list(const proto_urdf_doc *d, char *buf, size_t size)
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

/* Reads attribute attr of element el (of the joint or link `name`: what
 * says which) as n finite numbers into out: required ones must be present,
 * nonneg ones not negative; absent optional ones leave out untouched. */
static int attr_numbers(xmlNodePtr el, const char *attr, double *out, int n, bool required,
                        bool nonneg, const char *what, const char *name, proto_error *err)
{
    const char *s;
    int has = proto_xml_attr(el, attr, &s);
    if (has == 0)
        return required ? INVALID(err, "%s '%.64s': <%s> has no %s", what, name,
                                  (const char *)el->name, attr)
                        : 0;
    if (has < 0 || !parse_numbers(s, out, n))
        return INVALID(err, "%s '%.64s': <%s %s=\"%.40s\"> must be %d finite number%s", what, name,
                       (const char *)el->name, attr, has < 0 ? "?" : s, n, n > 1 ? "s" : "");
    for (int i = 0; i < n && nonneg; i++)
        if (out[i] < 0.0)
            return INVALID(err, "%s '%.64s': <%s %s> must not be negative", what, name,
                           (const char *)el->name, attr);
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
    xmlNodePtr origin = proto_xml_child(j->node, "origin");
    if (origin) {
        if (attr_numbers(origin, "xyz", xyz, 3, false, false, "joint", j->name, err) ||
            attr_numbers(origin, "rpy", rpy, 3, false, false, "joint", j->name, err))
            return -1;
    }
    xmlNodePtr ax = proto_xml_child(j->node, "axis");
    if (ax && attr_numbers(ax, "xyz", axis, 3, false, false, "joint", j->name, err))
        return -1;
    double lower = 0.0, upper = 0.0;
    if (type == IK_JOINT_REVOLUTE || type == IK_JOINT_PRISMATIC) {
        xmlNodePtr lim = proto_xml_child(j->node, "limit");
        if (!lim)
            return INVALID(err, "%s joint '%.64s' has no <limit lower=... upper=...> element",
                           j->type, j->name);
        if (attr_numbers(lim, "lower", &lower, 1, false, false, "joint", j->name, err) ||
            attr_numbers(lim, "upper", &upper, 1, false, false, "joint", j->name, err))
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
static int find_path(const proto_urdf_doc *d, const char *base_link, const char *tip_link,
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
    xmlNodePtr lim = proto_xml_child(j->node, "limit");
    if (lim && attr_numbers(lim, "velocity", v, 1, false, false, "joint", j->name, err))
        return -1;
    if (!(*v > 0.0))
        *v = 0.0;
    return 0;
}

/* ---- one document, read several ways ----------------------------------- */

proto_urdf_doc *proto_urdf_open(const char *xml, size_t len, proto_error *err)
{
    proto_urdf_doc *d = malloc(sizeof *d);
    if (!d) {
        urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
        return NULL;
    }
    if (urdf_open(d, xml, len, err)) {
        free(d);
        return NULL;
    }
    return d;
}

void proto_urdf_close(proto_urdf_doc *d)
{
    if (!d)
        return;
    urdf_close(d);
    free(d);
}

int proto_urdf_doc_chain(const proto_urdf_doc *d, const char *base_link, const char *tip_link,
                         ik_joint *joints, size_t cap, size_t *n_joints,
                         char (*names)[PROTO_URDF_NAME_MAX], double *vel, int *vel_rc,
                         proto_error *vel_err, proto_error *err)
{
    if (!d)
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "no URDF document");
    if (vel && !vel_rc)
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "no room for the velocities");
    if (!base_link || !tip_link || !n_joints || (cap > 0 && !joints))
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "base and tip links must be given");
    if (vel)
        *vel_rc = 0;
    const urdf_joint **path = NULL;
    size_t n = 0;
    int r = find_path(d, base_link, tip_link, &path, &n, err);
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
    return r;
}

int proto_urdf_doc_tree(const proto_urdf_doc *d, const char *base_link,
                        const char *const *tip_links, size_t ntips, ik_joint *joints, int *parent,
                        size_t cap, size_t *n_joints, size_t *tip_joint,
                        char (*names)[PROTO_URDF_NAME_MAX], proto_error *err)
{
    if (!d)
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "no URDF document");
    if (!base_link || !tip_links || ntips == 0 || !n_joints || !parent || !tip_joint ||
        (cap > 0 && !joints))
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "a base link and tip links must be given");
    for (size_t t = 0; t < ntips; t++)
        for (size_t u = 0; u < t; u++)
            if (strcmp(tip_links[t], tip_links[u]) == 0)
                return INVALID(err, "tip link '%.64s' is named twice", tip_links[t]);
    /* the joints met so far (urdf_joint pointers), to list each once */
    const urdf_joint **seen = malloc((d->n_joints ? d->n_joints : 1) * sizeof *seen);
    const urdf_joint **path = NULL;
    size_t n = 0;
    int r = seen ? 0 : urdf_fail(err, PROTO_E_INTERNAL, "out of memory");
    for (size_t t = 0; r == 0 && t < ntips; t++) {
        size_t np = 0;
        free(path);
        path = NULL;
        r = find_path(d, base_link, tip_links[t], &path, &np, err);
        /* from the base down: a joint already listed keeps its index */
        int up = -1;
        for (size_t i = np; r == 0 && i-- > 0;) {
            const urdf_joint *j = path[i];
            size_t k = 0;
            while (k < n && seen[k] != j)
                k++;
            if (k == n) {
                if (n == cap) {
                    r = TOO_LARGE(err,
                                  "the paths from '%.64s' to the tips have more than %zu "
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
    return r;
}

int proto_urdf_links(const char *xml, size_t len, char (*names)[PROTO_URDF_NAME_MAX], size_t cap,
                     size_t *n_links, proto_error *err)
{
    proto_urdf_doc d;
    if (urdf_open(&d, xml, len, err))
        return -1;
    for (size_t i = 0; i < d.n_links && i < cap && names; i++)
        snprintf(names[i], PROTO_URDF_NAME_MAX, "%s", d.links[i]);
    if (n_links)
        *n_links = d.n_links;
    urdf_close(&d);
    return 0;
}

/* ---- the whole robot, with collision primitives (proto_collide.c) ------- */

typedef struct name_index {
    const char *name;
    size_t i;
} name_index;

static int cmp_name_index(const void *a, const void *b)
{
    return strcmp(((const name_index *)a)->name, ((const name_index *)b)->name);
}

static int link_index(const name_index *by_name, size_t n, const char *name)
{
    name_index key = {name, 0};
    const name_index *f = bsearch(&key, by_name, n, sizeof key, cmp_name_index);
    return f ? (int)f->i : -1;
}

/* One <collision> element of link `link` into *sh. */
static int read_collision(xmlNodePtr col, const char *link, proto_urdf_shape *sh, proto_error *err)
{
    double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0};
    xmlNodePtr origin = proto_xml_child(col, "origin"), geo = proto_xml_child(col, "geometry");
    if (origin && (attr_numbers(origin, "xyz", xyz, 3, false, false, "link", link, err) ||
                   attr_numbers(origin, "rpy", rpy, 3, false, false, "link", link, err)))
        return -1;
    memset(sh, 0, sizeof *sh);
    sh->origin.p = ik_v3(xyz[0], xyz[1], xyz[2]);
    sh->origin.q = ik_quat_from_rpy(rpy[0], rpy[1], rpy[2]);
    xmlNodePtr g = NULL;
    for (xmlNodePtr c = geo ? geo->children : NULL; c && !g; c = c->next)
        if (c->type == XML_ELEMENT_NODE)
            g = c;
    if (!g)
        return INVALID(err, "link '%.64s': a <collision> has no <geometry>", link);
    if (proto_xml_is(g, "sphere")) {
        sh->kind = PROTO_URDF_SPHERE;
        return attr_numbers(g, "radius", sh->size, 1, true, true, "link", link, err);
    }
    if (proto_xml_is(g, "box")) {
        sh->kind = PROTO_URDF_BOX;
        return attr_numbers(g, "size", sh->size, 3, true, true, "link", link, err);
    }
    if (proto_xml_is(g, "cylinder")) {
        sh->kind = PROTO_URDF_CYLINDER;
        return attr_numbers(g, "radius", sh->size, 1, true, true, "link", link, err) ||
                       attr_numbers(g, "length", sh->size + 1, 1, true, true, "link", link, err)
                   ? -1
                   : 0;
    }
    sh->kind = proto_xml_is(g, "mesh") ? PROTO_URDF_MESH : PROTO_URDF_OTHER;
    return 0;
}

void proto_urdf_robot_free(proto_urdf_robot *r)
{
    if (!r)
        return;
    free(r->link);
    free(r->joint);
    free(r->shape);
    memset(r, 0, sizeof *r);
}

int proto_urdf_doc_robot(const proto_urdf_doc *dp, proto_urdf_robot *out, proto_error *err)
{
    memset(out, 0, sizeof *out);
    if (!dp)
        return urdf_fail(err, PROTO_E_INVALID_REQUEST, "no URDF document");
    const proto_urdf_doc d = *dp;
    xmlNodePtr robot = xmlDocGetRootElement(d.doc);
    size_t ns = 0;
    for (xmlNodePtr c = robot->children; c; c = c->next)
        if (proto_xml_is(c, "link"))
            for (xmlNodePtr k = c->children; k; k = k->next)
                ns += proto_xml_is(k, "collision");
    out->link = calloc(d.n_links ? d.n_links : 1, sizeof *out->link);
    out->joint = calloc(d.n_joints ? d.n_joints : 1, sizeof *out->joint);
    out->shape = calloc(ns ? ns : 1, sizeof *out->shape);
    int r = 0;
    if (!out->link || !out->joint || !out->shape)
        r = urdf_fail(err, PROTO_E_INTERNAL, "out of memory reading the URDF document");
    for (xmlNodePtr c = robot->children; c && r == 0; c = c->next) {
        if (!proto_xml_is(c, "link"))
            continue;
        proto_urdf_link_info *L = &out->link[out->nlinks];
        const char *name = d.links[out->nlinks++];
        L->long_name = strlen(name) >= PROTO_URDF_NAME_MAX;
        snprintf(L->name, sizeof L->name, "%s", name);
        L->parent_joint = -1;
        L->shape0 = out->nshapes;
        for (xmlNodePtr k = c->children; k && r == 0; k = k->next)
            if (proto_xml_is(k, "collision"))
                r = read_collision(k, name, &out->shape[out->nshapes++], err);
        L->nshapes = out->nshapes - L->shape0;
    }
    name_index *by_name = malloc((d.n_links ? d.n_links : 1) * sizeof *by_name);
    if (!by_name && r == 0)
        r = urdf_fail(err, PROTO_E_INTERNAL, "out of memory reading the URDF document");
    for (size_t l = 0; l < d.n_links && r == 0; l++)
        by_name[l] = (name_index){d.links[l], l};
    if (r == 0)
        qsort(by_name, d.n_links, sizeof *by_name, cmp_name_index);
    for (size_t i = 0; i < d.n_joints && r == 0; i++) {
        const urdf_joint *j = &d.joints[i];
        proto_urdf_joint_info *J = &out->joint[out->njoints++];
        snprintf(J->name, sizeof J->name, "%s", j->name);
        J->parent = link_index(by_name, d.n_links, j->parent);
        J->child = link_index(by_name, d.n_links, j->child);
        if (J->child >= 0)
            out->link[J->child].parent_joint = (int)i;
        proto_error ignored;
        J->usable = J->parent >= 0 && J->child >= 0 && decode_joint(j, &J->joint, &ignored) == 0;
    }
    free(by_name);
    if (r)
        proto_urdf_robot_free(out);
    return r;
}


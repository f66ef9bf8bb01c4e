/*
 * proto_codec.c: the wire objects' descriptions and the reader that follows
 * them (contract and modes in proto_codec.h): targets (a chain's, a tree's
 * and its tips'), seeds and options, from a tree, from text or filled.
 *
 * The rules of each object run member by member in its table's order, each
 * right after its member is read (tree mode), so that the first error of a
 * request is the one the tree mode has always named first; the text mode
 * reads every member first and runs the same rules after, declining at the
 * first that fails.
 */
#include "proto/proto_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const proto_member proto_target_members[PROTO_T_COUNT] = {
    PROTO_TARGET_MAP(PROTO__MEMBER_ROW, PROTO_T_)};
const proto_member proto_request_members[PROTO_R_COUNT] = {
    PROTO_REQUEST_MAP(PROTO__MEMBER_ROW, PROTO_R_)};
static const proto_member options_members[PROTO_O_COUNT] = {
    PROTO_OPTIONS_MAP(PROTO__MEMBER_ROW, PROTO_O_)};

/* ---- errors ------------------------------------------------------------------- */

int proto__required(proto_error *err, const char *path, const char *key)
{
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, key);
    return proto__bad(err, p, "is required");
}

/* ---- objects -------------------------------------------------------------------- */

/* Text mode: member k's value at r by its shape into o. */
static bool text_value(proto_scan *r, const proto_member *m, size_t k, const proto_known *known,
                       proto_object *o)
{
    proto_in *in = &o->in[k];
    switch (m->shape) {
    case PROTO_NUMBER: {
        proto_json_num v;
        if (!proto__scan_number(r, &v))
            return false;
        o->num[m->at] = v.is_int ? (double)v.i : v.d;
        return true;
    }
    case PROTO_INTEGER: {
        proto_json_num v;
        if (!proto__scan_number(r, &v) || !v.is_int)
            return false;
        o->i[k] = v.i;
        return true;
    }
    case PROTO_BOOL: {
        bool b;
        if (!proto__scan_bool(r, &b))
            return false;
        o->i[k] = b;
        return true;
    }
    case PROTO_STRING: {
        const char *s;
        size_t n;
        if (!proto__scan_string(r, &s, &n))
            return false;
        *in = proto_in_text(s, n);
        return true;
    }
    case PROTO_NUMBERS: {
        size_t n, max = m->count > m->count2d ? m->count : m->count2d;
        if (!proto__scan_numbers(r, o->num + m->at, max, &n))
            return false;
        o->n[k] = (unsigned char)n;
        return true;
    }
    case PROTO_ROWS:
        if (!proto__scan_char(r, '['))
            return false;
        for (size_t row = 0; row < 3; row++) {
            size_t n;
            if ((row && !proto__scan_char(r, ',')) ||
                !proto__scan_numbers(r, o->num + m->at + 3 * row, 3, &n) || n != 3)
                return false;
        }
        o->n[k] = 9;
        return proto__scan_char(r, ']');
    default: {
        const char *s;
        size_t n, count = 0;
        proto__scan_ws(r);
        if (known && (known->members & PROTO_BIT(k)) &&
            (n = known->fn(k, r->p, (size_t)(r->end - r->p), known->ud)) > 0) {
            s = r->p;
            r->p += n;
        } else if (!proto__scan_skim(r, &s, &n, &count)) {
            return false;
        }
        *in = proto_in_text(s, n);
        in->count = count;
        return true;
    }
    }
}

int proto__unknown_member(proto_error *err, const char *path, const char *key)
{
    char p[PROTO_PATH_MAX], name[PROTO_PATH_MAX];
    proto_json_path_key(p, path, key);
    proto_json_path_name(name, sizeof name, path);
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, p, "unknown field \"%.64s\" in %s", key,
                           name);
}

int proto__object_read(proto_in *in, const char *path, const proto_member *d, size_t n,
                       unsigned allowed, const proto_known *known, proto_object *o,
                       proto_error *err)
{
    o->has = 0;
    o->tipv = NULL;
    if (!proto_in_is_text(in)) {
        o->mode = PROTO_MODE_TREE;
        const json_t *v = in->node;
        if (!json_is_object(v))
            return proto__bad(err, path, "must be an object");
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            size_t k = proto__member_find(d, n, key, strlen(key));
            if (k == n || !(allowed & PROTO_BIT(k)))
                return known && known->unknown ? known->unknown(err, path, key)
                                               : proto__unknown_member(err, path, key);
            o->has |= PROTO_BIT(k);
            o->in[k] = proto_in_tree(val);
        }
        return 0;
    }
    o->mode = PROTO_MODE_TEXT;
    proto_scan *r = &in->s;
    if (!proto__scan_char(r, '{'))
        return -1;
    if (proto__scan_char(r, '}'))
        return 0;
    do {
        const char *key;
        size_t len;
        if (!proto__scan_key(r, &key, &len))
            return -1;
        size_t k = proto__member_find(d, n, key, len);
        if (k == n || !(allowed & PROTO_BIT(k)) || (o->has & PROTO_BIT(k)))
            return -1;
        o->has |= PROTO_BIT(k);
        if (!text_value(r, &d[k], k, known, o))
            return -1;
    } while (proto__scan_char(r, ','));
    return proto__scan_char(r, '}') ? 0 : -1;
}

/* The numbers of member k (n of them, from its place) within its range,
 * worded as proto_json_number() words the first that is not. */
static int numbers_in_range(const proto_object *o, const proto_member *m, size_t n,
                            const char *at, proto_error *err)
{
    double lo = m->nonneg ? 0 : -PROTO_MAX_ABS;
    for (size_t e = 0; e < n; e++) {
        double v = o->num[m->at + e];
        if (v >= lo && v <= PROTO_MAX_ABS)
            continue;
        char pe[PROTO_PATH_MAX], pr[PROTO_PATH_MAX];
        if (m->shape == PROTO_ROWS) { /* a row's element */
            proto_json_path_index(pr, at, e / 3);
            proto_json_path_index(pe, pr, e % 3);
        } else {
            proto_json_path_index(pe, at, e);
        }
        return proto__number_in(v, pe, lo, PROTO_MAX_ABS, err);
    }
    return 0;
}

/* Tree mode: the value of member k at at by its shape. */
static int tree_value(proto_object *o, const proto_member *m, size_t k, bool dims2,
                      const char *at, proto_error *err)
{
    const json_t *v = o->in[k].node;
    switch (m->shape) {
    case PROTO_NUMBER:
        if (!json_is_number(v))
            return proto__bad(err, at, "must be a finite number");
        o->num[m->at] = json_number_value(v);
        return 0;
    case PROTO_INTEGER:
        if (!json_is_integer(v))
            return proto__bad(err, at, "must be an integer");
        o->i[k] = (long long)json_integer_value(v);
        return 0;
    case PROTO_BOOL:
        if (!json_is_boolean(v))
            return proto__bad(err, at, "must be true or false");
        o->i[k] = json_is_true(v);
        return 0;
    case PROTO_STRING: {
        const char *s;
        return proto_json_string(v, at, 0, &s, err);
    }
    case PROTO_NUMBERS: {
        size_t n = dims2 ? m->count2d : m->count, got;
        double lo = m->nonneg ? 0 : -PROTO_MAX_ABS;
        if (proto_json_array(v, at, n, n, false, &got, err))
            return -1;
        for (size_t e = 0; e < n; e++) {
            char pe[PROTO_PATH_MAX];
            proto_json_path_index(pe, at, e);
            if (proto_json_number(json_array_get(v, e), pe, lo, PROTO_MAX_ABS, &o->num[m->at + e],
                                  err))
                return -1;
        }
        o->n[k] = (unsigned char)n;
        return 0;
    }
    case PROTO_ROWS: {
        size_t got;
        if (proto_json_array(v, at, 3, 3, false, &got, err))
            return -1;
        for (size_t row = 0; row < 3; row++) {
            char pr[PROTO_PATH_MAX];
            proto_json_path_index(pr, at, row);
            if (proto_json_numbers(json_array_get(v, row), pr, 3, o->num + m->at + 3 * row, err))
                return -1;
        }
        o->n[k] = 9;
        return 0;
    }
    default:
        return 0;
    }
}

int proto__member_read(proto_object *o, const proto_member *d, size_t k, bool dims2,
                       const char *path, char at[PROTO_PATH_MAX], proto_error *err)
{
    const proto_member *m = &d[k];
    if (o->mode == PROTO_MODE_TEXT) {
        at[0] = '\0';
        return proto__member_check(o, m, k, dims2);
    }
    proto_json_path_key(at, path, m->name);
    if (o->mode == PROTO_MODE_TREE)
        return tree_value(o, m, k, dims2, at, err);
    return m->shape == PROTO_NUMBERS || m->shape == PROTO_ROWS
               ? numbers_in_range(o, m, o->n[k], at, err)
               : 0;
}

const char *proto__member_string(const proto_object *o, size_t k, size_t *len)
{
    const proto_in *in = &o->in[k];
    if (proto_in_is_text(in)) {
        *len = (size_t)(in->s.end - in->s.p);
        return in->s.p;
    }
    *len = json_string_length(in->node);
    return json_string_value(in->node);
}

/* A STRING member as one of names (NULL-terminated): its index in *out,
 * or -1 with proto_json_enum's error at at. */
static int member_enum(const proto_object *o, size_t k, const char *at, const char *const *names,
                       int *out, proto_error *err)
{
    size_t len;
    const char *s = proto__member_string(o, k, &len);
    for (int i = 0; names[i]; i++)
        if (strncmp(s, names[i], len) == 0 && names[i][len] == '\0') {
            *out = i;
            return 0;
        }
    return o->mode == PROTO_MODE_TEXT ? -1 : proto__enum_error(err, at, names);
}

/* ---- arrays ----------------------------------------------------------------------- */

int proto__array(proto_in *in, const char *path, size_t min, size_t max, bool too_large,
                 size_t *n, proto_error *err)
{
    if (!proto_in_is_text(in))
        return proto_json_array(in->node, path, min, max, too_large, n, err);
    if (!(in->s.p < in->s.end && *in->s.p == '[') || in->count < min || in->count > max)
        return -1;
    in->s.p++;
    *n = in->count;
    return 0;
}

bool proto__element(proto_in *in, size_t i, proto_in *el)
{
    if (!proto_in_is_text(in)) {
        *el = proto_in_tree(json_array_get(in->node, i));
        return true;
    }
    *el = *in;
    el->count = 0;
    return i == 0 || proto__scan_char(&el->s, ',');
}

void proto__element_done(proto_in *in, const proto_in *el)
{
    if (proto_in_is_text(in))
        in->s.p = el->s.p;
}

bool proto__elements_end(proto_in *in)
{
    return !proto_in_is_text(in) || (proto__scan_char(&in->s, ']') && proto__scan_end(&in->s));
}

/* ---- targets ----------------------------------------------------------------------- */

/* The weights' or a scale's components follow their axes: permuted like
 * the axes of frame f, signs dropped. */
static ik_vec3 axes_abs(proto_frame f, const double s[3])
{
    ik_vec3 cx = proto_frame_vec_in(f, ik_v3(1, 0, 0));
    ik_vec3 cy = proto_frame_vec_in(f, ik_v3(0, 1, 0));
    ik_vec3 cz = proto_frame_vec_in(f, ik_v3(0, 0, 1));
    return ik_v3(fabs(cx.x) * s[0] + fabs(cy.x) * s[1] + fabs(cz.x) * s[2],
                 fabs(cx.y) * s[0] + fabs(cy.y) * s[1] + fabs(cz.y) * s[2],
                 fabs(cx.z) * s[0] + fabs(cy.z) * s[1] + fabs(cz.z) * s[2]);
}

/* A rotation matrix from r (orthonormal with det +1 within
 * PROTO_MAT_ORTHO_TOL), or the error that names the worst at at. */
static int rotation_matrix(const double *r, const char *at, proto_error *err)
{
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = r[3 * i] * r[3 * j] + r[3 * i + 1] * r[3 * j + 1] +
                       r[3 * i + 2] * r[3 * j + 2];
            double e = fabs(s - (i == j ? 1.0 : 0.0));
            if (e > worst)
                worst = e;
        }
    double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                 r[2] * (r[3] * r[7] - r[4] * r[6]);
    if (!(worst <= PROTO_MAT_ORTHO_TOL) || !(fabs(det - 1.0) <= PROTO_MAT_ORTHO_TOL)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, at);
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                               "%s must be a rotation matrix (orthonormal rows, determinant +1; "
                               "got max |R R^T - I| = %.3g, det = %.6g)",
                               name, worst, det);
    }
    return 0;
}

static int tips_read(const proto_object *o, const char *at, const proto_chain *c, proto_frame f,
                     const proto_target_out *out, proto_error *err);

static const char *const keep_names[] = {"pose", "joints", NULL};

/* The rule of target member k (read, at at) into t or out's tree. */
static int target_rule(proto_object *o, size_t k, const char *at, const char *path,
                       const proto_chain *c, proto_frame f, bool dims2, proto_target *t,
                       const proto_target_out *out, proto_error *err)
{
    const double *d = o->num + proto_target_members[k].at;
    char p[PROTO_PATH_MAX];
    switch (k) {
    case PROTO_T_POSITION:
        t->position = dims2 ? ik_v3(d[0], d[1], 0) : proto_frame_vec_in(f, ik_v3(d[0], d[1], d[2]));
        if ((o->has & PROTO_BIT(PROTO_T_ORIENTATION)) && (o->has & PROTO_BIT(PROTO_T_ROTATION))) {
            proto_json_path_key(p, path, "rotation");
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "give either target.orientation or target.rotation, not both");
        }
        return 0;
    case PROTO_T_ORIENTATION:
        if (proto__unit_quat(d, at, &t->orientation, err))
            return -1;
        t->orientation = proto_frame_quat_in(f, t->orientation);
        t->has_orientation = true;
        return 0;
    case PROTO_T_ROTATION: {
        double m[9];
        if (rotation_matrix(d, at, err))
            return -1;
        proto_frame_mat3_in(f, d, m);
        t->orientation = ik_quat_normalize(ik_quat_from_mat3(m));
        t->has_orientation = true;
        return 0;
    }
    case PROTO_T_UP:
        if (!((dims2 ? hypot(d[0], d[1]) : ik_vec3_len(ik_v3(d[0], d[1], d[2]))) > 1e-12))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                                   "target.up must be a non-zero direction");
        t->up = dims2 ? ik_v3(d[0], d[1], 0) : proto_frame_vec_in(f, ik_v3(d[0], d[1], d[2]));
        t->has_up = true;
        return 0;
    case PROTO_T_POLE:
        t->pole = proto_frame_vec_in(f, ik_v3(d[0], d[1], d[2]));
        t->has_pole = true;
        return 0;
    case PROTO_T_WEIGHTS: {
        bool any = false;
        for (size_t i = 0; i < 6; i++)
            any |= d[i] > 0;
        if (!any)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                                   "target.weights must have at least one weight > 0");
        if ((d[3] > 0 || d[4] > 0 || d[5] > 0) && !t->has_orientation)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                                   "rotation weights need target.orientation or target.rotation");
        for (int h = 0; h < 2; h++) {
            ik_vec3 w = axes_abs(f, d + 3 * h);
            t->weight[3 * h] = w.x, t->weight[3 * h + 1] = w.y, t->weight[3 * h + 2] = w.z;
        }
        t->has_weights = true;
        return 0;
    }
    case PROTO_T_PRIORITY: {
        long long pr = o->i[k];
        if (pr < 0 || pr > IK_TREE_MAX_TIPS - 1) {
            char what[128];
            snprintf(what, sizeof what, "must be within [%lld, %lld] (got %lld)", 0LL,
                     (long long)IK_TREE_MAX_TIPS - 1, pr);
            return proto__bad(err, at, what);
        }
        out->goals->priority = (unsigned)pr;
        return 0;
    }
    case PROTO_T_WEIGHT: {
        double w = d[0];
        if (!(w > 0) || w > PROTO_MAX_ABS) {
            char what[128];
            proto_error_format_text(what, sizeof what, "must be > 0 and <= %g (got %g)",
                                    PROTO_MAX_ABS, w);
            return proto__bad(err, at, what);
        }
        out->goals->weight = w;
        return 0;
    }
    case PROTO_T_KEEP: {
        int kp;
        if (member_enum(o, k, at, keep_names, &kp, err))
            return -1;
        *out->keep = (unsigned char)(kp == 0 ? IK_TREE_KEEP_POSE : IK_TREE_KEEP_JOINTS);
        return 0;
    }
    default: /* PROTO_T_TIPS */
        return tips_read(o, at, c, f, out, err);
    }
}

/* The rules of a target read into o in the table's order. allowed: the
 * members its kind may have; out->goals is the tip's goal (tip targets). */
static int target_rules(proto_object *o, const char *path, const proto_chain *c, proto_frame f,
                        unsigned allowed, bool dims2, proto_target *t,
                        const proto_target_out *out, proto_error *err)
{
    if (o->has & ~allowed) /* text mode declines; filled mode names the first */
        return o->mode != PROTO_MODE_FILLED
                   ? -1
                   : proto__unknown_member(
                         err, path, proto_target_members[__builtin_ctz(o->has & ~allowed)].name);
    char at[PROTO_PATH_MAX];
    /* the members given, and the required ones, in the table's order */
    const unsigned required = PROTO_BIT(PROTO_T_POSITION) | PROTO_BIT(PROTO_T_TIPS);
    for (unsigned m = allowed & (o->has | required); m; m &= m - 1) {
        size_t k = (size_t)__builtin_ctz(m);
        if (!(o->has & PROTO_BIT(k)))
            return o->mode == PROTO_MODE_TEXT
                       ? -1
                       : proto__required(err, path, proto_target_members[k].name);
        if ((o->mode == PROTO_MODE_TEXT
                 ? (at[0] = '\0', proto__member_check(o, &proto_target_members[k], k, dims2))
                 : proto__member_read(o, proto_target_members, k, dims2, path, at, err)) ||
            target_rule(o, k, at, path, c, f, dims2, t, out, err))
            return -1;
    }
    return 0;
}

int proto__target_finish(proto_object *o, const char *path, const proto_chain *c, proto_frame f,
                         const proto_target_out *out, proto_error *err)
{
    if (c->kind == PROTO_CHAIN_TREE) {
        const size_t nt = c->tree->ntips;
        for (size_t t = 0; t < nt; t++) {
            memset(&out->goals[t], 0, sizeof out->goals[t]);
            out->goals[t].weight = 1.0;
        }
        *out->keep = IK_TREE_KEEP_POSE;
        return target_rules(o, path, c, f, PROTO_TARGET_TREE, false, NULL, out, err);
    }
    bool dims2 = c->kind == PROTO_CHAIN_PLANAR;
    memset(out->t, 0, sizeof *out->t);
    out->t->orientation = ik_quat_identity();
    return target_rules(o, path, c, f, dims2 ? PROTO_TARGET_PLANAR : PROTO_TARGET_CHAIN, dims2,
                        out->t, out, err);
}

int proto__target_read(proto_in *in, const char *path, const proto_chain *c, proto_frame f,
                       const proto_target_out *out, proto_error *err)
{
    unsigned allowed = c->kind == PROTO_CHAIN_TREE     ? PROTO_TARGET_TREE
                       : c->kind == PROTO_CHAIN_PLANAR ? PROTO_TARGET_PLANAR
                                                       : PROTO_TARGET_CHAIN;
    proto_object o;
    if (proto__object_read(in, path, proto_target_members, PROTO_T_COUNT, allowed, NULL, &o, err))
        return -1;
    return proto__target_finish(&o, path, c, f, out, err);
}

int proto__planar_z(double z, const char *path, proto_error *err)
{
    if (z == 0)
        return 0;
    char at[PROTO_PATH_MAX];
    snprintf(at, sizeof at, "%s/position/2", path);
    return proto__bad(err, at, isfinite(z) ? "must be 0: a planar chain's targets lie in its plane"
                                           : "must be a finite number");
}

void proto__tick_target(const proto_stream_raw *t, proto_object *o)
{
    o->mode = t->filled ? PROTO_MODE_FILLED : PROTO_MODE_TEXT;
    o->has = t->has;
    memcpy(o->n, t->n, sizeof t->n);
    memcpy(o->num, t->num, sizeof t->num);
    o->i[PROTO_T_PRIORITY] = t->priority;
    o->in[PROTO_T_KEEP] = t->keep;
    o->in[PROTO_T_TIPS] = t->tips;
    o->tipv = t->tipv;
    o->ntips = t->ntips;
}

/* The error naming a tip the tree does not have, with its tips. */
static int no_tip(const proto_chain *c, const char *pt, const char *name, size_t len,
                  proto_error *err)
{
    char list[160] = "";
    for (size_t u = 0, used = 0; u < c->tree->ntips && used + 1 < sizeof list; u++) {
        int k = snprintf(list + used, sizeof list - used, "%s\"%s\"", u ? ", " : "",
                         c->tip_names[u]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, pt,
                           "the tree has no tip named \"%.*s\" (its tips: %s)",
                           (int)(len < 64 ? len : 64), name, list);
}

/* Tip t's target, read into o (at pt), into its goal. */
static int tip_rules(proto_object *o, const char *pt, const proto_chain *c, proto_frame f,
                     proto_tip_goal *g, proto_error *err)
{
    memset(&g->t, 0, sizeof g->t);
    g->t.orientation = ik_quat_identity();
    proto_target_out tip = {&g->t, c, g, NULL};
    if (target_rules(o, pt, c, f, PROTO_TARGET_TIP, false, &g->t, &tip, err))
        return -1;
    g->active = true;
    return 0;
}

/* The index of the tip named name (len bytes), or ntips. */
static size_t tip_index(const proto_chain *c, const char *name, size_t len)
{
    size_t t = 0;
    while (t < c->tree->ntips &&
           !(strncmp(c->tip_names[t], name, len) == 0 && c->tip_names[t][len] == 0))
        t++;
    return t;
}

/* A tree target's "tips" ({name: tip target}), member TIPS of o, at at:
 * a tick's as the raw reader read them, else from its text or tree (not
 * inlined: target_rule, which every target's members pass, stays small). */
static __attribute__((noinline)) int tips_read(const proto_object *o, const char *at,
                                               const proto_chain *c, proto_frame f,
                                               const proto_target_out *out, proto_error *err)
{
    const size_t nt = c->tree->ntips;
    proto_object to;
    for (size_t u = 0; o->tipv && u < o->ntips; u++) { /* names unique (raw_tips) */
        size_t t = tip_index(c, o->tipv[u].text, o->tipv[u].len);
        proto__tick_target(&o->tipv[u], &to);
        if (t == nt || tip_rules(&to, "", c, f, &out->goals[t], err))
            return -1;
    }
    if (o->tipv)
        return 0;
    proto_in in = o->in[PROTO_T_TIPS];
    if (!proto_in_is_text(&in)) {
        if (!json_is_object(in.node))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, at,
                                   "target.tips must be an object: {tip name: target, ...}");
        const char *name;
        json_t *tv;
        json_object_foreach((json_t *)in.node, name, tv)
        {
            char pt[PROTO_PATH_MAX];
            proto_json_path_key(pt, at, name);
            size_t t = tip_index(c, name, strlen(name));
            if (t == nt)
                return no_tip(c, pt, name, strlen(name), err);
            if (!json_is_object(tv)) {
                char nm[PROTO_PATH_MAX];
                proto_json_path_name(nm, sizeof nm, pt);
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, pt,
                                       "%s must be a target object", nm);
            }
            proto_in tin = proto_in_tree(tv);
            if (proto__object_read(&tin, pt, proto_target_members, PROTO_T_COUNT, PROTO_TARGET_TIP,
                                   NULL, &to, err) ||
                tip_rules(&to, pt, c, f, &out->goals[t], err))
                return -1;
        }
        return 0;
    }
    proto_scan *r = &in.s;
    if (!proto__scan_char(r, '{'))
        return -1;
    if (proto__scan_char(r, '}'))
        return proto__scan_end(r) ? 0 : -1;
    unsigned seen = 0;
    do {
        const char *name;
        size_t len, t;
        if (!proto__scan_key(r, &name, &len) || (t = tip_index(c, name, len)) == nt ||
            (seen & PROTO_BIT(t)))
            return -1;
        seen |= PROTO_BIT(t);
        if (proto__object_read(&in, "", proto_target_members, PROTO_T_COUNT, PROTO_TARGET_TIP, NULL,
                               &to, NULL) ||
            tip_rules(&to, "", c, f, &out->goals[t], err))
            return -1;
    } while (proto__scan_char(r, ','));
    return proto__scan_char(r, '}') && proto__scan_end(r) ? 0 : -1;
}

/* ---- seeds ---------------------------------------------------------------------------- */

int proto__seed_read(proto_in *in, const char *path, const proto_chain *c, const proto_options *o,
                     double *out, proto_error *err)
{
    size_t len = proto__seed_len(c);
    if (len == 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "%s chains take no seed",
                               proto_chain_kind_names[c->kind]);
    bool text = proto_in_is_text(in);
    /* bones: positions; skeletons and trees of bones: local rotations */
    int form = c->kind == PROTO_CHAIN_BONES ? 3 : c->skel ? 4 : 1;
    if (form == 1) {
        size_t n;
        if (!text && json_is_object(in->node)) /* by joint name (proto_joint_seed.c) */
            return proto__joint_seed_map(in->node, path, c, o, out, err);
        if (text ? !proto__scan_numbers(&in->s, out, len, &n) || n != len
                 : proto_json_numbers(in->node, path, len, out, err) != 0)
            return -1;
        for (size_t i = 0; i < len; i++) {
            if (text && !(out[i] >= -PROTO_MAX_ABS && out[i] <= PROTO_MAX_ABS))
                return -1;
            if (proto__angular_joint(c, i))
                out[i] = proto_angle_in(o->units, out[i]);
        }
        return proto__joint_seed_check(c, o, out, len, path, false, err);
    }
    size_t k = len / (size_t)form, n;
    if (text ? !proto__scan_char(&in->s, '[')
             : proto_json_array(in->node, path, k, k, false, &n, err) != 0)
        return -1;
    for (size_t i = 0; i < k; i++) {
        char p[PROTO_PATH_MAX] = "";
        double d[4];
        if (text) {
            if ((i && !proto__scan_char(&in->s, ',')) ||
                !proto__scan_numbers(&in->s, d, (size_t)form, &n) || n != (size_t)form)
                return -1;
            for (int e = 0; e < form; e++)
                if (!(d[e] >= -PROTO_MAX_ABS && d[e] <= PROTO_MAX_ABS))
                    return -1;
        } else {
            proto_json_path_index(p, path, i);
            if (proto_json_numbers(json_array_get(in->node, i), p, (size_t)form, d, err))
                return -1;
        }
        double *s = out + (size_t)form * i;
        if (form == 3) {
            ik_vec3 x = proto_frame_vec_in(o->frame, ik_v3(d[0], d[1], d[2]));
            if (i > 0 && !(ik_vec3_dist(ik_v3(s[-3], s[-2], s[-1]), x) >= PROTO_MIN_LENGTH))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                       "seed bones must be at least %g long", PROTO_MIN_LENGTH);
            s[0] = x.x, s[1] = x.y, s[2] = x.z;
        } else {
            ik_quat q;
            if (proto__unit_quat(d, p, &q, err))
                return -1;
            q = proto_frame_quat_in(o->frame, q);
            s[0] = q.x, s[1] = q.y, s[2] = q.z, s[3] = q.w;
        }
    }
    return text && !proto__scan_char(&in->s, ']') ? -1 : 0;
}

/* ---- options ----------------------------------------------------------------------------- */

static const char *const search_names[] = {"first", "nearest", NULL};

/* The names options.fields takes: "status" (always answered), then
 * PROTO_FIELD_MAP's in its order (bit k is name k + 1). */
static const char *const field_names[] = {
    "status",
#define PROTO__FIELD_NAME(name, text, bin) text,
    PROTO_FIELD_MAP(PROTO__FIELD_NAME)
#undef PROTO__FIELD_NAME
        NULL};

/* options.fields (in, at at): an array of member names; every member it
 * does not name is left out of the answer's results ("status" never is). */
static int fields_read(proto_in *in, const char *at, proto_options *o, proto_error *err)
{
    size_t n;
    if (proto__array(in, at, 0, PROTO_FIELD_COUNT + 1, false, &n, err))
        return -1;
    unsigned keep = 0;
    for (size_t i = 0; i < n; i++) {
        proto_in el;
        int e = 0;
        if (!proto__element(in, i, &el))
            return -1;
        if (proto_in_is_text(in)) {
            const char *s;
            size_t len;
            if (!proto__scan_string(&el.s, &s, &len))
                return -1;
            while (field_names[e] && !(strncmp(field_names[e], s, len) == 0 && !field_names[e][len]))
                e++;
            if (!field_names[e])
                return -1;
        } else {
            char p[PROTO_PATH_MAX];
            proto_json_path_index(p, at, i);
            if (proto_json_enum(el.node, p, field_names, &e, err))
                return -1;
        }
        proto__element_done(in, &el);
        if (e > 0)
            keep |= 1u << (e - 1);
    }
    if (!proto__elements_end(in))
        return -1;
    o->omit = ((1u << PROTO_FIELD_COUNT) - 1) & ~keep;
    return 0;
}

/* options.servo for chain c (tree mode only: servo is for streams, whose
 * open message is read as a tree): {"period_s": T, "velocity": [...],
 * "slow_distance": D}, the velocities in options.units per second (length
 * per second for prismatic joints), or, without "velocity", the URDF's
 * <limit velocity>; D the length beyond the collision margin within which
 * the arm slows (PROTO_SERVO_SLOW_DEFAULT without it). */
static int servo_read(const json_t *sv, const proto_chain *c, proto_options *o, proto_error *err)
{
    static const char *const keys[] = {"period_s", "velocity", "slow_distance", NULL};
    const char *path = "/options/servo";
    if (c->kind != PROTO_CHAIN_JOINTS && c->kind != PROTO_CHAIN_URDF)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, path,
                               "options.servo applies to joints and urdf chains (the numeric "
                               "solver), not to %s chains",
                               proto_chain_kind_names[c->kind]);
    if (proto_json_check_object(sv, path, keys, err))
        return -1;
    json_t *x = proto_json_require(sv, path, "period_s", err);
    if (!x || proto_json_positive(x, "/options/servo/period_s", 1.0, &o->servo_period, err))
        return -1;
    o->servo_slow = PROTO_SERVO_SLOW_DEFAULT;
    x = json_object_get(sv, "slow_distance");
    if (x && proto_json_positive(x, "/options/servo/slow_distance", PROTO_SERVO_SLOW_MAX,
                                 &o->servo_slow, err))
        return -1;
    const size_t n = c->chain->dof;
    /* the chain's dof velocities, freed by proto__options_release (the
     * reader releases them itself when a later member fails) */
    double *v = malloc(n * sizeof *v);
    if (!v)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    free(o->servo_velocity);
    o->servo_velocity = v;
    x = json_object_get(sv, "velocity");
    if (x) {
        if (proto_json_numbers(x, "/options/servo/velocity", n, v, err))
            return -1;
        for (size_t k = 0; k < n; k++) {
            if (!(v[k] > 0))
                return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo/velocity",
                                       "options.servo.velocity[%zu] must be > 0", k);
            v[k] = proto__angular_joint(c, k) ? proto_angle_in(o->units, v[k]) : v[k];
        }
        return 0;
    }
    const double *uv = proto__chain_velocities((proto_chain *)c, err);
    if (!uv && c->kind == PROTO_CHAIN_URDF)
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (!uv || !(uv[k] > 0))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/servo/velocity",
                                   "joint %s has no velocity limit (%s); give "
                                   "options.servo.velocity",
                                   c->names ? c->names[k] : "?",
                                   c->kind == PROTO_CHAIN_URDF ? "no <limit velocity> in the URDF"
                                                               : "joints chains have none");
        v[k] = uv[k];
    }
    return 0;
}

/* A number member within [0, hi] (positive: > 0 and <= hi) into *out,
 * worded as proto_json_number (proto_json_positive) words it. */
static int number_rule(const proto_object *ob, size_t k, const char *at, bool positive, double hi,
                       double *out, proto_error *err)
{
    double d = ob->num[options_members[k].at];
    char what[128];
    if (positive ? !(d > 0) || d > hi : d < 0 || d > hi) {
        if (positive)
            proto_error_format_text(what, sizeof what, "must be > 0 and <= %g (got %g)", hi, d);
        else
            proto_error_format_text(what, sizeof what, "must be within [0, %g] (got %g)", hi, d);
        return proto__bad(err, at, what);
    }
    *out = d;
    return 0;
}

/* An integer member within [lo, hi], worded as proto_json_integer. */
static int integer_rule(const proto_object *ob, size_t k, const char *at, long long lo,
                        long long hi, long long *out, proto_error *err)
{
    long long i = ob->i[k];
    if (i < lo || i > hi) {
        char what[128];
        snprintf(what, sizeof what, "must be within [%lld, %lld] (got %lld)", lo, hi, i);
        return proto__bad(err, at, what);
    }
    *out = i;
    return 0;
}

static int option_rule(proto_object *ob, size_t k, const char *at, const proto_chain *c,
                       const proto_limits *lim, proto_options *o, proto_error *err)
{
    int e;
    long long i = 0;
    switch (k) {
    case PROTO_O_SOLVER:
        if (member_enum(ob, k, at, proto_solver_names, &e, err))
            return -1;
        o->solver = (proto_solver)e;
        return 0;
    case PROTO_O_UNITS:
        if (member_enum(ob, k, at, proto_units_names, &e, err))
            return -1;
        o->units = (proto_units)e;
        return 0;
    case PROTO_O_FRAME:
        if (member_enum(ob, k, at, proto_frame_names, &e, err))
            return -1;
        o->frame = (proto_frame)e;
        return 0;
    case PROTO_O_TOLERANCE:
        return number_rule(ob, k, at, true, PROTO_MAX_ABS, &o->tolerance, err);
    case PROTO_O_ANGULAR_TOLERANCE: {
        double a;
        if (number_rule(ob, k, at, true, o->units == PROTO_UNITS_DEGREES ? 180 : IK_PI, &a, err))
            return -1;
        o->angular_tolerance = proto_angle_in(o->units, a);
        return 0;
    }
    case PROTO_O_MAX_ITERATIONS:
        if (integer_rule(ob, k, at, 1, (long long)lim->max_iterations, &i, err))
            return -1;
        o->max_iterations = (size_t)i;
        return 0;
    case PROTO_O_TIMEOUT_MS:
        return number_rule(ob, k, at, false, lim->max_time_ms, &o->timeout_ms, err);
    case PROTO_O_SEARCH:
        if (member_enum(ob, k, at, search_names, &e, err))
            return -1;
        o->nearest = e == 1;
        return 0;
    case PROTO_O_MAX_JOINT_STEP:
        if (number_rule(ob, k, at, true, PROTO_MAX_ABS, &o->max_joint_step_in, err))
            return -1;
        o->max_joint_step = o->max_joint_step_in; /* angles converted per joint */
        return 0;
    case PROTO_O_ALL_SOLUTIONS:
        o->all_solutions = ob->i[k] != 0;
        return 0;
    case PROTO_O_BEND:
        if (integer_rule(ob, k, at, -1, 1, &i, err))
            return -1;
        if (i == 0)
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, at, "options.bend must be 1 or -1");
        o->bend = (int)i;
        return 0;
    case PROTO_O_FIELDS:
        return fields_read(&ob->in[k], at, o, err);
    case PROTO_O_DIGITS:
        if (integer_rule(ob, k, at, 1, 17, &i, err))
            return -1;
        o->digits = (int)i;
        return 0;
    case PROTO_O_OBJECTIVE:
        if (member_enum(ob, k, at, proto_objective_names, &o->objective, err))
            return -1;
        o->has_objective = true;
        return 0;
    case PROTO_O_AVOID_COLLISIONS:
        o->avoid_collisions = ob->i[k] != 0;
        return 0;
    case PROTO_O_COLLISION_MARGIN:
        o->has_margin = true;
        return number_rule(ob, k, at, false, PROTO_MAX_ABS, &o->collision_margin, err);
    default: /* PROTO_O_SERVO */
        return proto_in_is_text(&ob->in[k]) ? -1 : servo_read(ob->in[k].node, c, o, err);
    }
}

void proto__options_release(proto_options *o)
{
    free(o->servo_velocity);
    o->servo_velocity = NULL;
}

static int options_read(proto_in *in, const proto_chain *c, const proto_limits *lim,
                        proto_options *o, proto_error *err)
{
    o->timeout_ms = proto_limits_default_timeout_ms(lim);
    o->iter_cap = lim->max_iterations;
    if (!proto_in_present(in))
        return 0;
    proto_object ob;
    if (proto__object_read(in, "/options", options_members, PROTO_O_COUNT,
                           (1u << PROTO_O_COUNT) - 1, NULL, &ob, err))
        return -1;
    char at[PROTO_PATH_MAX];
    for (size_t k = 0; k < PROTO_O_COUNT; k++)
        if ((ob.has & PROTO_BIT(k)) &&
            (proto__member_read(&ob, options_members, k, false, "/options", at, err) ||
             option_rule(&ob, k, at, c, lim, o, err)))
            return -1;
    /* planar chains live in their own x-y plane (targets, seeds and answers
     * are 2-D): a frame convention would do nothing, so it is refused */
    if (c->kind == PROTO_CHAIN_PLANAR && (ob.has & PROTO_BIT(PROTO_O_FRAME)))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/frame",
                               "options.frame does not apply to planar chains (they live in "
                               "their own x-y plane); leave it out");
    /* the secondary objectives choose among a tree's solutions */
    if (o->has_objective && c->kind != PROTO_CHAIN_TREE)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/objective",
                               "options.objective applies to tree chains, not to %s chains (use "
                               "search \"nearest\" to stay near a seed)",
                               proto_chain_kind_names[c->kind]);
    if (o->has_objective && o->objective == IK_TREE_OBJ_MID_LIMITS && c->skel)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/options/objective",
                               "options.objective mid_limits needs joint limits, and a tree of "
                               "bones has none (its bones turn freely as ball joints)");
    return 0;
}

int proto__options_read(proto_in *in, const proto_chain *c, const proto_limits *lim,
                        proto_options *o, proto_error *err)
{
    memset(o, 0, sizeof *o);
    if (options_read(in, c, lim, o, err)) {
        proto__options_release(o);
        return -1;
    }
    return 0;
}

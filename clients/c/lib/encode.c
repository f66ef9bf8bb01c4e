/*
 * encode.c: the JSON pieces the client sends (proto/README.md, "Target",
 * "Seed", "Chains"), written straight into a buffer. Every number is
 * checked to be finite (ikd would refuse the message anyway, but a NaN is
 * the caller's bug and is named here with the member it sits in), and JSON
 * text given by the caller is checked to be one value of the right kind,
 * so that a typo in a chain is the caller's error at the call, not an
 * invalid_json answer about the whole message later.
 */
#include <math.h>
#include <stdio.h>

#include "internal.h"

bool ikd__stream_name_ok(const char *name)
{
    if (!name)
        return false;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-'))
            return false;
    }
    return n >= 1 && n <= IKD__STREAM_MAX;
}

/* [v0, ..., v(n-1)], each finite. */
static int put_vector(ikd__buf *b, const double *v, int n, const char *what, const char *member,
                      ikd_error *err)
{
    if (ikd__buf_put(b, "[", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s.%s[%d] is not finite", what, member,
                             i);
        if ((i && ikd__buf_put(b, ",", 1)) || ikd__put_double(b, v[i]))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    if (ikd__buf_put(b, "]", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

int ikd__put_json(ikd__buf *b, const char *json, char open, const char *what, ikd_error *err)
{
    char why[160];
    size_t n = strlen(json);
    if (ikd__json_check(json, n, open, why, sizeof why))
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s is not a JSON %s: %s", what,
                         open == '{' ? "object" : "array", why);
    if (ikd__buf_put(b, json, n))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

int ikd__put_target(ikd__buf *b, const ikd_target *t, const char *what, ikd_error *err)
{
    if (!t)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s is NULL", what);
    if (t->json)
        return ikd__put_json(b, t->json, '{', what, err);
    int dims = t->dims ? t->dims : 3;
    if (dims != 2 && dims != 3)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s.dims must be 2 or 3 (got %d)", what,
                         t->dims);
    int rc;
    if (ikd__buf_puts(b, "{\"position\":"))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if ((rc = put_vector(b, t->position, dims, what, "position", err)))
        return rc;
    static const struct {
        const char *key, *member;
        size_t offset;
        int n; /* 0: dims */
    } opt[] = {
        {",\"orientation\":", "orientation", offsetof(ikd_target, orientation), 4},
        {",\"pole\":", "pole", offsetof(ikd_target, pole), 3},
        {",\"up\":", "up", offsetof(ikd_target, up), 0},
        {",\"weights\":", "weights", offsetof(ikd_target, weights), 6},
    };
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        const double *v;
        memcpy(&v, (const char *)t + opt[i].offset, sizeof v);
        if (!v)
            continue;
        if (ikd__buf_puts(b, opt[i].key))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if ((rc = put_vector(b, v, opt[i].n ? opt[i].n : dims, what, opt[i].member, err)))
            return rc;
    }
    if (ikd__buf_put(b, "}", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

int ikd__put_seed(ikd__buf *b, const ikd_seed *s, const char *what, ikd_error *err)
{
    if (s->json)
        return ikd__put_json(b, s->json, '[', what, err);
    if (!s->values && s->count)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s has a count but no values", what);
    int w = s->width ? s->width : 1;
    if (w != 1 && w != 3 && w != 4)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s.width must be 1, 3 or 4 (got %d)", what,
                         s->width);
    if (ikd__buf_put(b, "[", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < s->count; i++) {
        if (i && ikd__buf_put(b, ",", 1))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if (w == 1) {
            if (!isfinite(s->values[i]))
                return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "%s[%zu] is not finite", what, i);
            if (ikd__put_double(b, s->values[i]))
                return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
            continue;
        }
        char member[32];
        snprintf(member, sizeof member, "values[%zu]", i);
        int rc = put_vector(b, s->values + i * (size_t)w, w, what, member, err);
        if (rc)
            return rc;
    }
    if (ikd__buf_put(b, "]", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

int ikd__put_chain(ikd__buf *b, const ikd_chain *c, ikd_error *err)
{
    if (!c || (!c->json == !c->id))
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a chain needs exactly one of json and id");
    if (c->json) {
        if (ikd__buf_puts(b, "\"chain\":"))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        return ikd__put_json(b, c->json, '{', "chain.json", err);
    }
    if (ikd__buf_puts(b, "\"chain_id\":") || ikd__put_string(b, c->id, strlen(c->id)))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return 0;
}

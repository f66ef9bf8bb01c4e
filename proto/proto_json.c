/*
 * proto_json.c: strict JSON reading and writing on top of jansson (contract
 * in proto_json.h). Every getter fills the caller's proto_error with the
 * offending value's JSON pointer; nothing here allocates an error.
 */
#include "proto/proto_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- paths ------------------------------------------------------------ */

void proto_json_path_key(char out[PROTO_PATH_MAX], const char *base, const char *key)
{
    /* runs for every field of every request: copies, not a byte loop */
    const char *b = base ? base : "";
    size_t n = strnlen(b, PROTO_PATH_MAX - 1);
    memcpy(out, b, n);
    if (n < PROTO_PATH_MAX - 1)
        out[n++] = '/';
    size_t kl = strcspn(key, "~/");
    if (kl > PROTO_PATH_MAX - 1 - n)
        kl = PROTO_PATH_MAX - 1 - n;
    memcpy(out + n, key, kl);
    n += kl;
    for (const char *k = key + kl; *k && n < PROTO_PATH_MAX - 1; k++) {
        if (*k == '~' || *k == '/') {
            if (n + 2 >= PROTO_PATH_MAX)
                break;
            out[n++] = '~';
            out[n++] = *k == '~' ? '0' : '1';
        } else {
            out[n++] = *k;
        }
    }
    out[n] = '\0';
}

void proto_json_path_index(char out[PROTO_PATH_MAX], const char *base, size_t i)
{
    /* on every array element of every request: no snprintf */
    char key[24];
    int o = (int)sizeof key - 1;
    key[o] = '\0';
    do {
        key[--o] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    proto_json_path_key(out, base, key + o);
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

void proto_json_path_name(char *out, size_t size, const char *path)
{
    if (size == 0)
        return;
    if (!path || !*path) {
        snprintf(out, size, "the request");
        return;
    }
    size_t n = 0;
    const char *p = path;
    while (*p == '/') {
        p++;
        size_t len = strcspn(p, "/");
        bool index = all_digits(p, len) && n > 0;
        if (index && n < size - 1)
            out[n++] = '[';
        else if (n > 0 && n < size - 1)
            out[n++] = '.';
        for (size_t i = 0; i < len && n < size - 1; i++) {
            char c = p[i];
            if (c == '~' && i + 1 < len) {
                c = p[i + 1] == '1' ? '/' : '~';
                i++;
            }
            out[n++] = c;
        }
        if (index && n < size - 1)
            out[n++] = ']';
        p += len;
    }
    out[n] = '\0';
}

/* Error helper: "<name of path> <what>". */
static int bad(proto_error *err, const char *path, const char *what)
{
    char name[PROTO_PATH_MAX];
    proto_json_path_name(name, sizeof name, path);
    return proto_error_set(err, 400, "invalid_request", path, "%s %s", name, what);
}

/* ---- parsing ---------------------------------------------------------- */

json_t *proto_json_parse(const char *body, size_t len, size_t max_bytes, proto_error *err)
{
    if (len > max_bytes) {
        proto_error_set(err, 413, "too_large", "", "the body has %zu bytes; the limit is %zu",
                        len, max_bytes);
        return NULL;
    }
    if (!body || len == 0) {
        proto_error_set(err, 400, "invalid_json", "", "the body is empty");
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        proto_error_set(err, 400, "invalid_json", "", "%s (line %d, column %d)", je.text,
                        je.line, je.column);
        return NULL;
    }
    return v;
}

/* ---- getters ---------------------------------------------------------- */

int proto_json_check_object(const json_t *v, const char *path, const char *const *allowed,
                            proto_error *err)
{
    if (!json_is_object(v))
        return bad(err, path, "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        bool ok = false;
        for (size_t i = 0; allowed && allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0) {
                ok = true;
                break;
            }
        if (!ok) {
            char p[PROTO_PATH_MAX], name[PROTO_PATH_MAX];
            proto_json_path_key(p, path, key);
            proto_json_path_name(name, sizeof name, path);
            return proto_error_set(err, 400, "invalid_request", p, "unknown field \"%.64s\" in %s",
                                   key, name);
        }
    }
    return 0;
}

json_t *proto_json_require(const json_t *obj, const char *path, const char *key,
                           proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, key);
        bad(err, p, "is required");
    }
    return v;
}

int proto_json_number(const json_t *v, const char *path, double lo, double hi, double *out,
                      proto_error *err)
{
    if (!json_is_number(v))
        return bad(err, path, "must be a finite number");
    double d = json_number_value(v);
    if (!isfinite(d))
        return bad(err, path, "must be a finite number");
    if (d < lo || d > hi) {
        char what[128];
        snprintf(what, sizeof what, "must be within [%g, %g] (got %g)", lo, hi, d);
        return bad(err, path, what);
    }
    *out = d;
    return 0;
}

int proto_json_positive(const json_t *v, const char *path, double hi, double *out,
                        proto_error *err)
{
    double d;
    if (proto_json_number(v, path, -INFINITY, INFINITY, &d, err))
        return -1;
    if (!(d > 0) || d > hi) {
        char what[128];
        snprintf(what, sizeof what, "must be > 0 and <= %g (got %g)", hi, d);
        return bad(err, path, what);
    }
    *out = d;
    return 0;
}

int proto_json_integer(const json_t *v, const char *path, long long lo, long long hi,
                       long long *out, proto_error *err)
{
    if (!json_is_integer(v))
        return bad(err, path, "must be an integer");
    long long i = (long long)json_integer_value(v);
    if (i < lo || i > hi) {
        char what[128];
        snprintf(what, sizeof what, "must be within [%lld, %lld] (got %lld)", lo, hi, i);
        return bad(err, path, what);
    }
    *out = i;
    return 0;
}

int proto_json_bool(const json_t *v, const char *path, bool *out, proto_error *err)
{
    if (!json_is_boolean(v))
        return bad(err, path, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

int proto_json_string(const json_t *v, const char *path, size_t max_len, const char **out,
                      proto_error *err)
{
    if (!json_is_string(v))
        return bad(err, path, "must be a string");
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (strlen(s) != n)
        return bad(err, path, "must not contain NUL characters");
    if (max_len && n > max_len) {
        char what[96];
        snprintf(what, sizeof what, "is too long (%zu bytes; at most %zu)", n, max_len);
        return bad(err, path, what);
    }
    *out = s;
    return 0;
}

int proto_json_enum(const json_t *v, const char *path, const char *const *names, int *out,
                    proto_error *err)
{
    const char *s;
    if (proto_json_string(v, path, 0, &s, err))
        return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char what[200];
    size_t n = (size_t)snprintf(what, sizeof what, "must be one of");
    for (int i = 0; names[i] && n < sizeof what; i++)
        n += (size_t)snprintf(what + n, sizeof what - n, "%s \"%s\"", i ? "," : "", names[i]);
    return bad(err, path, what);
}

int proto_json_array(const json_t *v, const char *path, size_t min, size_t max, bool too_large,
                     size_t *n, proto_error *err)
{
    if (!json_is_array(v))
        return bad(err, path, "must be an array");
    size_t k = json_array_size(v);
    char what[128];
    if (k > max) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        if (too_large)
            return proto_error_set(err, 413, "too_large", path,
                                   "%s has %zu elements; the limit is %zu", name, k, max);
        if (min == max)
            snprintf(what, sizeof what, "must have exactly %zu elements (got %zu)", min, k);
        else
            snprintf(what, sizeof what, "must have at most %zu elements (got %zu)", max, k);
        return bad(err, path, what);
    }
    if (k < min) {
        if (min == max)
            snprintf(what, sizeof what, "must have exactly %zu elements (got %zu)", min, k);
        else
            snprintf(what, sizeof what, "must have at least %zu elements (got %zu)", min, k);
        return bad(err, path, what);
    }
    *n = k;
    return 0;
}

int proto_json_numbers(const json_t *v, const char *path, size_t n, double *out,
                       proto_error *err)
{
    size_t k;
    if (proto_json_array(v, path, n, n, false, &k, err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        char p[PROTO_PATH_MAX];
        proto_json_path_index(p, path, i);
        if (proto_json_number(json_array_get(v, i), p, -PROTO_MAX_ABS, PROTO_MAX_ABS, &out[i],
                              err))
            return -1;
    }
    return 0;
}

/* ---- writing ---------------------------------------------------------- */

json_t *proto_json_array_of(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_real(v[i]))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/*
 * proto_error.c: filling and printing the caller-owned proto_error, and the
 * names and MoveIt codes of PROTO_ERROR_MAP (proto_error.h).
 */
#include "proto/proto_error.h"
#include "proto/proto_json_write.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int moveit;
} rows[PROTO_E_COUNT] = {
    [PROTO_E_NONE] = {"", 0},
#define PROTO_ERROR_ROW(name, wire, http, moveit, text) [PROTO_E_##name] = {wire, moveit},
    PROTO_ERROR_MAP(PROTO_ERROR_ROW)
#undef PROTO_ERROR_ROW
};

const char *proto_error_name(proto_errcode code)
{
    return (unsigned)code < PROTO_E_COUNT ? rows[code].name : "";
}

int proto_error_moveit(proto_errcode code)
{
    return (unsigned)code < PROTO_E_COUNT ? rows[code].moveit : 0;
}

int proto_error_set(proto_error *e, proto_errcode code, const char *path, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->code = (unsigned)code < PROTO_E_COUNT && code != PROTO_E_NONE ? code : PROTO_E_INTERNAL;
    snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

void proto_error_clear(proto_error *e)
{
    if (!e)
        return;
    e->code = PROTO_E_NONE;
    e->message[0] = e->path[0] = '\0';
}

size_t proto_error_format(const proto_error *e, char *buf, size_t size)
{
    json_t *inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                              e->message, "path", e->path);
    json_t *root = inner ? json_pack("{s:o}", "error", inner) : NULL;
    char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    const char *out = s ? s : "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\","
                              "\"path\":\"\"}}";
    size_t n = strlen(out);
    if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        memcpy(buf, out, k);
        buf[k] = '\0';
    }
    free(s);
    return n;
}

bool proto_error_write(struct proto_jw *w, const proto_error *e)
{
    json_t *inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                              e->message, "path", e->path);
    if (!inner) /* a message cut inside a UTF-8 sequence: keep the code */
        inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                          "(message not printable)", "path", "");
    if (!inner)
        return false;
    proto_jw_value(w, inner, false);
    json_decref(inner);
    return true;
}

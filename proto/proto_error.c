/*
 * proto_error.c: filling and printing the caller-owned proto_error.
 */
#include "proto/proto_error.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int proto_error_set(proto_error *e, int http_status, const char *code, const char *path,
                    const char *fmt, ...)
{
    if (!e)
        return -1;
    e->http_status = http_status;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "invalid_request");
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
    e->http_status = 0;
    e->code[0] = e->message[0] = e->path[0] = '\0';
}

size_t proto_error_format(const proto_error *e, char *buf, size_t size)
{
    json_t *inner = json_pack("{s:s, s:s, s:s}", "code", e->code, "message", e->message, "path",
                              e->path);
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

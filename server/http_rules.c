/*
 * http_rules.c: the pure rules of ikd's HTTP side (declared in
 * server/http.h): the HTTP status of a wire error code, the constant-time
 * bearer-token check, whether a header names a media type, and a
 * Content-Length value read without overflow. No state, no I/O: any
 * thread, and the request deadline (guard.c) shares the first with the
 * module that talks to libmicrohttpd (http_mhd.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http.h"

int srv_http_status(proto_errcode code)
{
    switch (code) {
#define SRV_HTTP_STATUS_CASE(name, wire, http, moveit, text)                                       \
    case PROTO_E_##name:                                                                           \
        return http;
        PROTO_ERROR_MAP(SRV_HTTP_STATUS_CASE)
#undef SRV_HTTP_STATUS_CASE
    default:
        return 500;
    }
}

bool srv_http_token_ok(const char *header, const char *token)
{
    static const char prefix[] = "Bearer ";
    const char *have = "";
    if (header && strncasecmp(header, prefix, sizeof prefix - 1) == 0)
        have = header + sizeof prefix - 1;
    /* Constant time in the length of the expected token: every byte of it
     * is compared whatever the header holds. */
    size_t hl = strlen(have), tl = strlen(token);
    unsigned char diff = (unsigned char)(hl != tl);
    for (size_t i = 0; i < tl; i++) {
        unsigned char h = i < hl ? (unsigned char)have[i] : 0;
        diff |= (unsigned char)(h ^ (unsigned char)token[i]);
    }
    return diff == 0 && tl > 0;
}

bool srv_http_names_type(const char *v, const char *t, bool list)
{
    size_t tl = strlen(t);
    while (v && *v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        const char *end = v + strcspn(v, list ? "," : "");
        size_t n = strcspn(v, ";, \t");
        if (n == tl && strncasecmp(v, t, tl) == 0) {
            const char *qv = v + n;
            while (qv < end && !(strncasecmp(qv, "q=", 2) == 0))
                qv++;
            return qv >= end || strtod(qv + 2, NULL) > 0;
        }
        if (!list)
            return false;
        v = end;
    }
    return false;
}

unsigned long long srv_http_content_length(const char *v)
{
    unsigned long long n = 0;
    for (; *v >= '0' && *v <= '9'; v++) {
        unsigned d = (unsigned)(*v - '0');
        /* the first test is a constant one, all an ordinary length takes */
        if (n > (ULLONG_MAX - 9) / 10 && n > (ULLONG_MAX - d) / 10)
            return ULLONG_MAX;
        n = n * 10 + d;
    }
    return n;
}

/*
 * http_headers.c: a request's headers and URL as libmicrohttpd holds them
 * (contract in server/http_headers.h): one of the deliberate exceptions to
 * "only http_mhd.c talks to libmicrohttpd" that http_mhd.c's opening
 * comment names, as ws_conn.c reads the upgrade's headers through it too.
 *
 * NUL bytes: libmicrohttpd 0.9.75 reads a header line whole, NUL bytes
 * included, and keeps its name and value as C strings cut at the first
 * NUL (its lengths too are strlen's): "Authorization: Bearer <token>\0junk"
 * reads as the token. What is cut off stays in its buffer, though: the
 * names and values point into the request's bytes as they arrived, with
 * each line's CR LF (and the colon) overwritten by NULs. So between the
 * end of one header's value and the next header's name (from the
 * version, at the start; to the end of the headers, which
 * MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE gives, at the end) every byte
 * is NUL, unless a line held a NUL and more after it. That is checked
 * here, on every request, before anything compares or matches the cut
 * text; a value found outside the buffer (libmicrohttpd copies a line
 * folded onto the next, RFC 9112's obsolete obs-fold) is refused too, as
 * the RFC allows. tests/server/test_fail_closed.py sends both, so that a
 * libmicrohttpd that lays its buffer out otherwise fails the tests.
 *
 * The URL is decoded in place before the access handler sees it, so its
 * raw form (the URI log callback) is where an encoded NUL (%00) shows; a
 * raw NUL byte is told from what follows the URL's C string there (see
 * srv_http_uri_seen).
 */
#include "server/http_headers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char srv_http_url_marks[2];

/* The walk over the headers: the three the first call reads, and the
 * bytes between one header's value and the next header's name, which
 * must all be NUL (see the file comment). */
typedef struct head_walk {
    srv_http_head *h;
    const char *lo, *hi; /* the request line and headers in libmicrohttpd's buffer */
    const char *end;     /* the end of the text seen so far (the version, a value) */
    const char *last_key;
} head_walk;

/* True when [from, to) lies in the buffer and holds NUL bytes only. */
static bool only_nul(const head_walk *w, const char *from, const char *to)
{
    if (from < w->lo || to > w->hi || from > to)
        return false;
    for (const char *p = from; p < to; p++)
        if (*p)
            return false;
    return true;
}

static enum MHD_Result head_value(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    head_walk *w = cls;
    srv_http_head *h = w->h;
    if (!h->nul_header && w->lo) {
        /* the line before this one ended where its text ends (a value
         * with a NUL inside would show its hidden rest here); a value
         * outside the buffer was copied, as a folded line is */
        if (!only_nul(w, w->end, key) || !value || value < key || value > w->hi) {
            h->nul_header = w->last_key ? w->last_key : key;
            if (!value || value < key || value > w->hi)
                h->nul_header = key;
        }
        w->end = value ? value + strlen(value) : key + strlen(key);
        w->last_key = key;
    }
    switch (key[0]) {
    case 'C':
    case 'c':
        if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
            break;
        if (h->length && (!value || strcmp(value, h->length) != 0))
            h->length_conflict = true; /* which body ends where? (request smuggling) */
        else if (!h->length)
            h->length = value;
        break;
    case 'O':
    case 'o':
        if (!h->origin && strcasecmp(key, MHD_HTTP_HEADER_ORIGIN) == 0)
            h->origin = value;
        break;
    case 'E':
    case 'e':
        if (value && strcasecmp(key, "Expect") == 0 && strcasecmp(value, "100-continue") == 0)
            h->expect_continue = true;
        break;
    case 'T':
    case 't':
        if (!h->transfer_encoding && strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
            h->transfer_encoding = value != NULL;
        break;
    default:
        break;
    }
    return MHD_YES;
}

void srv_http_head_read(struct MHD_Connection *conn, const char *method, const char *version,
                        srv_http_head *h)
{
    memset(h, 0, sizeof *h);
    head_walk w = {.h = h};
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (i && method && version && version > method) {
        w.lo = method;
        w.hi = method + i->header_size;
        w.end = version + strlen(version);
    }
    MHD_get_connection_values(conn, MHD_HEADER_KIND, head_value, &w);
    /* the last line, and the empty one that ends the headers */
    if (w.lo && !h->nul_header && !only_nul(&w, w.end, w.hi))
        h->nul_header = w.last_key ? w.last_key : "(the request line)";
}

typedef struct list_join {
    const char *name;
    char *out;
    size_t len, cap;
    bool failed, found;
} list_join;

static enum MHD_Result join_value(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    list_join *j = cls;
    if (j->failed || !value || strcasecmp(key, j->name) != 0)
        return MHD_YES;
    size_t n = strlen(value), need = j->len + (j->found ? 2 : 0) + n + 1;
    if (need > j->cap) {
        size_t cap = j->cap ? j->cap : 64;
        while (cap < need)
            cap *= 2;
        char *p = realloc(j->out, cap);
        if (!p) {
            j->failed = true;
            return MHD_NO;
        }
        j->out = p;
        j->cap = cap;
    }
    if (j->found) {
        memcpy(j->out + j->len, ", ", 2);
        j->len += 2;
    }
    memcpy(j->out + j->len, value, n + 1);
    j->len += n;
    j->found = true;
    return MHD_YES;
}

char *srv_http_header_list(struct MHD_Connection *conn, const char *name)
{
    list_join j = {.name = name};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, join_value, &j);
    if (j.failed) {
        free(j.out);
        return NULL;
    }
    return j.out;
}

/* The walk of a query's parameters (srv_http_query_check). */
typedef struct query_walk {
    const char *name, *path;
    char *msg;
    size_t n;
    bool seen, bad;
} query_walk;

static enum MHD_Result query_value(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    query_walk *w = cls;
    if (!w->name || strcmp(key, w->name) != 0) {
        if (w->name)
            snprintf(w->msg, w->n, "unknown query parameter \"%.64s\": %.64s takes only ?%s", key,
                     w->path, w->name);
        else
            snprintf(w->msg, w->n, "unknown query parameter \"%.64s\": %.64s takes none", key,
                     w->path);
    } else if (w->seen) {
        snprintf(w->msg, w->n, "query parameter \"%s\" is given more than once", key);
    } else if (!value) {
        snprintf(w->msg, w->n, "query parameter \"%s\" has no value", key);
    } else {
        w->seen = true;
        return MHD_YES;
    }
    w->bad = true;
    return MHD_NO;
}

bool srv_http_query_check(struct MHD_Connection *conn, const char *name, const char *path,
                          char *msg, size_t n)
{
    query_walk w = {name, path, msg, n, false, false};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, query_value, &w);
    return !w.bad;
}

/* Whether s starts with the version libmicrohttpd accepts, NUL-ended. */
static bool is_version(const char *s)
{
    return strncmp(s, "HTTP/1.", 7) == 0 && (s[7] == '0' || s[7] == '1') && s[8] == '\0';
}

void *srv_http_uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
    if (!uri)
        return NULL;
    for (const char *p = strchr(uri, '%'); p; p = strchr(p + 1, '%'))
        if (p[1] == '0' && p[2] == '0')
            return SRV_HTTP_NUL_URL;
    /* A raw NUL: libmicrohttpd has cut the request line into the URL, a
     * NUL where the last space was, and the version (NUL-ended, as is the
     * line). A URL without NUL is followed right away by the version and
     * the line's end; one with a NUL by the rest of the URL, or, when that
     * rest is a version itself ("/x\0HTTP/1.1 HTTP/1.1"), by the real
     * version. Only bytes of the request line are read (its end is a NUL). */
    const char *v = uri + strlen(uri) + 1;
    if (!is_version(v) || strncmp(v + 9, "HTTP/1.", 7) == 0)
        return SRV_HTTP_NUL_URL;
    return memchr(uri, '?', (size_t)(v - 1 - uri)) ? SRV_HTTP_QUERY_URL : NULL;
}
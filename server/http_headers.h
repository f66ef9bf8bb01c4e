/*
 * http_headers.h: a request's headers and URL as libmicrohttpd holds them
 * (server/http_headers.c): the headers the access handler's first call
 * reads in one pass, the NUL bytes no header or URL may hold, and a list
 * header read across every line that carries it. Loop thread only (inside
 * libmicrohttpd's callbacks, or while the request is being handled).
 */
#ifndef SRV_HTTP_HEADERS_H
#define SRV_HTTP_HEADERS_H

#include <microhttpd.h>
#include <stdbool.h>

/* What the first call of the access handler reads of the headers, in one
 * pass (libmicrohttpd's lookup walks them once per name): the first of
 * each, as MHD_lookup_connection_value would give it. */
typedef struct srv_http_head {
    const char *length;     /* Content-Length */
    bool length_conflict;   /* another Content-Length says something else */
    const char *origin;     /* Origin */
    bool transfer_encoding; /* Transfer-Encoding is there (with a value) */
    bool expect_continue;   /* Expect: 100-continue (the client waits before its body) */
    /* the name of the first header whose line holds a NUL byte with more
     * after it (libmicrohttpd gives C strings cut at the NUL: "Bearer
     * <token>\0junk" would read as the token), or of a folded one; NULL
     * when there is none */
    const char *nul_header;
} srv_http_head;

/* Reads conn's headers into *h; method and version are the access
 * handler's (they point into libmicrohttpd's buffer of the request). */
void srv_http_head_read(struct MHD_Connection *conn, const char *method, const char *version,
                        srv_http_head *h);

/* Every value of the header name (RFC 9110 5.3: a list may come on several
 * lines, which mean the same as one line of their values joined by ", "),
 * joined so. malloc'd (the caller frees it), or NULL when there is no such
 * header or memory ran out. Bounded by the request's headers, which
 * --connection-memory bounds. */
char *srv_http_header_list(struct MHD_Connection *conn, const char *name);

/* Whether conn's query holds only the parameter name (NULL: none), once
 * and with a value; if not, false with msg (n bytes) saying what is wrong,
 * naming the parameter and what path (for the message) takes. */
bool srv_http_query_check(struct MHD_Connection *conn, const char *name, const char *path,
                          char *msg, size_t n);

/* libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK: called with the request's
 * raw URL before it is decoded; its value becomes the request's first
 * con_cls. A URL holding an encoded NUL (%00, in the path or the query)
 * gets SRV_HTTP_NUL_URL, which the access handler answers 400: decoded,
 * the NUL would cut the path short ("/index.html%00.x" served the page).
 * Any other URL with a query gets SRV_HTTP_QUERY_URL, so that a request
 * without one skips the walk of its parameters (srv_http_query_check). */
void *srv_http_uri_seen(void *cls, const char *uri, struct MHD_Connection *conn);
extern const char srv_http_url_marks[2];
#define SRV_HTTP_NUL_URL ((void *)&srv_http_url_marks[0])
#define SRV_HTTP_QUERY_URL ((void *)&srv_http_url_marks[1])

#endif /* SRV_HTTP_HEADERS_H */

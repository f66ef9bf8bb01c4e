/*
 * web.h: the live page's files, read once at startup and served from memory
 * (GET / and GET /NAME, see server/http_handlers.c).
 *
 * ikd serves the page only when started with --web DIR. srv_web_load reads
 * the regular files directly inside DIR (no subdirectories, which are
 * refused) into memory; requests are then answered by an exact name lookup
 * in that table, so no request ever reaches the file system and no path can
 * leave DIR: a name has no '/' and does not start with '.', "/" means
 * "/index.html", and everything else is 404. What is held is bounded:
 * at most SRV_WEB_MAX_FILES files, each at most SRV_WEB_MAX_FILE bytes,
 * SRV_WEB_MAX_TOTAL bytes in all. The content type comes from the file's
 * extension (one table, SRV_WEB_TYPES); a file of another extension is
 * refused at load, so nothing is ever served as a guessed type.
 *
 * MEMORY: srv_web_load allocates the table; srv_web_free releases it. The
 * bytes stay valid until then (responses point into them).
 * THREADS: load and free on one thread; srv_web_find on any thread once
 * loaded (the table is read-only).
 */
#ifndef SRV_WEB_H
#define SRV_WEB_H

#include <stddef.h>

#define SRV_WEB_MAX_FILES 64
#define SRV_WEB_MAX_FILE ((size_t)8 << 20)
#define SRV_WEB_MAX_TOTAL ((size_t)32 << 20)

/* Extension -> Content-Type. */
#define SRV_WEB_TYPES(X)                                  \
    X(".html", "text/html; charset=utf-8")                \
    X(".js", "text/javascript; charset=utf-8")            \
    X(".mjs", "text/javascript; charset=utf-8")           \
    X(".css", "text/css; charset=utf-8")                  \
    X(".json", "application/json")                        \
    X(".urdf", "application/xml")                         \
    X(".bvh", "text/plain; charset=utf-8")                \
    X(".txt", "text/plain; charset=utf-8")                \
    X(".svg", "image/svg+xml")                            \
    X(".png", "image/png")                                \
    X(".ico", "image/x-icon")

typedef struct srv_web_file {
    char *name;               /* "index.html" */
    const char *content_type; /* from SRV_WEB_TYPES */
    char *data;
    size_t len;
} srv_web_file;

typedef struct srv_web srv_web;

/* Reads dir's files. Returns 0 and *out, or -1 with a one-line reason in
 * err (naming the file and the bound or rule it broke); on error nothing
 * is allocated. */
int srv_web_load(const char *dir, srv_web **out, char *err, size_t errsize);

/* The file a request path names ("/", "/app.js"), or NULL. web may be NULL
 * (no --web): then always NULL. */
const srv_web_file *srv_web_find(const srv_web *web, const char *url);

/* The content type for a file name, or NULL if its extension is not served. */
const char *srv_web_content_type(const char *name);

/* Number of files and bytes held. */
size_t srv_web_count(const srv_web *web);
size_t srv_web_bytes(const srv_web *web);

void srv_web_free(srv_web *web);

#endif /* SRV_WEB_H */

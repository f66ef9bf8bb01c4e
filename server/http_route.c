/*
 * http_route.c: the route table (contract in http_route.h): an array of
 * the routes added at start-up, each copied with its Allow text, looked up
 * in order. A dozen routes: a linear walk with one strcmp each is what a
 * request costs here.
 */
#include "server/http_route.h"

#include <stdlib.h>
#include <string.h>

#define ALLOW_MAX 40 /* "GET, HEAD, POST, DELETE" and its NUL fit */

typedef struct route_entry {
    srv_route r;
    char allow[ALLOW_MAX];
} route_entry;

struct srv_routes {
    route_entry *e;
    size_t n;
};

srv_method srv_http_method_of(const char *name)
{
    /* by the first letter, then the whole name (every request passes) */
    switch (name[0]) {
    case 'G':
        return strcmp(name, "GET") == 0 ? SRV_M_GET : SRV_M_OTHER;
    case 'P':
        return strcmp(name, "POST") == 0 ? SRV_M_POST : SRV_M_OTHER;
    case 'H':
        return strcmp(name, "HEAD") == 0 ? SRV_M_HEAD : SRV_M_OTHER;
    case 'D':
        return strcmp(name, "DELETE") == 0 ? SRV_M_DELETE : SRV_M_OTHER;
    case 'O':
        return strcmp(name, "OPTIONS") == 0 ? SRV_M_OPTIONS : SRV_M_OTHER;
    default:
        return SRV_M_OTHER;
    }
}

static void allow_text(unsigned methods, char *out)
{
    static const struct {
        unsigned bit;
        const char *name;
    } order[] = {
        {SRV_M_GET, "GET"}, {SRV_M_HEAD, "HEAD"}, {SRV_M_POST, "POST"}, {SRV_M_DELETE, "DELETE"}};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!(methods & order[i].bit))
            continue;
        if (out[0])
            strcat(out, ", ");
        strcat(out, order[i].name);
    }
}

int srv_http_route_add(srv_ctx *ctx, const srv_route *r)
{
    if (!r || !r->label || !(r->handle || r->upgrade) || !(r->path || r->match))
        return SRV_EINVAL;
    srv_routes *t = ctx->routes;
    if (!t && !(t = ctx->routes = calloc(1, sizeof *t)))
        return SRV_ENOMEM;
    route_entry *e = realloc(t->e, (t->n + 1) * sizeof *e);
    if (!e)
        return SRV_ENOMEM;
    t->e = e;
    /* the entries moved: every copy's Allow points into its own entry */
    for (size_t i = 0; i < t->n; i++)
        e[i].r.allow = e[i].allow;
    e[t->n].r = *r;
    allow_text(r->methods, e[t->n].allow);
    e[t->n].r.allow = e[t->n].allow;
    t->n++;
    return SRV_OK;
}

static bool serves(const srv_ctx *ctx, const srv_route *r, const char *url)
{
    if (!r->path)
        return r->match(ctx, url);
    if (!r->prefix)
        return strcmp(url, r->path) == 0;
    size_t n = strlen(r->path);
    return strncmp(url, r->path, n) == 0 && url[n] && !strchr(url + n, '/');
}

const srv_route *srv_http_route_find(const srv_ctx *ctx, const char *url)
{
    const srv_routes *t = ctx->routes;
    for (size_t i = 0; t && i < t->n; i++)
        if (serves(ctx, &t->e[i].r, url))
            return &t->e[i].r;
    return NULL;
}

void srv_http_routes_free(srv_ctx *ctx)
{
    srv_routes *t = ctx->routes;
    if (!t)
        return;
    ctx->routes = NULL;
    free(t->e);
    free(t);
}

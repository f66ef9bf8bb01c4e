/*
 * web.c: the live page's files in memory (see web.h for the contract).
 *
 * Loading walks DIR once with opendir/readdir, checks each entry's name,
 * type and size against the rules of web.h, and reads it whole; the files
 * are kept sorted by name so that a lookup is a binary search. Names are
 * plain: letters, digits, '_', '-' and '.', not starting with '.'. Hidden
 * entries (a leading '.') are skipped rather than refused, as editors and
 * tools leave them behind.
 */
#include "server/web.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct srv_web {
    srv_web_file *files;
    size_t n;
    size_t bytes;
};

static const struct {
    const char *ext;
    const char *type;
} types[] = {
#define X(ext, type) {ext, type},
    SRV_WEB_TYPES(X)
#undef X
};

const char *srv_web_content_type(const char *name)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    if (!dot || dot == name)
        return NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return NULL;
}

static int name_ok(const char *s)
{
    if (!*s || *s == '.' || strlen(s) > 128)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-' || *s == '.'))
            return 0;
    return 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const srv_web_file *)a)->name, ((const srv_web_file *)b)->name);
}

/* Reads exactly len bytes of path into a new buffer; NULL on error. */
static char *read_whole(const char *path, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(len ? len : 1);
    if (buf && fread(buf, 1, len, f) != len) {
        free(buf);
        buf = NULL;
    }
    if (buf && fgetc(f) != EOF) { /* grew since stat: refuse rather than cut */
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

int srv_web_load(const char *dir, srv_web **out, char *err, size_t errsize)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errsize, "--web %s: %s", dir, strerror(errno));
        return -1;
    }
    srv_web *w = calloc(1, sizeof *w);
    if (w)
        w->files = calloc(SRV_WEB_MAX_FILES, sizeof *w->files);
    if (!w || !w->files) {
        snprintf(err, errsize, "--web %s: out of memory", dir);
        goto fail;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (name[0] == '.')
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
            snprintf(err, errsize, "--web %s: path too long", dir);
            goto fail;
        }
        struct stat st;
        if (stat(path, &st) != 0) {
            snprintf(err, errsize, "--web: %s: %s", path, strerror(errno));
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errsize, "--web: %s is not a regular file (only the files directly "
                                   "inside the directory are served)", path);
            goto fail;
        }
        const char *type = srv_web_content_type(name);
        if (!name_ok(name) || !type) {
            snprintf(err, errsize, "--web: %s: not served (names are letters, digits, '_', '-', "
                                   "'.'; extensions .html .js .mjs .css .json .urdf .bvh .txt "
                                   ".svg .png .ico)", path);
            goto fail;
        }
        if (w->n == SRV_WEB_MAX_FILES) {
            snprintf(err, errsize, "--web %s: more than %d files", dir, SRV_WEB_MAX_FILES);
            goto fail;
        }
        size_t len = (size_t)st.st_size;
        if (len > SRV_WEB_MAX_FILE || len > SRV_WEB_MAX_TOTAL - w->bytes) {
            snprintf(err, errsize, "--web: %s: over the bound (%zu bytes a file, %zu in all)",
                     path, SRV_WEB_MAX_FILE, SRV_WEB_MAX_TOTAL);
            goto fail;
        }
        srv_web_file *f = &w->files[w->n];
        f->name = strdup(name);
        f->data = f->name ? read_whole(path, len) : NULL;
        if (!f->name || !f->data) {
            free(f->name);
            f->name = NULL;
            snprintf(err, errsize, "--web: cannot read %s", path);
            goto fail;
        }
        f->len = len;
        f->content_type = type;
        w->n++;
        w->bytes += len;
    }
    closedir(d);
    d = NULL;
    qsort(w->files, w->n, sizeof *w->files, by_name);
    *out = w;
    return 0;
fail:
    if (d)
        closedir(d);
    srv_web_free(w);
    return -1;
}

const srv_web_file *srv_web_find(const srv_web *web, const char *url)
{
    if (!web || !url || url[0] != '/')
        return NULL;
    const char *name = url[1] ? url + 1 : "index.html";
    if (!name_ok(name))
        return NULL;
    srv_web_file key = {.name = (char *)name};
    return bsearch(&key, web->files, web->n, sizeof *web->files, by_name);
}

size_t srv_web_count(const srv_web *web)
{
    return web ? web->n : 0;
}

size_t srv_web_bytes(const srv_web *web)
{
    return web ? web->bytes : 0;
}

void srv_web_free(srv_web *web)
{
    if (!web)
        return;
    for (size_t i = 0; i < web->n; i++) {
        free(web->files[i].name);
        free(web->files[i].data);
    }
    free(web->files);
    free(web);
}

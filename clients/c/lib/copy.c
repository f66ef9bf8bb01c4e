/*
 * copy.c: results and ticks copied out of a connection's arena into one
 * allocation the caller owns (ikd_result_copy, ikd_tick_copy), and their
 * release. Each copy is measured first and then filled, so that it is a
 * single malloc and its _free a single free().
 */
#include <stdlib.h>

#include "internal.h"

/* A copier: measures when base is NULL, fills otherwise. */
typedef struct copier {
    char *base;
    size_t off;
} copier;

static void *take(copier *c, size_t n)
{
    size_t at = (c->off + 15) & ~(size_t)15;
    c->off = at + n;
    return c->base ? c->base + at : NULL;
}

static const void *copy_bytes(copier *c, const void *src, size_t n)
{
    if (!src || !n)
        return NULL;
    void *p = take(c, n);
    if (p)
        memcpy(p, src, n);
    return p;
}

static const char *copy_str(copier *c, const char *s)
{
    return s ? copy_bytes(c, s, strlen(s) + 1) : NULL;
}

/* The arrays and strings of src into c; dst (when filling) gets them. */
static void copy_result_parts(copier *c, const ikd_result *src, ikd_result *dst)
{
    ikd_result tmp;
    if (!dst)
        dst = &tmp;
    *dst = *src;
    dst->status_text = copy_str(c, src->status_text);
    dst->reason = copy_str(c, src->reason);
    dst->cause = copy_str(c, src->cause);
    dst->joints = copy_bytes(c, src->joints, src->joint_count * sizeof(double));
    dst->positions = copy_bytes(c, src->positions,
                                src->position_count * (size_t)src->position_dim * sizeof(double));
    dst->rotations = copy_bytes(c, src->rotations, src->rotation_count * 4 * sizeof(double));
    dst->local_rotations =
        copy_bytes(c, src->local_rotations, src->local_rotation_count * 4 * sizeof(double));
    dst->tips = copy_bytes(c, src->tips, src->tip_count * sizeof(ikd_tip));
    dst->solutions = copy_bytes(c, src->solutions,
                                src->solution_list_count * src->solution_width * sizeof(double));
}

ikd_result *ikd_result_copy(const ikd_result *r)
{
    if (!r)
        return NULL;
    copier m = {NULL, 0};
    take(&m, sizeof(ikd_result));
    copy_result_parts(&m, r, NULL);
    copier f = {malloc(m.off), 0};
    if (!f.base)
        return NULL;
    ikd_result *out = take(&f, sizeof *out);
    copy_result_parts(&f, r, out);
    return out;
}

void ikd_result_free(ikd_result *r)
{
    free(r);
}

static void copy_tick_parts(copier *c, const ikd_tick *src, ikd_tick *dst)
{
    ikd_tick tmp;
    if (!dst)
        dst = &tmp;
    *dst = *src;
    ikd_tick_entry *entries = take(c, src->count * sizeof(ikd_tick_entry));
    dst->entries = entries;
    for (size_t i = 0; i < src->count; i++) {
        const ikd_tick_entry *e = &src->entries[i];
        ikd_tick_entry ne = *e;
        ne.stream = copy_str(c, e->stream);
        if (e->result) {
            ikd_result *res = take(c, sizeof *res);
            copy_result_parts(c, e->result, res);
            ne.result = res;
        }
        if (e->error)
            ne.error = copy_bytes(c, e->error, sizeof(ikd_error));
        if (entries)
            entries[i] = ne;
    }
}

ikd_tick *ikd_tick_copy(const ikd_tick *t)
{
    if (!t)
        return NULL;
    copier m = {NULL, 0};
    take(&m, sizeof(ikd_tick));
    copy_tick_parts(&m, t, NULL);
    copier f = {malloc(m.off), 0};
    if (!f.base)
        return NULL;
    ikd_tick *out = take(&f, sizeof *out);
    copy_tick_parts(&f, t, out);
    return out;
}

void ikd_tick_free(ikd_tick *t)
{
    free(t);
}

void ikd_text_free(char *text)
{
    free(text);
}

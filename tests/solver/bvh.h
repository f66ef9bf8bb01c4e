/*
 * bvh.h: a small BVH reader for the solver tests (test_bvh_walk.c,
 * test_ik_tree_bvh.c): the hierarchy (ROOT/JOINT/End Site, OFFSET,
 * CHANNELS) and the motion table, and forward kinematics of a frame as
 * the BVH definition gives it: a joint's local transform is its OFFSET
 * (plus the position channels) and the product of its rotation channels in
 * the order listed (ZYX: R = Rz Ry Rx), composed down from the root.
 * Header-only; every function is static inline so that a test using part
 * of it compiles warning-free. The motion table is malloc'd by bvh_parse.
 */
#ifndef TESTS_SOLVER_BVH_H
#define TESTS_SOLVER_BVH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_math.h"

#define MAX_JOINTS 64

/* ---- a small BVH reader ----------------------------------------------- */

enum { CH_XPOS, CH_YPOS, CH_ZPOS, CH_XROT, CH_YROT, CH_ZROT };

typedef struct bvh_joint {
    char name[48];
    int parent;
    ik_vec3 offset;
    int nch;
    int ch[6];
    int first; /* index of its first channel in a frame */
} bvh_joint;

typedef struct bvh {
    bvh_joint j[MAX_JOINTS];
    int njoints;
    int nchannels;
    int nframes;
    double frame_time;
    double *motion; /* nframes * nchannels, malloc'd */
} bvh;

typedef struct lexer {
    const char *p;
} lexer;

static inline bool next_token(lexer *lx, char *tok, size_t cap)
{
    while (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r' || *lx->p == '\n')
        lx->p++;
    if (!*lx->p)
        return false;
    size_t n = 0;
    while (*lx->p && *lx->p != ' ' && *lx->p != '\t' && *lx->p != '\r' && *lx->p != '\n') {
        if (n + 1 < cap)
            tok[n++] = *lx->p;
        lx->p++;
    }
    tok[n] = 0;
    return true;
}

static inline bool next_number(lexer *lx, double *v)
{
    char tok[64], *end;
    if (!next_token(lx, tok, sizeof tok))
        return false;
    *v = strtod(tok, &end);
    return *end == 0 && end != tok;
}

static inline bool expect(lexer *lx, const char *want)
{
    char tok[64];
    return next_token(lx, tok, sizeof tok) && strcmp(tok, want) == 0;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            if (buf)
                buf[n] = 0;
        }
    }
    fclose(f);
    return buf;
}

/* Parses a BVH file into *b. Returns false on any syntax error. */
static inline bool bvh_parse(const char *text, bvh *b)
{
    lexer lx = {text};
    char tok[64];
    int stack[MAX_JOINTS + 2], depth = 0;
    bool in_end_site = false;
    memset(b, 0, sizeof *b);
    if (!expect(&lx, "HIERARCHY"))
        return false;
    for (;;) {
        if (!next_token(&lx, tok, sizeof tok))
            return false;
        if (!strcmp(tok, "ROOT") || !strcmp(tok, "JOINT")) {
            if (b->njoints == MAX_JOINTS || depth > MAX_JOINTS)
                return false;
            bvh_joint *j = &b->j[b->njoints];
            if (!next_token(&lx, j->name, sizeof j->name))
                return false;
            j->parent = depth > 0 ? stack[depth - 1] : -1;
            if ((!strcmp(tok, "ROOT")) != (depth == 0))
                return false;
            if (!expect(&lx, "{") || !expect(&lx, "OFFSET") || !next_number(&lx, &j->offset.x) ||
                !next_number(&lx, &j->offset.y) || !next_number(&lx, &j->offset.z) ||
                !expect(&lx, "CHANNELS"))
                return false;
            double nch;
            if (!next_number(&lx, &nch) || nch < 0 || nch > 6)
                return false;
            j->nch = (int)nch;
            j->first = b->nchannels;
            for (int k = 0; k < j->nch; k++) {
                static const char *names[] = {"Xposition", "Yposition", "Zposition",
                                              "Xrotation", "Yrotation", "Zrotation"};
                if (!next_token(&lx, tok, sizeof tok))
                    return false;
                j->ch[k] = -1;
                for (int c = 0; c < 6; c++)
                    if (!strcmp(tok, names[c]))
                        j->ch[k] = c;
                if (j->ch[k] < 0)
                    return false;
            }
            b->nchannels += j->nch;
            stack[depth++] = b->njoints++;
        } else if (!strcmp(tok, "End")) {
            double x;
            if (!expect(&lx, "Site") || !expect(&lx, "{") || !expect(&lx, "OFFSET") ||
                !next_number(&lx, &x) || !next_number(&lx, &x) || !next_number(&lx, &x))
                return false;
            in_end_site = true;
        } else if (!strcmp(tok, "}")) {
            if (in_end_site)
                in_end_site = false;
            else if (depth-- == 0)
                return false;
        } else if (!strcmp(tok, "MOTION")) {
            break;
        } else {
            return false;
        }
    }
    double nf;
    if (depth != 0 || !expect(&lx, "Frames:") || !next_number(&lx, &nf) || nf < 1 ||
        !expect(&lx, "Frame") || !expect(&lx, "Time:") || !next_number(&lx, &b->frame_time))
        return false;
    b->nframes = (int)nf;
    size_t total = (size_t)b->nframes * (size_t)b->nchannels;
    b->motion = malloc(total * sizeof *b->motion);
    if (!b->motion)
        return false;
    for (size_t i = 0; i < total; i++) {
        if (!next_number(&lx, &b->motion[i])) {
            free(b->motion);
            b->motion = NULL;
            return false;
        }
    }
    return !next_token(&lx, tok, sizeof tok); /* nothing after the last frame */
}

static inline int bvh_find(const bvh *b, const char *name)
{
    for (int i = 0; i < b->njoints; i++)
        if (!strcmp(b->j[i].name, name))
            return i;
    return -1;
}

/* Joint i's local rotation and translation at frame f: channels applied in
 * the listed order, R = R_ch0 R_ch1 R_ch2 (ZYX: Rz Ry Rx), degrees. */
static inline void bvh_local(const bvh *b, int f, int i, ik_vec3 *t, ik_quat *q)
{
    const bvh_joint *j = &b->j[i];
    const double *v = &b->motion[(size_t)f * (size_t)b->nchannels + (size_t)j->first];
    *t = j->offset;
    *q = ik_quat_identity();
    for (int k = 0; k < j->nch; k++) {
        switch (j->ch[k]) {
        case CH_XPOS: t->x += v[k]; break;
        case CH_YPOS: t->y += v[k]; break;
        case CH_ZPOS: t->z += v[k]; break;
        default: {
            ik_vec3 axis = j->ch[k] == CH_XROT   ? ik_v3(1, 0, 0)
                           : j->ch[k] == CH_YROT ? ik_v3(0, 1, 0)
                                                 : ik_v3(0, 0, 1);
            *q = ik_quat_mul(*q, ik_quat_from_axis_angle(axis, v[k] * IK_PI / 180.0));
        }
        }
    }
}

/* FK of a set of local transforms (joint order: parents first). */
static inline void fk_globals(const bvh *b, const ik_vec3 *t, const ik_quat *q, ik_xform *g)
{
    for (int i = 0; i < b->njoints; i++) {
        ik_xform l = {t[i], q[i]};
        g[i] = b->j[i].parent < 0 ? l : ik_xform_mul(g[b->j[i].parent], l);
    }
}

static inline void bvh_frame_globals(const bvh *b, int f, ik_xform *g)
{
    ik_vec3 t[MAX_JOINTS];
    ik_quat q[MAX_JOINTS];
    for (int i = 0; i < b->njoints; i++)
        bvh_local(b, f, i, &t[i], &q[i]);
    fk_globals(b, t, q, g);
}

#endif /* TESTS_SOLVER_BVH_H */

/*
 * decode.c: ikd's answers into the typed structs of ikd/client.h: a
 * solve's result (proto/README.md, "Responses"), HTTP solve and batch
 * answers, chain descriptions, error objects, and the stream messages of
 * proto/STREAM.md (opened, solution, path_end, closed, tick_solution,
 * error, and any other type, which is kept whole for the caller).
 *
 * Members are read in any order; a member this client does not know is
 * skipped (checked, not kept), so that a newer ikd that adds members does
 * not break an older client. A member it knows with the wrong shape is an
 * error (IKD_E_BAD_ANSWER, naming the member and the byte offset).
 *
 * Everything decoded lives in the decoder's arena (ikd__dec): arrays are
 * collected in a scratch vector of their element type and copied into the
 * arena in one piece when they end, so that the arena's blocks never move
 * and a decoded answer is a handful of pointers into them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

void ikd__dec_reset(ikd__dec *d, size_t keep_max)
{
    ikd__arena_reset(&d->arena, keep_max);
    d->doubles.len = d->tips.len = d->results.len = d->entries.len = d->names.len = 0;
    ikd__buf_trim(&d->doubles, keep_max);
    ikd__buf_trim(&d->tips, keep_max);
    ikd__buf_trim(&d->results, keep_max);
    ikd__buf_trim(&d->entries, keep_max);
    ikd__buf_trim(&d->names, keep_max);
}

void ikd__dec_free(ikd__dec *d)
{
    ikd__arena_free(&d->arena);
    ikd__buf_free(&d->doubles);
    ikd__buf_free(&d->tips);
    ikd__buf_free(&d->results);
    ikd__buf_free(&d->entries);
    ikd__buf_free(&d->names);
}

size_t ikd__dec_memory(const ikd__dec *d)
{
    return d->arena.total + d->doubles.cap + d->tips.cap + d->results.cap + d->entries.cap +
           d->names.cap;
}

/* Moves the scratch vector's elements (of size each) into the arena. */
static int flush_scratch(ikd__dec *d, ikd__jr *r, ikd__buf *v, size_t start, size_t size,
                         const void **out, size_t *count)
{
    size_t bytes = v->len - start;
    *count = bytes / size;
    if (!bytes) {
        *out = NULL;
        return 0;
    }
    void *p = ikd__arena_alloc(&d->arena, bytes);
    if (!p)
        return ikd__jr_fail(r, "out of memory");
    memcpy(p, v->p + start, bytes);
    v->len = start;
    *out = p;
    return 0;
}

static inline int push(ikd__jr *r, ikd__buf *v, const void *e, size_t size)
{
    if (ikd__buf_put(v, e, size))
        return ikd__jr_fail(r, "out of memory");
    return 0;
}

/* [n numbers] into out. */
static int read_fixed(ikd__jr *r, double *out, int n)
{
    if (ikd__jr_array(r))
        return -1;
    int i = 0, more;
    while ((more = ikd__jr_more(r)) == 1) {
        if (i == n)
            return ikd__jr_fail(r, "too many numbers in an array");
        if (ikd__jr_number(r, &out[i++]))
            return -1;
    }
    if (more < 0)
        return -1;
    if (i != n)
        return ikd__jr_fail(r, "too few numbers in an array");
    return 0;
}

/* [numbers] into the arena. */
static int read_doubles(ikd__dec *d, ikd__jr *r, const double **out, size_t *count)
{
    size_t start = d->doubles.len;
    if (ikd__jr_array(r))
        return -1;
    int more;
    while ((more = ikd__jr_more(r)) == 1) {
        double v;
        if (ikd__jr_number(r, &v) || push(r, &d->doubles, &v, sizeof v))
            return -1;
    }
    if (more < 0)
        return -1;
    return flush_scratch(d, r, &d->doubles, start, sizeof(double), (const void **)out, count);
}

/* [[numbers], ...], every row of one width (want: that width, 0 any, -1
 * 2 or 3), flat into the arena. */
static int read_rows(ikd__dec *d, ikd__jr *r, int want, const double **out, size_t *rows,
                     size_t *width)
{
    size_t start = d->doubles.len;
    size_t w = 0, n = 0;
    if (ikd__jr_array(r))
        return -1;
    int more;
    while ((more = ikd__jr_more(r)) == 1) {
        size_t row_start = d->doubles.len;
        if (ikd__jr_array(r))
            return -1;
        int m;
        while ((m = ikd__jr_more(r)) == 1) {
            double v;
            if (ikd__jr_number(r, &v) || push(r, &d->doubles, &v, sizeof v))
                return -1;
        }
        if (m < 0)
            return -1;
        size_t rw = (d->doubles.len - row_start) / sizeof(double);
        if (n == 0)
            w = rw;
        if (rw != w || (want > 0 && rw != (size_t)want) || (want < 0 && rw != 2 && rw != 3) ||
            rw == 0)
            return ikd__jr_fail(r, "an array of rows of the wrong width");
        n++;
    }
    if (more < 0)
        return -1;
    size_t count;
    if (flush_scratch(d, r, &d->doubles, start, sizeof(double), (const void **)out, &count))
        return -1;
    *rows = n;
    *width = w;
    return 0;
}

/* ["text", ...] into the arena. */
static int read_names(ikd__dec *d, ikd__jr *r, const char *const **out, size_t *count)
{
    size_t start = d->names.len;
    if (ikd__jr_array(r))
        return -1;
    int more;
    while ((more = ikd__jr_more(r)) == 1) {
        const char *s;
        if (ikd__jr_string(r, &s, NULL) || push(r, &d->names, &s, sizeof s))
            return -1;
    }
    if (more < 0)
        return -1;
    return flush_scratch(d, r, &d->names, start, sizeof(const char *), (const void **)out, count);
}

static ikd_status status_of(const char *s)
{
    static const struct {
        const char *word;
        ikd_status st;
    } map[] = {{"success", IKD_STATUS_SUCCESS},
               {"no_ik_solution", IKD_STATUS_NO_IK_SOLUTION},
               {"timed_out", IKD_STATUS_TIMED_OUT},
               {"invalid_goal_constraints", IKD_STATUS_INVALID_GOAL_CONSTRAINTS},
               {"failure", IKD_STATUS_FAILURE}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(s, map[i].word) == 0)
            return map[i].st;
    return IKD_STATUS_OTHER;
}

static int read_int(ikd__jr *r, int *out)
{
    long long v;
    if (ikd__jr_integer(r, &v))
        return -1;
    if (v < -2147483647LL - 1 || v > 2147483647LL)
        return ikd__jr_fail(r, "an integer out of range");
    *out = (int)v;
    return 0;
}

static int read_tip(ikd__jr *r, ikd_tip *t)
{
    memset(t, 0, sizeof *t);
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        int rc;
        if (IKD__KEY(k, n, "status")) {
            const char *s;
            rc = ikd__jr_string(r, &s, NULL);
            if (!rc) {
                t->status = status_of(s);
                t->has |= IKD_HAS_STATUS;
            }
        } else if (IKD__KEY(k, n, "code")) {
            rc = read_int(r, &t->code);
            t->has |= IKD_HAS_CODE;
        } else if (IKD__KEY(k, n, "position")) {
            rc = read_fixed(r, t->position, 3);
        } else if (IKD__KEY(k, n, "orientation")) {
            rc = read_fixed(r, t->orientation, 4);
        } else if (IKD__KEY(k, n, "position_error")) {
            rc = ikd__jr_number(r, &t->position_error);
            t->has |= IKD_HAS_POSITION_ERROR;
        } else if (IKD__KEY(k, n, "orientation_error")) {
            rc = ikd__jr_number(r, &t->orientation_error);
            t->has |= IKD_HAS_ORIENTATION_ERROR;
        } else {
            rc = ikd__jr_skip(r);
        }
        if (rc)
            return -1;
    }
    return more;
}

static int read_tip_pose(ikd__jr *r, ikd_result *out)
{
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        int rc;
        if (IKD__KEY(k, n, "position"))
            rc = read_fixed(r, out->tip_position, 3);
        else if (IKD__KEY(k, n, "orientation"))
            rc = read_fixed(r, out->tip_orientation, 4);
        else
            rc = ikd__jr_skip(r);
        if (rc)
            return -1;
    }
    return more;
}

/* One member of a result: 1 when the key is a result member (read), 0
 * when it is not (nothing consumed), -1 on error. */
static int result_member(ikd__dec *d, ikd__jr *r, const char *k, size_t n, ikd_result *out)
{
    size_t width;
    int rc;
    switch (k[0]) {
    case 'a':
        if (IKD__KEY(k, n, "arrived")) {
            out->has |= IKD_HAS_ARRIVED;
            rc = ikd__jr_bool(r, &out->arrived);
            return rc ? -1 : 1;
        }
        break;
    case 'c':
        if (IKD__KEY(k, n, "code")) {
            out->has |= IKD_HAS_CODE;
            return read_int(r, &out->code) ? -1 : 1;
        }
        if (IKD__KEY(k, n, "cause")) {
            out->has |= IKD_HAS_CAUSE;
            return ikd__jr_string(r, &out->cause, NULL) ? -1 : 1;
        }
        break;
    case 'i':
        if (IKD__KEY(k, n, "iterations")) {
            out->has |= IKD_HAS_ITERATIONS;
            return ikd__jr_integer(r, &out->iterations) ? -1 : 1;
        }
        break;
    case 'j':
        if (IKD__KEY(k, n, "joints")) {
            out->has |= IKD_HAS_JOINTS;
            return read_doubles(d, r, &out->joints, &out->joint_count) ? -1 : 1;
        }
        break;
    case 'l':
        if (IKD__KEY(k, n, "local_rotations")) {
            out->has |= IKD_HAS_LOCAL_ROTATIONS;
            rc = read_rows(d, r, 4, &out->local_rotations, &out->local_rotation_count, &width);
            return rc ? -1 : 1;
        }
        break;
    case 'm':
        if (IKD__KEY(k, n, "max_joint_step")) {
            out->has |= IKD_HAS_MAX_JOINT_STEP;
            return ikd__jr_number(r, &out->max_joint_step) ? -1 : 1;
        }
        break;
    case 'o':
        if (IKD__KEY(k, n, "orientation_error")) {
            out->has |= IKD_HAS_ORIENTATION_ERROR;
            return ikd__jr_number(r, &out->orientation_error) ? -1 : 1;
        }
        break;
    case 'p':
        if (IKD__KEY(k, n, "positions")) {
            out->has |= IKD_HAS_POSITIONS;
            rc = read_rows(d, r, -1, &out->positions, &out->position_count, &width);
            out->position_dim = (int)width;
            return rc ? -1 : 1;
        }
        if (IKD__KEY(k, n, "position_error")) {
            out->has |= IKD_HAS_POSITION_ERROR;
            return ikd__jr_number(r, &out->position_error) ? -1 : 1;
        }
        break;
    case 'r':
        if (IKD__KEY(k, n, "reason")) {
            out->has |= IKD_HAS_REASON;
            return ikd__jr_string(r, &out->reason, NULL) ? -1 : 1;
        }
        if (IKD__KEY(k, n, "rotations")) {
            out->has |= IKD_HAS_ROTATIONS;
            rc = read_rows(d, r, 4, &out->rotations, &out->rotation_count, &width);
            return rc ? -1 : 1;
        }
        if (IKD__KEY(k, n, "restarts")) {
            out->has |= IKD_HAS_RESTARTS;
            return ikd__jr_integer(r, &out->restarts) ? -1 : 1;
        }
        break;
    case 's':
        if (IKD__KEY(k, n, "status")) {
            if (ikd__jr_string(r, &out->status_text, NULL))
                return -1;
            out->status = status_of(out->status_text);
            return 1;
        }
        if (IKD__KEY(k, n, "solutions")) {
            out->has |= IKD_HAS_SOLUTIONS;
            rc = read_rows(d, r, 0, &out->solutions, &out->solution_list_count,
                           &out->solution_width);
            return rc ? -1 : 1;
        }
        if (IKD__KEY(k, n, "solution_count")) {
            out->has |= IKD_HAS_SOLUTION_COUNT;
            return ikd__jr_integer(r, &out->solution_count) ? -1 : 1;
        }
        break;
    case 't':
        if (IKD__KEY(k, n, "time_ms")) {
            out->has |= IKD_HAS_TIME_MS;
            return ikd__jr_number(r, &out->time_ms) ? -1 : 1;
        }
        if (IKD__KEY(k, n, "tip")) {
            out->has |= IKD_HAS_TIP;
            return read_tip_pose(r, out) ? -1 : 1;
        }
        if (IKD__KEY(k, n, "tips")) {
            out->has |= IKD_HAS_TIPS;
            size_t start = d->tips.len;
            if (ikd__jr_array(r))
                return -1;
            int more;
            while ((more = ikd__jr_more(r)) == 1) {
                ikd_tip t;
                if (read_tip(r, &t) || push(r, &d->tips, &t, sizeof t))
                    return -1;
            }
            if (more < 0)
                return -1;
            rc = flush_scratch(d, r, &d->tips, start, sizeof(ikd_tip), (const void **)&out->tips,
                               &out->tip_count);
            return rc ? -1 : 1;
        }
        break;
    default:
        break;
    }
    return 0;
}

int ikd__read_result(ikd__dec *d, ikd__jr *r, ikd_result *out)
{
    memset(out, 0, sizeof *out);
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        int rc = result_member(d, r, k, n, out);
        if (rc < 0 || (rc == 0 && ikd__jr_skip(r)))
            return -1;
    }
    if (more < 0)
        return -1;
    if (!out->status_text)
        return ikd__jr_fail(r, "a result without status");
    return 0;
}

int ikd__read_error_object(ikd__jr *r, ikd_error *e)
{
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    bool has_code = false;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        const char *s;
        char *dst = NULL;
        size_t size = 0;
        if (IKD__KEY(k, n, "code")) {
            dst = e->wire_code;
            size = sizeof e->wire_code;
            has_code = true;
        } else if (IKD__KEY(k, n, "message")) {
            dst = e->message;
            size = sizeof e->message;
        } else if (IKD__KEY(k, n, "path")) {
            dst = e->path;
            size = sizeof e->path;
        }
        if (!dst) {
            if (ikd__jr_skip(r))
                return -1;
            continue;
        }
        if (ikd__jr_string(r, &s, NULL))
            return -1;
        ikd__strlcpy(dst, s, size);
    }
    if (more < 0)
        return -1;
    if (!has_code)
        return ikd__jr_fail(r, "an error without code");
    e->code = ikd_errcode_from_wire(e->wire_code);
    return 0;
}

/* ---- stream messages ---------------------------------------------------- */

static int read_entry(ikd__dec *d, ikd__jr *r, ikd_tick_entry *e)
{
    memset(e, 0, sizeof *e);
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    bool has_seq = false;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        int rc;
        if (IKD__KEY(k, n, "stream")) {
            rc = ikd__jr_string(r, &e->stream, NULL);
        } else if (IKD__KEY(k, n, "seq")) {
            rc = ikd__jr_integer(r, &e->seq);
            has_seq = true;
        } else if (IKD__KEY(k, n, "skipped")) {
            rc = ikd__jr_integer(r, &e->skipped);
        } else if (IKD__KEY(k, n, "result")) {
            ikd_result *res = ikd__arena_alloc(&d->arena, sizeof *res);
            if (!res)
                return ikd__jr_fail(r, "out of memory");
            rc = ikd__read_result(d, r, res);
            e->result = res;
        } else if (IKD__KEY(k, n, "error")) {
            ikd_error *err = ikd__arena_alloc(&d->arena, sizeof *err);
            if (!err)
                return ikd__jr_fail(r, "out of memory");
            memset(err, 0, sizeof *err);
            rc = ikd__read_error_object(r, err);
            e->error = err;
        } else {
            rc = ikd__jr_skip(r);
        }
        if (rc)
            return -1;
    }
    if (more < 0)
        return -1;
    /* an error names no stream when the target's was not a valid name, and
     * no seq when its seq was unreadable (STREAM.md): "" and has_seq false */
    if ((!e->result == !e->error) || (e->result && (!e->stream || !has_seq)))
        return ikd__jr_fail(r, "a tick answer entry needs one of result (with stream and seq), "
                               "error");
    if (!e->stream)
        e->stream = "";
    if (e->error) {
        ikd_error *err = (ikd_error *)e->error;
        ikd__strlcpy(err->stream, e->stream, sizeof err->stream);
        err->seq = e->seq;
        err->has_seq = has_seq;
    }
    return 0;
}

int ikd__decode_message(ikd__dec *d, const char *text, size_t len, size_t max_entries, ikd__msg *m,
                        ikd_error *err)
{
    memset(m, 0, sizeof *m);
    ikd__jr r;
    ikd__jr_init(&r, text, len, &d->arena);
    int rc = ikd__jr_object(&r);
    const char *k;
    size_t n;
    int more = -1;
    while (!rc && (more = ikd__jr_key(&r, &k, &n)) == 1) {
        if (IKD__KEY(k, n, "type")) {
            rc = ikd__jr_string(&r, &m->type, NULL);
        } else if (IKD__KEY(k, n, "stream")) {
            rc = ikd__jr_string(&r, &m->stream, NULL);
        } else if (IKD__KEY(k, n, "chain_id")) {
            rc = ikd__jr_string(&r, &m->chain_id, NULL);
        } else if (IKD__KEY(k, n, "seq")) {
            rc = ikd__jr_integer(&r, &m->seq);
            m->has_seq = !rc; /* a seq that cannot be read is none (not 0) */
        } else if (IKD__KEY(k, n, "skipped")) {
            rc = ikd__jr_integer(&r, &m->skipped);
            m->has_skipped = true;
        } else if (IKD__KEY(k, n, "index")) {
            rc = ikd__jr_integer(&r, &m->index);
            m->has_index = true;
        } else if (IKD__KEY(k, n, "count")) {
            rc = ikd__jr_integer(&r, &m->count);
        } else if (IKD__KEY(k, n, "sent")) {
            rc = ikd__jr_integer(&r, &m->sent);
        } else if (IKD__KEY(k, n, "completed")) {
            rc = ikd__jr_bool(&r, &m->completed);
        } else if (IKD__KEY(k, n, "result")) {
            rc = ikd__read_result(d, &r, &m->result);
            m->has_result = true;
        } else if (IKD__KEY(k, n, "error")) {
            rc = ikd__read_error_object(&r, &m->error);
            m->has_error = true;
        } else if (IKD__KEY(k, n, "solutions")) {
            size_t start = d->entries.len, count = 0;
            rc = ikd__jr_array(&r);
            int em = -1;
            while (!rc && (em = ikd__jr_more(&r)) == 1) {
                if (count++ == max_entries) {
                    char what[120];
                    snprintf(what, sizeof what,
                             "a tick answer of more than %zu entries (max_streams: a tick "
                             "holds at most that many targets)",
                             max_entries);
                    rc = ikd__jr_fail(&r, what);
                    break;
                }
                ikd_tick_entry e;
                rc = read_entry(d, &r, &e) || push(&r, &d->entries, &e, sizeof e);
            }
            if (!rc && em == 0)
                rc = flush_scratch(d, &r, &d->entries, start, sizeof(ikd_tick_entry),
                                   (const void **)&m->tick.entries, &m->tick.count);
            else
                rc = -1;
            m->has_solutions = true;
        } else {
            rc = ikd__jr_skip(&r);
        }
    }
    if (!rc && more == 0 && !ikd__jr_end(&r))
        rc = ikd__jr_fail(&r, "text after the message");
    if (!rc && more != 0)
        rc = -1;
    if (!rc && !m->type)
        rc = ikd__jr_fail(&r, "a message without type");
    if (rc)
        return ikd__fail(err, IKD_E_BAD_ANSWER, "a message from ikd that cannot be read: %s",
                         r.err);
    if (m->has_error) {
        ikd__strlcpy(m->error.stream, m->stream, sizeof m->error.stream);
        m->error.seq = m->seq;
        m->error.has_seq = m->has_seq;
    }
    m->tick.seq = m->seq;
    m->tick.skipped = m->skipped;
    return 0;
}

/* ---- HTTP answers ------------------------------------------------------- */

static int read_counts(ikd__jr *r, ikd_answer *a)
{
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    while ((more = ikd__jr_key(r, &k, &n)) == 1) {
        long long *dst = IKD__KEY(k, n, "success")          ? &a->counts_success
                         : IKD__KEY(k, n, "no_ik_solution") ? &a->counts_no_ik_solution
                         : IKD__KEY(k, n, "timed_out")      ? &a->counts_timed_out
                         : IKD__KEY(k, n, "other")          ? &a->counts_other
                                                            : NULL;
        if (dst ? ikd__jr_integer(r, dst) : ikd__jr_skip(r))
            return -1;
    }
    a->has_counts = true;
    return more;
}

int ikd__decode_answer(ikd__dec *d, const char *text, size_t len, ikd_answer *a, ikd_error *err)
{
    memset(a, 0, sizeof *a);
    ikd__jr r;
    ikd__jr_init(&r, text, len, &d->arena);
    ikd_result *single = ikd__arena_alloc(&d->arena, sizeof *single);
    if (!single)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    memset(single, 0, sizeof *single);
    bool batch = false;
    int rc = ikd__jr_object(&r), more = -1;
    const char *k;
    size_t n;
    while (!rc && (more = ikd__jr_key(&r, &k, &n)) == 1) {
        if (IKD__KEY(k, n, "chain_id")) {
            rc = ikd__jr_string(&r, &a->chain_id, NULL);
        } else if (IKD__KEY(k, n, "solver")) {
            rc = ikd__jr_string(&r, &a->solver, NULL);
        } else if (IKD__KEY(k, n, "units")) {
            rc = ikd__jr_string(&r, &a->units, NULL);
        } else if (IKD__KEY(k, n, "frame")) {
            rc = ikd__jr_string(&r, &a->frame, NULL);
        } else if (IKD__KEY(k, n, "joint_names") || IKD__KEY(k, n, "bone_names")) {
            rc = read_names(d, &r, &a->joint_names, &a->joint_name_count);
        } else if (IKD__KEY(k, n, "tip_names")) {
            rc = read_names(d, &r, &a->tip_names, &a->tip_name_count);
        } else if (IKD__KEY(k, n, "count")) {
            long long c;
            rc = ikd__jr_integer(&r, &c);
        } else if (IKD__KEY(k, n, "counts")) {
            rc = read_counts(&r, a);
        } else if (IKD__KEY(k, n, "results")) {
            batch = true;
            size_t start = d->results.len;
            rc = ikd__jr_array(&r);
            int rm = -1;
            while (!rc && (rm = ikd__jr_more(&r)) == 1) {
                ikd_result res;
                rc = ikd__read_result(d, &r, &res) || push(&r, &d->results, &res, sizeof res);
            }
            if (!rc && rm == 0)
                rc = flush_scratch(d, &r, &d->results, start, sizeof(ikd_result),
                                   (const void **)&a->results, &a->count);
            else
                rc = -1;
        } else {
            int m = result_member(d, &r, k, n, single);
            rc = m < 0 || (m == 0 && ikd__jr_skip(&r));
        }
    }
    if (!rc && more == 0 && !ikd__jr_end(&r))
        rc = ikd__jr_fail(&r, "text after the answer");
    if (!rc && more != 0)
        rc = -1;
    if (!rc && batch && a->count == 0) /* ikd refuses an empty batch */
        rc = ikd__jr_fail(&r, "a batch answer without results");
    if (!rc && !batch) {
        if (!single->status_text)
            rc = ikd__jr_fail(&r, "an answer with neither status nor results");
        a->results = single;
        a->count = 1;
    }
    if (rc)
        return ikd__fail(err, IKD_E_BAD_ANSWER, "an answer from ikd that cannot be read: %s",
                         r.err);
    return 0;
}

static int read_joint_infos(ikd__dec *d, ikd__jr *r, ikd_chain_info *c)
{
    /* the descriptions are few: collected in the results scratch's bytes */
    size_t start = d->results.len;
    if (ikd__jr_array(r))
        return -1;
    int more;
    while ((more = ikd__jr_more(r)) == 1) {
        ikd_joint_info j = {0};
        if (ikd__jr_object(r))
            return -1;
        const char *k;
        size_t n;
        int m;
        while ((m = ikd__jr_key(r, &k, &n)) == 1) {
            int rc;
            if (IKD__KEY(k, n, "type")) {
                rc = ikd__jr_string(r, &j.type, NULL);
            } else if (IKD__KEY(k, n, "lower")) {
                rc = ikd__jr_number(r, &j.lower);
                j.has_limits = true;
            } else if (IKD__KEY(k, n, "upper")) {
                rc = ikd__jr_number(r, &j.upper);
                j.has_limits = true;
            } else {
                rc = ikd__jr_skip(r);
            }
            if (rc)
                return -1;
        }
        if (m < 0 || push(r, &d->results, &j, sizeof j))
            return -1;
    }
    if (more < 0)
        return -1;
    size_t count;
    return flush_scratch(d, r, &d->results, start, sizeof(ikd_joint_info),
                         (const void **)&c->joints, &count);
}

static int read_closed_form(ikd__jr *r, ikd_chain_info *c)
{
    if (ikd__jr_object(r))
        return -1;
    const char *k;
    size_t n;
    int more;
    while ((more = ikd__jr_key(r, &k, &n)) == 1)
        if (IKD__KEY(k, n, "family") ? ikd__jr_string(r, &c->closed_form, NULL) : ikd__jr_skip(r))
            return -1;
    return more;
}

int ikd__decode_chain_info(ikd__dec *d, const char *text, size_t len, ikd_chain_info *c,
                           ikd_error *err)
{
    memset(c, 0, sizeof *c);
    ikd__jr r;
    ikd__jr_init(&r, text, len, &d->arena);
    int rc = ikd__jr_object(&r), more = -1;
    const char *k;
    size_t n;
    while (!rc && (more = ikd__jr_key(&r, &k, &n)) == 1) {
        if (IKD__KEY(k, n, "id"))
            rc = ikd__jr_string(&r, &c->id, NULL);
        else if (IKD__KEY(k, n, "kind"))
            rc = ikd__jr_string(&r, &c->kind, NULL);
        else if (IKD__KEY(k, n, "dof"))
            rc = ikd__jr_integer(&r, &c->dof);
        else if (IKD__KEY(k, n, "memory_bytes"))
            rc = ikd__jr_integer(&r, &c->memory_bytes);
        else if (IKD__KEY(k, n, "joint_names") || IKD__KEY(k, n, "bone_names"))
            rc = read_names(d, &r, &c->joint_names, &c->joint_count);
        else if (IKD__KEY(k, n, "solvers"))
            rc = read_names(d, &r, &c->solvers, &c->solver_count);
        else if (IKD__KEY(k, n, "joints"))
            rc = read_joint_infos(d, &r, c);
        else if (IKD__KEY(k, n, "closed_form"))
            rc = read_closed_form(&r, c);
        else
            rc = ikd__jr_skip(&r);
    }
    if (!rc && more != 0)
        rc = -1;
    if (!rc && !c->id)
        rc = ikd__jr_fail(&r, "a chain description without id");
    if (rc)
        return ikd__fail(err, IKD_E_BAD_ANSWER,
                         "a chain description from ikd that cannot be read: %s", r.err);
    c->text = text;
    c->text_len = len;
    return 0;
}

int ikd__decode_http_error(const char *text, size_t len, int status, ikd_error *e)
{
    ikd_error tmp;
    if (!e)
        e = &tmp;
    ikd__error_clear(e);
    ikd__arena arena = {0};
    ikd__jr r;
    ikd__jr_init(&r, text ? text : "", text ? len : 0, &arena);
    int rc = ikd__jr_object(&r), more = -1;
    bool found = false;
    const char *k;
    size_t n;
    while (!rc && (more = ikd__jr_key(&r, &k, &n)) == 1) {
        if (IKD__KEY(k, n, "error")) {
            rc = ikd__read_error_object(&r, e);
            found = !rc;
        } else {
            rc = ikd__jr_skip(&r);
        }
    }
    ikd__arena_free(&arena);
    if (rc || more != 0 || !found) {
        int shown = text ? (int)(len < 200 ? len : 200) : 0; /* text need not end in a NUL */
        ikd__fail(e, IKD_E_HTTP, "ikd answered HTTP %d without an error object%s%.*s", status,
                  shown ? ": " : "", shown, text ? text : "");
    }
    e->http_status = status;
    return e->code;
}

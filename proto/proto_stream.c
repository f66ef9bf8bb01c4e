/*
 * proto_stream.c: decoding and encoding the messages of a WebSocket stream
 * (proto_stream.h has the message list; proto/STREAM.md the client
 * documentation).
 *
 * Decoding checks the envelope of a message (its members: one table,
 * MESSAGE_MAP, with a mask per type): its type, the stream name, the
 * client's sequence number, that exactly one of "chain"/"chain_id" opens a
 * stream, and the shape of a path (waypoints with "position" [x,y,z] and
 * optionally "orientation" [x,y,z,w], a unit quaternion within
 * PROTO_QUAT_UNIT_TOL exactly as a target's, or a tree's targets with
 * "tips", checked whole when bound; rate and duration). It does
 * not check chains, options or targets: a stream's typed session does
 * (proto_session.c), with error paths ("/target/...", "/waypoints/3/...")
 * that point into the same message; it also interpolates path samples.
 *
 * Encoding writes compact JSON with proto_jw (proto_json_write.h): stream
 * names are restricted to characters that never need escaping, so the
 * envelope is printed directly, and the result is the job's own writer's
 * (proto_job_encode.c), as in an HTTP answer.
 */
#include "proto/proto_stream.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_codec.h"
#include "solver/ik_math.h"

/* ---- small helpers ------------------------------------------------------- */

bool proto_stream_name_valid(const char *name)
{
    size_t n = 0;
    if (!name)
        return false;
    for (; name[n]; n++) {
        char c = name[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == ':' || c == '-';
        if (!ok || n >= PROTO_STREAM_NAME_MAX)
            return false;
    }
    return n > 0;
}

bool proto_stream_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s, *end = u + len;
    while (u < end) {
        uint64_t w; /* eight ASCII bytes at once: most messages are all ASCII */
        if (end - u >= 8 && (memcpy(&w, u, 8), (w & 0x8080808080808080ull) == 0)) {
            u += 8;
            continue;
        }
        if (*u < 0x80) {
            u++;
            continue;
        }
        size_t n = proto__utf8_seq(u, end);
        if (n == 0)
            return false;
        u += n;
    }
    return true;
}

/* The words of a refused stream name and seq, wherever they are. */
static const char bad_name[] = "\"stream\" must be 1 to 64 characters of A-Z a-z 0-9 _ . : -";
static const char bad_seq_int[] = "\"seq\" must be an integer of magnitude below 2^53";

static int stream_err(proto_error *err, const char *path, const char *msg)
{
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "%s", msg);
}

/* Reads n finite numbers of an array into v; -1 when it is not such an array. */
static int read_numbers(const json_t *a, double *v, size_t n)
{
    if (!json_is_array(a) || json_array_size(a) != n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_number(x))
            return -1;
        v[i] = json_number_value(x);
        if (!isfinite(v[i]))
            return -1;
    }
    return 0;
}

/* ---- a message's members ------------------------------------------------ */

/* The members of a message (proto/STREAM.md), a tick target's first;
 * each type allows some (type_members), a tick's target some
 * (TICK_TARGET). Both readers find them by this table and read their
 * values in the stream's own words: the tree decoder after
 * proto__object_read, the raw reader (raw_object) as it meets them. */
#define MESSAGE_MAP(X, P)                                                                          \
    X(P, STREAM, "stream", PROTO_VALUE, 0, 0, false)                                              \
    X(P, SEQ, "seq", PROTO_VALUE, 0, 0, false)                                                    \
    X(P, TARGET, "target", PROTO_VALUE, 0, 0, false)                                              \
    X(P, TYPE, "type", PROTO_VALUE, 0, 0, false)                                                  \
    X(P, TARGETS, "targets", PROTO_VALUE, 0, 0, false)                                            \
    X(P, SEED, "seed", PROTO_VALUE, 0, 0, false)                                                  \
    X(P, CHAIN, "chain", PROTO_VALUE, 0, 0, false)                                                \
    X(P, CHAIN_ID, "chain_id", PROTO_VALUE, 0, 0, false)                                          \
    X(P, OPTIONS, "options", PROTO_VALUE, 0, 0, false)                                            \
    X(P, SCENE, "scene", PROTO_VALUE, 0, 0, false)                                                \
    X(P, SCENE_ID, "scene_id", PROTO_VALUE, 0, 0, false)                                          \
    X(P, WAYPOINTS, "waypoints", PROTO_VALUE, 0, 0, false)                                        \
    X(P, RATE_HZ, "rate_hz", PROTO_VALUE, 0, 0, false)                                            \
    X(P, DURATION_S, "duration_s", PROTO_VALUE, 0, 0, false)

enum { MESSAGE_MAP(PROTO__MEMBER_ID, M_) M_COUNT };
enum { MESSAGE_MAP(PROTO__MEMBER_AT, M_) M_PLACES };
static const proto_member message_members[M_COUNT] = {MESSAGE_MAP(PROTO__MEMBER_ROW, M_)};

/* The types' names and the members each allows (a tick's target's too). */
#define M(k) PROTO_BIT(M_##k)
#define TICK_TARGET (M(STREAM) | M(SEQ) | M(TARGET) | M(SEED))
static const char *const type_names[] = {"open", "close", "target", "path", "tick", "scene"};
static const unsigned type_members[] = {
    [PROTO_STREAM_OPEN] = M(TYPE) | M(STREAM) | M(CHAIN) | M(CHAIN_ID) | M(OPTIONS) | M(SEED) |
                          M(SCENE) | M(SCENE_ID),
    [PROTO_STREAM_CLOSE] = M(TYPE) | M(STREAM),
    [PROTO_STREAM_TARGET] = M(TYPE) | TICK_TARGET,
    [PROTO_STREAM_PATH] = M(TYPE) | M(STREAM) | M(SEQ) | M(WAYPOINTS) | M(RATE_HZ) | M(DURATION_S),
    [PROTO_STREAM_TICK] = M(TYPE) | M(SEQ) | M(TARGETS),
    [PROTO_STREAM_SCENE] = M(TYPE) | M(STREAM) | M(SCENE) | M(SCENE_ID)};

/* A key the object at base may not have, in the stream's words (the key
 * as sent, cut at 64 bytes). */
static int unknown_member(proto_error *err, const char *base, const char *key)
{
    char where[PROTO_PATH_MAX];
    snprintf(where, sizeof where, "%s/%.*s", base, PROTO_STREAM_NAME_MAX, key);
    return proto_error_set(err, PROTO_E_INVALID_REQUEST, where, "unknown member \"%.64s\"", key);
}

/* The members of object v at base (tree mode) into o, those with a bit in
 * allowed; 0, or -1 with *err naming the first other. */
static int tree_members(const json_t *v, const char *base, unsigned allowed, proto_object *o,
                        proto_error *err)
{
    static const proto_known words = {0, NULL, NULL, unknown_member};
    proto_in in = proto_in_tree(v);
    return proto__object_read(&in, base, message_members, M_COUNT, allowed, &words, o, err);
}

/* Member k of o (tree mode), or NULL when absent. */
static json_t *member(const proto_object *o, size_t k)
{
    return o->has & PROTO_BIT(k) ? (json_t *)o->in[k].node : NULL;
}

/* A seq of magnitude at most PROTO_STREAM_SEQ_MAX: true and *out, or false. */
static bool read_seq(const json_t *jq, long long *out)
{
    /* compared on both sides: llabs() of the most negative integer overflows */
    if (!json_is_integer(jq) || json_integer_value(jq) > PROTO_STREAM_SEQ_MAX ||
        json_integer_value(jq) < -PROTO_STREAM_SEQ_MAX)
        return false;
    *out = json_integer_value(jq);
    return true;
}

/* ---- paths --------------------------------------------------------------- */

static int path_decode(const proto_object *m, proto_stream_path **out, proto_error *err)
{
    const json_t *wps = member(m, M_WAYPOINTS);
    if (!json_is_array(wps))
        return stream_err(err, "/waypoints", "\"waypoints\" must be an array of targets");
    size_t n = json_array_size(wps);
    if (n < 2)
        return stream_err(err, "/waypoints", "a path needs at least two waypoints");
    if (n > PROTO_STREAM_MAX_WAYPOINTS)
        return proto_error_set(err, PROTO_E_TOO_LARGE, "/waypoints",
                               "a path has at most %d waypoints", PROTO_STREAM_MAX_WAYPOINTS);

    double rate = PROTO_STREAM_DEFAULT_RATE_HZ;
    const json_t *jr = member(m, M_RATE_HZ);
    if (jr) {
        rate = json_is_number(jr) ? json_number_value(jr) : NAN;
        if (!(rate > 0.0 && rate <= PROTO_STREAM_MAX_RATE_HZ))
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/rate_hz",
                                   "\"rate_hz\" must be a number in (0, %g]",
                                   PROTO_STREAM_MAX_RATE_HZ);
    }
    double dur = (double)(n - 1);
    const json_t *jd = member(m, M_DURATION_S);
    if (jd) {
        dur = json_is_number(jd) ? json_number_value(jd) : NAN;
        if (!(dur > 0.0 && isfinite(dur)))
            return stream_err(err, "/duration_s", "\"duration_s\" must be a positive number");
    }
    double samples = floor(dur * rate + 1e-9) + 1.0;
    if (samples > (double)PROTO_STREAM_MAX_SAMPLES)
        return proto_error_set(err, PROTO_E_TOO_LARGE, "/duration_s",
                               "duration_s * rate_hz gives more than %d samples",
                               PROTO_STREAM_MAX_SAMPLES);
    if (samples < 2.0)
        samples = 2.0;

    proto_stream_path *p = calloc(1, sizeof *p + n * sizeof p->pts[0]);
    if (!p)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    p->npoints = n;
    p->rate_hz = rate;
    p->duration_s = dur;
    p->count = (size_t)samples;
    char where[64];
    for (size_t i = 0; i < n; i++) {
        json_t *w = json_array_get(wps, i);
        const json_t *o = json_object_get(w, "orientation");
        const char *at = "", *msg = NULL;
        double v[4];
        ik_quat q;
        if (json_is_object(w) && json_object_get(w, "tips")) {
            /* a tree's target: checked as one when the path is bound to
             * its stream (proto_session_path) */
            p->pts[i].json = json_incref(w);
            continue;
        }
        if (i == 0)
            p->has_orientation = o != NULL;
        if (!json_is_object(w))
            msg = "a waypoint must be a target object";
        else if (read_numbers(json_object_get(w, "position"), v, 3) != 0)
            at = "/position", msg = "a waypoint needs \"position\": three finite numbers";
        else if ((o != NULL) != p->has_orientation)
            msg = "\"orientation\" must be on every waypoint or on none";
        /* an orientation: the rule and message of a target's, a unit
         * quaternion within PROTO_QUAT_UNIT_TOL */
        snprintf(where, sizeof where, "/waypoints/%zu%s", i, msg ? at : "/orientation");
        if (msg || (o && proto__quat(o, where, &q, err))) {
            proto_stream_path_free(p);
            return msg ? stream_err(err, where, msg) : -1;
        }
        p->pts[i].json = json_incref(w);
    }
    *out = p;
    return 0;
}

size_t proto_stream_path_count(const proto_stream_path *p)
{
    return p ? p->count : 0;
}

double proto_stream_path_rate_hz(const proto_stream_path *p)
{
    return p ? p->rate_hz : 0.0;
}

size_t proto_stream_path_next(const proto_stream_path *p, long long last, double elapsed_ms,
                              size_t *skipped, double *wait_ms)
{
    *skipped = 0;
    *wait_ms = 0.0;
    if (!p || last + 1 >= (long long)p->count)
        return p ? p->count : 0;
    const double period = 1000.0 / p->rate_hz;
    size_t next = (size_t)(last + 1);
    double due = (double)next * period;
    if (elapsed_ms + 1e-9 < due) {
        *wait_ms = due - elapsed_ms;
        return p->count;
    }
    const double window = PROTO_STREAM_PATH_LAG_MS > 2.0 * period ? PROTO_STREAM_PATH_LAG_MS
                                                                  : 2.0 * period;
    if (elapsed_ms - due > window) {
        /* the oldest sample due within the window */
        double k = ceil((elapsed_ms - window) / period - 1e-9);
        size_t take = k >= (double)(p->count - 1) ? p->count - 1 : (size_t)k;
        if (take > next) {
            *skipped = take - next;
            next = take;
        }
    }
    return next;
}

void proto_stream_path_free(proto_stream_path *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->npoints; i++)
        json_decref(p->pts[i].json);
    free(p->goals);
    free(p);
}

size_t proto_stream_path_bytes(const proto_stream_path *p)
{
    size_t n = sizeof *p + p->npoints * sizeof p->pts[0];
    if (p->goals)
        n += p->npoints * (p->ntips * sizeof *p->goals + 1);
    return n;
}

/* ---- ticks and targets without a tree ------------------------------------ */

/*
 * A game server's tick holds a thousand targets; as a jansson tree that is
 * some ten allocations per target, built and freed on the event loop, and
 * a controller's target message a few more of its own. The raw reader
 * takes a tick, or (for the daemon, proto_stream_decode_raw) a target
 * message, straight from its text in the codec's text mode
 * (proto_codec.h): the message and a tick's targets by MESSAGE_MAP (a
 * target message is a tick's target with a "type"), the target's members
 * by PROTO_TARGET_MAP, read but not yet given their meaning, which needs
 * the stream's chain (proto_session_tick_target); a tree's "tips" read
 * whole (raw_tips). It declines what the text mode declines, and targets
 * with a seed, and then the tree decoder reads the message.
 */

/* The tips of a message's tree targets, in the order of the targets, as
 * raw_tips reads them; declined: one was not taken. */
typedef struct raw_tipbuf {
    proto_stream_raw *v;
    size_t n, cap;
    bool declined;
} raw_tipbuf;

/* A tree target's "tips" at p ({tip name: tip target}): each tip's target
 * read by its members' shapes into a record of *ud (a raw_tipbuf), no name
 * twice, so that the text kept is JSON the tree decoder reads alike; the
 * session gives them their meaning with the chain's tip names
 * (proto__target_finish). Its bytes, or 0 with declined set. */
static size_t raw_tips(size_t k, const char *p, size_t avail, void *ud)
{
    raw_tipbuf *b = ud;
    proto_in in = proto_in_text(p, avail);
    size_t first = b->n;
    if (!proto__scan_char(&in.s, '{'))
        goto no;
    if (!proto__scan_char(&in.s, '}')) {
        do {
            proto_object o;
            const char *name;
            size_t len;
            if (b->n - first == IK_TREE_MAX_TIPS || !proto__scan_key(&in.s, &name, &len))
                goto no;
            for (size_t j = first; j < b->n; j++)
                if (b->v[j].len == len && memcmp(b->v[j].text, name, len) == 0)
                    goto no;
            if (b->n == b->cap) {
                size_t cap = b->cap ? 2 * b->cap : 64;
                proto_stream_raw *v = realloc(b->v, cap * sizeof *v);
                if (!v)
                    goto no;
                b->v = v;
                b->cap = cap;
            }
            if (proto__object_read(&in, "", proto_target_members, PROTO_T_COUNT, PROTO_TARGET_TIP,
                                   NULL, &o, NULL))
                goto no;
            proto_stream_raw *t = &b->v[b->n++]; /* what proto__tick_target reads */
            t->filled = false;
            t->keep = t->tips = proto_in_tree(NULL);
            t->tipv = NULL;
            t->ntips = 0;
            t->text = name;
            t->len = len;
            t->has = o.has;
            memcpy(t->n, o.n, sizeof t->n);
            memcpy(t->num, o.num, sizeof t->num);
            t->priority = o.i[PROTO_T_PRIORITY];
        } while (proto__scan_char(&in.s, ','));
        if (!proto__scan_char(&in.s, '}'))
            goto no;
    }
    return (size_t)(in.s.p - p);
no:
    b->declined = true;
    return 0;
}

/* The members of a message beyond a tick's target's: its "type" (-1 until
 * read; a target message's only when target) and a tick's "targets". */
typedef struct raw_top {
    bool target;
    int type;
    proto_stream_raw *ts;
    size_t n, cap;
} raw_top;

/* An object of MESSAGE_MAP's members into t: a tick's target, or with top
 * the message itself. The members' bits, or -1 when declined. */
static int raw_object(proto_scan *r, proto_stream_raw *t, raw_top *top, raw_tipbuf *tips)
{
    unsigned seen = 0;
    if (!proto__scan_char(r, '{'))
        return -1;
    do {
        const char *k, *v;
        size_t n, vn;
        proto_json_num num;
        if (!proto__scan_key(r, &k, &n))
            return -1;
        size_t m = proto__member_find(message_members, M_COUNT, k, n);
        if (m == M_COUNT || (seen & PROTO_BIT(m)))
            return -1;
        seen |= PROTO_BIT(m);
        switch (m) {
        case M_TYPE:
            if (!top || !proto__scan_string(r, &v, &vn))
                return -1;
            top->type = proto__scan_is(v, vn, "tick")                    ? PROTO_STREAM_TICK
                        : top->target && proto__scan_is(v, vn, "target") ? PROTO_STREAM_TARGET
                                                                         : -1;
            if (top->type < 0)
                return -1;
            break;
        case M_TARGETS: {
            proto_stream_raw *ts = NULL;
            size_t i = 0, cap = 0;
            const int need = M(STREAM) | M(TARGET);
            if (!top || !proto__scan_char(r, '['))
                return -1;
            do {
                if (i == cap) {
                    cap = cap ? 2 * cap : 64;
                    if (!(ts = realloc(top->ts, cap * sizeof *ts)))
                        return -1;
                    top->ts = ts;
                    top->cap = cap;
                }
                ts[i].has_seq = ts[i].filled = false;
                ts[i].bad = 0;
                ts[i].ntips = 0;
                int had = raw_object(r, &ts[i++], NULL, tips);
                if (had < 0 || (had & need) != need)
                    return -1;
            } while (proto__scan_char(r, ','));
            top->n = i;
            if (!proto__scan_char(r, ']'))
                return -1;
            break;
        }
        case M_STREAM:
            if (!proto__scan_string(r, &v, &vn) || vn == 0 || vn > PROTO_STREAM_NAME_MAX)
                return -1;
            memcpy(t->stream, v, vn);
            t->stream[vn] = '\0';
            if (!proto_stream_name_valid(t->stream))
                return -1;
            break;
        case M_SEQ:
            if (!proto__scan_number(r, &num) || !num.is_int || num.i > PROTO_STREAM_SEQ_MAX ||
                num.i < -PROTO_STREAM_SEQ_MAX)
                return -1;
            t->has_seq = true;
            t->seq = num.i;
            break;
        case M_TARGET: {
            proto_object o;
            proto_in in = {NULL, *r, 0};
            const proto_known known = {PROTO_BIT(PROTO_T_TIPS), raw_tips, tips, NULL};
            size_t first = tips->n;
            proto__scan_ws(&in.s);
            t->text = in.s.p;
            if (proto__object_read(&in, "", proto_target_members, PROTO_T_COUNT, PROTO_TARGET_ANY,
                                   &known, &o, NULL) ||
                tips->declined)
                return -1;
            t->ntips = tips->n - first;
            t->len = (size_t)(in.s.p - t->text);
            r->p = in.s.p;
            t->has = o.has;
            memcpy(t->n, o.n, sizeof t->n);
            memcpy(t->num, o.num, sizeof t->num);
            t->priority = o.i[PROTO_T_PRIORITY];
            t->keep = o.in[PROTO_T_KEEP];
            t->tips = o.in[PROTO_T_TIPS];
            break;
        }
        default: /* a seed (read as a tree), or no member of a tick or target message */
            return -1;
        }
    } while (proto__scan_char(r, ','));
    return proto__scan_char(r, '}') ? (int)seen : -1;
}

/* A tick, or with target a target message, into out (type, stream, seq,
 * raw targets: a target message's one); false, with nothing allocated, for
 * any text the reader declines. */
static bool read_raw(const char *text, size_t len, bool target, proto_stream_msg *out)
{
    proto_scan r = {text, text + len};
    proto_stream_raw env = {.has_seq = false}; /* the message's own members */
    raw_top top = {target, -1, NULL, 0, 0};
    raw_tipbuf tips = {NULL, 0, 0, false};
    int seen = raw_object(&r, &env, &top, &tips);
    if (seen < 0 || !proto__scan_end(&r))
        goto no;
    /* a tick's target without a seq of its own has the tick's
     * (proto_stream_tick_target_get) */
    if (top.type == PROTO_STREAM_TARGET && seen == (M(TYPE) | M(STREAM) | M(SEQ) | M(TARGET)) &&
        (top.ts = malloc(sizeof *top.ts))) {
        *top.ts = env;
        top.n = 1;
        memcpy(out->stream, env.stream, sizeof out->stream);
    } else if (top.type != PROTO_STREAM_TICK || seen != (int)type_members[PROTO_STREAM_TICK]) {
        goto no;
    }
    out->type = (proto_stream_type)top.type;
    out->has_seq = true;
    out->seq = env.seq;
    out->raw = top.ts;
    out->nraw = top.n;
    /* the tips' records, now that they move no more */
    out->raw_tips = tips.v;
    for (size_t i = 0, at = 0; i < top.n; at += top.ts[i++].ntips)
        top.ts[i].tipv = top.ts[i].ntips ? tips.v + at : NULL;
    return true;
no:
    free(top.ts);
    free(tips.v);
    return false;
}

/* ---- decoding ------------------------------------------------------------ */

/* An open or scene message's "scene_id" into out (NULL when absent): a
 * string, and not beside "scene". 0, or -1 with *err set. */
static int scene_id(const proto_object *m, proto_stream_msg *out, proto_error *err)
{
    const json_t *sid = member(m, M_SCENE_ID);
    if (!sid)
        return 0;
    if (!json_is_string(sid))
        return stream_err(err, "/scene_id", "\"scene_id\" must be a string");
    if (out->scene)
        return stream_err(err, "/scene_id", "give either scene or scene_id, not both");
    out->scene_id = json_string_value(sid);
    return 0;
}

/* The raw reader (a target message too, with target), else the tree's. */
static int decode(const char *text, size_t len, bool target, proto_stream_msg *out,
                  proto_error *err)
{
    memset(out, 0, sizeof *out);
    proto_error_clear(err);
    return len > 0 && read_raw(text, len, target, out)
               ? 0
               : proto__stream_decode_tree(text, len, out, err);
}

int proto_stream_decode(const char *text, size_t len, proto_stream_msg *out, proto_error *err)
{
    return decode(text, len, false, out, err);
}

int proto_stream_decode_raw(const char *text, size_t len, proto_stream_msg *out, proto_error *err)
{
    return decode(text, len, true, out, err);
}

int proto__stream_decode_tree(const char *text, size_t len, proto_stream_msg *out, proto_error *err)
{
    memset(out, 0, sizeof *out);
    proto_error_clear(err);
    if (len == 0) /* an empty text message: (NULL, 0) from the framer */
        return proto_error_set(err, PROTO_E_INVALID_JSON, "", "the message is empty");
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) /* worded as for HTTP bodies */
        return proto_json_syntax_error(text, len, &jerr, PROTO_JSON_STREAM, err);
    if (!json_is_object(root)) {
        json_decref(root);
        return stream_err(err, "", "a message must be a JSON object");
    }

    /* Stream and seq first, so that later errors can name them. */
    const json_t *js = json_object_get(root, "stream");
    if (json_is_string(js) && proto_stream_name_valid(json_string_value(js)))
        snprintf(out->stream, sizeof out->stream, "%s", json_string_value(js));
    const json_t *jq = json_object_get(root, "seq");
    out->has_seq = read_seq(jq, &out->seq);

    const json_t *jt = json_object_get(root, "type");
    const char *type = json_string_value(jt);
    size_t t;
    proto_object m;
    if (!jt) {
        stream_err(err, "/type", "\"type\" is required (open, target, path or close)");
        goto out;
    }
    if (!type) {
        stream_err(err, "/type", "\"type\" must be a string");
        goto out;
    }
    for (t = 0; t < sizeof type_names / sizeof type_names[0]; t++)
        if (strcmp(type, type_names[t]) == 0)
            break;
    if (t == sizeof type_names / sizeof type_names[0]) {
        proto_error_set(err, PROTO_E_UNKNOWN_TYPE, "/type", "unknown message type \"%.64s\"", type);
        goto out;
    }
    out->type = (proto_stream_type)t;
    if (out->type == PROTO_STREAM_TICK) {
        /* a tick belongs to no one stream: each of its targets names its own */
        out->stream[0] = '\0';
        if (tree_members(root, "", type_members[t], &m, err))
            goto out;
    } else if (!out->stream[0]) {
        stream_err(err, "/stream", js ? bad_name : "\"stream\" is required");
        goto out;
    }
    if ((out->type == PROTO_STREAM_TARGET || out->type == PROTO_STREAM_PATH ||
         out->type == PROTO_STREAM_TICK) &&
        !out->has_seq) {
        stream_err(err, "/seq", jq ? bad_seq_int : "\"seq\" is required");
        goto out;
    }

    if (out->type != PROTO_STREAM_TICK &&
        tree_members(root, "", type_members[t], &m, err))
        goto out;
    switch (out->type) {
    case PROTO_STREAM_OPEN: {
        json_t *chain = member(&m, M_CHAIN);
        const json_t *cid = member(&m, M_CHAIN_ID);
        if ((chain != NULL) == (cid != NULL)) {
            stream_err(err, "", "exactly one of \"chain\" and \"chain_id\" opens a stream");
            goto out;
        }
        if (cid && !json_is_string(cid)) {
            stream_err(err, "/chain_id", "\"chain_id\" must be a string");
            goto out;
        }
        json_t *opt = member(&m, M_OPTIONS);
        if (opt && !json_is_object(opt)) {
            stream_err(err, "/options", "\"options\" must be an object");
            goto out;
        }
        out->chain = chain;
        out->chain_id = cid ? json_string_value(cid) : NULL;
        out->options = opt;
        out->seed = member(&m, M_SEED);
        out->scene = member(&m, M_SCENE);
        if (scene_id(&m, out, err))
            goto out;
        break;
    }
    case PROTO_STREAM_SCENE:
        out->scene = member(&m, M_SCENE);
        if (scene_id(&m, out, err))
            goto out;
        if (!out->scene && !out->scene_id) {
            stream_err(err, "/scene", "\"scene\" (or \"scene_id\") is required");
            goto out;
        }
        break;
    case PROTO_STREAM_CLOSE:
        break;
    case PROTO_STREAM_TARGET:
        out->target = member(&m, M_TARGET);
        if (!out->target) {
            stream_err(err, "/target", "\"target\" is required");
            goto out;
        }
        out->seed = member(&m, M_SEED);
        break;
    case PROTO_STREAM_PATH:
        if (path_decode(&m, &out->path, err) != 0)
            goto out;
        break;
    case PROTO_STREAM_TICK:
        out->targets = member(&m, M_TARGETS);
        if (!out->targets) {
            stream_err(err, "/targets", "\"targets\" is required");
            goto out;
        }
        if (!json_is_array(out->targets) || json_array_size(out->targets) == 0) {
            stream_err(err, "/targets",
                       "\"targets\" must be a non-empty array of {\"stream\", \"seq\", "
                       "\"target\"} objects");
            goto out;
        }
        break;
    }
    out->root = root;
    return 0;
out:
    json_decref(root);
    out->chain = out->options = out->target = out->seed = out->targets = NULL;
    out->chain_id = NULL;
    return -1;
}

void proto_stream_msg_free(proto_stream_msg *m)
{
    if (!m)
        return;
    proto_stream_path_free(m->path);
    json_decref(m->root);
    free(m->raw);
    free(m->raw_tips);
    memset(m, 0, sizeof *m);
}

/* ---- ticks --------------------------------------------------------------- */

size_t proto_stream_tick_count(const proto_stream_msg *m)
{
    if (!m || m->type != PROTO_STREAM_TICK)
        return 0;
    return m->raw ? m->nraw : json_array_size(m->targets);
}

int proto_stream_tick_target_get(const proto_stream_msg *m, size_t i, proto_stream_tick_target *out,
                                 proto_error *err)
{
    memset(out, 0, sizeof *out);
    out->has_seq = m->has_seq;
    out->seq = m->seq;
    if (i >= proto_stream_tick_count(m))
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/targets",
                               "the tick has no target %zu", i);
    if (m->raw) {
        const proto_stream_raw *t = &m->raw[i];
        memcpy(out->stream, t->stream, sizeof out->stream);
        if (t->has_seq)
            out->seq = t->seq;
        out->raw = t;
        if (!t->bad)
            return 0;
        /* a binary tick's envelope: named as the JSON form names it */
        char at[PROTO_PATH_MAX], key[PROTO_PATH_MAX];
        proto_json_path_index(at, "/targets", i);
        proto_json_path_key(key, at, t->bad == PROTO_RAW_BAD_SEQ ? "seq" : "stream");
        return stream_err(err, key, t->bad == PROTO_RAW_BAD_SEQ ? bad_seq_int : bad_name);
    }
    char base[PROTO_PATH_MAX], where[PROTO_PATH_MAX];
    const json_t *v = json_array_get(m->targets, i);
    proto_json_path_index(base, "/targets", i);
    if (!json_is_object(v))
        return stream_err(err, base,
                          "a target of a tick must be an object {\"stream\", \"seq\", "
                          "\"target\"}");
    const json_t *js = json_object_get(v, "stream"), *jq = json_object_get(v, "seq");
    if (json_is_string(js) && proto_stream_name_valid(json_string_value(js)))
        memcpy(out->stream, json_string_value(js), json_string_length(js) + 1);
    if (jq && !read_seq(jq, &out->seq)) {
        proto_json_path_key(where, base, "seq");
        return stream_err(err, where, bad_seq_int);
    }
    proto_object o;
    if (tree_members(v, base, TICK_TARGET, &o, err))
        return -1;
    if (!out->stream[0]) {
        proto_json_path_key(where, base, "stream");
        return stream_err(err, where, js ? bad_name : "\"stream\" is required");
    }
    out->target = member(&o, M_TARGET);
    if (!out->target) {
        proto_json_path_key(where, base, "target");
        return stream_err(err, where, "\"target\" is required");
    }
    out->seed = member(&o, M_SEED);
    return 0;
}

/* ---- encoding ------------------------------------------------------------ */

/* Every message is written with proto_jw (proto_json_write.h), the one
 * growable text buffer of the wire format. Stream names never need
 * escaping (proto_stream_name_valid), so they are written as they are. */

#define RAW(w, lit) proto_jw_raw(w, lit, sizeof(lit) - 1)

static void put_stream(proto_jw *w, const char *stream)
{
    RAW(w, "\"stream\":\"");
    proto_jw_raw(w, stream, strlen(stream));
    RAW(w, "\"");
}

/* ,"key":n */
static void put_count(proto_jw *w, const char *key, size_t klen, long long n)
{
    RAW(w, ",\"");
    proto_jw_raw(w, key, klen);
    RAW(w, "\":");
    proto_jw_integer(w, (json_int_t)n);
}
#define COUNT(w, key, n) put_count(w, key, sizeof(key) - 1, (long long)(n))

char *proto_stream_encode_opened(const char *stream, const char *chain_id, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    RAW(&w, "{\"type\":\"opened\",");
    put_stream(&w, stream);
    RAW(&w, ",\"chain_id\":");
    const char *id = chain_id ? chain_id : "";
    proto_jw_string(&w, id, strlen(id));
    RAW(&w, "}");
    return proto_jw_finish(&w, len);
}

char *proto_stream_encode_closed(const char *stream, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    RAW(&w, "{\"type\":\"closed\",");
    put_stream(&w, stream);
    RAW(&w, "}");
    return proto_jw_finish(&w, len);
}

char *proto_stream_encode_job_solution(const char *stream, long long seq, size_t skipped,
                                       const proto_job *job, size_t i, size_t index, size_t count,
                                       size_t *len)
{
    char buf[2048];
    proto_jw w;
    proto_jw_init(&w, buf, sizeof buf);
    /* {"type":"solution","stream":..,"seq":..,"skipped":..[,"index":..,"count":..],"result": */
    RAW(&w, "{\"type\":\"solution\",");
    put_stream(&w, stream);
    COUNT(&w, "seq", seq);
    COUNT(&w, "skipped", skipped);
    if (count > 0) {
        COUNT(&w, "index", index);
        COUNT(&w, "count", count);
    }
    RAW(&w, ",\"result\":");
    proto__job_result_write(&w, job, i);
    RAW(&w, "}");
    return proto_jw_finish(&w, len);
}

char *proto_stream_encode_path_end(const char *stream, long long seq, size_t sent, size_t skipped,
                                   size_t count, bool completed, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    RAW(&w, "{\"type\":\"path_end\",");
    put_stream(&w, stream);
    COUNT(&w, "seq", seq);
    COUNT(&w, "sent", sent);
    COUNT(&w, "skipped", skipped);
    COUNT(&w, "count", count);
    if (completed)
        RAW(&w, ",\"completed\":true}");
    else
        RAW(&w, ",\"completed\":false}");
    return proto_jw_finish(&w, len);
}

/* "error":{...}} after the members naming the stream and seq (with a
 * comma before it when comma); false when out of memory (the text is
 * then incomplete: the callers drop it). */
static bool error_tail(proto_jw *w, const proto_error *e, bool comma)
{
    if (comma)
        RAW(w, ",");
    RAW(w, "\"error\":");
    if (!proto_error_write(w, e))
        return false;
    RAW(w, "}");
    return true;
}

char *proto_stream_encode_error(const char *stream, bool has_seq, long long seq,
                                const proto_error *e, size_t *len)
{
    proto_jw w;
    proto_jw_init(&w, NULL, 0);
    RAW(&w, "{\"type\":\"error\"");
    if (stream && proto_stream_name_valid(stream)) {
        RAW(&w, ",");
        put_stream(&w, stream);
    }
    if (has_seq)
        COUNT(&w, "seq", seq);
    if (!error_tail(&w, e, true)) {
        proto_jw_release(&w);
        return NULL;
    }
    return proto_jw_finish(&w, len);
}

/* ---- a tick's answer ----------------------------------------------------- */

void proto_stream_tick_head(proto_jw *w, long long seq, size_t skipped)
{
    RAW(w, "{\"type\":\"tick_solution\"");
    COUNT(w, "seq", seq);
    COUNT(w, "skipped", skipped);
    RAW(w, ",\"solutions\":[");
}

void proto_stream_tick_solution(proto_jw *w, const char *stream, long long seq, size_t skipped,
                                const proto_job *job, size_t i)
{
    RAW(w, "{");
    put_stream(w, stream);
    COUNT(w, "seq", seq);
    COUNT(w, "skipped", skipped);
    RAW(w, ",\"result\":");
    proto__job_result_write(w, job, i);
    RAW(w, "}");
}

void proto_stream_tick_error(proto_jw *w, const char *stream, bool has_seq, long long seq,
                             const proto_error *e)
{
    bool named = stream && proto_stream_name_valid(stream);
    RAW(w, "{");
    if (named)
        put_stream(w, stream);
    if (has_seq) {
        if (named)
            RAW(w, ",");
        RAW(w, "\"seq\":");
        proto_jw_integer(w, (json_int_t)seq);
    }
    if (!error_tail(w, e, named || has_seq))
        w->oom = true;
}

void proto_stream_tick_tail(proto_jw *w)
{
    RAW(w, "]}");
}

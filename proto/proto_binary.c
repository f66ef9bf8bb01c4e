/*
 * proto_binary.c: the binary form of batches of one chain (contract in
 * proto.h; the layout for clients in proto/README.md, "Binary batches"),
 * for clients that count microseconds: numbers as IEEE doubles, little
 * endian, in fixed places, instead of text to write and read back.
 *
 * A request ("IKDB") is a JSON head (the batch body without its targets:
 * chain or chain_id, options) followed by the targets as doubles; the head
 * is decoded as any body is, and each target's numbers are put in place as
 * the codec's filled target {"position":[x,y,z]} (with "orientation" when
 * the batch has them, proto_codec.h), whose rules are the JSON form's:
 * every check, conversion and error message is the JSON form's, the paths
 * too (/targets/<i>/position/<k>). An answer ("IKDA") is a head, one record
 * of fixed size per result and a tail with the counts, in pieces like the
 * JSON answer (proto_job_encode_binary_head, _results, _tail), so that a
 * large one is written out as it is solved. Every number of a record is
 * the double the JSON answer's text reads back as, at the default digits
 * (options.digits does not apply: doubles are exact); the members
 * options.fields leaves out have no place in the records.
 *
 * Not here: seeds (a binary batch has none), tree chains (their targets
 * name tips; their batches are JSON), batches of items; the members that
 * are words or lists of varying length (reason, cause, solutions,
 * solution_count) stay JSON's.
 */
#include "proto/proto_codec.h"
#include "proto/proto_le.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/ik_status.h"

#define HEAD_IN 16   /* bytes before a request's JSON head */
#define HEAD_OUT 32  /* bytes of an answer's head */
#define RECORD_FIXED 16 /* code, flags, iterations, restarts */
#define TAIL_OUT 20  /* "IKDC" and four counts */

/* ---- requests ------------------------------------------------------------------ */

typedef struct bin_feed {
    const unsigned char *at; /* the first target's doubles */
    bool orientation;
    bool dims2;
} bin_feed;

/* Target i's doubles as the codec's filled object ({"position": [x, y,
 * z]}, x and y on a planar chain, with "orientation" when the batch has
 * them): checked there as their JSON twin's numbers are, with the same
 * paths. A planar chain's z must be 0, the binary form's own rule
 * (proto__planar_z). */
static int bin_fill(void *ud, size_t i, const char *path, proto_object *o, proto_error *err)
{
    const bin_feed *f = ud;
    size_t stride = f->orientation ? 7 : 3;
    const unsigned char *p = f->at + i * stride * 8;
    o->mode = PROTO_MODE_FILLED;
    o->has = PROTO_BIT(PROTO_T_POSITION) | (f->orientation ? PROTO_BIT(PROTO_T_ORIENTATION) : 0);
    o->n[PROTO_T_POSITION] = f->dims2 ? 2 : 3;
    o->n[PROTO_T_ORIENTATION] = 4;
    for (size_t k = 0; k < 2; k++)
        o->num[PROTO_T_POSITION_AT + k] = proto_le_f64(p + 8 * k);
    for (size_t k = 0; f->orientation && k < 4; k++)
        o->num[PROTO_T_ORIENTATION_AT + k] = proto_le_f64(p + 24 + 8 * k);
    double z = proto_le_f64(p + 16);
    if (f->dims2)
        return proto__planar_z(z, path, err);
    o->num[PROTO_T_POSITION_AT + 2] = z;
    return 0;
}

/* The head's chain is a planar one: its targets are 2-D. Looked up the way
 * the decoder will find it (a registered chain by id, or the inline
 * chain's kind). */
static bool head_planar(const json_t *head, proto_chain_lookup_fn lookup, void *ud)
{
    const json_t *c = json_object_get(head, "chain");
    if (c)
        return json_is_object(c) &&
               json_is_string(json_object_get(c, "kind")) &&
               strcmp(json_string_value(json_object_get(c, "kind")), "planar") == 0;
    const json_t *id = json_object_get(head, "chain_id");
    if (!lookup || !json_is_string(id))
        return false;
    proto_chain *ch = lookup(ud, PROTO_REG_CHAIN, json_string_value(id));
    bool planar = ch && ch->kind == PROTO_CHAIN_PLANAR;
    proto_chain_unref(ch);
    return planar;
}

int proto_batch_decode_binary(const char *body, size_t len, const proto_limits *lim,
                              proto_chain_lookup_fn lookup, void *ud, proto_job **out,
                              proto_error *err)
{
    proto_limits def;
    lim = proto__limits_or_default(lim, &def);
    *out = NULL;
    const unsigned char *b = (const unsigned char *)body;
    if (len > lim->max_body_bytes)
        return proto_error_set(err, PROTO_E_TOO_LARGE, "", "the body has %zu bytes; the limit is %zu",
                               len, lim->max_body_bytes);
    if (!b || len < HEAD_IN || memcmp(b, "IKDB", 4) != 0 || proto_le_u16(b + 4) != 1)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary batch (Content-Type %s) starts with \"IKDB\" and version "
                               "1 (proto/README.md, \"Binary batches\")",
                               PROTO_BINARY_TYPE);
    unsigned flags = proto_le_u16(b + 6);
    size_t head = proto_le_u32(b + 8), n = proto_le_u32(b + 12);
    if (flags & ~1u)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary batch's flags are 0 or 1 (orientations), not %u", flags);
    if (n < 1)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "/targets",
                               "a binary batch needs at least 1 target");
    if (n > lim->max_targets)
        return proto_error_set(err, PROTO_E_TOO_LARGE, "/targets",
                               "a batch has at most %zu targets, not %zu", lim->max_targets, n);
    size_t stride = flags & 1 ? 56 : 24;
    size_t at = (HEAD_IN + head + 7) & ~(size_t)7;
    if (head > len || at > len || (len - at) / stride != n || (len - at) % stride != 0)
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                               "a binary batch of %zu targets%s and a head of %zu bytes has %zu "
                               "bytes, not %zu",
                               n, flags & 1 ? " with orientations" : "", head,
                               at + n * stride, len);
    for (size_t k = HEAD_IN + head; k < at; k++)
        if (b[k])
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, "",
                                   "byte %zu of a binary batch, in the padding after its head, is "
                                   "0x%02x: the padding is zero bytes (proto/README.md, \"Binary "
                                   "batches\")",
                                   k, b[k]);
    json_t *req = proto_json_parse(body + HEAD_IN, head, lim->max_body_bytes, PROTO_JSON_BATCH, err);
    if (!req)
        return -1;
    static const char *const inline_only[] = {"targets", "seeds", "items"};
    for (int k = 0; k < 3; k++)
        if (json_is_object(req) && json_object_get(req, inline_only[k])) {
            char p[PROTO_PATH_MAX];
            proto_json_path_key(p, "", inline_only[k]);
            json_decref(req);
            return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                                   "a binary batch's head has no \"%s\": its targets follow the "
                                   "head as numbers (seeds and items are JSON only)",
                                   inline_only[k]);
        }
    bin_feed f = {b + at, flags & 1, json_is_object(req) && head_planar(req, lookup, ud)};
    proto__fill fill = {n, bin_fill, &f};
    int rc = proto__job_decode_filled(req, lim, lookup, ud, &fill, out, err);
    json_decref(req);
    return rc;
}

/* ---- answers -------------------------------------------------------------------- */

/* The bits of an answer's "fields" word: the members a record has places
 * for, in the order they come (PROTO_FIELD_MAP's binary column). */
enum {
#define PROTO__BINARY_BIT(name, text, bin) BF_##name = (bin) < 0 ? 0 : 1u << ((bin) < 0 ? 0 : (bin)),
    PROTO_FIELD_MAP(PROTO__BINARY_BIT)
#undef PROTO__BINARY_BIT
};
/* The bits of a record's "flags" word. */
enum {
    BR_POSE = 1u << 0, /* the pose members hold the answer (else NaN) */
    BR_TIP = 1u << 1,
    BR_ORIENTATION_ERROR = 1u << 2,
    BR_MAX_JOINT_STEP = 1u << 3
};

static bool want(const proto_job *job, unsigned f)
{
    return !(job->opt.omit & f);
}

unsigned proto__binary_fields(const proto_job *job)
{
    bool skel = job->chain->skel != NULL; /* skeletons and trees of bones */
    unsigned b = 0;
    if (job->dof && want(job, PROTO_FIELD(JOINTS)))
        b |= BF_JOINTS;
    if (job->npos && want(job, PROTO_FIELD(POSITIONS)))
        b |= BF_POSITIONS;
    if (job->nrot && want(job, PROTO_FIELD(ROTATIONS)))
        b |= BF_ROTATIONS;
    if (job->nrot && !skel && want(job, PROTO_FIELD(LOCAL_ROTATIONS)))
        b |= BF_LOCAL_ROTATIONS;
    /* the tip: the numeric and closed-form solvers' answers off the plane */
    if ((job->solver == PROTO_SOLVER_NUMERIC || job->solver == PROTO_SOLVER_CLOSED) &&
        !job->dims2 && want(job, PROTO_FIELD(TIP)))
        b |= BF_TIP;
    if (want(job, PROTO_FIELD(POSITION_ERROR)))
        b |= BF_POSITION_ERROR;
    if (want(job, PROTO_FIELD(ORIENTATION_ERROR)))
        b |= BF_ORIENTATION_ERROR;
    if (want(job, PROTO_FIELD(MAX_JOINT_STEP)))
        b |= BF_MAX_JOINT_STEP;
    if (want(job, PROTO_FIELD(TIME_MS)))
        b |= BF_TIME_MS;
    return b;
}

static size_t dims(const proto_job *job)
{
    return job->dims2 ? 2 : 3;
}

/* Doubles of a record. */
static size_t record_doubles(const proto_job *job, unsigned f)
{
    size_t d = 0;
    if (f & BF_JOINTS)
        d += job->dof;
    if (f & BF_POSITIONS)
        d += dims(job) * job->npos;
    if (f & BF_ROTATIONS)
        d += 4 * job->nrot;
    if (f & BF_LOCAL_ROTATIONS)
        d += 4 * job->nrot;
    if (f & BF_TIP)
        d += 7;
    for (unsigned k = BF_POSITION_ERROR; k <= BF_TIME_MS; k <<= 1)
        d += (f & k) != 0;
    return d;
}

bool proto_job_binary_ok(const proto_job *job)
{
    return job->kind == PROTO_BATCH && job->ntips == 0;
}

size_t proto_job_binary_record(const proto_job *job)
{
    return RECORD_FIXED + 8 * record_doubles(job, proto__binary_fields(job));
}

char *proto_job_encode_binary_head(const proto_job *job, size_t *len)
{
    unsigned char *h = calloc(1, HEAD_OUT + 1);
    if (!h)
        return NULL;
    memcpy(h, "IKDA", 4);
    proto_le_put_u16(h + 4, 1);
    proto_le_put_u16(h + 6, (uint16_t)dims(job));
    proto_le_put_u32(h + 8, (uint32_t)job->n);
    proto_le_put_u32(h + 12, (uint32_t)proto_job_binary_record(job));
    proto_le_put_u32(h + 16, proto__binary_fields(job));
    proto_le_put_u16(h + 20, (uint16_t)job->dof);
    proto_le_put_u16(h + 22, (uint16_t)job->npos);
    proto_le_put_u16(h + 24, (uint16_t)job->nrot);
    *len = HEAD_OUT;
    return (char *)h;
}

/* Record i at p (proto_job_binary_record bytes); its MoveIt code. */
int proto__binary_record(unsigned char *p, const proto_job *job, size_t i, unsigned f)
{
    const proto_result *r = proto__result(job, i);
    const proto_chain *c = job->chain;
    proto_frame fr = job->dims2 ? PROTO_FRAME_ROS : job->opt.frame;
    proto_units u = job->opt.units;
    bool skel = c->skel != NULL; /* skeletons and trees of bones */
    proto__outcome oc;
    proto__result_outcome(job, i, &oc);
    bool pose = oc.pose;
    unsigned flags = pose ? BR_POSE : 0;
    if (pose && r->has_tip)
        flags |= BR_TIP;
    if (pose && r->rot_err >= 0)
        flags |= BR_ORIENTATION_ERROR;
    if (pose && r->has_step)
        flags |= BR_MAX_JOINT_STEP;
    proto_le_put_u32(p, (uint32_t)(int32_t)oc.code);
    proto_le_put_u32(p + 4, flags);
    proto_le_put_u32(p + 8, (uint32_t)(r->iterations > UINT32_MAX ? UINT32_MAX : r->iterations));
    proto_le_put_u32(p + 12, (uint32_t)(r->restarts > UINT32_MAX ? UINT32_MAX : r->restarts));
    unsigned char *q = p + RECORD_FIXED;
#define PUT(v) (proto_le_put_f64(q, (v)), q += 8)
    if (f & BF_JOINTS)
        for (size_t k = 0; k < job->dof; k++)
            PUT(!pose ? NAN
                      : proto__answer_angle(c, k) ? proto_angle_out(u, r->q[k]) : r->q[k]);
    if (f & BF_POSITIONS)
        for (size_t k = 0; k < job->npos; k++) {
            ik_vec3 v = proto_frame_vec_out(fr, r->positions[k]);
            PUT(pose ? v.x : NAN);
            PUT(pose ? v.y : NAN);
            if (!job->dims2)
                PUT(pose ? v.z : NAN);
        }
    for (int pass = 0; pass < 2; pass++) {
        if (!(f & (pass ? BF_LOCAL_ROTATIONS : BF_ROTATIONS)))
            continue;
        for (size_t k = 0; k < job->nrot; k++) {
            ik_quat w = pass || skel ? r->local[k] : r->rotations[k];
            ik_quat v = proto_frame_quat_out(fr, w);
            PUT(pose ? v.x : NAN);
            PUT(pose ? v.y : NAN);
            PUT(pose ? v.z : NAN);
            PUT(pose ? v.w : NAN);
        }
    }
    if (f & BF_TIP) {
        bool tip = flags & BR_TIP;
        ik_xform t = proto_frame_xform_out(fr, r->tip);
        double d[7] = {t.p.x, t.p.y, t.p.z, t.q.x, t.q.y, t.q.z, t.q.w};
        for (int k = 0; k < 7; k++)
            PUT(tip ? d[k] : NAN);
    }
    if (f & BF_POSITION_ERROR)
        PUT(pose ? r->pos_err : NAN);
    if (f & BF_ORIENTATION_ERROR)
        PUT(flags & BR_ORIENTATION_ERROR ? proto_angle_out(u, r->rot_err) : NAN);
    if (f & BF_MAX_JOINT_STEP)
        PUT(flags & BR_MAX_JOINT_STEP ? proto__answer_step(job, r) : NAN);
    if (f & BF_TIME_MS)
        PUT(oc.time_ms);
#undef PUT
    return oc.code;
}

char *proto_job_encode_binary_results(const proto_job *job, size_t begin, size_t end,
                                      size_t counts[PROTO_COUNT_BUCKETS], size_t *len)
{
    if (end > job->n)
        end = job->n;
    if (begin > end)
        begin = end;
    unsigned f = proto__binary_fields(job);
    size_t rec = proto_job_binary_record(job);
    unsigned char *out = malloc((end - begin) * rec + 1);
    if (!out)
        return NULL;
    for (size_t i = begin; i < end; i++) {
        int code = proto__binary_record(out + (i - begin) * rec, job, i, f);
        counts[code == 1 ? 0 : code == -31 ? 1 : code == -6 ? 2 : 3]++;
    }
    *len = (end - begin) * rec;
    return (char *)out;
}

char *proto_job_encode_binary_tail(const proto_job *job, const size_t counts[PROTO_COUNT_BUCKETS],
                                   size_t *len)
{
    (void)job;
    unsigned char *t = malloc(TAIL_OUT + 1);
    if (!t)
        return NULL;
    memcpy(t, "IKDC", 4);
    for (int k = 0; k < 4; k++)
        proto_le_put_u32(t + 4 + 4 * k, (uint32_t)counts[k]);
    *len = TAIL_OUT;
    return (char *)t;
}

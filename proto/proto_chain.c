/*
 * proto_chain.c: chain objects of the wire format -> immutable,
 * reference-counted proto_chain (contract in proto.h; JSON in
 * proto/README.md, section "Chains").
 *
 * Six kinds, each decoded strictly (unknown fields named, every number finite
 * and bounded, lengths >= PROTO_MIN_LENGTH) and converted once to ikd's
 * internal convention (ROS frame, radians) using the chain's own "frame" and
 * "units" fields:
 *   planar    seed 000's two- and three-link planar arms (lengths, base)
 *   links3d   seed 000's three-link arm in 3D (lengths, origin frame)
 *   bones     joint positions (and world rotations) for seed 001's two-bone
 *             solve, FABRIK and CCD
 *   skeleton  seed 001's translate-rotate-scale hierarchy and its limb
 *   joints    a joint list with URDF semantics (ik_chain.h)
 *   urdf      a URDF document and its base and tip links (proto/proto_urdf.h)
 *   tree      several tips over shared joints (proto/proto_tree.c)
 *
 * Ids are content addresses: the first 128 bits (hex) of the SHA-256 of the
 * chain object's canonical JSON (keys sorted, compact, every number written
 * as a 17-digit real so that 1 and 1.0 hash alike). Equal chains therefore
 * share an id across requests, replicas and restarts.
 *
 * Reference counting is atomic (stdatomic), so a registry and in-flight jobs
 * on other threads may share one chain; a chain is never modified after
 * decoding.
 */
#include "proto/proto_impl.h"

#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_urdf.h"
#include "solver/ik_status.h"

const char *const proto_chain_kind_names[] = {"planar", "links3d", "bones", "skeleton",
                                              "joints", "urdf",    "tree",  NULL};

/* ---- lifetime --------------------------------------------------------- */

static proto_chain *chain_new(void)
{
    proto_chain *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    atomic_init(&c->refs, 1);
    c->memory = sizeof *c;
    return c;
}

void proto_chain_ref(proto_chain *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void proto_chain_unref(proto_chain *c)
{
    if (!c)
        return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    json_decref(c->source);
    free(c->velocity);
    free(c->velocity_err);
    free(atomic_load(&c->closed));
    free(c->chain);
    free(c->positions);
    free(c->rotations);
    free(c->skel);
    free(c->names);
    free(c->tree);
    free(c->tip_names);
    free(c->path_bones);
    free(c);
}

const double *proto__chain_velocities(proto_chain *c, proto_error *err)
{
    if (c->kind != PROTO_CHAIN_URDF || !c->chain)
        return NULL;
    if (c->velocity_err) {
        if (err)
            *err = *c->velocity_err;
        return NULL;
    }
    return c->velocity;
}

/* Doubles per seed for chain c: joint values, bone positions (3 per
 * joint) or skeleton local rotations (4 per bone, trees of bones too); 0
 * when seeds do not apply. */
size_t proto__seed_len(const proto_chain *c)
{
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
    case PROTO_CHAIN_JOINTS:
    case PROTO_CHAIN_URDF:
        return c->chain->dof;
    case PROTO_CHAIN_BONES:
        return 3 * c->nbones;
    case PROTO_CHAIN_SKELETON:
        return 4 * c->nskel;
    case PROTO_CHAIN_TREE:
        return c->skel ? 4 * c->nskel : c->tree->dof;
    default:
        return 0;
    }
}

const char *proto_chain_id(const proto_chain *c)
{
    return c->id;
}

size_t proto_chain_memory(const proto_chain *c)
{
    return c->memory;
}

/* ---- ids -------------------------------------------------------------- */

/* The id: SHA-256 of the canonical text, written straight from the source
 * tree (keys sorted, integers as reals; proto_jw_canonical_reals()) into a
 * stack buffer when it fits.
 *
 * Clients that send their chain inline send the same one again and again
 * (an animation tool's limb on every drag event), and hashing it was a
 * sizeable part of answering such a request. Each thread therefore
 * remembers the ids of the last few short canonical texts it hashed: a
 * pure memo (the id is a function of the text, which is compared in full),
 * per thread so that it needs no lock, and small (ID_MEMO entries of at
 * most ID_MEMO_TEXT bytes). */
#define ID_MEMO 4
#define ID_MEMO_TEXT 256

typedef struct id_memo {
    size_t len; /* 0: empty */
    char text[ID_MEMO_TEXT];
    char id[PROTO_ID_HEX + 1];
} id_memo;

static _Thread_local id_memo memo[ID_MEMO];
static _Thread_local unsigned memo_next;

static void hash_id(const char *text, size_t len, char id[PROTO_ID_HEX + 1])
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, (const uint8_t *)text);
    sha256_digest(&ctx, sizeof digest, digest);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < PROTO_ID_HEX / 2; i++) {
        id[2 * i] = hex[digest[i] >> 4];
        id[2 * i + 1] = hex[digest[i] & 15];
    }
    id[PROTO_ID_HEX] = '\0';
}

static int make_id(proto_chain *c, proto_error *err)
{
    char buf[1024];
    proto_jw w;
    proto_jw_init(&w, buf, sizeof buf);
    proto_jw_canonical_reals(&w, c->source);
    if (w.oom) {
        proto_jw_release(&w);
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    }
    /* the source tree the chain keeps, as jansson holds it (several times
     * its canonical text) */
    c->memory += proto__json_tree_bytes(c->source);
    if (w.len > ID_MEMO_TEXT) {
        hash_id(w.p, w.len, c->id);
        proto_jw_release(&w);
        return 0;
    }
    for (size_t i = 0; i < ID_MEMO; i++)
        if (memo[i].len == w.len && memcmp(memo[i].text, w.p, w.len) == 0) {
            memcpy(c->id, memo[i].id, sizeof c->id);
            return 0;
        }
    hash_id(w.p, w.len, c->id);
    id_memo *m = &memo[memo_next++ % ID_MEMO];
    m->len = w.len;
    memcpy(m->text, w.p, w.len);
    memcpy(m->id, c->id, sizeof m->id);
    return 0;
}

/* ---- kinds ------------------------------------------------------------ */

static int opt_enum(const json_t *obj, const char *path, const char *key,
                    const char *const *names, int def, int *out, proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, key);
    return proto_json_enum(v, p, names, out, err);
}

static int length_list(const json_t *obj, const char *path, size_t min, size_t max, double *out,
                       size_t *n, proto_error *err)
{
    json_t *v = proto_json_require(obj, path, "lengths", err);
    if (!v)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "lengths");
    if (proto_json_array(v, p, min, max, false, n, err))
        return -1;
    for (size_t i = 0; i < *n; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        double d;
        if (proto_json_number(json_array_get(v, i), pi, -PROTO_MAX_ABS, PROTO_MAX_ABS, &d, err))
            return -1;
        if (!(d >= PROTO_MIN_LENGTH))
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi,
                                   "link %zu has length %g; links must be at least %g long", i,
                                   d, PROTO_MIN_LENGTH);
        out[i] = d;
    }
    return 0;
}

/* Compiles the joints into c->chain, allocated here with its storage in
 * one block: only chains that need the numeric solver or forward
 * kinematics carry one (a bones chain decoded on every request should not
 * pay for it). Returns 0; 1 when ik_chain_init() refuses the joints (the
 * caller names the reason); -1 with *err set when out of memory. On error
 * c->chain stays NULL. */
static int chain_compile(proto_chain *c, const ik_joint *j, size_t n, proto_error *err)
{
    const size_t store = ik_chain_storage_size(n);
    ik_chain *k = store < SIZE_MAX - sizeof *k ? malloc(sizeof *k + store) : NULL;
    if (!k)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    if (ik_chain_init(k, k + 1, store, j, n) != IK_OK) {
        free(k);
        return 1;
    }
    c->chain = k;
    c->memory += sizeof *k + store;
    /* the closed form joints and urdf chains get on first use */
    if (c->kind == PROTO_CHAIN_JOINTS || c->kind == PROTO_CHAIN_URDF)
        c->memory += sizeof(ik_closed);
    return 0;
}

/* Planar chains also compile to an ik_chain (joints about +z, links along
 * the rotated +x) so that forward kinematics and the numeric solver apply. */
static int planar_compile(proto_chain *c, proto_error *err)
{
    ik_joint j[4];
    memset(j, 0, sizeof j);
    for (size_t i = 0; i <= c->nlinks; i++) {
        j[i].origin = ik_xform_identity();
        if (i == 0)
            j[i].origin.p = ik_v3(c->base2[0], c->base2[1], 0);
        else
            j[i].origin.p = ik_v3(c->lengths[i - 1], 0, 0);
        j[i].axis = ik_v3(0, 0, 1);
        j[i].type = i < c->nlinks ? IK_JOINT_CONTINUOUS : IK_JOINT_FIXED;
        j[i].lower = -INFINITY;
        j[i].upper = INFINITY;
    }
    int rc = chain_compile(c, j, c->nlinks + 1, err);
    if (rc > 0)
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, "", "the planar chain is degenerate");
    return rc;
}

static int decode_planar(proto_chain *c, const json_t *o, const char *path, proto_error *err)
{
    static const char *const keys[] = {"kind", "lengths", "base", NULL};
    if (json_object_get(o, "frame")) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "frame");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "planar chains take no frame (they live in their own x-y "
                               "plane); leave it out");
    }
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    if (length_list(o, path, 2, 3, c->lengths, &c->nlinks, err))
        return -1;
    json_t *b = json_object_get(o, "base");
    if (b) {
        char p[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "base");
        if (proto_json_numbers(b, p, 2, c->base2, err))
            return -1;
    }
    return planar_compile(c, err);
}

/* The solver's base axes (x left, y up, z forward; ik_planar.h) in ROS's
 * (x forward, y left, z up): solver x -> ROS y, y -> z, z -> x. */
static ik_quat links3d_axes(void)
{
    static const double m[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    return ik_quat_from_mat3(m);
}

static int decode_links3d(proto_chain *c, const json_t *o, const char *path, proto_error *err)
{
    static const char *const keys[] = {"kind", "lengths", "origin", "frame", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int frame;
    if (opt_enum(o, path, "frame", proto_frame_names, 0, &frame, err))
        return -1;
    if (length_list(o, path, 3, 3, c->lengths, &c->nlinks, err))
        return -1;
    ik_xform origin = ik_xform_identity();
    json_t *og = json_object_get(o, "origin");
    if (og) {
        static const char *const okeys[] = {"position", "orientation", NULL};
        char p[PROTO_PATH_MAX], q[PROTO_PATH_MAX];
        proto_json_path_key(p, path, "origin");
        if (proto_json_check_object(og, p, okeys, err))
            return -1;
        json_t *v = json_object_get(og, "position");
        proto_json_path_key(q, p, "position");
        if (v && proto__vec3(v, q, &origin.p, err))
            return -1;
        v = json_object_get(og, "orientation");
        proto_json_path_key(q, p, "orientation");
        if (v && proto__quat(v, q, &origin.q, err))
            return -1;
    }
    origin = proto_frame_xform_in((proto_frame)frame, origin);
    origin.q = ik_quat_normalize(ik_quat_mul(origin.q, links3d_axes()));
    c->origin = origin;
    return 0;
}

static int decode_bones(proto_chain *c, const json_t *o, const char *path,
                        const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "positions", "rotations", "frame", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int frame;
    if (opt_enum(o, path, "frame", proto_frame_names, 0, &frame, err))
        return -1;
    json_t *pos = proto_json_require(o, path, "positions", err);
    if (!pos)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "positions");
    size_t n;
    if (proto_json_array(pos, p, 2, lim->max_joints, true, &n, err))
        return -1;
    c->positions = calloc(n, sizeof *c->positions);
    c->rotations = calloc(n, sizeof *c->rotations);
    if (!c->positions || !c->rotations)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    c->memory += n * (sizeof *c->positions + sizeof *c->rotations);
    c->nbones = n;
    for (size_t i = 0; i < n; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        ik_vec3 v;
        if (proto__vec3(json_array_get(pos, i), pi, &v, err))
            return -1;
        c->positions[i] = proto_frame_vec_in((proto_frame)frame, v);
        c->rotations[i] = ik_quat_identity();
        if (i > 0 && !(ik_vec3_dist(c->positions[i], c->positions[i - 1]) >= PROTO_MIN_LENGTH))
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi,
                                   "bone %zu (positions %zu to %zu) has length %g; bones must be "
                                   "at least %g long",
                                   i - 1, i - 1, i,
                                   ik_vec3_dist(c->positions[i], c->positions[i - 1]),
                                   PROTO_MIN_LENGTH);
    }
    json_t *rot = json_object_get(o, "rotations");
    if (rot) {
        proto_json_path_key(p, path, "rotations");
        size_t k;
        if (proto_json_array(rot, p, n, n, false, &k, err))
            return -1;
        for (size_t i = 0; i < n; i++) {
            char pi[PROTO_PATH_MAX];
            proto_json_path_index(pi, p, i);
            ik_quat q;
            if (proto__quat(json_array_get(rot, i), pi, &q, err))
                return -1;
            c->rotations[i] = proto_frame_quat_in((proto_frame)frame, q);
        }
    }
    return 0;
}

static int find_name(char (*names)[PROTO_NAME_MAX], size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

static int decode_skeleton(proto_chain *c, const json_t *o, const char *path,
                           const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "bones", "limb", "frame", NULL};
    char p[PROTO_PATH_MAX];
    if (json_object_get(o, "tips") && !json_object_get(o, "limb")) {
        proto_json_path_key(p, path, "tips");
        return proto_error_set(err, PROTO_E_INVALID_REQUEST, p,
                               "a skeleton solved for several end bones is a tree chain: "
                               "{\"kind\": \"tree\", \"bones\": [...], \"tips\": [...]} (a "
                               "skeleton chain moves one limb: \"limb\": [hip, knee, foot])");
    }
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi;
    if (opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err))
        return -1;
    if (proto__skeleton_bones(c, o, path, (proto_frame)fi, 3, lim, err))
        return -1;
    const size_t n = c->nskel;
    json_t *limb = proto_json_require(o, path, "limb", err);
    if (!limb)
        return -1;
    proto_json_path_key(p, path, "limb");
    size_t k;
    if (proto_json_array(limb, p, 3, 3, false, &k, err))
        return -1;
    for (size_t i = 0; i < 3; i++) {
        char pi[PROTO_PATH_MAX];
        proto_json_path_index(pi, p, i);
        const char *s;
        if (proto_json_string(json_array_get(limb, i), pi, PROTO_NAME_MAX - 1, &s, err))
            return -1;
        int b = find_name(c->names, n, s);
        if (b < 0)
            return proto_error_set(err, PROTO_E_INVALID_CHAIN, pi, "no bone is named \"%s\"", s);
        c->limb[i] = (size_t)b;
    }
    if (c->skel[c->limb[1]].parent != (int)c->limb[0] ||
        c->skel[c->limb[2]].parent != (int)c->limb[1])
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                               "the limb must be three bones hip, knee, foot where the knee's "
                               "parent is the hip and the foot's parent is the knee");
    ik_mat34 *g = calloc(n, sizeof *g);
    if (!g)
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    int rc = ik_skeleton_globals(c->skel, n, g);
    double l1 = rc == IK_OK ? ik_vec3_dist(ik_mat34_origin(&g[c->limb[0]]),
                                           ik_mat34_origin(&g[c->limb[1]]))
                            : 0;
    double l2 = rc == IK_OK ? ik_vec3_dist(ik_mat34_origin(&g[c->limb[1]]),
                                           ik_mat34_origin(&g[c->limb[2]]))
                            : 0;
    free(g);
    if (rc != IK_OK)
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the skeleton is degenerate");
    if (!(l1 >= PROTO_MIN_LENGTH) || !(l2 >= PROTO_MIN_LENGTH))
        return proto_error_set(err, PROTO_E_INVALID_CHAIN, p,
                               "the limb's bones have lengths %g and %g; each must be at least "
                               "%g",
                               l1, l2, PROTO_MIN_LENGTH);
    return 0;
}

static int decode_joints(proto_chain *c, const json_t *o, const char *path,
                         const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "joints", "frame", "units", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    int fi, ui;
    if (opt_enum(o, path, "frame", proto_frame_names, 0, &fi, err) ||
        opt_enum(o, path, "units", proto_units_names, 0, &ui, err))
        return -1;
    proto_frame frame = (proto_frame)fi;
    proto_units units = (proto_units)ui;
    json_t *arr = proto_json_require(o, path, "joints", err);
    if (!arr)
        return -1;
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "joints");
    size_t n;
    if (proto_json_array(arr, p, 1, lim->max_joints, true, &n, err))
        return -1;
    ik_joint *j = calloc(n, sizeof *j);
    char(*names)[PROTO_NAME_MAX] = calloc(n, sizeof *names);
    if (!j || !names) {
        free(j);
        free(names);
        return proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
    }
    int rc = -1;
    size_t movable = 0;
    for (size_t i = 0; i < n; i++) {
        char pj[PROTO_PATH_MAX];
        proto_json_path_index(pj, p, i);
        if (proto__joint_decode(json_array_get(arr, i), pj, i, frame, units, false, &j[i],
                                names[i], err))
            goto out;
        if (j[i].type != IK_JOINT_FIXED)
            movable++;
    }
    if (movable == 0) {
        proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the chain has no movable joint");
        goto out;
    }
    int crc = chain_compile(c, j, n, err);
    if (crc) {
        if (crc > 0)
            proto_error_set(err, PROTO_E_INVALID_CHAIN, p, "the joint list does not form a chain");
        goto out;
    }
    c->names = calloc(c->chain->dof, sizeof *c->names);
    if (!c->names) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    c->nnames = c->chain->dof;
    for (size_t i = 0; i < c->chain->dof; i++)
        memcpy(c->names[i], names[c->chain->source_index[i]], PROTO_NAME_MAX);
    c->memory += c->nnames * PROTO_NAME_MAX;
    rc = 0;
out:
    free(j);
    free(names);
    return rc;
}

static int decode_urdf(proto_chain *c, const json_t *o, const char *path,
                       const proto_limits *lim, proto_error *err)
{
    static const char *const keys[] = {"kind", "urdf", "base", "tip", NULL};
    if (proto_json_check_object(o, path, keys, err))
        return -1;
    const char *xml, *base, *tip;
    char p[PROTO_PATH_MAX];
    size_t len;
    if (proto__urdf_source(o, path, lim, &xml, &len, &base, err))
        return -1;
    json_t *v = proto_json_require(o, path, "tip", err);
    proto_json_path_key(p, path, "tip");
    if (!v || proto_json_string(v, p, PROTO_URDF_NAME_MAX - 1, &tip, err))
        return -1;
    const size_t cap = lim->max_joints;
    ik_joint *joints = calloc(cap, sizeof *joints);
    char(*names)[PROTO_URDF_NAME_MAX] = calloc(cap, sizeof *names);
    /* the joints' velocity limits are read in the same parse (servo
     * streams use them), so that nothing parses the document again */
    double *vel = calloc(cap, sizeof *vel);
    int rc = -1;
    if (!joints || !names || !vel) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    size_t n = 0;
    proto_json_path_key(p, path, "urdf");
    int vel_rc = 0;
    proto_error vel_err;
    proto_error_clear(&vel_err);
    /* room for one more joint than allowed, to tell "too many" apart */
    if (proto_urdf_chain_velocities(xml, len, base, tip, joints, cap, &n, names, vel, &vel_rc,
                                    &vel_err, err)) {
        if (err)
            snprintf(err->path, sizeof err->path, "%s", p);
        goto out;
    }
    size_t movable = 0;
    for (size_t i = 0; i < n; i++)
        movable += joints[i].type != IK_JOINT_FIXED;
    if (movable == 0) {
        proto_error_set(err, PROTO_E_INVALID_URDF, p,
                        "the chain from \"%s\" to \"%s\" has no movable joint", base, tip);
        goto out;
    }
    if (movable > lim->max_joints) {
        proto_error_set(err, PROTO_E_TOO_LARGE, p,
                        "the chain has %zu movable joints; the limit is %zu", movable,
                        lim->max_joints);
        goto out;
    }
    int crc = chain_compile(c, joints, n, err);
    if (crc) {
        if (crc > 0)
            proto_error_set(err, PROTO_E_INVALID_URDF, p,
                            "the joints from \"%s\" to \"%s\" do not form a valid chain", base,
                            tip);
        goto out;
    }
    c->names = calloc(c->chain->dof, sizeof *c->names);
    if (!c->names) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    c->nnames = c->chain->dof;
    for (size_t i = 0; i < c->chain->dof; i++)
        snprintf(c->names[i], PROTO_NAME_MAX, "%s", names[c->chain->source_index[i]]);
    if (vel_rc == 0) {
        c->velocity = calloc(c->chain->dof, sizeof *c->velocity);
        if (c->velocity)
            for (size_t i = 0; i < c->chain->dof; i++)
                c->velocity[i] = vel[c->chain->source_index[i]];
        c->memory += c->chain->dof * sizeof *c->velocity;
    } else {
        c->velocity_err = malloc(sizeof *c->velocity_err);
        if (c->velocity_err) {
            proto_error_set(c->velocity_err, vel_err.code, "/options/servo/velocity",
                            "the URDF's joint velocity limits cannot be read (%s); give "
                            "options.servo.velocity",
                            vel_err.message);
        }
        c->memory += sizeof *c->velocity_err;
    }
    if (!c->velocity && !c->velocity_err) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        goto out;
    }
    c->memory += len + c->nnames * PROTO_NAME_MAX;
    rc = 0;
out:
    free(joints);
    free(names);
    free(vel);
    return rc;
}

/* ---- entry points ----------------------------------------------------- */

proto_chain *proto_chain_decode_json(json_t *chain, const char *path, const proto_limits *lim,
                                     proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    if (!path)
        path = "";
    if (!json_is_object(chain)) {
        char name[PROTO_PATH_MAX];
        proto_json_path_name(name, sizeof name, path);
        proto_error_set(err, PROTO_E_INVALID_REQUEST, path, "%s must be an object", name);
        return NULL;
    }
    json_t *k = proto_json_require(chain, path, "kind", err);
    char p[PROTO_PATH_MAX];
    proto_json_path_key(p, path, "kind");
    int kind;
    if (!k || proto_json_enum(k, p, proto_chain_kind_names, &kind, err))
        return NULL;
    proto_chain *c = chain_new();
    if (!c) {
        proto_error_set(err, PROTO_E_INTERNAL, "", "out of memory");
        return NULL;
    }
    c->kind = (proto_chain_kind)kind;
    int rc = -1;
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
        rc = decode_planar(c, chain, path, err);
        break;
    case PROTO_CHAIN_LINKS3D:
        rc = decode_links3d(c, chain, path, err);
        break;
    case PROTO_CHAIN_BONES:
        rc = decode_bones(c, chain, path, lim, err);
        break;
    case PROTO_CHAIN_SKELETON:
        rc = decode_skeleton(c, chain, path, lim, err);
        break;
    case PROTO_CHAIN_JOINTS:
        rc = decode_joints(c, chain, path, lim, err);
        break;
    case PROTO_CHAIN_URDF:
        rc = decode_urdf(c, chain, path, lim, err);
        break;
    case PROTO_CHAIN_TREE:
        rc = proto__tree_decode(c, chain, path, lim, err);
        break;
    }
    if (rc == 0) {
        c->source = json_incref(chain);
        rc = make_id(c, err);
    }
    if (rc) {
        proto_chain_unref(c);
        return NULL;
    }
    return c;
}

/* ---- inline chains by their text -------------------------------------- */

/* A client that sends its chain inline sends the same text again and again
 * (an animation tool's limb on every drag event, a game's rig every tick):
 * each thread keeps the chains it decoded from the last few short texts,
 * with the limits they were decoded under, and hands out another reference
 * when the same bytes come again. A chain is a function of its text and
 * the limits (it is immutable and its reference count atomic), so the
 * shared chain is the one a new decode would give. Bounded: CHAIN_MEMO
 * chains per thread, each from at most CHAIN_MEMO_TEXT bytes. */
#define CHAIN_MEMO 4
#define CHAIN_MEMO_TEXT 512

typedef struct chain_memo {
    size_t len; /* 0: empty */
    char text[CHAIN_MEMO_TEXT];
    proto_limits lim;
    proto_chain *chain; /* a reference */
} chain_memo;

static _Thread_local chain_memo chains[CHAIN_MEMO];
static _Thread_local unsigned chains_next;

/* The kept chain, decoded under lim, whose text p (avail bytes) begins
 * with, or NULL. Kept texts are whole JSON objects, so at most one is. */
static chain_memo *memo_at(const char *p, size_t avail, const proto_limits *lim)
{
    for (size_t i = 0; i < CHAIN_MEMO; i++)
        if (chains[i].len && chains[i].len <= avail &&
            memcmp(chains[i].text, p, chains[i].len) == 0 &&
            memcmp(&chains[i].lim, lim, sizeof *lim) == 0)
            return &chains[i];
    return NULL;
}

size_t proto__chain_memo_extent(const char *p, size_t avail, const proto_limits *lim)
{
    const chain_memo *m = memo_at(p, avail, lim);
    return m ? m->len : 0;
}

proto_chain *proto__chain_from_text(const char *text, size_t len, const proto_limits *lim,
                                    proto_error *err)
{
    bool keep = len > 0 && len <= CHAIN_MEMO_TEXT;
    chain_memo *hit = keep ? memo_at(text, len, lim) : NULL;
    if (hit && hit->len == len) {
        proto_chain_ref(hit->chain);
        return hit->chain;
    }
    json_error_t je;
    json_t *v = proto_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        proto_error_set(err, PROTO_E_INVALID_JSON, "/chain", "the chain is not JSON");
        return NULL;
    }
    proto_chain *c = proto_chain_decode_json(v, "/chain", lim, err);
    json_decref(v);
    if (c && keep) {
        chain_memo *m = &chains[chains_next++ % CHAIN_MEMO];
        proto_chain_unref(m->chain);
        m->len = len;
        memcpy(m->text, text, len);
        m->lim = *lim;
        proto_chain_ref(c);
        m->chain = c;
    }
    return c;
}

proto_chain *proto_chain_resolve(json_t *chain, const char *chain_id, const proto_limits *lim,
                                 proto_chain_lookup_fn lookup, void *ud, proto_error *err)
{
    if (chain)
        return proto_chain_decode_json(chain, "/chain", lim, err);
    proto_chain *c = lookup && chain_id ? lookup(ud, chain_id) : NULL;
    if (!c)
        proto_error_set(err, PROTO_E_UNKNOWN_CHAIN, "/chain_id",
                        "no chain is registered with id \"%s\"", chain_id ? chain_id : "");
    return c;
}

proto_chain *proto_chain_decode(const char *body, size_t len, const proto_limits *lim,
                                proto_error *err)
{
    proto_limits def;
    if (!lim) {
        proto_limits_default(&def);
        lim = &def;
    }
    json_t *root = proto_json_parse(body, len, lim->max_body_bytes, PROTO_JSON_CHAIN, err);
    if (!root)
        return NULL;
    proto_chain *c = proto_chain_decode_json(root, "", lim, err);
    json_decref(root);
    return c;
}

json_t *proto_chain_describe(const proto_chain *c)
{
    json_t *d = json_object();
    if (!d)
        return NULL;
    json_object_set_new(d, "id", json_string(c->id));
    json_object_set_new(d, "kind", json_string(proto_chain_kind_names[c->kind]));
    size_t dof = 0;
    switch (c->kind) {
    case PROTO_CHAIN_PLANAR:
    case PROTO_CHAIN_LINKS3D:
        dof = c->nlinks;
        break;
    case PROTO_CHAIN_BONES:
        dof = c->nbones - 1;
        break;
    case PROTO_CHAIN_SKELETON:
        dof = c->nskel;
        break;
    case PROTO_CHAIN_TREE:
        dof = c->skel ? c->nskel : c->tree->dof;
        break;
    default:
        dof = c->chain->dof;
    }
    json_object_set_new(d, c->kind == PROTO_CHAIN_BONES || c->skel ? "bones" : "dof",
                        json_integer((json_int_t)dof));
    if (c->names) {
        json_t *a = json_array();
        for (size_t i = 0; i < c->nnames; i++)
            json_array_append_new(a, json_string(c->names[i]));
        json_object_set_new(d, c->skel ? "bone_names" : "joint_names",
                            a);
    }
    if (c->chain && c->kind != PROTO_CHAIN_PLANAR) {
        json_t *lim = json_array();
        for (size_t i = 0; i < c->chain->dof; i++) {
            json_t *l = json_object();
            static const char *const tn[] = {"fixed", "revolute", "continuous", "prismatic"};
            json_object_set_new(l, "type", json_string(tn[c->chain->type[i]]));
            if (isfinite(c->chain->lower[i])) {
                json_object_set_new(l, "lower", json_real(c->chain->lower[i]));
                json_object_set_new(l, "upper", json_real(c->chain->upper[i]));
            }
            json_array_append_new(lim, l);
        }
        json_object_set_new(d, "joints", lim);
    }
    if (c->tree)
        proto__tree_describe(c, d);
    json_t *sol = json_array();
    for (int s = PROTO_SOLVER_TWO_LINK; s < PROTO_SOLVER_COUNT; s++) {
        proto_options o;
        memset(&o, 0, sizeof o);
        o.solver = (proto_solver)s;
        proto_target t;
        memset(&t, 0, sizeof t);
        t.has_up = s == PROTO_SOLVER_THREE_LINK || s == PROTO_SOLVER_THREE_LINK_3D;
        proto_solver out;
        if (proto__resolve_solver(c, &o, &t, &out, NULL) == 0)
            json_array_append_new(sol, json_string(proto_solver_names[s]));
    }
    json_object_set_new(d, "solvers", sol);
    /* joints and urdf chains: which closed form, or why none */
    const ik_closed *k = proto__chain_closed((proto_chain *)c);
    if (k) {
        json_t *cf = json_object();
        json_object_set_new(cf, "family", json_string(ik_closed_kind_name(k->kind)));
        if (k->kind == IK_CLOSED_NONE) {
            json_object_set_new(cf, "why", json_string(ik_closed_why_name(k->why)));
            json_object_set_new(cf, "message", json_string(ik_closed_why_message(k->why)));
        } else {
            json_object_set_new(cf, "description", json_string(ik_closed_kind_message(k->kind)));
        }
        json_object_set_new(d, "closed_form", cf);
    }
    json_object_set_new(d, "memory_bytes", json_integer((json_int_t)c->memory));
    json_object_set(d, "chain", c->source);
    return d;
}

/*
 * register_bench.c: the time to decode a URDF chain object, as POST
 * /v1/chains decodes a body (proto_chain_decode: the JSON, the URDF, the
 * compiled chain or tree, its collision model), on this thread.
 *
 *   register_bench [--data DIR] [--rounds R] [--case NAME]
 *
 * The cases (DIR default $IKD_DATA or tests/data):
 *   ur5           the UR5's URDF, base_link to tool0 (13 kB);
 *   iiwa          the KUKA iiwa's, base_link to tool0 (6 kB);
 *   iiwa_spheres  the same with its collision_spheres
 *                 (DIR/collision/kuka_iiwa14_r820.json, 23 spheres);
 *   pr2_tree      the PR2 (134 kB) as a tree from base_link to both wrists;
 *   iiwa_4mb      the iiwa's URDF padded with 48,000 links off the chain to
 *                 about 4.4 MB (as tests/server/test_limits.py registers
 *                 it), so that reading the document is nearly all the work.
 * Each case decodes its body R times (default 200; the PR2 tree R / 10,
 * the 4 MB case R / 40, at least once) after one untimed decode, and prints one line
 *   {"bench":"register","case":..,"body_bytes":..,"decodes":..,
 *    "mean_us":..,"cpu_us":..,"memory_bytes":..}
 * (mean_us: wall clock per decode; cpu_us: thread CPU time per decode,
 * which a busy machine's preemptions do not inflate; memory_bytes: what
 * the chain counts against the registry). Compare builds in the same run,
 * or under valgrind --tool=callgrind with --rounds 1 for instruction
 * counts free of noise. The tests check what a decode gives
 * (tests/proto/test_urdf.c, test_proto_collide.c, the fixtures); this
 * only times it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/proto.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The whole file at dir/name (heap, NUL-terminated), or NULL. */
static char *read_file(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "register_bench: cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(s);
        return NULL;
    }
    fclose(f);
    s[n] = '\0';
    *len = (size_t)n;
    return s;
}

/* The iiwa's URDF xml padded before </robot> with n links off the chain
 * (heap). */
static char *padded(const char *xml, size_t n)
{
    const char *end = strstr(xml, "</robot>");
    if (!end)
        return NULL;
    size_t head = (size_t)(end - xml);
    char *s = malloc(head + n * 100 + 16);
    if (!s)
        return NULL;
    memcpy(s, xml, head);
    size_t k = head;
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k,
                             "<link name=\"pad%zu\"><visual><geometry><box size=\"1 1 1\"/>"
                             "</geometry></visual></link>\n",
                             i);
    strcpy(s + k, "</robot>");
    return s;
}

/* Decodes body rounds times (one untimed first) and prints its line. */
static int run_case(const char *name, const char *body, size_t rounds)
{
    proto_limits lim;
    proto_limits_default(&lim);
    lim.max_body_bytes = lim.max_urdf_bytes = 16u << 20;
    proto_error err;
    proto_chain *c = proto_chain_decode(body, strlen(body), &lim, &err);
    if (!c) {
        fprintf(stderr, "register_bench: %s: %s at %s\n", name, err.message, err.path);
        return 1;
    }
    size_t memory = proto_chain_memory(c);
    proto_chain_unref(c);
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (size_t i = 0; i < rounds; i++) {
        c = proto_chain_decode(body, strlen(body), &lim, &err);
        if (!c) {
            fprintf(stderr, "register_bench: %s: %s\n", name, err.message);
            return 1;
        }
        proto_chain_unref(c);
    }
    double w = clock_s(CLOCK_MONOTONIC) - w0, cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    printf("{\"bench\":\"register\",\"case\":\"%s\",\"body_bytes\":%zu,\"decodes\":%zu,"
           "\"mean_us\":%.1f,\"cpu_us\":%.1f,\"memory_bytes\":%zu}\n",
           name, strlen(body), rounds, 1e6 * w / (double)rounds, 1e6 * cpu / (double)rounds,
           memory);
    fflush(stdout);
    return 0;
}

/* {"kind": kind, "urdf": xml, then extra} as text (heap). */
static char *chain_body(const char *kind, const char *xml, const char *extra)
{
    json_t *u = json_string(xml);
    char *q = json_dumps(u, JSON_ENCODE_ANY);
    json_decref(u);
    if (!q)
        return NULL;
    size_t n = strlen(q) + strlen(extra) + 64;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "{\"kind\":\"%s\",\"urdf\":%s,%s}", kind, q, extra);
    free(q);
    return s;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("IKD_DATA") ? getenv("IKD_DATA") : "tests/data";
    const char *only = NULL;
    size_t rounds = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--data") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = (size_t)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--case") == 0)
            only = argv[i + 1];
        else
            i = argc;
    }
    if (argc % 2 == 0 || rounds == 0) {
        fprintf(stderr, "usage: register_bench [--data DIR] [--rounds R] [--case NAME]\n");
        return 1;
    }
    char rdir[1024];
    snprintf(rdir, sizeof rdir, "%s/robots", dir);
    size_t n;
    char *ur5 = read_file(rdir, "ur5.urdf", &n),
         *iiwa = read_file(rdir, "kuka_iiwa14_r820.urdf", &n),
         *pr2 = read_file(rdir, "pr2.urdf", &n),
         *sp = read_file(dir, "collision/kuka_iiwa14_r820.json", &n);
    if (!ur5 || !iiwa || !pr2 || !sp)
        return 1;
    json_error_t je;
    json_t *spj = json_loads(sp, 0, &je);
    char *spheres = spj ? json_dumps(json_object_get(spj, "collision_spheres"), 0) : NULL;
    json_decref(spj);
    if (!spheres)
        return 1;
    char *big = padded(iiwa, 48000);
    const char *arm = "\"base\":\"base_link\",\"tip\":\"tool0\"";
    char extra[64 * 1024];
    snprintf(extra, sizeof extra, "%s,\"collision_spheres\":%s", arm, spheres);
    struct {
        const char *name;
        char *body;
        size_t rounds;
    } cases[] = {
        {"ur5", chain_body("urdf", ur5, arm), rounds},
        {"iiwa", chain_body("urdf", iiwa, arm), rounds},
        {"iiwa_spheres", chain_body("urdf", iiwa, extra), rounds},
        {"pr2_tree",
         chain_body(
             "tree", pr2,
             "\"base\":\"base_link\",\"tips\":[\"l_wrist_roll_link\",\"r_wrist_roll_link\"]"),
         rounds / 10 ? rounds / 10 : 1},
        {"iiwa_4mb", big ? chain_body("urdf", big, arm) : NULL, rounds / 40 ? rounds / 40 : 1},
    };
    int rc = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        if (only && strcmp(only, cases[k].name) != 0)
            continue;
        if (!cases[k].body || run_case(cases[k].name, cases[k].body, cases[k].rounds))
            rc = 1;
    }
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        free(cases[k].body);
    free(ur5);
    free(iiwa);
    free(pr2);
    free(sp);
    free(spheres);
    free(big);
    return rc;
}

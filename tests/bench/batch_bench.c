/*
 * batch_bench.c: end-to-end throughput of large batches over HTTP, the
 * client included (issue 14's first goal: 100,000 two-bone targets with
 * the answer reduced to local_rotations at 1,000,000 targets/s or more).
 *
 * A C client on a plain socket (no HTTP library between it and the
 * numbers) builds one POST /v1/solve/batch body of N random reachable
 * two-bone targets on one chain, sends it to an ikd that is already
 * running and reads the whole answer, ROUNDS times for each of three forms
 * of the same request, alternated so that all see the same machine:
 *   full     the default answer (every member, shortest digits): the
 *            baseline, as every client got it before options.fields
 *   compact  options.fields ["local_rotations"], options.digits 6
 *   binary   the same targets and fields in the binary form (Content-Type
 *            and Accept application/vnd.ikd.batch, proto/README.md)
 * and, when --forms names it (not by default):
 *   items    N items (proto/README.md, "Many rigs in one batch"), each its
 *            own inline two-bone chain, target and seed, with the compact
 *            form's options for the batch
 * Each round's time runs from the first byte sent to the last byte of the
 * answer read (to the end of the connection; chunked answers count their
 * framing in bytes out). It prints per
 * form the best and median targets per second, bytes in and out, the
 * compact and binary forms' best rates over the full form's in the same
 * run, and ikd's peak resident memory (VmHWM of --pid) after all rounds.
 * The last line is one JSON object.
 *
 * With --clients K, K clients post the same request at once in every
 * round (each on its own connection and thread), and a round's time runs
 * from the first byte any of them sent to the last byte any of them read:
 * the rates are then the K clients' targets together (K * N per round).
 * --forms names the forms to run (comma-separated; default all three);
 * the ratios need the full form, and are 0 without it.
 *
 * Usage: batch_bench --url HOST:PORT [--targets N] [--rounds R] [--pid P]
 *                    [--clients K] [--forms full,compact,binary,items]
 * Built only for the benchmark; not part of the daemon.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "solver/ik_rng.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The request body: one two-bone chain, n reachable targets (the limb is
 * 0.95 long: targets between 0.2 and 0.9 from the hip), and options. */
static char *make_body(size_t n, const char *options, size_t *len)
{
    size_t cap = 256 + n * 80, o = 0;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    o += (size_t)snprintf(b + o, cap - o,
                          "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],"
                          "[0,0,0.1]]},\"options\":%s,\"targets\":[",
                          options);
    ik_rng s = {14};
    for (size_t i = 0; i < n; i++) {
        double r = ik_rng_uniform(&s, 0.2, 0.9), a = ik_rng_uniform(&s, 0, 6.283185307179586);
        double e = ik_rng_uniform(&s, -1.2, -0.2);
        o += (size_t)snprintf(b + o, cap - o, "%s{\"position\":[%.6f,%.6f,%.6f]}", i ? "," : "",
                              r * cos(e) * cos(a), r * cos(e) * sin(a), 1 + r * sin(e));
    }
    o += (size_t)snprintf(b + o, cap - o, "]}");
    *len = o;
    return b;
}

/* The same targets as items, each with the chain inline and its seed
 * (the chain's own positions), the options the batch's. */
static char *make_items(size_t n, const char *options, size_t *len)
{
    static const char bones[] = "[[0,0,1],[0.1,0,0.55],[0,0,0.1]]";
    size_t cap = 256 + n * 200, o = 0;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    o += (size_t)snprintf(b + o, cap - o, "{\"options\":%s,\"items\":[", options);
    ik_rng s = {14};
    for (size_t i = 0; i < n; i++) {
        double r = ik_rng_uniform(&s, 0.2, 0.9), a = ik_rng_uniform(&s, 0, 6.283185307179586);
        double e = ik_rng_uniform(&s, -1.2, -0.2);
        o += (size_t)snprintf(b + o, cap - o,
                              "%s{\"chain\":{\"kind\":\"bones\",\"positions\":%s},\"target\":"
                              "{\"position\":[%.6f,%.6f,%.6f]},\"seed\":%s}",
                              i ? "," : "", bones, r * cos(e) * cos(a), r * cos(e) * sin(a),
                              1 + r * sin(e), bones);
    }
    o += (size_t)snprintf(b + o, cap - o, "]}");
    *len = o;
    return b;
}

/* The same targets in the binary form: "IKDB", version 1, no flags, the
 * JSON head (chain and options), padding to 8 bytes, 3 doubles per
 * target (little endian, as this machine's). */
static char *make_binary(size_t n, const char *options, size_t *len)
{
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "{\"chain\":{\"kind\":\"bones\",\"positions\":[[0,0,1],[0.1,0,0.55],"
                      "[0,0,0.1]]},\"options\":%s}",
                      options);
    size_t at = (16 + (size_t)hl + 7) & ~(size_t)7;
    char *b = calloc(1, at + 24 * n);
    if (!b)
        return NULL;
    memcpy(b, "IKDB", 4);
    uint16_t v = 1, f = 0;
    uint32_t h32 = (uint32_t)hl, n32 = (uint32_t)n;
    memcpy(b + 4, &v, 2);
    memcpy(b + 6, &f, 2);
    memcpy(b + 8, &h32, 4);
    memcpy(b + 12, &n32, 4);
    memcpy(b + 16, head, (size_t)hl);
    ik_rng s = {14};
    for (size_t i = 0; i < n; i++) {
        double r = ik_rng_uniform(&s, 0.2, 0.9), a = ik_rng_uniform(&s, 0, 6.283185307179586);
        double e = ik_rng_uniform(&s, -1.2, -0.2);
        /* the JSON body's numbers, at its 6 decimals */
        double p[3];
        char t[64];
        snprintf(t, sizeof t, "%.6f %.6f %.6f", r * cos(e) * cos(a), r * cos(e) * sin(a),
                 1 + r * sin(e));
        sscanf(t, "%lf %lf %lf", &p[0], &p[1], &p[2]);
        memcpy(b + at + 24 * i, p, 24);
    }
    *len = at + 24 * n;
    return b;
}

static int connect_to(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("batch_bench: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* One POST on a new connection; the answer's body length, its status in
 * *status, the seconds taken in *secs, and when it started and ended
 * (now_s) in *t_begin and *t_end. Any thread. */
static size_t post(const char *host, int port, const char *body, size_t len, bool binary,
                   int *status, double *secs, double *t_begin, double *t_end)
{
    int fd = connect_to(host, port);
    char head[384];
    static const char bin[] = "application/vnd.ikd.batch";
    int hn = snprintf(head, sizeof head,
                      "POST /v1/solve/batch HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n%s%s%s"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      host, binary ? bin : "application/json", binary ? "Accept: " : "",
                      binary ? bin : "", binary ? "\r\n" : "", len);
    double t0 = now_s();
    *t_begin = t0;
    if (write(fd, head, (size_t)hn) != hn) {
        perror("batch_bench: write");
        exit(1);
    }
    for (size_t off = 0; off < len;) {
        ssize_t k = write(fd, body + off, len - off);
        if (k <= 0) {
            perror("batch_bench: write");
            exit(1);
        }
        off += (size_t)k;
    }
    /* read to the end (Connection: close); keep the head to find status and
     * where the body starts */
    char *buf = malloc(1 << 16);
    if (!buf) {
        perror("batch_bench: malloc");
        exit(1);
    }
    char first[512];
    size_t total = 0, firstn = 0;
    for (;;) {
        ssize_t k = read(fd, buf, 1 << 16);
        if (k <= 0)
            break;
        if (firstn < sizeof first - 1) {
            size_t c = (size_t)k < sizeof first - 1 - firstn ? (size_t)k : sizeof first - 1 - firstn;
            memcpy(first + firstn, buf, c);
            firstn += c;
        }
        total += (size_t)k;
    }
    *t_end = now_s();
    *secs = *t_end - t0;
    free(buf);
    close(fd);
    first[firstn] = '\0';
    *status = 0;
    sscanf(first, "HTTP/1.%*d %d", status);
    char *e = strstr(first, "\r\n\r\n");
    return e ? total - (size_t)(e + 4 - first) : total;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long vmhwm_kb(int pid)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

/* One client of a round (its own thread with --clients above 1). */
typedef struct client {
    pthread_t thread;
    const char *host;
    int port;
    const char *body;
    size_t len;
    bool binary;
    int status;
    size_t out;
    double secs, begin, end;
} client;

static void *client_run(void *arg)
{
    client *c = arg;
    c->out = post(c->host, c->port, c->body, c->len, c->binary, &c->status, &c->secs, &c->begin,
                  &c->end);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = NULL, *forms = "full,compact,binary";
    size_t n = 100000;
    int rounds = 5, pid = 0, clients = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            url = argv[i + 1];
        else if (strcmp(argv[i], "--targets") == 0)
            n = (size_t)atol(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--pid") == 0)
            pid = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--clients") == 0)
            clients = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--forms") == 0)
            forms = argv[i + 1];
    }
    if (!url || rounds < 1 || rounds > 100 || n == 0 || clients < 1 || clients > 256) {
        fprintf(stderr, "usage: batch_bench --url HOST:PORT [--targets N] [--rounds R] [--pid P] "
                        "[--clients K] [--forms full,compact,binary,items]\n");
        return 2;
    }
    char host[64];
    int port = 0;
    if (sscanf(url, "%63[^:]:%d", host, &port) != 2) {
        fprintf(stderr, "batch_bench: --url HOST:PORT\n");
        return 2;
    }
    enum { FORMS = 4 };
    static const char *const names[FORMS] = {"full", "compact", "binary", "items"};
    static const char *const opts[FORMS] = {"{}", "{\"fields\":[\"local_rotations\"],\"digits\":6}",
                                            "{\"fields\":[\"local_rotations\"]}",
                                            "{\"fields\":[\"local_rotations\"],\"digits\":6}"};
    bool run[FORMS];
    for (int f = 0; f < FORMS; f++) {
        const char *p = strstr(forms, names[f]);
        size_t k = strlen(names[f]);
        run[f] = p && (p == forms || p[-1] == ',') && (p[k] == '\0' || p[k] == ',');
    }
    size_t len[FORMS] = {0}, out[FORMS] = {0};
    char *body[FORMS] = {NULL};
    for (int f = 0; f < FORMS; f++)
        if (run[f] && !(body[f] = f == 2   ? make_binary(n, opts[f], &len[f])
                                  : f == 3 ? make_items(n, opts[f], &len[f])
                                           : make_body(n, opts[f], &len[f])))
            return 1;
    client *cl = calloc((size_t)clients, sizeof *cl);
    if (!cl)
        return 1;
    double t[FORMS][100];
    for (int r = 0; r < rounds; r++)
        for (int f = 0; f < FORMS; f++) {
            if (!run[f])
                continue;
            for (int k = 0; k < clients; k++) {
                cl[k] = (client){.host = host, .port = port, .body = body[f], .len = len[f],
                                 .binary = f == 2};
                if (clients == 1)
                    client_run(&cl[k]);
                else if (pthread_create(&cl[k].thread, NULL, client_run, &cl[k]) != 0) {
                    fprintf(stderr, "batch_bench: cannot start client %d\n", k);
                    return 1;
                }
            }
            double begin = 0, end = 0;
            for (int k = 0; k < clients; k++) {
                if (clients > 1)
                    pthread_join(cl[k].thread, NULL);
                if (cl[k].status != 200) {
                    fprintf(stderr, "batch_bench: %s answered %d\n", names[f], cl[k].status);
                    return 1;
                }
                if (k == 0 || cl[k].begin < begin)
                    begin = cl[k].begin;
                if (k == 0 || cl[k].end > end)
                    end = cl[k].end;
            }
            out[f] = cl[0].out;
            t[f][r] = end - begin;
            fprintf(stderr, "%s round %d: %.3f s, %.0f targets/s (%d clients), %zu bytes out\n",
                    names[f], r, t[f][r], (double)n * clients / t[f][r], clients, out[f]);
        }
    double best[FORMS] = {0}, med[FORMS] = {0};
    for (int f = 0; f < FORMS; f++) {
        if (!run[f])
            continue;
        qsort(t[f], (size_t)rounds, sizeof t[f][0], cmp);
        best[f] = (double)n * clients / t[f][0];
        med[f] = (double)n * clients / t[f][rounds / 2];
    }
    long hwm = pid ? vmhwm_kb(pid) : -1;
    printf("{\"bench\":\"http_batch_two_bone\",\"targets\":%zu,\"rounds\":%d,\"clients\":%d,"
           "\"full_bytes_in\":%zu,\"full_bytes_out\":%zu,\"full_best_tps\":%.0f,"
           "\"full_median_tps\":%.0f,\"compact_bytes_in\":%zu,\"compact_bytes_out\":%zu,"
           "\"compact_best_tps\":%.0f,\"compact_median_tps\":%.0f,\"ratio_compact_vs_full\":%.3f,"
           "\"binary_bytes_in\":%zu,\"binary_bytes_out\":%zu,\"binary_best_tps\":%.0f,"
           "\"binary_median_tps\":%.0f,\"ratio_binary_vs_full\":%.3f,"
           "\"items_bytes_in\":%zu,\"items_bytes_out\":%zu,\"items_best_tps\":%.0f,"
           "\"items_median_tps\":%.0f,\"goal_tps\":1000000,\"ikd_peak_rss_kb\":%ld}\n",
           n, rounds, clients, len[0], out[0], best[0], med[0], len[1], out[1], best[1], med[1],
           best[0] > 0 ? best[1] / best[0] : 0.0, len[2], out[2], best[2], med[2],
           best[0] > 0 ? best[2] / best[0] : 0.0, len[3], out[3], best[3], med[3], hwm);
    for (int f = 0; f < FORMS; f++)
        free(body[f]);
    free(cl);
    return 0;
}

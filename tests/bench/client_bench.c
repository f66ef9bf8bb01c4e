/*
 * client_bench.c: a game server's ticks through libikdclient
 * (build/client_bench), the same load as `ws_bench tick` so that
 * tests/bench/run.sh can print the two side by side in the same run:
 *
 *   client_bench --url HOST:PORT [--characters 1000] [--window 1]
 *                [--seconds 5] [--warmup-ms 500] [--form json|binary]
 *
 * One connection (ikd_conn, in its own ikd_conn_poll loop), --characters
 * streams, each on a two-bone rig of its own (the limb (0,0,0)-(0,0.5,0)-
 * (0,1,0) scaled by 1 to 1.05 per character), opened with
 * options.fields ["local_rotations"] and options.digits 6, as ws_bench
 * does; each tick is built with ikd_tick_begin / ikd_tick_add (one typed
 * target per character: the numbers are formatted by the client) /
 * ikd_tick_send, and its answer arrives decoded as one IKD_EV_TICK (every
 * character's local rotations as doubles). The targets are ws_bench's:
 * the same xorshift sequence, rounded to 6 decimals as ws_bench prints
 * them, character k starting at (37 k) mod 512. --window ticks are kept
 * outstanding (the next is sent when one is answered). --form binary
 * turns on the binary tick form (ikd_conn_set_binary_ticks: each tick one
 * binary message of doubles, its answer read from ikd's binary message,
 * nothing printed or parsed); json (the default) sends JSON text.
 *
 * Output: progress and errors on stderr; one JSON object on stdout:
 *   {"bench":"client_tick","form":"json","characters":1000,"window":1,"seconds":5.00,
 *    "ticks":..,"skipped_ticks":..,"ticks_per_s":..,"p50_us":..,"p99_us":..,
 *    "max_us":..,"client_cpu_us_per_tick":..,"failed":..,"bytes_in_per_tick":..,
 *    "bytes_out_per_tick":..}
 * (latency per tick from ikd_tick_send to its event; client CPU: this
 * process's user + system time over the measured ticks; bytes in: what
 * the client sent per tick, framing included, out: what ikd answered, as
 * ws_bench counts them). Exit status 0
 * when ticks were measured with no error, 1 otherwise.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <ikd/client.h>

#define NTARGETS   512
#define WINDOW_MAX 64
#define HIST_US    1000000

typedef struct bench {
    int characters, window;
    double seconds;
    int warmup_ms;
    bool binary;
    double targets[NTARGETS][3];
    long long next_tick, done_tick;
    uint64_t sent_ns[WINDOW_MAX];
    bool measuring;
    uint64_t ticks, skipped, errors, failed;
    uint64_t other_form; /* answers not in the form asked for (ev->binary) */
    uint32_t *hist;
    uint64_t max_ns;
    int opened;
    char (*names)[16]; /* "s<k>", made once */
} bench;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ws_bench's two-bone targets, as the text it sends reads back */
static void make_targets(bench *b)
{
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < NTARGETS; i++) {
        double v[3], r2;
        do {
            for (int k = 0; k < 3; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v[k] = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            }
            r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        } while (r2 < 0.15 * 0.15 || r2 > 0.95 * 0.95);
        for (int k = 0; k < 3; k++) {
            char t[32];
            snprintf(t, sizeof t, "%.6f", v[k]);
            b->targets[i][k] = strtod(t, NULL);
        }
    }
}

static void on_event(ikd_conn *c, const ikd_event *ev, void *user)
{
    bench *b = user;
    uint64_t now = now_ns();
    switch (ev->kind) {
    case IKD_EV_OPENED:
        b->opened++;
        break;
    case IKD_EV_TICK: {
        const ikd_tick *t = ev->tick;
        if (t->seq <= b->done_tick || t->seq >= b->next_tick ||
            t->skipped != t->seq - b->done_tick - 1 || (int)t->count != b->characters) {
            if (b->errors++ < 3)
                fprintf(stderr, "client_bench: unexpected tick answer %lld (%zu answers)\n", t->seq,
                        t->count);
        }
        b->other_form += ev->binary != b->binary;
        for (size_t i = 0; i < t->count; i++)
            if (!t->entries[i].result || t->entries[i].result->status != IKD_STATUS_SUCCESS)
                b->failed++;
        if (b->measuring) {
            b->skipped += (uint64_t)(t->seq - b->done_tick - 1);
            uint64_t ns = now - b->sent_ns[t->seq % b->window];
            uint64_t us = ns / 1000;
            b->hist[us < HIST_US ? us : HIST_US - 1]++;
            if (ns > b->max_ns)
                b->max_ns = ns;
            b->ticks++;
        }
        b->done_tick = t->seq;
        break;
    }
    case IKD_EV_ERROR:
    case IKD_EV_DISCONNECTED:
        if (b->errors++ < 3)
            fprintf(stderr, "client_bench: %s: %s\n", ikd_errcode_name(ev->error->code),
                    ev->error->message);
        break;
    default:
        break;
    }
}

static void send_ticks(bench *b, ikd_conn *c)
{
    ikd_error err;
    while (b->next_tick - 1 - b->done_tick < b->window) {
        long long t = b->next_tick;
        if (ikd_tick_begin(c, t, &err))
            break;
        for (int k = 0; k < b->characters; k++) {
            const double *p = b->targets[((size_t)k * 37 + (size_t)t) % NTARGETS];
            ikd_target target = {.position = {p[0], p[1], p[2]}};
            ikd_tick_add(c, b->names[k], &target, NULL, IKD_SEQ_AUTO, &err);
        }
        b->sent_ns[t % b->window] = now_ns();
        if (ikd_tick_send(c, &err)) {
            fprintf(stderr, "client_bench: %s\n", err.message);
            b->errors++;
            return;
        }
        b->next_tick++;
    }
}

static uint64_t percentile(const bench *b, double q)
{
    uint64_t want = (uint64_t)((double)b->ticks * q), seen = 0;
    for (uint64_t us = 0; us < HIST_US; us++) {
        seen += b->hist[us];
        if (seen > want)
            return us;
    }
    return HIST_US;
}

int main(int argc, char **argv)
{
    bench b = {.characters = 1000, .window = 1, .seconds = 5, .warmup_ms = 500};
    const char *url = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--url") == 0)
            url = v;
        else if (strcmp(k, "--characters") == 0)
            b.characters = atoi(v);
        else if (strcmp(k, "--window") == 0)
            b.window = atoi(v);
        else if (strcmp(k, "--seconds") == 0)
            b.seconds = atof(v);
        else if (strcmp(k, "--warmup-ms") == 0)
            b.warmup_ms = atoi(v);
        else if (strcmp(k, "--form") == 0 && (strcmp(v, "json") == 0 || strcmp(v, "binary") == 0))
            b.binary = strcmp(v, "binary") == 0;
        else {
            fprintf(stderr, "client_bench: unknown option %s\n", k);
            return 1;
        }
    }
    if (!url || b.characters < 1 || b.window < 1 || b.window > WINDOW_MAX || !(b.seconds > 0)) {
        fprintf(stderr, "usage: client_bench --url HOST:PORT [--characters N] [--window W "
                        "(1..64)] [--seconds S] [--warmup-ms MS] [--form json|binary]\n");
        return 1;
    }
    b.hist = calloc(HIST_US, sizeof *b.hist);
    if (!b.hist)
        return 1;
    make_targets(&b);
    b.names = calloc((size_t)b.characters, sizeof *b.names);
    if (!b.names)
        return 1;
    for (int k = 0; k < b.characters; k++)
        snprintf(b.names[k], sizeof b.names[k], "s%d", k);
    char full[256];
    snprintf(full, sizeof full, "ws://%s", url);
    ikd_conn_opts o = {.url = full, .on_event = on_event, .user = &b};
    ikd_error err;
    ikd_conn *c = ikd_conn_new(&o, &err);
    if (!c) {
        fprintf(stderr, "client_bench: %s\n", err.message);
        return 1;
    }
    ikd_conn_set_binary_ticks(c, b.binary);
    for (int k = 0; k < b.characters; k++) {
        double sc = 1.0 + 0.05 * (double)k / (double)b.characters;
        char chain[160], name[16];
        snprintf(chain, sizeof chain,
                 "{\"kind\":\"bones\",\"positions\":[[0,0,0],[0.0,%.17g,0.0],[0.0,%.17g,0.0]]}",
                 0.5 * sc, sc);
        snprintf(name, sizeof name, "s%d", k);
        ikd_chain ch = {.json = chain};
        if (ikd_stream_open(c, name, &ch, NULL, "{\"fields\":[\"local_rotations\"],\"digits\":6}",
                            &err)) {
            fprintf(stderr, "client_bench: open %s: %s\n", name, err.message);
            return 1;
        }
    }
    uint64_t t0 = now_ns();
    while (b.opened < b.characters && !b.errors) {
        if (now_ns() - t0 > 30000000000u) {
            fprintf(stderr, "client_bench: the streams did not open\n");
            return 1;
        }
        ikd_conn_poll(c, 100);
    }
    b.next_tick = 1;
    uint64_t warm_end = now_ns() + (uint64_t)b.warmup_ms * 1000000u, end = 0;
    double cpu0 = 0;
    ikd_conn_stats st0 = {0}, st1;
    for (;;) {
        uint64_t now = now_ns();
        if (!b.measuring && now >= warm_end) {
            b.measuring = true;
            end = now + (uint64_t)(b.seconds * 1e9);
            cpu0 = cpu_s();
            ikd_conn_get_stats(c, &st0);
        }
        if (b.measuring && now >= end)
            break;
        if (b.errors)
            break;
        send_ticks(&b, c);
        if (ikd_conn_poll(c, 10) < 0)
            break;
    }
    double cpu = cpu_s() - cpu0;
    ikd_conn_get_stats(c, &st1);
    ikd_conn_free(c);
    double per = b.ticks ? (double)b.ticks : 1.0;
    double secs = b.seconds;
    printf("{\"bench\":\"client_tick\",\"form\":\"%s\",\"characters\":%d,\"window\":%d,\"seconds\":"
           "%.2f,"
           "\"ticks\":%llu,\"skipped_ticks\":%llu,\"ticks_per_s\":%.1f,\"p50_us\":%llu,"
           "\"p99_us\":%llu,\"max_us\":%llu,\"client_cpu_us_per_tick\":%.1f,\"failed\":%llu,"
           "\"bytes_in_per_tick\":%.0f,\"bytes_out_per_tick\":%.0f}\n",
           b.binary ? "binary" : "json", b.characters, b.window, secs, (unsigned long long)b.ticks,
           (unsigned long long)b.skipped, (double)b.ticks / secs,
           (unsigned long long)percentile(&b, 0.5), (unsigned long long)percentile(&b, 0.99),
           (unsigned long long)(b.max_ns / 1000), b.ticks ? cpu * 1e6 / (double)b.ticks : 0.0,
           (unsigned long long)b.failed, (double)(st1.bytes_out - st0.bytes_out) / per,
           (double)(st1.bytes_in - st0.bytes_in) / per);
    free(b.hist);
    free(b.names);
    if (b.other_form)
        fprintf(stderr, "client_bench: %llu answers not in the %s form\n",
                (unsigned long long)b.other_form, b.binary ? "binary" : "json");
    return b.ticks && !b.errors && !b.failed && !b.other_form ? 0 : 1;
}

/*
 * metrics.c: the daemon's Prometheus metrics and their text exposition
 * (GET /metrics, format version 0.0.4).
 *
 * Series:
 *   ikd_http_requests_total{route,status}        counter
 *   ikd_solve_duration_seconds{solver}           histogram (per target)
 *   ikd_solves_total{solver,status}              counter (per target, by the
 *                                                answer's "status" word)
 *   ikd_rejected_total{reason}                   counter
 *   ikd_ws_streams_open                          gauge
 *   ikd_pool_queue_depth                         gauge (sampled at render)
 *   ikd_registry_chains                          gauge (sampled at render)
 *   ikd_http_requests_active                     gauge (sampled at render)
 *   ikd_held_bytes{what}                         gauge (sampled before render):
 *       bytes held for clients against each bound (registry, request_bodies,
 *       answers, stream_chains, streams)
 *   ikd_registry_shared_up                       gauge (with --redis; sampled
 *                                                before render): 1 while the
 *                                                loop's connections to Redis
 *                                                are up
 *   ikd_registry_shared_total{op,result}         counter (with --redis): fetch
 *                                                found|missing|unavailable,
 *                                                store|forget ok|unavailable,
 *                                                check kept|dropped|refused,
 *                                                connection lost, ...|shutdown
 *   ikd_loop_connections{loop}                   gauge (sampled before render):
 *       the connections each event loop serves
 *   ikd_build_info{version,commit,libmicrohttpd,libuv,jansson}  gauge, 1
 *   process_cpu_seconds_total, process_resident_memory_bytes,
 *   process_virtual_memory_bytes, process_open_fds, process_max_fds,
 *   process_start_time_seconds                   the standard process
 *                                                metrics, read from /proc at
 *                                                render (Linux; a value that
 *                                                cannot be read is left out)
 * Label sets are small and fixed by the code (route names, solver names,
 * reason literals), so they live in flat arrays searched linearly; the
 * label strings are not copied and must outlive the metrics.
 *
 * Shards: every thread that records (each loop, each pool thread) counts
 * into a shard of its own, found through a thread-local pointer and
 * guarded by the shard's own mutex, which only a scrape ever contends for;
 * a scrape locks each shard in turn and adds them up. So several loops and
 * the pool record without sharing a lock or a cache line.
 */
#include <dirent.h>
#include <jansson.h>
#include <stdatomic.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include "proto/proto_json_write.h"
#include "server/build_info.h"
#include "server/metrics.h"
#include "server/srv.h"

/* Histogram upper bounds in seconds (5 us .. 1 s), then +Inf. */
static const double bounds[] = {5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 1.0};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

typedef struct req_count {
    const char *route;
    int status;
    unsigned long long n;
} req_count;

typedef struct solve_hist {
    const char *solver;
    unsigned long long buckets[NBOUNDS + 1]; /* non-cumulative; last = above all bounds */
    unsigned long long count;
    double sum;
} solve_hist;

typedef struct outcome_count {
    const char *solver;
    const char *status;
    unsigned long long n;
} outcome_count;

typedef struct reason_count {
    const char *reason;
    unsigned long long n;
} reason_count;

/* One thread's counts (or, in a scrape, the sum of all). */
typedef struct shard {
    struct shard *next;
    uv_thread_t owner;
    uv_mutex_t lock;
    req_count *reqs;
    size_t nreqs, capreqs;
    solve_hist *hists;
    size_t nhists, caphists;
    reason_count *reasons;
    size_t nreasons, capreasons;
    outcome_count *outcomes;
    size_t noutcomes, capoutcomes;
    outcome_count *shared; /* (op, result) of the shared registry */
    size_t nshared, capshared;
    long streams;
} shard;

struct srv_metrics {
    uv_mutex_t lock; /* the list of shards, and held */
    shard *shards;
    uint64_t id;     /* never reused: a thread's cached shard names it */
    srv_metrics_held held;
};

/* The calling thread's shard of the metrics with that id. */
static _Thread_local struct {
    uint64_t id;
    shard *s;
} mine;
static atomic_uint_fast64_t next_id = 1;

static void shard_clear(shard *s)
{
    free(s->reqs);
    free(s->hists);
    free(s->reasons);
    free(s->outcomes);
    free(s->shared);
}

srv_metrics *srv_metrics_new(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (m && uv_mutex_init(&m->lock) != 0) {
        free(m);
        return NULL;
    }
    if (m) {
        m->held.shared_up = -1;
        m->id = atomic_fetch_add(&next_id, 1);
    }
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m)
        return;
    for (shard *s = m->shards, *next; s; s = next) {
        next = s->next;
        shard_clear(s);
        uv_mutex_destroy(&s->lock);
        free(s);
    }
    uv_mutex_destroy(&m->lock);
    free(m);
}

/* The calling thread's shard, made on its first use, locked; NULL when out
 * of memory (the count is then lost). */
static shard *lock_mine(srv_metrics *m)
{
    shard *s = mine.id == m->id ? mine.s : NULL;
    if (!s) {
        uv_thread_t self = uv_thread_self();
        uv_mutex_lock(&m->lock);
        for (s = m->shards; s && !uv_thread_equal(&s->owner, &self); s = s->next)
            ;
        if (!s && (s = calloc(1, sizeof *s))) {
            if (uv_mutex_init(&s->lock) != 0) {
                free(s);
                s = NULL;
            } else {
                s->owner = self;
                s->next = m->shards;
                m->shards = s;
            }
        }
        uv_mutex_unlock(&m->lock);
        if (!s)
            return NULL;
        mine.id = m->id;
        mine.s = s;
    }
    uv_mutex_lock(&s->lock);
    return s;
}

/* Makes room for one more element of size sz in *arr (cap *cap, n used).
 * Returns 0 or -1 (nothing changed). */
static int reserve(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, ncap * sz);
    if (!p)
        return -1;
    memset((char *)p + *cap * sz, 0, (ncap - *cap) * sz);
    *arr = p;
    *cap = ncap;
    return 0;
}

/* The names come from ikd's own tables (one pointer per name): a pointer
 * comparison finds them before strcmp is asked. */
static bool same_name(const char *a, const char *b)
{
    return a == b || strcmp(a, b) == 0;
}

/* (m's lock held, or m a scrape's own sum) */
static void request_locked(shard *m, const char *route, int status, unsigned long long n)
{
    size_t i = 0;
    while (i < m->nreqs && !(m->reqs[i].status == status && same_name(m->reqs[i].route, route)))
        i++;
    if (i == m->nreqs) {
        if (reserve((void **)&m->reqs, &m->capreqs, m->nreqs, sizeof *m->reqs) != 0)
            return;
        m->reqs[i].route = route;
        m->reqs[i].status = status;
        m->nreqs++;
    }
    m->reqs[i].n += n;
}

void srv_metrics_request(srv_metrics *m, const char *route, int status)
{
    shard *s = lock_mine(m);
    if (!s)
        return;
    request_locked(s, route, status, 1);
    uv_mutex_unlock(&s->lock);
}

/* (m's lock held, or m a scrape's own sum) */
static void observe_locked(shard *m, const char *solver, double seconds_each, size_t n)
{
    if (!(seconds_each >= 0.0))
        seconds_each = 0.0;
    size_t i = 0;
    while (i < m->nhists && !same_name(m->hists[i].solver, solver))
        i++;
    if (i == m->nhists) {
        if (reserve((void **)&m->hists, &m->caphists, m->nhists, sizeof *m->hists) != 0)
            return;
        m->hists[i].solver = solver;
        m->nhists++;
    }
    size_t b = 0;
    while (b < NBOUNDS && seconds_each > bounds[b])
        b++;
    m->hists[i].buckets[b] += n;
    m->hists[i].count += n;
    m->hists[i].sum += seconds_each * (double)n;
}

/* (m's lock held, or m a scrape's own sum) */
static void outcome_locked(shard *m, const char *solver, const char *status, size_t n)
{
    size_t i = 0;
    while (i < m->noutcomes &&
           !(same_name(m->outcomes[i].solver, solver) && same_name(m->outcomes[i].status, status)))
        i++;
    if (i == m->noutcomes) {
        if (reserve((void **)&m->outcomes, &m->capoutcomes, m->noutcomes,
                    sizeof *m->outcomes) != 0)
            return;
        m->outcomes[i].solver = solver;
        m->outcomes[i].status = status;
        m->noutcomes++;
    }
    m->outcomes[i].n += n;
}

void srv_metrics_observe_solves(srv_metrics *m, const char *solver, double seconds_each,
                                size_t n)
{
    shard *s = n ? lock_mine(m) : NULL;
    if (!s)
        return;
    observe_locked(s, solver, seconds_each, n);
    uv_mutex_unlock(&s->lock);
}

void srv_metrics_solves_outcome(srv_metrics *m, const char *solver, double seconds_each,
                                const char *status, size_t n)
{
    shard *s = n ? lock_mine(m) : NULL;
    if (!s)
        return;
    observe_locked(s, solver, seconds_each, n);
    outcome_locked(s, solver, status, n);
    uv_mutex_unlock(&s->lock);
}

void srv_metrics_observe_solve(srv_metrics *m, const char *solver, double seconds)
{
    srv_metrics_observe_solves(m, solver, seconds, 1);
}

void srv_metrics_outcome(srv_metrics *m, const char *solver, const char *status, size_t n)
{
    shard *s = n ? lock_mine(m) : NULL;
    if (!s)
        return;
    outcome_locked(s, solver, status, n);
    uv_mutex_unlock(&s->lock);
}

/* (m's lock held, or m a scrape's own sum) */
static void reason_locked(shard *m, const char *reason, unsigned long long n)
{
    size_t i = 0;
    while (i < m->nreasons && strcmp(m->reasons[i].reason, reason) != 0)
        i++;
    if (i == m->nreasons) {
        if (reserve((void **)&m->reasons, &m->capreasons, m->nreasons, sizeof *m->reasons) != 0)
            return;
        m->reasons[i].reason = reason;
        m->nreasons++;
    }
    m->reasons[i].n += n;
}

void srv_metrics_reject(srv_metrics *m, const char *reason)
{
    shard *s = lock_mine(m);
    if (!s)
        return;
    reason_locked(s, reason, 1);
    uv_mutex_unlock(&s->lock);
}

/* (m's lock held, or m a scrape's own sum) */
static void shared_locked(shard *m, const char *op, const char *result, unsigned long long n)
{
    size_t i = 0;
    while (i < m->nshared &&
           !(same_name(m->shared[i].solver, op) && same_name(m->shared[i].status, result)))
        i++;
    if (i == m->nshared) {
        if (reserve((void **)&m->shared, &m->capshared, m->nshared, sizeof *m->shared) != 0)
            return;
        m->shared[i].solver = op;
        m->shared[i].status = result;
        m->shared[i].n = 0;
        m->nshared++;
    }
    m->shared[i].n += n;
}

void srv_metrics_shared(srv_metrics *m, const char *op, const char *result)
{
    shard *s = lock_mine(m);
    if (!s)
        return;
    shared_locked(s, op, result, 1);
    uv_mutex_unlock(&s->lock);
}

void srv_metrics_streams_add(srv_metrics *m, int delta)
{
    shard *s = lock_mine(m);
    if (!s)
        return;
    s->streams += delta;
    uv_mutex_unlock(&s->lock);
}

void srv_metrics_set_held(srv_metrics *m, const srv_metrics_held *held)
{
    uv_mutex_lock(&m->lock);
    m->held = *held;
    uv_mutex_unlock(&m->lock);
}

long srv_metrics_streams(srv_metrics *m)
{
    long v = 0;
    uv_mutex_lock(&m->lock);
    for (shard *s = m->shards; s; s = s->next) {
        uv_mutex_lock(&s->lock);
        v += s->streams;
        uv_mutex_unlock(&s->lock);
    }
    uv_mutex_unlock(&m->lock);
    return v;
}

/* The sum of every shard into *sum (zeroed first), and held into *held. */
static void sum_shards(srv_metrics *m, shard *sum, srv_metrics_held *held)
{
    memset(sum, 0, sizeof *sum);
    uv_mutex_lock(&m->lock);
    *held = m->held;
    for (shard *s = m->shards; s; s = s->next) {
        uv_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->nreqs; i++)
            request_locked(sum, s->reqs[i].route, s->reqs[i].status, s->reqs[i].n);
        for (size_t i = 0; i < s->nhists; i++) {
            const solve_hist *h = &s->hists[i];
            size_t k = 0;
            while (k < sum->nhists && !same_name(sum->hists[k].solver, h->solver))
                k++;
            if (k == sum->nhists) {
                if (reserve((void **)&sum->hists, &sum->caphists, sum->nhists,
                            sizeof *sum->hists) != 0)
                    continue;
                sum->hists[k].solver = h->solver;
                sum->nhists++;
            }
            for (size_t b = 0; b <= NBOUNDS; b++)
                sum->hists[k].buckets[b] += h->buckets[b];
            sum->hists[k].count += h->count;
            sum->hists[k].sum += h->sum;
        }
        for (size_t i = 0; i < s->noutcomes; i++)
            outcome_locked(sum, s->outcomes[i].solver, s->outcomes[i].status,
                           (size_t)s->outcomes[i].n);
        for (size_t i = 0; i < s->nreasons; i++)
            reason_locked(sum, s->reasons[i].reason, s->reasons[i].n);
        for (size_t i = 0; i < s->nshared; i++)
            shared_locked(sum, s->shared[i].solver, s->shared[i].status, s->shared[i].n);
        sum->streams += s->streams;
        uv_mutex_unlock(&s->lock);
    }
    uv_mutex_unlock(&m->lock);
}

/* ---- text exposition --------------------------------------------------- */

/* Label values are code literals, but escape anyway per the format. */
static void put_label(proto_jw *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            proto_jw_raw(b, "\\", 1);
            proto_jw_raw(b, s, 1);
        } else if (*s == '\n') {
            proto_jw_raw(b, "\\n", 2);
        } else {
            proto_jw_raw(b, s, 1);
        }
    }
}

static void render_build_info(proto_jw *b)
{
    proto_jw_printf(b, "# HELP ikd_build_info The version and commit of ikd and of the libraries it "
                 "runs with; always 1.\n"
                 "# TYPE ikd_build_info gauge\n"
                 "ikd_build_info{version=\"");
    put_label(b, srv_version);
    proto_jw_printf(b, "\",commit=\"");
    put_label(b, srv_commit);
    proto_jw_printf(b, "\",libmicrohttpd=\"");
    put_label(b, MHD_get_version());
    proto_jw_printf(b, "\",libuv=\"");
    put_label(b, uv_version_string());
    proto_jw_printf(b, "\",jansson=\"");
    put_label(b, JANSSON_VERSION);
    proto_jw_printf(b, "\"} 1\n");
}

/* The standard process metrics (Prometheus client libraries' names), from
 * /proc/self/stat (fields 14-15 utime and stime in clock ticks, 22 the start
 * time in ticks since boot, 23 vsize in bytes, 24 rss in pages),
 * /proc/stat's btime, /proc/self/fd and RLIMIT_NOFILE. */
static void render_process(proto_jw *b)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    /* the command name (field 2) is in parentheses and may hold blanks */
    char *p = strrchr(buf, ')');
    unsigned long utime = 0, stime = 0, vsize = 0;
    unsigned long long start = 0;
    long rss = 0;
    if (p && tck > 0 && page > 0 &&
        sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d "
               "%llu %lu %ld",
               &utime, &stime, &start, &vsize, &rss) == 5) {
        proto_jw_printf(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent "
                     "in seconds.\n"
                     "# TYPE process_cpu_seconds_total counter\n"
                     "process_cpu_seconds_total %.17g\n"
                     "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                     "# TYPE process_resident_memory_bytes gauge\n"
                     "process_resident_memory_bytes %.17g\n"
                     "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                     "# TYPE process_virtual_memory_bytes gauge\n"
                     "process_virtual_memory_bytes %lu\n",
                  (double)(utime + stime) / (double)tck, (double)rss * (double)page, vsize);
        unsigned long long btime = 0;
        FILE *sf = fopen("/proc/stat", "r");
        char line[256];
        while (sf && fgets(line, sizeof line, sf))
            if (sscanf(line, "btime %llu", &btime) == 1)
                break;
        if (sf)
            fclose(sf);
        if (btime > 0)
            proto_jw_printf(b, "# HELP process_start_time_seconds Start time of the process since "
                         "unix epoch in seconds.\n"
                         "# TYPE process_start_time_seconds gauge\n"
                         "process_start_time_seconds %.17g\n",
                      (double)btime + (double)start / (double)tck);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        long fds = 0;
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.')
                fds++;
        closedir(d);
        proto_jw_printf(b, "# HELP process_open_fds Number of open file descriptors.\n"
                     "# TYPE process_open_fds gauge\n"
                     "process_open_fds %ld\n",
                  fds - 1); /* less the one opendir holds */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        proto_jw_printf(b, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                     "# TYPE process_max_fds gauge\n"
                     "process_max_fds %llu\n",
                  (unsigned long long)rl.rlim_cur);
}

char *srv_metrics_render(srv_metrics *metrics, size_t pool_depth, size_t registry_chains,
                         size_t active_requests, size_t *len)
{
    proto_jw b;
    proto_jw_init(&b, NULL, 0);
    if (proto_jw_reserve(&b, 4096) != 0)
        return NULL;
    shard all, *m = &all;
    srv_metrics_held held;
    sum_shards(metrics, &all, &held);

    proto_jw_printf(&b, "# HELP ikd_http_requests_total HTTP requests answered, by route and status.\n"
                  "# TYPE ikd_http_requests_total counter\n");
    for (size_t i = 0; i < m->nreqs; i++) {
        proto_jw_printf(&b, "ikd_http_requests_total{route=\"");
        put_label(&b, m->reqs[i].route);
        proto_jw_printf(&b, "\",status=\"%d\"} %llu\n", m->reqs[i].status, m->reqs[i].n);
    }

    proto_jw_printf(&b, "# HELP ikd_solve_duration_seconds Time per solved target, by solver.\n"
                  "# TYPE ikd_solve_duration_seconds histogram\n");
    for (size_t i = 0; i < m->nhists; i++) {
        const solve_hist *h = &m->hists[i];
        unsigned long long cum = 0;
        for (size_t k = 0; k <= NBOUNDS; k++) {
            cum += h->buckets[k];
            proto_jw_printf(&b, "ikd_solve_duration_seconds_bucket{solver=\"");
            put_label(&b, h->solver);
            if (k < NBOUNDS)
                proto_jw_printf(&b, "\",le=\"%g\"} %llu\n", bounds[k], cum);
            else
                proto_jw_printf(&b, "\",le=\"+Inf\"} %llu\n", cum);
        }
        proto_jw_printf(&b, "ikd_solve_duration_seconds_sum{solver=\"");
        put_label(&b, h->solver);
        proto_jw_printf(&b, "\"} %.9g\n", h->sum);
        proto_jw_printf(&b, "ikd_solve_duration_seconds_count{solver=\"");
        put_label(&b, h->solver);
        proto_jw_printf(&b, "\"} %llu\n", h->count);
    }

    proto_jw_printf(&b, "# HELP ikd_solves_total Targets solved, by solver and answered status.\n"
                  "# TYPE ikd_solves_total counter\n");
    for (size_t i = 0; i < m->noutcomes; i++) {
        proto_jw_printf(&b, "ikd_solves_total{solver=\"");
        put_label(&b, m->outcomes[i].solver);
        proto_jw_printf(&b, "\",status=\"");
        put_label(&b, m->outcomes[i].status);
        proto_jw_printf(&b, "\"} %llu\n", m->outcomes[i].n);
    }

    proto_jw_printf(&b, "# HELP ikd_rejected_total Requests or messages refused, by reason.\n"
                  "# TYPE ikd_rejected_total counter\n");
    for (size_t i = 0; i < m->nreasons; i++) {
        proto_jw_printf(&b, "ikd_rejected_total{reason=\"");
        put_label(&b, m->reasons[i].reason);
        proto_jw_printf(&b, "\"} %llu\n", m->reasons[i].n);
    }

    proto_jw_printf(&b, "# HELP ikd_ws_streams_open WebSocket streams open now.\n"
                  "# TYPE ikd_ws_streams_open gauge\n"
                  "ikd_ws_streams_open %ld\n",
              m->streams);
    proto_jw_printf(&b, "# HELP ikd_held_bytes Bytes held for clients, by what holds them.\n"
                        "# TYPE ikd_held_bytes gauge\n"
                        "ikd_held_bytes{what=\"registry\"} %zu\n"
                        "ikd_held_bytes{what=\"request_bodies\"} %zu\n"
                        "ikd_held_bytes{what=\"answers\"} %zu\n"
                        "ikd_held_bytes{what=\"stream_chains\"} %zu\n"
                        "ikd_held_bytes{what=\"streams\"} %zu\n",
                    held.registry, held.request_bodies, held.answers, held.stream_chains,
                    held.streams);
    if (held.loops > 0)
        proto_jw_printf(&b, "# HELP ikd_loop_connections Connections each event loop serves now.\n"
                            "# TYPE ikd_loop_connections gauge\n");
    for (unsigned i = 0; i < held.loops && i < SRV_METRICS_LOOPS_MAX; i++)
        proto_jw_printf(&b, "ikd_loop_connections{loop=\"%u\"} %zu\n", i,
                        held.loop_connections[i]);
    if (held.shared_up >= 0) {
        proto_jw_printf(&b, "# HELP ikd_registry_shared_up Whether this replica's connections to "
                            "the shared registry (Redis, --redis) are up.\n"
                            "# TYPE ikd_registry_shared_up gauge\n"
                            "ikd_registry_shared_up %d\n"
                            "# HELP ikd_registry_shared_total Operations on the shared registry, "
                            "by operation and result.\n"
                            "# TYPE ikd_registry_shared_total counter\n",
                        held.shared_up);
        for (size_t i = 0; i < m->nshared; i++) {
            proto_jw_printf(&b, "ikd_registry_shared_total{op=\"");
            put_label(&b, m->shared[i].solver);
            proto_jw_printf(&b, "\",result=\"");
            put_label(&b, m->shared[i].status);
            proto_jw_printf(&b, "\"} %llu\n", m->shared[i].n);
        }
    }
    shard_clear(&all);

    proto_jw_printf(&b, "# HELP ikd_pool_queue_depth Work items queued or running on the thread pool.\n"
                  "# TYPE ikd_pool_queue_depth gauge\n"
                  "ikd_pool_queue_depth %zu\n"
                  "# HELP ikd_registry_chains Chains and scenes stored in the registry.\n"
                  "# TYPE ikd_registry_chains gauge\n"
                  "ikd_registry_chains %zu\n"
                  "# HELP ikd_http_requests_active HTTP requests begun and not yet completed.\n"
                  "# TYPE ikd_http_requests_active gauge\n"
                  "ikd_http_requests_active %zu\n",
              pool_depth, registry_chains, active_requests);
    render_build_info(&b);
    render_process(&b);
    return proto_jw_finish(&b, len); /* NULL when out of memory */
}

/* ---- context shorthands ------------------------------------------------ */

void srv_metrics_solved(srv_ctx *ctx, const proto_job *job, size_t begin, size_t end,
                        double seconds)
{
    if (end <= begin)
        return;
    const char *solver = proto_job_solver_name(job);
    if (end - begin == 1) { /* a solve, a stream's target: one lock */
        srv_metrics_solves_outcome(ctx->metrics, solver, seconds, proto_job_status(job, begin),
                                   1);
        return;
    }
    srv_metrics_observe_solves(ctx->metrics, solver, seconds / (double)(end - begin),
                               end - begin);
    /* answers of one job take a handful of status words: count runs */
    const char *run = NULL;
    size_t n = 0;
    for (size_t i = begin; i < end; i++) {
        const char *st = proto_job_status(job, i);
        if (run && strcmp(st, run) != 0) {
            srv_metrics_outcome(ctx->metrics, solver, run, n);
            n = 0;
        }
        run = st;
        n++;
    }
    srv_metrics_outcome(ctx->metrics, solver, run, n);
}

void srv_metrics_rejected(srv_ctx *ctx, const char *reason)
{
    srv_metrics_reject(ctx->metrics, reason);
}

void srv_metrics_stream_open(srv_ctx *ctx)
{
    srv_metrics_streams_add(ctx->metrics, +1);
}

void srv_metrics_stream_close(srv_ctx *ctx)
{
    srv_metrics_streams_add(ctx->metrics, -1);
}

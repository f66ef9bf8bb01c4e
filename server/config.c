/*
 * config.c: defaults, flags and environment variables of the daemon.
 *
 * Precedence: built-in default < environment variable < flag. Flags are
 * "--name value" or "--name=value". --allow-origin may be repeated and takes
 * a comma-separated list. The token is never printed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/build_info.h"
#include "server/config.h"

void srv_config_default(srv_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_host = strdup("127.0.0.1");
    cfg->listen_port = 8080;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = cores > 0 ? (unsigned)cores : 2;
    cfg->max_connections = 10000;
    cfg->conn_timeout_s = 30;
    cfg->drain_timeout_s = 10;
    cfg->request_timeout_s = 60;
    cfg->max_conn_per_addr = 1000;
    cfg->body_budget_bytes = 256u << 20;
    proto_limits_default(&cfg->limits);
    cfg->max_message_bytes = 1u << 20;
    cfg->ws_send_queue_bytes = 4u << 20;
    cfg->registry_bytes = 64u << 20;
    cfg->pool_queue_max = 1024;
    cfg->inline_cost_us = 5.0;
    cfg->log_format = SRV_LOG_TEXT;
    cfg->log_level = SRV_LOG_INFO;
}

static void free_origins(srv_config *cfg)
{
    for (size_t i = 0; i < cfg->n_allow_origins; i++)
        free(cfg->allow_origins[i]);
    free(cfg->allow_origins);
    cfg->allow_origins = NULL;
    cfg->n_allow_origins = 0;
}

void srv_config_free(srv_config *cfg)
{
    free(cfg->listen_host);
    cfg->listen_host = NULL;
    if (cfg->token) {
        /* Do not leave the secret in freed memory. */
        volatile char *p = cfg->token;
        while (*p)
            *p++ = '\0';
        free(cfg->token);
        cfg->token = NULL;
    }
    free_origins(cfg);
    free(cfg->web_dir);
    cfg->web_dir = NULL;
}

int srv_config_parse_size(const char *s, size_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return SRV_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return SRV_EINVAL;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return SRV_EINVAL;
    *out = (size_t)(v << shift);
    return SRV_OK;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return SRV_EINVAL;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return SRV_EINVAL;
    *out = v;
    return SRV_OK;
}

int srv_config_parse_listen(const char *s, char **host, uint16_t *port)
{
    const char *h = NULL, *p;
    size_t hlen = 0;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return SRV_EINVAL;
        h = s + 1;
        hlen = (size_t)(close - h);
        p = close + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon) {
            if (strchr(s, ':') != colon)
                return SRV_EINVAL; /* bare IPv6 needs brackets */
            h = s;
            hlen = (size_t)(colon - s);
            p = colon + 1;
        } else {
            p = s;
        }
    }
    unsigned long v;
    if (parse_uint(p, 65535, &v) != SRV_OK)
        return SRV_EINVAL;
    if (h && hlen == 0)
        return SRV_EINVAL;
    char *copy = h ? strndup(h, hlen) : strdup("127.0.0.1");
    if (!copy)
        return SRV_ENOMEM;
    *host = copy;
    *port = (uint16_t)v;
    return SRV_OK;
}

/* Adds the comma-separated Origins of list, each trimmed of spaces and
 * tabs. A list that names no Origin at all ("", ",", " ") is SRV_EINVAL:
 * an empty allow-list would let every Origin through, so a mistyped value
 * fails closed instead of open. */
static int add_origins(srv_config *cfg, const char *list)
{
    const char *s = list;
    size_t added = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        const char *b = s, *e = s + n;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > b) {
            char **grown = realloc(cfg->allow_origins,
                                   (cfg->n_allow_origins + 1) * sizeof *grown);
            if (!grown)
                return SRV_ENOMEM;
            cfg->allow_origins = grown;
            if (!(grown[cfg->n_allow_origins] = strndup(b, (size_t)(e - b))))
                return SRV_ENOMEM;
            cfg->n_allow_origins++;
            added++;
        }
        s += n + (comma ? 1 : 0);
    }
    return added ? SRV_OK : SRV_EINVAL;
}

/* The flag table: name, environment variable, help text. */
enum opt_id {
    OPT_LISTEN, OPT_THREADS, OPT_MAXCONN, OPT_TIMEOUT, OPT_MAXBODY, OPT_MAXMSG, OPT_WSQUEUE,
    OPT_MAXJOINTS, OPT_MAXTARGETS, OPT_MAXITER, OPT_MAXTIME, OPT_MAXURDF, OPT_REGISTRY, OPT_QUEUE,
    OPT_INLINE, OPT_LOGFMT, OPT_LOGLEVEL, OPT_TOKEN, OPT_ORIGIN, OPT_WEB, OPT_DRAIN, OPT_REQTIMEOUT, OPT_PERADDR, OPT_BODYBUDGET, OPT_COUNT
};

static const struct opt {
    const char *name;
    const char *env;
    const char *help;
} opts[OPT_COUNT] = {
    [OPT_LISTEN] = {"listen", "IKD_LISTEN",
                    "HOST:PORT or [IPV6]:PORT to listen on; port 0 picks a free port "
                    "(default 127.0.0.1:8080)"},
    [OPT_THREADS] = {"threads", "IKD_THREADS", "solver thread pool size (default: cores)"},
    [OPT_MAXCONN] = {"max-connections", "IKD_MAX_CONNECTIONS",
                     "simultaneous connections (default 10000)"},
    [OPT_TIMEOUT] = {"timeout", "IKD_TIMEOUT",
                     "seconds a connection may stay idle or stall mid-request; a silent "
                     "WebSocket client is pinged after this and dropped after twice this "
                     "(default 30)"},
    [OPT_DRAIN] = {"drain-timeout", "IKD_DRAIN_TIMEOUT",
                   "seconds a drain (SIGTERM, SIGINT, SIGHUP) may take before ikd exits "
                   "anyway, even with requests still running (default 10)"},
    [OPT_REQTIMEOUT] = {"request-timeout", "IKD_REQUEST_TIMEOUT",
                        "seconds to receive a whole request from a connection's start or "
                        "its previous answer, however busy the client: 408 beyond "
                        "(default 60)"},
    [OPT_PERADDR] = {"max-connections-per-address", "IKD_MAX_CONNECTIONS_PER_ADDRESS",
                     "simultaneous connections from one IP address (default 1000)"},
    [OPT_BODYBUDGET] = {"body-budget", "IKD_BODY_BUDGET",
                        "request body bytes held at once for all clients; an upload "
                        "beyond it gets 503 (default 256M)"},
    [OPT_MAXBODY] = {"max-body", "IKD_MAX_BODY", "largest request body, bytes (default 8M)"},
    [OPT_MAXMSG] = {"max-message", "IKD_MAX_MESSAGE",
                    "largest WebSocket message, bytes (default 1M)"},
    [OPT_WSQUEUE] = {"max-send-queue", "IKD_MAX_SEND_QUEUE",
                     "WebSocket per-connection send queue, bytes (default 4M)"},
    [OPT_MAXJOINTS] = {"max-joints", "IKD_MAX_JOINTS", "joints per chain (default 64)"},
    [OPT_MAXTARGETS] = {"max-targets", "IKD_MAX_TARGETS",
                        "targets per batch (default 100000)"},
    [OPT_MAXITER] = {"max-iterations", "IKD_MAX_ITERATIONS",
                     "solver iterations per solve: the cap of options.max_iterations and "
                     "the numeric solver's default (default 10000)"},
    [OPT_MAXTIME] = {"max-time-ms", "IKD_MAX_TIME_MS",
                     "time budget cap of one solve, milliseconds, fractions allowed: the "
                     "largest options.timeout_ms (default 1000)"},
    [OPT_MAXURDF] = {"max-urdf", "IKD_MAX_URDF",
                     "largest URDF document inside a request, bytes (default 4M)"},
    [OPT_REGISTRY] = {"registry-bytes", "IKD_REGISTRY_BYTES",
                      "memory bound of the chain registry, LRU beyond it (default 64M)"},
    [OPT_QUEUE] = {"max-queue", "IKD_MAX_QUEUE",
                   "admitted work in flight (single solves and stream targets on the "
                   "pool, batches from decode to answer, each one) before new work "
                   "gets 503 (default 1024)"},
    [OPT_INLINE] = {"inline-cost-us", "IKD_INLINE_COST_US",
                    "solves estimated below this many microseconds run on the loop "
                    "(default 5)"},
    [OPT_LOGFMT] = {"log-format", "IKD_LOG_FORMAT", "text or json (default text)"},
    [OPT_LOGLEVEL] = {"log-level", "IKD_LOG_LEVEL", "debug, info, warn, error (default info)"},
    [OPT_TOKEN] = {"token", "IKD_TOKEN",
                   "bearer token required on every endpoint but /livez, /readyz, /openapi.yaml "
                   "(default: none)"},
    [OPT_ORIGIN] = {"allow-origin", "IKD_ALLOW_ORIGIN",
                    "comma-separated Origins allowed to open WebSocket streams and to call the "
                    "API from a browser (CORS); repeatable (default: any)"},
    [OPT_WEB] = {"web", "IKD_WEB",
                 "directory of the live page, served at / without a token (make builds it "
                 "in build/web; default: no page)"},
};

static void print_help(FILE *out)
{
    fprintf(out, "usage: ikd [FLAGS]          run the daemon\n"
                 "       ikd solve [FILE]     solve one request (FILE or stdin) and exit\n"
                 "       ikd probe [URL]      health check: exit 0 if URL (default /livez) answers 200\n"
                 "       ikd chain FILE.urdf --base LINK --tip LINK\n"
                 "                            print the URDF as a chain object (JSON) for the API\n\n"
                 "flags (each also read from the environment variable shown):\n");
    for (int i = 0; i < OPT_COUNT; i++)
        fprintf(out, "  --%-16s %-20s %s\n", opts[i].name, opts[i].env, opts[i].help);
    fprintf(out, "  --%-16s %-20s %s\n", "help", "", "print this and exit");
    fprintf(out, "  --%-16s %-20s %s\n", "version", "", "print the version and the commit, and exit");
}

static int apply(srv_config *cfg, int id, const char *v, char *errbuf, size_t errsize)
{
    unsigned long u;
    size_t sz;
    int rc = SRV_OK;
    switch (id) {
    case OPT_LISTEN: {
        char *host;
        uint16_t port;
        if ((rc = srv_config_parse_listen(v, &host, &port)) == SRV_OK) {
            free(cfg->listen_host);
            cfg->listen_host = host;
            cfg->listen_port = port;
        }
        break;
    }
    case OPT_THREADS:
        if ((rc = parse_uint(v, 1024, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->threads = (unsigned)u;
        break;
    case OPT_MAXCONN:
        if ((rc = parse_uint(v, 1000000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->max_connections = (unsigned)u;
        break;
    case OPT_TIMEOUT:
        if ((rc = parse_uint(v, 86400, &u)) == SRV_OK)
            cfg->conn_timeout_s = (unsigned)u;
        break;
    case OPT_DRAIN:
        if ((rc = parse_uint(v, 86400, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->drain_timeout_s = (unsigned)u;
        break;
    case OPT_REQTIMEOUT:
        if ((rc = parse_uint(v, 86400, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->request_timeout_s = (unsigned)u;
        break;
    case OPT_PERADDR:
        if ((rc = parse_uint(v, 1000000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->max_conn_per_addr = (unsigned)u;
        break;
    case OPT_BODYBUDGET:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK && sz == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->body_budget_bytes = sz;
        break;
    case OPT_MAXBODY:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK && sz == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->limits.max_body_bytes = sz;
        break;
    case OPT_MAXMSG:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK && sz == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->max_message_bytes = sz;
        break;
    case OPT_WSQUEUE:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK && sz == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->ws_send_queue_bytes = sz;
        break;
    case OPT_MAXJOINTS:
        if ((rc = parse_uint(v, 100000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->limits.max_joints = u;
        break;
    case OPT_MAXTARGETS:
        if ((rc = parse_uint(v, 100000000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->limits.max_targets = u;
        break;
    case OPT_MAXITER:
        if ((rc = parse_uint(v, 100000000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->limits.max_iterations = u;
        break;
    case OPT_MAXTIME: {
        /* digits, an optional fraction: no sign, exponent, nan or inf */
        char *end;
        double d = strtod(v, &end);
        if (!isdigit((unsigned char)*v) || strspn(v, "0123456789.") != strlen(v) || *end ||
            !(d > 0.0) || d > 3600000.0)
            rc = SRV_EINVAL;
        else
            cfg->limits.max_time_ms = d;
        break;
    }
    case OPT_MAXURDF:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK && sz == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->limits.max_urdf_bytes = sz;
        break;
    case OPT_REGISTRY:
        if ((rc = srv_config_parse_size(v, &sz)) == SRV_OK)
            cfg->registry_bytes = sz;
        break;
    case OPT_QUEUE:
        if ((rc = parse_uint(v, 10000000, &u)) == SRV_OK && u == 0)
            rc = SRV_EINVAL;
        if (rc == SRV_OK)
            cfg->pool_queue_max = u;
        break;
    case OPT_INLINE: {
        char *end;
        double d = strtod(v, &end);
        if (*v == '\0' || *end || !(d >= 0.0) || d > 1e9)
            rc = SRV_EINVAL;
        else
            cfg->inline_cost_us = d;
        break;
    }
    case OPT_LOGFMT:
        if (strcmp(v, "text") == 0)
            cfg->log_format = SRV_LOG_TEXT;
        else if (strcmp(v, "json") == 0)
            cfg->log_format = SRV_LOG_JSON;
        else
            rc = SRV_EINVAL;
        break;
    case OPT_LOGLEVEL: {
        static const char *const names[] = {"debug", "info", "warn", "error"};
        rc = SRV_EINVAL;
        for (int i = 0; i < 4; i++)
            if (strcmp(v, names[i]) == 0) {
                cfg->log_level = (srv_log_level)i;
                rc = SRV_OK;
            }
        break;
    }
    case OPT_TOKEN:
        if (*v == '\0') {
            rc = SRV_EINVAL;
            break;
        }
        free(cfg->token);
        if (!(cfg->token = strdup(v)))
            rc = SRV_ENOMEM;
        break;
    case OPT_ORIGIN:
        rc = add_origins(cfg, v);
        break;
    case OPT_WEB:
        if (*v == '\0') {
            rc = SRV_EINVAL;
            break;
        }
        free(cfg->web_dir);
        if (!(cfg->web_dir = strdup(v)))
            rc = SRV_ENOMEM;
        break;
    default:
        rc = SRV_EINVAL;
    }
    if (rc != SRV_OK)
        snprintf(errbuf, errsize, "invalid value for --%s: \"%s\"", opts[id].name,
                 id == OPT_TOKEN ? "(hidden)" : v);
    return rc;
}

int srv_config_parse(srv_config *cfg, int argc, char **argv, FILE *out, char *errbuf,
                     size_t errsize)
{
    if (!cfg->listen_host) {
        snprintf(errbuf, errsize, "out of memory");
        return SRV_ENOMEM;
    }
    for (int id = 0; id < OPT_COUNT; id++) {
        const char *v = getenv(opts[id].env);
        if (v && *v && apply(cfg, id, v, errbuf, errsize) != SRV_OK) {
            size_t n = strlen(errbuf);
            snprintf(errbuf + n, errsize - n, " (from %s)", opts[id].env);
            return SRV_EINVAL;
        }
    }
    bool env_origins = cfg->n_allow_origins > 0, flag_origin_seen = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help(out);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            fprintf(out, "ikd %s (commit %s)\n", srv_version, srv_commit);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(errbuf, errsize, "unexpected argument \"%s\" (see --help)", a);
            return SRV_EINVAL;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        int id = -1;
        for (int k = 0; k < OPT_COUNT; k++)
            if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, name, nlen) == 0)
                id = k;
        if (id < 0) {
            snprintf(errbuf, errsize, "unknown flag \"%s\" (see --help)", a);
            return SRV_EINVAL;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            snprintf(errbuf, errsize, "--%s needs a value", opts[id].name);
            return SRV_EINVAL;
        }
        if (id == OPT_ORIGIN && env_origins && !flag_origin_seen)
            free_origins(cfg); /* flags replace the environment's list */
        if (id == OPT_ORIGIN)
            flag_origin_seen = true;
        if (apply(cfg, id, v, errbuf, errsize) != SRV_OK)
            return SRV_EINVAL;
    }
    return SRV_OK;
}

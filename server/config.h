/*
 * config.h: the daemon's flags and environment variables -> srv_config.
 *
 * Every flag has an environment variable (IKD_LISTEN, IKD_THREADS, ...);
 * one set to the empty string counts as unset, except IKD_ALLOW_ORIGIN,
 * which is refused like --allow-origin "" (an empty list would allow every
 * Origin). Precedence: built-in default < environment variable < flag. Flags are
 * "--name value" or "--name=value"; --allow-origin may be repeated. Sizes
 * accept a K/M/G suffix (powers of 1024). "ikd --help" prints the list with
 * each flag's variable and default.
 *
 * SRV_CONFIG_MAP below is the one place where a flag's name, variable,
 * type, field, default and help text are written: server/config.c makes
 * srv_config_default(), the parser and --help from it, and
 * tests/server/test_config.c checks README.md's flag table against it.
 *
 * Errors are the SRV_E* values of server/srv.h.
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/proto.h"
#include "server/log.h"

/* ---- the flags ---------------------------------------------------------
 *
 * SRV_CONFIG_TOPICS: X(topic, heading), the topics "ikd --help" groups the
 * flags under, in the order it prints them.
 *
 * SRV_CONFIG_MAP: X(id, topic, flag, env, type, field, default, help), one
 * row per flag, grouped by topic in the order "ikd --help" lists them
 * (the environment is read in the same order).
 *   topic   one of SRV_CONFIG_TOPICS: the heading --help lists it under
 *   type    how a value is read and checked (and the VALUE word --help
 *           shows after the flag):
 *             LISTEN        HOST:PORT, [IPV6]:PORT or PORT
 *                           (srv_config_parse_listen); sets field to the
 *                           host and listen_port to the port  (HOST:PORT)
 *             UINT(lo, hi)  decimal digits, lo <= value <= hi  (N)
 *             SIZE(lo, hi)  bytes, digits with an optional K/M/G suffix
 *                           (srv_config_parse_size), lo <= value <= hi
 *                           (BYTES)
 *             MS(hi)        digits with an optional fraction (no sign,
 *                           exponent, nan or inf), 0 < value <= hi  (MS)
 *             REAL(lo, hi)  any number strtod reads, lo <= value <= hi  (X)
 *             ENUM(names)   one of names (NULL-terminated, e.g.
 *                           SRV_CONFIG_NAMES); field gets its index
 *                           (the names, "text|json")
 *             STRING(word)  any non-empty text (copied)  (word, e.g. DIR)
 *             SECRET        a STRING never shown, not even in an error,
 *                           of printable characters without blanks at
 *                           either end; an empty variable is refused like
 *                           an empty flag, not taken for unset (an empty
 *                           token would leave every endpoint open)  (TOKEN)
 *             ORIGINS       comma-separated, each trimmed of blanks, at
 *                           least one; repeated flags add to the list, and
 *                           the flags' list replaces the environment's
 *                           (ORIGIN,...)
 *             REDIS         a Redis URL,
 *                           redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *                           (srv_config_parse_redis), copied; never shown,
 *                           as it may hold a password  (URL)
 *   field   the srv_config member it sets
 *   default VALUE("text")  the default written in the flag's own syntax:
 *                          srv_config_default() applies it with the same
 *                          parser, --help shows it as written
 *           PROTO          proto_limits_default()'s value (cfg.limits is
 *                          proto's); --help shows that value
 *           NONE("word")   no value here: the field is NULL or empty, or
 *                          computed by srv_config_default() (threads and
 *                          loops: the number of cores); --help shows the
 *                          word
 *   help    the --help text; " (LO to HI)" is added for the types with
 *           bounds (UINT, SIZE, MS, REAL; "at most HI" when LO is the
 *           smallest value the type takes anyway) and " (default ...)" from
 *           default
 *
 * Every number has an upper bound, sizes included: a value past it is a
 * typo or a mistake (--connection-memory 1G made libmicrohttpd zero a
 * gigabyte for every request), refused at startup with the range named.
 */
#define SRV_CONFIG_NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The upper bounds of the sizes: one request or message (1G), what all
 * clients together may make ikd hold (64G), libmicrohttpd's memory per
 * connection (1M, zeroed for every request). */
#define SRV_1M ((size_t)1 << 20)
#define SRV_1G ((size_t)1 << 30)
#define SRV_64G ((size_t)64 << 30)

/* --listen's default, also where "ikd probe" looks when IKD_LISTEN is not
 * set (server/cli_probe.c). */
#define SRV_LISTEN_DEFAULT "127.0.0.1:8080"

#define SRV_CONFIG_TOPICS(X)                                                                       \
    X(LISTENING, "Listening and connections")                                                      \
    X(TLS, "TLS: HTTPS and WSS on the listening port")                                             \
    X(ACCESS, "Access: the token and browsers")                                                    \
    X(REQUEST, "Limits of one request")                                                            \
    X(SOLVING, "Solving")                                                                          \
    X(REGISTRY, "The chain registry: local, or shared by replicas in Redis")                       \
    X(STREAMS, "WebSocket streams")                                                                \
    X(LOAD, "Load: what all clients together may hold")                                            \
    X(DEPLOY, "Deployment: the page, logs and shutdown")

#define SRV_CONFIG_MAP(X)                                                                          \
    /* Listening and connections */                                                                \
    X(LISTEN, LISTENING, "listen", "IKD_LISTEN", LISTEN, listen_host, VALUE(SRV_LISTEN_DEFAULT),   \
      "HOST:PORT or [IPV6]:PORT to listen on; port 0 picks a free port")                           \
    X(LOOPS, LISTENING, "loops", "IKD_LOOPS", UINT(1, 256), loops, NONE("cores"),                 \
      "event loops, each a thread serving its share of the connections (a connection stays on "   \
      "one)")                                                                                      \
    X(MAXCONN, LISTENING, "max-connections", "IKD_MAX_CONNECTIONS", UINT(1, 1000000),              \
      max_connections, VALUE("10000"), "simultaneous connections")                                 \
    X(PERADDR, LISTENING, "max-connections-per-address", "IKD_MAX_CONNECTIONS_PER_ADDRESS",        \
      UINT(1, 1000000), max_conn_per_addr, VALUE("1000"),                                          \
      "simultaneous connections from one IP address")                                              \
    X(TIMEOUT, LISTENING, "timeout", "IKD_TIMEOUT", UINT(0, 86400), conn_timeout_s, VALUE("30"),   \
      "seconds a connection may stay idle or stall mid-request; a silent WebSocket client is "     \
      "pinged after this and dropped after twice this")                                            \
    X(REQTIMEOUT, LISTENING, "request-timeout", "IKD_REQUEST_TIMEOUT", UINT(1, 86400),             \
      request_timeout_s, VALUE("60"),                                                              \
      "seconds to receive a whole request from a connection's start or its previous answer, "      \
      "however busy the client: 408 beyond")                                                       \
    X(CONNMEM, LISTENING, "connection-memory", "IKD_CONNECTION_MEMORY", SIZE(8192, SRV_1M),        \
      connection_memory_bytes, VALUE("16K"),                                                       \
      "libmicrohttpd's memory per HTTP connection, bytes: its request line and headers must "      \
      "fit (431 beyond), and it holds the read and write buffers (zeroed for every request)")      \
    /* TLS: HTTPS and WSS on the listening port */                                                 \
    X(TLSCERT, TLS, "tls-cert", "IKD_TLS_CERT", STRING("FILE"), tls_cert_file, NONE("none"),       \
      "PEM file of the server's certificate chain: with --tls-key, ikd serves HTTPS and WSS "      \
      "(only) on --listen; read again on SIGHUP")                                                  \
    X(TLSKEY, TLS, "tls-key", "IKD_TLS_KEY", STRING("FILE"), tls_key_file, NONE("none"),           \
      "PEM file of the certificate's private key (unencrypted); read again on SIGHUP")             \
    /* Access: the token and browsers */                                                           \
    X(TOKEN, ACCESS, "token", "IKD_TOKEN", SECRET, token, NONE("none"),                            \
      "bearer token required on every endpoint but /livez, /readyz, /openapi.yaml")                \
    X(ORIGIN, ACCESS, "allow-origin", "IKD_ALLOW_ORIGIN", ORIGINS, allow_origins, NONE("any"),     \
      "comma-separated Origins allowed to open WebSocket streams and to call the API from a "      \
      "browser (CORS); repeatable")                                                                \
    /* Limits of one request */                                                                    \
    X(MAXBODY, REQUEST, "max-body", "IKD_MAX_BODY", SIZE(1, SRV_1G), limits.max_body_bytes, PROTO, \
      "largest request body, bytes")                                                               \
    X(MAXURDF, REQUEST, "max-urdf", "IKD_MAX_URDF", SIZE(1, SRV_1G), limits.max_urdf_bytes, PROTO, \
      "largest URDF document inside a request, bytes")                                             \
    X(MAXJOINTS, REQUEST, "max-joints", "IKD_MAX_JOINTS", UINT(1, 100000), limits.max_joints,      \
      PROTO, "joints per chain")                                                                   \
    X(MAXTARGETS, REQUEST, "max-targets", "IKD_MAX_TARGETS", UINT(1, 100000000),                   \
      limits.max_targets, PROTO, "targets per batch")                                              \
    X(MAXITEMS, REQUEST, "max-items", "IKD_MAX_ITEMS", UINT(1, 100000000), limits.max_items, PROTO,\
      "items (rigs, each its own chain) per batch of items")                                       \
    /* Solving */                                                                                  \
    X(THREADS, SOLVING, "threads", "IKD_THREADS", UINT(1, 1024), threads, NONE("cores"),           \
      "solver thread pool size")                                                                   \
    X(MAXITER, SOLVING, "max-iterations", "IKD_MAX_ITERATIONS", UINT(1, 100000000),                \
      limits.max_iterations, PROTO,                                                                \
      "solver iterations per solve: the cap of options.max_iterations and the numeric "            \
      "solver's default")                                                                          \
    X(MAXTIME, SOLVING, "max-time-ms", "IKD_MAX_TIME_MS", MS(3600000), limits.max_time_ms, PROTO,  \
      "time budget cap of one solve, milliseconds, fractions allowed: the largest "                \
      "options.timeout_ms")                                                                        \
    X(INLINE, SOLVING, "inline-cost-us", "IKD_INLINE_COST_US", REAL(0, 1e9), inline_cost_us,       \
      VALUE("5"), "solves estimated below this many microseconds run on the loop")                 \
    /* The chain registry: local, or shared by replicas in Redis */                                \
    X(REGISTRY, REGISTRY, "registry-bytes", "IKD_REGISTRY_BYTES", SIZE(0, SRV_64G), registry_bytes,\
      VALUE("64M"),                                                                                \
      "memory bound of the chain registry, chains and scenes (with --redis: of those this "       \
      "replica keeps), LRU beyond it")                                                             \
    X(REDIS, REGISTRY, "redis", "IKD_REDIS", REDIS, redis_url, NONE("none"),                       \
      "share the registry with other replicas through Redis at "                                   \
      "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]: registrations are written there, an id this "   \
      "replica does not hold is fetched from there, and ids outlive restarts")                     \
    X(REDISTIMEOUT, REGISTRY, "redis-timeout", "IKD_REDIS_TIMEOUT", MS(60000), redis_timeout_ms,   \
      VALUE("500"),                                                                                \
      "milliseconds Redis has to answer (or to connect) before a request that needs it gets 503 "  \
      "with Retry-After and the connection is dropped and made again")                             \
    /* WebSocket streams */                                                                        \
    X(MAXMSG, STREAMS, "max-message", "IKD_MAX_MESSAGE", SIZE(1, SRV_1G), max_message_bytes,       \
      VALUE("1M"),                                                                                 \
      "largest WebSocket message, bytes")                                                          \
    X(WSQUEUE, STREAMS, "max-send-queue", "IKD_MAX_SEND_QUEUE", SIZE(1, SRV_1G),                   \
      ws_send_queue_bytes,                                                                         \
      VALUE("4M"), "WebSocket per-connection send queue, bytes")                                   \
    X(MAXSTREAMS, STREAMS, "max-streams", "IKD_MAX_STREAMS", UINT(1, 65536), max_streams,          \
      VALUE("1024"), "streams open on one WebSocket connection, and so targets in one tick")       \
    X(STREAMCHAINS, STREAMS, "stream-chain-bytes", "IKD_STREAM_CHAIN_BYTES", SIZE(1, SRV_64G),     \
      stream_chain_bytes, VALUE("256M"),                                                           \
      "memory of the chains, scenes and running paths open WebSocket streams hold, all "          \
      "connections (each once); an open, a scene or a path message beyond it is refused")        \
    X(STREAMBYTES, STREAMS, "stream-bytes", "IKD_STREAM_BYTES", SIZE(1, SRV_64G), stream_bytes,   \
      VALUE("64M"),                                                                                \
      "memory of the open WebSocket streams themselves (each stream's state and session, about "  \
      "1 KiB), all connections; an open beyond it is refused")                                    \
    /* Load: what all clients together may hold */                                                 \
    X(QUEUE, LOAD, "max-queue", "IKD_MAX_QUEUE", UINT(1, 10000000), pool_queue_max,                \
      VALUE("1024"),                                                                               \
      "admitted work in flight (single solves and stream targets on the pool, batches from "       \
      "decode to answer, each one) before new work gets 503")                                      \
    X(BODYBUDGET, LOAD, "body-budget", "IKD_BODY_BUDGET", SIZE(1, SRV_64G), body_budget_bytes,     \
      VALUE("256M"),                                                                               \
      "request body bytes held at once for all clients, counted as they arrive (WebSocket "       \
      "messages too); an upload beyond it gets 503, a WebSocket message closes with 1013")          \
    X(ANSWERBUDGET, LOAD, "answer-budget", "IKD_ANSWER_BUDGET", SIZE(1, SRV_64G),                  \
      answer_budget_bytes,                                                                         \
      VALUE("256M"),                                                                               \
      "batch answer bytes held at once for all clients until sent (each reserved at its "          \
      "largest when admitted); a batch beyond it gets 503")                                        \
    /* Deployment: the page, logs and shutdown */                                                  \
    X(WEB, DEPLOY, "web", "IKD_WEB", STRING("DIR"), web_dir, NONE("none"),                         \
      "directory of the live page, served at / without a token; make web (or make run) "           \
      "builds it in build/web")                                                                    \
    X(LOGFMT, DEPLOY, "log-format", "IKD_LOG_FORMAT", ENUM(SRV_CONFIG_NAMES("text", "json")),      \
      log_format, VALUE("text"), "the form of a log line")                                         \
    X(LOGLEVEL, DEPLOY, "log-level", "IKD_LOG_LEVEL", ENUM(srv_log_level_names), log_level,        \
      VALUE("info"), "the lowest level logged")                                                    \
    X(DRAIN, DEPLOY, "drain-timeout", "IKD_DRAIN_TIMEOUT", UINT(1, 86400), drain_timeout_s,        \
      VALUE("10"),                                                                                 \
      "seconds a drain (SIGTERM, SIGINT; SIGHUP without TLS, which with TLS reloads the "          \
      "certificate) may take before ikd exits anyway, even with requests still running")

/* Everything the flags and environment configure (server/config.c fills it
 * from SRV_CONFIG_MAP, which also holds every default). Strings are owned by
 * the config and freed by srv_config_free(). */
typedef struct srv_config {
    char *listen_host;          /* "127.0.0.1", "::1", "0.0.0.0" (no brackets) */
    uint16_t listen_port;       /* 0 = ephemeral; the bound port is in ctx->port */
    unsigned threads;           /* thread pool size */
    unsigned loops;             /* event loops, each on its thread (server/serve.c) */
    unsigned max_connections;   /* MHD_OPTION_CONNECTION_LIMIT */
    unsigned conn_timeout_s;    /* idle/slow-client timeout, seconds */
    unsigned drain_timeout_s;   /* hard deadline of a drain, seconds */
    unsigned request_timeout_s; /* receiving a whole request, seconds (408 beyond) */
    unsigned max_conn_per_addr; /* connections from one IP address */
    size_t body_budget_bytes;   /* request bodies held at once, all clients */
    size_t answer_budget_bytes; /* batch answers held at once until sent, all clients */
    size_t stream_chain_bytes;  /* chains open streams hold, all connections */
    size_t stream_bytes;        /* open streams' own state, all connections */
    proto_limits limits;        /* body, joints, targets... (proto_limits_default) */
    size_t connection_memory_bytes; /* libmicrohttpd's pool per HTTP connection */
    size_t max_message_bytes;   /* WebSocket: largest received message */
    size_t ws_send_queue_bytes; /* WebSocket: per-connection send-queue cap */
    unsigned max_streams;       /* WebSocket: streams per connection (targets per tick) */
    size_t registry_bytes;      /* chain registry memory bound */
    size_t pool_queue_max;      /* admitted work in flight before 503 (server/pool.h) */
    double inline_cost_us;      /* proto_job_cost_us() below this runs inline on the loop */
    srv_log_format log_format;  /* text or json lines on stderr */
    srv_log_level log_level;    /* lines below it are dropped */
    char *token;                /* bearer token; NULL = no authentication */
    char **allow_origins;       /* WebSocket upgrade Origin allow-list (exact match) */
    size_t n_allow_origins;     /* 0 = any Origin is accepted */
    char *web_dir;              /* --web: the live page's directory; NULL = no page */
    char *tls_cert_file;        /* --tls-cert: PEM certificate chain; NULL = plain HTTP */
    char *tls_key_file;         /* --tls-key: its PEM private key */
    char *redis_url;            /* --redis: the shared registry; NULL = local only */
    double redis_timeout_ms;    /* --redis-timeout: an answer or a connection, at most */
} srv_config;

/* Fills *cfg with the defaults: SRV_CONFIG_MAP's VALUE()s, proto's limits,
 * threads and loops = the number of cores (2 when unknown; loops at most
 * 256); everything else zero or
 * NULL. Allocates the listen host: when that fails it is left NULL and
 * srv_config_parse() reports out of memory. */
void srv_config_default(srv_config *cfg);
/* Frees the strings (wiping the token) and leaves them NULL. */
void srv_config_free(srv_config *cfg);

/* Parses argv (argv[0] is the program) and the environment into *cfg, which
 * must hold srv_config_default() values. Returns 0, 1 when --help or
 * --version was printed to out (the caller exits 0), or SRV_EINVAL (or
 * SRV_ENOMEM) with a one-line message in errbuf (the caller prints it and
 * exits 2). On error *cfg may be partly changed; free it with
 * srv_config_free() either way. */
int srv_config_parse(srv_config *cfg, int argc, char **argv, FILE *out, char *errbuf,
                     size_t errsize);

/* Splits "host:port", "[v6]:port" or "port" (host 127.0.0.1) into host
 * (malloc'd, no brackets) and port. Returns 0, SRV_EINVAL or SRV_ENOMEM; on
 * error *host and *port are unchanged. */
int srv_config_parse_listen(const char *s, char **host, uint16_t *port);

/* "64", "8K", "16M", "1G" -> bytes. Returns 0 or SRV_EINVAL. */
int srv_config_parse_size(const char *s, size_t *out);

/* A Redis URL, redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]: HOST a name, an
 * IPv4 address or a bracketed IPv6 one; PORT 6379 when absent; DB 0 to
 * 15, 0 when absent. USER and PASSWORD are taken as written (no percent
 * decoding), each at most SRV_REDIS_FIELD_MAX bytes. */
#define SRV_REDIS_FIELD_MAX 256
typedef struct srv_redis_url {
    char host[SRV_REDIS_FIELD_MAX];     /* without brackets */
    uint16_t port;
    unsigned db;
    char user[SRV_REDIS_FIELD_MAX];     /* "" when none */
    char password[SRV_REDIS_FIELD_MAX]; /* "" when none */
} srv_redis_url;
/* Reads s into *out. Returns 0, or SRV_EINVAL (rediss:// included: TLS to
 * Redis is not supported); on error *out is unspecified. Allocates
 * nothing. */
int srv_config_parse_redis(const char *s, srv_redis_url *out);

#endif /* SRV_CONFIG_H */

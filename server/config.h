/*
 * config.h: the daemon's flags and environment variables -> srv_config.
 *
 * Every flag has an environment variable (IKD_LISTEN, IKD_THREADS, ...; the
 * flag wins); "ikd --help" prints the list with defaults. Sizes accept a
 * K/M/G suffix (powers of 1024).
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

/* Everything the flags and environment configure (server/config.c fills it;
 * srv_config_default() gives the defaults listed in "ikd --help"). Strings
 * are owned by the config and freed by srv_config_free(). */
typedef struct srv_config {
    char *listen_host;          /* "127.0.0.1", "::1", "0.0.0.0" (no brackets) */
    uint16_t listen_port;       /* 0 = ephemeral; the bound port is in ctx->port */
    unsigned threads;           /* thread pool size; default: number of cores */
    unsigned max_connections;   /* MHD_OPTION_CONNECTION_LIMIT; default 10000 */
    unsigned conn_timeout_s;    /* idle/slow-client timeout; default 30 s */
    unsigned drain_timeout_s;   /* hard deadline of a drain; default 10 s */
    unsigned request_timeout_s; /* receiving a whole request; default 60 s (408) */
    unsigned max_conn_per_addr; /* connections from one IP address; default 1000 */
    size_t body_budget_bytes;   /* request bodies held at once, all clients; default 256 MiB */
    proto_limits limits;        /* body, joints, targets... (proto_limits_default) */
    size_t max_message_bytes;   /* WebSocket: largest received message; default 1 MiB */
    size_t ws_send_queue_bytes; /* WebSocket: per-connection send-queue cap; default 4 MiB */
    size_t registry_bytes;      /* chain registry memory bound; default 64 MiB */
    size_t pool_queue_max;      /* work items queued or running on the pool before 503 */
    double inline_cost_us;      /* proto_job_cost_us() below this runs inline on the loop */
    srv_log_format log_format;  /* text (default) or json lines on stderr */
    srv_log_level log_level;    /* default SRV_LOG_INFO */
    char *token;                /* bearer token; NULL = no authentication */
    char **allow_origins;       /* WebSocket upgrade Origin allow-list (exact match) */
    size_t n_allow_origins;     /* 0 = any Origin is accepted */
    char *web_dir;              /* --web: the live page's directory; NULL = no page */
} srv_config;

void srv_config_default(srv_config *cfg);
void srv_config_free(srv_config *cfg);

/* Parses argv (argv[0] is the program) and the environment into *cfg, which
 * must hold srv_config_default() values. Returns 0, 1 when --help or
 * --version was printed to out (the caller exits 0), or SRV_EINVAL with a
 * one-line message in errbuf (the caller prints it and exits 2). On error
 * *cfg may be partly changed; free it with srv_config_free() either way. */
int srv_config_parse(srv_config *cfg, int argc, char **argv, FILE *out, char *errbuf,
                     size_t errsize);

/* Splits "host:port", "[v6]:port" or "port" into host (malloc'd, no
 * brackets) and port. Returns 0 or SRV_EINVAL. */
int srv_config_parse_listen(const char *s, char **host, uint16_t *port);

/* "64", "8K", "16M", "1G" -> bytes. Returns 0 or SRV_EINVAL. */
int srv_config_parse_size(const char *s, size_t *out);

#endif /* SRV_CONFIG_H */

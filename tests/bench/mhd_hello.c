/*
 * mhd_hello.c: the baseline for the HTTP benchmark (tests/bench/http_bench.sh):
 * a bare libmicrohttpd server on exactly ikd's loop setup (server/loop.c:
 * MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
 * MHD_USE_TURBO, no internal thread, one uv_poll_t on the epoll fd, the
 * timer re-armed from MHD_get_timeout) that reads any request body and
 * answers every request with a fixed small JSON body, queued on the second
 * access-handler call like ikd does. ikd's requests per second are reported
 * as a fraction of this server's, measured in the same run.
 *
 * Usage: mhd_hello [PORT [BYTES]]   (port 0 or nothing: ephemeral; BYTES:
 * answer a canned JSON body of exactly that many bytes instead, the size
 * of ikd's own answer, so that the comparison is for the same bytes on the
 * wire). Prints
 * "mhd_hello listening on 127.0.0.1:PORT" and serves until SIGTERM/SIGINT.
 * Built only for the benchmark; not part of the daemon.
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/loop.h"

static const char hello[] = "{\"status\":\"ok\"}";
static char *canned; /* BYTES given: {"status":"ok","pad":"xxx..."} */
static size_t canned_len;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    static int marker;
    if (!*con_cls) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* body read and dropped */
        return MHD_YES;
    }
    struct MHD_Response *r =
        canned ? MHD_create_response_from_buffer(canned_len, canned, MHD_RESPMEM_PERSISTENT)
               : MHD_create_response_from_buffer(sizeof hello - 1, (void *)hello,
                                                 MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

static void on_signal(uv_signal_t *s, int signum)
{
    uv_stop(s->loop);
}

int main(int argc, char **argv)
{
    unsigned port = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 0;
    if (bytes >= 32) {
        canned = malloc(bytes + 1);
        if (!canned)
            return 1;
        int h = snprintf(canned, bytes + 1, "{\"status\":\"ok\",\"pad\":\"");
        memset(canned + h, 'x', bytes - (size_t)h - 2);
        memcpy(canned + bytes - 2, "\"}", 2);
        canned[bytes] = '\0';
        canned_len = bytes;
    }
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t loop;
    uv_loop_init(&loop);
    static srv_ctx ctx;
    ctx.loop = &loop;
    ctx.mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                                   MHD_USE_TURBO,
                               (uint16_t)port, NULL, NULL, on_request, NULL,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned int)10000,
                               MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                               MHD_OPTION_END);
    if (!ctx.mhd || srv_loop_attach(&ctx) != SRV_OK) {
        fprintf(stderr, "mhd_hello: cannot start\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ctx.mhd, MHD_DAEMON_INFO_BIND_PORT);
    printf("mhd_hello listening on 127.0.0.1:%u\n", info ? (unsigned)info->port : port);
    fflush(stdout);
    uv_signal_t sigterm, sigint;
    uv_signal_init(&loop, &sigterm);
    uv_signal_init(&loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_run(&loop, UV_RUN_DEFAULT);
    srv_loop_detach(&ctx);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    MHD_stop_daemon(ctx.mhd);
    uv_loop_close(&loop);
    return 0;
}

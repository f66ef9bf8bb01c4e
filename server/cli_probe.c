/*
 * cli_probe.c: "ikd probe [URL]", the container health check.
 *
 * One HTTP/1.1 GET to URL with a 2-second deadline for connecting and for the
 * whole answer; exits 0 when the status is 200 and 1 otherwise, saying why
 * on standard error. A base URL (http://HOST:PORT, with or without a
 * trailing "/") probes that daemon's /livez; a URL with a path probes that
 * path (/readyz, say). Without URL it probes /livez where the daemon of the
 * same environment listens: IKD_LISTEN (the image sets it) with a wildcard
 * host (0.0.0.0, [::]) read as loopback, else the daemon's default address
 * (SRV_LISTEN_DEFAULT, server/config.h). It lets the runtime image carry no
 * HTTP client of its own (the Dockerfile's HEALTHCHECK runs it). Only
 * http:// and https:// URLs with a numeric IPv4 or bracketed IPv6 address
 * or "localhost" are accepted: a probe talks to its own container, never
 * resolves names. Without URL and with IKD_TLS_CERT set (ikd serves TLS),
 * it probes over https. Over https it does not check the certificate: a
 * probe asks whether its own container's daemon answers, not who it is
 * (GnuTLS, as ikd's own TLS).
 */
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>

#include "server/config.h"
#include "server/srv_main.h"

#define PROBE_DEADLINE_MS 2000

/* Splits URL into host (without brackets), port and path; 0 or -1. A URL
 * without a path, or whose path is "/" alone, is a base URL: its path is
 * /livez (the root is the live page, or 404 without --web: never a health
 * check). */
static int parse_url(const char *url, char *host, size_t hostsz, int *port, const char **path,
                     size_t *origin_len, bool *tls)
{
    const char *p = url;
    *tls = strncmp(p, "https://", 8) == 0;
    if (!*tls && strncmp(p, "http://", 7) != 0)
        return -1;
    p += *tls ? 8 : 7;
    const char *hend;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend)
            return -1;
        p++;
    } else {
        hend = p + strcspn(p, ":/");
    }
    size_t n = (size_t)(hend - p);
    if (n == 0 || n >= hostsz)
        return -1;
    memcpy(host, p, n);
    host[n] = '\0';
    p = hend + (*hend == ']');
    *port = *tls ? 443 : 80;
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v < 1 || v > 65535)
            return -1;
        *port = (int)v;
        p = end;
    }
    *origin_len = (size_t)(p - url); /* "http://HOST:PORT" */
    *path = *p == '\0' || strcmp(p, "/") == 0 ? "/livez" : p;
    return **path == '/' ? 0 : -1;
}

static long ms_left(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long used = (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
    return PROBE_DEADLINE_MS - used;
}

/* Waits for fd to become ready for events within the deadline; 0 or -1. */
static int wait_fd(int fd, short events, const struct timespec *start)
{
    for (;;) {
        long left = ms_left(start);
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* The probe's connection: the socket, and the TLS session over it (or
 * NULL for plain http). */
typedef struct probe_io {
    int fd;
    gnutls_session_t tls;
    gnutls_certificate_credentials_t creds;
} probe_io;

/* The TLS handshake within the deadline (the certificate is not checked:
 * see the file comment). 0, or -1 with the reason in *why. */
static int tls_start(probe_io *io, const struct timespec *start, const char **why)
{
    *why = "out of memory";
    if (gnutls_certificate_allocate_credentials(&io->creds) < 0 ||
        gnutls_init(&io->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) < 0 ||
        gnutls_set_default_priority(io->tls) < 0 ||
        gnutls_credentials_set(io->tls, GNUTLS_CRD_CERTIFICATE, io->creds) < 0)
        return -1;
    gnutls_transport_set_int(io->tls, io->fd);
    for (;;) {
        int r = gnutls_handshake(io->tls);
        if (r == GNUTLS_E_SUCCESS)
            return 0;
        if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED) {
            *why = gnutls_strerror(r);
            return -1;
        }
        if (wait_fd(io->fd, gnutls_record_get_direction(io->tls) ? POLLOUT : POLLIN, start) != 0) {
            *why = "the TLS handshake timed out";
            return -1;
        }
    }
}

/* send() or gnutls_record_send(): bytes sent, 0 to wait, -1 on error. */
static ssize_t io_send(probe_io *io, const char *buf, size_t n)
{
    if (!io->tls) {
        ssize_t w = send(io->fd, buf, n, MSG_NOSIGNAL);
        return w >= 0 ? w : (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    }
    ssize_t w = gnutls_record_send(io->tls, buf, n);
    return w >= 0 ? w : (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) ? 0 : -1;
}

/* recv() or gnutls_record_recv(): bytes read, 0 at the end, -2 to wait,
 * -1 on error. */
static ssize_t io_recv(probe_io *io, char *buf, size_t n)
{
    if (!io->tls) {
        ssize_t r = recv(io->fd, buf, n, 0);
        return r >= 0 ? r : (errno == EAGAIN || errno == EINTR) ? -2 : -1;
    }
    ssize_t r = gnutls_record_recv(io->tls, buf, n);
    if (r == GNUTLS_E_PREMATURE_TERMINATION)
        return 0;
    return r >= 0 ? r : (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) ? -2 : -1;
}

/* The URL of /livez for a --listen value HOST:PORT into buf; 0 or -1. */
static int livez_url(const char *listen, bool tls, char *buf, size_t size)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen)
        return -1;
    size_t hl = (size_t)(colon - listen);
    const char *host = listen;
    if ((hl == 7 && strncmp(listen, "0.0.0.0", 7) == 0)) {
        host = "127.0.0.1";
        hl = 9;
    } else if (hl == 4 && strncmp(listen, "[::]", 4) == 0) {
        host = "[::1]";
        hl = 5;
    }
    int n = snprintf(buf, size, "%s://%.*s:%s/livez", tls ? "https" : "http", (int)hl, host,
                     colon + 1);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

int srv_cli_probe(int argc, char **argv)
{
    char fromenv[128];
    const char *url = fromenv;
    const char *listen = getenv("IKD_LISTEN");
    if (!listen || !*listen)
        listen = SRV_LISTEN_DEFAULT;
    const char *cert = getenv("IKD_TLS_CERT");
    if (argc >= 2) {
        url = argv[1];
    } else if (livez_url(listen, cert && *cert, fromenv, sizeof fromenv) != 0) {
        fprintf(stderr, "ikd probe: IKD_LISTEN=\"%s\" is not HOST:PORT\n", listen);
        return 1;
    }
    char host[64];
    int port;
    const char *path;
    size_t origin_len;
    bool tls;
    if (argc > 2 || parse_url(url, host, sizeof host, &port, &path, &origin_len, &tls) != 0) {
        fprintf(stderr,
                "ikd probe: usage: ikd probe [http[s]://HOST:PORT[/PATH]] (got \"%s\"; without a "
                "path, /livez)\n",
                url);
        return 1;
    }
    /* what the messages below name: the URL with the path probed */
    char probed[512];
    snprintf(probed, sizeof probed, "%.*s%s", (int)origin_len, url, path);
    url = probed;
    struct sockaddr_storage sa;
    socklen_t salen;
    memset(&sa, 0, sizeof sa);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
    const char *addr = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((unsigned short)port);
        salen = sizeof *s4;
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((unsigned short)port);
        salen = sizeof *s6;
    } else {
        fprintf(stderr, "ikd probe: \"%s\" is not a numeric address or localhost\n", host);
        return 1;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("ikd probe: socket");
        return 1;
    }
    int rc = 1;
    probe_io io = {.fd = fd};
    const char *why;
    if (connect(fd, (struct sockaddr *)&sa, salen) != 0 && errno != EINPROGRESS) {
        fprintf(stderr, "ikd probe: cannot connect to %s: %s\n", url, strerror(errno));
        goto out;
    }
    int err = 0;
    socklen_t elen = sizeof err;
    if (wait_fd(fd, POLLOUT, &start) != 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 ||
        err != 0) {
        fprintf(stderr, "ikd probe: cannot connect to %s: %s\n", url,
                err ? strerror(err) : "timed out");
        goto out;
    }
    if (tls && tls_start(&io, &start, &why) != 0) {
        fprintf(stderr, "ikd probe: %s: %s\n", url, why);
        goto out;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path,
                     host);
    if (n < 0 || (size_t)n >= sizeof req) {
        fprintf(stderr, "ikd probe: the path is too long\n");
        goto out;
    }
    for (int sent = 0; sent < n;) {
        if (wait_fd(fd, POLLOUT, &start) != 0) {
            fprintf(stderr, "ikd probe: %s timed out\n", url);
            goto out;
        }
        ssize_t w = io_send(&io, req + sent, (size_t)(n - sent));
        if (w < 0) {
            fprintf(stderr, "ikd probe: %s: cannot send\n", url);
            goto out;
        }
        if (w > 0)
            sent += (int)w;
    }
    /* the status line is all that is read: "HTTP/1.1 200 ..." */
    char line[64];
    size_t got = 0;
    while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
        /* (GnuTLS may hold a record read already: no waiting then) */
        if (!(io.tls && gnutls_record_check_pending(io.tls) > 0) &&
            wait_fd(fd, POLLIN, &start) != 0) {
            fprintf(stderr, "ikd probe: %s timed out\n", url);
            goto out;
        }
        ssize_t r = io_recv(&io, line + got, sizeof line - 1 - got);
        if (r == 0)
            break;
        if (r == -2)
            continue;
        if (r < 0) {
            fprintf(stderr, "ikd probe: %s: the connection failed\n", url);
            goto out;
        }
        got += (size_t)r;
    }
    line[got] = '\0';
    int status = 0;
    if (sscanf(line, "HTTP/1.%*d %d", &status) != 1) {
        fprintf(stderr, "ikd probe: %s did not answer HTTP\n", url);
        goto out;
    }
    if (status != 200) {
        fprintf(stderr, "ikd probe: %s answered %d\n", url, status);
        goto out;
    }
    rc = 0;
out:
    if (io.tls)
        gnutls_deinit(io.tls);
    if (io.creds)
        gnutls_certificate_free_credentials(io.creds);
    close(fd);
    return rc;
}

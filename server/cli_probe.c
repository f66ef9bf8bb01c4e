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
 * HTTP client of its own (the Dockerfile's HEALTHCHECK runs it). Only plain http:// URLs with a
 * numeric IPv4 or bracketed IPv6 address or "localhost" are accepted: a
 * probe talks to its own container, never resolves names.
 */
#include <errno.h>
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

#include "server/config.h"
#include "server/srv_main.h"

#define PROBE_DEADLINE_MS 2000

/* Splits URL into host (without brackets), port and path; 0 or -1. A URL
 * without a path, or whose path is "/" alone, is a base URL: its path is
 * /livez (the root is the live page, or 404 without --web: never a health
 * check). */
static int parse_url(const char *url, char *host, size_t hostsz, int *port, const char **path,
                     size_t *origin_len)
{
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0)
        return -1;
    p += 7;
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
    *port = 80;
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

/* The URL of /livez for a --listen value HOST:PORT into buf; 0 or -1. */
static int livez_url(const char *listen, char *buf, size_t size)
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
    int n = snprintf(buf, size, "http://%.*s:%s/livez", (int)hl, host, colon + 1);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

int srv_cli_probe(int argc, char **argv)
{
    char fromenv[128];
    const char *url = fromenv;
    const char *listen = getenv("IKD_LISTEN");
    if (!listen || !*listen)
        listen = SRV_LISTEN_DEFAULT;
    if (argc >= 2) {
        url = argv[1];
    } else if (livez_url(listen, fromenv, sizeof fromenv) != 0) {
        fprintf(stderr, "ikd probe: IKD_LISTEN=\"%s\" is not HOST:PORT\n", listen);
        return 1;
    }
    char host[64];
    int port;
    const char *path;
    size_t origin_len;
    if (argc > 2 || parse_url(url, host, sizeof host, &port, &path, &origin_len) != 0) {
        fprintf(stderr,
                "ikd probe: usage: ikd probe [http://HOST:PORT[/PATH]] (got \"%s\"; without a path, "
                "/livez)\n",
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
        ssize_t w = send(fd, req + sent, (size_t)(n - sent), MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            fprintf(stderr, "ikd probe: %s: %s\n", url, strerror(errno));
            goto out;
        }
        if (w > 0)
            sent += (int)w;
    }
    /* the status line is all that is read: "HTTP/1.1 200 ..." */
    char line[64];
    size_t got = 0;
    while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
        if (wait_fd(fd, POLLIN, &start) != 0) {
            fprintf(stderr, "ikd probe: %s timed out\n", url);
            goto out;
        }
        ssize_t r = recv(fd, line + got, sizeof line - 1 - got, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            fprintf(stderr, "ikd probe: %s: %s\n", url, strerror(errno));
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
    close(fd);
    return rc;
}

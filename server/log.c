/*
 * log.c: the daemon's log lines and the srv_ status messages.
 *
 * One line per event on standard error, either as text
 *   2026-01-01T12:00:00.123Z INFO listening on 127.0.0.1:8080
 * or, with --log-format json, as one JSON object per line
 *   {"ts":"2026-01-01T12:00:00.123Z","level":"info","msg":"listening on ..."}
 * Lines are formatted into a stack buffer (truncated at 1 KiB) and written
 * with one fputs under stdio's own lock, so lines from pool threads do not
 * interleave. Not here: access logs per request (the metrics count them).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/log.h"
#include "server/srv.h"

const char *srv_strerror(int status)
{
    switch (status) {
#define SRV_STATUS_MSG(name, value, msg) \
    case value:                          \
        return msg;
        SRV_STATUS_MAP(SRV_STATUS_MSG)
#undef SRV_STATUS_MSG
    default:
        return "unknown status";
    }
}

const char *const srv_log_level_names[] = {
#define SRV_LOG_LEVEL_LOW(name, low, up) low,
    SRV_LOG_LEVEL_MAP(SRV_LOG_LEVEL_LOW)
#undef SRV_LOG_LEVEL_LOW
        NULL};

static const char *level_name(srv_log_level level, int upper)
{
    static const char *const up[] = {
#define SRV_LOG_LEVEL_UP(name, low, up) up,
        SRV_LOG_LEVEL_MAP(SRV_LOG_LEVEL_UP)
#undef SRV_LOG_LEVEL_UP
    };
    static const size_t n = sizeof up / sizeof up[0];
    size_t i = (size_t)level < n ? (size_t)level : n - 1;
    return upper ? up[i] : srv_log_level_names[i];
}

/* Appends s JSON-escaped to buf at *pos (bounded by size). */
static void json_escape(char *buf, size_t size, size_t *pos, const char *s)
{
    for (; *s && *pos + 7 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[(*pos)++] = '\\';
            buf[(*pos)++] = (char)c;
        } else if (c < 0x20) {
            *pos += (size_t)snprintf(buf + *pos, size - *pos, "\\u%04x", c);
        } else {
            buf[(*pos)++] = (char)c;
        }
    }
    buf[*pos] = '\0';
}

void srv_log(srv_ctx *ctx, srv_log_level level, const char *fmt, ...)
{
    if (ctx && level < ctx->cfg.log_level)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000L);

    char line[1400];
    if (ctx && ctx->cfg.log_format == SRV_LOG_JSON) {
        size_t pos = (size_t)snprintf(line, sizeof line, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"",
                                      when, level_name(level, 0));
        json_escape(line, sizeof line - 3, &pos, msg);
        memcpy(line + pos, "\"}\n", 4);
    } else {
        snprintf(line, sizeof line, "%s %s %s\n", when, level_name(level, 1), msg);
    }
    fputs(line, stderr);
}

/*
 * log.h: the daemon's log lines on standard error (server/log.c), and the
 * two settings they obey (cfg.log_format, cfg.log_level, set by --log-format
 * and --log-level).
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

typedef struct srv_ctx srv_ctx;

typedef enum srv_log_format { SRV_LOG_TEXT = 0, SRV_LOG_JSON = 1 } srv_log_format;

/* The levels, lowest first: the enum, the names --log-level takes (and
 * JSON lines print) and the text lines' names come from this one list. */
#define SRV_LOG_LEVEL_MAP(X)                                                                       \
    X(DEBUG, "debug", "DEBUG")                                                                     \
    X(INFO, "info", "INFO")                                                                        \
    X(WARN, "warn", "WARN")                                                                        \
    X(ERROR, "error", "ERROR")

typedef enum srv_log_level {
#define SRV_LOG_LEVEL_ENUM(name, low, up) SRV_LOG_##name,
    SRV_LOG_LEVEL_MAP(SRV_LOG_LEVEL_ENUM)
#undef SRV_LOG_LEVEL_ENUM
} srv_log_level;

/* The lower-case names by level, NULL-terminated (--log-level's values). */
extern const char *const srv_log_level_names[];

/* One line on stderr, as text ("2026-01-01T00:00:00.000Z INFO message") or
 * JSON ({"ts":...,"level":"info","msg":"..."}) per ctx->cfg.log_format.
 * ctx may be NULL (text). Lines below cfg.log_level are dropped. Any thread. */
void srv_log(srv_ctx *ctx, srv_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SRV_LOG_H */

/*
 * config.c: defaults, flags and environment variables of the daemon, all
 * made from the one table SRV_CONFIG_MAP (config.h says what its columns
 * mean).
 *
 * Each row becomes an entry of opts[] (flag, variable, how its type is read
 * and checked, default, help). One parser reads a value of any type into an
 * opt_value; a switch generated from the table stores it into the row's
 * field, so the compiler checks that type and field agree. Defaults written
 * as VALUE() go through that same parser; --help shows them as written, the
 * PROTO ones formatted from proto_limits_default()'s values, and the NONE
 * ones as their word.
 *
 * Precedence: built-in default < environment variable < flag. Flags are
 * "--name value" or "--name=value". --allow-origin may be repeated and takes
 * a comma-separated list. The token is never printed.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/build_info.h"
#include "server/config.h"
#include "server/srv.h"

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
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    cfg->tls_cert_file = cfg->tls_key_file = NULL;
    if (cfg->redis_url) {
        /* it may hold Redis's password */
        volatile char *p = cfg->redis_url;
        while (*p)
            *p++ = '\0';
        free(cfg->redis_url);
        cfg->redis_url = NULL;
    }
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

/* Copies n bytes of s into out (size bytes) as a string; false when they
 * do not fit or hold a NUL or a control character. */
static bool copy_field(char *out, size_t size, const char *s, size_t n)
{
    if (n >= size)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

int srv_config_parse_redis(const char *s, srv_redis_url *out)
{
    static const char scheme[] = "redis://";
    memset(out, 0, sizeof *out);
    out->port = 6379;
    if (!s || strncmp(s, scheme, sizeof scheme - 1) != 0)
        return SRV_EINVAL;
    s += sizeof scheme - 1;
    const char *path = s + strcspn(s, "/?#");
    if (*path == '?' || *path == '#')
        return SRV_EINVAL; /* no options */
    /* the userinfo ends at the last '@' before the path (a password may
     * hold '@') */
    const char *at = NULL;
    for (const char *p = s; p < path; p++)
        if (*p == '@')
            at = p;
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        size_t ulen = colon ? (size_t)(colon - s) : (size_t)(at - s);
        if (!copy_field(out->user, sizeof out->user, s, ulen))
            return SRV_EINVAL;
        if (colon && !copy_field(out->password, sizeof out->password, colon + 1,
                                 (size_t)(at - colon - 1)))
            return SRV_EINVAL;
        if (!colon) { /* redis://PASSWORD@HOST, as redis-cli reads it */
            memcpy(out->password, out->user, sizeof out->password);
            out->user[0] = '\0';
        }
        s = at + 1;
    }
    const char *hend, *port = NULL;
    if (*s == '[') {
        const char *close = memchr(s, ']', (size_t)(path - s));
        if (!close || (close + 1 < path && close[1] != ':'))
            return SRV_EINVAL;
        if (!copy_field(out->host, sizeof out->host, s + 1, (size_t)(close - s - 1)))
            return SRV_EINVAL;
        hend = close + 1;
    } else {
        hend = memchr(s, ':', (size_t)(path - s));
        if (!hend)
            hend = path;
        if (!copy_field(out->host, sizeof out->host, s, (size_t)(hend - s)))
            return SRV_EINVAL;
        if (strchr(out->host, '@') || strchr(out->host, '['))
            return SRV_EINVAL;
    }
    if (out->host[0] == '\0')
        return SRV_EINVAL;
    if (hend < path) {
        if (*hend != ':')
            return SRV_EINVAL;
        port = hend + 1;
        char digits[8];
        unsigned long v;
        if (!copy_field(digits, sizeof digits, port, (size_t)(path - port)) ||
            parse_uint(digits, 65535, &v) != SRV_OK || v == 0)
            return SRV_EINVAL;
        out->port = (uint16_t)v;
    }
    if (*path == '/' && path[1]) {
        unsigned long v;
        if (parse_uint(path + 1, 15, &v) != SRV_OK)
            return SRV_EINVAL;
        out->db = (unsigned)v;
    }
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

/* ---- the table, as data and code ----------------------------------------- */

enum opt_id {
#define OPT_ENUM(id, topic, flag, env, type, field, dflt, help) OPT_##id,
    SRV_CONFIG_MAP(OPT_ENUM)
#undef OPT_ENUM
        OPT_COUNT
};

typedef enum opt_kind {
    K_LISTEN,
    K_UINT,
    K_SIZE,
    K_MS,
    K_REAL,
    K_ENUM,
    K_STRING,
    K_SECRET,
    K_ORIGINS,
    K_REDIS
} opt_kind;

enum opt_topic {
#define TOPIC_ENUM(topic, heading) TOPIC_##topic,
    SRV_CONFIG_TOPICS(TOPIC_ENUM)
#undef TOPIC_ENUM
        TOPIC_COUNT
};

static const char *const topic_heading[TOPIC_COUNT] = {
#define TOPIC_ROW(topic, heading) [TOPIC_##topic] = heading,
    SRV_CONFIG_TOPICS(TOPIC_ROW)
#undef TOPIC_ROW
};

typedef struct opt {
    int topic;
    const char *flag;
    const char *env;
    opt_kind kind;
    double lo, hi;            /* bounds of UINT, SIZE (lo), MS (hi), REAL */
    const char *const *names; /* ENUM */
    const char *meta;         /* the value's word in --help (ENUM: the names) */
    const char *value;        /* VALUE(): the default in the flag's syntax */
    const char *word;         /* NONE(): what --help shows */
    const char *help;
} opt;

/* The type column -> kind, lo, hi, names, meta. */
#define SPEC_LISTEN        K_LISTEN, 0, 0, NULL, "HOST:PORT"
#define SPEC_UINT(lo, hi)  K_UINT, lo, hi, NULL, "N"
#define SPEC_SIZE(lo, hi)  K_SIZE, lo, hi, NULL, "BYTES"
#define SPEC_MS(hi)        K_MS, 0, hi, NULL, "MS"
#define SPEC_REAL(lo, hi)  K_REAL, lo, hi, NULL, "X"
#define SPEC_ENUM(names)   K_ENUM, 0, 0, names, NULL
#define SPEC_STRING(word)  K_STRING, 0, 0, NULL, word
#define SPEC_SECRET        K_SECRET, 0, 0, NULL, "TOKEN"
#define SPEC_ORIGINS       K_ORIGINS, 0, 0, NULL, "ORIGIN,..."
#define SPEC_REDIS         K_REDIS, 0, 0, NULL, "URL"

/* The default column -> value, word. */
#define DFLT_VALUE(text) text, NULL
#define DFLT_PROTO       NULL, NULL
#define DFLT_NONE(word)  NULL, word

static const opt opts[OPT_COUNT] = {
#define OPT_ROW(id, topic, flag, env, type, field, dflt, help)                                     \
    [OPT_##id] = {TOPIC_##topic, flag, env, SPEC_##type, DFLT_##dflt, help},
    SRV_CONFIG_MAP(OPT_ROW)
#undef OPT_ROW
};

/* A value as the parser read it; which member depends on the kind. */
typedef struct opt_value {
    unsigned long u; /* UINT */
    size_t z;        /* SIZE */
    double d;        /* MS, REAL */
    int i;           /* ENUM */
    char *s;         /* STRING, SECRET, LISTEN's host (malloc'd) */
    uint16_t port;   /* LISTEN */
} opt_value;

/* The type column -> how a value is stored into field (cfg and val in
 * scope). The types with parameters name the store of their member, which
 * then takes the field: STORE_UINT(1, 1024)(threads) -> STORE_U(threads). */
#define STORE_LISTEN(f)    (free(cfg->f), cfg->f = val.s, cfg->listen_port = val.port)
#define STORE_UINT(lo, hi) STORE_U
#define STORE_SIZE(lo, hi) STORE_Z
#define STORE_MS(hi)       STORE_D
#define STORE_REAL(lo, hi) STORE_D
#define STORE_ENUM(names)  STORE_I
#define STORE_STRING(word) STORE_S
#define STORE_SECRET(f)    STORE_S(f)
#define STORE_ORIGINS(f)   ((void)0) /* add_origins() stored them while parsing */
#define STORE_REDIS(f)     STORE_S(f)
#define STORE_U(f)         (cfg->f = val.u)
#define STORE_Z(f)         (cfg->f = val.z)
#define STORE_D(f)         (cfg->f = val.d)
#define STORE_I(f)         (cfg->f = val.i)
#define STORE_S(f)         (free(cfg->f), cfg->f = val.s)

static void store(srv_config *cfg, int id, opt_value val)
{
    switch (id) {
#define OPT_STORE(id, topic, flag, env, type, field, dflt, help)                                   \
    case OPT_##id:                                                                                 \
        STORE_##type(field);                                                                       \
        break;
        SRV_CONFIG_MAP(OPT_STORE)
#undef OPT_STORE
    default:
        break;
    }
}

/* The type column -> the field's number, for --help's PROTO defaults
 * (c in scope; 0 for the types that are not numbers). */
#define NUMBER_LISTEN(f)    0.0
#define NUMBER_UINT(lo, hi) NUMBER_OF
#define NUMBER_SIZE(lo, hi) NUMBER_OF
#define NUMBER_MS(hi)       NUMBER_OF
#define NUMBER_REAL(lo, hi) NUMBER_OF
#define NUMBER_ENUM(names)  NUMBER_OF
#define NUMBER_STRING(word) NUMBER_NONE
#define NUMBER_NONE(f)      0.0
#define NUMBER_SECRET(f)    0.0
#define NUMBER_ORIGINS(f)   0.0
#define NUMBER_REDIS(f)     0.0
#define NUMBER_OF(f)        ((double)c->f)

static double number(const srv_config *c, int id)
{
    switch (id) {
#define OPT_NUMBER(id, topic, flag, env, type, field, dflt, help)                                  \
    case OPT_##id:                                                                                 \
        return NUMBER_##type(field);
        SRV_CONFIG_MAP(OPT_NUMBER)
#undef OPT_NUMBER
    default:
        return 0.0;
    }
}

/* ---- reading a value ----------------------------------------------------- */

/* Reads v as opts[id] says into *val (ORIGINS: adds them to cfg at once).
 * Returns 0, SRV_EINVAL or SRV_ENOMEM; on error nothing is allocated, but
 * for the Origins added before memory ran out. */
static int parse_value(srv_config *cfg, int id, const char *v, opt_value *val)
{
    const opt *o = &opts[id];
    char *end;
    switch (o->kind) {
    case K_LISTEN:
        return srv_config_parse_listen(v, &val->s, &val->port);
    case K_UINT:
        if (parse_uint(v, (unsigned long)o->hi, &val->u) != SRV_OK || val->u < o->lo)
            return SRV_EINVAL;
        return SRV_OK;
    case K_SIZE:
        if (srv_config_parse_size(v, &val->z) != SRV_OK || (double)val->z < o->lo ||
            (double)val->z > o->hi)
            return SRV_EINVAL;
        return SRV_OK;
    case K_MS:
        /* digits, an optional fraction: no sign, exponent, nan or inf */
        val->d = strtod(v, &end);
        if (!isdigit((unsigned char)*v) || strspn(v, "0123456789.") != strlen(v) || *end ||
            !(val->d > 0.0) || val->d > o->hi)
            return SRV_EINVAL;
        return SRV_OK;
    case K_REAL:
        val->d = strtod(v, &end);
        if (*v == '\0' || *end || !(val->d >= o->lo) || val->d > o->hi)
            return SRV_EINVAL;
        return SRV_OK;
    case K_ENUM:
        for (int i = 0; o->names[i]; i++)
            if (strcmp(v, o->names[i]) == 0) {
                val->i = i;
                return SRV_OK;
            }
        return SRV_EINVAL;
    case K_SECRET:
        /* printable, no blank at either end: a token that no header can
         * carry as given would lock every client out without a word */
        if (*v == ' ' || *v == '\t' || (*v && (v[strlen(v) - 1] == ' ' || v[strlen(v) - 1] == '\t')))
            return SRV_EINVAL;
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return SRV_EINVAL;
        /* fall through */
    case K_STRING:
        if (*v == '\0')
            return SRV_EINVAL;
        return (val->s = strdup(v)) ? SRV_OK : SRV_ENOMEM;
    case K_ORIGINS:
        return add_origins(cfg, v);
    case K_REDIS: {
        srv_redis_url u;
        if (srv_config_parse_redis(v, &u) != SRV_OK)
            return SRV_EINVAL;
        memset(&u, 0, sizeof u); /* the password */
        return (val->s = strdup(v)) ? SRV_OK : SRV_ENOMEM;
    }
    }
    return SRV_EINVAL;
}

static void format_size(char *buf, size_t size, size_t v);

/* The range of a bounded type as --help and errors show it ("1 to 1024",
 * "at most 1M"), or "" for the others. */
static void range_text(int id, char *buf, size_t size)
{
    const opt *o = &opts[id];
    char lo[24], hi[24];
    switch (o->kind) {
    case K_UINT:
        snprintf(buf, size, "%.0f to %.0f", o->lo, o->hi);
        return;
    case K_SIZE:
        format_size(lo, sizeof lo, (size_t)o->lo);
        format_size(hi, sizeof hi, (size_t)o->hi);
        if (o->lo <= 1)
            snprintf(buf, size, "at most %s", hi);
        else
            snprintf(buf, size, "%s to %s", lo, hi);
        return;
    case K_MS:
        snprintf(buf, size, "above 0, at most %.15g", o->hi);
        return;
    case K_REAL:
        snprintf(buf, size, "%.15g to %.15g", o->lo, o->hi);
        return;
    default:
        buf[0] = '\0';
        return;
    }
}

static int apply(srv_config *cfg, int id, const char *v, char *errbuf, size_t errsize)
{
    opt_value val = {0};
    int rc = parse_value(cfg, id, v, &val);
    if (rc == SRV_OK) {
        store(cfg, id, val);
        return rc;
    }
    const opt *o = &opts[id];
    char range[80];
    range_text(id, range, sizeof range);
    if (o->kind == K_SECRET)
        snprintf(errbuf, errsize,
                 *v ? "invalid value for --%s (not shown): it must be printable, without "
                      "blanks at either end"
                    : "--%s is empty: an empty token would leave every endpoint open (give "
                      "one, or leave it unset)",
                 o->flag);
    else if (o->kind == K_REDIS)
        snprintf(errbuf, errsize,
                 "invalid value for --%s (not shown: it may hold a password): expected "
                 "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]",
                 o->flag);
    else
        snprintf(errbuf, errsize, "invalid value for --%s: \"%.200s\"%s%s%s", o->flag, v,
                 range[0] ? " (" : "", range, range[0] ? ")" : "");
    return rc;
}

void srv_config_default(srv_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    proto_limits_default(&cfg->limits); /* the PROTO rows */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = cores > 0 ? (unsigned)cores : 2; /* NONE("cores") */
    cfg->loops = cfg->threads < 256 ? cfg->threads : 256;
    char err[128];
    for (int id = 0; id < OPT_COUNT; id++)
        if (opts[id].value) /* every VALUE() is valid: test_config checks */
            apply(cfg, id, opts[id].value, err, sizeof err);
}

/* ---- --help --------------------------------------------------------------- */

/* bytes with the largest K/M/G suffix that divides them */
static void format_size(char *buf, size_t size, size_t v)
{
    static const char suffix[] = "GMK";
    for (int i = 0; i < 3; i++) {
        size_t unit = (size_t)1 << (10 * (3 - i));
        if (v >= unit && v % unit == 0) {
            snprintf(buf, size, "%zu%c", v / unit, suffix[i]);
            return;
        }
    }
    snprintf(buf, size, "%zu", v);
}

/* The default of opts[id] as --help shows it. */
static void default_text(int id, char *buf, size_t size)
{
    const opt *o = &opts[id];
    if (o->value || o->word) {
        snprintf(buf, size, "%s", o->value ? o->value : o->word);
        return;
    }
    srv_config d; /* a PROTO row: proto_limits_default()'s value */
    memset(&d, 0, sizeof d);
    proto_limits_default(&d.limits);
    double v = number(&d, id);
    if (o->kind == K_SIZE)
        format_size(buf, size, (size_t)v);
    else
        snprintf(buf, size, "%.15g", v);
}

/* The layout of --help: no line is wider than HELP_WIDTH columns; a flag's
 * line is "  --flag VALUE" and its variable, which starts at HELP_ENV_COL
 * (or two spaces later when the flag is longer), and its help text follows
 * on lines of their own, indented by HELP_INDENT and wrapped at spaces. */
#define HELP_WIDTH   79
#define HELP_ENV_COL 40
#define HELP_INDENT  8

/* Writes text, then tail (kept whole on one line), indented by HELP_INDENT
 * and wrapped at spaces before HELP_WIDTH (a word longer than a line gets a
 * line of its own). */
static void print_wrapped(FILE *out, const char *text, const char *tail)
{
    int col = 0;
    for (int last = 0; last < 2; text = tail, last++) {
        for (text += strspn(text, " "); *text; text += strspn(text, " ")) {
            int n = last ? (int)strlen(text) : (int)strcspn(text, " ");
            if (col > 0 && col + 1 + n > HELP_WIDTH) {
                fputc('\n', out);
                col = 0;
            }
            col += col ? fprintf(out, " %.*s", n, text)
                       : fprintf(out, "%*s%.*s", HELP_INDENT, "", n, text);
            text += n;
        }
    }
    fputc('\n', out);
}

/* One entry: "  --flag VALUE", the variable in its column, the help. */
static void print_entry(FILE *out, const char *flag, const char *value, const char *env,
                        const char *text, const char *tail)
{
    int n = fprintf(out, "  --%s%s%s", flag, value[0] ? " " : "", value);
    if (env[0])
        fprintf(out, "%*s%s", n + 2 < HELP_ENV_COL ? HELP_ENV_COL - n : 2, "", env);
    fputc('\n', out);
    print_wrapped(out, text, tail);
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: ikd [FLAGS]       run the daemon\n"
                 "       ikd solve [FILE]  solve one request (FILE or stdin) and exit\n"
                 "       ikd probe [URL]   health check: exit 0 if URL answers 200; a base URL\n"
                 "                         (http://HOST:PORT) probes its /livez, and no URL\n"
                 "                         the /livez of IKD_LISTEN (default 127.0.0.1:8080)\n"
                 "       ikd chain FILE.urdf --base LINK --tip LINK\n"
                 "                         print the URDF as a chain object (JSON) for the API\n"
                 "\n"
                 "Flags, by topic. Each is also read from the environment variable shown\n"
                 "(a flag wins over its variable); BYTES take a K, M or G suffix.\n");
    for (int t = 0; t < TOPIC_COUNT; t++) {
        fprintf(out, "\n%s:\n", topic_heading[t]);
        for (int i = 0; i < OPT_COUNT; i++) {
            if (opts[i].topic != t)
                continue;
            char value[128] = "";
            if (opts[i].kind == K_ENUM) {
                size_t n = 0;
                for (size_t k = 0; opts[i].names[k] && n < sizeof value; k++)
                    n += (size_t)snprintf(value + n, sizeof value - n, "%s%s", k ? "|" : "",
                                          opts[i].names[k]);
            } else {
                snprintf(value, sizeof value, "%s", opts[i].meta);
            }
            char dflt[64], range[80], tail[160];
            default_text(i, dflt, sizeof dflt);
            range_text(i, range, sizeof range);
            snprintf(tail, sizeof tail, "%s%s%s(default %s)", range[0] ? "(" : "", range,
                     range[0] ? ") " : "", dflt);
            print_entry(out, opts[i].flag, value, opts[i].env, opts[i].help, tail);
        }
    }
    fprintf(out, "\nOther:\n");
    print_entry(out, "help", "", "", "print this and exit", "");
    print_entry(out, "version", "", "", "print the version and the commit, and exit", "");
}

/* ---- the command line ------------------------------------------------------ */

int srv_config_parse(srv_config *cfg, int argc, char **argv, FILE *out, char *errbuf,
                     size_t errsize)
{
    if (!cfg->listen_host) {
        snprintf(errbuf, errsize, "out of memory");
        return SRV_ENOMEM;
    }
    for (int id = 0; id < OPT_COUNT; id++) {
        /* An empty variable counts as unset, except for the Origins and
         * the token: an empty list there would allow every Origin and an
         * empty token no token at all, so IKD_ALLOW_ORIGIN="" and
         * IKD_TOKEN="" are refused as the empty flags are (fail closed). */
        const char *v = getenv(opts[id].env);
        if (v && (*v || opts[id].kind == K_ORIGINS || opts[id].kind == K_SECRET) &&
            apply(cfg, id, v, errbuf, errsize) != SRV_OK) {
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
            if (strlen(opts[k].flag) == nlen && strncmp(opts[k].flag, name, nlen) == 0)
                id = k;
        if (id < 0) {
            snprintf(errbuf, errsize, "unknown flag \"%s\" (see --help)", a);
            return SRV_EINVAL;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            snprintf(errbuf, errsize, "--%s needs a value", opts[id].flag);
            return SRV_EINVAL;
        }
        if (opts[id].kind == K_ORIGINS && env_origins && !flag_origin_seen)
            free_origins(cfg); /* flags replace the environment's list */
        if (opts[id].kind == K_ORIGINS)
            flag_origin_seen = true;
        if (apply(cfg, id, v, errbuf, errsize) != SRV_OK)
            return SRV_EINVAL;
    }
    return SRV_OK;
}

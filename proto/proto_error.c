/*
 * proto_error.c: filling and printing the caller-owned proto_error, and the
 * names and MoveIt codes of PROTO_ERROR_MAP (proto_error.h).
 *
 * Messages are formatted by one function, proto_error_vformat: printf's
 * conversions, each handed to snprintf on its own, except that %g without
 * a precision prints the shortest text that reads back as the same double
 * (a bound of 1e6 and a value of 1000000.5 read "1000000" and "1000000.5",
 * where %g wrote "1e+06" for both), so that a message never shows two
 * different numbers alike.
 */
#include "proto/proto_error.h"
#include "proto/proto_json_write.h"
#include "proto/proto_scan.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const struct {
    const char *name;
    int moveit;
} rows[PROTO_E_COUNT] = {
    [PROTO_E_NONE] = {"", 0},
#define PROTO_ERROR_ROW(name, wire, http, moveit, text) [PROTO_E_##name] = {wire, moveit},
    PROTO_ERROR_MAP(PROTO_ERROR_ROW)
#undef PROTO_ERROR_ROW
};

const char *proto_error_name(proto_errcode code)
{
    return (unsigned)code < PROTO_E_COUNT ? rows[code].name : "";
}

int proto_error_moveit(proto_errcode code)
{
    return (unsigned)code < PROTO_E_COUNT ? rows[code].moveit : 0;
}

/* ---- the message formatter ------------------------------------------- */

/* The shortest %g text of v that strtod reads back as v (at most 17
 * digits), in fixed notation for integers below 1e16 (1000000, not
 * 1e+06). Returns what snprintf returned. */
static int shortest(char *out, size_t size, double v)
{
    char tmp[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* the decimal exponent of those p digits: fixed notation up to 1e16 */
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
    const char *e = strchr(tmp, 'e');
    long x10 = e ? strtol(e + 1, NULL, 10) : 0;
    if (x10 >= p && x10 < 16)
        p = (int)x10 + 1;
    return snprintf(out, size, "%.*g", p, v);
}

/* Each conversion is handed to snprintf with a format made here from the
 * caller's (checked at the caller by the format attribute). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

static size_t proto_error_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    size_t n = 0; /* the length of the whole text, as snprintf counts */
    char spec[32];
    while (*fmt) {
        if (*fmt != '%' || fmt[1] == '%') {
            if (n + 1 < size)
                buf[n] = *fmt;
            n++;
            fmt += *fmt == '%' ? 2 : 1;
            continue;
        }
        /* %[flags][width][.precision][length]conversion */
        const char *start = fmt++;
        fmt += strspn(fmt, "-+ #0'");
        int width = -1, prec = -1;
        bool star_width = false, star_prec = false, has_prec = false;
        if (*fmt == '*') {
            star_width = true;
            width = va_arg(ap, int);
            fmt++;
        } else {
            fmt += strspn(fmt, "0123456789");
        }
        if (*fmt == '.') {
            has_prec = true;
            fmt++;
            if (*fmt == '*') {
                star_prec = true;
                prec = va_arg(ap, int);
                fmt++;
            } else {
                fmt += strspn(fmt, "0123456789");
            }
        }
        const char *len = fmt;
        fmt += strspn(fmt, "hljztL");
        size_t lenlen = (size_t)(fmt - len);
        char conv = *fmt ? *fmt++ : '\0';
        size_t speclen = (size_t)(fmt - start);
        if (speclen >= sizeof spec || conv == '\0')
            break; /* not a conversion this formatter writes */
        memcpy(spec, start, speclen);
        spec[speclen] = '\0';
        char *out = n < size ? buf + n : NULL;
        size_t room = n < size ? size - n : 0;
        int k = 0;
        bool l1 = lenlen == 1 && len[0] == 'l', ll = lenlen == 2 && len[0] == 'l';
        bool z = lenlen == 1 && len[0] == 'z', j = lenlen == 1 && len[0] == 'j';
        bool t = lenlen == 1 && len[0] == 't', L = lenlen == 1 && len[0] == 'L';
#define PUT(type)                                                                                  \
    do {                                                                                           \
        type v_ = va_arg(ap, type);                                                                \
        if (star_width && star_prec)                                                               \
            k = snprintf(out, room, spec, width, prec, v_);                                        \
        else if (star_width)                                                                       \
            k = snprintf(out, room, spec, width, v_);                                              \
        else if (star_prec)                                                                        \
            k = snprintf(out, room, spec, prec, v_);                                               \
        else                                                                                       \
            k = snprintf(out, room, spec, v_);                                                     \
    } while (0)
        switch (conv) {
        case 'd':
        case 'i':
            if (ll)
                PUT(long long);
            else if (l1)
                PUT(long);
            else if (z)
                PUT(ssize_t);
            else if (j)
                PUT(intmax_t);
            else if (t)
                PUT(ptrdiff_t);
            else
                PUT(int);
            break;
        case 'u':
        case 'o':
        case 'x':
        case 'X':
            if (ll)
                PUT(unsigned long long);
            else if (l1)
                PUT(unsigned long);
            else if (z)
                PUT(size_t);
            else if (j)
                PUT(uintmax_t);
            else if (t)
                PUT(ptrdiff_t);
            else
                PUT(unsigned);
            break;
        case 'c':
            PUT(int);
            break;
        case 's':
            PUT(const char *);
            break;
        case 'p':
            PUT(void *);
            break;
        case 'g':
            if (!has_prec && !star_width && !L && speclen == 2) {
                k = shortest(out, room, va_arg(ap, double));
                break;
            }
            /* fall through */
        case 'G':
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'a':
        case 'A':
            if (L)
                PUT(long double);
            else
                PUT(double);
            break;
        default:
            k = 0; /* %n and unknown conversions write nothing */
            break;
        }
#undef PUT
        if (k > 0)
            n += (size_t)k;
    }
    if (size > 0)
        buf[n < size ? n : size - 1] = '\0';
    return n;
}

#pragma GCC diagnostic pop

size_t proto_error_format_text(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = proto_error_vformat(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

/* Makes s UTF-8, which JSON needs: each byte that does not begin a whole,
 * well-formed sequence (a URL's raw byte quoted in a message, a character
 * cut by a precision or the buffer's end) becomes '?'. */
static void utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        /* a whole sequence: the scanner's rule (no overlong form, no
         * surrogate, nothing past U+10FFFF) */
        size_t n = *p < 0x80 ? 1 : proto__utf8_seq(p, end);
        if (n == 0)
            *p++ = '?';
        else
            p += n;
    }
}

int proto_error_set(proto_error *e, proto_errcode code, const char *path, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->code = (unsigned)code < PROTO_E_COUNT && code != PROTO_E_NONE ? code : PROTO_E_INTERNAL;
    snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    proto_error_vformat(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    utf8_scrub(e->path);
    utf8_scrub(e->message);
    return -1;
}

void proto_error_clear(proto_error *e)
{
    if (!e)
        return;
    e->code = PROTO_E_NONE;
    e->message[0] = e->path[0] = '\0';
}

size_t proto_error_format(const proto_error *e, char *buf, size_t size)
{
    json_t *inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                              e->message, "path", e->path);
    json_t *root = inner ? json_pack("{s:o}", "error", inner) : NULL;
    char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    const char *out = s ? s : "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\","
                              "\"path\":\"\"}}";
    size_t n = strlen(out);
    if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        memcpy(buf, out, k);
        buf[k] = '\0';
    }
    free(s);
    return n;
}

bool proto_error_write(struct proto_jw *w, const proto_error *e)
{
    json_t *inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                              e->message, "path", e->path);
    if (!inner) /* a message cut inside a UTF-8 sequence: keep the code */
        inner = json_pack("{s:s, s:s, s:s}", "code", proto_error_name(e->code), "message",
                          "(message not printable)", "path", "");
    if (!inner)
        return false;
    proto_jw_value(w, inner);
    json_decref(inner);
    return true;
}

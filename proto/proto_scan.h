/*
 * proto_scan.h: the one tree-less scanner of the wire format. The readers
 * that take values straight from a request's text (proto/proto_codec.h,
 * in text mode: single solves, batches, ticks) step through the text with
 * it, and decline (return false) at the first thing it does not take: the
 * general reader (a jansson tree, proto_json.h) then reads the text and
 * words any error. What it takes, it takes exactly as jansson would read
 * it: numbers through proto__json_number() (jansson's types and values,
 * reals correctly rounded), strings only when they are printable ASCII
 * without escapes (so their bytes are their value), whitespace as JSON's
 * four characters.
 *
 * Each call skips whitespace first. The scanner is two pointers into the
 * caller's text and allocates nothing; after a false the scanner is left
 * anywhere (a reader that gets false gives up).
 */
#ifndef PROTO_SCAN_H
#define PROTO_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "proto/proto_json.h"

typedef struct proto_scan {
    const char *p, *end;
} proto_scan;

/* Internal: one JSON number at the start of text[0..len), read as
 * json_loadb() reads it: an integer when it has neither fraction nor
 * exponent and fits json_int_t (is_int, i; -0 is the integer 0), else a
 * correctly rounded real (d), bit for bit jansson's. Returns the bytes it
 * took, or 0 when the text there is no number jansson takes (a syntax
 * error, an integer beyond json_int_t, a real that overflows) or strtod()
 * stops early (a locale whose decimal point is not '.'). For readers that
 * fill typed values without a tree (this scanner, proto_stream.c's ticks). */
typedef struct proto_json_num {
    bool is_int;
    json_int_t i;
    double d;
} proto_json_num;
size_t proto__json_number(const char *text, size_t len, proto_json_num *out);

/* Internal: the length of the one UTF-8 sequence at p (first byte >= 0x80,
 * p < end) as RFC 3629 allows it (no overlong forms, no surrogates, nothing
 * above U+10FFFF), or 0: what jansson accepts in a string. */
size_t proto__utf8_seq(const unsigned char *p, const unsigned char *end);

static inline void proto__scan_ws(proto_scan *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* Skips whitespace; true when the text ends there. */
static inline bool proto__scan_end(proto_scan *r)
{
    proto__scan_ws(r);
    return r->p == r->end;
}

/* The character c. */
static inline bool proto__scan_char(proto_scan *r, char c)
{
    proto__scan_ws(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

/* 1 for the bytes a string taken here holds: printable ASCII but '"' and
 * '\\'. */
extern const unsigned char proto__plain[256];

/* A string of printable ASCII without escapes; *s, *n point into the text
 * (inline, as the keys of every object read from text pass here). */
static inline bool proto__scan_string(proto_scan *r, const char **s, size_t *n)
{
    if (!proto__scan_char(r, '"'))
        return false;
    const char *b = r->p;
    while (r->p < r->end && proto__plain[(unsigned char)*r->p])
        r->p++;
    if (r->p >= r->end || *r->p != '"')
        return false;
    *s = b;
    *n = (size_t)(r->p - b);
    r->p++;
    return true;
}

/* A key: such a string and its colon. */
static inline bool proto__scan_key(proto_scan *r, const char **s, size_t *n)
{
    return proto__scan_string(r, s, n) && proto__scan_char(r, ':');
}
/* *s == lit, for a string from proto__scan_string() (inline: with a
 * literal, the length and the comparison fold to a few instructions). */
static inline bool proto__scan_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}
/* A number (proto__json_number()). */
bool proto__scan_number(proto_scan *r, proto_json_num *v);
/* true or false. */
bool proto__scan_bool(proto_scan *r, bool *out);
/* null. */
bool proto__scan_null(proto_scan *r);
/* An array of at most max numbers, as doubles (an integer as the double
 * json_number_value() gives): their count in *n. */
bool proto__scan_numbers(proto_scan *r, double *out, size_t max, size_t *n);
/* Passes over one JSON value, nested at most 32 deep, and gives its text
 * in *s, *n and, when it is an array, its elements in *count (else 0):
 * brackets balanced by count and strings closed (escapes passed over),
 * nothing more checked, so the caller must read the text itself (or know
 * it equal to a text that was). */
bool proto__scan_skim(proto_scan *r, const char **s, size_t *n, size_t *count);
/* From r->p inside an array (or object) to its closing bracket, where r->p
 * is left, as the skim passes over it: the commas between its elements in
 * *commas and, with marks, comma c noted in marks[c / every] when c is 1
 * or a multiple of every (proto_batch_decode_parts' parts). False for
 * more than most commas, or what the skim refuses. */
bool proto__scan_commas(proto_scan *r, const char **marks, size_t every, size_t most,
                        size_t *commas);

#endif /* PROTO_SCAN_H */

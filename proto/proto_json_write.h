/*
 * proto_json_write.h: the JSON writer of the wire format: a growable text
 * buffer (proto_jw) that answers are written into directly, without building
 * a jansson tree, the number formats of answers (the shortest text that
 * reads back, or options.digits), and proto_json_dump() for trees. The
 * text is what jansson's json_dumps() gives for the same value with
 * JSON_COMPACT but for reals, written in their shortest form
 * (tests/proto/test_proto_json.c and tests/fuzz/fuzz_json.c compare them).
 * The canonical text ids hash (jansson's 17-digit text, keys sorted) is
 * written by proto/proto_id.c with proto_jw_string and
 * proto_jw_double_digits(v, 17). Every function is reentrant.
 */
#ifndef PROTO_JSON_WRITE_H
#define PROTO_JSON_WRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Compact text, the same text json_dumps() gives with JSON_COMPACT |
 * JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY but for reals, which are
 * written in their shortest form that reads back exactly
 * (proto_json_format_shortest; tests/fuzz/fuzz_json.c compares the text
 * byte for byte on trees without reals, and what any tree reads back to);
 * keys in the object's order. malloc'd (free()), NULL when out of memory. */
char *proto_json_dump(const json_t *v);

/* A JSON text writer for answers written directly, without building a
 * jansson tree (proto_job_encode()), and the engine of proto_json_dump().
 * The buffer starts in caller storage (buf, cap; may be NULL, 0) and moves
 * to the heap when it outgrows it. Out of memory is sticky: later writes do
 * nothing and proto_jw_finish() returns NULL. Writes append exactly the text
 * proto_json_dump() would give for the same value. */
typedef struct proto_jw {
    char *p;
    size_t len, cap;
    bool oom;  /* an allocation failed: the text is incomplete */
    bool heap; /* p is malloc'd (else the caller's buf) */
} proto_jw;

void proto_jw_init(proto_jw *w, char *buf, size_t cap);
/* Makes room for n more bytes (and a NUL); 0, or -1 when out of memory. */
int proto_jw_reserve(proto_jw *w, size_t n);
/* n bytes as they are (punctuation, keys known not to need escaping);
 * inline, as it runs for every comma and bracket of an answer. */
static inline void proto_jw_raw(proto_jw *w, const char *s, size_t n)
{
    if (w->len + n + 1 > w->cap && proto_jw_reserve(w, n))
        return;
    memcpy(w->p + w->len, s, n);
    w->len += n;
}
/* printf-formatted text as it is, not escaped: for the numbers of text
 * that is not JSON but shares the buffer (the metrics' exposition). A
 * formatting error counts as out of memory. */
void proto_jw_printf(proto_jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string: quoted and escaped as jansson escapes. */
void proto_jw_string(proto_jw *w, const char *s, size_t n);
void proto_jw_integer(proto_jw *w, json_int_t v);
/* A finite double as proto_json_format_shortest() writes it. */
void proto_jw_double(proto_jw *w, double v);
/* A finite double as proto_json_format_digits(v, digits) writes it (0:
 * the shortest form). */
void proto_jw_double_digits(proto_jw *w, double v, int digits);
/* A whole value, as proto_json_dump(v). */
void proto_jw_value(proto_jw *w, const json_t *v);
/* A whole value in the canonical text content ids hash (proto_id.c):
 * jansson's json_dumps(JSON_COMPACT | JSON_SORT_KEYS |
 * JSON_REAL_PRECISION(17)) of v with every integer made the real it
 * equals. */
void proto_jw_canonical(proto_jw *w, const json_t *v);
/* The text, malloc'd and NUL-terminated (the caller frees), its length in
 * *len when len is not NULL; the writer is left empty. NULL (and the writer
 * released) when out of memory. */
char *proto_jw_finish(proto_jw *w, size_t *len);
/* Frees what the writer holds (nothing when it still uses the caller's
 * buf). */
void proto_jw_release(proto_jw *w);

/* Room for any double the formats below write, with its NUL. */
#define PROTO_DOUBLE_MAX 32

/* v (finite) with the fewest significant digits that read back (strtod) as
 * v, the nearest to v when several do (the even one of two equally near),
 * by exact integer arithmetic (Schubfach; no strtod, no snprintf); laid
 * out as jansson's "%.17g" lays its digits out (fixed notation for
 * 1e-4 <= |v| < 1e17, else an exponent; ".0" on integral values, no '+'
 * or leading zeros in the exponent). 0.1 is "0.1", not
 * "0.10000000000000001". Every answer ikd writes uses it; chain ids keep
 * hashing jansson's 17-digit form. Returns the length; buf is
 * NUL-terminated. */
int proto_json_format_shortest(double v, char buf[PROTO_DOUBLE_MAX]);

/* v (finite) correctly rounded to digits (1..17) significant digits, exact
 * halves to even (the digits snprintf("%.*e", digits - 1) gives), trailing
 * zeros dropped, laid out as proto_json_format_shortest() lays its digits
 * out: 2/3 at 3 digits is "0.667", 999.96 at 4 is "1000.0". Answers with
 * options.digits use it; at 17 digits it is jansson's %.17g text with its
 * touch-ups (the numbers of the canonical text ids hash, proto_id.c).
 * digits outside 1..17: the shortest form. Returns
 * the length; buf is NUL-terminated. */
int proto_json_format_digits(double v, int digits, char buf[PROTO_DOUBLE_MAX]);

/* The double that proto_json_format_digits(v, digits) reads back as (v
 * itself for digits outside 1..17, zero or non-finite v): the value a
 * jansson tree of an answer holds so that it prints the same number. */
double proto_json_round_digits(double v, int digits);

#endif /* PROTO_JSON_WRITE_H */

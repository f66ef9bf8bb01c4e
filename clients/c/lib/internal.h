/*
 * internal.h: what the files of libikdclient share and its users never see
 * (the ikd__ prefix; the shared library exports ikd_ names only, by
 * clients/c/lib/libikdclient.map).
 *
 *   - ikd__buf: a growable byte buffer (messages being built, bytes read
 *     and to write, answers being received);
 *   - ikd__arena: where a decoded answer lives: blocks that never move, so
 *     pointers into them stay valid until the arena is reset; reset keeps
 *     one block as large as the last answer needed, so that a connection's
 *     steady stream of messages allocates nothing;
 *   - ikd__jr: the JSON reader (json.c), a pull parser over a text that it
 *     never modifies; strings are copied (unescaped) into an arena;
 *   - the JSON writer's pieces (json.c) and the encoders of what the client
 *     sends (encode.c);
 *   - ikd__dec and the decoders of what ikd answers (decode.c);
 *   - errors (error.c).
 *
 * Numbers are read and written in the C locale whatever the program's
 * locale is (a C++ game may have set a decimal comma).
 */
#ifndef IKD_CLIENT_INTERNAL_H
#define IKD_CLIENT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ikd/client.h"

#define IKD__STREAM_MAX 64 /* characters of a stream name (STREAM.md) */

/* ---- errors (error.c) --------------------------------------------------- */

/* Fills *e (may be NULL) with code and a printf-formatted message (the
 * other members cleared); returns code, so that "return ikd__fail(...)"
 * reads well. */
int ikd__fail(ikd_error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ikd__error_clear(ikd_error *e);
/* Copies src into dst (size bytes with the NUL), truncated. */
void ikd__strlcpy(char *dst, const char *src, size_t size);

/* ---- buffers ------------------------------------------------------------ */

typedef struct ikd__buf {
    char *p;
    size_t len, cap;
} ikd__buf;

/* Room for n more bytes and a NUL; 0, or -1 when out of memory (nothing
 * changed). */
int ikd__buf_reserve(ikd__buf *b, size_t n);
static inline int ikd__buf_put(ikd__buf *b, const void *s, size_t n)
{
    if (b->len + n + 1 > b->cap && ikd__buf_reserve(b, n))
        return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}
static inline int ikd__buf_puts(ikd__buf *b, const char *s)
{
    return ikd__buf_put(b, s, strlen(s));
}
/* Frees the bytes and empties the buffer. */
void ikd__buf_free(ikd__buf *b);
/* Keeps at most keep bytes of capacity (the content must fit). */
void ikd__buf_trim(ikd__buf *b, size_t keep);

/* ---- arena -------------------------------------------------------------- */

typedef struct ikd__block ikd__block;
typedef struct ikd__arena {
    ikd__block *head; /* the block being filled; older blocks follow */
    size_t total;     /* bytes of every block */
    size_t used;      /* bytes handed out since the last reset */
} ikd__arena;

/* n bytes aligned for any member of the answer structs; NULL when out of
 * memory. */
void *ikd__arena_alloc(ikd__arena *a, size_t n);
/* A copy of n bytes (and a NUL), NULL when out of memory. */
char *ikd__arena_strndup(ikd__arena *a, const char *s, size_t n);
/* Forgets everything handed out; keeps one block as large as what was
 * used, up to keep_max bytes (more is freed). */
void ikd__arena_reset(ikd__arena *a, size_t keep_max);
void ikd__arena_free(ikd__arena *a);

/* ---- JSON reader (json.c) ----------------------------------------------- */

typedef struct ikd__jr {
    const char *start, *p, *end;
    ikd__arena *arena; /* where strings are copied */
    int depth;
    char err[160]; /* what was wrong, with the byte offset */
} ikd__jr;

void ikd__jr_init(ikd__jr *r, const char *text, size_t len, ikd__arena *arena);
/* Each returns 0, or -1 with r->err set. */
int ikd__jr_fail(ikd__jr *r, const char *what);
/* The next character after white space (0 at the end). */
int ikd__jr_peek(ikd__jr *r);
int ikd__jr_object(ikd__jr *r); /* consumes '{' */
/* The next key of the object being read: 1 (key and ':' consumed; *key is
 * the raw text between the quotes, *escaped when it holds a backslash), 0
 * at '}' (consumed), -1 on error. */
int ikd__jr_key(ikd__jr *r, const char **key, size_t *len);
int ikd__jr_array(ikd__jr *r); /* consumes '[' */
/* Whether an element follows in the array being read: 1 yes, 0 at ']'
 * (consumed), -1 on error. */
int ikd__jr_more(ikd__jr *r);
int ikd__jr_number(ikd__jr *r, double *v);
/* An integer written without fraction or exponent, |v| < 2^63. */
int ikd__jr_integer(ikd__jr *r, long long *v);
int ikd__jr_bool(ikd__jr *r, bool *v);
/* A string, unescaped into the arena and NUL-terminated. */
int ikd__jr_string(ikd__jr *r, const char **s, size_t *len);
/* 1 when the value is null (consumed), 0 when it is not (nothing consumed). */
int ikd__jr_null(ikd__jr *r);
/* Any value, checked, nothing kept. */
int ikd__jr_skip(ikd__jr *r);
/* Whether only white space is left. */
int ikd__jr_end(ikd__jr *r);
/* Whether text (len bytes) is exactly one JSON value whose first
 * character is open ('{' or '['); 0 or -1 with why in r->err. */
int ikd__json_check(const char *text, size_t len, char open, char *why, size_t why_size);

/* A key compared with a literal. */
#define IKD__KEY(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp((k), (lit), sizeof(lit) - 1) == 0)

/* ---- JSON writer (json.c) ----------------------------------------------- */

/* A finite double as the shortest fixed-point text that reads back as the
 * same double when there is one of at most 17 significant digits, else
 * C's %.17g; at most 32 bytes are written, no NUL. Returns the length. */
size_t ikd__fmt_double(char *out, double v);
int ikd__put_double(ikd__buf *b, double v);
int ikd__put_integer(ikd__buf *b, long long v);
/* A JSON string (quoted, escaped). */
int ikd__put_string(ikd__buf *b, const char *s, size_t n);
/* The C locale, for strtod_l (created once). */
void *ikd__c_locale(void);

/* ---- encoders (encode.c) ------------------------------------------------ */

/* Each appends to b; 0, or an IKD_E_* code with *err filled (a member that
 * is not finite names itself, as "target.position[1]"); on error b may hold
 * part of the text (the caller drops it). what names the value in errors. */
int ikd__put_target(ikd__buf *b, const ikd_target *t, const char *what, ikd_error *err);
int ikd__put_seed(ikd__buf *b, const ikd_seed *s, const char *what, ikd_error *err);
/* "chain":{...} or "chain_id":"..." (with no comma before). */
int ikd__put_chain(ikd__buf *b, const ikd_chain *c, ikd_error *err);
/* A piece of JSON text from the caller, checked to be one value opening
 * with open, then appended. */
int ikd__put_json(ikd__buf *b, const char *json, char open, const char *what, ikd_error *err);
/* Whether name is a valid stream name (STREAM.md). */
bool ikd__stream_name_ok(const char *name);

/* ---- decoders (decode.c) ------------------------------------------------ */

/* Scratch vectors the decoders collect arrays in before they are copied
 * into the arena in one piece (one per element type, since arrays of one
 * type never nest). */
typedef struct ikd__dec {
    ikd__arena arena;
    ikd__buf doubles, tips, results, entries, names;
} ikd__dec;

void ikd__dec_reset(ikd__dec *d, size_t keep_max);
void ikd__dec_free(ikd__dec *d);
size_t ikd__dec_memory(const ikd__dec *d);

/* One solve's result object. */
int ikd__read_result(ikd__dec *d, ikd__jr *r, ikd_result *out);
/* An error object {"code","message","path"} into e (its other members
 * kept). */
int ikd__read_error_object(ikd__jr *r, ikd_error *e);

/* A stream message from ikd, decoded (strings in the arena). */
typedef struct ikd__msg {
    const char *type;
    const char *stream;
    const char *chain_id;
    long long seq, skipped, index, count, sent;
    bool has_seq, has_skipped, has_result, has_error, has_solutions, has_index, completed;
    ikd_result result;
    ikd_error error;
    ikd_tick tick;
} ikd__msg;
/* A text message from ikd into *m. A tick answer's "solutions" of more
 * than max_entries entries (the connection's max_streams: a tick holds no
 * more targets) is refused at the first entry past it, before it is read.
 * 0, or IKD_E_BAD_ANSWER with *err saying what was wrong (m keeps what was
 * read before: its type and seq). */
int ikd__decode_message(ikd__dec *d, const char *text, size_t len, size_t max_entries, ikd__msg *m,
                        ikd_error *err);

/* HTTP answers. */
int ikd__decode_answer(ikd__dec *d, const char *text, size_t len, ikd_answer *out, ikd_error *err);
int ikd__decode_chain_info(ikd__dec *d, const char *text, size_t len, ikd_chain_info *out,
                           ikd_error *err);
/* An HTTP error answer {"error":{...}} into e (code from its word); when
 * the text is not one, e says so with the status. Returns e->code. */
int ikd__decode_http_error(const char *text, size_t len, int status, ikd_error *e);

/* ---- the binary form of ticks (binary.c) ------------------------------- */

/* Whether seq is exact as a double and within a stream seq's range
 * (magnitude at most 2^53 - 1). */
bool ikd__seq_binary_ok(long long seq);
/* Whether a tick target fits the binary form: a position (dims 0, 2 or 3)
 * and an optional orientation, nothing else, no seed, and a seq that is
 * IKD_SEQ_AUTO or exact as a double. (That every target of the tick has
 * an orientation, or none has, is the caller's to check.) */
bool ikd__tick_target_binary(const ikd_target *t, const ikd_seed *seed, long long seq);
/* Bytes of one target's record, and of a whole binary tick of n targets
 * whose names take names bytes. */
size_t ikd__tick_record_size(bool orientation);
size_t ikd__tick_binary_size(size_t n, size_t names, bool orientation);
/* Appends target t of stream name: its name to names (a length byte and
 * the bytes), its record (seq, NaN for IKD_SEQ_AUTO; x, y, z, z 0 for dims
 * 2; the orientation when orientation) to recs. 0, or an IKD_E_* code with
 * *err filled (a number that is not finite named as "what.position[k]");
 * on error nothing is appended. */
int ikd__tick_put_binary(ikd__buf *names, ikd__buf *recs, const char *name, const ikd_target *t,
                         long long seq, bool orientation, const char *what, ikd_error *err);
/* Target i's record read back (to write the tick as JSON after all). */
void ikd__tick_get_binary(const ikd__buf *recs, size_t i, bool orientation, long long *seq,
                          double position[3], double q[4]);
/* The 24 bytes of a binary tick's head at head. */
void ikd__tick_head_binary(char *head, long long seq, size_t n, size_t names, bool orientation);
/* ikd's binary answer to a binary tick ("IKDS") in p[0..n): 1 when it is
 * not one (it does not start with "IKDS" and version 1; nothing is
 * filled), 0 when *out holds it (entries, results, strings in d's arena),
 * or IKD_E_BAD_ANSWER with *err saying what broke the layout (err->seq
 * the tick's when the head could be read). Every count and length is
 * checked against the bytes there before use; more than max_entries
 * entries is refused before anything is allocated. */
int ikd__decode_tick_binary(ikd__dec *d, const char *p, size_t n, size_t max_entries, ikd_tick *out,
                            ikd_error *err);

/* ---- time --------------------------------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t ikd__now_ms(void);

#endif /* IKD_CLIENT_INTERNAL_H */

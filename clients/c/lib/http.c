/*
 * http.c: ikd_client, the HTTP half of libikdclient, over libcurl (one easy
 * handle per client, so that its connection is kept alive between calls).
 *
 * Each call writes its body into the client's buffer, performs the request
 * (blocking, bounded by opts.timeout_ms), reads the answer into a buffer
 * bounded by opts.max_answer (a longer answer is cut off and is
 * IKD_E_MESSAGE_TOO_LARGE), and decodes it: a success into the caller's
 * struct, an error status into ikd_error with ikd's code, message and path.
 *
 * Two retries happen by themselves: a 503 "overloaded" is sent again after
 * its Retry-After (at most opts.retries times), and an unknown_chain answer
 * to a request by chain_id is followed, when this client registered that
 * chain, by registering its text again and one more try (a replica that
 * restarted, or another one behind a balancer, does not know the id; ikd's
 * ids are content addresses, so the id comes back the same). The texts
 * kept for that are bounded by opts.max_remembered bytes: past it the
 * oldest are forgotten.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define DEFAULT_TIMEOUT_MS 30000L
#define DEFAULT_MAX_ANSWER ((size_t)256 << 20)
#define DEFAULT_REMEMBERED ((size_t)64 << 20)

typedef struct remembered {
    struct remembered *next; /* newest first */
    char id[80];
    size_t len;
    char text[]; /* the chain's JSON */
} remembered;

struct ikd_client {
    CURL *curl;
    char *base; /* the URL without a trailing slash */
    char *ca_file;
    struct curl_slist *headers;
    long timeout_ms;
    size_t max_answer;
    int retries;
    size_t max_remembered, remembered_bytes;
    remembered *chains;
    ikd__buf body, answer;
    bool answer_cut;
    double retry_after_s;
    ikd__dec dec;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

ikd_client *ikd_client_new(const ikd_client_opts *opts, ikd_error *err)
{
    ikd__error_clear(err);
    if (!opts || !opts->url ||
        (strncmp(opts->url, "http://", 7) != 0 && strncmp(opts->url, "https://", 8) != 0)) {
        ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the URL must start with http:// or https://");
        return NULL;
    }
    for (const char *t = opts->token; t && *t; t++) {
        if ((unsigned char)*t < 0x20 || *t == 0x7f) {
            ikd__fail(err, IKD_E_INVALID_ARGUMENT, "the token holds a control character");
            return NULL;
        }
    }
    pthread_once(&curl_once, init_curl);
    if (curl_init_rc != CURLE_OK) {
        ikd__fail(err, IKD_E_HTTP, "curl_global_init failed: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    ikd_client *c = calloc(1, sizeof *c);
    if (!c) {
        ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    c->base = dup_str(opts->url);
    c->ca_file = dup_str(opts->ca_file);
    c->curl = curl_easy_init();
    c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->max_answer = opts->max_answer ? opts->max_answer : DEFAULT_MAX_ANSWER;
    c->retries = opts->retries > 0 ? opts->retries : 0;
    c->max_remembered = opts->max_remembered ? opts->max_remembered : DEFAULT_REMEMBERED;
    bool ok = c->base && c->curl && (!opts->ca_file || c->ca_file);
    if (ok) {
        size_t n = strlen(c->base);
        while (n && c->base[n - 1] == '/')
            c->base[--n] = '\0';
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        if (h && opts->token) {
            size_t len = strlen(opts->token) + 32;
            char *auth = malloc(len);
            struct curl_slist *h2 = NULL;
            if (auth) {
                snprintf(auth, len, "Authorization: Bearer %s", opts->token);
                h2 = curl_slist_append(h, auth);
                free(auth);
            }
            if (!h2) {
                curl_slist_free_all(h);
                h = NULL;
            }
        }
        /* libcurl's own "Expect: 100-continue" for large bodies costs a
         * round trip: ikd reads bodies at once */
        if (h) {
            struct curl_slist *h3 = curl_slist_append(h, "Expect:");
            if (!h3) {
                curl_slist_free_all(h);
                h = NULL;
            } else {
                h = h3;
            }
        }
        c->headers = h;
        ok = h != NULL;
    }
    if (!ok) {
        ikd_client_free(c);
        ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    return c;
}

void ikd_client_free(ikd_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    for (remembered *r = c->chains, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    free(c->base);
    free(c->ca_file);
    ikd__buf_free(&c->body);
    ikd__buf_free(&c->answer);
    ikd__dec_free(&c->dec);
    free(c);
}

/* ---- one exchange ------------------------------------------------------- */

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
    ikd_client *c = user;
    size_t bytes = size * n;
    if (c->answer.len + bytes > c->max_answer) {
        c->answer_cut = true;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    if (ikd__buf_put(&c->answer, p, bytes))
        return 0;
    return bytes;
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    ikd_client *c = user;
    size_t bytes = size * n;
    static const char name[] = "retry-after:";
    if (bytes > sizeof name && strncasecmp(p, name, sizeof name - 1) == 0) {
        char v[32];
        size_t k = bytes - (sizeof name - 1);
        if (k >= sizeof v)
            k = sizeof v - 1;
        memcpy(v, p + sizeof name - 1, k);
        v[k] = '\0';
        c->retry_after_s = atof(v);
    }
    return bytes;
}

/* Performs method path with body; *status gets the HTTP status. The answer
 * is in c->answer (NUL-terminated). */
static int perform(ikd_client *c, const char *method, const char *path, const char *body,
                   size_t body_len, int *status, ikd_error *err)
{
    size_t url_len = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(url_len);
    if (!url)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    snprintf(url, url_len, "%s%s", c->base, path);
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "libikdclient/" IKD_CLIENT_VERSION);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
    }
    c->answer.len = 0;
    c->answer_cut = false;
    c->retry_after_s = 0;
    CURLcode rc = curl_easy_perform(h);
    free(url);
    if (c->answer.p)
        c->answer.p[c->answer.len] = '\0';
    if (rc != CURLE_OK) {
        if (c->answer_cut)
            return ikd__fail(err, IKD_E_MESSAGE_TOO_LARGE,
                             "the answer is larger than max_answer (%zu bytes)", c->max_answer);
        int code = rc == CURLE_OPERATION_TIMEDOUT ? IKD_E_TIMEOUT
                   : rc == CURLE_SSL_CACERT || rc == CURLE_PEER_FAILED_VERIFICATION ||
                           rc == CURLE_SSL_CONNECT_ERROR
                       ? IKD_E_TLS
                   : rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ? IKD_E_CONNECT
                                                                                     : IKD_E_HTTP;
        return ikd__fail(err, code, "%s %s: %s", method, path, curl_easy_strerror(rc));
    }
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    *status = (int)st;
    return 0;
}

static void sleep_s(double s)
{
    if (s <= 0)
        s = 1;
    if (s > 30)
        s = 30;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* perform, with the overloaded retries; a status >= 400 becomes *err
 * (err is never NULL here). */
static int exchange(ikd_client *c, const char *method, const char *path, const char *body,
                    size_t body_len, int *status, ikd_error *err)
{
    for (int attempt = 0;; attempt++) {
        int rc = perform(c, method, path, body, body_len, status, err);
        if (rc)
            return rc;
        if (*status < 400)
            return 0;
        ikd__decode_http_error(c->answer.p, c->answer.len, *status, err);
        err->retry_after_s = c->retry_after_s;
        if (err->code == IKD_E_OVERLOADED && attempt < c->retries) {
            sleep_s(c->retry_after_s);
            continue;
        }
        return err->code;
    }
}

/* ---- remembered chains -------------------------------------------------- */

static const remembered *find_chain(const ikd_client *c, const char *id)
{
    for (const remembered *r = c->chains; r; r = r->next)
        if (strcmp(r->id, id) == 0)
            return r;
    return NULL;
}

static void forget_chain(ikd_client *c, const char *id)
{
    for (remembered **pp = &c->chains; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->id, id) == 0) {
            remembered *r = *pp;
            *pp = r->next;
            c->remembered_bytes -= r->len;
            free(r);
            return;
        }
    }
}

static void remember_chain(ikd_client *c, const char *id, const char *text, size_t len)
{
    if (strlen(id) >= sizeof((remembered *)0)->id || len > c->max_remembered)
        return;
    forget_chain(c, id);
    remembered *r = malloc(sizeof *r + len + 1);
    if (!r)
        return; /* re-registration is a convenience: without memory, none */
    ikd__strlcpy(r->id, id, sizeof r->id);
    r->len = len;
    memcpy(r->text, text, len);
    r->text[len] = '\0';
    r->next = c->chains;
    c->chains = r;
    c->remembered_bytes += len;
    /* over the bound: the oldest go */
    while (c->remembered_bytes > c->max_remembered) {
        remembered **pp = &c->chains;
        while ((*pp)->next)
            pp = &(*pp)->next;
        c->remembered_bytes -= (*pp)->len;
        free(*pp);
        *pp = NULL;
    }
}

/* ---- answers ------------------------------------------------------------ */

/* What a caller gets: the struct first, then what its pointers point into. */
typedef struct answer_box {
    ikd_answer a;
    ikd__dec dec;
    char *text;
} answer_box;

typedef struct chain_box {
    ikd_chain_info c;
    ikd__dec dec;
    char *text;
} chain_box;

/* Takes c->answer's bytes for a box (the client's buffer starts afresh). */
static char *take_answer(ikd_client *c, size_t *len)
{
    char *text = c->answer.p;
    *len = c->answer.len;
    c->answer.p = NULL;
    c->answer.len = c->answer.cap = 0;
    return text;
}

static int answer_out(ikd_client *c, ikd_answer **out, ikd_error *err)
{
    answer_box *box = calloc(1, sizeof *box);
    if (!box)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    size_t len;
    box->text = take_answer(c, &len);
    int rc = box->text ? ikd__decode_answer(&box->dec, box->text, len, &box->a, err)
                       : ikd__fail(err, IKD_E_BAD_ANSWER, "an empty answer");
    if (rc) {
        ikd_answer_free(&box->a);
        return rc;
    }
    *out = &box->a;
    return 0;
}

void ikd_answer_free(ikd_answer *a)
{
    if (!a)
        return;
    answer_box *box = (answer_box *)a;
    ikd__dec_free(&box->dec);
    free(box->text);
    free(box);
}

static int chain_out(ikd_client *c, int status, ikd_chain_info **out, ikd_error *err)
{
    chain_box *box = calloc(1, sizeof *box);
    if (!box)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    size_t len;
    box->text = take_answer(c, &len);
    int rc = box->text ? ikd__decode_chain_info(&box->dec, box->text, len, &box->c, err)
                       : ikd__fail(err, IKD_E_BAD_ANSWER, "an empty answer");
    if (rc) {
        ikd_chain_info_free(&box->c);
        return rc;
    }
    box->c.created = status == 201;
    *out = &box->c;
    return 0;
}

void ikd_chain_info_free(ikd_chain_info *ci)
{
    if (!ci)
        return;
    chain_box *box = (chain_box *)ci;
    ikd__dec_free(&box->dec);
    free(box->text);
    free(box);
}

/* ---- the calls ---------------------------------------------------------- */

static int register_text(ikd_client *c, const char *text, size_t len, int *status, ikd_error *err)
{
    int rc = exchange(c, "POST", "/v1/chains", text, len, status, err);
    if (rc)
        return rc;
    /* the id, to remember the text by */
    ikd__dec_reset(&c->dec, 1 << 20);
    ikd_chain_info info;
    rc = ikd__decode_chain_info(&c->dec, c->answer.p, c->answer.len, &info, err);
    if (rc)
        return rc;
    remember_chain(c, info.id, text, len);
    return 0;
}

/* A solve or batch body in c->body of want targets, sent to path: with
 * the chain's re-registration when the id is unknown there and remembered
 * here. An answer of another count of results is refused (the caller
 * reads one per target). */
static int solve_exchange(ikd_client *c, const char *path, const ikd_chain *chain, size_t want,
                          ikd_answer **out, ikd_error *err)
{
    int status = 0;
    int rc = exchange(c, "POST", path, c->body.p, c->body.len, &status, err);
    if (rc == IKD_E_UNKNOWN_CHAIN && chain->id) {
        const remembered *r = find_chain(c, chain->id);
        if (r) {
            /* copy the text out: registering rewrites the list */
            char *text = malloc(r->len + 1);
            if (!text)
                return rc;
            memcpy(text, r->text, r->len + 1);
            size_t len = r->len;
            int st;
            int rr = register_text(c, text, len, &st, err);
            free(text);
            if (rr)
                return rr;
            rc = exchange(c, "POST", path, c->body.p, c->body.len, &status, err);
        }
    }
    if (rc)
        return rc;
    if ((rc = answer_out(c, out, err)))
        return rc;
    if ((*out)->count != want) {
        size_t got = (*out)->count;
        ikd_answer_free(*out);
        *out = NULL;
        return ikd__fail(err, IKD_E_BAD_ANSWER, "an answer of %zu results to %zu targets", got,
                         want);
    }
    return 0;
}

int ikd_solve(ikd_client *c, const ikd_chain *chain, const ikd_target *target, const ikd_seed *seed,
              const char *options_json, ikd_answer **out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !out)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_solve: client and out are required");
    *out = NULL;
    ikd__buf *b = &c->body;
    b->len = 0;
    int rc;
    if (ikd__buf_put(b, "{", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if ((rc = ikd__put_chain(b, chain, err)))
        return rc;
    if (ikd__buf_puts(b, ",\"target\":"))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if ((rc = ikd__put_target(b, target, "target", err)))
        return rc;
    if (seed) {
        if (ikd__buf_puts(b, ",\"seed\":"))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if ((rc = ikd__put_seed(b, seed, "seed", err)))
            return rc;
    }
    if (options_json) {
        if (ikd__buf_puts(b, ",\"options\":"))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if ((rc = ikd__put_json(b, options_json, '{', "options", err)))
            return rc;
    }
    if (ikd__buf_put(b, "}", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return solve_exchange(c, "/v1/solve", chain, 1, out, err);
}

int ikd_solve_batch(ikd_client *c, const ikd_chain *chain, const ikd_target *targets, size_t count,
                    const ikd_seed *seeds, const char *options_json, ikd_answer **out,
                    ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !out || (!targets && count))
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT,
                         "ikd_solve_batch: client, targets and out are required");
    *out = NULL;
    ikd__buf *b = &c->body;
    b->len = 0;
    int rc;
    if (ikd__buf_put(b, "{", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if ((rc = ikd__put_chain(b, chain, err)))
        return rc;
    if (ikd__buf_puts(b, ",\"targets\":["))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    char what[48];
    for (size_t i = 0; i < count; i++) {
        snprintf(what, sizeof what, "targets[%zu]", i);
        if (i && ikd__buf_put(b, ",", 1))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if ((rc = ikd__put_target(b, &targets[i], what, err)))
            return rc;
    }
    if (ikd__buf_put(b, "]", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    if (seeds) {
        if (ikd__buf_puts(b, ",\"seeds\":["))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        for (size_t i = 0; i < count; i++) {
            if (i && ikd__buf_put(b, ",", 1))
                return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
            if (!seeds[i].json && !seeds[i].values) {
                if (ikd__buf_puts(b, "null"))
                    return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
                continue;
            }
            snprintf(what, sizeof what, "seeds[%zu]", i);
            if ((rc = ikd__put_seed(b, &seeds[i], what, err)))
                return rc;
        }
        if (ikd__buf_put(b, "]", 1))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    if (options_json) {
        if (ikd__buf_puts(b, ",\"options\":"))
            return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
        if ((rc = ikd__put_json(b, options_json, '{', "options", err)))
            return rc;
    }
    if (ikd__buf_put(b, "}", 1))
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    return solve_exchange(c, "/v1/solve/batch", chain, count, out, err);
}

int ikd_chain_register(ikd_client *c, const char *chain_json, ikd_chain_info **out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !chain_json || !out)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT,
                         "ikd_chain_register: client, chain_json and out are required");
    *out = NULL;
    c->body.len = 0;
    int rc = ikd__put_json(&c->body, chain_json, '{', "chain_json", err);
    if (rc)
        return rc;
    int status = 0;
    rc = register_text(c, c->body.p, c->body.len, &status, err);
    if (rc)
        return rc;
    return chain_out(c, status, out, err);
}

/* "/v1/chains/" + id, the id checked to be a plain word. */
static int chain_path(char *path, size_t size, const char *id, ikd_error *err)
{
    if (!id || !*id || strlen(id) > 64 || strspn(id, "0123456789abcdefABCDEF_-") != strlen(id))
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "a chain id is 1 to 64 hex digits");
    snprintf(path, size, "/v1/chains/%s", id);
    return 0;
}

int ikd_chain_get(ikd_client *c, const char *id, ikd_chain_info **out, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !out)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_chain_get: client and out required");
    *out = NULL;
    char path[96];
    int rc = chain_path(path, sizeof path, id, err);
    int status = 0;
    if (!rc)
        rc = exchange(c, "GET", path, NULL, 0, &status, err);
    return rc ? rc : chain_out(c, status, out, err);
}

int ikd_chain_delete(ikd_client *c, const char *id, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_chain_delete: client required");
    char path[96];
    int rc = chain_path(path, sizeof path, id, err);
    int status = 0;
    if (!rc) {
        forget_chain(c, id);
        rc = exchange(c, "DELETE", path, NULL, 0, &status, err);
    }
    return rc;
}

int ikd_solvers(ikd_client *c, char **json, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !json)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT, "ikd_solvers: client and json required");
    *json = NULL;
    int status = 0;
    int rc = exchange(c, "GET", "/v1/solvers", NULL, 0, &status, err);
    if (rc)
        return rc;
    size_t len;
    *json = take_answer(c, &len);
    if (!*json)
        return ikd__fail(err, IKD_E_BAD_ANSWER, "an empty answer");
    return 0;
}

int ikd_request(ikd_client *c, const char *method, const char *path, const char *body,
                size_t body_len, int *status, char **answer, size_t *answer_len, ikd_error *err)
{
    ikd_error local;
    if (!err)
        err = &local;
    ikd__error_clear(err);
    if (!c || !method || !path || path[0] != '/' || !status)
        return ikd__fail(err, IKD_E_INVALID_ARGUMENT,
                         "ikd_request: client, method, a path starting with / and status are "
                         "required");
    if (answer)
        *answer = NULL;
    if (answer_len)
        *answer_len = 0;
    int rc = perform(c, method, path, body, body ? body_len : 0, status, err);
    if (rc)
        return rc;
    size_t len;
    char *text = take_answer(c, &len);
    if (answer)
        *answer = text;
    else
        free(text);
    if (answer_len)
        *answer_len = len;
    return 0;
}

/*
 * tls.c: the certificate store of ikd's own TLS and the GnuTLS server
 * sessions made from it (contract in server/tls.h).
 *
 * One set of GnuTLS credentials per process, with a retrieve function
 * instead of a fixed certificate: each handshake asks the store for the
 * pair in use, so a reload on SIGHUP swaps the pair, the next handshakes
 * take the new one, and the connections already open go on with theirs.
 *
 * Generations: each pair read (at startup, at each reload) is a
 * reference-counted generation. The store holds the current one; a
 * handshake takes a reference into the srv_tls_ref its session points to
 * (gnutls_session_set_ptr), given back when the session is freed, so a
 * generation replaced by a reload is freed once no session that took it
 * can use it any more.
 *
 * Checks, at startup and at each reload, each failing with a message that
 * names the file: readable, at most SRV_TLS_FILE_MAX bytes, PEM that
 * GnuTLS reads (a certificate chain, server's first; an unencrypted key),
 * and the key is the certificate's (GnuTLS's own test, on a scratch set of
 * credentials). Protocols: TLS 1.2 and 1.3 only; ALPN offers http/1.1.
 */
#include "server/tls.h"

#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "server/srv.h"

#define CHAIN_MAX 16

static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* What a session points to (gnutls_session_set_ptr): its store, and where
 * its handshake keeps its reference. */
typedef struct session_ptr {
    srv_tls *store;
    srv_tls_ref *ref;
} session_ptr;

/* TLS 1.2 and 1.3, GnuTLS's usual ciphers for them. */
static const char priorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

typedef struct generation {
    atomic_uint refs;
    gnutls_pcert_st chain[CHAIN_MAX];
    unsigned nchain;
    gnutls_privkey_t key;
    char about[256]; /* srv_tls_describe's line */
} generation;

struct srv_tls {
    uv_mutex_t lock;
    generation *current;
    char *cert_file, *key_file;
    gnutls_certificate_credentials_t creds; /* with retrieve() */
    gnutls_priority_t prio;
};

static void gen_free(generation *g)
{
    for (unsigned i = 0; i < g->nchain; i++)
        gnutls_pcert_deinit(&g->chain[i]);
    if (g->key)
        gnutls_privkey_deinit(g->key);
    free(g);
}

static void gen_unref(generation *g)
{
    if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
        gen_free(g);
}

/* Reads a whole file of at most SRV_TLS_FILE_MAX bytes into *d (its data
 * malloc'd, NUL-ended), or fails with the message in err. */
static int read_file(const char *path, const char *what, gnutls_datum_t *d, char *err,
                     size_t errsize)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsize, "cannot read the TLS %s %s: %s", what, path, strerror(errno));
        return SRV_EIO;
    }
    unsigned char *buf = malloc(SRV_TLS_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        snprintf(err, errsize, "out of memory");
        return SRV_ENOMEM;
    }
    size_t n = fread(buf, 1, SRV_TLS_FILE_MAX + 1, f);
    bool failed = ferror(f);
    fclose(f);
    if (failed || n == 0 || n > SRV_TLS_FILE_MAX) {
        free(buf);
        snprintf(err, errsize, "cannot read the TLS %s %s: %s", what, path,
                 failed ? "read error" : n == 0 ? "the file is empty" : "larger than 1 MB");
        return SRV_EINVAL;
    }
    buf[n] = '\0';
    d->data = buf;
    d->size = (unsigned)n;
    return SRV_OK;
}

/* The certificate's subject and expiry, for the log. */
static void describe(generation *g, const gnutls_datum_t *cert)
{
    gnutls_x509_crt_t crt;
    snprintf(g->about, sizeof g->about, "a certificate chain of %u", g->nchain);
    if (gnutls_x509_crt_init(&crt) < 0)
        return;
    gnutls_datum_t dn = {NULL, 0};
    if (gnutls_x509_crt_import(crt, cert, GNUTLS_X509_FMT_PEM) >= 0 &&
        gnutls_x509_crt_get_dn3(crt, &dn, 0) >= 0) {
        time_t exp = gnutls_x509_crt_get_expiration_time(crt);
        struct tm tm;
        char when[32] = "?";
        if (exp != (time_t)-1 && gmtime_r(&exp, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(g->about, sizeof g->about, "%.160s, expires %s%s", (const char *)dn.data, when,
                 exp != (time_t)-1 && exp < time(NULL) ? " (EXPIRED)" : "");
    }
    gnutls_free(dn.data);
    gnutls_x509_crt_deinit(crt);
}

/* Reads and checks the pair of files into a new generation (one
 * reference), or fails with the message in err. */
static int load(const char *cert_file, const char *key_file, generation **out, char *err,
                size_t errsize)
{
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    generation *g = NULL;
    gnutls_certificate_credentials_t scratch = NULL;
    int rc = read_file(cert_file, "certificate", &cert, err, errsize);
    if (rc == SRV_OK)
        rc = read_file(key_file, "key", &key, err, errsize);
    if (rc != SRV_OK)
        goto out;
    rc = SRV_EINVAL;
    /* the pair as GnuTLS checks it: both read, and the key the certificate's */
    if (gnutls_certificate_allocate_credentials(&scratch) < 0) {
        snprintf(err, errsize, "out of memory");
        rc = SRV_ENOMEM;
        goto out;
    }
    int g_rc = gnutls_certificate_set_x509_key_mem(scratch, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (g_rc < 0) {
        const char *which = g_rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH ? "do not match"
                            : g_rc == GNUTLS_E_BASE64_DECODING_ERROR ||
                                    g_rc == GNUTLS_E_ASN1_DER_ERROR ||
                                    g_rc == GNUTLS_E_BASE64_UNEXPECTED_HEADER_ERROR
                                ? "are not a PEM certificate and key"
                                : "cannot be used";
        snprintf(err, errsize, "the TLS certificate %s and key %s %s: %s", cert_file, key_file,
                 which, gnutls_strerror(g_rc));
        goto out;
    }
    if (!(g = calloc(1, sizeof *g))) {
        snprintf(err, errsize, "out of memory");
        rc = SRV_ENOMEM;
        goto out;
    }
    atomic_init(&g->refs, 1);
    g->nchain = CHAIN_MAX;
    g_rc = gnutls_pcert_list_import_x509_raw(g->chain, &g->nchain, &cert, GNUTLS_X509_FMT_PEM, 0);
    if (g_rc < 0) {
        g->nchain = 0;
        snprintf(err, errsize, "the TLS certificate %s: %s (a chain of at most %d)", cert_file,
                 gnutls_strerror(g_rc), CHAIN_MAX);
        goto out;
    }
    if ((g_rc = gnutls_privkey_init(&g->key)) < 0 ||
        (g_rc = gnutls_privkey_import_x509_raw(g->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errsize, "the TLS key %s: %s", key_file, gnutls_strerror(g_rc));
        goto out;
    }
    describe(g, &cert);
    *out = g;
    g = NULL;
    rc = SRV_OK;
out:
    if (g)
        gen_free(g);
    if (scratch)
        gnutls_certificate_free_credentials(scratch);
    if (key.data) {
        memset(key.data, 0, key.size); /* the private key */
        free(key.data);
    }
    free(cert.data);
    return rc;
}

int srv_tls_open(const char *cert_file, const char *key_file, srv_tls **out, char *err,
                 size_t errsize)
{
    if (!cert_file || !key_file) {
        snprintf(err, errsize, "--tls-cert and --tls-key go together: %s is missing",
                 cert_file ? "--tls-key" : "--tls-cert");
        return SRV_EINVAL;
    }
    srv_tls *t = calloc(1, sizeof *t);
    if (!t || !(t->cert_file = strdup(cert_file)) || !(t->key_file = strdup(key_file)) ||
        uv_mutex_init(&t->lock) != 0) {
        if (t) {
            free(t->cert_file);
            free(t->key_file);
        }
        free(t);
        snprintf(err, errsize, "out of memory");
        return SRV_ENOMEM;
    }
    int rc = load(cert_file, key_file, &t->current, err, errsize);
    if (rc == SRV_OK && (gnutls_certificate_allocate_credentials(&t->creds) < 0 ||
                         gnutls_priority_init(&t->prio, priorities, NULL) < 0)) {
        snprintf(err, errsize, "out of memory");
        rc = SRV_ENOMEM;
    }
    if (rc != SRV_OK) {
        srv_tls_free(t);
        return rc;
    }
    gnutls_certificate_set_retrieve_function2(t->creds, retrieve);
    *out = t;
    return SRV_OK;
}

void srv_tls_free(srv_tls *t)
{
    if (!t)
        return;
    gen_unref(t->current);
    if (t->creds)
        gnutls_certificate_free_credentials(t->creds);
    if (t->prio)
        gnutls_priority_deinit(t->prio);
    uv_mutex_destroy(&t->lock);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}

int srv_tls_reload(srv_tls *t, char *err, size_t errsize)
{
    generation *g = NULL;
    int rc = load(t->cert_file, t->key_file, &g, err, errsize);
    if (rc != SRV_OK)
        return rc;
    uv_mutex_lock(&t->lock);
    generation *old = t->current;
    t->current = g;
    uv_mutex_unlock(&t->lock);
    gen_unref(old); /* freed now, or by the last connection that took it */
    return SRV_OK;
}

void srv_tls_describe(srv_tls *t, char *buf, size_t size)
{
    uv_mutex_lock(&t->lock);
    snprintf(buf, size, "%s", t->current->about);
    uv_mutex_unlock(&t->lock);
}

/* GnuTLS's retrieve function: the pair of the store in use, with a
 * reference kept in the srv_tls_ref the session points to (the
 * credentials have no pointer of ours: the store is found through the
 * session's). */
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    session_ptr *sp = gnutls_session_get_ptr(session);
    if (!sp || !sp->store)
        return -1;
    srv_tls *t = sp->store;
    uv_mutex_lock(&t->lock);
    generation *g = t->current;
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
    uv_mutex_unlock(&t->lock);
    gen_unref(sp->ref->gen); /* a second handshake of the same session */
    sp->ref->gen = g;
    *pcert = g->chain;
    *pcert_length = g->nchain;
    *pkey = g->key;
    return 0;
}

void srv_tls_ref_release(srv_tls_ref *r)
{
    if (!r)
        return;
    gen_unref(r->gen);
    r->gen = NULL;
}

int srv_tls_session_new(srv_tls *t, srv_tls_ref *ref, gnutls_session_t *out)
{
    gnutls_session_t s;
    if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) < 0)
        return SRV_ENOMEM;
    session_ptr *sp = malloc(sizeof *sp);
    static const gnutls_datum_t alpn = {(unsigned char *)"http/1.1", 8};
    if (!sp || gnutls_priority_set(s, t->prio) < 0 ||
        gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->creds) < 0 ||
        gnutls_alpn_set_protocols(s, &alpn, 1, 0) < 0) {
        free(sp);
        gnutls_deinit(s);
        return SRV_ENOMEM;
    }
    sp->store = t;
    sp->ref = ref;
    gnutls_session_set_ptr(s, sp);
    *out = s;
    return SRV_OK;
}

void srv_tls_session_free(gnutls_session_t s)
{
    if (!s)
        return;
    free(gnutls_session_get_ptr(s));
    gnutls_deinit(s);
}

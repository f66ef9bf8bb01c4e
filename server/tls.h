/*
 * tls.h: the certificate of ikd's own TLS (--tls-cert, --tls-key): the
 * store the handshakes take it from, and the GnuTLS server sessions of
 * the TLS front (server/tls_front.h, which ends TLS in front of
 * libmicrohttpd). server/tls.c says how.
 *
 * The certificate and its key live in one store per process (ctx->tls),
 * which every handshake of every loop reads: a reload (srv_tls_reload, on
 * SIGHUP) reaches every loop at once, for the handshakes that follow;
 * connections already open keep theirs and are not dropped.
 *
 * THREADS: srv_tls_open and srv_tls_free at startup and exit; every other
 * function from any thread (a handshake runs on the thread of the loop
 * that owns its connection; the store has a mutex).
 * MEMORY: a pair of certificate chain and key per generation; a reload
 * makes a new one, and the previous one is freed when the last session
 * whose handshake took it is freed (srv_tls_ref_release).
 */
#ifndef SRV_TLS_H
#define SRV_TLS_H

#include <gnutls/gnutls.h>
#include <stddef.h>

typedef struct srv_tls srv_tls;

/* Certificate and key files larger than this are refused (a chain of a
 * few certificates is a few kilobytes). */
#define SRV_TLS_FILE_MAX (1024 * 1024)

/* Reads and checks the PEM certificate chain (first the server's own
 * certificate, at most 16) and its unencrypted private key: both readable,
 * well formed, and the key the certificate's. Returns 0 and the store in
 * *out, or SRV_EINVAL / SRV_EIO / SRV_ENOMEM with a one-line message in
 * err naming the file and what is wrong (nothing is allocated then). */
int srv_tls_open(const char *cert_file, const char *key_file, srv_tls **out, char *err,
                 size_t errsize);

/* Frees the store (NULL is fine), after every session made from it. */
void srv_tls_free(srv_tls *t);

/* Reads the two files again (the names srv_tls_open was given) and, when
 * they pass the same checks, makes them the pair of the handshakes that
 * follow. Returns 0, or an error with its message in err, and then the
 * store keeps the pair it had. Any thread. */
int srv_tls_reload(srv_tls *t, char *err, size_t errsize);

/* One line about the pair in use, for the log: the certificate's subject
 * and when it expires ("CN=example, expires 2027-01-01T00:00:00Z"). */
void srv_tls_describe(srv_tls *t, char *buf, size_t size);

/* The pair a session's handshake took, held until the session is done
 * with: the caller keeps one per session, zeroed, for the session's life,
 * and releases it when it frees the session. */
typedef struct srv_tls_ref {
    void *gen;
} srv_tls_ref;
void srv_tls_ref_release(srv_tls_ref *r);

/* A new non-blocking GnuTLS server session on the store's certificate
 * (asked for at the handshake), TLS 1.2 or 1.3, ALPN http/1.1; ref is
 * where the handshake keeps its reference (see above). Returns 0, or
 * SRV_ENOMEM (nothing made). Any thread. */
int srv_tls_session_new(srv_tls *t, srv_tls_ref *ref, gnutls_session_t *out);
/* Frees a session of srv_tls_session_new (NULL is fine); its ref is the
 * caller's to release. */
void srv_tls_session_free(gnutls_session_t s);

#endif /* SRV_TLS_H */

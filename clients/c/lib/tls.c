/*
 * tls.c: wss:// on GnuTLS (the TLS library libmicrohttpd already brings to
 * every machine that builds ikd), non-blocking: the session reads and
 * writes the connection's socket itself, and every call that would block
 * says so (GNUTLS_E_AGAIN) so that the connection's loop waits for the
 * direction GnuTLS wants. The server's certificate is verified against
 * ca_file or the system's trust store, and against the host name (SNI is
 * sent for names, not for addresses).
 *
 * A write that would block must be repeated with the same bytes (GnuTLS
 * keeps the record it built); the connection's send buffer keeps them in
 * place until the write completes.
 */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>

#include "conn.h"

struct ikd__tls {
    gnutls_session_t s;
    gnutls_certificate_credentials_t cred;
    bool write_pending;
    char *host;
};

static bool is_address(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int ikd__tls_new(ikd__tls **out, int fd, const char *host, const char *ca_file, ikd_error *err)
{
    *out = NULL;
    ikd__tls *t = calloc(1, sizeof *t);
    if (!t)
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    t->host = strdup(host);
    int rc = t->host ? gnutls_certificate_allocate_credentials(&t->cred) : GNUTLS_E_MEMORY_ERROR;
    if (rc < 0) {
        free(t->host);
        free(t);
        return ikd__fail(err, IKD_E_NO_MEMORY, "out of memory");
    }
    if (ca_file) {
        rc = gnutls_certificate_set_x509_trust_file(t->cred, ca_file, GNUTLS_X509_FMT_PEM);
        if (rc <= 0) {
            ikd__tls_free(t);
            return ikd__fail(err, IKD_E_TLS, "no CA certificate read from %s%s%s", ca_file,
                             rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
        }
    } else {
        rc = gnutls_certificate_set_x509_system_trust(t->cred);
        if (rc < 0) {
            ikd__tls_free(t);
            return ikd__fail(err, IKD_E_TLS, "the system's CAs could not be read: %s",
                             gnutls_strerror(rc));
        }
    }
    rc = gnutls_init(&t->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    if (rc < 0) {
        gnutls_certificate_free_credentials(t->cred);
        free(t->host);
        free(t);
        return ikd__fail(err, IKD_E_TLS, "gnutls_init: %s", gnutls_strerror(rc));
    }
    if ((rc = gnutls_set_default_priority(t->s)) < 0 ||
        (rc = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred)) < 0 ||
        (!is_address(host) &&
         (rc = gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, host, strlen(host))) < 0)) {
        ikd__tls_free(t);
        return ikd__fail(err, IKD_E_TLS, "TLS setup: %s", gnutls_strerror(rc));
    }
    /* the certificate is checked during the handshake, its name included */
    gnutls_session_set_verify_cert(t->s, t->host, 0);
    gnutls_transport_set_int(t->s, fd);
    gnutls_handshake_set_timeout(t->s, 0);
    *out = t;
    return 0;
}

int ikd__tls_handshake(ikd__tls *t, ikd_error *err)
{
    int rc = gnutls_handshake(t->s);
    if (rc == GNUTLS_E_SUCCESS)
        return 0;
    if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED)
        return 1;
    if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
        gnutls_datum_t why = {NULL, 0};
        unsigned status = gnutls_session_get_verify_cert_status(t->s);
        gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
        ikd__fail(err, IKD_E_TLS, "the server's certificate is not trusted: %s",
                  why.data ? (const char *)why.data : "unknown reason");
        gnutls_free(why.data);
        return IKD_E_TLS;
    }
    return ikd__fail(err, IKD_E_TLS, "TLS handshake: %s", gnutls_strerror(rc));
}

long ikd__tls_read(ikd__tls *t, void *p, size_t n, ikd_error *err)
{
    ssize_t r = gnutls_record_recv(t->s, p, n);
    if (r > 0)
        return (long)r;
    if (r == 0)
        return -2;
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
        return 0;
    if (r == GNUTLS_E_PREMATURE_TERMINATION)
        return -2;
    ikd__fail(err, IKD_E_TLS, "TLS read: %s", gnutls_strerror((int)r));
    return -1;
}

long ikd__tls_write(ikd__tls *t, const void *p, size_t n, ikd_error *err)
{
    ssize_t r =
        t->write_pending ? gnutls_record_send(t->s, NULL, 0) : gnutls_record_send(t->s, p, n);
    if (r >= 0) {
        t->write_pending = false;
        return (long)r;
    }
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
        t->write_pending = true;
        return 0;
    }
    ikd__fail(err, IKD_E_TLS, "TLS write: %s", gnutls_strerror((int)r));
    return -1;
}

int ikd__tls_wants(const ikd__tls *t)
{
    return gnutls_record_get_direction(t->s) ? IKD_WANT_WRITE : IKD_WANT_READ;
}

bool ikd__tls_write_pending(const ikd__tls *t)
{
    return t->write_pending;
}

size_t ikd__tls_pending(const ikd__tls *t)
{
    return gnutls_record_check_pending(t->s);
}

void ikd__tls_free(ikd__tls *t)
{
    if (!t)
        return;
    if (t->s)
        gnutls_deinit(t->s);
    if (t->cred)
        gnutls_certificate_free_credentials(t->cred);
    free(t->host);
    free(t);
}

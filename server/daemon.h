/*
 * daemon.h: internal wiring between the daemon's own files (serve.c,
 * loop.c, http.c); other modules use srv.h.
 */
#ifndef SRV_DAEMON_H
#define SRV_DAEMON_H

#include "server/srv.h"

/* libmicrohttpd's access handler (cls = srv_ctx*) and request-completed
 * notification (MHD_OPTION_NOTIFY_COMPLETED, cls = srv_ctx*). */
enum MHD_Result srv_http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version,
                                const char *upload_data, size_t *upload_data_size,
                                void **con_cls);
void srv_http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);

/* Constant-time check of an Authorization header value against
 * "Bearer <token>" (header may be NULL). */
bool srv_http_token_ok(const char *header, const char *token);

#endif /* SRV_DAEMON_H */

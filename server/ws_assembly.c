/*
 * ws_assembly.c: a WebSocket data message being received, assembled from
 * its frames in one buffer (see ws_assembly.h), for server/ws_conn.c.
 *
 * wslay runs without buffering on ikd's connections: its own assembly
 * kept a block and a queue entry per fragment (91 bytes for a one-byte
 * fragment), so a message of many small fragments cost far more than its
 * bytes. Here a message costs its bytes and nothing per fragment: its
 * payloads together may not pass --max-message (checked as each frame
 * begins, from the length its header announces, before any byte of it is
 * held), and a buffer past one read's worth counts against --body-budget
 * while the message arrives (a crowd of unfinished messages holds at most
 * the budget), as an HTTP body does.
 *
 * Not here: the close codes and what follows a verdict (ws_conn.c), the
 * UTF-8 check and the stream rules (ws_conn.c, ws_messages.c).
 */
#include "server/ws_assembly.h"

#include <stdlib.h>
#include <string.h>

srv_ws_msg_verdict srv__ws_msg_frame(srv_ws_msg *m, bool continuation, uint64_t payload_length,
                                     size_t max)
{
    if (!continuation)
        m->len = 0; /* a new message (wslay refuses a stray continuation) */
    return payload_length > max - m->len ? SRV_WS_MSG_TOO_BIG : SRV_WS_MSG_OK;
}

srv_ws_msg_verdict srv__ws_msg_append(srv_ws_msg *m, srv_budget *budget, const void *data,
                                      size_t len)
{
    if (len == 0)
        return SRV_WS_MSG_OK;
    if (m->len + len > m->cap) {
        size_t cap = m->cap ? m->cap : 1024;
        while (cap < m->len + len)
            cap *= 2;
        /* past one read's worth, held against --body-budget as HTTP bodies
         * are (a crowd of unfinished messages: --max-message each) */
        size_t more = cap > SRV_WS_READ_BUDGET ? cap - m->held : 0;
        if (more && !srv_budget_reserve(budget, more)) {
            srv__ws_msg_free(m, budget); /* a closing connection holds nothing */
            return SRV_WS_MSG_BUDGET;
        }
        char *p = realloc(m->buf, cap);
        if (!p) {
            if (more)
                srv_budget_release(budget, more);
            return SRV_WS_MSG_NOMEM;
        }
        m->held += more;
        m->buf = p;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, len);
    m->len += len;
    return SRV_WS_MSG_OK;
}

void srv__ws_msg_done(srv_ws_msg *m, srv_budget *budget)
{
    m->len = 0;
    if (m->cap > SRV_WS_READ_BUDGET)
        srv__ws_msg_free(m, budget);
}

char *srv__ws_msg_take(srv_ws_msg *m, srv_budget *budget, const char *text)
{
    if (!m->buf || text != m->buf)
        return NULL;
    char *t = m->buf;
    m->buf = NULL;
    srv__ws_msg_free(m, budget); /* its bytes: a whole message now, bounded where it is held */
    return t;
}

void srv__ws_msg_free(srv_ws_msg *m, srv_budget *budget)
{
    free(m->buf);
    m->buf = NULL;
    m->cap = m->len = 0;
    if (m->held)
        srv_budget_release(budget, m->held);
    m->held = 0;
}

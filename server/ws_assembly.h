/*
 * ws_assembly.h: a WebSocket data message being received, assembled from
 * its frames into one buffer (server/ws_assembly.c). Internal to the
 * connection (server/ws_conn.c), which feeds it the frames wslay reads
 * without buffering and acts on the verdicts: the assembly never closes,
 * sends or reads anything itself.
 *
 * MEMORY: the buffer is malloc'd and grows by doubling; past one read's
 * worth (SRV_WS_READ_BUDGET) its size is held against the budget given
 * (--body-budget, as HTTP bodies are), and given back when it is freed or
 * taken. Loop thread only.
 */
#ifndef SRV_WS_ASSEMBLY_H
#define SRV_WS_ASSEMBLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/budget.h"

/* Bytes read from one socket per wake-up; a message buffer up to this size
 * is kept for the next message and not counted against the budget. */
#define SRV_WS_READ_BUDGET (32 * 1024)

typedef struct srv_ws_msg {
    char *buf;     /* NULL until the first non-empty frame */
    size_t len;    /* payload bytes so far */
    size_t cap;    /* bytes allocated */
    size_t held;   /* bytes of buf counted against the budget */
} srv_ws_msg;

typedef enum srv_ws_msg_verdict {
    SRV_WS_MSG_OK = 0,
    SRV_WS_MSG_TOO_BIG,  /* past the maximum message length: close with 1009 */
    SRV_WS_MSG_BUDGET,   /* the budget is full: close with 1013 (nothing held) */
    SRV_WS_MSG_NOMEM     /* out of memory: end the connection */
} srv_ws_msg_verdict;

/* A frame of payload_length bytes begins; continuation: it goes on the
 * message being assembled (otherwise a new message begins, len 0).
 * SRV_WS_MSG_TOO_BIG when the message would pass max bytes. */
srv_ws_msg_verdict srv__ws_msg_frame(srv_ws_msg *m, bool continuation, uint64_t payload_length,
                                     size_t max);
/* Appends a chunk of the frame's payload. On SRV_WS_MSG_BUDGET the buffer
 * was freed (and its bytes given back); on SRV_WS_MSG_NOMEM nothing
 * changed. */
srv_ws_msg_verdict srv__ws_msg_append(srv_ws_msg *m, srv_budget *budget, const void *data,
                                      size_t len);
/* The message was handed over: len goes back to 0, and a buffer larger
 * than one read's worth is freed rather than kept for the next one. */
void srv__ws_msg_done(srv_ws_msg *m, srv_budget *budget);
/* The buffer, when text is it: it becomes the caller's (to free), and the
 * next message is assembled in a new one. NULL (nothing changes) when
 * text is not the buffer. */
char *srv__ws_msg_take(srv_ws_msg *m, srv_budget *budget, const char *text);
/* Frees the buffer and gives its bytes back to budget. */
void srv__ws_msg_free(srv_ws_msg *m, srv_budget *budget);

#endif /* SRV_WS_ASSEMBLY_H */

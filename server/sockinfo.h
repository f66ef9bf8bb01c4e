/*
 * sockinfo.h: what the kernel knows about a TCP socket's bytes
 * (server/sockinfo.c, Linux). The drain uses the received ones to tell
 * whether a client pipelined more requests behind the one being
 * answered; the sockets kept for their last bytes (server/accept.c, the
 * TLS front) use the unsent ones, and reset those a client does not read.
 */
#ifndef SRV_SOCKINFO_H
#define SRV_SOCKINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bytes this process has read from TCP socket fd so far (*taken) and
 * those received but not read yet (*waiting). false when the kernel does
 * not say (then nothing is known). Any thread. */
bool srv_sock_received(int fd, uint64_t *taken, uint64_t *waiting);

/* The bytes of TCP socket fd's stream the kernel holds unsent (its end,
 * once shut down, counts one); 0 when the kernel does not say. Any
 * thread. */
size_t srv_sock_unsent(int fd);

/* Has fd's close reset the connection (SO_LINGER 0): the kernel drops what
 * it holds for the client instead of sending it. Any thread. */
void srv_sock_reset_on_close(int fd);

#endif /* SRV_SOCKINFO_H */

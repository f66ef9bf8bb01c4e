/*
 * sockinfo.h: what the kernel knows about a TCP socket's received bytes
 * (server/sockinfo.c, Linux). The drain uses it to tell whether a client
 * pipelined more requests behind the one being answered.
 */
#ifndef SRV_SOCKINFO_H
#define SRV_SOCKINFO_H

#include <stdbool.h>
#include <stdint.h>

/* The bytes this process has read from TCP socket fd so far (*taken) and
 * those received but not read yet (*waiting). false when the kernel does
 * not say (then nothing is known). Any thread. */
bool srv_sock_received(int fd, uint64_t *taken, uint64_t *waiting);

#endif /* SRV_SOCKINFO_H */

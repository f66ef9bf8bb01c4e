/*
 * sockinfo.c: a TCP socket's received bytes (contract in sockinfo.h), from
 * TCP_INFO's tcpi_bytes_received (Linux 4.1 and later: every byte received
 * in order) less what still waits in the receive queue (SIOCINQ); its
 * unsent bytes (SIOCOUTQNSD), and its reset on close (SO_LINGER 0). In a
 * file of its own: linux/tcp.h, which has that field, does not mix with
 * the C library's netinet/tcp.h.
 */
#include "server/sockinfo.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <stddef.h>
#include <linux/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

bool srv_sock_received(int fd, uint64_t *taken, uint64_t *waiting)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    int inq = 0;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received ||
        ioctl(fd, SIOCINQ, &inq) != 0 || inq < 0 || (uint64_t)inq > info.tcpi_bytes_received)
        return false;
    *waiting = (uint64_t)inq;
    *taken = info.tcpi_bytes_received - (uint64_t)inq;
    return true;
}

size_t srv_sock_unsent(int fd)
{
    int n = 0;
    return ioctl(fd, SIOCOUTQNSD, &n) == 0 && n > 0 ? (size_t)n : 0;
}

void srv_sock_reset_on_close(int fd)
{
    struct linger reset = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

/*
 * config.h: the daemon's flags and environment variables -> srv_config.
 *
 * Every flag has an environment variable (IKD_LISTEN, IKD_THREADS, ...; the
 * flag wins); "ikd --help" prints the list with defaults. Sizes accept a
 * K/M/G suffix (powers of 1024).
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stdio.h>

#include "server/srv.h"

/* Parses argv (argv[0] is the program) and the environment into *cfg, which
 * must hold srv_config_default() values. Returns 0, 1 when --help was printed
 * to out (the caller exits 0), or SRV_EINVAL with a one-line message in
 * errbuf (the caller prints it and exits 2). On error *cfg may be partly
 * changed; free it with srv_config_free() either way. */
int srv_config_parse(srv_config *cfg, int argc, char **argv, FILE *out, char *errbuf,
                     size_t errsize);

/* Splits "host:port", "[v6]:port" or "port" into host (malloc'd, no
 * brackets) and port. Returns 0 or SRV_EINVAL. */
int srv_config_parse_listen(const char *s, char **host, uint16_t *port);

/* "64", "8K", "16M", "1G" -> bytes. Returns 0 or SRV_EINVAL. */
int srv_config_parse_size(const char *s, size_t *out);

#endif /* SRV_CONFIG_H */

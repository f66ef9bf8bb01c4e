/*
 * srv_main.h: the modes of the ikd executable, called from main.c.
 */
#ifndef SRV_MAIN_H
#define SRV_MAIN_H

/* One-shot: argv[0] is "solve", argv[1] an optional request file. Prints the
 * response; returns 0 for a valid request (whatever the solve status), 2 with
 * the error JSON on standard output otherwise (or the usage on standard
 * error), 1 when out of memory. */
int srv_cli_solve(int argc, char **argv);

/* Health check: argv[0] is "probe", argv[1] an optional http:// URL
 * (default: /livez at IKD_LISTEN, a wildcard host read as loopback, or at
 * the daemon's default address SRV_LISTEN_DEFAULT without it). Returns 0
 * when it answers 200 within 2 seconds, 1 otherwise (the reason on
 * standard error). */
int srv_cli_probe(int argc, char **argv);

/* URDF to chain object: argv[0] is "chain", then FILE, --base LINK and
 * --tip LINK in any order. Prints {"kind":"urdf","urdf":...,"base":...,
 * "tip":...} on standard output once the wire format accepts it and
 * returns 0; returns 2 with the reason on standard error otherwise, 1 when
 * out of memory. */
int srv_cli_chain(int argc, char **argv);

/* The daemon (server/serve.c): parses flags and environment, serves until
 * SIGTERM, SIGINT or SIGHUP, then drains. Returns the process's exit status:
 * 0 after the drain or when --help or --version was printed, 2 for a bad
 * flag or value, 1 when startup fails. A drain that passes --drain-timeout
 * with pool work still running does not return: the process exits 1. */
int srv_serve(int argc, char **argv);

#endif /* SRV_MAIN_H */

/*
 * srv_main.h: the two modes of the ikd executable, called from main.c.
 */
#ifndef SRV_MAIN_H
#define SRV_MAIN_H

/* One-shot: argv[0] is "solve", argv[1] an optional request file. Prints the
 * response; returns 0 for a valid request (whatever the solve status), 2 with
 * the error JSON on standard output otherwise. */
int srv_cli_solve(int argc, char **argv);

/* The daemon: parses flags, serves until SIGTERM/SIGINT, returns the exit
 * status. */
int srv_serve(int argc, char **argv);

#endif /* SRV_MAIN_H */

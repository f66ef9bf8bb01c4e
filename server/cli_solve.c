/*
 * cli_solve.c: placeholder until its module lands (scaffolding commit only).
 */
#include <stdio.h>

#include "server/srv_main.h"

int srv_cli_solve(int argc, char **argv)
{
    fprintf(stderr, "ikd: srv_cli_solve is not built yet\n");
    return 1;
}

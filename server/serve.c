/*
 * serve.c: placeholder until its module lands (scaffolding commit only).
 */
#include <stdio.h>

#include "server/srv_main.h"

int srv_serve(int argc, char **argv)
{
    fprintf(stderr, "ikd: srv_serve is not built yet\n");
    return 1;
}

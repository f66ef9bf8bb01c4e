/*
 * main.c: the ikd executable's entry point.
 *
 * "ikd solve [FILE]" is the one-shot mode (server/cli_solve.c): one request
 * from FILE or standard input, the response on standard output. "ikd probe
 * [URL]" is the container health check (server/cli_probe.c). "ikd chain
 * FILE.urdf --base B --tip T" prints a URDF file as the chain object of the
 * wire format (server/cli_chain.c). Anything else runs the daemon
 * (server/serve.c), whose flags "ikd --help" lists.
 */
#include <string.h>

#include "server/srv_main.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "solve") == 0)
        return srv_cli_solve(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "probe") == 0)
        return srv_cli_probe(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "chain") == 0)
        return srv_cli_chain(argc - 1, argv + 1);
    return srv_serve(argc, argv);
}

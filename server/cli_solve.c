/*
 * cli_solve.c: "ikd solve [FILE]", the one-shot mode. Reads one request
 * (a body with "targets" is a batch, anything else a single solve) from FILE,
 * or from standard input when FILE is absent or "-", bounded by the default
 * max_body_bytes; runs exactly what POST /v1/solve and /v1/solve/batch run
 * (proto_job_decode -> proto_job_run -> proto_job_encode); prints the
 * response on standard output followed by a newline.
 *
 * Exit status: 0 when the request was valid, whatever the solve's status
 * (a "no_ik_solution" answer is still an answer); 2 with the error JSON
 * ({"error":{...}}, as the daemon would send it) on standard output when the
 * request was rejected or could not be read; 1 when out of memory.
 *
 * There is no chain registry in this mode: "chain_id" is answered with
 * unknown_chain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "server/srv_main.h"

static int fail(const proto_error *e)
{
    char buf[1024];
    proto_error_format(e, buf, sizeof buf);
    printf("%s\n", buf);
    fflush(stdout);
    return 2;
}

/* Reads at most max + 1 bytes of f into a malloc'd buffer. */
static char *slurp(FILE *f, size_t max, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            if (cap > max)
                break;
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        size_t want = cap - n;
        if (n + want > max + 1)
            want = max + 1 - n;
        size_t k = fread(b + n, 1, want, f);
        n += k;
        if (k < want || n > max)
            break;
    }
    *len = n;
    return b;
}

int srv_cli_solve(int argc, char **argv)
{
    proto_error err;
    proto_error_clear(&err);
    if (argc > 2) {
        fprintf(stderr, "usage: ikd solve [FILE]\n");
        return 2;
    }
    proto_limits lim;
    proto_limits_default(&lim);
    const char *path = argc == 2 ? argv[1] : "-";
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        proto_error_set(&err, PROTO_E_INVALID_REQUEST, "", "cannot open %s: %s", path,
                        strerror(errno));
        return fail(&err);
    }
    size_t len = 0;
    char *body = slurp(f, lim.max_body_bytes, &len);
    int read_error = ferror(f) ? errno : 0;
    if (f != stdin)
        fclose(f);
    if (!body) {
        fprintf(stderr, "ikd: out of memory\n");
        return 1;
    }
    if (read_error) {
        free(body);
        proto_error_set(&err, PROTO_E_INVALID_REQUEST, "", "cannot read %s: %s", path,
                        strerror(read_error));
        return fail(&err);
    }
    if (len > lim.max_body_bytes) {
        free(body);
        proto_error_set(&err, PROTO_E_TOO_LARGE, "", "the request is larger than %zu bytes",
                        lim.max_body_bytes);
        return fail(&err);
    }
    /* a body with "targets" is a batch (a syntax error is reported by the
     * decode below either way) */
    proto_kind kind = PROTO_SOLVE;
    json_t *peek = json_loadb(body, len, 0, NULL);
    if (json_is_object(peek) && json_object_get(peek, "targets"))
        kind = PROTO_BATCH;
    json_decref(peek);

    proto_job *job = NULL;
    if (proto_job_decode(body, len, kind, &lim, NULL, NULL, &job, &err)) {
        free(body);
        return fail(&err);
    }
    free(body);
    proto_job_run(job, 0, proto_job_count(job));
    size_t out_len = 0;
    char *out = proto_job_encode(job, &out_len);
    proto_job_free(job);
    if (!out) {
        fprintf(stderr, "ikd: out of memory\n");
        return 1;
    }
    fwrite(out, 1, out_len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(out);
    return 0;
}

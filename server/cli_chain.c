/*
 * cli_chain.c: "ikd chain FILE.urdf --base B --tip T", the helper that turns
 * a URDF file into the chain object of the wire format,
 *   {"kind":"urdf","urdf":"<robot ...>","base":"B","tip":"T"}
 * printed on standard output (one line), ready to be piped into curl as the
 * body of POST /v1/chains (--data-binary @-) or put under "chain" in a solve
 * or a stream's open message (proto/README.md, "urdf").
 *
 * The object is checked before it is printed, by decoding the very text
 * printed with proto_chain_decode() (what POST /v1/chains runs, with the
 * daemon's default limits): a base or tip that is not a link of the file,
 * links without a serial chain between them, a file that is not a URDF or
 * not UTF-8, are reported now rather than at registration. FILE "-" reads
 * standard input.
 *
 * Exit status: 0 with the object on standard output; 2 with "ikd chain:
 * <reason>" on standard error (a usage error, a file that cannot be opened
 * or read, one larger than the daemon's --max-urdf default, or a chain the
 * wire format refuses, with its code, message and JSON path); 1 when out of
 * memory.
 *
 * Not here: talking to a daemon (curl does), xacro (expand it first).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "proto/proto_json_write.h"
#include "proto/proto_stream.h"
#include "server/srv_main.h"

#define USAGE "usage: ikd chain FILE.urdf --base LINK --tip LINK   (FILE - reads standard input)\n"

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "ikd chain: %s\n", why);
    fputs(USAGE, stderr);
    return 2;
}

/* Reads at most max + 1 bytes of f into a malloc'd buffer; NULL when out of
 * memory. */
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

/* The value of flag `name` at argv[*i] ("--name V" or "--name=V"): sets *out
 * and returns 1, 0 when argv[*i] is not that flag, -1 when its value is
 * missing or empty. */
static int flag_value(char **argv, int argc, int *i, const char *name, const char **out)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *out = a + n + 1;
    } else if (a[n] == '\0') {
        if (*i + 1 >= argc)
            return -1;
        *out = argv[++*i];
    } else {
        return 0;
    }
    return **out ? 1 : -1;
}

int srv_cli_chain(int argc, char **argv)
{
    const char *path = NULL, *base = NULL, *tip = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if ((r = flag_value(argv, argc, &i, "--base", &base)) != 0 ||
            (r = flag_value(argv, argc, &i, "--tip", &tip)) != 0) {
            if (r < 0) {
                fprintf(stderr, "ikd chain: %s needs a link name\n", a);
                return usage(NULL);
            }
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "ikd chain: unknown flag \"%s\"\n", a);
            return usage(NULL);
        }
        if (path) {
            fprintf(stderr, "ikd chain: one URDF file only (got \"%s\" and \"%s\")\n", path, a);
            return usage(NULL);
        }
        path = a;
    }
    if (!path)
        return usage("no URDF file given");
    if (!base)
        return usage("--base is required: the link the chain starts at (the robot's base)");
    if (!tip)
        return usage("--tip is required: the link the chain ends at (the tool or flange)");
    if (!proto_stream_utf8_valid(base, strlen(base)) || !proto_stream_utf8_valid(tip, strlen(tip)))
        return usage("--base and --tip must be UTF-8 text");

    proto_limits lim;
    proto_limits_default(&lim);
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ikd chain: cannot open %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t len = 0;
    errno = 0;
    char *urdf = slurp(f, lim.max_urdf_bytes, &len);
    int read_errno = ferror(f) ? (errno ? errno : EIO) : 0;
    if (f != stdin)
        fclose(f);
    if (!urdf) {
        fprintf(stderr, "ikd chain: out of memory\n");
        return 1;
    }
    if (read_errno) {
        free(urdf);
        fprintf(stderr, "ikd chain: cannot read %s: %s\n", path, strerror(read_errno));
        return 2;
    }
    if (len > lim.max_urdf_bytes) {
        free(urdf);
        fprintf(stderr,
                "ikd chain: %s is larger than %zu bytes, the largest URDF ikd takes "
                "by default (--max-urdf)\n",
                path, lim.max_urdf_bytes);
        return 2;
    }
    if (len == 0) {
        free(urdf);
        fprintf(stderr, "ikd chain: %s is empty\n", path);
        return 2;
    }
    if (!proto_stream_utf8_valid(urdf, len)) {
        free(urdf);
        fprintf(stderr, "ikd chain: %s is not UTF-8 text (a URDF file is)\n", path);
        return 2;
    }

    /* the object, in the order proto/README.md writes it */
    json_t *obj = json_object();
    json_t *doc = json_stringn_nocheck(urdf, len);
    free(urdf);
    if (!obj || !doc || json_object_set_new(obj, "kind", json_string("urdf")) ||
        json_object_set_new(obj, "urdf", doc) ||
        json_object_set_new(obj, "base", json_string_nocheck(base)) ||
        json_object_set_new(obj, "tip", json_string_nocheck(tip))) {
        json_decref(obj);
        fprintf(stderr, "ikd chain: out of memory\n");
        return 1;
    }
    char *text = proto_json_dump(obj);
    json_decref(obj);
    if (!text) {
        fprintf(stderr, "ikd chain: out of memory\n");
        return 1;
    }

    /* the check: what POST /v1/chains would do with this very text */
    proto_error err;
    proto_error_clear(&err);
    proto_chain *c = proto_chain_decode(text, strlen(text), &lim, &err);
    if (!c) {
        free(text);
        fprintf(stderr, "ikd chain: %s: %s: %s", path, proto_error_name(err.code), err.message);
        if (err.path[0])
            fprintf(stderr, " (at %s)", err.path);
        fputc('\n', stderr);
        return 2;
    }
    proto_chain_unref(c);
    fputs(text, stdout);
    fputc('\n', stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}

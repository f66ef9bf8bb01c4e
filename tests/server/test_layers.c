/*
 * test_layers.c: the daemon's layering, checked on the built objects
 * (nm, from binutils) rather than trusted from the headers, as
 * tests/solver/test_ik_purity.c does for the solver:
 *   - three floors, nothing pointing up: solver <- proto <- server. No
 *     solver object refers to proto (proto_*), the daemon (srv_*) or any
 *     library above libm; no proto object refers to libmicrohttpd (MHD_*),
 *     libuv (uv_*), wslay (wslay_*), the socket calls or the daemon (srv_*);
 *   - handlers never touch a connection: the HTTP handlers and their route
 *     table, the batch pipeline, the stream rules, the chains streams hold
 *     and the solve policy (http_handlers.o, http_route.o, http_batch.o,
 *     ws_messages.o, ws_stream.o, ws_tick.o, stream_chains.o, solve.o)
 *     refer to no MHD_*, wslay_* or socket call; only the modules that own
 *     connections do (http_mhd.o, http_headers.o, ws_conn.o, ws_upgrade.o, loop.o,
 *     serve.o, guard.o, tls_front.o, and the probe's own client);
 *   - proto's files call each other without a cycle, and so do server's
 *     (the file-level graph, from each object's defined and undefined
 *     symbols, is acyclic: data symbols count too, so that a table one
 *     file defines and another reads is an edge), so a reader
 *     can take either module apart file by file. Where two server files
 *     must talk both ways, one registers a callback with the other at
 *     start-up (the HTTP route table, the WebSocket connection's hooks);
 *   - no source file of server/ or proto/ passes 1,000 lines (a file that
 *     grows past it holds more than one concern: split it at its seams).
 * The objects are found under $IKD_BUILD/obj (set by tests/run.sh), or
 * next to this executable (<build>/tests/server/test_layers); only those
 * of sources that exist count. Run from the repository's root.
 */
#include <check.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_obj[PATH_MAX];

static void find_obj(void)
{
    const char *b = getenv("IKD_BUILD");
    if (b && *b) {
        snprintf(g_obj, sizeof g_obj, "%s/obj", b);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert(n > 0);
    exe[n] = '\0';
    /* <build>/tests/server/test_layers -> <build> */
    char *d = dirname(dirname(dirname(exe)));
    snprintf(g_obj, sizeof g_obj, "%s/obj", d);
}

/* An object of dir (proto or server) built from a source that still
 * exists (a build folder may keep objects of files since removed). */
static bool current_object(const char *dir, const char *name)
{
    size_t n = strlen(name);
    if (n < 3 || strcmp(name + n - 2, ".o") != 0)
        return false;
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s/%.*s.c", dir, (int)(n - 2), name);
    return access(src, R_OK) == 0;
}

#define MAX_SYMS 4096
#define SYM_LEN 128

typedef struct syms {
    size_t n;
    char name[MAX_SYMS][SYM_LEN];
} syms;

/* The undefined (want_undefined) or defined global symbols of one object
 * file: text only, or, with data, initialised, read-only and zeroed data
 * too (nm types T; D, R, B). */
static void read_syms_of(const char *obj, bool want_undefined, bool data, syms *out)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "nm -P %s %s 2>/dev/null", want_undefined ? "-u" : "--defined-only",
             obj);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run nm");
    out->n = 0;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char name[SYM_LEN], type[8];
        if (sscanf(line, "%127s %7s", name, type) != 2)
            continue;
        if (!want_undefined && type[0] != 'T' &&
            !(data && (type[0] == 'D' || type[0] == 'R' || type[0] == 'B')))
            continue;
        if (out->n < MAX_SYMS)
            snprintf(out->name[out->n++], SYM_LEN, "%s", name);
    }
    int rc = pclose(p);
    ck_assert_msg(rc == 0, "nm failed on %s", obj);
}

static void read_syms(const char *obj, bool want_undefined, syms *out)
{
    read_syms_of(obj, want_undefined, false, out);
}

static const char *const SOCKET_CALLS[] = {"send",    "recv",     "sendmsg",  "recvmsg",
                                           "socket",  "accept",   "accept4",  "connect",
                                           "shutdown", "setsockopt", NULL};

/* The first forbidden reference of obj, or NULL. */
static const char *forbidden_ref(const char *obj, bool allow_srv)
{
    static syms u;
    static char found[SYM_LEN];
    read_syms(obj, true, &u);
    for (size_t i = 0; i < u.n; i++) {
        const char *s = u.name[i];
        bool bad = !strncmp(s, "MHD_", 4) || !strncmp(s, "wslay_", 6) ||
                   (!allow_srv && (!strncmp(s, "uv_", 3) || !strncmp(s, "srv_", 4)));
        for (size_t k = 0; !bad && SOCKET_CALLS[k]; k++)
            bad = !strcmp(s, SOCKET_CALLS[k]);
        if (bad) {
            snprintf(found, sizeof found, "%s", s);
            return found;
        }
    }
    return NULL;
}

START_TEST(test_proto_sees_no_socket)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/proto", g_obj);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no objects in %s", dir);
    size_t checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!current_object("proto", e->d_name))
            continue;
        char obj[PATH_MAX + 300];
        snprintf(obj, sizeof obj, "%s/%s", dir, e->d_name);
        const char *bad = forbidden_ref(obj, false);
        ck_assert_msg(bad == NULL, "proto/%s refers to %s: proto must not see sockets, the loop or "
                      "the daemon", e->d_name, bad);
        checked++;
    }
    closedir(d);
    ck_assert_uint_ge(checked, 10);
}
END_TEST

START_TEST(test_handlers_touch_no_connection)
{
    static const char *const handlers[] = {
        "http_handlers.o", "http_route.o",    "http_batch.o",    "ws_messages.o",
        "ws_stream.o",     "ws_tick.o",       "stream_chains.o", "solve.o",
        NULL};
    for (size_t i = 0; handlers[i]; i++) {
        char obj[PATH_MAX + 64];
        snprintf(obj, sizeof obj, "%s/server/%s", g_obj, handlers[i]);
        ck_assert_msg(access(obj, R_OK) == 0, "missing %s", obj);
        const char *bad = forbidden_ref(obj, true);
        ck_assert_msg(bad == NULL,
                      "server/%s refers to %s: handlers answer with response values "
                      "(server/http_handler.h) and queue stream messages through "
                      "server/ws_conn.h; only the modules that own connections talk to them",
                      handlers[i], bad);
    }
    /* and the check can fail: the connection's own module does refer */
    char obj[PATH_MAX + 64];
    snprintf(obj, sizeof obj, "%s/server/http_mhd.o", g_obj);
    ck_assert_ptr_nonnull(forbidden_ref(obj, true));
}
END_TEST

/* ---- proto's call graph --------------------------------------------------- */

#define MAX_FILES 64

typedef struct graph {
    size_t n;
    char file[MAX_FILES][64];
    bool edge[MAX_FILES][MAX_FILES]; /* file i calls into file j */
} graph;

static int visit(const graph *g, size_t i, int *state, size_t *stack, size_t *depth)
{
    state[i] = 1;
    stack[(*depth)++] = i;
    for (size_t j = 0; j < g->n; j++) {
        if (!g->edge[i][j])
            continue;
        if (state[j] == 1)
            return (int)j;
        if (state[j] == 0) {
            int c = visit(g, j, state, stack, depth);
            if (c >= 0)
                return c;
        }
    }
    state[i] = 2;
    (*depth)--;
    return -1;
}

/* Fails naming the cycle when the file-level graph of area (proto or
 * server) has one; data: data symbols make edges too. Returns the number
 * of files. */
static size_t check_acyclic(const char *area, bool data)
{
    static graph g;
    static syms def[MAX_FILES], und;
    memset(&g, 0, sizeof g);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/%s", g_obj, area);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no objects in %s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!current_object(area, e->d_name))
            continue;
        ck_assert_msg(g.n < MAX_FILES, "more than %d files in %s/", MAX_FILES, area);
        snprintf(g.file[g.n], sizeof g.file[0], "%.63s", e->d_name);
        char obj[PATH_MAX + 300];
        snprintf(obj, sizeof obj, "%s/%s", dir, e->d_name);
        read_syms_of(obj, false, data, &def[g.n]);
        g.n++;
    }
    closedir(d);
    for (size_t i = 0; i < g.n; i++) {
        char obj[PATH_MAX + 300];
        snprintf(obj, sizeof obj, "%s/%s", dir, g.file[i]);
        read_syms(obj, true, &und);
        for (size_t u = 0; u < und.n; u++)
            for (size_t j = 0; j < g.n; j++)
                for (size_t k = 0; j != i && k < def[j].n; k++)
                    if (!strcmp(und.name[u], def[j].name[k]))
                        g.edge[i][j] = true;
    }
    int state[MAX_FILES] = {0};
    size_t stack[MAX_FILES], depth = 0;
    for (size_t i = 0; i < g.n; i++) {
        if (state[i])
            continue;
        int c = visit(&g, i, state, stack, &depth);
        if (c >= 0) {
            char cycle[1024] = "";
            size_t len = 0, k = 0;
            while (k < depth && stack[k] != (size_t)c)
                k++;
            for (; k < depth; k++)
                len += (size_t)snprintf(cycle + len, sizeof cycle - len, "%s -> ",
                                        g.file[stack[k]]);
            snprintf(cycle + len, sizeof cycle - len, "%s", g.file[c]);
            ck_abort_msg("%s's files call each other in a cycle: %s", area, cycle);
        }
    }
    return g.n;
}

START_TEST(test_proto_calls_form_no_cycle)
{
    ck_assert_uint_ge(check_acyclic("proto", true), 10);
}
END_TEST

START_TEST(test_server_calls_form_no_cycle)
{
    ck_assert_uint_ge(check_acyclic("server", true), 20);
}
END_TEST

/* The floor below proto: no solver object refers to proto, the daemon or
 * the libraries they use. */
START_TEST(test_solver_sees_nothing_above)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/solver", g_obj);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no objects in %s", dir);
    static const char *const above[] = {"proto_", "srv_", "json_", "xml", "MHD_", "uv_",
                                        "wslay_", NULL};
    static syms u;
    size_t checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!current_object("solver", e->d_name))
            continue;
        char obj[PATH_MAX + 300];
        snprintf(obj, sizeof obj, "%s/%s", dir, e->d_name);
        read_syms(obj, true, &u);
        for (size_t i = 0; i < u.n; i++)
            for (size_t k = 0; above[k]; k++)
                ck_assert_msg(strncmp(u.name[i], above[k], strlen(above[k])) != 0,
                              "solver/%s refers to %s: the solver is the floor below proto "
                              "and the daemon",
                              e->d_name, u.name[i]);
        checked++;
    }
    closedir(d);
    ck_assert_uint_ge(checked, 10);
}
END_TEST

/* No source file of dir (server or proto) passes 1,000 lines; returns how
 * many were checked. */
static size_t files_are_small(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "run from the repository's root (no %s/ here)", dir);
    size_t checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || e->d_name[n - 2] != '.' || (e->d_name[n - 1] != 'c' && e->d_name[n - 1] != 'h'))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        size_t lines = 0;
        int ch;
        while ((ch = getc(f)) != EOF)
            lines += ch == '\n';
        fclose(f);
        ck_assert_msg(lines <= 1000, "%s has %zu lines, more than 1,000: split it by concern", path,
                      lines);
        checked++;
    }
    closedir(d);
    return checked;
}

START_TEST(test_server_files_are_small)
{
    ck_assert_uint_ge(files_are_small("server"), 20);
    ck_assert_uint_ge(files_are_small("proto"), 20);
}
END_TEST

static Suite *layers_suite(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_proto_sees_no_socket);
    tcase_add_test(tc, test_handlers_touch_no_connection);
    tcase_add_test(tc, test_proto_calls_form_no_cycle);
    tcase_add_test(tc, test_server_calls_form_no_cycle);
    tcase_add_test(tc, test_solver_sees_nothing_above);
    tcase_add_test(tc, test_server_files_are_small);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    find_obj();
    SRunner *sr = srunner_create(layers_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * test_ik_purity.c: the solver library is pure (BRIEF "solver/": C11 and
 * libm only, no I/O, no globals, no hidden allocation while solving, safe
 * from many threads), checked on the built archive itself rather than
 * trusted from the headers.
 *
 * The symbol table of libiksolver.a (read with nm, from binutils) must show
 *   - no allocation: no undefined reference to malloc, calloc, realloc,
 *     free or any other allocator: every solve works in caller-provided
 *     memory (workspaces sized by ik_*_workspace_size());
 *   - no I/O and nothing beyond libm: every undefined symbol is a libm
 *     function, a mem* primitive, clock_gettime (the solvers' time
 *     budgets, solver/ik_budget.c), another ik_ symbol, or instrumentation added by a sanitizer
 *     build (__asan_*, __ubsan_*, __tsan_*, __sanitizer_*);
 *   - no globals: no writable data symbol (nm types D, d, B, b, G, g, S, s,
 *     C, V), so there is no state two threads could share; read-only tables
 *     (R, r) are fine.
 * A runtime check follows for the allocation rule: the numeric solver and
 * FABRIK are run with a workspace carved out of a buffer that is poisoned
 * before and inspected after, showing they write only inside the size they
 * announced.
 *
 * The archive is found in $IKD_BUILD (set by tests/run.sh), or next to this
 * executable (<build>/tests/solver/test_ik_purity).
 */
#include <check.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solver/ik_chain.h"
#include "solver/ik_fabrik.h"
#include "solver/ik_numeric.h"
#include "solver/ik_status.h"
#include "storage.h"

static char g_lib[PATH_MAX];

static const char *const ALLOWED[] = {
    /* libm */
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos",
    "cosh", "exp", "exp2", "expm1", "fabs", "floor", "fma", "fmax", "fmin", "fmod", "frexp",
    "hypot", "ldexp", "log", "log10", "log1p", "log2", "lrint", "lround", "modf", "nearbyint",
    "nextafter", "pow", "remainder", "rint", "round", "scalbn", "sin", "sincos", "sinh", "sqrt",
    "tan", "tanh", "trunc",
    /* memory primitives the compiler may emit for struct copies */
    "memcpy", "memmove", "memset", "memcmp",
    /* the solvers' time budgets (ik_budget.c) */
    "clock_gettime",
    /* stack protector, if the toolchain enables it */
    "__stack_chk_fail", NULL};

static bool allowed(const char *sym)
{
    if (!strncmp(sym, "ik_", 3) || !strncmp(sym, "ik__", 4))
        return true;
    if (!strncmp(sym, "__asan_", 7) || !strncmp(sym, "__ubsan_", 8) ||
        !strncmp(sym, "__tsan_", 7) || !strncmp(sym, "__sanitizer_", 12) ||
        !strncmp(sym, "__msan_", 7))
        return true;
    /* glibc's finite-math aliases (__sqrt_finite...) */
    size_t n = strlen(sym);
    if (n > 9 && !strncmp(sym, "__", 2) && !strcmp(sym + n - 7, "_finite"))
        return true;
    for (size_t i = 0; ALLOWED[i]; i++)
        if (!strcmp(sym, ALLOWED[i]))
            return true;
    return false;
}

static void find_lib(void)
{
    const char *b = getenv("IKD_BUILD");
    if (b && *b) {
        snprintf(g_lib, sizeof g_lib, "%s/libiksolver.a", b);
        return;
    }
    /* <build>/tests/solver/test_ik_purity -> <build> */
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(len, 0);
    self[len] = '\0';
    char *d = dirname(dirname(dirname(self)));
    snprintf(g_lib, sizeof g_lib, "%s/libiksolver.a", d);
}

/* Runs nm with the given options on the archive; calls fn on every line. */
static size_t nm_lines(const char *opts, void (*fn)(const char *line, size_t *bad), size_t *bad)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "nm %s '%s' 2>/dev/null", opts, g_lib);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run nm");
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (!*line || strchr(line, ':')) /* blank, or "member.o:" header */
            continue;
        fn(line, bad);
        n++;
    }
    int rc = pclose(p);
    ck_assert_msg(rc == 0, "nm %s %s failed (rc %d): is binutils installed?", opts, g_lib, rc);
    return n;
}

static void check_undefined(const char *line, size_t *bad)
{
    /* "                 U name" */
    char type[8], name[512];
    if (sscanf(line, " %7s %511s", type, name) != 2)
        return;
    if (!allowed(name)) {
        fprintf(stderr, "libiksolver.a needs '%s' (not libm, not allowed)\n", name);
        (*bad)++;
    }
}

static void check_defined(const char *line, size_t *bad)
{
    /* "0000000000000000 T name" */
    char addr[32], type[8], name[512];
    if (sscanf(line, "%31s %7s %511s", addr, type, name) != 3)
        return;
    if (strchr("DdBbGgSsCV", type[0]) && strncmp(name, ".L", 2) != 0 &&
        strncmp(name, "__asan", 6) != 0 && strncmp(name, "__ubsan", 7) != 0 &&
        strncmp(name, "__tsan", 6) != 0) {
        fprintf(stderr, "libiksolver.a has writable data '%s' (type %s)\n", name, type);
        (*bad)++;
    }
}

START_TEST(test_no_allocation_no_io)
{
    find_lib();
    FILE *f = fopen(g_lib, "rb");
    ck_assert_msg(f != NULL, "no solver archive at %s", g_lib);
    fclose(f);
    size_t bad = 0;
    size_t n = nm_lines("-u", check_undefined, &bad);
    ck_assert_uint_gt(n, 5); /* nm did list something */
    ck_assert_msg(bad == 0, "%zu forbidden symbols (see stderr)", bad);
    /* the allowlist itself is not vacuous */
    ck_assert(!allowed("malloc") && !allowed("free") && !allowed("calloc") &&
              !allowed("realloc") && !allowed("printf") && !allowed("fopen") &&
              !allowed("rand") && !allowed("pthread_mutex_lock"));
}
END_TEST

START_TEST(test_no_globals)
{
    find_lib();
    size_t bad = 0;
    size_t n = nm_lines("--defined-only", check_defined, &bad);
    ck_assert_uint_gt(n, 20);
    ck_assert_msg(bad == 0, "%zu writable globals (see stderr)", bad);
}
END_TEST

/* The solvers write only inside the workspace size they announce. */
START_TEST(test_workspace_bounds)
{
    ik_joint j[3];
    for (int k = 0; k < 3; k++) {
        j[k].type = k < 2 ? IK_JOINT_REVOLUTE : IK_JOINT_FIXED;
        j[k].origin.p = ik_v3(0, 0, 0.4);
        j[k].origin.q = ik_quat_identity();
        j[k].axis = k == 0 ? ik_v3(0, 0, 1) : ik_v3(0, 1, 0);
        j[k].lower = -2;
        j[k].upper = 2;
    }
    ik_chain c;
    ck_assert_int_eq(chain_init(&c, j, 3), IK_OK);
    size_t need = ik_numeric_workspace_size(&c);
    enum { GUARD = 256 };
    static unsigned char buf[GUARD + 4096 + GUARD];
    ck_assert_uint_le(need, 4096);
    memset(buf, 0xCD, sizeof buf);
    ik_numeric_opts o = ik_numeric_opts_default();
    o.timeout_s = 0;
    o.max_restarts = 5;
    double q[2];
    ik_target t = ik_target_position(ik_v3(0.3, 0.2, 0.6));
    int st = ik_numeric_solve(&c, &t, NULL, &o, buf + GUARD, need, q, NULL);
    ck_assert(st == IK_OK || st == IK_ENOTCONV);
    for (size_t i = 0; i < GUARD; i++) {
        ck_assert_uint_eq(buf[i], 0xCD);
        ck_assert_uint_eq(buf[GUARD + need + i], 0xCD);
    }

    ik_vec3 p[5] = {{0, 0, 0}, {0, 0.5, 0}, {0.5, 0.5, 0}, {0.5, 1, 0}, {1, 1, 0}}, out[5];
    size_t aneed = ik_anim_workspace_size(5);
    static double abuf[(GUARD + 4096 + GUARD) / sizeof(double)];
    memset(abuf, 0xCD, sizeof abuf);
    unsigned char *a = (unsigned char *)abuf;
    ik_anim_result r;
    st = ik_fabrik_solve(p, 5, ik_v3(0.2, 1.1, 0.3), NULL, a + GUARD, aneed, out, NULL, NULL, &r);
    ck_assert(st == IK_OK || st == IK_ENOTCONV);
    for (size_t i = 0; i < GUARD; i++) {
        ck_assert_uint_eq(a[i], 0xCD);
        ck_assert_uint_eq(a[GUARD + aneed + i], 0xCD);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ik_purity");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_no_allocation_no_io);
    tcase_add_test(tc, test_no_globals);
    tcase_add_test(tc, test_workspace_bounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

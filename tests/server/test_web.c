/*
 * test_web.c: server/web.c, the live page's files in memory: what a load
 * accepts (content types by extension, hidden files skipped) and refuses
 * (subdirectories, unknown extensions, odd names, the file-count, per-file
 * and total bounds, a missing directory), and that lookups never leave the
 * table: "/" is index.html, and traversal, encoded or nested paths, hidden
 * names and unknown names find nothing. Each test builds its directory
 * under a fresh mkdtemp and removes it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "server/web.h"

static char dir[64];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/ikd_test_web_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void put(const char *name, const char *text, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    if (len)
        ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_load_and_find)
{
    mkdir_tmp();
    put("index.html", "<p>page</p>", 11);
    put("app.js", "x=1", 3);
    put("ur5.urdf", "<robot/>", 8);
    put("walk.bvh", "HIERARCHY", 9);
    put("style.css", "", 0);
    put(".hidden.js", "secret", 6);
    srv_web *w = NULL;
    char err[256] = "";
    ck_assert_int_eq(srv_web_load(dir, &w, err, sizeof err), 0);
    ck_assert_uint_eq(srv_web_count(w), 5);
    ck_assert_uint_eq(srv_web_bytes(w), 31);

    const srv_web_file *f = srv_web_find(w, "/");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->name, "index.html");
    ck_assert_str_eq(f->content_type, "text/html; charset=utf-8");
    ck_assert_uint_eq(f->len, 11);
    ck_assert(memcmp(f->data, "<p>page</p>", 11) == 0);
    ck_assert_str_eq(srv_web_find(w, "/app.js")->content_type, "text/javascript; charset=utf-8");
    ck_assert_str_eq(srv_web_find(w, "/ur5.urdf")->content_type, "application/xml");
    ck_assert_str_eq(srv_web_find(w, "/walk.bvh")->content_type, "text/plain; charset=utf-8");
    ck_assert_uint_eq(srv_web_find(w, "/style.css")->len, 0);

    static const char *const absent[] = {
        "", "app.js", "/app.js/", "//app.js", "/../app.js", "/./app.js", "/%2e%2e/app.js",
        "/..", "/.", "/.hidden.js", "/x/app.js", "/app.JS", "/app.js%00", "/APP.js",
        "/index.htm", "/v1/solve", "/etc/passwd", "/..%2fetc%2fpasswd", "/app.js?x=1",
    };
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        ck_assert_msg(srv_web_find(w, absent[i]) == NULL, "found %s", absent[i]);
    ck_assert_ptr_null(srv_web_find(NULL, "/"));
    ck_assert_ptr_null(srv_web_find(w, NULL));
    srv_web_free(w);
    rm_tmp();
}
END_TEST

START_TEST(test_no_index)
{
    mkdir_tmp();
    put("app.js", "x", 1);
    srv_web *w = NULL;
    char err[256];
    ck_assert_int_eq(srv_web_load(dir, &w, err, sizeof err), 0);
    ck_assert_ptr_null(srv_web_find(w, "/"));
    srv_web_free(w);
    rm_tmp();
}
END_TEST

static void expect_refused(const char *needle)
{
    srv_web *w = (srv_web *)1;
    char err[512] = "";
    ck_assert_int_eq(srv_web_load(dir, &w, err, sizeof err), -1);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, needle) != NULL, "error \"%s\" lacks \"%s\"", err, needle);
}

START_TEST(test_refusals)
{
    mkdir_tmp();
    put("index.html", "x", 1);
    put("notes.md", "x", 1);
    expect_refused("notes.md");
    rm_tmp();

    mkdir_tmp();
    put("a b.js", "x", 1);
    expect_refused("a b.js");
    rm_tmp();

    mkdir_tmp();
    put("Makefile", "x", 1);
    expect_refused("Makefile");
    rm_tmp();

    mkdir_tmp();
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    expect_refused("not a regular file");
    rm_tmp();

    mkdir_tmp();
    char path[128];
    snprintf(path, sizeof path, "%s/link.js", dir);
    ck_assert_int_eq(symlink("/etc/hostname-that-is-absent", path), 0);
    expect_refused("link.js");
    rm_tmp();

    srv_web *w = NULL;
    char err[256] = "";
    ck_assert_int_eq(srv_web_load("/nonexistent/ikd/web", &w, err, sizeof err), -1);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/ikd/web"));
}
END_TEST

START_TEST(test_bounds)
{
    mkdir_tmp();
    for (int i = 0; i <= SRV_WEB_MAX_FILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d.js", i);
        put(name, "x", 1);
    }
    expect_refused("more than");
    rm_tmp();

    /* One file over the per-file bound (sparse: no disk is used). */
    mkdir_tmp();
    char path[128];
    snprintf(path, sizeof path, "%s/big.js", dir);
    put("big.js", "", 0);
    ck_assert_int_eq(truncate(path, (off_t)SRV_WEB_MAX_FILE + 1), 0);
    expect_refused("big.js");
    rm_tmp();

    /* Files at the per-file bound until the total is passed. */
    mkdir_tmp();
    size_t n = SRV_WEB_MAX_TOTAL / SRV_WEB_MAX_FILE + 1;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "part%zu.js", i);
        put(name, "", 0);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        ck_assert_int_eq(truncate(path, (off_t)SRV_WEB_MAX_FILE), 0);
    }
    expect_refused("over the bound");
    rm_tmp();
}
END_TEST

START_TEST(test_content_types)
{
    ck_assert_str_eq(srv_web_content_type("a.mjs"), "text/javascript; charset=utf-8");
    ck_assert_str_eq(srv_web_content_type("a.json"), "application/json");
    ck_assert_str_eq(srv_web_content_type("a.svg"), "image/svg+xml");
    ck_assert_str_eq(srv_web_content_type("a.png"), "image/png");
    ck_assert_ptr_null(srv_web_content_type("a.exe"));
    ck_assert_ptr_null(srv_web_content_type(".js"));
    ck_assert_ptr_null(srv_web_content_type("js"));
    ck_assert_ptr_null(srv_web_content_type(NULL));
}
END_TEST

static Suite *web_suite(void)
{
    Suite *s = suite_create("web");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_load_and_find);
    tcase_add_test(tc, test_no_index);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_content_types);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(web_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * test_proto_srdf.c: proto/proto_srdf.h, the allowed-collision entries of
 * an SRDF document, and the hardened parse it shares with URDF
 * (proto/proto_xml.h): our iiwa's SRDF (tests/data/collision), each kind
 * of entry in document order, the elements that are skipped, and every
 * rejection: a <!DOCTYPE> (external entities, entity bombs), malformed
 * XML, another root, an entry without its links or naming one link twice,
 * a name too long.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_srdf.h"
#include "proto_check.h"

static int read_text(const char *text, proto_srdf_entry **e, size_t *n, proto_error *err)
{
    return proto_srdf_read(text, strlen(text), e, n, err);
}

START_TEST(test_entries)
{
    static const char doc[] =
        "<?xml version='1.0'?>\n"
        "<robot name='r'>\n"
        "  <group name='arm'><chain base_link='a' tip_link='d'/></group>\n"
        "  <virtual_joint name='v' type='fixed' parent_frame='world' child_link='a'/>\n"
        "  <disable_collisions link1='a' link2='b' reason='Adjacent'/>\n"
        "  <end_effector name='hand' parent_link='d' group='arm'/>\n"
        "  <disable_default_collisions link='c'/>\n"
        "  <enable_collisions link1='c' link2='d'/>\n"
        "  <passive_joint name='p'/>\n"
        "</robot>\n";
    proto_srdf_entry *e;
    size_t n;
    proto_error err;
    ck_assert_int_eq(read_text(doc, &e, &n, &err), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(e[0].kind, PROTO_SRDF_DISABLE);
    ck_assert_str_eq(e[0].link1, "a");
    ck_assert_str_eq(e[0].link2, "b");
    ck_assert_int_eq(e[1].kind, PROTO_SRDF_DISABLE_LINK);
    ck_assert_str_eq(e[1].link1, "c");
    ck_assert_str_eq(e[1].link2, "");
    ck_assert_int_eq(e[2].kind, PROTO_SRDF_ENABLE);
    free(e);
    /* nothing about collisions: no entries, no allocation */
    ck_assert_int_eq(read_text("<robot name='r'/>", &e, &n, &err), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(e);
}
END_TEST

START_TEST(test_iiwa_srdf)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/collision/kuka_iiwa14_r820.srdf", pc_data_dir());
    size_t len;
    char *text = pc_read_file(path, &len);
    ck_assert_ptr_nonnull(text);
    proto_srdf_entry *e;
    size_t n;
    proto_error err;
    ck_assert_int_eq(proto_srdf_read(text, len, &e, &n, &err), 0);
    ck_assert_uint_eq(n, 31);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(e[i].kind, PROTO_SRDF_DISABLE);
        ck_assert_str_ne(e[i].link1, e[i].link2);
    }
    ck_assert_str_eq(e[0].link1, "base_link");
    ck_assert_str_eq(e[0].link2, "link_1");
    free(e);
    free(text);
}
END_TEST

static void rejected(const char *doc, proto_errcode code, const char *needle)
{
    proto_srdf_entry *e = (proto_srdf_entry *)1;
    size_t n = 7;
    proto_error err;
    ck_assert_int_eq(read_text(doc, &e, &n, &err), -1);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.message, needle) != NULL, "'%s' lacks '%s'", err.message, needle);
    ck_assert_ptr_null(e);
    ck_assert_uint_eq(n, 0);
}

START_TEST(test_rejections)
{
    /* an external entity and an entity bomb never get read */
    rejected("<?xml version='1.0'?><!DOCTYPE r [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
             "<robot name='r'><disable_collisions link1='&x;' link2='b'/></robot>",
             PROTO_E_INVALID_SRDF, "DOCTYPE");
    rejected("<?xml version='1.0'?><!DOCTYPE r [<!ENTITY a 'aaaaaaaaaa'>"
             "<!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>]><robot name='&b;'/>",
             PROTO_E_INVALID_SRDF, "DOCTYPE");
    rejected("<robot name='r'><disable_collisions link1='a' link2='b'></robot>",
             PROTO_E_INVALID_SRDF, "malformed XML at line 1");
    rejected("", PROTO_E_INVALID_SRDF, "malformed XML");
    rejected("<srdf/>", PROTO_E_INVALID_SRDF, "not <robot>");
    rejected("<robot name='r'>\n<disable_collisions link1='a'/></robot>", PROTO_E_INVALID_SRDF,
             "line 2 has no link2");
    rejected("<robot name='r'><disable_default_collisions/></robot>", PROTO_E_INVALID_SRDF,
             "has no link");
    rejected("<robot name='r'><enable_collisions link1='a' link2='a'/></robot>",
             PROTO_E_INVALID_SRDF, "twice");
    char doc[400];
    snprintf(doc, sizeof doc,
             "<robot name='r'><disable_collisions link1='%0100d' link2='b'/></robot>", 7);
    rejected(doc, PROTO_E_TOO_LARGE, "longer than");
    proto_srdf_entry *e;
    size_t n;
    proto_error err;
    ck_assert_int_eq(proto_srdf_read(NULL, 0, &e, &n, &err), -1);
    ck_assert_int_eq(err.code, PROTO_E_INVALID_SRDF);
}
END_TEST

static Suite *srdf_suite(void)
{
    Suite *s = suite_create("proto_srdf");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_entries);
    tcase_add_test(tc, test_iiwa_srdf);
    tcase_add_test(tc, test_rejections);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(srdf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * test_ws.c: the pure parts of the WebSocket handshake (server/ws_handshake.h):
 * the Sec-WebSocket-Accept key against RFC 6455's own example and an
 * independent second vector, key validation, header token lists, the
 * Origin allow-list and the bearer token carried in Sec-WebSocket-Protocol.
 * The connection handling itself is exercised against the real daemon by
 * tests/server/test_stream.py.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/ws_handshake.h"

START_TEST(test_accept_rfc_example)
{
    /* RFC 6455 section 1.3 (the task brief quoted "s3pPLMBiTxaeKmzOYCD9iGZOxoo=",
     * which is not what SHA-1 gives; the RFC's text is). */
    char out[SRV_WS_ACCEPT_LEN + 1];
    ck_assert_int_eq(srv_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
    ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}
END_TEST

START_TEST(test_accept_second_vector)
{
    /* A second, independent pair (the handshake example commonly used in
     * WebSocket documentation; checked with another SHA-1 implementation). */
    char out[SRV_WS_ACCEPT_LEN + 1];
    ck_assert_int_eq(srv_ws_accept_key("x3JJHMbDL1EzLkh9GBhXDw==", out), 0);
    ck_assert_str_eq(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
}
END_TEST

START_TEST(test_accept_rejects_bad_keys)
{
    char out[SRV_WS_ACCEPT_LEN + 1];
    strcpy(out, "unchanged");
    ck_assert_int_eq(srv_ws_accept_key(NULL, out), -1);
    ck_assert_int_eq(srv_ws_accept_key("", out), -1);
    ck_assert_int_eq(srv_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", out), -1);    /* no padding */
    ck_assert_int_eq(srv_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ===", out), -1); /* 25 chars */
    ck_assert_int_eq(srv_ws_accept_key("dGhlIHNhbXBsZSBub25j!Q==", out), -1);  /* not base64 */
    ck_assert_int_eq(srv_ws_accept_key("aGVsbG8gd29ybGQgaGVsbG8=", out), -1);  /* 17 bytes */
    ck_assert_str_eq(out, "unchanged");
}
END_TEST

START_TEST(test_header_tokens)
{
    ck_assert(srv_ws_header_has_token("Upgrade", "upgrade"));
    ck_assert(srv_ws_header_has_token("keep-alive, Upgrade", "upgrade"));
    ck_assert(srv_ws_header_has_token("  keep-alive ,\tUPGRADE  ", "upgrade"));
    ck_assert(srv_ws_header_has_token("websocket", "websocket"));
    ck_assert(!srv_ws_header_has_token("keep-alive", "upgrade"));
    ck_assert(!srv_ws_header_has_token("upgrades", "upgrade"));
    ck_assert(!srv_ws_header_has_token("pre-upgrade", "upgrade"));
    ck_assert(!srv_ws_header_has_token("", "upgrade"));
    ck_assert(!srv_ws_header_has_token(",,,", "upgrade"));
    ck_assert(!srv_ws_header_has_token(NULL, "upgrade"));
}
END_TEST

/* The close codes a client may send: IANA's registry, every boundary. */
START_TEST(test_close_codes)
{
    static const unsigned valid[] = {1000, 1001, 1002, 1003, 1007, 1008, 1011,
                                     1012, 1013, 1014, 3000, 4000, 4999};
    static const unsigned invalid[] = {0, 999, 1004, 1005, 1006, 1015, 1016,
                                       2000, 2999, 5000, 65535};
    for (size_t i = 0; i < sizeof valid / sizeof *valid; i++)
        ck_assert_msg(srv_ws_close_code_valid(valid[i]), "%u", valid[i]);
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++)
        ck_assert_msg(!srv_ws_close_code_valid(invalid[i]), "%u", invalid[i]);
}
END_TEST

START_TEST(test_origin_allow_list)
{
    const char *allowed[] = {"https://app.example.com", "http://localhost:8080"};
    ck_assert(srv_ws_origin_allowed("https://app.example.com", allowed, 2));
    ck_assert(srv_ws_origin_allowed("HTTPS://APP.example.com", allowed, 2));
    ck_assert(srv_ws_origin_allowed("http://localhost:8080", allowed, 2));
    ck_assert(!srv_ws_origin_allowed("https://evil.example.com", allowed, 2));
    ck_assert(!srv_ws_origin_allowed("https://app.example.com.evil", allowed, 2));
    ck_assert(!srv_ws_origin_allowed("http://localhost:8081", allowed, 2));
    ck_assert(!srv_ws_origin_allowed("", allowed, 2));
    /* no Origin header: not a browser, allowed */
    ck_assert(srv_ws_origin_allowed(NULL, allowed, 2));
    /* no list: everything */
    ck_assert(srv_ws_origin_allowed("https://anything", NULL, 0));
}
END_TEST

/* The Sec-WebSocket-Protocol bearer scheme: expected encodings computed by
 * Python's base64.urlsafe_b64encode with the padding stripped. */
START_TEST(test_protocol_bearer)
{
    ck_assert_int_eq(srv_ws_protocol_bearer("ikd.v1, base64url.bearer.ikd.czNjcmV0", "s3cret"),
                     SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.czNjcmV0 ,ikd.v1", "s3cret"),
                     SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.YQ", "a"), SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.YWI", "ab"), SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.Pz4_", "?>?"),
                     SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.-_8", "\xfb\xff"),
                     SRV_WS_BEARER_OK);
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.dG9rfmVuL3dpdGgrY2hhcnM",
                                            "tok~en/with+chars"),
                     SRV_WS_BEARER_OK);
    /* a wrong one next to the right one still lets in */
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.d3Jvbmc, "
                                            "base64url.bearer.ikd.czNjcmV0", "s3cret"),
                     SRV_WS_BEARER_OK);
    /* wrong: another token, padded form, standard base64, prefix or suffix
     * of the right encoding, the token itself unencoded, empty */
    const char *wrong[] = {"base64url.bearer.ikd.d3Jvbmc", "base64url.bearer.ikd.YQ==",
                           "base64url.bearer.ikd.Pz4/", "base64url.bearer.ikd.czNjcmV",
                           "base64url.bearer.ikd.czNjcmV0A", "base64url.bearer.ikd.s3cret",
                           "base64url.bearer.ikd.", "ikd.v1,base64url.bearer.ikd.CZNJCMV0"};
    const char *tokens[] = {"s3cret", "a", "?>?", "s3cret", "s3cret", "s3cret", "s3cret",
                            "s3cret"};
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++)
        ck_assert_msg(srv_ws_protocol_bearer(wrong[i], tokens[i]) == SRV_WS_BEARER_WRONG,
                      "%s accepted for %s", wrong[i], tokens[i]);
    /* an empty expected token never matches */
    ck_assert_int_eq(srv_ws_protocol_bearer("base64url.bearer.ikd.", ""), SRV_WS_BEARER_WRONG);
    /* no bearer element offered */
    ck_assert_int_eq(srv_ws_protocol_bearer(NULL, "s3cret"), SRV_WS_BEARER_NONE);
    ck_assert_int_eq(srv_ws_protocol_bearer("ikd.v1", "s3cret"), SRV_WS_BEARER_NONE);
    ck_assert_int_eq(srv_ws_protocol_bearer("", "s3cret"), SRV_WS_BEARER_NONE);
    ck_assert_int_eq(srv_ws_protocol_bearer("x.base64url.bearer.ikd.czNjcmV0", "s3cret"),
                     SRV_WS_BEARER_NONE);
    ck_assert_int_eq(srv_ws_protocol_bearer("BASE64URL.BEARER.IKD.czNjcmV0", "s3cret"),
                     SRV_WS_BEARER_NONE);
}
END_TEST

static Suite *ws_suite(void)
{
    Suite *s = suite_create("ws_handshake");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_accept_rfc_example);
    tcase_add_test(tc, test_accept_second_vector);
    tcase_add_test(tc, test_accept_rejects_bad_keys);
    tcase_add_test(tc, test_header_tokens);
    tcase_add_test(tc, test_close_codes);
    tcase_add_test(tc, test_origin_allow_list);
    tcase_add_test(tc, test_protocol_bearer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ws_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * fuzz_client.c: libikdclient's readers of what ikd sends (clients/c/lib/
 * json.c, decode.c, handshake.c): whatever bytes arrive, the client must
 * answer IKD_OK with a struct whose every pointer and count can be
 * followed, or a clean IKD_E_BAD_ANSWER (IKD_E_HANDSHAKE for an upgrade
 * answer), never read past its input or crash.
 *
 * The first byte selects the reader: 0 a stream message
 * (ikd__decode_message), 1 an HTTP solve or batch answer
 * (ikd__decode_answer), 2 a chain description (ikd__decode_chain_info), 3
 * an HTTP error answer, 4 the upgrade's answer (ikd__handshake_answer), 5
 * a binary tick's answer (ikd__decode_tick_binary, binary.c: "IKDS"), whose
 * entries must number at most the bound given (64 here) and each be a
 * solution or an error with a stream, its result's arrays as long as its
 * counts say.
 * Every decoded result and tick is copied with ikd_result_copy /
 * ikd_tick_copy, which reads every array and string of it (AddressSanitizer
 * sees a pointer or count that lies), and the copy is compared with the
 * original member by member.
 */
#include "tests/fuzz/fuzz.h"

#include "clients/c/lib/conn.h"

static void same_doubles(const double *a, const double *b, size_t n)
{
    if (n && memcmp(a, b, n * sizeof(double)) != 0)
        fuzz_fail("a copy's numbers differ");
}

static void check_result(const ikd_result *r)
{
    if (!r->status_text)
        fuzz_fail("a result without its status");
    ikd_result *c = ikd_result_copy(r);
    if (!c)
        return;
    if (strcmp(c->status_text, r->status_text) != 0 || c->status != r->status || c->has != r->has ||
        c->joint_count != r->joint_count || c->position_count != r->position_count ||
        c->tip_count != r->tip_count)
        fuzz_fail("a result's copy differs");
    same_doubles(c->joints, r->joints, r->joint_count);
    same_doubles(c->positions, r->positions, r->position_count * (size_t)r->position_dim);
    same_doubles(c->rotations, r->rotations, r->rotation_count * 4);
    same_doubles(c->local_rotations, r->local_rotations, r->local_rotation_count * 4);
    same_doubles(c->solutions, r->solutions, r->solution_list_count * r->solution_width);
    if (r->position_count && r->position_dim != 2 && r->position_dim != 3)
        fuzz_fail("positions of neither 2 nor 3 numbers");
    ikd_result_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int kind = data[0] % 6;
    /* the text alone, in an allocation of exactly its size */
    size_t n = size - 1;
    char *text = malloc(n ? n : 1);
    memcpy(text, data + 1, n);
    ikd__dec d = {0};
    ikd_error e;
    int rc;
    switch (kind) {
    case 0: {
        ikd__msg m;
        rc = ikd__decode_message(&d, text, n, 1024, &m, &e); /* max_streams' default */
        if (rc == 0) {
            if (!m.type)
                fuzz_fail("a message without its type");
            if (m.has_result)
                check_result(&m.result);
            for (size_t i = 0; i < m.tick.count; i++) {
                const ikd_tick_entry *t = &m.tick.entries[i];
                if (!t->stream || !t->result == !t->error)
                    fuzz_fail("a tick entry without its stream, or not one of result, error");
                if (t->result)
                    check_result(t->result);
            }
            if (m.tick.count > 1024)
                fuzz_fail("a tick answer of more entries than max_streams read");
            ikd_tick *c = ikd_tick_copy(&m.tick);
            if (c && c->count != m.tick.count)
                fuzz_fail("a tick's copy differs");
            ikd_tick_free(c);
        }
        break;
    }
    case 1: {
        ikd_answer a;
        rc = ikd__decode_answer(&d, text, n, &a, &e);
        if (rc == 0) {
            if (!a.count || !a.results)
                fuzz_fail("an answer without results");
            for (size_t i = 0; i < a.count; i++)
                check_result(&a.results[i]);
            for (size_t i = 0; i < a.joint_name_count; i++)
                if (!a.joint_names[i])
                    fuzz_fail("a missing joint name");
        }
        break;
    }
    case 2: {
        ikd_chain_info c;
        rc = ikd__decode_chain_info(&d, text, n, &c, &e);
        if (rc == 0 && (!c.id || (c.joint_count && !c.joint_names)))
            fuzz_fail("a chain description without its id or names");
        break;
    }
    case 3:
        rc = ikd__decode_http_error(text, n, 400, &e);
        if (rc == 0 || e.code != rc)
            fuzz_fail("an HTTP error decoded as no error");
        rc = 0;
        break;
    case 5: {
        ikd_tick t;
        rc = ikd__decode_tick_binary(&d, text, n, 64, &t, &e);
        if (rc == 1) { /* not this form's: nothing filled */
            if (t.count || t.entries)
                fuzz_fail("a message of another form decoded as a tick");
            rc = 0;
        } else if (rc == 0) {
            if (t.count > 64 || (t.count && !t.entries))
                fuzz_fail("a binary tick of more entries than its bound, or none where counted");
            for (size_t i = 0; i < t.count; i++) {
                const ikd_tick_entry *x = &t.entries[i];
                if (!x->stream || !x->result == !x->error)
                    fuzz_fail("a binary tick entry without its stream, or not one of result, "
                              "error");
                if (x->result)
                    check_result(x->result);
                if (x->error && (!x->error->wire_code[0] || x->error->code == IKD_OK))
                    fuzz_fail("a binary tick entry's error without its code");
            }
            ikd_tick *c = ikd_tick_copy(&t);
            if (c && c->count != t.count)
                fuzz_fail("a binary tick's copy differs");
            ikd_tick_free(c);
        } else if (e.code != rc) {
            fuzz_fail("a binary tick answer refused without its error");
        }
        break;
    }
    default: {
        size_t used;
        long body;
        rc = ikd__handshake_answer(text, n, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", &used, &body, &e);
        if (rc < 0 && rc != IKD_E_HANDSHAKE)
            fuzz_fail("an upgrade answer refused with the wrong code");
        if (rc > 0 && (used == 0 || used > n))
            fuzz_fail("an upgrade answer's head outside the input");
        rc = 0;
        break;
    }
    }
    if (rc && rc != IKD_E_BAD_ANSWER && rc != IKD_E_NO_MEMORY)
        fuzz_fail("a reader failed with a code other than bad_answer");
    ikd__dec_free(&d);
    free(text);
    return 0;
}

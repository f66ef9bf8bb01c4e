/*
 * fuzz_urdf.c: the URDF reader (proto/proto_urdf.c, libxml2 underneath).
 *
 * The input is "BASE\nTIP\nDOCUMENT": the first two lines name the chain's
 * base and tip links, the rest is the URDF text. The reader lists the links
 * and loads the chain between the two, at most FUZZ_MAX_JOINTS joints (the
 * daemon's default limit, proto/README.md "Limits"); a success must give a
 * chain whose degrees of freedom fit that, and every failure a code and a
 * message. The same text also goes through the whole-robot reader
 * (collisions), the SRDF reader, and, for a chain that loaded, the
 * collision model's builder (proto/proto_collide.c: the skeleton, the
 * document as its own SRDF). The document opened once (proto_urdf_open,
 * as a chain's decode reads it) must open exactly when the link list
 * reads, and its robot (proto_urdf_doc_robot) give the model the
 * text-taking builder gives (the same outcome, error code and spheres).
 */
#include "tests/fuzz/fuzz.h"

#include "proto/proto_collide.h"
#include "proto/proto_srdf.h"
#include "tests/proto/urdf_read.h"

#define FUZZ_MAX_JOINTS 128

static ik_collide_model model, model_doc;

static char links[64][PROTO_URDF_NAME_MAX];

/* The next line of [*p, end) copied into out (at most cap-1 bytes), or -1
 * when there is no newline. */
static int line(const char **p, const char *end, char *out, size_t cap)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl)
        return -1;
    size_t n = (size_t)(nl - *p);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, *p, n);
    out[n] = 0;
    *p = nl + 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char base[128], tip[128];
    if (line(&p, end, base, sizeof base) || line(&p, end, tip, sizeof tip))
        return 0;
    size_t len = (size_t)(end - p);
    proto_error err;

    size_t n_links = 0;
    int links_rc = proto_urdf_links(p, len, links, 64, &n_links, &err);
    if (links_rc != 0 && err.code == PROTO_E_NONE)
        fuzz_fail("proto_urdf_links failed without a code");
    proto_urdf_doc *doc = proto_urdf_open(p, len, &err);
    if (!doc != (links_rc != 0))
        fuzz_fail("proto_urdf_open and proto_urdf_links disagree");

    proto_urdf_robot robot;
    if (proto_urdf_robot_read(p, len, &robot, &err) == 0)
        proto_urdf_robot_free(&robot);
    else if (err.code == PROTO_E_NONE)
        fuzz_fail("proto_urdf_robot_read failed without a code");
    proto_srdf_entry *entries;
    size_t n_entries;
    if (proto_srdf_read(p, len, &entries, &n_entries, &err) == 0)
        free(entries);
    else if (err.code == PROTO_E_NONE)
        fuzz_fail("proto_srdf_read failed without a code");

    char(*names)[PROTO_URDF_NAME_MAX] = NULL;
    ik_chain *chain = proto_urdf_load_chain(p, len, base, tip, FUZZ_MAX_JOINTS, &names, &err);
    if (!chain) {
        if (err.code == PROTO_E_NONE || !err.message[0])
            fuzz_fail("proto_urdf_load_chain failed without a code or message");
        proto_urdf_close(doc);
        return 0;
    }
    if (chain->dof == 0 || chain->dof > FUZZ_MAX_JOINTS || !names)
        fuzz_fail("a loaded chain has an impossible number of degrees of freedom");
    const char *tips[1] = {tip};
    proto_collide_spec spec = {NULL, 0, 0.05, p, len};
    proto_collide_link *cl;
    size_t ncl;
    int rc =
        proto_collide_build(p, len, base, tips, 1, chain, NULL, &spec, &model, &cl, &ncl, &err);
    if (rc == 0)
        free(cl);
    else if (err.code == PROTO_E_NONE)
        fuzz_fail("proto_collide_build failed without a code");
    if (doc) {
        proto_error e2;
        proto_urdf_robot r2;
        int rc2 = proto_urdf_doc_robot(doc, &r2, &e2);
        proto_urdf_close(doc);
        if (rc2 == 0)
            rc2 = proto_collide_build_robot(&r2, base, tips, 1, chain, NULL, &spec, &model_doc, &cl,
                                            &ncl, &e2);
        proto_urdf_robot_free(&r2);
        if (rc2 == 0)
            free(cl);
        if (rc2 != rc || (rc && e2.code != err.code) ||
            (rc == 0 && model_doc.nspheres != model.nspheres))
            fuzz_fail("the open document's model and proto_collide_build's disagree");
    }
    free(chain);
    free(names);
    return 0;
}

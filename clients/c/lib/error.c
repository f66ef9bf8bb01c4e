/*
 * error.c: the client's error codes (IKD_ERROR_MAP in ikd/client.h: ikd's
 * wire codes, then the client's own) and the caller-owned ikd_error.
 */
#include <stdio.h>

#include "internal.h"

static const char *const names[] = {
#define IKD__ERROR_NAME(name, word, text) word,
    IKD_ERROR_MAP(IKD__ERROR_NAME)
#undef IKD__ERROR_NAME
};
static const char *const texts[] = {
#define IKD__ERROR_TEXT(name, word, text) text,
    IKD_ERROR_MAP(IKD__ERROR_TEXT)
#undef IKD__ERROR_TEXT
};

const char *ikd_client_version(void)
{
    return IKD_CLIENT_VERSION;
}

const char *ikd_errcode_name(int code)
{
    if (code == IKD_OK)
        return "ok";
    if (code < 0 && -code <= IKD__EI_COUNT)
        return names[-code - 1];
    return "";
}

const char *ikd_errcode_text(int code)
{
    if (code == IKD_OK)
        return "no error";
    if (code < 0 && -code <= IKD__EI_COUNT)
        return texts[-code - 1];
    return "";
}

int ikd_errcode_from_wire(const char *word)
{
    /* the wire codes are the rows before SERVER and those after
     * UNEXPECTED (added later, at the end) */
    for (int i = 0; word && i < IKD__EI_COUNT; i++)
        if ((i < IKD__EI_SERVER || i > IKD__EI_UNEXPECTED) && strcmp(word, names[i]) == 0)
            return -1 - i;
    return IKD_E_SERVER;
}

void ikd__strlcpy(char *dst, const char *src, size_t size)
{
    if (!size)
        return;
    size_t n = src ? strlen(src) : 0;
    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

void ikd__error_clear(ikd_error *e)
{
    /* every member reads as empty; the bytes past each string's NUL are
     * not cleared (a call per tick target must not write a kilobyte) */
    if (!e)
        return;
    e->code = IKD_OK;
    e->http_status = 0;
    e->retry_after_s = 0;
    e->seq = 0;
    e->has_seq = false;
    e->wire_code[0] = e->stream[0] = e->path[0] = e->message[0] = '\0';
}

int ikd__fail(ikd_error *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    memset(e, 0, sizeof *e);
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return code;
}

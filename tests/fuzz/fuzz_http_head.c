/* libFuzzer target for the server's request-head check (host/server/http/head.c),
 * the first code that reads what a client sends: the connection gate runs it
 * on the bytes a connection has sent so far, again as more arrive, and
 * libmicrohttpd only ever sees heads it let through.
 *
 * Input: the bytes a connection sent. Besides not crashing or reading past
 * the bytes (the input is copied to a buffer of exactly its size), the
 * promises of server/http/head.h are checked:
 *  - the verdict over growing prefixes is INCOMPLETE ... then either COMPLETE
 *    with one fixed length or REFUSED with one fixed status: more bytes never
 *    change a verdict, so checking again as bytes arrive is sound;
 *  - COMPLETE: the head ends with its blank line inside the bytes, within
 *    SRV_HEAD_MAX_BYTES, and its request target lies inside the head within
 *    SRV_HEAD_MAX_TARGET and holds no space or control byte;
 *  - REFUSED: one of the documented statuses, a machine code, and a message
 *    that is terminated, non-empty and valid UTF-8 (it goes into a JSON error).
 * Prefixes tried: every one up to 64 bytes, the head's own end and its
 * neighbours, and a few cut points chosen by the input's bytes (all of them
 * would make one input cost its length squared). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "server/http/head.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static bool status_documented(unsigned status)
{
    return status == 400 || status == 414 || status == 431 || status == 501 || status == 505;
}

static void check_verdict(const char *bytes, size_t len, const srv_head *h)
{
    switch (h->state) {
    case SRV_HEAD_INCOMPLETE:
        break;
    case SRV_HEAD_COMPLETE:
        FUZZ_REQUIRE_MSG(h->length >= 2 && h->length <= len, "length %zu of %zu bytes", h->length, len);
        FUZZ_REQUIRE(h->length <= SRV_HEAD_MAX_BYTES);
        FUZZ_REQUIRE(bytes[h->length - 1] == '\n');
        FUZZ_REQUIRE(h->target != NULL && h->target_len > 0 && h->target_len <= SRV_HEAD_MAX_TARGET);
        FUZZ_REQUIRE(h->target >= bytes && h->target + h->target_len <= bytes + h->length);
        for (size_t i = 0; i < h->target_len; i++)
            FUZZ_REQUIRE_MSG((unsigned char)h->target[i] > ' ' && h->target[i] != 0x7f, "target byte 0x%02x",
                             (unsigned char)h->target[i]);
        break;
    case SRV_HEAD_REFUSED: {
        FUZZ_REQUIRE_MSG(status_documented(h->status), "status %u", h->status);
        FUZZ_REQUIRE(h->code != NULL && h->code[0] != '\0');
        const size_t n = strnlen(h->message, sizeof h->message);
        FUZZ_REQUIRE(n > 0 && n < sizeof h->message);
        FUZZ_REQUIRE_MSG(fuzz_utf8_valid(h->message, n), "message \"%s\"", h->message);
        if (h->target)
            FUZZ_REQUIRE(h->target >= bytes && h->target + h->target_len <= bytes + len);
        break;
    }
    default:
        FUZZ_REQUIRE_MSG(0, "state %d", (int)h->state);
    }
}

/* The verdict on `cut` bytes must agree with the one on all of them. */
static void check_prefix(const unsigned char *data, size_t cut, const srv_head *whole)
{
    char *prefix = malloc(cut ? cut : 1); /* exactly `cut` bytes: ASan sees a read past them */
    if (!prefix)
        return;
    memcpy(prefix, data, cut);
    srv_head h;
    srv_head_check(prefix, cut, &h);
    check_verdict(prefix, cut, &h);
    if (whole->state == SRV_HEAD_COMPLETE) {
        if (cut >= whole->length)
            FUZZ_REQUIRE_MSG(h.state == SRV_HEAD_COMPLETE && h.length == whole->length,
                             "%zu of its %zu bytes: state %d, length %zu", cut, whole->length, (int)h.state, h.length);
        else
            FUZZ_REQUIRE_MSG(h.state == SRV_HEAD_INCOMPLETE, "%zu bytes of a %zu-byte head: state %d (status %u)",
                             cut, whole->length, (int)h.state, h.status);
    } else if (whole->state == SRV_HEAD_INCOMPLETE) {
        FUZZ_REQUIRE_MSG(h.state == SRV_HEAD_INCOMPLETE, "%zu bytes: state %d, more bytes: incomplete", cut,
                         (int)h.state);
    } else if (h.state == SRV_HEAD_REFUSED) {
        FUZZ_REQUIRE_MSG(h.status == whole->status, "%zu bytes refused with %u, more bytes with %u", cut, h.status,
                         whole->status);
    } else {
        FUZZ_REQUIRE_MSG(h.state == SRV_HEAD_INCOMPLETE, "%zu bytes: complete, more bytes: refused", cut);
    }
    free(prefix);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *bytes = malloc(size ? size : 1);
    if (!bytes)
        return 0;
    memcpy(bytes, data, size);
    srv_head whole;
    srv_head_check(bytes, size, &whole);
    check_verdict(bytes, size, &whole);

    for (size_t cut = 0; cut < size && cut <= 64; cut++)
        check_prefix(data, cut, &whole);
    if (whole.state == SRV_HEAD_COMPLETE) {
        check_prefix(data, whole.length - 1, &whole);
        check_prefix(data, whole.length, &whole);
        if (whole.length < size)
            check_prefix(data, whole.length + 1, &whole);
    }
    for (size_t i = 0; i < 4 && size > 0; i++) {
        const size_t pick = (size_t)data[(i * 7919u) % size] << 8 | data[(i * 104729u + 1) % size];
        check_prefix(data, pick % size, &whole);
    }
    free(bytes);
    return 0;
}

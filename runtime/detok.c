/* detok.c — streaming-safe UTF-8 output for detokenizers.
 *
 * Tokens split characters arbitrarily (byte-level BPE gives a 4-byte emoji as
 * two tokens), so a streamed completion must never show a partial character.
 * gufo_detok_append() passes complete characters through, turns bytes that
 * can never become a character into U+FFFD (one per broken sequence, as
 * WHATWG decoders do), and keeps a valid-but-incomplete tail (at most 3 bytes)
 * in the caller's gufo_detok_state until the next token decides it. */
#include <string.h>

#include <gufo/ext/text_generation.h>

static const uint8_t replacement[3] = {0xEF, 0xBF, 0xBD}; /* U+FFFD */

/* Continuation bytes a lead byte wants (-1: cannot start a character). */
static int continuation_count(uint8_t lead)
{
    if (lead < 0x80) return 0;
    if (lead >= 0xC2 && lead <= 0xDF) return 1;
    if (lead >= 0xE0 && lead <= 0xEF) return 2;
    if (lead >= 0xF0 && lead <= 0xF4) return 3;
    return -1;
}

/* Whether `c` may follow `lead` as continuation byte number `index` (1-based).
 * The first continuation's range rules out overlong forms, UTF-16 surrogates
 * and code points above U+10FFFF. */
static bool continuation_ok(uint8_t lead, uint32_t index, uint8_t c)
{
    uint8_t lo = 0x80, hi = 0xBF;
    if (index == 1) {
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
    }
    return c >= lo && c <= hi;
}

/* Output staging, so ASCII text costs one append per token, not per byte. */
typedef struct staging {
    uint8_t bytes[256];
    size_t len;
    gufo_text_buffer *out;
    gufo_status status;
} staging;

static void stage(staging *s, const uint8_t *data, size_t len)
{
    if (s->status != GUFO_OK) return;
    if (s->len + len > sizeof s->bytes) {
        s->status = gufo_text_buffer_append(s->out, (const char *)s->bytes, s->len);
        s->len = 0;
        if (s->status != GUFO_OK) return;
    }
    memcpy(s->bytes + s->len, data, len);
    s->len += len;
}

static gufo_status unstage(staging *s)
{
    if (s->status == GUFO_OK && s->len) s->status = gufo_text_buffer_append(s->out, (const char *)s->bytes, s->len);
    return s->status;
}

GUFO_EXT_API gufo_status gufo_detok_append(gufo_detok_state *state, const void *bytes, size_t len,
                                           gufo_text_buffer *out)
{
    if (!state || (!bytes && len) || !out || state->n_pending > 3) return GUFO_E_INVALID_ARGUMENT;
    gufo_detok_state next = *state; /* the caller's state changes only on success */
    staging s = {.len = 0, .out = out, .status = GUFO_OK};
    const uint8_t *in = bytes;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = in[i];
        if (next.n_pending > 0) {
            uint8_t lead = next.pending[0];
            if (continuation_ok(lead, next.n_pending, c)) {
                next.pending[next.n_pending++] = c;
                if ((int)next.n_pending == continuation_count(lead) + 1) {
                    stage(&s, next.pending, next.n_pending);
                    next.n_pending = 0;
                }
                continue;
            }
            stage(&s, replacement, 3); /* the held prefix can never complete */
            next.n_pending = 0;        /* and `c` is looked at afresh below */
        }
        int need = continuation_count(c);
        if (need == 0) stage(&s, &c, 1);
        else if (need < 0) stage(&s, replacement, 3);
        else next.pending[next.n_pending++] = c;
    }
    gufo_status st = unstage(&s);
    if (st == GUFO_OK) *state = next;
    return st;
}

GUFO_EXT_API gufo_status gufo_detok_flush(gufo_detok_state *state, gufo_text_buffer *out)
{
    if (!state || !out || state->n_pending > 3) return GUFO_E_INVALID_ARGUMENT;
    if (state->n_pending == 0) return GUFO_OK;
    gufo_status st = gufo_text_buffer_append(out, (const char *)replacement, 3);
    if (st == GUFO_OK) state->n_pending = 0;
    return st;
}

/* Streaming UTF-8 output: a completion streamed token by token must show the
 * same text as the whole byte string decoded at once, never half a character,
 * and bytes that cannot form a character show as U+FFFD. */
#include <gufo/host/text_buffer.h>

#include <gufo/ext/testing.h>

/* Feeds `bytes` split into pieces of `step` bytes, then flushes; returns the text. */
static const char *stream(gufo_text_buffer *out, const char *bytes, size_t len, size_t step)
{
    gufo_detok_state st = {0};
    gufo_text_buffer_clear(out);
    for (size_t i = 0; i < len; i += step) {
        size_t n = len - i < step ? len - i : step;
        size_t before = 0, after = 0;
        gufo_text_buffer_data(out, &before);
        GUFO_CHECK_EQ_INT(gufo_detok_append(&st, bytes + i, n, out), GUFO_OK);
        const char *text = gufo_text_buffer_data(out, &after);
        /* Whatever was emitted so far ends on a character boundary. */
        if (after > 0) GUFO_CHECK(((unsigned char)text[after - 1] & 0xC0) != 0xC0);
    }
    GUFO_CHECK_EQ_INT(gufo_detok_flush(&st, out), GUFO_OK);
    GUFO_CHECK_EQ_INT(st.n_pending, 0);
    return gufo_text_buffer_data(out, NULL);
}

int main(void)
{
    gufo_text_buffer *out = NULL;
    GUFO_CHECK_EQ_INT(gufo_text_buffer_create(0, &out), GUFO_OK);

    /* Valid text: every split gives the text back unchanged. */
    const char *text = "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x98\x80!";
    for (size_t step = 1; step <= 5; step++) GUFO_CHECK_STREQ(stream(out, text, strlen(text), step), text);

    /* Held back: the first half of an emoji produces nothing yet. */
    gufo_detok_state st = {0};
    gufo_text_buffer_clear(out);
    GUFO_CHECK_EQ_INT(gufo_detok_append(&st, "a\xF0\x9F", 3, out), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(out, NULL), "a");
    GUFO_CHECK_EQ_INT(st.n_pending, 2);
    GUFO_CHECK_EQ_INT(gufo_detok_append(&st, "\x98\x80", 2, out), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(out, NULL), "a\xF0\x9F\x98\x80");

    /* Broken sequences: a truncated character followed by ASCII, a stray
     * continuation byte, an overlong form, a surrogate, and a dangling lead at
     * the end (flushed): each becomes one U+FFFD, whatever the split. */
    const char *bad = "\xE4\xB8x\x80y\xC0\xAFz\xED\xA0\x80w\xF0\x9F";
    const char *want = "\xEF\xBF\xBDx\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBDz"
                       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDw\xEF\xBF\xBD";
    for (size_t step = 1; step <= 4; step++) GUFO_CHECK_STREQ(stream(out, bad, strlen(bad), step), want);

    /* Flushing with nothing held adds nothing; bad arguments are refused. */
    gufo_detok_state empty = {0};
    gufo_text_buffer_clear(out);
    GUFO_CHECK_EQ_INT(gufo_detok_flush(&empty, out), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(out, NULL), "");
    GUFO_CHECK_EQ_INT(gufo_detok_append(NULL, "a", 1, out), GUFO_E_INVALID_ARGUMENT);

    gufo_text_buffer_destroy(out);
    return GUFO_CHECK_DONE();
}

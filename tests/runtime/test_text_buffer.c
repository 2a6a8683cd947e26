/* tests/runtime/test_text_buffer.c — growable text output with a size limit. */
#include <gufo/host/text_buffer.h>

#include <string.h>

#include <gufo/ext/testing.h>

static void test_append_and_clear(void)
{
    gufo_text_buffer *b = NULL;
    GUFO_CHECK_EQ_INT(gufo_text_buffer_create(0, &b), GUFO_OK);
    size_t len = 99;
    GUFO_CHECK_STREQ(gufo_text_buffer_data(b, &len), ""); /* empty, never NULL */
    GUFO_CHECK_EQ_INT(len, 0);

    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "Hello", 5), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, ", world!!!", 7), GUFO_OK); /* only len bytes */
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, NULL, 0), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(b, &len), "Hello, world");
    GUFO_CHECK_EQ_INT(len, 12);

    /* Embedded NUL bytes are kept; len tells the truth. */
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "a\0b", 3), GUFO_OK);
    const char *data = gufo_text_buffer_data(b, &len);
    GUFO_CHECK_EQ_INT(len, 15);
    GUFO_CHECK(memcmp(data + 12, "a\0b", 3) == 0);

    gufo_text_buffer_clear(b);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(b, &len), "");
    GUFO_CHECK_EQ_INT(len, 0);

    /* Many appends grow the buffer; content stays exact. */
    for (int i = 0; i < 10000; i++) GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "0123456789", 10), GUFO_OK);
    data = gufo_text_buffer_data(b, &len);
    GUFO_CHECK_EQ_INT(len, 100000);
    GUFO_CHECK(memcmp(data + 99990, "0123456789", 10) == 0);
    GUFO_CHECK_EQ_INT(data[len], '\0');

    /* Appending a piece of itself survives the reallocation. */
    gufo_text_buffer_clear(b);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "abc", 3), GUFO_OK);
    for (int i = 0; i < 12; i++) {
        data = gufo_text_buffer_data(b, &len);
        GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, data, len), GUFO_OK);
    }
    data = gufo_text_buffer_data(b, &len);
    GUFO_CHECK_EQ_INT(len, 3 * 4096);
    GUFO_CHECK(memcmp(data + len - 3, "abc", 3) == 0);

    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, NULL, 1), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(NULL, "x", 1), GUFO_E_INVALID_ARGUMENT);
    gufo_text_buffer_destroy(b);
    gufo_text_buffer_destroy(NULL);
}

static void test_limit(void)
{
    gufo_text_buffer *b = NULL;
    GUFO_CHECK_EQ_INT(gufo_text_buffer_create(10, &b), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "0123456", 7), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "7890", 4), GUFO_E_LIMIT);
    size_t len;
    GUFO_CHECK_STREQ(gufo_text_buffer_data(b, &len), "0123456"); /* a refused append changes nothing */
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "789", 3), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(b, &len), "0123456789");
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "x", 1), GUFO_E_LIMIT);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_append(b, "", 0), GUFO_OK);
    gufo_text_buffer_destroy(b);
    GUFO_CHECK_EQ_INT(gufo_text_buffer_create(0, NULL), GUFO_E_INVALID_ARGUMENT);
}

int main(void)
{
    test_append_and_clear();
    test_limit();
    return GUFO_CHECK_DONE();
}

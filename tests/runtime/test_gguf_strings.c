/* tests/runtime/test_gguf_strings.c — GGUF strings are read and compared with their length.
 *
 * A GGUF string is a length and bytes, and the bytes may include NUL. A reader
 * that hands such a value out as a C string hands out the part before the
 * NUL: "qwen3\0evil" read as "qwen3" made a file pass for an architecture it
 * does not declare. These checks pin what a probe author relies on: the
 * C-string getter refuses such a value, the length getter gives all of it,
 * the comparison helper compares all of it, and a value of another type is
 * named by its type, not called "missing".
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/ext/testing.h>

static char g_dir[] = "/tmp/gufo_test_gguf_strings_XXXXXX";
static char g_path[512];

static const char k_evil[] = "qwen3\0evil"; /* 10 bytes: the NUL is the sixth */

/* Adds a string value of exactly `len` bytes, NULs included, the way a
 * hand-made or hostile file carries it. */
static gufo_status set_bytes(gufo_gguf_writer *w, const char *key, const char *data, uint64_t len)
{
    gufo_gguf_value value;
    memset(&value, 0, sizeof value);
    value.type = GUFO_GGUF_STRING;
    value.v.str.data = data;
    value.v.str.len = len;
    return gufo_gguf_writer_copy_value(w, key, NULL, &value, NULL);
}

static bool write_file(void)
{
    gufo_gguf_writer *w = NULL;
    if (gufo_gguf_writer_create(&w) != GUFO_OK) return false;
    gufo_error err = {0};
    bool ok = set_bytes(w, "general.architecture", k_evil, sizeof k_evil - 1) == GUFO_OK &&
              gufo_gguf_writer_set_string(w, "plain", "qwen3") == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, "general.name", 7) == GUFO_OK &&
              set_bytes(w, "empty", "", 0) == GUFO_OK &&
              gufo_gguf_writer_write(w, g_path, &err) == GUFO_OK;
    if (!ok) fprintf(stderr, "writing %s failed: %s\n", g_path, err.message);
    gufo_gguf_writer_destroy(w);
    return ok;
}

static void test_c_string_getter_refuses_a_nul(const gufo_gguf *g)
{
    const char *s = NULL;
    gufo_error err = {0};
    /* Before: GUFO_OK with s == "qwen3", which strcmp() took for the whole value. */
    GUFO_CHECK_STATUS(gufo_gguf_get_string(g, "general.architecture", &s, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK(s == NULL || strcmp(s, "qwen3") != 0);
    GUFO_CHECK_CONTAINS(err.message, "metadata key 'general.architecture' is a 10-byte string with a NUL byte at "
                                     "offset 5");
    GUFO_CHECK_CONTAINS(err.message, "gufo_gguf_get_string_len()");

    /* Plain strings, the empty one included, read as before. */
    GUFO_CHECK_STATUS(gufo_gguf_get_string(g, "plain", &s, &err), GUFO_OK, &err);
    GUFO_CHECK_STREQ(s, "qwen3");
    GUFO_CHECK_STATUS(gufo_gguf_get_string(g, "empty", &s, &err), GUFO_OK, &err);
    GUFO_CHECK_STREQ(s, "");
}

static void test_length_getter_gives_every_byte(const gufo_gguf *g)
{
    const char *data = NULL;
    uint64_t len = 0;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_gguf_get_string_len(g, "general.architecture", &data, &len, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(len, sizeof k_evil - 1);
    GUFO_CHECK(data && memcmp(data, k_evil, sizeof k_evil) == 0); /* and NUL-terminated after the length */

    GUFO_CHECK_STATUS(gufo_gguf_get_string_len(g, "plain", NULL, &len, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(len, 5);
    GUFO_CHECK_STATUS(gufo_gguf_get_string_len(g, "plain", &data, NULL, &err), GUFO_OK, &err);
    GUFO_CHECK_STREQ(data, "qwen3");

    GUFO_CHECK_STATUS(gufo_gguf_get_string_len(g, "general.name", &data, &len, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_STREQ(err.message, "metadata key 'general.name' has type uint32; expected string");
    GUFO_CHECK_STATUS(gufo_gguf_get_string_len(g, "nowhere", &data, &len, &err), GUFO_E_NOT_FOUND, &err);
}

static void test_expect_string_compares_the_length(const gufo_gguf *g)
{
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "general.architecture", "qwen3", &err), GUFO_E_UNSUPPORTED, &err);
    /* The NUL is shown, so a user sees why "qwen3" was not enough. */
    GUFO_CHECK_STREQ(err.message, "general.architecture is 'qwen3\\0evil', not 'qwen3'");
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "general.architecture", "qwen3\\0evil", &err), GUFO_E_UNSUPPORTED,
                      &err);

    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "plain", "qwen3", &err), GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "plain", "qwen", &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_STREQ(err.message, "plain is 'qwen3', not 'qwen'");
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "plain", "qwen35", &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "empty", "", &err), GUFO_OK, &err);

    /* A value of another type is named by its type, never reported as missing. */
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "general.name", "x", &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_STREQ(err.message, "metadata key 'general.name' has type uint32; expected string");
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "nowhere", "x", &err), GUFO_E_NOT_FOUND, &err);
    GUFO_CHECK_STREQ(err.message, "metadata key 'nowhere' not found");
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "plain", NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
}

/* Control bytes, bytes that are not UTF-8 and long values print safely in the detail. */
static void test_expect_string_escapes_what_it_shows(void)
{
    static const char odd[] = "a\nb\t\x01\xff\xc3\xa9z"; /* "é" stays as it is */
    char path[600];
    snprintf(path, sizeof path, "%s/odd.gguf", g_dir);
    char long_value[400];
    memset(long_value, 'x', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = '\0';
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(set_bytes(w, "odd", odd, sizeof odd - 1), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "long", long_value), GUFO_OK);
    GUFO_CHECK_STATUS(gufo_gguf_writer_write(w, path, &err), GUFO_OK, &err);
    gufo_gguf_writer_destroy(w);

    gufo_gguf *g = NULL;
    GUFO_CHECK_STATUS(gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_OK, &err);
    if (!g) return;
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "odd", "a", &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_STREQ(err.message, "odd is 'a\\nb\\t\\x01\\xff\xc3\xa9z', not 'a'");
    GUFO_CHECK_STATUS(gufo_gguf_expect_string(g, "long", "x", &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_CONTAINS(err.message, "xxx...', not 'x'");
    GUFO_CHECK(strlen(err.message) < 160); /* short enough for a probe's reason */
    gufo_gguf_close(g);
    unlink(path);
}

static void test_type_names(void)
{
    GUFO_CHECK_STREQ(gufo_gguf_type_name(GUFO_GGUF_UINT32), "uint32");
    GUFO_CHECK_STREQ(gufo_gguf_type_name(GUFO_GGUF_STRING), "string");
    GUFO_CHECK_STREQ(gufo_gguf_type_name(GUFO_GGUF_ARRAY), "array");
    GUFO_CHECK_STREQ(gufo_gguf_type_name(GUFO_GGUF_FLOAT64), "float64");
    GUFO_CHECK_STREQ(gufo_gguf_type_name((gufo_gguf_type)99), "unknown");
}

int main(void)
{
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
    snprintf(g_path, sizeof g_path, "%s/strings.gguf", g_dir);
    GUFO_CHECK(write_file());
    gufo_gguf *g = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_gguf_open(g_path, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_OK, &err);
    if (g) {
        test_c_string_getter_refuses_a_nul(g);
        test_length_getter_gives_every_byte(g);
        test_expect_string_compares_the_length(g);
        gufo_gguf_close(g);
    }
    test_expect_string_escapes_what_it_shows();
    test_type_names();
    unlink(g_path);
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}

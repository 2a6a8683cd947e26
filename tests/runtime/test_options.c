/* tests/runtime/test_options.c — typed option values and the messages for bad ones. */
#include <gufo/host/options.h>

#include <gufo/ext/testing.h>

static void test_types(gufo_options *o)
{
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "ngram-order", GUFO_OPTION_INT, "-12", &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "scale", GUFO_OPTION_FLOAT, "0.25", &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "fast", GUFO_OPTION_BOOL, "Yes", &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "voice", GUFO_OPTION_STRING, "", &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "mtp-model", GUFO_OPTION_PATH, "/models/mtp.gguf", &err), GUFO_OK);

    int64_t i = 0;
    double f = 0;
    bool b = false;
    const char *s = NULL;
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "ngram-order", &i), GUFO_OK);
    GUFO_CHECK_EQ_INT(i, -12);
    GUFO_CHECK_EQ_INT(gufo_options_get_float(o, "scale", &f), GUFO_OK);
    GUFO_CHECK(f == 0.25);
    GUFO_CHECK_EQ_INT(gufo_options_get_bool(o, "fast", &b), GUFO_OK);
    GUFO_CHECK(b);
    GUFO_CHECK_EQ_INT(gufo_options_get_string(o, "voice", &s), GUFO_OK);
    GUFO_CHECK_STREQ(s, "");
    GUFO_CHECK_EQ_INT(gufo_options_get_string(o, "mtp-model", &s), GUFO_OK); /* paths read as strings */
    GUFO_CHECK_STREQ(s, "/models/mtp.gguf");

    GUFO_CHECK(gufo_options_has(o, "scale"));
    GUFO_CHECK(!gufo_options_has(o, "absent"));
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "absent", &i), GUFO_E_NOT_FOUND);
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "scale", &i), GUFO_E_INVALID_ARGUMENT); /* wrong type */
    GUFO_CHECK_EQ_INT(gufo_options_get_string(o, "fast", &s), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "ngram-order", NULL), GUFO_E_INVALID_ARGUMENT);

    /* A later value replaces the default. */
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "ngram-order", GUFO_OPTION_INT, "4", &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "ngram-order", &i), GUFO_OK);
    GUFO_CHECK_EQ_INT(i, 4);
}

static void test_bools(gufo_options *o)
{
    static const char *const yes[] = {"true", "1", "yes", "on", "TRUE", "On"};
    static const char *const no[] = {"false", "0", "no", "off", "False", "OFF"};
    for (int k = 0; k < 6; k++) {
        bool b = false;
        GUFO_CHECK_EQ_INT(gufo_options_set(o, "flag", GUFO_OPTION_BOOL, yes[k], NULL), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_options_get_bool(o, "flag", &b), GUFO_OK);
        GUFO_CHECK(b);
        GUFO_CHECK_EQ_INT(gufo_options_set(o, "flag", GUFO_OPTION_BOOL, no[k], NULL), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_options_get_bool(o, "flag", &b), GUFO_OK);
        GUFO_CHECK(!b);
    }
}

static void expect_refused(gufo_options *o, gufo_option_type type, const char *value, const char *message)
{
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "opt", type, value, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, message);
}

static void test_bad_values(gufo_options *o)
{
    expect_refused(o, GUFO_OPTION_INT, "x", "option --opt: 'x' is not an int");
    expect_refused(o, GUFO_OPTION_INT, "12abc", "option --opt: '12abc' is not an int");
    expect_refused(o, GUFO_OPTION_INT, "", "option --opt: '' is not an int");
    expect_refused(o, GUFO_OPTION_INT, " 5", "is not an int");
    expect_refused(o, GUFO_OPTION_INT, "1.5", "is not an int");
    expect_refused(o, GUFO_OPTION_INT, "99999999999999999999", "is not an int");
    expect_refused(o, GUFO_OPTION_FLOAT, "abc", "option --opt: 'abc' is not a float");
    expect_refused(o, GUFO_OPTION_FLOAT, "nan", "is not a float");
    expect_refused(o, GUFO_OPTION_FLOAT, "1e999", "is not a float");
    expect_refused(o, GUFO_OPTION_BOOL, "maybe", "option --opt: 'maybe' is not a bool");
    expect_refused(o, GUFO_OPTION_PATH, "", "is not a path");
    GUFO_CHECK(!gufo_options_has(o, "opt")); /* nothing stored on failure */

    /* A refused value keeps the earlier one. */
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "opt", GUFO_OPTION_INT, "7", NULL), GUFO_OK);
    expect_refused(o, GUFO_OPTION_INT, "seven", "is not an int");
    int64_t i = 0;
    GUFO_CHECK_EQ_INT(gufo_options_get_int(o, "opt", &i), GUFO_OK);
    GUFO_CHECK_EQ_INT(i, 7);

    double f = 0;
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "f", GUFO_OPTION_FLOAT, "-3e2", NULL), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_options_get_float(o, "f", &f), GUFO_OK);
    GUFO_CHECK(f == -300.0);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, NULL, GUFO_OPTION_INT, "1", NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_options_set(o, "n", GUFO_OPTION_INT, NULL, NULL), GUFO_E_INVALID_ARGUMENT);
}

int main(void)
{
    gufo_options *o = NULL;
    GUFO_CHECK_EQ_INT(gufo_options_create(&o), GUFO_OK);
    test_types(o);
    test_bools(o);
    test_bad_values(o);
    gufo_options_destroy(o);
    gufo_options_destroy(NULL);
    return GUFO_CHECK_DONE();
}

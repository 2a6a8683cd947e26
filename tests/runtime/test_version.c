/* tests/runtime/test_version.c — the runtime's API version and manifest requirement checks. */
#include <gufo/ext/status.h>
#include <gufo/ext/version.h>

#include <stdio.h>

#include <gufo/ext/testing.h>

static gufo_status check(const char *requirement, gufo_error *err)
{
    gufo_error_clear(err);
    return gufo_ext_check_requirement(requirement, err);
}

int main(void)
{
    uint32_t minor = 99, revision = 99;
    const char *version = gufo_ext_runtime_version(&minor, &revision);
    GUFO_CHECK_EQ_INT(minor, GUFO_EXT_API_MINOR);
    GUFO_CHECK_EQ_INT(revision, GUFO_EXT_API_REVISION);
    char want[64];
    snprintf(want, sizeof want, "0.%d.%d", GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION);
    GUFO_CHECK_STREQ(version, want);
    GUFO_CHECK_STREQ(gufo_ext_runtime_version(NULL, NULL), want);

    gufo_error err = {0};
    char text[64];
    snprintf(text, sizeof text, ">= 0.%d.%d", GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION);
    GUFO_CHECK_EQ_INT(check(text, &err), GUFO_OK);
    snprintf(text, sizeof text, "  >=0.%d.0 \t", GUFO_EXT_API_MINOR); /* whitespace tolerant */
    GUFO_CHECK_EQ_INT(check(text, &err), GUFO_OK);

    /* A revision newer than the runtime's. */
    snprintf(text, sizeof text, ">= 0.%d.%d", GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION + 1);
    GUFO_CHECK_EQ_INT(check(text, &err), GUFO_E_VERSION);
    char message[200];
    snprintf(message, sizeof message, "requires API >= 0.%d.%d but the loaded gufo_ext_runtime provides %s",
             GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION + 1, want);
    GUFO_CHECK_CONTAINS(err.message, message);

    /* Another minor, older or newer, is a break either way. */
    snprintf(text, sizeof text, ">= 0.%d.0", GUFO_EXT_API_MINOR + 1);
    GUFO_CHECK_EQ_INT(check(text, &err), GUFO_E_VERSION);
    GUFO_CHECK_CONTAINS(err.message, "minor number must match");
    if (GUFO_EXT_API_MINOR > 0) {
        snprintf(text, sizeof text, ">= 0.%d.0", GUFO_EXT_API_MINOR - 1);
        GUFO_CHECK_EQ_INT(check(text, &err), GUFO_E_VERSION);
    }
    GUFO_CHECK_EQ_INT(check(">= 1.0.0", &err), GUFO_E_VERSION);

    static const char *const malformed[] = {"0.1.1",     ">= 0.1",         "> 0.1.1", ">= 0.1.1.1",        ">= 0.1.x",
                                            ">= -0.1.1", ">= 0.1.1 extra", "",        ">= 0.1.99999999999"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        GUFO_CHECK_EQ_INT(check(malformed[i], &err), GUFO_E_FORMAT);
        GUFO_CHECK_CONTAINS(err.message, "is not of the form '>= 0.MINOR.REVISION'");
    }
    GUFO_CHECK_EQ_INT(check(NULL, &err), GUFO_E_FORMAT);
    GUFO_CHECK_EQ_INT(gufo_ext_check_requirement(">= 0.0.0x", NULL), GUFO_E_FORMAT);
    return GUFO_CHECK_DONE();
}

/* runtime/version.c — the API version of this runtime and requirement checks.
 *
 * The numbers come from the generated gufo/ext/version.h this file was
 * compiled with, so they describe the runtime actually loaded, which may
 * differ from the headers an extension or host was compiled against.
 */
/* version.h.in uses gufo_status without including status.h (reported); keep this first. */
#include <gufo/ext/status.h>
#include <gufo/ext/version.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

GUFO_EXT_API const char *gufo_ext_runtime_version(uint32_t *minor, uint32_t *revision)
{
    if (minor) *minor = GUFO_EXT_API_MINOR;
    if (revision) *revision = GUFO_EXT_API_REVISION;
    return GUFO_EXT_API_VERSION_STRING;
}

gufo_status gufo__check_api(uint32_t minor, uint32_t revision, gufo_error *err)
{
    if (minor == GUFO_EXT_API_MINOR && revision <= GUFO_EXT_API_REVISION) return GUFO_OK;
    return gufo_error_set(
        err, GUFO_E_VERSION,
        "requires API >= 0.%u.%u but the loaded gufo_ext_runtime provides " GUFO_EXT_API_VERSION_STRING "%s",
        (unsigned)minor, (unsigned)revision,
        minor != GUFO_EXT_API_MINOR ? " (the minor number must match exactly)" : "");
}

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* Reads a decimal number without sign or leading '+'; NULL when there is none or it overflows. */
static const char *read_number(const char *p, uint32_t *out)
{
    if (!isdigit((unsigned char)*p)) return NULL;
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno == ERANGE || value > UINT32_MAX) return NULL;
    *out = (uint32_t)value;
    return end;
}

/* Parses ">= MAJOR.MINOR.REVISION" with optional whitespace around the parts. */
static bool parse_requirement(const char *text, uint32_t *major, uint32_t *minor, uint32_t *revision)
{
    const char *p = skip_space(text);
    if (p[0] != '>' || p[1] != '=') return false;
    p = skip_space(p + 2);
    if (!(p = read_number(p, major)) || *p++ != '.') return false;
    if (!(p = read_number(p, minor)) || *p++ != '.') return false;
    if (!(p = read_number(p, revision))) return false;
    return *skip_space(p) == '\0';
}

GUFO_EXT_API gufo_status gufo_ext_check_requirement(const char *requirement, gufo_error *err)
{
    uint32_t major = 0, minor = 0, revision = 0;
    if (!requirement || !parse_requirement(requirement, &major, &minor, &revision))
        return gufo_error_set(err, GUFO_E_FORMAT, "API requirement '%s' is not of the form '>= 0.MINOR.REVISION'",
                              requirement ? requirement : "(null)");
    if (major != GUFO_EXT_API_MAJOR)
        return gufo_error_set(
            err, GUFO_E_VERSION,
            "requires API >= %u.%u.%u but the loaded gufo_ext_runtime provides " GUFO_EXT_API_VERSION_STRING,
            (unsigned)major, (unsigned)minor, (unsigned)revision);
    return gufo__check_api(minor, revision, err);
}

/* host/cli/version_info.c — see cli/version_info.h. */
#include "cli/version_info.h"

/* status.h first: version.h uses gufo_status without including it (reported). */
#include <gufo/ext/status.h>
#include <gufo/ext/version.h>

#include "gufo_version.h"

const char *host_gufo_version(void)
{
    return GUFO_VERSION_STRING;
}

const char *host_api_version_built(void)
{
    return GUFO_EXT_API_VERSION_STRING;
}

const char *host_api_version_runtime(void)
{
    return gufo_ext_runtime_version(NULL, NULL);
}

void host_print_version(FILE *out)
{
    fprintf(out, "gufo %s\nextension API %s (runtime %s)\n", host_gufo_version(), host_api_version_built(),
            host_api_version_runtime());
}

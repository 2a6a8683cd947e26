/* host/cli/version_info.h — the versions `gufo --version` and `gufo diagnose` report.
 *
 * Two independent numbers: Gufo's own release version (the CMake project
 * version) and the extension API version (0.MINOR.REVISION, derived from
 * changes/). The API version is reported twice on purpose: the one this binary
 * was compiled against and the one the loaded gufo_ext_runtime reports, since
 * a shared runtime can be swapped under the binary.
 */
#ifndef GUFO_HOST_VERSION_INFO_H
#define GUFO_HOST_VERSION_INFO_H

#include <stdio.h>

/** Gufo's version, e.g. "0.1.0". */
const char *host_gufo_version(void);

/** The extension API version this binary was compiled against (GUFO_EXT_API_VERSION_STRING). */
const char *host_api_version_built(void);

/** The extension API version of the loaded runtime (gufo_ext_runtime_version). */
const char *host_api_version_runtime(void);

/** Writes "gufo X\nextension API Y (runtime Z)\n". */
void host_print_version(FILE *out);

#endif /* GUFO_HOST_VERSION_INFO_H */

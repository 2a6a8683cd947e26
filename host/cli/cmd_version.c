/* host/cli/cmd_version.c — `gufo version` (also `gufo --version`). */
#include <stdio.h>

#include "cli/command.h"
#include "run/report.h"
#include "cli/version_info.h"

static const cli_command_spec version_cli = {
    .name = "version",
    .usage = "gufo version   (or gufo --version)",
    .summary = "Print Gufo's version and the extension API version.",
    .description = "Prints Gufo's own version, then the extension API version this binary was compiled "
                   "against and, in parentheses, the one the loaded gufo_ext_runtime reports.",
    .options = NULL,
    .n_options = 0,
    .manifest_command = 0,
    .takes_positional = false,
};

static int run_version(const host_context *ctx, const cli_args *args)
{
    (void)ctx;
    (void)args;
    host_print_version(stdout);
    return HOST_EXIT_OK;
}

const host_command host_cmd_version = {
    .cli = &version_cli,
    .needs_registry = false,
    .run = run_version,
};

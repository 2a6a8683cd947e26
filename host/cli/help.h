/* host/cli/help.h — `gufo COMMAND --help`.
 *
 * Help is generated from the same tables the parser uses: the command's host
 * options, then, grouped by extension, the options compiled-in manifests
 * declare for that command (with help, allowed values and default), and the
 * --speculative values this build offers. So help cannot list an option the
 * parser would refuse, or miss one it accepts.
 */
#ifndef GUFO_HOST_CLI_HELP_H
#define GUFO_HOST_CLI_HELP_H

#include <stdio.h>

#include <gufo/host/registry.h>

#include "cli/args.h"

/** Writes the help of `command`; `registry` may be NULL for commands without manifest options. */
void cli_print_help(const cli_command_spec *command, const gufo_registry *registry, FILE *out);

#endif /* GUFO_HOST_CLI_HELP_H */

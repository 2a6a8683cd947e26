/* host/run/command_driver.h — running a provider's command driver.
 *
 * A provider may replace the host's generic prompt, chat or bench command
 * with its own (gufo_command_drivers in provider.h). Every command runs such
 * a driver the same way: stdout as its output, stdin lines as its input, the
 * command's cancel token and options, and the same error reporting.
 */
#ifndef GUFO_HOST_COMMAND_DRIVER_H
#define GUFO_HOST_COMMAND_DRIVER_H

#include <gufo/ext/provider.h>

/** A gufo_command_drivers slot. */
typedef gufo_status (*host_driver_fn)(gufo_model *model, const gufo_command_io *io, gufo_error *err);

/**
 * Runs `driver` on `model` for `command` ("prompt", "chat", "bench") with the
 * positional arguments argv[0..argc). Prints errors naming `provider_id`;
 * returns HOST_EXIT_OK, HOST_EXIT_INTERRUPTED (cancelled) or HOST_EXIT_FAILURE.
 */
int host_run_command_driver(host_driver_fn driver, gufo_model *model, const char *provider_id, const char *command,
                            const gufo_cancel *cancel, const gufo_options *options, int argc, char **argv);

#endif /* GUFO_HOST_COMMAND_DRIVER_H */

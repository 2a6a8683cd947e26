/* host/cli/sampling_args.h — sampling parameters from a command's options.
 *
 * prompt and chat take the same sampling options (temperature, top-k, top-p,
 * min-p, seed and the penalties); defaults come from
 * gufo_sampling_params_default() and an option overrides them only when given.
 */
#ifndef GUFO_HOST_SAMPLING_ARGS_H
#define GUFO_HOST_SAMPLING_ARGS_H

#include <gufo/ext/sampling.h>

#include "cli/args.h"

/** Fills `params`; a value the sampler refuses is a usage error of `command`. Returns HOST_EXIT_*. */
int host_sampling_from_args(const cli_args *args, const char *command, gufo_sampling_params *params);

#endif /* GUFO_HOST_SAMPLING_ARGS_H */

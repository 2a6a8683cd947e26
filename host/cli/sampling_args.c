/* host/cli/sampling_args.c — sampling parameters from a command's options (cli/sampling_args.h). */
#include "cli/sampling_args.h"

#include "run/report.h"

int host_sampling_from_args(const cli_args *args, const char *command, gufo_sampling_params *params)
{
    gufo_sampling_params_default(params);
    const cli_value *v;
    if ((v = cli_args_value(args, "temperature"))->given) params->temperature = (float)v->v.f;
    if ((v = cli_args_value(args, "top-k"))->given) params->top_k = (int32_t)v->v.i;
    if ((v = cli_args_value(args, "top-p"))->given) params->top_p = (float)v->v.f;
    if ((v = cli_args_value(args, "min-p"))->given) params->min_p = (float)v->v.f;
    if ((v = cli_args_value(args, "seed"))->given) params->seed = (uint64_t)v->v.i;
    if ((v = cli_args_value(args, "repeat-penalty"))->given) params->repetition_penalty = (float)v->v.f;
    if ((v = cli_args_value(args, "presence-penalty"))->given) params->presence_penalty = (float)v->v.f;
    if ((v = cli_args_value(args, "frequency-penalty"))->given) params->frequency_penalty = (float)v->v.f;
    gufo_error err = {0};
    if (gufo_sampling_params_validate(params, &err) != GUFO_OK) {
        host_usage_error(command, "%s", err.message);
        return HOST_EXIT_USAGE;
    }
    return HOST_EXIT_OK;
}

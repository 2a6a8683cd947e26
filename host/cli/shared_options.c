/* host/cli/shared_options.c — see cli/shared_options.h. */
#include "cli/shared_options.h"

#include <unistd.h>

#include "run/report.h"

uint32_t cli_threads_from_args(const cli_args *args)
{
    const cli_value *threads = cli_args_value(args, "threads");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return threads && threads->given ? (uint32_t)threads->v.i : (uint32_t)(cpus > 0 ? cpus : 1);
}

void cli_model_config_from_args(const cli_args *args, host_model_config *config)
{
    const cli_value *budget = cli_args_value(args, "memory-budget");
    config->n_threads = cli_threads_from_args(args);
    config->context_length = (uint32_t)cli_args_int(args, "context");
    config->host_budget = budget && budget->set ? budget->v.budget.host : 0;
    config->device_budget = budget && budget->set ? budget->v.budget.device : 0;
}

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

/* host/cli/shared_options.h — the options several commands share, and how
 * they are read.
 *
 * Every command that loads a model takes --model, --threads, --memory-budget
 * and (all but bench) --context; prompt and chat take the same sampling
 * options (temperature, top-k, top-p, min-p, seed and the penalties). Their
 * table entries are written once here, as initializers a command's static
 * option table includes in the order it lists its options; where a command
 * words a help text its own way (what --model is for, what --context holds),
 * the macro takes that text. The readers below turn the parsed values into a
 * model configuration and sampling parameters the same way for every command.
 */
#ifndef GUFO_HOST_CLI_SHARED_OPTIONS_H
#define GUFO_HOST_CLI_SHARED_OPTIONS_H

#include <stdint.h>

#include <gufo/ext/sampling.h>

#include "cli/args.h"
#include "run/model_loader.h"

/* ---- table entries ---------------------------------------------------------- */

/** --model FILE; `help` says what the command does with it. */
#define CLI_OPTION_MODEL(help_text) {.name = "model", .type = CLI_STRING, .metavar = "FILE", .help = (help_text)}

/** --threads N (`short_letter` is its one-letter name, 0 for none). */
#define CLI_OPTION_THREADS(short_letter) \
    {.name = "threads", .short_name = (short_letter), .type = CLI_INT, .metavar = "N", .min = 1, .max = 4096, \
     .help = "CPU threads the model may use (default: the number of online CPUs)."}

/** --memory-budget SIZE; CLI_HELP_MEMORY_BUDGET is the help every command but bench gives it. */
#define CLI_OPTION_MEMORY_BUDGET(help_text) \
    {.name = "memory-budget", .type = CLI_BUDGET, .metavar = "SIZE", .help = (help_text)}
#define CLI_HELP_MEMORY_BUDGET \
    "Most memory the model may use, for host and device alike (512M, 4G), or each on its own " \
    "(host=8G,device=20G); 0 = no limit (default)."

/** --context N; `help` says what holds the tokens (the session, the conversation, each session). */
#define CLI_OPTION_CONTEXT(help_text) \
    {.name = "context", .type = CLI_INT, .metavar = "N", .min = 0, .max = UINT32_MAX, .help = (help_text)}

/** The sampling options host_sampling_from_args() reads; `seed_help` says what equal seeds give. */
#define CLI_OPTIONS_SAMPLING(seed_help) \
    {.name = "temperature", .type = CLI_FLOAT, .metavar = "T", .default_value = "0.8", \
     .help = "Sampling temperature; 0 = greedy."}, \
    {.name = "top-k", .type = CLI_INT, .metavar = "K", .min = 0, .max = INT32_MAX, .default_value = "40", \
     .help = "Sample among the K most likely tokens; 0 = off."}, \
    {.name = "top-p", .type = CLI_FLOAT, .metavar = "P", .default_value = "0.95", \
     .help = "Nucleus sampling threshold; 1 = off."}, \
    {.name = "min-p", .type = CLI_FLOAT, .metavar = "P", .default_value = "0.05", \
     .help = "Drop tokens less likely than P times the most likely one; 0 = off."}, \
    {.name = "seed", .type = CLI_INT, .metavar = "N", .min = 0, .max = INT64_MAX, .help = (seed_help)}, \
    {.name = "repeat-penalty", .type = CLI_FLOAT, .metavar = "X", .default_value = "1.0", \
     .help = "Penalty for repeating recent tokens; 1 = off."}, \
    {.name = "presence-penalty", .type = CLI_FLOAT, .metavar = "X", .default_value = "0.0", \
     .help = "OpenAI presence penalty; 0 = off."}, \
    {.name = "frequency-penalty", .type = CLI_FLOAT, .metavar = "X", .default_value = "0.0", \
     .help = "OpenAI frequency penalty; 0 = off."}

/* ---- readers ---------------------------------------------------------------- */

/** --threads when given, else the number of online CPUs (at least 1). */
uint32_t cli_threads_from_args(const cli_args *args);

/**
 * Fills the parts of `config` the shared options set: n_threads, context_length
 * (0 when the command has no --context or it was not given) and the budgets
 * (0 = no limit). The rest of `config` is left as it was.
 */
void cli_model_config_from_args(const cli_args *args, host_model_config *config);

/** Fills `params`; a value the sampler refuses is a usage error of `command`. Returns HOST_EXIT_*. */
int host_sampling_from_args(const cli_args *args, const char *command, gufo_sampling_params *params);

#endif /* GUFO_HOST_CLI_SHARED_OPTIONS_H */

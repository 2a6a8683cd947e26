/* host/cli/cmd_prompt.c — `gufo prompt`: run a model once on text from the command line.
 *
 *   gufo prompt [CAPABILITY] --model FILE [options] TEXT...
 *
 * CAPABILITY picks which kind of provider must accept the file: llm (the
 * default; text_generation), embeddings, decisions, or any manifest spelling.
 * The provider is chosen by the registry's probes, never by name. If it
 * registered a `prompt` command driver, the driver runs instead of the host's
 * generic loop (that is how capabilities the host has no loop for, such as
 * image generation, still get a useful `gufo prompt`).
 */
#include <stdlib.h>
#include <string.h>

#include <gufo/host/cancel.h>
#include <gufo/host/log.h>
#include <gufo/ext/provider.h>
#include <gufo/host/registry.h>
#include <gufo/ext/sampling.h>

#include "cli/command.h"
#include "run/command_driver.h"
#include "run/decisions_loop.h"
#include "run/embeddings_loop.h"
#include "cli/interrupt.h"
#include "run/model_loader.h"
#include "run/report.h"
#include "cli/shared_options.h"
#include "run/text_loop.h"

/* Sampling defaults shown in help are the ones sampling.h documents for
 * gufo_sampling_params_default(); the values used come from that function,
 * and an option only overrides them when given. */
static const cli_option prompt_options[] = {
    CLI_OPTION_MODEL("The model file to run (required)."),
    CLI_OPTION_THREADS(0),
    CLI_OPTION_MEMORY_BUDGET(CLI_HELP_MEMORY_BUDGET),
    CLI_OPTION_CONTEXT("Tokens the session may hold (default: the model's context length)."),
    {.name = "n-predict", .short_name = 'n', .type = CLI_INT, .metavar = "N", .min = -1, .max = INT32_MAX,
     .default_value = "128", .help = "Most new tokens to generate; -1 = until the model stops or the context is full."},
    CLI_OPTIONS_SAMPLING("Sampling RNG seed; equal seeds give equal output (default: the runtime's fixed seed)."),
    {.name = "speculative", .type = CLI_SPECULATIVE, .metavar = "METHOD", .default_value = "off",
     .help = "Speculative decoding method; the model's provider must offer it."},
    {.name = "system", .type = CLI_STRING, .metavar = "TEXT",
     .help = "System message; implies --chat."},
    {.name = "chat", .type = CLI_FLAG,
     .help = "Render TEXT as a user message through the model's chat template instead of using it raw."},
    {.name = "verbose", .type = CLI_FLAG, .help = "Report selection, model facts, memory and timing on stderr."},
    {.name = "quiet", .type = CLI_FLAG, .help = "Print only the result: no summary line, only errors logged."},
};

static const cli_command_spec prompt_cli = {
    .name = "prompt",
    .usage = "gufo prompt [CAPABILITY] --model FILE [options] TEXT...",
    .summary = "Run a model once on text given on the command line.",
    .description =
        "CAPABILITY is llm (default; also text_generation), embeddings or decisions; other manifest "
        "capabilities work when the model's provider brings its own prompt driver. For llm the TEXT words "
        "are joined into one prompt and the completion is streamed to stdout, followed by a summary line on "
        "stderr. For embeddings and decisions each TEXT is one input and gives one output line. Ctrl-C stops "
        "between steps. Put -- before text that starts with a dash.",
    .options = prompt_options,
    .n_options = sizeof prompt_options / sizeof prompt_options[0],
    .manifest_command = GUFO_COMMAND_PROMPT,
    .takes_positional = true,
};

/* "llm" is the CLI's name for text generation; every manifest spelling works too. */
static bool parse_capability(const char *word, gufo_capability *out)
{
    if (strcmp(word, "llm") == 0) {
        *out = GUFO_CAPABILITY_TEXT_GENERATION;
        return true;
    }
    return gufo_capability_from_name(word, out) == GUFO_OK;
}

/* Options only the text-generation loop reads; naming one for another capability is a mistake worth reporting. */
static int check_text_only_options(const cli_args *args, gufo_capability capability)
{
    static const char *const text_only[] = {"n-predict", "temperature", "top-k", "top-p", "min-p", "seed",
                                            "repeat-penalty", "presence-penalty", "frequency-penalty",
                                            "speculative", "system", "chat"};
    if (capability == GUFO_CAPABILITY_TEXT_GENERATION)
        return HOST_EXIT_OK;
    for (size_t i = 0; i < sizeof text_only / sizeof text_only[0]; i++) {
        if (cli_args_value(args, text_only[i])->given) {
            host_usage_error("prompt", "option --%s applies only to text generation (llm), not %s", text_only[i],
                             gufo_capability_name(capability));
            return HOST_EXIT_USAGE;
        }
    }
    return HOST_EXIT_OK;
}

static char *join_words(char *const *words, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(words[i]) + 1;
    char *text = malloc(len);
    if (!text)
        return NULL;
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(words[i]);
        if (i)
            text[used++] = ' ';
        memcpy(text + used, words[i], l);
        used += l;
    }
    text[used] = '\0';
    return text;
}

/* ---- command drivers ---------------------------------------------------- */

static const gufo_command_drivers *prompt_driver(const gufo_provider *p)
{
    const gufo_command_drivers *d = p->drivers;
    if (!d || !GUFO_EXT_HAS_SLOT(gufo_command_drivers, d, prompt))
        return NULL;
    return d;
}

/* ---- the command -------------------------------------------------------- */

typedef struct prompt_plan {
    gufo_capability capability;
    const char *model_path;
    char **texts;
    int n_texts;
    gufo_sampling_params sampling;
    bool verbose, quiet;
} prompt_plan;

/* Everything that can be checked before the model file is touched. */
static int plan_prompt(const cli_args *args, prompt_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->capability = GUFO_CAPABILITY_TEXT_GENERATION;
    plan->texts = args->positional;
    plan->n_texts = args->n_positional;
    if (plan->n_texts > 0 && parse_capability(plan->texts[0], &plan->capability)) {
        plan->texts++;
        plan->n_texts--;
    }
    plan->model_path = cli_args_string(args, "model");
    if (!plan->model_path) {
        host_usage_error("prompt", "--model FILE is required (see gufo prompt --help)");
        return HOST_EXIT_USAGE;
    }
    plan->verbose = cli_args_flag(args, "verbose");
    plan->quiet = cli_args_flag(args, "quiet");
    if (plan->verbose && plan->quiet) {
        host_usage_error("prompt", "--verbose and --quiet contradict each other");
        return HOST_EXIT_USAGE;
    }
    return host_sampling_from_args(args, "prompt", &plan->sampling);
}

static int run_generic(const host_model *m, const cli_args *args, const prompt_plan *plan,
                       const gufo_cancel *cancel)
{
    const gufo_provider *p = m->provider.provider;
    switch (plan->capability) {
    case GUFO_CAPABILITY_TEXT_GENERATION: {
        char *text = join_words(plan->texts, plan->n_texts);
        if (!text) {
            host_error("out of memory");
            return HOST_EXIT_FAILURE;
        }
        const char *system = cli_args_string(args, "system");
        host_text_request req = {
            .text = text,
            .system = system,
            .chat = cli_args_flag(args, "chat") || system != NULL,
            .n_predict = cli_args_int(args, "n-predict"),
            .context_length = (uint32_t)cli_args_int(args, "context"),
            .sampling = plan->sampling,
            .speculative = cli_args_string(args, "speculative"),
            .cancel = cancel,
            .quiet = plan->quiet,
            .verbose = plan->verbose,
            .out = stdout,
        };
        int rc = host_text_generate(p, m->model, &req);
        free(text);
        return rc;
    }
    case GUFO_CAPABILITY_EMBEDDINGS:
        return host_embeddings_run(p, m->model, plan->texts, (size_t)plan->n_texts, cancel, plan->verbose, stdout);
    case GUFO_CAPABILITY_DECISIONS:
        return host_decisions_run(p, m->model, plan->texts, (size_t)plan->n_texts, cancel, plan->verbose, stdout);
    default:
        host_error("%s provides %s but registered no prompt driver, and gufo has no generic prompt for %s",
                   m->provider.decl->id, gufo_capability_name(plan->capability),
                   gufo_capability_name(plan->capability));
        return HOST_EXIT_FAILURE;
    }
}

static int run_prompt(const host_context *ctx, const cli_args *args)
{
    prompt_plan plan;
    int rc = plan_prompt(args, &plan);
    if (rc != HOST_EXIT_OK)
        return rc;
    gufo_log_set_level(plan.verbose ? GUFO_LOG_DEBUG : plan.quiet ? GUFO_LOG_ERROR : GUFO_LOG_WARN);

    host_model m;
    rc = host_model_select(ctx->registry, plan.capability, plan.model_path, plan.verbose, &m);
    const gufo_command_drivers *drivers = rc == HOST_EXIT_OK ? prompt_driver(m.provider.provider) : NULL;
    if (rc == HOST_EXIT_OK && !drivers) {
        rc = check_text_only_options(args, plan.capability);
        if (rc == HOST_EXIT_OK && plan.n_texts == 0) {
            host_usage_error("prompt", "no TEXT given (usage: %s)", prompt_cli.usage);
            rc = HOST_EXIT_USAGE;
        }
    }
    if (rc != HOST_EXIT_OK) {
        host_model_close(&m);
        return rc;
    }

    gufo_cancel *cancel = NULL;
    if (gufo_cancel_create(&cancel) != GUFO_OK) {
        host_error("out of memory");
        host_model_close(&m);
        return HOST_EXIT_FAILURE;
    }
    bool interrupt_installed = host_interrupt_install(cancel);
    if (!interrupt_installed)
        host_error("cannot watch for Ctrl-C; it will end the process instead of stopping between steps");

    host_model_config config = {
        .options = cli_args_extension_options(args, m.provider.extension),
        .cancel = cancel,
        .max_sessions = 1,
        .max_batch = 1,
    };
    cli_model_config_from_args(args, &config);
    rc = host_model_create(&m, &config);
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted while loading");
    if (rc == HOST_EXIT_OK)
        rc = drivers ? host_run_command_driver(drivers->prompt, m.model, m.provider.decl->id, "prompt", cancel,
                                                args->all, plan.n_texts, plan.texts)
                     : run_generic(&m, args, &plan, cancel);
    if (plan.verbose)
        host_model_print_memory(&m);

    host_model_close(&m);
    if (interrupt_installed)
        host_interrupt_remove();
    gufo_cancel_destroy(cancel);
    return rc;
}

const host_command host_cmd_prompt = {
    .cli = &prompt_cli,
    .needs_registry = true,
    .run = run_prompt,
};

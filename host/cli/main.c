/* host/cli/main.c — the gufo CLI: loads the extension registry and dispatches to a command module.
 *
 * Nothing here knows which models exist: extensions arrive through the
 * generated gufo_registry_populate() and are seen only through the registry.
 */
#include <stdio.h>
#include <string.h>

#include <gufo/host/registry.h>
#include <gufo/host/memory.h>
#include <gufo_registry_populate.h>

#include "cli/help.h"
#include "cli/command.h"
#include "run/report.h"
#include "cli/version_info.h"

/* Listed in `gufo help` in this order. A new command module adds one line. */
static const host_command *const commands[] = {
    &host_cmd_prompt,
    &host_cmd_serve,
    &host_cmd_chat,
    &host_cmd_bench,
    &host_cmd_diagnose,
    &host_cmd_version,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const host_command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->cli->name, name) == 0)
            return commands[i];
    return NULL;
}

static void print_usage_line(FILE *out)
{
    fputs("usage: gufo <command> [options]   (commands: ", out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "%s, ", commands[i]->cli->name);
    fputs("help; see gufo help)\n", out);
}

static void print_general_help(FILE *out)
{
    fputs("usage: gufo <command> [options]\n\nGufo runs models that compiled-in extensions provide.\n\nCommands:\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->cli->name, commands[i]->cli->summary);
    fprintf(out, "  %-10s %s\n", "help", "Show this help, or a command's help: gufo help COMMAND.");
    fputs("\nGlobal options:\n  --version  Same as gufo version.\n  -h, --help Same as gufo help.\n"
          "\nRun 'gufo COMMAND --help' for a command's options, including those its extensions add.\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage error.\n",
          out);
}

/*
 * Creates the registry and loads every compiled-in extension. Per-extension
 * problems leave the extension listed as unavailable; only a runtime that is
 * too old for this binary (GUFO_E_VERSION) or a broken build fails start-up.
 */
static int open_registry(gufo_registry **out)
{
    gufo_error err = {0};
    *out = NULL;
    if (gufo_registry_create(out, &err) != GUFO_OK) {
        host_error("cannot create the extension registry: %s", err.message);
        return HOST_EXIT_FAILURE;
    }
    gufo_status st = gufo_registry_populate(*out, &err);
    if (st == GUFO_OK)
        return HOST_EXIT_OK;
    if (st == GUFO_E_VERSION)
        host_error("%s", err.message);
    else
        host_error("loading the compiled-in extensions failed: %s", host_why(st, &err));
    gufo_registry_destroy(*out);
    *out = NULL;
    return HOST_EXIT_FAILURE;
}

/*
 * Queries the device once, for the whole run, and gives the answer to the
 * registry: probes, providers' usable() and `gufo diagnose` read these facts,
 * so nothing else starts the GPU driver to ask again. A machine without a
 * usable GPU is a fact the registry records, not a failure.
 */
static int query_device(gufo_registry *registry)
{
    gufo_device_facts facts = {.struct_size = sizeof facts};
    gufo_error err = {0};
    if (gufo_device_facts_query(&facts, &err) != GUFO_OK ||
        gufo_registry_set_device_facts(registry, &facts, &err) != GUFO_OK) {
        host_error("cannot record the device facts: %s", err.message);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

static int run_command(const host_command *cmd, int argc, char **argv, bool help_only)
{
    host_context ctx = {0};
    if (cmd->needs_registry || help_only) {
        int rc = open_registry(&ctx.registry);
        if (rc != HOST_EXIT_OK)
            return rc;
    }
    int rc;
    if (help_only) {
        cli_print_help(cmd->cli, ctx.registry, stdout);
        rc = HOST_EXIT_OK;
    } else {
        cli_args args;
        rc = cli_args_parse(cmd->cli, ctx.registry, argc, argv, &args);
        if (rc == HOST_EXIT_OK && args.help)
            cli_print_help(cmd->cli, ctx.registry, stdout);
        else if (rc == HOST_EXIT_OK) {
            if (ctx.registry)
                rc = query_device(ctx.registry);
            if (rc == HOST_EXIT_OK)
                rc = cmd->run(&ctx, &args);
        }
        cli_args_free(&args);
    }
    gufo_registry_destroy(ctx.registry);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage_line(stderr);
        return HOST_EXIT_USAGE;
    }
    const char *word = argv[1];
    if (strcmp(word, "--version") == 0) {
        if (argc > 2) {
            host_error("--version takes no arguments");
            return HOST_EXIT_USAGE;
        }
        host_print_version(stdout);
        return HOST_EXIT_OK;
    }
    if (strcmp(word, "help") == 0 || strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0) {
        if (argc == 2) {
            print_general_help(stdout);
            return HOST_EXIT_OK;
        }
        const host_command *cmd = find_command(argv[2]);
        if (!cmd || argc > 3) {
            if (cmd)
                host_error("help takes one command name");
            else
                host_error("unknown command '%s'", argv[2]);
            print_usage_line(stderr);
            return HOST_EXIT_USAGE;
        }
        return run_command(cmd, 0, NULL, true);
    }
    const host_command *cmd = find_command(word);
    if (!cmd) {
        if (word[0] == '-')
            host_error("unknown option %s (see gufo help)", word);
        else
            host_error("unknown command '%s'", word);
        print_usage_line(stderr);
        return HOST_EXIT_USAGE;
    }
    return run_command(cmd, argc - 2, argv + 2, false);
}

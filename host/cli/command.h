/* host/cli/command.h — the gufo CLI's command modules.
 *
 * Every command is one module (cmd_<name>.c) exporting a host_command: its
 * option table and usage for the parser, and a run function that gets the
 * loaded registry and the parsed command line. cli/main.c only dispatches, so a
 * new command (serve, chat, bench) is one new file plus one line in cli/main.c's
 * table.
 */
#ifndef GUFO_HOST_COMMAND_H
#define GUFO_HOST_COMMAND_H

#include <gufo/host/registry.h>

#include "cli/args.h"

/** What every command gets besides its arguments. */
typedef struct host_context {
    gufo_registry *registry;  /* populated and loaded; read-only from here on */
} host_context;

/** One CLI command. */
typedef struct host_command {
    const cli_command_spec *cli;
    /** False for commands that must work even when extensions fail to load (version). */
    bool needs_registry;
    /** Runs the command; returns a HOST_EXIT_* status after reporting any error. */
    int (*run)(const host_context *ctx, const cli_args *args);
} host_command;

extern const host_command host_cmd_prompt;
extern const host_command host_cmd_serve;
extern const host_command host_cmd_chat;
extern const host_command host_cmd_bench;
extern const host_command host_cmd_diagnose;
extern const host_command host_cmd_version;

#endif /* GUFO_HOST_COMMAND_H */

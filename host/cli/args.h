/* host/cli/args.h — command-line parsing for every gufo command.
 *
 * A command's options come from two places:
 *  - the host's own options (a static table per command: --model, sampling,
 *    --json, ...), which are the only names the host reserves;
 *  - the options compiled-in extensions declare in their manifests for that
 *    command (gufo_option_decl with the command's gufo_command bit). These are
 *    accepted as --NAME VALUE or --NAME=VALUE (bools also as --NAME and
 *    --no-NAME), parsed and type-checked by the runtime (gufo_options_set),
 *    checked against the manifest's allowed values, and defaulted.
 *
 * Parsing either succeeds completely or prints one usage error naming the
 * option and the bad value and returns HOST_EXIT_USAGE: commands never see a
 * half-parsed command line.
 *
 * Ownership: cli_args owns its gufo_options sets; positional arguments and
 * option texts point into argv, which lives as long as the process.
 */
#ifndef GUFO_HOST_CLI_ARGS_H
#define GUFO_HOST_CLI_ARGS_H

#include <gufo/ext/options.h>
#include <gufo/host/registry.h>

/** How a host option's value is read. */
typedef enum cli_type {
    CLI_FLAG,        /* no value: present or not */
    CLI_STRING,      /* any text */
    CLI_INT,         /* integer within [min, max] */
    CLI_FLOAT,       /* finite decimal number */
    CLI_BUDGET,      /* memory budget: "4G" (host and device) or "host=4G,device=20G" */
    CLI_CHOICE,      /* one of a fixed list */
    CLI_SPECULATIVE  /* "off" or a method a built provider declares in its manifest */
} cli_type;

/** One host option. Tables of these are static data in the command modules. */
typedef struct cli_option {
    const char *name;            /* long name without dashes: "n-predict" */
    char short_name;             /* 'n' for -n; 0 when none */
    cli_type type;
    const char *metavar;         /* "FILE", "N"; NULL for flags */
    const char *help;
    const char *default_value;   /* as text, applied when not given; NULL when none */
    int64_t min, max;            /* CLI_INT range (inclusive) */
    const char *const *choices;  /* CLI_CHOICE: NULL-terminated list */
} cli_option;

/** What the parser needs to know about a command. */
typedef struct cli_command_spec {
    const char *name;            /* "prompt" */
    const char *usage;           /* "gufo prompt [CAPABILITY] --model FILE [options] TEXT..." */
    const char *summary;         /* one line for `gufo help` */
    const char *description;     /* paragraph for `gufo CMD --help`; may be NULL */
    const cli_option *options;
    size_t n_options;
    uint32_t manifest_command;   /* gufo_command bit whose manifest options apply; 0 = none */
    bool takes_positional;       /* false: stray words are usage errors */
} cli_command_spec;

/** A host option's parsed value. */
typedef struct cli_value {
    const cli_option *option;
    bool given;                  /* on the command line (not only defaulted) */
    bool set;                    /* given or defaulted */
    const char *text;            /* the text it was parsed from */
    union {
        bool flag;
        int64_t i;
        double f;
        struct { uint64_t host, device; } budget;
    } v;
} cli_value;

/** Manifest option values of one extension for this command. */
typedef struct cli_extension_options {
    const char *extension;       /* borrowed from the registry */
    gufo_options *options;
} cli_extension_options;

/** A parsed command line. */
typedef struct cli_args {
    const cli_command_spec *command;
    bool help;                   /* --help / -h was given: print help, do nothing else */
    cli_value *values;           /* one per command option, in table order */
    char **positional;           /* words that are not options, in order */
    int n_positional;
    cli_extension_options *extensions; /* one per extension with options for this command */
    size_t n_extensions;
    gufo_options *all;           /* host and manifest options together, for command drivers */
} cli_args;

/**
 * Parses argv (the words after the command name) for `command`. Returns
 * HOST_EXIT_OK, HOST_EXIT_USAGE after printing the usage error, or
 * HOST_EXIT_FAILURE when memory ran out. `registry` may be NULL for commands
 * without manifest options. Free with cli_args_free() whatever it returned.
 */
int cli_args_parse(const cli_command_spec *command, const gufo_registry *registry, int argc, char **argv,
                   cli_args *out);

/** Releases what cli_args_parse() allocated. */
void cli_args_free(cli_args *args);

/** The value of host option `name` (which must be in the command's table). */
const cli_value *cli_args_value(const cli_args *args, const char *name);

/** Convenience getters; the option must be set (given or defaulted) for a meaningful answer. */
bool cli_args_flag(const cli_args *args, const char *name);
const char *cli_args_string(const cli_args *args, const char *name); /* NULL when unset */
int64_t cli_args_int(const cli_args *args, const char *name);
double cli_args_float(const cli_args *args, const char *name);

/** The manifest option values `extension` declared for this command, or NULL when it declared none. */
const gufo_options *cli_args_extension_options(const cli_args *args, const char *extension);

/**
 * The values --speculative accepts besides "off": every method that built
 * providers (their library target compiled) list in their manifests, in
 * registry order, without duplicates. Writes at most `cap` borrowed names and
 * returns the total.
 */
size_t cli_speculative_methods(const gufo_registry *registry, const char **out, size_t cap);

/** Writes "off, mtp, ngram": every value --speculative accepts in this build. */
void cli_format_speculative(const gufo_registry *registry, char *buf, size_t cap);

/** Writes the NULL-terminated `choices` as "a, b, c". */
void cli_format_choices(const char *const *choices, char *buf, size_t cap);

/** Manifest spelling of an option type: "string", "int", "float", "bool", "path". */
const char *cli_option_type_name(gufo_option_type type);

#endif /* GUFO_HOST_CLI_ARGS_H */

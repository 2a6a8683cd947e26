/* host/cli/help.c — see cli/help.h. */
#include "cli/help.h"

#include <string.h>
#include <gufo/host/registry.h>

#define HELP_WIDTH 80
#define HELP_COLUMN 30

/* Metavariable shown in help for a manifest option: "FLOAT", "PATH", ... */
static const char *manifest_metavar(gufo_option_type type)
{
    switch (type) {
    case GUFO_OPTION_STRING: return "TEXT";
    case GUFO_OPTION_INT: return "INT";
    case GUFO_OPTION_FLOAT: return "FLOAT";
    case GUFO_OPTION_BOOL: return NULL;
    case GUFO_OPTION_PATH: return "PATH";
    }
    return "VALUE";
}

/* Prints `text` word-wrapped from column `indent`, assuming the cursor is at column `col`. */
static void print_wrapped(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t word = strcspn(p, " ");
        if (!word)
            break;
        if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
    }
    fputc('\n', out);
}

/* "  -n, --n-predict N" padded to HELP_COLUMN, then the wrapped help. */
static void print_option_line(FILE *out, int indent, char short_name, const char *name, const char *metavar,
                              const char *help)
{
    char head[160];
    int n;
    if (short_name)
        n = snprintf(head, sizeof head, "%*s-%c, --%s%s%s", indent, "", short_name, name, metavar ? " " : "",
                     metavar ? metavar : "");
    else
        n = snprintf(head, sizeof head, "%*s    --%s%s%s", indent, "", name, metavar ? " " : "",
                     metavar ? metavar : "");
    fputs(head, out);
    if (n + 2 > HELP_COLUMN) {
        fprintf(out, "\n%*s", HELP_COLUMN, "");
    } else {
        fprintf(out, "%*s", HELP_COLUMN - n, "");
    }
    print_wrapped(out, help ? help : "", HELP_COLUMN, HELP_COLUMN);
}

static void print_host_options(const cli_command_spec *cmd, const gufo_registry *registry, FILE *out)
{
    for (size_t i = 0; i < cmd->n_options; i++) {
        const cli_option *o = &cmd->options[i];
        char help[1024];
        size_t used = (size_t)snprintf(help, sizeof help, "%s", o->help ? o->help : "");
        if (o->type == CLI_CHOICE && o->choices) {
            char list[256];
            cli_format_choices(o->choices, list, sizeof list);
            used += (size_t)snprintf(help + used, sizeof help - used, " One of: %s.", list);
        } else if (o->type == CLI_SPECULATIVE) {
            char list[512];
            cli_format_speculative(registry, list, sizeof list);
            used += (size_t)snprintf(help + used, sizeof help - used, " Values in this build: %s.", list);
        }
        if (o->default_value && used < sizeof help)
            snprintf(help + used, sizeof help - used, " (default %s)", o->default_value);
        print_option_line(out, 2, o->short_name, o->name, o->metavar, help);
    }
}

static void print_manifest_options(const cli_command_spec *cmd, const gufo_registry *registry, FILE *out)
{
    size_t n_ext = registry ? gufo_registry_extension_count(registry) : 0;
    bool header = false;
    for (size_t e = 0; e < n_ext; e++) {
        gufo_extension_info info;
        if (gufo_registry_extension_at(registry, e, &info) != GUFO_OK || !info.decl)
            continue;
        const gufo_extension_decl *d = info.decl;
        bool any = false;
        for (size_t i = 0; i < d->n_options; i++)
            any = any || (d->options[i].commands & cmd->manifest_command);
        if (!any)
            continue;
        if (!header) {
            fputs("\nOptions from extensions:\n", out);
            header = true;
        }
        fprintf(out, "  %s %s (%s)%s%s\n", d->name, d->version,
                d->origin == GUFO_ORIGIN_OFFICIAL ? "official" : "community", info.available ? "" : " - unavailable: ",
                info.available ? "" : info.reason);
        for (size_t i = 0; i < d->n_options; i++) {
            const gufo_option_decl *o = &d->options[i];
            if (!(o->commands & cmd->manifest_command))
                continue;
            char help[1024];
            size_t used = (size_t)snprintf(help, sizeof help, "%s", o->help ? o->help : "");
            /* Manifest help is a phrase, often without a full stop; end it before adding more. */
            if (used > 0 && used < sizeof help - 1 && help[used - 1] != '.') {
                help[used++] = '.';
                help[used] = '\0';
            }
            if (o->allowed_values && o->n_allowed_values) {
                used += (size_t)snprintf(help + used, sizeof help - used, " One of:");
                for (size_t k = 0; k < o->n_allowed_values && used < sizeof help; k++)
                    used += (size_t)snprintf(help + used, sizeof help - used, "%s %s", k ? "," : "",
                                             o->allowed_values[k]);
                if (used < sizeof help)
                    used += (size_t)snprintf(help + used, sizeof help - used, ".");
            }
            if (o->type == GUFO_OPTION_BOOL && used < sizeof help)
                used += (size_t)snprintf(help + used, sizeof help - used, " (also --no-%s)", o->name);
            if (o->default_value && used < sizeof help)
                snprintf(help + used, sizeof help - used, " (default %s)", o->default_value);
            print_option_line(out, 4, 0, o->name, manifest_metavar(o->type), help);
        }
    }
}

void cli_print_help(const cli_command_spec *cmd, const gufo_registry *registry, FILE *out)
{
    fprintf(out, "usage: %s\n", cmd->usage);
    if (cmd->description) {
        fputc('\n', out);
        print_wrapped(out, cmd->description, 0, 0);
    }
    fputs("\nOptions:\n", out);
    print_host_options(cmd, registry, out);
    print_option_line(out, 2, 'h', "help", NULL, "Show this help and exit.");
    if (cmd->manifest_command)
        print_manifest_options(cmd, registry, out);
}

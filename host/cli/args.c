/* host/cli/args.c — see cli/args.h. */
#include "cli/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/report.h"
#include <gufo/host/options.h>
#include <gufo/host/registry.h>

/* ---- small helpers ------------------------------------------------------ */

const char *cli_option_type_name(gufo_option_type type)
{
    switch (type) {
    case GUFO_OPTION_STRING: return "string";
    case GUFO_OPTION_INT: return "int";
    case GUFO_OPTION_FLOAT: return "float";
    case GUFO_OPTION_BOOL: return "bool";
    case GUFO_OPTION_PATH: return "path";
    }
    return "unknown";
}

static const char *command_name_of_bit(uint32_t bit)
{
    switch (bit) {
    case GUFO_COMMAND_SERVE: return "serve";
    case GUFO_COMMAND_PROMPT: return "prompt";
    case GUFO_COMMAND_CHAT: return "chat";
    case GUFO_COMMAND_BENCH: return "bench";
    default: return "?";
    }
}

/* Writes "serve, prompt" for a gufo_command bit set. */
static void format_commands(uint32_t bits, char *buf, size_t cap)
{
    static const uint32_t all[] = {GUFO_COMMAND_SERVE, GUFO_COMMAND_PROMPT, GUFO_COMMAND_CHAT, GUFO_COMMAND_BENCH};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!(bits & all[i]))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", command_name_of_bit(all[i]));
        if (n < 0 || (size_t)n >= cap - used)
            return;
        used += (size_t)n;
    }
}

static bool parse_int64(const char *text, int64_t *out)
{
    if (!text[0])
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

static bool parse_double(const char *text, double *out)
{
    if (!text[0])
        return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/*
 * A byte size: a number (decimals allowed) with an optional binary suffix
 * K/M/G/T, optionally followed by "i", "B" or "iB" ("4G", "512MiB", "1.5g").
 * Plain numbers are bytes; 0 means "no limit" to gufo_memory_create.
 */
static bool parse_size(const char *text, size_t len, uint64_t *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || end == buf || !isfinite(v) || v < 0 || buf[0] == '-' || buf[0] == '+')
        return false;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return false;
    double bytes = v * mult;
    if (bytes >= 18446744073709551615.0)
        return false;
    *out = (uint64_t)bytes;
    return true;
}

/* "4G" sets both limits; "host=4G,device=20G" sets either or both. */
static bool parse_budget(const char *text, uint64_t *host, uint64_t *device)
{
    if (!strchr(text, '=')) {
        if (!parse_size(text, strlen(text), host))
            return false;
        *device = *host;
        return true;
    }
    bool seen_host = false, seen_device = false;
    *host = 0;
    *device = 0;
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return false;
        size_t key_len = (size_t)(eq - p);
        const char *val = eq + 1;
        size_t val_len = len - key_len - 1;
        if (key_len == 4 && memcmp(p, "host", 4) == 0 && !seen_host) {
            if (!parse_size(val, val_len, host))
                return false;
            seen_host = true;
        } else if (key_len == 6 && memcmp(p, "device", 6) == 0 && !seen_device) {
            if (!parse_size(val, val_len, device))
                return false;
            seen_device = true;
        } else {
            return false;
        }
        if (!comma)
            break;
        p = comma + 1;
        if (!*p)
            return false;
    }
    return seen_host || seen_device;
}

size_t cli_speculative_methods(const gufo_registry *registry, const char **out, size_t cap)
{
    size_t total = 0;
    size_t n = registry ? gufo_registry_provider_count(registry) : 0;
    for (size_t i = 0; i < n; i++) {
        gufo_provider_info info;
        if (gufo_registry_provider_at(registry, i, &info) != GUFO_OK || !info.decl)
            continue;
        /* "Built" providers only: an unbuilt target cannot speculate in this binary. */
        if (!info.decl->entry)
            continue;
        for (size_t m = 0; m < info.decl->n_speculative; m++) {
            const char *method = info.decl->speculative[m];
            bool dup = strcmp(method, "off") == 0;
            for (size_t k = 0; k < total && k < cap && !dup; k++)
                dup = strcmp(out[k], method) == 0;
            if (dup)
                continue;
            if (total < cap)
                out[total] = method;
            total++;
        }
    }
    return total;
}

void cli_format_speculative(const gufo_registry *registry, char *buf, size_t cap)
{
    const char *methods[64];
    size_t n = cli_speculative_methods(registry, methods, 64);
    size_t used = (size_t)snprintf(buf, cap, "off");
    for (size_t i = 0; i < n && i < 64 && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, ", %s", methods[i]);
}

void cli_format_choices(const char *const *choices, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; choices[i] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", choices[i]);
}

/* ---- host options ------------------------------------------------------- */

static const cli_option *find_host_option(const cli_command_spec *cmd, const char *name, size_t name_len,
                                          char short_name)
{
    for (size_t i = 0; i < cmd->n_options; i++) {
        const cli_option *o = &cmd->options[i];
        if (short_name) {
            if (o->short_name == short_name)
                return o;
        } else if (strlen(o->name) == name_len && memcmp(o->name, name, name_len) == 0) {
            return o;
        }
    }
    return NULL;
}

static int parse_host_value(const cli_command_spec *cmd, const gufo_registry *registry, const cli_option *opt,
                            const char *text, cli_value *value)
{
    const char *cn = cmd->name;
    switch (opt->type) {
    case CLI_FLAG:
        value->v.flag = true;
        break;
    case CLI_STRING:
        break;
    case CLI_INT: {
        int64_t v;
        if (!parse_int64(text, &v)) {
            host_usage_error(cn, "option --%s: '%s' is not an integer", opt->name, text);
            return HOST_EXIT_USAGE;
        }
        if (v < opt->min || v > opt->max) {
            if (opt->max == INT64_MAX)
                host_usage_error(cn, "option --%s: %s is out of range (at least %lld)", opt->name, text,
                                 (long long)opt->min);
            else
                host_usage_error(cn, "option --%s: %s is out of range (%lld to %lld)", opt->name, text,
                                 (long long)opt->min, (long long)opt->max);
            return HOST_EXIT_USAGE;
        }
        value->v.i = v;
        break;
    }
    case CLI_FLOAT:
        if (!parse_double(text, &value->v.f)) {
            host_usage_error(cn, "option --%s: '%s' is not a number", opt->name, text);
            return HOST_EXIT_USAGE;
        }
        break;
    case CLI_BUDGET:
        if (!parse_budget(text, &value->v.budget.host, &value->v.budget.device)) {
            host_usage_error(cn, "option --%s: '%s' is not a memory budget (like 512M, 4G or host=8G,device=20G)",
                             opt->name, text);
            return HOST_EXIT_USAGE;
        }
        break;
    case CLI_CHOICE: {
        bool ok = false;
        for (size_t i = 0; opt->choices && opt->choices[i] && !ok; i++)
            ok = strcmp(opt->choices[i], text) == 0;
        if (!ok) {
            char list[256];
            cli_format_choices(opt->choices, list, sizeof list);
            host_usage_error(cn, "option --%s: '%s' is not one of: %s", opt->name, text, list);
            return HOST_EXIT_USAGE;
        }
        break;
    }
    case CLI_SPECULATIVE: {
        const char *methods[64];
        size_t n = cli_speculative_methods(registry, methods, 64);
        bool ok = strcmp(text, "off") == 0;
        for (size_t i = 0; i < n && i < 64 && !ok; i++)
            ok = strcmp(methods[i], text) == 0;
        if (!ok) {
            char list[512];
            cli_format_speculative(registry, list, sizeof list);
            host_usage_error(cn, "option --%s: '%s' is not one of: %s", opt->name, text, list);
            return HOST_EXIT_USAGE;
        }
        break;
    }
    }
    value->text = text;
    value->set = true;
    return HOST_EXIT_OK;
}

/* ---- manifest options --------------------------------------------------- */

static gufo_options *extension_set(cli_args *args, const char *extension)
{
    for (size_t i = 0; i < args->n_extensions; i++)
        if (strcmp(args->extensions[i].extension, extension) == 0)
            return args->extensions[i].options;
    return NULL;
}

/* Creates one empty gufo_options per extension that declares options for this command. */
static int create_extension_sets(const cli_command_spec *cmd, const gufo_registry *registry, cli_args *args)
{
    size_t n = registry ? gufo_registry_option_count(registry) : 0;
    if (n == 0 || !cmd->manifest_command)
        return HOST_EXIT_OK;
    args->extensions = calloc(n, sizeof *args->extensions);
    if (!args->extensions)
        return HOST_EXIT_FAILURE;
    for (size_t i = 0; i < n; i++) {
        gufo_option_info info;
        if (gufo_registry_option_at(registry, i, &info) != GUFO_OK || !(info.decl->commands & cmd->manifest_command))
            continue;
        if (extension_set(args, info.extension))
            continue;
        cli_extension_options *e = &args->extensions[args->n_extensions];
        if (gufo_options_create(&e->options) != GUFO_OK)
            return HOST_EXIT_FAILURE;
        e->extension = info.extension;
        args->n_extensions++;
    }
    return HOST_EXIT_OK;
}

/*
 * Sets a manifest option in its extension's set and in the combined set,
 * after the runtime's type check, the allowed-values check and, for paths,
 * an existence check. `is_default` turns a failure into a bug report about
 * the manifest rather than a usage error.
 */
static int set_manifest_value(const cli_command_spec *cmd, cli_args *args, const gufo_option_info *info,
                              const char *text, bool is_default)
{
    const gufo_option_decl *d = info->decl;
    gufo_options *set = extension_set(args, info->extension);
    gufo_error err = {0};
    if (gufo_options_set(set, d->name, d->type, text, &err) != GUFO_OK) {
        if (is_default) {
            host_error("extension %s: the default of option --%s is invalid: %s", info->extension, d->name,
                       err.message);
            return HOST_EXIT_FAILURE;
        }
        host_usage_error(cmd->name, "%s", err.message);
        return HOST_EXIT_USAGE;
    }
    if (d->allowed_values && d->n_allowed_values > 0) {
        bool ok = false;
        for (size_t i = 0; i < d->n_allowed_values && !ok; i++)
            ok = strcmp(d->allowed_values[i], text) == 0;
        if (!ok) {
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (size_t i = 0; i < d->n_allowed_values && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         d->allowed_values[i]);
            if (is_default) {
                host_error("extension %s: the default '%s' of option --%s is not one of: %s", info->extension, text,
                           d->name, list);
                return HOST_EXIT_FAILURE;
            }
            host_usage_error(cmd->name, "option --%s: '%s' is not one of: %s", d->name, text, list);
            return HOST_EXIT_USAGE;
        }
    }
    if (d->type == GUFO_OPTION_PATH && !is_default) {
        struct stat st;
        if (stat(text, &st) != 0) {
            host_usage_error(cmd->name, "option --%s: '%s' does not exist", d->name, text);
            return HOST_EXIT_USAGE;
        }
    }
    if (gufo_options_set(args->all, d->name, d->type, text, &err) != GUFO_OK) {
        host_usage_error(cmd->name, "%s", err.message);
        return HOST_EXIT_USAGE;
    }
    return HOST_EXIT_OK;
}

static int apply_manifest_defaults(const cli_command_spec *cmd, const gufo_registry *registry, cli_args *args)
{
    size_t n = registry ? gufo_registry_option_count(registry) : 0;
    for (size_t i = 0; i < n && cmd->manifest_command; i++) {
        gufo_option_info info;
        if (gufo_registry_option_at(registry, i, &info) != GUFO_OK || !(info.decl->commands & cmd->manifest_command))
            continue;
        if (!info.decl->default_value)
            continue;
        int rc = set_manifest_value(cmd, args, &info, info.decl->default_value, true);
        if (rc != HOST_EXIT_OK)
            return rc;
    }
    return HOST_EXIT_OK;
}

/* Where a manifest option name stands for this command. */
typedef enum manifest_match {
    MANIFEST_NONE,         /* no extension declares it */
    MANIFEST_APPLIES,      /* declared for this command */
    MANIFEST_OTHER_COMMAND /* declared, but for other commands only */
} manifest_match;

static manifest_match lookup_manifest(const cli_command_spec *cmd, const gufo_registry *registry, const char *name,
                                      size_t name_len, bool bool_only, uint32_t *other_commands)
{
    manifest_match m = MANIFEST_NONE;
    size_t n = registry ? gufo_registry_option_count(registry) : 0;
    *other_commands = 0;
    for (size_t i = 0; i < n; i++) {
        gufo_option_info info;
        if (gufo_registry_option_at(registry, i, &info) != GUFO_OK)
            continue;
        const gufo_option_decl *d = info.decl;
        if (strlen(d->name) != name_len || memcmp(d->name, name, name_len) != 0)
            continue;
        if (bool_only && d->type != GUFO_OPTION_BOOL)
            continue;
        if (d->commands & cmd->manifest_command)
            return MANIFEST_APPLIES;
        *other_commands |= d->commands;
        m = MANIFEST_OTHER_COMMAND;
    }
    return m;
}

/* Sets every declaration of `name` that applies to this command (two extensions may share a name). */
static int set_manifest_option(const cli_command_spec *cmd, const gufo_registry *registry, cli_args *args,
                               const char *name, size_t name_len, const char *text)
{
    size_t n = gufo_registry_option_count(registry);
    for (size_t i = 0; i < n; i++) {
        gufo_option_info info;
        if (gufo_registry_option_at(registry, i, &info) != GUFO_OK)
            continue;
        const gufo_option_decl *d = info.decl;
        if (strlen(d->name) != name_len || memcmp(d->name, name, name_len) != 0 ||
            !(d->commands & cmd->manifest_command))
            continue;
        int rc = set_manifest_value(cmd, args, &info, text, false);
        if (rc != HOST_EXIT_OK)
            return rc;
    }
    return HOST_EXIT_OK;
}

static bool manifest_is_bool(const gufo_registry *registry, const cli_command_spec *cmd, const char *name,
                             size_t name_len)
{
    size_t n = gufo_registry_option_count(registry);
    for (size_t i = 0; i < n; i++) {
        gufo_option_info info;
        if (gufo_registry_option_at(registry, i, &info) != GUFO_OK)
            continue;
        const gufo_option_decl *d = info.decl;
        if (strlen(d->name) == name_len && memcmp(d->name, name, name_len) == 0 &&
            (d->commands & cmd->manifest_command))
            return d->type == GUFO_OPTION_BOOL;
    }
    return false;
}

/* ---- the parser --------------------------------------------------------- */

static int unknown_option(const cli_command_spec *cmd, const char *arg, size_t len)
{
    host_usage_error(cmd->name, "unknown option %.*s (see gufo %s --help)", (int)len, arg, cmd->name);
    return HOST_EXIT_USAGE;
}

/*
 * Whether the word after an option can be its value. A following "--word" is
 * taken to be the next option, so "--threads --model m.gguf" reports the
 * missing value instead of a puzzling "'--model' is not an integer"; values
 * that really start with "--" are written --name=VALUE. Negative numbers
 * ("-1") are values.
 */
static bool takes_next_as_value(int argc, char **argv, int index)
{
    if (index + 1 >= argc)
        return false;
    const char *next = argv[index + 1];
    return !(next[0] == '-' && next[1] == '-');
}

/* Handles one "--name[=value]" word; may consume the next word as its value. */
static int parse_long(const cli_command_spec *cmd, const gufo_registry *registry, cli_args *args, int argc,
                      char **argv, int *index)
{
    const char *arg = argv[*index];
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    const char *inline_value = eq ? eq + 1 : NULL;
    size_t shown_len = (size_t)(name - arg) + name_len;

    const cli_option *opt = find_host_option(cmd, name, name_len, 0);
    if (opt) {
        cli_value *value = &args->values[opt - cmd->options];
        const char *text;
        if (opt->type == CLI_FLAG) {
            if (inline_value) {
                host_usage_error(cmd->name, "option --%s takes no value", opt->name);
                return HOST_EXIT_USAGE;
            }
            text = "true";
        } else if (inline_value) {
            text = inline_value;
        } else if (takes_next_as_value(argc, argv, *index)) {
            text = argv[++*index];
        } else {
            host_usage_error(cmd->name, "option --%s needs a value (%s)", opt->name, opt->metavar ? opt->metavar : "");
            return HOST_EXIT_USAGE;
        }
        value->given = true;
        return parse_host_value(cmd, registry, opt, text, value);
    }

    uint32_t other = 0;
    manifest_match m = lookup_manifest(cmd, registry, name, name_len, false, &other);
    if (m == MANIFEST_APPLIES) {
        const char *text;
        if (manifest_is_bool(registry, cmd, name, name_len)) {
            /* A bare bool flag means true; the next word is its value only when it is
             * literally true/false, so prompt text after a flag is never swallowed. */
            if (inline_value)
                text = inline_value;
            else if (*index + 1 < argc && (strcmp(argv[*index + 1], "true") == 0 ||
                                           strcmp(argv[*index + 1], "false") == 0))
                text = argv[++*index];
            else
                text = "true";
        } else if (inline_value) {
            text = inline_value;
        } else if (takes_next_as_value(argc, argv, *index)) {
            text = argv[++*index];
        } else {
            host_usage_error(cmd->name, "option --%.*s needs a value", (int)name_len, name);
            return HOST_EXIT_USAGE;
        }
        return set_manifest_option(cmd, registry, args, name, name_len, text);
    }

    /* --no-NAME for a bool manifest option. */
    if (m == MANIFEST_NONE && name_len > 3 && memcmp(name, "no-", 3) == 0) {
        uint32_t other_no = 0;
        manifest_match mn = lookup_manifest(cmd, registry, name + 3, name_len - 3, true, &other_no);
        if (mn == MANIFEST_APPLIES) {
            if (inline_value) {
                host_usage_error(cmd->name, "option --%.*s takes no value", (int)name_len, name);
                return HOST_EXIT_USAGE;
            }
            return set_manifest_option(cmd, registry, args, name + 3, name_len - 3, "false");
        }
        if (mn == MANIFEST_OTHER_COMMAND) {
            m = mn;
            other = other_no;
        }
    }

    if (m == MANIFEST_OTHER_COMMAND) {
        char commands[64];
        format_commands(other, commands, sizeof commands);
        host_usage_error(cmd->name, "option %.*s does not apply to gufo %s (its extension declares it for: %s)",
                         (int)shown_len, arg, cmd->name, commands);
        return HOST_EXIT_USAGE;
    }
    return unknown_option(cmd, arg, shown_len);
}

/* Handles "-x", "-xVALUE" or "-x VALUE". */
static int parse_short(const cli_command_spec *cmd, const gufo_registry *registry, cli_args *args, int argc,
                       char **argv, int *index)
{
    const char *arg = argv[*index];
    const cli_option *opt = find_host_option(cmd, NULL, 0, arg[1]);
    if (!opt)
        return unknown_option(cmd, arg, 2);
    cli_value *value = &args->values[opt - cmd->options];
    const char *text;
    if (opt->type == CLI_FLAG) {
        if (arg[2]) {
            host_usage_error(cmd->name, "option -%c takes no value", arg[1]);
            return HOST_EXIT_USAGE;
        }
        text = "true";
    } else if (arg[2]) {
        text = arg + 2;
    } else if (takes_next_as_value(argc, argv, *index)) {
        text = argv[++*index];
    } else {
        host_usage_error(cmd->name, "option -%c needs a value (%s)", arg[1], opt->metavar ? opt->metavar : "");
        return HOST_EXIT_USAGE;
    }
    value->given = true;
    return parse_host_value(cmd, registry, opt, text, value);
}

/* Mirrors host option values into the combined set command drivers read. */
static int fill_combined_host_values(const cli_command_spec *cmd, cli_args *args)
{
    for (size_t i = 0; i < cmd->n_options; i++) {
        const cli_value *v = &args->values[i];
        const cli_option *o = v->option;
        char buf[64];
        gufo_option_type type = GUFO_OPTION_STRING;
        const char *text = v->text;
        if (o->type == CLI_FLAG) {
            if (strcmp(o->name, "help") == 0)
                continue;
            type = GUFO_OPTION_BOOL;
            text = v->v.flag ? "true" : "false";
        } else if (!v->set) {
            continue;
        } else if (o->type == CLI_INT) {
            type = GUFO_OPTION_INT;
            snprintf(buf, sizeof buf, "%lld", (long long)v->v.i);
            text = buf;
        } else if (o->type == CLI_FLOAT) {
            type = GUFO_OPTION_FLOAT;
            snprintf(buf, sizeof buf, "%.17g", v->v.f);
            text = buf;
        }
        gufo_error err = {0};
        if (gufo_options_set(args->all, o->name, type, text, &err) != GUFO_OK) {
            host_error("cannot record option --%s for the command driver: %s", o->name, err.message);
            return HOST_EXIT_FAILURE;
        }
    }
    return HOST_EXIT_OK;
}

static bool is_help_word(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int cli_args_parse(const cli_command_spec *cmd, const gufo_registry *registry, int argc, char **argv,
                   cli_args *out)
{
    memset(out, 0, sizeof *out);
    out->command = cmd;

    /* --help wins over everything else on the line, even over errors in it. */
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (is_help_word(argv[i])) {
            out->help = true;
            return HOST_EXIT_OK;
        }
    }

    out->values = calloc(cmd->n_options ? cmd->n_options : 1, sizeof *out->values);
    out->positional = calloc((size_t)argc + 1, sizeof *out->positional);
    if (!out->values || !out->positional || gufo_options_create(&out->all) != GUFO_OK) {
        host_error("out of memory while parsing the command line");
        return HOST_EXIT_FAILURE;
    }
    for (size_t i = 0; i < cmd->n_options; i++)
        out->values[i].option = &cmd->options[i];

    int rc = create_extension_sets(cmd, registry, out);
    if (rc == HOST_EXIT_FAILURE)
        host_error("out of memory while parsing the command line");
    if (rc == HOST_EXIT_OK)
        rc = apply_manifest_defaults(cmd, registry, out);

    bool options_done = false;
    for (int i = 0; i < argc && rc == HOST_EXIT_OK; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (!options_done && arg[0] == '-' && arg[1] == '-' && arg[2])
            rc = parse_long(cmd, registry, out, argc, argv, &i);
        else if (!options_done && arg[0] == '-' && arg[1])
            rc = parse_short(cmd, registry, out, argc, argv, &i);
        else if (!cmd->takes_positional) {
            host_usage_error(cmd->name, "unexpected argument '%s' (see gufo %s --help)", arg, cmd->name);
            rc = HOST_EXIT_USAGE;
        } else {
            out->positional[out->n_positional++] = argv[i];
        }
    }

    /* Host defaults, parsed like user input so a bad table entry is caught at once. */
    for (size_t i = 0; i < cmd->n_options && rc == HOST_EXIT_OK; i++) {
        cli_value *v = &out->values[i];
        if (!v->set && v->option->default_value)
            rc = parse_host_value(cmd, registry, v->option, v->option->default_value, v);
    }
    if (rc == HOST_EXIT_OK)
        rc = fill_combined_host_values(cmd, out);
    return rc;
}

void cli_args_free(cli_args *args)
{
    if (!args)
        return;
    for (size_t i = 0; i < args->n_extensions; i++)
        gufo_options_destroy(args->extensions[i].options);
    free(args->extensions);
    gufo_options_destroy(args->all);
    free(args->values);
    free(args->positional);
    memset(args, 0, sizeof *args);
}

const cli_value *cli_args_value(const cli_args *args, const char *name)
{
    for (size_t i = 0; args->values && i < args->command->n_options; i++)
        if (strcmp(args->values[i].option->name, name) == 0)
            return &args->values[i];
    return NULL;
}

bool cli_args_flag(const cli_args *args, const char *name)
{
    const cli_value *v = cli_args_value(args, name);
    return v && v->set && v->v.flag;
}

const char *cli_args_string(const cli_args *args, const char *name)
{
    const cli_value *v = cli_args_value(args, name);
    return v && v->set ? v->text : NULL;
}

int64_t cli_args_int(const cli_args *args, const char *name)
{
    const cli_value *v = cli_args_value(args, name);
    return v && v->set ? v->v.i : 0;
}

double cli_args_float(const cli_args *args, const char *name)
{
    const cli_value *v = cli_args_value(args, name);
    return v && v->set ? v->v.f : 0.0;
}

const gufo_options *cli_args_extension_options(const cli_args *args, const char *extension)
{
    for (size_t i = 0; i < args->n_extensions; i++)
        if (strcmp(args->extensions[i].extension, extension) == 0)
            return args->extensions[i].options;
    return NULL;
}

/* host/cli/cmd_diagnose.c — `gufo diagnose`: what was compiled in, and what it runs on.
 *
 * A bug report should say exactly what ran, so this lists every compiled-in
 * extension (available or not, with the reason), every provider and option
 * it declares, and the system the runtime sees. A provider is "built" when its
 * library was built and loaded, and "usable here" when it can also run on the
 * device this machine has: both, with the reason, because a GPU provider can
 * be built on a machine whose GPU is unusable. The device is the one cli/main.c
 * queried at start-up (gufo_registry_device_facts()); nothing here asks again.
 *
 * JSON output (--json) is one object:
 *
 *   {
 *     "gufo": "0.1.0",                       Gufo's version
 *     "api_version": "0.1.1",                extension API this binary was compiled against
 *     "runtime_api_version": "0.1.1",        extension API of the loaded gufo_ext_runtime
 *     "extensions": [                        present unless --section system
 *       {
 *         "name": "langid", "version": "0.1.0", "description": "...",
 *         "origin": "official" | "community",
 *         "source_dir": "/abs/path",          where the build found it
 *         "api_version": ">= 0.1.1",          the manifest's requirement, as written
 *         "available": true, "reason": null,  reason is a string when unavailable
 *         "providers": [
 *           {"id": "...", "capability": "decisions", "keys": ["gguf:..."],
 *            "target": "...",
 *            "built": true,                  its library was built and it loaded
 *            "usable_here": false,           built, and it can run on this machine's device
 *            "available": false,             built and usable here
 *            "reason": "no usable GPU: ...", why not available (not built, or not usable here)
 *            "speculative": ["mtp"]}
 *         ],
 *         "options": [
 *           {"name": "...", "type": "string|int|float|bool|path",
 *            "commands": ["prompt", "serve"], "help": "...",
 *            "default": "text" | null, "allowed_values": ["..."] | null}
 *         ]
 *       }
 *     ],
 *     "system": {                            present unless --section extensions
 *       "gufo": "0.1.0", "api_version": "0.1.1", "runtime_api_version": "0.1.1",
 *       "cpu_count": 16,
 *       "device": {"backend": "cuda|hip|none", "available": true, "error": null,
 *                  "name": "...", "arch": "sm_90", "total_bytes": 0, "free_bytes": 0,
 *                  "driver_version": 0, "device_count": 0},
 *       "gpu_kernels": [                     GPU code compiled into this binary
 *         {"extension": "qwen", "language": "CUDA", "architectures": ["90"],
 *          "compiler": "13.0.88"}
 *       ]
 *     }
 *   }
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <gufo/host/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/host/registry.h>

#include "cli/command.h"
#include "run/report.h"
#include "cli/version_info.h"

/* What host/CMakeLists.txt learnt from the build: "ext:LANGUAGE ..." for every
 * extension that compiled GPU code, and each language's architectures
 * (comma-separated) and compiler version. A build without GPU code has none. */
#ifndef GUFO_DIAGNOSE_GPU_BUILDS
#  define GUFO_DIAGNOSE_GPU_BUILDS ""
#endif
#ifndef GUFO_DIAGNOSE_CUDA_ARCHITECTURES
#  define GUFO_DIAGNOSE_CUDA_ARCHITECTURES ""
#endif
#ifndef GUFO_DIAGNOSE_CUDA_COMPILER
#  define GUFO_DIAGNOSE_CUDA_COMPILER ""
#endif
#ifndef GUFO_DIAGNOSE_HIP_ARCHITECTURES
#  define GUFO_DIAGNOSE_HIP_ARCHITECTURES ""
#endif
#ifndef GUFO_DIAGNOSE_HIP_COMPILER
#  define GUFO_DIAGNOSE_HIP_COMPILER ""
#endif

/* One extension's GPU code: which language, for which architectures. */
typedef struct gpu_build {
    char extension[64];
    char language[8];
    const char *architectures; /* comma-separated, static */
    const char *compiler;      /* static */
} gpu_build;

/* Splits GUFO_DIAGNOSE_GPU_BUILDS; returns how many entries it filled. */
static size_t gpu_builds(gpu_build *out, size_t cap)
{
    const char *p = GUFO_DIAGNOSE_GPU_BUILDS;
    size_t n = 0;
    while (*p && n < cap) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        const char *colon = memchr(p, ':', len);
        if (len && colon) {
            gpu_build *b = &out[n++];
            snprintf(b->extension, sizeof b->extension, "%.*s", (int)(colon - p), p);
            snprintf(b->language, sizeof b->language, "%.*s", (int)(p + len - colon - 1), colon + 1);
            const bool cuda = strcmp(b->language, "CUDA") == 0;
            b->architectures = cuda ? GUFO_DIAGNOSE_CUDA_ARCHITECTURES : GUFO_DIAGNOSE_HIP_ARCHITECTURES;
            b->compiler = cuda ? GUFO_DIAGNOSE_CUDA_COMPILER : GUFO_DIAGNOSE_HIP_COMPILER;
        }
        p += len;
    }
    return n;
}

#define MAX_GPU_BUILDS 64

static const char *const section_choices[] = {"all", "extensions", "system", NULL};

static const cli_option diagnose_options[] = {
    {.name = "section", .type = CLI_CHOICE, .metavar = "NAME", .help = "What to show.",
     .default_value = "all", .choices = section_choices},
    {.name = "json", .type = CLI_FLAG, .help = "Print one JSON object instead of tables."},
};

static const cli_command_spec diagnose_cli = {
    .name = "diagnose",
    .usage = "gufo diagnose [--section extensions|system|all] [--json]",
    .summary = "Show the compiled-in extensions and the system (for bug reports).",
    .description = "Lists every extension compiled into this binary with its version, origin, source "
                   "directory and required API version, each provider with its capability, keys, whether it "
                   "was built and whether it is usable on this machine's device (and why not), and the options "
                   "each extension declares; then "
                   "the Gufo and API versions, the runtime's device backend and the CPU count.",
    .options = diagnose_options,
    .n_options = sizeof diagnose_options / sizeof diagnose_options[0],
    .manifest_command = 0,
    .takes_positional = false,
};

static const char *origin_name(gufo_origin origin)
{
    return origin == GUFO_ORIGIN_OFFICIAL ? "official" : "community";
}

static const char *capability_name(gufo_capability capability)
{
    const char *name = gufo_capability_name(capability);
    return name ? name : "unknown";
}

static long cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* ---- text --------------------------------------------------------------- */

static void format_bytes(uint64_t bytes, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.1f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

static void join_strings(const char *const *items, size_t n, const char *empty, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", items[i]);
    if (n == 0)
        snprintf(buf, cap, "%s", empty);
}

static void format_option_commands(uint32_t bits, char *buf, size_t cap)
{
    static const struct { uint32_t bit; const char *name; } all[] = {
        {GUFO_COMMAND_SERVE, "serve"}, {GUFO_COMMAND_PROMPT, "prompt"},
        {GUFO_COMMAND_CHAT, "chat"}, {GUFO_COMMAND_BENCH, "bench"},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof all / sizeof all[0] && used < cap; i++)
        if (bits & all[i].bit)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", all[i].name);
}

static void print_provider_table(const gufo_registry *registry, const char *extension)
{
    /* Column widths over this extension's providers, headers included. */
    int w_id = 2, w_cap = 10, w_keys = 4, w_target = 6, w_spec = 11;
    size_t n = gufo_registry_provider_count(registry);
    size_t count = 0;
    char keys[512], spec[256];
    for (size_t i = 0; i < n; i++) {
        gufo_provider_info p;
        if (gufo_registry_provider_at(registry, i, &p) != GUFO_OK || strcmp(p.extension, extension) != 0)
            continue;
        count++;
        join_strings(p.decl->keys, p.decl->n_keys, "-", keys, sizeof keys);
        join_strings(p.decl->speculative, p.decl->n_speculative, "-", spec, sizeof spec);
        int l;
        if ((l = (int)strlen(p.decl->id)) > w_id) w_id = l;
        if ((l = (int)strlen(capability_name(p.decl->capability))) > w_cap) w_cap = l;
        if ((l = (int)strlen(keys)) > w_keys) w_keys = l;
        if ((l = (int)strlen(p.decl->target ? p.decl->target : "-")) > w_target) w_target = l;
        if ((l = (int)strlen(spec)) > w_spec) w_spec = l;
    }
    if (count == 0) {
        printf("    providers    none\n");
        return;
    }
    printf("    providers\n      %-*s  %-*s  %-*s  %-*s  %-*s  %-5s  %s\n", w_id, "ID", w_cap, "CAPABILITY", w_keys,
           "KEYS", w_target, "TARGET", w_spec, "SPECULATIVE", "BUILT", "USABLE HERE");
    for (size_t i = 0; i < n; i++) {
        gufo_provider_info p;
        if (gufo_registry_provider_at(registry, i, &p) != GUFO_OK || strcmp(p.extension, extension) != 0)
            continue;
        join_strings(p.decl->keys, p.decl->n_keys, "-", keys, sizeof keys);
        join_strings(p.decl->speculative, p.decl->n_speculative, "-", spec, sizeof spec);
        bool built = false, usable = false;
        const char *why = "";
        gufo_registry_provider_usable(registry, i, &built, &usable, &why);
        /* Not built: the reason fills the rest of the line ("usable here" does not apply). */
        char state[GUFO_ERROR_MESSAGE_MAX + 16];
        if (!built)
            snprintf(state, sizeof state, "no: %s", why);
        else
            snprintf(state, sizeof state, "%-5s  %s%s", "yes", usable ? "yes" : "no: ", usable ? "" : why);
        printf("      %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w_id, p.decl->id, w_cap, capability_name(p.decl->capability),
               w_keys, keys, w_target, p.decl->target ? p.decl->target : "-", w_spec, spec, state);
    }
}

static void print_options(const gufo_extension_decl *d)
{
    if (d->n_options == 0) {
        printf("    options      none\n");
        return;
    }
    int w_name = 4, w_type = 4, w_cmd = 8, w_def = 7;
    char commands[64];
    for (size_t i = 0; i < d->n_options; i++) {
        const gufo_option_decl *o = &d->options[i];
        format_option_commands(o->commands, commands, sizeof commands);
        int l;
        if ((l = (int)strlen(o->name) + 2) > w_name) w_name = l;
        if ((l = (int)strlen(cli_option_type_name(o->type))) > w_type) w_type = l;
        if ((l = (int)strlen(commands)) > w_cmd) w_cmd = l;
        if ((l = (int)strlen(o->default_value ? o->default_value : "-")) > w_def) w_def = l;
    }
    printf("    options\n      %-*s  %-*s  %-*s  %-*s  %s\n", w_name, "NAME", w_type, "TYPE", w_cmd, "COMMANDS",
           w_def, "DEFAULT", "HELP");
    for (size_t i = 0; i < d->n_options; i++) {
        const gufo_option_decl *o = &d->options[i];
        format_option_commands(o->commands, commands, sizeof commands);
        char allowed[512] = "";
        if (o->allowed_values && o->n_allowed_values) {
            char list[480];
            join_strings(o->allowed_values, o->n_allowed_values, "", list, sizeof list);
            snprintf(allowed, sizeof allowed, " (one of: %s)", list);
        }
        printf("      --%-*s  %-*s  %-*s  %-*s  %s%s\n", w_name - 2, o->name, w_type, cli_option_type_name(o->type),
               w_cmd, commands, w_def, o->default_value ? o->default_value : "-", o->help ? o->help : "", allowed);
    }
}

static void print_extensions_text(const gufo_registry *registry)
{
    size_t n = gufo_registry_extension_count(registry);
    printf("Extensions (%zu compiled in)\n", n);
    if (n == 0)
        printf("  none: this gufo was built without extensions, so it cannot run any model\n");
    for (size_t i = 0; i < n; i++) {
        gufo_extension_info e;
        if (gufo_registry_extension_at(registry, i, &e) != GUFO_OK)
            continue;
        const gufo_extension_decl *d = e.decl;
        printf("\n  %s %s  %s  %s%s%s\n", d->name, d->version, origin_name(d->origin),
               e.available ? "available" : "unavailable", e.available ? "" : ": ", e.available ? "" : e.reason);
        if (d->description && d->description[0])
            printf("    description  %s\n", d->description);
        printf("    source       %s\n", d->source_dir ? d->source_dir : "-");
        printf("    API          %s\n", d->api_requirement ? d->api_requirement : "-");
        print_provider_table(registry, d->name);
        print_options(d);
    }
}

/* The device as cli/main.c found it at start-up; a host that gave the registry no
 * facts (none in this binary) gets them queried here, once. */
static void device_facts(const gufo_registry *registry, gufo_device_facts *facts)
{
    memset(facts, 0, sizeof *facts);
    facts->struct_size = sizeof *facts;
    if (gufo_registry_device_facts(registry, facts, NULL) != GUFO_OK)
        (void)gufo_device_facts_query(facts, NULL);
}

static void print_system_text(const gufo_registry *registry)
{
    printf("System\n");
    printf("  gufo             %s\n", host_gufo_version());
    printf("  extension API    %s (runtime %s)\n", host_api_version_built(), host_api_version_runtime());
    gufo_device_facts facts;
    device_facts(registry, &facts);
    const gufo_device_info dev = facts.info;
    const gufo_status st = facts.status;
    printf("  device backend   %s\n", dev.backend ? dev.backend : "none");
    if (st != GUFO_OK) {
        printf("  device           unusable: %s\n", facts.detail[0] ? facts.detail : gufo_status_str(st));
    } else if (dev.device_count > 0 && dev.name[0]) {
        char total[32], free_b[32];
        format_bytes(dev.total_bytes, total, sizeof total);
        format_bytes(dev.free_bytes, free_b, sizeof free_b);
        printf("  device           %s (%s), %s total, %s free, driver %d, %d device(s)\n", dev.name,
               dev.arch[0] ? dev.arch : "?", total, free_b, dev.driver_version, dev.device_count);
    } else {
        printf("  device           none (CPU only)\n");
    }
    gpu_build builds[MAX_GPU_BUILDS];
    size_t n_builds = gpu_builds(builds, MAX_GPU_BUILDS);
    if (n_builds == 0)
        printf("  GPU kernels      none compiled in\n");
    for (size_t i = 0; i < n_builds; i++) {
        /* CUDA architectures print as the sm_NN names nvidia-smi users know. */
        char arches[256] = "";
        size_t used = 0;
        const bool cuda = strcmp(builds[i].language, "CUDA") == 0;
        for (const char *a = builds[i].architectures; *a && used < sizeof arches;) {
            size_t len = strcspn(a, ",");
            used += (size_t)snprintf(arches + used, sizeof arches - used, "%s%s%.*s", used ? ", " : "",
                                     cuda ? "sm_" : "", (int)len, a);
            a += len + (a[len] == ',');
        }
        printf("  %-16s %s: %s for %s%s%s\n", i ? "" : "GPU kernels", builds[i].extension, builds[i].language,
               arches[0] ? arches : "the compiler's default architectures", builds[i].compiler[0] ? ", compiler " : "",
               builds[i].compiler);
    }
    printf("  CPUs             %ld\n", cpu_count());
}

/* ---- JSON --------------------------------------------------------------- */

static void add_string_or_null(cJSON *obj, const char *key, const char *value)
{
    if (value)
        cJSON_AddStringToObject(obj, key, value);
    else
        cJSON_AddNullToObject(obj, key);
}

static cJSON *string_array(const char *const *items, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(items[i]));
    return arr;
}

static cJSON *provider_json(const gufo_registry *registry, size_t index, const gufo_provider_info *p)
{
    bool built = false, usable = false;
    const char *why = "";
    gufo_registry_provider_usable(registry, index, &built, &usable, &why);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->decl->id);
    cJSON_AddStringToObject(o, "capability", capability_name(p->decl->capability));
    cJSON_AddItemToObject(o, "keys", string_array(p->decl->keys, p->decl->n_keys));
    add_string_or_null(o, "target", p->decl->target);
    cJSON_AddBoolToObject(o, "built", built);
    cJSON_AddBoolToObject(o, "usable_here", usable);
    cJSON_AddBoolToObject(o, "available", usable);
    add_string_or_null(o, "reason", usable ? NULL : why);
    cJSON_AddItemToObject(o, "speculative", string_array(p->decl->speculative, p->decl->n_speculative));
    return o;
}

static cJSON *option_json(const gufo_option_decl *d)
{
    static const struct { uint32_t bit; const char *name; } all[] = {
        {GUFO_COMMAND_SERVE, "serve"}, {GUFO_COMMAND_PROMPT, "prompt"},
        {GUFO_COMMAND_CHAT, "chat"}, {GUFO_COMMAND_BENCH, "bench"},
    };
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "type", cli_option_type_name(d->type));
    cJSON *commands = cJSON_AddArrayToObject(o, "commands");
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (d->commands & all[i].bit)
            cJSON_AddItemToArray(commands, cJSON_CreateString(all[i].name));
    add_string_or_null(o, "help", d->help);
    add_string_or_null(o, "default", d->default_value);
    if (d->allowed_values && d->n_allowed_values)
        cJSON_AddItemToObject(o, "allowed_values", string_array(d->allowed_values, d->n_allowed_values));
    else
        cJSON_AddNullToObject(o, "allowed_values");
    return o;
}

static cJSON *extensions_json(const gufo_registry *registry)
{
    cJSON *arr = cJSON_CreateArray();
    size_t n = gufo_registry_extension_count(registry);
    size_t n_prov = gufo_registry_provider_count(registry);
    for (size_t i = 0; i < n; i++) {
        gufo_extension_info e;
        if (gufo_registry_extension_at(registry, i, &e) != GUFO_OK)
            continue;
        const gufo_extension_decl *d = e.decl;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->name);
        cJSON_AddStringToObject(o, "version", d->version);
        add_string_or_null(o, "description", d->description);
        cJSON_AddStringToObject(o, "origin", origin_name(d->origin));
        add_string_or_null(o, "source_dir", d->source_dir);
        add_string_or_null(o, "api_version", d->api_requirement);
        cJSON_AddBoolToObject(o, "available", e.available);
        add_string_or_null(o, "reason", e.available ? NULL : e.reason);
        cJSON *providers = cJSON_AddArrayToObject(o, "providers");
        for (size_t k = 0; k < n_prov; k++) {
            gufo_provider_info p;
            if (gufo_registry_provider_at(registry, k, &p) == GUFO_OK && strcmp(p.extension, d->name) == 0)
                cJSON_AddItemToArray(providers, provider_json(registry, k, &p));
        }
        cJSON *options = cJSON_AddArrayToObject(o, "options");
        for (size_t k = 0; k < d->n_options; k++)
            cJSON_AddItemToArray(options, option_json(&d->options[k]));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *system_json(const gufo_registry *registry)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gufo", host_gufo_version());
    cJSON_AddStringToObject(o, "api_version", host_api_version_built());
    cJSON_AddStringToObject(o, "runtime_api_version", host_api_version_runtime());
    cJSON_AddNumberToObject(o, "cpu_count", (double)cpu_count());
    gufo_device_facts facts;
    device_facts(registry, &facts);
    const gufo_device_info dev = facts.info;
    const gufo_status st = facts.status;
    cJSON *d = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(d, "backend", dev.backend ? dev.backend : "none");
    cJSON_AddBoolToObject(d, "available", st == GUFO_OK && dev.device_count > 0);
    add_string_or_null(d, "error", st == GUFO_OK ? NULL : (facts.detail[0] ? facts.detail : gufo_status_str(st)));
    cJSON_AddStringToObject(d, "name", dev.name);
    cJSON_AddStringToObject(d, "arch", dev.arch);
    cJSON_AddNumberToObject(d, "total_bytes", (double)dev.total_bytes);
    cJSON_AddNumberToObject(d, "free_bytes", (double)dev.free_bytes);
    cJSON_AddNumberToObject(d, "driver_version", dev.driver_version);
    cJSON_AddNumberToObject(d, "device_count", dev.device_count);
    cJSON *kernels = cJSON_AddArrayToObject(o, "gpu_kernels");
    gpu_build builds[MAX_GPU_BUILDS];
    size_t n_builds = gpu_builds(builds, MAX_GPU_BUILDS);
    for (size_t i = 0; i < n_builds; i++) {
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "extension", builds[i].extension);
        cJSON_AddStringToObject(k, "language", builds[i].language);
        cJSON *arches = cJSON_AddArrayToObject(k, "architectures");
        for (const char *a = builds[i].architectures; *a;) {
            size_t len = strcspn(a, ",");
            char arch[32];
            snprintf(arch, sizeof arch, "%.*s", (int)len, a);
            cJSON_AddItemToArray(arches, cJSON_CreateString(arch));
            a += len + (a[len] == ',');
        }
        cJSON_AddStringToObject(k, "compiler", builds[i].compiler);
        cJSON_AddItemToArray(kernels, k);
    }
    return o;
}

static int print_json(const gufo_registry *registry, bool extensions, bool system)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        host_error("out of memory building the diagnose JSON");
        return HOST_EXIT_FAILURE;
    }
    cJSON_AddStringToObject(root, "gufo", host_gufo_version());
    cJSON_AddStringToObject(root, "api_version", host_api_version_built());
    cJSON_AddStringToObject(root, "runtime_api_version", host_api_version_runtime());
    if (extensions)
        cJSON_AddItemToObject(root, "extensions", extensions_json(registry));
    if (system)
        cJSON_AddItemToObject(root, "system", system_json(registry));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        host_error("out of memory printing the diagnose JSON");
        return HOST_EXIT_FAILURE;
    }
    puts(text);
    cJSON_free(text);
    return HOST_EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

static int run_diagnose(const host_context *ctx, const cli_args *args)
{
    const char *section = cli_args_string(args, "section");
    bool extensions = strcmp(section, "extensions") == 0 || strcmp(section, "all") == 0;
    bool system = strcmp(section, "system") == 0 || strcmp(section, "all") == 0;
    if (cli_args_flag(args, "json"))
        return print_json(ctx->registry, extensions, system);
    if (extensions)
        print_extensions_text(ctx->registry);
    if (extensions && system)
        putchar('\n');
    if (system)
        print_system_text(ctx->registry);
    return fflush(stdout) == 0 ? HOST_EXIT_OK : HOST_EXIT_FAILURE;
}

const host_command host_cmd_diagnose = {
    .cli = &diagnose_cli,
    .needs_registry = true,
    .run = run_diagnose,
};

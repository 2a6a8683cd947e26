/* main.c — gufo_conformance: runs the conformance suites on compiled-in providers.
 *
 *   gufo_conformance [--extension NAME]... [--provider ID]... [--suite NAME]...
 *                    [--report FILE.json] [--summary FILE.txt] [--work-dir DIR]
 *                    [--threads N] [--list]
 *
 * Without --extension or --provider every provider in the registry runs; without
 * --suite every suite that applies to the provider's capability. Exit status
 * (docs/conformance.md, "Outcomes, skips and exit status"):
 *   1  a case failed;
 *   0  no case failed, at least one passed, and every case that applies to
 *      the provider ran: the only skips are cases that do not apply to it;
 *   77 nothing failed, but a case that applies could not run here (no
 *      artifact, no reference data, no usable GPU, ...) or nothing ran at
 *      all: CTest shows the test as skipped, never as passed, and the last
 *      line says which cases were skipped and why;
 *   2  a usage or set-up error.
 *
 * The registry is the generated one of this executable (gufo_add_registry), so
 * the driver runs whatever extensions the build pulled in — from Gufo's tree,
 * GUFO_EXTENSION_DIRS, or an installed SDK's standalone build.
 */
#define _POSIX_C_SOURCE 200809L

#include "conformance.h"
#include "report_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gufo_registry_populate.h>
#include <gufo/host/memory.h>
#include <gufo/host/options.h>
#include <gufo/host/registry.h>

#ifndef GUFO_CONFORMANCE_GUFO_VERSION
#define GUFO_CONFORMANCE_GUFO_VERSION "unknown"
#endif
#ifndef GUFO_CONFORMANCE_EXTENSIONS_BUILD_DIR
#define GUFO_CONFORMANCE_EXTENSIONS_BUILD_DIR "gufo_extensions"
#endif
#ifndef GUFO_CONFORMANCE_WORK_DIR
#define GUFO_CONFORMANCE_WORK_DIR "conformance-work"
#endif

const conf_suite conf_suites[] = {
    {"configuration", "registered facts equal the manifest; the probe reads metadata only and declines with reasons",
     0, conf_suite_configuration},
    {"tokenizer", "round trip, special tokens, streaming detokenization, reference vectors",
     CONF_CAP(GUFO_CAPABILITY_TEXT_GENERATION), conf_suite_tokenizer},
    {"numerics", "outputs against the extension's golden files; providers of one extension agree",
     CONF_CAP(GUFO_CAPABILITY_TEXT_GENERATION) | CONF_CAP(GUFO_CAPABILITY_DECISIONS), conf_suite_numerics},
    {"isolation", "interleaved sessions (or batched inputs) give what solo runs give",
     CONF_CAP(GUFO_CAPABILITY_TEXT_GENERATION) | CONF_CAP(GUFO_CAPABILITY_DECISIONS), conf_suite_isolation},
    {"streaming", "streamed output, cancellation mid-prefill and mid-decode, resources returned",
     CONF_CAP(GUFO_CAPABILITY_TEXT_GENERATION) | CONF_CAP(GUFO_CAPABILITY_DECISIONS), conf_suite_streaming},
    {"cache", "truncate, snapshot and restore, then continuation equals a fresh run",
     CONF_CAP(GUFO_CAPABILITY_TEXT_GENERATION), conf_suite_cache},
    {"memory", "allocations are counted, stay inside the budget, too small a budget fails cleanly", 0,
     conf_suite_memory},
    {"bad_artifacts", "truncated files, missing tensors, wrong shapes and unsupported types are refused cleanly", 0,
     conf_suite_bad_artifacts},
};
const size_t conf_suite_count = sizeof conf_suites / sizeof conf_suites[0];

typedef struct args {
    const char **extensions, **providers, **suites;
    size_t n_extensions, n_providers, n_suites;
    const char *report, *summary, *work_dir, *build_dir;
    uint32_t threads;
    bool list;
} args;

static void usage(FILE *out)
{
    fprintf(out, "usage: gufo_conformance [--extension NAME]... [--provider ID]... [--suite NAME]...\n"
                 "                        [--report FILE.json] [--summary FILE.txt] [--work-dir DIR]\n"
                 "                        [--extensions-build-dir DIR] [--threads N] [--list]\n"
                 "suites:");
    for (size_t i = 0; i < conf_suite_count; i++) fprintf(out, " %s", conf_suites[i].name);
    fprintf(out, "\n");
}

static bool push(const char ***list, size_t *n, const char *value)
{
    const char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l) return false;
    l[(*n)++] = value;
    *list = l;
    return true;
}

static bool listed(const char *const *list, size_t n, const char *value)
{
    if (n == 0) return true;
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], value) == 0) return true;
    return false;
}

static void args_free(args *a)
{
    free(a->extensions);
    free(a->providers);
    free(a->suites);
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->work_dir = GUFO_CONFORMANCE_WORK_DIR;
    a->build_dir = GUFO_CONFORMANCE_EXTENSIONS_BUILD_DIR;
    a->threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(arg, "--list") == 0) { a->list = true; continue; }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            args_free(a);
            exit(0);
        }
        if (!value) { fprintf(stderr, "gufo_conformance: %s needs a value\n", arg); return 2; }
        if (strcmp(arg, "--extension") == 0) ok = push(&a->extensions, &a->n_extensions, value);
        else if (strcmp(arg, "--provider") == 0) ok = push(&a->providers, &a->n_providers, value);
        else if (strcmp(arg, "--suite") == 0) ok = push(&a->suites, &a->n_suites, value);
        else if (strcmp(arg, "--report") == 0) a->report = value;
        else if (strcmp(arg, "--summary") == 0) a->summary = value;
        else if (strcmp(arg, "--work-dir") == 0) a->work_dir = value;
        else if (strcmp(arg, "--extensions-build-dir") == 0) a->build_dir = value;
        else if (strcmp(arg, "--threads") == 0) a->threads = (uint32_t)strtoul(value, NULL, 10);
        else { fprintf(stderr, "gufo_conformance: unknown argument '%s'\n", arg); usage(stderr); return 2; }
        if (!ok) { fprintf(stderr, "gufo_conformance: out of memory\n"); return 2; }
        i++;
    }
    for (size_t i = 0; i < a->n_suites; i++) {
        bool known = false;
        for (size_t k = 0; k < conf_suite_count; k++) known |= strcmp(conf_suites[k].name, a->suites[i]) == 0;
        if (!known) { fprintf(stderr, "gufo_conformance: unknown suite '%s'\n", a->suites[i]); usage(stderr); return 2; }
    }
    if (a->threads == 0) a->threads = 1;
    return 0;
}

static int make_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static char *read_text(const char *path, char *why, size_t why_cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "%s: %s", path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        snprintf(why, why_cap, "%s: cannot read", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static cJSON *read_json(const char *path, char **error)
{
    char why[600];
    char *text = read_text(path, why, sizeof why);
    if (!text) {
        *error = strdup(why);
        return NULL;
    }
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc) {
        snprintf(why, sizeof why, "%s is not valid JSON", path);
        *error = strdup(why);
    }
    return doc;
}

static char *join(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

/* The manifest's conformance artifacts, resolved against the extension's source and build directories. */
static void load_artifacts(conf_ctx *ctx, const char *build_dir)
{
    const char *source_dir = ctx->extension.decl->source_dir;
    char *manifest_path = join(source_dir, "extension.json");
    ctx->manifest = read_json(manifest_path, &ctx->manifest_error);
    free(manifest_path);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(ctx->manifest, "conformance");
    size_t n = (size_t)cJSON_GetArraySize(list);
    ctx->artifacts = calloc(n ? n : 1, sizeof *ctx->artifacts);
    if (!ctx->artifacts) return;
    char *ext_build = join(build_dir, ctx->extension.decl->name);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        conf_artifact *a = &ctx->artifacts[ctx->n_artifacts++];
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "path"));
        bool generated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "generated"));
        a->path = join(generated ? ext_build : source_dir, path ? path : "");
        a->generated = generated;
        const char *ref = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "reference"));
        if (ref) {
            a->reference_path = join(source_dir, ref);
            a->reference = read_json(a->reference_path, &a->reference_error);
        }
    }
    free(ext_build);
}

/* The first declared artifact the provider accepts; otherwise why not. */
static void choose_artifact(conf_ctx *ctx)
{
    char why[2048] = "";
    size_t used = 0;
    if (!ctx->provider.available) {
        snprintf(why, sizeof why, "the provider is unavailable: %s", ctx->provider.reason);
    } else if (ctx->n_artifacts == 0) {
        snprintf(why, sizeof why, "%s", ctx->manifest ? "the manifest declares no conformance artifacts "
                                                       "(\"conformance\": [...])"
                                                     : ctx->manifest_error);
    }
    for (size_t i = 0; i < ctx->n_artifacts && ctx->provider.available; i++) {
        gufo_artifact *art = NULL;
        gufo_error err = {0};
        gufo_probe_result probe = {0};
        if (gufo_registry_open_artifact(ctx->registry, ctx->artifacts[i].path, &art, &err) != GUFO_OK) {
            used += (size_t)snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", err.message);
        } else if (ctx->provider.provider->probe(ctx->provider.provider->userdata, art, &probe) == GUFO_OK &&
                   probe.accept) {
            gufo_artifact_close(art);
            ctx->artifact = &ctx->artifacts[i];
            return;
        } else {
            used += (size_t)snprintf(why + used, sizeof why - used, "%s%s: probe declined: %s", used ? "; " : "",
                                     ctx->artifacts[i].path, probe.reason);
        }
        gufo_artifact_close(art);
        if (used >= sizeof why) used = sizeof why - 1;
    }
    ctx->artifact_why_none = strdup(why);
}

/* The extension's declared options with their defaults, as the host hands them to create(). */
static gufo_options *default_options(const gufo_extension_decl *decl)
{
    gufo_options *options = NULL;
    if (gufo_options_create(&options) != GUFO_OK) return NULL;
    for (size_t i = 0; i < decl->n_options; i++) {
        const gufo_option_decl *o = &decl->options[i];
        gufo_error err = {0};
        if (o->default_value) gufo_options_set(options, o->name, o->type, o->default_value, &err);
    }
    return options;
}

static void ctx_free(conf_ctx *ctx)
{
    for (size_t i = 0; i < ctx->n_artifacts; i++) {
        free(ctx->artifacts[i].path);
        free(ctx->artifacts[i].reference_path);
        free(ctx->artifacts[i].reference_error);
        cJSON_Delete(ctx->artifacts[i].reference);
    }
    free(ctx->artifacts);
    free(ctx->artifact_why_none);
    free(ctx->manifest_error);
    cJSON_Delete(ctx->manifest);
    gufo_options_destroy(ctx->options);
}

/* The run's verdict as an exit status (see the top of this file), and its
 * last line, which CTest keeps in the output of a skipped test: the counts,
 * the rule, and the skipped cases that apply with the first one's reason. */
static int verdict(const conf_provider_run *runs, size_t n_runs)
{
    size_t totals[3] = {0, 0, 0}, not_applicable = 0;
    const conf_result *first = NULL;
    for (size_t i = 0; i < n_runs; i++) {
        size_t c[3];
        conf_report_count(runs[i].report, NULL, c);
        for (int k = 0; k < 3; k++) totals[k] += c[k];
        not_applicable += conf_report_count_not_applicable(runs[i].report, NULL);
        for (size_t k = 0; k < runs[i].report->n_results; k++) {
            const conf_result *r = &runs[i].report->results[k];
            if (r->outcome == CONF_SKIPPED && !r->not_applicable && !first) first = r;
        }
    }
    size_t could_not_run = totals[CONF_SKIPPED] - not_applicable;
    char na[64] = "";
    if (not_applicable) snprintf(na, sizeof na, ", %zu not applicable", not_applicable);
    if (totals[CONF_FAILED]) {
        printf("conformance: FAILED: %zu failed, %zu passed, %zu could not run here%s\n", totals[CONF_FAILED],
               totals[CONF_PASSED], could_not_run, na);
        return 1;
    }
    if (totals[CONF_PASSED] && could_not_run == 0) {
        printf("conformance: PASSED: %zu passed%s\n", totals[CONF_PASSED], na);
        return 0;
    }
    if (!first) {
        printf("conformance: SKIPPED (exit 77): no case ran%s\n", na);
        return 77;
    }
    printf("conformance: SKIPPED (exit 77): %zu passed, %zu could not run here%s; a run passes only when every case "
           "that applies to the provider ran and passed. Not run:", totals[CONF_PASSED], could_not_run, na);
    for (size_t i = 0; i < n_runs; i++)
        for (size_t k = 0; k < runs[i].report->n_results; k++) {
            const conf_result *r = &runs[i].report->results[k];
            if (r->outcome == CONF_SKIPPED && !r->not_applicable) printf(" %s", r->name);
        }
    printf(". First reason: %s\n", first->detail);
    return 77;
}

static bool write_text_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

int main(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        args_free(&a); /* a usage error exits 2, with nothing left for the leak checker to report */
        return rc;
    }

    gufo_registry *registry = NULL;
    gufo_error err = {0};
    /* The device is queried once, here, as a host does: probes read these facts from the artifacts. */
    gufo_device_facts device = {.struct_size = sizeof device};
    if (gufo_registry_create(&registry, &err) != GUFO_OK || gufo_registry_populate(registry, &err) != GUFO_OK ||
        gufo_device_facts_query(&device, &err) != GUFO_OK ||
        gufo_registry_set_device_facts(registry, &device, &err) != GUFO_OK) {
        fprintf(stderr, "gufo_conformance: cannot load the registry: %s\n", err.message);
        gufo_registry_destroy(registry);
        args_free(&a);
        return 2;
    }

    size_t n_providers = gufo_registry_provider_count(registry);
    if (a.list) {
        for (size_t i = 0; i < n_providers; i++) {
            gufo_provider_info p;
            gufo_registry_provider_at(registry, i, &p);
            printf("%s %s %s%s%s\n", p.extension, p.decl->id, gufo_capability_name(p.decl->capability),
                   p.available ? "" : " unavailable: ", p.available ? "" : p.reason);
        }
        gufo_registry_destroy(registry);
        args_free(&a);
        return 0;
    }

    conf_run_info info;
    conf_run_info_fill(&info, GUFO_CONFORMANCE_GUFO_VERSION, a.threads);
    conf_report *reports = calloc(n_providers ? n_providers : 1, sizeof *reports);
    conf_provider_run *runs = calloc(n_providers ? n_providers : 1, sizeof *runs);
    conf_ctx *ctxs = calloc(n_providers ? n_providers : 1, sizeof *ctxs);
    if (!reports || !runs || !ctxs) {
        fprintf(stderr, "gufo_conformance: out of memory\n");
        return 2;
    }
    size_t n_runs = 0;
    for (size_t i = 0; i < n_providers; i++) {
        gufo_provider_info p;
        gufo_registry_provider_at(registry, i, &p);
        if (!listed(a.extensions, a.n_extensions, p.extension) || !listed(a.providers, a.n_providers, p.decl->id))
            continue;
        conf_ctx *ctx = &ctxs[n_runs];
        ctx->registry = registry;
        ctx->provider = p;
        for (size_t e = 0; e < gufo_registry_extension_count(registry); e++) {
            gufo_extension_info ei;
            gufo_registry_extension_at(registry, e, &ei);
            if (strcmp(ei.decl->name, p.extension) == 0) ctx->extension = ei;
        }
        ctx->report = &reports[n_runs];
        ctx->n_threads = a.threads;
        ctx->options = default_options(ctx->extension.decl);
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", a.work_dir, p.decl->id);
        ctx->work_dir = strdup(sub);
        if (!ctx->work_dir || make_dirs(ctx->work_dir) != 0) {
            fprintf(stderr, "gufo_conformance: cannot create the work directory %s\n", sub);
            return 2;
        }
        load_artifacts(ctx, a.build_dir);
        choose_artifact(ctx);

        const char *capability = gufo_capability_name(p.decl->capability);
        printf("%s (%s, extension %s): artifact %s\n", p.decl->id, capability, p.extension,
               ctx->artifact ? ctx->artifact->path : "(none)");
        for (size_t s = 0; s < conf_suite_count; s++) {
            const conf_suite *suite = &conf_suites[s];
            if (!listed(a.suites, a.n_suites, suite->name)) continue;
            ctx->suite = suite->name;
            if (!p.available) {
                conf_skip_case(ctx, "provider_available", "the provider is unavailable in this build: %s", p.reason);
                continue;
            }
            if (suite->capabilities && !(suite->capabilities & CONF_CAP(p.decl->capability))) {
                /* Text generation and decisions have their complete set of suites; for the other
                 * capabilities the capability-specific suites land with their first provider. */
                bool complete = p.decl->capability == GUFO_CAPABILITY_TEXT_GENERATION ||
                                p.decl->capability == GUFO_CAPABILITY_DECISIONS;
                if (complete)
                    conf_not_applicable_case(ctx, "capability", "the %s suite does not apply to %s providers",
                                             suite->name, capability);
                else
                    conf_not_applicable_case(ctx, "capability", "the %s suite has no cases for %s providers yet: "
                                             "they come with the first official %s provider (docs/conformance.md)",
                                             suite->name, capability, capability);
                continue;
            }
            suite->run(ctx);
        }
        conf_provider_run *run = &runs[n_runs++];
        *run = (conf_provider_run){
            .extension = p.extension,
            .extension_version = ctx->extension.decl->version,
            .origin = ctx->extension.decl->origin == GUFO_ORIGIN_OFFICIAL ? "official" : "community",
            .api_requirement = ctx->extension.decl->api_requirement,
            .provider = p.decl->id,
            .capability = capability,
            .available = p.available,
            .reason = p.reason,
            .artifact = ctx->artifact ? ctx->artifact->path : NULL,
            .reference = ctx->artifact ? ctx->artifact->reference_path : NULL,
            .report = ctx->report,
        };
    }
    if (n_runs == 0) {
        fprintf(stderr, "gufo_conformance: no provider matches the --extension/--provider filters "
                        "(--list shows what is compiled in)\n");
        free(ctxs);
        free(reports);
        free(runs);
        args_free(&a);
        gufo_registry_destroy(registry);
        return 2;
    }

    /* Summaries on stdout (and in --summary), the JSON report in --report. */
    FILE *summary = a.summary ? fopen(a.summary, "w") : NULL;
    for (size_t i = 0; i < n_runs; i++) {
        printf("\n");
        conf_summary_print(stdout, &info, &runs[i]);
        if (summary) conf_summary_print(summary, &info, &runs[i]);
    }
    if (summary) fclose(summary);
    if (a.report) {
        cJSON *doc = conf_report_json(&info, runs, n_runs);
        char *text = doc ? cJSON_Print(doc) : NULL;
        if (!text || !write_text_file(a.report, text)) {
            fprintf(stderr, "gufo_conformance: cannot write the report %s\n", a.report);
            rc = 2;
        } else {
            printf("report: %s\n", a.report);
        }
        free(text);
        cJSON_Delete(doc);
    }

    int status = verdict(runs, n_runs);
    for (size_t i = 0; i < n_runs; i++) {
        ctx_free(&ctxs[i]);
        free((void *)ctxs[i].work_dir);
        conf_report_free(&reports[i]);
    }
    free(ctxs);
    free(reports);
    free(runs);
    args_free(&a);
    gufo_registry_destroy(registry);
    return rc != 0 ? rc : status;
}

/* harness.c — cases, the report's storage, and creating a model the way the host does. */
#define _POSIX_C_SOURCE 200809L

#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gufo/host/memory.h>
#include <gufo/host/registry.h>

static char *dup_or_die(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) {
        fprintf(stderr, "gufo_conformance: out of memory\n");
        abort();
    }
    return d;
}

const char *conf_outcome_name(conf_outcome outcome)
{
    switch (outcome) {
    case CONF_PASSED: return "passed";
    case CONF_FAILED: return "failed";
    default: return "skipped";
    }
}

void conf_report_add(conf_report *report, const char *name, conf_outcome outcome, bool not_applicable,
                     const char *detail, double seconds)
{
    if (report->n_results == report->cap_results) {
        size_t cap = report->cap_results ? 2 * report->cap_results : 32;
        conf_result *r = realloc(report->results, cap * sizeof *r);
        if (!r) {
            fprintf(stderr, "gufo_conformance: out of memory\n");
            abort();
        }
        report->results = r;
        report->cap_results = cap;
    }
    conf_result *r = &report->results[report->n_results++];
    r->name = dup_or_die(name);
    r->outcome = outcome;
    r->not_applicable = outcome == CONF_SKIPPED && not_applicable;
    r->detail = dup_or_die(detail);
    r->seconds = seconds;
}

void conf_report_count(const conf_report *report, const char *prefix, size_t counts[3])
{
    counts[0] = counts[1] = counts[2] = 0;
    for (size_t i = 0; i < report->n_results; i++)
        if (!prefix || strncmp(report->results[i].name, prefix, strlen(prefix)) == 0)
            counts[report->results[i].outcome]++;
}

size_t conf_report_count_not_applicable(const conf_report *report, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < report->n_results; i++)
        if (report->results[i].not_applicable &&
            (!prefix || strncmp(report->results[i].name, prefix, strlen(prefix)) == 0))
            n++;
    return n;
}

void conf_report_free(conf_report *report)
{
    for (size_t i = 0; i < report->n_results; i++) {
        free(report->results[i].name);
        free(report->results[i].detail);
    }
    free(report->results);
    memset(report, 0, sizeof *report);
}

double conf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- Cases ------------------------------------------------------------------ */

void conf_case_begin(conf_case *c, conf_ctx *ctx, const char *name)
{
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    snprintf(c->name, sizeof c->name, "%s.%s", ctx->suite, name);
    c->started = conf_now();
}

/* The first failure's text becomes the detail; later ones are only counted. */
static void note_failure(conf_case *c, const char *fmt, va_list ap)
{
    if (c->failures++ == 0) vsnprintf(c->detail, sizeof c->detail, fmt, ap);
}

void conf_case_fail(conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note_failure(c, fmt, ap);
    va_end(ap);
}

static void record(conf_case *c, conf_outcome outcome, bool not_applicable)
{
    conf_report_add(c->ctx->report, c->name, outcome, not_applicable, c->detail, conf_now() - c->started);
    const char *tag = outcome == CONF_PASSED ? "PASS" : outcome == CONF_FAILED ? "FAIL" : not_applicable ? "N/A" : "SKIP";
    printf("  %-4s %-52s %s\n", tag, c->name, c->detail);
    fflush(stdout);
}

/* The detail of a not-applicable skip: the prefix, then the reason. */
static void not_applicable_detail(conf_case *c, const char *fmt, va_list ap)
{
    size_t n = strlen(CONF_NOT_APPLICABLE_PREFIX);
    memcpy(c->detail, CONF_NOT_APPLICABLE_PREFIX, n + 1);
    vsnprintf(c->detail + n, sizeof c->detail - n, fmt, ap);
}

void conf_case_skip(conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    c->skipped = true;
    record(c, CONF_SKIPPED, false);
}

void conf_case_not_applicable(conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    not_applicable_detail(c, fmt, ap);
    va_end(ap);
    c->skipped = true;
    record(c, CONF_SKIPPED, true);
}

void conf_case_end(conf_case *c, const char *fmt, ...)
{
    if (c->failures > 1) {
        size_t len = strlen(c->detail);
        snprintf(c->detail + len, sizeof c->detail - len, " (and %d more failure(s))", c->failures - 1);
    }
    if (c->failures == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->detail, sizeof c->detail, fmt, ap);
        va_end(ap);
    }
    record(c, c->failures ? CONF_FAILED : CONF_PASSED, false);
}

void conf_case_abort(conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note_failure(c, fmt, ap);
    va_end(ap);
    conf_case_end(c, "-");
}

void conf_skip_case(conf_ctx *ctx, const char *name, const char *fmt, ...)
{
    conf_case c;
    conf_case_begin(&c, ctx, name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.detail, sizeof c.detail, fmt, ap);
    va_end(ap);
    record(&c, CONF_SKIPPED, false);
}

void conf_not_applicable_case(conf_ctx *ctx, const char *name, const char *fmt, ...)
{
    conf_case c;
    conf_case_begin(&c, ctx, name);
    va_list ap;
    va_start(ap, fmt);
    not_applicable_detail(&c, fmt, ap);
    va_end(ap);
    record(&c, CONF_SKIPPED, true);
}

bool conf_need_artifact(conf_case *c)
{
    return conf_need_artifact_for_all(c, NULL);
}

bool conf_need_artifact_for_all(conf_case *c, const char *const *later)
{
    conf_ctx *ctx = c->ctx;
    if (ctx->artifact) return false;
    const char *why = ctx->artifact_why_none ? ctx->artifact_why_none : "none";
    conf_case_skip(c, "no artifact to run on: %s", why);
    for (size_t i = 0; later && later[i]; i++) conf_skip_case(ctx, later[i], "no artifact to run on: %s", why);
    return true;
}

bool conf_model_loads(conf_ctx *ctx, conf_model *m, const char *const *later)
{
    conf_case c;
    conf_case_begin(&c, ctx, "model_loads");
    memset(m, 0, sizeof *m);
    if (conf_need_artifact_for_all(&c, later)) return false;
    gufo_error err = {0};
    if (conf_model_open(ctx, NULL, ctx->artifact->path, NULL, m, &err) != GUFO_OK) {
        conf_model_close(m);
        conf_case_abort(&c, "cannot create the model: %s", err.message);
        return false;
    }
    conf_case_end(&c, "created from %s", ctx->artifact->path);
    return true;
}

/* ---- Reference data ------------------------------------------------------------ */

const cJSON *conf_reference(const conf_ctx *ctx)
{
    return ctx->artifact ? ctx->artifact->reference : NULL;
}

const cJSON *conf_reference_entries(conf_case *c, const char *key, const char *what)
{
    const conf_artifact *a = c->ctx->artifact;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(conf_reference(c->ctx), key);
    if (cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0) return list;
    if (!a || !a->reference_path)
        conf_case_skip(c, "the extension ships no %s for this artifact: its manifest's \"conformance\" entry names no "
                       "\"reference\" file (docs/conformance.md, \"What an extension declares\")", what);
    else if (!a->reference)
        conf_case_skip(c, "no %s: the reference file does not read: %s", what,
                       a->reference_error ? a->reference_error : "?");
    else
        conf_case_skip(c, "the extension ships no %s for this artifact: %s has no \"%s\"", what, a->reference_path,
                       key);
    return NULL;
}

void conf_case_hint_reference(conf_case *c)
{
    const conf_artifact *a = c->ctx->artifact;
    if (!c->failures || !a || !a->reference_path) return;
    size_t len = strlen(c->detail);
    snprintf(c->detail + len, sizeof c->detail - len,
             " (if the model or its training data changed on purpose, regenerate %s with its generator)",
             a->reference_path);
}

double conf_tolerance(const conf_ctx *ctx, const char *key, double fallback)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(conf_reference(ctx), "tolerances");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, key);
    return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

bool conf_valid_utf8(const char *bytes, size_t len)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return false;
        if (len - i <= n) return false; /* the sequence runs past the end */
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

/* ---- Models -------------------------------------------------------------------- */

gufo_status conf_model_open(conf_ctx *ctx, const gufo_provider *provider, const char *path, const conf_budget *budget,
                            conf_model *out, gufo_error *err)
{
    memset(out, 0, sizeof *out);
    const gufo_provider *p = provider ? provider : ctx->provider.provider;
    out->provider = p;
    gufo_status st = gufo_registry_open_artifact(ctx->registry, path, &out->artifact, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "opening the artifact");
    gufo_probe_result probe = {0};
    st = p->probe(p->userdata, out->artifact, &probe);
    if (st != GUFO_OK || !probe.accept) {
        gufo_artifact_close(out->artifact);
        out->artifact = NULL;
        if (st != GUFO_OK) return gufo_error_set(err, st, "the probe failed: %s", gufo_status_name(st));
        return gufo_error_set(err, GUFO_E_DECLINED, "the probe declined: %s", probe.reason);
    }
    gufo_memory_limits limits = {.struct_size = sizeof limits, .host_bytes = budget ? budget->host : 0,
                                 .device_bytes = budget ? budget->device : 0};
    if ((st = gufo_memory_create(&limits, &out->memory, err)) != GUFO_OK) {
        gufo_artifact_close(out->artifact);
        out->artifact = NULL;
        return st;
    }
    gufo_model_params params = {
        .struct_size = sizeof params,
        .path = path,
        .artifact = out->artifact,
        .memory = out->memory,
        .options = ctx->options,
        .cancel = NULL,
        .n_threads = ctx->n_threads ? ctx->n_threads : 1,
    };
    gufo_error_clear(err);
    st = p->create(p->userdata, &params, &out->model, err);
    if (st == GUFO_OK && !out->model) st = gufo_error_set(err, GUFO_E_INTERNAL, "create succeeded without a model");
    if (st != GUFO_OK) {
        out->model = NULL;
        if (!err->message[0]) gufo_error_set(err, st, "create failed without a message");
        /* The pool is kept so the caller can check nothing stayed allocated. */
        return st;
    }
    return GUFO_OK;
}

uint64_t conf_memory_counted(const gufo_memory *memory)
{
    return gufo_memory_used(memory, GUFO_MEMORY_HOST) + gufo_memory_used(memory, GUFO_MEMORY_DEVICE);
}

uint64_t conf_model_close(conf_model *m)
{
    if (m->model) m->provider->destroy(m->model);
    m->model = NULL;
    uint64_t left = 0;
    if (m->memory) {
        left = conf_memory_counted(m->memory);
        gufo_memory_destroy(m->memory);
    }
    gufo_artifact_close(m->artifact);
    memset(m, 0, sizeof *m);
    return left;
}

/* report_write.c — the JSON report (schema/conformance-report.schema.json) and
 * the readable summary of one run. */
#define _POSIX_C_SOURCE 200809L

#include "report_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gufo/ext/version.h>

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
static void cpu_name(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t') colon++;
                snprintf(out, cap, "%s", colon);
                out[strcspn(out, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
}

void conf_run_info_fill(conf_run_info *info, const char *gufo_version, uint32_t threads)
{
    memset(info, 0, sizeof *info);
    info->gufo_version = gufo_version;
    info->api_version = gufo_ext_runtime_version(NULL, NULL);
    info->threads = threads;
    cpu_name(info->cpu, sizeof info->cpu);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    info->cpu_count = n > 0 ? (uint32_t)n : 1;
    info->device.struct_size = sizeof info->device;
    gufo_error err = {0};
    if (gufo_device_query(&info->device, &err) != GUFO_OK) {
        snprintf(info->device_error, sizeof info->device_error, "%s", err.message);
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(info->started, sizeof info->started, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *totals_json(const size_t counts[3])
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "passed", (double)counts[CONF_PASSED]);
    cJSON_AddNumberToObject(t, "failed", (double)counts[CONF_FAILED]);
    cJSON_AddNumberToObject(t, "skipped", (double)counts[CONF_SKIPPED]);
    return t;
}

cJSON *conf_report_json(const conf_run_info *info, const conf_provider_run *runs, size_t n_runs)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema", 1);
    cJSON_AddStringToObject(root, "kit", "gufo-conformance");
    cJSON_AddStringToObject(root, "gufo_version", info->gufo_version);
    cJSON_AddStringToObject(root, "api_version", info->api_version);
    cJSON_AddStringToObject(root, "started", info->started);
    cJSON *hw = cJSON_AddObjectToObject(root, "hardware");
    cJSON_AddStringToObject(hw, "cpu", info->cpu);
    cJSON_AddNumberToObject(hw, "cpu_count", info->cpu_count);
    cJSON_AddNumberToObject(hw, "threads", info->threads);
    cJSON *dev = cJSON_AddObjectToObject(hw, "device");
    cJSON_AddStringToObject(dev, "backend", info->device.backend ? info->device.backend : "none");
    cJSON_AddStringToObject(dev, "name", info->device.name);
    cJSON_AddStringToObject(dev, "arch", info->device.arch);
    cJSON_AddNumberToObject(dev, "total_bytes", (double)info->device.total_bytes);
    if (info->device_error[0]) cJSON_AddStringToObject(dev, "error", info->device_error);

    size_t all[3] = {0, 0, 0};
    cJSON *providers = cJSON_AddArrayToObject(root, "providers");
    for (size_t i = 0; i < n_runs; i++) {
        const conf_provider_run *r = &runs[i];
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToArray(providers, p);
        cJSON_AddStringToObject(p, "extension", r->extension);
        cJSON_AddStringToObject(p, "extension_version", r->extension_version);
        cJSON_AddStringToObject(p, "origin", r->origin);
        cJSON_AddStringToObject(p, "api_requirement", r->api_requirement);
        cJSON_AddStringToObject(p, "provider", r->provider);
        cJSON_AddStringToObject(p, "capability", r->capability);
        cJSON_AddBoolToObject(p, "available", r->available);
        if (!r->available) cJSON_AddStringToObject(p, "unavailable_reason", r->reason);
        if (r->artifact) cJSON_AddStringToObject(p, "artifact", r->artifact);
        else cJSON_AddNullToObject(p, "artifact");
        if (r->reference) cJSON_AddStringToObject(p, "reference", r->reference);
        else cJSON_AddNullToObject(p, "reference");
        cJSON *cases = cJSON_AddArrayToObject(p, "cases");
        for (size_t k = 0; k < r->report->n_results; k++) {
            const conf_result *res = &r->report->results[k];
            cJSON *c = cJSON_CreateObject();
            cJSON_AddItemToArray(cases, c);
            cJSON_AddStringToObject(c, "name", res->name);
            char suite[128];
            snprintf(suite, sizeof suite, "%s", res->name);
            suite[strcspn(suite, ".")] = '\0';
            cJSON_AddStringToObject(c, "suite", suite);
            cJSON_AddStringToObject(c, "outcome", conf_outcome_name(res->outcome));
            cJSON_AddStringToObject(c, "detail", res->detail);
            cJSON_AddNumberToObject(c, "seconds", res->seconds);
        }
        size_t counts[3];
        conf_report_count(r->report, NULL, counts);
        for (int k = 0; k < 3; k++) all[k] += counts[k];
        cJSON_AddItemToObject(p, "totals", totals_json(counts));
    }
    cJSON_AddItemToObject(root, "totals", totals_json(all));
    return root;
}

void conf_summary_print(FILE *out, const conf_run_info *info, const conf_provider_run *r)
{
    size_t counts[3];
    conf_report_count(r->report, NULL, counts);
    fprintf(out, "Conformance of %s (extension %s %s, %s, %s)\n", r->provider, r->extension, r->extension_version,
            r->origin, r->capability);
    /* A GPU backend compiled in but no usable device says so: "device: cuda" alone reads as "ran on a GPU". */
    fprintf(out, "  Gufo %s, extension API %s; %s, %u CPU(s), %u thread(s); device: %s%s%s%s%s\n", info->gufo_version,
            info->api_version, info->cpu, info->cpu_count, info->threads,
            info->device.backend ? info->device.backend : "none", info->device.name[0] ? " " : "",
            info->device.name, info->device_error[0] ? ", none usable: " : "", info->device_error);
    fprintf(out, "  artifact: %s\n", r->artifact ? r->artifact : "(none)");
    if (!r->available) fprintf(out, "  provider unavailable: %s\n", r->reason);
    /* Per suite, then the cases that did not pass, so the reader sees what to fix first. */
    char last[128] = "";
    for (size_t i = 0; i < r->report->n_results; i++) {
        char suite[128];
        snprintf(suite, sizeof suite, "%s", r->report->results[i].name);
        suite[strcspn(suite, ".")] = '\0';
        if (strcmp(suite, last) == 0) continue;
        snprintf(last, sizeof last, "%s", suite);
        char prefix[130];
        snprintf(prefix, sizeof prefix, "%s.", suite);
        size_t c[3];
        conf_report_count(r->report, prefix, c);
        size_t na = conf_report_count_not_applicable(r->report, prefix);
        fprintf(out, "  %-16s %zu passed, %zu failed, %zu skipped", suite, c[CONF_PASSED], c[CONF_FAILED],
                c[CONF_SKIPPED]);
        if (na) fprintf(out, " (%zu not applicable)", na);
        fprintf(out, "\n");
    }
    /* Failures first, then skips that leave something unchecked, then what does not apply. */
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < r->report->n_results; i++) {
            const conf_result *res = &r->report->results[i];
            int rank = res->outcome == CONF_FAILED ? 0 : res->outcome == CONF_SKIPPED ? (res->not_applicable ? 2 : 1)
                                                                                       : -1;
            if (rank == pass)
                fprintf(out, "  %s %s: %s\n", rank == 0 ? "FAILED " : rank == 1 ? "skipped" : "n/a    ", res->name,
                        res->detail);
        }
    size_t na = conf_report_count_not_applicable(r->report, NULL);
    fprintf(out, "  total: %zu passed, %zu failed, %zu skipped (skips are not passes", counts[CONF_PASSED],
            counts[CONF_FAILED], counts[CONF_SKIPPED]);
    if (na) fprintf(out, "; %zu of them not applicable to this provider", na);
    fprintf(out, ")\n");
}

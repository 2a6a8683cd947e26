/* report_write.h — what one conformance run reports: the JSON document
 * (schema/conformance-report.schema.json) and the readable summary per provider. */
#ifndef GUFO_CONFORMANCE_REPORT_WRITE_H
#define GUFO_CONFORMANCE_REPORT_WRITE_H

#include <stdio.h>

#include "conformance.h"

/** Where and with what the run happened. */
typedef struct conf_run_info {
    const char *gufo_version;
    const char *api_version;      /* of the runtime actually loaded */
    char cpu[256];
    uint32_t cpu_count, threads;
    gufo_device_info device;
    char device_error[sizeof(((gufo_error *)0)->message)];
    char started[32];             /* UTC, ISO 8601 */
} conf_run_info;

/** One provider's part of the run. Strings borrowed. */
typedef struct conf_provider_run {
    const char *extension, *extension_version, *origin, *api_requirement;
    const char *provider, *capability;
    bool available;
    const char *reason;           /* why unavailable */
    const char *artifact;         /* NULL when none */
    const char *reference;        /* NULL when none */
    const conf_report *report;
} conf_provider_run;

/** Fills the hardware, versions and start time. */
void conf_run_info_fill(conf_run_info *info, const char *gufo_version, uint32_t threads);

/** The report document (caller deletes it with cJSON_Delete). */
cJSON *conf_report_json(const conf_run_info *info, const conf_provider_run *runs, size_t n_runs);

/** The readable summary of one provider: per suite counts, then every case that did not pass. */
void conf_summary_print(FILE *out, const conf_run_info *info, const conf_provider_run *run);

#endif /* GUFO_CONFORMANCE_REPORT_WRITE_H */

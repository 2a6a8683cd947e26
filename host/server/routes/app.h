/* host/server/routes/app.h — what every route handler of `gufo serve` shares.
 *
 * cli/cmd_serve.c fills one srv_app at start-up, before the HTTP layer starts,
 * and the HTTP layer hands it to every handler as their `app`. Read-only from
 * then on except the id counter.
 */
#ifndef GUFO_HOST_SERVER_APP_H
#define GUFO_HOST_SERVER_APP_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <gufo/ext/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/counters.h"
#include "server/sched/scheduler.h"

typedef struct srv_app {
    const gufo_provider *provider;
    const gufo_text_generation_iface *tg; /* text generation models only, else NULL */
    gufo_model *model;
    srv_sched *sched;              /* text generation models only, else NULL */
    const char *model_id;          /* the name /v1/models lists and requests must use */
    uint32_t context_length;       /* per session */
    time_t created;                /* reported as the model's "created" */
    gufo_sampling_params defaults; /* sampling for fields a request leaves out */
    uint64_t request_timeout_ms;   /* deadline per request from submission (0 = none) -> 408 */
    atomic_ullong next_id;         /* for chatcmpl-/call_ ids */
    srv_counters *counters;        /* what GET /metrics shows (may be NULL: it shows zeros) */
    const gufo_memory *memory;     /* the model's pool, for GET /metrics (may be NULL) */
} srv_app;

#endif /* GUFO_HOST_SERVER_APP_H */

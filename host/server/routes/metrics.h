/* host/server/routes/metrics.h — what `gufo serve` counts, and GET /metrics.
 *
 * The HTTP layer counts requests (by route and status), requests in flight
 * and their durations; the scheduler counts tokens, jobs, time to first token
 * and how each decode step's time splits between the core (scheduling,
 * sampling bookkeeping, detokenizing, publishing text) and the provider's step
 * call. At scrape time the gauges (queue, sessions, retained sessions, model
 * memory, process RSS) are read fresh, and everything is written in the
 * Prometheus text exposition format 0.0.4, every family with # HELP and # TYPE.
 *
 * Threading: every recording function may be called from any thread (atomics
 * for counters, one lock for the labelled request counts and histograms).
 */
#ifndef GUFO_HOST_SERVER_METRICS_H
#define GUFO_HOST_SERVER_METRICS_H

#include <stdint.h>

#include <gufo/ext/memory.h>
#include <gufo/ext/text_generation.h>

#include "server/http/http.h"

typedef struct srv_metrics srv_metrics;
typedef struct srv_sched srv_sched;

/** Returns NULL when memory ran out. */
srv_metrics *srv_metrics_create(void);

/** NULL is a no-op. */
void srv_metrics_destroy(srv_metrics *metrics);

/* ---- recording (every function accepts NULL metrics and does nothing) ---- */

/** An HTTP request arrived (in flight until srv_metrics_request_done). */
void srv_metrics_request_started(srv_metrics *metrics);

/**
 * An HTTP request got its answer queued: `endpoint` is the route's path
 * (static storage) or "other" for unknown paths. Counted when queued, before
 * the client can read it, so a client that then scrapes sees it.
 */
void srv_metrics_request_answered(srv_metrics *metrics, const char *endpoint, unsigned status);

/** An HTTP request ended, `seconds` from its first byte to its last (for a stream: the whole stream). */
void srv_metrics_request_done(srv_metrics *metrics, double seconds);

/** A job got its session: its prompt length. */
void srv_metrics_job_started(srv_metrics *metrics, uint64_t prompt_tokens);

/** A job produced its first token, `seconds` after it was submitted. */
void srv_metrics_first_token(srv_metrics *metrics, double seconds);

/** A job ended: finish is a srv_finish value; `generated` its completion tokens. */
void srv_metrics_job_finished(srv_metrics *metrics, int finish, uint64_t generated);

/** One prefill chunk of `tokens`, `provider_ns` inside the provider's prefill(). */
void srv_metrics_prefill(srv_metrics *metrics, uint64_t tokens, uint64_t provider_ns);

/**
 * One scheduler iteration that ran a decode step of `items` sessions:
 * `provider_ns` inside the provider's decode(), `core_ns` the rest of the
 * iteration minus time in any other step call (prefill).
 */
void srv_metrics_decode_step(srv_metrics *metrics, uint64_t items, uint64_t provider_ns, uint64_t core_ns);

/* ---- GET /metrics --------------------------------------------------------- */

/** What the /metrics route needs; its `context` in the route table. */
typedef struct srv_metrics_source {
    srv_metrics *metrics;
    srv_sched *sched;              /* queue, sessions, conversation cache (NULL: no text model, zeros) */
    const gufo_memory *memory;     /* the model's pool: budgeted bytes (may be NULL) */
} srv_metrics_source;

/** The route handler: `context` is a srv_metrics_source. */
void srv_metrics_handle(void *context, srv_http_request *req);

#endif /* GUFO_HOST_SERVER_METRICS_H */

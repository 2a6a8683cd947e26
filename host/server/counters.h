/* host/server/counters.h — what `gufo serve` counts as it works.
 *
 * The HTTP layer counts requests (by route and status), requests in flight
 * and their durations; the scheduler counts tokens, jobs, time to first token
 * and how each decode step's time splits between the core (scheduling,
 * sampling bookkeeping, detokenizing, publishing text) and the provider's step
 * call. GET /metrics (server/routes/metrics.h) reads them all at once with
 * srv_counters_read() and writes them out.
 *
 * This unit depends on nothing else of the server, so the layers that bump the
 * counters (server/http, server/sched) and the route that shows them (above
 * both) never include one another through it.
 *
 * Threading: every function may be called from any thread (atomics for the
 * counters, one lock for the labelled request counts and the histograms).
 */
#ifndef GUFO_HOST_SERVER_COUNTERS_H
#define GUFO_HOST_SERVER_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_counters srv_counters;

/** Upper bounds (seconds) of the latency histograms' buckets; +Inf is implied. */
#define SRV_LATENCY_BUCKETS 15
extern const double srv_latency_buckets[SRV_LATENCY_BUCKETS];

/** Distinct (endpoint, status) pairs kept; the route table is small and statuses few. */
#define SRV_MAX_REQUEST_KEYS 128

/** How jobs can end, counted apart: the srv_finish values (server/sched/job.h), in order. */
#define SRV_FINISH_KINDS 6

typedef struct srv_histogram {
    uint64_t counts[SRV_LATENCY_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
} srv_histogram;

typedef struct srv_request_count {
    const char *endpoint;          /* a route's path (static storage) or "other" */
    unsigned status;
    uint64_t count;
} srv_request_count;

/** Everything counted, read at one moment (srv_counters_read). */
typedef struct srv_counters_snapshot {
    srv_request_count requests[SRV_MAX_REQUEST_KEYS];
    size_t n_requests;
    srv_histogram request_seconds;
    srv_histogram ttft_seconds;
    int64_t in_flight;
    uint64_t jobs_started;
    uint64_t prompt_tokens;
    uint64_t generated_tokens;
    uint64_t finished[SRV_FINISH_KINDS]; /* by srv_finish value */
    uint64_t prefill_chunks;
    uint64_t prefill_tokens;
    uint64_t prefill_provider_ns;
    uint64_t decode_steps;
    uint64_t decode_items;
    uint64_t decode_provider_ns;
    uint64_t decode_core_ns;
    uint64_t speculative_steps;  /* verify steps (serve --speculative) */
    uint64_t drafted, accepted;  /* draft tokens they checked / kept */
} srv_counters_snapshot;

/** Returns NULL when memory ran out. */
srv_counters *srv_counters_create(void);

/** NULL is a no-op. */
void srv_counters_destroy(srv_counters *counters);

/** Copies every counter into `out` (any thread); NULL counters read as zeros. */
void srv_counters_read(srv_counters *counters, srv_counters_snapshot *out);

/* ---- recording (every function accepts NULL counters and does nothing) ---- */

/** An HTTP request arrived (in flight until srv_counters_request_done). */
void srv_counters_request_started(srv_counters *counters);

/**
 * An HTTP request got its answer queued: `endpoint` is the route's path
 * (static storage) or "other" for unknown paths. Counted when queued, before
 * the client can read it, so a client that then scrapes sees it.
 */
void srv_counters_request_answered(srv_counters *counters, const char *endpoint, unsigned status);

/** An HTTP request ended, `seconds` from its first byte to its last (for a stream: the whole stream). */
void srv_counters_request_done(srv_counters *counters, double seconds);

/** A job got its session: its prompt length. */
void srv_counters_job_started(srv_counters *counters, uint64_t prompt_tokens);

/** A job produced its first token, `seconds` after it was submitted. */
void srv_counters_first_token(srv_counters *counters, double seconds);

/** A job ended: finish is a srv_finish value; `generated` its completion tokens. */
void srv_counters_job_finished(srv_counters *counters, int finish, uint64_t generated);

/** One prefill chunk of `tokens`, `provider_ns` inside the provider's prefill(). */
void srv_counters_prefill(srv_counters *counters, uint64_t tokens, uint64_t provider_ns);

/**
 * One scheduler iteration that ran a decode step of `items` sessions:
 * `provider_ns` inside the provider's decode(), `core_ns` the rest of the
 * iteration minus time in any other step call (prefill).
 */
void srv_counters_decode_step(srv_counters *counters, uint64_t items, uint64_t provider_ns, uint64_t core_ns);

/** One verify step of serve --speculative: `drafted` draft tokens checked, `accepted` of them kept. */
void srv_counters_speculative(srv_counters *counters, uint64_t drafted, uint64_t accepted);

#endif /* GUFO_HOST_SERVER_COUNTERS_H */

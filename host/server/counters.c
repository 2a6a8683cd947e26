/* host/server/counters.c — see server/counters.h. */
#include "server/counters.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const double srv_latency_buckets[SRV_LATENCY_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                         1,     2.5,  5,     10,   30,  60,  120, 300};

struct srv_counters {
    pthread_mutex_t mu; /* guards the fields up to `ttft_seconds` */
    srv_request_count requests[SRV_MAX_REQUEST_KEYS];
    size_t n_requests;
    srv_histogram request_seconds;
    srv_histogram ttft_seconds;

    atomic_int_least64_t in_flight;
    atomic_uint_least64_t jobs_started;
    atomic_uint_least64_t prompt_tokens;
    atomic_uint_least64_t generated_tokens;
    atomic_uint_least64_t finished[SRV_FINISH_KINDS];
    atomic_uint_least64_t prefill_chunks;
    atomic_uint_least64_t prefill_tokens;
    atomic_uint_least64_t prefill_provider_ns;
    atomic_uint_least64_t decode_steps;
    atomic_uint_least64_t decode_items;
    atomic_uint_least64_t decode_provider_ns;
    atomic_uint_least64_t decode_core_ns;
    atomic_uint_least64_t speculative_steps, drafted, accepted;
};

srv_counters *srv_counters_create(void)
{
    srv_counters *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    /* calloc's zero bytes are a valid initial state for these lock-free atomics on the
     * platforms we build for; atomic_init keeps that explicit for the rest. */
    atomic_init(&c->in_flight, 0);
    atomic_init(&c->jobs_started, 0);
    atomic_init(&c->prompt_tokens, 0);
    atomic_init(&c->generated_tokens, 0);
    for (size_t i = 0; i < SRV_FINISH_KINDS; i++)
        atomic_init(&c->finished[i], 0);
    atomic_init(&c->prefill_chunks, 0);
    atomic_init(&c->prefill_tokens, 0);
    atomic_init(&c->prefill_provider_ns, 0);
    atomic_init(&c->decode_steps, 0);
    atomic_init(&c->decode_items, 0);
    atomic_init(&c->decode_provider_ns, 0);
    atomic_init(&c->decode_core_ns, 0);
    atomic_init(&c->speculative_steps, 0);
    atomic_init(&c->drafted, 0);
    atomic_init(&c->accepted, 0);
    return c;
}

void srv_counters_destroy(srv_counters *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void histogram_add(srv_histogram *h, double seconds)
{
    size_t i = 0;
    while (i < SRV_LATENCY_BUCKETS && seconds > srv_latency_buckets[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += seconds;
}

void srv_counters_request_started(srv_counters *c)
{
    if (c)
        atomic_fetch_add(&c->in_flight, 1);
}

void srv_counters_request_done(srv_counters *c, double seconds)
{
    if (!c)
        return;
    atomic_fetch_sub(&c->in_flight, 1);
    pthread_mutex_lock(&c->mu);
    histogram_add(&c->request_seconds, seconds);
    pthread_mutex_unlock(&c->mu);
}

void srv_counters_request_answered(srv_counters *c, const char *endpoint, unsigned status)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    size_t i = 0;
    while (i < c->n_requests && !(c->requests[i].status == status && strcmp(c->requests[i].endpoint, endpoint) == 0))
        i++;
    if (i == c->n_requests && i < SRV_MAX_REQUEST_KEYS)
        c->requests[c->n_requests++] = (srv_request_count){.endpoint = endpoint, .status = status};
    /* Past the last key the request goes uncounted by label: the route table cannot get there. */
    if (i < c->n_requests)
        c->requests[i].count++;
    pthread_mutex_unlock(&c->mu);
}

void srv_counters_job_started(srv_counters *c, uint64_t prompt_tokens)
{
    if (!c)
        return;
    atomic_fetch_add(&c->jobs_started, 1);
    atomic_fetch_add(&c->prompt_tokens, prompt_tokens);
}

void srv_counters_first_token(srv_counters *c, double seconds)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    histogram_add(&c->ttft_seconds, seconds);
    pthread_mutex_unlock(&c->mu);
}

void srv_counters_job_finished(srv_counters *c, int finish, uint64_t generated)
{
    if (!c)
        return;
    if (finish >= 0 && finish < SRV_FINISH_KINDS)
        atomic_fetch_add(&c->finished[finish], 1);
    atomic_fetch_add(&c->generated_tokens, generated);
}

void srv_counters_prefill(srv_counters *c, uint64_t tokens, uint64_t provider_ns)
{
    if (!c)
        return;
    atomic_fetch_add(&c->prefill_chunks, 1);
    atomic_fetch_add(&c->prefill_tokens, tokens);
    atomic_fetch_add(&c->prefill_provider_ns, provider_ns);
}

void srv_counters_decode_step(srv_counters *c, uint64_t items, uint64_t provider_ns, uint64_t core_ns)
{
    if (!c)
        return;
    atomic_fetch_add(&c->decode_steps, 1);
    atomic_fetch_add(&c->decode_items, items);
    atomic_fetch_add(&c->decode_provider_ns, provider_ns);
    atomic_fetch_add(&c->decode_core_ns, core_ns);
}

void srv_counters_speculative(srv_counters *c, uint64_t drafted, uint64_t accepted)
{
    if (!c)
        return;
    atomic_fetch_add(&c->speculative_steps, 1);
    atomic_fetch_add(&c->drafted, drafted);
    atomic_fetch_add(&c->accepted, accepted);
}

void srv_counters_read(srv_counters *c, srv_counters_snapshot *out)
{
    if (!c) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&c->mu);
    out->n_requests = c->n_requests;
    memcpy(out->requests, c->requests, c->n_requests * sizeof *c->requests);
    out->request_seconds = c->request_seconds;
    out->ttft_seconds = c->ttft_seconds;
    pthread_mutex_unlock(&c->mu);
    out->in_flight = atomic_load(&c->in_flight);
    out->jobs_started = atomic_load(&c->jobs_started);
    out->prompt_tokens = atomic_load(&c->prompt_tokens);
    out->generated_tokens = atomic_load(&c->generated_tokens);
    for (size_t i = 0; i < SRV_FINISH_KINDS; i++)
        out->finished[i] = atomic_load(&c->finished[i]);
    out->prefill_chunks = atomic_load(&c->prefill_chunks);
    out->prefill_tokens = atomic_load(&c->prefill_tokens);
    out->prefill_provider_ns = atomic_load(&c->prefill_provider_ns);
    out->decode_steps = atomic_load(&c->decode_steps);
    out->decode_items = atomic_load(&c->decode_items);
    out->decode_provider_ns = atomic_load(&c->decode_provider_ns);
    out->decode_core_ns = atomic_load(&c->decode_core_ns);
    out->speculative_steps = atomic_load(&c->speculative_steps);
    out->drafted = atomic_load(&c->drafted);
    out->accepted = atomic_load(&c->accepted);
}

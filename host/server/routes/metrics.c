/* host/server/routes/metrics.c — see server/routes/metrics.h. */
#include "server/routes/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/sched/scheduler.h"

/* Upper bounds (seconds) of the latency histograms' buckets; +Inf is implied. */
static const double latency_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
#define N_BUCKETS (sizeof latency_buckets / sizeof latency_buckets[0])

/* Distinct (endpoint, status) pairs kept; the route table is small and statuses few. */
#define MAX_REQUEST_KEYS 128

typedef struct histogram {
    uint64_t counts[N_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
} histogram;

typedef struct request_key {
    const char *endpoint;
    unsigned status;
    uint64_t count;
} request_key;

/* srv_finish values in order, as label values. */
static const char *const finish_names[] = {"none", "stop", "length", "cancelled", "error", "deadline"};
#define N_FINISH (sizeof finish_names / sizeof finish_names[0])

struct srv_metrics {
    pthread_mutex_t mu; /* guards the fields up to `requests_overflow` */
    request_key requests[MAX_REQUEST_KEYS];
    size_t n_requests;
    uint64_t requests_overflow;
    histogram request_seconds;
    histogram ttft_seconds;

    atomic_int_least64_t in_flight;
    atomic_uint_least64_t jobs_started;
    atomic_uint_least64_t prompt_tokens;
    atomic_uint_least64_t generated_tokens;
    atomic_uint_least64_t finished[N_FINISH];
    atomic_uint_least64_t prefill_chunks;
    atomic_uint_least64_t prefill_tokens;
    atomic_uint_least64_t prefill_provider_ns;
    atomic_uint_least64_t decode_steps;
    atomic_uint_least64_t decode_items;
    atomic_uint_least64_t decode_provider_ns;
    atomic_uint_least64_t decode_core_ns;
};

srv_metrics *srv_metrics_create(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return NULL;
    }
    /* calloc's zero bytes are a valid initial state for these lock-free atomics on the
     * platforms we build for; atomic_init keeps that explicit for the rest. */
    atomic_init(&m->in_flight, 0);
    atomic_init(&m->jobs_started, 0);
    atomic_init(&m->prompt_tokens, 0);
    atomic_init(&m->generated_tokens, 0);
    for (size_t i = 0; i < N_FINISH; i++)
        atomic_init(&m->finished[i], 0);
    atomic_init(&m->prefill_chunks, 0);
    atomic_init(&m->prefill_tokens, 0);
    atomic_init(&m->prefill_provider_ns, 0);
    atomic_init(&m->decode_steps, 0);
    atomic_init(&m->decode_items, 0);
    atomic_init(&m->decode_provider_ns, 0);
    atomic_init(&m->decode_core_ns, 0);
    return m;
}

void srv_metrics_destroy(srv_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static void histogram_add(histogram *h, double seconds)
{
    size_t i = 0;
    while (i < N_BUCKETS && seconds > latency_buckets[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += seconds;
}

void srv_metrics_request_started(srv_metrics *m)
{
    if (m)
        atomic_fetch_add(&m->in_flight, 1);
}

void srv_metrics_request_done(srv_metrics *m, double seconds)
{
    if (!m)
        return;
    atomic_fetch_sub(&m->in_flight, 1);
    pthread_mutex_lock(&m->mu);
    histogram_add(&m->request_seconds, seconds);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_request_answered(srv_metrics *m, const char *endpoint, unsigned status)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    size_t i = 0;
    while (i < m->n_requests && !(m->requests[i].status == status && strcmp(m->requests[i].endpoint, endpoint) == 0))
        i++;
    if (i == m->n_requests && i < MAX_REQUEST_KEYS)
        m->requests[m->n_requests++] = (request_key){.endpoint = endpoint, .status = status};
    if (i < m->n_requests)
        m->requests[i].count++;
    else
        m->requests_overflow++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_job_started(srv_metrics *m, uint64_t prompt_tokens)
{
    if (!m)
        return;
    atomic_fetch_add(&m->jobs_started, 1);
    atomic_fetch_add(&m->prompt_tokens, prompt_tokens);
}

void srv_metrics_first_token(srv_metrics *m, double seconds)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    histogram_add(&m->ttft_seconds, seconds);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_job_finished(srv_metrics *m, int finish, uint64_t generated)
{
    if (!m)
        return;
    if (finish >= 0 && (size_t)finish < N_FINISH)
        atomic_fetch_add(&m->finished[finish], 1);
    atomic_fetch_add(&m->generated_tokens, generated);
}

void srv_metrics_prefill(srv_metrics *m, uint64_t tokens, uint64_t provider_ns)
{
    if (!m)
        return;
    atomic_fetch_add(&m->prefill_chunks, 1);
    atomic_fetch_add(&m->prefill_tokens, tokens);
    atomic_fetch_add(&m->prefill_provider_ns, provider_ns);
}

void srv_metrics_decode_step(srv_metrics *m, uint64_t items, uint64_t provider_ns, uint64_t core_ns)
{
    if (!m)
        return;
    atomic_fetch_add(&m->decode_steps, 1);
    atomic_fetch_add(&m->decode_items, items);
    atomic_fetch_add(&m->decode_provider_ns, provider_ns);
    atomic_fetch_add(&m->decode_core_ns, core_ns);
}

/* ---- exposition ----------------------------------------------------------- */

typedef struct out_text {
    char *data;
    size_t len, cap;
    bool failed;
} out_text;

static void out_printf(out_text *o, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

static void out_printf(out_text *o, const char *fmt, ...)
{
    if (o->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->data ? o->data + o->len : NULL, o->data ? o->cap - o->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = true;
            return;
        }
        if (o->data && o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap ? o->cap * 2 : 8192;
        while (cap <= o->len + (size_t)n)
            cap *= 2;
        char *grown = realloc(o->data, cap);
        if (!grown) {
            o->failed = true;
            return;
        }
        o->data = grown;
        o->cap = cap;
    }
}

static void family(out_text *o, const char *name, const char *type, const char *help)
{
    out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(out_text *o, const char *name, const char *type, const char *help, double value)
{
    family(o, name, type, help);
    out_printf(o, "%s %.17g\n", name, value);
}

static void write_histogram(out_text *o, const char *name, const char *help, const histogram *h)
{
    family(o, name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        cumulative += h->counts[i];
        out_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, latency_buckets[i], (unsigned long long)cumulative);
    }
    out_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
    out_printf(o, "%s_sum %.17g\n", name, h->sum);
    out_printf(o, "%s_count %llu\n", name, (unsigned long long)h->count);
}

/* VmRSS from /proc/self/status, in bytes; 0 where there is no /proc. */
static uint64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024u;
}

static double seconds_of(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* Label values here are route paths and fixed words: nothing to escape. */
static void render(const srv_metrics_source *src, out_text *o)
{
    srv_metrics *m = src->metrics;
    request_key requests[MAX_REQUEST_KEYS];
    size_t n_requests;
    histogram request_seconds, ttft_seconds;
    pthread_mutex_lock(&m->mu);
    n_requests = m->n_requests;
    memcpy(requests, m->requests, n_requests * sizeof *requests);
    request_seconds = m->request_seconds;
    ttft_seconds = m->ttft_seconds;
    pthread_mutex_unlock(&m->mu);

    family(o, "gufo_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
    for (size_t i = 0; i < n_requests; i++)
        out_printf(o, "gufo_http_requests_total{endpoint=\"%s\",code=\"%u\"} %llu\n", requests[i].endpoint,
                   requests[i].status, (unsigned long long)requests[i].count);
    scalar(o, "gufo_http_requests_in_flight", "gauge", "HTTP requests being read, worked on or streamed now.",
           (double)atomic_load(&m->in_flight));
    write_histogram(o, "gufo_http_request_duration_seconds",
                    "From a request's arrival to its last byte sent (streams: the whole stream).", &request_seconds);

    /* No scheduler (an embeddings or decisions model): the generation families stay at zero. */
    srv_sched_stats st = {0};
    if (src->sched)
        srv_sched_read_stats(src->sched, &st);
    scalar(o, "gufo_queued_requests", "gauge", "Generation requests waiting for a session.", st.queued);
    scalar(o, "gufo_active_sessions", "gauge", "Sessions generating for a request now.", st.active);
    scalar(o, "gufo_max_sessions", "gauge", "Sessions that may generate at once (--sessions).", st.max_sessions);
    scalar(o, "gufo_jobs_started_total", "counter", "Generation requests that got a session.",
           (double)atomic_load(&m->jobs_started));
    family(o, "gufo_jobs_finished_total", "counter", "Generation requests that ended, by how.");
    for (size_t i = 1; i < N_FINISH; i++)
        out_printf(o, "gufo_jobs_finished_total{reason=\"%s\"} %llu\n", finish_names[i],
                   (unsigned long long)atomic_load(&m->finished[i]));
    scalar(o, "gufo_prompt_tokens_total", "counter", "Prompt tokens of requests that got a session (cached or not).",
           (double)atomic_load(&m->prompt_tokens));
    scalar(o, "gufo_generated_tokens_total", "counter", "Tokens generated (completion tokens).",
           (double)atomic_load(&m->generated_tokens));
    write_histogram(o, "gufo_time_to_first_token_seconds", "From submission to the first generated token.",
                    &ttft_seconds);

    scalar(o, "gufo_cache_sessions", "gauge", "Finished sessions retained for reuse (conversation cache).",
           st.cache.sessions);
    scalar(o, "gufo_cache_tokens", "gauge", "Tokens the retained sessions hold.", (double)st.cache.tokens);
    scalar(o, "gufo_cache_bytes", "gauge",
           "Estimated bytes the retained sessions hold (tokens x the model's per-token session size).",
           (double)st.cache.bytes);
    scalar(o, "gufo_cache_hits_total", "counter", "Requests that reused a retained session.", (double)st.cache.hits);
    scalar(o, "gufo_cache_misses_total", "counter", "Requests that started from an empty session.",
           (double)st.cache.misses);
    scalar(o, "gufo_cache_reused_tokens_total", "counter",
           "Prompt tokens taken from retained sessions instead of prefilled (usage cached_tokens).",
           (double)st.cache.reused_tokens);
    scalar(o, "gufo_cache_forks_total", "counter",
           "Hits served from a copy of a retained session that holds a longer history, which stays retained.",
           (double)st.cache.forks);
    scalar(o, "gufo_cache_evictions_total", "counter",
           "Retained sessions destroyed to make room (cache full, memory budget, session limit, shutdown).",
           (double)st.cache.evictions);

    scalar(o, "gufo_prefill_chunks_total", "counter", "Prefill calls to the model.",
           (double)atomic_load(&m->prefill_chunks));
    scalar(o, "gufo_prefill_tokens_total", "counter", "Tokens prefilled (prompt tokens not served from the cache).",
           (double)atomic_load(&m->prefill_tokens));
    scalar(o, "gufo_prefill_provider_seconds_total", "counter", "Time inside the model's prefill calls.",
           seconds_of(atomic_load(&m->prefill_provider_ns)));
    scalar(o, "gufo_decode_steps_total", "counter", "Decode steps (one call to the model advances every batched session).",
           (double)atomic_load(&m->decode_steps));
    scalar(o, "gufo_decode_step_sessions_total", "counter", "Sessions advanced by decode steps (sum of batch sizes).",
           (double)atomic_load(&m->decode_items));
    scalar(o, "gufo_decode_provider_seconds_total", "counter", "Time inside the model's decode calls.",
           seconds_of(atomic_load(&m->decode_provider_ns)));
    scalar(o, "gufo_decode_core_seconds_total", "counter",
           "Time the scheduler spent around decode steps outside the model: admission, sampling bookkeeping, "
           "detokenizing, stop strings, publishing text (iterations with a decode step, minus their model calls).",
           seconds_of(atomic_load(&m->decode_core_ns)));

    scalar(o, "process_resident_memory_bytes", "gauge", "Resident memory of the server process (VmRSS).",
           (double)resident_bytes());
    if (src->memory) {
        static const struct { gufo_memory_kind kind; const char *name; } kinds[] = {
            {GUFO_MEMORY_HOST, "host"}, {GUFO_MEMORY_DEVICE, "device"}};
        family(o, "gufo_model_memory_used_bytes", "gauge",
               "Bytes the model holds from its budgeted pool (weights, KV caches, snapshots, scratch).");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_used_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_used(src->memory, kinds[i].kind));
        family(o, "gufo_model_memory_peak_bytes", "gauge", "Highest gufo_model_memory_used_bytes so far.");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_peak_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_peak(src->memory, kinds[i].kind));
        family(o, "gufo_model_memory_limit_bytes", "gauge", "The budget (--memory-budget); 0 = no limit.");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_limit_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_limit(src->memory, kinds[i].kind));
    }
}

void srv_metrics_handle(void *context, srv_http_request *req)
{
    const srv_metrics_source *src = context;
    out_text o = {0};
    render(src, &o);
    if (o.failed || !o.data) {
        free(o.data);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    srv_http_respond_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", o.data, o.len);
}

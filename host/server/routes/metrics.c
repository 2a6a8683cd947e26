/* host/server/routes/metrics.c — see server/routes/metrics.h. */
#include "server/routes/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/counters.h"
#include "server/http/http.h"
#include "server/routes/app.h"
#include "server/sched/scheduler.h"

/* srv_finish values in order, as label values. */
static const char *const finish_names[] = {"none", "stop", "length", "cancelled", "error", "deadline"};
_Static_assert(sizeof finish_names / sizeof finish_names[0] == SRV_FINISH_KINDS, "one label per srv_finish value");

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

static void write_histogram(out_text *o, const char *name, const char *help, const srv_histogram *h)
{
    family(o, name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < SRV_LATENCY_BUCKETS; i++) {
        cumulative += h->counts[i];
        out_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, srv_latency_buckets[i], (unsigned long long)cumulative);
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
static void render(const srv_app *app, out_text *o)
{
    srv_counters_snapshot c;
    srv_counters_read(app->counters, &c);

    family(o, "gufo_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
    for (size_t i = 0; i < c.n_requests; i++)
        out_printf(o, "gufo_http_requests_total{endpoint=\"%s\",code=\"%u\"} %llu\n", c.requests[i].endpoint,
                   c.requests[i].status, (unsigned long long)c.requests[i].count);
    scalar(o, "gufo_http_requests_in_flight", "gauge", "HTTP requests being read, worked on or streamed now.",
           (double)c.in_flight);
    write_histogram(o, "gufo_http_request_duration_seconds",
                    "From a request's arrival to its last byte sent (streams: the whole stream).", &c.request_seconds);

    /* No scheduler (an embeddings or decisions model): the generation families stay at zero. */
    srv_sched_stats st = {0};
    if (app->sched)
        srv_sched_read_stats(app->sched, &st);
    scalar(o, "gufo_queued_requests", "gauge", "Generation requests waiting for a session.", st.queued);
    scalar(o, "gufo_active_sessions", "gauge", "Sessions generating for a request now.", st.active);
    scalar(o, "gufo_max_sessions", "gauge", "Sessions that may generate at once (--sessions).", st.max_sessions);
    scalar(o, "gufo_jobs_started_total", "counter", "Generation requests that got a session.",
           (double)c.jobs_started);
    family(o, "gufo_jobs_finished_total", "counter", "Generation requests that ended, by how.");
    for (size_t i = 1; i < SRV_FINISH_KINDS; i++)
        out_printf(o, "gufo_jobs_finished_total{reason=\"%s\"} %llu\n", finish_names[i],
                   (unsigned long long)c.finished[i]);
    scalar(o, "gufo_prompt_tokens_total", "counter", "Prompt tokens of requests that got a session (cached or not).",
           (double)c.prompt_tokens);
    scalar(o, "gufo_generated_tokens_total", "counter", "Tokens generated (completion tokens).",
           (double)c.generated_tokens);
    write_histogram(o, "gufo_time_to_first_token_seconds", "From submission to the first generated token.",
                    &c.ttft_seconds);

    scalar(o, "gufo_cache_sessions", "gauge", "Finished sessions retained for reuse (conversation cache).",
           st.cache.sessions);
    scalar(o, "gufo_cache_tokens", "gauge", "Tokens the retained sessions hold.", (double)st.cache.tokens);
    scalar(o, "gufo_cache_bytes", "gauge",
           "Estimated bytes the retained sessions hold (tokens x the model's per-token session size).",
           (double)st.cache.bytes);
    scalar(o, "gufo_cache_hits_total", "counter", "Requests that reused a retained session or a checkpoint.",
           (double)st.cache.hits);
    scalar(o, "gufo_cache_misses_total", "counter", "Requests that started from an empty session.",
           (double)st.cache.misses);
    scalar(o, "gufo_cache_reused_tokens_total", "counter",
           "Prompt tokens taken from retained sessions or checkpoints instead of prefilled (usage cached_tokens).",
           (double)st.cache.reused_tokens);
    scalar(o, "gufo_cache_forks_total", "counter",
           "Hits served from a copy of a retained session that holds a longer history, which stays retained.",
           (double)st.cache.forks);
    scalar(o, "gufo_cache_evictions_total", "counter",
           "Retained sessions destroyed to make room (cache full, memory budget, session limit, shutdown).",
           (double)st.cache.evictions);
    scalar(o, "gufo_cache_checkpoints", "gauge",
           "Checkpoints cached: snapshots taken while prefilling, for a model that cannot rewind.",
           st.cache.checkpoints);
    scalar(o, "gufo_cache_checkpoint_bytes", "gauge",
           "Estimated bytes the checkpoints hold (checkpoints x the model's snapshot size).",
           (double)st.cache.checkpoint_bytes);
    scalar(o, "gufo_cache_checkpoint_hits_total", "counter",
           "Hits served by restoring a checkpoint into a new session (also in gufo_cache_hits_total).",
           (double)st.cache.checkpoint_hits);
    scalar(o, "gufo_cache_checkpoints_created_total", "counter", "Checkpoints taken and cached.",
           (double)st.cache.checkpoint_creations);
    scalar(o, "gufo_cache_checkpoint_evictions_total", "counter",
           "Checkpoints destroyed: to make room (checkpoints full, memory budget, session limit, shutdown) or "
           "found unrestorable.",
           (double)st.cache.checkpoint_evictions);

    scalar(o, "gufo_prefill_chunks_total", "counter", "Prefill calls to the model.",
           (double)c.prefill_chunks);
    scalar(o, "gufo_prefill_tokens_total", "counter", "Tokens prefilled (prompt tokens not served from the cache).",
           (double)c.prefill_tokens);
    scalar(o, "gufo_prefill_provider_seconds_total", "counter", "Time inside the model's prefill calls.",
           seconds_of(c.prefill_provider_ns));
    scalar(o, "gufo_speculative_steps_total", "counter",
           "Verify steps of --speculative (one session, its pending token and the drafts in one call).",
           (double)c.speculative_steps);
    scalar(o, "gufo_speculative_drafted_tokens_total", "counter", "Draft tokens the verify steps checked.",
           (double)c.drafted);
    scalar(o, "gufo_speculative_accepted_tokens_total", "counter",
           "Draft tokens the verify steps kept (each saves a decode step).", (double)c.accepted);
    scalar(o, "gufo_decode_steps_total", "counter", "Decode steps (one call to the model advances every batched session).",
           (double)c.decode_steps);
    scalar(o, "gufo_decode_step_sessions_total", "counter", "Sessions advanced by decode steps (sum of batch sizes).",
           (double)c.decode_items);
    scalar(o, "gufo_decode_provider_seconds_total", "counter", "Time inside the model's decode calls.",
           seconds_of(c.decode_provider_ns));
    scalar(o, "gufo_decode_core_seconds_total", "counter",
           "Time the scheduler spent around decode steps outside the model: admission, sampling bookkeeping, "
           "detokenizing, stop strings, publishing text (iterations with a decode step, minus their model calls).",
           seconds_of(c.decode_core_ns));

    scalar(o, "process_resident_memory_bytes", "gauge", "Resident memory of the server process (VmRSS).",
           (double)resident_bytes());
    if (app->memory) {
        static const struct { gufo_memory_kind kind; const char *name; } kinds[] = {
            {GUFO_MEMORY_HOST, "host"}, {GUFO_MEMORY_DEVICE, "device"}};
        family(o, "gufo_model_memory_used_bytes", "gauge",
               "Bytes the model holds from its budgeted pool (weights, KV caches, snapshots, scratch).");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_used_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_used(app->memory, kinds[i].kind));
        family(o, "gufo_model_memory_peak_bytes", "gauge", "Highest gufo_model_memory_used_bytes so far.");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_peak_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_peak(app->memory, kinds[i].kind));
        family(o, "gufo_model_memory_limit_bytes", "gauge", "The budget (--memory-budget); 0 = no limit.");
        for (size_t i = 0; i < 2; i++)
            out_printf(o, "gufo_model_memory_limit_bytes{kind=\"%s\"} %llu\n", kinds[i].name,
                       (unsigned long long)gufo_memory_limit(app->memory, kinds[i].kind));
    }
}

void srv_metrics_handle(void *app, srv_http_request *req)
{
    out_text o = {0};
    render(app, &o);
    if (o.failed || !o.data) {
        free(o.data);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    srv_http_respond_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", o.data, o.len);
}

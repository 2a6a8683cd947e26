/* host/server/sched/scheduler.c — see server/sched/scheduler.h. */
#include "server/sched/scheduler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/report.h"
#include "run/speculation.h"
#include "server/sched/cache.h"
#include "server/sched/checkpoints.h"
#include "server/sched/clock.h"
#include "server/sched/job_state.h"
#include "server/sched/sessions.h"
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/text_buffer.h>

/* Prefill chunk when the provider accepts any size: bounded so one long prompt
 * cannot hold the decode streams for more than one modest step. */
#define SRV_DEFAULT_PREFILL_CHUNK 256u

struct srv_sched {
    srv_sched_config config;
    const gufo_text_generation_iface *tg;
    gufo_text_model_info info;
    uint32_t context_length;
    uint32_t prefill_chunk;
    gufo_text_buffer *piece;

    pthread_t thread;
    pthread_mutex_t mu;        /* guards the queue and `stopping` */
    pthread_cond_t cv;
    srv_job *queue_head, *queue_tail;
    uint32_t n_queued;
    bool stopping;
    char stop_reason[128];

    srv_job *active;           /* the list: scheduler thread only */
    uint32_t n_active;         /* its length: written by the scheduler under `mu`, read by submit */
    uint32_t rr;               /* round-robin cursor for prefill and batch order */

    srv_sessions sessions;     /* where sessions come from and go: scheduler thread only (stats: any thread) */
    /* The current iteration's timing (scheduler thread): see srv_counters_decode_step(). */
    uint64_t iter_start_ns;
    uint64_t iter_step_ns;     /* inside prefill/decode calls */
    uint64_t iter_decode_ns;
    size_t iter_decode_items;
    host_speculation spec;     /* config.speculative resolved; spec.iface NULL when off */
};

/* True once the deadline of a job (queued or active) has passed at `now`. */
static bool job_expired(const srv_job *job, uint64_t now)
{
    return job->deadline_ns != 0 && now >= job->deadline_ns;
}

/* ---- the scheduler --------------------------------------------------------- */

void srv_sched_read_stats(srv_sched *s, srv_sched_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->queued = s->n_queued;
    out->active = s->n_active;
    out->max_sessions = s->config.max_sessions;
    pthread_mutex_unlock(&s->mu);
    srv_cache_read_stats(s->sessions.cache, &out->cache);
}

const gufo_text_model_info *srv_sched_info(const srv_sched *sched)
{
    return &sched->info;
}

uint32_t srv_sched_context(const srv_sched *sched)
{
    return sched->context_length;
}

bool srv_sched_takes_checkpoints(const srv_sched *sched)
{
    return sched->sessions.can_checkpoint;
}

static void active_remove(srv_sched *s, srv_job *job);

/* Ends a job: releases text still held back (unless a stop string cut it),
 * publishes the finish state, returns the session and drops the scheduler's reference. */
static void job_finish(srv_sched *s, srv_job *job, srv_finish finish, const char *error, bool out_of_memory)
{
    /* Unlink first: once the scheduler's reference is dropped below, the
     * submitter may free the job at any moment. (A no-op for jobs already
     * unlinked or never admitted.) */
    active_remove(s, job);
    if (finish == SRV_FINISH_STOP || finish == SRV_FINISH_LENGTH) {
        /* Bytes of a character still held back cannot complete now: the detokenizer makes them U+FFFD. */
        gufo_text_buffer_clear(s->piece);
        if (job->session && s->tg->detokenize(s->config.model, &job->detok, GUFO_DETOK_FLUSH, false, s->piece, NULL) ==
                                GUFO_OK) {
            size_t len = 0;
            const char *text = gufo_text_buffer_data(s->piece, &len);
            size_t held_len = 0;
            const char *held = srv_stop_filter_held(&job->stops, &held_len);
            srv_job_publish(job, held, held_len, job->n_taken);
            srv_stop_filter_drop(&job->stops, held_len);
            srv_job_publish(job, text, len, job->n_taken);
        }
    }
    srv_counters_job_finished(s->config.counters, (int)finish, job->n_taken);
    /* After a failed step the session's state is not trusted, so it is destroyed. */
    if (job->session)
        srv_sessions_release(&s->sessions, job->session, job->tokens, job->n_known,
                             finish != SRV_FINISH_ERROR && !job->history_lost);
    job->session = NULL;
    gufo_sampler_destroy(job->sampler);
    job->sampler = NULL;
    srv_job_publish_finish(job, finish, error, out_of_memory);
    srv_job_release(job);
}

static void job_fail(srv_sched *s, srv_job *job, const char *what, gufo_status st, const gufo_error *err)
{
    if (st == GUFO_E_CANCELLED || gufo_cancel_requested(job->cancel)) {
        job_finish(s, job, SRV_FINISH_CANCELLED, NULL, false);
        return;
    }
    char message[SRV_ERROR_LEN];
    snprintf(message, sizeof message, "%.64s: %.64s failed: %s", s->config.provider->id, what,
             host_why(st, err));
    job_finish(s, job, SRV_FINISH_ERROR, message, srv_sessions_short_of_memory(st));
}

static bool is_end_of_generation(const srv_sched *s, gufo_token token)
{
    return (s->tg->token_attr(s->config.model, token) & GUFO_TOKEN_END_OF_GENERATION) ||
           (s->info.eos_token >= 0 && token == s->info.eos_token);
}

static bool limit_reached(const srv_job *job)
{
    return job->max_tokens >= 0 && job->n_taken >= (uint64_t)job->max_tokens;
}

/*
 * Takes one token the model produced for `job` (the same rules as `gufo
 * prompt`, so greedy output matches it). Returns true when the job goes on
 * with the token pending for the next decode step; false when it was finished.
 */
static bool job_take_token(srv_sched *s, srv_job *job, gufo_token token)
{
    if (limit_reached(job)) {
        job_finish(s, job, SRV_FINISH_LENGTH, NULL, false);
        return false;
    }
    gufo_sampler_accept(job->sampler, token);
    if (is_end_of_generation(s, token)) {
        job_finish(s, job, SRV_FINISH_STOP, NULL, false);
        return false;
    }
    gufo_text_buffer_clear(s->piece);
    gufo_error err = {0};
    gufo_status st = s->tg->detokenize(s->config.model, &job->detok, token, false, s->piece, &err);
    if (st != GUFO_OK) {
        job_fail(s, job, "detokenize", st, &err);
        return false;
    }
    size_t len = 0;
    const char *text = gufo_text_buffer_data(s->piece, &len);
    /* A token that ends half-way through a character gives no text yet (the detokenizer holds its
     * bytes back), and when it is the first one `gen` does not exist yet: copying even 0 bytes into
     * NULL is undefined, and the sanitizer build aborts on it. */
    if (len > 0 && !srv_stop_filter_push(&job->stops, text, len)) {
        job_fail(s, job, "buffering output", GUFO_E_NO_MEMORY, NULL);
        return false;
    }
    job->n_taken++;

    size_t release = 0, held_len = 0;
    int stop_index = srv_stop_filter_scan(&job->stops, &release);
    const char *held = srv_stop_filter_held(&job->stops, &held_len);
    if (stop_index >= 0) {
        job->stop_index = stop_index; /* published with `finish` by job_finish */
        srv_job_publish(job, held, release, job->n_taken);
        srv_stop_filter_drop(&job->stops, held_len);
        /* Already cut: finish without flushing held-back bytes after the stop string. */
        gufo_detok_state fresh = {0};
        job->detok = fresh;
        job_finish(s, job, SRV_FINISH_STOP, NULL, false);
        return false;
    }
    if (!srv_job_publish(job, held, release, job->n_taken)) {
        job_fail(s, job, "buffering output", GUFO_E_NO_MEMORY, NULL);
        return false;
    }
    srv_stop_filter_drop(&job->stops, release);

    if (limit_reached(job)) {
        job_finish(s, job, SRV_FINISH_LENGTH, NULL, false);
        return false;
    }
    if (s->tg->session_length(s->config.model, job->session) + 1 > s->context_length) {
        job_finish(s, job, SRV_FINISH_LENGTH, NULL, false);
        return false;
    }
    job->pending = token;
    return true;
}

static void active_count_down(srv_sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->n_active--;
    pthread_mutex_unlock(&s->mu);
}

/* Unlinks `job` from the active list. */
static void active_remove(srv_sched *s, srv_job *job)
{
    for (srv_job **p = &s->active; *p; p = &(*p)->next) {
        if (*p == job) {
            *p = job->next;
            job->next = NULL;
            active_count_down(s);
            return;
        }
    }
}

/* Gives a newly admitted job its session and sampler. */
static void job_start(srv_sched *s, srv_job *job)
{
    gufo_error err = {0};
    size_t reused = 0;
    gufo_status st = srv_sessions_acquire(&s->sessions, job->tokens, job->n_prompt, &job->session, &reused, &err);
    if (st != GUFO_OK) {
        active_remove(s, job);
        job_fail(s, job, "creating a session", st, &err);
        return;
    }
    job->prefilled = reused;
    if (reused)
        srv_job_set_cached(job, reused);
    /* Where this prompt's prefill stops for checkpoints (none for a model that can rewind). */
    job->next_checkpoint = 0;
    job->n_checkpoints = s->sessions.can_checkpoint
                             ? srv_checkpoints_plan(job->checkpoint_hints, job->n_checkpoint_hints, job->n_prompt,
                                                    reused, s->sessions.snapshot_granularity, job->checkpoints)
                             : 0;
    st = gufo_sampler_create(&job->sampling, s->info.n_vocab, &job->sampler, &err);
    if (st != GUFO_OK) {
        active_remove(s, job);
        job_fail(s, job, "creating the sampler", st, &err);
        return;
    }
    job->phase = SRV_PHASE_PREFILL;
    srv_counters_job_started(s->config.counters, job->n_prompt);
}

/* Returns false when the scheduler should exit. */
static bool admit(srv_sched *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && !s->active && !s->queue_head)
        pthread_cond_wait(&s->cv, &s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return false;
    }
    s->iter_start_ns = srv_now_ns();
    s->iter_step_ns = s->iter_decode_ns = 0;
    s->iter_decode_items = 0;
    /* Queued jobs whose deadline passed leave the line before anyone is admitted. */
    srv_job *expired = NULL;
    uint64_t now = srv_now_ns();
    srv_job *kept = NULL, **kept_tail = &kept;
    for (srv_job *job = s->queue_head, *next; job; job = next) {
        next = job->next;
        job->next = NULL;
        if (job_expired(job, now)) {
            job->next = expired;
            expired = job;
            s->n_queued--;
        } else {
            *kept_tail = job;
            s->queue_tail = job;
            kept_tail = &job->next;
        }
    }
    s->queue_head = kept;
    if (!kept)
        s->queue_tail = NULL;
    srv_job *admitted = NULL, **tail = &admitted;
    while (s->queue_head && s->n_active < s->config.max_sessions) {
        srv_job *job = s->queue_head;
        s->queue_head = job->next;
        if (!s->queue_head)
            s->queue_tail = NULL;
        s->n_queued--;
        job->next = NULL;
        *tail = job;
        tail = &job->next;
        s->n_active++;
    }
    pthread_mutex_unlock(&s->mu);
    while (expired) {
        srv_job *job = expired;
        expired = job->next;
        job->next = NULL;
        job_finish(s, job, SRV_FINISH_DEADLINE, "the request's deadline passed while it waited for a session", false);
    }
    /* Session creation is provider work: outside the queue lock. */
    while (admitted) {
        srv_job *job = admitted;
        admitted = job->next;
        job->next = s->active;
        s->active = job;
        job_start(s, job);
    }
    return true;
}

/* Ends active jobs whose client went away (or the server stops) and those past their deadline. */
static void drop_ended(srv_sched *s)
{
    uint64_t now = srv_now_ns();
    srv_job **p = &s->active;
    while (*p) {
        srv_job *job = *p;
        bool cancelled = gufo_cancel_requested(job->cancel);
        if (cancelled || job_expired(job, now)) {
            *p = job->next;
            job->next = NULL;
            active_count_down(s);
            if (cancelled)
                job_finish(s, job, SRV_FINISH_CANCELLED, NULL, false);
            else
                job_finish(s, job, SRV_FINISH_DEADLINE, "the request's deadline passed before it finished", false);
        } else {
            p = &job->next;
        }
    }
}

/* The active jobs in a rotating order, so no job is always last in a batch or in the prefill line. */
static size_t active_rotated(srv_sched *s, srv_job **out, size_t cap)
{
    size_t n = 0;
    for (srv_job *job = s->active; job && n < cap; job = job->next)
        out[n++] = job;
    if (n > 1) {
        size_t shift = s->rr % n;
        srv_job *tmp[n];
        for (size_t i = 0; i < n; i++)
            tmp[i] = out[(i + shift) % n];
        memcpy(out, tmp, n * sizeof *out);
    }
    return n;
}

/*
 * The one decoding job's step by draft + verify (run/speculation.h). True when
 * it ran (the job took its tokens, or failed and was finished); false when
 * the provider drafted nothing and the job still waits for a plain decode.
 */
static bool speculative_step(srv_sched *s, srv_job *job)
{
    /* Room for the pending token, the drafts and the next token; no more drafts than tokens still wanted. */
    uint32_t length = s->tg->session_length(s->config.model, job->session);
    size_t max_draft = length + 2 < s->context_length ? s->context_length - length - 2 : 0;
    if (job->max_tokens >= 0) {
        uint64_t left = (uint64_t)job->max_tokens - job->n_taken; /* >= 1: the job would have finished */
        if (max_draft > left - 1)
            max_draft = (size_t)(left - 1);
    }
    gufo_token next = -1, accepted[HOST_SPECULATION_MAX_DRAFT];
    gufo_step_output output = {.sampler = job->sampler, .out_token = &next, .out_logits = NULL,
                               .logits_kind = GUFO_MEMORY_HOST};
    size_t n_accepted = 0;
    bool verified = false;
    const char *what = NULL;
    gufo_error err = {0};
    size_t drafted0 = s->spec.n_drafted;
    uint64_t t0 = srv_now_ns();
    /* No cancel token, as for a batch: a disconnect is seen between steps. */
    gufo_status st = host_speculation_step(&s->spec, s->config.model, job->session, job->pending, max_draft, &output,
                                           NULL, accepted, &n_accepted, &verified, &what, &err);
    uint64_t spent = srv_now_ns() - t0;
    s->iter_step_ns += spent;
    s->iter_decode_ns += spent;
    if (st != GUFO_OK) {
        active_remove(s, job);
        job_fail(s, job, what, st, &err);
        return true;
    }
    if (!verified)
        return false;
    s->iter_decode_items++;
    srv_counters_speculative(s->config.counters, s->spec.n_drafted - drafted0, n_accepted);
    /* The session holds the pending token and every accepted draft, whether or not the job ends among them. */
    srv_job_history_append(job, job->pending);
    for (size_t i = 0; i < n_accepted; i++)
        srv_job_history_append(job, accepted[i]);
    for (size_t i = 0; i < n_accepted; i++)
        if (!job_take_token(s, job, accepted[i]))
            return true; /* finished (and freed) */
    job_take_token(s, job, next);
    return true;
}

static void decode_step(srv_sched *s, srv_job **jobs, size_t n_jobs)
{
    if (s->spec.iface) {
        srv_job *alone = NULL;
        size_t decoding = 0;
        for (size_t i = 0; i < n_jobs; i++)
            if (jobs[i]->phase == SRV_PHASE_DECODE) {
                alone = jobs[i];
                decoding++;
            }
        if (decoding == 1 && speculative_step(s, alone))
            return;
    }

    size_t max_batch = s->info.max_batch ? s->info.max_batch : 1;
    gufo_decode_item items[n_jobs ? n_jobs : 1];
    gufo_token next[n_jobs ? n_jobs : 1];
    srv_job *in_batch[n_jobs ? n_jobs : 1];
    size_t n = 0;
    for (size_t i = 0; i < n_jobs && n < max_batch; i++) {
        srv_job *job = jobs[i];
        if (job->phase != SRV_PHASE_DECODE)
            continue;
        next[n] = -1;
        items[n] = (gufo_decode_item){
            .session = job->session,
            .token = job->pending,
            .output = {.sampler = job->sampler, .out_token = &next[n], .out_logits = NULL,
                       .logits_kind = GUFO_MEMORY_HOST},
        };
        in_batch[n++] = job;
    }
    if (n == 0)
        return;
    /* No cancel token on the batch: one client's disconnect must not fail the
     * others' step; cancelled jobs are dropped between steps instead. */
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = n, .cancel = NULL};
    gufo_error err = {0};
    uint64_t t0 = srv_now_ns();
    gufo_status st = s->tg->decode(s->config.model, &batch, &err);
    uint64_t spent = srv_now_ns() - t0;
    s->iter_step_ns += spent;
    s->iter_decode_ns += spent;
    s->iter_decode_items += n;
    for (size_t i = 0; i < n; i++) {
        srv_job *job = in_batch[i];
        if (st != GUFO_OK) {
            active_remove(s, job);
            job_fail(s, job, "decode", st, &err);
        } else {
            srv_job_history_append(job, items[i].token);
            job_take_token(s, job, next[i]); /* may finish (and free) the job */
        }
    }
}

static void prefill_step(srv_sched *s, srv_job **jobs, size_t n_jobs)
{
    for (size_t i = 0; i < n_jobs; i++) {
        srv_job *job = jobs[i];
        if (job->phase != SRV_PHASE_PREFILL)
            continue;
        /* A chunk ends at the next checkpoint, so the session holds exactly its prefix there. */
        bool to_checkpoint = job->next_checkpoint < job->n_checkpoints;
        size_t end = to_checkpoint ? job->checkpoints[job->next_checkpoint] : job->n_prompt;
        size_t left = end - job->prefilled;
        size_t count = left < s->prefill_chunk ? left : s->prefill_chunk;
        bool last = job->prefilled + count == job->n_prompt;
        gufo_token first = -1;
        gufo_step_output output = {.sampler = job->sampler, .out_token = &first, .out_logits = NULL,
                                   .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        uint64_t t0 = srv_now_ns();
        gufo_status st = s->tg->prefill(s->config.model, job->session, job->tokens + job->prefilled, count,
                                        last ? &output : NULL, job->cancel, &err);
        if (srv_sessions_short_of_memory(st) && srv_cache_count(s->sessions.cache) > 0 &&
            s->tg->session_length(s->config.model, job->session) == job->prefilled) {
            /* Out of memory with sessions retained: give them all back and try this chunk once more. */
            while (srv_cache_evict_lru(s->sessions.cache)) {
            }
            memset(&err, 0, sizeof err);
            first = -1;
            st = s->tg->prefill(s->config.model, job->session, job->tokens + job->prefilled, count,
                                last ? &output : NULL, job->cancel, &err);
        }
        uint64_t spent = srv_now_ns() - t0;
        s->iter_step_ns += spent;
        if (st == GUFO_OK)
            srv_counters_prefill(s->config.counters, count, spent);
        if (st != GUFO_OK) {
            active_remove(s, job);
            job_fail(s, job, "prefill", st, &err);
            return;
        }
        job->prefilled += count;
        if (to_checkpoint && job->prefilled == end) {
            job->next_checkpoint++;
            uint64_t t1 = srv_now_ns();
            srv_sessions_checkpoint(&s->sessions, job->session, job->tokens, job->prefilled);
            s->iter_step_ns += srv_now_ns() - t1;
        }
        if (last) {
            job->phase = SRV_PHASE_DECODE;
            srv_counters_first_token(s->config.counters, (double)(srv_now_ns() - job->submitted_ns) / 1e9);
            job_take_token(s, job, first); /* may finish (and free) the job */
        }
        return; /* one chunk per iteration: decode steps go between chunks */
    }
}

static void *sched_main(void *arg)
{
    srv_sched *s = arg;
    while (admit(s)) {
        drop_ended(s);
        size_t cap = s->n_active ? s->n_active : 1;
        srv_job *order[cap];
        size_t n = active_rotated(s, order, cap);
        s->rr++;
        decode_step(s, order, n);
        /* The decode step may have finished jobs: take the order again. */
        n = active_rotated(s, order, cap);
        prefill_step(s, order, n);
        if (s->iter_decode_items) {
            uint64_t total = srv_now_ns() - s->iter_start_ns;
            uint64_t core = total > s->iter_step_ns ? total - s->iter_step_ns : 0;
            srv_counters_decode_step(s->config.counters, s->iter_decode_items, s->iter_decode_ns, core);
        }
    }
    /* Shutdown: every job still queued or active ends as cancelled. */
    while (s->active) {
        srv_job *job = s->active;
        s->active = job->next;
        active_count_down(s);
        gufo_cancel_fire(job->cancel, s->stop_reason);
        job_finish(s, job, SRV_FINISH_CANCELLED, NULL, false);
    }
    pthread_mutex_lock(&s->mu);
    srv_job *queued = s->queue_head;
    s->queue_head = s->queue_tail = NULL;
    s->n_queued = 0;
    pthread_mutex_unlock(&s->mu);
    while (queued) {
        srv_job *job = queued;
        queued = job->next;
        gufo_cancel_fire(job->cancel, s->stop_reason);
        job_finish(s, job, SRV_FINISH_CANCELLED, NULL, false);
    }
    /* Every retained session goes back too, from this thread, the only caller of session functions. */
    while (srv_cache_evict_lru(s->sessions.cache)) {
    }
    return NULL;
}

srv_submit_result srv_sched_submit(srv_sched *s, srv_job *job)
{
    pthread_mutex_lock(&s->mu);
    srv_submit_result r = SRV_SUBMIT_OK;
    if (s->stopping)
        r = SRV_SUBMIT_SHUTTING_DOWN;
    else if (s->n_queued + s->n_active >= s->config.max_queue + s->config.max_sessions)
        r = SRV_SUBMIT_QUEUE_FULL; /* every session busy and `max_queue` already waiting */
    if (r == SRV_SUBMIT_OK) {
        srv_job_retain(job);
        job->next = NULL;
        job->phase = SRV_PHASE_QUEUED;
        job->submitted_ns = srv_now_ns();
        job->deadline_ns = job->timeout_ms ? job->submitted_ns + job->timeout_ms * 1000000u : 0;
        if (s->queue_tail)
            s->queue_tail->next = job;
        else
            s->queue_head = job;
        s->queue_tail = job;
        s->n_queued++;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

/*
 * The memory pool's pressure handler: an allocation of the model did not fit
 * its budget. Retained sessions are the memory the core may take back, so
 * they go, least recently used first, until the allocation would fit. Only
 * on the scheduler thread: that is where the model allocates while serving,
 * and the cache and session functions belong to it.
 */
static bool on_memory_pressure(void *userdata, gufo_memory_kind kind, uint64_t bytes)
{
    srv_sched *s = userdata;
    if (!pthread_equal(pthread_self(), s->thread))
        return false;
    uint64_t limit = gufo_memory_limit(s->config.memory, kind);
    bool freed = false;
    while (srv_cache_evict_lru(s->sessions.cache)) {
        freed = true;
        if (limit && gufo_memory_used(s->config.memory, kind) + bytes <= limit)
            break;
    }
    return freed;
}

int srv_sched_start(const srv_sched_config *config, srv_sched **out)
{
    *out = NULL;
    const gufo_text_generation_iface *tg = config->provider->iface;
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    s->config = *config;
    s->tg = tg;
    s->info.struct_size = sizeof s->info;
    gufo_error err = {0};
    gufo_status st = tg->get_info(config->model, &s->info, &err);
    if (st != GUFO_OK || s->info.n_vocab <= 0) {
        host_error("%s: get_info failed: %s", config->provider->id,
                   st != GUFO_OK ? host_why(st, &err) : "the vocabulary is empty");
        free(s);
        return HOST_EXIT_FAILURE;
    }
    uint32_t model_ctx = s->info.context_length;
    if (config->context_length && model_ctx && config->context_length > model_ctx) {
        host_error("--context %u is more than the model holds (%u tokens)", config->context_length, model_ctx);
        free(s);
        return HOST_EXIT_FAILURE;
    }
    s->context_length = config->context_length ? config->context_length : model_ctx;
    if (s->context_length == 0) {
        host_error("%s: the model reports a context length of 0; pass --context", config->provider->id);
        free(s);
        return HOST_EXIT_FAILURE;
    }
    if (host_speculation_open(&s->spec, config->provider, config->model, config->speculative) != HOST_EXIT_OK) {
        free(s);
        return HOST_EXIT_FAILURE;
    }
    s->prefill_chunk = s->info.max_prefill_chunk ? s->info.max_prefill_chunk : SRV_DEFAULT_PREFILL_CHUNK;
    if (s->info.max_sessions && s->config.max_sessions > s->info.max_sessions)
        s->config.max_sessions = s->info.max_sessions;
    if (s->config.max_sessions == 0)
        s->config.max_sessions = 1;
    bool have_sessions = srv_sessions_init(&s->sessions, tg, config->model, &s->info, s->context_length,
                                           config->cache_sessions);
    if (gufo_text_buffer_create(0, &s->piece) != GUFO_OK || !have_sessions) {
        host_error("out of memory");
        gufo_text_buffer_destroy(s->piece);
        srv_sessions_free(&s->sessions);
        free(s);
        return HOST_EXIT_FAILURE;
    }
    pthread_mutex_init(&s->mu, NULL);
    /* Its waits are untimed today; on the deadlines' clock all the same, should one get a timeout. */
    bool have_cv = srv_monotonic_cond_init(&s->cv) == 0;
    if (!have_cv || pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        host_error("cannot start the scheduler thread");
        if (have_cv)
            pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        gufo_text_buffer_destroy(s->piece);
        srv_sessions_free(&s->sessions);
        free(s);
        return HOST_EXIT_FAILURE;
    }
    /* Set after the thread exists: the handler compares the allocating thread with it. */
    if (config->memory)
        gufo_memory_set_pressure_handler(config->memory, on_memory_pressure, s);
    *out = s;
    return HOST_EXIT_OK;
}

void srv_sched_stop(srv_sched *s, const char *reason)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->stopping = true;
    snprintf(s->stop_reason, sizeof s->stop_reason, "%s", reason ? reason : "server shutting down");
    /* Fire queued jobs' tokens now so waiting HTTP threads need not wait for the thread to get there. */
    for (srv_job *job = s->queue_head; job; job = job->next)
        gufo_cancel_fire(job->cancel, s->stop_reason);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    if (s->config.memory)
        gufo_memory_set_pressure_handler(s->config.memory, NULL, NULL);
}

void srv_sched_destroy(srv_sched *s)
{
    if (!s)
        return;
    srv_sched_stop(s, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    gufo_text_buffer_destroy(s->piece);
    srv_sessions_free(&s->sessions); /* already empty: the thread returned every session */
    free(s);
}

/* host/server/sched/scheduler.c — see server/sched/scheduler.h. */
#include "server/sched/scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/report.h"
#include "server/sched/cache.h"
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/text_buffer.h>


/* Prefill chunk when the provider accepts any size: bounded so one long prompt
 * cannot hold the decode streams for more than one modest step. */
#define SRV_DEFAULT_PREFILL_CHUNK 256u

/* Room for a provider's error detail (gufo_error.message) plus our prefix. */
#define SRV_ERROR_LEN (sizeof(((gufo_error *)0)->message) + 160)

typedef enum job_phase { PHASE_QUEUED, PHASE_PREFILL, PHASE_DECODE } job_phase;

struct srv_job {
    /* Immutable after srv_job_create(), except that the scheduler appends
     * generated tokens to `tokens` after the prompt (see n_known). */
    gufo_token *tokens;        /* the prompt, then the generated tokens the session holds */
    size_t n_prompt;
    size_t tokens_cap;
    gufo_sampling_params sampling;
    int64_t max_tokens;
    char **stop;
    size_t n_stop;
    size_t max_stop_len;
    gufo_cancel *cancel;
    uint64_t timeout_ms;       /* 0 = no deadline */
    uint64_t deadline_ns;      /* CLOCK_MONOTONIC; set by srv_sched_submit() under the scheduler lock */
    uint64_t submitted_ns;     /* likewise: for the time to first token */

    /* Shared with the submitter; under `mu`. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    char *out;                 /* text ready for srv_job_take() */
    size_t out_len, out_cap;
    srv_finish finish;
    size_t n_generated;
    size_t n_cached;           /* prompt tokens reused from the conversation cache */
    char error[SRV_ERROR_LEN];
    bool out_of_memory;
    int stop_index;            /* the stop string that ended the job, -1 for none; written before `finish` */

    /* Scheduler thread only. */
    srv_job *next;             /* queue / active list link */
    job_phase phase;
    gufo_text_session *session;
    gufo_sampler *sampler;
    size_t prefilled;          /* prompt tokens appended so far */
    size_t n_taken;            /* tokens generated: the scheduler's own count, published as n_generated */
    size_t n_known;            /* tokens[0..n_known) are known: the prompt plus generated tokens the session appended */
    bool history_lost;         /* out of memory recording the history: the session is not retained */
    gufo_token pending;        /* produced, not yet appended to the session */
    gufo_detok_state detok;
    char *gen;                 /* generated text not yet released (stop-string window) */
    size_t gen_len, gen_cap;
};

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

    srv_cache *cache;          /* retained sessions: scheduler thread only (stats: any thread) */
    /* The current iteration's timing (scheduler thread): see srv_counters_decode_step(). */
    uint64_t iter_start_ns;
    uint64_t iter_step_ns;     /* inside prefill/decode calls */
    uint64_t iter_decode_ns;
    size_t iter_decode_items;
    bool can_truncate;         /* the provider's sessions rewind cheaply and exactly */
    bool can_fork;             /* ... and can be copied (snapshot + restore) */
};

/* ---- jobs ----------------------------------------------------------------- */

/*
 * A condition variable whose timed waits read CLOCK_MONOTONIC, the clock every
 * deadline here is computed on. With the default (CLOCK_REALTIME) a monotonic
 * deadline lies decades in the past, so each timed wait returned at once and
 * every waiting connection thread spun.
 */
static int monotonic_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

srv_job *srv_job_create(const srv_job_params *params)
{
    srv_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->refs = 1;
    job->pending = -1;
    job->stop_index = -1;
    job->sampling = params->sampling;
    job->max_tokens = params->max_tokens;
    job->timeout_ms = params->timeout_ms;
    bool ok = pthread_mutex_init(&job->mu, NULL) == 0;
    if (ok && monotonic_cond_init(&job->cv) != 0) {
        pthread_mutex_destroy(&job->mu);
        ok = false;
    }
    if (!ok) {
        free(job);
        return NULL;
    }
    job->tokens = malloc(params->n_prompt * sizeof *job->tokens);
    job->stop = params->n_stop ? calloc(params->n_stop, sizeof *job->stop) : NULL;
    ok = job->tokens && (params->n_stop == 0 || job->stop) && gufo_cancel_create(&job->cancel) == GUFO_OK;
    if (ok) {
        memcpy(job->tokens, params->prompt, params->n_prompt * sizeof *job->tokens);
        job->n_prompt = params->n_prompt;
        job->tokens_cap = params->n_prompt;
        job->n_known = params->n_prompt;
        for (size_t i = 0; ok && i < params->n_stop; i++) {
            size_t len = strlen(params->stop[i]);
            job->stop[i] = malloc(len + 1);
            if (!job->stop[i]) {
                ok = false;
                break;
            }
            memcpy(job->stop[i], params->stop[i], len + 1);
            job->n_stop = i + 1;
            if (len > job->max_stop_len)
                job->max_stop_len = len;
        }
    }
    if (!ok) {
        srv_job_release(job);
        return NULL;
    }
    return job;
}

void srv_job_release(srv_job *job)
{
    if (!job)
        return;
    pthread_mutex_lock(&job->mu);
    int left = --job->refs;
    pthread_mutex_unlock(&job->mu);
    if (left > 0)
        return;
    pthread_cond_destroy(&job->cv);
    pthread_mutex_destroy(&job->mu);
    for (size_t i = 0; i < job->n_stop; i++)
        free(job->stop[i]);
    free(job->stop);
    free(job->tokens);
    free(job->out);
    free(job->gen);
    gufo_cancel_destroy(job->cancel);
    free(job);
}

static void job_retain(srv_job *job)
{
    pthread_mutex_lock(&job->mu);
    job->refs++;
    pthread_mutex_unlock(&job->mu);
}

void srv_job_cancel(srv_job *job, const char *reason)
{
    gufo_cancel_fire(job->cancel, reason);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool job_expired(const srv_job *job, uint64_t now)
{
    return job->deadline_ns != 0 && now >= job->deadline_ns;
}

/* `ms` from now on CLOCK_MONOTONIC: the clock job->cv's timed waits use (monotonic_cond_init). */
static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

srv_finish srv_job_take(srv_job *job, int timeout_ms, gufo_text_buffer *out)
{
    gufo_text_buffer_clear(out);
    struct timespec deadline;
    deadline_after(&deadline, timeout_ms);
    pthread_mutex_lock(&job->mu);
    while (job->out_len == 0 && job->finish == SRV_FINISH_NONE) {
        int rc = pthread_cond_timedwait(&job->cv, &job->mu, &deadline);
        if (rc == ETIMEDOUT)
            break;
    }
    srv_finish finish = SRV_FINISH_NONE;
    if (job->out_len) {
        /* On failure the text stays for the next call; the caller sees no progress but no loss. */
        if (gufo_text_buffer_append(out, job->out, job->out_len) == GUFO_OK)
            job->out_len = 0;
    }
    if (job->out_len == 0)
        finish = job->finish;
    pthread_mutex_unlock(&job->mu);
    return finish;
}

size_t srv_job_cached_tokens(srv_job *job)
{
    pthread_mutex_lock(&job->mu);
    size_t n = job->n_cached;
    pthread_mutex_unlock(&job->mu);
    return n;
}

size_t srv_job_completion_tokens(srv_job *job)
{
    pthread_mutex_lock(&job->mu);
    size_t n = job->n_generated;
    pthread_mutex_unlock(&job->mu);
    return n;
}

int srv_job_stop_index(srv_job *job)
{
    /* Written once, before `finish` is published under the lock; read after. */
    pthread_mutex_lock(&job->mu);
    int index = job->finish == SRV_FINISH_STOP ? job->stop_index : -1;
    pthread_mutex_unlock(&job->mu);
    return index;
}

const char *srv_job_error(srv_job *job, bool *out_of_memory)
{
    /* Written once, before `finish` is published under the lock; read after. */
    pthread_mutex_lock(&job->mu);
    if (out_of_memory)
        *out_of_memory = job->out_of_memory;
    pthread_mutex_unlock(&job->mu);
    return job->error;
}

/* Publishes text to the submitter. */
static bool job_publish(srv_job *job, const char *text, size_t len, size_t n_generated)
{
    bool ok = true;
    pthread_mutex_lock(&job->mu);
    if (job->out_len + len > job->out_cap) {
        size_t cap = job->out_cap ? job->out_cap : 256;
        while (cap < job->out_len + len)
            cap *= 2;
        char *grown = realloc(job->out, cap);
        if (grown) {
            job->out = grown;
            job->out_cap = cap;
        } else {
            ok = false;
        }
    }
    if (ok && len) {
        memcpy(job->out + job->out_len, text, len);
        job->out_len += len;
    }
    job->n_generated = n_generated;
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
    return ok;
}

/* ---- stop strings ---------------------------------------------------------- */

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || m > n)
        return NULL;
    for (size_t i = 0; i + m <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

/* Bytes at the end of `gen` that could still grow into a stop string, so must be held back. */
static size_t stop_holdback(const srv_job *job)
{
    size_t most = job->max_stop_len ? job->max_stop_len - 1 : 0;
    if (most > job->gen_len)
        most = job->gen_len;
    for (size_t k = most; k > 0; k--) {
        const char *tail = job->gen + job->gen_len - k;
        for (size_t i = 0; i < job->n_stop; i++)
            if (strlen(job->stop[i]) > k && memcmp(job->stop[i], tail, k) == 0)
                return k;
    }
    return 0;
}

/* ---- the scheduler --------------------------------------------------------- */

void srv_sched_read_stats(srv_sched *s, srv_sched_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->queued = s->n_queued;
    out->active = s->n_active;
    out->max_sessions = s->config.max_sessions;
    pthread_mutex_unlock(&s->mu);
    srv_cache_read_stats(s->cache, &out->cache);
}

const gufo_text_model_info *srv_sched_info(const srv_sched *sched)
{
    return &sched->info;
}

uint32_t srv_sched_context(const srv_sched *sched)
{
    return sched->context_length;
}

static void active_remove(srv_sched *s, srv_job *job);

/*
 * Returns a finished job's session: into the conversation cache when its
 * history is known exactly, else to the provider. After a failed step the
 * session's state is not trusted, so it is destroyed.
 */
static void session_release(srv_sched *s, srv_job *job, srv_finish finish)
{
    uint32_t length = s->tg->session_length(s->config.model, job->session);
    if (finish != SRV_FINISH_ERROR && !job->history_lost && length > 0 && length <= job->n_known)
        srv_cache_put(s->cache, job->session, job->tokens, length);
    else
        s->tg->session_destroy(s->config.model, job->session);
    job->session = NULL;
}

/* Records that the session appended `token` (a generated one), so a retained session's history is exact. */
static void history_append(srv_job *job, gufo_token token)
{
    if (job->history_lost)
        return;
    if (job->n_known == job->tokens_cap) {
        size_t cap = job->tokens_cap * 2 + 16;
        gufo_token *grown = realloc(job->tokens, cap * sizeof *grown);
        if (!grown) {
            job->history_lost = true;
            return;
        }
        job->tokens = grown;
        job->tokens_cap = cap;
    }
    job->tokens[job->n_known++] = token;
}

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
        if (job->session && s->tg->detokenize(s->config.model, &job->detok, GUFO_DETOK_FLUSH, false, s->piece) ==
                                GUFO_OK) {
            size_t len = 0;
            const char *text = gufo_text_buffer_data(s->piece, &len);
            job_publish(job, job->gen, job->gen_len, job->n_taken);
            job->gen_len = 0;
            job_publish(job, text, len, job->n_taken);
        }
    }
    srv_counters_job_finished(s->config.counters, (int)finish, job->n_taken);
    if (job->session)
        session_release(s, job, finish);
    job->session = NULL;
    gufo_sampler_destroy(job->sampler);
    job->sampler = NULL;
    pthread_mutex_lock(&job->mu);
    if (error)
        snprintf(job->error, sizeof job->error, "%s", error);
    job->out_of_memory = out_of_memory;
    job->finish = finish;
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
    srv_job_release(job);
}

/* Failures that more free memory (or a free session slot) could cure: they answer 503, and the cache is evicted first. */
static bool is_memory_status(gufo_status st)
{
    return st == GUFO_E_NO_MEMORY || st == GUFO_E_OVER_BUDGET || st == GUFO_E_LIMIT;
}

static void job_fail(srv_sched *s, srv_job *job, const char *what, gufo_status st, const gufo_error *err)
{
    if (st == GUFO_E_CANCELLED || gufo_cancel_requested(job->cancel)) {
        job_finish(s, job, SRV_FINISH_CANCELLED, NULL, false);
        return;
    }
    char message[SRV_ERROR_LEN];
    snprintf(message, sizeof message, "%.64s: %.64s failed: %s", s->config.provider->id, what,
             err && err->message[0] ? err->message : gufo_status_str(st));
    job_finish(s, job, SRV_FINISH_ERROR, message, is_memory_status(st));
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

/* Appends `len` > 0 bytes to the text not yet released; false when memory ran out. */
static bool gen_append(srv_job *job, const char *text, size_t len)
{
    if (job->gen_len + len > job->gen_cap) {
        size_t cap = job->gen_cap ? job->gen_cap : 64;
        while (cap < job->gen_len + len)
            cap *= 2;
        char *grown = realloc(job->gen, cap);
        if (!grown)
            return false;
        job->gen = grown;
        job->gen_cap = cap;
    }
    memcpy(job->gen + job->gen_len, text, len);
    job->gen_len += len;
    return true;
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
    gufo_status st = s->tg->detokenize(s->config.model, &job->detok, token, false, s->piece);
    if (st != GUFO_OK) {
        job_fail(s, job, "detokenize", st, NULL);
        return false;
    }
    size_t len = 0;
    const char *text = gufo_text_buffer_data(s->piece, &len);
    /* A token that ends half-way through a character gives no text yet (the detokenizer holds its
     * bytes back), and when it is the first one `gen` does not exist yet: copying even 0 bytes into
     * NULL is undefined, and the sanitizer build aborts on it. */
    if (len > 0 && !gen_append(job, text, len)) {
        job_fail(s, job, "buffering output", GUFO_E_NO_MEMORY, NULL);
        return false;
    }
    job->n_taken++;

    /* A stop string ends the output before it; the stop string itself is never shown. When one
     * token completes several, the earliest in the text wins (it is the one the output ends at). */
    const char *first_hit = NULL;
    for (size_t i = 0; i < job->n_stop; i++) {
        const char *hit = find_bytes(job->gen, job->gen_len, job->stop[i], strlen(job->stop[i]));
        if (hit && (!first_hit || hit < first_hit)) {
            first_hit = hit;
            job->stop_index = (int)i; /* published with `finish` by job_finish */
        }
    }
    if (first_hit) {
        job_publish(job, job->gen, (size_t)(first_hit - job->gen), job->n_taken);
        job->gen_len = 0;
        /* Already cut: finish without flushing held-back bytes after the stop string. */
        gufo_detok_state fresh = {0};
        job->detok = fresh;
        job_finish(s, job, SRV_FINISH_STOP, NULL, false);
        return false;
    }
    size_t hold = stop_holdback(job);
    size_t release = job->gen_len - hold;
    if (!job_publish(job, job->gen, release, job->n_taken)) {
        job_fail(s, job, "buffering output", GUFO_E_NO_MEMORY, NULL);
        return false;
    }
    if (release > 0 && hold > 0)
        memmove(job->gen, job->gen + release, hold);
    job->gen_len = hold;

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

/* A new, empty session; when the model is out of memory or sessions, retained ones are evicted (LRU first) until it fits. */
static gufo_status session_create_evicting(srv_sched *s, gufo_text_session **out, gufo_error *err)
{
    gufo_session_params sp = {.struct_size = sizeof sp, .context_length = s->context_length};
    for (;;) {
        *out = NULL;
        gufo_status st = s->tg->session_create(s->config.model, &sp, out, err);
        if (st == GUFO_OK)
            return GUFO_OK;
        *out = NULL;
        if (!is_memory_status(st) || !srv_cache_evict_lru(s->cache))
            return st;
        memset(err, 0, sizeof *err);
    }
}

/* Rewinds `session` to `keep` tokens; false when the model cannot (its state is then not trusted). */
static bool session_rewind(srv_sched *s, gufo_text_session *session, size_t keep)
{
    gufo_error ignored = {0};
    uint32_t length = s->tg->session_length(s->config.model, session);
    if (length != keep && (length < keep || s->tg->truncate(s->config.model, session, (uint32_t)keep, &ignored) != GUFO_OK))
        return false;
    return s->tg->session_length(s->config.model, session) == keep;
}

/*
 * A copy of `source` rewound to `keep` tokens, through the model's snapshot and
 * restore, so the retained session keeps its longer history for its own
 * conversation (two conversations that share only a system prompt no longer
 * take each other's history away). NULL when the model cannot copy sessions
 * or memory ran out; the caller then rewinds the source itself.
 */
static gufo_text_session *session_fork(srv_sched *s, gufo_text_session *source, size_t keep)
{
    uint32_t length = s->tg->session_length(s->config.model, source);
    uint32_t granularity = s->info.snapshot_granularity;
    if (!s->can_fork || (granularity > 1 && length % granularity != 0))
        return NULL;
    gufo_error err = {0};
    gufo_text_session *copy = NULL;
    if (session_create_evicting(s, &copy, &err) != GUFO_OK)
        return NULL;
    gufo_text_snapshot *snapshot = NULL;
    bool ok = s->tg->snapshot_create(s->config.model, source, &snapshot, &err) == GUFO_OK &&
              s->tg->restore(s->config.model, copy, snapshot, &err) == GUFO_OK;
    if (snapshot)
        s->tg->snapshot_destroy(s->config.model, snapshot);
    if (!ok || !session_rewind(s, copy, keep)) {
        s->tg->session_destroy(s->config.model, copy);
        return NULL;
    }
    return copy;
}

/*
 * A session for a job that starts. The retained session sharing the longest
 * prefix of its prompt is used: copied and rewound when it holds more than
 * that prefix (it stays retained), else taken and rewound (also the fallback
 * when the model cannot copy). Otherwise a new session.
 */
static gufo_status session_acquire(srv_sched *s, srv_job *job, gufo_error *err)
{
    size_t keep = 0;
    srv_cache_entry entry;
    gufo_text_session *session = NULL;
    bool forked = false;
    if (srv_cache_take(s->cache, job->tokens, job->n_prompt, s->can_truncate, &entry, &keep)) {
        if (entry.n_tokens > keep && (session = session_fork(s, entry.session, keep)) != NULL) {
            forked = true;
            srv_cache_put_back(s->cache, &entry);
        } else if (session_rewind(s, entry.session, keep)) {
            session = entry.session;
            free(entry.tokens);
        } else {
            /* The provider could not rewind it: start afresh rather than trust its state. */
            s->tg->session_destroy(s->config.model, entry.session);
            free(entry.tokens);
        }
    }
    srv_cache_count_lookup(s->cache, session ? keep : 0, forked);
    if (session) {
        job->session = session;
        job->prefilled = keep;
        pthread_mutex_lock(&job->mu);
        job->n_cached = keep;
        pthread_mutex_unlock(&job->mu);
        return GUFO_OK;
    }
    return session_create_evicting(s, &job->session, err);
}

/* Gives a newly admitted job its session and sampler. */
static void job_start(srv_sched *s, srv_job *job)
{
    gufo_error err = {0};
    gufo_status st = session_acquire(s, job, &err);
    if (st != GUFO_OK) {
        active_remove(s, job);
        job_fail(s, job, "creating a session", st, &err);
        return;
    }
    st = gufo_sampler_create(&job->sampling, s->info.n_vocab, &job->sampler, &err);
    if (st != GUFO_OK) {
        active_remove(s, job);
        job_fail(s, job, "creating the sampler", st, &err);
        return;
    }
    job->phase = PHASE_PREFILL;
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
    s->iter_start_ns = now_ns();
    s->iter_step_ns = s->iter_decode_ns = 0;
    s->iter_decode_items = 0;
    /* Queued jobs whose deadline passed leave the line before anyone is admitted. */
    srv_job *expired = NULL;
    uint64_t now = now_ns();
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
    uint64_t now = now_ns();
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

static void decode_step(srv_sched *s, srv_job **jobs, size_t n_jobs)
{
    size_t max_batch = s->info.max_batch ? s->info.max_batch : 1;
    gufo_decode_item items[n_jobs ? n_jobs : 1];
    gufo_token next[n_jobs ? n_jobs : 1];
    srv_job *in_batch[n_jobs ? n_jobs : 1];
    size_t n = 0;
    for (size_t i = 0; i < n_jobs && n < max_batch; i++) {
        srv_job *job = jobs[i];
        if (job->phase != PHASE_DECODE)
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
    uint64_t t0 = now_ns();
    gufo_status st = s->tg->decode(s->config.model, &batch, &err);
    uint64_t spent = now_ns() - t0;
    s->iter_step_ns += spent;
    s->iter_decode_ns += spent;
    s->iter_decode_items += n;
    for (size_t i = 0; i < n; i++) {
        srv_job *job = in_batch[i];
        if (st != GUFO_OK) {
            active_remove(s, job);
            job_fail(s, job, "decode", st, &err);
        } else {
            history_append(job, items[i].token);
            job_take_token(s, job, next[i]); /* may finish (and free) the job */
        }
    }
}

static void prefill_step(srv_sched *s, srv_job **jobs, size_t n_jobs)
{
    for (size_t i = 0; i < n_jobs; i++) {
        srv_job *job = jobs[i];
        if (job->phase != PHASE_PREFILL)
            continue;
        size_t left = job->n_prompt - job->prefilled;
        size_t count = left < s->prefill_chunk ? left : s->prefill_chunk;
        bool last = count == left;
        gufo_token first = -1;
        gufo_step_output output = {.sampler = job->sampler, .out_token = &first, .out_logits = NULL,
                                   .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        uint64_t t0 = now_ns();
        gufo_status st = s->tg->prefill(s->config.model, job->session, job->tokens + job->prefilled, count,
                                        last ? &output : NULL, job->cancel, &err);
        if (is_memory_status(st) && srv_cache_count(s->cache) > 0 &&
            s->tg->session_length(s->config.model, job->session) == job->prefilled) {
            /* Out of memory with sessions retained: give them all back and try this chunk once more. */
            while (srv_cache_evict_lru(s->cache)) {
            }
            memset(&err, 0, sizeof err);
            first = -1;
            st = s->tg->prefill(s->config.model, job->session, job->tokens + job->prefilled, count,
                                last ? &output : NULL, job->cancel, &err);
        }
        uint64_t spent = now_ns() - t0;
        s->iter_step_ns += spent;
        if (st == GUFO_OK)
            srv_counters_prefill(s->config.counters, count, spent);
        if (st != GUFO_OK) {
            active_remove(s, job);
            job_fail(s, job, "prefill", st, &err);
            return;
        }
        job->prefilled += count;
        if (last) {
            job->phase = PHASE_DECODE;
            srv_counters_first_token(s->config.counters, (double)(now_ns() - job->submitted_ns) / 1e9);
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
            uint64_t total = now_ns() - s->iter_start_ns;
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
    while (srv_cache_evict_lru(s->cache)) {
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
        job_retain(job);
        job->next = NULL;
        job->phase = PHASE_QUEUED;
        job->submitted_ns = now_ns();
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
    while (srv_cache_evict_lru(s->cache)) {
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
    gufo_status st = tg->get_info(config->model, &s->info);
    if (st != GUFO_OK || s->info.n_vocab <= 0) {
        host_error("%s: get_info failed: %s", config->provider->id,
                   st != GUFO_OK ? gufo_status_str(st) : "the vocabulary is empty");
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
    s->prefill_chunk = s->info.max_prefill_chunk ? s->info.max_prefill_chunk : SRV_DEFAULT_PREFILL_CHUNK;
    if (s->info.max_sessions && s->config.max_sessions > s->info.max_sessions)
        s->config.max_sessions = s->info.max_sessions;
    if (s->config.max_sessions == 0)
        s->config.max_sessions = 1;
    s->can_truncate =
        (s->info.cache_caps & GUFO_CACHE_TRUNCATE) && GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, truncate);
    s->can_fork = s->can_truncate && (s->info.cache_caps & GUFO_CACHE_SNAPSHOT) &&
                  GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_create) &&
                  GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, restore) &&
                  GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_destroy);
    s->cache = srv_cache_create(tg, config->model, config->cache_sessions, s->info.session_bytes_per_token);
    if (gufo_text_buffer_create(0, &s->piece) != GUFO_OK || !s->cache) {
        host_error("out of memory");
        gufo_text_buffer_destroy(s->piece);
        srv_cache_destroy(s->cache);
        free(s);
        return HOST_EXIT_FAILURE;
    }
    pthread_mutex_init(&s->mu, NULL);
    /* Its waits are untimed today; on the deadlines' clock all the same, should one get a timeout. */
    bool have_cv = monotonic_cond_init(&s->cv) == 0;
    if (!have_cv || pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        host_error("cannot start the scheduler thread");
        if (have_cv)
            pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        gufo_text_buffer_destroy(s->piece);
        srv_cache_destroy(s->cache);
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
    srv_cache_destroy(s->cache); /* already empty: the thread returned every session */
    free(s);
}

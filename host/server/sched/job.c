/* host/server/sched/job.c — see server/sched/job.h and server/sched/job_state.h. */
#include "server/sched/job_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/sched/clock.h"
#include <gufo/host/cancel.h>
#include <gufo/host/text_buffer.h>

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
    for (size_t i = 0; i < params->n_checkpoint_hints && i < SRV_CHECKPOINTS_MAX; i++)
        job->checkpoint_hints[job->n_checkpoint_hints++] = params->checkpoint_hints[i];
    bool ok = pthread_mutex_init(&job->mu, NULL) == 0;
    if (ok && srv_monotonic_cond_init(&job->cv) != 0) {
        pthread_mutex_destroy(&job->mu);
        ok = false;
    }
    if (!ok) {
        free(job);
        return NULL;
    }
    job->tokens = malloc(params->n_prompt * sizeof *job->tokens);
    ok = job->tokens && srv_stop_filter_init(&job->stops, params->stop, params->n_stop) &&
         gufo_cancel_create(&job->cancel) == GUFO_OK;
    if (ok) {
        memcpy(job->tokens, params->prompt, params->n_prompt * sizeof *job->tokens);
        job->n_prompt = params->n_prompt;
        job->tokens_cap = params->n_prompt;
        job->n_known = params->n_prompt;
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
    srv_stop_filter_free(&job->stops);
    free(job->tokens);
    free(job->out);
    gufo_cancel_destroy(job->cancel);
    free(job);
}

void srv_job_retain(srv_job *job)
{
    pthread_mutex_lock(&job->mu);
    job->refs++;
    pthread_mutex_unlock(&job->mu);
}

void srv_job_cancel(srv_job *job, const char *reason)
{
    gufo_cancel_fire(job->cancel, reason);
}

srv_finish srv_job_take(srv_job *job, int timeout_ms, gufo_text_buffer *out)
{
    gufo_text_buffer_clear(out);
    struct timespec deadline;
    srv_deadline_after(&deadline, timeout_ms);
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

bool srv_job_publish(srv_job *job, const char *text, size_t len, size_t n_generated)
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

void srv_job_set_cached(srv_job *job, size_t n_cached)
{
    pthread_mutex_lock(&job->mu);
    job->n_cached = n_cached;
    pthread_mutex_unlock(&job->mu);
}

void srv_job_publish_finish(srv_job *job, srv_finish finish, const char *error, bool out_of_memory)
{
    pthread_mutex_lock(&job->mu);
    if (error)
        snprintf(job->error, sizeof job->error, "%s", error);
    job->out_of_memory = out_of_memory;
    job->finish = finish;
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
}

void srv_job_history_append(srv_job *job, gufo_token token)
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


/* host/server/sched/job_state.h — the inside of a job, for server/sched only.
 *
 * Route handlers see a job through server/sched/job.h; the scheduler needs
 * its fields. What the submitter may read is published under `mu` (text,
 * counts, the finish state); what only the scheduler thread touches is
 * marked so.
 */
#ifndef GUFO_HOST_SERVER_JOB_STATE_H
#define GUFO_HOST_SERVER_JOB_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/sched/job.h"
#include "server/sched/stop_filter.h"

/* Room for a provider's error detail (gufo_error.message) plus our prefix. */
#define SRV_ERROR_LEN (sizeof(((gufo_error *)0)->message) + 160)

typedef enum srv_job_phase { SRV_PHASE_QUEUED, SRV_PHASE_PREFILL, SRV_PHASE_DECODE } srv_job_phase;

struct srv_job {
    /* Immutable after srv_job_create(), except that the scheduler appends
     * generated tokens to `tokens` after the prompt (see n_known). */
    gufo_token *tokens;        /* the prompt, then the generated tokens the session holds */
    size_t n_prompt;
    size_t tokens_cap;
    gufo_sampling_params sampling;
    int64_t max_tokens;
    gufo_cancel *cancel;
    uint64_t timeout_ms;       /* 0 = no deadline */
    uint64_t deadline_ns;      /* CLOCK_MONOTONIC; set by srv_sched_submit() under the scheduler lock */
    uint64_t submitted_ns;     /* likewise: for the time to first token */
    size_t checkpoint_hints[SRV_CHECKPOINTS_MAX]; /* from srv_job_params */
    size_t n_checkpoint_hints;

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
    srv_job_phase phase;
    gufo_text_session *session;
    gufo_sampler *sampler;
    size_t prefilled;          /* prompt tokens appended so far */
    size_t checkpoints[SRV_CHECKPOINTS_MAX]; /* where the prefill stops for a snapshot, ascending */
    size_t n_checkpoints;
    size_t next_checkpoint;    /* checkpoints[next_checkpoint] is the next one to take */
    size_t n_taken;            /* tokens generated: the scheduler's own count, published as n_generated */
    size_t n_known;            /* tokens[0..n_known) are known: the prompt plus generated tokens the session appended */
    bool history_lost;         /* out of memory recording the history: the session is not retained */
    gufo_token pending;        /* produced, not yet appended to the session */
    gufo_detok_state detok;
    srv_stop_filter stops;     /* the stop strings and the text held back for them */
};

/** Takes one more reference (the scheduler's, at submission). */
void srv_job_retain(srv_job *job);

/** Publishes `len` bytes of text and the generated count to the submitter; false when memory ran out. */
bool srv_job_publish(srv_job *job, const char *text, size_t len, size_t n_generated);

/** Publishes how many prompt tokens came from the conversation cache. */
void srv_job_set_cached(srv_job *job, size_t n_cached);

/** Publishes the end: `finish`, and the error message (may be NULL) with whether it was out of memory. */
void srv_job_publish_finish(srv_job *job, srv_finish finish, const char *error, bool out_of_memory);

/** Records that the session appended `token` (a generated one), so a retained session's history is exact. */
void srv_job_history_append(srv_job *job, gufo_token token);

#endif /* GUFO_HOST_SERVER_JOB_STATE_H */

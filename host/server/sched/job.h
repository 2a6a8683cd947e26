/* host/server/sched/job.h — one generation request, as the scheduler runs it.
 *
 * A route handler creates a job from a ready prompt (tokens, sampling
 * parameters, limits and stop strings), submits it (server/sched/scheduler.h)
 * and then reads its text with srv_job_take() until it finishes: raw model
 * text with stop strings already cut (server/sched/stop_filter.h: text that
 * might still become a stop string is held back until decided).
 *
 * Jobs are reference counted: the submitter and the scheduler each hold one
 * reference. Every function here may be called from any thread.
 */
#ifndef GUFO_HOST_SERVER_JOB_H
#define GUFO_HOST_SERVER_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/counters.h"
#include "server/sched/checkpoints.h"

typedef struct srv_job srv_job;

/** Why a job stopped producing text. */
typedef enum srv_finish {
    SRV_FINISH_NONE = 0,   /* still running */
    SRV_FINISH_STOP,       /* end-of-generation token or a stop string */
    SRV_FINISH_LENGTH,     /* max_tokens reached or the context is full */
    SRV_FINISH_CANCELLED,  /* its cancel token fired (client disconnected, shutdown) */
    SRV_FINISH_ERROR,      /* a step failed; see srv_job_error() */
    SRV_FINISH_DEADLINE    /* its deadline (srv_job_params.timeout_ms) passed first -> 408 */
} srv_finish;
_Static_assert(SRV_FINISH_DEADLINE + 1 == SRV_FINISH_KINDS, "server/counters.h counts each srv_finish apart");

/** What a job asks for; copied by srv_job_create(). */
typedef struct srv_job_params {
    const gufo_token *prompt;
    size_t n_prompt;                /* >= 1 */
    gufo_sampling_params sampling;  /* validated by the caller */
    int64_t max_tokens;             /* < 0: until end of generation or the context is full */
    const char *const *stop;        /* stop strings (may be NULL) */
    size_t n_stop;
    uint64_t timeout_ms;            /* 0 = no deadline; else the job ends SRV_FINISH_DEADLINE this long after submit */
    /* Prompt positions worth a checkpoint for a model that cannot rewind (server/sched/checkpoints.h);
     * at most SRV_CHECKPOINTS_MAX are kept. None: the scheduler's own choice. */
    const size_t *checkpoint_hints;
    size_t n_checkpoint_hints;
} srv_job_params;

/** Creates a job holding one reference for the caller. Returns NULL when memory ran out. */
srv_job *srv_job_create(const srv_job_params *params);

/** Fires the job's cancel token (any thread); the scheduler drops it before its next step. */
void srv_job_cancel(srv_job *job, const char *reason);

/**
 * Waits up to `timeout_ms` for text or the end of the job. Moves the text
 * produced since the last call into `out` (cleared first) and returns the
 * finish state: SRV_FINISH_NONE while the job runs.
 */
srv_finish srv_job_take(srv_job *job, int timeout_ms, gufo_text_buffer *out);

/** Tokens generated so far (usage.completion_tokens). */
size_t srv_job_completion_tokens(srv_job *job);

/** Prompt tokens that were served from the conversation cache instead of prefilled (usage.prompt_tokens_details.cached_tokens). */
size_t srv_job_cached_tokens(srv_job *job);

/**
 * Which stop string (an index into srv_job_params.stop) ended a SRV_FINISH_STOP
 * job; -1 when the model's end-of-generation token ended it, or the job has
 * not ended by stopping.
 */
int srv_job_stop_index(srv_job *job);

/** The error message of a SRV_FINISH_ERROR job, and whether it was out of memory (503) rather than a failure (500). */
const char *srv_job_error(srv_job *job, bool *out_of_memory);

/** Drops a reference; the last one frees the job. NULL is a no-op. */
void srv_job_release(srv_job *job);

#endif /* GUFO_HOST_SERVER_JOB_H */

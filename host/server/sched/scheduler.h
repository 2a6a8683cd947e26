/* host/server/sched/scheduler.h — the serving scheduler: one thread that owns the model.
 *
 * Providers are called for session and step work from one thread only (the
 * contract in text_generation.h), so every prefill, decode, session_create and
 * session_destroy happens on the scheduler thread. HTTP threads do the
 * thread-safe text side themselves (render the chat, tokenize, parse tool
 * calls) and hand the scheduler a ready job: prompt tokens, sampling
 * parameters, limits and stop strings.
 *
 * Each loop iteration of the scheduler:
 *   1. drops jobs whose cancel token fired (client gone, shutdown): their
 *      session is destroyed at once;
 *   2. admits queued jobs while fewer than `max_sessions` are active;
 *   3. runs ONE decode step over every active job that is generating (up to
 *      max_batch items: continuous batching — jobs join and leave between
 *      steps);
 *   4. runs ONE prefill chunk (<= max_prefill_chunk tokens) of one job that is
 *      still reading its prompt, round-robin, so a long prompt never stalls
 *      the streams that are already generating.
 *
 * Deadlines: a job with srv_job_params.timeout_ms ends SRV_FINISH_DEADLINE
 * once that time has passed since srv_sched_submit(), whether it still waits
 * in the queue or runs (checked before every step).
 *
 * Conversation cache (server/sched/cache.h): a job that ends without a failed step
 * leaves its session, with the exact token history it holds, in the cache
 * instead of destroying it. An admitted job first looks there for the session
 * sharing the longest prefix with its prompt and prefills only the rest; a
 * session holding more than that prefix is copied (snapshot + restore) and the
 * copy rewound with truncate(), so the original stays for its conversation
 * (without snapshots the original itself is rewound; without truncate only a
 * session that needs no rewinding qualifies). srv_job_cached_tokens() then
 * reports the reused tokens. Retained
 * sessions are evicted least recently used when the cache is full, when
 * session_create() or a prefill chunk fails for memory or for the session
 * limit (then tried again), and from the memory pool's pressure handler.
 * Output does not depend on the cache: the same tokens reach the same state.
 *
 * A job's text leaves the scheduler through srv_job_take(): raw model text
 * with stop strings already cut (text that might still become a stop string
 * is held back until decided). Jobs are reference counted: the submitter and
 * the scheduler each hold one reference.
 */
#ifndef GUFO_HOST_SERVER_SCHED_H
#define GUFO_HOST_SERVER_SCHED_H

#include <stddef.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/sched/cache.h"
#include "server/counters.h"

typedef struct srv_sched srv_sched;
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
} srv_job_params;

/** Scheduler settings. */
typedef struct srv_sched_config {
    const gufo_provider *provider;  /* a text_generation provider */
    gufo_model *model;              /* created by it; the scheduler is its only step caller */
    uint32_t context_length;        /* per session; 0 = the model's */
    uint32_t max_sessions;          /* active jobs at once (>= 1) */
    uint32_t max_queue;             /* jobs waiting for a session before submit says "full" */
    uint32_t cache_sessions;        /* finished sessions retained for reuse (0 = none); see server/sched/cache.h */
    gufo_memory *memory;            /* the model's pool (may be NULL): its pressure handler evicts retained sessions */
    srv_counters *counters;         /* tokens, jobs, time to first token, step-time split (may be NULL) */
} srv_sched_config;

/** Gauges for /metrics; any thread. */
typedef struct srv_sched_stats {
    uint32_t queued;                /* waiting for a session */
    uint32_t active;                /* holding a session */
    uint32_t max_sessions;          /* active at most */
    srv_cache_stats cache;
} srv_sched_stats;

/** Submission results. */
typedef enum srv_submit_result {
    SRV_SUBMIT_OK = 0,
    SRV_SUBMIT_QUEUE_FULL,          /* -> 429 */
    SRV_SUBMIT_SHUTTING_DOWN        /* -> 503 */
} srv_submit_result;

/** Checks the provider, reads the model facts and starts the thread. Errors are printed ("gufo: ..."). */
int srv_sched_start(const srv_sched_config *config, srv_sched **out);

/** Model facts the scheduler read (for request validation on HTTP threads). */
const gufo_text_model_info *srv_sched_info(const srv_sched *sched);

/** Reads the gauges (any thread). */
void srv_sched_read_stats(srv_sched *sched, srv_sched_stats *out);

/** The session context length in effect. */
uint32_t srv_sched_context(const srv_sched *sched);

/**
 * Cancels every job (queued or active) with `reason`, destroys their sessions
 * and joins the thread. Later submissions get SRV_SUBMIT_SHUTTING_DOWN. Jobs
 * still referenced by HTTP threads stay valid until released; they read as
 * SRV_FINISH_CANCELLED. NULL is a no-op.
 */
void srv_sched_stop(srv_sched *sched, const char *reason);

/** Frees a stopped scheduler, once no HTTP thread can call it any more. NULL is a no-op. */
void srv_sched_destroy(srv_sched *sched);

/** Creates a job holding one reference for the caller. Returns NULL when memory ran out. */
srv_job *srv_job_create(const srv_job_params *params);

/** Queues the job; on success the scheduler takes its own reference. */
srv_submit_result srv_sched_submit(srv_sched *sched, srv_job *job);

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

#endif /* GUFO_HOST_SERVER_SCHED_H */

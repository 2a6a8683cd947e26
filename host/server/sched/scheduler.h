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
 * Sessions (server/sched/sessions.h): an admitted job takes the retained
 * session sharing the longest prefix with its prompt and prefills only the
 * rest (srv_job_cached_tokens() then reports the reused tokens); a job that
 * ends without a failed step leaves its session in the conversation cache.
 * For a model that snapshots but cannot rewind, the prefill of a prompt also
 * stops at a few positions to snapshot the session there: checkpoints, cached
 * beside the retained sessions and restored into a new session for a later
 * prompt they are a prefix of (server/sched/checkpoints.h says where).
 * Retained sessions are evicted least recently used when the cache is full,
 * when session_create() or a prefill chunk fails for memory or for the session
 * limit (then tried again), and from the memory pool's pressure handler.
 *
 * Jobs (server/sched/job.h) are what HTTP threads hand over and read from.
 */
#ifndef GUFO_HOST_SERVER_SCHED_H
#define GUFO_HOST_SERVER_SCHED_H

#include <stdbool.h>
#include <stddef.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/counters.h"
#include "server/sched/cache.h"
#include "server/sched/job.h"

typedef struct srv_sched srv_sched;

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
    const char *speculative;        /* --speculative METHOD; NULL or "off": plain decoding. Used while one job
                                     * decodes alone: several decode as one batch (every weight read once) */
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
 * True when the scheduler takes checkpoints while prefilling (a model that
 * snapshots but cannot rewind, and a conversation cache): only then are a
 * job's checkpoint hints read, so a route computes them only then. Any thread.
 */
bool srv_sched_takes_checkpoints(const srv_sched *sched);

/**
 * Cancels every job (queued or active) with `reason`, destroys their sessions
 * and joins the thread. Later submissions get SRV_SUBMIT_SHUTTING_DOWN. Jobs
 * still referenced by HTTP threads stay valid until released; they read as
 * SRV_FINISH_CANCELLED. NULL is a no-op.
 */
void srv_sched_stop(srv_sched *sched, const char *reason);

/** Frees a stopped scheduler, once no HTTP thread can call it any more. NULL is a no-op. */
void srv_sched_destroy(srv_sched *sched);

/** Queues the job; on success the scheduler takes its own reference. */
srv_submit_result srv_sched_submit(srv_sched *sched, srv_job *job);

#endif /* GUFO_HOST_SERVER_SCHED_H */

/* host/server/sched/sessions.h — where a job's session comes from and where
 * it goes: admission from the conversation cache (fork or rewind) or new,
 * eviction when the model runs short, retention when the job ends.
 *
 * A job that starts gets the retained session (server/sched/cache.h) sharing
 * the longest prefix with its prompt, and prefills only the rest. A retained
 * session holding more than that prefix is copied (snapshot + restore) and the
 * copy rewound with truncate(), so the original stays for its own
 * conversation; without snapshots the original itself is rewound; without
 * truncate only a session that needs no rewinding qualifies, or a checkpoint
 * (a snapshot the scheduler took while prefilling an earlier prompt, see
 * server/sched/checkpoints.h) restored into a new session, whichever serves
 * the longer prefix. When creating a session fails for memory or for the
 * session limit, cached entries are evicted, least recently used first, and
 * it is tried again. A job that ends
 * without a failed step leaves its session, with the exact token history it
 * holds, in the cache. Output does not depend on any of this: the same tokens
 * reach the same state.
 *
 * Scheduler thread only, like every session call of the provider.
 */
#ifndef GUFO_HOST_SERVER_SESSIONS_H
#define GUFO_HOST_SERVER_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/text_generation.h>

#include "server/sched/cache.h"

typedef struct srv_sessions {
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    uint32_t context_length;       /* of every session created */
    uint32_t snapshot_granularity; /* the model's: a session is copied only at a multiple of it */
    bool can_truncate;             /* the provider's sessions rewind cheaply and exactly */
    bool can_fork;                 /* ... and can be copied (snapshot + restore) */
    bool can_checkpoint;           /* snapshots but no rewinding, and a cache: checkpoints are taken */
    srv_cache *cache;              /* the retained sessions and checkpoints (stats: any thread) */
} srv_sessions;

/**
 * Reads what the provider's sessions can do from `info` and its slots, and
 * creates a cache of `cache_sessions` retained sessions; for a model that
 * snapshots but cannot rewind also of up to SRV_CHECKPOINTS_PER_SESSION
 * checkpoints per retained session. False when memory ran out.
 */
bool srv_sessions_init(srv_sessions *sessions, const gufo_text_generation_iface *tg, gufo_model *model,
                       const gufo_text_model_info *info, uint32_t context_length, uint32_t cache_sessions);

/*
 * Checkpoints kept per retained session: a chat turn takes up to two (the end
 * of its messages, the start of its last user message), so the cache holds
 * both for as many conversations as it holds sessions.
 */
#define SRV_CHECKPOINTS_PER_SESSION 2u

/** Frees the cache (empty it first: srv_cache_evict_lru() until false). */
void srv_sessions_free(srv_sessions *sessions);

/** Failures that more free memory (or a free session slot) could cure: they answer 503, and the cache is evicted first. */
bool srv_sessions_short_of_memory(gufo_status status);

/**
 * A session for a prompt of `n_prompt` tokens: a retained one already holding
 * its first `*reused` tokens, or a new, empty one (`*reused` 0).
 */
gufo_status srv_sessions_acquire(srv_sessions *sessions, const gufo_token *prompt, size_t n_prompt,
                                 gufo_text_session **out, size_t *reused, gufo_error *err);

/**
 * Snapshots `session`, which holds exactly `tokens[0..n)`, into the cache as a
 * checkpoint, unless one with that history is cached already. Best effort: a
 * snapshot that fails (memory) is no checkpoint, and nothing else changes.
 */
void srv_sessions_checkpoint(srv_sessions *sessions, gufo_text_session *session, const gufo_token *tokens, size_t n);

/**
 * Returns a finished job's session: into the cache when `trusted` (no step
 * failed, the history was recorded) and `history` (`n_history` tokens) covers
 * what it holds, else to the provider.
 */
void srv_sessions_release(srv_sessions *sessions, gufo_text_session *session, const gufo_token *history,
                          size_t n_history, bool trusted);

#endif /* GUFO_HOST_SERVER_SESSIONS_H */

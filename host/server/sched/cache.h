/* host/server/sched/cache.h — the conversation cache of `gufo serve`: retained
 * sessions and checkpoints.
 *
 * When a request finishes, its session still holds the model's state for the
 * prompt and the tokens generated after it. Multi-turn clients (chat UIs,
 * coding agents) send that same history again, plus a little, with the next
 * request; keeping the session lets the scheduler prefill only the new tail.
 *
 * A model that can snapshot but not rewind (recurrent state) cannot start
 * from a retained session whose history goes past the next prompt's common
 * prefix, which is the usual case in chat (the template drops earlier
 * reasoning, the client edits or regenerates a message). For such models the
 * scheduler also keeps checkpoints: snapshots taken at chosen prompt positions
 * while prefilling (server/sched/checkpoints.h), each with the token history
 * it holds. A checkpoint is restored into a new session; it stays cached.
 *
 * The cache is a small set of both kinds of entries, each with a copy of its
 * token history, evicted least-recently-used in one order: retained sessions
 * are limited by `capacity`, checkpoints by `checkpoint_capacity`, and memory
 * pressure takes whichever entry is oldest. It is policy only: it never calls
 * a step, and the only provider calls it makes free what it evicts or is
 * handed to discard. Restoring a checkpoint or rewinding (or copying) a
 * session it hands out is the caller's job (server/sched/sessions.h).
 *
 * Which models' sessions are interchangeable (the provider's cache_identity)
 * does not matter here: one process serves one loaded model, so every
 * retained session belongs to it, and the cache dies with the process.
 *
 * Threading: everything but srv_cache_read_stats() runs on the scheduler
 * thread (the only caller of session functions). Stats are atomics, so
 * /metrics reads them from any thread.
 */
#ifndef GUFO_HOST_SERVER_CACHE_H
#define GUFO_HOST_SERVER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/text_generation.h>

typedef struct srv_cache srv_cache;

/** Counters for /metrics (a consistent-enough snapshot: each field is read atomically). */
typedef struct srv_cache_stats {
    uint32_t sessions;        /* retained now */
    uint64_t tokens;          /* tokens the retained sessions hold */
    uint64_t bytes;           /* tokens x the model's session_bytes_per_token (an estimate; 0 when unknown) */
    uint64_t hits;            /* requests that reused a retained session */
    uint64_t misses;          /* requests that started from an empty session */
    uint64_t reused_tokens;   /* prompt tokens served from retained sessions instead of prefilled */
    uint64_t evictions;       /* retained sessions destroyed to make room (LRU, memory, session limit) */
    uint64_t forks;           /* hits served from a copy, so the retained session kept its longer history */
    uint32_t checkpoints;     /* checkpoints cached now */
    uint64_t checkpoint_bytes;        /* checkpoints x the model's snapshot_bytes (an estimate; 0 when unknown) */
    uint64_t checkpoint_hits;         /* hits served by restoring a checkpoint (also counted in `hits`) */
    uint64_t checkpoint_creations;    /* checkpoints taken and cached */
    uint64_t checkpoint_evictions;    /* checkpoints destroyed: LRU, memory, shutdown, or found unrestorable */
} srv_cache_stats;

/**
 * An entry taken out of the cache, with the exact history it holds: a retained
 * session (`session`) or a checkpoint (`snapshot`: the state after `tokens`);
 * one of the two is set.
 */
typedef struct srv_cache_entry {
    gufo_text_session *session;
    gufo_text_snapshot *snapshot;
    const gufo_text_session *source; /* a checkpoint: the session it was taken from */
    gufo_token *tokens;       /* malloc'd; owned with the entry */
    size_t n_tokens;
} srv_cache_entry;

/**
 * Creates a cache of at most `capacity` retained sessions and
 * `checkpoint_capacity` checkpoints of `model` (0 = keep none: the put
 * functions destroy at once). `bytes_per_token` and `snapshot_bytes` feed the
 * bytes estimates. Returns NULL when memory ran out.
 */
srv_cache *srv_cache_create(const gufo_text_generation_iface *tg, gufo_model *model, uint32_t capacity,
                            uint32_t checkpoint_capacity, uint64_t bytes_per_token, uint64_t snapshot_bytes);

/** Destroys every retained session and the cache. NULL is a no-op. */
void srv_cache_destroy(srv_cache *cache);

/**
 * Takes ownership of `session`, which holds exactly `tokens[0..n)` (copied).
 * Evicts the least recently used entry when full; destroys the session when
 * the cache keeps none or the copy cannot be made.
 */
void srv_cache_put(srv_cache *cache, gufo_text_session *session, const gufo_token *tokens, size_t n);

/**
 * Takes ownership of `snapshot`, a checkpoint of `source` holding exactly
 * `tokens[0..n)` (copied), and counts its creation. Evicts the least recently
 * used checkpoint when the checkpoints are full; destroys the snapshot when
 * the cache keeps none or the copy cannot be made.
 *
 * A checkpoint lives as long as its source session: when the cache destroys
 * that session (evicted, or handed to srv_cache_destroy_session()) it destroys
 * the session's checkpoints first, and using a checkpoint keeps its session
 * fresh in the LRU order. (A provider may read part of a snapshot from its
 * session, and copy it out when the session goes: qwen35-cpu's attention rows,
 * as large as the session's KV cache. So the memory is freed, not moved.)
 * Every session the scheduler destroys goes through the cache, so a source is
 * never a dangling pointer.
 */
void srv_cache_put_checkpoint(srv_cache *cache, gufo_text_snapshot *snapshot, const gufo_text_session *source,
                              const gufo_token *tokens, size_t n);

/**
 * True when a checkpoint holding exactly `tokens[0..n)` is cached; it becomes
 * the most recently used (so a conversation that keeps coming back to it
 * keeps it). The scheduler asks before taking the same snapshot again.
 */
bool srv_cache_has_checkpoint(srv_cache *cache, const gufo_token *tokens, size_t n);

/**
 * Finds the entry that serves the longest prefix of `prompt` and takes it out
 * of the cache into `*out` (the caller owns it now); `*keep` gets how many of
 * its tokens are usable: the common prefix, but never all of the prompt (the
 * last prompt token must be prefilled again so the step produces the next
 * token).
 *
 * A retained session qualifies with any common prefix when `can_truncate`,
 * else only when its whole history is such a prefix. A checkpoint qualifies
 * only when its whole history is such a prefix (`*keep` is then its length).
 * On a tie the session wins: it needs no restore.
 *
 * The caller rewinds the session (or a copy of it) to `*keep`, or restores
 * the checkpoint into a new session, and prefills the rest; then hands the
 * entry back with srv_cache_put_back(), srv_cache_put() (a session), or
 * srv_cache_discard(). While a checkpoint is out, its source session is not
 * evicted (the restore reads from it). Returns false when no entry shares a token. Counts
 * nothing: see srv_cache_count_lookup().
 */
bool srv_cache_take(srv_cache *cache, const gufo_token *prompt, size_t n_prompt, bool can_truncate,
                    srv_cache_entry *out, size_t *keep);

/** Returns a taken entry unchanged, as the most recently used (its tokens are taken over). */
void srv_cache_put_back(srv_cache *cache, srv_cache_entry *entry);

/**
 * Destroys a taken entry (a session whose state is not trusted, a checkpoint
 * that would not restore: counted as a checkpoint eviction), with eviction
 * held off meanwhile as srv_cache_destroy_session() explains.
 */
void srv_cache_discard(srv_cache *cache, srv_cache_entry *entry);

/**
 * Destroys a session the cache does not hold, and the checkpoints taken from
 * it first (see srv_cache_put_checkpoint()). Eviction is held off while the
 * provider destroys anything: a provider may charge memory then (qwen35-cpu
 * copies the attention rows a live snapshot still needs), and an eviction
 * from the memory pool's pressure handler would free one of those snapshots
 * while the provider walks them. Every session the scheduler destroys goes
 * through here.
 */
void srv_cache_destroy_session(srv_cache *cache, gufo_text_session *session);

/** How a lookup was served, for the counters. */
typedef enum srv_cache_source {
    SRV_CACHE_MISS = 0,       /* a new, empty session */
    SRV_CACHE_SESSION,        /* a retained session, taken over (rewound if needed) */
    SRV_CACHE_FORK,           /* a copy of a retained session, which stays retained */
    SRV_CACHE_CHECKPOINT      /* a checkpoint restored into a new session */
} srv_cache_source;

/** Counts a lookup's outcome: `reused` tokens served from the cache by `source` (0 tokens = a miss). */
void srv_cache_count_lookup(srv_cache *cache, size_t reused, srv_cache_source source);

/**
 * Destroys the least recently used entry, session or checkpoint. Returns
 * false when none is left, or while eviction is held off (see
 * srv_cache_destroy_session()).
 */
bool srv_cache_evict_lru(srv_cache *cache);

/** Number of cached entries, sessions and checkpoints (scheduler thread). */
uint32_t srv_cache_count(const srv_cache *cache);

/** Reads the counters; any thread. */
void srv_cache_read_stats(const srv_cache *cache, srv_cache_stats *out);

#endif /* GUFO_HOST_SERVER_CACHE_H */

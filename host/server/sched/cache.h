/* host/server/sched/cache.h — the conversation cache of `gufo serve`: retained sessions.
 *
 * When a request finishes, its session still holds the model's state for the
 * prompt and the tokens generated after it. Multi-turn clients (chat UIs,
 * coding agents) send that same history again, plus a little, with the next
 * request; keeping the session lets the scheduler prefill only the new tail.
 *
 * The cache is a small set of retained sessions, each with a copy of the token
 * history it holds, evicted least-recently-used. It is policy only: it never
 * calls a step, and the one provider call it makes is session_destroy() when
 * it evicts. Rewinding (or copying) a session it hands out is the scheduler's
 * job.
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
} srv_cache_stats;

/** A retained session taken out of the cache, with the exact history it holds. */
typedef struct srv_cache_entry {
    gufo_text_session *session;
    gufo_token *tokens;       /* malloc'd; owned with the entry */
    size_t n_tokens;
} srv_cache_entry;

/**
 * Creates a cache of at most `capacity` retained sessions of `model` (0 = keep
 * none: srv_cache_put() destroys at once). `bytes_per_token` feeds the bytes
 * estimate. Returns NULL when memory ran out.
 */
srv_cache *srv_cache_create(const gufo_text_generation_iface *tg, gufo_model *model, uint32_t capacity,
                            uint64_t bytes_per_token);

/** Destroys every retained session and the cache. NULL is a no-op. */
void srv_cache_destroy(srv_cache *cache);

/**
 * Takes ownership of `session`, which holds exactly `tokens[0..n)` (copied).
 * Evicts the least recently used entry when full; destroys the session when
 * the cache keeps none or the copy cannot be made.
 */
void srv_cache_put(srv_cache *cache, gufo_text_session *session, const gufo_token *tokens, size_t n);

/**
 * Finds the retained session whose history shares the longest prefix with
 * `prompt` and takes it out of the cache into `*out` (the caller owns it now);
 * `*keep` gets how many of its tokens are usable: the common prefix, but never
 * all of the prompt (the last prompt token must be prefilled again so the step
 * produces the next token). The caller rewinds the session (or a copy of it)
 * to `*keep` and prefills the rest, then hands it back with
 * srv_cache_put_back(), srv_cache_put() or destroys it. Without
 * `can_truncate` only a session whose whole history is such a prefix
 * qualifies. Returns false when no session shares a token. Counts nothing:
 * see srv_cache_count_lookup().
 */
bool srv_cache_take(srv_cache *cache, const gufo_token *prompt, size_t n_prompt, bool can_truncate,
                    srv_cache_entry *out, size_t *keep);

/** Returns a taken entry unchanged, as the most recently used (its tokens are taken over). */
void srv_cache_put_back(srv_cache *cache, srv_cache_entry *entry);

/** Counts a lookup's outcome: `reused` tokens served from the cache (0 = a miss), `forked` when from a copy. */
void srv_cache_count_lookup(srv_cache *cache, size_t reused, bool forked);

/** Destroys the least recently used retained session. Returns false when none is left. */
bool srv_cache_evict_lru(srv_cache *cache);

/** Number of retained sessions (scheduler thread). */
uint32_t srv_cache_count(const srv_cache *cache);

/** Reads the counters; any thread. */
void srv_cache_read_stats(const srv_cache *cache, srv_cache_stats *out);

#endif /* GUFO_HOST_SERVER_CACHE_H */

/* host/server/sched/cache.c — see server/sched/cache.h. */
#include "server/sched/cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct cache_entry {
    gufo_text_session *session;   /* a retained session ... */
    gufo_text_snapshot *snapshot; /* ... or a checkpoint: exactly one is set */
    const gufo_text_session *source; /* a checkpoint: the session it was taken from (see drop_checkpoints_of) */
    gufo_token *tokens;           /* the history it holds */
    size_t n_tokens;
    uint64_t last_used;           /* the cache's clock when it was put: smaller = less recently used */
} cache_entry;

struct srv_cache {
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    uint32_t capacity;            /* retained sessions at most */
    uint32_t checkpoint_capacity; /* checkpoints at most */
    uint64_t bytes_per_token;
    uint64_t snapshot_bytes;
    uint64_t clock;
    cache_entry *entries;         /* [0, n_entries) in no particular order; both capacities are small */
    uint32_t n_entries;
    uint32_t n_sessions, n_checkpoints;
    unsigned held;                /* > 0 while a provider destroys something: no eviction (see cache.h) */
    const gufo_text_session *pinned; /* the source of the checkpoint taken out, which must outlive its restore */

    /* Written on the scheduler thread, read by /metrics. */
    atomic_uint_least32_t stat_sessions;
    atomic_uint_least64_t stat_tokens;
    atomic_uint_least64_t stat_hits;
    atomic_uint_least64_t stat_misses;
    atomic_uint_least64_t stat_reused;
    atomic_uint_least64_t stat_evictions;
    atomic_uint_least64_t stat_forks;
    atomic_uint_least32_t stat_checkpoints;
    atomic_uint_least64_t stat_checkpoint_hits;
    atomic_uint_least64_t stat_checkpoint_creations;
    atomic_uint_least64_t stat_checkpoint_evictions;
};

srv_cache *srv_cache_create(const gufo_text_generation_iface *tg, gufo_model *model, uint32_t capacity,
                            uint32_t checkpoint_capacity, uint64_t bytes_per_token, uint64_t snapshot_bytes)
{
    srv_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    uint64_t slots = (uint64_t)capacity + checkpoint_capacity;
    if (slots && !(c->entries = calloc((size_t)slots, sizeof *c->entries))) {
        free(c);
        return NULL;
    }
    c->tg = tg;
    c->model = model;
    c->capacity = capacity;
    c->checkpoint_capacity = checkpoint_capacity;
    c->bytes_per_token = bytes_per_token;
    c->snapshot_bytes = snapshot_bytes;
    atomic_init(&c->stat_sessions, 0);
    atomic_init(&c->stat_tokens, 0);
    atomic_init(&c->stat_hits, 0);
    atomic_init(&c->stat_misses, 0);
    atomic_init(&c->stat_reused, 0);
    atomic_init(&c->stat_evictions, 0);
    atomic_init(&c->stat_forks, 0);
    atomic_init(&c->stat_checkpoints, 0);
    atomic_init(&c->stat_checkpoint_hits, 0);
    atomic_init(&c->stat_checkpoint_creations, 0);
    atomic_init(&c->stat_checkpoint_evictions, 0);
    return c;
}

/* Unlinks entry `i` (moving the last one into its place) and returns it. */
static cache_entry remove_entry(srv_cache *c, uint32_t i)
{
    cache_entry e = c->entries[i];
    c->entries[i] = c->entries[--c->n_entries];
    if (e.session) {
        c->n_sessions--;
        atomic_store(&c->stat_sessions, c->n_sessions);
        atomic_fetch_sub(&c->stat_tokens, e.n_tokens);
    } else {
        c->n_checkpoints--;
        atomic_store(&c->stat_checkpoints, c->n_checkpoints);
    }
    return e;
}

static void drop_checkpoints_of(srv_cache *c, const gufo_text_session *session);

/* Frees what an entry holds, eviction held off while the provider works. */
static void drop_entry(srv_cache *c, cache_entry e)
{
    if (e.session)
        drop_checkpoints_of(c, e.session);
    c->held++;
    if (e.session)
        c->tg->session_destroy(c->model, e.session);
    else
        c->tg->snapshot_destroy(c->model, e.snapshot);
    c->held--;
    free(e.tokens);
}

/*
 * Destroys the checkpoints taken from `session` before the session goes. A
 * checkpoint lives as long as its session: a provider may keep only the state
 * that cannot be recomputed in the snapshot and read the rest from the
 * session (qwen35-cpu: the recurrent state in the snapshot, the attention rows
 * in the session), and when the session goes it must copy those rows into
 * every live snapshot of it: as much memory as the session's KV cache, moved
 * instead of freed. Its checkpoints are also the older part of its
 * conversation, so they are worth less than what stays.
 */
static void drop_checkpoints_of(srv_cache *c, const gufo_text_session *session)
{
    for (uint32_t i = 0; i < c->n_entries;) {
        if (c->entries[i].snapshot && c->entries[i].source == session) {
            atomic_fetch_add(&c->stat_checkpoint_evictions, 1);
            drop_entry(c, remove_entry(c, i)); /* the last entry moved to i: look at i again */
        } else {
            i++;
        }
    }
}

/* A checkpoint just used keeps the session it reads from fresh too: it cannot outlive it. */
static void touch_source(srv_cache *c, const gufo_text_session *source)
{
    for (uint32_t i = 0; source && i < c->n_entries; i++)
        if (c->entries[i].session == source)
            c->entries[i].last_used = ++c->clock;
}

void srv_cache_destroy(srv_cache *c)
{
    if (!c)
        return;
    while (c->n_entries)
        drop_entry(c, remove_entry(c, c->n_entries - 1));
    free(c->entries);
    free(c);
}

void srv_cache_destroy_session(srv_cache *c, gufo_text_session *session)
{
    drop_entry(c, (cache_entry){.session = session});
}

/* Evicts the least recently used entry of one kind (`checkpoints`), or of either kind when `any`. */
static bool evict_oldest(srv_cache *c, bool any, bool checkpoints)
{
    if (!c || c->held)
        return false;
    uint32_t oldest = UINT32_MAX;
    for (uint32_t i = 0; i < c->n_entries; i++) {
        bool is_checkpoint = c->entries[i].snapshot != NULL;
        if ((!any && is_checkpoint != checkpoints) || (c->pinned && c->entries[i].session == c->pinned))
            continue;
        if (oldest == UINT32_MAX || c->entries[i].last_used < c->entries[oldest].last_used)
            oldest = i;
    }
    if (oldest == UINT32_MAX)
        return false;
    cache_entry e = remove_entry(c, oldest);
    atomic_fetch_add(e.snapshot ? &c->stat_checkpoint_evictions : &c->stat_evictions, 1);
    drop_entry(c, e);
    return true;
}

bool srv_cache_evict_lru(srv_cache *c)
{
    return evict_oldest(c, true, false);
}

/* Adds an entry whose tokens the cache takes over, evicting the least recently used of its kind when full. */
static void add_entry(srv_cache *c, cache_entry e)
{
    bool checkpoint = e.snapshot != NULL;
    if (checkpoint ? c->n_checkpoints == c->checkpoint_capacity : c->n_sessions == c->capacity) {
        if (!evict_oldest(c, false, checkpoint)) {
            drop_entry(c, e); /* eviction is held off: no room now */
            return;
        }
    }
    touch_source(c, e.source);
    e.last_used = ++c->clock;
    c->entries[c->n_entries++] = e;
    if (checkpoint) {
        c->n_checkpoints++;
        atomic_store(&c->stat_checkpoints, c->n_checkpoints);
    } else {
        c->n_sessions++;
        atomic_store(&c->stat_sessions, c->n_sessions);
        atomic_fetch_add(&c->stat_tokens, e.n_tokens);
    }
}

void srv_cache_put_back(srv_cache *c, srv_cache_entry *entry)
{
    cache_entry e = {.session = entry->session, .snapshot = entry->snapshot, .source = entry->source,
                     .tokens = entry->tokens, .n_tokens = entry->n_tokens};
    if (e.snapshot)
        c->pinned = NULL;
    if ((e.snapshot ? c->checkpoint_capacity : c->capacity) == 0)
        drop_entry(c, e);
    else
        add_entry(c, e);
    *entry = (srv_cache_entry){0};
}

void srv_cache_discard(srv_cache *c, srv_cache_entry *entry)
{
    if (entry->snapshot) {
        c->pinned = NULL;
        atomic_fetch_add(&c->stat_checkpoint_evictions, 1);
    }
    drop_entry(c, (cache_entry){.session = entry->session, .snapshot = entry->snapshot, .tokens = entry->tokens});
    *entry = (srv_cache_entry){0};
}

/* A copy of tokens[0..n); NULL when there is nothing to copy, or no memory. */
static gufo_token *copy_tokens(const gufo_token *tokens, size_t n)
{
    gufo_token *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, tokens, n * sizeof *copy);
    return copy;
}

void srv_cache_put(srv_cache *c, gufo_text_session *session, const gufo_token *tokens, size_t n)
{
    gufo_token *copy = c->capacity ? copy_tokens(tokens, n) : NULL;
    if (!copy) {
        /* Nothing worth keeping (empty), nowhere to keep it, or no memory for the history. */
        srv_cache_destroy_session(c, session);
        return;
    }
    add_entry(c, (cache_entry){.session = session, .tokens = copy, .n_tokens = n});
}

void srv_cache_put_checkpoint(srv_cache *c, gufo_text_snapshot *snapshot, const gufo_text_session *source,
                              const gufo_token *tokens, size_t n)
{
    gufo_token *copy = c->checkpoint_capacity ? copy_tokens(tokens, n) : NULL;
    if (!copy) {
        drop_entry(c, (cache_entry){.snapshot = snapshot});
        return;
    }
    atomic_fetch_add(&c->stat_checkpoint_creations, 1);
    add_entry(c, (cache_entry){.snapshot = snapshot, .source = source, .tokens = copy, .n_tokens = n});
}

bool srv_cache_has_checkpoint(srv_cache *c, const gufo_token *tokens, size_t n)
{
    for (uint32_t i = 0; i < c->n_entries; i++) {
        cache_entry *e = &c->entries[i];
        if (e->snapshot && e->n_tokens == n && memcmp(e->tokens, tokens, n * sizeof *tokens) == 0) {
            e->last_used = ++c->clock;
            touch_source(c, e->source);
            return true;
        }
    }
    return false;
}

static size_t common_prefix(const gufo_token *a, size_t na, const gufo_token *b, size_t nb)
{
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

bool srv_cache_take(srv_cache *c, const gufo_token *prompt, size_t n_prompt, bool can_truncate,
                    srv_cache_entry *out, size_t *keep)
{
    *keep = 0;
    *out = (srv_cache_entry){0};
    /* The last prompt token is always prefilled again: that step yields the next token. */
    size_t most = n_prompt ? n_prompt - 1 : 0;
    uint32_t best = UINT32_MAX;
    size_t best_keep = 0;
    for (uint32_t i = 0; i < c->n_entries; i++) {
        const cache_entry *e = &c->entries[i];
        size_t k = common_prefix(e->tokens, e->n_tokens, prompt, n_prompt);
        if (k > most)
            k = most;
        if (k < e->n_tokens && (e->snapshot || !can_truncate))
            continue; /* it would have to rewind, and a checkpoint (or this model's session) cannot */
        /* Longer wins; at equal length a session beats a checkpoint, which would need a restore. */
        bool better = k > best_keep ||
                      (k == best_keep && k > 0 && e->session && best != UINT32_MAX && c->entries[best].snapshot);
        if (better) {
            best = i;
            best_keep = k;
        }
    }
    if (best == UINT32_MAX)
        return false;
    cache_entry e = remove_entry(c, best);
    *out = (srv_cache_entry){.session = e.session, .snapshot = e.snapshot, .source = e.source, .tokens = e.tokens,
                             .n_tokens = e.n_tokens};
    if (e.snapshot)
        c->pinned = e.source; /* its session must not be evicted while the caller restores it */
    *keep = best_keep;
    return true;
}

void srv_cache_count_lookup(srv_cache *c, size_t reused, srv_cache_source source)
{
    if (reused == 0 || source == SRV_CACHE_MISS) {
        atomic_fetch_add(&c->stat_misses, 1);
        return;
    }
    atomic_fetch_add(&c->stat_hits, 1);
    atomic_fetch_add(&c->stat_reused, reused);
    if (source == SRV_CACHE_FORK)
        atomic_fetch_add(&c->stat_forks, 1);
    else if (source == SRV_CACHE_CHECKPOINT)
        atomic_fetch_add(&c->stat_checkpoint_hits, 1);
}

uint32_t srv_cache_count(const srv_cache *c)
{
    return c ? c->n_entries : 0;
}

void srv_cache_read_stats(const srv_cache *c, srv_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    out->sessions = atomic_load(&c->stat_sessions);
    out->tokens = atomic_load(&c->stat_tokens);
    out->bytes = out->tokens * c->bytes_per_token;
    out->hits = atomic_load(&c->stat_hits);
    out->misses = atomic_load(&c->stat_misses);
    out->reused_tokens = atomic_load(&c->stat_reused);
    out->evictions = atomic_load(&c->stat_evictions);
    out->forks = atomic_load(&c->stat_forks);
    out->checkpoints = atomic_load(&c->stat_checkpoints);
    out->checkpoint_bytes = out->checkpoints * c->snapshot_bytes;
    out->checkpoint_hits = atomic_load(&c->stat_checkpoint_hits);
    out->checkpoint_creations = atomic_load(&c->stat_checkpoint_creations);
    out->checkpoint_evictions = atomic_load(&c->stat_checkpoint_evictions);
}

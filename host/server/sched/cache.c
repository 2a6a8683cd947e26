/* host/server/sched/cache.c — see server/sched/cache.h. */
#include "server/sched/cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct cache_entry {
    gufo_text_session *session;
    gufo_token *tokens;       /* the history the session holds */
    size_t n_tokens;
    uint64_t last_used;       /* the cache's clock when it was put: smaller = less recently used */
} cache_entry;

struct srv_cache {
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    uint32_t capacity;
    uint64_t bytes_per_token;
    uint64_t clock;
    cache_entry *entries;     /* [0, n_entries) in no particular order; capacity is small */
    uint32_t n_entries;

    /* Written on the scheduler thread, read by /metrics. */
    atomic_uint_least32_t stat_sessions;
    atomic_uint_least64_t stat_tokens;
    atomic_uint_least64_t stat_hits;
    atomic_uint_least64_t stat_misses;
    atomic_uint_least64_t stat_reused;
    atomic_uint_least64_t stat_evictions;
    atomic_uint_least64_t stat_forks;
};

srv_cache *srv_cache_create(const gufo_text_generation_iface *tg, gufo_model *model, uint32_t capacity,
                            uint64_t bytes_per_token)
{
    srv_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (capacity && !(c->entries = calloc(capacity, sizeof *c->entries))) {
        free(c);
        return NULL;
    }
    c->tg = tg;
    c->model = model;
    c->capacity = capacity;
    c->bytes_per_token = bytes_per_token;
    atomic_init(&c->stat_sessions, 0);
    atomic_init(&c->stat_tokens, 0);
    atomic_init(&c->stat_hits, 0);
    atomic_init(&c->stat_misses, 0);
    atomic_init(&c->stat_reused, 0);
    atomic_init(&c->stat_evictions, 0);
    atomic_init(&c->stat_forks, 0);
    return c;
}

/* Unlinks entry `i` (moving the last one into its place) and returns it. */
static cache_entry remove_entry(srv_cache *c, uint32_t i)
{
    cache_entry e = c->entries[i];
    c->entries[i] = c->entries[--c->n_entries];
    atomic_store(&c->stat_sessions, c->n_entries);
    atomic_fetch_sub(&c->stat_tokens, e.n_tokens);
    return e;
}

static void drop_entry(srv_cache *c, cache_entry e)
{
    c->tg->session_destroy(c->model, e.session);
    free(e.tokens);
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

bool srv_cache_evict_lru(srv_cache *c)
{
    if (!c || c->n_entries == 0)
        return false;
    uint32_t oldest = 0;
    for (uint32_t i = 1; i < c->n_entries; i++)
        if (c->entries[i].last_used < c->entries[oldest].last_used)
            oldest = i;
    drop_entry(c, remove_entry(c, oldest));
    atomic_fetch_add(&c->stat_evictions, 1);
    return true;
}

/* Adds an entry whose tokens the cache takes over, evicting the least recently used when full. */
static void add_entry(srv_cache *c, gufo_text_session *session, gufo_token *tokens, size_t n)
{
    if (c->n_entries == c->capacity)
        srv_cache_evict_lru(c);
    c->entries[c->n_entries++] = (cache_entry){.session = session, .tokens = tokens, .n_tokens = n,
                                               .last_used = ++c->clock};
    atomic_store(&c->stat_sessions, c->n_entries);
    atomic_fetch_add(&c->stat_tokens, n);
}

void srv_cache_put_back(srv_cache *c, srv_cache_entry *entry)
{
    if (c->capacity == 0) {
        c->tg->session_destroy(c->model, entry->session);
        free(entry->tokens);
    } else {
        add_entry(c, entry->session, entry->tokens, entry->n_tokens);
    }
    *entry = (srv_cache_entry){0};
}

void srv_cache_put(srv_cache *c, gufo_text_session *session, const gufo_token *tokens, size_t n)
{
    gufo_token *copy = n && c->capacity ? malloc(n * sizeof *copy) : NULL;
    if (!copy) {
        /* Nothing worth keeping (empty), nowhere to keep it, or no memory for the history. */
        c->tg->session_destroy(c->model, session);
        return;
    }
    memcpy(copy, tokens, n * sizeof *copy);
    add_entry(c, session, copy, n);
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
        if (k < e->n_tokens && !can_truncate)
            continue; /* this session would have to rewind, and the model cannot */
        if (k > best_keep) {
            best = i;
            best_keep = k;
        }
    }
    if (best == UINT32_MAX)
        return false;
    cache_entry e = remove_entry(c, best);
    *out = (srv_cache_entry){.session = e.session, .tokens = e.tokens, .n_tokens = e.n_tokens};
    *keep = best_keep;
    return true;
}

void srv_cache_count_lookup(srv_cache *c, size_t reused, bool forked)
{
    if (reused == 0) {
        atomic_fetch_add(&c->stat_misses, 1);
        return;
    }
    atomic_fetch_add(&c->stat_hits, 1);
    atomic_fetch_add(&c->stat_reused, reused);
    if (forked)
        atomic_fetch_add(&c->stat_forks, 1);
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
}

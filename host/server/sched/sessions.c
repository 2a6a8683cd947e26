/* host/server/sched/sessions.c — see server/sched/sessions.h. */
#include "server/sched/sessions.h"

#include <stdlib.h>
#include <string.h>

bool srv_sessions_init(srv_sessions *ss, const gufo_text_generation_iface *tg, gufo_model *model,
                       const gufo_text_model_info *info, uint32_t context_length, uint32_t cache_sessions)
{
    memset(ss, 0, sizeof *ss);
    ss->tg = tg;
    ss->model = model;
    ss->context_length = context_length;
    ss->snapshot_granularity = info->snapshot_granularity;
    ss->can_truncate =
        (info->cache_caps & GUFO_CACHE_TRUNCATE) && GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, truncate);
    ss->can_fork = ss->can_truncate && (info->cache_caps & GUFO_CACHE_SNAPSHOT) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_create) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, restore) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_destroy);
    /* Checkpoints stand in for rewinding: only a model that cannot truncate needs them, and only
     * when something is cached at all. */
    ss->can_checkpoint = !ss->can_truncate && cache_sessions > 0 && (info->cache_caps & GUFO_CACHE_SNAPSHOT) &&
                         GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_create) &&
                         GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, restore) &&
                         GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, snapshot_destroy);
    uint32_t checkpoints = ss->can_checkpoint ? cache_sessions * SRV_CHECKPOINTS_PER_SESSION : 0;
    ss->cache = srv_cache_create(tg, model, cache_sessions, checkpoints, info->session_bytes_per_token,
                                 info->snapshot_bytes);
    return ss->cache != NULL;
}

void srv_sessions_free(srv_sessions *ss)
{
    srv_cache_destroy(ss->cache);
    ss->cache = NULL;
}

bool srv_sessions_short_of_memory(gufo_status st)
{
    return st == GUFO_E_NO_MEMORY || st == GUFO_E_OVER_BUDGET || st == GUFO_E_LIMIT;
}

void srv_sessions_release(srv_sessions *ss, gufo_text_session *session, const gufo_token *history,
                          size_t n_history, bool trusted)
{
    uint32_t length = ss->tg->session_length(ss->model, session);
    if (trusted && length > 0 && length <= n_history)
        srv_cache_put(ss->cache, session, history, length);
    else
        srv_cache_destroy_session(ss->cache, session);
}

void srv_sessions_checkpoint(srv_sessions *ss, gufo_text_session *session, const gufo_token *tokens, size_t n)
{
    if (!ss->can_checkpoint || n == 0 || ss->tg->session_length(ss->model, session) != n ||
        srv_cache_has_checkpoint(ss->cache, tokens, n))
        return;
    gufo_error ignored = {0};
    gufo_text_snapshot *snapshot = NULL;
    if (ss->tg->snapshot_create(ss->model, session, &snapshot, &ignored) == GUFO_OK && snapshot)
        srv_cache_put_checkpoint(ss->cache, snapshot, session, tokens, n);
}

/* A new, empty session; when the model is out of memory or sessions, retained ones are evicted (LRU first) until it fits. */
static gufo_status create_evicting(srv_sessions *ss, gufo_text_session **out, gufo_error *err)
{
    gufo_session_params sp = {.struct_size = sizeof sp, .context_length = ss->context_length};
    for (;;) {
        *out = NULL;
        gufo_status st = ss->tg->session_create(ss->model, &sp, out, err);
        if (st == GUFO_OK)
            return GUFO_OK;
        *out = NULL;
        if (!srv_sessions_short_of_memory(st) || !srv_cache_evict_lru(ss->cache))
            return st;
        memset(err, 0, sizeof *err);
    }
}

/* Rewinds `session` to `keep` tokens; false when the model cannot (its state is then not trusted). */
static bool rewind_to(srv_sessions *ss, gufo_text_session *session, size_t keep)
{
    gufo_error ignored = {0};
    uint32_t length = ss->tg->session_length(ss->model, session);
    if (length != keep && (length < keep || ss->tg->truncate(ss->model, session, (uint32_t)keep, &ignored) != GUFO_OK))
        return false;
    return ss->tg->session_length(ss->model, session) == keep;
}

/*
 * A copy of `source` rewound to `keep` tokens, through the model's snapshot and
 * restore, so the retained session keeps its longer history for its own
 * conversation (two conversations that share only a system prompt no longer
 * take each other's history away). NULL when the model cannot copy sessions
 * or memory ran out; the caller then rewinds the source itself.
 */
static gufo_text_session *fork_at(srv_sessions *ss, gufo_text_session *source, size_t keep)
{
    uint32_t length = ss->tg->session_length(ss->model, source);
    uint32_t granularity = ss->snapshot_granularity;
    if (!ss->can_fork || (granularity > 1 && length % granularity != 0))
        return NULL;
    gufo_error err = {0};
    gufo_text_session *copy = NULL;
    if (create_evicting(ss, &copy, &err) != GUFO_OK)
        return NULL;
    gufo_text_snapshot *snapshot = NULL;
    bool ok = ss->tg->snapshot_create(ss->model, source, &snapshot, &err) == GUFO_OK &&
              ss->tg->restore(ss->model, copy, snapshot, &err) == GUFO_OK;
    if (snapshot)
        ss->tg->snapshot_destroy(ss->model, snapshot);
    if (!ok || !rewind_to(ss, copy, keep)) {
        srv_cache_destroy_session(ss->cache, copy);
        return NULL;
    }
    return copy;
}

/*
 * A new session restored from the checkpoint `entry` (taken out of the cache,
 * so no eviction while the session is made can free it or the session it was
 * taken from). The checkpoint goes back to the cache, as the most recently
 * used; one the provider will not restore (qwen35-cpu: its session has since
 * rewritten the positions it needs) is discarded, and NULL is returned, as
 * when no session could be made: the caller then starts from an empty one.
 */
static gufo_text_session *restore_checkpoint(srv_sessions *ss, srv_cache_entry *entry)
{
    gufo_error err = {0};
    gufo_text_session *session = NULL;
    if (create_evicting(ss, &session, &err) != GUFO_OK) {
        srv_cache_put_back(ss->cache, entry);
        return NULL;
    }
    if (ss->tg->restore(ss->model, session, entry->snapshot, &err) == GUFO_OK &&
        ss->tg->session_length(ss->model, session) == entry->n_tokens) {
        srv_cache_put_back(ss->cache, entry);
        return session;
    }
    srv_cache_discard(ss->cache, entry);
    srv_cache_destroy_session(ss->cache, session);
    return NULL;
}

/*
 * The cached entry serving the longest prefix of the prompt is used: a
 * checkpoint is restored into a new session (it stays cached); a retained
 * session is copied and rewound when it holds more than that prefix (it stays
 * retained), else taken and rewound (also the fallback when the model cannot
 * copy). Otherwise a new session.
 */
gufo_status srv_sessions_acquire(srv_sessions *ss, const gufo_token *prompt, size_t n_prompt,
                                 gufo_text_session **out, size_t *reused, gufo_error *err)
{
    size_t keep = 0;
    srv_cache_entry entry;
    gufo_text_session *session = NULL;
    srv_cache_source source = SRV_CACHE_MISS;
    if (srv_cache_take(ss->cache, prompt, n_prompt, ss->can_truncate, &entry, &keep)) {
        if (entry.snapshot) {
            if ((session = restore_checkpoint(ss, &entry)) != NULL)
                source = SRV_CACHE_CHECKPOINT;
        } else if (entry.n_tokens > keep && (session = fork_at(ss, entry.session, keep)) != NULL) {
            source = SRV_CACHE_FORK;
            srv_cache_put_back(ss->cache, &entry);
        } else if (rewind_to(ss, entry.session, keep)) {
            session = entry.session;
            source = SRV_CACHE_SESSION;
            free(entry.tokens);
        } else {
            /* The provider could not rewind it: start afresh rather than trust its state. */
            srv_cache_discard(ss->cache, &entry);
        }
    }
    srv_cache_count_lookup(ss->cache, session ? keep : 0, source);
    *reused = session ? keep : 0;
    if (session) {
        *out = session;
        return GUFO_OK;
    }
    return create_evicting(ss, out, err);
}

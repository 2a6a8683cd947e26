/* tests/host/test_server_cache.c — the conversation cache's policy (host/server/sched/cache.h)
 * and the checkpoint rule (host/server/sched/checkpoints.h), without a model.
 *
 * Sessions and snapshots are opaque to the cache, so fake handles stand in for
 * them; the provider slots it calls (session_destroy, snapshot_destroy) record
 * what was destroyed and check that the cache holds eviction off meanwhile.
 * Covers: the plan's rule (hints, fallback, granularity, reuse, duplicates);
 * which entry a lookup takes (longest usable prefix, checkpoints only as whole
 * prefixes shorter than the prompt, a session winning a tie, sessions of a
 * model that can rewind as before); per-kind capacity and one LRU order;
 * has_checkpoint keeping an entry fresh; put_back/discard; the counters; a
 * checkpoint living as long as its session (its session pinned while it is
 * out for a restore, its checkpoints destroyed before it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/testing.h>

#include "server/sched/cache.h"
#include "server/sched/checkpoints.h"

#define CHECK GUFO_CHECK

/* ---- fake provider slots ---------------------------------------------------- */

static char handles[64];
static srv_cache *current;
static int sessions_destroyed, snapshots_destroyed, evictions_refused;
static char destroyed[64]; /* 'S' per session, 'P' per snapshot, in order */

static gufo_text_session *session_handle(int i)
{
    return (gufo_text_session *)(void *)&handles[i];
}

static gufo_text_snapshot *snapshot_handle(int i)
{
    return (gufo_text_snapshot *)(void *)&handles[32 + i];
}

/* A provider that charges memory while destroying reaches the pressure handler, which evicts: the cache must refuse. */
static void try_evict_inside(void)
{
    if (current && !srv_cache_evict_lru(current))
        evictions_refused++;
}

static void fake_session_destroy(gufo_model *model, gufo_text_session *session)
{
    (void)model;
    (void)session;
    sessions_destroyed++;
    strncat(destroyed, "S", sizeof destroyed - strlen(destroyed) - 1);
    try_evict_inside();
}

static void fake_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot)
{
    (void)model;
    (void)snapshot;
    snapshots_destroyed++;
    strncat(destroyed, "P", sizeof destroyed - strlen(destroyed) - 1);
    try_evict_inside();
}

static const gufo_text_generation_iface fake_tg = {
    .struct_size = sizeof fake_tg,
    .session_destroy = fake_session_destroy,
    .snapshot_destroy = fake_snapshot_destroy,
};

static srv_cache *make_cache(uint32_t capacity, uint32_t checkpoints)
{
    sessions_destroyed = snapshots_destroyed = evictions_refused = 0;
    destroyed[0] = '\0';
    current = srv_cache_create(&fake_tg, NULL, capacity, checkpoints, 10, 1000);
    return current;
}

static void free_cache(srv_cache *c)
{
    srv_cache_destroy(c);
    current = NULL;
}

/* ---- the checkpoint rule ------------------------------------------------------ */

static void test_plan(void)
{
    size_t out[SRV_CHECKPOINTS_MAX];
    /* No hints: one before the last token. */
    CHECK(srv_checkpoints_plan(NULL, 0, 100, 0, 1, out) == 1 && out[0] == 99);
    /* Hints sorted, duplicates dropped, those at or below the reused part or at the end dropped. */
    const size_t hints[] = {80, 40, 80, 100, 10};
    size_t n = srv_checkpoints_plan(hints, 5, 100, 10, 1, out);
    CHECK(n == 2 && out[0] == 40 && out[1] == 80);
    /* Granularity rounds down (and may merge two hints). */
    const size_t near[] = {70, 79};
    n = srv_checkpoints_plan(near, 2, 100, 0, 16, out);
    CHECK(n == 1 && out[0] == 64);
    /* With a granularity larger than the position: nothing. */
    CHECK(srv_checkpoints_plan(NULL, 0, 10, 0, 16, out) == 0);
    /* A one-token prompt has no position before its last token. */
    CHECK(srv_checkpoints_plan(NULL, 0, 1, 0, 1, out) == 0);
    /* More hints than the most are cut at the most. */
    const size_t many[] = {1, 2, 3, 4, 5, 6};
    CHECK(srv_checkpoints_plan(many, 6, 100, 0, 1, out) == SRV_CHECKPOINTS_MAX);
}

/* ---- lookups ------------------------------------------------------------------ */

static void test_take(void)
{
    const gufo_token history[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const gufo_token prompt[] = {1, 2, 3, 4, 5, 9, 9};
    srv_cache_entry e;
    size_t keep = 0;

    /* A snapshot-only model: the session holds more than the common prefix, so only the checkpoint serves. */
    srv_cache *c = make_cache(4, 8);
    srv_cache_put(c, session_handle(0), history, 8);
    srv_cache_put_checkpoint(c, snapshot_handle(0), NULL, history, 3);
    srv_cache_put_checkpoint(c, snapshot_handle(1), NULL, history, 6); /* not a prefix of the prompt */
    CHECK(srv_cache_count(c) == 3);
    CHECK(srv_cache_take(c, prompt, 7, false, &e, &keep));
    CHECK(e.snapshot == snapshot_handle(0) && !e.session && keep == 3 && e.n_tokens == 3);
    srv_cache_put_back(c, &e);
    CHECK(srv_cache_count(c) == 3);

    /* A model that can rewind takes the session with its longer common prefix, as before. */
    CHECK(srv_cache_take(c, prompt, 7, true, &e, &keep));
    CHECK(e.session == session_handle(0) && keep == 5);
    srv_cache_put_back(c, &e);

    /* A checkpoint of the whole prompt does not serve it (the last token is prefilled again)... */
    const gufo_token short_prompt[] = {1, 2, 3};
    CHECK(srv_cache_take(c, short_prompt, 3, false, &e, &keep) == false);
    /* ... but the same history one token longer does. */
    const gufo_token longer[] = {1, 2, 3, 4};
    CHECK(srv_cache_take(c, longer, 4, false, &e, &keep));
    CHECK(e.snapshot == snapshot_handle(0) && keep == 3);
    srv_cache_put_back(c, &e);

    /* On a tie the retained session wins: it needs no restore. */
    srv_cache_put(c, session_handle(1), history, 3);
    CHECK(srv_cache_take(c, longer, 4, false, &e, &keep));
    CHECK(e.session == session_handle(1) && keep == 3);
    free(e.tokens); /* the caller owns a taken session now */
    CHECK(srv_cache_count(c) == 3);

    /* Discarding a checkpoint destroys it and counts as a checkpoint eviction. */
    CHECK(srv_cache_take(c, longer, 4, false, &e, &keep) && e.snapshot == snapshot_handle(0));
    srv_cache_discard(c, &e);
    CHECK(snapshots_destroyed == 1 && srv_cache_count(c) == 2);

    srv_cache_stats st;
    srv_cache_read_stats(c, &st);
    CHECK(st.sessions == 1 && st.tokens == 8 && st.bytes == 80);
    CHECK(st.checkpoints == 1 && st.checkpoint_bytes == 1000);
    CHECK(st.checkpoint_creations == 2 && st.checkpoint_evictions == 1 && st.evictions == 0);
    free_cache(c);
    CHECK(sessions_destroyed == 1 && snapshots_destroyed == 2);
    CHECK(evictions_refused == sessions_destroyed + snapshots_destroyed);
}

/* ---- capacity, LRU, counters --------------------------------------------------- */

static void test_capacity(void)
{
    const gufo_token t[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    srv_cache *c = make_cache(1, 2);
    srv_cache_put_checkpoint(c, snapshot_handle(0), NULL, t, 2);
    srv_cache_put_checkpoint(c, snapshot_handle(1), NULL, t, 3);
    srv_cache_put(c, session_handle(0), t, 9);
    /* Checkpoints full: the least recently used one goes, unless it was just asked for. */
    CHECK(srv_cache_has_checkpoint(c, t, 2));
    CHECK(!srv_cache_has_checkpoint(c, t, 4));
    srv_cache_put_checkpoint(c, snapshot_handle(2), NULL, t, 4);
    CHECK(snapshots_destroyed == 1 && srv_cache_count(c) == 3);
    CHECK(srv_cache_has_checkpoint(c, t, 2) && !srv_cache_has_checkpoint(c, t, 3));
    /* Sessions full: a second retained session evicts the first, never a checkpoint. */
    srv_cache_put(c, session_handle(1), t, 5);
    CHECK(sessions_destroyed == 1 && snapshots_destroyed == 1 && srv_cache_count(c) == 3);
    /* Memory pressure takes the oldest entry of either kind: the checkpoint of 4 tokens, then that of 2. */
    CHECK(srv_cache_evict_lru(c));
    CHECK(!srv_cache_has_checkpoint(c, t, 4) && snapshots_destroyed == 2);
    CHECK(srv_cache_evict_lru(c) && srv_cache_evict_lru(c) && !srv_cache_evict_lru(c));
    srv_cache_stats st;
    srv_cache_read_stats(c, &st);
    CHECK(st.evictions == 2 && st.checkpoint_evictions == 3 && st.checkpoint_creations == 3);
    CHECK(st.sessions == 0 && st.checkpoints == 0 && st.tokens == 0);
    free_cache(c);

    /* Counting lookups by source. */
    c = make_cache(0, 0);
    srv_cache_count_lookup(c, 0, SRV_CACHE_MISS);
    srv_cache_count_lookup(c, 5, SRV_CACHE_CHECKPOINT);
    srv_cache_count_lookup(c, 7, SRV_CACHE_FORK);
    srv_cache_count_lookup(c, 2, SRV_CACHE_SESSION);
    srv_cache_read_stats(c, &st);
    CHECK(st.misses == 1 && st.hits == 3 && st.reused_tokens == 14 && st.forks == 1 && st.checkpoint_hits == 1);
    /* A cache that keeps nothing destroys what it is given. */
    srv_cache_put(c, session_handle(2), t, 3);
    srv_cache_put_checkpoint(c, snapshot_handle(3), NULL, t, 3);
    CHECK(sessions_destroyed == 1 && snapshots_destroyed == 1 && srv_cache_count(c) == 0);
    srv_cache_read_stats(c, &st);
    CHECK(st.checkpoint_creations == 0);
    free_cache(c);
}

/* ---- a checkpoint lives as long as its session ----------------------------------- */

static void test_sources(void)
{
    const gufo_token t[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    srv_cache *c = make_cache(2, 4);
    srv_cache_put(c, session_handle(0), t, 9);                       /* clock 1 */
    srv_cache_put_checkpoint(c, snapshot_handle(0), session_handle(0), t, 2); /* 2 */
    srv_cache_put_checkpoint(c, snapshot_handle(1), session_handle(0), t, 4); /* 3 */
    srv_cache_put_checkpoint(c, snapshot_handle(2), session_handle(1), t, 3); /* 4: of a job's session */
    /* Using a checkpoint refreshes its session too: checkpoint 0, then session 0. */
    CHECK(srv_cache_has_checkpoint(c, t, 2));
    /* While a checkpoint is out for a restore its session is not evicted: the oldest other entry goes. */
    const gufo_token prompt[] = {1, 2, 3, 4, 5, 0};
    srv_cache_entry e;
    size_t keep = 0;
    CHECK(srv_cache_take(c, prompt, 6, false, &e, &keep));
    CHECK(e.snapshot == snapshot_handle(1) && e.source == session_handle(0) && keep == 4);
    CHECK(srv_cache_evict_lru(c));                                   /* checkpoint 2 (4) */
    CHECK(strcmp(destroyed, "P") == 0);
    srv_cache_put_back(c, &e);                                       /* session 0, then checkpoint 1 */
    CHECK(srv_cache_evict_lru(c));                                   /* checkpoint 0 */
    CHECK(srv_cache_count(c) == 2 && snapshots_destroyed == 2);
    /* Evicting the session takes its checkpoints first, before the provider destroys the session. */
    CHECK(srv_cache_evict_lru(c));
    CHECK(strcmp(destroyed, "PPPS") == 0 && srv_cache_count(c) == 0);
    /* So does destroying a session the cache does not hold (a job's, after a failed step). */
    srv_cache_put_checkpoint(c, snapshot_handle(3), session_handle(1), t, 3);
    srv_cache_put_checkpoint(c, snapshot_handle(4), NULL, t, 5);
    srv_cache_destroy_session(c, session_handle(1));
    CHECK(strcmp(destroyed, "PPPSPS") == 0 && srv_cache_count(c) == 1);
    srv_cache_stats st;
    srv_cache_read_stats(c, &st);
    CHECK(st.checkpoint_evictions == 4 && st.evictions == 1 && st.checkpoints == 1);
    free_cache(c);
    CHECK(evictions_refused == sessions_destroyed + snapshots_destroyed);
}

int main(void)
{
    test_plan();
    test_take();
    test_capacity();
    test_sources();
    return GUFO_CHECK_DONE();
}

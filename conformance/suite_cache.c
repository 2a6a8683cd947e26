/* suite_cache.c — cache histories: after truncate, or snapshot and restore,
 * continuing gives exactly the tokens of a fresh run over the same history. */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROMPT = 32, GEN = 10, DETOUR = 6 };

typedef struct tag_sum { uint64_t bytes; } tag_sum;

static void sum_snapshot(void *userdata, const gufo_memory_tag_usage *usage)
{
    if (strcmp(usage->tag, "snapshot") == 0) ((tag_sum *)userdata)->bytes += usage->bytes;
}

static void truncate_case(conf_ctx *ctx, const conf_model *m, const gufo_text_model_info *info,
                          const gufo_token *prompt)
{
    conf_case c;
    conf_case_begin(&c, ctx, "truncate_then_continue");
    const gufo_text_generation_iface *t = m->provider->iface;
    if (!(info->cache_caps & GUFO_CACHE_TRUNCATE) || !t->truncate) {
        conf_case_not_applicable(&c, "the provider does not offer truncate (cache_caps lacks GUFO_CACHE_TRUNCATE)");
        return;
    }
    gufo_error err = {0};
    size_t keep = PROMPT * 3 / 4;
    gufo_token fresh[GEN], got[GEN], detour[DETOUR];
    conf_session s;
    if (conf_greedy_run(m, prompt, PROMPT, GEN, fresh, &err) != GUFO_OK ||
        conf_session_open(m, 0, &s, &err) != GUFO_OK) {
        conf_case_abort(&c, "set-up failed: %s", err.message);
        return;
    }
    /* History: the prompt plus a detour of generated tokens; then back to `keep`. */
    bool ok = conf_session_generate(m, &s, prompt, PROMPT, DETOUR, detour, &err) == GUFO_OK;
    if (ok && t->truncate(m->model, s.session, (uint32_t)keep, &err) != GUFO_OK) {
        conf_case_fail(&c, "truncate to %zu failed: %s", keep, err.message);
        ok = false;
    }
    if (ok && conf_session_length(m, &s) != keep) conf_case_fail(&c, "after truncate the length is %u, not %zu",
                                                       conf_session_length(m, &s), keep);
    conf_session_rewound(&s, prompt, keep, -1);
    if (ok && conf_session_generate(m, &s, prompt + keep, PROMPT - keep, GEN, got, &err) != GUFO_OK) {
        conf_case_fail(&c, "continuing after truncate failed: %s", err.message);
        ok = false;
    }
    if (ok && memcmp(got, fresh, sizeof got) != 0)
        conf_case_fail(&c, "after truncating a %d-token history to %zu and re-appending, the continuation differs "
                       "from a fresh run", PROMPT + DETOUR - 1, keep);
    conf_session_close(m, &s);
    conf_case_end(&c, "prompt + %d generated tokens, truncated to %zu, re-appended: %d tokens equal a fresh run",
                  DETOUR - 1, keep, GEN);
}

static void snapshot_case(conf_ctx *ctx, const conf_model *m, const gufo_text_model_info *info,
                          const gufo_token *prompt)
{
    const gufo_text_generation_iface *t = m->provider->iface;
    conf_case c;
    if (!(info->cache_caps & GUFO_CACHE_SNAPSHOT) || !t->snapshot_create || !t->restore || !t->snapshot_destroy) {
        const char *why = "the provider does not offer snapshots (cache_caps lacks GUFO_CACHE_SNAPSHOT)";
        conf_not_applicable_case(ctx, "snapshot_restore_continue", "%s", why);
        conf_not_applicable_case(ctx, "snapshot_into_other_session", "%s", why);
        conf_not_applicable_case(ctx, "snapshot_memory", "%s", why);
        return;
    }
    uint32_t g = info->snapshot_granularity ? info->snapshot_granularity : 1;
    size_t at = (PROMPT / g) * g;
    if (at == 0) { /* the case applies, the kit's history is too short for it: a skip that counts */
        static const char *const names[] = {"snapshot_restore_continue", "snapshot_into_other_session",
                                            "snapshot_memory"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            conf_skip_case(ctx, names[i], "snapshot granularity %u exceeds the %d-token test history", g, PROMPT);
        return;
    }
    gufo_error err = {0};
    gufo_token fresh[GEN], got[GEN], other[GEN], detour[DETOUR];
    conf_session s, s2;
    gufo_text_snapshot *snap = NULL;
    tag_sum before = {0}, during = {0}, after = {0};
    gufo_memory_foreach_tag(m->memory, sum_snapshot, &before);

    conf_case_begin(&c, ctx, "snapshot_restore_continue");
    bool ok = conf_greedy_run(m, prompt, at, GEN, fresh, &err) == GUFO_OK &&
              conf_session_open(m, 0, &s, &err) == GUFO_OK;
    if (!ok) {
        conf_case_abort(&c, "set-up failed: %s", err.message);
        return;
    }
    /* Snapshot at `at`, wander off, restore, continue. */
    ok = conf_prefill(m, &s, prompt, at, 0, NULL, NULL, &err) == GUFO_OK;
    gufo_token next_at_snapshot = s.next;
    if (ok && t->snapshot_create(m->model, s.session, &snap, &err) != GUFO_OK) {
        conf_case_fail(&c, "snapshot at %zu failed: %s", at, err.message);
        ok = false;
    }
    gufo_memory_foreach_tag(m->memory, sum_snapshot, &during);
    if (ok && t->snapshot_length && t->snapshot_length(m->model, snap) != at)
        conf_case_fail(&c, "snapshot_length says %u, the snapshot was taken at %zu",
                       t->snapshot_length(m->model, snap), at);
    ok = ok && conf_session_generate(m, &s, NULL, 0, DETOUR, detour, &err) == GUFO_OK;
    if (ok && t->restore(m->model, s.session, snap, &err) != GUFO_OK) {
        conf_case_fail(&c, "restore failed: %s", err.message);
        ok = false;
    }
    if (ok && conf_session_length(m, &s) != at) conf_case_fail(&c, "after restore the length is %u, not %zu", conf_session_length(m, &s), at);
    conf_session_rewound(&s, prompt, at, next_at_snapshot);
    if (ok && conf_session_generate(m, &s, NULL, 0, GEN, got, &err) != GUFO_OK) {
        conf_case_fail(&c, "continuing after restore failed: %s", err.message);
        ok = false;
    }
    if (ok && memcmp(got, fresh, sizeof got) != 0)
        conf_case_fail(&c, "the continuation after restore differs from a fresh run");
    conf_session_close(m, &s);
    conf_case_end(&c, "snapshot at %zu (granularity %u), %d tokens of detour, restore: %d tokens equal a fresh run",
                  at, g, DETOUR - 1, GEN);

    conf_case_begin(&c, ctx, "snapshot_into_other_session");
    if (snap && conf_session_open(m, 0, &s2, &err) == GUFO_OK) {
        if (t->restore(m->model, s2.session, snap, &err) != GUFO_OK) {
            conf_case_fail(&c, "restoring into a new session failed: %s", err.message);
        } else {
            conf_session_rewound(&s2, prompt, at, next_at_snapshot);
            if (conf_session_generate(m, &s2, NULL, 0, GEN, other, &err) != GUFO_OK)
                conf_case_fail(&c, "decoding the restored session failed: %s", err.message);
            else if (memcmp(other, fresh, sizeof other) != 0)
                conf_case_fail(&c, "a new session restored from the snapshot continues differently");
        }
        conf_session_close(m, &s2);
    } else {
        conf_case_fail(&c, "no snapshot or no session: %s", err.message);
    }
    conf_case_end(&c, "a fresh session restored from the snapshot continues like a fresh run (the snapshot stays "
                  "valid after a restore)");

    conf_case_begin(&c, ctx, "snapshot_memory");
    if (snap) t->snapshot_destroy(m->model, snap);
    gufo_memory_foreach_tag(m->memory, sum_snapshot, &after);
    if (during.bytes <= before.bytes && info->snapshot_bytes > 0)
        conf_case_fail(&c, "the snapshot was not counted under the tag \"snapshot\"");
    if (after.bytes != before.bytes)
        conf_case_fail(&c, "snapshot_destroy left %llu bytes under \"snapshot\"",
                       (unsigned long long)(after.bytes - before.bytes));
    conf_case_end(&c, "%llu bytes under \"snapshot\" while it lived (snapshot_bytes says %llu), 0 after destroy",
                  (unsigned long long)(during.bytes - before.bytes), (unsigned long long)info->snapshot_bytes);
}

static void overflow_case(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "context_overflow");
    enum { CTX = 16 };
    conf_session s;
    gufo_error err = {0};
    if (conf_session_open(m, CTX, &s, &err) != GUFO_OK) {
        conf_case_abort(&c, "session with a %d-token context: %s", CTX, err.message);
        return;
    }
    gufo_token prompt[CTX + 4];
    conf_make_prompt(m, 5, prompt, CTX + 4);
    gufo_status st = conf_prefill(m, &s, prompt, CTX - 2, 0, NULL, NULL, &err);
    if (st != GUFO_OK) conf_case_fail(&c, "prefill within the context failed: %s", err.message);
    st = conf_prefill(m, &s, prompt + CTX - 2, 6, 6, NULL, NULL, &err);
    if (st != GUFO_E_CONTEXT_OVERFLOW)
        conf_case_fail(&c, "appending past the session's context returned %s, not GUFO_E_CONTEXT_OVERFLOW",
                       gufo_status_name(st));
    if (conf_session_length(m, &s) != CTX - 2)
        conf_case_fail(&c, "the refused prefill changed the session (%u tokens)", conf_session_length(m, &s));
    conf_session_close(m, &s);
    conf_case_end(&c, "appending past a %d-token session context fails with GUFO_E_CONTEXT_OVERFLOW before any work",
                  CTX);
}

void conf_suite_cache(conf_ctx *ctx)
{
    conf_model m;
    if (!conf_model_loads(ctx, &m, NULL)) return;
    gufo_text_model_info info = conf_text_info(&m);
    gufo_token prompt[PROMPT];
    conf_make_prompt(&m, 23, prompt, PROMPT);
    truncate_case(ctx, &m, &info, prompt);
    snapshot_case(ctx, &m, &info, prompt);
    overflow_case(ctx, &m);
    conf_model_close(&m);
}

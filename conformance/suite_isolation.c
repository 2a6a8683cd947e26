/* suite_isolation.c — sessions (or batch items) do not see each other: what
 * the core interleaves and batches gives exactly what solo runs give. */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_SESSIONS = 3, PROMPT = 20, GEN = 12 };

static void text_isolation(conf_ctx *ctx, const conf_model *m)
{
    gufo_token prompts[N_SESSIONS][PROMPT];
    gufo_token solo[N_SESSIONS][GEN];
    gufo_error err = {0};
    static const char *const endings[N_SESSIONS] = {"Once upon a ti", "The quick brown fo", "She said that th"};
    for (int i = 0; i < N_SESSIONS; i++) conf_make_text_prompt(m, 100 + (uint32_t)i, endings[i], prompts[i], PROMPT);

    conf_case c;
    conf_case_begin(&c, ctx, "solo_runs_repeat");
    for (int i = 0; i < N_SESSIONS; i++) {
        gufo_token again[GEN];
        if (conf_greedy_run(m, prompts[i], PROMPT, GEN, solo[i], &err) != GUFO_OK ||
            conf_greedy_run(m, prompts[i], PROMPT, GEN, again, &err) != GUFO_OK) {
            conf_case_abort(&c, "a solo run failed: %s", err.message);
            return;
        }
        if (memcmp(solo[i], again, sizeof again) != 0) conf_case_fail(&c, "prompt %d gives different tokens twice", i);
    }
    /* Sessions that all produce the same tokens could share every bit of state unnoticed. */
    if (memcmp(solo[0], solo[1], sizeof solo[0]) == 0 && memcmp(solo[1], solo[2], sizeof solo[0]) == 0)
        conf_case_fail(&c, "the %d prompts (ending in different text) all give the same %d tokens: the model's output "
                       "does not depend on its input, so the cases below could not see sessions share state",
                       N_SESSIONS, GEN);
    conf_case_end(&c, "%d prompts give the same %d greedy tokens on every run, and not all the same tokens",
                  N_SESSIONS, GEN);
    if (c.failures) return;

    /* Interleaved prefill: chunks of the three prompts alternate. */
    conf_case_begin(&c, ctx, "interleaved_prefill");
    conf_session s[N_SESSIONS];
    conf_session *ptr[N_SESSIONS];
    int opened = 0;
    for (; opened < N_SESSIONS; opened++) {
        if (conf_session_open(m, 0, &s[opened], &err) != GUFO_OK) break;
        ptr[opened] = &s[opened];
    }
    if (opened < N_SESSIONS) {
        conf_case_fail(&c, "cannot hold %d sessions at once: %s", N_SESSIONS, err.message);
    } else {
        size_t chunk = 7;
        gufo_text_model_info info = conf_text_info(m);
        if (info.max_prefill_chunk && chunk > info.max_prefill_chunk) chunk = info.max_prefill_chunk;
        /* Alternate by hand: each call appends `chunk` tokens and only the final one produces output. */
        const gufo_text_generation_iface *t = m->provider->iface;
        for (size_t done = 0; done < PROMPT && !c.failures; done += chunk) {
            size_t take = PROMPT - done < chunk ? PROMPT - done : chunk;
            for (int i = 0; i < N_SESSIONS; i++) {
                bool last = done + take == PROMPT;
                gufo_token next = -1;
                gufo_step_output out = {.sampler = s[i].sampler, .out_token = &next, .logits_kind = GUFO_MEMORY_HOST};
                if (t->prefill(m->model, s[i].session, prompts[i] + done, take, last ? &out : NULL, NULL, &err) !=
                    GUFO_OK) {
                    conf_case_fail(&c, "prefill failed: %s", err.message);
                    break;
                }
                for (size_t k = 0; k < take; k++) gufo_sampler_accept(s[i].sampler, prompts[i][done + k]);
                if (last) s[i].next = next;
            }
        }
        for (int i = 0; i < N_SESSIONS && !c.failures; i++)
            if (s[i].next != solo[i][0])
                conf_case_fail(&c, "session %d: first token %d after interleaved prefill, %d solo", i, s[i].next,
                               solo[i][0]);
        conf_case_end(&c, "%d sessions prefilled in alternating chunks of %zu give their solo first token",
                      N_SESSIONS, chunk);

        conf_case_begin(&c, ctx, "batched_decode");
        gufo_token out[N_SESSIONS * GEN];
        if (conf_decode_greedy(m, ptr, N_SESSIONS, GEN, out, &err) != GUFO_OK) {
            conf_case_fail(&c, "decode failed: %s", err.message);
        } else {
            for (int i = 0; i < N_SESSIONS; i++)
                for (int k = 0; k < GEN; k++)
                    if (out[i * GEN + k] != solo[i][k]) {
                        conf_case_fail(&c, "session %d decoded in a batch of %d differs from its solo run at token "
                                       "%d: %d, solo %d (does the batch share a buffer or state between its items?)",
                                       i, N_SESSIONS, k, out[i * GEN + k], solo[i][k]);
                        break;
                    }
        }
        conf_case_end(&c, "%d sessions decoded together (max_batch %u) give their solo tokens", N_SESSIONS,
                      conf_text_info(m).max_batch);
    }
    for (int i = 0; i < opened; i++) conf_session_close(m, &s[i]);

    /* A session that joins late and one that leaves early do not disturb the others. */
    conf_case_begin(&c, ctx, "join_and_leave");
    conf_session a, b, x;
    if (conf_session_open(m, 0, &a, &err) != GUFO_OK) {
        conf_case_abort(&c, "session: %s", err.message);
        return;
    }
    gufo_token ta[GEN], tb[GEN];
    bool ok = conf_session_generate(m, &a, prompts[0], PROMPT, GEN / 2, ta, &err) == GUFO_OK; /* a: first half alone */
    /* x comes and goes between a's steps: a prefill, then destroyed. */
    if (ok && conf_session_open(m, 0, &x, &err) == GUFO_OK) {
        ok = conf_prefill(m, &x, prompts[2], PROMPT, 0, NULL, NULL, &err) == GUFO_OK;
        conf_session_close(m, &x);
    }
    if (ok && conf_session_open(m, 0, &b, &err) == GUFO_OK) {
        ok = conf_prefill(m, &b, prompts[1], PROMPT, 0, NULL, NULL, &err) == GUFO_OK;
        /* a continues from its last produced token, b starts: decode them together. */
        gufo_token rest[2 * (GEN / 2 + 1)];
        conf_session *pair[2] = {&a, &b};
        if (ok) ok = conf_decode_greedy(m, pair, 2, GEN / 2 + 1, rest, &err) == GUFO_OK;
        if (ok) {
            /* rest[0] repeats a's last produced token; the new ones follow. */
            memcpy(ta + GEN / 2, rest + 1, (GEN / 2) * sizeof *ta);
            memcpy(tb, rest + (GEN / 2 + 1), (GEN / 2 + 1) * sizeof *tb);
            if (memcmp(ta, solo[0], sizeof ta) != 0) conf_case_fail(&c, "the session that kept running changed");
            if (memcmp(tb, solo[1], (GEN / 2 + 1) * sizeof *tb) != 0)
                conf_case_fail(&c, "the session that joined late differs from its solo run");
        }
        conf_session_close(m, &b);
    }
    if (!ok) conf_case_fail(&c, "a step failed: %s", err.message);
    conf_session_close(m, &a);
    conf_case_end(&c, "a session joining late and one leaving early leave the others' tokens unchanged");
}

static void decisions_isolation(conf_ctx *ctx, const conf_model *m)
{
    const gufo_decisions_iface *d = m->provider->iface;
    gufo_decisions_info info = conf_decisions_info(m);
    static const char *const texts[] = {"The weather is lovely today.", "Il fait beau aujourd'hui.",
                                        "Heute ist das Wetter sch\xc3\xb6n.", "Hoy hace buen tiempo.",
                                        "Oggi il tempo \xc3\xa8 bello.", "Hoje o tempo est\xc3\xa1 bom."};
    enum { NT = sizeof texts / sizeof texts[0] };
    size_t nl = info.n_labels ? info.n_labels : 1;
    float solo[NT][16], batched[NT][16];
    uint32_t solo_label[NT];
    conf_case c;
    conf_case_begin(&c, ctx, "batch_equals_solo");
    if (nl > 16) {
        conf_case_skip(&c, "more than 16 labels: not covered by this case yet");
        return;
    }
    gufo_error err = {0};
    for (size_t i = 0; i < NT; i++) {
        gufo_decisions_item item = {.text = texts[i], .len = strlen(texts[i]), .out_scores = solo[i]};
        gufo_decisions_batch b = {.struct_size = sizeof b, .items = &item, .n_items = 1};
        if (d->decide(m->model, &b, &err) != GUFO_OK || item.status != GUFO_OK) {
            conf_case_abort(&c, "decide failed: %s", err.message);
            return;
        }
        solo_label[i] = item.out_label;
    }
    /* The same inputs batched, in reverse order. */
    size_t max_batch = info.max_batch ? info.max_batch : 1;
    gufo_decisions_item items[NT];
    for (size_t i = 0; i < NT; i++)
        items[i] = (gufo_decisions_item){.text = texts[NT - 1 - i], .len = strlen(texts[NT - 1 - i]),
                                        .out_scores = batched[NT - 1 - i]};
    if (conf_decide_in_batches(m, items, NT, &err) != GUFO_OK)
        conf_case_fail(&c, "batched decide failed: %s", err.message);
    for (size_t i = 0; i < NT && !c.failures; i++) {
        size_t k = NT - 1 - i;
        if (items[i].out_label != solo_label[k])
            conf_case_fail(&c, "input %zu: label %u in a batch, %u alone", k, items[i].out_label, solo_label[k]);
        if (memcmp(batched[k], solo[k], nl * sizeof(float)) != 0)
            conf_case_fail(&c, "input %zu: scores in a batch differ from its solo scores", k);
    }
    conf_case_end(&c, "%d inputs batched in reverse order (max_batch %zu) give their solo labels and scores", NT,
                  max_batch);
}

void conf_suite_isolation(conf_ctx *ctx)
{
    conf_model m;
    if (!conf_model_loads(ctx, &m, NULL)) return;
    if (ctx->provider.decl->capability == GUFO_CAPABILITY_TEXT_GENERATION) text_isolation(ctx, &m);
    else decisions_isolation(ctx, &m);
    conf_model_close(&m);
}

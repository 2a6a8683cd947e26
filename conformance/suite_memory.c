/* suite_memory.c — memory budgets: what a provider allocates is counted by the
 * host's pool, the same work fits again in exactly the budget it needed, too
 * small a budget fails cleanly (GUFO_E_OVER_BUDGET, nothing left behind), and
 * destroy returns every byte.
 *
 * Budgets apply to each kind of memory the provider uses: a CPU provider is
 * held to host budgets, a GPU provider (weights and caches in device memory,
 * a little host memory beside them) to host and device budgets together, each
 * derived from what that kind counted. */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROMPT = 16, GEN = 6 };

/* The work whose memory is measured: for text generation a session with a
 * prompt and a few decode steps; for other capabilities creating the model. */
static gufo_status workload(const conf_ctx *ctx, const conf_model *m, gufo_error *err)
{
    if (ctx->provider.decl->capability != GUFO_CAPABILITY_TEXT_GENERATION) return GUFO_OK;
    gufo_token prompt[PROMPT], out[GEN];
    conf_make_prompt(m, 3, prompt, PROMPT);
    return conf_greedy_run(m, prompt, PROMPT, GEN, out, err);
}

void conf_suite_memory(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "weights_counted");
    static const char *const rest[] = {"fits_its_own_peak", "tiny_budget_refused", "session_over_budget",
                                       "returns_every_byte", NULL};
    if (conf_need_artifact_for_all(&c, rest)) return;
    const char *path = ctx->artifact->path;
    gufo_error err = {0};
    conf_model m;
    if (conf_model_open(ctx, NULL, path, NULL, &m, &err) != GUFO_OK) {
        conf_model_close(&m);
        conf_case_abort(&c, "cannot create the model: %s", err.message);
        return;
    }
    uint64_t after_create = conf_memory_counted(m.memory), data = 0;
    conf_gguf_tensor_extent(path, &data, NULL);
    /* A provider that keeps the weights outside the pool (an uncharged mmap,
     * plain malloc) makes every budget meaningless. Half the tensor bytes is
     * a floor loose enough for providers that drop or repack some tensors. */
    if (after_create < data / 2)
        conf_case_fail(&c, "after create the pool counts %llu bytes, less than half the artifact's %llu tensor bytes: "
                       "weights must come from params->memory (or be charged with gufo_memory_charge)",
                       (unsigned long long)after_create, (unsigned long long)data);
    const uint64_t created[2] = {gufo_memory_used(m.memory, GUFO_MEMORY_HOST),
                                 gufo_memory_used(m.memory, GUFO_MEMORY_DEVICE)};
    gufo_status st = workload(ctx, &m, &err);
    if (st != GUFO_OK) conf_case_fail(&c, "the workload failed: %s", err.message);
    const uint64_t peak[2] = {gufo_memory_peak(m.memory, GUFO_MEMORY_HOST),
                              gufo_memory_peak(m.memory, GUFO_MEMORY_DEVICE)};
    uint64_t after_work = conf_memory_counted(m.memory);
    if (after_work != after_create)
        conf_case_fail(&c, "after the workload's sessions are gone the pool counts %llu bytes, %llu after create",
                       (unsigned long long)after_work, (unsigned long long)after_create);
    uint64_t left = conf_model_close(&m);
    conf_case_end(&c, "%llu bytes counted after create (the artifact holds %llu tensor bytes; host %llu, device "
                  "%llu); peak with a workload: host %llu, device %llu", (unsigned long long)after_create,
                  (unsigned long long)data, (unsigned long long)created[0], (unsigned long long)created[1],
                  (unsigned long long)peak[0], (unsigned long long)peak[1]);

    conf_case_begin(&c, ctx, "returns_every_byte");
    if (left) conf_case_fail(&c, "%llu bytes still counted after destroy", (unsigned long long)left);
    conf_case_end(&c, "0 bytes counted after destroy");

    /* The same work again inside exactly the peaks it needed: nothing is allocated outside the counts. A kind
     * the provider did not use stays unlimited (0). */
    conf_case_begin(&c, ctx, "fits_its_own_peak");
    const conf_budget at_peak = {.host = peak[0], .device = peak[1]};
    if (conf_model_open(ctx, NULL, path, &at_peak, &m, &err) != GUFO_OK) {
        conf_case_fail(&c, "create failed within its own peaks (host %llu, device %llu bytes): %s",
                       (unsigned long long)peak[0], (unsigned long long)peak[1], err.message);
    } else if ((st = workload(ctx, &m, &err)) != GUFO_OK) {
        conf_case_fail(&c, "the workload failed within its own peaks (host %llu, device %llu bytes): %s",
                       (unsigned long long)peak[0], (unsigned long long)peak[1], err.message);
    } else if (gufo_memory_peak(m.memory, GUFO_MEMORY_HOST) > peak[0] ||
               gufo_memory_peak(m.memory, GUFO_MEMORY_DEVICE) > peak[1]) {
        conf_case_fail(&c, "the pool's peak went past its budget");
    }
    conf_model_close(&m);
    conf_case_end(&c, "create + workload run within budgets of exactly host %llu and device %llu bytes",
                  (unsigned long long)peak[0], (unsigned long long)peak[1]);

    /* A quarter of what each kind counted after create (at least 1 byte of a kind that counted anything). */
    conf_case_begin(&c, ctx, "tiny_budget_refused");
    const conf_budget tiny = {.host = created[0] ? (created[0] / 4 ? created[0] / 4 : 1) : 0,
                              .device = created[1] ? (created[1] / 4 ? created[1] / 4 : 1) : 0};
    st = after_create ? conf_model_open(ctx, NULL, path, &tiny, &m, &err) : GUFO_OK;
    if (after_create == 0) {
        conf_case_fail(&c, "the model allocates nothing from the pool, so no budget limits it (see "
                       "memory.weights_counted)");
    } else if (st == GUFO_OK) {
        conf_case_fail(&c, "create succeeded within host %llu and device %llu bytes, a quarter of what it counted "
                       "before", (unsigned long long)tiny.host, (unsigned long long)tiny.device);
    } else if (st != GUFO_E_OVER_BUDGET) {
        conf_case_fail(&c, "create with too small a budget returned %s (%s), not GUFO_E_OVER_BUDGET",
                       gufo_status_name(st), err.message);
    } else if (m.memory && conf_memory_counted(m.memory) != 0) {
        conf_case_fail(&c, "the failed create left %llu bytes allocated",
                       (unsigned long long)conf_memory_counted(m.memory));
    }
    char message[sizeof err.message];
    memcpy(message, err.message, sizeof message);
    conf_model_close(&m);
    conf_case_end(&c, "create within host %llu and device %llu bytes fails with GUFO_E_OVER_BUDGET and leaves "
                  "nothing: \"%s\"", (unsigned long long)tiny.host, (unsigned long long)tiny.device, message);

    conf_case_begin(&c, ctx, "session_over_budget");
    if (ctx->provider.decl->capability != GUFO_CAPABILITY_TEXT_GENERATION) {
        conf_case_not_applicable(&c, "only text-generation providers have sessions");
        return;
    }
    /* Room for the weights and a little more of each kind the sessions used: sessions must hit a budget, fail
     * cleanly, and leave the sessions that fit working. */
    const bool grows[2] = {peak[0] > created[0], peak[1] > created[1]};
    const conf_budget budget = {.host = grows[0] ? created[0] + (peak[0] - created[0]) / 2 + 1 : 0,
                                .device = grows[1] ? created[1] + (peak[1] - created[1]) / 2 + 1 : 0};
    if (!grows[0] && !grows[1]) {
        /* The model says what a session costs: if that is not nothing, it must come from the pool. */
        uint64_t per_token = 0;
        if (conf_model_open(ctx, NULL, path, NULL, &m, &err) == GUFO_OK)
            per_token = conf_text_info(&m).session_bytes_per_token;
        conf_model_close(&m);
        if (per_token > 0) {
            conf_case_abort(&c, "sessions allocate nothing from the pool, yet get_info() says a session takes %llu "
                            "byte(s) per token: session memory (K/V cache, state) must come from params->memory so "
                            "the host's budget holds", (unsigned long long)per_token);
            return;
        }
        conf_case_not_applicable(&c, "sessions allocate nothing from the pool (the peak equals the weights) and get_info() "
                       "says they take no memory per token");
        return;
    }
    if (conf_model_open(ctx, NULL, path, &budget, &m, &err) != GUFO_OK) {
        conf_model_close(&m);
        conf_case_abort(&c, "create within host %llu and device %llu bytes failed: %s",
                        (unsigned long long)budget.host, (unsigned long long)budget.device, err.message);
        return;
    }
    conf_session sessions[64];
    size_t opened = 0, refused_at = 0;
    gufo_status refusal = GUFO_OK;
    gufo_token prompt[PROMPT];
    conf_make_prompt(&m, 3, prompt, PROMPT);
    for (; opened < 64; opened++) {
        st = conf_session_open(&m, 0, &sessions[opened], &err);
        if (st == GUFO_OK) {
            st = conf_prefill(&m, &sessions[opened], prompt, PROMPT, 0, NULL, NULL, &err);
            if (st != GUFO_OK) {
                refused_at = conf_session_length(&m, &sessions[opened]);
                opened++;
            }
        }
        if (st != GUFO_OK) {
            refusal = st;
            break;
        }
    }
    if (refusal == GUFO_OK)
        conf_case_fail(&c, "64 sessions fit in host %llu and device %llu bytes: sessions do not allocate from the pool",
                       (unsigned long long)budget.host, (unsigned long long)budget.device);
    else if (refusal != GUFO_E_OVER_BUDGET && refusal != GUFO_E_LIMIT)
        conf_case_fail(&c, "the session that did not fit failed with %s, not GUFO_E_OVER_BUDGET (%s)",
                       gufo_status_name(refusal), err.message);
    else if (refused_at != 0)
        conf_case_fail(&c, "the refused prefill left %zu tokens in the session", refused_at);
    if ((budget.host && gufo_memory_peak(m.memory, GUFO_MEMORY_HOST) > budget.host) ||
        (budget.device && gufo_memory_peak(m.memory, GUFO_MEMORY_DEVICE) > budget.device))
        conf_case_fail(&c, "the pool went past its budget");
    /* The first session still works. */
    gufo_token out[GEN];
    conf_session *first = &sessions[0];
    if (opened > 0 && sessions[0].next >= 0 && conf_decode_greedy(&m, &first, 1, 2, out, &err) != GUFO_OK &&
        err.status != GUFO_E_OVER_BUDGET)
        conf_case_fail(&c, "a session that fit stopped working after another hit the budget: %s", err.message);
    for (size_t i = 0; i < opened; i++) conf_session_close(&m, &sessions[i]);
    uint64_t used = conf_memory_counted(m.memory);
    if (used != after_create)
        conf_case_fail(&c, "with every session destroyed the pool counts %llu bytes, %llu after create",
                       (unsigned long long)used, (unsigned long long)after_create);
    conf_model_close(&m);
    conf_case_end(&c, "within host %llu and device %llu bytes, session %zu is refused with %s; the others keep "
                  "working and everything comes back", (unsigned long long)budget.host,
                  (unsigned long long)budget.device, opened, gufo_status_name(refusal));
}

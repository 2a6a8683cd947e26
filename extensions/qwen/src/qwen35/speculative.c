/* qwen35/speculative.c — qwen35-cpu's speculative interface: method "mtp" (model.h).
 *
 * Drafting (llama.cpp's MTP driver, greedy): the MTP block pairs the trunk's
 * output hidden at the session's last position with `last_token` and drafts
 * the token after it; each further draft pairs the MTP block's own output
 * hidden with the token just drafted. Before that, the same pass feeds the
 * pairs that became known since the last draft (mtp_history.h), so the MTP
 * block's attention sees the recent history; those stay in its cache, the
 * speculative rows do not (the cache length is put back after drafting).
 *
 * Verifying: one qwen35_verify pass over last_token + the drafts gives every
 * row's logits with the bits of single decodes. The host's sampler samples
 * row by row, exactly once per token the session ends up holding (so its RNG
 * advances as in plain decoding), until a sample differs from the draft: that
 * sample is the bonus token. qwen35_verify_accept then keeps the rows of
 * last_token and the accepted drafts, replaying the Gated DeltaNet log, so
 * the session is bit for bit the one plain decoding would hold.
 */
#include <string.h>

#include "session.h"

#define MTP_METHOD "mtp"

static const char *const methods[] = {MTP_METHOD};

static const char *who(const qwen35_model *model)
{
    return model->base.kind->provider_id;
}

static int32_t argmax(const float *row, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (row[i] > row[best])
            best = i;
    return (int32_t)best;
}

static gufo_status refuse_without_mtp(const qwen35_model *model, gufo_error *err)
{
    return gufo_error_set(err, GUFO_E_UNSUPPORTED,
                          "%s: --speculative " MTP_METHOD " drafts with the model's MTP block, and this file has "
                          "none (qwen35.nextn_predict_layers is %u: converted without it, e.g. llama.cpp's "
                          "--no-mtp); use --speculative off",
                          who(model), model->hp.n_nextn);
}

static gufo_status mtp_draft(gufo_model *handle, gufo_text_session *session_handle, const char *method,
                             gufo_token last_token, gufo_token *draft, size_t max_draft, size_t *n_draft,
                             gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    if (!model || !session || !method || (!draft && max_draft > 0) || !n_draft)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 draft: NULL argument");
    *n_draft = 0;
    if (strcmp(method, MTP_METHOD) != 0)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED, "%s: no speculative method '%s' (it offers " MTP_METHOD ")",
                              who(model), method);
    if (!model->weights.has_mtp)
        return refuse_without_mtp(model, err);
    if (last_token < 0 || (uint32_t)last_token >= model->hp.n_vocab)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s draft: token %d is outside the vocabulary 0..%u",
                              who(model), (int)last_token, model->hp.n_vocab - 1);
    qwen35_mtp_history *history = &session->mtp;
    qwen35_state *st = &session->state;
    /* No trunk row to start from (a fresh or restored session): nothing to
     * propose; the host decodes this step and the next draft has one. */
    if (history->n == 0)
        return GUFO_OK;
    if (max_draft > QWEN35_MAX_DRAFT)
        max_draft = QWEN35_MAX_DRAFT;
    /* The history rows plus max_draft - 1 chained rows must fit the MTP cache. */
    const uint32_t room = st->context - st->mtp_n_past;
    if (room < history->n)
        return GUFO_OK;
    if (max_draft > room - history->n + 1)
        max_draft = room - history->n + 1;
    if (max_draft == 0)
        return GUFO_OK;
    gufo_status status =
        qwen35_session_reserve(model, session, st->mtp_n_past + history->n + (uint32_t)max_draft - 1, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "draft");

    qwen35_engine *e = &model->engine;
    const uint32_t V = model->hp.n_vocab, D = model->hp.n_embd, n_known = history->n;
    const uint32_t mtp_n_past0 = st->mtp_n_past;
    history->next[n_known - 1] = last_token;
    status = qwen35_mtp_forward(e, st, history->next, history->hidden, n_known, err);
    if (status != GUFO_OK) {
        st->mtp_n_past = mtp_n_past0;
        return gufo_error_prefix(err, status, "%s draft", who(model));
    }
    /* Every pair but the newest is history now; the newest pairs a token not appended yet. */
    const uint32_t committed = mtp_n_past0 + n_known - 1;
    draft[0] = argmax(e->logits + (size_t)(n_known - 1) * V, V);
    const float *hidden = e->hidden + (size_t)(n_known - 1) * D;
    size_t n = 1;
    for (; n < max_draft; n++) {
        if ((status = qwen35_mtp_forward(e, st, &draft[n - 1], hidden, 1, err)) != GUFO_OK)
            break;
        draft[n] = argmax(e->logits, V);
        hidden = e->hidden;
    }
    st->mtp_n_past = committed;
    qwen35_mtp_history_drop_oldest(history, n_known - 1);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "%s draft", who(model));
    *n_draft = n;
    return GUFO_OK;
}

/* The verify log, made at the first verify and charged to the budget as scratch. */
static gufo_status ensure_verify_log(qwen35_model *model, const qwen35_state *st, gufo_error *err)
{
    if (model->verify_log.max_rows > 0)
        return GUFO_OK;
    const uint32_t rows = QWEN35_MAX_DRAFT + 1;
    gufo_status status = qwen35_verify_log_create(&model->hp, st, rows, &model->verify_log, err);
    if (status != GUFO_OK)
        return status;
    const uint64_t bytes = qwen35_verify_log_bytes(&model->hp, st, rows);
    if ((status = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, bytes, "scratch", err)) != GUFO_OK) {
        qwen35_verify_log_free(&model->verify_log);
        return status;
    }
    model->charged_verify = bytes;
    return GUFO_OK;
}

void qwen35_speculative_release(qwen35_model *model)
{
    gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, model->charged_verify, "scratch");
    model->charged_verify = 0;
    qwen35_verify_log_free(&model->verify_log);
}

static gufo_status mtp_verify(gufo_model *handle, gufo_text_session *session_handle, gufo_token last_token,
                              const gufo_token *draft, size_t n_draft, const gufo_step_output *output,
                              size_t *n_accepted, const gufo_cancel *cancel, gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    if (!model || !session || (!draft && n_draft > 0) || !output || !n_accepted)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 verify: NULL argument");
    *n_accepted = 0;
    if (!model->weights.has_mtp)
        return refuse_without_mtp(model, err);
    if (n_draft > QWEN35_MAX_DRAFT)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s verify: %zu drafts; it drafts at most %u",
                              who(model), n_draft, QWEN35_MAX_DRAFT);
    qwen35_state *st = &session->state;
    const uint32_t rows = (uint32_t)n_draft + 1;
    if (rows > st->context - st->n_past)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "%s verify: the session holds %u of %u tokens; %u more do not fit", who(model),
                              st->n_past, st->context, rows);
    int32_t tokens[QWEN35_MAX_DRAFT + 1];
    tokens[0] = last_token;
    memcpy(tokens + 1, draft, n_draft * sizeof *draft);
    for (uint32_t i = 0; i < rows; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= model->hp.n_vocab)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "%s verify: token %u is %d, outside the vocabulary 0..%u", who(model), i,
                                  (int)tokens[i], model->hp.n_vocab - 1);
    gufo_status status = gufo_cancel_check(cancel, err);
    if (status != GUFO_OK)
        return status;
    if ((status = ensure_verify_log(model, st, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "%s verify", who(model));
    if ((status = qwen35_session_reserve(model, session, st->n_past + rows, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "verify");

    qwen35_engine *e = &model->engine;
    qwen35_session_rewrites_from(model, session, st->n_past);
    if ((status = qwen35_verify(e, st, &model->verify_log, tokens, rows, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "%s verify", who(model));
    /* Row i's sample is the token after tokens[i]; the first that is not
     * draft[i] is the bonus, and no row after it is sampled. */
    const size_t V = model->hp.n_vocab;
    gufo_token sampled = -1;
    gufo_step_output row_output = *output;
    row_output.out_token = &sampled;
    size_t accepted = 0;
    for (size_t i = 0; i < rows; i++) {
        status = gufo_step_output_deliver(&row_output, e->logits + i * V, (int32_t)V, model->base.memory, err);
        if (status != GUFO_OK)
            break;
        if (i == n_draft || sampled != draft[i])
            break;
        accepted++;
    }
    /* Keep last_token's row and the accepted drafts' rows, whatever the sampler did. */
    const uint32_t keep = status == GUFO_OK ? (uint32_t)accepted + 1 : 1;
    qwen35_session_remember_rows(model, session, tokens, e->hidden, keep);
    gufo_status kept = qwen35_verify_accept(e, st, &model->verify_log, keep, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "%s verify", who(model));
    if (kept != GUFO_OK)
        return gufo_error_prefix(err, kept, "%s verify", who(model));
    *n_accepted = accepted;
    if (output->out_token)
        *output->out_token = sampled;
    return GUFO_OK;
}

static gufo_status mtp_available(gufo_model *handle, const char *method, gufo_error *err)
{
    const qwen35_model *model = qwen35_from_handle(handle);
    if (!model || !method)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 available: NULL model or method");
    if (strcmp(method, MTP_METHOD) != 0)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED, "%s: no speculative method '%s' (it offers " MTP_METHOD ")",
                              who(model), method);
    return model->weights.has_mtp ? GUFO_OK : refuse_without_mtp(model, err);
}

const gufo_speculative_iface qwen35_speculative = {
    .struct_size = sizeof(gufo_speculative_iface),
    .methods = methods,
    .n_methods = sizeof methods / sizeof methods[0],
    .draft = mtp_draft,
    .verify = mtp_verify,
    .available = mtp_available,
};

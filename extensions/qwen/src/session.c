/* session.c — sessions, prefill/decode steps, truncate and snapshots (session.h). */
#include "session.h"

#include <stddef.h>

struct qwen_session {
    qwen_live_link link;        /* first: in the model's list of live sessions */
    qwen_kv kv;                 /* kv.length is the session's length */
};
_Static_assert(offsetof(struct qwen_session, link) == 0, "a live list's head is its qwen_session");

struct qwen_snapshot {
    qwen_live_link link;        /* first: in the model's list of live snapshots */
    qwen_kv kv;                 /* capacity == length: a copy of the prefix */
};
_Static_assert(offsetof(struct qwen_snapshot, link) == 0, "a live list's head is its qwen_snapshot");

static qwen_session *session_of(gufo_text_session *handle)
{
    return (qwen_session *)(void *)handle;
}

static const qwen_session *const_session_of(const gufo_text_session *handle)
{
    return (const qwen_session *)(const void *)handle;
}

static const qwen_snapshot *snapshot_of(const gufo_text_snapshot *handle)
{
    return (const qwen_snapshot *)(const void *)handle;
}

static bool valid_token(const qwen_model *model, gufo_token token)
{
    return token >= 0 && (uint32_t)token < model->hp.n_vocab;
}

gufo_status qwen_session_create(gufo_model *handle, const gufo_session_params *params, gufo_text_session **out,
                                gufo_error *err)
{
    qwen_model *model = qwen_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen session_create: NULL model or output");
    uint32_t context = 0;
    gufo_status st = qwen_session_admit(&model->base, params, &context, err);
    if (st != GUFO_OK)
        return st;
    void *memory = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen_session), 0, "kv-cache", &memory,
                                       err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen session of %u tokens", context);
    qwen_session *session = memory;
    qwen_kv_init(&session->kv, &model->hp, context);
    qwen_live_add(&model->base.sessions, &session->link);
    *out = (gufo_text_session *)memory;
    return GUFO_OK;
}

void qwen_session_destroy(gufo_model *handle, gufo_text_session *session_handle)
{
    qwen_model *model = qwen_from_handle(handle);
    qwen_session *session = session_of(session_handle);
    if (!model || !session)
        return;
    qwen_live_remove(&model->base.sessions, &session->link);
    qwen_kv_release(model->base.memory, &session->kv);
    gufo_memory_free(model->base.memory, session);
}

uint32_t qwen_session_length(gufo_model *handle, const gufo_text_session *session)
{
    (void)handle;
    return session ? const_session_of(session)->kv.length : 0;
}

/* Hands one row of logits to the core: raw logits where it wants them, then
 * the next token (its sampler, or argmax). */
static gufo_status produce(qwen_model *model, const float *logits, const gufo_step_output *output, gufo_error *err)
{
    return gufo_step_output_deliver(output, logits, (int32_t)model->hp.n_vocab, model->base.memory, err);
}

static bool wants_output(const gufo_step_output *output)
{
    return output && (output->out_token || output->out_logits);
}

gufo_status qwen_prefill(gufo_model *handle, gufo_text_session *session_handle, const gufo_token *tokens, size_t n,
                         const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    qwen_model *model = qwen_from_handle(handle);
    qwen_session *session = session_of(session_handle);
    if (!model || !session || !tokens || n == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen prefill: no session or no tokens");
    qwen_kv *kv = &session->kv;
    if (n > kv->context - kv->length)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen prefill: the session holds %u of %u tokens; %zu more do not fit", kv->length,
                              kv->context, n);
    for (size_t i = 0; i < n; i++)
        if (!valid_token(model, tokens[i]))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen prefill: token %zu is %d, outside the vocabulary 0..%u", i, (int)tokens[i],
                                  model->hp.n_vocab - 1);
    gufo_status st = qwen_kv_reserve(model->base.memory, kv, kv->length + (uint32_t)n, "kv-cache", err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen prefill");

    /* Longer calls than the scratch holds run in slices; positions past
     * kv->length are free slots, so nothing is visible until the end. */
    qwen_row rows[QWEN_MAX_PREFILL_CHUNK];
    const size_t slice_max = model->engine.max_rows < QWEN_MAX_PREFILL_CHUNK ? model->engine.max_rows
                                                                              : QWEN_MAX_PREFILL_CHUNK;
    for (size_t done = 0; done < n;) {
        size_t slice = n - done < slice_max ? n - done : slice_max;
        for (size_t i = 0; i < slice; i++)
            rows[i] = (qwen_row){.kv = kv, .pos = kv->length + (uint32_t)(done + i), .token = tokens[done + i]};
        const bool last = done + slice == n;
        const uint32_t out_row = (uint32_t)(slice - 1);
        const size_t n_out = last && wants_output(output) ? 1 : 0;
        st = qwen_forward(&model->engine, rows, slice, &out_row, n_out, cancel, err);
        if (st != GUFO_OK)
            return st == GUFO_E_CANCELLED ? st : gufo_error_prefix(err, st, "qwen prefill");
        done += slice;
    }
    if (wants_output(output) && (st = produce(model, model->engine.logits, output, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen prefill");
    kv->length += (uint32_t)n;
    return GUFO_OK;
}

gufo_status qwen_decode(gufo_model *handle, const gufo_decode_batch *batch, gufo_error *err)
{
    qwen_model *model = qwen_from_handle(handle);
    if (!model || !batch || !GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, n_items) || !batch->items ||
        batch->n_items == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen decode: empty batch");
    if (batch->n_items > model->base.max_batch)
        return gufo_error_set(err, GUFO_E_LIMIT, "qwen decode: %zu sessions in one step; at most %u", batch->n_items,
                              model->base.max_batch);
    const gufo_cancel *cancel = GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, cancel) ? batch->cancel : NULL;
    const size_t n = batch->n_items;

    /* All items advance or none does, so every check comes first. */
    for (size_t i = 0; i < n; i++) {
        const gufo_decode_item *item = &batch->items[i];
        const qwen_session *session = session_of(item->session);
        if (!session)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen decode: item %zu has no session", i);
        if (!valid_token(model, item->token))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen decode: item %zu token %d is outside the vocabulary 0..%u", i,
                                  (int)item->token, model->hp.n_vocab - 1);
        if (session->kv.length >= session->kv.context)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen decode: item %zu: the session is full (%u tokens)",
                                  i, session->kv.context);
        for (size_t j = 0; j < i; j++)
            if (batch->items[j].session == item->session)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen decode: items %zu and %zu are the same session",
                                      j, i);
    }
    /* Growing a cache changes only its capacity, so a later failure here
     * still leaves every session's history as it was. */
    for (size_t i = 0; i < n; i++) {
        qwen_kv *kv = &session_of(batch->items[i].session)->kv;
        gufo_status st = qwen_kv_reserve(model->base.memory, kv, kv->length + 1, "kv-cache", err);
        if (st != GUFO_OK)
            return gufo_error_prefix(err, st, "qwen decode item %zu", i);
    }

    qwen_row rows[QWEN_MAX_BATCH_LIMIT];
    uint32_t out_rows[QWEN_MAX_BATCH_LIMIT];
    for (size_t i = 0; i < n; i++) {
        qwen_kv *kv = &session_of(batch->items[i].session)->kv;
        rows[i] = (qwen_row){.kv = kv, .pos = kv->length, .token = batch->items[i].token};
        out_rows[i] = (uint32_t)i;
    }
    gufo_status st = qwen_forward(&model->engine, rows, n, out_rows, n, cancel, err);
    if (st != GUFO_OK)
        return st == GUFO_E_CANCELLED ? st : gufo_error_prefix(err, st, "qwen decode");
    /* Outputs first: if one fails, no session has moved yet. */
    for (size_t i = 0; i < n; i++) {
        const float *logits = model->engine.logits + i * (size_t)model->hp.n_vocab;
        if ((st = produce(model, logits, &batch->items[i].output, err)) != GUFO_OK)
            return gufo_error_prefix(err, st, "qwen decode item %zu", i);
    }
    for (size_t i = 0; i < n; i++)
        session_of(batch->items[i].session)->kv.length++;
    return GUFO_OK;
}

gufo_status qwen_truncate(gufo_model *handle, gufo_text_session *session_handle, uint32_t length, gufo_error *err)
{
    (void)handle;
    qwen_session *session = session_of(session_handle);
    if (!session)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen truncate: NULL session");
    if (length > session->kv.length)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen truncate: cannot grow a session of %u tokens to %u",
                              session->kv.length, length);
    /* Position i's keys and values depend only on tokens 0..i, so the
     * prefix is exactly the state of the shorter history. */
    session->kv.length = length;
    return GUFO_OK;
}

gufo_status qwen_snapshot_take(gufo_model *handle, const gufo_text_session *session_handle, gufo_text_snapshot **out,
                               gufo_error *err)
{
    qwen_model *model = qwen_from_handle(handle);
    const qwen_session *session = const_session_of(session_handle);
    if (!model || !session || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen snapshot: NULL model, session or output");
    void *memory = NULL;
    gufo_status st =
        gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen_snapshot), 0, "snapshot", &memory, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen snapshot of %u tokens", session->kv.length);
    qwen_snapshot *snapshot = memory;
    qwen_kv_init(&snapshot->kv, &model->hp, session->kv.length);
    if ((st = qwen_kv_reserve(model->base.memory, &snapshot->kv, session->kv.length, "snapshot", err)) != GUFO_OK) {
        gufo_memory_free(model->base.memory, snapshot);
        return gufo_error_prefix(err, st, "qwen snapshot");
    }
    if (session->kv.length)
        qwen_kv_copy_prefix(&snapshot->kv, &session->kv, session->kv.length);
    qwen_live_add(&model->base.snapshots, &snapshot->link);
    *out = (gufo_text_snapshot *)memory;
    return GUFO_OK;
}

gufo_status qwen_restore(gufo_model *handle, gufo_text_session *session_handle, const gufo_text_snapshot *snapshot_handle,
                         gufo_error *err)
{
    qwen_model *model = qwen_from_handle(handle);
    qwen_session *session = session_of(session_handle);
    const qwen_snapshot *snapshot = snapshot_of(snapshot_handle);
    if (!model || !session || !snapshot)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen restore: NULL model, session or snapshot");
    const uint32_t length = snapshot->kv.length;
    if (length > session->kv.context)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen restore: the snapshot holds %u tokens, the session only %u",
                              length, session->kv.context);
    gufo_status st = qwen_kv_reserve(model->base.memory, &session->kv, length, "kv-cache", err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen restore");
    if (length)
        qwen_kv_copy_prefix(&session->kv, &snapshot->kv, length);
    session->kv.length = length;
    return GUFO_OK;
}

void qwen_snapshot_destroy(gufo_model *handle, gufo_text_snapshot *snapshot_handle)
{
    qwen_model *model = qwen_from_handle(handle);
    qwen_snapshot *snapshot = (qwen_snapshot *)(void *)snapshot_handle;
    if (!model || !snapshot)
        return;
    qwen_live_remove(&model->base.snapshots, &snapshot->link);
    qwen_kv_release(model->base.memory, &snapshot->kv);
    gufo_memory_free(model->base.memory, snapshot);
}

uint32_t qwen_snapshot_length(gufo_model *handle, const gufo_text_snapshot *snapshot)
{
    (void)handle;
    return snapshot ? snapshot_of(snapshot)->kv.length : 0;
}

void qwen_release_all(qwen_model *model)
{
    gufo_model *handle = qwen_to_handle(model);
    while (model->base.sessions.head)
        qwen_session_destroy(handle, (gufo_text_session *)(void *)model->base.sessions.head);
    while (model->base.snapshots.head)
        qwen_snapshot_destroy(handle, (gufo_text_snapshot *)(void *)model->base.snapshots.head);
}

/* qwen35/session.c — qwen35-cpu's sessions, steps, truncate and snapshots (model.h). */
#include "session.h"

#include <stdlib.h>
#include <string.h>

/* A snapshot of the recurrent state. The attention caches it relies on stay
 * its source session's while that session lives (copying them into every
 * snapshot would cost 128 KiB per position at 27B, and most snapshots are
 * restored into their own session): it restores into the source as it is,
 * into another session by copying the source's rows first, and only while
 * the source has not overwritten its positions (`stale`). When the source is
 * destroyed, the snapshot takes its own copy of the rows (`rows`), so it
 * stays restorable anywhere, as the interface promises. */
typedef struct qwen35_session_snapshot {
    qwen_live_link link;            /* first: in the model's list of live snapshots */
    const qwen35_session *source;   /* NULL once the source session is destroyed */
    bool stale;                     /* the source has since rewritten positions below its length */
    qwen35_snapshot core;
    float *rows;                    /* the attention rows, copied when the source went (else NULL) */
    uint64_t charged;               /* bytes charged under "snapshot" (rows included) */
} qwen35_session_snapshot;
_Static_assert(offsetof(qwen35_session_snapshot, link) == 0, "a live list's head is its snapshot");

static const qwen35_session *const_session_of(const gufo_text_session *handle)
{
    return (const qwen35_session *)(const void *)handle;
}

static qwen35_session_snapshot *snapshot_of(gufo_text_snapshot *handle)
{
    return (qwen35_session_snapshot *)(void *)handle;
}

static const qwen35_session_snapshot *const_snapshot_of(const gufo_text_snapshot *handle)
{
    return (const qwen35_session_snapshot *)(const void *)handle;
}

static const char *who(const qwen35_model *model)
{
    return model->base.kind->provider_id;
}

static uint64_t state_bytes(const qwen35_state *st)
{
    return ((uint64_t)st->n_kv_slots * st->kv_slot_floats +
            (uint64_t)st->n_gdn * (st->conv_floats + st->delta_floats)) * sizeof(float);
}

uint64_t qwen35_session_bytes_per_token(const qwen35_hparams *hp, bool with_mtp)
{
    const uint64_t caches = qwen35_attention_layers(hp) + (with_mtp ? 1u : 0u);
    return caches * 2u * hp->n_head_kv * hp->head_dim * sizeof(float);
}

uint64_t qwen35_snapshot_size(const qwen35_hparams *hp)
{
    const uint64_t gdn = hp->n_layer - qwen35_attention_layers(hp);
    const uint64_t conv = (uint64_t)(hp->conv_kernel - 1) * qwen35_gdn_conv_dim(hp);
    const uint64_t delta = (uint64_t)hp->gdn_v_heads * hp->gdn_head_dim * hp->gdn_head_dim;
    return gdn * (conv + delta) * sizeof(float);
}

void qwen35_session_rewrites_from(qwen35_model *model, const qwen35_session *session, uint32_t length)
{
    for (qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        qwen35_session_snapshot *snap = (qwen35_session_snapshot *)(void *)l;
        if (snap->source == session && snap->core.n_past > length)
            snap->stale = true;
    }
}

void qwen35_session_remember_rows(qwen35_model *model, qwen35_session *session, const int32_t *tokens,
                                  const float *hidden, uint32_t n)
{
    if (model->weights.has_mtp)
        qwen35_mtp_history_push(&session->mtp, tokens, hidden, n);
}

gufo_status qwen35_session_reserve(qwen35_model *model, qwen35_session *session, uint32_t positions, gufo_error *err)
{
    qwen35_state *st = &session->state;
    const uint32_t capacity = qwen35_state_grown_capacity(st, positions);
    if (capacity == 0)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "%s: %u tokens do not fit the session's context of %u",
                              who(model), positions, st->context);
    if (capacity == st->capacity)
        return GUFO_OK;
    const uint64_t bytes = qwen35_state_kv_bytes(st, capacity) - qwen35_state_kv_bytes(st, st->capacity);
    gufo_status status = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, bytes, "kv-cache", err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "%s: growing the session's caches to %u tokens", who(model), capacity);
    if ((status = qwen35_state_reserve(st, positions, err)) != GUFO_OK) {
        gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, bytes, "kv-cache");
        return gufo_error_prefix(err, status, "%s", who(model));
    }
    session->charged += bytes;
    return GUFO_OK;
}

/* ---- sessions ----------------------------------------------------------------- */

gufo_status qwen35_session_create(gufo_model *handle, const gufo_session_params *params, gufo_text_session **out,
                                  gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 session_create: NULL model or output");
    *out = NULL;
    uint32_t context = 0;
    gufo_status st = qwen_session_admit(&model->base, params, &context, err);
    if (st != GUFO_OK)
        return st;
    void *block = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen35_session), 0, "kv-cache", &block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s session of %u tokens", who(model), context);
    qwen35_session *session = block;
    memset(session, 0, sizeof *session);
    /* With an MTP block the session keeps what MTP drafting needs: the
     * block's own cache and the newest trunk rows (speculative.c). */
    const bool with_mtp = model->weights.has_mtp;
    const uint32_t first = context < QWEN35_FIRST_CAPACITY ? context : QWEN35_FIRST_CAPACITY;
    if ((st = qwen35_state_init(&model->hp, with_mtp, first, context, &session->state, err)) != GUFO_OK) {
        gufo_memory_free(model->base.memory, session);
        return gufo_error_prefix(err, st, "%s session of %u tokens", who(model), context);
    }
    if (with_mtp && (st = qwen35_mtp_history_init(&session->mtp, model->hp.n_embd, err)) != GUFO_OK) {
        qwen35_state_free(&session->state);
        gufo_memory_free(model->base.memory, session);
        return gufo_error_prefix(err, st, "%s session of %u tokens", who(model), context);
    }
    const uint64_t bytes =
        state_bytes(&session->state) + (with_mtp ? qwen35_mtp_history_bytes(model->hp.n_embd) : 0);
    if ((st = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, bytes, "kv-cache", err)) != GUFO_OK) {
        qwen35_mtp_history_free(&session->mtp);
        qwen35_state_free(&session->state);
        gufo_memory_free(model->base.memory, session);
        return gufo_error_prefix(err, st, "%s session of %u tokens (%llu bytes of state)", who(model), context,
                                 (unsigned long long)bytes);
    }
    session->charged = bytes;
    qwen_live_add(&model->base.sessions, &session->link);
    *out = (gufo_text_session *)block;
    return GUFO_OK;
}

void qwen35_session_destroy(gufo_model *handle, gufo_text_session *session_handle)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    if (!model || !session)
        return;
    /* Its snapshots outlive it: each takes its own copy of the attention rows
     * it needs (charged as snapshot memory; without room it stays, unrestorable). */
    for (qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        qwen35_session_snapshot *snap = (qwen35_session_snapshot *)(void *)l;
        if (snap->source != session)
            continue;
        snap->source = NULL;
        if (snap->stale)
            continue;
        const uint64_t bytes =
            qwen35_attention_rows_bytes(&session->state, snap->core.n_past, snap->core.mtp_n_past);
        if (gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, bytes, "snapshot", NULL) != GUFO_OK)
            continue;
        snap->rows = qwen35_state_export_attention(&session->state, snap->core.n_past,
                                                   snap->core.mtp_n_past);
        if (snap->rows)
            snap->charged += bytes;
        else
            gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, bytes, "snapshot");
    }
    qwen_live_remove(&model->base.sessions, &session->link);
    gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, session->charged, "kv-cache");
    qwen35_mtp_history_free(&session->mtp);
    qwen35_state_free(&session->state);
    gufo_memory_free(model->base.memory, session);
}

uint32_t qwen35_session_length(gufo_model *handle, const gufo_text_session *session)
{
    (void)handle;
    return session ? const_session_of(session)->state.n_past : 0;
}

/* ---- steps -------------------------------------------------------------------- */

static bool wants_output(const gufo_step_output *output)
{
    return output && (output->out_token || output->out_logits);
}

static bool valid_token(const qwen35_model *model, gufo_token token)
{
    return token >= 0 && (uint32_t)token < model->hp.n_vocab;
}

gufo_status qwen35_prefill(gufo_model *handle, gufo_text_session *session_handle, const gufo_token *tokens, size_t n,
                           const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    if (!model || !session || !tokens || n == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 prefill: no session or no tokens");
    qwen35_state *st = &session->state;
    if (n > st->context - st->n_past)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "%s prefill: the session holds %u of %u tokens; %zu more do not fit", who(model),
                              st->n_past, st->context, n);
    for (size_t i = 0; i < n; i++)
        if (!valid_token(model, tokens[i]))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "%s prefill: token %zu is %d, outside the vocabulary 0..%u", who(model), i,
                                  (int)tokens[i], model->hp.n_vocab - 1);
    /* The recurrent state changes as each slice runs and cannot be put back,
     * so cancellation is honoured before the first slice only; the host
     * sends at most max_prefill_chunk tokens, which is one slice. */
    gufo_status status = gufo_cancel_check(cancel, err);
    if (status != GUFO_OK)
        return status;
    if ((status = qwen35_session_reserve(model, session, st->n_past + (uint32_t)n, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "prefill");
    qwen35_session_rewrites_from(model, session, st->n_past);
    const uint32_t slice_max = model->engine.max_rows;
    for (size_t done = 0; done < n;) {
        const uint32_t slice = n - done < slice_max ? (uint32_t)(n - done) : slice_max;
        if ((status = qwen35_forward(&model->engine, st, tokens + done, slice, false, err)) != GUFO_OK)
            return gufo_error_prefix(err, status, "%s prefill", who(model));
        qwen35_session_remember_rows(model, session, tokens + done, model->engine.hidden, slice);
        done += slice;
    }
    if (wants_output(output) &&
        (status = gufo_step_output_deliver(output, model->engine.logits, (int32_t)model->hp.n_vocab,
                                           model->base.memory, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "%s prefill", who(model));
    return GUFO_OK;
}

gufo_status qwen35_decode(gufo_model *handle, const gufo_decode_batch *batch, gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    if (!model || !batch || !GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, n_items) || !batch->items ||
        batch->n_items == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 decode: empty batch");
    if (batch->n_items > model->base.max_batch)
        return gufo_error_set(err, GUFO_E_LIMIT, "%s decode: %zu sessions in one step; at most %u", who(model),
                              batch->n_items, model->base.max_batch);
    qwen35_state *states[QWEN35_MAX_BATCH_LIMIT];
    int32_t tokens[QWEN35_MAX_BATCH_LIMIT];
    const uint32_t n = (uint32_t)batch->n_items;
    /* Everything that can refuse the step is checked before the state moves:
     * all items advance or none does. */
    for (uint32_t i = 0; i < n; i++) {
        const gufo_decode_item *item = &batch->items[i];
        qwen35_session *session = qwen35_session_of(item->session);
        if (!session)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s decode: item %u has no session", who(model), i);
        if (!valid_token(model, item->token))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "%s decode: item %u's token is %d, outside the vocabulary 0..%u", who(model), i,
                                  (int)item->token, model->hp.n_vocab - 1);
        if (session->state.n_past >= session->state.context)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "%s decode: item %u's session is full (%u tokens)",
                                  who(model), i, session->state.context);
        for (uint32_t j = 0; j < i; j++)
            if (states[j] == &session->state)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s decode: items %u and %u are one session",
                                      who(model), j, i);
        states[i] = &session->state;
        tokens[i] = item->token;
    }
    gufo_status st = gufo_cancel_check(batch->cancel, err);
    if (st != GUFO_OK)
        return st;
    /* Growing a cache keeps what it holds, so an item that grew stays valid if a later one cannot. */
    for (uint32_t i = 0; i < n; i++)
        if ((st = qwen35_session_reserve(model, qwen35_session_of(batch->items[i].session), states[i]->n_past + 1,
                                         err)) != GUFO_OK)
            return gufo_error_prefix(err, st, "decode: item %u", i);
    for (uint32_t i = 0; i < n; i++)
        qwen35_session_rewrites_from(model, qwen35_session_of(batch->items[i].session), states[i]->n_past);
    if ((st = qwen35_decode_batch(&model->engine, states, tokens, n, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "%s decode", who(model));
    for (uint32_t i = 0; i < n; i++)
        qwen35_session_remember_rows(model, qwen35_session_of(batch->items[i].session), &tokens[i],
                                     model->engine.hidden + (size_t)i * model->hp.n_embd, 1);
    const size_t row = model->hp.n_vocab;
    for (uint32_t i = 0; i < n; i++) {
        const gufo_step_output *output = &batch->items[i].output;
        if (!wants_output(output))
            continue;
        st = gufo_step_output_deliver(output, model->engine.logits + i * row, (int32_t)model->hp.n_vocab,
                                      model->base.memory, err);
        if (st != GUFO_OK)
            return gufo_error_prefix(err, st, "%s decode: item %u", who(model), i);
    }
    return GUFO_OK;
}

/* ---- cache reuse -------------------------------------------------------------- */

/* A live, fresh snapshot of `session` at `length`, or NULL. */
static const qwen35_session_snapshot *snapshot_at(const qwen35_model *model, const qwen35_session *session,
                                                  uint32_t length)
{
    for (const qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        const qwen35_session_snapshot *snap = (const qwen35_session_snapshot *)(const void *)l;
        if (snap->source == session && !snap->stale && snap->core.n_past == length)
            return snap;
    }
    return NULL;
}

gufo_status qwen35_truncate(gufo_model *handle, gufo_text_session *session_handle, uint32_t length, gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    if (!model || !session)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 truncate: NULL session");
    qwen35_state *st = &session->state;
    if (length == st->n_past)
        return GUFO_OK;
    if (length > st->n_past)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s truncate: the session holds %u tokens, not %u",
                              who(model), st->n_past, length);
    if (length == 0) {
        qwen35_session_rewrites_from(model, session, 0);
        qwen35_mtp_history_clear(&session->mtp);
        qwen35_state_reset(st);
        return GUFO_OK;
    }
    const qwen35_session_snapshot *snap = snapshot_at(model, session, length);
    if (snap) {
        gufo_status status = qwen35_snapshot_restore(st, &snap->core, err);
        if (status == GUFO_OK) {
            qwen35_session_rewrites_from(model, session, length);
            qwen35_mtp_history_clear(&session->mtp); /* its rows followed the positions just undone */
        }
        return status;
    }
    return gufo_error_set(err, GUFO_E_UNSUPPORTED,
                          "%s truncate: cannot go back from %u to %u tokens: the Gated DeltaNet state does not "
                          "rewind, and no snapshot of this session was taken at %u (prefill a new session instead)",
                          who(model), st->n_past, length, length);
}

gufo_status qwen35_snapshot_create(gufo_model *handle, const gufo_text_session *session_handle,
                                   gufo_text_snapshot **out, gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    const qwen35_session *session = const_session_of(session_handle);
    if (!model || !session || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 snapshot: NULL session or output");
    *out = NULL;
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen35_session_snapshot), 0,
                                       "snapshot", &block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s snapshot", who(model));
    qwen35_session_snapshot *snap = block;
    memset(snap, 0, sizeof *snap);
    snap->source = session;
    const uint64_t bytes = qwen35_snapshot_bytes(&session->state);
    if ((st = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, bytes, "snapshot", err)) != GUFO_OK) {
        gufo_memory_free(model->base.memory, snap);
        return gufo_error_prefix(err, st, "%s snapshot of %llu bytes", who(model), (unsigned long long)bytes);
    }
    if ((st = qwen35_snapshot_take(&session->state, &snap->core, err)) != GUFO_OK) {
        gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, bytes, "snapshot");
        gufo_memory_free(model->base.memory, snap);
        return gufo_error_prefix(err, st, "%s snapshot", who(model));
    }
    snap->charged = bytes;
    qwen_live_add(&model->base.snapshots, &snap->link);
    *out = (gufo_text_snapshot *)block;
    return GUFO_OK;
}

gufo_status qwen35_restore(gufo_model *handle, gufo_text_session *session_handle, const gufo_text_snapshot *snapshot,
                           gufo_error *err)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session *session = qwen35_session_of(session_handle);
    const qwen35_session_snapshot *snap = const_snapshot_of(snapshot);
    if (!model || !session || !snap)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 restore: NULL session or snapshot");
    if (!snap->source && !snap->rows)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED,
                              "%s restore: the snapshot's session is gone and there was no memory to keep the "
                              "attention rows it needs", who(model));
    if (snap->stale)
        return gufo_error_set(err, GUFO_E_STATE,
                              "%s restore: the session has rewritten positions below the snapshot's %u since it "
                              "was taken", who(model), snap->core.n_past);
    gufo_status st = GUFO_OK;
    if (snap->source != session) {
        /* This session's positions are replaced from 0: its own snapshots no longer match it. */
        qwen35_session_rewrites_from(model, session, 0);
        const uint32_t rows = snap->core.n_past > snap->core.mtp_n_past ? snap->core.n_past : snap->core.mtp_n_past;
        st = qwen35_session_reserve(model, session, rows, err);
        if (st == GUFO_OK)
            st = snap->source ? qwen35_state_copy_attention(&session->state, &snap->source->state, snap->core.n_past,
                                                            snap->core.mtp_n_past, err)
                              : qwen35_state_import_attention(&session->state, snap->rows, snap->core.n_past,
                                                              snap->core.mtp_n_past, err);
        if (st != GUFO_OK)
            return gufo_error_prefix(err, st, "%s restore", who(model));
    }
    st = qwen35_snapshot_restore(&session->state, &snap->core, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s restore", who(model));
    qwen35_session_rewrites_from(model, session, snap->core.n_past);
    qwen35_mtp_history_clear(&session->mtp); /* its rows followed the positions just undone */
    return GUFO_OK;
}

void qwen35_snapshot_destroy(gufo_model *handle, gufo_text_snapshot *snapshot)
{
    qwen35_model *model = qwen35_from_handle(handle);
    qwen35_session_snapshot *snap = snapshot_of(snapshot);
    if (!model || !snap)
        return;
    qwen_live_remove(&model->base.snapshots, &snap->link);
    gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, snap->charged, "snapshot");
    free(snap->rows);
    qwen35_snapshot_free(&snap->core);
    gufo_memory_free(model->base.memory, snap);
}

uint32_t qwen35_snapshot_length(gufo_model *handle, const gufo_text_snapshot *snapshot)
{
    (void)handle;
    return snapshot ? const_snapshot_of(snapshot)->core.n_past : 0;
}

void qwen35_release_all(qwen35_model *model)
{
    gufo_model *handle = qwen35_to_handle(model);
    while (model->base.sessions.head)
        qwen35_session_destroy(handle, (gufo_text_session *)(void *)model->base.sessions.head);
    while (model->base.snapshots.head)
        qwen35_snapshot_destroy(handle, (gufo_text_snapshot *)(void *)model->base.snapshots.head);
}

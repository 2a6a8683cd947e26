/* qwen35_gpu/session.c — qwen35-gpu's sessions, steps, truncate and snapshots (model.h).
 *
 * The cache semantics are qwen35-cpu's (../qwen35/session.c, README.md):
 * get_info says GUFO_CACHE_SNAPSHOT only; truncate answers where the state
 * can be rebuilt exactly (the current length, 0, the length of a live
 * snapshot of this session) and is GUFO_E_UNSUPPORTED elsewhere, the session
 * unchanged. A snapshot is a device copy of the recurrent state; the
 * attention rows stay in the source session while it lives (restoring into
 * another session copies them first, device to device) and are copied into
 * the snapshot when the source is destroyed. A snapshot whose positions the
 * source has since rewritten is stale: restoring it is GUFO_E_STATE.
 * The length moves only after a step succeeded on the device.
 */
#include <stddef.h>
#include <string.h>

#include "../gpu/model_gpu.h"
#include "state.h"

typedef struct qwen35_gpu_session {
    qwen_live_link link; /* first: in the model's list of live sessions */
    qwen35_gpu_state state;
} qwen35_gpu_session;
_Static_assert(offsetof(qwen35_gpu_session, link) == 0, "a live list's head is its session");

typedef struct qwen35_gpu_snapshot {
    qwen_live_link link;               /* first: in the model's list of live snapshots */
    const qwen35_gpu_session *source;  /* NULL once the source session is destroyed */
    bool stale;                        /* the source has since rewritten positions below n_past */
    uint32_t n_past;
    float *recurrent;                  /* device copy of the recurrent state */
    float *rows;                       /* device: the attention rows [slot][K, V][n_past][Hkv hd], once the source went */
} qwen35_gpu_snapshot;
_Static_assert(offsetof(qwen35_gpu_snapshot, link) == 0, "a live list's head is its snapshot");

static qwen35_gpu_session *session_of(gufo_text_session *handle)
{
    return (qwen35_gpu_session *)(void *)handle;
}

static const qwen35_gpu_session *const_session_of(const gufo_text_session *handle)
{
    return (const qwen35_gpu_session *)(const void *)handle;
}

static const qwen35_gpu_snapshot *const_snapshot_of(const gufo_text_snapshot *handle)
{
    return (const qwen35_gpu_snapshot *)(const void *)handle;
}

/* Every snapshot of `session` longer than `length` goes stale: the session
 * is about to write its positions from `length` on again. */
static void rewrites_from(qwen35_gpu_model *model, const qwen35_gpu_session *session, uint32_t length)
{
    for (qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        qwen35_gpu_snapshot *snap = (qwen35_gpu_snapshot *)(void *)l;
        if (snap->source == session && snap->n_past > length)
            snap->stale = true;
    }
}

/* ---- sessions ----------------------------------------------------------------- */

gufo_status qwen35_gpu_session_create(gufo_model *handle, const gufo_session_params *params, gufo_text_session **out,
                                      gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu session_create: NULL model or output");
    *out = NULL;
    uint32_t context = 0;
    gufo_status st = qwen_session_admit(&model->base, params, &context, err);
    if (st != GUFO_OK)
        return st;
    void *block = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen35_gpu_session), 0, "kv-cache", &block,
                           err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen35-gpu session of %u tokens", context);
    qwen35_gpu_session *session = block;
    memset(session, 0, sizeof *session);
    if ((st = qwen35_gpu_state_init(model, context, &session->state, err)) != GUFO_OK) {
        gufo_memory_free(model->base.memory, session);
        return gufo_error_prefix(err, st, "qwen35-gpu session of %u tokens", context);
    }
    qwen_live_add(&model->base.sessions, &session->link);
    *out = (gufo_text_session *)block;
    return GUFO_OK;
}

void qwen35_gpu_session_destroy(gufo_model *handle, gufo_text_session *session_handle)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    qwen35_gpu_session *session = session_of(session_handle);
    if (!model || !session)
        return;
    /* Its snapshots outlive it: each takes its own copy of the attention rows
     * it needs (without device memory for them it stays, unrestorable). */
    for (qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        qwen35_gpu_snapshot *snap = (qwen35_gpu_snapshot *)(void *)l;
        if (snap->source != session)
            continue;
        snap->source = NULL;
        if (snap->stale || snap->n_past == 0)
            continue;
        void *rows = NULL;
        if (gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, (size_t)qwen35_gpu_kv_bytes(model, snap->n_past),
                              256, "snapshot", &rows, NULL) != GUFO_OK)
            continue;
        if (qwen35_gpu_copy_attention(model, rows, snap->n_past, session->state.kv, session->state.capacity,
                                      snap->n_past)) {
            gufo_memory_free(model->base.memory, rows);
            continue;
        }
        snap->rows = rows;
    }
    qwen_live_remove(&model->base.sessions, &session->link);
    qwen35_gpu_state_free(model, &session->state);
    gufo_memory_free(model->base.memory, session);
}

uint32_t qwen35_gpu_session_length(gufo_model *handle, const gufo_text_session *session)
{
    (void)handle;
    return session ? const_session_of(session)->state.n_past : 0;
}

/* ---- steps -------------------------------------------------------------------- */

static bool valid_token(const qwen35_gpu_model *model, gufo_token token)
{
    return token >= 0 && (uint32_t)token < model->hp.n_vocab;
}

static qwen_gpu_row row_of(const qwen35_gpu_state *st, uint32_t pos, gufo_token token)
{
    return (qwen_gpu_row){.kv = st->kv, .pos = pos, .capacity = st->capacity, .token = token};
}

gufo_status qwen35_gpu_prefill(gufo_model *handle, gufo_text_session *session_handle, const gufo_token *tokens,
                               size_t n, const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    qwen35_gpu_session *session = session_of(session_handle);
    if (!model || !session || !tokens || n == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu prefill: no session or no tokens");
    qwen35_gpu_state *st = &session->state;
    if (n > st->context - st->n_past)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen35-gpu prefill: the session holds %u of %u tokens; %zu more do not fit", st->n_past,
                              st->context, n);
    for (size_t i = 0; i < n; i++)
        if (!valid_token(model, tokens[i]))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen35-gpu prefill: token %zu is %d, outside the vocabulary 0..%u", i,
                                  (int)tokens[i], model->hp.n_vocab - 1);
    /* The recurrent state changes as each slice runs and cannot be put back,
     * so cancellation is honoured before the first slice only (the host sends
     * at most max_prefill_chunk tokens, which is one slice). */
    gufo_status status = gufo_cancel_check(cancel, err);
    if (status != GUFO_OK)
        return status;
    if ((status = qwen35_gpu_state_reserve(model, st, st->n_past + (uint32_t)n, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "qwen35-gpu prefill");
    rewrites_from(model, session, st->n_past);
    const bool want = qwen_gpu_wants_output(output);
    const size_t slice_max = model->scratch.max_rows;
    model->seqs_host[0] = qwen35_gpu_state_seq(model, st);
    for (size_t done = 0; done < n;) {
        const uint32_t slice = n - done < slice_max ? (uint32_t)(n - done) : (uint32_t)slice_max;
        for (uint32_t i = 0; i < slice; i++)
            model->rows_host[i] = row_of(st, st->n_past + i, tokens[done + i]);
        const bool last = done + slice == n;
        const uint32_t n_out = last && want ? 1 : 0;
        qwen_gpu_pick pick = QWEN_GPU_PICK_NONE;
        if (n_out) {
            const uint32_t position = st->n_past + slice;
            pick = qwen_gpu_plan_picks(model->sampling_host, &output, &position, 1);
        }
        if ((status = qwen35_gpu_forward(model, slice, 1, n_out, pick, false, err)) != GUFO_OK)
            return gufo_error_prefix(err, status, "qwen35-gpu prefill");
        st->n_past += slice;
        st->kv_written = st->n_past;
        done += slice;
    }
    if (want && (status = qwen_gpu_deliver(&model->outputs, 0, output, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "qwen35-gpu prefill");
    return GUFO_OK;
}

gufo_status qwen35_gpu_decode(gufo_model *handle, const gufo_decode_batch *batch, gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    if (!model || !batch || !GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, n_items) || !batch->items ||
        batch->n_items == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu decode: empty batch");
    if (batch->n_items > model->base.max_batch)
        return gufo_error_set(err, GUFO_E_LIMIT, "qwen35-gpu decode: %zu sessions in one step; at most %u",
                              batch->n_items, model->base.max_batch);
    const uint32_t n = (uint32_t)batch->n_items;
    /* Everything that can refuse the step is checked before any state moves. */
    for (uint32_t i = 0; i < n; i++) {
        const gufo_decode_item *item = &batch->items[i];
        const qwen35_gpu_session *session = session_of(item->session);
        if (!session)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu decode: item %u has no session", i);
        if (!valid_token(model, item->token))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen35-gpu decode: item %u's token is %d, outside the vocabulary 0..%u", i,
                                  (int)item->token, model->hp.n_vocab - 1);
        if (session->state.n_past >= session->state.context)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen35-gpu decode: item %u's session is full (%u tokens)",
                                  i, session->state.context);
        for (uint32_t j = 0; j < i; j++)
            if (batch->items[j].session == item->session)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu decode: items %u and %u are one session",
                                      j, i);
    }
    const gufo_cancel *cancel = GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, cancel) ? batch->cancel : NULL;
    gufo_status status = gufo_cancel_check(cancel, err);
    if (status != GUFO_OK)
        return status;
    /* Growing a cache keeps what it holds, so an item that grew stays valid if a later one cannot. */
    for (uint32_t i = 0; i < n; i++) {
        qwen35_gpu_state *st = &session_of(batch->items[i].session)->state;
        if ((status = qwen35_gpu_state_reserve(model, st, st->n_past + 1, err)) != GUFO_OK)
            return gufo_error_prefix(err, status, "qwen35-gpu decode item %u", i);
    }
    const gufo_step_output *outputs[QWEN35_GPU_MAX_BATCH_LIMIT];
    uint32_t positions[QWEN35_GPU_MAX_BATCH_LIMIT];
    for (uint32_t i = 0; i < n; i++) {
        qwen35_gpu_session *session = session_of(batch->items[i].session);
        const qwen35_gpu_state *st = &session->state;
        rewrites_from(model, session, st->n_past);
        model->rows_host[i] = row_of(st, st->n_past, batch->items[i].token);
        model->seqs_host[i] = qwen35_gpu_state_seq(model, st);
        outputs[i] = &batch->items[i].output;
        positions[i] = st->n_past + 1;
    }
    const qwen_gpu_pick pick = qwen_gpu_plan_picks(model->sampling_host, outputs, positions, n);
    if ((status = qwen35_gpu_forward(model, n, n, n, pick, true, err)) != GUFO_OK)
        return gufo_error_prefix(err, status, "qwen35-gpu decode");
    for (uint32_t i = 0; i < n; i++) {
        qwen35_gpu_state *st = &session_of(batch->items[i].session)->state;
        st->n_past++;
        st->kv_written = st->n_past;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!qwen_gpu_wants_output(outputs[i]))
            continue;
        if ((status = qwen_gpu_deliver(&model->outputs, i, outputs[i], err)) != GUFO_OK)
            return gufo_error_prefix(err, status, "qwen35-gpu decode item %u", i);
    }
    return GUFO_OK;
}

/* ---- cache reuse -------------------------------------------------------------- */

/* Puts `snap`'s recurrent state and length into `st` (its attention rows must be there). */
static gufo_status put_back(qwen35_gpu_model *model, qwen35_gpu_state *st, const qwen35_gpu_snapshot *snap,
                            gufo_error *err)
{
    if (qwen_gpu_device_copy(st->recurrent, snap->recurrent, qwen35_gpu_recurrent_floats(model) * sizeof(float),
                             model->stream) ||
        qwen_gpu_sync(model->stream))
        return qwen35_gpu_failed(err, "restoring a snapshot");
    st->n_past = snap->n_past;
    /* Positions past the snapshot will be written again by this branch. */
    st->kv_written = snap->n_past;
    return GUFO_OK;
}

/* A live, fresh snapshot of `session` at `length`, or NULL. */
static const qwen35_gpu_snapshot *snapshot_at(const qwen35_gpu_model *model, const qwen35_gpu_session *session,
                                              uint32_t length)
{
    for (const qwen_live_link *l = model->base.snapshots.head; l; l = l->next) {
        const qwen35_gpu_snapshot *snap = (const qwen35_gpu_snapshot *)(const void *)l;
        if (snap->source == session && !snap->stale && snap->n_past == length)
            return snap;
    }
    return NULL;
}

gufo_status qwen35_gpu_truncate(gufo_model *handle, gufo_text_session *session_handle, uint32_t length,
                                gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    qwen35_gpu_session *session = session_of(session_handle);
    if (!model || !session)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu truncate: NULL session");
    qwen35_gpu_state *st = &session->state;
    if (length == st->n_past)
        return GUFO_OK;
    if (length > st->n_past)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu truncate: the session holds %u tokens, not %u",
                              st->n_past, length);
    if (length == 0) {
        rewrites_from(model, session, 0);
        return qwen35_gpu_state_reset(model, st, err);
    }
    const qwen35_gpu_snapshot *snap = snapshot_at(model, session, length);
    if (snap) {
        gufo_status status = put_back(model, st, snap, err);
        if (status == GUFO_OK)
            rewrites_from(model, session, length);
        return status;
    }
    return gufo_error_set(err, GUFO_E_UNSUPPORTED,
                          "qwen35-gpu truncate: cannot go back from %u to %u tokens: the Gated DeltaNet state does not "
                          "rewind, and no snapshot of this session was taken at %u (prefill a new session instead)",
                          st->n_past, length, length);
}

gufo_status qwen35_gpu_snapshot_create(gufo_model *handle, const gufo_text_session *session_handle,
                                       gufo_text_snapshot **out, gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    const qwen35_gpu_session *session = const_session_of(session_handle);
    if (!model || !session || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu snapshot: NULL session or output");
    *out = NULL;
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen35_gpu_snapshot), 0,
                                       "snapshot", &block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen35-gpu snapshot");
    qwen35_gpu_snapshot *snap = block;
    memset(snap, 0, sizeof *snap);
    snap->source = session;
    snap->n_past = session->state.n_past;
    const size_t bytes = qwen35_gpu_recurrent_floats(model) * sizeof(float);
    void *recurrent = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, bytes ? bytes : 1, 256, "snapshot", &recurrent, err);
    if (st != GUFO_OK) {
        gufo_memory_free(model->base.memory, snap);
        return gufo_error_prefix(err, st, "qwen35-gpu snapshot of %zu bytes", bytes);
    }
    snap->recurrent = recurrent;
    if (qwen_gpu_device_copy(snap->recurrent, session->state.recurrent, bytes, model->stream) ||
        qwen_gpu_sync(model->stream)) {
        gufo_memory_free(model->base.memory, recurrent);
        gufo_memory_free(model->base.memory, snap);
        return qwen35_gpu_failed(err, "copying a snapshot");
    }
    qwen_live_add(&model->base.snapshots, &snap->link);
    *out = (gufo_text_snapshot *)block;
    return GUFO_OK;
}

gufo_status qwen35_gpu_restore(gufo_model *handle, gufo_text_session *session_handle,
                               const gufo_text_snapshot *snapshot, gufo_error *err)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    qwen35_gpu_session *session = session_of(session_handle);
    const qwen35_gpu_snapshot *snap = const_snapshot_of(snapshot);
    if (!model || !session || !snap)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu restore: NULL session or snapshot");
    if (!snap->source && !snap->rows && snap->n_past > 0)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED,
                              "qwen35-gpu restore: the snapshot's session is gone and there was no device memory to "
                              "keep the attention rows it needs");
    if (snap->stale)
        return gufo_error_set(err, GUFO_E_STATE,
                              "qwen35-gpu restore: the session has rewritten positions below the snapshot's %u since "
                              "it was taken", snap->n_past);
    qwen35_gpu_state *st = &session->state;
    if (snap->n_past > st->context)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen35-gpu restore: the snapshot holds %u tokens, the session only %u", snap->n_past,
                              st->context);
    if (snap->source == session && snap->n_past > st->kv_written)
        return gufo_error_set(err, GUFO_E_STATE,
                              "qwen35-gpu restore: snapshot at position %u, but the caches hold only %u positions",
                              snap->n_past, st->kv_written);
    if (snap->source != session) {
        /* This session's positions are replaced from 0: its own snapshots no longer match it. */
        rewrites_from(model, session, 0);
        st->kv_written = 0;
        gufo_status status = qwen35_gpu_state_reserve(model, st, snap->n_past, err);
        if (status != GUFO_OK)
            return gufo_error_prefix(err, status, "qwen35-gpu restore");
        const int bad = snap->source ? qwen35_gpu_copy_attention(model, st->kv, st->capacity, snap->source->state.kv,
                                                                 snap->source->state.capacity, snap->n_past)
                                     : qwen35_gpu_copy_attention(model, st->kv, st->capacity, snap->rows, snap->n_past,
                                                                 snap->n_past);
        if (bad)
            return qwen35_gpu_failed(err, "copying a snapshot's attention rows");
    }
    gufo_status status = put_back(model, st, snap, err);
    if (status == GUFO_OK)
        rewrites_from(model, session, snap->n_past);
    return status;
}

void qwen35_gpu_snapshot_destroy(gufo_model *handle, gufo_text_snapshot *snapshot)
{
    qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    qwen35_gpu_snapshot *snap = (qwen35_gpu_snapshot *)(void *)snapshot;
    if (!model || !snap)
        return;
    qwen_live_remove(&model->base.snapshots, &snap->link);
    gufo_memory_free(model->base.memory, snap->rows);
    gufo_memory_free(model->base.memory, snap->recurrent);
    gufo_memory_free(model->base.memory, snap);
}

uint32_t qwen35_gpu_snapshot_length(gufo_model *handle, const gufo_text_snapshot *snapshot)
{
    (void)handle;
    return snapshot ? const_snapshot_of(snapshot)->n_past : 0;
}

void qwen35_gpu_release_all(qwen35_gpu_model *model)
{
    gufo_model *handle = qwen35_gpu_to_handle(model);
    while (model->base.sessions.head)
        qwen35_gpu_session_destroy(handle, (gufo_text_session *)(void *)model->base.sessions.head);
    while (model->base.snapshots.head)
        qwen35_gpu_snapshot_destroy(handle, (gufo_text_snapshot *)(void *)model->base.snapshots.head);
}

/* session_gpu.c — qwen-gpu sessions, steps and cache reuse (model_gpu.h).
 *
 * A session is a device KV cache (float32, the layout gpu_kernels.h's
 * qwen_gpu_row describes) and its length. As on the CPU (session.c), the
 * cache grows by doubling up to the session's context, keys and values are
 * written at positions >= the length, and the length moves only after a step
 * fully succeeded, so a failed step — an allocation over the device budget
 * included — leaves the session, and every other session, as it was.
 * Tokens are chosen on the device (step_gpu.h says how).
 */
#include <stddef.h>
#include <string.h>

#include "model_gpu.h"

typedef struct qwen_gpu_kv {
    float *data;        /* device */
    uint32_t capacity, length, context;
} qwen_gpu_kv;

struct qwen_gpu_session {
    qwen_live_link link; /* first: in the model's list of live sessions */
    qwen_gpu_kv kv;
};
_Static_assert(offsetof(struct qwen_gpu_session, link) == 0, "a live list's head is its qwen_gpu_session");

struct qwen_gpu_snapshot {
    qwen_live_link link; /* first: in the model's list of live snapshots */
    qwen_gpu_kv kv;
};
_Static_assert(offsetof(struct qwen_gpu_snapshot, link) == 0, "a live list's head is its qwen_gpu_snapshot");

static qwen_gpu_session *session_of(gufo_text_session *handle)
{
    return (qwen_gpu_session *)(void *)handle;
}

static const qwen_gpu_session *const_session_of(const gufo_text_session *handle)
{
    return (const qwen_gpu_session *)(const void *)handle;
}

static const qwen_gpu_snapshot *snapshot_of(const gufo_text_snapshot *handle)
{
    return (const qwen_gpu_snapshot *)(const void *)handle;
}

static size_t kv_width(const qwen_gpu_model *model)
{
    return (size_t)model->hp.n_head_kv * model->hp.head_dim_k;
}

uint64_t qwen_gpu_kv_bytes_per_token(const qwen_hparams *hp)
{
    return (uint64_t)hp->n_layer * 2u * hp->n_head_kv * hp->head_dim_k * sizeof(float);
}

/* Copies positions [0, length) of every layer from src to dst (both device). */
static int kv_copy_prefix(qwen_gpu_model *model, float *dst, uint32_t dst_capacity, const float *src,
                          uint32_t src_capacity, uint32_t length)
{
    const size_t w = kv_width(model), bytes = (size_t)length * w * sizeof(float);
    for (uint32_t il = 0; il < model->hp.n_layer; il++) {
        float *d = dst + (size_t)il * 2u * dst_capacity * w;
        const float *s = src + (size_t)il * 2u * src_capacity * w;
        if (qwen_gpu_device_copy(d, s, bytes, model->stream) ||
            qwen_gpu_device_copy(d + (size_t)dst_capacity * w, s + (size_t)src_capacity * w, bytes, model->stream))
            return 1;
    }
    return qwen_gpu_sync(model->stream);
}

/* Makes room for `positions`, keeping the first kv->length; unchanged on failure. */
static gufo_status kv_reserve(qwen_gpu_model *model, qwen_gpu_kv *kv, uint32_t positions, const char *tag,
                              gufo_error *err)
{
    if (positions <= kv->capacity)
        return GUFO_OK;
    uint32_t capacity = kv->capacity ? kv->capacity * 2u : 64u;
    if (capacity < positions)
        capacity = positions;
    if (capacity > kv->context)
        capacity = kv->context;
    const size_t bytes = (size_t)capacity * qwen_gpu_kv_bytes_per_token(&model->hp);
    void *data = NULL;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, bytes, 256, tag, &data, err);
    if (st != GUFO_OK && capacity > positions) {
        /* Doubling did not fit: exactly what is needed might. */
        capacity = positions;
        st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE,
                               (size_t)capacity * qwen_gpu_kv_bytes_per_token(&model->hp), 256, tag, &data, err);
    }
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu cache of %u tokens", capacity);
    if (kv->length && kv_copy_prefix(model, data, capacity, kv->data, kv->capacity, kv->length)) {
        gufo_memory_free(model->base.memory, data);
        return qwen_gpu_failed(err, "growing a cache");
    }
    gufo_memory_free(model->base.memory, kv->data);
    kv->data = data;
    kv->capacity = capacity;
    return GUFO_OK;
}

static void kv_release(qwen_gpu_model *model, qwen_gpu_kv *kv)
{
    gufo_memory_free(model->base.memory, kv->data);
    kv->data = NULL;
    kv->capacity = kv->length = 0;
}

gufo_status qwen_gpu_session_create(gufo_model *handle, const gufo_session_params *params, gufo_text_session **out,
                                    gufo_error *err)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu session_create: NULL model or output");
    uint32_t context = 0;
    gufo_status st = qwen_session_admit(&model->base, params, &context, err);
    if (st != GUFO_OK)
        return st;
    void *memory = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen_gpu_session), 0, "kv-cache",
                                       &memory, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu session of %u tokens", context);
    qwen_gpu_session *session = memory;
    memset(session, 0, sizeof *session);
    session->kv.context = context;
    qwen_live_add(&model->base.sessions, &session->link);
    *out = (gufo_text_session *)memory;
    return GUFO_OK;
}

void qwen_gpu_session_destroy(gufo_model *handle, gufo_text_session *session_handle)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    qwen_gpu_session *session = session_of(session_handle);
    if (!model || !session)
        return;
    qwen_live_remove(&model->base.sessions, &session->link);
    kv_release(model, &session->kv);
    gufo_memory_free(model->base.memory, session);
}

uint32_t qwen_gpu_session_length(gufo_model *handle, const gufo_text_session *session)
{
    (void)handle;
    return session ? const_session_of(session)->kv.length : 0;
}

/* ---- outputs (step_gpu.h) ------------------------------------------------ */

static gufo_status deliver(qwen_gpu_model *model, uint32_t i, const gufo_step_output *output, gufo_error *err)
{
    gufo_status st = qwen_gpu_deliver(&model->outputs, i, output, err);
    return st == GUFO_OK ? st : gufo_error_prefix(err, st, "qwen-gpu");
}

static bool valid_token(const qwen_gpu_model *model, gufo_token token)
{
    return token >= 0 && (uint32_t)token < model->hp.n_vocab;
}

/* ---- steps --------------------------------------------------------------- */

gufo_status qwen_gpu_prefill(gufo_model *handle, gufo_text_session *session_handle, const gufo_token *tokens, size_t n,
                             const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    qwen_gpu_session *session = session_of(session_handle);
    if (!model || !session || !tokens || n == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu prefill: no session or no tokens");
    qwen_gpu_kv *kv = &session->kv;
    if (n > kv->context - kv->length)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen-gpu prefill: the session holds %u of %u tokens; %zu more do not fit", kv->length,
                              kv->context, n);
    for (size_t i = 0; i < n; i++)
        if (!valid_token(model, tokens[i]))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen-gpu prefill: token %zu is %d, outside the vocabulary 0..%u", i, (int)tokens[i],
                                  model->hp.n_vocab - 1);
    gufo_status st = kv_reserve(model, kv, kv->length + (uint32_t)n, "kv-cache", err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu prefill");

    const size_t slice_max = model->scratch.max_rows;
    const bool want = qwen_gpu_wants_output(output);
    for (size_t done = 0; done < n;) {
        if ((st = gufo_cancel_check(cancel, err)) != GUFO_OK)
            return st;
        const size_t slice = n - done < slice_max ? n - done : slice_max;
        for (size_t i = 0; i < slice; i++)
            model->rows_host[i] = (qwen_gpu_row){.kv = kv->data,
                                                 .pos = kv->length + (uint32_t)(done + i),
                                                 .capacity = kv->capacity,
                                                 .token = tokens[done + i]};
        const bool last = done + slice == n;
        const uint32_t n_out = last && want ? 1 : 0;
        qwen_gpu_pick pick = QWEN_GPU_PICK_NONE;
        if (n_out) {
            const uint32_t position = kv->length + (uint32_t)n;
            pick = qwen_gpu_plan_picks(model->sampling_host, &output, &position, 1);
        }
        if ((st = qwen_gpu_forward(model, (uint32_t)slice, n_out, pick, false, err)) != GUFO_OK)
            return gufo_error_prefix(err, st, "qwen-gpu prefill");
        done += slice;
    }
    if (want && (st = deliver(model, 0, output, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu prefill");
    kv->length += (uint32_t)n;
    return GUFO_OK;
}

gufo_status qwen_gpu_decode(gufo_model *handle, const gufo_decode_batch *batch, gufo_error *err)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    if (!model || !batch || !GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, n_items) || !batch->items ||
        batch->n_items == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu decode: empty batch");
    if (batch->n_items > model->base.max_batch)
        return gufo_error_set(err, GUFO_E_LIMIT, "qwen-gpu decode: %zu sessions in one step; at most %u",
                              batch->n_items, model->base.max_batch);
    const gufo_cancel *cancel = GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, cancel) ? batch->cancel : NULL;
    const uint32_t n = (uint32_t)batch->n_items;
    for (uint32_t i = 0; i < n; i++) {
        const gufo_decode_item *item = &batch->items[i];
        const qwen_gpu_session *session = session_of(item->session);
        if (!session)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu decode: item %u has no session", i);
        if (!valid_token(model, item->token))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen-gpu decode: item %u token %d is outside the vocabulary 0..%u", i,
                                  (int)item->token, model->hp.n_vocab - 1);
        if (session->kv.length >= session->kv.context)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                                  "qwen-gpu decode: item %u: the session is full (%u tokens)", i, session->kv.context);
        for (uint32_t j = 0; j < i; j++)
            if (batch->items[j].session == item->session)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                      "qwen-gpu decode: items %u and %u are the same session", j, i);
    }
    gufo_status st = gufo_cancel_check(cancel, err);
    if (st != GUFO_OK)
        return st;
    /* Growing a cache changes only its capacity, so a later failure still
     * leaves every session's history as it was. */
    for (uint32_t i = 0; i < n; i++) {
        qwen_gpu_kv *kv = &session_of(batch->items[i].session)->kv;
        if ((st = kv_reserve(model, kv, kv->length + 1, "kv-cache", err)) != GUFO_OK)
            return gufo_error_prefix(err, st, "qwen-gpu decode item %u", i);
    }
    const gufo_step_output *outputs[QWEN_GPU_MAX_BATCH_LIMIT];
    uint32_t positions[QWEN_GPU_MAX_BATCH_LIMIT];
    for (uint32_t i = 0; i < n; i++) {
        const qwen_gpu_kv *kv = &session_of(batch->items[i].session)->kv;
        model->rows_host[i] =
            (qwen_gpu_row){.kv = kv->data, .pos = kv->length, .capacity = kv->capacity, .token = batch->items[i].token};
        outputs[i] = &batch->items[i].output;
        positions[i] = kv->length + 1;
    }
    const qwen_gpu_pick pick = qwen_gpu_plan_picks(model->sampling_host, outputs, positions, n);
    if ((st = qwen_gpu_forward(model, n, n, pick, true, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu decode");
    for (uint32_t i = 0; i < n; i++)
        if (qwen_gpu_wants_output(outputs[i]) && (st = deliver(model, i, outputs[i], err)) != GUFO_OK)
            return gufo_error_prefix(err, st, "qwen-gpu decode item %u", i);
    for (uint32_t i = 0; i < n; i++)
        session_of(batch->items[i].session)->kv.length++;
    return GUFO_OK;
}

/* ---- cache reuse ------------------------------------------------------------ */

gufo_status qwen_gpu_truncate(gufo_model *handle, gufo_text_session *session_handle, uint32_t length, gufo_error *err)
{
    (void)handle;
    qwen_gpu_session *session = session_of(session_handle);
    if (!session)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu truncate: NULL session");
    if (length > session->kv.length)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen-gpu truncate: cannot grow a session of %u tokens to %u", session->kv.length,
                              length);
    session->kv.length = length; /* position i depends only on tokens 0..i */
    return GUFO_OK;
}

gufo_status qwen_gpu_snapshot_take(gufo_model *handle, const gufo_text_session *session_handle,
                                   gufo_text_snapshot **out, gufo_error *err)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    const qwen_gpu_session *session = const_session_of(session_handle);
    if (!model || !session || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu snapshot: NULL model, session or output");
    void *memory = NULL;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, sizeof(qwen_gpu_snapshot), 0, "snapshot",
                                       &memory, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu snapshot of %u tokens", session->kv.length);
    qwen_gpu_snapshot *snapshot = memory;
    memset(snapshot, 0, sizeof *snapshot);
    snapshot->kv.context = session->kv.length;
    if (session->kv.length) {
        if ((st = kv_reserve(model, &snapshot->kv, session->kv.length, "snapshot", err)) != GUFO_OK) {
            gufo_memory_free(model->base.memory, snapshot);
            return gufo_error_prefix(err, st, "qwen-gpu snapshot");
        }
        if (kv_copy_prefix(model, snapshot->kv.data, snapshot->kv.capacity, session->kv.data, session->kv.capacity,
                           session->kv.length)) {
            kv_release(model, &snapshot->kv);
            gufo_memory_free(model->base.memory, snapshot);
            return qwen_gpu_failed(err, "copying a snapshot");
        }
    }
    snapshot->kv.length = session->kv.length;
    qwen_live_add(&model->base.snapshots, &snapshot->link);
    *out = (gufo_text_snapshot *)memory;
    return GUFO_OK;
}

gufo_status qwen_gpu_restore(gufo_model *handle, gufo_text_session *session_handle,
                             const gufo_text_snapshot *snapshot_handle, gufo_error *err)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    qwen_gpu_session *session = session_of(session_handle);
    const qwen_gpu_snapshot *snapshot = snapshot_of(snapshot_handle);
    if (!model || !session || !snapshot)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen-gpu restore: NULL model, session or snapshot");
    const uint32_t length = snapshot->kv.length;
    if (length > session->kv.context)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen-gpu restore: the snapshot holds %u tokens, the session only %u", length,
                              session->kv.context);
    /* Grow without keeping the old prefix: it is about to be replaced. */
    const uint32_t kept = session->kv.length;
    session->kv.length = 0;
    gufo_status st = kv_reserve(model, &session->kv, length, "kv-cache", err);
    session->kv.length = kept;
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu restore");
    if (length && kv_copy_prefix(model, session->kv.data, session->kv.capacity, snapshot->kv.data,
                                 snapshot->kv.capacity, length))
        return qwen_gpu_failed(err, "restoring a snapshot");
    session->kv.length = length;
    return GUFO_OK;
}

void qwen_gpu_snapshot_destroy(gufo_model *handle, gufo_text_snapshot *snapshot_handle)
{
    qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    qwen_gpu_snapshot *snapshot = (qwen_gpu_snapshot *)(void *)snapshot_handle;
    if (!model || !snapshot)
        return;
    qwen_live_remove(&model->base.snapshots, &snapshot->link);
    kv_release(model, &snapshot->kv);
    gufo_memory_free(model->base.memory, snapshot);
}

uint32_t qwen_gpu_snapshot_length(gufo_model *handle, const gufo_text_snapshot *snapshot)
{
    (void)handle;
    return snapshot ? snapshot_of(snapshot)->kv.length : 0;
}

void qwen_gpu_release_all(qwen_gpu_model *model)
{
    gufo_model *handle = qwen_gpu_to_handle(model);
    while (model->base.sessions.head)
        qwen_gpu_session_destroy(handle, (gufo_text_session *)(void *)model->base.sessions.head);
    while (model->base.snapshots.head)
        qwen_gpu_snapshot_destroy(handle, (gufo_text_snapshot *)(void *)model->base.snapshots.head);
}

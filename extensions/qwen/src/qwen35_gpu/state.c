/* qwen35_gpu/state.c — a sequence's device caches and recurrent state (state.h). */
#include "state.h"

#include <string.h>

static size_t conv_floats(const qwen35_gpu_model *model)
{
    return (size_t)model->n_gdn * (model->hp.conv_kernel - 1) * qwen35_gdn_conv_dim(&model->hp);
}

size_t qwen35_gpu_recurrent_floats(const qwen35_gpu_model *model)
{
    const qwen35_hparams *hp = &model->hp;
    return conv_floats(model) + (size_t)model->n_gdn * hp->gdn_v_heads * hp->gdn_head_dim * hp->gdn_head_dim;
}

static size_t kv_width(const qwen35_gpu_model *model)
{
    return (size_t)model->hp.n_head_kv * model->hp.head_dim;
}

uint64_t qwen35_gpu_kv_bytes(const qwen35_gpu_model *model, uint32_t capacity)
{
    return (uint64_t)model->n_att * 2u * capacity * kv_width(model) * sizeof(float);
}

qwen35_gpu_seq qwen35_gpu_state_seq(const qwen35_gpu_model *model, const qwen35_gpu_state *st)
{
    return (qwen35_gpu_seq){.conv = st->recurrent, .delta = st->recurrent + conv_floats(model)};
}

int qwen35_gpu_copy_attention(qwen35_gpu_model *model, float *dst, uint32_t dst_capacity, const float *src,
                              uint32_t src_capacity, uint32_t n)
{
    const size_t w = kv_width(model), bytes = (size_t)n * w * sizeof(float);
    if (n == 0)
        return 0;
    for (uint32_t slot = 0; slot < model->n_att; slot++)
        for (uint32_t part = 0; part < 2; part++) { /* keys, then values */
            float *d = dst + ((size_t)slot * 2 + part) * dst_capacity * w;
            const float *s = src + ((size_t)slot * 2 + part) * src_capacity * w;
            if (qwen_gpu_device_copy(d, s, bytes, model->stream))
                return 1;
        }
    return qwen_gpu_sync(model->stream);
}

/* The caches at `capacity` positions holding the first `keep` of the old ones. */
static gufo_status kv_alloc(qwen35_gpu_model *model, qwen35_gpu_state *st, uint32_t capacity, uint32_t keep,
                            gufo_error *err)
{
    const uint64_t bytes = qwen35_gpu_kv_bytes(model, capacity);
    void *data = NULL;
    gufo_status status = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, bytes ? (size_t)bytes : 1, 256,
                                           "kv-cache", &data, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "qwen35-gpu caches of %u positions", capacity);
    if (keep && st->kv && qwen35_gpu_copy_attention(model, data, capacity, st->kv, st->capacity, keep)) {
        gufo_memory_free(model->base.memory, data);
        return qwen35_gpu_failed(err, "growing a session's caches");
    }
    gufo_memory_free(model->base.memory, st->kv);
    st->kv = data;
    st->capacity = capacity;
    return GUFO_OK;
}

gufo_status qwen35_gpu_state_init(qwen35_gpu_model *model, uint32_t context, qwen35_gpu_state *st, gufo_error *err)
{
    memset(st, 0, sizeof *st);
    st->context = context;
    const size_t floats = qwen35_gpu_recurrent_floats(model);
    void *recurrent = NULL;
    gufo_status status = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, floats ? floats * sizeof(float) : 1,
                                           256, "kv-cache", &recurrent, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "qwen35-gpu recurrent state");
    st->recurrent = recurrent;
    const uint32_t first = context < QWEN35_GPU_FIRST_CAPACITY ? context : QWEN35_GPU_FIRST_CAPACITY;
    if ((status = kv_alloc(model, st, first, 0, err)) == GUFO_OK)
        status = qwen35_gpu_state_reset(model, st, err);
    if (status != GUFO_OK)
        qwen35_gpu_state_free(model, st);
    return status;
}

gufo_status qwen35_gpu_state_reserve(qwen35_gpu_model *model, qwen35_gpu_state *st, uint32_t positions,
                                     gufo_error *err)
{
    if (positions > st->context)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen35-gpu: %u tokens do not fit the session's context of %u",
                              positions, st->context);
    if (positions <= st->capacity)
        return GUFO_OK;
    uint64_t capacity = 2 * (uint64_t)st->capacity;
    if (capacity < positions)
        capacity = positions;
    if (capacity > st->context)
        capacity = st->context;
    const uint32_t keep = st->kv_written > st->capacity ? st->capacity : st->kv_written;
    gufo_status status = kv_alloc(model, st, (uint32_t)capacity, keep, err);
    if (status != GUFO_OK && capacity > positions) /* doubling did not fit: exactly what is needed might */
        status = kv_alloc(model, st, positions, keep, err);
    return status;
}

gufo_status qwen35_gpu_state_reset(qwen35_gpu_model *model, qwen35_gpu_state *st, gufo_error *err)
{
    st->n_past = st->kv_written = 0;
    if (qwen35_gpu_zero(model->stream, st->recurrent, qwen35_gpu_recurrent_floats(model)) || qwen_gpu_sync(model->stream))
        return qwen35_gpu_failed(err, "clearing a recurrent state");
    return GUFO_OK;
}

void qwen35_gpu_state_free(qwen35_gpu_model *model, qwen35_gpu_state *st)
{
    gufo_memory_free(model->base.memory, st->kv);
    gufo_memory_free(model->base.memory, st->recurrent);
    memset(st, 0, sizeof *st);
}

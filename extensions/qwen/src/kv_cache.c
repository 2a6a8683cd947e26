/* kv_cache.c — growth and prefix copies of a KV cache (kv_cache.h). */
#include "kv_cache.h"

#include <string.h>

/* The first allocation: enough for a short prompt without regrowing. */
#define QWEN_KV_MIN_CAPACITY 256u

void qwen_kv_init(qwen_kv *kv, const qwen_hparams *hp, uint32_t context)
{
    memset(kv, 0, sizeof *kv);
    kv->context = context;
    kv->n_layer = hp->n_layer;
    kv->n_head_kv = hp->n_head_kv;
    kv->head_dim_k = hp->head_dim_k;
    kv->head_dim_v = hp->head_dim_v;
}

uint64_t qwen_kv_bytes_per_token(const qwen_hparams *hp)
{
    return (uint64_t)hp->n_layer * hp->n_head_kv * ((uint64_t)hp->head_dim_k + hp->head_dim_v) * sizeof(float);
}

void qwen_kv_copy_prefix(qwen_kv *dst, const qwen_kv *src, uint32_t length)
{
    for (uint32_t l = 0; l < src->n_layer; l++)
        for (uint32_t h = 0; h < src->n_head_kv; h++) {
            memcpy(qwen_kv_keys(dst, l, h), qwen_kv_keys(src, l, h), (size_t)length * src->head_dim_k * sizeof(float));
            memcpy(qwen_kv_values(dst, l, h), qwen_kv_values(src, l, h),
                   (size_t)length * src->head_dim_v * sizeof(float));
        }
    dst->length = length;
}

gufo_status qwen_kv_reserve(gufo_memory *memory, qwen_kv *kv, uint32_t positions, const char *tag, gufo_error *err)
{
    if (positions <= kv->capacity)
        return GUFO_OK;
    if (positions > kv->context)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "%u positions asked of a context of %u", positions,
                              kv->context);
    uint64_t capacity = kv->capacity ? kv->capacity : QWEN_KV_MIN_CAPACITY;
    while (capacity < positions)
        capacity *= 2;
    if (capacity > kv->context)
        capacity = kv->context;
    const uint64_t bytes =
        capacity * kv->n_layer * kv->n_head_kv * ((uint64_t)kv->head_dim_k + kv->head_dim_v) * sizeof(float);
    if (bytes > SIZE_MAX)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "a KV cache of %llu positions does not fit in memory",
                              (unsigned long long)capacity);
    void *data = NULL;
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)bytes, 0, tag, &data, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "KV cache of %llu positions", (unsigned long long)capacity);
    qwen_kv grown = *kv;
    grown.data = data;
    grown.capacity = (uint32_t)capacity;
    if (kv->data)
        qwen_kv_copy_prefix(&grown, kv, kv->length);
    gufo_memory_free(memory, kv->data);
    *kv = grown;
    return GUFO_OK;
}

void qwen_kv_release(gufo_memory *memory, qwen_kv *kv)
{
    gufo_memory_free(memory, kv->data);
    kv->data = NULL;
    kv->capacity = 0;
    kv->length = 0;
}

/* kv_cache.h — the attention keys and values of one token history.
 *
 * F32, so a cached position is bit-identical to recomputing it (what makes
 * truncate, snapshot/restore and batched decode exactly equal to a fresh run);
 * F16 would halve the memory at that price, which is not worth it on the CPU
 * sizes this provider serves. Layout, per layer: K as [n_head_kv][capacity]
 * [head_dim_k], then V as [n_head_kv][capacity][head_dim_v], so one KV head's
 * history is one contiguous run the attention loop streams over (positions
 * a whole row of heads apart, 4 KiB at the 0.6B shape, all fell in the same
 * few L1 sets: attention ran 2-3x slower).
 *
 * Storage grows on demand (doubling, up to the session's context) instead of
 * reserving the whole context up front: a 40k-token context of a 0.6B model is
 * gigabytes a short chat never touches. Memory comes from the pool under the
 * tag given at reserve time ("kv-cache" for sessions, "snapshot" for
 * snapshots). A snapshot is a qwen_kv whose capacity equals its length.
 */
#ifndef QWEN_KV_CACHE_H
#define QWEN_KV_CACHE_H

#include <gufo/ext/api.h>

#include "hparams.h"

typedef struct qwen_kv {
    float *data;
    uint32_t capacity;  /* positions allocated per layer */
    uint32_t length;    /* positions holding the history */
    uint32_t context;   /* most positions this history may reach */
    uint32_t n_layer;
    uint32_t n_head_kv;
    uint32_t head_dim_k;
    uint32_t head_dim_v;
} qwen_kv;

/** An empty cache shaped for `hp`, able to grow to `context` positions. */
void qwen_kv_init(qwen_kv *kv, const qwen_hparams *hp, uint32_t context);

/** Bytes one position costs over all layers. */
uint64_t qwen_kv_bytes_per_token(const qwen_hparams *hp);

/**
 * Makes room for `positions` (<= context), keeping the first `length`
 * positions. On failure the cache is unchanged (GUFO_E_OVER_BUDGET names the tag).
 */
gufo_status qwen_kv_reserve(gufo_memory *memory, qwen_kv *kv, uint32_t positions, const char *tag, gufo_error *err);

/** Keys / values of KV head `head` of `layer`: capacity rows of head_dim_k /
 * head_dim_v floats, position p at row p. */
static inline float *qwen_kv_keys(const qwen_kv *kv, uint32_t layer, uint32_t head)
{
    const size_t per_layer = (size_t)kv->capacity * kv->n_head_kv * (kv->head_dim_k + kv->head_dim_v);
    return kv->data + layer * per_layer + (size_t)head * kv->capacity * kv->head_dim_k;
}
static inline float *qwen_kv_values(const qwen_kv *kv, uint32_t layer, uint32_t head)
{
    return qwen_kv_keys(kv, layer, kv->n_head_kv) + (size_t)head * kv->capacity * kv->head_dim_v;
}

/** Copies the first `length` positions of every layer from `src` into `dst`
 * (which has room) and sets dst->length. */
void qwen_kv_copy_prefix(qwen_kv *dst, const qwen_kv *src, uint32_t length);

/** Frees the storage; the cache is empty again. */
void qwen_kv_release(gufo_memory *memory, qwen_kv *kv);

#endif /* QWEN_KV_CACHE_H */

/* qwen35/attention.h — the gated full attention of a qwen35 block, after its projections.
 *
 * attn_q gives each query head 2 * head_dim values: the query, then an output
 * gate of the same size (transformers: q_proj(x).view(..., heads, 2 * hd)
 * chunked in two). Per row at position p:
 *
 *   q_h = RoPE(RMSNorm(query_h) * q_norm),  k_h = RoPE(RMSNorm(k_h) * k_norm)
 *   out_h = sigmoid(gate_h) * sum_j softmax_j(q_h . k_j / sqrt(hd)) v_j,  j <= p
 *
 * with grouped-query heads (query head h reads KV head h / (H / Hkv)) and
 * partial NEOX RoPE: only the first n_rot dims of a head turn, dim i with
 * dim i + n_rot/2 by the angle p * base^(-2i / n_rot); the rest pass
 * unchanged. (Qwen3.5's interleaved M-RoPE gives every section the same
 * position for text, so it is exactly this.)
 *
 * Keys and values go to a per-block cache, head-major: head h's position p at
 * cache + (h * capacity + p) * head_dim.
 */
#ifndef QWEN35_ATTENTION_H
#define QWEN35_ATTENTION_H

#include <gufo/ext/experimental/thread_pool.h>

#include <stddef.h>
#include <stdint.h>

typedef struct qwen35_attention_shape {
    uint32_t n_head, n_head_kv, head_dim, n_rot;
    float rms_eps;
    const float *inv_freq; /* n_rot / 2 angles per position step */
} qwen35_attention_shape;

/** Floats of per-thread scratch qwen35_gated_attention() needs for `max_keys` positions. */
size_t qwen35_attention_scratch_floats(const qwen35_attention_shape *s, uint32_t max_keys);

/** Fills inv_freq[i] = 1 / base^(2i / n_rot), i < n_rot / 2, in float32 as transformers does. */
void qwen35_rope_inv_freq(float base, uint32_t n_rot, float *inv_freq);

/**
 * `n` rows of one sequence at positions pos0, pos0 + 1, ...: q_full [n][2 H hd]
 * (queries are normalised and rotated in place), k and v [n][Hkv hd] straight
 * from the projections. Writes the rows' keys and values into the caches at
 * their positions, then out [n][H hd] = gated attention over positions
 * 0..pos of each row. `q` is [n][H hd] scratch; `scratch` holds
 * threads-of-pool x qwen35_attention_scratch_floats(s, pos0 + n) floats,
 * 64-byte aligned.
 */
void qwen35_gated_attention(const qwen35_attention_shape *s, const float *q_norm, const float *k_norm, uint32_t n,
                            uint32_t pos0, float *q_full, const float *k, const float *v, float *k_cache,
                            float *v_cache, uint32_t capacity, float *q, float *out, float *scratch,
                            size_t scratch_floats_per_thread, gufo_x_pool *pool);

#endif /* QWEN35_ATTENTION_H */

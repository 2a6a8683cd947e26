/* forward_cpu.h — the Qwen3 forward pass on the CPU, over a set of rows.
 *
 * A row is one token at one position of one history (its KV cache). A
 * prefill chunk is N rows of one session at consecutive positions; a decode
 * step is one row per session. Either way every layer runs each matrix
 * product once over all rows, so the weights stream from memory once per
 * step. Per layer (transformers' Qwen3DecoderLayer; llama.cpp's qwen3 graph):
 *
 *   h = RMSNorm(x) * attn_norm
 *   q, k, v = h Wq^T, h Wk^T, h Wv^T            (no biases in Qwen3)
 *   q, k = RMSNorm per head (q_norm, k_norm)    (before RoPE)
 *   q, k = RoPE, NEOX halves: (i, i + d/2) rotated by pos * base^(-2i/d)
 *   k, v -> the row's KV cache at its position
 *   a = softmax(q K^T / sqrt(d), causal) V      (GQA: head h reads KV head h / (n_head / n_head_kv))
 *   x += a Wo^T
 *   h = RMSNorm(x) * ffn_norm
 *   x += (silu(h Wgate^T) * h Wup^T) Wdown^T
 *
 * then logits = RMSNorm(x) * output_norm  Woutput^T  for the rows that want them.
 *
 * The matrix products are the runtime's CPU kernels (experimental/cpu_kernels.h)
 * over the model's thread pool; `numerics` picks int8 activations per block
 * (GUFO_X_CPU_Q8, the default: llama.cpp's CPU numerics, integer dot
 * products) or float32 activations (GUFO_X_CPU_EXACT: the reference's
 * function). Either way each output is summed in one fixed order, so results
 * do not depend on the thread count, on which rows share a call (a session
 * decoded alone or in a batch), or on prefill versus decode.
 */
#ifndef QWEN_FORWARD_CPU_H
#define QWEN_FORWARD_CPU_H

#include <gufo/ext/api.h>

#include <gufo/ext/experimental/cpu_kernels.h>

#include "hparams.h"
#include "kv_cache.h"
#include "threadpool.h"
#include "weights.h"

typedef struct qwen_row {
    qwen_kv *kv;        /* capacity > pos; positions below pos hold the history */
    uint32_t pos;
    gufo_token token;   /* 0 <= token < n_vocab */
} qwen_row;

/** Everything a forward pass needs besides the rows; scratch sized at load. */
typedef struct qwen_engine {
    const qwen_hparams *hp;
    const qwen_weights *w;
    qwen_pool *pool;
    uint32_t max_rows;       /* rows one call may carry */
    uint32_t max_out;        /* rows one call may want logits for */
    uint32_t max_positions;  /* longest history attention may read */
    float *inv_freq;         /* [head_dim_k / 2] RoPE frequencies */
    float *x, *h, *q, *k, *v, *att, *gate, *up;   /* [max_rows][width] activations */
    float *normed;           /* [max_out][n_embd] rows that produce logits */
    float *logits;           /* [max_out][n_vocab] results of the last call */
    float *scores;           /* [threads][scores_per_thread] attention weights */
    size_t scores_per_thread; /* gufo_x_cpu_attention_scratch_floats(group, max_positions) */
    uint32_t *n_keys;        /* [max_rows] positions each row attends (pos + 1) */
    void *matmul_scratch;    /* gufo_x_cpu_matmul's int8 activations and per-thread tiles */
    size_t matmul_scratch_bytes;
    gufo_x_cpu_numerics numerics; /* GUFO_X_CPU_Q8 unless the provider asks otherwise */
    void *block;             /* the one "scratch" allocation behind all of the above */
} qwen_engine;

/** Sizes and allocates the scratch (tag "scratch"). On failure nothing is held. */
gufo_status qwen_engine_init(qwen_engine *e, const qwen_hparams *hp, const qwen_weights *w, qwen_pool *pool,
                             gufo_memory *memory, uint32_t max_rows, uint32_t max_out, uint32_t max_positions,
                             gufo_error *err);

void qwen_engine_release(gufo_memory *memory, qwen_engine *e);

/**
 * Sets e->numerics from the option --qwen-cpu-matmul (q8, the default, or
 * fp32) in `options` (NULL: the default). GUFO_E_INVALID_ARGUMENT naming the
 * option for any other value.
 */
gufo_status qwen_engine_choose_numerics(qwen_engine *e, const gufo_options *options, gufo_error *err);

/** "q8" or "fp32": what e->numerics computes, for the cache identity and logs. */
const char *qwen_engine_numerics_name(const qwen_engine *e);

/**
 * Runs `n_rows` rows (<= max_rows), writing their keys and values into their
 * caches at their positions (caches' lengths are not touched: the caller
 * commits), and leaves logits for rows out_rows[0..n_out) in e->logits.
 * Polls `cancel` between layers: GUFO_E_CANCELLED then, with only positions
 * at or past each row's cache length written.
 */
gufo_status qwen_forward(qwen_engine *e, const qwen_row *rows, size_t n_rows, const uint32_t *out_rows, size_t n_out,
                         const gufo_cancel *cancel, gufo_error *err);

#endif /* QWEN_FORWARD_CPU_H */

/* weights.h — the Qwen3 tensors of a mapped GGUF, ready for the forward pass.
 *
 * Matrices stay where they are: in the read-only mapping, in their GGUF block
 * format (F32/F16/BF16/Q4_0/Q8_0/Q4_K/Q5_K/Q6_K); the runtime's CPU kernels
 * (gufo/ext/experimental/cpu_kernels.h) multiply them there, except those
 * qwen_weights_pack() gives a packed copy (Q8_0 where the CPU has AVX-512). The mapping is
 * counted against the host's budget under "weights" with gufo_memory_charge()
 * (it is memory the model keeps resident even though the pool did not
 * allocate it). The small vectors — RMSNorm weights — are converted to F32
 * copies in one pool allocation.
 */
#ifndef QWEN_WEIGHTS_H
#define QWEN_WEIGHTS_H

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/cpu_kernels.h>

#include "hparams.h"

/** A weight matrix of `rows` rows of `cols` elements (y = W x has `rows` outputs),
 * data inside the mapping: what the runtime's CPU kernels multiply in place. */
typedef gufo_x_cpu_matrix qwen_matrix;

typedef struct qwen_layer {
    const float *attn_norm;   /* [n_embd] */
    const float *q_norm;      /* [head_dim_k], shared by every query head */
    const float *k_norm;      /* [head_dim_k] */
    const float *ffn_norm;    /* [n_embd] */
    qwen_matrix wq, wk, wv, wo;
    qwen_matrix gate, up, down;
} qwen_layer;

typedef struct qwen_weights {
    qwen_matrix token_embd;   /* rows = n_vocab, cols = n_embd */
    qwen_matrix output;       /* token_embd when the file ties them */
    const float *output_norm; /* [n_embd] */
    qwen_layer *layers;       /* n_layer, from the pool */
    float *vectors;           /* the one pool allocation every norm points into */
    uint64_t charged;         /* bytes of mapping charged under "weights" */
    void *packed;             /* qwen_weights_pack's copies (NULL: every matrix in the mapping) */
    uint64_t packed_bytes;
} qwen_weights;

/**
 * Resolves every tensor of `gguf` (opened with GUFO_GGUF_OPEN_MAP and already
 * accepted by qwen_hparams_inspect) into `w`. On failure nothing stays
 * allocated or charged and `err` names the tensor or the budget.
 */
gufo_status qwen_weights_load(const gufo_gguf *gguf, const qwen_hparams *hp, gufo_memory *memory, qwen_weights *w,
                              gufo_error *err);

/**
 * Replaces every layer matrix and the output matrix that the runtime's CPU
 * kernels multiply faster packed (gufo_x_cpu_packed_bytes(): Q8_0 on AVX-512
 * VNNI and above) by a packed copy in one pool allocation under "weights"
 * (about their size in the file), written over `pool`, and gives the
 * mapping's pages of those matrices back (madvise; uncharged before the
 * copies are allocated, so the peak stays the steady state). Only for the
 * Q8 numerics (packed matrices take no other). token_embd is packed too (the
 * embedding lookup reads its rows with gufo_x_cpu_matrix_row()); a tied
 * output is then the same packed matrix. Nothing packed (and nothing
 * allocated) when no matrix qualifies.
 * On failure the matrices stay as they were.
 */
gufo_status qwen_weights_pack(qwen_weights *w, const qwen_hparams *hp, gufo_memory *memory, gufo_x_pool *pool,
                              gufo_error *err);

/** Returns what qwen_weights_load took; `w` may be zeroed or loaded. */
void qwen_weights_free(gufo_memory *memory, qwen_weights *w);

#endif /* QWEN_WEIGHTS_H */

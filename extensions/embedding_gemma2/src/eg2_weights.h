/* eg2_weights.h — the tensor inventory of a gemma-embedding2 GGUF and the
 * loaded weights.
 *
 * Names and shapes are llama.cpp's for this arch (token_embd,
 * per_layer_model_proj, per_layer_proj_norm, output_norm, output, and per
 * block attn_norm, attn_q/k/v, attn_output, attn_q_norm, attn_k_norm,
 * post_attention_norm, ffn_norm, ffn_gate/up/down, post_ffw_norm, inp_gate,
 * proj, post_norm, layer_output_scale). A file with any other tensor (a
 * per-layer token table, rope_freqs, Dense heads, tower tensors) is refused
 * naming it: it would be a different graph.
 *
 * Matrices stay in the file mapping in their GGUF block layout and are
 * multiplied in place by the experimental CPU kernels; norm vectors and the
 * per-layer output scales are converted to float32 into budgeted memory.
 */
#ifndef EG2_WEIGHTS_H
#define EG2_WEIGHTS_H

#include <gufo/ext/experimental/cpu_kernels.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/memory.h>

#include "eg2_hparams.h"

typedef struct eg2_layer {
    gufo_x_cpu_matrix wq, wk, wv, wo;         /* [n_embd] -> heads, heads -> [n_embd] */
    gufo_x_cpu_matrix gate, up, down;         /* GELU-gated feed-forward */
    gufo_x_cpu_matrix inp_gate, proj;         /* per-layer-embedding bottleneck */
    const float *attn_norm, *q_norm, *k_norm, *post_attn_norm;
    const float *ffn_norm, *post_ffn_norm, *post_norm;
    float out_scale;                          /* layer_output_scale */
} eg2_layer;

typedef struct eg2_weights {
    gufo_x_cpu_matrix tok_embd;               /* n_vocab rows of n_embd */
    gufo_x_cpu_matrix per_layer_model_proj;   /* n_layer * n_embd_per_layer rows of n_embd */
    gufo_x_cpu_matrix output;                 /* n_embd_out rows of n_embd */
    const float *per_layer_proj_norm, *output_norm;
    eg2_layer *layers;                        /* n_layer, inside `block` */
    void *block;                              /* one "weights" allocation: layers and float vectors */
    uint64_t charged;                         /* mapped matrix bytes charged to the pool */
} eg2_weights;

/** Whether the matrix products run `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). */
bool eg2_matrix_type_supported(gufo_tensor_type type);

/**
 * Checks the file's tensors against the inventory `hp` implies: each present
 * with its shape and a type this provider computes with, and no other tensor.
 * Metadata only (the probe calls it). False with a reason naming the tensor.
 */
bool eg2_weights_check(const gufo_gguf *gguf, const eg2_hparams *hp, char *why, size_t why_cap);

/**
 * Binds the matrices to `gguf`'s mapping (which must outlive the weights),
 * charges their bytes to `memory` under "weights", and converts the vectors
 * to float32 in one "weights" allocation. Checks as eg2_weights_check first.
 */
gufo_status eg2_weights_load(const gufo_gguf *gguf, const eg2_hparams *hp, gufo_memory *memory, eg2_weights *w,
                             gufo_error *err);

/** Releases what eg2_weights_load() took. Safe on a zeroed or partly loaded struct. */
void eg2_weights_free(gufo_memory *memory, eg2_weights *w);

#endif /* EG2_WEIGHTS_H */

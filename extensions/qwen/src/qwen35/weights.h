/* qwen35/weights.h — the tensors of a qwen35 GGUF in llama.cpp's layout.
 *
 * Names and shapes are those llama_model_qwen35::load_arch_tensors creates
 * (ggml order: dims[0] is the input features). Per trunk block:
 *
 *   every block    blk.N.attn_norm [D], blk.N.post_attention_norm [D],
 *                  blk.N.ffn_gate / ffn_up [D, F], blk.N.ffn_down [F, D]
 *   Gated DeltaNet blk.N.attn_qkv [D, 2*Kd + Vd] (q, k, v channels),
 *                  blk.N.attn_gate [D, Vd] (z), blk.N.ssm_beta / ssm_alpha [D, Hv],
 *                  blk.N.ssm_conv1d [kernel, 2*Kd + Vd], blk.N.ssm_dt.bias [Hv],
 *                  blk.N.ssm_a [Hv] (= -exp(A_log)), blk.N.ssm_norm [dv],
 *                  blk.N.ssm_out [Vd, D]
 *   full attention blk.N.attn_q [D, 2*H*hd] (query and output gate per head),
 *                  blk.N.attn_k / attn_v [D, Hkv*hd], blk.N.attn_output [H*hd, D],
 *                  blk.N.attn_q_norm / attn_k_norm [hd]
 *
 * and the MTP block (N = n_layer) as a full-attention block plus
 * blk.N.nextn.eh_proj [2D, D], blk.N.nextn.enorm / hnorm [D] and the optional
 * blk.N.nextn.embed_tokens, shared_head_head [D, vocab], shared_head_norm [D].
 *
 * The converter writes the model as one file (trunk + MTP block), as a trunk
 * alone (--no-mtp: no nextn_predict_layers, block_count = trunk) or as an
 * MTP-only draft file (--mtp, "mtp-<name>.gguf": the same keys, token_embd,
 * output_norm, output and the MTP block, no trunk blocks). As in llama.cpp, a
 * file with an MTP block and no blk.0.attn_norm.weight is MTP-only.
 *
 * The converter folds Qwen3.5's (1 + w) RMSNorm weights into the stored
 * values (all norms but ssm_norm), turns A_log into ssm_a = -exp(A_log), and
 * stores the value heads of a Gated DeltaNet block *tiled* over the key
 * heads: value head h reads key head h % gdn_k_heads (transformers groups
 * them: h / (Hv/Hk)). This code reads that layout as it is.
 *
 * Matrices stay where the file is mapped, in their block format; vectors
 * (norms, conv kernels, ssm_a, ssm_dt) are copied to float32.
 */
#ifndef QWEN35_WEIGHTS_H
#define QWEN35_WEIGHTS_H

#include "hparams.h"

#include <gufo/ext/experimental/cpu_kernels.h>

typedef gufo_x_cpu_matrix qwen35_matrix;

/* A full-attention block's own tensors (trunk or MTP). */
typedef struct qwen35_attention_weights {
    qwen35_matrix wq, wk, wv, wo;
    const float *q_norm, *k_norm;
} qwen35_attention_weights;

/* A Gated DeltaNet block's own tensors. */
typedef struct qwen35_gdn_weights {
    qwen35_matrix wqkv, wgate, wbeta, walpha, wout;
    const float *conv;    /* [conv_dim][kernel]: channel c's taps, the last one for the newest input */
    const float *dt_bias; /* [Hv] */
    const float *a;       /* [Hv], = -exp(A_log) */
    const float *norm;    /* [dv] */
} qwen35_gdn_weights;

typedef struct qwen35_layer {
    bool recurrent;
    const float *attn_norm, *post_norm;
    qwen35_matrix ffn_gate, ffn_up, ffn_down;
    qwen35_attention_weights att; /* when !recurrent */
    qwen35_gdn_weights gdn;       /* when recurrent */
} qwen35_layer;

typedef struct qwen35_mtp_weights {
    qwen35_layer block;          /* a full-attention block */
    qwen35_matrix eh_proj;       /* [2D -> D] over (normed embedding, normed hidden) */
    const float *enorm, *hnorm;
    const float *head_norm;      /* nextn.shared_head_norm, else output_norm */
    qwen35_matrix embed;         /* nextn.embed_tokens, else token_embd */
    qwen35_matrix head;          /* nextn.shared_head_head, else the model's output */
} qwen35_mtp_weights;

typedef struct qwen35_weights {
    qwen35_matrix token_embd, output; /* output = token_embd when tied */
    const float *output_norm;
    qwen35_layer *layers;             /* n_layer */
    bool has_mtp;
    bool mtp_only;                    /* an MTP draft file: no trunk blocks (layers unused) */
    qwen35_mtp_weights mtp;
    float **owned;                    /* the float32 copies, freed by qwen35_weights_free */
    size_t n_owned;
} qwen35_weights;

/**
 * Checks every tensor `hp` implies — present, the expected shape, a type this
 * code computes with, rows of whole blocks — from metadata alone. False with
 * one sentence in `why` naming the tensor ("tensor blk.0.ssm_a has shape [8],
 * expected [4]").
 */
bool qwen35_weights_check(const gufo_gguf *gguf, const qwen35_hparams *hp, char *why, size_t why_cap);

/**
 * The same check, then binds the matrices in `gguf` (opened with
 * GUFO_GGUF_OPEN_MAP; it must outlive `w`) and copies the vectors.
 * GUFO_E_FORMAT with the reason in `err`, GUFO_E_NO_MEMORY.
 */
gufo_status qwen35_weights_load(const gufo_gguf *gguf, const qwen35_hparams *hp, qwen35_weights *w, gufo_error *err);

void qwen35_weights_free(qwen35_weights *w);

#endif /* QWEN35_WEIGHTS_H */

/* qwen35/hparams.h — what a Qwen3.5/3.8 GGUF (llama.cpp arch `qwen35`) says about its shape.
 *
 * Read from metadata alone, so a probe can use it without touching tensor
 * data. Every key is the one llama.cpp's loader (llama_model_qwen35::
 * load_arch_hparams and the shared keys) reads, with its defaults; a value
 * that is absent, of the wrong type or out of range is refused with one
 * sentence naming the key ("missing key qwen35.ssm.conv_kernel").
 *
 * The file's `qwen35.block_count` counts the trunk *and* the MTP ("nextn")
 * blocks appended after it: a 27B file says 65 with nextn_predict_layers 1.
 * Here `n_layer` is the trunk and `n_nextn` the appended blocks.
 */
#ifndef QWEN35_HPARAMS_H
#define QWEN35_HPARAMS_H

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QWEN35_ARCHITECTURE "qwen35"

/* Bounds that keep every size product far from overflow and admit every
 * published Qwen3.5/3.8 shape (27B: hidden 5120, 64 + 1 blocks, FFN 17408,
 * vocabulary 248320, context 262144). */
#define QWEN35_MAX_LAYERS 256u
#define QWEN35_MAX_HEAD_DIM 512u
#define QWEN35_MAX_DIM (1u << 20)
#define QWEN35_MAX_VOCAB (1u << 24)
#define QWEN35_MAX_CONTEXT (1u << 24)
#define QWEN35_MAX_CONV_KERNEL 16u

typedef struct qwen35_hparams {
    uint32_t n_vocab;        /* token_embd.weight rows */
    uint32_t n_embd;         /* qwen35.embedding_length */
    uint32_t n_layer;        /* trunk blocks: block_count - nextn_predict_layers */
    uint32_t n_nextn;        /* qwen35.nextn_predict_layers (MTP blocks after the trunk; 0 or 1) */
    uint32_t n_ff;           /* qwen35.feed_forward_length */
    uint32_t context_length; /* qwen35.context_length */
    float rms_eps;           /* qwen35.attention.layer_norm_rms_epsilon */

    /* gated full attention */
    uint32_t n_head;         /* qwen35.attention.head_count */
    uint32_t n_head_kv;      /* qwen35.attention.head_count_kv */
    uint32_t head_dim;       /* qwen35.attention.key_length (= value_length) */
    uint32_t n_rot;          /* qwen35.rope.dimension_count: rotated dims of each head (partial RoPE) */
    float rope_freq_base;    /* qwen35.rope.freq_base */
    int32_t rope_sections[4];/* qwen35.rope.dimension_sections (M-RoPE; text positions make it plain RoPE) */

    /* Gated DeltaNet */
    uint32_t conv_kernel;    /* qwen35.ssm.conv_kernel */
    uint32_t gdn_head_dim;   /* qwen35.ssm.state_size: key and value head size */
    uint32_t gdn_k_heads;    /* qwen35.ssm.group_count: query/key heads */
    uint32_t gdn_v_heads;    /* qwen35.ssm.time_step_rank: value heads */
    uint32_t gdn_inner;      /* qwen35.ssm.inner_size = gdn_v_heads * gdn_head_dim */

    bool recurrent[QWEN35_MAX_LAYERS]; /* per trunk block: Gated DeltaNet (true) or full attention */
    bool tied_output;                  /* no output.weight: logits use token_embd.weight */
} qwen35_hparams;

/* Derived widths, in floats. */
static inline uint32_t qwen35_gdn_key_dim(const qwen35_hparams *hp) { return hp->gdn_k_heads * hp->gdn_head_dim; }
static inline uint32_t qwen35_gdn_conv_dim(const qwen35_hparams *hp)
{
    return 2 * qwen35_gdn_key_dim(hp) + hp->gdn_inner;
}

/**
 * Reads and checks the qwen35.* keys of `gguf` (a metadata view is enough)
 * into `hp`. n_vocab and tied_output come from the tensor table
 * (token_embd.weight, output.weight). Returns true when the shape is one this
 * code runs; otherwise false with one sentence in `why` naming the key.
 */
bool qwen35_hparams_read(const gufo_gguf *gguf, qwen35_hparams *hp, char *why, size_t why_cap);

/** Number of full-attention blocks among the trunk's. */
uint32_t qwen35_attention_layers(const qwen35_hparams *hp);

#endif /* QWEN35_HPARAMS_H */

/* hparams.h — what a Qwen3 GGUF must say about itself, checked from metadata alone.
 *
 * The probe and the loader share this check, so a file the probe accepts is a
 * file the loader can run: every hyperparameter key llama.cpp writes for
 * qwen3, every tensor by its llama.cpp name with the shape those numbers
 * imply (ggml order: dims[0] is the input features) and a type this CPU code
 * computes with, and a tokenizer vocabulary as long as the embedding table.
 */
#ifndef QWEN_HPARAMS_H
#define QWEN_HPARAMS_H

#include <gufo/ext/api.h>

#include "model_base.h"

#define QWEN_ARCHITECTURE "qwen3"

/* Generous bounds that keep every size product far from overflow while
 * admitting every published Qwen3 shape. */
#define QWEN_MAX_LAYERS 512u
#define QWEN_MAX_HEAD_DIM 1024u
#define QWEN_MAX_DIM (1u << 20)
#define QWEN_MAX_VOCAB (1u << 24)
#define QWEN_MAX_CONTEXT (1u << 24)

typedef struct qwen_hparams {
    uint32_t n_vocab;        /* token_embd rows */
    uint32_t n_embd;         /* qwen3.embedding_length */
    uint32_t n_layer;        /* qwen3.block_count */
    uint32_t n_ff;           /* qwen3.feed_forward_length */
    uint32_t n_head;         /* qwen3.attention.head_count */
    uint32_t n_head_kv;      /* qwen3.attention.head_count_kv */
    uint32_t head_dim_k;     /* qwen3.attention.key_length */
    uint32_t head_dim_v;     /* qwen3.attention.value_length */
    uint32_t context_length; /* qwen3.context_length */
    float rope_freq_base;    /* qwen3.rope.freq_base */
    float rms_eps;           /* qwen3.attention.layer_norm_rms_epsilon */
    bool tied_output;        /* no output.weight: logits use token_embd.weight */
} qwen_hparams;

/**
 * Checks `gguf` (metadata view is enough) and fills `hp`. Returns true when
 * qwen-cpu can run the file; otherwise false with one sentence in `why`
 * naming the key or tensor at fault.
 */
bool qwen_hparams_inspect(const gufo_gguf *gguf, qwen_hparams *hp, char *why, size_t why_cap);

/** qwen_hparams_inspect as a qwen_model_kind's `inspect` (hparams: a qwen_hparams or NULL). */
bool qwen_hparams_inspect_shape(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why,
                                size_t why_cap);

/**
 * The tokenizer part of the check, shared by every qwen architecture:
 * tokenizer.ggml.model "gpt2", tokenizer.ggml.merges, and
 * tokenizer.ggml.tokens with `n_vocab` entries (the embedding's rows).
 */
bool qwen_tokenizer_metadata_check(const gufo_gguf *gguf, uint32_t n_vocab, char *why, size_t why_cap);

/** True for the tensor types the matrix products accept. */
bool qwen_matrix_type_supported(gufo_tensor_type type);

#endif /* QWEN_HPARAMS_H */

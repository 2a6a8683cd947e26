/* eg2_hparams.h — EmbeddingGemma 2 hyper-parameters, read from GGUF metadata.
 *
 * The keys are the ones llama.cpp's converter writes for arch
 * `gemma-embedding2` (all under the "gemma-embedding2." prefix). Reading needs
 * metadata only, so the probe and the loader share it. Every refusal names the
 * key and the value found, so a user knows what their file has that this
 * provider does not run.
 */
#ifndef EG2_HPARAMS_H
#define EG2_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/gguf_reader.h>

#define EG2_ARCH "gemma-embedding2"
/** Layers this provider accepts (the published model has 24). */
#define EG2_MAX_LAYERS 256u
/** A dimension above this is a broken file, not a bigger model. */
#define EG2_MAX_DIM (1u << 20)

typedef struct eg2_hparams {
    uint32_t n_vocab;          /**< rows of token_embd (= tokenizer.ggml.tokens count) */
    uint32_t n_embd;           /**< embedding_length */
    uint32_t n_layer;          /**< block_count */
    uint32_t n_ctx;            /**< context_length: longest input in tokens */
    uint32_t n_embd_per_layer; /**< embedding_length_per_layer_input */
    uint32_t n_embd_out;       /**< embedding_length_out (768 for the published model) */
    uint32_t n_swa;            /**< attention.sliding_window, as the converter writes it: 2 x the HF config's */
    uint32_t swa_radius;       /**< a sliding layer's token sees |i - j| <= swa_radius (eg2_swa_radius) */
    uint32_t head_dim_full;    /**< attention.key_length (= value_length) */
    uint32_t head_dim_swa;     /**< attention.key_length_swa (= value_length_swa) */
    float eps;                 /**< attention.layer_norm_rms_epsilon */
    float rope_base_full;      /**< rope.freq_base */
    float rope_base_swa;       /**< rope.freq_base_swa (defaults to rope.freq_base, as llama.cpp) */
    uint32_t n_head[EG2_MAX_LAYERS];
    uint32_t n_head_kv[EG2_MAX_LAYERS];
    uint32_t n_ff[EG2_MAX_LAYERS];
    bool is_swa[EG2_MAX_LAYERS];
} eg2_hparams;

/**
 * The reach of a sliding layer, as transformers computes it. llama.cpp's
 * converter writes attention.sliding_window = 2 * S, S being the HF config's
 * sliding_window (google/embeddinggemma-2: 1024), and llama.cpp then masks
 * |i - j| > n_swa / 2 = S. transformers' EmbeddingGemma2TextConfig takes S as
 * the *full* window width: it stores S // 2 + 1 and the bidirectional mask
 * unmasks |i - j| <= S // 2 + 1 (masking_utils'
 * sliding_window_bidirectional_overlay). The two differ by a factor of 2; this
 * extension follows transformers, the model's reference implementation (see
 * the README, "Sliding window"). Inputs within S // 2 + 1 tokens (514 for the
 * published model) are unaffected.
 */
static inline uint32_t eg2_swa_radius(uint32_t n_swa)
{
    return n_swa / 4 + 1;
}

/** Head dimension of layer `il` (sliding layers and full layers differ in Gemma 4). */
static inline uint32_t eg2_head_dim(const eg2_hparams *hp, uint32_t il)
{
    return hp->is_swa[il] ? hp->head_dim_swa : hp->head_dim_full;
}

/**
 * Reads and checks every hyper-parameter from `gguf` (metadata only). On
 * failure returns false with a reason naming the key in `why`.
 */
bool eg2_hparams_read(const gufo_gguf *gguf, eg2_hparams *hp, char *why, size_t why_cap);

/** printf into `why` and return false: the one way refusals are written. */
bool eg2_fail(char *why, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* EG2_HPARAMS_H */

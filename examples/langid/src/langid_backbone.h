/* langid_backbone.h — what both langid providers share: the file format, the
 * probe, the loader of the embedding matrix, and text -> sentence vector.
 *
 * A gufo-langid GGUF holds
 *   general.architecture  "gufo-langid"
 *   langid.features       featurizer scheme name (LANGID_FEATURE_SCHEME)
 *   langid.dim            sentence-vector size D
 *   langid.buckets        hash buckets B
 *   langid.ngram_min/max  character n-gram range
 *   langid.hash_seed      seed of the bucket hash
 *   langid.labels         string array, the classifier's L classes
 *   token_embd.weight     [D, B] (GGUF order, innermost first), f32/f16/q8_0
 *   cls.weight            [D, L] f32/f16     (classifier head, langid-decide only)
 *   cls.bias              [L]    f32/f16
 * The backbone is text -> hashed n-grams -> mean of their rows of
 * token_embd.weight -> L2 normalisation. langid-embed returns that vector;
 * langid-decide puts a softmax classifier on top of it.
 */
#ifndef LANGID_BACKBONE_H
#define LANGID_BACKBONE_H

#include <gufo/ext/api.h>

#include "langid_features.h"

#define LANGID_ARCHITECTURE "gufo-langid"
#define LANGID_KEY_FEATURES "langid.features"
#define LANGID_KEY_DIM "langid.dim"
#define LANGID_KEY_BUCKETS "langid.buckets"
#define LANGID_KEY_NGRAM_MIN "langid.ngram_min"
#define LANGID_KEY_NGRAM_MAX "langid.ngram_max"
#define LANGID_KEY_HASH_SEED "langid.hash_seed"
#define LANGID_KEY_LABELS "langid.labels"
#define LANGID_TENSOR_EMBD "token_embd.weight"
#define LANGID_TENSOR_CLS_WEIGHT "cls.weight"
#define LANGID_TENSOR_CLS_BIAS "cls.bias"

/* Sanity bounds the probe enforces, so a hostile file cannot ask for absurd
 * allocations (B * D floats must stay far below what a budget would allow). */
#define LANGID_MAX_DIM 4096u
#define LANGID_MAX_BUCKETS (1u << 22)
#define LANGID_MAX_LABELS 256u
#define LANGID_MAX_LABEL_BYTES 63u

/** Most items per embed()/decide() call. Nothing is sized by it; it bounds a call's latency. */
#define LANGID_MAX_BATCH 256u

/**
 * The extension's shared state: the contract of the featurizer compiled into
 * this build. The extension entry publishes it as extension userdata and each
 * provider entry hands it to its probe and factory, so both providers judge
 * files by the same rules and featurize text the same way. Read-only.
 */
typedef struct langid_shared {
    const char *feature_scheme;   /**< the only langid.features value this build can run */
    uint32_t max_ngram;           /**< longest n-gram the featurizer supports */
    uint32_t max_dim;
    uint32_t max_buckets;
    uint32_t max_labels;
} langid_shared;

/** Model hyperparameters and tensor types, as read from (and checked against) a file. */
typedef struct langid_config {
    langid_feature_spec features;
    uint32_t dim;
    uint32_t n_labels;            /**< 0 when the classifier head was not asked for */
    gufo_tensor_type embd_type;
} langid_config;

/**
 * Checks the metadata of `gguf` (keys and tensor infos only, never tensor
 * data) and fills `out`. With `need_head` the classifier keys and tensors are
 * required too. Returns true when the file fits; otherwise false with a
 * one-sentence reason naming the key or tensor in `reason`.
 */
bool langid_config_read(const langid_shared *shared, const gufo_gguf *gguf, bool need_head, langid_config *out,
                        char *reason, size_t reason_cap);

/** The probe both providers use: architecture first, then langid_config_read(). */
gufo_status langid_probe(const langid_shared *shared, const gufo_artifact *artifact, bool need_head,
                         gufo_probe_result *result);

/** The loaded backbone. `embd` is B x D floats, row b = bucket b; it comes from the "weights" budget. */
typedef struct langid_backbone {
    langid_config config;
    float *embd;
} langid_backbone;

/**
 * Opens params->path (mapped), re-checks it as the probe did (the file may
 * have changed since), and loads token_embd.weight into budgeted memory,
 * polling params->cancel. On success `*gguf_out` is the open file, for the
 * caller to read its own tensors and close; on failure nothing is left open
 * or allocated and `err` says what failed.
 */
gufo_status langid_backbone_open(const langid_shared *shared, const gufo_model_params *params, bool need_head,
                                 gufo_gguf **gguf_out, langid_backbone *backbone, gufo_error *err);

/** Returns the backbone's memory; safe on a zeroed or half-loaded backbone. */
void langid_backbone_release(gufo_memory *memory, langid_backbone *backbone);

/**
 * Loads the 2-D (or 1-D when rows == 1) tensor `name`, whose shape and type
 * langid_config_read() already checked, as rows x cols floats under the
 * "weights" tag. Dequantizes row by row and checks `cancel` as it goes.
 */
gufo_status langid_load_tensor(gufo_memory *memory, const gufo_gguf *gguf, const char *name, uint64_t rows,
                               uint64_t cols, const gufo_cancel *cancel, float **out, gufo_error *err);

/**
 * The sentence vector: mean of the `embd` rows of the text's features, L2
 * normalised, written to out[0..dim). Returns the number of features; 0 means
 * the text has no letters, and then `out` is all zeros.
 */
size_t langid_sentence_vector(const langid_feature_spec *spec, uint32_t dim, const float *embd, const char *text,
                              size_t len, float *out);

/** Scales v[0..n) to unit L2 norm; a zero vector stays zero. */
void langid_l2_normalize(float *v, uint32_t n);

#endif /* LANGID_BACKBONE_H */

/* eg2_model.h — a loaded EmbeddingGemma 2 and its forward pass.
 *
 * The forward pass runs a group of sequences packed one after another (each
 * with its own positions and attention span) through every layer at once, so
 * each weight matrix is read once per group, and returns one pooled vector
 * per sequence: the mean over its tokens of the final-normed hidden state,
 * projected by `output` to n_embd_out. (llama.cpp projects every token, then
 * pools; a linear map commutes with the mean, so projecting the mean is the
 * same function with T times fewer products.)
 */
#ifndef EG2_MODEL_H
#define EG2_MODEL_H

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/cpu_kernels.h>
#include <gufo/ext/experimental/thread_pool.h>

#include "eg2_hparams.h"
#include "eg2_tokenizer.h"
#include "eg2_weights.h"

/** Most tokens one forward group holds (a group is at least one whole input). */
#define EG2_GROUP_TOKENS_MIN 512u
/** Most items one embed() call takes. */
#define EG2_MAX_BATCH 64u

typedef struct eg2_model {
    gufo_memory *memory;
    gufo_gguf *gguf;            /* the mapping the matrices point into */
    eg2_hparams hp;
    eg2_weights w;
    eg2_tokenizer *tok;
    uint64_t tok_charged;
    gufo_x_pool *pool;
    uint32_t group_tokens;      /* capacity of the scratch below, in tokens */
    /* "scratch": activations for group_tokens tokens */
    float *x, *h, *q, *k, *v, *att, *o, *gate, *up, *ple, *pg, *ones;
    float *attn_scratch;        /* per thread */
    size_t attn_scratch_floats;
    void *mm_scratch;
    size_t mm_scratch_bytes;
    uint32_t dimensions[5];
    size_t n_dimensions;
} eg2_model;

/** One sequence of a group: its ids and where its pooled vector goes (n_embd_out floats). */
typedef struct eg2_seq {
    const int32_t *ids;
    uint32_t n;
    float *out;
} eg2_seq;

gufo_status eg2_model_create(const gufo_model_params *params, eg2_model **out, gufo_error *err);
void eg2_model_destroy(eg2_model *m);

/**
 * Runs `n_seq` sequences (their tokens together at most m->group_tokens,
 * each 1..hp.n_ctx long, ids in range) and writes each pooled, projected,
 * not yet normalised vector to its `out`.
 */
gufo_status eg2_forward(eg2_model *m, const eg2_seq *seqs, size_t n_seq, gufo_error *err);

/** 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): transformers' gelu_pytorch_tanh, the hidden_activation. */
float eg2_gelu_tanh(float x);

#endif /* EG2_MODEL_H */

/* qwen35_gpu/model.h — a Qwen3.5/3.8 model loaded on the GPU by the
 * qwen35-gpu provider: what its provider (provider.c), weights (weights.c),
 * step (forward.c) and sessions (session.c, state.c) share.
 *
 * The host side is the CPU core's: hyper-parameters and the tensor inventory
 * (../qwen35/hparams.h, weights.h: the load binds every tensor in the mapped
 * file, then weights.c copies them to the device), the tokenizer, chat
 * template and tool calls (../model_base.h, ../text_iface.h). Everything
 * large lives in device memory from the host's budgeted pool: weights
 * ("weights"), the step's scratch ("scratch"), each session's attention
 * caches and recurrent state ("kv-cache"), snapshots ("snapshot"). Only the
 * scheduler thread touches the device parts.
 */
#ifndef QWEN35_GPU_MODEL_H
#define QWEN35_GPU_MODEL_H

#include <stddef.h>

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/graph.h>

#include "../gpu/step_gpu.h"
#include "../model_base.h"
#include "../qwen35/hparams.h"
#include "kernels.h"

#define QWEN35_GPU_DEFAULT_MAX_BATCH 32u
#define QWEN35_GPU_MAX_BATCH_LIMIT 256u
/* Tokens per prefill step. The delta rule runs a chunk's rows in order
 * (kernels.h), so a longer chunk does not make that part faster; it makes
 * the products (through the BLAS from QWEN35_GPU_GEMM_MIN_ROWS rows) read
 * each weight once for more rows. */
#define QWEN35_GPU_MAX_PREFILL_CHUNK 1024u
/* Attention parts per (row, head) in a decode step: fixed, so one captured
 * graph serves every length. */
#define QWEN35_GPU_DECODE_SPLITS 16u
/* Prefill chunks of at least this many rows multiply through the BLAS. */
#define QWEN35_GPU_GEMM_MIN_ROWS 64u
#define QWEN35_GPU_BLAS_WORKSPACE (32u << 20)
/* Positions a new session's attention caches hold before they first grow. */
#define QWEN35_GPU_FIRST_CAPACITY 256u

typedef struct qwen35_gpu_layer {
    bool recurrent;
    uint32_t slot;                  /* its attention cache slot, or its Gated DeltaNet index */
    const float *attn_norm, *post_norm;
    qwen_gpu_matrix ffn_gate, ffn_up, ffn_down;
    /* gated full attention */
    qwen_gpu_matrix wq, wk, wv, wo;
    const float *q_norm, *k_norm;
    /* Gated DeltaNet */
    qwen_gpu_matrix wqkv, wgate, wbeta, walpha, wout;
    const float *conv, *dt_bias, *ssm_a, *ssm_norm;
} qwen35_gpu_layer;

typedef struct qwen35_gpu_weights {
    qwen_gpu_matrix token_embd, output;
    const float *output_norm;
    const float *inv_freq;          /* [n_rot / 2] */
    qwen35_gpu_layer *layers;       /* host array of n_layer */
    void **blocks;                  /* every device allocation, for freeing */
    size_t n_blocks, max_blocks;
    uint64_t device_bytes;
    uint64_t largest_layer_matrix;  /* elements of the largest block matrix (the BLAS's decode buffer) */
} qwen35_gpu_weights;

/** Device scratch of one step, sized at load for max_rows rows. */
typedef struct qwen35_gpu_scratch {
    uint32_t max_rows, max_out, max_row_splits;
    float *x, *h;                                    /* residual stream, its norm */
    float *mix, *conv_out, *z, *b, *a, *beta, *g, *core; /* Gated DeltaNet */
    float *q_full, *k, *v, *q, *att, *partials;      /* attention */
    float *gate, *up;                                /* FFN */
    float *normed, *logits;
    qwen_gpu_row *rows;                              /* the step's rows (token, position, attention caches) */
    qwen35_gpu_seq *seqs;                            /* the step's sequences' recurrent states */
    qwen_gpu_sampling *sampling;
    int32_t *tokens;
    qwen_gpu_q8 xq;                                  /* a product's input as int8 blocks */
    void *block;
    void *dequantized, *activations16, *blas_workspace; /* the BLAS path (NULL without one) */
} qwen35_gpu_scratch;

typedef struct qwen35_gpu_model {
    qwen_model_base base;        /* first: file, limits, tokenizer, live sessions (../model_base.h) */
    qwen35_hparams hp;
    qwen_gpu_dims att_dims;      /* the attention's shape for ../gpu's kernels; n_layer = attention slots */
    qwen35_gpu_gdn_dims gdn_dims;
    uint32_t n_att, n_gdn;       /* attention blocks (cache slots), Gated DeltaNet blocks */
    qwen35_gpu_weights weights;
    qwen35_gpu_scratch scratch;
    void *stream;
    void *blas;                  /* prefill products (NULL: HIP builds, or none) */
    bool prefill_bf16;           /* option qwen-gpu-prefill */
    bool decode_q8;              /* option qwen-gpu-decode, and every product input a multiple of 32 */
    gufo_x_graph_cache *graphs;  /* decode steps, by batch size and pick */
    bool use_graphs;
    /* host staging (sized at load) */
    qwen_gpu_row *rows_host;
    qwen35_gpu_seq *seqs_host;
    qwen_gpu_sampling *sampling_host;
    int32_t *tokens_host;
    float *logits_host;
    void *staging;
    qwen_gpu_outputs outputs;    /* where a step's outputs are (set at load) */
} qwen35_gpu_model;
_Static_assert(offsetof(qwen35_gpu_model, base) == 0, "a qwen35-gpu handle is a qwen_model_base");

static inline qwen35_gpu_model *qwen35_gpu_from_handle(gufo_model *handle)
{
    return (qwen35_gpu_model *)(void *)handle;
}

static inline gufo_model *qwen35_gpu_to_handle(qwen35_gpu_model *model)
{
    return (gufo_model *)(void *)model;
}

/* ---- weights.c ---- */

/**
 * What the kernels cannot run in a file the CPU core accepts, from metadata
 * alone: a matrix type outside F32/F16/BF16/Q8_0/Q4_K/Q6_K, an attention head
 * over QWEN_GPU_MAX_HEAD_DIM, a Gated DeltaNet head over
 * QWEN35_GPU_MAX_GDN_HEAD or not a multiple of 8. False with the reason.
 */
bool qwen35_gpu_supports(const gufo_gguf *gguf, const qwen35_hparams *hp, char *why, size_t why_cap);

/** Binds the file's tensors (the CPU core's inventory) and copies them to the device; on failure nothing is held. */
gufo_status qwen35_gpu_weights_load(const gufo_gguf *gguf, const qwen35_hparams *hp, gufo_memory *memory,
                                    qwen35_gpu_weights *w, gufo_error *err);
void qwen35_gpu_weights_free(gufo_memory *memory, qwen35_gpu_weights *w);

/* ---- forward.c ---- */

gufo_status qwen35_gpu_scratch_init(qwen35_gpu_model *model, uint32_t max_rows, uint32_t max_out, gufo_error *err);
void qwen35_gpu_scratch_release(qwen35_gpu_model *model);

/**
 * Runs a step: rows_host[0..n) (n_seq sequences of n / n_seq consecutive
 * rows, seqs_host[0..n_seq)) through every block; the last `n_out` rows of
 * the step (one per sequence in a decode step, the chunk's last in a
 * prefill) give logits (scratch.logits) and, per `pick`, tokens
 * (tokens_host). Decode steps (`graph`) replay a captured graph per (n,
 * pick). Waits for the device.
 */
gufo_status qwen35_gpu_forward(qwen35_gpu_model *model, uint32_t n, uint32_t n_seq, uint32_t n_out,
                               qwen_gpu_pick pick, bool graph, gufo_error *err);

/** Turns the last GPU failure into a gufo_error naming `what`. */
gufo_status qwen35_gpu_failed(gufo_error *err, const char *what);

/* ---- session.c ---- */

gufo_status qwen35_gpu_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                      gufo_error *err);
void qwen35_gpu_session_destroy(gufo_model *model, gufo_text_session *session);
uint32_t qwen35_gpu_session_length(gufo_model *model, const gufo_text_session *session);
gufo_status qwen35_gpu_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                               const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);
gufo_status qwen35_gpu_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);
gufo_status qwen35_gpu_truncate(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
gufo_status qwen35_gpu_snapshot_create(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                                       gufo_error *err);
gufo_status qwen35_gpu_restore(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                               gufo_error *err);
void qwen35_gpu_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot);
uint32_t qwen35_gpu_snapshot_length(gufo_model *model, const gufo_text_snapshot *snapshot);
void qwen35_gpu_release_all(qwen35_gpu_model *model);

#endif /* QWEN35_GPU_MODEL_H */

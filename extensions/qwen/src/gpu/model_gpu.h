/* model_gpu.h — a Qwen3 model loaded on the GPU: what the qwen-gpu provider,
 * its sessions and its forward pass share.
 *
 * Everything large lives in device memory from the host's budgeted pool:
 * weights (tag "weights", uploaded once at load, in their GGUF block format),
 * the step scratch ("scratch"), each session's KV cache ("kv-cache") and
 * snapshots ("snapshot"). The host side keeps the tokenizer and the file
 * mapping (for the tokenizer's strings); the scheduler thread is the only one
 * that touches the device parts.
 */
#ifndef QWEN_MODEL_GPU_H
#define QWEN_MODEL_GPU_H

#include <stddef.h>

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/graph.h>

#include "../hparams.h"
#include "../model_base.h"
#include "gpu_kernels.h"
#include "step_gpu.h"

#define QWEN_GPU_DEFAULT_MAX_BATCH 32u
#define QWEN_GPU_MAX_BATCH_LIMIT 256u
/* Tokens per prefill step: each step decodes every weight matrix for the BLAS
 * (gpu_gemm.cu), so longer chunks spend less of a long prompt on decoding;
 * 2048 rows of scratch are ~0.4 GiB for Qwen3-8B. */
#define QWEN_GPU_MAX_PREFILL_CHUNK 2048u
/* Parts per (row, head) in a decode step's attention: fixed, so one captured
 * graph serves every length (empty parts return at once). */
#define QWEN_GPU_DECODE_SPLITS 16u
/* Prefill chunks of at least this many tokens multiply through the BLAS
 * (gpu_gemm.cu); shorter ones, and every decode step, use the quantized
 * matrix-vector kernel, which reads the weights without decoding them to memory. */
#define QWEN_GPU_GEMM_MIN_ROWS 64u
/* cuBLAS's workspace, taken from the budget so the host counts it. */
#define QWEN_GPU_BLAS_WORKSPACE (32u << 20)
/* Positions one attention part should cover in prefill before splitting. */
#define QWEN_GPU_PREFILL_SPLIT_SPAN 1024u

typedef struct qwen_gpu_layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm; /* device, float32 */
    qwen_gpu_matrix wq, wk, wv, wo, gate, up, down;
} qwen_gpu_layer;

typedef struct qwen_gpu_weights {
    qwen_gpu_matrix token_embd, output;
    const float *output_norm;
    const float *inv_freq;   /* [head_dim / 2] RoPE frequencies, device */
    qwen_gpu_layer *layers;  /* host array of n_layer */
    void **blocks;           /* every device allocation, for freeing */
    size_t n_blocks;
    uint64_t device_bytes;
} qwen_gpu_weights;

/** Device scratch of one step, sized at load for max_rows rows. */
typedef struct qwen_gpu_scratch {
    uint32_t max_rows, max_out, max_row_splits;
    float *x, *h, *q, *k, *v, *att, *gate, *up, *partials, *normed, *logits;
    qwen_gpu_row *rows;            /* device copy of the step's rows */
    qwen_gpu_sampling *sampling;   /* device copy of the step's sampling settings */
    int32_t *tokens;               /* device: chosen tokens */
    qwen_gpu_q8 xq;                /* the current product input as int8 blocks (max_rows x widest input) */
    void *block;                   /* the one device allocation behind all of the above */
    void *dequantized;             /* the largest layer matrix decoded (float32 room), for prefill GEMMs (NULL: none) */
    void *activations16;           /* max_rows x widest input in bfloat16, for bf16 prefill GEMMs */
    void *blas_workspace;
} qwen_gpu_scratch;

typedef struct qwen_gpu_session qwen_gpu_session;
typedef struct qwen_gpu_snapshot qwen_gpu_snapshot;

typedef struct qwen_gpu_model {
    qwen_model_base base;        /* first: file, limits, tokenizer, live sessions (model_base.h) */
    qwen_hparams hp;
    qwen_gpu_dims dims;
    qwen_gpu_weights weights;
    qwen_gpu_scratch scratch;
    void *stream;
    void *blas;                  /* BLAS handle for prefill (NULL without one: HIP builds) */
    bool prefill_bf16;           /* option qwen-gpu-prefill: bf16 (default) or fp32 */
    bool decode_q8;              /* option qwen-gpu-decode q8 (default), and every product input a multiple of 32 */
    bool flash_prefill;          /* prefill attention on the tensor cores (bf16 prefill, a supported head) */
    gufo_x_graph_cache *graphs;  /* decode steps, keyed by batch size and sampling mode */
    bool use_graphs;
    /* Host staging for a step (sized at load). */
    qwen_gpu_row *rows_host;
    qwen_gpu_sampling *sampling_host;
    int32_t *tokens_host;
    float *logits_host;          /* max_out x n_vocab, for host-side sampling */
    qwen_gpu_outputs outputs;    /* where a step's outputs are (set at load) */
} qwen_gpu_model;
_Static_assert(offsetof(qwen_gpu_model, base) == 0, "a qwen-gpu handle is a qwen_model_base");

static inline qwen_gpu_model *qwen_gpu_from_handle(gufo_model *handle)
{
    return (qwen_gpu_model *)(void *)handle;
}

static inline gufo_model *qwen_gpu_to_handle(qwen_gpu_model *model)
{
    return (gufo_model *)(void *)model;
}

/* ---- provider_gpu.c: what every qwen GPU provider's probe and create share ---- */

/**
 * Whether the device the host found at start-up can run these kernels (a
 * usable GPU of the backend they were built for), from the host's facts
 * alone: a probe must never query the device. False with the reason.
 */
bool qwen_gpu_device_usable(const gufo_device_facts *facts, char *why, size_t why_cap);

/**
 * The end of a qwen GPU provider's probe, once the file's metadata passed:
 * accepts when the device facts the host attached to `artifact` say
 * qwen_gpu_device_usable(), else declines with the reason.
 */
gufo_status qwen_gpu_probe_device(const gufo_artifact *artifact, gufo_probe_result *result);

/** The provider's usable() slot: qwen_gpu_device_usable() on the host's start-up facts. */
gufo_status qwen_gpu_usable(void *userdata, const gufo_device_facts *device, gufo_probe_result *result);

/**
 * Option `name` of the manifest (`fallback`, its default, unless the host
 * set it), one of two values: *first is whether it is `first_value`.
 * GUFO_E_INVALID_ARGUMENT naming both for anything else.
 */
gufo_status qwen_gpu_read_choice(const gufo_model_params *params, const char *name, const char *fallback,
                                 const char *first_value, const char *second_value, bool *first, gufo_error *err);

/* ---- weights_gpu.c ---- */

/** True when every matrix of `gguf` has a type the kernels decode and the
 * head fits them; otherwise false with the reason in `why`. */
bool qwen_gpu_supports(const gufo_gguf *gguf, const qwen_hparams *hp, char *why, size_t why_cap);

/** True when every matrix (tensor of 2+ dims) of `gguf` has a type the
 * kernels decode (F32, F16, BF16, Q8_0, Q4_K, Q6_K); otherwise false with
 * "tensor X has type T, which <provider> cannot run ..." in `why`. Shared by
 * the qwen-gpu and qwen35-gpu probes. */
bool qwen_gpu_matrix_types_supported(const gufo_gguf *gguf, const char *provider, char *why, size_t why_cap);

/** Uploads every tensor to device memory from `memory`; on failure nothing is held. */
gufo_status qwen_gpu_weights_load(const gufo_gguf *gguf, const qwen_hparams *hp, gufo_memory *memory,
                                  qwen_gpu_weights *w, gufo_error *err);
void qwen_gpu_weights_free(gufo_memory *memory, qwen_gpu_weights *w);

/* ---- forward_gpu.c ---- */

gufo_status qwen_gpu_scratch_init(qwen_gpu_model *model, uint32_t max_rows, uint32_t max_out, gufo_error *err);
/** The BLAS handle, its workspace and the prefill decode buffer (after the weights). */
gufo_status qwen_gpu_blas_init(qwen_gpu_model *model, gufo_error *err);
/** Frees the scratch and the BLAS parts. */
void qwen_gpu_scratch_release(qwen_gpu_model *model);

/**
 * Runs `n` rows (model->rows_host[0..n)) through every layer; the last `n_out`
 * rows produce logits (scratch.logits) and, per `pick`, tokens
 * (model->tokens_host after the call). Decode steps (`graph` true) replay a
 * captured graph per (n, pick). Waits for the device before returning.
 */
gufo_status qwen_gpu_forward(qwen_gpu_model *model, uint32_t n, uint32_t n_out, qwen_gpu_pick pick, bool graph,
                             gufo_error *err);

/**
 * Attention parts per (row, head) for a prefill chunk whose rows (host copy)
 * reach the positions they hold: one per QWEN_GPU_PREFILL_SPLIT_SPAN positions
 * of the longest, at most QWEN_GPU_MAX_SPLITS and what `max_row_splits` of
 * partials scratch holds for n rows.
 */
uint32_t qwen_gpu_prefill_splits(const qwen_gpu_row *rows, uint32_t n, uint32_t max_row_splits);

/** Turns the last GPU failure into a gufo_error naming `what`. */
gufo_status qwen_gpu_failed(gufo_error *err, const char *what);

/* ---- session_gpu.c ---- */

gufo_status qwen_gpu_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                    gufo_error *err);
void qwen_gpu_session_destroy(gufo_model *model, gufo_text_session *session);
uint32_t qwen_gpu_session_length(gufo_model *model, const gufo_text_session *session);
gufo_status qwen_gpu_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                             const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);
gufo_status qwen_gpu_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);
gufo_status qwen_gpu_truncate(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
gufo_status qwen_gpu_snapshot_take(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                                   gufo_error *err);
gufo_status qwen_gpu_restore(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                             gufo_error *err);
void qwen_gpu_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot);
uint32_t qwen_gpu_snapshot_length(gufo_model *model, const gufo_text_snapshot *snapshot);
void qwen_gpu_release_all(qwen_gpu_model *model);
uint64_t qwen_gpu_kv_bytes_per_token(const qwen_hparams *hp);

#endif /* QWEN_MODEL_GPU_H */

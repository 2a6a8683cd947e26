/* gpu_kernels.h — the qwen-gpu kernels as seen from C.
 *
 * The kernels are written once in the CUDA dialect (gufo/ext/experimental/gpu.h)
 * and compiled by nvcc for NVIDIA or by hipcc for AMD; the provider's C code
 * reaches them only through the launchers declared here, so no C file needs a
 * vendor header. Every launcher enqueues work on `stream` (a cudaStream_t /
 * hipStream_t passed as void *) and returns at once; nothing here allocates.
 * Errors surface at the next qwen_gpu_sync() (or qwen_gpu_last_error()).
 *
 * Numerics: every product accumulates in float32 from float32 activations, and
 * dequantization rounds exactly like the runtime's CPU dequantizer (no fused
 * multiply-add inside a dequantized value), so the GPU computes the CPU
 * provider's function up to the order of float additions.
 */
#ifndef QWEN_GPU_KERNELS_H
#define QWEN_GPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF type numbers (gufo_tensor_type) the kernels decode. */
#define QWEN_GPU_F32 0
#define QWEN_GPU_F16 1
#define QWEN_GPU_Q8_0 8
#define QWEN_GPU_Q4_K 12
#define QWEN_GPU_Q6_K 14
#define QWEN_GPU_BF16 30

/* Longest head the attention and RoPE kernels hold in registers. */
#define QWEN_GPU_MAX_HEAD_DIM 256u
/* Most parts one attention row is split into (flash-decoding). */
#define QWEN_GPU_MAX_SPLITS 64u

/** A weight matrix on the device, in its GGUF block format: `rows` rows of `cols` elements. */
typedef struct qwen_gpu_matrix {
    int type;              /* QWEN_GPU_* */
    const void *data;
    uint32_t cols, rows;
    uint64_t row_bytes;
} qwen_gpu_matrix;

/**
 * One token of one history in a step, in device memory. `kv` is the history's
 * cache: per layer, K as [capacity][n_head_kv * head_dim] then V likewise
 * (float32). The step writes position `pos` and attends over 0..pos.
 */
typedef struct qwen_gpu_row {
    float *kv;
    uint32_t pos;
    uint32_t capacity;
    int32_t token;
    uint32_t reserved;
} qwen_gpu_row;

/** Shape of the model the kernels need. */
typedef struct qwen_gpu_dims {
    uint32_t n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_layer;
    float rms_eps;
} qwen_gpu_dims;

/* ---- device plumbing (gpu_runtime.cu) --------------------------------------- */

/** Creates the provider's stream. 0 on success; else the message is in qwen_gpu_last_error(). */
int qwen_gpu_stream_create(void **stream);
void qwen_gpu_stream_destroy(void *stream);
/** Waits for the stream; 0 when every kernel and copy on it succeeded. */
int qwen_gpu_sync(void *stream);
/** Asynchronous copies on `stream` (host memory may be pageable). */
int qwen_gpu_to_device(void *dst, const void *src, size_t bytes, void *stream);
int qwen_gpu_to_host(void *dst, const void *src, size_t bytes, void *stream);
int qwen_gpu_device_copy(void *dst, const void *src, size_t bytes, void *stream);
/**
 * Loads every kernel now (the runtime may load them lazily, at first launch),
 * so that the first decode step's graph capture never has to. 0 on success.
 */
int qwen_gpu_preload(void);
/** The last error of this thread's GPU calls as text ("" when none), and clears it. */
const char *qwen_gpu_last_error(void);
/** "cuda" or "hip": the runtime these kernels were compiled for. */
const char *qwen_gpu_compiled_for(void);

/* ---- kernels ------------------------------------------------------------------ */

/** x[r] = row rows[r].token of `embd`, for r < n (gpu_matmul.cu). */
int qwen_gpu_embed(void *stream, const qwen_gpu_matrix *embd, const qwen_gpu_row *rows, uint32_t n, float *x);

/**
 * y[v][r] (+)= dot(row r of `m`, x[v]) for v < n vectors (x is n x cols, y is
 * n x rows, row-major); `accumulate` adds to y (the residual stream) instead of
 * overwriting it (gpu_matmul.cu).
 */
int qwen_gpu_matmul(void *stream, const qwen_gpu_matrix *m, const float *x, uint32_t n, float *y, int accumulate);

/**
 * Activations rounded to 8-bit integers for qwen_gpu_matmul_q8(), 32 values
 * per scale: vector v of `cols` (a multiple of 32) values has qs[v * cols + i]
 * and, for its block b of 32, ds[2 * (v * cols / 32 + b)] = d and
 * ds[... + 1] = d * (sum of the block's qs); value i ~ d * qs[i] with
 * d = max |value| / 127 (gpu_q8.cuh). Device memory; qs 16-byte aligned.
 */
typedef struct qwen_gpu_q8 {
    int8_t *qs;
    float *ds;
} qwen_gpu_q8;

/** out = x (n x cols floats) as int8 blocks; cols a multiple of 32 (gpu_norm.cu). */
int qwen_gpu_quantize_q8(void *stream, const float *x, uint32_t n, uint32_t cols, qwen_gpu_q8 out);

/** True when qwen_gpu_matmul_q8() takes matrices of this type (Q8_0, Q4_K, Q6_K). */
int qwen_gpu_matmul_q8_supported(int type);

/**
 * What qwen_gpu_matmul() computes, with the activations as int8 blocks
 * (qwen_gpu_quantize_q8 and friends): integer dot products per block
 * (dp4a), scaled and summed in float32 — llama.cpp's numerics for quantized
 * decode rather than the CPU provider's. m->cols must be a multiple of 32
 * (gpu_matvec_q8.cu).
 */
int qwen_gpu_matmul_q8(void *stream, const qwen_gpu_matrix *m, qwen_gpu_q8 x, uint32_t n, float *y, int accumulate);

/* Most products one qwen_gpu_matmul_q8_fused() launch takes. */
#define QWEN_GPU_MAX_FUSED 3u

/**
 * y[i] = m[i] x for i < count (<= QWEN_GPU_MAX_FUSED) products of one input
 * in one launch (q, k, v; gate, up): every m[i] of the same type and cols
 * (gpu_matvec_q8.cu). Returns 1 without launching when they differ.
 */
int qwen_gpu_matmul_q8_fused(void *stream, const qwen_gpu_matrix *const *m, float *const *y, uint32_t count,
                             qwen_gpu_q8 x, uint32_t n);

/**
 * ys[i] = ms[i] x for the products of one int8 input that qwen_gpu_matmul_q8()
 * takes and done[i] does not mark, fused into launches of up to
 * QWEN_GPU_MAX_FUSED matrices of one type and width (Q4_K_M mixes Q4_K and
 * Q6_K within a layer); marks each product it launched in done[] and leaves
 * the others (other types) to the caller (products_gpu.c).
 */
int qwen_gpu_products_q8(void *stream, const qwen_gpu_matrix *const *ms, float *const *ys, uint32_t count,
                         qwen_gpu_q8 x, uint32_t n, bool *done);

/** out (rows x cols, row-major float32) = the decoded matrix (gpu_gemm.cu). */
int qwen_gpu_dequantize(void *stream, const qwen_gpu_matrix *m, float *out);

/**
 * A BLAS handle bound to `stream`, using `workspace` (from the host's budget)
 * as its scratch. Built for HIP, *blas is NULL and qwen_gpu_gemm() falls back
 * to qwen_gpu_matmul() (gpu_gemm.cu).
 */
int qwen_gpu_blas_create(void **blas, void *stream, void *workspace, size_t workspace_bytes);
void qwen_gpu_blas_destroy(void *blas);

/**
 * What qwen_gpu_matmul() computes, for many vectors: decodes `m` into
 * `weights` (rows x cols) and multiplies through the BLAS — float32 SGEMM
 * without TF32 when `bf16` is 0; else weights and x (converted into
 * `activations`, n x cols) in bfloat16 on the tensor cores, summed in float32.
 */
int qwen_gpu_gemm(void *blas, void *stream, const qwen_gpu_matrix *m, int bf16, void *weights, void *activations,
                  const float *x, uint32_t n, float *y, int accumulate);

/** y[r] = x[r] / rms(x[r]) * weight for n rows of `cols` (gpu_norm.cu). */
int qwen_gpu_rms_norm(void *stream, const float *x, const float *weight, uint32_t n, uint32_t cols, float eps,
                      float *y);
/** qwen_gpu_rms_norm(), also writing y as int8 blocks into q8 (cols a multiple of 32). */
int qwen_gpu_rms_norm_q8(void *stream, const float *x, const float *weight, uint32_t n, uint32_t cols, float eps,
                         float *y, qwen_gpu_q8 q8);

/**
 * Per row: per-head RMSNorm (q_norm / k_norm) and NEOX RoPE of q (in place)
 * and k, then k and v into the row's cache at its position in `layer`
 * (gpu_norm.cu). inv_freq has head_dim / 2 entries.
 */
int qwen_gpu_qk_norm_rope_store(void *stream, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows,
                                uint32_t n, float *q, const float *k, const float *v, const float *q_norm,
                                const float *k_norm, const float *inv_freq);

/**
 * Causal attention of each row's query heads over its cache positions 0..pos,
 * split into `splits` parts per (row, head) whose partial softmax states land
 * in `partials` (n * n_head * splits * (head_dim + 2) floats) and are then
 * merged into out (n x n_head * head_dim); with q8 (not NULL; head_dim a
 * multiple of 32) out also as int8 blocks, for qwen_gpu_matmul_q8()
 * (gpu_attention.cu).
 */
int qwen_gpu_attention(void *stream, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows, uint32_t n,
                       const float *q, uint32_t splits, float *partials, float *out, const qwen_gpu_q8 *q8);

/** True when qwen_gpu_attention_prefill() has a kernel for this shape in this build
 * (NVIDIA tensor cores; head_dim 64 or 128) (gpu_attention_prefill.cu). */
int qwen_gpu_attention_prefill_supported(const qwen_gpu_dims *dims);

/**
 * What qwen_gpu_attention() computes, for one prefill chunk, on the tensor
 * cores (flash attention): rows[0..n) are n consecutive positions of one
 * history (same kv and capacity, pos = rows[0].pos + i) whose K/V
 * qwen_gpu_qk_norm_rope_store() has written. Q, K and V are rounded to
 * bfloat16 for the products; softmax and sums stay float32. q and out are
 * n x n_head * head_dim. Returns 1 where qwen_gpu_attention_prefill_supported()
 * says no (gpu_attention_prefill.cu).
 */
int qwen_gpu_attention_prefill(void *stream, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows,
                               uint32_t n, const float *q, float *out);

/** gate[i] = silu(gate[i]) * up[i] for i < count (gpu_norm.cu). */
int qwen_gpu_swiglu(void *stream, float *gate, const float *up, size_t count);
/** qwen_gpu_swiglu() over n rows of `cols`, also writing the result as int8 blocks into q8. */
int qwen_gpu_swiglu_q8(void *stream, float *gate, const float *up, uint32_t n, uint32_t cols, qwen_gpu_q8 q8);

/** tokens[r] = argmax of logits row r (lowest id on ties; NaN never wins) (gpu_sample.cu). */
int qwen_gpu_argmax(void *stream, const float *logits, uint32_t n, uint32_t n_vocab, int32_t *tokens);

/**
 * Per-row sampling settings for qwen_gpu_sample(), in device memory.
 * `counter` is the session's position: the draw for a position depends only
 * on (seed, counter), so batching and graph replay never change a result.
 */
typedef struct qwen_gpu_sampling {
    float temperature;   /* 0 = argmax */
    int32_t top_k;       /* 0 = off */
    float top_p;         /* 1 = off */
    float min_p;         /* 0 = off */
    uint64_t seed;
    uint64_t counter;
} qwen_gpu_sampling;

/**
 * Per row r: sampling.h's order without penalties — top-k, softmax with
 * temperature, top-p, min-p — then a draw with a uniform number hashed from
 * (seed, counter); temperature 0 is argmax (gpu_sample.cu). Cuts are value
 * thresholds, so tokens tied with the last kept value are all kept.
 */
int qwen_gpu_sample(void *stream, const float *logits, uint32_t n, uint32_t n_vocab,
                    const qwen_gpu_sampling *sampling, int32_t *tokens);

#ifdef __cplusplus
}
#endif

#endif /* QWEN_GPU_KERNELS_H */

/* qwen35_gpu/kernels.h — the qwen35-only kernels as seen from C.
 *
 * What qwen's Qwen3 kernels (../gpu/gpu_kernels.h) do not cover: the Gated
 * DeltaNet mixer (causal conv, q/k L2 norms, beta and decay, the delta rule,
 * the gated output norm) and the parts of the gated full attention that
 * differ from Qwen3's (the query/gate split, partial NEOX RoPE, the sigmoid
 * output gate). Written once in the CUDA dialect (gufo/ext/experimental/gpu.h),
 * compiled by nvcc or hipcc; every launcher enqueues on `stream` and returns
 * at once (1 when the launch was refused: the message is in
 * qwen_gpu_last_error()). Same formulas and order of operations as the CPU
 * core (../qwen35/forward.h), in float32.
 *
 * A step is `n_seq` sequences of `rows_per_seq` consecutive rows each, row r
 * of the step being row r % rows_per_seq of sequence r / rows_per_seq: a
 * prefill chunk is one sequence of n rows, a decode step n sequences of one
 * row. The recurrent kernels read each sequence's state through `seqs`, a
 * device array, so one captured decode graph serves every batch of that size.
 */
#ifndef QWEN35_GPU_KERNELS_H
#define QWEN35_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../gpu/gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest Gated DeltaNet head the delta-rule kernel holds in registers
 * (one thread per value column, the whole key column of the state). */
#define QWEN35_GPU_MAX_GDN_HEAD 128u
/* Most conv taps the conv kernel keeps in its window (the CPU core's bound too). */
#define QWEN35_GPU_MAX_CONV_KERNEL 16u

/** Where a sequence's recurrent state lives, in device memory. */
typedef struct qwen35_gpu_seq {
    float *conv;  /* [n_gdn][kernel - 1][conv_dim]: the last kernel-1 conv inputs, oldest first */
    float *delta; /* [n_gdn][Hv][dk][dv]: each value head's state, row a for key dim a */
} qwen35_gpu_seq;

/** The Gated DeltaNet shape the kernels need. */
typedef struct qwen35_gpu_gdn_dims {
    uint32_t conv_dim;  /* 2 * Hk * dk + Hv * dv: channels of [q | k | v] */
    uint32_t kernel;    /* conv taps */
    uint32_t head_dim;  /* dk = dv */
    uint32_t k_heads;   /* Hk */
    uint32_t v_heads;   /* Hv; value head h reads key head h % Hk (the converter's tiled order) */
    float rms_eps;
} qwen35_gpu_gdn_dims;

/** Sets `count` floats of device memory to zero. */
int qwen35_gpu_zero(void *stream, float *x, size_t count);

/**
 * Causal depthwise conv1d + SiLU of block `gdn`: out[r][c] = silu(sum_j
 * taps[c][j] * window[j]) over the channel's last kernel-1 inputs (from the
 * sequence's state) and this row's mix[r][c]; the state then holds the
 * newest kernel-1 inputs. taps: [conv_dim][kernel].
 */
int qwen35_gpu_conv_silu(void *stream, const qwen35_gpu_gdn_dims *dims, const qwen35_gpu_seq *seqs, uint32_t gdn,
                         uint32_t n_seq, uint32_t rows_per_seq, const float *taps, const float *mix, float *out);

/**
 * Per row: the Hk query and Hk key heads of qkv (the conv output, rows of
 * conv_dim) L2-normalised in place (x / sqrt(sum x^2 + 1e-6)), queries also
 * scaled by 1/sqrt(dk); per value head h, beta = sigmoid(b) and
 * g = ssm_a[h] * softplus(a + dt_bias[h]) (b, a, beta, g: rows of Hv).
 */
int qwen35_gpu_gdn_prepare(void *stream, const qwen35_gpu_gdn_dims *dims, uint32_t n, float *qkv, const float *b,
                           const float *a, const float *dt_bias, const float *ssm_a, float *beta, float *g);

/**
 * The gated delta rule of block `gdn`, recurrent form, over the rows of each
 * sequence in order: per value head h and row t, S *= exp(g); d = beta (v -
 * S^T k); S += k d^T; o = S^T q — one block per (sequence, value head, 32
 * value columns), the state in registers for the whole run (a prefill chunk's
 * rows are a loop in the kernel). out: rows of Hv * dv. dk must be a multiple
 * of 16 up to QWEN35_GPU_MAX_GDN_HEAD.
 */
int qwen35_gpu_delta_rule(void *stream, const qwen35_gpu_gdn_dims *dims, const qwen35_gpu_seq *seqs, uint32_t gdn,
                          uint32_t n_seq, uint32_t rows_per_seq, const float *qkv, const float *g, const float *beta,
                          float *out);

/** Per row and value head: o = RMSNorm(o) * weight * silu(z), in place (o, z: rows of Hv * dv). */
int qwen35_gpu_gated_norm(void *stream, const qwen35_gpu_gdn_dims *dims, uint32_t n, float *o, const float *z,
                          const float *weight);

/**
 * The gated attention's inputs, per row (qwen_gpu_row: cache, position):
 * query head h is q_full[r][h][0..hd) (its gate follows, [hd..2hd)),
 * RMS-normalised with q_norm and turned by partial NEOX RoPE over the first
 * n_rot dims into q[r][h]; each key head RMS-normalised with k_norm and
 * turned likewise, and with its value written into the row's cache at its
 * position in attention slot `slot` (the layout of gpu_kernels.h's
 * qwen_gpu_row, dims->n_layer counting the slots). inv_freq: n_rot / 2.
 */
int qwen35_gpu_attention_prepare(void *stream, const qwen_gpu_dims *dims, uint32_t slot, uint32_t n_rot,
                                 const qwen_gpu_row *rows, uint32_t n, const float *q_full, const float *k,
                                 const float *v, const float *q_norm, const float *k_norm, const float *inv_freq,
                                 float *q);

/** att[r][h][i] *= sigmoid(q_full[r][h][hd + i]): the output gate. */
int qwen35_gpu_attention_gate(void *stream, const qwen_gpu_dims *dims, uint32_t n, const float *q_full, float *att);

/** Loads this file's kernels now (before a graph capture). 0 on success. */
int qwen35_gpu_preload(void);

#ifdef __cplusplus
}
#endif

#endif /* QWEN35_GPU_KERNELS_H */

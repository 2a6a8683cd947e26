/* gufo/ext/experimental/qmatmul.h — quantized matrix products shared by extensions.
 *
 * EXPERIMENTAL: no compatibility promise.
 *
 * Weights stay in their GGUF block format (one row = `cols` elements of
 * `type`, rows contiguous); activations are float32. These are the CPU
 * reference implementations; they are what GPU kernels and the fast CPU
 * kernels (experimental/cpu_kernels.h, since 0.1.14) are tested against.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_QMATMUL_H
#define GUFO_EXT_EXPERIMENTAL_QMATMUL_H

#include <gufo/ext/common.h>
#include <gufo/ext/tensor_types.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/**
 * y[r] = dot(row r of W, x) for r in [row_begin, row_end). `cols` must be a
 * multiple of the type's block size. Supports F32, F16, BF16, Q4_0, Q8_0,
 * Q4_K, Q5_K, Q6_K. Callers split rows across their own threads.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_x_qmatvec(gufo_tensor_type type, const void *weights, uint64_t cols,
                                        uint64_t row_begin, uint64_t row_end, const float *x, float *y);

/**
 * Y[n][r] = dot(row r of W, X[n]) for `n_vectors` activation vectors laid out
 * one after another (X is n_vectors x cols, Y is n_vectors x rows, row-major),
 * rows in [row_begin, row_end). Dequantizes each weight row once and reuses it
 * across the vectors (the batched-decode and prefill shape).
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_x_qmatmul(gufo_tensor_type type, const void *weights, uint64_t cols, uint64_t rows,
                                        uint64_t row_begin, uint64_t row_end, const float *x, uint64_t n_vectors,
                                        float *y);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_QMATMUL_H */

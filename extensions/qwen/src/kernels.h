/* kernels.h — the CPU inner loops of the matrix products.
 *
 * Two pieces: decoding a weight row from its GGUF block format into floats,
 * and dot products of decoded rows with activation vectors. The runtime's
 * gufo_tensor_dequantize / gufo_x_qmatmul are portable references compiled
 * for the baseline ISA (0.5-3 ns per weight here); a decode step of a 0.6B
 * model reads 600M weights, so these loops decide the speed. On x86-64 CPUs
 * with AVX2+FMA+F16C (checked once at run time) the hot types — F32, F16,
 * BF16, Q8_0, Q4_K, Q6_K — use hand-written AVX2 paths; everything else, and
 * every other CPU, uses the runtime's decoder and plain C dots.
 *
 * Decoded values equal the runtime's up to the rounding of d * scale * q
 * (the FMA form rounds once), which the quantized-vs-dequantized tests bound.
 */
#ifndef QWEN_KERNELS_H
#define QWEN_KERNELS_H

#include <gufo/ext/api.h>

/** Decodes `n` elements (a whole number of blocks) of `type` at `src` into `dst`. */
gufo_status qwen_decode_row(gufo_tensor_type type, const void *src, float *dst, uint64_t n);

/**
 * y[v * y_stride + r] = dot(w + r * cols, x + v * cols) for r < n_rows,
 * v < n_vec; cols is a multiple of 8.
 */
void qwen_dot_rows(const float *w, size_t n_rows, size_t cols, const float *x, size_t n_vec, float *y,
                   size_t y_stride);

/** dot(a, b) over n floats (any n), for attention scores. */
float qwen_dot(const float *a, const float *b, size_t n);

/** y += alpha * x over n floats (any n), for attention's weighted sum of values. */
void qwen_axpy(float alpha, const float *x, float *y, size_t n);

/** "avx2" or "generic": which paths this CPU runs (for logs and benchmarks). */
const char *qwen_kernels_name(void);

#endif /* QWEN_KERNELS_H */

/* qwen35/conv.h — the causal depthwise convolution of a Gated DeltaNet block, with its rolling state.
 *
 * Each channel c of the q/k/v projection is convolved over time with its own
 * `kernel` taps (ssm_conv1d row c; the last tap multiplies the newest input),
 * then passed through SiLU:
 *
 *     y[t][c] = silu(sum_{j<kernel} taps[c][j] * in[t - (kernel-1) + j][c])
 *
 * where the inputs before this call's first row come from `state`: the last
 * kernel-1 inputs the sequence has seen (zeros for a fresh sequence), oldest
 * first. The call leaves the last kernel-1 inputs in `state`, so a prefill
 * followed by single-row decodes gives the same outputs as one long prefill
 * (same bits: each output is the same sum in the same order).
 */
#ifndef QWEN35_CONV_H
#define QWEN35_CONV_H

#include <stddef.h>
#include <stdint.h>

/**
 * Channels [c_begin, c_end) of `n_rows` rows: x row t at x + t * x_stride,
 * y row t at y + t * y_stride (y must not alias x), taps [channels][kernel],
 * state [kernel-1][channels]. Channel ranges are independent, so threads may
 * split them.
 */
void qwen35_conv_silu(const float *taps, uint32_t channels, uint32_t kernel, float *state, const float *x,
                      size_t x_stride, float *y, size_t y_stride, uint32_t n_rows, uint32_t c_begin, uint32_t c_end);

#endif /* QWEN35_CONV_H */

/* qwen35/conv.c — causal depthwise conv1d + SiLU with a rolling state (conv.h). */
#include "conv.h"

#include <math.h>

#include "hparams.h"

void qwen35_conv_silu(const float *taps, uint32_t channels, uint32_t kernel, float *state, const float *x,
                      size_t x_stride, float *y, size_t y_stride, uint32_t n_rows, uint32_t c_begin, uint32_t c_end)
{
    const uint32_t hist = kernel - 1;
    for (uint32_t c = c_begin; c < c_end; c++) {
        const float *w = taps + (size_t)c * kernel;
        /* The channel's window: its history then this call's inputs. */
        float window[QWEN35_MAX_CONV_KERNEL];
        for (uint32_t j = 0; j < hist; j++)
            window[j] = state[(size_t)j * channels + c];
        for (uint32_t t = 0; t < n_rows; t++) {
            window[hist] = x[(size_t)t * x_stride + c];
            float acc = 0.0f;
            for (uint32_t j = 0; j < kernel; j++)
                acc += w[j] * window[j];
            y[(size_t)t * y_stride + c] = acc / (1.0f + expf(-acc));
            for (uint32_t j = 0; j < hist; j++)
                window[j] = window[j + 1];
        }
        for (uint32_t j = 0; j < hist; j++)
            state[(size_t)j * channels + c] = window[j];
    }
}

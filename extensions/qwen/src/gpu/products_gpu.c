/* products_gpu.c — several products of one int8 input in as few launches as
 * the kernels allow (gpu_kernels.h, qwen_gpu_products_q8). */
#include "gpu_kernels.h"

int qwen_gpu_products_q8(void *stream, const qwen_gpu_matrix *const *ms, float *const *ys, uint32_t count,
                         qwen_gpu_q8 x, uint32_t n, bool *done)
{
    int bad = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (done[i] || !qwen_gpu_matmul_q8_supported(ms[i]->type))
            continue;
        const qwen_gpu_matrix *group[QWEN_GPU_MAX_FUSED];
        float *group_y[QWEN_GPU_MAX_FUSED];
        uint32_t g = 0;
        for (uint32_t j = i; j < count && g < QWEN_GPU_MAX_FUSED; j++)
            if (!done[j] && ms[j]->type == ms[i]->type && ms[j]->cols == ms[i]->cols) {
                group[g] = ms[j];
                group_y[g++] = ys[j];
                done[j] = true;
            }
        bad |= qwen_gpu_matmul_q8_fused(stream, group, group_y, g, x, n);
    }
    return bad;
}

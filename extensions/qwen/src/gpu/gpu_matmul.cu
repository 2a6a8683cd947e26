/* gpu_matmul.cu — quantized matrix products and embedding lookup (gpu_kernels.h).
 *
 * One warp per output row: it walks the row in 256-element groups, decodes
 * its eight elements per lane once (gpu_dequant.cuh) and multiplies them with
 * up to NB activation vectors, so a decode step over B sessions reads each
 * weight once per NB sessions. Prefill runs the same kernel with the tokens
 * as vectors, NB at a time across grid.y. Sums are float32 throughout.
 */
#include "gpu_dequant.cuh"

#define QG_ROWS_PER_BLOCK 4 /* warps per block, one output row each */

template <int TYPE, int NB>
__global__ void qg_matmul_kernel(qwen_gpu_matrix m, const float *__restrict__ x, uint32_t n, float *__restrict__ y,
                                 int accumulate)
{
    const int lane = threadIdx.x % GUFO_GPU_WARP_SIZE;
    const uint32_t r = blockIdx.x * (blockDim.x / GUFO_GPU_WARP_SIZE) + threadIdx.x / GUFO_GPU_WARP_SIZE;
    if (r >= m.rows) return;
    const uint32_t v0 = blockIdx.y * NB;
    const uint32_t nv = n - v0 < (uint32_t)NB ? n - v0 : (uint32_t)NB;
    const uint8_t *row = static_cast<const uint8_t *>(m.data) + (size_t)r * m.row_bytes;
    const uint32_t groups = (m.cols + 255u) / 256u;

    float acc[NB];
#pragma unroll
    for (int v = 0; v < NB; v++) acc[v] = 0.0f;
    /* HIP's 64-wide wavefronts take two groups per pass (lanes 32..63 the second). */
    const int sub_lane = lane % 32, sub_group = lane / 32, group_step = GUFO_GPU_WARP_SIZE / 32;
    for (uint32_t g = sub_group; g < groups; g += group_step) {
        float w[8];
        qg_dequant8<TYPE>(row, m.cols, g, sub_lane, w);
#pragma unroll
        for (int v = 0; v < NB; v++) {
            if ((uint32_t)v >= nv) continue;
            const float *xv = x + (size_t)(v0 + v) * m.cols;
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const uint32_t e = qg_element<TYPE>(g, sub_lane, i);
                if (e < m.cols) s += w[i] * xv[e];
            }
            acc[v] += s;
        }
    }
#pragma unroll
    for (int v = 0; v < NB; v++) {
        if ((uint32_t)v >= nv) continue;
        const float total = gufo_gpu_warp_sum(acc[v]);
        if (lane == 0) {
            float *out = y + (size_t)(v0 + v) * m.rows + r;
            *out = accumulate ? *out + total : total;
        }
    }
}

template <int TYPE>
__global__ void qg_embed_kernel(qwen_gpu_matrix m, const qwen_gpu_row *__restrict__ rows, float *__restrict__ x)
{
    const int lane = threadIdx.x % GUFO_GPU_WARP_SIZE;
    if (lane >= 32) return; /* one 32-lane pass is enough for a lookup */
    const uint32_t r = blockIdx.x;
    const uint8_t *row = static_cast<const uint8_t *>(m.data) + (size_t)rows[r].token * m.row_bytes;
    float *out = x + (size_t)r * m.cols;
    for (uint32_t g = 0; g < (m.cols + 255u) / 256u; g++) {
        float w[8];
        qg_dequant8<TYPE>(row, m.cols, g, lane, w);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t e = qg_element<TYPE>(g, lane, i);
            if (e < m.cols) out[e] = w[i];
        }
    }
}

template <int TYPE, int NB>
static void launch_matmul(const qwen_gpu_matrix *m, const float *x, uint32_t n, float *y, int accumulate,
                          gufo_gpu_stream stream)
{
    dim3 grid((m->rows + QG_ROWS_PER_BLOCK - 1) / QG_ROWS_PER_BLOCK, (n + NB - 1) / NB);
    qg_matmul_kernel<TYPE, NB><<<grid, QG_ROWS_PER_BLOCK * GUFO_GPU_WARP_SIZE, 0, stream>>>(*m, x, n, y, accumulate);
}

/* Few vectors (decode of a small batch) get a kernel sized to them, so no
 * lane carries accumulators for vectors that do not exist. */
template <int TYPE>
static void dispatch_matmul(const qwen_gpu_matrix *m, const float *x, uint32_t n, float *y, int accumulate,
                            gufo_gpu_stream stream)
{
    if (n == 1)
        launch_matmul<TYPE, 1>(m, x, n, y, accumulate, stream);
    else if (n == 2)
        launch_matmul<TYPE, 2>(m, x, n, y, accumulate, stream);
    else if (n <= 4)
        launch_matmul<TYPE, 4>(m, x, n, y, accumulate, stream);
    else
        launch_matmul<TYPE, 8>(m, x, n, y, accumulate, stream);
}

extern "C" int qwen_gpu_matmul(void *stream, const qwen_gpu_matrix *m, const float *x, uint32_t n, float *y,
                               int accumulate)
{
    if (n == 0) return 0;
    switch (m->type) {
    case QWEN_GPU_F32: dispatch_matmul<QWEN_GPU_F32>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    case QWEN_GPU_F16: dispatch_matmul<QWEN_GPU_F16>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    case QWEN_GPU_BF16: dispatch_matmul<QWEN_GPU_BF16>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    case QWEN_GPU_Q8_0: dispatch_matmul<QWEN_GPU_Q8_0>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    case QWEN_GPU_Q4_K: dispatch_matmul<QWEN_GPU_Q4_K>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    case QWEN_GPU_Q6_K: dispatch_matmul<QWEN_GPU_Q6_K>(m, x, n, y, accumulate, QG_STREAM(stream)); break;
    default: return 1;
    }
    return qwen_gpu_launch_check("qwen_gpu_matmul");
}

extern "C" int qwen_gpu_embed(void *stream, const qwen_gpu_matrix *embd, const qwen_gpu_row *rows, uint32_t n, float *x)
{
    if (n == 0) return 0;
    const gufo_gpu_stream s = QG_STREAM(stream);
    switch (embd->type) {
    case QWEN_GPU_F32: qg_embed_kernel<QWEN_GPU_F32><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    case QWEN_GPU_F16: qg_embed_kernel<QWEN_GPU_F16><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    case QWEN_GPU_BF16: qg_embed_kernel<QWEN_GPU_BF16><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    case QWEN_GPU_Q8_0: qg_embed_kernel<QWEN_GPU_Q8_0><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    case QWEN_GPU_Q4_K: qg_embed_kernel<QWEN_GPU_Q4_K><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    case QWEN_GPU_Q6_K: qg_embed_kernel<QWEN_GPU_Q6_K><<<n, GUFO_GPU_WARP_SIZE, 0, s>>>(*embd, rows, x); break;
    default: return 1;
    }
    return qwen_gpu_launch_check("qwen_gpu_embed");
}

template <int TYPE>
static int preload_type(void)
{
    return qg_preload(qg_matmul_kernel<TYPE, 1>) | qg_preload(qg_matmul_kernel<TYPE, 2>) |
           qg_preload(qg_matmul_kernel<TYPE, 4>) | qg_preload(qg_matmul_kernel<TYPE, 8>) |
           qg_preload(qg_embed_kernel<TYPE>);
}

int qg_preload_matmul(void)
{
    return preload_type<QWEN_GPU_F32>() | preload_type<QWEN_GPU_F16>() | preload_type<QWEN_GPU_BF16>() |
           preload_type<QWEN_GPU_Q8_0>() | preload_type<QWEN_GPU_Q4_K>() | preload_type<QWEN_GPU_Q6_K>();
}

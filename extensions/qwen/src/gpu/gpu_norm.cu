/* gpu_norm.cu — RMSNorm, the fused per-head QK-norm + RoPE + cache store, and
 * SwiGLU (gpu_kernels.h). Same formulas and rounding order as forward_cpu.c:
 * y = weight * (x * scale), NEOX pairs (i, i + d/2), angle = pos * inv_freq[i]
 * with accurate cosf/sinf (long contexts make the angles large). */
#include "gpu_common.cuh"

#define QG_NORM_THREADS 256

__global__ void qg_rms_norm_kernel(const float *__restrict__ x, const float *__restrict__ weight, uint32_t cols,
                                   float eps, float *__restrict__ y)
{
    __shared__ float scratch[QG_NORM_THREADS / 32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < cols; i += blockDim.x) sum += xr[i] * xr[i];
    sum = qg_block_sum(sum, scratch);
    const float scale = 1.0f / sqrtf(sum / (float)cols + eps);
    for (uint32_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = __fmul_rn(weight[i], __fmul_rn(xr[i], scale));
}

extern "C" int qwen_gpu_rms_norm(void *stream, const float *x, const float *weight, uint32_t n, uint32_t cols,
                                 float eps, float *y)
{
    if (n == 0) return 0;
    qg_rms_norm_kernel<<<n, QG_NORM_THREADS, 0, QG_STREAM(stream)>>>(x, weight, cols, eps, y);
    return qwen_gpu_launch_check("qwen_gpu_rms_norm");
}

/* Block (row, head): heads 0..n_head-1 are query heads (normalised and
 * rotated in place); the next n_head_kv are key heads, written with their
 * value heads into the cache. One thread per rotation pair. */
__global__ void qg_qk_norm_rope_store_kernel(qwen_gpu_dims dims, uint32_t layer, const qwen_gpu_row *__restrict__ rows,
                                             float *__restrict__ q, const float *__restrict__ k,
                                             const float *__restrict__ v, const float *__restrict__ q_norm,
                                             const float *__restrict__ k_norm, const float *__restrict__ inv_freq)
{
    __shared__ float scratch[QWEN_GPU_MAX_HEAD_DIM / 2 / 32 + 1];
    __shared__ float head[QWEN_GPU_MAX_HEAD_DIM];
    const uint32_t r = blockIdx.x, h = blockIdx.y, d = dims.head_dim, half = d / 2;
    const qwen_gpu_row row = rows[r];
    const bool is_query = h < dims.n_head;
    const uint32_t kvh = h - dims.n_head;
    const uint32_t width = dims.n_head_kv * d;
    const float *src = is_query ? q + ((size_t)r * dims.n_head + h) * d : k + (size_t)r * width + (size_t)kvh * d;
    const float *w = is_query ? q_norm : k_norm;
    const uint32_t i = threadIdx.x;

    float sum = 0.0f;
    if (i < half) {
        const float a = src[i], b = src[i + half];
        head[i] = a;
        head[i + half] = b;
        sum = a * a + b * b;
    }
    sum = qg_block_sum(sum, scratch);
    const float scale = 1.0f / sqrtf(sum / (float)d + dims.rms_eps);

    float *layer_base = row.kv + (size_t)layer * row.capacity * (2u * width);
    float *dst = is_query ? q + ((size_t)r * dims.n_head + h) * d
                          : layer_base + (size_t)row.pos * width + (size_t)kvh * d;
    if (i < half) {
        const float a = __fmul_rn(w[i], __fmul_rn(head[i], scale));
        const float b = __fmul_rn(w[i + half], __fmul_rn(head[i + half], scale));
        const float angle = __fmul_rn((float)row.pos, inv_freq[i]);
        const float c = cosf(angle), s = sinf(angle);
        dst[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
        dst[i + half] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
        if (!is_query) {
            float *vdst = layer_base + (size_t)row.capacity * width + (size_t)row.pos * width + (size_t)kvh * d;
            const float *vsrc = v + (size_t)r * width + (size_t)kvh * d;
            vdst[i] = vsrc[i];
            vdst[i + half] = vsrc[i + half];
        }
    }
}

extern "C" int qwen_gpu_qk_norm_rope_store(void *stream, const qwen_gpu_dims *dims, uint32_t layer,
                                           const qwen_gpu_row *rows, uint32_t n, float *q, const float *k,
                                           const float *v, const float *q_norm, const float *k_norm,
                                           const float *inv_freq)
{
    if (n == 0) return 0;
    if (dims->head_dim > QWEN_GPU_MAX_HEAD_DIM || dims->head_dim % 2) return 1;
    dim3 grid(n, dims->n_head + dims->n_head_kv);
    /* Whole warps, so the block reduction sees every lane. */
    const uint32_t threads = (dims->head_dim / 2 + 31) / 32 * 32;
    qg_qk_norm_rope_store_kernel<<<grid, threads, 0, QG_STREAM(stream)>>>(*dims, layer, rows, q, k, v, q_norm, k_norm,
                                                                        inv_freq);
    return qwen_gpu_launch_check("qwen_gpu_qk_norm_rope_store");
}

__global__ void qg_swiglu_kernel(float *__restrict__ gate, const float *__restrict__ up, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const float g = gate[i];
        gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
    }
}

extern "C" int qwen_gpu_swiglu(void *stream, float *gate, const float *up, size_t count)
{
    if (count == 0) return 0;
    size_t blocks = (count + 255) / 256;
    if (blocks > 65535u * 8u) blocks = 65535u * 8u;
    qg_swiglu_kernel<<<(unsigned)blocks, 256, 0, QG_STREAM(stream)>>>(gate, up, count);
    return qwen_gpu_launch_check("qwen_gpu_swiglu");
}

int qg_preload_norm(void)
{
    return qg_preload(qg_rms_norm_kernel) | qg_preload(qg_qk_norm_rope_store_kernel) | qg_preload(qg_swiglu_kernel);
}

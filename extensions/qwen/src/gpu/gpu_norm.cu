/* gpu_norm.cu — RMSNorm, the fused per-head QK-norm + RoPE + cache store, and
 * SwiGLU (gpu_kernels.h). Same formulas and rounding order as forward_cpu.c:
 * y = weight * (x * scale), NEOX pairs (i, i + d/2), angle = pos * inv_freq[i]
 * with accurate cosf/sinf (long contexts make the angles large). */
#include "gpu_q8.cuh"

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

/* The decode steps' norm, which also writes the row as int8 blocks. A
 * decode step has one row per session, so one block must do a whole row
 * fast: up to 1024 threads of four values each (one pass for 4096), eight
 * lanes per int8 block (qg_q8_store4). Measured on the H200 (4096 values,
 * one row): 12.3 us with 256 threads of one value each. */
#define QG_NORM_Q8_MAX_THREADS 1024u

__global__ void qg_rms_norm_q8_kernel(const float *__restrict__ x, const float *__restrict__ weight, uint32_t cols,
                                      float eps, float *__restrict__ y, qwen_gpu_q8 q8)
{
    __shared__ float scratch[QG_NORM_Q8_MAX_THREADS / 32];
    const float4 *xr = reinterpret_cast<const float4 *>(x + (size_t)blockIdx.x * cols);
    const float4 *w4 = reinterpret_cast<const float4 *>(weight);
    float4 *yr = reinterpret_cast<float4 *>(y + (size_t)blockIdx.x * cols);
    const uint32_t quads = cols / 4u;
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < quads; i += blockDim.x) {
        const float4 a = xr[i];
        sum += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
    }
    sum = qg_block_sum(sum, scratch);
    const float scale = 1.0f / sqrtf(sum / (float)cols + eps);
    /* cols is a multiple of 32, so the bound is the same for the eight lanes of a block. */
    for (uint32_t i = threadIdx.x; i < quads; i += blockDim.x) {
        const float4 a = xr[i], w = w4[i];
        const float v[4] = {__fmul_rn(w.x, __fmul_rn(a.x, scale)), __fmul_rn(w.y, __fmul_rn(a.y, scale)),
                            __fmul_rn(w.z, __fmul_rn(a.z, scale)), __fmul_rn(w.w, __fmul_rn(a.w, scale))};
        yr[i] = make_float4(v[0], v[1], v[2], v[3]);
        qg_q8_store4(v, blockIdx.x, 4u * i, cols, q8);
    }
}

extern "C" int qwen_gpu_rms_norm_q8(void *stream, const float *x, const float *weight, uint32_t n, uint32_t cols,
                                    float eps, float *y, qwen_gpu_q8 q8)
{
    if (n == 0) return 0;
    if (cols % 32u) return 1;
    if (((uintptr_t)x | (uintptr_t)weight | (uintptr_t)y) % 16u) /* no float4 access: norm, then quantize */
        return qwen_gpu_rms_norm(stream, x, weight, n, cols, eps, y) || qwen_gpu_quantize_q8(stream, y, n, cols, q8);
    /* Whole warps, no more than one pass needs (and at least one warp per 128 values). */
    uint32_t threads = (cols / 4u + 31u) / 32u * 32u;
    if (threads > QG_NORM_Q8_MAX_THREADS) threads = QG_NORM_Q8_MAX_THREADS;
    qg_rms_norm_q8_kernel<<<n, threads, 0, QG_STREAM(stream)>>>(x, weight, cols, eps, y, q8);
    return qwen_gpu_launch_check("qwen_gpu_rms_norm_q8");
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

/* Grid-stride over count = rows x cols; with Q8 (cols a multiple of 32,
 * blocks of 256) each 32-lane group holds one whole int8 block per pass. */
template <bool Q8>
__global__ void qg_swiglu_kernel(float *__restrict__ gate, const float *__restrict__ up, size_t count, uint32_t cols,
                                 qwen_gpu_q8 q8)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const float g = gate[i];
        const float v = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
        gate[i] = v;
        if (Q8) qg_q8_store(v, (uint32_t)(i / cols), (uint32_t)(i % cols), cols, q8);
    }
}

static unsigned swiglu_blocks(size_t count)
{
    size_t blocks = (count + 255) / 256;
    return (unsigned)(blocks > 65535u * 8u ? 65535u * 8u : blocks);
}

extern "C" int qwen_gpu_swiglu(void *stream, float *gate, const float *up, size_t count)
{
    if (count == 0) return 0;
    qg_swiglu_kernel<false><<<swiglu_blocks(count), 256, 0, QG_STREAM(stream)>>>(gate, up, count, 1u, qwen_gpu_q8{});
    return qwen_gpu_launch_check("qwen_gpu_swiglu");
}

extern "C" int qwen_gpu_swiglu_q8(void *stream, float *gate, const float *up, uint32_t n, uint32_t cols, qwen_gpu_q8 q8)
{
    const size_t count = (size_t)n * cols;
    if (count == 0) return 0;
    if (cols % 32u) return 1;
    qg_swiglu_kernel<true><<<swiglu_blocks(count), 256, 0, QG_STREAM(stream)>>>(gate, up, count, cols, q8);
    return qwen_gpu_launch_check("qwen_gpu_swiglu_q8");
}

/* Grid-stride over n x cols values, one int8 block per 32-lane group and pass. */
__global__ void qg_quantize_q8_kernel(const float *__restrict__ x, size_t count, uint32_t cols, qwen_gpu_q8 out)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        qg_q8_store(x[i], (uint32_t)(i / cols), (uint32_t)(i % cols), cols, out);
}

extern "C" int qwen_gpu_quantize_q8(void *stream, const float *x, uint32_t n, uint32_t cols, qwen_gpu_q8 out)
{
    const size_t count = (size_t)n * cols;
    if (count == 0) return 0;
    if (cols % 32u) return 1;
    qg_quantize_q8_kernel<<<swiglu_blocks(count), 256, 0, QG_STREAM(stream)>>>(x, count, cols, out);
    return qwen_gpu_launch_check("qwen_gpu_quantize_q8");
}

int qg_preload_norm(void)
{
    return qg_preload(qg_rms_norm_kernel) | qg_preload(qg_rms_norm_q8_kernel) |
           qg_preload(qg_qk_norm_rope_store_kernel) | qg_preload(qg_swiglu_kernel<false>) |
           qg_preload(qg_swiglu_kernel<true>) | qg_preload(qg_quantize_q8_kernel);
}

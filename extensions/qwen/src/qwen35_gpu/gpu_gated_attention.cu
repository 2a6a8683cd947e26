/* qwen35_gpu/gpu_gated_attention.cu — what the gated full attention adds to
 * Qwen3's (kernels.h): the query/gate split with per-head norms and partial
 * NEOX RoPE before ../gpu/gpu_attention.cu's kernel, the sigmoid output gate
 * after it. Formulas and order as ../qwen35/attention.c. */
#include "../gpu/gpu_common.cuh"
#include "kernels.h"

#define Q35_ATT_THREADS 128

/* Block (row, head): heads 0..H-1 the queries, H..H+Hkv-1 the keys (with their values). */
__global__ void q35_attention_prepare_kernel(qwen_gpu_dims dims, uint32_t slot, uint32_t n_rot,
                                             const qwen_gpu_row *rows, const float *__restrict__ q_full,
                                             const float *__restrict__ k, const float *__restrict__ v,
                                             const float *__restrict__ q_norm, const float *__restrict__ k_norm,
                                             const float *__restrict__ inv_freq, float *__restrict__ q)
{
    __shared__ float scratch[Q35_ATT_THREADS / 32];
    __shared__ float normed[QWEN_GPU_MAX_HEAD_DIM];
    const uint32_t r = blockIdx.x, head = blockIdx.y, hd = dims.head_dim;
    const uint32_t H = dims.n_head, Hkv = dims.n_head_kv;
    const qwen_gpu_row row = rows[r];
    const size_t width = (size_t)Hkv * hd;
    const float *src, *weight;
    float *dst;
    if (head < H) {
        src = q_full + (size_t)r * 2 * H * hd + (size_t)head * 2 * hd;
        weight = q_norm;
        dst = q + (size_t)r * H * hd + (size_t)head * hd;
    } else {
        const uint32_t kh = head - H;
        src = k + (size_t)r * width + (size_t)kh * hd;
        weight = k_norm;
        float *keys = row.kv + (size_t)slot * row.capacity * 2 * width;
        dst = keys + (size_t)row.pos * width + (size_t)kh * hd;
        float *vdst = keys + (size_t)row.capacity * width + (size_t)row.pos * width + (size_t)kh * hd;
        const float *vsrc = v + (size_t)r * width + (size_t)kh * hd;
        for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) vdst[i] = vsrc[i];
    }
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) sum += src[i] * src[i];
    sum = qg_block_sum(sum, scratch);
    const float scale = 1.0f / sqrtf(sum / (float)hd + dims.rms_eps);
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) normed[i] = __fmul_rn(weight[i], __fmul_rn(src[i], scale));
    __syncthreads();
    const uint32_t half = n_rot / 2;
    for (uint32_t i = threadIdx.x; i < hd; i += blockDim.x) {
        if (i < n_rot) {
            const uint32_t f = i < half ? i : i - half;
            const float angle = (float)row.pos * inv_freq[f];
            const float c = cosf(angle), sn = sinf(angle);
            const float a = normed[f], b = normed[f + half];
            dst[i] = i < half ? __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, sn))
                              : __fadd_rn(__fmul_rn(a, sn), __fmul_rn(b, c));
        } else {
            dst[i] = normed[i];
        }
    }
}

extern "C" int qwen35_gpu_attention_prepare(void *stream, const qwen_gpu_dims *dims, uint32_t slot, uint32_t n_rot,
                                            const qwen_gpu_row *rows, uint32_t n, const float *q_full,
                                            const float *k, const float *v, const float *q_norm, const float *k_norm,
                                            const float *inv_freq, float *q)
{
    if (n == 0) return 0;
    if (dims->head_dim > QWEN_GPU_MAX_HEAD_DIM || n_rot > dims->head_dim || n_rot % 2) return 1;
    const dim3 grid(n, dims->n_head + dims->n_head_kv);
    q35_attention_prepare_kernel<<<grid, Q35_ATT_THREADS, 0, QG_STREAM(stream)>>>(*dims, slot, n_rot, rows, q_full, k,
                                                                                  v, q_norm, k_norm, inv_freq, q);
    return qwen_gpu_launch_check("qwen35_gpu_attention_prepare");
}

__global__ void q35_attention_gate_kernel(uint32_t H, uint32_t hd, size_t count, const float *__restrict__ q_full,
                                          float *__restrict__ att)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / ((size_t)H * hd), rest = i % ((size_t)H * hd);
        const size_t h = rest / hd, e = rest % hd;
        const float gate = q_full[r * 2 * H * hd + h * 2 * hd + hd + e];
        att[i] *= 1.0f / (1.0f + expf(-gate));
    }
}

extern "C" int qwen35_gpu_attention_gate(void *stream, const qwen_gpu_dims *dims, uint32_t n, const float *q_full,
                                         float *att)
{
    const size_t count = (size_t)n * dims->n_head * dims->head_dim;
    if (count == 0) return 0;
    size_t blocks = (count + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    q35_attention_gate_kernel<<<(unsigned)blocks, 256, 0, QG_STREAM(stream)>>>(dims->n_head, dims->head_dim, count,
                                                                              q_full, att);
    return qwen_gpu_launch_check("qwen35_gpu_attention_gate");
}

int q35_preload_attention(void)
{
    return qg_preload(q35_attention_prepare_kernel) | qg_preload(q35_attention_gate_kernel);
}

/* gpu_attention.cu — causal GQA attention over each row's cache (gpu_kernels.h).
 *
 * Flash-decoding: the positions 0..pos of one (row, query head) are cut into
 * `splits` equal parts; one block per part keeps an online softmax (running
 * max m, mass l, weighted sum of values) while its warps stride over the
 * part's positions, lanes splitting the head dimension; the warps' states are
 * merged in shared memory and written as a partial. A second kernel merges
 * the parts of each (row, head). Decode steps use many parts so a batch of one
 * still fills the GPU; prefill rows use few (each row already is a block).
 * Rows only read positions <= their own, so a prefill chunk sees its own
 * earlier tokens once qwen_gpu_qk_norm_rope_store() has written them.
 */
#include "gpu_common.cuh"

#include <math.h>

#define QG_ATT_WARPS 4
#define QG_ATT_PER_LANE (QWEN_GPU_MAX_HEAD_DIM / 32)

__global__ void qg_attention_split_kernel(qwen_gpu_dims dims, uint32_t layer, const qwen_gpu_row *__restrict__ rows,
                                          const float *__restrict__ q, uint32_t splits, float *__restrict__ partials)
{
    __shared__ float warp_m[QG_ATT_WARPS], warp_l[QG_ATT_WARPS];
    __shared__ float warp_acc[QG_ATT_WARPS][QWEN_GPU_MAX_HEAD_DIM];
    const uint32_t d = dims.head_dim;
    const uint32_t r = blockIdx.x / dims.n_head, h = blockIdx.x % dims.n_head, split = blockIdx.y;
    const uint32_t kvh = h / (dims.n_head / dims.n_head_kv);
    const uint32_t width = dims.n_head_kv * d;
    const qwen_gpu_row row = rows[r];
    const uint32_t n_pos = row.pos + 1, chunk = (n_pos + splits - 1) / splits;
    const uint32_t begin = split * chunk, end = begin + chunk < n_pos ? begin + chunk : n_pos;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    const float *layer_base = row.kv + (size_t)layer * row.capacity * (2u * width);
    const float *keys = layer_base + (size_t)kvh * d;
    const float *values = layer_base + (size_t)row.capacity * width + (size_t)kvh * d;
    const float *qh = q + ((size_t)r * dims.n_head + h) * d;
    const float scale = 1.0f / sqrtf((float)d);

    float qv[QG_ATT_PER_LANE], acc[QG_ATT_PER_LANE];
#pragma unroll
    for (int i = 0; i < QG_ATT_PER_LANE; i++) {
        const uint32_t e = (uint32_t)(lane + 32 * i);
        qv[i] = e < d ? qh[e] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (uint32_t j = begin + (uint32_t)warp; j < end; j += QG_ATT_WARPS) {
        const float *kj = keys + (size_t)j * width;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < QG_ATT_PER_LANE; i++) {
            const uint32_t e = (uint32_t)(lane + 32 * i);
            if (e < d) s += qv[i] * kj[e];
        }
        /* Always 32-lane sums here: a HIP wavefront of 64 runs two of these warps. */
        for (int mask = 16; mask > 0; mask >>= 1) s += gufo_gpu_shfl_xor(s, mask);
        s *= scale;
        const float m_new = fmaxf(m, s);
        const float correction = expf(m - m_new), p = expf(s - m_new);
        l = l * correction + p;
        const float *vj = values + (size_t)j * width;
#pragma unroll
        for (int i = 0; i < QG_ATT_PER_LANE; i++) {
            const uint32_t e = (uint32_t)(lane + 32 * i);
            if (e < d) acc[i] = acc[i] * correction + p * vj[e];
        }
        m = m_new;
    }
    if (lane == 0) {
        warp_m[warp] = m;
        warp_l[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < QG_ATT_PER_LANE; i++) {
        const uint32_t e = (uint32_t)(lane + 32 * i);
        if (e < d) warp_acc[warp][e] = acc[i];
    }
    __syncthreads();
    float *out = partials + (((size_t)r * dims.n_head + h) * splits + split) * (d + 2);
    float block_m = -INFINITY;
    for (int w = 0; w < QG_ATT_WARPS; w++) block_m = fmaxf(block_m, warp_m[w]);
    for (uint32_t e = threadIdx.x; e < d; e += blockDim.x) {
        float sum = 0.0f;
        for (int w = 0; w < QG_ATT_WARPS; w++)
            if (warp_m[w] > -INFINITY) sum += warp_acc[w][e] * expf(warp_m[w] - block_m);
        out[2 + e] = sum;
    }
    if (threadIdx.x == 0) {
        float block_l = 0.0f;
        for (int w = 0; w < QG_ATT_WARPS; w++)
            if (warp_m[w] > -INFINITY) block_l += warp_l[w] * expf(warp_m[w] - block_m);
        out[0] = block_m;
        out[1] = block_l;
    }
}

/* Block (row, head): out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M). */
__global__ void qg_attention_merge_kernel(qwen_gpu_dims dims, uint32_t splits, const float *__restrict__ partials,
                                          float *__restrict__ out)
{
    const uint32_t d = dims.head_dim;
    const float *part = partials + (size_t)blockIdx.x * splits * (d + 2);
    float big_m = -INFINITY;
    for (uint32_t s = 0; s < splits; s++) big_m = fmaxf(big_m, part[(size_t)s * (d + 2)]);
    float big_l = 0.0f;
    for (uint32_t s = 0; s < splits; s++) {
        const float ms = part[(size_t)s * (d + 2)];
        if (ms > -INFINITY) big_l += part[(size_t)s * (d + 2) + 1] * expf(ms - big_m);
    }
    const float inv = 1.0f / big_l;
    for (uint32_t e = threadIdx.x; e < d; e += blockDim.x) {
        float sum = 0.0f;
        for (uint32_t s = 0; s < splits; s++) {
            const float ms = part[(size_t)s * (d + 2)];
            if (ms > -INFINITY) sum += part[(size_t)s * (d + 2) + 2 + e] * expf(ms - big_m);
        }
        out[(size_t)blockIdx.x * d + e] = sum * inv;
    }
}

extern "C" int qwen_gpu_attention(void *stream, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows,
                                  uint32_t n, const float *q, uint32_t splits, float *partials, float *out)
{
    if (n == 0) return 0;
    if (dims->head_dim > QWEN_GPU_MAX_HEAD_DIM || splits == 0 || splits > QWEN_GPU_MAX_SPLITS) return 1;
    const gufo_gpu_stream s = QG_STREAM(stream);
    dim3 grid(n * dims->n_head, splits);
    qg_attention_split_kernel<<<grid, QG_ATT_WARPS * 32, 0, s>>>(*dims, layer, rows, q, splits, partials);
    if (qwen_gpu_launch_check("qwen_gpu_attention (parts)")) return 1;
    qg_attention_merge_kernel<<<n * dims->n_head, 128, 0, s>>>(*dims, splits, partials, out);
    return qwen_gpu_launch_check("qwen_gpu_attention (merge)");
}

int qg_preload_attention(void)
{
    return qg_preload(qg_attention_split_kernel) | qg_preload(qg_attention_merge_kernel);
}

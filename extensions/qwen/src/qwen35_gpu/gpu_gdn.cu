/* qwen35_gpu/gpu_gdn.cu — the Gated DeltaNet mixer's own kernels (kernels.h):
 * causal conv + SiLU, q/k L2 norms with beta and decay, the delta rule, the
 * gated output norm. Formulas and order as ../qwen35/conv.c, delta_rule.c and
 * forward.c's gdn_row_task / gated_norm_task. */
#include "../gpu/gpu_common.cuh"
#include "kernels.h"

#define Q35_THREADS 128

__global__ void q35_zero_kernel(float *x, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        x[i] = 0.0f;
}

extern "C" int qwen35_gpu_zero(void *stream, float *x, size_t count)
{
    if (count == 0) return 0;
    size_t blocks = (count + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    q35_zero_kernel<<<(unsigned)blocks, 256, 0, QG_STREAM(stream)>>>(x, count);
    return qwen_gpu_launch_check("qwen35_gpu_zero");
}

/* Thread per (channel, row): every output of a chunk at once, its window made
 * of the rows before it in the chunk and, for the first kernel-1 rows, of the
 * sequence's state (which q35_conv_state_kernel updates afterwards). A thread
 * walking the chunk's rows in order would wait out a memory latency per row. */
__global__ void q35_conv_silu_kernel(qwen35_gpu_gdn_dims d, const qwen35_gpu_seq *seqs, uint32_t gdn, uint32_t rps,
                                     const float *__restrict__ taps, const float *__restrict__ mix,
                                     float *__restrict__ out)
{
    const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (c >= d.conv_dim) return;
    const uint32_t hist = d.kernel - 1, s = row / rps, t = row % rps;
    const float *state = seqs[s].conv + (size_t)gdn * hist * d.conv_dim;
    const float *w = taps + (size_t)c * d.kernel;
    float acc = 0.0f;
    for (uint32_t j = 0; j < d.kernel; j++) {
        /* window[j] is input t - hist + j of the chunk; below 0, the state's entry hist + (t - hist + j) */
        const int64_t i = (int64_t)t - (int64_t)hist + (int64_t)j;
        const float x = i >= 0 ? mix[((size_t)row - t + (size_t)i) * d.conv_dim + c]
                               : state[(size_t)((int64_t)hist + i) * d.conv_dim + c];
        acc = __fadd_rn(acc, __fmul_rn(w[j], x));
    }
    out[(size_t)row * d.conv_dim + c] = acc / (1.0f + expf(-acc));
}

/* Thread per (channel, sequence): the state becomes the last kernel-1 inputs
 * (the chunk's, or the old state's shifted when the chunk is shorter). */
__global__ void q35_conv_state_kernel(qwen35_gpu_gdn_dims d, const qwen35_gpu_seq *seqs, uint32_t gdn, uint32_t rps,
                                      const float *__restrict__ mix)
{
    const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x, s = blockIdx.y;
    if (c >= d.conv_dim) return;
    const uint32_t hist = d.kernel - 1;
    float *state = seqs[s].conv + (size_t)gdn * hist * d.conv_dim;
    /* Entry j reads entry j + rps (> j, not yet written) or a row of the chunk. */
    for (uint32_t j = 0; j < hist; j++) {
        const int64_t i = (int64_t)rps - (int64_t)hist + (int64_t)j; /* the chunk's row, if >= 0 */
        state[(size_t)j * d.conv_dim + c] = i >= 0 ? mix[((size_t)s * rps + (size_t)i) * d.conv_dim + c]
                                                   : state[(size_t)(j + rps) * d.conv_dim + c];
    }
}

extern "C" int qwen35_gpu_conv_silu(void *stream, const qwen35_gpu_gdn_dims *dims, const qwen35_gpu_seq *seqs,
                                    uint32_t gdn, uint32_t n_seq, uint32_t rows_per_seq, const float *taps,
                                    const float *mix, float *out)
{
    if (n_seq == 0 || rows_per_seq == 0) return 0;
    if (dims->kernel == 0 || dims->kernel > QWEN35_GPU_MAX_CONV_KERNEL) return 1;
    const unsigned channel_blocks = (dims->conv_dim + Q35_THREADS - 1) / Q35_THREADS;
    const gufo_gpu_stream s = QG_STREAM(stream);
    q35_conv_silu_kernel<<<dim3(channel_blocks, n_seq * rows_per_seq), Q35_THREADS, 0, s>>>(*dims, seqs, gdn,
                                                                                           rows_per_seq, taps, mix,
                                                                                           out);
    if (qwen_gpu_launch_check("qwen35_gpu_conv_silu")) return 1;
    q35_conv_state_kernel<<<dim3(channel_blocks, n_seq), Q35_THREADS, 0, s>>>(*dims, seqs, gdn, rows_per_seq, mix);
    return qwen_gpu_launch_check("qwen35_gpu_conv_silu (state)");
}

/* Block (row, head): heads 0..Hk-1 are queries, Hk..2Hk-1 keys; block 2Hk does beta and g. */
__global__ void q35_gdn_prepare_kernel(qwen35_gpu_gdn_dims d, float *qkv, const float *__restrict__ b,
                                       const float *__restrict__ a, const float *__restrict__ dt_bias,
                                       const float *__restrict__ ssm_a, float *__restrict__ beta,
                                       float *__restrict__ g)
{
    __shared__ float scratch[Q35_THREADS / 32];
    const size_t r = blockIdx.x;
    const uint32_t head = blockIdx.y, dk = d.head_dim;
    if (head == 2 * d.k_heads) {
        for (uint32_t h = threadIdx.x; h < d.v_heads; h += blockDim.x) {
            const size_t i = r * d.v_heads + h;
            beta[i] = 1.0f / (1.0f + expf(-b[i]));
            const float u = a[i] + dt_bias[h];
            const float softplus = u > 20.0f ? u : log1pf(expf(u)); /* torch's softplus threshold */
            g[i] = ssm_a[h] * softplus;
        }
        return;
    }
    float *x = qkv + r * d.conv_dim + (size_t)head * dk;
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < dk; i += blockDim.x) sum += x[i] * x[i];
    sum = qg_block_sum(sum, scratch);
    float inv = 1.0f / sqrtf(sum + 1e-6f);
    if (head < d.k_heads) inv *= 1.0f / sqrtf((float)dk);
    for (uint32_t i = threadIdx.x; i < dk; i += blockDim.x) x[i] *= inv;
}

extern "C" int qwen35_gpu_gdn_prepare(void *stream, const qwen35_gpu_gdn_dims *dims, uint32_t n, float *qkv,
                                      const float *b, const float *a, const float *dt_bias, const float *ssm_a,
                                      float *beta, float *g)
{
    if (n == 0) return 0;
    const dim3 grid(n, 2 * dims->k_heads + 1);
    q35_gdn_prepare_kernel<<<grid, Q35_THREADS, 0, QG_STREAM(stream)>>>(*dims, qkv, b, a, dt_bias, ssm_a, beta, g);
    return qwen_gpu_launch_check("qwen35_gpu_gdn_prepare");
}

/* The delta rule's columns are independent: value column j's state S[:, j]
 * only ever meets k, q, v_j and its own d_j. So a block takes `cols` columns
 * of one (sequence, value head) — dk / cols blocks per head, which spreads a
 * single sequence's prefill over Hv * dk / cols blocks (192 at 27B) instead of
 * Hv (48) — and thread (j, p) holds rows [p R, p R + R) of column j in
 * registers (R = DK / Q35_DELTA_PARTS; rows past dk predicated off). The parts
 * of a column are adjacent lanes that sum their partial dot products with
 * shuffles; q and k are broadcast from shared memory, and row t + 1's inputs
 * are loaded while row t computes (a chunk's rows are dependent steps, so an
 * exposed load latency per row would dominate). One thread per column holding
 * all 128 rows spilled (255 registers); four parts of 32 do not. */
#define Q35_DELTA_PARTS 4
#define Q35_DELTA_LOADS 2 /* q/k values each thread stages per row: dk <= 2 x threads */

template <int DK>
__global__ void __launch_bounds__(32 * Q35_DELTA_PARTS)
q35_delta_rule_kernel(qwen35_gpu_gdn_dims d, const qwen35_gpu_seq *seqs, uint32_t gdn, uint32_t rps, uint32_t cols,
                      const float *__restrict__ qkv, const float *__restrict__ g, const float *__restrict__ beta,
                      float *__restrict__ out)
{
    constexpr int P = Q35_DELTA_PARTS, R = DK / P;
    __shared__ float sq[DK], sk[DK];
    const uint32_t dk = d.head_dim, parts = dk / cols;
    const uint32_t part = blockIdx.x % parts, h = (blockIdx.x / parts) % d.v_heads;
    const uint32_t s = blockIdx.x / (parts * d.v_heads), kh = h % d.k_heads;
    const uint32_t j = part * cols + threadIdx.x / P, p = threadIdx.x % P;
    float *S = seqs[s].delta + ((size_t)gdn * d.v_heads + h) * dk * dk;
    float col[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint32_t a = p * R + i;
        col[i] = a < dk ? S[(size_t)a * dk + j] : 0.0f;
    }
    const uint32_t q_at = kh * dk, k_at = (d.k_heads + kh) * dk, v_at = 2 * d.k_heads * dk + h * dk + j;
    size_t row = (size_t)s * rps;
    float nq[Q35_DELTA_LOADS], nk[Q35_DELTA_LOADS];
#pragma unroll
    for (int u = 0; u < Q35_DELTA_LOADS; u++) {
        const uint32_t e = threadIdx.x + u * blockDim.x;
        nq[u] = e < dk ? qkv[row * d.conv_dim + q_at + e] : 0.0f;
        nk[u] = e < dk ? qkv[row * d.conv_dim + k_at + e] : 0.0f;
    }
    float nv = qkv[row * d.conv_dim + v_at], ng = g[row * d.v_heads + h], nb = beta[row * d.v_heads + h];
    for (uint32_t t = 0; t < rps; t++, row++) {
        __syncthreads(); /* the previous row's q and k are read */
#pragma unroll
        for (int u = 0; u < Q35_DELTA_LOADS; u++) {
            const uint32_t e = threadIdx.x + u * blockDim.x;
            if (e < dk) {
                sq[e] = nq[u];
                sk[e] = nk[u];
            }
        }
        const float vj = nv, decay = expf(ng), b = nb;
        __syncthreads();
        if (t + 1 < rps) {
            const float *next = qkv + (row + 1) * d.conv_dim;
#pragma unroll
            for (int u = 0; u < Q35_DELTA_LOADS; u++) {
                const uint32_t e = threadIdx.x + u * blockDim.x;
                nq[u] = e < dk ? next[q_at + e] : 0.0f;
                nk[u] = e < dk ? next[k_at + e] : 0.0f;
            }
            nv = next[v_at];
            ng = g[(row + 1) * d.v_heads + h];
            nb = beta[(row + 1) * d.v_heads + h];
        }
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < R; i++) {
            const uint32_t a = p * R + i;
            if (a < dk) {
                col[i] *= decay;
                dot += sk[a] * col[i];
            }
        }
        for (int m = 1; m < P; m <<= 1) dot += gufo_gpu_shfl_xor(dot, m);
        const float delta = b * (vj - dot);
        float o = 0.0f;
#pragma unroll
        for (int i = 0; i < R; i++) {
            const uint32_t a = p * R + i;
            if (a < dk) {
                col[i] += sk[a] * delta;
                o += sq[a] * col[i];
            }
        }
        for (int m = 1; m < P; m <<= 1) o += gufo_gpu_shfl_xor(o, m);
        if (p == 0) out[row * ((size_t)d.v_heads * dk) + (size_t)h * dk + j] = o;
    }
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint32_t a = p * R + i;
        if (a < dk) S[(size_t)a * dk + j] = col[i];
    }
}

extern "C" int qwen35_gpu_delta_rule(void *stream, const qwen35_gpu_gdn_dims *dims, const qwen35_gpu_seq *seqs,
                                     uint32_t gdn, uint32_t n_seq, uint32_t rows_per_seq, const float *qkv,
                                     const float *g, const float *beta, float *out)
{
    if (n_seq == 0 || rows_per_seq == 0) return 0;
    const uint32_t dk = dims->head_dim;
    /* Columns per block: whole warps of whole columns (the shuffles need every lane), and
     * at least dk / 2 threads to stage a row's q and k. */
    const uint32_t cols = dk % 32 == 0 ? 32 : 16;
    if (dk == 0 || dk % 16 || dk > QWEN35_GPU_MAX_GDN_HEAD || (cols * Q35_DELTA_PARTS) % GUFO_GPU_WARP_SIZE) return 1;
    const unsigned blocks = n_seq * dims->v_heads * (dk / cols), threads = cols * Q35_DELTA_PARTS;
    const gufo_gpu_stream s = QG_STREAM(stream);
    if (dk <= 32)
        q35_delta_rule_kernel<32><<<blocks, threads, 0, s>>>(*dims, seqs, gdn, rows_per_seq, cols, qkv, g, beta, out);
    else if (dk <= 64)
        q35_delta_rule_kernel<64><<<blocks, threads, 0, s>>>(*dims, seqs, gdn, rows_per_seq, cols, qkv, g, beta, out);
    else
        q35_delta_rule_kernel<QWEN35_GPU_MAX_GDN_HEAD>
            <<<blocks, threads, 0, s>>>(*dims, seqs, gdn, rows_per_seq, cols, qkv, g, beta, out);
    return qwen_gpu_launch_check("qwen35_gpu_delta_rule");
}

/* Block (row, value head). */
__global__ void q35_gated_norm_kernel(qwen35_gpu_gdn_dims d, float *o, const float *__restrict__ z,
                                      const float *__restrict__ weight)
{
    __shared__ float scratch[Q35_THREADS / 32];
    const size_t base = (size_t)blockIdx.x * d.head_dim;
    float *x = o + base;
    const float *zr = z + base;
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < d.head_dim; i += blockDim.x) sum += x[i] * x[i];
    sum = qg_block_sum(sum, scratch);
    const float scale = 1.0f / sqrtf(sum / (float)d.head_dim + d.rms_eps);
    for (uint32_t i = threadIdx.x; i < d.head_dim; i += blockDim.x) {
        const float y = __fmul_rn(weight[i], __fmul_rn(x[i], scale));
        x[i] = y * (zr[i] / (1.0f + expf(-zr[i])));
    }
}

extern "C" int qwen35_gpu_gated_norm(void *stream, const qwen35_gpu_gdn_dims *dims, uint32_t n, float *o,
                                     const float *z, const float *weight)
{
    if (n == 0) return 0;
    q35_gated_norm_kernel<<<n * dims->v_heads, Q35_THREADS, 0, QG_STREAM(stream)>>>(*dims, o, z, weight);
    return qwen_gpu_launch_check("qwen35_gpu_gated_norm");
}

int q35_preload_attention(void); /* gpu_gated_attention.cu */

extern "C" int qwen35_gpu_preload(void)
{
    const int bad = qg_preload(q35_zero_kernel) | qg_preload(q35_conv_silu_kernel) | qg_preload(q35_conv_state_kernel) |
                    qg_preload(q35_gdn_prepare_kernel) | qg_preload(q35_delta_rule_kernel<32>) |
                    qg_preload(q35_delta_rule_kernel<64>) |
                    qg_preload(q35_delta_rule_kernel<QWEN35_GPU_MAX_GDN_HEAD>) |
                    qg_preload(q35_gated_norm_kernel) | q35_preload_attention();
    if (bad) qwen_gpu_set_error("loading the qwen35 kernels", gufoGpuGetErrorString(gufoGpuGetLastError()));
    return bad;
}

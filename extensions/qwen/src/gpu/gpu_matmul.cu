/* gpu_matmul.cu — quantized matrix products and embedding lookup (gpu_kernels.h).
 *
 * One block per output row: its warps walk the row in steps, decode each
 * lane's weights once (gpu_dequant.cuh, or the wide Q4_K path below) and
 * multiply them with up to NB activation vectors, so a decode step over B
 * sessions reads each weight once per NB sessions. Short prefill chunks run
 * the same kernel with the tokens as vectors, NB at a time across grid.y
 * (long ones go through the BLAS, gpu_gemm.cu). Sums are float32 throughout.
 */
#include "gpu_dequant.cuh"

#define QG_WARPS_PER_ROW 4 /* a block's warps share one output row, splitting its steps */

/* Weights one warp covers per step: 256 (one group of gpu_dequant.cuh), or
 * 1024 for Q4_K, where each lane takes 32 weights that share their scales
 * with one 16-byte load. (Q8_0 blocks are 34 bytes: lanes striding over
 * whole blocks do not coalesce, so Q8_0 keeps the 8-per-lane layout.) */
template <int TYPE>
struct qg_step {
    static constexpr uint32_t weights = TYPE == QWEN_GPU_Q4_K ? 1024u : 256u;
};

/* x[first .. first + 16) . w[0..16) for each vector, w decoded once. */
template <int NB>
__device__ __forceinline__ void qg_dot16(const float w[16], const float *__restrict__ x, uint32_t cols,
                                         uint32_t first, uint32_t nv, float acc[NB])
{
#pragma unroll
    for (int v = 0; v < NB; v++) {
        if ((uint32_t)v >= nv) continue;
        const float4 *xv = reinterpret_cast<const float4 *>(x + (size_t)v * cols + first);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float4 a = xv[k];
            s += w[4 * k] * a.x + w[4 * k + 1] * a.y + w[4 * k + 2] * a.z + w[4 * k + 3] * a.w;
        }
        acc[v] += s;
    }
}

/* x[first .. first + 8) . w[0..8) for each vector, w decoded once. */
template <int NB>
__device__ __forceinline__ void qg_dot8(const float w[8], const float *__restrict__ x, uint32_t cols, uint32_t first,
                                        uint32_t nv, float acc[NB])
{
#pragma unroll
    for (int v = 0; v < NB; v++) {
        if ((uint32_t)v >= nv) continue;
        const float4 *xv = reinterpret_cast<const float4 *>(x + (size_t)v * cols + first);
        const float4 a = xv[0], c = xv[1];
        acc[v] += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * c.x + w[5] * c.y + w[6] * c.z + w[7] * c.w;
    }
}

/* Dot products of lane `sub_lane`'s weights of step t with NB vectors. */
template <int TYPE, int NB>
__device__ __forceinline__ void qg_accumulate(const uint8_t *row, uint32_t cols, uint32_t t, int sub_lane,
                                              const float *__restrict__ x, uint32_t nv, float acc[NB])
{
    if (TYPE == QWEN_GPU_Q4_K) {
        /* Lane: super-block t*4 + lane/8, 32-byte pair j = (lane%8)/2, half h: 16
         * bytes whose low nibbles are elements 64j+16h.. of sub-block 2j and
         * high nibbles the same of sub-block 2j+1. */
        const uint32_t sb = t * 4u + (uint32_t)sub_lane / 8u;
        if (sb * 256u >= cols) return;
        const uint8_t *b = row + (size_t)sb * 144u;
        const int j = (sub_lane % 8) / 2, h = sub_lane % 2;
        const float d = qg_half(b), dmin = qg_half(b + 2);
        const uint8_t *scales = b + 4;
        int sc[2], mn[2];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int sub = 2 * j + k;
            if (sub < 4) {
                sc[k] = scales[sub] & 63;
                mn[k] = scales[sub + 4] & 63;
            } else {
                sc[k] = (scales[sub + 4] & 0x0f) | ((scales[sub - 4] >> 6) << 4);
                mn[k] = (scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4);
            }
        }
        const uint4 packed = *reinterpret_cast<const uint4 *>(b + 16 + 32 * j + 16 * h); /* 16-byte aligned */
        const uint8_t *q = reinterpret_cast<const uint8_t *>(&packed);
        const uint32_t first = sb * 256u + 64u * (uint32_t)j + 16u * (uint32_t)h;
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const float scale = __fmul_rn(d, (float)sc[k]), offset = __fmul_rn(dmin, (float)mn[k]);
            float w[16];
#pragma unroll
            for (int i = 0; i < 16; i++)
                w[i] = __fsub_rn(__fmul_rn(scale, (float)(k ? (q[i] >> 4) : (q[i] & 0x0f))), offset);
            qg_dot16<NB>(w, x, cols, first + 32u * (uint32_t)k, nv, acc);
        }
    } else if ((TYPE == QWEN_GPU_BF16 || TYPE == QWEN_GPU_F16) && cols % 8u == 0) {
        /* 16-bit weights, eight neighbours a lane with one 16-byte load (the
         * strided layout below takes eight 2-byte loads for the same: measured
         * on the H200, BF16 decode then reached 2.3 TB/s). */
        const uint32_t first = t * 256u + (uint32_t)sub_lane * 8u;
        if (first >= cols) return;
        const uint4 raw = *reinterpret_cast<const uint4 *>(row + (size_t)first * 2u);
        const unsigned short *bits = reinterpret_cast<const unsigned short *>(&raw);
        float w[8];
#pragma unroll
        for (int i = 0; i < 8; i++)
            w[i] = TYPE == QWEN_GPU_BF16 ? qg_bf16(bits[i]) : __half2float(*reinterpret_cast<const __half *>(&bits[i]));
        qg_dot8<NB>(w, x, cols, first, nv, acc);
    } else {
        float w[8];
        qg_dequant8<TYPE>(row, cols, t, sub_lane, w);
        if (qg_layout<TYPE>::strided) {
#pragma unroll
            for (int v = 0; v < NB; v++) {
                if ((uint32_t)v >= nv) continue;
                const float *xv = x + (size_t)v * cols;
                float s = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const uint32_t e = qg_element<TYPE>(t, sub_lane, i);
                    if (e < cols) s += w[i] * xv[e];
                }
                acc[v] += s;
            }
        } else {
            /* Block types: cols is a multiple of 32, so a lane's eight elements are all in or all out. */
            const uint32_t first = t * 256u + (uint32_t)sub_lane * 8u;
            if (first >= cols) return;
            qg_dot8<NB>(w, x, cols, first, nv, acc);
        }
    }
}

/* Block = one output row: QG_WARPS_PER_ROW warps take its steps in turn (a
 * long row, like ffn_down's, then has many loads in flight), and their
 * partial sums are added in a fixed order, so results do not depend on
 * timing. (Measured on the H200 against one warp per row, and against a warp
 * sharing its x loads over 2-4 rows: this was the fastest of the three for
 * Q4_K, Q8_0 and BF16 alike.) */
template <int TYPE, int NB>
__global__ void qg_matmul_kernel(qwen_gpu_matrix m, const float *__restrict__ x, uint32_t n, float *__restrict__ y,
                                 int accumulate)
{
    __shared__ float partial[QG_WARPS_PER_ROW * (GUFO_GPU_WARP_SIZE / 32)][NB];
    const int lane = threadIdx.x % GUFO_GPU_WARP_SIZE, warp = threadIdx.x / GUFO_GPU_WARP_SIZE;
    const uint32_t r = blockIdx.x;
    const uint32_t v0 = blockIdx.y * NB;
    const uint32_t nv = n - v0 < (uint32_t)NB ? n - v0 : (uint32_t)NB;
    const uint8_t *row = static_cast<const uint8_t *>(m.data) + (size_t)r * m.row_bytes;
    const uint32_t steps = (m.cols + qg_step<TYPE>::weights - 1) / qg_step<TYPE>::weights;
    const float *xs = x + (size_t)v0 * m.cols;

    float acc[NB];
#pragma unroll
    for (int v = 0; v < NB; v++) acc[v] = 0.0f;
    /* 32 lanes per step; HIP's 64-wide wavefronts take two steps per pass. */
    const int sub_lane = lane % 32;
    const uint32_t slot = (uint32_t)(warp * (GUFO_GPU_WARP_SIZE / 32) + lane / 32);
    const uint32_t slots = (uint32_t)(QG_WARPS_PER_ROW * (GUFO_GPU_WARP_SIZE / 32));
#pragma unroll 2
    for (uint32_t t = slot; t < steps; t += slots) qg_accumulate<TYPE, NB>(row, m.cols, t, sub_lane, xs, nv, acc);
#pragma unroll
    for (int v = 0; v < NB; v++) {
        float total = acc[v];
        for (int mask = 16; mask > 0; mask >>= 1) total += gufo_gpu_shfl_xor(total, mask);
        if (sub_lane == 0) partial[slot][v] = total;
    }
    __syncthreads();
    if (threadIdx.x < nv) {
        float total = 0.0f;
        for (uint32_t s2 = 0; s2 < slots; s2++) total += partial[s2][threadIdx.x];
        float *out = y + (size_t)(v0 + threadIdx.x) * m.rows + r;
        *out = accumulate ? *out + total : total;
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
    dim3 grid(m->rows, (n + NB - 1) / NB);
    qg_matmul_kernel<TYPE, NB><<<grid, QG_WARPS_PER_ROW * GUFO_GPU_WARP_SIZE, 0, stream>>>(*m, x, n, y, accumulate);
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

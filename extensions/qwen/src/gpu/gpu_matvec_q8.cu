/* gpu_matvec_q8.cu — quantized weights times int8 activations (gpu_kernels.h,
 * qwen_gpu_matmul_q8; the activation format is gpu_q8.cuh's).
 *
 * One 32-lane group per output row, four rows per block, no shared memory:
 * the group walks its row in steps, each lane loading its slice of weights
 * and the matching int8 activations of up to NB vectors, so the weights are
 * read once per NB vectors. Products are dp4a on the raw quants; each block's
 * scales (and Q4_K's mins, through the activation block's precomputed sum)
 * are applied in float32 once per 16-32 weights. All sums use explicit
 * rounding (no contraction), so a vector's result does not depend on NB or
 * on which other vectors share the launch: a batch equals its solo runs.
 */
#include "gpu_dequant.cuh"
#include "gpu_q8.cuh"

#define QG_Q8_ROWS_PER_BLOCK 4

/* Weights one 32-lane group covers per step. */
template <int TYPE>
struct qg_q8_step {
    static constexpr uint32_t weights = TYPE == QWEN_GPU_Q8_0 ? 256u : 1024u;
};

/* Two bytes at a time: Q8_0 (34 bytes) and Q6_K (210 bytes) blocks sit at
 * 2-byte alignment only. */
__device__ __forceinline__ int qg_load4_unaligned2(const uint8_t *p)
{
    const unsigned short *h = reinterpret_cast<const unsigned short *>(p);
    return (int)((unsigned)h[0] | ((unsigned)h[1] << 16));
}

__device__ __forceinline__ float qg_ds(const qwen_gpu_q8 &x, size_t block, int which)
{
    return x.ds[2 * block + (size_t)which];
}

template <int TYPE, int NB>
__device__ __forceinline__ void qg_q8_accumulate(const uint8_t *row, uint32_t cols, uint32_t t, int lane,
                                                 const qwen_gpu_q8 &x, uint32_t v0, uint32_t nv, float acc[NB])
{
    const size_t blocks_per_vec = cols / 32u;
    if (TYPE == QWEN_GPU_Q4_K) {
        /* Lane: super-block t*4 + lane/8, 32-byte pair j, half h: 16 bytes whose
         * low nibbles are elements 16h.. of sub-block 2j and high nibbles the
         * same of sub-block 2j+1 (as in gpu_matmul.cu). */
        const uint32_t sb = t * 4u + (uint32_t)lane / 8u;
        if (sb * 256u >= cols) return;
        const uint8_t *b = row + (size_t)sb * 144u;
        const int j = (lane % 8) / 2, h = lane % 2;
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
        const int4 packed = *reinterpret_cast<const int4 *>(b + 16 + 32 * j + 16 * h);
        const int lo[4] = {packed.x & 0x0f0f0f0f, packed.y & 0x0f0f0f0f, packed.z & 0x0f0f0f0f,
                           packed.w & 0x0f0f0f0f};
        const int hi[4] = {(packed.x >> 4) & 0x0f0f0f0f, (packed.y >> 4) & 0x0f0f0f0f, (packed.z >> 4) & 0x0f0f0f0f,
                           (packed.w >> 4) & 0x0f0f0f0f};
        const uint32_t e0 = sb * 256u + 64u * (uint32_t)j + 16u * (uint32_t)h;
        const uint32_t blk0 = sb * 8u + 2u * (uint32_t)j;
        const float dsc0 = __fmul_rn(d, (float)sc[0]), dsc1 = __fmul_rn(d, (float)sc[1]);
        const float dmn0 = __fmul_rn(dmin, (float)mn[0]), dmn1 = __fmul_rn(dmin, (float)mn[1]);
#pragma unroll
        for (int v = 0; v < NB; v++) {
            if ((uint32_t)v >= nv) continue;
            const size_t vec = v0 + (uint32_t)v;
            const int8_t *xq = x.qs + vec * cols;
            const int4 xa = *reinterpret_cast<const int4 *>(xq + e0);
            const int4 xb = *reinterpret_cast<const int4 *>(xq + e0 + 32);
            int s0 = qg_dp4a(lo[0], xa.x, 0);
            s0 = qg_dp4a(lo[1], xa.y, s0);
            s0 = qg_dp4a(lo[2], xa.z, s0);
            s0 = qg_dp4a(lo[3], xa.w, s0);
            int s1 = qg_dp4a(hi[0], xb.x, 0);
            s1 = qg_dp4a(hi[1], xb.y, s1);
            s1 = qg_dp4a(hi[2], xb.z, s1);
            s1 = qg_dp4a(hi[3], xb.w, s1);
            const size_t blk = vec * blocks_per_vec + blk0;
            float r = __fadd_rn(__fmul_rn(__fmul_rn(dsc0, qg_ds(x, blk, 0)), (float)s0),
                                __fmul_rn(__fmul_rn(dsc1, qg_ds(x, blk + 1, 0)), (float)s1));
            /* The mins act on whole 32-value blocks: the h = 0 lane applies them
             * through the blocks' sums. */
            if (h == 0)
                r = __fsub_rn(r, __fadd_rn(__fmul_rn(dmn0, qg_ds(x, blk, 1)), __fmul_rn(dmn1, qg_ds(x, blk + 1, 1))));
            acc[v] = __fadd_rn(acc[v], r);
        }
    } else if (TYPE == QWEN_GPU_Q6_K) {
        /* 210 bytes: ql[128], qh[64], int8 scales[16], f16 d. Half hf (128
         * elements) element 32k + l (k = 0..3, l = 0..31) is
         * (ql[64hf + l + 32(k&1)] >> 4(k>=2)) & 15 | ((qh[32hf + l] >> 2k) & 3) << 4, minus 32,
         * times scales[8hf + 2k + l/16]. Lane: super-block t*4 + lane/8, half
         * (lane%8)/4, l = 8(lane%4) .. +7: 32 weights, eight per k. */
        const uint32_t sb = t * 4u + (uint32_t)lane / 8u;
        if (sb * 256u >= cols) return;
        const uint8_t *b = row + (size_t)sb * 210u;
        const int hf = (lane % 8) / 4, l0 = 8 * (lane % 4);
        const float d = qg_half(b + 208);
        const uint8_t *ql = b + 64 * hf + l0, *qh = b + 128 + 32 * hf + l0;
        const int qla[2] = {qg_load4_unaligned2(ql), qg_load4_unaligned2(ql + 4)};
        const int qlb[2] = {qg_load4_unaligned2(ql + 32), qg_load4_unaligned2(ql + 36)};
        const int qhv[2] = {qg_load4_unaligned2(qh), qg_load4_unaligned2(qh + 4)};
        const int8_t *scales = reinterpret_cast<const int8_t *>(b + 192) + 8 * hf + l0 / 16;
        int w[4][2];
        float dsc[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int *src = (k & 1) ? qlb : qla;
            const int shift = k >= 2 ? 4 : 0;
#pragma unroll
            for (int i = 0; i < 2; i++)
                w[k][i] = ((src[i] >> shift) & 0x0f0f0f0f) | (((qhv[i] >> (2 * k)) & 0x03030303) << 4);
            dsc[k] = __fmul_rn(d, (float)scales[2 * k]);
        }
        const uint32_t e0 = sb * 256u + 128u * (uint32_t)hf + (uint32_t)l0;
        const uint32_t blk0 = sb * 8u + 4u * (uint32_t)hf;
#pragma unroll
        for (int v = 0; v < NB; v++) {
            if ((uint32_t)v >= nv) continue;
            const size_t vec = v0 + (uint32_t)v;
            const int8_t *xq = x.qs + vec * cols + e0;
            float r = 0.0f;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int2 xv = *reinterpret_cast<const int2 *>(xq + 32 * k);
                /* Quants are stored + 32: subtract 32 x the activations' sum. */
                const int sum = qg_dp4a(w[k][1], xv.y, qg_dp4a(w[k][0], xv.x, 0)) -
                                32 * qg_dp4a(0x01010101, xv.y, qg_dp4a(0x01010101, xv.x, 0));
                r = __fadd_rn(r, __fmul_rn(__fmul_rn(dsc[k], qg_ds(x, vec * blocks_per_vec + blk0 + k, 0)), (float)sum));
            }
            acc[v] = __fadd_rn(acc[v], r);
        }
    } else { /* QWEN_GPU_Q8_0: 34 bytes, f16 d then 32 int8; lane: block t*8 + lane/4, bytes 8(lane%4).. */
        const uint32_t blk_in_row = t * 8u + (uint32_t)lane / 4u;
        if (blk_in_row * 32u >= cols) return;
        const uint8_t *b = row + (size_t)blk_in_row * 34u;
        const int part = lane % 4;
        const float d = qg_half(b);
        const int q0 = qg_load4_unaligned2(b + 2 + 8 * part), q1 = qg_load4_unaligned2(b + 6 + 8 * part);
#pragma unroll
        for (int v = 0; v < NB; v++) {
            if ((uint32_t)v >= nv) continue;
            const size_t vec = v0 + (uint32_t)v;
            const int2 xv = *reinterpret_cast<const int2 *>(x.qs + vec * cols + blk_in_row * 32u + 8u * (uint32_t)part);
            const int sum = qg_dp4a(q1, xv.y, qg_dp4a(q0, xv.x, 0));
            acc[v] = __fadd_rn(acc[v],
                               __fmul_rn(__fmul_rn(d, qg_ds(x, vec * blocks_per_vec + blk_in_row, 0)), (float)sum));
        }
    }
}

template <int TYPE, int NB>
__global__ void qg_matmul_q8_kernel(qwen_gpu_matrix m, qwen_gpu_q8 x, uint32_t n, float *__restrict__ y, int accumulate)
{
    const int lane = threadIdx.x % 32; /* a 32-lane group; a HIP wavefront of 64 holds two */
    const uint32_t r = blockIdx.x * QG_Q8_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (r >= m.rows) return; /* whole groups leave together: no block-wide sync below */
    const uint32_t v0 = blockIdx.y * NB;
    const uint32_t nv = n - v0 < (uint32_t)NB ? n - v0 : (uint32_t)NB;
    const uint8_t *row = static_cast<const uint8_t *>(m.data) + (size_t)r * m.row_bytes;
    const uint32_t steps = (m.cols + qg_q8_step<TYPE>::weights - 1) / qg_q8_step<TYPE>::weights;

    float acc[NB];
#pragma unroll
    for (int v = 0; v < NB; v++) acc[v] = 0.0f;
#pragma unroll 4
    for (uint32_t t = 0; t < steps; t++) qg_q8_accumulate<TYPE, NB>(row, m.cols, t, lane, x, v0, nv, acc);
    float mine = 0.0f;
#pragma unroll
    for (int v = 0; v < NB; v++) {
        float total = acc[v];
        for (int mask = 16; mask > 0; mask >>= 1) total = __fadd_rn(total, gufo_gpu_shfl_xor(total, mask));
        if (lane == v) mine = total;
    }
    if ((uint32_t)lane < nv) {
        float *out = y + (size_t)(v0 + (uint32_t)lane) * m.rows + r;
        *out = accumulate ? __fadd_rn(*out, mine) : mine;
    }
}

template <int TYPE, int NB>
static void launch_q8(const qwen_gpu_matrix *m, qwen_gpu_q8 x, uint32_t n, float *y, int accumulate,
                      gufo_gpu_stream stream)
{
    dim3 grid((m->rows + QG_Q8_ROWS_PER_BLOCK - 1) / QG_Q8_ROWS_PER_BLOCK, (n + NB - 1) / NB);
    qg_matmul_q8_kernel<TYPE, NB><<<grid, QG_Q8_ROWS_PER_BLOCK * 32, 0, stream>>>(*m, x, n, y, accumulate);
}

template <int TYPE>
static void dispatch_q8(const qwen_gpu_matrix *m, qwen_gpu_q8 x, uint32_t n, float *y, int accumulate,
                        gufo_gpu_stream stream)
{
    if (n == 1)
        launch_q8<TYPE, 1>(m, x, n, y, accumulate, stream);
    else if (n == 2)
        launch_q8<TYPE, 2>(m, x, n, y, accumulate, stream);
    else if (n <= 4)
        launch_q8<TYPE, 4>(m, x, n, y, accumulate, stream);
    else if (n <= 8)
        launch_q8<TYPE, 8>(m, x, n, y, accumulate, stream);
    else
        launch_q8<TYPE, 16>(m, x, n, y, accumulate, stream);
}

extern "C" int qwen_gpu_matmul_q8_supported(int type)
{
    return type == QWEN_GPU_Q8_0 || type == QWEN_GPU_Q4_K || type == QWEN_GPU_Q6_K;
}

extern "C" int qwen_gpu_matmul_q8(void *stream, const qwen_gpu_matrix *m, qwen_gpu_q8 x, uint32_t n, float *y,
                                  int accumulate)
{
    if (n == 0) return 0;
    if (m->cols % 32u) return 1;
    const gufo_gpu_stream s = QG_STREAM(stream);
    switch (m->type) {
    case QWEN_GPU_Q8_0: dispatch_q8<QWEN_GPU_Q8_0>(m, x, n, y, accumulate, s); break;
    case QWEN_GPU_Q4_K: dispatch_q8<QWEN_GPU_Q4_K>(m, x, n, y, accumulate, s); break;
    case QWEN_GPU_Q6_K: dispatch_q8<QWEN_GPU_Q6_K>(m, x, n, y, accumulate, s); break;
    default: return 1;
    }
    return qwen_gpu_launch_check("qwen_gpu_matmul_q8");
}

template <int TYPE>
static int preload_q8(void)
{
    return qg_preload(qg_matmul_q8_kernel<TYPE, 1>) | qg_preload(qg_matmul_q8_kernel<TYPE, 2>) |
           qg_preload(qg_matmul_q8_kernel<TYPE, 4>) | qg_preload(qg_matmul_q8_kernel<TYPE, 8>) |
           qg_preload(qg_matmul_q8_kernel<TYPE, 16>);
}

int qg_preload_matvec_q8(void)
{
    return preload_q8<QWEN_GPU_Q8_0>() | preload_q8<QWEN_GPU_Q4_K>() | preload_q8<QWEN_GPU_Q6_K>();
}

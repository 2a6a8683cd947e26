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
    static constexpr uint32_t weights = TYPE == QWEN_GPU_Q8_0 ? 512u : 1024u;
};

/* Two bytes at a time: Q8_0 (34 bytes) and Q6_K (210 bytes) blocks sit at
 * 2-byte alignment only. */
__device__ __forceinline__ int qg_load4_unaligned2(const uint8_t *p)
{
    const unsigned short *h = reinterpret_cast<const unsigned short *>(p);
    return (int)((unsigned)h[0] | ((unsigned)h[1] << 16));
}

/* Per-lane weights of one step, decoded once and applied to every vector. */
template <int TYPE>
struct qg_q8_lane;

template <>
struct qg_q8_lane<QWEN_GPU_Q4_K> {
    int lo[4], hi[4];           /* nibbles of sub-blocks 2j and 2j+1 */
    float dsc[2], dmn[2];       /* d * scale and dmin * min of both */
};

template <>
struct qg_q8_lane<QWEN_GPU_Q6_K> {
    int w[4][2];                /* quants + 32, eight per k */
    float dsc[4];
};

template <>
struct qg_q8_lane<QWEN_GPU_Q8_0> {
    int q[4];
    float d;
};

/* Decodes lane `lane`'s weights of step t of `row`; false when the step is
 * past the row's end (the lane then contributes nothing). Lane layouts:
 *  Q4_K: super-block t*4 + lane/8, 32-byte pair j = (lane%8)/2, half h =
 *        lane%2: 16 bytes whose low nibbles are elements 16h.. of sub-block
 *        2j and high nibbles the same of sub-block 2j+1 (as gpu_matmul.cu);
 *  Q6_K: super-block t*4 + lane/8, half hf = (lane%8)/4 of 128 elements,
 *        l = 8(lane%4) .. +7; element 32k + l of the half (k = 0..3) is
 *        (ql[64hf + l + 32(k&1)] >> 4(k>=2)) & 15 | ((qh[32hf + l] >> 2k) & 3) << 4,
 *        minus 32, times scales[8hf + 2k + l/16] (210 bytes: ql[128],
 *        qh[64], int8 scales[16], f16 d);
 *  Q8_0: block t*16 + lane/2, bytes 16(lane%2) .. +15 (34 bytes: f16 d, 32
 *        int8). Half a block a lane: measured on the H200, a quarter left
 *        ffn_down's 48 steps a row latency-bound (1.8 TB/s). */
template <int TYPE>
__device__ __forceinline__ bool qg_q8_decode(const uint8_t *row, uint32_t cols, uint32_t t, int lane,
                                             qg_q8_lane<TYPE> &w);

template <>
__device__ __forceinline__ bool qg_q8_decode<QWEN_GPU_Q4_K>(const uint8_t *row, uint32_t cols, uint32_t t, int lane,
                                                            qg_q8_lane<QWEN_GPU_Q4_K> &w)
{
    const uint32_t sb = t * 4u + (uint32_t)lane / 8u;
    if (sb * 256u >= cols) return false;
    const uint8_t *b = row + (size_t)sb * 144u;
    const int j = (lane % 8) / 2, h = lane % 2;
    const float d = qg_half(b), dmin = qg_half(b + 2);
    const uint8_t *scales = b + 4;
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int sub = 2 * j + k;
        int sc, mn;
        if (sub < 4) {
            sc = scales[sub] & 63;
            mn = scales[sub + 4] & 63;
        } else {
            sc = (scales[sub + 4] & 0x0f) | ((scales[sub - 4] >> 6) << 4);
            mn = (scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4);
        }
        w.dsc[k] = __fmul_rn(d, (float)sc);
        /* The mins act on whole 32-value blocks: the h = 0 lane applies them
         * (through the blocks' sums), the h = 1 lane adds nothing. */
        w.dmn[k] = h == 0 ? __fmul_rn(dmin, (float)mn) : 0.0f;
    }
    const int4 packed = *reinterpret_cast<const int4 *>(b + 16 + 32 * j + 16 * h);
    const int p[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        w.lo[i] = p[i] & 0x0f0f0f0f;
        w.hi[i] = (p[i] >> 4) & 0x0f0f0f0f;
    }
    return true;
}

template <>
__device__ __forceinline__ bool qg_q8_decode<QWEN_GPU_Q6_K>(const uint8_t *row, uint32_t cols, uint32_t t, int lane,
                                                            qg_q8_lane<QWEN_GPU_Q6_K> &w)
{
    const uint32_t sb = t * 4u + (uint32_t)lane / 8u;
    if (sb * 256u >= cols) return false;
    const uint8_t *b = row + (size_t)sb * 210u;
    const int hf = (lane % 8) / 4, l0 = 8 * (lane % 4);
    const float d = qg_half(b + 208);
    const uint8_t *ql = b + 64 * hf + l0, *qh = b + 128 + 32 * hf + l0;
    const int qla[2] = {qg_load4_unaligned2(ql), qg_load4_unaligned2(ql + 4)};
    const int qlb[2] = {qg_load4_unaligned2(ql + 32), qg_load4_unaligned2(ql + 36)};
    const int qhv[2] = {qg_load4_unaligned2(qh), qg_load4_unaligned2(qh + 4)};
    const int8_t *scales = reinterpret_cast<const int8_t *>(b + 192) + 8 * hf + l0 / 16;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int *src = (k & 1) ? qlb : qla;
        const int shift = k >= 2 ? 4 : 0;
#pragma unroll
        for (int i = 0; i < 2; i++)
            w.w[k][i] = ((src[i] >> shift) & 0x0f0f0f0f) | (((qhv[i] >> (2 * k)) & 0x03030303) << 4);
        w.dsc[k] = __fmul_rn(d, (float)scales[2 * k]);
    }
    return true;
}

template <>
__device__ __forceinline__ bool qg_q8_decode<QWEN_GPU_Q8_0>(const uint8_t *row, uint32_t cols, uint32_t t, int lane,
                                                            qg_q8_lane<QWEN_GPU_Q8_0> &w)
{
    const uint32_t blk = t * 16u + (uint32_t)lane / 2u;
    if (blk * 32u >= cols) return false;
    const uint8_t *b = row + (size_t)blk * 34u + 2 + 16 * (lane % 2);
    w.d = qg_half(row + (size_t)blk * 34u);
#pragma unroll
    for (int i = 0; i < 4; i++) w.q[i] = qg_load4_unaligned2(b + 4 * i);
    return true;
}

/* First activation element and first int8 block of lane `lane`'s weights in step t. */
template <int TYPE>
__device__ __forceinline__ uint32_t qg_q8_first(uint32_t t, int lane)
{
    if (TYPE == QWEN_GPU_Q4_K)
        return (t * 4u + (uint32_t)lane / 8u) * 256u + 64u * (uint32_t)((lane % 8) / 2) + 16u * (uint32_t)(lane % 2);
    if (TYPE == QWEN_GPU_Q6_K)
        return (t * 4u + (uint32_t)lane / 8u) * 256u + 128u * (uint32_t)((lane % 8) / 4) + 8u * (uint32_t)(lane % 4);
    return (t * 16u + (uint32_t)lane / 2u) * 32u + 16u * (uint32_t)(lane % 2);
}

/* The activations one lane needs for one vector in a step, loaded once for all R rows. */
template <int TYPE>
struct qg_q8_x;

template <>
struct qg_q8_x<QWEN_GPU_Q4_K> {
    int4 a, b;     /* 16 values of each of the two blocks */
    float4 ds;     /* d, d*sum of block 2j then of block 2j+1 (adjacent: one load) */
};

template <>
struct qg_q8_x<QWEN_GPU_Q6_K> {
    int2 v[4];     /* eight values of each of four blocks */
    float4 d01, d23; /* (d, d*sum) of the four blocks */
};

template <>
struct qg_q8_x<QWEN_GPU_Q8_0> {
    int4 v;
    float d;
};

template <int TYPE>
__device__ __forceinline__ void qg_q8_load_x(const qwen_gpu_q8 &x, size_t vec, uint32_t cols, uint32_t first,
                                             qg_q8_x<TYPE> &out)
{
    const int8_t *xq = x.qs + vec * cols + first;
    const float *ds = x.ds + 2 * (vec * (cols / 32u) + first / 32u);
    if constexpr (TYPE == QWEN_GPU_Q4_K) {
        out.a = *reinterpret_cast<const int4 *>(xq);
        out.b = *reinterpret_cast<const int4 *>(xq + 32);
        out.ds = *reinterpret_cast<const float4 *>(ds); /* block 2j is even: 16-byte aligned */
    } else if constexpr (TYPE == QWEN_GPU_Q6_K) {
#pragma unroll
        for (int k = 0; k < 4; k++) out.v[k] = *reinterpret_cast<const int2 *>(xq + 32 * k);
        out.d01 = *reinterpret_cast<const float4 *>(ds); /* 4hf + 8sb: a multiple of 4 blocks */
        out.d23 = *reinterpret_cast<const float4 *>(ds + 4);
    } else {
        out.v = *reinterpret_cast<const int4 *>(xq);
        out.d = ds[0];
    }
}

/* One row's contribution of one lane and step for one vector. */
template <int TYPE>
__device__ __forceinline__ float qg_q8_dot(const qg_q8_lane<TYPE> &w, const qg_q8_x<TYPE> &x)
{
    if constexpr (TYPE == QWEN_GPU_Q4_K) {
        int s0 = qg_dp4a(w.lo[0], x.a.x, 0);
        s0 = qg_dp4a(w.lo[1], x.a.y, s0);
        s0 = qg_dp4a(w.lo[2], x.a.z, s0);
        s0 = qg_dp4a(w.lo[3], x.a.w, s0);
        int s1 = qg_dp4a(w.hi[0], x.b.x, 0);
        s1 = qg_dp4a(w.hi[1], x.b.y, s1);
        s1 = qg_dp4a(w.hi[2], x.b.z, s1);
        s1 = qg_dp4a(w.hi[3], x.b.w, s1);
        const float r = __fadd_rn(__fmul_rn(__fmul_rn(w.dsc[0], x.ds.x), (float)s0),
                                  __fmul_rn(__fmul_rn(w.dsc[1], x.ds.z), (float)s1));
        return __fsub_rn(r, __fadd_rn(__fmul_rn(w.dmn[0], x.ds.y), __fmul_rn(w.dmn[1], x.ds.w)));
    } else if constexpr (TYPE == QWEN_GPU_Q6_K) {
        const float d[4] = {x.d01.x, x.d01.z, x.d23.x, x.d23.z};
        float r = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            /* Quants are stored + 32: subtract 32 x the activations' sum. */
            const int sum = qg_dp4a(w.w[k][1], x.v[k].y, qg_dp4a(w.w[k][0], x.v[k].x, 0)) -
                            32 * qg_dp4a(0x01010101, x.v[k].y, qg_dp4a(0x01010101, x.v[k].x, 0));
            r = __fadd_rn(r, __fmul_rn(__fmul_rn(w.dsc[k], d[k]), (float)sum));
        }
        return r;
    } else {
        int sum = qg_dp4a(w.q[0], x.v.x, 0);
        sum = qg_dp4a(w.q[1], x.v.y, sum);
        sum = qg_dp4a(w.q[2], x.v.z, sum);
        sum = qg_dp4a(w.q[3], x.v.w, sum);
        return __fmul_rn(__fmul_rn(w.d, x.d), (float)sum);
    }
}

/* Step t of R rows (a group's rows r0 .. r0+R-1, all valid) for up to NB
 * vectors: each vector's activations are loaded once and used for all R rows. */
template <int TYPE, int NB, int R>
__device__ __forceinline__ void qg_q8_accumulate(const uint8_t *const rows[R], uint32_t cols, uint32_t t, int lane,
                                                 const qwen_gpu_q8 &x, uint32_t v0, uint32_t nv, float acc[R][NB])
{
    qg_q8_lane<TYPE> w[R];
    bool in_row = true;
#pragma unroll
    for (int i = 0; i < R; i++) in_row = qg_q8_decode<TYPE>(rows[i], cols, t, lane, w[i]);
    if (!in_row) return; /* the same step is past the end of every row (equal cols) */
    const uint32_t first = qg_q8_first<TYPE>(t, lane);
#pragma unroll
    for (int v = 0; v < NB; v++) {
        if ((uint32_t)v >= nv) continue;
        qg_q8_x<TYPE> xv;
        qg_q8_load_x<TYPE>(x, v0 + (uint32_t)v, cols, first, xv);
#pragma unroll
        for (int i = 0; i < R; i++) acc[i][v] = __fadd_rn(acc[i][v], qg_q8_dot<TYPE>(w[i], xv));
    }
}

/* The matrices of one launch: products of the same input (q, k and v, or
 * gate and up) run as one grid, so the small ones do not each pay a launch
 * and a tail. Blocks first_block[i] .. first_block[i + 1] - 1 belong to m[i]. */
typedef struct qg_q8_targets {
    qwen_gpu_matrix m[QWEN_GPU_MAX_FUSED];
    float *y[QWEN_GPU_MAX_FUSED];
    uint32_t first_block[QWEN_GPU_MAX_FUSED + 1];
    uint32_t count;
    int accumulate;
} qg_q8_targets;

/* A block holds QG_Q8_ROWS_PER_BLOCK 32-lane groups of R rows each. With
 * several vectors, two rows per group halve the activation loads per weight
 * (the limit there: L1 traffic, not HBM); with one, a row per group keeps
 * more rows in flight. */
template <int TYPE, int NB, int R>
__global__ void qg_matmul_q8_kernel(qg_q8_targets t, qwen_gpu_q8 x, uint32_t n)
{
    uint32_t k = 0;
#pragma unroll
    for (uint32_t i = 1; i < QWEN_GPU_MAX_FUSED; i++)
        if (i < t.count && blockIdx.x >= t.first_block[i]) k = i;
    /* Select by value rather than index the parameter array (which would copy it to local memory). */
    qwen_gpu_matrix m = t.m[0];
    float *y = t.y[0];
#pragma unroll
    for (uint32_t i = 1; i < QWEN_GPU_MAX_FUSED; i++)
        if (k == i) {
            m = t.m[i];
            y = t.y[i];
        }
    const int lane = threadIdx.x % 32; /* a 32-lane group; a HIP wavefront of 64 holds two */
    const uint32_t r0 = ((blockIdx.x - t.first_block[k]) * QG_Q8_ROWS_PER_BLOCK + threadIdx.x / 32) * R;
    if (r0 >= m.rows) return; /* whole groups leave together: no block-wide sync below */
    const uint32_t v0 = blockIdx.y * NB;
    const uint32_t nv = n - v0 < (uint32_t)NB ? n - v0 : (uint32_t)NB;
    /* A group past the last row repeats the last row (its results are not stored). */
    const uint8_t *rows[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        const uint32_t r = r0 + (uint32_t)i < m.rows ? r0 + (uint32_t)i : m.rows - 1;
        rows[i] = static_cast<const uint8_t *>(m.data) + (size_t)r * m.row_bytes;
    }
    const uint32_t steps = (m.cols + qg_q8_step<TYPE>::weights - 1) / qg_q8_step<TYPE>::weights;

    float acc[R][NB];
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int v = 0; v < NB; v++) acc[i][v] = 0.0f;
#pragma unroll 4
    for (uint32_t s = 0; s < steps; s++) qg_q8_accumulate<TYPE, NB, R>(rows, m.cols, s, lane, x, v0, nv, acc);
#pragma unroll
    for (int i = 0; i < R; i++) {
        float mine = 0.0f;
#pragma unroll
        for (int v = 0; v < NB; v++) {
            float total = acc[i][v];
            for (int mask = 16; mask > 0; mask >>= 1) total = __fadd_rn(total, gufo_gpu_shfl_xor(total, mask));
            if (lane == v) mine = total;
        }
        const uint32_t r = r0 + (uint32_t)i;
        if ((uint32_t)lane < nv && r < m.rows) {
            float *out = y + (size_t)(v0 + (uint32_t)lane) * m.rows + r;
            *out = t.accumulate ? __fadd_rn(*out, mine) : mine;
        }
    }
}

template <int R>
static uint32_t q8_blocks(uint32_t rows)
{
    const uint32_t per_block = QG_Q8_ROWS_PER_BLOCK * (uint32_t)R;
    return (rows + per_block - 1) / per_block;
}

template <int TYPE, int NB, int R>
static void launch_q8(const qg_q8_targets *t, qwen_gpu_q8 x, uint32_t n, gufo_gpu_stream stream)
{
    /* first_block counts blocks of one-row groups; re-count for R rows per group. */
    qg_q8_targets tr = *t;
    for (uint32_t i = 0; i < t->count; i++) tr.first_block[i + 1] = tr.first_block[i] + q8_blocks<R>(t->m[i].rows);
    dim3 grid(tr.first_block[t->count], (n + NB - 1) / NB);
    qg_matmul_q8_kernel<TYPE, NB, R><<<grid, QG_Q8_ROWS_PER_BLOCK * 32, 0, stream>>>(tr, x, n);
}

/* Vectors per launch pass and rows per group by batch size. Measured on the
 * H200 (qwen_gpu_kernel_bench, gufo serve at 8 streams): four rows per group
 * for 5+ vectors was slower than two (Q4_K gate/up at 8 vectors 63 -> 67 us,
 * 8 streams 672 -> 623 tok/s): 190+ registers a thread leave too few warps. */
template <int TYPE>
static void dispatch_q8(const qg_q8_targets *t, qwen_gpu_q8 x, uint32_t n, gufo_gpu_stream stream)
{
    if (n == 1)
        launch_q8<TYPE, 1, 1>(t, x, n, stream);
    else if (n == 2)
        launch_q8<TYPE, 2, 1>(t, x, n, stream);
    else if (n <= 4)
        launch_q8<TYPE, 4, 2>(t, x, n, stream);
    else if (n <= 8)
        launch_q8<TYPE, 8, 2>(t, x, n, stream);
    else
        launch_q8<TYPE, 16, 2>(t, x, n, stream);
}

static int run_q8(const qg_q8_targets *t, qwen_gpu_q8 x, uint32_t n, void *stream)
{
    const gufo_gpu_stream s = QG_STREAM(stream);
    switch (t->m[0].type) {
    case QWEN_GPU_Q8_0: dispatch_q8<QWEN_GPU_Q8_0>(t, x, n, s); break;
    case QWEN_GPU_Q4_K: dispatch_q8<QWEN_GPU_Q4_K>(t, x, n, s); break;
    case QWEN_GPU_Q6_K: dispatch_q8<QWEN_GPU_Q6_K>(t, x, n, s); break;
    default: return 1;
    }
    return qwen_gpu_launch_check("qwen_gpu_matmul_q8");
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
    qg_q8_targets t = {};
    t.m[0] = *m;
    t.y[0] = y;
    t.first_block[1] = (m->rows + QG_Q8_ROWS_PER_BLOCK - 1) / QG_Q8_ROWS_PER_BLOCK;
    t.count = 1;
    t.accumulate = accumulate;
    return run_q8(&t, x, n, stream);
}

extern "C" int qwen_gpu_matmul_q8_fused(void *stream, const qwen_gpu_matrix *const *m, float *const *y, uint32_t count,
                                        qwen_gpu_q8 x, uint32_t n)
{
    if (n == 0 || count == 0) return 0;
    if (count > QWEN_GPU_MAX_FUSED) return 1;
    qg_q8_targets t = {};
    for (uint32_t i = 0; i < count; i++) {
        if (m[i]->type != m[0]->type || m[i]->cols != m[0]->cols || m[i]->cols % 32u) return 1;
        t.m[i] = *m[i];
        t.y[i] = y[i];
        t.first_block[i + 1] = t.first_block[i] + (m[i]->rows + QG_Q8_ROWS_PER_BLOCK - 1) / QG_Q8_ROWS_PER_BLOCK;
    }
    t.count = count;
    return run_q8(&t, x, n, stream);
}

template <int TYPE>
static int preload_q8(void)
{
    return qg_preload(qg_matmul_q8_kernel<TYPE, 1, 1>) | qg_preload(qg_matmul_q8_kernel<TYPE, 2, 1>) |
           qg_preload(qg_matmul_q8_kernel<TYPE, 4, 2>) | qg_preload(qg_matmul_q8_kernel<TYPE, 8, 2>) |
           qg_preload(qg_matmul_q8_kernel<TYPE, 16, 2>);
}

int qg_preload_matvec_q8(void)
{
    return preload_q8<QWEN_GPU_Q8_0>() | preload_q8<QWEN_GPU_Q4_K>() | preload_q8<QWEN_GPU_Q6_K>();
}

/* gpu_attention.cu — causal GQA attention over each row's cache (gpu_kernels.h).
 *
 * Flash-decoding: the positions 0..pos of one row are cut into `splits` equal
 * parts; one block per (row, kv head, part) serves all the query heads of
 * that kv head (its GQA group, up to QG_ATT_MAX_GROUP at a time), so each key
 * and value is read once per group instead of once per query head. The
 * block's warps take tiles of U consecutive keys in turn, lanes splitting the
 * head dimension (VW floats per load, NV loads per lane). A tile's G x U dot
 * products are summed over the warp's 32 lanes by a butterfly that halves the
 * values at each step (reduce-scatter, then all-gather: about 2 G U shuffles
 * instead of 5 G U), so every lane holds the tile's scores and keeps the same
 * online softmax (running max m, mass l, weighted sum of values) per head.
 * The warps' states are merged in shared memory, one head at a time, and
 * written as that head's partial; a second kernel merges the parts of each
 * (row, head). Decode steps use many parts so a batch of one still fills the
 * GPU; prefill rows use few (each row already is a block). Rows only read
 * positions <= their own, so a prefill chunk sees its own earlier tokens once
 * qwen_gpu_qk_norm_rope_store() has written them. The launch depends only on
 * the shape, the number of rows and `splits` (never on positions), and every
 * sum runs in a fixed order, so a row's result is deterministic and does not
 * depend on the other rows of the launch.
 */
#include "gpu_q8.cuh"

#include <math.h>

/* Query heads one block serves; larger groups take several blocks. */
#define QG_ATT_MAX_GROUP 8u

/* U keys per warp and tile, W warps per block, for E floats per lane and G
 * heads per block: G * U (a power of two, <= 32) scores per tile. Sized so
 * that no variant spills: 16 warps (<= 128 registers) where the state is
 * small, 8 (<= 255) where it is not. */
template <int E, int G>
struct qg_att_shape {
    static constexpr int U = G >= 8 ? 2 : G >= 4 ? 4 : E <= 4 || G == 1 ? 8 : 4;
    static constexpr int W = E <= 4 && G <= 4 ? 16 : 8;
    static constexpr int P = G * U;
    static constexpr int LOG2_P = P == 32 ? 5 : P == 16 ? 4 : P == 8 ? 3 : P == 4 ? 2 : P == 2 ? 1 : 0;
    static_assert((1 << LOG2_P) == P && P <= 32, "scores per tile: a power of two up to 32");
};

template <int VW>
struct qg_floats {
    float v[VW];
};

template <int VW>
__device__ __forceinline__ qg_floats<VW> qg_load(const float *p);

template <>
__device__ __forceinline__ qg_floats<4> qg_load<4>(const float *p)
{
    const float4 t = *reinterpret_cast<const float4 *>(p);
    return {{t.x, t.y, t.z, t.w}};
}

template <>
__device__ __forceinline__ qg_floats<2> qg_load<2>(const float *p)
{
    const float2 t = *reinterpret_cast<const float2 *>(p);
    return {{t.x, t.y}};
}

/* One halving step (lanes `mask` apart; HALF = the values left), and its reverse. */
template <int P, int HALF>
__device__ __forceinline__ void qg_halve(float (&v)[P], int lane, int mask)
{
    const bool upper = (lane & mask) != 0;
#pragma unroll
    for (int i = 0; i < HALF; i++) {
        const float lo = v[i], hi = v[i + HALF];
        const float send = upper ? lo : hi, keep = upper ? hi : lo;
        v[i] = keep + gufo_gpu_shfl_xor(send, mask);
    }
}

template <int P, int HALF>
__device__ __forceinline__ void qg_double(float (&v)[P], int lane, int mask)
{
    const bool upper = (lane & mask) != 0;
#pragma unroll
    for (int i = 0; i < HALF; i++) {
        const float mine = v[i], other = gufo_gpu_shfl_xor(mine, mask);
        v[i] = upper ? other : mine;
        v[i + HALF] = upper ? mine : other;
    }
}

/*
 * v[0..P) summed over the 32 lanes of each warp; every lane gets all P sums.
 * Halving steps (masks 16, 8, ...): a lane keeps the half its mask bit names
 * and adds its partner's copy of it, so after log2 P steps lane L holds the
 * sum over its group of index L >> (5 - log2 P); plain butterfly steps finish
 * the lanes' sum, and the halving steps undone in reverse hand every lane
 * every sum. 32-lane shuffles only: a HIP wavefront of 64 runs two warps.
 * Lanes holding the same index add the same numbers in mirrored order, which
 * float addition's commutativity makes bitwise equal, so all lanes agree.
 */
template <int P, int LOG2_P>
__device__ __forceinline__ void qg_warp_sum_all(float (&v)[P], int lane)
{
    /* Steps spelled out so that every index is a constant (the values stay in registers). */
    if (LOG2_P >= 1) qg_halve<P, P / 2>(v, lane, 16);
    if (LOG2_P >= 2) qg_halve<P, P / 4>(v, lane, 8);
    if (LOG2_P >= 3) qg_halve<P, P / 8>(v, lane, 4);
    if (LOG2_P >= 4) qg_halve<P, P / 16>(v, lane, 2);
    if (LOG2_P >= 5) qg_halve<P, P / 32>(v, lane, 1);
#pragma unroll
    for (int mask = 16 >> LOG2_P; mask > 0; mask >>= 1) v[0] += gufo_gpu_shfl_xor(v[0], mask);
    if (LOG2_P >= 5) qg_double<P, P / 32>(v, lane, 1);
    if (LOG2_P >= 4) qg_double<P, P / 16>(v, lane, 2);
    if (LOG2_P >= 3) qg_double<P, P / 8>(v, lane, 4);
    if (LOG2_P >= 2) qg_double<P, P / 4>(v, lane, 8);
    if (LOG2_P >= 1) qg_double<P, P / 2>(v, lane, 16);
}

/* Block (row, kv head, group chunk) x part. Lane element e = (32 i + lane) VW + c. */
template <int VW, int NV, int G>
__global__ void __launch_bounds__((qg_att_shape<VW * NV, G>::W * 32))
    qg_attention_split_kernel(qwen_gpu_dims dims, uint32_t layer, const qwen_gpu_row *__restrict__ rows,
                              const float *__restrict__ q, uint32_t splits, float *__restrict__ partials)
{
    typedef qg_att_shape<VW * NV, G> shape;
    constexpr int E = VW * NV, U = shape::U, W = shape::W, P = shape::P;
    __shared__ float warp_m[W], warp_l[W];
    __shared__ __align__(16) float warp_acc[W][32 * E];

    const uint32_t d = dims.head_dim;
    const uint32_t group = dims.n_head / dims.n_head_kv, chunks = (group + G - 1) / G;
    const uint32_t chunk = blockIdx.x % chunks, kvh = blockIdx.x / chunks % dims.n_head_kv;
    const uint32_t r = blockIdx.x / chunks / dims.n_head_kv, split = blockIdx.y;
    const uint32_t h0 = kvh * group + chunk * G; /* this block's first query head */
    const uint32_t n_heads = group - chunk * G < (uint32_t)G ? group - chunk * G : (uint32_t)G;
    const uint32_t width = dims.n_head_kv * d;
    const qwen_gpu_row row = rows[r];
    const uint32_t n_pos = row.pos + 1, part = (n_pos + splits - 1) / splits;
    const uint32_t begin = split * part, end = begin + part < n_pos ? begin + part : n_pos;
    const uint32_t n_keys = end > begin ? end - begin : 0, n_tiles = (n_keys + U - 1) / U;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    const float *layer_base = row.kv + (size_t)layer * row.capacity * (2u * width);
    const float *keys = layer_base + (size_t)kvh * d;
    const float *values = layer_base + (size_t)row.capacity * width + (size_t)kvh * d;
    const float scale = 1.0f / sqrtf((float)d);

    float qv[G][E], acc[G][E], m[G], l[G];
#pragma unroll
    for (int g = 0; g < G; g++) {
        const float *qh = q + ((size_t)r * dims.n_head + h0 + g) * d;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const uint32_t e = (uint32_t)((32 * i + lane) * VW);
            qg_floats<VW> t = {};
            if ((uint32_t)g < n_heads && e < d) t = qg_load<VW>(qh + e);
#pragma unroll
            for (int c = 0; c < VW; c++) {
                qv[g][i * VW + c] = t.v[c];
                acc[g][i * VW + c] = 0.0f;
            }
        }
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }

    for (uint32_t t = (uint32_t)warp; t < n_tiles; t += W) {
        const uint32_t j0 = begin + t * U;
        float kf[U][E], vf[U][E];
#pragma unroll
        for (int k = 0; k < U; k++) {
            const bool key_ok = j0 + k < end;
            const float *kj = keys + (size_t)(j0 + k) * width, *vj = values + (size_t)(j0 + k) * width;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const uint32_t e = (uint32_t)((32 * i + lane) * VW);
                qg_floats<VW> a = {}, b = {};
                if (key_ok && e < d) {
                    a = qg_load<VW>(kj + e);
                    b = qg_load<VW>(vj + e);
                }
#pragma unroll
                for (int c = 0; c < VW; c++) {
                    kf[k][i * VW + c] = a.v[c];
                    vf[k][i * VW + c] = b.v[c];
                }
            }
        }
        float s[P]; /* s[g * U + k]: head g, key j0 + k */
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int k = 0; k < U; k++) {
                float x = 0.0f;
#pragma unroll
                for (int c = 0; c < E; c++) x = fmaf(qv[g][c], kf[k][c], x);
                s[g * U + k] = x;
            }
        qg_warp_sum_all<P, shape::LOG2_P>(s, lane);
#pragma unroll
        for (int g = 0; g < G; g++) {
            float tile_max = -INFINITY;
#pragma unroll
            for (int k = 0; k < U; k++) {
                s[g * U + k] = j0 + k < end ? s[g * U + k] * scale : -INFINITY;
                tile_max = fmaxf(tile_max, s[g * U + k]);
            }
            const float m_new = fmaxf(m[g], tile_max), correction = expf(m[g] - m_new);
            float p[U], mass = 0.0f;
#pragma unroll
            for (int k = 0; k < U; k++) {
                p[k] = expf(s[g * U + k] - m_new);
                mass += p[k];
            }
            l[g] = l[g] * correction + mass;
#pragma unroll
            for (int c = 0; c < E; c++) {
                float a = acc[g][c] * correction;
#pragma unroll
                for (int k = 0; k < U; k++) a = fmaf(p[k], vf[k][c], a);
                acc[g][c] = a;
            }
            m[g] = m_new;
        }
    }

    /* Per head: the warps' states, merged in warp order. */
#pragma unroll
    for (int g = 0; g < G; g++) {
        if ((uint32_t)g >= n_heads) continue; /* the same for the whole block */
        if (g > 0) __syncthreads();            /* the previous head's states are read */
        if (lane == 0) {
            warp_m[warp] = m[g];
            warp_l[warp] = l[g];
        }
#pragma unroll
        for (int i = 0; i < NV; i++)
#pragma unroll
            for (int c = 0; c < VW; c++) warp_acc[warp][(32 * i + lane) * VW + c] = acc[g][i * VW + c];
        __syncthreads();
        float *out = partials + (((size_t)r * dims.n_head + h0 + g) * splits + split) * (d + 2);
        float block_m = -INFINITY;
        for (int w = 0; w < W; w++) block_m = fmaxf(block_m, warp_m[w]);
        for (uint32_t e = threadIdx.x; e < d; e += W * 32) {
            float sum = 0.0f;
            for (int w = 0; w < W; w++)
                if (warp_m[w] > -INFINITY) sum += warp_acc[w][e] * expf(warp_m[w] - block_m);
            out[2 + e] = sum;
        }
        if (threadIdx.x == 0) {
            float block_l = 0.0f;
            for (int w = 0; w < W; w++)
                if (warp_m[w] > -INFINITY) block_l += warp_l[w] * expf(warp_m[w] - block_m);
            out[0] = block_m;
            out[1] = block_l;
        }
    }
}

/* Block (row, head): out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M).
 * With Q8 (head_dim a multiple of 32) the row is also written as int8 blocks
 * for the output projection: each pass over e covers whole 32-lane groups. */
template <bool Q8>
__global__ void qg_attention_merge_kernel(qwen_gpu_dims dims, uint32_t splits, const float *__restrict__ partials,
                                          float *__restrict__ out, qwen_gpu_q8 q8)
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
        const float v = sum * inv;
        out[(size_t)blockIdx.x * d + e] = v;
        if (Q8) qg_q8_store(v, blockIdx.x / dims.n_head, (blockIdx.x % dims.n_head) * d + e, dims.n_head * d, q8);
    }
}

/* Lanes' layout for a head size: float4 loads where d is a multiple of 4
 * (one per lane up to 128, two up to 256), else float2 (four per lane). */
template <int G>
static void qg_attention_split_launch(const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows, uint32_t n,
                                      const float *q, uint32_t splits, float *partials, gufo_gpu_stream s)
{
    const uint32_t d = dims->head_dim, group = dims->n_head / dims->n_head_kv;
    const dim3 grid(n * dims->n_head_kv * ((group + G - 1) / G), splits);
    if (d % 4 == 0 && d <= 128)
        qg_attention_split_kernel<4, 1, G>
            <<<grid, qg_att_shape<4, G>::W * 32, 0, s>>>(*dims, layer, rows, q, splits, partials);
    else if (d % 4 == 0)
        qg_attention_split_kernel<4, 2, G>
            <<<grid, qg_att_shape<8, G>::W * 32, 0, s>>>(*dims, layer, rows, q, splits, partials);
    else
        qg_attention_split_kernel<2, 4, G>
            <<<grid, qg_att_shape<8, G>::W * 32, 0, s>>>(*dims, layer, rows, q, splits, partials);
}

extern "C" int qwen_gpu_attention(void *stream, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows,
                                  uint32_t n, const float *q, uint32_t splits, float *partials, float *out,
                                  const qwen_gpu_q8 *q8)
{
    if (n == 0) return 0;
    if (dims->head_dim == 0 || dims->head_dim % 2 || dims->head_dim > QWEN_GPU_MAX_HEAD_DIM || splits == 0 ||
        splits > QWEN_GPU_MAX_SPLITS || dims->n_head_kv == 0 || dims->n_head % dims->n_head_kv ||
        (q8 && dims->head_dim % 32u))
        return 1;
    const gufo_gpu_stream s = QG_STREAM(stream);
    const uint32_t group = dims->n_head / dims->n_head_kv;
    if (group == 1)
        qg_attention_split_launch<1>(dims, layer, rows, n, q, splits, partials, s);
    else if (group == 2)
        qg_attention_split_launch<2>(dims, layer, rows, n, q, splits, partials, s);
    else if (group <= 4)
        qg_attention_split_launch<4>(dims, layer, rows, n, q, splits, partials, s);
    else
        qg_attention_split_launch<QG_ATT_MAX_GROUP>(dims, layer, rows, n, q, splits, partials, s);
    if (qwen_gpu_launch_check("qwen_gpu_attention (parts)")) return 1;
    if (q8)
        qg_attention_merge_kernel<true><<<n * dims->n_head, 128, 0, s>>>(*dims, splits, partials, out, *q8);
    else
        qg_attention_merge_kernel<false><<<n * dims->n_head, 128, 0, s>>>(*dims, splits, partials, out, qwen_gpu_q8{});
    return qwen_gpu_launch_check("qwen_gpu_attention (merge)");
}

template <int G>
static int qg_preload_attention_group(void)
{
    return qg_preload(qg_attention_split_kernel<4, 1, G>) | qg_preload(qg_attention_split_kernel<4, 2, G>) |
           qg_preload(qg_attention_split_kernel<2, 4, G>);
}

int qg_preload_attention(void)
{
    return qg_preload_attention_group<1>() | qg_preload_attention_group<2>() | qg_preload_attention_group<4>() |
           qg_preload_attention_group<QG_ATT_MAX_GROUP>() | qg_preload(qg_attention_merge_kernel<false>) |
           qg_preload(qg_attention_merge_kernel<true>);
}

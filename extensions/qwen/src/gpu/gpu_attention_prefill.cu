/* gpu_attention_prefill.cu — causal GQA attention of one prefill chunk on the
 * tensor cores: flash attention, FlashAttention-2 style (gpu_kernels.h).
 *
 * The n rows of a chunk are consecutive positions pos0 .. pos0 + n - 1 of one
 * history, so their queries share one key range and one causal diagonal: a
 * block takes QG_FA_ROWS query rows and walks the keys 0 .. (its last
 * position) in tiles of QG_FA_KEYS, keeping an online softmax (running max m
 * and mass l per row, float32) and the output rows in float32 accumulators.
 *
 * Layout of a block's rows: the query heads of one GQA group read the same
 * K/V head, so a block is (row tile, kv head) and its rows are the flattened
 * (query, head-in-group) pairs f = query * group + g. One K/V tile then feeds
 * group x as many query rows as a per-head block would: K/V traffic (float32
 * cache reads, the bottleneck next to the products) drops by the group size.
 * Row f of the block reads q row `query`, head kv_head * group + g, and its
 * causal limit is pos0 + query; rows past the chunk are zero and not stored.
 * The row tiles are launched last first: they have the most keys.
 *
 * Products: raw mma.sync m16n8k16 bf16 with float32 accumulators (inline
 * PTX), operands from shared memory by ldmatrix (.trans for V). Q, K and V
 * are rounded to bfloat16 when they enter shared memory (the cache stays
 * float32); the softmax runs in float32 in the log2 domain (exp2f of
 * s * scale * log2 e - m, the same function), and the probabilities P are
 * rounded to bfloat16 for P V while the row mass l sums the unrounded float32
 * values (as FlashAttention does).
 *
 * Each of the 8 warps owns 16 rows and keeps everything in registers: its Q
 * rows as A fragments (loaded once), S = Q K^T as accumulators, whose layout
 * is known (lane holds rows lane/4 and lane/4 + 8, columns 2 (lane%4) + 0/1
 * of each 8-key tile), so the row max and sum are quad shuffles, and two S
 * tiles packed to bf16 are directly the A fragment of P for P V (no shared
 * memory round trip); the output accumulators are scaled per row the same
 * way and written to global memory straight from the fragments.
 *
 * K/V pipeline: the float32 K and V of tile t + 1 are loaded into registers
 * (float4, coalesced rows) before tile t's products and stored as bf16 into
 * the other of two shared buffers after them, so one barrier per tile and
 * the global latency hides behind the products. Tiles: 128 rows x 32 keys,
 * 256 threads, one block per SM (registers: 64 output + 32 Q + 16 S + 32
 * prefetch floats a thread for head_dim 128). Shared memory for head_dim
 * 128: two buffers of K and V bf16 [32][136] (34 KiB; the Q tile passes
 * through it first). The row stride is padded (D + 8) so the 8 rows of an
 * ldmatrix hit distinct banks. Key tiles above the block's last row's
 * position are never visited, a warp skips the tiles above its own rows,
 * keys past the chunk's last position are never read (zeros in shared
 * memory), and the mask k <= limit is applied where a tile reaches past the
 * warp's first row.
 *
 * NVIDIA only (bf16 mma needs sm_80+). Built with HIP, supported() says no
 * and the launcher returns 1; the provider then uses qwen_gpu_attention().
 */
#include "gpu_common.cuh"

#include <math.h>

#if defined(GUFO_GPU_CUDA)

#define QG_FA_WARPS 8
#define QG_FA_ROWS (QG_FA_WARPS * 16) /* (query, head) rows per block: 16 per warp */
#define QG_FA_KEYS 32                 /* keys per tile */
#define QG_FA_THREADS (QG_FA_WARPS * 32)

/* Byte offsets in the dynamic shared memory of the head_dim D kernel. */
template <int D>
struct qg_fa_layout {
    static constexpr int ld = D + 8; /* bf16 stride of Q/K/V rows: 8 ldmatrix rows land on distinct banks */
    static constexpr size_t tile = (size_t)QG_FA_KEYS * ld * 2; /* one K or V tile */
    static constexpr size_t buffer = 2 * tile;                   /* K then V */
    static constexpr size_t q_bytes = (size_t)QG_FA_ROWS * ld * 2;
    /* Two K/V buffers; the Q tile passes through the same space before the loop. */
    static constexpr size_t bytes = 2 * buffer > q_bytes ? 2 * buffer : q_bytes;
    static_assert((ld * 2) % 16 == 0 && tile % 16 == 0, "ldmatrix rows must be 16-byte aligned");
};

/* Offset of flattened row f's head in q / out: query f / group, head kv_head * group + f % group. */
__device__ __forceinline__ size_t qg_fa_row_offset(uint32_t f, uint32_t group, uint32_t n_head, uint32_t kv_head,
                                                   uint32_t d)
{
    const uint32_t query = f / group, g = f % group;
    return ((size_t)query * n_head + (size_t)kv_head * group + g) * d;
}

/* Four floats as four bf16 (round to nearest even) at dst, 8-byte aligned. */
__device__ __forceinline__ void qg_fa_store4(__nv_bfloat16 *dst, float4 x)
{
    __nv_bfloat162 *d2 = reinterpret_cast<__nv_bfloat162 *>(dst);
    d2[0] = __floats2bfloat162_rn(x.x, x.y);
    d2[1] = __floats2bfloat162_rn(x.z, x.w);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
/* Two floats as one bf16x2 register: lo in the low half (the lower column of an mma fragment). */
__device__ __forceinline__ uint32_t qg_fa_pack(float lo, float hi)
{
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&h);
}

/* ldmatrix .x4: lane l gives the address of row l % 8 of 8x8 matrix l / 8; register i gets
 * matrix i's row lane / 4, columns 2 (lane % 4) and + 1 (.trans: that of the transpose). */
__device__ __forceinline__ void qg_fa_ldsm4(uint32_t r[4], const __nv_bfloat16 *p)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

__device__ __forceinline__ void qg_fa_ldsm4_trans(uint32_t r[4], const __nv_bfloat16 *p)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

/* d += a b, m16n8k16, bf16 in, float32 accumulate. */
__device__ __forceinline__ void qg_fa_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* Block (row tile, kv head blockIdx.y); the row tiles run last first (they have the most keys). */
template <int D>
__global__ void __launch_bounds__(QG_FA_THREADS, 1)
    qg_attention_prefill_kernel(qwen_gpu_dims dims, uint32_t layer, const qwen_gpu_row *__restrict__ rows,
                                uint32_t n, const float *__restrict__ q, float *__restrict__ out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    /* No bf16 mma before Ampere; supported() says no on such devices. */
    (void)dims, (void)layer, (void)rows, (void)n, (void)q, (void)out;
#else
    typedef qg_fa_layout<D> L;
    constexpr int LD = L::ld;
    constexpr int C4 = D / 4;                                        /* float4 per head row */
    constexpr int DK = D / 16;                                       /* k-steps of Q K^T */
    constexpr int DN = D / 8;                                        /* n-tiles of the output */
    constexpr int KN = QG_FA_KEYS / 8;                               /* n-tiles of S */
    constexpr int PF = QG_FA_KEYS * C4 / QG_FA_THREADS;              /* float4 per thread per matrix */
    static_assert(PF * QG_FA_THREADS == QG_FA_KEYS * C4 && QG_FA_THREADS % C4 == 0, "K/V tile split");
    static_assert(QG_FA_KEYS % 16 == 0 && D % 16 == 0, "mma tiling");

    extern __shared__ __align__(128) unsigned char qg_fa_smem[];
    __nv_bfloat16 *const smem = reinterpret_cast<__nv_bfloat16 *>(qg_fa_smem);
    /* Buffer b: K at smem + b * 2 * QG_FA_KEYS * LD, V QG_FA_KEYS * LD after it. */

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int gq = lane >> 2, cq = lane & 3; /* mma fragment: rows gq and gq + 8, columns 2 cq, 2 cq + 1 */
    const uint32_t group = dims.n_head / dims.n_head_kv, kv_head = blockIdx.y;
    const uint32_t total = n * group; /* flattened rows of the chunk */
    const uint32_t f0 = (gridDim.x - 1 - blockIdx.x) * QG_FA_ROWS;
    const uint32_t f_last = (f0 + QG_FA_ROWS < total ? f0 + QG_FA_ROWS : total) - 1;
    const qwen_gpu_row row0 = rows[0];
    /* Keys 0 .. kv_end - 1: up to the position of the block's last query, never past the chunk. */
    const uint32_t kv_end = row0.pos + f_last / group + 1;
    const uint32_t width = dims.n_head_kv * D;
    const float *layer_base = row0.kv + (size_t)layer * row0.capacity * (2u * width);
    const float *keys = layer_base + (size_t)kv_head * D;
    const float *values = layer_base + (size_t)row0.capacity * width + (size_t)kv_head * D;
    const float scale_log2 = 1.0f / sqrtf((float)D) * 1.4426950408889634f; /* softmax in base 2 */
    const uint32_t n_tiles = (kv_end + QG_FA_KEYS - 1) / QG_FA_KEYS;

    /* This thread's share of a K/V tile: float4 (row pf_r + i * PF_STEP, column pf_c). */
    constexpr int PF_STEP = QG_FA_THREADS / C4;
    const int pf_r = tid / C4, pf_c = (tid % C4) * 4;
    float4 kx[PF], vx[PF];
    /* Global loads of tile t into kx / vx; keys past kv_end are zeros (0 * garbage could be NaN in P V). */
    auto prefetch = [&](uint32_t t) {
#pragma unroll
        for (int i = 0; i < PF; i++) {
            const uint32_t j = t * QG_FA_KEYS + (uint32_t)(pf_r + i * PF_STEP);
            kx[i] = vx[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (j < kv_end) {
                kx[i] = __ldg(reinterpret_cast<const float4 *>(keys + (size_t)j * width + pf_c));
                vx[i] = __ldg(reinterpret_cast<const float4 *>(values + (size_t)j * width + pf_c));
            }
        }
    };
    /* kx / vx as bf16 into buffer b. */
    auto stage = [&](int b) {
        __nv_bfloat16 *kb = smem + b * 2 * QG_FA_KEYS * LD, *vb = kb + QG_FA_KEYS * LD;
#pragma unroll
        for (int i = 0; i < PF; i++) {
            qg_fa_store4(kb + (pf_r + i * PF_STEP) * LD + pf_c, kx[i]);
            qg_fa_store4(vb + (pf_r + i * PF_STEP) * LD + pf_c, vx[i]);
        }
    };

    prefetch(0);

    /* Q tile, rounded to bf16, through shared memory into A fragments; rows past the chunk are zero. */
    for (int i = tid; i < QG_FA_ROWS * C4; i += QG_FA_THREADS) {
        const int r = i / C4, c = (i % C4) * 4;
        const uint32_t f = f0 + (uint32_t)r;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (f < total)
            x = *reinterpret_cast<const float4 *>(q + qg_fa_row_offset(f, group, dims.n_head, kv_head, D) + c);
        qg_fa_store4(smem + r * LD + c, x);
    }
    __syncthreads();
    /* A fragment k-step kk: matrices (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15). */
    uint32_t qa[DK][4];
    {
        const __nv_bfloat16 *qrow = smem + (warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + (lane >> 4) * 8;
#pragma unroll
        for (int kk = 0; kk < DK; kk++) qg_fa_ldsm4(qa[kk], qrow + kk * 16);
    }
    __syncthreads(); /* Q is read: buffer 0 may take K/V */
    stage(0);
    __syncthreads();

    /* This warp's rows and their causal limits (rows past the chunk take the last row's: never stored). */
    const uint32_t wf0 = f0 + (uint32_t)warp * 16;
    const bool active = wf0 < total;
    const uint32_t w_lo = row0.pos + wf0 / group; /* the warp's smallest limit */
    const uint32_t w_hi = row0.pos + ((wf0 + 15 < total ? wf0 + 15 : total - 1) / group);
    const uint32_t fa = wf0 + (uint32_t)gq, fb = fa + 8;
    const uint32_t lim_a = row0.pos + (fa < total ? fa : total - 1) / group;
    const uint32_t lim_b = row0.pos + (fb < total ? fb : total - 1) / group;

    float o[DN][4];
#pragma unroll
    for (int nt = 0; nt < DN; nt++) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
    /* Running max (scaled, log2 domain) of rows gq / gq + 8, and this lane's part of their mass. */
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

    /* Per-lane ldmatrix row offsets. K (non-trans, B of Q K^T): matrices (keys 0-7, d 0-7),
     * (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15) -> b0 b1 of n-tile 2p, b0 b1 of 2p + 1.
     * V (trans, B of P V): (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)
     * -> b0 b1 of d-tile 2p, b0 b1 of d-tile 2p + 1. */
    const int k_off = ((lane & 7) + (lane >> 4) * 8) * LD + ((lane >> 3) & 1) * 8;
    const int v_off = ((lane & 7) + ((lane >> 3) & 1) * 8) * LD + (lane >> 4) * 8;

#pragma unroll 1
    for (uint32_t t = 0; t < n_tiles; t++) {
        const uint32_t k0 = t * QG_FA_KEYS;
        const int b = (int)(t & 1);
        const bool more = t + 1 < n_tiles;
        if (more) prefetch(t + 1); /* in flight during this tile's products */

        if (active && k0 <= w_hi) {
            const __nv_bfloat16 *kb = smem + b * 2 * QG_FA_KEYS * LD, *vb = kb + QG_FA_KEYS * LD;
            /* S = Q K^T, 16 rows x QG_FA_KEYS keys in KN accumulator tiles. */
            float s[KN][4];
#pragma unroll
            for (int nt = 0; nt < KN; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < DK; kk++) {
#pragma unroll
                for (int p = 0; p < KN / 2; p++) {
                    uint32_t kf[4];
                    qg_fa_ldsm4(kf, kb + p * 16 * LD + kk * 16 + k_off);
                    qg_fa_mma(s[2 * p], qa[kk], kf[0], kf[1]);
                    qg_fa_mma(s[2 * p + 1], qa[kk], kf[2], kf[3]);
                }
            }
            /* Mask keys past each row's position (only where the tile reaches past the warp's first row). */
            if (k0 + QG_FA_KEYS - 1 > w_lo) {
#pragma unroll
                for (int nt = 0; nt < KN; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const uint32_t key = k0 + (uint32_t)(nt * 8 + 2 * cq + e);
                        if (key > lim_a) s[nt][e] = -INFINITY;
                        if (key > lim_b) s[nt][2 + e] = -INFINITY;
                    }
                }
            }
            /* Online softmax: the four lanes of a quad hold a row's QG_FA_KEYS scores. */
            float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < KN; nt++) {
                mx_a = fmaxf(mx_a, fmaxf(s[nt][0], s[nt][1]));
                mx_b = fmaxf(mx_b, fmaxf(s[nt][2], s[nt][3]));
            }
            mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
            mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
            mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
            mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
            /* Key 0 is in every row's first tile, so the new maxima are finite; the guards keep
             * -inf - -inf out anyway. */
            const float mn_a = fmaxf(m_a, mx_a * scale_log2), mn_b = fmaxf(m_b, mx_b * scale_log2);
            const float base_a = mn_a == -INFINITY ? 0.0f : mn_a, base_b = mn_b == -INFINITY ? 0.0f : mn_b;
            const float corr_a = exp2f(m_a - base_a), corr_b = exp2f(m_b - base_b); /* 0 on the first tile */
            m_a = mn_a;
            m_b = mn_b;
            float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
            for (int nt = 0; nt < KN; nt++) {
                s[nt][0] = exp2f(fmaf(s[nt][0], scale_log2, -base_a));
                s[nt][1] = exp2f(fmaf(s[nt][1], scale_log2, -base_a));
                s[nt][2] = exp2f(fmaf(s[nt][2], scale_log2, -base_b));
                s[nt][3] = exp2f(fmaf(s[nt][3], scale_log2, -base_b));
                sum_a += s[nt][0] + s[nt][1];
                sum_b += s[nt][2] + s[nt][3];
            }
            l_a = l_a * corr_a + sum_a; /* the quad's partial sums: added up at the end */
            l_b = l_b * corr_b + sum_b;
#pragma unroll
            for (int nt = 0; nt < DN; nt++) {
                o[nt][0] *= corr_a;
                o[nt][1] *= corr_a;
                o[nt][2] *= corr_b;
                o[nt][3] *= corr_b;
            }
            /* O += P V: S tiles 2j and 2j + 1 are, rounded to bf16, the A fragment of keys 16j .. 16j + 15. */
#pragma unroll
            for (int j = 0; j < KN / 2; j++) {
                const uint32_t pa[4] = {qg_fa_pack(s[2 * j][0], s[2 * j][1]), qg_fa_pack(s[2 * j][2], s[2 * j][3]),
                                        qg_fa_pack(s[2 * j + 1][0], s[2 * j + 1][1]),
                                        qg_fa_pack(s[2 * j + 1][2], s[2 * j + 1][3])};
#pragma unroll
                for (int p = 0; p < DN / 2; p++) {
                    uint32_t vf[4];
                    qg_fa_ldsm4_trans(vf, vb + j * 16 * LD + p * 16 + v_off);
                    qg_fa_mma(o[2 * p], pa, vf[0], vf[1]);
                    qg_fa_mma(o[2 * p + 1], pa, vf[2], vf[3]);
                }
            }
        }
        /* The next tile into the other buffer, which every warp left at the end of the previous tile. */
        if (more) stage(b ^ 1);
        __syncthreads();
    }

    /* out = O / l, straight from the fragments: lane quad gq writes 8 consecutive floats per row and tile. */
    if (active) {
        l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
        l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
        l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
        l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
        const float inv_a = 1.0f / l_a, inv_b = 1.0f / l_b; /* l >= 1: the row's maximum contributes exp2(0) */
        if (fa < total) {
            float *dst = out + qg_fa_row_offset(fa, group, dims.n_head, kv_head, D) + 2 * cq;
#pragma unroll
            for (int nt = 0; nt < DN; nt++)
                *reinterpret_cast<float2 *>(dst + nt * 8) = make_float2(o[nt][0] * inv_a, o[nt][1] * inv_a);
        }
        if (fb < total) {
            float *dst = out + qg_fa_row_offset(fb, group, dims.n_head, kv_head, D) + 2 * cq;
#pragma unroll
            for (int nt = 0; nt < DN; nt++)
                *reinterpret_cast<float2 *>(dst + nt * 8) = make_float2(o[nt][2] * inv_b, o[nt][3] * inv_b);
        }
    }
#endif
}

/* Once per process: the dynamic shared memory size (34 KiB for head_dim 128, under
 * the default 48 KiB; set anyway so a larger tiling stays launchable). */
template <int D>
static int qg_fa_configure(void)
{
    static bool configured = false; /* a race only sets the same attributes twice */
    if (configured) return 0;
    cudaError_t e = cudaFuncSetAttribute(qg_attention_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)qg_fa_layout<D>::bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        qwen_gpu_set_error("qwen_gpu_attention_prefill (shared memory size)", cudaGetErrorString(e));
        return 1;
    }
    configured = true;
    return 0;
}

template <int D>
static int qg_fa_launch(gufo_gpu_stream s, const qwen_gpu_dims *dims, uint32_t layer, const qwen_gpu_row *rows,
                        uint32_t n, const float *q, float *out)
{
    if (qg_fa_configure<D>()) return 1;
    const uint32_t group = dims->n_head / dims->n_head_kv;
    const dim3 grid((n * group + QG_FA_ROWS - 1) / QG_FA_ROWS, dims->n_head_kv);
    qg_attention_prefill_kernel<D>
        <<<grid, QG_FA_THREADS, qg_fa_layout<D>::bytes, s>>>(*dims, layer, rows, n, q, out);
    return qwen_gpu_launch_check("qwen_gpu_attention_prefill");
}

extern "C" int qwen_gpu_attention_prefill_supported(const qwen_gpu_dims *dims)
{
    if (dims->head_dim != 64 && dims->head_dim != 128) return 0;
    if (dims->n_head_kv == 0 || dims->n_head % dims->n_head_kv != 0) return 0;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major >= 8; /* bf16 tensor cores */
}

extern "C" int qwen_gpu_attention_prefill(void *stream, const qwen_gpu_dims *dims, uint32_t layer,
                                          const qwen_gpu_row *rows, uint32_t n, const float *q, float *out)
{
    if (n == 0) return 0;
    const gufo_gpu_stream s = QG_STREAM(stream);
    if (dims->n_head_kv != 0 && dims->n_head % dims->n_head_kv == 0) {
        if (dims->head_dim == 64) return qg_fa_launch<64>(s, dims, layer, rows, n, q, out);
        if (dims->head_dim == 128) return qg_fa_launch<128>(s, dims, layer, rows, n, q, out);
    }
    qwen_gpu_set_error("qwen_gpu_attention_prefill", "no kernel for this head shape");
    return 1;
}

int qg_preload_attention_prefill(void)
{
    return qg_preload(qg_attention_prefill_kernel<64>) | qg_preload(qg_attention_prefill_kernel<128>);
}

#else /* HIP: no tensor-core kernel yet; qwen_gpu_attention() serves prefill */

extern "C" int qwen_gpu_attention_prefill_supported(const qwen_gpu_dims *dims)
{
    (void)dims;
    return 0;
}

extern "C" int qwen_gpu_attention_prefill(void *stream, const qwen_gpu_dims *dims, uint32_t layer,
                                          const qwen_gpu_row *rows, uint32_t n, const float *q, float *out)
{
    (void)stream, (void)dims, (void)layer, (void)rows, (void)n, (void)q, (void)out;
    qwen_gpu_set_error("qwen_gpu_attention_prefill", "not built for HIP");
    return 1;
}

int qg_preload_attention_prefill(void)
{
    return 0;
}

#endif

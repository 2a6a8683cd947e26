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
 *
 * Products: nvcuda::wmma bf16 m16n16k16 with float32 accumulators. Q, K and V
 * are rounded to bfloat16 when they enter shared memory (the cache stays
 * float32); S = Q K^T comes back in float32, the softmax runs in float32 in
 * the log2 domain (exp2f of s * scale * log2 e, the same function), and the
 * probabilities P are rounded to bfloat16 for P V while the row mass l sums
 * the unrounded float32 values (as FlashAttention does).
 *
 * Each of the 4 warps owns 16 rows: S goes through shared memory (a wmma
 * accumulator's element order is unspecified), where two lanes per row take
 * the row's max and sum. The output stays in accumulator fragments; to scale
 * a fragment by its rows' correction factors, each warp loads once a
 * fragment whose elements hold their own row index (the element order is
 * fixed for a fragment type, so it tells every element's row).
 *
 * Tiles: 64 rows x 64 keys, 128 threads. Shared memory for head_dim 128:
 * Q, K and V tiles bf16 [64][136] (17 KiB each), S float [64][72] (18 KiB),
 * P bf16 [64][72] (9 KiB), per-row factors: 78.3 KiB. Registers decide the
 * occupancy: the output accumulators alone are 64 floats a thread for
 * head_dim 128, and ptxas wants ~250 with S's and the K/V fragments in
 * flight, so two blocks share an SM (capped at 168 registers for three, it
 * spills), one block's K/V loads overlapping the other's products. Q is read
 * from shared memory each tile rather than kept in registers for the same
 * reason. The row strides are padded (136, 72) so the fragment loads and the
 * float4 softmax reads do not hit the same banks; the output is staged in the
 * K/V space. Key tiles above the block's last row's position are never
 * visited, keys past the chunk's last position are never read (zeros in
 * shared memory), and the mask k <= limit is applied to every score.
 *
 * NVIDIA only (wmma bf16 needs sm_80+). Built with HIP, supported() says no
 * and the launcher returns 1; the provider then uses qwen_gpu_attention().
 */
#include "gpu_common.cuh"

#include <math.h>

#if defined(GUFO_GPU_CUDA)

#include <mma.h>

#define QG_FA_ROWS 64 /* (query, head) rows per block: 4 warps x 16 */
#define QG_FA_KEYS 64 /* keys per tile */
#define QG_FA_WARPS 4
#define QG_FA_THREADS (QG_FA_WARPS * 32)
#define QG_FA_SLD 72 /* float stride of S: 8 mod 32 words, so a quarter-warp's float4 reads miss each other */
#define QG_FA_PLD 72 /* bf16 stride of P (a multiple of 8, 32-byte aligned fragment rows) */

/* Byte offsets in the dynamic shared memory of the head_dim D kernel. */
template <int D>
struct qg_fa_layout {
    static constexpr int ld = D + 8; /* bf16 stride of Q/K/V tiles: 16-byte rows that spread over the banks */
    static constexpr size_t kv_tile = (size_t)QG_FA_KEYS * ld * 2;
    static constexpr size_t q_off = 0;
    static constexpr size_t k_off = q_off + (size_t)QG_FA_ROWS * ld * 2;
    static constexpr size_t v_off = k_off + kv_tile;
    static constexpr size_t s_off = v_off + kv_tile;
    static constexpr size_t p_off = s_off + (size_t)QG_FA_ROWS * QG_FA_SLD * 4;
    static constexpr size_t c_off = p_off + (size_t)QG_FA_ROWS * QG_FA_PLD * 2;
    static constexpr size_t bytes = c_off + (size_t)QG_FA_ROWS * 4;
    /* The output (float, stride ld) is staged over K and V. */
    static_assert((size_t)QG_FA_ROWS * ld * 4 <= s_off - k_off, "output staging must fit in K and V");
    static_assert(k_off % 32 == 0 && v_off % 32 == 0 && s_off % 32 == 0 && p_off % 32 == 0 && c_off % 32 == 0,
                  "wmma pointers must be 32-byte aligned");
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

/* Block (row tile blockIdx.x, kv head blockIdx.y). */
template <int D>
__global__ void __launch_bounds__(QG_FA_THREADS, 2)
    qg_attention_prefill_kernel(qwen_gpu_dims dims, uint32_t layer, const qwen_gpu_row *__restrict__ rows,
                                uint32_t n, const float *__restrict__ q, float *__restrict__ out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    /* No bf16 wmma before Ampere; supported() says no on such devices. */
    (void)dims, (void)layer, (void)rows, (void)n, (void)q, (void)out;
#else
    using namespace nvcuda;
    typedef qg_fa_layout<D> L;
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_frag;
    constexpr int C4 = D / 4;         /* float4 per head row */
    constexpr int DT = D / 16;        /* 16-wide slices of a head */
    constexpr int KT = QG_FA_KEYS / 16;

    extern __shared__ __align__(128) unsigned char qg_fa_smem[];
    __nv_bfloat16 *ks = reinterpret_cast<__nv_bfloat16 *>(qg_fa_smem + L::k_off);
    __nv_bfloat16 *vs = reinterpret_cast<__nv_bfloat16 *>(qg_fa_smem + L::v_off);
    float *ss = reinterpret_cast<float *>(qg_fa_smem + L::s_off);
    __nv_bfloat16 *ps = reinterpret_cast<__nv_bfloat16 *>(qg_fa_smem + L::p_off);
    float *factor = reinterpret_cast<float *>(qg_fa_smem + L::c_off);
    __nv_bfloat16 *qs = reinterpret_cast<__nv_bfloat16 *>(qg_fa_smem + L::q_off);
    float *os = reinterpret_cast<float *>(qg_fa_smem + L::k_off); /* staging, after the loop */

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const uint32_t group = dims.n_head / dims.n_head_kv, kv_head = blockIdx.y;
    const uint32_t total = n * group; /* flattened rows of the chunk */
    const uint32_t f0 = blockIdx.x * QG_FA_ROWS;
    const uint32_t f_last = (f0 + QG_FA_ROWS < total ? f0 + QG_FA_ROWS : total) - 1;
    const qwen_gpu_row row0 = rows[0];
    /* Keys 0 .. kv_end - 1: up to the position of the block's last query, never past the chunk. */
    const uint32_t kv_end = row0.pos + f_last / group + 1;
    const uint32_t width = dims.n_head_kv * D;
    const float *layer_base = row0.kv + (size_t)layer * row0.capacity * (2u * width);
    const float *keys = layer_base + (size_t)kv_head * D;
    const float *values = layer_base + (size_t)row0.capacity * width + (size_t)kv_head * D;
    const float scale_log2 = 1.0f / sqrtf((float)D) * 1.4426950408889634f; /* softmax in base 2 */

    /* Q tile, rounded to bf16; rows past the chunk are zero. */
    for (int i = tid; i < QG_FA_ROWS * C4; i += QG_FA_THREADS) {
        const int r = i / C4, c = (i % C4) * 4;
        const uint32_t f = f0 + (uint32_t)r;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (f < total)
            x = *reinterpret_cast<const float4 *>(q + qg_fa_row_offset(f, group, dims.n_head, kv_head, D) + c);
        qg_fa_store4(qs + r * L::ld + c, x);
    }
    /* (The loop's first __syncthreads() publishes it.) */

    /* This warp's Q, S and P rows; a fragment whose every element holds its row (0..15). */
    const __nv_bfloat16 *qw = qs + warp * 16 * L::ld;
    float *sw = ss + warp * 16 * QG_FA_SLD;
    __nv_bfloat16 *pw = ps + warp * 16 * QG_FA_PLD;
    float *fw = factor + warp * 16;
    for (int i = lane; i < 16 * 16; i += 32) sw[(i / 16) * QG_FA_SLD + i % 16] = (float)(i / 16);
    __syncwarp();
    acc_frag row_of;
    wmma::load_matrix_sync(row_of, sw, QG_FA_SLD, wmma::mem_row_major);
    __syncwarp();

    acc_frag o[DT];
#pragma unroll
    for (int nn = 0; nn < DT; nn++) wmma::fill_fragment(o[nn], 0.0f);

    /* Softmax state: lanes 2r and 2r+1 share row r, each with half of its 64 scores. */
    const int srow = lane >> 1, half = lane & 1;
    const uint32_t my_query = (f0 + (uint32_t)(warp * 16 + srow)) / group;
    /* Rows past the chunk get the last key as their limit: harmless, never stored. */
    const uint32_t limit = row0.pos + my_query < kv_end - 1 ? row0.pos + my_query : kv_end - 1;
    float m = -INFINITY, l = 0.0f;

    const uint32_t n_tiles = (kv_end + QG_FA_KEYS - 1) / QG_FA_KEYS;
    for (uint32_t t = 0; t < n_tiles; t++) {
        const uint32_t k0 = t * QG_FA_KEYS;
        __syncthreads(); /* every warp is done with the previous K/V tile */
        /* K and V tile to bf16; keys past kv_end are zeros (0 * garbage could be NaN in P V). */
        constexpr int PER = QG_FA_KEYS * C4 / QG_FA_THREADS; /* float4 per thread per matrix */
        constexpr int BATCH = PER < 4 ? PER : 4;             /* loads in flight before the stores */
        static_assert(PER % BATCH == 0, "K/V tile split");
#pragma unroll 1
        for (int b = 0; b < PER; b += BATCH) {
            float4 kx[BATCH], vx[BATCH];
#pragma unroll
            for (int u = 0; u < BATCH; u++) {
                const int i = tid + (b + u) * QG_FA_THREADS;
                const int r = i / C4, c = (i % C4) * 4;
                const uint32_t j = k0 + (uint32_t)r;
                kx[u] = vx[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (j < kv_end) {
                    kx[u] = *reinterpret_cast<const float4 *>(keys + (size_t)j * width + c);
                    vx[u] = *reinterpret_cast<const float4 *>(values + (size_t)j * width + c);
                }
            }
#pragma unroll
            for (int u = 0; u < BATCH; u++) {
                const int i = tid + (b + u) * QG_FA_THREADS;
                const int r = i / C4, c = (i % C4) * 4;
                qg_fa_store4(ks + r * L::ld + c, kx[u]);
                qg_fa_store4(vs + r * L::ld + c, vx[u]);
            }
        }
        __syncthreads();

        /* S = Q K^T: K is [key][d] row-major, i.e. K^T column-major. */
        {
            acc_frag s[KT];
#pragma unroll
            for (int nn = 0; nn < KT; nn++) wmma::fill_fragment(s[nn], 0.0f);
#pragma unroll
            for (int kk = 0; kk < DT; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qf;
                wmma::load_matrix_sync(qf, qw + kk * 16, L::ld);
#pragma unroll
                for (int nn = 0; nn < KT; nn++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> kf;
                    wmma::load_matrix_sync(kf, ks + nn * 16 * L::ld + kk * 16, L::ld);
                    wmma::mma_sync(s[nn], qf, kf, s[nn]);
                }
            }
#pragma unroll
            for (int nn = 0; nn < KT; nn++)
                wmma::store_matrix_sync(sw + nn * 16, s[nn], QG_FA_SLD, wmma::mem_row_major);
        }
        __syncwarp();

        /* Online softmax of row srow: this lane's columns 8i + 4 half .. + 3. */
        {
            const float *srp = sw + srow * QG_FA_SLD;
            float v[32];
            float tile_max = -INFINITY;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int c = 8 * i + 4 * half;
                const float4 x = *reinterpret_cast<const float4 *>(srp + c);
                const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float sv = k0 + (uint32_t)(c + e) <= limit ? xs[e] * scale_log2 : -INFINITY;
                    v[4 * i + e] = sv;
                    tile_max = fmaxf(tile_max, sv);
                }
            }
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
            const float m_new = fmaxf(m, tile_max);
            /* Key 0 is in every row's first tile, so m_new is finite; the guard keeps -inf - -inf out anyway. */
            const float base = m_new == -INFINITY ? 0.0f : m_new;
            const float correction = exp2f(m - base); /* 0 on the first tile (m = -inf) */
            float sum = 0.0f;
            __nv_bfloat16 *prp = pw + srow * QG_FA_PLD;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int c = 8 * i + 4 * half;
                float4 p;
                p.x = exp2f(v[4 * i + 0] - base);
                p.y = exp2f(v[4 * i + 1] - base);
                p.z = exp2f(v[4 * i + 2] - base);
                p.w = exp2f(v[4 * i + 3] - base);
                sum += (p.x + p.y) + (p.z + p.w);
                qg_fa_store4(prp + c, p);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            l = l * correction + sum;
            m = m_new;
            if (half == 0) fw[srow] = correction;
        }
        __syncwarp();

        /* O = O * correction(row) + P V. */
#pragma unroll
        for (int e = 0; e < row_of.num_elements; e++) {
            const float cf = fw[(int)row_of.x[e]];
#pragma unroll
            for (int nn = 0; nn < DT; nn++) o[nn].x[e] *= cf;
        }
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> pf;
            wmma::load_matrix_sync(pf, pw + kk * 16, QG_FA_PLD);
#pragma unroll
            for (int nn = 0; nn < DT; nn++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> vf;
                wmma::load_matrix_sync(vf, vs + kk * 16 * L::ld + nn * 16, L::ld);
                wmma::mma_sync(o[nn], pf, vf, o[nn]);
            }
        }
    }

    /* out = O / l: scale in the fragments, stage in the K/V space, write the rows of the chunk. */
    __syncwarp();
    if (half == 0) fw[srow] = 1.0f / l; /* l >= 1: the row's maximum contributes exp2(0) */
    __syncwarp();
#pragma unroll
    for (int e = 0; e < row_of.num_elements; e++) {
        const float inv = fw[(int)row_of.x[e]];
#pragma unroll
        for (int nn = 0; nn < DT; nn++) o[nn].x[e] *= inv;
    }
    __syncthreads(); /* every warp is done with the last K/V tile */
    float *ow = os + warp * 16 * L::ld;
#pragma unroll
    for (int nn = 0; nn < DT; nn++) wmma::store_matrix_sync(ow + nn * 16, o[nn], L::ld, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 16 * C4; i += 32) {
        const int r = i / C4, c = (i % C4) * 4;
        const uint32_t f = f0 + (uint32_t)(warp * 16 + r);
        if (f < total)
            *reinterpret_cast<float4 *>(out + qg_fa_row_offset(f, group, dims.n_head, kv_head, D) + c) =
                *reinterpret_cast<const float4 *>(ow + r * L::ld + c);
    }
#endif
}

/* Once per process: the head_dim 128 kernel wants more than the default 48 KiB of
 * shared memory, and the whole SM's worth as carveout so two blocks fit. */
template <int D>
static int qg_fa_configure(void)
{
    static bool configured = false; /* a race only sets the same attributes twice */
    if (configured) return 0;
    cudaError_t e = cudaFuncSetAttribute(qg_attention_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)qg_fa_layout<D>::bytes);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(qg_attention_prefill_kernel<D>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 (int)cudaSharedmemCarveoutMaxShared);
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

/* gpu_sample.cu — choosing the next token on the device (gpu_kernels.h).
 *
 * Greedy decoding is an argmax with the CPU sampler's tie rule (lowest id).
 * Sampling keeps sampling.h's order (top-k, softmax with temperature, top-p,
 * min-p, draw) but turns each cut into a threshold on the logit found by
 * bisection over the float order (32 counting passes over the row in L2),
 * instead of sorting 150k candidates; the draw walks the kept tokens in id
 * order. The uniform number comes from a counter-based hash of (seed,
 * counter), so a draw depends on the seed and the position only.
 */
#include "gpu_common.cuh"

#include <math.h>

#define QG_SAMPLE_THREADS 1024

/* Floats in an order-preserving unsigned encoding, so bisection can run on bits. */
__device__ __forceinline__ uint32_t qg_order(float f)
{
    const uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float qg_unorder(uint32_t u)
{
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

__device__ __forceinline__ float qg_logit(const float *row, uint32_t i)
{
    const float v = row[i];
    return isnan(v) ? -INFINITY : v;
}

/* (value, id) with the larger value winning and the lower id on ties. */
__device__ __forceinline__ void qg_better(float &v, int32_t &id, float ov, int32_t oid)
{
    if (ov > v || (ov == v && oid < id)) {
        v = ov;
        id = oid;
    }
}

__device__ void qg_block_argmax(const float *row, uint32_t n_vocab, float *best_v, int32_t *best_id)
{
    __shared__ float sv[QG_SAMPLE_THREADS / 32];
    __shared__ int32_t sid[QG_SAMPLE_THREADS / 32];
    float v = -INFINITY;
    int32_t id = 0x7fffffff;
    for (uint32_t i = threadIdx.x; i < n_vocab; i += blockDim.x) qg_better(v, id, qg_logit(row, i), (int32_t)i);
    for (int mask = 16; mask > 0; mask >>= 1) {
        const float ov = gufo_gpu_shfl_xor(v, mask);
        const int32_t oid = gufo_gpu_shfl_xor(id, mask);
        qg_better(v, id, ov, oid);
    }
    __syncthreads();
    if (threadIdx.x % 32 == 0) {
        sv[threadIdx.x / 32] = v;
        sid[threadIdx.x / 32] = id;
    }
    __syncthreads();
    v = -INFINITY;
    id = 0x7fffffff;
    for (uint32_t w = 0; w < blockDim.x / 32; w++) qg_better(v, id, sv[w], sid[w]);
    *best_v = v;
    *best_id = id == 0x7fffffff ? 0 : id;
}

__global__ void qg_argmax_kernel(const float *__restrict__ logits, uint32_t n_vocab, int32_t *__restrict__ tokens)
{
    float v;
    int32_t id;
    qg_block_argmax(logits + (size_t)blockIdx.x * n_vocab, n_vocab, &v, &id);
    if (threadIdx.x == 0) tokens[blockIdx.x] = id;
}

extern "C" int qwen_gpu_argmax(void *stream, const float *logits, uint32_t n, uint32_t n_vocab, int32_t *tokens)
{
    if (n == 0) return 0;
    qg_argmax_kernel<<<n, QG_SAMPLE_THREADS, 0, QG_STREAM(stream)>>>(logits, n_vocab, tokens);
    return qwen_gpu_launch_check("qwen_gpu_argmax");
}

/* splitmix64 finaliser over (seed, counter): 53 bits -> [0, 1). */
__device__ __forceinline__ double qg_uniform(uint64_t seed, uint64_t counter)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (counter + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Largest threshold t (as an ordered key) such that f(t) >= target, where f
 * is non-increasing in t: f(t) = sum over logits >= t of weight(logit). */
template <typename Weight>
__device__ uint32_t qg_bisect(const float *row, uint32_t n_vocab, uint32_t lo, uint32_t hi, double target,
                              Weight weight, float *scratch)
{
    /* Invariant: f(lo) >= target; answer in [lo, hi]. */
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        const float t = qg_unorder(mid);
        float part = 0.0f;
        for (uint32_t i = threadIdx.x; i < n_vocab; i += blockDim.x) {
            const float v = qg_logit(row, i);
            if (v >= t) part += weight(v);
        }
        const double total = (double)qg_block_sum(part, scratch);
        if (total >= target)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

struct qg_count {
    __device__ float operator()(float) const { return 1.0f; }
};

struct qg_mass {
    float max, inv_temperature;
    __device__ float operator()(float v) const { return expf((v - max) * inv_temperature); }
};

__global__ void qg_sample_kernel(const float *__restrict__ logits, uint32_t n_vocab,
                                 const qwen_gpu_sampling *__restrict__ sampling, int32_t *__restrict__ tokens)
{
    __shared__ float scratch[QG_SAMPLE_THREADS / 32];
    __shared__ float chunk_mass[QG_SAMPLE_THREADS];
    const float *row = logits + (size_t)blockIdx.x * n_vocab;
    const qwen_gpu_sampling p = sampling[blockIdx.x];
    float max_v;
    int32_t best;
    qg_block_argmax(row, n_vocab, &max_v, &best);
    if (p.temperature <= 0.0f || max_v == -INFINITY) {
        if (threadIdx.x == 0) tokens[blockIdx.x] = best;
        return;
    }
    const qg_mass mass = {max_v, 1.0f / p.temperature};
    uint32_t cut = qg_order(-INFINITY); /* keep logits >= qg_unorder(cut) */
    const uint32_t top = qg_order(max_v);
    if (p.top_k > 0 && (uint32_t)p.top_k < n_vocab)
        cut = qg_bisect(row, n_vocab, cut, top, (double)p.top_k, qg_count(), scratch);
    if (p.top_p < 1.0f) {
        float part = 0.0f;
        const float t = qg_unorder(cut);
        for (uint32_t i = threadIdx.x; i < n_vocab; i += blockDim.x) {
            const float v = qg_logit(row, i);
            if (v >= t) part += mass(v);
        }
        const double kept = (double)qg_block_sum(part, scratch);
        cut = qg_bisect(row, n_vocab, cut, top, (double)p.top_p * kept, mass, scratch);
    }
    if (p.min_p > 0.0f) {
        /* The best token has mass 1, so min-p keeps mass >= min_p. */
        const float floor_v = max_v + logf(p.min_p) * p.temperature;
        const uint32_t key = qg_order(floor_v);
        if (key > cut) cut = key < top ? key : top;
    }
    const float t = qg_unorder(cut);

    /* Each thread owns a contiguous chunk of ids; an exclusive scan of the
     * chunks' mass finds the chunk the draw lands in, then its owner walks it. */
    const uint32_t per = (n_vocab + blockDim.x - 1) / blockDim.x;
    const uint32_t first = threadIdx.x * per, last = first + per < n_vocab ? first + per : n_vocab;
    float mine = 0.0f;
    for (uint32_t i = first; i < last; i++) {
        const float v = qg_logit(row, i);
        if (v >= t) mine += mass(v);
    }
    chunk_mass[threadIdx.x] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (uint32_t c = 0; c < blockDim.x; c++) total += chunk_mass[c];
        double u = qg_uniform(p.seed, p.counter) * total;
        int32_t chosen = best;
        for (uint32_t c = 0; c < blockDim.x; c++) {
            if (u < chunk_mass[c]) {
                const uint32_t c_first = c * per, c_last = c_first + per < n_vocab ? c_first + per : n_vocab;
                for (uint32_t i = c_first; i < c_last; i++) {
                    const float v = qg_logit(row, i);
                    if (v < t) continue;
                    chosen = (int32_t)i;
                    u -= mass(v);
                    if (u < 0.0) break;
                }
                break;
            }
            u -= chunk_mass[c];
        }
        tokens[blockIdx.x] = chosen;
    }
}

extern "C" int qwen_gpu_sample(void *stream, const float *logits, uint32_t n, uint32_t n_vocab,
                               const qwen_gpu_sampling *sampling, int32_t *tokens)
{
    if (n == 0) return 0;
    qg_sample_kernel<<<n, QG_SAMPLE_THREADS, 0, QG_STREAM(stream)>>>(logits, n_vocab, sampling, tokens);
    return qwen_gpu_launch_check("qwen_gpu_sample");
}

int qg_preload_sample(void)
{
    return qg_preload(qg_argmax_kernel) | qg_preload(qg_sample_kernel);
}

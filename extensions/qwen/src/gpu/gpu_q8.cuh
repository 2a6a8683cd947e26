/* gpu_q8.cuh — activations as 8-bit integers (gpu_kernels.h's qwen_gpu_q8):
 * how a kernel writes them and the 4-way integer dot product that reads them.
 *
 * Why: a decode step's matrix-vector products read each weight once but the
 * activation vector once per weight block, from L1. With float32 activations
 * a Q4_K block (144 bytes for 256 weights) drags 1 KiB of x through L1, which
 * caps the kernel well below HBM bandwidth; as int8 with one scale per 32 it
 * is 264 bytes, and the products become integer dot products (dp4a). This is
 * llama.cpp's q8_1 scheme; the exact float path stays available
 * (--qwen-gpu-decode fp32).
 */
#ifndef QWEN_GPU_Q8_CUH
#define QWEN_GPU_Q8_CUH

#include "gpu_common.cuh"

/* Sum of the four signed byte products of a and b, plus c. */
__device__ __forceinline__ int qg_dp4a(int a, int b, int c)
{
#if defined(GUFO_GPU_HIP)
    /* Portable across AMD targets (the dot instructions differ by generation). */
    const int8_t *x = reinterpret_cast<const int8_t *>(&a), *y = reinterpret_cast<const int8_t *>(&b);
    return c + x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3];
#else
    return __dp4a(a, b, c);
#endif
}

/**
 * Stores value v, element i (a multiple of 32 apart per block) of vector
 * `vec` of `cols`, as int8. Every lane of a 32-lane group must call it
 * together with the 32 consecutive elements of one block (lane l holding
 * element 32b + l): the group finds the block's largest magnitude, and lane 0
 * writes the block's scale d = max / 127 and d * (sum of its integers).
 */
__device__ __forceinline__ void qg_q8_store(float v, uint32_t vec, uint32_t i, uint32_t cols, qwen_gpu_q8 out)
{
    float amax = fabsf(v);
    for (int mask = 16; mask > 0; mask >>= 1) amax = fmaxf(amax, gufo_gpu_shfl_xor(amax, mask));
    const float d = amax / 127.0f;
    int q = d > 0.0f ? (int)rintf(v / d) : 0;
    q = q > 127 ? 127 : (q < -127 ? -127 : q);
    int sum = q;
    for (int mask = 16; mask > 0; mask >>= 1) sum += gufo_gpu_shfl_xor(sum, mask);
    out.qs[(size_t)vec * cols + i] = (int8_t)q;
    if ((threadIdx.x & 31) == 0) {
        float *ds = out.ds + 2 * ((size_t)vec * (cols / 32u) + i / 32u);
        ds[0] = d;
        ds[1] = __fmul_rn(d, (float)sum);
    }
}

/**
 * qg_q8_store() for four values per lane: elements i .. i+3 (i a multiple of
 * 4) of vector `vec`. Eight consecutive lanes hold one block of 32 (lane l of
 * the eight: elements 4l .. 4l+3 of it), and all eight call it together; lane
 * 0 of the eight writes the block's scale and sum.
 */
__device__ __forceinline__ void qg_q8_store4(const float v[4], uint32_t vec, uint32_t i, uint32_t cols,
                                             qwen_gpu_q8 out)
{
    float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
    for (int mask = 4; mask > 0; mask >>= 1) amax = fmaxf(amax, gufo_gpu_shfl_xor(amax, mask));
    const float d = amax / 127.0f;
    int packed = 0, sum = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int q = d > 0.0f ? (int)rintf(v[k] / d) : 0;
        q = q > 127 ? 127 : (q < -127 ? -127 : q);
        sum += q;
        packed |= (q & 0xff) << (8 * k);
    }
    for (int mask = 4; mask > 0; mask >>= 1) sum += gufo_gpu_shfl_xor(sum, mask);
    *reinterpret_cast<int *>(out.qs + (size_t)vec * cols + i) = packed;
    if ((threadIdx.x & 7) == 0) {
        float *ds = out.ds + 2 * ((size_t)vec * (cols / 32u) + i / 32u);
        ds[0] = d;
        ds[1] = __fmul_rn(d, (float)sum);
    }
}

#endif /* QWEN_GPU_Q8_CUH */

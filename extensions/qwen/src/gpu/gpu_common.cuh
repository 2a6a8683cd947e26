/* gpu_common.cuh — what every qwen-gpu kernel file shares: the dialect
 * header, the C launcher declarations, and block-wide reductions. */
#ifndef QWEN_GPU_COMMON_CUH
#define QWEN_GPU_COMMON_CUH

#include <gufo/ext/experimental/gpu.h>

#include "gpu_kernels.h"

/** Records a failed launch (gpu_runtime.cu); 0 when the launch was accepted. */
extern "C" int qwen_gpu_launch_check(const char *kernel);

#define QG_STREAM(s) ((gufo_gpu_stream)(s))

/* Per kernel file: makes the runtime load each kernel (gpu_runtime.cu calls them all). */
int qg_preload_matmul(void);
int qg_preload_matvec_q8(void);
int qg_preload_norm(void);
int qg_preload_attention(void);
int qg_preload_attention_prefill(void);
int qg_preload_sample(void);
int qg_preload_gemm(void);

/** Records an error for qwen_gpu_last_error() (gpu_runtime.cu). */
extern "C" void qwen_gpu_set_error(const char *what, const char *detail);

#if defined(GUFO_GPU_HIP)
#  define QG_FUNC_ATTRIBUTES hipFuncAttributes
#  define qg_func_get_attributes(attr, f) hipFuncGetAttributes((attr), reinterpret_cast<const void *>(f))
#else
#  define QG_FUNC_ATTRIBUTES cudaFuncAttributes
#  define qg_func_get_attributes(attr, f) cudaFuncGetAttributes((attr), (f))
#endif

/* Asking for a kernel's attributes loads it. */
template <typename Kernel>
static int qg_preload(Kernel kernel)
{
    QG_FUNC_ATTRIBUTES attributes;
    return qg_func_get_attributes(&attributes, kernel) == GUFO_GPU_SUCCESS ? 0 : 1;
}

/* Sum over a block whose size is a multiple of the warp size; every thread
 * gets the result. `scratch` holds one float per warp. */
__device__ __forceinline__ float qg_block_sum(float v, float *scratch)
{
    const int lane = threadIdx.x % GUFO_GPU_WARP_SIZE, warp = threadIdx.x / GUFO_GPU_WARP_SIZE;
    const int n_warps = (blockDim.x + GUFO_GPU_WARP_SIZE - 1) / GUFO_GPU_WARP_SIZE;
    v = gufo_gpu_warp_sum(v);
    __syncthreads(); /* scratch may still be read from a previous call */
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < n_warps; w++) total += scratch[w];
    return total;
}

#endif /* QWEN_GPU_COMMON_CUH */

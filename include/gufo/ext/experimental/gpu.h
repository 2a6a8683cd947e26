/* gufo/ext/experimental/gpu.h — one kernel source for CUDA and HIP.
 *
 * EXPERIMENTAL: no compatibility promise. Anything here may change or vanish
 * in any revision; API records still list the change.
 *
 * Kernel files (.cu) include this header and are compiled by nvcc for NVIDIA
 * (GUFO_GPU_CUDA) or by hipcc for AMD (GUFO_GPU_HIP). Write kernels against
 * the gufo_gpu* names below; they map to the vendor spelling. Only kernel
 * files may be C++ (the CUDA dialect); everything else in an extension is C11.
 *
 * Warp size differs (32 on NVIDIA, 64 on most AMD data-centre parts, 32 on
 * RDNA): use GUFO_GPU_WARP_SIZE and the shuffle helpers, never a literal 32.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_GPU_H
#define GUFO_EXT_EXPERIMENTAL_GPU_H

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#  define GUFO_GPU_HIP 1
#  include <hip/hip_runtime.h>
#  include <hip/hip_fp16.h>
/* ROCm >= 5.7 has hip_bf16.h (__hip_bfloat16); older ROCm, such as Debian 12's
 * 5.2, only hip_bfloat16.h (hip_bfloat16). */
#  if __has_include(<hip/hip_bf16.h>)
#    include <hip/hip_bf16.h>
#    define GUFO_GPU_HIP_BF16_TYPE __hip_bfloat16
#  else
#    include <hip/hip_bfloat16.h>
#    define GUFO_GPU_HIP_BF16_TYPE hip_bfloat16
#  endif
typedef hipStream_t gufo_gpu_stream;
typedef hipError_t gufo_gpu_error;
typedef hipGraph_t gufo_gpu_graph;
typedef hipGraphExec_t gufo_gpu_graph_exec;
#  define GUFO_GPU_SUCCESS hipSuccess
#  define gufoGpuMalloc hipMalloc
#  define gufoGpuFree hipFree
#  define gufoGpuMemcpyAsync hipMemcpyAsync
#  define gufoGpuMemcpyHostToDevice hipMemcpyHostToDevice
#  define gufoGpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#  define gufoGpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#  define gufoGpuStreamSynchronize hipStreamSynchronize
#  define gufoGpuGetErrorString hipGetErrorString
#  define gufoGpuGetLastError hipGetLastError
#  define GUFO_GPU_WARP_SIZE warpSize
#  define gufo_gpu_shfl_xor(v, mask) __shfl_xor((v), (mask))
typedef __half gufo_gpu_half;
typedef GUFO_GPU_HIP_BF16_TYPE gufo_gpu_bf16;
#elif defined(__CUDACC__)
#  define GUFO_GPU_CUDA 1
#  include <cuda_runtime.h>
#  include <cuda_fp16.h>
#  include <cuda_bf16.h>
typedef cudaStream_t gufo_gpu_stream;
typedef cudaError_t gufo_gpu_error;
typedef cudaGraph_t gufo_gpu_graph;
typedef cudaGraphExec_t gufo_gpu_graph_exec;
#  define GUFO_GPU_SUCCESS cudaSuccess
#  define gufoGpuMalloc cudaMalloc
#  define gufoGpuFree cudaFree
#  define gufoGpuMemcpyAsync cudaMemcpyAsync
#  define gufoGpuMemcpyHostToDevice cudaMemcpyHostToDevice
#  define gufoGpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#  define gufoGpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#  define gufoGpuStreamSynchronize cudaStreamSynchronize
#  define gufoGpuGetErrorString cudaGetErrorString
#  define gufoGpuGetLastError cudaGetLastError
#  define GUFO_GPU_WARP_SIZE 32
#  define gufo_gpu_shfl_xor(v, mask) __shfl_xor_sync(0xffffffffu, (v), (mask))
typedef __half gufo_gpu_half;
typedef __nv_bfloat16 gufo_gpu_bf16;
#else
#  error "gufo/ext/experimental/gpu.h is for kernel files compiled by nvcc or hipcc"
#endif

/** Sum of `v` over the threads of a warp; every lane gets the result. @since 0.1.1 */
template <typename T>
__device__ __forceinline__ T gufo_gpu_warp_sum(T v) {
    for (int mask = GUFO_GPU_WARP_SIZE / 2; mask > 0; mask >>= 1) v += gufo_gpu_shfl_xor(v, mask);
    return v;
}

/** Maximum of `v` over the threads of a warp. @since 0.1.1 */
template <typename T>
__device__ __forceinline__ T gufo_gpu_warp_max(T v) {
    for (int mask = GUFO_GPU_WARP_SIZE / 2; mask > 0; mask >>= 1) {
        T o = gufo_gpu_shfl_xor(v, mask);
        v = o > v ? o : v;
    }
    return v;
}

#endif /* GUFO_EXT_EXPERIMENTAL_GPU_H */

// Compiles the experimental GPU portability header in a real kernel, so the
// CUDA path (and, where hipcc exists, the HIP path) cannot rot unnoticed.
#include <gufo/ext/experimental/gpu.h>

__global__ void gufo_test_row_sum(const float *x, float *out, int n) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    acc = gufo_gpu_warp_sum(acc);
    float biggest = gufo_gpu_warp_max(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = acc + 0.0f * biggest;
}

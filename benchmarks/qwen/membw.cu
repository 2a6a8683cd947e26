// membw.cu — the GPU's memory bandwidth, the denominator of the decode roofline.
//
//   nvcc -O3 -arch=native -o membw membw.cu && ./membw [GiB]
//
// Two kernels over a buffer far larger than the L2 (default 4 GiB):
//  - read: every byte loaded once (16-byte vector loads, grid-stride), summed
//    so the loads cannot be dropped — what a decode step does to its weights;
//  - copy: read one buffer, write another; bytes counted read + written, the
//    way a device-to-device copy is usually quoted.
// Each is run 3 times to warm up, then timed over 20 runs with CUDA events.
// Prints one JSON line: {"read_gbs": ..., "copy_gbs": ..., "bytes": ...}.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            std::fprintf(stderr, "membw: %s: %s\n", #call, cudaGetErrorString(e_));    \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

__global__ void read_kernel(const uint4 *src, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) // practically never true, but the compiler cannot know
        atomicAdd(sink, acc);
}

__global__ void copy_kernel(const uint4 *src, uint4 *dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

int main(int argc, char **argv)
{
    double gib = argc > 1 ? std::atof(argv[1]) : 4.0;
    size_t bytes = (size_t)(gib * (1ull << 30)) / 16 * 16, n = bytes / 16;
    uint4 *a = nullptr, *b = nullptr;
    unsigned *sink = nullptr;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&sink, sizeof *sink));
    CHECK(cudaMemset(a, 1, bytes));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    dim3 grid(sms * 8), block(512);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    float ms_read = 0, ms_copy = 0;
    const int warm = 3, runs = 20;
    for (int i = 0; i < warm; i++)
        read_kernel<<<grid, block>>>(a, n, sink);
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < runs; i++)
        read_kernel<<<grid, block>>>(a, n, sink);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&ms_read, start, stop));
    for (int i = 0; i < warm; i++)
        copy_kernel<<<grid, block>>>(a, b, n);
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < runs; i++)
        copy_kernel<<<grid, block>>>(a, b, n);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&ms_copy, start, stop));
    CHECK(cudaGetLastError());
    double read_gbs = (double)bytes * runs / (ms_read * 1e-3) / 1e9;
    double copy_gbs = 2.0 * (double)bytes * runs / (ms_copy * 1e-3) / 1e9;
    std::printf("{\"read_gbs\": %.1f, \"copy_gbs\": %.1f, \"bytes\": %zu}\n", read_gbs, copy_gbs, bytes);
    cudaFree(a);
    cudaFree(b);
    cudaFree(sink);
    return 0;
}

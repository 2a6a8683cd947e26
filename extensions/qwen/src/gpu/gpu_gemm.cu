/* gpu_gemm.cu — prefill matrix products through the vendor BLAS (gpu_kernels.h).
 *
 * A prefill chunk multiplies every weight matrix with hundreds of token
 * vectors: that is a dense GEMM, where a well-kept library beats a hand-written
 * kernel. The weights stay quantized in memory; before each product the matrix
 * is decoded (gpu_dequant.cuh) into one scratch buffer and multiplied by cuBLAS:
 *  - fp32: decoded to float32 exactly as the CPU decodes it, SGEMM with float32
 *    inputs and sums and no TF32, so prefill computes the CPU provider's
 *    function up to the order of additions;
 *  - bf16: weights and activations rounded to bfloat16, products on the tensor
 *    cores with float32 sums (what llama.cpp's cuBLAS path does with f16):
 *    several times faster, at bf16's 8-bit mantissa on the inputs.
 * Built with HIP (no BLAS wired up there yet) the product falls back to
 * qwen_gpu_matmul().
 */
#include "gpu_dequant.cuh"

#if defined(GUFO_GPU_CUDA)
#  include <cublas_v2.h>
#endif

#define QG_DEQUANT_ROWS 4 /* warps per block, one row each */

template <typename OUT>
__device__ __forceinline__ OUT qg_store_as(float v);
template <>
__device__ __forceinline__ float qg_store_as<float>(float v)
{
    return v;
}
template <>
__device__ __forceinline__ gufo_gpu_bf16 qg_store_as<gufo_gpu_bf16>(float v)
{
    return gufo_gpu_bf16(v); /* round to nearest even */
}

/* Eight consecutive decoded values as one 16- or 32-byte store (block types:
 * a lane's eight elements are neighbours), so each warp writes whole lines
 * rather than 2-byte pieces 16 bytes apart (measured: that made decoding
 * 4096 x 4096 Q4_K take as long as the bf16 product after it). */
__device__ __forceinline__ void qg_store8(float *dst, const float w[8])
{
    reinterpret_cast<float4 *>(dst)[0] = make_float4(w[0], w[1], w[2], w[3]);
    reinterpret_cast<float4 *>(dst)[1] = make_float4(w[4], w[5], w[6], w[7]);
}

__device__ __forceinline__ void qg_store8(gufo_gpu_bf16 *dst, const float w[8])
{
    union {
        gufo_gpu_bf16 h[8];
        uint4 v;
    } packed;
#pragma unroll
    for (int i = 0; i < 8; i++) packed.h[i] = gufo_gpu_bf16(w[i]); /* round to nearest even */
    *reinterpret_cast<uint4 *>(dst) = packed.v;
}

template <int TYPE, typename OUT>
__global__ void qg_dequantize_as_kernel(qwen_gpu_matrix m, OUT *__restrict__ out)
{
    const int lane = threadIdx.x % 32;
    const uint32_t r = blockIdx.x * QG_DEQUANT_ROWS + threadIdx.x / 32;
    if (r >= m.rows) return;
    const uint8_t *row = static_cast<const uint8_t *>(m.data) + (size_t)r * m.row_bytes;
    OUT *dst = out + (size_t)r * m.cols;
    /* Whole-line stores need the row's start aligned: block types have cols a
     * multiple of 32, so a row of bf16 starts at 64 bytes, of floats at 128. */
    const bool packed = !qg_layout<TYPE>::strided;
#pragma unroll 4
    for (uint32_t g = 0; g < (m.cols + 255u) / 256u; g++) {
        float w[8];
        qg_dequant8<TYPE>(row, m.cols, g, lane, w);
        if (packed) {
            const uint32_t first = qg_element<TYPE>(g, lane, 0);
            if (first < m.cols) qg_store8(dst + first, w);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const uint32_t e = qg_element<TYPE>(g, lane, i);
                if (e < m.cols) dst[e] = qg_store_as<OUT>(w[i]);
            }
        }
    }
}

__global__ void qg_to_bf16_kernel(const float *__restrict__ x, size_t count, gufo_gpu_bf16 *__restrict__ out)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = gufo_gpu_bf16(x[i]);
}

template <int TYPE, typename OUT>
static void launch_dequantize(const qwen_gpu_matrix *m, OUT *out, gufo_gpu_stream stream)
{
    qg_dequantize_as_kernel<TYPE, OUT>
        <<<(m->rows + QG_DEQUANT_ROWS - 1) / QG_DEQUANT_ROWS, QG_DEQUANT_ROWS * 32, 0, stream>>>(*m, out);
}

template <typename OUT>
static int dequantize(void *stream, const qwen_gpu_matrix *m, OUT *out)
{
    const gufo_gpu_stream s = QG_STREAM(stream);
    switch (m->type) {
    case QWEN_GPU_F32: launch_dequantize<QWEN_GPU_F32>(m, out, s); break;
    case QWEN_GPU_F16: launch_dequantize<QWEN_GPU_F16>(m, out, s); break;
    case QWEN_GPU_BF16: launch_dequantize<QWEN_GPU_BF16>(m, out, s); break;
    case QWEN_GPU_Q8_0: launch_dequantize<QWEN_GPU_Q8_0>(m, out, s); break;
    case QWEN_GPU_Q4_K: launch_dequantize<QWEN_GPU_Q4_K>(m, out, s); break;
    case QWEN_GPU_Q6_K: launch_dequantize<QWEN_GPU_Q6_K>(m, out, s); break;
    default: return 1;
    }
    return qwen_gpu_launch_check("qwen_gpu_dequantize");
}

extern "C" int qwen_gpu_dequantize(void *stream, const qwen_gpu_matrix *m, float *out)
{
    return dequantize(stream, m, out);
}

template <typename OUT>
static int preload_dequantize(void)
{
    return qg_preload(qg_dequantize_as_kernel<QWEN_GPU_F32, OUT>) |
           qg_preload(qg_dequantize_as_kernel<QWEN_GPU_F16, OUT>) |
           qg_preload(qg_dequantize_as_kernel<QWEN_GPU_BF16, OUT>) |
           qg_preload(qg_dequantize_as_kernel<QWEN_GPU_Q8_0, OUT>) |
           qg_preload(qg_dequantize_as_kernel<QWEN_GPU_Q4_K, OUT>) |
           qg_preload(qg_dequantize_as_kernel<QWEN_GPU_Q6_K, OUT>);
}

int qg_preload_gemm(void)
{
    return preload_dequantize<float>() | preload_dequantize<gufo_gpu_bf16>() | qg_preload(qg_to_bf16_kernel);
}

#if defined(GUFO_GPU_CUDA)

static int blas_failed(cublasStatus_t st, const char *what)
{
    qwen_gpu_set_error(what, cublasGetStatusString(st));
    return 1;
}

extern "C" int qwen_gpu_blas_create(void **blas, void *stream, void *workspace, size_t workspace_bytes)
{
    cublasHandle_t handle = NULL;
    cublasStatus_t st = cublasCreate(&handle);
    if (st != CUBLAS_STATUS_SUCCESS) return blas_failed(st, "cublasCreate");
    if ((st = cublasSetStream(handle, QG_STREAM(stream))) != CUBLAS_STATUS_SUCCESS ||
        (st = cublasSetWorkspace(handle, workspace, workspace_bytes)) != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(handle);
        return blas_failed(st, "configuring cuBLAS");
    }
    *blas = handle;
    return 0;
}

extern "C" void qwen_gpu_blas_destroy(void *blas)
{
    if (blas) cublasDestroy(static_cast<cublasHandle_t>(blas));
}

extern "C" int qwen_gpu_gemm(void *blas, void *stream, const qwen_gpu_matrix *m, int bf16, void *weights,
                             void *activations, const float *x, uint32_t n, float *y, int accumulate)
{
    if (!blas || !weights || (bf16 && !activations)) return qwen_gpu_matmul(stream, m, x, n, y, accumulate);
    cublasHandle_t handle = static_cast<cublasHandle_t>(blas);
    /* Row-major Y[n][rows] = X[n][cols] W^T is, column-major, Y^T = W^T' X^T'
     * with W read as a cols x rows matrix (transposed) and X as cols x n. */
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    cublasStatus_t st;
    if (!bf16) {
        if (dequantize(stream, m, static_cast<float *>(weights))) return 1;
        /* Pedantic: no TF32 even when NVIDIA_TF32_OVERRIDE asks for it. */
        if ((st = cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH)) != CUBLAS_STATUS_SUCCESS)
            return blas_failed(st, "cublasSetMathMode");
        st = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)m->rows, (int)n, (int)m->cols, &alpha,
                         static_cast<const float *>(weights), (int)m->cols, x, (int)m->cols, &beta, y, (int)m->rows);
        return st == CUBLAS_STATUS_SUCCESS ? 0 : blas_failed(st, "cublasSgemm");
    }
    /* BF16 weights are already what the tensor cores take: no copy (it cost
     * BF16 models half their prefill speed). */
    const void *a = m->data;
    if (m->type != QWEN_GPU_BF16) {
        if (dequantize(stream, m, static_cast<gufo_gpu_bf16 *>(weights))) return 1;
        a = weights;
    }
    const size_t count = (size_t)n * m->cols;
    size_t blocks = (count + 255) / 256;
    if (blocks > 65535u * 8u) blocks = 65535u * 8u;
    qg_to_bf16_kernel<<<(unsigned)blocks, 256, 0, QG_STREAM(stream)>>>(x, count,
                                                                      static_cast<gufo_gpu_bf16 *>(activations));
    if (qwen_gpu_launch_check("qwen_gpu_gemm (activations to bf16)")) return 1;
    if ((st = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS)
        return blas_failed(st, "cublasSetMathMode");
    st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)m->rows, (int)n, (int)m->cols, &alpha, a,
                      CUDA_R_16BF, (int)m->cols, activations, CUDA_R_16BF, (int)m->cols, &beta, y, CUDA_R_32F,
                      (int)m->rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? 0 : blas_failed(st, "cublasGemmEx (bf16)");
}

#else /* HIP: no BLAS yet; the portable kernel does the product */

extern "C" int qwen_gpu_blas_create(void **blas, void *stream, void *workspace, size_t workspace_bytes)
{
    (void)stream, (void)workspace, (void)workspace_bytes;
    *blas = NULL;
    return 0;
}

extern "C" void qwen_gpu_blas_destroy(void *blas)
{
    (void)blas;
}

extern "C" int qwen_gpu_gemm(void *blas, void *stream, const qwen_gpu_matrix *m, int bf16, void *weights,
                             void *activations, const float *x, uint32_t n, float *y, int accumulate)
{
    (void)blas, (void)bf16, (void)weights, (void)activations;
    return qwen_gpu_matmul(stream, m, x, n, y, accumulate);
}

#endif

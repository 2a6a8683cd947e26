/* gpu_runtime.cu — streams, copies and error text for the C side (gpu_kernels.h).
 *
 * The only file that names the vendor runtime's host API, through the
 * gufo/ext/experimental/gpu.h spellings (plus the few it does not map, by
 * vendor below), so the provider's C code stays vendor-free.
 */
#include <gufo/ext/experimental/gpu.h>

#include <stdio.h>

#include "gpu_common.cuh"

#if defined(GUFO_GPU_HIP)
#  define qg_stream_create(s) hipStreamCreate(s)
#  define qg_stream_destroy hipStreamDestroy
#  define qg_error_name hipGetErrorName
#else
#  define qg_stream_create(s) cudaStreamCreate(s)
#  define qg_stream_destroy cudaStreamDestroy
#  define qg_error_name cudaGetErrorName
#endif

/* Per thread: the provider drives a model from one scheduler thread. */
static thread_local char last_error[256];

static int failed(gufo_gpu_error e, const char *what)
{
    (void)gufoGpuGetLastError(); /* clear a non-sticky error so the next call starts clean */
    snprintf(last_error, sizeof last_error, "%s failed: %s (%s)", what, gufoGpuGetErrorString(e), qg_error_name(e));
    return 1;
}

extern "C" void qwen_gpu_set_error(const char *what, const char *detail)
{
    snprintf(last_error, sizeof last_error, "%s failed: %s", what, detail);
}

extern "C" const char *qwen_gpu_last_error(void)
{
    static thread_local char copy[sizeof last_error];
    snprintf(copy, sizeof copy, "%s", last_error);
    last_error[0] = 0;
    return copy;
}

extern "C" const char *qwen_gpu_compiled_for(void)
{
#if defined(GUFO_GPU_HIP)
    return "hip";
#else
    return "cuda";
#endif
}

extern "C" int qwen_gpu_stream_create(void **stream)
{
    gufo_gpu_stream s = NULL;
    gufo_gpu_error e = qg_stream_create(&s);
    if (e != GUFO_GPU_SUCCESS) return failed(e, "creating a stream");
    *stream = (void *)s;
    return 0;
}

extern "C" void qwen_gpu_stream_destroy(void *stream)
{
    if (stream) (void)qg_stream_destroy((gufo_gpu_stream)stream);
}

extern "C" int qwen_gpu_sync(void *stream)
{
    gufo_gpu_error e = gufoGpuStreamSynchronize((gufo_gpu_stream)stream);
    if (e != GUFO_GPU_SUCCESS) return failed(e, "the step's kernels");
    e = gufoGpuGetLastError();
    if (e != GUFO_GPU_SUCCESS) return failed(e, "a kernel launch");
    return 0;
}

static int copy(void *dst, const void *src, size_t bytes, int kind, void *stream, const char *what)
{
    if (bytes == 0) return 0;
    gufo_gpu_error e;
    if (kind == 0)
        e = gufoGpuMemcpyAsync(dst, src, bytes, gufoGpuMemcpyHostToDevice, (gufo_gpu_stream)stream);
    else if (kind == 1)
        e = gufoGpuMemcpyAsync(dst, src, bytes, gufoGpuMemcpyDeviceToHost, (gufo_gpu_stream)stream);
    else
        e = gufoGpuMemcpyAsync(dst, src, bytes, gufoGpuMemcpyDeviceToDevice, (gufo_gpu_stream)stream);
    return e == GUFO_GPU_SUCCESS ? 0 : failed(e, what);
}

extern "C" int qwen_gpu_to_device(void *dst, const void *src, size_t bytes, void *stream)
{
    return copy(dst, src, bytes, 0, stream, "a host-to-device copy");
}

extern "C" int qwen_gpu_to_host(void *dst, const void *src, size_t bytes, void *stream)
{
    return copy(dst, src, bytes, 1, stream, "a device-to-host copy");
}

extern "C" int qwen_gpu_device_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    return copy(dst, src, bytes, 2, stream, "a device-to-device copy");
}

extern "C" int qwen_gpu_preload(void)
{
    if (qg_preload_matmul() || qg_preload_matvec_q8() || qg_preload_norm() || qg_preload_attention() ||
        qg_preload_attention_prefill() || qg_preload_sample() || qg_preload_gemm())
        return failed(gufoGpuGetLastError(), "loading the kernels");
    return 0;
}

/* Launchers report a bad launch (too many blocks, no kernel image for this
 * GPU) here; faults inside kernels surface at qwen_gpu_sync(). */
extern "C" int qwen_gpu_launch_check(const char *kernel)
{
    gufo_gpu_error e = gufoGpuGetLastError();
    return e == GUFO_GPU_SUCCESS ? 0 : failed(e, kernel);
}

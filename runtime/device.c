/* runtime/device.c — the GPU backend behind memory.h.
 *
 * Built with GUFO_WITH_CUDA, it talks to the CUDA runtime through its C API
 * (cuda_runtime_api.h), so this file stays C11 and needs no nvcc. Without it,
 * the backend is "none": gufo_device_query() still succeeds (a CPU build is
 * not an error) and every device request says how to get a GPU backend.
 *
 * The runtime uses whichever device is current on the calling thread
 * (cudaSetDevice is the host's business).
 */
#include <gufo/host/memory.h>

#include <stdio.h>
#include <string.h>

#include "internal.h"

#if defined(GUFO_WITH_CUDA)
#  include <cuda_runtime_api.h>
#endif

static gufo_status check_info(gufo_device_info *info, gufo_error *err)
{
    if (!info) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_device_query: info is NULL");
    /* Every field exists since 0.1.1, so anything smaller is a caller that forgot struct_size. */
    if (info->struct_size < sizeof *info)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_device_info.struct_size is %zu; set it to sizeof(gufo_device_info) (%zu)",
                              info->struct_size, sizeof *info);
    size_t struct_size = info->struct_size;
    memset(info, 0, sizeof *info);
    info->struct_size = struct_size;
    info->backend = gufo__device_backend();
    return GUFO_OK;
}

#if defined(GUFO_WITH_CUDA)

const char *gufo__device_backend(void)
{
    return "cuda";
}

/* Turns a CUDA error into GUFO_E_DEVICE naming what was being done. */
static gufo_status cuda_failed(gufo_error *err, cudaError_t e, const char *what)
{
    (void)cudaGetLastError(); /* clear the non-sticky error so the next call starts clean */
    return gufo_error_set(err, GUFO_E_DEVICE, "%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

GUFO_EXT_API gufo_status gufo_device_query(gufo_device_info *info, gufo_error *err)
{
    gufo_status st = check_info(info, err);
    if (st != GUFO_OK) return st;

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return gufo_error_set(err, GUFO_E_DEVICE, "the CUDA backend found no usable GPU: %s (%s)",
                              cudaGetErrorString(e), cudaGetErrorName(e));
    if (count == 0) return gufo_error_set(err, GUFO_E_DEVICE, "the CUDA backend found no GPU on this machine");
    info->device_count = count;

    int device = 0;
    struct cudaDeviceProp prop;
    if ((e = cudaGetDevice(&device)) != cudaSuccess) return cuda_failed(err, e, "cudaGetDevice");
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
        return cuda_failed(err, e, "cudaGetDeviceProperties");
    snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof info->name - 1, prop.name);
    snprintf(info->arch, sizeof info->arch, "sm_%d%d", prop.major, prop.minor);
    info->total_bytes = (uint64_t)prop.totalGlobalMem;

    size_t free_bytes = 0, total_bytes = 0;
    if ((e = cudaMemGetInfo(&free_bytes, &total_bytes)) != cudaSuccess) return cuda_failed(err, e, "cudaMemGetInfo");
    info->free_bytes = free_bytes;
    info->total_bytes = total_bytes;

    if ((e = cudaDriverGetVersion(&info->driver_version)) != cudaSuccess)
        return cuda_failed(err, e, "cudaDriverGetVersion");
    return GUFO_OK;
}

gufo_status gufo__device_alloc(size_t size, void **out, gufo_error *err)
{
    *out = NULL;
    cudaError_t e = cudaMalloc(out, size);
    if (e == cudaSuccess) return GUFO_OK;
    *out = NULL;
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        size_t free_bytes = 0, total_bytes = 0;
        (void)cudaMemGetInfo(&free_bytes, &total_bytes);
        char asked[32], free_text[32], total_text[32];
        gufo__format_bytes(size, asked, sizeof asked);
        gufo__format_bytes(free_bytes, free_text, sizeof free_text);
        gufo__format_bytes(total_bytes, total_text, sizeof total_text);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "the GPU could not allocate %s: %s of %s are free on the device",
                              asked, free_text, total_text);
    }
    return cuda_failed(err, e, "cudaMalloc");
}

void gufo__device_free(void *ptr)
{
    if (ptr) (void)cudaFree(ptr);
}

gufo_status gufo__device_copy(void *dst, gufo_memory_kind dst_kind, const void *src, gufo_memory_kind src_kind,
                              size_t size, gufo_error *err)
{
    enum cudaMemcpyKind kind;
    if (dst_kind == GUFO_MEMORY_DEVICE)
        kind = src_kind == GUFO_MEMORY_DEVICE ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    else
        kind = src_kind == GUFO_MEMORY_DEVICE ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
    cudaError_t e = cudaMemcpy(dst, src, size, kind);
    if (e != cudaSuccess) return cuda_failed(err, e, "cudaMemcpy");
    return GUFO_OK;
}

#else /* no GPU backend */

static const char k_no_backend[] =
    "this gufo_ext_runtime was built without a GPU backend (configure with CUDA available)";

const char *gufo__device_backend(void)
{
    return "none";
}

GUFO_EXT_API gufo_status gufo_device_query(gufo_device_info *info, gufo_error *err)
{
    return check_info(info, err);
}

gufo_status gufo__device_alloc(size_t size, void **out, gufo_error *err)
{
    (void)size;
    *out = NULL;
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "%s", k_no_backend);
}

void gufo__device_free(void *ptr)
{
    (void)ptr; /* nothing can have been allocated */
}

gufo_status gufo__device_copy(void *dst, gufo_memory_kind dst_kind, const void *src, gufo_memory_kind src_kind,
                              size_t size, gufo_error *err)
{
    (void)dst, (void)dst_kind, (void)src, (void)src_kind, (void)size;
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "%s", k_no_backend);
}

#endif

/* ---- Device facts: one query, handed on ----------------------------------- */

GUFO_EXT_API gufo_status gufo_device_facts_query(gufo_device_facts *out, gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_device_facts_query: out is NULL");
    /* Every field exists since the struct was added, so smaller is a caller that forgot struct_size. */
    if (out->struct_size < sizeof *out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_device_facts.struct_size is %zu; set it to sizeof(gufo_device_facts) (%zu)",
                              out->struct_size, sizeof *out);
    size_t struct_size = out->struct_size;
    memset(out, 0, sizeof *out);
    out->struct_size = struct_size;
    out->info.struct_size = sizeof out->info;
    gufo_error query = {GUFO_OK, ""};
    out->status = gufo_device_query(&out->info, &query);
    if (out->status != GUFO_OK) snprintf(out->detail, sizeof out->detail, "%s", query.message);
    if (!out->info.backend) out->info.backend = gufo__device_backend();
    gufo_error_clear(err);
    return GUFO_OK;
}

GUFO_EXT_API bool gufo_device_facts_usable(const gufo_device_facts *facts, char *why, size_t why_cap)
{
    const char *reason = NULL;
    char buf[GUFO_ERROR_MESSAGE_MAX + 64];
    if (!facts || facts->struct_size < sizeof *facts) {
        reason = "the device facts are missing";
    } else if (facts->status != GUFO_OK) {
        if (facts->detail[0]) {
            reason = facts->detail;
        } else {
            snprintf(buf, sizeof buf, "the device query failed (%s)", gufo_status_str(facts->status));
            reason = buf;
        }
    } else if (!facts->info.backend || strcmp(facts->info.backend, "none") == 0) {
        reason = "this gufo_ext_runtime was built without a GPU backend";
    } else if (facts->info.device_count <= 0) {
        snprintf(buf, sizeof buf, "the %s backend found no device", facts->info.backend);
        reason = buf;
    }
    if (reason && why && why_cap) {
        snprintf(why, why_cap, "%s", reason);
        gufo__utf8_trim_partial(why, strlen(why));
    }
    return reason == NULL;
}

/* gufo/ext/memory.h — memory under the host's budgets, and host<->device transfers.
 *
 * Weights, KV caches, snapshots and scratch all come from a gufo_memory pool
 * that the host created with a limit per kind (host RAM, device memory). Every
 * allocation carries a tag ("weights", "kv-cache", "snapshot", "scratch", ...)
 * so diagnostics can say where the memory went. When an allocation would go
 * over the limit, the pool first calls the host's pressure handler (the core
 * evicts retained sessions there), then retries once; if it still does not
 * fit, the call fails with GUFO_E_OVER_BUDGET and a message naming the tag, the
 * size asked, and what is left — the request fails alone, nothing else does.
 *
 * Device memory is provided by the runtime's GPU backend, chosen when the
 * runtime was built: CUDA today. The runtime has no HIP backend yet: on AMD
 * (and in any build without CUDA) it answers device requests with
 * GUFO_E_UNSUPPORTED and says so. Extensions' HIP kernels are compile-checked
 * (the qwen extension builds its kernels with hipcc through
 * gufo/ext/experimental/gpu.h), but running them needs that backend.
 *
 * Thread-safety: every function may be called from any thread; accounting is
 * protected by a lock inside the pool. The pressure handler runs on the thread
 * that allocates, without the pool lock held.
 *
 * Creating the pool, its pressure handler and the start-up device query are
 * the host's side: gufo/host/memory.h (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_MEMORY_H
#define GUFO_EXT_MEMORY_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Where memory lives. @since 0.1.1 */
typedef enum gufo_memory_kind {
    GUFO_MEMORY_HOST = 0,   /**< process RAM */
    GUFO_MEMORY_DEVICE = 1  /**< GPU memory of the runtime's device */
} gufo_memory_kind;

/** Opaque budgeted pool. @since 0.1.1 */
typedef struct gufo_memory gufo_memory;

/**
 * Allocates `size` bytes of `kind` aligned to `alignment` (a power of two, 0 =
 * 64), counted against the budget under `tag` (copied; at most 63 bytes).
 * Host memory is not zeroed. Errors: GUFO_E_OVER_BUDGET, GUFO_E_NO_MEMORY,
 * GUFO_E_UNSUPPORTED (no device backend), GUFO_E_DEVICE, GUFO_E_INVALID_ARGUMENT.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_memory_alloc(gufo_memory *memory, gufo_memory_kind kind, size_t size, size_t alignment,
                                           const char *tag, void **out, gufo_error *err);

/** Returns an allocation to the pool; NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_memory_free(gufo_memory *memory, void *ptr);

/**
 * Counts `bytes` that a library allocated on the extension's behalf (a cuBLAS
 * workspace, a mapped file kept resident) against the budget without
 * allocating. Fails like gufo_memory_alloc() when it does not fit. Undo with
 * gufo_memory_uncharge() using the same kind and tag.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_memory_charge(gufo_memory *memory, gufo_memory_kind kind, uint64_t bytes,
                                            const char *tag, gufo_error *err);

/** Reverses gufo_memory_charge(). @since 0.1.1 */
GUFO_EXT_API void gufo_memory_uncharge(gufo_memory *memory, gufo_memory_kind kind, uint64_t bytes, const char *tag);

/** Bytes currently counted for `kind`. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_memory_used(const gufo_memory *memory, gufo_memory_kind kind);

/** The limit for `kind` (0 = none). @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_memory_limit(const gufo_memory *memory, gufo_memory_kind kind);

/** Highest gufo_memory_used() seen for `kind`. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_memory_peak(const gufo_memory *memory, gufo_memory_kind kind);

/** One tag's usage, for diagnostics. @since 0.1.1 */
typedef struct gufo_memory_tag_usage {
    const char *tag;
    gufo_memory_kind kind;
    uint64_t bytes;
    uint64_t allocations;
} gufo_memory_tag_usage;

/**
 * Calls `fn` once per (tag, kind) with non-zero usage, sorted by tag. The
 * struct is valid only during the callback; the pool lock is held, so `fn`
 * must not call back into the pool.
 * @since 0.1.1
 */
GUFO_EXT_API void gufo_memory_foreach_tag(const gufo_memory *memory,
                                          void (*fn)(void *userdata, const gufo_memory_tag_usage *usage),
                                          void *userdata);

/**
 * Copies `size` bytes between any two kinds (host->device, device->host,
 * device->device, host->host). Synchronous: returns when the copy is done.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_memory_copy(gufo_memory *memory, void *dst, gufo_memory_kind dst_kind, const void *src,
                                          gufo_memory_kind src_kind, size_t size, gufo_error *err);

/** What the runtime's device backend is. @since 0.1.1 */
typedef struct gufo_device_info {
    size_t struct_size;           /**< sizeof(gufo_device_info) */
    const char *backend;          /**< "cuda" or "none" (static string); a HIP backend would say "hip" */
    char name[128];               /**< e.g. "NVIDIA H200"; "" when none */
    char arch[32];                /**< e.g. "sm_90", "gfx90a"; "" when none */
    uint64_t total_bytes;         /**< device memory; 0 when none */
    uint64_t free_bytes;
    int driver_version;           /**< backend-specific integer; 0 when none */
    int device_count;
} gufo_device_info;

/**
 * Describes the device the runtime uses. Always succeeds with backend "none"
 * when no backend was built; GUFO_E_DEVICE when a backend was built but no
 * usable device is present (the detail says why).
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_device_query(gufo_device_info *info, gufo_error *err);

/**
 * What the host learnt from gufo_device_query(), kept so that nobody else has
 * to ask. The first device query of a process starts the GPU driver (seconds
 * on some machines, and state a probe must not create), so the host queries
 * once at start-up with gufo_device_facts_query() and hands the facts on:
 * to the registry (gufo_registry_set_device_facts(), which asks providers'
 * usable() slots) and to every artifact it opens for selection
 * (gufo_registry_open_artifact(), gufo_artifact_set_device_facts()), where
 * probes read them with gufo_artifact_device_facts(). Reading facts never
 * starts a driver. Plain data; copy it freely.
 * @since 0.1.12
 */
typedef struct gufo_device_facts {
    size_t struct_size;                  /**< sizeof(gufo_device_facts) */
    gufo_status status;                  /**< what gufo_device_query() returned (GUFO_OK or GUFO_E_DEVICE) */
    char detail[GUFO_ERROR_MESSAGE_MAX]; /**< the query's error detail; "" when status is GUFO_OK */
    gufo_device_info info;               /**< what the query filled; info.backend is always set */
} gufo_device_facts;

/**
 * Whether `facts` describe a device this runtime can allocate on: the query
 * succeeded, the backend is not "none" and it found at least one device.
 * When not, writes one sentence saying why into `why` (may be NULL): the
 * query's detail ("the CUDA backend found no usable GPU: ..."), "this
 * gufo_ext_runtime was built without a GPU backend", or "the device facts are
 * missing" for a NULL or too-small `facts`. Reads only the struct; thread-safe.
 * @since 0.1.12
 */
GUFO_EXT_API bool gufo_device_facts_usable(const gufo_device_facts *facts, char *why, size_t why_cap);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_MEMORY_H */

/* gufo/host/memory.h — creating the budgeted memory pool (host side).
 *
 * The host creates one gufo_memory per process with a limit per kind and
 * installs the pressure handler that evicts retained sessions; extensions
 * only allocate from the pool they are handed (gufo/ext/memory.h). The host
 * also queries the device once at start-up and hands the facts on, so that
 * no probe starts a GPU driver.
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/memory.h in 0.1).
 */
#ifndef GUFO_HOST_MEMORY_H
#define GUFO_HOST_MEMORY_H

#include <gufo/ext/memory.h>

GUFO_EXT_BEGIN_DECLS

/** Limits for gufo_memory_create(); 0 means "no limit". @since 0.2.1 */
typedef struct gufo_memory_limits {
    size_t struct_size;     /**< sizeof(gufo_memory_limits) */
    uint64_t host_bytes;
    uint64_t device_bytes;
} gufo_memory_limits;

/**
 * Called when an allocation of `bytes` of `kind` does not fit. The host frees
 * what it can (evicting retained sessions) and returns true when it freed
 * anything, which makes the pool retry once.
 * @since 0.2.1
 */
typedef bool (*gufo_memory_pressure_fn)(void *userdata, gufo_memory_kind kind, uint64_t bytes);

/** Creates a pool. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_memory_create(const gufo_memory_limits *limits, gufo_memory **out, gufo_error *err);

/**
 * Destroys a pool. Allocations still live are reported with gufo_log()
 * (tag and size: a leak is a bug worth naming) and then released.
 * @since 0.2.1
 */
GUFO_EXT_API void gufo_memory_destroy(gufo_memory *memory);

/** Installs the pressure handler (NULL removes it). @since 0.2.1 */
GUFO_EXT_API void gufo_memory_set_pressure_handler(gufo_memory *memory, gufo_memory_pressure_fn fn, void *userdata);

/**
 * Runs gufo_device_query() and records its answer, failure included, in
 * `*out`, whose struct_size the caller has set. A machine without a usable
 * device is a fact, not an error: the call then still returns GUFO_OK, with
 * out->status GUFO_E_DEVICE and the reason in out->detail. Errors:
 * GUFO_E_INVALID_ARGUMENT for a NULL `out` or a struct_size smaller than
 * sizeof(gufo_device_facts). Starts the GPU driver when a backend was built:
 * call it once, at start-up, never from a probe.
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_device_facts_query(gufo_device_facts *out, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_MEMORY_H */

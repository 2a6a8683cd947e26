/* gufo/ext/experimental/graph.h — capturing a step once and replaying it.
 *
 * EXPERIMENTAL: no compatibility promise.
 *
 * A decode step launches the same kernels with the same shapes every time;
 * capturing them into a CUDA/HIP graph once and replaying it removes the
 * per-kernel launch cost. These helpers keep one executable graph per key
 * (e.g. the batch size) and re-capture when the caller says the shape changed.
 * In kernel files use experimental/gpu.h's gufo_gpu_graph types directly; this
 * C interface is for the provider's host code, with streams passed as void*.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_GRAPH_H
#define GUFO_EXT_EXPERIMENTAL_GRAPH_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Opaque cache of captured graphs. @since 0.1.1 */
typedef struct gufo_x_graph_cache gufo_x_graph_cache;

/**
 * Records the work `record(userdata, stream)` enqueues on `stream` into a graph
 * for `key` (first call, or when `invalidate` is true) and launches it. When the
 * runtime has no GPU backend, calls `record` directly on a NULL stream and
 * returns its status, so CPU builds exercise the same code path.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_x_graph_run(gufo_x_graph_cache *cache, uint64_t key, bool invalidate, void *stream,
                                          gufo_status (*record)(void *userdata, void *stream), void *userdata,
                                          gufo_error *err);

/** Creates an empty cache. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_x_graph_cache_create(gufo_x_graph_cache **out);

/** Destroys a cache and its graphs; NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_x_graph_cache_destroy(gufo_x_graph_cache *cache);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_GRAPH_H */

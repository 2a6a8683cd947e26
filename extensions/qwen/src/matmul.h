/* matmul.h — Y = X W^T over the thread pool, weights in their GGUF format.
 *
 * X is n vectors of w->cols floats, Y is n vectors of w->rows floats (both
 * row-major). Threads split the weight rows in tiles of QWEN_TILE_ROWS: a
 * tile is decoded once into the thread's buffer (kernels.h) and applied to
 * every vector, so the weights stream from memory once per call however many
 * vectors there are — a decode step over a batch of sessions, or a prefill
 * chunk. Each output element is summed by one thread in one fixed order, so
 * results do not depend on the thread count or on which vectors share a call.
 */
#ifndef QWEN_MATMUL_H
#define QWEN_MATMUL_H

#include "threadpool.h"
#include "weights.h"

#define QWEN_TILE_ROWS 16u

/** Per-thread decode buffers: thread t owns tiles + t * per_thread floats
 * (at least QWEN_TILE_ROWS * the widest matrix's cols). */
typedef struct qwen_tiles {
    float *tiles;
    size_t per_thread;
} qwen_tiles;

/** GUFO_E_INTERNAL (a type the loader should have refused) is the only failure. */
gufo_status qwen_matmul(qwen_pool *pool, const qwen_tiles *tiles, const qwen_matrix *w, const float *x, size_t n,
                        float *y);

/**
 * Several products of the same input in one parallel section (Q, K and V;
 * gate and up): y[i] = X w[i]^T. Fewer sections means fewer thread handoffs
 * per layer, which is what a decode step on a busy machine pays for.
 */
gufo_status qwen_matmul_multi(qwen_pool *pool, const qwen_tiles *tiles, const qwen_matrix *const *w, size_t n_w,
                              const float *x, size_t n, float *const *y);

#endif /* QWEN_MATMUL_H */

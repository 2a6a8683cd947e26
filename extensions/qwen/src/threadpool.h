/* threadpool.h — qwen's name for the runtime's CPU thread pool.
 *
 * The pool itself is a runtime service (gufo/ext/experimental/thread_pool.h):
 * persistent workers that spin briefly between the sections of a step and
 * then sleep, the caller working as thread 0. The CPU kernels split the
 * matrix products over the same pool that runs qwen's own sections
 * (QK norms, attention), so a model has exactly one set of workers. These
 * wrappers only keep the provider's and the forward pass's names short.
 */
#ifndef QWEN_THREADPOOL_H
#define QWEN_THREADPOOL_H

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/thread_pool.h>

typedef gufo_x_pool qwen_pool;

/** Starts n_threads - 1 workers. GUFO_E_NO_MEMORY / GUFO_E_INTERNAL with detail on failure. */
static inline gufo_status qwen_pool_create(uint32_t n_threads, qwen_pool **out, gufo_error *err)
{
    return gufo_x_pool_create(n_threads, out, err);
}

/** Stops and joins the workers; NULL is a no-op. */
static inline void qwen_pool_destroy(qwen_pool *pool)
{
    gufo_x_pool_destroy(pool);
}

/** Threads, the caller included. */
static inline uint32_t qwen_pool_threads(const qwen_pool *pool)
{
    return gufo_x_pool_threads(pool);
}

/** Runs every task once, on the calling thread alone when `work` is below a handoff's cost. */
static inline void qwen_pool_run_work(qwen_pool *pool, gufo_x_pool_task fn, void *ctx, size_t n_tasks, uint64_t work)
{
    gufo_x_pool_run_work(pool, fn, ctx, n_tasks, work);
}

#endif /* QWEN_THREADPOOL_H */

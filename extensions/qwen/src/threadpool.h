/* threadpool.h — a small persistent pool of pthreads for the forward pass.
 *
 * A decode step issues a few hundred short parallel sections (every matrix
 * product, every attention), so threads are created once at load and parked
 * between sections: they spin briefly (a section usually follows within
 * microseconds) and then sleep on a condition variable so an idle model
 * costs no CPU. The calling thread works as thread 0, so n_threads == 1
 * creates no thread at all. One caller at a time (the host's scheduler).
 */
#ifndef QWEN_THREADPOOL_H
#define QWEN_THREADPOOL_H

#include <gufo/ext/api.h>

typedef struct qwen_pool qwen_pool;

/** Runs task `task` (0..n_tasks-1) on thread `thread` (0..n_threads-1). */
typedef void (*qwen_task_fn)(void *ctx, size_t task, uint32_t thread);

/** Starts n_threads - 1 workers. GUFO_E_NO_MEMORY / GUFO_E_INTERNAL with detail on failure. */
gufo_status qwen_pool_create(uint32_t n_threads, qwen_pool **out, gufo_error *err);

/** Stops and joins the workers; NULL is a no-op. */
void qwen_pool_destroy(qwen_pool *pool);

/** Threads, the caller included. */
uint32_t qwen_pool_threads(const qwen_pool *pool);

/** Runs every task once, spread over the threads; returns when all are done. */
void qwen_pool_run(qwen_pool *pool, qwen_task_fn fn, void *ctx, size_t n_tasks);

/**
 * Same, but runs on the calling thread alone when `work` (the section's
 * multiply-adds, roughly) is below what one handoff to the workers costs:
 * tiny models and short attention spans would otherwise spend more time
 * waking threads than computing.
 */
void qwen_pool_run_work(qwen_pool *pool, qwen_task_fn fn, void *ctx, size_t n_tasks, uint64_t work);

#endif /* QWEN_THREADPOOL_H */

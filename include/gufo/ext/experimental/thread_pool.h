/* gufo/ext/experimental/thread_pool.h — the host's CPU thread pool for forward passes.
 *
 * EXPERIMENTAL: no compatibility promise.
 *
 * A decode step issues a few hundred short parallel sections (every matrix
 * product, every attention), so a model creates one pool at load with the
 * host's `gufo_model_params.n_threads` and keeps it: workers are started once
 * and parked between sections. A parked worker spins briefly (the next
 * section of a step usually follows within microseconds) and then sleeps on a
 * condition variable, so an idle model costs no CPU. The calling thread works
 * as thread 0: a pool of one thread starts no thread at all.
 *
 * The CPU kernels (experimental/cpu_kernels.h) split their work over a pool;
 * an extension's own sections (attention, norms) use the same one, so a
 * process never runs two sets of spinning workers for one model.
 *
 * Thread-safety: one caller at a time per pool (the host's scheduler thread
 * drives a model's steps); different pools are independent.
 *
 * Since 0.1.14.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_THREAD_POOL_H
#define GUFO_EXT_EXPERIMENTAL_THREAD_POOL_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** A set of parked worker threads. @since 0.1.14 */
typedef struct gufo_x_pool gufo_x_pool;

/**
 * One task of a parallel section: `task` in 0..n_tasks-1, run on thread
 * `thread` in 0..threads-1 (0 is the caller), so per-thread scratch can be
 * indexed by it. Tasks of one section may run in any order and concurrently.
 * @since 0.1.14
 */
typedef void (*gufo_x_pool_task)(void *ctx, size_t task, uint32_t thread);

/**
 * Starts `n_threads - 1` workers (n_threads >= 1). Errors: GUFO_E_INVALID_ARGUMENT
 * (0 threads, NULL out), GUFO_E_NO_MEMORY, GUFO_E_INTERNAL (a thread could not
 * start), each with detail in `err`. Destroy with gufo_x_pool_destroy().
 * @since 0.1.14
 */
GUFO_EXT_API gufo_status gufo_x_pool_create(uint32_t n_threads, gufo_x_pool **out, gufo_error *err);

/** Stops and joins the workers, frees the pool. NULL is a no-op. @since 0.1.14 */
GUFO_EXT_API void gufo_x_pool_destroy(gufo_x_pool *pool);

/** Threads of the pool, the caller included; 1 for NULL. @since 0.1.14 */
GUFO_EXT_API uint32_t gufo_x_pool_threads(const gufo_x_pool *pool);

/**
 * Runs every task once, spread over the threads, and returns when all are
 * done. A NULL pool, one thread or one task run on the caller alone.
 * @since 0.1.14
 */
GUFO_EXT_API void gufo_x_pool_run(gufo_x_pool *pool, gufo_x_pool_task fn, void *ctx, size_t n_tasks);

/**
 * Same, but on the calling thread alone when `work` (the section's
 * multiply-adds, roughly) is below what waking the workers costs (about 20
 * microseconds of arithmetic): tiny models and short attention spans would
 * otherwise spend more time handing off than computing.
 * @since 0.1.14
 */
GUFO_EXT_API void gufo_x_pool_run_work(gufo_x_pool *pool, gufo_x_pool_task fn, void *ctx, size_t n_tasks,
                                       uint64_t work);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_THREAD_POOL_H */
